// SPDX-License-Identifier: MIT
/*
 * The ONNX importer's frame: the model read with protobuf-c, its values
 * on the device (layouts over graph tensors; the host's are in
 * onnx_values.c), and the walk over its nodes. onnx_ops.c and its
 * siblings map each node to device ops, onnx_fold.c evaluates nodes of
 * constants.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

/* Far above any model of ours; a file claiming more is refused, not read. */
#define OX_MAX_FILE	(1ull << 31)

/* ---- values on the device ----------------------------------------------- */

npurt_dtype ox_dtype(int32_t type)
{
	switch (type) {
	case OX_FLOAT: return NPURT_F32;
	case OX_FLOAT16: return NPURT_F16;
	case OX_BFLOAT16: return NPURT_BF16;
	case OX_DOUBLE: return NPURT_F64;
	case OX_INT8: return NPURT_I8;
	case OX_UINT8: return NPURT_U8;
	case OX_INT16: return NPURT_I16;
	case OX_UINT16: return NPURT_U16;
	case OX_INT32: return NPURT_I32;
	case OX_UINT32: return NPURT_U32;
	case OX_INT64: return NPURT_I64;
	case OX_UINT64: return NPURT_U64;
	case OX_BOOL: return NPURT_BOOL;
	default: return NPURT_DTYPE_COUNT;
	}
}

int32_t ox_type(npurt_dtype d)
{
	static const int32_t types[NPURT_DTYPE_COUNT] = {
		[NPURT_F32] = OX_FLOAT, [NPURT_F16] = OX_FLOAT16, [NPURT_BF16] = OX_BFLOAT16,
		[NPURT_F64] = OX_DOUBLE, [NPURT_I8] = OX_INT8, [NPURT_U8] = OX_UINT8,
		[NPURT_I16] = OX_INT16, [NPURT_U16] = OX_UINT16, [NPURT_I32] = OX_INT32,
		[NPURT_U32] = OX_UINT32, [NPURT_I64] = OX_INT64, [NPURT_U64] = OX_UINT64,
		[NPURT_BOOL] = OX_BOOL,
	};

	return (unsigned int)d < NPURT_DTYPE_COUNT ? types[d] : 0;
}

static npurt_status device_shape(struct ox_imp *im, const struct ox_val *v, uint64_t *shape,
				 uint32_t *ndim)
{
	if (ox_dtype(v->type) == NPURT_DTYPE_COUNT)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" is %s, which the device does "
			       "not have", v->name, ox_type_name(v->type));
	if (v->ndim > NPURT_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" has %u dimensions on the "
			       "device, at most %d", v->name, v->ndim, NPURT_MAX_DIMS);
	if (!ox_count(v))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" is empty", v->name);
	*ndim = v->ndim ? v->ndim : 1;		/* a scalar is one element */
	shape[0] = 1;
	for (uint32_t k = 0; k < v->ndim; k++)
		shape[k] = (uint64_t)v->dims[k];
	return NPURT_OK;
}

static void dense_strides(struct ox_val *v)
{
	int64_t s = 1;

	for (uint32_t k = v->ndim; k-- > 0;) {
		v->stride[k] = s;
		s *= v->dims[k];
	}
}

npurt_status ox_home(struct ox_imp *im, struct ox_val *v)
{
	uint64_t shape[NPURT_MAX_DIMS];
	uint32_t ndim;
	npurt_status st = device_shape(im, v, shape, &ndim);

	if (st)
		return st;
	st = npurt_graph_tensor(im->g, NULL, ox_dtype(v->type), ndim, shape, &v->base);
	if (st)
		return ox_fail(im, st, "%s", npurt_last_error());
	v->off = 0;
	v->computed = true;
	dense_strides(v);
	v->tensor = v->base;
	return NPURT_OK;
}

