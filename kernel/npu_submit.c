// SPDX-License-Identifier: GPL-2.0-only
/*
 * The work ioctls: queue creation and destruction, submitting batches and
 * waiting for them. Everything a caller passes is checked here, before any
 * queue is touched; npu_queue.c owns what happens after.
 *
 * Locking: see npu_queue.c. Batches are built under ctx->vm_lock (to look
 * their addresses up), queues made and dropped under ctx->queues_lock;
 * nothing here holds a lock while it waits, and nothing waits for the
 * device.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/capability.h>
#include <linux/dma-fence.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "npu_ctx.h"
#include "npu_fence.h"
#include "npu_gem.h"
#include "npu_queue.h"
#include "npu_recovery.h"
#include "npu_sync.h"
#include "npu_trace.h"

/*
 * The task types the caller names and the device's agree, so translating
 * a task (npu_task_to_fw()) keeps its type; the layouts are free to part.
 */
static_assert((int)DRM_NPU_TASK_NOP == (int)NPU_FW_TASK_NOP &&
	      (int)DRM_NPU_TASK_COPY == (int)NPU_FW_TASK_COPY &&
	      (int)DRM_NPU_TASK_FILL == (int)NPU_FW_TASK_FILL &&
	      (int)DRM_NPU_TASK_KERNEL == (int)NPU_FW_TASK_KERNEL &&
	      (int)DRM_NPU_TASK_TIMESTAMP == (int)NPU_FW_TASK_TIMESTAMP &&
	      (int)DRM_NPU_TASK_BARRIER == (int)NPU_FW_TASK_BARRIER &&
	      (int)DRM_NPU_TASK_EVENT_RECORD == (int)NPU_FW_TASK_EVENT_RECORD &&
	      (int)DRM_NPU_TASK_EVENT_WAIT == (int)NPU_FW_TASK_EVENT_WAIT &&
	      (int)DRM_NPU_TASK_EVENT_RESET == (int)NPU_FW_TASK_EVENT_RESET &&
	      (int)DRM_NPU_TASK_NOTIFY_RECORD == (int)NPU_FW_TASK_NOTIFY_RECORD &&
	      (int)DRM_NPU_TASK_NOTIFY_WAIT == (int)NPU_FW_TASK_NOTIFY_WAIT);

/* The device's ring slot for a checked task other than RUN_LIST (npu_job.c builds those). */
void npu_task_to_fw(struct npu_fw_task *fw, const struct drm_npu_task *t)
{
	static_assert(ARRAY_SIZE(fw->args) == ARRAY_SIZE(t->args));

	*fw = (struct npu_fw_task){ .type = t->type };
	memcpy(fw->args, t->args, sizeof(fw->args));
}

bool npu_task_valid(const struct drm_npu_task *t)
{
	u64 unused = 0;
	int i, first_unused;

	if (t->flags || t->pad)
		return false;
	switch (t->type) {
	case DRM_NPU_TASK_NOP:
		first_unused = 0;
		break;
	case DRM_NPU_TASK_COPY:
		if (!t->args[2])
			return false;
		first_unused = 3;
		break;
	case DRM_NPU_TASK_FILL:
		if (!t->args[1] || (t->args[0] | t->args[1]) & 3 || t->args[2] > U32_MAX)
			return false;
		first_unused = 3;
		break;
	case DRM_NPU_TASK_KERNEL:
		/*
		 * The argument block itself is the device's to check; the
		 * driver only keeps the range it says mapped.
		 */
		if (t->args[1] > DRM_NPU_MAX_BLOCK_DIM || !t->args[2] ||
		    t->args[2] > DRM_NPU_KERNEL_ARGS_MAX)
			return false;
		first_unused = 3;
		break;
	case DRM_NPU_TASK_TIMESTAMP:
		if (t->args[0] & 7)
			return false;
		first_unused = 1;
		break;
	case DRM_NPU_TASK_BARRIER:
		first_unused = 0;
		break;
	case DRM_NPU_TASK_EVENT_RECORD:
	case DRM_NPU_TASK_EVENT_WAIT:
	case DRM_NPU_TASK_EVENT_RESET:
	case DRM_NPU_TASK_NOTIFY_RECORD:
	case DRM_NPU_TASK_NOTIFY_WAIT:
		/* Whether the context holds it is checked with the context. */
		first_unused = 1;
		break;
	case DRM_NPU_TASK_RUN_LIST:
		/* The list and its slot count are checked with the context. */
		if (t->args[0] > U32_MAX || t->args[2] > DRM_NPU_TASKLIST_MAX_SLOTS)
			return false;
		/* No slots, no table: a pointer to one is a caller's mistake. */
		if (!t->args[2] && t->args[1])
			return false;
		first_unused = 3;
		break;
	default:
		return false;
	}
	for (i = first_unused; i < ARRAY_SIZE(t->args); i++)
		unused |= t->args[i];
	return !unused;
}

