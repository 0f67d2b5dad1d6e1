/* SPDX-License-Identifier: MIT */
/*
 * Helpers for in-process tests of the firmware-sim core: they write HBM
 * the way npu.ko does (page tables, queue slots, rings).
 */
#ifndef FWSIM_TEST_UTIL_H
#define FWSIM_TEST_UTIL_H

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu_dev.h"

#define TEST_VA_BASE	(1ull << 32)

/* A bump allocator for page tables in the test's HBM. */
struct pt_pool {
	uint8_t *hbm;
	uint64_t next;
};

static inline uint64_t pt_alloc(struct pt_pool *p)
{
	uint64_t t = p->next;

	p->next += NPU_PT_SIZE;
	memset(p->hbm + t, 0, NPU_PT_SIZE);
	return t;
}

/* Map one page: tables created on the way, then the leaf. */
static inline void pt_map(struct pt_pool *p, uint64_t root, uint64_t va,
			  uint64_t addr, uint32_t page_size, uint64_t flags)
{
	int leaf_level = page_size == (2u << 20) ? 2 : 3;
	uint64_t table = root;

	for (int level = 0; level < leaf_level; level++) {
		uint64_t *e = (uint64_t *)(p->hbm + table) + NPU_PT_INDEX(va, level);

		if (!(*e & NPU_PTE_VALID))
			*e = pt_alloc(p) | NPU_PTE_VALID;
		table = *e & NPU_PTE_ADDR_MASK;
	}
	if (leaf_level == 2)
		flags |= NPU_PTE_HUGE;
	((uint64_t *)(p->hbm + table))[NPU_PT_INDEX(va, leaf_level)] =
		addr | flags | NPU_PTE_VALID;
}

/* Queue `qid`'s slot in the queue table of `hbm`. */
static inline struct npu_fw_queue *test_qslot(uint8_t *hbm, int qid)
{
	return (struct npu_fw_queue *)(hbm + NPU_FW_QUEUE_TABLE) + qid;
}

/* Write a task at *tail of queue `qid`'s ring, as the host does, and advance *tail. */
static inline void test_push(uint8_t *hbm, int qid, uint32_t *tail, uint16_t type,
			     uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct npu_fw_queue *q = test_qslot(hbm, qid);
	struct npu_fw_task *t = (struct npu_fw_task *)(hbm + q->ring_offset) +
				(*tail % q->ring_entries);

	memset(t, 0, sizeof(*t));
	t->type = type;
	t->args[0] = a0;
	t->args[1] = a1;
	t->args[2] = a2;
	(*tail)++;
}

/* Publish queue `qid`'s tail and ring the queue doorbell. */
static inline void test_ring(struct npu_dev *dev, uint8_t *hbm, int qid, uint32_t tail)
{
	__atomic_store_n(&test_qslot(hbm, qid)->tail, tail, __ATOMIC_RELEASE);
	npu_dev_doorbell(dev, NPU_VEC_QUEUE);
}

/* Post a mailbox command with three arguments and return its status. */
static inline int32_t mbox_cmd3(struct npu_dev *dev, uint32_t op, uint64_t a0, uint64_t a1,
				uint64_t a2)
{
	struct npu_fw_mbox *mb = &dev->ctrl->mbox;

	mb->opcode = op;
	mb->args[0] = a0;
	mb->args[1] = a1;
	mb->args[2] = a2;
	mb->args[3] = 0;
	__atomic_store_n(&mb->seq, mb->seq + 1, __ATOMIC_RELEASE);
	npu_dev_doorbell(dev, NPU_VEC_MBOX);
	return mb->status;
}

/* Post a mailbox command and return its status. */
static inline int32_t mbox_cmd(struct npu_dev *dev, uint32_t op, uint64_t a0, uint64_t a1)
{
	return mbox_cmd3(dev, op, a0, a1, 0);
}

/*
 * Post a TLB invalidation of `ctx` (struct npu_fw_tlb), ring, and wait
 * for the device to complete it: 0, or -1 if it failed or took 60 s.
 */
