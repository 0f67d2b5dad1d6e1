// SPDX-License-Identifier: MIT
/*
 * The op library against reference implementations written here, in
 * double precision. Tolerances: elementwise ops 1e-6 relative (plus 1e-7
 * absolute), reductions and rows 1e-5, GEMM 1e-4 relative to the sum of
 * the absolute products. fp16/bf16 conversions are exact (IEEE
 * round-to-nearest-even), checked exhaustively for fp16.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "npu_ops.h"

static uint32_t rng = 12345;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

static float *rand_buf(size_t n)
{
	float *p = malloc(n * sizeof(float));

	for (size_t i = 0; i < n; i++)
		p[i] = frand();
	return p;
}

/* A dense row-major fp32 tensor descriptor and view over `data`. */
static void dense(struct npu_tensor *t, struct npu_view *v, void *data, uint32_t dtype,
		  uint32_t ndim, const uint64_t *shape)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dtype;
	t->ndim = ndim;
	for (int k = (int)ndim - 1, s = 1; k >= 0; s *= (int)shape[k], k--) {
		t->shape[k] = shape[k];
		t->stride[k] = (uint64_t)s;
	}
	if (v) {
		v->data = data;
		v->dtype = dtype;
		v->ndim = ndim;
		memcpy(v->shape, t->shape, sizeof(v->shape));
		memcpy(v->stride, t->stride, sizeof(v->stride));
	}
}

static void run_all(struct npu_op *a, struct npu_view *in, struct npu_view *out)
{
	uint64_t units = npu_op_units(a);

	/* In three uneven parts, as cores would. */
	npu_op_run(a, in, out, 0, units / 3);
	npu_op_run(a, in, out, units / 3, units / 2);
	npu_op_run(a, in, out, units / 2, units);
}

static int close_to(double want, double got, double rel, double abs_tol)
{
	return fabs(want - got) <= rel * fabs(want) + abs_tol || (isnan(want) && isnan(got));
}

TEST(binary_ops_with_broadcast)
{
	static const uint32_t ops[] = { NPU_OP_ADD, NPU_OP_SUB, NPU_OP_MUL, NPU_OP_DIV,
					NPU_OP_MAX, NPU_OP_MIN };
	uint64_t shape[3] = { 3, 5, 7 };
	float *x = rand_buf(105), *row = rand_buf(7), *y = calloc(105, 4);

	for (size_t o = 0; o < 6; o++) {
		struct npu_op a = { .op = ops[o] };
		struct npu_view in[2], out;

		dense(&a.in[0], &in[0], x, NPU_DT_F32, 3, shape);
		dense(&a.in[1], &in[1], row, NPU_DT_F32, 3, shape);
		/* in1 is one row of 7, broadcast over the first two dimensions. */
		a.in[1].stride[0] = a.in[1].stride[1] = 0;
		in[1].stride[0] = in[1].stride[1] = 0;
		dense(&a.out, &out, y, NPU_DT_F32, 3, shape);
		ASSERT_EQ(NULL, npu_op_check(&a));
		run_all(&a, in, &out);
		for (int i = 0; i < 105; i++) {
			double p = x[i], q = row[i % 7], want;

			switch (ops[o]) {
			case NPU_OP_ADD: want = p + q; break;
			case NPU_OP_SUB: want = p - q; break;
			case NPU_OP_MUL: want = p * q; break;
			case NPU_OP_DIV: want = p / q; break;
			case NPU_OP_MAX: want = fmax(p, q); break;
			default: want = fmin(p, q); break;
			}
			ASSERT_TRUE(close_to(want, y[i], 1e-6, 1e-7)) TH_LOG("op %u i %d", ops[o], i);
		}
	}
	free(x), free(row), free(y);
}

/*
 * Dimensions run as one only where every view walks them as one: a
 * per-channel scale over [2, 3, 4, 5] merges H and W for all three views,
 * but x's rows of 5 lie 8 apart, so W stays apart from H for it and the
 * walk must not merge them for the others either.
 */
TEST(binary_ops_merge_only_dimensions_every_view_walks_as_one)
{
	uint64_t shape[4] = { 2, 3, 4, 5 };
	float *x = rand_buf(2 * 3 * 4 * 8), *s = rand_buf(3), *y = calloc(120, 4);
	struct npu_op a = { .op = NPU_OP_MUL };
	struct npu_view in[2], out;

	dense(&a.in[0], &in[0], x, NPU_DT_F32, 4, shape);
	dense(&a.in[1], &in[1], s, NPU_DT_F32, 4, shape);
	dense(&a.out, &out, y, NPU_DT_F32, 4, shape);
	for (int k = 0; k < 3; k++) {		/* x: rows of 5 in slots of 8 */
		a.in[0].stride[k] = in[0].stride[k] = (uint64_t[]){ 96, 32, 8 }[k];
		a.in[1].stride[k] = in[1].stride[k] = k == 1;	/* s: one per channel */
	}
	a.in[1].stride[3] = in[1].stride[3] = 0;
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (int i = 0; i < 120; i++) {
		int n = i / 60, c = i / 20 % 3, h = i / 5 % 4, w = i % 5;
		double want = (double)x[n * 96 + c * 32 + h * 8 + w] * s[c];

		ASSERT_TRUE(close_to(want, y[i], 1e-6, 1e-7)) TH_LOG("element %d", i);
	}
	free(x), free(s), free(y);
}

