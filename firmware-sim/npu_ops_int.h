/* SPDX-License-Identifier: MIT */
/*
 * Internal to the op library (npu_ops.c, npu_window.c, ...): cancellation
 * points, element access, and the entries of the op families.
 *
 * Elementwise loops look every CHECK_EVERY elements and long inner loops
 * every CHECK_EVERY_INNER iterations, so the flag's load (a cache hit
 * until someone writes it) costs nothing measurable and a cancelled op
 * stops within well under a millisecond of work per core.
 */
#ifndef NPU_OPS_INT_H
#define NPU_OPS_INT_H

#include <stdbool.h>
#include <string.h>

#include "npu_ops.h"

#define CHECK_EVERY		4096
#define CHECK_EVERY_INNER	65536

/* An element's index into its coordinates along v's shape. */
static inline void npu_unravel(uint64_t idx, const struct npu_view *v, uint32_t ndim,
			       uint64_t *ix)
{
	for (int k = (int)ndim - 1; k >= 0; k--) {
		ix[k] = idx % v->shape[k];
		idx /= v->shape[k];
	}
}

/* The element of v at coordinates ix, in elements from v->data. */
static inline uint64_t npu_offset(const struct npu_view *v, const uint64_t *ix, uint32_t ndim)
{
	uint64_t off = 0;

	for (uint32_t k = 0; k < ndim; k++)
		off += ix[k] * v->stride[k];
	return off;
}

/*
 * Elementwise ops (npu_elementwise.c): binary, unary, casts, selects and
 * transposes, elements [begin, end) of out.
 */
int npu_elementwise_run(const struct npu_op *a, const struct npu_view *in,
			const struct npu_view *out, uint64_t begin, uint64_t end,
			const uint32_t *cancel);

static inline int npu_cancelled(const uint32_t *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED);
}

/* At iteration j of a long loop: time to look, and cancelled? */
#define STOP_AT(j, cancel) \
	(!((j) & (CHECK_EVERY_INNER - 1)) && npu_cancelled(cancel))

/*
 * y[j * ys] = act(y[j * ys] + b[j * bs]) for j < n: the epilogue on a row
 * of output (b NULL: no bias).
 */
void npu_epilogue(const struct npu_epi *e, const float *b, uint64_t bs, float *y,
		  uint64_t ys, uint64_t n);

/* The same, from x[j * ys] (x == y allowed): a copy and the epilogue in one pass. */
void npu_epilogue_from(const struct npu_epi *e, const float *b, uint64_t bs,
		       const float *x, float *y, uint64_t ys, uint64_t n);

/*
 * The widest vector ISA of this CPU the op library uses (CPUID, asked
 * once), or a narrower one NPU_FWSIM_ISA=avx2|portable forces (benches
 * and tests compare the paths).
 */
enum npu_isa { NPU_ISA_UNKNOWN, NPU_ISA_NONE, NPU_ISA_AVX2, NPU_ISA_AVX512 };

enum npu_isa npu_host_isa(void);

/*
 * Whole-run transcendentals (npu_vmath.c), on glibc's vector math
 * library where the ISA has it: y[i] = f(x[i]) for i < n, y == x allowed.
 * Within a few ulp of the scalar libm functions, not bit-equal to them.
 */
void npu_vexp(float *y, const float *x, uint64_t n);
/* GELU, the exact form: 0.5 x (1 + erf(x / sqrt 2)). */
void npu_vgelu_erf(float *y, const float *x, uint64_t n);

/*
 * Row passes over n contiguous floats (npu_vmath.c): the maximum of m and
 * x[] (NaNs in x[] ignored, a NaN m kept); the sum of x[], and of its
 * squared deviations from mean, in double.
 */
float npu_vmax(const float *x, uint64_t n, float m);
double npu_vsum(const float *x, uint64_t n);
double npu_vsqdev(const float *x, uint64_t n, double mean);
/* y[j] = (x[j] - sub) * mul, in double; y == x allowed. */
void npu_vaffine(float *y, const float *x, uint64_t n, double sub, double mul);

/*
 * The fast GEMM's building blocks (npu_gemm.c), for a B made on the fly:
 * the packer writes rows [kb, kb + kc) and columns [jb, jb + nc) of B
 * (nc <= NPU_GEMM_NC) as strips of nr columns, each kc x nr and row-major,
 * zero past nc.
 */
#define NPU_GEMM_NC	512

typedef void (*npu_gemm_pack_fn)(const void *ctx, uint64_t kb, int64_t kc, uint64_t jb,
				 int64_t nc, int64_t nr, float *out);

/* Whether npu_gemm_packed() has a kernel on this host (same answer every call). */
bool npu_gemm_has_fast(void);

