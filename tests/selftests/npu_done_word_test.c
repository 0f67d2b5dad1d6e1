// SPDX-License-Identifier: MIT
/*
 * Completion words (QUEUE_CREATE's done_handle and done_offset): the
 * device writes each completed batch's seq to a buffer the process maps,
 * so a thread sees completions without a system call. What it says,
 * what QUEUE_CREATE refuses, and that the queue keeps the buffer.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)

NPU_BASELINE_FIXTURE(w);

static int queue_with_word(int fd, uint32_t handle, uint64_t offset, uint32_t *queue)
{
	struct drm_npu_queue_create c = { .done_handle = handle, .done_offset = offset };
	int ret = ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c) ? -errno : 0;

	*queue = c.queue;
	return ret;
}

/* Read the word until it reaches `seq`, without asking the kernel; false after 10 s. */
static bool word_reaches(const volatile uint64_t *word, uint64_t seq)
{
	uint64_t until = npu_now_ms() + 10000;

	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < seq)
		if (npu_now_ms() > until)
			return false;
	return true;
}

TEST_F(w, the_device_says_so)
{
	struct drm_npu_bo_create bo;
	uint64_t caps = 0, seq = 0;
	volatile uint64_t *words;
	struct drm_npu_task t;
	uint32_t queue;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_DEVICE_CAPS, &caps));
	ASSERT_TRUE(caps & DRM_NPU_CAP_DONE_WORD);
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	words = npu_bo_mmap(self->fd, bo.handle, 4096);
	ASSERT_NE(MAP_FAILED, words);
	/* Whatever the buffer held, the queue starts its word at 0. */
	words[3] = ~0ull;
	words[4] = 77;
	__sync_synchronize();	/* out of the write-combining buffers */
	ASSERT_EQ(0, queue_with_word(self->fd, bo.handle, 3 * 8, &queue));
	EXPECT_EQ(0, words[3]);
	t = npu_task_fill(bo.device_va + 2048, 64, 5);
	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(0, npu_submit_on(self->fd, queue, &t, 1, &seq));
		ASSERT_TRUE(word_reaches(&words[3], seq));
		/* The fill is done when its batch says so: the word follows it. */
		EXPECT_EQ(5, ((volatile uint32_t *)words)[2048 / 4]);
		((volatile uint32_t *)words)[2048 / 4] = 0;
	}
	EXPECT_EQ(seq, words[3]);
	EXPECT_EQ(0, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	EXPECT_EQ(77, words[4]);	/* its neighbours are the process's */
	/* A second queue on the same buffer has its own word. */
	uint32_t other;
	uint64_t oseq = 0;

	ASSERT_EQ(0, queue_with_word(self->fd, bo.handle, 4 * 8, &other));
	ASSERT_EQ(0, npu_submit_on(self->fd, other, &t, 1, &oseq));
	ASSERT_TRUE(word_reaches(&words[4], oseq));
	EXPECT_EQ(seq, words[3]);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, other));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, queue));
	munmap((void *)words, 4096);
	npu_gem_close(self->fd, bo.handle);
}

/* A batch that fails never completes: its word stays at the last one that did. */
TEST_F(w, a_failed_batch_leaves_it)
{
	struct drm_npu_bo_create bo;
	volatile uint64_t *words;
	struct drm_npu_task t;
	uint64_t seq = 0, good;
	uint32_t queue;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	words = npu_bo_mmap(self->fd, bo.handle, 4096);
	ASSERT_NE(MAP_FAILED, words);
	ASSERT_EQ(0, queue_with_word(self->fd, bo.handle, 0, &queue));
	t = npu_task_fill(bo.device_va + 2048, 64, 1);
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, &t, 1, &good));
	t = npu_task_copy(bo.device_va + 2048, bo.device_va + (1ull << 30), 64);
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, &t, 1, &seq));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	EXPECT_EQ(good, words[0]);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, queue));
	munmap((void *)words, 4096);
	npu_gem_close(self->fd, bo.handle);
}

/* A file closed with such a queue gives everything back (the fixture checks). */
TEST_F(w, closing_the_file_frees_it)
{
	struct drm_npu_bo_create bo;
	struct drm_npu_task t;
	uint64_t seq = 0;
	uint32_t queue;
	int fd = npu_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	ASSERT_EQ(0, queue_with_word(fd, bo.handle, 8, &queue));
	t = npu_task_fill(bo.device_va + 1024, 64, 1);
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(0, npu_submit_on(fd, queue, &t, 1, &seq));
	close(fd);
}

TEST_F(w, bad_words_are_refused)
{
	struct drm_npu_queue_create c;
	struct drm_npu_bo_create bo;
	uint32_t queue, host;
	void *page;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, bo.handle, 4, &queue));	/* misaligned */
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, bo.handle, 4092, &queue));	/* runs past */
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, bo.handle, 4096, &queue));
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, bo.handle, 1ull << 63, &queue));
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, bo.handle + 1000, 0, &queue));
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, 0, 8, &queue));	/* an offset of nothing */
	memset(&c, 0, sizeof(c));
	c.done_handle = bo.handle;
	c.pad2 = 1;
	EXPECT_EQ(-EINVAL, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c) ? -errno : 0);
	/* Host memory has no HBM offset for the device to write. */
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	ASSERT_EQ(0, npu_userptr(self->fd, page, 4096, &host));
	EXPECT_EQ(-EINVAL, queue_with_word(self->fd, host, 0, &queue));
	/* Another file's handle numbers mean nothing here. */
	int other = npu_open();
	struct drm_npu_bo_create theirs;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, npu_bo_create(other, 8192, DRM_NPU_BO_PAGE_NORMAL_ONLY, &theirs));
	if (theirs.handle != bo.handle && theirs.handle != host)
		EXPECT_EQ(-EINVAL, queue_with_word(self->fd, theirs.handle, 0, &queue));
	close(other);
	/* Nothing refused made a queue or kept a buffer. */
	EXPECT_EQ(0, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES));
	npu_gem_close(self->fd, host);
	npu_gem_close(self->fd, bo.handle);
	munmap(page, 4096);
}

TEST_HARNESS_MAIN
