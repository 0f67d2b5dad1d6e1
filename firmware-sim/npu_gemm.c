// SPDX-License-Identifier: MIT
/*
 * The op library's fast GEMM: C[i][j] (+)= alpha * sum_p A[i][p] B[p][j]
 * over a block of rows and columns of C, with C's rows contiguous.
 * Blocked for the caches: KC rows of B and NC columns at a time, packed
 * into strips of NR columns (by pack_b for a B in memory, or by the
 * caller's packer for a B made on the fly, the convolution's im2col),
 * and MR rows of A packed with alpha applied, computed by an MR x NR
 * register-blocked kernel: AVX-512 or AVX2 + FMA as the host CPU has them
 * (asked once, of CPUID), else the portable loops of npu_ops.c
 * (NPU_FWSIM_ISA=avx2 or =portable picks a narrower one). Products sum in
 * order of p within a KC block, fused; the result differs from the
 * portable loop's in rounding only.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npu_ops_int.h"

/* B in memory: element (p, j) at B[p * bp + j * bj]. */
struct mem_b {
	const float *B;
	int64_t bp, bj;
};

/*
 * Rows [kb, kb + kc) and columns [jb, jb + nc) of a B in memory into
 * strips of nr columns, zero past nc. A transposed B (bp 1) is read down
 * its rows, the way it lies in memory.
 */
static void pack_b(const void *ctx, uint64_t kb, int64_t kc, uint64_t jb, int64_t nc, int64_t nr,
		   float *out)
{
	const struct mem_b *m = ctx;
	const float *B = m->B + (int64_t)kb * m->bp + (int64_t)jb * m->bj;

	for (int64_t js = 0; js < nc; js += nr, out += kc * nr) {
		int64_t w = nc - js < nr ? nc - js : nr;

		if (m->bj == 1) {
			for (int64_t p = 0; p < kc; p++)
				npu_gemm_put(out + p * nr, B + p * m->bp + js, w, nr);
			continue;
		}
		for (int64_t j = 0; j < nr; j++) {
			const float *col = j < w ? B + (js + j) * m->bj : NULL;

			for (int64_t p = 0; p < kc; p++)
				out[p * nr + j] = col ? col[p * m->bp] : 0.0f;
		}
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR	6
#define NR	16		/* AVX2: two ymm of columns */
#define NR512	32		/* AVX-512: two zmm */
#define KC	256
#define NC	NPU_GEMM_NC

/*
 * C[MR x NR] (+)= a (kc x MR, packed) * b (kc x NR, packed); mr x nr of it
 * real. add 0 stores the sum, for a C whose old contents do not count.
 */
__attribute__((target("avx2,fma")))
static void kernel_6x16(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
			int mr, int nr, int add)
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

			if (add) {
				acc[i][0] = _mm256_add_ps(_mm256_loadu_ps(ci), acc[i][0]);
				acc[i][1] = _mm256_add_ps(_mm256_loadu_ps(ci + 8), acc[i][1]);
			}
			_mm256_storeu_ps(ci, acc[i][0]);
			_mm256_storeu_ps(ci + 8, acc[i][1]);
		}
		return;
	}
	for (int i = 0; i < MR; i++) {
		_mm256_storeu_ps(tmp + i * NR, acc[i][0]);
		_mm256_storeu_ps(tmp + i * NR + 8, acc[i][1]);
	}
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] = (add ? c[i * ldc + j] : 0.0f) + tmp[i * NR + j];
}

/* C[MR x NR512] (+)= a * b, as kernel_6x16 with zmm registers. */
__attribute__((target("avx512f")))
static void kernel_6x32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
			int mr, int nr, int add)
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

			if (add) {
				acc[i][0] = _mm512_add_ps(_mm512_loadu_ps(ci), acc[i][0]);
				acc[i][1] = _mm512_add_ps(_mm512_loadu_ps(ci + 16), acc[i][1]);
			}
			_mm512_storeu_ps(ci, acc[i][0]);
			_mm512_storeu_ps(ci + 16, acc[i][1]);
		}
		return;
	}
	for (int i = 0; i < MR; i++) {
		_mm512_storeu_ps(tmp + i * NR512, acc[i][0]);
		_mm512_storeu_ps(tmp + i * NR512 + 16, acc[i][1]);
	}
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] = (add ? c[i * ldc + j] : 0.0f) + tmp[i * NR512 + j];
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

/* The widest kernel this CPU runs (asked of CPUID once), or a narrower forced one. */
static enum isa host_isa(void)
{
	static int known;	/* enum isa */
	const char *force = getenv("NPU_FWSIM_ISA");	/* "portable", "avx2": for benches */
	enum isa isa;

