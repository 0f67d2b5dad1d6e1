// SPDX-License-Identifier: MIT
/*
 * The io_uring path's progress thread: gathered work reaches the device
 * even when the application makes no further call (submit.c has the
 * ring; stream.c gathers).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "internal.h"
#include "ring.h"

/*
 * A stream gathers tasks only while it has a batch in flight (see
 * stream.c). On io_uring that batch's CQE says when the device runs dry;
 * the progress thread is there so that gathered tasks are submitted then
 * even if the application makes no further call: it sleeps until some
 * stream gathers, reaps completions (as a leader or follower, like any
 * waiting thread) until a gathering stream has nothing in flight, and
 * submits what that stream gathered.
 */
static npurt_stream *gathered_and_dry(npurt_device *dev)
{
	for (npurt_stream *s = dev->streams; s; s = s->next)
		if ((s->gathering || (s->broken && !s->failed)) && !s->outstanding)
			return s;
	return NULL;
}

static bool exception_due(npurt_device *dev)
{
	for (npurt_stream *s = dev->streams; dev->exc_fn && s; s = s->next)
		if (s->exc_pending)
			return true;
	return false;
}

static bool progress_due(void *arg)
{
	npurt_device *dev = arg;

	return dev->ring->progress_stop || gathered_and_dry(dev) || exception_due(dev);
}

static bool any_gathering(npurt_device *dev)
{
	for (npurt_stream *s = dev->streams; s; s = s->next)
		if (s->gathering)
			return true;
	return false;
}

static void *progress_main(void *arg)
{
	npurt_device *dev = arg;
	struct npurt_ring *r = dev->ring;

	pthread_mutex_lock(&dev->lock);
	while (!r->progress_stop) {
		npurt_stream *s;

		/* With a callback it watches for failures whether or not streams gather. */
		if (!any_gathering(dev) && !dev->exc_fn) {
			pthread_cond_wait(&r->progress_cond, &dev->lock);
			continue;
		}
		npurt_reap_until(dev, progress_due, dev);
		if (exception_due(dev)) {
			pthread_mutex_unlock(&dev->lock);
			npurt_exceptions_deliver(dev, NULL);
			pthread_mutex_lock(&dev->lock);
		}
		s = gathered_and_dry(dev);
		if (!s)
			continue;
		/* The stream may be destroyed meanwhile: its record stays. */
		atomic_fetch_add(&s->refs, 1);
		pthread_mutex_unlock(&dev->lock);
		npurt_stream_flush(s, "libnpurt (progress thread)");
		npurt_stream_put(s);
		pthread_mutex_lock(&dev->lock);
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

void npurt_progress_stop(npurt_device *dev)
{
	struct npurt_ring *r = dev->ring;
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&dev->lock);
	if (!r->progress_started) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	r->progress_stop = true;
	pthread_cond_broadcast(&r->progress_cond);
	pthread_cond_broadcast(&r->cq_cond);
	pthread_mutex_unlock(&dev->lock);
	/* It may be the one asleep in io_uring_wait_cqe(): a NOP wakes it. */
	pthread_mutex_lock(&r->sq_lock);
	while (!(sqe = io_uring_get_sqe(&r->ring)))
		io_uring_submit(&r->ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 0;
	io_uring_submit(&r->ring);
	pthread_mutex_unlock(&r->sq_lock);
	pthread_join(r->progress, NULL);
}

/* Under dev->lock: the progress thread runs, and looks again at what is due. */
static void progress_kick(npurt_device *dev)
{
	struct npurt_ring *r = dev->ring;

	if (!r->progress_started && !pthread_create(&r->progress, NULL, progress_main, dev))
		r->progress_started = true;
	pthread_cond_signal(&r->progress_cond);
}

void npurt_path_gathering(npurt_stream *s, bool gathering)
{
	npurt_device *dev = s->dev;

	pthread_mutex_lock(&dev->lock);
	s->gathering = gathering;
	if (gathering)
		progress_kick(dev);
	pthread_mutex_unlock(&dev->lock);
}

void npurt_path_watch(npurt_device *dev)
{
	if (dev->path == NPURT_SUBMIT_IO_URING)
		progress_kick(dev);
}

