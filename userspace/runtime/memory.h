/* SPDX-License-Identifier: MIT */
/* Internal: what memory.c shares with memory_host.c. */
#ifndef NPURT_MEMORY_H
#define NPURT_MEMORY_H

#include <stdint.h>

#include "internal.h"

/* MEM_BLOCK: from the cache, or a buffer of its own it made (MC_BYPASS);
 * MEM_BO: an imported buffer. */
enum mem_kind { MEM_BLOCK, MEM_BO, MEM_HOST };

struct npurt_mem {
	npurt_device *dev;
	enum mem_kind kind;
	struct mc_block *block;		/* MEM_BLOCK */
	uint32_t handle;		/* MEM_BO, MEM_HOST */
	uint64_t device_addr;
	void *host;
	size_t size;
	size_t page_size;
	void *map;			/* to unmap: a BO's mapping, npurt_host_alloc()'s pages */
	size_t map_size;
};

/*
 * Importing a buffer the device file already holds gives the handle it
 * already has, so two npurt_mems may share one: the last free closes it.
 */
struct npurt_bo_ref {
	struct npurt_bo_ref *next;
	uint32_t handle;
	unsigned int refs;
};

struct bo {
	uint32_t handle;
	uint64_t size;
	uint32_t page_size;
	uint64_t device_va;
	void *map;
};

/*
 * Every CPU mapping of device memory in the process, all devices' (owner:
 * the device): a pointer into one that no live allocation of the device
 * holds is a freed block or another device's memory, which a copy must
 * refuse rather than take for pageable memory.
 */
extern struct mr_table npurt_mem_maps;

void npurt_gem_close(npurt_device *dev, uint32_t handle);
/* The buffer's info, and a CPU mapping of it: 0 or the errno. */
int npurt_bo_map(npurt_device *dev, struct bo *bo);
/* One more npurt_mem on the file's handle (ENOMEM), or one less (the last closes it). */
int npurt_bo_ref_get(npurt_device *dev, uint32_t handle);
void npurt_bo_ref_put(npurt_device *dev, uint32_t handle);
/* The allocation's host range joins the device's table: 0 or ENOMEM. */
int npurt_mem_range_add(npurt_mem *m);

#endif /* NPURT_MEMORY_H */
