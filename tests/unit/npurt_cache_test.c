// SPDX-License-Identifier: MIT
/*
 * libnpurt's caching allocator (userspace/runtime/mem_cache.c) on the host:
 * the segments come from a fake kernel that counts them and the streams
 * are fakes whose progress the tests set. Size classes, splitting and
 * merging, best fit, the release threshold, trimming, running out of
 * device memory, the bypass, and when freed blocks may be used again.
 * Also built with -fsanitize=address,undefined (build/tests/unit-san/).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "mem_cache.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

struct fake_stream {
	uint64_t issued;
	uint64_t done;		/* what the host knows */
	uint64_t device_done;	/* what a poll of the kernel would say */
	int holds;
};

struct fake {
	uint64_t next_addr;
	uint64_t budget;	/* bytes of device memory */
	uint64_t held;		/* in live segments */
	int live, dedicated;
	int allocs, frees, polls;
	uint64_t last_size;
	unsigned int last_policy;
	struct fake_stream *streams[8];
	int nstreams;
};

static int fake_seg_alloc(void *ctx, uint64_t size, unsigned int policy, bool dedicated,
			  struct mc_seg *seg)
{
	struct fake *f = ctx;

	f->allocs++;
	f->last_size = size;
	f->last_policy = policy;
	size = (size + 4095) / 4096 * 4096;	/* the kernel rounds to pages */
	if (f->held + size > f->budget)
		return ENOMEM;
	seg->host = malloc(size);
	if (!seg->host)
		return ENOMEM;
	seg->addr = f->next_addr;
	seg->size = size;
	seg->page_size = policy == 2 ? 4096 : 2 * MiB;
	seg->handle = (uint32_t)f->allocs;
	/* A gap: neighbouring segments never look like one. */
	f->next_addr += size + 2 * MiB;
	f->held += size;
	f->live++;
	f->dedicated += dedicated;
	return 0;
}

static void fake_seg_free(void *ctx, const struct mc_seg *seg)
{
	struct fake *f = ctx;

	free(seg->host);
	f->held -= seg->size;
	f->live--;
	f->dedicated -= seg->dedicated;
	f->frees++;
}

static uint64_t fake_issued(void *ctx, void *stream)
{
	return ((struct fake_stream *)stream)->issued;
}

static bool fake_reached(void *ctx, void *stream, uint64_t seq, bool poll)
{
	struct fake_stream *s = stream;

	if (poll) {
		((struct fake *)ctx)->polls++;
		s->done = s->device_done;
	}
	return s->done >= seq;
}

static void fake_hold(void *ctx, void *stream, bool take)
{
	((struct fake_stream *)stream)->holds += take ? 1 : -1;
}

static size_t fake_busy(void *ctx, struct mc_wait *w, size_t max)
{
	struct fake *f = ctx;
	size_t n = 0;

	for (int i = 0; i < f->nstreams; i++) {
		struct fake_stream *s = f->streams[i];

		if (s->done >= s->issued)
			continue;
		if (n < max) {
			w[n].stream = s;
			w[n].seq = s->issued;
			s->holds++;
		}
		n++;
	}
	return n;
}

static const struct mc_ops fake_ops = {
	.seg_alloc = fake_seg_alloc,
	.seg_free = fake_seg_free,
	.issued = fake_issued,
	.reached = fake_reached,
	.hold = fake_hold,
	.busy = fake_busy,
};

FIXTURE(cache) {
	struct fake f;
	struct fake_stream s[3];
	struct mc_cache *c;
};

FIXTURE_SETUP(cache)
{
	memset(&self->f, 0, sizeof(self->f));
	memset(self->s, 0, sizeof(self->s));
	self->f.next_addr = 1ull << 32;
	self->f.budget = 1ull << 30;
	for (int i = 0; i < 3; i++)
		self->f.streams[i] = &self->s[i];
	self->f.nstreams = 3;
	self->c = mc_create(&fake_ops, &self->f);
	ASSERT_NE(NULL, self->c);
}

