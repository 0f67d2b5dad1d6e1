// SPDX-License-Identifier: MIT
/*
 * The model zoo on the device: real ONNX models as npm packages ship them
 * (tests/zoo/models, fetched by tests/setup zoo into build/zoo), each
 * imported with its pins, loaded, run once on the inputs tests/zoo/inputs.py
 * drew and compared with onnxruntime's outputs for them: every output
 * within 1e-3 of the largest magnitude it holds (float32 on the device
 * against float32 in onnxruntime, sums in other orders, through models
 * dozens of layers deep). A model whose inputs the file leaves dynamic
 * runs once more in a session (npurt_onnx_session_run(), its shapes those
 * of the inputs; only value pins given), as an application that does not
 * pin would run it. KTAP, a result per model and session; without a zoo
 * (a machine that could not fetch it) one skip that says so.
 *
 *   onnx_zoo [DIR]     (default: build/zoo beside this program's build)
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npuonnx.h"

#define MAX_PINS	16
#define MAX_IO		16
#define TOLERANCE	1e-3

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc(n ? (size_t)n : 1);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return p;
}

struct run {
	const char *dir, *name;
	npurt_model *model;
	void *buf[MAX_IO];
	unsigned int nbuf;
	char why[512];
};

/*
 * The model's k-th input or output (their order is the ONNX graph's, less
 * inputs pinned by value): its index, or -1.
 */
static int64_t nth_io(npurt_model *m, unsigned int k, bool output, npurt_io_info *io)
{
	for (uint32_t i = 0; !npurt_model_io(m, i, io); i++)
		if (io->output == output && !k--)
			return i;
	return -1;
}

/* Bind input k from FILE ("in" lines of NAME.io). 0, or -1 with why. */
static int bind_input(struct run *r, unsigned int k, const char *input, const char *file)
{
	npurt_io_info io = { .size = sizeof(io) };
	char path[PATH_MAX];
	int64_t i;
	size_t len = 0;
	void *p;

	snprintf(path, sizeof(path), "%s/%s", r->dir, file);
	p = slurp(path, &len);
	if (!p || r->nbuf == MAX_IO) {
		snprintf(r->why, sizeof(r->why), "%.300s: cannot read it", path);
		free(p);
		return -1;
	}
	r->buf[r->nbuf++] = p;
	i = nth_io(r->model, k, false, &io);
	if (i < 0 || io.bytes != len || npurt_model_bind(r->model, (uint32_t)i, p, len)) {
		snprintf(r->why, sizeof(r->why), "input %s (%zu bytes): %s", input, len,
			 npurt_last_error());
		return -1;
	}
	return 0;
}

/* Compare output NAME with FILE ("out" lines), after the run. */
static int check_output(struct run *r, const char *output, const char *file, const float *got,
			size_t bytes, double *worst)
{
	char path[PATH_MAX];
	size_t len = 0;
	float *want;
	double err = 0, big = 0;

	snprintf(path, sizeof(path), "%s/%s", r->dir, file);
	want = slurp(path, &len);
	if (!want || len != bytes) {
		snprintf(r->why, sizeof(r->why), "output %s: %zu bytes from onnxruntime, %zu here",
			 output, len, bytes);
		free(want);
		return -1;
	}
	for (size_t k = 0; k < len / 4; k++) {
		double d = fabs((double)got[k] - want[k]);

		err = d > err || isnan(d) ? d : err;
		big = fabs(want[k]) > big ? fabs(want[k]) : big;
	}
	free(want);
	err /= big > 1 ? big : 1;
	if (err > *worst || isnan(err))
		*worst = err;
	if (!(err <= TOLERANCE)) {
		snprintf(r->why, sizeof(r->why), "output %s: off by %.3g of its largest value "
			 "(%.3g)", output, err, big);
		return -1;
	}
	return 0;
}

/* Pins as npu-onnx takes them: shape:..., dim:..., value:... */
static int parse_pins(char *line, const char **shapes, const char **dims, const char **values,
		      npurt_onnx_options *o)
{
	for (char *p = strtok(line, " \n"); p; p = strtok(NULL, " \n")) {
		if (o->n_shapes + o->n_dim_params + o->n_values == MAX_PINS)
			return -1;
		if (!strncmp(p, "shape:", 6))
			shapes[o->n_shapes++] = p + 6;
		else if (!strncmp(p, "dim:", 4))
			dims[o->n_dim_params++] = p + 4;
		else if (!strncmp(p, "value:", 6))
			values[o->n_values++] = p + 6;
		else
			return -1;
	}
	return 0;
}

