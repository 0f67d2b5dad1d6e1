// SPDX-License-Identifier: GPL-2.0-only
/*
 * Task queues and their completion. Batches are drm_sched jobs (see
 * npu_job.c); the ioctls that create queues and submit to them are in
 * npu_submit.c.
 *
 * Each context gets one hardware queue on its first submit: a slot in
 * the device's queue table, a ring in HBM, and a drm_sched scheduler with
 * one entity. The scheduler writes a batch to the ring (its tasks plus a
 * FENCE carrying its sequence number) once its dependencies are met and
 * the ring has room; the device raises the queue interrupt after each
 * FENCE and when a queue faults, and the threaded handler signals the
 * hardware fences of finished batches, in order, and wakes waiters. A
 * failure signals everything on the ring with an error, and batches not
 * yet written fail as they come (run_job sees the queue failed).
 *
 * Locking: q->submit_lock orders sequence numbers with arming and
 * pushing jobs, serialises stops, and keeps the hardware id owned until
 * the queue is dead. ndev->queue_lock protects ndev->queues[] and every
 * queue's ring list and completion state; it is taken after the
 * context's locks (npu_ctx.c) and q->submit_lock, never before. Neither
 * submit_lock nor queue_lock is held across a memory allocation: both
 * are on the way to a fence's signal. A queue is created and looked up
 * under ctx->queues_lock, which is not (a queue start allocates and
 * goes through the mailbox).
 *
 * Every path that signals batch fences is a fence-signalling section
 * (dma_fence_begin_signalling()), begun before it takes any lock: the
 * interrupt thread (npu_queue_poll()), stops (npu_queue_stop(), from the
 * timeout handler, a failed run, QUEUE_ABORT and QUEUE_DESTROY) and
 * device-wide failures (npu_queue_fail_all()). So lockdep sees the
 * mailbox, submit_lock and queue_lock always inside one, and checks that
 * none of them is held where memory is allocated or a fence waited for.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <linux/dma-fence.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_fence.h"
#include "npu_gem.h"
#include "npu_hw.h"
#include "npu_ipc.h"
#include "npu_queue.h"
#include "npu_recovery.h"
#include "npu_sync.h"
#include "npu_trace.h"
#include "npu_uring.h"

static_assert(DRM_NPU_QUEUE_DEPTH_MIN > DRM_NPU_SUBMIT_MAX_TASKS);	/* + its fence */

/* Under queue_lock: the device is done with the job, well or not. */
static void npu_job_signal(struct npu_job *job, int error)
{
	lockdep_assert_held(&job->q->ctx->ndev->queue_lock);
	trace_npu_done(job->q->ctx->id, job->q->id, job->q->hw_id, job->seq, error);
	list_del_init(&job->link);
	if (error) {
		dma_fence_set_error(job->hw_fence, error);
		/* Older schedulers do not pass the error on to `finished`. */
		dma_fence_set_error(&job->base.s_fence->finished, error);
	}
	/* Before the signal, after which the scheduler may free the job. */
	npu_job_retire(job);
	dma_fence_signal(job->hw_fence);
}

/* Under queue_lock, signalling: every job on q's ring fails with `error`. */
static void npu_queue_fail_jobs(struct npu_queue *q, int error)
{
	struct npu_job *job, *tmp;

	lockdep_assert_held(&q->ctx->ndev->queue_lock);
	list_for_each_entry_safe(job, tmp, &q->jobs, link)
		npu_job_signal(job, error);
	/* And the scheduler waits on nobody's fence for the jobs behind. */
	npu_job_cut_deps(q);
}

/*
 * Under queue_lock: which task of the batch on the ring at q's head
 * failed, and inside a RUN_LIST which task of its list.
 */
static void npu_queue_note_task(struct npu_device *ndev, struct npu_queue *q,
				struct npu_job *job)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	u32 at;

	q->error_task = 0;
	q->error_list_task = DRM_NPU_NO_LIST_TASK;
	if (!job)
		return;
	at = readl(&slot->head) - job->first_slot;
	q->error_task = npu_job_task_at(job, at);
	if (q->error_task < job->ntasks &&
	    job->tasks[q->error_task].type == DRM_NPU_TASK_RUN_LIST)
		q->error_list_task = readl(&slot->list_pos);
}

/* Under queue_lock: q's state changed; tell its ioctl and io_uring waiters. */
static void npu_queue_wake(struct npu_queue *q)
{
	lockdep_assert_held(&q->ctx->ndev->queue_lock);
	wake_up_all(&q->wq);
	if (q->failed)		/* the backlog no longer counts */
		wake_up_all(&q->drain_wq);
	npu_uring_queue_settle(q);
}

