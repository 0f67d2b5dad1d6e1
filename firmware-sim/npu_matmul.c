// SPDX-License-Identifier: MIT
/*
 * GEMM launches: C = alpha A B + beta C over a block of C's rows, then the
 * epilogue. The cases with no use for the fast kernels of npu_gemm.c (a
 * few rows, strided C, a host without them) run the portable loops here,
 * the vectorizable ones cloned per ISA (they hold no contractions, so
 * every clone rounds as the portable one does).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "npu_ops.h"
#include "npu_ops_int.h"

/*
 * The common case, B rows and C rows contiguous: a panel of GEMM_KC rows
 * of B stays in cache while every row of this slice uses it, and four
 * rows of C are updated per pass over a B row, so each B element loaded
 * feeds four multiply-adds. Each C element still sums its products in
 * order of p, exactly as the plain loop does. Cancellation is looked at
 * once per panel of rows (4 x GEMM_KC x n multiply-adds).
 */
#define GEMM_KC 256

__attribute__((target_clones("avx512f", "avx2", "default")))
static int gemm_contiguous(const float *A, uint64_t ai, uint64_t ap, const float *B,
			   uint64_t bp, float *C, uint64_t ci, uint64_t n, uint64_t k,
			   float alpha, uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	for (uint64_t kb = 0; kb < k; kb += GEMM_KC) {
		uint64_t ke = kb + GEMM_KC < k ? kb + GEMM_KC : k, i = begin;

		for (; i + 4 <= end; i += 4) {
			float *restrict c0 = C + i * ci, *restrict c1 = c0 + ci;
			float *restrict c2 = c1 + ci, *restrict c3 = c2 + ci;

			if (npu_cancelled(cancel))
				return -1;
			for (uint64_t p = kb; p < ke; p++) {
				const float *restrict b = B + p * bp;
				float a0 = alpha * A[i * ai + p * ap];
				float a1 = alpha * A[(i + 1) * ai + p * ap];
				float a2 = alpha * A[(i + 2) * ai + p * ap];
				float a3 = alpha * A[(i + 3) * ai + p * ap];

				for (uint64_t j = 0; j < n; j++) {
					float bv = b[j];

					c0[j] += a0 * bv;
					c1[j] += a1 * bv;
					c2[j] += a2 * bv;
					c3[j] += a3 * bv;
				}
			}
		}
		for (; i < end; i++) {
			float *restrict c = C + i * ci;

			if (npu_cancelled(cancel))
				return -1;
			for (uint64_t p = kb; p < ke; p++) {
				const float *restrict b = B + p * bp;
				float s = alpha * A[i * ai + p * ap];

				for (uint64_t j = 0; j < n; j++)
					c[j] += s * b[j];
			}
		}
	}
	return 0;
}

/*
 * A transposed B with few rows of A (a GEMV, as a Gemm with transB=1 on
 * one sample is): each C element a dot product of two contiguous runs,
 * in eight partial sums so the loop vectorizes.
 */
__attribute__((target_clones("avx512f", "avx2", "default")))
static int gemm_dots(const float *A, uint64_t ai, uint64_t ap, const float *B, uint64_t bj,
		     float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha, uint64_t begin,
		     uint64_t end, const uint32_t *cancel)
{
	for (uint64_t i = begin; i < end; i++) {
		const float *x = A + i * ai;

		for (uint64_t j = 0; j < n; j++) {
			const float *y = B + j * bj;
			float part[8] = { 0 }, sum = 0;
			uint64_t p = 0;

			if (!(j & 63) && npu_cancelled(cancel))
				return -1;
			if (ap == 1)
				for (; p + 8 <= k; p += 8)
					for (int l = 0; l < 8; l++)
						part[l] += x[p + l] * y[p + l];
			for (; p < k; p++)
				sum += x[p * ap] * y[p];
			for (int l = 0; l < 8; l++)
				sum += part[l];
			C[i * ci + j] += alpha * sum;
		}
	}
	return 0;
}

/* Fewer rows than this: packing B for the fast kernels costs more than it saves. */
#define GEMM_FEW_ROWS	4

/* C (+)= alpha A B over rows [begin, end), C's rows already scaled by beta. */
static int gemm_add(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel);

/* Elements from a 2-D view's first to its last, gaps included. */
static uint64_t extent(const struct npu_view *v)
{
	return (v->shape[0] - 1) * v->stride[0] + (v->shape[1] - 1) * v->stride[1] + 1;
}

/*
 * bf16 A and B: the host's bf16 kernel, or, for a strided C or with no
 * memory for its panels, f32 copies of both (what the engine hands over
 * on a host without one) and the f32 paths.
 */
