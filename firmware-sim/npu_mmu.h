/* SPDX-License-Identifier: MIT */
/*
 * The device MMU: walks a context's page tables (format in npu_fw_if.h)
 * and caches translations in a small TLB, which the host must invalidate
 * after changing valid entries, as on real hardware.
 */
#ifndef NPU_MMU_H
#define NPU_MMU_H

#include <stdint.h>

struct npu_dev;

#define NPU_TLB_ENTRIES	64

enum npu_access {
	NPU_ACCESS_READ = 0,
	NPU_ACCESS_WRITE = 1,
};

struct npu_tlb_entry {
	uint32_t ctx;			/* 0: free */
	uint32_t page_size;
	uint64_t va;			/* page-aligned */
	uint64_t pte;			/* the leaf it came from */
};

struct npu_mmu {
	struct npu_tlb_entry tlb[NPU_TLB_ENTRIES];
	unsigned int next;		/* round-robin replacement */
	uint64_t hits, walks;
};

/*
 * Translate `va` of context `ctx` (page-table root at HBM offset `root`)
 * for `access`. On success *ptr is the host address of that byte and
 * *avail the bytes to the end of its page; returns 0. On a fault returns
 * -NPU_FW_EFAULT and touches nothing.
 */
int npu_mmu_translate(struct npu_dev *dev, uint32_t ctx, uint64_t root,
		      uint64_t va, enum npu_access access, uint8_t **ptr,
		      uint64_t *avail);

/* Drop cached translations of `ctx`, or of every context when 0. */
void npu_mmu_invalidate(struct npu_dev *dev, uint32_t ctx);

#endif /* NPU_MMU_H */
