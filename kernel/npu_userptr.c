// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host memory registered for device access (NPU_USERPTR).
 *
 * The pages are pinned for the long term and DMA-mapped as one sg_table;
 * the device sees them through page-table entries marked NPU_PTE_SYSMEM (and without
 * NPU_PTE_WRITE for read-only registrations). A registration is a buffer
 * object like any other: mapped per context, kept alive by work in
 * flight, released when its last reference goes.
 *
 * Locking: the owner's ctx->userptrs_lock protects its list of
 * registrations (to refuse overlaps); mapping one takes ctx->vm_lock.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_mmu.h"

static bool npu_userptr_overlaps(struct npu_ctx *ctx, struct mm_struct *mm,
				 u64 addr, u64 size)
{
	struct npu_userptr *u;

	lockdep_assert_held(&ctx->userptrs_lock);
	list_for_each_entry(u, &ctx->userptrs, link)
		if (u->mm == mm && addr < u->addr + (u->npages << PAGE_SHIFT) &&
		    u->addr < addr + size)
			return true;
	return false;
}

static enum dma_data_direction npu_userptr_dir(const struct npu_userptr *u)
{
	return u->read_only ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
}

/* Pin, account and DMA-map the range. Undone by npu_userptr_release(). */
static int npu_userptr_pin(struct npu_device *ndev, struct npu_userptr *u)
{
	unsigned int gup = FOLL_LONGTERM | (u->read_only ? 0 : FOLL_WRITE);
	struct device *dev = &ndev->pdev->dev;
	long pinned;
	int ret;

	/* The limit first: nothing is allocated for what may not be pinned. */
	ret = account_locked_vm(u->mm, u->npages, true);
	if (ret)
		return ret;
	ret = -ENOMEM;
	u->pages = kvcalloc(u->npages, sizeof(*u->pages), GFP_KERNEL_ACCOUNT);
	if (!u->pages)
		goto err_account;
	pinned = pin_user_pages_fast(u->addr, u->npages, gup, u->pages);
	if (pinned != u->npages) {
		if (pinned > 0)
			unpin_user_pages(u->pages, pinned);
		ret = pinned < 0 ? pinned : -EFAULT;
		goto err_pages;
	}
	ret = sg_alloc_table_from_pages(&u->sgt, u->pages, u->npages, 0,
					u->npages << PAGE_SHIFT, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto err_unpin;
	/*
	 * The same pages may be registered more than once (other files,
	 * other processes): mapped without the CPU sync, which DMA debugging
	 * takes for a conflict, and synced once for the device instead (as
	 * i915 maps its userptr pages).
	 */
	ret = dma_map_sgtable(dev, &u->sgt, npu_userptr_dir(u), DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		goto err_sgt;
	dma_sync_sgtable_for_device(dev, &u->sgt, npu_userptr_dir(u));
	return 0;

err_sgt:
	sg_free_table(&u->sgt);
err_unpin:
	unpin_user_pages(u->pages, u->npages);
err_pages:
	kvfree(u->pages);
	u->pages = NULL;
err_account:
	account_locked_vm(u->mm, u->npages, false);
	return ret;
}

/*
 * Under ctx->vm_lock: map the registration at `va`, page by page of its DMA
 * segments (an IOMMU may have merged them; each is whole pages).
 */
int npu_userptr_map_pages(struct npu_ctx *ctx, struct npu_userptr *u, u64 va)
{
	u64 flags = NPU_PTE_SYSMEM | (u->read_only ? 0 : NPU_PTE_WRITE), off = 0;
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	lockdep_assert_held(&ctx->vm_lock);
	ret = npu_mmu_reserve(ctx, va, (u64)u->npages << PAGE_SHIFT, PAGE_SIZE);
	if (ret)
		return ret;
	for_each_sgtable_dma_sg(&u->sgt, sg, i) {
		dma_addr_t addr = sg_dma_address(sg);
		u64 len;

		for (len = 0; len < sg_dma_len(sg); len += PAGE_SIZE, off += PAGE_SIZE)
			npu_mmu_map(ctx, va + off, addr + len, PAGE_SIZE, flags);
	}
	return 0;
}

/* Unmap, unpin and uncharge: the device can no longer reach the pages. */
static void npu_userptr_unpin(struct npu_device *ndev, struct npu_userptr *u)
{
	dma_sync_sgtable_for_cpu(&ndev->pdev->dev, &u->sgt, npu_userptr_dir(u));
	dma_unmap_sgtable(&ndev->pdev->dev, &u->sgt, npu_userptr_dir(u), DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(&u->sgt);
	/* The device may have written any page. */
	unpin_user_pages_dirty_lock(u->pages, u->npages, !u->read_only);
	account_locked_vm(u->mm, u->npages, false);
	mmdrop(u->mm);
	kvfree(u->pages);
	kfree(u);
}

/*
 * From the buffer's free callback. While the device is wedged, stale
 * translations may still reach the pages: they stay pinned and mapped
 * until a reset has succeeded (npu_userptr_release_quarantine()).
 */
void npu_userptr_release(struct npu_bo *bo)
{
	struct npu_device *ndev = bo->owner->ndev;
	struct npu_userptr *u = bo->user;
	bool keep;

	mutex_lock(&bo->owner->userptrs_lock);
	list_del(&u->link);
	mutex_unlock(&bo->owner->userptrs_lock);
	npu_mem_account(ndev, bo->owner, DRM_NPU_MEM_REGION_HOST,
			-(s64)(u->npages << PAGE_SHIFT));

	mutex_lock(&ndev->hbm_lock);
	keep = ndev->wedged;
	if (keep)
		list_add_tail(&u->link, &ndev->userptr_quarantine);
	mutex_unlock(&ndev->hbm_lock);
	if (!keep)
		npu_userptr_unpin(ndev, u);
}

void npu_userptr_release_quarantine(struct npu_device *ndev)
{
	struct npu_userptr *u, *tmp;
	LIST_HEAD(list);

	mutex_lock(&ndev->hbm_lock);
	list_splice_init(&ndev->userptr_quarantine, &list);
	mutex_unlock(&ndev->hbm_lock);
	list_for_each_entry_safe(u, tmp, &list, link)
		npu_userptr_unpin(ndev, u);
}

static int npu_userptr_create(struct drm_device *drm, struct drm_npu_userptr *args,
			      struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_userptr *u;
	struct npu_bo *bo;
	u32 handle;
	u64 va;
	int ret, idx;

	if (args->flags & ~DRM_NPU_USERPTR_READ_ONLY || args->handle || args->device_va ||
	    !args->addr || !args->size || !PAGE_ALIGNED(args->addr) ||
	    !PAGE_ALIGNED(args->size) || args->addr + args->size < args->addr)
		return -EINVAL;
	/*
	 * More than the machine's memory can never be pinned (and a CAP_IPC_LOCK
	 * caller has no rlimit to stop it): refuse before sizing anything by it.
	 */
	if (args->size >> PAGE_SHIFT > totalram_pages())
		return -ENOMEM;
	if (!access_ok(u64_to_user_ptr(args->addr), args->size))
		return -EFAULT;

	u = kzalloc(sizeof(*u), GFP_KERNEL);
	bo = npu_bo_alloc(ctx);
	if (!u || !bo) {
		ret = -ENOMEM;
		goto err_free;
	}
	u->addr = args->addr;
	u->npages = args->size >> PAGE_SHIFT;
	u->read_only = args->flags & DRM_NPU_USERPTR_READ_ONLY;
	u->mm = current->mm;
	mmgrab(u->mm);

	mutex_lock(&ctx->userptrs_lock);
	if (npu_userptr_overlaps(ctx, u->mm, args->addr, args->size)) {
		mutex_unlock(&ctx->userptrs_lock);
		ret = -EEXIST;
		goto err_mm;
	}
	/* Claim the range now, so a racing registration sees it. */
	list_add(&u->link, &ctx->userptrs);
	mutex_unlock(&ctx->userptrs_lock);

	/*
	 * Outside the device's section: faulting the pages in can wait on
	 * userspace (userfaultfd, FUSE), and unbinding must not.
	 */
	ret = npu_userptr_pin(ndev, u);
	if (ret)
		goto err_unlist;
	npu_mem_account(ndev, ctx, DRM_NPU_MEM_REGION_HOST, args->size);

	/* From here on the free callback undoes whatever was done. */
	bo->user = u;
	bo->flags = args->flags;
	bo->page_size = PAGE_SIZE;
	npu_bo_init_object(bo, args->size);
	if (!drm_dev_enter(drm, &idx)) {
		drm_gem_object_put(&bo->base);
		return -ENODEV;
	}
	ret = npu_bo_handle_create(file, bo, &handle, &va);
	if (!ret) {
		args->handle = handle;
		args->device_va = va;
	}
	drm_dev_exit(idx);
	return ret;

err_unlist:
	mutex_lock(&ctx->userptrs_lock);
	list_del(&u->link);
	mutex_unlock(&ctx->userptrs_lock);
err_mm:
	mmdrop(u->mm);
err_free:
	kfree(u);
	if (bo)
		npu_bo_discard(bo);
	return ret;
}

int npu_ioctl_userptr(struct drm_device *drm, void *data, struct drm_file *file)
{
	int ret = npu_userptr_create(drm, data, file);

	/*
	 * No room in VA, or the range still registered by a buffer closed
	 * while a batch held it: maybe only until finished batches let go.
	 */
	if ((ret == -ENOMEM || ret == -EEXIST) && npu_ctx_await_retired(file->driver_priv))
		ret = npu_userptr_create(drm, data, file);
	return ret;
}
