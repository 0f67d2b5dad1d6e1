// SPDX-License-Identifier: MIT
/*
 * The op library's dtypes past fp32 (firmware 0.4): integer arithmetic,
 * comparisons and logic, casts, reductions and arg max / min, checked
 * against values written out here (what C, numpy and ONNX say), not
 * against npu_opdtypes.h itself. And the dtype rules the check enforces.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "fwsim_isa.h"
#include "npu_ops.h"

/* A 1-D tensor of n elements of dtype dt over data (stride 0: broadcast). */
static void vec(struct npu_tensor *t, struct npu_view *v, void *data, uint32_t dt, uint64_t n,
		uint64_t stride)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->ndim = 1;
	t->shape[0] = n;
	t->stride[0] = stride;
	v->data = data;
	v->dtype = dt;
	v->ndim = 1;
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

/* out = op(x, y) over n elements, checked and run in two parts. */
static const char *binary(uint32_t op, uint32_t dt, const void *x, const void *y, uint32_t odt,
			  void *out, uint64_t n)
{
	struct npu_op a = { .op = op };
	struct npu_view in[2], o;
	const char *err;

	vec(&a.in[0], &in[0], (void *)x, dt, n, 1);
	vec(&a.in[1], &in[1], (void *)y, dt, n, 1);
	vec(&a.out, &o, out, odt, n, 1);
	err = npu_op_check(&a);
	if (!err) {
		npu_op_run(&a, in, &o, 0, n / 2);
		npu_op_run(&a, in, &o, n / 2, n);
	}
	return err;
}

static const char *unary(uint32_t op, uint32_t dt, const void *x, uint32_t odt, void *out,
			 uint64_t n, float alpha, float beta)
{
	struct npu_op a = { .op = op, .alpha = alpha, .beta = beta };
	struct npu_view in[2], o;
	const char *err;

	vec(&a.in[0], &in[0], (void *)x, dt, n, 1);
	vec(&a.out, &o, out, odt, n, 1);
	err = npu_op_check(&a);
	if (!err)
		npu_op_run(&a, in, &o, 0, n);
	return err;
}

TEST(int8_arithmetic_wraps_and_divides_toward_zero)
{
	int8_t x[6] = { 127, -128, 7, -7, 100, -128 }, y[6] = { 1, -1, 2, 2, 0, -1 }, z[6];
	static const int8_t add[6] = { -128, 127, 9, -5, 100, 127 };
	static const int8_t divs[6] = { 127, -128, 3, -3, 0, -128 };	/* 0 for / 0; wraps */

	ASSERT_EQ(NULL, binary(NPU_OP_ADD, NPU_DT_I8, x, y, NPU_DT_I8, z, 6));
	EXPECT_EQ(0, memcmp(add, z, 6));
	ASSERT_EQ(NULL, binary(NPU_OP_DIV, NPU_DT_I8, x, y, NPU_DT_I8, z, 6));
	EXPECT_EQ(0, memcmp(divs, z, 6));
	ASSERT_EQ(NULL, binary(NPU_OP_MUL, NPU_DT_I8, x, y, NPU_DT_I8, z, 6));
	EXPECT_EQ(127, z[0]);
	EXPECT_EQ(-128, z[1]);			/* -128 * -1 wraps */
	EXPECT_EQ(14, z[2]);
}

TEST(mod_takes_the_divisors_sign_and_fmod_the_dividends)
{
	int32_t x[5] = { -7, 7, -7, 7, 5 }, y[5] = { 3, -3, -3, 3, 0 }, z[5];
	static const int32_t mod[5] = { 2, -2, -1, 1, 0 }, fmod_[5] = { -1, 1, -1, 1, 0 };
	float fx[3] = { -7.5f, 7.5f, 5 }, fy[3] = { 2, -2, 0 }, fz[3];

	ASSERT_EQ(NULL, binary(NPU_OP_MOD, NPU_DT_I32, x, y, NPU_DT_I32, z, 5));
	EXPECT_EQ(0, memcmp(mod, z, sizeof(z)));
	ASSERT_EQ(NULL, binary(NPU_OP_FMOD, NPU_DT_I32, x, y, NPU_DT_I32, z, 5));
	EXPECT_EQ(0, memcmp(fmod_, z, sizeof(z)));
	ASSERT_EQ(NULL, binary(NPU_OP_FMOD, NPU_DT_F32, fx, fy, NPU_DT_F32, fz, 3));
	EXPECT_EQ(-1.5f, fz[0]);
	EXPECT_EQ(1.5f, fz[1]);
	EXPECT_TRUE(isnan(fz[2]));
	ASSERT_EQ(NULL, binary(NPU_OP_MOD, NPU_DT_F32, fx, fy, NPU_DT_F32, fz, 2));
	EXPECT_EQ(0.5f, fz[0]);
	EXPECT_EQ(-0.5f, fz[1]);
}

TEST(unsigned_ops_compare_and_shift_as_unsigned)
{
	uint64_t x[4] = { 1ull << 63, 1, 16, 3 }, y[4] = { 1, 2, 2, 64 }, z[4];
	uint8_t b[4], u8x[2] = { 200, 16 }, u8y[2] = { 100, 4 }, u8z[2];

	ASSERT_EQ(NULL, binary(NPU_OP_GREATER, NPU_DT_U64, x, y, NPU_DT_BOOL, b, 4));
	EXPECT_EQ(1, b[0]);			/* 2^63 > 1, unsigned */
	EXPECT_EQ(0, b[1]);
	ASSERT_EQ(NULL, binary(NPU_OP_SHR, NPU_DT_U64, x, y, NPU_DT_U64, z, 4));
	EXPECT_EQ(1ull << 62, z[0]);
	EXPECT_EQ(4u, z[2]);
	EXPECT_EQ(0u, z[3]);			/* past the width */
	ASSERT_EQ(NULL, binary(NPU_OP_SHL, NPU_DT_U8, u8x, u8y, NPU_DT_U8, u8z, 2));
	EXPECT_EQ(0, u8z[0]);			/* 200 << 100: gone */
	EXPECT_EQ(0, u8z[1]);			/* 16 << 4 = 256 keeps the low 8 bits */
	ASSERT_EQ(NULL, binary(NPU_OP_SUB, NPU_DT_U8, u8y, u8x, NPU_DT_U8, u8z, 2));
	EXPECT_EQ(156, u8z[0]);			/* 100 - 200 wraps */
}

