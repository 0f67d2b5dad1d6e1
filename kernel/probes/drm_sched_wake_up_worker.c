// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_SCHED_WAKE_UP_WORKER: the scheduler is a kthread sleeping on
 * .wake_up_worker (before 6.8's workqueues). */
#include <drm/gpu_scheduler.h>

void npu_probe(struct drm_gpu_scheduler *s);
void npu_probe(struct drm_gpu_scheduler *s)
{
	wake_up_interruptible(&s->wake_up_worker);
}
