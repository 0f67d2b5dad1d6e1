// SPDX-License-Identifier: MIT
/*
 * Task lists through npu.ko: a list is checked once, stored on the device
 * and run with one RUN_LIST task, its I/O slots bound per run; a fault
 * or an abort inside names the list task; hang detection sees progress
 * inside a list; SUBMIT_MULTI queues batches on several queues as one
 * run that completes, or fails, as one. Every malformed list, patch,
 * binding and multi-submit is refused with nothing left behind.
 */
#include <linux/sync_file.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC		(1000000000ll)
#define MiB		(1ull << 20)
#define BO_SIZE		(4 * MiB)

FIXTURE(l) {
	int fd;
	struct drm_npu_bo_create bo;
	uint8_t *map;
	uint64_t va;
	uint64_t lists_before;		/* DRM_NPU_MEM_REGION_QUEUES */
};

FIXTURE_SETUP(l)
{
	uint64_t caps = 0;

	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_DEVICE_CAPS, &caps));
	ASSERT_TRUE(caps & DRM_NPU_CAP_TASK_LISTS);
	ASSERT_EQ(0, npu_bo_create(self->fd, BO_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &self->bo));
	self->map = npu_bo_mmap(self->fd, self->bo.handle, BO_SIZE);
	ASSERT_NE(MAP_FAILED, self->map);
	self->va = self->bo.device_va;
	/* The default queue's ring is counted there too: make it first. */
	ASSERT_EQ(0, npu_submit(self->fd, &(struct drm_npu_task){ .type = DRM_NPU_TASK_NOP },
				1, NULL));
	self->lists_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES);
}

FIXTURE_TEARDOWN(l)
{
	munmap(self->map, BO_SIZE);
	close(self->fd);
}

struct list_desc {
	const struct drm_npu_task *tasks;
	uint32_t count;
	const struct drm_npu_patch *patches;
	uint32_t npatches;
	const struct drm_npu_io_slot *slots;
	uint32_t nslots;
};

/* TASKLIST_CREATE: 0 or -errno; *handle gets the list. */
static int list_create(int fd, const struct list_desc *d, uint32_t *handle)
{
	struct drm_npu_tasklist_create a = {
		.tasks = DRM_NPU_OBJ_ARRAY(d->count, d->tasks),
		.patches = DRM_NPU_OBJ_ARRAY(d->npatches, d->patches),
		.slots = DRM_NPU_OBJ_ARRAY(d->nslots, d->slots),
	};

	*handle = 0;
	if (ioctl(fd, DRM_IOCTL_NPU_TASKLIST_CREATE, &a))
		return -errno;
	*handle = a.handle;
	return 0;
}

static int list_destroy(int fd, uint32_t handle)
{
	struct drm_npu_tasklist_destroy a = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_NPU_TASKLIST_DESTROY, &a) ? -errno : 0;
}

static struct drm_npu_task run_task(uint32_t list, const uint64_t *io, uint32_t n)
{
	return (struct drm_npu_task){ .type = DRM_NPU_TASK_RUN_LIST,
				      .args = { list, (uintptr_t)io, n } };
}

/* One RUN_LIST on `queue`, not waited for: 0 or -errno. */
static int run_async(int fd, uint32_t queue, uint32_t list, const uint64_t *io, uint32_t n,
		     uint64_t *seq)
{
	struct drm_npu_task t = run_task(list, io, n);

	return npu_submit_on(fd, queue, &t, 1, seq);
}

/* One RUN_LIST on `queue`, waited for: 0 or -errno, *w the result. */
static int run_on(int fd, uint32_t queue, uint32_t list, const uint64_t *io, uint32_t n,
		  struct drm_npu_wait *w)
{
	struct drm_npu_task t = run_task(list, io, n);
	uint64_t seq;
	int ret = npu_submit_on(fd, queue, &t, 1, &seq);

	return ret ? ret : npu_wait_on(fd, queue, seq, 20 * SEC, w);
}

#define PATCH(t, k, s, f, o) \
	((struct drm_npu_patch){ .task = (t), .kind = (k), .slot = (s), .field = (f), .offset = (o) })

/* FILL slot 0, copy it to slot 1 at +64: run twice with other bindings. */
TEST_F(l, a_list_runs_with_its_io_bound_per_run)
{
	struct drm_npu_task tasks[] = {
		npu_task_fill(0, 4096, 0x5a5a5a5a),
		npu_task_copy(0, 0, 4096),
		npu_task_fill(self->va + 3 * MiB, 4, 0x01020304),	/* not patched */
	};
	struct drm_npu_patch patches[] = {
		PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0),
		PATCH(1, DRM_NPU_PATCH_TASK_ARG, 1, 0, 64),
		PATCH(1, DRM_NPU_PATCH_TASK_ARG, 0, 1, 0),
	};
	struct drm_npu_io_slot slots[] = {
		{ .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE },
		{ .size = 8192, .flags = DRM_NPU_IO_SLOT_WRITE },
	};
	struct list_desc d = { tasks, 3, patches, 3, slots, 2 };
	struct drm_npu_wait w;
	uint32_t h;

	ASSERT_EQ(0, list_create(self->fd, &d, &h));
	EXPECT_NE(0, h);
	/* The list's memory is counted against the context. */
	EXPECT_LT(self->lists_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES));
	for (uint64_t run = 0; run < 2; run++) {
		uint64_t io[2] = { self->va + run * MiB, self->va + run * MiB + 64 * 1024 };
		const uint8_t *src = self->map + run * MiB, *dst = src + 64 * 1024 + 64;

		ASSERT_EQ(0, run_on(self->fd, 0, h, io, 2, &w)) TH_LOG("status %u", w.status);
		EXPECT_EQ(0x5a, src[0]);
		EXPECT_EQ(0x5a, src[4095]);
		EXPECT_EQ(0, src[4096]);
		EXPECT_EQ(0, dst[-1]);
		EXPECT_EQ(0x5a, dst[0]);
		EXPECT_EQ(0x5a, dst[4095]);
		EXPECT_EQ(0, dst[4096]);
	}
	EXPECT_EQ(0x04, self->map[3 * MiB]);
	EXPECT_EQ(0, list_destroy(self->fd, h));
	EXPECT_EQ(-EINVAL, list_destroy(self->fd, h));
	EXPECT_EQ(self->lists_before, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES,
							self->lists_before));
}

static void add_block(uint8_t *at, uint64_t in0, uint64_t in1, uint64_t out, uint64_t n)
{
	struct npu_op_args a = { .op = NPU_OP_ADD };

	a.in[0] = (struct npu_op_tensor){ .va = in0, .dtype = NPU_DT_F32, .ndim = 1,
					   .shape = { n }, .stride = { 1 } };
	a.in[1] = a.in[0];
	a.in[1].va = in1;
	a.out = a.in[0];
	a.out.va = out;
	memcpy(at, &a, sizeof(a));
}

