// SPDX-License-Identifier: MIT
/*
 * The task engine of the firmware-sim core, in-process: queue slots,
 * rings, copies and fills through the MMU, fences, faults. Doorbells run
 * the engine inline, except in the test that starts the engine thread.
 */
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"

#define HBM_SIZE	(32ull << 20)
#define RING		(2ull << 20)	/* rings from here */
#define DATA		(8ull << 20)	/* buffers from here */
#define TABLES		(24ull << 20)	/* page tables from here */
#define ENTRIES		64

struct irqs {
	unsigned int queue;
};

static void on_irq(void *opaque, unsigned int vector)
{
	struct irqs *i = opaque;

	if (vector == NPU_VEC_QUEUE)
		__atomic_fetch_add(&i->queue, 1, __ATOMIC_RELAXED);
}

static const struct npu_dev_ops ops = { .raise_irq = on_irq };

FIXTURE(engine) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	struct irqs irqs;
	uint64_t root[3];	/* contexts 1 and 2 */
	uint32_t tail[4];
};

static struct npu_fw_queue *qslot(FIXTURE_DATA(engine) *self, int qid)
{
	return test_qslot(self->hbm, qid);
}

static int32_t start_queue(FIXTURE_DATA(engine) *self, int qid, uint32_t ctx)
{
	struct npu_fw_queue *q = qslot(self, qid);

	q->ring_offset = RING + (uint64_t)qid * ENTRIES * sizeof(struct npu_fw_task);
	q->ring_entries = ENTRIES;
	q->context = ctx;
	q->pt_root = self->root[ctx];
	q->tail = 0;
	self->tail[qid] = 0;
	return mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, qid, 0);
}

static void push(FIXTURE_DATA(engine) *self, int qid, uint16_t type,
		 uint64_t a0, uint64_t a1, uint64_t a2)
{
	test_push(self->hbm, qid, &self->tail[qid], type, a0, a1, a2);
}

static void ring(FIXTURE_DATA(engine) *self, int qid)
{
	test_ring(&self->dev, self->hbm, qid, self->tail[qid]);
}

/* Map `pages` 4 KiB pages of HBM at `hbm_off` to `va` in context `ctx`. */
static void map(FIXTURE_DATA(engine) *self, uint32_t ctx, uint64_t va,
		uint64_t hbm_off, int pages, uint64_t flags)
{
	for (int i = 0; i < pages; i++)
		pt_map(&self->pool, self->root[ctx], va + i * 4096ull,
		       hbm_off + i * 4096ull, 4096, flags);
}

FIXTURE_SETUP(engine)
{
	struct npu_dev_config cfg;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	cfg.num_queues = 4;
	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	self->irqs.queue = 0;
	npu_dev_init(&self->dev, self->hbm, &cfg, &ops, &self->irqs);
	self->pool.hbm = self->hbm;
	self->pool.next = TABLES;
	self->root[1] = pt_alloc(&self->pool);
	self->root[2] = pt_alloc(&self->pool);
}

FIXTURE_TEARDOWN(engine)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

TEST_F(engine, copy_fill_and_fence_in_order)
{
	uint64_t src = TEST_VA_BASE, dst = TEST_VA_BASE + (1 << 20);
	uint32_t *s = (uint32_t *)(self->hbm + DATA), *d = (uint32_t *)(self->hbm + DATA + (1 << 20));
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, src, DATA, 4, 0);			/* read-only is enough */
	map(self, 1, dst, DATA + (1 << 20), 4, NPU_PTE_WRITE);
	for (int i = 0; i < 4096; i++)
		s[i] = 0x1000u + i;
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_FILL, dst, 16384, 0xdeadbeef);
	push(self, 0, NPU_FW_TASK_COPY, dst + 100, src + 8, 1000);	/* unaligned */
	push(self, 0, NPU_FW_TASK_FENCE, 7, 0, 0);
	ring(self, 0);

	EXPECT_EQ(NPU_QUEUE_RUNNING, q->state);
	EXPECT_EQ(3, q->head);
	EXPECT_EQ(7, q->done_seq);
	EXPECT_EQ(1, self->irqs.queue);		/* the fence, nothing else */
	EXPECT_EQ(0xdeadbeef, d[0]);
	EXPECT_EQ(0, memcmp((uint8_t *)d + 100, (uint8_t *)s + 8, 1000));
	EXPECT_EQ(0xdeadbeef, d[(100 + 1000 + 3) / 4 + 1]);	/* fill after the copy's end */
	EXPECT_EQ(0xdeadbeef, d[4095]);
}

