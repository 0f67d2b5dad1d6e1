// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_SCHED_INIT_SUBMIT_WQ: positional drm_sched_init() with a
 * submission workqueue, run-queue count and credit limit (6.8 to 6.14). */
#include <drm/gpu_scheduler.h>

int npu_probe(struct drm_gpu_scheduler *s, const struct drm_sched_backend_ops *ops);
int npu_probe(struct drm_gpu_scheduler *s, const struct drm_sched_backend_ops *ops)
{
	return drm_sched_init(s, ops, NULL, 1, 1, 0, 1, NULL, NULL, "probe", NULL);
}