/* A kernel launch rebound through its argument block: the block stays as written. */
TEST_F(l, kernel_argument_blocks_are_patched_per_run)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL,
				  .args = { self->va, 0, sizeof(struct npu_op_args) } };
	struct drm_npu_patch patches[] = {
		PATCH(0, DRM_NPU_PATCH_KERNEL_ARGS, 0, offsetof(struct npu_op_args, in[0].va), 0),
		PATCH(0, DRM_NPU_PATCH_KERNEL_ARGS, 1, offsetof(struct npu_op_args, out.va), 0),
	};
	struct drm_npu_io_slot slots[] = {
		{ .size = 4096 }, { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE },
	};
	struct list_desc d = { &t, 1, patches, 2, slots, 2 };
	float *x = (float *)(self->map + MiB), *b = (float *)(self->map + 2 * MiB);
	struct drm_npu_wait w;
	uint32_t h;

	for (int i = 0; i < 256; i++) {
		x[i] = (float)i;
		x[1024 + i] = (float)(2 * i);
		b[i] = 0.5f;
	}
	add_block(self->map, 0, self->va + 2 * MiB, 0, 256);
	ASSERT_EQ(0, list_create(self->fd, &d, &h));
	ASSERT_EQ(0, run_on(self->fd, 0, h, (uint64_t[]){ self->va + MiB,
							   self->va + 3 * MiB }, 2, &w));
	ASSERT_EQ(0, run_on(self->fd, 0, h, (uint64_t[]){ self->va + MiB + 4096,
							   self->va + 3 * MiB + 4096 }, 2, &w));
	for (int i = 0; i < 256; i++) {
		EXPECT_EQ((float)i + 0.5f, ((float *)(self->map + 3 * MiB))[i]);
		EXPECT_EQ((float)(2 * i) + 0.5f, ((float *)(self->map + 3 * MiB + 4096))[i]);
	}
	EXPECT_EQ(0, ((struct npu_op_args *)self->map)->in[0].va);
	EXPECT_EQ(0, list_destroy(self->fd, h));
}

/* Every malformed list is refused, and nothing is left of it. */
TEST_F(l, bad_lists_are_refused_whole)
{
	struct drm_npu_task ok[3];
	struct drm_npu_patch p[2];
	struct drm_npu_io_slot s[2];
	uint64_t before_hbm = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	uint32_t event, h;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &event));
	for (int c = 0; c < 27; c++) {
		struct list_desc d = { ok, 3, p, 1, s, 2 };
		struct drm_npu_tasklist_create raw = { 0 };
		int want = -EINVAL, got;

		ok[0] = npu_task_fill(0, 4096, 1);
		ok[1] = npu_task_copy(self->va, 0, 4096);
		ok[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_KERNEL,
					       .args = { self->va, 0, 512 } };
		p[0] = PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
		p[1] = PATCH(1, DRM_NPU_PATCH_TASK_ARG, 1, 1, 0);
		s[0] = (struct drm_npu_io_slot){ .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
		s[1] = (struct drm_npu_io_slot){ .size = 4096 };
		switch (c) {
		case 0: d.count = 0; break;
		case 1: d.count = DRM_NPU_TASKLIST_MAX_TASKS + 1; break;
		case 2: d.nslots = DRM_NPU_TASKLIST_MAX_SLOTS + 1; break;
		case 3: d.npatches = DRM_NPU_TASKLIST_MAX_PATCHES + 1; break;
		case 4: ok[1].type = DRM_NPU_TASK_RUN_LIST; break;
		case 5: ok[1].pad = 1; break;				/* a bad task */
		case 6: p[0].task = 3; break;
		case 7: p[0].slot = 2; break;
		case 8: p[0].kind = 2; break;
		case 9: p[0].flags = 1; break;
		case 10: p[0].field = 2; break;			/* FILL's size */
		case 11: ok[0].args[0] = self->va; break;		/* no placeholder */
		case 12: p[0].offset = 1; break;			/* past the slot */
		case 13: s[0].flags = 0; break;			/* FILL writes it */
		case 14: d.npatches = 2; p[1] = p[0]; break;		/* twice */
		case 15: d.npatches = 2; p[1] = p[0]; p[0] = PATCH(1, 0, 1, 1, 0); break;
		case 16: p[0] = PATCH(2, DRM_NPU_PATCH_KERNEL_ARGS, 1, 4, 0); break;
		case 17: p[0] = PATCH(2, DRM_NPU_PATCH_KERNEL_ARGS, 1, 512 - 4, 0); break;
		case 18: p[0] = PATCH(1, DRM_NPU_PATCH_KERNEL_ARGS, 1, 0, 0); break;
		case 19: p[0] = PATCH(2, DRM_NPU_PATCH_KERNEL_ARGS, 1, 0, 4096); break;
		case 20: s[1].size = 0; break;
		case 21: s[1].flags = 2; break;
		case 22: s[1].pad = 1; break;
		case 23: d.tasks = (void *)8; want = -EFAULT; break;
		case 24: d.patches = (void *)8; want = -EFAULT; break;
		case 25:					/* not its event */
			ok[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD,
						       .args = { event + 1 } };
			break;
		case 26:					/* the raw struct's rules */
			raw = (struct drm_npu_tasklist_create){ .tasks = DRM_NPU_OBJ_ARRAY(1, ok),
								.flags = 1 };
			break;
		}
		if (c == 26) {
			got = ioctl(self->fd, DRM_IOCTL_NPU_TASKLIST_CREATE, &raw) ? -errno : 0;
			EXPECT_EQ(want, got) TH_LOG("case %d", c);
			raw.flags = 0;
			raw.handle = 5;
			got = ioctl(self->fd, DRM_IOCTL_NPU_TASKLIST_CREATE, &raw) ? -errno : 0;
			EXPECT_EQ(want, got) TH_LOG("case %d (handle)", c);
			raw.handle = 0;
			raw.tasks.stride = sizeof(ok[0]) - 8;		/* shorter than the first version */
			got = ioctl(self->fd, DRM_IOCTL_NPU_TASKLIST_CREATE, &raw) ? -errno : 0;
			EXPECT_EQ(want, got) TH_LOG("case %d (stride)", c);
			continue;
		}
		got = list_create(self->fd, &d, &h);
		EXPECT_EQ(want, got) TH_LOG("case %d", c);
		EXPECT_EQ(0, h) TH_LOG("case %d", c);
	}
	/* The same list, well formed, is taken; nothing was left before it. */
	{
		struct list_desc d = { ok, 3, p, 2, s, 2 };

		ok[0] = npu_task_fill(0, 4096, 1);
		ok[1] = npu_task_copy(self->va, 0, 4096);
		ok[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { event } };
		p[0] = PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
		p[1] = PATCH(1, DRM_NPU_PATCH_TASK_ARG, 1, 1, 0);
		EXPECT_EQ(self->lists_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES));
		ASSERT_EQ(0, list_create(self->fd, &d, &h));
		EXPECT_EQ(1, h);
		EXPECT_EQ(0, list_destroy(self->fd, h));
	}
	EXPECT_EQ(before_hbm, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
}

