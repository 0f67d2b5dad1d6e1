// SPDX-License-Identifier: MIT
/*
 * npu-onnx: an ONNX model made into a model file for the NPU, through
 * npurt_onnx_import() (Documentation/onnx.rst).
 *
 *   npu-onnx MODEL.onnx [-o OUT.npu] [-q] [--shape NAME=AxBxC]... [--dim-param NAME=N]...
 *            [--value NAME=V,...]...
 *
 * Prints what the import did (nodes folded on the host, nodes that became
 * views, device ops) and the memory plan. Exit status: 0 written, 1 the
 * model cannot be imported (the node and why), 2 usage.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npuonnx.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: npu-onnx [-o OUT.npu] [-q] [--shape NAME=AxBxC]... "
		   "[--dim-param NAME=N]... [--value NAME=V,...]... MODEL.onnx\n"
		   "  -o, --output FILE     the model file (default: MODEL with .npu for .onnx)\n"
		   "  -q, --quiet           print nothing on success\n"
		   "  --shape NAME=AxBxC    input NAME has this shape (pins its symbolic\n"
		   "                        dimensions; repeatable)\n"
		   "  --dim-param NAME=N    every input dimension called NAME is N (repeatable)\n"
		   "  --value NAME=V,...    input NAME holds these values: a constant now, no\n"
		   "                        input (repeatable)\n"
		   "Exit status: 0 written, 1 the model cannot be imported, 2 usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "shape", required_argument, NULL, 'S' },
		{ "dim-param", required_argument, NULL, 'D' },
		{ "value", required_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	/* at most one of each per argument */
	const char **shapes = calloc((size_t)argc, sizeof(*shapes));
	const char **dims = calloc((size_t)argc, sizeof(*dims));
	const char **values = calloc((size_t)argc, sizeof(*values));
	npurt_onnx_options pins = { .size = sizeof(pins), .shapes = shapes, .dim_params = dims,
				    .values = values };
	npurt_onnx_info oi = { .size = sizeof(oi) };
	npurt_plan_info pi = { .size = sizeof(pi) };
	const char *out = NULL;
	npurt_graph *g;
	char *made = NULL;
	bool quiet = false;
	int c, rc = 0;

	if (!shapes || !dims || !values) {
		free(shapes);
		free(dims);
		free(values);
		return 1;
	}
	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'q': quiet = true; break;
		case 'S': shapes[pins.n_shapes++] = optarg; break;
		case 'D': dims[pins.n_dim_params++] = optarg; break;
		case 'V': values[pins.n_values++] = optarg; break;
		case 'h': usage(stdout); rc = 0; goto out;
		default: usage(stderr); rc = 2; goto out;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	if (!out) {
		const char *in = argv[optind];
		size_t n = strlen(in);

		made = malloc(n + 5);
		if (!made) {
			rc = 1;
			goto out;
		}
		if (n > 5 && !strcmp(in + n - 5, ".onnx"))
			n -= 5;
		memcpy(made, in, n);
		strcpy(made + n, ".npu");
		out = made;
	}
	if (npurt_onnx_import_file(argv[optind], &pins, &g, &oi)) {
		fprintf(stderr, "npu-onnx: %s: %s\n", argv[optind], npurt_last_error());
		rc = 1;
		goto out;
	}
	if (npurt_graph_save(g, out, &pi)) {
		fprintf(stderr, "npu-onnx: %s\n", npurt_last_error());
		rc = 1;
	} else if (!quiet) {
		printf("%s: opset %u, %u nodes: %u folded on the host, %u views, %u fused "
		       "(%u QDQ groups as integer ops), %u device ops\n", argv[optind], oi.opset,
		       oi.nodes, oi.folded, oi.views, oi.fused, oi.qdq, oi.device_ops);
		printf("%s: %u inputs, %u outputs, weights %llu bytes, feature maps %llu bytes "
		       "(sum %llu, peak live %llu)\n", out, pi.inputs, pi.outputs,
		       (unsigned long long)pi.weights_bytes, (unsigned long long)pi.fmap_bytes,
		       (unsigned long long)pi.fmap_sum, (unsigned long long)pi.fmap_peak);
	}
	npurt_graph_destroy(g);
out:
	free(made);
	free(shapes);
	free(dims);
	free(values);
	return rc;
}
