// SPDX-License-Identifier: MIT
/*
 * Elementwise ops of the op library: binary and unary ops, casts,
 * selects and transposes. Views walk together by the output's shape,
 * their dimensions merged where all of them allow (coalesce()), so a
 * dense or per-channel op goes by long rows: an index unravelled once a
 * row, then a plain loop. fp32 arithmetic has a loop per op; casts among
 * f32, u8, i8 and i32, int32 arithmetic and REQUANT (what quantized
 * models run around their integer products) have typed loops; any other
 * dtype goes
 * element by element through npu_opdtypes.h's definitions, by rows too.
 * Every path gives what the element-at-a-time definition gives
 * (fwsim_dtype_test holds the typed loops to written-out values).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "npu_opdefs.h"
#include "npu_ops.h"
#include "npu_ops_int.h"

/*
 * fp32 binary and unary ops, by runs along the last dimension: the index
 * is unravelled once a run, and the inner loop (one per op: the op is the
 * loop's constant, so the compiler unswitches it and vectorizes what it
 * can) strides through plain arrays. Same results as the general loop.
 */
#define ROW_LOOP_AT(SX, SY, SO, expr)						\
	for (uint64_t j = 0; j < len; j++) {					\
		float x0 = x[j * (SX)], x1 = y ? y[j * (SY)] : 0.0f;		\
									\
		(void)x1;							\
		o[j * (SO)] = (expr);						\
	}

/*
 * The strides as constants where rows are dense, or one input repeats a
 * value along them (a per-channel scale), so those loops vectorize; any
 * other strides take the general loop.
 */
#define ROW_LOOP(expr)								\
	if (sx == 1 && so == 1 && (!y || sy == 1))				\
		ROW_LOOP_AT(1, 1, 1, expr)					\
	else if (sx == 1 && so == 1 && sy == 0)					\
		ROW_LOOP_AT(1, 0, 1, expr)					\
	else if (sx == 0 && so == 1 && sy == 1)					\
		ROW_LOOP_AT(0, 1, 1, expr)					\
	else									\
		ROW_LOOP_AT(sx, sy, so, expr)

/*
 * An op of its own loop: npu_unary()'s switch folds away on the constant,
 * leaving the op's arithmetic (vectorized where it can be), where the
 * default case calls through the switch once an element. The ops real
 * models run most (activations, clips) each get one.
 */
#define ROW_CASE(op, expr)	case op: ROW_LOOP(expr) break;
#define UNARY_CASE(op)		ROW_CASE(op, npu_unary(op, x0, al, be))

/* Clones as npu_epilogue_from()'s, for the same reason. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void elementwise_row(const struct npu_op *a, enum npu_op_kind c, const float *x,
			    uint64_t sx, const float *y, uint64_t sy, float *o, uint64_t so,
			    uint64_t len)
{
	float al = a->alpha, be = a->beta;

	if (c == NPU_OPK_BINARY) {
		switch (a->op) {
		case NPU_OP_ADD: ROW_LOOP(x0 + x1) break;
		case NPU_OP_SUB: ROW_LOOP(x0 - x1) break;
		case NPU_OP_MUL: ROW_LOOP(x0 * x1) break;
		case NPU_OP_DIV: ROW_LOOP(x0 / x1) break;
		ROW_CASE(NPU_OP_MAX, npu_binary(NPU_OP_MAX, x0, x1))
		ROW_CASE(NPU_OP_MIN, npu_binary(NPU_OP_MIN, x0, x1))
		default: ROW_LOOP(npu_binary(a->op, x0, x1)) break;
		}
		return;
	}
	if (sx == 1 && so == 1 && a->op == NPU_OP_GELU_ERF) {
		npu_vgelu_erf(o, x, len);
		return;
	}
	if (sx == 1 && so == 1 && a->op == NPU_OP_EXP) {
		npu_vexp(o, x, len);
		return;
	}
	switch (a->op) {
	case NPU_OP_RELU: ROW_LOOP(x0 > 0 ? x0 : 0) break;
	UNARY_CASE(NPU_OP_HARD_SWISH)
	UNARY_CASE(NPU_OP_HARD_SIGMOID)
	UNARY_CASE(NPU_OP_CLIP)
	UNARY_CASE(NPU_OP_LEAKY_RELU)
	UNARY_CASE(NPU_OP_SIGMOID)
	UNARY_CASE(NPU_OP_TANH)
	UNARY_CASE(NPU_OP_NEG)
	UNARY_CASE(NPU_OP_ABS)
	UNARY_CASE(NPU_OP_SQRT)
	UNARY_CASE(NPU_OP_RECIPROCAL)
	default: ROW_LOOP(npu_unary(a->op, x0, al, be)) break;
	}
}

#undef UNARY_CASE
#undef ROW_CASE

/*
 * v[0..n), views walked together by the shape of v[0], with the
 * dimensions every one of them walks as one merged (stride[k - 1] ==
 * stride[k] * shape[k], broadcast ones too: 0 == 0 * n) and those of one
 * element dropped. The elements keep their row-major order, so a range
 * [begin, end) of them is the same range; a dense [1, C, H, W] op then
 * goes in one row of C*H*W, a per-channel scale in rows of H*W, not in
 * rows of W with an index unravelled for each.
 */
