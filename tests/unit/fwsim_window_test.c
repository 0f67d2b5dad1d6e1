// SPDX-License-Identifier: MIT
/*
 * The op library's windows (CONV2D, MAXPOOL2D, AVGPOOL2D) against
 * references written here a different way: the image is first copied
 * into an explicitly padded buffer (zeros for convolution, NaN marks for
 * the pools), then every window is read from it. Results within 1e-5 of
 * the sum of the absolute products; the checks refuse bad windows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwsim_isa.h"
#include "kselftest_harness.h"
#include "npu_opdefs.h"
#include "npu_ops.h"

static uint32_t rng = 777;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

static void dense(struct npu_tensor *t, struct npu_view *v, float *data, uint64_t n,
		  uint64_t c, uint64_t h, uint64_t w)
{
	const uint64_t shape[4] = { n, c, h, w };

	memset(t, 0, sizeof(*t));
	t->dtype = NPU_DT_F32;
	t->ndim = 4;
	for (int k = 3, s = 1; k >= 0; s *= (int)shape[k], k--) {
		t->shape[k] = shape[k];
		t->stride[k] = (uint64_t)s;
	}
	v->data = data;
	v->dtype = NPU_DT_F32;
	v->ndim = 4;
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

struct win {
	uint32_t n, c, h, w, o, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group;
	uint32_t op, flags;
	int ceil;
	/* CONV2D's epilogue: a bias per output channel, then LEAKY_RELU (0.25) */
	int bias, leaky;
};

/* x padded into [n][c][H + pt + pb][W + pl + pr], `fill` outside. */
static float *padded(const struct win *p, const float *x, float fill, uint64_t *hp, uint64_t *wp)
{
	float *b;

	*hp = p->h + p->pt + p->pb;
	*wp = p->w + p->pl + p->pr;
	b = malloc(sizeof(float) * p->n * p->c * *hp * *wp);
	for (uint64_t i = 0; i < p->n * p->c * *hp * *wp; i++)
		b[i] = fill;
	for (uint64_t nc = 0; nc < (uint64_t)p->n * p->c; nc++)
		for (uint64_t r = 0; r < p->h; r++)
			memcpy(b + (nc * *hp + r + p->pt) * *wp + p->pl, x + (nc * p->h + r) * p->w,
			       p->w * sizeof(float));
	return b;
}

