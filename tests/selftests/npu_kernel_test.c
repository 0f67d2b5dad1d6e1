// SPDX-License-Identifier: MIT
/*
 * Kernel launches through npu.ko: the argument block and tensors live in
 * a buffer object, the device's op library computes, and the results are
 * checked against references computed here. Tolerances: GEMM 1e-4
 * relative to the sum of absolute products, softmax 1e-5; casts exact.
 */
#include <math.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)

FIXTURE(k) {
	int fd;
	struct drm_npu_bo_create bo;
	uint8_t *map;
	uint64_t buffers_before;
};

#define BO_SIZE (4u << 20)

FIXTURE_SETUP(k)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	self->buffers_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM);
	ASSERT_EQ(0, npu_bo_create(self->fd, BO_SIZE, DRM_NPU_BO_PAGE_NORMAL_ONLY, &self->bo));
	self->map = npu_bo_mmap(self->fd, self->bo.handle, BO_SIZE);
	ASSERT_NE(MAP_FAILED, self->map);
}

FIXTURE_TEARDOWN(k)
{
	int fd;

	munmap(self->map, BO_SIZE);
	close(self->fd);
	fd = npu_open();
	EXPECT_EQ(self->buffers_before,
		  npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, self->buffers_before));
	close(fd);
}

/* Layout in the buffer: the argument block at 0, tensors from 4 KiB. */
#define ARGS_OFF	0
#define T0_OFF		(4u << 10)
#define T1_OFF		(1u << 20)
#define OUT_OFF		(2u << 20)

static struct npu_op_tensor dense2(uint64_t va, uint32_t dtype, uint64_t r, uint64_t c)
{
	struct npu_op_tensor t = { .va = va, .dtype = dtype, .ndim = 2,
				    .shape = { r, c }, .stride = { c, 1 } };

	return t;
}

/* Launch the block at ARGS_OFF on `cores` and wait: 0 or -errno. */
static int launch(FIXTURE_DATA(k) *self, const struct npu_op_args *a,
		  uint64_t cores, struct drm_npu_wait *w)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL,
				  .args = { self->bo.device_va + ARGS_OFF, cores,
					    sizeof(struct npu_op_args) } };
	uint64_t seq;
	int ret;

	memcpy(self->map + ARGS_OFF, a, sizeof(*a));
	ret = npu_submit(self->fd, &t, 1, &seq);
	return ret ? ret : npu_wait(self->fd, seq, 60 * SEC, w);
}

TEST_F(k, gemm_matches_reference)
{
	const uint64_t m = 64, n = 48, kk = 96;
	float *A = (float *)(self->map + T0_OFF), *B = (float *)(self->map + T1_OFF);
	float *C = (float *)(self->map + OUT_OFF);
	uint64_t va = self->bo.device_va;
	struct npu_op_args a = { .op = NPU_OP_GEMM, .alpha = 0.5f, .beta = 1.0f,
					 .flags = NPU_OP_F_TRANS_B };
	struct drm_npu_wait w;

	for (uint64_t i = 0; i < m * kk; i++)
		A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
	for (uint64_t i = 0; i < n * kk; i++)
		B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
	for (uint64_t i = 0; i < m * n; i++)
		C[i] = 1.0f;
	a.in[0] = dense2(va + T0_OFF, NPU_DT_F32, m, kk);
	a.in[1] = dense2(va + T1_OFF, NPU_DT_F32, n, kk);	/* used transposed */
	a.out = dense2(va + OUT_OFF, NPU_DT_F32, m, n);
	ASSERT_EQ(0, launch(self, &a, 2, &w)) TH_LOG("status %u", w.status);
	for (uint64_t i = 0; i < m; i++)
		for (uint64_t j = 0; j < n; j++) {
			double acc = 0, mag = 0;

			for (uint64_t p = 0; p < kk; p++) {
				acc += (double)A[i * kk + p] * B[j * kk + p];
				mag += fabs((double)A[i * kk + p] * B[j * kk + p]);
			}
			acc = 0.5 * acc + 1.0;
			ASSERT_TRUE(fabs(acc - C[i * n + j]) <= 1e-4 * (mag + 1))
				TH_LOG("C[%lu][%lu] = %g, want %g", i, j, C[i * n + j], acc);
		}
}

