// SPDX-License-Identifier: MIT
/*
 * Firmware 0.6's additions to the op library: 3-D windows (CONV2D,
 * MAXPOOL2D, AVGPOOL2D over [N, C, D, H, W]) and tensors of up to 8
 * dimensions, against references written here another way (the volume
 * copied into an explicitly padded buffer first; plain index arithmetic
 * for the elementwise ops), and the argument block's high dimensions
 * decoded where the ops look for them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwsim_isa.h"
#include "kselftest_harness.h"
#include "npu_opdefs.h"
#include "npu_ops.h"

static uint32_t rng = 4242;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

/* A dense row-major tensor of `nd` dimensions and its view of `data`. */
static void dense(struct npu_tensor *t, struct npu_view *v, void *data, uint32_t dtype,
		  uint32_t nd, const uint64_t *shape)
{
	uint64_t s = 1;

	memset(t, 0, sizeof(*t));
	t->dtype = dtype;
	t->ndim = nd;
	for (int k = (int)nd - 1; k >= 0; k--) {
		t->shape[k] = shape[k];
		t->stride[k] = s;
		s *= shape[k];
	}
	if (!v)
		return;
	memset(v, 0, sizeof(*v));
	v->data = data;
	v->dtype = dtype;
	v->ndim = nd;
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

struct win3 {
	uint32_t n, c, o, group;
	uint32_t in[3], k[3], st[3], dl[3], p0[3], p1[3];	/* depth, rows, columns */
	uint32_t op, flags;
	int bias, relu;
};

static uint64_t prod(const uint64_t *d, int n)
{
	uint64_t p = 1;

	for (int k = 0; k < n; k++)
		p *= d[k];
	return p;
}

/*
 * The op library's 3-D window op, run as three workers' shares, and the
 * reference; the largest difference relative to the sum of magnitudes.
 */
static double run3(struct __test_metadata *_metadata, const struct win3 *p)
{
	bool conv = p->op == NPU_OP_CONV2D;
	uint32_t o = conv ? p->o : p->c, cpg = conv ? p->c / p->group : 1;
	uint64_t on[3], pd[3], xs[5], ys[5], fs[5];
	struct npu_op a = { .op = p->op };
	struct npu_view v[4] = { 0 };
	float *x, *f, *y, *px, *bias;
	double worst = 0;

	for (int k = 0; k < 3; k++) {
		on[k] = npu_window_out(p->in[k], p->p0[k], p->p1[k], p->k[k], p->st[k], p->dl[k], 0);
		pd[k] = p->in[k] + p->p0[k] + p->p1[k];
	}
	xs[0] = p->n, xs[1] = p->c, memcpy(xs + 2, (uint64_t[]){ p->in[0], p->in[1], p->in[2] }, 24);
	ys[0] = p->n, ys[1] = o, memcpy(ys + 2, on, 24);
	fs[0] = o, fs[1] = cpg, memcpy(fs + 2, (uint64_t[]){ p->k[0], p->k[1], p->k[2] }, 24);
	x = malloc(prod(xs, 5) * 4);
	f = malloc(prod(fs, 5) * 4);
	y = malloc(prod(ys, 5) * 4);
	bias = malloc(o * 4);
	for (uint64_t i = 0; i < prod(xs, 5); i++)
		x[i] = frand();
	for (uint64_t i = 0; i < prod(fs, 5); i++)
		f[i] = frand();
	for (uint64_t i = 0; i < prod(ys, 5); i++)
		y[i] = 1e30f;			/* the op writes every element */
	for (uint32_t i = 0; i < o; i++)
		bias[i] = frand();
	dense(&a.in[0], &v[0], x, NPU_DT_F32, 5, xs);
	if (conv)
		dense(&a.in[1], &v[1], f, NPU_DT_F32, 5, fs);
	dense(&a.out, &v[3], y, NPU_DT_F32, 5, ys);
	if (p->bias) {
		a.epi.flags = NPU_OP_E_BIAS;
		dense(&a.epi.bias, &v[2], bias, NPU_DT_F32, 1, (uint64_t[]){ o });
	}
	if (p->relu)
		a.epi.act = NPU_OP_RELU;
	a.win = (struct npu_op_window){ .kernel = { conv ? 0 : p->k[1], conv ? 0 : p->k[2] },
					.stride = { p->st[1], p->st[2] },
					.dilation = { p->dl[1], p->dl[2] },
					.pad = { p->p0[1], p->p0[2], p->p1[1], p->p1[2] },
					.group = conv ? p->group : 0, .flags = p->flags };
	a.win_d = (struct npu_op_window_depth){ .kernel = conv ? 0 : p->k[0], .stride = p->st[0],
						.dilation = p->dl[0],
						.pad = { p->p0[0], p->p1[0] } };
	ASSERT_EQ(NULL, npu_op_check(&a)) TH_LOG("%s", npu_op_check(&a));
	npu_op_run(&a, v, &v[3], 0, npu_op_units(&a) / 3);
	npu_op_run(&a, v, &v[3], npu_op_units(&a) / 3, npu_op_units(&a) * 2 / 3);
	npu_op_run(&a, v, &v[3], npu_op_units(&a) * 2 / 3, npu_op_units(&a));

	/* the volume padded: zeros for a convolution, NaN marks for the pools */
	px = malloc(p->n * p->c * prod(pd, 3) * 4);
	for (uint64_t i = 0; i < p->n * p->c * prod(pd, 3); i++)
		px[i] = conv ? 0.0f : NAN;
	for (uint64_t i = 0; i < prod(xs, 5); i++) {
		uint64_t w = i % xs[4], h = i / xs[4] % xs[3], d = i / (xs[4] * xs[3]) % xs[2];
		uint64_t nc = i / (xs[4] * xs[3] * xs[2]);

		px[((nc * pd[0] + d + p->p0[0]) * pd[1] + h + p->p0[1]) * pd[2] + w + p->p0[2]] = x[i];
	}
	for (uint64_t e = 0; e < prod(ys, 5); e++) {
		uint64_t ow = e % on[2], oh = e / on[2] % on[1], od = e / (on[2] * on[1]) % on[0];
		uint64_t oc = e / prod(on, 3) % o, n = e / (prod(on, 3) * o);
		double acc = 0, mag = 0, cnt = 0, m = -INFINITY;

		for (uint32_t c = 0; c < cpg; c++)
			for (uint64_t t = 0; t < p->k[0] * p->k[1] * p->k[2]; t++) {
				uint64_t td = t / (p->k[1] * p->k[2]), th = t / p->k[2] % p->k[1];
				uint64_t tw = t % p->k[2];
				uint64_t zd = od * p->st[0] + td * p->dl[0];
				uint64_t zh = oh * p->st[1] + th * p->dl[1];
				uint64_t zw = ow * p->st[2] + tw * p->dl[2];
				uint64_t ic = conv ? oc / (o / p->group) * cpg + c : oc;
				double xv = px[(((n * p->c + ic) * pd[0] + zd) * pd[1] + zh) * pd[2] + zw];

				if (conv) {
					double fv = f[(oc * cpg + c) * p->k[0] * p->k[1] * p->k[2] + t];

					acc += xv * fv;
					mag += fabs(xv * fv);
					continue;
				}
				cnt += !isnan(xv) || p->flags & NPU_OP_W_COUNT_PAD;
				if (isnan(xv))
					continue;
				acc += xv;
				mag += fabs(xv);
				m = xv > m ? xv : m;
			}
		if (p->bias)
			acc += bias[oc];
		if (p->relu && acc < 0)
			acc = 0;
		if (p->op == NPU_OP_MAXPOOL2D)
			acc = m;
		else if (p->op == NPU_OP_AVGPOOL2D)
			acc /= cnt;
		worst = fmax(worst, fabs(y[e] - acc) / (mag > 1 ? mag : 1));
	}
	free(x);
	free(f);
	free(y);
	free(px);
	free(bias);
	return worst;
}

/* run3() on each kernel the host has: the widest, AVX2, the portable loops. */
static double run(struct __test_metadata *_metadata, const struct win3 *p)
{
	double worst = 0;

	for (unsigned int k = 0; k < FWSIM_ISAS; k++) {
		fwsim_isa(k);
		worst = fmax(worst, run3(_metadata, p));
	}
	fwsim_isa(0);
	return worst;
}

/* Depth taps that fall in the padding at both ends, bias and RELU on the last tap. */
TEST(a_padded_3d_convolution_matches)
{
	struct win3 p = { .n = 2, .c = 3, .o = 5, .group = 1, .in = { 5, 7, 6 },
			  .k = { 3, 3, 3 }, .st = { 1, 1, 1 }, .dl = { 1, 1, 1 },
			  .p0 = { 1, 1, 1 }, .p1 = { 1, 1, 1 }, .op = NPU_OP_CONV2D,
			  .bias = 1, .relu = 1 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

/*
 * Strides, dilations, groups and uneven pads in every dimension; an
 * output slice whose depth taps all land in the padding gets the
 * epilogue of 0 (the bias).
 */
TEST(strides_dilations_groups_and_depth_padding_match)
{
	struct win3 p = { .n = 1, .c = 4, .o = 6, .group = 2, .in = { 4, 9, 8 },
			  .k = { 2, 3, 2 }, .st = { 3, 2, 1 }, .dl = { 2, 1, 2 },
			  .p0 = { 3, 0, 2 }, .p1 = { 2, 1, 0 }, .op = NPU_OP_CONV2D, .bias = 1 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
	p.relu = 1;
	p.group = 1;
	p.o = 3;
	EXPECT_LT(run(_metadata, &p), 1e-5);
}

/*
 * Depth taps of strided 1x1 slices: each 2-D convolution takes the im2col
 * GEMM, the taps after the first adding into what the first wrote.
 */
TEST(depth_taps_over_strided_pointwise_slices_match)
{
	struct win3 p = { .n = 1, .c = 5, .o = 4, .group = 1, .in = { 4, 7, 9 },
			  .k = { 2, 1, 1 }, .st = { 1, 2, 2 }, .dl = { 2, 1, 1 },
			  .p0 = { 1, 0, 0 }, .p1 = { 1, 0, 0 }, .op = NPU_OP_CONV2D, .bias = 1 };

	EXPECT_LT(run(_metadata, &p), 1e-5);
}

TEST(max_and_average_3d_pooling_match)
{
	struct win3 p = { .n = 2, .c = 3, .in = { 5, 6, 7 }, .k = { 2, 3, 2 },
			  .st = { 2, 2, 1 }, .dl = { 1, 1, 2 }, .p0 = { 1, 1, 0 },
			  .p1 = { 1, 0, 1 }, .op = NPU_OP_MAXPOOL2D };

	EXPECT_EQ(0.0, run(_metadata, &p));
	p.op = NPU_OP_AVGPOOL2D;
	EXPECT_LT(run(_metadata, &p), 1e-6);
	p.flags = NPU_OP_W_COUNT_PAD;
	EXPECT_LT(run(_metadata, &p), 1e-6);
}

TEST(bad_3d_windows_are_refused)
{
	struct npu_op a = { .op = NPU_OP_CONV2D }, good;

	dense(&a.in[0], NULL, NULL, NPU_DT_F32, 5, (uint64_t[]){ 1, 4, 6, 8, 8 });
	dense(&a.in[1], NULL, NULL, NPU_DT_F32, 5, (uint64_t[]){ 2, 4, 3, 3, 3 });
	dense(&a.out, NULL, NULL, NPU_DT_F32, 5, (uint64_t[]){ 1, 2, 4, 6, 6 });
	a.win = (struct npu_op_window){ .stride = { 1, 1 }, .dilation = { 1, 1 }, .group = 1 };
	a.win_d = (struct npu_op_window_depth){ .stride = 1, .dilation = 1 };
	ASSERT_EQ(NULL, npu_op_check(&a));
	good = a;
	a.win_d.stride = 0;			/* a block that ended before win_d */
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "strides"));
	a = good, a.out.shape[2] = 5;		/* more slices than windows */
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "output shape"));
	a = good;				/* 2-D weights for a 3-D window */
	dense(&a.in[1], NULL, NULL, NPU_DT_F32, 4, (uint64_t[]){ 2, 4, 3, 3 });
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "weights"));
	a = good, a.win_d.kernel = 3;		/* conv2d's kernel is its weights' */
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "weights"));
	a = good, a.win_d.reserved = 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "depth"));
	a = good, a.win_d.pad[1] = 70000;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "pads"));

	/* A 2-D window has no depth. */
	dense(&a.in[0], NULL, NULL, NPU_DT_F32, 4, (uint64_t[]){ 1, 4, 8, 8 });
	dense(&a.in[1], NULL, NULL, NPU_DT_F32, 4, (uint64_t[]){ 2, 4, 3, 3 });
	dense(&a.out, NULL, NULL, NPU_DT_F32, 4, (uint64_t[]){ 1, 2, 6, 6 });
	a.win_d = (struct npu_op_window_depth){ 0 };
	ASSERT_EQ(NULL, npu_op_check(&a));
	a.win_d.stride = 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "no depth"));
}