/* Under queue_lock, signalling: signal what the device finished, note a failure. */
static void npu_queue_update(struct npu_device *ndev, struct npu_queue *q)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	struct npu_job *job, *tmp;
	bool faulted;
	u64 done;

	lockdep_assert_held(&ndev->queue_lock);
	/*
	 * The state before done_seq: the device passes a FENCE (done_seq)
	 * before it faults on a later task and stops, so done_seq read after
	 * a fault is final, and the first batch left unsignalled is the one
	 * that faulted. Read the other way round, a FENCE passed between the
	 * two loads would leave a finished batch named as the failed one,
	 * failed with the rest.
	 */
	faulted = !q->failed && readl(&slot->state) == NPU_QUEUE_FAULTED;
	rmb();
	done = readq(&slot->done_seq);
	/*
	 * Once failed, the record stands: what it failed, from error_seq on,
	 * stays failed for WAIT too, whatever the device says it passed.
	 */
	if (q->failed)
		done = min(done, q->error_seq - 1);
	list_for_each_entry_safe(job, tmp, &q->jobs, link) {
		if (job->seq > done)
			break;
		npu_job_signal(job, 0);
		if (list_empty(&q->jobs))
			q->ctx->busy_ns += ktime_to_ns(ktime_sub(ktime_get(), q->busy_since));
	}
	WRITE_ONCE(q->done_seq, max(q->done_seq, done));

	if (faulted) {
		switch (readl(&slot->error)) {
		case NPU_FW_EFAULT:
			q->status = DRM_NPU_JOB_FAULT;
			break;
		case NPU_FW_EKERNEL:
			q->status = DRM_NPU_JOB_KERNEL_ERROR;
			break;
		default:
			q->status = DRM_NPU_JOB_INVALID;
			break;
		}
		q->fault_access = readl(&slot->error_access);
		q->fault_address = readq(&slot->error_address);
		job = list_first_entry_or_null(&q->jobs, struct npu_job, link);
		q->error_seq = job ? job->seq : q->done_seq + 1;
		npu_queue_note_task(ndev, q, job);
		trace_npu_queue_fault(q->ctx->id, q->id, q->hw_id, q->error_seq, q->status,
				      q->error_task, q->fault_address, q->fault_access);
		/* Last: io_uring parking reads the record without queue_lock. */
		smp_store_release(&q->failed, true);
		/* Nothing behind the failed task will run. */
		npu_queue_fail_jobs(q, -EIO);
		/* A context can fault at will: keep the log readable. */
		dev_info_ratelimited(ndev->drm.dev,
				     "context %u: %s at %#llx (%s) in batch %llu, task %u\n",
				     q->ctx->id, q->status == DRM_NPU_JOB_FAULT ? "MMU fault" :
				     q->status == DRM_NPU_JOB_KERNEL_ERROR ? "kernel error" :
				     "invalid task", q->fault_address,
				     q->fault_access ? "write" : "read",
				     q->error_seq, q->error_task);
	}
	npu_queue_wake(q);
}

/* Signal whatever the device finished, on every queue. */
void npu_queue_poll(struct npu_device *ndev)
{
	bool cookie;
	u32 i;

	npu_hw_queue_irq_ack(ndev);
	cookie = dma_fence_begin_signalling();
	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++)
		if (ndev->queues[i])
			npu_queue_update(ndev, ndev->queues[i]);
	mutex_unlock(&ndev->queue_lock);
	dma_fence_end_signalling(cookie);
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
	case DRM_NPU_JOB_TIMEOUT: return -ETIMEDOUT;
	case DRM_NPU_JOB_ABORTED: return -ENODEV;
	default: return -EIO;
	}
}

/* Under queue_lock, signalling: q fails with `status`; what is on its ring with it. */
static void npu_queue_fail(struct npu_device *ndev, struct npu_queue *q, u32 status)
{
	struct npu_job *job = list_first_entry_or_null(&q->jobs, struct npu_job, link);

	lockdep_assert_held(&ndev->queue_lock);
	if (!q->failed) {
		q->status = status;
		/* With nothing on the ring, the first unfinished is not written yet. */
		q->error_seq = job ? job->seq : q->done_seq + 1;
		npu_queue_note_task(ndev, q, job);
		smp_store_release(&q->failed, true);	/* last, as above */
	}
	npu_queue_fail_jobs(q, npu_job_status_errno(status));
	npu_queue_wake(q);
}

