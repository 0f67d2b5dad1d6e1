// SPDX-License-Identifier: MIT
/*
 * Firmware 0.7's widened launches, through the engine in-process: GEMM,
 * the windows and the row ops on f16 and bf16 tensors (and MaxPool on i8
 * and u8) compute in f32 and round the output once. Each result is
 * checked against a reference summed in double from the same inputs and
 * rounded once: one f16 ulp apart at most, where summing in f16 is tens
 * of ulps off. Run inline on the scheduler and split across workers.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fwsim_isa.h"
#include "fwsim_test_util.h"
#include "npu_ops.h"

#define HBM_SIZE	(32ull << 20)
#define RING		(2ull << 20)
#define DATA		(8ull << 20)	/* the context's buffers, REGION of them */
#define REGION		(8ull << 20)
#define TABLES		(24ull << 20)
#define ENTRIES		64
#define VA		TEST_VA_BASE
#define OFF_ARGS	0		/* the argument block; tensors from OFF_TENSORS */
#define OFF_TENSORS	0x1000

static uint32_t rng = 777;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / (float)(1u << 23) - 1.0f;	/* [-1, 1) */
}

FIXTURE(widen) {
	struct npu_dev dev;
	uint8_t *hbm;
	struct pt_pool pool;
	uint64_t root;
	uint32_t tail;
	uint64_t next;		/* bump allocator over the region */
	uint64_t fence;
};

FIXTURE_VARIANT(widen) {
	bool workers;		/* the AI cores' threads, or inline on the scheduler */
};

FIXTURE_VARIANT_ADD(widen, inline) { .workers = false };
FIXTURE_VARIANT_ADD(widen, on_the_cores) { .workers = true };

FIXTURE_SETUP(widen)
{
	struct npu_dev_config cfg;
	struct npu_fw_queue *q;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM_SIZE;
	cfg.num_queues = 4;
	cfg.num_cores = 2;
	cfg.num_core_groups = 1;
	self->hbm = calloc(1, HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	npu_dev_init(&self->dev, self->hbm, &cfg, NULL, NULL);
	self->pool.hbm = self->hbm;
	self->pool.next = TABLES;
	self->root = pt_alloc(&self->pool);
	for (uint64_t p = 0; p < REGION; p += 4096)
		pt_map(&self->pool, self->root, VA + p, DATA + p, 4096, NPU_PTE_WRITE);
	self->next = OFF_TENSORS;
	if (variant->workers)
		ASSERT_EQ(0, npu_dev_start_engine(&self->dev));
	q = test_qslot(self->hbm, 0);
	q->ring_offset = RING;
	q->ring_entries = ENTRIES;
	q->context = 1;
	q->pt_root = self->root;
	ASSERT_EQ(NPU_FW_OK, mbox_cmd(&self->dev, NPU_FW_CMD_QUEUE_START, 0, 0));
}

FIXTURE_TEARDOWN(widen)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

/* Room for `bytes` in the region, 64-byte aligned, with its device address in *va. */
static void *alloc(FIXTURE_DATA(widen) *self, uint64_t bytes, uint64_t *va)
{
	uint64_t off = self->next;

	self->next = (off + bytes + 63) & ~63ull;
	*va = VA + off;
	return self->hbm + DATA + off;
}

/* A dense tensor of dt and these dims at a fresh place. */
static void *tensor(FIXTURE_DATA(widen) *self, struct npu_tensor *t, uint32_t dt, uint32_t ndim,
		    const uint64_t *dims)
{
	uint64_t n = 1;

	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->ndim = ndim;
	for (uint32_t k = ndim; k-- > 0;) {
		t->shape[k] = dims[k];
		t->stride[k] = n;
		n *= dims[k];
	}
	return alloc(self, n * npu_dtype_size(dt), &t->va);
}

/* Random values in [-1, 1) as dt (their widened values are the reference's). */
static void fill(void *p, uint64_t n, uint32_t dt)
{
	for (uint64_t k = 0; k < n; k++)
		npu_store(p, k, dt, (union npu_num){ .f = frand() }, NPU_DOM_FLOAT);
}

static double get(const void *p, uint64_t k, uint32_t dt)
{
	return npu_load(p, k, dt).f;
}

/* Run the launch; 0 when the queue passed it, else the queue's error. */
static int launch(FIXTURE_DATA(widen) *self, const struct npu_op *a)
{
	struct npu_fw_queue *q = test_qslot(self->hbm, 0);

	npu_op_encode(a, (struct npu_op_args *)(self->hbm + DATA + OFF_ARGS));
	test_push(self->hbm, 0, &self->tail, NPU_FW_TASK_KERNEL, VA + OFF_ARGS, 0,
		  sizeof(struct npu_op_args));
	test_push(self->hbm, 0, &self->tail, NPU_FW_TASK_FENCE, ++self->fence, 0, 0);
	test_ring(&self->dev, self->hbm, 0, self->tail);
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) >= self->fence)
			return 0;
		if (__atomic_load_n(&q->state, __ATOMIC_ACQUIRE) != NPU_QUEUE_RUNNING)
			return (int)q->error ? (int)q->error : -1;
		usleep(1000);
	}
	return -1;
}

