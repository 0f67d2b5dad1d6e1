// SPDX-License-Identifier: MIT
/*
 * libnpurt's table of live host ranges (userspace/runtime/mem_ranges.c), on
 * the host: what a lookup finds inside, across and between ranges, at the
 * edges of the address space, after inserts and removes in any order, and
 * under threads looking up while others insert and remove. Also built
 * with -fsanitize=address,undefined (build/tests/unit-san/).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "mem_ranges.h"

static int add(struct mr_table *t, uintptr_t start, size_t size, const void *owner)
{
	struct mr_range r = { .start = start, .size = size, .addr = start * 2, .owner = owner,
			      .kind = (int)(start & 0xff) };

	return mr_insert(t, &r);
}

TEST(lookups_inside_across_and_between)
{
	struct mr_table t;
	struct mr_range r;
	int a, b;

	mr_init(&t);
	ASSERT_EQ(0, add(&t, 0x1000, 0x100, &a));
	ASSERT_EQ(0, add(&t, 0x3000, 0x1000, &b));
	EXPECT_EQ(MR_INSIDE, mr_find(&t, 0x1000, 0x100, &r));
	EXPECT_EQ(0x1000, r.start);
	EXPECT_EQ(&a, r.owner);
	EXPECT_EQ(0x2000, r.addr);
	EXPECT_EQ(MR_INSIDE, mr_find(&t, 0x10ff, 1, &r));
	EXPECT_EQ(MR_INSIDE, mr_find(&t, 0x3800, 0x800, &r));
	EXPECT_EQ(&b, r.owner);
	/* Past the end, before the start, over a whole range. */
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 0x10ff, 2, &r));
	EXPECT_EQ(0x1000, r.start);
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 0x2fff, 2, &r));
	EXPECT_EQ(0x3000, r.start);
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 0x2000, 0x3000, &r));
	EXPECT_EQ(0x3000, r.start);
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 0xfff, 0x10000, &r));
	EXPECT_EQ(0x1000, r.start);	/* the lowest it meets */
	/* Between, below, above: nothing, and *out untouched. */
	r.start = 7;
	EXPECT_EQ(MR_NONE, mr_find(&t, 0x1100, 0x1f00, &r));
	EXPECT_EQ(MR_NONE, mr_find(&t, 0, 0x1000, &r));
	EXPECT_EQ(MR_NONE, mr_find(&t, 0x4000, 1, &r));
	EXPECT_EQ(MR_NONE, mr_find(&t, 0x1000, 0, &r));
	EXPECT_EQ(7, r.start);
	mr_destroy(&t);
}

TEST(the_ends_of_the_address_space)
{
	struct mr_table t;
	struct mr_range r;
	int a;

	mr_init(&t);
	EXPECT_EQ(EINVAL, add(&t, UINTPTR_MAX - 10, 12, &a));	/* wraps */
	EXPECT_EQ(EINVAL, add(&t, 0x1000, 0, &a));
	ASSERT_EQ(0, add(&t, UINTPTR_MAX - 15, 16, &a));	/* ends at the top */
	ASSERT_EQ(0, add(&t, 0, 16, &a));
	EXPECT_EQ(MR_INSIDE, mr_find(&t, UINTPTR_MAX, 1, &r));
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, UINTPTR_MAX, 2, &r));	/* wraps around */
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, UINTPTR_MAX - 100, SIZE_MAX, &r));
	EXPECT_EQ(UINTPTR_MAX - 15, r.start);
	EXPECT_EQ(MR_INSIDE, mr_find(&t, 0, 16, &r));
	EXPECT_EQ(MR_NONE, mr_find(&t, 16, UINTPTR_MAX - 16 - 15, &r));
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 16, UINTPTR_MAX - 16 - 14, &r));
	mr_destroy(&t);
}

TEST(overlaps_are_refused_and_removes_need_the_owner)
{
	struct mr_table t;
	struct mr_range r;
	int a, b;

	mr_init(&t);
	ASSERT_EQ(0, add(&t, 0x1000, 0x1000, &a));
	EXPECT_EQ(EEXIST, add(&t, 0x1000, 1, &b));
	EXPECT_EQ(EEXIST, add(&t, 0x1fff, 1, &b));
	EXPECT_EQ(EEXIST, add(&t, 0x800, 0x801, &b));
	EXPECT_EQ(EEXIST, add(&t, 0x0, 0x10000, &b));
	EXPECT_EQ(0, add(&t, 0x800, 0x800, &b));	/* touching is fine */
	EXPECT_EQ(0, add(&t, 0x2000, 0x10, &b));
	EXPECT_EQ(ENOENT, mr_remove(&t, 0x1000, &b));
	EXPECT_EQ(ENOENT, mr_remove(&t, 0x1001, &a));
	EXPECT_EQ(MR_INSIDE, mr_find(&t, 0x1000, 1, &r));
	EXPECT_EQ(0, mr_remove(&t, 0x1000, &a));
	EXPECT_EQ(MR_NONE, mr_find(&t, 0x1000, 0x1000, &r));
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 0x1000, 0x1001, &r));
	EXPECT_EQ(0x2000, r.start);
	mr_remove_owner(&t, &b);
	EXPECT_EQ(0, t.n);
	EXPECT_EQ(MR_NONE, mr_find(&t, 0, SIZE_MAX, &r));
	mr_destroy(&t);
}