/*
 * If `fw_cmd`, send it to the device (a reset: every queue stops); then
 * fail every queue with `status`. The fences signal only once the device
 * has confirmed it no longer runs the work; one that does not confirm is
 * wedged. Returns the command's result.
 */
int npu_queue_fail_all(struct npu_device *ndev, u32 status, u32 fw_cmd)
{
	u64 args[4] = { 0 };
	bool cookie;
	int ret = 0;
	u32 i;

	cookie = dma_fence_begin_signalling();
	if (fw_cmd) {
		ret = npu_ipc_send(ndev, fw_cmd, args, NULL);
		if (ret)
			npu_device_wedge(ndev, "device reset", ret);
	}
	mutex_lock(&ndev->queue_lock);
	for (i = 0; i < ndev->fw.num_queues; i++)
		if (ndev->queues[i])
			npu_queue_fail(ndev, ndev->queues[i], status);
	mutex_unlock(&ndev->queue_lock);
	dma_fence_end_signalling(cookie);
	npu_uring_fail_events(ndev, status);
	return ret;
}

/*
 * The scheduler's timer ran out on q: hung if a task of its has executed
 * (the slot's exec_ms) for its limit without the head moving. A queue
 * waiting on an event, or starved by queues of higher priority, executes
 * nothing and is never hung.
 */
bool npu_queue_timed_out(struct npu_queue *q)
{
	struct npu_device *ndev = q->ctx->ndev;
	struct npu_fw_queue __iomem *slot;
	bool hung = false;
	u32 head, pos, exec;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return false;
	slot = npu_queue_slot(ndev, q->hw_id);
	mutex_lock(&ndev->queue_lock);
	head = readl(&slot->head);
	pos = readl(&slot->list_pos);
	exec = readl(&slot->exec_ms);
	/* A failed queue, or one with nothing on the ring, executes nothing. */
	if (q->failed || list_empty(&q->jobs))
		goto out;
	/* A task list's tasks are progress too, however long the list. */
	if (head != q->last_head || pos != q->last_list_pos) {
		q->last_head = head;
		q->last_list_pos = pos;
		q->last_exec = exec;
	} else if (exec - q->last_exec >= q->timeout_ms) {
		npu_err(ndev, "context %u queue %u: a task executed %u ms without finishing, stopping the queue\n",
			q->ctx->id, q->id, exec - q->last_exec);
		hung = true;
	}
out:
	mutex_unlock(&ndev->queue_lock);
	drm_dev_exit(idx);
	return hung;
}

static void npu_queue_fini_device(struct drm_device *drm, void *arg)
{
	struct npu_device *ndev = to_npu_device(drm);

	ida_destroy(&ndev->queue_ida);
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
	npu_queue_fail_all(ndev, DRM_NPU_JOB_ABORTED, 0);
}

/*
 * A queue's memory. The scheduler's fences outlive the queue (a syncobj
 * or sync_file holds them) and ask it for its name whenever someone asks
 * them for their timeline's (SYNC_IOC_FILE_INFO), so the memory is never
 * freed while the module is there: a released queue goes to a pool the
 * next queue, of any device, is taken from. Old fences then read the new
 * queue's name. The pool is the module's, not a device's, because a
 * fence may outlive its device, and a batch's fence holds the module
 * (npu_fence.c). At most as many as ever lived at once: bounded by the
 * hardware queues and the jobs still holding released queues.
 *
 * A scheduler's fence whose job never ran has no fence of ours behind it
 * to hold the module: one kept past rmmod still names freed memory. That
 * is drm_sched's limit on these kernels (its fences point at their
 * scheduler), not one this driver can lift.
 */
static LIST_HEAD(npu_queue_pool);
static DEFINE_SPINLOCK(npu_queue_pool_lock);

static struct npu_queue *npu_queue_alloc(struct npu_device *ndev)
{
	struct npu_queue *q;

	spin_lock(&npu_queue_pool_lock);
	q = list_first_entry_or_null(&npu_queue_pool, struct npu_queue, pool_link);
	if (q)
		list_del(&q->pool_link);
	spin_unlock(&npu_queue_pool_lock);
	if (q) {
		/*
		 * All but the scheduler's name pointer, which old fences may
		 * be reading: it points at q->name, here again, which is ""
		 * or a name at every moment.
		 */
		size_t at = offsetof(struct npu_queue, sched) +
			    offsetof(struct drm_gpu_scheduler, name);
		size_t after = at + sizeof(q->sched.name);

		memset(q, 0, at);
		memset((char *)q + after, 0, sizeof(*q) - after);
	} else {
		q = kzalloc(sizeof(*q), GFP_KERNEL);	/* the module's pool: no one's cgroup */
	}
	if (q)
		q->ndev = ndev;
	return q;
}

