// SPDX-License-Identifier: MIT
/*
 * libnpurt memory against npu.ko, on both submission paths: the caching
 * allocator keeps repeated allocations away from the kernel, page
 * policies give the pages asked for, freed memory is reused by streams
 * only when the device is done with it, pinned host memory is what the
 * device copies to and from, buffers are shared with another process,
 * and every call refuses bad arguments with a message naming it.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define KiB (1u << 10)
#define MiB (1u << 20)
#define WORDS (4 * KiB)	/* libnpurt's page of completion words, one per device */

FIXTURE(mem) {
	npurt_device *dev;
	npurt_stream *s, *t;
	npurt_mem *busy;	/* what keeps a stream busy */
};

FIXTURE_VARIANT(mem) {
	const char *env;
};

FIXTURE_VARIANT_ADD(mem, ioctl) { .env = "ioctl" };
FIXTURE_VARIANT_ADD(mem, io_uring) { .env = "io_uring" };

FIXTURE_SETUP(mem)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->t));
	/* Exactly its own 4 MiB segment: no room left beside it. */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4 * MiB, &self->busy));
}

FIXTURE_TEARDOWN(mem)
{
	npurt_stream_destroy(self->s);
	npurt_stream_destroy(self->t);
	npurt_mem_free(self->busy);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
}

static npurt_mem_usage usage(npurt_device *dev)
{
	npurt_mem_usage u = { .size = sizeof(u) };

	if (npurt_mem_get_usage(dev, &u))
		memset(&u, 0xff, sizeof(u));
	return u;
}

/* The driver lets go of a closed buffer once work using it is over. */
static uint64_t context_hbm_settles(npurt_device *dev, uint64_t want)
{
	uint64_t v = usage(dev).context_hbm;

	for (int i = 0; i < 500 && v != want; i++) {
		usleep(10000);
		v = usage(dev).context_hbm;
	}
	return v;
}

/* Tens of milliseconds of work on the device, in front of what follows. */
static int keep_busy(npurt_stream *s, npurt_mem *m)
{
	for (int i = 0; i < 40; i++)
		if (npurt_memset_async(s, npurt_mem_device_addr(m), i, 4 * MiB))
			return -1;
	return 0;
}

static bool all_words(const npurt_mem *m, size_t size, uint32_t v)
{
	const uint32_t *p = npurt_mem_host_ptr(m);

	for (size_t i = 0; i < size / 4; i++)
		if (p[i] != v)
			return false;
	return true;
}

