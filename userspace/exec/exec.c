// SPDX-License-Identifier: MIT
/*
 * Execution graphs (npurt.h, Documentation/executor.rst): nodes added
 * with relations, lowered once by npurt_exec_prepare() into what one
 * executor walks, so that a run costs a call per node and little else.
 *
 * Lowering orders every node once, sections first, then by relations,
 * priority and the order added (Kahn's algorithm over a heap); a node's
 * place in that order is then its identity for the executors: the
 * sequential one walks the order as a flat array, the topological one
 * keeps a ready set keyed by place (so the highest priority ready node is
 * the smallest key), the threaded one splits the order by thread and
 * precomputes, per node, how far the other thread must have got.
 *
 * Locking: none inside a graph; one caller at a time (npurt.h). The
 * threaded executor's two threads meet only at struct exec_sync.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"

#define EXEC_MAX_SUBS 8
/* Polls of the other thread's progress before sleeping on it. */
#define EXEC_SPINS 4000

struct exec_build {
	npurt_exec_fn fn;
	void *ctx;
	int32_t priority;
	uint8_t section;
	uint8_t thread;
};

struct exec_step {
	npurt_exec_fn fn;
	void *ctx;
};

/* Where the two threads of THREADED meet. */
struct exec_sync {
	_Atomic uint32_t done[2];	/* steps of each thread's list finished this run */
	_Atomic uint32_t gen;		/* runs started: the worker's go */
	_Atomic uint32_t finished;	/* runs the worker finished */
	_Atomic int stop;		/* a node failed, or the graph is going */
	_Atomic int sleepers;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

struct exec_list {			/* one thread's nodes, THREADED */
	struct exec_step *steps;
	uint32_t *ids;			/* node numbers, for subscribers */
	uint32_t *need;			/* the other thread's done count first needed */
	uint32_t n;
};

struct npurt_exec {
	struct exec_build *nodes;
	uint32_t n, cap;
	uint32_t (*rel)[2];
	uint64_t nrel, rel_cap;

	npurt_exec_subscriber subs[EXEC_MAX_SUBS];
	uint32_t nsubs;

	bool prepared, init_failed, running;
	npurt_executor executor;
	uint32_t sec_start[4];		/* places of each section in the order */
	struct exec_step *steps;	/* every node, by place */
	uint32_t *ids;			/* place -> node */

	/* TOPOLOGICAL, over MAIN's places relative to sec_start[MAIN] */
	uint32_t *succ_start, *succ;
	uint32_t *pending0, *pending, *heap;
	uint32_t *roots, nroots;

	/* THREADED */
	struct exec_list list[2];
	struct exec_sync sync;
	pthread_t worker;
	bool worker_started;
	npurt_status worker_status;
	char worker_msg[512];
};

npurt_status npurt_exec_create(npurt_exec **graph)
{
	npurt_exec *g;

	if (!graph)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_create: graph is NULL");
	g = calloc(1, sizeof(*g));
	if (!g)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_create: out of memory");
	if (npurt_handle_add(g, NPURT_KIND_EXEC, NULL, "npurt_exec_create")) {
		free(g);
		return NPURT_ERR_NO_MEMORY;
	}
	*graph = g;
	return NPURT_OK;
}

npurt_status npurt_exec_node(npurt_exec *g, const npurt_exec_node_desc *d, uint32_t *node)
{
	struct exec_build *b;

	if (npurt_handle_check(g, NPURT_KIND_EXEC, "npurt_exec_node"))
		return NPURT_ERR_INVALID;
	if (!g || !d || d->size < sizeof(*d) || !d->fn)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_node: %s",
				       !g ? "graph is NULL" : !d ? "desc is NULL" :
				       d->size < sizeof(*d) ? "desc->size too small" : "fn is NULL");
	if (d->section > NPURT_EXEC_DEINIT || d->thread > 1)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_node: %s %u (0 to %u)",
				       d->thread > 1 ? "thread" : "section",
				       d->thread > 1 ? d->thread : d->section,
				       d->thread > 1 ? 1 : NPURT_EXEC_DEINIT);
	if (g->prepared)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_node: the graph is prepared");
	if (g->n == g->cap) {
		/* Node numbers and places are 32 bits, with room for one past the last. */
		uint64_t want = g->cap ? (uint64_t)g->cap * 2 : 64;
		uint32_t cap = want > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)want;

		if (g->n >= UINT32_MAX - 1 || !(b = realloc(g->nodes, (size_t)cap * sizeof(*b))))
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_node: out of memory at %u nodes",
					       g->n);
		g->nodes = b;
		g->cap = cap;
	}
	g->nodes[g->n] = (struct exec_build){ d->fn, d->ctx, d->priority, (uint8_t)d->section,
					      (uint8_t)d->thread };
	if (node)
		*node = g->n;
	g->n++;
	return NPURT_OK;
}

