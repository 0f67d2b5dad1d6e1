/* SPDX-License-Identifier: MIT */
/*
 * The task engine: a scheduler that hands the task at head of each
 * running queue to the unit that executes it, so tasks of different
 * queues run at the same time while each queue stays in order (a queue
 * has at most one task executing):
 *
 *  - copies and fills go to a free copy engine (a thread of its own);
 *  - kernel launches go to a free AI-core group: the group's cores read
 *    the inputs where they lie (or from private copies, see run_kernel()
 *    in npu_engine.c) and compute into a private buffer, which the
 *    scheduler scatters to device memory on completion;
 *  - sync tasks (fence, event and notify, timestamp, barrier, nop) run on
 *    the scheduler itself, occupying no unit.
 *
 * Everything the units share (queues, TLB, sync table, unit state) is
 * under dev->lock. A copy engine translates a chunk of its task under
 * the lock and moves it without; a mailbox command waits out the chunks
 * moving when it ran (npu_engine_dma_quiesce), and TLB_INVALIDATE waits
 * out the launches reading in place through older translations
 * (npu_engine_settle), so once TLB_INVALIDATE or QUEUE_STOP is answered no
 * byte moves through an old translation or for a stopped queue.
 */
#ifndef NPU_ENGINE_H
#define NPU_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "npu_fw_if.h"
#include "npu_ops.h"
#include "npu_prof.h"

struct npu_dev;

#define NPU_DEV_DMA_MAX		16	/* copy engines */
#define NPU_DEV_GROUPS_MAX	16	/* AI-core groups */

/* A kernel launch computing on an AI-core group. */
struct npu_launch {
	bool active;			/* handed to the cores, not collected yet */
	bool discarded;			/* its queue stopped: never scattered */
	bool rerun;			/* cancelled by npu_engine_settle: runs again */
	bool lost;			/* ... but settle had no memory to copy its inputs */
	uint8_t borrowed;		/* views (bit i: v[i]) read in place */
	unsigned int parts;		/* cores it runs on (0: all of its group) */
	uint32_t qid;
	uint32_t ctx;			/* its queue's context */
	uint64_t epoch;			/* eng.epoch when it translated */
	uint64_t cursor;		/* the task's place: npu_engine_cursor() */
	uint64_t counted_ns;		/* exec time counted up to here */
	struct npu_op args;		/* as the host wrote it */
	struct npu_op run;		/* as the cores run it: args, widened (npu_widen.c) */
	/* in[0], in[1], bias, out (of run), and out as the device holds it
	 * when a widened output has gaps: it is narrowed into that */
	struct npu_view v[5];
};

/* A copy engine and the COPY or FILL it runs. */
struct npu_dma {
	struct npu_dev *dev;
	pthread_t thread;
	pthread_cond_t go;		/* a task for it, or stop */
	bool busy;			/* has a task */
	bool cancel;			/* its queue stopped: drop it */
	bool moving;			/* moving a chunk, without dev->lock */
	uint64_t chunk_seq;		/* chunks started */
	uint32_t qid;
	uint64_t cursor;		/* the task's place: npu_engine_cursor() */
	struct npu_fw_task t;
	uint64_t done;			/* bytes of the task moved */
	uint64_t counted_ns;		/* exec time counted up to here */
};

/* A RUN_LIST at head of a queue, entered (npu_list.c). */
struct npu_list_run {
	bool active;
	bool cur_valid;			/* cur is task pos, patched */
	uint32_t head;			/* the RUN_LIST's place in the ring */
	uint64_t va, patches_va;
	uint32_t count, npatches;
	uint32_t nslots, ndata;		/* I/O slots, and the ring slots they take */
	uint32_t pos;			/* the task at work */
	uint32_t patch;			/* the first patch entry of a later task */
	uint32_t cur_patch;		/* the first of task pos */
	uint64_t *io;			/* the run's I/O table */
	struct npu_fw_task cur;
};

/*
 * Engine-private state of a queue: the slot in HBM is the host's to
 * scribble on, so the counts behind exec_ms live here.
 */
