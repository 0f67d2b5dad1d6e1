// SPDX-License-Identifier: MIT
/*
 * The op library's fast GEMM: C[i][j] += alpha * sum_p A[i][p] B[p][j] for
 * rows [begin, end) of C, with B and C rows contiguous. Blocked for the
 * caches (KC rows of B, NC columns at a time, packed into strips of NR
 * columns; MR rows of A packed with alpha applied) and computed by an
 * MR x NR register-blocked kernel: AVX-512 or AVX2 + FMA as the host CPU
 * has them (asked once, of CPUID), else the portable loop of npu_ops.c
 * (NPU_FWSIM_ISA=avx2 or =portable picks a narrower one). Products
 * sum in order of p within a KC block, fused; the result differs from
 * the portable loop's in rounding only.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu_ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR	6
#define NR	16		/* AVX2: two ymm of columns */
#define NR512	32		/* AVX-512: two zmm */
#define KC	256
#define NC	512

static int cancelled(const uint32_t *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED);
}

/* C[MR x NR] += a (kc x MR, packed) * b (kc x NR, packed); mr x nr of it real. */
__attribute__((target("avx2,fma")))
static void kernel_6x16(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
			int mr, int nr)
{
	__m256 acc[MR][2];
	float tmp[MR * NR];

	for (int i = 0; i < MR; i++)
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	for (int64_t p = 0; p < kc; p++, a += MR, b += NR) {
		__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);

		for (int i = 0; i < MR; i++) {
			__m256 ai = _mm256_broadcast_ss(a + i);

			acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	if (mr == MR && nr == NR) {
		for (int i = 0; i < MR; i++) {
			float *ci = c + i * ldc;

			_mm256_storeu_ps(ci, _mm256_add_ps(_mm256_loadu_ps(ci), acc[i][0]));
			_mm256_storeu_ps(ci + 8, _mm256_add_ps(_mm256_loadu_ps(ci + 8), acc[i][1]));
		}
		return;
	}
	for (int i = 0; i < MR; i++) {
		_mm256_storeu_ps(tmp + i * NR, acc[i][0]);
		_mm256_storeu_ps(tmp + i * NR + 8, acc[i][1]);
	}
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] += tmp[i * NR + j];
}

/* C[MR x NR512] += a * b, as kernel_6x16 with zmm registers. */
__attribute__((target("avx512f")))
static void kernel_6x32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
			int mr, int nr)
{
	__m512 acc[MR][2];
	float tmp[MR * NR512];

	for (int i = 0; i < MR; i++)
		acc[i][0] = acc[i][1] = _mm512_setzero_ps();
	for (int64_t p = 0; p < kc; p++, a += MR, b += NR512) {
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);

		for (int i = 0; i < MR; i++) {
			__m512 ai = _mm512_set1_ps(a[i]);

			acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	if (mr == MR && nr == NR512) {
		for (int i = 0; i < MR; i++) {
			float *ci = c + i * ldc;

			_mm512_storeu_ps(ci, _mm512_add_ps(_mm512_loadu_ps(ci), acc[i][0]));
			_mm512_storeu_ps(ci + 16, _mm512_add_ps(_mm512_loadu_ps(ci + 16), acc[i][1]));
		}
		return;
	}
	for (int i = 0; i < MR; i++) {
		_mm512_storeu_ps(tmp + i * NR512, acc[i][0]);
		_mm512_storeu_ps(tmp + i * NR512 + 16, acc[i][1]);
	}
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] += tmp[i * NR512 + j];
}

/*
 * B[kb.., jb..] (kc x nc, element (p, j) at B[p * bp + j * bj]) into
 * strips of nr columns, zero past n. A transposed B (bp 1) is read down
 * its rows, the way it lies in memory.
 */
