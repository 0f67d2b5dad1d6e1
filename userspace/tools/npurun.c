// SPDX-License-Identifier: MIT
/*
 * npurun: load a model file, run it N times with random or file inputs,
 * print its outputs, latency percentiles and throughput.
 *
 *   npurun [-n RUNS | -t SECONDS] [--concurrency N] [--mode sink|host|step]
 *          [--input NAME=FILE]... [--output NAME=FILE]... [--print] [--seed S]
 *          [--timeout MS] [--pipeline DEPTH] [--device N] [--shape NAME=AxBxC]...
 *          [--dim-param NAME=N]... [--value NAME=V,...]... [--profile FILE]
 *          [--dump DIR] [--dump-ref DIR] [--dump-ops PATTERNS] [--dump-inputs] MODEL
 *
 * Inputs are bound in pinned host memory (zero copy) and filled once;
 * outputs too. Latency is each synchronous run from submit to its end;
 * the device's own time is then measured by as many runs again, each
 * between two timed events that the device reaches back to back (see
 * device_times()), and what a run costs beyond the device's work by as
 * many empty submits (round_trips()). --pipeline D queues D runs back to
 * back on a stream instead and measures throughput only; --concurrency N
 * keeps N in flight through a run loop, as a server does, and measures
 * each request's latency and the throughput (serve.c). --dump runs the
 * model once more with each op's output copied out (npurt_model_dump()),
 * --dump-ref the host reference on the same inputs, each into a
 * directory npu-prof --compare takes. Exit status: 0, 1 a failure (the
 * reason on stderr), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dump.h"
#include "npurt.h"
#include "reference.h"
#include "serve.h"
#include "source.h"

#define MAX_FILES	64

struct binding {
	const char *name, *path;
};

static struct binding ins[MAX_FILES], outs[MAX_FILES];
/* An ONNX model's pinned dimensions, as given (npurt_onnx_options). */
static const char *shapes[MAX_FILES], *dim_params[MAX_FILES], *values[MAX_FILES];
static uint32_t nshapes, ndim_params, nvalues;
static int nins, nouts;

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The device's time for each of `runs` runs, in us: on a stream held at a
 * notify, an event, the run, an event; then the notify is recorded from
 * another stream, so the device goes through the three without waiting
 * for the host's submits in between. What remains is the device's work
 * for the run and two event records. NPURT_OK, or the failure.
 */
static npurt_status device_times(npurt_device *dev, npurt_model *m, long runs, double *us)
{
	npurt_stream *s = NULL, *gate_s = NULL;
	npurt_event *e0 = NULL, *e1 = NULL;
	npurt_notify *gate = NULL;
	npurt_status st;

	st = npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s);
	if (!st)
		st = npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &gate_s);
	if (!st)
		st = npurt_event_create(dev, &e0);
	if (!st)
		st = npurt_event_create(dev, &e1);
	if (!st)
		st = npurt_notify_create(dev, &gate);
	for (long r = 0; !st && r < runs; r++) {
		npurt_status opened;
		int64_t ns = 0;

		st = npurt_stream_wait_notify(s, gate);
		if (st)
			break;
		st = npurt_event_record(e0, s);
		if (!st)
			st = npurt_model_execute_async(m, s);
		if (!st)
			st = npurt_event_record(e1, s);
		/* Whatever failed, s waits for the gate: open it. */
		opened = npurt_notify_record(gate, gate_s);
		if (!st)
			st = opened;
		if (!st)
			st = npurt_stream_synchronize(s);
		if (!st)
			st = npurt_event_elapsed_ns(e0, e1, &ns);
		us[r] = (double)ns / 1e3;
	}
	npurt_notify_destroy(gate);
	npurt_event_destroy(e1);
	npurt_event_destroy(e0);
	npurt_stream_destroy(gate_s);
	npurt_stream_destroy(s);
	return st;
}

/*
 * The wall time of `runs` empty submits, in us: a 4-byte fill on a
 * stream (one task, as a sunk run is one), submit to completion seen.
 * What a run costs beyond the device's work: the submit, the doorbell,
 * the interrupt and the wake-up (under an emulated guest most of a small
 * model's latency).
 */