/* One unit in the last place of dt at x. */
static double ulp(double x, uint32_t dt)
{
	int e;

	frexp(x, &e);	/* x in [2^(e-1), 2^e) */
	switch (dt) {
	case NPU_DT_F16: return ldexp(1, (e - 1 < -14 ? -14 : e - 1) - 10);
	case NPU_DT_BF16: return ldexp(1, e - 1 - 7);
	default: return ldexp(1, e - 1 - 23);
	}
}

/*
 * Elements of got (dt) more than an ulp of dt plus `slack` from want:
 * rounding once leaves at most half an ulp, the sum's f32 rounding
 * `slack`; summing in dt itself would be off by far more.
 */
static uint64_t off(struct __test_metadata *_metadata, const void *got, const void *want,
		    uint64_t n, uint32_t dt, double slack)
{
	uint64_t bad = 0;

	for (uint64_t k = 0; k < n; k++) {
		double g = get(got, k, dt), w = get(want, k, dt);

		if (!(fabs(g - w) <= ulp(w, dt) + slack) && !bad++)
			TH_LOG("element %llu: %a, want %a", (unsigned long long)k, g, w);
	}
	return bad;
}

/* The f32 rounding of a sum of k products of values under 1. */
#define SLACK(k)	((double)(k) * 0x1p-22)

/* out = act(A B + bias) (+ beta C) for M x K by K x N, A B bias out of da, db, dbias, dc. */
static void gemm_case(struct __test_metadata *_metadata, FIXTURE_DATA(widen) *self,
		      uint32_t da, uint32_t dc, uint64_t m, uint64_t n, uint64_t k, float beta,
		      bool relu_bias, bool trans_b)
{
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 0.5f, .beta = beta,
			    .flags = trans_b ? NPU_OP_F_TRANS_B : 0 };
	void *A, *B, *C, *bias = NULL, *want;
	uint64_t da_[2] = { m, k }, db_[2] = { k, n }, dc_[2] = { m, n }, dn[1] = { n };
	uint64_t dbt[2] = { n, k };

	A = tensor(self, &a.in[0], da, 2, da_);
	B = tensor(self, &a.in[1], da, 2, trans_b ? dbt : db_);
	C = tensor(self, &a.out, dc, 2, dc_);
	fill(A, m * k, da);
	fill(B, k * n, da);
	fill(C, m * n, dc);
	if (relu_bias) {
		a.epi.flags = NPU_OP_E_BIAS;
		a.epi.act = NPU_OP_RELU;
		bias = tensor(self, &a.epi.bias, da, 1, dn);
		fill(bias, n, da);
	}
	want = malloc(m * n * npu_dtype_size(dc));
	ASSERT_NE(NULL, want);
	for (uint64_t i = 0; i < m; i++) {
		for (uint64_t j = 0; j < n; j++) {
			double s = 0;

			for (uint64_t p = 0; p < k; p++)
				s += get(A, i * k + p, da) * get(B, trans_b ? j * k + p : p * n + j, da);
			s = 0.5 * s + beta * get(C, i * n + j, dc);
			if (relu_bias) {
				s += get(bias, j, da);
				s = s > 0 ? s : 0;
			}
			npu_store(want, i * n + j, dc, (union npu_num){ .f = (float)s },
				  NPU_DOM_FLOAT);
		}
	}
	ASSERT_EQ(NULL, npu_op_check(&a));
	ASSERT_EQ(0, launch(self, &a));
	EXPECT_EQ(0, off(_metadata, C, want, m * n, dc, SLACK(k)));
	free(want);
}

