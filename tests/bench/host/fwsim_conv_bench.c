// SPDX-License-Identifier: MIT
/*
 * The op library's 3x3 convolution on a [1, 64, 56, 56] image (64 output
 * channels, pad 1), against the same convolution as im2col and OpenBLAS
 * sgemm, both on one thread of this host, in the same run. The ratio is
 * the op library's speed as a fraction of the BLAS path's (1 = as fast).
 * Then the same convolution on bytes (u8 image, i8 weights, i32 sums)
 * against the op library's fp32 one.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench.h"
#include "npu_ops.h"
#include "npu_ops_int.h"

#define C	64
#define H	56
#define W	56
#define O	64
#define K	3
#define RUNS	5

void openblas_set_num_threads(int n);

static void view(struct npu_tensor *t, struct npu_view *v, float *data, uint64_t n0,
		 uint64_t n1, uint64_t n2, uint64_t n3)
{
	const uint64_t shape[4] = { n0, n1, n2, n3 };

	memset(t, 0, sizeof(*t));
	t->ndim = 4;
	for (int k = 3, s = 1; k >= 0; s *= (int)shape[k], k--) {
		t->shape[k] = shape[k];
		t->stride[k] = (uint64_t)s;
	}
	*v = (struct npu_view){ .data = data, .dtype = NPU_DT_F32, .ndim = 4 };
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

/* im2col for a 3x3 window, pad 1, stride 1: [C * 9, H * W]. */
static void im2col(const float *x, float *col)
{
	for (int c = 0; c < C; c++)
		for (int i = 0; i < K; i++)
			for (int j = 0; j < K; j++) {
				float *row = col + ((size_t)(c * K + i) * K + j) * H * W;

				for (int h = 0; h < H; h++)
					for (int w = 0; w < W; w++) {
						int hi = h + i - 1, wi = w + j - 1;

						row[h * W + w] = hi < 0 || hi >= H || wi < 0 || wi >= W ?
								 0.0f : x[(c * H + hi) * W + wi];
					}
			}
}

int main(void)
{
	float *x = malloc(sizeof(float) * C * H * W), *f = malloc(sizeof(float) * O * C * K * K);
	float *y = malloc(sizeof(float) * O * H * W), *y2 = malloc(sizeof(float) * O * H * W);
	float *col = malloc(sizeof(float) * C * K * K * H * W);
	struct npu_op a = { .op = NPU_OP_CONV2D,
				 .win = { .stride = { 1, 1 }, .dilation = { 1, 1 },
					  .pad = { 1, 1, 1, 1 }, .group = 1 } };
	struct npu_view v[3];
	double t_npu = 1e30, t_blas = 1e30, err = 0, flops = 2.0 * O * C * K * K * H * W;

	for (int i = 0; i < C * H * W; i++)
		x[i] = (float)((uint32_t)i * 7919u % 1000u) / 1000.0f - 0.5f;
	for (int i = 0; i < O * C * K * K; i++)
		f[i] = (float)((uint32_t)i * 104729u % 1000u) / 1000.0f - 0.5f;
	view(&a.in[0], &v[0], x, 1, C, H, W);
	view(&a.in[1], &v[1], f, O, C, K, K);
	view(&a.out, &v[2], y, 1, O, H, W);
	if (npu_op_check(&a)) {
		fprintf(stderr, "fwsim_conv_bench: %s\n", npu_op_check(&a));
		return 1;
	}
	openblas_set_num_threads(1);
	/* Alternate the two, best of RUNS each: drift hits both alike. */
	for (int r = 0; r < RUNS; r++) {
		double t = now_s();

		npu_op_run(&a, v, &v[2], 0, npu_op_units(&a));
		t_npu = fmin(t_npu, now_s() - t);
		t = now_s();
		im2col(x, col);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, O, H * W, C * K * K, 1.0f,
			    f, C * K * K, col, H * W, 0.0f, y2, H * W);
		t_blas = fmin(t_blas, now_s() - t);
	}
	for (int i = 0; i < O * H * W; i++)
		err = fmax(err, fabs((double)y[i] - y2[i]));
	printf("%-34s %10s %10s %8s\n", "conv 3x3 [1,64,56,56] -> 64", "ms", "GFLOP/s", "ratio");
	printf("%-34s %10.2f %10.2f %8.2f\n", "op library (one core)", t_npu * 1e3,
	       flops / t_npu * 1e-9, t_blas / t_npu);
	printf("%-34s %10.2f %10.2f %8.2f\n", "im2col + OpenBLAS sgemm (1 thr)", t_blas * 1e3,
	       flops / t_blas * 1e-9, 1.0);
	printf("largest difference between the two: %.3g\n", err);

	/* The same convolution on bytes: u8 image, i8 weights, i32 sums. */
	uint8_t *xb = (uint8_t *)col, *fb = (uint8_t *)col + C * H * W;
	double t_int8 = 1e30;
	int bad = 0;

	for (int i = 0; i < C * H * W; i++)
		xb[i] = (uint8_t)(i * 7919u >> 3);
	for (int i = 0; i < O * C * K * K; i++)
		fb[i] = (uint8_t)(i * 104729u >> 5);
	v[0].data = xb, v[0].dtype = a.in[0].dtype = NPU_DT_U8;
	v[1].data = fb, v[1].dtype = a.in[1].dtype = NPU_DT_I8;
	v[2].dtype = a.out.dtype = NPU_DT_I32;
	for (int r = 0; r < RUNS; r++) {
		double t = now_s();

		npu_op_run(&a, v, &v[2], 0, npu_op_units(&a));
		t_int8 = fmin(t_int8, now_s() - t);
	}
	/* a few outputs against a direct sum, the borders among them */
	for (int o = 0; o < O; o += 13)
		for (int p = 0; p < H * W; p += 211) {
			int32_t s = 0;

			for (int c = 0; c < C; c++)
				for (int i = 0; i < K; i++)
					for (int j = 0; j < K; j++) {
						int hi = p / W + i - 1, wi = p % W + j - 1;

						if (hi >= 0 && hi < H && wi >= 0 && wi < W)
							s += xb[(c * H + hi) * W + wi] *
							     (int8_t)fb[((o * C + c) * K + i) * K + j];
					}
			bad |= s != ((int32_t *)y)[o * H * W + p];
		}
	printf("%-34s %10.2f %10.2f %8.2f   (%s)\n", "op library, u8 x i8 into i32", t_int8 * 1e3,
	       flops / t_int8 * 1e-9, t_npu / t_int8,
	       npu_gemm_int8_native() ? "AVX512_VNNI" : "no AVX512_VNNI: portable");
	printf("(ratio of the last: the op library's fp32 time over its int8 time, goal >= 2.5)\n");
	free(x), free(f), free(y), free(y2), free(col);
	return err > 1e-2 || bad;
}
