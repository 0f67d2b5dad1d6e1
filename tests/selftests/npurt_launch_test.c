// SPDX-License-Identifier: MIT
/*
 * libnpurt kernel launches against npu.ko and the emulated device, on both
 * submission paths: results match a host reference, streams order
 * launches, half precision tensors are widened on the device, launches of
 * two streams run side by side, the argument arena
 * is reused as launches complete (and never while one still needs its
 * block), tensors of up to 8 dimensions reach the device whole, and bad
 * descriptors are refused before the device or fail the stream with a
 * message that says so.
 */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1u << 20)

FIXTURE(launch) {
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *m;		/* 8 MiB scratch */
	uint64_t va;
	float *host;
};

FIXTURE_VARIANT(launch) {
	const char *env;
};

FIXTURE_VARIANT_ADD(launch, ioctl) { .env = "ioctl" };
FIXTURE_VARIANT_ADD(launch, io_uring) { .env = "io_uring" };

FIXTURE_SETUP(launch)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 8 * MiB, &self->m));
	self->va = npurt_mem_device_addr(self->m);
	self->host = npurt_mem_host_ptr(self->m);
}

FIXTURE_TEARDOWN(launch)
{
	npurt_stream_destroy(self->s);
	npurt_mem_free(self->m);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
}

static uint32_t op(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

/* A two-input elementwise launch over n floats at byte offsets of the scratch. */
static npurt_launch_desc binary(FIXTURE_DATA(launch) *self, const char *name,
				uint64_t a, uint64_t b, uint64_t out, uint64_t n)
{
	npurt_launch_desc d = { .size = sizeof(d), .op = op(name) };

	npurt_tensor_init(&d.in[0], self->va + a, NPURT_F32, 1, &n);
	npurt_tensor_init(&d.in[1], self->va + b, NPURT_F32, 1, &n);
	npurt_tensor_init(&d.out, self->va + out, NPURT_F32, 1, &n);
	return d;
}

TEST_F(launch, gemm_matches_the_host)
{
	enum { M = 33, K = 47, N = 29 };
	float *A = self->host, *B = A + M * K, *C = B + K * N;
	npurt_launch_desc d = { .size = sizeof(d), .op = op("gemm"), .alpha = 1.0f };

	for (int i = 0; i < M * K; i++)
		A[i] = (float)(i % 7) - 3.0f;
	for (int i = 0; i < K * N; i++)
		B[i] = (float)(i % 5) * 0.5f;
	ASSERT_EQ(NPURT_OK, npurt_tensor_init(&d.in[0], self->va, NPURT_F32, 2,
					      (uint64_t[]){ M, K }));
	ASSERT_EQ(NPURT_OK, npurt_tensor_init(&d.in[1], self->va + 4 * M * K, NPURT_F32, 2,
					      (uint64_t[]){ K, N }));
	ASSERT_EQ(NPURT_OK, npurt_tensor_init(&d.out, self->va + 4 * (M * K + K * N), NPURT_F32,
					      2, (uint64_t[]){ M, N }));
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < M; i++) {
		for (int j = 0; j < N; j++) {
			double want = 0;

			for (int k = 0; k < K; k++)
				want += (double)A[i * K + k] * B[k * N + j];
			ASSERT_LE(fabs(want - C[i * N + j]), 1e-3 * (1 + fabs(want)))
				TH_LOG("C[%d][%d] = %f, want %f", i, j, C[i * N + j], want);
		}
	}
}

/*
 * A GEMM of a float16 and a bfloat16 matrix into float16: the device
 * widens both to float32, accumulates there and narrows the result. Every
 * value and sum here is a multiple of 0.5 below 2048, which all three types
 * hold exactly, so the result must match the host's exactly; a device that
 * read the halves as float32 or wrote float32 back is far off.
 */
