// SPDX-License-Identifier: MIT
/*
 * One user's work must not stop another's, and nothing a user does may
 * keep the device or its driver from answering: a kernel launch that
 * computes for seconds, a queue waiting on an event or starved by higher
 * priorities, waits that are interrupted and restarted, waiters and
 * notify fds that outlive the device's binding.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC		(1000000000ll)
#define MS		(1000000ll)

static struct drm_npu_task task1(uint32_t type, uint64_t arg)
{
	struct drm_npu_task t = { .type = type, .args = { arg } };

	return t;
}

static long long resets(void)
{
	return npu_debugfs_value("npu_queues", "device resets: ");
}

/*
 * A GEMM that computes for seconds with little memory: rows and columns
 * broadcast (stride 0), and beta = 1 so the output is read too. 2^49
 * flops: over a second even on two cores of a host that runs the fp32
 * kernel at 220 GFLOP/s a core (2^16 once finished under the 300 ms limit
 * of the test below on such a host). `bo` holds the argument block at 0
 * and the two input vectors; the output is its own buffer.
 */
#define GEMM_M		1024
#define GEMM_N		1024
#define GEMM_K		(1u << 18)
#define IN_BO_SIZE	(2u << 20)
#define OUT_BO_SIZE	((uint64_t)GEMM_M * GEMM_N * 4)

struct launch {
	struct drm_npu_bo_create in, out;
	void *in_map;
	struct drm_npu_task task;
};

static void launch_setup(struct __test_metadata *_metadata, int fd, struct launch *l)
{
	struct npu_op_args a = { .op = NPU_OP_GEMM, .alpha = 1.0f, .beta = 1.0f };
	uint64_t va;

	ASSERT_EQ(0, npu_bo_create(fd, IN_BO_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &l->in));
	ASSERT_EQ(0, npu_bo_create(fd, OUT_BO_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &l->out));
	l->in_map = npu_bo_mmap(fd, l->in.handle, IN_BO_SIZE);
	ASSERT_NE(MAP_FAILED, l->in_map);
	va = l->in.device_va;
	a.in[0] = (struct npu_op_tensor){ .va = va + 4096, .dtype = NPU_DT_F32, .ndim = 2,
					   .shape = { GEMM_M, GEMM_K }, .stride = { 0, 1 } };
	a.in[1] = (struct npu_op_tensor){ .va = va + 4096 + GEMM_K * 4, .dtype = NPU_DT_F32,
					   .ndim = 2, .shape = { GEMM_K, GEMM_N },
					   .stride = { 0, 1 } };
	a.out = (struct npu_op_tensor){ .va = l->out.device_va, .dtype = NPU_DT_F32,
					 .ndim = 2, .shape = { GEMM_M, GEMM_N },
					 .stride = { GEMM_N, 1 } };
	memcpy(l->in_map, &a, sizeof(a));
	l->task = (struct drm_npu_task){ .type = DRM_NPU_TASK_KERNEL,
					 .args = { va, 0, sizeof(struct npu_op_args) } };
}

static void launch_teardown(int fd, struct launch *l)
{
	munmap(l->in_map, IN_BO_SIZE);
	npu_gem_close(fd, l->in.handle);
	if (l->out.handle)
		npu_gem_close(fd, l->out.handle);
}

/* A FILL on another context's queue, waited for: its status. */
static uint32_t other_context_fills(struct __test_metadata *_metadata)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	struct drm_npu_wait w = { 0 };
	uint64_t seq;
	int fd = npu_open(), ret;

	if (fd < 0)
		return ~0u;
	ret = npu_bo_create(fd, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c);
	t = npu_task_fill(c.device_va, 1 << 20, 7);
	if (!ret)
		ret = npu_submit(fd, &t, 1, &seq);
	if (!ret)
		ret = npu_wait(fd, seq, 20 * SEC, &w);
	close(fd);
	return ret ? ~0u : w.status;
}

/*
 * While a launch computes for seconds, the firmware answers its mailbox
 * and its heartbeat, other contexts' work runs, and closing the launch's
 * output buffer neither stalls nor wedges the device (the memory goes
 * back only once the device has forgotten it). No reset, no failure of
 * anybody else's work.
 */
