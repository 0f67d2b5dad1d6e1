// SPDX-License-Identifier: MIT
/*
 * The f32 copies of a widened launch's tensors (npu_op_widens): the
 * engine gathers an f16, bf16 (or MaxPool's i8, u8) tensor, widens it
 * here into a buffer of f32 with the same strides, and narrows the f32
 * output back to its dtype as it scatters. Each conversion runs over the
 * tensor's whole extent as a flat array, gaps included, where that is
 * harmless (inputs, a dense output); an output with gaps is narrowed
 * element by element into the copy of it gathered from the device, so
 * what lies between its elements goes back as it was, bit for bit.
 *
 * f16 converts with F16C where the host has it (every AVX2 CPU does);
 * it rounds to nearest even and keeps NaNs quiet, as npu_f32_to_f16.
 */
#include <math.h>

#include "npu_ops.h"
#include "npu_ops_int.h"

void npu_op_widened(const struct npu_op *a, struct npu_op *run)
{
	npu_op_widened_f32(a, run);
	/* The host multiplies bf16 itself: A and B stay as they are. */
	if (a->op == NPU_OP_GEMM && a->in[0].dtype == NPU_DT_BF16 &&
	    a->in[1].dtype == NPU_DT_BF16 && npu_gemm_bf16_native())
		run->in[0].dtype = run->in[1].dtype = NPU_DT_BF16;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* From the end, eight at a time: dst may be src (it is twice as wide). */
__attribute__((target("avx2,f16c")))
static void widen_f16c(float *dst, const uint16_t *src, uint64_t n)
{
	uint64_t i = n & ~7ull;

	for (uint64_t k = n; k-- > i;)
		dst[k] = npu_f16_to_f32(src[k]);
	while (i) {
		__m128i h;

		i -= 8;
		h = _mm_loadu_si128((const __m128i *)(src + i));
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
	}
}

/* From the start, eight at a time: dst may be src. */
__attribute__((target("avx2,f16c")))
static void narrow_f16c(uint16_t *dst, const float *src, uint64_t n)
{
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);

		_mm_storeu_si128((__m128i *)(dst + i), h);
	}
	for (; i < n; i++)
		dst[i] = npu_f32_to_f16(src[i]);
}

static bool have_f16c(void)
{
	return npu_host_isa() >= NPU_ISA_AVX2;
}
#else
static bool have_f16c(void)
{
	return false;
}

static void widen_f16c(float *dst, const uint16_t *src, uint64_t n)
{
	(void)dst, (void)src, (void)n;
}

static void narrow_f16c(uint16_t *dst, const float *src, uint64_t n)
{
	(void)dst, (void)src, (void)n;
}
#endif

static float narrow_int(float x, float lo, float hi)
{
	return isnan(x) ? 0.0f : x < lo ? lo : x > hi ? hi : nearbyintf(x);
}

void npu_widen(float *dst, const void *src, uint64_t n, uint32_t dt)
{
	const uint16_t *h = src;
	const int8_t *s8 = src;
	const uint8_t *u8 = src;

	/* Every loop runs from the end: element k is read before any
	 * element at or past it is written, so dst may be src. */
	switch (dt) {
	case NPU_DT_F16:
		if (have_f16c()) {
			widen_f16c(dst, h, n);
			return;
		}
		for (uint64_t k = n; k-- > 0;)
			dst[k] = npu_f16_to_f32(h[k]);
		return;
	case NPU_DT_BF16:
		for (uint64_t k = n; k-- > 0;)
			dst[k] = npu_bf16_to_f32(h[k]);
		return;
	case NPU_DT_I8:
		for (uint64_t k = n; k-- > 0;)
			dst[k] = s8[k];
		return;
	case NPU_DT_U8:
		for (uint64_t k = n; k-- > 0;)
			dst[k] = u8[k];
		return;
	default:
		return;
	}
}

/* Element k of dtype dt at p, narrowed from x. */
static void narrow_one(void *p, uint64_t k, float x, uint32_t dt)
{
	switch (dt) {
	case NPU_DT_F16: ((uint16_t *)p)[k] = npu_f32_to_f16(x); break;
	case NPU_DT_BF16: ((uint16_t *)p)[k] = npu_f32_to_bf16(x); break;
	/* MaxPool's maximum is an input's value; a window of padding only is -inf */
	case NPU_DT_I8: ((int8_t *)p)[k] = (int8_t)narrow_int(x, -128.0f, 127.0f); break;
	case NPU_DT_U8: ((uint8_t *)p)[k] = (uint8_t)narrow_int(x, 0.0f, 255.0f); break;
	default: break;
	}
}

void npu_narrow(void *dst, const float *src, uint64_t n, uint32_t dt)
{
	/* From the start: dst may be src (it is at most half as wide). */
	if (dt == NPU_DT_F16 && have_f16c()) {
		narrow_f16c(dst, src, n);
		return;
	}
	for (uint64_t k = 0; k < n; k++)
		narrow_one(dst, k, src[k], dt);
}

void npu_narrow_view(const struct npu_view *dst, const float *src)
{
	uint64_t ix[NPU_OP_MAX_DIMS] = { 0 }, off = 0, n = 1;

	for (uint32_t k = 0; k < dst->ndim; k++)
		n *= dst->shape[k];
	for (uint64_t e = 0; e < n; e++) {
		uint32_t k = dst->ndim;

		narrow_one(dst->data, off, src[off], dst->dtype);
		/* the next index, last dimension fastest */
		while (k-- > 0) {
			off += dst->stride[k];
			if (++ix[k] < dst->shape[k])
				break;
			off -= dst->stride[k] * dst->shape[k];
			ix[k] = 0;
		}
	}
}