npurt_status npurt_exec_order(npurt_exec *g, uint32_t before, uint32_t after)
{
	if (npurt_handle_check(g, NPURT_KIND_EXEC, "npurt_exec_order"))
		return NPURT_ERR_INVALID;
	if (!g)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_order: graph is NULL");
	if (g->prepared)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_order: the graph is prepared");
	if (before >= g->n || after >= g->n)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_order: no node %u (the graph has %u)",
				       before >= g->n ? before : after, g->n);
	if (before == after)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_order: node %u related to itself",
				       before);
	if (g->nodes[before].section != g->nodes[after].section)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "npurt_exec_order: nodes %u and %u are of sections %u and %u",
				       before, after, g->nodes[before].section, g->nodes[after].section);
	if (g->nrel == g->rel_cap) {
		uint64_t cap = g->rel_cap ? g->rel_cap * 2 : 256;
		void *p;

		/* The lowered arrays index relations with 32 bits. */
		if (g->nrel >= UINT32_MAX - 1 || !(p = realloc(g->rel, cap * sizeof(*g->rel))))
			return npurt_set_error(NPURT_ERR_NO_MEMORY,
					       "npurt_exec_order: out of memory at %llu relations",
					       (unsigned long long)g->nrel);
		g->rel = p;
		g->rel_cap = cap;
	}
	g->rel[g->nrel][0] = before;
	g->rel[g->nrel][1] = after;
	g->nrel++;
	return NPURT_OK;
}

npurt_status npurt_exec_subscribe(npurt_exec *g, const npurt_exec_subscriber *sub)
{
	if (npurt_handle_check(g, NPURT_KIND_EXEC, "npurt_exec_subscribe"))
		return NPURT_ERR_INVALID;
	if (!g || !sub || sub->size < sizeof(*sub))
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_subscribe: %s",
				       !g ? "graph is NULL" : !sub ? "subscriber is NULL" :
				       "sub->size too small");
	if (g->running)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_subscribe: the graph is running");
	if (g->nsubs == EXEC_MAX_SUBS)
		return npurt_set_error(NPURT_ERR_BUSY, "npurt_exec_subscribe: %d subscribers already",
				       EXEC_MAX_SUBS);
	g->subs[g->nsubs++] = *sub;
	return NPURT_OK;
}

npurt_status npurt_exec_count(npurt_exec *g, uint32_t *nodes, uint64_t *relations)
{
	if (npurt_handle_check(g, NPURT_KIND_EXEC, "npurt_exec_count"))
		return NPURT_ERR_INVALID;
	if (!g)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_count: graph is NULL");
	if (nodes)
		*nodes = g->n;
	if (relations)
		*relations = g->nrel;
	return NPURT_OK;
}

/* ---- lowering ------------------------------------------------------ */

/*
 * Kahn's ready set while lowering: a heap of (key, node), smallest first.
 * The key packs what decides between two ready nodes, section first,
 * then priority (higher first); equal keys go by node number.
 */
struct order_item {
	uint64_t key;
	uint32_t node;
};

static inline uint64_t order_key(const struct exec_build *b)
{
	return (uint64_t)b->section << 32 | (uint32_t)(INT32_MAX - (int64_t)b->priority);
}

static inline bool order_less(struct order_item a, struct order_item b)
{
	return a.key < b.key || (a.key == b.key && a.node < b.node);
}