TEST_F(mem, bad_arguments_are_refused_with_the_call_named)
{
	npurt_mem *m = (npurt_mem *)0x1, *ok;
	npurt_mem_usage u = { .size = 8 };
	npurt_device *other;
	npurt_stream *os;
	char page[8192];
	int fd = -7, pipefd[2];

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_flags(NULL, 64, 0, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_alloc_flags"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_flags(self->dev, 64, 0, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_flags(self->dev, 0, 0, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "size is 0"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_flags(self->dev, 64, 1u << 20, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "unknown flags"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_flags(self->dev, 64,
							  NPURT_MEM_HUGE_ONLY | NPURT_MEM_NORMAL_ONLY, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "more than one page policy"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc(self->dev, 0, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_alloc"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_async(NULL, 64, 0, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_alloc_async"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_async(self->s, 64, 1u << 9, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_async(self->s, 0, 0, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_alloc(NULL, 4096, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_host_alloc"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_alloc(self->dev, 0, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_register(self->dev, NULL, 4096, 0, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_host_register"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_register(self->dev, page, 0, 0, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_register(self->dev, page, 4096, 2, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "unknown flags"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_import(NULL, 0, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_import(self->dev, -1, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_import"));
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_import(self->dev, pipefd[0], &m));
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT_EQ((npurt_mem *)0x1, m);

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_get_usage(NULL, &u));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_get_usage(self->dev, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_get_usage(self->dev, &u));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_get_usage"));
	EXPECT_EQ(8, u.size);
	EXPECT_EQ(0, u.device_hbm);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_trim(NULL, 0));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_trim"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_set_release_threshold(NULL, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_export(NULL, &fd));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_export"));

	/* Cached memory cannot be exported; nor can host memory. */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4096, &ok));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_export(ok, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_export(ok, &fd));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_MEM_SHAREABLE"));
	EXPECT_EQ(-7, fd);
	/* free_async: a stream is needed, and of the memory's device. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_free_async(ok, NULL));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_free_async"));
	EXPECT_EQ(NPURT_OK, npurt_mem_free_async(NULL, self->s));
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &other));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(other, NPURT_PRIORITY_NORMAL, &os));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_free_async(ok, os));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "different devices"));
	npurt_stream_destroy(os);
	npurt_device_close(other);
	npurt_mem_free(ok);
	EXPECT_EQ(NULL, npurt_mem_host_ptr(NULL));
	EXPECT_EQ(0, npurt_mem_size(NULL));
	EXPECT_EQ(0, npurt_mem_page_size(NULL));
	npurt_mem_free(NULL);
}

TEST_F(mem, sizes_are_rounded_as_documented)
{
	static const struct { size_t ask, want; uint32_t flags; } c[] = {
		{ 1, 512, 0 },
		{ 1000, 1024, 0 },
		{ 256 * KiB + 1, 256 * KiB + 512, 0 },
		{ MiB, MiB, 0 },
		{ MiB + 1, MiB + 4 * KiB, 0 },
		{ 5000, 8192, NPURT_MEM_NO_CACHE },
		{ 5000, 8192, NPURT_MEM_SHAREABLE | NPURT_MEM_NORMAL_ONLY },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		npurt_mem *m;

		ASSERT_EQ(NPURT_OK, npurt_mem_alloc_flags(self->dev, c[i].ask, c[i].flags, &m))
			TH_LOG("%s", npurt_last_error());
		EXPECT_EQ(c[i].want, npurt_mem_size(m)) TH_LOG("%zu bytes", c[i].ask);
		EXPECT_EQ(0, npurt_mem_device_addr(m) % (c[i].ask < MiB ? 512 : 4096));
		npurt_mem_free(m);
	}
}

TEST_F(mem, page_policies_give_the_pages_asked_for)
{
	static const struct { size_t size; uint32_t flags; size_t page; } c[] = {
		{ 2 * MiB, NPURT_MEM_HUGE_ONLY, 2 * MiB },
		{ 2 * MiB, NPURT_MEM_HUGE_ONLY | NPURT_MEM_NO_CACHE, 2 * MiB },
		{ 2 * MiB, NPURT_MEM_NORMAL_ONLY, 4096 },
		{ 4096, NPURT_MEM_NORMAL_ONLY | NPURT_MEM_NO_CACHE, 4096 },
		{ 4 * MiB, NPURT_MEM_HUGE_FIRST, 2 * MiB },
		{ 4 * MiB, 0, 2 * MiB },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		npurt_mem *m;

		ASSERT_EQ(NPURT_OK, npurt_mem_alloc_flags(self->dev, c[i].size, c[i].flags, &m))
			TH_LOG("%s", npurt_last_error());
		EXPECT_EQ(c[i].page, npurt_mem_page_size(m)) TH_LOG("case %zu", i);
		/* The device writes where the CPU reads. */
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(m), 0x5a5a0000 + i,
						       c[i].size));
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
		EXPECT_TRUE(all_words(m, c[i].size, 0x5a5a0000 + i));
		npurt_mem_free(m);
	}
}

TEST_F(mem, blocks_of_one_segment_are_each_their_own)
{
	npurt_mem *m[16];

	for (int i = 0; i < 16; i++) {
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4096 + i * 512, &m[i]));
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(m[i]), i,
						       npurt_mem_size(m[i])));
	}
	EXPECT_EQ(2, usage(self->dev).cache_segment_allocs);	/* busy's, and theirs */
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	for (int i = 0; i < 16; i++) {
		EXPECT_TRUE(all_words(m[i], npurt_mem_size(m[i]), i)) TH_LOG("block %d", i);
		npurt_mem_free(m[i]);
	}
}