/* Every test gives back what it took: no segment, no stream hold stays. */
FIXTURE_TEARDOWN(cache)
{
	mc_destroy(self->c);
	EXPECT_EQ(0, self->f.live);
	EXPECT_EQ(0, self->f.held);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, self->s[i].holds);
}

static struct mc_block *get(struct mc_cache *c, uint64_t size, void *stream)
{
	struct mc_block *b = NULL;

	return mc_alloc(c, size, 0, 0, stream, &b) ? NULL : b;
}

static struct mc_stats stats(struct mc_cache *c)
{
	struct mc_stats st;

	mc_get_stats(c, &st);
	return st;
}

static bool overlap(const struct mc_block *a, const struct mc_block *b)
{
	return a->addr < b->addr + b->size && b->addr < a->addr + a->size;
}

TEST_F(cache, small_requests_round_to_512_bytes_and_share_a_segment)
{
	static const uint64_t ask[] = { 1, 512, 513, 1000, 300 * KiB + 1, MiB - 512 };
	static const uint64_t want[] = { 512, 512, 1024, 1024, 300 * KiB + 512, MiB - 512 };
	struct mc_block *b[6];

	for (int i = 0; i < 6; i++) {
		b[i] = get(self->c, ask[i], NULL);
		ASSERT_NE(NULL, b[i]);
		EXPECT_EQ(want[i], b[i]->size);
		EXPECT_EQ(0, b[i]->addr % 512);
		EXPECT_EQ((char *)mc_block_segment(b[i])->host + (b[i]->addr - mc_block_segment(b[i])->addr),
			  (char *)b[i]->host);
		memset(b[i]->host, i, b[i]->size);	/* ASan: inside its segment */
		for (int j = 0; j < i; j++)
			EXPECT_FALSE(overlap(b[i], b[j]));
	}
	/* 1.3 MiB in all: one 2 MiB segment. */
	EXPECT_EQ(1, self->f.allocs);
	EXPECT_EQ(2 * MiB, self->f.last_size);
	EXPECT_EQ(2 * MiB, stats(self->c).reserved);
	EXPECT_EQ(want[0] + want[1] + want[2] + want[3] + want[4] + want[5], stats(self->c).in_use);
	/* 700 KiB fits what is left, 800 KiB more does not: a second segment. */
	ASSERT_NE(NULL, get(self->c, 700 * KiB, NULL));
	EXPECT_EQ(1, self->f.allocs);
	ASSERT_NE(NULL, get(self->c, 100 * KiB, NULL));
	EXPECT_EQ(2, self->f.allocs);
	EXPECT_EQ(0, mc_round(0));
	EXPECT_EQ(MiB, mc_round(MiB - 511));
	EXPECT_EQ(MiB + 4 * KiB, mc_round(MiB + 1));
}

TEST_F(cache, large_requests_round_to_4k_from_segments_of_2m_multiples)
{
	struct mc_block *a = get(self->c, MiB, NULL), *b = get(self->c, 3 * MiB + 1, NULL);

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(MiB, a->size);
	EXPECT_EQ(3 * MiB + 4 * KiB, b->size);
	EXPECT_EQ(4 * MiB, self->f.last_size);
	EXPECT_EQ(0, b->addr % (4 * KiB));
	/* Small ones never come from a large segment, and the other way round. */
	ASSERT_NE(NULL, get(self->c, 4 * KiB, NULL));
	EXPECT_EQ(3, self->f.allocs);
	ASSERT_NE(NULL, get(self->c, MiB - 4 * KiB, NULL));	/* small: its segment */
	ASSERT_NE(NULL, get(self->c, MiB, NULL));		/* large: a's rest */
	EXPECT_EQ(3, self->f.allocs);
}

