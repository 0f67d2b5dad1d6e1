// SPDX-License-Identifier: MIT
/*
 * libnpurt streams, side by side in one run:
 *
 *   copy/compute overlap   16 MiB device copies on one stream and GEMM
 *                          launches on another, against the same work on
 *                          one stream; the work is sized so copies and
 *                          launches take about as long alone, and the
 *                          ideal ratio max(copy, compute) / (copy +
 *                          compute) is printed beside the measured one
 *   launch rate            small launches (a 64-element add) through
 *                          npurt_launch() against raw one-task KERNEL
 *                          SUBMITs of the same block on the same device
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_oplib.h"
#include "npu_selftest.h"
#include "npurt.h"
#include "bench.h"

#define MiB		(1ull << 20)
#define COPY		(16 * MiB)
#define GEMM		256		/* square */
#define LAUNCHES	20000

static void die(const char *what)
{
	fprintf(stderr, "stream_bench: %s: %s\n", what, npurt_last_error());
	exit(1);
}

struct work {
	npurt_mem *m;		/* copies: src, dst; then the GEMM's A, B, C */
	uint64_t va;
	npurt_launch_desc gemm;
	int copies, gemms;
};

static void issue(struct work *w, npurt_stream *copy, npurt_stream *compute)
{
	for (int i = 0, j = 0; i < w->copies || j < w->gemms; i++, j++) {
		if (i < w->copies && npurt_memcpy_async(copy, w->va + COPY, w->va, COPY))
			die("memcpy");
		if (j < w->gemms && npurt_launch(compute, &w->gemm))
			die("launch");
	}
}

static double timed(struct work *w, npurt_stream *a, npurt_stream *b)
{
	double t = now_s();

	issue(w, a, b);
	if (npurt_stream_synchronize(a) || npurt_stream_synchronize(b))
		die("synchronize");
	return now_s() - t;
}

static void overlap(npurt_device *dev)
{
	npurt_stream *s1, *s2;
	struct work w = { 0 };
	uint64_t base, n = GEMM;
	double t_copy, t_gemm, t_one, t_two, ideal;

	if (npurt_mem_alloc(dev, 2 * COPY + 3 * 4 * GEMM * GEMM, &w.m) ||
	    npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s1) ||
	    npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s2))
		die("setup");
	w.va = npurt_mem_device_addr(w.m);
	base = w.va + 2 * COPY;
	w.gemm = (npurt_launch_desc){ .size = sizeof(w.gemm), .alpha = 1.0f };
	npurt_op_lookup("gemm", &w.gemm.op);
	npurt_tensor_init(&w.gemm.in[0], base, NPURT_F32, 2, (uint64_t[]){ n, n });
	npurt_tensor_init(&w.gemm.in[1], base + 4 * n * n, NPURT_F32, 2, (uint64_t[]){ n, n });
	npurt_tensor_init(&w.gemm.out, base + 8 * n * n, NPURT_F32, 2, (uint64_t[]){ n, n });

	/* Calibrate: 8 copies alone, then as many GEMMs as take as long. */
	w.copies = 8;
	timed(&w, s1, s2);			/* warm: pages, arenas */
	t_copy = timed(&w, s1, s2);
	w.copies = 0;
	w.gemms = 4;
	t_gemm = timed(&w, s1, s2);
	w.gemms = (int)(4 * t_copy / t_gemm + 0.5);
	if (w.gemms < 1)
		w.gemms = 1;
	t_gemm = timed(&w, s1, s2);
	w.copies = 8;
	t_one = timed(&w, s1, s1);
	t_two = timed(&w, s1, s2);
	ideal = (t_copy > t_gemm ? t_copy : t_gemm) / (t_copy + t_gemm);

	printf("%-44s %10s %10s\n", "copy/compute overlap", "ms", "x one");
	printf("%-44s %10.1f\n", "8 copies of 16 MiB alone", t_copy * 1e3);
	printf("%-44s %10.1f\n", "GEMMs alone", t_gemm * 1e3);
	printf("%-44s %10.1f %10.2f\n", "both on one stream", t_one * 1e3, 1.0);
	printf("%-44s %10.1f %10.2f\n", "both on two streams", t_two * 1e3, t_two / t_one);
	printf("%-44s %10s %10.2f\n", "ideal: max / sum", "", ideal);
	printf("%-44s %10s %10.2f\n", "two streams / ideal (goal <= 1.10)", "", t_two / t_one / ideal);
	npurt_stream_destroy(s1);
	npurt_stream_destroy(s2);
	npurt_mem_free(w.m);
}

static void launch_rate(npurt_device *dev)
{
	const uint64_t n = 64;
	npurt_launch_desc d = { .size = sizeof(d) };
	struct drm_npu_task t = { .type = DRM_NPU_TASK_KERNEL };
	struct npu_op_args *a;
	npurt_stream *s;
	npurt_mem *m;
	uint64_t va, seq = 0;
	double t_rt, t_raw;
	int fd = npurt_device_fd(dev);

	if (npurt_mem_alloc(dev, MiB, &m) || npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s))
		die("setup");
	va = npurt_mem_device_addr(m);
	npurt_op_lookup("add", &d.op);
	npurt_tensor_init(&d.in[0], va, NPURT_F32, 1, &n);
	npurt_tensor_init(&d.in[1], va + 4096, NPURT_F32, 1, &n);
	npurt_tensor_init(&d.out, va + 8192, NPURT_F32, 1, &n);

	t_rt = now_s();
	for (int i = 0; i < LAUNCHES; i++)
		if (npurt_launch(s, &d))
			die("launch");
	if (npurt_stream_synchronize(s))
		die("synchronize");
	t_rt = now_s() - t_rt;

	/* The same block, written once, launched by raw submits on the default queue. */
	a = (struct npu_op_args *)((uint8_t *)npurt_mem_host_ptr(m) + 16384);
	memset(a, 0, sizeof(*a));
	a->op = d.op;
	for (int k = 0; k < 3; k++) {
		struct npu_op_tensor *o = k < 2 ? &a->in[k] : &a->out;

		o->va = va + 4096 * k;
		o->dtype = NPU_DT_F32;
		o->ndim = 1;
		o->shape[0] = n;
		o->stride[0] = 1;
	}
	t.args[0] = va + 16384;
	t.args[2] = sizeof(*a);
	t_raw = now_s();
	for (int i = 0; i < LAUNCHES; i++)
		if (npu_submit(fd, &t, 1, &seq)) {
			perror("stream_bench: SUBMIT");
			exit(1);
		}
	if (npu_wait(fd, seq, -1, NULL)) {
		perror("stream_bench: WAIT");
		exit(1);
	}
	t_raw = now_s() - t_raw;

	printf("%-44s %10s %10s\n", "launch rate, 64-element add", "launches/s", "x raw");
	printf("%-44s %10.0f %10.2f\n", "raw one-task SUBMITs", LAUNCHES / t_raw, 1.0);
	printf("%-44s %10.0f %10.2f\n", "npurt_launch()", LAUNCHES / t_rt, t_raw / t_rt);
	npurt_stream_destroy(s);
	npurt_mem_free(m);
}

int main(void)
{
	npurt_device *dev;

	if (npurt_device_open(0, &dev))
		die("open");
	printf("submission path: %s\n",
	       npurt_device_submit_path(dev) == NPURT_SUBMIT_IO_URING ? "io_uring" : "ioctl");
	overlap(dev);
	launch_rate(dev);
	npurt_device_close(dev);
	return 0;
}
