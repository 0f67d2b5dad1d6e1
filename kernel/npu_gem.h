/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_GEM_H__
#define __NPU_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_mm.h>
#include <linux/kref.h>
#include <linux/scatterlist.h>

#include "npu_drv.h"

struct npu_ctx;
struct npu_bo;
struct npu_va_hole;

/*
 * Where one context sees one buffer. Created when the context gets its
 * first handle to the buffer (creation, PRIME import) and torn down when
 * the last handle and the last job using it are gone.
 */
struct npu_bo_map {
	struct kref ref;		/* handles in ctx + jobs in flight */
	u64 job_mark;			/* last holder that took it, under ctx->vm_lock */
	struct list_head link;		/* in bo->maps */
	struct npu_bo *bo;
	struct npu_ctx *ctx;		/* referenced */
	struct drm_mm_node va;
	/* Holds the range once this is gone, for holders that came late. */
	struct npu_va_hole *heir;	/* under ctx->vm_lock */
};

/* Host memory registered for device access (NPU_USERPTR). */
struct npu_userptr {
	struct list_head link;		/* in owner->userptrs, under its userptrs_lock;
					 * then maybe ndev->userptr_quarantine */
	struct mm_struct *mm;		/* grabbed: for the range and the rlimit */
	u64 addr;
	unsigned long npages;
	struct page **pages;		/* pinned */
	struct sg_table sgt;		/* the pages, DMA-mapped */
	bool read_only;
};

/* HBM that must not be reused until the device is reset. */
struct npu_hbm_quarantined {
	struct list_head link;		/* in ndev->hbm_quarantine */
	struct drm_mm_node node;
};

/* A buffer object: a run of HBM, or registered host memory; its mappings. */
struct npu_bo {
	struct drm_gem_object base;
	struct npu_ctx *owner;		/* charged for it (referenced) */
	struct drm_mm_node hbm;		/* HBM offset range, for HBM buffers */
	struct npu_userptr *user;	/* for registered host memory */
	u32 flags;
	u32 page_size;
	struct mutex maps_lock;		/* protects maps */
	struct list_head maps;
	/* Where the creator's mapping went: what creation answers. */
	u64 first_va;			/* set once, under maps_lock */
};

static inline struct npu_bo *to_npu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct npu_bo, base);
}

int npu_gem_init(struct npu_device *ndev);
/* npu_mmap.c: CPU mappings. */
int npu_mmap(struct file *filp, struct vm_area_struct *vma);
int npu_bo_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma);
extern const struct vm_operations_struct npu_bo_vm_ops;
int npu_hbm_alloc(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		  struct drm_mm_node *node, u64 size, u64 align);
void npu_hbm_free(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		  struct drm_mm_node *node);
void npu_hbm_release_quarantine(struct npu_device *ndev);
u64 npu_gem_hbm_used(struct npu_device *ndev);
void npu_mem_account(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		     s64 delta);
void npu_bo_map_put(struct npu_bo_map *map);
bool npu_bo_map_put_not_last(struct npu_bo_map *map);
struct npu_bo *npu_bo_alloc(struct npu_ctx *ctx);
void npu_bo_init_object(struct npu_bo *bo, u64 size);
void npu_bo_discard(struct npu_bo *bo);
int npu_bo_handle_create(struct drm_file *file, struct npu_bo *bo, u32 *handle,
			 u64 *device_va);

int npu_ioctl_userptr(struct drm_device *drm, void *data, struct drm_file *file);
void npu_userptr_release(struct npu_bo *bo);
void npu_userptr_release_quarantine(struct npu_device *ndev);
int npu_userptr_map_pages(struct npu_ctx *ctx, struct npu_userptr *u, u64 va);

int npu_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_bo_info(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_get_mem_usage(struct drm_device *drm, void *data,
			    struct drm_file *file);

#endif /* __NPU_GEM_H__ */
