// SPDX-License-Identifier: MIT
/*
 * The caching allocator (see mem_cache.h and Documentation/runtime.rst).
 *
 * Each (page policy, small or large) pair is a pool of segments. A
 * segment is cut into blocks that tile it in address order; a free block
 * sits in its pool's free list, sorted by size then address so the first
 * fit is the best fit, and merges with free neighbours when it is freed,
 * so a segment whose blocks are all free is one block again. A freed block
 * that the device may still be using waits in its pool's pending list
 * with a fence (the stream positions it waits for) and joins the free
 * list once they have all been reached. The lists are linear: free blocks
 * coalesce, so they stay short for the usual patterns.
 */
#include "mem_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { MC_FREE, MC_USED, MC_PENDING };

/* Far beyond any device's address space: rounding cannot overflow below it. */
#define MC_SIZE_MAX	(1ull << 48)

struct mc_fence {
	unsigned int refs;
	bool reached;
	size_t n;
	struct mc_wait w[];
};

struct mc_segment {
	struct mc_seg seg;
	unsigned int pool;
	uint64_t busy;			/* bytes of blocks that are not free */
	struct mc_block *first;
	struct mc_segment *prev, *next;	/* every segment */
	struct mc_segment *iprev, *inext; /* wholly free ones, oldest first */
	bool idle;
};

struct mc_deferred {
	struct mc_fence *fence;
	void (*release)(void *arg);
	void *arg;
	struct mc_deferred *next;
};

struct mc_pool {
	struct mc_block *free;
	struct mc_block *pending;
};

struct mc_cache {
	pthread_mutex_t lock;
	const struct mc_ops *ops;
	void *ctx;
	struct mc_pool pools[MC_POLICIES * 2];
	struct mc_segment *segments;
	struct mc_segment *dedicated;	/* MC_BYPASS: not counted, never cached */
	struct mc_block *dedicated_pending;	/* freed, the device may still use them */
	struct mc_deferred *deferred;		/* mc_defer(): releases waiting for work */
	struct mc_segment *idle_head, *idle_tail;
	uint64_t threshold;
	struct mc_stats st;
};

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

uint64_t mc_round(uint64_t size)
{
	return size < MC_SMALL_MAX ? round_up(size, MC_SMALL_ALIGN) : round_up(size, MC_LARGE_ALIGN);
}

struct mc_cache *mc_create(const struct mc_ops *ops, void *ctx)
{
	struct mc_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->ops = ops;
	c->ctx = ctx;
	c->threshold = MC_THRESHOLD_DEFAULT;
	return c;
}

/* ---- lists -------------------------------------------------------- */

static void list_del(struct mc_block **head, struct mc_block *b)
{
	if (b->lprev)
		b->lprev->lnext = b->lnext;
	else
		*head = b->lnext;
	if (b->lnext)
		b->lnext->lprev = b->lprev;
	b->lprev = b->lnext = NULL;
}

static void list_push(struct mc_block **head, struct mc_block *b)
{
	b->lprev = NULL;
	b->lnext = *head;
	if (*head)
		(*head)->lprev = b;
	*head = b;
}

static bool before(const struct mc_block *a, const struct mc_block *b)
{
	return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

/* Sorted, so that the first block that fits is the best fit. */
static void free_insert(struct mc_pool *p, struct mc_block *b)
{
	struct mc_block *at = p->free, *last = NULL;

	while (at && before(at, b)) {
		last = at;
		at = at->lnext;
	}
	b->lprev = last;
	b->lnext = at;
	if (at)
		at->lprev = b;
	if (last)
		last->lnext = b;
	else
		p->free = b;
}

static void seg_link(struct mc_segment **head, struct mc_segment *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head)
		(*head)->prev = s;
	*head = s;
}

static void seg_unlink(struct mc_segment **head, struct mc_segment *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next)
		s->next->prev = s->prev;
}

static void idle_add(struct mc_cache *c, struct mc_segment *s)
{
	s->idle = true;
	s->inext = NULL;
	s->iprev = c->idle_tail;
	if (c->idle_tail)
		c->idle_tail->inext = s;
	else
		c->idle_head = s;
	c->idle_tail = s;
	c->st.idle += s->seg.size;
}

