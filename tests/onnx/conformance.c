// SPDX-License-Identifier: MIT
/*
 * The ONNX backend node tests on the NPU: every case of libonnx-testdata
 * (model.onnx, test_data_set_0/input_N.pb and output_N.pb) imported with
 * npurt_onnx_import(), loaded, run once and compared with the expected
 * outputs at the backend tests' tolerance (|got - want| <= atol + rtol
 * |want|, rtol 1e-3, atol 1e-7; NaN matches NaN).
 *
 * A case ends as passed, unsupported (the importer said what it cannot
 * map: the reason is kept) or failed: a wrong result, or any other error,
 * which is a bug. Inputs are bound at run time as an application's would
 * be. Where the import refuses that as unsupported, the case is tried
 * again with its integer and bool inputs (axes, shapes, indices, ...)
 * given as constants, as exporters write such parameters (the device
 * runs static shapes), and then with every input but the first (float
 * parameters such as Resize's scales).
 *
 *   onnx_conformance [--data DIR] [--only SUBSTR] [--table FILE] [--min N] [-v]
 *                    [--import-only]
 *
 * --import-only stops after the import (no device needed): "passed" then
 * means imported.
 *
 * Without --data it runs three suites: the node cases, and the models
 * PyTorch exported at opset 6 (pytorch-converted, pytorch-operator). Per
 * suite it prints a KTAP line for "no case gives a wrong result" and one
 * for "at least N pass" (a floor against regressions: PASS_FLOOR, or
 * --min, for the node cases or the --data directory; every case for the
 * PyTorch ones), the table per op as comments, and writes it as reStructuredText to
 * --table (Documentation/onnx-conformance.inc; "-" writes it to stdout,
 * between "# table" lines, which is how it leaves the VM:
 * tests/vm/run -- build/tests/selftests/onnx_conformance --table -).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_opdefs.h"
#include "npuonnx.h"
#include "onnx.pb-c.h"

#define DATA_DIR	"/usr/share/libonnx-testdata/data/node"
/*
 * Cases that passed on the device when this was last raised: fewer is a
 * regression (make check runs the runner without --min). Raise it as ops
 * land.
 */
#define PASS_FLOOR	825
#define MAX_IO		16

enum verdict { PASSED, UNSUPPORTED, FAILED };

struct op_row {
	char op[64];
	unsigned int n[3];
	char reason[160];		/* the first unsupported case's */
};

static struct op_row rows[512];
static unsigned int nrows;
static bool verbose, import_only;

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0, got;
	char *p = f ? malloc(cap) : NULL;

	while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *q = realloc(p, cap *= 2);

			if (!q)
				free(p);
			p = q;
		}
	}
	if (f)
		fclose(f);
	*len = n;
	return p;
}

static Onnx__TensorProto *read_tensor(const char *path)
{
	size_t len;
	void *buf = slurp(path, &len);
	Onnx__TensorProto *t = buf ? onnx__tensor_proto__unpack(NULL, len, buf) : NULL;

	free(buf);
	return t;
}

static uint64_t tensor_count(const Onnx__TensorProto *t)
{
	uint64_t n = 1;

	for (size_t k = 0; k < t->n_dims; k++)
		n *= (uint64_t)t->dims[k];
	return n;
}

/* ONNX element types and the device's dtypes. */
static const int32_t onnx_of[NPURT_DTYPE_COUNT] = {
	[NPURT_F32] = 1, [NPURT_U8] = 2, [NPURT_I8] = 3, [NPURT_U16] = 4, [NPURT_I16] = 5,
	[NPURT_I32] = 6, [NPURT_I64] = 7, [NPURT_BOOL] = 9, [NPURT_F16] = 10, [NPURT_F64] = 11,
	[NPURT_U32] = 12, [NPURT_U64] = 13, [NPURT_BF16] = 16,
};

static int dtype_of(int32_t type)
{
	for (int d = 0; d < NPURT_DTYPE_COUNT; d++)
		if (onnx_of[d] == type)
			return d;
	return -1;
}