static int gemm_add_bf16(const struct npu_op *a, const struct npu_view *in,
			 const struct npu_view *out, uint64_t begin, uint64_t end,
			 const uint32_t *cancel)
{
	int ta = a->flags & NPU_OP_F_TRANS_A, tb = a->flags & NPU_OP_F_TRANS_B;
	uint64_t n = out->shape[1], k = ta ? in[0].shape[0] : in[0].shape[1];
	uint64_t ai = ta ? in[0].stride[1] : in[0].stride[0], ap = ta ? in[0].stride[0] : in[0].stride[1];
	uint64_t bp = tb ? in[1].stride[1] : in[1].stride[0], bj = tb ? in[1].stride[0] : in[1].stride[1];
	struct npu_view wide[2] = { in[0], in[1] };
	int ret = 1;

	if (out->stride[1] == 1)
		ret = npu_gemm_bf16(in[0].data, ai, ap, in[1].data, bp, bj, out->data,
				    out->stride[0], n, k, a->alpha, begin, end, cancel);
	if (ret <= 0)
		return ret;
	for (int t = 0; t < 2; t++) {
		wide[t].dtype = NPU_DT_F32;
		wide[t].data = malloc(extent(&in[t]) * sizeof(float));
		if (wide[t].data)
			npu_widen(wide[t].data, in[t].data, extent(&in[t]), NPU_DT_BF16);
	}
	if (wide[0].data && wide[1].data)
		ret = gemm_add(a, wide, out, begin, end, cancel);
	free(wide[0].data);
	free(wide[1].data);
	if (ret <= 0)
		return ret;
	/* No memory at all: a value at a time, in the same order as the f32 loop. */
	for (uint64_t i = begin; i < end; i++) {
		const uint16_t *A = in[0].data, *B = in[1].data;
		float *c = (float *)out->data + i * out->stride[0];

		for (uint64_t p = 0; p < k; p++) {
			float s = a->alpha * npu_bf16_to_f32(A[i * ai + p * ap]);

			if (!(p & (GEMM_KC - 1)) && npu_cancelled(cancel))
				return -1;
			for (uint64_t j = 0; j < n; j++)
				c[j * out->stride[1]] += s * npu_bf16_to_f32(B[p * bp + j * bj]);
		}
	}
	return 0;
}

static int gemm_rows(const struct npu_op *a, const struct npu_view *in,
		     const struct npu_view *out, uint64_t begin, uint64_t end,
		     const uint32_t *cancel)
{
	float *C = out->data;
	uint64_t n = out->shape[1], ci = out->stride[0], cj = out->stride[1];
	float beta = a->beta;	/* a local: C's stores cannot change it */

	for (uint64_t i = begin; i < end; i++) {
		float *c = C + i * ci;

		if (beta == 0.0f && cj == 1)	/* beta == 0 ignores C, as BLAS does */
			memset(c, 0, n * sizeof(float));
		else
			for (uint64_t j = 0; j < n; j++)
				c[j * cj] = beta == 0.0f ? 0.0f : beta * c[j * cj];
	}
	if (in[0].dtype == NPU_DT_BF16)
		return gemm_add_bf16(a, in, out, begin, end, cancel);
	return gemm_add(a, in, out, begin, end, cancel);
}

/*
 * Rows of A against B in panels, 32 columns of C at a time: a row's 32
 * sums stay in registers through all of K (a GEMV streams the weights
 * once), each summed in order of p as gemm_contiguous sums it, so the
 * bits are the unpacked B's.
 */
__attribute__((target_clones("avx512f", "avx2", "default")))
static int gemm_panels_rows(const float *A, uint64_t ai, uint64_t ap, const float *P, float *C,
			    uint64_t ci, uint64_t n, uint64_t k, float alpha, uint64_t begin,
			    uint64_t end, const uint32_t *cancel)
{
	for (uint64_t j0 = 0; j0 < n; j0 += NPU_OP_PANEL) {
		const float *B = P + j0 * k;
		uint64_t w = n - j0 < NPU_OP_PANEL ? n - j0 : NPU_OP_PANEL;

		for (uint64_t i = begin; i < end; i++) {
			float acc[NPU_OP_PANEL], *c = C + i * ci + j0;

			if (npu_cancelled(cancel))
				return -1;
			for (uint64_t j = 0; j < NPU_OP_PANEL; j++)
				acc[j] = j < w ? c[j] : 0.0f;
			for (uint64_t p = 0; p < k; p++) {
				float a = alpha * A[i * ai + p * ap];

				for (int j = 0; j < NPU_OP_PANEL; j++)
					acc[j] += a * B[p * NPU_OP_PANEL + j];
			}
			for (uint64_t j = 0; j < w; j++)
				c[j] = acc[j];
		}
	}
	return 0;
}