static npurt_status make_constant(struct ox_imp *im, struct ox_val *v)
{
	uint64_t shape[NPURT_MAX_DIMS], n = ox_count(v);
	uint32_t ndim;
	npurt_status st = device_shape(im, v, shape, &ndim);
	uint32_t dt = (uint32_t)ox_dtype(v->type);
	void *data;

	if (st)
		return st;
	data = malloc(n * npu_dtype_size(dt));
	if (!data)
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	for (uint64_t k = 0; k < n; k++) {
		union npu_num x;

		if (v->f)
			x.f = v->f[k];
		else
			x.i = v->i[k];
		npu_store(data, k, dt, x, v->f ? NPU_DOM_FLOAT : NPU_DOM_INT);
	}
	st = npurt_graph_constant(im->g, NULL, (npurt_dtype)dt, ndim, shape, data, &v->base);
	free(data);
	if (st)
		return ox_fail(im, st, "%s", npurt_last_error());
	v->off = 0;
	dense_strides(v);
	v->tensor = v->base;
	return NPURT_OK;
}

npurt_status ox_device(struct ox_imp *im, struct ox_val *v, uint32_t *tensor)
{
	uint64_t shape[NPURT_MAX_DIMS], stride[NPURT_MAX_DIMS];
	uint32_t ndim;
	npurt_status st;

	if (v->tensor == OX_NONE && v->base == OX_NONE) {
		if (!v->is_const)
			return ox_fail(im, NPURT_ERR_INTERNAL, "\"%.64s\" has no home", v->name);
		st = make_constant(im, v);
		if (st)
			return st;
	}
	if (v->tensor == OX_NONE) {
		st = device_shape(im, v, shape, &ndim);
		if (st)
			return st;
		stride[0] = 1;
		for (uint32_t k = 0; k < v->ndim; k++)
			stride[k] = (uint64_t)v->stride[k];
		st = npurt_graph_view(im->g, v->base, v->off, ndim, shape, stride, &v->tensor);
		if (st)
			return ox_fail(im, st, "%s", npurt_last_error());
	}
	*tensor = v->tensor;
	return NPURT_OK;
}

/* ---- the model ------------------------------------------------------------ */

static npurt_status graph_input(struct ox_imp *im, const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto__Tensor *tt;
	int64_t dims[OX_MAX_DIMS];
	uint64_t shape[NPURT_MAX_DIMS];
	struct ox_val *v;
	uint32_t ndim;
	npurt_status st;
	bool pinned;

	if (!vi->name || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type->has_elem_type)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" is no tensor",
			       vi->name ? vi->name : "");
	tt = vi->type->tensor_type;
	if (!tt->shape)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" has no shape", vi->name);
	if (tt->shape->n_dim > OX_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" has %zu dimensions",
			       vi->name, tt->shape->n_dim);
	st = ox_pins_dims(im, vi->name, tt->shape, dims);
	if (st)
		return st;
	v = ox_pins_value(im, vi->name, tt->elem_type, (uint32_t)tt->shape->n_dim, dims, &pinned);
	if (pinned)
		return v ? NPURT_OK : npurt_last_status();
	v = ox_new(im, vi->name, tt->elem_type, (uint32_t)tt->shape->n_dim, dims);
	if (!v)
		return npurt_last_status();
	st = device_shape(im, v, shape, &ndim);
	if (st)
		return st;
	st = npurt_graph_input(im->g, vi->name, ox_dtype(v->type), ndim, shape, &v->base);
	if (st)
		return ox_fail(im, st, "%s", npurt_last_error());
	dense_strides(v);
	v->tensor = v->base;
	return NPURT_OK;
}

/*
 * An output must be a tensor the graph computes, and its own: an input, a
 * constant, a view or a tensor another output took is copied out.
 */
