// SPDX-License-Identifier: MIT
/*
 * The two submission paths behind one interface: ioctls, or io_uring
 * commands on one ring per device.
 *
 * io_uring: each batch is a SUBMIT command whose CQE arrives when the
 * batch has completed, so issuing costs one io_uring_enter() and waiting
 * for work already done costs nothing. The ring is shared by every thread
 * using the device:
 *  - sq_lock serialises filling and submitting SQEs;
 *  - dev->lock protects what completions update (streams' progress);
 *    one thread at a time reaps CQEs for everybody and the others sleep
 *    on cq_cond until it has dispatched a round (leader/followers), so a
 *    thread waiting for its stream is woken by whoever reaped its CQE.
 * The kernel may read a command's tasks after io_uring_enter() returns (a
 * SUBMIT that would block is retried from an io_uring worker), so each
 * command carries a copy of its tasks, freed when its CQE is reaped. A
 * stream never has more in flight than its queue's ring holds, so the
 * driver never needs to hold its batches in a backlog, whose overflow
 * would send one to an io_uring worker where later ones could overtake it.
 *
 * Completions come as task work to the thread that submitted: the ring
 * uses the default notification (no COOP/DEFER_TASKRUN), so that thread
 * is interrupted to post them even when another thread is the one waiting.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "internal.h"
#include "log.h"
#include "profile.h"
#include "ring.h"

#define SQ_ENTRIES	256
#define CQ_ENTRIES	8192	/* commands in flight before submitters reap */
#define REAP_BATCH	64

/* A SUBMIT in flight, or the WAIT that replaced it (see dispatch()). */
struct cmd {
	npurt_stream *stream;
	uint64_t seq;			/* the stream's number for the batch */
	uint64_t kseq;			/* the queue's */
	uint32_t queue;
	uint32_t count;
	uint32_t slots;			/* ring slots the batch takes, its FENCE too */
	bool wait;
	struct drm_npu_syncobj in, out;
	struct drm_npu_task tasks[];
};

static npurt_status ring_open(npurt_device *dev)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32 | IORING_SETUP_CQSIZE,
		.cq_entries = CQ_ENTRIES,
	};
	struct npurt_ring *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "out of memory");
	ret = io_uring_queue_init_params(SQ_ENTRIES, &r->ring, &p);
	if (ret) {
		free(r);
		return npurt_set_error(npurt_status_from_errno(-ret),
				       "io_uring with 128-byte SQEs and 32-byte CQEs: %s",
				       strerror(-ret));
	}
	pthread_mutex_init(&r->sq_lock, NULL);
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cq_cond, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&r->progress_cond, NULL);
	atomic_init(&r->inflight, 0);
	dev->ring = r;
	return NPURT_OK;
}

npurt_status npurt_path_open(npurt_device *dev, const char *who)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_URING_CMDS };
	const char *env = getenv("NPURT_SUBMIT");
	bool forced = false;
	npurt_status st;

	pthread_mutex_init(&dev->lock, NULL);
	pthread_cond_init(&dev->exc_cond, NULL);
	dev->path = NPURT_SUBMIT_IOCTL;
	if (env && *env) {
		if (!strcmp(env, "ioctl"))
			return NPURT_OK;
		if (strcmp(env, "io_uring"))
			return npurt_set_error(NPURT_ERR_INVALID,
					       "%s: NPURT_SUBMIT=%s: expected 'ioctl' or 'io_uring'",
					       who, env);
		forced = true;
	}
	/* Old drivers do not know the parameter: they take no commands. */
	if (npurt_ioctl(dev, DRM_IOCTL_NPU_GET_PARAM, &p) ||
	    !(p.value & (1u << (_IOC_NR(DRM_NPU_URING_CMD_SUBMIT) - DRM_COMMAND_BASE -
				DRM_NPU_URING_CMD_BASE)))) {
		if (forced)
			return npurt_set_error(NPURT_ERR_UNSUPPORTED,
					       "%s: NPURT_SUBMIT=io_uring: %s takes no io_uring commands",
					       who, dev->node);
		return NPURT_OK;
	}
	st = ring_open(dev);
	if (st) {
		if (forced)
			return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: NPURT_SUBMIT=io_uring: %s",
					       who, npurt_last_error());
		return NPURT_OK;	/* the kernel has no io_uring: ioctls it is */
	}
	dev->path = NPURT_SUBMIT_IO_URING;
	return NPURT_OK;
}

