// SPDX-License-Identifier: MIT
/*
 * Events, over a per-device pool of device events.
 *
 * Recording an event is an EVENT_RECORD task on a device event (an entry
 * of the device's sync table) and a stream waiting for it an EVENT_WAIT
 * task. A device event stays recorded until an EVENT_RESET task clears
 * it, so each record takes a device event whose value is known to be 0:
 * a wait issued after record N then names N's device event and cannot
 * pass on record N-1, which set another one.
 *
 * Taking a fresh device event for every record and dropping the old one
 * costs two syscalls per record (SYNC_CREATE, SYNC_DESTROY). The pool
 * reuses them instead. An entry goes through:
 *
 *   FREE       value 0, named by no task that may still run
 *   CURRENT    an event's latest record; waits issued now name it
 *   RETIRED    superseded by a newer record (or its event destroyed)
 *   RESETTING  an EVENT_RESET was pushed; FREE once it is known to have run
 *
 * Why reuse is safe. A retired entry may still be named by tasks issued
 * before it retired: its record and device waits on it (the pool keeps
 * each as a "pend": stream, batch, and an order number increasing with
 * every task the pool pushes), and host waits (counted in `holds`). No new
 * ones come, since they name the event's current entry. The reset is
 * pushed only when it cannot overtake any of these on the device:
 *  - each of them is known to have run, or is on the very stream the reset
 *    goes to, ahead of it (a queue runs its tasks in order), and
 *  - no host wait or push naming the entry is in progress (holds == 0).
 * A record's reset thus never runs before the record (which would leave
 * the entry recorded), and never under a wait still due to pass on that
 * record (which would then block for good). The entry is taken for a new
 * record only once the reset is known to have run, so the device sees the
 * new record's waits against a value of 0 that only the new record sets.
 *
 * What is "known to have run", without a syscall:
 *  - its stream completed the batch (stream->done, which waits and
 *    polls on either path keep);
 *  - an entry's record was seen by the host (EVENT_WAIT returned,
 *    EVENT_QUERY says recorded), or a device wait on it ran: the record
 *    then ran, and with it everything pushed before it on its stream,
 *    resets of other entries included (pends of that stream with a lower
 *    order number). A device event is recorded only by its current
 *    record, since it was reset before it was taken.
 * A stream that failed or went away leaves what it still had in doubt;
 * entries that depend on it are dropped (SYNC_DESTROY: batches in flight
 * keep the device event alive in the driver) rather than reused.
 *
 * Steady state: a record carries, ahead of it in the same push, the resets
 * of entries that earlier records on its stream retired, and seeing it run
 * frees them, so a record is one push of two tasks and no other syscall. When nothing is seen to complete (records issued faster
 * than anybody waits), every POLL_AT-th record that finds no free entry
 * among POLL_AT or more polls the streams once; one that still finds none
 * creates a device event, and beyond POOL_MAX first gives the driver back
 * the oldest entry being reset. A device far behind thus costs what a
 * fresh device event per record did, with the context holding about
 * POOL_MAX (more only while device waits on retired entries are pending).
 *
 * Threads: every call on an event takes the pool's push_lock (held from
 * taking an order number to the end of the push, so the pool's tasks
 * land on each stream in order-number order), then the event's mutex,
 * then the pool's, then the device lock (streams' progress); pushes
 * happen with only push_lock held. Host waits hold no lock while they
 * sleep.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "internal.h"

#define EVENT_MAGIC	0x4e505545u	/* "NPUE" */
#define EVENT_DEAD	0xdeadeeeeu
#define POLL_AT		8		/* entries before records poll streams, and
					 * records without a free entry per poll */
#define POOL_MAX	64		/* entries before the oldest reset is dropped */
#define RESETS_MAX	31		/* resets one record carries */
#define SLICE_NS	100000000ll	/* host waits look at the stream this often */

/* A task the pool pushed; s == NULL once it is known to have run. */
struct pend {
	npurt_stream *s;		/* referenced */
	uint64_t seq;			/* its batch */
	uint64_t order;			/* pool->order when it was pushed */
};

enum entry_state { ENTRY_FREE, ENTRY_TAKEN, ENTRY_CURRENT, ENTRY_RETIRED, ENTRY_RESETTING };

struct entry {
	struct entry *next;
	uint32_t id;			/* the device event */
	enum entry_state state;		/* TAKEN: a record or reset being pushed */
	uint32_t holds;			/* host waits and pushes naming it */
	bool dead;			/* depends on a failed stream */
	bool has_ts;
	uint64_t ts;			/* the record's device time, once read */
	struct pend rec;		/* CURRENT, RETIRED: its record */
	struct pend reset;		/* RESETTING */
	struct pend *waits;		/* device waits on it: one per stream */
	uint32_t nwaits, cap;
};

