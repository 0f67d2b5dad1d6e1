// SPDX-License-Identifier: MIT
/*
 * Streams: a hardware queue each, taking work through npurt_stream_push()
 * (events and notifies are in event.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "profile.h"

/*
 * Gathering. A stream's operations go to the device in batches: an
 * operation issued while the stream has a batch in flight is held back
 * and goes with the ones after it in one SUBMIT, as soon as the stream
 * has nothing in flight (the device would otherwise run dry), when
 * NPURT_BATCH_MAX tasks are held, or when the stream is flushed (a
 * synchronize, a query, an event record, a wait for one of its batches).
 * One operation then costs a copy into the stream instead of a system
 * call, and the device is never left idle with work held back: on
 * io_uring the progress thread (submit.c) submits for a stream whose
 * batch completed while nobody called. The ioctl path has no such thread,
 * so there every operation is submitted at once.
 *
 * A held operation's batch number is known: the next one the stream
 * submits (issued + 1).
 */
static npurt_status flush_sync_locked(npurt_stream *s, uint32_t in, uint32_t out,
				      const char *who)
{
	uint32_t n = s->npending;
	struct npurt_batch *b;
	npurt_status st;

	if (!n)
		return NPURT_OK;
	/* Kept until it completes: see struct npurt_batch. */
	b = malloc(sizeof(*b) + n * (sizeof(b->tasks[0]) + sizeof(b->ops[0])));
	if (b) {
		b->count = n;
		b->in = in;
		b->out = out;
		b->ops = (struct npurt_op_ref *)&b->tasks[n];
		memcpy(b->tasks, s->pending, n * sizeof(b->tasks[0]));
		memcpy(b->ops, s->pending_ops, n * sizeof(b->ops[0]));
		st = npurt_stream_recover_locked(s, who);
		if (!st)
			st = npurt_path_submit(s, b, who);
		/* A CONTINUE stream's queue may have failed unseen: the SUBMIT says so. */
		if (st == NPURT_ERR_DEVICE && s->flags & NPURT_STREAM_CONTINUE) {
			npurt_path_refused(s, EIO);
			if (!npurt_stream_recover_locked(s, who))
				st = npurt_path_submit(s, b, who);
		}
		if (st)
			free(b);
	} else {
		st = npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	s->npending = 0;
	/* Only plock holders write it: no device lock to read it here. */
	if (s->gathering)
		npurt_path_gathering(s, false);
	/* The operations were accepted: whoever waits next hears of it. */
	if (st)
		npurt_path_refused(s, st == NPURT_ERR_NO_MEMORY ? ENOMEM : EIO);
	return st;
}

static npurt_status flush_locked(npurt_stream *s, const char *who)
{
	return flush_sync_locked(s, 0, 0, who);
}

npurt_status npurt_stream_push(npurt_stream *s, const struct drm_npu_task *tasks,
			       uint32_t count, uint64_t *seq, const char *who)
{
	return npurt_stream_push_op(s, tasks, count, seq, who, NULL);
}

npurt_status npurt_stream_push_op(npurt_stream *s, const struct drm_npu_task *tasks,
				  uint32_t count, uint64_t *seq, const char *who,
				  const char *const *what)
{
	npurt_status st = NPURT_OK;
	uint64_t ticket;

	if (count > NPURT_BATCH_MAX)
		return npurt_set_error(NPURT_ERR_INTERNAL, "%s: %u tasks in one operation", who,
				       count);
	/* Whatever did not ask npurt_capturing() first is not for a model. */
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "a model cannot replay it");
	if (npurt_path_failed(s))
		return npurt_set_error(NPURT_ERR_DEVICE,
				       "%s: the stream failed earlier (npurt_stream_synchronize says how)",
				       who);
	pthread_mutex_lock(&s->plock);
	if (s->npending + count > NPURT_BATCH_MAX)
		st = flush_locked(s, who);
	if (!st) {
		memcpy(&s->pending[s->npending], tasks, count * sizeof(*tasks));
		s->ops++;
		for (uint32_t i = 0; i < count; i++)
			s->pending_ops[s->npending + i] =
				(struct npurt_op_ref){ s->ops, who, what ? what[i] : NULL };
		s->npending += count;
		ticket = s->issued + 1;
		if (s->npending == NPURT_BATCH_MAX || npurt_path_dry(s))
			st = flush_locked(s, who);
		else if (s->npending == count)
			npurt_path_gathering(s, true);
	}
	pthread_mutex_unlock(&s->plock);
	if (!st && seq)
		*seq = ticket;
	return st;
}

