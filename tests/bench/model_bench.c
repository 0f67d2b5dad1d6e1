// SPDX-License-Identifier: MIT
/*
 * Models, side by side in one run (make bench):
 *
 *   1000 small kernels   a chain of 1000 64-element adds: per-inference
 *                        latency dispatched op by op (a submit and wait
 *                        per op), as host batches, and sunk (one submit);
 *                        goal: sunk >= 20x op by op, and faster than the
 *                        host batches
 *   serving              an MLP through a run loop (runs pipelined, 3 in
 *                        flight) against back-to-back synchronous runs
 *   packed weights       a transformer's feed-forward block (x [128 x 256]
 *                        through W1 [256 x 1024], GELU, W2 [1024 x 256]):
 *                        device time with W1 and W2 constants, packed in
 *                        panels by the builder, against the same weights
 *                        bound as inputs, which every launch packs again
 *   memory plans         the test models' planned feature-map bytes
 *                        against the sum of their feature maps and the
 *                        peak of live bytes (goal: within 5% of the peak)
 *
 * Latencies are medians of NPU_BENCH_REPS runs (default 15).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npurt.h"
#include "bench.h"

#define CHAIN		1000
#define ELEMS		64

static void die(const char *what)
{
	fprintf(stderr, "model_bench: %s: %s\n", what, npurt_last_error());
	exit(1);
}

static uint32_t op(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *build_chain(size_t *len)
{
	static float one[ELEMS];
	npurt_graph_node n = { .size = sizeof(n), .op = op("add") };
	npurt_graph *g;
	uint32_t x, c, t;
	void *file;

	for (int i = 0; i < ELEMS; i++)
		one[i] = 1.0f;
	if (npurt_graph_create(&g) ||
	    npurt_graph_input(g, "x", NPURT_F32, 1, (uint64_t[]){ ELEMS }, &x) ||
	    npurt_graph_constant(g, "one", NPURT_F32, 1, (uint64_t[]){ ELEMS }, one, &c))
		die("graph");
	t = x;
	for (int i = 0; i < CHAIN; i++) {
		n.in[0] = t;
		n.in[1] = c;
		if (npurt_graph_add(g, &n, &t))
			die("graph");
	}
	if (npurt_graph_output(g, t, "y") || npurt_graph_serialize(g, &file, len, NULL))
		die("graph");
	npurt_graph_destroy(g);
	return file;
}

static double run_us(npurt_model *m)
{
	double t0 = now_us();

	if (npurt_model_execute(m, -1))
		die("run");
	return now_us() - t0;
}

static double median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp);
	return t[n / 2];
}

static void chain(npurt_device *dev, int reps)
{
	static float x[ELEMS], y[ELEMS];
	double step, batch, sunk, *ts, *tb;
	npurt_model *m;
	size_t len;
	void *file = build_chain(&len);

	if (npurt_model_load_buffer(dev, file, len, NULL, &m))
		die("load");
	free(file);
	if (npurt_model_bind(m, 0, x, sizeof(x)) || npurt_model_bind(m, 1, y, sizeof(y)))
		die("bind");
	/* Sunk and host batches alternate, so drift in the machine hits both alike. */
	ts = malloc(2 * (size_t)reps * sizeof(*ts));
	if (!ts)
		die("memory");
	tb = ts + reps;
	for (int r = -1; r < reps; r++) {
		npurt_model_set_dispatch(m, NPURT_DISPATCH_SINK);
		sunk = run_us(m);
		if (r >= 0)
			ts[r] = sunk;
		npurt_model_set_dispatch(m, NPURT_DISPATCH_HOST);
		batch = run_us(m);
		if (r >= 0)
			tb[r] = batch;
	}
	sunk = median(ts, reps);
	batch = median(tb, reps);
	if (y[0] != CHAIN)
		die("the chain's result");
	npurt_model_set_dispatch(m, NPURT_DISPATCH_HOST_STEP);
	for (int r = 0; r < 5 && r < reps; r++)
		ts[r] = run_us(m);
	step = median(ts, reps > 5 ? 5 : reps);
	free(ts);
	printf("%-46s %12s %10s\n", "model of 1000 small kernels", "us/run", "x op by op");
	printf("%-46s %12.0f %10.2f\n", "dispatched op by op (submit + wait each)", step, 1.0);
	printf("%-46s %12.0f %10.2f\n", "dispatched as host batches", batch, step / batch);
	printf("%-46s %12.0f %10.2f\n", "sunk (one submit)", sunk, step / sunk);
	printf("sunk against op by op %.1fx (goal >= 20x: %s), against host batches %.2fx "
	       "(goal > 1: %s)\n", step / sunk, step / sunk >= 20 ? "met" : "NOT met", batch / sunk,
	       batch / sunk > 1 ? "met" : "NOT met");
	npurt_model_unload(m);
}

