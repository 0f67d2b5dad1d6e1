// SPDX-License-Identifier: MIT
/*
 * What an unprivileged user may try against the uapi, from a kernel
 * maintainer's review: copy-on-write mappings, offsets into buffers,
 * absurd USERPTR sizes, batches over thousands of buffers, closing a
 * buffer while a batch takes it, files closed with buffers still mapped,
 * bad batches, unbounded time limits. Each gets a clear error or works,
 * and none may leave a kernel warning (the VM harness fails the run on
 * one) or a resource behind (the fixture's baseline).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

NPU_BASELINE_FIXTURE(m);

FIXTURE_SETUP(m);
FIXTURE_TEARDOWN(m);

/* Device memory has no pages to copy on write: shared mappings only. */
TEST_F(m, private_mappings_are_refused)
{
	struct drm_npu_bo_create c;
	struct drm_npu_bo_info info;
	void *p;

	ASSERT_EQ(0, npu_bo_create(self->fd, 8192, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	ASSERT_EQ(0, npu_bo_info(self->fd, c.handle, &info));
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, info.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, self->fd, info.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 8192);
	EXPECT_EQ(0, npu_gem_close(self->fd, c.handle));
}

/* A mapping that starts inside a buffer shows that part of it. */
TEST_F(m, mappings_at_an_offset_show_that_page)
{
	struct drm_prime_handle ex = { .flags = DRM_CLOEXEC | DRM_RDWR };
	struct drm_npu_bo_create c;
	struct drm_npu_bo_info info;
	uint32_t *all, *second;

	ASSERT_EQ(0, npu_bo_create(self->fd, 3 * 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	ASSERT_EQ(0, npu_bo_info(self->fd, c.handle, &info));
	all = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		   info.mmap_offset);
	ASSERT_NE(MAP_FAILED, all);
	for (int page = 0; page < 3; page++)
		all[page * 1024] = 0xa0 + page;

	/* The DRM node takes a buffer's own offset only. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
				   info.mmap_offset + 4096));

	/* A dma-buf takes any page of it. */
	ex.handle = c.handle;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ex));
	second = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ex.fd, 2 * 4096);
	EXPECT_NE(MAP_FAILED, second);
	if (second != MAP_FAILED) {
		EXPECT_EQ(0xa2, second[0]);
		munmap(second, 4096);
	}
	second = mmap(NULL, 2 * 4096, PROT_READ, MAP_SHARED, ex.fd, 4096);
	EXPECT_NE(MAP_FAILED, second);
	if (second != MAP_FAILED) {
		EXPECT_EQ(0xa1, second[0]);
		EXPECT_EQ(0xa2, second[1024]);
		munmap(second, 2 * 4096);
	}
	/* Past the end, or copy-on-write, is refused. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * 4096, PROT_READ, MAP_SHARED, ex.fd, 2 * 4096));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, ex.fd, 0));
	close(ex.fd);
	munmap(all, 3 * 4096);
	EXPECT_EQ(0, npu_gem_close(self->fd, c.handle));
}

static int userptr(int fd, uint64_t addr, uint64_t size)
{
	struct drm_npu_userptr u = { .addr = addr, .size = size };

	return ioctl(fd, DRM_IOCTL_NPU_USERPTR, &u) ? -errno : 0;
}

/*
 * Sizes no machine can pin fail before the driver sizes anything by them
 * (a 1 TiB request once tripped the allocator's warning), and address 0
 * is not an address.
 */
TEST_F(m, userptr_sizes_past_memory_and_address_zero_fail_cleanly)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, p);
	/* A low address, so the range is a valid user range however long. */
	EXPECT_EQ(-ENOMEM, userptr(self->fd, 1ull << 20, 1ull << 40));
	EXPECT_EQ(-ENOMEM, userptr(self->fd, 1ull << 20, 8ull << 30));
	EXPECT_EQ(-ENOMEM, userptr(self->fd, 1ull << 20, 1ull << 46));
	EXPECT_EQ(-EINVAL, userptr(self->fd, 0, 4096));
	/* And a good one still works. */
	EXPECT_EQ(0, userptr(self->fd, (uintptr_t)p, 4096));
	munmap(p, 4096);
}

/*
 * A batch holds each buffer it names once, however many tasks name it:
 * 256 copies over the whole address space of a context with a thousand
 * buffers hold a thousand mappings, not half a million. Past the
 * per-batch limit the submit fails with E2BIG.
 */
