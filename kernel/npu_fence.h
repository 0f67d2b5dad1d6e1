/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_FENCE_H__
#define __NPU_FENCE_H__

#include <drm/npu_accel.h>
#include <linux/types.h>

struct dma_fence;
struct drm_file;
struct drm_syncobj;
struct dma_fence_chain;

struct dma_fence *npu_fence_alloc(void);
void npu_fence_init(struct dma_fence *f, u64 context, u64 seqno);
void npu_fence_free(struct dma_fence *f);
void npu_fence_hold_module(void);
void npu_fence_release_module(struct dma_fence *f);

/* The out-syncobjs of a submit, looked up before it is queued. */
struct npu_syncobj_out {
	u32 count;
	struct drm_syncobj *syncobj[DRM_NPU_SUBMIT_MAX_SYNCOBJS];
	struct dma_fence_chain *chain[DRM_NPU_SUBMIT_MAX_SYNCOBJS];
	u64 point[DRM_NPU_SUBMIT_MAX_SYNCOBJS];
};

int npu_syncobj_copy(u64 uptr, u32 count, struct drm_npu_syncobj *out);
int npu_syncobj_in_fences(struct drm_file *file, const struct drm_npu_syncobj *in,
			  u32 count, struct dma_fence **fences);
int npu_syncobj_prepare_out(struct drm_file *file, const struct drm_npu_syncobj *sync,
			    u32 count, struct npu_syncobj_out *out);
void npu_syncobj_install_out(struct npu_syncobj_out *out, struct dma_fence *fence);
void npu_syncobj_release_out(struct npu_syncobj_out *out);

#endif /* __NPU_FENCE_H__ */