/*
 * A tensor's bytes as the device has them (`type` the graph's element
 * type: data sets keep bfloat16 as uint16), raw or from the typed fields;
 * NULL for a type the device does not have.
 */
static void *tensor_bytes(const Onnx__TensorProto *t, int32_t type, uint64_t *bytes)
{
	uint64_t n = tensor_count(t);
	int dt = dtype_of(type);
	size_t es = dt < 0 ? 0 : npu_dtype_size((uint32_t)dt);
	uint8_t *v;

	if (!es)
		return NULL;
	*bytes = n * es;
	v = malloc(n ? n * es : 1);
	if (!v)
		return NULL;
	if (t->has_raw_data && t->raw_data.len == n * es) {
		memcpy(v, t->raw_data.data, n * es);
		return v;
	}
	for (uint64_t k = 0; k < n; k++) {
		union npu_num x = { .u = 0 };
		enum npu_dom dom = NPU_DOM_INT;

		if (type == 1 && t->n_float_data == n) {
			x.f = t->float_data[k];
			dom = NPU_DOM_FLOAT;
		} else if (type == 11 && t->n_double_data == n) {
			x.f = t->double_data[k];
			dom = NPU_DOM_FLOAT;
		} else if (type == 7 && t->n_int64_data == n) {
			x.i = t->int64_data[k];
		} else if ((type == 12 || type == 13) && t->n_uint64_data == n) {
			x.u = t->uint64_data[k];
		} else if ((type == 10 || type == 16) && t->n_int32_data == n) {
			uint16_t h = (uint16_t)t->int32_data[k];

			memcpy(v + 2 * k, &h, 2);	/* the bits themselves */
			continue;
		} else if (type != 1 && type != 11 && type != 7 && type != 12 && type != 13 &&
			   t->n_int32_data == n) {
			x.i = t->int32_data[k];
		} else {
			free(v);
			return NULL;
		}
		npu_store(v, k, (uint32_t)dt, x, dom);
	}
	return v;
}

/* The data's dims are the declared ones (where the model declares them). */
static bool same_dims(const Onnx__ValueInfoProto *vi, const Onnx__TensorProto *t)
{
	const Onnx__TensorShapeProto *sh;

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !(sh = vi->type->tensor_type->shape))
		return true;
	if (sh->n_dim != t->n_dims)
		return false;
	for (size_t k = 0; k < sh->n_dim; k++)
		if (sh->dim[k]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    sh->dim[k]->dim_value != t->dims[k])
			return false;
	return true;
}

static int32_t elem_type(const Onnx__ValueInfoProto *vi)
{
	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return 0;
	return vi->type->tensor_type->elem_type;
}

/*
 * Cases whose expected data disagree with the ONNX operator definitions
 * this device follows: counted as unsupported, with the reason.
 */
static const struct {
	const char *name, *why;
} disagree[] = {
	{ "test_cast_FLOAT_to_BFLOAT16", "the 1.12 data set truncates to bfloat16; the device "
	  "rounds to nearest even, as ONNX's Cast says since opset 13" },
};

static struct op_row *row(const char *op)
{
	for (unsigned int k = 0; k < nrows; k++)
		if (!strcmp(rows[k].op, op))
			return &rows[k];
	if (nrows == sizeof(rows) / sizeof(rows[0]))
		return &rows[nrows - 1];
	snprintf(rows[nrows].op, sizeof(rows[0].op), "%s", op);
	return &rows[nrows++];
}

/* Element e of two device tensors of dtype dt: floats at the tolerance, the rest exact. */
static bool close_enough(const void *got, const void *want, int dt, uint64_t e, char *txt,
			 size_t len)
{
	union npu_num g = npu_load(got, e, (uint32_t)dt), w = npu_load(want, e, (uint32_t)dt);

	if (npu_dtype_dom((uint32_t)dt) != NPU_DOM_FLOAT) {
		snprintf(txt, len, "%lld, want %lld", (long long)g.i, (long long)w.i);
		return g.u == w.u;
	}
	snprintf(txt, len, "%.9g, want %.9g", g.f, w.f);
	if (isnan(w.f))
		return isnan(g.f);
	if (isinf(w.f))
		return g.f == w.f;
	return fabs(g.f - w.f) <= 1e-7 + 1e-3 * fabs(w.f);
}

