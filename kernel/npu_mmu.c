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
 * A map is two passes: npu_mmu_reserve() makes every table the range
 * needs, which may fail, then npu_mmu_map() writes leaves, which cannot.
 * A map that failed half way would have to clear the leaves it wrote and
 * invalidate before its memory went back, since the device may already
 * have cached them (a job can name any address); with no leaf written
 * before the last allocation, there is nothing to take back.
 *
 * The driver never reads the tables back: HBM is memory the device (and
 * whatever runs on it) can write, so the walk follows a shadow of the
 * directory in kernel memory and only ever stores to HBM.
 *
 * Locking: every function here runs under ctx->vm_lock, except init, fini
 * and the invalidation of a context that nothing else can reach any more.
 */
#include <drm/drm_drv.h>
#include <drm/npu_accel.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_ipc.h"
#include "npu_mmu.h"
#include "npu_recovery.h"
#include "npu_trace.h"

struct npu_pt_table {
	struct list_head link;
	struct drm_mm_node node;
	/* Directory levels: the next-level tables, as the entries point. */
	struct npu_pt_table **next;
};

static u64 __iomem *npu_pte(struct npu_ctx *ctx, u64 table, unsigned int index)
{
	return (u64 __iomem *)(ctx->ndev->hbm + table) + index;
}

static void npu_pt_free(struct npu_ctx *ctx, struct npu_pt_table *t)
{
	npu_hbm_free(ctx->ndev, ctx, DRM_NPU_MEM_REGION_PAGE_TABLES, &t->node);
	kvfree(t->next);
	kfree(t);
}

/* A zeroed table of `level`, with its shadow if it is a directory. */
static struct npu_pt_table *npu_pt_alloc(struct npu_ctx *ctx, int level)
{
	struct npu_pt_table *t;
	int ret;

	/* debugfs npu_inject "fail-pt-alloc <n>": the n-th from now fails. */
	if (!atomic_dec_if_positive(&ctx->ndev->inject_fail_pt_alloc))
		return ERR_PTR(-ENOMEM);
	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return ERR_PTR(-ENOMEM);
	if (level < NPU_PT_LEVELS - 1) {
		t->next = kvcalloc(NPU_PT_ENTRIES, sizeof(*t->next), GFP_KERNEL_ACCOUNT);
		if (!t->next) {
			kfree(t);
			return ERR_PTR(-ENOMEM);
		}
	}
	ret = npu_hbm_alloc(ctx->ndev, ctx, DRM_NPU_MEM_REGION_PAGE_TABLES, &t->node,
			    NPU_PT_SIZE, NPU_PT_SIZE);
	if (ret) {
		npu_pt_free(ctx, t);
		return ERR_PTR(ret);
	}
	memset_io(ctx->ndev->hbm + t->node.start, 0, NPU_PT_SIZE);
	list_add(&t->link, &ctx->mmu.tables);
	return t;
}

int npu_mmu_init(struct npu_ctx *ctx)
{
	struct npu_pt_table *root;

	INIT_LIST_HEAD(&ctx->mmu.tables);
	root = npu_pt_alloc(ctx, 0);
	if (IS_ERR(root))
		return PTR_ERR(root);
	ctx->mmu.root_table = root;
	ctx->mmu.root = root->node.start;
	return 0;
}

void npu_mmu_fini(struct npu_ctx *ctx)
{
	struct npu_pt_table *t, *tmp;

	list_for_each_entry_safe(t, tmp, &ctx->mmu.tables, link) {
		list_del(&t->link);
		npu_pt_free(ctx, t);
	}
}

/*
 * The table that holds the leaf for `va` (level 3 for 4 KiB pages, level
 * 2 for 2 MiB ones), creating tables on the way when `create` is set.
 * Returns 0 with *table set, or -ENOENT / -ENOMEM.
 */
static int npu_mmu_walk(struct npu_ctx *ctx, u64 va, int leaf_level,
			bool create, struct npu_pt_table **table)
{
	struct npu_pt_table *t = ctx->mmu.root_table;
	int level;

	lockdep_assert_held(&ctx->vm_lock);
	for (level = 0; level < leaf_level; level++) {
		unsigned int i = NPU_PT_INDEX(va, level);
		struct npu_pt_table *next = t->next[i];

		if (!next) {
			if (!create)
				return -ENOENT;
			next = npu_pt_alloc(ctx, level + 1);
			if (IS_ERR(next))
				return PTR_ERR(next);
			t->next[i] = next;
			writeq(next->node.start | NPU_PTE_VALID,
			       npu_pte(ctx, t->node.start, i));
		}
		t = next;
	}
	*table = t;
	return 0;
}

