// SPDX-License-Identifier: MIT
/*
 * The op library's window ops over [N, C, H, W]: convolution (im2col and
 * the fast GEMM where it applies, else a direct loop) and max and average
 * pooling, an output plane (n, o) per unit. npu_window_check() in
 * npu_opdefs.h has vetted the shapes and the window.
 */
#include <stdlib.h>
#include <string.h>

#include "npu_opdefs.h"
#include "npu_ops_int.h"

/*
 * The output columns wo whose input column wo * stride - pad + j * dil
 * lies in [0, width): [*lo, *hi).
 */
static void valid_cols(int64_t width, int64_t wo_n, int64_t stride, int64_t pad, int64_t off,
		       int64_t *lo, int64_t *hi)
{
	/* wo * stride >= pad - off  and  wo * stride <= width - 1 + pad - off */
	int64_t a = pad - off, b = width - 1 + pad - off;

	*lo = a <= 0 ? 0 : (a + stride - 1) / stride;
	*hi = b < 0 ? 0 : b / stride + 1;
	*hi = *hi < wo_n ? *hi : wo_n;
	*lo = *lo < *hi ? *lo : *hi;
}

/*
 * Row (c, i, j) of the image unrolled into columns: for every output
 * position, the input element under kernel tap (i, j), 0 in the padding.
 * The valid stretch of each output row is worked out once (valid_cols),
 * and with unit strides it is one memcpy.
 */
static void im2col_row(const float *x, const uint64_t *xs, const struct npu_op_window *w,
		       uint64_t H, uint64_t W, uint64_t Ho, uint64_t Wo, uint64_t c, uint64_t i,
		       uint64_t j, float *row)
{
	int64_t off = (int64_t)(j * w->dilation[1]) - (int64_t)w->pad[1], lo, hi;

	valid_cols((int64_t)W, (int64_t)Wo, w->stride[1], w->pad[1],
		   (int64_t)(j * w->dilation[1]), &lo, &hi);
	for (uint64_t ho = 0; ho < Ho; ho++, row += Wo) {
		int64_t hin = (int64_t)(ho * w->stride[0] + i * w->dilation[0]) - (int64_t)w->pad[0];
		const float *src;

		if (hin < 0 || hin >= (int64_t)H) {
			memset(row, 0, Wo * sizeof(float));
			continue;
		}
		src = x + c * xs[1] + (uint64_t)hin * xs[2];
		memset(row, 0, (uint64_t)lo * sizeof(float));
		memset(row + hi, 0, (Wo - (uint64_t)hi) * sizeof(float));
		if (w->stride[1] == 1 && xs[3] == 1) {
			memcpy(row + lo, src + lo + off, (uint64_t)(hi - lo) * sizeof(float));
			continue;
		}
		for (int64_t wo = lo; wo < hi; wo++)
			row[wo] = src[(uint64_t)(wo * w->stride[1] + off) * xs[3]];
	}
}

/*
 * Ungrouped, with dense weights and contiguous output planes: the units'
 * planes of each image as one GEMM, Y[o][hw] = W[o][c kh kw] col[c kh
 * kw][hw], over the image unrolled into columns (im2col) on the fast
 * GEMM. 1 if the shapes or the host do not allow it.
 */
static int conv_as_gemm(const struct npu_op_args *a, const struct npu_view *in,
			const struct npu_view *out, uint64_t begin, uint64_t end,
			const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride, *fs = in[1].stride, *ys = out->stride;
	uint64_t C = in[0].shape[1], H = in[0].shape[2], W = in[0].shape[3];
	uint64_t O = out->shape[1], Ho = out->shape[2], Wo = out->shape[3];
	uint64_t kh = in[1].shape[2], kw = in[1].shape[3], ck = C * kh * kw, hw = Ho * Wo;
	float *col;
	int ret = 0;

	if (w->group != 1 || fs[3] != 1 || fs[2] != kw || fs[1] != kh * kw || ys[3] != 1 ||
	    ys[2] != Wo || ck * hw > (1u << 26))
		return 1;
	col = malloc(ck * hw * sizeof(float));
	if (!col)
		return 1;
	for (uint64_t u = begin; u < end && !ret;) {
		uint64_t n = u / O, o0 = u % O, o1 = (n + 1) * O < end ? O : end - n * O;
		const float *x = (const float *)in[0].data + n * xs[0];

		for (uint64_t r = 0; r < ck; r++)
			im2col_row(x, xs, w, H, W, Ho, Wo, r / (kh * kw), r / kw % kh, r % kw,
				   col + r * hw);
		/* the planes are zeroed: the GEMM adds into them */
		for (uint64_t o = o0; o < o1; o++)
			memset((float *)out->data + n * ys[0] + o * ys[1], 0, hw * sizeof(float));
		ret = npu_gemm_fast(in[1].data, fs[0], 1, col, hw, 1,
				    (float *)out->data + n * ys[0], ys[1], hw, ck, 1.0f, o0, o1,
				    cancel);
		u = n * O + o1;
	}
	free(col);
	return ret;
}

