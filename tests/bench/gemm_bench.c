// SPDX-License-Identifier: MIT
/*
 * fp32 GEMM: the device's op library (a KERNEL task, split across the
 * AI cores of the core group that takes it, timed on the device's clock
 * and from submit to wait return; see device_gflops()) against OpenBLAS
 * sgemm, best of 3:
 *
 *   - on the CPU that runs this benchmark (in the VM: an emulated one);
 *   - on the host, natively, like the device's firmware runs, at as many
 *     threads as the launch has cores: `make bench` first runs
 *     `gemm_bench --blas-only T...` on the host, a line "T GFLOPS512
 *     GFLOPS1024" per thread count T, and hands them over in the file
 *     named by $NPU_BENCH_HOST_BLAS.
 *
 * A launch runs on one group (its cores, DRM_NPU_PARAM_CORE_COUNT shared
 * out between DRM_NPU_PARAM_CORE_GROUPS groups, the first group taking
 * the rounded-down share), so a device of two cores in two groups gives a
 * GEMM one core: it is measured against sgemm at one thread. Then the
 * same GEMMs on bf16 and on bytes (firmware 0.9) against the device's
 * fp32 one.
 */
#include <cblas.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_selftest.h"
#include "bench.h"

static struct npu_op_tensor dense2(uint64_t va, uint64_t n, uint32_t dt)
{
	struct npu_op_tensor t = { .va = va, .dtype = dt, .ndim = 2,
				    .shape = { n, n }, .stride = { n, 1 } };

	return t;
}

/*
 * The device's GEMM in GFLOP/s, best of RUNS after WARM_S seconds of runs
 * not counted: *wall from submit to wait return, *own on the device's
 * clock (TIMESTAMP tasks either side of the launch, in the same submit):
 * what the emulated guest's round trip adds is the difference. Runs in
 * a VM just booted come out at half speed for some 40 ms (the guest still
 * settling on the host's two cores), which is what a best of 3 from the
 * start measured.
 */
#define RUNS	5
#define WARM_S	0.25

static int device_gflops(int fd, uint64_t n, uint32_t da, uint32_t db, uint32_t dc, double *wall,
			 double *own)
{
	uint64_t bytes = n * n * 4, size = 4096 + 3 * bytes;
	struct drm_npu_bo_create bo;
	struct npu_op_args a = { .op = NPU_OP_GEMM, .alpha = 1.0f };
	struct drm_npu_task t[3] = { { .type = DRM_NPU_TASK_TIMESTAMP },
				     { .type = DRM_NPU_TASK_KERNEL },
				     { .type = DRM_NPU_TASK_TIMESTAMP } };
	double flops = 2.0 * n * n * n, start;
	uint8_t *map;
	int ret = -1;

	_Static_assert(sizeof(struct npu_op_args) <= 2048, "the clocks follow the block");

	*wall = *own = 0;
	if (npu_bo_create(fd, size, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo))
		return -1;
	map = npu_bo_mmap(fd, bo.handle, size);
	if (map == MAP_FAILED) {
		npu_gem_close(fd, bo.handle);
		return -1;
	}
	for (uint64_t i = 0; i < 2 * n * n; i++)
		((float *)(map + 4096))[i] = (float)(i % 17) * 0.01f;
	/* bf16 and bytes read the same memory as values of their own: any will do */
	a.in[0] = dense2(bo.device_va + 4096, n, da);
	a.in[1] = dense2(bo.device_va + 4096 + bytes, n, db);
	a.out = dense2(bo.device_va + 4096 + 2 * bytes, n, dc);
	memcpy(map, &a, sizeof(a));
	t[0].args[0] = bo.device_va + 2048;	/* the two clocks after the block */
	t[1].args[0] = bo.device_va;
	t[1].args[2] = sizeof(struct npu_op_args);
	t[2].args[0] = bo.device_va + 2056;
	start = now_s();
	for (int r = 0; r < RUNS;) {
		bool warm = now_s() - start >= WARM_S;
		uint64_t seq, clk[2];
		double s = now_s();

		if (npu_submit(fd, t, 3, &seq) || npu_wait(fd, seq, -1, NULL))
			goto out;
		s = now_s() - s;
		if (!warm)
			continue;
		r++;
		memcpy(clk, map + 2048, sizeof(clk));
		if (flops / s / 1e9 > *wall)
			*wall = flops / s / 1e9;
		if (clk[1] > clk[0] && flops / (double)(clk[1] - clk[0]) > *own)
			*own = flops / (double)(clk[1] - clk[0]);	/* per ns: GFLOP/s */
	}
	ret = *own > 0 ? 0 : -1;
out:
	munmap(map, size);
	npu_gem_close(fd, bo.handle);
	return ret;
}