/* A run's binding is checked at submit; nothing is queued when it is bad. */
TEST_F(l, bad_runs_queue_nothing)
{
	struct drm_npu_task t = npu_task_fill(0, 4096, 3);
	struct drm_npu_patch p = PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
	struct drm_npu_io_slot s = { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
	struct list_desc d = { &t, 1, &p, 1, &s, 1 };
	struct drm_npu_task r, nop = { .type = DRM_NPU_TASK_NOP };
	uint64_t io = self->va, seq, first;
	uint32_t h, h0;
	int other;

	ASSERT_EQ(0, list_create(self->fd, &d, &h));
	ASSERT_EQ(0, npu_submit(self->fd, &(struct drm_npu_task){ .type = DRM_NPU_TASK_NOP },
				1, &first));
	r = run_task(h + 1, &io, 1);				/* no such list */
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &r, 1, &seq));
	r = run_task(h, &io, 2);				/* slots miscounted */
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &r, 1, &seq));
	r = run_task(h, &io, DRM_NPU_TASKLIST_MAX_SLOTS + 1);
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &r, 1, &seq));
	r = run_task(h, (void *)8, 1);				/* table unreadable */
	EXPECT_EQ(-EFAULT, npu_submit(self->fd, &r, 1, &seq));
	r = run_task(h, &io, 1);
	r.args[3] = 1;						/* unused argument */
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &r, 1, &seq));
	r = run_task(h, &io, 1);
	r.args[0] = 1ull << 32;
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &r, 1, &seq));
	/* No slots, so no table: a pointer to one is refused, not ignored. */
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = &nop, .count = 1 }, &h0));
	r = run_task(h0, &io, 0);
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &r, 1, &seq));
	/* Another file's list is not this one's. */
	other = npu_open();
	ASSERT_LE(0, other);
	r = run_task(h, &io, 1);
	EXPECT_EQ(-EINVAL, npu_submit(other, &r, 1, &seq));
	EXPECT_EQ(-EINVAL, list_destroy(other, h));
	close(other);
	/* Nothing was queued: the next batch is the one after the NOP. */
	ASSERT_EQ(0, npu_submit(self->fd, &r, 1, &seq));
	EXPECT_EQ(first + 1, seq);
	EXPECT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	r = run_task(h0, NULL, 0);
	ASSERT_EQ(0, npu_submit(self->fd, &r, 1, &seq));
	EXPECT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, list_destroy(self->fd, h));
	EXPECT_EQ(0, list_destroy(self->fd, h0));
}

/* A fault inside the list: WAIT names the batch's task and the list's. */
TEST_F(l, a_fault_names_the_list_task)
{
	struct drm_npu_task tasks[] = {
		npu_task_fill(self->va, 4096, 1),
		{ .type = DRM_NPU_TASK_NOP },
		npu_task_fill(0, 4096, 2),
		npu_task_fill(self->va + 4096, 4096, 3),
	};
	struct drm_npu_patch p = PATCH(2, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
	struct drm_npu_io_slot s = { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
	struct list_desc d = { tasks, 4, &p, 1, &s, 1 };
	/* Bound to an address nothing maps. */
	uint64_t io = DRM_NPU_VA_END - 4096, seq;
	struct drm_npu_task batch[2] = { { .type = DRM_NPU_TASK_NOP }, run_task(0, &io, 1) };
	struct drm_npu_wait w;
	uint32_t h, q;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	ASSERT_EQ(0, list_create(self->fd, &d, &h));
	batch[1].args[0] = h;
	ASSERT_EQ(0, npu_submit_on(self->fd, q, batch, 2, &seq));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(1, w.error_task);
	EXPECT_EQ(2, w.error_list_task);
	EXPECT_EQ(io, w.fault_address);
	EXPECT_EQ(1, w.fault_access);
	EXPECT_EQ(1, self->map[0]);
	EXPECT_EQ(0, self->map[4096]);		/* nothing after it ran */
	EXPECT_EQ(0, list_destroy(self->fd, h));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
}

/* Abort stops a run in the middle of its list; the list runs again after. */
TEST_F(l, an_abort_stops_a_run_mid_list)
{
	uint32_t n, h, q, h2;
	struct drm_npu_task tasks[3];
	struct drm_npu_wait w;
	uint64_t seq;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	tasks[0] = npu_task_fill(self->va, 4096, 1);
	tasks[1] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	tasks[2] = npu_task_fill(self->va + 4096, 4096, 2);
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = tasks, .count = 3 }, &h));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	ASSERT_EQ(0, run_async(self->fd, q, h, NULL, 0, &seq));
	/* Waiting on the device for the notify, inside the list. */
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(self->fd, q, seq, SEC / 2, NULL));
	EXPECT_EQ(1, self->map[0]);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT,
			   &(struct drm_npu_queue_destroy){ .queue = q }));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_ABORTED, w.status);
	EXPECT_EQ(0, w.error_task);
	EXPECT_EQ(1, w.error_list_task);
	EXPECT_EQ(0, self->map[4096]);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	/* The list is as good as before, on another queue. */
	tasks[1] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOP };
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = tasks, .count = 3 }, &h2));
	EXPECT_EQ(0, run_on(self->fd, 0, h2, NULL, 0, &w));
	EXPECT_EQ(2, self->map[4096]);
	EXPECT_EQ(0, list_destroy(self->fd, h));
	EXPECT_EQ(0, list_destroy(self->fd, h2));
}

/*
 * Destroyed while it runs: the run keeps the list, the list the buffer
 * its tasks name, and the run the buffer bound to its slot (both handles
 * closed), until the run is done.
 */
TEST_F(l, a_run_keeps_its_list_and_bindings_and_the_list_its_buffers)
{
	struct drm_npu_bo_create named, bound;
	struct drm_npu_task tasks[3], rec;
	struct drm_npu_patch p = PATCH(2, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
	struct drm_npu_io_slot s = { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
	uint64_t seq, baseline = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM), io, with_list;
	struct drm_npu_wait w;
	uint32_t n, h, q;

	ASSERT_EQ(0, npu_bo_create(self->fd, MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY, &named));
	ASSERT_EQ(0, npu_bo_create(self->fd, MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bound));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	tasks[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	tasks[1] = npu_task_copy(self->va, named.device_va, 4096);	/* held by the list */
	tasks[2] = npu_task_fill(0, 4096, 9);				/* the bound one */
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ tasks, 3, &p, 1, &s, 1 }, &h));
	EXPECT_EQ(0, npu_gem_close(self->fd, named.handle));
	with_list = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	/* The named one stays, for the list; the bound one has its handle. */
	EXPECT_EQ(baseline + 2 * MiB, with_list);
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	memset(self->map, 0x77, 4096);
	io = bound.device_va;
	ASSERT_EQ(0, run_async(self->fd, q, h, &io, 1, &seq));
	EXPECT_EQ(0, list_destroy(self->fd, h));
	EXPECT_EQ(0, npu_gem_close(self->fd, bound.handle));
	/* Both stay while the run waits on the device. */
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(self->fd, q, seq, SEC / 4, NULL));
	EXPECT_EQ(with_list, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
	rec = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { n } };
	ASSERT_EQ(0, npu_submit(self->fd, &rec, 1, NULL));
	EXPECT_EQ(0, npu_wait_on(self->fd, q, seq, 10 * SEC, &w)) TH_LOG("status %u", w.status);
	EXPECT_EQ(0, self->map[0]);		/* the closed buffer read as zeros */
	EXPECT_EQ(baseline, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, baseline));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	EXPECT_EQ(self->lists_before, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES,
							self->lists_before));
}

/* A long GEMM: broadcast rows and columns, k long; ~ms per 16 k of k. */
static void gemm_block(uint8_t *at, uint64_t va, uint64_t out, uint64_t k)
{
	struct npu_op_args a = { .op = NPU_OP_GEMM, .alpha = 1.0f };

	a.in[0] = (struct npu_op_tensor){ .va = va, .dtype = NPU_DT_F32, .ndim = 2,
					   .shape = { 64, k }, .stride = { 0, 0 } };
	a.in[1] = (struct npu_op_tensor){ .va = va, .dtype = NPU_DT_F32, .ndim = 2,
					   .shape = { k, 64 }, .stride = { 0, 0 } };
	a.out = (struct npu_op_tensor){ .va = out, .dtype = NPU_DT_F32, .ndim = 2,
					 .shape = { 64, 64 }, .stride = { 64, 1 } };
	memcpy(at, &a, sizeof(a));
}

