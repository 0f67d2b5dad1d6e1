// SPDX-License-Identifier: MIT
/*
 * NOP batches through ioctls and through io_uring commands, side by side
 * in one run: what each path costs per task and how long a task takes
 * from submission to its completion being seen.
 *
 *   ioctl, 1 queue        SUBMIT ioctl, then WAIT ioctl, one at a time
 *   io_uring, 1 queue     SUBMIT command, then its CQE, one at a time, on a
 *                         ring for one thread (SINGLE_ISSUER|DEFER_TASKRUN:
 *                         completions are posted when the thread waits)
 *   ... polled            the same, but the caller spins instead of
 *                         sleeping: WAIT with a time limit of 0 in a loop,
 *                         or looks at the CQ ring (no system call; on a
 *                         default ring, where the kernel interrupts the
 *                         spinning thread to post the CQE)
 *   ioctl, 4 threads      a thread per queue, each SUBMIT then WAIT: how
 *                         the ioctl path runs 4 queues at batch 1
 *   ioctl, 4 queues       one thread, W batches in flight per queue:
 *                         SUBMIT ioctls, WAIT ioctls for the oldest ones
 *   io_uring, 4 queues    W in flight per queue: every io_uring_enter()
 *                         submits the refills and reaps what completed
 *   libnpurt, 4 streams   4-byte memsets through the library, W in
 *                         flight per stream, NPURT_SUBMIT=ioctl vs io_uring
 *
 * Each pair runs alternately NPU_BENCH_REPS times (default 5) and the
 * median is shown. NPU_BENCH_TASKS: tasks per run (default 4000);
 * NPU_BENCH_WINDOW: W (default 16, at most 64).
 */
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "npu_selftest.h"
#include "npurt.h"
#include "bench.h"

#define QUEUES		4
#define WINDOW_MAX	64
#define MAX_TASKS	100000

struct result {
	double tasks_per_s;
	double p50_us, p99_us;
	double switches;	/* context switches per task, the system's */
};

static double lat[MAX_TASKS];

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void summarise(struct result *r, int n, double elapsed_us)
{
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp_double);
	r->tasks_per_s = n / elapsed_us * 1e6;
	r->p50_us = lat[n / 2];
	r->p99_us = lat[n * 99 / 100];
}

static struct drm_npu_task nop = { .type = DRM_NPU_TASK_NOP };

/* ioctl: n tasks over `queues` queues with `window` in flight on each. */
static int run_ioctl(int fd, const uint32_t *q, int queues, int window, int poll, int n,
		     struct result *r)
{
	double sent[QUEUES][WINDOW_MAX], t0 = now_us();
	uint64_t seqs[QUEUES][WINDOW_MAX];
	int head[QUEUES] = { 0 }, count[QUEUES] = { 0 }, done = 0, issued = 0;

	while (done < n) {
		for (int i = 0; i < queues; i++) {
			int slot;

			if (issued < n && count[i] < window) {
				slot = (head[i] + count[i]) % window;
				sent[i][slot] = now_us();
				if (npu_submit_on(fd, q[i], &nop, 1, &seqs[i][slot]))
					return -1;
				count[i]++;
				issued++;
				continue;
			}
			if (!count[i])
				continue;
			slot = head[i];
			for (;;) {
				int ret = npu_wait_on(fd, q[i], seqs[i][slot], poll ? 0 : -1, NULL);

				if (!ret)
					break;
				if (ret != -ETIMEDOUT)
					return -1;
			}
			lat[done++] = now_us() - sent[i][slot];
			head[i] = (head[i] + 1) % window;
			count[i]--;
		}
	}
	summarise(r, n, now_us() - t0);
	return 0;
}

static int prep_submit(struct io_uring *ring, int fd, uint32_t queue, uint64_t user_data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct drm_npu_submit *s;

	if (!sqe)
		return -1;
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DRM_NPU_URING_CMD_SUBMIT;
	sqe->user_data = user_data;
	s = (struct drm_npu_submit *)sqe->cmd;
	s->tasks = (uintptr_t)&nop;
	s->count = 1;
	s->queue = queue;
	return 0;
}

struct thread_arg {
	int fd, n;
	uint32_t q;
	struct result r;
	int ret;
	double *lat;
};

static void *ioctl_thread(void *p)
{
	struct thread_arg *a = p;
	uint64_t seq;

	for (int i = 0; i < a->n; i++) {
		double t = now_us();

		if (npu_submit_on(a->fd, a->q, &nop, 1, &seq) ||
		    npu_wait_on(a->fd, a->q, seq, -1, NULL)) {
			a->ret = -1;
			return NULL;
		}
		a->lat[i] = now_us() - t;
	}
	return NULL;
}

