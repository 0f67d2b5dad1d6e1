/* SPDX-License-Identifier: MIT */
/* Internal: what the scheduler (npu_engine.c) and the copy engines (npu_dma.c) share. */
#ifndef NPU_ENGINE_INT_H
#define NPU_ENGINE_INT_H

#include "npu_dev.h"

#define LOAD_ACQ(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v)		__atomic_store_n((p), (v), __ATOMIC_RELEASE)

struct fault {
	uint32_t code;
	uint32_t access;
	uint64_t address;
};

static inline struct npu_fw_queue *npu_engine_slot(struct npu_dev *dev, uint64_t qid)
{
	return (struct npu_fw_queue *)(dev->hbm + NPU_FW_QUEUE_TABLE) + qid;
}

/* Queue `qid` executed for `ns` more: count it and publish exec_ms. */
void npu_engine_count_exec(struct npu_dev *dev, uint64_t qid, uint64_t ns);

/* Stop queue `qid` as FAULTED at its head, log it and tell the host. */
void npu_engine_queue_fault(struct npu_dev *dev, uint64_t qid, const struct fault *f);

/* Translate for a task of `q`; on a fault fill *f and return -1. */
int npu_engine_xlate(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
		     enum npu_access access, uint8_t **ptr, uint64_t *avail,
		     struct fault *f);

/*
 * npu_inplace.c. The host address of [va, va + size) for a launch to read
 * (or, with NPU_ACCESS_WRITE, write) in place: 0 with *ptr if the range
 * lies in one run of host memory, aligned to `align`; 1 if not (copy it
 * instead); -1 on a fault, with *f.
 */
int npu_engine_borrow(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
		      uint64_t size, uint64_t align, enum npu_access access, uint8_t **ptr,
		      struct fault *f);

/* Bit of struct npu_launch's `borrowed` for an output written in place (inputs: 0-2). */
#define NPU_BORROWED_OUT	(1u << 3)

/*
 * A launch settle cancelled, through: copy what it read in place, and give
 * an output it wrote in place a private buffer, to scatter once it has
 * run again (npu_inplace.c).
 */
void npu_engine_own_inputs(struct npu_launch *l);

/*
 * Under dev->lock: wait until no discarded launch of queue `qid` (any:
 * NPU_FW_MAX_QUEUES) still writes its output in place, so that once a
 * QUEUE_STOP is answered the device writes nothing more of that queue's.
 */
void npu_engine_wait_writes(struct npu_dev *dev, uint64_t qid);

/* Run a COPY or FILL in full, here and now (no copy engine threads). */
int npu_engine_dma_inline(struct npu_dev *dev, struct npu_fw_queue *q,
			  const struct npu_fw_task *t, struct fault *f);

/* The scheduler moved `bytes` for its current task: count time as it goes. */
void npu_engine_task_moved(struct npu_dev *dev, uint64_t bytes);

/*
 * npu_list.c. A queue's place: its ring head and, inside a RUN_LIST, the
 * list's task at work. A unit's task completes only at the place it was
 * given; advancing moves to the next task, in the list or in the ring.
 */
uint64_t npu_engine_cursor(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q);
void npu_engine_advance(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q);

/*
 * *t is the head task of `qid`: if it is a RUN_LIST, make it the list's
 * task at work, patched (entering the list first). 0 if that faulted the
 * queue.
 */
int npu_list_current(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		     struct npu_fw_task *t);

/*
 * A KERNEL task of a list: write its NPU_FW_PATCH_KERNEL_ARGS entries into
 * the copy of its argument block (`size` bytes, of which the device read
 * `read`). Nothing outside a list. -1 with *f on a bad entry.
 */
int npu_list_patch_block(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
			 void *block, uint64_t read, uint64_t size, struct fault *f);

/* Forget the queue's list: it starts or resets. */
void npu_list_reset(struct npu_dev *dev, uint64_t qid);

#endif /* NPU_ENGINE_INT_H */