TEST(unary_ops)
{
	static const uint32_t ops[] = { NPU_OP_RELU, NPU_OP_GELU, NPU_OP_SIGMOID, NPU_OP_TANH,
					NPU_OP_EXP };
	uint64_t shape[1] = { 1000 };
	float *x = rand_buf(1000), *y = calloc(1000, 4);

	for (size_t o = 0; o < 5; o++) {
		struct npu_op a = { .op = ops[o] };
		struct npu_view in[2], out;

		dense(&a.in[0], &in[0], x, NPU_DT_F32, 1, shape);
		dense(&a.out, &out, y, NPU_DT_F32, 1, shape);
		ASSERT_EQ(NULL, npu_op_check(&a));
		run_all(&a, in, &out);
		for (int i = 0; i < 1000; i++) {
			double p = x[i], want;

			switch (ops[o]) {
			case NPU_OP_RELU: want = p > 0 ? p : 0; break;
			case NPU_OP_GELU: want = 0.5 * p * (1 + tanh(sqrt(2 / M_PI) * (p + 0.044715 * p * p * p))); break;
			case NPU_OP_SIGMOID: want = 1 / (1 + exp(-p)); break;
			case NPU_OP_TANH: want = tanh(p); break;
			default: want = exp(p); break;
			}
			ASSERT_TRUE(close_to(want, y[i], 1e-6, 1e-7)) TH_LOG("op %u x %g got %g", ops[o], p, y[i]);
		}
	}
	free(x), free(y);
}

/* A column broadcast along the last dimension (stride 0 there), and a strided output. */
TEST(binary_ops_broadcast_along_rows)
{
	uint64_t shape[2] = { 6, 9 };
	float *x = rand_buf(54), *col = rand_buf(6), *y = calloc(108, 4);
	struct npu_op a = { .op = NPU_OP_SUB };
	struct npu_view in[2], out;

	dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
	dense(&a.in[1], &in[1], col, NPU_DT_F32, 2, shape);
	a.in[1].stride[0] = in[1].stride[0] = 1;
	a.in[1].stride[1] = in[1].stride[1] = 0;
	dense(&a.out, &out, y, NPU_DT_F32, 2, shape);
	a.out.stride[1] = out.stride[1] = 2;		/* every other float */
	a.out.stride[0] = out.stride[0] = 18;
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (int i = 0; i < 54; i++) {
		ASSERT_TRUE(close_to((double)x[i] - col[i / 9], y[2 * i], 1e-6, 1e-7))
			TH_LOG("i %d", i);
		ASSERT_EQ(0.0f, y[2 * i + 1]);
	}
	free(x), free(col), free(y);
}

/*
 * The ONNX-named elementwise ops, in double from their ONNX definitions,
 * on inputs in (-2, 2) (and a domain each where the op needs one).
 */
static double onnx_unary(uint32_t op, double x, double a, double b)
{
	switch (op) {
	case NPU_OP_NEG: return -x;
	case NPU_OP_ABS: return fabs(x);
	case NPU_OP_SQRT: return sqrt(x);
	case NPU_OP_LOG: return log(x);
	case NPU_OP_RECIPROCAL: return 1 / x;
	case NPU_OP_FLOOR: return floor(x);
	case NPU_OP_CEIL: return ceil(x);
	case NPU_OP_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
	case NPU_OP_ERF: return erf(x);
	case NPU_OP_SOFTPLUS: return log(1 + exp(x));
	case NPU_OP_SOFTSIGN: return x / (1 + fabs(x));
	case NPU_OP_GELU_ERF: return 0.5 * x * (1 + erf(x / sqrt(2)));
	case NPU_OP_LEAKY_RELU: return x < 0 ? a * x : x;
	case NPU_OP_ELU: return x < 0 ? a * (exp(x) - 1) : x;
	case NPU_OP_SELU: return x <= 0 ? b * (a * exp(x) - a) : b * x;
	case NPU_OP_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
	case NPU_OP_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
	case NPU_OP_CLIP: return fmin(b, fmax(a, x));
	case NPU_OP_SIN: return sin(x);
	case NPU_OP_COS: return cos(x);
	case NPU_OP_ROUND: return x - floor(x) == 0.5 ? 2 * round(x / 2) : round(x);
	case NPU_OP_TAN: return tan(x);
	case NPU_OP_ASIN: return asin(x);
	case NPU_OP_ACOS: return acos(x);
	case NPU_OP_ATAN: return atan(x);
	case NPU_OP_SINH: return sinh(x);
	case NPU_OP_COSH: return cosh(x);
	case NPU_OP_ASINH: return asinh(x);
	case NPU_OP_ACOSH: return acosh(x);
	case NPU_OP_ATANH: return atanh(x);
	case NPU_OP_THRESHOLDED_RELU: return x > a ? x : 0;
	case NPU_OP_SHRINK: return x < -a ? x + b : x > a ? x - b : 0;
	case NPU_OP_CELU: return fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
	default: return NAN;
	}
}

