// SPDX-License-Identifier: MIT
/*
 * Tasks of different queues run at the same time: copies on the copy
 * engines, launches on the AI-core groups, sync tasks on the scheduler,
 * each queue in order. With the engine threads started, on two contexts
 * of 48 MiB each mapped with 2 MiB pages.
 *
 * "At the same time" is checked where the device shows it: two units busy
 * in one look at the device state (under its lock), or a queue's fence
 * passed while another queue's first task is still running. Copies are
 * made long by their size, never by sleeps.
 */
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"

#define HBM_SIZE	(128ull << 20)
#define RING		(2ull << 20)
#define DATA		(8ull << 20)	/* a region per context from here */
#define REGION		(48ull << 20)
#define TABLES		(104ull << 20)
#define ENTRIES		64
#define QUEUES		4
#define CORES		2

/* Inside a context's region (and at the same offsets from its VA). */
#define OFF_SRC		0x0
#define OFF_DST		(16ull << 20)
#define BIG		(16ull << 20)	/* a copy of some ms */
#define OFF_A		(32ull << 20)
#define OFF_B		(OFF_A + 0x1000)
#define OFF_C		(OFF_A + 0x10000)
#define OFF_ARGS	(OFF_A + 0x40000)
#define OFF_SMALL	(OFF_A + 0x80000)

#define VA		TEST_VA_BASE

FIXTURE(conc) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	uint64_t root[3];	/* contexts 1 and 2 */
	uint32_t tail[QUEUES];
};

static struct npu_fw_queue *qslot(FIXTURE_DATA(conc) *self, int qid)
{
	return test_qslot(self->hbm, qid);
}

static uint8_t *region(FIXTURE_DATA(conc) *self, uint32_t ctx)
{
	return self->hbm + DATA + (ctx - 1) * REGION;
}

static int32_t start_prio(FIXTURE_DATA(conc) *self, int qid, uint32_t ctx, uint32_t prio)
{
	struct npu_fw_queue *q = qslot(self, qid);

	q->ring_offset = RING + (uint64_t)qid * ENTRIES * sizeof(struct npu_fw_task);
	q->ring_entries = ENTRIES;
	q->context = ctx;
	q->pt_root = self->root[ctx];
	q->priority = prio;
	q->tail = 0;
	self->tail[qid] = 0;
	return mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, qid, 0);
}

static int32_t start_queue(FIXTURE_DATA(conc) *self, int qid, uint32_t ctx)
{
	return start_prio(self, qid, ctx, 1);
}

static void push(FIXTURE_DATA(conc) *self, int qid, uint16_t type,
		 uint64_t a0, uint64_t a1, uint64_t a2)
{
	test_push(self->hbm, qid, &self->tail[qid], type, a0, a1, a2);
}

static void ring(FIXTURE_DATA(conc) *self, int qid)
{
	test_ring(&self->dev, self->hbm, qid, self->tail[qid]);
}

static uint64_t done_seq(FIXTURE_DATA(conc) *self, int qid)
{
	return __atomic_load_n(&qslot(self, qid)->done_seq, __ATOMIC_ACQUIRE);
}

static uint32_t load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Wait up to `ms` for queue `qid` to pass FENCE `seq`. */
static int wait_fence(FIXTURE_DATA(conc) *self, int qid, uint64_t seq, unsigned int ms)
{
	for (unsigned int i = 0; i < ms * 10; i++) {
		if (done_seq(self, qid) >= seq)
			return 0;
		if (load(&qslot(self, qid)->state) != NPU_QUEUE_RUNNING)
			return -1;
		usleep(100);
	}
	return -1;
}

/*
 * Look at the device's units under its lock until `cond` holds (true) or
 * `ms` pass (false).
 */
#define WATCH(self, ms, cond) ({						\
	uint64_t __end = test_now_ms() + (ms);					\
	bool __ok = false;							\
	while (!__ok && test_now_ms() < __end) {				\
		pthread_mutex_lock(&(self)->dev.lock);				\
		__ok = (cond);							\
		pthread_mutex_unlock(&(self)->dev.lock);			\
	}									\
	__ok; })

/* `n` copies of BIG bytes on queue `qid`, alternating two sources, then FENCE 1. */
static void push_copies(FIXTURE_DATA(conc) *self, int qid, int n)
{
	for (int i = 0; i < n; i++)
		push(self, qid, NPU_FW_TASK_COPY, VA + OFF_DST,
		     VA + OFF_SRC + (i & 1) * (BIG / 2), BIG / 2);
	push(self, qid, NPU_FW_TASK_FENCE, 1, 0, 0);
}