struct npurt_event_pool {
	/*
	 * Held from taking an order number to the end of its push, so that on
	 * every stream the pool's tasks land in order-number order even when
	 * threads share the stream: "a record seen to run proves the pool's
	 * earlier tasks on its stream ran" depends on it.
	 */
	pthread_mutex_t push_lock;
	pthread_mutex_t lock;
	struct entry *entries;
	uint32_t count;
	uint32_t misses;		/* records that found no entry free */
	uint64_t order;
};

struct npurt_event {
	uint32_t magic;
	uint32_t flags;
	npurt_device *dev;
	pthread_mutex_t lock;
	struct entry *cur;		/* the latest record's entry, or NULL */
};

npurt_status npurt_events_open(npurt_device *dev, const char *who)
{
	struct npurt_event_pool *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->push_lock, NULL);
	dev->events = pool;
	return NPURT_OK;
}

static void pend_set(struct pend *p, npurt_stream *s, uint64_t seq, uint64_t order)
{
	atomic_fetch_add(&s->refs, 1);
	p->s = s;
	p->seq = seq;
	p->order = order;
}

static void pend_clear(struct pend *p)
{
	if (p->s)
		npurt_stream_put(p->s);
	p->s = NULL;
}

static void entry_clear(struct entry *e)
{
	pend_clear(&e->rec);
	pend_clear(&e->reset);
	for (uint32_t i = 0; i < e->nwaits; i++)
		pend_clear(&e->waits[i]);
	e->nwaits = 0;
	e->has_ts = false;
	e->dead = false;
}

void npurt_events_close(npurt_device *dev)
{
	struct npurt_event_pool *pool = dev->events;
	struct entry *e, *next;

	/* The device events go with the file. */
	for (e = pool->entries; e; e = next) {
		next = e->next;
		entry_clear(e);
		free(e->waits);
		free(e);
	}
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->push_lock);
	free(pool);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Under pool->lock: e's record ran; so did what its stream had before it. */
static void observe(struct npurt_event_pool *pool, struct entry *e)
{
	npurt_stream *s = e->rec.s;
	uint64_t order = e->rec.order;

	if (!s)
		return;
	atomic_fetch_add(&s->refs, 1);	/* compared with below, while they go */
	for (struct entry *x = pool->entries; x; x = x->next) {
		struct pend *all[2] = { &x->rec, &x->reset };

		for (int i = 0; i < 2; i++)
			if (all[i]->s == s && all[i]->order <= order)
				pend_clear(all[i]);
		for (uint32_t i = 0; i < x->nwaits; i++)
			if (x->waits[i].s == s && x->waits[i].order <= order)
				pend_clear(&x->waits[i]);
	}
	npurt_stream_put(s);
}

enum { PEND_PENDING, PEND_RUN, PEND_DEAD };

/* Under dev->lock. */
static int pend_check(struct pend *p)
{
	if (!p->s)
		return PEND_RUN;
	if (p->s->done >= p->seq) {
		pend_clear(p);
		return PEND_RUN;
	}
	return p->s->failed || p->s->destroyed ? PEND_DEAD : PEND_PENDING;
}

/* Give the device event back to the driver: what it is in doubt about. */
static void entry_drop(npurt_device *dev, struct entry **link)
{
	struct entry *e = *link;
	struct drm_npu_sync_destroy destroy = { .id = e->id };

	npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_DESTROY, &destroy);
	*link = e->next;
	dev->events->count--;
	entry_clear(e);
	free(e->waits);
	free(e);
}

/*
 * Under pool->lock: learn what ran from the streams' progress (no syscall),
 * free entries whose reset ran and drop those a failed stream left in doubt.
 */
static void reclaim(npurt_device *dev)
{
	struct npurt_event_pool *pool = dev->events;
	struct entry **link;

	pthread_mutex_lock(&dev->lock);
	for (struct entry *e = pool->entries; e; e = e->next) {
		bool waited = false;
		uint32_t n = 0;

		if (e->state == ENTRY_FREE || e->state == ENTRY_TAKEN)
			continue;
		if (e->state == ENTRY_RESETTING) {
			int r = pend_check(&e->reset);

			if (r == PEND_RUN)
				e->state = ENTRY_FREE;
			e->dead = r == PEND_DEAD;
			continue;
		}
		for (uint32_t i = 0; i < e->nwaits; i++) {
			int r = pend_check(&e->waits[i]);

			/* A wait passed: the record it waited for ran. */
			waited |= r == PEND_RUN;
			e->dead |= r == PEND_DEAD;
		}
		if (waited)
			observe(pool, e);
		e->dead |= pend_check(&e->rec) == PEND_DEAD;
		for (uint32_t i = 0; i < e->nwaits; i++)
			if (e->waits[i].s)
				e->waits[n++] = e->waits[i];
		e->nwaits = n;
	}
	pthread_mutex_unlock(&dev->lock);
	for (link = &pool->entries; *link;) {
		struct entry *e = *link;

		if (e->dead && !e->holds &&
		    (e->state == ENTRY_RETIRED || e->state == ENTRY_RESETTING))
			entry_drop(dev, link);
		else
			link = &e->next;
	}
}

