// SPDX-License-Identifier: MIT
/*
 * Profiling rings on the firmware-sim device core, in-process: a record
 * per completed task with its batch, its place, the unit it ran on and
 * its start and end on the device clock; the tasks of a RUN_LIST one by
 * one; a full ring that counts what it drops; recording switched by the
 * host; bad rings refused at QUEUE_START with nothing changed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"
#include "npu_oplib.h"

#define HBM_SIZE	(64ull << 20)
#define RING		(1ull << 20)
#define PROF		(2ull << 20)	/* profiling rings, host-managed HBM */
#define DATA		(4ull << 20)	/* 8 MiB at VA, writable */
#define LIST		(12ull << 20)	/* 2 MiB at LIST_VA, read-only */
#define TABLES		(32ull << 20)
#define ENTRIES		64
#define VA		TEST_VA_BASE
#define LIST_VA		(VA + (8ull << 20))
#define TAG		0x1234

FIXTURE(prof) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	uint64_t root;
	uint32_t tail[2];
};

static struct npu_fw_prof_ring *hdr(FIXTURE_DATA(prof) *self)
{
	return (struct npu_fw_prof_ring *)(self->hbm + PROF);
}

static struct npu_fw_prof_record *rec(FIXTURE_DATA(prof) *self, uint32_t i, uint32_t entries)
{
	return (struct npu_fw_prof_record *)(hdr(self) + 1) + (i & (entries - 1));
}

/* Start queue `qid` with the ring at PROF of `entries` records, or none. */
static int32_t start(FIXTURE_DATA(prof) *self, int qid, uint64_t ring, uint64_t arg)
{
	struct npu_fw_queue *q = test_qslot(self->hbm, qid);

	q->ring_offset = RING + (uint64_t)qid * ENTRIES * sizeof(struct npu_fw_task);
	q->ring_entries = ENTRIES;
	q->context = 1;
	q->pt_root = self->root;
	q->tail = 0;
	self->tail[qid] = 0;
	return mbox_cmd3(&self->dev, NPU_FW_CMD_QUEUE_START, qid, ring, arg);
}

static uint64_t prof_arg(uint32_t entries, uint16_t tag)
{
	return (uint64_t)tag << 32 | entries;
}

static void push(FIXTURE_DATA(prof) *self, int qid, uint16_t type, uint64_t a0, uint64_t a1,
		 uint64_t a2)
{
	test_push(self->hbm, qid, &self->tail[qid], type, a0, a1, a2);
}

static void ring(FIXTURE_DATA(prof) *self, int qid)
{
	test_ring(&self->dev, self->hbm, qid, self->tail[qid]);
}

static uint32_t load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

FIXTURE_SETUP(prof)
{
	struct npu_dev_config cfg;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	cfg.num_queues = 2;
	cfg.num_cores = 2;
	cfg.num_core_groups = 2;
	cfg.num_dma = 2;
	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	npu_dev_init(&self->dev, self->hbm, &cfg, NULL, NULL);
	self->pool = (struct pt_pool){ .hbm = self->hbm, .next = TABLES };
	self->root = pt_alloc(&self->pool);
	for (uint64_t p = 0; p < (8ull << 20); p += 2u << 20)
		pt_map(&self->pool, self->root, VA + p, DATA + p, 2u << 20, NPU_PTE_WRITE);
	pt_map(&self->pool, self->root, LIST_VA, LIST, 2u << 20, 0);
	EXPECT_TRUE(self->dev.ctrl->caps & NPU_FW_CAP_PROFILE);
}

FIXTURE_TEARDOWN(prof)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

static void expect_rec(struct __test_metadata *_metadata, const struct npu_fw_prof_record *r,
		       uint32_t seq, uint16_t index, uint8_t type)
{
	EXPECT_EQ(seq, r->seq);
	EXPECT_EQ(index, r->index);
	EXPECT_EQ(type, r->type);
	EXPECT_EQ(TAG, r->tag);
	EXPECT_NE(0, r->start_ns);
	EXPECT_LE(r->start_ns, r->end_ns);
}