TEST(comparisons_write_bool_and_nan_compares_false)
{
	float x[4] = { 1, NAN, 2, -0.0f }, y[4] = { 2, NAN, 2, 0.0f };
	uint8_t b[4];
	static const uint8_t lt[4] = { 1, 0, 0, 0 }, le[4] = { 1, 0, 1, 1 }, eq[4] = { 0, 0, 1, 1 };

	ASSERT_EQ(NULL, binary(NPU_OP_LESS, NPU_DT_F32, x, y, NPU_DT_BOOL, b, 4));
	EXPECT_EQ(0, memcmp(lt, b, 4));
	ASSERT_EQ(NULL, binary(NPU_OP_LESS_EQUAL, NPU_DT_F32, x, y, NPU_DT_BOOL, b, 4));
	EXPECT_EQ(0, memcmp(le, b, 4));
	ASSERT_EQ(NULL, binary(NPU_OP_EQUAL, NPU_DT_F32, x, y, NPU_DT_BOOL, b, 4));
	EXPECT_EQ(0, memcmp(eq, b, 4));
	ASSERT_EQ(NULL, binary(NPU_OP_GREATER_EQUAL, NPU_DT_F32, x, y, NPU_DT_BOOL, b, 4));
	EXPECT_EQ(0, b[0]);
	EXPECT_EQ(0, b[1]);
	EXPECT_EQ(1, b[2]);
}

TEST(logic_on_bool)
{
	uint8_t x[4] = { 0, 0, 1, 1 }, y[4] = { 0, 1, 0, 1 }, z[4];
	static const uint8_t and_[4] = { 0, 0, 0, 1 }, or_[4] = { 0, 1, 1, 1 },
			     xor_[4] = { 0, 1, 1, 0 }, not_[4] = { 1, 1, 0, 0 };

	ASSERT_EQ(NULL, binary(NPU_OP_AND, NPU_DT_BOOL, x, y, NPU_DT_BOOL, z, 4));
	EXPECT_EQ(0, memcmp(and_, z, 4));
	ASSERT_EQ(NULL, binary(NPU_OP_OR, NPU_DT_BOOL, x, y, NPU_DT_BOOL, z, 4));
	EXPECT_EQ(0, memcmp(or_, z, 4));
	ASSERT_EQ(NULL, binary(NPU_OP_XOR, NPU_DT_BOOL, x, y, NPU_DT_BOOL, z, 4));
	EXPECT_EQ(0, memcmp(xor_, z, 4));
	ASSERT_EQ(NULL, unary(NPU_OP_NOT, NPU_DT_BOOL, x, NPU_DT_BOOL, z, 4, 0, 0));
	EXPECT_EQ(0, memcmp(not_, z, 4));
}

TEST(casts_truncate_saturate_and_round)
{
	float f[6] = { 2.9f, -2.9f, NAN, 1e30f, -1e30f, 0.5f };
	int64_t i64[6];
	int8_t i8[6];
	uint8_t b[6];
	int32_t big[2] = { 300, -1 };
	uint8_t u8[2];
	double d[3] = { 1.0 + 0x1p-30, 65520.0, 1.0 + 0x1p-11 + 0x1p-40 };
	uint16_t h[3];

	ASSERT_EQ(NULL, unary(NPU_OP_CAST, NPU_DT_F32, f, NPU_DT_I64, i64, 6, 0, 0));
	EXPECT_EQ(2, i64[0]);
	EXPECT_EQ(-2, i64[1]);
	EXPECT_EQ(0, i64[2]);			/* nan */
	EXPECT_EQ(INT64_MAX, i64[3]);
	EXPECT_EQ(INT64_MIN, i64[4]);
	ASSERT_EQ(NULL, unary(NPU_OP_CAST, NPU_DT_F32, f, NPU_DT_I8, i8, 2, 0, 0));
	EXPECT_EQ(2, i8[0]);
	EXPECT_EQ(-2, i8[1]);
	ASSERT_EQ(NULL, unary(NPU_OP_CAST, NPU_DT_F32, f, NPU_DT_BOOL, b, 6, 0, 0));
	for (int k = 0; k < 6; k++)
		EXPECT_EQ(1, b[k]);		/* every one is not 0, nan too */
	ASSERT_EQ(NULL, unary(NPU_OP_CAST, NPU_DT_I32, big, NPU_DT_U8, u8, 2, 0, 0));
	EXPECT_EQ(44, u8[0]);			/* 300 keeps its low byte */
	EXPECT_EQ(255, u8[1]);
	ASSERT_EQ(NULL, unary(NPU_OP_CAST, NPU_DT_F64, d, NPU_DT_F16, h, 3, 0, 0));
	EXPECT_EQ(0x3c00, h[0]);		/* 1 + 2^-30 rounds to 1 */
	EXPECT_EQ(0x7c00, h[1]);		/* 65520 rounds up to infinity */
	EXPECT_EQ(0x3c01, h[2]);		/* just past a tie: up, not to even via float */
}

/*
 * op over [2, 3] with alpha and beta: in0 (dtype d0) read through strides
 * s0, in1 (dtype d1; y NULL: none) through s1, out dense: the row loops
 * (a typed one where it applies) in two parts.
 */
static const char *run23p(uint32_t op, uint32_t d0, const void *x, const uint64_t *s0,
			  uint32_t d1, const void *y, const uint64_t *s1, uint32_t dout, void *out,
			  float alpha, float beta)
{
	struct npu_op a = { .op = op, .alpha = alpha, .beta = beta };
	struct npu_view in[2], o;
	const char *err;

	a.in[0] = (struct npu_tensor){ .dtype = d0, .ndim = 2, .shape = { 2, 3 },
				       .stride = { s0[0], s0[1] } };
	a.in[1] = a.in[0];
	if (y)
		a.in[1] = (struct npu_tensor){ .dtype = d1, .ndim = 2, .shape = { 2, 3 },
					       .stride = { s1[0], s1[1] } };
	a.out = (struct npu_tensor){ .dtype = dout, .ndim = 2, .shape = { 2, 3 }, .stride = { 3, 1 } };
	for (int k = 0; k < 2; k++) {
		in[k] = (struct npu_view){ .data = (void *)(k ? y : x), .dtype = a.in[k].dtype,
					   .ndim = 2, .shape = { 2, 3 } };
		memcpy(in[k].stride, a.in[k].stride, sizeof(in[k].stride));
	}
	o = (struct npu_view){ .data = out, .dtype = dout, .ndim = 2, .shape = { 2, 3 },
			       .stride = { 3, 1 } };
	err = npu_op_check(&a);
	if (!err) {
		npu_op_run(&a, in, &o, 0, 4);
		npu_op_run(&a, in, &o, 4, 6);
	}
	return err;
}

