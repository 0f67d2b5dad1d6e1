// SPDX-License-Identifier: MIT
/*
 * Execution graphs (userspace/exec/exec.c) on the host: every executor
 * keeps every relation and the priorities, INIT and DEINIT run once, a
 * failing node stops its run with its message (from either thread of the
 * threaded executor), cycles and bad arguments are refused with nothing
 * changed, subscribers see each node, and graphs nest (an If's branch).
 * Also built with -fsanitize=address,undefined (build/tests/unit-san/).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kselftest_harness.h"
#include "npurt.h"

#define MAXN 4096

/* What the nodes of one test record. */
struct trace {
	_Atomic uint32_t clock;
	uint32_t at[MAXN];		/* when each node ran: clock + 1 */
	uint32_t runs[MAXN];
	pthread_t thread[MAXN];
	int fail;			/* this node returns NPURT_ERR_DEVICE (-1: none) */
};

struct nctx {
	struct trace *t;
	uint32_t id;
};

static struct trace *trace_new(void)
{
	struct trace *t = calloc(1, sizeof(*t));

	t->fail = -1;
	return t;
}

static npurt_status visit(void *arg)
{
	struct nctx *c = arg;

	c->t->at[c->id] = atomic_fetch_add(&c->t->clock, 1) + 1;
	c->t->runs[c->id]++;
	c->t->thread[c->id] = pthread_self();
	if ((int)c->id == c->t->fail)
		return npurt_set_error(NPURT_ERR_DEVICE, "test node %u failed", c->id);
	return NPURT_OK;
}

/* A random DAG of n MAIN nodes, each after up to 4 of the 16 before it. */
static void random_dag(struct __test_metadata *_metadata, npurt_exec *g, struct nctx *ctx,
		       struct trace *t, uint32_t n, unsigned int seed, bool two_threads,
		       uint32_t (*rel)[2], uint32_t *nrel)
{
	*nrel = 0;
	for (uint32_t i = 0; i < n; i++) {
		npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = visit,
					   .ctx = &ctx[i], .priority = (int32_t)(rand_r(&seed) % 3),
					   .thread = two_threads ? rand_r(&seed) % 2 : 0 };
		uint32_t id;

		ctx[i] = (struct nctx){ t, i };
		ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, &id));
		ASSERT_EQ(i, id);
		for (int k = 0; i && k < 4; k++) {
			uint32_t b = i - 1 - rand_r(&seed) % (i < 16 ? i : 16);

			ASSERT_EQ(NPURT_OK, npurt_exec_order(g, b, i));
			rel[*nrel][0] = b;
			rel[(*nrel)++][1] = i;
		}
	}
}

#define ADD_FAILURE_AT(node, failing) do { \
	TH_LOG("node %d ran %u times with node %d failing", node, self->t->runs[node], failing); \
	_metadata->passed = 0; \
} while (0)

static void every_relation_kept(struct __test_metadata *_metadata, const struct trace *t,
				uint32_t n, uint32_t (*rel)[2], uint32_t nrel)
{
	for (uint32_t i = 0; i < n; i++)
		ASSERT_EQ(1, t->runs[i]);
	for (uint32_t r = 0; r < nrel; r++)
		ASSERT_LT(t->at[rel[r][0]], t->at[rel[r][1]]);
}

FIXTURE(exec) {
	struct trace *t;
	struct nctx *ctx;
	uint32_t (*rel)[2];
};

FIXTURE_SETUP(exec)
{
	self->t = trace_new();
	self->ctx = calloc(MAXN, sizeof(*self->ctx));
	self->rel = calloc(MAXN * 4, sizeof(*self->rel));
}

FIXTURE_TEARDOWN(exec)
{
	free(self->t);
	free(self->ctx);
	free(self->rel);
}

FIXTURE_VARIANT(exec) {
	npurt_executor executor;
};

FIXTURE_VARIANT_ADD(exec, sequential) { .executor = NPURT_EXECUTOR_SEQUENTIAL };
FIXTURE_VARIANT_ADD(exec, topological) { .executor = NPURT_EXECUTOR_TOPOLOGICAL };
FIXTURE_VARIANT_ADD(exec, threaded) { .executor = NPURT_EXECUTOR_THREADED };

