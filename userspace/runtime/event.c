// SPDX-License-Identifier: MIT
/*
 * Events: the calls, over the device-event pool (event_pool.c, which says
 * how records, waits and their locks work) or, for interprocess events,
 * drm syncobjs (event_ipc.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "event.h"

#define RESETS_MAX	31		/* resets one record carries */
#define SLICE_NS	100000000ll	/* host waits look at the stream this often */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/*
 * The handle checks every call makes: NULL, destroyed, a stream (if
 * `stream`) of the same device.
 */
static npurt_status check_event(const npurt_event *ev, bool stream, const npurt_stream *s,
				const char *who)
{
	if (stream && npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (npurt_handle_check(ev, NPURT_KIND_EVENT, who))
		return NPURT_ERR_INVALID;
	if (s && ev->dev != s->dev)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: the event and the stream are of different devices", who);
	return NPURT_OK;
}

static npurt_status event_new(npurt_device *dev, uint32_t flags, uint32_t syncobj,
			      npurt_event **out, const char *who)
{
	npurt_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	if (npurt_handle_add(ev, NPURT_KIND_EVENT, dev, who)) {
		free(ev);
		return NPURT_ERR_NO_MEMORY;
	}
	ev->flags = flags;
	ev->dev = dev;
	ev->syncobj = syncobj;
	pthread_mutex_init(&ev->lock, NULL);
	pthread_mutex_lock(&dev->events->lock);
	ev->next = dev->events->live;
	if (ev->next)
		ev->next->prev = ev;
	dev->events->live = ev;
	pthread_mutex_unlock(&dev->events->lock);
	*out = ev;
	return NPURT_OK;
}

/* An interprocess event over `syncobj`, which it owns from now (even on failure). */
static npurt_status event_adopt(npurt_device *dev, uint32_t syncobj, npurt_event **out,
				const char *who)
{
	npurt_status st = event_new(dev, NPURT_EVENT_INTERPROCESS, syncobj, out, who);

	if (st)
		npurt_ipc_syncobj_destroy(dev, syncobj);
	return st;
}

npurt_status npurt_event_create_flags(npurt_device *dev, uint32_t flags, npurt_event **out)
{
	static const char who[] = "npurt_event_create_flags";
	uint32_t syncobj = 0;
	npurt_status st;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (flags & ~(NPURT_EVENT_TIMING | NPURT_EVENT_INTERPROCESS))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown flags %#x", who,
				       flags & ~(NPURT_EVENT_TIMING | NPURT_EVENT_INTERPROCESS));
	if ((flags & NPURT_EVENT_TIMING) && (flags & NPURT_EVENT_INTERPROCESS))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: interprocess events are not timed "
				       "(NPURT_EVENT_TIMING with NPURT_EVENT_INTERPROCESS)", who);
	/* No device event yet: the first record takes one from the pool. */
	if (!(flags & NPURT_EVENT_INTERPROCESS))
		return event_new(dev, flags, 0, out, who);
	st = npurt_ipc_syncobj_create(dev, &syncobj, who);
	return st ? st : event_adopt(dev, syncobj, out, who);
}

npurt_status npurt_event_create(npurt_device *dev, npurt_event **out)
{
	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_event_create"))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_event_create: NULL argument");
	return npurt_event_create_flags(dev, NPURT_EVENT_TIMING, out);
}