npurt_status npurt_stream_flush(npurt_stream *s, const char *who)
{
	npurt_status st;

	pthread_mutex_lock(&s->plock);
	st = flush_locked(s, who);
	pthread_mutex_unlock(&s->plock);
	return st;
}

npurt_status npurt_stream_wait(npurt_stream *s, uint64_t seq, const char *who)
{
	npurt_status st = NPURT_OK;

	/* Only a batch still held back needs submitting first. */
	pthread_mutex_lock(&s->plock);
	if (seq > s->issued)
		st = flush_locked(s, who);
	pthread_mutex_unlock(&s->plock);
	return st ? st : npurt_path_wait(s, seq, who);
}

npurt_status npurt_stream_submit_sync(npurt_stream *s, uint32_t in, uint32_t out,
				      const char *who)
{
	static const struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	npurt_status st = NPURT_OK;

	if (npurt_path_failed(s))
		return npurt_set_error(NPURT_ERR_DEVICE,
				       "%s: the stream failed earlier (npurt_stream_synchronize says how)",
				       who);
	pthread_mutex_lock(&s->plock);
	if (in)
		st = flush_locked(s, who);
	if (!st && !s->npending)
		s->pending[s->npending++] = nop;
	if (!st)
		st = flush_sync_locked(s, in, out, who);
	pthread_mutex_unlock(&s->plock);
	return st;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(npurt_stream *const *)a, y = (uintptr_t)*(npurt_stream *const *)b;

	return x < y ? -1 : x > y;
}

npurt_status npurt_streams_run(npurt_stream **s, struct npurt_batch **b, uint32_t n,
			       uint64_t *seqs, const char *who)
{
	npurt_stream *locked[DRM_NPU_SUBMIT_MULTI_MAX];
	npurt_status st = NPURT_OK;

	if (!n || n > DRM_NPU_SUBMIT_MULTI_MAX)
		return npurt_set_error(NPURT_ERR_INTERNAL, "%s: %u streams in one run", who, n);
	/* Every stream's thread's lock, in one order: no two runs deadlock. */
	memcpy(locked, s, n * sizeof(*s));
	qsort(locked, n, sizeof(*locked), by_address);
	for (uint32_t i = 0; i < n; i++)
		pthread_mutex_lock(&locked[i]->plock);
	/* What each gathered goes first: the run comes after it. */
	for (uint32_t i = 0; i < n && !st; i++)
		st = flush_locked(locked[i], who);
	for (uint32_t i = 0; i < n && !st; i++)
		st = npurt_stream_recover_locked(locked[i], who);
	if (!st)
		st = npurt_path_submit_multi(s, b, n, seqs, who);
	for (uint32_t i = n; i-- > 0;)
		pthread_mutex_unlock(&locked[i]->plock);
	return st;
}

uint64_t npurt_stream_last(npurt_stream *s)
{
	uint64_t seq;

	pthread_mutex_lock(&s->dev->lock);
	seq = s->issued + (s->gathering ? 1 : 0);
	pthread_mutex_unlock(&s->dev->lock);
	return seq;
}

static npurt_status stream_submit1(npurt_stream *s, struct drm_npu_task t, const char *who)
{
	return npurt_stream_push(s, &t, 1, NULL, who);
}

static void stream_destroy(npurt_stream *s);