TEST_F(widen, f16_gemm_sums_in_f32_and_rounds_once)
{
	/* Through every GEMM path: a few rows, the packed kernels, the portable loops. */
	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		gemm_case(_metadata, self, NPU_DT_F16, NPU_DT_F16, 3, 20, 500, 0, false, false);
		gemm_case(_metadata, self, NPU_DT_F16, NPU_DT_F16, 24, 40, 300, 0, true, false);
		self->next = OFF_TENSORS;
	}
	fwsim_isa(0);
}

TEST_F(widen, bf16_gemm_into_f32_and_beta_reads_the_narrow_output)
{
	gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_F32, 16, 33, 200, 0, true, false);
	gemm_case(_metadata, self, NPU_DT_F16, NPU_DT_F16, 16, 33, 200, 1.0f, false, false);
	gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_BF16, 5, 8, 64, -0.5f, true, false);
}

/*
 * bf16 A and B multiplied as bf16 (AVX512_BF16: pairs along k) where the
 * host can, widened to f32 elsewhere: the same sums either way, in every
 * shape the packing has a case for: odd k past a panel, strips cut short,
 * columns past a block, B transposed, a few rows, a bf16 C read by beta.
 */
TEST_F(widen, bf16_gemm_multiplies_bf16_on_every_path)
{
	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_F32, 13, 70, 257, 0, false, false);
		gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_F32, 7, 65, 31, 0, true, true);
		gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_BF16, 2, 40, 33, 0.5f, false, true);
		gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_F32, 20, 600, 64, 0, false, false);
		gemm_case(_metadata, self, NPU_DT_BF16, NPU_DT_F32, 8, 530, 300, 1.0f, false, true);
		self->next = OFF_TENSORS;
	}
	fwsim_isa(0);
}

TEST_F(widen, a_strided_f16_output_leaves_its_gaps_as_they_were)
{
	struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1.0f };
	uint64_t dims[2] = { 8, 16 };
	uint16_t *A, *B, *C;
	uint64_t cva;

	A = tensor(self, &a.in[0], NPU_DT_F16, 2, dims);
	dims[0] = 16;
	B = tensor(self, &a.in[1], NPU_DT_F16, 2, dims);
	fill(A, 128, NPU_DT_F16);
	fill(B, 256, NPU_DT_F16);
	/* C [8 x 16] every other element of rows 40 apart; the rest signalling NaNs */
	C = alloc(self, 8 * 40 * 2, &cva);
	for (int i = 0; i < 8 * 40; i++)
		C[i] = (uint16_t)(0x7d01 + i);
	a.out = (struct npu_tensor){ .va = cva, .dtype = NPU_DT_F16, .ndim = 2,
				     .shape = { 8, 16 }, .stride = { 40, 2 } };
	ASSERT_EQ(0, launch(self, &a));
	for (int i = 0; i < 8 * 40; i++) {
		int row = i / 40, col = i % 40;

		if (col % 2 || col >= 32) {
			EXPECT_EQ(0x7d01 + i, C[i]) TH_LOG("gap at %d", i);
		} else {
			double s = 0;

			for (int p = 0; p < 16; p++)
				s += npu_f16_to_f32(A[row * 16 + p]) *
				     npu_f16_to_f32(B[p * 16 + col / 2]);
			EXPECT_GE(ulp(s, NPU_DT_F16) + SLACK(16),
				  fabs(npu_f16_to_f32(C[i]) - s)) TH_LOG("element %d, %d", row, col / 2);
		}
	}
}

