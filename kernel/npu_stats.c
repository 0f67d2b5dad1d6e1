// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory statistics for people and tools: fdinfo (the keys of the
 * kernel's drm-usage-stats document, so gputop-style tools read them) and
 * debugfs (device-wide, with the firmware's error log).
 */
#include <drm/drm_debugfs.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_print.h>
#include <linux/debugfs.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/stringify.h>
#include <linux/uaccess.h>

#include "npu_ctx.h"
#include "npu_ipc.h"
#include "npu_queue.h"
#include "npu_stats.h"
#include "npu_uring.h"

static const char *const npu_region_names[DRM_NPU_MEM_REGION_COUNT] = {
	[DRM_NPU_MEM_REGION_HBM] = "hbm",
	[DRM_NPU_MEM_REGION_HOST] = "host",
	[DRM_NPU_MEM_REGION_PAGE_TABLES] = "pagetables",
	[DRM_NPU_MEM_REGION_QUEUES] = "queues",
};

/* The driver's own fdinfo keys: engine time and memory per region. */
static void npu_fdinfo_keys(struct drm_printer *p, struct npu_ctx *ctx)
{
	struct npu_device *ndev = ctx->ndev;
	u64 cur[DRM_NPU_MEM_REGION_COUNT], busy;
	int r;

	mutex_lock(&ndev->hbm_lock);
	for (r = 0; r < DRM_NPU_MEM_REGION_COUNT; r++)
		cur[r] = ctx->mem[r].current_bytes;
	mutex_unlock(&ndev->hbm_lock);
	mutex_lock(&ndev->queue_lock);
	busy = ctx->busy_ns;
	mutex_unlock(&ndev->queue_lock);

	/*
	 * The context id of debugfs npu_queues and of fault injection. Not
	 * drm-client-id: where the DRM core prints fdinfo, that is its own.
	 */
	drm_printf(p, "npu-context:\t%u\n", ctx->id);
	/* Time this context's queues had work on the device. */
	drm_printf(p, "drm-engine-npu:\t%llu ns\n", busy);
	/* Everything an NPU context holds is resident: nothing is swapped. */
	for (r = 0; r < DRM_NPU_MEM_REGION_COUNT; r++) {
		drm_printf(p, "drm-total-%s:\t%llu KiB\n", npu_region_names[r], cur[r] >> 10);
		drm_printf(p, "drm-resident-%s:\t%llu KiB\n", npu_region_names[r], cur[r] >> 10);
	}
}

#ifdef HAVE_DRM_SHOW_MEMORY_STATS
/*
 * drm_driver.show_fdinfo: the DRM core has printed drm-driver,
 * drm-client-id and drm-pdev; drm_show_memory_stats() adds the GEM keys
 * (drm-total-memory, drm-resident-memory, ...) of the file's buffers.
 */
void npu_drm_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	npu_fdinfo_keys(p, file->driver_priv);
	drm_show_memory_stats(p, file);
}
#else
/* file_operations.show_fdinfo where the DRM core has no fdinfo (6.1). */
void npu_show_fdinfo(struct seq_file *m, struct file *f)
{
	struct drm_file *file = f->private_data;
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_device *ndev = ctx->ndev;
	struct drm_printer p = drm_seq_file_printer(m);

	drm_printf(&p, "drm-driver:\t%s\n", ndev->drm.driver->name);
	drm_printf(&p, "drm-pdev:\t%s\n", pci_name(ndev->pdev));
	drm_printf(&p, "drm-client-id:\t%u\n", ctx->id);
	npu_fdinfo_keys(&p, ctx);
}
#endif

static int npu_mem_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	int r;

	seq_printf(m, "%-12s %14s %14s\n", "region", "current", "peak");
	mutex_lock(&ndev->hbm_lock);
	for (r = 0; r < DRM_NPU_MEM_REGION_COUNT; r++)
		seq_printf(m, "%-12s %14llu %14llu\n", npu_region_names[r],
			   ndev->mem[r].current_bytes, ndev->mem[r].peak_bytes);
	mutex_unlock(&ndev->hbm_lock);
	seq_printf(m, "hbm size %llu, firmware reserved %llu\n",
		   ndev->fw.hbm_size, ndev->fw.fw_reserved);
	seq_printf(m, "quarantined until a reset: %llu\n", READ_ONCE(ndev->hbm_quarantined));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_mem);