TEST_F(engine, copy_spans_pages_that_are_not_contiguous)
{
	uint64_t va = TEST_VA_BASE;

	/* Two virtually adjacent pages, physically apart and swapped. */
	pt_map(&self->pool, self->root[1], va, DATA + 8192, 4096, NPU_PTE_WRITE);
	pt_map(&self->pool, self->root[1], va + 4096, DATA, 4096, NPU_PTE_WRITE);
	map(self, 1, va + 65536, DATA + 65536, 2, NPU_PTE_WRITE);
	memset(self->hbm + DATA + 8192, 'a', 4096);
	memset(self->hbm + DATA, 'b', 4096);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_COPY, va + 65536, va, 8192);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	EXPECT_EQ(1, qslot(self, 0)->done_seq);
	EXPECT_EQ('a', self->hbm[DATA + 65536 + 4095]);
	EXPECT_EQ('b', self->hbm[DATA + 65536 + 4096]);
}

/* The same with the destination's pages apart: each chunk ends at a page of either side. */
TEST_F(engine, copy_into_pages_that_are_not_contiguous)
{
	uint64_t va = TEST_VA_BASE;

	map(self, 1, va, DATA + 65536, 2, 0);
	pt_map(&self->pool, self->root[1], va + (1 << 20), DATA + 8192, 4096, NPU_PTE_WRITE);
	pt_map(&self->pool, self->root[1], va + (1 << 20) + 4096, DATA, 4096, NPU_PTE_WRITE);
	memset(self->hbm + DATA + 65536, 'a', 4096);
	memset(self->hbm + DATA + 65536 + 4096, 'b', 4096);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	/* Half a page in, so the destination's page ends before the source's. */
	push(self, 0, NPU_FW_TASK_COPY, va + (1 << 20) + 2048, va, 4096);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	EXPECT_EQ(1, qslot(self, 0)->done_seq);
	EXPECT_EQ(0, self->hbm[DATA + 8192 + 2047]);
	EXPECT_EQ('a', self->hbm[DATA + 8192 + 2048]);
	EXPECT_EQ('a', self->hbm[DATA + 8192 + 4095]);
	EXPECT_EQ('a', self->hbm[DATA]);
	EXPECT_EQ('a', self->hbm[DATA + 2047]);
	EXPECT_EQ(0, self->hbm[DATA + 2048]);
	EXPECT_EQ(0, self->hbm[DATA + 8192 + 4096]);	/* what follows in HBM */
}

TEST_F(engine, fault_stops_only_that_queue)
{
	struct npu_fw_queue *q0 = qslot(self, 0), *q1 = qslot(self, 1);
	struct npu_fw_errlog *log = &self->dev.ctrl->errlog;
	uint64_t va = TEST_VA_BASE;

	map(self, 1, va, DATA, 1, NPU_PTE_WRITE);
	map(self, 2, va, DATA + 65536, 1, NPU_PTE_WRITE);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	ASSERT_EQ(0, start_queue(self, 1, 2));
	/* Context 1 reads a page only context 2 mapped elsewhere. */
	push(self, 0, NPU_FW_TASK_COPY, va, va + (1 << 20), 64);
	push(self, 0, NPU_FW_TASK_FILL, va, 4096, 0x11111111);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	push(self, 1, NPU_FW_TASK_FILL, va, 4096, 0x22222222);
	push(self, 1, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	ring(self, 1);

	EXPECT_EQ(NPU_QUEUE_FAULTED, q0->state);
	EXPECT_EQ(0, q0->head);				/* at the faulting task */
	EXPECT_EQ(0, q0->done_seq);
	EXPECT_EQ(NPU_FW_EFAULT, q0->error);
	EXPECT_EQ(NPU_ACCESS_READ, q0->error_access);
	EXPECT_EQ(va + (1 << 20), q0->error_address);
	EXPECT_EQ(0, *(uint32_t *)(self->hbm + DATA));	/* later tasks never ran */
	ASSERT_EQ(1, log->head);
	EXPECT_EQ(1, log->entries[0].context);
	EXPECT_EQ(va + (1 << 20), log->entries[0].address);

	EXPECT_EQ(NPU_QUEUE_RUNNING, q1->state);
	EXPECT_EQ(1, q1->done_seq);
	EXPECT_EQ(0x22222222, *(uint32_t *)(self->hbm + DATA + 65536));
	EXPECT_EQ(2, self->irqs.queue);			/* the fault and q1's fence */
}

TEST_F(engine, write_to_read_only_page_faults)
{
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, TEST_VA_BASE, DATA, 1, 0);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_FILL, TEST_VA_BASE, 4, 1);
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_FAULTED, q->state);
	EXPECT_EQ(NPU_ACCESS_WRITE, q->error_access);
	EXPECT_EQ(TEST_VA_BASE, q->error_address);
}

