// SPDX-License-Identifier: MIT
/*
 * The op library's window ops over [N, C, H, W] and [N, C, D, H, W]:
 * convolution (im2col and the fast GEMM where it applies, else a direct
 * loop; 3-D as a sum of 2-D ones) and max and average pooling, an output
 * plane (n, o) per unit. npu_window_check() in npu_opdefs.h has vetted
 * the shapes and the window.
 */
#include <stdbool.h>
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

/* Output channel o's bias, or NULL. */
static const float *bias(const struct npu_op *a, const struct npu_view *in, uint64_t o)
{
	return a->epi.flags & NPU_OP_E_BIAS ? (const float *)in[2].data + o * in[2].stride[0] : NULL;
}

/* Where B comes from in a convolution as a GEMM: image n unrolled (im2col). */
struct im2col {
	const float *x;
	const uint64_t *xs;
	const struct npu_op_window *w;
	uint64_t H, W, Wo, kh, kw;
};

/*
 * Row r = (c, i, j) of the unrolled image, columns [t0, t1): for each
 * output position t, the input element under kernel tap (i, j), 0 in the
 * padding. The valid stretch of an output row is worked out once per tap
 * (valid_cols), and with unit strides it is one memcpy.
 */
static void im2col_seg(const struct im2col *m, uint64_t r, uint64_t t0, uint64_t t1, float *row)
{
	const struct npu_op_window *w = m->w;
	uint64_t c = r / (m->kh * m->kw), i = r / m->kw % m->kh, j = r % m->kw;
	int64_t off = (int64_t)(j * w->dilation[1]) - (int64_t)w->pad[1], lo, hi;
	const float *x = m->x + c * m->xs[1];

	valid_cols((int64_t)m->W, (int64_t)m->Wo, w->stride[1], w->pad[1],
		   (int64_t)(j * w->dilation[1]), &lo, &hi);
	for (uint64_t t = t0; t < t1;) {
		uint64_t ho = t / m->Wo;
		int64_t wo0 = (int64_t)(t % m->Wo), n = (int64_t)(m->Wo - t % m->Wo);
		int64_t hin = (int64_t)(ho * w->stride[0] + i * w->dilation[0]) - (int64_t)w->pad[0];
		int64_t a, b;
		float *d = row + (t - t0);
		const float *src;

		n = n < (int64_t)(t1 - t) ? n : (int64_t)(t1 - t);
		t += (uint64_t)n;
		a = lo > wo0 ? lo : wo0;
		b = hi < wo0 + n ? hi : wo0 + n;
		if (hin < 0 || hin >= (int64_t)m->H || a >= b) {
			memset(d, 0, (size_t)n * sizeof(float));
			continue;
		}
		src = x + (uint64_t)hin * m->xs[2];
		memset(d, 0, (size_t)(a - wo0) * sizeof(float));
		memset(d + (b - wo0), 0, (size_t)(wo0 + n - b) * sizeof(float));
		if (w->stride[1] == 1 && m->xs[3] == 1) {
			memcpy(d + (a - wo0), src + a + off, (size_t)(b - a) * sizeof(float));
			continue;
		}
		for (int64_t wo = a; wo < b; wo++)
			d[wo - wo0] = src[(uint64_t)(wo * w->stride[1] + off) * m->xs[3]];
	}
}

/* The GEMM's packer: im2col straight into its strips, a row at a time. */
static void pack_im2col(const void *ctx, uint64_t kb, int64_t kc, uint64_t jb, int64_t nc,
			int64_t nr, float *out)
{
	float row[NPU_GEMM_NC];

	for (int64_t p = 0; p < kc; p++) {
		im2col_seg(ctx, kb + (uint64_t)p, jb, jb + (uint64_t)nc, row);
		for (int64_t js = 0; js < nc; js += nr)
			npu_gemm_put(out + js * kc + p * nr, row + js, nc - js < nr ? nc - js : nr,
				     nr);
	}
}

/*
 * Output columns [t0, t1) of every plane of image n, directly: where the
 * GEMM has no memory for its panels.
 */
