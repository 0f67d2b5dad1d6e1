// SPDX-License-Identifier: MIT
/*
 * Buffer objects in HBM: creation by page policy, info, CPU mappings,
 * accounting, and every argument error. Each test checks that device
 * memory in use is back to where it started.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define MiB (1ull << 20)

FIXTURE(bo) {
	int fd;
	uint64_t used_before;		/* all HBM, page tables included */
	uint64_t buffers_before;	/* HBM held by buffers */
};

FIXTURE_SETUP(bo)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	self->used_before = npu_hbm_used(self->fd);
	self->buffers_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
}

FIXTURE_TEARDOWN(bo)
{
	int fd = self->fd;

	close(fd);
	/* Closing the file released everything it held, page tables too. */
	fd = npu_open();
	for (int i = 0; i < 500 && npu_hbm_used(fd) != self->used_before; i++)
		usleep(10000);
	EXPECT_EQ(self->used_before, npu_hbm_used(fd));
	close(fd);
}

TEST_F(bo, page_policies_pick_page_sizes)
{
	static const struct {
		uint64_t size;
		uint32_t policy;
		uint32_t page;
		uint64_t rounded;
	} cases[] = {
		{ 100, DRM_NPU_BO_PAGE_HUGE_FIRST, DRM_NPU_PAGE_SIZE_4K, 4096 },
		{ 1 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, DRM_NPU_PAGE_SIZE_4K, 1 * MiB },
		{ 3 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, DRM_NPU_PAGE_SIZE_2M, 4 * MiB },
		{ 100, DRM_NPU_BO_PAGE_HUGE_ONLY, DRM_NPU_PAGE_SIZE_2M, 2 * MiB },
		{ 3 * MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY, DRM_NPU_PAGE_SIZE_4K, 3 * MiB },
		{ 5000, DRM_NPU_BO_PAGE_NORMAL_ONLY, DRM_NPU_PAGE_SIZE_4K, 8192 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct drm_npu_bo_create c;
		struct drm_npu_bo_info info;

		ASSERT_EQ(0, npu_bo_create(self->fd, cases[i].size, cases[i].policy, &c));
		EXPECT_EQ(cases[i].page, c.page_size) TH_LOG("case %zu", i);
		EXPECT_EQ(cases[i].rounded, c.size) TH_LOG("case %zu", i);
		EXPECT_LE(DRM_NPU_VA_BASE, c.device_va);
		EXPECT_GE(DRM_NPU_VA_END, c.device_va + c.size);
		EXPECT_EQ(0, c.device_va % c.page_size);
		ASSERT_EQ(0, npu_bo_info(self->fd, c.handle, &info));
		EXPECT_EQ(c.device_va, info.device_va);
		EXPECT_EQ(c.size, info.size);
		EXPECT_EQ(c.page_size, info.page_size);
		EXPECT_NE(0, info.mmap_offset);
		EXPECT_EQ(0, npu_gem_close(self->fd, c.handle));
	}
}

TEST_F(bo, usage_follows_buffers)
{
	struct drm_npu_bo_create a, b;
	struct drm_npu_mem_usage u0 = { 0 }, u1 = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u0));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4 * MiB, DRM_NPU_BO_PAGE_HUGE_ONLY, &a));
	ASSERT_EQ(0, npu_bo_create(self->fd, 64 << 10, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u1));
	EXPECT_EQ(u0.ctx_current[DRM_NPU_MEM_REGION_HBM] + 4 * MiB + (64 << 10),
		  u1.ctx_current[DRM_NPU_MEM_REGION_HBM]);
	EXPECT_EQ(u0.dev_current[DRM_NPU_MEM_REGION_HBM] + 4 * MiB + (64 << 10),
		  u1.dev_current[DRM_NPU_MEM_REGION_HBM]);
	EXPECT_LE(u1.ctx_current[DRM_NPU_MEM_REGION_HBM], u1.ctx_peak[DRM_NPU_MEM_REGION_HBM]);
	/* Mapping them took page tables, charged to this context. */
	EXPECT_LT(0, u1.ctx_current[DRM_NPU_MEM_REGION_PAGE_TABLES]);
	EXPECT_EQ(0, npu_gem_close(self->fd, a.handle));
	EXPECT_EQ(0, npu_gem_close(self->fd, b.handle));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u1));
	EXPECT_EQ(u0.ctx_current[DRM_NPU_MEM_REGION_HBM], u1.ctx_current[DRM_NPU_MEM_REGION_HBM]);
	EXPECT_LE(u0.ctx_peak[DRM_NPU_MEM_REGION_HBM] + 4 * MiB, u1.ctx_peak[DRM_NPU_MEM_REGION_HBM]);
}