TEST_F(k, softmax_rows_sum_to_one)
{
	float *x = (float *)(self->map + T0_OFF), *y = (float *)(self->map + OUT_OFF);
	uint64_t va = self->bo.device_va;
	struct npu_op_args a = { .op = NPU_OP_SOFTMAX };

	for (int i = 0; i < 10 * 50; i++)
		x[i] = sinf((float)i);
	a.in[0] = dense2(va + T0_OFF, NPU_DT_F32, 10, 50);
	a.out = dense2(va + OUT_OFF, NPU_DT_F32, 10, 50);
	ASSERT_EQ(0, launch(self, &a, 0, NULL));
	for (int r = 0; r < 10; r++) {
		double sum = 0, m = -1e30, s = 0;

		for (int j = 0; j < 50; j++)
			m = fmax(m, x[r * 50 + j]);
		for (int j = 0; j < 50; j++)
			s += exp(x[r * 50 + j] - m);
		for (int j = 0; j < 50; j++) {
			ASSERT_TRUE(fabs(exp(x[r * 50 + j] - m) / s - y[r * 50 + j]) < 1e-5);
			sum += y[r * 50 + j];
		}
		EXPECT_TRUE(fabs(sum - 1) < 1e-5);
	}
}

TEST_F(k, cast_to_half_and_back)
{
	float *x = (float *)(self->map + T0_OFF), *back = (float *)(self->map + T1_OFF);
	uint16_t *h = (uint16_t *)(self->map + OUT_OFF);
	uint64_t va = self->bo.device_va;
	struct npu_op_args a = { .op = NPU_OP_CAST };

	x[0] = 1.0f, x[1] = -2.0f, x[2] = 65504.0f, x[3] = 0.5f;
	a.in[0] = dense2(va + T0_OFF, NPU_DT_F32, 1, 4);
	a.out = dense2(va + OUT_OFF, NPU_DT_F16, 1, 4);
	ASSERT_EQ(0, launch(self, &a, 1, NULL));
	EXPECT_EQ(0x3c00, h[0]);
	EXPECT_EQ(0xc000, h[1]);
	EXPECT_EQ(0x7bff, h[2]);
	EXPECT_EQ(0x3800, h[3]);
	a.in[0] = dense2(va + OUT_OFF, NPU_DT_F16, 1, 4);
	a.out = dense2(va + T1_OFF, NPU_DT_F32, 1, 4);
	ASSERT_EQ(0, launch(self, &a, 1, NULL));
	EXPECT_EQ(0, memcmp(x, back, 16));
}

/* Every elementwise op, reduction, layernorm and transpose through the
 * device, against references computed here (1e-5 relative + 1e-6). */