static int conv_cols(const struct npu_op *a, const struct npu_view *in,
		     const struct npu_view *out, uint64_t n, uint64_t t0, uint64_t t1, bool add,
		     const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride, *fs = in[1].stride, *ys = out->stride;
	const float *X = (const float *)in[0].data + n * xs[0], *F = in[1].data;
	int64_t H = (int64_t)in[0].shape[2], W = (int64_t)in[0].shape[3];
	uint64_t C = in[0].shape[1], O = out->shape[1], Wo = out->shape[3];
	uint64_t kh = in[1].shape[2], kw = in[1].shape[3];

	for (uint64_t o = 0; o < O; o++) {
		float *y = (float *)out->data + n * ys[0] + o * ys[1];

		if (npu_cancelled(cancel))
			return -1;
		for (uint64_t t = t0; t < t1; t++) {
			int64_t ho = (int64_t)(t / Wo), wo = (int64_t)(t % Wo);
			float acc = 0.0f;

			for (uint64_t c = 0; c < C; c++)
				for (uint64_t i = 0; i < kh; i++)
					for (uint64_t j = 0; j < kw; j++) {
						int64_t r = ho * w->stride[0] - w->pad[0] +
							    (int64_t)i * w->dilation[0];
						int64_t q = wo * w->stride[1] - w->pad[1] +
							    (int64_t)j * w->dilation[1];

						if (r < 0 || r >= H || q < 0 || q >= W)
							continue;
						acc += F[o * fs[0] + c * fs[1] + i * fs[2] + j * fs[3]] *
						       X[c * xs[1] + (uint64_t)r * xs[2] +
							 (uint64_t)q * xs[3]];
					}
			y[t] = add ? y[t] + acc : acc;
		}
	}
	return 0;
}

/* Whether some tap of k, d apart, lands on phase ph of stride s. */
static bool phase_used(uint64_t k, uint64_t d, uint64_t s, uint64_t ph)
{
	for (uint64_t i = 0; i < k; i++)
		if (i * d % s == ph)
			return true;
	return false;
}

/*
 * A GEMM that needs no im2col. With stride 1: over image n padded into
 * rows of Wq = Wo + (kw - 1) dw columns, output (ho, wo) sits at t =
 * ho Wq + wo and tap (c, i, j) reads t + off, off = c P + i dh Wq + j dw
 * (P a padded plane), the same offset for every t. So the taps are the
 * GEMM's rows of B, read in place at their offsets, and the outputs run
 * on across row ends: the Wq - Wo columns per row computed past Wo are
 * dropped when the result (its epilogue applied) goes to the output.
 * A stride s splits the padded image into its s x s phases (rows and
 * columns congruent mod the strides): tap (i, j) reads phase
 * (i dh mod sh, j dw mod sw) shifted by (i dh / sh, j dw / sw), and in
 * its phase the convolution is one of stride 1 again. The share of
 * planes [o0, o1) is the same share [t0, t1) of positions; only the rows
 * it reaches are padded, and only the phases some tap reads.
 */
