// SPDX-License-Identifier: MIT
/*
 * Device copy bandwidth, in-process (no QEMU, no driver): COPY tasks of
 * 32 MiB through the device core's copy engines, on one queue and on two
 * queues at once, against the host's own memcpy of the same buffers, in
 * the same run. The device moves bytes with memmove a chunk at a time;
 * the ratio shows what its chunking and scheduling cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../unit/fwsim_test_util.h"

#define HBM	(512ull << 20)
#define RING	(2ull << 20)
#define TABLES	(4ull << 20)
#define DATA	(64ull << 20)	/* per queue: src, then dst */
#define SIZE	(32ull << 20)
#define ROUNDS	16
#define ENTRIES	64

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ROUNDS copies of SIZE on each of `queues` queues at once; seconds. */
static double device_copies(struct npu_dev *dev, uint8_t *hbm, int queues)
{
	uint32_t tail[2] = { 0 };
	double t;

	for (int q = 0; q < queues; q++) {
		struct npu_fw_queue *s = test_qslot(hbm, q);

		s->ring_offset = RING + (uint64_t)q * ENTRIES * 64;
		s->ring_entries = ENTRIES;
		s->context = 1;
		s->pt_root = TABLES;
		s->tail = 0;
		if (mbox_cmd(dev, NPU_FW_CMD_QUEUE_START, q, 0))
			return -1;
	}
	t = now_s();
	for (int q = 0; q < queues; q++) {
		uint64_t va = TEST_VA_BASE + (uint64_t)q * 2 * SIZE;

		for (int i = 0; i < ROUNDS; i++)
			test_push(hbm, q, &tail[q], NPU_FW_TASK_COPY, va + SIZE, va, SIZE);
		test_push(hbm, q, &tail[q], NPU_FW_TASK_FENCE, 1, 0, 0);
		test_ring(dev, hbm, q, tail[q]);
	}
	for (int q = 0; q < queues; q++)
		while (__atomic_load_n(&test_qslot(hbm, q)->done_seq, __ATOMIC_ACQUIRE) < 1)
			usleep(100);
	return now_s() - t;
}

int main(void)
{
	uint8_t *hbm = calloc(1, HBM);
	struct pt_pool pool = { .hbm = hbm, .next = TABLES };
	struct npu_dev_config cfg;
	struct npu_dev dev;
	double t_host, t_one, t_two;
	uint64_t root;

	if (!hbm)
		return 1;
	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM;
	cfg.num_dma = 2;
	npu_dev_init(&dev, hbm, &cfg, NULL, NULL);
	root = pt_alloc(&pool);
	for (uint64_t off = 0; off < 4 * SIZE; off += 2u << 20)
		pt_map(&pool, root, TEST_VA_BASE + off, DATA + off, 2u << 20, NPU_PTE_WRITE);
	memset(hbm + DATA, 0x5a, 4 * SIZE);	/* every page touched once */
	if (npu_dev_start_engine(&dev))
		return 1;

	t_host = now_s();
	for (int i = 0; i < ROUNDS; i++)
		memcpy(hbm + DATA + SIZE, hbm + DATA, SIZE);
	t_host = now_s() - t_host;
	t_one = device_copies(&dev, hbm, 1);
	t_two = device_copies(&dev, hbm, 2);
	if (t_one < 0 || t_two < 0) {
		fprintf(stderr, "fwsim_copy_bench: queue start failed\n");
		return 1;
	}

	printf("%-40s %10s %12s\n", "device copy, 32 MiB COPY tasks", "GB/s", "x host memcpy");
	printf("%-40s %10.2f %12.2f\n", "host memcpy, one thread",
	       ROUNDS * SIZE / t_host / 1e9, 1.0);
	printf("%-40s %10.2f %12.2f\n", "one queue, one copy engine",
	       ROUNDS * SIZE / t_one / 1e9, t_host / t_one);
	printf("%-40s %10.2f %12.2f\n", "two queues, two copy engines",
	       2 * ROUNDS * SIZE / t_two / 1e9, 2 * t_host / t_two);
	npu_dev_fini(&dev);
	free(hbm);
	return 0;
}