TEST(onnx_unary_ops)
{
	static const struct { uint32_t op; float a, b, lo, hi; } ops[] = {
		{ .op = NPU_OP_NEG }, { .op = NPU_OP_ABS },
		{ .op = NPU_OP_SQRT, .a = 0, .b = 0, .lo = 0, .hi = 2 },
		{ .op = NPU_OP_LOG, .a = 0, .b = 0, .lo = 0.01f, .hi = 2 },
		{ .op = NPU_OP_RECIPROCAL, .a = 0, .b = 0, .lo = 0.1f, .hi = 2 },
		{ .op = NPU_OP_FLOOR }, { .op = NPU_OP_CEIL }, { .op = NPU_OP_SIGN },
		{ .op = NPU_OP_ERF }, { .op = NPU_OP_SOFTPLUS }, { .op = NPU_OP_SOFTSIGN },
		{ .op = NPU_OP_GELU_ERF }, { .op = NPU_OP_LEAKY_RELU, .a = 0.1f },
		{ .op = NPU_OP_ELU, .a = 0.7f },
		{ .op = NPU_OP_SELU, .a = 1.6732632f, .b = 1.0507010f },
		{ .op = NPU_OP_HARD_SIGMOID, .a = 0.2f, .b = 0.5f },
		{ .op = NPU_OP_HARD_SWISH, .a = 0, .b = 0, .lo = -5, .hi = 5 },
		{ .op = NPU_OP_CLIP, .a = -0.5f, .b = 1.0f }, { .op = NPU_OP_SIN },
		{ .op = NPU_OP_COS }, { .op = NPU_OP_ROUND, .a = 0, .b = 0, .lo = -4, .hi = 4 },
		{ .op = NPU_OP_TAN, .a = 0, .b = 0, .lo = -1, .hi = 1 },
		{ .op = NPU_OP_ASIN, .a = 0, .b = 0, .lo = -0.99f, .hi = 0.99f },
		{ .op = NPU_OP_ACOS, .a = 0, .b = 0, .lo = -0.99f, .hi = 0.99f },
		{ .op = NPU_OP_ATAN }, { .op = NPU_OP_SINH }, { .op = NPU_OP_COSH },
		{ .op = NPU_OP_ASINH }, { .op = NPU_OP_ACOSH, .a = 0, .b = 0, .lo = 1, .hi = 3 },
		{ .op = NPU_OP_ATANH, .a = 0, .b = 0, .lo = -0.9f, .hi = 0.9f },
		{ .op = NPU_OP_THRESHOLDED_RELU, .a = 0.5f },
		{ .op = NPU_OP_SHRINK, .a = 0.5f, .b = 0.25f }, { .op = NPU_OP_CELU, .a = 0.8f },
	};
	uint64_t shape[1] = { 1000 };
	float *x = calloc(1000, 4), *y = calloc(1000, 4);

	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		struct npu_op a = { .op = ops[o].op, .alpha = ops[o].a, .beta = ops[o].b };
		float lo = ops[o].lo, hi = ops[o].hi;
		struct npu_view in[2], out;

		if (lo == 0 && hi == 0)
			lo = -2, hi = 2;
		for (int i = 0; i < 1000; i++)		/* half-way points for ROUND too */
			x[i] = i % 10 == 0 ? lo + (hi - lo) * (float)(i / 10) / 100.0f :
			       lo + (hi - lo) * (frand() + 2) / 4;
		dense(&a.in[0], &in[0], x, NPU_DT_F32, 1, shape);
		dense(&a.out, &out, y, NPU_DT_F32, 1, shape);
		ASSERT_EQ(NULL, npu_op_check(&a)) TH_LOG("op %u", ops[o].op);
		run_all(&a, in, &out);
		for (int i = 0; i < 1000; i++) {
			double want = onnx_unary(ops[o].op, x[i], ops[o].a, ops[o].b);

			ASSERT_TRUE(close_to(want, y[i], 1e-5, 1e-6))
				TH_LOG("op %u x %.9g got %.9g want %.9g", ops[o].op, x[i], y[i], want);
		}
	}
	/* A NaN parameter fails the launch; POW is powf. */
	{
		struct npu_op a = { .op = NPU_OP_CLIP, .alpha = NAN };
		struct npu_view in[2], out;

		dense(&a.in[0], &in[0], x, NPU_DT_F32, 1, shape);
		dense(&a.out, &out, y, NPU_DT_F32, 1, shape);
		EXPECT_NE(NULL, npu_op_check(&a));
	}
	free(x), free(y);
}