/*
 * How long one GEMM of depth k executes on the device, in ms: timestamps
 * the device writes on either side of it in a list, so neither the guest's
 * overhead nor the host's load between runs counts, only what the queue's
 * time limit counts. The fewest of two runs, as load only adds; -1 if
 * the list did not run.
 */
static int64_t device_ms(int fd, uint32_t q, uint8_t *map, uint64_t va, uint64_t k)
{
	struct drm_npu_task t[3] = {
		{ .type = DRM_NPU_TASK_TIMESTAMP, .args = { va + 3 * MiB } },
		{ .type = DRM_NPU_TASK_KERNEL, .args = { va + 8192, 1, sizeof(struct npu_op_args) } },
		{ .type = DRM_NPU_TASK_TIMESTAMP, .args = { va + 3 * MiB + 8 } },
	};
	uint64_t best = UINT64_MAX, stamp[2];
	struct drm_npu_wait w;
	uint32_t h;

	gemm_block(map + 8192, va + MiB, va + 2 * MiB, k);
	if (list_create(fd, &(struct list_desc){ .tasks = t, .count = 3 }, &h))
		return -1;
	for (int i = 0; i < 2; i++) {
		if (run_on(fd, q, h, NULL, 0, &w))
			break;
		memcpy(stamp, map + 3 * MiB, sizeof(stamp));
		if (stamp[1] - stamp[0] < best)
			best = stamp[1] - stamp[0];
	}
	list_destroy(fd, h);
	return best == UINT64_MAX ? -1 : (int64_t)(best / 1000000);
}

/*
 * A queue's time limit is for one task: a list of tasks each well inside
 * it runs to the end however long the list, and one task past it in a
 * list is a hang, named by its place in the list.
 */
TEST_F(l, hang_detection_sees_progress_inside_a_list)
{
	const uint32_t limit_ms = 400;
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL,
				  .args = { self->va, 1, sizeof(struct npu_op_args) } };
	struct drm_npu_task many[64];
	struct drm_npu_wait w;
	uint64_t k = 1 << 12, t0, took;
	int64_t ms = 0, per;
	uint32_t q, qcal, h, h2, n;

	/*
	 * Sized on the device clock on a queue of a long limit: the hung
	 * launch by doubling until it alone executes three times the limit
	 * (a launch's fixed cost does not scale, so it is not extrapolated),
	 * the short ones a 24th of it. Three, not two: the timer's first
	 * expiry only notes where the list is, and the one a limit later
	 * must still find the launch running, however late it fires on a
	 * loaded machine (at twice the limit, one run in two here missed it).
	 */
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 20000, &qcal));
	for (int i = 0; i < 16 && ms < 3 * (int64_t)limit_ms; i++) {
		if (i)
			k *= ms < limit_ms / 8 ? 4 : 2;
		ms = device_ms(self->fd, qcal, self->map, self->va, k);
		ASSERT_LE(0, ms) TH_LOG("the calibration list did not run");
	}
	ASSERT_LE(3 * (int64_t)limit_ms, ms) TH_LOG("a GEMM of depth %llu executes only %llu ms",
					   (unsigned long long)k, (unsigned long long)ms);
	per = device_ms(self->fd, qcal, self->map, self->va, k / 24);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, qcal));
	ASSERT_LE(0, per);
	ASSERT_GT((int64_t)limit_ms / 2, per) TH_LOG("a 24th of the hung launch executes %llu ms",
					     (unsigned long long)per);
	gemm_block(self->map, self->va + MiB, self->va + 2 * MiB, k / 24);
	gemm_block(self->map + 4096, self->va + MiB, self->va + 2 * MiB, k);
	per = per ? per : 1;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, limit_ms, &q));
	for (int i = 0; i < 64; i++)
		many[i] = t;
	/* Enough of them to run three times the limit, one after the other. */
	n = 3 * limit_ms / per + 1;
	n = n < 4 ? 4 : n > 64 ? 64 : n;
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = many, .count = n }, &h));
	t0 = npu_now_ms();
	EXPECT_EQ(0, run_on(self->fd, q, h, NULL, 0, &w)) TH_LOG("status %u", w.status);
	took = npu_now_ms() - t0;
	TH_LOG("%u launches of about %llu ms took %llu ms (limit %u ms)", n,
	       (unsigned long long)per, (unsigned long long)took, limit_ms);
	EXPECT_LT(limit_ms, took);
	/* The long launch, third in a list: a hang. */
	many[2].args[0] = self->va + 4096;
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = many, .count = 4 }, &h2));
	EXPECT_EQ(-EIO, run_on(self->fd, q, h2, NULL, 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_TIMEOUT, w.status);
	EXPECT_EQ(2, w.error_list_task);
	EXPECT_EQ(0, list_destroy(self->fd, h));
	EXPECT_EQ(0, list_destroy(self->fd, h2));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
}

/* SUBMIT_MULTI: run = (in, out syncobjs, seqs); 0 or -errno. */
static int submit_multi(int fd, const struct drm_npu_submit_entry *e, uint32_t n,
			uint32_t out_syncobj, uint64_t *seqs)
{
	struct drm_npu_submit_entry copy[DRM_NPU_SUBMIT_MULTI_MAX + 1] = { 0 };
	struct drm_npu_syncobj out = { .handle = out_syncobj };
	struct drm_npu_submit_multi m = { .entries = DRM_NPU_OBJ_ARRAY(n, copy),
					  .out_syncobjs = (uintptr_t)&out,
					  .out_count = !!out_syncobj };
	int ret;

	memcpy(copy, e, (n < DRM_NPU_SUBMIT_MULTI_MAX + 1 ? n : DRM_NPU_SUBMIT_MULTI_MAX + 1) *
			sizeof(*e));
	ret = ioctl(fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m) ? -errno : 0;
	for (uint32_t i = 0; seqs && i < DRM_NPU_SUBMIT_MULTI_MAX; i++)
		seqs[i] = i < n ? copy[i].seq : 0;
	return ret;
}

/*
 * Two queues' lists joined by notifies, as a model's streams are: q1
 * copies the run's input to A and says so (n); q2 waits for it, copies A
 * to the run's output and hands A back (m). One call, one completion;
 * runs pipelined back to back, the notifies counting for each.
 */
