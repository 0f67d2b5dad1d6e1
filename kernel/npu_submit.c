// SPDX-License-Identifier: GPL-2.0-only
/*
 * The work ioctls: queue creation and destruction, submitting batches and
 * waiting for them. Everything a caller passes is checked here, before any
 * queue is touched; npu_queue.c owns what happens after.
 *
 * Locking: see npu_queue.c. Batches are built under ctx->lock (to look
 * their addresses up); nothing here holds a lock while it waits.
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

/* User tasks are written to the ring as they are, once checked. */
static_assert(sizeof(struct drm_npu_task) == sizeof(struct npu_fw_task));
static_assert((int)NPU_TASK_NOP == (int)NPU_FW_TASK_NOP &&
	      (int)NPU_TASK_COPY == (int)NPU_FW_TASK_COPY &&
	      (int)NPU_TASK_FILL == (int)NPU_FW_TASK_FILL &&
	      (int)NPU_TASK_KERNEL == (int)NPU_FW_TASK_KERNEL &&
	      (int)NPU_TASK_TIMESTAMP == (int)NPU_FW_TASK_TIMESTAMP &&
	      (int)NPU_TASK_BARRIER == (int)NPU_FW_TASK_BARRIER &&
	      (int)NPU_TASK_EVENT_RECORD == (int)NPU_FW_TASK_EVENT_RECORD &&
	      (int)NPU_TASK_EVENT_WAIT == (int)NPU_FW_TASK_EVENT_WAIT &&
	      (int)NPU_TASK_EVENT_RESET == (int)NPU_FW_TASK_EVENT_RESET &&
	      (int)NPU_TASK_NOTIFY_RECORD == (int)NPU_FW_TASK_NOTIFY_RECORD &&
	      (int)NPU_TASK_NOTIFY_WAIT == (int)NPU_FW_TASK_NOTIFY_WAIT);

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
	case NPU_TASK_TIMESTAMP:
		if (t->args[0] & 7)
			return false;
		first_unused = 1;
		break;
	case NPU_TASK_BARRIER:
		first_unused = 0;
		break;
	case NPU_TASK_EVENT_RECORD:
	case NPU_TASK_EVENT_WAIT:
	case NPU_TASK_EVENT_RESET:
	case NPU_TASK_NOTIFY_RECORD:
	case NPU_TASK_NOTIFY_WAIT:
		/* Whether the context holds it is checked with the context. */
		first_unused = 1;
		break;
	default:
		return false;
	}
	for (i = first_unused; i < ARRAY_SIZE(t->args); i++)
		unused |= t->args[i];
	return !unused;
}

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
	u32 kind = t->type <= NPU_TASK_EVENT_RESET ? NPU_SYNC_EVENT : NPU_SYNC_NOTIFY;
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

