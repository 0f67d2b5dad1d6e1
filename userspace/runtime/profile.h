/* SPDX-License-Identifier: MIT */
/*
 * The profiler's hooks (profile.c). Each costs one load of dev->prof when
 * the process never profiles.
 */
#ifndef NPURT_PROFILE_H
#define NPURT_PROFILE_H

#include <stdint.h>

#include "internal.h"

/* At npurt_device_open: NPURT_PROFILE=FILE starts the profiler. */
npurt_status npurt_prof_open(npurt_device *dev, const char *who);
/* At npurt_device_close: write NPURT_PROFILE's file, free everything. */
void npurt_prof_close(npurt_device *dev);

/* A new stream's QUEUE_CREATE: the device's ring, while there is one. */
void npurt_prof_queue(npurt_device *dev, struct drm_npu_queue_create *create);

/*
 * QUEUE_CREATE made queue `queue`: batches the id numbered before are
 * forgotten (the new queue numbers its own from 1).
 */
void npurt_prof_queue_made(npurt_device *dev, uint32_t queue);

/*
 * Under dev->lock: stream `s` numbered batch `b` (its seq is set), or
 * issued it again on a new queue after a recovery.
 */
void npurt_prof_batch(npurt_stream *s, const struct npurt_batch *b);

/*
 * A host span: a runtime call that began at `t0_ns` (npurt_prof_now(),
 * 0 when not recording) and ends now. `name` is a string constant.
 */
int64_t npurt_prof_now(npurt_device *dev);
void npurt_prof_span(npurt_device *dev, const char *name, int64_t t0_ns);

/*
 * The model layer names the tasks of task list `handle` (TASKLIST_CREATE's)
 * for the trace: names[i] is list task i's, copied. Nothing while the
 * device is not recording.
 */
void npurt_prof_name_list(npurt_device *dev, uint32_t handle, uint32_t count,
			  const char *const *names);

#endif /* NPURT_PROFILE_H */
