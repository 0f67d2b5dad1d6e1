// SPDX-License-Identifier: MIT
/*
 * Host memory registered for device access: DMA in both directions,
 * read-only registrations, overlap and alignment rules, RLIMIT_MEMLOCK,
 * and unregistering while the device still uses the memory.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define MiB (1ull << 20)
#define SEC (1000000000ll)

static int reg(int fd, void *addr, uint64_t size, uint32_t flags,
	       struct drm_npu_userptr *out)
{
	struct drm_npu_userptr args = {
		.addr = (uintptr_t)addr, .size = size, .flags = flags,
	};

	if (out)
		memset(out, 0, sizeof(*out));
	if (ioctl(fd, DRM_IOCTL_NPU_USERPTR, &args))
		return -errno;
	if (out)
		*out = args;
	return 0;
}

static void *pages(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

FIXTURE(up) {
	int fd;
	uint64_t host_before, hbm_before;
};

FIXTURE_SETUP(up)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	self->host_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HOST);
	self->hbm_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
}

FIXTURE_TEARDOWN(up)
{
	int fd;

	close(self->fd);
	fd = npu_open();
	EXPECT_EQ(self->host_before, npu_usage_settles(fd, DRM_NPU_MEM_REGION_HOST, self->host_before));
	EXPECT_EQ(self->hbm_before, npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, self->hbm_before));
	close(fd);
}

static void round_trip(struct __test_metadata *_metadata, int fd, uint32_t policy)
{
	const uint64_t size = 64 * MiB;
	uint32_t *src = pages(size), *dst = pages(size);
	struct drm_npu_userptr us, ud;
	struct drm_npu_bo_create a, b;
	struct drm_npu_task t[3];
	struct drm_npu_wait w;
	uint64_t seq = 0;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	for (size_t i = 0; i < size / 4; i++) {
		src[i] = (uint32_t)(i * 2654435761u) ^ policy;
		dst[i] = 0;
	}
	ASSERT_EQ(0, reg(fd, src, size, DRM_NPU_USERPTR_READ_ONLY, &us));
	ASSERT_EQ(0, reg(fd, dst, size, 0, &ud));
	ASSERT_EQ(0, npu_bo_create(fd, size, policy, &a));
	ASSERT_EQ(0, npu_bo_create(fd, size, policy, &b));

	/* host -> HBM -> HBM -> host, in one batch. */
	t[0] = npu_task_copy(a.device_va, us.device_va, size);
	t[1] = npu_task_copy(b.device_va, a.device_va, size);
	t[2] = npu_task_copy(ud.device_va, b.device_va, size);
	ASSERT_EQ(0, npu_submit(fd, t, 3, &seq));
	ASSERT_EQ(0, npu_wait(fd, seq, 120 * SEC, &w)) TH_LOG("status %u", w.status);
	EXPECT_EQ(0, memcmp(src, dst, size));

	npu_gem_close(fd, us.handle);
	npu_gem_close(fd, ud.handle);
	npu_gem_close(fd, a.handle);
	npu_gem_close(fd, b.handle);
	munmap(src, size);
	munmap(dst, size);
}

TEST_F(up, copy_64mib_host_hbm_hbm_host_huge_first)
{
	round_trip(_metadata, self->fd, DRM_NPU_BO_PAGE_HUGE_FIRST);
}

TEST_F(up, copy_64mib_host_hbm_hbm_host_normal_only)
{
	round_trip(_metadata, self->fd, DRM_NPU_BO_PAGE_NORMAL_ONLY);
}

TEST_F(up, read_only_registration_refuses_device_writes)
{
	uint32_t *p = pages(8192);
	struct drm_npu_userptr u;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	uint64_t seq = 0;

	ASSERT_NE(NULL, p);
	p[0] = 42;
	ASSERT_EQ(0, reg(self->fd, p, 8192, DRM_NPU_USERPTR_READ_ONLY, &u));
	t = npu_task_fill(u.device_va + 4096, 4, 7);
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	EXPECT_EQ(-EIO, npu_wait(self->fd, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(1, w.fault_access);
	EXPECT_EQ(u.device_va + 4096, w.fault_address);
	EXPECT_EQ(42, p[0]);
	EXPECT_EQ(0, p[1024]);
	munmap(p, 8192);
}

TEST_F(up, read_only_memory_needs_the_read_only_flag)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct drm_npu_userptr u;

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EFAULT, reg(self->fd, p, 4096, 0, NULL));
	EXPECT_EQ(0, reg(self->fd, p, 4096, DRM_NPU_USERPTR_READ_ONLY, &u));
	npu_gem_close(self->fd, u.handle);
	munmap(p, 4096);
}

