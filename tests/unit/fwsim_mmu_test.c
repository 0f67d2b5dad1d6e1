// SPDX-License-Identifier: MIT
/*
 * The device MMU and memory commands of the firmware-sim core, in-process.
 * The test writes page tables into "HBM" in the format of npu_fw_if.h, as
 * npu.ko does, and checks what the device makes of them.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"

#define HBM_SIZE	(16ull << 20)
#define PT_POOL		(1ull << 20)	/* tables are carved from here up */
#define NPU_VA_TEST_BASE TEST_VA_BASE

FIXTURE(mmu) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	uint64_t root;
};

static void map(FIXTURE_DATA(mmu) *self, uint64_t root, uint64_t va,
		uint64_t addr, uint32_t page_size, uint64_t flags)
{
	pt_map(&self->pool, root, va, addr, page_size, flags);
}

static int xlate(FIXTURE_DATA(mmu) *self, uint32_t ctx, uint64_t root, uint64_t va,
		 enum npu_access access, uint8_t **ptr, uint64_t *avail)
{
	return npu_mmu_translate(&self->dev, ctx, root, va, access, ptr, avail);
}

FIXTURE_SETUP(mmu)
{
	struct npu_dev_config cfg;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	npu_dev_init(&self->dev, self->hbm, &cfg, NULL, NULL);
	self->pool.hbm = self->hbm;
	self->pool.next = PT_POOL;
	self->root = pt_alloc(&self->pool);
}

FIXTURE_TEARDOWN(mmu)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

TEST_F(mmu, small_page_translates)
{
	uint64_t va = NPU_VA_TEST_BASE + 0x5000, avail;
	uint8_t *p;

	map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 1, self->root, va + 0x123, NPU_ACCESS_WRITE, &p, &avail));
	EXPECT_EQ(self->hbm + 0x300123, p);
	EXPECT_EQ(4096 - 0x123, avail);
	/* The neighbouring page was never mapped. */
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va + 4096, NPU_ACCESS_READ, &p, &avail));
}

TEST_F(mmu, huge_page_translates)
{
	uint64_t va = NPU_VA_TEST_BASE + (6ull << 20), avail;
	uint8_t *p;

	map(self, self->root, va, 4ull << 20, 2u << 20, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 1, self->root, va + 0x1ffff0, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + (4ull << 20) + 0x1ffff0, p);
	EXPECT_EQ(16, avail);
}

TEST_F(mmu, read_only_page_refuses_writes)
{
	uint64_t va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	map(self, self->root, va, 0x300000, 4096, 0);
	EXPECT_EQ(0, xlate(self, 1, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va, NPU_ACCESS_WRITE, &p, &avail));
}

TEST_F(mmu, bad_entries_fault_instead_of_crashing)
{
	uint64_t avail, va = NPU_VA_TEST_BASE;
	uint8_t *p;

	/* Leaf into the firmware's reserved area. */
	map(self, self->root, va, 0x1000, 4096, NPU_PTE_WRITE);
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va, NPU_ACCESS_READ, &p, &avail));
	/* Leaf past the end of HBM. */
	map(self, self->root, va + 4096, HBM_SIZE, 4096, NPU_PTE_WRITE);
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va + 4096, NPU_ACCESS_READ, &p, &avail));
	/* A huge leaf whose 2 MiB run past the end. */
	map(self, self->root, va + (2ull << 20), HBM_SIZE - 4096, 2u << 20, 0);
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va + (2ull << 20), NPU_ACCESS_READ, &p, &avail));
	/* A root table outside HBM, and an address beyond 48 bits. */
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, HBM_SIZE + 4096, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, 1ull << 48, NPU_ACCESS_READ, &p, &avail));
}

/*
 * A table must lie whole inside HBM: one that starts in HBM but runs past
 * its end faults, even when the entry the walk would read is inside.
 * (Table pointers in entries are 4 KiB aligned; the root is not masked.)
 */
