// SPDX-License-Identifier: MIT
/*
 * Device work on a context's queue: copies and fills through the device
 * MMU, ordering, faults and isolation between contexts, buffers kept alive
 * by work in flight, a process killed mid-work, and argument errors.
 */
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define MiB (1ull << 20)
#define SEC (1000000000ll)

NPU_BASELINE_FIXTURE(q);

/* Pattern word i of a buffer; differs per buffer through `salt`. */
static uint32_t pat(size_t i, uint32_t salt)
{
	return (uint32_t)(i * 2654435761u) ^ salt;
}

static void copy_round_trip(struct __test_metadata *_metadata, int fd,
			    uint64_t size, uint32_t policy)
{
	struct drm_npu_bo_create a, b;
	struct drm_npu_task t;
	uint32_t *pa, *pb;
	uint64_t seq = 0;
	size_t n = size / 4, bad = 0;

	ASSERT_EQ(0, npu_bo_create(fd, size, policy, &a));
	ASSERT_EQ(0, npu_bo_create(fd, size, policy, &b));
	pa = npu_bo_mmap(fd, a.handle, size);
	pb = npu_bo_mmap(fd, b.handle, size);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_NE(MAP_FAILED, pb);
	for (size_t i = 0; i < n; i++)
		pa[i] = pat(i, policy);

	t = npu_task_copy(b.device_va, a.device_va, size);
	ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(fd, seq, 60 * SEC, NULL));
	for (size_t i = 0; i < n; i++)
		bad += pb[i] != pat(i, policy);
	EXPECT_EQ(0, bad);
	munmap(pa, size);
	munmap(pb, size);
	npu_gem_close(fd, a.handle);
	npu_gem_close(fd, b.handle);
}

TEST_F(q, copy_64mib_huge_first)
{
	copy_round_trip(_metadata, self->fd, 64 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST);
}

TEST_F(q, copy_64mib_normal_only)
{
	copy_round_trip(_metadata, self->fd, 64 * MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY);
}

TEST_F(q, tasks_run_in_order)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t[3];
	struct drm_npu_wait w;
	uint32_t *p;
	uint64_t seq = 0;

	ASSERT_EQ(0, npu_bo_create(self->fd, 8192, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	/* Fill, copy the first page onto the second, refill the first. */
	t[0] = npu_task_fill(c.device_va, 8192, 0x11111111);
	t[1] = npu_task_copy(c.device_va + 4096, c.device_va, 4096);
	t[2] = npu_task_fill(c.device_va, 4096, 0x22222222);
	ASSERT_EQ(0, npu_submit(self->fd, t, 3, &seq));
	/* And 300 more batches, each overwriting one word. */
	for (uint32_t i = 1; i <= 300; i++) {
		struct drm_npu_task f = npu_task_fill(c.device_va + 8188, 4, i);

		ASSERT_EQ(0, npu_submit(self->fd, &f, 1, &seq));
	}
	ASSERT_EQ(0, npu_wait(self->fd, seq, 30 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_DONE, w.status);
	p = npu_bo_mmap(self->fd, c.handle, 8192);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0x22222222, p[0]);
	EXPECT_EQ(0x11111111, p[1024]);
	EXPECT_EQ(300, p[2047]);
	munmap(p, 8192);
	/* Every earlier batch is done too. */
	EXPECT_EQ(0, npu_wait(self->fd, 1, 0, NULL));
}

TEST_F(q, wait_times_out_while_work_runs)
{
	struct drm_npu_sync_create ev = { .kind = DRM_NPU_SYNC_EVENT };
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	uint64_t seq = 0, rec;
	uint32_t other;

	/* Work held on the device until an event is recorded: no race. */
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_SYNC_CREATE, &ev));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev.id } };
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	t = npu_task_fill(c.device_va, 4096, 7);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(-ETIMEDOUT, npu_wait(self->fd, seq, 0, NULL));
	EXPECT_EQ(-ETIMEDOUT, npu_wait(self->fd, seq, 100000000, NULL));

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &other));
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { ev.id } };
	ASSERT_EQ(0, npu_submit_on(self->fd, other, &t, 1, &rec));
	EXPECT_EQ(0, npu_wait(self->fd, seq, -1, NULL));	/* no limit */
	EXPECT_EQ(0, npu_wait(self->fd, seq, 0, NULL));
	npu_gem_close(self->fd, c.handle);
}

