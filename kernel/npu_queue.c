// SPDX-License-Identifier: GPL-2.0-only
/*
 * Task queues, batches and their completion. The ioctls that create
 * queues and submit to them are in npu_submit.c.
 *
 * Each context gets one hardware queue on its first submit: a slot in
 * the device's queue table and a ring in HBM. A batch is the user's tasks
 * plus a FENCE carrying its sequence number; the device raises the queue
 * interrupt after each FENCE and when a queue faults, and the threaded
 * handler retires finished batches (dropping what they kept alive) and
 * wakes waiters.
 *
 * A batch that finds the ring full either waits for room (the ioctl) or,
 * from io_uring, gets its sequence number and waits in the queue's
 * backlog; completions refill the ring from the backlog, in order, and a
 * failure fails the backlog too. New batches go behind the backlog.
 *
 * Locking: q->submit_lock serialises writers of one ring and guards its
 * backlog. ndev->queue_lock
 * protects ndev->queues[] and every queue's job list and completion
 * state; it is taken after ctx->lock and q->submit_lock, never before.
 * Jobs are freed with no lock held: dropping the last reference to a
 * mapping can release a context, and with it a queue.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/bitmap.h>
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
#include "npu_recovery.h"
#include "npu_sync.h"
#include "npu_uring.h"

static_assert(NPU_QUEUE_DEPTH_MIN > NPU_SUBMIT_MAX_TASKS);	/* + its fence */

/* Signal the job's fence, with its error: the device is done with it. */
static void npu_job_signal(struct npu_job *job)
{
	if (!job->fence)
		return;
	if (job->error)
		dma_fence_set_error(job->fence, job->error);
	dma_fence_signal(job->fence);
	dma_fence_put(job->fence);
	job->fence = NULL;
}

/* Drop what the job held; signals its fence first if nobody did. */
void npu_job_free(struct npu_job *job)
{
	u32 i;

	npu_job_signal(job);
	for (i = 0; i < job->nmaps; i++)
		npu_bo_map_put(job->maps[i]);
	kvfree(job->maps);
	for (i = 0; i < job->nsyncs; i++)
		npu_sync_put(job->syncs[i]);
	kfree(job->syncs);
	kvfree(job->tasks);
	kfree(job);
}

static void npu_retire_work(struct work_struct *work)
{
	struct npu_device *ndev = container_of(work, struct npu_device, retire_work);
	struct npu_job *job, *tmp;
	LIST_HEAD(jobs);

	spin_lock(&ndev->retire_lock);
	list_splice_init(&ndev->retired, &jobs);
	spin_unlock(&ndev->retire_lock);
	list_for_each_entry_safe(job, tmp, &jobs, link) {
		list_del(&job->link);
		npu_job_free(job);
	}
	/* Taken when this run was queued; may be the device's last. */
	drm_dev_put(&ndev->drm);
}

/* Under queue_lock: every job left on q fails with `error`. */
static void npu_queue_fail_jobs(struct npu_queue *q, int error, struct list_head *retired)
{
	struct npu_job *job;

	lockdep_assert_held(&q->ctx->ndev->queue_lock);
	list_for_each_entry(job, &q->jobs, link)
		job->error = error;
	list_splice_tail_init(&q->jobs, retired);
}

/*
 * Finished or failed jobs: signal their fences now, and leave dropping
 * what they held (buffer mappings, whose release takes ctx->lock and a
 * mailbox round trip) to a worker, outside the fence-signalling path.
 */
static void npu_jobs_retire(struct npu_device *ndev, struct list_head *jobs)
{
	struct npu_job *job;
	bool cookie;

	if (list_empty(jobs))
		return;
	cookie = dma_fence_begin_signalling();
	list_for_each_entry(job, jobs, link)
		npu_job_signal(job);
	dma_fence_end_signalling(cookie);
	spin_lock(&ndev->retire_lock);
	list_splice_tail_init(jobs, &ndev->retired);
	spin_unlock(&ndev->retire_lock);
	/* The worker keeps the device, and the module keeps npu_wq, alive. */
	drm_dev_get(&ndev->drm);
	if (!queue_work(npu_wq, &ndev->retire_work))
		drm_dev_put(&ndev->drm);
}