/* Run the op library's window op and the reference; the largest difference. */
static double run_once(struct __test_metadata *_metadata, const struct win *p)
{
	uint32_t kh = p->kh, kw = p->kw;
	uint64_t ho = npu_window_out(p->h, p->pt, p->pb, kh, p->sh, p->dh, p->ceil);
	uint64_t wo = npu_window_out(p->w, p->pl, p->pr, kw, p->sw, p->dw, p->ceil);
	uint32_t o = p->op == NPU_OP_CONV2D ? p->o : p->c, cpg = p->c / (p->group ? p->group : 1);
	uint64_t nx = (uint64_t)p->n * p->c * p->h * p->w, nf = (uint64_t)o * cpg * kh * kw;
	uint64_t ny = (uint64_t)p->n * o * ho * wo, hp, wp;
	float *x = malloc(nx * 4), *f = malloc(nf * 4 + 4), *y = malloc(ny * 4), *px;
	float *bias = malloc(o * sizeof(float));
	struct npu_op a = { .op = p->op };
	struct npu_view v[4] = { 0 };
	double worst = 0;

	for (uint64_t i = 0; i < nx; i++)
		x[i] = frand();
	for (uint64_t i = 0; i < nf; i++)
		f[i] = frand();
	for (uint64_t i = 0; i < ny; i++)	/* the op writes every element */
		y[i] = 1e30f;
	dense(&a.in[0], &v[0], x, p->n, p->c, p->h, p->w);
	dense(&a.in[1], &v[1], f, o, cpg, kh, kw);
	dense(&a.out, &v[3], y, p->n, o, ho, wo);
	for (uint32_t i = 0; i < o; i++)
		bias[i] = frand();
	if (p->bias) {
		a.epi.flags = NPU_OP_E_BIAS;
		a.epi.bias = (struct npu_tensor){ .dtype = NPU_DT_F32, .ndim = 1, .shape = { o },
						     .stride = { 1 } };
		v[2] = (struct npu_view){ .data = bias, .dtype = NPU_DT_F32, .ndim = 1,
					  .shape = { o }, .stride = { 1 } };
	}
	if (p->leaky) {
		a.epi.act = NPU_OP_LEAKY_RELU;
		a.epi.alpha = 0.25f;
	}
	a.win = (struct npu_op_window){ .kernel = { kh, kw }, .stride = { p->sh, p->sw },
					.dilation = { p->dh, p->dw },
					.pad = { p->pt, p->pl, p->pb, p->pr }, .group = p->group,
					.flags = p->flags };
	if (p->op == NPU_OP_CONV2D)
		a.win.kernel[0] = a.win.kernel[1] = 0;
	ASSERT_EQ(NULL, npu_op_check(&a)) TH_LOG("%s", npu_op_check(&a));
	/* three workers' shares, the middle one starting inside an image */
	npu_op_run(&a, v, &v[3], 0, npu_op_units(&a) / 3);
	npu_op_run(&a, v, &v[3], npu_op_units(&a) / 3, npu_op_units(&a) * 2 / 3);
	npu_op_run(&a, v, &v[3], npu_op_units(&a) * 2 / 3, npu_op_units(&a));
	px = padded(p, x, p->op == NPU_OP_CONV2D ? 0.0f : NAN, &hp, &wp);
	for (uint64_t e = 0; e < ny; e++) {
		uint64_t j = e % wo, i = e / wo % ho, oc = e / (wo * ho) % o, n = e / (wo * ho * o);
		double acc = 0, mag = 0, cnt = 0, all = 0, m = -INFINITY;

		for (uint32_t c = 0; c < (p->op == NPU_OP_CONV2D ? cpg : 1); c++)
			for (uint32_t u = 0; u < kh; u++)
				for (uint32_t t = 0; t < kw; t++) {
					uint64_t r = i * p->sh + u * p->dh, q = j * p->sw + t * p->dw;
					uint64_t ic = p->op == NPU_OP_CONV2D ?
						      oc / (o / p->group) * cpg + c : oc;
					double xv;

					if (r >= hp || q >= wp)	/* ceil_mode's overhang */
						continue;
					all++;
					xv = px[((n * p->c + ic) * hp + r) * wp + q];
					if (p->op == NPU_OP_CONV2D) {
						double fv = f[((oc * cpg + c) * kh + u) * kw + t];

						acc += xv * fv;
						mag += fabs(xv * fv);
					} else if (!isnan(xv)) {
						acc += xv;
						mag += fabs(xv);
						m = xv > m ? xv : m;
						cnt++;
					}
				}
		if (p->bias)
			acc += bias[oc];
		if (p->leaky && acc < 0)
			acc *= 0.25;
		if (p->op == NPU_OP_MAXPOOL2D)
			acc = m;
		else if (p->op == NPU_OP_AVGPOOL2D)
			acc /= p->flags & NPU_OP_W_COUNT_PAD ? all : cnt;
		worst = fmax(worst, fabs(y[e] - acc) / (mag > 1 ? mag : 1));
	}
	free(x);
	free(f);
	free(y);
	free(px);
	free(bias);
	return worst;
}

/* run_once() on each kernel the host has: the widest, AVX2, the portable loops. */
static double run(struct __test_metadata *_metadata, const struct win *p)
{
	double worst = 0;

	for (unsigned int k = 0; k < FWSIM_ISAS; k++) {
		fwsim_isa(k);
		worst = fmax(worst, run_once(_metadata, p));
	}
	fwsim_isa(0);
	return worst;
}