/* The device's records are the uapi's, byte for byte. */
static_assert(sizeof(struct drm_npu_prof_ring) == sizeof(struct npu_fw_prof_ring));
static_assert(sizeof(struct drm_npu_prof_record) == sizeof(struct npu_fw_prof_record));
#define NPU_SAME_FIELD(a, b, f)	static_assert(offsetof(struct a, f) == offsetof(struct b, f))
NPU_SAME_FIELD(drm_npu_prof_ring, npu_fw_prof_ring, enable);
NPU_SAME_FIELD(drm_npu_prof_ring, npu_fw_prof_ring, tail);
NPU_SAME_FIELD(drm_npu_prof_ring, npu_fw_prof_ring, head);
NPU_SAME_FIELD(drm_npu_prof_ring, npu_fw_prof_ring, dropped);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, seq);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, index);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, type);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, unit);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, list_pos);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, tag);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, flags);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, start_ns);
NPU_SAME_FIELD(drm_npu_prof_record, npu_fw_prof_record, end_ns);
static_assert(DRM_NPU_PROF_MIN == NPU_FW_PROF_MIN && DRM_NPU_PROF_MAX == NPU_FW_PROF_MAX);
static_assert(DRM_NPU_UNIT_DMA == NPU_FW_UNIT_DMA && DRM_NPU_UNIT_CORES == NPU_FW_UNIT_CORES);
static_assert(DRM_NPU_PROF_IN_LIST == NPU_FW_PROF_IN_LIST);

/*
 * A buffer the device writes a queue's words or records into, by HBM
 * offset, referenced: one of this file's in HBM, with `size` bytes at
 * `offset` (`align`-aligned) inside it, on a device with `cap`. NULL for
 * no handle (and no offset), or an ERR_PTR.
 */
static struct npu_bo *queue_bo(struct npu_device *ndev, struct drm_file *file, u32 handle,
			       u64 offset, u64 size, u64 align, u64 cap)
{
	struct drm_gem_object *obj;

	if (!handle)
		return offset ? ERR_PTR(-EINVAL) : NULL;
	if (!(ndev->fw.caps & cap) || offset & (align - 1))
		return ERR_PTR(-EINVAL);
	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return ERR_PTR(-EINVAL);
	/* Registered host memory has no HBM offset. */
	if (to_npu_bo(obj)->user || size > obj->size || offset > obj->size - size) {
		drm_gem_object_put(obj);
		return ERR_PTR(-EINVAL);
	}
	return to_npu_bo(obj);
}

static bool prof_entries_ok(const struct drm_npu_queue_create *args)
{
	u32 n = args->prof_entries;

	if (!args->prof_handle)
		return !n;
	return is_power_of_2(n) && n >= DRM_NPU_PROF_MIN && n <= DRM_NPU_PROF_MAX;
}