TEST_F(l, a_multi_queue_run_completes_as_one)
{
	struct drm_npu_task a[3], b[3], ra[3], rb[3];
	struct drm_npu_patch pa = PATCH(1, DRM_NPU_PATCH_TASK_ARG, 0, 1, 0);
	struct drm_npu_patch pb = PATCH(1, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
	struct drm_npu_io_slot sa = { .size = 4096 };
	struct drm_npu_io_slot sb = { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
	uint64_t seqs[DRM_NPU_SUBMIT_MULTI_MAX], in[3], out[3], A = self->va;
	struct drm_npu_submit_entry e[2];
	struct drm_npu_task rec;
	uint32_t n, m, ha, hb, q1, q2, so;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &m));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q1));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q2));
	a[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { m } };
	a[1] = npu_task_copy(A, 0, 4096);
	a[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { n } };
	b[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	b[1] = npu_task_copy(0, A, 4096);
	b[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { m } };
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ a, 3, &pa, 1, &sa, 1 }, &ha));
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ b, 3, &pb, 1, &sb, 1 }, &hb));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &so));
	/* A starts free. */
	rec = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { m } };
	ASSERT_EQ(0, npu_submit(self->fd, &rec, 1, NULL));
	for (int r = 0; r < 3; r++) {
		in[r] = self->va + 2 * MiB + r * 4096;
		out[r] = self->va + MiB + r * 4096;
		memset(self->map + 2 * MiB + r * 4096, 0x11 * (r + 1), 4096);
		ra[r] = run_task(ha, &in[r], 1);
		rb[r] = run_task(hb, &out[r], 1);
		e[0] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&rb[r], .count = 1,
						      .queue = q2 };
		e[1] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&ra[r], .count = 1,
						      .queue = q1 };
		ASSERT_EQ(0, submit_multi(self->fd, e, 2, r == 2 ? so : 0, seqs));
		EXPECT_EQ(r + 1, seqs[0]);	/* the entries' order */
		EXPECT_EQ(r + 1, seqs[1]);
		EXPECT_EQ(0, seqs[2]);
	}
	ASSERT_EQ(0, drmSyncobjWait(self->fd, &so, 1, npu_deadline(10 * SEC),
				    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL));
	/* The last run's completion is both queues'. */
	EXPECT_EQ(0, npu_wait_on(self->fd, q1, 3, 0, NULL));
	EXPECT_EQ(0, npu_wait_on(self->fd, q2, 3, 0, NULL));
	for (int r = 0; r < 3; r++) {
		EXPECT_EQ(0x11 * (r + 1), self->map[MiB + r * 4096 + 4095]) TH_LOG("run %d", r);
	}
	drmSyncobjDestroy(self->fd, so);
	EXPECT_EQ(0, list_destroy(self->fd, ha));
	EXPECT_EQ(0, list_destroy(self->fd, hb));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q1));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q2));
}

/*
 * One batch of a run fails before it records what its partner waits for:
 * the partner's queue is stopped, and the run's one fence signals with
 * the error, instead of the partner waiting forever on the device.
 */
TEST_F(l, a_failed_batch_stops_its_partners)
{
	struct drm_npu_task a[3], b[3];
	struct drm_npu_submit_entry e[2];
	struct drm_npu_wait w;
	uint64_t seqs[DRM_NPU_SUBMIT_MULTI_MAX], t0;
	uint32_t n, in, ha, hb, q1, q2, so;
	struct sync_file_info info = { 0 };
	struct drm_npu_task ra, rb;
	int sf;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &in));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q1));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q2));
	/*
	 * a faults only once b is inside its list (b records `in` first), so
	 * b is stopped at task 1, waiting for the notify a never records.
	 */
	a[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { in } };
	a[1] = npu_task_fill(DRM_NPU_VA_END - 4096, 4096, 1);	/* faults */
	a[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { n } };
	b[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { in } };
	b[1] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	b[2] = npu_task_fill(self->va, 4096, 2);
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = a, .count = 3 }, &ha));
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = b, .count = 3 }, &hb));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &so));
	ra = run_task(ha, NULL, 0);
	rb = run_task(hb, NULL, 0);
	e[0] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&rb, .count = 1, .queue = q2 };
	e[1] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&ra, .count = 1, .queue = q1 };
	t0 = npu_now_ms();
	ASSERT_EQ(0, submit_multi(self->fd, e, 2, so, seqs));
	ASSERT_EQ(0, drmSyncobjWait(self->fd, &so, 1, npu_deadline(10 * SEC),
				    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL));
	EXPECT_GT(5000, npu_now_ms() - t0);
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q1, seqs[1], 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(1, w.error_list_task);
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q2, seqs[0], 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_ABORTED, w.status);
	EXPECT_EQ(1, w.error_list_task);	/* stopped waiting for the notify */
	EXPECT_EQ(0, self->map[0]);
	/* The run's fence carries the failure. */
	ASSERT_EQ(0, drmSyncobjExportSyncFile(self->fd, so, &sf));
	ASSERT_EQ(0, ioctl(sf, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ(-EIO, info.status);
	close(sf);
	drmSyncobjDestroy(self->fd, so);
	EXPECT_EQ(0, list_destroy(self->fd, ha));
	EXPECT_EQ(0, list_destroy(self->fd, hb));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q1));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q2));
}

/* A bad multi-submit queues nothing on any of its queues. */
TEST_F(l, bad_multi_submits_queue_nothing)
{
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP }, bad = { .type = 99 };
	struct drm_npu_submit_entry e[DRM_NPU_SUBMIT_MULTI_MAX + 1];
	struct drm_npu_submit_multi m = { 0 };
	uint64_t seqs[DRM_NPU_SUBMIT_MULTI_MAX], seq;
	uint32_t q1, q2;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q1));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q2));
	for (int i = 0; i <= DRM_NPU_SUBMIT_MULTI_MAX; i++)
		e[i] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1,
						      .queue = i % 2 ? q2 : q1 };
	EXPECT_EQ(-EINVAL, submit_multi(self->fd, e, 0, 0, seqs));
	EXPECT_EQ(-EINVAL, submit_multi(self->fd, e, DRM_NPU_SUBMIT_MULTI_MAX + 1, 0, seqs));
	EXPECT_EQ(-EINVAL, submit_multi(self->fd, e, 3, 0, seqs));	/* q1 twice */
	e[1].tasks = (uintptr_t)&bad;
	EXPECT_EQ(-EINVAL, submit_multi(self->fd, e, 2, 0, seqs));
	e[1].tasks = 8;
	EXPECT_EQ(-EFAULT, submit_multi(self->fd, e, 2, 0, seqs));
	e[1].tasks = (uintptr_t)&nop;
	e[1].queue = 7;						/* none such */
	EXPECT_EQ(-EINVAL, submit_multi(self->fd, e, 2, 0, seqs));
	e[1].queue = q2;
	e[1].count = 0;
	EXPECT_EQ(-EINVAL, submit_multi(self->fd, e, 2, 0, seqs));
	e[1].count = 1;
	m = (struct drm_npu_submit_multi){ .entries = DRM_NPU_OBJ_ARRAY(2, e), .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EINVAL, errno);
	m.pad = 0;
	e[1].flags = 1;						/* an entry's own */
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EINVAL, errno);
	e[1].flags = 0;
	e[1].pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EINVAL, errno);
	e[1].pad = 0;
	m.entries.stride = 16;					/* shorter than the first version */
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EINVAL, errno);
	m.entries.stride = sizeof(e[0]);
	m.entries.array = 8;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EFAULT, errno);
	/* A failed queue among them: nothing goes to the other. */
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT,
			   &(struct drm_npu_queue_destroy){ .queue = q2 }));
	EXPECT_EQ(-EIO, submit_multi(self->fd, e, 2, 0, seqs));
	/* Neither queue got a batch from any of these. */
	ASSERT_EQ(0, npu_submit_on(self->fd, q1, &nop, 1, &seq));
	EXPECT_EQ(1, seq);
	EXPECT_EQ(0, npu_wait_on(self->fd, q1, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q1));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q2));
}

struct multi_waiter {
	int fd;
	const struct drm_npu_submit_entry *e;
	uint32_t n;
	int ret;
};

static void *multi_waiter_run(void *arg)
{
	struct multi_waiter *w = arg;

	w->ret = submit_multi(w->fd, w->e, w->n, 0, NULL);
	return NULL;
}

struct destroyer {
	int fd;
	uint32_t queue;
	atomic_int done;
	int ret;
};

