// SPDX-License-Identifier: MIT
/*
 * Tests written against bugs that once got through every other test
 * (issue 9, found by mutation testing: see Documentation/testing.rst):
 *
 *  - every reserved field, padding and unknown flag of every ioctl, task
 *    and io_uring command is refused with -EINVAL, and the refused call
 *    changes nothing;
 *  - a batch holds exactly the buffers its ranges touch, checked at both
 *    ends of each range to the byte;
 *  - closing a buffer makes the device forget its translations, so the
 *    same VA backed by other memory reaches the new memory;
 *  - a SUBMIT that fails after it took references gives them back, and
 *    a failed queue goes without waiting for another queue's work;
 *  - queue ids are handed out once under concurrent creation;
 *  - nothing of a closed buffer stays mapped, and a copy past a buffer's
 *    end faults at the first byte past it;
 *  - the op library at the edges of its checks and of float range;
 *  - libnpurt at the edges of its own checks, giving device events back;
 *  - every priority level runs strictly ahead of those below it, and
 *    equal levels share the device.
 *
 * The fixture checks, besides buffers and queues, that every event and
 * notify comes back once the file is closed.
 */
#include <liburing.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1ull << 20)
#define SEC (1000000000ll)
#define PAGE 4096ull
#define URING_FLAGS (IORING_SETUP_SQE128 | IORING_SETUP_CQE32)

static int xioctl(int fd, unsigned long nr, void *arg)
{
	return ioctl(fd, nr, arg) ? -errno : 0;
}

static struct drm_npu_task task1(uint16_t type, uint64_t arg)
{
	struct drm_npu_task t = { .type = type, .args = { arg } };

	return t;
}

/* A queue of its own, blocked on the device by an event nobody records. */
static void parked_queue(struct __test_metadata *_metadata, int fd, uint32_t *q,
			 uint32_t *never)
{
	struct drm_npu_task t;
	uint64_t seq;

	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 30000, q));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, never));
	t = task1(DRM_NPU_TASK_EVENT_WAIT, *never);
	ASSERT_EQ(0, npu_submit_on(fd, *q, &t, 1, &seq));
}

/* Record `ev` from the default queue and wait for that. */
static void record(struct __test_metadata *_metadata, int fd, uint32_t ev)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_EVENT_RECORD, ev);
	uint64_t seq;

	ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(fd, seq, 10 * SEC, NULL));
}

/* Events and notifies in use device-wide (debugfs), or -1. */
static long long syncs_in_use(void)
{
	return npu_debugfs_value("npu_queues", "events and notifies in use: ");
}

/* ... once what finished work held is released (from a worker). */
static long long syncs_settle(long long want)
{
	long long v = syncs_in_use();

	for (int i = 0; i < 500 && v != want; i++) {
		usleep(10000);
		v = syncs_in_use();
	}
	return v;
}

/*
 * NPU_BASELINE_FIXTURE's checks (buffers and queues given back when the
 * file closes), and events and notifies too: a batch that names one
 * holds it until the batch is done, and not a moment longer.
 */
FIXTURE(st) {
	int fd;
	uint64_t buffers_before;
	long long syncs_before;
};

FIXTURE_SETUP(st)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	self->buffers_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	self->syncs_before = syncs_in_use();
}

FIXTURE_TEARDOWN(st)
{
	int fd;

	close(self->fd);
	fd = npu_open();
	EXPECT_EQ(self->buffers_before,
		  npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, self->buffers_before));
	EXPECT_EQ(0, npu_usage_settles(fd, DRM_NPU_MEM_REGION_QUEUES, 0));
	EXPECT_EQ(self->syncs_before, syncs_settle(self->syncs_before));
	close(fd);
}

/* ---- 1. reserved fields and flags -------------------------------------- */

/*
 * Each ioctl's reserved fields, one at a time and one bit at a time, with
 * everything else valid; then the same call with them zero succeeds, so
 * the refusal was the reserved field's. Refused calls leave no trace: the
 * first queue made after them is id 1, the first batch seq 1.
 */
