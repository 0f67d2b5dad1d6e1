// SPDX-License-Identifier: MIT
/*
 * Stream failures: their records, the exception callback, and streams
 * that continue past a failure (NPURT_STREAM_CONTINUE).
 *
 * Records. A stream keeps each batch it issued until the batch completes
 * (struct npurt_batch: the tasks and, per task, the operation that pushed
 * it). When a batch fails, the kernel says how and which task of the
 * batch, but not which batch: every batch from the failing one on reports
 * the same record. The first failed batch is found by asking the queue,
 * without waiting, about batches between the last one known complete and
 * the last one issued (a binary search: batches before it completed, the
 * later ones failed with it), and its kept copy names the operation.
 *
 * Callbacks run where no library lock is held by the caller of
 * npurt_exceptions_deliver(), at most one per failure: the stream's
 * exc_pending flag, taken under dev->lock, makes each one a single
 * delivery. A call that returns a failure waits for a delivery that
 * another thread started, so the callback has run by then.
 *
 * CONTINUE. The kernel fails a queue for good at its first failure and
 * cancels the batches behind it. Such a stream is then "broken" rather
 * than failed: waits return to their caller, who recovers it under the
 * stream's plock: once nothing of it is in flight (io_uring CQEs reaped),
 * its queue is replaced by a new one made as the stream's descriptor
 * said, and the batches kept from the failed one on are issued again,
 * the failed one without its tasks up to the failing one. The stream's
 * own batch numbers stay: the new queue numbers its batches from 1, and
 * `base` says how the two relate (what arena slots, events and memory
 * frees wait for is unchanged). Completion looks the same to everyone
 * else; waits that find the stream broken recover it or wait on plock
 * for whoever does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "internal.h"
#include "npu_opcheck.h"
#include "profile.h"

uint64_t npurt_stream_kseq(const npurt_stream *s, uint64_t seq)
{
	return seq > s->base ? seq - s->base : 0;
}

struct npurt_batch *npurt_batches_retire(npurt_stream *s)
{
	struct npurt_batch *done = s->batches, **link = &s->batches;

	while (*link && (*link)->seq <= s->done)
		link = &(*link)->next;
	if (link == &s->batches)
		return NULL;
	s->batches = *link;
	*link = NULL;
	if (!s->batches)
		s->batches_tail = NULL;
	return done;
}

void npurt_batches_free(struct npurt_batch *b)
{
	while (b) {
		struct npurt_batch *next = b->next;

		free(b);
		b = next;
	}
}

/*
 * Under dev->lock: the first batch the queue failed (0: none found) and
 * the kernel's record of it in *w.
 */
static uint64_t failed_batch(npurt_stream *s, struct drm_npu_wait *w)
{
	uint64_t lo = s->done + 1, hi = s->issued, found = 0;

	if (s->destroyed)
		return 0;
	while (lo <= hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		struct drm_npu_wait q = { .seq = npurt_stream_kseq(s, mid), .queue = s->queue };
		int err = q.seq ? npurt_ioctl(s->dev, DRM_IOCTL_NPU_WAIT, &q) : 0;

		/* EINVAL: not handed out yet (io_uring), so after the failure. */
		if (err == EIO || err == EINVAL) {
			if (err == EIO) {
				found = mid;
				*w = q;
			}
			hi = mid - 1;
		} else {
			lo = mid + 1;
		}
	}
	return found;
}

static struct npurt_batch *batch_of(npurt_stream *s, uint64_t seq)
{
	for (struct npurt_batch *b = s->batches; b; b = b->next)
		if (b->seq == seq)
			return b;
	return NULL;
}

void npurt_stream_pending(npurt_stream *s, uint64_t seq, char *buf, size_t len)
{
	const struct npurt_op_ref *first = NULL;
	char what[96];
	uint64_t last = 0;

	snprintf(buf, len, "the stream's work");
	for (struct npurt_batch *b = s->batches; b && b->seq <= seq; b = b->next) {
		if (b->seq <= s->done || !b->count)
			continue;
		if (!first)
			first = &b->ops[0];
		last = b->ops[b->count - 1].op;
	}
	if (!first || !first->op)
		return;
	snprintf(what, sizeof(what), "(%s%s%s)", first->call, first->what ? " " : "",
		 first->what ? first->what : "");
	if (last > first->op)
		snprintf(buf, len, "operations %llu %s to %llu of the stream",
			 (unsigned long long)first->op, what, (unsigned long long)last);
	else
		snprintf(buf, len, "operation %llu of the stream %s", (unsigned long long)first->op,
			 what);
}