void npurt_path_close(npurt_device *dev)
{
	struct npurt_ring *r = dev->ring;

	/* Streams wait for their commands when destroyed: none is left. */
	if (r) {
		npurt_progress_stop(dev);
		io_uring_queue_exit(&r->ring);
		pthread_cond_destroy(&r->progress_cond);
		pthread_mutex_destroy(&r->sq_lock);
		pthread_cond_destroy(&r->cq_cond);
		free(r);
	}
	pthread_cond_destroy(&dev->exc_cond);
	pthread_mutex_destroy(&dev->lock);
}

/*
 * Under dev->lock: a SUBMIT cancelled without a failure (res2 0) lost its
 * CQE, not its batch: the thread that submitted it exited (io_uring
 * cancels an exiting task's commands). The batch still runs, and a WAIT
 * for it, from this live thread, brings the news instead.
 */
static void rewait(npurt_device *dev, struct cmd *c)
{
	struct npurt_ring *r = dev->ring;
	struct drm_npu_uring_wait *args;
	struct io_uring_sqe *sqe;

	c->wait = true;
	pthread_mutex_lock(&r->sq_lock);
	while (!(sqe = io_uring_get_sqe(&r->ring)))
		io_uring_submit(&r->ring);
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = dev->fd;
	sqe->cmd_op = DRM_NPU_URING_CMD_WAIT;
	sqe->user_data = (uintptr_t)c;
	args = (struct drm_npu_uring_wait *)sqe->cmd;
	args->seq = c->kseq;
	args->deadline_ns = DRM_NPU_DEADLINE_NONE;
	args->queue = c->queue;
	while (io_uring_submit(&r->ring) == -EINTR)
		;
	pthread_mutex_unlock(&r->sq_lock);
}

/* Under dev->lock: one CQE's news. */
static void dispatch(npurt_device *dev, uint64_t user_data, int32_t res, uint64_t res2)
{
	struct cmd *c = (struct cmd *)(uintptr_t)user_data;
	npurt_stream *s;

	if (!c)
		return;		/* the NOP that wakes the progress thread */
	s = c->stream;
	if (res == -ECANCELED && !res2) {
		rewait(dev, c);
		return;
	}
	if (res == 0) {
		/* Batches complete in order: one done means all before it are. */
		if (c->seq > s->done)
			s->done = c->seq;
	} else {
		npurt_stream_failed(s, -res, DRM_NPU_URING_RES2_STATUS(res2),
				    DRM_NPU_URING_RES2_TASK(res2));
	}
	s->outstanding--;
	s->slots -= c->slots;
	atomic_fetch_sub(&dev->ring->inflight, 1);
	free(c);
}

/* CLOCK_MONOTONIC now, in ns. */
static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Reap completions until done(arg) holds or `deadline_ns` (CLOCK_MONOTONIC,
 * DRM_NPU_DEADLINE_NONE: none) passes: as the reaping thread, or asleep
 * while another one reaps. Called and returns with dev->lock held.
 * Returns whether done(arg) holds.
 */