TEST_F(st, ioctls_refuse_reserved_fields_and_unknown_flags)
{
	int fd = self->fd, other;
	struct drm_npu_bo_create bo;
	uint32_t q, ev, notify;
	char *mem;

	ASSERT_EQ(0, npu_bo_create(fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));

	/* GET_PARAM */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_HBM_SIZE, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p)) TH_LOG("bit %d", bit);
	}

	/* BO_CREATE: flags, and policies past the last. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_bo_create c = {
			.size = PAGE, .flags = 1u << bit, .page_policy = DRM_NPU_BO_PAGE_NORMAL_ONLY,
		};

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c)) TH_LOG("flag bit %d", bit);
	}
	EXPECT_EQ(-EINVAL, npu_bo_create(fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY + 1, NULL));
	EXPECT_EQ(-EINVAL, npu_bo_create(fd, PAGE, 0x80000000u, NULL));

	/* BO_INFO */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_bo_info i = { .handle = bo.handle, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_BO_INFO, &i)) TH_LOG("bit %d", bit);
	}

	/* USERPTR: unknown flags, and its out fields must come in zero. */
	mem = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	mem[0] = 1;
	for (int bit = 1; bit < 32; bit++) {
		struct drm_npu_userptr u = { .addr = (uintptr_t)mem, .size = PAGE, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_USERPTR, &u)) TH_LOG("flag bit %d", bit);
	}
	{
		/* Address 0 is refused as such, not found unmapped later. */
		struct drm_npu_userptr u = { .addr = 0, .size = PAGE };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_USERPTR, &u));
	}
	{
		struct drm_npu_userptr u = { .addr = (uintptr_t)mem, .size = PAGE, .handle = 1 };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_USERPTR, &u));
		u.handle = 0;
		u.device_va = DRM_NPU_VA_BASE;
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_USERPTR, &u));
		u.device_va = 0;
		u.flags = DRM_NPU_USERPTR_READ_ONLY;
		ASSERT_EQ(0, xioctl(fd, DRM_IOCTL_NPU_USERPTR, &u));
		EXPECT_EQ(0, npu_gem_close(fd, u.handle));
	}
	munmap(mem, PAGE);

	/* GET_MEM_USAGE */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_mem_usage u = { .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u)) TH_LOG("flag bit %d", bit);
		u = (struct drm_npu_mem_usage){ .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u)) TH_LOG("bit %d", bit);
	}

	/* QUEUE_CREATE: flags, pad, the out field; then the first queue is 1. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_queue_create c = { .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c)) TH_LOG("flag bit %d", bit);
		c = (struct drm_npu_queue_create){ .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c)) TH_LOG("bit %d", bit);
		c = (struct drm_npu_queue_create){ .queue = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c)) TH_LOG("queue bit %d", bit);
	}
	EXPECT_EQ(-EINVAL, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_REALTIME + 1, 0, 0, &q));
	EXPECT_EQ(-EINVAL, npu_queue_create(fd, 0x80000000u, 0, 0, &q));
	EXPECT_EQ(-EINVAL, npu_queue_create(fd, 0, DRM_NPU_QUEUE_DEPTH_MIN / 2, 0, &q));
	EXPECT_EQ(-EINVAL, npu_queue_create(fd, 0, DRM_NPU_QUEUE_DEPTH_MAX * 2, 0, &q));
	EXPECT_EQ(-EINVAL, npu_queue_create(fd, 0, DRM_NPU_QUEUE_DEPTH_MIN + 4, 0, &q));
	EXPECT_EQ(-EINVAL, npu_queue_destroy(fd, 1));	/* none was made */
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, DRM_NPU_QUEUE_DEPTH_MIN, 0, &q));
	EXPECT_EQ(1, q);

	/* QUEUE_DESTROY and QUEUE_ABORT of that queue: the queue stays usable. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_queue_destroy d = { .queue = q, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d)) TH_LOG("bit %d", bit);
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_QUEUE_ABORT, &d)) TH_LOG("bit %d", bit);
	}
	{
		struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
		uint64_t seq;

		ASSERT_EQ(0, npu_submit_on(fd, q, &t, 1, &seq));
		EXPECT_EQ(1, seq);
		EXPECT_EQ(0, npu_wait_on(fd, q, seq, 10 * SEC, NULL));
	}

	/* SYNC_CREATE: kinds, flags, the out field, pad. */
	{
		struct drm_npu_sync_create c = { .kind = 0 };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &c));
		c.kind = DRM_NPU_SYNC_NOTIFY + 1;
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &c));
	}
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_sync_create c = { .kind = DRM_NPU_SYNC_EVENT, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &c)) TH_LOG("flag bit %d", bit);
		c = (struct drm_npu_sync_create){ .kind = DRM_NPU_SYNC_NOTIFY, .id = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &c)) TH_LOG("id bit %d", bit);
		c = (struct drm_npu_sync_create){ .kind = DRM_NPU_SYNC_EVENT, .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &c)) TH_LOG("bit %d", bit);
	}
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_NOTIFY, &notify));

	/* SYNC_DESTROY: the event is still ours after each refusal. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_sync_destroy d = { .id = ev, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_SYNC_DESTROY, &d)) TH_LOG("bit %d", bit);
	}
	{
		struct drm_npu_event_query eq = { .id = ev };

		EXPECT_EQ(0, xioctl(fd, DRM_IOCTL_NPU_EVENT_QUERY, &eq));
		EXPECT_EQ(0, eq.recorded);
	}

	/* EVENT_QUERY: flags and pad. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_event_query eq = { .id = ev, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_EVENT_QUERY, &eq)) TH_LOG("bit %d", bit);
		eq = (struct drm_npu_event_query){ .id = ev, .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_EVENT_QUERY, &eq)) TH_LOG("bit %d", bit);
	}

	/* WAIT: flags and pad, on nothing to wait for (0 without them). */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_wait w = { .seq = 0, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_WAIT, &w)) TH_LOG("bit %d", bit);
		w = (struct drm_npu_wait){ .seq = 0, .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_WAIT, &w)) TH_LOG("bit %d", bit);
	}
	{
		struct drm_npu_wait w = { .seq = 0 };

		EXPECT_EQ(0, xioctl(fd, DRM_IOCTL_NPU_WAIT, &w));
	}

	/* EVENT_WAIT, on an event of ours that is not recorded. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_event_wait w = { .id = ev, .flags = 1u << bit, .deadline_ns = 0 };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &w)) TH_LOG("bit %d", bit);
	}
	{
		struct drm_npu_event_wait w = { .id = ev, .deadline_ns = 0 };

		EXPECT_EQ(-ETIMEDOUT, xioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
		record(_metadata, fd, ev);
		for (int bit = 0; bit < 32; bit++) {
			w = (struct drm_npu_event_wait){ .id = ev, .flags = 1u << bit,
							 .deadline_ns = npu_deadline(SEC) };
			EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &w)) TH_LOG("bit %d", bit);
		}
		w = (struct drm_npu_event_wait){ .id = ev, .deadline_ns = npu_deadline(SEC) };
		EXPECT_EQ(0, xioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
	}

	/* NOTIFY_EXPORT: flags, pad, the out fd. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_notify_export x = { .id = notify, .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &x)) TH_LOG("flag bit %d", bit);
		x = (struct drm_npu_notify_export){ .id = notify, .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &x)) TH_LOG("bit %d", bit);
		x = (struct drm_npu_notify_export){ .id = notify, .fd = (int32_t)(1u << bit) };
		EXPECT_EQ(-EINVAL, xioctl(fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &x)) TH_LOG("fd bit %d", bit);
	}

	/* NOTIFY_IMPORT into another context: flags, pad, the out id. */
	{
		struct drm_npu_notify_export x = { .id = notify };
		struct drm_npu_notify_import im;

		ASSERT_EQ(0, xioctl(fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &x));
		other = npu_open();
		ASSERT_LE(0, other);
		for (int bit = 0; bit < 32; bit++) {
			im = (struct drm_npu_notify_import){ .fd = x.fd, .flags = 1u << bit };
			EXPECT_EQ(-EINVAL, xioctl(other, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im))
				TH_LOG("flag bit %d", bit);
			im = (struct drm_npu_notify_import){ .fd = x.fd, .pad = 1u << bit };
			EXPECT_EQ(-EINVAL, xioctl(other, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im))
				TH_LOG("bit %d", bit);
			im = (struct drm_npu_notify_import){ .fd = x.fd, .id = 1u << bit };
			EXPECT_EQ(-EINVAL, xioctl(other, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im))
				TH_LOG("id bit %d", bit);
		}
		/* Nothing was imported: the other context cannot use it yet. */
		{
			struct drm_npu_task t = task1(DRM_NPU_TASK_NOTIFY_RECORD, notify);
			uint64_t seq;

			EXPECT_EQ(-EINVAL, npu_submit(other, &t, 1, &seq));
		}
		im = (struct drm_npu_notify_import){ .fd = x.fd };
		EXPECT_EQ(0, xioctl(other, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im));
		EXPECT_EQ(notify, im.id);
		close(x.fd);
		close(other);
	}
	npu_gem_close(fd, bo.handle);
}

/* SUBMIT's own fields and its syncobj entries; nothing gets queued. */
TEST_F(st, submit_refuses_reserved_fields_and_bad_syncobj_entries)
{
	struct drm_npu_syncobj many[DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1];
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_submit s;
	uint32_t q, done, fresh;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	/* A signalled syncobj: waiting for it, or signalling it, works. */
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, DRM_SYNCOBJ_CREATE_SIGNALED, &done));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &fresh));
	for (int i = 0; i <= DRM_NPU_SUBMIT_MAX_SYNCOBJS; i++)
		many[i] = (struct drm_npu_syncobj){ .handle = done };

	for (int bit = 0; bit < 32; bit++) {
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .flags = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s)) TH_LOG("flag bit %d", bit);
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .pad = 1u << bit };
		EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s)) TH_LOG("bit %d", bit);

		struct drm_npu_syncobj in = { .handle = done, .flags = 1u << bit };
		struct drm_npu_syncobj out = { .handle = fresh, .flags = 1u << bit };

		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .in_syncobjs = (uintptr_t)&in, .in_count = 1 };
		EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s)) TH_LOG("in flag bit %d", bit);
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .out_syncobjs = (uintptr_t)&out, .out_count = 1 };
		EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s)) TH_LOG("out flag bit %d", bit);
	}
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .in_syncobjs = (uintptr_t)many,
				     .in_count = DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1 };
	EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .out_syncobjs = (uintptr_t)many,
				     .out_count = DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1 };
	EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));

	/* Nothing was queued; then the most each way is fine. */
	EXPECT_EQ(-EINVAL, npu_wait_on(self->fd, q, 1, 0, NULL));
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .in_syncobjs = (uintptr_t)many,
				     .in_count = DRM_NPU_SUBMIT_MAX_SYNCOBJS };
	EXPECT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	EXPECT_EQ(1, s.seq);
	many[0].handle = fresh;
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .out_syncobjs = (uintptr_t)many,
				     .out_count = DRM_NPU_SUBMIT_MAX_SYNCOBJS };
	EXPECT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	EXPECT_EQ(2, s.seq);
	EXPECT_EQ(0, npu_wait_on(self->fd, q, 2, 10 * SEC, NULL));
	drmSyncobjDestroy(self->fd, done);
	drmSyncobjDestroy(self->fd, fresh);
}

/*
 * Every task type with each argument it does not use set (low and high
 * bit), each flag bit and each pad bit, and the argument checks of each
 * type. The valid form of each is accepted (onto a queue that never runs
 * it), so every refusal is the field's.
 */