static void order_push(struct order_item *h, uint32_t *n, struct order_item v)
{
	uint32_t i = (*n)++;

	while (i && order_less(v, h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static uint32_t order_pop(struct order_item *h, uint32_t *n)
{
	uint32_t top = h[0].node, i = 0;
	struct order_item v = h[--(*n)];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && order_less(h[c + 1], h[c]))
			c++;
		if (!order_less(h[c], v))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
	return top;
}

/*
 * Name a node on a cycle: each node left by Kahn's algorithm (left[v])
 * has a predecessor also left, so walking predecessors n times from any
 * of them ends on a cycle.
 */
static npurt_status exec_cycle(npurt_exec *g, const uint32_t *left)
{
	uint32_t *pred = malloc((size_t)g->n * sizeof(*pred));
	uint32_t v = UINT32_MAX;

	if (!pred)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "npurt_exec_prepare: the relations make a cycle");
	for (uint32_t i = 0; i < g->n; i++)
		pred[i] = UINT32_MAX;
	for (uint64_t r = 0; r < g->nrel; r++)
		if (left[g->rel[r][0]] && left[g->rel[r][1]]) {
			pred[g->rel[r][1]] = g->rel[r][0];
			v = g->rel[r][1];
		}
	for (uint32_t i = 0; i < g->n && v != UINT32_MAX; i++)
		v = pred[v];
	free(pred);
	return npurt_set_error(NPURT_ERR_INVALID,
			       "npurt_exec_prepare: the relations make a cycle through node %u", v);
}

/* Successors in compressed rows, over node numbers; NULL when out of memory. */
static uint32_t *exec_rows(const npurt_exec *g, uint32_t **start_out)
{
	uint32_t *start = calloc((size_t)g->n + 1, sizeof(*start));
	uint32_t *succ = malloc((g->nrel ? g->nrel : 1) * sizeof(*succ));

	if (!start || !succ) {
		free(start);
		free(succ);
		return NULL;
	}
	for (uint64_t r = 0; r < g->nrel; r++)
		start[g->rel[r][0] + 1]++;
	for (uint32_t i = 0; i < g->n; i++)
		start[i + 1] += start[i];
	for (uint64_t r = 0; r < g->nrel; r++)
		succ[start[g->rel[r][0]]++] = g->rel[r][1];
	/* The fill moved each start to the next row's; move them back. */
	for (uint32_t i = g->n; i > 0; i--)
		start[i] = start[i - 1];
	start[0] = 0;
	*start_out = start;
	return succ;
}

/* Order every node (g->ids, by place); the rows are over node numbers. */
static npurt_status exec_sort(npurt_exec *g, const uint32_t *start, const uint32_t *succ,
			      uint32_t *indeg)
{
	struct order_item *heap = malloc(((size_t)g->n + 1) * sizeof(*heap));
	uint32_t nh = 0, placed = 0;
	npurt_status st = NPURT_OK;

	if (!heap)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_prepare: out of memory");
	for (uint64_t r = 0; r < g->nrel; r++)
		indeg[g->rel[r][1]]++;
	for (uint32_t v = 0; v < g->n; v++)
		if (!indeg[v])
			order_push(heap, &nh, (struct order_item){ order_key(&g->nodes[v]), v });
	while (nh) {
		uint32_t v = order_pop(heap, &nh);

		g->ids[placed++] = v;
		for (uint32_t k = start[v]; k < start[v + 1]; k++) {
			uint32_t w = succ[k];

			if (!--indeg[w])
				order_push(heap, &nh, (struct order_item){ order_key(&g->nodes[w]), w });
		}
	}
	if (placed < g->n)
		st = exec_cycle(g, indeg);
	free(heap);
	return st;
}

/* The ready set's arrays over MAIN's places. */
static npurt_status exec_lower_topological(npurt_exec *g, const uint32_t *start,
					   const uint32_t *succ, const uint32_t *place)
{
	uint32_t m0 = g->sec_start[NPURT_EXEC_MAIN], n = g->sec_start[NPURT_EXEC_DEINIT] - m0;
	uint64_t e = 0;

	for (uint32_t p = 0; p < n; p++) {
		uint32_t v = g->ids[m0 + p];

		e += start[v + 1] - start[v];
	}
	g->succ_start = malloc(((size_t)n + 1) * sizeof(uint32_t));
	g->succ = malloc((e ? e : 1) * sizeof(uint32_t));
	g->pending0 = calloc(n ? n : 1, sizeof(uint32_t));
	g->pending = malloc((n ? n : 1) * sizeof(uint32_t));
	g->heap = malloc((n ? n : 1) * sizeof(uint32_t));
	g->roots = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!g->succ_start || !g->succ || !g->pending0 || !g->pending || !g->heap || !g->roots)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_prepare: out of memory");
	e = 0;
	for (uint32_t p = 0; p < n; p++) {
		uint32_t v = g->ids[m0 + p];

		g->succ_start[p] = (uint32_t)e;
		for (uint32_t k = start[v]; k < start[v + 1]; k++) {
			uint32_t q = place[succ[k]] - m0;

			g->succ[e++] = q;
			g->pending0[q]++;
		}
	}
	g->succ_start[n] = (uint32_t)e;
	/* Places ascending: already a heap. */
	g->nroots = 0;
	for (uint32_t p = 0; p < n; p++)
		if (!g->pending0[p])
			g->roots[g->nroots++] = p;
	return NPURT_OK;
}

