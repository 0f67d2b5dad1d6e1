// SPDX-License-Identifier: MIT
/*
 * The op library's fp32 elementwise ops on the shapes real vision models
 * give them (tests/zoo: a MobileNetV3's squeeze-and-excitation scale, its
 * hard-swish, a residual Add, a nearest Resize's gathers doubling W and
 * H), against a plain C loop over the same dense
 * arrays, vectorized by the compiler (-O3, this host's widest vectors), on
 * one thread of this host, in the same run. The ratio is the op library's
 * speed as a fraction of the loop's (1 = as fast): what the op library
 * adds to the arithmetic, its walk of the shapes and strides.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench.h"
#include "npu_ops.h"

#define N	1
#define C	96
#define H	24
#define W	24
#define RUNS	200

static void tensor(struct npu_tensor *t, struct npu_view *v, float *data, const uint64_t *shape,
		   const uint64_t *stride)
{
	memset(t, 0, sizeof(*t));
	t->dtype = NPU_DT_F32;
	t->ndim = 4;
	memcpy(t->shape, shape, sizeof(t->shape[0]) * 4);
	memcpy(t->stride, stride, sizeof(t->stride[0]) * 4);
	*v = (struct npu_view){ .data = data, .dtype = NPU_DT_F32, .ndim = 4 };
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

/* Best of RUNS of the op library's a over v, and of `loop`, alternated. */
static void measure(const char *what, struct npu_op *a, struct npu_view *v, int nin,
		    void (*loop)(const float *, const float *, float *), const float *x,
		    const float *s, float *ref)
{
	double t_op = 1e30, t_loop = 1e30, err = 0;
	const float *got = v[nin].data;

	if (npu_op_check(a)) {
		fprintf(stderr, "fwsim_eltwise_bench: %s: %s\n", what, npu_op_check(a));
		exit(1);
	}
	for (int r = 0; r < RUNS; r++) {
		double t = now_s();

		npu_op_run(a, v, &v[nin], 0, npu_op_units(a));
		t_op = fmin(t_op, now_s() - t);
		t = now_s();
		loop(x, s, ref);
		t_loop = fmin(t_loop, now_s() - t);
	}
	for (uint64_t i = 0; i < npu_op_units(a); i++)
		err = fmax(err, fabs((double)got[i] - ref[i]));
	printf("%-34s %10.2f %10.2f %8.2f%s\n", what, t_op * 1e6, t_loop * 1e6, t_loop / t_op,
	       err > 1e-6 ? "  WRONG" : "");
	if (err > 1e-6)
		exit(1);
}

#define ANCHOR	__attribute__((optimize("O3"), target_clones("avx512f", "avx2", "default")))

ANCHOR static void scale_loop(const float *x, const float *s, float *y)
{
	for (int c = 0; c < C; c++)
		for (int i = 0; i < H * W; i++)
			y[c * H * W + i] = x[c * H * W + i] * s[c];
}

ANCHOR static void add_loop(const float *x, const float *s, float *y)
{
	for (int i = 0; i < N * C * H * W; i++)
		y[i] = x[i] + s[i];
}

ANCHOR static void hswish_loop(const float *x, const float *s, float *y)
{
	(void)s;
	for (int i = 0; i < N * C * H * W; i++) {
		float t = x[i] / 6.0f + 0.5f;

		t = t < 1.0f ? t : 1.0f;
		y[i] = x[i] * (t > 0.0f ? t : 0.0f);
	}
}

/* Resize by 2 along W, nearest: out [1, C, H, 2W] gathers x's columns w / 2. */
ANCHOR static void upsample_loop(const float *x, const float *s, float *y)
{
	(void)s;
	for (int r = 0; r < C * H; r++)
		for (int w = 0; w < 2 * W; w++)
			y[r * 2 * W + w] = x[r * W + w / 2];
}