FIXTURE_SETUP(conc)
{
	struct npu_dev_config cfg;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	cfg.num_queues = QUEUES;
	cfg.num_cores = CORES;
	cfg.num_core_groups = 2;
	cfg.num_dma = 2;
	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	npu_dev_init(&self->dev, self->hbm, &cfg, NULL, NULL);
	self->pool.hbm = self->hbm;
	self->pool.next = TABLES;
	for (uint32_t ctx = 1; ctx <= 2; ctx++) {
		uint8_t *r = region(self, ctx);

		self->root[ctx] = pt_alloc(&self->pool);
		for (uint64_t p = 0; p < REGION; p += 2u << 20)
			pt_map(&self->pool, self->root[ctx], VA + p,
			       DATA + (ctx - 1) * REGION + p, 2u << 20, NPU_PTE_WRITE);
		memset(r + OFF_SRC, 0x11, BIG / 2);
		memset(r + OFF_SRC + BIG / 2, 0x22, BIG / 2);
	}
	ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	ASSERT_EQ(0, start_queue(self, 0, 1));
}

FIXTURE_TEARDOWN(conc)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

TEST_F(conc, control_block_counts_the_units)
{
	EXPECT_EQ(2, self->dev.ctrl->num_dma_engines);
	EXPECT_EQ(2, self->dev.ctrl->num_core_groups);
}

/* A queue's sync tasks run while another queue's copy is moving. */
TEST_F(conc, sync_tasks_run_beside_a_copy)
{
	push(self, 0, NPU_FW_TASK_COPY, VA + OFF_DST, VA + OFF_SRC, BIG);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	ASSERT_TRUE(WATCH(self, 2000, self->dev.eng.dma[0].busy || self->dev.eng.dma[1].busy));
	ASSERT_EQ(0, start_queue(self, 1, 2));
	push(self, 1, NPU_FW_TASK_NOP, 0, 0, 0);
	push(self, 1, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 1);
	ASSERT_EQ(0, wait_fence(self, 1, 1, 5000));
	/* Answered within the first 16 MiB copy, not after it. */
	EXPECT_EQ(0, done_seq(self, 0));
	ASSERT_EQ(0, wait_fence(self, 0, 1, 10000));
	EXPECT_EQ(0, memcmp(region(self, 1) + OFF_DST, region(self, 1) + OFF_SRC, BIG));
}

TEST_F(conc, two_copies_move_at_once)
{
	ASSERT_EQ(0, start_queue(self, 1, 2));
	push_copies(self, 0, 16);
	push_copies(self, 1, 16);
	ring(self, 0);
	ring(self, 1);
	EXPECT_TRUE(WATCH(self, 5000, self->dev.eng.dma[0].moving && self->dev.eng.dma[1].moving));
	ASSERT_EQ(0, wait_fence(self, 0, 1, 20000));
	ASSERT_EQ(0, wait_fence(self, 1, 1, 20000));
	/* The last copy, from the second source, is what is there. */
	for (uint32_t ctx = 1; ctx <= 2; ctx++)
		EXPECT_EQ(0, memcmp(region(self, ctx) + OFF_DST,
				    region(self, ctx) + OFF_SRC + BIG / 2, BIG / 2));
}

/* The long GEMM of fwsim_test_util.h on queue `qid` of `ctx`, then FENCE 1. */
static void push_gemm(FIXTURE_DATA(conc) *self, int qid, uint32_t ctx, uint64_t kdim)
{
	uint8_t *r = region(self, ctx);
	float *B = (float *)(r + OFF_B);

	*(float *)(r + OFF_A) = 1.0f;
	for (int i = 0; i < LONG_N; i++)
		B[i] = 1.0f;
	long_gemm_args((struct npu_op_args *)(r + OFF_ARGS), VA + OFF_A, VA + OFF_B,
		       VA + OFF_C, kdim);
	push(self, qid, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, qid, NPU_FW_TASK_FENCE, 1, 0, 0);
}

static int gemm_done(FIXTURE_DATA(conc) *self, uint32_t ctx, uint64_t kdim)
{
	const float *c = (const float *)(region(self, ctx) + OFF_C);

	for (int i = 0; i < LONG_M * LONG_N; i++)
		if (c[i] != (float)kdim)
			return 0;
	return 1;
}

TEST_F(conc, two_launches_compute_at_once)
{
	uint64_t expect, kdim = long_gemm_k(300, 1, &expect);

	ASSERT_EQ(0, start_queue(self, 1, 2));
	push_gemm(self, 0, 1, kdim);
	push_gemm(self, 1, 2, kdim);
	ring(self, 0);
	ring(self, 1);
	EXPECT_TRUE(WATCH(self, 5000, self->dev.eng.launch[0].active &&
				      self->dev.eng.launch[1].active));
	ASSERT_EQ(0, wait_fence(self, 0, 1, 60000));
	ASSERT_EQ(0, wait_fence(self, 1, 1, 60000));
	EXPECT_TRUE(gemm_done(self, 1, kdim));
	EXPECT_TRUE(gemm_done(self, 2, kdim));
}