/* run23p() of in1 of in0's dtype, no parameters. */
static const char *run23(uint32_t op, uint32_t d0, const void *x, const uint64_t *s0,
			 const void *y, const uint64_t *s1, uint32_t dout, void *out)
{
	return run23p(op, d0, x, s0, d0, y, s1, dout, out, 0, 0);
}

TEST(quantized_casts_and_int32_arithmetic_by_rows)
{
	/* read transposed: element (i, j) is x[i + 2 j] */
	static const uint64_t tr[2] = { 1, 2 }, dense[2] = { 3, 1 }, row[2] = { 0, 1 };
	float f[6] = { 2.9f, -2.9f, NAN, 300.7f, -1.5f, 200.2f };
	float g[6] = { 3e9f, -2.9f, NAN, 1e30f, -1e30f, 7.5f };
	float huge[6] = { 1e19f, 1e30f, 9.3e18f, 0, -0.0f, 0.25f };
	uint8_t u8[6] = { 0, 255, 128, 1, 2, 3 }, ou8[6];
	int8_t i8[6] = { -128, 127, -1, 0, 5, -5 }, oi8[6];
	int32_t i32[6] = { 16777217, -5, INT32_MAX, INT32_MIN, 65536, -3 }, oi32[6];
	int32_t ones[3] = { 1, 1, 65536 };
	float of[6];

	/* f32 -> u8, i8, i32: truncated toward zero, saturating in 64 bits, nan 0; low bits */
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_F32, f, tr, NULL, NULL, NPU_DT_U8, ou8));
	EXPECT_EQ(0, memcmp(ou8, (uint8_t[]){ 2, 0, 255, 254, 44, 200 }, 6));
	/* into an unsigned dtype 2^63 .. 2^64 is in range (1e19: its low byte 0), past it 2^64 - 1 */
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_F32, huge, dense, NULL, NULL, NPU_DT_U8, ou8));
	EXPECT_EQ(0, memcmp(ou8, (uint8_t[]){ 0, 255, 0, 0, 0, 0 }, 6));
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_F32, f, dense, NULL, NULL, NPU_DT_I8, oi8));
	EXPECT_EQ(0, memcmp(oi8, (int8_t[]){ 2, -2, 0, 44, -1, -56 }, 6));
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_F32, g, dense, NULL, NULL, NPU_DT_I32, oi32));
	EXPECT_EQ(0, memcmp(oi32, (int32_t[]){ -1294967296, -2, 0, -1, 0, 7 }, 24));
	/* bytes and int32 -> f32 (2^24 + 1 rounds to even) */
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_U8, u8, tr, NULL, NULL, NPU_DT_F32, of));
	EXPECT_EQ(0, memcmp(of, (float[]){ 0, 128, 2, 255, 1, 3 }, 24));
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_I8, i8, dense, NULL, NULL, NPU_DT_F32, of));
	EXPECT_EQ(0, memcmp(of, (float[]){ -128, 127, -1, 0, 5, -5 }, 24));
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_I32, i32, dense, NULL, NULL, NPU_DT_F32, of));
	EXPECT_EQ(0, memcmp(of, (float[]){ 16777216.0f, -5, 2147483648.0f, -2147483648.0f,
					   65536, -3 }, 24));
	ASSERT_EQ(NULL, run23(NPU_OP_CAST, NPU_DT_I8, i8, tr, NULL, NULL, NPU_DT_I32, oi32));
	EXPECT_EQ(0, memcmp(oi32, (int32_t[]){ -128, -1, 5, 127, 0, -5 }, 24));
	/* int32 wraps at 32 bits: a row broadcast down */
	ASSERT_EQ(NULL, run23(NPU_OP_ADD, NPU_DT_I32, i32, dense, ones, row, NPU_DT_I32, oi32));
	EXPECT_EQ(0, memcmp(oi32, (int32_t[]){ 16777218, -4, INT32_MAX + 65536u, INT32_MIN + 1,
					       65537, 65533 }, 24));
	ASSERT_EQ(NULL, run23(NPU_OP_SUB, NPU_DT_I32, i32, dense, ones, row, NPU_DT_I32, oi32));
	EXPECT_EQ(INT32_MAX, oi32[3]);		/* INT32_MIN - 1 */
	ASSERT_EQ(NULL, run23(NPU_OP_MUL, NPU_DT_I32, i32, dense, ones, row, NPU_DT_I32, oi32));
	EXPECT_EQ(0, memcmp(oi32, (int32_t[]){ 16777217, -5, -65536, INT32_MIN, 65536, -196608 },
			    24));
}

TEST(requant_scales_rounds_to_even_adds_the_zero_point_and_saturates)
{
	static const uint64_t dense[2] = { 3, 1 }, row[2] = { 0, 1 };
	/* [2, 3] sums, a scale per column */
	int32_t acc[6] = { 5, -5, 7, 1000000, -3, 3 };
	float s[3] = { 0.5f, 0.5f, 1.5f }, f[6] = { 2.5f, -2.5f, NAN, 300, -300, 0.49f };
	uint8_t u8[6];
	int8_t i8[6];
	struct npu_op a = { .op = NPU_OP_REQUANT, .alpha = NAN };

	/* 2.5 -> 2, -2.5 -> -2, 10.5 -> 10, -1.5 -> -2, 4.5 -> 4 (to even); + 10, into [0, 255] */
	ASSERT_EQ(NULL, run23p(NPU_OP_REQUANT, NPU_DT_I32, acc, dense, NPU_DT_F32, s, row, NPU_DT_U8, u8, 10,
			       -INFINITY));
	EXPECT_EQ(0, memcmp(u8, (uint8_t[]){ 12, 8, 20, 255, 8, 14 }, 6));
	/* a Relu before it: nothing under the zero point */
	ASSERT_EQ(NULL, run23p(NPU_OP_REQUANT, NPU_DT_I32, acc, dense, NPU_DT_F32, s, row, NPU_DT_U8, u8, 10, 10));
	EXPECT_EQ(0, memcmp(u8, (uint8_t[]){ 12, 10, 20, 255, 10, 14 }, 6));
	/* from f32 into i8: nan gives the least value; -128 .. 127 */
	ASSERT_EQ(NULL, run23p(NPU_OP_REQUANT, NPU_DT_F32, f, dense, NPU_DT_F32, s, row, NPU_DT_I8, i8, -3,
			       -INFINITY));
	EXPECT_EQ(0, memcmp(i8, (int8_t[]){ -2, -4, -128, 127, -128, -2 }, 6));
	/* what it takes */
	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_I32, .ndim = 1, .shape = { 6 }, .stride = { 1 } };
	a.in[1] = a.in[0];
	a.in[1].dtype = NPU_DT_F32;
	a.out = a.in[0];
	a.out.dtype = NPU_DT_U8;
	EXPECT_NE(NULL, npu_op_check(&a));	/* a nan zero point */
	a.alpha = 0;
	EXPECT_EQ(NULL, npu_op_check(&a));
	a.out.dtype = NPU_DT_I32;
	EXPECT_NE(NULL, npu_op_check(&a));	/* u8 or i8 only */
	a.out.dtype = NPU_DT_U8;
	a.in[1].dtype = NPU_DT_I32;
	EXPECT_NE(NULL, npu_op_check(&a));	/* an f32 scale */
}