/*
 * B in panels (NPU_OP_F_B_PANELS): the fast kernels read them where they
 * lie; a few rows, or a host without them, take gemm_panels_rows, and a
 * strided C the plain loop, each panel a K x 32 row-major B of its own.
 */
static int gemm_add_panels(const struct npu_op *a, const struct npu_view *in,
			   const struct npu_view *out, uint64_t begin, uint64_t end,
			   const uint32_t *cancel)
{
	const float *A = in[0].data, *P = in[1].data;
	float *C = out->data;
	int ta = a->flags & NPU_OP_F_TRANS_A;
	uint64_t n = out->shape[1], k = ta ? in[0].shape[0] : in[0].shape[1];
	uint64_t ai = ta ? in[0].stride[1] : in[0].stride[0], ap = ta ? in[0].stride[0] : in[0].stride[1];
	uint64_t ci = out->stride[0], cj = out->stride[1];

	if (cj == 1) {
		int ret = end - begin < GEMM_FEW_ROWS ? 1 :
			  npu_gemm_panels(A, ai, ap, P, C, ci, n, k, a->alpha, begin, end, cancel);

		return ret <= 0 ? ret : gemm_panels_rows(A, ai, ap, P, C, ci, n, k, a->alpha,
							  begin, end, cancel);
	}
	for (uint64_t j0 = 0; j0 < n; j0 += NPU_OP_PANEL) {
		const float *B = P + j0 * k;
		uint64_t w = n - j0 < NPU_OP_PANEL ? n - j0 : NPU_OP_PANEL;

		for (uint64_t i = begin; i < end; i++) {
			float *c = C + i * ci + j0 * cj;

			for (uint64_t p = 0; p < k; p++) {
				float s = a->alpha * A[i * ai + p * ap];

				if (!(p & (GEMM_KC - 1)) && npu_cancelled(cancel))
					return -1;
				for (uint64_t j = 0; j < w; j++)
					c[j * cj] += s * B[p * NPU_OP_PANEL + j];
			}
		}
	}
	return 0;
}

static int gemm_add(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	const float *A = in[0].data, *B = in[1].data;
	float *C = out->data;
	int ta = a->flags & NPU_OP_F_TRANS_A, tb = a->flags & NPU_OP_F_TRANS_B;
	uint64_t n = out->shape[1], k = ta ? in[0].shape[0] : in[0].shape[1];
	/* Strides of A as [i][p] and B as [p][j], whatever their layout. */
	uint64_t ai = ta ? in[0].stride[1] : in[0].stride[0], ap = ta ? in[0].stride[0] : in[0].stride[1];
	uint64_t bp = tb ? in[1].stride[1] : in[1].stride[0], bj = tb ? in[1].stride[0] : in[1].stride[1];
	uint64_t ci = out->stride[0], cj = out->stride[1];

	if (a->flags & NPU_OP_F_B_PANELS)
		return gemm_add_panels(a, in, out, begin, end, cancel);
	if (end - begin < GEMM_FEW_ROWS && cj == 1 && (bj == 1 || bp == 1))
		return bj == 1 ? gemm_contiguous(A, ai, ap, B, bp, C, ci, n, k, a->alpha, begin, end,
						 cancel) :
		       gemm_dots(A, ai, ap, B, bj, C, ci, n, k, a->alpha, begin, end, cancel);
	if ((bj == 1 || bp == 1) && cj == 1) {
		int fast = npu_gemm_fast(A, ai, ap, B, bp, bj, C, ci, n, k, a->alpha, begin, end,
					 cancel);

		if (fast <= 0)
			return fast;
		if (bj == 1)
			return gemm_contiguous(A, ai, ap, B, bp, C, ci, n, k, a->alpha, begin, end,
					       cancel);
	}
	for (uint64_t i = begin; i < end; i++) {
		float *c = C + i * ci;

		for (uint64_t p = 0; p < k; p++) {
			float s = a->alpha * A[i * ai + p * ap];
			const float *b = B + p * bp;

			if (!(p & (GEMM_KC - 1)) && npu_cancelled(cancel))
				return -1;
			for (uint64_t j = 0; j < n; j++)
				c[j * cj] += s * b[j * bj];
		}
	}
	return 0;
}

int npu_gemm_run(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	const struct npu_epi *e = &a->epi;
	bool bias = e->flags & NPU_OP_E_BIAS;
	int ret;

	if (out->dtype == NPU_DT_I32)	/* on bytes: no epilogue */
		return npu_gemm_int8_run(a, in, out, begin, end, cancel);
	ret = gemm_rows(a, in, out, begin, end, cancel);

	for (uint64_t i = begin; !ret && (bias || e->act) && i < end; i++)
		npu_epilogue(e, bias ? in[2].data : NULL, in[2].stride[0],
			     (float *)out->data + i * out->stride[0], out->stride[1], out->shape[1]);
	return ret;
}
