// SPDX-License-Identifier: MIT
/*
 * The live ranges behind host pointers (see mem_ranges.h). A sorted array:
 * allocations are rarer than copies, and a copy's lookup is a binary
 * search over contiguous memory under a read lock that many threads share.
 */
#include "mem_ranges.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void mr_init(struct mr_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_rwlock_init(&t->lock, NULL);
}

void mr_destroy(struct mr_table *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
	pthread_rwlock_destroy(&t->lock);
}

/* The number of ranges starting at or below p. */
static size_t upper(const struct mr_table *t, uint64_t p)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].start <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does [p, p + len) meet range r? len > 0; a range that wraps ends at the top. */
static int meets(const struct mr_range *r, uint64_t p, uint64_t len)
{
	uint64_t last = p + (len - 1);

	if (last < p)
		last = UINT64_MAX;
	return r->start <= last && p <= r->start + (r->size - 1);
}

static bool same(const struct mr_range *a, const struct mr_range *b)
{
	return a->start == b->start && a->size == b->size;
}

/* Insert r where it sorts (after its equals, if `shared` allows them); write lock held. */
static int insert(struct mr_table *t, const struct mr_range *r, bool shared)
{
	size_t i;

	if (!r->size || r->start + (r->size - 1) < r->start)
		return EINVAL;
	i = upper(t, r->start);
	if ((i && meets(&t->v[i - 1], r->start, r->size) && !(shared && same(&t->v[i - 1], r))) ||
	    (i < t->n && meets(&t->v[i], r->start, r->size)))
		return EEXIST;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct mr_range *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i] = *r;
	t->n++;
	return 0;
}

int mr_insert(struct mr_table *t, const struct mr_range *r)
{
	int err;

	pthread_rwlock_wrlock(&t->lock);
	err = insert(t, r, false);
	pthread_rwlock_unlock(&t->lock);
	return err;
}

int mr_insert_shared(struct mr_table *t, const struct mr_range *r)
{
	int err;

	pthread_rwlock_wrlock(&t->lock);
	err = insert(t, r, true);
	pthread_rwlock_unlock(&t->lock);
	return err;
}

int mr_remove(struct mr_table *t, uint64_t start, const void *owner)
{
	size_t i;
	int err = ENOENT;

	pthread_rwlock_wrlock(&t->lock);
	/* Among the entries starting there (shared ones: several), its owner's. */
	for (i = upper(t, start); i && t->v[i - 1].start == start; i--) {
		if (t->v[i - 1].owner != owner)
			continue;
		memmove(&t->v[i - 1], &t->v[i], (t->n - i) * sizeof(*t->v));
		t->n--;
		err = 0;
		break;
	}
	pthread_rwlock_unlock(&t->lock);
	return err;
}

void mr_remove_owner(struct mr_table *t, const void *owner)
{
	size_t j = 0;

	pthread_rwlock_wrlock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].owner != owner)
			t->v[j++] = t->v[i];
	t->n = j;
	pthread_rwlock_unlock(&t->lock);
}

enum mr_hit mr_find(struct mr_table *t, uint64_t p, uint64_t len, struct mr_range *out)
{
	enum mr_hit hit = MR_NONE;
	const struct mr_range *r = NULL;
	size_t i;

	if (!len)
		return MR_NONE;
	pthread_rwlock_rdlock(&t->lock);
	i = upper(t, p);
	/* The range holding p, else the first one after it. */
	if (i && p - t->v[i - 1].start < t->v[i - 1].size)
		r = &t->v[i - 1];
	else if (i < t->n && meets(&t->v[i], p, len))
		r = &t->v[i];
	if (r) {
		*out = *r;
		hit = p >= r->start && len <= r->size - (p - r->start) ? MR_INSIDE : MR_STRADDLE;
	}
	pthread_rwlock_unlock(&t->lock);
	return hit;
}