/* An index's offset in a dense tensor of shape d[0..nd). */
static uint64_t at(const uint64_t *d, const uint64_t *ix, int nd)
{
	uint64_t off = 0;

	for (int k = 0; k < nd; k++)
		off = off * d[k] + ix[k];
	return off;
}

static void unravel(uint64_t e, const uint64_t *d, int nd, uint64_t *ix)
{
	for (int k = nd - 1; k >= 0; k--) {
		ix[k] = e % d[k];
		e /= d[k];
	}
}

/*
 * Seven and eight dimensions: an ADD that broadcasts along two of them
 * (zero strides past the fourth), a REDUCE_SUM over dimension 5, a
 * TRANSPOSE that moves every dimension, and a block whose high
 * dimensions decode where the ops read them.
 */
TEST(eight_dimensions_broadcast_reduce_and_transpose)
{
	static const uint64_t d[8] = { 2, 3, 1, 2, 3, 4, 2, 3 };
	static const uint32_t perm[8] = { 7, 5, 0, 6, 1, 4, 3, 2 };
	uint64_t n = prod(d, 8), b[8], r[8], t[8], ix[8], jx[8];
	float *x = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4), *s;
	struct npu_op a = { .op = NPU_OP_ADD };
	struct npu_view v[4] = { 0 };
	struct npu_op_args blk;
	struct npu_op back;

	for (uint64_t i = 0; i < n; i++)
		x[i] = frand();
	memcpy(b, d, sizeof(b));
	b[4] = b[6] = 1;			/* y broadcasts along 4 and 6 */
	for (uint64_t i = 0; i < prod(b, 8); i++)
		y[i] = frand();
	dense(&a.in[0], &v[0], x, NPU_DT_F32, 8, d);
	dense(&a.in[1], &v[1], y, NPU_DT_F32, 8, b);
	for (int k = 4; k <= 6; k += 2) {
		a.in[1].shape[k] = v[1].shape[k] = d[k];
		a.in[1].stride[k] = v[1].stride[k] = 0;
	}
	dense(&a.out, &v[3], z, NPU_DT_F32, 8, d);

	/* through the block and back: dimensions 4.. travel in hi[] */
	npu_op_encode(&a, &blk);
	EXPECT_EQ(8, blk.in[1].ndim);
	EXPECT_EQ(0, blk.hi[1].stride[0]);
	EXPECT_EQ(d[7], blk.hi[2].shape[3]);
	npu_op_decode(&blk, &back);
	EXPECT_EQ(0, memcmp(&a, &back, sizeof(a)));
	ASSERT_EQ(NULL, npu_op_check(&back)) TH_LOG("%s", npu_op_check(&back));
	npu_op_run(&back, v, &v[3], 0, npu_op_units(&back) / 2);
	npu_op_run(&back, v, &v[3], npu_op_units(&back) / 2, npu_op_units(&back));
	for (uint64_t e = 0; e < n; e++) {
		unravel(e, d, 8, ix);
		memcpy(jx, ix, sizeof(jx));
		jx[4] = jx[6] = 0;
		ASSERT_EQ(x[e] + y[at(b, jx, 8)], z[e]) TH_LOG("element %llu", (unsigned long long)e);
	}

	/* REDUCE_SUM over dimension 5 */
	memcpy(r, d, sizeof(r));
	r[5] = 1;
	s = malloc(prod(r, 8) * 4);
	a = (struct npu_op){ .op = NPU_OP_REDUCE_SUM, .axis = 5 };
	dense(&a.in[0], &v[0], z, NPU_DT_F32, 8, d);
	dense(&a.out, &v[3], s, NPU_DT_F32, 8, r);
	ASSERT_EQ(NULL, npu_op_check(&a)) TH_LOG("%s", npu_op_check(&a));
	npu_op_run(&a, v, &v[3], 0, npu_op_units(&a));
	for (uint64_t e = 0; e < prod(r, 8); e++) {
		double want = 0;

		unravel(e, r, 8, ix);
		for (ix[5] = 0; ix[5] < d[5]; ix[5]++)
			want += z[at(d, ix, 8)];
		ix[5] = 0;
		ASSERT_LT(fabs(s[e] - want), 1e-5);
	}
	free(s);

	/* TRANSPOSE: out's dimension k is in's perm[k] */
	a = (struct npu_op){ .op = NPU_OP_TRANSPOSE };
	memcpy(a.perm, perm, sizeof(perm));
	for (int k = 0; k < 8; k++)
		t[k] = d[perm[k]];
	dense(&a.in[0], &v[0], x, NPU_DT_F32, 8, d);
	dense(&a.out, &v[3], y, NPU_DT_F32, 8, t);
	npu_op_encode(&a, &blk);
	EXPECT_EQ(perm[4], blk.perm_hi[0]);
	npu_op_decode(&blk, &back);
	ASSERT_EQ(NULL, npu_op_check(&back)) TH_LOG("%s", npu_op_check(&back));
	npu_op_run(&back, v, &v[3], 0, npu_op_units(&back));
	for (uint64_t e = 0; e < n; e++) {
		unravel(e, t, 8, ix);
		for (int k = 0; k < 8; k++)
			jx[perm[k]] = ix[k];
		ASSERT_EQ(x[at(d, jx, 8)], y[e]) TH_LOG("element %llu", (unsigned long long)e);
	}
	free(x);
	free(y);
	free(z);
}