static npurt_status graph_output(struct ox_imp *im, const Onnx__ValueInfoProto *vi)
{
	struct ox_val *v = vi->name ? ox_find(im, vi->name) : NULL;
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_TRANSPOSE };
	struct ox_val copy;
	uint32_t src;
	npurt_status st;

	if (!v)
		return ox_fail(im, NPURT_ERR_INVALID, "output \"%.64s\" is not computed",
			       vi->name ? vi->name : "");
	st = ox_device(im, v, &src);
	if (st)
		return st;
	if (v->computed && v->tensor == v->base && !v->output) {
		v->output = true;
		for (size_t k = 0; k < im->nvals; k++)
			if (im->vals[k].base == v->base)
				im->vals[k].output = true;
		st = npurt_graph_output(im->g, src, vi->name);
		return st ? ox_fail(im, st, "%s", npurt_last_error()) : NPURT_OK;
	}
	copy = *v;
	st = ox_home(im, &copy);
	if (st)
		return st;
	for (uint32_t k = 0; k < NPURT_MAX_DIMS; k++)
		node.perm[k] = k;
	node.in[0] = src;
	st = npurt_graph_add_into(im->g, &node, copy.base);
	if (!st)
		st = npurt_graph_output(im->g, copy.base, vi->name);
	if (st)
		return ox_fail(im, st, "%s", npurt_last_error());
	im->info.device_ops++;
	return NPURT_OK;
}

/*
 * Does a node of g from `from` on, or an output of g, read `name`? A
 * branch or body reads the values of the graphs around it by name, not as
 * inputs of its node: the graphs nested in a node are looked through.
 */
bool ox_graph_reads(const Onnx__GraphProto *g, size_t from, const char *name)
{
	for (size_t k = from; g && k < g->n_node; k++) {
		const Onnx__NodeProto *nd = g->node[k];

		for (size_t i = 0; i < nd->n_input; i++)
			if (!strcmp(nd->input[i], name))
				return true;
		for (size_t a = 0; a < nd->n_attribute; a++) {
			if (ox_graph_reads(nd->attribute[a]->g, 0, name))
				return true;
			for (size_t b = 0; b < nd->attribute[a]->n_graphs; b++)
				if (ox_graph_reads(nd->attribute[a]->graphs[b], 0, name))
					return true;
		}
	}
	for (size_t k = 0; g && k < g->n_output; k++)
		if (g->output[k]->name && !strcmp(g->output[k]->name, name))
			return true;
	return false;
}

long ox_graph_producer(const Onnx__GraphProto *g, const char *name)
{
	for (size_t i = 0; name && i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_output; k++)
			if (!strcmp(g->node[i]->output[k], name))
				return (long)i;
	return -1;
}

bool ox_read_later(const struct ox_imp *im, const char *name)
{
	if (im->unrolling)
		return true;
	/* inside an inlined branch, the graphs around it read on after the If */
	if (ox_graph_reads(im->graph, im->node_index + 1, name))
		return true;
	for (const struct ox_scope *sc = im->scope; sc; sc = sc->up)
		if (ox_graph_reads(sc->graph, sc->node_index + 1, name))
			return true;
	return false;
}

/*
 * Conv followed by an inference BatchNormalization of its output alone,
 * all constants: the normalization folds into the convolution's weights
 * and bias (w' = w a, b' = b a + shift, a = scale / sqrt(var + eps)), as
 * an NPU compiler does, and the two nodes import as one Conv. Returns
 * true if it did (*st its status).
 */