struct npu_queue_exec {
	struct npu_list_run list;
	struct npu_prof_queue prof;
	uint64_t exec_ns;		/* executing since QUEUE_START */
	uint64_t hung_since_ns;		/* injected hang counted up to here; 0: not hung */
	bool busy;			/* its head task runs on a unit */
};

struct npu_engine {
	struct npu_launch launch[NPU_DEV_GROUPS_MAX];
	struct npu_dma dma[NPU_DEV_DMA_MAX];
	struct npu_queue_exec q[NPU_FW_MAX_QUEUES];
	unsigned int num_dma, num_groups;
	bool dma_running;		/* copy engine threads started */
	bool dma_stop;
	pthread_cond_t dma_idle;	/* a chunk finished moving */
	pthread_cond_t cores_idle;	/* a group's cores got through a launch */
	uint64_t epoch;			/* bumped by npu_engine_settle */
	bool hang_seen;			/* some queue is hung with work */
	uint32_t next;			/* steps start here: after the last dispatch */
	/* A task moving data on the scheduler itself: exec_ms advances during it. */
	uint32_t task_qid;
	uint64_t task_counted_ns;	/* counted up to here; 0: none */
	uint64_t task_bytes;		/* moved since then */
};

/* Set up the engine's state for `dev` (before npu_dev_reset). */
void npu_engine_init(struct npu_dev *dev);
void npu_engine_fini(struct npu_dev *dev);

/* Mailbox: start / stop queue `qid`. Return 0 or -enum npu_fw_status. */
int32_t npu_engine_queue_start(struct npu_dev *dev, uint64_t qid, uint64_t prof_ring,
			       uint64_t prof_arg);
int32_t npu_engine_queue_stop(struct npu_dev *dev, uint64_t qid);

/*
 * Hand out or run the tasks at head of the queues: one dispatch per
 * queue of the top runnable priority. Returns whether any task started.
 */
bool npu_engine_step(struct npu_dev *dev);

/*
 * Between steps: complete launches the cores are through with (scatter
 * and advance their queue, or drop them if the queue stopped) and bring
 * exec_ms up to date. Returns whether a launch completed.
 */
bool npu_engine_poll(struct npu_dev *dev);

/*
 * How long the scheduler may sleep before it must poll again (exec_ms is
 * advancing), in ms; -1 when only a doorbell or a unit's end can change
 * anything.
 */
int npu_engine_sleep_ms(struct npu_dev *dev);

/*
 * Cancel the launches in flight without touching their queues (the task
 * stays at head, to run again): the engine is going away. They are freed
 * by the next npu_engine_poll() once the cores are through.
 */
void npu_engine_abandon(struct npu_dev *dev);

/* Power-on reset: every queue is stopped, drop the launches and counts. */
void npu_engine_reset(struct npu_dev *dev);

/* Copy engines (npu_dma.c). Start and stop their threads, unlocked. */
int npu_engine_dma_start(struct npu_dev *dev);
void npu_engine_dma_stop(struct npu_dev *dev);

/* Under dev->lock: hand a COPY or FILL at head of `qid` to a free engine. */
bool npu_engine_dma_free(struct npu_dev *dev);
void npu_engine_dma_submit(struct npu_dev *dev, uint32_t qid, uint64_t cursor,
			   const struct npu_fw_task *t);

/* Under dev->lock: the copy engine running `qid`'s task drops it. */
void npu_engine_dma_cancel(struct npu_dev *dev, uint32_t qid);

/*
 * Under dev->lock: wait until every chunk that was moving when called has
 * landed. The lock is dropped while waiting.
 */
void npu_engine_dma_quiesce(struct npu_dev *dev);

/*
 * Under dev->lock, after dropping translations of `ctx` (0: every
 * context): wait until no launch reads in place through one taken
 * before. A launch still at it after SETTLE_MS is cancelled, to run again
 * from the start on copies of its inputs, so the wait stays short however
 * long the launch. The lock is dropped while waiting.
 */
void npu_engine_settle(struct npu_dev *dev, uint32_t ctx);

/* A group's cores got through their launch: wake npu_engine_settle. */
void npu_engine_cores_idle(struct npu_dev *dev);

#endif /* NPU_ENGINE_H */