TEST_F(engine, malformed_tasks_fault_with_einval)
{
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, TEST_VA_BASE, DATA, 1, NPU_PTE_WRITE);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_FILL, TEST_VA_BASE, 6, 1);	/* not a multiple of 4 */
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_FAULTED, q->state);
	EXPECT_EQ(NPU_FW_EINVAL, q->error);

	ASSERT_EQ(0, start_queue(self, 1, 1));
	push(self, 1, 99, 0, 0, 0);
	ring(self, 1);
	EXPECT_EQ(NPU_QUEUE_FAULTED, qslot(self, 1)->state);
	EXPECT_EQ(NPU_FW_EINVAL, qslot(self, 1)->error);
}

/*
 * A FENCE's completion word (NPU_FW_CAP_FENCE_WRITE): seq lands at the
 * HBM offset it names, by physical address; one not 8-aligned, inside
 * the firmware's part or past HBM faults the queue and writes nothing.
 */
TEST_F(engine, fence_writes_its_completion_word)
{
	uint64_t *word = (uint64_t *)(self->hbm + DATA + 64);
	const uint64_t bad[] = { DATA + 68, 8, NPU_FW_RESERVED_SIZE - 8, HBM_SIZE - 4, HBM_SIZE };

	EXPECT_TRUE(self->dev.ctrl->caps & NPU_FW_CAP_FENCE_WRITE);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_FENCE, 5, DATA + 64, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 6, 0, 0);	/* none: the word stays */
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_RUNNING, qslot(self, 0)->state);
	EXPECT_EQ(6, qslot(self, 0)->done_seq);
	EXPECT_EQ(5, *word);
	push(self, 0, NPU_FW_TASK_FENCE, 7, HBM_SIZE - 8, 0);	/* the last word there is */
	ring(self, 0);
	EXPECT_EQ(7, *(uint64_t *)(self->hbm + HBM_SIZE - 8));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t caps = self->dev.ctrl->caps;	/* at offset 8 */

		ASSERT_EQ(0, start_queue(self, 1, 1));
		push(self, 1, NPU_FW_TASK_FENCE, 9, bad[i], 0);
		ring(self, 1);
		EXPECT_EQ(NPU_QUEUE_FAULTED, qslot(self, 1)->state) TH_LOG("offset %#llx",
									(unsigned long long)bad[i]);
		EXPECT_EQ(NPU_FW_EINVAL, qslot(self, 1)->error);
		EXPECT_EQ(0, qslot(self, 1)->done_seq);
		EXPECT_NE(9, *(uint32_t *)(self->hbm + DATA + 68));
		EXPECT_EQ(caps, self->dev.ctrl->caps);
		ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 1, 0));
	}
}

/* Sync ids: the last entry of the table works, one past it is refused. */
TEST_F(engine, sync_ids_past_the_table_fault_with_einval)
{
	struct npu_fw_sync *table = (struct npu_fw_sync *)(self->hbm + NPU_FW_SYNC_TABLE);
	uint8_t after[32], zero[32] = { 0 };

	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_EVENT_RECORD, NPU_FW_MAX_SYNCS - 1, 0, 0);
	push(self, 0, NPU_FW_TASK_NOTIFY_RECORD, NPU_FW_MAX_SYNCS - 2, 0, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	EXPECT_EQ(1, qslot(self, 0)->done_seq);
	EXPECT_EQ(1, table[NPU_FW_MAX_SYNCS - 1].value);
	EXPECT_EQ(1, table[NPU_FW_MAX_SYNCS - 2].value);

	for (int i = 0; i < 3; i++) {
		static const uint16_t types[] = { NPU_FW_TASK_EVENT_RECORD, NPU_FW_TASK_NOTIFY_RECORD,
						  NPU_FW_TASK_EVENT_RESET };
		int qid = 1 + i;

		memset(self->hbm + NPU_FW_SYNC_TABLE + NPU_FW_MAX_SYNCS * sizeof(*table), 0, sizeof(after));
		ASSERT_EQ(0, start_queue(self, qid, 1));
		push(self, qid, types[i], NPU_FW_MAX_SYNCS, 0, 0);
		push(self, qid, NPU_FW_TASK_FENCE, 1, 0, 0);
		ring(self, qid);
		EXPECT_EQ(NPU_QUEUE_FAULTED, qslot(self, qid)->state) TH_LOG("task type %u", types[i]);
		EXPECT_EQ(NPU_FW_EINVAL, qslot(self, qid)->error);
		EXPECT_EQ(0, qslot(self, qid)->done_seq);
		/* Nothing written where the table ends (host-managed HBM). */
		memcpy(after, self->hbm + NPU_FW_SYNC_TABLE + NPU_FW_MAX_SYNCS * sizeof(*table),
		       sizeof(after));
		EXPECT_EQ(0, memcmp(after, zero, sizeof(after)));
	}
}