/* A tensor of 4 dimensions or fewer must leave the block's hi[] zero. */
TEST(high_dimensions_of_a_low_rank_tensor_are_refused)
{
	struct npu_op a = { .op = NPU_OP_RELU };
	struct npu_op_args blk;
	struct npu_op back;

	dense(&a.in[0], NULL, NULL, NPU_DT_F32, 3, (uint64_t[]){ 2, 3, 4 });
	dense(&a.out, NULL, NULL, NPU_DT_F32, 3, (uint64_t[]){ 2, 3, 4 });
	npu_op_encode(&a, &blk);
	npu_op_decode(&blk, &back);
	ASSERT_EQ(NULL, npu_op_check(&back));
	blk.hi[2].shape[1] = 7;
	npu_op_decode(&blk, &back);
	EXPECT_NE(NULL, strstr(npu_op_check(&back), "unused dimensions"));
	blk.hi[2].shape[1] = 0;
	blk.hi[0].stride[3] = 1;
	npu_op_decode(&blk, &back);
	EXPECT_NE(NULL, strstr(npu_op_check(&back), "unused dimensions"));
}

/*
 * Element counts and extents that wrap 64 bits when summed or multiplied
 * whole (review of the 8-D change): each is refused, not taken as a few
 * bytes the op would then index far past.
 */
