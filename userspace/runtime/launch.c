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
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"
#include "npu_opcheck.h"

_Static_assert(sizeof(struct npu_op_args) <= NPURT_ARENA_SLOT,
	       "an argument block must fit an arena slot");
_Static_assert(NPURT_MAX_DIMS == NPU_OP_MAX_DIMS, "dimension limits agree");

static void tensor_to_block(const npurt_tensor *t, struct npu_tensor *o)
{
	o->va = t->addr;
	o->dtype = (uint32_t)t->dtype;
	o->ndim = t->ndim;
	memcpy(o->shape, t->shape, sizeof(o->shape));
	memcpy(o->stride, t->stride, sizeof(o->stride));
}

/*
 * What the launch touches of t lies in one live allocation of the
 * device: a view past its buffer would fault, or worse, write the
 * buffer next to it.
 */
static npurt_status in_memory(npurt_stream *s, const struct npu_tensor *t, const char *what,
			      const char *who, const char *op)
{
	uint64_t len = npu_tensor_extent(t);
	struct mr_range r;
	int err = npurt_mem_va_find(s->dev, t->va, len, &r);

	if (err == ERANGE)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): %s [%#llx, +%llu bytes) runs "
				       "%llu bytes past the end of its allocation [%#llx, +%llu bytes)",
				       who, op, what, (unsigned long long)t->va,
				       (unsigned long long)len,
				       (unsigned long long)(t->va + len - r.addr - r.size),
				       (unsigned long long)r.addr, (unsigned long long)r.size);
	if (err)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): %s [%#llx, +%llu bytes) is in no "
				       "live allocation of this device (freed, or another "
				       "device's?)", who, op, what, (unsigned long long)t->va,
				       (unsigned long long)len);
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

npurt_status npurt_launch_open(npurt_device *dev, const char *who)
{
	const char *env = getenv("NPURT_LAUNCH_CHECK");

	if (!env || !*env || !strcmp(env, "library"))
		return NPURT_OK;
	if (strcmp(env, "device"))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NPURT_LAUNCH_CHECK=%s: expected "
				       "'library' or 'device'", who, env);
	dev->device_checks_only = true;
	return NPURT_OK;
}

/* An op's parameters as ONNX defaults its attributes (npu_oplib.h says which is which). */
static void op_defaults(npurt_launch_desc *d)
{
	switch (d->op) {
	case NPU_OP_GEMM:
	case NPU_OP_ELU:
	case NPU_OP_CELU:
	case NPU_OP_THRESHOLDED_RELU:
		d->alpha = 1.0f;
		break;
	case NPU_OP_LEAKY_RELU:
		d->alpha = 0.01f;
		break;
	case NPU_OP_SELU:
		d->alpha = 1.67326319217681884765625f;
		d->beta = 1.05070102214813232421875f;	/* gamma */
		break;
	case NPU_OP_HARD_SIGMOID:
		d->alpha = 0.2f;
		d->beta = 0.5f;
		break;
	case NPU_OP_CLIP:
		d->alpha = -INFINITY;
		d->beta = INFINITY;
		break;
	case NPU_OP_SHRINK:
		d->alpha = 0.5f;	/* lambda; bias 0 */
		break;
	case NPU_OP_ISINF:
		d->alpha = 1.0f;	/* +inf and -inf both count */
		d->beta = 1.0f;
		break;
	case NPU_OP_REQUANT:
		d->beta = -INFINITY;	/* no lower bound but the dtype's */
		break;
	case NPU_OP_LAYERNORM:
		d->eps = 1e-5f;
		break;
	default:
		break;
	}
}

npurt_status npurt_launch_init(npurt_launch_desc *d, uint32_t op)
{
	if (!d)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_launch_init: NULL desc");
	if (npurt_op_inputs(op) < 0)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_launch_init: unknown op %u "
				       "(npurt_op_lookup() names them)", op);
	*d = (npurt_launch_desc){ .size = sizeof(*d), .op = op };
	op_defaults(d);
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
	char why[256];
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
	/* A zeroed descriptor's GEMM would write zeros and say nothing. */
	if (d->op == NPU_OP_GEMM && d->alpha == 0.0f && d->beta == 0.0f &&
	    !s->dev->device_checks_only)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(gemm): alpha and beta are both 0, "
				       "so it writes zeros: set alpha (npurt_launch_init() sets 1)",
				       who);
	a.op = d->op;
	a.flags = d->flags;
	a.axis = d->axis;
	memcpy(a.perm, d->perm, sizeof(a.perm));
	a.alpha = d->alpha;
	a.beta = d->beta;
	a.eps = d->eps;
	tensor_to_block(&d->in[0], &a.in[0]);
	if (op > 1)
		tensor_to_block(&d->in[1], &a.in[1]);
	tensor_to_block(&d->out, &a.out);
	/* The device's own rule (npu_opcheck.h): what it would refuse, refused here. */
	if (!s->dev->device_checks_only) {
		const char *name = npurt_op_name(d->op);

		if (npu_op_explain(&a, why, sizeof(why)))
			return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): %s", who, name, why);
		st = in_memory(s, &a.in[0], "input 0", who, name);
		if (!st && op > 1)
			st = in_memory(s, &a.in[1], "input 1", who, name);
		if (!st)
			st = in_memory(s, &a.out, "the output", who, name);
		if (st)
			return st;
	}
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