TEST_F(cache, page_policies_have_pools_of_their_own)
{
	struct mc_block *b[MC_POLICIES];

	for (unsigned int p = 0; p < MC_POLICIES; p++) {
		ASSERT_EQ(0, mc_alloc(self->c, 4 * KiB, p, 0, NULL, &b[p]));
		EXPECT_EQ(p, self->f.last_policy);
		EXPECT_EQ(p == 2 ? 4096 : 2 * MiB, b[p]->page_size);
	}
	EXPECT_EQ(MC_POLICIES, self->f.allocs);
	EXPECT_EQ(EINVAL, mc_alloc(self->c, 4 * KiB, MC_POLICIES, 0, NULL, &b[0]));
	EXPECT_EQ(EINVAL, mc_alloc(self->c, 0, 0, 0, NULL, &b[0]));
	EXPECT_EQ(EINVAL, mc_alloc(self->c, 4 * KiB, 0, 2, NULL, &b[0]));
	EXPECT_EQ(ENOMEM, mc_alloc(self->c, UINT64_MAX, 0, 0, NULL, &b[0]));
}

TEST_F(cache, repeated_alloc_and_free_never_reach_the_kernel)
{
	static const uint64_t sizes[] = { 100, 4 * KiB, 64 * KiB, 700 * KiB, 2 * MiB, 5 * MiB + 1 };
	int allocs = 0;

	for (int round = 0; round < 2000; round++) {
		struct mc_block *b[6];

		for (int i = 0; i < 6; i++)
			ASSERT_NE(NULL, b[i] = get(self->c, sizes[i], NULL));
		for (int i = 0; i < 6; i++)
			mc_free(self->c, b[(i + round) % 6], NULL);
		if (!round)
			allocs = self->f.allocs;
	}
	EXPECT_EQ(allocs, self->f.allocs);
	EXPECT_EQ(0, self->f.frees);
	EXPECT_EQ(0, stats(self->c).in_use);
	EXPECT_EQ(self->f.held, stats(self->c).idle);
}

TEST_F(cache, freed_neighbours_merge_until_segments_are_whole)
{
	struct mc_block *b[8], *big[4];
	int order[8] = { 0, 2, 1, 7, 5, 6, 3, 4 };	/* both sides, one side, none */

	for (int i = 0; i < 8; i++)
		ASSERT_NE(NULL, b[i] = get(self->c, 256 * KiB, NULL));
	ASSERT_EQ(1, self->f.allocs);
	for (int i = 0; i < 8; i++)
		mc_free(self->c, b[order[i]], NULL);
	EXPECT_EQ(2 * MiB, stats(self->c).idle);
	/* Only a whole segment holds these: the eight blocks became one. */
	for (int i = 0; i < 2; i++)
		ASSERT_NE(NULL, big[i] = get(self->c, 1000 * KiB, NULL));
	EXPECT_EQ(1, self->f.allocs);
	mc_free(self->c, big[0], NULL);
	mc_free(self->c, big[1], NULL);

	/* Large: an 8 MiB segment split in four, its middle merged back. */
	ASSERT_NE(NULL, b[0] = get(self->c, 8 * MiB, NULL));
	ASSERT_EQ(2, self->f.allocs);
	mc_free(self->c, b[0], NULL);
	for (int i = 0; i < 4; i++) {
		ASSERT_NE(NULL, big[i] = get(self->c, 2 * MiB, NULL));
		EXPECT_EQ(b[0]->addr + i * 2 * MiB, big[i]->addr);
	}
	mc_free(self->c, big[1], NULL);
	mc_free(self->c, big[2], NULL);
	ASSERT_NE(NULL, b[1] = get(self->c, 4 * MiB, NULL));
	EXPECT_EQ(big[0]->addr + 2 * MiB, b[1]->addr);
	mc_free(self->c, b[1], NULL);
	mc_free(self->c, big[0], NULL);
	mc_free(self->c, big[3], NULL);
	ASSERT_NE(NULL, b[2] = get(self->c, 8 * MiB, NULL));
	EXPECT_EQ(2, self->f.allocs);
	mc_free(self->c, b[2], NULL);
	EXPECT_EQ(10 * MiB, stats(self->c).idle);
}

