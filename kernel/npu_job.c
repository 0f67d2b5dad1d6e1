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
 *    dependencies left: its jobs fail at once. The scheduler never waits
 *    on another's fence directly but on a dependency fence of ours that
 *    the queue's failure cuts short (struct npu_dep), so a failed or
 *    destroyed queue's jobs never wait for anyone: they drain, and
 *    drm_sched_entity_fini() has nothing left to kill;
 *  - run: write the tasks and a FENCE to the ring; the hardware fence is
 *    signalled by the completion handler (npu_queue.c) when the device
 *    passes the FENCE, or with an error when the queue fails;
 *  - timedout: the scheduler's timer, asked whether a task actually
 *    executed too long (npu_queue_timed_out()); a queue waiting on an
 *    event or behind higher priorities is not hung;
 *  - free: drop what the batch held; a last reference (which may sleep
 *    on ctx->vm_lock or the mailbox) from a workqueue, off the scheduler.
 *
 * Locking: run and prepare take ndev->queue_lock only; the timeout takes
 * q->submit_lock to stop the queue, inside a fence-signalling section
 * (npu_queue.c). Neither lock is held across a memory allocation
 * anywhere, as the dma-fence rules require of what runs on the way to a
 * fence's signal.
 */
#include <drm/drm_drv.h>
#include <linux/delay.h>
#include <linux/dma-fence.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_fence.h"
#include "npu_list.h"
#include "npu_queue.h"

/*
 * A dependency on a fence that is not ours: signalled when that fence is,
 * or with -ECANCELED when the queue fails, whichever comes first. The
 * scheduler waits on one dependency of one job at a time, so a queue has
 * at most one armed (q->dep). Allocated at submit for each in-fence still
 * pending, so nothing is allocated on the scheduler's way to a signal.
 */
struct npu_dep {
	struct dma_fence base;		/* first: freed as the dependency */
	spinlock_t lock;
	struct dma_fence_cb cb;
	struct dma_fence *in;		/* referenced for the dependency's life */
};

static const char *npu_dep_driver_name(struct dma_fence *f)
{
	return "npu";
}

static const char *npu_dep_timeline_name(struct dma_fence *f)
{
	return "npu-dependency";
}

/*
 * `in` goes with the dependency, not when it signals: a cut may still
 * look at it (to take its callback back) through q->dep.
 */
static void npu_dep_release(struct dma_fence *f)
{
	struct npu_dep *d = container_of(f, struct npu_dep, base);

	dma_fence_put(d->in);
	npu_fence_release_module(f);
}

static const struct dma_fence_ops npu_dep_ops = {
	.get_driver_name = npu_dep_driver_name,
	.get_timeline_name = npu_dep_timeline_name,
	.release = npu_dep_release,
};

/* By whoever took the callback: signal with `error`, drop its reference. */
static void npu_dep_signal(struct npu_dep *d, int error)
{
	if (error)
		dma_fence_set_error(&d->base, error);
	dma_fence_signal(&d->base);
	dma_fence_put(&d->base);	/* the callback's */
}

/* The fence waited on signalled: so does the dependency. */
static void npu_dep_signalled(struct dma_fence *in, struct dma_fence_cb *cb)
{
	npu_dep_signal(container_of(cb, struct npu_dep, cb), in->error);
}

/* The queue failed: `d` signals now unless its fence beat us to it. */
static void npu_dep_cut(struct npu_dep *d)
{
	if (dma_fence_remove_callback(d->in, &d->cb))
		npu_dep_signal(d, -ECANCELED);
}

/*
 * Arm `d` on `in` (both the caller's, taken over): the fence for the
 * scheduler to wait on, or NULL when the queue has failed. A failure
 * while arming either finds `d` in q->dep with its callback in place, or
 * is seen here once the callback is: one of the two cuts it.
 */
static struct dma_fence *npu_dep_arm(struct npu_queue *q, struct npu_dep *d,
				     struct dma_fence *in)
{
	struct npu_dep *old;

