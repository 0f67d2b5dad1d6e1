// SPDX-License-Identifier: GPL-2.0-only
/*
 * Batches as drm_sched jobs.
 *
 * A batch is built at submit (npu_job_create(): what its tasks name is
 * looked up and held), armed and pushed to its queue's entity in sequence
 * order (npu_submit.c), and run by the queue's scheduler once its
 * dependencies are met:
 *  - prepare: the in-syncobjs' fences one by one, then room on the ring
 *    (the fence of the oldest batch on it). A failed queue has no
 *    dependencies left: its jobs fail at once, and killing them never
 *    waits on anyone else's fence;
 *  - run: write the tasks and a FENCE to the ring; the hardware fence is
 *    signalled by the completion handler (npu_queue.c) when the device
 *    passes the FENCE, or with an error when the queue fails;
 *  - timedout: the scheduler's timer, asked whether a task actually
 *    executed too long (npu_queue_timed_out()); a queue waiting on an
 *    event or behind higher priorities is not hung;
 *  - free: drop what the batch held, outside the signalling path.
 *
 * Locking: run and prepare take ndev->queue_lock only; the timeout takes
 * q->submit_lock to stop the queue. Neither lock is held across a memory
 * allocation anywhere, as the dma-fence rules require of what runs on the
 * way to a fence's signal.
 */
#include <drm/drm_drv.h>
#include <linux/dma-fence.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_fence.h"
#include "npu_gem.h"
#include "npu_queue.h"
#include "npu_sync.h"

/*
 * Mappings one batch may hold. Each is held once however many tasks name
 * it, so this bounds the array whatever the tasks' ranges; more is -E2BIG.
 */
#define NPU_JOB_MAX_MAPS	4096

/*
 * Under ctx->lock: take a reference on every mapping in [va, va + size)
 * that the job does not hold yet. An address nothing maps is left for the
 * device to fault on: that is how a context learns it touched what it may
 * not. Room is made before a reference is taken, so nothing is ever put
 * here: a last put takes bo->maps_lock, which ranks above ctx->lock.
 */
static int npu_job_hold_range(struct npu_job *job, struct npu_ctx *ctx,
			      u64 va, u64 size, u32 *cap)
{
	struct drm_mm_node *node;
	u64 end = va + size;

	lockdep_assert_held(&ctx->lock);
	if (end < va)
		end = U64_MAX;
	drm_mm_for_each_node_in_range(node, &ctx->va_mm, va, end) {
		struct npu_bo_map *map = container_of(node, struct npu_bo_map, va);

		/* A range past the VA space ends on the allocator's own node. */
		if (node == &ctx->va_mm.head_node)
			break;
		if (map->job_mark == job->mark)
			continue;	/* held already */
		if (job->nmaps == *cap) {
			struct npu_bo_map **maps;
			u32 n;

			if (*cap == NPU_JOB_MAX_MAPS)
				return -E2BIG;
			n = min(max(16u, *cap * 2), (u32)NPU_JOB_MAX_MAPS);
			maps = kvmalloc_array(n, sizeof(*maps), GFP_KERNEL_ACCOUNT);
			if (!maps)
				return -ENOMEM;
			if (job->nmaps)
				memcpy(maps, job->maps, job->nmaps * sizeof(*maps));
			kvfree(job->maps);
			job->maps = maps;
			*cap = n;
		}
		if (!kref_get_unless_zero(&map->ref))
			continue;	/* going away: not mapped for the device */
		map->job_mark = job->mark;
		job->maps[job->nmaps++] = map;
	}
	return 0;
}

/*
 * Under ctx->lock: the event or notify a task names must be one this
 * context holds, of the task's kind; the job keeps it alive.
 */
static int npu_job_hold_sync(struct npu_job *job, struct npu_ctx *ctx,
			     const struct drm_npu_task *t, u32 *cap)
{
	u32 kind = t->type <= DRM_NPU_TASK_EVENT_RESET ? DRM_NPU_SYNC_EVENT : DRM_NPU_SYNC_NOTIFY;
	struct npu_sync *s;

	lockdep_assert_held(&ctx->lock);
	if (t->args[0] > U32_MAX)
		return -EINVAL;
	s = npu_sync_hold(ctx, (u32)t->args[0], kind);
	if (!s)
		return -EINVAL;
	if (job->nsyncs == *cap) {
		struct npu_sync **syncs;

		*cap = max(4u, *cap * 2);
		syncs = krealloc(job->syncs, *cap * sizeof(*syncs), GFP_KERNEL);
		if (!syncs) {
			npu_sync_put(s);
			return -ENOMEM;
		}
		job->syncs = syncs;
	}
	job->syncs[job->nsyncs++] = s;
	return 0;
}

/*
 * A job for `count` checked tasks, holding what they name; it takes over
 * `tasks` (kvmalloc'ed), also on failure. Not yet a scheduler job.
 */
struct npu_job *npu_job_create(struct npu_ctx *ctx, struct drm_npu_task *tasks, u32 count)
{
	struct npu_job *job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	u32 i, cap = 0, sync_cap = 0;
	int ret = 0;