static bool fold_conv_bn(struct ox_imp *im, const Onnx__GraphProto *g, size_t k,
			 npurt_status *st)
{
	const Onnx__NodeProto *c = g->node[k], *bn = k + 1 < g->n_node ? g->node[k + 1] : NULL;
	struct ox_val *w, *b, *p[4], *nw, *nb;
	char wn[96], bname[96], *ins[3];
	Onnx__NodeProto conv;
	double eps;
	int64_t o, per;
	int32_t type;

	if (!bn || strcmp(c->op_type, "Conv") || !bn->op_type ||
	    strcmp(bn->op_type, "BatchNormalization") || c->n_output != 1 || bn->n_output != 1 ||
	    bn->n_input != 5 || c->n_input < 2 || strcmp(bn->input[0], c->output[0]) ||
	    ox_attr_i(bn, "training_mode", 0) || !ox_legacy_bn_plain(im, bn) ||
	    ox_graph_reads(g, k + 2, c->output[0]))
		return false;
	w = ox_find(im, c->input[1]);
	b = c->n_input > 2 && c->input[2][0] ? ox_find(im, c->input[2]) : NULL;
	if (!w || !w->is_const || !ox_is_float(w->type) || w->ndim < 3 || (b && !b->is_const) ||
	    (c->n_input > 2 && c->input[2][0] && !b))
		return false;
	o = w->dims[0];
	for (int i = 0; i < 4; i++) {
		p[i] = ox_find(im, bn->input[i + 1]);
		if (!p[i] || !p[i]->is_const || ox_count(p[i]) != (uint64_t)o)
			return false;
	}
	if (b && ox_count(b) != (uint64_t)o)
		return false;
	eps = ox_attr_f(bn, "epsilon", 1e-5f);
	per = (int64_t)(ox_count(w) / (uint64_t)o);
	snprintf(wn, sizeof(wn), "\001%.64s:w%u", c->output[0], im->scratch++);
	snprintf(bname, sizeof(bname), "\001%.64s:b%u", c->output[0], im->scratch++);
	type = w->type;		/* w points into the table, which nw may move */
	nw = ox_new_const(im, wn, type, w->ndim, w->dims);
	nb = nw ? ox_new_const(im, bname, type, 1, &o) : NULL;
	if (!nb) {
		*st = npurt_last_status();
		return true;
	}
	nw = ox_find(im, wn);
	w = ox_find(im, c->input[1]);
	b = b ? ox_find(im, c->input[2]) : NULL;
	for (int i = 0; i < 4; i++)
		p[i] = ox_find(im, bn->input[i + 1]);
	for (int64_t j = 0; j < o; j++) {
		double a = ox_getf(p[0], j) / sqrt(ox_getf(p[3], j) + eps);

		for (int64_t e = 0; e < per; e++)
			ox_set(nw, (uint64_t)(j * per + e), ox_getf(w, (uint64_t)(j * per + e)) * a);
		ox_set(nb, (uint64_t)j, (b ? ox_getf(b, j) : 0.0) * a + ox_getf(p[1], j) -
		       ox_getf(p[2], j) * a);
	}
	conv = *c;
	ins[0] = c->input[0];
	ins[1] = wn;
	ins[2] = bname;
	conv.input = ins;
	conv.n_input = 3;
	conv.output = bn->output;
	*st = ox_node(im, &conv);
	if (!*st)
		im->info.fused++;
	return true;
}

/* A float constant of one value, within a millionth of `want`. */
static bool const_near(struct ox_imp *im, const char *name, double want)
{
	const struct ox_val *v = ox_find(im, name);

	return v && v->is_const && v->f && ox_count(v) == 1 &&
	       fabs(v->f[0] - want) <= 1e-6 * fabs(want);
}

/* Node n of `type` with one output, and its input other than `name` (or NULL). */
static const char *other_input(const Onnx__NodeProto *n, const char *type, const char *name)
{
	if (!n->op_type || strcmp(n->op_type, type) || n->n_input != 2 || n->n_output != 1)
		return NULL;
	return !strcmp(n->input[0], name) ? n->input[1] :
	       !strcmp(n->input[1], name) ? n->input[0] : NULL;
}

/*
 * The exporters' erf GELU, x * (1 + erf(x / sqrt 2)) * 0.5, as five nodes
 * (Div by sqrt 2 or Mul by its inverse, Erf, Add 1, Mul by x, Mul by 0.5)
 * whose intermediates nothing else reads: one GELU_ERF, fused into the op
 * that made x where it can be. Returns true if it did (*st its status).
 */
