// SPDX-License-Identifier: GPL-2.0-only
/*
 * Task queues, batches and their completion.
 *
 * Each context gets one hardware queue on its first submit: a slot in
 * the device's queue table and a ring in HBM. A batch is the user's tasks
 * plus a FENCE carrying its sequence number; the device raises the queue
 * interrupt after each FENCE and when a queue faults, and the threaded
 * handler retires finished batches (dropping what they kept alive) and
 * wakes waiters.
 *
 * Locking: q->submit_lock serialises writers of one ring. ndev->queue_lock
 * protects ndev->queues[] and every queue's job list and completion
 * state; it is taken after ctx->lock and q->submit_lock, never before.
 * Jobs are freed with no lock held: dropping the last reference to a
 * mapping can release a context, and with it a queue.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/dma-fence.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "npu_ctx.h"
#include "npu_fence.h"
#include "npu_gem.h"
#include "npu_hw.h"
#include "npu_ipc.h"
#include "npu_queue.h"

static_assert(NPU_QUEUE_DEPTH_MIN > NPU_SUBMIT_MAX_TASKS);	/* + its fence */

/* User tasks are written to the ring as they are, once checked. */
static_assert(sizeof(struct drm_npu_task) == sizeof(struct npu_fw_task));
static_assert((int)NPU_TASK_NOP == (int)NPU_FW_TASK_NOP &&
	      (int)NPU_TASK_COPY == (int)NPU_FW_TASK_COPY &&
	      (int)NPU_TASK_FILL == (int)NPU_FW_TASK_FILL &&
	      (int)NPU_TASK_KERNEL == (int)NPU_FW_TASK_KERNEL);

static struct npu_fw_queue __iomem *npu_queue_slot(struct npu_device *ndev, u32 id)
{
	return (struct npu_fw_queue __iomem *)(ndev->hbm + NPU_FW_QUEUE_TABLE) + id;
}

static void npu_job_free(struct npu_job *job)
{
	u32 i;

	for (i = 0; i < job->nmaps; i++) {
		struct drm_gem_object *obj = &job->maps[i]->bo->base;

		npu_bo_map_put(job->maps[i]);
		drm_gem_object_put(obj);
	}
	kfree(job->maps);
	/* Last: whoever waits on the fence finds the buffers released. */
	if (job->fence) {
		if (job->error)
			dma_fence_set_error(job->fence, job->error);
		dma_fence_signal(job->fence);
		dma_fence_put(job->fence);
	}
	kfree(job);
}

/* Under queue_lock: every job left on q fails with `error`. */
static void npu_queue_fail_jobs(struct npu_queue *q, int error, struct list_head *retired)
{
	struct npu_job *job;

	list_for_each_entry(job, &q->jobs, link)
		job->error = error;
	list_splice_tail_init(&q->jobs, retired);
}

static void npu_jobs_free(struct list_head *jobs)
{
	struct npu_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, jobs, link) {
		list_del(&job->link);
		npu_job_free(job);
	}
}

/* Under queue_lock: retire what the device finished, note a failure. */
static void npu_queue_update(struct npu_device *ndev, struct npu_queue *q,
			     struct list_head *retired)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	u64 done = readq(&slot->done_seq);
	struct npu_job *job, *tmp;

	list_for_each_entry_safe(job, tmp, &q->jobs, link) {
		if (job->seq > done)
			break;
		list_move_tail(&job->link, retired);
	}
	q->done_seq = max(q->done_seq, done);

	if (!q->failed && readl(&slot->state) == NPU_QUEUE_FAULTED) {
		u32 head = readl(&slot->head);

		q->failed = true;
		switch (readl(&slot->error)) {
		case NPU_FW_EFAULT:
			q->status = NPU_JOB_FAULT;
			break;
		case NPU_FW_EKERNEL:
			q->status = NPU_JOB_KERNEL_ERROR;
			break;
		default:
			q->status = NPU_JOB_INVALID;
			break;
		}
		q->fault_access = readl(&slot->error_access);
		q->fault_address = readq(&slot->error_address);
		job = list_first_entry_or_null(&q->jobs, struct npu_job, link);
		q->error_seq = job ? job->seq : q->done_seq + 1;
		q->error_task = job ? head - job->first_slot : 0;
		/* Nothing behind the failed task will run. */
		npu_queue_fail_jobs(q, -EIO, retired);
		npu_info(ndev, "context %u: %s at %#llx (%s) in batch %llu, task %u\n",
			 q->ctx->id, q->status == NPU_JOB_FAULT ? "MMU fault" :
			 q->status == NPU_JOB_KERNEL_ERROR ? "kernel error" : "invalid task",
			 q->fault_address, q->fault_access ? "write" : "read",
			 q->error_seq, q->error_task);
	}
	wake_up_all(&q->wq);
}