/* A kernel launch's argument block, decoded from the stream's arena: 0, or -1 if not there. */
static int launch_args(npurt_stream *s, const struct drm_npu_task *t, struct npu_op *a)
{
	uint64_t base, addr = t->args[0];

	if (t->type != DRM_NPU_TASK_KERNEL || !s->arena)
		return -1;
	base = npurt_mem_device_addr(s->arena);
	if (addr < base || addr + sizeof(struct npu_op_args) > base + npurt_mem_size(s->arena))
		return -1;
	npu_op_decode((const struct npu_op_args *)((const char *)npurt_mem_host_ptr(s->arena) +
						   (addr - base)), a);
	return 0;
}

/*
 * The launch the device refused, judged by the op library's rule as the
 * device judged it: the reason into the record, the tensors into the
 * stream's message.
 */
static void launch_refused(npurt_stream *s, npurt_error *r, const struct npu_op *a)
{
	r->reason = npu_op_check(a);
	if (r->reason)
		npu_op_explain(a, s->fail_why, sizeof(s->fail_why));
}

static bool recoverable(uint32_t status)
{
	return status == DRM_NPU_JOB_FAULT || status == DRM_NPU_JOB_INVALID ||
	       status == DRM_NPU_JOB_KERNEL_ERROR || status == DRM_NPU_JOB_TIMEOUT;
}

void npurt_stream_failed(npurt_stream *s, int err, uint32_t status, uint32_t task)
{
	npurt_error r = { .size = sizeof(r), .stream = s };
	struct drm_npu_wait w = { 0 };
	struct npurt_batch *b;
	struct npu_op a;
	uint64_t k;

	/* One failure a queue: a broken stream's old queue says no more. */
	if (s->failed || (s->broken && !s->recovering))
		return;
	k = failed_batch(s, &w);
	s->fail_why[0] = '\0';
	if (k) {
		err = EIO;
		status = w.status;
		task = w.error_task;
		if (status == DRM_NPU_JOB_FAULT) {
			r.fault_address = w.fault_address;
			r.fault_write = w.fault_access;
		}
		b = batch_of(s, k);
		/*
		 * The kernel names the first batch it had not seen complete and
		 * counts ring slots from it (each batch: its tasks and a FENCE);
		 * the batches before the failing task's ran.
		 */
		while (b && task >= b->count && b->next && b->next->seq == b->seq + 1) {
			task -= b->count + 1;
			b = b->next;
			k = b->seq;
		}
		if (b && task < b->count) {
			r.op_index = b->ops[task].op;
			r.call = b->ops[task].call;
			r.task_type = b->tasks[task].type;
			if (!launch_args(s, &b->tasks[task], &a)) {
				r.op = a.op;
				if (status == DRM_NPU_JOB_KERNEL_ERROR)
					launch_refused(s, &r, &a);
			}
		}
	}
	r.error = err;
	r.device_status = status;
	r.status = !status ? npurt_status_from_errno(err) :
		   status == DRM_NPU_JOB_TIMEOUT ? NPURT_ERR_TIMEOUT : NPURT_ERR_DEVICE;
	s->fail = r;
	s->failures++;
	s->fail_seq = k;
	s->fail_task = task;
	if (!s->rec.status)
		s->rec = r;
	s->exc_pending = true;
	if (s->dev->exc_fn)
		npurt_path_watch(s->dev);
	if (s->flags & NPURT_STREAM_CONTINUE && k && recoverable(status)) {
		s->broken = true;
		s->unreported = true;
		return;
	}
	s->failed = true;
	s->error = err;
	s->status = status;
	s->task = task;
}