void npurt_event_destroy(npurt_event *ev)
{
	struct npurt_event_pool *pool;

	/* NULL is a no-op; an event destroyed already is said, and not read. */
	if (!ev || npurt_handle_take(ev, NPURT_KIND_EVENT, "npurt_event_destroy"))
		return;
	if (ev->syncobj)
		npurt_ipc_syncobj_destroy(ev->dev, ev->syncobj);
	pool = ev->dev->events;
	pthread_mutex_lock(&pool->lock);
	/* Work already issued may still name it; the pool resets it later. */
	if (ev->cur && ev->cur->state == ENTRY_CURRENT)
		ev->cur->state = ENTRY_RETIRED;
	if (ev->prev)
		ev->prev->next = ev->next;
	else
		pool->live = ev->next;
	if (ev->next)
		ev->next->prev = ev->prev;
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

npurt_status npurt_event_record(npurt_event *ev, npurt_stream *s)
{
	static const char who[] = "npurt_event_record";
	struct drm_npu_task tasks[RESETS_MAX + 1];
	struct entry *resets[RESETS_MAX], *e = NULL;
	struct npurt_event_pool *pool;
	uint32_t n = 0;
	uint64_t order, seq = 0;
	npurt_status st, fst;

	st = check_event(ev, true, s, who);
	if (st)
		return st;
	if (npurt_capturing(s))
		return npurt_capture_record(ev, s, who);
	if (ev->syncobj)
		return npurt_ipc_event_record(ev, s, who);
	pool = ev->dev->events;
	pthread_mutex_lock(&pool->push_lock);
	pthread_mutex_lock(&pool->lock);
	st = npurt_entry_take(ev->dev, &e, who);
	if (st) {
		pthread_mutex_unlock(&pool->lock);
		pthread_mutex_unlock(&pool->push_lock);
		return st;
	}
	/* Resets ride ahead of the record: seeing it then proves them run. */
	for (struct entry *x = pool->entries; x && n < RESETS_MAX; x = x->next) {
		if (!npurt_entry_resettable_on(x, s))
			continue;
		x->state = ENTRY_TAKEN;
		resets[n] = x;
		tasks[n++] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RESET,
						    .args = { x->id } };
	}
	tasks[n] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { e->id } };
	order = pool->order;
	pool->order += n + 1;
	pthread_mutex_unlock(&pool->lock);

	st = npurt_stream_push(s, tasks, n + 1, &seq, who);
	/*
	 * Submitted before push_lock goes: others wait for the record, and
	 * an entry the pool gives back to the driver must not be named by a
	 * task still held back in a stream (the driver keeps a device event
	 * only for submitted batches).
	 */
	fst = st ? NPURT_OK : npurt_stream_flush(s, who);
	pthread_mutex_unlock(&pool->push_lock);

	pthread_mutex_lock(&ev->lock);
	pthread_mutex_lock(&pool->lock);
	for (uint32_t i = 0; i < n; i++) {
		if (st) {
			resets[i]->state = ENTRY_RETIRED;
			continue;
		}
		npurt_entry_clear(resets[i]);
		resets[i]->state = ENTRY_RESETTING;
		npurt_pend_set(&resets[i]->reset, s, seq, order + i);
	}
	if (st) {
		e->state = ENTRY_FREE;
	} else {
		npurt_pend_set(&e->rec, s, seq, order + n);
		e->state = ENTRY_CURRENT;
		if (ev->cur && ev->cur->state == ENTRY_CURRENT)
			ev->cur->state = ENTRY_RETIRED;
		ev->cur = e;
		npurt_capture_event_recorded(ev);
	}
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&ev->lock);
	return st ? st : fst;
}

npurt_status npurt_stream_wait_event(npurt_stream *s, npurt_event *ev)
{
	static const char who[] = "npurt_stream_wait_event";
	struct npurt_event_pool *pool;
	struct drm_npu_task t = { .type = DRM_NPU_TASK_EVENT_WAIT };
	struct entry *e;
	uint64_t order, seq = 0;
	npurt_status st, fst;
	bool captured;
	uint32_t i;

	st = check_event(ev, true, s, who);
	if (st)
		return st;
	st = npurt_capture_wait(s, ev, &captured, who);
	if (captured)
		return st;
	if (ev->syncobj)
		return npurt_ipc_stream_wait_event(s, ev, who);
	pool = ev->dev->events;
	pthread_mutex_lock(&pool->push_lock);
	pthread_mutex_lock(&ev->lock);
	pthread_mutex_lock(&pool->lock);
	e = ev->cur;
	/*
	 * Never recorded, recorded already, or recorded on this stream (which
	 * runs in order): nothing to wait for.
	 */
	if (!e || !e->rec.s || e->rec.s == s) {
		pthread_mutex_unlock(&pool->lock);
		pthread_mutex_unlock(&ev->lock);
		pthread_mutex_unlock(&pool->push_lock);
		return NPURT_OK;
	}
	e->holds++;
	order = pool->order++;
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&ev->lock);

	t.args[0] = e->id;
	st = npurt_stream_push(s, &t, 1, &seq, who);
	/*
	 * Submitted at once: the driver keeps a device event alive for the
	 * batches that name it, and the pool may give this one back once
	 * everything naming it is submitted.
	 */
	fst = st ? NPURT_OK : npurt_stream_flush(s, who);
	pthread_mutex_unlock(&pool->push_lock);

	pthread_mutex_lock(&pool->lock);
	e->holds--;
	if (!st) {
		/* One per stream: a later wait passing means the earlier did. */
		for (i = 0; i < e->nwaits && e->waits[i].s != s; i++)
			;
		if (i == e->nwaits && e->nwaits == e->cap) {
			uint32_t cap = e->cap ? 2 * e->cap : 4;
			struct pend *w = realloc(e->waits, cap * sizeof(*w));

			if (!w) {
				/* Untracked, the entry must never be reset. */
				e->dead = true;
				pthread_mutex_unlock(&pool->lock);
				return NPURT_OK;
			}
			e->waits = w;
			e->cap = cap;
		}
		if (i == e->nwaits)
			e->nwaits++;
		else
			npurt_pend_clear(&e->waits[i]);
		npurt_pend_set(&e->waits[i], s, seq, order);
	}
	pthread_mutex_unlock(&pool->lock);
	return st ? st : fst;
}