TEST_F(mem, repeated_alloc_and_free_make_no_buffer_in_the_kernel)
{
	static const size_t sizes[] = { 64, 4096, 100 * KiB, 3 * MiB };
	npurt_mem_usage before, after;
	npurt_mem *m[4];

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, sizes[i], &m[i]));
	for (int i = 0; i < 4; i++)
		npurt_mem_free(m[i]);
	before = usage(self->dev);
	for (int round = 0; round < 500; round++) {
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, sizes[i], &m[i]));
		for (int i = 0; i < 4; i++)
			npurt_mem_free(m[3 - i]);
	}
	after = usage(self->dev);
	EXPECT_EQ(before.cache_segment_allocs, after.cache_segment_allocs);
	EXPECT_EQ(before.context_hbm, after.context_hbm);
	EXPECT_EQ(before.context_hbm_peak, after.context_hbm_peak);
	EXPECT_EQ(before.cache_reserved, after.cache_reserved);
	EXPECT_EQ(4 * MiB, after.cache_in_use);			/* busy */
	EXPECT_LE(4 * MiB + 3 * MiB + 100 * KiB + 4096 + 512, after.cache_in_use_peak);
}

TEST_F(mem, usage_adds_up)
{
	npurt_mem_usage a = usage(self->dev), b;
	npurt_mem *m, *h;
	struct {
		npurt_mem_usage u;
		uint64_t more;
	} bigger = { .u.size = sizeof(bigger), .more = 42 };

	ASSERT_NE((uint64_t)-1, a.device_hbm);
	EXPECT_EQ(sizeof(a), a.size);
	EXPECT_LE(a.context_hbm, a.device_hbm);
	EXPECT_LE(a.device_hbm, a.device_hbm_peak);
	EXPECT_LE(a.context_hbm, a.context_hbm_peak);
	EXPECT_EQ(4 * MiB, a.cache_reserved);
	/* The cache's, and the page of completion words (runtime.rst, "Waiting"). */
	EXPECT_EQ(4 * MiB + WORDS, a.context_hbm);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_flags(self->dev, 8 * MiB, NPURT_MEM_NO_CACHE, &m));
	ASSERT_EQ(NPURT_OK, npurt_host_alloc(self->dev, 64 * KiB, &h));
	b = usage(self->dev);
	EXPECT_EQ(a.context_hbm + 8 * MiB, b.context_hbm);	/* not the cache's */
	EXPECT_EQ(a.cache_reserved, b.cache_reserved);
	EXPECT_EQ(a.context_host + 64 * KiB, b.context_host);
	EXPECT_LE(b.context_host, b.device_host);
	EXPECT_LE(b.device_host, b.device_host_peak);
	EXPECT_LE(b.context_host, b.context_host_peak);
	/* A newer caller's struct: its own field stays. */
	ASSERT_EQ(NPURT_OK, npurt_mem_get_usage(self->dev, &bigger.u));
	EXPECT_EQ(sizeof(bigger), bigger.u.size);
	EXPECT_EQ(42, bigger.more);
	npurt_mem_free(m);
	npurt_mem_free(h);
}

TEST_F(mem, trim_and_the_release_threshold_give_segments_back)
{
	npurt_mem_usage u;
	npurt_mem *m;

	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 8 * MiB, &m));
	npurt_mem_free(m);
	u = usage(self->dev);
	EXPECT_EQ(12 * MiB, u.cache_reserved);
	EXPECT_EQ(8 * MiB, u.cache_idle);
	EXPECT_EQ(12 * MiB + WORDS, u.context_hbm);
	ASSERT_EQ(NPURT_OK, npurt_mem_trim(self->dev, 0));
	u = usage(self->dev);
	EXPECT_EQ(4 * MiB, u.cache_reserved);			/* busy's stays */
	EXPECT_EQ(0, u.cache_idle);
	EXPECT_EQ(1, u.cache_segment_frees);
	EXPECT_EQ(4 * MiB + WORDS, context_hbm_settles(self->dev, 4 * MiB + WORDS));
	ASSERT_EQ(NPURT_OK, npurt_mem_set_release_threshold(self->dev, 0));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 100, &m));
	npurt_mem_free(m);
	u = usage(self->dev);
	EXPECT_EQ(4 * MiB, u.cache_reserved);
	EXPECT_EQ(2, u.cache_segment_frees);
}