static bool fold_gelu(struct ox_imp *im, const Onnx__GraphProto *g, size_t k, npurt_status *st)
{
	const Onnx__NodeProto *d = g->node[k], *e, *a, *m1, *m2;
	const char *x = d->n_input == 2 ? d->input[0] : NULL, *c;
	bool div = d->op_type && !strcmp(d->op_type, "Div");
	struct ox_val *xv;
	int fused;

	if (k + 4 >= g->n_node || !x || (!div && (!d->op_type || strcmp(d->op_type, "Mul"))) ||
	    d->n_output != 1 || !const_near(im, d->input[1], div ? M_SQRT2 : M_SQRT1_2))
		return false;
	e = g->node[k + 1], a = g->node[k + 2], m1 = g->node[k + 3], m2 = g->node[k + 4];
	if (!e->op_type || strcmp(e->op_type, "Erf") || e->n_input != 1 || e->n_output != 1 ||
	    strcmp(e->input[0], d->output[0]))
		return false;
	c = other_input(a, "Add", e->output[0]);
	if (!c || !const_near(im, c, 1.0))
		return false;
	c = other_input(m1, "Mul", a->output[0]);
	if (!c || strcmp(c, x))
		return false;
	c = other_input(m2, "Mul", m1->output[0]);
	if (!c || !const_near(im, c, 0.5))
		return false;
	/* Each intermediate is read by the next node of the five alone. */
	if (ox_graph_reads(g, k + 2, d->output[0]) || ox_graph_reads(g, k + 3, e->output[0]) ||
	    ox_graph_reads(g, k + 4, a->output[0]) || ox_graph_reads(g, k + 5, m1->output[0]))
		return false;
	xv = ox_find(im, x);
	if (!xv || !ox_is_real(xv->type) || xv->is_const)
		return false;
	im->node_index = k + 4;		/* x may have readers after the five */
	fused = ox_fuse_act(im, xv, NPU_OP_GELU_ERF, 0, 0, m2->output[0]);
	if (fused)
		*st = fused > 0 ? NPURT_OK : npurt_last_status();
	else
		*st = ox_done(ox_unary(im, NPU_OP_GELU_ERF, ox_find(im, x), 0, 0, m2->output[0]));
	if (!*st)
		im->info.fused += 4;
	return true;
}

/*
 * The nodes of g, in their order, into the graph being built: g is the
 * model's graph, or the branch of an If being inlined (im->scope says
 * whose).
 */
/* An attribute of one int, or of ints. */
void ox_attr_ints(Onnx__AttributeProto *a, const char *name, int64_t *v, size_t n, bool list)
{
	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = true;
	if (list) {
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		a->ints = v;
		a->n_ints = n;
	} else {
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		a->has_i = true;
		a->i = v[0];
	}
}

/* An int64 constant of n values, named into `name`. */
npurt_status ox_int_const(struct ox_imp *im, const int64_t *v, int64_t n, bool scalar,
			  ox_name name)
{
	struct ox_val *c;

	c = ox_new_const(im, ox_tmp_name(im, name, sizeof(ox_name), "k"), OX_INT64,
			 scalar ? 0 : 1, &n);
	if (!c)
		return npurt_last_status();
	memcpy(c->i, v, (size_t)n * sizeof(*v));
	return NPURT_OK;
}

npurt_status ox_emit_attrs(struct ox_imp *im, const char *op, const char *const *ins, size_t nin,
			   const char *out, Onnx__AttributeProto **attrs, size_t nattr)
{
	Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT;
	const Onnx__NodeProto *was = im->node;
	char *outs[1] = { (char *)out };
	int64_t opset = im->opset;
	npurt_status st;

	nd.op_type = (char *)op;
	nd.name = was ? was->name : NULL;
	nd.input = (char **)ins;
	nd.n_input = nin;
	nd.output = outs;
	nd.n_output = 1;
	nd.attribute = attrs;
	nd.n_attribute = nattr;
	im->opset = 13;
	if (!ox_fold(im, &nd, &st))
		st = ox_node(im, &nd);
	im->opset = opset;
	im->node = was;		/* errors name the node it stands for */
	return st;
}