/*
 * One case: *why says what went wrong (or what is unsupported). The
 * model's non-float inputs become initializers before the import.
 */
/*
 * Which of a case's inputs become constants: none; the integer and bool
 * ones; every one but the first (parameters such as Resize's scales).
 */
enum consts { CONST_NONE, CONST_INTEGERS, CONST_BUT_FIRST };

static enum verdict run_case(npurt_device *dev, const char *dir, enum consts cm, char *why,
			     size_t wlen)
{
	Onnx__TensorProto *ins[MAX_IO] = { NULL }, *outs[MAX_IO] = { NULL };
	Onnx__TensorProto *consts[MAX_IO];
	const char *in_name[MAX_IO] = { NULL };
	int32_t in_type[MAX_IO] = { 0 }, out_type[MAX_IO] = { 0 };
	int out_dt[MAX_IO] = { 0 };
	uint64_t out_bytes[MAX_IO] = { 0 };
	Onnx__TensorProto **init_saved;
	Onnx__ModelProto *m = NULL;
	void *bufs[2 * MAX_IO] = { NULL };
	npurt_graph *g = NULL;
	npurt_model *model = NULL;
	enum verdict v = FAILED;
	size_t len, nins = 0, nouts = 0, nconst = 0, n_init_saved;
	void *file = NULL, *packed = NULL, *mf = NULL;
	size_t mflen;
	char path[4200];
	npurt_status st;

	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	file = slurp(path, &len);
	m = file ? onnx__model_proto__unpack(NULL, len, file) : NULL;
	if (!m || !m->graph) {
		snprintf(why, wlen, "model.onnx does not parse");
		goto out;
	}
	for (size_t k = 0; k < MAX_IO; k++) {
		snprintf(path, sizeof(path), "%s/test_data_set_0/input_%zu.pb", dir, k);
		ins[k] = read_tensor(path);
		if (!ins[k])
			break;
		nins++;
	}
	for (size_t k = 0; k < MAX_IO; k++) {
		snprintf(path, sizeof(path), "%s/test_data_set_0/output_%zu.pb", dir, k);
		outs[k] = read_tensor(path);
		if (!outs[k])
			break;
		nouts++;
	}
	/*
	 * Input k of the data set is the graph's k-th input that is no
	 * initializer; those not of a float type become constants.
	 */
	{
		size_t k = 0;

		for (size_t i = 0; i < m->graph->n_input && k < nins; i++) {
			const Onnx__ValueInfoProto *vi = m->graph->input[i];
			int32_t type = elem_type(vi);
			bool init = false;

			for (size_t j = 0; j < m->graph->n_initializer; j++)
				init |= !strcmp(m->graph->initializer[j]->name, vi->name);
			if (init)
				continue;
			in_name[k] = vi->name;
			in_type[k] = type;
			if (!same_dims(vi, ins[k])) {
				snprintf(why, wlen, "the data set's input %zu (\"%.64s\") is not of "
					 "the shape its model declares (the device runs static "
					 "shapes)", k, vi->name);
				v = UNSUPPORTED;
				goto out;
			}
			if (type && ((cm == CONST_INTEGERS && type != 1 && type != 10 &&
				      type != 16 && type != 11) || (cm == CONST_BUT_FIRST && k) ||
				     dtype_of(type) < 0) && nconst < MAX_IO) {
				free(ins[k]->name);
				ins[k]->name = strdup(vi->name);
				consts[nconst++] = ins[k];
				in_type[k] = 0;
			}
			k++;
		}
	}
	n_init_saved = m->graph->n_initializer;
	init_saved = m->graph->initializer;
	if (nconst) {
		Onnx__TensorProto **all = calloc(n_init_saved + nconst, sizeof(*all));

		if (!all) {
			snprintf(why, wlen, "out of memory");
			goto out;
		}
		memcpy(all, init_saved, n_init_saved * sizeof(*all));
		memcpy(all + n_init_saved, consts, nconst * sizeof(*all));
		m->graph->initializer = all;
		m->graph->n_initializer = n_init_saved + nconst;
	}
	len = onnx__model_proto__get_packed_size(m);
	packed = malloc(len ? len : 1);
	if (packed)
		onnx__model_proto__pack(m, packed);
	if (nconst) {
		free(m->graph->initializer);
		m->graph->initializer = init_saved;
		m->graph->n_initializer = n_init_saved;
	}
	if (!packed) {
		snprintf(why, wlen, "out of memory");
		goto out;
	}
	st = npurt_onnx_import(packed, len, NULL, &g, NULL);
	if (st) {
		snprintf(why, wlen, "%s", npurt_last_error());
		v = st == NPURT_ERR_UNSUPPORTED ? UNSUPPORTED : FAILED;
		goto out;
	}
	if (import_only) {
		v = PASSED;
		goto out;
	}
	if (npurt_graph_serialize(g, &mf, &mflen, NULL) ||
	    npurt_model_load_buffer(dev, mf, mflen, NULL, &model)) {
		snprintf(why, wlen, "%s", npurt_last_error());
		goto out;
	}
	/* Bind the inputs, by the graph's names, and every output. */
	for (size_t k = 0; k < nins; k++) {
		uint64_t bytes;
		uint32_t idx;

		if (!in_type[k])
			continue;		/* a constant now */
		bufs[k] = tensor_bytes(ins[k], in_type[k], &bytes);
		if (!bufs[k] || !in_name[k] || npurt_model_io_find(model, in_name[k], &idx) ||
		    npurt_model_bind(model, idx, bufs[k], bytes)) {
			snprintf(why, wlen, "input %zu: %s", k, bufs[k] ? npurt_last_error() :
				 "unreadable data");
			goto out;
		}
	}
	for (size_t k = 0; k < nouts; k++) {
		npurt_io_info io = { .size = sizeof(io) };
		uint32_t idx;

		if (k >= m->graph->n_output ||
		    npurt_model_io_find(model, m->graph->output[k]->name, &idx) ||
		    npurt_model_io(model, idx, &io)) {
			snprintf(why, wlen, "output %zu: %s", k, npurt_last_error());
			goto out;
		}
		out_dt[k] = (int)io.dtype;
		out_type[k] = onnx_of[io.dtype];
		out_bytes[k] = io.bytes;
		bufs[MAX_IO + k] = calloc(1, io.bytes ? io.bytes : 1);
		if (!bufs[MAX_IO + k] || npurt_model_bind(model, idx, bufs[MAX_IO + k], io.bytes)) {
			snprintf(why, wlen, "output %zu: %s", k, npurt_last_error());
			goto out;
		}
	}
	if (npurt_model_execute(model, 20000)) {
		snprintf(why, wlen, "execute: %s", npurt_last_error());
		goto out;
	}
	for (size_t k = 0; k < nouts; k++) {
		uint64_t bytes, cnt = tensor_count(outs[k]);
		void *want = tensor_bytes(outs[k], out_type[k], &bytes);

		if (!want || bytes != out_bytes[k]) {
			snprintf(why, wlen, "output %zu: %llu bytes, the data set has %s", k,
				 (unsigned long long)out_bytes[k],
				 want ? "another size" : "another type");
			free(want);
			goto out;
		}
		for (uint64_t e = 0; e < cnt; e++) {
			char txt[96];

			if (!close_enough(bufs[MAX_IO + k], want, out_dt[k], e, txt, sizeof(txt))) {
				snprintf(why, wlen, "output %zu element %llu: %s", k,
					 (unsigned long long)e, txt);
				free(want);
				goto out;
			}
		}
		free(want);
	}
	v = PASSED;
out:
	npurt_model_unload(model);
	npurt_graph_destroy(g);
	free(mf);
	free(packed);
	for (size_t k = 0; k < 2 * MAX_IO; k++)
		free(bufs[k]);
	for (size_t k = 0; k < MAX_IO; k++) {
		if (ins[k])
			onnx__tensor_proto__free_unpacked(ins[k], NULL);
		if (outs[k])
			onnx__tensor_proto__free_unpacked(outs[k], NULL);
	}
	if (m)
		onnx__model_proto__free_unpacked(m, NULL);
	free(file);
	return v;
}

