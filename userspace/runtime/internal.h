/* SPDX-License-Identifier: MIT */
/* Internal: what the library's files share. */
#ifndef NPURT_INTERNAL_H
#define NPURT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#include <drm/npu_accel.h>

#include "npurt.h"
#include "mem_ranges.h"

struct npurt_ring;
struct mc_cache;
struct npurt_bo_ref;
struct npurt_event_pool;
struct npurt_notify_ref;
struct npurt_cb_pool;
struct npurt_cb_stream;
struct npurt_capture;
struct npurt_model_hooks;

/* Tasks a stream gathers into one batch at most (stream.c). */
#define NPURT_BATCH_MAX		64

/* A stream's arena of kernel argument blocks: slots in flight at most. */
#define NPURT_ARENA_SLOTS	128
#define NPURT_ARENA_SLOT	768	/* sizeof(struct npu_op_args), rounded up */

/* Completion words in the device's page of them (done_word.c). */
#define NPURT_WORDS		512

struct npurt_device {
	int fd;
	char node[64];
	char bus_id[32];
	npurt_submit_path path;
	struct npurt_ring *ring;	/* NPURT_SUBMIT_IO_URING only */
	pthread_mutex_t lock;		/* streams' completion state, the stream list */
	npurt_stream *streams;		/* live streams, under lock */
	pthread_mutex_t default_lock;	/* stream.c: making the default stream */
	npurt_stream *default_stream;	/* made on first use, gone at close */
	struct mc_cache *cache;		/* memory.c: blocks of cached segments */
	pthread_mutex_t bo_lock;	/* memory.c: dedicated buffers' handles */
	struct npurt_bo_ref *bos;
	struct npurt_event_pool *events;	/* event.c: device events to reuse */
	pthread_mutex_t notify_lock;		/* notify.c: the notifies' ids held */
	struct npurt_notify_ref *notifies;
	npurt_notify *notify_live;		/* notify.c: handles not destroyed */
	struct npurt_cb_pool *callbacks;	/* callback.c: its threads, under lock */
	struct mr_table ranges;			/* memory.c: live allocations' host ranges */
	struct mr_table vas;			/* and their device ranges (start: the
						 * device address, addr: the host's) */
	/* hooks.h: what model/ hooks in, installed on first use; NULL before. */
	_Atomic(const struct npurt_model_hooks *) hooks;
	/* model.c: the loaded models, for eviction; their LRU clock. */
	pthread_mutex_t models_lock;
	npurt_model *models;
	_Atomic uint64_t model_clock;
	/* done_word.c: the completion words' buffer (words NULL: none). */
	uint32_t words_handle;
	const _Atomic uint64_t *words;
	uint64_t words_used[NPURT_WORDS / 64];	/* under lock */
	_Atomic npurt_wait_policy wait_policy;
	bool device_checks_only;	/* NPURT_LAUNCH_CHECK=device (launch.c) */
	/* capture.c: the captures under way, and everything of theirs. */
	pthread_mutex_t capture_lock;
	struct npurt_capture *captures;
	uint64_t capture_ids;
	/* failure.c: the exception callback, under lock. */
	npurt_exception_fn exc_fn;
	void *exc_user;
	pthread_cond_t exc_cond;		/* a delivery finished */
	/* profile.c: the profiler, made at its first start; NULL before. */
	_Atomic(struct npurt_prof *) prof;
};

/* What issued a task: the operation's number on its stream and its call. */
struct npurt_op_ref {
	uint64_t op;
	const char *call;
	const char *what;		/* a launch's op, for the profiler; or NULL */
};

/*
 * A batch in flight, kept until it completes (dev->lock): failures name
 * the operation from it, and NPURT_STREAM_CONTINUE issues it again.
 */
struct npurt_batch {
	struct npurt_batch *next;
	uint64_t seq;			/* the stream's number for it */
	uint32_t count;
	struct npurt_op_ref *ops;	/* one per task, after the tasks */
	uint32_t in, out;		/* binary syncobjs it waits for, signals (0: none) */
	struct drm_npu_task tasks[];
};

/*
 * Completion state of a stream. Streams number their batches like the
 * driver does (1, 2, ...), so a batch's sequence number is known when it
 * is issued on either path.
 */
