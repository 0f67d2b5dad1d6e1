// SPDX-License-Identifier: MIT
/*
 * The ONNX importer under libFuzzer (with ASan and UBSan): any bytes are
 * either refused (NPURT_ERR_INVALID or NPURT_ERR_UNSUPPORTED, with a
 * message) or a graph that serializes into a model file the model reader
 * accepts. The same bytes cut into a session's stages (onnx_stages.c)
 * either are refused with a message or give stages whose files parse
 * again. The corpus (tests/fuzz/onnx-corpus) holds small models of the
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
#include "onnx_stages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

/* Each stage's file, its cut values declared as f32 vectors, parses as a model. */
static void stages(const uint8_t *data, size_t len)
{
	npurt_value v = { .dtype = NPURT_F32, .ndim = 1, .shape = { 1 } };
	const npurt_value *in[1024];
	struct ox_stages *s = NULL;
	npurt_status st = ox_stages_cut(data, len, NULL, 0, &s);

	if (st) {
		if ((st != NPURT_ERR_INVALID && st != NPURT_ERR_NO_MEMORY &&
		     st != NPURT_ERR_UNSUPPORTED) || !npurt_last_error()[0]) {
			fprintf(stderr, "stages: status %d, \"%s\"\n", st, npurt_last_error());
			abort();
		}
		return;
	}
	for (uint32_t j = 0; s && j < s->n; j++) {
		Onnx__ModelProto *m;

		if (s->st[j].n_in > 1024)
			continue;
		for (uint32_t k = 0; k < s->st[j].n_in; k++)
			in[k] = &v;
		if (ox_stage_file(s, j, in))
			continue;
		m = onnx__model_proto__unpack(NULL, s->st[j].size, s->st[j].file);
		if (!m) {
			fprintf(stderr, "stage %u of %u: its file does not parse\n", j, s->n);
			abort();
		}
		onnx__model_proto__free_unpacked(m, NULL);
	}
	ox_stages_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	npurt_graph *g = NULL;
	npurt_status st;
	void *file;
	size_t size;

	stages(data, len);
	st = npurt_onnx_import(data, len, NULL, &g, NULL);

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
