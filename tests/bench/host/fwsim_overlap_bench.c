// SPDX-License-Identifier: MIT
/*
 * Copy/compute overlap of the device core, in-process (no QEMU, no
 * driver): COPY tasks on one queue and GEMM launches on another, against
 * the same tasks on one queue, in the same run. It shows what the device
 * model overlaps by itself, apart from what the VM and the runtime add
 * (tests/bench/stream_bench.c measures the same through libnpurt in the
 * VM). The ideal two-queue time is max(copy, compute) / (copy + compute)
 * of the one-queue time.
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
#define ARGS	(6ull << 20)	/* the launch's argument block */
#define GEMM_IO	(8ull << 20)	/* its A, B and C */
#define DATA	(16ull << 20)	/* the copies' src, then dst */
#define SIZE	(16ull << 20)
#define COPIES	8
#define ENTRIES	512

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct bench {
	struct npu_dev dev;
	uint8_t *hbm;
	uint32_t tail[2];
	uint64_t fences[2];
};

static void push_copies(struct bench *b, int q, int n)
{
	for (int i = 0; i < n; i++)
		test_push(b->hbm, q, &b->tail[q], NPU_FW_TASK_COPY, TEST_VA_BASE + DATA + SIZE,
			  TEST_VA_BASE + DATA, SIZE);
}

static void push_gemms(struct bench *b, int q, int n)
{
	for (int i = 0; i < n; i++)
		test_push(b->hbm, q, &b->tail[q], NPU_FW_TASK_KERNEL, TEST_VA_BASE + ARGS, 0,
			  sizeof(struct npu_op_args));
}

/* `copies` COPY tasks on queue 0, `gemms` launches on queue `gq`; seconds. */
static double run(struct bench *b, int copies, int gemms, int gq)
{
	double t = now_s();
	int used[2] = { copies > 0 || gq == 0, gq == 1 && gemms > 0 };

	push_copies(b, 0, copies);
	push_gemms(b, gq, gemms);
	for (int q = 0; q < 2; q++) {
		if (!used[q])
			continue;
		test_push(b->hbm, q, &b->tail[q], NPU_FW_TASK_FENCE, ++b->fences[q], 0, 0);
		test_ring(&b->dev, b->hbm, q, b->tail[q]);
	}
	for (int q = 0; q < 2; q++)
		while (used[q] && __atomic_load_n(&test_qslot(b->hbm, q)->done_seq,
						  __ATOMIC_ACQUIRE) < b->fences[q])
			usleep(50);
	return now_s() - t;
}

int main(void)
{
	struct bench b = { 0 };
	struct pt_pool pool;
	struct npu_dev_config cfg;
	double t_copy, t_gemm, t_one, t_two, ideal;
	uint64_t root, kdim, expect;
	int gemms;

	b.hbm = calloc(1, HBM);
	if (!b.hbm)
		return 1;
	pool = (struct pt_pool){ .hbm = b.hbm, .next = TABLES };
	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM;
	cfg.num_dma = 2;
	cfg.num_cores = 2;
	cfg.num_core_groups = 2;
	npu_dev_init(&b.dev, b.hbm, &cfg, NULL, NULL);
	root = pt_alloc(&pool);
	for (uint64_t off = ARGS; off < DATA + 2 * SIZE; off += 2u << 20)
		pt_map(&pool, root, TEST_VA_BASE + off, off, 2u << 20, NPU_PTE_WRITE);
	memset(b.hbm + DATA, 0x5a, 2 * SIZE);	/* every page touched once */
	/* A GEMM of about 5 ms on the one core of a group. */
	kdim = long_gemm_k(5, 1, &expect);
	for (uint64_t i = 0; i < LONG_N; i++)
		((float *)(b.hbm + GEMM_IO + 64))[i] = 1.0f;
	*(float *)(b.hbm + GEMM_IO) = 1.0f;
	long_gemm_args((struct npu_op_args *)(b.hbm + ARGS), TEST_VA_BASE + GEMM_IO,
		       TEST_VA_BASE + GEMM_IO + 64, TEST_VA_BASE + GEMM_IO + 4096, kdim);
	if (npu_dev_start_engine(&b.dev))
		return 1;
	for (int q = 0; q < 2; q++) {
		struct npu_fw_queue *s = test_qslot(b.hbm, q);

		s->ring_offset = RING + (uint64_t)q * ENTRIES * 64;
		s->ring_entries = ENTRIES;
		s->context = 1;
		s->pt_root = TABLES;
		if (mbox_cmd(&b.dev, NPU_FW_CMD_QUEUE_START, q, 0)) {
			fprintf(stderr, "fwsim_overlap_bench: queue start failed\n");
			return 1;
		}
	}

	/* Calibrate: the copies alone, then as many GEMMs as take as long. */
	run(&b, COPIES, 0, 0);
	t_copy = run(&b, COPIES, 0, 0);
	t_gemm = run(&b, 0, 4, 0);
	gemms = (int)(4 * t_copy / t_gemm + 0.5);
	if (gemms < 1)
		gemms = 1;
	t_gemm = run(&b, 0, gemms, 0);
	t_one = run(&b, COPIES, gemms, 0);
	t_two = run(&b, COPIES, gemms, 1);
	ideal = (t_copy > t_gemm ? t_copy : t_gemm) / (t_copy + t_gemm);

	printf("%-44s %10s %10s\n", "device copy/compute overlap (in-process)", "ms", "x one");
	printf("%-44s %10.1f\n", "8 copies of 16 MiB alone", t_copy * 1e3);
	printf("%-44s %10.1f\n", "GEMMs alone", t_gemm * 1e3);
	printf("%-44s %10.1f %10.2f\n", "both on one queue", t_one * 1e3, 1.0);
	printf("%-44s %10.1f %10.2f\n", "both on two queues", t_two * 1e3, t_two / t_one);
	printf("%-44s %10s %10.2f\n", "ideal: max / sum", "", ideal);
	printf("%-44s %10s %10.2f\n", "two queues / ideal", "", t_two / t_one / ideal);
	npu_dev_fini(&b.dev);
	free(b.hbm);
	return 0;
}