bool npurt_reap_until_deadline(npurt_device *dev, bool (*done)(void *), void *arg,
			       int64_t deadline_ns)
{
	struct npurt_ring *r = dev->ring;
	struct { uint64_t user_data; int32_t res; uint64_t res2; } got[REAP_BATCH];
	bool timed = deadline_ns != DRM_NPU_DEADLINE_NONE;

	while (!done(arg)) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;
		int64_t left = timed ? deadline_ns - now_ns() : 0;
		int ret;

		if (timed && left <= 0)
			return false;
		if (r->reaping) {
			if (timed) {
				struct timespec ts = { .tv_sec = deadline_ns / 1000000000,
						       .tv_nsec = deadline_ns % 1000000000 };

				pthread_cond_timedwait(&r->cq_cond, &dev->lock, &ts);
			} else {
				pthread_cond_wait(&r->cq_cond, &dev->lock);
			}
			continue;
		}
		r->reaping = true;
		pthread_mutex_unlock(&dev->lock);
		if (timed) {
			struct __kernel_timespec ts = { .tv_sec = left / 1000000000,
							.tv_nsec = left % 1000000000 };

			ret = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
		} else {
			do
				ret = io_uring_wait_cqe(&r->ring, &cqe);
			while (ret == -EINTR);
		}
		if (!ret) {
			io_uring_for_each_cqe(&r->ring, head, cqe) {
				if (n == REAP_BATCH)
					break;
				got[n].user_data = cqe->user_data;
				got[n].res = cqe->res;
				got[n].res2 = cqe->big_cqe[0];
				n++;
			}
			io_uring_cq_advance(&r->ring, n);
		}
		pthread_mutex_lock(&dev->lock);
		for (unsigned int i = 0; i < n; i++)
			dispatch(dev, got[i].user_data, got[i].res, got[i].res2);
		r->reaping = false;
		pthread_cond_broadcast(&r->cq_cond);
	}
	return true;
}

void npurt_reap_until(npurt_device *dev, bool (*done)(void *), void *arg)
{
	npurt_reap_until_deadline(dev, done, arg, DRM_NPU_DEADLINE_NONE);
}

/*
 * Under dev->lock: the CQEs already posted, without a system call, unless
 * a thread is reaping (it is about to bring the news itself).
 */
static void reap_posted(npurt_device *dev)
{
	struct io_uring_cqe *cqe;

	while (!dev->ring->reaping && !io_uring_peek_cqe(&dev->ring->ring, &cqe)) {
		uint64_t user_data = cqe->user_data, res2 = cqe->big_cqe[0];
		int32_t res = cqe->res;

		io_uring_cqe_seen(&dev->ring->ring, cqe);
		dispatch(dev, user_data, res, res2);
	}
}

bool npurt_path_dry(npurt_stream *s)
{
	npurt_device *dev = s->dev;
	bool dry;

	/* Without io_uring nothing would learn when to submit: never gather. */
	if (dev->path != NPURT_SUBMIT_IO_URING)
		return true;
	/*
	 * Not reaped: a completion nobody has taken yet counts as work in
	 * flight, so operations issued hot on the heels of the last batch
	 * gather (the progress thread submits them the moment it takes
	 * that completion), instead of each costing a system call because
	 * the device ran the one before faster than the caller made it.
	 */
	pthread_mutex_lock(&dev->lock);
	dry = !s->outstanding || s->failed || s->broken;
	pthread_mutex_unlock(&dev->lock);
	return dry;
}

void npurt_path_refused(npurt_stream *s, int err)
{
	pthread_mutex_lock(&s->dev->lock);
	npurt_stream_failed(s, err, 0, 0);
	pthread_mutex_unlock(&s->dev->lock);
	npurt_exceptions_deliver(s->dev, NULL);
}

bool npurt_path_failed(npurt_stream *s)
{
	bool failed;

	pthread_mutex_lock(&s->dev->lock);
	failed = s->failed;
	pthread_mutex_unlock(&s->dev->lock);
	return failed;
}

struct room {
	npurt_stream *s;
	uint32_t need;
};

