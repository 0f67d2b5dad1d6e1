// SPDX-License-Identifier: GPL-2.0-only
/*
 * Contexts: one per open file.
 *
 * Locking, one lock per concern, none held while waiting for the device:
 *
 * - ctx->vm_lock: the VA allocators (mappings and the holes holders keep,
 *   npu_hold.c), the page tables, and the holds a batch or list builds
 *   (which look ranges up). Memory is allocated under it; it is taken
 *   inside bo->maps_lock and may take ndev->hbm_lock (page tables), the
 *   TLB ring's lock (an invalidation is posted under it and waited for
 *   after it is dropped: npu_mmu_unmap_forget()) and the syncs' and
 *   lists' xarray locks (a holder's lookups).
 * - ctx->queues_lock: the queue table. A queue is started under it
 *   (npu_queue.c), so it may take the mailbox lock; it is never held with
 *   vm_lock.
 * - the xarrays' own locks: the events and notifies the context holds
 *   (npu_sync.c) and its task lists (npu_list.c), with their counts, so a
 *   quota is checked and consumed in one section.
 * - ctx->userptrs_lock: the list of registrations, to refuse overlaps
 *   (a mutex: the list is as long as the pages the caller may pin).
 * - ctx->multi_lock: SUBMIT_MULTI's, around the queues' submit locks it
 *   takes (npu_multi.c).
 *
 * What the device sleeps on is in design.rst, "Locking".
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/idr.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_list.h"
#include "npu_queue.h"
#include "npu_recovery.h"
#include "npu_sync.h"

static void npu_ctx_fini_device(struct drm_device *drm, void *arg)
{
	ida_destroy(&to_npu_device(drm)->ctx_ida);
}

int npu_ctx_init_device(struct npu_device *ndev)
{
	ida_init(&ndev->ctx_ida);
	return drmm_add_action_or_reset(&ndev->drm, npu_ctx_fini_device, NULL);
}

int npu_ctx_open(struct drm_device *drm, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx;
	int ret, idx;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx) {
		ret = -ENOMEM;
		goto out_exit;
	}
	ret = ida_alloc_range(&ndev->ctx_ida, 1, NPU_CTX_MAX, GFP_KERNEL);
	if (ret < 0)
		goto out_free;
	ctx->id = ret;
	kref_init(&ctx->ref);
	ctx->ndev = ndev;
	mutex_init(&ctx->vm_lock);
	mutex_init(&ctx->queues_lock);
	mutex_init(&ctx->multi_lock);
	mutex_init(&ctx->userptrs_lock);
	INIT_LIST_HEAD(&ctx->userptrs);
	init_waitqueue_head(&ctx->retire_wq);
	xa_init(&ctx->syncs);
	xa_init_flags(&ctx->lists, XA_FLAGS_ALLOC1);
	drm_mm_init(&ctx->va_mm, DRM_NPU_VA_BASE, DRM_NPU_VA_END - DRM_NPU_VA_BASE);
	drm_mm_init(&ctx->kva_mm, NPU_KVA_BASE, NPU_KVA_SIZE);

	mutex_lock(&ctx->vm_lock);
	ret = npu_mmu_init(ctx);
	mutex_unlock(&ctx->vm_lock);
	if (ret)
		goto out_ida;

	file->driver_priv = ctx;
	drm_dev_get(drm);		/* the context's: it may outlive the file */
	drm_dev_exit(idx);
	return 0;

out_ida:
	drm_mm_takedown(&ctx->kva_mm);
	drm_mm_takedown(&ctx->va_mm);
	mutex_destroy(&ctx->multi_lock);
	mutex_destroy(&ctx->userptrs_lock);
	mutex_destroy(&ctx->queues_lock);
	mutex_destroy(&ctx->vm_lock);
	ida_free(&ndev->ctx_ida, ctx->id);
out_free:
	kfree(ctx);