npurt_status npurt_stream_create_desc(npurt_device *dev, const npurt_stream_desc *desc,
				      npurt_stream **out)
{
	static const char who[] = "npurt_stream_create";
	struct drm_npu_queue_create create = { 0 };
	npurt_stream *s;
	uint32_t depth;
	int err;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !desc || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (desc->size < sizeof(*desc))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->size %u, want %zu", who,
				       desc->size, sizeof(*desc));
	if ((unsigned int)desc->priority > NPURT_PRIORITY_REALTIME)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: priority %d is not one of "
				       "NPURT_PRIORITY_LOW/NORMAL/HIGH/REALTIME", who,
				       (int)desc->priority);
	depth = desc->depth ? desc->depth : DRM_NPU_QUEUE_DEPTH_DEFAULT;
	if (desc->flags & ~NPURT_STREAM_CONTINUE || depth < DRM_NPU_QUEUE_DEPTH_MIN ||
	    depth > DRM_NPU_QUEUE_DEPTH_MAX || depth & (depth - 1))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s", who,
				       desc->flags & ~NPURT_STREAM_CONTINUE ?
				       "unknown flags" :
				       "depth must be 0 or a power of two from 512 to 65536");
	s = calloc(1, sizeof(*s));
	if (!s)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	create.priority = (uint32_t)desc->priority;
	create.depth = depth;
	create.timeout_ms = desc->time_limit_ms;
	s->dev = dev;
	s->word = npurt_word_take(dev);
	npurt_word_ask(s, &create);
	npurt_prof_queue(dev, &create);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_QUEUE_CREATE, &create);
	if (err) {
		npurt_word_give(dev, s->word);
		free(s);
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: QUEUE_CREATE: %s%s",
				       who, dev->node, strerror(err),
				       err == EBUSY ? " (no hardware queue free)" :
				       err == EPERM ? " (HIGH and REALTIME need CAP_SYS_NICE)" :
				       err == EINVAL ? " (time limit above the driver's maximum?)" : "");
	}
	npurt_prof_queue_made(dev, create.queue);
	s->queue = create.queue;
	s->depth = depth;
	npurt_log(NPURT_LOG_INFO, "stream %p: queue %u, priority %u, depth %u, completion word %d",
		  (void *)s, s->queue, create.priority, depth, s->word);
	s->flags = desc->flags;
	s->priority = create.priority;
	s->time_limit_ms = create.timeout_ms;
	atomic_init(&s->refs, 1);
	pthread_mutex_init(&s->plock, NULL);
	pthread_mutex_init(&s->arena_lock, NULL);
	/* memory.c looks at every live stream when memory is freed. */
	pthread_mutex_lock(&dev->lock);
	s->next = dev->streams;
	if (dev->streams)
		dev->streams->prev = s;
	dev->streams = s;
	pthread_mutex_unlock(&dev->lock);
	if (npurt_handle_add(s, NPURT_KIND_STREAM, dev, who)) {
		stream_destroy(s);
		return NPURT_ERR_NO_MEMORY;
	}
	*out = s;
	return NPURT_OK;
}

npurt_status npurt_stream_create(npurt_device *dev, npurt_stream_priority priority,
				 npurt_stream **out)
{
	npurt_stream_desc d = { .size = sizeof(d), .priority = priority };

	return npurt_stream_create_desc(dev, &d, out);
}

void npurt_stream_put(npurt_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1) {
		npurt_batches_free(s->batches);
		pthread_mutex_destroy(&s->plock);
		pthread_mutex_destroy(&s->arena_lock);
		free(s);
	}
}