/* Ring slots: a batch takes its tasks and the driver's FENCE. */
static bool stream_has_room(void *arg)
{
	struct room *r = arg;

	return r->s->slots + r->need <= r->s->depth || r->s->failed ||
	       (r->s->broken && !r->s->recovering);
}

static bool ring_has_room(void *arg)
{
	npurt_device *dev = arg;

	return atomic_load(&dev->ring->inflight) < CQ_ENTRIES;
}

/* Under dev->lock: `b` is the stream's latest batch. */
static void link_batch(npurt_stream *s, struct npurt_batch *b)
{
	npurt_prof_batch(s, b);
	b->next = NULL;
	if (s->batches_tail)
		s->batches_tail->next = b;
	else
		s->batches = b;
	s->batches_tail = b;
}

/* Submit `b`: the stream's next batch (linked to the stream), or one again. */
static npurt_status ring_submit(npurt_stream *s, struct npurt_batch *b, bool again,
				const char *who)
{
	const struct drm_npu_task *tasks = b->tasks;
	uint32_t count = b->count;
	npurt_device *dev = s->dev;
	struct npurt_ring *r = dev->ring;
	struct drm_npu_submit *args;
	struct io_uring_sqe *sqe;
	struct cmd *c;
	int ret;

	c = malloc(sizeof(*c) + count * sizeof(*tasks));
	if (!c)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	c->stream = s;
	c->count = count;
	c->slots = npurt_batch_slots(b);
	c->wait = false;
	c->in = (struct drm_npu_syncobj){ .handle = b->in };
	c->out = (struct drm_npu_syncobj){ .handle = b->out };
	memcpy(c->tasks, tasks, count * sizeof(*tasks));

	/* Never more in flight than the CQ ring holds. */
	if (!ring_has_room(dev)) {
		pthread_mutex_lock(&dev->lock);
		npurt_reap_until(dev, ring_has_room, dev);
		pthread_mutex_unlock(&dev->lock);
	}
	pthread_mutex_lock(&dev->lock);
	npurt_reap_until(dev, stream_has_room, &(struct room){ s, c->slots });
	s->slots += c->slots;
	s->outstanding++;
	if (!again) {
		b->seq = ++s->issued;
		link_batch(s, b);
	} else {
		npurt_prof_batch(s, b);		/* its records now come from the new queue */
	}
	c->seq = b->seq;
	c->kseq = npurt_stream_kseq(s, b->seq);
	c->queue = s->queue;
	pthread_mutex_unlock(&dev->lock);
	atomic_fetch_add(&r->inflight, 1);
	npurt_log(NPURT_LOG_DEBUG, "%s: queue %u batch %llu, %u tasks%s", who, c->queue,
		  (unsigned long long)c->seq, count, again ? " (again)" : "");

	pthread_mutex_lock(&r->sq_lock);
	/* Each submit empties the SQ; a failed one left its entries there. */
	while (!(sqe = io_uring_get_sqe(&r->ring)))
		io_uring_submit(&r->ring);
	/* A 128-byte SQE: the second half is the rest of the payload. */
	memset(sqe, 0, sizeof(*sqe));
	memset(sqe + 1, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = dev->fd;
	sqe->cmd_op = DRM_NPU_URING_CMD_SUBMIT;
	sqe->user_data = (uintptr_t)c;
	args = (struct drm_npu_submit *)sqe->cmd;
	args->tasks = (uintptr_t)c->tasks;
	args->count = count;
	args->queue = c->queue;
	args->in_syncobjs = (uintptr_t)&c->in;
	args->in_count = !!b->in;
	args->out_syncobjs = (uintptr_t)&c->out;
	args->out_count = !!b->out;
	do
		ret = io_uring_submit(&r->ring);
	while (ret == -EINTR);
	pthread_mutex_unlock(&r->sq_lock);
	if (ret < 0)
		/* Still in the SQ: it goes with the next submit. */
		return npurt_set_error(NPURT_ERR_INTERNAL, "%s: io_uring_submit: %s",
				       who, strerror(-ret));
	return NPURT_OK;
}

static npurt_status ioctl_submit(npurt_stream *s, struct npurt_batch *b, bool again,
				 const char *who)
{
	struct drm_npu_syncobj in_obj = { .handle = b->in }, out_obj = { .handle = b->out };
	struct drm_npu_submit args = {
		.tasks = (uintptr_t)b->tasks, .count = b->count,
		.in_syncobjs = (uintptr_t)&in_obj, .in_count = !!b->in,
		.out_syncobjs = (uintptr_t)&out_obj, .out_count = !!b->out,
	};
	bool misnumbered = false;
	int err;

	/* Only plock holders change the queue: the stream's submitter is one. */
	pthread_mutex_lock(&s->dev->lock);
	args.queue = s->queue;
	pthread_mutex_unlock(&s->dev->lock);
	err = npurt_ioctl(s->dev, DRM_IOCTL_NPU_SUBMIT, &args);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: the driver took none of "
				       "the stream's work: %s (SUBMIT to queue %u)", who,
				       strerror(err), args.queue);
	pthread_mutex_lock(&s->dev->lock);
	if (again) {
		misnumbered = args.seq + s->base != b->seq;
		npurt_prof_batch(s, b);
	} else {
		s->issued = args.seq + s->base;
		b->seq = s->issued;
		link_batch(s, b);
	}
	npurt_log(NPURT_LOG_DEBUG, "%s: queue %u batch %llu, %u tasks%s", who, args.queue,
		  (unsigned long long)(args.seq + s->base), args.count, again ? " (again)" : "");
	pthread_mutex_unlock(&s->dev->lock);
	if (misnumbered)
		return npurt_set_error(NPURT_ERR_INTERNAL, "%s: queue %u numbered a batch %llu, "
				       "not %llu", who, args.queue, (unsigned long long)args.seq,
				       (unsigned long long)(b->seq - s->base));
	return NPURT_OK;
}