static int conv_shifted(const struct npu_op *a, const struct npu_view *in,
			const struct npu_view *out, uint64_t n, uint64_t o0, uint64_t o1, bool add,
			const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride, *ys = out->stride;
	uint64_t C = in[0].shape[1], H = in[0].shape[2], W = in[0].shape[3], O = out->shape[1];
	uint64_t Ho = out->shape[2], Wo = out->shape[3], kh = in[1].shape[2], kw = in[1].shape[3];
	uint64_t dh = w->dilation[0], dw = w->dilation[1], sh = w->stride[0], sw = w->stride[1];
	uint64_t eh = (kh - 1) * dh / sh, ew = (kw - 1) * dw / sw, ck = C * kh * kw;
	uint64_t Wq = Wo + ew, T = Ho * Wq, t0 = o0 * T / O, t1 = o1 * T / O;
	uint64_t r0 = t0 / Wq, r1 = (t1 + Wq - 1) / Wq + eh, rows = r1 - r0, PL = rows * Wq;
	uint64_t P = sh * sw * PL + NPU_GEMM_SHIFT_NR + ew, span = t1 - t0;
	uint64_t ldc = span + NPU_GEMM_SHIFT_NR;
	const float *X = (const float *)in[0].data + n * xs[0];
	float *xp, *yp;
	int32_t *off;
	int ret;

	if (t0 >= t1)
		return 0;
	/* A strided 1x1 reads each input once: the phase copy would only add a pass. */
	if (C * P > INT32_MAX || (kh * kw == 1 && sh * sw > 1))
		return 1;
	xp = npu_gemm_scratch(0, C * P);
	yp = npu_gemm_scratch(1, O * ldc);
	off = (int32_t *)npu_gemm_scratch(2, ck);
	if (!xp || !yp || !off)
		return 1;
	for (uint64_t c = 0; c < C; c++) {
		const float *xc = X + c * xs[1];

		for (uint64_t ph = 0; ph < sh; ph++) {
			for (uint64_t pw = 0; pw < sw; pw++) {
				float *pl = xp + c * P + (ph * sw + pw) * PL;

				if (!phase_used(kh, dh, sh, ph) || !phase_used(kw, dw, sw, pw))
					continue;
				for (uint64_t r = r0; r < r1; r++) {
					float *d = pl + (r - r0) * Wq;
					int64_t h = (int64_t)(r * sh + ph) - (int64_t)w->pad[0];
					const float *s = xc + (uint64_t)h * xs[2];

					memset(d, 0, Wq * sizeof(float));
					if (h < 0 || h >= (int64_t)H)
						continue;
					if (sw == 1 && xs[3] == 1) {
						memcpy(d + w->pad[1], s, (W < Wq - w->pad[1] ?
							W : Wq - w->pad[1]) * sizeof(float));
						continue;
					}
					for (uint64_t u = 0; u < Wq; u++) {
						int64_t q = (int64_t)(u * sw + pw) - (int64_t)w->pad[1];

						if (q >= 0 && q < (int64_t)W)
							d[u] = s[(uint64_t)q * xs[3]];
					}
				}
			}
		}
		memset(xp + c * P + sh * sw * PL, 0, (P - sh * sw * PL) * sizeof(float));
	}
	for (uint64_t p = 0; p < ck; p++) {
		uint64_t c = p / (kh * kw), i = p / kw % kh, j = p % kw;

		off[p] = (int32_t)(c * P + (i * dh % sh * sw + j * dw % sw) * PL +
				   i * dh / sh * Wq + j * dw / sw);
	}
	ret = npu_gemm_shifted(in[1].data, in[1].stride[0], O, xp + (t0 - r0 * Wq), off, ck, yp,
			       ldc, span, cancel);
	if (ret)
		return ret;
	for (uint64_t o = 0; o < O; o++) {
		float *y = (float *)out->data + n * ys[0] + o * ys[1];

		for (uint64_t ho = t0 / Wq; ho * Wq < t1; ho++) {
			uint64_t b = ho * Wq > t0 ? ho * Wq : t0, e = ho * Wq + Wo;

			e = e < t1 ? e : t1;
			if (b >= e)
				continue;
			if (add) {
				float *d = y + ho * Wo + (b - ho * Wq);
				const float *src = yp + o * ldc + (b - t0);

				for (uint64_t j = 0; j < e - b; j++)
					d[j] += src[j];
				if (a->epi.flags || a->epi.act)
					npu_epilogue(&a->epi, bias(a, in, o), 0, d, 1, e - b);
			} else if (a->epi.flags || a->epi.act)
				npu_epilogue_from(&a->epi, bias(a, in, o), 0, yp + o * ldc + (b - t0),
						  y + ho * Wo + (b - ho * Wq), 1, e - b);
			else
				memcpy(y + ho * Wo + (b - ho * Wq), yp + o * ldc + (b - t0),
				       (e - b) * sizeof(float));
		}
	}
	return 0;
}