static void coalesce(struct npu_view *v, unsigned int n)
{
	uint64_t shape[NPU_OP_MAX_DIMS];
	uint32_t m = 0;

	for (uint32_t k = 0; k < v[0].ndim; k++) {
		uint64_t d = v[0].shape[k];
		bool merge = m > 0;

		if (d == 1)
			continue;
		for (unsigned int i = 0; merge && i < n; i++)
			merge = v[i].stride[m - 1] == v[i].stride[k] * d;
		if (merge)
			shape[m - 1] *= d;
		else
			shape[m++] = d;
		for (unsigned int i = 0; i < n; i++)
			v[i].stride[m - 1] = v[i].stride[k];
	}
	if (!m) {
		shape[m++] = 1;
		for (unsigned int i = 0; i < n; i++)
			v[i].stride[0] = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		v[i].ndim = m;
		memcpy(v[i].shape, shape, m * sizeof(shape[0]));
	}
}

static int elementwise_rows(const struct npu_op *a, enum npu_op_kind c,
			    const struct npu_view *in_, const struct npu_view *out_,
			    uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	/* out first: its shape is the walk's */
	struct npu_view v[3] = { *out_, in_[0], c == NPU_OPK_BINARY ? in_[1] : in_[0] };
	const struct npu_view *out = &v[0], *in = &v[1];
	uint32_t nd, last;
	uint64_t len, ix[NPU_OP_MAX_DIMS];

	coalesce(v, 3);
	nd = out->ndim;
	last = nd - 1;
	len = out->shape[last];

	for (uint64_t e = begin; e < end;) {
		uint64_t col = e % len, n = len - col < end - e ? len - col : end - e;
		const float *y = NULL;

		if (npu_cancelled(cancel))
			return -1;
		npu_unravel(e, out, nd, ix);
		if (c == NPU_OPK_BINARY)
			y = (const float *)in[1].data + npu_offset(&in[1], ix, nd);
		elementwise_row(a, c, (const float *)in[0].data + npu_offset(&in[0], ix, nd),
				in[0].stride[last], y, c == NPU_OPK_BINARY ? in[1].stride[last] : 0,
				(float *)out->data + npu_offset(out, ix, nd), out->stride[last], n);
		if (a->epi.act)
			npu_epilogue(&a->epi, NULL, 0, (float *)out->data + npu_offset(out, ix, nd),
				     out->stride[last], n);
		e += n;
	}
	return 0;
}

static bool all_f32(const struct npu_view *in, unsigned int n, const struct npu_view *out)
{
	for (unsigned int i = 0; i < n; i++)
		if (in[i].dtype != NPU_DT_F32)
			return false;
	return out->dtype == NPU_DT_F32;
}

/* Any dtypes, an element at a time (npu_opdtypes.h says what each does). */
#define RUN_COPY(type)								\
	for (uint64_t j = 0; j < len; j++)					\
		((type *)d)[j * so] = ((const type *)s)[j * si];