/* Every task but the FENCE, numbered by batch and place, on the device clock. */
TEST_F(prof, records_each_task_with_its_batch_and_place)
{
	uint64_t *stamp = (uint64_t *)(self->hbm + DATA + 0x100);
	struct npu_fw_prof_record *r;

	hdr(self)->enable = 1;
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(64, TAG)));
	push(self, 0, NPU_FW_TASK_FILL, VA, 4096, 0x5a5a5a5a);
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	push(self, 0, NPU_FW_TASK_TIMESTAMP, VA + 0x100, 0, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	push(self, 0, NPU_FW_TASK_EVENT_RECORD, 3, 0, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 2, 0, 0);
	ring(self, 0);
	ASSERT_EQ(2, test_qslot(self->hbm, 0)->done_seq);
	ASSERT_EQ(4, load(&hdr(self)->head));
	EXPECT_EQ(0, hdr(self)->dropped);
	expect_rec(_metadata, rec(self, 0, 64), 1, 0, NPU_FW_TASK_FILL);
	expect_rec(_metadata, rec(self, 1, 64), 1, 1, NPU_FW_TASK_NOP);
	expect_rec(_metadata, rec(self, 2, 64), 1, 2, NPU_FW_TASK_TIMESTAMP);
	expect_rec(_metadata, rec(self, 3, 64), 2, 0, NPU_FW_TASK_EVENT_RECORD);
	for (uint32_t i = 0; i < 4; i++) {
		r = rec(self, i, 64);
		EXPECT_EQ(0, r->flags);
		EXPECT_EQ(0, r->list_pos);
		EXPECT_EQ(NPU_FW_UNIT_SCHEDULER, r->unit);	/* no engine threads */
		if (i)
			EXPECT_LE(rec(self, i - 1, 64)->end_ns, r->start_ns);
	}
	/* The device clock the TIMESTAMP wrote lies inside its record. */
	r = rec(self, 2, 64);
	EXPECT_LE(r->start_ns, *stamp);
	EXPECT_GE(r->end_ns, *stamp);
	/* Past the ring's last record, nothing written. */
	EXPECT_EQ(0, rec(self, 4, 64)->seq);
}

/* A RUN_LIST's tasks one by one, all in the place of the RUN_LIST. */
TEST_F(prof, list_tasks_are_recorded_in_the_place_of_their_list)
{
	struct npu_fw_task *list = (struct npu_fw_task *)(self->hbm + LIST);
	struct npu_fw_task *rt;

	list[0] = (struct npu_fw_task){ .type = NPU_FW_TASK_FILL, .args = { VA, 64, 1 } };
	list[1] = (struct npu_fw_task){ .type = NPU_FW_TASK_COPY, .args = { VA + 64, VA, 64 } };
	list[2] = (struct npu_fw_task){ .type = NPU_FW_TASK_NOP };
	hdr(self)->enable = 1;
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(64, TAG)));
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	rt = (struct npu_fw_task *)(self->hbm + RING) + self->tail[0]++;
	*rt = (struct npu_fw_task){ .type = NPU_FW_TASK_RUN_LIST, .args = { LIST_VA, 3, 0, 0, 0 } };
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	ASSERT_EQ(1, test_qslot(self->hbm, 0)->done_seq);
	ASSERT_EQ(5, load(&hdr(self)->head));
	expect_rec(_metadata, rec(self, 0, 64), 1, 0, NPU_FW_TASK_NOP);
	expect_rec(_metadata, rec(self, 1, 64), 1, 1, NPU_FW_TASK_FILL);
	expect_rec(_metadata, rec(self, 2, 64), 1, 1, NPU_FW_TASK_COPY);
	expect_rec(_metadata, rec(self, 3, 64), 1, 1, NPU_FW_TASK_NOP);
	expect_rec(_metadata, rec(self, 4, 64), 1, 2, NPU_FW_TASK_NOP);
	for (uint32_t i = 1; i < 4; i++) {
		EXPECT_EQ(NPU_FW_PROF_IN_LIST, rec(self, i, 64)->flags);
		EXPECT_EQ(i - 1, rec(self, i, 64)->list_pos);
	}
	EXPECT_EQ(0, rec(self, 4, 64)->flags);
}