TEST_F(mmu, table_running_past_the_end_of_hbm_faults)
{
	uint64_t va = NPU_VA_TEST_BASE, avail, root = HBM_SIZE - NPU_PT_SIZE / 2;
	uint8_t *p;

	ASSERT_EQ(0, NPU_PT_INDEX(va, 0));	/* the entry read is at `root` itself */
	memset(self->hbm + root, 0, NPU_PT_SIZE / 2);
	map(self, root, va, 0x300000, 4096, NPU_PTE_WRITE);
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, root, va, NPU_ACCESS_READ, &p, &avail));
	/* The last whole table of HBM is fine. */
	root = HBM_SIZE - NPU_PT_SIZE;
	memset(self->hbm + root, 0, NPU_PT_SIZE);
	map(self, root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 2, root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x300000, p);
}

TEST_F(mmu, host_memory_through_sysmem_entries)
{
	static uint8_t host[64 << 10];
	uint64_t va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	map(self, self->root, va, 0x2000, 4096, NPU_PTE_WRITE | NPU_PTE_SYSMEM);
	/* No host memory attached yet: nothing to reach. */
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va, NPU_ACCESS_READ, &p, &avail));
	npu_dev_attach_host_mem(&self->dev, host, sizeof(host));
	npu_mmu_invalidate(&self->dev, 0);
	ASSERT_EQ(0, xlate(self, 1, self->root, va + 8, NPU_ACCESS_WRITE, &p, &avail));
	EXPECT_EQ(host + 0x2008, p);
	map(self, self->root, va + 4096, sizeof(host), 4096, NPU_PTE_SYSMEM);
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 1, self->root, va + 4096, NPU_ACCESS_READ, &p, &avail));
}

TEST_F(mmu, tlb_keeps_translations_until_invalidated)
{
	uint64_t va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 7, self->root, va, NPU_ACCESS_READ, &p, &avail));
	/* The host remaps without telling the device: it still sees the old page. */
	map(self, self->root, va, 0x400000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 7, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x300000, p);
	npu_mmu_invalidate(&self->dev, 8);	/* another context: no effect */
	ASSERT_EQ(0, xlate(self, 7, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x300000, p);
	npu_mmu_invalidate(&self->dev, 7);
	ASSERT_EQ(0, xlate(self, 7, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x400000, p);
}

/* Invalidating context 0 drops every context's translations. */
TEST_F(mmu, invalidating_context_zero_drops_every_context)
{
	uint64_t other = pt_alloc(&self->pool), va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	for (int how = 0; how < 2; how++) {
		map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
		map(self, other, va, 0x500000, 4096, NPU_PTE_WRITE);
		ASSERT_EQ(0, xlate(self, 1, self->root, va, NPU_ACCESS_READ, &p, &avail));
		ASSERT_EQ(0, xlate(self, 2, other, va, NPU_ACCESS_READ, &p, &avail));
		/* Both remapped, unknown to the device until it invalidates. */
		map(self, self->root, va, 0x400000, 4096, NPU_PTE_WRITE);
		map(self, other, va, 0x600000, 4096, NPU_PTE_WRITE);
		if (how) {
			ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 0, 0));
		} else {
			npu_mmu_invalidate(&self->dev, 0);
		}
		ASSERT_EQ(0, xlate(self, 1, self->root, va, NPU_ACCESS_READ, &p, &avail));
		EXPECT_EQ(self->hbm + 0x400000, p);
		ASSERT_EQ(0, xlate(self, 2, other, va, NPU_ACCESS_READ, &p, &avail));
		EXPECT_EQ(self->hbm + 0x600000, p);
	}
}

TEST_F(mmu, contexts_do_not_share_translations)
{
	uint64_t other = pt_alloc(&self->pool), va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 1, self->root, va, NPU_ACCESS_READ, &p, &avail));
	/* Context 2 never mapped va: the cached entry of context 1 is not its. */
	EXPECT_EQ(-NPU_FW_EFAULT, xlate(self, 2, other, va, NPU_ACCESS_READ, &p, &avail));
	map(self, other, va, 0x500000, 4096, 0);
	ASSERT_EQ(0, xlate(self, 2, other, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x500000, p);
}