TEST_F(widen, bf16_convolution_with_an_f32_bias_and_f16_pools)
{
	struct npu_op a = { .op = NPU_OP_CONV2D };
	uint64_t dx[4] = { 2, 3, 9, 9 }, dw[4] = { 4, 3, 3, 3 }, dy[4] = { 2, 4, 5, 5 }, db[1] = { 4 };
	void *x, *w, *y, *b, *want;

	x = tensor(self, &a.in[0], NPU_DT_BF16, 4, dx);
	w = tensor(self, &a.in[1], NPU_DT_BF16, 4, dw);
	y = tensor(self, &a.out, NPU_DT_BF16, 4, dy);
	b = tensor(self, &a.epi.bias, NPU_DT_F32, 1, db);
	fill(x, 2 * 3 * 81, NPU_DT_BF16);
	fill(w, 4 * 27, NPU_DT_BF16);
	fill(b, 4, NPU_DT_F32);
	a.epi.flags = NPU_OP_E_BIAS;
	a.win = (struct npu_op_window){ .stride = { 2, 2 }, .dilation = { 1, 1 },
					.pad = { 1, 1, 1, 1 }, .group = 1 };
	want = malloc(2 * 4 * 25 * 2);
	ASSERT_NE(NULL, want);
	for (int nn = 0; nn < 2; nn++)
		for (int o = 0; o < 4; o++)
			for (int r = 0; r < 5; r++)
				for (int c = 0; c < 5; c++) {
					double s = get(b, o, NPU_DT_F32);

					for (int ci = 0; ci < 3; ci++)
						for (int i = 0; i < 3; i++)
							for (int j = 0; j < 3; j++) {
								int yy = r * 2 - 1 + i, xx = c * 2 - 1 + j;

								if (yy < 0 || yy >= 9 || xx < 0 || xx >= 9)
									continue;
								s += get(x, ((nn * 3 + ci) * 9 + yy) * 9 + xx,
									 NPU_DT_BF16) *
								     get(w, ((o * 3 + ci) * 3 + i) * 3 + j,
									 NPU_DT_BF16);
							}
					npu_store(want, ((nn * 4 + o) * 5 + r) * 5 + c, NPU_DT_BF16,
						  (union npu_num){ .f = (float)s }, NPU_DOM_FLOAT);
				}
	ASSERT_EQ(0, launch(self, &a));
	EXPECT_EQ(0, off(_metadata, y, want, 200, NPU_DT_BF16, SLACK(27)));

	/* the average of the same output, 2 x 2 windows, as f16 */
	memset(&a, 0, sizeof(a));
	a.op = NPU_OP_AVGPOOL2D;
	{
		uint64_t dp[4] = { 2, 4, 2, 2 };
		void *h = tensor(self, &a.in[0], NPU_DT_F16, 4, dy), *p;

		for (int k = 0; k < 200; k++)
			npu_store(h, k, NPU_DT_F16, (union npu_num){ .f = get(y, k, NPU_DT_BF16) },
				  NPU_DOM_FLOAT);
		p = tensor(self, &a.out, NPU_DT_F16, 4, dp);
		a.win = (struct npu_op_window){ .kernel = { 2, 2 }, .stride = { 2, 2 },
						.dilation = { 1, 1 } };
		ASSERT_EQ(0, launch(self, &a));
		for (int nc = 0; nc < 8; nc++)
			for (int r = 0; r < 2; r++)
				for (int c = 0; c < 2; c++) {
					double s = 0;

					for (int i = 0; i < 2; i++)
						for (int j = 0; j < 2; j++)
							s += get(h, nc * 25 + (r * 2 + i) * 5 + c * 2 + j,
								 NPU_DT_F16);
					s /= 4;
					EXPECT_GE(ulp(s, NPU_DT_F16) + SLACK(4),
						  fabs(get(p, nc * 4 + r * 2 + c, NPU_DT_F16) - s));
				}
	}
	free(want);
}

