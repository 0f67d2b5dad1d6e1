// SPDX-License-Identifier: MIT
/*
 * One process's mapping churn against another's queue starts.
 *
 * Process A keeps long GEMM launches running, which read their inputs in
 * place: a TLB invalidation of A's context waits for them (up to the
 * firmware's settle time, then cancels them). Process B creates and
 * destroys a queue over and over and times QUEUE_CREATE, whose
 * QUEUE_START is a firmware mailbox command. Measured side by side in
 * one run, ROUNDS times in turn (the guest's speed drifts): with A's
 * launches alone, then with CHURNERS threads of A creating and closing
 * small buffers as fast as they can, each close an invalidation of A's
 * context. An invalidation that held the mailbox while the firmware
 * waited made B wait for every one queued before it; the goal is B's
 * median latency under churn within 1.5x of without.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npu_selftest.h"
#include "bench.h"

#define N		384		/* GEMM size: tens of ms a launch under TCG */
#define CHURNERS	2
#define ROUNDS		4
#define STARTS		40		/* QUEUE_CREATEs timed per phase and round */

static volatile int *churn_on;		/* shared with A */


static struct npu_op_tensor dense2(uint64_t va, uint64_t n)
{
	struct npu_op_tensor t = { .va = va, .dtype = NPU_DT_F32, .ndim = 2,
				    .shape = { n, n }, .stride = { n, 1 } };

	return t;
}

/* A: GEMMs back to back on its default queue until killed. */
static void *launches(void *arg)
{
	int fd = *(int *)arg;
	uint64_t bytes = (uint64_t)N * N * 4, size = 4096 + 3 * bytes, seq;
	struct npu_op_args a = { .op = NPU_OP_GEMM, .alpha = 1.0f };
	struct drm_npu_task t[4];
	struct drm_npu_bo_create bo;
	uint8_t *map;

	if (npu_bo_create(fd, size, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo))
		exit(1);
	map = npu_bo_mmap(fd, bo.handle, size);
	if (map == MAP_FAILED)
		exit(1);
	for (uint64_t i = 0; i < 2 * (uint64_t)N * N; i++)
		((float *)(map + 4096))[i] = (float)(i % 13) * 0.01f;
	a.in[0] = dense2(bo.device_va + 4096, N);
	a.in[1] = dense2(bo.device_va + 4096 + bytes, N);
	a.out = dense2(bo.device_va + 4096 + 2 * bytes, N);
	memcpy(map, &a, sizeof(a));
	for (int i = 0; i < 4; i++)
		t[i] = (struct drm_npu_task){ .type = DRM_NPU_TASK_KERNEL,
					      .args = { bo.device_va, 0, sizeof(a) } };
	for (;;) {
		if (npu_submit(fd, t, 4, &seq) || npu_wait(fd, seq, -1, NULL))
			exit(1);
	}
}

static void *churn(void *arg)
{
	int fd = *(int *)arg;

	for (;;) {
		struct drm_npu_bo_create bo;

		if (!*churn_on) {
			usleep(2000);
			continue;
		}
		if (npu_bo_create(fd, 64 << 10, 0, &bo) || npu_gem_close(fd, bo.handle))
			break;
	}
	return NULL;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* B: STARTS QUEUE_CREATEs, their latencies in us appended at *us. */
static int starts(int fd, double *us)
{
	for (int i = 0; i < STARTS; i++) {
		uint32_t q;
		double t = now_us();

		if (npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q))
			return -1;
		us[i] = now_us() - t;
		if (npu_queue_destroy(fd, q))
			return -1;
	}
	return 0;
}

static void stats(double *us, int n, double *p50, double *mean)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += us[i];
	qsort(us, n, sizeof(us[0]), cmp);
	*p50 = us[n / 2];
	*mean = sum / n;
}

/* A: launches, and the churn while *churn_on, until killed. */
static void process_a(void)
{
	pthread_t th[CHURNERS + 1];
	int fd = npu_open();

	if (fd < 0 || pthread_create(&th[0], NULL, launches, &fd))
		_exit(1);
	for (int i = 1; i <= CHURNERS; i++)
		if (pthread_create(&th[i], NULL, churn, &fd))
			_exit(1);
	pause();
	_exit(0);
}

int main(void)
{
	static double us[2][ROUNDS * STARTS];
	double p50[2], mean[2];
	int fb, status, ret = 0;
	pid_t a;

	churn_on = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fb = npu_open();
	if (fb < 0 || churn_on == MAP_FAILED) {
		fprintf(stderr, "tlb_bench: no npu device\n");
		return 1;
	}
	a = fork();
	if (a == 0)
		process_a();
	usleep(300000);		/* A's launches under way */
	for (int r = 0; r < ROUNDS && !ret; r++) {
		for (int churning = 0; churning < 2 && !ret; churning++) {
			*churn_on = churning;
			usleep(100000);
			ret = starts(fb, &us[churning][r * STARTS]);
		}
	}
	kill(a, SIGKILL);
	waitpid(a, &status, 0);
	if (ret) {
		fprintf(stderr, "tlb_bench: a queue start failed\n");
		return 1;
	}
	for (int i = 0; i < 2; i++)
		stats(us[i], ROUNDS * STARTS, &p50[i], &mean[i]);
	printf("%-40s %10s %10s\n", "QUEUE_CREATE of another process", "p50 us", "mean us");
	printf("%-40s %10.0f %10.0f\n", "beside long launches", p50[0], mean[0]);
	printf("%-40s %10.0f %10.0f\n", "beside launches and mapping churn", p50[1], mean[1]);
	printf("%-40s %10.2f %10.2f   (goal <= 1.5x)\n", "ratio", p50[1] / p50[0],
	       mean[1] / mean[0]);
	close(fb);
	return 0;
}