void openblas_set_num_threads(int n);

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

/* The host's sgemm at `threads` threads from $NPU_BENCH_HOST_BLAS, or 0s. */
static void host_blas(unsigned int threads, double host[2])
{
	const char *name = getenv("NPU_BENCH_HOST_BLAS");
	FILE *f = name ? fopen(name, "r") : NULL;
	unsigned int t;
	double a, b;

	host[0] = host[1] = 0;
	if (!f)
		return;
	while (fscanf(f, "%u %lf %lf", &t, &a, &b) == 3)
		if (t == threads)
			host[0] = a, host[1] = b;
	fclose(f);
}

int main(int argc, char **argv)
{
	uint64_t cores = 0, groups = 0;
	unsigned int per_launch;
	double host[2], d[2], w[2], bf[2], i8[2], lw;
	int fd;

	if (argc > 1 && !strcmp(argv[1], "--blas-only")) {
		if (argc < 3) {
			fprintf(stderr, "usage: gemm_bench [--blas-only THREADS...]\n");
			return 2;
		}
		for (int i = 2; i < argc; i++) {
			char *end;
			long t;

			errno = 0;
			t = strtol(argv[i], &end, 10);
			if (errno || *end || t < 1 || t > 1024) {
				fprintf(stderr, "gemm_bench: bad thread count '%s'\n", argv[i]);
				return 2;
			}
			openblas_set_num_threads((int)t);
			printf("%ld %.3f %.3f\n", t, blas_gflops(sizes[0]), blas_gflops(sizes[1]));
		}
		return 0;
	}
	fd = npu_open();
	if (fd < 0) {
		fprintf(stderr, "gemm_bench: no npu device\n");
		return 1;
	}
	if (npu_get_param(fd, DRM_NPU_PARAM_CORE_COUNT, &cores) ||
	    npu_get_param(fd, DRM_NPU_PARAM_CORE_GROUPS, &groups) || !groups || cores < groups) {
		fprintf(stderr, "gemm_bench: cannot read the device's cores and groups\n");
		return 1;
	}
	per_launch = (unsigned int)(cores / groups);
	host_blas(per_launch, host);
	printf("device: %lu AI cores in %lu group%s, a launch on %u; sgemm at %u thread%s\n",
	       cores, groups, groups > 1 ? "s" : "", per_launch, per_launch,
	       per_launch > 1 ? "s" : "");
	printf("%-10s %9s %9s %11s %11s %8s %8s\n", "fp32 GEMM", "device", "dev wall",
	       "sgemm here", "sgemm host", "x host", "wall x");
	/*
	 * Every device GEMM before any sgemm here: OpenBLAS's threads spin
	 * for a while after a call, and a guest's spinning vCPUs are host
	 * threads that take the device's cores.
	 */
	for (size_t i = 0; i < 2; i++) {
		if (device_gflops(fd, sizes[i], NPU_DT_F32, NPU_DT_F32, NPU_DT_F32, &w[i], &d[i]) ||
		    device_gflops(fd, sizes[i], NPU_DT_BF16, NPU_DT_BF16, NPU_DT_F32, &lw, &bf[i]) ||
		    device_gflops(fd, sizes[i], NPU_DT_U8, NPU_DT_I8, NPU_DT_I32, &lw, &i8[i])) {
			fprintf(stderr, "gemm_bench: device GEMM %lu failed\n", sizes[i]);
			return 1;
		}
	}
	openblas_set_num_threads((int)per_launch);	/* sgemm here at the same count */
	for (size_t i = 0; i < 2; i++) {
		double b = blas_gflops(sizes[i]);

		printf("%4lux%-5lu %9.2f %9.2f %11.2f", sizes[i], sizes[i], d[i], w[i], b);
		if (host[i] > 0)
			printf(" %11.2f %8.2f %8.2f", host[i], d[i] / host[i], w[i] / host[i]);
		printf("\n");
	}
	printf("(GFLOP/s: the device on its own clock and from submit to wait; x host:\n"
	       " the device against sgemm on the host at the launch's thread count)\n");
	printf("%-10s %9s %9s %7s %9s %7s\n", "low prec.", "fp32", "bf16", "x fp32", "u8 x i8",
	       "x fp32");
	for (size_t i = 0; i < 2; i++)
		printf("%4lux%-5lu %9.2f %9.2f %7.2f %9.2f %7.2f\n", sizes[i], sizes[i], d[i], bf[i],
		       bf[i] / d[i], i8[i], i8[i] / d[i]);
	printf("(the device on its own clock: bf16 A and B into f32, u8 x i8 into i32\n"
	       " (multiply-adds x 2 per ns), against its fp32 GEMM)\n");
	close(fd);
	return 0;
}
