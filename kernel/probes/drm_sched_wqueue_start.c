// SPDX-License-Identifier: GPL-2.0-only
/*
 * HAVE_DRM_SCHED_WQUEUE_START: the scheduler runs on workqueues (6.8+),
 * and drm_sched_wqueue_start() queues its run and free work.
 */
#include <drm/gpu_scheduler.h>

void npu_probe(struct drm_gpu_scheduler *sched);
void npu_probe(struct drm_gpu_scheduler *sched)
{
	drm_sched_wqueue_start(sched);
}
