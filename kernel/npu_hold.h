/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_HOLD_H__
#define __NPU_HOLD_H__

#include <drm/drm_mm.h>
#include <linux/kref.h>
#include <linux/types.h>

struct drm_npu_task;
struct npu_bo_map;
struct npu_ctx;
struct npu_sync;

/*
 * Device VA that a holder's range names and nothing maps. It is held like
 * a mapping, so no buffer is placed there while the device may still
 * write through it: the task faults, as it would have when submitted,
 * instead of writing into a buffer created after it (which must read
 * zero). In ctx->va_mm with color NPU_VA_HOLE. A mapping that is going
 * away when a holder names it gets one as its heir, which takes its range
 * when the mapping gives it back (npu_va_hand_over()).
 */
struct npu_va_hole {
	struct kref ref;		/* holders (+ the mapping, for an heir) */
	u64 mark;			/* last holder that took it, under ctx->vm_lock */
	struct npu_ctx *ctx;		/* not referenced: every holder holds it */
	struct drm_mm_node va;
};

#define NPU_VA_HOLE	1	/* drm_mm color of a hole; a mapping's is 0 */

/*
 * What a batch or a task list keeps alive for the device: the mappings
 * its tasks' ranges touch and the unmapped VA between them (each once),
 * and the events and notifies they name. Built under ctx->vm_lock; released
 * by whoever drops the holder, never under ctx->vm_lock.
 */
struct npu_holds {
	u64 mark;			/* tells the mappings held, while built */
	u32 nmaps, map_cap;
	struct npu_bo_map **maps;	/* referenced, with their buffers */
	u32 nholes, hole_cap;
	struct npu_va_hole **holes;	/* referenced */
	u32 nsyncs, sync_cap;
	struct npu_sync **syncs;	/* referenced */
};

/* Under ctx->vm_lock: a new mark, before the first hold. */
void npu_holds_begin(struct npu_holds *h, struct npu_ctx *ctx);
int npu_holds_range(struct npu_holds *h, struct npu_ctx *ctx, u64 va, u64 size);
/*
 * Under ctx->vm_lock: what the checked task `t` names, but for the address
 * arguments set in `skip` (bit n: args[n], patched per run).
 */
int npu_holds_task(struct npu_holds *h, struct npu_ctx *ctx, const struct drm_npu_task *t,
		   u32 skip);
void npu_holds_release(struct npu_holds *h);
/* Under ctx->vm_lock: give a mapping's range back, or to its heir. */
void npu_va_hand_over(struct npu_ctx *ctx, struct drm_mm_node *va, struct npu_va_hole *heir);
/*
 * Drop what is not a last reference; true if that was everything (a last
 * one may sleep on ctx->vm_lock and the mailbox: see npu_job.c).
 */
bool npu_holds_put_not_last(struct npu_holds *h);

#endif /* __NPU_HOLD_H__ */
