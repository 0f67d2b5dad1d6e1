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
 * strips of nr columns, zero past nc. A B with contiguous rows is read a
 * row at a time, each row's nc values dealt out to the strips: one
 * sequential stream, where a strip at a time would walk all kc rows
 * nc / nr times, a page per row when rows are 4 KiB apart. A transposed
 * B (bp 1) is read down its rows, the way it lies in memory.
 */
static void pack_b(const void *ctx, uint64_t kb, int64_t kc, uint64_t jb, int64_t nc, int64_t nr,
		   float *out)
{
	const struct mem_b *m = ctx;
	const float *B = m->B + (int64_t)kb * m->bp + (int64_t)jb * m->bj;

	if (m->bj == 1) {
		for (int64_t p = 0; p < kc; p++) {
			const float *row = B + p * m->bp;
			float *o = out + p * nr;

			for (int64_t js = 0; js < nc; js += nr, o += kc * nr)
				npu_gemm_put(o, row + js, nc - js < nr ? nc - js : nr, nr);
		}
		return;
	}
	for (int64_t js = 0; js < nc; js += nr, out += kc * nr) {
		int64_t w = nc - js < nr ? nc - js : nr;

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
 * The kernels: C[MR x NR] (+)= a (MR x kc) * b (kc x NR), mr x nr of it
 * real; add 0 stores the sum, for a C whose old contents do not count.
 * b's row p at b + p * ldb: NR apart in a strip packed per call, wider
 * in weights packed once (NPU_OP_PANEL columns a row). a is read one of
 * two ways, each a kernel: packed, kc groups of MR (zero past mr), or in
 * place, row i at a + i * lda and contiguous, which saves packing A when
 * it needs no scaling (rows past mr repeat row mr - 1, never stored).
 */
/* Rows [0, mr) and columns [0, nr) of an AVX2 kernel's MR x NR sums into C. */
__attribute__((target("avx2,fma")))
static inline void store_6x16(__m256 acc[MR][2], float *c, int64_t ldc, int mr, int nr, int add)
{
	float tmp[MR * NR];

	if (nr == NR) {
		for (int i = 0; i < mr; i++) {
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
	for (int i = 0; i < mr; i++) {
		_mm256_storeu_ps(tmp + i * NR, acc[i][0]);
		_mm256_storeu_ps(tmp + i * NR + 8, acc[i][1]);
	}
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] = (add ? c[i * ldc + j] : 0.0f) + tmp[i * NR + j];
}

__attribute__((target("avx2,fma")))
static void kernel_6x16(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
			int64_t ldc, int mr, int nr, int add)
{
	__m256 acc[MR][2];

	for (int i = 0; i < MR; i++)
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	for (int64_t p = 0; p < kc; p++, a += MR, b += ldb) {
		__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);

		for (int i = 0; i < MR; i++) {
			__m256 ai = _mm256_broadcast_ss(a + i);

			acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	store_6x16(acc, c, ldc, mr, nr, add);
}

__attribute__((target("avx2,fma")))
static void kernel_6x16_rows(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb,
			     float *c, int64_t ldc, int mr, int nr, int add)
{
	const float *r[MR];
	__m256 acc[MR][2];

	for (int i = 0; i < MR; i++) {
		r[i] = a + (i < mr ? i : mr - 1) * lda;
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	}
	for (int64_t p = 0; p < kc; p++, b += ldb) {
		__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);

		for (int i = 0; i < MR; i++) {
			__m256 ai = _mm256_broadcast_ss(r[i] + p);

			acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	store_6x16(acc, c, ldc, mr, nr, add);
}

/* The AVX-512 kernels: as the AVX2 ones, with zmm registers. */
__attribute__((target("avx512f")))
static inline void store_6x32(__m512 acc[MR][2], float *c, int64_t ldc, int mr, int nr, int add)
{
	float tmp[MR * NR512];

	if (nr == NR512) {
		for (int i = 0; i < mr; i++) {
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
	for (int i = 0; i < mr; i++) {
		_mm512_storeu_ps(tmp + i * NR512, acc[i][0]);
		_mm512_storeu_ps(tmp + i * NR512 + 16, acc[i][1]);
	}
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++)
			c[i * ldc + j] = (add ? c[i * ldc + j] : 0.0f) + tmp[i * NR512 + j];
}

__attribute__((target("avx512f")))
static void kernel_6x32(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
			int64_t ldc, int mr, int nr, int add)
{
	__m512 acc[MR][2];

	for (int i = 0; i < MR; i++)
		acc[i][0] = acc[i][1] = _mm512_setzero_ps();
	for (int64_t p = 0; p < kc; p++, a += MR, b += ldb) {
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);

		for (int i = 0; i < MR; i++) {
			__m512 ai = _mm512_set1_ps(a[i]);

			acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	store_6x32(acc, c, ldc, mr, nr, add);
}

__attribute__((target("avx512f")))
static void kernel_6x32_rows(int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb,
			     float *c, int64_t ldc, int mr, int nr, int add)
{
	const float *r[MR];
	__m512 acc[MR][2];

	for (int i = 0; i < MR; i++) {
		r[i] = a + (i < mr ? i : mr - 1) * lda;
		acc[i][0] = acc[i][1] = _mm512_setzero_ps();
	}
	for (int64_t p = 0; p < kc; p++, b += ldb) {
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);

		for (int i = 0; i < MR; i++) {
			__m512 ai = _mm512_set1_ps(r[i][p]);

			acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	store_6x32(acc, c, ldc, mr, nr, add);
}

/*
 * The shifted GEMM's kernel: C[MRS x NRS] (+)= a (kc x MRS, packed) times
 * rows of B read in place, row p at x + off[p]; mr rows of it real.
 */
#define MRS	8
#define NRS	48		/* three zmm */

__attribute__((target("avx512f")))
static void kernel_8x48(int64_t kc, const float *a, const float *x, const int32_t *off, float *c,
			int64_t ldc, int mr, int add)
{
	__m512 acc[MRS][3];

	for (int i = 0; i < MRS; i++)
		acc[i][0] = acc[i][1] = acc[i][2] = _mm512_setzero_ps();
	for (int64_t p = 0; p < kc; p++, a += MRS) {
		const float *b = x + off[p];
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
		__m512 b2 = _mm512_loadu_ps(b + 32);

		for (int i = 0; i < MRS; i++) {
			__m512 ai = _mm512_set1_ps(a[i]);

			acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
			acc[i][2] = _mm512_fmadd_ps(ai, b2, acc[i][2]);
		}
	}
	for (int i = 0; i < mr; i++) {
		float *ci = c + i * ldc;

		for (int v = 0; v < 3; v++) {
			__m512 r = acc[i][v];

			if (add)
				r = _mm512_add_ps(_mm512_loadu_ps(ci + 16 * v), r);
			_mm512_storeu_ps(ci + 16 * v, r);
		}
	}
}

/* The shifted GEMM's AVX2 kernel: C[MR x NR] (+)= a (kc x MR) times rows at x + off[p]. */
__attribute__((target("avx2,fma")))
static void kernel_6x16_shifted(int64_t kc, const float *a, const float *x, const int32_t *off,
				float *c, int64_t ldc, int mr, int add)
{
	__m256 acc[MR][2];

	for (int i = 0; i < MR; i++)
		acc[i][0] = acc[i][1] = _mm256_setzero_ps();
	for (int64_t p = 0; p < kc; p++, a += MR) {
		const float *b = x + off[p];
		__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);

		for (int i = 0; i < MR; i++) {
			__m256 ai = _mm256_broadcast_ss(a + i);

			acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
		}
	}
	store_6x16(acc, c, ldc, mr, NR, add);	/* whole tiles: C has room */
}

/* alpha * A[i.., kb..] (mr x kc) as kc groups of `full`, zero past mr. */
static void pack_a(const float *A, int64_t ai, int64_t ap, int64_t mr, int64_t kc, float alpha,
		   int64_t full, float *out)
{
	for (int64_t p = 0; p < kc; p++, out += full)
		for (int64_t i = 0; i < full; i++)
			out[i] = i < mr ? alpha * A[i * ai + p * ap] : 0.0f;
}

/* The widest kernel this CPU runs (asked of CPUID once), or a narrower forced one. */
enum npu_isa npu_host_isa(void)
{
	static int known;	/* enum npu_isa */
	const char *force = getenv("NPU_FWSIM_ISA");	/* "portable", "avx2": for benches */
	enum npu_isa isa;

	if (!__atomic_load_n(&known, __ATOMIC_RELAXED))
		__atomic_store_n(&known, __builtin_cpu_supports("avx512f") ? NPU_ISA_AVX512 :
				 __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ?
				 NPU_ISA_AVX2 : NPU_ISA_NONE, __ATOMIC_RELAXED);
	isa = (enum npu_isa)__atomic_load_n(&known, __ATOMIC_RELAXED);
	if (force && !strcmp(force, "avx2") && isa == NPU_ISA_AVX512)
		return NPU_ISA_AVX2;
	return force && !strcmp(force, "portable") ? NPU_ISA_NONE : isa;
}

bool npu_gemm_has_fast(void)
{
	return npu_host_isa() != NPU_ISA_NONE;
}

/*
 * The packed panels, one pair per thread for its life: allocated per
 * call they are mmap()ed and faulted in page by page every time, which
 * costs a 512-cubed GEMM a third of its time.
 */
struct panels {
	float *b, *a;
	float *scratch[NPU_GEMM_SCRATCH];	/* grown as asked, kept */
	size_t scratch_n[NPU_GEMM_SCRATCH];
};

static pthread_key_t panels_key;
static pthread_once_t panels_once = PTHREAD_ONCE_INIT;
static bool panels_keyed;

static void panels_free(void *p)
{
	struct panels *pl = p;

	free(pl->b);
	free(pl->a);
	for (int i = 0; i < NPU_GEMM_SCRATCH; i++)
		free(pl->scratch[i]);
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
	pl = calloc(1, sizeof(*pl));
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

/*
 * B block by block, from the packer (P NULL) or from weights packed once
 * in panels (P, k rows of NPU_OP_PANEL columns each, panel after panel):
 * a block's strip of nr columns is then read where it lies, with rows
 * NPU_OP_PANEL apart (an AVX2 strip is half a panel). A is read in place
 * when its rows are contiguous and alpha is 1, else packed per block.
 */
static int gemm_blocks(const float *A, uint64_t ai, uint64_t ap, npu_gemm_pack_fn pack,
		       const void *ctx, const float *P, float *C, uint64_t ci, uint64_t i0,
		       uint64_t i1, uint64_t j0, uint64_t j1, uint64_t k, float alpha, bool add,
		       const uint32_t *cancel)
{
	enum npu_isa isa = npu_host_isa();
	int64_t nr = isa == NPU_ISA_AVX512 ? NR512 : NR;
	bool rows = ap == 1 && alpha == 1.0f;
	struct panels *pl;
	float *bpack, *apack;

	if (isa == NPU_ISA_NONE)
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

			if (!P)
				pack(ctx, kb, kc, jb, nc, nr, bpack);
			for (uint64_t i = i0; i < i1; i += MR) {
				int64_t mr = (int64_t)(i1 - i < MR ? i1 - i : MR);
				const float *a = A + i * ai + kb * ap;

				if (npu_cancelled(cancel))
					return -1;
				if (!rows)
					pack_a(a, (int64_t)ai, (int64_t)ap, mr, kc, alpha, MR, apack);
				for (int64_t js = 0; js < nc; js += nr) {
					uint64_t j = jb + (uint64_t)js;
					float *c = C + i * ci + j;
					int w = (int)(nc - js < nr ? nc - js : nr);
					int acc = add || kb;
					const float *b = P ? P + j / NPU_OP_PANEL * k * NPU_OP_PANEL +
							     kb * NPU_OP_PANEL + j % NPU_OP_PANEL :
							 bpack + js * kc;
					int64_t ldb = P ? NPU_OP_PANEL : nr;

					if (isa == NPU_ISA_AVX512 && rows)
						kernel_6x32_rows(kc, a, (int64_t)ai, b, ldb, c,
								 (int64_t)ci, (int)mr, w, acc);
					else if (isa == NPU_ISA_AVX512)
						kernel_6x32(kc, apack, b, ldb, c, (int64_t)ci,
							    (int)mr, w, acc);
					else if (rows)
						kernel_6x16_rows(kc, a, (int64_t)ai, b, ldb, c,
								 (int64_t)ci, (int)mr, w, acc);
					else
						kernel_6x16(kc, apack, b, ldb, c, (int64_t)ci,
							    (int)mr, w, acc);
				}
			}
		}
	}
	return 0;
}

int npu_gemm_packed(const float *A, uint64_t ai, uint64_t ap, npu_gemm_pack_fn pack,
		    const void *ctx, float *C, uint64_t ci, uint64_t i0, uint64_t i1, uint64_t j0,
		    uint64_t j1, uint64_t k, float alpha, bool add, const uint32_t *cancel)
{
	return gemm_blocks(A, ai, ap, pack, ctx, NULL, C, ci, i0, i1, j0, j1, k, alpha, add,
			   cancel);
}

int npu_gemm_panels(const float *A, uint64_t ai, uint64_t ap, const float *P, float *C,
		    uint64_t ci, uint64_t n, uint64_t k, float alpha, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	return gemm_blocks(A, ai, ap, NULL, NULL, P, C, ci, begin, end, 0, n, k, alpha, true,
			   cancel);
}

float *npu_gemm_scratch(unsigned int slot, size_t n)
{
	struct panels *pl = npu_host_isa() == NPU_ISA_NONE ? NULL : thread_panels();
	float *p;

	if (!pl || slot >= NPU_GEMM_SCRATCH)
		return NULL;
	if (pl->scratch_n[slot] >= n)
		return pl->scratch[slot];
	p = aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
	if (!p)
		return NULL;
	free(pl->scratch[slot]);
	pl->scratch[slot] = p;
	pl->scratch_n[slot] = n;
	return p;
}

int npu_gemm_shifted(const float *A, uint64_t ai, uint64_t m, const float *X, const int32_t *off,
		     uint64_t k, float *C, uint64_t ci, uint64_t n, const uint32_t *cancel)
{
	enum npu_isa isa = npu_host_isa();
	int64_t mrf = isa == NPU_ISA_AVX512 ? MRS : MR, nrf = isa == NPU_ISA_AVX512 ? NRS : NR;
	uint64_t blocks = (m + (uint64_t)mrf - 1) / (uint64_t)mrf;
	float *apack;

	if (isa == NPU_ISA_NONE)
		return 1;
	apack = npu_gemm_scratch(NPU_GEMM_SCRATCH - 1, blocks * (uint64_t)mrf * KC);
	if (!apack)
		return 1;
	for (uint64_t kb = 0; kb < k; kb += KC) {
		int64_t kc = (int64_t)(k - kb < KC ? k - kb : KC);

		for (uint64_t b = 0; b < blocks; b++) {
			uint64_t i = b * (uint64_t)mrf;

			pack_a(A + i * ai + kb, (int64_t)ai, 1, (int64_t)(m - i < (uint64_t)mrf ?
			       m - i : (uint64_t)mrf), kc, 1.0f, mrf, apack + b * (uint64_t)(mrf * kc));
		}
		for (uint64_t t = 0; t < n; t += (uint64_t)nrf) {
			if (npu_cancelled(cancel))
				return -1;
			for (uint64_t b = 0; b < blocks; b++) {
				uint64_t i = b * (uint64_t)mrf;
				int mr = (int)(m - i < (uint64_t)mrf ? m - i : (uint64_t)mrf);
				const float *ap = apack + b * (uint64_t)(mrf * kc);

				if (isa == NPU_ISA_AVX512)
					kernel_8x48(kc, ap, X + t, off + kb, C + i * ci + t,
						    (int64_t)ci, mr, kb > 0);
				else
					kernel_6x16_shifted(kc, ap, X + t, off + kb,
							    C + i * ci + t, (int64_t)ci, mr, kb > 0);
			}
		}
	}
	return 0;
}

#else

float *npu_gemm_scratch(unsigned int slot, size_t n)
{
	(void)slot, (void)n;
	return NULL;
}

int npu_gemm_shifted(const float *A, uint64_t ai, uint64_t m, const float *X, const int32_t *off,
		     uint64_t k, float *C, uint64_t ci, uint64_t n, const uint32_t *cancel)
{
	(void)A, (void)ai, (void)m, (void)X, (void)off, (void)k, (void)C, (void)ci, (void)n;
	(void)cancel;
	return 1;
}

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

int npu_gemm_panels(const float *A, uint64_t ai, uint64_t ap, const float *P, float *C,
		    uint64_t ci, uint64_t n, uint64_t k, float alpha, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	(void)A, (void)ai, (void)ap, (void)P, (void)C, (void)ci, (void)n, (void)k, (void)alpha;
	(void)begin, (void)end, (void)cancel;
	return 1;
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
