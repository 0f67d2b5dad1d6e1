/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_CTX_H__
#define __NPU_CTX_H__

#include <drm/drm_mm.h>
#include <drm/npu_accel.h>
#include <linux/kref.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "npu_drv.h"
#include "npu_mmu.h"

#define NPU_CTX_QUEUES	8	/* per context, the default queue included */

/*
 * The kernel's own device mappings in a context (task lists), above
 * every address a user buffer can get: no task's range can name them.
 */
#define NPU_KVA_BASE	DRM_NPU_VA_END
#define NPU_KVA_SIZE	DRM_NPU_VA_END

struct npu_mem_stat {
	u64 current_bytes;
	u64 peak_bytes;
};

/*
 * A context: one per open file, with its own device address space (VA
 * allocator and page tables) and its device id. Buffers it created and
 * mappings in it hold references, so it outlives the file while the device
 * may still use its address space; so does each of its queues, which
 * what holds a queue (a job, a multi-queue run) may reach after the file
 * has gone.
 */
struct npu_ctx {
	struct kref ref;
	struct work_struct free;	/* the last reference's: npu_ctx.c */
	struct npu_device *ndev;	/* referenced */
	u32 id;				/* device-visible, 1..NPU_CTX_MAX */
	/* The locks, one per concern, and their order: see npu_ctx.c. */
	struct mutex vm_lock;		/* the address spaces and page tables */
	struct mutex queues_lock;	/* queues[] */
	struct mutex multi_lock;	/* a SUBMIT_MULTI taking submit locks */
	struct mutex userptrs_lock;	/* userptrs */
	struct drm_mm va_mm;		/* user VA: mappings and holes */
	u32 nholes;			/* holes in va_mm, under vm_lock */
	struct drm_mm kva_mm;		/* NPU_KVA_BASE..: task lists */
	struct npu_mmu mmu;
	struct npu_queue *queues[NPU_CTX_QUEUES];	/* by id */
	struct list_head userptrs;	/* registered host memory */
	/* Events and notifies held, by id; nsyncs under the xarray's lock. */
	struct xarray syncs;
	u32 nsyncs;
	/* Task lists, by handle, nlists under the xarray's lock: npu_list.c. */
	struct xarray lists;
	u32 nlists;
	atomic_t ucmds;			/* its io_uring commands in flight */
	/*
	 * Batches the device is done with that still hold what they named
	 * (npu_ctx_await_retired()), and where their release is announced.
	 */
	atomic_t retiring;
	wait_queue_head_t retire_wq;
	/* Time its queues had work on the device, under ndev->queue_lock. */
	u64 busy_ns;
	/* Under ndev->hbm_lock, like the device-wide counters. */
	struct npu_mem_stat mem[DRM_NPU_MEM_REGION_COUNT];
};

#define NPU_CTX_MAX	0xffff
/* Holes (npu_hold.h) a context's batches and lists may keep at once. */
#define NPU_CTX_MAX_HOLES	16384

int npu_ctx_init_device(struct npu_device *ndev);
int npu_ctx_open(struct drm_device *drm, struct drm_file *file);
void npu_ctx_postclose(struct drm_device *drm, struct drm_file *file);
struct npu_ctx *npu_ctx_get(struct npu_ctx *ctx);
bool npu_ctx_await_retired(struct npu_ctx *ctx);
void npu_ctx_put(struct npu_ctx *ctx);

#endif /* __NPU_CTX_H__ */
