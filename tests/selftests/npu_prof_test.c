// SPDX-License-Identifier: MIT
/*
 * Profiling rings (QUEUE_CREATE's prof_handle, prof_entries and
 * prof_offset) and DRM_NPU_CLOCK: the device records each task a queue
 * runs, by batch and place, on a clock the process can put beside its
 * own. What the records say, what QUEUE_CREATE refuses, and that the
 * queue keeps the ring's buffer.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)
#define RING_BYTES(n)	(sizeof(struct drm_npu_prof_ring) + (n) * sizeof(struct drm_npu_prof_record))

NPU_BASELINE_FIXTURE(p);

static int queue_with_ring(int fd, uint32_t handle, uint64_t offset, uint32_t entries,
			   uint32_t *queue)
{
	struct drm_npu_queue_create c = { .prof_handle = handle, .prof_offset = offset,
					  .prof_entries = entries };
	int ret = ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c) ? -errno : 0;

	*queue = c.queue;
	return ret;
}

static struct drm_npu_prof_record *records(volatile struct drm_npu_prof_ring *r)
{
	return (struct drm_npu_prof_record *)(r + 1);
}

/*
 * A buffer of `size` bytes mapped, a ring of `entries` at its start
 * cleared (recording if `enable`) and a queue on it: the ring, or
 * MAP_FAILED.
 */
static volatile struct drm_npu_prof_ring *ring_queue(int fd, uint64_t size, uint32_t entries,
						     bool enable, struct drm_npu_bo_create *bo,
						     uint32_t *queue)
{
	volatile struct drm_npu_prof_ring *r;

	if (npu_bo_create(fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, bo))
		return MAP_FAILED;
	r = npu_bo_mmap(fd, bo->handle, size);
	if (r == MAP_FAILED)
		return r;
	memset((void *)r, 0, RING_BYTES(entries));
	r->enable = enable;
	__sync_synchronize();	/* out of the write-combining buffers */
	if (queue_with_ring(fd, bo->handle, 0, entries, queue)) {
		munmap((void *)r, size);
		return MAP_FAILED;
	}
	return r;
}

static int get_clock(int fd, struct drm_npu_clock *c)
{
	return ioctl(fd, DRM_IOCTL_NPU_CLOCK, c) ? -errno : 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * SEC + ts.tv_nsec;
}

/* Each task of each batch, in order, tagged with the queue; the FENCEs not. */
TEST_F(p, records_follow_the_batches)
{
	struct drm_npu_task t[3];
	struct drm_npu_bo_create bo;
	volatile struct drm_npu_prof_ring *r;
	struct drm_npu_prof_record *rec;
	uint64_t caps = 0, seq1 = 0, seq2 = 0, stamp;
	uint32_t queue;
	uint8_t *mem;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_DEVICE_CAPS, &caps));
	ASSERT_TRUE(caps & DRM_NPU_CAP_PROFILE);
	r = ring_queue(self->fd, 65536, 64, true, &bo, &queue);
	ASSERT_NE(MAP_FAILED, r);
	mem = (uint8_t *)r;
	t[0] = npu_task_fill(bo.device_va + 32768, 4096, 7);
	t[1] = npu_task_copy(bo.device_va + 40960, bo.device_va + 32768, 4096);
	t[2] = (struct drm_npu_task){ .type = DRM_NPU_TASK_TIMESTAMP,
				      .args = { bo.device_va + 49152 } };
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 3, &seq1));
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 1, &seq2));
	ASSERT_EQ(0, npu_wait_on(self->fd, queue, seq2, 10 * SEC, NULL));
	ASSERT_EQ(4, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, r->dropped);
	rec = records(r);
	for (uint32_t i = 0; i < 4; i++) {
		uint32_t kind = DRM_NPU_UNIT_KIND(rec[i].unit);

		EXPECT_EQ(i < 3 ? seq1 : seq2, rec[i].seq) TH_LOG("record %u", i);
		EXPECT_EQ(i < 3 ? i : 0, rec[i].index);
		EXPECT_EQ(t[i % 3].type, rec[i].type);
		EXPECT_EQ(queue, rec[i].tag);
		EXPECT_EQ(0, rec[i].flags);
		EXPECT_NE(0, rec[i].start_ns);
		EXPECT_LE(rec[i].start_ns, rec[i].end_ns);
		if (i) {
			EXPECT_LE(rec[i - 1].end_ns, rec[i].start_ns);
		}
		/* Copies and fills on a copy engine or inline, the rest inline. */
		if (rec[i].type == DRM_NPU_TASK_TIMESTAMP) {
			EXPECT_EQ(DRM_NPU_UNIT_SCHEDULER, rec[i].unit);
		} else {
			EXPECT_TRUE(kind == DRM_NPU_UNIT_DMA || kind == DRM_NPU_UNIT_SCHEDULER);
		}
	}
	memcpy(&stamp, mem + 49152, sizeof(stamp));
	EXPECT_LE(rec[2].start_ns, stamp);
	EXPECT_GE(rec[2].end_ns, stamp);
	EXPECT_EQ(0, rec[4].seq);		/* nothing past head */
	EXPECT_EQ(0, npu_queue_destroy(self->fd, queue));
	munmap(mem, 65536);
	npu_gem_close(self->fd, bo.handle);
}

