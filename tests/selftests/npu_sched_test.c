// SPDX-License-Identifier: MIT
/*
 * Queues with priorities: creation rules and limits, scheduling (a high
 * queue is not held up by a busy low one; equal queues share), queues
 * failing independently, and destroying a queue with work queued.
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define MiB (1ull << 20)
#define SEC (1000000000ll)

NPU_BASELINE_FIXTURE(s);

TEST_F(s, creation_rules_and_limits)
{
	uint64_t per_ctx = 0, hw = npu_env("NPU_TEST_QUEUES");
	uint32_t ids[16], id;
	int n = 0, ret;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUES_PER_CONTEXT, &per_ctx));
	EXPECT_EQ(-EINVAL, npu_queue_create(self->fd, 4, 0, 0, &id));
	EXPECT_EQ(-EINVAL, npu_queue_create(self->fd, 0, 1000, 0, &id));
	EXPECT_EQ(-EINVAL, npu_queue_create(self->fd, 0, 256, 0, &id));
	EXPECT_EQ(-EINVAL, npu_queue_create(self->fd, 0, 1 << 17, 0, &id));
	struct drm_npu_queue_create c = { .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);

	/* Up to the per-context limit (the default queue counts)... */
	while (n < 16 && !(ret = npu_queue_create(self->fd, n % 3, 512, 0, &ids[n])))
		n++;
	EXPECT_EQ(-EBUSY, ret);
	/* The device's own queue count may be the tighter limit. */
	EXPECT_EQ((int)((hw && hw < per_ctx ? hw : per_ctx) - 1), n);
	for (int i = 0; i < n; i++) {
		EXPECT_NE(0, ids[i]);
		EXPECT_EQ(0, npu_queue_destroy(self->fd, ids[i]));
	}
	EXPECT_EQ(-EINVAL, npu_queue_destroy(self->fd, ids[0]));	/* twice */
	EXPECT_EQ(-EINVAL, npu_queue_destroy(self->fd, 0));		/* the default one */
	EXPECT_EQ(0, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, 0));
}

/* Priorities above NORMAL can starve other users' work: as for nice. */
TEST_F(s, above_normal_needs_cap_sys_nice)
{
	pid_t pid;
	int status;
	uint32_t id;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_REALTIME, 0, 0, &id));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, id));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		_exit(npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_REALTIME, 0, 0, &id) == -EPERM &&
		      npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_HIGH, 0, 0, &id) == -EPERM &&
		      npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &id) == 0 &&
		      npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_LOW, 0, 0, &id) == 0 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Release a busy queue (200 big fills, then a timestamp) and a one-task
 * queue (a timestamp) at the same instant, through one event both wait
 * on, and compare the device's own timestamps: the short queue must not
 * wait for the busy one's whole backlog. Host timing cannot skew it.
 */
static void short_beats_busy(struct __test_metadata *_metadata, int fd, uint32_t busy_prio,
			     uint32_t short_prio)
{
	struct drm_npu_bo_create big, stamps;
	struct drm_npu_task t[2];
	uint32_t busy, quick, gate, go;
	uint64_t s_busy = 0, s_quick = 0, s_go, *ts;

	ASSERT_EQ(0, npu_queue_create(fd, busy_prio, 0, 30000, &busy));
	ASSERT_EQ(0, npu_queue_create(fd, short_prio, 0, 30000, &quick));
	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &gate));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &go));
	ASSERT_EQ(0, npu_bo_create(fd, 64 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &big));
	ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &stamps));
	ts = npu_bo_mmap(fd, stamps.handle, 4096);
	ASSERT_NE(MAP_FAILED, ts);

	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { go } };
	ASSERT_EQ(0, npu_submit_on(fd, busy, t, 1, &s_busy));
	ASSERT_EQ(0, npu_submit_on(fd, quick, t, 1, &s_quick));
	t[0] = npu_task_fill(big.device_va, 64 * MiB, 1);
	for (int i = 0; i < 200; i++)
		ASSERT_EQ(0, npu_submit_on(fd, busy, t, 1, &s_busy));
	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_TIMESTAMP, .args = { stamps.device_va } };
	ASSERT_EQ(0, npu_submit_on(fd, busy, t, 1, &s_busy));
	t[0].args[0] = stamps.device_va + 8;
	ASSERT_EQ(0, npu_submit_on(fd, quick, t, 1, &s_quick));

	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { go } };
	ASSERT_EQ(0, npu_submit_on(fd, gate, t, 1, &s_go));
	ASSERT_EQ(0, npu_wait_on(fd, quick, s_quick, 30 * SEC, NULL));
	ASSERT_EQ(0, npu_wait_on(fd, busy, s_busy, -1, NULL));
	EXPECT_LT(ts[1], ts[0]) TH_LOG("short done at %lu, busy at %lu", ts[1], ts[0]);
	munmap(ts, 4096);
}

