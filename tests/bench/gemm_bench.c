// SPDX-License-Identifier: MIT
/*
 * fp32 GEMM: the device's op library (a KERNEL task on all AI cores,
 * timed from submit to wait return) against OpenBLAS sgemm, best of 3:
 *
 *   - on the CPU that runs this benchmark (in the VM: an emulated one);
 *   - on the host, natively, like the device's firmware runs: `make bench`
 *     first runs `gemm_bench --blas-only` on the host and hands the
 *     numbers over in the file named by $NPU_BENCH_HOST_BLAS.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_selftest.h"
#include "bench.h"

static struct npu_op_tensor dense2(uint64_t va, uint64_t n)
{
	struct npu_op_tensor t = { .va = va, .dtype = NPU_DT_F32, .ndim = 2,
				    .shape = { n, n }, .stride = { n, 1 } };

	return t;
}

static double device_gflops(int fd, uint64_t n)
{
	uint64_t bytes = n * n * 4, size = 4096 + 3 * bytes;
	struct drm_npu_bo_create bo;
	struct npu_op_args a = { .op = NPU_OP_GEMM, .alpha = 1.0f };
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL };
	double best = 0;
	uint8_t *map;

	if (npu_bo_create(fd, size, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo))
		return -1;
	map = npu_bo_mmap(fd, bo.handle, size);
	if (map == MAP_FAILED)
		return -1;
	for (uint64_t i = 0; i < 2 * n * n; i++)
		((float *)(map + 4096))[i] = (float)(i % 17) * 0.01f;
	a.in[0] = dense2(bo.device_va + 4096, n);
	a.in[1] = dense2(bo.device_va + 4096 + bytes, n);
	a.out = dense2(bo.device_va + 4096 + 2 * bytes, n);
	memcpy(map, &a, sizeof(a));
	t.args[0] = bo.device_va;
	t.args[2] = sizeof(struct npu_op_args);
	for (int r = 0; r < 3; r++) {
		uint64_t seq;
		double s = now_s();

		if (npu_submit(fd, &t, 1, &seq) || npu_wait(fd, seq, -1, NULL))
			return -1;
		s = now_s() - s;
		if (2.0 * n * n * n / s / 1e9 > best)
			best = 2.0 * n * n * n / s / 1e9;
	}
	munmap(map, size);
	npu_gem_close(fd, bo.handle);
	return best;
}

static double blas_gflops(uint64_t n)
{
	float *A = malloc(n * n * 4), *B = malloc(n * n * 4), *C = calloc(n * n, 4);
	double best = 0;

	for (uint64_t i = 0; i < n * n; i++)
		A[i] = B[i] = (float)(i % 17) * 0.01f;
	for (int r = 0; r < 3; r++) {
		double s = now_s();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n,
			    1.0f, A, (int)n, B, (int)n, 0.0f, C, (int)n);
		s = now_s() - s;
		if (2.0 * n * n * n / s / 1e9 > best)
			best = 2.0 * n * n * n / s / 1e9;
	}
	free(A), free(B), free(C);
	return best;
}

static const uint64_t sizes[] = { 512, 1024 };

int main(int argc, char **argv)
{
	const char *host_file = getenv("NPU_BENCH_HOST_BLAS");
	double host[2] = { 0, 0 };
	FILE *f;
	int fd;

	if (argc > 1 && !strcmp(argv[1], "--blas-only")) {
		for (size_t i = 0; i < 2; i++)
			printf("%.3f\n", blas_gflops(sizes[i]));
		return 0;
	}
	if (host_file && (f = fopen(host_file, "r"))) {
		if (fscanf(f, "%lf %lf", &host[0], &host[1]) != 2)
			host[0] = host[1] = 0;
		fclose(f);
	}
	fd = npu_open();
	if (fd < 0) {
		fprintf(stderr, "gemm_bench: no npu device\n");
		return 1;
	}
	printf("%-10s %10s %12s %10s %12s %10s\n", "fp32 GEMM", "device", "sgemm here",
	       "ratio", "sgemm host", "ratio");
	for (size_t i = 0; i < 2; i++) {
		double d = device_gflops(fd, sizes[i]), b = blas_gflops(sizes[i]);

		if (d < 0) {
			fprintf(stderr, "gemm_bench: device GEMM %lu failed\n", sizes[i]);
			return 1;
		}
		printf("%4lux%-5lu %10.2f %12.2f %10.2f", sizes[i], sizes[i], d, b, d / b);
		if (host[i] > 0)
			printf(" %12.2f %10.2f", host[i], d / host[i]);
		printf("\n");
	}
	printf("(GFLOP/s; ratio = device / sgemm)\n");
	close(fd);
	return 0;
}
