/* SPDX-License-Identifier: MIT */
/*
 * npu_opdtypes.h - the op library's dtypes past fp32 (firmware 0.4): which
 * ops take which, and what an element of any dtype is to an op. Header
 * only, included by npu_opdefs.h, so the firmware, the model checks and
 * the host references share one definition.
 *
 * An op reads each element into one of three domains: float (a double),
 * signed integer (int64) or unsigned integer (uint64); BOOL reads as the
 * integer 0 or 1. Integer arithmetic wraps (two's complement) and stores
 * keep the low bits of the output's width, as C's conversions and numpy's
 * astype do. fp32 tensors of the float ops take the fast paths in
 * npu_ops.c; these definitions are the general case and its reference.
 */
#ifndef NPU_OPDTYPES_H
#define NPU_OPDTYPES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum npu_dom { NPU_DOM_FLOAT, NPU_DOM_INT, NPU_DOM_UINT };

static inline bool npu_dtype_is_float(uint32_t dt)
{
	return dt == NPU_DT_F32 || dt == NPU_DT_F16 || dt == NPU_DT_BF16 || dt == NPU_DT_F64;
}

/* i8 or u8: what an integer GEMM or convolution multiplies (firmware 0.9). */
static inline bool npu_dtype_is_byte_int(uint32_t dt)
{
	return dt == NPU_DT_I8 || dt == NPU_DT_U8;
}

static inline enum npu_dom npu_dtype_dom(uint32_t dt)
{
	switch (dt) {
	case NPU_DT_U8: case NPU_DT_U16: case NPU_DT_U32: case NPU_DT_U64:
		return NPU_DOM_UINT;
	case NPU_DT_I8: case NPU_DT_I16: case NPU_DT_I32: case NPU_DT_I64: case NPU_DT_BOOL:
		return NPU_DOM_INT;
	default:
		return NPU_DOM_FLOAT;
	}
}

union npu_num {
	double f;
	int64_t i;
	uint64_t u;
};

/* Element `off` (in elements) of dtype `dt` at `data`, in its own domain. */
static inline union npu_num npu_load(const void *data, uint64_t off, uint32_t dt)
{
	const char *p = (const char *)data + off * npu_dtype_size(dt);
	union npu_num x = { .u = 0 };

	switch (dt) {
	case NPU_DT_F32: { float f; memcpy(&f, p, 4); x.f = f; break; }
	case NPU_DT_F16: { uint16_t h; memcpy(&h, p, 2); x.f = npu_f16_to_f32(h); break; }
	case NPU_DT_BF16: { uint16_t h; memcpy(&h, p, 2); x.f = npu_bf16_to_f32(h); break; }
	case NPU_DT_F64: memcpy(&x.f, p, 8); break;
	case NPU_DT_I8: x.i = *(const int8_t *)p; break;
	case NPU_DT_U8: x.u = *(const uint8_t *)p; break;
	case NPU_DT_BOOL: x.u = *(const uint8_t *)p != 0; break;	/* any byte not 0 is true */
	case NPU_DT_I16: { int16_t v; memcpy(&v, p, 2); x.i = v; break; }
	case NPU_DT_U16: { uint16_t v; memcpy(&v, p, 2); x.u = v; break; }
	case NPU_DT_I32: { int32_t v; memcpy(&v, p, 4); x.i = v; break; }
	case NPU_DT_U32: { uint32_t v; memcpy(&v, p, 4); x.u = v; break; }
	default: memcpy(&x.u, p, 8); break;	/* I64, U64 */
	}
	return x;
}

/*
 * x from domain `from` in domain `to`: a float into an integer truncates
 * toward zero into 64 bits, saturating (nan gives 0); integers keep their
 * bits (the store keeps the width's low bits).
 */
static inline union npu_num npu_convert(union npu_num x, enum npu_dom from, enum npu_dom to)
{
	union npu_num r = x;

	if (from == to)
		return r;
	if (to == NPU_DOM_FLOAT) {
		r.f = from == NPU_DOM_INT ? (double)x.i : (double)x.u;
	} else if (from == NPU_DOM_FLOAT) {
		if (isnan(x.f))
			r.i = 0;
		else if (to == NPU_DOM_UINT && x.f >= 0x1p63)
			r.u = x.f >= 0x1p64 ? UINT64_MAX : (uint64_t)x.f;
		else
			r.i = x.f >= 0x1p63 ? INT64_MAX : x.f <= -0x1p63 ? INT64_MIN : (int64_t)x.f;
	}
	return r;
}