static void *exec_worker(void *arg);

/* Each thread's list, and how far the other thread must be before each. */
static npurt_status exec_lower_threaded(npurt_exec *g, const uint32_t *place)
{
	uint32_t m0 = g->sec_start[NPURT_EXEC_MAIN], n = g->sec_start[NPURT_EXEC_DEINIT] - m0;
	uint32_t *tpos = malloc((n ? n : 1) * sizeof(*tpos));

	if (!tpos)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_prepare: out of memory");
	for (int t = 0; t < 2; t++) {
		struct exec_list *l = &g->list[t];

		l->steps = malloc((n ? n : 1) * sizeof(*l->steps));
		l->ids = malloc((n ? n : 1) * sizeof(*l->ids));
		l->need = calloc(n ? n : 1, sizeof(*l->need));
		if (!l->steps || !l->ids || !l->need) {
			free(tpos);
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_prepare: out of memory");
		}
	}
	for (uint32_t p = 0; p < n; p++) {
		uint32_t v = g->ids[m0 + p];
		struct exec_list *l = &g->list[g->nodes[v].thread];

		tpos[p] = l->n;
		l->steps[l->n] = g->steps[m0 + p];
		l->ids[l->n++] = v;
	}
	for (uint64_t r = 0; r < g->nrel; r++) {
		uint32_t u = g->rel[r][0], v = g->rel[r][1];
		uint32_t tu = g->nodes[u].thread, tv = g->nodes[v].thread;

		if (g->nodes[u].section != NPURT_EXEC_MAIN || tu == tv)
			continue;
		uint32_t *need = &g->list[tv].need[tpos[place[v] - m0]];
		uint32_t want = tpos[place[u] - m0] + 1;

		if (*need < want)
			*need = want;
	}
	/* What a node needs its successors on the same thread need too. */
	for (int t = 0; t < 2; t++)
		for (uint32_t k = 1; k < g->list[t].n; k++)
			if (g->list[t].need[k] < g->list[t].need[k - 1])
				g->list[t].need[k] = g->list[t].need[k - 1];
	free(tpos);
	pthread_mutex_init(&g->sync.lock, NULL);
	pthread_cond_init(&g->sync.cond, NULL);
	if (pthread_create(&g->worker, NULL, exec_worker, g)) {
		pthread_cond_destroy(&g->sync.cond);
		pthread_mutex_destroy(&g->sync.lock);
		return npurt_set_error(NPURT_ERR_NO_MEMORY,
				       "npurt_exec_prepare: cannot start the launch thread");
	}
	g->worker_started = true;
	return NPURT_OK;
}

static void exec_free_lowered(npurt_exec *g)
{
	free(g->steps);
	free(g->ids);
	free(g->succ_start);
	free(g->succ);
	free(g->pending0);
	free(g->pending);
	free(g->heap);
	free(g->roots);
	for (int t = 0; t < 2; t++) {
		free(g->list[t].steps);
		free(g->list[t].ids);
		free(g->list[t].need);
	}
	g->steps = NULL;
	g->ids = g->succ_start = g->succ = g->pending0 = g->pending = g->heap = g->roots = NULL;
	memset(g->list, 0, sizeof(g->list));
}