TEST_F(cache, the_smallest_free_block_that_fits_is_taken)
{
	struct mc_block *a, *b, *c, *d, *e, *got;

	ASSERT_NE(NULL, a = get(self->c, 16 * MiB, NULL));
	mc_free(self->c, a, NULL);
	ASSERT_NE(NULL, a = get(self->c, 3 * MiB, NULL));
	ASSERT_NE(NULL, b = get(self->c, MiB, NULL));
	ASSERT_NE(NULL, c = get(self->c, 2 * MiB, NULL));
	ASSERT_NE(NULL, d = get(self->c, MiB, NULL));
	ASSERT_NE(NULL, e = get(self->c, 9 * MiB, NULL));
	mc_free(self->c, a, NULL);
	mc_free(self->c, c, NULL);
	/* Holes of 3 MiB (first) and 2 MiB: 2 MiB goes in the 2 MiB one. */
	ASSERT_NE(NULL, got = get(self->c, 2 * MiB, NULL));
	EXPECT_EQ(c, got);
	ASSERT_NE(NULL, got = get(self->c, 2 * MiB, NULL));
	EXPECT_EQ(a, got);
	EXPECT_EQ(1, self->f.allocs);
}

TEST_F(cache, free_segments_beyond_the_threshold_go_back_oldest_first)
{
	struct mc_block *b[3];
	uint64_t first;

	mc_set_threshold(self->c, 4 * MiB);
	for (int i = 0; i < 3; i++)
		ASSERT_NE(NULL, b[i] = get(self->c, 4 * MiB, NULL));
	first = b[0]->addr;
	for (int i = 0; i < 3; i++)
		mc_free(self->c, b[i], NULL);
	EXPECT_EQ(2, self->f.frees);
	EXPECT_EQ(4 * MiB, stats(self->c).idle);
	EXPECT_EQ(4 * MiB, stats(self->c).reserved);
	EXPECT_EQ(12 * MiB, stats(self->c).reserved_peak);
	ASSERT_NE(NULL, b[0] = get(self->c, 4 * MiB, NULL));
	EXPECT_NE(first, b[0]->addr);		/* the newest stayed */
	EXPECT_EQ(3, self->f.allocs);
	/* Lowering it gives back at once; 0 keeps nothing. */
	mc_free(self->c, b[0], NULL);
	mc_set_threshold(self->c, 0);
	EXPECT_EQ(0, self->f.live);
	ASSERT_NE(NULL, b[0] = get(self->c, 100, NULL));
	mc_free(self->c, b[0], NULL);
	EXPECT_EQ(0, self->f.live);
}

TEST_F(cache, trim_gives_back_free_segments_and_keeps_used_ones)
{
	struct mc_block *b[4];

	for (int i = 0; i < 4; i++)
		ASSERT_NE(NULL, b[i] = get(self->c, 2 * MiB, NULL));
	for (int i = 1; i < 4; i++)
		mc_free(self->c, b[i], NULL);
	EXPECT_EQ(0, self->f.frees);
	mc_trim(self->c, 2 * MiB);
	EXPECT_EQ(2, self->f.frees);
	EXPECT_EQ(2 * MiB, stats(self->c).idle);
	mc_trim(self->c, 0);
	EXPECT_EQ(1, self->f.live);		/* b[0]'s */
	EXPECT_EQ(2 * MiB, stats(self->c).in_use);
	mc_free(self->c, b[0], NULL);
	mc_trim(self->c, 0);
	EXPECT_EQ(0, self->f.live);
	EXPECT_EQ(0, stats(self->c).reserved);
	EXPECT_EQ(8 * MiB, stats(self->c).in_use_peak);
}