TEST_F(launch, half_precision_gemm_widens_on_the_device)
{
	enum { M = 19, K = 37, N = 23 };
	_Float16 *A = (_Float16 *)self->host, *C;
	uint16_t *B = (uint16_t *)(A + M * K);
	npurt_launch_desc d = { .size = sizeof(d), .op = op("gemm"), .alpha = 1.0f };
	float b;

	C = (_Float16 *)(B + K * N);
	for (int i = 0; i < M * K; i++)
		A[i] = (_Float16)((float)(i % 7) - 3.0f);
	for (int i = 0; i < K * N; i++) {
		uint32_t u;

		b = (float)(i % 5) * 0.5f;
		memcpy(&u, &b, 4);
		B[i] = (uint16_t)(u >> 16);	/* exact: 8 significant bits suffice */
	}
	for (int i = 0; i < M * N; i++)
		C[i] = (_Float16)-1.0f;
	npurt_tensor_init(&d.in[0], self->va, NPURT_F16, 2, (uint64_t[]){ M, K });
	npurt_tensor_init(&d.in[1], self->va + 2 * M * K, NPURT_BF16, 2, (uint64_t[]){ K, N });
	npurt_tensor_init(&d.out, self->va + 2 * (M * K + K * N), NPURT_F16, 2,
			  (uint64_t[]){ M, N });
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < M; i++) {
		for (int j = 0; j < N; j++) {
			double want = 0;

			for (int k = 0; k < K; k++)
				want += ((i * K + k) % 7 - 3.0) * ((k * N + j) % 5) * 0.5;
			ASSERT_EQ(want, (double)C[i * N + j])
				TH_LOG("C[%d][%d] = %f, want %f", i, j, (double)C[i * N + j], want);
		}
	}
}

/*
 * Three arenas' worth of launches queued behind a long GEMM, launch i
 * adding 1 to accumulator i % 3: a slot written again while its launch
 * still waited in the queue (128 slots: the launch 128 later goes to
 * another accumulator) moves a count from one accumulator to another,
 * and launches out of order or lost leave the totals short.
 */
TEST_F(launch, the_arena_is_reused_only_after_its_launches_complete)
{
	const uint64_t n = 4096, total = 3 * 128 + 5, k = 1u << 16;
	float *ones = self->host, *acc = self->host + n;
	npurt_launch_desc slow = { .size = sizeof(slow), .op = op("gemm"), .alpha = 1.0f };

	for (uint64_t i = 0; i < n; i++)
		ones[i] = 1.0f;
	for (uint64_t i = 0; i < 3 * n; i++)
		acc[i] = 0.0f;
	/* C[64x64] at 1 MiB = A (a broadcast row of ones) x B (likewise). */
	slow.in[0] = (npurt_tensor){ .addr = self->va, .dtype = NPURT_F32, .ndim = 2,
				     .shape = { 64, k }, .stride = { 0, 0 } };
	slow.in[1] = (npurt_tensor){ .addr = self->va, .dtype = NPURT_F32, .ndim = 2,
				     .shape = { k, 64 }, .stride = { 0, 0 } };
	ASSERT_EQ(NPURT_OK, npurt_tensor_init(&slow.out, self->va + MiB, NPURT_F32, 2,
					      (uint64_t[]){ 64, 64 }));
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &slow)) TH_LOG("%s", npurt_last_error());
	for (uint64_t i = 0; i < total; i++) {
		uint64_t to = 4 * n * (1 + i % 3);
		npurt_launch_desc d = binary(self, "add", to, 0, to, n);

		ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d)) TH_LOG("%s", npurt_last_error());
	}
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (uint64_t r = 0; r < 3; r++) {
		float want = (float)((total - r + 2) / 3);

		for (uint64_t i = 0; i < n; i++) {
			ASSERT_EQ(want, acc[r * n + i]) TH_LOG("accumulator %llu, element %llu",
							       (unsigned long long)r,
							       (unsigned long long)i);
		}
	}
}