TEST_F(widen, maxpool_on_u8_and_i8_is_exact)
{
	static const uint32_t dts[2] = { NPU_DT_U8, NPU_DT_I8 };

	for (int d = 0; d < 2; d++) {
		struct npu_op a = { .op = NPU_OP_MAXPOOL2D };
		uint64_t dx[4] = { 1, 2, 5, 6 }, dy[4] = { 1, 2, 3, 3 };
		uint8_t *x, *y;

		x = tensor(self, &a.in[0], dts[d], 4, dx);
		y = tensor(self, &a.out, dts[d], 4, dy);
		for (int k = 0; k < 60; k++)
			x[k] = (uint8_t)(k * 37 + 11);		/* 0 to 255: all of i8 and u8 */
		x[7] = 255;
		x[8] = 128;	/* i8 -128 */
		a.win = (struct npu_op_window){ .kernel = { 3, 3 }, .stride = { 2, 2 },
						.dilation = { 1, 1 }, .pad = { 1, 0, 1, 1 } };
		ASSERT_EQ(0, launch(self, &a));
		for (int c = 0; c < 2; c++)
			for (int r = 0; r < 3; r++)
				for (int q = 0; q < 3; q++) {
					int best = -1000;

					for (int i = 0; i < 3; i++)
						for (int j = 0; j < 3; j++) {
							int yy = r * 2 - 1 + i, xx = q * 2 + j, v;

							if (yy < 0 || yy >= 5 || xx >= 6)
								continue;
							v = x[(c * 5 + yy) * 6 + xx];
							v = d ? (int8_t)v : v;
							best = v > best ? v : best;
						}
					EXPECT_EQ(best, d ? (int8_t)y[(c * 3 + r) * 3 + q] :
						  y[(c * 3 + r) * 3 + q]) TH_LOG("%s at %d %d %d",
										 d ? "i8" : "u8", c, r, q);
				}
	}
}

TEST_F(widen, softmax_and_layernorm_on_f16_and_bf16_rows)
{
	for (int op = 0; op < 2; op++) {
		struct npu_op a = { .op = op ? NPU_OP_LAYERNORM : NPU_OP_SOFTMAX, .eps = 1e-5f };
		uint32_t dt = op ? NPU_DT_BF16 : NPU_DT_F16;
		uint64_t dims[2] = { 6, 300 };
		void *x = tensor(self, &a.in[0], dt, 2, dims), *y = tensor(self, &a.out, dt, 2, dims);
		void *want = malloc(6 * 300 * 2);

		ASSERT_NE(NULL, want);
		fill(x, 1800, dt);
		for (int r = 0; r < 6; r++) {
			double mx = -INFINITY, sum = 0, mean = 0, var = 0;

			for (int j = 0; j < 300; j++) {
				double v = get(x, r * 300 + j, dt) * 4;	/* softmax: in [-4, 4) */

				mx = v > mx ? v : mx;
				mean += get(x, r * 300 + j, dt) / 300;
			}
			for (int j = 0; j < 300; j++) {
				double v = get(x, r * 300 + j, dt);

				sum += exp(v * 4 - mx);
				var += (v - mean) * (v - mean) / 300;
			}
			for (int j = 0; j < 300; j++) {
				double v = get(x, r * 300 + j, dt);
				double o = op ? (v - mean) / sqrt(var + 1e-5) : exp(v * 4 - mx) / sum;

				npu_store(want, r * 300 + j, dt, (union npu_num){ .f = (float)o },
					  NPU_DOM_FLOAT);
			}
		}
		if (!op)	/* softmax of 4 x: scale the input once more, in place */
			for (int k = 0; k < 1800; k++)
				npu_store(x, k, dt, (union npu_num){ .f = get(x, k, dt) * 4 },
					  NPU_DOM_FLOAT);
		ASSERT_EQ(0, launch(self, &a));
		EXPECT_EQ(0, off(_metadata, y, want, 1800, dt, 1e-6)) TH_LOG("%s",
									op ? "layernorm" : "softmax");
		free(want);
	}
}

