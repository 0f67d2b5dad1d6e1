/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_QUEUE_H__
#define __NPU_QUEUE_H__

#include <drm/drm_mm.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>

#include "npu_compat.h"
#include "npu_drv.h"
#include "npu_hold.h"

struct npu_ctx;
struct npu_dep;
struct npu_tasklist;

/*
 * A batch: a drm_sched job of its queue's scheduler, and what it holds
 * alive until the device is done with it.
 */
struct npu_job {
	struct drm_sched_job base;
	struct npu_queue *q;		/* referenced once a scheduler job */
	struct work_struct release;	/* see npu_job_sched_free() */
	struct list_head link;		/* in q->jobs while on the ring */
	u64 seq;
	u32 first_slot;			/* ring position of its first task */
	u32 ntasks;			/* the batch's tasks */
	u32 nring;			/* ring slots they take: RUN_LISTs' I/O tables too */
	struct npu_fw_task *ring;	/* what run_job writes: the tasks in the device's format */
	struct drm_npu_task *tasks;	/* as submitted, checked */
	struct npu_holds holds;
	u32 nlists;
	struct npu_tasklist **lists;	/* its RUN_LISTs run them: referenced */
	struct dma_fence *hw_fence;	/* signalled when the device is done */
	bool retiring;			/* counted in ctx->retiring: npu_job_retire() */
	u32 nin, next_in;
	struct dma_fence *in[DRM_NPU_SUBMIT_MAX_SYNCOBJS];	/* in-syncobjs' fences */
	struct npu_dep *deps[DRM_NPU_SUBMIT_MAX_SYNCOBJS];	/* for those pending */
};

static inline struct npu_job *to_npu_job(struct drm_sched_job *job)
{
	return container_of(job, struct npu_job, base);
}

/*
 * A queue of a context: one hardware queue slot, a ring in HBM, and its
 * own drm_sched scheduler and entity (the device schedules between
 * queues; drm_sched resolves a queue's dependencies, throttles it to its
 * ring and times its jobs out). Referenced by the context's table and by
 * every ioctl using it, so a destroy cannot free it under a submitter or
 * a waiter.
 */
struct npu_queue {
	struct kref ref;
	struct npu_device *ndev;
	struct list_head pool_link;	/* npu_queue_pool, once released */
	struct npu_ctx *ctx;
	u32 id;				/* in the context, 0 = default */
	u32 hw_id;
	u32 priority;
	u32 entries;
	u32 timeout_ms;			/* execution limit; 0: the default */
	u64 fence_context;
	struct drm_mm_node ring;
	struct npu_bo *done_bo;		/* holds the completion word, referenced */
	u64 done_at;			/* its HBM offset; 0: none */
	struct npu_bo *prof_bo;		/* holds the profiling ring, referenced */
	struct drm_gpu_scheduler sched;
	struct drm_sched_entity entity;
	char name[24];			/* the scheduler's */

	struct mutex submit_lock;	/* next_seq, arm and push order, stops, dead */
	bool dead;			/* destroyed: ring and hw_id given back */
	u64 next_seq;
	atomic_t nr_jobs;		/* initialised and not yet freed */
	atomic_t queued;		/* ring slots of the jobs not yet freed */
	u32 tail;			/* written by run_job only */

	/* Under ndev->queue_lock, written by the completion handler. */
	struct list_head jobs;		/* on the ring, in seq order */
	u64 done_seq;
	bool failed;
	u32 status;			/* enum drm_npu_job_status */
	u64 error_seq;
	u32 error_task;
	u32 error_list_task;		/* DRM_NPU_NO_LIST_TASK unless a RUN_LIST's */
	u32 fault_access;
	u64 fault_address;
	ktime_t busy_since;		/* when the ring last got work */
	u32 last_head;			/* the timeout's progress watch, */
	u32 last_list_pos;		/* with the list task at head */
	u32 last_exec;			/* the slot's exec_ms when head last moved */
	wait_queue_head_t wq;		/* completions: WAIT */
	wait_queue_head_t drain_wq;	/* jobs freed, or failed: backlog, destroy */
	struct list_head ucmds;		/* parked io_uring commands, by seq */