npurt_status npurt_path_submit(npurt_stream *s, struct npurt_batch *b, const char *who)
{
	struct npurt_batch *old;
	bool failed;
	npurt_status st;

	pthread_mutex_lock(&s->dev->lock);
	failed = s->failed;
	old = npurt_batches_retire(s);
	pthread_mutex_unlock(&s->dev->lock);
	npurt_batches_free(old);
	if (failed)
		return npurt_set_error(NPURT_ERR_DEVICE,
				       "%s: the stream failed earlier (npurt_stream_synchronize says how)",
				       who);
	if (s->dev->path != NPURT_SUBMIT_IO_URING)
		return ioctl_submit(s, b, false, who);
	st = ring_submit(s, b, false, who);
	return st;
}

npurt_status npurt_path_resubmit(npurt_stream *s, struct npurt_batch *b, const char *who)
{
	if (s->dev->path != NPURT_SUBMIT_IO_URING)
		return ioctl_submit(s, b, true, who);
	return ring_submit(s, b, true, who);
}

uint32_t npurt_batch_slots(const struct npurt_batch *b)
{
	uint32_t n = 1;		/* the driver's FENCE */

	for (uint32_t i = 0; i < b->count; i++)
		n += b->tasks[i].type == DRM_NPU_TASK_RUN_LIST ?
		     1 + ((uint32_t)b->tasks[i].args[2] + 7) / 8 : 1;
	return n;
}

/*
 * io_uring: a batch submitted by ioctl has no CQE of its own; a WAIT for
 * it stands in for one (as for a SUBMIT its thread's exit cancelled), so
 * the stream's completions keep coming through the ring.
 */