	if (!__atomic_load_n(&known, __ATOMIC_RELAXED))
		__atomic_store_n(&known, __builtin_cpu_supports("avx512f") ? ISA_AVX512 :
				 __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ?
				 ISA_AVX2 : ISA_NONE, __ATOMIC_RELAXED);
	isa = (enum isa)__atomic_load_n(&known, __ATOMIC_RELAXED);
	if (force && !strcmp(force, "avx2") && isa == ISA_AVX512)
		return ISA_AVX2;
	return force && !strcmp(force, "portable") ? ISA_NONE : isa;
}

bool npu_gemm_has_fast(void)
{
	return host_isa() != ISA_NONE;
}

/*
 * The packed panels, one pair per thread for its life: allocated per
 * call they are mmap()ed and faulted in page by page every time, which
 * costs a 512-cubed GEMM a third of its time.
 */
struct panels {
	float *b, *a;
};

static pthread_key_t panels_key;
static pthread_once_t panels_once = PTHREAD_ONCE_INIT;
static bool panels_keyed;

static void panels_free(void *p)
{
	struct panels *pl = p;

	free(pl->b);
	free(pl->a);
	free(pl);
}

static void panels_init(void)
{
	panels_keyed = !pthread_key_create(&panels_key, panels_free);
}

static struct panels *thread_panels(void)
{
	struct panels *pl;

	pthread_once(&panels_once, panels_init);
	if (!panels_keyed)
		return NULL;
	pl = pthread_getspecific(panels_key);
	if (pl)
		return pl;
	pl = malloc(sizeof(*pl));
	if (!pl)
		return NULL;
	pl->b = aligned_alloc(64, sizeof(float) * KC * (NC + NR512));
	pl->a = aligned_alloc(64, sizeof(float) * KC * MR);
	if (!pl->b || !pl->a || pthread_setspecific(panels_key, pl)) {
		panels_free(pl);
		return NULL;
	}
	return pl;
}

int npu_gemm_packed(const float *A, uint64_t ai, uint64_t ap, npu_gemm_pack_fn pack,
		    const void *ctx, float *C, uint64_t ci, uint64_t i0, uint64_t i1, uint64_t j0,
		    uint64_t j1, uint64_t k, float alpha, bool add, const uint32_t *cancel)
{
	enum isa isa = host_isa();
	int64_t nr = isa == ISA_AVX512 ? NR512 : NR;
	struct panels *pl;
	float *bpack, *apack;

	if (isa == ISA_NONE)
		return 1;
	if (!k) {
		for (uint64_t i = i0; i < i1 && !add; i++)
			memset(C + i * ci + j0, 0, (j1 - j0) * sizeof(float));
		return 0;
	}
	pl = thread_panels();
	if (!pl)
		return 1;		/* the portable loops need no memory */
	bpack = pl->b;
	apack = pl->a;
	for (uint64_t jb = j0; jb < j1; jb += NC) {
		int64_t nc = (int64_t)(j1 - jb < NC ? j1 - jb : NC);

		for (uint64_t kb = 0; kb < k; kb += KC) {
			int64_t kc = (int64_t)(k - kb < KC ? k - kb : KC);

			pack(ctx, kb, kc, jb, nc, nr, bpack);
			for (uint64_t i = i0; i < i1; i += MR) {
				int64_t mr = (int64_t)(i1 - i < MR ? i1 - i : MR);

				if (npu_cancelled(cancel))
					return -1;
				pack_a(A + i * ai + kb * ap, (int64_t)ai, (int64_t)ap, mr, kc, alpha,
				       apack);
				for (int64_t js = 0; js < nc; js += nr) {
					float *c = C + i * ci + jb + (uint64_t)js;
					int w = (int)(nc - js < nr ? nc - js : nr);
					int acc = add || kb;

					if (isa == ISA_AVX512)
						kernel_6x32(kc, apack, bpack + js * kc, c,
							    (int64_t)ci, (int)mr, w, acc);
					else
						kernel_6x16(kc, apack, bpack + js * kc, c,
							    (int64_t)ci, (int)mr, w, acc);
				}
			}
		}
	}
	return 0;
}

#else

bool npu_gemm_has_fast(void)
{
	return false;
}

int npu_gemm_packed(const float *A, uint64_t ai, uint64_t ap, npu_gemm_pack_fn pack,
		    const void *ctx, float *C, uint64_t ci, uint64_t i0, uint64_t i1, uint64_t j0,
		    uint64_t j1, uint64_t k, float alpha, bool add, const uint32_t *cancel)
{
	(void)A, (void)ai, (void)ap, (void)pack, (void)ctx, (void)C, (void)ci, (void)i0, (void)i1;
	(void)j0, (void)j1, (void)k, (void)alpha, (void)add, (void)cancel;
	return 1;		/* no fast path on this host: the portable loops */
}

#endif

int npu_gemm_fast(const float *A, uint64_t ai, uint64_t ap, const float *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	struct mem_b m = { B, (int64_t)bp, (int64_t)bj };

	return npu_gemm_packed(A, ai, ap, pack_b, &m, C, ci, begin, end, 0, n, k, alpha, true,
			       cancel);
}
