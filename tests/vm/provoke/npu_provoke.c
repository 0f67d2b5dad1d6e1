// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_provoke: kernel trouble on purpose, for the VM harness's own tests
 * (tests/vm/test-verdict). Loading it with a parameter set makes the
 * kernel report what the harness must catch; it then stays loaded, idle.
 *
 *   warn=1      a WARNING with its call trace
 *   leak=1      a kmalloc()ed object nobody points to (kmemleak)
 *   uaf=1       a read after kfree() (KASAN)
 *   lockdep=1   two mutexes taken in both orders (lockdep; no deadlock,
 *               the two orders never run at the same time)
 *   stuck=N     insmod sleeps N seconds, uninterruptibly (a process that
 *               SIGKILL cannot end)
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>

static bool warn, leak, uaf, lockdep;
static unsigned int stuck;
module_param(warn, bool, 0444);
module_param(leak, bool, 0444);
module_param(uaf, bool, 0444);
module_param(lockdep, bool, 0444);
module_param(stuck, uint, 0444);

static DEFINE_MUTEX(provoke_a);
static DEFINE_MUTEX(provoke_b);

static noinline void provoke_leak(void)
{
	char *p = kmalloc(128, GFP_KERNEL);

	if (p)
		memset(p, 0x5a, 128);	/* and forget it */
}

static noinline void provoke_uaf(void)
{
	char *p = kmalloc(64, GFP_KERNEL);

	if (!p)
		return;
	kfree(p);
	pr_info("npu_provoke: read after free: %d\n", READ_ONCE(p[8]));
}

static noinline void provoke_lockdep(void)
{
	mutex_lock(&provoke_a);
	mutex_lock(&provoke_b);
	mutex_unlock(&provoke_b);
	mutex_unlock(&provoke_a);

	mutex_lock(&provoke_b);
	mutex_lock(&provoke_a);
	mutex_unlock(&provoke_a);
	mutex_unlock(&provoke_b);
}

static int __init npu_provoke_init(void)
{
	/* A KASAN report turns lockdep off: lockdep goes first. */
	WARN(warn, "npu_provoke: a WARNING on purpose\n");
	if (lockdep)
		provoke_lockdep();
	if (leak)
		provoke_leak();
	if (uaf)
		provoke_uaf();
	if (stuck)
		msleep(stuck * 1000);
	return 0;
}

static void __exit npu_provoke_exit(void)
{
}

module_init(npu_provoke_init);
module_exit(npu_provoke_exit);
MODULE_DESCRIPTION("Kernel trouble on purpose, for the npu VM harness tests");
MODULE_LICENSE("GPL");