/*
 * Elements [begin, end) of a transpose, by runs along the output's last
 * dimension: one index unravelled a run, then a strided copy of the
 * element's size (the op moves bits, whatever the dtype).
 */
static int transpose_runs(const struct npu_op *a, const struct npu_view *in,
			  const struct npu_view *out, uint64_t begin, uint64_t end,
			  const uint32_t *cancel)
{
	uint32_t nd = out->ndim, last = nd - 1;
	uint64_t ix[NPU_OP_MAX_DIMS], jx[NPU_OP_MAX_DIMS], len;
	uint64_t si = in[0].stride[a->perm[last]], so = out->stride[last];
	size_t es = npu_dtype_size(out->dtype);

	for (uint64_t e = begin; e < end; e += len) {
		const char *s;
		char *d;

		if (npu_cancelled(cancel))
			return -1;
		npu_unravel(e, out, nd, ix);
		len = out->shape[last] - ix[last];
		len = len < end - e ? len : end - e;
		for (uint32_t k = 0; k < nd; k++)
			jx[a->perm[k]] = ix[k];
		s = (const char *)in[0].data + npu_offset(&in[0], jx, nd) * es;
		d = (char *)out->data + npu_offset(out, ix, nd) * es;
		switch (es) {
		case 1: RUN_COPY(uint8_t) break;
		case 2: RUN_COPY(uint16_t) break;
		case 4: RUN_COPY(uint32_t) break;
		case 8: RUN_COPY(uint64_t) break;
		default:
			for (uint64_t j = 0; j < len; j++)
				memcpy(d + j * so * es, s + j * si * es, es);
		}
	}
	return 0;
}

#undef RUN_COPY

/*
 * Float to integer as npu_convert() and npu_store() have it: truncated
 * toward zero into 64 bits, saturating, NaN 0; then the width's low bits.
 */
static inline int64_t trunc_sat(float f)
{
	return isnan(f) ? 0 : f >= 0x1p63f ? INT64_MAX : f <= -0x1p63f ? INT64_MIN : (int64_t)f;
}

/* The same into an unsigned dtype: from 2^63 on the value is unsigned, saturating at 2^64. */
static inline uint64_t trunc_sat_u(float f)
{
	return f >= 0x1p64f ? UINT64_MAX : f >= 0x1p63f ? (uint64_t)f : (uint64_t)trunc_sat(f);
}

#define CAST_LOOP(ST, DT, expr)							\
	for (uint64_t j = 0; j < len; j++) {					\
		ST v = ((const ST *)x)[j * sx];					\
									\
		((DT *)o)[j * so] = (expr);					\
	}

/* A row of a cast between f32, u8, i8 and i32: false for other dtypes. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static bool cast_row(uint32_t din, uint32_t dout, const void *x, uint64_t sx, void *o,
		     uint64_t so, uint64_t len)
{
	switch (din * NPU_DT_COUNT + dout) {
	case NPU_DT_F32 * NPU_DT_COUNT + NPU_DT_U8:
		CAST_LOOP(float, uint8_t, (uint8_t)trunc_sat_u(v)) return true;
	case NPU_DT_F32 * NPU_DT_COUNT + NPU_DT_I8:
		CAST_LOOP(float, int8_t, (int8_t)(uint8_t)trunc_sat(v)) return true;
	case NPU_DT_F32 * NPU_DT_COUNT + NPU_DT_I32:
		CAST_LOOP(float, int32_t, (int32_t)(uint32_t)trunc_sat(v)) return true;
	case NPU_DT_U8 * NPU_DT_COUNT + NPU_DT_F32:
		CAST_LOOP(uint8_t, float, (float)v) return true;
	case NPU_DT_I8 * NPU_DT_COUNT + NPU_DT_F32:
		CAST_LOOP(int8_t, float, (float)v) return true;
	case NPU_DT_I32 * NPU_DT_COUNT + NPU_DT_F32:
		CAST_LOOP(int32_t, float, (float)v) return true;
	case NPU_DT_U8 * NPU_DT_COUNT + NPU_DT_I32:
		CAST_LOOP(uint8_t, int32_t, (int32_t)v) return true;
	case NPU_DT_I8 * NPU_DT_COUNT + NPU_DT_I32:
		CAST_LOOP(int8_t, int32_t, (int32_t)v) return true;
	default:
		return false;
	}
}

#undef CAST_LOOP

/* int32 arithmetic wraps at 32 bits, as the definition's 64-bit result stored does. */
#define I32_LOOP(op)								\
	for (uint64_t j = 0; j < len; j++)					\
		o[j * so] = (int32_t)((uint32_t)x[j * sx] op (uint32_t)y[j * sy]);

