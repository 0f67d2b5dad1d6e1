// SPDX-License-Identifier: MIT
/*
 * GEMM with B packed once in panels (NPU_OP_F_B_PANELS): on every kernel
 * path (fwsim_isa.h), every row count and split, the same bits as the
 * unpacked B; and the layouts the firmware refuses.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwsim_isa.h"
#include "kselftest_harness.h"
#include "npu_opdefs.h"
#include "npu_ops.h"

static uint32_t rng = 777;

static float *rand_buf(size_t n)
{
	float *p = malloc(n * sizeof(float));

	for (size_t i = 0; i < n; i++) {
		rng = rng * 1664525u + 1013904223u;
		p[i] = (float)(rng >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
	}
	return p;
}

static void tensor(struct npu_tensor *t, struct npu_view *v, void *data, uint32_t ndim,
		   const uint64_t *shape, const uint64_t *stride)
{
	memset(t, 0, sizeof(*t));
	t->dtype = NPU_DT_F32;
	t->ndim = ndim;
	memcpy(t->shape, shape, ndim * sizeof(*shape));
	memcpy(t->stride, stride, ndim * sizeof(*stride));
	if (v) {
		memset(v, 0, sizeof(*v));
		v->data = data;
		v->dtype = NPU_DT_F32;
		v->ndim = ndim;
		memcpy(v->shape, t->shape, sizeof(v->shape));
		memcpy(v->stride, t->stride, sizeof(v->stride));
	}
}

/* In uneven parts, as cores would run it: rows [0, 1), [1, m / 2), [m / 2, m). */
static int run_parts(struct npu_op *a, struct npu_view *in, struct npu_view *out)
{
	uint64_t units = npu_op_units(a), cut[4] = { 0, units > 1, units / 2, units };
	uint32_t cancel = 0;

	for (int p = 0; p < 3; p++)
		if (cut[p] < cut[p + 1] &&
		    npu_op_run_cancellable(a, in, out, cut[p], cut[p + 1], &cancel))
			return -1;
	return 0;
}

/*
 * C = alpha op(A) B + beta C with B [k, n] as it is and in panels: the
 * same bits. ccol: C column-major (the strided loops).
 */
static void panels_case(struct __test_metadata *_metadata, uint64_t m, uint64_t n, uint64_t k,
			int ta, float alpha, float beta, int ccol)
{
	uint64_t sa[2] = { ta ? k : m, ta ? m : k }, da[2] = { sa[1], 1 };
	uint64_t sb[2] = { k, n }, db[2] = { n, 1 }, sp[3], dp[3];
	uint64_t sc[2] = { m, n }, dc[2] = { ccol ? 1 : n, ccol ? m : 1 };
	float *A = rand_buf(m * k), *B = rand_buf(k * n), *C0 = rand_buf(m * n);
	float *C1 = malloc(m * n * 4), *C2 = malloc(m * n * 4), *P;
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = alpha, .beta = beta };
	struct npu_view in[2], out;

	P = malloc(npu_panels_tensor(k, n, sp, dp) * sizeof(float));
	npu_panels_pack(B, n, 1, k, n, P);
	memcpy(C1, C0, m * n * 4);
	memcpy(C2, C0, m * n * 4);
	a.flags = ta ? NPU_OP_F_TRANS_A : 0;
	tensor(&a.in[0], &in[0], A, 2, sa, da);
	tensor(&a.in[1], &in[1], B, 2, sb, db);
	tensor(&a.out, &out, C1, 2, sc, dc);
	ASSERT_EQ(NULL, npu_op_check(&a));
	ASSERT_EQ(0, run_parts(&a, in, &out));

	a.flags |= NPU_OP_F_B_PANELS;
	tensor(&a.in[1], &in[1], P, 3, sp, dp);
	out.data = C2;
	ASSERT_EQ(NULL, npu_op_check(&a));
	ASSERT_EQ(0, run_parts(&a, in, &out));
	for (uint64_t e = 0; e < m * n; e++) {
		ASSERT_EQ(0, memcmp(&C1[e], &C2[e], 4))
			TH_LOG("%lux%lux%lu ta %d alpha %g beta %g ccol %d: element %lu: %g, "
			       "panels %g", m, n, k, ta, alpha, beta, ccol, e, C1[e], C2[e]);
	}
	free(A), free(B), free(C0), free(C1), free(C2), free(P);
}

TEST(panels_give_the_unpacked_b_bits_on_every_path)
{
	static const uint64_t shapes[][3] = {
		{ 1, 1, 1 }, { 3, 33, 7 }, { 4, 32, 5 }, { 7, 31, 300 }, { 13, 100, 64 },
		{ 64, 256, 256 }, { 9, 600, 270 }, { 130, 70, 513 },
	};

	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
			for (int ta = 0; ta < 2; ta++) {
				panels_case(_metadata, shapes[s][0], shapes[s][1], shapes[s][2], ta,
					    1.0f, 0.0f, 0);
				panels_case(_metadata, shapes[s][0], shapes[s][1], shapes[s][2], ta,
					    -0.5f, 1.0f, 0);
			}
		panels_case(_metadata, 11, 45, 40, 0, 1.0f, 0.5f, 1);
	}
	fwsim_isa(0);
}

