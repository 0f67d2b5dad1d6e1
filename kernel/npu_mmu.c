// SPDX-License-Identifier: GPL-2.0-only
/*
 * Device page tables (format in npu_fw_if.h).
 *
 * The driver owns the tables and writes them through BAR2; the device
 * only walks them. Tables are 4 KiB of HBM taken from the device
 * allocator (so buffers never land on them) and live until the context
 * goes away; an unmap only clears leaves and then has the device drop
 * its cached translations.
 *
 * Locking: every function here runs under ctx->lock.
 */
#include <drm/npu_accel.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_ipc.h"
#include "npu_mmu.h"

struct npu_pt_table {
	struct list_head link;
	struct drm_mm_node node;
};

static u64 __iomem *npu_pte(struct npu_ctx *ctx, u64 table, unsigned int index)
{
	return (u64 __iomem *)(ctx->ndev->hbm + table) + index;
}

static int npu_pt_alloc(struct npu_ctx *ctx, u64 *offset)
{
	struct npu_pt_table *t = kzalloc(sizeof(*t), GFP_KERNEL);
	int ret;

	if (!t)
		return -ENOMEM;
	ret = npu_hbm_alloc(ctx->ndev, ctx, NPU_MEM_REGION_PAGE_TABLES, &t->node,
			    NPU_PT_SIZE, NPU_PT_SIZE);
	if (ret) {
		kfree(t);
		return ret;
	}
	memset_io(ctx->ndev->hbm + t->node.start, 0, NPU_PT_SIZE);
	list_add(&t->link, &ctx->mmu.tables);
	*offset = t->node.start;
	return 0;
}

int npu_mmu_init(struct npu_ctx *ctx)
{
	INIT_LIST_HEAD(&ctx->mmu.tables);
	return npu_pt_alloc(ctx, &ctx->mmu.root);
}

void npu_mmu_fini(struct npu_ctx *ctx)
{
	struct npu_pt_table *t, *tmp;

	list_for_each_entry_safe(t, tmp, &ctx->mmu.tables, link) {
		npu_hbm_free(ctx->ndev, ctx, NPU_MEM_REGION_PAGE_TABLES, &t->node);
		list_del(&t->link);
		kfree(t);
	}
}

/*
 * The table that holds the leaf for `va` (level 3 for 4 KiB pages, level
 * 2 for 2 MiB ones), creating tables on the way when `create` is set.
 * Returns 0 with *table set, or -ENOENT / -ENOMEM.
 */
static int npu_mmu_walk(struct npu_ctx *ctx, u64 va, int leaf_level,
			bool create, u64 *table)
{
	u64 t = ctx->mmu.root;
	int level, ret;

	for (level = 0; level < leaf_level; level++) {
		u64 __iomem *pte = npu_pte(ctx, t, NPU_PT_INDEX(va, level));
		u64 e = readq(pte);

		if (!(e & NPU_PTE_VALID)) {
			if (!create)
				return -ENOENT;
			ret = npu_pt_alloc(ctx, &e);
			if (ret)
				return ret;
			writeq(e | NPU_PTE_VALID, pte);
		}
		t = e & NPU_PTE_ADDR_MASK;
	}
	*table = t;
	return 0;
}

static int npu_leaf_level(u32 page_size)
{
	return page_size == NPU_PAGE_SIZE_2M ? 2 : 3;
}

int npu_mmu_map(struct npu_ctx *ctx, u64 va, u64 addr, u32 page_size, u64 flags)
{
	int level = npu_leaf_level(page_size);
	u64 table;
	int ret;

	ret = npu_mmu_walk(ctx, va, level, true, &table);
	if (ret)
		return ret;
	if (page_size == NPU_PAGE_SIZE_2M)
		flags |= NPU_PTE_HUGE;
	writeq((addr & NPU_PTE_ADDR_MASK) | flags | NPU_PTE_VALID,
	       npu_pte(ctx, table, NPU_PT_INDEX(va, level)));
	return 0;
}

void npu_mmu_unmap(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size)
{
	int level = npu_leaf_level(page_size);
	u64 end = va + size, table;

	for (; va < end; va += page_size) {
		if (!npu_mmu_walk(ctx, va, level, false, &table))
			writeq(0, npu_pte(ctx, table, NPU_PT_INDEX(va, level)));
	}
}

int npu_mmu_invalidate(struct npu_ctx *ctx)
{
	u64 args[4] = { ctx->id };
	int ret;

	ret = npu_ipc_send(ctx->ndev, NPU_FW_CMD_TLB_INVALIDATE, args, NULL);
	if (ret)
		npu_err(ctx->ndev, "TLB invalidation for context %u failed: %d\n",
			ctx->id, ret);
	return ret;
}