static void *destroyer_run(void *arg)
{
	struct destroyer *d = arg;

	d->ret = npu_queue_destroy(d->fd, d->queue);
	atomic_store(&d->done, 1);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * A SUBMIT_MULTI waiting for room on one queue holds nothing on the
 * others: QUEUE_DESTROY of another of its queues returns at once. It
 * used to admit the first queue's batch (a job its destroy waits for,
 * uninterruptibly) and then sleep for the second's room, as long as
 * that took: a D-state sleep any user could cause, for good.
 */
TEST_F(l, a_multi_submit_waiting_for_room_holds_up_no_destroy)
{
	enum { DEPTH = DRM_NPU_QUEUE_DEPTH_MIN, BATCH = DRM_NPU_SUBMIT_MAX_TASKS - 1 };
	struct sigaction sa = { .sa_handler = on_usr1 }, old;	/* no SA_RESTART */
	static struct drm_npu_task full[DRM_NPU_SUBMIT_MAX_TASKS];
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP }, rec;
	struct drm_npu_submit_entry e[2];
	struct multi_waiter w;
	struct destroyer d;
	pthread_t mt, dt;
	uint32_t qa, qb, n;
	uint64_t seq;
	int batches = 0;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, &old));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, DEPTH, 0, &qa));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, DEPTH, 0, &qb));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	/* qb's whole backlog, behind a notify nobody records yet. */
	for (int i = 0; i < BATCH; i++)
		full[i] = nop;
	full[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	ASSERT_EQ(0, npu_submit_on(self->fd, qb, full, BATCH, &seq));
	full[0] = nop;
	/* Each batch takes BATCH + 1 = 256 slots; 16 rings' worth is the backlog. */
	for (batches = 1; batches < 16 * DEPTH / (BATCH + 1); batches++)
		ASSERT_EQ(0, npu_submit_on(self->fd, qb, full, BATCH, &seq));

	e[0] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1, .queue = qa };
	e[1] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1, .queue = qb };
	w = (struct multi_waiter){ .fd = self->fd, .e = e, .n = 2 };
	ASSERT_EQ(0, pthread_create(&mt, NULL, multi_waiter_run, &w));
	usleep(300000);			/* into its wait for qb's room */
	d = (struct destroyer){ .fd = self->fd, .queue = qa };
	ASSERT_EQ(0, pthread_create(&dt, NULL, destroyer_run, &d));
	for (int i = 0; i < 300 && !atomic_load(&d.done); i++)
		usleep(10000);
	EXPECT_TRUE(atomic_load(&d.done)) TH_LOG("QUEUE_DESTROY waits for a multi-submit's room");

	/* The submit still waits for room; interrupted, it queues nothing. */
	pthread_kill(mt, SIGUSR1);
	pthread_join(mt, NULL);
	pthread_join(dt, NULL);
	EXPECT_EQ(-EINTR, w.ret);
	EXPECT_EQ(0, d.ret);
	sigaction(SIGUSR1, &old, NULL);

	rec = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { n } };
	ASSERT_EQ(0, npu_submit_on(self->fd, 0, &rec, 1, NULL));
	EXPECT_EQ(0, npu_wait_on(self->fd, qb, seq, 20 * SEC, NULL));
	/* Nothing of the interrupted run reached qb: its last batch is the last seq. */
	ASSERT_EQ(0, npu_submit_on(self->fd, qb, &nop, 1, &seq));
	EXPECT_EQ((uint64_t)batches + 1, seq);
	EXPECT_EQ(0, npu_wait_on(self->fd, qb, seq, 20 * SEC, NULL));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, qb));
}

/*
 * Each entry gets its own queue's sequence number, whatever the others'
 * are: queues at 5, 1 and none (a new one) get 6, 2 and 1, in the
 * entries' order, and each number is the one WAIT takes on its queue.
 */
TEST_F(l, each_entry_gets_its_own_queues_number)
{
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	struct drm_npu_submit_entry e[3];
	uint64_t seqs[DRM_NPU_SUBMIT_MULTI_MAX], seq;
	uint32_t q[3];

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q[i]));
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, npu_submit_on(self->fd, q[0], &nop, 1, &seq));
	ASSERT_EQ(0, npu_submit_on(self->fd, q[1], &nop, 1, &seq));
	e[0] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1, .queue = q[1] };
	e[1] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1, .queue = q[0] };
	e[2] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&nop, .count = 1, .queue = q[2] };
	ASSERT_EQ(0, submit_multi(self->fd, e, 3, 0, seqs));
	EXPECT_EQ(2, seqs[0]);
	EXPECT_EQ(6, seqs[1]);
	EXPECT_EQ(1, seqs[2]);
	EXPECT_EQ(0, seqs[3]);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, npu_wait_on(self->fd, e[i].queue, seqs[i], 10 * SEC, NULL))
			TH_LOG("entry %d", i);
		/* One past it was never handed out. */
		EXPECT_EQ(-EINVAL, npu_wait_on(self->fd, e[i].queue, seqs[i] + 1, 0, NULL))
			TH_LOG("entry %d", i);
	}
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, npu_queue_destroy(self->fd, q[i]));
}

/*
 * A multi-submit that fails at any step after some of its batches were
 * built (a later entry's bad task, its unknown queue, an unknown
 * in-syncobj) drops everything the built ones hold: their lists are
 * freed as soon as they are destroyed, and their buffers when closed.
 */
TEST_F(l, a_multi_submit_failing_late_lets_go_of_what_it_built)
{
	struct drm_npu_task t = npu_task_fill(0, 4096, 7), bad = { .type = 99 }, r[2];
	struct drm_npu_patch p = PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
	struct drm_npu_io_slot s = { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
	struct drm_npu_syncobj in = { .handle = 999 };
	uint64_t io[2] = { self->va, self->va + 4096 }, rings;
	uint64_t before_hbm = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	struct drm_npu_submit_entry e[3];
	struct drm_npu_submit_multi m;
	uint32_t q[3], h[2];

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q[i]));
	rings = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES);
	for (int c = 0; c < 3; c++) {
		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ &t, 1, &p, 1, &s, 1 },
						 &h[i]));
			r[i] = run_task(h[i], &io[i], 1);
			e[i] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&r[i], .count = 1,
							      .queue = q[i] };
		}
		e[2] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&r[0], .count = 1,
						      .queue = q[2] };
		m = (struct drm_npu_submit_multi){ .entries = DRM_NPU_OBJ_ARRAY(3, e) };
		switch (c) {
		case 0: e[2].tasks = (uintptr_t)&bad; break;	/* built two, then the third fails */
		case 1: e[2].queue = 7; break;			/* built all, then a lookup fails */
		case 2:						/* built, then its dependency */
			m.in_syncobjs = (uintptr_t)&in;
			m.in_count = 1;
			break;
		}
		EXPECT_NE(0, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m)) TH_LOG("case %d", c);
		for (int i = 0; i < 2; i++)
			EXPECT_EQ(0, list_destroy(self->fd, h[i])) TH_LOG("case %d", c);
		/* Destroyed and held by nothing: their memory is back at once. */
		EXPECT_EQ(rings, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES))
			TH_LOG("case %d", c);
	}
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, npu_queue_destroy(self->fd, q[i]));
	EXPECT_EQ(self->lists_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES));
	EXPECT_EQ(before_hbm, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
}

/*
 * Two RUN_LISTs in one batch, each with its own I/O table: each run's
 * copy lands where its own table says, not where the first one's does.
 */