static void gemm_case(struct __test_metadata *_metadata, uint64_t m, uint64_t n, uint64_t k,
		      int ta, int tb, float alpha, float beta)
{
	uint64_t sa[2] = { ta ? k : m, ta ? m : k }, sb[2] = { tb ? n : k, tb ? k : n };
	uint64_t sc[2] = { m, n };
	float *A = rand_buf(m * k), *B = rand_buf(k * n), *C = rand_buf(m * n);
	float *C0 = malloc(m * n * 4);
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = alpha, .beta = beta };
	struct npu_view in[2], out;

	memcpy(C0, C, m * n * 4);
	a.flags = (ta ? NPU_OP_F_TRANS_A : 0) | (tb ? NPU_OP_F_TRANS_B : 0);
	dense(&a.in[0], &in[0], A, NPU_DT_F32, 2, sa);
	dense(&a.in[1], &in[1], B, NPU_DT_F32, 2, sb);
	dense(&a.out, &out, C, NPU_DT_F32, 2, sc);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (uint64_t i = 0; i < m; i++) {
		for (uint64_t j = 0; j < n; j++) {
			double acc = 0, mag = 0;

			for (uint64_t p = 0; p < k; p++) {
				double x = ta ? A[p * m + i] : A[i * k + p];
				double y = tb ? B[j * k + p] : B[p * n + j];

				acc += x * y;
				mag += fabs(x * y);
			}
			acc = alpha * acc + (beta == 0 ? 0 : beta * C0[i * n + j]);
			ASSERT_TRUE(fabs(acc - C[i * n + j]) <= 1e-4 * (fabs(alpha) * mag + fabs(beta * C0[i * n + j])) + 1e-6)
				TH_LOG("C[%lu][%lu] want %g got %g", i, j, acc, C[i * n + j]);
		}
	}
	free(A), free(B), free(C), free(C0);
}

TEST(gemm_all_transposes_alpha_beta)
{
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			gemm_case(_metadata, 37, 53, 41, ta, tb, 1.0f, 0.0f);
			gemm_case(_metadata, 16, 9, 70, ta, tb, -0.5f, 2.0f);
			/* K over the cache-blocking panel, rows not a multiple of 4. */
			gemm_case(_metadata, 11, 33, 600, ta, tb, 0.75f, 1.0f);
			/* N over a panel too, K just over one. */
			gemm_case(_metadata, 7, 530, 260, ta, tb, 1.0f, 0.5f);
		}
}

/* GEMM + bias (per column) + GELU, and ADD + RELU, each one launch. */
TEST(the_epilogue_biases_and_activates_gemm_and_binary_ops)
{
	uint64_t m = 9, n = 37, k = 300, sa[2] = { m, k }, sb[2] = { k, n }, sc[2] = { m, n };
	uint64_t sbias[1] = { n };
	float *A = rand_buf(m * k), *B = rand_buf(k * n), *C = rand_buf(m * n), *b = rand_buf(n);
	float *D = rand_buf(m * n);
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1.0f };
	struct npu_view v[4];

	dense(&a.in[0], &v[0], A, NPU_DT_F32, 2, sa);
	dense(&a.in[1], &v[1], B, NPU_DT_F32, 2, sb);
	dense(&a.epi.bias, &v[2], b, NPU_DT_F32, 1, sbias);
	dense(&a.out, &v[3], C, NPU_DT_F32, 2, sc);
	a.epi.flags = NPU_OP_E_BIAS;
	a.epi.act = NPU_OP_GELU_ERF;
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, v, &v[3]);
	for (uint64_t i = 0; i < m; i++)
		for (uint64_t j = 0; j < n; j++) {
			double acc = b[j], mag = fabs(b[j]);

			for (uint64_t p = 0; p < k; p++) {
				acc += (double)A[i * k + p] * B[p * n + j];
				mag += fabs((double)A[i * k + p] * B[p * n + j]);
			}
			acc = 0.5 * acc * (1 + erf(acc / sqrt(2.0)));
			ASSERT_TRUE(close_to(acc, C[i * n + j], 0, 1e-4 * mag))
				TH_LOG("C[%lu][%lu] want %g got %g", i, j, acc, C[i * n + j]);
		}

	a = (struct npu_op){ .op = NPU_OP_ADD, .epi = { .act = NPU_OP_RELU } };
	dense(&a.in[0], &v[0], A, NPU_DT_F32, 2, sc);
	dense(&a.in[1], &v[1], D, NPU_DT_F32, 2, sc);
	dense(&a.out, &v[3], C, NPU_DT_F32, 2, sc);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, v, &v[3]);
	for (uint64_t e = 0; e < m * n; e++) {
		float want = A[e] + D[e] > 0 ? A[e] + D[e] : 0.0f;

		ASSERT_EQ(want, C[e]) TH_LOG("element %lu", e);
	}

	/* What an epilogue refuses. */
	a.epi.flags = NPU_OP_E_BIAS;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "a bias takes"));
	a.epi.flags = 1u << 5;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "unknown epilogue flags"));
	a.epi.flags = 0, a.epi.act = NPU_OP_ADD;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "not an f32 unary op"));
	a.epi.act = NPU_OP_LEAKY_RELU, a.epi.alpha = NAN;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "nan"));
	a.op = NPU_OP_SOFTMAX, a.epi.alpha = 0;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "an epilogue takes"));
	a = (struct npu_op){ .op = NPU_OP_GEMM, .alpha = 1.0f, .epi = { .flags = NPU_OP_E_BIAS } };
	dense(&a.in[0], NULL, NULL, NPU_DT_F32, 2, sa);
	dense(&a.in[1], NULL, NULL, NPU_DT_F32, 2, sb);
	dense(&a.out, NULL, NULL, NPU_DT_F32, 2, sc);
	dense(&a.epi.bias, NULL, NULL, NPU_DT_F32, 1, sa);	/* m, not n */
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "one per output channel"));
	free(A), free(B), free(C), free(D), free(b);
}

