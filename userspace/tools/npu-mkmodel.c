// SPDX-License-Identifier: MIT
/*
 * npu-mkmodel: a model file from a small text description, through
 * libnpurt's graph builder (the language: Documentation/model-format.rst,
 * "npu-mkmodel"). One statement a line, '#' starts a comment:
 *
 *   input  x f32 16,32
 *   const  w f32 32,64 random 42 0.5      (zeros | ones | value V |
 *                                          random SEED [SCALE] | file PATH)
 *   tensor acc f32 4,8                    (a feature map written later)
 *   view   v x 0 2,4 32,1                 (NAME BASE OFFSET SHAPE STRIDES)
 *   h = gemm x w [alpha=F beta=F trans_a trans_b axis=N perm=a,b eps=F
 *                 to=f16 cores=N stream=N]
 *   into acc gemm w v beta=1              (writes an existing tensor)
 *   copy dst src [stream=N]
 *   fill dst VALUE [stream=N]
 *   output y h
 *
 * Exit status: 0 written, 1 a bad description (the line and why), 2
 * usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npurt.h"

#define MAX_NAMES	65536
#define MAX_TOKENS	32

struct name {
	char *name;
	uint32_t tensor;
};

static struct name names[MAX_NAMES];
static unsigned int nnames;
static const char *file;
static unsigned int lineno;

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "npu-mkmodel: %s:%u: ", file, lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static int lib(const char *what)
{
	return bad("%s: %s", what, npurt_last_error());
}

static int lookup(const char *n, uint32_t *t)
{
	for (unsigned int i = 0; i < nnames; i++) {
		if (!strcmp(names[i].name, n)) {
			*t = names[i].tensor;
			return 0;
		}
	}
	return bad("no tensor called \"%s\"", n);
}

static int define(const char *n, uint32_t t)
{
	for (unsigned int i = 0; i < nnames; i++)
		if (!strcmp(names[i].name, n))
			return bad("\"%s\" is defined twice", n);
	if (nnames == MAX_NAMES)
		return bad("more than %d names", MAX_NAMES);
	names[nnames].name = strdup(n);
	if (!names[nnames].name)
		return bad("out of memory");
	names[nnames++].tensor = t;
	return 0;
}

static int dtype_of(const char *s, npurt_dtype *d)
{
	if (!strcmp(s, "f32"))
		*d = NPURT_F32;
	else if (!strcmp(s, "f16"))
		*d = NPURT_F16;
	else if (!strcmp(s, "bf16"))
		*d = NPURT_BF16;
	else
		return bad("unknown dtype \"%s\" (f32, f16, bf16)", s);
	return 0;
}

/* "16,32" -> {16, 32}: the count, or -1. */
static int list_of(const char *s, uint64_t *v, bool zero_ok)
{
	int n = 0;

	while (*s) {
		char *end;
		unsigned long long x;

		if (n == NPURT_MAX_DIMS)
			return bad("more than %d dimensions", NPURT_MAX_DIMS);
		errno = 0;
		x = strtoull(s, &end, 10);
		if (errno || end == s || (*end && *end != ',') || (!x && !zero_ok))
			return bad("bad list \"%s\"", s);
		v[n++] = x;
		s = *end ? end + 1 : end;
	}
	return n ? n : bad("an empty list");
}

static uint64_t count(const uint64_t *shape, int n)
{
	uint64_t c = 1;

	for (int i = 0; i < n; i++)
		c *= shape[i];
	return c;
}

/* A constant's values (f32: other dtypes come from a cast op). */
static int const_data(char **tok, int nt, uint64_t n, npurt_dtype d, float **out)
{
	float *v;

	if (d != NPURT_F32)
		return bad("constants are f32 (use cast for others)");
	if (n > (1ull << 28))
		return bad("a constant of %llu elements", (unsigned long long)n);
	v = malloc(n * sizeof(*v));
	if (!v)
		return bad("out of memory");
	*out = v;
	if (nt < 1)
		return bad("a constant needs its data: zeros, ones, value V, random SEED, file PATH");
	if (!strcmp(tok[0], "zeros") || !strcmp(tok[0], "ones")) {
		for (uint64_t i = 0; i < n; i++)
			v[i] = tok[0][0] == 'o' ? 1.0f : 0.0f;
	} else if (!strcmp(tok[0], "value") && nt == 2) {
		float x = strtof(tok[1], NULL);

		for (uint64_t i = 0; i < n; i++)
			v[i] = x;
	} else if (!strcmp(tok[0], "random") && (nt == 2 || nt == 3)) {
		uint64_t s = strtoull(tok[1], NULL, 0) * 2654435761u + 1;
		float scale = nt == 3 ? strtof(tok[2], NULL) : 1.0f;

		for (uint64_t i = 0; i < n; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			v[i] = ((float)(s >> 40) / (float)(1 << 24) * 2.0f - 1.0f) * scale;
		}
	} else if (!strcmp(tok[0], "file") && nt == 2) {
		FILE *f = fopen(tok[1], "rb");
		size_t got = f ? fread(v, sizeof(*v), n, f) : 0;

		if (f)
			fclose(f);
		if (got != n)
			return bad("%s: %zu of %llu floats", tok[1], got, (unsigned long long)n);
	} else {
		return bad("unknown constant data \"%s\"", tok[0]);
	}
	return 0;
}

