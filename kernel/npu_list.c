// SPDX-License-Identifier: GPL-2.0-only
/*
 * Task lists (uapi: DRM_NPU_TASKLIST_CREATE; device: "Task lists" in
 * Documentation/firmware-interface.rst). Everything a list says is
 * checked here once, at creation, so running it costs a ring entry and
 * the I/O table's check, whatever its length.
 *
 * A list lives in HBM (tasks, then the patch table in the firmware's
 * format), mapped read-only at an address of the context's kernel VA
 * range (ctx->kva_mm, above DRM_NPU_VA_END): the device reads it through
 * the context like any operand, nothing the context runs can write it,
 * and no user address can name it, so no batch ever holds it by range.
 *
 * Lifetime: the context's table (ctx->lists) holds a reference, and so
 * does every batch that runs the list (npu_job.c), so a destroy never
 * frees a list the device is running. The last reference unmaps it: that
 * takes ctx->vm_lock and a mailbox round trip, so a batch's release defers
 * it to the driver's workqueue as it does for mappings.
 *
 * Locking: ctx->lists and ctx->nlists change under the xarray's lock,
 * which a lookup takes to get its reference; the list's mapping is made
 * and torn down under ctx->vm_lock.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_list.h"
#include "npu_mmu.h"
#include "npu_queue.h"

static_assert((int)DRM_NPU_PATCH_TASK_ARG == (int)NPU_FW_PATCH_ARG &&
	      (int)DRM_NPU_PATCH_KERNEL_ARGS == (int)NPU_FW_PATCH_KERNEL_ARGS);
static_assert(DRM_NPU_TASKLIST_MAX_SLOTS == NPU_FW_LIST_MAX_SLOTS);

/*
 * The address arguments of a task type a patch may set, each with the
 * length of the range it addresses and whether the task writes it.
 * Returns false for an argument that is not an address.
 */
static bool npu_patch_target(const struct drm_npu_task *t, u32 field, u64 *len, bool *write)
{
	switch (t->type) {
	case DRM_NPU_TASK_COPY:
		*len = t->args[2];
		*write = field == 0;
		return field <= 1;
	case DRM_NPU_TASK_FILL:
		*len = t->args[1];
		*write = true;
		return field == 0;
	case DRM_NPU_TASK_KERNEL:
		*len = t->args[2];
		*write = false;
		return field == 0;
	case DRM_NPU_TASK_TIMESTAMP:
		*len = 8;
		*write = true;
		return field == 0;
	default:
		return false;
	}
}

/*
 * Check the patch table against the tasks and slots; set in skip[i] the
 * arguments of task i that runs patch (and that the list does not hold).
 */
static int npu_patches_check(const struct drm_npu_task *tasks, u32 count,
			     const struct drm_npu_patch *p, u32 npatches,
			     const struct drm_npu_io_slot *slots, u32 nslots, u32 *skip)
{
	u32 i;

	for (i = 0; i < npatches; i++, p++) {
		const struct drm_npu_task *t;
		const struct drm_npu_io_slot *s;
		u64 len;
		bool write;

		if (p->flags || p->task >= count || p->slot >= nslots ||
		    p->kind > DRM_NPU_PATCH_KERNEL_ARGS)
			return -EINVAL;
		/* Strictly sorted: the device walks them with the tasks. */
		if (i && (p->task < p[-1].task ||
			  (p->task == p[-1].task && (p->kind < p[-1].kind ||
			   (p->kind == p[-1].kind && p->field <= p[-1].field)))))
			return -EINVAL;
		t = &tasks[p->task];
		s = &slots[p->slot];
		if (p->kind == DRM_NPU_PATCH_KERNEL_ARGS) {
			if (t->type != DRM_NPU_TASK_KERNEL || p->field % 8 ||
			    (u64)p->field + 8 > t->args[2] || p->offset >= s->size)
				return -EINVAL;
			continue;
		}
		if (!npu_patch_target(t, p->field, &len, &write) || t->args[p->field] ||
		    p->offset > s->size || len > s->size - p->offset ||
		    (write && !(s->flags & DRM_NPU_IO_SLOT_WRITE)))
			return -EINVAL;
		skip[p->task] |= BIT(p->field);
	}
	return 0;
}

static void npu_tasklist_free(struct npu_tasklist *l)
{
	struct npu_ctx *ctx = l->ctx;
	struct npu_device *ndev = ctx->ndev;

	if (drm_mm_node_allocated(&l->va)) {
		/* As for any mapping (npu_gem.c): forgotten by the device before reuse. */
		npu_mmu_unmap_forget(ctx, l->va.start, l->va.size, DRM_NPU_PAGE_SIZE_4K);
		mutex_lock(&ctx->vm_lock);
		drm_mm_remove_node(&l->va);
		mutex_unlock(&ctx->vm_lock);
	}
	npu_hbm_free(ndev, ctx, DRM_NPU_MEM_REGION_QUEUES, &l->hbm);
	npu_holds_release(&l->holds);
	kvfree(l->slots);
	npu_ctx_put(ctx);
	kfree(l);
}