TEST_F(mem, out_of_device_memory_the_cache_gives_back_and_tries_again)
{
	npurt_device_info info;
	npurt_mem_usage u;
	npurt_mem *a, *b = (npurt_mem *)0x1;
	size_t big;

	ASSERT_EQ(NPURT_OK, npurt_device_get_info(self->dev, &info));
	/* Two of these do not fit the device together. */
	big = (info.hbm_size - info.hbm_reserved) / 2 + 32 * MiB;
	big &= ~((size_t)2 * MiB - 1);
	ASSERT_EQ(NPURT_OK, npurt_mem_set_release_threshold(self->dev, (size_t)1 << 40));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, big, &a)) TH_LOG("%s", npurt_last_error());
	npurt_mem_free(a);
	/* Another pool (4 KiB pages): the cached one is given back for it. */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_flags(self->dev, big, NPURT_MEM_NORMAL_ONLY, &a))
		TH_LOG("%s", npurt_last_error());
	u = usage(self->dev);
	EXPECT_EQ(1, u.cache_segment_frees);
	EXPECT_EQ(3, u.cache_segment_allocs);
	/* Nothing left to give: the call says so. */
	EXPECT_EQ(NPURT_ERR_NO_MEMORY, npurt_mem_alloc(self->dev, big, &b));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_alloc")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "BO_CREATE"));
	EXPECT_EQ((npurt_mem *)0x1, b);
	npurt_mem_free(a);
}

TEST_F(mem, a_stream_takes_back_at_once_what_it_freed)
{
	npurt_mem *a, *b;
	uint64_t addr;

	ASSERT_EQ(0, keep_busy(self->s, self->busy));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->s, 64 * KiB, 0, &a));
	addr = npurt_mem_device_addr(a);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, addr, 1, 64 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_mem_free_async(a, self->s));
	/* Not for the other stream, nor for anyone, while s may use it... */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->t, 64 * KiB, 0, &b));
	EXPECT_NE(addr, npurt_mem_device_addr(b));
	npurt_mem_free(b);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 64 * KiB, &b));
	EXPECT_NE(addr, npurt_mem_device_addr(b));
	npurt_mem_free(b);
	/* ...but for s itself, whose work runs in order. */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->s, 64 * KiB, 0, &a));
	EXPECT_EQ(addr, npurt_mem_device_addr(a));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, addr, 2, 64 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_TRUE(all_words(a, 64 * KiB, 2));
	ASSERT_EQ(NPURT_OK, npurt_mem_free_async(a, self->s));
	/* Done: everyone's. */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->t, 64 * KiB, 0, &b));
	EXPECT_EQ(addr, npurt_mem_device_addr(b));
	npurt_mem_free(b);
}

TEST_F(mem, another_stream_never_gets_memory_the_device_still_writes)
{
	npurt_mem *a, *b;

	for (int round = 0; round < 4; round++) {
		ASSERT_EQ(0, keep_busy(self->s, self->busy));
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->s, 256 * KiB, 0, &a));
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(a), 0x11,
						       256 * KiB));
		ASSERT_EQ(NPURT_OK, npurt_mem_free_async(a, self->s));
		/* If t got a's block, s's late write would land on t's data. */
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->t, 256 * KiB, 0, &b));
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->t, npurt_mem_device_addr(b), 0x22,
						       256 * KiB));
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->t));
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
		EXPECT_TRUE(all_words(b, 256 * KiB, 0x22)) TH_LOG("round %d", round);
		npurt_mem_free(b);
	}
}

