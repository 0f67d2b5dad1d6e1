/* SPDX-License-Identifier: MIT */
/* What every benchmark needs: one clock. */
#ifndef NPU_BENCH_H
#define NPU_BENCH_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: the clock the ratios are measured on. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double now_us(void)
{
	return now_s() * 1e6;
}

#endif /* NPU_BENCH_H */
