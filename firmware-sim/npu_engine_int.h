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

/* Run a COPY or FILL in full, here and now (no copy engine threads). */
int npu_engine_dma_inline(struct npu_dev *dev, struct npu_fw_queue *q,
			  const struct npu_fw_task *t, struct fault *f);

/* The scheduler moved `bytes` for its current task: count time as it goes. */
void npu_engine_task_moved(struct npu_dev *dev, uint64_t bytes);

#endif /* NPU_ENGINE_INT_H */
