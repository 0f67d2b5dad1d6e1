// SPDX-License-Identifier: GPL-2.0-only
/*
 * Events and notifies: entries of the device's sync table (see
 * npu_fw_if.h), handed out by id. The device does the recording and
 * waiting; the host creates them, reads events and waits for them.
 *
 * Lifetime: an npu_sync is referenced by every context holding it (in
 * ctx->syncs), by every exported notify fd, and by every batch in flight
 * that names it, so an id is never reused under a task that uses it. It
 * holds the DRM device in turn: a notify fd can outlive every DRM file
 * and the device's binding, and its release gives the id back.
 *
 * Limits: a context holds at most syncs_per_context entries (-EDQUOT
 * past it), so no file can take the whole table (-ENOSPC).
 *
 * Locking: ctx->syncs and ctx->nsyncs change under the xarray's lock,
 * which a lookup takes to get its reference. The event
 * waitqueue is woken from the queue interrupt, which the device raises on
 * each record, and on unbind and reset; host waiters sleep outside the
 * device's drm_dev_enter() section, so neither waits for them.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "npu_ctx.h"
#include "npu_sync.h"

static unsigned int syncs_per_context = 512;
module_param(syncs_per_context, uint, 0644);
MODULE_PARM_DESC(syncs_per_context,
		 "Events and notifies one context may hold (512 of the device's 2048)");

unsigned int npu_sync_ctx_max(void)
{
	return min_t(unsigned int, READ_ONCE(syncs_per_context), NPU_FW_MAX_SYNCS);
}

static struct npu_fw_sync __iomem *npu_sync_entry(struct npu_device *ndev, u32 id)
{
	return (struct npu_fw_sync __iomem *)(ndev->hbm + NPU_FW_SYNC_TABLE) + id;
}

static void npu_sync_fini_device(struct drm_device *drm, void *arg)
{
	ida_destroy(&to_npu_device(drm)->sync_ida);
}

int npu_sync_init_device(struct npu_device *ndev)
{
	ida_init(&ndev->sync_ida);
	init_waitqueue_head(&ndev->sync_wq);
	return drmm_add_action_or_reset(&ndev->drm, npu_sync_fini_device, NULL);
}

static void npu_sync_release(struct kref *ref)
{
	struct npu_sync *s = container_of(ref, struct npu_sync, ref);
	struct npu_device *ndev = s->ndev;

	ida_free(&ndev->sync_ida, s->id);
	atomic_dec(&ndev->syncs_in_use);
	kfree(s);
	drm_dev_put(&ndev->drm);
}

void npu_sync_put(struct npu_sync *s)
{
	kref_put(&s->ref, npu_sync_release);
}

/* Drop a reference if it is not the last; false (and nothing) if it is. */
bool npu_sync_put_not_last(struct npu_sync *s)
{
	return refcount_dec_not_one(&s->ref.refcount);
}

/* This context's `id`, referenced, if it is of `kind`; else NULL. */
struct npu_sync *npu_sync_lookup(struct npu_ctx *ctx, u32 id, u32 kind)
{
	struct npu_sync *s;

	xa_lock(&ctx->syncs);
	s = xa_load(&ctx->syncs, id);
	if (s && s->kind == kind)
		kref_get(&s->ref);	/* the context's keeps it above zero */
	else
		s = NULL;
	xa_unlock(&ctx->syncs);
	return s;
}

/* Whether event s was recorded, and when (device time, ns). */
bool npu_event_recorded(struct npu_sync *s, u64 *timestamp_ns)
{
	struct npu_fw_sync __iomem *e = npu_sync_entry(s->ndev, s->id);

	if (!readq(&e->value))
		return false;
	*timestamp_ns = readq(&e->timestamp_ns);
	return true;
}

void npu_sync_ctx_fini(struct npu_ctx *ctx)
{
	struct npu_sync *s;
	unsigned long id;

	xa_for_each(&ctx->syncs, id, s)
		npu_sync_put(s);
	xa_destroy(&ctx->syncs);
	ctx->nsyncs = 0;
}

/* Give the context a hold on s, within its quota; takes a reference. */
static int npu_sync_ctx_add(struct npu_ctx *ctx, struct npu_sync *s)
{
	int ret = -EDQUOT;

	kref_get(&s->ref);		/* the context's; the caller has one */
	xa_lock(&ctx->syncs);
	/* Counted first: the insert may drop the lock to allocate. */
	if (ctx->nsyncs < npu_sync_ctx_max()) {
		ctx->nsyncs++;
		ret = __xa_insert(&ctx->syncs, s->id, s, GFP_KERNEL_ACCOUNT);
		if (ret)
			ctx->nsyncs--;
	}
	xa_unlock(&ctx->syncs);
	if (ret)
		npu_sync_put(s);	/* not the last: the caller's is left */
	return ret;
}