TEST(gemm_beta_zero_ignores_nan_in_output)
{
	uint64_t s[2] = { 2, 2 };
	float A[4] = { 1, 2, 3, 4 }, B[4] = { 1, 0, 0, 1 }, C[4] = { NAN, NAN, NAN, NAN };
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1 };
	struct npu_view in[2], out;

	dense(&a.in[0], &in[0], A, NPU_DT_F32, 2, s);
	dense(&a.in[1], &in[1], B, NPU_DT_F32, 2, s);
	dense(&a.out, &out, C, NPU_DT_F32, 2, s);
	ASSERT_EQ(NULL, npu_op_check(&a));
	EXPECT_FALSE(npu_op_reads_output(&a));
	run_all(&a, in, &out);
	EXPECT_EQ(0, memcmp(A, C, sizeof(A)));
}

TEST(softmax_and_layernorm_rows)
{
	uint64_t shape[2] = { 6, 33 };
	float *x = rand_buf(198), *y = calloc(198, 4);

	for (int op = NPU_OP_SOFTMAX; op <= NPU_OP_LAYERNORM; op++) {
		struct npu_op a = { .op = (uint32_t)op, .eps = 1e-5f };
		struct npu_view in[2], out;

		dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
		dense(&a.out, &out, y, NPU_DT_F32, 2, shape);
		ASSERT_EQ(NULL, npu_op_check(&a));
		run_all(&a, in, &out);
		for (int r = 0; r < 6; r++) {
			double m = -1e30, s = 0, mean = 0, var = 0;
			const float *xr = x + r * 33;

			for (int j = 0; j < 33; j++) {
				m = fmax(m, xr[j]);
				mean += xr[j] / 33.0;
			}
			for (int j = 0; j < 33; j++) {
				s += exp(xr[j] - m);
				var += (xr[j] - mean) * (xr[j] - mean) / 33.0;
			}
			for (int j = 0; j < 33; j++) {
				double want = op == NPU_OP_SOFTMAX ? exp(xr[j] - m) / s :
					      (xr[j] - mean) / sqrt(var + 1e-5);

				ASSERT_TRUE(close_to(want, y[r * 33 + j], 1e-5, 1e-6)) TH_LOG("op %d r %d j %d", op, r, j);
			}
		}
	}
	free(x), free(y);
}

/*
 * Rows read through a transposed view take the strided loops, dense rows
 * the lane passes: both give the same softmax and layernorm (within
 * rounding) of the same values. Rows of 70000 cross a pass's block, with
 * the maximum in the second block; one row is all negative (a maximum
 * that started from 0 rather than the row's first element would be
 * wrong) and one is flat (its variance is exactly 0, its layernorm 0).
 */
TEST(softmax_and_layernorm_strided_rows_match_dense_ones)
{
	enum { R = 4, C = 70000 };
	float *x = rand_buf(R * C), *xt = malloc(sizeof(float) * R * C);
	float *y = malloc(sizeof(float) * R * C), *yt = malloc(sizeof(float) * R * C);
	uint64_t shape[2] = { R, C };

	for (int j = 0; j < C; j++) {
		x[0 * C + j] = -200.0f - x[j] * 10.0f;	/* exp() of it is 0 */
		x[3 * C + j] = 0.1f;			/* flat */
	}
	x[1 * C + 66000] = 30.0f;	/* the maximum past the first block */
	for (int r = 0; r < R; r++)
		for (int j = 0; j < C; j++)
			xt[j * R + r] = x[r * C + j];
	for (int op = NPU_OP_SOFTMAX; op <= NPU_OP_LAYERNORM; op++) {
		struct npu_op a = { .op = (uint32_t)op, .eps = 1e-5f };
		struct npu_view in[2], out;

		dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
		dense(&a.out, &out, y, NPU_DT_F32, 2, shape);
		ASSERT_EQ(NULL, npu_op_check(&a));
		run_all(&a, in, &out);
		/* the same rows, element (r, j) at xt[j * R + r] */
		in[0].data = xt;
		in[0].stride[0] = a.in[0].stride[0] = 1;
		in[0].stride[1] = a.in[0].stride[1] = R;
		out.data = yt;
		ASSERT_EQ(NULL, npu_op_check(&a));
		run_all(&a, in, &out);
		for (int i = 0; i < R * C; i++) {
			ASSERT_TRUE(close_to(yt[i], y[i], 1e-5, 1e-9))
				TH_LOG("op %d row %d element %d: dense %g, strided %g", op, i / C,
				       i % C, y[i], yt[i]);
		}
		if (op == NPU_OP_LAYERNORM) {
			for (int j = 0; j < C; j++) {
				ASSERT_EQ(0.0f, y[3 * C + j]) TH_LOG("flat row, element %d", j);
			}
		} else {
			ASSERT_TRUE(y[1 * C + 66000] > 0.99f) TH_LOG("the maximum's share: %g",
								     y[1 * C + 66000]);
		}
	}
	free(x), free(xt), free(y), free(yt);
}