__attribute__((target_clones("avx512f", "avx2", "default")))
static bool i32_row(uint32_t op, const int32_t *x, uint64_t sx, const int32_t *y, uint64_t sy,
		    int32_t *o, uint64_t so, uint64_t len)
{
	switch (op) {
	case NPU_OP_ADD: I32_LOOP(+) return true;
	case NPU_OP_SUB: I32_LOOP(-) return true;
	case NPU_OP_MUL: I32_LOOP(*) return true;
	default: return false;
	}
}

#undef I32_LOOP

#define REQUANT_AT(ST, DT, SX, SS, SO)						\
	for (uint64_t j = 0; j < len; j++)					\
		((DT *)o)[j * (SO)] = (DT)npu_requant((float)((const ST *)x)[j * (SX)],	\
						       s[j * (SS)], a->alpha, a->beta, dout);

/* Dense rows of one scale (a channel's) or a scale each: constant strides, which vectorize. */
#define REQUANT_LOOP(ST, DT)							\
	if (sx == 1 && so == 1 && ss == 0)					\
		REQUANT_AT(ST, DT, 1, 0, 1)					\
	else if (sx == 1 && so == 1 && ss == 1)					\
		REQUANT_AT(ST, DT, 1, 1, 1)					\
	else									\
		REQUANT_AT(ST, DT, sx, ss, so)

/*
 * A row of REQUANT: npu_requant() inlined, its dtypes the loop's
 * constants; cloned per ISA as elementwise_row() is, so the rounding is
 * an instruction (SSE4.1 on) and the loop vectorizes.
 */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void requant_row(const struct npu_op *a, uint32_t d0, const void *x, uint64_t sx,
			const float *s, uint64_t ss, uint32_t dout, void *o, uint64_t so,
			uint64_t len)
{
	if (d0 == NPU_DT_I32 && dout == NPU_DT_U8)
		REQUANT_LOOP(int32_t, uint8_t)
	else if (d0 == NPU_DT_I32)
		REQUANT_LOOP(int32_t, int8_t)
	else if (dout == NPU_DT_U8)
		REQUANT_LOOP(float, uint8_t)
	else
		REQUANT_LOOP(float, int8_t)
}

#undef REQUANT_LOOP
#undef REQUANT_AT

/* One element by the definitions (npu_opdtypes.h): any dtypes. */
static void element(const struct npu_op *a, enum npu_op_kind c, const struct npu_view *in,
		    uint64_t o0, uint64_t o1, const struct npu_view *out, uint64_t oo)
{
	uint32_t d0 = in[0].dtype;
	size_t es = npu_dtype_size(out->dtype);
	enum npu_dom dom = npu_dtype_dom(d0);
	union npu_num x;

	if (a->op == NPU_OP_REQUANT) {
		union npu_num v = npu_load(in[0].data, o0, d0), r;

		r.i = npu_requant(d0 == NPU_DT_I32 ? (float)v.i : (float)v.f,
				  (float)npu_load(in[1].data, o1, NPU_DT_F32).f, a->alpha, a->beta,
				  out->dtype);
		npu_store(out->data, oo, out->dtype, r, NPU_DOM_INT);
		return;
	}
	if (a->op == NPU_OP_SELECT) {	/* out keeps its value where the condition is false */
		if (*((const uint8_t *)in[0].data + o0))
			memcpy((char *)out->data + oo * es, (const char *)in[1].data + o1 * es, es);
		return;
	}
	x = npu_load(in[0].data, o0, d0);
	if (c == NPU_OPK_BINARY)
		x = npu_eval_binary(a->op, d0, in[1].dtype, x, npu_load(in[1].data, o1, in[1].dtype),
				    &dom);
	else if (c == NPU_OPK_UNARY)
		x = npu_eval_unary(a->op, d0, x, a->alpha, a->beta, &dom);
	npu_store(out->data, oo, out->dtype, x, dom);
}