/* Resize by 2 along H, nearest: out [1, C, 2H, W] gathers x's rows h / 2. */
ANCHOR static void upsample_h_loop(const float *x, const float *s, float *y)
{
	(void)s;
	for (int c = 0; c < C; c++)
		for (int h = 0; h < 2 * H; h++)
			for (int w = 0; w < W; w++)
				y[(c * 2 * H + h) * W + w] = x[(c * H + h / 2) * W + w];
}

int main(void)
{
	const uint64_t shape[4] = { N, C, H, W }, dense[4] = { C * H * W, H * W, W, 1 };
	const uint64_t per_channel[4] = { 0, 1, 0, 0 };
	size_t n = (size_t)N * C * H * W;
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
	float *out = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
	float *s = malloc(C * sizeof(float));
	struct npu_view v[3];
	struct npu_op a;

	for (size_t i = 0; i < n; i++) {
		x[i] = (float)((uint32_t)i * 7919u % 1000u) / 100.0f - 5.0f;
		y[i] = (float)((uint32_t)i * 104729u % 1000u) / 1000.0f;
	}
	for (int c = 0; c < C; c++)
		s[c] = (float)c / C;
	printf("%-34s %10s %10s %8s\n", "fp32 [1,96,24,24]", "op us", "loop us", "ratio");

	a = (struct npu_op){ .op = NPU_OP_MUL };
	tensor(&a.in[0], &v[0], x, shape, dense);
	tensor(&a.in[1], &v[1], s, shape, per_channel);
	tensor(&a.out, &v[2], out, shape, dense);
	measure("Mul by a per-channel scale", &a, v, 2, scale_loop, x, s, ref);

	a = (struct npu_op){ .op = NPU_OP_ADD };
	tensor(&a.in[0], &v[0], x, shape, dense);
	tensor(&a.in[1], &v[1], y, shape, dense);
	tensor(&a.out, &v[2], out, shape, dense);
	measure("Add, both dense", &a, v, 2, add_loop, x, y, ref);

	a = (struct npu_op){ .op = NPU_OP_HARD_SWISH };
	tensor(&a.in[0], &v[0], x, shape, dense);
	tensor(&a.out, &v[1], out, shape, dense);
	measure("HardSwish", &a, v, 1, hswish_loop, x, NULL, ref);

	{
		const uint64_t wide[4] = { N, C, H, 2 * W }, wdense[4] = { 2 * C * H * W, 2 * H * W,
								  2 * W, 1 };
		const uint64_t along_w[4] = { 0, 0, 0, 1 };
		int64_t *pos = malloc(2 * W * sizeof(*pos));
		float *big = malloc(2 * n * sizeof(float)), *bref = malloc(2 * n * sizeof(float));

		for (int w = 0; w < 2 * W; w++)
			pos[w] = w / 2;
		a = (struct npu_op){ .op = NPU_OP_GATHER_ELEMENTS, .axis = 3 };
		tensor(&a.in[0], &v[0], x, shape, dense);
		tensor(&a.in[1], &v[1], (float *)pos, wide, along_w);
		a.in[1].dtype = v[1].dtype = NPU_DT_I64;
		tensor(&a.out, &v[2], big, wide, wdense);
		measure("Resize x2 (gather along W)", &a, v, 2, upsample_loop, x, NULL, bref);
		{
			const uint64_t tall[4] = { N, C, 2 * H, W };
			const uint64_t tdense[4] = { 2 * C * H * W, 2 * H * W, W, 1 };
			const uint64_t along_h[4] = { 0, 0, 1, 0 };

			a = (struct npu_op){ .op = NPU_OP_GATHER_ELEMENTS, .axis = 2 };
			tensor(&a.in[0], &v[0], x, shape, dense);
			tensor(&a.in[1], &v[1], (float *)pos, tall, along_h);
			a.in[1].dtype = v[1].dtype = NPU_DT_I64;
			tensor(&a.out, &v[2], big, tall, tdense);
			measure("Resize x2 (gather along H)", &a, v, 2, upsample_h_loop, x, NULL,
				bref);
		}
		free(pos), free(big), free(bref);
	}
	free(x), free(y), free(out), free(ref), free(s);
	return 0;
}
