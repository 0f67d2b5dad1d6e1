// SPDX-License-Identifier: GPL-2.0-only
/*
 * Host memory registered for device access (NPU_USERPTR).
 *
 * The pages are pinned for the long term and DMA-mapped; the device sees
 * them through page-table entries marked NPU_PTE_SYSMEM (and without
 * NPU_PTE_WRITE for read-only registrations). A registration is a buffer
 * object like any other: mapped per context, kept alive by work in
 * flight, released when its last reference goes.
 *
 * Locking: the owner's ctx->lock protects its list of registrations (to
 * refuse overlaps).
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_gem.h"

static bool npu_userptr_overlaps(struct npu_ctx *ctx, struct mm_struct *mm,
				 u64 addr, u64 size)
{
	struct npu_userptr *u;

	list_for_each_entry(u, &ctx->userptrs, link)
		if (u->mm == mm && addr < u->addr + (u->npages << PAGE_SHIFT) &&
		    u->addr < addr + size)
			return true;
	return false;
}

static void npu_userptr_unmap_dma(struct device *dev, struct npu_userptr *u,
				  unsigned long n)
{
	enum dma_data_direction dir = u->read_only ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;

	while (n--)
		dma_unmap_page(dev, u->dma[n], PAGE_SIZE, dir);
}

/* Pin, account and DMA-map the range. Undone by npu_userptr_release(). */
static int npu_userptr_pin(struct npu_device *ndev, struct npu_userptr *u)
{
	enum dma_data_direction dir = u->read_only ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
	unsigned int gup = FOLL_LONGTERM | (u->read_only ? 0 : FOLL_WRITE);
	struct device *dev = &ndev->pdev->dev;
	unsigned long i;
	long pinned;
	int ret;

	/* The limit first: nothing is allocated for what may not be pinned. */
	ret = account_locked_vm(u->mm, u->npages, true);
	if (ret)
		return ret;
	ret = -ENOMEM;
	u->pages = kvcalloc(u->npages, sizeof(*u->pages), GFP_KERNEL_ACCOUNT);
	u->dma = kvcalloc(u->npages, sizeof(*u->dma), GFP_KERNEL_ACCOUNT);
	if (!u->pages || !u->dma)
		goto err_account;
	pinned = pin_user_pages_fast(u->addr, u->npages, gup, u->pages);
	if (pinned != u->npages) {
		if (pinned > 0)
			unpin_user_pages(u->pages, pinned);
		ret = pinned < 0 ? pinned : -EFAULT;
		goto err_account;
	}
	for (i = 0; i < u->npages; i++) {
		u->dma[i] = dma_map_page(dev, u->pages[i], 0, PAGE_SIZE, dir);
		if (dma_mapping_error(dev, u->dma[i])) {
			npu_userptr_unmap_dma(dev, u, i);
			unpin_user_pages(u->pages, u->npages);
			goto err_account;
		}
	}
	return 0;

err_account:
	account_locked_vm(u->mm, u->npages, false);
	return ret;
}

/* From the buffer's free callback. */
void npu_userptr_release(struct npu_bo *bo)
{
	struct npu_device *ndev = bo->owner->ndev;
	struct npu_userptr *u = bo->user;

	mutex_lock(&bo->owner->lock);
	list_del(&u->link);
	mutex_unlock(&bo->owner->lock);

	npu_userptr_unmap_dma(&ndev->pdev->dev, u, u->npages);
	/* The device may have written any page. */
	unpin_user_pages_dirty_lock(u->pages, u->npages, !u->read_only);
	account_locked_vm(u->mm, u->npages, false);
	npu_mem_account(ndev, bo->owner, NPU_MEM_REGION_HOST,
			-(s64)(u->npages << PAGE_SHIFT));
	mmdrop(u->mm);
	kvfree(u->dma);
	kvfree(u->pages);
	kfree(u);
}

int npu_ioctl_userptr(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_userptr *args = data;
	struct npu_userptr *u;
	struct npu_bo *bo;
	u32 handle;
	u64 va;
	int ret, idx;

	if (args->flags & ~NPU_USERPTR_READ_ONLY || args->handle || args->device_va ||
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
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	u = kzalloc(sizeof(*u), GFP_KERNEL);
	bo = npu_bo_alloc(ctx);
	if (!u || !bo) {
		ret = -ENOMEM;
		goto err_free;
	}
	u->addr = args->addr;
	u->npages = args->size >> PAGE_SHIFT;
	u->read_only = args->flags & NPU_USERPTR_READ_ONLY;
	u->mm = current->mm;
	mmgrab(u->mm);

	mutex_lock(&ctx->lock);
	if (npu_userptr_overlaps(ctx, u->mm, args->addr, args->size)) {
		mutex_unlock(&ctx->lock);
		ret = -EEXIST;
		goto err_mm;
	}
	/* Claim the range now, so a racing registration sees it. */
	list_add(&u->link, &ctx->userptrs);
	mutex_unlock(&ctx->lock);

	ret = npu_userptr_pin(ndev, u);
	if (ret)
		goto err_unlist;
	npu_mem_account(ndev, ctx, NPU_MEM_REGION_HOST, args->size);

	/* From here on the free callback undoes whatever was done. */
	bo->user = u;
	bo->flags = args->flags;
	bo->page_size = PAGE_SIZE;
	npu_bo_init_object(bo, args->size);
	ret = npu_bo_handle_create(file, bo, &handle, &va);
	if (!ret) {
		args->handle = handle;
		args->device_va = va;
	}
	drm_dev_exit(idx);
	return ret;

err_unlist:
	mutex_lock(&ctx->lock);
	list_del(&u->link);
	mutex_unlock(&ctx->lock);
	kvfree(u->dma);
	kvfree(u->pages);
err_mm:
	mmdrop(u->mm);
err_free:
	kfree(u);
	if (bo)
		npu_bo_discard(bo);
	drm_dev_exit(idx);
	return ret;
}