static irqreturn_t npu_queue_irq(int irq, void *arg)
{
	struct npu_device *ndev = arg;
	LIST_HEAD(retired);
	u32 i;

	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++)
		if (ndev->queues[i])
			npu_queue_update(ndev, ndev->queues[i], &retired);
	mutex_unlock(&ndev->queue_lock);
	npu_jobs_free(&retired);
	return IRQ_HANDLED;
}

static void npu_queue_fini_device(struct drm_device *drm, void *arg)
{
	ida_destroy(&to_npu_device(drm)->queue_ida);
}

int npu_queue_init_device(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	int ret;

	ret = drmm_mutex_init(&ndev->drm, &ndev->queue_lock);
	if (ret)
		return ret;
	ida_init(&ndev->queue_ida);
	ret = drmm_add_action_or_reset(&ndev->drm, npu_queue_fini_device, NULL);
	if (ret)
		return ret;
	ndev->queues = drmm_kcalloc(&ndev->drm, ndev->fw.num_queues,
				    sizeof(*ndev->queues), GFP_KERNEL);
	if (!ndev->queues)
		return -ENOMEM;
	ret = devm_request_threaded_irq(&pdev->dev, pci_irq_vector(pdev, NPU_VEC_QUEUE),
					NULL, npu_queue_irq, IRQF_ONESHOT,
					"npu-queue", ndev);
	if (ret)
		npu_err(ndev, "cannot request queue IRQ: %d\n", ret);
	return ret;
}

/*
 * Stop every hardware queue and drop all cached translations: at probe
 * (a previous driver may have left work running) and at remove (the
 * memory the work touches is about to change hands).
 */
int npu_queue_quiesce_hw(struct npu_device *ndev)
{
	u64 args[4] = { 0 };
	u32 i;
	int ret;

	for (i = 0; i < ndev->fw.num_queues; i++) {
		args[0] = i;
		ret = npu_ipc_send(ndev, NPU_FW_CMD_QUEUE_STOP, args, NULL);
		if (ret)
			return ret;
	}
	args[0] = 0;
	return npu_ipc_send(ndev, NPU_FW_CMD_TLB_INVALIDATE, args, NULL);
}

/* The device is gone: fail everything in flight so nothing waits forever. */
void npu_queue_abort_all(struct npu_device *ndev)
{
	LIST_HEAD(retired);
	u32 i;

	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++) {
		struct npu_queue *q = ndev->queues[i];
		struct npu_job *job;

		if (!q)
			continue;
		job = list_first_entry_or_null(&q->jobs, struct npu_job, link);
		if (!q->failed) {
			q->failed = true;
			q->status = NPU_JOB_ABORTED;
			q->error_seq = job ? job->seq : q->next_seq + 1;
		}
		npu_queue_fail_jobs(q, -ENODEV, &retired);
		wake_up_all(&q->wq);
	}
	mutex_unlock(&ndev->queue_lock);
	npu_jobs_free(&retired);
}

static void npu_queue_release(struct kref *ref)
{
	struct npu_queue *q = container_of(ref, struct npu_queue, ref);

	mutex_destroy(&q->submit_lock);
	kfree(q);
}

static void npu_queue_put(struct npu_queue *q)
{
	kref_put(&q->ref, npu_queue_release);
}