TEST_F(q, fault_is_reported_and_stops_the_context)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t[3];
	struct drm_npu_wait w;
	uint64_t seq = 0, unmapped;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	unmapped = c.device_va + (1ull << 30);
	t[0] = npu_task_fill(c.device_va, 4096, 1);
	t[1] = npu_task_fill(c.device_va, 4096, 2);
	t[2] = npu_task_copy(c.device_va, unmapped, 64);
	ASSERT_EQ(0, npu_submit(self->fd, t, 3, &seq));
	EXPECT_EQ(-EIO, npu_wait(self->fd, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(2, w.error_task);
	EXPECT_EQ(unmapped, w.fault_address);
	EXPECT_EQ(0, w.fault_access);		/* a read */
	/* The context takes no more work... */
	EXPECT_EQ(-EIO, npu_submit(self->fd, t, 1, NULL));
	/* ...and another context is unaffected. */
	int other = npu_open();
	struct drm_npu_bo_create o;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, npu_bo_create(other, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &o));
	t[0] = npu_task_fill(o.device_va, 4096, 3);
	ASSERT_EQ(0, npu_submit(other, t, 1, &seq));
	EXPECT_EQ(0, npu_wait(other, seq, 10 * SEC, NULL));
	close(other);
}

/*
 * FILLs name addresses nothing maps any more (their buffers were closed)
 * and wait on the device behind an event; buffers created meanwhile must
 * not be placed where the FILLs will write. They read zero, and the
 * first FILL faults as it would have when submitted (issue 33, 9e: the
 * fuzzer read a fill pattern back from a new buffer). One FILL's range
 * runs on into a buffer still mapped, the other's ends in the gap.
 */
TEST_F(q, a_new_buffer_is_not_placed_where_a_queued_fill_writes)
{
	struct drm_npu_sync_create ev = { .kind = DRM_NPU_SYNC_EVENT };
	struct drm_npu_bo_create b[5], fresh[2];
	const size_t size = 3 * 4096;
	struct drm_npu_task t[2];
	struct drm_npu_wait w;
	uint64_t seq, rec;
	uint32_t other, *p;
	size_t i, k, nonzero = 0;

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_SYNC_CREATE, &ev));
	/* Gaps of exactly the size between buffers: the next ones' best fits. */
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, npu_bo_create(self->fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b[i]));
	ASSERT_EQ(0, npu_gem_close(self->fd, b[1].handle));
	ASSERT_EQ(0, npu_gem_close(self->fd, b[3].handle));

	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev.id } };
	ASSERT_EQ(0, npu_submit(self->fd, t, 1, &seq));
	t[0] = npu_task_fill(b[1].device_va, 2 * size, 0x7560c694);
	t[1] = npu_task_fill(b[3].device_va, size, 0x7560c694);
	ASSERT_EQ(0, npu_submit(self->fd, t, 2, &seq));
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(0, npu_bo_create(self->fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &fresh[k]));
		EXPECT_NE(b[1].device_va, fresh[k].device_va);
		EXPECT_NE(b[3].device_va, fresh[k].device_va);
	}

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &other));
	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { ev.id } };
	ASSERT_EQ(0, npu_submit_on(self->fd, other, t, 1, &rec));
	EXPECT_EQ(-EIO, npu_wait(self->fd, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(b[1].device_va, w.fault_address);

	for (k = 0; k < 2; k++) {
		p = npu_bo_mmap(self->fd, fresh[k].handle, size);
		ASSERT_NE(MAP_FAILED, p);
		for (i = 0; i < size / 4; i++)
			nonzero += p[i] != 0;
		munmap(p, size);
	}
	EXPECT_EQ(0, nonzero);
}

TEST_F(q, context_cannot_reach_what_another_mapped)
{
	struct drm_npu_bo_create a1, a2, b;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	uint64_t seq = 0;
	uint32_t *p;
	int fb = npu_open();

	ASSERT_LE(0, fb);
	/* A maps two buffers; B maps one, at A's first address. */
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &a1));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &a2));
	ASSERT_EQ(0, npu_bo_create(fb, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b));
	ASSERT_NE(a2.device_va, b.device_va);

	/* B reads the address only A mapped: a fault, reported to B. */
	t = npu_task_copy(b.device_va, a2.device_va, 4096);
	ASSERT_EQ(0, npu_submit(fb, &t, 1, &seq));
	EXPECT_EQ(-EIO, npu_wait(fb, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(a2.device_va, w.fault_address);
	close(fb);

	/* A's next copy still succeeds. */
	t = npu_task_fill(a1.device_va, 4096, 0xabcdef01);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, NULL));
	t = npu_task_copy(a2.device_va, a1.device_va, 4096);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, &w));
	p = npu_bo_mmap(self->fd, a2.handle, 4096);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0xabcdef01, p[1023]);
	munmap(p, 4096);
}