static inline int tlb_post_wait(struct npu_dev *dev, uint32_t ctx)
{
	struct npu_fw_tlb *t = &dev->ctrl->tlb;
	uint32_t failed = __atomic_load_n(&t->failed, __ATOMIC_ACQUIRE), seq = t->req + 1;

	t->ctx[t->req % NPU_FW_TLB_RING] = ctx;
	__atomic_store_n(&t->req, seq, __ATOMIC_RELEASE);
	npu_dev_doorbell(dev, NPU_VEC_MBOX);
	for (int i = 0; i < 60000 && (int32_t)(__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) - seq) < 0; i++)
		usleep(1000);
	if ((int32_t)(__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) - seq) < 0)
		return -1;
	return __atomic_load_n(&t->failed, __ATOMIC_ACQUIRE) == failed ? 0 : -1;
}

static inline uint64_t test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A GEMM made long by its shapes, not by sleeps: C (LONG_M x LONG_N) =
 * A (LONG_M x k) B (k x LONG_N), where A broadcasts one element and B one
 * row (zero strides), so the inputs take a few bytes whatever k is. With
 * ones in A and B every element of C is exactly k (k <= 2^24).
 */
#define LONG_M		256
#define LONG_N		128
#define LONG_K_MAX	(1ull << 22)	/* B's elements stay under 2^30 */
#define LONG_C_BYTES	(LONG_M * LONG_N * 4)

static inline void long_gemm_args(struct npu_op_args *k, uint64_t va_a,
				  uint64_t va_b, uint64_t va_c, uint64_t kdim)
{
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_GEMM;
	k->alpha = 1.0f;
	k->in[0] = (struct npu_op_tensor){ .va = va_a, .dtype = NPU_DT_F32, .ndim = 2,
					    .shape = { LONG_M, kdim }, .stride = { 0, 0 } };
	k->in[1] = (struct npu_op_tensor){ .va = va_b, .dtype = NPU_DT_F32, .ndim = 2,
					    .shape = { kdim, LONG_N }, .stride = { 0, 1 } };
	k->out = (struct npu_op_tensor){ .va = va_c, .dtype = NPU_DT_F32, .ndim = 2,
					  .shape = { LONG_M, LONG_N }, .stride = { LONG_N, 1 } };
}

/*
 * The k that makes the long GEMM take about `ms` on `cores` cores of this
 * machine, measured once on this thread (the best of two runs, so a busy
 * machine only makes the launch longer). *expect_ms: what it should take.
 */
static inline uint64_t long_gemm_k(unsigned int ms, unsigned int cores, uint64_t *expect_ms)
{
	static double macs_per_ms;	/* one core */
	uint64_t kdim;

	if (!macs_per_ms) {
		const uint64_t k0 = 8192;
		struct npu_op_args blk;
		struct npu_op a;
		static float C[LONG_M * LONG_N];
		float A = 1.0f, B[LONG_N];
		struct npu_view v[3];

		for (int i = 0; i < LONG_N; i++)
			B[i] = 1.0f;
		long_gemm_args(&blk, 0, 0, 0, k0);
		npu_op_decode(&blk, &a);
		for (int i = 0; i < 3; i++) {
			const struct npu_tensor *t = i == 2 ? &a.out : &a.in[i];

			v[i].data = i == 0 ? (void *)&A : i == 1 ? (void *)B : (void *)C;
			v[i].dtype = t->dtype;
			v[i].ndim = t->ndim;
			memcpy(v[i].shape, t->shape, sizeof(v[i].shape));
			memcpy(v[i].stride, t->stride, sizeof(v[i].stride));
		}
		for (int run = 0; run < 2; run++) {
			struct timespec t0, t1;
			double dt;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			npu_op_run(&a, v, &v[2], 0, LONG_M);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			dt = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
			if (dt > 0 && (double)LONG_M * LONG_N * k0 / dt > macs_per_ms)
				macs_per_ms = (double)LONG_M * LONG_N * k0 / dt;
		}
	}
	kdim = (uint64_t)(macs_per_ms * cores * ms / ((double)LONG_M * LONG_N));
	kdim = kdim < 1024 ? 1024 : kdim > LONG_K_MAX ? LONG_K_MAX : kdim;
	if (expect_ms)
		*expect_ms = (uint64_t)((double)LONG_M * LONG_N * kdim / (macs_per_ms * cores));
	return kdim;
}

#endif /* FWSIM_TEST_UTIL_H */