/*
 * A NaN anywhere in a row (first, in the vector lanes, in the tail) makes
 * the row's softmax NaN, through its sum, and leaves the other rows alone.
 */
TEST(softmax_row_with_a_nan)
{
	enum { N = 40 };
	static const int at[3] = { 0, 21, 38 };
	float x[4 * N], y[4 * N];
	uint64_t shape[2] = { 4, N };
	struct npu_op a = { .op = NPU_OP_SOFTMAX };
	struct npu_view in[2], out;

	for (int j = 0; j < 4 * N; j++)
		x[j] = (float)(j % 7);
	for (int r = 0; r < 3; r++)
		x[r * N + at[r]] = NAN;
	dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
	dense(&a.out, &out, y, NPU_DT_F32, 2, shape);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (int i = 0; i < 4 * N; i++) {
		ASSERT_EQ(i < 3 * N, isnan(y[i]) != 0) TH_LOG("row %d element %d: %g", i / N,
								i % N, y[i]);
	}
}

/*
 * The contiguous rows' maximum is taken in 16 lanes and a tail: a row
 * whose one large element (1000: exp() overflows unless it is the
 * maximum subtracted) sits in each lane position of the vector part and
 * in the tail in turn gets a one-hot softmax every time.
 */
TEST(softmax_max_found_in_every_lane_and_the_tail)
{
	enum { N = 37 };
	float x[N * N], y[N * N];
	uint64_t shape[2] = { N, N };
	struct npu_op a = { .op = NPU_OP_SOFTMAX };
	struct npu_view in[2], out;

	for (int r = 0; r < N; r++)
		for (int j = 0; j < N; j++)
			x[r * N + j] = j == r ? 1000.0f : (float)(j % 5) * 0.25f;
	dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
	dense(&a.out, &out, y, NPU_DT_F32, 2, shape);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (int r = 0; r < N; r++) {
		for (int j = 0; j < N; j++) {
			ASSERT_TRUE(close_to(j == r ? 1.0 : 0.0, y[r * N + j], 1e-6, 1e-30))
				TH_LOG("row %d, element %d: %g", r, j, y[r * N + j]);
		}
	}
}

/*
 * Softmax must subtract the row's maximum before exp(): rows far from 0
 * (all large, all very negative) overflow or underflow to inf/inf or
 * 0/0 otherwise. A row of k, k-1, ..., k-7 is the same distribution
 * whatever k is.
 */
TEST(softmax_rows_far_from_zero)
{
	static const float base[] = { 1000.0f, -1000.0f, 80.0f, -120.0f };
	uint64_t shape[2] = { 4, 8 };
	float x[32], y[32];
	struct npu_op a = { .op = NPU_OP_SOFTMAX };
	struct npu_view in[2], out;
	double s = 0;

	for (int r = 0; r < 4; r++)
		for (int j = 0; j < 8; j++)
			x[r * 8 + j] = base[r] - (float)j;
	for (int j = 0; j < 8; j++)
		s += exp(-j);
	dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
	dense(&a.out, &out, y, NPU_DT_F32, 2, shape);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (int r = 0; r < 4; r++) {
		for (int j = 0; j < 8; j++) {
			ASSERT_TRUE(close_to(exp(-j) / s, y[r * 8 + j], 1e-5, 1e-6))
				TH_LOG("row of %g, element %d: %g", base[r], j, y[r * 8 + j]);
		}
	}
}

TEST(reductions_over_each_axis)
{
	uint64_t shape[3] = { 4, 5, 6 };
	float *x = rand_buf(120), y[120];

	for (uint32_t op = NPU_OP_REDUCE_SUM; op <= NPU_OP_REDUCE_MAX; op++) {
		for (uint32_t ax = 0; ax < 3; ax++) {
			struct npu_op a = { .op = op, .axis = ax };
			uint64_t oshape[3] = { 4, 5, 6 };
			struct npu_view in[2], out;

			oshape[ax] = 1;
			dense(&a.in[0], &in[0], x, NPU_DT_F32, 3, shape);
			dense(&a.out, &out, y, NPU_DT_F32, 3, oshape);
			ASSERT_EQ(NULL, npu_op_check(&a));
			run_all(&a, in, &out);
			for (uint64_t i = 0; i < oshape[0]; i++)
				for (uint64_t j = 0; j < oshape[1]; j++)
					for (uint64_t l = 0; l < oshape[2]; l++) {
						double sum = 0, mx = -1e30;

						for (uint64_t t = 0; t < shape[ax]; t++) {
							uint64_t ix[3] = { i, j, l };

							ix[ax] = t;
							sum += x[ix[0] * 30 + ix[1] * 6 + ix[2]];
							mx = fmax(mx, x[ix[0] * 30 + ix[1] * 6 + ix[2]]);
						}
						double want = op == NPU_OP_REDUCE_SUM ? sum :
							      op == NPU_OP_REDUCE_MEAN ? sum / shape[ax] : mx;
						float got = y[i * oshape[1] * oshape[2] + j * oshape[2] + l];

						ASSERT_TRUE(close_to(want, got, 1e-5, 1e-6)) TH_LOG("op %u axis %u", op, ax);
					}
		}
	}
	free(x);
}

