// SPDX-License-Identifier: MIT
/*
 * Sessions against static imports (make bench): the transformer encoder
 * block of tests/onnx/make_models.py with a symbolic batch and sequence
 * length (transformer_dyn), at each of its five test shapes, run through
 * a session (dynamic: the plan cached after the first run) and imported
 * static with the shape pinned, runs of the two interleaved so both see
 * the same machine. Prints the median latency of each, their ratio (goal:
 * session <= 1.1x static once the plan is cached) and the first run's
 * lowering time.
 *
 * Latencies are medians of NPU_BENCH_REPS runs (default 15).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../selftests/npu_onnx_files.h"
#include "bench.h"
#include "npuonnx.h"
#include "npurt.h"

#define D 64

static const uint32_t shapes[5][2] = { { 1, 8 }, { 1, 16 }, { 2, 24 }, { 1, 48 }, { 1, 100 } };

static void die(const char *what)
{
	fprintf(stderr, "session_bench: %s: %s\n", what, npurt_last_error());
	exit(1);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static npurt_model *load_static(npurt_device *dev, const char *path, const uint32_t *shape)
{
	char pin[64];
	const char *pins[] = { pin };
	npurt_onnx_options o = { .size = sizeof(o), .n_shapes = 1, .shapes = pins };
	npurt_graph *g;
	npurt_model *m;
	void *file;
	size_t len;

	snprintf(pin, sizeof(pin), "x=%ux%ux%u", shape[0], shape[1], D);
	if (npurt_onnx_import_file(path, &o, &g, NULL) ||
	    npurt_graph_serialize(g, &file, &len, NULL))
		die("import");
	npurt_graph_destroy(g);
	if (npurt_model_load_buffer(dev, file, len, NULL, &m))
		die("load");
	free(file);
	return m;
}

int main(void)
{
	const char *env = getenv("NPU_BENCH_REPS");
	int reps = env && atoi(env) > 0 ? atoi(env) : 15;
	double *ts = calloc((size_t)reps, sizeof(double)), *td = calloc((size_t)reps, sizeof(double));
	npurt_onnx_session_stats st = { .size = sizeof(st) };
	npurt_onnx_session *s;
	npurt_device *dev;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/transformer_dyn.onnx", models_dir());
	if (!ts || !td || npurt_device_open(0, &dev))
		die("device");
	if (npurt_onnx_session_create_file(dev, path, NULL, &s))
		die("session");
	printf("transformer_dyn (encoder block, d 64, 4 heads), median of %d runs\n", reps);
	printf("%-10s %12s %12s %8s %12s\n", "batch x seq", "static us", "session us", "ratio",
	       "lower ms");
	for (int i = 0; i < 5; i++) {
		size_t bytes = (size_t)shapes[i][0] * shapes[i][1] * D * 4;
		float *x = calloc(1, bytes), *y = calloc(1, bytes);
		npurt_value in = { .dtype = NPURT_F32, .ndim = 3, .data = x, .bytes = bytes,
				   .shape = { shapes[i][0], shapes[i][1], D } }, out;
		npurt_model *m = load_static(dev, path, shapes[i]);
		uint64_t lower0;
		double t0;

		for (size_t k = 0; k < bytes / 4; k++)
			x[k] = (float)((k * 7919) % 200) / 100.0f - 1.0f;
		if (npurt_model_bind(m, 0, x, bytes) || npurt_model_bind(m, 1, y, bytes))
			die("bind");
		npurt_onnx_session_stats_get(s, &st);
		lower0 = st.lower_ns;
		/* The first run lowers; then both warm once. */
		if (npurt_onnx_session_run(s, &in, 1, &out, 1) || npurt_model_execute(m, -1))
			die("first run");
		npurt_onnx_session_stats_get(s, &st);
		for (int r = 0; r < reps; r++) {
			t0 = now_us();
			if (npurt_model_execute(m, -1))
				die("static run");
			ts[r] = now_us() - t0;
			t0 = now_us();
			if (npurt_onnx_session_run(s, &in, 1, &out, 1))
				die("session run");
			td[r] = now_us() - t0;
		}
		qsort(ts, (size_t)reps, sizeof(double), cmp);
		qsort(td, (size_t)reps, sizeof(double), cmp);
		printf("%4u x %-5u %12.1f %12.1f %8.2f %12.1f\n", shapes[i][0], shapes[i][1],
		       ts[reps / 2], td[reps / 2], td[reps / 2] / ts[reps / 2],
		       (double)(st.lower_ns - lower0) / 1e6);
		npurt_model_unload(m);
		free(x);
		free(y);
	}
	npurt_onnx_session_stats_get(s, &st);
	printf("(goal: session <= 1.1x static once cached; cache: %llu hits, %llu misses)\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses);
	npurt_onnx_session_destroy(s);
	npurt_device_close(dev);
	free(ts);
	free(td);
	return 0;
}