/* A ring the host does not drain keeps its oldest records and counts the rest. */
TEST_F(prof, a_full_ring_counts_what_it_drops)
{
	hdr(self)->enable = 1;
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(NPU_FW_PROF_MIN, TAG)));
	for (int i = 0; i < 20; i++)
		push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	ring(self, 0);
	ASSERT_EQ(20, test_qslot(self->hbm, 0)->head);
	EXPECT_EQ(16, load(&hdr(self)->head));
	EXPECT_EQ(4, load(&hdr(self)->dropped));
	for (uint32_t i = 0; i < 16; i++)
		EXPECT_EQ(i, rec(self, i, 16)->index);
	/* Drained: room again, and the places keep counting past the lost ones. */
	__atomic_store_n(&hdr(self)->tail, 16, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++)
		push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	ring(self, 0);
	EXPECT_EQ(19, load(&hdr(self)->head));
	EXPECT_EQ(4, load(&hdr(self)->dropped));
	for (uint32_t i = 0; i < 3; i++)
		EXPECT_EQ(20 + i, rec(self, 16 + i, 16)->index);
	EXPECT_EQ(3, rec(self, 3, 16)->index);		/* not overwritten */
}

/* Off, nothing is written; the batches are still counted for when it is on. */
TEST_F(prof, recording_follows_the_hosts_switch)
{
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(64, TAG)));
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 7, 0, 0);
	ring(self, 0);
	EXPECT_EQ(0, load(&hdr(self)->head));
	EXPECT_EQ(0, load(&hdr(self)->dropped));
	EXPECT_EQ(0, rec(self, 0, 64)->seq);
	hdr(self)->enable = 1;
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	push(self, 0, NPU_FW_TASK_FENCE, 8, 0, 0);
	ring(self, 0);
	ASSERT_EQ(1, load(&hdr(self)->head));
	expect_rec(_metadata, rec(self, 0, 64), 8, 0, NPU_FW_TASK_NOP);
	/* Queue 1 has no ring: it writes nowhere, and QUEUE_START cleared none of 0's. */
	ASSERT_EQ(0, start(self, 1, 0, 0));
	push(self, 1, NPU_FW_TASK_NOP, 0, 0, 0);
	ring(self, 1);
	EXPECT_EQ(1, load(&hdr(self)->head));
}

/* A wait's record starts when it held its queue up. */
TEST_F(prof, a_wait_shows_from_when_it_held_the_queue)
{
	struct npu_fw_prof_record *r;

	hdr(self)->enable = 1;
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(64, TAG)));
	ASSERT_EQ(0, start(self, 1, 0, 0));
	push(self, 0, NPU_FW_TASK_EVENT_WAIT, 9, 0, 0);
	ring(self, 0);
	EXPECT_EQ(0, load(&hdr(self)->head));
	usleep(20000);
	push(self, 1, NPU_FW_TASK_EVENT_RECORD, 9, 0, 0);
	ring(self, 1);
	ASSERT_EQ(1, load(&hdr(self)->head));
	r = rec(self, 0, 64);
	expect_rec(_metadata, r, 1, 0, NPU_FW_TASK_EVENT_WAIT);
	EXPECT_GE(r->end_ns - r->start_ns, 20000000ull);
}