static int npu_queues_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	static const char *const states[] = { "stopped", "running", "faulted" };
	u32 i;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	seq_printf(m, "%-4s %-7s %-5s %-4s %-8s %10s %10s %10s %10s %7s %s\n", "hw", "context",
		   "queue", "prio", "state", "head", "tail", "done", "submitted", "pending",
		   "status");
	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++) {
		struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, i);
		struct npu_queue *q = ndev->queues[i];
		u32 state = readl(&slot->state);
		struct npu_job *job;
		unsigned int pending = 0;

		if (!q)
			continue;
		list_for_each_entry(job, &q->jobs, link)
			pending++;
		seq_printf(m, "%-4u %-7u %-5u %-4u %-8s %10u %10u %10llu %10llu %7u %s\n", i,
			   q->ctx->id, q->id, q->priority, state < 3 ? states[state] : "?",
			   readl(&slot->head), readl(&slot->tail), readq(&slot->done_seq),
			   q->next_seq, pending, q->failed ? "failed" : "ok");
	}
	mutex_unlock(&ndev->queue_lock);
	seq_printf(m, "events and notifies in use: %d\n", atomic_read(&ndev->syncs_in_use));
	seq_printf(m, "device resets: %d\n", atomic_read(&ndev->resets));
	seq_printf(m, "wedged: %d\n", READ_ONCE(ndev->wedged));
	npu_uring_debugfs_show(m, ndev);
	drm_dev_exit(idx);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_queues);

static int npu_errlog_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	struct npu_fw_errlog __iomem *log = &ndev->ctrl->errlog;
	u32 head, first, i;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	head = readl(&log->head);
	first = head > NPU_FW_ERRLOG_ENTRIES ? head - NPU_FW_ERRLOG_ENTRIES : 0;
	seq_printf(m, "%u errors logged%s\n", head, first ? " (oldest lost)" : "");
	for (i = first; i < head; i++) {
		struct npu_fw_err_entry __iomem *e = &log->entries[i % NPU_FW_ERRLOG_ENTRIES];

		seq_printf(m, "%u: t=%llu code=%u context=%u address=%#llx info=%#llx\n",
			   i, readq(&e->timestamp_ns), readl(&e->code), readl(&e->context),
			   readq(&e->address), readq(&e->info));
	}
	drm_dev_exit(idx);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_errlog);

/*
 * The driver's own fault injection: a delay at one point of its code,
 * for a test to widen a window that is otherwise microseconds wide.
 * Each is an unsigned int of struct npu_device (checked at build time);
 * names are at most NPU_INJECT_WORD characters.
 */
#define NPU_INJECT_WORD		23
#define NPU_INJECT_HOLD(_name, _max, _field) {					\
	.name = _name,								\
	.max = (_max) + BUILD_BUG_ON_ZERO(sizeof(_name) > NPU_INJECT_WORD + 1) +	\
	       BUILD_BUG_ON_ZERO(!__same_type(((struct npu_device *)0)->_field,	\
					       unsigned int)),			\
	.offset = offsetof(struct npu_device, _field),				\
}

static const struct npu_inject_hold {
	const char *name;
	unsigned int max;	/* in the field's unit: its name's suffix */
	size_t offset;		/* of the unsigned int in struct npu_device */
} npu_inject_holds[] = {
	/* The timeout handler holds a timed-out job off the scheduler's list. */
	NPU_INJECT_HOLD("hold-timeout", 100, inject_hold_timeout_ms),
	/*
	 * BO_INFO waits between finding the handle and reading the buffer's
	 * mapping, BO_CREATE and USERPTR between making the handle and
	 * answering.
	 */
	NPU_INJECT_HOLD("hold-info", 1000, inject_hold_info_ms),
	/* A new mapping holds its context's VM lock. */
	NPU_INJECT_HOLD("hold-map", 1000, inject_hold_map_ms),
	/* A finished batch gives back what it holds only this much later. */
	NPU_INJECT_HOLD("hold-release", 1000, inject_hold_release_ms),
	/* An io_uring command spins after the settling it does as it parks. */
	NPU_INJECT_HOLD("hold-park", 2000, inject_hold_park_us),
	/*
	 * An io_uring command issued from a worker sleeps between becoming
	 * cancelable and parking (6.7 on, where io_uring cancels).
	 */
	NPU_INJECT_HOLD("hold-cancelable", 1000, inject_hold_cancelable_ms),
};

static unsigned int *npu_inject_hold_at(struct npu_device *ndev, const struct npu_inject_hold *h)
{
	return (unsigned int *)((char *)ndev + h->offset);
}

/*
 * Fault injection for tests, when the firmware offers it: write
 * "hang <context id>", "heartbeat-stop", "drop-irqs <n>",
 * "fail-invalidate <n>", "hold-invalidate" (until "clear") or "clear",
 * which the firmware acts on; "fail-pt-alloc <n>", which fails the n-th
 * device page-table allocation from now, once (0 disarms); or one of
 * npu_inject_holds[] with its delay (0 ends it). "clear" ends them all.
 */