TEST(a_long_launch_leaves_the_device_to_everyone_else)
{
	int fd = npu_open();
	uint64_t max_ms = 0, seq, beat0 = 0, beat1 = 0, ping = 0;
	long long resets_before = resets();
	struct drm_npu_task t[2];
	struct drm_npu_wait w;
	struct launch l = { 0 };
	uint32_t q, ev;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, resets_before);
	launch_setup(_metadata, fd, &l);
	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS, &max_ms));
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, max_ms, &q));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev));
	t[0] = task1(DRM_NPU_TASK_EVENT_RECORD, ev);
	t[1] = l.task;
	ASSERT_EQ(0, npu_submit_on(fd, q, t, 2, &seq));
	/* The event is recorded as the launch starts. */
	struct drm_npu_event_wait ew = { .id = ev, .deadline_ns = npu_deadline(20 * SEC) };

	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &ew));

	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_FW_HEARTBEAT, &beat0));
	EXPECT_EQ(0, npu_fw_ping(fd, &ping));
	EXPECT_EQ(DRM_NPU_JOB_DONE, other_context_fills(_metadata));
	/* The output goes while the launch still computes into its copy. */
	EXPECT_EQ(0, npu_gem_close(fd, l.out.handle));
	l.out.handle = 0;
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(fd, q, seq, 0, NULL)) TH_LOG("the launch ended early");
	usleep(300000);
	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_FW_HEARTBEAT, &beat1));
	EXPECT_LT(beat0, beat1);
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(fd, q, seq, 0, NULL));

	/* Cut it short: the device stops it at once, and stays usable. */
	struct drm_npu_queue_destroy ab = { .queue = q };

	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_QUEUE_ABORT, &ab));
	EXPECT_EQ(-EIO, npu_wait_on(fd, q, seq, 5 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_ABORTED, w.status);
	EXPECT_EQ(DRM_NPU_JOB_DONE, other_context_fills(_metadata));
	EXPECT_EQ(resets_before, resets());
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "wedged: "));
	launch_teardown(fd, &l);
	close(fd);
}

/* A launch over its queue's time limit fails that queue, nothing else. */
TEST(a_launch_over_its_time_limit_fails_its_own_queue_only)
{
	int fd = npu_open();
	long long resets_before = resets();
	struct drm_npu_wait w;
	struct launch l = { 0 };
	uint64_t seq;
	uint32_t q;

	ASSERT_LE(0, fd);
	launch_setup(_metadata, fd, &l);
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 300, &q));
	ASSERT_EQ(0, npu_submit_on(fd, q, &l.task, 1, &seq));
	EXPECT_EQ(DRM_NPU_JOB_DONE, other_context_fills(_metadata));
	EXPECT_EQ(-EIO, npu_wait_on(fd, q, seq, 30 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_TIMEOUT, w.status);
	EXPECT_EQ(DRM_NPU_JOB_DONE, other_context_fills(_metadata));
	EXPECT_EQ(resets_before, resets());
	launch_teardown(fd, &l);
	close(fd);
}

/*
 * A queue blocked on an event executes nothing: however long it waits,
 * its time limit never runs out.
 */
TEST(a_queue_waiting_on_an_event_is_not_hung)
{
	int fd = npu_open();
	struct drm_npu_task t[2];
	struct drm_npu_wait w;
	uint32_t qa, qb, ev;
	uint64_t seq, seq2;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 200, &qa));
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &qb));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev));
	t[0] = task1(DRM_NPU_TASK_EVENT_WAIT, ev);
	t[1] = task1(DRM_NPU_TASK_NOP, 0);
	ASSERT_EQ(0, npu_submit_on(fd, qa, t, 2, &seq));
	/* Five time limits and more: a head-only watch would have failed it. */
	usleep(1200000);
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(fd, qa, seq, 0, &w));
	t[0] = task1(DRM_NPU_TASK_EVENT_RECORD, ev);
	ASSERT_EQ(0, npu_submit_on(fd, qb, t, 1, &seq2));
	EXPECT_EQ(0, npu_wait_on(fd, qa, seq, 10 * SEC, &w)) TH_LOG("status %u", w.status);
	close(fd);
}

