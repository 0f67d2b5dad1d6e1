// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_SCHED_INIT_ARGS_SUBMIT_WQ: the argument struct also names the
 * submission workqueue and the number of run queues (mainline 6.15). */
#include <drm/gpu_scheduler.h>

const struct drm_sched_init_args npu_probe_args;
const struct drm_sched_init_args npu_probe_args = { .submit_wq = NULL, .num_rqs = 1 };
