// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hang detection and recovery.
 *
 * A watchdog runs every NPU_WATCHDOG_MS while the device is bound:
 *  - it retires completions whose interrupt was lost, so a dropped
 *    interrupt costs latency, never a hang;
 *  - it declares a queue hung when the queue has had work but made no
 *    progress (its head did not move) for its time limit: the device
 *    stops the queue and its batches fail with NPU_JOB_TIMEOUT. Progress,
 *    not elapsed time: a long batch that keeps moving is never cut off;
 *  - it resets the device when the firmware heartbeat has not moved for
 *    heartbeat_timeout_ms: every batch fails with NPU_JOB_RESET, the
 *    firmware is told to recover, and the driver stays usable;
 *  - on kernels where io_uring cannot cancel driver commands, it cancels
 *    those whose ring closed or whose task exits (see npu_uring.c).
 */
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/module.h>
#include <linux/workqueue.h>

#include "npu_hw.h"
#include "npu_ipc.h"
#include "npu_queue.h"
#include "npu_recovery.h"
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

unsigned int npu_recovery_job_timeout_ms(void)
{
	return READ_ONCE(job_timeout_ms);
}

static void npu_recovery_reset(struct npu_device *ndev)
{
	int ret;

	npu_err(ndev, "firmware heartbeat stopped for %u ms: resetting the device\n",
		heartbeat_timeout_ms);
	ret = npu_queue_fail_all(ndev, NPU_JOB_RESET, NPU_FW_CMD_RESET);
	if (ret)
		npu_err(ndev, "device reset failed: %d; it stays unusable\n", ret);
}

static void npu_watchdog(struct work_struct *work)
{
	struct npu_device *ndev = container_of(to_delayed_work(work), struct npu_device,
					       watchdog);
	u64 beat = npu_hw_heartbeat(ndev);

	npu_queue_poll(ndev);
	npu_queue_check_hung(ndev);
	npu_uring_reap(ndev);

	if (beat != ndev->last_beat) {
		ndev->last_beat = beat;
		ndev->last_beat_time = jiffies;
	} else if (time_after(jiffies, ndev->last_beat_time +
			      msecs_to_jiffies(heartbeat_timeout_ms))) {
		npu_recovery_reset(ndev);
		ndev->last_beat_time = jiffies;
	}
	schedule_delayed_work(&ndev->watchdog, msecs_to_jiffies(NPU_WATCHDOG_MS));
}

void npu_recovery_init(struct npu_device *ndev)
{
	INIT_DELAYED_WORK(&ndev->watchdog, npu_watchdog);
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