npurt_status ox_emit(struct ox_imp *im, const char *op, const char *const *ins, size_t nin,
		     const char *out, Onnx__AttributeProto *attr)
{
	Onnx__AttributeProto *attrs[1] = { attr };

	return ox_emit_attrs(im, op, ins, nin, out, attrs, attr ? 1 : 0);
}

npurt_status ox_import_nodes(struct ox_imp *im, const Onnx__GraphProto *g)
{
	npurt_status st;

	im->graph = g;
	for (size_t k = 0; k < g->n_node; k++) {
		const Onnx__NodeProto *n = g->node[k];
		struct ox_legacy lg;

		im->node = n;
		im->node_index = k;
		if (!n->op_type || !n->op_type[0])
			return ox_fail(im, NPURT_ERR_INVALID, "a node without an op type");
		if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "domain \"%.32s\"", n->domain);
		/* A QDQ group as one integer op (its nodes checked by the match) */
		if (ox_qdq_fuse(im, g, k, &st)) {
			if (st)
				return st;
			continue;
		}
		for (size_t i = 0; i < n->n_input; i++)
			if (n->input[i][0] && !ox_find(im, n->input[i]))
				return ox_fail(im, NPURT_ERR_INVALID, "input \"%.64s\" is defined "
					       "by no earlier node", n->input[i]);
		/* SSA: a name is defined once (views look their input up by name). */
		for (size_t i = 0; i < n->n_output; i++)
			if (n->output[i][0] && ox_find(im, n->output[i]))
				return ox_fail(im, NPURT_ERR_INVALID, "output \"%.64s\" is defined "
					       "already", n->output[i]);
		if (!strcmp(n->op_type, "If")) {
			st = ox_op_if(im, n);	/* its branch inlined, or refused */
		} else if (!strcmp(n->op_type, "Loop")) {
			st = ox_op_loop(im, n);	/* unrolled, or refused */
		} else if (!strcmp(n->op_type, "Scan")) {
			st = ox_op_scan(im, n);
		} else if (ox_fold_layernorm(im, g, k, &st)) {
			;		/* its other nodes are skipped as the walk reaches them */
		} else if (fold_conv_bn(im, g, k, &st)) {
			k++;		/* the BatchNormalization went into the Conv */
		} else if (fold_gelu(im, g, k, &st)) {
			k += 4;		/* five nodes, one GELU */
		} else {
			/* an older opset's node as opset 7 has it */
			st = ox_legacy(im, n, &lg, &n);
			if (!st && !ox_fold(im, n, &st))
				st = ox_node(im, n);
			else if (!st)
				im->info.folded++;
		}
		if (st)
			return st;
	}
	return NPURT_OK;
}

static npurt_status import_model(struct ox_imp *im, const Onnx__ModelProto *m)
{
	const Onnx__GraphProto *g = m->graph;
	npurt_status st;

	im->opset = -1;
	for (size_t k = 0; k < m->n_opset_import; k++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[k];

		if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
			im->opset = o->has_version ? o->version : 1;
	}
	if (m->n_opset_import == 0)
		im->opset = 1;		/* IR 1 and 2: no opset_import, version 1 */
	if (im->opset < 0)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "no opset of the default domain");
	if (im->opset < 1 || im->opset > 17)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "opset %lld, supported are 1 to 17",
			       (long long)im->opset);
	if (!g)
		return ox_fail(im, NPURT_ERR_INVALID, "the model has no graph");
	im->graph = g;
	im->model_graph = g;
	im->info.opset = (uint32_t)im->opset;
	im->info.nodes = (uint32_t)g->n_node;
	if (g->n_sparse_initializer)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "sparse initializers");
	for (size_t k = 0; k < g->n_initializer; k++) {
		if (g->initializer[k]->name && ox_find(im, g->initializer[k]->name))
			return ox_fail(im, NPURT_ERR_INVALID, "initializer \"%.64s\" twice",
				       g->initializer[k]->name);
		if (!ox_tensor_proto(im, g->initializer[k], NULL))
			return npurt_last_status();
	}
	st = ox_pins_check(im, g);
	if (st)
		return st;
	for (size_t k = 0; k < g->n_input; k++) {
		/* Before IR 4 every initializer is listed among the inputs too. */
		if (g->input[k]->name && ox_find(im, g->input[k]->name))
			continue;
		st = graph_input(im, g->input[k]);
		if (st)
			return st;
	}
	st = ox_import_nodes(im, g);
	if (st)
		return st;
	im->node = NULL;
	if (!g->n_output)
		return ox_fail(im, NPURT_ERR_INVALID, "the graph has no output");
	for (size_t k = 0; k < g->n_output; k++) {
		st = graph_output(im, g->output[k]);
		if (st)
			return st;
	}
	return NPURT_OK;
}