int npu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_queue_create *args = data;
	struct npu_queue_params p = {
		.priority = args->priority,
		.entries = args->depth ? args->depth : DRM_NPU_QUEUE_DEPTH_DEFAULT,
		.timeout_ms = args->timeout_ms,
		.done_offset = args->done_offset,
		.prof_offset = args->prof_offset,
		.prof_entries = args->prof_entries,
	};
	struct npu_device *ndev = to_npu_device(drm);
	int ret = -EBUSY;
	u32 id;

	if (args->flags || args->queue || args->pad || args->pad2 ||
	    args->priority > DRM_NPU_QUEUE_PRIORITY_REALTIME || !is_power_of_2(p.entries) ||
	    p.entries < DRM_NPU_QUEUE_DEPTH_MIN || p.entries > DRM_NPU_QUEUE_DEPTH_MAX)
		return -EINVAL;
	if (args->timeout_ms > npu_recovery_max_job_timeout_ms() || !prof_entries_ok(args))
		return -EINVAL;
	p.done_bo = queue_bo(ndev, file, args->done_handle, args->done_offset, sizeof(u64),
			     sizeof(u64), NPU_FW_CAP_FENCE_WRITE);
	if (IS_ERR(p.done_bo))
		return PTR_ERR(p.done_bo);
	p.prof_bo = queue_bo(ndev, file, args->prof_handle, args->prof_offset,
			     sizeof(struct drm_npu_prof_ring) +
			     (u64)args->prof_entries * sizeof(struct drm_npu_prof_record),
			     64, NPU_FW_CAP_PROFILE);
	if (IS_ERR(p.prof_bo)) {
		ret = PTR_ERR(p.prof_bo);
		p.prof_bo = NULL;
		goto out_put;
	}
	/* Above NORMAL a queue can starve other users' work: as for CPU nice. */
	if (args->priority > DRM_NPU_QUEUE_PRIORITY_NORMAL && !capable(CAP_SYS_NICE)) {
		ret = -EPERM;
		goto out_put;
	}
	mutex_lock(&ctx->queues_lock);
	for (id = 1; id < NPU_CTX_QUEUES; id++) {
		if (!ctx->queues[id]) {
			ret = npu_queue_create(ctx, id, &p);
			break;
		}
	}
	mutex_unlock(&ctx->queues_lock);
	if (!ret) {
		args->queue = id;
		return 0;
	}
out_put:
	if (p.prof_bo)
		drm_gem_object_put(&p.prof_bo->base);
	if (p.done_bo)
		drm_gem_object_put(&p.done_bo->base);
	return ret;
}

int npu_ioctl_queue_destroy(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_queue_destroy *args = data;
	struct npu_queue *q;

	if (args->flags || args->queue >= NPU_CTX_QUEUES)
		return -EINVAL;
	mutex_lock(&ctx->queues_lock);
	q = ctx->queues[args->queue];
	ctx->queues[args->queue] = NULL;
	mutex_unlock(&ctx->queues_lock);
	if (!q)
		return -EINVAL;
	npu_queue_destroy(q);
	return 0;
}

int npu_ioctl_queue_abort(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_queue_abort *args = data;
	struct npu_queue *q;

	if (args->flags)
		return -EINVAL;
	q = npu_queue_lookup(file->driver_priv, args->queue, false);
	if (IS_ERR(q))
		return PTR_ERR(q);
	npu_queue_stop(q, DRM_NPU_JOB_ABORTED);
	npu_queue_put(q);
	return 0;
}

/* Reserve ring slots for `need` tasks in q's backlog, if they fit. */
static bool npu_queue_admit(struct npu_queue *q, u32 need)
{
	if (atomic_add_return(need, &q->queued) <= NPU_QUEUE_BACKLOG_DEPTHS * q->entries ||
	    READ_ONCE(q->failed))
		return true;
	atomic_sub(need, &q->queued);
	return false;
}

