// SPDX-License-Identifier: MIT
/*
 * Task lists on the firmware-sim device core, in-process: a RUN_LIST runs
 * its list's tasks in order with the run's I/O table patched into task
 * arguments and kernel argument blocks, moves the queue's head past its
 * I/O table when done, reports the list task at work in list_pos, and a
 * bad list, patch or I/O table faults the queue at that task. The test
 * writes HBM as npu.ko does: the list read-only in the context.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"
#include "npu_oplib.h"

#define HBM_SIZE	(16ull << 20)
#define RING		(1ull << 20)
#define DATA		(2ull << 20)	/* 2 MiB at VA, writable */
#define LIST		(4ull << 20)	/* 2 MiB at VA + 2 MiB, read-only */
#define TABLES		(8ull << 20)
#define ENTRIES		64
#define VA		TEST_VA_BASE
#define LIST_VA		(VA + (2ull << 20))

FIXTURE(list) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	uint32_t tail;
	uint64_t fence;
};

FIXTURE_SETUP(list)
{
	struct npu_dev_config cfg;
	struct npu_fw_queue *q;
	uint64_t root;

	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	cfg.num_queues = 4;
	cfg.num_cores = 1;
	cfg.num_core_groups = 1;
	npu_dev_init(&self->dev, self->hbm, &cfg, NULL, NULL);
	self->pool = (struct pt_pool){ .hbm = self->hbm, .next = TABLES };
	root = pt_alloc(&self->pool);
	pt_map(&self->pool, root, VA, DATA, 2u << 20, NPU_PTE_WRITE);
	pt_map(&self->pool, root, LIST_VA, LIST, 2u << 20, 0);
	q = test_qslot(self->hbm, 0);
	q->ring_offset = RING;
	q->ring_entries = ENTRIES;
	q->context = 1;
	q->pt_root = root;
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	self->tail = 0;
	self->fence = 0;
}

FIXTURE_TEARDOWN(list)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

static struct npu_fw_task *list_task(FIXTURE_DATA(list) *self, uint32_t i)
{
	return (struct npu_fw_task *)(self->hbm + LIST) + i;
}

/* Patch entries after 64 list tasks. */
#define PATCHES_OFF	(64 * sizeof(struct npu_fw_task))

static struct npu_fw_patch *patch(FIXTURE_DATA(list) *self, uint32_t i)
{
	return (struct npu_fw_patch *)(self->hbm + LIST + PATCHES_OFF) + i;
}

static void set_task(FIXTURE_DATA(list) *self, uint32_t i, uint16_t type, uint64_t a0,
		     uint64_t a1, uint64_t a2)
{
	*list_task(self, i) = (struct npu_fw_task){ .type = type, .args = { a0, a1, a2 } };
}

static void set_patch(FIXTURE_DATA(list) *self, uint32_t i, uint32_t task, uint16_t kind,
		      uint16_t slot, uint32_t field, uint64_t offset)
{
	*patch(self, i) = (struct npu_fw_patch){ .task = task, .kind = kind, .slot = slot,
						 .field = field, .offset = offset };
}

/* Write a RUN_LIST and its I/O table to the ring, as npu.ko does. */
static void push_run(FIXTURE_DATA(list) *self, uint32_t count, uint32_t npatches,
		     const uint64_t *io, uint32_t nio)
{
	struct npu_fw_task *ring = (struct npu_fw_task *)(self->hbm + RING);
	struct npu_fw_task *t = &ring[self->tail++ % ENTRIES];

	*t = (struct npu_fw_task){ .type = NPU_FW_TASK_RUN_LIST,
				   .args = { LIST_VA, count, LIST_VA + PATCHES_OFF, npatches, nio } };
	for (uint32_t i = 0; i < nio; i += 8) {
		uint64_t *data = (uint64_t *)&ring[self->tail++ % ENTRIES];

		memset(data, 0, sizeof(struct npu_fw_task));
		for (uint32_t k = i; k < nio && k < i + 8; k++)
			data[k - i] = io[k];
	}
}

static void push_fence(FIXTURE_DATA(list) *self)
{
	test_push(self->hbm, 0, &self->tail, NPU_FW_TASK_FENCE, ++self->fence, 0, 0);
}

static void ring(FIXTURE_DATA(list) *self)
{
	test_ring(&self->dev, self->hbm, 0, self->tail);
}

static struct npu_fw_queue *qs(FIXTURE_DATA(list) *self)
{
	return test_qslot(self->hbm, 0);
}

