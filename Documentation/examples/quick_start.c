// SPDX-License-Identifier: MIT
/*
 * Quick start: open a device, put data in device memory, launch an op on
 * a stream, wait for it and read the result. Every call returns an
 * npurt_status; npurt_last_error() says why one failed.
 *
 *   cc quick_start.c $(pkg-config --cflags --libs npurt) -o quick_start
 */
#include <stdio.h>

#include <npurt.h>

#define CHECK(call) do {							\
	npurt_status st_ = (call);						\
	if (st_) {								\
		fprintf(stderr, "%s: %s\n", #call, npurt_last_error());	\
		return 1;							\
	}									\
} while (0)

int main(void)
{
	uint64_t n = 1024;
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *a, *y;
	npurt_launch_desc d;
	uint32_t relu;
	float *ha, *hy;

	CHECK(npurt_device_open(0, &dev));
	CHECK(npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s));
	CHECK(npurt_mem_alloc(dev, n * 4, &a));
	CHECK(npurt_mem_alloc(dev, n * 4, &y));
	ha = npurt_mem_host_ptr(a);		/* device memory, mapped for the CPU */
	for (uint64_t i = 0; i < n; i++)
		ha[i] = (float)i - 512.0f;

	CHECK(npurt_op_lookup("relu", &relu));
	CHECK(npurt_launch_init(&d, relu));	/* the size, the op's default parameters */
	CHECK(npurt_tensor_init(&d.in[0], npurt_mem_device_addr(a), NPURT_F32, 1, &n));
	CHECK(npurt_tensor_init(&d.out, npurt_mem_device_addr(y), NPURT_F32, 1, &n));
	CHECK(npurt_launch(s, &d));		/* checked here, run on the device */
	CHECK(npurt_stream_synchronize(s));

	hy = npurt_mem_host_ptr(y);
	for (uint64_t i = 0; i < n; i++) {
		if (hy[i] != (ha[i] > 0 ? ha[i] : 0)) {
			fprintf(stderr, "quick_start: y[%llu] is %g\n", (unsigned long long)i, hy[i]);
			return 1;
		}
	}
	printf("quick_start: relu of %llu floats on the device matches the host\n",
	       (unsigned long long)n);
	npurt_mem_free(y);
	npurt_mem_free(a);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	return 0;
}