/* Wait until every retired job has dropped what it held. */
void npu_queue_flush_retired(struct npu_device *ndev)
{
	do {
		flush_work(&ndev->retire_work);
	} while (!list_empty_careful(&ndev->retired));
}

/* Under queue_lock: q's state changed; tell its ioctl and io_uring waiters. */
static void npu_queue_wake(struct npu_queue *q)
{
	lockdep_assert_held(&q->ctx->ndev->queue_lock);
	wake_up_all(&q->wq);
	npu_uring_queue_settle(q);
}

/* Under queue_lock: retire what the device finished, note a failure. */
static void npu_queue_update(struct npu_device *ndev, struct npu_queue *q,
			     struct list_head *retired)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	u64 done = readq(&slot->done_seq);
	struct npu_job *job, *tmp;

	lockdep_assert_held(&ndev->queue_lock);
	list_for_each_entry_safe(job, tmp, &q->jobs, link) {
		if (job->seq > done)
			break;
		list_move_tail(&job->link, retired);
		if (list_empty(&q->jobs))
			q->ctx->busy_ns += ktime_to_ns(ktime_sub(ktime_get(), q->busy_since));
	}
	WRITE_ONCE(q->done_seq, max(q->done_seq, done));

	if (!q->failed && readl(&slot->state) == NPU_QUEUE_FAULTED) {
		u32 head = readl(&slot->head);

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
		/* Last: io_uring parking reads the record without queue_lock. */
		smp_store_release(&q->failed, true);
		/* Nothing behind the failed task will run. */
		npu_queue_fail_jobs(q, -EIO, retired);
		/* A context can fault at will: keep the log readable. */
		dev_info_ratelimited(ndev->drm.dev,
				     "context %u: %s at %#llx (%s) in batch %llu, task %u\n",
				     q->ctx->id, q->status == NPU_JOB_FAULT ? "MMU fault" :
				     q->status == NPU_JOB_KERNEL_ERROR ? "kernel error" :
				     "invalid task", q->fault_address,
				     q->fault_access ? "write" : "read",
				     q->error_seq, q->error_task);
	}
	npu_queue_wake(q);
}

static void npu_queue_drain(struct npu_device *ndev, struct npu_queue *q);
static void __npu_queue_drain(struct npu_device *ndev, struct npu_queue *q,
			      struct list_head *dropped);

/*
 * Retire whatever the device finished, on every queue; then refill rings
 * from their backlogs.
 */
void npu_queue_poll(struct npu_device *ndev)
{
	DECLARE_BITMAP(backlogged, NPU_FW_MAX_QUEUES);
	LIST_HEAD(retired);
	u32 i;

	bitmap_zero(backlogged, NPU_FW_MAX_QUEUES);
	npu_hw_queue_irq_ack(ndev);
	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++) {
		struct npu_queue *q = ndev->queues[i];

		if (!q)
			continue;
		npu_queue_update(ndev, q, &retired);
		if (READ_ONCE(q->backlog_tasks))
			__set_bit(i, backlogged);
	}
	mutex_unlock(&ndev->queue_lock);
	npu_jobs_retire(ndev, &retired);
	for_each_set_bit(i, backlogged, NPU_FW_MAX_QUEUES) {
		struct npu_queue *q;

		/* Referenced under the lock: the slot may have changed hands. */
		mutex_lock(&ndev->queue_lock);
		q = ndev->queues[i];
		if (q)
			kref_get(&q->ref);
		mutex_unlock(&ndev->queue_lock);
		if (q) {
			npu_queue_drain(ndev, q);
			npu_queue_put(q);
		}
	}
	/* The same interrupt announces event records. */
	wake_up_all(&ndev->sync_wq);
	npu_uring_events_settle(ndev);
}