TEST_F(mmu, scrub_zeroes_only_host_managed_memory)
{
	memset(self->hbm + 0x200000, 0xee, 8192);
	EXPECT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_SCRUB, 0x200000, 4096));
	EXPECT_EQ(0, self->hbm[0x200000]);
	EXPECT_EQ(0, self->hbm[0x200fff]);
	EXPECT_EQ(0xee, self->hbm[0x201000]);
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_SCRUB, 0, 4096));
	EXPECT_EQ(NPU_FW_MAGIC, self->dev.ctrl->magic);
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_SCRUB, HBM_SIZE - 4096, 8192));
	EXPECT_EQ(-NPU_FW_EINVAL, mbox_cmd(&self->dev, NPU_FW_CMD_SCRUB, 0x200000, ~0ull));
}

TEST_F(mmu, tlb_invalidate_command)
{
	uint64_t va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	map(self, self->root, va, 0x600000, 4096, NPU_PTE_WRITE);
	EXPECT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_TLB_INVALIDATE, 3, 0));
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x600000, p);
}

/* Post a TLB invalidation of `ctx` (struct npu_fw_tlb) and ring. */
static void tlb_post(struct npu_dev *dev, uint32_t ctx)
{
	struct npu_fw_tlb *t = &dev->ctrl->tlb;

	t->ctx[t->req % NPU_FW_TLB_RING] = ctx;
	__atomic_store_n(&t->req, t->req + 1, __ATOMIC_RELEASE);
	npu_dev_doorbell(dev, NPU_VEC_MBOX);
}

/*
 * Posted invalidations do what the mailbox command does, in order: done
 * counts them, failed the ones an injected failure made fail (TLB as it
 * was), and a hold keeps them pending until it is cleared.
 */
TEST_F(mmu, posted_invalidations_complete_in_order)
{
	struct npu_fw_tlb *t = &self->dev.ctrl->tlb;
	uint64_t va = NPU_VA_TEST_BASE, avail;
	uint8_t *p;

	self->dev.cfg.fault_injection = true;
	ASSERT_TRUE(self->dev.ctrl->caps & NPU_FW_CAP_TLB_POST);
	map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	map(self, self->root, va, 0x600000, 4096, NPU_PTE_WRITE);
	tlb_post(&self->dev, 3);
	EXPECT_EQ(1, t->done);
	EXPECT_EQ(0, t->failed);
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x600000, p);

	/* A failed one leaves the cached translation and says so. */
	map(self, self->root, va, 0x300000, 4096, NPU_PTE_WRITE);
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_INJECT, NPU_FW_INJECT_FAIL_INVALIDATE, 1));
	tlb_post(&self->dev, 3);
	EXPECT_EQ(2, t->done);
	EXPECT_EQ(1, t->failed);
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x600000, p);

	/* Held: nothing completes, and the mailbox still answers. */
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_INJECT, NPU_FW_INJECT_HOLD_INVALIDATE, 0));
	EXPECT_EQ(-NPU_FW_EINVAL,
		  mbox_cmd(&self->dev, NPU_FW_CMD_INJECT, NPU_FW_INJECT_HOLD_INVALIDATE, 1));
	tlb_post(&self->dev, 3);
	tlb_post(&self->dev, 0);
	EXPECT_EQ(2, t->done);
	EXPECT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_PING, 1, 0));
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x600000, p);
	ASSERT_EQ(0, mbox_cmd(&self->dev, NPU_FW_CMD_INJECT, NPU_FW_INJECT_NONE, 0));
	EXPECT_EQ(4, t->done);
	EXPECT_EQ(1, t->failed);
	ASSERT_EQ(0, xlate(self, 3, self->root, va, NPU_ACCESS_READ, &p, &avail));
	EXPECT_EQ(self->hbm + 0x300000, p);
}

TEST_HARNESS_MAIN