/* Ranges in shuffled order against a flat model of who owns each slot. */
TEST(many_ranges_in_any_order_match_a_model)
{
	enum { N = 3000 };
	static unsigned char live[N];
	struct mr_table t;
	struct mr_range r;
	unsigned int seed = 12345;

	mr_init(&t);
	for (int step = 0; step < 40000; step++) {
		size_t i = (size_t)rand_r(&seed) % N;
		/* Range i is [0x10000 + i * 64, +1..64): slots never overlap. */
		uintptr_t start = 0x10000 + i * 64;
		size_t size = 1 + i % 64;

		if (live[i]) {
			ASSERT_EQ(0, mr_remove(&t, start, &live[i]));
			live[i] = 0;
		} else {
			ASSERT_EQ(0, add(&t, start, size, &live[i]));
			live[i] = 1;
		}
		if (step % 7 == 0) {
			size_t j = (size_t)rand_r(&seed) % N, off = (size_t)rand_r(&seed) % 64;
			uintptr_t p = 0x10000 + j * 64 + off;
			size_t jsize = 1 + j % 64;
			enum mr_hit want = !live[j] || off >= jsize ? MR_NONE :
					   MR_INSIDE;

			/* Within slot j: only range j can hold it. */
			ASSERT_EQ(want, mr_find(&t, p, 1, &r));
			if (want == MR_INSIDE) {
				ASSERT_EQ(0x10000 + j * 64, r.start);
				ASSERT_EQ(&live[j], r.owner);
			}
		}
	}
	mr_destroy(&t);
}

struct churn {
	struct mr_table *t;
	int id;
	int wrong;
};

/* Each thread owns its own slots: its lookups see exactly its own state. */
static void *churn_run(void *arg)
{
	struct churn *c = arg;
	struct mr_range r;

	for (int k = 0; k < 20000; k++) {
		uintptr_t start = 0x100000 * (uintptr_t)(c->id + 1) + (uintptr_t)(k % 100) * 256;

		if (add(c->t, start, 200, c) || mr_find(c->t, start + 199, 1, &r) != MR_INSIDE ||
		    r.owner != c || mr_find(c->t, start + 100, 101, &r) != MR_STRADDLE ||
		    mr_remove(c->t, start, c) || mr_find(c->t, start, 200, &r) != MR_NONE)
			c->wrong++;
	}
	return NULL;
}

TEST(threads_insert_find_and_remove_at_once)
{
	struct mr_table t;
	struct churn c[4];
	pthread_t th[4];

	mr_init(&t);
	for (int i = 0; i < 4; i++) {
		c[i] = (struct churn){ .t = &t, .id = i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_run, &c[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, c[i].wrong);
	}
	EXPECT_EQ(0, t.n);
	mr_destroy(&t);
}

/*
 * One buffer imported twice maps at one device address: each import has
 * an entry of the same range, with its own host address, and the range
 * stays while either does; another overlapping range is still refused.
 */
TEST(a_shared_range_stays_until_its_last_owner_goes)
{
	struct mr_range r = { .start = 0x10000, .size = 0x2000, .addr = 0x7000 }, got;
	struct mr_table t;
	int first, second;

	mr_init(&t);
	r.owner = &first;
	ASSERT_EQ(0, mr_insert_shared(&t, &r));
	EXPECT_EQ(EEXIST, mr_insert(&t, &r));		/* only where sharing is asked */
	r.owner = &second;
	r.addr = 0x9000;
	ASSERT_EQ(0, mr_insert_shared(&t, &r));
	EXPECT_EQ(2, t.n);
	r.size = 0x1000;
	EXPECT_EQ(EEXIST, mr_insert_shared(&t, &r));
	r.start = 0x11000;
	EXPECT_EQ(EEXIST, mr_insert_shared(&t, &r));
	r.size = 0;
	EXPECT_EQ(EINVAL, mr_insert_shared(&t, &r));
	/* The first goes: the range stays, and names the second's host address. */
	EXPECT_EQ(0, mr_remove(&t, 0x10000, &first));
	EXPECT_EQ(ENOENT, mr_remove(&t, 0x10000, &first));
	ASSERT_EQ(MR_INSIDE, mr_find(&t, 0x11000, 0x1000, &got));
	EXPECT_EQ(0x9000, got.addr);
	EXPECT_EQ(&second, got.owner);
	EXPECT_EQ(0, mr_remove(&t, 0x10000, &second));
	EXPECT_EQ(MR_NONE, mr_find(&t, 0x11000, 0x1000, &got));
	mr_destroy(&t);
}

/* Device addresses past 4 GiB, whatever the host's pointer width. */
TEST(device_addresses_are_64_bits)
{
	struct mr_range r = { .start = 0x100000000ull + 0x5000, .size = 0x1000, .owner = &r }, got;
	struct mr_table t;

	mr_init(&t);
	ASSERT_EQ(0, mr_insert_shared(&t, &r));
	EXPECT_EQ(MR_NONE, mr_find(&t, 0x5000, 0x10, &got));
	EXPECT_EQ(MR_INSIDE, mr_find(&t, 0x100005800ull, 0x10, &got));
	EXPECT_EQ(MR_STRADDLE, mr_find(&t, 0x100005ff8ull, 0x10, &got));
	mr_destroy(&t);
}

TEST_HARNESS_MAIN