/* ---- serving ------------------------------------------------------------ */
enum { B = 16, I = 64, H = 128, O = 16 };

static void *build_mlp(size_t *len, npurt_plan_info *info)
{
	static float w1[I * H], w2[H * O];
	npurt_graph_node n = { .size = sizeof(n), .alpha = 1.0f };
	npurt_graph *g;
	uint32_t x, c1, c2, t;
	void *file;

	for (int i = 0; i < I * H; i++)
		w1[i] = (float)(i % 13) * 0.01f;
	for (int i = 0; i < H * O; i++)
		w2[i] = (float)(i % 7) * 0.01f;
	if (npurt_graph_create(&g) ||
	    npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ B, I }, &x) ||
	    npurt_graph_constant(g, "w1", NPURT_F32, 2, (uint64_t[]){ I, H }, w1, &c1) ||
	    npurt_graph_constant(g, "w2", NPURT_F32, 2, (uint64_t[]){ H, O }, w2, &c2))
		die("graph");
	n.op = op("gemm"), n.in[0] = x, n.in[1] = c1;
	if (npurt_graph_add(g, &n, &t))
		die("graph");
	n.op = op("relu"), n.in[0] = t;
	if (npurt_graph_add(g, &n, &t))
		die("graph");
	n.op = op("gemm"), n.in[0] = t, n.in[1] = c2;
	if (npurt_graph_add(g, &n, &t))
		die("graph");
	n.op = op("softmax"), n.in[0] = t;
	if (npurt_graph_add(g, &n, &t) || npurt_graph_output(g, t, "y") ||
	    npurt_graph_serialize(g, &file, len, info))
		die("graph");
	npurt_graph_destroy(g);
	return file;
}

static int served;

static void done(void *user, uint64_t tag, npurt_status st, void *const *outputs)
{
	(void)user, (void)tag, (void)outputs;
	if (st)
		die("served run");
	served++;
}

static void serving(npurt_device *dev, int n)
{
	static float x[B * I], y[B * O];
	npurt_runloop_desc d = { .size = sizeof(d), .depth = 3, .done = done };
	const void *in[1] = { x };
	double t_sync, t_loop;
	npurt_runloop *loop;
	npurt_model *m;
	size_t len;
	void *file = build_mlp(&len, NULL);

	if (npurt_model_load_buffer(dev, file, len, NULL, &m))
		die("load");
	free(file);
	if (npurt_model_bind(m, 0, x, sizeof(x)) || npurt_model_bind(m, 1, y, sizeof(y)))
		die("bind");
	npurt_model_execute(m, -1);
	t_sync = now_us();
	for (int i = 0; i < n; i++)
		if (npurt_model_execute(m, -1))
			die("run");
	t_sync = now_us() - t_sync;
	if (npurt_runloop_start(m, &d, &loop))
		die("run loop");
	t_loop = now_us();
	for (int i = 0; i < n; i++)
		if (npurt_runloop_push(loop, in, (uint64_t)i))
			die("push");
	npurt_runloop_stop(loop);
	t_loop = now_us() - t_loop;
	if (served != n)
		die("served count");
	printf("%-46s %12s %10s\n", "serving an MLP, runs/s", "runs/s", "x sync");
	printf("%-46s %12.0f %10.2f\n", "back-to-back synchronous runs", n / t_sync * 1e6, 1.0);
	printf("%-46s %12.0f %10.2f\n", "run loop, 3 in flight", n / t_loop * 1e6, t_sync / t_loop);
	npurt_model_unload(m);
}

/* ---- packed weights ----------------------------------------------------- */

#define FF_M	128
#define FF_D	256
#define FF_H	1024

/* x -> gemm W1 (+ GELU) -> gemm W2; weights constants (packed) or inputs 1 and 2. */
static void *build_ffn(bool constants, const float *w1, const float *w2, size_t *len)
{
	npurt_graph_node n = { .size = sizeof(n), .alpha = 1.0f, .op = op("gemm"),
			       .epi = { .act = op("gelu_erf") } };
	npurt_graph *g;
	uint32_t x, c1, c2, t;
	void *file;
	int err;

	if (npurt_graph_create(&g) ||
	    npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ FF_M, FF_D }, &x))
		die("graph");
	err = constants ?
	      npurt_graph_constant(g, "w1", NPURT_F32, 2, (uint64_t[]){ FF_D, FF_H }, w1, &c1) ||
	      npurt_graph_constant(g, "w2", NPURT_F32, 2, (uint64_t[]){ FF_H, FF_D }, w2, &c2) :
	      npurt_graph_input(g, "w1", NPURT_F32, 2, (uint64_t[]){ FF_D, FF_H }, &c1) ||
	      npurt_graph_input(g, "w2", NPURT_F32, 2, (uint64_t[]){ FF_H, FF_D }, &c2);
	if (err)
		die("graph");
	n.in[0] = x, n.in[1] = c1;
	if (npurt_graph_add(g, &n, &t))
		die("graph");
	n.in[0] = t, n.in[1] = c2, n.epi.act = 0;
	if (npurt_graph_add(g, &n, &t) || npurt_graph_output(g, t, "y") ||
	    npurt_graph_serialize(g, &file, len, NULL))
		die("graph");
	npurt_graph_destroy(g);
	return file;
}