struct npurt_stream {
	npurt_device *dev;
	uint32_t queue;
	uint32_t depth;			/* tasks its queue's ring holds */
	atomic_uint refs;		/* the user's, and events recorded on it */
	bool destroyed;			/* queue gone; the rest is final */
	bool is_default;		/* dev->default_stream: the device's to destroy */
	npurt_stream *prev, *next;	/* dev->streams: under dev->lock */
	uint64_t issued;		/* sequence number of the last batch: written
					 * under dev->lock, for memory.c's readers */
	/* Under dev->lock: whichever thread reaps completions writes them. */
	uint64_t done;			/* every batch up to this one completed */
	uint32_t outstanding;		/* io_uring commands without a CQE */
	uint32_t slots;			/* and the ring slots they take */
	bool failed;			/* for good: takes no more work */
	int error;			/* the failing batch's errno */
	uint32_t status;		/* and its enum drm_npu_job_status */
	uint32_t task;			/* and the index of its failing task */
	bool gathering;			/* holds gathered tasks (progress thread) */
	/* failure.c, under dev->lock. */
	uint32_t flags;			/* NPURT_STREAM_* */
	uint32_t priority, time_limit_ms;	/* its queue's, to make another */
	uint64_t base;			/* the queue numbers batch seq as seq - base */
	int word;			/* its completion word, -1: none (done_word.c) */
	int64_t wait_ns;		/* its waits' recent length, under dev->lock */
	bool broken;			/* CONTINUE: failed, queue to be replaced */
	bool recovering;		/* and being replaced */
	uint64_t fail_seq;		/* the failed batch, fail_task its task */
	uint32_t fail_task;
	uint32_t failures;		/* counted, for a recovery to tell a new one */
	npurt_error fail;		/* the latest failure */
	char fail_why[256];		/* a refused launch: the rule it broke */
	npurt_error rec;		/* the first since npurt_stream_error_clear() */
	bool unreported;		/* CONTINUE: synchronize has not returned it */
	bool exc_pending;		/* the callback is due */
	uint32_t delivering;		/* callbacks running */
	struct npurt_batch *batches, *batches_tail;	/* in flight, oldest first */
	/* Gathered tasks: the stream's thread and the progress thread, under plock. */
	pthread_mutex_t plock;
	uint32_t npending;
	uint64_t ops;			/* operations pushed */
	struct drm_npu_task pending[NPURT_BATCH_MAX];
	struct npurt_op_ref pending_ops[NPURT_BATCH_MAX];
	/* Kernel launches' argument blocks (launch.c), under arena_lock. */
	pthread_mutex_t arena_lock;
	npurt_mem *arena;
	uint32_t arena_next;
	uint64_t arena_seq[NPURT_ARENA_SLOTS];	/* the batch that used each slot */
	/* copy.c: pinned buffers staging pageable memory, made at first use. */
	_Atomic(struct npurt_staging *) staging;
	struct npurt_cb_stream *callbacks;	/* callback.c, from the first one */
	/* capture.c: the capture it is in, and its stream number there. */
	_Atomic(struct npurt_capture *) capture;
	uint32_t cap_index;		/* under dev->capture_lock */
};

/* submit.c: the two paths behind one interface. */
/* GET_PARAM `param` (DRM_NPU_PARAM_*) of the device; who names the caller in errors. */
npurt_status npurt_device_param(npurt_device *dev, const char *who, uint32_t param,
				uint64_t *value);

npurt_status npurt_path_open(npurt_device *dev, const char *who);
void npurt_path_close(npurt_device *dev);
/* Submit batch `b` (the stream's next), which the stream keeps until it completes. */
npurt_status npurt_path_submit(npurt_stream *s, struct npurt_batch *b, const char *who);
/* Submit kept batch `b` again, on a replaced queue (failure.c). */
npurt_status npurt_path_resubmit(npurt_stream *s, struct npurt_batch *b, const char *who);
/*
 * Submit batch b[i] on stream s[i], n of them, as one run (SUBMIT_MULTI):
 * all or none are queued; a failure of one stops the others' queues. The
 * streams must have nothing gathered (their plocks held, flushed).
 */
npurt_status npurt_path_submit_multi(npurt_stream **s, struct npurt_batch **b, uint32_t n,
				     uint64_t *seqs, const char *who);
/* Ring slots a batch takes, its driver FENCE included. */
uint32_t npurt_batch_slots(const struct npurt_batch *b);
npurt_status npurt_path_wait(npurt_stream *s, uint64_t seq, const char *who);
/* The same, giving up with NPURT_ERR_TIMEOUT at `deadline_ns` (CLOCK_MONOTONIC). */
npurt_status npurt_path_wait_until(npurt_stream *s, uint64_t seq, int64_t deadline_ns,
				   const char *who);
