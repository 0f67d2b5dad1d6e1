// SPDX-License-Identifier: MIT
/*
 * GEMM on bytes (firmware 0.9): i8 or u8 A and B, i32 C = A B (+ C), as
 * an NPU's int8 MACs compute it. Every sum is exact modulo 2^32, so every
 * path here gives the same bits.
 *
 * Where the host has AVX512_VNNI, VPDPBUSD multiplies four u8 by four s8
 * and adds the four products to an i32: 64 multiply-adds an instruction,
 * four times an f32 FMA's. Either operand may be the unsigned one (A's
 * broadcast or B's vector): the kernel takes the roles that need the
 * fewest shifts, none for u8 x i8 and i8 x u8. A shifted operand moves
 * by 128 (an xor of its top bit) and the shift comes back in closed form.
 * With A' = A + da and B' = B + db (da, db in {0, 128, -128}), over a
 * block of kc values of p:
 *
 *   sum A B = sum A' B' - db sum A - da sum B - kc da db
 *
 * The packers take each row's and each column's sums as they go, when a
 * shift asks for them, so the kernel adds the correction as it stores.
 * Elsewhere (or for a strided C, or with no memory for the panels) the
 * portable loops run.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "npu_ops.h"
#include "npu_ops_int.h"

static inline int32_t byte_at(const struct npu_bytes *m, uint64_t r, uint64_t c)
{
	uint8_t v = m->p[r * m->s0 + c * m->s1];

	return m->sgn ? (int32_t)(int8_t)v : (int32_t)v;
}

/* C[i][j] += sum_p A B, wrapping, for rows [begin, end). */
static int int8_portable(const struct npu_bytes *A, const struct npu_bytes *B, int32_t *C,
			 uint64_t ci, uint64_t cj, uint64_t n, uint64_t k, uint64_t begin,
			 uint64_t end, const uint32_t *cancel)
{
	for (uint64_t i = begin; i < end; i++) {
		int32_t *c = C + i * ci;

		if (npu_cancelled(cancel))
			return -1;
		for (uint64_t p = 0; p < k; p++) {
			uint32_t a = (uint32_t)byte_at(A, i, p);

			for (uint64_t j = 0; j < n; j++)
				c[j * cj] = (int32_t)((uint32_t)c[j * cj] +
						      a * (uint32_t)byte_at(B, p, j));
		}
	}
	return 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * 8 rows by 48 columns of i32 sums: 24 zmm, and three loads of B and
 * eight broadcasts per 24 VPDPBUSD (a 12 x 32 tile ran at 0.85 of this).
 */
#define MR	8
#define NV	3
#define NR	(16 * NV)
#define KC	256		/* 64 quads of p */
#define NC	NPU_GEMM_NC

bool npu_gemm_int8_native(void)
{
	static int known;	/* 1 no, 2 yes */

	if (!__atomic_load_n(&known, __ATOMIC_RELAXED))
		__atomic_store_n(&known, __builtin_cpu_supports("avx512vnni") ? 2 : 1,
				 __ATOMIC_RELAXED);
	return known == 2 && npu_host_isa() == NPU_ISA_AVX512;
}

/* Four bytes at p (unaligned), each xor x. */
static inline uint32_t quad(const uint8_t *p, uint32_t x)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v ^ x;
}

/* Bytes [0, n) of p, n < 4, xor x, zero above. */
static inline uint32_t quad_tail(const uint8_t *p, uint64_t step, int64_t n, uint8_t x)
{
	uint32_t v = 0;

	for (int64_t b = 0; b < n; b++)
		v |= (uint32_t)(uint8_t)(p[(uint64_t)b * step] ^ x) << (8 * b);
	return v;
}

/*
 * Per column j of the block, corr[j] = -da sum_p B - kc da db (the part
 * of the correction a column owes), rows walked in order.
 */
static void column_corr(const struct npu_bytes *B, uint64_t kb, int64_t kc, uint64_t jb, int64_t nc,
			int32_t da, int32_t db, int32_t *corr)
{
	uint32_t *s = (uint32_t *)corr;

	memset(s, 0, (size_t)nc * sizeof(*s));
	for (int64_t p = 0; p < kc && da; p++) {
		const uint8_t *row = B->p + (kb + (uint64_t)p) * B->s0 + jb * B->s1;

		if (B->s1 == 1 && B->sgn)
			for (int64_t j = 0; j < nc; j++)
				s[j] += (uint32_t)(int32_t)(int8_t)row[j];
		else if (B->s1 == 1)
			for (int64_t j = 0; j < nc; j++)
				s[j] += row[j];
		else
			for (int64_t j = 0; j < nc; j++)
				s[j] += (uint32_t)byte_at(B, kb + (uint64_t)p, jb + (uint64_t)j);
	}
	for (int64_t j = 0; j < nc; j++)
		corr[j] = (int32_t)(0u - (uint32_t)da * s[j] - (uint32_t)(kc * da * db));
}