TEST_F(l, two_runs_in_one_batch_each_bind_their_own_io)
{
	struct drm_npu_task t = npu_task_copy(0, 0, 4096), r[2];
	struct drm_npu_patch p[2] = { PATCH(0, DRM_NPU_PATCH_TASK_ARG, 1, 0, 0),
				      PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 1, 0) };
	struct drm_npu_io_slot s[2] = { { .size = 4096 },
					{ .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE } };
	uint64_t io[2][2], seq;
	uint32_t h[2];

	for (int i = 0; i < 2; i++) {
		/* slot 0 in, slot 1 out */
		ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ &t, 1, p, 2, s, 2 }, &h[i]));
		memset(self->map + i * 4096, 0x21 + i, 4096);
		memset(self->map + MiB + i * 4096, 0, 4096);
		io[i][0] = self->va + i * 4096;
		io[i][1] = self->va + MiB + i * 4096;
		r[i] = run_task(h[i], io[i], 2);
	}
	ASSERT_EQ(0, npu_submit_on(self->fd, 0, r, 2, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, 0, seq, 10 * SEC, NULL));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0x21 + i, self->map[MiB + i * 4096]) TH_LOG("run %d", i);
		EXPECT_EQ(0x21 + i, self->map[MiB + i * 4096 + 4095]) TH_LOG("run %d", i);
		EXPECT_EQ(0, list_destroy(self->fd, h[i]));
	}
}

/* The machine's free memory, from /proc/meminfo (KiB), or -1. */
static long long mem_free_kib(void)
{
	char buf[4096], *p;

	if (npu_read_file("/proc/meminfo", buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "MemFree:");
	return p ? strtoll(p + 8, NULL, 10) : -1;
}

/*
 * A list holds each notify it names once, however many of its tasks name
 * it: 64 lists of 65536 waits on one notify keep no more kernel memory
 * than a few pages each. They kept a reference, and an array slot, per
 * task: 512 KiB a list, 32 MiB in all, uncharged to their creator.
 */
TEST_F(l, a_list_holds_each_notify_once)
{
	enum { TASKS = DRM_NPU_TASKLIST_MAX_TASKS, LISTS = 64 };
	struct drm_npu_task *t = calloc(TASKS, sizeof(*t));
	uint32_t n, h[LISTS];
	long long before, after;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	for (int i = 0; i < TASKS; i++)
		t[i] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	/* Once first, so that what one create costs once is paid before counting. */
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = t, .count = TASKS }, &h[0]));
	EXPECT_EQ(0, list_destroy(self->fd, h[0]));
	before = mem_free_kib();
	ASSERT_LT(0, before);
	for (int i = 0; i < LISTS; i++) {
		ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = t, .count = TASKS },
					 &h[i])) TH_LOG("list %d", i);
	}
	after = mem_free_kib();
	EXPECT_GT(8 * 1024, before - after) TH_LOG("%lld KiB for %d lists", before - after, LISTS);
	for (int i = 0; i < LISTS; i++)
		EXPECT_EQ(0, list_destroy(self->fd, h[i]));
	free(t);
}

/* A file that closes with lists (one running) leaves no device memory behind. */
TEST_F(l, closing_the_file_frees_its_lists)
{
	int fd = npu_open();
	struct drm_npu_task t[2];
	uint32_t n, h;
	uint64_t before;

	ASSERT_LE(0, fd);
	/* This file's default queue's ring counts too: make it first. */
	ASSERT_EQ(0, npu_submit(fd, &(struct drm_npu_task){ .type = DRM_NPU_TASK_NOP }, 1, NULL));
	before = npu_dev_usage(fd, DRM_NPU_MEM_REGION_QUEUES);
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_NOTIFY, &n));
	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } };
	t[1] = (struct drm_npu_task){ .type = DRM_NPU_TASK_NOP };
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(0, list_create(fd, &(struct list_desc){ .tasks = t, .count = 2 }, &h));
	ASSERT_EQ(0, run_async(fd, 0, h, NULL, 0, NULL));
	EXPECT_LT(before, npu_dev_usage(fd, DRM_NPU_MEM_REGION_QUEUES));
	close(fd);
	/* Its ring goes too: what the other file sees is what it had before. */
	EXPECT_EQ(self->lists_before,
		  npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, self->lists_before));
}

/*
 * Handle 0 is no list's: destroying it is refused and changes nothing,
 * so no later create hands out 0 (it once erased the xarray's reserved
 * index 0, and the next list got handle 0, which libnpurt takes for "no
 * list" and never destroys).
 */
TEST_F(l, handle_zero_is_never_a_list)
{
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	uint32_t h[3];

	EXPECT_EQ(-EINVAL, list_destroy(self->fd, 0));
	ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = &nop, .count = 1 }, &h[0]));
	EXPECT_NE(0, h[0]);
	EXPECT_EQ(-EINVAL, list_destroy(self->fd, 0));
	EXPECT_EQ(-EINVAL, list_destroy(self->fd, 0));
	for (int i = 1; i < 3; i++) {
		ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = &nop, .count = 1 },
					 &h[i]));
		EXPECT_NE(0, h[i]) TH_LOG("list %d", i);
	}
	EXPECT_EQ(0, run_on(self->fd, 0, h[0], NULL, 0, NULL));
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, list_destroy(self->fd, h[i])) TH_LOG("list %d", i);
	}
	/* The run's batch held h[0]; its release is deferred to a workqueue. */
	EXPECT_EQ(self->lists_before,
		  npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, self->lists_before));
}

/*
 * Tasks of a list that name addresses nothing maps keep those stretches
 * out of the allocator for the list's life. They cost kernel memory
 * alone, so one holder names at most 4096 of them and a context keeps at
 * most 16384 at once: the list that would go past is refused with
 * -E2BIG, and fits once another list has gone. Buffers still get made.
 */
TEST_F(l, unmapped_stretches_are_held_within_a_budget)
{
	const uint32_t n = 4096;
	struct drm_npu_task *t = calloc(n + 1, sizeof(*t));
	const uint64_t base = self->va + (4ull << 30);	/* nothing mapped there */
	struct drm_npu_bo_create bo;
	uint32_t h[5];

	ASSERT_NE(NULL, t);
	/* Timestamps 8 bytes apart from each other: a stretch each. */
	for (uint32_t k = 0; k < 5; k++) {
		for (uint32_t i = 0; i <= n; i++)
			t[i] = (struct drm_npu_task){ .type = DRM_NPU_TASK_TIMESTAMP,
						      .args = { base + (k * (n + 1) + i) * 16 } };
		if (k == 0) {
			EXPECT_EQ(-E2BIG, list_create(self->fd, &(struct list_desc){
				.tasks = t, .count = n + 1 }, &h[0]));
		}
		EXPECT_EQ(k < 4 ? 0 : -E2BIG, list_create(self->fd, &(struct list_desc){
			.tasks = t, .count = n }, &h[k])) TH_LOG("list %u", k);
	}
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	EXPECT_EQ(0, list_destroy(self->fd, h[0]));
	EXPECT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = t, .count = n }, &h[4]));
	for (uint32_t k = 1; k < 5; k++) {
		EXPECT_EQ(0, list_destroy(self->fd, h[k])) TH_LOG("list %u", k);
	}
	EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
	free(t);
}

struct quota_race {
	int fd;
	struct drm_npu_task *tasks;
	uint32_t count;
	pthread_barrier_t *start;
	uint32_t got[8];
	int n, err;
};