static float *f32(FIXTURE_DATA(list) *self, uint64_t off)
{
	return (float *)(self->hbm + DATA + off);
}

/* Copies and fills with patched addresses, run twice with other bindings. */
TEST_F(list, runs_its_tasks_with_the_io_table_patched_in)
{
	uint64_t io[2];

	/* 0: fill slot 0 with 0x11; 1: copy slot 0 to slot 1 + 64; 2: fill a fixed place. */
	set_task(self, 0, NPU_FW_TASK_FILL, 0, 256, 0x11111111);
	set_task(self, 1, NPU_FW_TASK_COPY, 0, 0, 256);
	set_task(self, 2, NPU_FW_TASK_FILL, VA + 0x8000, 4, 0x33333333);
	set_patch(self, 0, 0, NPU_FW_PATCH_ARG, 0, 0, 0);
	set_patch(self, 1, 1, NPU_FW_PATCH_ARG, 1, 0, 64);
	set_patch(self, 2, 1, NPU_FW_PATCH_ARG, 0, 1, 0);

	io[0] = VA + 0x1000;
	io[1] = VA + 0x2000;
	push_run(self, 3, 3, io, 2);
	io[0] = VA + 0x3000;
	io[1] = VA + 0x4000;
	push_run(self, 3, 3, io, 2);
	push_fence(self);
	ring(self);

	EXPECT_EQ(NPU_QUEUE_RUNNING, qs(self)->state);
	EXPECT_EQ(1, qs(self)->done_seq);
	EXPECT_EQ(self->tail, qs(self)->head);	/* the I/O tables skipped too */
	EXPECT_EQ(0, qs(self)->list_pos);
	for (uint64_t run = 0; run < 2; run++) {
		uint8_t *src = self->hbm + DATA + 0x1000 + run * 0x2000;
		uint8_t *dst = src + 0x1000 + 64;

		EXPECT_EQ(0x11, src[0]);
		EXPECT_EQ(0x11, src[255]);
		EXPECT_EQ(0, src[256]);
		EXPECT_EQ(0, dst[-1]);
		EXPECT_EQ(0x11, dst[0]);
		EXPECT_EQ(0x11, dst[255]);
		EXPECT_EQ(0, dst[256]);
	}
	EXPECT_EQ(0x33, self->hbm[DATA + 0x8000]);
	/* The list itself is as it was: patches go to the device's copy. */
	EXPECT_EQ(0, list_task(self, 1)->args[0]);
	EXPECT_EQ(0, list_task(self, 1)->args[1]);
}

static void add_args(struct npu_op_args *a, uint64_t in0, uint64_t in1, uint64_t out, uint64_t n)
{
	memset(a, 0, sizeof(*a));
	a->op = NPU_OP_ADD;
	a->in[0] = (struct npu_op_tensor){ .va = in0, .dtype = NPU_DT_F32, .ndim = 1,
					    .shape = { n }, .stride = { 1 } };
	a->in[1] = a->in[0];
	a->in[1].va = in1;
	a->out = a->in[0];
	a->out.va = out;
}

/* A kernel launch rebound through its argument block, which stays unchanged. */
TEST_F(list, kernel_argument_blocks_are_patched_in_the_device_copy)
{
	struct npu_op_args *a = (struct npu_op_args *)(self->hbm + DATA + 0x10000);
	uint64_t io[3] = { VA + 0x1000, VA + 0x2000, VA + 0x3000 };

	for (int i = 0; i < 16; i++) {
		f32(self, 0x1000)[i] = (float)i;
		f32(self, 0x2000)[i] = 100.0f;
		f32(self, 0x5000)[i] = 1000.0f;
	}
	/* The block names placeholders; in1 stays fixed at 0x2000. */
	add_args(a, 0, VA + 0x2000, 0, 16);
	set_task(self, 0, NPU_FW_TASK_KERNEL, VA + 0x10000, 0, sizeof(*a));
	set_patch(self, 0, 0, NPU_FW_PATCH_KERNEL_ARGS, 0,
		  offsetof(struct npu_op_args, in[0].va), 0);
	set_patch(self, 1, 0, NPU_FW_PATCH_KERNEL_ARGS, 2,
		  offsetof(struct npu_op_args, out.va), 0);
	push_run(self, 1, 2, io, 3);
	io[0] = VA + 0x5000;
	io[2] = VA + 0x6000;
	push_run(self, 1, 2, io, 3);
	push_fence(self);
	ring(self);

	ASSERT_EQ(NPU_QUEUE_RUNNING, qs(self)->state);
	EXPECT_EQ(1, qs(self)->done_seq);
	for (int i = 0; i < 16; i++) {
		EXPECT_EQ(100.0f + (float)i, f32(self, 0x3000)[i]);
		EXPECT_EQ(1100.0f, f32(self, 0x6000)[i]);
	}
	EXPECT_EQ(0, a->in[0].va);
	EXPECT_EQ(0, a->out.va);
}

