// SPDX-License-Identifier: MIT
/*
 * npurun's timed runs: one at a time (each run submitted and waited for),
 * or through a run loop with --concurrency runs in flight, as a server
 * keeps them; for a count of runs or for --duration seconds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

double serve_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The loop's requests: when each was pushed, then its latency; the first failure. */
struct loop_state {
	double *lat;
	pthread_mutex_t lock;
	long done;
	npurt_status st;
	char why[256];
};

static void loop_done(void *user, uint64_t tag, npurt_status st, void *const *outputs)
{
	struct loop_state *ls = user;
	double now = serve_now_us();

	(void)outputs;
	pthread_mutex_lock(&ls->lock);
	ls->lat[tag] = now - ls->lat[tag];
	ls->done++;
	/* The loop's thread's message, if it left one there; the status's name else. */
	if (st && !ls->st) {
		ls->st = st;
		snprintf(ls->why, sizeof(ls->why), "%s", npurt_last_error()[0] ?
			 npurt_last_error() : npurt_status_name(st));
	}
	pthread_mutex_unlock(&ls->lock);
}

static bool more(long r, const struct serve_plan *p, double t0)
{
	if (p->seconds > 0)
		return r < SERVE_MAX_RUNS && serve_now_us() - t0 < p->seconds * 1e6;
	return r < p->runs;
}

static int serve_sync(npurt_model *m, const struct serve_plan *p, struct serve_result *res)
{
	double t0 = serve_now_us();
	long r;

	for (r = 0; more(r, p, t0); r++) {
		double t = serve_now_us();

		if (npurt_model_execute(m, p->timeout_ms)) {
			fprintf(stderr, "npurun: run %ld: %s\n", r + 1, npurt_last_error());
			return 1;
		}
		res->lat[r] = serve_now_us() - t;
	}
	res->most_waiting = r ? 1 : 0;
	res->n = r;
	res->wall_us = serve_now_us() - t0;
	return 0;
}

static int serve_loop(npurt_model *m, const struct serve_plan *p, struct serve_result *res)
{
	struct loop_state ls = { .lat = res->lat, .lock = PTHREAD_MUTEX_INITIALIZER };
	npurt_runloop_desc d = { .size = sizeof(d), .depth = (uint32_t)p->concurrency,
				 .done = loop_done, .user = &ls };
	npurt_runloop *loop;
	double t0;
	long r;

	if (npurt_runloop_start(m, &d, &loop)) {
		fprintf(stderr, "npurun: --concurrency %d: %s\n", p->concurrency,
			npurt_last_error());
		return 1;
	}
	t0 = serve_now_us();
	for (r = 0; more(r, p, t0); r++) {
		pthread_mutex_lock(&ls.lock);
		/* A failed run ends it: a broken device would fail the rest of -t alike. */
		if (ls.st) {
			pthread_mutex_unlock(&ls.lock);
			break;
		}
		res->lat[r] = serve_now_us();	/* loop_done turns it into the latency */
		/* This one and those pushed before it that are not done yet. */
		if (r + 1 - ls.done > res->most_waiting)
			res->most_waiting = r + 1 - ls.done;
		pthread_mutex_unlock(&ls.lock);
		if (npurt_runloop_push(loop, p->inputs, (uint64_t)r)) {
			fprintf(stderr, "npurun: run %ld: %s\n", r + 1, npurt_last_error());
			npurt_runloop_stop(loop);
			return 1;
		}
	}
	/* Every request pushed is run and handed back before stop returns. */
	npurt_runloop_stop(loop);
	res->n = r;
	res->wall_us = serve_now_us() - t0;
	if (ls.st) {
		fprintf(stderr, "npurun: a run failed: %s\n", ls.why);
		return 1;
	}
	return 0;
}

int serve_runs(npurt_model *m, const struct serve_plan *p, struct serve_result *res)
{
	long cap = p->seconds > 0 ? SERVE_MAX_RUNS : p->runs;

	memset(res, 0, sizeof(*res));
	/* calloc maps untouched pages lazily: a long --duration's array costs what it uses. */
	res->lat = calloc((size_t)cap, sizeof(*res->lat));
	if (!res->lat) {
		fprintf(stderr, "npurun: out of memory\n");
		return 1;
	}
	return p->concurrency > 0 ? serve_loop(m, p, res) : serve_sync(m, p, res);
}
