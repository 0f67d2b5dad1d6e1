// SPDX-License-Identifier: MIT
/*
 * Batch completion through DRM syncobjs, with libdrm's own calls: binary
 * and timeline out-syncobjs, in-syncobjs ordering work across queues,
 * failed batches still signalling, and argument errors.
 */
#include <linux/sync_file.h>
#include <time.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define MiB (1ull << 20)
#define SEC (1000000000ll)

static int submit_sync(int fd, uint32_t queue, const struct drm_npu_task *t, uint32_t n,
		       const struct drm_npu_syncobj *in, uint32_t nin,
		       const struct drm_npu_syncobj *out, uint32_t nout, uint64_t *seq)
{
	struct drm_npu_submit args = {
		.tasks = (uintptr_t)t, .count = n, .queue = queue,
		.in_syncobjs = (uintptr_t)in, .in_count = nin,
		.out_syncobjs = (uintptr_t)out, .out_count = nout,
	};

	if (seq)
		*seq = 0;
	if (ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &args))
		return -errno;
	if (seq)
		*seq = args.seq;
	return 0;
}

static int64_t abs_timeout(int64_t rel_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec + rel_ns;
}

FIXTURE(so) {
	int fd;
	struct drm_npu_bo_create bo;
	uint32_t *map;
};

FIXTURE_SETUP(so)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, npu_bo_create(self->fd, 64 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &self->bo));
	self->map = npu_bo_mmap(self->fd, self->bo.handle, 64 * MiB);
	ASSERT_NE(MAP_FAILED, self->map);
}

FIXTURE_TEARDOWN(so)
{
	munmap(self->map, 64 * MiB);
	close(self->fd);
}

TEST_F(so, binary_out_syncobj_signals_on_completion)
{
	struct drm_npu_task t = npu_task_fill(self->bo.device_va, 4096, 0x51);
	struct drm_npu_syncobj out = { 0 };
	uint32_t h;

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &h));
	out.handle = h;
	ASSERT_EQ(0, submit_sync(self->fd, 0, &t, 1, NULL, 0, &out, 1, NULL));
	ASSERT_EQ(0, drmSyncobjWait(self->fd, &h, 1, abs_timeout(10 * SEC),
				    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL));
	EXPECT_EQ(0x51, self->map[1023]);
	drmSyncobjDestroy(self->fd, h);
}

TEST_F(so, timeline_points_signal_in_order)
{
	struct drm_npu_syncobj out = { 0 };
	uint64_t point, points[3] = { 1, 2, 3 };
	uint32_t h, hs[3];

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &h));
	for (int i = 0; i < 3; i++) {
		struct drm_npu_task t = npu_task_fill(self->bo.device_va + i * 4096, 4096, 0x60 + i);

		out.handle = h;
		out.point = points[i];
		ASSERT_EQ(0, submit_sync(self->fd, 0, &t, 1, NULL, 0, &out, 1, NULL));
		hs[i] = h;
	}
	ASSERT_EQ(0, drmSyncobjTimelineWait(self->fd, hs, points, 3, abs_timeout(10 * SEC),
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL));
	ASSERT_EQ(0, drmSyncobjQuery(self->fd, &h, &point, 1));
	EXPECT_EQ(3, point);
	EXPECT_EQ(0x62, self->map[2 * 1024]);
	drmSyncobjDestroy(self->fd, h);
}

TEST_F(so, in_syncobj_orders_work_across_queues)
{
	struct drm_npu_queue_create qc = { .priority = DRM_NPU_QUEUE_PRIORITY_HIGH };
	struct drm_npu_syncobj s = { 0 };
	struct drm_npu_task t;
	uint64_t seq;
	uint32_t h;

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &qc));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &h));
	s.handle = h;
	/* Slow: 20 fills of 32 MiB on the default queue, only the last with 7s
	 * and signalling h... */
	for (int i = 0; i < 20; i++) {
		t = npu_task_fill(self->bo.device_va, 32 * MiB, i == 19 ? 7 : 1);
		ASSERT_EQ(0, submit_sync(self->fd, 0, &t, 1, NULL, 0, i == 19 ? &s : NULL,
					 i == 19 ? 1 : 0, NULL));
	}
	/* ...then copy the end of it on a high-priority queue, after h. */
	t = npu_task_copy(self->bo.device_va + 48 * MiB, self->bo.device_va + 32 * MiB - 4096, 4096);
	ASSERT_EQ(0, submit_sync(self->fd, qc.queue, &t, 1, &s, 1, NULL, 0, &seq));
	struct drm_npu_wait w = { .seq = seq, .deadline_ns = npu_deadline(30 * SEC), .queue = qc.queue };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_WAIT, &w));
	EXPECT_EQ(7, self->map[48 * MiB / 4 + 1023]);
	drmSyncobjDestroy(self->fd, h);
}