static void npu_queue_free(struct npu_queue *q)
{
	spin_lock(&npu_queue_pool_lock);
	list_add(&q->pool_link, &npu_queue_pool);
	spin_unlock(&npu_queue_pool_lock);
}

/* At module exit, once no fence is left to read a name. */
void npu_queue_pool_fini(void)
{
	struct npu_queue *q, *tmp;

	list_for_each_entry_safe(q, tmp, &npu_queue_pool, pool_link)
		kfree(q);
	INIT_LIST_HEAD(&npu_queue_pool);
}

static void npu_queue_release(struct kref *ref)
{
	struct npu_queue *q = container_of(ref, struct npu_queue, ref);

	npu_job_cut_deps(q);	/* drops the last dependency it kept */
	mutex_destroy(&q->submit_lock);
	npu_ctx_put(q->ctx);
	npu_queue_free(q);
}

void npu_queue_put(struct npu_queue *q)
{
	kref_put(&q->ref, npu_queue_release);
}

/* npu_queue_create() inside the device's section. */
static int npu_queue_start(struct npu_ctx *ctx, u32 id, const struct npu_queue_params *p)
{
	struct drm_gpu_scheduler *sched_list[1];
	struct npu_device *ndev = ctx->ndev;
	struct npu_fw_queue __iomem *slot;
	u64 args[4] = { 0 };
	struct npu_queue *q;
	int ret;

	lockdep_assert_held(&ctx->queues_lock);
	/* A slot the device may not have stopped is not handed out. */
	if (READ_ONCE(ndev->wedged))
		return -EIO;
	/* A dying task cannot start the scheduler's thread: say so ourselves. */
	if (fatal_signal_pending(current))
		return -EINTR;
	q = npu_queue_alloc(ndev);
	if (!q)
		return -ENOMEM;
	ret = ida_alloc_max(&ndev->queue_ida, ndev->fw.num_queues - 1, GFP_KERNEL);
	if (ret < 0) {
		npu_queue_free(q);
		return ret == -ENOSPC ? -EBUSY : ret;
	}
	q->hw_id = ret;
	kref_init(&q->ref);
	q->ctx = ctx;
	q->id = id;
	q->priority = p->priority;
	q->entries = p->entries;
	q->timeout_ms = p->timeout_ms ? p->timeout_ms : max(1u, npu_recovery_job_timeout_ms());
	q->fence_context = dma_fence_context_alloc(1);
	mutex_init(&q->submit_lock);
	atomic_set(&q->nr_jobs, 0);
	atomic_set(&q->queued, 0);
	INIT_LIST_HEAD(&q->jobs);
	init_waitqueue_head(&q->wq);
	init_waitqueue_head(&q->drain_wq);
	INIT_LIST_HEAD(&q->ucmds);
	spin_lock_init(&q->dep_lock);
	snprintf(q->name, sizeof(q->name), "npu-c%u-q%u", ctx->id, id);

	/*
	 * The timer only asks whether a task executed too long; the limit
	 * itself is in execution time (npu_queue_timed_out()). At most as
	 * many batches on the ring as the smallest ones fit.
	 */
	ret = npu_sched_init(&q->sched, &npu_sched_ops, q->entries / 2,
			     msecs_to_jiffies(q->timeout_ms), npu_timeout_wq, q->name,
			     ndev->drm.dev);
	if (ret)
		goto err_id;
	sched_list[0] = &q->sched;
	/* One run queue: KERNEL is in range whichever way the enum runs. */
	ret = drm_sched_entity_init(&q->entity, DRM_SCHED_PRIORITY_KERNEL, sched_list, 1, NULL);
	if (ret)
		goto err_sched;

	ret = npu_hbm_alloc(ndev, ctx, DRM_NPU_MEM_REGION_QUEUES, &q->ring,
			    q->entries * sizeof(struct npu_fw_task), PAGE_SIZE);
	if (ret)
		goto err_entity;

	/* A word left from the buffer's last queue would report its seqs. */
	if (p->done_bo) {
		q->done_at = p->done_bo->hbm.start + p->done_offset;
		writeq(0, ndev->hbm + q->done_at);
	}
	slot = npu_queue_slot(ndev, q->hw_id);
	writeq(q->ring.start, &slot->ring_offset);
	writel(q->entries, &slot->ring_entries);
	writel(ctx->id, &slot->context);
	writeq(ctx->mmu.root, &slot->pt_root);
	writel(q->priority, &slot->priority);
	writel(0, &slot->tail);
	args[0] = q->hw_id;
	if (p->prof_bo) {
		/* The records' tag: the id the context knows the queue by. */
		args[1] = p->prof_bo->hbm.start + p->prof_offset;
		args[2] = (u64)id << 32 | p->prof_entries;
	}
	ret = npu_ipc_send(ndev, NPU_FW_CMD_QUEUE_START, args, NULL);
	if (ret == -ETIMEDOUT)	/* it may still start, on the ring freed below */
		npu_device_wedge(ndev, "starting a queue", ret);
	if (ret)
		goto err_ring;

	mutex_lock(&ndev->queue_lock);
	ndev->queues[q->hw_id] = q;
	mutex_unlock(&ndev->queue_lock);
	ctx->queues[id] = q;
	/*
	 * The queue holds its context: whatever holds the queue (a run's
	 * stop work, a job) may read q->ctx after the file has gone.
	 */
	npu_ctx_get(ctx);
	q->done_bo = p->done_bo;
	q->prof_bo = p->prof_bo;
	return 0;

err_ring:
	npu_hbm_free(ndev, ctx, DRM_NPU_MEM_REGION_QUEUES, &q->ring);
err_entity:
	drm_sched_entity_fini(&q->entity);
err_sched:
	drm_sched_fini(&q->sched);
err_id:
	ida_free(&ndev->queue_ida, q->hw_id);
	mutex_destroy(&q->submit_lock);
	npu_queue_free(q);
	return ret;
}