	spinlock_t dep_lock;		/* dep, deps_cut */
	struct npu_dep *dep;		/* what the scheduler waits on, if ours */
	bool deps_cut;			/* failed: no more waiting on anyone */
};

struct dma_fence;
struct npu_bo;
struct drm_npu_task;

/* Hardware queue `id`'s slot in the device's queue table. */
static inline struct npu_fw_queue __iomem *npu_queue_slot(struct npu_device *ndev, u32 id)
{
	return (struct npu_fw_queue __iomem *)(ndev->hbm + NPU_FW_QUEUE_TABLE) + id;
}

int npu_queue_init_device(struct npu_device *ndev);
void npu_queue_pool_fini(void);
/* What QUEUE_CREATE asks for (the default queue: normal priority, default depth). */
struct npu_queue_params {
	u32 priority;
	u32 entries;
	u32 timeout_ms;
	struct npu_bo *done_bo;		/* taken over by a created queue */
	u64 done_offset;
	struct npu_bo *prof_bo;		/* the same */
	u64 prof_offset;
	u32 prof_entries;
};

int npu_queue_create(struct npu_ctx *ctx, u32 id, const struct npu_queue_params *p);
struct npu_queue *npu_queue_lookup(struct npu_ctx *ctx, u32 id, bool create);
void npu_queue_put(struct npu_queue *q);
int npu_queue_quiesce_hw(struct npu_device *ndev);
void npu_queue_abort_all(struct npu_device *ndev);
void npu_queue_poll(struct npu_device *ndev);
int npu_queue_fail_all(struct npu_device *ndev, u32 status, u32 fw_cmd);
void npu_queue_stop(struct npu_queue *q, u32 status);
void npu_queue_destroy(struct npu_queue *q);
bool npu_queue_has_room(struct npu_device *ndev, struct npu_queue *q, u32 need);
int npu_queue_write(struct npu_device *ndev, struct npu_queue *q, struct npu_job *job);
bool npu_queue_timed_out(struct npu_queue *q);

/* npu_job.c: the scheduler's side of a batch. */
extern const struct drm_sched_backend_ops npu_sched_ops;
void npu_job_retire(struct npu_job *job);
struct npu_job *npu_job_create(struct npu_ctx *ctx, struct drm_npu_task *tasks, u32 count,
			       const u64 *io);
int npu_job_alloc_deps(struct npu_job *job);
void npu_job_cut_deps(struct npu_queue *q);
void npu_job_free(struct npu_job *job);
/* The task of the batch at ring slot `slot` from its first (ntasks: its FENCE). */
u32 npu_job_task_at(const struct npu_job *job, u32 slot);


int npu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_queue_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_queue_abort(struct drm_device *drm, void *data, struct drm_file *file);
/* A queue holds at most this many rings' worth of batches not yet freed. */
#define NPU_QUEUE_BACKLOG_DEPTHS	16

/* npu_submit.c: the steps of queueing a batch, shared with SUBMIT_MULTI. */
struct npu_job *npu_batch_build(struct npu_ctx *ctx, u64 uptr, u32 count);
int npu_batch_depend(struct drm_file *file, struct npu_job *job,
		     const struct drm_npu_syncobj *in, u32 in_count);
int npu_batch_queue(struct drm_device *drm, struct npu_ctx *ctx, struct npu_queue **qs,
		    struct npu_job **jobs, u32 n, bool nonblock, int *idx);
void npu_batch_detach(struct npu_job *job);
void npu_batch_unqueue(struct npu_job *job);
struct dma_fence *npu_batch_push(struct npu_queue *q, struct npu_job *job);

int npu_submit(struct drm_file *file, struct drm_npu_submit *args, bool nonblock,
	       struct npu_queue **qp);
int npu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file);
int npu_ioctl_submit_multi(struct drm_device *drm, void *data, struct drm_file *file);
/* A task as SUBMIT takes it (a list's tasks are checked so too). */
bool npu_task_valid(const struct drm_npu_task *t);
void npu_task_to_fw(struct npu_fw_task *fw, const struct drm_npu_task *t);
struct npu_queue *npu_wait_queue(struct npu_ctx *ctx, u32 id, u64 seq);
int npu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __NPU_QUEUE_H__ */
