/* SPDX-License-Identifier: MIT */
/*
 * npu_opdesc.h - a kernel launch decoded: every tensor with all its
 * dimensions in one place, the window with its depth. The firmware
 * decodes each argument block it runs (npu_op_decode()), the runtime
 * builds its launches in this form and encodes them (npu_op_encode()),
 * and the op library's checks and ops read only this form: how the block
 * grew by versions (npu_oplib.h) stays in these two functions. Header
 * only, like npu_opdefs.h, so both sides share one definition.
 */
#ifndef NPU_OPDESC_H
#define NPU_OPDESC_H

#include <stdint.h>
#include <string.h>

#include "npu_oplib.h"

/* struct npu_op_tensor with its dimensions past the fourth. */
struct npu_tensor {
	uint64_t va;
	uint32_t dtype;			/* enum npu_op_dtype */
	uint32_t ndim;			/* 1..NPU_OP_MAX_DIMS */
	uint64_t shape[NPU_OP_MAX_DIMS];
	uint64_t stride[NPU_OP_MAX_DIMS];	/* 0 past ndim */
};

/* struct npu_op_epilogue, its bias decoded. */
struct npu_epi {
	uint32_t flags;			/* NPU_OP_E_* */
	uint32_t act;
	float alpha, beta;
	struct npu_tensor bias;
};

/* struct npu_op_args, its fields as the block's newest version has them. */
struct npu_op {
	uint32_t op, flags, axis;
	uint32_t perm[NPU_OP_MAX_DIMS];
	float alpha, beta, eps;
	struct npu_tensor in[2];
	struct npu_tensor out;
	struct npu_op_window win;
	struct npu_op_window_depth win_d;
	struct npu_epi epi;
};

#define NPU_HI_DIMS	(NPU_OP_MAX_DIMS - NPU_MAX_DIMS)

static inline void npu_tensor_decode(const struct npu_op_tensor *t,
				     const struct npu_op_dims_hi *hi, struct npu_tensor *o)
{
	o->va = t->va;
	o->dtype = t->dtype;
	o->ndim = t->ndim;
	memcpy(o->shape, t->shape, sizeof(t->shape));
	memcpy(o->stride, t->stride, sizeof(t->stride));
	memset(o->shape + NPU_MAX_DIMS, 0, NPU_HI_DIMS * sizeof(o->shape[0]));
	memset(o->stride + NPU_MAX_DIMS, 0, NPU_HI_DIMS * sizeof(o->stride[0]));
	if (hi) {
		memcpy(o->shape + NPU_MAX_DIMS, hi->shape, sizeof(hi->shape));
		memcpy(o->stride + NPU_MAX_DIMS, hi->stride, sizeof(hi->stride));
	}
}

static inline void npu_tensor_encode(const struct npu_tensor *t, struct npu_op_tensor *o,
				     struct npu_op_dims_hi *hi)
{
	o->va = t->va;
	o->dtype = t->dtype;
	o->ndim = t->ndim;
	memcpy(o->shape, t->shape, sizeof(o->shape));
	memcpy(o->stride, t->stride, sizeof(o->stride));
	if (hi) {
		memcpy(hi->shape, t->shape + NPU_MAX_DIMS, sizeof(hi->shape));
		memcpy(hi->stride, t->stride + NPU_MAX_DIMS, sizeof(hi->stride));
	}
}

/*
 * A whole block (fields past a shorter block's end already zero) into
 * its decoded form. Nothing is checked here: dimensions a tensor does
 * not have are copied too, so npu_op_check() sees and refuses any that
 * are not zero.
 */
static inline void npu_op_decode(const struct npu_op_args *a, struct npu_op *op)
{
	memset(op, 0, sizeof(*op));
	op->op = a->op;
	op->flags = a->flags;
	op->axis = a->axis;
	memcpy(op->perm, a->perm, sizeof(a->perm));
	memcpy(op->perm + NPU_MAX_DIMS, a->perm_hi, sizeof(a->perm_hi));
	op->alpha = a->alpha;
	op->beta = a->beta;
	op->eps = a->eps;
	npu_tensor_decode(&a->in[0], &a->hi[0], &op->in[0]);
	npu_tensor_decode(&a->in[1], &a->hi[1], &op->in[1]);
	npu_tensor_decode(&a->out, &a->hi[2], &op->out);
	op->win = a->win;
	op->win_d = a->win_d;
	op->epi.flags = a->epi.flags;
	op->epi.act = a->epi.act;
	op->epi.alpha = a->epi.alpha;
	op->epi.beta = a->epi.beta;
	npu_tensor_decode(&a->epi.bias, NULL, &op->epi.bias);
}

/*
 * The block of the newest version (NPU_OP_ARGS_SIZE bytes) for `op`. A
 * launch of 4-D tensors and 2-D windows leaves everything past `epi`
 * zero, so firmware before 0.6 runs it the same; one it cannot run it
 * refuses (a rank over 4).
 */
static inline void npu_op_encode(const struct npu_op *op, struct npu_op_args *a)
{
	memset(a, 0, sizeof(*a));
	a->op = op->op;
	a->flags = op->flags;
	a->axis = op->axis;
	memcpy(a->perm, op->perm, sizeof(a->perm));
	if (op->out.ndim > NPU_MAX_DIMS)	/* else perm_hi stays 0, as 0.5 blocks had it */
		memcpy(a->perm_hi, op->perm + NPU_MAX_DIMS, sizeof(a->perm_hi));
	a->alpha = op->alpha;
	a->beta = op->beta;
	a->eps = op->eps;
	npu_tensor_encode(&op->in[0], &a->in[0], &a->hi[0]);
	npu_tensor_encode(&op->in[1], &a->in[1], &a->hi[1]);
	npu_tensor_encode(&op->out, &a->out, &a->hi[2]);
	a->win = op->win;
	a->win_d = op->win_d;
	a->epi.flags = op->epi.flags;
	a->epi.act = op->epi.act;
	a->epi.alpha = op->epi.alpha;
	a->epi.beta = op->epi.beta;
	npu_tensor_encode(&op->epi.bias, &a->epi.bias, NULL);
}

#endif /* NPU_OPDESC_H */
