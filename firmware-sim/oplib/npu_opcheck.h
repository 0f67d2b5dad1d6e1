/* SPDX-License-Identifier: MIT */
/*
 * npu_opcheck.h - the rule a kernel launch's arguments keep, in one place.
 *
 * The firmware refuses a launch that breaks it (NPU_FW_EKERNEL) and
 * trusts every one that keeps it: the ops never read or write outside
 * the tensors a kept launch names. libnpurt checks npurt_launch() against
 * it before anything reaches the device, the model loader checks every
 * kernel op of a model file, and a stream that failed on a launch says
 * which part of the rule the launch broke. Header only, like
 * npu_opdefs.h, so every side takes the same rule without linking the
 * firmware.
 *
 * npu_op_check() answers with a constant reason, all the firmware needs;
 * npu_op_explain() adds the tensors, for a person to read.
 */
#ifndef NPU_OPCHECK_H
#define NPU_OPCHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "npu_opdefs.h"

/* Largest tensor extent a launch may touch, in bytes and in elements. */
#define NPU_OP_MAX_EXTENT	(1ull << 30)
/* Largest extent or stride of one dimension. */
#define NPU_OP_MAX_DIM_EXTENT	(1ull << 31)

static inline uint64_t npu_op_elements(const struct npu_tensor *t)
{
	uint64_t n = 1;

	for (uint32_t k = 0; k < t->ndim; k++)
		n *= t->shape[k];
	return n;
}

/*
 * Bytes from element 0 to one past the last element of `t`: what a
 * launch touches of it. Exact once npu_tensor_check() took it.
 */
static inline uint64_t npu_tensor_extent(const struct npu_tensor *t)
{
	uint64_t last = 0;

	for (uint32_t k = 0; k < t->ndim; k++)
		last += (t->shape[k] - 1) * t->stride[k];
	return (last + 1) * npu_dtype_size(t->dtype);
}

/* NULL if the tensor is well formed (and an output does not broadcast). */
static inline const char *npu_tensor_check(const struct npu_tensor *t, bool is_out)
{
	if (t->ndim < 1 || t->ndim > NPU_OP_MAX_DIMS)
		return "tensor rank must be 1 to 8";
	if (!npu_dtype_size(t->dtype))
		return "unknown dtype";
	for (uint32_t k = 0; k < NPU_OP_MAX_DIMS; k++) {
		if (k >= t->ndim) {
			if (t->shape[k] || t->stride[k])
				return "unused dimensions must be zero";
			continue;
		}
		if (!t->shape[k] || t->shape[k] > NPU_OP_MAX_DIM_EXTENT ||
		    t->stride[k] > NPU_OP_MAX_DIM_EXTENT)
			return "shape or stride out of range";
		if (is_out && !t->stride[k] && t->shape[k] > 1)
			return "output must not broadcast (zero stride)";
	}
	/*
	 * Bounded as it goes, so neither sum nor product can wrap (each step
	 * starts under 2^30 and adds or multiplies in under 2^62): after
	 * this, npu_op_elements() and the extent are exact.
	 */
	for (uint64_t k = 0, n = 1, last = 0; k < t->ndim; k++) {
		n *= t->shape[k];
		last += (t->shape[k] - 1) * t->stride[k];
		if (n > NPU_OP_MAX_EXTENT ||
		    (last + 1) * npu_dtype_size(t->dtype) > NPU_OP_MAX_EXTENT)
			return "tensor too large";
	}
	return NULL;
}

/* How many inputs the op reads (0..2). */
static inline unsigned int npu_op_inputs(const struct npu_op *a)
{
	enum npu_op_kind c = npu_op_kind(a->op);

	if (a->op == NPU_OP_CONV2D || c == NPU_OPK_GATHER)
		return 2;
	return c == NPU_OPK_BINARY || c == NPU_OPK_GEMM ? 2 : c == NPU_OPK_NONE ? 0 : 1;
}