TEST(integer_unary_ops)
{
	int16_t x[4] = { -5, 3, 0, -32768 }, z[4];
	static const int16_t relu[4] = { 0, 3, 0, 0 }, absv[4] = { 5, 3, 0, -32768 };
	static const int16_t sign[4] = { -1, 1, 0, -1 }, clip[4] = { -2, 2, 0, -2 };

	ASSERT_EQ(NULL, unary(NPU_OP_RELU, NPU_DT_I16, x, NPU_DT_I16, z, 4, 0, 0));
	EXPECT_EQ(0, memcmp(relu, z, sizeof(z)));
	ASSERT_EQ(NULL, unary(NPU_OP_ABS, NPU_DT_I16, x, NPU_DT_I16, z, 4, 0, 0));
	EXPECT_EQ(0, memcmp(absv, z, sizeof(z)));	/* abs(-32768) wraps */
	ASSERT_EQ(NULL, unary(NPU_OP_SIGN, NPU_DT_I16, x, NPU_DT_I16, z, 4, 0, 0));
	EXPECT_EQ(0, memcmp(sign, z, sizeof(z)));
	ASSERT_EQ(NULL, unary(NPU_OP_CLIP, NPU_DT_I16, x, NPU_DT_I16, z, 4, -2.5f, 2.5f));
	EXPECT_EQ(0, memcmp(clip, z, sizeof(z)));
	EXPECT_NE(NULL, unary(NPU_OP_EXP, NPU_DT_I16, x, NPU_DT_I16, z, 4, 0, 0));
}

TEST(isnan_and_isinf_by_sign)
{
	float x[4] = { INFINITY, -INFINITY, NAN, 1 };
	uint8_t b[4];

	ASSERT_EQ(NULL, unary(NPU_OP_ISNAN, NPU_DT_F32, x, NPU_DT_BOOL, b, 4, 0, 0));
	EXPECT_EQ(0, b[0] | b[1] | b[3]);
	EXPECT_EQ(1, b[2]);
	ASSERT_EQ(NULL, unary(NPU_OP_ISINF, NPU_DT_F32, x, NPU_DT_BOOL, b, 4, 1, 0));
	EXPECT_EQ(1, b[0]);
	EXPECT_EQ(0, b[1]);
	ASSERT_EQ(NULL, unary(NPU_OP_ISINF, NPU_DT_F32, x, NPU_DT_BOOL, b, 4, 0, 1));
	EXPECT_EQ(0, b[0]);
	EXPECT_EQ(1, b[1]);
	EXPECT_EQ(0, b[2] | b[3]);
}

/* Reduce a [2, 4] tensor along axis 1 into [2, 1]. */
static const char *reduce(uint32_t op, uint32_t flags, uint32_t dt, const void *x, uint32_t odt,
			  void *out)
{
	struct npu_op a = { .op = op, .flags = flags, .axis = 1 };
	struct npu_view in[2], o;
	const char *err;

	memset(&a.in[0], 0, sizeof(a.in[0]));
	a.in[0] = (struct npu_tensor){ .dtype = dt, .ndim = 2, .shape = { 2, 4 },
					  .stride = { 4, 1 } };
	a.out = (struct npu_tensor){ .dtype = odt, .ndim = 2, .shape = { 2, 1 },
					.stride = { 1, 1 } };
	in[0] = (struct npu_view){ .data = (void *)x, .dtype = dt, .ndim = 2, .shape = { 2, 4 },
				   .stride = { 4, 1 } };
	o = (struct npu_view){ .data = out, .dtype = odt, .ndim = 2, .shape = { 2, 1 },
			       .stride = { 1, 1 } };
	err = npu_op_check(&a);
	if (!err)
		npu_op_run(&a, in, &o, 0, 2);
	return err;
}

TEST(argmax_argmin_first_last_and_nan)
{
	float x[8] = { 1, 3, 3, 0, 2, NAN, 5, NAN };
	int32_t ix[8] = { -1, 4, -9, 4, 7, 7, 7, 7 };
	int64_t r[2];

	ASSERT_EQ(NULL, reduce(NPU_OP_ARGMAX, 0, NPU_DT_F32, x, NPU_DT_I64, r));
	EXPECT_EQ(1, r[0]);
	EXPECT_EQ(1, r[1]);			/* the first nan */
	ASSERT_EQ(NULL, reduce(NPU_OP_ARGMAX, NPU_OP_F_LAST_INDEX, NPU_DT_F32, x, NPU_DT_I64, r));
	EXPECT_EQ(2, r[0]);
	EXPECT_EQ(3, r[1]);			/* the last nan */
	ASSERT_EQ(NULL, reduce(NPU_OP_ARGMIN, 0, NPU_DT_I32, ix, NPU_DT_I64, r));
	EXPECT_EQ(2, r[0]);
	EXPECT_EQ(0, r[1]);
	ASSERT_EQ(NULL, reduce(NPU_OP_ARGMIN, NPU_OP_F_LAST_INDEX, NPU_DT_I32, ix, NPU_DT_I64, r));
	EXPECT_EQ(3, r[1]);
	EXPECT_NE(NULL, reduce(NPU_OP_ARGMAX, 0, NPU_DT_F32, x, NPU_DT_I32, r));
	EXPECT_NE(NULL, reduce(NPU_OP_REDUCE_MAX, NPU_OP_F_LAST_INDEX, NPU_DT_F32, x, NPU_DT_F32,
			       r));
}