out_exit:
	drm_dev_exit(idx);
	return ret;
}

/*
 * A batch gives back what it holds (its mappings, so closed buffers and
 * their HBM, and the VA holes of its ranges) when the scheduler frees
 * it, a little after WAIT has seen it finish. An allocation that found
 * no room waits for the context's finished batches to have done so: a
 * buffer closed once its last batch finished is room for the next one,
 * as a caller expects, however late the scheduler's free work runs.
 * Bounded, and killable, for a context that keeps finishing batches
 * from other threads. True if there was something to wait for and it is
 * done: worth another try.
 */
#define NPU_RETIRE_WAIT_MS	2000

bool npu_ctx_await_retired(struct npu_ctx *ctx)
{
	if (!atomic_read(&ctx->retiring))
		return false;
	return wait_event_killable_timeout(ctx->retire_wq, !atomic_read(&ctx->retiring),
					   msecs_to_jiffies(NPU_RETIRE_WAIT_MS)) > 0;
}

/* No queue is left: each holds the context (npu_queue.c). */
static void npu_ctx_free(struct npu_ctx *ctx)
{
	struct npu_device *ndev = ctx->ndev;
	int idx;

	/* The id is about to be reused: nothing cached may survive it. */
	if (drm_dev_enter(&ndev->drm, &idx)) {
		npu_mmu_invalidate(ctx);
		drm_dev_exit(idx);
	}
	npu_mmu_fini(ctx);
	drm_mm_takedown(&ctx->kva_mm);
	drm_mm_takedown(&ctx->va_mm);
	mutex_destroy(&ctx->multi_lock);
	mutex_destroy(&ctx->userptrs_lock);
	mutex_destroy(&ctx->queues_lock);
	mutex_destroy(&ctx->vm_lock);
	npu_ctx_id_free(ndev, ctx->id);
	kfree(ctx);
	drm_dev_put(&ndev->drm);	/* the context's */
}

static void npu_ctx_free_work(struct work_struct *work)
{
	npu_ctx_free(container_of(work, struct npu_ctx, free));
}

/*
 * The last reference may go anywhere a buffer's does, munmap included,
 * with mmap_lock held: the teardown (a mailbox round trip, every page
 * table) goes to the driver's workqueue, the context holding the device.
 */
static void npu_ctx_release(struct kref *ref)
{
	struct npu_ctx *ctx = container_of(ref, struct npu_ctx, ref);

	INIT_WORK(&ctx->free, npu_ctx_free_work);
	queue_work(npu_wq, &ctx->free);
}

/* The file's close, where nothing is held: at once. */
static void npu_ctx_release_now(struct kref *ref)
{
	npu_ctx_free(container_of(ref, struct npu_ctx, ref));
}

/*
 * The file is gone, and its work with it: every queue is stopped, its
 * batches fail as aborted, and its ring and hardware slot are freed now,
 * not when the last buffer mapped or shared from the context goes.
 */
void npu_ctx_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_queue *queues[NPU_CTX_QUEUES];
	int i;

	mutex_lock(&ctx->queues_lock);
	for (i = 0; i < NPU_CTX_QUEUES; i++) {
		queues[i] = ctx->queues[i];
		ctx->queues[i] = NULL;
	}
	mutex_unlock(&ctx->queues_lock);
	for (i = 0; i < NPU_CTX_QUEUES; i++)
		if (queues[i])
			npu_queue_destroy(queues[i]);
	/* Batches in flight hold the events, notifies and lists they use. */
	npu_tasklist_ctx_fini(ctx);
	npu_sync_ctx_fini(ctx);
	kref_put(&ctx->ref, npu_ctx_release_now);
	file->driver_priv = NULL;
}

struct npu_ctx *npu_ctx_get(struct npu_ctx *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

void npu_ctx_put(struct npu_ctx *ctx)
{
	kref_put(&ctx->ref, npu_ctx_release);
}