static void *quota_racer(void *arg)
{
	struct quota_race *r = arg;
	uint32_t h;
	int ret;

	pthread_barrier_wait(r->start);
	while (!(ret = list_create(r->fd, &(struct list_desc){ .tasks = r->tasks,
							       .count = r->count }, &h)))
		if (r->n < 8)
			r->got[r->n++] = h;
	r->err = ret;
	return NULL;
}

/*
 * A context holds DRM_NPU_TASKLISTS_PER_CONTEXT lists, however many
 * threads create them at once: 4 threads racing for the last 4 places
 * get 4 lists between them, and every other create fails -EDQUOT. The
 * quota was checked in one locked section and taken in another, so
 * racers that all passed the check all got a list.
 */
TEST_F(l, the_list_quota_holds_under_concurrent_creates)
{
	enum { RACERS = 4, ROUNDS = 12, BIG = 8192 };
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP }, *big;
	static uint32_t handles[DRM_NPU_TASKLISTS_PER_CONTEXT];
	struct quota_race r[RACERS];
	pthread_barrier_t start;
	pthread_t th[RACERS];
	uint32_t n = 0, h;

	/* Long lists: their copy to HBM is what lay between check and take. */
	big = calloc(BIG, sizeof(*big));
	ASSERT_NE(NULL, big);
	for (int i = 0; i < BIG; i++)
		big[i].type = DRM_NPU_TASK_NOP;
	while (n < DRM_NPU_TASKLISTS_PER_CONTEXT - RACERS) {
		ASSERT_EQ(0, list_create(self->fd, &(struct list_desc){ .tasks = &nop, .count = 1 },
					 &handles[n]));
		n++;
	}
	for (int round = 0; round < ROUNDS; round++) {
		uint32_t total = 0;

		ASSERT_EQ(0, pthread_barrier_init(&start, NULL, RACERS));
		for (int i = 0; i < RACERS; i++) {
			r[i] = (struct quota_race){ .fd = self->fd, .tasks = big, .count = BIG,
						    .start = &start };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, quota_racer, &r[i]));
		}
		for (int i = 0; i < RACERS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&start);
		for (int i = 0; i < RACERS; i++) {
			EXPECT_EQ(-EDQUOT, r[i].err) TH_LOG("round %d, racer %d", round, i);
			total += r[i].n;
		}
		EXPECT_EQ(RACERS, total) TH_LOG("round %d: %u lists over the quota", round,
						total - RACERS);
		EXPECT_EQ(-EDQUOT, list_create(self->fd, &(struct list_desc){ .tasks = &nop,
									   .count = 1 }, &h));
		for (int i = 0; i < RACERS; i++)
			for (int k = 0; k < r[i].n; k++)
				EXPECT_EQ(0, list_destroy(self->fd, r[i].got[k]));
		if (total != RACERS)
			break;
	}
	while (n)
		EXPECT_EQ(0, list_destroy(self->fd, handles[--n]));
	free(big);
	EXPECT_EQ(self->lists_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES));
}

/*
 * The arrays grow: a caller built with longer entries, tasks, patches or
 * slots (new fields, zero) works, each entry's seq comes back at the
 * caller's stride, and a nonzero byte the kernel does not know of is
 * -E2BIG, never ignored.
 */
struct long_entry {
	struct drm_npu_submit_entry e;
	uint64_t later;
};

struct long_task {
	struct drm_npu_task t;
	uint64_t later[2];
};

TEST_F(l, arrays_at_a_longer_stride_from_a_newer_caller)
{
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	struct long_entry le[2];
	struct long_task lt[2];
	struct drm_npu_submit_multi m;
	struct drm_npu_tasklist_create c;
	uint32_t q[2];
	uint64_t io = self->va, seq;

	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q[i]));
		le[i] = (struct long_entry){ .e = { .tasks = (uintptr_t)&nop, .count = 1,
						    .queue = q[i], .seq = 77 } };
	}
	/* q[1] one batch ahead: each entry gets its own queue's number. */
	ASSERT_EQ(0, npu_submit_on(self->fd, q[1], &nop, 1, &seq));
	m = (struct drm_npu_submit_multi){ .entries = DRM_NPU_OBJ_ARRAY(2, le) };
	ASSERT_EQ(sizeof(le[0]), m.entries.stride);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(1, le[0].e.seq);
	EXPECT_EQ(2, le[1].e.seq);
	EXPECT_EQ(0, le[0].later);
	le[1].later = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0, npu_wait_on(self->fd, q[0], 1, 10 * SEC, NULL));
	EXPECT_EQ(0, npu_wait_on(self->fd, q[1], 2, 10 * SEC, NULL));
	EXPECT_EQ(-EINVAL, npu_wait_on(self->fd, q[1], 3, 0, NULL));	/* none queued */

	/* A list of longer tasks: the kernel reads each at the stride. */
	lt[0] = (struct long_task){ .t = npu_task_fill(0, 4096, 0x5a5a5a5a) };
	lt[1] = (struct long_task){ .t = nop };
	{
		struct drm_npu_patch p = PATCH(0, DRM_NPU_PATCH_TASK_ARG, 0, 0, 0);
		struct drm_npu_io_slot sl = { .size = 4096, .flags = DRM_NPU_IO_SLOT_WRITE };
		struct drm_npu_task r;
		uint32_t *cpu = (uint32_t *)self->map;

		c = (struct drm_npu_tasklist_create){ .tasks = DRM_NPU_OBJ_ARRAY(2, lt),
						      .patches = DRM_NPU_OBJ_ARRAY(1, &p),
						      .slots = DRM_NPU_OBJ_ARRAY(1, &sl) };
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_TASKLIST_CREATE, &c));
		r = run_task(c.handle, &io, 1);
		memset(cpu, 0, 4096);
		ASSERT_EQ(0, npu_submit_on(self->fd, q[0], &r, 1, &seq));
		ASSERT_EQ(0, npu_wait_on(self->fd, q[0], seq, 10 * SEC, NULL));
		EXPECT_EQ(0x5a5a5a5a, cpu[0]);
		EXPECT_EQ(0x5a5a5a5a, cpu[1023]);
		EXPECT_EQ(0, list_destroy(self->fd, c.handle));
		lt[1].later[1] = 1;
		c.handle = 0;
		EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_TASKLIST_CREATE, &c));
		EXPECT_EQ(E2BIG, errno);
	}
}

/*
 * The seqs are written back after the run is queued: entries the kernel
 * can read but not write get -EFAULT, and the run still runs.
 */
TEST_F(l, a_multi_submit_whose_seqs_cannot_be_written_back_still_runs)
{
	struct drm_npu_task fill = npu_task_fill(self->va, 4096, 0x33333333);
	struct drm_npu_submit_entry *e;
	struct drm_npu_submit_multi m;
	uint32_t *cpu = (uint32_t *)self->map, q;
	uint64_t seq;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	e = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, e);
	e[0] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)&fill, .count = 1, .queue = q };
	ASSERT_EQ(0, mprotect(e, 4096, PROT_READ));
	memset(cpu, 0, 4096);
	m = (struct drm_npu_submit_multi){ .entries = DRM_NPU_OBJ_ARRAY(1, e) };
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT_MULTI, &m));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, npu_wait_on(self->fd, q, 1, 10 * SEC, NULL));
	EXPECT_EQ(0x33333333, cpu[0]);
	ASSERT_EQ(0, npu_submit_on(self->fd, q, &fill, 1, &seq));
	EXPECT_EQ(2, seq);
	munmap(e, 4096);
}

TEST_HARNESS_MAIN
