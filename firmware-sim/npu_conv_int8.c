// SPDX-License-Identifier: MIT
/*
 * 2-D convolution on bytes (firmware 0.9): i8 or u8 x and w, i32 y, one
 * output plane (n, o) per unit; padding reads as 0 and every sum is exact
 * modulo 2^32. An ungrouped one with dense weights and dense output
 * planes runs as a GEMM on the integer kernel (npu_gemm_bytes()):
 *
 *   y[o][t] = w[o][c kh kw] col[c kh kw][t]
 *
 * over the image unrolled into columns of bytes (im2col), a row of the
 * window at a time. As in npu_window.c's conv_as_gemm(), a worker's units
 * o0..o1 of image n are the same share t0..t1 of the image's columns, of
 * every plane, so no two workers unroll the same columns. The rest, and
 * a share the scratch cannot hold, run the direct loop.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "npu_opdefs.h"
#include "npu_ops_int.h"

static inline int32_t byte_val(const uint8_t *p, bool sgn)
{
	return sgn ? (int32_t)(int8_t)*p : (int32_t)*p;
}

/* Output planes [begin, end), element by element: any group, stride, dilation. */
static int conv_direct(const struct npu_op *a, const struct npu_view *in,
		       const struct npu_view *out, uint64_t begin, uint64_t end,
		       const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint8_t *X = in[0].data, *F = in[1].data;
	const uint64_t *xs = in[0].stride, *fs = in[1].stride, *ys = out->stride;
	bool xsg = in[0].dtype == NPU_DT_I8, fsg = in[1].dtype == NPU_DT_I8;
	int64_t H = (int64_t)in[0].shape[2], W = (int64_t)in[0].shape[3];
	int64_t Ho = (int64_t)out->shape[2], Wo = (int64_t)out->shape[3];
	int64_t kh = (int64_t)in[1].shape[2], kw = (int64_t)in[1].shape[3];
	uint64_t O = out->shape[1], cpg = in[0].shape[1] / w->group, opg = O / w->group;

	for (uint64_t u = begin; u < end; u++) {
		uint64_t n = u / O, o = u % O, g = o / opg;
		int32_t *y = (int32_t *)out->data + n * ys[0] + o * ys[1];

		if (npu_cancelled(cancel))
			return -1;
		for (int64_t ho = 0; ho < Ho; ho++)
			for (int64_t wo = 0; wo < Wo; wo++) {
				uint32_t s = 0;

				for (uint64_t c = 0; c < cpg; c++)
					for (int64_t i = 0; i < kh; i++) {
						int64_t hi = ho * w->stride[0] - w->pad[0] + i * w->dilation[0];

						for (int64_t j = 0; j < kw && hi >= 0 && hi < H; j++) {
							int64_t wi = wo * w->stride[1] - w->pad[1] +
								     j * w->dilation[1];

							if (wi < 0 || wi >= W)
								continue;
							s += (uint32_t)byte_val(X + n * xs[0] +
								(g * cpg + c) * xs[1] + (uint64_t)hi * xs[2] +
								(uint64_t)wi * xs[3], xsg) *
							     (uint32_t)byte_val(F + o * fs[0] + c * fs[1] +
								(uint64_t)i * fs[2] + (uint64_t)j * fs[3], fsg);
						}
					}
				y[(uint64_t)ho * ys[2] + (uint64_t)wo * ys[3]] = (int32_t)s;
			}
	}
	return 0;
}

/*
 * Columns [t0, t1) of image x unrolled: row (c, i, j) of cols holds the
 * tap (i, j) of channel c under each output position, 0 where it falls
 * in the padding.
 */
