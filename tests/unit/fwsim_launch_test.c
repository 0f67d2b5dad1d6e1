// SPDX-License-Identifier: MIT
/*
 * Kernel launches on the AI cores while the device goes on: with the
 * engine thread started and a GEMM computing for seconds, the mailbox
 * answers, other queues run, QUEUE_STOP and RESET cancel the launch,
 * drop its output and answer only once it writes no more (it writes its
 * output in place), and exec_ms counts execution and nothing else.
 *
 * Checks are orderings where they can be ("answered while the launch's
 * queue still has it at head"); the few durations are bounds far above
 * what the device needs and far below the launch's own length.
 */
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"

#define HBM_SIZE	(32ull << 20)
#define RING		(2ull << 20)	/* rings from here */
#define DATA		(8ull << 20)	/* a 2 MiB region per context from here */
#define TABLES		(24ull << 20)	/* page tables from here */
#define ENTRIES		64
#define CORES		2
#define PATTERN		0xdeadbeefu

/* Inside a context's region (and at the same offsets from its VA). */
#define OFF_A		0x0
#define OFF_B		0x1000
#define OFF_C		0x10000		/* LONG_C_BYTES */
#define OFF_ARGS	0x40000
#define OFF_SMALL_C	0x50000
#define OFF_SRC		0x80000
#define OFF_DST		0xc0000
#define OFF_C2		0x100000	/* where the TLB test moves C */
#define REGION		(2ull << 20)

#define VA		TEST_VA_BASE

FIXTURE(launch) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	uint64_t root[3];	/* contexts 1 and 2 */
	uint32_t tail[4];
	uint64_t expect_ms;	/* what the long launch should take */
};

static struct npu_fw_queue *qslot(FIXTURE_DATA(launch) *self, int qid)
{
	return test_qslot(self->hbm, qid);
}

static uint8_t *region(FIXTURE_DATA(launch) *self, uint32_t ctx)
{
	return self->hbm + DATA + (ctx - 1) * REGION;
}

static int32_t start_queue(FIXTURE_DATA(launch) *self, int qid, uint32_t ctx,
			   uint32_t priority)
{
	struct npu_fw_queue *q = qslot(self, qid);

	q->ring_offset = RING + (uint64_t)qid * ENTRIES * sizeof(struct npu_fw_task);
	q->ring_entries = ENTRIES;
	q->context = ctx;
	q->pt_root = self->root[ctx];
	q->priority = priority;
	q->tail = 0;
	self->tail[qid] = 0;
	return mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, qid, 0);
}

static void push(FIXTURE_DATA(launch) *self, int qid, uint16_t type,
		 uint64_t a0, uint64_t a1, uint64_t a2)
{
	test_push(self->hbm, qid, &self->tail[qid], type, a0, a1, a2);
}

static void ring(FIXTURE_DATA(launch) *self, int qid)
{
	test_ring(&self->dev, self->hbm, qid, self->tail[qid]);
}

static uint32_t load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Wait up to `ms` for queue `qid` to pass FENCE `seq`. */
static int wait_fence(FIXTURE_DATA(launch) *self, int qid, uint64_t seq, unsigned int ms)
{
	struct npu_fw_queue *q = qslot(self, qid);

	for (unsigned int i = 0; i < ms; i++) {
		if (__atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) >= seq)
			return 0;
		if (load(&q->state) != NPU_QUEUE_RUNNING)
			return -1;
		usleep(1000);
	}
	return -1;
}

/* Write a GEMM of depth `kdim` into context ctx's region, C filled with PATTERN. */
static void write_gemm(FIXTURE_DATA(launch) *self, uint32_t ctx, uint64_t off_c,
		       uint64_t kdim)
{
	uint8_t *r = region(self, ctx);
	float *B = (float *)(r + OFF_B);

	*(float *)(r + OFF_A) = 1.0f;
	for (int i = 0; i < LONG_N; i++)
		B[i] = 1.0f;
	for (uint64_t i = 0; i < LONG_C_BYTES; i += 4)
		memcpy(r + off_c + i, &(uint32_t){ PATTERN }, 4);
	long_gemm_args((struct npu_op_args *)(r + OFF_ARGS), VA + OFF_A, VA + OFF_B,
		       VA + off_c, kdim);
}