/* Run places [from, to) in order: INIT and DEINIT, whatever the executor. */
static npurt_status exec_run_range(npurt_exec *g, uint32_t from, uint32_t to, bool keep_going)
{
	npurt_status first = NPURT_OK;

	for (uint32_t p = from; p < to; p++) {
		npurt_status st = g->steps[p].fn(g->steps[p].ctx);

		if (st && !first)
			first = st;
		if (st && !keep_going)
			break;
	}
	return first;
}

npurt_status npurt_exec_prepare(npurt_exec *g, npurt_executor executor)
{
	uint32_t *start = NULL, *succ, *indeg, *place = NULL;
	npurt_status st;

	if (npurt_handle_check(g, NPURT_KIND_EXEC, "npurt_exec_prepare"))
		return NPURT_ERR_INVALID;
	if (!g)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_prepare: graph is NULL");
	if (executor > NPURT_EXECUTOR_THREADED)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_prepare: no executor %u",
				       (unsigned int)executor);
	if (g->prepared)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_prepare: prepared already");
	succ = exec_rows(g, &start);
	indeg = calloc((size_t)g->n + 1, sizeof(*indeg));
	g->ids = malloc(((size_t)g->n + 1) * sizeof(*g->ids));
	g->steps = malloc(((size_t)g->n + 1) * sizeof(*g->steps));
	place = malloc(((size_t)g->n + 1) * sizeof(*place));
	if (!succ || !indeg || !g->ids || !g->steps || !place) {
		st = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_exec_prepare: out of memory");
		goto out;
	}
	st = exec_sort(g, start, succ, indeg);
	if (st)
		goto out;
	memset(g->sec_start, 0, sizeof(g->sec_start));
	for (uint32_t p = 0; p < g->n; p++) {
		const struct exec_build *b = &g->nodes[g->ids[p]];

		place[g->ids[p]] = p;
		g->steps[p] = (struct exec_step){ b->fn, b->ctx };
		g->sec_start[b->section + 1]++;
	}
	for (int s = 1; s < 4; s++)
		g->sec_start[s] += g->sec_start[s - 1];
	g->executor = executor;
	if (executor == NPURT_EXECUTOR_TOPOLOGICAL)
		st = exec_lower_topological(g, start, succ, place);
	else if (executor == NPURT_EXECUTOR_THREADED)
		st = exec_lower_threaded(g, place);
	if (st)
		goto out;
	g->prepared = true;
	st = exec_run_range(g, 0, g->sec_start[NPURT_EXEC_MAIN], false);
	if (st) {
		g->init_failed = true;
		if (npurt_last_status() != st)
			npurt_set_error(st, "npurt_exec_prepare: an INIT node failed (%s)",
					npurt_status_name(st));
	}
out:
	if (st && !g->prepared)
		exec_free_lowered(g);
	free(start);
	free(succ);
	free(indeg);
	free(place);
	return st;
}

/* ---- running ------------------------------------------------------- */

static npurt_status exec_failed(npurt_status st, uint32_t node)
{
	if (npurt_last_status() != st)
		npurt_set_error(st, "npurt_exec_run: node %u failed (%s)", node, npurt_status_name(st));
	return st;
}

static inline void exec_before(const npurt_exec *g, uint32_t node)
{
	for (uint32_t i = 0; i < g->nsubs; i++)
		if (g->subs[i].before)
			g->subs[i].before(g->subs[i].arg, node);
}

static inline void exec_after(const npurt_exec *g, uint32_t node, npurt_status st)
{
	for (uint32_t i = 0; i < g->nsubs; i++)
		if (g->subs[i].after)
			g->subs[i].after(g->subs[i].arg, node, st);
}