/*
 * Under ctx->queues_lock: a new queue at ctx->queues[id]. It writes the queue's
 * slot through the BARs and starts it, so it enters the device's section
 * itself, whoever calls: a SUBMIT_MULTI resumed after an unbind (it may
 * sleep in copy_from_user first) reached unmapped MMIO here.
 */
int npu_queue_create(struct npu_ctx *ctx, u32 id, const struct npu_queue_params *p)
{
	int idx, ret;

	if (!drm_dev_enter(&ctx->ndev->drm, &idx))
		return -ENODEV;
	ret = npu_queue_start(ctx, id, p);
	drm_dev_exit(idx);
	return ret;
}

/*
 * Stop the queue on the device and fail what it has with `status`
 * (waiters wake; batches not yet on the ring fail as the scheduler comes
 * to them). The hardware id is used under submit_lock, which destroying
 * holds while it marks the queue dead, so a late stop (the scheduler's
 * timeout) never reaches a queue that took the slot over. A stop the
 * device does not confirm wedges it.
 */
void npu_queue_stop(struct npu_queue *q, u32 status)
{
	struct npu_device *ndev = q->ctx->ndev;
	u64 args[4] = { q->hw_id };
	bool cookie;
	int idx, ret;

	cookie = dma_fence_begin_signalling();
	mutex_lock(&q->submit_lock);
	if (q->dead) {
		mutex_unlock(&q->submit_lock);
		dma_fence_end_signalling(cookie);
		return;
	}
	if (drm_dev_enter(&ndev->drm, &idx)) {
		ret = npu_ipc_send(ndev, NPU_FW_CMD_QUEUE_STOP, args, NULL);
		if (ret)
			npu_device_wedge(ndev, "queue stop", ret);
		/* What finished before the stop is reported as finished. */
		mutex_lock(&ndev->queue_lock);
		npu_queue_update(ndev, q);
		npu_queue_fail(ndev, q, status);
		mutex_unlock(&ndev->queue_lock);
		drm_dev_exit(idx);
	} else {
		mutex_lock(&ndev->queue_lock);
		npu_queue_fail(ndev, q, status);
		mutex_unlock(&ndev->queue_lock);
	}
	mutex_unlock(&q->submit_lock);
	dma_fence_end_signalling(cookie);
}

/*
 * Take the queue out of service for good: stop it, let the scheduler fail
 * and free every job (none waits for anyone's fence once the queue has
 * failed, see npu_job.c), then free the scheduler, the ring and the slot.
 * The caller has taken the queue out of its context's table.
 */
