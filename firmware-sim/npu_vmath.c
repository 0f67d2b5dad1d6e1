// SPDX-License-Identifier: MIT
/*
 * Functions over whole runs of floats: transcendentals, and the passes of
 * softmax and layernorm over a contiguous row.
 *
 * GELU in a Transformer's feed-forward layer and the exponentials of its
 * softmax are one libm call per element, and scalar erff() alone took a
 * fifth of an encoder block's time. glibc's libmvec (part of libc6, so
 * no new dependency) has the same functions 8 or 16 lanes at a time; its
 * symbols follow the x86-64 vector function ABI (_ZGV<isa>N<lanes>v_<f>),
 * declared here as math.h declares them only under -ffast-math. Tails
 * shorter than a vector go through a zero-padded one, so every element of
 * a run gets the same function.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "npu_ops_int.h"

__m512 _ZGVeN16v_expf(__m512 x);
__m512 _ZGVeN16v_erff(__m512 x);
__m256 _ZGVdN8v_expf(__m256 x);
__m256 _ZGVdN8v_erff(__m256 x);

#define SQRT1_2	0.70710678118654752f

/*
 * fn over a run, 16 lanes at a time, the tail through a masked load and
 * store (lanes past n compute on zeros and are not stored).
 */
#define RUN_16(name, fn)							\
__attribute__((target("avx512f")))						\
static void name(float *y, const float *x, uint64_t n)				\
{										\
	uint64_t i = 0;								\
										\
	for (; i + 16 <= n; i += 16)						\
		_mm512_storeu_ps(y + i, fn(_mm512_loadu_ps(x + i)));		\
	if (i < n) {								\
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);			\
										\
		_mm512_mask_storeu_ps(y + i, m, fn(_mm512_maskz_loadu_ps(m, x + i))); \
	}									\
}

/* The same, 8 lanes; AVX2 has no masked float loads worth it: the tail goes through a copy. */
#define RUN_8(name, fn)								\
__attribute__((target("avx2,fma")))						\
static void name(float *y, const float *x, uint64_t n)				\
{										\
	uint64_t i = 0;								\
										\
	for (; i + 8 <= n; i += 8)						\
		_mm256_storeu_ps(y + i, fn(_mm256_loadu_ps(x + i)));		\
	if (i < n) {								\
		float t[8] = { 0 };						\
										\
		memcpy(t, x + i, (n - i) * sizeof(float));			\
		_mm256_storeu_ps(t, fn(_mm256_loadu_ps(t)));			\
		memcpy(y + i, t, (n - i) * sizeof(float));			\
	}									\
}

__attribute__((target("avx512f")))
static __m512 gelu_16(__m512 v)
{
	__m512 e = _ZGVeN16v_erff(_mm512_mul_ps(v, _mm512_set1_ps(SQRT1_2)));

	return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.5f)),
			     _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

__attribute__((target("avx2,fma")))
static __m256 gelu_8(__m256 v)
{
	__m256 e = _ZGVdN8v_erff(_mm256_mul_ps(v, _mm256_set1_ps(SQRT1_2)));

	return _mm256_mul_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.5f)),
			     _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
}

RUN_16(exp_16, _ZGVeN16v_expf)
RUN_16(gelu_erf_16, gelu_16)
RUN_8(exp_8, _ZGVdN8v_expf)
RUN_8(gelu_erf_8, gelu_8)

void npu_vexp(float *y, const float *x, uint64_t n)
{
	switch (npu_host_isa()) {
	case NPU_ISA_AVX512:
		exp_16(y, x, n);
		break;
	case NPU_ISA_AVX2:
		exp_8(y, x, n);
		break;
	default:
		for (uint64_t i = 0; i < n; i++)
			y[i] = expf(x[i]);
	}
}

void npu_vgelu_erf(float *y, const float *x, uint64_t n)
{
	switch (npu_host_isa()) {
	case NPU_ISA_AVX512:
		gelu_erf_16(y, x, n);
		break;
	case NPU_ISA_AVX2:
		gelu_erf_8(y, x, n);
		break;
	default:
		for (uint64_t i = 0; i < n; i++)
			y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * SQRT1_2));
	}
}

/*
 * The row passes keep partial results in lanes: the plain loop carries
 * one accumulator, a chain of one add's latency per element (a quarter
 * of a softmax's time). Sums stay in double; the sums and the affine map
 * vectorize as written. The maximum is written with intrinsics: gcc
 * keeps `x > m ? x : m` scalar (it would use MAXPS only under
 * -ffinite-math-only), yet MAXPS(x, m), which returns its second operand
 * when either is a NaN and when both are zeros, is that expression
 * exactly; so the maximum ignores NaNs after the first element, as the
 * plain loop does.
 */
#define LANES	16

/* The tail and the lanes of a maximum, in order, the plain loop's way. */
static float max_finish(const float *x, uint64_t n, float m, const float *lane, int lanes)
{
	for (uint64_t j = 0; j < n; j++)
		m = x[j] > m ? x[j] : m;
	for (int k = 0; k < lanes; k++)
		m = lane[k] > m ? lane[k] : m;
	return m;
}

__attribute__((target("avx512f")))
static float max_16(const float *x, uint64_t n, float m)
{
	__m512 l = _mm512_set1_ps(m);
	float lane[16];
	uint64_t j = 0;

	for (; j + 16 <= n; j += 16)
		l = _mm512_max_ps(_mm512_loadu_ps(x + j), l);
	_mm512_storeu_ps(lane, l);
	return max_finish(x + j, n - j, m, lane, 16);
}

__attribute__((target("avx2")))
static float max_8(const float *x, uint64_t n, float m)
{
	__m256 l = _mm256_set1_ps(m);
	float lane[8];
	uint64_t j = 0;

	for (; j + 8 <= n; j += 8)
		l = _mm256_max_ps(_mm256_loadu_ps(x + j), l);
	_mm256_storeu_ps(lane, l);
	return max_finish(x + j, n - j, m, lane, 8);
}

float npu_vmax(const float *x, uint64_t n, float m)
{
	switch (npu_host_isa()) {
	case NPU_ISA_AVX512:
		return max_16(x, n, m);
	case NPU_ISA_AVX2:
		return max_8(x, n, m);
	default:
		return max_finish(x, n, m, NULL, 0);
	}
}

__attribute__((target_clones("avx512f", "avx2", "default")))
double npu_vsum(const float *x, uint64_t n)
{
	double l[LANES] = { 0 }, s = 0;
	uint64_t j = 0;

	for (; j + LANES <= n; j += LANES)
		for (int k = 0; k < LANES; k++)
			l[k] += x[j + k];
	for (; j < n; j++)
		s += x[j];
	for (int k = 0; k < LANES; k++)
		s += l[k];
	return s;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
double npu_vsqdev(const float *x, uint64_t n, double mean)
{
	double l[LANES] = { 0 }, s = 0;
	uint64_t j = 0;

	for (; j + LANES <= n; j += LANES)
		for (int k = 0; k < LANES; k++)
			l[k] += (x[j + k] - mean) * (x[j + k] - mean);
	for (; j < n; j++)
		s += (x[j] - mean) * (x[j] - mean);
	for (int k = 0; k < LANES; k++)
		s += l[k];
	return s;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void npu_vaffine(float *y, const float *x, uint64_t n, double sub, double mul)
{
	for (uint64_t j = 0; j < n; j++)
		y[j] = (float)((x[j] - sub) * mul);
}