static void idle_del(struct mc_cache *c, struct mc_segment *s)
{
	if (!s->idle)
		return;
	if (s->iprev)
		s->iprev->inext = s->inext;
	else
		c->idle_head = s->inext;
	if (s->inext)
		s->inext->iprev = s->iprev;
	else
		c->idle_tail = s->iprev;
	s->idle = false;
	c->st.idle -= s->seg.size;
}

/* ---- fences ------------------------------------------------------- */

static void fence_put(struct mc_cache *c, struct mc_fence *f)
{
	if (--f->refs)
		return;
	for (size_t i = 0; i < f->n; i++)
		c->ops->hold(c->ctx, f->w[i].stream, false);
	free(f);
}

/* May the device still use what waits for f? `self` is exempt: its own
 * later work is ordered after what it issued before the free. */
static bool fence_clear(struct mc_cache *c, struct mc_fence *f, void *self, bool poll)
{
	bool all = true;

	if (f->reached)
		return true;
	for (size_t i = 0; i < f->n; i++) {
		struct mc_wait *w = &f->w[i];

		if (!w->done)
			w->done = c->ops->reached(c->ctx, w->stream, w->seq, poll);
		if (!w->done && (!self || w->stream != self))
			return false;
		all = all && w->done;
	}
	f->reached = all;
	return true;
}

/* ---- segments and blocks ------------------------------------------ */

static struct mc_pool *pool_of(struct mc_cache *c, const struct mc_block *b)
{
	return &c->pools[b->seg->pool];
}

static void seg_release(struct mc_cache *c, struct mc_segment *s)
{
	struct mc_block *b = s->first;

	/* Idle: one free block covers it. */
	idle_del(c, s);
	list_del(&c->pools[s->pool].free, b);
	free(b);
	seg_unlink(&c->segments, s);
	c->st.reserved -= s->seg.size;
	c->st.seg_frees++;
	c->ops->seg_free(c->ctx, &s->seg);
	free(s);
}

static void release_idle(struct mc_cache *c, uint64_t keep)
{
	while (c->st.idle > keep && c->idle_head)
		seg_release(c, c->idle_head);
}

/* b absorbs n, its free neighbour after it; neither is in a list. */
static void absorb(struct mc_block *b, struct mc_block *n)
{
	b->size += n->size;
	b->next = n->next;
	if (n->next)
		n->next->prev = b;
	free(n);
}

static void make_free(struct mc_cache *c, struct mc_block *b)
{
	struct mc_segment *s = b->seg;
	struct mc_pool *p = pool_of(c, b);

	b->state = MC_FREE;
	s->busy -= b->size;
	c->st.in_use -= b->size;
	if (b->next && b->next->state == MC_FREE) {
		list_del(&p->free, b->next);
		absorb(b, b->next);
	}
	if (b->prev && b->prev->state == MC_FREE) {
		struct mc_block *prev = b->prev;

		list_del(&p->free, prev);
		absorb(prev, b);
		b = prev;
	}
	free_insert(p, b);
	if (!s->busy) {
		idle_add(c, s);
		release_idle(c, c->threshold);
	}
}

/* Pending blocks whose fence has been reached become free. */
static void reclaim(struct mc_cache *c, struct mc_pool *p, bool poll)
{
	struct mc_block *b = p->pending, *next;

	for (; b; b = next) {
		next = b->lnext;
		if (!fence_clear(c, b->fence, NULL, poll))
			continue;
		list_del(&p->pending, b);
		fence_put(c, b->fence);
		b->fence = NULL;
		make_free(c, b);
	}
}

static void dedicated_release(struct mc_cache *c, struct mc_block *b)
{
	seg_unlink(&c->dedicated, b->seg);
	c->ops->seg_free(c->ctx, &b->seg->seg);
	free(b->seg);
	free(b);
}