TEST_F(st, tasks_refuse_unused_arguments_flags_and_padding)
{
	struct drm_npu_bo_create bo;
	uint32_t q, never, ev, n;
	uint64_t seq;

	ASSERT_EQ(0, npu_bo_create(self->fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	parked_queue(_metadata, self->fd, &q, &never);
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &ev));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));

	const uint64_t va = bo.device_va;
	const struct { struct drm_npu_task t; int used; } good[] = {
		{ { .type = DRM_NPU_TASK_NOP }, 0 },
		{ { .type = DRM_NPU_TASK_COPY, .args = { va, va + 64, 64 } }, 3 },
		{ { .type = DRM_NPU_TASK_FILL, .args = { va, 64, 0xffffffffu } }, 3 },
		{ { .type = DRM_NPU_TASK_KERNEL,
		    .args = { va, DRM_NPU_MAX_BLOCK_DIM, DRM_NPU_KERNEL_ARGS_MAX } }, 3 },
		{ { .type = DRM_NPU_TASK_TIMESTAMP, .args = { va + 8 } }, 1 },
		{ { .type = DRM_NPU_TASK_BARRIER }, 0 },
		{ { .type = DRM_NPU_TASK_EVENT_RECORD, .args = { ev } }, 1 },
		{ { .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev } }, 1 },
		{ { .type = DRM_NPU_TASK_EVENT_RESET, .args = { ev } }, 1 },
		{ { .type = DRM_NPU_TASK_NOTIFY_RECORD, .args = { n } }, 1 },
		{ { .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { n } }, 1 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct drm_npu_task t;

		for (int a = good[i].used; a < 7; a++) {
			for (int b = 0; b < 64; b += 63) {
				t = good[i].t;
				t.args[a] = 1ull << b;
				EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q, &t, 1, &seq))
					TH_LOG("type %u arg %d bit %d", t.type, a, b);
			}
		}
		for (int bit = 0; bit < 16; bit++) {
			t = good[i].t;
			t.flags = 1u << bit;
			EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q, &t, 1, &seq))
				TH_LOG("type %u flag bit %d", t.type, bit);
		}
		for (int bit = 0; bit < 32; bit++) {
			t = good[i].t;
			t.pad = 1u << bit;
			EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q, &t, 1, &seq))
				TH_LOG("type %u pad bit %d", t.type, bit);
		}
		t = good[i].t;
		EXPECT_EQ(0, npu_submit_on(self->fd, q, &t, 1, &seq)) TH_LOG("type %u", t.type);
	}

	/* Each type's own argument checks, at the edge. */
	const struct drm_npu_task bad[] = {
		{ .type = 3 }, { .type = 12 }, { .type = 0xffff },
		{ .type = DRM_NPU_TASK_COPY, .args = { va, va, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { va, 0, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { va, 2, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { va, 6, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { va + 1, 4, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { va + 2, 4, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { va, 4, 1ull << 32 } },
		{ .type = DRM_NPU_TASK_KERNEL,
		  .args = { va, DRM_NPU_MAX_BLOCK_DIM + 1, sizeof(struct npu_op_args) } },
		/* the argument block's size: zero, one past the maximum, huge */
		{ .type = DRM_NPU_TASK_KERNEL, .args = { va, 0, 0 } },
		{ .type = DRM_NPU_TASK_KERNEL, .args = { va, 0, DRM_NPU_KERNEL_ARGS_MAX + 1 } },
		{ .type = DRM_NPU_TASK_KERNEL, .args = { va, 0, 1ull << 63 } },
		{ .type = DRM_NPU_TASK_TIMESTAMP, .args = { va + 4 } },
		{ .type = DRM_NPU_TASK_TIMESTAMP, .args = { va + 1 } },
		{ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { n } },	/* kinds do not mix */
		{ .type = DRM_NPU_TASK_NOTIFY_WAIT, .args = { ev } },
		{ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { (1ull << 32) | ev } },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct drm_npu_task pair[2] = { task1(DRM_NPU_TASK_NOP, 0), bad[i] };

		EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q, pair, 2, &seq)) TH_LOG("bad task %zu", i);
		EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q, &bad[i], 1, &seq)) TH_LOG("bad task %zu", i);
	}
	/* One batch for the gate and one per valid task: nothing else got in. */
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(self->fd, q, 1 + sizeof(good) / sizeof(good[0]), 0, NULL));
	EXPECT_EQ(-EINVAL, npu_wait_on(self->fd, q, 2 + sizeof(good) / sizeof(good[0]), 0, NULL));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	npu_gem_close(self->fd, bo.handle);
}

/* ---- io_uring: the same rules for command payloads -------------------- */

struct cqe {
	int32_t res;
	uint64_t res2;
};

/* One command through the ring, and its CQE (within 10 s). */
static int uring_run(struct io_uring *r, int fd, uint32_t op, const void *payload,
		     size_t len, struct cqe *out)
{
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);
	struct io_uring_cqe *c;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	memcpy(sqe->cmd, payload, len);
	ret = io_uring_submit(r);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = io_uring_wait_cqe_timeout(r, &c, &ts);
	if (ret)
		return ret;
	out->res = c->res;
	out->res2 = c->big_cqe[0];
	io_uring_cqe_seen(r, c);
	return 0;
}

TEST_F(st, uring_commands_refuse_reserved_fields_and_unknown_flags)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0), bad = task1(DRM_NPU_TASK_BARRIER, 1);
	struct drm_npu_syncobj in = { 0 }, out = { 0 };
	struct io_uring ring;
	struct drm_npu_submit s;
	struct cqe c;
	uint32_t q, ev, done, fresh;

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, URING_FLAGS));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &ev));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, DRM_SYNCOBJ_CREATE_SIGNALED, &done));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &fresh));

	for (int bit = 0; bit < 32; bit++) {
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .flags = 1u << bit };
		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("SUBMIT flag bit %d", bit);
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .pad = 1u << bit };
		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("SUBMIT pad bit %d", bit);
		in = (struct drm_npu_syncobj){ .handle = done, .flags = 1u << bit };
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .in_syncobjs = (uintptr_t)&in, .in_count = 1 };
		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("SUBMIT in-syncobj flag bit %d", bit);
		out = (struct drm_npu_syncobj){ .handle = fresh, .flags = 1u << bit };
		s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
					     .out_syncobjs = (uintptr_t)&out, .out_count = 1 };
		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("SUBMIT out-syncobj flag bit %d", bit);
	}
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&bad, .count = 1, .queue = q };
	ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(-EINVAL, c.res);
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q, .seq = 1ull << 63 };
	ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(-EINVAL, c.res);

	/* Nothing was queued: this is the queue's first batch. */
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q };
	ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(1, c.res2);

	/* WAIT for that batch, done already. */
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_uring_wait w = { .seq = 1, .queue = q, .flags = 1u << bit };

		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("WAIT flag bit %d", bit);
	}
	{
		struct drm_npu_uring_wait w = { .seq = 1, .queue = q };

		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
		EXPECT_EQ(0, c.res);
	}

	/* EVENT_WAIT for a recorded event. */
	record(_metadata, self->fd, ev);
	for (int bit = 0; bit < 32; bit++) {
		struct drm_npu_uring_event_wait w = { .id = ev, .flags = 1u << bit };

		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &w, sizeof(w), &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("EVENT_WAIT flag bit %d", bit);
	}
	{
		struct drm_npu_uring_event_wait w = { .id = ev };

		ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &w, sizeof(w), &c));
		EXPECT_EQ(0, c.res);
	}
	drmSyncobjDestroy(self->fd, done);
	drmSyncobjDestroy(self->fd, fresh);
	io_uring_queue_exit(&ring);
}

/* ---- 2. what a batch holds: both ends of each range ------------------ */

/* Two one-page buffers, b right after a in this context's VA. */
static void adjacent_pair(struct __test_metadata *_metadata, int fd,
			  struct drm_npu_bo_create *a, struct drm_npu_bo_create *b)
{
	struct drm_npu_bo_create c[8];
	int n, ia = -1, ib = -1;