TEST_F(s, high_priority_is_not_held_up_by_busy_low)
{
	short_beats_busy(_metadata, self->fd, DRM_NPU_QUEUE_PRIORITY_LOW, DRM_NPU_QUEUE_PRIORITY_HIGH);
}

TEST_F(s, equal_priorities_share_the_device)
{
	short_beats_busy(_metadata, self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL,
			 DRM_NPU_QUEUE_PRIORITY_NORMAL);
}

TEST_F(s, queues_fail_independently)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	uint32_t q1, q2;
	uint64_t seq;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q1));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q2));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	t = npu_task_copy(c.device_va, c.device_va + (1ull << 30), 4);
	ASSERT_EQ(0, npu_submit_on(self->fd, q1, &t, 1, &seq));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q1, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(-EIO, npu_submit_on(self->fd, q1, &t, 1, &seq));
	t = npu_task_fill(c.device_va, 4096, 3);
	ASSERT_EQ(0, npu_submit_on(self->fd, q2, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->fd, q2, seq, 10 * SEC, NULL));
	/* A failed queue can be replaced by a new one. */
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q1));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q1));
	ASSERT_EQ(0, npu_submit_on(self->fd, q1, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->fd, q1, seq, 10 * SEC, NULL));
}

/*
 * A new queue with 21 batches that cannot finish: the first waits on an
 * event nobody records, holding the rest on the device. *seq: the last.
 */
static void queue_with_stuck_work(struct __test_metadata *_metadata, int fd,
				  const struct drm_npu_bo_create *c, uint32_t *q, uint64_t *seq)
{
	struct drm_npu_task t;
	uint32_t never;

	ASSERT_EQ(0, npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 30000, q));
	ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &never));
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { never } };
	ASSERT_EQ(0, npu_submit_on(fd, *q, &t, 1, seq));
	t = npu_task_fill(c->device_va, 4096, 1);
	for (int i = 0; i < 20; i++)
		ASSERT_EQ(0, npu_submit_on(fd, *q, &t, 1, seq));
}

TEST_F(s, abort_fails_queued_work_and_keeps_the_queue)
{
	struct drm_npu_queue_destroy a = { 0 };
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	uint64_t seq = 0;
	uint32_t q;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	queue_with_stuck_work(_metadata, self->fd, &c, &q, &seq);
	t = npu_task_fill(c.device_va, 4096, 1);
	a.queue = q;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &a));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, q, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_ABORTED, w.status);
	/* The queue is still there, failed, until destroyed. */
	EXPECT_EQ(-EIO, npu_submit_on(self->fd, q, &t, 1, &seq));
	a.queue = 7;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	npu_gem_close(self->fd, c.handle);
}

TEST_F(s, destroy_with_work_queued_aborts_it)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	uint32_t q;
	uint64_t seq = 0;
	pid_t pid;
	int status, ready[2];
	char ch;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	queue_with_stuck_work(_metadata, self->fd, &c, &q, &seq);
	t = npu_task_fill(c.device_va, 4096, 1);
	/* A waiter in another process is woken by the destroy. */
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (write(ready[1], "w", 1) != 1)
			_exit(2);
		_exit(npu_wait_on(self->fd, q, seq, 60 * SEC, &w) == -EIO &&
		      w.status == DRM_NPU_JOB_ABORTED ? 0 : 1);
	}
	ASSERT_EQ(1, read(ready[0], &ch, 1));
	usleep(100000);		/* let it block; correctness does not depend on it */
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-EINVAL, npu_wait_on(self->fd, q, seq, 0, NULL));
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, q, &t, 1, &seq));
	npu_gem_close(self->fd, c.handle);
	close(ready[0]);
	close(ready[1]);
}

TEST_HARNESS_MAIN