static npurt_status ring_watch(npurt_stream *s, struct npurt_batch *b, const char *who)
{
	npurt_device *dev = s->dev;
	struct cmd *c = calloc(1, sizeof(*c));

	if (!c)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	c->stream = s;
	c->count = b->count;
	c->slots = npurt_batch_slots(b);
	pthread_mutex_lock(&dev->lock);
	c->seq = b->seq;
	c->kseq = npurt_stream_kseq(s, b->seq);
	c->queue = s->queue;
	s->outstanding++;
	s->slots += c->slots;
	pthread_mutex_unlock(&dev->lock);
	atomic_fetch_add(&dev->ring->inflight, 1);
	rewait(dev, c);
	return NPURT_OK;
}

npurt_status npurt_path_submit_multi(npurt_stream **s, struct npurt_batch **b, uint32_t n,
				     uint64_t *seqs, const char *who)
{
	struct drm_npu_submit_entry e[DRM_NPU_SUBMIT_MULTI_MAX];
	struct drm_npu_submit_multi a = { .entries = DRM_NPU_OBJ_ARRAY(n, e) };
	npurt_device *dev = s[0]->dev;
	npurt_status st = NPURT_OK;
	int err;

	if (!n || n > DRM_NPU_SUBMIT_MULTI_MAX)
		return npurt_set_error(NPURT_ERR_INTERNAL, "%s: %u streams in one run", who, n);
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < n && !st; i++) {
		if (s[i]->failed || s[i]->broken)
			st = NPURT_ERR_DEVICE;
		e[i] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)b[i]->tasks,
						      .count = b[i]->count, .queue = s[i]->queue };
	}
	/* Within its ring, as any submit (the ring path's accounting). */
	for (uint32_t i = 0; i < n && !st && dev->path == NPURT_SUBMIT_IO_URING; i++)
		npurt_reap_until(dev, stream_has_room, &(struct room){ s[i], npurt_batch_slots(b[i]) });
	pthread_mutex_unlock(&dev->lock);
	if (st)
		return npurt_set_error(st, "%s: a stream of the run failed earlier "
				       "(npurt_stream_synchronize says how)", who);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_SUBMIT_MULTI, &a);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: the driver took none of "
				       "the run's work: %s (SUBMIT_MULTI of %u batches)", who,
				       strerror(err), n);
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < n; i++) {
		b[i]->seq = e[i].seq + s[i]->base;
		if (b[i]->seq > s[i]->issued)
			s[i]->issued = b[i]->seq;
		seqs[i] = b[i]->seq;
		link_batch(s[i], b[i]);
	}
	pthread_mutex_unlock(&dev->lock);
	/*
	 * Queued: the batches are the streams' now. A batch whose watch could
	 * not be made would complete unseen: its stream fails instead, and
	 * says so when synchronized.
	 */
	for (uint32_t i = 0; i < n && dev->path == NPURT_SUBMIT_IO_URING; i++)
		if (ring_watch(s[i], b[i], who))
			npurt_path_refused(s[i], ENOMEM);
	return NPURT_OK;
}

struct reached {
	npurt_stream *s;
	uint64_t seq;
};

static bool stream_reached(void *arg)
{
	struct reached *r = arg;

	return r->s->done >= r->seq || r->s->failed || r->s->broken;
}

static bool stream_idle(void *arg)
{
	npurt_stream *s = arg;

	return !s->outstanding;
}

/*
 * The ioctl path's WAIT for batch `seq` until `deadline_ns`, recording
 * what it learnt (completion or the failure) in the stream: 0 or the errno.
 */
static int ioctl_wait(npurt_stream *s, uint64_t seq, int64_t deadline_ns)
{
	struct drm_npu_wait w = { .deadline_ns = deadline_ns };
	bool broken;
	int err;

	pthread_mutex_lock(&s->dev->lock);
	w.seq = npurt_stream_kseq(s, seq);
	w.queue = s->queue;
	broken = s->broken;
	pthread_mutex_unlock(&s->dev->lock);
	/* A broken stream's queue is being replaced: its caller recovers first. */
	if (broken)
		return EIO;
	err = w.seq ? npurt_ioctl(s->dev, DRM_IOCTL_NPU_WAIT, &w) : 0;
	pthread_mutex_lock(&s->dev->lock);
	if (!err && seq > s->done)
		s->done = seq;
	if (err == EIO)
		npurt_stream_failed(s, EIO, w.status, w.error_task);
	pthread_mutex_unlock(&s->dev->lock);
	return err;
}

