// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects in device memory (HBM), their mappings into contexts,
 * and memory accounting.
 *
 * HBM past the firmware's reserved area is one drm_mm for the whole
 * device, shared by buffers and page tables. A buffer's HBM range is
 * aligned to its page size so it maps with 2 MiB entries where chosen.
 * Each context that holds a handle sees the buffer at its own device VA.
 * CPU access is a write-combined mapping of the buffer's part of BAR2.
 *
 * Lifetime: a mapping holds a GEM reference on its buffer, so a buffer
 * is freed only after its last mapping; a job holds the mappings it uses.
 *
 * Locking: ndev->hbm_lock protects hbm_mm, the quarantine and all usage
 * counters (device and context); nothing is taken under it.
 * bo->maps_lock protects bo->maps and may be held while taking ctx->vm_lock,
 * never the other way round: a mapping is never put under ctx->vm_lock.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "npu_compat.h"
#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_hold.h"
#include "npu_ipc.h"
#include "npu_mmu.h"
#include "npu_recovery.h"

/* HUGE_FIRST keeps small buffers on small pages: 2 MiB each would waste. */
#define NPU_HUGE_FIRST_MIN	(1ull << 20)

static void npu_gem_fini(struct drm_device *drm, void *arg)
{
	struct npu_device *ndev = to_npu_device(drm);

	/* Not the pinned pages: a device that never confirmed may still reach them. */
	npu_hbm_release_quarantine(ndev);
	drm_mm_takedown(&ndev->hbm_mm);
}

int npu_gem_init(struct npu_device *ndev)
{
	int ret;

	ret = drmm_mutex_init(&ndev->drm, &ndev->hbm_lock);
	if (ret)
		return ret;
	INIT_LIST_HEAD(&ndev->hbm_quarantine);
	INIT_LIST_HEAD(&ndev->userptr_quarantine);
	drm_mm_init(&ndev->hbm_mm, ndev->fw.fw_reserved,
		    ndev->fw.hbm_size - ndev->fw.fw_reserved);
	return drmm_add_action_or_reset(&ndev->drm, npu_gem_fini, NULL);
}

/* Under hbm_lock. */
static void npu_mem_charge(struct npu_device *ndev, struct npu_ctx *ctx,
			   int region, s64 delta)
{
	lockdep_assert_held(&ndev->hbm_lock);
	ndev->mem[region].current_bytes += delta;
	ndev->mem[region].peak_bytes = max(ndev->mem[region].peak_bytes,
					   ndev->mem[region].current_bytes);
	ctx->mem[region].current_bytes += delta;
	ctx->mem[region].peak_bytes = max(ctx->mem[region].peak_bytes,
					  ctx->mem[region].current_bytes);
}

void npu_mem_account(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		     s64 delta)
{
	mutex_lock(&ndev->hbm_lock);
	npu_mem_charge(ndev, ctx, region, delta);
	mutex_unlock(&ndev->hbm_lock);
}

int npu_hbm_alloc(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		  struct drm_mm_node *node, u64 size, u64 align)
{
	int ret;

	mutex_lock(&ndev->hbm_lock);
	ret = drm_mm_insert_node_generic(&ndev->hbm_mm, node, round_up(size, align),
					 align, 0, DRM_MM_INSERT_BEST);
	if (!ret)
		npu_mem_charge(ndev, ctx, region, node->size);
	mutex_unlock(&ndev->hbm_lock);
	return ret == -ENOSPC ? -ENOMEM : ret;
}

/*
 * Give HBM back. While the device is wedged (a TLB invalidation or a
 * queue stop failed, see npu_recovery.c) the device may still reach it
 * through stale state: it is quarantined instead, and released by the
 * reset that ends the wedge.
 */
void npu_hbm_free(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		  struct drm_mm_node *node)
{
	struct npu_hbm_quarantined *held = NULL;

	if (!drm_mm_node_allocated(node))
		return;
	mutex_lock(&ndev->hbm_lock);
	/* Allocated outside the lock, which is on the way to a fence signal. */
	while (ndev->wedged && !held) {
		mutex_unlock(&ndev->hbm_lock);
		held = kzalloc(sizeof(*held), GFP_KERNEL | __GFP_NOFAIL);
		mutex_lock(&ndev->hbm_lock);
	}
	npu_mem_charge(ndev, ctx, region, -(s64)node->size);
	if (ndev->wedged) {
		struct drm_mm *mm = node->mm;

		/*
		 * The quarantine takes the same range over. Under hbm_lock
		 * nothing can allocate it in between, so the reservation
		 * cannot fail (drm_mm_replace_node() is gone since 6.10).
		 */
		held->node.start = node->start;
		held->node.size = node->size;
		held->node.color = node->color;
		drm_mm_remove_node(node);
		if (!drm_mm_reserve_node(mm, &held->node)) {
			list_add_tail(&held->link, &ndev->hbm_quarantine);
			ndev->hbm_quarantined += held->node.size;
			held = NULL;
		}
	} else {
		drm_mm_remove_node(node);
	}
	mutex_unlock(&ndev->hbm_lock);
	kfree(held);
}