TEST(widened_tensors_must_fit_as_f32)
{
	/* 300 Mi u8 is under the 1 GiB a launch may touch; as f32 it is over */
	struct npu_op a = { .op = NPU_OP_MAXPOOL2D };
	uint64_t h = 300ull << 20 >> 10;

	a.in[0] = (struct npu_tensor){ .dtype = NPU_DT_U8, .ndim = 4, .shape = { 1, 1, h, 1024 },
				       .stride = { h * 1024, h * 1024, 1024, 1 } };
	a.out = a.in[0];
	a.out.dtype = NPU_DT_F32;	/* 1.2 GiB already */
	a.win = (struct npu_op_window){ .kernel = { 1, 1 }, .stride = { 1, 1 }, .dilation = { 1, 1 } };
	EXPECT_NE(NULL, npu_op_check(&a));
	a.out.dtype = NPU_DT_U8;
	EXPECT_STREQ("tensor too large once widened to f32", npu_op_check(&a));
	a.in[0].shape[2] = a.out.shape[2] = 1024;
	EXPECT_EQ(NULL, npu_op_check(&a));
	/* i16 is not among what maxpool widens; GEMM takes no i8 */
	a.in[0].dtype = a.out.dtype = NPU_DT_I16;
	EXPECT_NE(NULL, npu_op_check(&a));
}

TEST(widening_and_narrowing_match_the_scalar_conversions)
{
	static uint16_t h[65536 + 3];
	static float f[65536 + 3], g[65536 + 3];
	uint16_t back[4096 + 5];

	for (unsigned int isa = 0; isa < FWSIM_ISAS; isa++) {
		fwsim_isa(isa);
		/* every f16, and an odd count (the vector loops' tails) */
		for (uint32_t k = 0; k < 65536 + 3; k++)
			h[k] = (uint16_t)k;
		npu_widen(f, h, 65536 + 3, NPU_DT_F16);
		for (uint32_t k = 0; k < 65536 + 3; k++) {
			float s = npu_f16_to_f32(h[k]);

			if (isnan(s)) {
				ASSERT_TRUE(isnan(f[k]));
			} else {
				ASSERT_EQ(0, memcmp(&s, &f[k], 4)) TH_LOG("f16 %#x", k);
			}
		}
		/* in place: the same bits */
		memcpy(g, h, sizeof(h));
		npu_widen(g, g, 65536 + 3, NPU_DT_F16);
		ASSERT_EQ(0, memcmp(f, g, sizeof(f)));
		/* f32 to f16: halfway cases, subnormals, overflow, both ways from each f16 */
		for (uint32_t k = 0; k < 4096 + 5; k++) {
			uint32_t u = (uint32_t)(k * 1048573u) ^ (k << 13);

			memcpy(&g[k], &u, 4);
			if (k % 3 == 0)
				g[k] = npu_f16_to_f32((uint16_t)(k * 16)) * (1.0f + 0x1p-11f);
		}
		npu_narrow(back, g, 4096 + 5, NPU_DT_F16);
		for (uint32_t k = 0; k < 4096 + 5; k++) {
			uint16_t s = npu_f32_to_f16(g[k]);

			if (isnan(g[k])) {
				ASSERT_EQ(0x7c00, back[k] & 0x7c00);
			} else {
				ASSERT_EQ(s, back[k]) TH_LOG("%a", g[k]);
			}
		}
	}
	fwsim_isa(0);
}

TEST_HARNESS_MAIN