void npurt_path_drain(npurt_stream *s);
/* Without waiting: NPURT_OK when all issued work completed, NPURT_ERR_NOT_READY, or the failure. */
npurt_status npurt_path_query(npurt_stream *s, uint64_t seq, const char *who);
/* Has the stream completed batch `seq`? Asks the kernel without waiting. */
bool npurt_path_poll(npurt_stream *s, uint64_t seq);
/* Is nothing of the stream in flight (true on paths that cannot tell)? */
bool npurt_path_dry(npurt_stream *s);
/* The stream holds gathered tasks, or no longer: the progress thread's business. */
void npurt_path_gathering(npurt_stream *s, bool gathering);
/* Gathered work could not be submitted: the stream fails with errno `err`. */
void npurt_path_refused(npurt_stream *s, int err);
/* Under dev->lock: io_uring's progress thread is to watch for failures (callback set). */
void npurt_path_watch(npurt_device *dev);
bool npurt_path_failed(npurt_stream *s);

/* failure.c: failures, their records and callbacks, and CONTINUE streams. */
/* Under dev->lock: the stream failed as the kernel says (status 0: refused, errno `err`). */
void npurt_stream_failed(npurt_stream *s, int err, uint32_t status, uint32_t task);
/* Run the callbacks due, unless the caller holds dev->lock; then, if `s`, wait for its own. */
void npurt_exceptions_deliver(npurt_device *dev, npurt_stream *s);
/* Under dev->lock: the stream's failure as the status and message `who` returns. */
npurt_status npurt_stream_failure(npurt_stream *s, const char *who);
/* A broken CONTINUE stream gets a new queue and what the failure cancelled (plock held). */
npurt_status npurt_stream_recover_locked(npurt_stream *s, const char *who);
npurt_status npurt_stream_recover(npurt_stream *s, const char *who);
/* Under dev->lock: the queue's sequence number for the stream's batch `seq` (0: done). */
uint64_t npurt_stream_kseq(const npurt_stream *s, uint64_t seq);
/*
 * done_word.c: completion words. Open finds none on devices without
 * them; a stream takes a word (-1: none left, or none at all) and asks
 * QUEUE_CREATE for it; reached is a look under dev->lock, spin looks for
 * up to the stream's budget without it. Both record the batch done.
 */
npurt_status npurt_words_open(npurt_device *dev, const char *who);
void npurt_words_close(npurt_device *dev);
int npurt_word_take(npurt_device *dev);
void npurt_word_give(npurt_device *dev, int word);
void npurt_word_ask(const npurt_stream *s, struct drm_npu_queue_create *create);
bool npurt_word_reached(npurt_stream *s, uint64_t seq);
enum npurt_spin {
	NPURT_SPIN_SEEN,	/* the batch is done, and recorded */
	NPURT_SPIN_SLEEP,	/* not seen: wait in the kernel */
	NPURT_SPIN_ASK,		/* NPURT_WAIT_SPIN: ask the kernel, then spin again */
};
enum npurt_spin npurt_word_spin(npurt_stream *s, uint64_t seq, int64_t deadline_ns,
				int64_t *start_ns);
/* After a wait that began spinning at *start_ns (0: did not): how long it took. */
void npurt_word_learn(npurt_stream *s, int64_t start_ns);
/* Under dev->lock: forget the batches completed; returns them, to free without the lock. */
struct npurt_batch *npurt_batches_retire(npurt_stream *s);
void npurt_batches_free(struct npurt_batch *b);

/* stream.c: a reference on a stream's record (refs). */
void npurt_stream_put(npurt_stream *s);
/*
 * stream.c: the device's live streams, each with a reference, for
 * npurt_streams_put(); NULL when out of memory.
 */
npurt_stream **npurt_streams_get(npurt_device *dev, size_t *n);
void npurt_streams_put(npurt_stream **all, size_t n);
/* stream.c: at device close, destroy the streams the caller left. */
void npurt_streams_close(npurt_device *dev);

/*
 * stream.c: a stream's work. Tasks pushed may be gathered with later ones
 * into one batch (see stream.c); *seq (may be NULL) gets the sequence
 * number of the batch that will hold them. The stream's thread only.
 */
/*
 * npurt_stream_push() of tasks the profiler names: what[i] is task i's
 * (string constants: a launch's op), NULL entries and a NULL array none.
 */