/* Under ctx->lock: a new queue at ctx->queues[id]. */
static int npu_queue_create(struct npu_ctx *ctx, u32 id, u32 priority, u32 entries)
{
	struct npu_device *ndev = ctx->ndev;
	struct npu_fw_queue __iomem *slot;
	u64 args[4] = { 0 };
	struct npu_queue *q;
	int ret;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	ret = ida_alloc_max(&ndev->queue_ida, ndev->fw.num_queues - 1, GFP_KERNEL);
	if (ret < 0) {
		kfree(q);
		return ret == -ENOSPC ? -EBUSY : ret;
	}
	q->hw_id = ret;
	kref_init(&q->ref);
	q->ctx = ctx;
	q->id = id;
	q->priority = priority;
	q->entries = entries;
	q->fence_context = dma_fence_context_alloc(1);
	mutex_init(&q->submit_lock);
	INIT_LIST_HEAD(&q->jobs);
	init_waitqueue_head(&q->wq);

	ret = npu_hbm_alloc(ndev, ctx, NPU_MEM_REGION_QUEUES, &q->ring,
			    q->entries * sizeof(struct npu_fw_task), PAGE_SIZE);
	if (ret)
		goto err_id;

	slot = npu_queue_slot(ndev, q->hw_id);
	writeq(q->ring.start, &slot->ring_offset);
	writel(q->entries, &slot->ring_entries);
	writel(ctx->id, &slot->context);
	writeq(ctx->mmu.root, &slot->pt_root);
	writel(priority, &slot->priority);
	writel(0, &slot->tail);
	args[0] = q->hw_id;
	ret = npu_ipc_send(ndev, NPU_FW_CMD_QUEUE_START, args, NULL);
	if (ret)
		goto err_ring;

	mutex_lock(&ndev->queue_lock);
	ndev->queues[q->hw_id] = q;
	mutex_unlock(&ndev->queue_lock);
	ctx->queues[id] = q;
	return 0;

err_ring:
	npu_hbm_free(ndev, ctx, NPU_MEM_REGION_QUEUES, &q->ring);
err_id:
	ida_free(&ndev->queue_ida, q->hw_id);
	mutex_destroy(&q->submit_lock);
	kfree(q);
	return ret;
}

/*
 * Take the queue out of service: the device stops it, work still queued
 * fails as aborted (waiters wake), and the ring and slot are freed. The
 * caller has removed it from its context's table already.
 */
void npu_queue_destroy(struct npu_queue *q)
{
	struct npu_device *ndev = q->ctx->ndev;
	u64 args[4] = { q->hw_id };
	LIST_HEAD(retired);
	int idx;

	mutex_lock(&ndev->queue_lock);
	ndev->queues[q->hw_id] = NULL;
	mutex_unlock(&ndev->queue_lock);

	if (drm_dev_enter(&ndev->drm, &idx)) {
		npu_ipc_send(ndev, NPU_FW_CMD_QUEUE_STOP, args, NULL);
		drm_dev_exit(idx);
	}

	/* A submitter holding submit_lock is writing the ring: let it finish. */
	mutex_lock(&q->submit_lock);
	mutex_lock(&ndev->queue_lock);
	if (!q->failed) {
		struct npu_job *job = list_first_entry_or_null(&q->jobs, struct npu_job, link);

		q->failed = true;
		q->status = NPU_JOB_ABORTED;
		q->error_seq = job ? job->seq : q->next_seq + 1;
	}
	npu_queue_fail_jobs(q, -ECANCELED, &retired);
	wake_up_all(&q->wq);
	mutex_unlock(&ndev->queue_lock);
	npu_hbm_free(ndev, q->ctx, NPU_MEM_REGION_QUEUES, &q->ring);
	ida_free(&ndev->queue_ida, q->hw_id);
	mutex_unlock(&q->submit_lock);

	npu_jobs_free(&retired);
	npu_queue_put(q);
}

/*
 * The queue `id` of ctx, referenced; the default queue (0) is created on
 * first use. NULL-free: returns an ERR_PTR.
 */
static struct npu_queue *npu_queue_lookup(struct npu_ctx *ctx, u32 id, bool create)
{
	struct npu_queue *q;
	int ret = 0;

