// SPDX-License-Identifier: MIT
/*
 * Host callbacks on streams.
 *
 * The device holds the stream: a callback is a NOTIFY_WAIT task on a
 * notify of the stream's own, so the stream's later work waits on the
 * device, and nothing the host issues ever waits for it. The work before
 * the callback is made a batch of its own first (the stream's gathered
 * tasks are submitted), so the host learns that it completed from the
 * batch's sequence number. A runtime thread waits for that batch, calls
 * the function, then lets the stream go on by recording the notify from
 * the context's default queue (queue 0, which streams never use: the
 * host cannot record a notify itself). A record made before its wait is
 * kept, so the two may meet in either order.
 *
 * Threads. A stream's callbacks run one at a time, in order, on whichever
 * runtime thread took the stream; a thread keeps a stream while it has
 * callbacks queued. Streams with callbacks due at the same time are served
 * by as many threads: a callback waiting for its stream must not hold up
 * another stream's, which may be what its stream waits for. Threads live
 * until the device is closed, never less: an io_uring command lives no
 * longer than the thread that submitted it, and callbacks issue work.
 *
 * A stream's notify serves all its callbacks: a record only ever meets
 * its own callback's wait, or none once the stream has failed (a failed
 * queue runs no more tasks), and then it no longer matters.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"

struct cb_item {
	struct cb_item *next;
	npurt_callback_fn fn;
	void *user;
	uint64_t before;		/* the stream's last batch before it */
};

/* Under the pool's lock. */
struct npurt_cb_stream {
	uint32_t notify;		/* the device notify its waits name */
	struct cb_item *head, *tail;
	uint32_t pending;		/* queued or running */
	bool ready;			/* on the pool's ready list */
	bool served;			/* a thread has it */
	struct npurt_cb_stream *next_ready;
	npurt_stream *stream;
};

struct cb_thread {
	struct cb_thread *next;
	pthread_t id;
};

struct npurt_cb_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a stream became ready, or stop */
	pthread_cond_t done;		/* a callback returned */
	struct npurt_cb_stream *ready, *ready_tail;
	uint32_t nready, idle;
	bool stop;
	struct cb_thread *threads;
};

/* Free the stream's notify: batches naming it keep it alive in the driver. */
static void notify_drop(npurt_device *dev, uint32_t id)
{
	struct drm_npu_sync_destroy destroy = { .id = id };

	npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_DESTROY, &destroy);
}

/* A one-task batch on queue 0: 0 or the errno. */
static int default_queue_submit(npurt_device *dev, struct drm_npu_task t)
{
	struct drm_npu_submit args = { .tasks = (uintptr_t)&t, .count = 1, .queue = 0 };

	return npurt_ioctl(dev, DRM_IOCTL_NPU_SUBMIT, &args);
}

/* The callback returned: the stream goes on. */
static void release(npurt_stream *s, uint32_t notify)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { notify } };
	struct drm_npu_queue_abort abort_args = { .queue = s->queue };

	/* Rather a failed stream than one blocked for good. */
	if (default_queue_submit(s->dev, t))
		npurt_ioctl(s->dev, DRM_IOCTL_NPU_QUEUE_ABORT, &abort_args);
}

static void serve(struct npurt_cb_pool *pool, struct npurt_cb_stream *cs)
{
	static const char who[] = "libnpurt (callback thread)";
	npurt_stream *s = cs->stream;

	while (cs->head) {
		struct cb_item *it = cs->head;
		npurt_status st = NPURT_OK;

		cs->head = it->next;
		if (!cs->head)
			cs->tail = NULL;
		pthread_mutex_unlock(&pool->lock);
		/* The work before it, done or failed: the callback is told which. */
		if (it->before)
			st = npurt_path_wait(s, it->before, who);
		it->fn(s, st, it->user);
		release(s, cs->notify);
		free(it);
		pthread_mutex_lock(&pool->lock);
		cs->pending--;
		pthread_cond_broadcast(&pool->done);
	}
	cs->served = false;
	pthread_cond_broadcast(&pool->done);
}

static void *cb_main(void *arg)
{
	struct npurt_cb_pool *pool = arg;

	/* Counted idle by its maker, so that it is before it runs. */
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct npurt_cb_stream *cs;

		while (!pool->ready && !pool->stop)
			pthread_cond_wait(&pool->work, &pool->lock);
		cs = pool->ready;
		if (!cs)
			break;
		pool->idle--;
		pool->ready = cs->next_ready;
		if (!pool->ready)
			pool->ready_tail = NULL;
		pool->nready--;
		cs->ready = false;
		cs->served = true;
		serve(pool, cs);
		pool->idle++;
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Under pool->lock: a thread for every ready stream. */
static npurt_status enough_threads(struct npurt_cb_pool *pool, uint32_t want, const char *who)
{
	while (pool->idle < want) {
		struct cb_thread *t = calloc(1, sizeof(*t));
		int err = t ? pthread_create(&t->id, NULL, cb_main, pool) : ENOMEM;

		if (err) {
			free(t);
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: no callback thread: %s",
					       who, strerror(err));
		}
		t->next = pool->threads;
		pool->threads = t;
		pool->idle++;
		want--;
	}
	return NPURT_OK;
}