/* One run's device time, in us, between two timed events around it. */
static double device_us(npurt_model *m, npurt_stream *s, npurt_event *e0, npurt_event *e1)
{
	int64_t ns = 0;

	if (npurt_event_record(e0, s) || npurt_model_execute_async(m, s) ||
	    npurt_event_record(e1, s) || npurt_stream_synchronize(s) ||
	    npurt_event_elapsed_ns(e0, e1, &ns))
		die("timed run");
	return (double)ns / 1e3;
}

static void packed_weights(npurt_device *dev, int reps)
{
	size_t bytes[4] = { FF_M * FF_D * 4, FF_D * FF_H * 4, FF_H * FF_D * 4, FF_M * FF_D * 4 };
	npurt_mem *mem[4];
	npurt_model *m[2];
	npurt_stream *s;
	npurt_event *e0, *e1;
	double *t[2];

	for (int i = 0; i < 4; i++) {
		if (npurt_mem_alloc(dev, bytes[i], &mem[i]))
			die("alloc");
		for (size_t e = 0; e < bytes[i] / 4; e++)
			((float *)npurt_mem_host_ptr(mem[i]))[e] = (float)((e * 7919) % 17) * 0.01f - 0.08f;
	}
	for (int k = 0; k < 2; k++) {
		size_t len;
		void *file = build_ffn(!k, npurt_mem_host_ptr(mem[1]), npurt_mem_host_ptr(mem[2]),
				       &len);

		if (npurt_model_load_buffer(dev, file, len, NULL, &m[k]))
			die("load");
		free(file);
		/* Inputs in order x (w1, w2), then the output; all device memory, in place. */
		for (uint32_t i = 0, io = 0; i < 4; i++)
			if ((i != 1 && i != 2) || k)
				if (npurt_model_bind(m[k], io++, npurt_mem_host_ptr(mem[i]), bytes[i]))
					die("bind");
		t[k] = malloc((size_t)reps * sizeof(double));
	}
	if (npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s) || npurt_event_create(dev, &e0) ||
	    npurt_event_create(dev, &e1))
		die("stream");
	device_us(m[0], s, e0, e1);
	device_us(m[1], s, e0, e1);
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < 2; k++)
			t[k][r] = device_us(m[k], s, e0, e1);
	printf("%-46s %12s %10s\n", "weights packed at build, device us (p50)", "us", "x inputs");
	printf("%-46s %12.1f %10.2f\n", "FFN 128x256x1024x256, weights as inputs", median(t[1], reps),
	       1.0);
	printf("%-46s %12.1f %10.2f\n", "the same, weights constants (in panels)",
	       median(t[0], reps), median(t[0], reps) / median(t[1], reps));
	npurt_event_destroy(e1);
	npurt_event_destroy(e0);
	npurt_stream_destroy(s);
	for (int k = 0; k < 2; k++) {
		npurt_model_unload(m[k]);
		free(t[k]);
	}
	for (int i = 0; i < 4; i++)
		npurt_mem_free(mem[i]);
}

/* ---- memory plans ------------------------------------------------------- */

