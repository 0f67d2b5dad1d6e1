// SPDX-License-Identifier: MIT
/*
 * A layer normalization written out in elementary ops, as PyTorch
 * exports nn.LayerNorm below opset 17 and as hand-built models have it:
 *
 *   m = ReduceMean(x, last axis)   d = Sub(x, m)   p = Pow(d, 2)
 *   v = ReduceMean(p, last axis)   s = Sqrt(Add(v, eps))   y = Div(d, s)
 *
 * seven launches, one the device's LAYERNORM does in one pass over x
 * (wake-word models have two per run, 12 of their 46 launches). The
 * exporters put the Constant nodes for 2 and eps between the seven, so
 * the chain is found by names from its first ReduceMean, its other six
 * nodes skipped when the walk reaches them (struct ox_imp's skip), and
 * the constants read from their Constant nodes before those are
 * imported. Every intermediate must be read by the chain alone.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* An `op` node with one output. */
static bool op_is(const Onnx__NodeProto *n, const char *op)
{
	return ox_op_is(n, op) && n->n_output == 1;
}

/* The node after `from` that reads `name` as input `at` (-1: any), or -1. */
static long reader(const Onnx__GraphProto *g, size_t from, const char *name, const char *op)
{
	for (size_t k = from + 1; k < g->n_node && k < from + 24; k++) {
		const Onnx__NodeProto *n = g->node[k];

		for (size_t i = 0; i < n->n_input; i++)
			if (!strcmp(n->input[i], name))
				return op_is(n, op) ? (long)k : -1;
	}
	return -1;
}

/* A float scalar constant: a value the importer has, or a Constant node's. */
static bool scalar(struct ox_imp *im, const Onnx__GraphProto *g, const char *name, double *v)
{
	const struct ox_val *c = ox_find(im, name);
	long p;

	if (c)
		return c->is_const && c->f && ox_count(c) == 1 && (*v = c->f[0], true);
	p = ox_graph_producer(g, name);
	if (p < 0 || !op_is(g->node[p], "Constant") || g->node[p]->n_attribute != 1 ||
	    strcmp(g->node[p]->attribute[0]->name, "value") || !g->node[p]->attribute[0]->t)
		return false;
	{
		const Onnx__TensorProto *t = g->node[p]->attribute[0]->t;
		float f;

		if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || t->n_dims > 1 ||
		    (t->n_dims == 1 && t->dims[0] != 1))
			return false;
		if (t->n_float_data == 1)
			f = t->float_data[0];
		else if (t->has_raw_data && t->raw_data.len == 4)
			memcpy(&f, t->raw_data.data, 4);
		else
			return false;
		*v = f;
	}
	return true;
}

/* A ReduceMean over the last axis of an input of `ndim` dimensions, keeping it. */
static bool mean_last(const Onnx__NodeProto *n, uint32_t ndim)
{
	int64_t axis = 0;
	size_t na = 0;

	if (!op_is(n, "ReduceMean") || n->n_input != 1 || !ox_attr_i(n, "keepdims", 1))
		return false;
	for (size_t a = 0; a < n->n_attribute; a++)
		if (!strcmp(n->attribute[a]->name, "axes")) {
			na = n->attribute[a]->n_ints;
			if (na == 1)
				axis = n->attribute[a]->ints[0];
		}
	return na == 1 && (axis == -1 || axis == (int64_t)ndim - 1);
}

bool ox_fold_layernorm(struct ox_imp *im, const Onnx__GraphProto *g, size_t k, npurt_status *st)
{
	static const char *const chain[6] = { "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div" };
	const Onnx__NodeProto *m = g->node[k], *n[6];
	Onnx__NodeProto ln = ONNX__NODE_PROTO__INIT;
	Onnx__AttributeProto eps_attr = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = { &eps_attr };
	long at[6];
	double two, eps;
	struct ox_val *x;
	char *ins[1], *outs[1];

	*st = NPURT_OK;
	if (g != im->model_graph || !im->skip || m->n_input != 1)
		return false;
	x = ox_find(im, m->input[0]);
	if (!x || x->is_const || !ox_is_real(x->type) || !mean_last(m, x->ndim))
		return false;
	/*
	 * Sub(x, m), Pow(d, 2), ReduceMean, Add(v, eps), Sqrt, Div(d, s): each
	 * the first reader of the one before.
	 */
	for (int i = 0; i < 6; i++) {
		at[i] = reader(g, i ? (size_t)at[i - 1] : k, i ? n[i - 1]->output[0] : m->output[0],
			       chain[i]);
		if (at[i] < 0)
			return false;
		n[i] = g->node[at[i]];
	}
	if (strcmp(n[0]->input[0], m->input[0]) || strcmp(n[1]->input[0], n[0]->output[0]) ||
	    !scalar(im, g, n[1]->input[1], &two) || two != 2.0 || !mean_last(n[2], x->ndim) ||
	    n[3]->n_input != 2 || !scalar(im, g, strcmp(n[3]->input[0], n[2]->output[0]) ?
					  n[3]->input[0] : n[3]->input[1], &eps) ||
	    !(eps >= 0 && isfinite(eps)) || strcmp(n[5]->input[0], n[0]->output[0]) ||
	    strcmp(n[5]->input[1], n[4]->output[0]))
		return false;
	/*
	 * Each intermediate's first reader is the chain's next node (reader()
	 * took the first), and nothing after its last chain reader reads it:
	 * d is read by Pow and then Div, the rest by the next node alone.
	 */
	if (strcmp(n[0]->input[1], m->output[0]) || ox_graph_reads(g, (size_t)at[0] + 1, m->output[0]) ||
	    reader(g, (size_t)at[1], n[0]->output[0], "Div") != at[5] ||
	    ox_graph_reads(g, (size_t)at[5] + 1, n[0]->output[0]))
		return false;
	for (int i = 1; i < 5; i++)
		if (ox_graph_reads(g, (size_t)at[i + 1] + 1, n[i]->output[0]))
			return false;
	/* One LayerNormalization of x over its last axis, no scale: y. */
	ins[0] = m->input[0];
	outs[0] = n[5]->output[0];
	eps_attr.name = "epsilon";
	eps_attr.has_type = true;
	eps_attr.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	eps_attr.has_f = true;
	eps_attr.f = (float)eps;
	ln.op_type = "LayerNormalization";
	ln.n_input = 1;
	ln.input = ins;
	ln.n_output = 1;
	ln.output = outs;
	ln.n_attribute = 1;
	ln.attribute = attrs;
	*st = ox_op_layernorm(im, &ln, x);
	for (int i = 0; i < 6; i++)
		im->skip[at[i]] = 1;
	if (!*st)
		im->info.fused += 6;
	return true;
}