static void stream_destroy(npurt_stream *s)
{
	struct drm_npu_queue_destroy destroy = { 0 };

	npurt_capture_stream_gone(s);
	/* Its callbacks may still add work to it. */
	npurt_callbacks_drain(s);
	/* And nothing else may from now on. */
	npurt_handle_drop(s);
	/* Failed or not, nothing of it may be in flight when it goes. */
	npurt_stream_flush(s, "npurt_stream_destroy");
	npurt_stream_wait(s, s->issued, "npurt_stream_destroy");
	npurt_path_drain(s);
	npurt_callbacks_release(s);
	destroy.queue = s->queue;
	npurt_log(NPURT_LOG_INFO, "stream %p: destroyed, queue %u", (void *)s, s->queue);
	npurt_ioctl(s->dev, DRM_IOCTL_NPU_QUEUE_DESTROY, &destroy);
	/* The queue is gone, and nothing writes the word: the next one's. */
	npurt_word_give(s->dev, s->word);
	npurt_mem_free(s->arena);
	s->arena = NULL;
	npurt_staging_free(s);
	pthread_mutex_lock(&s->dev->lock);
	s->destroyed = true;
	if (s->prev)
		s->prev->next = s->next;
	else
		s->dev->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&s->dev->lock);
	npurt_stream_put(s);
}

void npurt_stream_destroy(npurt_stream *s)
{
	/* NULL is a no-op; a stream destroyed already is said, and not read. */
	if (!s || npurt_handle_check(s, NPURT_KIND_STREAM, "npurt_stream_destroy"))
		return;
	/* The default stream may be in use by any part of the program. */
	if (!s->is_default)
		stream_destroy(s);
}

npurt_status npurt_device_default_stream(npurt_device *dev, npurt_stream **out)
{
	npurt_status st = NPURT_OK;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_device_default_stream"))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_device_default_stream: NULL argument");
	pthread_mutex_lock(&dev->default_lock);
	if (!dev->default_stream) {
		st = npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &dev->default_stream);
		if (!st)
			dev->default_stream->is_default = true;
	}
	if (!st)
		*out = dev->default_stream;
	pthread_mutex_unlock(&dev->default_lock);
	return st;
}

void npurt_streams_close(npurt_device *dev)
{
	/* Each goes as npurt_stream_destroy() would take it: its work done. */
	for (;;) {
		npurt_stream *s;

		pthread_mutex_lock(&dev->lock);
		s = dev->streams;
		pthread_mutex_unlock(&dev->lock);
		if (!s)
			break;
		stream_destroy(s);
	}
	dev->default_stream = NULL;
}

npurt_status npurt_stream_synchronize(npurt_stream *s)
{
	return npurt_stream_synchronize_timeout(s, -1);
}

static int64_t deadline_after_ms(int timeout_ms)
{
	struct timespec ts;

	if (timeout_ms < 0)
		return DRM_NPU_DEADLINE_NONE;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (int64_t)timeout_ms * 1000000;
}

/*
 * A CONTINUE stream's failures are returned once, after the work issued
 * behind them; the callback has run before any failure is returned.
 */
static npurt_status report_once(npurt_stream *s, npurt_status st, const char *who)
{
	if (!st) {
		pthread_mutex_lock(&s->dev->lock);
		if (s->unreported) {
			s->unreported = false;
			st = npurt_stream_failure(s, who);
		}
		pthread_mutex_unlock(&s->dev->lock);
	}
	if (st)
		npurt_exceptions_deliver(s->dev, s);
	return st;
}

npurt_status npurt_stream_synchronize_timeout(npurt_stream *s, int timeout_ms)
{
	static const char who[] = "npurt_stream_synchronize";
	npurt_status st;
	uint64_t seq;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "captured work runs when the model does");
	pthread_mutex_lock(&s->plock);
	st = flush_locked(s, who);
	seq = s->issued;
	pthread_mutex_unlock(&s->plock);
	if (st)
		return st;
	if (!timeout_ms) {
		st = npurt_path_query(s, seq, who);
		if (st == NPURT_ERR_NOT_READY)
			return npurt_set_error(NPURT_ERR_TIMEOUT, "%s: not done (timeout 0)", who);
	} else {
		int64_t t0 = npurt_prof_now(s->dev);

		st = npurt_path_wait_until(s, seq, deadline_after_ms(timeout_ms), who);
		npurt_prof_span(s->dev, who, t0);
	}
	return report_once(s, st, who);
}