static ssize_t npu_inject_write(struct file *f, const char __user *ubuf, size_t len,
				loff_t *pos)
{
	struct npu_device *ndev = file_inode(f)->i_private;
	u64 args[4] = { NPU_FW_INJECT_NONE };
	char buf[40], word[NPU_INJECT_WORD + 1];
	unsigned int arg = 0;
	int n, ret, idx;
	size_t i;

	if (!(ndev->fw.caps & NPU_FW_CAP_FAULT_INJECTION))
		return -EOPNOTSUPP;
	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	n = sscanf(buf, "%" __stringify(NPU_INJECT_WORD) "s %u", word, &arg);
	if (n < 1)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(npu_inject_holds); i++) {
		const struct npu_inject_hold *h = &npu_inject_holds[i];

		if (strcmp(word, h->name))
			continue;
		if (n != 2 || arg > h->max)
			return -EINVAL;
		WRITE_ONCE(*npu_inject_hold_at(ndev, h), arg);
		return len;
	}
	if (!strcmp(word, "fail-pt-alloc")) {
		if (n != 2 || arg > INT_MAX)
			return -EINVAL;
		atomic_set(&ndev->inject_fail_pt_alloc, arg);
		return len;
	}
	if (!strcmp(word, "clear")) {
		/* The firmware's end with NPU_FW_INJECT_NONE. */
		for (i = 0; i < ARRAY_SIZE(npu_inject_holds); i++)
			WRITE_ONCE(*npu_inject_hold_at(ndev, &npu_inject_holds[i]), 0);
		atomic_set(&ndev->inject_fail_pt_alloc, 0);
	} else if (!strcmp(word, "hang") && n == 2) {
		args[0] = NPU_FW_INJECT_HANG_CONTEXT;
	} else if (!strcmp(word, "heartbeat-stop")) {
		args[0] = NPU_FW_INJECT_STOP_HEARTBEAT;
	} else if (!strcmp(word, "drop-irqs") && n == 2) {
		args[0] = NPU_FW_INJECT_DROP_IRQS;
	} else if (!strcmp(word, "fail-invalidate") && n == 2) {
		args[0] = NPU_FW_INJECT_FAIL_INVALIDATE;
	} else if (!strcmp(word, "hold-invalidate") && n == 1) {
		args[0] = NPU_FW_INJECT_HOLD_INVALIDATE;
	} else {
		return -EINVAL;
	}
	args[1] = arg;
	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	ret = npu_ipc_send(ndev, NPU_FW_CMD_INJECT, args, NULL);
	drm_dev_exit(idx);
	return ret ? ret : len;
}

static const struct file_operations npu_inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = npu_inject_write,
	.llseek = noop_llseek,
};

/*
 * fw_ping: each read sends the firmware a mailbox PING and prints its
 * round trip ("<ns> ns"); -ETIMEDOUT when the firmware does not answer.
 * It was DRM_NPU_PARAM_FW_PING_NS, open to every user of the device.
 */
static int npu_fw_ping_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	u64 rtt;
	int idx, ret;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	ret = npu_ipc_ping(ndev, &rtt);
	drm_dev_exit(idx);
	if (ret)
		return ret;
	seq_printf(m, "%llu ns\n", rtt);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_fw_ping);

static void npu_debugfs_populate(struct npu_device *ndev, struct dentry *root)
{
	debugfs_create_file("npu_mem", 0444, root, ndev, &npu_mem_fops);
	debugfs_create_file("fw_ping", 0400, root, ndev, &npu_fw_ping_fops);
	debugfs_create_file("npu_errlog", 0444, root, ndev, &npu_errlog_fops);
	debugfs_create_file("npu_inject", 0200, root, ndev, &npu_inject_fops);
	debugfs_create_file("npu_queues", 0444, root, ndev, &npu_queues_fops);
}

void npu_debugfs_init(struct drm_minor *minor)
{
	npu_debugfs_populate(to_npu_device(minor->dev), minor->debugfs_root);
}

/*
 * After drm_dev_register(). Where DRM keeps a directory per device and
 * does not call debugfs_init for an accel minor, the files go there; the
 * lookup keeps them from being made twice on a kernel that does call it.
 */
void npu_debugfs_register(struct npu_device *ndev)
{
#if defined(HAVE_DRM_ACCEL) && defined(HAVE_DRM_DEVICE_DEBUGFS_ROOT)
	struct dentry *root = ndev->drm.debugfs_root, *d;

	if (IS_ERR_OR_NULL(root))
		return;
	d = debugfs_lookup("npu_queues", root);
	if (d) {
		dput(d);
		return;
	}
	npu_debugfs_populate(ndev, root);
#endif
}