TEST_F(m, batches_over_thousands_of_buffers_hold_each_once)
{
	static struct drm_npu_task t[256];
	struct drm_npu_wait w;
	uint32_t *handles;
	uint64_t seq, n = 0;
	int ret = 0;

	handles = calloc(5000, sizeof(*handles));
	ASSERT_NE(NULL, handles);
	for (int i = 0; i < 256; i++)
		t[i] = npu_task_copy(DRM_NPU_VA_BASE, DRM_NPU_VA_BASE, DRM_NPU_VA_END - DRM_NPU_VA_BASE);
	for (; n < 1000; n++) {
		struct drm_npu_bo_create c;

		ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
		handles[n] = c.handle;
	}
	ASSERT_EQ(0, npu_submit(self->fd, t, 256, &seq));
	/* The device copies each buffer onto itself, then faults past the last. */
	EXPECT_EQ(-EIO, npu_wait(self->fd, seq, 30 * 1000000000ll, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);

	for (; n < 5000 && !ret; n++) {
		struct drm_npu_bo_create c;

		ret = npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c);
		handles[n] = c.handle;
	}
	/*
	 * The faulted batch's holes covered all VA until the scheduler freed
	 * it, after WAIT returned: creating waits for that (a CI run once
	 * failed here with -ENOMEM before it did).
	 */
	ASSERT_EQ(0, ret) TH_LOG("buffer %llu: HBM in use %llu bytes, by buffers %llu",
				 (unsigned long long)n, (unsigned long long)npu_hbm_used(self->fd),
				 (unsigned long long)npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
	/* A new queue: the default one faulted. */
	uint32_t q;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	EXPECT_EQ(-E2BIG, npu_submit_on(self->fd, q, t, 1, &seq));
	for (uint64_t i = 0; i < n; i++)
		npu_gem_close(self->fd, handles[i]);
	free(handles);
}

struct churn {
	int fd;
	volatile int stop;
	unsigned long rounds;
};

static void *churn_buffers(void *arg)
{
	struct churn *c = arg;

	while (!c->stop) {
		struct drm_npu_bo_create b;

		if (!npu_bo_create(c->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b))
			npu_gem_close(c->fd, b.handle);
		c->rounds++;
	}
	return NULL;
}

/*
 * GEM_CLOSE racing SUBMIT: a batch takes the mappings in its range while
 * another thread creates and closes buffers there. The batches wait on
 * an event, so they hold what they took until their queue goes. A buffer
 * freed under a batch's reference shows as a warning or worse.
 */
TEST_F(m, closing_buffers_while_batches_take_them)
{
	struct churn c = { .fd = self->fd };
	struct drm_npu_task t[2];
	pthread_t thread;
	uint32_t ev;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &ev));
	t[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev } };
	t[1] = npu_task_fill(DRM_NPU_VA_BASE, 1ull << 30, 0);
	ASSERT_EQ(0, pthread_create(&thread, NULL, churn_buffers, &c));
	for (int round = 0; round < 300; round++) {
		uint32_t q;
		uint64_t seq;

		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
		for (int i = 0; i < 8; i++)
			ASSERT_EQ(0, npu_submit_on(self->fd, q, t, 2, &seq));
		ASSERT_EQ(0, npu_queue_destroy(self->fd, q));
	}
	c.stop = 1;
	pthread_join(thread, NULL);
	EXPECT_LT(100, c.rounds);
}

/*
 * A closed file gives back its queues at once, even while buffers it
 * exported are still held (which keeps its address space alive): rounds
 * of open, submit, export and close cannot use up the device's queues.
 * (A CPU mapping holds the file itself open, as for every DRM driver:
 * the file closes, and its queues go, at munmap.)
 */
TEST_F(m, closed_files_give_back_their_queues)
{
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	uint64_t nq = 0, seq;
	int bufs[300], rounds;
	void *p;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUE_COUNT, &nq));
	rounds = (int)nq + 4;
	ASSERT_GE(300, rounds);
	for (int i = 0; i < rounds; i++) {
		struct drm_prime_handle ex = { .flags = DRM_CLOEXEC | DRM_RDWR };
		struct drm_npu_bo_create c;
		int fd = npu_open();

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, npu_submit(fd, &nop, 1, &seq)) TH_LOG("round %d", i);
		ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
		ex.handle = c.handle;
		ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &ex));
		bufs[i] = ex.fd;
		close(fd);
		ASSERT_EQ(0, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, 0));
	}
	for (int i = 0; i < rounds; i++)
		close(bufs[i]);

	for (int i = 0; i < 2; i++) {
		struct drm_npu_bo_create c;
		int fd = npu_open();

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, npu_submit(fd, &nop, 1, &seq));
		ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
		p = npu_bo_mmap(fd, c.handle, 4096);
		ASSERT_NE(MAP_FAILED, p);
		close(fd);
		munmap(p, 4096);
		ASSERT_EQ(0, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, 0));
	}
}