	if (id >= NPU_CTX_QUEUES)
		return ERR_PTR(-EINVAL);
	mutex_lock(&ctx->lock);
	if (!ctx->queues[id] && id == 0 && create)
		ret = npu_queue_create(ctx, 0, NPU_QUEUE_PRIORITY_NORMAL, NPU_QUEUE_DEPTH_DEFAULT);
	q = ctx->queues[id];
	if (q)
		kref_get(&q->ref);
	mutex_unlock(&ctx->lock);
	if (ret)
		return ERR_PTR(ret);
	return q ? q : ERR_PTR(-EINVAL);
}

int npu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_queue_create *args = data;
	u32 depth = args->depth ? args->depth : NPU_QUEUE_DEPTH_DEFAULT;
	int ret = -EBUSY, idx;
	u32 id;

	if (args->flags || args->queue || args->priority > NPU_QUEUE_PRIORITY_REALTIME ||
	    !is_power_of_2(depth) || depth < NPU_QUEUE_DEPTH_MIN || depth > NPU_QUEUE_DEPTH_MAX)
		return -EINVAL;
	if (args->priority == NPU_QUEUE_PRIORITY_REALTIME && !capable(CAP_SYS_NICE))
		return -EPERM;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	mutex_lock(&ctx->lock);
	for (id = 1; id < NPU_CTX_QUEUES; id++) {
		if (!ctx->queues[id]) {
			ret = npu_queue_create(ctx, id, args->priority, depth);
			break;
		}
	}
	mutex_unlock(&ctx->lock);
	drm_dev_exit(idx);
	if (!ret)
		args->queue = id;
	return ret;
}

int npu_ioctl_queue_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_queue_destroy *args = data;
	struct npu_queue *q;

	if (args->pad || !args->queue || args->queue >= NPU_CTX_QUEUES)
		return -EINVAL;
	mutex_lock(&ctx->lock);
	q = ctx->queues[args->queue];
	ctx->queues[args->queue] = NULL;
	mutex_unlock(&ctx->lock);
	if (!q)
		return -EINVAL;
	npu_queue_destroy(q);
	return 0;
}

static bool npu_task_valid(const struct drm_npu_task *t)
{
	u64 unused = 0;
	int i, first_unused;

	if (t->flags || t->pad)
		return false;
	switch (t->type) {
	case NPU_TASK_NOP:
		first_unused = 0;
		break;
	case NPU_TASK_COPY:
		if (!t->args[2])
			return false;
		first_unused = 3;
		break;
	case NPU_TASK_FILL:
		if (!t->args[1] || (t->args[0] | t->args[1]) & 3 || t->args[2] > U32_MAX)
			return false;
		first_unused = 3;
		break;
	case NPU_TASK_KERNEL:
		/* The argument block itself is the device's to check. */
		if (t->args[1] > NPU_MAX_BLOCK_DIM)
			return false;
		first_unused = 2;
		break;
	default:
		return false;
	}
	for (i = first_unused; i < ARRAY_SIZE(t->args); i++)
		unused |= t->args[i];
	return !unused;
}

/*
 * Under ctx->lock: take a reference on every mapping (and its buffer) in
 * [va, va + size). An address nothing maps is left for the device to
 * fault on: that is how a context learns it touched what it may not.
 */
static int npu_job_hold_range(struct npu_job *job, struct npu_ctx *ctx,
			      u64 va, u64 size, u32 *cap)
{
	struct drm_mm_node *node;
	u64 end = va + size;

	if (end < va)
		end = U64_MAX;
	drm_mm_for_each_node_in_range(node, &ctx->va_mm, va, end) {
		struct npu_bo_map *map = container_of(node, struct npu_bo_map, va);

		if (!kref_get_unless_zero(&map->ref))
			continue;	/* going away: not mapped for the device */
		if (job->nmaps == *cap) {
			struct npu_bo_map **maps;

			*cap = max(8u, *cap * 2);
			maps = krealloc(job->maps, *cap * sizeof(*maps), GFP_KERNEL);
			if (!maps) {
				npu_bo_map_put(map);
				return -ENOMEM;
			}
			job->maps = maps;
		}
		drm_gem_object_get(&map->bo->base);
		job->maps[job->nmaps++] = map;
	}
	return 0;
}