static void free_vals(struct ox_imp *im)
{
	for (size_t k = 0; k < im->nvals; k++) {
		free(im->vals[k].name);
		free(im->vals[k].f);
		free(im->vals[k].i);
	}
	free(im->vals);
	free(im->by_name);
}

/*
 * protobuf-c unpacks nested messages by recursion, with no limit: a file
 * of graphs in attributes in nodes in graphs, a few thousand deep, runs
 * the stack out. This walks the wire format first, without recursion,
 * following only the fields of onnx.proto that hold messages which can
 * nest, and refuses nesting past OX_MAX_NESTING.
 */
#define OX_MAX_NESTING	64

enum pb_kind { PB_MODEL, PB_GRAPH, PB_NODE, PB_ATTR, PB_VALUE_INFO, PB_TYPE, PB_TYPE_ELEM,
	       PB_TYPE_MAP, PB_TRAINING, PB_FUNCTION, PB_LEAF };

static enum pb_kind pb_child(enum pb_kind k, uint64_t field)
{
	switch (k) {
	case PB_MODEL:
		return field == 7 ? PB_GRAPH : field == 20 ? PB_TRAINING :
		       field == 25 ? PB_FUNCTION : PB_LEAF;
	case PB_GRAPH:
		return field == 1 ? PB_NODE : field >= 11 && field <= 13 ? PB_VALUE_INFO : PB_LEAF;
	case PB_NODE:
		return field == 5 ? PB_ATTR : PB_LEAF;
	case PB_ATTR:
		return field == 6 || field == 11 ? PB_GRAPH : field == 14 || field == 15 ? PB_TYPE :
		       PB_LEAF;
	case PB_VALUE_INFO:
		return field == 2 ? PB_TYPE : PB_LEAF;
	case PB_TYPE:		/* sequence, optional: elem_type 1; map: value_type 2 */
		return field == 4 || field == 9 ? PB_TYPE_ELEM : field == 5 ? PB_TYPE_MAP : PB_LEAF;
	case PB_TYPE_ELEM:
		return field == 1 ? PB_TYPE : PB_LEAF;
	case PB_TYPE_MAP:
		return field == 2 ? PB_TYPE : PB_LEAF;
	case PB_TRAINING:
		return field == 1 || field == 2 ? PB_GRAPH : PB_LEAF;
	case PB_FUNCTION:
		return field == 7 ? PB_NODE : PB_LEAF;
	default:
		return PB_LEAF;
	}
}