/* A small CNN of GEMMs over views, as the model tests build it. */
static void plan_cnn(npurt_plan_info *info)
{
	enum { C = 3, HH = 12, W = 12, K = 8, OH = HH - 2, OW = W - 2 };
	static float wt[K * C], fc[K * 4];
	npurt_graph_node n = { .size = sizeof(n), .alpha = 1.0f };
	npurt_graph *g;
	uint32_t x, conv, w, r, flat, pooled, f, y;
	void *file;
	size_t len;

	if (npurt_graph_create(&g) ||
	    npurt_graph_input(g, "image", NPURT_F32, 3, (uint64_t[]){ C, HH, W }, &x) ||
	    npurt_graph_tensor(g, "conv", NPURT_F32, 3, (uint64_t[]){ K, OH, OW }, &conv) ||
	    npurt_graph_fill(g, 0, conv, 0) ||
	    npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ K, C }, wt, &w) ||
	    npurt_graph_constant(g, "fc", NPURT_F32, 2, (uint64_t[]){ K, 4 }, fc, &f))
		die("graph");
	for (int row = 0; row < OH; row++) {
		uint32_t ov, xv;

		if (npurt_graph_view(g, conv, (uint64_t)row * OW, 2, (uint64_t[]){ K, OW },
				     (uint64_t[]){ OH * OW, 1 }, &ov))
			die("graph");
		for (int t = 0; t < 9; t++) {
			if (npurt_graph_view(g, x, (uint64_t)(row + t / 3) * W + t % 3, 2,
					     (uint64_t[]){ C, OW }, (uint64_t[]){ HH * W, 1 }, &xv))
				die("graph");
			n.op = op("gemm"), n.in[0] = w, n.in[1] = xv, n.beta = 1.0f;
			if (npurt_graph_add_into(g, &n, ov))
				die("graph");
		}
	}
	n.beta = 0;
	n.op = op("relu"), n.in[0] = conv;
	if (npurt_graph_add(g, &n, &r) ||
	    npurt_graph_view(g, r, 0, 2, (uint64_t[]){ K, OH * OW }, (uint64_t[]){ OH * OW, 1 },
			     &flat))
		die("graph");
	n.op = op("reduce_mean"), n.in[0] = flat, n.axis = 1;
	if (npurt_graph_add(g, &n, &pooled))
		die("graph");
	n.op = op("gemm"), n.in[0] = pooled, n.in[1] = f, n.flags = NPURT_LAUNCH_TRANS_A,
	n.axis = 0;
	if (npurt_graph_add(g, &n, &y) || npurt_graph_output(g, y, "logits") ||
	    npurt_graph_serialize(g, &file, &len, info))
		die("graph");
	free(file);
	npurt_graph_destroy(g);
}

/* Two streams joined by events: two branches of a residual block. */
static void plan_two_streams(npurt_plan_info *info)
{
	static float w[64 * 64];
	npurt_graph_node n = { .size = sizeof(n), .alpha = 1.0f };
	npurt_graph *g;
	uint32_t x, c, a, b, a2, b2, s;
	void *file;
	size_t len;

	if (npurt_graph_create(&g) ||
	    npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 64, 64 }, &x) ||
	    npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ 64, 64 }, w, &c))
		die("graph");
	n.op = op("gemm"), n.in[0] = x, n.in[1] = c;
	if (npurt_graph_add(g, &n, &a))
		die("graph");
	n.op = op("relu"), n.in[0] = a;
	if (npurt_graph_add(g, &n, &a2))
		die("graph");
	n.op = op("tanh"), n.in[0] = x, n.stream = 1;
	if (npurt_graph_add(g, &n, &b))
		die("graph");
	n.op = op("sigmoid"), n.in[0] = b;
	if (npurt_graph_add(g, &n, &b2))
		die("graph");
	n.op = op("add"), n.in[0] = a2, n.in[1] = b2, n.stream = 0;
	if (npurt_graph_add(g, &n, &s) || npurt_graph_output(g, s, "s") ||
	    npurt_graph_serialize(g, &file, &len, info))
		die("graph");
	free(file);
	npurt_graph_destroy(g);
}

static void plans(void)
{
	npurt_plan_info p[3] = { { .size = sizeof(p[0]) }, { .size = sizeof(p[0]) },
				 { .size = sizeof(p[0]) } };
	const char *names[3] = { "MLP", "CNN (conv as GEMMs)", "two streams" };
	size_t len;

	free(build_mlp(&len, &p[0]));
	plan_cnn(&p[1]);
	plan_two_streams(&p[2]);
	printf("%-26s %12s %12s %12s %9s\n", "feature-map plans, bytes", "planned", "summed",
	       "peak live", "x peak");
	for (int i = 0; i < 3; i++)
		printf("%-26s %12llu %12llu %12llu %9.3f%s\n", names[i],
		       (unsigned long long)p[i].fmap_bytes, (unsigned long long)p[i].fmap_sum,
		       (unsigned long long)p[i].fmap_peak,
		       (double)p[i].fmap_bytes / (double)p[i].fmap_peak,
		       (double)p[i].fmap_bytes <= 1.05 * (double)p[i].fmap_peak ? "" :
		       "  (goal 1.05: NOT met)");
}

int main(void)
{
	const char *r = getenv("NPU_BENCH_REPS");
	int reps = r ? atoi(r) : 15;
	npurt_device *dev;

	if (npurt_device_open(0, &dev))
		die("device");
	chain(dev, reps);
	serving(dev, 200);
	packed_weights(dev, reps * 4);
	plans();
	npurt_device_close(dev);
	return 0;
}