static struct npu_job *npu_job_create(struct npu_ctx *ctx,
				      const struct drm_npu_task *tasks, u32 count)
{
	struct npu_job *job = kzalloc(sizeof(*job), GFP_KERNEL);
	u32 i, cap = 0;
	int ret = 0;

	if (!job)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&job->link);
	mutex_lock(&ctx->lock);
	for (i = 0; i < count && !ret; i++) {
		const struct drm_npu_task *t = &tasks[i];

		if (t->type == NPU_TASK_COPY) {
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[2], &cap);
			if (!ret)
				ret = npu_job_hold_range(job, ctx, t->args[1], t->args[2], &cap);
		} else if (t->type == NPU_TASK_FILL) {
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[1], &cap);
		} else if (t->type == NPU_TASK_KERNEL) {
			/*
			 * Only the argument block: the tensors it names are in
			 * device memory the driver does not parse. Closing one
			 * early makes the launch fault, never reach freed memory
			 * (unmapping waits for the task running on the device).
			 */
			ret = npu_job_hold_range(job, ctx, t->args[0],
						 sizeof(struct drm_npu_kernel_args), &cap);
		}
	}
	mutex_unlock(&ctx->lock);
	if (ret) {
		npu_job_free(job);
		return ERR_PTR(ret);
	}
	return job;
}

static bool npu_queue_has_room(struct npu_device *ndev, struct npu_queue *q, u32 need)
{
	u32 head = readl(&npu_queue_slot(ndev, q->hw_id)->head);

	return READ_ONCE(q->failed) || READ_ONCE(q->tail) - head + need <= q->entries;
}

/*
 * Write the batch and its FENCE task to the ring and ring the doorbell.
 * On success the job belongs to the queue and *out_fence is a reference
 * to its dma_fence.
 */
static int npu_queue_push(struct npu_device *ndev, struct npu_queue *q,
			  struct npu_job *job, const struct drm_npu_task *tasks,
			  u32 count, u64 *seq, struct dma_fence **out_fence)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	struct npu_fw_task fence = { .type = NPU_FW_TASK_FENCE };
	void __iomem *ring = ndev->hbm + q->ring.start;
	u32 need = count + 1, i;
	int ret;

	mutex_lock(&q->submit_lock);
	while (!npu_queue_has_room(ndev, q, need)) {
		mutex_unlock(&q->submit_lock);
		ret = wait_event_interruptible(q->wq, npu_queue_has_room(ndev, q, need));
		if (ret)
			return ret;
		mutex_lock(&q->submit_lock);
	}

	job->seq = q->next_seq + 1;
	job->first_slot = q->tail;
	job->ntasks = count;
	job->fence = npu_fence_create(q->fence_context, job->seq);
	if (!job->fence) {
		mutex_unlock(&q->submit_lock);
		return -ENOMEM;
	}
	mutex_lock(&ndev->queue_lock);
	if (q->failed) {
		mutex_unlock(&ndev->queue_lock);
		mutex_unlock(&q->submit_lock);
		job->error = -ECANCELED;	/* never queued */
		return -EIO;
	}
	*out_fence = dma_fence_get(job->fence);
	list_add_tail(&job->link, &q->jobs);
	mutex_unlock(&ndev->queue_lock);

	for (i = 0; i < count; i++)
		memcpy_toio(ring + ((q->tail + i) % q->entries) * sizeof(fence),
			    &tasks[i], sizeof(fence));
	fence.args[0] = job->seq;
	memcpy_toio(ring + ((q->tail + count) % q->entries) * sizeof(fence),
		    &fence, sizeof(fence));
	q->next_seq = job->seq;
	WRITE_ONCE(q->tail, q->tail + need);
	/* The tasks land before the tail that publishes them. */
	wmb();
	writel(q->tail, &slot->tail);
	npu_hw_doorbell(ndev, NPU_VEC_QUEUE);
	*seq = job->seq;
	mutex_unlock(&q->submit_lock);
	return 0;
}

