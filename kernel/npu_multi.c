// SPDX-License-Identifier: GPL-2.0-only
/*
 * DRM_NPU_SUBMIT_MULTI: batches on several queues of a context queued as
 * one run, typically the task lists of a model's streams, which join
 * through notifies on the device.
 *
 * All or nothing: every batch is built and admitted to its queue first;
 * then, under the context's multi_lock, every queue's submit_lock is
 * taken (in queue-id order), every queue checked, and every job numbered
 * and pushed before any lock goes. Only a run takes two submit locks at
 * once, and runs of a context take them one at a time under multi_lock
 * (lockdep's nest lock), so no two runs interleave their takes; a single
 * SUBMIT or a stop takes one.
 *
 * The run (struct npu_run) watches its batches' finished fences. One
 * that fails stops the other queues, from the driver's workqueue (a stop
 * is a mailbox round trip; fence callbacks run in atomic context): a
 * partner waiting on the device for a notify the failed one will never
 * record would otherwise wait forever, and a wait is not a hang. When
 * the last batch is done the run's own fence signals, with the first
 * error: that one fence is the run's completion in the out-syncobjs.
 *
 * Lifetime: the ioctl, each batch not yet done and the stop work hold
 * the run. It holds its queues and the DRM device: its last reference
 * may go after an unbind and the file's last close, and a queue's
 * release reaches the device (its queue pool). That last reference may
 * go in a fence callback, so it is freed from the workqueue.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/dma-fence.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>

#include "npu_ctx.h"
#include "npu_fence.h"
#include "npu_queue.h"

struct npu_run;

struct npu_run_batch {
	struct dma_fence_cb cb;
	struct npu_run *run;
	struct npu_queue *q;		/* referenced by the run */
	struct npu_job *job;		/* until pushed */
	struct dma_fence *finished;	/* referenced, once pushed */
	u32 id;				/* the queue's id in the context */
	u32 entry;			/* its place in the caller's entries */
	u64 seq;			/* once pushed */
};

/*
 * The run's fence. Its own type, not npu_fence.c's: it signals from the
 * callback of a batch's finished fence, with that chain's fence locks
 * held, so its lock must be a lock class of its own (lockdep would see
 * one npu_fence lock taken inside another).
 */
struct npu_run_fence {
	struct dma_fence base;		/* first: freed as the fence */
	spinlock_t lock;
};

static const char *npu_run_fence_driver_name(struct dma_fence *f)
{
	return "npu";
}

static const char *npu_run_fence_timeline_name(struct dma_fence *f)
{
	return "npu-run";
}

static const struct dma_fence_ops npu_run_fence_ops = {
	.get_driver_name = npu_run_fence_driver_name,
	.get_timeline_name = npu_run_fence_timeline_name,
	.release = npu_fence_release_module,
};

static struct dma_fence *npu_run_fence_create(void)
{
	struct npu_run_fence *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return NULL;
	spin_lock_init(&f->lock);
	dma_fence_init(&f->base, &npu_run_fence_ops, &f->lock, dma_fence_context_alloc(1), 1);
	npu_fence_hold_module();
	return &f->base;
}

/* The run's reference; a fence never signalled (the run was never queued) is cancelled. */
static void npu_run_fence_put(struct dma_fence *f)
{
	if (!dma_fence_is_signaled(f)) {
		dma_fence_set_error(f, -ECANCELED);
		dma_fence_signal(f);
	}
	dma_fence_put(f);
}

struct npu_run {
	struct kref ref;
	struct drm_device *drm;		/* referenced */
	struct work_struct stop;	/* stop the queues: one failed */
	struct work_struct free;
	atomic_t pending;		/* batches not done */
	atomic_t failed;
	int error;			/* the first, for the fence */
	struct dma_fence *fence;	/* the run's completion, if asked for */
	u32 n;
	struct npu_run_batch b[DRM_NPU_SUBMIT_MULTI_MAX];
};

static void npu_run_free(struct work_struct *work)
{
	struct npu_run *run = container_of(work, struct npu_run, free);
	u32 i;

	for (i = 0; i < run->n; i++) {
		dma_fence_put(run->b[i].finished);
		npu_queue_put(run->b[i].q);
	}
	if (run->fence)
		npu_run_fence_put(run->fence);
	drm_dev_put(run->drm);
	kfree(run);
}