TEST(sizes_that_wrap_are_refused)
{
	const uint64_t big = 1ull << 31;
	struct npu_tensor t = { .dtype = NPU_DT_F32, .ndim = 4, .shape = { big, big, 4, 1 },
				.stride = { big, big, 1431655766, 1 } };
	struct npu_op a = { .op = NPU_OP_RELU };

	a.in[0] = a.out = t;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "too large"));
	t = (struct npu_tensor){ .dtype = NPU_DT_F32, .ndim = 5, .shape = { 5, big, big, big, big },
				 .stride = { big, big, big, big, big } };
	a.in[0] = a.out = t;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "too large"));
	/* broadcast weights of a wrapping element count */
	a = (struct npu_op){ .op = NPU_OP_CONV2D };
	dense(&a.in[0], NULL, NULL, NPU_DT_F32, 5, (uint64_t[]){ 1, 1, 1, 1, 1 });
	a.in[0].shape[1] = a.in[0].shape[3] = big;
	a.in[0].stride[1] = a.in[0].stride[3] = 0;
	a.in[1] = a.in[0];
	dense(&a.out, NULL, NULL, NPU_DT_F32, 5, (uint64_t[]){ 1, 1, 1, 1, 1 });
	EXPECT_NE(NULL, npu_op_check(&a));
}

TEST_HARNESS_MAIN
