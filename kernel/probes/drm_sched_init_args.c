// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_SCHED_INIT_ARGS: drm_sched_init() takes a struct of arguments
 * (6.15, and Debian's 6.1 backport). */
#include <drm/gpu_scheduler.h>

int npu_probe(struct drm_gpu_scheduler *s, const struct drm_sched_backend_ops *ops);
int npu_probe(struct drm_gpu_scheduler *s, const struct drm_sched_backend_ops *ops)
{
	const struct drm_sched_init_args args = {
		.ops = ops, .credit_limit = 1, .timeout = 1, .name = "probe",
	};

	return drm_sched_init(s, &args);
}
