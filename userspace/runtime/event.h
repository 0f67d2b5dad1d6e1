/* SPDX-License-Identifier: MIT */
/* Internal: events' state, shared by event.c, event_pool.c and event_ipc.c. */
#ifndef NPURT_EVENT_H
#define NPURT_EVENT_H

#include "internal.h"

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
	npurt_event *live;		/* the handles not destroyed, for the close */
};

struct npurt_event {
	uint32_t flags;
	npurt_device *dev;
	pthread_mutex_t lock;
	struct entry *cur;		/* the latest record's entry, or NULL */
	uint32_t syncobj;		/* NPURT_EVENT_INTERPROCESS: its drm syncobj */
	/* capture.c: its latest record was in capture cap_id (0: none), there. */
	_Atomic uint64_t cap_id;
	uint32_t cap_stream, cap_pos;	/* under lock */
	npurt_event *prev, *next;	/* pool->live, under pool->lock */
};

enum { PEND_PENDING, PEND_RUN, PEND_DEAD };

/* event_pool.c: see there. Under pool->lock unless said otherwise. */
void npurt_pend_set(struct pend *p, npurt_stream *s, uint64_t seq, uint64_t order);
void npurt_pend_clear(struct pend *p);
void npurt_entry_clear(struct entry *e);
void npurt_pool_observe(struct npurt_event_pool *pool, struct entry *e);
int npurt_pend_check(struct pend *p);		/* under dev->lock */
bool npurt_entry_resettable_on(const struct entry *e, const npurt_stream *s);
npurt_status npurt_entry_take(npurt_device *dev, struct entry **out, const char *who);

/* event_ipc.c: NPURT_EVENT_INTERPROCESS events, over a drm syncobj. */
npurt_status npurt_ipc_syncobj_create(npurt_device *dev, uint32_t *syncobj, const char *who);
npurt_status npurt_ipc_syncobj_import(npurt_device *dev, int fd, uint32_t *syncobj,
				      const char *who);
void npurt_ipc_syncobj_destroy(npurt_device *dev, uint32_t syncobj);
npurt_status npurt_ipc_event_export(npurt_event *ev, int *fd, const char *who);
npurt_status npurt_ipc_event_record(npurt_event *ev, npurt_stream *s, const char *who);
npurt_status npurt_ipc_stream_wait_event(npurt_stream *s, npurt_event *ev, const char *who);
npurt_status npurt_ipc_event_synchronize(npurt_event *ev, int64_t deadline_ns, int timeout_ms,
					 const char *who);
npurt_status npurt_ipc_event_query(npurt_event *ev, const char *who);

#endif /* NPURT_EVENT_H */
