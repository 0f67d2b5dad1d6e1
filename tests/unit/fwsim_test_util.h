/* SPDX-License-Identifier: MIT */
/*
 * Helpers for in-process tests of the firmware-sim core: they write HBM
 * the way npu.ko does (page tables, queue slots, rings).
 */
#ifndef FWSIM_TEST_UTIL_H
#define FWSIM_TEST_UTIL_H

#include <string.h>

#include "npu_dev.h"

#define TEST_VA_BASE	(1ull << 32)

/* A bump allocator for page tables in the test's HBM. */
struct pt_pool {
	uint8_t *hbm;
	uint64_t next;
};

static inline uint64_t pt_alloc(struct pt_pool *p)
{
	uint64_t t = p->next;

	p->next += NPU_PT_SIZE;
	memset(p->hbm + t, 0, NPU_PT_SIZE);
	return t;
}

/* Map one page: tables created on the way, then the leaf. */
static inline void pt_map(struct pt_pool *p, uint64_t root, uint64_t va,
			  uint64_t addr, uint32_t page_size, uint64_t flags)
{
	int leaf_level = page_size == (2u << 20) ? 2 : 3;
	uint64_t table = root;

	for (int level = 0; level < leaf_level; level++) {
		uint64_t *e = (uint64_t *)(p->hbm + table) + NPU_PT_INDEX(va, level);

		if (!(*e & NPU_PTE_VALID))
			*e = pt_alloc(p) | NPU_PTE_VALID;
		table = *e & NPU_PTE_ADDR_MASK;
	}
	if (leaf_level == 2)
		flags |= NPU_PTE_HUGE;
	((uint64_t *)(p->hbm + table))[NPU_PT_INDEX(va, leaf_level)] =
		addr | flags | NPU_PTE_VALID;
}

/* Post a mailbox command and return its status. */
static inline int32_t mbox_cmd(struct npu_dev *dev, uint32_t op, uint64_t a0, uint64_t a1)
{
	struct npu_fw_mbox *mb = &dev->ctrl->mbox;

	mb->opcode = op;
	mb->args[0] = a0;
	mb->args[1] = a1;
	__atomic_store_n(&mb->seq, mb->seq + 1, __ATOMIC_RELEASE);
	npu_dev_doorbell(dev, NPU_VEC_MBOX);
	return mb->status;
}

#endif /* FWSIM_TEST_UTIL_H */