	for (n = 0; n < 8 && ia < 0; n++) {
		ASSERT_EQ(0, npu_bo_create(fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c[n]));
		for (int i = 0; i < n && ia < 0; i++) {
			if (c[i].device_va + c[i].size == c[n].device_va) {
				ia = i;
				ib = n;
			} else if (c[n].device_va + c[n].size == c[i].device_va) {
				ia = n;
				ib = i;
			}
		}
	}
	ASSERT_LE(0, ia) TH_LOG("no two of 8 new buffers are next to each other in VA");
	for (int i = 0; i < n; i++)
		if (i != ia && i != ib)
			npu_gem_close(fd, c[i].handle);
	*a = c[ia];
	*b = c[ib];
	ASSERT_EQ(a->device_va + PAGE, b->device_va);
}

enum hold { HOLD_A = 1, HOLD_B = 2 };

/*
 * A batch on a queue blocked by an event: its task `t` built from a's
 * and b's VAs. Closing both buffers leaves exactly what it holds in use
 * (the rest is freed at once); once released it runs without a fault
 * and gives everything back.
 */
static void check_hold(struct __test_metadata *_metadata, int fd, const char *what,
		       struct drm_npu_task (*make)(uint64_t a, uint64_t b), int holds)
{
	struct drm_npu_bo_create a, b;
	struct drm_npu_task batch[2];
	uint64_t before, want, seq;
	uint32_t q, go;

	adjacent_pair(_metadata, fd, &a, &b);
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 30000, &q));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &go));
	batch[0] = task1(DRM_NPU_TASK_EVENT_WAIT, go);
	batch[1] = make(a.device_va, b.device_va);
	ASSERT_EQ(0, npu_submit_on(fd, q, batch, 2, &seq));

	before = npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM);
	ASSERT_EQ(0, npu_gem_close(fd, a.handle));
	ASSERT_EQ(0, npu_gem_close(fd, b.handle));
	want = before - (holds & HOLD_A ? 0 : PAGE) - (holds & HOLD_B ? 0 : PAGE);
	EXPECT_EQ(want, npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, want))
		TH_LOG("%s: a %sheld, b %sheld", what, holds & HOLD_A ? "" : "not ",
		       holds & HOLD_B ? "" : "not ");

	record(_metadata, fd, go);
	EXPECT_EQ(0, npu_wait_on(fd, q, seq, 10 * SEC, NULL)) TH_LOG("%s", what);
	want = before - 2 * PAGE;
	EXPECT_EQ(want, npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, want)) TH_LOG("%s", what);
	EXPECT_EQ(0, npu_queue_destroy(fd, q));
	struct drm_npu_sync_destroy d = { .id = go };
	EXPECT_EQ(0, xioctl(fd, DRM_IOCTL_NPU_SYNC_DESTROY, &d));
}

static struct drm_npu_task fill_all_a(uint64_t a, uint64_t b)
{
	return npu_task_fill(a, PAGE, 1);			/* [a, b) */
}

static struct drm_npu_task copy_a_and_a_byte(uint64_t a, uint64_t b)
{
	return npu_task_copy(a, a, PAGE + 1);			/* [a, b + 1) */
}

static struct drm_npu_task copy_last_byte_of_a(uint64_t a, uint64_t b)
{
	return npu_task_copy(b - 1, b - 1, 1);			/* [b - 1, b) */
}

static struct drm_npu_task copy_across(uint64_t a, uint64_t b)
{
	return npu_task_copy(b - 1, b - 1, 2);			/* [b - 1, b + 1) */
}

static struct drm_npu_task fill_all_b(uint64_t a, uint64_t b)
{
	return npu_task_fill(b, PAGE, 1);			/* [b, b + PAGE) */
}

static struct drm_npu_task copy_first_byte_of_b(uint64_t a, uint64_t b)
{
	return npu_task_copy(b, b, 1);				/* [b, b + 1) */
}

static struct drm_npu_task stamp_end_of_a(uint64_t a, uint64_t b)
{
	return task1(DRM_NPU_TASK_TIMESTAMP, b - 8);		/* [b - 8, b) */
}

static struct drm_npu_task stamp_start_of_b(uint64_t a, uint64_t b)
{
	return task1(DRM_NPU_TASK_TIMESTAMP, b);			/* [b, b + 8) */
}

static struct drm_npu_task copy_b_to_a(uint64_t a, uint64_t b)
{
	return npu_task_copy(a, b, 64);				/* dst in a, src in b */
}

static struct drm_npu_task copy_a_to_b(uint64_t a, uint64_t b)
{
	return npu_task_copy(b, a, 64);				/* dst in b, src in a */
}

TEST_F(st, a_blocked_batch_holds_exactly_the_buffers_its_ranges_touch)
{
	check_hold(_metadata, self->fd, "fill of a, ending at b's first byte", fill_all_a, HOLD_A);
	check_hold(_metadata, self->fd, "copy of a and one byte more", copy_a_and_a_byte,
		   HOLD_A | HOLD_B);
	check_hold(_metadata, self->fd, "copy of a's last byte", copy_last_byte_of_a, HOLD_A);
	check_hold(_metadata, self->fd, "copy of a's last and b's first byte", copy_across,
		   HOLD_A | HOLD_B);
	check_hold(_metadata, self->fd, "fill of b, starting at its first byte", fill_all_b, HOLD_B);
	check_hold(_metadata, self->fd, "copy of b's first byte", copy_first_byte_of_b, HOLD_B);
	check_hold(_metadata, self->fd, "timestamp in a's last 8 bytes", stamp_end_of_a, HOLD_A);
	check_hold(_metadata, self->fd, "timestamp at b", stamp_start_of_b, HOLD_B);
	check_hold(_metadata, self->fd, "copy from b into a", copy_b_to_a, HOLD_A | HOLD_B);
	check_hold(_metadata, self->fd, "copy from a into b", copy_a_to_b, HOLD_A | HOLD_B);
}

/* ---- 3. closing a buffer makes the device forget it ------------------ */

#define A_SIZE (7 * PAGE)	/* a size no other hole in HBM is likely to have */

static uint32_t count_not(const uint32_t *p, size_t bytes, uint32_t v)
{
	uint32_t bad = 0;

	for (size_t i = 0; i < bytes / 4; i++)
		bad += p[i] != v;
	return bad;
}

/*
 * The device caches translations. A buffer the device has just written
 * through is closed; another context's buffer of the same size takes its
 * HBM (the exact hole it left between two others), and a new buffer of
 * this context gets its VA, on other HBM. A fill through that VA must
 * reach the new buffer, not the other context's.
 */
TEST_F(st, a_closed_buffers_translation_is_forgotten)
{
	struct drm_npu_bo_create x, a, y, p, b, c;
	uint64_t seq, used;
	uint32_t *pa, *pb, *pc;
	struct drm_npu_task t;
	int other;

	/* The other context's tables exist before anything is freed. */
	other = npu_open();
	ASSERT_LE(0, other);
	ASSERT_EQ(0, npu_bo_create(other, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &p));

	ASSERT_EQ(0, npu_bo_create(self->fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &x));
	ASSERT_EQ(0, npu_bo_create(self->fd, A_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &a));
	ASSERT_EQ(0, npu_bo_create(self->fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &y));
	pa = npu_bo_mmap(self->fd, a.handle, A_SIZE);
	ASSERT_NE(MAP_FAILED, pa);

	/* The device translates a's pages (and keeps them in its TLB). */
	t = npu_task_fill(a.device_va, A_SIZE, 0x11111111);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, count_not(pa, A_SIZE, 0x11111111));
	munmap(pa, A_SIZE);

	/* Closed, and released (the finished batch lets go from a worker). */
	used = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	ASSERT_EQ(0, npu_gem_close(self->fd, a.handle));
	ASSERT_EQ(used - A_SIZE, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, used - A_SIZE));

	/* a's HBM goes to the other context; a's VA to a new buffer here. */
	ASSERT_EQ(0, npu_bo_create(other, A_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b));
	ASSERT_EQ(0, npu_bo_create(self->fd, A_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	ASSERT_EQ(a.device_va, c.device_va) TH_LOG("the new buffer did not get the old VA");
	pb = npu_bo_mmap(other, b.handle, A_SIZE);
	pc = npu_bo_mmap(self->fd, c.handle, A_SIZE);
	ASSERT_NE(MAP_FAILED, pb);
	ASSERT_NE(MAP_FAILED, pc);
	EXPECT_EQ(0, count_not(pb, A_SIZE, 0));
	EXPECT_EQ(0, count_not(pc, A_SIZE, 0));

	/* The same queue (a new one would flush the TLB): the same VA. */
	t = npu_task_fill(c.device_va, A_SIZE, 0x22222222);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, count_not(pc, A_SIZE, 0x22222222)) TH_LOG("the fill missed the new buffer");
	EXPECT_EQ(0, count_not(pb, A_SIZE, 0)) TH_LOG("the fill reached another context's buffer");

	munmap(pb, A_SIZE);
	munmap(pc, A_SIZE);
	close(other);
	npu_gem_close(self->fd, x.handle);
	npu_gem_close(self->fd, y.handle);
	npu_gem_close(self->fd, c.handle);
}