static const char *job_status_name(uint32_t status)
{
	const char *name = status ? npurt_device_status_name(status) : NULL;

	return name ? name : "unknown failure";
}

/*
 * In the caller's terms first (which of its operations, the call and op
 * that issued it), the device's after: its task in the batch, and kind.
 */
npurt_status npurt_stream_failure(npurt_stream *s, const char *who)
{
	const npurt_error *r = &s->fail;
	const char *type = npurt_task_type_name(r->task_type);
	const char *opname = r->op ? npurt_op_name(r->op) : NULL;
	char op[96] = "the stream's work", at[64] = "";

	if (!r->device_status)
		return npurt_set_error_record(r, "%s: the stream's queue %u refused its work: %s",
					      who, s->queue, strerror(r->error));
	if (r->op_index)
		snprintf(op, sizeof(op), "operation %llu of the stream (%s%s%s)",
			 (unsigned long long)r->op_index, r->call, opname ? " " : "",
			 opname ? opname : "");
	if (r->device_status == DRM_NPU_JOB_FAULT)
		snprintf(at, sizeof(at), " at device address %#llx (%s)",
			 (unsigned long long)r->fault_address, r->fault_write ? "write" : "read");
	return npurt_set_error_record(r, "%s: %s in %s%s%s%s; the device's task %u of its batch%s%s",
				      who, job_status_name(r->device_status), op, at,
				      s->fail_why[0] ? ": " : "", s->fail_why, s->fail_task,
				      type ? ", a " : "", type ? type : "");
}

void npurt_exceptions_deliver(npurt_device *dev, npurt_stream *mine)
{
	pthread_mutex_lock(&dev->lock);
	for (;;) {
		npurt_exception_fn fn = dev->exc_fn;
		void *user = dev->exc_user;
		npurt_stream *s = dev->streams;
		npurt_error rec;

		while (s && !s->exc_pending)
			s = s->next;
		if (s && !fn) {
			s->exc_pending = false;	/* nobody to tell */
			continue;
		}
		if (s) {
			s->exc_pending = false;
			s->delivering++;
			rec = s->fail;
			pthread_mutex_unlock(&dev->lock);
			fn(&rec, user);
			pthread_mutex_lock(&dev->lock);
			s->delivering--;
			pthread_cond_broadcast(&dev->exc_cond);
			continue;
		}
		if (!mine || !mine->delivering)
			break;
		pthread_cond_wait(&dev->exc_cond, &dev->lock);
	}
	pthread_mutex_unlock(&dev->lock);
}

npurt_status npurt_device_set_exception_callback(npurt_device *dev, npurt_exception_fn fn,
						 void *user)
{
	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_device_set_exception_callback"))
		return NPURT_ERR_INVALID;
	if (!dev)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "npurt_device_set_exception_callback: NULL device");
	pthread_mutex_lock(&dev->lock);
	dev->exc_fn = fn;
	dev->exc_user = user;
	if (fn)
		npurt_path_watch(dev);
	pthread_mutex_unlock(&dev->lock);
	return NPURT_OK;
}

npurt_status npurt_stream_error_peek(npurt_stream *s, npurt_error *out)
{
	npurt_error rec;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, "npurt_stream_error_peek"))
		return NPURT_ERR_INVALID;
	pthread_mutex_lock(&s->dev->lock);
	rec = s->rec;
	pthread_mutex_unlock(&s->dev->lock);
	rec.size = sizeof(rec);
	return npurt_error_copy(out, &rec, "npurt_stream_error_peek");
}

npurt_status npurt_stream_error_clear(npurt_stream *s)
{
	if (npurt_handle_check(s, NPURT_KIND_STREAM, "npurt_stream_error_clear"))
		return NPURT_ERR_INVALID;
	pthread_mutex_lock(&s->dev->lock);
	memset(&s->rec, 0, sizeof(s->rec));
	pthread_mutex_unlock(&s->dev->lock);
	return NPURT_OK;
}