int npu_ioctl_sync_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_sync_create *args = data;
	struct npu_fw_sync __iomem *e;
	struct npu_sync *s;
	int ret, idx;

	if ((args->kind != DRM_NPU_SYNC_EVENT && args->kind != DRM_NPU_SYNC_NOTIFY) ||
	    args->flags || args->id || args->pad)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s) {
		ret = -ENOMEM;
		goto out_exit;
	}
	ret = ida_alloc_max(&ndev->sync_ida, NPU_FW_MAX_SYNCS - 1, GFP_KERNEL);
	if (ret < 0) {
		kfree(s);
		goto out_exit;
	}
	kref_init(&s->ref);
	atomic_inc(&ndev->syncs_in_use);
	drm_dev_get(drm);
	s->ndev = ndev;
	s->id = ret;
	s->kind = args->kind;
	INIT_LIST_HEAD(&s->ucmds);
	INIT_LIST_HEAD(&s->waited_link);
	/* A fresh entry: nothing recorded, whatever its last user left. */
	e = npu_sync_entry(ndev, s->id);
	writeq(0, &e->value);
	writeq(0, &e->timestamp_ns);

	ret = npu_sync_ctx_add(ctx, s);
	if (!ret)
		args->id = s->id;
	npu_sync_put(s);	/* the context's hold, if any, keeps it */
out_exit:
	drm_dev_exit(idx);
	return ret;
}

int npu_ioctl_sync_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_sync_destroy *args = data;
	struct npu_sync *s;

	if (args->flags)
		return -EINVAL;
	xa_lock(&ctx->syncs);
	s = __xa_erase(&ctx->syncs, args->id);
	if (s)
		ctx->nsyncs--;
	xa_unlock(&ctx->syncs);
	if (!s)
		return -EINVAL;
	npu_sync_put(s);
	return 0;
}

int npu_ioctl_event_query(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_event_query *args = data;
	struct npu_fw_sync __iomem *e;
	struct npu_sync *s;
	int idx;

	if (args->flags || args->pad)
		return -EINVAL;
	s = npu_sync_lookup(file->driver_priv, args->id, DRM_NPU_SYNC_EVENT);
	if (!s)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx)) {
		npu_sync_put(s);
		return -ENODEV;
	}
	e = npu_sync_entry(to_npu_device(drm), s->id);
	args->recorded = readq(&e->value) != 0;
	args->timestamp_ns = readq(&e->timestamp_ns);
	drm_dev_exit(idx);
	npu_sync_put(s);
	return 0;
}

/*
 * The wait condition of EVENT_WAIT: recorded, or a reason to stop (*err):
 * the device was reset since the wait began (-EIO) or is gone (-ENODEV).
 */
static bool npu_event_settled(struct npu_sync *s, int resets, int *err)
{
	struct npu_device *ndev = s->ndev;
	bool recorded;
	int idx;

	if (atomic_read(&ndev->resets) != resets) {
		*err = -EIO;
		return true;
	}
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		*err = -ENODEV;
		return true;
	}
	recorded = readq(&npu_sync_entry(ndev, s->id)->value) != 0;
	drm_dev_exit(idx);
	return recorded;
}

int npu_ioctl_event_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_event_wait *args = data;
	int resets = atomic_read(&ndev->resets), err = 0;
	struct npu_sync *s;
	long left;

	if (args->flags)
		return -EINVAL;
	s = npu_sync_lookup(file->driver_priv, args->id, DRM_NPU_SYNC_EVENT);
	if (!s)
		return -EINVAL;
	left = wait_event_interruptible_timeout(ndev->sync_wq,
						npu_event_settled(s, resets, &err),
						npu_deadline_jiffies(args->deadline_ns));
	npu_sync_put(s);
	/* Restarted as it is: the deadline does not move. */
	if (left < 0)
		return left;
	if (err)
		return err;
	return left ? 0 : -ETIMEDOUT;
}

static int npu_notify_file_release(struct inode *inode, struct file *f)
{
	npu_sync_put(f->private_data);
	return 0;
}

static const struct file_operations npu_notify_fops = {
	.owner = THIS_MODULE,
	.release = npu_notify_file_release,
};

int npu_ioctl_notify_export(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_notify_export *args = data;
	struct npu_sync *s;
	int fd;

	if (args->flags || args->pad || args->fd)
		return -EINVAL;
	s = npu_sync_lookup(ctx, args->id, DRM_NPU_SYNC_NOTIFY);
	if (!s)
		return -EINVAL;
	/* The fd holds the reference taken above. */
	fd = anon_inode_getfd("npu-notify", &npu_notify_fops, s, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		npu_sync_put(s);
		return fd;
	}
	args->fd = fd;
	return 0;
}

int npu_ioctl_notify_import(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_notify_import *args = data;
	struct npu_sync *s;
	struct file *f;
	int ret;

	if (args->flags || args->pad || args->id)
		return -EINVAL;
	f = fget(args->fd);
	if (!f)
		return -EBADF;
	s = f->private_data;
	/* Only our notify fds, and only this device's. */
	if (f->f_op != &npu_notify_fops || s->ndev != ndev) {
		fput(f);
		return -EINVAL;
	}
	ret = npu_sync_ctx_add(ctx, s);
	fput(f);
	/* -EBUSY: ids are device-wide, so it is this one, held already. */
	if (ret && ret != -EBUSY)
		return ret;
	args->id = s->id;
	return 0;
}
