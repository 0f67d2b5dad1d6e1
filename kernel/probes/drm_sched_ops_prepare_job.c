// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_SCHED_OPS_PREPARE_JOB: the extra-dependency callback is
 * .prepare_job (6.2; before, .dependency with the same contract). */
#include <drm/gpu_scheduler.h>

const struct drm_sched_backend_ops npu_probe_ops;
const struct drm_sched_backend_ops npu_probe_ops = { .prepare_job = NULL };