/*
 * Rows [kb, kb + kc) and columns [jb, jb + nc) of B, each value xor x
 * (0x80: shifted), into strips of NR columns: per quad of rows q, the
 * strip's columns as four bytes each, zero past nc and kc.
 */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void pack_b(const struct npu_bytes *B, uint64_t kb, int64_t kc, uint64_t jb, int64_t nc,
		   uint8_t x, uint8_t *out)
{
	int64_t kc4 = (kc + 3) / 4;
	__m128i xv = _mm_set1_epi8((char)x);

	for (int64_t js = 0; js < nc; js += NR, out += kc4 * 4 * NR) {
		int64_t w = nc - js < NR ? nc - js : NR;

		if (B->s0 == 1) {	/* B transposed: a column's quad is one load */
			uint32_t *o = (uint32_t *)out;

			for (int64_t j = 0; j < NR; j++) {
				const uint8_t *col = B->p + kb + (jb + (uint64_t)(js + j)) * B->s1;
				int64_t q = 0;

				for (; j < w && 4 * q + 4 <= kc; q++)
					o[q * NR + j] = quad(col + 4 * q, x * 0x01010101u);
				for (; q < kc4; q++)
					o[q * NR + j] = j < w ? quad_tail(col + 4 * q, 1, kc - 4 * q, x) : 0;
			}
			continue;
		}
		for (int64_t q = 0; q < kc4; q++) {
			uint8_t *o = out + q * 4 * NR;
			int64_t p = 4 * q;

			if (B->s1 == 1 && w == NR && p + 4 <= kc) {
				const uint8_t *r = B->p + (kb + (uint64_t)p) * B->s0 + jb + (uint64_t)js;

				for (int h = 0; h < NR; h += 16) {
					__m128i r0 = _mm_loadu_si128((const __m128i *)(r + h));
					__m128i r1 = _mm_loadu_si128((const __m128i *)(r + B->s0 + h));
					__m128i r2 = _mm_loadu_si128((const __m128i *)(r + 2 * B->s0 + h));
					__m128i r3 = _mm_loadu_si128((const __m128i *)(r + 3 * B->s0 + h));
					__m128i a, b, c, d;

					r0 = _mm_xor_si128(r0, xv), r1 = _mm_xor_si128(r1, xv);
					r2 = _mm_xor_si128(r2, xv), r3 = _mm_xor_si128(r3, xv);
					/* 4 rows x 16 columns into 16 columns of 4 bytes */
					a = _mm_unpacklo_epi8(r0, r1), b = _mm_unpackhi_epi8(r0, r1);
					c = _mm_unpacklo_epi8(r2, r3), d = _mm_unpackhi_epi8(r2, r3);
					_mm_storeu_si128((__m128i *)(o + 4 * h), _mm_unpacklo_epi16(a, c));
					_mm_storeu_si128((__m128i *)(o + 4 * h + 16), _mm_unpackhi_epi16(a, c));
					_mm_storeu_si128((__m128i *)(o + 4 * h + 32), _mm_unpacklo_epi16(b, d));
					_mm_storeu_si128((__m128i *)(o + 4 * h + 48), _mm_unpackhi_epi16(b, d));
				}
				continue;
			}
			for (int64_t j = 0; j < NR; j++)
				((uint32_t *)o)[j] = j < w ?
					quad_tail(B->p + (kb + (uint64_t)p) * B->s0 +
						  (jb + (uint64_t)(js + j)) * B->s1, B->s0,
						  kc - p < 4 ? kc - p : 4, x) : 0;
		}
	}
}

/*
 * A's rows [i, i + mr) by quads of p in [kb, kb + kc), each value xor x,
 * MR quads per q, zero past mr and kc; and per row, corr[r] = -db sum_p A.
 */
