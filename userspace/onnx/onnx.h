/* SPDX-License-Identifier: MIT */
/*
 * Internal: the ONNX importer (Documentation/onnx.rst). An ONNX graph is
 * walked once in its (topological) node order; every value it names gets
 * an ox_val: a constant the importer holds on the host and folds through
 * shape arithmetic, or a layout over a tensor of the graph builder, so
 * reshapes, transposes, slices and broadcasts cost no device op. Values
 * become graph tensors (constants, views) only when a device op reads
 * them.
 */
#ifndef NPURT_ONNX_H
#define NPURT_ONNX_H

#include <stdbool.h>
#include <stdint.h>

#include <string.h>

#include "npuonnx.h"
#include "onnx.pb-c.h"

#define OX_MAX_DIMS	8		/* constants; device values have NPURT_MAX_DIMS */
#define OX_NONE		UINT32_MAX
/* A TRANSPOSE that moves nothing: a strided copy, of any rank. */
#define OX_PERM_IDENTITY	{ 0, 1, 2, 3, 4, 5, 6, 7 }
_Static_assert(NPURT_MAX_DIMS == 8, "OX_PERM_IDENTITY names every dimension");

/* TensorProto.DataType */
enum {
	OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3, OX_UINT16 = 4, OX_INT16 = 5, OX_INT32 = 6,
	OX_INT64 = 7, OX_STRING = 8, OX_BOOL = 9, OX_FLOAT16 = 10, OX_DOUBLE = 11,
	OX_UINT32 = 12, OX_UINT64 = 13, OX_BFLOAT16 = 16,
};

struct ox_val {
	char *name;
	int32_t type;			/* OX_* */
	uint32_t ndim;
	int64_t dims[OX_MAX_DIMS];
	/* A constant: values as doubles (floats) or int64 (integers, bool). */
	bool is_const;
	double *f;
	int64_t *i;
	/* On the device: element (ix) is base's element off + sum(ix[k] * stride[k]). */
	uint32_t base;			/* a graph tensor that is no view, or OX_NONE */
	uint64_t off;
	int64_t stride[OX_MAX_DIMS];
	uint32_t tensor;		/* the graph tensor of this layout, once made */
	bool computed;			/* base is a feature map an op writes */
	bool output;			/* base is a graph output already */
};

/*
 * An If whose branch is being inlined, or a Loop or Scan whose body is
 * being unrolled: where the walk of the graph around it stands.
 */
struct ox_scope {
	const Onnx__GraphProto *graph;
	size_t node_index;
	const Onnx__NodeProto *node;	/* the If, Loop or Scan */
	const char *branch;		/* "then_branch", "else_branch" or "body" */
	int64_t iteration;		/* of a body; -1 for a branch */
	const struct ox_scope *up;
};

struct ox_imp {
	npurt_graph *g;
	int64_t opset;
	struct ox_val *vals;
	size_t nvals, cap;
	/* vals by name, open addressing: index + 1 of the newest, 0 empty */
	uint32_t *by_name;
	size_t by_name_cap;		/* a power of two, over twice nvals */
	const Onnx__GraphProto *graph;	/* being imported */
	const Onnx__NodeProto *node;	/* being imported: errors name it */
	size_t node_index;
	const struct ox_scope *scope;	/* NULL: the model's graph */
	/* Importing nodes made up for one of the file's (onnx_rnn.c): no graph
	 * says who reads their values, so nothing fuses into them in place. */
	unsigned int unrolling;
	struct ox_pin *pins;		/* the caller's pinned dimensions */
	size_t npins;
	uint32_t scratch;		/* names of intermediate values */
	const Onnx__GraphProto *model_graph;	/* the file's own graph */
	uint8_t *skip;			/* nodes a fusion took (onnx_qdq.c, onnx_norms.c) */
	npurt_onnx_info info;
};

/* Read a whole file (at most 2 GiB) into *data (free() it); `who` leads errors. */
npurt_status ox_read_file(const char *path, const char *who, void **data, size_t *size);
/* Whether data[0..size) nests messages no deeper than the importer takes. */
bool ox_nesting_ok(const void *data, size_t size);