/* Two streams, an event between them: relu on one, then add on the other. */
TEST_F(launch, events_order_launches_of_two_streams)
{
	const uint64_t n = 1024;
	float *x = self->host, *y = x + n, *z = y + n;
	npurt_launch_desc relu = { .size = sizeof(relu), .op = op("relu") };
	npurt_launch_desc add = binary(self, "add", 4 * n, 4 * n, 8 * n, n);
	npurt_stream *s2;
	npurt_event *ev;

	for (uint64_t i = 0; i < n; i++)
		x[i] = (float)i - 512.0f;
	npurt_tensor_init(&relu.in[0], self->va, NPURT_F32, 1, &n);
	npurt_tensor_init(&relu.out, self->va + 4 * n, NPURT_F32, 1, &n);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s2));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &relu));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(s2, ev));
	ASSERT_EQ(NPURT_OK, npurt_launch(s2, &add));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(s2)) TH_LOG("%s", npurt_last_error());
	for (uint64_t i = 0; i < n; i++) {
		ASSERT_EQ(2.0f * fmaxf(x[i], 0.0f), z[i]) TH_LOG("element %llu", (unsigned long long)i);
	}
	npurt_event_destroy(ev);
	npurt_stream_destroy(s2);
}

enum tensor_kind { CACHED, NO_CACHE, PINNED, REGISTERED, IMPORTED, KINDS };
static const char *const kind_name[KINDS] = {
	"cached", "NO_CACHE", "pinned host", "registered host", "imported",
};

/* Memory of each kind a launch can name; *owned is host memory to free. */
static npurt_status tensor_alloc(npurt_device *dev, enum tensor_kind kind, size_t size,
				 npurt_mem **m, void **owned)
{
	npurt_mem *shared;
	npurt_status st;
	int fd;

	*owned = NULL;
	switch (kind) {
	case CACHED:
		return npurt_mem_alloc(dev, size, m);
	case NO_CACHE:
		return npurt_mem_alloc_flags(dev, size, NPURT_MEM_NO_CACHE, m);
	case PINNED:
		return npurt_host_alloc(dev, size, m);
	case REGISTERED:
		*owned = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		return *owned ? npurt_host_register(dev, *owned, size, 0, m) : NPURT_ERR_NO_MEMORY;
	default:
		/* Its exporter gone first: the import alone holds the buffer. */
		st = npurt_mem_alloc_flags(dev, size, NPURT_MEM_SHAREABLE, &shared);
		if (st)
			return st;
		st = npurt_mem_export(shared, &fd);
		if (!st) {
			st = npurt_mem_import(dev, fd, m);
			close(fd);
		}
		npurt_mem_free(shared);
		return st;
	}
}

/*
 * The driver holds no tensor of a launch (they are in its argument block,
 * which it never reads): libnpurt keeps the memory of a tensor freed
 * while a launch still uses it, of every kind, until the launch is done
 * (registered host memory is the caller's again when the free returns,
 * so that free waits). Freed early and the memory unmapped, the launch
 * would fault.
 */