TEST(the_packer_reads_b_either_way_round)
{
	uint64_t k = 19, n = 45, sp[3], dp[3], size = npu_panels_tensor(k, n, sp, dp);
	float *B = rand_buf(k * n), *Bt = malloc(k * n * 4), *P = malloc(size * 4);
	float *Pt = malloc(size * 4);

	for (uint64_t p = 0; p < k; p++)
		for (uint64_t j = 0; j < n; j++)
			Bt[j * k + p] = B[p * n + j];
	npu_panels_pack(B, n, 1, k, n, P);
	npu_panels_pack(Bt, 1, k, k, n, Pt);
	EXPECT_EQ(0, memcmp(P, Pt, size * 4));
	EXPECT_EQ(2u, sp[1]);
	EXPECT_EQ(k * 64, size);
	/* Column 33 of row 5: panel 1, its column 1; padding past n is zero. */
	EXPECT_EQ(B[5 * n + 33], P[1 * k * 32 + 5 * 32 + 1]);
	EXPECT_EQ(0.0f, P[1 * k * 32 + 5 * 32 + 13]);
	free(B), free(Bt), free(P), free(Pt);
}

TEST(layouts_other_than_the_panels_are_refused)
{
	uint64_t m = 8, n = 40, k = 16, sa[2] = { m, k }, da[2] = { k, 1 };
	uint64_t sc[2] = { m, n }, dc[2] = { n, 1 }, sp[3], dp[3], sb[2] = { k, n };
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1.0f, .flags = NPU_OP_F_B_PANELS }, good;

	npu_panels_tensor(k, n, sp, dp);
	tensor(&a.in[0], NULL, NULL, 2, sa, da);
	tensor(&a.in[1], NULL, NULL, 3, sp, dp);
	tensor(&a.out, NULL, NULL, 2, sc, dc);
	ASSERT_EQ(NULL, npu_op_check(&a));
	good = a;

	a.in[1].stride[1]++;			/* panels not K * 32 apart */
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "GEMM panels"));
	a = good, a.in[1].shape[1] = 1;		/* too few panels for N */
	EXPECT_NE(NULL, npu_op_check(&a));
	a = good, a.in[1].shape[0] = k + 1;	/* K disagrees with A */
	EXPECT_NE(NULL, npu_op_check(&a));
	a = good, a.in[1].stride[0] = 16, a.in[1].shape[2] = 16;	/* panels of 16 */
	EXPECT_NE(NULL, npu_op_check(&a));
	a = good, a.in[1].dtype = NPU_DT_BF16;
	EXPECT_NE(NULL, npu_op_check(&a));
	a = good, a.in[0].dtype = NPU_DT_BF16;
	EXPECT_NE(NULL, npu_op_check(&a));
	a = good, a.flags |= NPU_OP_F_TRANS_B;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "no TRANS_B"));
	a = good, a.flags |= 1u << 6;
	EXPECT_NE(NULL, strstr(npu_op_check(&a), "unknown GEMM flags"));
	a = good, a.alpha = NAN;
	EXPECT_NE(NULL, npu_op_check(&a));
	/* The flag with a plain 2-D B, and a 3-D B without the flag. */
	a = good;
	tensor(&a.in[1], NULL, NULL, 2, sb, dc);
	EXPECT_NE(NULL, npu_op_check(&a));
	a = good, a.flags = 0;
	EXPECT_NE(NULL, npu_op_check(&a));
}

TEST(a_gemm_on_panels_stops_when_cancelled)
{
	uint64_t m = 64, n = 64, k = 64, s2[2] = { 64, 64 }, d2[2] = { 64, 1 }, sp[3], dp[3];
	float *A = rand_buf(m * k), *P = rand_buf(npu_panels_tensor(k, n, sp, dp)), *C;
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1, .flags = NPU_OP_F_B_PANELS };
	struct npu_view in[2], out;
	uint32_t cancel = 1;

	C = malloc(m * n * 4);
	tensor(&a.in[0], &in[0], A, 2, s2, d2);
	tensor(&a.in[1], &in[1], P, 3, sp, dp);
	tensor(&a.out, &out, C, 2, s2, d2);
	ASSERT_EQ(NULL, npu_op_check(&a));
	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		EXPECT_EQ(-1, npu_op_run_cancellable(&a, in, &out, 0, npu_op_units(&a), &cancel));
	}
	fwsim_isa(0);
	free(A), free(P), free(C);
}

TEST_HARNESS_MAIN