/* An event record wakes host waiters: it raises the queue interrupt, with no fence after it. */
TEST_F(engine, event_record_raises_the_queue_interrupt)
{
	struct npu_fw_sync *table = (struct npu_fw_sync *)(self->hbm + NPU_FW_SYNC_TABLE);

	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_EVENT_RESET, 5, 0, 0);
	ring(self, 0);
	EXPECT_EQ(1, qslot(self, 0)->head);
	EXPECT_EQ(0, self->irqs.queue);		/* a reset wakes nobody */
	push(self, 0, NPU_FW_TASK_EVENT_RECORD, 5, 0, 0);
	ring(self, 0);
	EXPECT_EQ(2, qslot(self, 0)->head);
	EXPECT_EQ(1, table[5].value);
	EXPECT_EQ(1, self->irqs.queue);
}

/*
 * Queues of one priority share the device task by task: each step runs
 * one task of every runnable queue. Queue 0 writes 1, 2, 3 to a word while
 * queue 1 copies the word three times: interleaved, the copies see three
 * different values; one queue drained before the other, all the same.
 */
TEST_F(engine, equal_queues_take_turns)
{
	uint64_t va = TEST_VA_BASE, word = va, log = va + 64;
	uint32_t *w = (uint32_t *)(self->hbm + DATA), *l = w + 16;

	map(self, 1, va, DATA, 1, NPU_PTE_WRITE);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	ASSERT_EQ(0, start_queue(self, 1, 1));
	for (int i = 0; i < 3; i++) {
		push(self, 0, NPU_FW_TASK_FILL, word, 4, (uint32_t)i + 1);
		push(self, 1, NPU_FW_TASK_COPY, log + 4 * i, word, 4);
	}
	/* Both tails published, then one doorbell. */
	__atomic_store_n(&qslot(self, 0)->tail, self->tail[0], __ATOMIC_RELEASE);
	ring(self, 1);
	EXPECT_EQ(3, qslot(self, 0)->head);
	EXPECT_EQ(3, qslot(self, 1)->head);
	EXPECT_EQ(3, w[0]);
	EXPECT_LT(l[0], l[1]) TH_LOG("copies saw %u %u %u", l[0], l[1], l[2]);
	EXPECT_LT(l[1], l[2]) TH_LOG("copies saw %u %u %u", l[0], l[1], l[2]);
}

TEST_F(engine, queue_start_checks_the_slot)
{
	struct npu_fw_queue *q = qslot(self, 0);

	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 4, 0));
	q->ring_offset = RING;
	q->pt_root = self->root[1];
	q->context = 1;
	q->ring_entries = 48;				/* not a power of two */
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	q->ring_entries = 64;
	q->ring_offset = HBM_SIZE - 1024;		/* runs past the end */
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	q->ring_offset = 0;				/* the firmware's own area */
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	q->ring_offset = RING;
	q->context = 0;
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	q->context = 1;
	EXPECT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	EXPECT_EQ(NPU_QUEUE_RUNNING, q->state);
}

TEST_F(engine, stopped_queue_runs_nothing)
{
	map(self, 1, TEST_VA_BASE, DATA, 1, NPU_PTE_WRITE);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
	push(self, 0, NPU_FW_TASK_FILL, TEST_VA_BASE, 4, 0x5);
	ring(self, 0);
	EXPECT_EQ(0, qslot(self, 0)->head);
	EXPECT_EQ(0, *(uint32_t *)(self->hbm + DATA));
}