/*
 * A LOW queue behind a HIGH queue that keeps the device busy for about a
 * second executes nothing meanwhile: it is starved, not hung, and runs
 * once the HIGH queue drains.
 */
TEST(a_starved_queue_is_not_hung)
{
	int fa = npu_open(), fb = npu_open();
	struct drm_npu_task fill[64], nop = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_bo_create c;
	struct drm_npu_wait w;
	uint64_t seq_hi = 0, seq_lo;
	uint32_t lo, hi;

	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, npu_bo_create(fb, 32 << 20, DRM_NPU_BO_PAGE_HUGE_FIRST, &c));
	for (int i = 0; i < 64; i++)
		fill[i] = npu_task_fill(c.device_va, 32 << 20, i);
	ASSERT_EQ(0, npu_queue_create(fa, DRM_NPU_QUEUE_PRIORITY_LOW, 0, 200, &lo));
	ASSERT_EQ(0, npu_queue_create(fb, DRM_NPU_QUEUE_PRIORITY_HIGH, 0, 0, &hi));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, npu_submit_on(fb, hi, fill, 64, &seq_hi));
	ASSERT_EQ(0, npu_submit_on(fa, lo, &nop, 1, &seq_lo));
	EXPECT_EQ(0, npu_wait_on(fb, hi, seq_hi, 60 * SEC, &w));
	EXPECT_EQ(0, npu_wait_on(fa, lo, seq_lo, 10 * SEC, &w)) TH_LOG("status %u", w.status);
	close(fa);
	close(fb);
}

static volatile unsigned long ticks;

static void tick(int sig)
{
	ticks++;
}

/*
 * Waits interrupted by a signal with SA_RESTART are restarted with the
 * same arguments; a restart must not begin the whole wait again, or a
 * timer firing more often than the timeout would keep it waiting forever
 * (the harness's time limit would then fail this test).
 */
TEST(restarted_waits_keep_their_deadline)
{
	struct sigaction sa = { .sa_handler = tick, .sa_flags = SA_RESTART };
	struct itimerval it = { .it_interval = { 0, 20000 }, .it_value = { 0, 20000 } };
	struct drm_npu_event_wait ew = { .deadline_ns = npu_deadline(400 * MS) };
	int fd = npu_open();
	struct drm_npu_task t;
	uint64_t seq;
	uint32_t ev;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev));
	t = task1(DRM_NPU_TASK_EVENT_WAIT, ev);
	ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-ETIMEDOUT, npu_wait(fd, seq, 400 * MS, NULL));
	ew.id = ev;
	EXPECT_EQ(-1, ioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &ew));
	EXPECT_EQ(ETIMEDOUT, errno);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	EXPECT_LT(10, ticks);
	close(fd);
}

struct waiter {
	int fd;
	uint32_t queue, event;
	int ret;
};

static void *wait_forever_for_event(void *arg)
{
	struct waiter *w = arg;
	struct drm_npu_event_wait ew = { .id = w->event, .deadline_ns = npu_deadline(-1) };

	w->ret = ioctl(w->fd, DRM_IOCTL_NPU_EVENT_WAIT, &ew) ? -errno : 0;
	return NULL;
}

/* Submits to a queue blocked on an event until the ring is full. */
static void *submit_until_blocked(void *arg)
{
	struct waiter *w = arg;
	struct drm_npu_task nops[200] = { 0 };
	uint64_t seq;

	do {
		w->ret = npu_submit_on(w->fd, w->queue, nops, 200, &seq);
	} while (!w->ret);
	return NULL;
}

/*
 * Unbinding the device finishes while users wait in the kernel without a
 * limit (an event wait, a submit waiting for ring room): they are woken
 * and told the device is gone. The unbind runs in a child, so a hang
 * shows as this test failing, not as the whole run stopping.
 */