TEST_F(up, overlapping_registrations_are_refused)
{
	char *p = pages(16384);
	struct drm_npu_userptr u;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, reg(self->fd, p + 4096, 8192, 0, &u));
	EXPECT_EQ(-EEXIST, reg(self->fd, p + 4096, 8192, 0, NULL));
	EXPECT_EQ(-EEXIST, reg(self->fd, p, 8192, 0, NULL));
	EXPECT_EQ(-EEXIST, reg(self->fd, p + 8192, 8192, 0, NULL));
	EXPECT_EQ(0, reg(self->fd, p, 4096, 0, NULL));		/* adjacent is fine */
	/* Unregistered, the range is free again. */
	ASSERT_EQ(0, npu_gem_close(self->fd, u.handle));
	EXPECT_EQ(0, reg(self->fd, p + 4096, 8192, 0, NULL));
	munmap(p, 16384);
}

TEST_F(up, bad_arguments)
{
	char *p = pages(8192);
	struct drm_npu_userptr u = { .addr = (uintptr_t)p, .size = 4096, .handle = 5 };
	struct drm_npu_bo_info info;
	struct drm_npu_userptr ok;

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, reg(self->fd, p + 1, 4096, 0, NULL));
	EXPECT_EQ(-EINVAL, reg(self->fd, p, 100, 0, NULL));
	EXPECT_EQ(-EINVAL, reg(self->fd, p, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, reg(self->fd, p, 4096, 2, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_USERPTR, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, reg(self->fd, (void *)(uintptr_t)-4096, 8192, 0, NULL));
	/* Nothing mapped there. */
	munmap(p + 4096, 4096);
	EXPECT_EQ(-EFAULT, reg(self->fd, p, 8192, 0, NULL));
	/* Registered memory has no mmap offset: the caller has it already. */
	ASSERT_EQ(0, reg(self->fd, p, 4096, 0, &ok));
	ASSERT_EQ(0, npu_bo_info(self->fd, ok.handle, &info));
	EXPECT_EQ(ok.device_va, info.device_va);
	EXPECT_EQ(0, info.mmap_offset);
	EXPECT_EQ(-ENOENT, npu_bo_info(self->fd, ok.handle + 1000, &info));
	munmap(p, 4096);
}

TEST_F(up, usage_counts_registered_memory)
{
	char *p = pages(1 * MiB);
	struct drm_npu_userptr u;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, reg(self->fd, p, 1 * MiB, 0, &u));
	EXPECT_EQ(self->host_before + MiB, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HOST));
	ASSERT_EQ(0, npu_gem_close(self->fd, u.handle));
	EXPECT_EQ(self->host_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HOST));
	munmap(p, MiB);
}

TEST_F(up, memlock_limit_applies_without_cap_ipc_lock)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit lim = { 64 << 10, 64 << 10 };
		char *p = pages(1 * MiB);

		/* The open file stays usable after dropping root. */
		if (!p || setrlimit(RLIMIT_MEMLOCK, &lim) || setgid(65534) || setuid(65534))
			_exit(2);
		if (reg(self->fd, p, 1 * MiB, 0, NULL) != -ENOMEM)
			_exit(3);
		if (reg(self->fd, p, 32 << 10, 0, NULL) != 0)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(up, unregister_while_the_device_uses_it)
{
	const uint64_t size = 16 * MiB;
	char *p = pages(size);
	struct drm_npu_userptr u;
	struct drm_npu_bo_create b;
	struct drm_npu_task t;
	uint64_t seq = 0;

	ASSERT_NE(NULL, p);
	memset(p, 0x5c, size);
	ASSERT_EQ(0, reg(self->fd, p, size, 0, &u));
	ASSERT_EQ(0, npu_bo_create(self->fd, size, DRM_NPU_BO_PAGE_HUGE_FIRST, &b));
	t = npu_task_copy(b.device_va, u.device_va, size);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_gem_close(self->fd, u.handle));
	munmap(p, size);	/* pinned pages outlive the mapping */
	EXPECT_EQ(0, npu_wait(self->fd, seq, 60 * SEC, NULL));
	EXPECT_EQ(self->host_before, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_HOST,
							self->host_before));
	npu_gem_close(self->fd, b.handle);
}

TEST_HARNESS_MAIN