/*
 * Under dev->lock: a CONTINUE stream that failed is to recover (its
 * caller then waits again), whoever learnt of it.
 */
static bool to_recover(const npurt_stream *s)
{
	return s->broken && !s->failed && !s->destroyed;
}

/*
 * Between spins on a completion word: whether the kernel has news of
 * the batch (done or, what the word never shows, failed), without
 * waiting. Then the caller's wait hears it without sleeping.
 */
static bool kernel_has_news(npurt_stream *s, uint64_t seq)
{
	npurt_device *dev = s->dev;
	bool news;

	if (dev->path == NPURT_SUBMIT_IOCTL)
		return ioctl_wait(s, seq, 0) != ETIMEDOUT;
	pthread_mutex_lock(&dev->lock);
	reap_posted(dev);
	news = s->done >= seq || s->failed || s->broken;
	pthread_mutex_unlock(&dev->lock);
	return news;
}

static npurt_status wait_once(npurt_stream *s, uint64_t seq, int64_t deadline_ns,
			      bool *recover, const char *who)
{
	npurt_device *dev = s->dev;
	struct reached until = { s, seq };
	npurt_status st = NPURT_OK;
	bool timed_out = false;
	int64_t start = 0;
	char pend[192];
	int err;

	/* Seen in memory: the kernel has nothing to add (failures never get there). */
	for (;;) {
		enum npurt_spin spin = npurt_word_spin(s, seq, deadline_ns, &start);

		if (spin == NPURT_SPIN_SEEN) {
			npurt_word_learn(s, start);
			npurt_log(NPURT_LOG_DEBUG, "%s: queue %u batch %llu done, seen in memory",
				  who, s->queue, (unsigned long long)seq);
			*recover = false;
			return NPURT_OK;
		}
		if (spin == NPURT_SPIN_SLEEP || kernel_has_news(s, seq))
			break;
	}
	if (dev->path == NPURT_SUBMIT_IOCTL && !s->destroyed) {
		err = ioctl_wait(s, seq, deadline_ns);
		timed_out = err == ETIMEDOUT;
		if (err && err != EIO && !timed_out)
			return npurt_set_error(npurt_status_from_errno(err),
					       "%s: WAIT on queue %u: %s", who, s->queue, strerror(err));
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->path == NPURT_SUBMIT_IO_URING)
		timed_out = !npurt_reap_until_deadline(dev, stream_reached, &until, deadline_ns);
	*recover = s->done < seq && to_recover(s);
	if (s->done < seq && !*recover && timed_out && !s->failed) {
		npurt_stream_pending(s, seq, pend, sizeof(pend));
		st = npurt_set_error(NPURT_ERR_TIMEOUT, "%s: the time ran out before %s "
				     "completed (its queue %u: %llu of %llu batches done)", who, pend,
				     s->queue, (unsigned long long)s->done,
				     (unsigned long long)seq);
	} else if (s->done < seq && !*recover) {
		st = npurt_stream_failure(s, who);
	}
	pthread_mutex_unlock(&dev->lock);
	if (!st)
		npurt_word_learn(s, start);
	npurt_log(NPURT_LOG_DEBUG, "%s: queue %u batch %llu %s, from the kernel", who, s->queue,
		  (unsigned long long)seq, st ? npurt_status_name(st) : "done");
	return st;
}