/* ioctl: a thread per queue, each submitting and waiting in turn. */
static int run_ioctl_threads(int fd, const uint32_t *q, int n, struct result *r)
{
	struct thread_arg a[QUEUES];
	pthread_t t[QUEUES];
	double t0 = now_us();
	int ret = 0;

	for (int i = 0; i < QUEUES; i++) {
		a[i] = (struct thread_arg){ .fd = fd, .n = n / QUEUES, .q = q[i],
					    .lat = lat + i * (n / QUEUES) };
		if (pthread_create(&t[i], NULL, ioctl_thread, &a[i]))
			return -1;
	}
	for (int i = 0; i < QUEUES; i++) {
		pthread_join(t[i], NULL);
		ret |= a[i].ret;
	}
	if (!ret)
		summarise(r, n / QUEUES * QUEUES, now_us() - t0);
	return ret;
}

/* io_uring: the same, each io_uring_enter() submitting and reaping. */
static int run_uring(struct io_uring *ring, int fd, const uint32_t *q, int queues,
		     int window, int poll, int n, struct result *r)
{
	static double sent[MAX_TASKS];
	int count[QUEUES] = { 0 }, done = 0, issued = 0;
	double t0 = now_us();

	while (done < n) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		for (int i = 0; i < queues; i++) {
			while (issued < n && count[i] < window) {
				sent[issued] = now_us();
				if (prep_submit(ring, fd, q[i], (uint64_t)issued << 8 | i))
					return -1;
				count[i]++;
				issued++;
			}
		}
		if (io_uring_submit_and_wait(ring, poll ? 0 : 1) < 0)
			return -1;
		/* Task work posts the CQE: the kernel interrupts the spin for it. */
		while (poll && !io_uring_cq_ready(ring))
			;
		io_uring_for_each_cqe(ring, head, cqe) {
			if (cqe->res)
				return -1;
			lat[done++] = now_us() - sent[cqe->user_data >> 8];
			count[cqe->user_data & 0xff]--;
			seen++;
		}
		io_uring_cq_advance(ring, seen);
	}
	summarise(r, n, now_us() - t0);
	return 0;
}

/* libnpurt: 4-byte memsets on 4 streams, on the path the environment forces. */
static int run_npurt(const char *path, int window, int n, struct result *r)
{
	npurt_stream *s[QUEUES] = { 0 };
	npurt_device *dev = NULL;
	npurt_mem *m = NULL;
	double t0;
	int ret = -1;

	setenv("NPURT_SUBMIT", path, 1);
	if (npurt_device_open(0, &dev) || npurt_mem_alloc(dev, 4096, &m))
		goto out;
	for (int i = 0; i < QUEUES; i++)
		if (npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s[i]))
			goto out;
	t0 = now_us();
	for (int k = 0; k < n / QUEUES; k++) {
		for (int i = 0; i < QUEUES; i++)
			if (npurt_memset_async(s[i], npurt_mem_device_addr(m) + 4 * i, k, 4))
				goto out;
		if (k % window == window - 1)
			for (int i = 0; i < QUEUES; i++)
				if (npurt_stream_synchronize(s[i]))
					goto out;
	}
	for (int i = 0; i < QUEUES; i++)
		if (npurt_stream_synchronize(s[i]))
			goto out;
	r->tasks_per_s = (n / QUEUES * QUEUES) / (now_us() - t0) * 1e6;
	r->p50_us = r->p99_us = 0;
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "uring_bench: libnpurt (%s): %s\n", path, npurt_last_error());
	for (int i = 0; i < QUEUES; i++)
		npurt_stream_destroy(s[i]);
	npurt_mem_free(m);
	npurt_device_close(dev);
	unsetenv("NPURT_SUBMIT");
	return ret;
}

static void row(const char *name, const struct result *r)
{
	if (r->p50_us)
		printf("%-38s %12.0f %10.1f %10.1f %9.2f\n", name, r->tasks_per_s, r->p50_us,
		       r->p99_us, r->switches);
	else
		printf("%-38s %12.0f %10s %10s %9.2f\n", name, r->tasks_per_s, "-", "-",
		       r->switches);
}

enum { IO1, UR1, IO1P, UR1P, IO4T, UR4, IO4, UR4B, IO4B, UR4SQ, LIBIO, LIBUR, MODES };

static struct io_uring sqpoll, spin;

static int run_mode(int mode, struct io_uring *ring, int fd, const uint32_t *q, int window,
		    int n, struct result *r)
{
	switch (mode) {
	case IO1: return run_ioctl(fd, q, 1, 1, 0, n, r);
	case UR1: return run_uring(ring, fd, q, 1, 1, 0, n, r);
	case IO1P: return run_ioctl(fd, q, 1, 1, 1, n, r);
	case UR1P: return run_uring(&spin, fd, q, 1, 1, 1, n, r);
	case IO4T: return run_ioctl_threads(fd, q, n, r);
	case IO4: return run_ioctl(fd, q, QUEUES, window, 0, n, r);
	case UR4:
	case UR4B: return run_uring(ring, fd, q, QUEUES, window, 0, n, r);
	case IO4B: return run_ioctl(fd, q, QUEUES, window, 0, n, r);
	case UR4SQ: return run_uring(&sqpoll, fd, q, QUEUES, window, 0, n, r);
	case LIBIO: return run_npurt("ioctl", window, n, r);
	default: return run_npurt("io_uring", window, n, r);
	}
}

