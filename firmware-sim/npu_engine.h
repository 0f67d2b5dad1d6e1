/* SPDX-License-Identifier: MIT */
/*
 * The task engine: runs the tasks of every running queue, in order per
 * queue and round-robin across queues, one task at a time. Copies and
 * fills go through the MMU of the queue's context.
 */
#ifndef NPU_ENGINE_H
#define NPU_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

struct npu_dev;

/* Mailbox: start / stop queue `qid`. Return 0 or -enum npu_fw_status. */
int32_t npu_engine_queue_start(struct npu_dev *dev, uint64_t qid);
int32_t npu_engine_queue_stop(struct npu_dev *dev, uint64_t qid);

/* Run one task on each queue that has one. Returns whether any ran. */
bool npu_engine_step(struct npu_dev *dev);

#endif /* NPU_ENGINE_H */