/* Every element of the C at `c` is `want` (a float) or, if raw, the pattern. */
static int c_is(const uint8_t *c, float want, int raw)
{
	for (uint64_t i = 0; i < LONG_C_BYTES; i += 4) {
		uint32_t u;
		float f;

		memcpy(&u, c + i, 4);
		memcpy(&f, c + i, 4);
		if (raw ? u != PATTERN : f != want)
			return 0;
	}
	return 1;
}

/*
 * Queue `qid` of `ctx`: FENCE 1, the GEMM, FENCE 2, then wait for FENCE 1,
 * so the launch is about to be handed (or was handed) to the cores.
 */
static void launch_long(FIXTURE_DATA(launch) *self, struct __test_metadata *_metadata,
			int qid, uint32_t ctx, uint64_t kdim)
{
	write_gemm(self, ctx, OFF_C, kdim);
	push(self, qid, NPU_FW_TASK_FENCE, 1, 0, 0);
	push(self, qid, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, qid, NPU_FW_TASK_FENCE, 2, 0, 0);
	ring(self, qid);
	ASSERT_EQ(0, wait_fence(self, qid, 1, 5000));
	/* The kernel task is next: a few ms and it is computing. */
	usleep(20000);
}

FIXTURE_SETUP(launch)
{
	struct npu_dev_config cfg;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	cfg.num_queues = 4;
	cfg.num_cores = CORES;
	/* One group: these tests are about a launch holding the cores; the
	 * groups computing side by side are fwsim_concurrency_test.c's. */
	cfg.num_core_groups = 1;
	cfg.fault_injection = true;
	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	npu_dev_init(&self->dev, self->hbm, &cfg, NULL, NULL);
	self->pool.hbm = self->hbm;
	self->pool.next = TABLES;
	for (uint32_t ctx = 1; ctx <= 2; ctx++) {
		self->root[ctx] = pt_alloc(&self->pool);
		for (uint64_t p = 0; p < REGION; p += 4096)
			pt_map(&self->pool, self->root[ctx], VA + p,
			       DATA + (ctx - 1) * REGION + p, 4096, NPU_PTE_WRITE);
	}
	ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
}

FIXTURE_TEARDOWN(launch)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

TEST_F(launch, mailbox_answers_while_a_launch_computes)
{
	struct npu_fw_queue *q = qslot(self, 0);
	struct npu_fw_mbox *mb = &self->dev.ctrl->mbox;

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	launch_long(self, _metadata, 0, 1, long_gemm_k(4000, CORES, &self->expect_ms));
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_PING, 0x5eed, 0));
	EXPECT_EQ(0x5eed, mb->result[0]);
	EXPECT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 1, 0));
	EXPECT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 0, 0));
	/* Answered while the launch still computes. */
	EXPECT_EQ(1, load(&q->head)) TH_LOG("launch expected to take %llu ms",
					    (unsigned long long)self->expect_ms);
	EXPECT_EQ(NPU_QUEUE_RUNNING, load(&q->state));
	EXPECT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
}

/*
 * The output's translation is in the TLB (a FILL wrote it) when the host
 * moves the output and invalidates, mid-launch: the launch, writing its
 * output in place, is cancelled and runs again into a private buffer,
 * scattered to the new pages; once the invalidation is answered the old
 * ones are never written again.
 */