static irqreturn_t npu_queue_irq(int irq, void *arg)
{
	npu_queue_poll(arg);
	return IRQ_HANDLED;
}

static int npu_job_status_errno(u32 status)
{
	switch (status) {
	case NPU_JOB_TIMEOUT: return -ETIMEDOUT;
	case NPU_JOB_ABORTED: return -ENODEV;
	default: return -EIO;
	}
}

/* Under queue_lock: q fails with `status`; its jobs go to `retired`. */
static void npu_queue_fail(struct npu_device *ndev, struct npu_queue *q, u32 status,
			   struct list_head *retired)
{
	struct npu_job *job = list_first_entry_or_null(&q->jobs, struct npu_job, link);

	lockdep_assert_held(&ndev->queue_lock);
	if (!q->failed) {
		q->status = status;
		/* With nothing on the ring, the first unfinished is in the backlog. */
		q->error_seq = job ? job->seq : q->done_seq + 1;
		q->error_task = job ? readl(&npu_queue_slot(ndev, q->hw_id)->head) -
				      job->first_slot : 0;
		smp_store_release(&q->failed, true);	/* last, as above */
	}
	npu_queue_fail_jobs(q, npu_job_status_errno(status), retired);
	npu_queue_wake(q);
}

/*
 * Fail every queue with `status` and, if `fw_cmd`, send it to the device
 * before what the work held is released. Returns the command's result.
 */
int npu_queue_fail_all(struct npu_device *ndev, u32 status, u32 fw_cmd)
{
	u64 args[4] = { 0 };
	LIST_HEAD(retired);
	int ret = 0;
	u32 i;

	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++)
		if (ndev->queues[i])
			npu_queue_fail(ndev, ndev->queues[i], status, &retired);
	mutex_unlock(&ndev->queue_lock);
	npu_uring_fail_events(ndev, status);
	if (fw_cmd)
		ret = npu_ipc_send(ndev, fw_cmd, args, NULL);
	npu_jobs_retire(ndev, &retired);
	return ret;
}

static void npu_queue_stop(struct npu_queue *q, u32 status, bool destroy);

/*
 * A queue is hung when a task of its has executed on the device (exec_ms
 * in its slot) for its time limit without the head moving: the device
 * stops it and its work fails with NPU_JOB_TIMEOUT. A queue waiting on
 * an event, or starved by queues of higher priority, executes nothing
 * and is never hung.
 */
void npu_queue_check_hung(struct npu_device *ndev)
{
	struct npu_queue *q, *tmp;
	LIST_HEAD(hung);
	u32 i;

	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++) {
		struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, i);
		unsigned int limit;
		u32 head, exec;

		q = ndev->queues[i];
		if (!q || q->failed || list_empty(&q->jobs))
			continue;
		head = readl(&slot->head);
		exec = readl(&slot->exec_ms);
		if (head != q->last_head) {
			q->last_head = head;
			q->last_exec = exec;
			continue;
		}
		limit = q->timeout_ms ? q->timeout_ms : npu_recovery_job_timeout_ms();
		if (exec - q->last_exec < limit)
			continue;
		npu_err(ndev, "context %u queue %u: a task executed %u ms without finishing, stopping the queue\n",
			q->ctx->id, q->id, exec - q->last_exec);
		kref_get(&q->ref);
		list_add_tail(&q->hang_link, &hung);
	}
	mutex_unlock(&ndev->queue_lock);
	list_for_each_entry_safe(q, tmp, &hung, hang_link) {
		npu_queue_stop(q, NPU_JOB_TIMEOUT, false);
		npu_queue_put(q);
	}
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
	spin_lock_init(&ndev->retire_lock);
	INIT_LIST_HEAD(&ndev->retired);
	INIT_WORK(&ndev->retire_work, npu_retire_work);
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
	npu_queue_fail_all(ndev, NPU_JOB_ABORTED, 0);
}

