// SPDX-License-Identifier: MIT
/*
 * Device MMU: page walk and TLB.
 *
 * Everything the walk reads is host-written memory, so every table
 * pointer and leaf address is bounds-checked: a bad entry is a fault, not
 * a crash of the device.
 */
#include "npu_mmu.h"

#include <string.h>

#include "npu_dev.h"

static int leaf_to_ptr(struct npu_dev *dev, uint64_t pte, uint64_t page_size,
		       uint64_t offset, uint8_t **ptr)
{
	uint64_t addr = pte & NPU_PTE_ADDR_MASK;

	if (pte & NPU_PTE_SYSMEM) {
		if (!dev->host_mem || addr > dev->host_mem_size ||
		    page_size > dev->host_mem_size - addr)
			return -NPU_FW_EFAULT;
		*ptr = (uint8_t *)dev->host_mem + addr + offset;
		return 0;
	}
	/* HBM, but never the firmware's own area. */
	if (addr < NPU_FW_RESERVED_SIZE || addr > dev->cfg.hbm_size ||
	    page_size > dev->cfg.hbm_size - addr)
		return -NPU_FW_EFAULT;
	*ptr = dev->hbm + addr + offset;
	return 0;
}

/* Walk the tables: the leaf entry and its page size, or -NPU_FW_EFAULT. */
static int walk(struct npu_dev *dev, uint64_t root, uint64_t va,
		uint64_t *leaf, uint32_t *page_size)
{
	uint64_t table = root;

	if (va >> 48)
		return -NPU_FW_EFAULT;
	for (int level = 0; level < NPU_PT_LEVELS; level++) {
		uint64_t e;

		if (table < NPU_FW_RESERVED_SIZE || table > dev->cfg.hbm_size - NPU_PT_SIZE)
			return -NPU_FW_EFAULT;
		e = __atomic_load_n((uint64_t *)(dev->hbm + table) + NPU_PT_INDEX(va, level),
				    __ATOMIC_ACQUIRE);
		if (!(e & NPU_PTE_VALID))
			return -NPU_FW_EFAULT;
		if (level == NPU_PT_LEVELS - 1 || (level == 2 && (e & NPU_PTE_HUGE))) {
			*leaf = e;
			*page_size = level == 2 ? 2u << 20 : 4096;
			return 0;
		}
		table = e & NPU_PTE_ADDR_MASK;
	}
	return -NPU_FW_EFAULT;
}

int npu_mmu_translate(struct npu_dev *dev, uint32_t ctx, uint64_t root,
		      uint64_t va, enum npu_access access, uint8_t **ptr,
		      uint64_t *avail)
{
	struct npu_mmu *mmu = &dev->mmu;
	struct npu_tlb_entry *hit = NULL;
	uint64_t pte, offset;
	uint32_t page_size;

	for (unsigned int i = 0; i < NPU_TLB_ENTRIES; i++) {
		struct npu_tlb_entry *e = &mmu->tlb[i];

		if (e->ctx == ctx && ctx && (va & ~(uint64_t)(e->page_size - 1)) == e->va) {
			hit = e;
			break;
		}
	}
	if (hit) {
		pte = hit->pte;
		page_size = hit->page_size;
		mmu->hits++;
	} else {
		if (walk(dev, root, va, &pte, &page_size))
			return -NPU_FW_EFAULT;
		mmu->walks++;
		hit = &mmu->tlb[mmu->next++ % NPU_TLB_ENTRIES];
		hit->ctx = ctx;
		hit->page_size = page_size;
		hit->va = va & ~(uint64_t)(page_size - 1);
		hit->pte = pte;
	}
	if (access == NPU_ACCESS_WRITE && !(pte & NPU_PTE_WRITE))
		return -NPU_FW_EFAULT;
	offset = va & (page_size - 1);
	if (leaf_to_ptr(dev, pte, page_size, offset, ptr))
		return -NPU_FW_EFAULT;
	*avail = page_size - offset;
	return 0;
}

void npu_mmu_invalidate(struct npu_dev *dev, uint32_t ctx)
{
	for (unsigned int i = 0; i < NPU_TLB_ENTRIES; i++)
		if (!ctx || dev->mmu.tlb[i].ctx == ctx)
			memset(&dev->mmu.tlb[i], 0, sizeof(dev->mmu.tlb[i]));
}