TEST_F(launch, tlb_invalidate_holds_for_the_scatter)
{
	struct npu_fw_queue *q = qslot(self, 0);
	uint8_t *r = region(self, 1), *old;
	uint64_t kdim = long_gemm_k(1500, CORES, &self->expect_ms);

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	write_gemm(self, 1, OFF_C, kdim);
	for (uint64_t i = 0; i < LONG_C_BYTES; i += 4)
		memcpy(r + OFF_C2 + i, &(uint32_t){ PATTERN }, 4);
	push(self, 0, NPU_FW_TASK_FILL, VA + OFF_C, LONG_C_BYTES, PATTERN);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	push(self, 0, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_FENCE, 2, 0, 0);
	ring(self, 0);
	ASSERT_EQ(0, wait_fence(self, 0, 1, 5000));
	usleep(20000);

	/* Move C's pages under the launch, as a driver migrating memory. */
	for (uint64_t p = 0; p < LONG_C_BYTES; p += 4096)
		pt_map(&self->pool, self->root[1], VA + OFF_C + p,
		       DATA + OFF_C2 + p, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 1, 0));
	EXPECT_EQ(2, load(&q->head));		/* answered mid-launch */
	old = malloc(LONG_C_BYTES);
	ASSERT_NE(NULL, old);
	memcpy(old, r + OFF_C, LONG_C_BYTES);

	ASSERT_EQ(0, wait_fence(self, 0, 2, 60000)) TH_LOG("state %u error %u",
							   q->state, q->error);
	EXPECT_TRUE(c_is(r + OFF_C2, (float)kdim, 0));
	EXPECT_EQ(0, memcmp(old, r + OFF_C, LONG_C_BYTES));
	free(old);
}

/*
 * The launch reads A and B in place. Mid-launch the host moves them to
 * new pages (same values), invalidates, and once that is answered
 * poisons the old pages, as a driver giving them to someone else would:
 * no element of C may have read the poison. The answer comes while the
 * launch still has its queue's head (the device cancelled it and runs it
 * again rather than hold the mailbox for its whole length).
 */
static void inputs_read_in_place(FIXTURE_DATA(launch) *self,
				 struct __test_metadata *_metadata, bool posted)
{
	struct npu_fw_queue *q = qslot(self, 0);
	uint8_t *r = region(self, 1);
	uint64_t kdim = long_gemm_k(1500, CORES, &self->expect_ms);

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	launch_long(self, _metadata, 0, 1, kdim);
	memcpy(r + OFF_C2, r + OFF_A, 2 * 4096);	/* A's page, then B's */
	pt_map(&self->pool, self->root[1], VA + OFF_A, DATA + OFF_C2, 4096, NPU_PTE_WRITE);
	pt_map(&self->pool, self->root[1], VA + OFF_B, DATA + OFF_C2 + 4096, 4096,
	       NPU_PTE_WRITE);
	if (posted) {
		ASSERT_EQ(0, tlb_post_wait(&self->dev, 1));
	} else {
		ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 1, 0));
	}
	EXPECT_EQ(1, load(&q->head)) TH_LOG("launch expected to take %llu ms",
					    (unsigned long long)self->expect_ms);
	*(float *)(r + OFF_A) = 2.0f;
	for (int i = 0; i < LONG_N; i++)
		((float *)(r + OFF_B))[i] = 2.0f;

	ASSERT_EQ(0, wait_fence(self, 0, 2, 60000)) TH_LOG("state %u error %u",
							   q->state, q->error);
	EXPECT_TRUE(c_is(r + OFF_C, (float)kdim, 0));
}

TEST_F(launch, tlb_invalidate_waits_for_inputs_read_in_place)
{
	inputs_read_in_place(self, _metadata, false);
}

/* The same through a posted invalidation, which its own thread carries out. */
TEST_F(launch, a_posted_invalidation_waits_for_inputs_read_in_place)
{
	inputs_read_in_place(self, _metadata, true);
}

/*
 * A GEMM that adds to its C (beta 1) reads its output, so it reads no
 * input in place and TLB_INVALIDATE neither waits for it nor cancels it:
 * cancelled after computing into its output, it could not start over.
 * C = 1 + A B = 1 + kdim, once.
 */