static int npu_leaf_level(u32 page_size)
{
	return page_size == DRM_NPU_PAGE_SIZE_2M ? 2 : 3;
}

/*
 * Every table the leaves of [va, va + size) need, made now: then mapping
 * them cannot fail. One walk per leaf table the range touches.
 */
int npu_mmu_reserve(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size)
{
	int level = npu_leaf_level(page_size);
	u64 span = (u64)page_size * NPU_PT_ENTRIES, at;
	struct npu_pt_table *table;
	int ret;

	lockdep_assert_held(&ctx->vm_lock);
	for (at = round_down(va, span); at < va + size; at += span) {
		ret = npu_mmu_walk(ctx, at, level, true, &table);
		if (ret)
			return ret;
	}
	return 0;
}

/* A leaf in a range npu_mmu_reserve() prepared: cannot fail. */
void npu_mmu_map(struct npu_ctx *ctx, u64 va, u64 addr, u32 page_size, u64 flags)
{
	int level = npu_leaf_level(page_size);
	unsigned int i = NPU_PT_INDEX(va, level);
	struct npu_pt_table *table;

	lockdep_assert_held(&ctx->vm_lock);
	if (WARN_ON_ONCE(npu_mmu_walk(ctx, va, level, false, &table)))
		return;		/* not reserved: a driver bug; the device faults */
	if (page_size == DRM_NPU_PAGE_SIZE_2M) {
		flags |= NPU_PTE_HUGE;
		/* A leaf now: a table once used here stays, unreachable, until teardown. */
		table->next[i] = NULL;
	}
	writeq((addr & NPU_PTE_ADDR_MASK) | flags | NPU_PTE_VALID,
	       npu_pte(ctx, table->node.start, i));
}

void npu_mmu_unmap(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size)
{
	int level = npu_leaf_level(page_size);
	struct npu_pt_table *table;
	u64 end = va + size;

	lockdep_assert_held(&ctx->vm_lock);
	for (; va < end; va += page_size) {
		if (!npu_mmu_walk(ctx, va, level, false, &table))
			writeq(0, npu_pte(ctx, table->node.start, NPU_PT_INDEX(va, level)));
	}
}

/*
 * Have the device forget the context's translations: posted under
 * ctx->vm_lock with the unmap it follows, waited for after the lock is
 * dropped (npu_ipc.c), and the memory and range reused only after the
 * wait. A failure wedges the device: what the caller is about to free
 * is quarantined.
 */
void npu_mmu_invalidate_post(struct npu_ctx *ctx, struct npu_tlb_ticket *t)
{
	npu_tlb_post(ctx->ndev, ctx->id, t);
}

int npu_mmu_invalidate_wait(struct npu_ctx *ctx, const struct npu_tlb_ticket *t)
{
	int ret = npu_tlb_wait(ctx->ndev, t);

	trace_npu_tlb_invalidate(ctx->id, t->seq, ret);
	if (ret)
		npu_device_wedge(ctx->ndev, "TLB invalidation", ret);
	return ret;
}

/*
 * Clear a range's leaves and have the device forget them, with ctx->vm_lock
 * held only to post: the caller takes it again to give the range back,
 * and then the memory. A gone device caches nothing; one that failed to
 * forget is wedged, and what was mapped waits in quarantine for the
 * reset (npu_hbm_free()).
 */
void npu_mmu_unmap_forget(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size)
{
	struct npu_tlb_ticket t;
	int idx;

	mutex_lock(&ctx->vm_lock);
	if (!drm_dev_enter(&ctx->ndev->drm, &idx)) {
		mutex_unlock(&ctx->vm_lock);
		return;
	}
	npu_mmu_unmap(ctx, va, size, page_size);
	npu_mmu_invalidate_post(ctx, &t);
	mutex_unlock(&ctx->vm_lock);
	npu_mmu_invalidate_wait(ctx, &t);
	drm_dev_exit(idx);
}

int npu_mmu_invalidate(struct npu_ctx *ctx)
{
	struct npu_tlb_ticket t;

	npu_mmu_invalidate_post(ctx, &t);
	return npu_mmu_invalidate_wait(ctx, &t);
}