/* After a successful reset: nothing on the device can reach it any more. */
void npu_hbm_release_quarantine(struct npu_device *ndev)
{
	struct npu_hbm_quarantined *held, *tmp;

	mutex_lock(&ndev->hbm_lock);
	list_for_each_entry_safe(held, tmp, &ndev->hbm_quarantine, link) {
		drm_mm_remove_node(&held->node);
		list_del(&held->link);
		kfree(held);
	}
	ndev->hbm_quarantined = 0;
	mutex_unlock(&ndev->hbm_lock);
}

u64 npu_gem_hbm_used(struct npu_device *ndev)
{
	u64 used;

	mutex_lock(&ndev->hbm_lock);
	used = ndev->mem[DRM_NPU_MEM_REGION_HBM].current_bytes +
	       ndev->mem[DRM_NPU_MEM_REGION_PAGE_TABLES].current_bytes;
	mutex_unlock(&ndev->hbm_lock);
	return used;
}

/* Place the buffer in HBM by policy; sets bo->page_size. */
static int npu_bo_place(struct npu_device *ndev, struct npu_ctx *ctx,
			struct npu_bo *bo, u64 size, u32 policy)
{
	bool huge = policy == DRM_NPU_BO_PAGE_HUGE_ONLY ||
		    (policy == DRM_NPU_BO_PAGE_HUGE_FIRST && size > NPU_HUGE_FIRST_MIN);
	int ret;

	if (huge) {
		ret = npu_hbm_alloc(ndev, ctx, DRM_NPU_MEM_REGION_HBM, &bo->hbm, size,
				    DRM_NPU_PAGE_SIZE_2M);
		if (!ret || policy == DRM_NPU_BO_PAGE_HUGE_ONLY) {
			bo->page_size = DRM_NPU_PAGE_SIZE_2M;
			return ret;
		}
	}
	bo->page_size = DRM_NPU_PAGE_SIZE_4K;
	return npu_hbm_alloc(ndev, ctx, DRM_NPU_MEM_REGION_HBM, &bo->hbm, size,
			     DRM_NPU_PAGE_SIZE_4K);
}

/* Under bo->maps_lock. */
static struct npu_bo_map *npu_bo_find_map(struct npu_bo *bo, struct npu_ctx *ctx)
{
	struct npu_bo_map *map;

	lockdep_assert_held(&bo->maps_lock);
	list_for_each_entry(map, &bo->maps, link)
		if (map->ctx == ctx)
			return map;
	return NULL;
}

/* Under ctx->vm_lock: write the page tables for the buffer at `va`. */
static int npu_bo_map_pages(struct npu_ctx *ctx, struct npu_bo *bo, u64 va)
{
	u64 off;
	int ret;

	lockdep_assert_held(&ctx->vm_lock);
	if (bo->user)
		return npu_userptr_map_pages(ctx, bo->user, va);
	ret = npu_mmu_reserve(ctx, va, bo->base.size, bo->page_size);
	if (ret)
		return ret;
	for (off = 0; off < bo->base.size; off += bo->page_size)
		npu_mmu_map(ctx, va + off, bo->hbm.start + off, bo->page_size, NPU_PTE_WRITE);
	return 0;
}

static int npu_bo_map_create(struct npu_bo *bo, struct npu_ctx *ctx)
{
	struct npu_bo_map *map;
	unsigned int hold;
	int ret;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	mutex_lock(&ctx->vm_lock);
	ret = drm_mm_insert_node_generic(&ctx->va_mm, &map->va, bo->base.size,
					 bo->page_size, 0, DRM_MM_INSERT_BEST);
	if (ret) {
		ret = ret == -ENOSPC ? -ENOMEM : ret;
		goto out_unlock;
	}
	ret = npu_bo_map_pages(ctx, bo, map->va.start);
	if (ret) {
		drm_mm_remove_node(&map->va);
		goto out_unlock;
	}
	/* Fault injection: a map as slow as a huge one over a slow bus. */
	hold = READ_ONCE(ctx->ndev->inject_hold_map_ms);
	if (hold)
		msleep(hold);
	mutex_unlock(&ctx->vm_lock);

	kref_init(&map->ref);
	drm_gem_object_get(&bo->base);
	if (ctx == bo->owner && !bo->first_va)
		bo->first_va = map->va.start;
	map->bo = bo;
	map->ctx = npu_ctx_get(ctx);
	list_add(&map->link, &bo->maps);
	return 0;

out_unlock:
	mutex_unlock(&ctx->vm_lock);
	kfree(map);
	return ret;
}

