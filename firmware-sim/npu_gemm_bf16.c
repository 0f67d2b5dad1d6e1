// SPDX-License-Identifier: MIT
/*
 * GEMM on bf16 A and B with f32 sums, as an NPU's bf16 MACs compute it.
 * Where the host has AVX512_BF16 the engine hands a GEMM its bf16 inputs
 * as they are (npu_op_widened()), and this packs them in pairs along k,
 * the way VDPBF16PS takes them: one instruction multiplies a row's pair
 * by sixteen columns' pairs and adds both products to sixteen f32 sums,
 * twice the multiply-adds of an f32 FMA, from half the bytes.
 *
 * The product of two bf16 values is exact in f32, so the result differs
 * from the widened f32 GEMM's only in the order of the sums (two products
 * a step) and in denormals, which the instruction flushes to zero. When
 * the panels cannot be had, the caller widens and runs the f32 GEMM.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu_ops_int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * 12 rows by 32 columns: 24 sums in registers, enough chains to cover the
 * instruction's latency, and two loads of B and twelve broadcasts per 24
 * VDPBF16PS (a 6 x 32 tile ran at 0.8 of this).
 */
#define MR	12
#define NV	2		/* zmm of f32 sums per row */
#define NR	(16 * NV)	/* columns per strip */
#define KC	256		/* rows of B per panel: 128 pairs */
#define NC	NPU_GEMM_NC

bool npu_gemm_bf16_native(void)
{
	static int known;	/* 1 no, 2 yes */

	if (!__atomic_load_n(&known, __ATOMIC_RELAXED))
		__atomic_store_n(&known, __builtin_cpu_supports("avx512bf16") ? 2 : 1,
				 __ATOMIC_RELAXED);
	/* NPU_FWSIM_ISA forcing a narrower ISA forces the widened path too. */
	return known == 2 && npu_host_isa() == NPU_ISA_AVX512;
}

static inline uint32_t pair(const uint16_t *lo, const uint16_t *hi)
{
	return (uint32_t)*lo | (hi ? (uint32_t)*hi << 16 : 0);
}

/*
 * Rows [kb, kb + kc) and columns [jb, jb + nc) of B into strips of NR
 * columns: per pair of rows q, the strip's 32 columns as (row 2q, row
 * 2q + 1) pairs, 64 values; zero past nc and, for an odd kc, in the last
 * pair's second half.
 */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void pack_b(const uint16_t *B, int64_t bp, int64_t bj, int64_t kc, int64_t nc,
		   uint16_t *out)
{
	int64_t kc2 = (kc + 1) / 2;

	if (bp == 1) {		/* B transposed: a column's pair is one 32-bit load */
		for (int64_t js = 0; js < nc; js += NR, out += kc2 * 2 * NR) {
			uint32_t *o = (uint32_t *)out;

			for (int64_t j = 0; j < NR; j++) {
				const uint16_t *col = B + (js + j) * bj;

				for (int64_t q = 0; q < kc2; q++) {
					uint32_t v = 0;

					if (js + j < nc)
						v = pair(col + 2 * q, 2 * q + 1 < kc ? col + 2 * q + 1 :
							 NULL);
					o[q * NR + j] = v;
				}
			}
		}
		return;
	}
	for (int64_t q = 0; q < kc2; q++) {
		const uint16_t *r0 = B + 2 * q * bp, *r1 = 2 * q + 1 < kc ? r0 + bp : NULL;
		uint16_t *o = out + q * 2 * NR;

		for (int64_t js = 0; js < nc; js += NR, o += kc2 * 2 * NR) {
			int64_t w = nc - js < NR ? nc - js : NR;

			if (w == NR && bj == 1 && r1) {
				for (int h = 0; h < NR; h += 16) {
					__m256i x0 = _mm256_loadu_si256((const __m256i *)(r0 + js + h));
					__m256i x1 = _mm256_loadu_si256((const __m256i *)(r1 + js + h));
					__m256i lo = _mm256_unpacklo_epi16(x0, x1);
					__m256i hi = _mm256_unpackhi_epi16(x0, x1);

					/* unpack works per 128-bit lane: put the lanes in order */
					_mm256_storeu_si256((__m256i *)(o + 2 * h),
							    _mm256_permute2x128_si256(lo, hi, 0x20));
					_mm256_storeu_si256((__m256i *)(o + 2 * h + 16),
							    _mm256_permute2x128_si256(lo, hi, 0x31));
				}
				continue;
			}
			for (int64_t j = 0; j < NR; j++) {
				o[2 * j] = j < w ? r0[(js + j) * bj] : 0;
				o[2 * j + 1] = j < w && r1 ? r1[(js + j) * bj] : 0;
			}
		}
	}
}

