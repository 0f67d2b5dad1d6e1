/* SPDX-License-Identifier: MIT */
/*
 * Stages of a session's model (onnx_stages.c): the top-level graph cut
 * where a shape hangs on a value only a run computes.
 */
#ifndef NPU_ONNX_STAGES_H
#define NPU_ONNX_STAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npuonnx.h"
#include "onnx.pb-c.h"

/* One stage: nodes the device runs, then maybe a node the host runs. */
struct ox_stage {
	Onnx__NodeProto **nodes;	/* Constant nodes it reads from elsewhere first */
	uint32_t n_nodes;
	const char **in;		/* read here, made before (or the model's inputs) */
	bool *by_value;			/* in[k] is pinned by its value at lowering */
	uint32_t n_in;
	const char **out;		/* made here, read after (or the model's outputs) */
	uint32_t n_out;
	const Onnx__NodeProto *host;	/* NonZero, run on the host after the nodes */
	void *file;			/* the nodes as a model, made at the first run */
	size_t size;
	uint32_t *rank;			/* of each input the file declares (~0: as the model) */
};

struct ox_stages {
	Onnx__ModelProto *m;		/* the file, unpacked */
	struct ox_stage *st;
	uint32_t n;
};

/*
 * Cut the model in data[0..size) at each top-level NonZero and each TopK
 * of a k a run computes (not a constant, nor an input values[0..nvalues)
 * pins: "NAME=V,..."). *out is NULL when there is no such node: the
 * model is one stage, the file itself.
 */
npurt_status ox_stages_cut(const void *data, size_t size, const char *const *values,
			   uint32_t nvalues, struct ox_stages **out);
void ox_stages_free(struct ox_stages *s);

/* Whether one of the value pins values[0..n) ("NAME=V,...") names input `name`. */
bool ox_values_pin(const char *const *values, uint32_t n, const char *name);

/* Whether g has an initializer called name. */
bool ox_graph_initializer(const Onnx__GraphProto *g, const char *name);

/*
 * Make stage j's model file, its inputs declared with the dtypes and
 * ranks of in[0..n_in) (a stage input no value was found for: NULL, an
 * input of the model, declared as the file does).
 */
npurt_status ox_stage_file(struct ox_stages *s, uint32_t j, const npurt_value *const *in);

/* Whether stage st's file declares its inputs at the ranks of in[] (else: make it again). */
bool ox_stage_file_fits(const struct ox_stage *st, const npurt_value *const *in);

/*
 * NonZero of x on the host: y = int64 [rank, count], the positions in
 * row-major order; *buf (of *cap bytes) grows to hold it.
 */
npurt_status ox_host_nonzero(const npurt_value *x, npurt_value *y, void **buf, size_t *cap);

#endif
