/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_QUEUE_H__
#define __NPU_QUEUE_H__

#include <drm/drm_mm.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>

#include "npu_drv.h"

struct npu_ctx;
struct npu_bo_map;
struct npu_sync;

/* A batch in flight: what it holds alive until the device is done. */
struct npu_job {
	struct list_head link;
	u64 seq;
	u64 mark;			/* tells the mappings it holds, while built */
	u32 first_slot;			/* ring position of its first task */
	u32 ntasks;
	u32 nmaps;
	struct npu_bo_map **maps;	/* referenced, with their buffers */
	u32 nsyncs;
	struct npu_sync **syncs;	/* events and notifies it names, referenced */
	struct drm_npu_task *tasks;	/* while in the backlog: what to write */
	struct dma_fence *fence;	/* signalled when the job is freed */
	int error;			/* the fence's error, 0 if it completed */
};

/*
 * A queue of a context: one hardware queue slot and a ring in HBM.
 * Referenced by the context's table and by every ioctl using it, so a
 * destroy cannot free it under a submitter or a waiter.
 */
struct npu_queue {
	struct kref ref;
	struct npu_ctx *ctx;
	u32 id;				/* in the context, 0 = default */
	u32 hw_id;
	u32 priority;
	u32 entries;
	u32 timeout_ms;			/* without progress; 0: the default */
	u64 fence_context;
	struct drm_mm_node ring;

	struct mutex submit_lock;	/* tail, next_seq, backlog, dead */
	bool dead;			/* destroyed: ring and hw_id given back */
	u32 tail;
	u64 next_seq;
	struct list_head backlog;	/* jobs waiting for ring room, in seq order */
	u32 backlog_tasks;		/* ring slots they need */

	/* Under ndev->queue_lock, written by the completion handler. */
	struct list_head jobs;
	u64 done_seq;
	bool failed;
	u32 status;			/* enum drm_npu_job_status */
	u64 error_seq;
	u32 error_task;
	u32 fault_access;
	u64 fault_address;
	ktime_t busy_since;		/* when the job list last became non-empty */
	u32 last_head;			/* progress watch, see npu_queue_check_hung() */
	u32 last_exec;			/* the slot's exec_ms when head last moved */
	struct list_head hang_link;	/* the watchdog's, while it stops the queue */
	wait_queue_head_t wq;
	struct list_head ucmds;		/* parked io_uring commands, by seq */
};

struct dma_fence;
struct drm_npu_task;

/* What a push does when the ring has no room (see npu_queue_push()). */
enum npu_push_mode {
	NPU_PUSH_BLOCK,			/* wait for room (npu_submit() only) */
	NPU_PUSH_NOWAIT,		/* -EAGAIN */
	NPU_PUSH_BACKLOG,		/* keep it in order until there is room */
};

/* A backlog holds at most this many rings' worth of tasks. */
#define NPU_QUEUE_BACKLOG_DEPTHS	16

/* Hardware queue `id`'s slot in the device's queue table. */
static inline struct npu_fw_queue __iomem *npu_queue_slot(struct npu_device *ndev, u32 id)
{
	return (struct npu_fw_queue __iomem *)(ndev->hbm + NPU_FW_QUEUE_TABLE) + id;
}

int npu_queue_init_device(struct npu_device *ndev);
int npu_queue_create(struct npu_ctx *ctx, u32 id, u32 priority, u32 entries,
		     u32 timeout_ms);
struct npu_queue *npu_queue_lookup(struct npu_ctx *ctx, u32 id, bool create);
void npu_queue_put(struct npu_queue *q);
int npu_queue_push(struct npu_device *ndev, struct npu_queue *q, struct npu_job *job,
		   const struct drm_npu_task *tasks, u32 count, enum npu_push_mode mode,
		   u64 *seq, struct dma_fence **out_fence);
void npu_job_free(struct npu_job *job);
bool npu_queue_room_or_gone(struct npu_device *ndev, struct npu_queue *q, u32 need);
void npu_queue_flush_retired(struct npu_device *ndev);
int npu_queue_quiesce_hw(struct npu_device *ndev);
void npu_queue_abort_all(struct npu_device *ndev);
void npu_queue_poll(struct npu_device *ndev);
void npu_queue_check_hung(struct npu_device *ndev);
int npu_queue_fail_all(struct npu_device *ndev, u32 status, u32 fw_cmd);
void npu_queue_destroy(struct npu_queue *q);
void npu_queue_abort(struct npu_queue *q);
int npu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_queue_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_queue_abort(struct drm_device *drm, void *data, struct drm_file *file);
int npu_submit(struct drm_file *file, struct drm_npu_submit *args,
	       enum npu_push_mode mode, struct npu_queue **qp);
int npu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file);
struct npu_queue *npu_wait_queue(struct npu_ctx *ctx, u32 id, u64 seq);
int npu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __NPU_QUEUE_H__ */
