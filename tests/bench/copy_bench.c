// SPDX-License-Identifier: MIT
/*
 * Copies from and to pageable memory, which libnpurt stages through a
 * stream's pinned buffers (userspace/runtime/copy.c), against the same copy
 * from or to pinned memory, which is one COPY task: rounds alternate
 * between the two in one run, best of each, printed as GB/s and the
 * ratio (goal for host to device: at least 0.7). Each round is
 * npurt_copy_async() then npurt_stream_synchronize(), 32 MiB. Staging
 * cannot beat the CPU's own memcpy from pageable into pinned memory,
 * printed last as that bound (under TCG the guest CPU is emulated while
 * the device copies natively, so the bound is far below the device).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "npurt.h"
#include "bench.h"

#define SIZE	(32ull << 20)
#define ROUNDS	8

static int check(npurt_status st, const char *what)
{
	if (st)
		fprintf(stderr, "copy_bench: %s: %s\n", what, npurt_last_error());
	return st ? -1 : 0;
}

/* One round's GB/s; 0 on failure. */
static double round_gbs(npurt_stream *s, void *dst, const void *src)
{
	double t = now_s();

	if (check(npurt_copy_async(s, dst, src, SIZE), "copy") ||
	    check(npurt_stream_synchronize(s), "synchronize"))
		return 0;
	return SIZE / (now_s() - t) / 1e9;
}

/* Best of ROUNDS for two copies, alternating; -1 on failure. */
static int pair(npurt_stream *s, void *d1, const void *s1, void *d2, const void *s2,
		double *best1, double *best2)
{
	*best1 = *best2 = 0;
	for (int r = 0; r < ROUNDS; r++) {
		double a = round_gbs(s, d1, s1), b = round_gbs(s, d2, s2);

		if (!a || !b)
			return -1;
		*best1 = a > *best1 ? a : *best1;
		*best2 = b > *best2 ? b : *best2;
	}
	return 0;
}

int main(void)
{
	npurt_mem *dev, *pinned;
	npurt_device *d;
	npurt_stream *s;
	double pin, page;
	void *host;

	if (check(npurt_device_open(0, &d), "open") ||
	    check(npurt_stream_create(d, NPURT_PRIORITY_NORMAL, &s), "stream") ||
	    check(npurt_mem_alloc(d, SIZE, &dev), "device memory") ||
	    check(npurt_host_alloc(d, SIZE, &pinned), "pinned memory"))
		return 1;
	host = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		    -1, 0);
	if (host == MAP_FAILED) {
		perror("copy_bench: mmap");
		return 1;
	}
	memset(host, 0x5a, SIZE);
	memset(npurt_mem_host_ptr(pinned), 0x5a, SIZE);

	printf("%-40s %10s %10s\n", "32 MiB copy", "GB/s", "x pinned");
	if (pair(s, npurt_mem_host_ptr(dev), npurt_mem_host_ptr(pinned),
		 npurt_mem_host_ptr(dev), host, &pin, &page))
		return 1;
	printf("%-40s %10.2f %10.2f\n", "host to device from pinned", pin, 1.0);
	printf("%-40s %10.2f %10.2f\n", "host to device from pageable (staged)", page, page / pin);
	if (pair(s, npurt_mem_host_ptr(pinned), npurt_mem_host_ptr(dev),
		 host, npurt_mem_host_ptr(dev), &pin, &page))
		return 1;
	printf("%-40s %10.2f %10.2f\n", "device to host into pinned", pin, 1.0);
	printf("%-40s %10.2f %10.2f\n", "device to host into pageable (staged)", page, page / pin);
	pin = 0;
	for (int r = 0; r < ROUNDS; r++) {
		double t = now_s();

		memcpy(npurt_mem_host_ptr(pinned), host, SIZE);
		t = SIZE / (now_s() - t) / 1e9;
		pin = t > pin ? t : pin;
	}
	printf("%-40s %10.2f %10s\n", "CPU memcpy pageable to pinned (bound)", pin, "");
	munmap(host, SIZE);
	npurt_mem_free(pinned);
	npurt_mem_free(dev);
	npurt_stream_destroy(s);
	npurt_device_close(d);
	return 0;
}
