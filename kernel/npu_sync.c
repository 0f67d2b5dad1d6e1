// SPDX-License-Identifier: GPL-2.0-only
/*
 * Events and notifies: entries of the device's sync table (see
 * npu_fw_if.h), handed out by id. The device does the recording and
 * waiting; the host creates them, reads events and waits for them.
 *
 * Lifetime: an npu_sync is referenced by every context holding it (in
 * ctx->syncs), by every exported notify fd, and by every batch in flight
 * that names it, so an id is never reused under a task that uses it.
 *
 * Locking: ctx->syncs is changed under ctx->lock. The event waitqueue is
 * woken from the queue interrupt, which the device raises on each record.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "npu_ctx.h"
#include "npu_sync.h"

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

	ida_free(&s->ndev->sync_ida, s->id);
	atomic_dec(&s->ndev->syncs_in_use);
	kfree(s);
}

void npu_sync_put(struct npu_sync *s)
{
	kref_put(&s->ref, npu_sync_release);
}

/* This context's `id`, referenced, if it is of `kind`; else NULL. */
struct npu_sync *npu_sync_hold(struct npu_ctx *ctx, u32 id, u32 kind)
{
	struct npu_sync *s = xa_load(&ctx->syncs, id);

	if (!s || s->kind != kind)
		return NULL;
	kref_get(&s->ref);
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

/* npu_sync_hold() for callers not holding ctx->lock. */
struct npu_sync *npu_sync_lookup(struct npu_ctx *ctx, u32 id, u32 kind)
{
	struct npu_sync *s;

	mutex_lock(&ctx->lock);
	s = npu_sync_hold(ctx, id, kind);
	mutex_unlock(&ctx->lock);
	return s;
}

void npu_sync_ctx_fini(struct npu_ctx *ctx)
{
	struct npu_sync *s;
	unsigned long id;

	xa_for_each(&ctx->syncs, id, s)
		npu_sync_put(s);
	xa_destroy(&ctx->syncs);
}

int npu_ioctl_sync_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_sync_create *args = data;
	struct npu_fw_sync __iomem *e;
	struct npu_sync *s;
	int ret, idx;

	if ((args->kind != NPU_SYNC_EVENT && args->kind != NPU_SYNC_NOTIFY) ||
	    args->flags || args->id || args->pad)
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
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
	s->ndev = ndev;
	s->id = ret;
	s->kind = args->kind;
	/* A fresh entry: nothing recorded, whatever its last user left. */
	e = npu_sync_entry(ndev, s->id);
	writeq(0, &e->value);
	writeq(0, &e->timestamp_ns);

	mutex_lock(&ctx->lock);
	ret = xa_insert(&ctx->syncs, s->id, s, GFP_KERNEL);
	mutex_unlock(&ctx->lock);
	if (ret) {
		npu_sync_put(s);
		goto out_exit;
	}
	args->id = s->id;
out_exit:
	drm_dev_exit(idx);
	return ret;
}

int npu_ioctl_sync_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_sync_destroy *args = data;
	struct npu_sync *s;

	if (args->pad)
		return -EINVAL;
	mutex_lock(&ctx->lock);
	s = xa_erase(&ctx->syncs, args->id);
	mutex_unlock(&ctx->lock);
	if (!s)
		return -EINVAL;
	npu_sync_put(s);
	return 0;
}

/*
 * The caller's event `id`, referenced, with the device entered: its table
 * entry, or an ERR_PTR. Undone by npu_event_exit().
 */
static struct npu_fw_sync __iomem *npu_event_enter(struct drm_device *drm,
						   struct drm_file *file, u32 id,
						   struct npu_sync **sp, int *idx)
{
	struct npu_sync *s = npu_sync_lookup(file->driver_priv, id, NPU_SYNC_EVENT);

	if (!s)
		return IOMEM_ERR_PTR(-EINVAL);
	if (!drm_dev_enter(drm, idx)) {
		npu_sync_put(s);
		return IOMEM_ERR_PTR(-ENODEV);
	}
	*sp = s;
	return npu_sync_entry(to_npu_device(drm), s->id);
}

static void npu_event_exit(struct npu_sync *s, int idx)
{
	drm_dev_exit(idx);
	npu_sync_put(s);
}

int npu_ioctl_event_query(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_event_query *args = data;
	struct npu_fw_sync __iomem *e;
	struct npu_sync *s;
	int idx;

	e = npu_event_enter(drm, file, args->id, &s, &idx);
	if (IS_ERR(e))
		return PTR_ERR(e);
	args->recorded = readq(&e->value) != 0;
	args->timestamp_ns = readq(&e->timestamp_ns);
	npu_event_exit(s, idx);
	return 0;
}

int npu_ioctl_event_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_event_wait *args = data;
	struct npu_fw_sync __iomem *e;
	struct npu_sync *s;
	long timeout, left;
	int idx;

	if (args->pad)
		return -EINVAL;
	e = npu_event_enter(drm, file, args->id, &s, &idx);
	if (IS_ERR(e))
		return PTR_ERR(e);
	timeout = npu_timeout_jiffies(args->timeout_ns);
	left = wait_event_interruptible_timeout(ndev->sync_wq, readq(&e->value) != 0,
						timeout);
	npu_event_exit(s, idx);
	if (left < 0)
		return left;
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
	s = npu_sync_lookup(ctx, args->id, NPU_SYNC_NOTIFY);
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
	kref_get(&s->ref);
	fput(f);

	mutex_lock(&ctx->lock);
	ret = xa_insert(&ctx->syncs, s->id, s, GFP_KERNEL);
	mutex_unlock(&ctx->lock);
	if (ret) {
		/* -EBUSY: ids are device-wide, so it is this one, held already. */
		npu_sync_put(s);
		if (ret != -EBUSY)
			return ret;
	}
	args->id = s->id;
	return 0;
}