/* ---- 4. a SUBMIT that fails gives back what it took ------------------ */

/* A one-page buffer and the device's HBM usage before it. */
static uint64_t new_buffer(struct __test_metadata *_metadata, int fd,
			   struct drm_npu_bo_create *bo)
{
	uint64_t base = npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM);

	EXPECT_EQ(0, npu_bo_create(fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, bo));
	return base;
}

/* Closing the buffer frees it: the failed batch holds nothing. */
static void freed_on_close(struct __test_metadata *_metadata, int fd, uint32_t handle,
			   uint64_t base, const char *what)
{
	EXPECT_EQ(0, npu_gem_close(fd, handle));
	EXPECT_EQ(base, npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, base)) TH_LOG("%s", what);
}

TEST_F(st, a_failed_submit_keeps_no_reference)
{
	struct drm_npu_queue_destroy abort_q = { 0 };
	struct drm_npu_bo_create bo;
	struct drm_npu_task t[2], many[12];
	uint64_t base, seq;
	uint32_t q, ev, n, empty, signalled;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &ev));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));

	/* A failed (aborted) queue: -EIO after the job took its references. */
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	abort_q.queue = q;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &abort_q));
	base = new_buffer(_metadata, self->fd, &bo);
	t[0] = npu_task_fill(bo.device_va, PAGE, 1);
	t[1] = task1(DRM_NPU_TASK_EVENT_RECORD, ev);
	EXPECT_EQ(-EIO, npu_submit_on(self->fd, q, t, 2, &seq));
	freed_on_close(_metadata, self->fd, bo.handle, base, "aborted queue");

	/* A queue this context does not have, and one out of range. */
	base = new_buffer(_metadata, self->fd, &bo);
	t[0] = npu_task_fill(bo.device_va, PAGE, 1);
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q + 1, t, 2, &seq));
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, 1000, t, 2, &seq));
	freed_on_close(_metadata, self->fd, bo.handle, base, "unknown queue");

	/* A bad event or notify after the buffer's range. */
	base = new_buffer(_metadata, self->fd, &bo);
	t[0] = npu_task_fill(bo.device_va, PAGE, 1);
	t[1] = task1(DRM_NPU_TASK_EVENT_WAIT, n);
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, t, 2, &seq));
	t[1] = task1(DRM_NPU_TASK_NOTIFY_RECORD, 4000);
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, t, 2, &seq));
	/* Many syncs (the array grows) and then a bad one. */
	many[0] = t[0];
	for (int i = 1; i < 11; i++)
		many[i] = task1(DRM_NPU_TASK_EVENT_RESET, ev);
	many[11] = task1(DRM_NPU_TASK_EVENT_RESET, n);
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, many, 12, &seq));
	freed_on_close(_metadata, self->fd, bo.handle, base, "bad sync in the batch");

	/* Syncobjs: an unknown out handle, an in-syncobj with no fence. */
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &empty));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, DRM_SYNCOBJ_CREATE_SIGNALED, &signalled));
	base = new_buffer(_metadata, self->fd, &bo);
	t[0] = npu_task_fill(bo.device_va, PAGE, 1);
	{
		struct drm_npu_syncobj good = { .handle = empty }, bad = { .handle = 9999 };
		struct drm_npu_syncobj outs[2] = { good, bad };
		struct drm_npu_submit s = {
			.tasks = (uintptr_t)t, .count = 1,
			.out_syncobjs = (uintptr_t)outs, .out_count = 2,
		};

		EXPECT_EQ(-ENOENT, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
		s = (struct drm_npu_submit){
			.tasks = (uintptr_t)t, .count = 1,
			.in_syncobjs = (uintptr_t)&good, .in_count = 1,
		};
		EXPECT_EQ(-EINVAL, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
		/* And an out-syncobj on the failed queue. */
		good.handle = signalled;
		s = (struct drm_npu_submit){
			.tasks = (uintptr_t)t, .count = 1, .queue = q,
			.out_syncobjs = (uintptr_t)&good, .out_count = 1,
		};
		EXPECT_EQ(-EIO, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	}
	freed_on_close(_metadata, self->fd, bo.handle, base, "syncobjs");
	drmSyncobjDestroy(self->fd, empty);
	drmSyncobjDestroy(self->fd, signalled);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
}

/* The default queue cannot be made: no hardware queue is left. */
TEST_F(st, a_submit_finding_no_queue_keeps_no_reference)
{
	struct drm_npu_bo_create bo;
	struct drm_npu_task t;
	int fds[16], nfds = 0, made = 0, ret = 0;
	uint64_t base, seq, per_ctx = 0;
	uint32_t q;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUES_PER_CONTEXT, &per_ctx));
	/* Every hardware queue, in as many files as the per-context limit needs. */
	while (nfds < 16) {
		fds[nfds] = npu_open();
		ASSERT_LE(0, fds[nfds]);
		made = 0;
		while (!(ret = npu_queue_create(fds[nfds], DRM_NPU_QUEUE_PRIORITY_LOW, 0, 0, &q)))
			made++;
		nfds++;
		ASSERT_EQ(-EBUSY, ret);
		if (made < per_ctx - 1)
			break;		/* the device's limit, not the context's */
	}
	ASSERT_GT(16, nfds);

	base = new_buffer(_metadata, self->fd, &bo);
	t = npu_task_fill(bo.device_va, PAGE, 1);
	EXPECT_EQ(-EBUSY, npu_submit(self->fd, &t, 1, &seq));
	freed_on_close(_metadata, self->fd, bo.handle, base, "no queue left");
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

static void on_alarm(int sig)
{
}

/*
 * A SUBMIT that finds its queue full (blocked on the device by an event,
 * with as much queued behind as the driver takes) waits, and a signal
 * ends the wait with -EINTR: the batch must drop what it took. A driver
 * that never makes a submitter wait queues it instead, holding the buffer
 * until the queue goes. Either way the buffer comes back, and no sooner
 * than it may.
 */
TEST_F_TIMEOUT(st, a_submit_to_a_full_queue_keeps_no_reference, 120)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 100000 },
				.it_interval = { .tv_usec = 100000 } };
	static struct drm_npu_task nops[DRM_NPU_SUBMIT_MAX_TASKS];
	struct drm_npu_bo_create bo;
	uint64_t base, seq;
	uint32_t q, never;
	int ret = 0, n;

	parked_queue(_metadata, self->fd, &q, &never);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	/* Full batches until one has to wait (and a tick interrupts it). */
	for (n = 0; n < 1000 && !(ret = npu_submit_on(self->fd, q, nops, DRM_NPU_SUBMIT_MAX_TASKS, &seq)); n++)
		;
	EXPECT_TRUE(ret == 0 || ret == -EINTR) TH_LOG("%d", ret);

	/*
	 * A full batch again, so that it waits too when the last one did
	 * (a small one could slip into what room is left), holding a buffer.
	 */
	base = new_buffer(_metadata, self->fd, &bo);
	nops[0] = npu_task_fill(bo.device_va, PAGE, 1);
	ret = npu_submit_on(self->fd, q, nops, DRM_NPU_SUBMIT_MAX_TASKS, &seq);
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
	if (ret == -EINTR) {
		freed_on_close(_metadata, self->fd, bo.handle, base, "interrupted");
	} else {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
		EXPECT_EQ(base + PAGE, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM))
			TH_LOG("a queued batch let go of its buffer");
	}
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	EXPECT_EQ(base, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, base));
}

