// SPDX-License-Identifier: MIT
/*
 * Sharing device memory between contexts and processes (PRIME dma-bufs),
 * and the statistics views: fdinfo and debugfs.
 */
#include <sys/wait.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)

static int export_fd(int fd, uint32_t handle)
{
	int out = -1;

	return drmPrimeHandleToFD(fd, handle, DRM_CLOEXEC | DRM_RDWR, &out) ? -errno : out;
}

static int import_handle(int fd, int dmabuf, uint32_t *handle)
{
	return drmPrimeFDToHandle(fd, dmabuf, handle) ? -errno : 0;
}

/* Fill `va` with `pattern` through the device and wait. */
static int device_fill(int fd, uint64_t va, uint64_t size, uint32_t pattern)
{
	struct drm_npu_task t = npu_task_fill(va, size, pattern);
	uint64_t seq;
	int ret = npu_submit(fd, &t, 1, &seq);

	return ret ? ret : npu_wait(fd, seq, 10 * SEC, NULL);
}

TEST(import_in_another_context_gets_its_own_address)
{
	int a = npu_open(), b = npu_open(), dmabuf;
	struct drm_npu_bo_create ca, spacer;
	struct drm_npu_bo_info ib;
	struct drm_npu_mem_usage ub0 = { 0 }, ub1 = { 0 };
	uint32_t hb;
	uint32_t *p;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, npu_bo_create(a, 8192, DRM_NPU_BO_PAGE_NORMAL_ONLY, &ca));
	ASSERT_EQ(0, device_fill(a, ca.device_va, 8192, 0x0a0a0a0a));
	/* B already uses the address A's buffer has in A. */
	ASSERT_EQ(0, npu_bo_create(b, 8192, DRM_NPU_BO_PAGE_NORMAL_ONLY, &spacer));
	ASSERT_EQ(ca.device_va, spacer.device_va);

	dmabuf = export_fd(a, ca.handle);
	ASSERT_LE(0, dmabuf);
	ASSERT_EQ(0, ioctl(b, DRM_IOCTL_NPU_GET_MEM_USAGE, &ub0));
	ASSERT_EQ(0, import_handle(b, dmabuf, &hb));
	ASSERT_EQ(0, npu_bo_info(b, hb, &ib));
	EXPECT_NE(ca.device_va, ib.device_va);
	EXPECT_EQ(8192, ib.size);
	/* The buffer is charged once, to its creator. */
	ASSERT_EQ(0, ioctl(b, DRM_IOCTL_NPU_GET_MEM_USAGE, &ub1));
	EXPECT_EQ(ub0.ctx_current[DRM_NPU_MEM_REGION_HBM], ub1.ctx_current[DRM_NPU_MEM_REGION_HBM]);
	EXPECT_EQ(ub0.dev_current[DRM_NPU_MEM_REGION_HBM], ub1.dev_current[DRM_NPU_MEM_REGION_HBM]);

	/* B's device writes through its own address; A sees them. */
	ASSERT_EQ(0, device_fill(b, ib.device_va + 4096, 4096, 0x0b0b0b0b));
	p = npu_bo_mmap(a, ca.handle, 8192);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0x0a0a0a0a, p[0]);
	EXPECT_EQ(0x0b0b0b0b, p[1024]);
	munmap(p, 8192);

	/* Importing again in the same file gives the same handle. */
	uint32_t again;

	ASSERT_EQ(0, import_handle(b, dmabuf, &again));
	EXPECT_EQ(hb, again);
	close(dmabuf);
	close(a);
	close(b);
}

TEST(shared_buffer_outlives_its_creator)
{
	int a = npu_open(), b = npu_open(), dmabuf;
	uint64_t before = npu_dev_usage(b, DRM_NPU_MEM_REGION_HBM);
	struct drm_npu_bo_create ca;
	struct drm_npu_bo_info ib;
	uint32_t hb;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, npu_bo_create(a, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &ca));
	dmabuf = export_fd(a, ca.handle);
	ASSERT_LE(0, dmabuf);
	close(a);				/* the creator is gone */
	ASSERT_EQ(0, import_handle(b, dmabuf, &hb));
	close(dmabuf);
	ASSERT_EQ(0, npu_bo_info(b, hb, &ib));
	EXPECT_EQ(0, device_fill(b, ib.device_va, 4096, 5));
	EXPECT_EQ(before + 4096, npu_dev_usage(b, DRM_NPU_MEM_REGION_HBM));
	ASSERT_EQ(0, npu_gem_close(b, hb));
	EXPECT_EQ(before, npu_usage_settles(b, DRM_NPU_MEM_REGION_HBM, before));
	close(b);
}