int npu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_submit *args = data;
	struct drm_npu_syncobj in[NPU_SUBMIT_MAX_SYNCOBJS], out[NPU_SUBMIT_MAX_SYNCOBJS];
	struct npu_syncobj_out outs;
	struct dma_fence *fence;
	struct drm_npu_task *tasks;
	struct npu_queue *q;
	struct npu_job *job;
	int ret = 0, idx;
	u32 i;

	if (args->flags || args->pad || !args->count || args->count > NPU_SUBMIT_MAX_TASKS)
		return -EINVAL;
	tasks = kvmalloc_array(args->count, sizeof(*tasks), GFP_KERNEL);
	if (!tasks)
		return -ENOMEM;
	if (copy_from_user(tasks, u64_to_user_ptr(args->tasks),
			   args->count * sizeof(*tasks))) {
		ret = -EFAULT;
		goto out_free;
	}
	for (i = 0; i < args->count; i++) {
		if (!npu_task_valid(&tasks[i])) {
			ret = -EINVAL;
			goto out_free;
		}
	}
	ret = npu_syncobj_copy(args->in_syncobjs, args->in_count, in);
	if (!ret)
		ret = npu_syncobj_copy(args->out_syncobjs, args->out_count, out);
	if (ret)
		goto out_free;
	/* Dependencies first: nothing is held while waiting for them. */
	ret = npu_syncobj_wait_in(file, in, args->in_count);
	if (ret)
		goto out_free;
	ret = npu_syncobj_prepare_out(file, out, args->out_count, &outs);
	if (ret)
		goto out_free;

	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_release;
	}
	q = npu_queue_lookup(ctx, args->queue, true);
	if (IS_ERR(q)) {
		ret = PTR_ERR(q);
		goto out_exit;
	}
	if (READ_ONCE(q->failed)) {
		ret = -EIO;
		goto out_put;
	}

	job = npu_job_create(ctx, tasks, args->count);
	if (IS_ERR(job)) {
		ret = PTR_ERR(job);
		goto out_put;
	}
	ret = npu_queue_push(ndev, q, job, tasks, args->count, &args->seq, &fence);
	if (ret) {
		npu_job_free(job);
		goto out_put;
	}
	npu_syncobj_install_out(&outs, fence);
	dma_fence_put(fence);
out_put:
	npu_queue_put(q);
out_exit:
	drm_dev_exit(idx);
out_release:
	npu_syncobj_release_out(&outs);
out_free:
	kvfree(tasks);
	return ret;
}

static bool npu_queue_settled(struct npu_queue *q, u64 seq)
{
	return READ_ONCE(q->done_seq) >= seq || READ_ONCE(q->failed);
}

int npu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_wait *args = data;
	struct npu_queue *q;
	long timeout, left;
	int ret;

	q = npu_queue_lookup(ctx, args->queue, false);
	if (IS_ERR(q))
		/* The default queue not created yet: no batch to wait for. */
		return args->queue == 0 && !args->seq ? 0 : PTR_ERR(q);
	if (args->seq > READ_ONCE(q->next_seq)) {
		npu_queue_put(q);
		return -EINVAL;
	}

	if (args->timeout_ns < 0)
		timeout = MAX_SCHEDULE_TIMEOUT;
	else
		timeout = min_t(u64, nsecs_to_jiffies64(args->timeout_ns) + !!args->timeout_ns,
				MAX_SCHEDULE_TIMEOUT - 1);
	left = wait_event_interruptible_timeout(q->wq, npu_queue_settled(q, args->seq),
						timeout);
	if (left < 0) {
		npu_queue_put(q);
		return left;
	}

	mutex_lock(&ndev->queue_lock);
	args->status = NPU_JOB_DONE;
	if (args->seq <= q->done_seq) {
		ret = 0;
	} else if (q->failed && args->seq >= q->error_seq) {
		args->status = q->status;
		args->error_task = q->error_task;
		args->fault_address = q->fault_address;
		args->fault_access = q->fault_access;
		ret = -EIO;
	} else {
		ret = -ETIMEDOUT;
	}
	mutex_unlock(&ndev->queue_lock);
	npu_queue_put(q);
	return ret;
}
