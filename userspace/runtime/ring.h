/* SPDX-License-Identifier: MIT */
/* Internal: the io_uring path's ring, shared by submit.c and progress.c. */
#ifndef NPURT_RING_H
#define NPURT_RING_H

#include <liburing.h>

#include "internal.h"

struct npurt_ring {
	struct io_uring ring;
	pthread_mutex_t sq_lock;
	pthread_cond_t cq_cond;		/* with dev->lock */
	bool reaping;			/* a thread reaps for all: dev->lock */
	atomic_uint inflight;		/* commands whose CQE is not reaped */
	/* The progress thread (see npurt_path_gathering), under dev->lock. */
	pthread_t progress;
	bool progress_started, progress_stop;
	pthread_cond_t progress_cond;	/* a stream started gathering, or stop */
};

/*
 * Reap completions until done(arg) holds, or `deadline_ns` passes
 * (CLOCK_MONOTONIC; DRM_NPU_DEADLINE_NONE: none): as the thread reaping
 * for all, or asleep while another one does. Called and returns with
 * dev->lock held; returns whether done(arg) holds.
 */
bool npurt_reap_until_deadline(npurt_device *dev, bool (*done)(void *), void *arg,
			       int64_t deadline_ns);
void npurt_reap_until(npurt_device *dev, bool (*done)(void *), void *arg);

/* progress.c: stop and join the progress thread, if it runs. */
void npurt_progress_stop(npurt_device *dev);

#endif /* NPURT_RING_H */