TEST(transpose_3d)
{
	uint64_t shape[3] = { 2, 3, 4 }, oshape[3] = { 4, 2, 3 };
	float x[24], y[24];
	struct npu_op a = { .op = NPU_OP_TRANSPOSE, .perm = { 2, 0, 1 } };
	struct npu_view in[2], out;

	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	dense(&a.in[0], &in[0], x, NPU_DT_F32, 3, shape);
	dense(&a.out, &out, y, NPU_DT_F32, 3, oshape);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	for (int p = 0; p < 4; p++)
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 3; j++)
				ASSERT_EQ(x[i * 12 + j * 4 + p], y[p * 6 + i * 3 + j]);
}

TEST(fp16_conversions_are_exact)
{
	/* Every binary16 value survives f16 -> f32 -> f16. */
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = npu_f16_to_f32((uint16_t)h);

		if (isnan(f))
			continue;
		ASSERT_EQ(h, npu_f32_to_f16(f)) TH_LOG("h %#x", h);
	}
	EXPECT_EQ(0x3c00, npu_f32_to_f16(1.0f));
	EXPECT_EQ(0x7bff, npu_f32_to_f16(65504.0f));
	EXPECT_EQ(0x7c00, npu_f32_to_f16(65520.0f));		/* rounds to infinity */
	EXPECT_EQ(0x0001, npu_f32_to_f16(5.9604645e-8f));	/* smallest subnormal */
	EXPECT_EQ(0x0000, npu_f32_to_f16(2.9802322e-8f));	/* half of it: ties to even */
	EXPECT_EQ(0x3c00, npu_f32_to_f16(1.0f + 0x1p-11f));	/* tie, to even */
	EXPECT_EQ(0x3c01, npu_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f));
	EXPECT_EQ(0x7e00, npu_f32_to_f16(NAN) & 0x7e00);
}

TEST(bf16_conversions_round_to_even)
{
	EXPECT_EQ(0x3f80, npu_f32_to_bf16(1.0f));
	EXPECT_EQ(0x3f80, npu_f32_to_bf16(1.0f + 0x1p-8f));		/* tie, to even */
	EXPECT_EQ(0x3f82, npu_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f));	/* tie, to even (up) */
	EXPECT_EQ(0x7f80, npu_f32_to_bf16(INFINITY));
	EXPECT_TRUE(isnan(npu_bf16_to_f32(npu_f32_to_bf16(NAN))));
	for (uint32_t b = 0; b < 0x10000; b += 7) {
		float f = npu_bf16_to_f32((uint16_t)b);

		if (!isnan(f))
			ASSERT_EQ(b, npu_f32_to_bf16(f));
	}
}

TEST(cast_op_between_dtypes)
{
	uint64_t shape[1] = { 4 };
	float x[4] = { 1.0f, -2.5f, 65504.0f, 0.1f }, back[4];
	uint16_t h[4];
	struct npu_op a = { .op = NPU_OP_CAST };
	struct npu_view in[2], out;

	dense(&a.in[0], &in[0], x, NPU_DT_F32, 1, shape);
	dense(&a.out, &out, h, NPU_DT_F16, 1, shape);
	ASSERT_EQ(NULL, npu_op_check(&a));
	run_all(&a, in, &out);
	EXPECT_EQ(0x3c00, h[0]);
	EXPECT_EQ(0xc100, h[1]);
	dense(&a.in[0], &in[0], h, NPU_DT_F16, 1, shape);
	dense(&a.out, &out, back, NPU_DT_F32, 1, shape);
	run_all(&a, in, &out);
	EXPECT_EQ(65504.0f, back[2]);
	EXPECT_TRUE(fabsf(back[3] - 0.1f) < 1e-4f);
}