/* The device's pool, made on first use. */
static struct npurt_cb_pool *pool_get(npurt_device *dev, const char *who)
{
	struct npurt_cb_pool *pool;

	pthread_mutex_lock(&dev->lock);
	pool = dev->callbacks;
	if (!pool) {
		pool = calloc(1, sizeof(*pool));
		if (pool) {
			pthread_mutex_init(&pool->lock, NULL);
			pthread_cond_init(&pool->work, NULL);
			pthread_cond_init(&pool->done, NULL);
			dev->callbacks = pool;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	if (!pool)
		npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	return pool;
}

/*
 * Under pool->lock: the stream's state, made on its first callback with
 * its notify, and the default queue made ready for the records (so that a
 * callback cannot find it missing: no hardware queue free).
 */
static npurt_status stream_state(npurt_stream *s, struct npurt_cb_stream **out, const char *who)
{
	struct drm_npu_sync_create create = { .kind = DRM_NPU_SYNC_NOTIFY };
	struct npurt_cb_stream *cs = s->callbacks;
	int err;

	if (cs) {
		*out = cs;
		return NPURT_OK;
	}
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	err = npurt_ioctl(s->dev, DRM_IOCTL_NPU_SYNC_CREATE, &create);
	if (err) {
		free(cs);
		return npurt_set_error(npurt_status_from_errno(err), "%s: SYNC_CREATE: %s", who,
				       strerror(err));
	}
	err = default_queue_submit(s->dev, (struct drm_npu_task){ .type = DRM_NPU_TASK_NOP });
	if (err) {
		notify_drop(s->dev, create.id);
		free(cs);
		return npurt_set_error(npurt_status_from_errno(err),
				       "%s: the context's default queue, which lets streams go on "
				       "after callbacks: SUBMIT: %s%s", who, strerror(err),
				       err == EBUSY ? " (no hardware queue free)" : "");
	}
	cs->notify = create.id;
	cs->stream = s;
	s->callbacks = cs;
	*out = cs;
	return NPURT_OK;
}

npurt_status npurt_stream_add_callback(npurt_stream *s, npurt_callback_fn fn, void *user)
{
	static const char who[] = "npurt_stream_add_callback";
	struct drm_npu_task wait = { .type = DRM_NPU_TASK_NOTIFY_WAIT };
	struct npurt_cb_pool *pool;
	struct npurt_cb_stream *cs = NULL;
	struct cb_item *it;
	npurt_status st;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!s || !fn)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL %s", who, s ? "function" : "stream");
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "a callback runs on the host, not in a model");
	if (npurt_path_failed(s))
		return npurt_set_error(NPURT_ERR_DEVICE,
				       "%s: the stream failed earlier (npurt_stream_synchronize says how)",
				       who);
	pool = pool_get(s->dev, who);
	if (!pool)
		return NPURT_ERR_NO_MEMORY;
	it = calloc(1, sizeof(*it));
	if (!it)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	it->fn = fn;
	it->user = user;
	pthread_mutex_lock(&pool->lock);
	st = stream_state(s, &cs, who);
	/* A thread for it now: past the push the callback must run. */
	if (!st && !cs->served && !cs->ready)
		st = enough_threads(pool, pool->nready + 1, who);
	pthread_mutex_unlock(&pool->lock);
	if (!st)
		st = npurt_stream_flush(s, who);
	if (!st) {
		pthread_mutex_lock(&s->dev->lock);
		it->before = s->issued;
		pthread_mutex_unlock(&s->dev->lock);
		wait.args[0] = cs->notify;
		st = npurt_stream_push(s, &wait, 1, NULL, who);
	}
	if (st) {
		free(it);
		return st;
	}

	pthread_mutex_lock(&pool->lock);
	if (cs->tail)
		cs->tail->next = it;
	else
		cs->head = it;
	cs->tail = it;
	cs->pending++;
	if (!cs->served && !cs->ready) {
		cs->ready = true;
		cs->next_ready = NULL;
		if (pool->ready_tail)
			pool->ready_tail->next_ready = cs;
		else
			pool->ready = cs;
		pool->ready_tail = cs;
		pool->nready++;
		/* Racing adds may have used the thread made above: best effort. */
		enough_threads(pool, pool->nready, who);
		pthread_cond_signal(&pool->work);
	}
	pthread_mutex_unlock(&pool->lock);
	return NPURT_OK;
}

void npurt_callbacks_drain(npurt_stream *s)
{
	struct npurt_cb_pool *pool = s->dev->callbacks;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	while (s->callbacks && (s->callbacks->pending || s->callbacks->served))
		pthread_cond_wait(&pool->done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

void npurt_callbacks_release(npurt_stream *s)
{
	struct npurt_cb_stream *cs = s->callbacks;

	if (!cs)
		return;
	s->callbacks = NULL;
	notify_drop(s->dev, cs->notify);
	free(cs);
}

void npurt_callbacks_close(npurt_device *dev)
{
	struct npurt_cb_pool *pool = dev->callbacks;
	struct cb_thread *t, *next;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (t = pool->threads; t; t = next) {
		next = t->next;
		pthread_join(t->id, NULL);
		free(t);
	}
	pthread_cond_destroy(&pool->work);
	pthread_cond_destroy(&pool->done);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
	dev->callbacks = NULL;
}