TEST_F(launch, a_launch_reading_its_output_is_not_restarted_by_tlb_invalidate)
{
	struct npu_fw_queue *q = qslot(self, 0);
	uint8_t *r = region(self, 1);
	uint64_t kdim = long_gemm_k(500, CORES, &self->expect_ms);

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	write_gemm(self, 1, OFF_C, kdim);
	((struct npu_op_args *)(r + OFF_ARGS))->beta = 1.0f;
	for (uint64_t i = 0; i < LONG_C_BYTES; i += 4)
		*(float *)(r + OFF_C + i) = 1.0f;
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	push(self, 0, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_FENCE, 2, 0, 0);
	ring(self, 0);
	ASSERT_EQ(0, wait_fence(self, 0, 1, 60000));
	usleep(50000);	/* well into the launch: past settle's 20 ms, had it waited */
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 1, 0));
	ASSERT_EQ(0, wait_fence(self, 0, 2, 60000)) TH_LOG("state %u error %u",
							   q->state, q->error);
	EXPECT_TRUE(c_is(r + OFF_C, (float)kdim + 1.0f, 0));
}

/* A high-priority queue's launch computing holds up no other queue. */
TEST_F(launch, other_queues_run_while_a_launch_computes)
{
	struct npu_fw_queue *q0 = qslot(self, 0);
	uint8_t *r2 = region(self, 2);

	ASSERT_EQ(0, start_queue(self, 0, 1, NPU_FW_PRIORITIES - 1));
	ASSERT_EQ(0, start_queue(self, 1, 2, 0));
	launch_long(self, _metadata, 0, 1, long_gemm_k(4000, CORES, &self->expect_ms));
	for (int i = 0; i < 65536; i++)
		r2[OFF_SRC + i] = (uint8_t)(i * 7);
	push(self, 1, NPU_FW_TASK_COPY, VA + OFF_DST, VA + OFF_SRC, 65536);
	push(self, 1, NPU_FW_TASK_FILL, VA + OFF_DST + 65536, 4096, 0x01020304);
	push(self, 1, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 1);
	ASSERT_EQ(0, wait_fence(self, 1, 1, 60000));
	EXPECT_EQ(1, load(&q0->head)) TH_LOG("the launch finished first");
	EXPECT_EQ(0, memcmp(r2 + OFF_DST, r2 + OFF_SRC, 65536));
	EXPECT_EQ(0x01020304, *(uint32_t *)(r2 + OFF_DST + 65536));
	EXPECT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
}

/* A small GEMM on queue `qid` of context 2; returns ms until it completed. */
static uint64_t small_launch(FIXTURE_DATA(launch) *self, struct __test_metadata *_metadata,
			     int qid)
{
	uint8_t *r = region(self, 2);
	uint64_t t0 = test_now_ms();

	write_gemm(self, 2, OFF_SMALL_C, 256);
	push(self, qid, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, qid, NPU_FW_TASK_FENCE, 7, 0, 0);
	ring(self, qid);
	EXPECT_EQ(0, wait_fence(self, qid, 7, 60000));
	EXPECT_TRUE(c_is(r + OFF_SMALL_C, 256.0f, 0));
	return test_now_ms() - t0;
}

TEST_F(launch, queue_stop_cancels_the_launch_and_frees_the_cores)
{
	struct npu_fw_queue *q = qslot(self, 0);
	uint64_t t0, answered, small;

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	ASSERT_EQ(0, start_queue(self, 1, 2, 0));
	launch_long(self, _metadata, 0, 1, long_gemm_k(4000, CORES, &self->expect_ms));
	ASSERT_EQ(1, load(&q->head));
	t0 = test_now_ms();
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
	answered = test_now_ms() - t0;
	EXPECT_EQ(NPU_QUEUE_STOPPED, load(&q->state));
	EXPECT_EQ(1, load(&q->head));
	EXPECT_GT(self->expect_ms / 4, answered);
	/* It wrote C in place: once the stop is answered it writes no more. */
	EXPECT_TRUE(npu_cores_idle(&self->dev.groups[0], NULL));

	/* The cores drop the cancelled launch within ms: a new one runs. */
	small = small_launch(self, _metadata, 1);
	TH_LOG("stop answered in %llu ms, next launch done in %llu ms; the long one: %llu ms",
	       (unsigned long long)answered, (unsigned long long)small,
	       (unsigned long long)self->expect_ms);
	EXPECT_GT(self->expect_ms / 3, small);
	/* Discarded: the queue never moved past it. */
	EXPECT_EQ(1, load(&q->head));
	EXPECT_EQ(1, q->done_seq);
}