	if (!job) {
		kvfree(tasks);
		return ERR_PTR(-ENOMEM);
	}
	INIT_LIST_HEAD(&job->link);
	job->tasks = tasks;
	job->ntasks = count;
	job->hw_fence = npu_fence_alloc();
	if (!job->hw_fence) {
		npu_job_free(job);
		return ERR_PTR(-ENOMEM);
	}
	/* NOPs and barriers hold nothing: no need for the context's lock. */
	for (i = 0; i < count; i++)
		if (tasks[i].type != DRM_NPU_TASK_NOP && tasks[i].type != DRM_NPU_TASK_BARRIER)
			break;
	if (i == count)
		return job;
	mutex_lock(&ctx->lock);
	job->mark = ++ctx->job_marks;
	for (i = 0; i < count && !ret; i++) {
		const struct drm_npu_task *t = &tasks[i];

		if (t->type == DRM_NPU_TASK_COPY) {
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[2], &cap);
			if (!ret)
				ret = npu_job_hold_range(job, ctx, t->args[1], t->args[2], &cap);
		} else if (t->type == DRM_NPU_TASK_FILL) {
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[1], &cap);
		} else if (t->type == DRM_NPU_TASK_TIMESTAMP) {
			ret = npu_job_hold_range(job, ctx, t->args[0], 8, &cap);
		} else if (t->type >= DRM_NPU_TASK_EVENT_RECORD) {
			ret = npu_job_hold_sync(job, ctx, t, &sync_cap);
		} else if (t->type == DRM_NPU_TASK_KERNEL) {
			/*
			 * Only the argument block: the tensors it names are in
			 * device memory the driver does not parse. Closing one
			 * early makes the launch fault, never reach freed memory
			 * (unmapping waits for the task running on the device).
			 */
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[2], &cap);
		}
	}
	mutex_unlock(&ctx->lock);
	if (ret) {
		npu_job_free(job);
		return ERR_PTR(ret);
	}
	return job;
}

/* Drop what the job holds and free it (not a scheduler job, or no longer). */
void npu_job_free(struct npu_job *job)
{
	u32 i;

	for (i = 0; i < job->nmaps; i++)
		npu_bo_map_put(job->maps[i]);
	kvfree(job->maps);
	for (i = 0; i < job->nsyncs; i++)
		npu_sync_put(job->syncs[i]);
	kfree(job->syncs);
	for (i = job->next_in; i < job->nin; i++)
		dma_fence_put(job->in[i]);
	kvfree(job->tasks);
	if (job->hw_fence)
		npu_fence_free(job->hw_fence);
	kfree(job);
}

static struct dma_fence *npu_job_prepare(struct drm_sched_job *sched_job,
					 struct drm_sched_entity *entity)
{
	struct npu_job *job = to_npu_job(sched_job);
	struct npu_queue *q = job->q;
	struct npu_device *ndev = q->ctx->ndev;
	struct dma_fence *f = NULL;
	struct npu_job *oldest;
	bool room = true;
	int idx;

	if (READ_ONCE(q->failed))
		return NULL;
	while (job->next_in < job->nin) {
		f = job->in[job->next_in++];
		if (!dma_fence_is_signaled(f))
			return f;	/* the scheduler's reference now */
		dma_fence_put(f);
	}
	if (drm_dev_enter(&ndev->drm, &idx)) {
		room = npu_queue_has_room(ndev, q, job->ntasks + 1);
		drm_dev_exit(idx);
	}
	if (room)
		return NULL;
	/* The ring frees up as the batches on it finish, oldest first. */
	f = NULL;
	mutex_lock(&ndev->queue_lock);
	oldest = list_first_entry_or_null(&q->jobs, struct npu_job, link);
	if (oldest)
		f = dma_fence_get(oldest->hw_fence);
	mutex_unlock(&ndev->queue_lock);
	return f;
}

static struct dma_fence *npu_job_run(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);
	struct npu_queue *q = job->q;
	struct npu_device *ndev = q->ctx->ndev;
	int idx, ret;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return ERR_PTR(-ENODEV);
	ret = npu_queue_write(ndev, q, job);
	drm_dev_exit(idx);
	if (ret)
		return ERR_PTR(ret);
	return dma_fence_get(job->hw_fence);
}

static enum drm_gpu_sched_stat npu_job_timedout(struct drm_sched_job *sched_job)
{
	struct npu_queue *q = to_npu_job(sched_job)->q;

	if (npu_queue_timed_out(q))
		npu_queue_stop(q, DRM_NPU_JOB_TIMEOUT);
	return npu_sched_keep_job(sched_job);
}

/*
 * What a finished job held goes from the driver's workqueue: dropping a
 * buffer mapping takes ctx->lock (held across allocations) and a mailbox
 * round trip, which must not stand between the scheduler and its next
 * job's run. The work holds the DRM device; the module drains npu_wq.
 */
static void npu_job_release_work(struct work_struct *work)
{
	struct npu_job *job = container_of(work, struct npu_job, release);
	struct npu_queue *q = job->q;
	struct npu_device *ndev = q->ctx->ndev;

	atomic_sub(job->ntasks + 1, &q->queued);
	npu_job_free(job);
	atomic_dec(&q->nr_jobs);
	/* Destroy waits for the last job, submitters for room in the backlog. */
	wake_up_all(&q->wq);
	npu_queue_put(q);
	drm_dev_put(&ndev->drm);
}

static void npu_job_sched_free(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);

	drm_sched_job_cleanup(sched_job);
	drm_dev_get(&job->q->ctx->ndev->drm);
	INIT_WORK(&job->release, npu_job_release_work);
	queue_work(npu_wq, &job->release);
}

const struct drm_sched_backend_ops npu_sched_ops = {
	NPU_SCHED_OPS_PREPARE = npu_job_prepare,
	.run_job = npu_job_run,
	.timedout_job = npu_job_timedout,
	.free_job = npu_job_sched_free,
};