static void pack_a(const struct npu_bytes *A, uint64_t i, int64_t mr, uint64_t kb, int64_t kc,
		   uint8_t x, int32_t db, uint32_t *out, int32_t *corr)
{
	int64_t kc4 = (kc + 3) / 4;

	for (int64_t r = 0; r < MR; r++) {
		const uint8_t *row = A->p + (i + (uint64_t)r) * A->s0 + kb * A->s1;
		uint32_t *o = out + r, s = 0;
		int64_t q = 0;

		if (r >= mr) {
			for (; q < kc4; q++)
				o[q * MR] = 0;
			corr[r] = 0;
			continue;
		}
		for (; A->s1 == 1 && 4 * q + 4 <= kc; q++)
			o[q * MR] = quad(row + 4 * q, x * 0x01010101u);
		for (; q < kc4; q++)
			o[q * MR] = quad_tail(row + 4 * q * A->s1, A->s1,
					      kc - 4 * q < 4 ? kc - 4 * q : 4, x);
		for (int64_t p = 0; p < kc && db; p++)
			s += (uint32_t)(A->sgn ? (int32_t)(int8_t)row[p * A->s1] : row[p * A->s1]);
		corr[r] = (int32_t)(0u - (uint32_t)db * s);
	}
}

/*
 * acc += a (u8) . b (s8), four products a lane, in place. As an
 * intrinsic, GCC 12 copies and spills the sums around every instruction
 * (0.4 of this speed).
 */
__attribute__((target("avx512f,avx512vnni")))
static inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b)
{
	__asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
	return acc;
}

/*
 * C[mr x nr] += a (kc4 quads x MR) * b (kc4 quads x NR) + rcorr[i] +
 * ccorr[j], a's bytes the unsigned ones, or b's.
 */
__attribute__((target("avx512f,avx512vnni"), always_inline))
static inline void kernel_8x48(int64_t kc4, const uint32_t *a, const uint8_t *b, int32_t *c,
			       int64_t ldc, int mr, int nr, const int32_t *rcorr,
			       const int32_t *ccorr, bool b_unsigned)
{
	__m512i acc[MR][NV];

	for (int i = 0; i < MR; i++)
		for (int v = 0; v < NV; v++)
			acc[i][v] = _mm512_setzero_si512();
	for (int64_t q = 0; q < kc4; q++, a += MR, b += 4 * NR) {
		__m512i bv[NV];

		for (int v = 0; v < NV; v++)
			bv[v] = _mm512_loadu_si512(b + 64 * v);
		for (int i = 0; i < MR; i++) {
			__m512i ai = _mm512_set1_epi32((int)a[i]);

			for (int v = 0; v < NV; v++)
				acc[i][v] = b_unsigned ? dpbusd(acc[i][v], bv[v], ai) :
					    dpbusd(acc[i][v], ai, bv[v]);
		}
	}
	for (int i = 0; i < mr; i++) {
		int32_t *ci = c + i * ldc;
		__m512i r = _mm512_set1_epi32(rcorr[i]);

		for (int v = 0; v < NV; v++) {
			int w = nr - 16 * v;
			__mmask16 m;
			__m512i s;

			if (w <= 0)
				break;
			m = w >= 16 ? 0xffff : (__mmask16)((1u << w) - 1);
			s = _mm512_add_epi32(acc[i][v], _mm512_maskz_loadu_epi32(m, ccorr + 16 * v));
			s = _mm512_add_epi32(_mm512_add_epi32(s, r), _mm512_maskz_loadu_epi32(m, ci + 16 * v));
			_mm512_mask_storeu_epi32(ci + 16 * v, m, s);
		}
	}
}

/* The kernel for each role of the unsigned operand, its test outside the loops. */
__attribute__((target("avx512f,avx512vnni")))
static void kernel_a_u8(int64_t kc4, const uint32_t *a, const uint8_t *b, int32_t *c, int64_t ldc,
			int mr, int nr, const int32_t *rcorr, const int32_t *ccorr)
{
	kernel_8x48(kc4, a, b, c, ldc, mr, nr, rcorr, ccorr, false);
}

__attribute__((target("avx512f,avx512vnni")))
static void kernel_b_u8(int64_t kc4, const uint32_t *a, const uint8_t *b, int32_t *c, int64_t ldc,
			int mr, int nr, const int32_t *rcorr, const int32_t *ccorr)
{
	kernel_8x48(kc4, a, b, c, ldc, mr, nr, rcorr, ccorr, true);
}