static int cmp_result(const void *a, const void *b)
{
	const struct result *x = a, *y = b;

	return x->tasks_per_s < y->tasks_per_s ? -1 : x->tasks_per_s > y->tasks_per_s;
}

int main(void)
{
	static const char *const names[MODES] = {
		"ioctl submit + wait, 1 queue", "io_uring submit + CQE, 1 queue",
		"ioctl, 1 queue, polled", "io_uring, 1 queue, polled",
		"ioctl, 4 threads, submit + wait", "io_uring batched, 4 queues x W",
		"ioctl, 1 thread, 4 queues x W", "io_uring batched (again)",
		"ioctl, 1 thread, 4 queues x W (again)", "io_uring SQPOLL, 4 queues x W",
		"libnpurt ioctl, 4 streams (memset)", "libnpurt io_uring, 4 streams",
	};
	int n = npu_env("NPU_BENCH_TASKS") ? (int)npu_env("NPU_BENCH_TASKS") : 4000;
	int reps = npu_env("NPU_BENCH_REPS") ? (int)npu_env("NPU_BENCH_REPS") : 5;
	int window = npu_env("NPU_BENCH_WINDOW") ? (int)npu_env("NPU_BENCH_WINDOW") : 16;
	static struct result res[MODES][16];
	struct result med[MODES], warm;
	uint32_t q[QUEUES];
	struct io_uring ring;
	int fd = npu_open();

	n = n > MAX_TASKS ? MAX_TASKS : n;
	reps = reps < 1 ? 1 : reps > 16 ? 16 : reps;
	window = window < 1 ? 1 : window > WINDOW_MAX ? WINDOW_MAX : window;
	if (fd < 0 || io_uring_queue_init(256, &ring, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
					  IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN) ||
	    io_uring_queue_init(256, &spin, IORING_SETUP_SQE128 | IORING_SETUP_CQE32)) {
		fprintf(stderr, "uring_bench: no npu device or no io_uring\n");
		return 1;
	}
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
					      IORING_SETUP_SQPOLL, .sq_thread_idle = 50 };

	if (io_uring_queue_init_params(256, &sqpoll, &p)) {
		fprintf(stderr, "uring_bench: no SQPOLL ring\n");
		return 1;
	}
	for (int i = 0; i < QUEUES; i++)
		if (npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q[i])) {
			fprintf(stderr, "uring_bench: cannot create %d queues\n", QUEUES);
			return 1;
		}
	/* Warm up both paths; then each pair alternates, so drift hits both alike. */
	if (run_mode(IO1, &ring, fd, q, window, 200, &warm) ||
	    run_mode(UR1, &ring, fd, q, window, 200, &warm))
		goto fail;
	for (int pair = 0; pair < MODES; pair += 2)
		for (int r = 0; r < reps; r++)
			for (int m = pair; m < pair + 2; m++) {
				unsigned long long c = npu_ctxt_switches();

				if (run_mode(m, &ring, fd, q, window, n, &res[m][r]))
					goto fail;
				res[m][r].switches = (double)(npu_ctxt_switches() - c) / n;
			}
	for (int m = 0; m < MODES; m++) {
		qsort(res[m], (size_t)reps, sizeof(res[m][0]), cmp_result);
		med[m] = res[m][reps / 2];
	}

	printf("NOP tasks at batch 1, median of %d runs of %d tasks, W = %d\n", reps, n, window);
	printf("%-38s %12s %10s %10s %9s\n", "", "tasks/s", "p50 us", "p99 us", "switches");
	for (int m = 0; m < MODES; m++)
		row(names[m], &med[m]);
	printf("io_uring / ioctl: 1 queue %.2fx tasks/s, %.2fx p50 latency; polled %.2fx, %.2fx; "
	       "4 queues %.2fx tasks/s (vs the ioctl thread per queue), %.2fx (vs ioctl with W in flight), "
	       "SQPOLL %.2fx; libnpurt %.2fx\n",
	       med[UR1].tasks_per_s / med[IO1].tasks_per_s, med[UR1].p50_us / med[IO1].p50_us,
	       med[UR1P].tasks_per_s / med[IO1P].tasks_per_s, med[UR1P].p50_us / med[IO1P].p50_us,
	       med[UR4].tasks_per_s / med[IO4T].tasks_per_s,
	       med[UR4B].tasks_per_s / med[IO4].tasks_per_s,
	       med[UR4SQ].tasks_per_s / med[IO4B].tasks_per_s,
	       med[LIBUR].tasks_per_s / med[LIBIO].tasks_per_s);
	io_uring_queue_exit(&ring);
	io_uring_queue_exit(&spin);
	io_uring_queue_exit(&sqpoll);
	close(fd);
	return 0;
fail:
	fprintf(stderr, "uring_bench: a submit or wait failed\n");
	return 1;
}
