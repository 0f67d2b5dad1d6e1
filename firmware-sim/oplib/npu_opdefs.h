/* SPDX-License-Identifier: MIT */
/*
 * npu_opdefs.h - the op library's dtypes, and what each of its ops
 * computes for one element: the firmware runs these, and the host's references (the
 * runtime's model checks, npurun --check, tests) ask them what the device
 * should have computed. Header only, so every side takes the same
 * definition without linking the firmware.
 */
#ifndef NPU_OPDEFS_H
#define NPU_OPDEFS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "npu_opdesc.h"

/* Bytes of an element of enum npu_op_dtype; 0 for none. */
static inline size_t npu_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case NPU_DT_I8: case NPU_DT_U8: case NPU_DT_BOOL: return 1;
	case NPU_DT_F16: case NPU_DT_BF16: case NPU_DT_I16: case NPU_DT_U16: return 2;
	case NPU_DT_F32: case NPU_DT_I32: case NPU_DT_U32: return 4;
	case NPU_DT_F64: case NPU_DT_I64: case NPU_DT_U64: return 8;
	default: return 0;
	}
}

/* fp16 and bf16 to and from fp32, rounding to nearest even. */

static inline uint16_t npu_f32_to_f16(float f)
{
	uint32_t x;
	uint32_t sign, exp, man;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (x >> 23) & 0xff;
	man = x & 0x7fffff;
	if (exp == 0xff)				/* inf, nan (kept quiet) */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	if (exp > 142)					/* overflow */
		return (uint16_t)(sign | 0x7c00);
	if (exp < 113) {				/* subnormal or zero */
		uint32_t shift, half, rest;

		if (exp < 102)
			return (uint16_t)sign;
		man |= 0x800000;
		shift = 126 - exp;
		half = man >> shift;
		rest = man & ((1u << shift) - 1);
		if (rest > (1u << (shift - 1)) || (rest == (1u << (shift - 1)) && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	/* Normal: round the 13 dropped bits to nearest even; a carry may
	 * bump the exponent, up to infinity, which is right. */
	{
		uint32_t h = ((exp - 112) << 10) | (man >> 13), rest = man & 0x1fff;

		if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
}

static inline float npu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
	float f;

	if (exp == 0x1f) {
		x = sign | 0x7f800000 | (man << 13);
	} else if (exp) {
		x = sign | ((exp + 112) << 23) | (man << 13);
	} else {
		f = (float)man * 0x1p-24f;		/* subnormal (or zero) */
		return sign ? -f : f;
	}
	memcpy(&f, &x, 4);
	return f;
}

static inline uint16_t npu_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)		/* nan: keep it a quiet nan */
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

static inline float npu_bf16_to_f32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

enum npu_op_kind {
	NPU_OPK_NONE,
	NPU_OPK_BINARY,		/* out = f(in0, in1) */
	NPU_OPK_UNARY,		/* out = f(in0; alpha, beta) */
	NPU_OPK_GEMM,
	NPU_OPK_ROW,		/* softmax, layernorm: along the last dimension */
	NPU_OPK_REDUCE,
	NPU_OPK_TRANSPOSE,
	NPU_OPK_CAST,
	NPU_OPK_WINDOW,		/* conv2d, pools: over [N, C, H, W] */
	NPU_OPK_GATHER,		/* gather_elements */
	NPU_OPK_SCAN,		/* cumsum: along an axis, out of in0's shape */
};

/* The ranges npu_op_kind() tells apart must not meet. */
_Static_assert(NPU_OP_LAST_BINARY < NPU_OP_RELU && NPU_OP_EXP < NPU_OP_GEMM &&
	       NPU_OP_LAST_REDUCE < NPU_OP_CUMSUM && NPU_OP_CUMSUM < NPU_OP_TRANSPOSE &&
	       NPU_OP_CAST < NPU_OP_NEG &&
	       NPU_OP_LAST_UNARY < NPU_OP_MOD && NPU_OP_LAST_BINARY2 < NPU_OP_NOT &&
	       NPU_OP_LAST_UNARY2 < NPU_OP_CONV2D && NPU_OP_AVGPOOL2D < NPU_OP_GATHER_ELEMENTS,
	       "op id ranges overlap");

static inline enum npu_op_kind npu_op_kind(uint32_t op)
{
	if ((op >= NPU_OP_ADD && op <= NPU_OP_LAST_BINARY) ||
	    (op >= NPU_OP_MOD && op <= NPU_OP_LAST_BINARY2))
		return NPU_OPK_BINARY;
	if ((op >= NPU_OP_RELU && op <= NPU_OP_EXP) ||
	    (op >= NPU_OP_NEG && op <= NPU_OP_LAST_UNARY) ||
	    (op >= NPU_OP_NOT && op <= NPU_OP_LAST_UNARY2))
		return NPU_OPK_UNARY;
	if (op == NPU_OP_GEMM)
		return NPU_OPK_GEMM;
	if (op == NPU_OP_SOFTMAX || op == NPU_OP_LAYERNORM)
		return NPU_OPK_ROW;
	if (op >= NPU_OP_REDUCE_SUM && op <= NPU_OP_LAST_REDUCE)
		return NPU_OPK_REDUCE;
	if (op == NPU_OP_TRANSPOSE)
		return NPU_OPK_TRANSPOSE;
	if (op == NPU_OP_CAST)
		return NPU_OPK_CAST;
	if (op >= NPU_OP_CONV2D && op <= NPU_OP_AVGPOOL2D)
		return NPU_OPK_WINDOW;
	if (op == NPU_OP_GATHER_ELEMENTS)
		return NPU_OPK_GATHER;
	if (op == NPU_OP_CUMSUM)
		return NPU_OPK_SCAN;
	return NPU_OPK_NONE;
}

/* Whether the op reads its output before writing it (GEMM with beta, SELECT). */
static inline bool npu_op_reads_out(uint32_t op, float beta)
{
	return (op == NPU_OP_GEMM && beta != 0.0f) || op == NPU_OP_SELECT;
}

/*
 * Whether op takes tensors of dtype dt by widening them (firmware 0.7):
 * GEMM, the row ops and the windows compute in f32 only, and the engine
 * hands them f16 and bf16 tensors as f32 copies and rounds their output
 * to its dtype once, on the way back, so products accumulate in f32 as
 * an NPU's MACs do. MaxPool takes i8 and u8 the same way: f32 holds
 * every such value exactly, and a maximum is one of them.
 */
static inline bool npu_op_widens(uint32_t op, uint32_t dt)
{
	if (op != NPU_OP_GEMM && op != NPU_OP_SOFTMAX && op != NPU_OP_LAYERNORM &&
	    (op < NPU_OP_CONV2D || op > NPU_OP_AVGPOOL2D))
		return false;
	return dt == NPU_DT_F16 || dt == NPU_DT_BF16 ||
	       (op == NPU_OP_MAXPOOL2D && (dt == NPU_DT_I8 || dt == NPU_DT_U8));
}

/* Whether op computes on a tensor of dt as f32: it is f32, or widens. */
static inline bool npu_op_takes_as_f32(uint32_t op, uint32_t dt)
{
	return dt == NPU_DT_F32 || npu_op_widens(op, dt);
}

static inline float npu_binary(uint32_t op, float x, float y)
{
	switch (op) {
	case NPU_OP_ADD: return x + y;
	case NPU_OP_SUB: return x - y;
	case NPU_OP_MUL: return x * y;
	case NPU_OP_DIV: return x / y;
	case NPU_OP_MAX: return x > y ? x : y;
	case NPU_OP_MIN: return x < y ? x : y;
	default: return powf(x, y);
	}
}

/*
 * t clamped to [0, 1], nan to 1 as fmaxf(0, fminf(1, t)) has it, but in
 * comparisons the compiler turns into vector min and max: fminf and fmaxf
 * are calls into libm, a few ns an element on the hard activations.
 */
static inline float npu_unit_clamp(float t)
{
	t = t < 1.0f ? t : 1.0f;
	return t > 0.0f ? t : 0.0f;
}

static inline __attribute__((always_inline)) float npu_unary(uint32_t op, float x, float alpha,
							      float beta)
{
	switch (op) {
	case NPU_OP_RELU: return x > 0 ? x : 0;
	/* The tanh approximation, as most NPU op libraries ship it. */
	case NPU_OP_GELU: return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
	case NPU_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
	case NPU_OP_TANH: return tanhf(x);
	case NPU_OP_EXP: return expf(x);
	case NPU_OP_NEG: return -x;
	case NPU_OP_ABS: return fabsf(x);
	case NPU_OP_SQRT: return sqrtf(x);
	case NPU_OP_LOG: return logf(x);
	case NPU_OP_RECIPROCAL: return 1.0f / x;
	case NPU_OP_FLOOR: return floorf(x);
	case NPU_OP_CEIL: return ceilf(x);
	case NPU_OP_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : x;	/* nan stays nan */
	case NPU_OP_ERF: return erff(x);
	/* log(1 + e^x) without overflow for large x */
	case NPU_OP_SOFTPLUS: return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
	case NPU_OP_SOFTSIGN: return x / (1.0f + fabsf(x));
	case NPU_OP_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
	case NPU_OP_LEAKY_RELU: return x >= 0 ? x : alpha * x;
	case NPU_OP_ELU: return x >= 0 ? x : alpha * expm1f(x);
	case NPU_OP_SELU: return beta * (x > 0 ? x : alpha * expm1f(x));
	case NPU_OP_HARD_SIGMOID: return npu_unit_clamp(alpha * x + beta);
	case NPU_OP_HARD_SWISH: return x * npu_unit_clamp(x / 6.0f + 0.5f);
	/* Clip keeps nan, as ONNX's does. */
	case NPU_OP_CLIP: return x < alpha ? alpha : x > beta ? beta : x;
	case NPU_OP_SIN: return sinf(x);
	case NPU_OP_COS: return cosf(x);
	case NPU_OP_ROUND: return nearbyintf(x);	/* to even, in the default mode */
	case NPU_OP_TAN: return tanf(x);
	case NPU_OP_ASIN: return asinf(x);
	case NPU_OP_ACOS: return acosf(x);
	case NPU_OP_ATAN: return atanf(x);
	case NPU_OP_SINH: return sinhf(x);
	case NPU_OP_COSH: return coshf(x);
	case NPU_OP_ASINH: return asinhf(x);
	case NPU_OP_ACOSH: return acoshf(x);
	case NPU_OP_ATANH: return atanhf(x);
	case NPU_OP_THRESHOLDED_RELU: return x > alpha ? x : 0.0f;
	case NPU_OP_SHRINK: return x < -alpha ? x + beta : x > alpha ? x - beta : 0.0f;
	case NPU_OP_CELU: return fmaxf(0.0f, x) + fminf(0.0f, alpha * expm1f(x / alpha));
	default: return x;
	}
}

/* The flags op takes, beyond none. */
static inline uint32_t npu_op_flags(uint32_t op)
{
	switch (npu_op_kind(op)) {
	case NPU_OPK_GEMM: return NPU_OP_F_TRANS_A | NPU_OP_F_TRANS_B | NPU_OP_F_B_PANELS;
	case NPU_OPK_SCAN: return NPU_OP_F_EXCLUSIVE | NPU_OP_F_REVERSE;
	default: return op == NPU_OP_ARGMAX || op == NPU_OP_ARGMIN ? NPU_OP_F_LAST_INDEX : 0;
	}
}

/*
 * B [k, n] packed in panels (NPU_OP_F_B_PANELS): its tensor's shape and
 * strides, and its size in floats.
 */
static inline uint64_t npu_panels_tensor(uint64_t k, uint64_t n, uint64_t shape[3],
					 uint64_t stride[3])
{
	shape[0] = k;
	shape[1] = (n + NPU_OP_PANEL - 1) / NPU_OP_PANEL;
	shape[2] = NPU_OP_PANEL;
	stride[0] = NPU_OP_PANEL;
	stride[1] = k * NPU_OP_PANEL;
	stride[2] = 1;
	return k * shape[1] * NPU_OP_PANEL;
}

/* NULL if a tensor is B [k, n] in panels, as the firmware reads them; else why not. */
static inline const char *npu_panels_check(uint32_t dtype, uint32_t ndim, const uint64_t *shape,
					   const uint64_t *stride, uint64_t k, uint64_t n)
{
	uint64_t want[3], wstride[3];

	npu_panels_tensor(k, n, want, wstride);
	if (dtype != NPU_DT_F32 || ndim != 3)
		return "GEMM panels: B is f32 and 3-D";
	for (int d = 0; d < 3; d++)
		if (shape[d] != want[d] || stride[d] != wstride[d])
			return "GEMM panels: B must be [K, ceil(N / 32), 32], strides [32, K * 32, 1]";
	return NULL;
}

/*
 * B [k, n], element (p, j) at B[p * bp + j * bj], into panels at `out`
 * (npu_panels_tensor()'s size in floats): what a compiler does once to
 * a GEMM's constant weights.
 */
static inline void npu_panels_pack(const float *B, uint64_t bp, uint64_t bj, uint64_t k,
				   uint64_t n, float *out)
{
	for (uint64_t j0 = 0; j0 < n; j0 += NPU_OP_PANEL)
		for (uint64_t p = 0; p < k; p++)
			for (uint64_t j = j0; j < j0 + NPU_OP_PANEL; j++)
				*out++ = j < n ? B[p * bp + j * bj] : 0.0f;
}

/* The fp32 elementwise ops of the first op library (the fast row loops). */
static inline bool npu_op_is_f32_classic(uint32_t op)
{
	return (op >= NPU_OP_ADD && op <= NPU_OP_LAST_BINARY) ||
	       (op >= NPU_OP_RELU && op <= NPU_OP_EXP) ||
	       (op >= NPU_OP_NEG && op <= NPU_OP_LAST_UNARY);
}

/*
 * The rules for an op's epilogue (struct npu_epi) on the op, the
 * dtypes and the bias's shape; the firmware checks the bias's strides and
 * extent as for any tensor. NULL when it is fine (or there is none).
 */
static inline const char *npu_epilogue_check(const struct npu_op *a)
{
	const struct npu_epi *e = &a->epi;
	bool binary = npu_op_kind(a->op) == NPU_OPK_BINARY && npu_op_is_f32_classic(a->op);

	if (!e->flags && !e->act)
		return NULL;
	if (e->flags & ~NPU_OP_E_BIAS)
		return "unknown epilogue flags";
	if (binary ? a->out.dtype != NPU_DT_F32 || a->in[0].dtype != NPU_DT_F32 :
	    (a->op != NPU_OP_CONV2D && a->op != NPU_OP_GEMM) ||
	    !npu_op_takes_as_f32(a->op, a->out.dtype) || !npu_op_takes_as_f32(a->op, a->in[0].dtype))
		return "an epilogue takes CONV2D or GEMM (on f32, f16 or bf16) or an arithmetic "
		       "binary op on f32";
	if (e->act && (npu_op_kind(e->act) != NPU_OPK_UNARY || !npu_op_is_f32_classic(e->act)))
		return "the epilogue's act is not an f32 unary op";
	if (isnan(e->alpha) || isnan(e->beta))
		return "the epilogue's parameters must not be nan";
	if (!(e->flags & NPU_OP_E_BIAS))
		return NULL;
	if (binary)
		return "a bias takes CONV2D or GEMM";
	if (!npu_op_takes_as_f32(a->op, e->bias.dtype) || e->bias.ndim != 1 ||
	    e->bias.shape[0] != a->out.shape[1])
		return "the epilogue's bias: f32, f16 or bf16, one per output channel (CONV2D) or "
		       "column (GEMM)";
	return NULL;
}

/*
 * Output rows (or columns) of a window op: floor, or ceil with ceil_mode
 * (ONNX's pools), of (in + pads - dilation (kernel - 1) - 1) / stride + 1;
 * 0 if the window does not fit.
 */
static inline uint64_t npu_window_out(uint64_t in, uint64_t pad0, uint64_t pad1, uint64_t kernel,
				      uint64_t stride, uint64_t dilation, int ceil_mode)
{
	uint64_t span = dilation * (kernel - 1) + 1, padded = in + pad0 + pad1;

	if (!kernel || !stride || !dilation || padded < span)
		return 0;
	return (padded - span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
}

/* Window fields fit 16 bits (the model file keeps them so). */
#define NPU_LIMIT_WIN	0xffffu

/* One spatial dimension of a window: its taps (0: CONV2D's, from the weights), step, pads. */
struct npu_win_dim {
	uint64_t kernel, stride, dilation, pad0, pad1;
};

/*
 * Spatial dimension k of a window op on `nsp` (2 or 3) of them, k = 0
 * the first after [N, C]: a 3-D window's depth is win_d, rows and
 * columns are win's [0] and [1] either way.
 */
static inline struct npu_win_dim npu_window_dim(const struct npu_op *a, unsigned int nsp,
						unsigned int k)
{
	const struct npu_op_window *w = &a->win;
	const struct npu_op_window_depth *d = &a->win_d;
	unsigned int j = k + 2 - nsp;

	if (nsp == 3 && k == 0)
		return (struct npu_win_dim){ d->kernel, d->stride, d->dilation, d->pad[0], d->pad[1] };
	return (struct npu_win_dim){ w->kernel[j], w->stride[j], w->dilation[j], w->pad[j],
				     w->pad[j + 2] };
}

/*
 * A window op's shapes and window, as the firmware checks a launch and
 * the runtime a model: NULL, or what is wrong. Shapes and dtypes of the
 * tensors otherwise are checked by the caller.
 */
static inline const char *npu_window_check(const struct npu_op *a)
{
	const struct npu_op_window *w = &a->win;
	const struct npu_op_window_depth *d = &a->win_d;
	const struct npu_tensor *x = &a->in[0], *y = &a->out, *f = &a->in[1];
	unsigned int nsp = x->ndim - 2;
	uint64_t o = y->shape[1];

	if ((x->ndim != 4 && x->ndim != 5) || y->ndim != x->ndim || x->shape[0] != y->shape[0])
		return "window ops take [N, C, H, W] into [N, O, Ho, Wo] (or [N, C, D, H, W])";
	if (d->reserved || (nsp == 2 && (d->kernel || d->stride || d->dilation || d->pad[0] ||
					 d->pad[1])))
		return "a 2-D window has no depth";
	if (w->flags & ~NPU_OP_W_COUNT_PAD || (w->flags && a->op != NPU_OP_AVGPOOL2D))
		return "unknown window flags";
	for (unsigned int k = 0; k < nsp; k++) {
		struct npu_win_dim wd = npu_window_dim(a, nsp, k);

		if (!wd.stride || !wd.dilation || wd.stride > NPU_LIMIT_WIN ||
		    wd.dilation > NPU_LIMIT_WIN || wd.pad0 > NPU_LIMIT_WIN || wd.pad1 > NPU_LIMIT_WIN)
			return "window strides, dilations and pads: 1 (0 for pads) to 65535";
		if (a->op == NPU_OP_CONV2D && wd.kernel)
			return "conv2d takes its kernel from the weights";
		if (a->op != NPU_OP_CONV2D && (!wd.kernel || wd.kernel > NPU_LIMIT_WIN))
			return "pool window: 1 to 65535";
	}
	if (a->op == NPU_OP_CONV2D) {
		if (y->dtype == NPU_DT_I32 && nsp != 2)
			return "an integer convolution is 2-D";
		if (f->ndim != x->ndim || !w->group || x->shape[1] % w->group || o % w->group ||
		    f->shape[0] != o || f->shape[1] != x->shape[1] / w->group)
			return "conv2d weights must be [O, C / group, (kd,) kh, kw]";
	} else if (w->group || o != x->shape[1]) {
		return "pools keep the channels";
	}
	/* At most one row or column past the floor's count (a pool's ceil_mode). */
	for (unsigned int k = 0; k < nsp; k++) {
		struct npu_win_dim wd = npu_window_dim(a, nsp, k);
		uint64_t kn = a->op == NPU_OP_CONV2D ? f->shape[2 + k] : wd.kernel;
		uint64_t most = npu_window_out(x->shape[2 + k], wd.pad0, wd.pad1, kn, wd.stride,
					       wd.dilation, 1);

		if (!most || y->shape[2 + k] > most ||
		    y->shape[2 + k] + 1 < npu_window_out(x->shape[2 + k], wd.pad0, wd.pad1, kn,
						      wd.stride, wd.dilation, 0))
			return "window output shape does not match the window";
	}
	return NULL;
}

#include "npu_opdtypes.h"

#endif /* NPU_OPDEFS_H */
