// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_GPU_SCHED_STAT_NO_HANG: timedout_job can say "not hung, keep
 * going" and the scheduler keeps the job (6.17); before, the driver puts
 * the job back on the pending list itself. */
#include <drm/gpu_scheduler.h>

const enum drm_gpu_sched_stat npu_probe_stat;
const enum drm_gpu_sched_stat npu_probe_stat = DRM_GPU_SCHED_STAT_NO_HANG;