static bool pb_varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
		uint8_t b = p[(*pos)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* false: malformed, or nested too deep. */
static bool pb_nesting_ok(const uint8_t *p, size_t len)
{
	struct { size_t end; enum pb_kind kind; } st[OX_MAX_NESTING + 1];
	size_t pos = 0;
	int depth = 0;

	st[0].end = len;
	st[0].kind = PB_MODEL;
	while (depth > 0 || pos < len) {
		uint64_t tag, v;

		if (pos == st[depth].end) {
			depth--;
			continue;
		}
		if (!pb_varint(p, st[depth].end, &pos, &tag))
			return false;
		switch (tag & 7) {
		case 0:
			if (!pb_varint(p, st[depth].end, &pos, &v))
				return false;
			break;
		case 1:
		case 5:
			v = (tag & 7) == 1 ? 8 : 4;
			if (v > st[depth].end - pos)
				return false;
			pos += v;
			break;
		case 2: {
			enum pb_kind c;

			if (!pb_varint(p, st[depth].end, &pos, &v) || v > st[depth].end - pos)
				return false;
			c = pb_child(st[depth].kind, tag >> 3);
			if (c == PB_LEAF) {
				pos += v;
				break;
			}
			if (depth == OX_MAX_NESTING)
				return false;
			depth++;
			st[depth].end = pos + v;
			st[depth].kind = c;
			break;
		}
		default:
			return false;	/* groups: not in onnx.proto */
		}
	}
	return true;
}

npurt_status npurt_onnx_import(const void *data, size_t size, const npurt_onnx_options *opts,
			       npurt_graph **graph, npurt_onnx_info *info)
{
	struct ox_imp im = { .info = { .size = sizeof(npurt_onnx_info) } };
	Onnx__ModelProto *m;
	npurt_status st;

	if (!data || !graph)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: NULL argument");
	if (info && info->size < offsetof(npurt_onnx_info, qdq))
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: info->size %u, "
				       "want %zu", info->size, sizeof(*info));
	if (!pb_nesting_ok(data, size))
		return npurt_set_error(NPURT_ERR_INVALID, "onnx: not an ONNX model (malformed, "
				       "or messages nested over %d deep)", OX_MAX_NESTING);
	st = ox_pins_parse(&im, opts);
	if (st) {
		free(im.pins);
		return st;
	}
	m = onnx__model_proto__unpack(NULL, size, data);
	if (!m) {
		free(im.pins);
		return npurt_set_error(NPURT_ERR_INVALID, "onnx: not an ONNX model (the protobuf "
				       "does not parse as a ModelProto)");
	}
	st = npurt_graph_create(&im.g);
	if (!st)
		st = import_model(&im, m);
	free_vals(&im);
	free(im.pins);
	free(im.skip);
	onnx__model_proto__free_unpacked(m, NULL);
	if (st) {
		npurt_graph_destroy(im.g);
		return st;
	}
	if (info)	/* as much as the caller's struct holds */
		memcpy((char *)info + sizeof(info->size), (const char *)&im.info + sizeof(info->size),
		       (info->size < sizeof(*info) ? info->size : sizeof(*info)) - sizeof(info->size));
	*graph = im.g;
	return NPURT_OK;
}

npurt_status ox_read_file(const char *path, const char *who, void **data, size_t *size)
{
	struct stat sb;
	void *buf;
	size_t got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return npurt_set_error(npurt_status_from_errno(errno), "%s: %.200s: %s", who, path,
				       strerror(errno));
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > OX_MAX_FILE) {
		close(fd);
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %.200s: not a regular file of at "
				       "most 2 GiB", who, path);
	}
	buf = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	if (!buf) {
		close(fd);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of host memory", who);
	}
	while (got < (size_t)sb.st_size) {
		ssize_t r = read(fd, (char *)buf + got, (size_t)sb.st_size - got);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	if (got != (size_t)sb.st_size) {
		free(buf);
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %.200s: short read", who, path);
	}
	*data = buf;
	*size = got;
	return NPURT_OK;
}

npurt_status npurt_onnx_import_file(const char *path, const npurt_onnx_options *opts,
				    npurt_graph **graph, npurt_onnx_info *info)
{
	npurt_status st;
	void *buf;
	size_t got;

	if (!path || !graph)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import_file: NULL argument");
	st = ox_read_file(path, "npurt_onnx_import_file", &buf, &got);
	if (st)
		return st;
	st = npurt_onnx_import(buf, got, opts, graph, info);
	free(buf);
	return st;
}

bool ox_nesting_ok(const void *data, size_t size)
{
	return pb_nesting_ok(data, size);
}