/*
 * The event's latest record, held (holds) so that it is not reset under
 * the caller, with its stream referenced (s == NULL: known to have run).
 * e == NULL: never recorded.
 */
struct held {
	struct entry *e;
	npurt_stream *s;
	uint64_t seq;
};

static void event_hold(npurt_event *ev, struct held *h)
{
	struct npurt_event_pool *pool = ev->dev->events;

	h->e = NULL;
	h->s = NULL;
	pthread_mutex_lock(&ev->lock);
	pthread_mutex_lock(&pool->lock);
	if (ev->cur) {
		h->e = ev->cur;
		h->e->holds++;
		pthread_mutex_lock(&ev->dev->lock);
		if (npurt_pend_check(&h->e->rec) != PEND_RUN) {
			h->s = h->e->rec.s;
			h->seq = h->e->rec.seq;
			atomic_fetch_add(&h->s->refs, 1);
		}
		pthread_mutex_unlock(&ev->dev->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&ev->lock);
}

static void event_release(npurt_event *ev, struct held *h, bool recorded)
{
	struct npurt_event_pool *pool = ev->dev->events;

	pthread_mutex_lock(&pool->lock);
	if (recorded)
		npurt_pool_observe(pool, h->e);
	h->e->holds--;
	pthread_mutex_unlock(&pool->lock);
	if (h->s)
		npurt_stream_put(h->s);
}

/* EVENT_QUERY: 0 and whether it is recorded (keeping the time), or the errno. */
static int entry_query(npurt_device *dev, struct entry *e, bool *recorded)
{
	struct drm_npu_event_query q = { .id = e->id };
	int err = npurt_ioctl(dev, DRM_IOCTL_NPU_EVENT_QUERY, &q);

	if (err)
		return err;
	*recorded = q.recorded;
	if (q.recorded) {
		pthread_mutex_lock(&dev->events->lock);
		e->ts = q.timestamp_ns;
		e->has_ts = true;
		pthread_mutex_unlock(&dev->events->lock);
	}
	return 0;
}

/*
 * The record held has not run yet: did its stream fail before it (it then
 * never will)? NPURT_ERR_NOT_READY if not, NPURT_OK if it ran meanwhile,
 * else the stream's failure.
 */
static npurt_status record_fate(npurt_event *ev, struct held *h, const char *who)
{
	npurt_device *dev = ev->dev;
	bool failed, recorded = false;

	if (!h->s)
		return NPURT_OK;
	struct drm_npu_wait w = { .deadline_ns = 0 };

	pthread_mutex_lock(&dev->lock);
	failed = h->s->failed || h->s->destroyed;
	w.seq = npurt_stream_kseq(h->s, h->seq);
	w.queue = h->s->queue;
	pthread_mutex_unlock(&dev->lock);
	/* A WAIT whose deadline has passed: the kernel knows of a failure. */
	if (!failed && w.seq)
		failed = npurt_ioctl(dev, DRM_IOCTL_NPU_WAIT, &w) == EIO;
	if (!failed)
		return NPURT_ERR_NOT_READY;
	/* A failure after the record leaves it recorded. */
	if (!entry_query(dev, h->e, &recorded) && recorded)
		return NPURT_OK;
	/* The stream's failure, named as npurt_stream_synchronize() names it. */
	return npurt_path_wait(h->s, h->seq, who);
}

npurt_status npurt_event_synchronize_timeout(npurt_event *ev, int timeout_ms)
{
	static const char who[] = "npurt_event_synchronize_timeout";
	int64_t deadline = DRM_NPU_DEADLINE_NONE;
	npurt_status st = check_event(ev, false, NULL, who);
	struct held h;

	if (!st)
		st = npurt_capture_event_check(ev, who);
	if (st)
		return st;
	if (timeout_ms < -1)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: timeout %d ms (-1 waits for ever)",
				       who, timeout_ms);
	if (timeout_ms >= 0)
		deadline = now_ns() + timeout_ms * 1000000ll;
	if (ev->syncobj)
		return npurt_ipc_event_synchronize(ev, deadline, timeout_ms, who);
	event_hold(ev, &h);
	if (!h.e)
		return NPURT_OK;	/* never recorded */
	while (h.s) {
		/* In slices, to notice a recording stream that failed. */
		int64_t now = now_ns();
		struct drm_npu_event_wait w = { .id = h.e->id, .deadline_ns = now + SLICE_NS };
		int err;

		if (deadline < w.deadline_ns)
			w.deadline_ns = deadline;
		err = npurt_ioctl(ev->dev, DRM_IOCTL_NPU_EVENT_WAIT, &w);
		if (!err)
			break;
		if (err != ETIMEDOUT) {
			st = npurt_set_error(npurt_status_from_errno(err), "%s: EVENT_WAIT: %s%s", who,
					     strerror(err),
					     err == EIO ? " (the device was reset)" : "");
			break;
		}
		st = record_fate(ev, &h, who);
		if (st != NPURT_ERR_NOT_READY)
			break;
		st = NPURT_OK;
		if (now_ns() >= deadline) {
			st = npurt_set_error(NPURT_ERR_TIMEOUT,
					     "%s: the event's record did not run within %d ms",
					     who, timeout_ms);
			break;
		}
	}
	event_release(ev, &h, !st);
	return st;
}