TEST_F(launch, reset_cancels_the_launch)
{
	struct npu_fw_queue *q = qslot(self, 0);
	uint64_t t0, answered;

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	launch_long(self, _metadata, 0, 1, long_gemm_k(4000, CORES, &self->expect_ms));
	t0 = test_now_ms();
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_RESET, 0, 0));
	answered = test_now_ms() - t0;
	EXPECT_EQ(NPU_QUEUE_STOPPED, load(&q->state));
	EXPECT_GT(self->expect_ms / 4, answered);
	EXPECT_TRUE(npu_cores_idle(&self->dev.groups[0], NULL));
	ASSERT_EQ(0, start_queue(self, 1, 2, 0));
	EXPECT_GT(self->expect_ms / 3, small_launch(self, _metadata, 1));
	EXPECT_EQ(1, load(&q->head));
}

/*
 * exec_ms of the computing queue advances, in steps well under the 20 ms
 * the interface promises; a queue blocked on an event or waiting for the
 * cores counts nothing.
 */
TEST_F(launch, exec_ms_counts_execution_only)
{
	struct npu_fw_queue *q0 = qslot(self, 0), *q1 = qslot(self, 1), *q2 = qslot(self, 2);
	struct npu_fw_sync *ev = (struct npu_fw_sync *)(self->hbm + NPU_FW_SYNC_TABLE) + 5;
	uint32_t seen = 0, changes = 0, first, last;
	uint64_t t0;

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	ASSERT_EQ(0, start_queue(self, 1, 2, 0));
	ASSERT_EQ(0, start_queue(self, 2, 2, 0));
	EXPECT_EQ(0, q0->exec_ms);
	push(self, 1, NPU_FW_TASK_EVENT_WAIT, 5, 0, 0);
	push(self, 1, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 1);
	launch_long(self, _metadata, 0, 1, long_gemm_k(4000, CORES, &self->expect_ms));
	write_gemm(self, 2, OFF_SMALL_C, 256);
	push(self, 2, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));	/* waits for the cores */
	push(self, 2, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 2);

	first = load(&q0->exec_ms);
	t0 = test_now_ms();
	while (test_now_ms() - t0 < 400) {
		uint32_t now = load(&q0->exec_ms);

		changes += now != seen;
		seen = now;
		usleep(2000);
	}
	last = load(&q0->exec_ms);
	EXPECT_EQ(1, load(&q0->head)) TH_LOG("the launch finished first");
	EXPECT_LE(first + 100, last) TH_LOG("exec_ms %u -> %u over 400 ms", first, last);
	EXPECT_GE(test_now_ms() - t0 + 50, (uint64_t)(last - first));
	EXPECT_LE(5, changes);			/* 20 or so if every 20 ms */
	EXPECT_EQ(0, load(&q1->exec_ms));
	EXPECT_EQ(0, load(&q1->head));
	EXPECT_EQ(0, load(&q2->exec_ms));
	EXPECT_EQ(0, load(&q2->head));

	/* Stopped: exec_ms stays; QUEUE_START zeroes it. */
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
	last = load(&q0->exec_ms);
	usleep(50000);
	EXPECT_EQ(last, load(&q0->exec_ms));
	EXPECT_EQ(0, wait_fence(self, 2, 1, 60000));	/* the cores are free */
	__atomic_store_n(&ev->value, 1, __ATOMIC_RELEASE);
	npu_dev_doorbell(&self->dev, NPU_VEC_QUEUE);
	EXPECT_EQ(0, wait_fence(self, 1, 1, 5000));
	EXPECT_EQ(0, load(&q1->exec_ms));
	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	EXPECT_EQ(0, load(&q0->exec_ms));
}

