// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hang detection and recovery.
 *
 * Hung queues are the queue schedulers' to find (drm_sched's timeout,
 * npu_queue_timed_out()): a task that executed on the device for its
 * queue's limit without finishing fails that queue with DRM_NPU_JOB_TIMEOUT.
 *
 * A watchdog runs every NPU_WATCHDOG_MS while the device is bound:
 *  - it retires completions whose interrupt was lost, so a dropped
 *    interrupt costs latency, never a hang;
 *  - it resets the device when the firmware heartbeat has not moved for
 *    heartbeat_timeout_ms, or when the device is wedged: every batch
 *    fails with DRM_NPU_JOB_RESET, the firmware is told to recover, and the
 *    driver stays usable.
 *
 * Wedging: the driver never trusts device state it could not confirm. A
 * TLB invalidation or a queue stop that the firmware did not confirm
 * leaves the device able to reach memory the driver was about to give
 * back, so the device is wedged: HBM and context ids freed from then on
 * are quarantined (npu_hbm_free()) and released only once a reset has
 * succeeded, which the watchdog starts at once;
 *  - on kernels where io_uring cannot cancel driver commands, it cancels
 *    those whose ring closed or whose task exits (see npu_uring.c).
 */
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/module.h>
#include <linux/workqueue.h>

#include "npu_gem.h"
#include "npu_hw.h"
#include "npu_ipc.h"
#include "npu_queue.h"
#include "npu_recovery.h"
#include "npu_trace.h"
#include "npu_uring.h"

#define NPU_WATCHDOG_MS		100

static unsigned int job_timeout_ms = 2000;
module_param(job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(job_timeout_ms,
		 "Default time a queue with work may go without progress, in ms (2000)");

static unsigned int heartbeat_timeout_ms = 2000;
module_param(heartbeat_timeout_ms, uint, 0644);
MODULE_PARM_DESC(heartbeat_timeout_ms,
		 "Time without a firmware heartbeat before a device reset, in ms (2000)");

static unsigned int max_job_timeout_ms = 60000;
module_param(max_job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(max_job_timeout_ms,
		 "Largest execution time limit a queue may ask for, in ms (60000)");

unsigned int npu_recovery_job_timeout_ms(void)
{
	return READ_ONCE(job_timeout_ms);
}

unsigned int npu_recovery_max_job_timeout_ms(void)
{
	return READ_ONCE(max_job_timeout_ms);
}

/* The device may still reach memory the driver gives back: see the top. */
void npu_device_wedge(struct npu_device *ndev, const char *what, int err)
{
	bool was;
	int idx;

	mutex_lock(&ndev->hbm_lock);
	was = ndev->wedged;
	WRITE_ONCE(ndev->wedged, true);
	mutex_unlock(&ndev->hbm_lock);

	if (!was)
		npu_err(ndev, "%s failed (%d): device wedged until it is reset\n", what, err);
	/* Once unplugged the watchdog is stopped for good (npu_remove()). */
	if (drm_dev_enter(&ndev->drm, &idx)) {
		mod_delayed_work(system_wq, &ndev->watchdog, 0);
		drm_dev_exit(idx);
	}
}

/*
 * Free a context id, or keep it out of use while the device is wedged: a
 * stale translation tagged with it must not reach its next user. An id
 * that cannot be recorded for later stays allocated for good.
 */
void npu_ctx_id_free(struct npu_device *ndev, u32 id)
{
	bool wedged;

	mutex_lock(&ndev->hbm_lock);
	wedged = ndev->wedged;
	if (!wedged)
		ida_free(&ndev->ctx_ida, id);
	mutex_unlock(&ndev->hbm_lock);
	/* The xarray has its own lock; hbm_lock is not held across allocations. */
	if (wedged)
		xa_store(&ndev->ctx_quarantine, id, xa_mk_value(1), GFP_KERNEL);
}

static void npu_recovery_unwedge(struct npu_device *ndev)
{
	unsigned long id;
	void *entry;

	npu_hbm_release_quarantine(ndev);
	npu_userptr_release_quarantine(ndev);
	mutex_lock(&ndev->hbm_lock);
	xa_for_each(&ndev->ctx_quarantine, id, entry) {
		xa_erase(&ndev->ctx_quarantine, id);
		ida_free(&ndev->ctx_ida, id);
	}
	WRITE_ONCE(ndev->wedged, false);
	mutex_unlock(&ndev->hbm_lock);
}

static void npu_recovery_reset(struct npu_device *ndev, const char *why)
{
	int ret;

	npu_err(ndev, "%s: resetting the device\n", why);
	atomic_inc(&ndev->resets);
	ret = npu_queue_fail_all(ndev, DRM_NPU_JOB_RESET, NPU_FW_CMD_RESET);
	trace_npu_reset(atomic_read(&ndev->resets), ret);
	/* Host event waiters fail too: what they wait for may never come. */
	wake_up_all(&ndev->sync_wq);
	if (ret) {
		npu_err(ndev, "device reset failed: %d; it stays wedged\n", ret);
		ndev->reset_failed = true;
		return;
	}
	npu_ipc_clock_forget(ndev);
	npu_recovery_unwedge(ndev);
}

static void npu_watchdog(struct work_struct *work)
{
	struct npu_device *ndev = container_of(to_delayed_work(work), struct npu_device,
					       watchdog);
	u64 beat = npu_hw_heartbeat(ndev);

	npu_queue_poll(ndev);
	npu_uring_reap(ndev);

	if (beat != ndev->last_beat) {
		ndev->last_beat = beat;
		ndev->last_beat_time = jiffies;
	} else if (time_after(jiffies, ndev->last_beat_time +
			      msecs_to_jiffies(heartbeat_timeout_ms))) {
		npu_recovery_reset(ndev, "firmware heartbeat stopped");
		ndev->last_beat_time = jiffies;
	}
	/* One try: a device that cannot reset stays wedged, and says so once. */
	if (READ_ONCE(ndev->wedged) && !ndev->reset_failed)
		npu_recovery_reset(ndev, "device wedged");
	schedule_delayed_work(&ndev->watchdog, msecs_to_jiffies(NPU_WATCHDOG_MS));
}

static void npu_recovery_fini(struct drm_device *drm, void *arg)
{
	xa_destroy(&to_npu_device(drm)->ctx_quarantine);
}

int npu_recovery_init(struct npu_device *ndev)
{
	INIT_DELAYED_WORK(&ndev->watchdog, npu_watchdog);
	xa_init(&ndev->ctx_quarantine);
	atomic_set(&ndev->resets, 0);
	return drmm_add_action_or_reset(&ndev->drm, npu_recovery_fini, NULL);
}

void npu_recovery_start(struct npu_device *ndev)
{
	ndev->last_beat = npu_hw_heartbeat(ndev);
	ndev->last_beat_time = jiffies;
	schedule_delayed_work(&ndev->watchdog, msecs_to_jiffies(NPU_WATCHDOG_MS));
}

void npu_recovery_stop(struct npu_device *ndev)
{
	cancel_delayed_work_sync(&ndev->watchdog);
}
