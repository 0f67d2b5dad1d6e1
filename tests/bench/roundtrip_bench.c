// SPDX-License-Identifier: MIT
/*
 * The submit round trip, leg by leg (Documentation/runtime.rst,
 * "Waiting"): each row adds legs to the one before, so the differences
 * are the legs' costs. Medians of many rounds, in microseconds, all in
 * one run on one device:
 *
 *   getppid()                 a system call
 *   GET_PARAM                 the DRM ioctl path
 *   SUBMIT, pipelined         the driver's submit (copy, checks, push)
 *   SUBMIT, spin on word      + run_job, ring write, doorbell through
 *                             QEMU, the device's pickup and FENCE write
 *   SUBMIT, WAIT              + the interrupt through QEMU, the guest's
 *                             handler and the waiter's wake-up
 *   libnpurt, each policy     a 4-byte fill and npurt_stream_synchronize
 *                             on the library's path (io_uring here)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npu_selftest.h"
#include "npurt.h"
#include "bench.h"

#define ROUNDS	2000

static double samples[ROUNDS];

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(int n)
{
	qsort(samples, n, sizeof(samples[0]), cmp);
	return samples[n / 2];
}

static void row(const char *what, double us, double prev, const char *adds)
{
	if (prev >= 0)
		printf("%-28s %9.1f %9.1f   %s\n", what, us, us - prev, adds);
	else
		printf("%-28s %9.1f %9s   %s\n", what, us, "", adds);
}

/* A queue with a completion word at offset 0 of a fresh buffer. */
static int word_queue(int fd, uint32_t *queue, const volatile uint64_t **word)
{
	struct drm_npu_queue_create create = { 0 };
	struct drm_npu_bo_create bo;
	void *map;

	if (npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo))
		return -1;
	map = npu_bo_mmap(fd, bo.handle, 4096);
	create.done_handle = bo.handle;
	if (map == MAP_FAILED || ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &create))
		return -1;
	*queue = create.queue;
	*word = map;
	return 0;
}

static int raw_legs(void)
{
	static const struct drm_npu_task nop[1];
	const volatile uint64_t *word;
	double base, t;
	uint32_t queue;
	uint64_t seq = 0, v;
	int fd = npu_open();

	if (fd < 0 || word_queue(fd, &queue, &word)) {
		fprintf(stderr, "roundtrip_bench: no npu device with completion words\n");
		return -1;
	}
	for (int i = 0; i < ROUNDS; i++) {
		t = now_us();
		getppid();
		samples[i] = now_us() - t;
	}
	base = median(ROUNDS);
	row("getppid()", base, -1, "a system call");
	for (int i = 0; i < ROUNDS; i++) {
		t = now_us();
		npu_get_param(fd, DRM_NPU_PARAM_QUEUE_COUNT, &v);
		samples[i] = now_us() - t;
	}
	t = median(ROUNDS);
	row("GET_PARAM", t, base, "the DRM ioctl path");
	base = t;
	/* The ring holds 1024 tasks: 256 submits of a NOP and its FENCE. */
	for (int i = 0; i < ROUNDS; i++) {
		if (i % 256 == 0 && npu_wait_on(fd, queue, seq, -1, NULL))
			return -1;
		t = now_us();
		if (npu_submit_on(fd, queue, nop, 1, &seq))
			return -1;
		samples[i] = now_us() - t;
	}
	if (npu_wait_on(fd, queue, seq, -1, NULL))
		return -1;
	t = median(ROUNDS);
	row("SUBMIT, pipelined", t, base, "the driver's submit: copy, checks, push");
	base = t;
	for (int i = 0; i < ROUNDS; i++) {
		t = now_us();
		if (npu_submit_on(fd, queue, nop, 1, &seq))
			return -1;
		while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < seq)
			;
		samples[i] = now_us() - t;
	}
	if (npu_wait_on(fd, queue, seq, -1, NULL))
		return -1;
	t = median(ROUNDS);
	row("SUBMIT, spin on word", t, base,
	    "run_job, doorbell through QEMU, device pickup, FENCE write");
	base = t;
	for (int i = 0; i < ROUNDS; i++) {
		t = now_us();
		if (npu_submit_on(fd, queue, nop, 1, &seq) || npu_wait_on(fd, queue, seq, -1, NULL))
			return -1;
		samples[i] = now_us() - t;
	}
	t = median(ROUNDS);
	row("SUBMIT, WAIT", t, base, "interrupt through QEMU, guest handler, wake-up");
	close(fd);
	return 0;
}

static int npurt_legs(void)
{
	static const char *const names[] = { "libnpurt, NPURT_WAIT_BLOCK", "libnpurt, NPURT_WAIT_AUTO",
					     "libnpurt, NPURT_WAIT_SPIN" };
	static const npurt_wait_policy policies[] = { NPURT_WAIT_BLOCK, NPURT_WAIT_AUTO,
						      NPURT_WAIT_SPIN };
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *m;
	double t, block = -1;

	if (npurt_device_open(0, &dev) || npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s) ||
	    npurt_mem_alloc(dev, 4096, &m)) {
		fprintf(stderr, "roundtrip_bench: %s\n", npurt_last_error());
		return -1;
	}
	for (int p = 0; p < 3; p++) {
		if (npurt_device_set_wait_policy(dev, policies[p]))
			return -1;
		for (int i = -50; i < ROUNDS; i++) {
			t = now_us();
			if (npurt_memset_async(s, npurt_mem_device_addr(m), 0, 4) ||
			    npurt_stream_synchronize(s)) {
				fprintf(stderr, "roundtrip_bench: %s\n", npurt_last_error());
				return -1;
			}
			if (i >= 0)
				samples[i] = now_us() - t;
		}
		t = median(ROUNDS);
		row(names[p], t, block, p ? "against BLOCK" : "4-byte fill + synchronize");
		if (!p)
			block = t;
	}
	npurt_mem_free(m);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	return 0;
}

int main(void)
{
	printf("%-28s %9s %9s   %s\n", "round trip, median", "us", "+ us", "what the step adds");
	if (raw_legs() || npurt_legs())
		return 1;
	return 0;
}