TEST_F(q, buffers_live_until_their_work_is_done)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	uint64_t seq = 0;

	ASSERT_EQ(0, npu_bo_create(self->fd, 32 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &c));
	t = npu_task_fill(c.device_va, 32 * MiB, 9);
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	/* Close at once: the device keeps writing to it, safely. */
	ASSERT_EQ(0, npu_gem_close(self->fd, c.handle));
	EXPECT_EQ(0, npu_wait(self->fd, seq, 60 * SEC, NULL));
	EXPECT_EQ(self->buffers_before,
		  npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, self->buffers_before));
}

TEST_F(q, killed_process_leaves_nothing)
{
	int sync[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(sync));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_npu_bo_create b;
		struct drm_npu_task t;
		int fd = npu_open();

		if (fd < 0 || npu_bo_create(fd, 32 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &b))
			_exit(1);
		t = npu_task_fill(b.device_va, 32 * MiB, 1);
		for (int i = 0; i < 32; i++)
			npu_submit(fd, &t, 1, NULL);
		if (write(sync[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(sync[0], &c, 1));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* Its work drains, then everything it held is released. */
	EXPECT_EQ(self->buffers_before,
		  npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, self->buffers_before));
	EXPECT_EQ(0, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, 0));
	close(sync[0]);
	close(sync[1]);
}

TEST_F(q, bad_submissions_queue_nothing)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	struct drm_npu_submit s = { 0 };
	struct drm_npu_wait w = { 0 };

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	t = npu_task_fill(c.device_va, 4096, 1);
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, 0, NULL));
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, DRM_NPU_SUBMIT_MAX_TASKS + 1, NULL));
	s.tasks = (uintptr_t)&t;
	s.count = 1;
	s.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &s));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EFAULT, npu_submit(self->fd, (void *)16, 1, NULL));

	struct drm_npu_task bad[] = {
		{ .type = 77 },
		{ .type = DRM_NPU_TASK_FILL, .flags = 1, .args = { c.device_va, 4, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .pad = 1, .args = { c.device_va, 4, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { c.device_va, 6, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { c.device_va + 2, 4, 0 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { c.device_va, 4, 1ull << 32 } },
		{ .type = DRM_NPU_TASK_FILL, .args = { c.device_va, 0, 0 } },
		{ .type = DRM_NPU_TASK_COPY, .args = { c.device_va, c.device_va, 0 } },
		{ .type = DRM_NPU_TASK_COPY, .args = { c.device_va, c.device_va, 4, 1 } },
		{ .type = DRM_NPU_TASK_NOP, .args = { 1 } },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct drm_npu_task pair[2] = { t, bad[i] };

		/* A bad task anywhere rejects the whole batch. */
		EXPECT_EQ(-EINVAL, npu_submit(self->fd, pair, 2, NULL)) TH_LOG("task %zu", i);
	}
	/* Nothing was queued: no sequence number was handed out. */
	EXPECT_EQ(-EINVAL, npu_wait(self->fd, 1, 0, NULL));
	EXPECT_EQ(0, npu_wait(self->fd, 0, 0, NULL));
	w.queue = 99;				/* no such queue */
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_WAIT, &w));
	EXPECT_EQ(EINVAL, errno);
	npu_gem_close(self->fd, c.handle);
}

TEST_HARNESS_MAIN