static bool npu_queue_may_admit(struct drm_device *drm, struct npu_queue *q, u32 need)
{
	return atomic_read(&q->queued) + need <= NPU_QUEUE_BACKLOG_DEPTHS * q->entries ||
	       READ_ONCE(q->failed) || drm_dev_is_unplugged(drm);
}

/*
 * Copy and check a batch's tasks, and the I/O tables of its RUN_LISTs,
 * and build its job (what it names looked up and held): nothing of it is
 * read from the caller again.
 */
struct npu_job *npu_batch_build(struct npu_ctx *ctx, u64 uptr, u32 count)
{
	struct drm_npu_task *tasks;
	struct npu_job *job;
	u64 *io = NULL;
	u32 i, nio = 0, at = 0;

	if (!count || count > DRM_NPU_SUBMIT_MAX_TASKS)
		return ERR_PTR(-EINVAL);
	tasks = kvmalloc_array(count, sizeof(*tasks), GFP_KERNEL_ACCOUNT);
	if (!tasks)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(tasks, u64_to_user_ptr(uptr), count * sizeof(*tasks))) {
		kvfree(tasks);
		return ERR_PTR(-EFAULT);
	}
	for (i = 0; i < count; i++) {
		if (!npu_task_valid(&tasks[i])) {
			kvfree(tasks);
			return ERR_PTR(-EINVAL);
		}
		if (tasks[i].type == DRM_NPU_TASK_RUN_LIST)
			nio += tasks[i].args[2];
	}
	if (nio) {
		io = kvmalloc_array(nio, sizeof(*io), GFP_KERNEL_ACCOUNT);
		if (!io) {
			kvfree(tasks);
			return ERR_PTR(-ENOMEM);
		}
	}
	for (i = 0; i < count; i++) {
		u32 n = tasks[i].type == DRM_NPU_TASK_RUN_LIST ? tasks[i].args[2] : 0;

		if (n && copy_from_user(io + at, u64_to_user_ptr(tasks[i].args[1]),
					n * sizeof(*io))) {
			kvfree(io);
			kvfree(tasks);
			return ERR_PTR(-EFAULT);
		}
		at += n;
	}
	job = npu_job_create(ctx, tasks, count, io);
	kvfree(io);
	return job;
}

/* The job waits for the fences of `in` (looked up now): its dependencies. */
int npu_batch_depend(struct drm_file *file, struct npu_job *job,
		     const struct drm_npu_syncobj *in, u32 in_count)
{
	int ret = npu_syncobj_in_fences(file, in, in_count, job->in);

	if (ret)
		return ret;
	job->nin = in_count;
	return npu_job_alloc_deps(job);
}

/* Give back room npu_queue_admit() reserved. */
static void npu_queue_unadmit(struct npu_queue *q, u32 need)
{
	atomic_sub(need, &q->queued);
	wake_up_all(&q->drain_wq);
}

/*
 * Make jobs[i] a scheduler job of qs[i], for every i or for none, with
 * ring room admitted in each queue's backlog: inside the device's section
 * (idx), which a wait for room leaves and enters again. Room is admitted
 * on every queue before any job is armed, and none is held while waiting:
 * a SUBMIT_MULTI waiting for room on one queue holds nothing (no job
 * counted in nr_jobs) that destroying another queue waits for. On failure
 * the section is left and nothing is held.
 */
int npu_batch_queue(struct drm_device *drm, struct npu_ctx *ctx, struct npu_queue **qs,
		    struct npu_job **jobs, u32 n, bool nonblock, int *idx)
{
	u32 i, k;
	int ret;