TEST_F(cache, out_of_device_memory_trims_and_tries_once_more)
{
	struct mc_block *b[2], *big = (struct mc_block *)0x1;

	self->f.budget = 10 * MiB;
	ASSERT_NE(NULL, b[0] = get(self->c, 4 * MiB, NULL));
	ASSERT_NE(NULL, b[1] = get(self->c, 4 * MiB, NULL));
	mc_free(self->c, b[0], NULL);
	mc_free(self->c, b[1], NULL);
	/* 8 MiB cached, 2 MiB free in the device: the cache makes room. */
	ASSERT_NE(NULL, big = get(self->c, 6 * MiB, NULL));
	EXPECT_EQ(4, self->f.allocs);		/* two, a failure, the retry */
	EXPECT_EQ(2, self->f.frees);
	/* Nothing to give back: one retry, then ENOMEM and *out untouched. */
	b[0] = (struct mc_block *)0x1;
	EXPECT_EQ(ENOMEM, mc_alloc(self->c, 6 * MiB, 0, 0, NULL, &b[0]));
	EXPECT_EQ((struct mc_block *)0x1, b[0]);
	EXPECT_EQ(6, self->f.allocs);
	/* The bypass makes room the same way. */
	mc_free(self->c, big, NULL);
	ASSERT_EQ(0, mc_alloc(self->c, 8 * MiB, 0, MC_BYPASS, NULL, &big));
	EXPECT_EQ(0, stats(self->c).reserved);
	mc_free(self->c, big, NULL);
}

/*
 * A dedicated buffer is never cached, but a kernel launch's tensors are
 * not held by the driver: it goes back to the kernel once the work that
 * may use it has completed, at once when there is none.
 */
TEST_F(cache, bypass_makes_a_buffer_of_its_own_and_gives_it_back_after_its_work)
{
	struct mc_block *a, *b;

	self->s[0].issued = 5;			/* busy: the cache would wait */
	ASSERT_EQ(0, mc_alloc(self->c, 5000, 2, MC_BYPASS, NULL, &a));
	EXPECT_EQ(5000, self->f.last_size);	/* exactly what was asked */
	EXPECT_EQ(2, self->f.last_policy);
	EXPECT_EQ(8192, a->size);
	EXPECT_TRUE(mc_block_segment(a)->dedicated);
	EXPECT_EQ(1, self->f.dedicated);
	EXPECT_EQ(0, stats(self->c).reserved);
	EXPECT_EQ(0, stats(self->c).in_use);
	mc_free(self->c, a, &self->s[0]);
	EXPECT_EQ(1, self->f.live);		/* stream 0 may still use it */
	EXPECT_EQ(1, self->s[0].holds);
	self->s[0].device_done = 5;
	ASSERT_EQ(0, mc_alloc(self->c, 5000, 2, MC_BYPASS, NULL, &b));
	EXPECT_EQ(1, self->f.live);		/* the first went back, by a poll */
	EXPECT_EQ(0, self->s[0].holds);
	EXPECT_EQ(2, self->f.allocs);		/* never reused */
	mc_free(self->c, b, NULL);
	EXPECT_EQ(0, self->f.live);		/* nothing in flight: at once */
	/* A cached block is no dedicated buffer. */
	ASSERT_NE(NULL, a = get(self->c, 5000, NULL));
	EXPECT_FALSE(mc_block_segment(a)->dedicated);
	self->s[0].issued = 6;
	mc_free(self->c, a, NULL);
	EXPECT_EQ(1, self->s[0].holds);		/* the cached one waits for it */
}