/* kref release, entered with bo->maps_lock held (kref_put_mutex). */
static void npu_bo_map_release(struct kref *ref)
{
	struct npu_bo_map *map = container_of(ref, struct npu_bo_map, ref);
	struct npu_bo *bo = map->bo;
	struct npu_ctx *ctx = map->ctx;

	list_del(&map->link);
	mutex_unlock(&bo->maps_lock);

	/* Forgotten by the device before the range or the memory is reused. */
	npu_mmu_unmap_forget(ctx, map->va.start, map->va.size, bo->page_size);
	mutex_lock(&ctx->vm_lock);
	npu_va_hand_over(ctx, &map->va, map->heir);
	mutex_unlock(&ctx->vm_lock);
	npu_ctx_put(ctx);
	kfree(map);
	drm_gem_object_put(&bo->base);
}

void npu_bo_map_put(struct npu_bo_map *map)
{
	kref_put_mutex(&map->ref, npu_bo_map_release, &map->bo->maps_lock);
}

/* Drop a reference if it is not the last; false (and nothing) if it is. */
bool npu_bo_map_put_not_last(struct npu_bo_map *map)
{
	return refcount_dec_not_one(&map->ref.refcount);
}

static int npu_bo_open(struct drm_gem_object *obj, struct drm_file *file)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_bo_map *map;
	int ret = 0, idx;

	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
	mutex_lock(&bo->maps_lock);
	map = npu_bo_find_map(bo, ctx);
	if (map)
		kref_get(&map->ref);
	else
		ret = npu_bo_map_create(bo, ctx);
	mutex_unlock(&bo->maps_lock);
	drm_dev_exit(idx);
	return ret;
}

static void npu_bo_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_bo_map *map;

	mutex_lock(&bo->maps_lock);
	map = npu_bo_find_map(bo, file->driver_priv);
	mutex_unlock(&bo->maps_lock);
	/* The handle being closed holds a reference: map cannot be NULL. */
	if (!WARN_ON(!map))
		npu_bo_map_put(map);
}

static void npu_bo_free(struct drm_gem_object *obj)
{
	struct npu_bo *bo = to_npu_bo(obj);

	WARN_ON(!list_empty(&bo->maps));
	if (bo->user)
		npu_userptr_release(bo);
	npu_hbm_free(to_npu_device(obj->dev), bo->owner, DRM_NPU_MEM_REGION_HBM, &bo->hbm);
	npu_ctx_put(bo->owner);
	mutex_destroy(&bo->maps_lock);
	drm_gem_object_release(obj);
	kfree(bo);
}

#ifdef HAVE_DRM_GEM_OBJECT_STATUS
/* For drm_show_memory_stats(): device memory and pinned pages stay put. */
static enum drm_gem_object_status npu_bo_status(struct drm_gem_object *obj)
{
	return DRM_GEM_OBJECT_RESIDENT;
}
#endif

static const struct drm_gem_object_funcs npu_bo_funcs = {
#ifdef HAVE_DRM_GEM_OBJECT_STATUS
	.status = npu_bo_status,
#endif
	.free = npu_bo_free,
	.open = npu_bo_open,
	.close = npu_bo_close,
	.mmap = npu_bo_mmap,
	.vm_ops = &npu_bo_vm_ops,
};

/*
 * A buffer object owned by `ctx`, not yet a GEM object: the caller gives
 * it memory, then npu_bo_init_object(). Before that, npu_bo_discard()
 * undoes it; after, drm_gem_object_put() and the free callback do.
 */
struct npu_bo *npu_bo_alloc(struct npu_ctx *ctx)
{
	struct npu_bo *bo = kzalloc(sizeof(*bo), GFP_KERNEL);

	if (!bo)
		return NULL;
	bo->owner = npu_ctx_get(ctx);
	mutex_init(&bo->maps_lock);
	INIT_LIST_HEAD(&bo->maps);
	bo->base.funcs = &npu_bo_funcs;
	return bo;
}

void npu_bo_init_object(struct npu_bo *bo, u64 size)
{
	drm_gem_private_object_init(&bo->owner->ndev->drm, &bo->base, size);
}

void npu_bo_discard(struct npu_bo *bo)
{
	npu_ctx_put(bo->owner);
	mutex_destroy(&bo->maps_lock);
	kfree(bo);
}

/* The VA of `bo` in `ctx`, or 0 if it has none there. */
static u64 npu_bo_va(struct npu_bo *bo, struct npu_ctx *ctx)
{
	struct npu_bo_map *map;
	u64 va;

	mutex_lock(&bo->maps_lock);
	map = npu_bo_find_map(bo, ctx);
	va = map ? map->va.start : 0;
	mutex_unlock(&bo->maps_lock);
	return va;
}

