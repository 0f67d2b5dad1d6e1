// SPDX-License-Identifier: MIT
/*
 * Copy/compute overlap on two streams: one stream moves data while the
 * other runs GEMMs, and events time each. The device runs copies on its
 * copy engines and launches on its AI-core groups, so the two streams'
 * work overlaps; the same work on one stream runs one after the other.
 *
 *   cc overlap.c $(pkg-config --cflags --libs npurt) -o overlap
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <npurt.h>

#define COPY	(16u << 20)
#define M	256

#define CHECK(call) do {							\
	npurt_status st_ = (call);						\
	if (st_) {								\
		fprintf(stderr, "%s: %s\n", #call, npurt_last_error());	\
		exit(1);							\
	}									\
} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* 8 copies on `cs`, 8 GEMMs on `ks` (maybe the same stream); ms taken. */
static double run(npurt_stream *cs, npurt_stream *ks, npurt_mem *buf,
		  const npurt_launch_desc *gemm)
{
	uint64_t src = npurt_mem_device_addr(buf), dst = src + COPY;
	double t = now_ms();

	for (int i = 0; i < 8; i++) {
		CHECK(npurt_memcpy_async(cs, dst, src, COPY));
		CHECK(npurt_launch(ks, gemm));
	}
	CHECK(npurt_stream_synchronize(cs));
	CHECK(npurt_stream_synchronize(ks));
	return now_ms() - t;
}

int main(void)
{
	npurt_device *dev;
	npurt_mem *buf, *mats;
	npurt_stream *s1, *s2;
	npurt_launch_desc gemm = { .size = sizeof(gemm), .alpha = 1.0f };
	uint64_t base, shape[2] = { M, M };
	float *h, *c;
	double one, two;

	CHECK(npurt_device_open(0, &dev));
	CHECK(npurt_mem_alloc(dev, 2 * COPY, &buf));
	CHECK(npurt_mem_alloc(dev, 3 * 4 * M * M, &mats));
	CHECK(npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s1));
	CHECK(npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s2));
	h = npurt_mem_host_ptr(mats);
	for (uint32_t i = 0; i < 2 * M * M; i++)
		h[i] = 1.0f;
	base = npurt_mem_device_addr(mats);
	CHECK(npurt_op_lookup("gemm", &gemm.op));
	CHECK(npurt_tensor_init(&gemm.in[0], base, NPURT_F32, 2, shape));
	CHECK(npurt_tensor_init(&gemm.in[1], base + 4 * M * M, NPURT_F32, 2, shape));
	CHECK(npurt_tensor_init(&gemm.out, base + 8 * M * M, NPURT_F32, 2, shape));

	run(s1, s2, buf, &gemm);		/* warm up */
	one = run(s1, s1, buf, &gemm);
	two = run(s1, s2, buf, &gemm);
	c = h + 2 * M * M;
	for (uint32_t i = 0; i < M * M; i++) {
		if (c[i] != (float)M) {
			fprintf(stderr, "overlap: C[%u] is %f, want %d\n", i, c[i], M);
			return 1;
		}
	}
	printf("overlap: 8 copies of 16 MiB and 8 GEMMs %dx%d: one stream %.1f ms, "
	       "two streams %.1f ms (%.2fx)\n", M, M, one, two, two / one);

	npurt_stream_destroy(s1);
	npurt_stream_destroy(s2);
	npurt_mem_free(buf);
	npurt_mem_free(mats);
	npurt_device_close(dev);
	return 0;
}