	spin_lock(&q->dep_lock);
	if (q->deps_cut) {
		spin_unlock(&q->dep_lock);
		dma_fence_put(in);
		kfree(d);
		return NULL;
	}
	spin_lock_init(&d->lock);
	dma_fence_init(&d->base, &npu_dep_ops, &d->lock, dma_fence_context_alloc(1), 1);
	npu_fence_hold_module();
	d->in = in;
	INIT_LIST_HEAD(&d->cb.node);	/* a cut before the callback misses */
	old = q->dep;
	q->dep = d;
	dma_fence_get(&d->base);	/* q->dep's */
	spin_unlock(&q->dep_lock);
	if (old)
		dma_fence_put(&old->base);

	dma_fence_get(&d->base);	/* the callback's */
	if (dma_fence_add_callback(in, &d->cb, npu_dep_signalled))
		npu_dep_signalled(in, &d->cb);	/* signalled already */
	else if (READ_ONCE(q->deps_cut))
		npu_dep_cut(d);
	return &d->base;	/* the scheduler's reference */
}

/*
 * The queue failed: what its scheduler waits on signals now, and nothing
 * is waited on again. Takes q->dep_lock and then the awaited fence's
 * lock, never both at once (the fence's callback runs under its lock).
 */
void npu_job_cut_deps(struct npu_queue *q)
{
	struct npu_dep *d;

	spin_lock(&q->dep_lock);
	q->deps_cut = true;
	d = q->dep;
	q->dep = NULL;
	spin_unlock(&q->dep_lock);
	if (d) {
		npu_dep_cut(d);
		dma_fence_put(&d->base);
	}
}

/* At submit: a dependency for each in-fence still pending. */
int npu_job_alloc_deps(struct npu_job *job)
{
	u32 i;

	for (i = 0; i < job->nin; i++) {
		if (dma_fence_is_signaled(job->in[i]))
			continue;
		job->deps[i] = kzalloc(sizeof(*job->deps[i]), GFP_KERNEL_ACCOUNT);
		if (!job->deps[i])
			return -ENOMEM;
	}
	return 0;
}

/*
 * Under ctx->vm_lock: a RUN_LIST's list, and the ranges its run binds to the
 * list's slots (`io`, one address per slot). The run holds both, and the
 * ring gets the device's RUN_LIST and the I/O table after it.
 */
static int npu_job_hold_run(struct npu_job *job, struct npu_ctx *ctx,
			    const struct drm_npu_task *t, const u64 *io,
			    struct npu_fw_task *ring)
{
	struct npu_tasklist *l = npu_tasklist_get(ctx, (u32)t->args[0]);
	u32 k, n = (u32)t->args[2];
	int ret = 0;

	if (!l)
		return -EINVAL;
	job->lists[job->nlists++] = l;
	if (n != l->nslots)
		return -EINVAL;
	for (k = 0; k < n && !ret; k++)
		ret = npu_holds_range(&job->holds, ctx, io[k], l->slots[k].size);
	memset(ring, 0, npu_task_ring_slots(t) * sizeof(*ring));
	ring->type = NPU_FW_TASK_RUN_LIST;
	ring->args[0] = l->va.start;
	ring->args[1] = l->count;
	ring->args[2] = l->va.start + (u64)l->count * sizeof(*ring);
	ring->args[3] = l->npatches;
	ring->args[4] = n;
	/* Eight addresses to a ring slot, the last one's rest zero. */
	memcpy(ring + 1, io, n * sizeof(*io));
	return ret;
}

/*
 * A job for `count` checked tasks, holding what they name; it takes over
 * `tasks` (kvmalloc'ed), also on failure. `io` holds the I/O tables of
 * its RUN_LISTs, one after the other. Not yet a scheduler job.
 */
