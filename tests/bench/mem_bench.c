// SPDX-License-Identifier: MIT
/*
 * Memory bandwidth, each as a ratio to a plain memcpy between two host
 * buffers measured in the same run:
 *
 *   device copy HBM -> HBM          COPY task, submit to wait return
 *   device copy host -> HBM         COPY from registered host memory
 *   CPU write through mmap          memcpy into a write-combined BO mapping
 *   CPU read through mmap           memcpy out of it (uncached reads on
 *                                   real hardware: expect it to be slow)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_selftest.h"
#include "bench.h"

#define SIZE	(64ull << 20)
#define ROUNDS	5

static void *host_pages(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mem_bench: mmap");
		exit(1);
	}
	memset(p, 0x3c, size);
	return p;
}

/* Best of ROUNDS, in GB/s. */
static double bw_memcpy(void *dst, const void *src)
{
	double best = 0;

	for (int r = 0; r < ROUNDS; r++) {
		double t = now_s();

		memcpy(dst, src, SIZE);
		t = now_s() - t;
		if (SIZE / t / 1e9 > best)
			best = SIZE / t / 1e9;
	}
	return best;
}

static double bw_device(int fd, uint64_t dst, uint64_t src)
{
	struct drm_npu_task task = npu_task_copy(dst, src, SIZE);
	double best = 0;

	for (int r = 0; r < ROUNDS; r++) {
		struct drm_npu_wait w = { 0 };
		uint64_t seq;
		double t = now_s();
		int ret = npu_submit(fd, &task, 1, &seq);

		if (!ret)
			ret = npu_wait(fd, seq, -1, &w);
		if (ret) {
			fprintf(stderr, "mem_bench: device copy failed: %s (status %u at %#llx)\n",
				strerror(-ret), w.status, (unsigned long long)w.fault_address);
			exit(1);
		}
		t = now_s() - t;
		if (SIZE / t / 1e9 > best)
			best = SIZE / t / 1e9;
	}
	return best;
}

int main(void)
{
	struct drm_npu_bo_create a, b;
	struct drm_npu_userptr u = { 0 };
	void *h1 = host_pages(SIZE), *h2 = host_pages(SIZE), *map;
	double base, v;
	int fd = npu_open();

	if (fd < 0 || npu_bo_create(fd, SIZE, DRM_NPU_BO_PAGE_HUGE_FIRST, &a) ||
	    npu_bo_create(fd, SIZE, DRM_NPU_BO_PAGE_HUGE_FIRST, &b)) {
		fprintf(stderr, "mem_bench: no npu device or not enough HBM\n");
		return 1;
	}
	u.addr = (uintptr_t)h1;
	u.size = SIZE;
	u.flags = DRM_NPU_USERPTR_READ_ONLY;
	map = npu_bo_mmap(fd, a.handle, SIZE);
	if (ioctl(fd, DRM_IOCTL_NPU_USERPTR, &u) || map == MAP_FAILED) {
		fprintf(stderr, "mem_bench: cannot register host memory or map HBM\n");
		return 1;
	}

	printf("%-34s %10s %10s\n", "64 MiB transfer", "GB/s", "x memcpy");
	base = bw_memcpy(h2, h1);
	printf("%-34s %10.2f %10.2f\n", "host memcpy (baseline)", base, 1.0);
	v = bw_device(fd, b.device_va, a.device_va);
	printf("%-34s %10.2f %10.2f\n", "device copy HBM -> HBM", v, v / base);
	v = bw_device(fd, a.device_va, u.device_va);
	printf("%-34s %10.2f %10.2f\n", "device copy host -> HBM", v, v / base);
	v = bw_memcpy(map, h1);
	printf("%-34s %10.2f %10.2f\n", "CPU write through mmap (WC)", v, v / base);
	v = bw_memcpy(h2, map);
	printf("%-34s %10.2f %10.2f\n", "CPU read through mmap (WC)", v, v / base);
	close(fd);
	return 0;
}
