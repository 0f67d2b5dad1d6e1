// SPDX-License-Identifier: MIT
/*
 * Profiling rings (Documentation/firmware-interface.rst, "Profiling"):
 * one record per task a queue completes, appended under dev->lock, so
 * queues may share a ring. The header is the host's to scribble on: head
 * only ever picks a slot modulo the ring, and a ring the host stopped
 * draining counts what it lost instead of overwriting.
 */
#include <string.h>

#include "npu_dev.h"
#include "npu_engine_int.h"
#include "npu_prof.h"

int32_t npu_prof_queue_start(struct npu_dev *dev, struct npu_prof_queue *p,
			     uint64_t ring, uint64_t arg)
{
	uint32_t n = (uint32_t)arg;
	uint64_t bytes = sizeof(struct npu_fw_prof_ring) +
			 (uint64_t)n * sizeof(struct npu_fw_prof_record);

	if (!ring) {
		if (arg)
			return -NPU_FW_EINVAL;
		memset(p, 0, sizeof(*p));
		return NPU_FW_OK;
	}
	if (ring & 63 || ring < NPU_FW_RESERVED_SIZE || arg >> 48 ||
	    n < NPU_FW_PROF_MIN || n > NPU_FW_PROF_MAX || (n & (n - 1)) ||
	    ring > dev->cfg.hbm_size || bytes > dev->cfg.hbm_size - ring)
		return -NPU_FW_EINVAL;
	memset(p, 0, sizeof(*p));
	p->ring = ring;
	p->entries = n;
	p->tag = (uint16_t)(arg >> 32);
	p->seq = 1;
	return NPU_FW_OK;
}

static struct npu_fw_prof_ring *header(struct npu_dev *dev, const struct npu_prof_queue *p)
{
	return (struct npu_fw_prof_ring *)(dev->hbm + p->ring);
}

void npu_prof_begin_slow(struct npu_dev *dev, struct npu_prof_queue *p,
			 const struct npu_fw_task *t, uint8_t unit)
{
	/* The batch count needs every FENCE, recording or not. */
	p->type = (uint8_t)t->type;
	p->unit = unit;
	if (t->type == NPU_FW_TASK_FENCE)
		p->fence_seq = t->args[0];
	else if (LOAD_ACQ(&header(dev, p)->enable))
		p->start_ns = npu_dev_clock_ns();
}

static void append(struct npu_dev *dev, const struct npu_prof_queue *p,
		   const struct npu_fw_prof_record *r)
{
	struct npu_fw_prof_ring *h = header(dev, p);
	uint32_t head = __atomic_load_n(&h->head, __ATOMIC_RELAXED);	/* host-writable */

	if (head - LOAD_ACQ(&h->tail) >= p->entries) {
		STORE_REL(&h->dropped, __atomic_load_n(&h->dropped, __ATOMIC_RELAXED) + 1);
		return;
	}
	memcpy((struct npu_fw_prof_record *)(h + 1) + (head & (p->entries - 1)), r, sizeof(*r));
	STORE_REL(&h->head, head + 1);
}

void npu_prof_done_slow(struct npu_dev *dev, struct npu_prof_queue *p,
			uint32_t list_pos, int in_list, int last)
{
	if (p->type == NPU_FW_TASK_FENCE) {
		p->seq = (uint32_t)(p->fence_seq + 1);
		p->index = 0;
		return;
	}
	/* Began before recording was on: from its completion, if it is on now. */
	if (LOAD_ACQ(&header(dev, p)->enable)) {
		uint64_t now = npu_dev_clock_ns();
		struct npu_fw_prof_record r = {
			.seq = p->seq,
			.index = p->index,
			.type = p->type,
			.unit = p->unit,
			.list_pos = in_list ? list_pos : 0,
			.tag = p->tag,
			.flags = in_list ? NPU_FW_PROF_IN_LIST : 0,
			.start_ns = p->start_ns ? p->start_ns : now,
			.end_ns = now,
		};

		append(dev, p, &r);
	}
	p->start_ns = 0;
	if (last)
		p->index++;
}