/* Under pool->lock: may a reset of retired e go on stream s now? */
static bool resettable_on(const struct entry *e, const npurt_stream *s)
{
	if (e->state != ENTRY_RETIRED || e->holds || e->dead)
		return false;
	if (e->rec.s && e->rec.s != s)
		return false;
	for (uint32_t i = 0; i < e->nwaits; i++)
		if (e->waits[i].s && e->waits[i].s != s)
			return false;
	return true;
}

/*
 * Under pool->lock: ask the kernel, once per stream, how far the streams
 * the pool waits on got: their newest pending batch, else their oldest.
 */
static void poll_streams(npurt_device *dev)
{
	struct polled { npurt_stream *s; uint64_t lo, hi; } seen[16];
	uint32_t n = 0;

	for (struct entry *e = dev->events->entries; e; e = e->next) {
		struct pend *all[2] = { &e->rec, &e->reset };

		for (uint32_t i = 0; i < 2 + e->nwaits; i++) {
			struct pend *p = i < 2 ? all[i] : &e->waits[i - 2];
			uint32_t k;

			if (!p->s)
				continue;
			for (k = 0; k < n && seen[k].s != p->s; k++)
				;
			if (k == n) {
				if (n == sizeof(seen) / sizeof(seen[0]))
					continue;
				seen[n++] = (struct polled){ p->s, p->seq, p->seq };
			}
			if (p->seq < seen[k].lo)
				seen[k].lo = p->seq;
			if (p->seq > seen[k].hi)
				seen[k].hi = p->seq;
		}
	}
	for (uint32_t k = 0; k < n; k++)
		if (!npurt_path_poll(seen[k].s, seen[k].hi) && seen[k].lo < seen[k].hi)
			npurt_path_poll(seen[k].s, seen[k].lo);
}

/*
 * Under pool->lock: with no entry free and POOL_MAX held, give the driver
 * back the oldest one being reset (the tasks naming it were all submitted
 * with its reset, and keep it alive there), so the context's holds stay
 * bounded however far the device lags.
 */
static void drop_oldest_resetting(npurt_device *dev)
{
	struct entry **link, **oldest = NULL;

	for (link = &dev->events->entries; *link; link = &(*link)->next)
		if ((*link)->state == ENTRY_RESETTING &&
		    (!oldest || (*link)->reset.order < (*oldest)->reset.order))
			oldest = link;
	if (oldest)
		entry_drop(dev, oldest);
}

/* Under pool->lock: a FREE entry, taken, polling or creating if need be. */
static npurt_status entry_take(npurt_device *dev, struct entry **out, const char *who)
{
	struct npurt_event_pool *pool = dev->events;
	struct drm_npu_sync_create create = { .kind = DRM_NPU_SYNC_EVENT };
	struct entry *e;
	int err;

	for (int round = 0; round < 2; round++) {
		reclaim(dev);
		for (e = pool->entries; e; e = e->next)
			if (e->state == ENTRY_FREE)
				goto found;
		/* Polling costs syscalls: not on every record of a device far behind. */
		if (round || pool->count < POLL_AT || ++pool->misses % POLL_AT)
			break;
		poll_streams(dev);
	}
	if (pool->count >= POOL_MAX)
		drop_oldest_resetting(dev);
	e = calloc(1, sizeof(*e));
	if (!e)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_CREATE, &create);
	if (err) {
		free(e);
		return npurt_set_error(npurt_status_from_errno(err),
				       "%s: %s: SYNC_CREATE: %s (%u device events held for "
				       "records the device has not been seen to run)",
				       who, dev->node, strerror(err), pool->count);
	}
	e->id = create.id;
	e->next = pool->entries;
	pool->entries = e;
	pool->count++;
found:
	e->state = ENTRY_TAKEN;
	*out = e;
	return NPURT_OK;
}

/*
 * The handle checks every call makes: NULL, destroyed, a stream (if
 * `stream`) of the same device.
 */
