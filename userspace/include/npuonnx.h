/* SPDX-License-Identifier: MIT */
/*
 * libnpuonnx - ONNX models made into libnpurt graphs.
 *
 * The importer is a library of its own (libnpuonnx.so.1, pkg-config
 * npuonnx) so that an application that only wants devices, memory and
 * streams does not link an ONNX parser: libnpurt does not read ONNX, and
 * only libnpuonnx links protobuf-c. It follows libnpurt's conventions
 * (npurt.h): statuses, and on failure a message in npurt_last_error().
 * The graph it makes is libnpurt's, built and released with libnpurt's
 * calls. libnpuonnx must come from the same release as libnpurt.
 */
#ifndef NPUONNX_H
#define NPUONNX_H

#include <stddef.h>
#include <stdint.h>

#include "npurt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An ONNX model (opsets 1 to 17) made into a graph of the device's op
 * library (Documentation/onnx.rst): shapes are inferred from the graph's
 * inputs, which must be static; constants fold on the host; reshapes,
 * transposes, slices and broadcasts become views, costing no device op.
 * The graph is then saved or serialized like any other
 * (npurt_graph_save()); its inputs and outputs keep the ONNX names.
 *
 * An input whose dimensions the file leaves symbolic ("N", "seq") is
 * pinned by opts, as onnxruntime's free-dimension overrides do, and the
 * model then imports static: shapes[] pins an input's whole shape,
 * "NAME=1x3x48x320" (the file's fixed dimensions must agree; "NAME=" is
 * a scalar), and dim_params[] a symbolic dimension wherever it appears,
 * "NAME=VALUE". A shape wins over a dim_param. values[] gives a small
 * input its values, "sr=16000" (every element, in order, comma-separated):
 * it becomes a constant of the model and no longer an input, so what
 * depends on it folds (an If on a sample rate inlines its branch). A spec
 * that is malformed or names no input or dimension of the model is
 * NPURT_ERR_INVALID.
 * Set opts->size to sizeof(npurt_onnx_options); opts may be NULL.
 *
 * NPURT_ERR_UNSUPPORTED: the model uses what the device cannot run (an
 * op, an attribute, a dtype, a dimension left symbolic); the message
 * names the node and its op type. NPURT_ERR_INVALID: the file is no ONNX
 * model, or one that is wrong (the message says where). NPURT_ERR_NO_MEMORY.
 * Nothing is left behind on failure. Set info->size to
 * sizeof(npurt_onnx_info); info may be NULL.
 */
typedef struct npurt_onnx_options {
	uint32_t size;
	uint32_t n_shapes;
	const char *const *shapes;	/* "NAME=AxBxC": input NAME's shape */
	const char *const *dim_params;	/* "NAME=VALUE": every dimension called NAME */
	uint32_t n_dim_params;
	uint32_t n_values;
	const char *const *values;	/* "NAME=V,V,...": input NAME's values */
} npurt_onnx_options;

typedef struct npurt_onnx_info {
	uint32_t size;
	uint32_t opset;			/* of the default domain */
	uint32_t nodes;			/* in the ONNX graph */
	uint32_t folded;		/* nodes evaluated on the host */
	uint32_t views;			/* nodes that became views of their input */
	uint32_t device_ops;		/* ops of the graph made */
	uint32_t fused;			/* node pairs made one (Conv + BatchNormalization) */
} npurt_onnx_info;

NPURT_API npurt_status npurt_onnx_import(const void *data, size_t size,
					 const npurt_onnx_options *opts, npurt_graph **graph,
					 npurt_onnx_info *info);
NPURT_API npurt_status npurt_onnx_import_file(const char *path, const npurt_onnx_options *opts,
					      npurt_graph **graph, npurt_onnx_info *info);

#ifdef __cplusplus
}
#endif

#endif /* NPUONNX_H */
