// SPDX-License-Identifier: MIT
/*
 * Live handles (handle.h), by address, so a call can tell one it may read
 * from a pointer it must not touch: a double free, a use after free or
 * after the device closed, an event passed for a stream. The set is split
 * in shards by address, each a hash table under its own lock, so threads
 * working on different handles rarely meet; a check is a lock and a probe
 * or two.
 *
 * What it cannot tell: an address the allocator handed out again for a
 * new handle of the same kind, so a stale pointer that equals a live one
 * is that live one, as with any API of pointers.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"

#define SHARDS		16
#define SMALL		64	/* a shard's table of its own: entries */
#define EMPTY		0
#define GONE		1	/* a removed entry: probes go on past it */

struct entry {
	uintptr_t key;
	const npurt_device *dev;
	enum npurt_kind kind;
};

struct shard {
	pthread_mutex_t lock;
	struct entry *e;	/* small, or a larger one from the heap */
	size_t cap, used;	/* used: live and GONE, so probes end */
	struct entry small[SMALL];
};

static struct shard shards[SHARDS] = {
	[0 ... SHARDS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

static const char *const names[NPURT_KIND_COUNT] = {
	[NPURT_KIND_DEVICE] = "npurt_device", [NPURT_KIND_MEM] = "npurt_mem",
	[NPURT_KIND_STREAM] = "npurt_stream", [NPURT_KIND_EVENT] = "npurt_event",
	[NPURT_KIND_NOTIFY] = "npurt_notify", [NPURT_KIND_MODEL] = "npurt_model",
	[NPURT_KIND_GRAPH] = "npurt_graph", [NPURT_KIND_RUNLOOP] = "npurt_runloop",
	[NPURT_KIND_EXEC] = "npurt_exec",
};

static uint64_t mix(uintptr_t key)
{
	uint64_t x = (uint64_t)key >> 4;	/* allocations are 16-byte aligned */

	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static struct shard *shard_of(uintptr_t key)
{
	return &shards[mix(key) % SHARDS];
}

/* The entry of key, or the empty slot that ends its probe; lock held, cap > 0. */
static struct entry *probe(struct shard *s, uintptr_t key)
{
	size_t i = (mix(key) >> 4) & (s->cap - 1);

	while (s->e[i].key != EMPTY && s->e[i].key != key)
		i = (i + 1) & (s->cap - 1);
	return &s->e[i];
}

/*
 * Room for one more entry: at half full, the table rebuilt without GONE
 * entries, doubled while a quarter of it would be live. A program's few
 * handles stay in the shard's own small table: no heap, however many
 * come and go.
 */
static int grow(struct shard *s)
{
	struct entry tmp[SMALL], *old = s->e, *e;
	size_t live = 0, old_cap = s->cap, cap = SMALL;

	if (!old) {
		s->e = s->small;
		s->cap = SMALL;
		return 0;
	}
	if ((s->used + 1) * 2 <= old_cap)
		return 0;
	for (size_t i = 0; i < old_cap; i++)
		live += old[i].key > GONE;
	while ((live + 1) * 4 > cap)
		cap *= 2;
	e = cap == SMALL ? s->small : calloc(cap, sizeof(*e));
	if (!e)
		return -1;
	if (old == s->small) {
		memcpy(tmp, s->small, sizeof(tmp));
		old = tmp;
	}
	if (e == s->small)
		memset(s->small, 0, sizeof(s->small));
	s->e = e;
	s->cap = cap;
	s->used = live;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key > GONE)
			*probe(s, old[i].key) = old[i];
	if (old != tmp)
		free(old);
	return 0;
}

npurt_status npurt_handle_add(const void *h, enum npurt_kind kind, const npurt_device *dev,
			      const char *who)
{
	struct shard *s = shard_of((uintptr_t)h);
	struct entry *e;

	pthread_mutex_lock(&s->lock);
	if (grow(s)) {
		pthread_mutex_unlock(&s->lock);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	e = probe(s, (uintptr_t)h);
	if (e->key == EMPTY)
		s->used++;
	*e = (struct entry){ .key = (uintptr_t)h, .dev = dev, .kind = kind };
	pthread_mutex_unlock(&s->lock);
	return NPURT_OK;
}

/*
 * h's kind, or 0 if it is not live; taken out too when its kind is
 * `take` (NPURT_KIND_COUNT: whatever it is; 0: never). One probe under
 * the lock, so of two racing takes exactly one wins.
 */
static enum npurt_kind look(const void *h, enum npurt_kind take)
{
	struct shard *s = shard_of((uintptr_t)h);
	enum npurt_kind kind = 0;
	struct entry *e;

	if ((uintptr_t)h <= GONE)
		return 0;
	pthread_mutex_lock(&s->lock);
	if (s->cap) {
		e = probe(s, (uintptr_t)h);
		if (e->key != EMPTY) {
			kind = e->kind;
			if (take == kind || take == NPURT_KIND_COUNT)
				e->key = GONE;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return kind;
}

static npurt_status check(const void *h, enum npurt_kind kind, bool take, const char *who)
{
	enum npurt_kind found;

	if (!h)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL %s", who, names[kind]);
	found = look(h, take ? kind : 0);
	if (found == kind)
		return NPURT_OK;
	if (found)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %p is an %s, not an %s", who, h,
				       names[found], names[kind]);
	return npurt_set_error(NPURT_ERR_INVALID, "%s: %p is no live %s (freed or destroyed "
			       "already, or its device closed)", who, h, names[kind]);
}

npurt_status npurt_handle_check(const void *h, enum npurt_kind kind, const char *who)
{
	return check(h, kind, false, who);
}

npurt_status npurt_handle_take(const void *h, enum npurt_kind kind, const char *who)
{
	return check(h, kind, true, who);
}

void npurt_handle_drop(const void *h)
{
	if (h)
		look(h, NPURT_KIND_COUNT);
}

void npurt_handles_drop_device(const npurt_device *dev, enum npurt_kind kind)
{
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &shards[k];

		pthread_mutex_lock(&s->lock);
		for (size_t i = 0; i < s->cap; i++)
			if (s->e[i].key > GONE && s->e[i].dev == dev && s->e[i].kind == kind)
				s->e[i].key = GONE;
		pthread_mutex_unlock(&s->lock);
	}
}