TEST(min_prod_and_double_reductions)
{
	float x[8] = { 3, -1, 2, 4, 1, NAN, 0, 2 }, r[2];
	double d[8] = { 1e300, 1e300, -1e300, 1, 0.5, 0.25, 2, 8 }, rd[2];

	ASSERT_EQ(NULL, reduce(NPU_OP_REDUCE_MIN, 0, NPU_DT_F32, x, NPU_DT_F32, r));
	EXPECT_EQ(-1.0f, r[0]);
	EXPECT_TRUE(isnan(r[1]));		/* a nan it meets stays */
	ASSERT_EQ(NULL, reduce(NPU_OP_REDUCE_PROD, 0, NPU_DT_F32, x, NPU_DT_F32, r));
	EXPECT_EQ(-24.0f, r[0]);
	ASSERT_EQ(NULL, reduce(NPU_OP_REDUCE_SUM, 0, NPU_DT_F64, d, NPU_DT_F64, rd));
	EXPECT_EQ(1e300, rd[0]);		/* beyond float's range */
	ASSERT_EQ(NULL, reduce(NPU_OP_REDUCE_PROD, 0, NPU_DT_F64, d, NPU_DT_F64, rd));
	EXPECT_EQ(2.0, rd[1]);
	EXPECT_NE(NULL, reduce(NPU_OP_REDUCE_SUM, 0, NPU_DT_I32, x, NPU_DT_I32, r));
}

/* CUMSUM of a [2, 4] tensor along axis 1, in f64, with flags. */
static const char *cumsum(uint32_t flags, const double *x, double *out)
{
	struct npu_op a = { .op = NPU_OP_CUMSUM, .flags = flags, .axis = 1 };
	struct npu_view in[2], o;
	const char *err;

	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_F64, .ndim = 2, .shape = { 2, 4 },
					  .stride = { 4, 1 } };
	a.out = a.in[0];
	in[0] = (struct npu_view){ .data = (void *)x, .dtype = NPU_DT_F64, .ndim = 2,
				   .shape = { 2, 4 }, .stride = { 4, 1 } };
	o = in[0];
	o.data = out;
	err = npu_op_check(&a);
	if (!err) {
		/* a unit per line: the two halves run apart, as on two cores */
		if (npu_op_units(&a) != 2)
			return "not a unit per line";
		npu_op_run(&a, in, &o, 0, 1);
		npu_op_run(&a, in, &o, 1, 2);
	}
	return err;
}

TEST(cumsum_forward_exclusive_and_reverse)
{
	const double x[8] = { 1, 2, 3, 4, 1e300, -1e300, 0.5, 0.25 };
	static const double fwd[8] = { 1, 3, 6, 10, 1e300, 0, 0.5, 0.75 };
	static const double excl[8] = { 0, 1, 3, 6, 0, 1e300, 0, 0.5 };
	static const double rev[8] = { 10, 9, 7, 4, 0, -1e300 + 0.75, 0.75, 0.25 };
	static const double both[8] = { 9, 7, 4, 0, -1e300 + 0.75, 0.75, 0.25, 0 };
	double out[8];

	ASSERT_EQ(NULL, cumsum(0, x, out));
	EXPECT_EQ(0, memcmp(fwd, out, sizeof(out)));
	ASSERT_EQ(NULL, cumsum(NPU_OP_F_EXCLUSIVE, x, out));
	EXPECT_EQ(0, memcmp(excl, out, sizeof(out)));
	ASSERT_EQ(NULL, cumsum(NPU_OP_F_REVERSE, x, out));
	EXPECT_EQ(0, memcmp(rev, out, sizeof(out)));
	ASSERT_EQ(NULL, cumsum(NPU_OP_F_EXCLUSIVE | NPU_OP_F_REVERSE, x, out));
	EXPECT_EQ(0, memcmp(both, out, sizeof(out)));
	EXPECT_NE(NULL, cumsum(NPU_OP_F_LAST_INDEX, x, out));
}

TEST(broadcast_and_strides_in_the_general_path)
{
	/* [2, 3] int64 + a row broadcast down: the element loop's unravel. */
	int64_t x[6] = { 1, 2, 3, 4, 5, 6 }, row[3] = { 10, 20, 30 }, z[6];
	static const int64_t want[6] = { 11, 22, 33, 14, 25, 36 };
	struct npu_op a = { .op = NPU_OP_ADD };
	struct npu_view in[2], o;

	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_I64, .ndim = 2, .shape = { 2, 3 },
					  .stride = { 3, 1 } };
	a.in[1] = (struct npu_tensor){ .dtype = NPU_DT_I64, .ndim = 2, .shape = { 2, 3 },
					  .stride = { 0, 1 } };
	a.out = a.in[0];
	in[0] = (struct npu_view){ .data = x, .dtype = NPU_DT_I64, .ndim = 2, .shape = { 2, 3 },
				   .stride = { 3, 1 } };
	in[1] = in[0];
	in[1].data = row;
	in[1].stride[0] = 0;
	o = in[0];
	o.data = z;
	ASSERT_EQ(NULL, npu_op_check(&a));
	npu_op_run(&a, in, &o, 0, 6);
	EXPECT_EQ(0, memcmp(want, z, sizeof(z)));
}

TEST(select_takes_in1_where_the_condition_holds_and_keeps_the_output_elsewhere)
{
	uint8_t c[4] = { 1, 0, 0, 1 };
	int64_t x[4] = { 1, 2, 3, 4 }, out[4] = { -1, -2, -3, -4 };
	static const int64_t want[4] = { 1, -2, -3, 4 };
	struct npu_op a = { .op = NPU_OP_SELECT };
	struct npu_view in[2], o;

	vec(&a.in[0], &in[0], c, NPU_DT_BOOL, 4, 1);
	vec(&a.in[1], &in[1], x, NPU_DT_I64, 4, 1);
	vec(&a.out, &o, out, NPU_DT_I64, 4, 1);
	ASSERT_EQ(NULL, npu_op_check(&a));
	EXPECT_TRUE(npu_op_reads_output(&a));
	npu_op_run(&a, in, &o, 0, 4);
	EXPECT_EQ(0, memcmp(want, out, sizeof(out)));
	a.in[0].dtype = NPU_DT_U8;
	EXPECT_NE(NULL, npu_op_check(&a));
}