/* A's rows [0, mr) by pairs of its kc columns, MR pairs per q, zero past mr. */
static void pack_a(const uint16_t *A, int64_t ai, int64_t ap, int64_t mr, int64_t kc,
		   uint32_t *out)
{
	for (int64_t q = 0; q < (kc + 1) / 2; q++, out += MR)
		for (int64_t i = 0; i < MR; i++) {
			const uint16_t *a = A + i * ai + 2 * q * ap;

			out[i] = i < mr ? pair(a, 2 * q + 1 < kc ? a + ap : NULL) : 0;
		}
}

/* C[mr x nr] += alpha * a (kc2 pairs x MR) * b (kc2 pairs x NR). */
__attribute__((target("avx512f,avx512bf16")))
static void kernel_12x32(int64_t kc2, const uint32_t *a, const uint16_t *b, float *c,
			int64_t ldc, int mr, int nr, float alpha)
{
	__m512 acc[MR][NV];
	__m512 al = _mm512_set1_ps(alpha);

	for (int i = 0; i < MR; i++)
		for (int v = 0; v < NV; v++)
			acc[i][v] = _mm512_setzero_ps();
	for (int64_t q = 0; q < kc2; q++, a += MR, b += 2 * NR) {
		__m512bh bv[NV];

		for (int v = 0; v < NV; v++)
			bv[v] = (__m512bh)_mm512_loadu_si512(b + 32 * v);
		for (int i = 0; i < MR; i++) {
			__m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);

			for (int v = 0; v < NV; v++)
				acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bv[v]);
		}
	}
	for (int i = 0; i < mr; i++) {
		float *ci = c + i * ldc;

		for (int v = 0; v < NV; v++) {
			int w = nr - 16 * v;
			__mmask16 m;

			if (w <= 0)
				break;
			m = w >= 16 ? 0xffff : (__mmask16)((1u << w) - 1);
			_mm512_mask_storeu_ps(ci + 16 * v, m,
					      _mm512_fmadd_ps(acc[i][v], al,
							      _mm512_maskz_loadu_ps(m, ci + 16 * v)));
		}
	}
}

int npu_gemm_bf16(const uint16_t *A, uint64_t ai, uint64_t ap, const uint16_t *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	uint16_t *bpack;
	uint32_t *apack;

	if (!npu_gemm_bf16_native())
		return 1;
	if (!k)
		return 0;
	/* sized in floats: two bf16 each */
	bpack = (uint16_t *)npu_gemm_scratch(0, (size_t)KC * (NC + NR) / 2);
	apack = (uint32_t *)npu_gemm_scratch(1, (size_t)KC / 2 * MR);
	if (!bpack || !apack)
		return 1;
	for (uint64_t jb = 0; jb < n; jb += NC) {
		int64_t nc = (int64_t)(n - jb < NC ? n - jb : NC);

		for (uint64_t kb = 0; kb < k; kb += KC) {
			int64_t kc = (int64_t)(k - kb < KC ? k - kb : KC), kc2 = (kc + 1) / 2;

			pack_b(B + kb * bp + jb * bj, (int64_t)bp, (int64_t)bj, kc, nc, bpack);
			for (uint64_t i = begin; i < end; i += MR) {
				int64_t mr = (int64_t)(end - i < MR ? end - i : MR);

				if (npu_cancelled(cancel))
					return -1;
				pack_a(A + i * ai + kb * ap, (int64_t)ai, (int64_t)ap, mr, kc, apack);
				for (int64_t js = 0; js < nc; js += NR)
					kernel_12x32(kc2, apack, bpack + js * kc2 * 2, C + i * ci + jb +
						    (uint64_t)js, (int64_t)ci, (int)mr,
						    (int)(nc - js < NR ? nc - js : NR), alpha);
			}
		}
	}
	return 0;
}

#else

bool npu_gemm_bf16_native(void)
{
	return false;
}

int npu_gemm_bf16(const uint16_t *A, uint64_t ai, uint64_t ap, const uint16_t *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	(void)A, (void)ai, (void)ap, (void)B, (void)bp, (void)bj, (void)C, (void)ci, (void)n;
	(void)k, (void)alpha, (void)begin, (void)end, (void)cancel;
	return 1;
}

#endif