struct npu_job *npu_job_create(struct npu_ctx *ctx, struct drm_npu_task *tasks, u32 count,
			       const u64 *io)
{
	struct npu_job *job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	u32 i, at, runs = 0;
	int ret = 0;

	if (!job) {
		kvfree(tasks);
		return ERR_PTR(-ENOMEM);
	}
	INIT_LIST_HEAD(&job->link);
	job->tasks = tasks;
	job->ntasks = count;
	for (i = 0; i < count; i++) {
		job->nring += npu_task_ring_slots(&tasks[i]);
		runs += tasks[i].type == DRM_NPU_TASK_RUN_LIST;
	}
	job->ring = kvmalloc_array(job->nring, sizeof(*job->ring), GFP_KERNEL_ACCOUNT);
	if (runs)
		job->lists = kcalloc(runs, sizeof(*job->lists), GFP_KERNEL_ACCOUNT);
	if (!job->ring || (runs && !job->lists)) {
		npu_job_free(job);
		return ERR_PTR(-ENOMEM);
	}
	/* RUN_LISTs' slots are built as their lists are held, below. */
	for (i = 0, at = 0; i < count; at += npu_task_ring_slots(&tasks[i]), i++)
		if (tasks[i].type != DRM_NPU_TASK_RUN_LIST)
			npu_task_to_fw(&job->ring[at], &tasks[i]);
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
	mutex_lock(&ctx->vm_lock);
	npu_holds_begin(&job->holds, ctx);
	for (i = 0, at = 0; i < count && !ret; at += npu_task_ring_slots(&tasks[i]), i++) {
		if (tasks[i].type != DRM_NPU_TASK_RUN_LIST) {
			ret = npu_holds_task(&job->holds, ctx, &tasks[i], 0);
			continue;
		}
		ret = npu_job_hold_run(job, ctx, &tasks[i], io, &job->ring[at]);
		io += tasks[i].args[2];
	}
	mutex_unlock(&ctx->vm_lock);
	if (ret) {
		npu_job_free(job);
		return ERR_PTR(ret);
	}
	return job;
}

u32 npu_job_task_at(const struct npu_job *job, u32 slot)
{
	u32 i, at = 0;

	for (i = 0; i < job->ntasks; i++) {
		at += npu_task_ring_slots(&job->tasks[i]);
		if (slot < at)
			return i;
	}
	return i;
}

/* Drop what the job holds and free it (not a scheduler job, or no longer). */
void npu_job_free(struct npu_job *job)
{
	u32 i;

	npu_holds_release(&job->holds);
	for (i = 0; i < job->nlists; i++)
		npu_tasklist_put(job->lists[i]);
	kfree(job->lists);
	for (i = job->next_in; i < job->nin; i++)
		dma_fence_put(job->in[i]);
	for (i = 0; i < job->nin; i++)
		kfree(job->deps[i]);	/* never armed */
	kvfree(job->ring);
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
		u32 i = job->next_in++;
		struct npu_dep *d = job->deps[i];

		f = job->in[i];
		job->deps[i] = NULL;
		/* Pending now, so pending at submit: it has its dependency. */
		if (!dma_fence_is_signaled(f)) {
			f = npu_dep_arm(q, d, f);
			if (f)
				return f;
			continue;
		}
		dma_fence_put(f);
		kfree(d);
	}
	if (drm_dev_enter(&ndev->drm, &idx)) {
		room = npu_queue_has_room(ndev, q, job->nring + 1);
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

	npu_sched_thread_normal(&q->sched);
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		npu_job_retire(job);
		return ERR_PTR(-ENODEV);
	}
	ret = npu_queue_write(ndev, q, job);
	drm_dev_exit(idx);
	if (ret) {
		npu_job_retire(job);	/* failed now: WAIT says so already */
		return ERR_PTR(ret);
	}
	return dma_fence_get(job->hw_fence);
}

static enum drm_gpu_sched_stat npu_job_timedout(struct drm_sched_job *sched_job)
{
	struct npu_queue *q = to_npu_job(sched_job)->q;
	enum drm_gpu_sched_stat stat;
	unsigned int hold;
	bool cookie;