/*
 * d in float rounded to odd: truncated toward zero, its last bit set when
 * that was inexact. Rounding this to fp16 or bf16 (far fewer bits) gives
 * what rounding d itself to nearest even would: no double rounding.
 */
static inline float npu_f64_to_f32_odd(double d)
{
	float f = (float)d;
	uint32_t u;

	if (isnan(d) || (double)f == d)
		return f;
	if (fabs((double)f) > fabs(d))
		f = nextafterf(f, 0.0f);
	memcpy(&u, &f, 4);
	u |= 1;
	memcpy(&f, &u, 4);
	return f;
}

/* Store x (of domain `dom`) as dtype `dt` at element `off`. */
static inline void npu_store(void *data, uint64_t off, uint32_t dt, union npu_num x,
			     enum npu_dom dom)
{
	char *p = (char *)data + off * npu_dtype_size(dt);
	union npu_num v;

	if (dt == NPU_DT_BOOL) {
		*(uint8_t *)p = dom == NPU_DOM_FLOAT ? x.f != 0 : x.u != 0;
		return;
	}
	v = npu_convert(x, dom, npu_dtype_dom(dt));
	switch (dt) {
	case NPU_DT_F32: { float f = (float)v.f; memcpy(p, &f, 4); break; }
	case NPU_DT_F16: { uint16_t h = npu_f32_to_f16(npu_f64_to_f32_odd(v.f)); memcpy(p, &h, 2); break; }
	case NPU_DT_BF16: { uint16_t h = npu_f32_to_bf16(npu_f64_to_f32_odd(v.f)); memcpy(p, &h, 2); break; }
	case NPU_DT_F64: memcpy(p, &v.f, 8); break;
	case NPU_DT_I8: case NPU_DT_U8: *(uint8_t *)p = (uint8_t)v.u; break;
	case NPU_DT_I16: case NPU_DT_U16: { uint16_t w = (uint16_t)v.u; memcpy(p, &w, 2); break; }
	case NPU_DT_I32: case NPU_DT_U32: { uint32_t w = (uint32_t)v.u; memcpy(p, &w, 4); break; }
	default: memcpy(p, &v.u, 8); break;
	}
}

static inline bool npu_is_compare(uint32_t op)
{
	return op >= NPU_OP_EQUAL && op <= NPU_OP_GREATER_EQUAL;
}

/* A comparison of two values of one domain (nan compares false). */
#define NPU_COMPARE(op, x, y)							\
	((op) == NPU_OP_EQUAL ? (x) == (y) : (op) == NPU_OP_LESS ? (x) < (y) :	\
	 (op) == NPU_OP_LESS_EQUAL ? (x) <= (y) : (op) == NPU_OP_GREATER ? (x) > (y) : \
	 (x) >= (y))

static inline double npu_binary_f64(uint32_t op, double x, double y)
{
	switch (op) {
	case NPU_OP_ADD: return x + y;
	case NPU_OP_SUB: return x - y;
	case NPU_OP_MUL: return x * y;
	case NPU_OP_DIV: return x / y;
	case NPU_OP_MAX: return x > y || isnan(x) ? x : y;
	case NPU_OP_MIN: return x < y || isnan(x) ? x : y;
	case NPU_OP_POW: return pow(x, y);
	case NPU_OP_FMOD: return fmod(x, y);
	default: {					/* MOD */
		double r = fmod(x, y);

		return r != 0 && (r < 0) != (y < 0) ? r + y : r;
	}
	}
}

static inline int64_t npu_binary_int(uint32_t op, int64_t x, int64_t y)
{
	uint64_t ux = (uint64_t)x, uy = (uint64_t)y;

	switch (op) {
	case NPU_OP_ADD: return (int64_t)(ux + uy);
	case NPU_OP_SUB: return (int64_t)(ux - uy);
	case NPU_OP_MUL: return (int64_t)(ux * uy);
	case NPU_OP_MAX: return x > y ? x : y;
	case NPU_OP_MIN: return x < y ? x : y;
	case NPU_OP_AND: return x & y;
	case NPU_OP_OR: return x | y;
	case NPU_OP_XOR: return x ^ y;
	default:
		break;
	}
	/* Division: 0 for a zero divisor, and INT64_MIN / -1 wraps. */
	if (!y)
		return 0;
	if (y == -1)
		return op == NPU_OP_DIV ? (int64_t)(0 - ux) : 0;
	if (op == NPU_OP_DIV)
		return x / y;
	if (op == NPU_OP_FMOD)
		return x % y;
	{
		int64_t r = x % y;				/* MOD: the divisor's sign */

		return r && (r < 0) != (y < 0) ? r + y : r;
	}
}