TEST(a_padded_3x3_convolution_matches)
{
	struct win p = { 2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NPU_OP_CONV2D, 0, 0, 0, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

TEST(strides_dilations_groups_and_uneven_pads_match)
{
	struct win p = { 1, 6, 11, 13, 4, 3, 2, 2, 3, 2, 1, 0, 2, 1, 0, 2, NPU_OP_CONV2D, 0, 0, 0, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

TEST(ungrouped_strides_dilations_and_uneven_pads_match)
{
	struct win p = { 3, 5, 12, 13, 7, 3, 2, 2, 3, 2, 1, 0, 2, 1, 0, 1, NPU_OP_CONV2D, 0, 0, 0, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

/*
 * Stride 1 with dilations and uneven pads (the shifted GEMM's padded
 * rows), more output channels than a kernel's block, two images.
 */
TEST(unit_strides_with_dilations_and_uneven_pads_match)
{
	struct win p = { 2, 5, 12, 11, 13, 3, 3, 1, 1, 2, 3, 2, 0, 1, 3, 1, NPU_OP_CONV2D, 0, 0,
			 1, 1 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

/* Past one panel of the GEMM each way: 40 * 9 rows of taps, 30 * 30 columns. */
TEST(a_convolution_larger_than_a_gemm_panel_matches)
{
	struct win p = { 1, 40, 30, 30, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NPU_OP_CONV2D, 0, 0, 0, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

/* Bias and activation on the way out, on the GEMM's path and the direct one. */
TEST(the_epilogue_adds_the_bias_and_applies_the_activation)
{
	struct win gemm = { 2, 6, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NPU_OP_CONV2D, 0, 0,
			    1, 1 };
	struct win grouped = { 1, 6, 11, 13, 4, 3, 2, 2, 3, 2, 1, 0, 2, 1, 0, 2, NPU_OP_CONV2D,
			       0, 0, 1, 1 };
	struct win act_only = gemm;

	act_only.bias = 0;
	EXPECT_LT(run(_metadata, &gemm), 1e-5);
	EXPECT_LT(run(_metadata, &grouped), 1e-5);
	EXPECT_LT(run(_metadata, &act_only), 1e-5);
}

/* A strided 1x1 (a downsampling projection): the im2col GEMM, not the shifted one. */
TEST(a_strided_pointwise_convolution_matches)
{
	struct win p = { 2, 6, 9, 8, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, NPU_OP_CONV2D, 0, 0,
			 1, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

/*
 * Strided down only (2, 1), padded at the sides: the im2col GEMM's
 * unit-stride rows, each one copy from the tap's column offset.
 */
TEST(a_pointwise_convolution_strided_down_and_padded_at_the_sides_matches)
{
	struct win p = { 2, 6, 9, 8, 5, 1, 1, 2, 1, 1, 1, 0, 2, 0, 1, 1, NPU_OP_CONV2D, 0, 0,
			 1, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

TEST(a_depthwise_convolution_matches)
{
	struct win p = { 1, 5, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, NPU_OP_CONV2D, 0, 0, 0, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

TEST(max_pooling_ignores_padding_and_takes_ceil_windows)
{
	struct win p = { 2, 3, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, NPU_OP_MAXPOOL2D, 0, 1, 0, 0 };

	EXPECT_EQ(0.0, run(_metadata, &p));
}

/*
 * Windows all inside the image (no padding, no ceil overhang): 2x2 by 2
 * (the even rows and columns of an odd-sized image), 1x2 by (1, 2), and
 * 3x3 by 1 dilated 2: the row-folding path, against the reference. Then
 * ceil_mode's last column of windows, one past the image (its rows all
 * inside): the general path.
 */
TEST(max_pooling_inside_the_image_matches)
{
	struct win p = { 2, 3, 9, 11, 3, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, NPU_OP_MAXPOOL2D, 0, 0,
			 0, 0 };

	EXPECT_EQ(0.0, run(_metadata, &p));
	p.kh = 1, p.sh = 1;
	EXPECT_EQ(0.0, run(_metadata, &p));
	p.kh = p.kw = 3, p.sh = p.sw = 1, p.dh = p.dw = 2;
	EXPECT_EQ(0.0, run(_metadata, &p));
	p.kh = p.kw = 2, p.sh = p.sw = 2, p.dh = p.dw = 1, p.ceil = 1, p.h = 10;
	EXPECT_EQ(0.0, run(_metadata, &p));
}

TEST(average_pooling_counts_padding_only_when_asked)
{
	struct win p = { 1, 2, 6, 6, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, NPU_OP_AVGPOOL2D, 0, 0, 0, 0 };

	EXPECT_LT(run(_metadata, &p), 1e-6);
	p.flags = NPU_OP_W_COUNT_PAD;
	EXPECT_LT(run(_metadata, &p), 1e-6);
}

TEST(bad_windows_are_refused)
{
	struct npu_op a = { .op = NPU_OP_CONV2D };
	struct npu_view v[3];
	float buf[1];

	dense(&a.in[0], &v[0], buf, 1, 4, 8, 8);
	dense(&a.in[1], &v[1], buf, 2, 4, 3, 3);
	dense(&a.out, &v[2], buf, 1, 2, 6, 6);
	a.win = (struct npu_op_window){ .stride = { 1, 1 }, .dilation = { 1, 1 }, .group = 1 };
	ASSERT_EQ(NULL, npu_op_check(&a));
	a.win.stride[1] = 0;			/* a block that ended before `win` */
	EXPECT_NE(NULL, npu_op_check(&a));
	a.win.stride[1] = 1;
	a.win.group = 3;			/* does not split 4 channels */
	EXPECT_NE(NULL, npu_op_check(&a));
	a.win.group = 1;
	a.out.shape[3] = 8;			/* more columns than windows */
	EXPECT_NE(NULL, npu_op_check(&a));
	a.out.shape[3] = 6;
	a.in[1].shape[1] = 3;			/* weights of other channels */
	EXPECT_NE(NULL, npu_op_check(&a));
	a.in[1].shape[1] = 4;
	a.op = NPU_OP_MAXPOOL2D;		/* pools keep their channels */
	a.win.kernel[0] = a.win.kernel[1] = 3;
	a.win.group = 0;
	EXPECT_NE(NULL, npu_op_check(&a));
	a.out.shape[1] = 4;
	EXPECT_EQ(NULL, npu_op_check(&a));
	a.win.flags = NPU_OP_W_COUNT_PAD;	/* a flag of avgpool2d only */
	EXPECT_NE(NULL, npu_op_check(&a));
}

TEST_HARNESS_MAIN