npurt_status npurt_stream_abort(npurt_stream *s)
{
	static const char who[] = "npurt_stream_abort";
	struct drm_npu_queue_abort abort_args = { 0 };
	int err;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	/* What it gathered goes too: submitted, then stopped with the rest. */
	npurt_stream_flush(s, who);
	pthread_mutex_lock(&s->dev->lock);
	abort_args.queue = s->queue;
	/* A CONTINUE stream's failure is not recovered from after an abort. */
	if (s->broken)
		s->failed = true;
	pthread_mutex_unlock(&s->dev->lock);
	err = npurt_ioctl(s->dev, DRM_IOCTL_NPU_QUEUE_ABORT, &abort_args);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: the driver could not stop "
				       "the stream's work: %s (QUEUE_ABORT of queue %u)", who,
				       strerror(err), s->queue);
	return NPURT_OK;
}

npurt_stream **npurt_streams_get(npurt_device *dev, size_t *n)
{
	npurt_stream **all;
	size_t cap = 0;

	pthread_mutex_lock(&dev->lock);
	for (npurt_stream *s = dev->streams; s; s = s->next)
		cap++;
	all = calloc(cap + 1, sizeof(*all));
	*n = 0;
	for (npurt_stream *s = dev->streams; all && s; s = s->next) {
		atomic_fetch_add(&s->refs, 1);
		all[(*n)++] = s;
	}
	pthread_mutex_unlock(&dev->lock);
	return all;
}

void npurt_streams_put(npurt_stream **all, size_t n)
{
	for (size_t i = 0; i < n; i++)
		npurt_stream_put(all[i]);
	free(all);
}

npurt_status npurt_device_synchronize(npurt_device *dev)
{
	static const char who[] = "npurt_device_synchronize";
	npurt_status st = NPURT_OK;
	npurt_stream **all;
	size_t n;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL device", who);
	if (npurt_capture_any(dev))
		return npurt_set_error(NPURT_ERR_CAPTURE, "%s: not allowed while a stream of the "
				       "device captures", who);
	/* A snapshot with references: streams may come and go meanwhile. */
	all = npurt_streams_get(dev, &n);
	if (!all)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	for (size_t i = 0; i < n; i++) {
		npurt_status one = npurt_stream_synchronize_timeout(all[i], -1);

		if (one && !st)
			st = npurt_set_error(one, "%s: %s", who, npurt_last_error());
	}
	npurt_streams_put(all, n);
	return st;
}

npurt_status npurt_stream_query(npurt_stream *s)
{
	npurt_status st;
	uint64_t seq;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, "npurt_stream_query"))
		return NPURT_ERR_INVALID;
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, "npurt_stream_query",
					    "captured work runs when the model does");
	pthread_mutex_lock(&s->plock);
	st = flush_locked(s, "npurt_stream_query");
	seq = s->issued;
	pthread_mutex_unlock(&s->plock);
	return report_once(s, st ? st : npurt_path_query(s, seq, "npurt_stream_query"),
			   "npurt_stream_query");
}

npurt_status npurt_memset_async(npurt_stream *s, uint64_t dst, uint32_t pattern, size_t size)
{
	static const char who[] = "npurt_memset_async";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_FILL, .args = { dst, size, pattern } };

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!size || (dst | size) & 3)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s(%#llx, %zu bytes): address and size must be non-zero multiples of 4",
				       who, (unsigned long long)dst, size);
	if (npurt_capturing(s))
		return npurt_capture_fill(s, dst, pattern, size, who);
	return stream_submit1(s, t, who);
}

npurt_status npurt_memcpy_async(npurt_stream *s, uint64_t dst, uint64_t src, size_t size)
{
	static const char who[] = "npurt_memcpy_async";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_COPY, .args = { dst, src, size } };

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: size is 0", who);
	if (npurt_capturing(s))
		return npurt_capture_copy(s, dst, size, src, size, size, 1, who);
	return stream_submit1(s, t, who);
}