static void npu_run_release(struct kref *ref)
{
	struct npu_run *run = container_of(ref, struct npu_run, ref);

	INIT_WORK(&run->free, npu_run_free);
	queue_work(npu_wq, &run->free);
}

static void npu_run_put(struct npu_run *run)
{
	kref_put(&run->ref, npu_run_release);
}

/* A batch failed: the queues of the others stop, whatever they wait for. */
static void npu_run_stop(struct work_struct *work)
{
	struct npu_run *run = container_of(work, struct npu_run, stop);
	u32 i;

	for (i = 0; i < run->n; i++)
		if (!dma_fence_is_signaled(run->b[i].finished))
			npu_queue_stop(run->b[i].q, DRM_NPU_JOB_ABORTED);
	npu_run_put(run);
}

static void npu_run_batch_done(struct dma_fence *f, struct dma_fence_cb *cb)
{
	struct npu_run *run = container_of(cb, struct npu_run_batch, cb)->run;

	if (f->error && !atomic_xchg(&run->failed, 1)) {
		run->error = f->error;
		kref_get(&run->ref);	/* the stop's */
		/* A stop is a mailbox round trip on the way to fences' signals, as a timeout's. */
		queue_work(npu_timeout_wq, &run->stop);
	}
	if (atomic_dec_and_test(&run->pending) && run->fence) {
		/* failed is set before pending drops: the error is seen. */
		if (atomic_read(&run->failed))
			dma_fence_set_error(run->fence, run->error);
		dma_fence_signal(run->fence);
	}
	npu_run_put(run);		/* the batch's */
}