/* key=value options of an op. */
static int options(char **tok, int nt, npurt_graph_node *n)
{
	for (int i = 0; i < nt; i++) {
		char *k = tok[i], *v = strchr(k, '=');
		uint64_t p[NPURT_MAX_DIMS];
		int c;

		if (v)
			*v++ = 0;
		if (!strcmp(k, "trans_a") && !v)
			n->flags |= NPURT_LAUNCH_TRANS_A;
		else if (!strcmp(k, "trans_b") && !v)
			n->flags |= NPURT_LAUNCH_TRANS_B;
		else if (!strcmp(k, "alpha") && v)
			n->alpha = strtof(v, NULL);
		else if (!strcmp(k, "beta") && v)
			n->beta = strtof(v, NULL);
		else if (!strcmp(k, "eps") && v)
			n->eps = strtof(v, NULL);
		else if (!strcmp(k, "axis") && v)
			n->axis = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "stream") && v)
			n->stream = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "cores") && v)
			n->block_dim = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "to") && v) {
			if (dtype_of(v, &n->out_dtype))
				return -1;
		} else if (!strcmp(k, "perm") && v) {
			c = list_of(v, p, true);
			if (c < 0)
				return -1;
			for (int j = 0; j < c; j++)
				n->perm[j] = (uint32_t)p[j];
		} else {
			return bad("unknown option \"%s\"", k);
		}
	}
	return 0;
}

/* An op: `name = op in [in2] [opts]` or `into out op in [in2] [opts]`. */
static int op_line(npurt_graph *g, char **tok, int nt, bool into)
{
	npurt_graph_node n = { .size = sizeof(n), .alpha = 1.0f };
	uint32_t out, t;
	int at = 2, ins = 0;	/* tok[2] is the op, in both forms */

	if (nt < 4)
		return bad("an op needs an op name and an input");
	if (npurt_op_lookup(tok[at], &n.op))
		return lib("op");
	for (at++; at < nt && !strchr(tok[at], '=') && ins < 2 &&
		   strcmp(tok[at], "trans_a") && strcmp(tok[at], "trans_b"); at++) {
		if (lookup(tok[at], &t))
			return -1;
		n.in[ins++] = t;
	}
	if (!ins)
		return bad("%s: no input", tok[2]);
	if (options(tok + at, nt - at, &n))
		return -1;
	if (into) {
		if (lookup(tok[1], &out))
			return -1;
		return npurt_graph_add_into(g, &n, out) ? lib("into") : 0;
	}
	if (npurt_graph_add(g, &n, &out))
		return lib(tok[2]);
	return define(tok[0], out);
}

static int stream_opt(char **tok, int nt, int at, uint32_t *stream)
{
	*stream = 0;
	if (at < nt && !strncmp(tok[at], "stream=", 7)) {
		*stream = (uint32_t)strtoul(tok[at] + 7, NULL, 10);
		at++;
	}
	return at == nt ? 0 : bad("unexpected \"%s\"", tok[at]);
}