/* The op a case tests: its single node's type, or "(expanded)" for function bodies. */
static void case_op(const char *dir, char *op, size_t len)
{
	char path[4200];
	size_t n;
	void *file;
	Onnx__ModelProto *m;

	snprintf(op, len, "?");
	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	file = slurp(path, &n);
	m = file ? onnx__model_proto__unpack(NULL, n, file) : NULL;
	if (m && m->graph && m->graph->n_node) {
		if (strstr(dir, "_expanded"))
			snprintf(op, len, "(expanded)");
		else
			snprintf(op, len, "%s", m->graph->node[m->graph->n_node - 1]->op_type);
	}
	if (m)
		onnx__model_proto__free_unpacked(m, NULL);
	free(file);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int by_op(const void *a, const void *b)
{
	return strcmp(((const struct op_row *)a)->op, ((const struct op_row *)b)->op);
}

static void write_table(const char *path, const unsigned int *total)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;

	if (!f) {
		fprintf(stderr, "onnx_conformance: %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, ".. Written by tests/onnx/conformance.c (--table); do not edit.\n\n");
	fprintf(f, "%u passed, %u unsupported, %u failed of %u cases.\n\n", total[PASSED],
		total[UNSUPPORTED], total[FAILED], total[0] + total[1] + total[2]);
	fprintf(f, "======================  ======  ===========  ======  ==========================="
		   "======================================\n");
	fprintf(f, "op                      passed  unsupported  failed  why unsupported (first "
		   "case)\n");
	fprintf(f, "======================  ======  ===========  ======  ==========================="
		   "======================================\n");
	for (unsigned int k = 0; k < nrows; k++) {
		const char *r = rows[k].reason;
		const char *type = strstr(r, "\" (");

		/* "onnx: node 3 "name" (Op): why": from the op type on */
		if (type)
			r = type + 2;
		else if (!strncmp(r, "onnx: ", 6))
			r += 6;
		fprintf(f, "%-22.22s  %6u  %11u  %6u  %.65s\n", rows[k].op, rows[k].n[PASSED],
			rows[k].n[UNSUPPORTED], rows[k].n[FAILED], r);
	}
	fprintf(f, "======================  ======  ===========  ======  ==========================="
		   "======================================\n");
	if (f != stdout)
		fclose(f);
}

/* The suites make check runs: libonnx-testdata's node cases and the PyTorch exports. */
static const struct suite {
	const char *dir, *name;
	unsigned int floor;	/* passed on the device when last raised */
} suites[] = {
	{ DATA_DIR, "conformance", PASS_FLOOR },
	/* opset 6, as PyTorch exported them in 2018: all of them */
	{ "/usr/share/libonnx-testdata/data/pytorch-converted", "pytorch_converted", 82 },
	{ "/usr/share/libonnx-testdata/data/pytorch-operator", "pytorch_operator", 35 },
};

/*
 * One directory of cases: two KTAP results from `first` on (no case gives
 * a wrong result; at least `min` pass) and the per-op table; 1 if either
 * fails.
 */
static int run_suite(npurt_device *dev, const char *data, const char *name, unsigned int min,
		     const char *only, const char *table, unsigned int first)
{
	unsigned int total[3] = { 0 };
	char **names = NULL;
	size_t nnames = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	nrows = 0;
	memset(rows, 0, sizeof(rows));
	d = opendir(data);
	if (!d) {
		printf("ok %u onnx.%s # SKIP %s: %s (Debian's libonnx-testdata)\n", first, name,
		       data, strerror(errno));
		printf("ok %u onnx.%s_floor # SKIP no data\n", first + 1, name);
		return 0;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "test_", 5) || (only && !strstr(de->d_name, only)))
			continue;
		if (nnames == cap) {
			char **p = realloc(names, (cap = cap ? 2 * cap : 1024) * sizeof(*p));

			if (!p)
				return 1;
			names = p;
		}
		names[nnames++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, nnames, sizeof(*names), by_name);
	for (size_t k = 0; k < nnames; k++) {
		char dir[4000], op[64], why[512] = "";
		enum verdict v;
		struct op_row *r;

		snprintf(dir, sizeof(dir), "%s/%s", data, names[k]);
		case_op(dir, op, sizeof(op));
		v = run_case(dev, dir, CONST_NONE, why, sizeof(why));
		for (enum consts cm = CONST_INTEGERS; v == UNSUPPORTED && cm <= CONST_BUT_FIRST; cm++)
			v = run_case(dev, dir, cm, why, sizeof(why));
		if (v == PASSED)
			why[0] = 0;
		for (size_t j = 0; j < sizeof(disagree) / sizeof(disagree[0]); j++)
			if (v == FAILED && !strcmp(names[k], disagree[j].name)) {
				v = UNSUPPORTED;
				snprintf(why, sizeof(why), "%s", disagree[j].why);
			}
		r = row(op);
		r->n[v]++;
		total[v]++;
		if (v == UNSUPPORTED && !r->reason[0])
			snprintf(r->reason, sizeof(r->reason), "%s", why);
		if (v == FAILED || verbose)
			printf("# %s %s: %s\n", v == PASSED ? "passed" : v == FAILED ? "FAILED" :
			       "unsupported", names[k], why);
		free(names[k]);
	}
	free(names);
	qsort(rows, nrows, sizeof(rows[0]), by_op);
	printf("# %s (%s)\n# %-22s %6s %11s %6s\n", name, data, "op", "passed", "unsupported",
	       "failed");
	for (unsigned int k = 0; k < nrows; k++)
		printf("# %-22s %6u %11u %6u\n", rows[k].op, rows[k].n[PASSED],
		       rows[k].n[UNSUPPORTED], rows[k].n[FAILED]);
	printf("# total: %u passed, %u unsupported, %u failed\n", total[PASSED],
	       total[UNSUPPORTED], total[FAILED]);
	if (table) {
		if (!strcmp(table, "-"))
			printf("# table\n");
		write_table(table, total);
		if (!strcmp(table, "-"))
			printf("# table\n");
	}
	printf("%sok %u onnx.%s_no_wrong_results # %u failed\n", total[FAILED] ? "not " : "",
	       first, name, total[FAILED]);
	printf("%sok %u onnx.%s_at_least_%u_pass # %u passed\n", total[PASSED] < min ? "not " : "",
	       first + 1, name, min, total[PASSED]);
	return total[FAILED] || total[PASSED] < min;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "only", required_argument, NULL, 'o' },
		{ "table", required_argument, NULL, 't' }, { "min", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' }, { "import-only", no_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char *data = NULL, *only = NULL, *table = NULL;
	unsigned int min = PASS_FLOOR, n = sizeof(suites) / sizeof(suites[0]);
	npurt_device *dev = NULL;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "d:o:t:m:vi", opts, NULL)) != -1) {
		switch (c) {
		case 'd': data = optarg; break;
		case 'o': only = optarg; break;
		case 't': table = optarg; break;
		case 'm': min = (unsigned int)strtoul(optarg, NULL, 10); break;
		case 'v': verbose = true; break;
		case 'i': import_only = true; break;
		default:
			fprintf(stderr, "usage: onnx_conformance [--data DIR] [--only SUBSTR] "
				"[--table FILE] [--min N] [-v] [--import-only]\n");
			return 2;
		}
	}
	printf("TAP version 13\n1..%u\n", data ? 2 : 2 * n);
	if (!import_only && npurt_device_open(0, &dev)) {
		printf("not ok 1 onnx.conformance # no device: %s\n", npurt_last_error());
		return 1;
	}
	if (data)	/* one directory, its floor --min */
		rc = run_suite(dev, data, "conformance", min, only, table, 1);
	else		/* the table is the node cases' */
		for (unsigned int k = 0; k < n; k++)
			rc |= run_suite(dev, suites[k].dir, suites[k].name,
					k ? suites[k].floor : min, only, k ? NULL : table, 2 * k + 1);
	if (!import_only)
		npurt_device_close(dev);
	return rc;
}