	/* On the way to the job's signal: lockdep checks the rules for it. */
	cookie = dma_fence_begin_signalling();
	if (npu_queue_timed_out(q))
		npu_queue_stop(q, DRM_NPU_JOB_TIMEOUT);
	/*
	 * Fault injection: the job is off the scheduler's pending list, and
	 * its fence may have signalled (the stop above, or the job finishing
	 * meanwhile); holding it off longer lets the scheduler's free work
	 * run and miss it every time, which npu_sched_keep_job() must make
	 * up for.
	 */
	hold = READ_ONCE(q->ctx->ndev->inject_hold_timeout_ms);
	if (hold)
		msleep(hold);
	stat = npu_sched_keep_job(sched_job);
	dma_fence_end_signalling(cookie);
	return stat;
}

/*
 * The device is done with the job, or never will run it: from here until
 * npu_job_done() it counts as holding what a finished batch should have
 * given back (npu_ctx_await_retired()). Once per job, from where its end
 * is decided: the completion, before it signals the fence (the scheduler
 * may free the job as soon as it has), or run_job failing it.
 */
void npu_job_retire(struct npu_job *job)
{
	if (job->retiring)
		return;
	job->retiring = true;
	atomic_inc(&job->q->ctx->retiring);
}

/* The job is gone: the queue's backlog and destroy learn it. */
static void npu_job_done(struct npu_job *job)
{
	struct npu_queue *q = job->q;
	struct drm_device *drm = &q->ndev->drm;
	bool retiring = job->retiring;

	atomic_sub(job->nring + 1, &q->queued);
	npu_job_free(job);
	/* What it held is back (the queue holds the context). */
	if (retiring && atomic_dec_and_test(&q->ctx->retiring))
		wake_up_all(&q->ctx->retire_wq);
	atomic_dec(&q->nr_jobs);
	/*
	 * Destroy waits for the last job, submitters for room in the
	 * backlog; not WAIT, which the completion wakes (q->wq).
	 */
	wake_up_all(&q->drain_wq);
	/*
	 * Can be the last: a job the scheduler killed is freed from its kill
	 * work, after destroy has gone on. The job's device reference keeps
	 * what the queue's release reaches.
	 */
	npu_queue_put(q);
	drm_dev_put(drm);
}

/*
 * Drop what the job holds that is not a last reference; true if that was
 * everything. A last one frees a mapping or a list (ctx->vm_lock, held
 * across allocations, and a mailbox round trip for the TLB) or an event:
 * that must not stand between the scheduler and its next job's run.
 */
static bool npu_job_put_not_last(struct npu_job *job)
{
	bool all = npu_holds_put_not_last(&job->holds);

	while (job->nlists && npu_tasklist_put_not_last(job->lists[job->nlists - 1]))
		job->nlists--;
	return all && !job->nlists;
}

/* The rest goes from the driver's workqueue (the job holds the DRM device). */
static void npu_job_release_work(struct work_struct *work)
{
	struct npu_job *job = container_of(work, struct npu_job, release);
	unsigned int hold = READ_ONCE(job->q->ndev->inject_hold_release_ms);

	/* Fault injection: a free work that runs late, as on a busy machine. */
	if (hold)
		msleep(hold);
	npu_job_done(job);
}

static void npu_job_sched_free(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);

	drm_sched_job_cleanup(sched_job);
	if (!READ_ONCE(job->q->ndev->inject_hold_release_ms) && npu_job_put_not_last(job)) {
		npu_job_done(job);	/* the common case: no wakeup */
		return;
	}
	INIT_WORK(&job->release, npu_job_release_work);
	queue_work(npu_wq, &job->release);
}

const struct drm_sched_backend_ops npu_sched_ops = {
	NPU_SCHED_OPS_PREPARE = npu_job_prepare,
	.run_job = npu_job_run,
	.timedout_job = npu_job_timedout,
	.free_job = npu_job_sched_free,
};