TEST_F(exec, a_random_graph_keeps_every_relation_run_after_run)
{
	bool threads = variant->executor == NPURT_EXECUTOR_THREADED;
	npurt_exec *g;
	uint32_t nrel;

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	random_dag(_metadata, g, self->ctx, self->t, 3000, 7, threads, self->rel, &nrel);
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	for (int run = 0; run < 3; run++) {
		memset(self->t->runs, 0, sizeof(self->t->runs));
		ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
		every_relation_kept(_metadata, self->t, 3000, self->rel, nrel);
	}
	if (threads) {
		/* Thread 1's nodes ran on the graph's thread, thread 0's on ours. */
		int ours = 0, other = 0;

		for (uint32_t i = 0; i < 3000; i++)
			pthread_equal(self->t->thread[i], pthread_self()) ? ours++ : other++;
		EXPECT_GT(ours, 1000);
		EXPECT_GT(other, 1000);
	}
	npurt_exec_destroy(g);
}

/* Without relations, priority decides; between equals, the order added. */
TEST_F(exec, ready_nodes_run_by_priority_then_order_added)
{
	static const int32_t prio[6] = { 0, 5, 0, 5, -1, 9 };
	static const uint32_t want[6] = { 5, 1, 3, 0, 2, 4 };
	npurt_exec *g;

	if (variant->executor == NPURT_EXECUTOR_THREADED)
		SKIP(return, "two threads order only by relations");
	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	for (uint32_t i = 0; i < 6; i++) {
		npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = visit,
					   .ctx = &self->ctx[i], .priority = prio[i] };

		self->ctx[i] = (struct nctx){ self->t, i };
		ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
	}
	/* 5 before 3 whatever their priorities: 3 waits; 1 (priority 5) is next. */
	ASSERT_EQ(NPURT_OK, npurt_exec_order(g, 5, 3));
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	for (uint32_t k = 0; k < 6; k++)
		EXPECT_EQ(k + 1, self->t->at[want[k]]);
	npurt_exec_destroy(g);
}

TEST_F(exec, init_runs_at_prepare_and_deinit_at_destroy_once)
{
	npurt_exec *g;
	uint32_t ids[3];

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	/* Added out of section order on purpose. */
	for (uint32_t i = 0; i < 3; i++) {
		static const uint32_t sec[3] = { NPURT_EXEC_DEINIT, NPURT_EXEC_MAIN, NPURT_EXEC_INIT };
		npurt_exec_node_desc d = { .size = sizeof(d), .section = sec[i], .fn = visit,
					   .ctx = &self->ctx[i] };

		self->ctx[i] = (struct nctx){ self->t, i };
		ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, &ids[i]));
	}
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	EXPECT_EQ(1, self->t->runs[2]);
	EXPECT_EQ(0, self->t->runs[1]);
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	EXPECT_EQ(2, self->t->runs[1]);
	EXPECT_EQ(0, self->t->runs[0]);
	EXPECT_EQ(1, self->t->runs[2]);
	npurt_exec_destroy(g);
	EXPECT_EQ(1, self->t->runs[0]);
	EXPECT_EQ(4, self->t->at[0]);
}

TEST_F(exec, a_failing_init_fails_prepare_and_deinit_still_runs)
{
	npurt_exec *g;

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	for (uint32_t i = 0; i < 3; i++) {
		npurt_exec_node_desc d = { .size = sizeof(d), .section = i, .fn = visit,
					   .ctx = &self->ctx[i] };

		self->ctx[i] = (struct nctx){ self->t, i };
		ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
	}
	self->t->fail = 0;
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_exec_prepare(g, variant->executor));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "test node 0"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_run(g));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "INIT failed"));
	EXPECT_EQ(0, self->t->runs[1]);
	npurt_exec_destroy(g);
	EXPECT_EQ(1, self->t->runs[2]);
}