static void npu_tasklist_release(struct kref *ref)
{
	npu_tasklist_free(container_of(ref, struct npu_tasklist, ref));
}

void npu_tasklist_put(struct npu_tasklist *l)
{
	kref_put(&l->ref, npu_tasklist_release);
}

bool npu_tasklist_put_not_last(struct npu_tasklist *l)
{
	return refcount_dec_not_one(&l->ref.refcount);
}

struct npu_tasklist *npu_tasklist_get(struct npu_ctx *ctx, u32 handle)
{
	struct npu_tasklist *l;

	xa_lock(&ctx->lists);
	l = xa_load(&ctx->lists, handle);
	if (l)
		kref_get(&l->ref);	/* the table's keeps it above zero */
	xa_unlock(&ctx->lists);
	return l;
}

/* Under ctx->vm_lock: map the list's HBM read-only at a kernel VA of the context. */
static int npu_tasklist_map(struct npu_ctx *ctx, struct npu_tasklist *l)
{
	u64 off;
	int ret;

	lockdep_assert_held(&ctx->vm_lock);
	ret = drm_mm_insert_node_generic(&ctx->kva_mm, &l->va, l->hbm.size,
					 DRM_NPU_PAGE_SIZE_4K, 0, DRM_MM_INSERT_BEST);
	if (ret)
		return ret == -ENOSPC ? -ENOMEM : ret;
	ret = npu_mmu_reserve(ctx, l->va.start, l->hbm.size, DRM_NPU_PAGE_SIZE_4K);
	if (ret) {
		drm_mm_remove_node(&l->va);
		return ret;
	}
	/* No NPU_PTE_WRITE: nothing the context runs may change it. */
	for (off = 0; off < l->hbm.size; off += DRM_NPU_PAGE_SIZE_4K)
		npu_mmu_map(ctx, l->va.start + off, l->hbm.start + off, DRM_NPU_PAGE_SIZE_4K, 0);
	return 0;
}

/* Check what the caller passed: everything but what needs the context. */
static int npu_tasklist_check(const struct drm_npu_tasklist_create *args,
			      const struct drm_npu_task *tasks,
			      const struct drm_npu_patch *patches,
			      const struct drm_npu_io_slot *slots, u32 *skip)
{
	u32 i;

	for (i = 0; i < args->tasks.count; i++)
		if (!npu_task_valid(&tasks[i]) || tasks[i].type == DRM_NPU_TASK_RUN_LIST)
			return -EINVAL;
	for (i = 0; i < args->slots.count; i++)
		if (!slots[i].size || slots[i].flags & ~DRM_NPU_IO_SLOT_WRITE || slots[i].pad)
			return -EINVAL;
	return npu_patches_check(tasks, args->tasks.count, patches, args->patches.count,
				 slots, args->slots.count, skip);
}

/* The device's format for the list's tasks and patches: written one by one. */
static void npu_tasklist_write(struct npu_device *ndev, const struct npu_tasklist *l,
			       const struct drm_npu_task *tasks,
			       const struct drm_npu_patch *patches)
{
	void __iomem *at = ndev->hbm + l->hbm.start;
	u32 i;

	for (i = 0; i < l->count; i++, at += sizeof(struct npu_fw_task)) {
		struct npu_fw_task t;

		npu_task_to_fw(&t, &tasks[i]);
		memcpy_toio(at, &t, sizeof(t));
		if (!(i % 4096))
			cond_resched();
	}
	for (i = 0; i < l->npatches; i++, at += sizeof(struct npu_fw_patch)) {
		struct npu_fw_patch p = {
			.task = patches[i].task,
			.kind = patches[i].kind,	/* the kinds agree: see the top */
			.slot = patches[i].slot,
			.field = patches[i].field,
			.offset = patches[i].offset,
		};

		memcpy_toio(at, &p, sizeof(p));
	}
}

