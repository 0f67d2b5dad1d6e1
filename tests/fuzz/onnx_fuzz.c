// SPDX-License-Identifier: MIT
/*
 * The ONNX importer under libFuzzer (with ASan and UBSan): any bytes are
 * either refused (NPURT_ERR_INVALID or NPURT_ERR_UNSUPPORTED, with a
 * message) or a graph that serializes into a model file the model reader
 * accepts. The corpus (tests/fuzz/onnx-corpus) holds small models of the
 * ops the importer maps, so mutations reach its shape and layout logic.
 *
 *   build/tests/fuzz/onnx_fuzz NEW_DIR tests/fuzz/onnx-corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_file.h"
#include "npuonnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	npurt_graph *g = NULL;
	npurt_status st = npurt_onnx_import(data, len, NULL, &g, NULL);
	void *file;
	size_t size;

	if (st) {
		if ((st != NPURT_ERR_INVALID && st != NPURT_ERR_UNSUPPORTED &&
		     st != NPURT_ERR_NO_MEMORY) || !npurt_last_error()[0]) {
			fprintf(stderr, "import: status %d, \"%s\"\n", st, npurt_last_error());
			abort();
		}
		return 0;
	}
	/* A graph the importer made may still not be a model (no op): then it says so. */
	st = npurt_graph_serialize(g, &file, &size, NULL);
	if (!st) {
		struct mf_model m;
		char why[256];

		if (mf_parse(file, size, &m, why, sizeof(why))) {
			fprintf(stderr, "serialized, then refused: %s\n", why);
			abort();
		}
		mf_free(&m);
		free(file);
	} else if (st != NPURT_ERR_INVALID && st != NPURT_ERR_NO_MEMORY) {
		fprintf(stderr, "serialize: status %d, \"%s\"\n", st, npurt_last_error());
		abort();
	}
	npurt_graph_destroy(g);
	return 0;
}