/* With the engine threads, copies name their copy engine and launches their group. */
TEST_F(prof, units_are_the_copy_engine_and_the_core_group)
{
	struct npu_op_args *k = (struct npu_op_args *)(self->hbm + DATA + 0x10000);
	float *a = (float *)(self->hbm + DATA), *b = (float *)(self->hbm + DATA + 0x1000);
	struct npu_fw_prof_record *r;
	uint64_t expect_ms;

	*a = 1.0f;
	for (int i = 0; i < LONG_N; i++)
		b[i] = 1.0f;
	long_gemm_args(k, VA, VA + 0x1000, VA + (1ull << 20), long_gemm_k(20, 1, &expect_ms));
	ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	hdr(self)->enable = 1;
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(64, TAG)));
	push(self, 0, NPU_FW_TASK_COPY, VA + (4ull << 20), VA + (2ull << 20), 1u << 20);
	push(self, 0, NPU_FW_TASK_KERNEL, VA + 0x10000, 1, sizeof(*k));
	push(self, 0, NPU_FW_TASK_FENCE, 1, 0, 0);
	ring(self, 0);
	for (int i = 0; i < 60000 && load(&hdr(self)->head) < 2; i++)
		usleep(1000);
	ASSERT_EQ(2, load(&hdr(self)->head));
	EXPECT_EQ(NPU_QUEUE_RUNNING, load(&test_qslot(self->hbm, 0)->state));
	r = rec(self, 0, 64);
	expect_rec(_metadata, r, 1, 0, NPU_FW_TASK_COPY);
	EXPECT_EQ(NPU_FW_UNIT_DMA, NPU_FW_UNIT_KIND(r->unit));
	EXPECT_GT(2, NPU_FW_UNIT_INDEX(r->unit));
	r = rec(self, 1, 64);
	expect_rec(_metadata, r, 1, 1, NPU_FW_TASK_KERNEL);
	EXPECT_EQ(NPU_FW_UNIT_CORES, NPU_FW_UNIT_KIND(r->unit));
	EXPECT_GT(2, NPU_FW_UNIT_INDEX(r->unit));
	EXPECT_LE(rec(self, 0, 64)->end_ns, r->start_ns);
}

/* Each bad ring fails QUEUE_START and leaves the running queue as it was. */
TEST_F(prof, bad_rings_are_refused_and_change_nothing)
{
	const struct { uint64_t ring, arg; } bad[] = {
		{ PROF + 32, prof_arg(64, 0) },			/* not 64-aligned */
		{ NPU_FW_RESERVED_SIZE - 64, prof_arg(64, 0) },	/* the firmware's */
		{ PROF, prof_arg(48, 0) },			/* not a power of two */
		{ PROF, prof_arg(NPU_FW_PROF_MIN / 2, 0) },
		{ PROF, prof_arg(NPU_FW_PROF_MAX * 2, 0) },
		{ PROF, prof_arg(64, 0) | 1ull << 48 },		/* reserved bits */
		{ HBM_SIZE - 64, prof_arg(16, 0) },		/* records past HBM */
		{ HBM_SIZE, prof_arg(16, 0) },
		{ 0, prof_arg(64, 0) },				/* a size without a ring */
	};
	struct npu_fw_queue *q = test_qslot(self->hbm, 0);

	hdr(self)->enable = 1;
	ASSERT_EQ(0, start(self, 0, PROF, prof_arg(64, TAG)));
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	ring(self, 0);
	ASSERT_EQ(1, load(&hdr(self)->head));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* A slot fit to start but for the ring. */
		q->tail = 0;
		EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd3(&self->dev, NPU_FW_CMD_QUEUE_START, 0,
						    bad[i].ring, bad[i].arg))
			TH_LOG("ring %#llx arg %#llx", (unsigned long long)bad[i].ring,
			       (unsigned long long)bad[i].arg);
		q->tail = self->tail[0];
		EXPECT_EQ(NPU_QUEUE_RUNNING, q->state);
		EXPECT_EQ(1, q->head);
	}
	/* The queue still records where it did, numbering on. */
	push(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
	ring(self, 0);
	ASSERT_EQ(2, load(&hdr(self)->head));
	expect_rec(_metadata, rec(self, 1, 64), 1, 1, NPU_FW_TASK_NOP);
	/* The largest ring that fits, ending at HBM's end, is taken. */
	EXPECT_EQ(0, start(self, 1, HBM_SIZE - 64 - 16 * 32, prof_arg(16, 0)));
}

TEST_HARNESS_MAIN