static struct npu_job *npu_job_create(struct npu_ctx *ctx,
				      const struct drm_npu_task *tasks, u32 count)
{
	struct npu_job *job = kzalloc(sizeof(*job), GFP_KERNEL);
	u32 i, cap = 0, sync_cap = 0;
	int ret = 0;

	if (!job)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&job->link);
	/* NOPs and barriers hold nothing: no need for the context's lock. */
	for (i = 0; i < count; i++)
		if (tasks[i].type != NPU_TASK_NOP && tasks[i].type != NPU_TASK_BARRIER)
			break;
	if (i == count)
		return job;
	mutex_lock(&ctx->lock);
	job->mark = ++ctx->job_marks;
	for (i = 0; i < count && !ret; i++) {
		const struct drm_npu_task *t = &tasks[i];

		if (t->type == NPU_TASK_COPY) {
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[2], &cap);
			if (!ret)
				ret = npu_job_hold_range(job, ctx, t->args[1], t->args[2], &cap);
		} else if (t->type == NPU_TASK_FILL) {
			ret = npu_job_hold_range(job, ctx, t->args[0], t->args[1], &cap);
		} else if (t->type == NPU_TASK_TIMESTAMP) {
			ret = npu_job_hold_range(job, ctx, t->args[0], 8, &cap);
		} else if (t->type >= NPU_TASK_EVENT_RECORD) {
			ret = npu_job_hold_sync(job, ctx, t, &sync_cap);
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

int npu_ioctl_queue_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_queue_create *args = data;
	u32 depth = args->depth ? args->depth : NPU_QUEUE_DEPTH_DEFAULT;
	int ret = -EBUSY, idx;
	u32 id;

	if (args->flags || args->queue || args->pad ||
	    args->priority > NPU_QUEUE_PRIORITY_REALTIME ||
	    !is_power_of_2(depth) || depth < NPU_QUEUE_DEPTH_MIN || depth > NPU_QUEUE_DEPTH_MAX)
		return -EINVAL;
	if (args->timeout_ms > npu_recovery_max_job_timeout_ms())
		return -EINVAL;
	/* Above NORMAL a queue can starve other users' work: as for CPU nice. */
	if (args->priority > NPU_QUEUE_PRIORITY_NORMAL && !capable(CAP_SYS_NICE))
		return -EPERM;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	mutex_lock(&ctx->lock);
	for (id = 1; id < NPU_CTX_QUEUES; id++) {
		if (!ctx->queues[id]) {
			ret = npu_queue_create(ctx, id, args->priority, depth, args->timeout_ms);
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

	if (args->pad || args->queue >= NPU_CTX_QUEUES)
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

int npu_ioctl_queue_abort(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_npu_queue_destroy *args = data;
	struct npu_queue *q;

	if (args->pad)
		return -EINVAL;
	q = npu_queue_lookup(file->driver_priv, args->queue, false);
	if (IS_ERR(q))
		return PTR_ERR(q);
	npu_queue_abort(q);
	npu_queue_put(q);
	return 0;
}

/* Batches up to this many tasks are copied to the stack, not the heap. */
#define NPU_SUBMIT_SMALL	4

/*
 * Queue a batch: SUBMIT for the ioctl (NPU_PUSH_BLOCK) and for io_uring.
 * Where it would block, NPU_PUSH_NOWAIT returns -EAGAIN having changed
 * nothing; NPU_PUSH_BACKLOG does the same for in-syncobjs but keeps a
 * batch that finds the ring full in the queue's backlog, in order. With
 * `qp` the caller gets the queue, referenced.
 */
int npu_submit(struct drm_file *file, struct drm_npu_submit *args,
	       enum npu_push_mode mode, struct npu_queue **qp)
{
	struct drm_device *drm = file->minor->dev;
	struct npu_device *ndev = to_npu_device(drm);
	struct npu_ctx *ctx = file->driver_priv;
	struct drm_npu_syncobj in[NPU_SUBMIT_MAX_SYNCOBJS], out[NPU_SUBMIT_MAX_SYNCOBJS];
	struct drm_npu_task small[NPU_SUBMIT_SMALL], *tasks = small;
	struct npu_syncobj_out outs;
	struct dma_fence *fence;
	struct npu_queue *q;
	struct npu_job *job;
	int ret = 0, idx;
	u32 i;

	if (args->flags || args->pad || !args->count || args->count > NPU_SUBMIT_MAX_TASKS)
		return -EINVAL;
	if (args->count > NPU_SUBMIT_SMALL) {
		tasks = kvmalloc_array(args->count, sizeof(*tasks), GFP_KERNEL);
		if (!tasks)
			return -ENOMEM;
	}
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
	if (mode != NPU_PUSH_BLOCK && args->in_count) {
		ret = -EAGAIN;
		goto out_free;
	}
	/* Dependencies first: nothing is held while waiting for them. */
	ret = npu_syncobj_wait_in(file, in, args->in_count);
	if (ret)
		goto out_free;
	ret = npu_syncobj_prepare_out(file, out, args->out_count, &outs);
	if (ret)
		goto out_free;

	/* Everything the batch names is checked before a queue is made. */
	job = npu_job_create(ctx, tasks, args->count);
	if (IS_ERR(job)) {
		ret = PTR_ERR(job);
		goto out_release;
	}
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_job;
	}
	q = npu_queue_lookup(ctx, args->queue, true);
	if (IS_ERR(q)) {
		ret = PTR_ERR(q);
		q = NULL;
		goto out_exit;
	}
	for (;;) {
		if (READ_ONCE(q->failed)) {
			ret = -EIO;
			goto out_exit;
		}
		ret = npu_queue_push(ndev, q, job, tasks, args->count,
				     mode == NPU_PUSH_BLOCK ? NPU_PUSH_NOWAIT : mode,
				     &args->seq, args->out_count ? &fence : NULL);
		if (ret != -EAGAIN || mode != NPU_PUSH_BLOCK)
			break;
		/*
		 * Wait for room outside the device's section: unbinding waits
		 * for every section to end, and this wait is the caller's.
		 */
		drm_dev_exit(idx);
		ret = wait_event_interruptible(q->wq, npu_queue_room_or_gone(ndev, q,
									     args->count + 1));
		if (ret)
			goto out_put;
		if (!drm_dev_enter(drm, &idx)) {
			ret = -ENODEV;
			goto out_put;
		}
	}
	if (ret)
		goto out_exit;
	job = NULL;	/* the queue's now */
	if (args->out_count) {
		npu_syncobj_install_out(&outs, fence);
		dma_fence_put(fence);
	}
	if (qp) {
		*qp = q;
		q = NULL;
	}
out_exit:
	drm_dev_exit(idx);
out_put:
	if (q)
		npu_queue_put(q);
out_job:
	if (job)
		npu_job_free(job);
out_release:
	npu_syncobj_release_out(&outs);
out_free:
	if (tasks != small)
		kvfree(tasks);
	return ret;
}

int npu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	return npu_submit(file, data, NPU_PUSH_BLOCK, NULL);
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
	ktime_t start = ktime_get();
	struct npu_queue *q;
	long timeout, left;
	int ret;

	q = npu_wait_queue(file->driver_priv, args->queue, args->seq);
	if (IS_ERR_OR_NULL(q))
		return PTR_ERR_OR_ZERO(q);

	timeout = npu_timeout_jiffies(args->timeout_ns);
	left = wait_event_interruptible_timeout(q->wq, npu_queue_settled(q, args->seq),
						timeout);
	if (left < 0) {
		npu_queue_put(q);
		npu_timeout_consume(&args->timeout_ns, start);
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