static inline bool npu_op_same_shape(const struct npu_tensor *a, const struct npu_tensor *b)
{
	return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(a->shape[0]) * a->ndim);
}

static inline const char *npu_op_check_gemm(const struct npu_op *a)
{
	const struct npu_tensor *A = &a->in[0], *B = &a->in[1], *C = &a->out;
	bool ta = a->flags & NPU_OP_F_TRANS_A, tb = a->flags & NPU_OP_F_TRANS_B;
	uint64_t m, n, k;

	if (a->flags & ~npu_op_flags(NPU_OP_GEMM))
		return "unknown GEMM flags";
	if (a->flags & NPU_OP_F_B_PANELS) {
		if (A->ndim != 2 || C->ndim != 2 || tb || A->dtype != NPU_DT_F32 ||
		    C->dtype != NPU_DT_F32)
			return "GEMM panels: A and C 2-D f32, no TRANS_B";
		if (!isfinite(a->alpha) || !isfinite(a->beta))
			return "GEMM alpha and beta must be finite";
		k = ta ? A->shape[0] : A->shape[1];
		if ((ta ? A->shape[1] : A->shape[0]) != C->shape[0])
			return "GEMM shapes do not agree: A's rows are not C's";
		return npu_panels_check(B->dtype, B->ndim, B->shape, B->stride, k, C->shape[1]);
	}
	if (A->ndim != 2 || B->ndim != 2 || C->ndim != 2)
		return "GEMM takes 2-D tensors";
	if (!isfinite(a->alpha) || !isfinite(a->beta))
		return "GEMM alpha and beta must be finite";
	/* Integer sums are exact: nothing to scale them by but 1. */
	if (C->dtype == NPU_DT_I32 && (a->alpha != 1.0f || (a->beta != 0.0f && a->beta != 1.0f)))
		return "an integer GEMM takes alpha 1 and beta 0 or 1";
	m = C->shape[0];
	n = C->shape[1];
	k = ta ? A->shape[0] : A->shape[1];
	if ((ta ? A->shape[1] : A->shape[0]) != m)
		return "GEMM shapes do not agree: A's rows are not C's";
	if ((tb ? B->shape[1] : B->shape[0]) != k)
		return "GEMM shapes do not agree: A's columns are not B's rows";
	if ((tb ? B->shape[0] : B->shape[1]) != n)
		return "GEMM shapes do not agree: B's columns are not C's";
	return NULL;
}

