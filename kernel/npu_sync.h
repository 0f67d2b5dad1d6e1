/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_SYNC_H__
#define __NPU_SYNC_H__

#include <linux/kref.h>
#include <linux/types.h>

#include "npu_drv.h"

struct npu_ctx;

/* An event or notify: one entry of the device's sync table. */
struct npu_sync {
	struct kref ref;	/* contexts holding it, exported fds, jobs */
	struct npu_device *ndev;	/* referenced: fds outlive the device */
	u32 id;
	u32 kind;		/* enum drm_npu_sync_kind */
	u64 hold_mark;		/* the last holder that took it: npu_hold.c */
	/* Parked io_uring EVENT_WAITs, under ndev->ucmd_lock; see npu_uring.c. */
	struct list_head ucmds;
	struct list_head waited_link;	/* in ndev->ucmd_events while it has some */
};

int npu_sync_init_device(struct npu_device *ndev);
unsigned int npu_sync_ctx_max(void);
void npu_sync_ctx_fini(struct npu_ctx *ctx);
struct npu_sync *npu_sync_lookup(struct npu_ctx *ctx, u32 id, u32 kind);
void npu_sync_put(struct npu_sync *s);
bool npu_sync_put_not_last(struct npu_sync *s);
bool npu_event_recorded(struct npu_sync *s, u64 *timestamp_ns);

int npu_ioctl_sync_create(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_sync_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_event_query(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_event_wait(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_notify_export(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_notify_import(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __NPU_SYNC_H__ */