static void npu_queue_release(struct kref *ref)
{
	struct npu_queue *q = container_of(ref, struct npu_queue, ref);

	mutex_destroy(&q->submit_lock);
	kfree(q);
}

void npu_queue_put(struct npu_queue *q)
{
	kref_put(&q->ref, npu_queue_release);
}

/* Under ctx->lock: a new queue at ctx->queues[id]. */
int npu_queue_create(struct npu_ctx *ctx, u32 id, u32 priority, u32 entries,
		     u32 timeout_ms)
{
	struct npu_device *ndev = ctx->ndev;
	struct npu_fw_queue __iomem *slot;
	u64 args[4] = { 0 };
	struct npu_queue *q;
	int ret;

	lockdep_assert_held(&ctx->lock);
	/* A slot the device may not have stopped is not handed out. */
	if (READ_ONCE(ndev->wedged))
		return -EIO;
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
	q->timeout_ms = timeout_ms;
	q->fence_context = dma_fence_context_alloc(1);
	mutex_init(&q->submit_lock);
	INIT_LIST_HEAD(&q->jobs);
	INIT_LIST_HEAD(&q->backlog);
	init_waitqueue_head(&q->wq);
	INIT_LIST_HEAD(&q->ucmds);

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
 * Stop the queue on the device and fail what it still has with `status`
 * (waiters wake). With `destroy`, also free its ring and slot: the caller
 * has taken it out of its context's table. The hardware id is used under
 * submit_lock, which destroying holds while it gives the id back, so a
 * late stop (the hang check) never reaches a queue that took the slot
 * over. A stop the device does not confirm wedges it: the ring freed
 * here is then quarantined until a reset.
 */
static void npu_queue_stop(struct npu_queue *q, u32 status, bool destroy)
{
	struct npu_device *ndev = q->ctx->ndev;
	u64 args[4] = { q->hw_id };
	LIST_HEAD(retired);
	int idx, ret;

	if (destroy) {
		mutex_lock(&ndev->queue_lock);
		ndev->queues[q->hw_id] = NULL;
		mutex_unlock(&ndev->queue_lock);
	}
	/* A submitter holding submit_lock is writing the ring: let it finish. */
	mutex_lock(&q->submit_lock);
	if (q->dead) {
		mutex_unlock(&q->submit_lock);
		return;
	}
	if (drm_dev_enter(&ndev->drm, &idx)) {
		ret = npu_ipc_send(ndev, NPU_FW_CMD_QUEUE_STOP, args, NULL);
		if (ret)
			npu_device_wedge(ndev, "queue stop", ret);
		drm_dev_exit(idx);
	}
	mutex_lock(&ndev->queue_lock);
	npu_queue_fail(ndev, q, status, &retired);
	mutex_unlock(&ndev->queue_lock);
	__npu_queue_drain(ndev, q, &retired);	/* the backlog fails too */
	if (destroy) {
		q->dead = true;
		npu_hbm_free(ndev, q->ctx, NPU_MEM_REGION_QUEUES, &q->ring);
		ida_free(&ndev->queue_ida, q->hw_id);
	}
	mutex_unlock(&q->submit_lock);
	/* Submitters waiting behind the backlog find it gone. */
	wake_up_all(&q->wq);

	npu_jobs_retire(ndev, &retired);
}

/* Take the queue out of service for good; see npu_queue_stop(). */
void npu_queue_destroy(struct npu_queue *q)
{
	npu_queue_stop(q, NPU_JOB_ABORTED, true);
	npu_queue_put(q);
}

void npu_queue_abort(struct npu_queue *q)
{
	npu_queue_stop(q, NPU_JOB_ABORTED, false);
}

/*
 * The queue `id` of ctx, referenced; the default queue (0) is created on
 * first use. NULL-free: returns an ERR_PTR.
 */
struct npu_queue *npu_queue_lookup(struct npu_ctx *ctx, u32 id, bool create)
{
	struct npu_queue *q;
	int ret = 0;

	if (id >= NPU_CTX_QUEUES)
		return ERR_PTR(-EINVAL);
	mutex_lock(&ctx->lock);
	if (!ctx->queues[id] && id == 0 && create)
		ret = npu_queue_create(ctx, 0, NPU_QUEUE_PRIORITY_NORMAL, NPU_QUEUE_DEPTH_DEFAULT, 0);
	q = ctx->queues[id];
	if (q)
		kref_get(&q->ref);
	mutex_unlock(&ctx->lock);
	if (ret)
		return ERR_PTR(ret);
	return q ? q : ERR_PTR(-EINVAL);
}

static bool npu_queue_has_room(struct npu_device *ndev, struct npu_queue *q, u32 need)
{
	u32 head = readl(&npu_queue_slot(ndev, q->hw_id)->head);

	return READ_ONCE(q->failed) || READ_ONCE(q->tail) - head + need <= q->entries;
}

/* Under submit_lock (or, as a wake-up hint, without): may a new batch go to the ring? */
static bool npu_queue_can_write(struct npu_device *ndev, struct npu_queue *q, u32 need)
{
	return !READ_ONCE(q->backlog_tasks) && npu_queue_has_room(ndev, q, need);
}

/*
 * For a submitter waiting outside the device's section: room for `need`
 * tasks, or a reason to stop waiting (the queue failed, or the device is
 * gone, which a retry then finds).
 */
bool npu_queue_room_or_gone(struct npu_device *ndev, struct npu_queue *q, u32 need)
{
	bool ret = true;
	int idx;

	if (drm_dev_enter(&ndev->drm, &idx)) {
		ret = npu_queue_can_write(ndev, q, need);
		drm_dev_exit(idx);
	}
	return ret;
}

/*
 * Under submit_lock, with room: publish the job to the completion side,
 * write its tasks and FENCE to the ring and ring the doorbell. -EIO,
 * with the job still the caller's, if the queue failed.
 */
static int npu_queue_write(struct npu_device *ndev, struct npu_queue *q, struct npu_job *job,
			   const struct drm_npu_task *tasks)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	struct npu_fw_task fence = { .type = NPU_FW_TASK_FENCE };
	void __iomem *ring = ndev->hbm + q->ring.start;
	u32 count = job->ntasks, i;
	u64 job_seq = job->seq;

	mutex_lock(&ndev->queue_lock);
	if (q->failed) {
		mutex_unlock(&ndev->queue_lock);
		return -EIO;
	}
	/*
	 * Once on the list the job belongs to the completion side: a fault or
	 * reset may retire and free it at any moment. Read nothing from it
	 * after this point.
	 */
	job->first_slot = q->tail;
	if (list_empty(&q->jobs)) {
		/* The progress watch and the busy clock start with work. */
		q->last_head = readl(&slot->head);
		q->last_exec = readl(&slot->exec_ms);
		q->busy_since = ktime_get();
	}
	list_add_tail(&job->link, &q->jobs);
	mutex_unlock(&ndev->queue_lock);

	for (i = 0; i < count; i++)
		memcpy_toio(ring + ((q->tail + i) % q->entries) * sizeof(fence),
			    &tasks[i], sizeof(fence));
	fence.args[0] = job_seq;
	memcpy_toio(ring + ((q->tail + count) % q->entries) * sizeof(fence),
		    &fence, sizeof(fence));
	q->next_seq = max(q->next_seq, job_seq);
	WRITE_ONCE(q->tail, q->tail + count + 1);
	/* The tasks land before the tail that publishes them. */
	wmb();
	writel(q->tail, &slot->tail);
	npu_hw_queue_kick(ndev);
	return 0;
}

