// SPDX-License-Identifier: MIT
/*
 * The per-device pool of device events behind events (event.c).
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

#include "error.h"
#include "event.h"

#define POLL_AT		8		/* entries before records poll streams, and
					 * records without a free entry per poll */
#define POOL_MAX	64		/* entries before the oldest reset is dropped */

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

void npurt_pend_set(struct pend *p, npurt_stream *s, uint64_t seq, uint64_t order)
{
	atomic_fetch_add(&s->refs, 1);
	p->s = s;
	p->seq = seq;
	p->order = order;
}

void npurt_pend_clear(struct pend *p)
{
	if (p->s)
		npurt_stream_put(p->s);
	p->s = NULL;
}

void npurt_entry_clear(struct entry *e)
{
	npurt_pend_clear(&e->rec);
	npurt_pend_clear(&e->reset);
	for (uint32_t i = 0; i < e->nwaits; i++)
		npurt_pend_clear(&e->waits[i]);
	e->nwaits = 0;
	e->has_ts = false;
	e->dead = false;
}

void npurt_events_close(npurt_device *dev)
{
	struct npurt_event_pool *pool = dev->events;
	struct entry *e, *next;

	/* Events the caller left go as npurt_event_destroy() takes them. */
	while (pool->live)
		npurt_event_destroy(pool->live);
	/* The device events go with the file. */
	for (e = pool->entries; e; e = next) {
		next = e->next;
		npurt_entry_clear(e);
		free(e->waits);
		free(e);
	}
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->push_lock);
	free(pool);
}

/* Under pool->lock: e's record ran; so did what its stream had before it. */
void npurt_pool_observe(struct npurt_event_pool *pool, struct entry *e)
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
				npurt_pend_clear(all[i]);
		for (uint32_t i = 0; i < x->nwaits; i++)
			if (x->waits[i].s == s && x->waits[i].order <= order)
				npurt_pend_clear(&x->waits[i]);
	}
	npurt_stream_put(s);
}

/* Under dev->lock. */
int npurt_pend_check(struct pend *p)
{
	if (!p->s)
		return PEND_RUN;
	if (p->s->done >= p->seq) {
		npurt_pend_clear(p);
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
	npurt_entry_clear(e);
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
			int r = npurt_pend_check(&e->reset);

			if (r == PEND_RUN)
				e->state = ENTRY_FREE;
			e->dead = r == PEND_DEAD;
			continue;
		}
		for (uint32_t i = 0; i < e->nwaits; i++) {
			int r = npurt_pend_check(&e->waits[i]);

			/* A wait passed: the record it waited for ran. */
			waited |= r == PEND_RUN;
			e->dead |= r == PEND_DEAD;
		}
		if (waited)
			npurt_pool_observe(pool, e);
		e->dead |= npurt_pend_check(&e->rec) == PEND_DEAD;
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
bool npurt_entry_resettable_on(const struct entry *e, const npurt_stream *s)
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
npurt_status npurt_entry_take(npurt_device *dev, struct entry **out, const char *who)
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