/* [2, 3] data gathered along axis 1 by [2, 3] indices of dtype idt. */
static const char *gather(const float *data, const void *idx, uint32_t idt, float *out,
			  uint64_t data_stride0)
{
	struct npu_op a = { .op = NPU_OP_GATHER_ELEMENTS, .axis = 1 };
	struct npu_view in[2], o;
	const char *err;

	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_F32, .ndim = 2, .shape = { 2, 3 },
					  .stride = { data_stride0, 1 } };
	a.in[1] = (struct npu_tensor){ .dtype = idt, .ndim = 2, .shape = { 2, 3 },
					  .stride = { 3, 1 } };
	a.out = (struct npu_tensor){ .dtype = NPU_DT_F32, .ndim = 2, .shape = { 2, 3 },
					.stride = { 3, 1 } };
	in[0] = (struct npu_view){ .data = (void *)data, .dtype = NPU_DT_F32, .ndim = 2,
				   .shape = { 2, 3 }, .stride = { data_stride0, 1 } };
	in[1] = (struct npu_view){ .data = (void *)idx, .dtype = idt, .ndim = 2,
				   .shape = { 2, 3 }, .stride = { 3, 1 } };
	o = (struct npu_view){ .data = out, .dtype = NPU_DT_F32, .ndim = 2, .shape = { 2, 3 },
			       .stride = { 3, 1 } };
	err = npu_op_check(&a);
	if (!err) {
		npu_op_run(&a, in, &o, 0, 2);
		npu_op_run(&a, in, &o, 2, 6);
	}
	return err;
}

TEST(gather_elements_counts_negative_indices_from_the_end)
{
	float data[6] = { 10, 11, 12, 20, 21, 22 }, out[6];
	int64_t i64[6] = { 2, 0, -1, -3, 1, 3 };	/* 3 is past the end: 0 */
	int32_t i32[6] = { 1, 1, 1, 0, 2, -4 };
	static const float want64[6] = { 12, 10, 12, 20, 21, 0 };
	static const float want32[6] = { 11, 11, 11, 10, 12, 0 };	/* data row 0 twice */

	ASSERT_EQ(NULL, gather(data, i64, NPU_DT_I64, out, 3));
	EXPECT_EQ(0, memcmp(want64, out, sizeof(out)));
	ASSERT_EQ(NULL, gather(data, i32, NPU_DT_I32, out, 0));	/* broadcast rows */
	EXPECT_EQ(0, memcmp(want32, out, sizeof(out)));
	EXPECT_NE(NULL, gather(data, data, NPU_DT_F32, out, 3));	/* float indices */
}

/* Along axis 0 the source moves with the run: rows of 4, split mid-row. */
TEST(gather_elements_along_a_leading_axis_walks_the_row)
{
	float data[12], out[8];
	int64_t idx[8] = { 2, 0, 1, -1, 0, 0, 2, 5 };	/* 5 is past the end: 0 */
	struct npu_op a = { .op = NPU_OP_GATHER_ELEMENTS, .axis = 0 };
	struct npu_view in[2], o;

	for (int k = 0; k < 12; k++)
		data[k] = (float)(100 * (k / 4) + k % 4);
	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_F32, .ndim = 2, .shape = { 3, 4 },
					  .stride = { 4, 1 } };
	a.in[1] = (struct npu_tensor){ .dtype = NPU_DT_I64, .ndim = 2, .shape = { 2, 4 },
					  .stride = { 4, 1 } };
	a.out = (struct npu_tensor){ .dtype = NPU_DT_F32, .ndim = 2, .shape = { 2, 4 },
					.stride = { 4, 1 } };
	in[0] = (struct npu_view){ .data = data, .dtype = NPU_DT_F32, .ndim = 2,
				   .shape = { 3, 4 }, .stride = { 4, 1 } };
	in[1] = (struct npu_view){ .data = idx, .dtype = NPU_DT_I64, .ndim = 2,
				   .shape = { 2, 4 }, .stride = { 4, 1 } };
	o = (struct npu_view){ .data = out, .dtype = NPU_DT_F32, .ndim = 2, .shape = { 2, 4 },
			       .stride = { 4, 1 } };
	ASSERT_EQ(NULL, npu_op_check(&a));
	npu_op_run(&a, in, &o, 0, 3);
	npu_op_run(&a, in, &o, 3, 8);
	for (int k = 0; k < 8; k++) {
		int64_t i = idx[k] < 0 ? idx[k] + 3 : idx[k];

		EXPECT_EQ(i < 3 ? (float)(100 * i + k % 4) : 0.0f, out[k]) TH_LOG("element %d", k);
	}
	/* One position a row (stride 0 along it), as a Resize's pass along H: row 1, none. */
	idx[0] = 1, idx[1] = 7;
	a.in[1].stride[0] = in[1].stride[0] = 1;
	a.in[1].stride[1] = in[1].stride[1] = 0;
	ASSERT_EQ(NULL, npu_op_check(&a));
	npu_op_run(&a, in, &o, 0, 3);
	npu_op_run(&a, in, &o, 3, 8);
	for (int k = 0; k < 8; k++) {
		EXPECT_EQ(k < 4 ? (float)(100 + k) : 0.0f, out[k]) TH_LOG("element %d", k);
	}
}

TEST(dtype_rules_refuse_what_an_op_does_not_take)
{
	float f[2] = { 0 }, fz[2];
	int32_t i[2] = { 0 }, iz[2];
	uint8_t b[2] = { 0 }, bz[2];
	struct npu_op a = { .op = NPU_OP_GEMM };

	EXPECT_NE(NULL, binary(NPU_OP_AND, NPU_DT_F32, f, f, NPU_DT_BOOL, bz, 2));
	EXPECT_NE(NULL, binary(NPU_OP_SHL, NPU_DT_I32, i, i, NPU_DT_I32, iz, 2));
	EXPECT_NE(NULL, binary(NPU_OP_ADD, NPU_DT_BOOL, b, b, NPU_DT_BOOL, bz, 2));
	EXPECT_NE(NULL, binary(NPU_OP_ADD, NPU_DT_I32, i, i, NPU_DT_F32, fz, 2));
	EXPECT_NE(NULL, binary(NPU_OP_LESS, NPU_DT_F32, f, f, NPU_DT_F32, fz, 2));
	EXPECT_NE(NULL, unary(NPU_OP_NOT, NPU_DT_I32, i, NPU_DT_I32, iz, 2, 0, 0));
	EXPECT_NE(NULL, unary(NPU_OP_ISNAN, NPU_DT_I32, i, NPU_DT_BOOL, bz, 2, 0, 0));
	EXPECT_NE(NULL, unary(NPU_OP_TANH, NPU_DT_F64, f, NPU_DT_F64, fz, 1, 0, 0));
	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_I32, .ndim = 2, .shape = { 1, 1 },
					  .stride = { 1, 1 } };
	a.in[1] = a.in[0];
	a.out = a.in[0];
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "f32, f16 and bf16"));
	/* i8 widens into maxpool only (fwsim_widen_test.c has the rest) */
	a.in[0].dtype = a.in[1].dtype = a.out.dtype = NPU_DT_I8;
	EXPECT_NE(NULL, npu_op_check(&a));
	a.in[0].dtype = a.in[1].dtype = a.out.dtype = NPU_DT_F16;
	EXPECT_EQ(NULL, npu_op_check(&a));
}