/* A chain over both threads: the failing node's successors never start. */
TEST_F(exec, a_failing_node_stops_its_run_with_its_message)
{
	npurt_exec *g;

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	for (uint32_t i = 0; i < 40; i++) {
		npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = visit,
					   .ctx = &self->ctx[i], .thread = (i / 3) % 2 };

		self->ctx[i] = (struct nctx){ self->t, i };
		ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
		if (i)
			ASSERT_EQ(NPURT_OK, npurt_exec_order(g, i - 1, i));
	}
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	/* Node 16 is thread 1's under THREADED: the message crosses threads. */
	for (int fail = 16; fail >= 9; fail -= 7) {
		memset(self->t->runs, 0, sizeof(self->t->runs));
		self->t->fail = fail;
		npurt_error_clear();
		EXPECT_EQ(NPURT_ERR_DEVICE, npurt_exec_run(g));
		EXPECT_NE(NULL, strstr(npurt_last_error(), fail == 16 ? "test node 16" : "test node 9"));
		for (int i = 0; i < 40; i++)
			if (self->t->runs[i] != (i <= fail))
				ADD_FAILURE_AT(i, fail);
	}
	/* And the next run starts afresh. */
	self->t->fail = -1;
	memset(self->t->runs, 0, sizeof(self->t->runs));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	for (int i = 0; i < 40; i++)
		EXPECT_EQ(1, self->t->runs[i]);
	npurt_exec_destroy(g);
}

struct counts {
	uint32_t before, after, begin, end, failed;
	npurt_status last;
	_Atomic uint32_t nodes;
};

static void sub_before(void *arg, uint32_t node)
{
	struct counts *c = arg;

	(void)node;
	atomic_fetch_add(&c->nodes, 1);
	__atomic_fetch_add(&c->before, 1, __ATOMIC_RELAXED);
}

static void sub_after(void *arg, uint32_t node, npurt_status st)
{
	struct counts *c = arg;

	(void)node;
	__atomic_fetch_add(&c->after, 1, __ATOMIC_RELAXED);
	if (st)
		c->failed++;
}

static void sub_run(void *arg, bool begin, npurt_status st)
{
	struct counts *c = arg;

	begin ? c->begin++ : c->end++;
	if (!begin)
		c->last = st;
}

TEST_F(exec, subscribers_see_each_node_and_each_run)
{
	struct counts c = { 0 }, d = { 0 };
	npurt_exec_subscriber s = { .size = sizeof(s), .before = sub_before, .after = sub_after,
				    .run = sub_run, .arg = &c };
	npurt_exec_subscriber only_runs = { .size = sizeof(s), .run = sub_run, .arg = &d };
	npurt_exec *g;
	uint32_t nrel;

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	random_dag(_metadata, g, self->ctx, self->t, 500, 3,
		   variant->executor == NPURT_EXECUTOR_THREADED, self->rel, &nrel);
	ASSERT_EQ(NPURT_OK, npurt_exec_subscribe(g, &s));
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	ASSERT_EQ(NPURT_OK, npurt_exec_subscribe(g, &only_runs));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	EXPECT_EQ(500, c.before);
	EXPECT_EQ(500, c.after);
	EXPECT_EQ(1, c.begin);
	EXPECT_EQ(1, c.end);
	EXPECT_EQ(1, d.begin);
	self->t->fail = 0;
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_exec_run(g));
	EXPECT_EQ(1, c.failed);
	EXPECT_EQ(NPURT_ERR_DEVICE, c.last);
	EXPECT_EQ(2, d.end);
	EXPECT_EQ(NPURT_ERR_DEVICE, d.last);
	for (int i = 2; i < 8; i++)
		ASSERT_EQ(NPURT_OK, npurt_exec_subscribe(g, &only_runs));
	EXPECT_EQ(NPURT_ERR_BUSY, npurt_exec_subscribe(g, &only_runs));
	npurt_exec_destroy(g);
}

/* An If: a node runs one of two graphs of its own, by a flag. */
struct branch {
	npurt_exec *then, *other, *self;
	int cond;
	npurt_status nested_self;
};

static npurt_status run_if(void *arg)
{
	struct branch *b = arg;

	b->nested_self = npurt_exec_run(b->self);
	return npurt_exec_run(b->cond ? b->then : b->other);
}

static npurt_exec *one_node_graph(struct __test_metadata *_metadata, struct nctx *c,
				  npurt_executor ex)
{
	npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = visit,
				   .ctx = c };
	npurt_exec *g;

	EXPECT_EQ(NPURT_OK, npurt_exec_create(&g));
	EXPECT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
	EXPECT_EQ(NPURT_OK, npurt_exec_prepare(g, ex));
	return g;
}

