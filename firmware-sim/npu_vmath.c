// SPDX-License-Identifier: MIT
/*
 * Transcendental functions over whole runs of floats.
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