static int statement(npurt_graph *g, char **tok, int nt)
{
	uint64_t shape[NPURT_MAX_DIMS], stride[NPURT_MAX_DIMS];
	npurt_dtype d;
	uint32_t t, u, stream;
	int n;

	if (!strcmp(tok[0], "input") || !strcmp(tok[0], "tensor") || !strcmp(tok[0], "const")) {
		if (nt < 4)
			return bad("%s NAME DTYPE SHAPE", tok[0]);
		if (dtype_of(tok[2], &d) || (n = list_of(tok[3], shape, false)) < 0)
			return -1;
		if (tok[0][0] == 'i') {
			if (nt != 4)
				return bad("unexpected \"%s\"", tok[4]);
			if (npurt_graph_input(g, tok[1], d, (uint32_t)n, shape, &t))
				return lib("input");
		} else if (tok[0][0] == 't') {
			if (nt != 4)
				return bad("unexpected \"%s\"", tok[4]);
			if (npurt_graph_tensor(g, tok[1], d, (uint32_t)n, shape, &t))
				return lib("tensor");
		} else {
			float *v = NULL;
			int r = const_data(tok + 4, nt - 4, count(shape, n), d, &v);

			if (!r && npurt_graph_constant(g, tok[1], d, (uint32_t)n, shape, v, &t))
				r = lib("const");
			free(v);
			if (r)
				return r;
		}
		return define(tok[1], t);
	}
	if (!strcmp(tok[0], "view")) {
		int ns;

		if (nt != 6)
			return bad("view NAME BASE OFFSET SHAPE STRIDES");
		if (lookup(tok[2], &u) || (n = list_of(tok[4], shape, false)) < 0 ||
		    (ns = list_of(tok[5], stride, true)) < 0)
			return -1;
		if (ns != n)
			return bad("%d dimensions, %d strides", n, ns);
		if (npurt_graph_view(g, u, strtoull(tok[3], NULL, 10), (uint32_t)n, shape, stride, &t))
			return lib("view");
		return define(tok[1], t);
	}
	if (!strcmp(tok[0], "into"))
		return nt >= 4 ? op_line(g, tok, nt, true) : bad("into OUT OP IN...");
	if (nt >= 3 && !strcmp(tok[1], "="))
		return op_line(g, tok, nt, false);
	if (!strcmp(tok[0], "copy")) {
		if (nt < 3 || lookup(tok[1], &t) || lookup(tok[2], &u) || stream_opt(tok, nt, 3, &stream))
			return nt < 3 ? bad("copy DST SRC") : -1;
		return npurt_graph_copy(g, stream, u, t) ? lib("copy") : 0;
	}
	if (!strcmp(tok[0], "fill")) {
		if (nt < 3 || lookup(tok[1], &t) || stream_opt(tok, nt, 3, &stream))
			return nt < 3 ? bad("fill DST VALUE") : -1;
		return npurt_graph_fill(g, stream, t, (uint32_t)strtoul(tok[2], NULL, 0)) ?
		       lib("fill") : 0;
	}
	if (!strcmp(tok[0], "output")) {
		if (nt != 3 || lookup(tok[2], &t))
			return nt != 3 ? bad("output NAME TENSOR") : -1;
		return npurt_graph_output(g, t, tok[1]) ? lib("output") : 0;
	}
	return bad("unknown statement \"%s\"", tok[0]);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: npu-mkmodel [-o OUT] [-q] DESCRIPTION\n"
		   "  Writes the model file OUT (default: DESCRIPTION with .npu for its\n"
		   "  extension) from a text description; prints the memory plan.\n"
		   "  -o, --output OUT   where to write it\n"
		   "  -q, --quiet        print nothing\n"
		   "Exit status: 0 written, 1 a bad description, 2 usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	npurt_plan_info info = { .size = sizeof(info) };
	char *out = NULL, line[4096];
	npurt_graph *g;
	int c, quiet = 0, rc = 0;
	FILE *f;

	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	file = argv[optind];
	f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "npu-mkmodel: %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (npurt_graph_create(&g)) {
		fprintf(stderr, "npu-mkmodel: %s\n", npurt_last_error());
		fclose(f);
		return 1;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *tok[MAX_TOKENS], *save, *p;
		int nt = 0;

		lineno++;
		if ((p = strchr(line, '#')))
			*p = 0;
		for (p = strtok_r(line, " \t\r\n", &save); p; p = strtok_r(NULL, " \t\r\n", &save)) {
			if (nt == MAX_TOKENS) {
				rc = bad("more than %d words", MAX_TOKENS);
				break;
			}
			tok[nt++] = p;
		}
		if (!rc && nt)
			rc = statement(g, tok, nt);
	}
	fclose(f);
	if (!rc) {
		char def[4096];

		if (!out) {
			const char *dot = strrchr(file, '.');
			int stem = dot && !strchr(dot, '/') ? (int)(dot - file) : (int)strlen(file);

			snprintf(def, sizeof(def), "%.*s.npu", stem, file);
			out = def;
		}
		if (npurt_graph_save(g, out, &info)) {
			fprintf(stderr, "npu-mkmodel: %s: %s\n", file, npurt_last_error());
			rc = -1;
		} else if (!quiet) {
			printf("%s: %u ops on %u stream%s (%u events), %u inputs, %u outputs\n", out,
			       info.ops, info.streams, info.streams == 1 ? "" : "s", info.events,
			       info.inputs, info.outputs);
			printf("  weights      %llu bytes\n", (unsigned long long)info.weights_bytes);
			printf("  feature maps %llu bytes planned, %llu summed, %llu live at most\n",
			       (unsigned long long)info.fmap_bytes, (unsigned long long)info.fmap_sum,
			       (unsigned long long)info.fmap_peak);
		}
	}
	for (unsigned int i = 0; i < nnames; i++)
		free(names[i].name);
	npurt_graph_destroy(g);
	return rc ? 1 : 0;
}
