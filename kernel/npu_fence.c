// SPDX-License-Identifier: GPL-2.0-only
/*
 * Batch fences and DRM syncobjs.
 *
 * Every batch gets a hardware fence on its queue's timeline (seqno = the
 * batch's sequence number), signalled when the device passes the batch,
 * with an error when it failed or was aborted; drm_sched derives the
 * batch's finished fence from it. A fence can outlive its queue inside a
 * syncobj, so it carries its own lock. It is allocated at submit and
 * initialised when the batch gets its number: nothing is allocated on
 * the way to its signal.
 *
 * In-syncobjs' fences become the batch's dependencies (npu_job.c), never
 * waited for by the submitter; out-syncobjs get the batch's finished
 * fence once it is queued. Everything that can fail (lookups,
 * allocations) happens before queueing, so a failed submit leaves every
 * syncobj as it was.
 */
#include <drm/drm_file.h>
#include <drm/drm_syncobj.h>
#include <linux/dma-fence.h>
#include <linux/dma-fence-chain.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "npu_fence.h"

struct npu_fence {
	struct dma_fence base;		/* first: freed as the fence */
	spinlock_t lock;
};

/*
 * A fence outlives whatever made it: a sync_file or another driver's
 * syncobj may hold it after the file, the device and the module have
 * gone, and asking it for its name or releasing it runs this module's
 * code and reads its tables. So every fence of the driver's holds the
 * module from its init to its free. The free is an RCU callback (readers
 * may still look at a fence whose last reference went) and npu_exit()
 * waits for those callbacks, so nothing returns into the module's text
 * after the module_put() that lets it go.
 */
void npu_fence_hold_module(void)
{
	__module_get(THIS_MODULE);
}

static void npu_fence_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct dma_fence, rcu));
	module_put(THIS_MODULE);
}

/* The release of each of the driver's fence types; the fence is first in its allocation. */
void npu_fence_release_module(struct dma_fence *f)
{
	call_rcu(&f->rcu, npu_fence_free_rcu);
}

static const char *npu_fence_driver_name(struct dma_fence *f)
{
	return "npu";
}

static const char *npu_fence_timeline_name(struct dma_fence *f)
{
	return "npu-queue";
}

static const struct dma_fence_ops npu_fence_ops = {
	.get_driver_name = npu_fence_driver_name,
	.get_timeline_name = npu_fence_timeline_name,
	.release = npu_fence_release_module,
};

struct dma_fence *npu_fence_alloc(void)
{
	struct npu_fence *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return NULL;
	spin_lock_init(&f->lock);
	return &f->base;
}

void npu_fence_init(struct dma_fence *f, u64 context, u64 seqno)
{
	dma_fence_init(f, &npu_fence_ops, &container_of(f, struct npu_fence, base)->lock,
		       context, seqno);
	npu_fence_hold_module();
}

/* The job's reference; a fence never signalled is cancelled first. */
void npu_fence_free(struct dma_fence *f)
{
	if (!f->ops) {		/* never initialised */
		kfree(container_of(f, struct npu_fence, base));
		return;
	}
	if (!dma_fence_is_signaled(f)) {
		dma_fence_set_error(f, -ECANCELED);
		dma_fence_signal(f);
	}
	dma_fence_put(f);
}

int npu_syncobj_copy(u64 uptr, u32 count, struct drm_npu_syncobj *out)
{
	u32 i;

	if (count > DRM_NPU_SUBMIT_MAX_SYNCOBJS)
		return -EINVAL;
	if (count && copy_from_user(out, u64_to_user_ptr(uptr), count * sizeof(*out)))
		return -EFAULT;
	for (i = 0; i < count; i++)
		if (out[i].flags)
			return -EINVAL;
	return 0;
}

/* The fences of the in-syncobjs, referenced; on failure none is kept. */
int npu_syncobj_in_fences(struct drm_file *file, const struct drm_npu_syncobj *in,
			  u32 count, struct dma_fence **fences)
{
	u32 i;
	int ret;

	for (i = 0; i < count; i++) {
		ret = drm_syncobj_find_fence(file, in[i].handle, in[i].point, 0, &fences[i]);
		if (ret) {
			while (i--)
				dma_fence_put(fences[i]);
			return ret;
		}
	}
	return 0;
}

void npu_syncobj_release_out(struct npu_syncobj_out *out)
{
	u32 i;

	for (i = 0; i < out->count; i++) {
		dma_fence_chain_free(out->chain[i]);
		if (out->syncobj[i])
			drm_syncobj_put(out->syncobj[i]);
	}
	out->count = 0;
}

int npu_syncobj_prepare_out(struct drm_file *file, const struct drm_npu_syncobj *sync,
			    u32 count, struct npu_syncobj_out *out)
{
	u32 i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < count; i++) {
		out->count = i + 1;
		out->point[i] = sync[i].point;
		out->syncobj[i] = drm_syncobj_find(file, sync[i].handle);
		if (!out->syncobj[i])
			goto err_noent;
		if (sync[i].point) {
			out->chain[i] = dma_fence_chain_alloc();
			if (!out->chain[i])
				goto err_nomem;
		}
	}
	return 0;

err_noent:
	npu_syncobj_release_out(out);
	return -ENOENT;
err_nomem:
	npu_syncobj_release_out(out);
	return -ENOMEM;
}

/* Cannot fail: everything was looked up and allocated beforehand. */
void npu_syncobj_install_out(struct npu_syncobj_out *out, struct dma_fence *fence)
{
	u32 i;

	for (i = 0; i < out->count; i++) {
		if (out->chain[i]) {
			drm_syncobj_add_point(out->syncobj[i], out->chain[i], fence,
					      out->point[i]);
			out->chain[i] = NULL;	/* the syncobj owns it now */
		} else {
			drm_syncobj_replace_fence(out->syncobj[i], fence);
		}
	}
	npu_syncobj_release_out(out);
}