/* Switched off, nothing; a full ring counts what it could not keep. */
TEST_F(p, the_process_drives_the_ring)
{
	struct drm_npu_bo_create bo;
	volatile struct drm_npu_prof_ring *r;
	struct drm_npu_task t[20];
	uint64_t seq = 0;
	uint32_t queue;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	r = npu_bo_mmap(self->fd, bo.handle, 4096);
	ASSERT_NE(MAP_FAILED, r);
	memset((void *)r, 0, 4096);
	ASSERT_EQ(0, queue_with_ring(self->fd, bo.handle, 64, DRM_NPU_PROF_MIN, &queue));
	r = (volatile struct drm_npu_prof_ring *)((uint8_t *)r + 64);
	for (int i = 0; i < 20; i++)
		t[i] = npu_task_fill(bo.device_va + 2048, 64, i);
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 20, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, r->head);
	EXPECT_EQ(0, r->dropped);
	r->enable = 1;
	__sync_synchronize();
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 20, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	EXPECT_EQ(DRM_NPU_PROF_MIN, r->head);
	EXPECT_EQ(20 - DRM_NPU_PROF_MIN, r->dropped);
	EXPECT_EQ(seq, records(r)[0].seq);
	EXPECT_EQ(DRM_NPU_PROF_MIN - 1, records(r)[DRM_NPU_PROF_MIN - 1].index);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, queue));
	munmap((uint8_t *)r - 64, 4096);
	npu_gem_close(self->fd, bo.handle);
}

/* Two queues on one ring: the tag says whose each record is. */
TEST_F(p, queues_can_share_a_ring)
{
	struct drm_npu_bo_create bo;
	volatile struct drm_npu_prof_ring *r;
	struct drm_npu_task t;
	uint64_t seq_a = 0, seq_b = 0;
	uint32_t a, b, seen_a = 0, seen_b = 0;

	r = ring_queue(self->fd, 8192, 64, true, &bo, &a);
	ASSERT_NE(MAP_FAILED, r);
	ASSERT_EQ(0, queue_with_ring(self->fd, bo.handle, 0, 64, &b));
	ASSERT_NE(a, b);
	t = npu_task_fill(bo.device_va + 6144, 64, 1);
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, npu_submit_on(self->fd, a, &t, 1, &seq_a));
		ASSERT_EQ(0, npu_submit_on(self->fd, b, &t, 1, &seq_b));
	}
	ASSERT_EQ(0, npu_wait_on(self->fd, a, seq_a, 10 * SEC, NULL));
	ASSERT_EQ(0, npu_wait_on(self->fd, b, seq_b, 10 * SEC, NULL));
	ASSERT_EQ(6, r->head);
	for (int i = 0; i < 6; i++) {
		struct drm_npu_prof_record *rec = &records(r)[i];

		ASSERT_TRUE(rec->tag == a || rec->tag == b);
		/* Each queue's batches in its own order, 1, 2, 3. */
		EXPECT_EQ(rec->tag == a ? ++seen_a : ++seen_b, rec->seq);
	}
	EXPECT_EQ(3, seen_a);
	EXPECT_EQ(3, seen_b);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, a));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, b));
	munmap((void *)r, 8192);
	npu_gem_close(self->fd, bo.handle);
}

/* A failed batch: its tasks up to the failing one, which has none. */
TEST_F(p, a_failed_batch_records_what_ran)
{
	struct drm_npu_bo_create bo;
	volatile struct drm_npu_prof_ring *r;
	struct drm_npu_task t[3];
	uint64_t seq = 0;
	uint32_t queue;

	r = ring_queue(self->fd, 4096, 16, true, &bo, &queue);
	ASSERT_NE(MAP_FAILED, r);
	t[0] = npu_task_fill(bo.device_va + 2048, 64, 1);
	t[1] = npu_task_copy(bo.device_va + 2048, bo.device_va + (1ull << 30), 64);
	t[2] = t[0];
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 3, &seq));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	EXPECT_EQ(1, r->head);
	EXPECT_EQ(DRM_NPU_TASK_FILL, records(r)[0].type);
	EXPECT_EQ(0, npu_queue_destroy(self->fd, queue));
	munmap((void *)r, 4096);
	npu_gem_close(self->fd, bo.handle);
}

/*
 * The queue holds its completion word's and its ring's buffers: closed by
 * the process, they stay until the queue goes (the fixture checks that
 * device memory comes back).
 */