/* Record a failure of the node being imported (or of the model) and return st. */
npurt_status ox_fail(struct ox_imp *im, npurt_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

bool ox_is_float(int32_t type);
/* float, float16 or bfloat16: what the ops computed in f32 take (no double) */
bool ox_is_real(int32_t type);
/* The device dtype of an ONNX type (NPURT_DTYPE_COUNT: none), and back (0: none). */
npurt_dtype ox_dtype(int32_t type);
int32_t ox_type(npurt_dtype d);
const char *ox_type_name(int32_t type);
uint64_t ox_count(const struct ox_val *v);
/* The newest value called `name`; NULL for none, or for a NULL name. */
struct ox_val *ox_find(struct ox_imp *im, const char *name);
/* A new value called `name` (the node's output); NULL after ox_fail(). */
struct ox_val *ox_new(struct ox_imp *im, const char *name, int32_t type, uint32_t ndim,
		      const int64_t *dims);
/* A constant value with room for its data (zeroed), laid out dense. */
struct ox_val *ox_new_const(struct ox_imp *im, const char *name, int32_t type, uint32_t ndim,
			    const int64_t *dims);
double ox_getf(const struct ox_val *v, uint64_t idx);
int64_t ox_geti(const struct ox_val *v, uint64_t idx);
void ox_set(struct ox_val *v, uint64_t idx, double x);
/* x as integer type `type` holds it: wrapped to its width, as C casts do. */
int64_t ox_wrap(int32_t type, int64_t x);

/* A TensorProto's contents as a constant called `name` (NULL: its own). */
struct ox_val *ox_tensor_proto(struct ox_imp *im, const Onnx__TensorProto *t, const char *name);

/* The graph tensor of a value, made on first use (a constant, a view). */
npurt_status ox_device(struct ox_imp *im, struct ox_val *v, uint32_t *tensor);
/* Give a value a new dense tensor of the graph as its home. */
npurt_status ox_home(struct ox_imp *im, struct ox_val *v);

/* ---- views (onnx_view.c) ---- */
#define OX_MAX_OUTPUTS	64

/* A value over x's elements with another layout: a view, or a gathered constant. */
struct ox_val *ox_view(struct ox_imp *im, struct ox_val *x, const char *name, uint32_t ndim,
		       const int64_t *dims, uint64_t off, const int64_t *stride);
/* x if its layout is dense, else a dense copy of it (one device op). */
struct ox_val *ox_dense(struct ox_imp *im, struct ox_val *x);
/* x coerced to 2-D at axis, [d0 .. d(axis-1)] x [the rest], as a view `name` of it made dense. */
struct ox_val *ox_dense_2d(struct ox_imp *im, struct ox_val *x, int axis, const char *name);
/* x broadcast to dims (zero strides where it repeats). */
struct ox_val *ox_expand_to(struct ox_imp *im, struct ox_val *x, const char *name, uint32_t ndim,
			    const int64_t *dims);
bool ox_broadcast(const int64_t *a, uint32_t na, const int64_t *b, uint32_t nb, int64_t *out,
		  uint32_t *nout);
/* An axis in [-rank, rank) made positive, or -1. */
int ox_axis(int64_t axis, uint32_t rank);
/*
 * Integers from the ints attribute `attr` (if the node has it) or from
 * constant input `input`: their count, or -1 when neither is there (or on
 * failure, with *st set).
 */
int ox_ints(struct ox_imp *im, const Onnx__NodeProto *n, size_t input, const char *attr,
	    int64_t *out, int max, npurt_status *st);
/* Reshape and the other layout-only nodes; *done false if n is none of them. */
npurt_status ox_view_node(struct ox_imp *im, const Onnx__NodeProto *n, bool *done);
npurt_status ox_gather_copies(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      int axis, struct ox_val *idx);
/* An int64 constant of `count` positions for ox_gather_at(), named into name. */
struct ox_val *ox_positions(struct ox_imp *im, const char *of, int64_t count, char *name,
			    size_t len);
/* out = x gathered along `axis` at constant positions `idx`, as node n's Gather would be. */
npurt_status ox_gather_at(struct ox_imp *im, const Onnx__NodeProto *n, const char *x,
			  const char *idx, int64_t axis, const char *out);

/* Add a graph op writing tensor `out`, counted in the import's info. */
npurt_status ox_add(struct ox_imp *im, const npurt_graph_node *node, uint32_t out);

/* ---- device ops for nodes (onnx_ops.c, onnx_nn.c) ---- */

/*
 * NPURT_ERR_UNSUPPORTED, naming the values, unless device op `op` takes
 * a's (and b's, NULL for none) dtype; else *type is its output's type.
 */
npurt_status ox_op_types(struct ox_imp *im, uint32_t op, const struct ox_val *a,
			 const struct ox_val *b, int32_t *type);
/* NPURT_ERR_UNSUPPORTED unless v is float, the type the op library computes in. */
npurt_status ox_need_float(struct ox_imp *im, const struct ox_val *v);
npurt_status ox_need_real(struct ox_imp *im, const struct ox_val *v);
/* A new value with a dense tensor of the graph as its home. */
struct ox_val *ox_fresh(struct ox_imp *im, const char *name, int32_t type, uint32_t ndim,
			const int64_t *dims);
/* Pins an import takes (npurt_onnx_options: shapes, dim_params and values together). */
#define OX_MAX_PINS	64
/* A buffer for a made-up value's name (ox_tmp_name()). */
typedef char ox_name[96];
/* An int64 constant of n values (a scalar: one), its name into `name`. */
npurt_status ox_int_const(struct ox_imp *im, const int64_t *v, int64_t n, bool scalar,
			  ox_name name);
/* A scalar constant x of `type`, its name into `name`; false after ox_fail(). */
bool ox_scalar_named(struct ox_imp *im, int32_t type, double x, ox_name name);
/* A name for an intermediate value (no ONNX name can be it), in buf. */
const char *ox_tmp_name(struct ox_imp *im, char *buf, size_t len, const char *of);
/* The device tensor of value `name` broadcast to dims (zero strides where it repeats). */
npurt_status ox_bcast_tensor(struct ox_imp *im, const char *name, uint32_t nd,
			     const int64_t *dims, uint32_t *t);
/* out = op(a, b), inputs broadcast to out's dims; NULL after ox_fail(). */
struct ox_val *ox_binary(struct ox_imp *im, uint32_t op, struct ox_val *a, struct ox_val *b,
			 const char *name);
struct ox_val *ox_unary(struct ox_imp *im, uint32_t op, struct ox_val *x, float alpha,
			float beta, const char *name);
struct ox_val *ox_scalar(struct ox_imp *im, double x, const char *of);
/* A scalar constant of `type`: integers and bool take i, floats f. */
struct ox_val *ox_scalar_of(struct ox_imp *im, int32_t type, double f, int64_t i, const char *of);
/* NPURT_OK for a value made, else the failure's status. */
npurt_status ox_done(struct ox_val *v);

npurt_status ox_op_global_pool(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			       uint32_t op);
npurt_status ox_op_batchnorm(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_instancenorm(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_layernorm(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_prelu(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_window(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_conv_transpose(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);

/* ---- copies (onnx_copy.c) ---- */
npurt_status ox_op_trilu(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_tile(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
/*
 * Operators written as others (onnx_composed.c; by constant positions,
 * onnx_index.c): *handled false for an op of none of them.
 */
npurt_status ox_composed_node(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      bool *handled);
/* Quantized operators as the float ones they mean (onnx_quant.c); as ox_composed_node(). */
npurt_status ox_quant_node(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			   bool *handled);
/* QLinearConv (conv) or QLinearMatMul node n, a Relu before the requantization if relu. */
npurt_status ox_quant_qlinear(struct ox_imp *im, const Onnx__NodeProto *n, bool conv, bool relu);
/* Whether QLinearConv of x and w (zero point wz) runs on the integer convolution. */
bool ox_quant_conv_is_int(struct ox_imp *im, const Onnx__NodeProto *conv, const char *x,
			  const char *w, const char *wz);
/*
 * QDQ fusion (onnx_qdq.c) at node k of graph g: true if the node is one a
 * fusion takes (imported as part of a QLinear op, or left out), *st its status.
 */
bool ox_qdq_fuse(struct ox_imp *im, const Onnx__GraphProto *g, size_t k, npurt_status *st);
npurt_status ox_op_onehot(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_einsum(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_batchnorm_training(struct ox_imp *im, const Onnx__NodeProto *n,
				      struct ox_val *x);
npurt_status ox_op_compress(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_gathernd(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_scatter(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_reverse_sequence(struct ox_imp *im, const Onnx__NodeProto *n,
				    struct ox_val *x);
npurt_status ox_maxpool_indices(struct ox_imp *im, const Onnx__NodeProto *n, const char *x,
				uint32_t sp, const int64_t *ks, const int64_t *st,
				const int64_t *dl, const int64_t *pb, const int64_t *od,
				bool column_major);
npurt_status ox_op_det(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
/* Tile (onnx_copy.c) past its copies: a Gather per repeated axis. */
npurt_status ox_tile_gathers(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			     const int64_t *rep);
npurt_status ox_op_eye_like(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_depth_space(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_concat(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
npurt_status ox_op_pad(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);

/* ---- integers, bool, comparisons, logic, arg max / min, Cast (onnx_int.c) ---- */
npurt_status ox_op_cast(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
/* A layout of v's tensor, not in the table: made a view when a device op reads it. */
struct ox_val ox_layout(const struct ox_val *v, uint32_t nd, const int64_t *dims,
			const int64_t *stride);
/* One GATHER_ELEMENTS of layouts d and i along axis into a new value `name`. */
struct ox_val *ox_gather_op(struct ox_imp *im, struct ox_val *d, struct ox_val *i, uint32_t axis,
			    int32_t type, const char *name);
/* Resize and Upsample (onnx_resize.c). */
npurt_status ox_op_resize(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);
/* Gather along `axis` with indices the device reads (GATHER_ELEMENTS). */
npurt_status ox_gather_device(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      int axis, struct ox_val *idx);
/* *done false if n is none of the nodes onnx_int.c maps. */
npurt_status ox_int_node(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			 bool *done);

/* ---- opsets 1 to 6 (onnx_legacy.c) ---- */
#define OX_LEGACY_INPUTS	3
#define OX_LEGACY_ATTRS		16

/* A node of an older opset rewritten as opset 7 has it, and what it points to. */
struct ox_legacy {
	Onnx__NodeProto node;
	char *inputs[OX_LEGACY_INPUTS];
	Onnx__AttributeProto *attrs[OX_LEGACY_ATTRS + 1];
	Onnx__AttributeProto added;
	float floats[OX_MAX_DIMS];
	char names[OX_LEGACY_INPUTS][96];
};

/*
 * The node to import for n under the model's opset: n itself, or (before
 * opset 7, where an operator changed since) a rewritten copy in *lg that
 * means the same under the newer rules, its inputs views made for it.
 */
npurt_status ox_legacy(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg,
		       const Onnx__NodeProto **use);
/* A BatchNormalization that normalises by running statistics, per channel. */
bool ox_legacy_bn_plain(const struct ox_imp *im, const Onnx__NodeProto *bn);

/* ---- pinned dimensions (onnx_pins.c) ---- */
/* The caller's shapes and dim_params, parsed into im->pins (free() it). */
npurt_status ox_pins_parse(struct ox_imp *im, const npurt_onnx_options *opts);
/* Input `input`'s dimensions: the file's, with the pins for its symbolic ones. */
npurt_status ox_pins_dims(struct ox_imp *im, const char *input,
			  const Onnx__TensorShapeProto *shape, int64_t *dims);
/*
 * Input `input` as a constant, when the caller pinned its values (*pinned);
 * NULL after ox_fail(), or when not pinned.
 */
struct ox_val *ox_pins_value(struct ox_imp *im, const char *input, int32_t type, uint32_t ndim,
			     const int64_t *dims, bool *pinned);
/* NPURT_ERR_INVALID for a pin that names no input (or dimension) of g. */
npurt_status ox_pins_check(struct ox_imp *im, const Onnx__GraphProto *g);

/* ---- the walk (onnx_import.c) and control flow (onnx_control.c) ---- */
/* The nodes of a graph, in order: the model's, or an inlined branch's. */
npurt_status ox_import_nodes(struct ox_imp *im, const Onnx__GraphProto *g);
/* If: the branch its condition picks inlined, when the condition folds. */
npurt_status ox_op_if(struct ox_imp *im, const Onnx__NodeProto *n);

/* ---- copies of a subgraph, its names renamed apart (onnx_body.c) ---- */
/* What a body defines, in it and in graphs nested in it, sorted. */
struct ox_body_names {
	const char **v;
	size_t n, cap;
};

/* One copy of a body, and what to free once it is imported. */
struct ox_body_copy {
	void **owned;
	size_t n, cap;
	unsigned int tag;		/* in its names: unique per copy */
};

/* Collect the names g defines into *bn (free bn->v); false: out of memory. */
bool ox_body_names(struct ox_body_names *bn, const Onnx__GraphProto *g);
/* g with the names in bn renamed for a copy tagged `tag`; NULL: out of memory. */
const Onnx__GraphProto *ox_body_copy(struct ox_body_copy *c, const struct ox_body_names *bn,
				     const Onnx__GraphProto *g, unsigned int tag);
/* Free what a copy holds (the structs ox_body_copy() returned). */
void ox_body_copy_free(struct ox_body_copy *c);

/* Loop and Scan: their bodies unrolled, once per iteration (onnx_loop.c). */
npurt_status ox_op_loop(struct ox_imp *im, const Onnx__NodeProto *n);
npurt_status ox_op_scan(struct ox_imp *im, const Onnx__NodeProto *n);

/* LSTM, GRU, RNN, unrolled over their steps into the nodes they are made of (onnx_rnn.c). */
npurt_status ox_op_rnn(struct ox_imp *im, const Onnx__NodeProto *n);

/* Import one node (onnx_ops.c). */
npurt_status ox_node(struct ox_imp *im, const Onnx__NodeProto *n);
/*
 * Import a node made up for the one being imported (an LSTM's steps, an
 * If's select): op at opset 13 on named inputs, one output, at most one
 * attribute; folded when its inputs are constants. Errors name im->node.
 */
npurt_status ox_emit(struct ox_imp *im, const char *op, const char *const *ins, size_t nin,
		     const char *out, Onnx__AttributeProto *attr);
/* ox_emit() with attrs[0..nattr). */
npurt_status ox_emit_attrs(struct ox_imp *im, const char *op, const char *const *ins, size_t nin,
			   const char *out, Onnx__AttributeProto **attrs, size_t nattr);
/* An attribute for ox_emit(): one int (list false) or the ints v[0..n). */
void ox_attr_ints(Onnx__AttributeProto *a, const char *name, int64_t *v, size_t n, bool list);
/* Evaluate a node whose inputs are all constants on the host; false if it cannot. */
bool ox_fold(struct ox_imp *im, const Onnx__NodeProto *n, npurt_status *st);

/* Attributes of the node being imported. */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def);
float ox_attr_f(const Onnx__NodeProto *n, const char *name, float def);
/* Whether string attribute `name` is `want`; its value into buf (def when absent). */
bool ox_attr_is(const Onnx__NodeProto *n, const char *name, const char *want);
const char *ox_attr_s(const Onnx__NodeProto *n, const char *name, const char *def, char *buf,
		      size_t len);
/* The node's input k, NULL if absent or named "" (an optional left out). */
struct ox_val *ox_in(struct ox_imp *im, const Onnx__NodeProto *n, size_t k);

/*
 * Activation `op` (alpha, beta) of x as `name`, fused into the epilogue of
 * the op that computed x (npurt_graph_fuse()): where nothing else reads x,
 * the two run as one launch. 1 fused, 0 not (nothing done), -1 out of
 * memory (the error set).
 */
int ox_fuse_act(struct ox_imp *im, struct ox_val *x, uint32_t op, float alpha, float beta,
		const char *name);

/*
 * Node k of the model's graph starts a layer normalization written out in
 * elementary ops (onnx_norms.c): import it as one, mark the chain's other
 * nodes skipped, return true (*st its status). false: nothing done.
 */
bool ox_fold_layernorm(struct ox_imp *im, const Onnx__GraphProto *g, size_t k, npurt_status *st);

/* Is node n an `op` node (of any domain)? */
static inline bool ox_op_is(const Onnx__NodeProto *n, const char *op)
{
	return n->op_type && !strcmp(n->op_type, op);
}

/* Does a node after the one being imported, or a graph output, read `name`? */
bool ox_read_later(const struct ox_imp *im, const char *name);
/*
 * Does a node of g from `from` on (its nested graphs too, which read the
 * graphs around them by name), or an output of g, read `name`?
 */
bool ox_graph_reads(const Onnx__GraphProto *g, size_t from, const char *name);
/* The node of g (not of graphs inside it) that makes `name`, or -1. */
long ox_graph_producer(const Onnx__GraphProto *g, const char *name);

#endif /* NPURT_ONNX_H */