/* The same through io_uring: SUBMIT to a failed queue. */
TEST_F(st, a_failed_uring_submit_keeps_no_reference)
{
	struct drm_npu_queue_destroy abort_q = { 0 };
	struct drm_npu_bo_create bo;
	struct drm_npu_task t;
	struct drm_npu_submit s;
	struct io_uring ring;
	uint64_t base;
	struct cqe c;
	uint32_t q;

	ASSERT_EQ(0, io_uring_queue_init(8, &ring, URING_FLAGS));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	abort_q.queue = q;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &abort_q));
	base = new_buffer(_metadata, self->fd, &bo);
	t = npu_task_fill(bo.device_va, PAGE, 1);
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q };
	ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(-EIO, c.res);
	s.queue = q + 1;
	ASSERT_EQ(0, uring_run(&ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(-EINVAL, c.res);
	freed_on_close(_metadata, self->fd, bo.handle, base, "io_uring");
	io_uring_queue_exit(&ring);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
}

/*
 * A batch of a failed queue fails as it comes, without waiting for its
 * in-syncobjs: destroying the queue does not wait for another queue's
 * work (here blocked on an event, recorded only after 10 s).
 */
TEST_F_TIMEOUT(st, a_failed_queue_goes_without_waiting_for_its_dependencies, 60)
{
	struct drm_npu_queue_destroy abort_q = { 0 };
	struct drm_npu_syncobj sync = { 0 }, done = { 0 };
	struct drm_npu_submit s;
	struct drm_npu_task t;
	struct timespec t0, t1;
	uint32_t blocked, q, never;
	uint64_t seq;
	pid_t pid;
	int status;

	parked_queue(_metadata, self->fd, &blocked, &never);
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync.handle));
	/* The syncobj gets a batch behind the blocked one. */
	t = task1(DRM_NPU_TASK_NOP, 0);
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = blocked,
				     .out_syncobjs = (uintptr_t)&sync, .out_count = 1 };
	ASSERT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &done.handle));
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .in_syncobjs = (uintptr_t)&sync, .in_count = 1 };
	ASSERT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	s.out_syncobjs = (uintptr_t)&done;
	s.out_count = 1;
	ASSERT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	seq = s.seq;

	/* Whatever happens, the event is recorded in 10 s: nothing hangs for good. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		sleep(10);
		t = task1(DRM_NPU_TASK_EVENT_RECORD, never);
		_exit(npu_submit(self->fd, &t, 1, &seq) ? 1 : 0);
	}
	abort_q.queue = q;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &abort_q));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q, seq, 5 * SEC, NULL));
	/*
	 * The aborted queue's batches finish (failed) now, while the queue
	 * still exists: the scheduler stopped waiting for the blocked one.
	 */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_EQ(0, drmSyncobjWait(self->fd, &done.handle, 1,
				    t1.tv_sec * SEC + t1.tv_nsec + 5 * SEC, 0, NULL))
		TH_LOG("an aborted queue's batch still waits for its in-syncobj");
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_GT(5.0, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9)
		TH_LOG("the failed queue waited for another queue's work");
	/* Done waiting: the gate opens now, not in 10 s. */
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	t = task1(DRM_NPU_TASK_EVENT_RECORD, never);
	EXPECT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	drmSyncobjDestroy(self->fd, sync.handle);
	drmSyncobjDestroy(self->fd, done.handle);
}

/*
 * A batch's in-syncobj fence, waited on and signalled, then dropped by
 * everyone else (the syncobj destroyed, its batch freed): failing the
 * queue afterwards must not reach back into it. Only the debug kernel's
 * KASAN sees the use-after-free this guards against; here the queue
 * must still abort and run again.
 */
TEST_F_TIMEOUT(st, failing_a_queue_after_its_dependency_was_freed, 60)
{
	struct drm_npu_queue_destroy abort_q = { 0 };
	struct drm_npu_syncobj sync = { 0 };
	struct drm_npu_submit s;
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	uint32_t blocked, q, never;
	uint64_t seq, bseq;

	parked_queue(_metadata, self->fd, &blocked, &never);
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync.handle));
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = blocked,
				     .out_syncobjs = (uintptr_t)&sync, .out_count = 1 };
	ASSERT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	bseq = s.seq;

	/* q's batch waits on the blocked queue's; the syncobj goes. */
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&t, .count = 1, .queue = q,
				     .in_syncobjs = (uintptr_t)&sync, .in_count = 1 };
	ASSERT_EQ(0, xioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	seq = s.seq;
	usleep(100000);		/* the scheduler takes it up and waits */
	ASSERT_EQ(0, drmSyncobjDestroy(self->fd, sync.handle));

	/* The gate opens: both batches finish, the blocked one is freed. */
	record(_metadata, self->fd, never);
	ASSERT_EQ(0, npu_wait_on(self->fd, blocked, bseq, 10 * SEC, NULL));
	ASSERT_EQ(0, npu_wait_on(self->fd, q, seq, 10 * SEC, NULL));
	/* Another batch on the blocked queue: its scheduler lets go of the fence. */
	ASSERT_EQ(0, npu_submit_on(self->fd, blocked, &t, 1, &bseq));
	ASSERT_EQ(0, npu_wait_on(self->fd, blocked, bseq, 10 * SEC, NULL));
	usleep(200000);		/* past an RCU grace period: the fence is gone */

	abort_q.queue = q;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &abort_q));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, blocked));
}

/* ---- queue ids under concurrent creation -------------------------------- */

struct creator {
	int fd;
	uint32_t ids[16];
	int n;
};

static void *create_queues(void *arg)
{
	struct creator *c = arg;
	uint32_t id;

	while (c->n < 16 && !npu_queue_create(c->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &id))
		c->ids[c->n++] = id;
	return NULL;
}

/*
 * Threads creating queues on one file at once: each id is handed out
 * once, the per-context limit holds, and every queue is given back.
 */
TEST_F(st, concurrent_queue_creation_hands_out_each_id_once)
{
	struct creator c[4];
	pthread_t th[4];
	uint64_t per_ctx = 0;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUES_PER_CONTEXT, &per_ctx));
	for (int round = 0; round < 20; round++) {
		int total = 0, seen[64] = { 0 };

		for (int i = 0; i < 4; i++) {
			c[i] = (struct creator){ .fd = self->fd };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, create_queues, &c[i]));
		}
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(0, pthread_join(th[i], NULL));
		for (int i = 0; i < 4; i++) {
			for (int k = 0; k < c[i].n; k++) {
				ASSERT_GT(64, c[i].ids[k]);
				EXPECT_EQ(0, seen[c[i].ids[k]]++) TH_LOG("queue %u handed out twice",
									 c[i].ids[k]);
				total++;
			}
		}
		EXPECT_EQ(per_ctx - 1, total);
		for (int i = 0; i < 4; i++)
			for (int k = 0; k < c[i].n; k++)
				npu_queue_destroy(self->fd, c[i].ids[k]);
		EXPECT_EQ(0, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, 0)) TH_LOG("round %d", round);
		if (!_metadata->passed)
			break;
	}
}

/* ---- every page of a closed buffer is gone ------------------------------ */

/*
 * After a buffer is closed, its first and its last page fault on the
 * device: nothing of it stays mapped.
 */
