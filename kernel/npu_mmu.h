/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_MMU_H__
#define __NPU_MMU_H__

#include <linux/list.h>
#include <linux/types.h>

struct npu_ctx;
struct npu_tlb_ticket;
struct npu_pt_table;

/* A context's device page tables, in HBM. Protected by ctx->vm_lock. */
struct npu_mmu {
	u64 root;			/* HBM offset of the top-level table */
	struct npu_pt_table *root_table;
	struct list_head tables;	/* struct npu_pt_table, for teardown */
};

int npu_mmu_init(struct npu_ctx *ctx);
void npu_mmu_fini(struct npu_ctx *ctx);
int npu_mmu_reserve(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size);
void npu_mmu_map(struct npu_ctx *ctx, u64 va, u64 addr, u32 page_size, u64 flags);
void npu_mmu_unmap(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size);
int npu_mmu_invalidate(struct npu_ctx *ctx);
void npu_mmu_unmap_forget(struct npu_ctx *ctx, u64 va, u64 size, u32 page_size);
void npu_mmu_invalidate_post(struct npu_ctx *ctx, struct npu_tlb_ticket *t);
int npu_mmu_invalidate_wait(struct npu_ctx *ctx, const struct npu_tlb_ticket *t);

#endif /* __NPU_MMU_H__ */
