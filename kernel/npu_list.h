/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_LIST_H__
#define __NPU_LIST_H__

#include <drm/drm_mm.h>
#include <drm/npu_accel.h>
#include <linux/kref.h>

#include "npu_hold.h"

struct drm_device;
struct drm_file;
struct npu_ctx;

/*
 * A task list: checked once, its tasks and patch table stored in HBM and
 * mapped read-only in its context's kernel VA range; what its tasks name
 * held for its life. Referenced by its context's table and by every run
 * in flight.
 */
struct npu_tasklist {
	struct kref ref;
	struct npu_ctx *ctx;			/* referenced */
	u32 count, npatches, nslots;
	struct drm_npu_io_slot *slots;
	struct drm_mm_node hbm;			/* tasks, then patches */
	struct drm_mm_node va;			/* in ctx->kva_mm */
	struct npu_holds holds;
};

int npu_ioctl_tasklist_create(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_tasklist_destroy(struct drm_device *drm, void *data, struct drm_file *file);

/* The list `handle` of ctx, referenced; NULL if it has none such. */
struct npu_tasklist *npu_tasklist_get(struct npu_ctx *ctx, u32 handle);
void npu_tasklist_put(struct npu_tasklist *l);
/* Drop a reference unless it is the last (see npu_holds_put_not_last()). */
bool npu_tasklist_put_not_last(struct npu_tasklist *l);

/* The file is closing: its table's references go. */
void npu_tasklist_ctx_fini(struct npu_ctx *ctx);

/* Does the checked task name a list? Ring slots it takes. */
static inline u32 npu_task_ring_slots(const struct drm_npu_task *t)
{
	return t->type == DRM_NPU_TASK_RUN_LIST ? 1 + DIV_ROUND_UP((u32)t->args[2], 8) : 1;
}

#endif /* __NPU_LIST_H__ */