TEST_F(engine, engine_thread_runs_rung_work)
{
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, TEST_VA_BASE, DATA, 256, NPU_PTE_WRITE);
	ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	ASSERT_EQ(0, start_queue(self, 0, 1));
	for (uint64_t seq = 1; seq <= 50; seq++) {
		push(self, 0, NPU_FW_TASK_FILL, TEST_VA_BASE, 1 << 20, (uint32_t)seq);
		push(self, 0, NPU_FW_TASK_FENCE, seq, 0, 0);
		ring(self, 0);
		/* Never more than the ring holds in flight. */
		while (self->tail[0] - __atomic_load_n(&q->head, __ATOMIC_ACQUIRE) > ENTRIES - 2)
			usleep(100);
	}
	for (int i = 0; i < 5000 && __atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) != 50; i++)
		usleep(1000);
	EXPECT_EQ(50, q->done_seq);
	EXPECT_EQ(50, *(uint32_t *)(self->hbm + DATA + (1 << 20) - 4));
	EXPECT_LE(1, __atomic_load_n(&self->irqs.queue, __ATOMIC_RELAXED));
	npu_dev_stop_engine(&self->dev);
}

/* A dense 2-D fp32 tensor at `va`. */
static struct npu_op_tensor t2d(uint64_t va, uint64_t rows, uint64_t cols)
{
	struct npu_op_tensor t = { .va = va, .dtype = NPU_DT_F32, .ndim = 2,
				    .shape = { rows, cols }, .stride = { cols, 1 } };

	return t;
}

/* GEMM 8x16 by 16x4 with everything in device memory; `cores` > 0 threads. */
static void gemm_through_device(FIXTURE_DATA(engine) *self,
				struct __test_metadata *_metadata, int threaded)
{
	uint64_t va = TEST_VA_BASE;
	float *A = (float *)(self->hbm + DATA), *B = A + 128, *C = B + 64;
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA + 8192);
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, va, DATA, 3, NPU_PTE_WRITE);
	for (int i = 0; i < 128; i++)
		A[i] = (float)(i % 7) - 3;
	for (int i = 0; i < 64; i++)
		B[i] = (float)(i % 5) - 2;
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_GEMM;
	k->alpha = 1.0f;
	k->in[0] = t2d(va, 8, 16);
	k->in[1] = t2d(va + 512, 16, 4);
	k->out = t2d(va + 768, 8, 4);
	if (threaded)
		ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, va + 8192, 3, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	for (int i = 0; i < 2000 && __atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) != 1; i++)
		usleep(1000);
	ASSERT_EQ(1, q->done_seq) TH_LOG("state %u error %u", q->state, q->error);
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 4; j++) {
			float want = 0;

			for (int p = 0; p < 16; p++)
				want += A[i * 16 + p] * B[p * 4 + j];
			ASSERT_EQ(want, C[i * 4 + j]);
		}
	if (threaded)
		npu_dev_stop_engine(&self->dev);
}

/*
 * A launch whose output overlaps an input it reads in place: y = relu(x)
 * with y one element past x, in one run of device memory. Written in
 * place, each element would change the next one's input under the op;
 * the output goes through a private buffer instead and y is relu of x
 * as it was. On the cores (threaded) and inline.
 */
static void overlap_through_device(FIXTURE_DATA(engine) *self,
				   struct __test_metadata *_metadata, int threaded)
{
	uint64_t va = TEST_VA_BASE, n = threaded ? 200000 : 1000;
	float *x = (float *)(self->hbm + DATA), *want = malloc(n * sizeof(float));
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA + (1u << 20));
	struct npu_fw_queue *q = qslot(self, 0);

	ASSERT_NE(NULL, want);
	map(self, 1, va, DATA, 257, NPU_PTE_WRITE);
	for (uint64_t i = 0; i <= n; i++)
		x[i] = (float)((i * 7) % 11) - 5.0f;
	for (uint64_t i = 0; i < n; i++)
		want[i] = x[i] > 0 ? x[i] : 0.0f;
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_RELU;
	k->in[0] = (struct npu_op_tensor){ .va = va, .dtype = NPU_DT_F32, .ndim = 1,
					   .shape = { n }, .stride = { 1 } };
	k->out = k->in[0];
	k->out.va = va + 4;
	if (threaded)
		ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, va + (1u << 20), 0, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	for (int i = 0; i < 5000 && __atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) != 1; i++)
		usleep(1000);
	ASSERT_EQ(1, q->done_seq) TH_LOG("state %u error %u", q->state, q->error);
	for (uint64_t i = 0; i < n; i++) {
		ASSERT_EQ(want[i], x[i + 1]) TH_LOG("element %llu of %llu", (unsigned long long)i,
						    (unsigned long long)n);
	}
	if (threaded)
		npu_dev_stop_engine(&self->dev);
	free(want);
}