/*
 * Ungrouped, with dense weights and contiguous output planes, on a host
 * with the fast GEMM: Y[o][t] = W[o][c kh kw] col[c kh kw][t], over the
 * image unrolled into columns (im2col) as the GEMM packs them. The units
 * [begin, end) are output planes, but the work is split by columns: the
 * units' share o0..o1 of image n's planes is the same share t0..t1 of its
 * output columns, of every plane, so no two workers unroll the same
 * columns and each packs only its own. 1 if the shapes or the host do
 * not allow it (the same answer for every worker of a launch).
 */
static int conv_as_gemm(const struct npu_op *a, const struct npu_view *in,
			const struct npu_view *out, uint64_t begin, uint64_t end, bool add,
			const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride, *fs = in[1].stride, *ys = out->stride;
	uint64_t C = in[0].shape[1], O = out->shape[1], Ho = out->shape[2], Wo = out->shape[3];
	uint64_t kh = in[1].shape[2], kw = in[1].shape[3], ck = C * kh * kw, hw = Ho * Wo;
	struct im2col m = { .xs = xs, .w = w, .H = in[0].shape[2], .W = in[0].shape[3],
			    .Wo = Wo, .kh = kh, .kw = kw };
	int ret = 0;

	if (w->group != 1 || fs[3] != 1 || fs[2] != kw || fs[1] != kh * kw || ys[3] != 1 ||
	    ys[2] != Wo || !npu_gemm_has_fast())
		return 1;
	for (uint64_t u = begin; u < end;) {
		uint64_t n = u / O, o0 = u % O, o1 = (n + 1) * O < end ? O : end - n * O;
		uint64_t t0 = o0 * hw / O, t1 = o1 * hw / O;

		ret = conv_shifted(a, in, out, n, o0, o1, add, cancel);
		if (ret < 0)
			return ret;
		if (!ret) {
			u = n * O + o1;
			continue;
		}
		m.x = (const float *)in[0].data + n * xs[0];
		ret = npu_gemm_packed(in[1].data, fs[0], 1, pack_im2col, &m,
				      (float *)out->data + n * ys[0], ys[1], 0, O, t0, t1, ck,
				      1.0f, add, cancel);
		if (ret > 0)
			ret = conv_cols(a, in, out, n, t0, t1, add, cancel);
		if (ret < 0)
			return ret;
		for (uint64_t o = 0; o < O && (a->epi.flags || a->epi.act); o++)
			npu_epilogue(&a->epi, bias(a, in, o), 0,
				     (float *)out->data + n * ys[0] + o * ys[1] + t0, 1, t1 - t0);
		u = n * O + o1;
	}
	return 0;
}

/*
 * yr[wo] += wt * xr[wo * sx] over the columns [lo, hi) of an output row:
 * with dense rows at unit or double stride (depthwise convolutions, the
 * path's common case) the strides are constants the loop vectorizes on.
 */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void tap_row(float *yr, const float *xr, float wt, int64_t lo, int64_t hi, int64_t sx,
		    int64_t sy)
{
	if (sy == 1 && sx == 1)
		for (int64_t wo = lo; wo < hi; wo++)
			yr[wo] += wt * xr[wo];
	else if (sy == 1 && sx == 2)
		for (int64_t wo = lo; wo < hi; wo++)
			yr[wo] += wt * xr[2 * wo];
	else
		for (int64_t wo = lo; wo < hi; wo++)
			yr[wo * sy] += wt * xr[wo * sx];
}

/*
 * One output plane (n, o) per unit, added to what is there with `add`
 * (a 3-D convolution's later depth taps). A weight is loaded once per
 * input plane row pass and the inner loop runs over a contiguous stretch
 * of output columns, so with unit strides it vectorizes.
 */