	/* The ring must hold each batch and its FENCE at once. */
	for (i = 0; i < n; i++) {
		if (jobs[i]->nring + 1 > qs[i]->entries) {
			drm_dev_exit(*idx);
			return -EINVAL;
		}
	}
	for (;;) {
		for (i = 0; i < n && npu_queue_admit(qs[i], jobs[i]->nring + 1); i++)
			;
		if (i == n)
			break;
		for (k = 0; k < i; k++)
			npu_queue_unadmit(qs[k], jobs[k]->nring + 1);
		drm_dev_exit(*idx);
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(qs[i]->drain_wq,
					       npu_queue_may_admit(drm, qs[i], jobs[i]->nring + 1));
		if (ret)
			return ret;
		if (!drm_dev_enter(drm, idx))
			return -ENODEV;
	}
	for (i = 0; i < n; i++) {
		ret = npu_sched_job_init(&jobs[i]->base, &qs[i]->entity, ctx);
		if (ret)
			goto err_unwind;
		jobs[i]->q = qs[i];
		/*
		 * The job's, dropped when it is freed. The device too: a job the
		 * scheduler kills is freed from its kill work, which nothing
		 * waits for, and may put the queue's last reference after an
		 * unbind and the file's last close.
		 */
		kref_get(&qs[i]->ref);
		drm_dev_get(drm);
		atomic_inc(&qs[i]->nr_jobs);
	}
	return 0;

err_unwind:
	for (k = i; k < n; k++)
		npu_queue_unadmit(qs[k], jobs[k]->nring + 1);
	while (i--)
		npu_batch_detach(jobs[i]);
	drm_dev_exit(*idx);
	return ret;
}

/* Undo npu_batch_queue() for a job never pushed: a plain job again. */
void npu_batch_detach(struct npu_job *job)
{
	struct npu_queue *q = job->q;

	drm_sched_job_cleanup(&job->base);
	atomic_dec(&q->nr_jobs);
	npu_queue_unadmit(q, job->nring + 1);
	job->q = NULL;
	npu_queue_put(q);		/* the job's */
	drm_dev_put(&q->ndev->drm);	/* q's memory stays: the device's pool */
}

/* Undo npu_batch_queue() for a job never pushed; the job is freed. */
void npu_batch_unqueue(struct npu_job *job)
{
	npu_batch_detach(job);
	npu_job_free(job);
}

/*
 * Under q->submit_lock, the queue taking work: number the job, arm and
 * push it (numbers in push order: the scheduler runs a queue's jobs in
 * it). Returns its finished fence, referenced. The job is the
 * scheduler's now.
 */
struct dma_fence *npu_batch_push(struct npu_queue *q, struct npu_job *job)
{
	struct dma_fence *finished;

	lockdep_assert_held(&q->submit_lock);
	job->seq = ++q->next_seq;
	npu_fence_init(job->hw_fence, q->fence_context, job->seq);
	drm_sched_job_arm(&job->base);
	finished = dma_fence_get(&job->base.s_fence->finished);
	trace_npu_submit(q->ctx->id, q->id, q->hw_id, job->seq, job->nring);
	drm_sched_entity_push_job(&job->base);
	return finished;
}

/*
 * Queue a batch: SUBMIT for the ioctl and for io_uring. Nothing here
 * waits for the device or for another fence: in-syncobjs become the
 * job's dependencies, and a full ring holds the job in the scheduler.
 * What a queue holds is bounded (NPU_QUEUE_BACKLOG_DEPTHS rings' worth):
 * past that a submit waits for room, interruptibly and outside the
 * device's section, or with `nonblock` fails with -EAGAIN. With `qp`
 * the caller gets the queue, referenced.
 */
int npu_submit(struct drm_file *file, struct drm_npu_submit *args, bool nonblock,
	       struct npu_queue **qp)
{
	struct drm_device *drm = file->minor->dev;
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_syncobj in[DRM_NPU_SUBMIT_MAX_SYNCOBJS], out[DRM_NPU_SUBMIT_MAX_SYNCOBJS];
	struct npu_syncobj_out outs = { 0 };
	struct dma_fence *finished;
	struct npu_queue *q;
	struct npu_job *job;
	int ret, idx;