TEST_F(engine, an_output_overlapping_its_input_reads_the_input_as_it_was)
{
	overlap_through_device(self, _metadata, 0);
}

TEST_F(engine, an_output_overlapping_its_input_on_the_cores)
{
	overlap_through_device(self, _metadata, 1);
}

/*
 * out = x + y over n floats of device memory, through the engine (its
 * threads started when `threaded`): x's pages are swapped in HBM, so x
 * is contiguous in VA only and must be gathered, y is read where it
 * lies. n large enough goes to the core threads, small runs inline.
 */
static void add_through_device(FIXTURE_DATA(engine) *self, struct __test_metadata *_metadata,
			       uint64_t n, int threaded)
{
	uint64_t va = TEST_VA_BASE, bytes = n * 4, pages = (bytes + 4095) / 4096;
	uint64_t x_hbm = DATA, y_hbm = DATA + pages * 4096, o_hbm = y_hbm + pages * 4096;
	uint64_t k_hbm = o_hbm + pages * 4096;
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + k_hbm);
	struct npu_fw_queue *q = qslot(self, 0);
	float *y = (float *)(self->hbm + y_hbm), *o = (float *)(self->hbm + o_hbm);

	ASSERT_LE(2, pages);
	/* x: VA page i is HBM page pages - 1 - i */
	for (uint64_t i = 0; i < pages; i++) {
		float *page = (float *)(self->hbm + x_hbm + (pages - 1 - i) * 4096);

		pt_map(&self->pool, self->root[1], va + i * 4096, x_hbm + (pages - 1 - i) * 4096,
		       4096, NPU_PTE_WRITE);
		for (int j = 0; j < 1024; j++)
			page[j] = (float)(i * 1024 + j);
	}
	map(self, 1, va + pages * 4096, y_hbm, (int)(2 * pages + 1), NPU_PTE_WRITE);
	for (uint64_t i = 0; i < n; i++)
		y[i] = (float)(i % 13);
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_ADD;
	k->in[0] = (struct npu_op_tensor){ .va = va, .dtype = NPU_DT_F32, .ndim = 1,
					   .shape = { n }, .stride = { 1 } };
	k->in[1] = k->in[0];
	k->in[1].va = va + pages * 4096;
	k->out = k->in[0];
	k->out.va = va + 2 * pages * 4096;
	if (threaded)
		ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, va + 3 * pages * 4096, 0, sizeof(struct npu_op_args));
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	for (int i = 0; i < 5000 && __atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) != 1; i++)
		usleep(1000);
	ASSERT_EQ(1, q->done_seq) TH_LOG("state %u error %u", q->state, q->error);
	for (uint64_t i = 0; i < n; i++) {
		ASSERT_EQ((float)i + (float)(i % 13), o[i]) TH_LOG("element %lu", i);
	}
	if (threaded)
		npu_dev_stop_engine(&self->dev);
}

TEST_F(engine, kernel_reads_inputs_on_pages_that_are_not_contiguous)
{
	add_through_device(self, _metadata, 3000, 0);
}

TEST_F(engine, kernel_large_enough_runs_on_the_core_threads)
{
	add_through_device(self, _metadata, 1 << 17, 1);
}

TEST_F(engine, kernel_gemm_inline)
{
	gemm_through_device(self, _metadata, 0);
}

TEST_F(engine, kernel_gemm_with_the_threads_started)
{
	gemm_through_device(self, _metadata, 1);
}

TEST_F(engine, kernel_with_bad_arguments_fails_the_task)
{
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA);
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, TEST_VA_BASE, DATA, 1, NPU_PTE_WRITE);
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_GEMM;				/* shapes all zero */
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, TEST_VA_BASE, 0, sizeof(struct npu_op_args));
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_FAULTED, q->state);
	EXPECT_EQ(NPU_FW_EKERNEL, q->error);
	EXPECT_EQ(TEST_VA_BASE, q->error_address);
}