static int run_conv(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end, bool add,
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
	int fast = conv_as_gemm(a, in, out, begin, end, add, cancel);

	if (fast <= 0)
		return fast;
	for (uint64_t u = begin; u < end; u++) {
		uint64_t n = u / O, o = u % O, g = o / opg;
		float *y = Y + n * ys[0] + o * ys[1];

		for (int64_t ho = 0; ho < Ho && !add; ho++)
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
						tap_row(yr, xr, wt, lo, hi, sw * (int64_t)xs[3],
							(int64_t)ys[3]);
					}
				}
		}
		for (int64_t ho = 0; ho < Ho && (a->epi.flags || a->epi.act); ho++)
			npu_epilogue(&a->epi, bias(a, in, o), 0, y + ho * ys[2], ys[3],
				     (uint64_t)Wo);
	}
	return 0;
}

/* A depth slice of 5-D `v`, [1, C, H, W] (its data set per slice). */
static struct npu_view depth_slice(const struct npu_view *v)
{
	return (struct npu_view){ .dtype = v->dtype, .ndim = 4,
				  .shape = { 1, v->shape[1], v->shape[3], v->shape[4] },
				  .stride = { v->stride[0], v->stride[1], v->stride[3],
					      v->stride[4] } };
}

/*
 * A 3-D convolution as 2-D ones: depth slice do of output plane (n, o)
 * is the sum, over the depth taps t whose input slice d = do * stride -
 * pad_front + t * dilation lies in the volume, of the 2-D convolution of
 * slice d with the weights' slice t, the epilogue going with the last of
 * them. The weights are made dense first ([kd][O][C / group][kh][kw]), so
 * every 2-D path, the fast GEMM's among them, takes each tap's slice
 * (without the memory for that, the slices are read in place, strided).
 */
static int run_conv3d(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel)
{
	struct npu_win_dim wd = npu_window_dim(a, 3, 0);
	const uint64_t *xs = in[0].stride, *fs = in[1].stride, *ys = out->stride;
	uint64_t O = out->shape[1], D = in[0].shape[2], Do = out->shape[2], kd = in[1].shape[2];
	uint64_t cg = in[1].shape[1], kh = in[1].shape[3], kw = in[1].shape[4];
	uint64_t per = cg * kh * kw, Ho = out->shape[3], Wo = out->shape[4];
	struct npu_op last = *a, inner = *a;
	struct npu_view v[3] = { depth_slice(&in[0]), { 0 }, in[2] }, y2 = depth_slice(out);
	float *wt = malloc(kd * O * per * sizeof(float));
	int ret = 0;

	for (uint64_t t = 0; t < kd && wt; t++)
		for (uint64_t o = 0; o < O; o++)
			for (uint64_t p = 0; p < per; p++)
				wt[(t * O + o) * per + p] = ((const float *)in[1].data)[
					o * fs[0] + p / (kh * kw) * fs[1] + t * fs[2] +
					p / kw % kh * fs[3] + p % kw * fs[4]];
	inner.epi.flags = 0;
	inner.epi.act = 0;
	/* a tap's weights: its slice of the dense copy, or of in[1] in place */
	v[1] = (struct npu_view){ .dtype = NPU_DT_F32, .ndim = 4, .shape = { O, cg, kh, kw },
				  .stride = { wt ? per : fs[0], wt ? kh * kw : fs[1],
					      wt ? kw : fs[3], wt ? 1 : fs[4] } };
	for (uint64_t u = begin; u < end && !ret;) {
		uint64_t n = u / O, o0 = u % O, o1 = (n + 1) * O < end ? O : end - n * O;

		for (uint64_t od = 0; od < Do && !ret; od++) {
			int64_t first = -1, final = -1;

			for (uint64_t t = 0; t < kd; t++) {
				int64_t d = (int64_t)(od * wd.stride + t * wd.dilation) - (int64_t)wd.pad0;

				if (d >= 0 && d < (int64_t)D) {
					first = first < 0 ? (int64_t)t : first;
					final = (int64_t)t;
				}
			}
			y2.data = (float *)out->data + n * ys[0] + od * ys[2];
			if (first < 0) {	/* every tap in the padding: the epilogue of 0 */
				for (uint64_t o = o0; o < o1; o++)
					for (uint64_t ho = 0; ho < Ho; ho++) {
						float *y = (float *)y2.data + o * ys[1] + ho * ys[3];

						for (uint64_t wo = 0; wo < Wo; wo++)
							y[wo * ys[4]] = 0.0f;
						if (a->epi.flags || a->epi.act)
							npu_epilogue(&a->epi, bias(a, in, o), 0, y,
								     ys[4], Wo);
					}
				continue;
			}
			for (int64_t t = first; t <= final && !ret; t++) {
				int64_t d = (int64_t)(od * wd.stride + (uint64_t)t * wd.dilation) -
					    (int64_t)wd.pad0;

				if (d < 0 || d >= (int64_t)D)
					continue;
				v[0].data = (float *)in[0].data + n * xs[0] + (uint64_t)d * xs[2];
				v[1].data = wt ? wt + (uint64_t)t * O * per :
					    (float *)in[1].data + (uint64_t)t * fs[2];
				ret = run_conv(t == final ? &last : &inner, v, &y2, o0, o1, t != first,
					       cancel);
			}
		}
		u = n * O + o1;
	}
	free(wt);
	return ret;
}