TEST_F(k, every_other_op_matches_reference)
{
	static const uint32_t ops[] = {
		NPU_OP_ADD, NPU_OP_SUB, NPU_OP_MUL, NPU_OP_DIV, NPU_OP_MAX, NPU_OP_MIN,
		NPU_OP_RELU, NPU_OP_GELU, NPU_OP_SIGMOID, NPU_OP_TANH, NPU_OP_EXP,
		NPU_OP_LAYERNORM, NPU_OP_REDUCE_SUM, NPU_OP_REDUCE_MEAN, NPU_OP_REDUCE_MAX,
		NPU_OP_TRANSPOSE,
	};
	const uint64_t r = 12, c = 20;
	float *x = (float *)(self->map + T0_OFF), *y = (float *)(self->map + T1_OFF);
	float *out = (float *)(self->map + OUT_OFF);
	uint64_t va = self->bo.device_va;

	for (uint64_t i = 0; i < r * c; i++) {
		x[i] = sinf((float)i * 0.37f) * 2.0f;
		y[i] = cosf((float)i * 0.11f) + 1.5f;	/* no zeros: DIV */
	}
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		struct npu_op_args a = { .op = ops[o], .eps = 1e-5f };
		uint32_t op = ops[o];

		a.in[0] = dense2(va + T0_OFF, NPU_DT_F32, r, c);
		a.in[1] = dense2(va + T1_OFF, NPU_DT_F32, r, c);
		a.out = dense2(va + OUT_OFF, NPU_DT_F32, r, c);
		if (op >= NPU_OP_REDUCE_SUM && op <= NPU_OP_REDUCE_MAX) {
			a.axis = 1;
			a.out = dense2(va + OUT_OFF, NPU_DT_F32, r, 1);
		} else if (op == NPU_OP_TRANSPOSE) {
			a.perm[0] = 1;
			a.out = dense2(va + OUT_OFF, NPU_DT_F32, c, r);
		}
		if (op >= NPU_OP_RELU)
			memset(&a.in[1], 0, sizeof(a.in[1]));
		ASSERT_EQ(0, launch(self, &a, 2, NULL)) TH_LOG("op %u", op);

		for (uint64_t i = 0; i < r; i++) {
			double sum = 0, sq = 0, mx = -1e30;

			for (uint64_t j = 0; j < c; j++) {
				sum += x[i * c + j];
				sq += (double)x[i * c + j] * x[i * c + j];
				mx = fmax(mx, x[i * c + j]);
			}
			for (uint64_t j = 0; j < c; j++) {
				double p = x[i * c + j], q = y[i * c + j], want, got;

				switch (op) {
				case NPU_OP_ADD: want = p + q; break;
				case NPU_OP_SUB: want = p - q; break;
				case NPU_OP_MUL: want = p * q; break;
				case NPU_OP_DIV: want = p / q; break;
				case NPU_OP_MAX: want = fmax(p, q); break;
				case NPU_OP_MIN: want = fmin(p, q); break;
				case NPU_OP_RELU: want = p > 0 ? p : 0; break;
				case NPU_OP_GELU:
					want = 0.5 * p * (1 + tanh(0.7978845608 * (p + 0.044715 * p * p * p)));
					break;
				case NPU_OP_SIGMOID: want = 1 / (1 + exp(-p)); break;
				case NPU_OP_TANH: want = tanh(p); break;
				case NPU_OP_EXP: want = exp(p); break;
				case NPU_OP_LAYERNORM: {
					double mean = sum / c, var = sq / c - mean * mean;

					want = (p - mean) / sqrt(var + 1e-5);
					break;
				}
				case NPU_OP_REDUCE_SUM: want = sum; break;
				case NPU_OP_REDUCE_MEAN: want = sum / c; break;
				case NPU_OP_REDUCE_MAX: want = mx; break;
				default: want = p; break;	/* transpose */
				}
				if (op >= NPU_OP_REDUCE_SUM && op <= NPU_OP_REDUCE_MAX)
					got = out[i];
				else if (op == NPU_OP_TRANSPOSE)
					got = out[j * r + i];
				else
					got = out[i * c + j];
				ASSERT_TRUE(fabs(want - got) <= 1e-5 * fabs(want) + 1e-6)
					TH_LOG("op %u [%lu][%lu]: want %g got %g", op, i, j, want, got);
				if (op >= NPU_OP_REDUCE_SUM && op <= NPU_OP_REDUCE_MAX)
					break;
			}
		}
	}
}

TEST_F(k, bad_argument_block_is_a_kernel_error)
{
	struct npu_op_args a = { .op = NPU_OP_GEMM };	/* no shapes */
	struct drm_npu_wait w;

	EXPECT_EQ(-EIO, launch(self, &a, 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_KERNEL_ERROR, w.status);
	EXPECT_EQ(self->bo.device_va + ARGS_OFF, w.fault_address);
}

TEST_F(k, tensor_outside_the_context_faults)
{
	struct npu_op_args a = { .op = NPU_OP_RELU };
	struct drm_npu_wait w;

	a.in[0] = dense2(self->bo.device_va + (1ull << 32), NPU_DT_F32, 4, 4);
	a.out = dense2(self->bo.device_va + OUT_OFF, NPU_DT_F32, 4, 4);
	EXPECT_EQ(-EIO, launch(self, &a, 0, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(self->bo.device_va + (1ull << 32), w.fault_address);
}

TEST_F(k, malformed_launch_tasks_are_rejected_at_submit)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL,
				  .args = { self->bo.device_va, DRM_NPU_MAX_BLOCK_DIM + 1,
					    sizeof(struct npu_op_args) } };

	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, 1, NULL));
	t.args[1] = 1;
	t.args[3] = 5;		/* unused arguments are zero */
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, 1, NULL));
	/* The argument block's size: 1..DRM_NPU_KERNEL_ARGS_MAX. */
	t.args[3] = 0;
	t.args[2] = 0;
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, 1, NULL));
	t.args[2] = DRM_NPU_KERNEL_ARGS_MAX + 1;
	EXPECT_EQ(-EINVAL, npu_submit(self->fd, &t, 1, NULL));
}

TEST_HARNESS_MAIN