static void im2col(const struct npu_op *a, const struct npu_view *in, const uint8_t *x,
		   const struct npu_view *out, uint64_t t0, uint64_t t1, uint8_t *cols)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride;
	int64_t H = (int64_t)in[0].shape[2], W = (int64_t)in[0].shape[3];
	int64_t Wo = (int64_t)out->shape[3], kh = (int64_t)in[1].shape[2];
	int64_t kw = (int64_t)in[1].shape[3], sw = w->stride[1];
	uint64_t tw = t1 - t0, r = 0;

	for (uint64_t c = 0; c < in[0].shape[1]; c++)
		for (int64_t i = 0; i < kh; i++)
			for (int64_t j = 0; j < kw; j++, r++) {
				uint8_t *row = cols + r * tw;

				for (uint64_t t = t0; t < t1;) {
					int64_t ho = (int64_t)(t / (uint64_t)Wo), wo = (int64_t)(t % (uint64_t)Wo);
					int64_t end = ho * Wo + Wo < (int64_t)t1 ? Wo : wo + (int64_t)(t1 - t);
					int64_t hi = ho * w->stride[0] - w->pad[0] + i * w->dilation[0];
					int64_t off = j * w->dilation[1] - w->pad[1];
					uint8_t *o = row + (t - t0);

					/* this output row's stretch [wo, end) */
					if (hi < 0 || hi >= H) {
						memset(o, 0, (size_t)(end - wo));
					} else if (sw == 1 && xs[3] == 1) {
						/* inside the image [qa, qb): one copy */
						const uint8_t *xr = x + c * xs[1] + (uint64_t)hi * xs[2];
						int64_t qa = -off > wo ? -off : wo, qb = W - off < end ? W - off : end;

						qa = qa < end ? qa : end;
						qb = qb > qa ? qb : qa;
						memset(o, 0, (size_t)(qa - wo));
						memcpy(o + (qa - wo), xr + qa + off, (size_t)(qb - qa));
						memset(o + (qb - wo), 0, (size_t)(end - qb));
					} else {
						const uint8_t *xr = x + c * xs[1] + (uint64_t)hi * xs[2];

						for (int64_t q = wo; q < end; q++) {
							int64_t wi = q * sw + off;

							o[q - wo] = wi >= 0 && wi < W ?
								    xr[(uint64_t)wi * xs[3]] : 0;
						}
					}
					t += (uint64_t)(end - wo);
				}
			}
}

int npu_conv_int8_run(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel)
{
	const uint64_t *fs = in[1].stride, *ys = out->stride;
	uint64_t C = in[0].shape[1], O = out->shape[1], Wo = out->shape[3];
	uint64_t kh = in[1].shape[2], kw = in[1].shape[3], ck = C * kh * kw;
	uint64_t hw = out->shape[2] * Wo;

	if (a->win.group != 1 || fs[3] != 1 || fs[2] != kw || fs[1] != kh * kw || ys[3] != 1 ||
	    ys[2] != Wo)
		return conv_direct(a, in, out, begin, end, cancel);
	for (uint64_t u = begin; u < end;) {
		uint64_t n = u / O, o0 = u % O, o1 = (n + 1) * O < end ? O : end - n * O;
		uint64_t t0 = o0 * hw / O, t1 = o1 * hw / O, tw = t1 - t0;
		/* sized in floats: four bytes each */
		uint8_t *cols = (uint8_t *)npu_gemm_scratch(2, (ck * tw + 3) / 4);
		struct npu_bytes W = { in[1].data, fs[0], 1, in[1].dtype == NPU_DT_I8 };
		struct npu_bytes B = { cols, tw, 1, in[0].dtype == NPU_DT_I8 };
		int32_t *y = (int32_t *)out->data + n * ys[0] + t0;
		int ret;

		if (!cols)
			return conv_direct(a, in, out, u, end, cancel);
		if (npu_cancelled(cancel))
			return -1;
		im2col(a, in, (const uint8_t *)in[0].data + n * in[0].stride[0], out, t0, t1, cols);
		for (uint64_t o = 0; o < O; o++)
			memset(y + o * ys[1], 0, tw * sizeof(*y));
		ret = npu_gemm_bytes(&W, &B, y, ys[1], 1, tw, ck, 0, O, cancel);
		if (ret)
			return ret;
		u = n * O + o1;
	}
	return 0;
}
