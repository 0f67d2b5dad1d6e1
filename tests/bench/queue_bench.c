// SPDX-License-Identifier: MIT
/*
 * NOP tasks through NPU_SUBMIT and NPU_WAIT: what the submission path
 * costs when the device has nothing to do.
 *
 *   batch 1, wait each       latency of one submit + wait round trip
 *   batch 1, pipelined       submits back to back, one wait at the end
 *   batch 64, wait each      64 tasks per submit
 *
 * Beside the rates, the context switches per submit (the whole system's,
 * from /proc/stat): what a submission path costs in wakeups shows there
 * even when the machine is too loaded for rates to compare.
 */
#include <stdio.h>
#include <time.h>

#include "npu_selftest.h"
#include "bench.h"

/*
 * `rounds` submits of `batch` NOPs; waits each round or only at the end.
 * Context switches per submit go to *sw.
 */
static double run(int fd, int rounds, uint32_t batch, int wait_each, double *lat_us,
		  double *sw)
{
	static struct drm_npu_task nops[64];
	unsigned long long c = npu_ctxt_switches();
	uint64_t seq = 0;
	double t = now_s();

	for (int r = 0; r < rounds; r++) {
		if (npu_submit(fd, nops, batch, &seq) ||
		    (wait_each && npu_wait(fd, seq, -1, NULL)))
			return -1;
	}
	if (npu_wait(fd, seq, -1, NULL))
		return -1;
	t = now_s() - t;
	*sw = (double)(npu_ctxt_switches() - c) / rounds;
	if (lat_us)
		*lat_us = t / rounds * 1e6;
	return rounds * batch / t;
}

int main(void)
{
	double lat = 0, b1, p1, b64, sw, swb1, swp1, swb64;
	int fd = npu_open();

	if (fd < 0 || run(fd, 50, 1, 1, NULL, &sw) < 0) {	/* warm up: creates the queue */
		fprintf(stderr, "queue_bench: no npu device\n");
		return 1;
	}
	b1 = run(fd, 2000, 1, 1, &lat, &swb1);
	p1 = run(fd, 2000, 1, 0, NULL, &swp1);
	b64 = run(fd, 200, 64, 1, NULL, &swb64);
	if (b1 < 0 || p1 < 0 || b64 < 0) {
		fprintf(stderr, "queue_bench: submit or wait failed\n");
		return 1;
	}
	printf("%-30s %14s %10s %12s\n", "NOP tasks", "tasks/s", "x batch 1", "switches");
	printf("%-30s %14.0f %10.2f %12.2f   (submit+wait %.1f us)\n", "batch 1, wait each",
	       b1, 1.0, swb1, lat);
	printf("%-30s %14.0f %10.2f %12.2f\n", "batch 1, pipelined", p1, p1 / b1, swp1);
	printf("%-30s %14.0f %10.2f %12.2f\n", "batch 64, wait each", b64, b64 / b1, swb64);
	printf("(switches: the system's context switches per submit)\n");
	close(fd);
	return 0;
}