TEST_F(p, the_queue_keeps_its_buffers)
{
	struct drm_npu_queue_create c = { .prof_entries = 64 };
	struct drm_npu_bo_create word, ring, scratch;
	struct drm_npu_task t;
	uint64_t seq = 0, before;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &word));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &ring));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &scratch));
	c.done_handle = word.handle;
	c.done_offset = 4088;
	c.prof_handle = ring.handle;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c));
	before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	npu_gem_close(self->fd, word.handle);
	npu_gem_close(self->fd, ring.handle);
	EXPECT_EQ(before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
	t = npu_task_fill(scratch.device_va, 4096, 9);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(0, npu_submit_on(self->fd, c.queue, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->fd, c.queue, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, c.queue));
	EXPECT_EQ(before - 8192, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HBM,
						   before - 8192));
	npu_gem_close(self->fd, scratch.handle);
}

TEST_F(p, bad_rings_are_refused)
{
	struct drm_npu_queue_create c;
	struct drm_npu_bo_create bo;
	uint32_t queue, host;
	void *page;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 0, 0, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 0, 48, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 0, DRM_NPU_PROF_MIN / 2, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 0, DRM_NPU_PROF_MAX * 2, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 32, 16, &queue));	/* misaligned */
	/* 64 + 126 * 32 bytes fit in 4 KiB, 128 records do not. */
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 0, 128, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 4096 - 64 * 8, 16, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle, 1ull << 63, 16, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, bo.handle + 1000, 0, 16, &queue));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, 0, 64, 0, &queue));	/* an offset of nothing */
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, 0, 0, 16, &queue));	/* a size of nothing */
	/* Host memory has no HBM offset for the device to write. */
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	ASSERT_EQ(0, npu_userptr(self->fd, page, 4096, &host));
	EXPECT_EQ(-EINVAL, queue_with_ring(self->fd, host, 0, 16, &queue));
	/* Refused after a good completion word: the word's buffer is not kept. */
	memset(&c, 0, sizeof(c));
	c.done_handle = bo.handle;
	c.prof_handle = bo.handle;
	c.prof_entries = 128;
	EXPECT_EQ(-EINVAL, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c) ? -errno : 0);
	/* The largest ring that fits, ending where the buffer ends, is taken. */
	EXPECT_EQ(0, queue_with_ring(self->fd, bo.handle, 4096 - RING_BYTES(16), 16, &queue));
	EXPECT_EQ(0, npu_queue_destroy(self->fd, queue));
	/* Nothing refused made a queue or kept a buffer. */
	EXPECT_EQ(0, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES));
	npu_gem_close(self->fd, host);
	npu_gem_close(self->fd, bo.handle);
	munmap(page, 4096);
}

/*
 * DRM_NPU_CLOCK puts device stamps on CLOCK_MONOTONIC: a TIMESTAMP
 * task's, converted, falls between the submit and the wait's return.
 */
TEST_F(p, the_clock_puts_device_stamps_on_the_hosts)
{
	struct drm_npu_clock c = { 0 }, again = { 0 };
	struct drm_npu_bo_create bo;
	struct drm_npu_task t;
	int64_t before, after, host;
	uint64_t seq = 0, stamp;
	uint8_t *mem;

	ASSERT_EQ(0, get_clock(self->fd, &c));
	EXPECT_NE(0, c.device_ns);
	EXPECT_NE(0, c.window_ns);
	EXPECT_LE(c.host_ns, (uint64_t)now_ns());
	/* Within a second every caller gets the same pair. */
	ASSERT_EQ(0, get_clock(self->fd, &again));
	if ((uint64_t)now_ns() - c.host_ns < SEC / 2)
		EXPECT_EQ(0, memcmp(&c, &again, sizeof(c)));
	c = again;
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	mem = npu_bo_mmap(self->fd, bo.handle, 4096);
	ASSERT_NE(MAP_FAILED, mem);
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_TIMESTAMP, .args = { bo.device_va } };
	before = now_ns();
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(self->fd, seq, 10 * SEC, NULL));
	after = now_ns();
	memcpy(&stamp, mem, sizeof(stamp));
	host = (int64_t)(stamp - c.device_ns + c.host_ns);
	/* Off by the pair's window at most, and what the clocks drift in a second. */
	EXPECT_GE(host, before - (int64_t)c.window_ns - 2000000)
		TH_LOG("stamp %lld ns before the submit", (long long)(before - host));
	EXPECT_LE(host, after + (int64_t)c.window_ns + 2000000)
		TH_LOG("stamp %lld ns after the wait", (long long)(host - after));
	/* Flags and padding must be zero. */
	c = (struct drm_npu_clock){ .flags = 1 };
	EXPECT_EQ(-EINVAL, get_clock(self->fd, &c));
	c = (struct drm_npu_clock){ .pad = 1 };
	EXPECT_EQ(-EINVAL, get_clock(self->fd, &c));
	munmap(mem, 4096);
	npu_gem_close(self->fd, bo.handle);
}

TEST_HARNESS_MAIN