static inline uint64_t npu_binary_uint(uint32_t op, uint64_t x, uint64_t y)
{
	switch (op) {
	case NPU_OP_ADD: return x + y;
	case NPU_OP_SUB: return x - y;
	case NPU_OP_MUL: return x * y;
	case NPU_OP_DIV: return y ? x / y : 0;
	case NPU_OP_MAX: return x > y ? x : y;
	case NPU_OP_MIN: return x < y ? x : y;
	case NPU_OP_SHL: return y < 64 ? x << y : 0;
	case NPU_OP_SHR: return y < 64 ? x >> y : 0;
	default: return y ? x % y : 0;			/* MOD, FMOD */
	}
}

/*
 * in0 (op) in1 elementwise: a and b read from dtypes d0 and d1 (npu_load),
 * the result in domain *rdom. fp32, fp16 and bf16 compute in float as the
 * fp32 ops do, fp64 in double; POW computes in floating point whatever
 * its dtypes, and the comparisons give the integer 0 or 1.
 */
static inline union npu_num npu_eval_binary(uint32_t op, uint32_t d0, uint32_t d1,
					    union npu_num a, union npu_num b, enum npu_dom *rdom)
{
	enum npu_dom dom = npu_dtype_dom(d0);
	union npu_num r = { .u = 0 };

	if (op == NPU_OP_POW) {
		a = npu_convert(a, dom, NPU_DOM_FLOAT);
		b = npu_convert(b, npu_dtype_dom(d1), NPU_DOM_FLOAT);
		*rdom = NPU_DOM_FLOAT;
		r.f = d0 == NPU_DT_F64 || d1 == NPU_DT_F64 || !npu_dtype_is_float(d0) ?
		      pow(a.f, b.f) : powf((float)a.f, (float)b.f);
		return r;
	}
	if (npu_is_compare(op)) {
		*rdom = NPU_DOM_INT;
		r.i = dom == NPU_DOM_FLOAT ? NPU_COMPARE(op, a.f, b.f) :
		      dom == NPU_DOM_INT ? NPU_COMPARE(op, a.i, b.i) : NPU_COMPARE(op, a.u, b.u);
		return r;
	}
	*rdom = dom;
	if (dom == NPU_DOM_INT)
		r.i = npu_binary_int(op, a.i, b.i);
	else if (dom == NPU_DOM_UINT)
		r.u = npu_binary_uint(op, a.u, b.u);
	else if (d0 == NPU_DT_F64 || op == NPU_OP_MOD || op == NPU_OP_FMOD)
		r.f = d0 == NPU_DT_F64 ? npu_binary_f64(op, a.f, b.f) :
		      (float)npu_binary_f64(op, (float)a.f, (float)b.f);
	else
		r.f = npu_binary(op, (float)a.f, (float)b.f);
	return r;
}

/* The unary ops fp64 and the integers have (the others are float's). */
static inline bool npu_unary_f64_has(uint32_t op)
{
	switch (op) {
	case NPU_OP_RELU: case NPU_OP_NEG: case NPU_OP_ABS: case NPU_OP_SQRT: case NPU_OP_EXP:
	case NPU_OP_LOG: case NPU_OP_RECIPROCAL: case NPU_OP_FLOOR: case NPU_OP_CEIL:
	case NPU_OP_SIGN: case NPU_OP_ROUND: case NPU_OP_CLIP:
		return true;
	default:
		return false;
	}
}

static inline bool npu_unary_int_has(uint32_t op)
{
	return op == NPU_OP_RELU || op == NPU_OP_NEG || op == NPU_OP_ABS || op == NPU_OP_SIGN ||
	       op == NPU_OP_CLIP;
}

