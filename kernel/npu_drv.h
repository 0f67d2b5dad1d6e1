/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_DRV_H__
#define __NPU_DRV_H__

#include <drm/drm_device.h>
#include <drm/drm_mm.h>
#include <drm/npu_accel.h>
#include <linux/idr.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <drm/drm_print.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "npu_fw_if.h"

#define NPU_DRIVER_NAME		"npu"

/* Mailbox state; see npu_ipc.c for the locking rules. */
/* The device clock (ns) at host_ns (CLOCK_MONOTONIC), read within +- window_ns / 2. */
struct npu_clock_pair {
	u64 device_ns, host_ns, window_ns;
};

struct npu_ipc {
	struct mutex lock;		/* one mailbox command at a time */
	wait_queue_head_t wq;		/* woken by the mailbox interrupt */
	u32 seq;			/* last seq written, under lock */
	spinlock_t tlb_lock;		/* posting a TLB invalidation */
	u32 tlb_req;			/* requests posted, under tlb_lock */
	struct mutex clock_lock;	/* measuring the clock pair; taken before lock */
	struct npu_clock_pair clock;	/* the last measured, under clock_lock */
	u64 clock_tried_ns;		/* when, under clock_lock; 0: never */
	int clock_err;			/* and how it went */
};

/* What the firmware told us at probe; constant afterwards. */
struct npu_fw_info {
	u32 if_version;
	u32 fw_version;
	u64 caps;
	u32 fw_peer;
	u32 host_peer;
	u64 hbm_size;
	u64 fw_reserved;
	u32 num_queues;
	u32 num_cores;
	u32 num_core_groups;
	u32 num_dma_engines;
	u32 heartbeat_ms;
};

struct npu_queue;

struct npu_device {
	struct drm_device drm;
	struct pci_dev *pdev;
	void __iomem *regs;			/* BAR0: ivshmem registers */
	struct npu_fw_ctrl __iomem *ctrl;	/* start of BAR2, uncached */
	struct npu_fw_info fw;
	struct npu_ipc ipc;

	/* Device memory; see npu_gem.c for the locking rules. */
	phys_addr_t hbm_phys;			/* CPU physical address of HBM */
	void __iomem *hbm;			/* HBM through BAR2, uncached */
	struct mutex hbm_lock;
	struct drm_mm hbm_mm;
	struct list_head hbm_quarantine;	/* npu_hbm_quarantined, until a reset */
	u64 hbm_quarantined;			/* bytes in it */
	struct list_head userptr_quarantine;	/* pinned host memory, likewise */
	struct {
		u64 current_bytes;
		u64 peak_bytes;
	} mem[DRM_NPU_MEM_REGION_COUNT];

	struct ida ctx_ida;			/* device context ids */
	struct xarray ctx_quarantine;		/* ids freed while wedged */

	/* Task queues; see npu_queue.c for the locking rules. */
	struct mutex queue_lock;
	struct ida queue_ida;			/* hardware queue slots */
	struct npu_queue **queues;		/* by slot, fw.num_queues of them */
	/*
	 * Queues' memory once released, for the next queue: their scheduler
	 * fences outlive them (in syncobjs, sync_files) and read the
	 * scheduler's name, so it stays until the device goes (npu_queue.c).
	 */

	/* Holds' marks (npu_hold.c), unique device-wide. */
	atomic64_t hold_marks;

	/* Events and notifies; see npu_sync.c. */
	struct ida sync_ida;
	atomic_t syncs_in_use;
	wait_queue_head_t sync_wq;

	/* Parked io_uring commands; see npu_uring.c for the locking rules. */
	spinlock_t ucmd_lock;
	struct list_head ucmds;			/* every parked command */
	struct list_head ucmd_events;		/* parked EVENT_WAITs */
	atomic_t ucmd_count;			/* allocated, parked or completing */

	/* Watchdog, wedging and resets; see npu_recovery.c. */
	struct delayed_work watchdog;
	bool wedged;				/* under hbm_lock; read locklessly */
	atomic_t resets;			/* device resets so far */
	bool reset_failed;			/* the watchdog's: tries no more */
	u64 last_beat;
	unsigned long last_beat_time;
	/* debugfs npu_inject "hold-timeout <ms>": see npu_job_timedout(). */
	unsigned int inject_hold_timeout_ms;
	/* debugfs npu_inject "fail-pt-alloc <n>": see npu_pt_alloc(). */
	atomic_t inject_fail_pt_alloc;
	/* debugfs npu_inject "hold-info <ms>": see npu_ioctl_bo_info(). */
	unsigned int inject_hold_info_ms;
	/* debugfs npu_inject "hold-map <ms>": see npu_bo_map_create(). */
	unsigned int inject_hold_map_ms;
	/* debugfs npu_inject "hold-release <ms>": see npu_job_sched_free(). */
	unsigned int inject_hold_release_ms;
	/* debugfs npu_inject "hold-park <us>": see npu_ucmd_park_queue(). */
	unsigned int inject_hold_park_us;
	/* debugfs npu_inject "hold-cancelable <ms>": see npu_ucmd_parking(). */
	unsigned int inject_hold_cancelable_ms;
};

/* The driver's own work (releasing finished jobs); drained when the module goes. */
extern struct workqueue_struct *npu_wq;
/*
 * The schedulers' timeout handlers: ordered, as they stop queues through
 * the mailbox (a round trip that may take the firmware's timeout) and
 * sleep, which they must not do on system_wq; able to make progress
 * under memory pressure, as they are on the way to a fence's signal.
 */
extern struct workqueue_struct *npu_timeout_wq;

static inline struct npu_device *to_npu_device(struct drm_device *drm)
{
	return container_of(drm, struct npu_device, drm);
}

/*
 * A uapi deadline (absolute CLOCK_MONOTONIC ns) as jiffies from now for
 * wait_event_*_timeout(): DRM_NPU_DEADLINE_NONE waits without limit, a
 * deadline not in the future polls, anything else rounds up.
 */
static inline long npu_deadline_jiffies(s64 deadline_ns)
{
	s64 now = ktime_to_ns(ktime_get());

	if (deadline_ns == DRM_NPU_DEADLINE_NONE)
		return MAX_SCHEDULE_TIMEOUT;
	/* Compared, not subtracted first: deadline - now overflows near S64_MIN. */
	if (deadline_ns <= now)
		return 0;
	/*
	 * Two more: the first tick may come at once, and the wait must not
	 * end before the deadline.
	 */
	return min_t(u64, nsecs_to_jiffies64(deadline_ns - now) + 2, MAX_SCHEDULE_TIMEOUT - 1);
}

int npu_obj_array_copy(void *dst, const struct drm_npu_obj_array *a, size_t ksize, size_t min);
void *npu_obj_array_dup(const struct drm_npu_obj_array *a, u32 max, size_t ksize, size_t min,
			int *err);

#define npu_err(ndev, fmt, ...)  drm_err(&(ndev)->drm, fmt, ##__VA_ARGS__)
#define npu_info(ndev, fmt, ...) drm_info(&(ndev)->drm, fmt, ##__VA_ARGS__)
#define npu_dbg(ndev, fmt, ...)  drm_dbg_driver(&(ndev)->drm, fmt, ##__VA_ARGS__)

#endif /* __NPU_DRV_H__ */