/* A 2-D tensor of r x c of dt, rows ld apart, over data. */
static void mat(struct npu_tensor *t, struct npu_view *v, void *data, uint32_t dt, uint64_t r,
		uint64_t c, uint64_t ld)
{
	memset(t, 0, sizeof(*t));
	*t = (struct npu_tensor){ .dtype = dt, .ndim = 2, .shape = { r, c }, .stride = { ld, 1 } };
	*v = (struct npu_view){ .data = data, .dtype = dt, .ndim = 2 };
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

static uint32_t irng = 4242;

/* Bytes of every value, the extremes more often than chance. */
static uint8_t rbyte(void)
{
	irng = irng * 1664525u + 1013904223u;
	switch (irng >> 29) {
	case 0: return 0x80;
	case 1: return 0x7f;
	case 2: return 0xff;
	default: return (uint8_t)(irng >> 13);
	}
}

/*
 * C (m x n, i32, rows ldc apart) = A B (+ C when beta is 1) on A of da
 * and B of db, either transposed, against sums in 64 bits taken modulo
 * 2^32. C starts as garbage, which beta 0 must not read.
 */
static void int_gemm_case(struct __test_metadata *_metadata, uint32_t da, uint32_t db,
			  uint64_t m, uint64_t n, uint64_t k, bool ta, bool tb, float beta)
{
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1.0f, .beta = beta,
			    .flags = (ta ? NPU_OP_F_TRANS_A : 0) | (tb ? NPU_OP_F_TRANS_B : 0) };
	uint8_t *A = malloc(m * k), *B = malloc(k * n);
	uint64_t ldc = n + 3, bad = 0;
	int32_t *C = malloc(m * ldc * 4), *C0 = malloc(m * ldc * 4);
	struct npu_view v[3];

	ASSERT_TRUE(A && B && C && C0);
	for (uint64_t x = 0; x < m * k; x++)
		A[x] = rbyte();
	for (uint64_t x = 0; x < k * n; x++)
		B[x] = rbyte();
	for (uint64_t x = 0; x < m * ldc; x++)
		C0[x] = C[x] = (int32_t)(irng = irng * 1664525u + 1013904223u);
	mat(&a.in[0], &v[0], A, da, ta ? k : m, ta ? m : k, ta ? m : k);
	mat(&a.in[1], &v[1], B, db, tb ? n : k, tb ? k : n, tb ? k : n);
	mat(&a.out, &v[2], C, NPU_DT_I32, m, n, ldc);
	ASSERT_EQ(NULL, npu_op_check(&a));
	npu_op_run(&a, v, &v[2], 0, npu_op_units(&a));
	for (uint64_t i = 0; i < m; i++)
		for (uint64_t j = 0; j < ldc; j++) {
			int64_t s = j < n && beta != 0.0f ? C0[i * ldc + j] : 0;

			for (uint64_t p = 0; p < k && j < n; p++) {
				uint8_t x = A[ta ? p * m + i : i * k + p], y = B[tb ? j * k + p : p * n + j];

				s += (int64_t)(da == NPU_DT_I8 ? (int8_t)x : x) *
				     (db == NPU_DT_I8 ? (int8_t)y : y);
			}
			if (j >= n)	/* past the row: untouched */
				s = C0[i * ldc + j];
			if ((int32_t)(uint32_t)s != C[i * ldc + j] && !bad++)
				TH_LOG("%s x %s %llux%llux%llu%s%s: C[%llu][%llu] %d, want %d",
				       da == NPU_DT_I8 ? "i8" : "u8", db == NPU_DT_I8 ? "i8" : "u8",
				       (unsigned long long)m, (unsigned long long)n,
				       (unsigned long long)k, ta ? " ta" : "", tb ? " tb" : "",
				       (unsigned long long)i, (unsigned long long)j,
				       C[i * ldc + j], (int32_t)(uint32_t)s);
		}
	EXPECT_EQ(0, bad);
	free(A), free(B), free(C), free(C0);
}

/*
 * GEMM on bytes into i32 (firmware 0.9): every sign of A and B, on every
 * path (VNNI, which takes u8 x s8 and corrects the others in closed form,
 * and the portable loops), through the shapes the packing has a case
 * for: k not a multiple of 4 and past a panel, strips cut short, columns
 * past a block, either operand transposed, a few rows, beta 1.
 */
TEST(integer_gemm_sums_bytes_exactly_into_i32)
{
	static const uint32_t dts[2] = { NPU_DT_U8, NPU_DT_I8 };

	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		for (int s = 0; s < 4; s++) {
			uint32_t da = dts[s & 1], db = dts[s >> 1];

			int_gemm_case(_metadata, da, db, 13, 70, 261, false, false, 0);
			int_gemm_case(_metadata, da, db, 2, 40, 7, false, true, 1.0f);
			int_gemm_case(_metadata, da, db, 25, 530, 64, true, false, 0);
			int_gemm_case(_metadata, da, db, 12, 33, 300, true, true, 1.0f);
		}
	}
	fwsim_isa(0);
}

/*
 * y = conv(x, w) on bytes into i32 for x [n, c, h, w] and weights [o, c /
 * group, kh, kw] with this window, against sums in 64 bits over the taps
 * inside the image, taken modulo 2^32.
 */
static void int_conv_case(struct __test_metadata *_metadata, uint32_t dx, uint32_t dw,
			  const uint64_t *xd, uint64_t o, uint64_t kh, uint64_t kw,
			  struct npu_op_window win)
{
	struct npu_op a = { .op = NPU_OP_CONV2D, .win = win };
	uint64_t cpg = xd[1] / win.group, opg = o / win.group, bad = 0;
	uint64_t ho_n = (xd[2] + win.pad[0] + win.pad[2] - win.dilation[0] * (kh - 1) - 1) /
			win.stride[0] + 1;
	uint64_t wo_n = (xd[3] + win.pad[1] + win.pad[3] - win.dilation[1] * (kw - 1) - 1) /
			win.stride[1] + 1;
	uint64_t nx = xd[0] * xd[1] * xd[2] * xd[3], nw = o * cpg * kh * kw;
	uint64_t ny = xd[0] * o * ho_n * wo_n;
	uint8_t *x = malloc(nx), *f = malloc(nw);
	int32_t *y = malloc(ny * 4);
	struct npu_view v[3];