static npurt_status round_trips(npurt_device *dev, long runs, double *us)
{
	npurt_stream *s = NULL;
	npurt_mem *word = NULL;
	npurt_status st;

	st = npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s);
	if (!st)
		st = npurt_mem_alloc(dev, 4, &word);
	for (long r = 0; !st && r < runs; r++) {
		double t0 = serve_now_us();

		st = npurt_memset_async(s, npurt_mem_device_addr(word), (uint32_t)r, 4);
		if (!st)
			st = npurt_stream_synchronize(s);
		us[r] = serve_now_us() - t0;
	}
	npurt_mem_free(word);
	npurt_stream_destroy(s);
	return st;
}

/* One "LABEL p50 ... (WHAT)" line for `runs` times in us, or why there is none. */
static void report(const char *label, const char *name, npurt_status st, double *us, long runs,
		   const char *what)
{
	if (st) {
		fprintf(stderr, "npurun: %s not measured: %s\n", name, npurt_last_error());
		return;
	}
	qsort(us, (size_t)runs, sizeof(*us), cmp);
	printf("%s p50 %.1f  p90 %.1f  min %.1f  (%s)\n", label, us[runs / 2], us[runs * 9 / 10],
	       us[0], what);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: npurun [OPTIONS] MODEL\n"
		"  Load MODEL (a model file, or an ONNX model: MODEL.onnx, imported and\n"
		"  cached in $NPU_CACHE_DIR or ~/.cache/npu), run it and report.\n"
		"  -n, --runs N           runs to time (default 10, after one warm-up)\n"
		"  -t, --duration SEC     as many runs as fit in SEC seconds instead\n"
		"  -C, --concurrency N    N runs in flight through a run loop, as a server\n"
		"                         keeps them: request latency and throughput\n"
		"  -m, --mode MODE        sink (one submit per run, the default), host (the\n"
		"                         tasks submitted from the host) or step (each task\n"
		"                         submitted and waited for)\n"
		"  -i, --input NAME=FILE  the input's raw bytes from FILE (else random)\n"
		"  -o, --output NAME=FILE write the output's bytes of the last run to FILE\n"
		"  -p, --print            print each output's first values\n"
		"  -c, --check            compute the model on the host too, from the op\n"
		"                         library's definitions, and compare the outputs\n"
		"  -s, --seed S           for random inputs (default 1)\n"
		"  -T, --timeout MS       abort a run past MS (default: no limit)\n"
		"  -P, --pipeline DEPTH   queue runs back to back on a stream, DEPTH in\n"
		"                         flight; report throughput\n"
		"  -d, --device N         the NPU (default 0)\n"
		"  --shape NAME=AxBxC     an ONNX model's input NAME has this shape (pins\n"
		"                         its symbolic dimensions; repeatable)\n"
		"  --dim-param NAME=N     every input dimension called NAME is N (repeatable)\n"
		"  --value NAME=V,...     input NAME holds these values: a constant of the\n"
		"                         model now, no input (repeatable)\n"
		"  --profile FILE         write the device's timeline of every run to FILE\n"
		"                         (Chrome trace JSON: npu-prof --summary FILE, or\n"
		"                         ui.perfetto.dev)\n"
		"  --dump DIR             run once more with each op's output written to\n"
		"                         DIR as .npy (DIR/index.tsv lists them)\n"
		"  --dump-ref DIR         the same from the host reference (as -c), to\n"
		"                         compare: npu-prof --compare DIR REF\n"
		"  --dump-ops PATTERNS    dump only the ops named (\"gemm,relu\") or whose\n"
		"                         output is named; fnmatch patterns, comma-separated\n"
		"  --dump-inputs          each dumped op's inputs too\n"
		"  --version              npurun's and libnpurt's versions\n"
		"Exit status: 0 success, 1 failure, 2 usage.\n");
}

static int add_binding(struct binding *b, int *n, char *arg)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg || !eq[1] || *n == MAX_FILES)
		return -1;
	*eq = 0;
	b[*n].name = arg;
	b[(*n)++].path = eq + 1;
	return 0;
}

static const char *path_for(const struct binding *b, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(b[i].name, name))
			return b[i].path;
	return NULL;
}

static int fail(const char *what)
{
	fprintf(stderr, "npurun: %s: %s\n", what, npurt_last_error());
	return 1;
}

static void print_output(const npurt_io_info *io, const void *p)
{
	uint64_t n = io->bytes / (io->dtype == NPURT_F32 ? 4 : 2);

	printf("output %s [", io->name);
	for (uint32_t k = 0; k < io->ndim; k++)
		printf("%s%llu", k ? " x " : "", (unsigned long long)io->shape[k]);
	printf("]:");
	for (uint64_t i = 0; i < n && i < 16; i++) {
		if (io->dtype == NPURT_F32)
			printf(" %.6g", ((const float *)p)[i]);
		else
			printf(" 0x%04x", ((const uint16_t *)p)[i]);
	}
	printf("%s\n", n > 16 ? " ..." : "");
}