/* yr[wo] = the larger of it and xr[wo * sx] (a nan taken and kept), wo < n. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void tap_max(float *yr, const float *xr, int64_t n, int64_t sx, int64_t sy)
{
#define TAP_MAX(SX, SY)								\
	for (int64_t wo = 0; wo < n; wo++) {					\
		float v = xr[wo * (SX)], m = yr[wo * (SY)];			\
									\
		yr[wo * (SY)] = v > m || isnan(v) ? v : m;			\
	}
	if (sy == 1 && sx == 1)
		TAP_MAX(1, 1)
	else if (sy == 1 && sx == 2)
		TAP_MAX(2, 1)
	else
		TAP_MAX(sx, sy)
#undef TAP_MAX
}

/*
 * A 2-D max pool whose every window lies inside the image (no padding
 * reached, no ceil_mode overhang): for each output row, each tap's input
 * row folded into it with constant strides, in the taps' order, so the
 * maxima (and the nans) are the general loop's. 1: not such a pool.
 */
static int max_pool_inside(const struct npu_op *a, const struct npu_view *in,
			   const struct npu_view *out, uint64_t begin, uint64_t end,
			   const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	const uint64_t *xs = in[0].stride, *ys = out->stride;
	int64_t H = (int64_t)in[0].shape[2], W = (int64_t)in[0].shape[3];
	int64_t Ho = (int64_t)out->shape[2], Wo = (int64_t)out->shape[3];
	int64_t kh = w->kernel[0], kw = w->kernel[1], sh = w->stride[0], sw = w->stride[1];
	int64_t dh = w->dilation[0], dw = w->dilation[1];
	uint64_t C = out->shape[1];

	if (a->op != NPU_OP_MAXPOOL2D || in[0].ndim != 4 || w->pad[0] || w->pad[1] ||
	    (Ho - 1) * sh + (kh - 1) * dh >= H || (Wo - 1) * sw + (kw - 1) * dw >= W)
		return 1;
	for (uint64_t u = begin; u < end; u++) {
		const float *x = (const float *)in[0].data + (u / C) * xs[0] + (u % C) * xs[1];
		float *y = (float *)out->data + (u / C) * ys[0] + (u % C) * ys[1];

		if (npu_cancelled(cancel))
			return -1;
		for (int64_t ho = 0; ho < Ho; ho++) {
			float *yr = y + (uint64_t)ho * ys[2];

			for (int64_t wo = 0; wo < Wo; wo++)
				yr[(uint64_t)wo * ys[3]] = -INFINITY;
			for (int64_t i = 0; i < kh; i++)
				for (int64_t j = 0; j < kw; j++)
					tap_max(yr, x + (uint64_t)(ho * sh + i * dh) * xs[2] +
						    (uint64_t)(j * dw) * xs[3], Wo,
						sw * (int64_t)xs[3], (int64_t)ys[3]);
		}
	}
	return 0;
}

/*
 * One plane (n, c) per unit, in two or three dimensions (a 2-D window is
 * one of depth 1).
 */