/* A fault in the list stops the queue at the RUN_LIST, list_pos at the task. */
TEST_F(list, a_fault_names_the_list_task)
{
	set_task(self, 0, NPU_FW_TASK_FILL, VA, 4, 1);
	set_task(self, 1, NPU_FW_TASK_NOP, 0, 0, 0);
	set_task(self, 2, NPU_FW_TASK_FILL, 0, 4, 2);
	set_task(self, 3, NPU_FW_TASK_FILL, VA + 4, 4, 3);
	set_patch(self, 0, 2, NPU_FW_PATCH_ARG, 0, 0, 0);
	/* Slot 0 bound to nothing mapped: task 2 faults writing it. */
	push_run(self, 4, 1, (uint64_t[]){ VA + (64ull << 20) }, 1);
	push_fence(self);
	ring(self);

	EXPECT_EQ(NPU_QUEUE_FAULTED, qs(self)->state);
	EXPECT_EQ(NPU_FW_EFAULT, qs(self)->error);
	EXPECT_EQ(VA + (64ull << 20), qs(self)->error_address);
	EXPECT_EQ(0, qs(self)->head);
	EXPECT_EQ(2, qs(self)->list_pos);
	EXPECT_EQ(1, self->hbm[DATA]);
	EXPECT_EQ(0, self->hbm[DATA + 4]);	/* nothing after it ran */
	EXPECT_EQ(0, qs(self)->done_seq);
}

/* The list is read through the context: it may only be read. */
TEST_F(list, the_list_is_read_through_the_context)
{
	uint32_t tail;

	set_task(self, 0, NPU_FW_TASK_FILL, VA, 4, 7);
	/* The RUN_LIST names the data region's VA: a list there runs too... */
	memcpy(self->hbm + DATA + 0x40000, list_task(self, 0), sizeof(struct npu_fw_task));
	tail = self->tail;
	push_run(self, 1, 0, NULL, 0);
	((struct npu_fw_task *)(self->hbm + RING))[tail].args[0] = VA + 0x40000;
	/* ...and one at an address the context does not map faults. */
	tail = self->tail;
	push_run(self, 1, 0, NULL, 0);
	((struct npu_fw_task *)(self->hbm + RING))[tail].args[0] = VA + (64ull << 20);
	push_fence(self);
	ring(self);

	EXPECT_EQ(7, self->hbm[DATA]);
	EXPECT_EQ(NPU_QUEUE_FAULTED, qs(self)->state);
	EXPECT_EQ(NPU_FW_EFAULT, qs(self)->error);
	EXPECT_EQ(tail, qs(self)->head);
}

/* What a list may not hold or say faults the queue with EINVAL at that task. */
TEST_F(list, bad_lists_fault_at_the_task)
{
	static const struct {
		const char *what;
		uint32_t pos;		/* list_pos expected */
	} cases[] = {
		{ "a FENCE in the list", 1 },
		{ "a RUN_LIST in the list", 1 },
		{ "a patch naming a slot past the table", 1 },
		{ "a patch of args[7]", 1 },
		{ "patches out of task order", 1 },
		{ "an unknown patch kind", 1 },
		{ "a block patch on a FILL", 1 },
		{ "a block patch past the block", 1 },
		{ "a block patch not 8-aligned", 1 },
		{ "a patch with padding set", 1 },
	};

	for (unsigned int c = 0; c < ARRAY_SIZE(cases); c++) {
		struct npu_op_args *a = (struct npu_op_args *)(self->hbm + DATA + 0x10000);
		uint32_t start;

		add_args(a, VA, VA, VA + 0x100, 4);
		set_task(self, 0, NPU_FW_TASK_NOP, 0, 0, 0);
		set_task(self, 1, NPU_FW_TASK_FILL, VA, 4, 5);
		set_patch(self, 0, 1, NPU_FW_PATCH_ARG, 0, 0, 0);
		list_task(self, 1)->args[0] = 0;
		switch (c) {
		case 0: list_task(self, 1)->type = NPU_FW_TASK_FENCE; break;
		case 1: list_task(self, 1)->type = NPU_FW_TASK_RUN_LIST; break;
		case 2: patch(self, 0)->slot = 1; break;
		case 3: patch(self, 0)->field = 7; break;
		case 4: set_patch(self, 1, 0, NPU_FW_PATCH_ARG, 0, 1, 0); break;
		case 5: patch(self, 0)->kind = 2; break;
		case 6: patch(self, 0)->kind = NPU_FW_PATCH_KERNEL_ARGS; break;
		case 7:
		case 8:
			set_task(self, 1, NPU_FW_TASK_KERNEL, VA + 0x10000, 0, sizeof(*a));
			set_patch(self, 0, 1, NPU_FW_PATCH_KERNEL_ARGS, 0,
				  c == 7 ? sizeof(*a) : 4, 0);
			break;
		case 9: patch(self, 0)->pad = 1; break;
		}
		start = self->tail;
		push_run(self, 2, c == 4 ? 2 : 1, (uint64_t[]){ VA }, 1);
		push_fence(self);
		ring(self);
		EXPECT_EQ(NPU_QUEUE_FAULTED, qs(self)->state) TH_LOG("%s", cases[c].what);
		EXPECT_EQ(NPU_FW_EINVAL, qs(self)->error) TH_LOG("%s", cases[c].what);
		EXPECT_EQ(start, qs(self)->head) TH_LOG("%s", cases[c].what);
		EXPECT_EQ(cases[c].pos, qs(self)->list_pos) TH_LOG("%s", cases[c].what);
		/* Restart the queue for the next case, as the host would. */
		qs(self)->tail = 0;
		self->tail = 0;
		ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
		EXPECT_EQ(0, qs(self)->list_pos);
		memset(self->hbm + LIST, 0, 1u << 20);
	}
}

