/* SPDX-License-Identifier: MIT */
/* npurun's timed runs (serve.c). */
#ifndef NPURUN_SERVE_H
#define NPURUN_SERVE_H

#include <stdbool.h>

#include "npurt.h"

/* The most runs --duration times, however long it is. */
#define SERVE_MAX_RUNS	1000000l

struct serve_plan {
	long runs;			/* how many, unless seconds > 0 */
	double seconds;			/* --duration: as many runs as fit */
	int concurrency;		/* 0: one at a time; N: a run loop of depth N */
	int32_t timeout_ms;		/* one at a time: a run's limit (-1: none) */
	const void *const *inputs;	/* the run loop's: the model's inputs, in order */
};

struct serve_result {
	double *lat;			/* each run's latency, us (free it) */
	long n;				/* runs done */
	double wall_us;			/* from the first submit to the last completion */
	long most_waiting;		/* requests pushed whose outputs had not come
					 * back yet, at most at once: up to depth + 1,
					 * the one a push waits with for a free set */
};

double serve_now_us(void);

/* Time the runs `p` asks for: 0, or 1 with the reason on stderr. */
int serve_runs(npurt_model *m, const struct serve_plan *p, struct serve_result *res);

#endif
