// SPDX-License-Identifier: MIT
/*
 * Task lists: a RUN_LIST task at head of a queue runs the tasks of a list
 * in device memory as if they sat in the ring in its place
 * (Documentation/firmware-interface.rst, "Task lists"). Called with
 * dev->lock held, from the scheduler and the units' completions.
 *
 * A queue's position is its ring head and, while the head is a RUN_LIST,
 * the index of the list's task at work (its cursor): a unit that finishes
 * a task advances the queue only if the cursor is still the one it was
 * given. The list, its patches and the I/O table are host-written memory:
 * the list and patches are read through the queue's context like any
 * operand, one task and its patches at a time, and checked as they are
 * read, so a bad entry faults the queue at that task and nothing else.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "npu_engine.h"
#include "npu_engine_int.h"

static_assert(sizeof(struct npu_fw_patch) == 24, "patch entries are 24 bytes");

/* Read `size` bytes at device `va` of the queue's context into `buf`. */
static int read_va(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va, void *buf,
		   uint64_t size, struct fault *f)
{
	uint8_t *h = buf;

	while (size) {
		uint8_t *d;
		uint64_t avail, n;

		if (npu_engine_xlate(dev, q, va, NPU_ACCESS_READ, &d, &avail, f))
			return -1;
		n = size < avail ? size : avail;
		memcpy(h, d, n);
		va += n;
		h += n;
		size -= n;
	}
	return 0;
}

static int bad(struct fault *f, uint64_t address)
{
	f->code = NPU_FW_EINVAL;
	f->access = NPU_ACCESS_READ;
	f->address = address;
	return -1;
}

static void leave(struct npu_list_run *l)
{
	free(l->io);
	memset(l, 0, sizeof(*l));
}

void npu_list_reset(struct npu_dev *dev, uint64_t qid)
{
	leave(&dev->eng.q[qid].list);
	npu_engine_slot(dev, qid)->list_pos = 0;
}

/* Enter the RUN_LIST `t` at head: take its I/O table out of the ring. */
static int enter(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		 const struct npu_fw_task *t, struct fault *f)
{
	struct npu_list_run *l = &dev->eng.q[qid].list;
	uint32_t n = (uint32_t)t->args[4], ndata = (n + 7) / 8;
	const struct npu_fw_task *ring = (const struct npu_fw_task *)(dev->hbm + q->ring_offset);

	leave(l);
	if (!t->args[1] || t->args[1] > UINT32_MAX || t->args[3] > UINT32_MAX ||
	    t->args[4] > NPU_FW_LIST_MAX_SLOTS || t->args[5] || t->args[6] ||
	    LOAD_ACQ(&q->tail) - q->head < 1 + ndata)
		return bad(f, t->args[0]);
	l->io = calloc(n ? n : 1, sizeof(*l->io));
	if (!l->io)
		return bad(f, t->args[0]);
	for (uint32_t i = 0; i < n; i++) {
		const uint64_t *data = (const uint64_t *)&ring[(q->head + 1 + i / 8) &
								 (q->ring_entries - 1)];

		l->io[i] = data[i % 8];
	}
	l->active = true;
	l->head = q->head;
	l->va = t->args[0];
	l->count = (uint32_t)t->args[1];
	l->patches_va = t->args[2];
	l->npatches = (uint32_t)t->args[3];
	l->nslots = n;
	l->ndata = ndata;
	return 0;
}

/*
 * Fetch task l->pos of the list and apply its NPU_FW_PATCH_ARG entries;
 * note where its entries are, for the KERNEL_ARGS ones.
 */
static int fetch(struct npu_dev *dev, struct npu_fw_queue *q, struct npu_list_run *l,
		 struct fault *f)
{
	uint64_t at = l->va + (uint64_t)l->pos * sizeof(l->cur);

	if (read_va(dev, q, at, &l->cur, sizeof(l->cur), f))
		return -1;
	if (l->cur.type == NPU_FW_TASK_FENCE || l->cur.type == NPU_FW_TASK_RUN_LIST)
		return bad(f, at);
	l->cur_patch = l->patch;
	while (l->patch < l->npatches) {
		struct npu_fw_patch p;
		uint64_t pva = l->patches_va + (uint64_t)l->patch * sizeof(p);

		if (read_va(dev, q, pva, &p, sizeof(p), f))
			return -1;
		if (p.task > l->pos)
			break;
		if (p.task < l->pos || p.pad || p.slot >= l->nslots ||
		    p.kind > NPU_FW_PATCH_KERNEL_ARGS ||
		    (p.kind == NPU_FW_PATCH_ARG && p.field >= 7) ||
		    (p.kind == NPU_FW_PATCH_KERNEL_ARGS &&
		     (l->cur.type != NPU_FW_TASK_KERNEL || p.field % 8)))
			return bad(f, pva);
		if (p.kind == NPU_FW_PATCH_ARG)
			l->cur.args[p.field] = l->io[p.slot] + p.offset;
		l->patch++;
	}
	l->cur_valid = true;
	return 0;
}

int npu_list_current(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		     struct npu_fw_task *t)
{
	struct npu_list_run *l = &dev->eng.q[qid].list;
	struct fault f;

	if (t->type != NPU_FW_TASK_RUN_LIST)
		return 1;
	if ((!l->active || l->head != q->head) && enter(dev, qid, q, t, &f))
		goto fault;
	if (!l->cur_valid && fetch(dev, q, l, &f))
		goto fault;
	*t = l->cur;
	return 1;
fault:
	npu_engine_queue_fault(dev, qid, &f);
	return 0;
}

int npu_list_patch_block(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
			 void *block, uint64_t read, uint64_t size, struct fault *f)
{
	struct npu_list_run *l = &dev->eng.q[qid].list;

	if (!l->active || l->head != q->head)
		return 0;
	for (uint32_t i = l->cur_patch; i < l->patch; i++) {
		struct npu_fw_patch p;
		uint64_t pva = l->patches_va + (uint64_t)i * sizeof(p);

		if (read_va(dev, q, pva, &p, sizeof(p), f))
			return -1;
		if (p.kind != NPU_FW_PATCH_KERNEL_ARGS)
			continue;
		if ((uint64_t)p.field + 8 > size)
			return bad(f, pva);
		/* Bytes past what this op library reads are a newer caller's. */
		if ((uint64_t)p.field + 8 <= read) {
			uint64_t v = l->io[p.slot] + p.offset;

			memcpy((uint8_t *)block + p.field, &v, sizeof(v));
		}
	}
	return 0;
}

uint64_t npu_engine_cursor(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q)
{
	const struct npu_list_run *l = &dev->eng.q[qid].list;
	uint32_t pos = l->active && l->head == q->head ? l->pos : 0;

	return (uint64_t)q->head << 32 | pos;
}

void npu_engine_advance(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q)
{
	struct npu_list_run *l = &dev->eng.q[qid].list;
	struct npu_prof_queue *p = &dev->eng.q[qid].prof;
	uint32_t next = q->head + 1;

	if (l->active && l->head == q->head) {
		npu_prof_done(dev, p, l->pos, 1, l->pos + 1 >= l->count);
		l->cur_valid = false;
		if (++l->pos < l->count) {
			STORE_REL(&q->list_pos, l->pos);
			return;
		}
		next += l->ndata;
		leave(l);
		STORE_REL(&q->list_pos, 0);
	} else {
		npu_prof_done(dev, p, 0, 0, 1);
	}
	STORE_REL(&q->head, next);
}