/* A RUN_LIST whose header is malformed faults before any of its tasks. */
TEST_F(list, a_bad_run_list_faults_at_once)
{
	struct npu_fw_task *slots = (struct npu_fw_task *)(self->hbm + RING);

	for (int c = 0; c < 4; c++) {
		set_task(self, 0, NPU_FW_TASK_FILL, VA, 4, 9);
		self->hbm[DATA] = 0;
		push_run(self, 1, 0, (uint64_t[]){ 0, 0 }, c == 3 ? 9 : 1);
		switch (c) {
		case 0: slots[0].args[1] = 0; break;			/* no tasks */
		case 1: slots[0].args[4] = NPU_FW_LIST_MAX_SLOTS + 1; break;
		case 2: slots[0].args[5] = 1; break;			/* unused arg */
		case 3: self->tail--; break;	/* the I/O table's second slot not published */
		}
		ring(self);
		EXPECT_EQ(NPU_QUEUE_FAULTED, qs(self)->state) TH_LOG("case %d", c);
		EXPECT_EQ(NPU_FW_EINVAL, qs(self)->error) TH_LOG("case %d", c);
		EXPECT_EQ(0, self->hbm[DATA]) TH_LOG("case %d", c);
		qs(self)->tail = 0;
		self->tail = 0;
		ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	}
}

/* A queue stopped inside a list and started again begins afresh. */
TEST_F(list, a_restarted_queue_forgets_its_list)
{
	uint32_t sync = 5;
	struct npu_fw_sync *s = (struct npu_fw_sync *)(self->hbm + NPU_FW_SYNC_TABLE) + sync;

	s->value = 0;
	set_task(self, 0, NPU_FW_TASK_FILL, VA, 4, 1);
	set_task(self, 1, NPU_FW_TASK_NOTIFY_WAIT, sync, 0, 0);
	set_task(self, 2, NPU_FW_TASK_FILL, VA + 4, 4, 2);
	push_run(self, 3, 0, NULL, 0);
	push_fence(self);
	ring(self);
	EXPECT_EQ(1, self->hbm[DATA]);
	EXPECT_EQ(1, qs(self)->list_pos);		/* blocked on the notify */
	EXPECT_EQ(NPU_QUEUE_RUNNING, qs(self)->state);
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_STOP, 0, 0));
	qs(self)->tail = 0;
	self->tail = 0;
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
	EXPECT_EQ(0, qs(self)->list_pos);
	/* A new list at the same ring place runs from its first task. */
	set_task(self, 0, NPU_FW_TASK_FILL, VA + 8, 4, 3);
	push_run(self, 1, 0, NULL, 0);
	self->fence = 0;
	push_fence(self);
	ring(self);
	EXPECT_EQ(3, self->hbm[DATA + 8]);
	EXPECT_EQ(0, self->hbm[DATA + 4]);
	EXPECT_EQ(1, qs(self)->done_seq);
}

TEST_HARNESS_MAIN