static int run_pool(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	const struct npu_op_window *w = &a->win;
	unsigned int nsp = in[0].ndim - 2, hx = nsp, wx = nsp + 1;
	struct npu_win_dim z = nsp == 3 ? npu_window_dim(a, 3, 0) :
			       (struct npu_win_dim){ 1, 1, 1, 0, 0 };
	const uint64_t *xs = in[0].stride, *ys = out->stride;
	int64_t D = nsp == 3 ? (int64_t)in[0].shape[2] : 1, Do = nsp == 3 ? (int64_t)out->shape[2] : 1;
	uint64_t xsd = nsp == 3 ? xs[2] : 0, ysd = nsp == 3 ? ys[2] : 0;
	int64_t H = (int64_t)in[0].shape[hx], W = (int64_t)in[0].shape[wx];
	int64_t Ho = (int64_t)out->shape[hx], Wo = (int64_t)out->shape[wx];
	int64_t kh = w->kernel[0], kw = w->kernel[1], sh = w->stride[0], sw = w->stride[1];
	int64_t dh = w->dilation[0], dw = w->dilation[1], pt = w->pad[0], pl = w->pad[1];
	int64_t kz = (int64_t)z.kernel, sz = (int64_t)z.stride, dz = (int64_t)z.dilation;
	int64_t pf = (int64_t)z.pad0, dend = D + (int64_t)z.pad1;
	int64_t hend = H + w->pad[2], wend = W + w->pad[3];
	bool max = a->op == NPU_OP_MAXPOOL2D, count_pad = w->flags & NPU_OP_W_COUNT_PAD;
	uint64_t C = out->shape[1];
	int inside = max_pool_inside(a, in, out, begin, end, cancel);

	if (inside <= 0)
		return inside;
	for (uint64_t u = begin; u < end; u++) {
		const float *x = (const float *)in[0].data + (u / C) * xs[0] + (u % C) * xs[1];
		float *y = (float *)out->data + (u / C) * ys[0] + (u % C) * ys[1];

		if (npu_cancelled(cancel))
			return -1;
		for (int64_t od = 0; od < Do; od++)
		for (int64_t ho = 0; ho < Ho; ho++)
			for (int64_t wo = 0; wo < Wo; wo++) {
				double acc = 0;
				float m = -INFINITY;
				int64_t cnt = 0, padded = 0;

				for (int64_t l = 0; l < kz; l++) {
				int64_t q = od * sz - pf + l * dz;

				for (int64_t i = 0; i < kh; i++) {
					int64_t r = ho * sh - pt + i * dh;

					for (int64_t j = 0; j < kw; j++) {
						int64_t col = wo * sw - pl + j * dw;
						float v;

						/* padding counts; what ceil_mode adds past it does not */
						if (q < dend && r < hend && col < wend)
							padded++;
						if (q < 0 || q >= D || r < 0 || r >= H || col < 0 ||
						    col >= W)
							continue;
						v = x[(uint64_t)q * xsd + (uint64_t)r * xs[hx] +
						      (uint64_t)col * xs[wx]];
						m = v > m || isnan(v) ? v : m;
						acc += v;
						cnt++;
					}
				}
				}
				y[(uint64_t)od * ysd + (uint64_t)ho * ys[hx] + (uint64_t)wo * ys[wx]] =
					max ? m : (float)(acc / (double)(count_pad ? padded :
									 cnt ? cnt : 1));
			}
	}
	return 0;
}

int npu_window_run(const struct npu_op *a, const struct npu_view *in,
		   const struct npu_view *out, uint64_t begin, uint64_t end,
		   const uint32_t *cancel)
{
	if (a->op != NPU_OP_CONV2D)
		return run_pool(a, in, out, begin, end, cancel);
	if (out->dtype == NPU_DT_I32)
		return npu_conv_int8_run(a, in, out, begin, end, cancel);
	return in[0].ndim == 5 ? run_conv3d(a, in, out, begin, end, cancel) :
	       run_conv(a, in, out, begin, end, false, cancel);
}