	ASSERT_TRUE(x && f && y);
	for (uint64_t k = 0; k < nx; k++)
		x[k] = rbyte();
	for (uint64_t k = 0; k < nw; k++)
		f[k] = rbyte();
	a.in[0] = (struct npu_tensor){ .dtype = dx, .ndim = 4, .shape = { xd[0], xd[1], xd[2], xd[3] },
				       .stride = { xd[1] * xd[2] * xd[3], xd[2] * xd[3], xd[3], 1 } };
	a.in[1] = (struct npu_tensor){ .dtype = dw, .ndim = 4, .shape = { o, cpg, kh, kw },
				       .stride = { cpg * kh * kw, kh * kw, kw, 1 } };
	a.out = (struct npu_tensor){ .dtype = NPU_DT_I32, .ndim = 4,
				     .shape = { xd[0], o, ho_n, wo_n },
				     .stride = { o * ho_n * wo_n, ho_n * wo_n, wo_n, 1 } };
	for (int t = 0; t < 3; t++) {
		const struct npu_tensor *tt = t < 2 ? &a.in[t] : &a.out;

		v[t] = (struct npu_view){ .data = t == 0 ? (void *)x : t == 1 ? (void *)f : (void *)y,
					  .dtype = tt->dtype, .ndim = 4 };
		memcpy(v[t].shape, tt->shape, sizeof(v[t].shape));
		memcpy(v[t].stride, tt->stride, sizeof(v[t].stride));
	}
	ASSERT_EQ(NULL, npu_op_check(&a));
	npu_op_run(&a, v, &v[2], 0, npu_op_units(&a));
	for (uint64_t n = 0; n < xd[0]; n++)
		for (uint64_t oc = 0; oc < o; oc++)
			for (uint64_t ho = 0; ho < ho_n; ho++)
				for (uint64_t wo = 0; wo < wo_n; wo++) {
					int64_t s = 0;
					uint64_t g = oc / opg, at = ((n * o + oc) * ho_n + ho) * wo_n + wo;

					for (uint64_t c = 0; c < cpg; c++)
						for (uint64_t i = 0; i < kh; i++)
							for (uint64_t j = 0; j < kw; j++) {
								int64_t hi = (int64_t)(ho * win.stride[0] + i * win.dilation[0]) - win.pad[0];
								int64_t wi = (int64_t)(wo * win.stride[1] + j * win.dilation[1]) - win.pad[1];
								uint8_t xb, fb;

								if (hi < 0 || wi < 0 || hi >= (int64_t)xd[2] || wi >= (int64_t)xd[3])
									continue;
								xb = x[((n * xd[1] + g * cpg + c) * xd[2] + (uint64_t)hi) * xd[3] + (uint64_t)wi];
								fb = f[((oc * cpg + c) * kh + i) * kw + j];
								s += (int64_t)(dx == NPU_DT_I8 ? (int8_t)xb : xb) *
								     (dw == NPU_DT_I8 ? (int8_t)fb : fb);
							}
					if ((int32_t)(uint32_t)s != y[at] && !bad++)
						TH_LOG("conv %s x %s: y[%llu][%llu][%llu][%llu] %d, want %d",
						       dx == NPU_DT_I8 ? "i8" : "u8", dw == NPU_DT_I8 ? "i8" : "u8",
						       (unsigned long long)n, (unsigned long long)oc,
						       (unsigned long long)ho, (unsigned long long)wo, y[at],
						       (int32_t)(uint32_t)s);
				}
	EXPECT_EQ(0, bad);
	free(x), free(f), free(y);
}

/*
 * Convolution on bytes into i32 (firmware 0.9): every sign, through the
 * GEMM on unrolled columns (VNNI or the portable loops) and the direct
 * loop (groups), with padding, strides and dilations.
 */
TEST(integer_convolution_sums_bytes_exactly_into_i32)
{
	static const uint32_t dts[2] = { NPU_DT_U8, NPU_DT_I8 };
	const uint64_t x1[4] = { 2, 5, 9, 11 }, x2[4] = { 1, 64, 14, 14 }, x3[4] = { 1, 6, 7, 8 };

	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		for (int s = 0; s < 4; s++) {
			uint32_t dx = dts[s & 1], dw = dts[s >> 1];

			int_conv_case(_metadata, dx, dw, x1, 7, 3, 3, (struct npu_op_window){
				.stride = { 1, 1 }, .dilation = { 1, 1 }, .pad = { 1, 1, 1, 1 },
				.group = 1 });
			int_conv_case(_metadata, dx, dw, x2, 50, 3, 3, (struct npu_op_window){
				.stride = { 2, 2 }, .dilation = { 1, 1 }, .pad = { 1, 0, 0, 1 },
				.group = 1 });
			int_conv_case(_metadata, dx, dw, x1, 3, 2, 3, (struct npu_op_window){
				.stride = { 1, 2 }, .dilation = { 2, 1 }, .pad = { 0, 2, 1, 0 },
				.group = 1 });
			int_conv_case(_metadata, dx, dw, x3, 4, 3, 3, (struct npu_op_window){
				.stride = { 1, 1 }, .dilation = { 1, 1 }, .pad = { 1, 1, 1, 1 },
				.group = 2 });
		}
	}
	fwsim_isa(0);
}

/* An integer GEMM writes i32 and takes no scaling, nor an epilogue. */
TEST(integer_gemm_rules)
{
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1.0f };

	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_U8, .ndim = 2, .shape = { 2, 2 },
				       .stride = { 2, 1 } };
	a.in[1] = a.in[0];
	a.in[1].dtype = NPU_DT_I8;
	a.out = a.in[0];
	a.out.dtype = NPU_DT_I32;
	EXPECT_EQ(NULL, npu_op_check(&a));
	a.out.dtype = NPU_DT_F32;
	EXPECT_STREQ("an integer GEMM or convolution writes i32", npu_op_check(&a));
	a.out.dtype = NPU_DT_I32;
	a.alpha = 2.0f;
	EXPECT_STREQ("an integer GEMM takes alpha 1 and beta 0 or 1", npu_op_check(&a));
	a.alpha = 1.0f, a.beta = 0.5f;
	EXPECT_STREQ("an integer GEMM takes alpha 1 and beta 0 or 1", npu_op_check(&a));
	a.beta = 0.0f, a.epi.act = NPU_OP_RELU;
	EXPECT_NE(NULL, npu_op_check(&a));
	a.epi.act = 0, a.in[1].dtype = NPU_DT_F32;
	EXPECT_NE(NULL, npu_op_check(&a));
}

TEST_HARNESS_MAIN