/*
 * Any elementwise op but a transpose by rows of the coalesced views: a
 * typed loop where one applies, else the definition an element at a time
 * with the offsets stepping along the row. Rows go in pieces of at most
 * CHECK_EVERY_INNER elements, cancellation looked at between them.
 */
static int general_rows(const struct npu_op *a, enum npu_op_kind c, const struct npu_view *in_,
			const struct npu_view *out_, uint64_t begin, uint64_t end,
			const uint32_t *cancel)
{
	bool two = c == NPU_OPK_BINARY;
	struct npu_view v[3] = { *out_, in_[0], two ? in_[1] : in_[0] };
	const struct npu_view *out = &v[0], *in = &v[1];
	size_t eo = npu_dtype_size(out->dtype), e0 = npu_dtype_size(in[0].dtype);
	bool i32 = two && in[0].dtype == NPU_DT_I32 && in[1].dtype == NPU_DT_I32 &&
		   out->dtype == NPU_DT_I32;
	uint64_t len, ix[NPU_OP_MAX_DIMS], s0, s1, so;
	uint32_t nd, last;

	coalesce(v, 3);
	nd = out->ndim;
	last = nd - 1;
	len = out->shape[last];
	s0 = in[0].stride[last];
	s1 = two ? in[1].stride[last] : 0;
	so = out->stride[last];
	for (uint64_t e = begin; e < end;) {
		uint64_t col = e % len, n = len - col < end - e ? len - col : end - e;
		uint64_t o0, o1, oo;

		n = n < CHECK_EVERY_INNER ? n : CHECK_EVERY_INNER;
		if (npu_cancelled(cancel))
			return -1;
		npu_unravel(e, out, nd, ix);
		o0 = npu_offset(&in[0], ix, nd);
		o1 = two ? npu_offset(&in[1], ix, nd) : 0;
		oo = npu_offset(out, ix, nd);
		if (a->op == NPU_OP_REQUANT) {
			requant_row(a, in[0].dtype, (const char *)in[0].data + o0 * e0, s0,
				    (const float *)in[1].data + o1, s1, out->dtype,
				    (char *)out->data + oo * eo, so, n);
		} else if (c == NPU_OPK_CAST && cast_row(in[0].dtype, out->dtype,
						  (const char *)in[0].data + o0 * e0, s0,
						  (char *)out->data + oo * eo, so, n)) {
			/* done by the typed loop */
		} else if (!(i32 && i32_row(a->op, (const int32_t *)in[0].data + o0, s0,
					    (const int32_t *)in[1].data + o1, s1,
					    (int32_t *)out->data + oo, so, n))) {
			for (uint64_t j = 0; j < n; j++)
				element(a, c, in, o0 + j * s0, o1 + j * s1, out, oo + j * so);
		}
		e += n;
	}
	return 0;
}

int npu_elementwise_run(const struct npu_op *a, const struct npu_view *in,
			const struct npu_view *out, uint64_t begin, uint64_t end,
			const uint32_t *cancel)
{
	enum npu_op_kind c = npu_op_kind(a->op);

	if ((c == NPU_OPK_BINARY || c == NPU_OPK_UNARY) && npu_op_is_f32_classic(a->op) &&
	    all_f32(in, c == NPU_OPK_BINARY ? 2 : 1, out))
		return elementwise_rows(a, c, in, out, begin, end, cancel);
	if (c == NPU_OPK_TRANSPOSE)
		return transpose_runs(a, in, out, begin, end, cancel);
	return general_rows(a, c, in, out, begin, end, cancel);
}