npurt_status npurt_stream_push_op(npurt_stream *s, const struct drm_npu_task *tasks,
				  uint32_t count, uint64_t *seq, const char *who,
				  const char *const *what);
npurt_status npurt_stream_push(npurt_stream *s, const struct drm_npu_task *tasks,
			       uint32_t count, uint64_t *seq, const char *who);
/*
 * stream.c: a run of batches on several streams at once (b[i] on s[i];
 * each stream once): each stream's gathered work is submitted first, then
 * all of the run or none of it. The batches are the streams' once
 * queued; on failure the caller still has them.
 */
npurt_status npurt_streams_run(npurt_stream **s, struct npurt_batch **b, uint32_t n,
			       uint64_t *seqs, const char *who);
/* stream.c: the batch the stream's last operation is in (held back or not). */
uint64_t npurt_stream_last(npurt_stream *s);
/* Submit what the stream has gathered: every task pushed is then issued. */
npurt_status npurt_stream_flush(npurt_stream *s, const char *who);
/* Wait for batch `seq` of the stream, submitting it first if it is gathered. */
npurt_status npurt_stream_wait(npurt_stream *s, uint64_t seq, const char *who);
/*
 * Submit a batch waiting for syncobj `in` and signalling `out` (0: none):
 * the stream's gathered work with `out`, or a NOP after it with `in` (work
 * issued before a wait does not wait with it).
 */
npurt_status npurt_stream_submit_sync(npurt_stream *s, uint32_t in, uint32_t out,
				      const char *who);

/* callback.c: a stream's callbacks at its destroy (before, after its last wait); the device's. */
void npurt_callbacks_drain(npurt_stream *s);
void npurt_callbacks_release(npurt_stream *s);
void npurt_callbacks_close(npurt_device *dev);

/* memory.c: the device's memory state, at open and close. */
npurt_status npurt_memory_open(npurt_device *dev, const char *who);
void npurt_memory_close(npurt_device *dev);

/* memory.c: what a host range is to the device, for copies and fills. */
enum npurt_place {
	NPURT_PAGEABLE,		/* no allocation of the device: plain host memory */
	NPURT_DEVICE_MEM,	/* device memory (HBM), CPU-mapped */
	NPURT_HOST_MEM,		/* pinned or registered host memory */
};
/*
 * Where [p, p + len) (len > 0) lies: *place, and *addr its device address
 * unless NPURT_PAGEABLE. NPURT_ERR_INVALID, the message naming `who` and
 * `what` ("destination"), when it straddles an allocation's bounds or is
 * in a mapping of device memory that no live allocation of this device
 * holds (freed, or another device's).
 */
npurt_status npurt_mem_where(npurt_device *dev, const void *p, size_t len, enum npurt_place *place,
			     uint64_t *addr, const char *who, const char *what);

/*
 * The live allocation of this device holding device addresses
 * [va, va + len): 0 and *out (start: its host address, addr: its device
 * address, as `ranges` has it), ERANGE when the range begins in one but
 * runs past its end (*out is that one), ENOENT when it begins in none.
 */
int npurt_mem_va_find(npurt_device *dev, uint64_t va, uint64_t len, struct mr_range *out);

/*
 * failure.c: the stream's operations in its batches up to `seq` that have
 * not completed, "operations 12 (npurt_launch gemm) to 20 of the stream"
 * ("the stream's work" when its batches do not say). The first may have
 * run already: its batch has not completed. dev->lock held.
 */
void npurt_stream_pending(npurt_stream *s, uint64_t seq, char *buf, size_t len);

/* copy.c: a stream's staging buffers go with it (its work has completed). */
void npurt_staging_free(npurt_stream *s);

/* event.c and notify.c: the device's events and notifies, at open and close. */
npurt_status npurt_events_open(npurt_device *dev, const char *who);
void npurt_events_close(npurt_device *dev);
void npurt_notifies_open(npurt_device *dev);
void npurt_notifies_close(npurt_device *dev);

/* oplib.c: the inputs op `op` of the op library takes, -1 for no such op. */
int npurt_op_inputs(uint32_t op);

/* NPURT_LAUNCH_CHECK from the environment, at open: NPURT_ERR_INVALID if it is no value. */
npurt_status npurt_launch_open(npurt_device *dev, const char *who);

/* A device ioctl: 0 or the errno, retried on EINTR. */
int npurt_ioctl(npurt_device *dev, unsigned long request, void *arg);

#endif /* NPURT_INTERNAL_H */