/* The op's tensors, dtypes, shapes and parameters, its epilogue aside. */
static inline const char *npu_op_check_args(const struct npu_op *a)
{
	enum npu_op_kind c = npu_op_kind(a->op);
	unsigned int n = npu_op_inputs(a);
	const char *err;

	if (c == NPU_OPK_NONE)
		return "unknown op";
	if (c != NPU_OPK_GEMM && c != NPU_OPK_WINDOW && a->flags & ~npu_op_flags(a->op))
		return "unknown flags";
	err = npu_tensor_check(&a->out, true);
	for (unsigned int i = 0; !err && i < n; i++)
		err = npu_tensor_check(&a->in[i], false);
	if (err)
		return err;
	err = npu_op_dtypes(a->op, a->in[0].dtype, n == 2 ? a->in[1].dtype : NPU_DT_COUNT,
			    a->out.dtype);
	if (err)
		return err;

	switch (c) {
	case NPU_OPK_BINARY:
		if (a->op == NPU_OP_REQUANT && (!isfinite(a->alpha) || isnan(a->beta)))
			return "requant: a finite zero point (alpha), a bound (beta) not nan";
		return npu_op_same_shape(&a->in[0], &a->out) &&
		       npu_op_same_shape(&a->in[1], &a->out) ?
		       NULL : "input and output shapes differ";
	case NPU_OPK_UNARY:
		if (isnan(a->alpha) || isnan(a->beta))
			return "unary op parameters must not be nan";
		return npu_op_same_shape(&a->in[0], &a->out) ?
		       NULL : "input and output shapes differ";
	case NPU_OPK_ROW:
	case NPU_OPK_CAST:
		if (c == NPU_OPK_ROW && a->op == NPU_OP_LAYERNORM &&
		    !(a->eps >= 0.0f && isfinite(a->eps)))
			return "layernorm eps must be finite and not negative";
		return npu_op_same_shape(&a->in[0], &a->out) ?
		       NULL : "input and output shapes differ";
	case NPU_OPK_GEMM:
		return npu_op_check_gemm(a);
	case NPU_OPK_REDUCE:
		if (a->axis >= a->in[0].ndim || a->out.ndim != a->in[0].ndim)
			return "reduce axis out of range";
		for (uint32_t k = 0; k < a->out.ndim; k++)
			if (a->out.shape[k] != (k == a->axis ? 1 : a->in[0].shape[k]))
				return "reduce output must keep the input shape with the axis at 1";
		return NULL;
	case NPU_OPK_WINDOW:
		return npu_window_check(a);
	case NPU_OPK_SCAN:
		if (a->axis >= a->out.ndim || !npu_op_same_shape(&a->in[0], &a->out))
			return "cumsum: out of in0's shape, an axis of it";
		return NULL;
	case NPU_OPK_GATHER:
		if (a->in[0].ndim != a->out.ndim || !npu_op_same_shape(&a->in[1], &a->out) ||
		    a->axis >= a->out.ndim)
			return "gather_elements: indices of out's shape, data of its rank, an axis";
		for (uint32_t k = 0; k < a->out.ndim; k++)
			if (k != a->axis && a->in[0].shape[k] != a->out.shape[k])
				return "gather_elements: data of out's shape but along the axis";
		return NULL;
	case NPU_OPK_TRANSPOSE: {
		unsigned int seen = 0;

		if (a->in[0].ndim != a->out.ndim)
			return "transpose keeps dtype and rank";
		for (uint32_t k = 0; k < a->out.ndim; k++) {
			if (a->perm[k] >= a->out.ndim || seen & (1u << a->perm[k]))
				return "transpose perm is not a permutation";
			seen |= 1u << a->perm[k];
			if (a->out.shape[k] != a->in[0].shape[a->perm[k]])
				return "transpose output shape does not match perm";
		}
		return NULL;
	}
	case NPU_OPK_NONE:
		break;
	}
	return "unknown op";
}

/* What the op's output goes through (npu_oplib.h, struct npu_epi). */
static inline const char *npu_op_check_epilogue(const struct npu_op *a)
{
	const char *err = npu_epilogue_check(a);

	if (err || !(a->epi.flags & NPU_OP_E_BIAS))
		return err;
	return npu_tensor_check(&a->epi.bias, false);
}

/*
 * `a` with every tensor the op widens (npu_op_widens) as f32: the largest
 * copies the firmware may make of them. A host that multiplies bf16
 * itself keeps a GEMM's bf16 inputs as they are, which is smaller, so the
 * rule does not depend on the host the firmware runs on.
 */
static inline void npu_op_widened_f32(const struct npu_op *a, struct npu_op *run)
{
	struct npu_tensor *t[4] = { &run->in[0], &run->in[1], &run->epi.bias, &run->out };

	*run = *a;
	for (unsigned int i = 0; i < 4; i++)
		if (npu_op_widens(a->op, t[i]->dtype))
			t[i]->dtype = NPU_DT_F32;
}

/* NULL when the launch may run; else why not, a constant string. */
static inline const char *npu_op_check(const struct npu_op *a)
{
	const char *err = npu_op_check_args(a);
	struct npu_op run;

	if (!err)
		err = npu_op_check_epilogue(a);
	if (err)
		return err;
	/* Widened, the op must be a launch of its own: f32 copies of i8 are 4 times the size. */
	npu_op_widened_f32(a, &run);
	if (memcmp(&run, a, sizeof(run)))
		err = npu_op_check_args(&run);
	if (!err)
		err = npu_op_check_epilogue(&run);
	return err && !strcmp(err, "tensor too large") ? "tensor too large once widened to f32" : err;
}