TEST_F(launch, a_tensor_freed_during_its_launch_stays_until_the_launch_is_done)
{
	uint64_t k = 1u << 16;		/* a GEMM long enough to free under */

	for (unsigned int i = 0; i < KINDS; i++) {
		npurt_launch_desc d = { .size = sizeof(d), .op = op("gemm"), .alpha = 1.0f };
		npurt_mem *a, *out;
		float *hb = self->host, *hc;
		void *owned_a, *owned_out;

		ASSERT_EQ(NPURT_OK, tensor_alloc(self->dev, i, 4 * k, &a, &owned_a))
			TH_LOG("%s: %s", kind_name[i], npurt_last_error());
		ASSERT_EQ(NPURT_OK, tensor_alloc(self->dev, i, 4 * 64 * 64, &out, &owned_out))
			TH_LOG("%s: %s", kind_name[i], npurt_last_error());
		for (uint64_t j = 0; j < k; j++)
			((float *)npurt_mem_host_ptr(a))[j] = 1.0f;
		for (uint64_t j = 0; j < 64; j++)
			hb[j] = 1.0f;
		/* C[64x64] = A[64xk] (one row, broadcast) x B[kx64] (one row, broadcast) */
		d.in[0] = (npurt_tensor){ .addr = npurt_mem_device_addr(a), .dtype = NPURT_F32,
					  .ndim = 2, .shape = { 64, k }, .stride = { 0, 1 } };
		d.in[1] = (npurt_tensor){ .addr = self->va, .dtype = NPURT_F32, .ndim = 2,
					  .shape = { k, 64 }, .stride = { 0, 1 } };
		ASSERT_EQ(NPURT_OK, npurt_tensor_init(&d.out, npurt_mem_device_addr(out), NPURT_F32,
						      2, (uint64_t[]){ 64, 64 }));
		ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d));
		/* A copy of the output to the scratch, after the launch. */
		ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, self->va + MiB,
						       npurt_mem_device_addr(out), 4 * 64 * 64));
		npurt_mem_free(a);
		npurt_mem_free(out);
		free(owned_a);
		free(owned_out);
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s))
			TH_LOG("%s: %s", kind_name[i], npurt_last_error());
		hc = (float *)((uint8_t *)self->host + MiB);
		for (int j = 0; j < 64 * 64; j++) {
			ASSERT_EQ((float)k, hc[j]) TH_LOG("%s: element %d", kind_name[i], j);
		}
	}
}

TEST_F(launch, bad_descriptors_are_refused_before_the_device)
{
	npurt_launch_desc d = binary(self, "add", 0, 4096, 8192, 16);
	npurt_tensor t = { 0 };
	uint32_t id = 77;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(NULL, &d));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, NULL));
	d.size = sizeof(d) - 4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "size"));
	d.size = sizeof(d);
	d.op = 12345;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "unknown op"));
	d.op = op("add");
	d.block_dim = 65;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	d.block_dim = 0;
	d.in[1].ndim = NPURT_MAX_DIMS + 1;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_launch(add): tensor rank must be 1 to 8"))
		TH_LOG("%s", npurt_last_error());
	d.in[1].ndim = 1;
	d.out.dtype = NPURT_DTYPE_COUNT;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "unknown dtype")) TH_LOG("%s", npurt_last_error());

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_op_lookup("convolution", &id));
	EXPECT_EQ(77, id);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "did you mean conv2d?")) TH_LOG("%s",
									    npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_op_lookup("softmax", &id));
	EXPECT_STREQ("softmax", npurt_op_name(id));
	EXPECT_EQ(NULL, npurt_op_name(0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_tensor_init(&t, self->va, NPURT_F32, 0,
						       (uint64_t[]){ 1 }));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_tensor_init(&t, self->va, NPURT_F32, 2,
						       (uint64_t[]){ 4, 0 }));
	EXPECT_EQ(0, t.ndim);		/* untouched on failure */
	/* None of it reached the device: the stream is fine. */
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
}

/*
 * Past four dimensions (firmware 0.6): an 8-D ADD whose second input
 * broadcasts along dimensions 5 and 7, then a TRANSPOSE of the sum that
 * reverses all eight, against the host.
 */