TEST_F(st, every_page_of_a_closed_buffer_faults)
{
	const uint64_t size = 3 * PAGE;
	struct drm_npu_bo_create bo, keep;
	struct drm_npu_wait w;
	struct drm_npu_task t;
	uint64_t seq, base;

	/* A buffer after it, so its VA is not simply past the last mapping. */
	base = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	ASSERT_EQ(0, npu_bo_create(self->fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	ASSERT_EQ(0, npu_bo_create(self->fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &keep));
	t = npu_task_fill(bo.device_va, size, 5);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	ASSERT_EQ(0, npu_gem_close(self->fd, bo.handle));
	ASSERT_EQ(base + PAGE, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, base + PAGE));

	for (uint64_t off = 0; off < size; off += PAGE) {
		uint32_t q;

		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
		t = npu_task_fill(bo.device_va + off + PAGE - 4, 4, 6);
		ASSERT_EQ(0, npu_submit_on(self->fd, q, &t, 1, &seq));
		EXPECT_EQ(-EIO, npu_wait_on(self->fd, q, seq, 10 * SEC, &w)) TH_LOG("page %llu",
										      (unsigned long long)(off / PAGE));
		EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
		EXPECT_EQ(bo.device_va + off + PAGE - 4, w.fault_address);
		EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	}
	npu_gem_close(self->fd, keep.handle);
}

/* ---- the device at the edges of a copy and of its op library ---------- */

/*
 * A copy that runs past the end of its destination (or source) buffer
 * faults at the first byte past it, and writes nothing beyond: whatever
 * sizes of pages the two sides have, each chunk is bounded by both.
 */
TEST_F(st, a_copy_past_a_buffers_end_faults_at_its_first_unmapped_byte)
{
	struct drm_npu_bo_create big, small, gap;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	uint64_t seq;
	uint32_t q;

	/* small: one page, with nothing mapped after it (gap is closed). */
	ASSERT_EQ(0, npu_bo_create(self->fd, 4 * PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &big));
	ASSERT_EQ(0, npu_bo_create(self->fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &small));
	ASSERT_EQ(0, npu_bo_create(self->fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &gap));
	ASSERT_EQ(small.device_va + PAGE, gap.device_va);
	ASSERT_EQ(0, npu_gem_close(self->fd, gap.handle));

	for (int side = 0; side < 2; side++) {
		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
		/* Half a page of small's, then the page after it: unmapped. */
		t = side ? npu_task_copy(big.device_va, small.device_va + PAGE / 2, PAGE)
			 : npu_task_copy(small.device_va + PAGE / 2, big.device_va, PAGE);
		ASSERT_EQ(0, npu_submit_on(self->fd, q, &t, 1, &seq));
		EXPECT_EQ(-EIO, npu_wait_on(self->fd, q, seq, 10 * SEC, &w)) TH_LOG("side %d", side);
		EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
		EXPECT_EQ(small.device_va + PAGE, w.fault_address);
		EXPECT_EQ(side ? 0 : 1, w.fault_access);
		EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	}
	npu_gem_close(self->fd, big.handle);
	npu_gem_close(self->fd, small.handle);
}

/* A kernel launch from a block at the start of `bo`: 0 or -errno. */
static int launch(int fd, const struct drm_npu_bo_create *bo, void *map,
		  const struct npu_op_args *a, struct drm_npu_wait *w)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL,
				  .args = { bo->device_va, 0, sizeof(struct npu_op_args) } };
	uint64_t seq;
	uint32_t q;
	int ret;

	memcpy(map, a, sizeof(*a));
	ret = npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q);
	if (!ret)
		ret = npu_submit_on(fd, q, &t, 1, &seq);
	if (!ret)
		ret = npu_wait_on(fd, q, seq, 60 * SEC, w);
	npu_queue_destroy(fd, q);
	return ret;
}

/*
 * The op library at the edges of its checks and of float range: an
 * output may not broadcast (a zero stride) over a dimension of 2, and a
 * softmax of large numbers stays finite and sums to one per row.
 */
TEST_F(st, launches_at_the_edges_of_the_op_library)
{
	const uint64_t size = 64 * PAGE, in_off = 4 * PAGE, out_off = 32 * PAGE;
	struct npu_op_args a;
	struct drm_npu_bo_create bo;
	struct drm_npu_wait w;
	float *in, *out;
	uint8_t *map;

	ASSERT_EQ(0, npu_bo_create(self->fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	map = npu_bo_mmap(self->fd, bo.handle, size);
	ASSERT_NE(MAP_FAILED, map);
	in = (float *)(map + in_off);
	out = (float *)(map + out_off);

	a = (struct npu_op_args){ .op = NPU_OP_RELU };
	a.in[0] = (struct npu_op_tensor){ .va = bo.device_va + in_off, .dtype = NPU_DT_F32,
					   .ndim = 2, .shape = { 2, 4 }, .stride = { 4, 1 } };
	a.out = a.in[0];
	a.out.va = bo.device_va + out_off;
	EXPECT_EQ(0, launch(self->fd, &bo, map, &a, &w));
	a.out.stride[0] = 0;		/* both rows onto one */
	EXPECT_EQ(-EIO, launch(self->fd, &bo, map, &a, &w));
	EXPECT_EQ(DRM_NPU_JOB_KERNEL_ERROR, w.status);

	/* Rows of 8 around 100, 1000 and -1000: exp() alone would overflow. */
	for (int r = 0; r < 3; r++)
		for (int j = 0; j < 8; j++)
			in[r * 8 + j] = (r == 0 ? 100.0f : r == 1 ? 1000.0f : -1000.0f) + j;
	a = (struct npu_op_args){ .op = NPU_OP_SOFTMAX };
	a.in[0] = (struct npu_op_tensor){ .va = bo.device_va + in_off, .dtype = NPU_DT_F32,
					   .ndim = 2, .shape = { 3, 8 }, .stride = { 8, 1 } };
	a.out = a.in[0];
	a.out.va = bo.device_va + out_off;
	ASSERT_EQ(0, launch(self->fd, &bo, map, &a, &w));
	for (int r = 0; r < 3; r++) {
		double sum = 0;

		for (int j = 0; j < 8; j++) {
			float y = out[r * 8 + j];

			EXPECT_TRUE(y >= 0.0f && y <= 1.0f) TH_LOG("row %d: %g", r, y);
			sum += y;
		}
		EXPECT_TRUE(sum > 1 - 1e-5 && sum < 1 + 1e-5) TH_LOG("row %d sums to %g", r, sum);
		/* The largest of 8 consecutive values: e^7 / sum(e^0..e^7). */
		EXPECT_TRUE(fabsf(out[r * 8 + 7] - 0.6323f) < 1e-3f) TH_LOG("row %d: %g", r,
									      out[r * 8 + 7]);
	}
	munmap(map, size);
	npu_gem_close(self->fd, bo.handle);
}

/* ---- libnpurt: the edges of its own checks ------------------------------ */

/*
 * libnpurt refuses, itself and before the device sees anything, what its
 * header says it refuses: the first priority past NPURT_PRIORITY_HIGH
 * (the kernel's REALTIME, which root could get), a memset size that is
 * not a multiple of 4; and destroyed events leave no device events behind
 * but the few the device's pool keeps, until the device is closed.
 */
TEST_F(st, libnpurt_refuses_at_its_edges_and_gives_events_back)
{
	npurt_stream *s = (npurt_stream *)0x1;
	npurt_device *dev;
	npurt_mem *mem;
	long long before;

	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create(dev, NPURT_PRIORITY_REALTIME + 1, &s));
	EXPECT_EQ((npurt_stream *)0x1, s);
	/* Refused by the library, before the kernel: the message says what is valid. */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "is not one of")) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_create(dev, NPURT_PRIORITY_HIGH, &s));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(dev, PAGE, &mem));
	for (size_t size = 1; size < 4; size++) {
		EXPECT_EQ(NPURT_ERR_INVALID,
			  npurt_memset_async(s, npurt_mem_device_addr(mem), 0, 4 + size));
		EXPECT_NE(NULL, strstr(npurt_last_error(), "multiples of 4"))
			TH_LOG("%s", npurt_last_error());
	}
	EXPECT_EQ(NPURT_OK, npurt_memset_async(s, npurt_mem_device_addr(mem), 0, 8));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());

	before = syncs_in_use();
	for (int i = 0; i < 8; i++) {
		npurt_event *ev;

		ASSERT_EQ(NPURT_OK, npurt_event_create(dev, &ev));
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, s));
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, s));
		ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev));
		npurt_event_destroy(ev);
	}
	/* The device's pool keeps a few for the next events, not one per event... */
	EXPECT_GE(before + 4, syncs_in_use()) TH_LOG("device events left behind");
	npurt_mem_free(mem);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	/* ...and gives them all back with the device. */
	EXPECT_EQ(before, syncs_settle(before)) TH_LOG("device events left behind");
}