static int npu_run_cmp(const void *a, const void *b)
{
	const struct npu_run_batch *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Build, admit and look up everything; nothing is pushed. */
static int npu_run_prepare(struct drm_file *file, struct npu_run *run,
			   const struct drm_npu_submit_multi *args,
			   const struct drm_npu_syncobj *in, int *idx)
{
	u32 count = args->entries.count;
	struct drm_device *drm = file->minor->dev;
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_submit_entry e[DRM_NPU_SUBMIT_MULTI_MAX];
	struct npu_queue *qs[DRM_NPU_SUBMIT_MULTI_MAX];
	struct npu_job *jobs[DRM_NPU_SUBMIT_MULTI_MAX];
	u32 i;
	int ret;

	ret = npu_obj_array_copy(e, &args->entries, sizeof(e[0]), sizeof(e[0]));
	if (ret)
		return ret;
	for (i = 0; i < count; i++)
		if (e[i].flags || e[i].pad)
			return -EINVAL;
	for (i = 0; i < count; i++) {
		struct npu_job *job;

		job = npu_batch_build(ctx, e[i].tasks, e[i].count);
		if (IS_ERR(job))
			return PTR_ERR(job);
		run->b[i].job = job;
		run->b[i].id = e[i].queue;
		run->b[i].entry = i;
		ret = npu_batch_depend(file, job, in, args->in_count);
		if (ret)
			return ret;
	}
	/* Queue-id order: the order the submit locks are taken in. */
	sort(run->b, count, sizeof(run->b[0]), npu_run_cmp, NULL);
	for (i = 1; i < count; i++)
		if (run->b[i].id == run->b[i - 1].id)
			return -EINVAL;
	for (i = 0; i < count; i++) {
		struct npu_queue *q = npu_queue_lookup(ctx, run->b[i].id, true);

		if (IS_ERR(q))
			return PTR_ERR(q);
		run->b[i].q = q;
		run->n = i + 1;
	}
	/*
	 * Room on every queue, or on none: waiting for one queue's room
	 * while holding another's admitted job kept that queue's destroy
	 * asleep, uninterruptibly, as long as the wait lasted.
	 */
	for (i = 0; i < count; i++) {
		qs[i] = run->b[i].q;
		jobs[i] = run->b[i].job;
	}
	if (!drm_dev_enter(drm, idx))
		return -ENODEV;
	ret = npu_batch_queue(drm, ctx, qs, jobs, count, false, idx);
	if (ret)
		return ret;	/* none is a scheduler job: freed as plain ones */
	drm_dev_exit(*idx);
	for (i = 0; i < count; i++)
		run->b[i].finished = ERR_PTR(-EINPROGRESS);	/* queued, not pushed */
	return 0;
}

/*
 * Each entry's sequence number, at the caller's stride. The run is queued
 * by now: a caller whose array cannot be written gets -EFAULT, and the
 * run goes on (it can still be waited for through its out-syncobjs).
 */
static int npu_run_write_seqs(const struct npu_run *run, const struct drm_npu_obj_array *a)
{
	u8 __user *entries = u64_to_user_ptr(a->array);
	u32 i;

	for (i = 0; i < run->n; i++) {
		u64 __user *seq = (u64 __user *)(entries + (size_t)run->b[i].entry * a->stride +
						 offsetof(struct drm_npu_submit_entry, seq));

		if (put_user(run->b[i].seq, seq))
			return -EFAULT;
	}
	return 0;
}

/* Free what a failed prepare left: jobs never pushed, their admissions. */
static void npu_run_unwind(struct npu_run *run, u32 count)
{
	u32 i;

	for (i = 0; i < count; i++) {
		struct npu_run_batch *b = &run->b[i];

		if (!b->job)
			continue;
		if (IS_ERR(b->finished))
			npu_batch_unqueue(b->job);
		else
			npu_job_free(b->job);
		b->job = NULL;
		b->finished = NULL;
	}
}

int npu_ioctl_submit_multi(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_submit_multi *args = data;
	struct drm_npu_syncobj in[DRM_NPU_SUBMIT_MAX_SYNCOBJS], out[DRM_NPU_SUBMIT_MAX_SYNCOBJS];
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_syncobj_out outs = { 0 };
	struct npu_run *run;
	int ret, idx;
	u32 i;

	if (args->flags || args->pad || !args->entries.count ||
	    args->entries.count > DRM_NPU_SUBMIT_MULTI_MAX)
		return -EINVAL;
	ret = npu_syncobj_copy(args->in_syncobjs, args->in_count, in);
	if (!ret)
		ret = npu_syncobj_copy(args->out_syncobjs, args->out_count, out);
	if (ret)
		return ret;
	run = kzalloc(sizeof(*run), GFP_KERNEL_ACCOUNT);
	if (!run)
		return -ENOMEM;
	kref_init(&run->ref);
	run->drm = drm;
	drm_dev_get(drm);
	INIT_WORK(&run->stop, npu_run_stop);
	if (args->out_count) {
		run->fence = npu_run_fence_create();
		if (!run->fence) {
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = npu_run_prepare(file, run, args, in, &idx);
	if (!ret)
		ret = npu_syncobj_prepare_out(file, out, args->out_count, &outs);
	if (ret)
		goto out_unwind;

	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_release;
	}
	mutex_lock(&ctx->multi_lock);
	for (i = 0; i < run->n; i++)
		mutex_lock_nest_lock(&run->b[i].q->submit_lock, &ctx->multi_lock);
	for (i = 0; i < run->n; i++)
		if (READ_ONCE(run->b[i].q->failed) || run->b[i].q->dead)
			ret = -EIO;
	if (!ret) {
		atomic_set(&run->pending, run->n);
		for (i = 0; i < run->n; i++) {
			run->b[i].finished = npu_batch_push(run->b[i].q, run->b[i].job);
			run->b[i].job = NULL;
			run->b[i].seq = run->b[i].q->next_seq;
		}
	}
	for (i = run->n; i-- > 0;)
		mutex_unlock(&run->b[i].q->submit_lock);
	mutex_unlock(&ctx->multi_lock);
	drm_dev_exit(idx);
	if (ret)
		goto out_release;

	for (i = 0; i < run->n; i++) {
		struct npu_run_batch *b = &run->b[i];

		b->run = run;
		kref_get(&run->ref);	/* the batch's, until it is done */
		if (dma_fence_add_callback(b->finished, &b->cb, npu_run_batch_done))
			npu_run_batch_done(b->finished, &b->cb);
	}
	if (args->out_count)
		npu_syncobj_install_out(&outs, run->fence);
	ret = npu_run_write_seqs(run, &args->entries);
	npu_run_put(run);
	return ret;

out_release:
	npu_syncobj_release_out(&outs);
out_unwind:
	npu_run_unwind(run, args->entries.count);
out:
	npu_run_put(run);
	return ret;
}