TEST_F(bo, cpu_mapping_reads_back_and_buffers_do_not_overlap)
{
	struct drm_npu_bo_create a, b;
	uint32_t *pa, *pb;
	size_t n = (2 * MiB) / 4;

	ASSERT_EQ(0, npu_bo_create(self->fd, 2 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &a));
	ASSERT_EQ(0, npu_bo_create(self->fd, 2 * MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b));
	pa = npu_bo_mmap(self->fd, a.handle, 2 * MiB);
	pb = npu_bo_mmap(self->fd, b.handle, 2 * MiB);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_NE(MAP_FAILED, pb);
	for (size_t i = 0; i < n; i++) {
		pa[i] = (uint32_t)i * 2654435761u;
		pb[i] = ~(uint32_t)i;
	}
	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ((uint32_t)i * 2654435761u, pa[i]) TH_LOG("a[%zu]", i);
		ASSERT_EQ(~(uint32_t)i, pb[i]) TH_LOG("b[%zu]", i);
	}
	munmap(pa, 2 * MiB);
	munmap(pb, 2 * MiB);
	npu_gem_close(self->fd, a.handle);
	npu_gem_close(self->fd, b.handle);
}

TEST_F(bo, new_buffers_read_zero)
{
	struct drm_npu_bo_create c;
	uint8_t *p;

	/* Dirty some memory, free it, allocate again: no leftovers. */
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, npu_bo_create(self->fd, 1 * MiB, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
		p = npu_bo_mmap(self->fd, c.handle, 1 * MiB);
		ASSERT_NE(MAP_FAILED, p);
		for (size_t i = 0; i < MiB; i += 4093) {
			ASSERT_EQ(0, p[i]) TH_LOG("round %d byte %zu", round, i);
		}
		memset(p, 0xab, MiB);
		munmap(p, MiB);
		npu_gem_close(self->fd, c.handle);
	}
}