TEST_F(mem, a_plain_free_waits_for_every_stream)
{
	npurt_mem *a, *b;
	uint64_t addr, b_addr;

	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 64 * KiB, &a));
	addr = npurt_mem_device_addr(a);
	ASSERT_EQ(0, keep_busy(self->s, self->busy));
	npurt_mem_free(a);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->t, 64 * KiB, 0, &b));
	b_addr = npurt_mem_device_addr(b);
	EXPECT_NE(addr, b_addr);
	npurt_mem_free(b);
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	/*
	 * Both blocks are free once s is done (b's plain free waited for s
	 * too): the cache hands back one of them, whichever it released
	 * first (on a slow kernel the order varies), never new memory.
	 */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 64 * KiB, &b));
	EXPECT_TRUE(npurt_mem_device_addr(b) == addr || npurt_mem_device_addr(b) == b_addr)
		TH_LOG("got %#llx, freed %#llx and %#llx",
		       (unsigned long long)npurt_mem_device_addr(b), (unsigned long long)addr,
		       (unsigned long long)b_addr);
	npurt_mem_free(b);
}

TEST_F(mem, completion_is_noticed_without_synchronizing)
{
	npurt_mem *a, *held[40];
	uint64_t addr;
	int n = 0;

	/* 2 MiB: a segment of its own, so only a's block could serve. */
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_async(self->s, 2 * MiB, 0, &a));
	addr = npurt_mem_device_addr(a);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, addr, 3, 2 * MiB));
	ASSERT_EQ(NPURT_OK, npurt_mem_free_async(a, self->s));
	for (;;) {
		ASSERT_LT(n, 40) TH_LOG("the block never came back");
		usleep(50 * 1000);
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 2 * MiB, &held[n]));
		if (npurt_mem_device_addr(held[n++]) == addr)
			break;
	}
	while (n)
		npurt_mem_free(held[--n]);
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
}

TEST_F(mem, pinned_host_memory_is_copied_to_and_from)
{
	npurt_mem *h, *d, *r, *ro;
	char *buf = malloc(3 * 4096), *src;
	uint32_t *p;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(NPURT_OK, npurt_host_alloc(self->dev, 100 * KiB, &h)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(100 * KiB, npurt_mem_size(h));
	EXPECT_EQ(0, (uintptr_t)npurt_mem_host_ptr(h) % 4096);
	EXPECT_TRUE(all_words(h, 100 * KiB, 0));
	p = npurt_mem_host_ptr(h);
	for (int i = 0; i < 25 * 1024; i++)
		p[i] = 0xbeef0000 + i;
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 100 * KiB, &d));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, npurt_mem_device_addr(d),
					       npurt_mem_device_addr(h), 100 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(h), 0, 100 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, npurt_mem_device_addr(h) + 4,
					       npurt_mem_device_addr(d), 4096));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ(0xbeef0000, p[1]);
	EXPECT_EQ(0xbeef0000 + 1023, p[1024]);
	EXPECT_EQ(0xbeef0000 + 25 * 1024 - 1, ((uint32_t *)npurt_mem_host_ptr(d))[25 * 1024 - 1]);

	/* An existing buffer, not page-aligned: the device sees it at its address. */
	src = buf + 100;
	memset(src, 0x77, 4096);
	ASSERT_EQ(NPURT_OK, npurt_host_register(self->dev, src, 4096, 0, &r));
	EXPECT_EQ(src, npurt_mem_host_ptr(r));
	EXPECT_EQ(4096, npurt_mem_size(r));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, npurt_mem_device_addr(d),
					       npurt_mem_device_addr(r), 4096));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(r), 0x01010101, 8));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(0x77777777, ((uint32_t *)npurt_mem_host_ptr(d))[1023]);
	EXPECT_EQ(1, src[0]);
	EXPECT_EQ(1, src[7]);
	EXPECT_EQ(0x77, src[8]);
	/* Twice: already registered. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_register(self->dev, src, 16, 0, &ro));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "already registered")) TH_LOG("%s", npurt_last_error());
	npurt_mem_free(r);

	/* Read-only memory: only with NPURT_HOST_READ_ONLY, and the device reads it. */
	src = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	memset(src, 0x33, 4096);
	ASSERT_EQ(0, mprotect(src, 4096, PROT_READ));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_register(self->dev, src, 4096, 0, &ro));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_HOST_READ_ONLY"));
	ASSERT_EQ(NPURT_OK, npurt_host_register(self->dev, src, 4096, NPURT_HOST_READ_ONLY, &ro))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, npurt_mem_device_addr(d),
					       npurt_mem_device_addr(ro), 4096));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(0x33333333, ((uint32_t *)npurt_mem_host_ptr(d))[0]);
	npurt_mem_free(ro);
	munmap(src, 4096);
	npurt_mem_free(h);
	npurt_mem_free(d);
	free(buf);
}

