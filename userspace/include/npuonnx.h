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
	uint32_t fused;			/* node groups made one op (Conv + BatchNormalization,
					 * GELU's nodes, a QDQ group, activations into ops) */
	/*
	 * QDQ groups (DequantizeLinear -> Conv or MatMul -> QuantizeLinear)
	 * imported as one integer op. Added after the first 0.8 headers: a
	 * `size` that ends before it gets the fields before it.
	 */
	uint32_t qdq;
} npurt_onnx_info;

NPURT_API npurt_status npurt_onnx_import(const void *data, size_t size,
					 const npurt_onnx_options *opts, npurt_graph **graph,
					 npurt_onnx_info *info);
NPURT_API npurt_status npurt_onnx_import_file(const char *path, const npurt_onnx_options *opts,
					      npurt_graph **graph, npurt_onnx_info *info);


/*
 * A session: an ONNX model run at whatever shapes its inputs come in,
 * on one device (Documentation/executor.rst, "Sessions"). Each run's
 * input shapes pin the model's symbolic dimensions; the first run at a
 * set of shapes lowers the model for them (imported with those pins, as
 * npurt_onnx_import() does, then loaded as a sunk model: a plan), and
 * later runs at those shapes reuse that plan from the session's cache,
 * so a run at a shape seen before costs what the static model's run
 * costs. The cache keeps plans by last use within a count and a device
 * byte limit (each plan holds its own weights and feature maps), and
 * counts its hits, misses and evictions. A model whose shapes wait for
 * values it computes (NonZero, a TopK of a computed k) runs in stages,
 * cut there: each stage is planned and cached alike, a NonZero runs on
 * the host between two, and a run waits for each stage before the next
 * (npurt_onnx_session_stats.syncs).
 *
 * desc->opts pins what applies to every run (dim_params, values; its
 * shapes are the runs' business and are refused); desc may be NULL.
 * The session keeps its own copy of the file. Threads: runs of one
 * session take its lock, one at a time.
 */
typedef struct npurt_onnx_session npurt_onnx_session;

typedef struct npurt_onnx_session_desc {
	uint32_t size;			/* sizeof(npurt_onnx_session_desc) */
	uint32_t max_plans;		/* plans cached at most (0: 8) */
	uint64_t max_bytes;		/* device memory they hold at most (0: 512 MiB) */
	const npurt_onnx_options *opts;
	int32_t timeout_ms;		/* of each run (0: no limit) */
} npurt_onnx_session_desc;

/* A tensor in host memory, dense and row-major. */
typedef struct npurt_value {
	npurt_dtype dtype;
	uint32_t ndim;
	uint64_t shape[NPURT_MAX_DIMS];
	void *data;
	uint64_t bytes;
} npurt_value;

/* What a session's cache did so far. Set `size` to sizeof(npurt_onnx_session_stats). */
typedef struct npurt_onnx_session_stats {
	uint32_t size;
	uint32_t plans;			/* cached now */
	uint64_t bytes;			/* device memory they hold */
	uint64_t runs, hits, misses, evictions;
	uint64_t lower_ns;		/* spent lowering, all misses together */
	/*
	 * Times a run waited for values a stage computed before the next
	 * stage could be planned (a model cut at NonZero or a computed
	 * TopK k; executor.rst). Added after the first 0.8 headers: a
	 * `size` that ends before it gets the fields before it.
	 */
	uint64_t syncs;
} npurt_onnx_session_stats;

/*
 * Make a session of the ONNX model in data[0..size). NPURT_ERR_INVALID:
 * not an ONNX model, or bad opts (a shape among them); the model's ops
 * are checked at each new shape's lowering, not here.
 */
NPURT_API npurt_status npurt_onnx_session_create(npurt_device *dev, const void *data, size_t size,
						 const npurt_onnx_session_desc *desc,
						 npurt_onnx_session **session);
NPURT_API npurt_status npurt_onnx_session_create_file(npurt_device *dev, const char *path,
						      const npurt_onnx_session_desc *desc,
						      npurt_onnx_session **session);

/* Unload every plan and free the session. NULL is fine. */
NPURT_API void npurt_onnx_session_destroy(npurt_onnx_session *session);

/*
 * The session's inputs (what a run passes, in this order: the model's
 * inputs but initializers and those opts pin by value) and outputs.
 * A dimension the file leaves symbolic is 0 in info->shape.
 */
NPURT_API npurt_status npurt_onnx_session_counts(npurt_onnx_session *session, uint32_t *inputs,
						 uint32_t *outputs);
NPURT_API npurt_status npurt_onnx_session_io(npurt_onnx_session *session, uint32_t index,
					     npurt_io_info *info);

/*
 * Run once: inputs[0..n_inputs) in the session's input order, each of the
 * input's dtype and rank, matching its fixed dimensions, `bytes` exactly
 * the shape's. outputs[0..n_outputs) (n_outputs the session's) are filled
 * in: dtype, shape, bytes, and data pointing at the session's host memory,
 * valid until the next run or the destroy. NPURT_ERR_INVALID naming the
 * input at fault (nothing lowered, nothing cached); a lowering's failure
 * (NPURT_ERR_UNSUPPORTED naming the node, ...); the run's
 * (npurt_model_execute()).
 */
NPURT_API npurt_status npurt_onnx_session_run(npurt_onnx_session *session,
					      const npurt_value *inputs, uint32_t n_inputs,
					      npurt_value *outputs, uint32_t n_outputs);

NPURT_API npurt_status npurt_onnx_session_stats_get(npurt_onnx_session *session,
						    npurt_onnx_session_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* NPUONNX_H */