TEST_F(launch, finished_launch_is_scattered_and_counted)
{
	struct npu_fw_queue *q = qslot(self, 0);
	uint64_t kdim = long_gemm_k(600, CORES, &self->expect_ms), t0 = test_now_ms();

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	launch_long(self, _metadata, 0, 1, kdim);
	ASSERT_EQ(0, wait_fence(self, 0, 2, 60000)) TH_LOG("state %u error %u",
							   q->state, q->error);
	EXPECT_TRUE(c_is(region(self, 1) + OFF_C, (float)kdim, 0));
	EXPECT_LE(self->expect_ms / 4, load(&q->exec_ms)) TH_LOG("exec_ms %u", q->exec_ms);
	EXPECT_GE(test_now_ms() - t0 + 20, load(&q->exec_ms));
}

/* Queues that all launch share the cores in turn, as they share the engine. */
TEST_F(launch, queues_take_turns_on_the_cores)
{
	struct npu_fw_queue *q0 = qslot(self, 0), *q1 = qslot(self, 1);
	uint64_t kdim = long_gemm_k(150, CORES, &self->expect_ms);

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	ASSERT_EQ(0, start_queue(self, 1, 2, 0));
	write_gemm(self, 1, OFF_C, kdim);
	write_gemm(self, 2, OFF_C, kdim);
	push(self, 0, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	push(self, 1, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0, sizeof(struct npu_op_args));
	push(self, 1, NPU_FW_TASK_FENCE, 1, 0, 0);
	__atomic_store_n(&q0->tail, self->tail[0], __ATOMIC_RELEASE);
	ring(self, 1);
	ASSERT_EQ(0, wait_fence(self, 1, 1, 60000));
	/* q0's second launch went after q1's, not before. */
	EXPECT_GT(2, load(&q0->head)) TH_LOG("q0 at %u", q0->head);
	ASSERT_EQ(0, wait_fence(self, 0, 1, 60000));
	EXPECT_TRUE(c_is(region(self, 1) + OFF_C, (float)kdim, 0));
	EXPECT_TRUE(c_is(region(self, 2) + OFF_C, (float)kdim, 0));
	EXPECT_LE(1, load(&q1->exec_ms));
}

/* A hung context looks like a task running forever, and only that. */
TEST_F(launch, hung_context_counts_exec_time)
{
	struct npu_fw_queue *q0 = qslot(self, 0), *q1 = qslot(self, 1), *q2 = qslot(self, 2);
	uint32_t first;

	ASSERT_EQ(0, start_queue(self, 0, 1, 0));
	ASSERT_EQ(0, start_queue(self, 1, 1, 0));	/* hung, but no work */
	ASSERT_EQ(0, start_queue(self, 2, 2, 0));
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_INJECT,
				      NPU_FW_INJECT_HANG_CONTEXT, 1));
	push(self, 0, NPU_FW_TASK_FILL, VA + OFF_DST, 4096, 0x0a0b0c0d);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	push(self, 2, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 2);
	EXPECT_EQ(0, wait_fence(self, 2, 1, 5000));	/* other contexts go on */
	first = load(&q0->exec_ms);
	usleep(300000);
	EXPECT_LE(first + 100, load(&q0->exec_ms)) TH_LOG("exec_ms %u -> %u over 300 ms",
							    first, q0->exec_ms);
	EXPECT_EQ(0, load(&q0->head));
	EXPECT_EQ(0, load(&q1->exec_ms));
	EXPECT_EQ(0, load(&q2->exec_ms));

	/* Cleared: it runs, and counts nothing more than its tasks. */
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_INJECT, NPU_FW_INJECT_NONE, 0));
	EXPECT_EQ(0, wait_fence(self, 0, 1, 5000));
	EXPECT_EQ(0x0a0b0c0d, *(uint32_t *)(region(self, 1) + OFF_DST));
	first = load(&q0->exec_ms);
	usleep(50000);
	EXPECT_EQ(first, load(&q0->exec_ms));
}

TEST_HARNESS_MAIN