TEST_F(cache, a_stream_reuses_what_it_freed_at_once_others_after_completion)
{
	struct fake_stream *s = &self->s[0], *t = &self->s[1];
	struct mc_block *a, *got;
	uint64_t addr;

	s->issued = 5;
	s->done = s->device_done = 3;
	ASSERT_NE(NULL, a = get(self->c, 64 * KiB, s));
	addr = a->addr;
	mc_free(self->c, a, s);
	EXPECT_EQ(1, s->holds);
	EXPECT_EQ(64 * KiB, stats(self->c).in_use);	/* not reusable by all */
	/* Another stream, or anyone, gets other memory... */
	ASSERT_NE(NULL, got = get(self->c, 64 * KiB, t));
	EXPECT_NE(addr, got->addr);
	mc_free(self->c, got, t);
	ASSERT_NE(NULL, got = get(self->c, 64 * KiB, NULL));
	EXPECT_NE(addr, got->addr);
	mc_free(self->c, got, NULL);
	/* ...the stream itself gets its block back. */
	ASSERT_NE(NULL, a = get(self->c, 64 * KiB, s));
	EXPECT_EQ(addr, a->addr);
	EXPECT_EQ(1, s->holds);			/* the plain free above waits for s */
	s->issued = 6;
	mc_free(self->c, a, s);
	/* Once the stream is past the free, it is everyone's. */
	s->done = s->device_done = 6;
	ASSERT_NE(NULL, got = get(self->c, 64 * KiB, t));
	EXPECT_EQ(addr, got->addr);
	mc_free(self->c, got, NULL);
	EXPECT_EQ(1, self->f.allocs);
}

TEST_F(cache, completion_is_found_by_polling_before_growing)
{
	struct fake_stream *s = &self->s[0];
	struct mc_block *a, *got;

	s->issued = 2;
	s->done = 1;
	ASSERT_NE(NULL, a = get(self->c, 4 * MiB, s));
	mc_free(self->c, a, s);
	s->device_done = 2;			/* the host has not heard yet */
	EXPECT_EQ(0, self->f.polls);
	ASSERT_NE(NULL, got = get(self->c, 4 * MiB, NULL));
	EXPECT_EQ(a, got);
	EXPECT_EQ(1, self->f.polls);
	EXPECT_EQ(1, self->f.allocs);
	mc_free(self->c, got, NULL);
}

TEST_F(cache, a_plain_free_waits_for_every_busy_stream)
{
	struct fake_stream *s = &self->s[0], *t = &self->s[1], *u = &self->s[2];
	struct mc_block *a, *got;

	s->issued = 5, s->done = s->device_done = 3;
	t->issued = 2, t->done = t->device_done = 2;	/* idle: not waited for */
	u->issued = 7, u->done = u->device_done = 6;
	ASSERT_NE(NULL, a = get(self->c, 8 * KiB, NULL));
	mc_free(self->c, a, NULL);
	EXPECT_EQ(1, s->holds);
	EXPECT_EQ(0, t->holds);
	EXPECT_EQ(1, u->holds);
	s->done = s->device_done = 5;
	ASSERT_NE(NULL, got = get(self->c, 8 * KiB, NULL));
	EXPECT_NE(a->addr, got->addr);		/* u may still use it */
	mc_free(self->c, got, NULL);		/* u busy: pending too */
	/* s's own later work comes after its part, but u's may not. */
	ASSERT_NE(NULL, got = get(self->c, 8 * KiB, s));
	EXPECT_NE(a->addr, got->addr);
	mc_free(self->c, got, NULL);
	/* u is the one left: its own work is ordered, it may take it. */
	ASSERT_NE(NULL, got = get(self->c, 8 * KiB, u));
	EXPECT_EQ(a->addr, got->addr);
	mc_free(self->c, got, NULL);
	u->done = u->device_done = 7;
	ASSERT_NE(NULL, got = get(self->c, 8 * KiB, NULL));
	ASSERT_NE(NULL, got = get(self->c, 8 * KiB, NULL));
	ASSERT_NE(NULL, got = get(self->c, 8 * KiB, NULL));
	EXPECT_EQ(1, self->f.allocs);
	EXPECT_EQ(24 * KiB, stats(self->c).in_use);
	mc_trim(self->c, 0);
	EXPECT_EQ(0, s->holds + u->holds);
}

