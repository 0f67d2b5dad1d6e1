// SPDX-License-Identifier: MIT
/*
 * Kernel launches: the op library's argument block (firmware-sim's
 * npu_oplib.h, the contract between runtimes and the device's op library)
 * written to a per-stream arena in device memory, and a KERNEL task that
 * names it.
 *
 * The arena is a ring of ARENA_SLOTS blocks. A slot is free again once the
 * batch that used it has completed: each slot remembers that batch's
 * sequence number, and the stream's completion count (which the
 * submission path keeps) says whether it is through. Threads sharing a
 * stream take slots under its arena_lock.
 */
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"
#include "npu_opdesc.h"

_Static_assert(sizeof(struct npu_op_args) <= NPURT_ARENA_SLOT,
	       "an argument block must fit an arena slot");
_Static_assert(NPURT_MAX_DIMS == NPU_OP_MAX_DIMS, "dimension limits agree");

static npurt_status tensor_to_block(const npurt_tensor *t, struct npu_tensor *o,
				    const char *what, const char *who)
{
	if (!t->ndim || t->ndim > NPURT_MAX_DIMS || (unsigned int)t->dtype >= NPURT_DTYPE_COUNT)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s has %s %u", who, what,
				       t->ndim && t->ndim <= NPURT_MAX_DIMS ? "dtype" : "ndim",
				       t->ndim && t->ndim <= NPURT_MAX_DIMS ?
				       (unsigned int)t->dtype : t->ndim);
	o->va = t->addr;
	o->dtype = (uint32_t)t->dtype;
	o->ndim = t->ndim;
	memcpy(o->shape, t->shape, sizeof(o->shape));
	memcpy(o->stride, t->stride, sizeof(o->stride));
	return NPURT_OK;
}

/*
 * The next arena slot, once the batch that used it last has completed
 * (waiting for it if not). The arena is allocated on the first launch.
 */
static npurt_status arena_slot(npurt_stream *s, uint32_t *slot, const char *who)
{
	npurt_status st;
	uint32_t i;
	uint64_t seq;

	if (!s->arena) {
		st = npurt_mem_alloc(s->dev, NPURT_ARENA_SLOTS * NPURT_ARENA_SLOT, &s->arena);
		if (st)
			return npurt_set_error(st, "%s: the stream's argument arena: %s", who,
					       npurt_last_error());
	}
	i = s->arena_next % NPURT_ARENA_SLOTS;
	seq = s->arena_seq[i];
	if (seq) {
		st = npurt_stream_wait(s, seq, who);
		if (st)
			return st;
	}
	*slot = i;
	return NPURT_OK;
}

npurt_status npurt_launch(npurt_stream *s, const npurt_launch_desc *d)
{
	static const char who[] = "npurt_launch";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL };
	struct npu_op a = { 0 };
	struct npu_op_args blk;
	npurt_status st;
	uint32_t slot = 0;
	int op;		/* its inputs */

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!s || !d)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (d->size < sizeof(*d))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->size %u, want %zu", who,
				       d->size, sizeof(*d));
	op = npurt_op_inputs(d->op);
	if (op < 0)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown op %u", who, d->op);
	if (d->block_dim > DRM_NPU_MAX_BLOCK_DIM)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): block_dim %u, at most %u",
				       who, npurt_op_name(d->op), d->block_dim, DRM_NPU_MAX_BLOCK_DIM);
	a.op = d->op;
	a.flags = d->flags;
	a.axis = d->axis;
	memcpy(a.perm, d->perm, sizeof(a.perm));
	a.alpha = d->alpha;
	a.beta = d->beta;
	a.eps = d->eps;
	st = tensor_to_block(&d->in[0], &a.in[0], "input 0", who);
	if (!st && op > 1)
		st = tensor_to_block(&d->in[1], &a.in[1], "input 1", who);
	if (!st)
		st = tensor_to_block(&d->out, &a.out, "the output", who);
	if (st)
		return st;
	if (npurt_capturing(s))
		return npurt_capture_launch(s, d, op, who);
	/* Threads sharing the stream take slots one at a time, in push order. */
	pthread_mutex_lock(&s->arena_lock);
	st = arena_slot(s, &slot, who);
	if (!st) {
		npu_op_encode(&a, &blk);
		memcpy((uint8_t *)npurt_mem_host_ptr(s->arena) + slot * NPURT_ARENA_SLOT, &blk,
		       sizeof(blk));
		t.args[0] = npurt_mem_device_addr(s->arena) + slot * NPURT_ARENA_SLOT;
		t.args[1] = d->block_dim;
		t.args[2] = sizeof(blk);
		const char *name = npurt_op_name(d->op);

		st = npurt_stream_push_op(s, &t, 1, &s->arena_seq[slot], who, &name);
		if (!st)
			s->arena_next++;
	}
	pthread_mutex_unlock(&s->arena_lock);
	return st;
}