/* The device reads no more of the block than the task says it holds. */
TEST_F(engine, kernel_with_a_short_argument_block_fails_the_task)
{
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA);
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, TEST_VA_BASE, DATA, 1, NPU_PTE_WRITE);
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_RELU;
	k->in[0] = t2d(TEST_VA_BASE + 1024, 4, 4);
	k->out = t2d(TEST_VA_BASE + 2048, 4, 4);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, TEST_VA_BASE, 0, NPU_OP_ARGS_V1_SIZE - 1);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_FAULTED, q->state);
	EXPECT_EQ(NPU_FW_EKERNEL, q->error);
	EXPECT_EQ(TEST_VA_BASE, q->error_address);
}

/*
 * A block of the first version (before the window) still runs the ops it
 * had; the rest of the struct reads as zeros, so a window op sent in such
 * a block has no window and fails, whatever the bytes after it hold.
 */
TEST_F(engine, a_first_version_block_runs_and_leaves_the_window_zero)
{
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA);
	struct npu_fw_queue *q = qslot(self, 0);
	float *x = (float *)(self->hbm + DATA + 1024), *y = (float *)(self->hbm + DATA + 2048);

	map(self, 1, TEST_VA_BASE, DATA, 1, NPU_PTE_WRITE);
	memset(k, 0, sizeof(*k));
	for (int i = 0; i < 16; i++)
		x[i] = (float)i - 8;
	k->op = NPU_OP_RELU;
	k->in[0] = t2d(TEST_VA_BASE + 1024, 4, 4);
	k->out = t2d(TEST_VA_BASE + 2048, 4, 4);
	/* a window past the block's end, which the device must not read */
	k->win = (struct npu_op_window){ .stride = { 1, 1 }, .dilation = { 1, 1 } };
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, TEST_VA_BASE, 0, NPU_OP_ARGS_V1_SIZE);
	ring(self, 0);
	ASSERT_EQ(NPU_QUEUE_RUNNING, q->state);
	for (int i = 0; i < 16; i++)
		EXPECT_EQ(i > 8 ? (float)i - 8 : 0.0f, y[i]);
	k->op = NPU_OP_MAXPOOL2D;
	k->in[0].ndim = k->out.ndim = 4;
	k->in[0].shape[2] = k->in[0].shape[3] = k->out.shape[2] = k->out.shape[3] = 1;
	k->in[0].shape[0] = k->out.shape[0] = k->in[0].shape[1] = k->out.shape[1] = 4;
	k->in[0].stride[0] = k->out.stride[0] = 4;
	k->in[0].stride[1] = k->out.stride[1] = 1;
	k->in[0].stride[2] = k->out.stride[2] = k->in[0].stride[3] = k->out.stride[3] = 1;
	k->win.kernel[0] = k->win.kernel[1] = 1;
	push(self, 0, NPU_FW_TASK_KERNEL, TEST_VA_BASE, 0, NPU_OP_ARGS_SIZE);
	ring(self, 0);
	ASSERT_EQ(NPU_QUEUE_RUNNING, q->state) TH_LOG("error %u", q->error);
	push(self, 0, NPU_FW_TASK_KERNEL, TEST_VA_BASE, 0, NPU_OP_ARGS_V1_SIZE);
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_FAULTED, q->state);
	EXPECT_EQ(NPU_FW_EKERNEL, q->error);
}

TEST_F(engine, kernel_on_unmapped_tensor_faults)
{
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA);
	struct npu_fw_queue *q = qslot(self, 0);

	map(self, 1, TEST_VA_BASE, DATA, 1, NPU_PTE_WRITE);
	memset(k, 0, sizeof(*k));
	k->op = NPU_OP_RELU;
	k->in[0] = t2d(TEST_VA_BASE + (1 << 20), 4, 4);	/* never mapped */
	k->out = t2d(TEST_VA_BASE + 1024, 4, 4);
	ASSERT_EQ(0, start_queue(self, 0, 1));
	push(self, 0, NPU_FW_TASK_KERNEL, TEST_VA_BASE, 0, sizeof(struct npu_op_args));
	ring(self, 0);
	EXPECT_EQ(NPU_QUEUE_FAULTED, q->state);
	EXPECT_EQ(NPU_FW_EFAULT, q->error);
	EXPECT_EQ(TEST_VA_BASE + (1 << 20), q->error_address);
}

TEST_HARNESS_MAIN
