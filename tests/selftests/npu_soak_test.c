// SPDX-License-Identifier: MIT
/*
 * Soak: two processes, four queues each (mixed priorities), submitting
 * pipelined batches for NPU_SOAK_SECONDS (default 60). Every batch's
 * sequence number is the next one expected, every wait succeeds, every
 * submitted batch completes exactly once, and the device wrote what each
 * batch asked for.
 */
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define QUEUES		4
#define WINDOW		16		/* batches in flight per queue */
#define SLOTS		1024		/* results kept per queue */
#define SEC		(1000000000ll)

static uint32_t pattern(uint32_t salt, uint32_t q, uint64_t seq)
{
	return (uint32_t)(seq * 2654435761u) ^ (salt << 24) ^ (q << 20);
}

/* One process's share. Returns 0, or a code saying what went wrong. */
static int soak(uint32_t salt, int seconds, uint64_t *total)
{
	static const uint32_t prio[QUEUES] = { DRM_NPU_QUEUE_PRIORITY_LOW, DRM_NPU_QUEUE_PRIORITY_NORMAL,
					       DRM_NPU_QUEUE_PRIORITY_HIGH, DRM_NPU_QUEUE_PRIORITY_NORMAL };
	uint64_t submitted[QUEUES] = { 0 }, completed[QUEUES] = { 0 };
	struct drm_npu_bo_create bo;
	uint32_t qid[QUEUES], *map;
	struct timespec ts;
	time_t end;
	int fd = npu_open();

	if (fd < 0 || npu_bo_create(fd, QUEUES * SLOTS * 4, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo))
		return 1;
	map = npu_bo_mmap(fd, bo.handle, QUEUES * SLOTS * 4);
	if (map == MAP_FAILED)
		return 2;
	for (int q = 0; q < QUEUES; q++) {
		struct drm_npu_queue_create c = { .priority = prio[q] };

		if (ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c))
			return 3;
		qid[q] = c.queue;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + seconds;
	while (clock_gettime(CLOCK_MONOTONIC, &ts), ts.tv_sec < end) {
		for (int q = 0; q < QUEUES; q++) {
			uint64_t next = submitted[q] + 1, off = (q * SLOTS + next % SLOTS) * 4;
			struct drm_npu_task t = npu_task_fill(bo.device_va + off, 4,
							      pattern(salt, q, next));
			struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1,
						    .queue = qid[q] };
			struct drm_npu_wait w = { .deadline_ns = npu_deadline(30 * SEC), .queue = qid[q] };

			if (submitted[q] - completed[q] >= WINDOW) {
				w.seq = completed[q] + 1;
				if (ioctl(fd, DRM_IOCTL_NPU_WAIT, &w)) {
					fprintf(stderr, "# soak %u: wait on queue %d: %s (status %u)\n",
						salt, q, strerror(errno), w.status);
					return 4;
				}
				completed[q]++;
			}
			if (ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &s) || s.seq != next) {
				fprintf(stderr, "# soak %u: submit on queue %d (seq %llu, got %llu): %s\n",
					salt, q, (unsigned long long)next,
					(unsigned long long)s.seq, strerror(errno));
				return 5;
			}
			submitted[q] = next;
		}
	}
	*total = 0;
	for (int q = 0; q < QUEUES; q++) {
		while (completed[q] < submitted[q]) {
			struct drm_npu_wait w = { .seq = completed[q] + 1, .deadline_ns = npu_deadline(30 * SEC),
						  .queue = qid[q] };

			if (ioctl(fd, DRM_IOCTL_NPU_WAIT, &w))
				return 6;
			completed[q]++;
		}
		/* The last SLOTS batches of each queue left their mark. */
		for (uint64_t seq = submitted[q] > SLOTS ? submitted[q] - SLOTS + 1 : 1;
		     seq <= submitted[q]; seq++)
			if (map[q * SLOTS + seq % SLOTS] != pattern(salt, q, seq))
				return 7;
		*total += completed[q];
	}
	close(fd);
	return 0;
}

FIXTURE(soak) {
	int unused;
};

FIXTURE_SETUP(soak)
{
}

FIXTURE_TEARDOWN(soak)
{
}

/* The harness's 30 s default would cut a one-minute soak short. */
TEST_F_TIMEOUT(soak, two_processes_four_queues_each, 600)
{
	int seconds = getenv("NPU_SOAK_SECONDS") ? atoi(getenv("NPU_SOAK_SECONDS")) : 60;
	uint64_t mine = 0, theirs = 0;
	int pipefd[2], status;
	pid_t pid;

	ASSERT_LT(0, seconds);
	ASSERT_GT(500, seconds);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int rc = soak(2, seconds, &theirs);

		if (write(pipefd[1], &theirs, sizeof(theirs)) != sizeof(theirs))
			rc = 9;
		_exit(rc);
	}
	EXPECT_EQ(0, soak(1, seconds, &mine));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(sizeof(theirs), read(pipefd[0], &theirs, sizeof(theirs)));
	TH_LOG("%d s: %llu + %llu batches, every one completed and checked", seconds,
	       (unsigned long long)mine, (unsigned long long)theirs);
	EXPECT_LT(0, mine);
	EXPECT_LT(0, theirs);
}

TEST_HARNESS_MAIN
