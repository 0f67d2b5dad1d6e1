// SPDX-License-Identifier: MIT
/*
 * Execution graphs' own cost (userspace/exec/exec.c): a graph of 100,000
 * nodes whose functions cost nothing, each node after 10 of the 64 before
 * it (1,000,000 relations, as a lowered model's free-to-launch relations
 * run): the time to prepare it, and the host's nanoseconds per node for
 * each executor and for one attached subscriber, best of the runs. The
 * anchor is seed 001's executor: 6.3 ms to prepare such a graph, 33 ns for
 * a node's event.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../bench.h"
#include "npurt.h"

#define NODES	100000u
#define PREDS	10u
#define WINDOW	64u
#define RUNS	30

static volatile uint64_t calls;

static npurt_status nothing(void *ctx)
{
	(void)ctx;
	calls++;
	return NPURT_OK;
}

static void sub_node(void *arg, uint32_t node)
{
	(void)node;
	(*(volatile uint64_t *)arg)++;
}

static void sub_after(void *arg, uint32_t node, npurt_status st)
{
	(void)node;
	(void)st;
	(*(volatile uint64_t *)arg)++;
}

/* The graph, with `threads` nodes spread over both threads; build and prepare times out. */
static npurt_exec *build(npurt_executor ex, bool sub, double *build_ms, double *prep_ms,
			 uint64_t *relations)
{
	static uint64_t seen;
	npurt_exec_subscriber s = { .size = sizeof(s), .before = sub_node, .after = sub_after,
				    .arg = (void *)&seen };
	unsigned int seed = 1;
	npurt_exec *g;
	double t0 = now_s(), t1;

	if (npurt_exec_create(&g))
		return NULL;
	for (uint32_t i = 0; i < NODES; i++) {
		npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN,
					   .fn = nothing, .thread = (i / 64) % 2 };

		if (npurt_exec_node(g, &d, NULL))
			goto fail;
		for (uint32_t k = 0; k < PREDS && k < i; k++) {
			uint32_t back = 1 + rand_r(&seed) % (i < WINDOW ? i : WINDOW);

			if (npurt_exec_order(g, i - back, i))
				goto fail;
		}
	}
	if (sub && npurt_exec_subscribe(g, &s))
		goto fail;
	t1 = now_s();
	if (npurt_exec_prepare(g, ex))
		goto fail;
	*prep_ms = (now_s() - t1) * 1e3;
	*build_ms = (t1 - t0) * 1e3;
	npurt_exec_count(g, NULL, relations);
	return g;
fail:
	fprintf(stderr, "exec_bench: %s\n", npurt_last_error());
	npurt_exec_destroy(g);
	return NULL;
}

/* Best ns per node over RUNS runs. */
static double per_node(npurt_exec *g)
{
	double best = 1e30;

	for (int r = 0; r < RUNS; r++) {
		double t0 = now_s();

		if (npurt_exec_run(g)) {
			fprintf(stderr, "exec_bench: %s\n", npurt_last_error());
			return -1;
		}
		t0 = now_s() - t0;
		if (t0 < best)
			best = t0;
	}
	return best * 1e9 / NODES;
}

int main(void)
{
	static const struct {
		const char *name;
		npurt_executor ex;
		bool sub;
		const char *goal;
	} rows[] = {
		{ "sequential", NPURT_EXECUTOR_SEQUENTIAL, false, "<= 20" },
		{ "sequential + 1 subscriber", NPURT_EXECUTOR_SEQUENTIAL, true, "" },
		{ "topological", NPURT_EXECUTOR_TOPOLOGICAL, false, "<= 100" },
		{ "topological + 1 subscriber", NPURT_EXECUTOR_TOPOLOGICAL, true, "" },
		{ "threaded (2 threads)", NPURT_EXECUTOR_THREADED, false, "" },
	};
	double ns[5];
	uint64_t rel = 0;

	printf("%u nodes that cost nothing, %u relations each (from the %u before)\n", NODES,
	       PREDS, WINDOW);
	printf("%-28s %10s %10s %10s %8s\n", "executor", "build ms", "prepare ms", "ns/node",
	       "goal");
	for (unsigned int i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double b, p;
		npurt_exec *g = build(rows[i].ex, rows[i].sub, &b, &p, &rel);

		if (!g)
			return 1;
		ns[i] = per_node(g);
		npurt_exec_destroy(g);
		if (ns[i] < 0)
			return 1;
		printf("%-28s %10.2f %10.2f %10.2f %8s\n", rows[i].name, b, p, ns[i], rows[i].goal);
	}
	printf("relations: %llu; anchor (seed 001): prepare 6.3 ms, 33 ns per node's event\n",
	       (unsigned long long)rel);
	printf("one subscriber costs: sequential %.2f ns/node, topological %.2f ns/node\n",
	       ns[1] - ns[0], ns[3] - ns[2]);
	return 0;
}