static npurt_status exec_sequential(const npurt_exec *g)
{
	uint32_t m0 = g->sec_start[NPURT_EXEC_MAIN], m1 = g->sec_start[NPURT_EXEC_DEINIT];
	const struct exec_step *s = g->steps + m0, *end = g->steps + m1;

	if (!g->nsubs) {
		for (; s < end; s++) {
			npurt_status st = s->fn(s->ctx);

			if (__builtin_expect(st != NPURT_OK, 0))
				return exec_failed(st, g->ids[s - g->steps]);
		}
		return NPURT_OK;
	}
	for (; s < end; s++) {
		uint32_t node = g->ids[s - g->steps];
		npurt_status st;

		exec_before(g, node);
		st = s->fn(s->ctx);
		exec_after(g, node, st);
		if (st)
			return exec_failed(st, node);
	}
	return NPURT_OK;
}

static npurt_status exec_topological(npurt_exec *g)
{
	uint32_t m0 = g->sec_start[NPURT_EXEC_MAIN], n = g->sec_start[NPURT_EXEC_DEINIT] - m0;
	const struct exec_step *steps = g->steps + m0;
	uint32_t *pending = g->pending, *h = g->heap, nh = g->nroots;
	const uint32_t *start = g->succ_start, *succ = g->succ;
	bool subs = g->nsubs;

	memcpy(pending, g->pending0, (size_t)n * sizeof(*pending));
	memcpy(h, g->roots, (size_t)nh * sizeof(*h));
	while (nh) {
		uint32_t p = h[0], v = h[--nh], i = 0;
		npurt_status st;

		/* Pop the smallest place: the highest priority ready node. */
		for (;;) {
			uint32_t c = 2 * i + 1;

			if (c >= nh)
				break;
			if (c + 1 < nh && h[c + 1] < h[c])
				c++;
			if (h[c] >= v)
				break;
			h[i] = h[c];
			i = c;
		}
		if (nh)
			h[i] = v;
		if (subs)
			exec_before(g, g->ids[m0 + p]);
		st = steps[p].fn(steps[p].ctx);
		if (subs)
			exec_after(g, g->ids[m0 + p], st);
		if (__builtin_expect(st != NPURT_OK, 0))
			return exec_failed(st, g->ids[m0 + p]);
		for (uint32_t k = start[p]; k < start[p + 1]; k++) {
			uint32_t q = succ[k], j;

			if (--pending[q])
				continue;
			for (j = nh++; j && q < h[(j - 1) / 2]; j = (j - 1) / 2)
				h[j] = h[(j - 1) / 2];
			h[j] = q;
		}
	}
	return NPURT_OK;
}