npurt_status npurt_path_wait_until(npurt_stream *s, uint64_t seq, int64_t deadline_ns,
				   const char *who)
{
	npurt_status st;
	bool recover;

	do {
		st = wait_once(s, seq, deadline_ns, &recover, who);
		if (recover)
			st = npurt_stream_recover(s, who);
	} while (recover && !st);
	npurt_exceptions_deliver(s->dev, NULL);
	return st;
}

npurt_status npurt_path_wait(npurt_stream *s, uint64_t seq, const char *who)
{
	return npurt_path_wait_until(s, seq, DRM_NPU_DEADLINE_NONE, who);
}

/*
 * Without waiting: a WAIT whose deadline has passed polls on the ioctl
 * path; on io_uring, the CQEs already posted are reaped unless a thread is
 * reaping (it is about to bring the news itself).
 */
bool npurt_path_poll(npurt_stream *s, uint64_t seq)
{
	npurt_device *dev = s->dev;
	bool reached;

	pthread_mutex_lock(&dev->lock);
	reached = s->done >= seq || s->destroyed || npurt_word_reached(s, seq);
	pthread_mutex_unlock(&dev->lock);
	if (reached)
		return true;
	if (dev->path == NPURT_SUBMIT_IOCTL) {
		struct drm_npu_wait w = { .deadline_ns = 0 };

		pthread_mutex_lock(&dev->lock);
		w.seq = npurt_stream_kseq(s, seq);
		w.queue = s->queue;
		reached = s->broken;
		pthread_mutex_unlock(&dev->lock);
		if (reached || (w.seq && npurt_ioctl(dev, DRM_IOCTL_NPU_WAIT, &w)))
			return false;
		pthread_mutex_lock(&dev->lock);
		if (seq > s->done)
			s->done = seq;
		pthread_mutex_unlock(&dev->lock);
		return true;
	}
	pthread_mutex_lock(&dev->lock);
	reap_posted(dev);
	reached = s->done >= seq;
	pthread_mutex_unlock(&dev->lock);
	return reached;
}

static npurt_status query_once(npurt_stream *s, uint64_t seq, bool *recover, const char *who)
{
	npurt_device *dev = s->dev;
	npurt_status st = NPURT_OK;
	char pend[192];

	if (dev->path == NPURT_SUBMIT_IOCTL && !s->destroyed) {
		int err = seq ? ioctl_wait(s, seq, 0) : 0;

		if (err && err != EIO && err != ETIMEDOUT)
			return npurt_set_error(npurt_status_from_errno(err),
					       "%s: WAIT on queue %u: %s", who, s->queue, strerror(err));
	} else if (dev->path == NPURT_SUBMIT_IO_URING) {
		npurt_path_poll(s, seq);
	}
	pthread_mutex_lock(&dev->lock);
	*recover = s->done < seq && to_recover(s);
	if (s->done < seq && !*recover && s->failed) {
		st = npurt_stream_failure(s, who);
	} else if (s->done < seq && !*recover) {
		npurt_stream_pending(s, seq, pend, sizeof(pend));
		st = npurt_set_error(NPURT_ERR_NOT_READY, "%s: %s not completed yet (its queue "
				     "%u: %llu of %llu batches done)", who, pend, s->queue,
				     (unsigned long long)s->done, (unsigned long long)seq);
	}
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npurt_status npurt_path_query(npurt_stream *s, uint64_t seq, const char *who)
{
	npurt_status st;
	bool recover;

	do {
		st = query_once(s, seq, &recover, who);
		if (recover)
			st = npurt_stream_recover(s, who);
	} while (recover && !st);
	npurt_exceptions_deliver(s->dev, NULL);
	return st;
}

void npurt_path_drain(npurt_stream *s)
{
	npurt_device *dev = s->dev;

	if (dev->path != NPURT_SUBMIT_IO_URING)
		return;
	pthread_mutex_lock(&dev->lock);
	npurt_reap_until(dev, stream_idle, s);
	pthread_mutex_unlock(&dev->lock);
}