TEST_F(bo, mapping_outlives_handle_and_any_order_is_safe)
{
	struct drm_npu_bo_create c;
	uint32_t *p;

	ASSERT_EQ(0, npu_bo_create(self->fd, 64 << 10, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	p = npu_bo_mmap(self->fd, c.handle, 64 << 10);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, npu_gem_close(self->fd, c.handle));
	/* The memory stays while mapped... */
	EXPECT_EQ(self->buffers_before + (64 << 10), npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
	p[100] = 0xfeedbeef;
	EXPECT_EQ(0xfeedbeef, p[100]);
	munmap(p, 64 << 10);
	/* ...and goes with the last mapping. */
	EXPECT_EQ(self->buffers_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
}

TEST_F(bo, mmap_beyond_the_buffer_fails)
{
	struct drm_npu_bo_create c;
	struct drm_npu_bo_info info;
	void *p;

	ASSERT_EQ(0, npu_bo_create(self->fd, 8192, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	ASSERT_EQ(0, npu_bo_info(self->fd, c.handle, &info));
	p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	/* A mapping starts at the buffer's offset; DRM finds buffers by it. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 info.mmap_offset + 4096);
	EXPECT_EQ(MAP_FAILED, p);
	/* A shorter mapping from the start is fine. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, info.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 4096);
	npu_gem_close(self->fd, c.handle);
}

TEST_F(bo, bad_arguments)
{
	struct drm_npu_bo_create c = { .size = 4096, .flags = 1 };
	struct drm_npu_bo_info info = { .handle = 12345 };
	struct drm_npu_mem_usage u = { .flags = 1 };

	EXPECT_EQ(-EINVAL, npu_bo_create(self->fd, 0, DRM_NPU_BO_PAGE_HUGE_FIRST, NULL));
	EXPECT_EQ(-EINVAL, npu_bo_create(self->fd, 4096, 3, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOMEM, npu_bo_create(self->fd, 1ull << 62, DRM_NPU_BO_PAGE_HUGE_FIRST, NULL));
	EXPECT_EQ(-ENOMEM, npu_bo_create(self->fd, ~0ull, DRM_NPU_BO_PAGE_NORMAL_ONLY, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info));
	EXPECT_EQ(ENOENT, errno);
	info.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, npu_gem_close(self->fd, 777));
}

TEST_F(bo, double_close_is_an_error_not_a_crash)
{
	struct drm_npu_bo_create c;

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	EXPECT_EQ(0, npu_gem_close(self->fd, c.handle));
	EXPECT_EQ(-EINVAL, npu_gem_close(self->fd, c.handle));
}

TEST_F(bo, exhaustion_fails_cleanly_and_frees_everything)
{
	uint32_t handles[1024];
	struct drm_npu_bo_create c = { 0 };
	int n = 0, ret = 0;

	while (n < 1024 && !(ret = npu_bo_create(self->fd, 4 * MiB, DRM_NPU_BO_PAGE_HUGE_ONLY, &c)))
		handles[n++] = c.handle;
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_LT(0, n);
	/* A failed create left nothing behind: a smaller one still fits. */
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	handles[n++] = c.handle;
	for (int i = 0; i < n; i++)
		ASSERT_EQ(0, npu_gem_close(self->fd, handles[i]));
	EXPECT_EQ(self->buffers_before, npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM));
}

TEST(contexts_have_separate_address_spaces)
{
	int a = npu_open(), b = npu_open();
	struct drm_npu_bo_create ca, cb;
	struct drm_npu_bo_info info;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, npu_bo_create(a, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &ca));
	ASSERT_EQ(0, npu_bo_create(b, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &cb));
	/* Each context starts its own VA space from the same base. */
	EXPECT_EQ(ca.device_va, cb.device_va);
	/* Handles are per file. */
	EXPECT_EQ(-ENOENT, npu_bo_info(b, ca.handle + 100, &info));
	close(a);
	close(b);
}

/*
 * A buffer whose mapping fails on any of its page-table allocations
 * (debugfs "fail-pt-alloc <n>") fails -ENOMEM with nothing of it left,
 * and the next one maps every page. Tables are made before any leaf is
 * written, so a failure leaves no translation the device could have
 * cached on memory that goes back.
 */
TEST(a_map_failing_on_any_table_allocation_leaves_nothing)
{
	const uint64_t size = 6 * MiB;	/* 3 or 4 leaf tables, and directories */
	uint64_t caps = 0;
	int failed = 0, n, probe = npu_open();

	ASSERT_LE(0, probe);
	ASSERT_EQ(0, npu_get_param(probe, DRM_NPU_PARAM_DEVICE_CAPS, &caps));
	close(probe);
	if (!(caps & DRM_NPU_CAP_FAULT_INJECTION) || npu_inject("clear"))
		SKIP(return, "no fault injection (npu-fwsim --fault-injection, debugfs)");
	for (n = 1; n < 16; n++) {
		struct drm_npu_bo_create c;
		uint64_t buffers, seq;
		struct drm_npu_task t;
		char cmd[32];
		uint32_t *p;
		int fd = npu_open(), ret;

		ASSERT_LE(0, fd);
		buffers = npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM);
		snprintf(cmd, sizeof(cmd), "fail-pt-alloc %d", n);
		ASSERT_EQ(0, npu_inject(cmd));
		ret = npu_bo_create(fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c);
		ASSERT_EQ(0, npu_inject("clear"));
		if (ret) {
			EXPECT_EQ(-ENOMEM, ret) TH_LOG("table %d", n);
			EXPECT_EQ(buffers, npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM))
				TH_LOG("table %d", n);
			failed++;
			/* The same buffer now maps; its tables are partly there already. */
			ASSERT_EQ(0, npu_bo_create(fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
		}
		/* Every page mapped: the device fills it all, the CPU reads it back. */
		p = npu_bo_mmap(fd, c.handle, size);
		ASSERT_NE(MAP_FAILED, p);
		t = npu_task_fill(c.device_va, size, 0x5a5a0000u + n);
		ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
		ASSERT_EQ(0, npu_wait(fd, seq, 20000000000ll, NULL)) TH_LOG("table %d", n);
		for (uint64_t w = 0; w < size / 4; w += 1024) {
			ASSERT_EQ(0x5a5a0000u + n, p[w]) TH_LOG("table %d, page %llu", n,
							       (unsigned long long)(w / 1024));
		}
		munmap(p, size);
		close(fd);
		if (!ret)
			break;		/* n is past the tables it needs */
	}
	EXPECT_LE(3, failed);
	EXPECT_EQ(failed + 1, n);
}

/*
 * A buffer closed once its last batch finished is room for the next:
 * the driver lets go of what a batch held when the scheduler frees it,
 * after WAIT has returned, and an allocation that finds no room waits
 * for that. The injection has the free run 300 ms late; without the
 * wait, the second buffer (more than half of what is free) fails with
 * ENOMEM, the first one's HBM still held. The same race made a CI run
 * fail (npu_misuse_test, VA held as holes by a finished batch).
 */
TEST(a_buffer_closed_after_its_batch_finished_is_room_for_the_next)
{
	uint64_t caps = 0, hbm = 0, reserved = 0, size, seq;
	struct drm_npu_bo_create a, b;
	struct drm_npu_task t;
	int fd = npu_open(), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_DEVICE_CAPS, &caps));
	if (!(caps & DRM_NPU_CAP_FAULT_INJECTION) || npu_inject("clear"))
		SKIP(return, "no fault injection (npu-fwsim --fault-injection, debugfs)");
	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_HBM_SIZE, &hbm));
	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_HBM_RESERVED, &reserved));
	/* Three fifths of what is free: one fits with its tables, two do not. */
	size = (hbm - reserved - npu_hbm_used(fd)) / 5 * 3 & ~(4 * MiB - 1);
	ASSERT_EQ(0, npu_bo_create(fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &a));
	ASSERT_EQ(0, npu_inject("hold-release 300"));
	t = npu_task_fill(a.device_va, size, 0x17);
	ASSERT_EQ(0, npu_submit(fd, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait(fd, seq, 20000000000ll, NULL));
	ASSERT_EQ(0, npu_gem_close(fd, a.handle));
	ret = npu_bo_create(fd, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b);
	ASSERT_EQ(0, npu_inject("clear"));
	ASSERT_EQ(0, ret) TH_LOG("%llu MiB, of %llu MiB HBM, after the first one's batch",
				 (unsigned long long)(size / MiB), (unsigned long long)(hbm / MiB));
	/* And it is a new buffer: it reads zero, not the first one's fill. */
	uint32_t *p = npu_bo_mmap(fd, b.handle, 4096);

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0u, p[0]);
	munmap(p, 4096);
	close(fd);
}

TEST_HARNESS_MAIN