	if (args->flags || args->pad || !args->count || args->count > DRM_NPU_SUBMIT_MAX_TASKS)
		return -EINVAL;
	ret = npu_syncobj_copy(args->in_syncobjs, args->in_count, in);
	if (!ret)
		ret = npu_syncobj_copy(args->out_syncobjs, args->out_count, out);
	if (ret)
		return ret;

	/* Everything the batch names is checked before a queue is made. */
	job = npu_batch_build(ctx, args->tasks, args->count);
	if (IS_ERR(job))
		return PTR_ERR(job);
	ret = npu_batch_depend(file, job, in, args->in_count);
	if (ret)
		goto err_job;
	ret = npu_syncobj_prepare_out(file, out, args->out_count, &outs);
	if (ret)
		goto err_job;

	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto err_out;
	}
	q = npu_queue_lookup(ctx, args->queue, true);
	if (IS_ERR(q)) {
		drm_dev_exit(idx);
		ret = PTR_ERR(q);
		goto err_out;
	}
	ret = npu_batch_queue(drm, ctx, &q, &job, 1, nonblock, &idx);
	if (ret) {
		npu_queue_put(q);
		goto err_out;
	}

	mutex_lock(&q->submit_lock);
	if (READ_ONCE(q->failed) || q->dead) {
		mutex_unlock(&q->submit_lock);
		drm_dev_exit(idx);
		npu_syncobj_release_out(&outs);
		npu_batch_unqueue(job);
		npu_queue_put(q);
		return -EIO;
	}
	finished = npu_batch_push(q, job);
	args->seq = q->next_seq;
	mutex_unlock(&q->submit_lock);

	if (args->out_count)
		npu_syncobj_install_out(&outs, finished);
	dma_fence_put(finished);
	drm_dev_exit(idx);
	if (qp)
		*qp = q;
	else
		npu_queue_put(q);
	return 0;

err_out:
	npu_syncobj_release_out(&outs);
err_job:
	npu_job_free(job);
	return ret;
}

int npu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	return npu_submit(file, data, false, NULL);
}

static bool npu_queue_settled(struct npu_queue *q, u64 seq)
{
	return READ_ONCE(q->done_seq) >= seq || READ_ONCE(q->failed);
}

/*
 * The queue a wait for `seq` on queue `id` is about, referenced; NULL
 * when there is nothing to wait for (the default queue not created yet,
 * seq 0); an ERR_PTR for an unknown queue or a seq not handed out yet.
 * The WAIT ioctl and the io_uring WAIT share these rules.
 */
struct npu_queue *npu_wait_queue(struct npu_ctx *ctx, u32 id, u64 seq)
{
	struct npu_queue *q = npu_queue_lookup(ctx, id, false);

	if (IS_ERR(q))
		return id == 0 && !seq ? NULL : q;
	if (seq > READ_ONCE(q->next_seq)) {
		npu_queue_put(q);
		return ERR_PTR(-EINVAL);
	}
	return q;
}

int npu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_wait *args = data;
	struct npu_queue *q;
	long left;
	int ret;

	if (args->flags || args->pad || args->pad2)
		return -EINVAL;
	q = npu_wait_queue(file->driver_priv, args->queue, args->seq);
	if (IS_ERR_OR_NULL(q))
		return PTR_ERR_OR_ZERO(q);

	left = wait_event_interruptible_timeout(q->wq, npu_queue_settled(q, args->seq),
						npu_deadline_jiffies(args->deadline_ns));
	if (left < 0) {
		/* Restarted as it is: the deadline does not move. */
		npu_queue_put(q);
		return left;
	}

	mutex_lock(&ndev->queue_lock);
	args->status = DRM_NPU_JOB_DONE;
	args->error_list_task = DRM_NPU_NO_LIST_TASK;
	if (args->seq <= q->done_seq) {
		ret = 0;
	} else if (q->failed && args->seq >= q->error_seq) {
		args->status = q->status;
		args->error_task = q->error_task;
		args->error_list_task = q->error_list_task;
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