TEST_F(launch, tensors_of_eight_dimensions_reach_the_device)
{
	static const uint64_t d8[8] = { 2, 3, 2, 2, 3, 4, 2, 3 };
	uint64_t n = 1, rev[8], bs[8];
	float *x = self->host, *y, *z, *t;
	npurt_launch_desc d = { .size = sizeof(d), .op = op("add") };

	for (int k = 0; k < 8; k++) {
		n *= d8[k];
		rev[k] = d8[7 - k];
	}
	y = x + n;
	z = y + n;
	t = z + n;
	for (uint64_t i = 0; i < n; i++) {
		x[i] = (float)(i % 97) * 0.5f;
		y[i] = (float)(i % 13) - 6.0f;
	}
	npurt_tensor_init(&d.in[0], self->va, NPURT_F32, 8, d8);
	npurt_tensor_init(&d.in[1], self->va + n * 4, NPURT_F32, 8, d8);
	memcpy(bs, d.in[1].stride, sizeof(bs));
	d.in[1].stride[5] = d.in[1].stride[7] = 0;
	npurt_tensor_init(&d.out, self->va + 2 * n * 4, NPURT_F32, 8, d8);
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d)) TH_LOG("%s", npurt_last_error());
	d = (npurt_launch_desc){ .size = sizeof(d), .op = op("transpose"),
				 .perm = { 7, 6, 5, 4, 3, 2, 1, 0 } };
	npurt_tensor_init(&d.in[0], self->va + 2 * n * 4, NPURT_F32, 8, d8);
	npurt_tensor_init(&d.out, self->va + 3 * n * 4, NPURT_F32, 8, rev);
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (uint64_t i = 0; i < n; i++) {
		uint64_t ix[8], rest = i, yo = 0, to = 0;

		for (int k = 7; k >= 0; k--) {
			ix[k] = rest % d8[k];
			rest /= d8[k];
		}
		for (int k = 0; k < 8; k++) {
			yo += (k == 5 || k == 7 ? 0 : ix[k]) * bs[k];
			to = to * rev[k] + ix[7 - k];
		}
		ASSERT_EQ(x[i] + y[yo], z[i]) TH_LOG("sum element %llu", (unsigned long long)i);
		ASSERT_EQ(z[i], t[to]) TH_LOG("transposed element %llu", (unsigned long long)i);
	}
}

/*
 * What a newcomer gets wrong, refused by the call with the device's own
 * rule and the tensors it is about, never by a failed stream later: a
 * GEMM whose K disagrees, an add of f32 and f16, a zeroed descriptor's
 * GEMM (alpha 0), views past their allocation or in freed memory.
 * npurt_launch_init() fills the defaults that make the same GEMM right.
 */
TEST_F(launch, what_the_device_would_refuse_is_refused_by_the_call)
{
	enum { M = 4, K = 3, N = 2 };
	float *A = self->host, *B = A + 64, *C = B + 64;
	npurt_launch_desc d;
	uint64_t n = 16;

	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, op("gemm")));
	EXPECT_EQ(sizeof(d), d.size);
	EXPECT_EQ(1.0f, d.alpha);
	EXPECT_EQ(0.0f, d.beta);
	npurt_tensor_init(&d.in[0], self->va, NPURT_F32, 2, (uint64_t[]){ M, K });
	npurt_tensor_init(&d.in[1], self->va + 256, NPURT_F32, 2, (uint64_t[]){ K + 2, N });
	npurt_tensor_init(&d.out, self->va + 512, NPURT_F32, 2, (uint64_t[]){ M, N });
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_STREQ("npurt_launch(gemm): GEMM shapes do not agree: A's columns are not B's rows "
		     "(in0 f32 [4, 3], in1 f32 [5, 2], out f32 [4, 2])", npurt_last_error());

	/* The same GEMM right, from a zeroed descriptor: refused until alpha is set. */
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.op = op("gemm");
	npurt_tensor_init(&d.in[0], self->va, NPURT_F32, 2, (uint64_t[]){ M, K });
	npurt_tensor_init(&d.in[1], self->va + 256, NPURT_F32, 2, (uint64_t[]){ K, N });
	npurt_tensor_init(&d.out, self->va + 512, NPURT_F32, 2, (uint64_t[]){ M, N });
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "alpha and beta are both 0"))
		TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < M * K; i++)
		A[i] = (float)i;
	for (int i = 0; i < K * N; i++)
		B[i] = (float)(i + 1);
	d.alpha = 1.0f;
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float want = 0.0f;

			for (int k = 0; k < K; k++)
				want += A[i * K + k] * B[k * N + j];
			EXPECT_EQ(want, C[i * N + j]);
		}

	d = binary(self, "add", 0, 4096, 8192, n);
	d.in[1].dtype = NPURT_F16;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_STREQ("npurt_launch(add): binary ops take two inputs of one dtype (in0 f32 [16], "
		     "in1 f16 [16], out f32 [16])", npurt_last_error());
	/* Strides that leave gaps are shown, a broadcast output refused. */
	d = binary(self, "add", 0, 4096, 8192, n);
	d.out.stride[0] = 0;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_STREQ("npurt_launch(add): output must not broadcast (zero stride) (in0 f32 [16], "
		     "in1 f32 [16], out f32 [16] strides [0])", npurt_last_error());

	/* Views inside their allocations: one past the scratch's end, one in freed memory. */
	d = binary(self, "add", 0, 4096, 8 * MiB - 60, n);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_launch(add): the output [")) TH_LOG("%s",
											npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), ", +64 bytes) runs 4 bytes past the end of its "
			       "allocation")) TH_LOG("%s", npurt_last_error());
	{
		npurt_mem *gone;

		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4096, &gone));
		d = binary(self, "add", 0, 4096, 8192, n);
		d.in[1].addr = npurt_mem_device_addr(gone);
		ASSERT_EQ(NPURT_OK, npurt_mem_release(gone));
		EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &d));
		EXPECT_NE(NULL, strstr(npurt_last_error(), "input 1 [")) TH_LOG("%s",
									  npurt_last_error());
		EXPECT_NE(NULL, strstr(npurt_last_error(), "is in no live allocation of this device"))
			TH_LOG("%s", npurt_last_error());
	}

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch_init(NULL, op("gemm")));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch_init(&d, 12345));
	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, op("leaky_relu")));
	EXPECT_EQ(0.01f, d.alpha);
	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, op("layernorm")));
	EXPECT_EQ(1e-5f, d.eps);
	/* None of it reached the device: the stream is fine. */
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
}

