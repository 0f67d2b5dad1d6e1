/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_GEM_H__
#define __NPU_GEM_H__

#include <drm/drm_gem.h>
#include <drm/drm_mm.h>
#include <linux/kref.h>

#include "npu_drv.h"

struct npu_ctx;
struct npu_bo;

/*
 * Where one context sees one buffer. Created when the context gets its
 * first handle to the buffer (creation, PRIME import) and torn down when
 * the last handle and the last job using it are gone.
 */
struct npu_bo_map {
	struct kref ref;		/* handles in ctx + jobs in flight */
	struct list_head link;		/* in bo->maps */
	struct npu_bo *bo;
	struct npu_ctx *ctx;		/* referenced */
	struct drm_mm_node va;
};

/* A buffer object: a run of HBM and its mappings. */
struct npu_bo {
	struct drm_gem_object base;
	struct npu_ctx *owner;		/* charged for it (referenced) */
	struct drm_mm_node hbm;		/* HBM offset range */
	u32 flags;
	u32 page_size;
	struct mutex maps_lock;		/* protects maps */
	struct list_head maps;
};

static inline struct npu_bo *to_npu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct npu_bo, base);
}

int npu_gem_init(struct npu_device *ndev);
int npu_hbm_alloc(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		  struct drm_mm_node *node, u64 size, u64 align);
void npu_hbm_free(struct npu_device *ndev, struct npu_ctx *ctx, int region,
		  struct drm_mm_node *node);
u64 npu_gem_hbm_used(struct npu_device *ndev);
void npu_bo_map_put(struct npu_bo_map *map);

int npu_ioctl_bo_create(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_bo_info(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_get_mem_usage(struct drm_device *drm, void *data,
			    struct drm_file *file);

#endif /* __NPU_GEM_H__ */