/* "f32", "bf16", "i64", "bool"...; "?" for a number that is no dtype. */
static inline const char *npu_dtype_name(uint32_t dtype)
{
	static const char *const names[NPU_DT_COUNT] = {
		[NPU_DT_F32] = "f32", [NPU_DT_F16] = "f16", [NPU_DT_BF16] = "bf16",
		[NPU_DT_F64] = "f64", [NPU_DT_I8] = "i8", [NPU_DT_U8] = "u8",
		[NPU_DT_I16] = "i16", [NPU_DT_U16] = "u16", [NPU_DT_I32] = "i32",
		[NPU_DT_U32] = "u32", [NPU_DT_I64] = "i64", [NPU_DT_U64] = "u64",
		[NPU_DT_BOOL] = "bool",
	};

	return dtype < NPU_DT_COUNT ? names[dtype] : "?";
}

/* printf at *p, never past end; *p moves to the end of what fit. */
__attribute__((format(printf, 3, 4)))
static inline void npu_op_put(char **p, char *end, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*p >= end)
		return;
	va_start(ap, fmt);
	w = vsnprintf(*p, (size_t)(end - *p), fmt, ap);
	va_end(ap);
	*p = w >= 0 && w < end - *p ? *p + w : end;
}

/* "f32 [4, 3]", with " strides [1, 4]" when it is not dense. */
static inline void npu_tensor_describe(const struct npu_tensor *t, char **p, char *end)
{
	uint32_t nd = t->ndim <= NPU_OP_MAX_DIMS ? t->ndim : NPU_OP_MAX_DIMS;
	uint64_t dense = 1;
	bool gaps = false;

	npu_op_put(p, end, "%s [", npu_dtype_name(t->dtype));
	for (uint32_t k = 0; k < nd; k++)
		npu_op_put(p, end, "%s%llu", k ? ", " : "", (unsigned long long)t->shape[k]);
	npu_op_put(p, end, "]");
	for (uint32_t k = nd; k-- > 0;) {
		gaps |= t->shape[k] > 1 && t->stride[k] != dense;
		dense *= t->shape[k];
	}
	if (!gaps)
		return;
	npu_op_put(p, end, " strides [");
	for (uint32_t k = 0; k < nd; k++)
		npu_op_put(p, end, "%s%llu", k ? ", " : "", (unsigned long long)t->stride[k]);
	npu_op_put(p, end, "]");
}

/*
 * NULL when the launch may run; else buf holding the reason and the
 * tensors it is about, cut to len bytes (256 hold it but for strided
 * tensors of high rank; with len 0, the constant reason alone):
 * "GEMM shapes do not agree: A's columns are not B's rows (in0 f32
 * [4, 3], in1 f32 [5, 2], out f32 [4, 2])".
 */
static inline const char *npu_op_explain(const struct npu_op *a, char *buf, size_t len)
{
	const char *err = npu_op_check(a);
	char *p = buf, *end = buf + len;

	if (!err || !len)
		return err;
	npu_op_put(&p, end, "%s (", err);
	for (unsigned int i = 0; i < npu_op_inputs(a); i++) {
		npu_op_put(&p, end, "in%u ", i);
		npu_tensor_describe(&a->in[i], &p, end);
		npu_op_put(&p, end, ", ");
	}
	if (a->epi.flags & NPU_OP_E_BIAS) {
		npu_op_put(&p, end, "bias ");
		npu_tensor_describe(&a->epi.bias, &p, end);
		npu_op_put(&p, end, ", ");
	}
	npu_op_put(&p, end, "out ");
	npu_tensor_describe(&a->out, &p, end);
	npu_op_put(&p, end, ")");
	return buf;
}

#endif /* NPU_OPCHECK_H */