/*
 * C[i][j] (+)= alpha * sum_p A[i * ai + p * ap] B[p][j] for rows [i0, i1)
 * and columns [j0, j1), C's rows ci apart and contiguous; add 0 writes C
 * without reading it. 0 done, -1 cancelled, 1 not done (no kernel on this
 * host, or no memory for the panels).
 */
int npu_gemm_packed(const float *A, uint64_t ai, uint64_t ap, npu_gemm_pack_fn pack,
		    const void *ctx, float *C, uint64_t ci, uint64_t i0, uint64_t i1, uint64_t j0,
		    uint64_t j1, uint64_t k, float alpha, bool add, const uint32_t *cancel);

/*
 * The shifted GEMM (a stride-1 convolution over its padded image):
 * C[i][t] = sum_p A[i * ai + p] X[off[p] + t] for rows i < m and columns
 * t < n, rows of C ci apart. The kernels work in whole tiles: C needs
 * room for NPU_GEMM_SHIFT_NR columns past n and X must be readable that
 * far past every off[p] + n. 0 done, -1 cancelled, 1 not done (no kernel
 * on this host, or no memory).
 */
#define NPU_GEMM_SHIFT_NR	48

int npu_gemm_shifted(const float *A, uint64_t ai, uint64_t m, const float *X, const int32_t *off,
		     uint64_t k, float *C, uint64_t ci, uint64_t n, const uint32_t *cancel);

/*
 * Per-thread buffers for the window ops, kept for the thread's life and
 * grown as asked: slot `slot` (< NPU_GEMM_SCRATCH - 1: the last is the
 * shifted GEMM's) with room for n floats, 64-byte aligned, or NULL.
 */
#define NPU_GEMM_SCRATCH	4

float *npu_gemm_scratch(unsigned int slot, size_t n);

/*
 * A packer's row of a strip: w values of src, then zeros up to nr (the
 * kernels compute the lanes past w and drop them: zeros keep them tidy).
 */
static inline void npu_gemm_put(float *dst, const float *src, int64_t w, int64_t nr)
{
	/* constant sizes for the full strips: vector moves, not a rep movs */
	if (w == 32 && nr == 32) {
		memcpy(dst, src, 32 * sizeof(float));
		return;
	}
	if (w == 16 && nr == 16) {
		memcpy(dst, src, 16 * sizeof(float));
		return;
	}
	memcpy(dst, src, (size_t)w * sizeof(float));
	memset(dst + w, 0, (size_t)(nr - w) * sizeof(float));
}

/*
 * GEMM on bf16 A and B (npu_gemm_bf16.c): as npu_gemm_fast(), strides in
 * elements, products summed in f32. Whether this host runs it (AVX512_BF16,
 * and NPU_FWSIM_ISA not forcing a narrower ISA): the engine widens a bf16
 * GEMM's inputs to f32 where it does not.
 */
bool npu_gemm_bf16_native(void);
int npu_gemm_bf16(const uint16_t *A, uint64_t ai, uint64_t ap, const uint16_t *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel);

/* A (i, p) or B (p, j) of bytes, whatever their layout, as a GEMM reads them. */
struct npu_bytes {
	const uint8_t *p;
	uint64_t s0, s1;	/* strides of (row, column) as A[i][p] or B[p][j] */
	bool sgn;		/* i8, else u8 */
};

/*
 * C[i][j] += sum_p A B for rows [begin, end), wrapping in i32: the VNNI
 * kernel where it runs and C's rows are contiguous, else the portable
 * loops. 0 done, -1 cancelled.
 */
int npu_gemm_bytes(const struct npu_bytes *A, const struct npu_bytes *B, int32_t *C, uint64_t ci,
		   uint64_t cj, uint64_t n, uint64_t k, uint64_t begin, uint64_t end,
		   const uint32_t *cancel);

/* An integer convolution (npu_conv_int8.c): output planes [begin, end). */
int npu_conv_int8_run(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel);

/*
 * GEMM on i8 or u8 A and B into i32 C (npu_gemm_int8.c): C (+)= A B, beta
 * 0 or 1, over rows [begin, end), sums exact modulo 2^32.
 */
int npu_gemm_int8_run(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel);
/* Whether this host runs its VNNI kernel (else the portable loops). */
bool npu_gemm_int8_native(void);

/* GEMM over rows [begin, end) of C, then its epilogue (npu_matmul.c). */
int npu_gemm_run(const struct npu_op *a, const struct npu_view *in,
		 const struct npu_view *out, uint64_t begin, uint64_t end,
		 const uint32_t *cancel);

/* CONV2D, MAXPOOL2D, AVGPOOL2D over output planes [begin, end) (npu_window.c). */
int npu_window_run(const struct npu_op *a, const struct npu_view *in,
		   const struct npu_view *out, uint64_t begin, uint64_t end,
		   const uint32_t *cancel);

#endif /* NPU_OPS_INT_H */