/* Freed dedicated buffers whose work is through go back to the kernel. */
static void reclaim_dedicated(struct mc_cache *c, bool poll)
{
	struct mc_block *b, *next;

	for (b = c->dedicated_pending; b; b = next) {
		next = b->lnext;
		if (!fence_clear(c, b->fence, NULL, poll))
			continue;
		list_del(&c->dedicated_pending, b);
		fence_put(c, b->fence);
		dedicated_release(c, b);
	}
}

/* Deferred releases whose work is through run. */
static void reclaim_deferred(struct mc_cache *c, bool poll)
{
	struct mc_deferred **at = &c->deferred, *d;

	while ((d = *at)) {
		if (!fence_clear(c, d->fence, NULL, poll)) {
			at = &d->next;
			continue;
		}
		*at = d->next;
		fence_put(c, d->fence);
		d->release(d->arg);
		free(d);
	}
}

static void reclaim_all(struct mc_cache *c, bool poll)
{
	for (size_t i = 0; i < MC_POLICIES * 2; i++)
		reclaim(c, &c->pools[i], poll);
	reclaim_dedicated(c, poll);
	reclaim_deferred(c, poll);
}

/* The best fit among free blocks and the pending ones `stream` may take. */
static struct mc_block *find(struct mc_cache *c, struct mc_pool *p, uint64_t size, void *stream)
{
	struct mc_block *best = p->free;

	while (best && best->size < size)
		best = best->lnext;
	if (!stream)
		return best;
	for (struct mc_block *b = p->pending; b; b = b->lnext) {
		if (b->size >= size && (!best || before(b, best)) &&
		    fence_clear(c, b->fence, stream, false))
			best = b;
	}
	return best;
}

static int grow(struct mc_cache *c, unsigned int pool, uint64_t size, struct mc_block **out)
{
	uint64_t want = pool & 1 ? round_up(size, MC_SEGMENT) : MC_SEGMENT;
	struct mc_segment *s = calloc(1, sizeof(*s));
	struct mc_block *b = calloc(1, sizeof(*b));
	int err = ENOMEM;

	if (s && b)
		err = c->ops->seg_alloc(c->ctx, want, pool / 2, false, &s->seg);
	if (err) {
		free(s);
		free(b);
		return err;
	}
	s->pool = pool;
	s->first = b;
	seg_link(&c->segments, s);
	b->seg = s;
	b->addr = s->seg.addr;
	b->host = s->seg.host;
	b->size = s->seg.size;
	b->page_size = s->seg.page_size;
	b->state = MC_FREE;
	free_insert(&c->pools[pool], b);
	idle_add(c, s);
	c->st.reserved += s->seg.size;
	if (c->st.reserved > c->st.reserved_peak)
		c->st.reserved_peak = c->st.reserved;
	c->st.seg_allocs++;
	*out = b;
	return 0;
}

/* Hand out `size` bytes from the front of b (free or pending, in its list). */
static int take(struct mc_cache *c, struct mc_block *b, uint64_t size)
{
	struct mc_pool *p = pool_of(c, b);
	struct mc_block *rest = NULL;

	if (b->size > size) {
		rest = calloc(1, sizeof(*rest));
		if (!rest)
			return ENOMEM;
	}
	if (b->state == MC_FREE) {
		list_del(&p->free, b);
		idle_del(c, b->seg);
		b->seg->busy += size;
		c->st.in_use += size;
	} else {
		/* Pending bytes were never given back: still counted. */
		list_del(&p->pending, b);
	}
	if (rest) {
		*rest = *b;
		rest->addr += size;
		rest->host = b->host ? (char *)b->host + size : NULL;
		rest->size -= size;
		rest->prev = b;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->size = size;
		/* Its neighbours are b (taken) and what was b's: never free. */
		if (rest->state == MC_PENDING) {
			rest->fence->refs++;
			list_push(&p->pending, rest);
		} else {
			free_insert(p, rest);
		}
	}
	if (b->state == MC_PENDING) {
		fence_put(c, b->fence);
		b->fence = NULL;
	}
	b->state = MC_USED;
	if (c->st.in_use > c->st.in_use_peak)
		c->st.in_use_peak = c->st.in_use;
	return 0;
}