TEST(another_process_uses_the_buffer)
{
	int a = npu_open(), dmabuf, status;
	struct drm_npu_bo_create ca;
	uint32_t *p;
	pid_t pid;

	ASSERT_LE(0, a);
	ASSERT_EQ(0, npu_bo_create(a, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &ca));
	dmabuf = export_fd(a, ca.handle);
	ASSERT_LE(0, dmabuf);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* A fresh process: only the dma-buf fd connects it to A. */
		int b = npu_open();
		struct drm_npu_bo_info ib;
		uint32_t hb;

		if (b < 0 || import_handle(b, dmabuf, &hb) || npu_bo_info(b, hb, &ib) ||
		    device_fill(b, ib.device_va, 4096, 0xc0ffee00))
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	p = npu_bo_mmap(a, ca.handle, 4096);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0xc0ffee00, p[1023]);
	munmap(p, 4096);
	close(dmabuf);
	close(a);
}

TEST(foreign_or_bogus_fds_are_refused)
{
	int a = npu_open(), pipefd[2];
	uint32_t h;

	ASSERT_LE(0, a);
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_NE(0, import_handle(a, pipefd[0], &h));
	EXPECT_NE(0, import_handle(a, 999, &h));
	EXPECT_EQ(-ENOENT, export_fd(a, 4242));
	close(pipefd[0]);
	close(pipefd[1]);
	close(a);
}

TEST(fdinfo_reports_the_context_memory)
{
	struct drm_npu_bo_create c;
	char path[64], buf[4096], want[64];
	int fd = npu_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	ASSERT_EQ(0, npu_read_file(path, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "drm-driver:\tnpu\n"));
	EXPECT_NE(NULL, strstr(buf, "drm-pdev:\t0000:"));
	EXPECT_NE(NULL, strstr(buf, "drm-client-id:\t"));
	EXPECT_NE(0u, npu_client_id(fd)) TH_LOG("%s", buf);
	snprintf(want, sizeof(want), "drm-total-hbm:\t%u KiB\n", 1024);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "drm-resident-pagetables:\t"));
	close(fd);
}

TEST(fdinfo_reports_device_busy_time)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	char path[64], buf[4096];
	const char *p;
	uint64_t seq;
	int fd = npu_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 8 << 20, DRM_NPU_BO_PAGE_HUGE_FIRST, &c));
	t = npu_task_fill(c.device_va, 8 << 20, 1);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(fd, seq, 10 * SEC, NULL));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	/* Retirement trails the wake-up a little: poll briefly. */
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, npu_read_file(path, buf, sizeof(buf)));
		p = strstr(buf, "drm-engine-npu:\t");
		ASSERT_NE(NULL, p);
		if (strtoull(p + 16, NULL, 10) > 0)
			break;
		usleep(10000);
	}
	EXPECT_LT(0, strtoull(p + 16, NULL, 10)) TH_LOG("%s", buf);
	close(fd);
}

TEST(debugfs_shows_queues)
{
	struct drm_npu_bo_create c;
	struct drm_npu_task t;
	char buf[8192], path[96];
	uint64_t seq;
	int fd = npu_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	t = npu_task_fill(c.device_va, 4096, 1);
	ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(fd, seq, 10 * SEC, NULL));
	if (npu_debugfs_path("npu_queues", path, sizeof(path)) || npu_read_file(path, buf, sizeof(buf)))
		SKIP(return, "debugfs not mounted");
	EXPECT_NE(NULL, strstr(buf, "running"));
	EXPECT_NE(NULL, strstr(buf, "events and notifies in use:"));
	close(fd);
}

TEST(debugfs_shows_device_memory)
{
	char buf[8192], path[96];

	if (npu_debugfs_path("npu_mem", path, sizeof(path)) || npu_read_file(path, buf, sizeof(buf)))
		SKIP(return, "debugfs not mounted");
	EXPECT_NE(NULL, strstr(buf, "hbm "));
	EXPECT_NE(NULL, strstr(buf, "pagetables "));
	EXPECT_NE(NULL, strstr(buf, "firmware reserved"));
}

TEST_HARNESS_MAIN