static npurt_status check_event(const npurt_event *ev, bool stream, const npurt_stream *s,
				const char *who)
{
	if (stream && !s)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL stream", who);
	if (!ev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL event", who);
	if (ev->magic != EVENT_MAGIC)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: not an event (destroyed?)", who);
	if (s && ev->dev != s->dev)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: the event and the stream are of different devices", who);
	return NPURT_OK;
}

npurt_status npurt_event_create_flags(npurt_device *dev, uint32_t flags, npurt_event **out)
{
	static const char who[] = "npurt_event_create_flags";
	npurt_event *ev;

	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (flags & ~NPURT_EVENT_TIMING)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown flags %#x", who,
				       flags & ~NPURT_EVENT_TIMING);
	/* No device event yet: the first record takes one from the pool. */
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	ev->magic = EVENT_MAGIC;
	ev->flags = flags;
	ev->dev = dev;
	pthread_mutex_init(&ev->lock, NULL);
	*out = ev;
	return NPURT_OK;
}

npurt_status npurt_event_create(npurt_device *dev, npurt_event **out)
{
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_event_create: NULL argument");
	return npurt_event_create_flags(dev, NPURT_EVENT_TIMING, out);
}

void npurt_event_destroy(npurt_event *ev)
{
	struct npurt_event_pool *pool;

	if (!ev || ev->magic != EVENT_MAGIC)
		return;
	pool = ev->dev->events;
	pthread_mutex_lock(&pool->lock);
	/* Work already issued may still name it; the pool resets it later. */
	if (ev->cur && ev->cur->state == ENTRY_CURRENT)
		ev->cur->state = ENTRY_RETIRED;
	pthread_mutex_unlock(&pool->lock);
	ev->magic = EVENT_DEAD;
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
	pool = ev->dev->events;
	pthread_mutex_lock(&pool->push_lock);
	pthread_mutex_lock(&pool->lock);
	st = entry_take(ev->dev, &e, who);
	if (st) {
		pthread_mutex_unlock(&pool->lock);
		pthread_mutex_unlock(&pool->push_lock);
		return st;
	}
	/* Resets ride ahead of the record: seeing it then proves them run. */
	for (struct entry *x = pool->entries; x && n < RESETS_MAX; x = x->next) {
		if (!resettable_on(x, s))
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
		entry_clear(resets[i]);
		resets[i]->state = ENTRY_RESETTING;
		pend_set(&resets[i]->reset, s, seq, order + i);
	}
	if (st) {
		e->state = ENTRY_FREE;
	} else {
		pend_set(&e->rec, s, seq, order + n);
		e->state = ENTRY_CURRENT;
		if (ev->cur && ev->cur->state == ENTRY_CURRENT)
			ev->cur->state = ENTRY_RETIRED;
		ev->cur = e;
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
	uint32_t i;

	st = check_event(ev, true, s, who);
	if (st)
		return st;
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
			pend_clear(&e->waits[i]);
		pend_set(&e->waits[i], s, seq, order);
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
		if (pend_check(&h->e->rec) != PEND_RUN) {
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
		observe(pool, h->e);
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

	if (st)
		return st;
	if (timeout_ms < -1)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: timeout %d ms (-1 waits for ever)",
				       who, timeout_ms);
	if (timeout_ms >= 0)
		deadline = now_ns() + timeout_ms * 1000000ll;
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

	if (st)
		return st;
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

	if (!start || !end || !ns)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (start->magic == EVENT_MAGIC && end->magic == EVENT_MAGIC && start->dev != end->dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the events are of different devices",
				       who);
	st = event_time(start, &t0, "start", who);
	if (!st)
		st = event_time(end, &t1, "end", who);
	if (!st)
		*ns = (int64_t)(t1 - t0);
	return st;
}

/*
 * The uapi shares notifies between processes (NOTIFY_EXPORT), not events:
 * an event belongs to the context that created it, and a notify cannot
 * stand in for one (each of its waits consumes a record; it has no time).
 */
npurt_status npurt_event_export(npurt_event *ev, int *fd)
{
	static const char who[] = "npurt_event_export";
	npurt_status st = check_event(ev, false, NULL, who);

	if (st)
		return st;
	if (!fd)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL fd", who);
	return npurt_set_error(NPURT_ERR_UNSUPPORTED,
			       "%s: the driver shares notifies between processes, not events "
			       "(npurt_notify_export)", who);
}

npurt_status npurt_event_import(npurt_device *dev, int fd, npurt_event **ev)
{
	static const char who[] = "npurt_event_import";

	if (!dev || !ev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	(void)fd;
	return npurt_set_error(NPURT_ERR_UNSUPPORTED,
			       "%s: the driver shares notifies between processes, not events "
			       "(npurt_notify_import)", who);
}