static inline double npu_unary_f64(uint32_t op, double x, double alpha, double beta)
{
	switch (op) {
	case NPU_OP_RELU: return x > 0 ? x : 0;
	case NPU_OP_NEG: return -x;
	case NPU_OP_ABS: return fabs(x);
	case NPU_OP_SQRT: return sqrt(x);
	case NPU_OP_EXP: return exp(x);
	case NPU_OP_LOG: return log(x);
	case NPU_OP_RECIPROCAL: return 1.0 / x;
	case NPU_OP_FLOOR: return floor(x);
	case NPU_OP_CEIL: return ceil(x);
	case NPU_OP_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
	case NPU_OP_ROUND: return nearbyint(x);
	default: return x < alpha ? alpha : x > beta ? beta : x;	/* CLIP */
	}
}

/* f(in0) elementwise, for a read from dtype d0: the result in domain *rdom. */
static inline union npu_num npu_eval_unary(uint32_t op, uint32_t d0, union npu_num a,
					   float alpha, float beta, enum npu_dom *rdom)
{
	enum npu_dom dom = npu_dtype_dom(d0);
	union npu_num r = a;

	*rdom = dom;
	if (op == NPU_OP_ISNAN || op == NPU_OP_ISINF) {
		*rdom = NPU_DOM_INT;
		r.i = op == NPU_OP_ISNAN ? isnan(a.f) :
		      (a.f == INFINITY && alpha != 0) || (a.f == -INFINITY && beta != 0);
		return r;
	}
	if (op == NPU_OP_NOT) {
		r.i = !a.i;
		return r;
	}
	if (dom == NPU_DOM_FLOAT) {
		r.f = d0 == NPU_DT_F64 ? npu_unary_f64(op, a.f, alpha, beta) :
		      npu_unary(op, (float)a.f, alpha, beta);
		return r;
	}
	if (op == NPU_OP_CLIP) {
		/* Bounds are floats: compare in double, keep the integer. */
		double x = dom == NPU_DOM_INT ? (double)a.i : (double)a.u;

		if (x < alpha || x > beta) {
			union npu_num b = { .f = x < alpha ? ceil(alpha) : floor(beta) };

			r = npu_convert(b, NPU_DOM_FLOAT, dom);
		}
		return r;
	}
	if (dom == NPU_DOM_UINT) {
		r.u = op == NPU_OP_NEG ? 0 - a.u : op == NPU_OP_SIGN ? a.u != 0 : a.u;
		return r;
	}
	switch (op) {
	case NPU_OP_RELU: r.i = a.i > 0 ? a.i : 0; break;
	case NPU_OP_NEG: r.i = (int64_t)(0 - (uint64_t)a.i); break;
	case NPU_OP_ABS: r.i = a.i < 0 ? (int64_t)(0 - (uint64_t)a.i) : a.i; break;
	default: r.i = (a.i > 0) - (a.i < 0); break;			/* SIGN */
	}
	return r;
}

/*
 * Whether op takes these dtypes (d1 NPU_DT_COUNT when it has one input):
 * NULL, or why not. Firmware, model loader and graph builder all ask.
 */