static int alloc_dedicated(struct mc_cache *c, uint64_t size, unsigned int policy,
			   struct mc_block **out)
{
	struct mc_segment *s = calloc(1, sizeof(*s));
	struct mc_block *b = calloc(1, sizeof(*b));
	int err = ENOMEM;

	if (s && b)
		err = c->ops->seg_alloc(c->ctx, size, policy, true, &s->seg);
	if (err == ENOMEM) {
		pthread_mutex_lock(&c->lock);
		reclaim_all(c, true);
		release_idle(c, 0);
		pthread_mutex_unlock(&c->lock);
		err = c->ops->seg_alloc(c->ctx, size, policy, true, &s->seg);
	}
	if (err) {
		free(s);
		free(b);
		return err;
	}
	s->seg.dedicated = true;
	s->first = b;
	s->busy = s->seg.size;
	b->seg = s;
	b->addr = s->seg.addr;
	b->host = s->seg.host;
	b->size = s->seg.size;
	b->page_size = s->seg.page_size;
	b->state = MC_USED;
	pthread_mutex_lock(&c->lock);
	seg_link(&c->dedicated, s);
	pthread_mutex_unlock(&c->lock);
	*out = b;
	return 0;
}

const struct mc_seg *mc_block_segment(const struct mc_block *b)
{
	return &b->seg->seg;
}

int mc_alloc(struct mc_cache *c, uint64_t size, unsigned int policy, unsigned int flags,
	     void *stream, struct mc_block **out)
{
	unsigned int pool;
	struct mc_pool *p;
	struct mc_block *b;
	int err = 0;

	if (!size || policy >= MC_POLICIES || flags & ~MC_BYPASS)
		return EINVAL;
	if (size > MC_SIZE_MAX)
		return ENOMEM;
	if (flags & MC_BYPASS) {
		pthread_mutex_lock(&c->lock);
		reclaim_dedicated(c, c->dedicated_pending != NULL);
		pthread_mutex_unlock(&c->lock);
		return alloc_dedicated(c, size, policy, out);
	}
	size = mc_round(size);
	pool = policy * 2 + (size >= MC_SMALL_MAX);
	p = &c->pools[pool];
	pthread_mutex_lock(&c->lock);
	/* What the streams are known to be done with merges back first. */
	reclaim(c, p, false);
	b = find(c, p, size, stream);
	if (!b && p->pending) {
		/* Rather than the kernel: blocks whose work may be over by now. */
		reclaim(c, p, true);
		b = find(c, p, size, stream);
	}
	if (!b) {
		err = grow(c, pool, size, &b);
		if (err == ENOMEM) {
			reclaim_all(c, true);
			release_idle(c, 0);
			err = grow(c, pool, size, &b);
		}
	}
	if (!err)
		err = take(c, b, size);
	pthread_mutex_unlock(&c->lock);
	if (!err)
		*out = b;
	return err;
}

static void drop_holds(struct mc_cache *c, const struct mc_wait *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		c->ops->hold(c->ctx, w[i].stream, false);
}

/* A fence for what the streams have issued so far; NULL if they are idle. */
static struct mc_fence *fence_new(struct mc_cache *c, void *stream)
{
	size_t cap, n;
	struct mc_fence *f;

	if (stream) {
		uint64_t seq = c->ops->issued(c->ctx, stream);

		if (c->ops->reached(c->ctx, stream, seq, false))
			return NULL;
		f = malloc(sizeof(*f) + sizeof(f->w[0]));
		if (!f)
			return (struct mc_fence *)-1;
		c->ops->hold(c->ctx, stream, true);
		f->w[0] = (struct mc_wait){ .stream = stream, .seq = seq };
		f->n = 1;
	} else {
		struct mc_wait first[8], *w = first;

		/* Idle streams, the common case, cost no allocation. */
		cap = 8;
		while ((n = c->ops->busy(c->ctx, w, cap)) > cap) {
			/* More were busy than there was room for: again, with room. */
			drop_holds(c, w, cap);
			if (w != first)
				free(w);
			cap = n;
			w = malloc(cap * sizeof(*w));
			if (!w)
				return (struct mc_fence *)-1;
		}
		f = n ? malloc(sizeof(*f) + n * sizeof(f->w[0])) : NULL;
		if (f)
			memcpy(f->w, w, n * sizeof(*w));
		else
			drop_holds(c, w, n);
		if (w != first)
			free(w);
		if (!n)
			return NULL;
		if (!f)
			return (struct mc_fence *)-1;
		for (size_t i = 0; i < n; i++)
			f->w[i].done = false;
		f->n = n;
	}
	f->refs = 1;
	f->reached = false;
	return f;
}