/*
 * Queue a batch: write it to the ring, or with NPU_PUSH_BACKLOG keep it,
 * in order, until there is room (up to NPU_QUEUE_BACKLOG_DEPTHS rings'
 * worth). Where it would have to wait it blocks (NPU_PUSH_BLOCK) or
 * returns -EAGAIN. On success the job belongs to the queue, *seq is its
 * sequence number and, if out_fence is given, *out_fence a reference to
 * its dma_fence (made only for those who ask).
 */
int npu_queue_push(struct npu_device *ndev, struct npu_queue *q, struct npu_job *job,
		   const struct drm_npu_task *tasks, u32 count, enum npu_push_mode mode,
		   u64 *seq, struct dma_fence **out_fence)
{
	u32 need = count + 1;
	bool backlog = false;
	int ret;

	mutex_lock(&q->submit_lock);
	if (!npu_queue_can_write(ndev, q, need)) {
		if (mode != NPU_PUSH_BACKLOG || READ_ONCE(q->failed) ||
		    q->backlog_tasks + need > NPU_QUEUE_BACKLOG_DEPTHS * q->entries) {
			mutex_unlock(&q->submit_lock);
			return -EAGAIN;
		}
		backlog = true;
	}

	job->seq = q->next_seq + 1;
	job->ntasks = count;
	if (out_fence) {
		job->fence = npu_fence_create(q->fence_context, job->seq);
		if (!job->fence) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		/* Taken now: once queued, the job may be freed at any time. */
		*out_fence = dma_fence_get(job->fence);
	}
	if (backlog) {
		job->tasks = kvmalloc_array(count, sizeof(*tasks), GFP_KERNEL);
		if (!job->tasks) {
			ret = -ENOMEM;
			goto out_put;
		}
		memcpy(job->tasks, tasks, count * sizeof(*tasks));
		list_add_tail(&job->link, &q->backlog);
		WRITE_ONCE(q->backlog_tasks, q->backlog_tasks + need);
		q->next_seq = job->seq;
	} else {
		ret = npu_queue_write(ndev, q, job, tasks);
		if (ret) {
			job->error = -ECANCELED;	/* never queued */
			goto out_put;
		}
	}
	/* The job may be gone from here: only the queue is read. */
	*seq = q->next_seq;
	mutex_unlock(&q->submit_lock);
	return 0;

out_put:
	if (out_fence)
		dma_fence_put(*out_fence);
out_unlock:
	mutex_unlock(&q->submit_lock);
	return ret;
}