/* Copy/compute overlap: a queue copies while another's launch computes. */
TEST_F(conc, copies_run_while_a_launch_computes)
{
	uint64_t expect, kdim = long_gemm_k(500, 1, &expect);

	ASSERT_EQ(0, start_queue(self, 1, 2));
	push_gemm(self, 0, 1, kdim);
	ring(self, 0);
	ASSERT_TRUE(WATCH(self, 5000, self->dev.eng.launch[0].active ||
				      self->dev.eng.launch[1].active));
	push_copies(self, 1, 2);
	ring(self, 1);
	ASSERT_EQ(0, wait_fence(self, 1, 1, 10000));
	EXPECT_EQ(0, done_seq(self, 0)) TH_LOG("the launch ended before the copies");
	ASSERT_EQ(0, wait_fence(self, 0, 1, 60000));
	EXPECT_TRUE(gemm_done(self, 1, kdim));
}

/*
 * QUEUE_STOP of a queue whose copy is moving: once answered, no chunk of
 * it is moving (the mailbox waited it out), nothing more lands, the queue
 * stays at the copy, and the engine is free for other queues.
 */
TEST_F(conc, queue_stop_waits_out_the_moving_chunk)
{
	uint8_t *dst = region(self, 1) + OFF_DST;
	uint8_t *snap = malloc(BIG / 2);
	bool moving = false;

	ASSERT_NE(NULL, snap);
	push_copies(self, 0, 32);
	ring(self, 0);
	ASSERT_TRUE(WATCH(self, 5000, self->dev.eng.dma[0].moving || self->dev.eng.dma[1].moving));
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
	pthread_mutex_lock(&self->dev.lock);
	for (int i = 0; i < 2; i++)
		moving |= self->dev.eng.dma[i].moving && self->dev.eng.dma[i].qid == 0;
	pthread_mutex_unlock(&self->dev.lock);
	EXPECT_FALSE(moving);
	memcpy(snap, dst, BIG / 2);
	usleep(20000);
	EXPECT_EQ(0, memcmp(snap, dst, BIG / 2));
	EXPECT_GT(32, load(&qslot(self, 0)->head));
	EXPECT_EQ(NPU_QUEUE_STOPPED, load(&qslot(self, 0)->state));

	ASSERT_EQ(0, start_queue(self, 1, 2));
	push_copies(self, 1, 2);
	ring(self, 1);
	EXPECT_EQ(0, wait_fence(self, 1, 1, 10000));
	free(snap);
}

/*
 * A queue waiting for a copy engine is starved, not executing: with both
 * engines taken by higher-priority queues, its exec_ms stays 0 and its
 * copy runs once they let one go.
 */
TEST_F(conc, a_queue_waiting_for_an_engine_counts_no_time)
{
	ASSERT_EQ(0, start_prio(self, 0, 1, 2));
	ASSERT_EQ(0, start_prio(self, 1, 1, 2));
	ASSERT_EQ(0, start_queue(self, 2, 2));
	push_copies(self, 0, 24);
	push_copies(self, 1, 24);
	ring(self, 0);
	ring(self, 1);
	ASSERT_TRUE(WATCH(self, 5000, self->dev.eng.dma[0].busy && self->dev.eng.dma[1].busy));
	push(self, 2, NPU_FW_TASK_COPY, VA + OFF_DST, VA + OFF_SRC, 4096);
	push(self, 2, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 2);
	usleep(30000);
	if (done_seq(self, 0) == 0 && done_seq(self, 1) == 0) {
		EXPECT_EQ(0, load(&qslot(self, 2)->head));
		EXPECT_EQ(0, load(&qslot(self, 2)->exec_ms));
	}
	EXPECT_EQ(0, wait_fence(self, 2, 1, 30000));
	EXPECT_EQ(0, wait_fence(self, 0, 1, 30000));
	EXPECT_LE(1, load(&qslot(self, 0)->exec_ms));
}

/* A fault in the middle of a copy stops its queue with every byte before it moved. */
TEST_F(conc, a_copy_faults_at_the_first_unmapped_byte)
{
	uint64_t end = VA + REGION;

	push(self, 0, NPU_FW_TASK_COPY, end - 4096, VA + OFF_SRC, 8192);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	EXPECT_NE(0, wait_fence(self, 0, 1, 5000));
	EXPECT_EQ(NPU_QUEUE_FAULTED, load(&qslot(self, 0)->state));
	EXPECT_EQ(NPU_FW_EFAULT, qslot(self, 0)->error);
	EXPECT_EQ(end, qslot(self, 0)->error_address);
	EXPECT_EQ(0x11, region(self, 1)[REGION - 1]);
	/* The engine let go: the other context's copy runs. */
	ASSERT_EQ(0, start_queue(self, 1, 2));
	push_copies(self, 1, 1);
	ring(self, 1);
	EXPECT_EQ(0, wait_fence(self, 1, 1, 10000));
}

TEST(config_limits_units)
{
	struct npu_dev_config c;

	npu_dev_config_default(&c);
	EXPECT_EQ(NULL, npu_dev_config_check(&c));
	c.num_dma = 0;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
	c.num_dma = NPU_DEV_DMA_MAX + 1;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
	npu_dev_config_default(&c);
	c.num_core_groups = c.num_cores + 1;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
	c.num_core_groups = 0;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
}

TEST_HARNESS_MAIN