npurt_status npurt_event_synchronize(npurt_event *ev)
{
	if (!ev)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_event_synchronize: NULL event");
	return npurt_event_synchronize_timeout(ev, -1);
}

npurt_status npurt_event_query(npurt_event *ev)
{
	static const char who[] = "npurt_event_query";
	npurt_status st = check_event(ev, false, NULL, who);
	bool recorded = false;
	struct held h;
	int err;

	if (!st)
		st = npurt_capture_event_check(ev, who);
	if (st)
		return st;
	if (ev->syncobj)
		return npurt_ipc_event_query(ev, who);
	event_hold(ev, &h);
	if (!h.e)
		return NPURT_OK;
	if (h.s) {
		err = entry_query(ev->dev, h.e, &recorded);
		if (err)
			st = npurt_set_error(npurt_status_from_errno(err), "%s: EVENT_QUERY: %s",
					     who, strerror(err));
		else if (!recorded)
			st = record_fate(ev, &h, who);
		if (st == NPURT_ERR_NOT_READY)
			st = npurt_set_error(NPURT_ERR_NOT_READY,
					     "%s: the event's record has not run yet", who);
	}
	event_release(ev, &h, !st);
	return st;
}

/* The device time of the event's latest record. */
static npurt_status event_time(npurt_event *ev, uint64_t *ts, const char *which, const char *who)
{
	npurt_status st = check_event(ev, false, NULL, who);
	bool recorded = false;
	struct held h;
	int err;

	if (st)
		return st;
	if (!(ev->flags & NPURT_EVENT_TIMING))
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: the %s event was created without NPURT_EVENT_TIMING",
				       who, which);
	event_hold(ev, &h);
	if (!h.e)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the %s event was never recorded",
				       who, which);
	pthread_mutex_lock(&ev->dev->events->lock);
	recorded = h.e->has_ts;
	*ts = h.e->ts;
	pthread_mutex_unlock(&ev->dev->events->lock);
	if (!recorded) {
		err = entry_query(ev->dev, h.e, &recorded);
		if (err)
			st = npurt_set_error(npurt_status_from_errno(err), "%s: EVENT_QUERY: %s",
					     who, strerror(err));
		else if (!recorded)
			st = npurt_set_error(NPURT_ERR_INVALID,
					     "%s: the %s event's record has not run yet "
					     "(synchronize it first)", who, which);
		else
			*ts = h.e->ts;
	}
	event_release(ev, &h, !st);
	return st;
}

npurt_status npurt_event_elapsed_ns(npurt_event *start, npurt_event *end, int64_t *ns)
{
	static const char who[] = "npurt_event_elapsed_ns";
	uint64_t t0 = 0, t1 = 0;
	npurt_status st;

	if (!ns)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL ns", who);
	if (npurt_handle_check(start, NPURT_KIND_EVENT, who) ||
	    npurt_handle_check(end, NPURT_KIND_EVENT, who))
		return NPURT_ERR_INVALID;
	if (start->dev != end->dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the events are of different devices",
				       who);
	st = event_time(start, &t0, "start", who);
	if (!st)
		st = event_time(end, &t1, "end", who);
	/* Captured records have no time: the check is after event_time()'s own. */
	if (!st)
		st = npurt_capture_event_check(start, who);
	if (!st)
		st = npurt_capture_event_check(end, who);
	if (!st)
		*ns = (int64_t)(t1 - t0);
	return st;
}

npurt_status npurt_event_export(npurt_event *ev, int *fd)
{
	static const char who[] = "npurt_event_export";
	npurt_status st = check_event(ev, false, NULL, who);

	if (st)
		return st;
	if (!fd)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL fd", who);
	/* The device's events belong to the context that made them. */
	if (!ev->syncobj)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: the event was created without NPURT_EVENT_INTERPROCESS", who);
	return npurt_ipc_event_export(ev, fd, who);
}

npurt_status npurt_event_import(npurt_device *dev, int fd, npurt_event **ev)
{
	static const char who[] = "npurt_event_import";
	uint32_t syncobj = 0;
	npurt_status st;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !ev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	st = npurt_ipc_syncobj_import(dev, fd, &syncobj, who);
	return st ? st : event_adopt(dev, syncobj, ev, who);
}