/*
 * The reference's I/O buffers: the inputs the device read, the outputs
 * its own (free them with ref_io_free()). NULL if out of memory.
 */
static void **ref_io(npurt_model *m, npurt_mem **mem, uint32_t nio)
{
	void **io = calloc(nio, sizeof(*io));
	bool bad = !io;

	for (uint32_t i = 0; i < nio && !bad; i++) {
		npurt_io_info x = { .size = sizeof(x) };

		npurt_model_io(m, i, &x);
		io[i] = x.output ? calloc(1, x.bytes) : npurt_mem_host_ptr(mem[i]);
		bad = !io[i];
	}
	if (bad)
		fprintf(stderr, "npurun: the host reference: out of memory\n");
	return bad ? NULL : io;
}

static void ref_io_free(void **io, const npurt_model_info *info)
{
	for (uint32_t i = info->inputs; io && i < info->inputs + info->outputs; i++)
		free(io[i]);
	free(io);
}

/*
 * The last run's outputs against the host's: the largest difference,
 * relative to the largest output value (1e-4 passes: f32 sums in another
 * order). 0 if every output passes.
 */
static int check_outputs(const struct source *src, npurt_model *m, npurt_mem **mem,
			 const npurt_model_info *info)
{
	uint32_t nio = info->inputs + info->outputs;
	void **io = ref_io(m, mem, nio);
	char why[256] = "";
	int bad = 0;

	if (!io)
		return 1;
	if (ref_run(src->data, src->len, io, NULL, why, sizeof(why))) {
		fprintf(stderr, "npurun: --check: %s\n", why);
		bad = 1;
	}
	for (uint32_t i = info->inputs; i < nio && !bad; i++) {
		npurt_io_info x = { .size = sizeof(x) };
		const float *dev, *ref;
		double err = 0, big = 0;

		npurt_model_io(m, i, &x);
		if (x.dtype != NPURT_F32) {
			bad |= memcmp(io[i], npurt_mem_host_ptr(mem[i]), x.bytes) != 0;
			printf("check %s: %s\n", x.name, bad ? "DIFFERENT" : "identical");
			continue;
		}
		dev = npurt_mem_host_ptr(mem[i]);
		ref = io[i];
		for (uint64_t k = 0; k < x.bytes / 4; k++) {
			double d = fabs((double)dev[k] - ref[k]);

			err = d > err || isnan(d) ? d : err;
			big = fabs(ref[k]) > big ? fabs(ref[k]) : big;
		}
		printf("check %s: largest difference from the host %.3g (values up to %.3g): %s\n",
		       x.name, err, big, err <= 1e-4 * (big > 1 ? big : 1) ? "ok" : "WRONG");
		bad |= !(err <= 1e-4 * (big > 1 ? big : 1));
	}
	ref_io_free(io, info);
	return bad;
}