/* One model: 0 matched, -1 with r->why. */
static int run_model(npurt_device *dev, struct run *r, char *pins, double *worst)
{
	const char *shapes[MAX_PINS], *dims[MAX_PINS], *values[MAX_PINS];
	npurt_onnx_options o = { .size = sizeof(o), .shapes = shapes, .dim_params = dims,
				 .values = values };
	char path[PATH_MAX], line[4096];
	npurt_graph *g = NULL;
	float *outs[MAX_IO] = { NULL };
	char oname[MAX_IO][256], ofile[MAX_IO][256];
	size_t obytes[MAX_IO], len;
	unsigned int nout = 0;
	void *file;
	FILE *io;
	int rc = -1;

	if (parse_pins(pins, shapes, dims, values, &o)) {
		snprintf(r->why, sizeof(r->why), "bad pins in the zoo's list");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s.onnx", r->dir, r->name);
	if (npurt_onnx_import_file(path, &o, &g, NULL) ||
	    npurt_graph_serialize(g, &file, &len, NULL)) {
		snprintf(r->why, sizeof(r->why), "%.400s", npurt_last_error());
		npurt_graph_destroy(g);
		return -1;
	}
	npurt_graph_destroy(g);
	if (npurt_model_load_buffer(dev, file, len, NULL, &r->model)) {
		snprintf(r->why, sizeof(r->why), "load: %s", npurt_last_error());
		free(file);
		return -1;
	}
	free(file);
	snprintf(path, sizeof(path), "%s/%s.io", r->dir, r->name);
	io = fopen(path, "r");
	if (!io) {
		snprintf(r->why, sizeof(r->why), "%.300s: %s", path, strerror(errno));
		goto out;
	}
	while (fgets(line, sizeof(line), io)) {
		char kind[8], a[64], b[256], name[256] = "";
		unsigned int k;
		int n = sscanf(line, "%7s %u %*s %63s %255s %255[^\n]", kind, &k, a, b, name);
		npurt_io_info info = { .size = sizeof(info) };
		int64_t i;

		if (!strcmp(kind, "in")) {	/* in K DTYPE DIMS FILE NAME */
			if (bind_input(r, k, name, b))
				goto close;
			continue;
		}
		/* out K DIMS FILE NAME: no dtype, so the fields shift by one */
		n = sscanf(line, "%7s %u %63s %255s %255[^\n]", kind, &k, a, b, name);
		if (n < 4 || strcmp(kind, "out"))
			continue;
		i = nth_io(r->model, k, true, &info);
		if (nout == MAX_IO || i < 0 || info.dtype != NPURT_F32) {
			snprintf(r->why, sizeof(r->why), "output %u (%.64s): %s", k, name,
				 nout == MAX_IO ? "too many" : "no such float output here");
			goto close;
		}
		outs[nout] = calloc(1, info.bytes ? info.bytes : 1);
		if (!outs[nout] || npurt_model_bind(r->model, (uint32_t)i, outs[nout], info.bytes)) {
			snprintf(r->why, sizeof(r->why), "output %s: %s", name, npurt_last_error());
			goto close;
		}
		snprintf(oname[nout], sizeof(oname[nout]), "%s", name);
		snprintf(ofile[nout], sizeof(ofile[nout]), "%s", b);
		obytes[nout++] = info.bytes;
	}
	if (!nout) {
		snprintf(r->why, sizeof(r->why), "no outputs from onnxruntime in %.300s", path);
		goto close;
	}
	if (npurt_model_execute(r->model, 120000)) {
		snprintf(r->why, sizeof(r->why), "run: %s", npurt_last_error());
		goto close;
	}
	rc = 0;
	for (unsigned int k = 0; k < nout && !rc; k++)
		rc = check_output(r, oname[k], ofile[k], outs[k], obytes[k], worst);
close:
	fclose(io);
out:
	for (unsigned int k = 0; k < nout + 1 && k < MAX_IO; k++)
		free(outs[k]);
	npurt_model_unload(r->model);
	return rc;
}

static npurt_dtype dtype_of(const char *s)
{
	return !strcmp(s, "int64") ? NPURT_I64 : !strcmp(s, "int32") ? NPURT_I32 :
	       !strcmp(s, "float16") ? NPURT_F16 : NPURT_F32;
}

/*
 * The model again in a session: inputs as the .io file has them, shapes
 * and all; value pins from the list (the rest are the inputs' business).
 * 0 matched, -1 with r->why.
 */
static int run_session(npurt_device *dev, struct run *r, char *pins, double *worst)
{
	const char *shapes[MAX_PINS], *dims[MAX_PINS], *values[MAX_PINS];
	npurt_onnx_options o = { .size = sizeof(o), .shapes = shapes, .dim_params = dims,
				 .values = values };
	npurt_onnx_session_desc d = { .size = sizeof(d), .opts = &o };
	npurt_value in[MAX_IO] = { 0 }, out[MAX_IO];
	char path[PATH_MAX], line[4096], oname[MAX_IO][256], ofile[MAX_IO][256];
	unsigned int nin = 0, nout = 0;
	npurt_onnx_session *s = NULL;
	uint32_t want_in, want_out;
	int rc = -1;
	FILE *io;

	if (parse_pins(pins, shapes, dims, values, &o))
		return -1;
	o.n_shapes = o.n_dim_params = 0;
	snprintf(path, sizeof(path), "%s/%s.onnx", r->dir, r->name);
	if (npurt_onnx_session_create_file(dev, path, &d, &s) ||
	    npurt_onnx_session_counts(s, &want_in, &want_out)) {
		snprintf(r->why, sizeof(r->why), "session: %.400s", npurt_last_error());
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s.io", r->dir, r->name);
	io = fopen(path, "r");
	if (!io) {
		snprintf(r->why, sizeof(r->why), "%.300s: %s", path, strerror(errno));
		goto out;
	}
	while (fgets(line, sizeof(line), io)) {
		char kind[8], dt[16], a[64], b[256], name[256] = "";
		unsigned int k;

		if (sscanf(line, "%7s %u %15s %63s %255s %255[^\n]", kind, &k, dt, a, b, name) >= 5 &&
		    !strcmp(kind, "in") && k < MAX_IO) {
			char file[PATH_MAX];
			size_t len = 0;
			npurt_value *v = &in[k];

			snprintf(file, sizeof(file), "%s/%s", r->dir, b);
			v->dtype = dtype_of(dt);
			for (char *t = strtok(a, "x"); t && v->ndim < NPURT_MAX_DIMS; t = strtok(NULL, "x"))
				v->shape[v->ndim++] = strtoull(t, NULL, 10);
			if (!strcmp(a, "-"))
				v->ndim = 0;
			v->data = slurp(file, &len);
			v->bytes = len;
			nin = k + 1 > nin ? k + 1 : nin;
		} else if (sscanf(line, "%7s %u %63s %255s %255[^\n]", kind, &k, a, b, name) >= 4 &&
			   !strcmp(kind, "out") && k < MAX_IO) {
			snprintf(oname[k], sizeof(oname[k]), "%s", name);
			snprintf(ofile[k], sizeof(ofile[k]), "%s", b);
			nout = k + 1 > nout ? k + 1 : nout;
		}
	}
	fclose(io);
	if (nin != want_in || nout != want_out) {
		snprintf(r->why, sizeof(r->why), "session: %u inputs and %u outputs here, %u and %u "
			 "in the session", nin, nout, want_in, want_out);
		goto out;
	}
	if (npurt_onnx_session_run(s, in, nin, out, nout)) {
		snprintf(r->why, sizeof(r->why), "session run: %.400s", npurt_last_error());
		goto out;
	}
	rc = 0;
	for (unsigned int k = 0; k < nout && !rc; k++)
		rc = out[k].dtype == NPURT_F32 ?
		     check_output(r, oname[k], ofile[k], out[k].data, out[k].bytes, worst) : 0;
out:
	for (unsigned int k = 0; k < nin; k++)
		free(in[k].data);
	npurt_onnx_session_destroy(s);
	return rc;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX - 64], exe[PATH_MAX - 128], list[PATH_MAX], line[4096];
	unsigned int n = 0, failed = 0;
	npurt_device *dev;
	FILE *f;
	ssize_t len;

	if (argc > 1) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	} else {
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[len > 0 ? len : 0] = 0;
		if (strrchr(exe, '/'))
			*strrchr(exe, '/') = 0;
		snprintf(dir, sizeof(dir), "%s/../../zoo", exe);
	}
	printf("TAP version 13\n");
	snprintf(list, sizeof(list), "%s/models", dir);
	f = fopen(list, "r");
	if (!f) {
		printf("1..1\nok 1 zoo # SKIP no model zoo in %s (tests/setup zoo, which make check "
		       "runs, fetches it)\n", dir);
		return 0;
	}
	if (npurt_device_open(0, &dev)) {
		printf("1..1\nnot ok 1 zoo # no device: %s\n", npurt_last_error());
		fclose(f);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *pins = strchr(line, ' '), again[4096];
		struct run r = { .dir = dir, .name = line };
		double worst = 0;

		line[strcspn(line, "\n")] = 0;
		if (pins)
			*pins++ = 0;
		if (!line[0])
			continue;
		n++;
		snprintf(again, sizeof(again), "%s", pins ? pins : "");
		if (run_model(dev, &r, pins ? pins : (char[]){ 0 }, &worst)) {
			printf("not ok %u zoo.%s # %s\n", n, r.name, r.why);
			failed++;
		} else {
			printf("ok %u zoo.%s # within %.2g of onnxruntime\n", n, r.name, worst);
		}
		/* Only models the list pins shapes of are dynamic. */
		if (strstr(again, "shape:") || strstr(again, "dim:")) {
			worst = 0;
			n++;
			if (run_session(dev, &r, again, &worst)) {
				printf("not ok %u zoo.%s.session # %s\n", n, r.name, r.why);
				failed++;
			} else {
				printf("ok %u zoo.%s.session # within %.2g of onnxruntime\n", n,
				       r.name, worst);
			}
		}
		for (unsigned int k = 0; k < r.nbuf; k++)
			free(r.buf[k]);
		fflush(stdout);
	}
	fclose(f);
	npurt_device_close(dev);
	printf("1..%u\n", n);
	return failed != 0;
}