static int int8_vnni(const struct npu_bytes *A, const struct npu_bytes *B, int32_t *C, uint64_t ci,
		     uint64_t n, uint64_t k, uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	/* B's bytes the unsigned ones where that shifts fewer operands */
	bool b_u8 = (int)!A->sgn + (int)B->sgn < (int)A->sgn + (int)!B->sgn;
	bool shift_a = b_u8 ? !A->sgn : A->sgn, shift_b = b_u8 ? B->sgn : !B->sgn;
	/* an xor of the top bit adds 128 to an i8 read as u8, takes it from a u8 read as i8 */
	int32_t da = shift_a ? (A->sgn ? 128 : -128) : 0, db = shift_b ? (B->sgn ? 128 : -128) : 0;
	int32_t rcorr[MR];
	uint8_t *bpack;
	uint32_t *apack;
	int32_t *ccorr;

	if (!npu_gemm_int8_native())
		return 1;
	/* sized in floats: four bytes each; the column corrections after the panel */
	bpack = (uint8_t *)npu_gemm_scratch(0, (size_t)KC * (NC + NR) / 4 + NC + NR);
	apack = (uint32_t *)npu_gemm_scratch(1, (size_t)KC / 4 * MR);
	if (!bpack || !apack)
		return 1;
	ccorr = (int32_t *)(bpack + (size_t)KC * (NC + NR));
	for (uint64_t jb = 0; jb < n; jb += NC) {
		int64_t nc = (int64_t)(n - jb < NC ? n - jb : NC);

		for (uint64_t kb = 0; kb < k; kb += KC) {
			int64_t kc = (int64_t)(k - kb < KC ? k - kb : KC), kc4 = (kc + 3) / 4;

			column_corr(B, kb, kc, jb, nc, da, db, ccorr);
			pack_b(B, kb, kc, jb, nc, shift_b ? 0x80 : 0, bpack);
			for (uint64_t i = begin; i < end; i += MR) {
				int64_t mr = (int64_t)(end - i < MR ? end - i : MR);

				if (npu_cancelled(cancel))
					return -1;
				pack_a(A, i, mr, kb, kc, shift_a ? 0x80 : 0, db, apack, rcorr);
				for (int64_t js = 0; js < nc; js += NR)
					(b_u8 ? kernel_b_u8 : kernel_a_u8)(kc4, apack,
						bpack + js * kc4 * 4, C + i * ci + jb + (uint64_t)js,
						(int64_t)ci, (int)mr, (int)(nc - js < NR ? nc - js : NR),
						rcorr, ccorr + js);
			}
		}
	}
	return 0;
}

#else

bool npu_gemm_int8_native(void)
{
	return false;
}

static int int8_vnni(const struct npu_bytes *A, const struct npu_bytes *B, int32_t *C, uint64_t ci,
		     uint64_t n, uint64_t k, uint64_t begin, uint64_t end, const uint32_t *cancel)
{
	(void)A, (void)B, (void)C, (void)ci, (void)n, (void)k, (void)begin, (void)end;
	(void)cancel;
	return 1;
}

#endif

int npu_gemm_bytes(const struct npu_bytes *A, const struct npu_bytes *B, int32_t *C, uint64_t ci,
		   uint64_t cj, uint64_t n, uint64_t k, uint64_t begin, uint64_t end,
		   const uint32_t *cancel)
{
	int ret = cj == 1 ? int8_vnni(A, B, C, ci, n, k, begin, end, cancel) : 1;

	return ret <= 0 ? ret : int8_portable(A, B, C, ci, cj, n, k, begin, end, cancel);
}

int npu_gemm_int8_run(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel)
{
	int ta = a->flags & NPU_OP_F_TRANS_A, tb = a->flags & NPU_OP_F_TRANS_B;
	struct npu_bytes A = {
		in[0].data, ta ? in[0].stride[1] : in[0].stride[0],
		ta ? in[0].stride[0] : in[0].stride[1], in[0].dtype == NPU_DT_I8,
	};
	struct npu_bytes B = {
		in[1].data, tb ? in[1].stride[1] : in[1].stride[0],
		tb ? in[1].stride[0] : in[1].stride[1], in[1].dtype == NPU_DT_I8,
	};
	uint64_t n = out->shape[1], k = ta ? in[0].shape[0] : in[0].shape[1];
	uint64_t ci = out->stride[0], cj = out->stride[1];
	int32_t *C = out->data;

	for (uint64_t i = begin; i < end; i++)
		for (uint64_t j = 0; j < n && a->beta == 0.0f; j++)
			C[i * ci + j * cj] = 0;
	return npu_gemm_bytes(&A, &B, C, ci, cj, n, k, begin, end, cancel);
}