TEST(bad_launches_are_refused_with_a_reason)
{
	uint64_t s2[2] = { 4, 4 }, s3[2] = { 4, 3 }, s1[1] = { 16 };
	struct npu_op good = { .op = NPU_OP_ADD }, a;

	dense(&good.in[0], NULL, NULL, NPU_DT_F32, 2, s2);
	dense(&good.in[1], NULL, NULL, NPU_DT_F32, 2, s2);
	dense(&good.out, NULL, NULL, NPU_DT_F32, 2, s2);
	ASSERT_EQ(NULL, npu_op_check(&good));

	a = good, a.op = 999;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "unknown op"));
	a = good, a.flags = 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "flags"));
	a = good, a.out.ndim = NPU_OP_MAX_DIMS + 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "rank"));
	/* dimensions past ndim, the block's high ones too, must be zero */
	a = good, a.in[0].shape[NPU_OP_MAX_DIMS - 1] = 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "unused dimensions"));
	a = good, a.out.stride[NPU_MAX_DIMS] = 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "unused dimensions"));
	a = good, a.in[1].shape[1] = 3;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "shapes differ"));
	a = good, a.out.stride[0] = 0;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "broadcast"));
	/* Both ends: a zero stride over one element writes nothing twice, over two it does. */
	a = good, a.out.shape[0] = 1, a.out.stride[0] = 0;
	a.in[0].shape[0] = a.in[1].shape[0] = 1;
	EXPECT_EQ(NULL, npu_op_check(&a));
	a.out.shape[0] = a.in[0].shape[0] = a.in[1].shape[0] = 2;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "broadcast"));
	a = good, a.out.stride[1] = 0, a.out.shape[1] = 2, a.in[0].shape[1] = a.in[1].shape[1] = 2;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "broadcast"));
	a = good, a.in[0].dtype = NPU_DT_F16;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "one dtype"));
	a = good, a.in[0].dtype = NPU_DT_COUNT;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "dtype"));
	a = good, a.in[0].shape[3] = 1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "unused"));
	a = good, a.in[0].shape[0] = 0;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "out of range"));
	a = good, a.out.stride[0] = 1ull << 30, a.out.shape[0] = 1ull << 30;
	EXPECT_NE(NULL, npu_op_check(&a));

	a = good, a.op = NPU_OP_GEMM;
	dense(&a.in[1], NULL, NULL, NPU_DT_F32, 2, s3);
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "GEMM shapes"));
	a.flags = 8;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "GEMM flags"));
	a = good, a.op = NPU_OP_GEMM, a.alpha = NAN;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "finite"));

	a = good, a.op = NPU_OP_TRANSPOSE, a.perm[0] = 0, a.perm[1] = 0;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "permutation"));
	a = good, a.op = NPU_OP_REDUCE_SUM, a.axis = 2;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "axis"));
	a = good, a.op = NPU_OP_REDUCE_SUM, a.axis = 0;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "reduce output"));
	a = good, a.op = NPU_OP_LAYERNORM, a.eps = -1;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "eps"));
	a = good, a.op = NPU_OP_RELU;
	dense(&a.out, NULL, NULL, NPU_DT_F32, 1, s1);
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "shapes differ"));
}

/*
 * Every op class looks at the cancel flag: raised before the run, each
 * returns -1 at its first check (and the ops that write nothing before
 * it leave the output alone); clear, each runs to the end as npu_op_run.
 */
TEST(every_op_stops_when_cancelled)
{
	static const uint32_t ops[] = { NPU_OP_ADD, NPU_OP_RELU, NPU_OP_GEMM, NPU_OP_SOFTMAX,
					NPU_OP_LAYERNORM, NPU_OP_REDUCE_SUM, NPU_OP_TRANSPOSE,
					NPU_OP_CAST };
	uint64_t shape[2] = { 64, 64 }, rshape[2] = { 64, 1 };
	float *x = rand_buf(4096), *z = rand_buf(4096), *y = malloc(4096 * 4);
	float *want = malloc(4096 * 4);

	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		for (int trans = 0; trans < (ops[o] == NPU_OP_GEMM ? 2 : 1); trans++) {
			struct npu_op a = { .op = ops[o], .alpha = 1, .eps = 1e-5f };
			struct npu_view in[2], out;
			uint32_t cancel = 1;
			int untouched = 1;

			dense(&a.in[0], &in[0], x, NPU_DT_F32, 2, shape);
			dense(&a.in[1], &in[1], z, NPU_DT_F32, 2, shape);
			dense(&a.out, &out, y, ops[o] == NPU_OP_CAST ? NPU_DT_F16 : NPU_DT_F32, 2,
			      ops[o] == NPU_OP_REDUCE_SUM ? rshape : shape);
			a.axis = 1;
			a.perm[0] = 1;
			/* The transposed GEMM packs B from its columns. */
			if (trans)
				a.flags = NPU_OP_F_TRANS_B;
			ASSERT_EQ(NULL, npu_op_check(&a)) TH_LOG("op %u", ops[o]);

			memset(y, 0x7f, 4096 * 4);
			EXPECT_EQ(-1, npu_op_run_cancellable(&a, in, &out, 0, npu_op_units(&a),
							     &cancel)) TH_LOG("op %u", ops[o]);
			for (int i = 0; i < 4096; i++)
				untouched &= ((uint32_t *)y)[i] == 0x7f7f7f7fu;
			/* GEMM zeroes C (beta 0) before its first panel. */
			if (ops[o] != NPU_OP_GEMM)
				EXPECT_TRUE(untouched) TH_LOG("op %u wrote its output", ops[o]);

			run_all(&a, in, &out);
			memcpy(want, y, 4096 * 4);
			memset(y, 0x7f, 4096 * 4);
			cancel = 0;
			EXPECT_EQ(0, npu_op_run_cancellable(&a, in, &out, 0, npu_op_units(&a),
							    &cancel));
			EXPECT_EQ(0, memcmp(want, y, 4096 * 4)) TH_LOG("op %u", ops[o]);
		}
	}
	free(x), free(z), free(y), free(want);
}

TEST_HARNESS_MAIN