/*
 * Give `file` a handle to a new buffer (mapping it into the file's
 * context) and drop the creation reference: on success the handle holds
 * the buffer, on failure the buffer is gone.
 */
int npu_bo_handle_create(struct drm_file *file, struct npu_bo *bo, u32 *handle,
			 u64 *device_va)
{
	int ret = drm_gem_handle_create(file, &bo->base, handle);
	unsigned int hold;

	if (!ret) {
		/* Fault injection: widen the window below. */
		hold = READ_ONCE(to_npu_device(bo->base.dev)->inject_hold_info_ms);
		if (hold)
			msleep(hold);
		/*
		 * Not looked up through the handle: another thread sharing the
		 * file may have closed it already, and the mapping with it. The
		 * answer is the one the call had, as if the close came after.
		 */
		*device_va = bo->first_va;
	}
	drm_gem_object_put(&bo->base);
	return ret;
}

static int npu_bo_create(struct drm_device *drm, struct drm_npu_bo_create *args,
			 struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	u64 scrub[4] = { 0 }, size, va;
	u32 handle, page_size;
	struct npu_bo *bo;
	int ret, idx;

	if (!args->size || args->flags ||
	    args->page_policy > DRM_NPU_BO_PAGE_NORMAL_ONLY)
		return -EINVAL;
	/* Also keeps the rounding below from overflowing. */
	if (args->size > ndev->fw.hbm_size - ndev->fw.fw_reserved)
		return -ENOMEM;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	bo = npu_bo_alloc(ctx);
	if (!bo) {
		ret = -ENOMEM;
		goto out_exit;
	}
	ret = npu_bo_place(ndev, ctx, bo, args->size, args->page_policy);
	if (ret) {
		npu_bo_discard(bo);
		goto out_exit;
	}
	/* From here on the free callback undoes whatever was done. */
	bo->flags = args->flags;
	npu_bo_init_object(bo, bo->hbm.size);

	/* No context may see what an earlier one left: the device scrubs. */
	scrub[0] = bo->hbm.start;
	scrub[1] = bo->hbm.size;
	ret = npu_ipc_send(ndev, NPU_FW_CMD_SCRUB, scrub, NULL);
	/* Unanswered, it may still run: over memory freed just below. */
	if (ret == -ETIMEDOUT)
		npu_device_wedge(ndev, "scrubbing a new buffer", ret);
	if (!ret)
		ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret) {
		drm_gem_object_put(&bo->base);
		goto out_exit;
	}
	/* Once the handle exists another thread may close it: read first. */
	page_size = bo->page_size;
	size = bo->base.size;
	ret = npu_bo_handle_create(file, bo, &handle, &va);
	if (!ret) {
		args->handle = handle;
		args->device_va = va;
		args->page_size = page_size;
		args->size = size;
	}
out_exit:
	drm_dev_exit(idx);
	return ret;
}

int npu_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	int ret = npu_bo_create(drm, data, file);

	/* No room in HBM or VA: maybe only until finished batches let go. */
	if (ret == -ENOMEM && npu_ctx_await_retired(file->driver_priv))
		ret = npu_bo_create(drm, data, file);
	return ret;
}

int npu_ioctl_bo_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_bo_info *args = data;
	struct drm_gem_object *obj;
	unsigned int hold;
	struct npu_bo *bo;

	if (args->flags)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	/* Fault injection: widen the window below. */
	hold = READ_ONCE(to_npu_device(drm)->inject_hold_info_ms);
	if (hold)
		msleep(hold);
	bo = to_npu_bo(obj);
	args->device_va = npu_bo_va(bo, file->driver_priv);
	/*
	 * Another thread of the file closed the handle since the lookup: its
	 * mapping in the context is gone. Gone it is, then, as if looked up
	 * after the close, not a buffer at VA 0 (the fuzzer saw that).
	 */
	if (!args->device_va) {
		drm_gem_object_put(obj);
		return -ENOENT;
	}
	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	args->size = obj->size;
	args->bo_flags = bo->flags;
	args->page_size = bo->page_size;
	drm_gem_object_put(obj);
	return 0;
}

int npu_ioctl_get_mem_usage(struct drm_device *drm, void *data,
			    struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_mem_usage *args = data;
	int r;

	if (args->flags || args->pad)
		return -EINVAL;
	mutex_lock(&ndev->hbm_lock);
	for (r = 0; r < DRM_NPU_MEM_REGION_COUNT; r++) {
		args->ctx_current[r] = ctx->mem[r].current_bytes;
		args->ctx_peak[r] = ctx->mem[r].peak_bytes;
		args->dev_current[r] = ndev->mem[r].current_bytes;
		args->dev_peak[r] = ndev->mem[r].peak_bytes;
	}
	mutex_unlock(&ndev->hbm_lock);
	return 0;
}