/*
 * Under c->lock: what a release waits for (NULL: nothing, or no memory
 * to say what, as before the cache); first what earlier ones waited for.
 */
static struct mc_fence *release_fence(struct mc_cache *c, void *stream)
{
	struct mc_fence *f;

	reclaim_dedicated(c, false);
	reclaim_deferred(c, false);
	f = fence_new(c, stream);
	return f == (struct mc_fence *)-1 ? NULL : f;
}

void mc_free(struct mc_cache *c, struct mc_block *b, void *stream)
{
	struct mc_fence *f;

	if (b->seg->seg.dedicated) {
		/*
		 * Nothing else lives in it, but the driver holds a buffer only
		 * for the tasks that name it: a kernel launch's tensors are in
		 * its argument block, which the driver never reads. So it goes
		 * back to the kernel once the work that may use it completed.
		 */
		pthread_mutex_lock(&c->lock);
		f = release_fence(c, stream);
		if (!f) {
			dedicated_release(c, b);
		} else {
			b->state = MC_PENDING;
			b->fence = f;
			list_push(&c->dedicated_pending, b);
		}
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_lock(&c->lock);
	f = fence_new(c, stream);
	if (f == (struct mc_fence *)-1) {
		/* No memory to remember what to wait for: never reuse it. */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!f) {
		make_free(c, b);
	} else {
		b->state = MC_PENDING;
		b->fence = f;
		list_push(&pool_of(c, b)->pending, b);
	}
	pthread_mutex_unlock(&c->lock);
}

void mc_defer(struct mc_cache *c, void (*release)(void *arg), void *arg, void *stream)
{
	struct mc_deferred *d = NULL;
	struct mc_fence *f;

	pthread_mutex_lock(&c->lock);
	f = release_fence(c, stream);
	if (f)
		d = malloc(sizeof(*d));
	if (d) {
		*d = (struct mc_deferred){ .fence = f, .release = release, .arg = arg,
					   .next = c->deferred };
		c->deferred = d;
	} else {
		if (f)
			fence_put(c, f);
		release(arg);
	}
	pthread_mutex_unlock(&c->lock);
}

void mc_trim(struct mc_cache *c, uint64_t keep)
{
	pthread_mutex_lock(&c->lock);
	reclaim_all(c, true);
	release_idle(c, keep);
	pthread_mutex_unlock(&c->lock);
}

void mc_set_threshold(struct mc_cache *c, uint64_t bytes)
{
	pthread_mutex_lock(&c->lock);
	c->threshold = bytes;
	release_idle(c, bytes);
	pthread_mutex_unlock(&c->lock);
}

void mc_get_stats(struct mc_cache *c, struct mc_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}

void mc_destroy(struct mc_cache *c)
{
	struct mc_segment *s, *sn;

	if (!c)
		return;
	while (c->deferred) {
		struct mc_deferred *d = c->deferred;

		c->deferred = d->next;
		fence_put(c, d->fence);
		d->release(d->arg);
		free(d);
	}
	for (s = c->segments; s; s = sn) {
		struct mc_block *b, *bn;

		sn = s->next;
		for (b = s->first; b; b = bn) {
			bn = b->next;
			if (b->state == MC_PENDING)
				fence_put(c, b->fence);
			free(b);
		}
		c->ops->seg_free(c->ctx, &s->seg);
		free(s);
	}
	for (s = c->dedicated; s; s = sn) {
		sn = s->next;
		if (s->first->state == MC_PENDING)
			fence_put(c, s->first->fence);
		free(s->first);
		c->ops->seg_free(c->ctx, &s->seg);
		free(s);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}