static void pack_b(const float *B, int64_t bp, int64_t bj, int64_t kc, int64_t nc, int64_t nr,
		   float *out)
{
	for (int64_t js = 0; js < nc; js += nr, out += kc * nr) {
		int64_t w = nc - js < nr ? nc - js : nr;

		if (bj == 1) {
			for (int64_t p = 0; p < kc; p++) {
				memcpy(out + p * nr, B + p * bp + js, (size_t)w * sizeof(float));
				if (w < nr)
					memset(out + p * nr + w, 0, (size_t)(nr - w) * sizeof(float));
			}
			continue;
		}
		for (int64_t j = 0; j < nr; j++) {
			const float *col = j < w ? B + (js + j) * bj : NULL;

			for (int64_t p = 0; p < kc; p++)
				out[p * nr + j] = col ? col[p * bp] : 0.0f;
		}
	}
}

/* alpha * A[i.., kb..] (mr x kc) as kc groups of MR, zero past mr. */
static void pack_a(const float *A, int64_t ai, int64_t ap, int64_t mr, int64_t kc, float alpha,
		   float *out)
{
	for (int64_t p = 0; p < kc; p++, out += MR)
		for (int64_t i = 0; i < MR; i++)
			out[i] = i < mr ? alpha * A[i * ai + p * ap] : 0.0f;
}

enum isa { ISA_UNKNOWN, ISA_NONE, ISA_AVX2, ISA_AVX512 };

/* The widest kernel this CPU runs, asked of CPUID once. */
static enum isa host_isa(void)
{
	static int known;	/* enum isa */

	if (!__atomic_load_n(&known, __ATOMIC_RELAXED))
		__atomic_store_n(&known, __builtin_cpu_supports("avx512f") ? ISA_AVX512 :
				 __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ?
				 ISA_AVX2 : ISA_NONE, __ATOMIC_RELAXED);
	return (enum isa)__atomic_load_n(&known, __ATOMIC_RELAXED);
}

int npu_gemm_fast(const float *A, uint64_t ai, uint64_t ap, const float *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	enum isa isa = host_isa();
	const char *force = getenv("NPU_FWSIM_ISA");	/* "portable", "avx2": for benches */
	int64_t nr;
	float *bpack, *apack;

	if (force && !strcmp(force, "avx2") && isa == ISA_AVX512)
		isa = ISA_AVX2;
	if (isa == ISA_NONE || (force && !strcmp(force, "portable")))
		return 1;
	nr = isa == ISA_AVX512 ? NR512 : NR;
	bpack = aligned_alloc(64, sizeof(float) * KC * (NC + NR512));
	apack = aligned_alloc(64, sizeof(float) * KC * MR);
	if (!bpack || !apack) {
		free(bpack);
		free(apack);
		return 1;		/* the portable loop needs no memory */
	}
	for (uint64_t kb = 0; kb < k; kb += KC) {
		int64_t kc = (int64_t)(k - kb < KC ? k - kb : KC);

		for (uint64_t jb = 0; jb < n; jb += NC) {
			int64_t nc = (int64_t)(n - jb < NC ? n - jb : NC);

			pack_b(B + kb * bp + jb * bj, (int64_t)bp, (int64_t)bj, kc, nc, nr, bpack);
			for (uint64_t i = begin; i < end; i += MR) {
				int64_t mr = (int64_t)(end - i < MR ? end - i : MR);

				if (cancelled(cancel)) {
					free(bpack);
					free(apack);
					return -1;
				}
				pack_a(A + i * ai + kb * ap, (int64_t)ai, (int64_t)ap, mr, kc, alpha,
				       apack);
				for (int64_t js = 0; js < nc; js += nr) {
					float *c = C + i * ci + jb + (uint64_t)js;
					int w = (int)(nc - js < nr ? nc - js : nr);

					if (isa == ISA_AVX512)
						kernel_6x32(kc, apack, bpack + js * kc, c,
							    (int64_t)ci, (int)mr, w);
					else
						kernel_6x16(kc, apack, bpack + js * kc, c,
							    (int64_t)ci, (int)mr, w);
				}
			}
		}
	}
	free(bpack);
	free(apack);
	return 0;
}

#else

int npu_gemm_fast(const float *A, uint64_t ai, uint64_t ap, const float *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	(void)A, (void)ai, (void)ap, (void)B, (void)bp, (void)bj, (void)C, (void)ci, (void)n, (void)k;
	(void)alpha, (void)begin, (void)end, (void)cancel;
	return 1;		/* no fast path on this host: the portable loop */
}

#endif
