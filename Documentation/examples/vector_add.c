// SPDX-License-Identifier: MIT
/*
 * Vector add with streams and events: C = A + B on one stream, then a
 * second stream waits for that stream's event and copies C out, and the
 * two events time the add on the device.
 *
 *   cc vector_add.c $(pkg-config --cflags --libs npurt) -o vector_add
 */
#include <stdio.h>
#include <stdlib.h>

#include <npurt.h>

#define N (1u << 20)

#define CHECK(call) do {							\
	npurt_status st_ = (call);						\
	if (st_) {								\
		fprintf(stderr, "%s: %s\n", #call, npurt_last_error());	\
		exit(1);							\
	}									\
} while (0)

int main(void)
{
	npurt_device *dev;
	npurt_mem *a, *b, *c, *out;
	npurt_stream *compute, *copy;
	npurt_event *start, *done;
	npurt_launch_desc add;
	uint32_t op;
	uint64_t n = N;
	int64_t ns;
	float *ha, *hb, *hout;

	CHECK(npurt_device_open(0, &dev));
	CHECK(npurt_mem_alloc(dev, 4 * N, &a));
	CHECK(npurt_mem_alloc(dev, 4 * N, &b));
	CHECK(npurt_mem_alloc(dev, 4 * N, &c));
	CHECK(npurt_mem_alloc(dev, 4 * N, &out));
	ha = npurt_mem_host_ptr(a);
	hb = npurt_mem_host_ptr(b);
	for (uint32_t i = 0; i < N; i++) {
		ha[i] = (float)i;
		hb[i] = 2.0f * (float)i;
	}

	CHECK(npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &compute));
	CHECK(npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &copy));
	CHECK(npurt_event_create(dev, &start));
	CHECK(npurt_event_create(dev, &done));

	/* The descriptor's size and the op's default parameters, then the tensors. */
	CHECK(npurt_op_lookup("add", &op));
	CHECK(npurt_launch_init(&add, op));
	CHECK(npurt_tensor_init(&add.in[0], npurt_mem_device_addr(a), NPURT_F32, 1, &n));
	CHECK(npurt_tensor_init(&add.in[1], npurt_mem_device_addr(b), NPURT_F32, 1, &n));
	CHECK(npurt_tensor_init(&add.out, npurt_mem_device_addr(c), NPURT_F32, 1, &n));

	CHECK(npurt_event_record(start, compute));
	CHECK(npurt_launch(compute, &add));
	CHECK(npurt_event_record(done, compute));
	/* The copy stream starts once the add is done, without the host. */
	CHECK(npurt_stream_wait_event(copy, done));
	CHECK(npurt_memcpy_async(copy, npurt_mem_device_addr(out), npurt_mem_device_addr(c), 4 * N));
	CHECK(npurt_stream_synchronize(copy));

	hout = npurt_mem_host_ptr(out);
	for (uint32_t i = 0; i < N; i++) {
		if (hout[i] != 3.0f * (float)i) {
			fprintf(stderr, "vector_add: element %u is %f, want %f\n", i, hout[i],
				3.0f * (float)i);
			return 1;
		}
	}
	CHECK(npurt_event_elapsed_ns(start, done, &ns));
	printf("vector_add: %u elements correct; the add took %.3f ms on the device\n", N,
	       (double)ns / 1e6);

	npurt_event_destroy(start);
	npurt_event_destroy(done);
	npurt_stream_destroy(compute);
	npurt_stream_destroy(copy);
	npurt_mem_free(a);
	npurt_mem_free(b);
	npurt_mem_free(c);
	npurt_mem_free(out);
	npurt_device_close(dev);
	return 0;
}