/* A polling loop's hint to the core that it spins. */
static inline void exec_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Wake whoever sleeps in exec_wait(). */
static void exec_wake(struct exec_sync *s)
{
	if (atomic_load(&s->sleepers)) {
		pthread_mutex_lock(&s->lock);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
}

/*
 * Wait until *v reaches `want` (or stop, when `stoppable`): poll a while,
 * then sleep. The store a waker makes and its check of sleepers, and a
 * sleeper's count and its check of *v, are both sequentially consistent:
 * one of the two sees the other.
 */
static bool exec_wait(struct exec_sync *s, _Atomic uint32_t *v, uint32_t want, bool stoppable)
{
	for (int i = 0; i < EXEC_SPINS; i++) {
		if (atomic_load_explicit(v, memory_order_acquire) >= want)
			return true;
		if (stoppable && atomic_load_explicit(&s->stop, memory_order_relaxed))
			return false;
		exec_relax();
	}
	atomic_fetch_add(&s->sleepers, 1);
	pthread_mutex_lock(&s->lock);
	while (atomic_load(v) < want && !(stoppable && atomic_load(&s->stop)))
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_sub(&s->sleepers, 1);
	return atomic_load(v) >= want;
}

/* Walk thread t's list; NPURT_OK, the failure of one of its nodes, or -1: stopped. */
static int exec_walk(npurt_exec *g, int t)
{
	const struct exec_list *l = &g->list[t];
	struct exec_sync *s = &g->sync;
	uint32_t seen = 0;

	for (uint32_t k = 0; k < l->n; k++) {
		npurt_status st;

		if (l->need[k] > seen) {
			if (!exec_wait(s, &s->done[!t], l->need[k], true))
				return -1;
			seen = atomic_load_explicit(&s->done[!t], memory_order_acquire);
		}
		if (atomic_load_explicit(&s->stop, memory_order_relaxed))
			return -1;
		if (g->nsubs)
			exec_before(g, l->ids[k]);
		st = l->steps[k].fn(l->steps[k].ctx);
		if (g->nsubs)
			exec_after(g, l->ids[k], st);
		if (st) {
			exec_failed(st, l->ids[k]);
			atomic_store(&s->stop, 1);
			exec_wake(s);
			return st;
		}
		atomic_store(&s->done[t], k + 1);
		exec_wake(s);
	}
	return NPURT_OK;
}

static void *exec_worker(void *arg)
{
	npurt_exec *g = arg;
	struct exec_sync *s = &g->sync;

	for (uint32_t gen = 1;; gen++) {
		int st;

		exec_wait(s, &s->gen, gen, false);
		if (atomic_load(&s->stop) == 2)
			return NULL;
		st = exec_walk(g, 1);
		g->worker_status = st > 0 ? (npurt_status)st : NPURT_OK;
		if (st > 0)
			snprintf(g->worker_msg, sizeof(g->worker_msg), "%s", npurt_last_error());
		atomic_store(&s->finished, gen);
		exec_wake(s);
	}
}

static npurt_status exec_threaded(npurt_exec *g)
{
	struct exec_sync *s = &g->sync;
	uint32_t gen = atomic_load(&s->gen) + 1;
	int st;

	atomic_store(&s->done[0], 0);
	atomic_store(&s->done[1], 0);
	atomic_store(&s->stop, 0);
	g->worker_status = NPURT_OK;
	atomic_store(&s->gen, gen);
	exec_wake(s);
	st = exec_walk(g, 0);
	exec_wait(s, &s->finished, gen, false);
	if (st > 0)
		return (npurt_status)st;
	if (g->worker_status)
		return npurt_set_error(g->worker_status, "%s", g->worker_msg);
	return NPURT_OK;
}

npurt_status npurt_exec_run(npurt_exec *g)
{
	npurt_status st;

	if (npurt_handle_check(g, NPURT_KIND_EXEC, "npurt_exec_run"))
		return NPURT_ERR_INVALID;
	if (!g)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_run: graph is NULL");
	if (!g->prepared || g->init_failed || g->running)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_exec_run: %s",
				       !g->prepared ? "the graph is not prepared" :
				       g->init_failed ? "its INIT failed" :
				       "the graph is running (a node ran its own graph)");
	g->running = true;
	for (uint32_t i = 0; i < g->nsubs; i++)
		if (g->subs[i].run)
			g->subs[i].run(g->subs[i].arg, true, NPURT_OK);
	if (g->executor == NPURT_EXECUTOR_SEQUENTIAL)
		st = exec_sequential(g);
	else if (g->executor == NPURT_EXECUTOR_TOPOLOGICAL)
		st = exec_topological(g);
	else
		st = exec_threaded(g);
	for (uint32_t i = 0; i < g->nsubs; i++)
		if (g->subs[i].run)
			g->subs[i].run(g->subs[i].arg, false, st);
	g->running = false;
	return st;
}

void npurt_exec_destroy(npurt_exec *g)
{
	/* NULL is a no-op; a graph destroyed already is said, and not read. */
	if (!g || npurt_handle_take(g, NPURT_KIND_EXEC, "npurt_exec_destroy"))
		return;
	if (g->worker_started) {
		atomic_store(&g->sync.stop, 2);
		atomic_fetch_add(&g->sync.gen, 1);
		pthread_mutex_lock(&g->sync.lock);
		pthread_cond_broadcast(&g->sync.cond);
		pthread_mutex_unlock(&g->sync.lock);
		pthread_join(g->worker, NULL);
		pthread_cond_destroy(&g->sync.cond);
		pthread_mutex_destroy(&g->sync.lock);
	}
	if (g->prepared)
		exec_run_range(g, g->sec_start[NPURT_EXEC_DEINIT], g->n, true);
	exec_free_lowered(g);
	free(g->nodes);
	free(g->rel);
	free(g);
}