static inline const char *npu_op_dtypes(uint32_t op, uint32_t d0, uint32_t d1, uint32_t dout)
{
	enum npu_op_kind c = npu_op_kind(op);
	bool f0 = npu_dtype_is_float(d0);

	switch (c) {
	case NPU_OPK_BINARY:
		if (op == NPU_OP_POW)
			return d0 == dout && d0 != NPU_DT_BOOL && d1 != NPU_DT_BOOL ? NULL :
			       "pow: out of in0's dtype, neither input bool";
		if (op == NPU_OP_SELECT)
			return d0 == NPU_DT_BOOL && d1 == dout ? NULL :
			       "select: a bool condition, in1 of out's dtype";
		if (op == NPU_OP_REQUANT)
			return (d0 == NPU_DT_I32 || d0 == NPU_DT_F32) && d1 == NPU_DT_F32 &&
			       (dout == NPU_DT_U8 || dout == NPU_DT_I8) ? NULL :
			       "requant: i32 or f32 values, an f32 scale, into u8 or i8";
		if (d0 != d1)
			return "binary ops take two inputs of one dtype";
		if (npu_is_compare(op))
			return dout == NPU_DT_BOOL ? NULL : "comparisons write bool";
		if (op == NPU_OP_AND || op == NPU_OP_OR || op == NPU_OP_XOR)
			return d0 == NPU_DT_BOOL && dout == NPU_DT_BOOL ? NULL :
			       "and, or, xor take and write bool";
		if (d0 != dout)
			return "binary ops write their inputs' dtype";
		if (op == NPU_OP_SHL || op == NPU_OP_SHR)
			return npu_dtype_dom(d0) == NPU_DOM_UINT ? NULL : "shifts take unsigned integers";
		return d0 != NPU_DT_BOOL ? NULL : "arithmetic does not take bool";
	case NPU_OPK_UNARY:
		if (op == NPU_OP_ISNAN || op == NPU_OP_ISINF)
			return f0 && dout == NPU_DT_BOOL ? NULL : "isnan, isinf: a float into bool";
		if (d0 != dout)
			return "unary ops write their input's dtype";
		if (op == NPU_OP_NOT)
			return d0 == NPU_DT_BOOL ? NULL : "not takes bool";
		if (d0 == NPU_DT_BOOL)
			return "only not takes bool";
		if (d0 == NPU_DT_F64 && !npu_unary_f64_has(op))
			return "this unary op computes in f32, f16 and bf16 only";
		if (!f0 && !npu_unary_int_has(op))
			return "of the unary ops integers take relu, neg, abs, sign and clip";
		return NULL;
	case NPU_OPK_REDUCE:
		if (op == NPU_OP_ARGMAX || op == NPU_OP_ARGMIN)
			return dout == NPU_DT_I64 && d0 != NPU_DT_BOOL ? NULL :
			       "argmax, argmin: a number into i64";
		return f0 && d0 == dout ? NULL : "reductions take and write one float dtype";
	case NPU_OPK_SCAN:
		return f0 && d0 == dout ? NULL : "cumsum takes and writes one float dtype";
	case NPU_OPK_TRANSPOSE:
		return d0 == dout ? NULL : "transpose keeps dtype";
	case NPU_OPK_CAST:
		return NULL;
	case NPU_OPK_GATHER:
		return d0 == dout && (d1 == NPU_DT_I32 || d1 == NPU_DT_I64) ? NULL :
		       "gather_elements: I32 or I64 indices, out of in0's dtype";
	default:			/* in f32 (npu_op_widens), or GEMM on bytes */
		if ((op == NPU_OP_GEMM || op == NPU_OP_CONV2D) && npu_dtype_is_byte_int(d0) &&
		    npu_dtype_is_byte_int(d1))
			return dout == NPU_DT_I32 ? NULL : "an integer GEMM or convolution writes i32";
		if (npu_op_takes_as_f32(op, d0) && npu_op_takes_as_f32(op, dout) &&
		    (d1 == NPU_DT_COUNT || npu_op_takes_as_f32(op, d1)))
			return NULL;
		return op == NPU_OP_MAXPOOL2D ? "maxpool takes f32, f16, bf16, i8 and u8 tensors" :
		       op == NPU_OP_GEMM || op == NPU_OP_CONV2D ?
		       "GEMM and conv2d take f32, f16 and bf16 tensors, or i8 and u8 into i32" :
		       "op takes f32, f16 and bf16 tensors";
	}
}

/*
 * REQUANT of one element: x (an i32 value converted to f32, or an f32)
 * times the scale s in f32, rounded half to even, the zero point zp
 * added, clamped to [max(lo, least), largest] of dout (U8 or I8); a nan
 * gives the least value. Written as the compares a vector max and min
 * are, so its loops vectorize.
 */
static inline int32_t npu_requant(float x, float s, float zp, float lo, uint32_t dout)
{
	float least = dout == NPU_DT_I8 ? -128.0f : 0.0f, most = dout == NPU_DT_I8 ? 127.0f : 255.0f;
	float v = nearbyintf(x * s) + zp;

	least = lo > least ? lo : least;
	v = v > least ? v : least;	/* nan: the least */
	v = v < most ? v : most;
	return (int32_t)v;		/* in [-128, 255]: exact */
}

/* The dtype of an op's output (CAST, REQUANT: `to`), as the graph builder infers it. */
static inline uint32_t npu_op_out_dtype(uint32_t op, uint32_t d0, uint32_t to)
{
	if (npu_is_compare(op) || op == NPU_OP_ISNAN || op == NPU_OP_ISINF)
		return NPU_DT_BOOL;
	if (op == NPU_OP_ARGMAX || op == NPU_OP_ARGMIN)
		return NPU_DT_I64;
	if ((op == NPU_OP_GEMM || op == NPU_OP_CONV2D) && npu_dtype_is_byte_int(d0))
		return NPU_DT_I32;
	return op == NPU_OP_CAST || op == NPU_OP_REQUANT ? to : d0;
}

#endif /* NPU_OPDTYPES_H */
