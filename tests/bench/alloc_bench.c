// SPDX-License-Identifier: MIT
/*
 * Allocation rate, side by side in one run, as a ratio to the kernel's
 * own: a buffer object created and closed (BO_CREATE + GEM_CLOSE, no
 * mapping) against
 *
 *   libnpurt, cached         npurt_mem_alloc + npurt_mem_free
 *   libnpurt, NO_CACHE       the same with a buffer of its own each time
 *                            (BO_CREATE, BO_INFO, mmap; munmap, GEM_CLOSE)
 *
 * The goal for the cache is at least 50x the kernel's rate. Sizes cycle
 * through 64 KiB, 256 KiB and 1 MiB; each figure is the best of five
 * rounds of a fixed time, the rounds of the three interleaved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_selftest.h"
#include "npurt.h"
#include "bench.h"

#define ROUNDS		5
#define ROUND_S		0.3
#define GOAL		50.0

static const size_t sizes[] = { 64 << 10, 256 << 10, 1 << 20 };

static void die(const char *what)
{
	fprintf(stderr, "alloc_bench: %s: %s\n", what, npurt_last_error());
	exit(1);
}

/* Allocations and frees per second over one round. */
static double rate_raw(int fd)
{
	double t0 = now_s(), t;
	long n = 0;

	do {
		for (int i = 0; i < 64; i++, n++) {
			struct drm_npu_bo_create b;

			if (npu_bo_create(fd, sizes[n % 3], DRM_NPU_BO_PAGE_HUGE_FIRST, &b) ||
			    npu_gem_close(fd, b.handle)) {
				fprintf(stderr, "alloc_bench: BO_CREATE/GEM_CLOSE failed\n");
				exit(1);
			}
		}
		t = now_s() - t0;
	} while (t < ROUND_S);
	return n / t;
}

static double rate_rt(npurt_device *dev, uint32_t flags)
{
	double t0 = now_s(), t;
	long n = 0;

	do {
		for (int i = 0; i < 64; i++, n++) {
			npurt_mem *m;

			if (npurt_mem_alloc_flags(dev, sizes[n % 3], flags, &m))
				die("npurt_mem_alloc_flags");
			npurt_mem_free(m);
		}
		t = now_s() - t0;
	} while (t < ROUND_S);
	return n / t;
}

int main(void)
{
	double raw = 0, cached = 0, uncached = 0, v;
	npurt_mem_usage before = { .size = sizeof(before) }, after = { .size = sizeof(after) };
	npurt_device *dev;
	int fd = npu_open();

	if (fd < 0 || npurt_device_open(0, &dev)) {
		fprintf(stderr, "alloc_bench: no npu device\n");
		return 1;
	}
	rate_rt(dev, 0);	/* the cache's segments, made once */
	if (npurt_mem_get_usage(dev, &before))
		die("npurt_mem_get_usage");
	for (int r = 0; r < ROUNDS; r++) {
		if ((v = rate_raw(fd)) > raw)
			raw = v;
		if ((v = rate_rt(dev, 0)) > cached)
			cached = v;
		if ((v = rate_rt(dev, NPURT_MEM_NO_CACHE)) > uncached)
			uncached = v;
	}
	if (npurt_mem_get_usage(dev, &after))
		die("npurt_mem_get_usage");

	printf("%-34s %12s %10s\n", "alloc + free, 64K..1M", "per second", "x kernel");
	printf("%-34s %12.0f %10.2f\n", "BO_CREATE + GEM_CLOSE (baseline)", raw, 1.0);
	printf("%-34s %12.0f %10.2f\n", "libnpurt, cached", cached, cached / raw);
	printf("%-34s %12.0f %10.2f\n", "libnpurt, NPURT_MEM_NO_CACHE", uncached, uncached / raw);
	printf("cache: %llu segment(s) made while measuring (0 expected); goal %.0fx: %s\n",
	       (unsigned long long)(after.cache_segment_allocs - before.cache_segment_allocs),
	       GOAL, cached / raw >= GOAL ? "met" : "NOT met");
	npurt_device_close(dev);
	close(fd);
	return after.cache_segment_allocs != before.cache_segment_allocs;
}
