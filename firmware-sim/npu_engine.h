/* SPDX-License-Identifier: MIT */
/*
 * The task engine: runs the tasks of every running queue, in order per
 * queue and round-robin across queues, one task at a time. Copies and
 * fills go through the MMU of the queue's context.
 *
 * A kernel launch is split: the engine gathers its tensors out of device
 * memory into private buffers, hands the compute to the AI cores and goes
 * on with other queues; when the cores are done it scatters the output
 * back and completes the task. Only the engine touches device memory, and
 * only under dev->lock, so a mailbox command (TLB_INVALIDATE, QUEUE_STOP)
 * is atomic with every device memory access, and never waits for compute.
 */
#ifndef NPU_ENGINE_H
#define NPU_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "npu_fw_if.h"
#include "npu_ops.h"

struct npu_dev;

/* A kernel launch computing on the AI cores: one at a time. */
struct npu_launch {
	bool active;			/* handed to the cores, not collected yet */
	bool discarded;			/* its queue stopped: never scattered */
	uint32_t qid;
	uint32_t head;			/* the task's place in the ring */
	uint64_t counted_ns;		/* exec time counted up to here */
	struct npu_op_args args;
	struct npu_view v[3];		/* in[0], in[1], out: private buffers */
};

/*
 * Engine-private state of a queue: the slot in HBM is the host's to
 * scribble on, so the counts behind exec_ms live here.
 */
struct npu_queue_exec {
	uint64_t exec_ns;		/* executing since QUEUE_START */
	uint64_t hung_since_ns;		/* injected hang counted up to here; 0: not hung */
};

struct npu_engine {
	struct npu_launch launch;
	struct npu_queue_exec q[NPU_FW_MAX_QUEUES];
	bool hang_seen;			/* some queue is hung with work */
	uint32_t cores_next;		/* steps start here: after the last launcher */
	/* The task moving data on the engine now: exec_ms advances during it. */
	uint32_t task_qid;
	uint64_t task_counted_ns;	/* counted up to here; 0: none */
	uint64_t task_bytes;		/* moved since then */
};

/* Mailbox: start / stop queue `qid`. Return 0 or -enum npu_fw_status. */
int32_t npu_engine_queue_start(struct npu_dev *dev, uint64_t qid);
int32_t npu_engine_queue_stop(struct npu_dev *dev, uint64_t qid);

/* Run one task on each queue that has one. Returns whether any ran. */
bool npu_engine_step(struct npu_dev *dev);

/*
 * Between steps: complete a launch the cores are through with (scatter
 * and advance its queue, or drop it if the queue stopped) and bring
 * exec_ms up to date. Returns whether a launch completed.
 */
bool npu_engine_poll(struct npu_dev *dev);

/*
 * How long the engine may sleep before it must poll again (exec_ms is
 * advancing), in ms; -1 when only a doorbell or a launch's end can
 * change anything.
 */
int npu_engine_sleep_ms(struct npu_dev *dev);

/*
 * Cancel the launch in flight, if any, without touching its queue (the
 * task stays at head, to run again): the engine is going away. It is
 * freed by the next npu_engine_poll() once the cores are through.
 */
void npu_engine_abandon(struct npu_dev *dev);

/* Power-on reset: every queue is stopped, drop the launch and counts. */
void npu_engine_reset(struct npu_dev *dev);

#endif /* NPU_ENGINE_H */