TEST(unbind_wakes_waiters_that_have_no_limit)
{
	char node[64], bdf[32];
	struct waiter ev = { 0 }, sub = { 0 };
	pthread_t t1, t2;
	struct drm_npu_task t;
	uint64_t seq;
	int fd, status = -1;
	pid_t pid;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ev.fd = sub.fd = fd;
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev.event));
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, DRM_NPU_QUEUE_DEPTH_MIN, 0,
				      &sub.queue));
	t = task1(DRM_NPU_TASK_EVENT_WAIT, ev.event);
	ASSERT_EQ(0, npu_submit_on(fd, sub.queue, &t, 1, &seq));
	ASSERT_EQ(0, pthread_create(&t1, NULL, wait_forever_for_event, &ev));
	ASSERT_EQ(0, pthread_create(&t2, NULL, submit_until_blocked, &sub));
	usleep(500000);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf) ? 1 : 0);
	npu_wait_child(pid, &status, 20);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("unbind did not finish in 20 s");
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	EXPECT_EQ(-ENODEV, ev.ret);
	EXPECT_TRUE(sub.ret == -ENODEV || sub.ret == -EIO) TH_LOG("%d", sub.ret);
	close(fd);
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/bind", bdf));
}

/*
 * A notify fd outlives every DRM file and the device's binding; closing
 * it last gives its entry back to a device that must still exist.
 */
TEST(a_notify_fd_closed_after_unbind)
{
	struct drm_npu_notify_export ex = { 0 };
	char node[64], bdf[32];
	uint64_t v;
	int fd;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	fd = open(node, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_NOTIFY, &ex.id));
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &ex));
	close(fd);
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/unbind", bdf));
	close(ex.fd);
	ASSERT_EQ(0, npu_sysfs_write(NPU_SYSFS_DRIVER "/bind", bdf));
	fd = npu_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, npu_fw_ping(fd, &v));
	close(fd);
}

/*
 * A batch whose in-syncobj is another process's batch, blocked on the
 * device, is queued without the submitter waiting; closing the file with
 * it still queued neither waits for that fence nor leaves anything
 * behind. (On 6.1, drm_sched's entity teardown waits for every
 * dependency of a job it kills: the driver hands none out for a queue
 * that is going away.) The other process runs in a child, so a hang
 * shows as this test failing.
 */
TEST(closing_a_file_never_waits_for_another_files_fence)
{
	struct drm_npu_task gate_wait, rec, nop = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_syncobj sync = { 0 };
	struct drm_npu_submit gated = { .tasks = (uintptr_t)&gate_wait, .count = 1,
					.out_syncobjs = (uintptr_t)&sync, .out_count = 1 };
	int fd = npu_open(), status = -1, sync_fd = -1;
	struct drm_npu_wait w;
	uint32_t ev, q;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev));
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	gate_wait = task1(DRM_NPU_TASK_EVENT_WAIT, ev);
	gated.queue = q;
	ASSERT_EQ(0, drmSyncobjCreate(fd, 0, &sync.handle));
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &gated));
	ASSERT_EQ(0, drmSyncobjHandleToFD(fd, sync.handle, &sync_fd));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_npu_syncobj in = { 0 };
		struct drm_npu_submit s = { .tasks = (uintptr_t)&nop, .count = 1,
					    .in_syncobjs = (uintptr_t)&in, .in_count = 1 };
		int other = npu_open();

		if (other < 0 || drmSyncobjFDToHandle(other, sync_fd, &in.handle) ||
		    ioctl(other, DRM_IOCTL_NPU_SUBMIT, &s) || s.seq != 1)
			_exit(1);
		close(other);
		_exit(0);
	}
	npu_wait_child(pid, &status, 20);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("the other process did not submit and close in 20 s");
	EXPECT_EQ(64 * 1024, npu_usage_settles(fd, DRM_NPU_MEM_REGION_QUEUES, 64 * 1024));

	rec = task1(DRM_NPU_TASK_EVENT_RECORD, ev);
	ASSERT_EQ(0, npu_submit(fd, &rec, 1, NULL));
	EXPECT_EQ(0, npu_wait_on(fd, q, gated.seq, 10 * SEC, &w));
	close(sync_fd);
	drmSyncobjDestroy(fd, sync.handle);
	close(fd);
}

TEST_HARNESS_MAIN
