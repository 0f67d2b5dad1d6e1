/* SPDX-License-Identifier: MIT */
/*
 * Profiling rings (npu_prof.c): the timeline of each task a queue runs,
 * written where the host asked at QUEUE_START (NPU_FW_CAP_PROFILE). The
 * scheduler calls the hooks below under dev->lock; a queue without a
 * ring costs one test per task.
 */
#ifndef NPU_PROF_H
#define NPU_PROF_H

#include <stdint.h>

#include "npu_fw_if.h"

struct npu_dev;

/* A queue's profiling state: engine-private, as the ring is host-written. */
struct npu_prof_queue {
	uint64_t ring;			/* HBM offset of its header; 0: none */
	uint32_t entries;
	uint16_t tag;
	uint32_t seq;			/* the batch of the task at head */
	uint16_t index;			/* that task's place in the batch */
	uint8_t type;			/* that task, once it began */
	uint8_t unit;			/* where it executes */
	uint64_t fence_seq;		/* a FENCE's seq: the next batch follows it */
	uint64_t start_ns;		/* it began executing or waiting; 0: not yet */
};

/*
 * QUEUE_START's args[1] and args[2]: set the queue's ring up, or none.
 * 0 or -NPU_FW_EINVAL (the state untouched).
 */
int32_t npu_prof_queue_start(struct npu_dev *dev, struct npu_prof_queue *p,
			     uint64_t ring, uint64_t arg);

void npu_prof_begin_slow(struct npu_dev *dev, struct npu_prof_queue *p,
			 const struct npu_fw_task *t, uint8_t unit);
void npu_prof_done_slow(struct npu_dev *dev, struct npu_prof_queue *p,
			uint32_t list_pos, int in_list, int last);

/*
 * NPU_PROF_OFF builds the device without the hooks (make bench's
 * baseline for what profiling costs when no queue uses it): QUEUE_START
 * still takes rings, and nothing is ever recorded in them.
 */
#ifdef NPU_PROF_OFF
#define NPU_PROF_ON	0
#else
#define NPU_PROF_ON	1
#endif

/* The task `t` at head begins executing (or waiting) on `unit`. */
static inline void npu_prof_begin(struct npu_dev *dev, struct npu_prof_queue *p,
				  const struct npu_fw_task *t, uint8_t unit)
{
	if (NPU_PROF_ON && __builtin_expect(p->ring != 0, 0) && !p->start_ns)
		npu_prof_begin_slow(dev, p, t, unit);
}

/* It moved to `unit` (a copy engine, a core group) before it began there. */
static inline void npu_prof_unit(struct npu_prof_queue *p, uint8_t unit)
{
	if (NPU_PROF_ON)
		p->unit = unit;
}

/*
 * It completed: task `list_pos` of the RUN_LIST at head if `in_list`,
 * else the head task. `last`: head moves past it.
 */
static inline void npu_prof_done(struct npu_dev *dev, struct npu_prof_queue *p,
				 uint32_t list_pos, int in_list, int last)
{
	if (NPU_PROF_ON && __builtin_expect(p->ring != 0, 0))
		npu_prof_done_slow(dev, p, list_pos, in_list, last);
}

#endif /* NPU_PROF_H */