TEST_F(mem, pinning_over_rlimit_memlock_says_so)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit lim = { 64 << 10, 64 << 10 };
		npurt_device *dev;
		npurt_mem *m;

		/* The open device stays usable after dropping root. */
		if (npurt_device_open(0, &dev) || setrlimit(RLIMIT_MEMLOCK, &lim) ||
		    setgid(65534) || setuid(65534))
			_exit(2);
		if (npurt_host_alloc(dev, MiB, &m) != NPURT_ERR_NO_MEMORY)
			_exit(3);
		if (!strstr(npurt_last_error(), "RLIMIT_MEMLOCK"))
			_exit(4);
		if (npurt_host_alloc(dev, 16 << 10, &m))
			_exit(5);
		npurt_mem_free(m);
		npurt_device_close(dev);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* The child: its own buffer, filled by its device, sent to the parent,
 * then checked for what the parent's device wrote into it. */
static int share_child(int sock)
{
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *m;
	char ack;
	int fd;

	if (npurt_device_open(0, &dev) || npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s) ||
	    npurt_mem_alloc_flags(dev, 64 * KiB, NPURT_MEM_SHAREABLE, &m) ||
	    npurt_memset_async(s, npurt_mem_device_addr(m), 0xc0de0000, 64 * KiB) ||
	    npurt_stream_synchronize(s) || npurt_mem_export(m, &fd))
		return 2;
	if (npu_send_fd(sock, fd) || read(sock, &ack, 1) != 1)
		return 3;
	close(fd);
	if (((uint32_t *)npurt_mem_host_ptr(m))[0] != 0xc0de0000 ||
	    ((uint32_t *)npurt_mem_host_ptr(m))[32 * KiB / 4] != 0xfeed0000)
		return 4;
	npurt_mem_free(m);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	return 0;
}

TEST_F(mem, another_process_shares_a_buffer)
{
	npurt_mem *m, *again;
	int sv[2], fd, status;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sv[0]);
		_exit(share_child(sv[1]));
	}
	close(sv[1]);
	fd = npu_recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	ASSERT_EQ(NPURT_OK, npurt_mem_import(self->dev, fd, &m)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(64 * KiB, npurt_mem_size(m));
	EXPECT_EQ(0xc0de0000, ((uint32_t *)npurt_mem_host_ptr(m))[100]);
	/* Imported twice: two handles of one buffer, each freed on its own. */
	ASSERT_EQ(NPURT_OK, npurt_mem_import(self->dev, fd, &again));
	close(fd);
	npurt_mem_free(again);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(m) + 32 * KiB,
					       0xfeed0000, 32 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(1, write(sv[0], "k", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	npurt_mem_free(m);
	close(sv[0]);
}

TEST_F(mem, a_buffer_imported_where_it_was_made_stays_with_both)
{
	npurt_mem *m, *imp;
	int fd;

	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_flags(self->dev, 8192, NPURT_MEM_NO_CACHE, &m));
	ASSERT_EQ(NPURT_OK, npurt_mem_export(m, &fd)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_mem_import(self->dev, fd, &imp));
	close(fd);
	EXPECT_EQ(npurt_mem_device_addr(m), npurt_mem_device_addr(imp));
	/* Freeing the first leaves the second working. */
	npurt_mem_free(m);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(imp), 9, 8192));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_TRUE(all_words(imp, 8192, 9));
	npurt_mem_free(imp);
}

TEST_HARNESS_MAIN