int npu_ioctl_tasklist_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_tasklist_create *args = data;
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_patch *patches = NULL;
	struct drm_npu_task *tasks = NULL;
	struct npu_tasklist *l = NULL;
	u32 *skip = NULL, i, id;
	u64 size;
	int ret = 0, idx;

	if (!(ndev->fw.caps & NPU_FW_CAP_TASK_LISTS))
		return -EOPNOTSUPP;
	if (args->flags || args->handle || !args->tasks.count)
		return -EINVAL;
	/*
	 * A hint, so a full context does not map a list only to tear it
	 * down again: the quota is enforced below, where a place is taken.
	 */
	if (READ_ONCE(ctx->nlists) >= DRM_NPU_TASKLISTS_PER_CONTEXT)
		return -EDQUOT;
	l = kzalloc(sizeof(*l), GFP_KERNEL_ACCOUNT);
	if (!l)
		return -ENOMEM;
	kref_init(&l->ref);
	l->ctx = npu_ctx_get(ctx);
	l->count = args->tasks.count;
	l->npatches = args->patches.count;
	l->nslots = args->slots.count;
	tasks = npu_obj_array_dup(&args->tasks, DRM_NPU_TASKLIST_MAX_TASKS, sizeof(*tasks),
				  sizeof(*tasks), &ret);
	if (!ret)
		patches = npu_obj_array_dup(&args->patches, DRM_NPU_TASKLIST_MAX_PATCHES,
					    sizeof(*patches), sizeof(*patches), &ret);
	if (!ret)
		l->slots = npu_obj_array_dup(&args->slots, DRM_NPU_TASKLIST_MAX_SLOTS,
					     sizeof(*l->slots), sizeof(*l->slots), &ret);
	if (!ret) {
		skip = kvcalloc(l->count, sizeof(*skip), GFP_KERNEL_ACCOUNT);
		ret = skip ? npu_tasklist_check(args, tasks, patches, l->slots, skip) : -ENOMEM;
	}
	if (ret)
		goto out;

	/* What the tasks name is held for the list's life, as for a batch. */
	mutex_lock(&ctx->vm_lock);
	npu_holds_begin(&l->holds, ctx);
	for (i = 0; i < l->count && !ret; i++) {
		ret = npu_holds_task(&l->holds, ctx, &tasks[i], skip[i]);
		if (!(i % 4096))
			cond_resched();
	}
	mutex_unlock(&ctx->vm_lock);
	if (ret)
		goto out;

	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out;
	}
	size = (u64)l->count * sizeof(struct npu_fw_task) +
	       (u64)l->npatches * sizeof(struct npu_fw_patch);
	ret = npu_hbm_alloc(ndev, ctx, DRM_NPU_MEM_REGION_QUEUES, &l->hbm, size,
			    DRM_NPU_PAGE_SIZE_4K);
	if (ret)
		goto out_exit;
	npu_tasklist_write(ndev, l, tasks, patches);
	/* The tail of the last page is no one's business but zeros. */
	memset_io(ndev->hbm + l->hbm.start + size, 0, l->hbm.size - size);
	mutex_lock(&ctx->vm_lock);
	ret = npu_tasklist_map(ctx, l);
	mutex_unlock(&ctx->vm_lock);
	if (!ret) {
		/*
		 * The quota is checked where it is consumed, in one section:
		 * checked apart, concurrent creates all passed the check and
		 * then all took a place. Counted before the insert, which may
		 * drop the lock to allocate.
		 */
		xa_lock(&ctx->lists);
		ret = -EDQUOT;
		if (ctx->nlists < DRM_NPU_TASKLISTS_PER_CONTEXT) {
			ctx->nlists++;
			ret = __xa_alloc(&ctx->lists, &id, l, xa_limit_31b, GFP_KERNEL_ACCOUNT);
			if (ret)
				ctx->nlists--;
		}
		xa_unlock(&ctx->lists);
	}
	if (!ret)
		args->handle = id;
out_exit:
	drm_dev_exit(idx);
out:
	kvfree(skip);
	kvfree(patches);
	kvfree(tasks);
	if (ret)
		npu_tasklist_put(l);	/* unmaps and frees what it got */
	return ret;
}

int npu_ioctl_tasklist_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_tasklist_destroy *args = data;
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_tasklist *l;

	/*
	 * Handle 0 is never a list's, and must not reach xa_erase(): erasing
	 * index 0 of an ALLOC1 xarray marks it free, and the next create
	 * would hand out 0, the handle that means "no list".
	 */
	if (args->flags || !args->handle)
		return -EINVAL;
	xa_lock(&ctx->lists);
	l = __xa_erase(&ctx->lists, args->handle);
	if (l)
		ctx->nlists--;
	xa_unlock(&ctx->lists);
	if (!l)
		return -EINVAL;
	npu_tasklist_put(l);
	return 0;
}

void npu_tasklist_ctx_fini(struct npu_ctx *ctx)
{
	struct npu_tasklist *l;
	unsigned long id;

	/* No ioctl of the file runs any more: no lock needed against them. */
	xa_for_each(&ctx->lists, id, l) {
		xa_erase(&ctx->lists, id);
		npu_tasklist_put(l);
	}
	ctx->nlists = 0;
	xa_destroy(&ctx->lists);
}