TEST_F(so, failed_batch_still_signals)
{
	struct drm_npu_task t = npu_task_copy(self->bo.device_va, self->bo.device_va + (1ull << 32), 4);
	struct drm_npu_syncobj out = { 0 };
	uint32_t h;

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &h));
	out.handle = h;
	ASSERT_EQ(0, submit_sync(self->fd, 0, &t, 1, NULL, 0, &out, 1, NULL));
	/* Nobody waits forever on a batch that faulted. */
	EXPECT_EQ(0, drmSyncobjWait(self->fd, &h, 1, abs_timeout(10 * SEC),
				    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL));
	drmSyncobjDestroy(self->fd, h);
}

TEST_F(so, bad_syncobj_arguments_queue_nothing)
{
	struct drm_npu_task t = npu_task_fill(self->bo.device_va, 4, 1);
	struct drm_npu_syncobj s = { .handle = 9999 }, many[DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1] = { 0 };
	uint32_t h;

	EXPECT_EQ(-ENOENT, submit_sync(self->fd, 0, &t, 1, NULL, 0, &s, 1, NULL));
	EXPECT_EQ(-ENOENT, submit_sync(self->fd, 0, &t, 1, &s, 1, NULL, 0, NULL));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &h));
	s.handle = h;
	s.flags = 1;
	EXPECT_EQ(-EINVAL, submit_sync(self->fd, 0, &t, 1, NULL, 0, &s, 1, NULL));
	EXPECT_EQ(-EINVAL, submit_sync(self->fd, 0, &t, 1, many, DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1,
				       NULL, 0, NULL));
	EXPECT_EQ(-EFAULT, submit_sync(self->fd, 0, &t, 1, (void *)8, 1, NULL, 0, NULL));
	/* A binary syncobj with no fence yet cannot be waited for. */
	s.flags = 0;
	EXPECT_EQ(-EINVAL, submit_sync(self->fd, 0, &t, 1, &s, 1, NULL, 0, NULL));
	/* Nothing was queued. */
	EXPECT_EQ(0, npu_wait(self->fd, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, npu_wait(self->fd, 1, 0, NULL));
	drmSyncobjDestroy(self->fd, h);
}

/*
 * A batch's fence outlives its queue: kept in a sync_file, it still
 * answers what its timeline is called after the queue was destroyed (the
 * scheduler's memory, whose name the fence reads, must still be there;
 * the debug kernel's KASAN said use-after-free before the queues' memory
 * was kept), and so after the queue's memory went to a new queue.
 */
TEST_F(so, a_fence_names_its_timeline_after_its_queue_is_gone)
{
	struct drm_npu_task t = npu_task_fill(self->bo.device_va, 4096, 0x77);
	struct drm_npu_queue_create qc = { .priority = DRM_NPU_QUEUE_PRIORITY_NORMAL };
	struct drm_npu_queue_destroy qd = { 0 };
	struct drm_npu_syncobj out = { 0 };
	struct sync_fence_info fi = { 0 };
	struct sync_file_info info = { .num_fences = 1, .sync_fence_info = (uintptr_t)&fi };
	int sf;
	uint32_t h;

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &qc));
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &h));
	out.handle = h;
	ASSERT_EQ(0, submit_sync(self->fd, qc.queue, &t, 1, NULL, 0, &out, 1, NULL));
	ASSERT_EQ(0, drmSyncobjWait(self->fd, &h, 1, abs_timeout(10 * SEC),
				    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(self->fd, h, &sf));
	drmSyncobjDestroy(self->fd, h);
	qd.queue = qc.queue;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &qd));
	ASSERT_EQ(0, ioctl(sf, SYNC_IOC_FILE_INFO, &info)) TH_LOG("%s", strerror(errno));
	EXPECT_NE(0, fi.obj_name[0]);
	EXPECT_EQ(1, fi.status);
	/* Its memory taken by a new queue: the old fence reads the new name. */
	qc.queue = 0;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &qc));
	memset(&fi, 0, sizeof(fi));
	ASSERT_EQ(0, ioctl(sf, SYNC_IOC_FILE_INFO, &info));
	EXPECT_EQ('n', fi.obj_name[0]) TH_LOG("%s", fi.obj_name);
	qd.queue = qc.queue;
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &qd));
	close(sf);
}

TEST_HARNESS_MAIN
