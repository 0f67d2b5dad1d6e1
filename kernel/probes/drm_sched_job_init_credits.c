// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_SCHED_JOB_INIT_CREDITS: drm_sched_job_init() takes the job's
 * credits (6.8). */
#include <drm/gpu_scheduler.h>

int npu_probe(struct drm_sched_job *j, struct drm_sched_entity *e);
int npu_probe(struct drm_sched_job *j, struct drm_sched_entity *e)
{
	return drm_sched_job_init(j, e, 1, NULL);
}