TEST_F(exec, a_node_runs_a_branch_graph_of_its_own)
{
	struct branch b = { 0 };
	npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = run_if,
				   .ctx = &b };
	npurt_exec *g;

	for (uint32_t i = 0; i < 2; i++)
		self->ctx[i] = (struct nctx){ self->t, i };
	b.then = one_node_graph(_metadata, &self->ctx[0], variant->executor);
	b.other = one_node_graph(_metadata, &self->ctx[1], variant->executor);
	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	b.self = g;
	b.cond = 1;
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	b.cond = 0;
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	EXPECT_EQ(1, self->t->runs[0]);
	EXPECT_EQ(2, self->t->runs[1]);
	/* A graph cannot run itself from inside. */
	EXPECT_EQ(NPURT_ERR_INVALID, b.nested_self);
	npurt_exec_destroy(g);
	npurt_exec_destroy(b.then);
	npurt_exec_destroy(b.other);
}

TEST_F(exec, an_empty_graph_runs)
{
	npurt_exec *g;

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	npurt_exec_destroy(g);
}

TEST_F(exec, a_cycle_is_refused_naming_a_node_on_it)
{
	npurt_exec *g;

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	for (uint32_t i = 0; i < 8; i++) {
		npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = visit,
					   .ctx = &self->ctx[i] };

		self->ctx[i] = (struct nctx){ self->t, i };
		ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
	}
	/* 0 -> 1 -> 2 -> 3 -> 4 -> 2, and 4 -> 5: the cycle is 2, 3, 4. */
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(NPURT_OK, npurt_exec_order(g, i, i + 1));
	ASSERT_EQ(NPURT_OK, npurt_exec_order(g, 4, 2));
	ASSERT_EQ(NPURT_OK, npurt_exec_order(g, 4, 5));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_prepare(g, variant->executor));
	ASSERT_NE(NULL, strstr(npurt_last_error(), "cycle through node "));
	uint32_t v = (uint32_t)atoi(strstr(npurt_last_error(), "node ") + 5);

	EXPECT_TRUE(v >= 2 && v <= 4) TH_LOG("%s", npurt_last_error());
	/* Nothing ran, and the graph is not prepared. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_run(g));
	EXPECT_EQ(0, self->t->clock);
	npurt_exec_destroy(g);
}

TEST_F(exec, bad_arguments_are_refused_and_change_nothing)
{
	npurt_exec_node_desc d = { .size = sizeof(d), .section = NPURT_EXEC_MAIN, .fn = visit,
				   .ctx = &self->ctx[0] };
	npurt_exec_node_desc init = d;
	npurt_exec *g;
	uint32_t n;
	uint64_t r;

	self->ctx[0] = (struct nctx){ self->t, 0 };
	init.section = NPURT_EXEC_INIT;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_create(NULL));
	ASSERT_EQ(NPURT_OK, npurt_exec_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &d, NULL));
	ASSERT_EQ(NPURT_OK, npurt_exec_node(g, &init, NULL));
	d.size = 4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_node(g, &d, NULL));
	d.size = sizeof(d);
	d.section = 3;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_node(g, &d, NULL));
	d.section = NPURT_EXEC_MAIN;
	d.thread = 2;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_node(g, &d, NULL));
	d.thread = 0;
	d.fn = NULL;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_node(g, &d, NULL));
	d.fn = visit;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_node(NULL, &d, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_order(g, 0, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_order(g, 0, 2));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "no node 2"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_order(g, 0, 1));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "sections"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_prepare(g, (npurt_executor)3));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_run(g));
	ASSERT_EQ(NPURT_OK, npurt_exec_count(g, &n, &r));
	EXPECT_EQ(2, n);
	EXPECT_EQ(0, r);
	ASSERT_EQ(NPURT_OK, npurt_exec_prepare(g, variant->executor));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_prepare(g, variant->executor));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_node(g, &d, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_order(g, 1, 0));
	ASSERT_EQ(NPURT_OK, npurt_exec_run(g));
	EXPECT_EQ(2, self->t->runs[0]);		/* INIT's and MAIN's share the context */
	npurt_exec_destroy(g);
	npurt_exec_destroy(NULL);
}

TEST_HARNESS_MAIN