/*
 * One output plane (n, o) per unit. A weight is loaded once per input
 * plane row pass and the inner loop runs over a contiguous stretch of
 * output columns, so with unit strides it vectorizes.
 */
static int run_conv(const struct npu_op_args *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const float *X = in[0].data, *F = in[1].data;
	float *Y = out->data;
	const uint64_t *xs = in[0].stride, *fs = in[1].stride, *ys = out->stride;
	int64_t H = (int64_t)in[0].shape[2], W = (int64_t)in[0].shape[3];
	int64_t Ho = (int64_t)out->shape[2], Wo = (int64_t)out->shape[3];
	int64_t kh = (int64_t)in[1].shape[2], kw = (int64_t)in[1].shape[3];
	int64_t sh = w->stride[0], sw = w->stride[1], dh = w->dilation[0], dw = w->dilation[1];
	int64_t pt = w->pad[0], pl = w->pad[1];
	uint64_t O = out->shape[1], cpg = in[0].shape[1] / w->group, opg = O / w->group;
	int fast = conv_as_gemm(a, in, out, begin, end, cancel);

	if (fast <= 0)
		return fast;
	for (uint64_t u = begin; u < end; u++) {
		uint64_t n = u / O, o = u % O, g = o / opg;
		float *y = Y + n * ys[0] + o * ys[1];

		for (int64_t ho = 0; ho < Ho; ho++)
			for (int64_t wo = 0; wo < Wo; wo++)
				y[ho * ys[2] + wo * ys[3]] = 0.0f;
		for (uint64_t c = 0; c < cpg; c++) {
			const float *x = X + n * xs[0] + (g * cpg + c) * xs[1];
			const float *f = F + o * fs[0] + c * fs[1];

			if (npu_cancelled(cancel))
				return -1;
			for (int64_t i = 0; i < kh; i++)
				for (int64_t j = 0; j < kw; j++) {
					float wt = f[i * fs[2] + j * fs[3]];
					int64_t lo, hi;

					valid_cols(W, Wo, sw, pl, j * dw, &lo, &hi);
					for (int64_t ho = 0; ho < Ho; ho++) {
						int64_t hi_ = ho * sh - pt + i * dh;
						const float *xr;
						float *yr;

						if (hi_ < 0 || hi_ >= H)
							continue;
						xr = x + hi_ * xs[2] + (j * dw - pl) * (int64_t)xs[3];
						yr = y + ho * ys[2];
						for (int64_t wo = lo; wo < hi; wo++)
							yr[wo * ys[3]] += wt * xr[wo * sw * xs[3]];
					}
				}
		}
	}
	return 0;
}

static int run_pool(const struct npu_op_args *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride, *ys = out->stride;
	int64_t H = (int64_t)in[0].shape[2], W = (int64_t)in[0].shape[3];
	int64_t Ho = (int64_t)out->shape[2], Wo = (int64_t)out->shape[3];
	int64_t kh = w->kernel[0], kw = w->kernel[1], sh = w->stride[0], sw = w->stride[1];
	int64_t dh = w->dilation[0], dw = w->dilation[1], pt = w->pad[0], pl = w->pad[1];
	int64_t hp = H + pt + w->pad[2], wp = W + pl + w->pad[3];
	bool max = a->op == NPU_OP_MAXPOOL2D, count_pad = w->flags & NPU_OP_W_COUNT_PAD;
	uint64_t C = out->shape[1];

	for (uint64_t u = begin; u < end; u++) {
		const float *x = (const float *)in[0].data + (u / C) * xs[0] + (u % C) * xs[1];
		float *y = (float *)out->data + (u / C) * ys[0] + (u % C) * ys[1];

		if (npu_cancelled(cancel))
			return -1;
		for (int64_t ho = 0; ho < Ho; ho++)
			for (int64_t wo = 0; wo < Wo; wo++) {
				double acc = 0;
				float m = -INFINITY;
				int64_t cnt = 0, padded = 0;

				for (int64_t i = 0; i < kh; i++) {
					int64_t r = ho * sh - pt + i * dh;

					for (int64_t j = 0; j < kw; j++) {
						int64_t col = wo * sw - pl + j * dw;
						float v;

						/* padding counts; what ceil_mode adds past it does not */
						if (r < hp - pt && col < wp - pl)
							padded++;
						if (r < 0 || r >= H || col < 0 || col >= W)
							continue;
						v = x[r * xs[2] + col * xs[3]];
						m = v > m || isnan(v) ? v : m;
						acc += v;
						cnt++;
					}
				}
				y[ho * ys[2] + wo * ys[3]] = max ? m :
					(float)(acc / (double)(count_pad ? padded : cnt ? cnt : 1));
			}
	}
	return 0;
}

int npu_window_run(const struct npu_op_args *a, const struct npu_view *in,
		   const struct npu_view *out, uint64_t begin, uint64_t end,
		   const uint32_t *cancel)
{
	return a->op == NPU_OP_CONV2D ? run_conv(a, in, out, begin, end, cancel) :
	       run_pool(a, in, out, begin, end, cancel);
}