/* A queue made as the stream's was, for its failed one: 0 or the errno. */
static int replace_queue(npurt_stream *s, uint32_t old, uint32_t *queue)
{
	struct drm_npu_queue_create create = {
		.priority = s->priority, .depth = s->depth, .timeout_ms = s->time_limit_ms,
	};
	struct drm_npu_queue_destroy destroy = { .queue = old };
	int err;

	/* The old queue no longer writes the word, and the new one zeroes it. */
	npurt_word_ask(s, &create);
	npurt_ioctl(s->dev, DRM_IOCTL_NPU_QUEUE_DESTROY, &destroy);
	/* The new queue numbers from 1 again: the profiler takes the old one's first. */
	npurt_prof_queue(s->dev, &create);
	err = npurt_ioctl(s->dev, DRM_IOCTL_NPU_QUEUE_CREATE, &create);
	if (!err)
		npurt_prof_queue_made(s->dev, create.queue);
	*queue = create.queue;
	return err;
}

/*
 * Under dev->lock: the queue replaced, what the failure cancelled is to
 * be issued again: the failed batch's tasks after the failed one, and the
 * batches after it. Returns the batches completed meanwhile, to free.
 */
static struct npurt_batch *cut_failed(npurt_stream *s)
{
	uint64_t k = s->fail_seq;
	uint32_t t = s->fail_task;
	struct npurt_batch *b = batch_of(s, k);

	if (s->done < k - 1)
		s->done = k - 1;
	if (b && t + 1 < b->count) {
		memmove(b->tasks, b->tasks + t + 1, (b->count - t - 1) * sizeof(b->tasks[0]));
		b->ops += t + 1;
		b->count -= t + 1;
	} else if (s->done < k) {
		s->done = k;
	}
	return npurt_batches_retire(s);
}

/* One round: a new queue, and the kept batches issued again on it. */
static npurt_status recover_round(npurt_stream *s, const char *who)
{
	npurt_device *dev = s->dev;
	struct npurt_batch *dropped;
	npurt_status st = NPURT_OK;
	uint32_t old, queue, failures;
	int err;

	/* The old queue's CQEs first: afterwards nothing of it is in flight. */
	npurt_path_drain(s);
	pthread_mutex_lock(&dev->lock);
	old = s->queue;
	pthread_mutex_unlock(&dev->lock);
	err = replace_queue(s, old, &queue);
	pthread_mutex_lock(&dev->lock);
	if (err) {
		s->failed = true;
		s->error = err;
		pthread_mutex_unlock(&dev->lock);
		return npurt_set_error(npurt_status_from_errno(err),
				       "%s: a new queue for the stream after its failure: %s", who,
				       strerror(err));
	}
	s->queue = queue;
	dropped = cut_failed(s);
	s->base = s->batches ? s->batches->seq - 1 : s->issued;
	s->recovering = true;
	failures = s->failures;
	pthread_mutex_unlock(&dev->lock);
	npurt_batches_free(dropped);
	/* Only plock holders change the list: it is ours to walk. */
	for (struct npurt_batch *b = s->batches; b && !st; b = b->next) {
		bool again;

		st = npurt_path_resubmit(s, b, who);
		pthread_mutex_lock(&dev->lock);
		again = s->failures != failures;
		pthread_mutex_unlock(&dev->lock);
		/* Failed again: the next round issues the rest. */
		if (again)
			break;
	}
	pthread_mutex_lock(&dev->lock);
	s->recovering = false;
	if (s->failures == failures) {
		s->broken = false;
		if (st) {
			s->failed = true;
			s->error = EIO;
		}
	} else {
		st = NPURT_OK;
	}
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npurt_status npurt_stream_recover_locked(npurt_stream *s, const char *who)
{
	npurt_status st = NPURT_OK;
	bool broken;

	/* Each round drops a failed task: rounds end. */
	for (;;) {
		pthread_mutex_lock(&s->dev->lock);
		broken = s->broken && !s->failed && !s->destroyed;
		pthread_mutex_unlock(&s->dev->lock);
		if (!broken || st)
			return st;
		st = recover_round(s, who);
	}
}

npurt_status npurt_stream_recover(npurt_stream *s, const char *who)
{
	npurt_status st;

	pthread_mutex_lock(&s->plock);
	st = npurt_stream_recover_locked(s, who);
	pthread_mutex_unlock(&s->plock);
	return st;
}