/* --dump (ref: --dump-ref): the device's run (the reference's) into dir. */
static int dump(const struct source *src, npurt_model *m, npurt_mem **mem,
		const npurt_model_info *info, const char *dir, bool ref, const char *ops,
		uint32_t flags)
{
	struct ref_dump rd = { .ops = ops, .flags = flags, .fn = dump_tensor };
	struct dump_dir d;
	char why[256] = "";
	int bad;
	void **io;

	if (dump_open(&d, dir))
		return 1;
	rd.user = &d;
	if (!ref) {
		bad = npurt_model_dump(m, ops, flags, dump_tensor, &d) != NPURT_OK;
		/* The directory's own failure says more than the callback's status. */
		if (bad && !d.err)
			fprintf(stderr, "npurun: --dump: %s\n", npurt_last_error());
	} else {
		io = ref_io(m, mem, info->inputs + info->outputs);
		bad = !io || ref_run(src->data, src->len, io, &rd, why, sizeof(why));
		if (bad && io && !d.err)
			fprintf(stderr, "npurun: --dump-ref: %s\n", why);
		ref_io_free(io, info);
	}
	return dump_close(&d) | bad;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'n' }, { "mode", required_argument, NULL, 'm' },
		{ "input", required_argument, NULL, 'i' }, { "output", required_argument, NULL, 'o' },
		{ "print", no_argument, NULL, 'p' }, { "seed", required_argument, NULL, 's' },
		{ "check", no_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "duration", required_argument, NULL, 't' },
		{ "concurrency", required_argument, NULL, 'C' },
		{ "version", no_argument, NULL, 'v' },
		{ "pipeline", required_argument, NULL, 'P' },
		{ "device", required_argument, NULL, 'd' }, { "help", no_argument, NULL, 'h' },
		{ "shape", required_argument, NULL, 'S' },
		{ "dim-param", required_argument, NULL, 'D' },
		{ "value", required_argument, NULL, 'V' },
		{ "profile", required_argument, NULL, 'R' },
		{ "dump", required_argument, NULL, 'U' },
		{ "dump-ref", required_argument, NULL, 'F' },
		{ "dump-ops", required_argument, NULL, 'O' },
		{ "dump-inputs", no_argument, NULL, 'I' },
		{ 0 },
	};
	npurt_dispatch mode = NPURT_DISPATCH_SINK;
	npurt_model_info info = { .size = sizeof(info) };
	npurt_onnx_options pins;
	const char *dump_dir = NULL, *dump_ref = NULL, *dump_ops = NULL;
	uint32_t dump_flags = 0;
	struct source src = { 0 };
	long runs = 10, timeout = -1, pipeline = 0, devno = 0, concurrency = 0;
	double duration = 0;
	struct serve_result res = { 0 };
	const void **inputs = NULL;
	unsigned long seed = 1;
	int c, print = 0, check = 0, rc = 1, runs_set = 0, timeout_set = 0;
	npurt_device *dev = NULL;
	npurt_model *m = NULL;
	npurt_mem **mem = NULL;
	uint32_t nio, vmaj, vmin, vpatch;
	char *end;

	while ((c = getopt_long(argc, argv, "n:m:i:o:pcs:t:T:C:P:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			runs = strtol(optarg, NULL, 10);
			runs_set = 1;
			break;
		case 'm':
			if (!strcmp(optarg, "sink"))
				mode = NPURT_DISPATCH_SINK;
			else if (!strcmp(optarg, "host"))
				mode = NPURT_DISPATCH_HOST;
			else if (!strcmp(optarg, "step"))
				mode = NPURT_DISPATCH_HOST_STEP;
			else
				goto bad_usage;
			break;
		case 'i': if (add_binding(ins, &nins, optarg)) goto bad_usage; break;
		case 'o': if (add_binding(outs, &nouts, optarg)) goto bad_usage; break;
		case 'p': print = 1; break;
		case 'c': check = 1; break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 'T':
			timeout = strtol(optarg, NULL, 10);
			timeout_set = 1;
			break;
		case 't':
			duration = strtod(optarg, &end);
			if (end == optarg || *end || !(duration > 0 && duration <= 86400))
				goto bad_usage;
			break;
		case 'C':
			concurrency = strtol(optarg, &end, 10);
			if (end == optarg || *end || concurrency < 1 || concurrency > 16)
				goto bad_usage;
			break;
		case 'v':
			npurt_runtime_version(&vmaj, &vmin, &vpatch);
			printf("npurun %d.%d.%d\nlibnpurt %u.%u.%u\n", NPURT_VERSION_MAJOR,
			       NPURT_VERSION_MINOR, NPURT_VERSION_PATCH, vmaj, vmin, vpatch);
			return 0;
		case 'P': pipeline = strtol(optarg, NULL, 10); break;
		case 'd': devno = strtol(optarg, NULL, 10); break;
		case 'S':
			if (nshapes == MAX_FILES)
				goto bad_usage;
			shapes[nshapes++] = optarg;
			break;
		case 'D':
			if (ndim_params == MAX_FILES)
				goto bad_usage;
			dim_params[ndim_params++] = optarg;
			break;
		case 'V':
			if (nvalues == MAX_FILES)
				goto bad_usage;
			values[nvalues++] = optarg;
			break;
		case 'R':
			/* libnpurt's profiler, started at the open, writes it at the close. */
			if (setenv("NPURT_PROFILE", optarg, 1))
				goto bad_usage;
			break;
		case 'U': dump_dir = optarg; break;
		case 'F': dump_ref = optarg; break;
		case 'O': dump_ops = optarg; break;
		case 'I': dump_flags |= NPURT_DUMP_INPUTS; break;
		case 'h': usage(stdout); return 0;
		default: goto bad_usage;
		}
	}
	if (optind != argc - 1 || runs < 1 || runs > 1000000 || timeout < -1 ||
	    timeout > INT32_MAX || pipeline < 0 || pipeline > 1024)
		goto bad_usage;
	/* What would be taken and ignored is refused, with why. */
	if ((pipeline && (concurrency || duration > 0)) || (runs_set && duration > 0) ||
	    (timeout_set && concurrency)) {
		fprintf(stderr, "npurun: %s\n", pipeline && (concurrency || duration > 0) ?
			"--pipeline runs its count of runs on one stream: not with -C or -t" :
			runs_set && duration > 0 ? "-n counts runs and -t times them: one of the two" :
			"-T limits one run at a time: a run loop (-C) has no per-run limit");
		return 2;
	}
	if (duration > 60)
		fprintf(stderr, "npurun: running for %.0f s (-t is --duration since 0.10; a run's "
			"time limit is -T)\n", duration);

	/* The file first: a path that is wrong is the first thing to say. */
	pins = (npurt_onnx_options){ .size = sizeof(pins), .n_shapes = nshapes, .shapes = shapes,
				     .dim_params = dim_params, .n_dim_params = ndim_params,
				     .values = values, .n_values = nvalues };
	if (source_read(argv[optind], &pins, &src, false))
		return 1;
	if (npurt_device_open((int)devno, &dev)) {
		rc = fail("device");
		goto out;
	}
	if (npurt_model_load_buffer(dev, src.data, src.len, NULL, &m)) {
		rc = fail(argv[optind]);
		goto out;
	}
	if (npurt_model_set_dispatch(m, mode)) {
		rc = fail("--mode");
		goto out;
	}
	npurt_model_info_get(m, &info);
	nio = info.inputs + info.outputs;
	mem = calloc(nio, sizeof(*mem));
	inputs = calloc(nio, sizeof(*inputs));
	if (!mem || !inputs) {
		fprintf(stderr, "npurun: out of memory\n");
		goto out;
	}
	for (uint32_t i = 0; i < nio; i++) {
		npurt_io_info io = { .size = sizeof(io) };
		const char *path;
		uint8_t *p;

		npurt_model_io(m, i, &io);
		if (npurt_host_alloc(dev, io.bytes, &mem[i])) {
			rc = fail(io.name);
			goto out;
		}
		p = npurt_mem_host_ptr(mem[i]);
		path = io.output ? NULL : path_for(ins, nins, io.name);
		if (!io.output)
			inputs[i] = p;
		if (path) {
			FILE *f = fopen(path, "rb");
			size_t got = f ? fread(p, 1, io.bytes, f) : 0;
			int err = f ? 0 : errno;

			if (f)
				fclose(f);
			if (err) {
				fprintf(stderr, "npurun: input %s: %s: %s\n", io.name, path,
					strerror(err));
				goto out;
			}
			if (got != io.bytes) {
				fprintf(stderr, "npurun: input %s: %s: %zu of %llu bytes\n", io.name, path,
					got, (unsigned long long)io.bytes);
				goto out;
			}
		} else if (!io.output) {
			uint64_t s = seed * 0x9e3779b97f4a7c15ull + i;

			for (uint64_t k = 0; k + 4 <= io.bytes; k += 4) {
				float v;

				s = s * 6364136223846793005ull + 1442695040888963407ull;
				v = (float)(s >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
				if (io.dtype == NPURT_F32)
					memcpy(p + k, &v, 4);
				else
					memcpy(p + k, &s, 4);
			}
		}
		if (npurt_model_bind(m, i, p, io.bytes)) {
			rc = fail(io.name);
			goto out;
		}
	}
	for (int i = 0; i < nins; i++) {
		uint32_t k;

		if (npurt_model_io_find(m, ins[i].name, &k)) {
			rc = fail("--input");
			goto out;
		}
	}
	/* A warm-up: first-use costs (queues, caches) are not the model's. */
	if (npurt_model_execute(m, (int32_t)timeout)) {
		rc = fail("run");
		goto out;
	}
	if (pipeline) {
		npurt_stream *s;
		double t0;

		if (npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s)) {
			rc = fail("stream");
			goto out;
		}
		t0 = serve_now_us();
		for (long r = 0; r < runs; r++) {
			if (npurt_model_execute_async(m, s) ||
			    (r % pipeline == pipeline - 1 && npurt_stream_synchronize(s))) {
				rc = fail("run");
				npurt_stream_destroy(s);
				goto out;
			}
		}
		if (npurt_stream_synchronize(s)) {
			rc = fail("run");
			npurt_stream_destroy(s);
			goto out;
		}
		printf("%s: %ld runs pipelined %ld deep: %.1f runs/s (%s)\n", argv[optind], runs,
		       pipeline, runs / (serve_now_us() - t0) * 1e6,
		       info.sunk && mode == NPURT_DISPATCH_SINK ? "sink" : "host dispatch");
		npurt_stream_destroy(s);
	} else {
		struct serve_plan plan = { .runs = runs, .seconds = duration,
					   .concurrency = (int)concurrency,
					   .timeout_ms = (int32_t)timeout, .inputs = inputs };
		double sum = 0, *lat;
		long n, meas;

		if (serve_runs(m, &plan, &res))
			goto out;
		lat = res.lat;
		n = res.n;
		for (long r = 0; r < n; r++)
			sum += lat[r];
		qsort(lat, (size_t)n, sizeof(*lat), cmp);
		printf("%s: %u ops on %u stream%s, %s; %ld runs", argv[optind], info.ops,
		       info.streams, info.streams == 1 ? "" : "s",
		       mode == NPURT_DISPATCH_SINK ? "sink (one submit a run)" :
		       mode == NPURT_DISPATCH_HOST ? "host dispatch" : "host dispatch, task by task",
		       n);
		if (concurrency)
			printf(", %ld in flight (a run loop; up to %ld requests waiting at once)",
			       concurrency, res.most_waiting);
		if (duration > 0)
			printf(" in %.1f s", res.wall_us / 1e6);
		printf("\n%s: p50 %.1f  p90 %.1f  p99 %.1f  mean %.1f  min %.1f  max %.1f\n",
		       concurrency ? "latency us (request: push to outputs)" : "latency us",
		       lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], sum / n, lat[0], lat[n - 1]);
		printf("throughput: %.1f runs/s\n", n / res.wall_us * 1e6);
		/*
		 * One run at a time, the device's own time and the round trip
		 * beside it (over at most 1000 runs with --duration). Step
		 * dispatch waits on the host for each task, so a run held at a
		 * notify until it is issued whole would never start.
		 */
		meas = duration > 0 && n > 1000 ? 1000 : n;
		if (concurrency) {
			/* the requests overlap: no single run's device time to tell */
		} else if (mode == NPURT_DISPATCH_HOST_STEP) {
			printf("device us:  not measured (step dispatch waits for the host)\n");
		} else {
			report("device us: ", "device time", device_times(dev, m, meas, lat), lat,
			       meas, "the device's own time, its timestamps");
		}
		if (!concurrency)
			report("empty us:  ", "round trip", round_trips(dev, meas, lat), lat, meas,
			       "a submit of a 4-byte fill, to completion");
	}
	for (uint32_t i = info.inputs; i < nio; i++) {
		npurt_io_info io = { .size = sizeof(io) };
		const char *path;

		npurt_model_io(m, i, &io);
		if (print)
			print_output(&io, npurt_mem_host_ptr(mem[i]));
		path = path_for(outs, nouts, io.name);
		if (path) {
			FILE *f = fopen(path, "wb");

			if (!f || fwrite(npurt_mem_host_ptr(mem[i]), 1, io.bytes, f) != io.bytes ||
			    fclose(f)) {
				fprintf(stderr, "npurun: output %s: %s: %s\n", io.name, path,
					strerror(errno));
				goto out;
			}
		}
	}
	rc = check ? check_outputs(&src, m, mem, &info) : 0;
	if (!rc && dump_dir)
		rc = dump(&src, m, mem, &info, dump_dir, false, dump_ops, dump_flags);
	if (!rc && dump_ref)
		rc = dump(&src, m, mem, &info, dump_ref, true, dump_ops, dump_flags);
	if (!rc && (dump_dir || dump_ref))
		printf("dump: %s%s%s\n", dump_dir ? dump_dir : "", dump_dir && dump_ref ? ", " : "",
		       dump_ref ? dump_ref : "");
out:
	npurt_model_unload(m);
	free(src.data);
	for (uint32_t i = 0; mem && i < info.inputs + info.outputs; i++)
		npurt_mem_free(mem[i]);
	free(mem);
	free(inputs);
	free(res.lat);
	npurt_device_close(dev);
	return rc;
bad_usage:
	usage(stderr);
	return 2;
}