void npu_queue_destroy(struct npu_queue *q)
{
	struct npu_device *ndev = q->ctx->ndev;

	npu_queue_stop(q, DRM_NPU_JOB_ABORTED);
	/*
	 * A failed queue's jobs wait for nothing (npu_job.c: the failure
	 * cut their dependencies short), so the scheduler fails them one by
	 * one, at once. Let it: 6.1 loses a fence reference when
	 * drm_sched_entity_fini() kills jobs behind a finished one. The
	 * bound only matters if the scheduler is stuck; then they are
	 * killed, as drm_sched_entity_flush() would.
	 */
	wait_event_timeout(q->sched.job_scheduled,
			   !spsc_queue_count(&q->entity.job_queue), HZ);
	drm_sched_entity_fini(&q->entity);
	wait_event(q->drain_wq, !atomic_read(&q->nr_jobs));
	drm_sched_fini(&q->sched);

	mutex_lock(&ndev->queue_lock);
	ndev->queues[q->hw_id] = NULL;
	mutex_unlock(&ndev->queue_lock);
	mutex_lock(&q->submit_lock);
	q->dead = true;
	mutex_unlock(&q->submit_lock);
	npu_hbm_free(ndev, q->ctx, DRM_NPU_MEM_REGION_QUEUES, &q->ring);
	ida_free(&ndev->queue_ida, q->hw_id);
	/* Stopped: no FENCE writes the word any more (wedged: quarantined). */
	if (q->done_bo)
		drm_gem_object_put(&q->done_bo->base);
	if (q->prof_bo)
		drm_gem_object_put(&q->prof_bo->base);
	npu_queue_put(q);
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
	mutex_lock(&ctx->queues_lock);
	if (!ctx->queues[id] && id == 0 && create) {
		struct npu_queue_params p = { .priority = DRM_NPU_QUEUE_PRIORITY_NORMAL,
					      .entries = DRM_NPU_QUEUE_DEPTH_DEFAULT };

		ret = npu_queue_create(ctx, 0, &p);
	}
	q = ctx->queues[id];
	if (q)
		kref_get(&q->ref);
	mutex_unlock(&ctx->queues_lock);
	if (ret)
		return ERR_PTR(ret);
	return q ? q : ERR_PTR(-EINVAL);
}

/* Room for `need` tasks on the ring (a failed queue writes nothing). */
bool npu_queue_has_room(struct npu_device *ndev, struct npu_queue *q, u32 need)
{
	u32 head = readl(&npu_queue_slot(ndev, q->hw_id)->head);

	return READ_ONCE(q->failed) || READ_ONCE(q->tail) - head + need <= q->entries;
}

/*
 * From run_job, with room: publish the job to the completion side, write
 * its tasks and FENCE to the ring and ring the doorbell. -EIO if the
 * queue failed.
 */
int npu_queue_write(struct npu_device *ndev, struct npu_queue *q, struct npu_job *job)
{
	struct npu_fw_queue __iomem *slot = npu_queue_slot(ndev, q->hw_id);
	struct npu_fw_task fence = { .type = NPU_FW_TASK_FENCE, .args = { job->seq, q->done_at } };
	void __iomem *ring = ndev->hbm + q->ring.start;
	u32 i;

	mutex_lock(&ndev->queue_lock);
	if (q->failed) {
		mutex_unlock(&ndev->queue_lock);
		return -EIO;
	}
	job->first_slot = q->tail;
	if (list_empty(&q->jobs)) {
		/* The progress watch and the busy clock start with work. */
		q->last_head = readl(&slot->head);
		q->last_list_pos = readl(&slot->list_pos);
		q->last_exec = readl(&slot->exec_ms);
		q->busy_since = ktime_get();
	}
	list_add_tail(&job->link, &q->jobs);
	mutex_unlock(&ndev->queue_lock);

	/*
	 * The ring is written after the job is published: a stop from here on
	 * fails it, and the device, stopped first, ignores the tail.
	 */
	for (i = 0; i < job->nring; i++)
		memcpy_toio(ring + ((q->tail + i) % q->entries) * sizeof(fence),
			    &job->ring[i], sizeof(fence));
	memcpy_toio(ring + ((q->tail + job->nring) % q->entries) * sizeof(fence),
		    &fence, sizeof(fence));
	WRITE_ONCE(q->tail, q->tail + job->nring + 1);
	/* The tasks land before the tail that publishes them. */
	wmb();
	writel(q->tail, &slot->tail);
	npu_hw_queue_kick(ndev);
	trace_npu_run(q->ctx->id, q->id, q->hw_id, job->seq, job->nring);
	return 0;
}