/* ---- 5. priorities on the device -------------------------------------- */

#define BUSY_FILLS 16

/* The host waits until the device has recorded `ev`. */
static int host_wait(int fd, uint32_t ev)
{
	struct drm_npu_event_wait w = { .id = ev, .deadline_ns = npu_deadline(10 * SEC) };

	return xioctl(fd, DRM_IOCTL_NPU_EVENT_WAIT, &w);
}

/*
 * Busy queues (16 fills, then a timestamp), one per copy engine so they
 * hold every engine, and a short one (a fill, then a timestamp) released
 * at the same instant by one event, as short_beats_busy() in
 * npu_sched_test.c does; the device's own timestamps say which finished
 * first. The short queue's fill must win a copy engine against the busy
 * ones: that contest is what priority decides (a task that needs no unit
 * runs beside them whatever its level). Each queue's work is one batch
 * that first records an event of its own: once the host has seen them
 * all, every batch is on the device, blocked, whenever the driver writes
 * batches to the ring. Returns 1 when the short one finished before every
 * busy one, 0 when it finished after one of them: under strict priority
 * it gets an engine only once a busy queue has drained and lets one go.
 */
#define MAX_BUSY 4

static int short_finishes_first(struct __test_metadata *_metadata, int fd, uint32_t busy_prio,
				uint32_t short_prio)
{
	struct drm_npu_task tb[BUSY_FILLS + 3], ts_[4], t;
	uint32_t busy[MAX_BUSY], quick, gate, go, ready[MAX_BUSY + 1];
	struct drm_npu_bo_create big, stamps;
	uint64_t s_busy[MAX_BUSY] = { 0 }, s_quick = 0, s_go, *ts, engines = 1;
	int ret, before = 0, nb;

	EXPECT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_DMA_ENGINES, &engines));
	nb = engines < MAX_BUSY ? (int)engines : MAX_BUSY;
	EXPECT_LE(engines, MAX_BUSY);
	for (int k = 0; k < nb; k++)
		EXPECT_EQ(0, npu_queue_create(fd, busy_prio, 0, 30000, &busy[k]));
	EXPECT_EQ(0, npu_queue_create(fd, short_prio, 0, 30000, &quick));
	EXPECT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &gate));
	EXPECT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &go));
	for (int k = 0; k <= nb; k++)
		EXPECT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ready[k]));
	EXPECT_EQ(0, npu_bo_create(fd, MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY, &big));
	EXPECT_EQ(0, npu_bo_create(fd, PAGE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &stamps));
	ts = npu_bo_mmap(fd, stamps.handle, PAGE);
	if (ts == MAP_FAILED)
		return -1;

	for (int k = 0; k < nb; k++) {
		tb[0] = task1(DRM_NPU_TASK_EVENT_RECORD, ready[k]);
		tb[1] = task1(DRM_NPU_TASK_EVENT_WAIT, go);
		for (int i = 0; i < BUSY_FILLS; i++)
			tb[2 + i] = npu_task_fill(big.device_va, MiB, 7);
		tb[BUSY_FILLS + 2] = task1(DRM_NPU_TASK_TIMESTAMP, stamps.device_va + 8 * k);
		EXPECT_EQ(0, npu_submit_on(fd, busy[k], tb, BUSY_FILLS + 3, &s_busy[k]));
	}
	ts_[0] = task1(DRM_NPU_TASK_EVENT_RECORD, ready[nb]);
	ts_[1] = task1(DRM_NPU_TASK_EVENT_WAIT, go);
	ts_[2] = npu_task_fill(big.device_va, PAGE, 9);
	ts_[3] = task1(DRM_NPU_TASK_TIMESTAMP, stamps.device_va + 8 * MAX_BUSY);
	EXPECT_EQ(0, npu_submit_on(fd, quick, ts_, 4, &s_quick));
	for (int k = 0; k <= nb; k++)
		EXPECT_EQ(0, host_wait(fd, ready[k]));

	t = task1(DRM_NPU_TASK_EVENT_RECORD, go);
	EXPECT_EQ(0, npu_submit_on(fd, gate, &t, 1, &s_go));
	EXPECT_EQ(0, npu_wait_on(fd, quick, s_quick, 30 * SEC, NULL));
	for (int k = 0; k < nb; k++) {
		EXPECT_EQ(0, npu_wait_on(fd, busy[k], s_busy[k], 30 * SEC, NULL));
		EXPECT_NE(0, ts[k]);
		before += ts[MAX_BUSY] < ts[k];
	}
	EXPECT_NE(0, ts[MAX_BUSY]);
	ret = before == nb;

	munmap(ts, PAGE);
	npu_gem_close(fd, big.handle);
	npu_gem_close(fd, stamps.handle);
	for (int k = 0; k < nb; k++)
		npu_queue_destroy(fd, busy[k]);
	npu_queue_destroy(fd, quick);
	npu_queue_destroy(fd, gate);
	for (int k = 0; k <= nb + 1; k++) {
		struct drm_npu_sync_destroy d = { .id = k <= nb ? ready[k] : go };

		xioctl(fd, DRM_IOCTL_NPU_SYNC_DESTROY, &d);
	}
	return ret;
}

static const char *const prio_names[] = { "LOW", "NORMAL", "HIGH", "REALTIME" };

/*
 * Strict order between levels, for every pair (tests run as root, so
 * CAP_SYS_NICE holds): a short queue at the higher level is not held up
 * by busy lower ones, and busy higher queues run their whole backlog
 * before a short lower one gets a copy engine. Sharing (two equal levels)
 * would let the short lower one in first: a level that reaches the device
 * as the one below fails here.
 */
TEST_F_TIMEOUT(st, each_priority_level_runs_strictly_ahead_of_lower_ones, 120)
{
	for (uint32_t lo = DRM_NPU_QUEUE_PRIORITY_LOW; lo < DRM_NPU_QUEUE_PRIORITY_REALTIME; lo++) {
		for (uint32_t hi = lo + 1; hi <= DRM_NPU_QUEUE_PRIORITY_REALTIME; hi++) {
			EXPECT_EQ(1, short_finishes_first(_metadata, self->fd, lo, hi))
				TH_LOG("short %s behind busy %s", prio_names[hi], prio_names[lo]);
			EXPECT_EQ(0, short_finishes_first(_metadata, self->fd, hi, lo))
				TH_LOG("short %s got ahead of busy %s", prio_names[lo], prio_names[hi]);
		}
	}
}

/* Equal levels share, one task each in turn: the short queue finishes first. */
TEST_F_TIMEOUT(st, equal_levels_share_the_device, 60)
{
	for (uint32_t p = DRM_NPU_QUEUE_PRIORITY_LOW; p <= DRM_NPU_QUEUE_PRIORITY_REALTIME; p++) {
		EXPECT_EQ(1, short_finishes_first(_metadata, self->fd, p, p))
			TH_LOG("short %s waited for busy %s", prio_names[p], prio_names[p]);
	}
}

TEST_HARNESS_MAIN