/*
 * A file closed with its buffers still mapped gives its queues back at
 * close, as npu_ctx.c says, not at munmap: as many such files as the
 * device has queues, and the next file still gets one. A mapping used
 * to hold the DRM file (vm_file), so each kept its hardware queue and
 * the next process got -EBUSY. The mappings still show their buffers,
 * and munmap gives the buffers back.
 */
TEST_F(m, closed_files_give_their_queues_back_while_their_buffers_stay_mapped)
{
	struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };
	uint64_t nqueues = 0, seq;
	uint32_t *maps[64];
	int fd;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUE_COUNT, &nqueues));
	ASSERT_GE(64, nqueues);
	for (uint64_t i = 0; i < nqueues; i++) {
		struct drm_npu_bo_create c;

		fd = npu_open();
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
		maps[i] = npu_bo_mmap(fd, c.handle, 4096);
		ASSERT_NE(MAP_FAILED, maps[i]);
		maps[i][0] = 0x600d0000u + i;
		ASSERT_EQ(0, npu_submit(fd, &nop, 1, &seq)) TH_LOG("file %llu",
								   (unsigned long long)i);
		close(fd);
	}
	ASSERT_EQ(0, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, 0));
	fd = npu_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, npu_submit(fd, &nop, 1, &seq));
	EXPECT_EQ(0, npu_wait(fd, seq, 10000000000ll, NULL));
	close(fd);
	for (uint64_t i = 0; i < nqueues; i++) {
		EXPECT_EQ(0x600d0000u + i, maps[i][0]);
		munmap(maps[i], 4096);
	}
	EXPECT_EQ(self->buffers_before,
		  npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM, self->buffers_before));
}

/* Everything a batch names is checked before its queue is made. */
TEST_F(m, a_bad_batch_makes_no_queue)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_EVENT_RECORD, .args = { 7 } };
	struct drm_npu_mem_usage u = { 0 };
	uint64_t seq;

	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u));
	EXPECT_EQ(0, u.ctx_current[DRM_NPU_MEM_REGION_QUEUES]);
	t.type = DRM_NPU_TASK_NOP;
	t.args[0] = 0;
	EXPECT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u));
	EXPECT_LT(0, u.ctx_current[DRM_NPU_MEM_REGION_QUEUES]);
}

/* A queue's time limit is bounded by the driver's, and said so. */
TEST_F(m, queue_time_limits_are_bounded)
{
	uint64_t max = 0;
	uint32_t q;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS, &max));
	ASSERT_LT(0, max);
	EXPECT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, max, &q));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, q));
	EXPECT_EQ(-EINVAL, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, max + 1, &q));
	EXPECT_EQ(-EINVAL, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, UINT32_MAX, &q));
}

static void no_op(int sig)
{
}

/*
 * A queue blocked on an event that nobody records holds what is
 * submitted to it, but not without limit: past 16 rings' worth the
 * submit waits for room (interruptibly), so nobody can make the kernel
 * hold unbounded batches.
 */
TEST_F(m, a_blocked_queue_holds_a_bounded_backlog)
{
	struct sigaction sa = { .sa_handler = no_op };	/* no SA_RESTART */
	struct itimerval it = { .it_value = { 1, 0 } };
	static struct drm_npu_task nops[256];
	struct drm_npu_task gate;
	uint64_t seq;
	uint32_t q, ev;
	int ret = 0, n = 0;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &ev));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, DRM_NPU_QUEUE_DEPTH_MIN,
				      0, &q));
	gate = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev } };
	ASSERT_EQ(0, npu_submit_on(self->fd, q, &gate, 1, &seq));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	while (n < 1000 && !(ret = npu_submit_on(self->fd, q, nops, 256, &seq)))
		n++;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	EXPECT_EQ(-EINTR, ret);
	/* 16 rings of 512 slots, 257 a batch, the gate's two included. */
	EXPECT_EQ((16 * DRM_NPU_QUEUE_DEPTH_MIN - 2) / 257, n);
}

TEST_HARNESS_MAIN