/* Under submit_lock: move what fits from the backlog to the ring. */
static void __npu_queue_drain(struct npu_device *ndev, struct npu_queue *q,
			      struct list_head *dropped)
{
	struct npu_job *job, *tmp;

	lockdep_assert_held(&q->submit_lock);
	list_for_each_entry_safe(job, tmp, &q->backlog, link) {
		const struct drm_npu_task *tasks = job->tasks;
		bool failed = READ_ONCE(q->failed);

		if (!failed && !npu_queue_has_room(ndev, q, job->ntasks + 1))
			break;
		list_del_init(&job->link);
		WRITE_ONCE(q->backlog_tasks, q->backlog_tasks - (job->ntasks + 1));
		job->tasks = NULL;
		/* A failed queue runs nothing more: its backlog fails. */
		if (failed || npu_queue_write(ndev, q, job, tasks)) {
			job->error = -EIO;
			list_add_tail(&job->link, dropped);
		}
		kvfree(tasks);
	}
}

/* Room freed up, or the queue failed: see __npu_queue_drain(). */
static void npu_queue_drain(struct npu_device *ndev, struct npu_queue *q)
{
	LIST_HEAD(dropped);

	mutex_lock(&q->submit_lock);
	__npu_queue_drain(ndev, q, &dropped);
	mutex_unlock(&q->submit_lock);
	/* Submitters blocked behind the backlog. */
	wake_up_all(&q->wq);
	npu_jobs_retire(ndev, &dropped);
}
