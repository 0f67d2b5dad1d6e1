/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_HOLD_H__
#define __NPU_HOLD_H__

#include <linux/types.h>

struct drm_npu_task;
struct npu_bo_map;
struct npu_ctx;
struct npu_sync;

/*
 * What a batch or a task list keeps alive for the device: the mappings
 * its tasks' ranges touch (each once) and the events and notifies they
 * name. Built under ctx->lock; released by whoever drops the holder.
 */
struct npu_holds {
	u64 mark;			/* tells the mappings held, while built */
	u32 nmaps, map_cap;
	struct npu_bo_map **maps;	/* referenced, with their buffers */
	u32 nsyncs, sync_cap;
	struct npu_sync **syncs;	/* referenced */
};

/* Under ctx->lock: a new mark, before the first hold. */
void npu_holds_begin(struct npu_holds *h, struct npu_ctx *ctx);
int npu_holds_range(struct npu_holds *h, struct npu_ctx *ctx, u64 va, u64 size);
/*
 * Under ctx->lock: what the checked task `t` names, but for the address
 * arguments set in `skip` (bit n: args[n], patched per run).
 */
int npu_holds_task(struct npu_holds *h, struct npu_ctx *ctx, const struct drm_npu_task *t,
		   u32 skip);
void npu_holds_release(struct npu_holds *h);
/*
 * Drop what is not a last reference; true if that was everything (a last
 * one may sleep on ctx->lock and the mailbox: see npu_job.c).
 */
bool npu_holds_put_not_last(struct npu_holds *h);

#endif /* __NPU_HOLD_H__ */