/*
 * With NPURT_LAUNCH_CHECK=device the library leaves the rule to the
 * device: the refused launch fails the stream, and the record and the
 * message say which rule it broke, as the library would have.
 */
TEST_F(launch, a_launch_the_device_refuses_says_why)
{
	npurt_launch_desc d = binary(self, "add", 0, 4096, 8192, 16);
	npurt_error r = { .size = sizeof(r) };
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *m;

	setenv("NPURT_LAUNCH_CHECK", "neither", 1);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_open(0, &dev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_LAUNCH_CHECK=neither"));
	setenv("NPURT_LAUNCH_CHECK", "device", 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev)) TH_LOG("%s", npurt_last_error());
	unsetenv("NPURT_LAUNCH_CHECK");
	ASSERT_EQ(NPURT_OK, npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(dev, 16384, &m));	/* its own context's memory */
	d.in[0].addr = npurt_mem_device_addr(m);
	d.in[1].addr = d.in[0].addr + 4096;
	d.out.addr = d.in[0].addr + 8192;
	d.in[1].shape[0] = 17;		/* shapes of an add must agree */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, d.in[0].addr, 0, 4096));
	ASSERT_EQ(NPURT_OK, npurt_launch(s, &d)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "kernel error in operation 2 of the stream "
			       "(npurt_launch add): input and output shapes differ (in0 f32 [16], "
			       "in1 f32 [17], out f32 [16]); the device's task"))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(s, &r));
	EXPECT_EQ(DRM_NPU_JOB_KERNEL_ERROR, r.device_status);
	EXPECT_STREQ("input and output shapes differ", r.reason);
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_launch(s, &d));
	/* An older caller's smaller record is still filled, up to its size. */
	r.size = NPURT_ERROR_V1_SIZE;
	r.reason = NULL;
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(s, &r));
	EXPECT_EQ(DRM_NPU_JOB_KERNEL_ERROR, r.device_status);
	EXPECT_EQ(NULL, r.reason);
	npurt_stream_destroy(s);
	npurt_mem_free(m);
	npurt_device_close(dev);
}

TEST_HARNESS_MAIN