TEST_F(cache, all_streams_idle_makes_a_plain_free_immediate)
{
	struct mc_block *a, *got;

	self->s[0].issued = self->s[0].done = 9;
	ASSERT_NE(NULL, a = get(self->c, 100, NULL));
	mc_free(self->c, a, NULL);
	EXPECT_EQ(0, stats(self->c).in_use);
	ASSERT_NE(NULL, got = get(self->c, 100, NULL));
	EXPECT_EQ(a, got);
	mc_free(self->c, got, &self->s[0]);	/* idle stream: immediate too */
	EXPECT_EQ(0, stats(self->c).in_use);
	EXPECT_EQ(0, self->s[0].holds);
}

TEST_F(cache, a_pending_block_split_by_its_stream_keeps_the_rest_pending)
{
	struct fake_stream *s = &self->s[0];
	struct mc_block *a, *part, *got;
	uint64_t addr;

	s->issued = 4, s->done = s->device_done = 1;
	ASSERT_NE(NULL, a = get(self->c, 6 * MiB, s));
	addr = a->addr;
	mc_free(self->c, a, s);
	ASSERT_NE(NULL, part = get(self->c, 2 * MiB, s));
	EXPECT_EQ(a, part);
	EXPECT_EQ(2 * MiB, part->size);
	EXPECT_EQ(1, s->holds);			/* the rest still waits */
	ASSERT_NE(NULL, got = get(self->c, 4 * MiB, NULL));
	EXPECT_EQ(2, self->f.allocs);		/* not the rest */
	mc_free(self->c, got, NULL);
	s->done = s->device_done = 4;
	mc_free(self->c, part, NULL);
	/* All of it free again, and whole. */
	ASSERT_NE(NULL, got = get(self->c, 6 * MiB, NULL));
	EXPECT_EQ(addr, got->addr);
	EXPECT_EQ(2, self->f.allocs);
	mc_free(self->c, got, NULL);
	EXPECT_EQ(0, s->holds);
}

TEST_F(cache, destroying_drops_pending_blocks_and_their_holds)
{
	struct mc_block *a;

	self->s[0].issued = 3;
	ASSERT_NE(NULL, a = get(self->c, 100, NULL));
	mc_free(self->c, a, &self->s[0]);
	ASSERT_NE(NULL, get(self->c, 3 * MiB, NULL));	/* never freed */
	ASSERT_EQ(0, mc_alloc(self->c, 100, 0, MC_BYPASS, NULL, &a));
	EXPECT_EQ(1, self->s[0].holds);
	/* The teardown checks that all three segments and the hold went. */
}

struct worker {
	struct mc_cache *c;
	int id;
	int bad;
};

static void *churn(void *arg)
{
	struct worker *w = arg;
	struct mc_block *b[8] = { 0 };

	for (int i = 0; i < 20000; i++) {
		int k = (i * 7 + w->id) % 8;

		if (b[k]) {
			for (uint64_t j = 0; j < b[k]->size; j += 512)
				w->bad += ((unsigned char *)b[k]->host)[j] != (unsigned char)(w->id + k);
			mc_free(w->c, b[k], NULL);
			b[k] = NULL;
		} else if (!mc_alloc(w->c, 512 + (uint64_t)((i * 131) % 64) * 4096, 0, 0, NULL, &b[k])) {
			memset(b[k]->host, w->id + k, b[k]->size);
		}
	}
	for (int k = 0; k < 8; k++)
		if (b[k])
			mc_free(w->c, b[k], NULL);
	return NULL;
}

TEST_F(cache, threads_never_get_the_same_memory)
{
	struct worker w[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .c = self->c, .id = i * 16 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn, &w[i]));
	}
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].bad);
	}
	EXPECT_EQ(0, stats(self->c).in_use);
}

TEST_HARNESS_MAIN
