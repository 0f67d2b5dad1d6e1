// SPDX-License-Identifier: MIT
/*
 * QDQ fusion. Quantization tools (onnxruntime's static quantizer among
 * them) write an int8 model as float operators between DequantizeLinear
 * and QuantizeLinear nodes:
 *
 *   xq -> DQ -> Conv | MatMul [-> Relu] -> Q -> yq
 *               w = DQ(wq), bias = DQ(bq, scale xs ws)
 *
 * Imported node by node that is a dequantizing pass, a float product and
 * a quantizing pass. Where the pattern holds -- the float values read by
 * nothing else, the scales and zero points constant, the weights constant
 * bytes and the integer kernel taking the product -- the group imports as
 * the QLinearConv or QLinearMatMul it means (onnx_quant.c): the integer
 * GEMM or convolution on the bytes and one requantizing epilogue, the
 * Relu inside it. A DequantizeLinear whose every reader fused is left
 * out, and so are the Relu and QuantizeLinear a fusion took.
 *
 * Only the file's own graph fuses (not If or Loop bodies), and only what
 * the integer path takes: otherwise the nodes import one by one, as
 * before, with the same meaning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

#define NONE	SIZE_MAX

/* A group that fuses: indices of its nodes in the graph. */
struct qdq {
	size_t dx, dw, db, relu, q;	/* db, relu: NONE when absent */
};

static const char *in_at(const Onnx__NodeProto *n, size_t k)
{
	return n->n_input > k && n->input[k][0] ? n->input[k] : NULL;
}

/* The node of g that makes `name`, or NONE. */
static size_t producer(const Onnx__GraphProto *g, const char *name)
{
	long p = ox_graph_producer(g, name);

	return p < 0 ? NONE : (size_t)p;
}

/* Whether a graph nested in node n (an If's branch, a Loop's body) reads `name`. */
static bool nested_reads(const Onnx__NodeProto *n, const char *name)
{
	for (size_t a = 0; a < n->n_attribute; a++) {
		if (ox_graph_reads(n->attribute[a]->g, 0, name))
			return true;
		for (size_t b = 0; b < n->attribute[a]->n_graphs; b++)
			if (ox_graph_reads(n->attribute[a]->graphs[b], 0, name))
				return true;
	}
	return false;
}

/*
 * How many times `name` is read in g: each input naming it, each node
 * whose subgraphs read it, each graph output. *only: the reading node
 * when there is one read.
 */
static unsigned int readers(const Onnx__GraphProto *g, const char *name, size_t *only)
{
	unsigned int n = 0;

	for (size_t k = 0; k < g->n_output; k++)
		n += g->output[k]->name && !strcmp(g->output[k]->name, name) ? 2 : 0;
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *nd = g->node[i];
		unsigned int was = n;

		for (size_t k = 0; k < nd->n_input; k++)
			n += !strcmp(nd->input[k], name);
		n += nested_reads(nd, name) ? 2 : 0;
		if (n != was)
			*only = i;
	}
	return n;
}

static bool is_byte(int32_t t)
{
	return t == OX_UINT8 || t == OX_INT8;
}

/* A constant of `type` with one value, or (channels > 0) one per channel. */
static struct ox_val *const_of(struct ox_imp *im, const char *name, int32_t type,
			       int64_t channels)
{
	struct ox_val *v = name ? ox_find(im, name) : NULL;
	uint64_t c = v ? ox_count(v) : 0;

	if (!v || !v->is_const || v->type != type ||
	    (c != 1 && (channels <= 0 || c != (uint64_t)channels)))
		return NULL;
	return v;
}

/*
 * DequantizeLinear d of constant bytes w (a weight): scales and zero
 * points one, or one per output channel along `axis` of w (the DQ's own
 * axis). Its bytes' value into *wv.
 */
static bool weight_dq(struct ox_imp *im, const Onnx__NodeProto *d, int axis, struct ox_val **wv)
{
	struct ox_val *w = ox_find(im, in_at(d, 0)), *s;
	int64_t ch;

	if (!w || !w->is_const || !is_byte(w->type) || w->ndim < 2 || ox_attr(d, "block_size"))
		return false;
	ch = w->dims[axis];
	s = const_of(im, in_at(d, 1), OX_FLOAT, ch);
	if (!s || (ox_count(s) > 1 && ox_attr_i(d, "axis", 1) != axis))
		return false;
	if (in_at(d, 2) && !const_of(im, in_at(d, 2), w->type, ox_count(s) > 1 ? ch : 0))
		return false;
	*wv = w;
	return true;
}

/* A Conv's bias as quantizers write it: DQ of int32 at scale xs ws, zero point 0. */
static bool bias_dq(struct ox_imp *im, const Onnx__NodeProto *d, double xs, const char *ws,
		    int64_t channels)
{
	struct ox_val *b = const_of(im, in_at(d, 0), OX_INT32, channels), *bs, *bz, *w;

	if (!b || ox_count(b) != (uint64_t)channels)
		return false;
	bs = const_of(im, in_at(d, 1), OX_FLOAT, channels);
	w = ox_find(im, ws);
	bz = in_at(d, 2) ? const_of(im, in_at(d, 2), OX_INT32, channels) : NULL;
	if (!bs || (in_at(d, 2) && !bz))
		return false;
	for (int64_t c = 0; c < channels; c++) {
		double want = xs * ox_getf(w, ox_count(w) > 1 ? (uint64_t)c : 0);
		double got = ox_getf(bs, ox_count(bs) > 1 ? (uint64_t)c : 0);

		if (fabs(got - want) > 1e-6 * fabs(want) || (bz && ox_geti(bz, ox_count(bz) > 1 ?
								       (uint64_t)c : 0)))
			return false;
	}
	return true;
}

/* Whether node k (Conv or MatMul) and the nodes around it fuse; their indices into *q. */
static bool match(struct ox_imp *im, const Onnx__GraphProto *g, size_t k, struct qdq *q)
{
	const Onnx__NodeProto *n = g->node[k], *dx, *dw, *qn;
	bool conv = ox_op_is(n, "Conv");
	struct ox_val *xv, *wv, *xs;
	size_t j;

	if ((!conv && !ox_op_is(n, "MatMul")) || n->n_output != 1 || !in_at(n, 0) || !in_at(n, 1))
		return false;
	q->dx = producer(g, in_at(n, 0));
	q->dw = producer(g, in_at(n, 1));
	if (q->dx == NONE || q->dw == NONE || q->dx >= k || q->dw >= k)
		return false;
	dx = g->node[q->dx];
	dw = g->node[q->dw];
	if (!ox_op_is(dx, "DequantizeLinear") || !ox_op_is(dw, "DequantizeLinear"))
		return false;
	/* x: bytes at one scale and zero point */
	xv = ox_find(im, in_at(dx, 0));
	xs = const_of(im, in_at(dx, 1), OX_FLOAT, 0);
	/* a MatMul's x of rank 1: the product's rank is not the scales' */
	if (!xv || !is_byte(xv->type) || !xs || (!conv && xv->ndim < 2) ||
	    (in_at(dx, 2) && !const_of(im, in_at(dx, 2), xv->type, 0)))
		return false;
	/* w: constant bytes, per channel along the output's axis (0 for Conv, the columns for MatMul) */
	if (!weight_dq(im, dw, conv ? 0 : 1, &wv) || (!conv && wv->ndim != 2))
		return false;
	if (conv && !ox_quant_conv_is_int(im, n, in_at(dx, 0), in_at(dw, 0), in_at(dw, 2)))
		return false;
	q->db = NONE;
	if (conv && in_at(n, 2)) {
		q->db = producer(g, in_at(n, 2));
		if (q->db == NONE || q->db >= k || !ox_op_is(g->node[q->db], "DequantizeLinear") ||
		    !bias_dq(im, g->node[q->db], ox_getf(xs, 0), in_at(dw, 1), wv->dims[0]))
			return false;
	} else if (n->n_input > 2) {
		return false;
	}
	/* y: read once, by a QuantizeLinear (or by a Relu read once by one) */
	q->relu = NONE;
	if (readers(g, n->output[0], &j) != 1)
		return false;
	if (ox_op_is(g->node[j], "Relu") && g->node[j]->n_output == 1) {
		q->relu = j;
		if (readers(g, g->node[j]->output[0], &j) != 1)
			return false;
	}
	qn = g->node[j];
	q->q = j;
	/* output_dtype (opset 21) and blocked scales are types and layouts the fusion does not take */
	if (!ox_op_is(qn, "QuantizeLinear") || qn->n_output != 1 || ox_attr(qn, "output_dtype") ||
	    ox_attr(dx, "block_size") ||
	    !const_of(im, in_at(qn, 1), OX_FLOAT, 0) ||
	    (in_at(qn, 2) && (!const_of(im, in_at(qn, 2), OX_UINT8, 0) &&
			      !const_of(im, in_at(qn, 2), OX_INT8, 0))))
		return false;
	return true;
}

/* A DequantizeLinear every reader of which fuses, taking it. */
static bool dq_fuses(struct ox_imp *im, const Onnx__GraphProto *g, size_t k)
{
	const char *name = g->node[k]->n_output == 1 ? g->node[k]->output[0] : NULL;
	unsigned int reads = 0;
	struct qdq q;

	if (!name || !name[0])
		return false;
	for (size_t o = 0; o < g->n_output; o++)
		if (g->output[o]->name && !strcmp(g->output[o]->name, name))
			return false;
	for (size_t j = k + 1; j < g->n_node; j++) {
		const Onnx__NodeProto *n = g->node[j];
		bool reads_it = false;

		for (size_t i = 0; i < n->n_input; i++)
			reads_it |= !strcmp(n->input[i], name);
		if (!reads_it && !nested_reads(n, name))
			continue;
		if (!match(im, g, j, &q) || (q.dx != k && q.dw != k && q.db != k))
			return false;
		reads++;
	}
	return reads > 0;
}

/* A zero point where the DQ or Q has none: 0 of `type`, named into buf. */
static const char *zero_point(struct ox_imp *im, const char *zp, int32_t type, ox_name buf)
{
	if (zp)
		return zp;
	return ox_scalar_named(im, type, 0, buf) ? buf : NULL;
}

/* Import the group around node k as QLinearConv or QLinearMatMul. */
static npurt_status fuse(struct ox_imp *im, const Onnx__GraphProto *g, size_t k,
			 const struct qdq *q)
{
	const Onnx__NodeProto *n = g->node[k], *dx = g->node[q->dx], *dw = g->node[q->dw];
	const Onnx__NodeProto *qn = g->node[q->q];
	Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT;
	const char *ins[9];
	ox_name zx, zw, zy;
	bool conv = ox_op_is(n, "Conv");

	ins[0] = in_at(dx, 0);
	ins[1] = in_at(dx, 1);
	ins[2] = zero_point(im, in_at(dx, 2), ox_find(im, ins[0])->type, zx);
	ins[3] = in_at(dw, 0);
	ins[4] = in_at(dw, 1);
	ins[5] = zero_point(im, in_at(dw, 2), ox_find(im, ins[3])->type, zw);
	ins[6] = in_at(qn, 1);
	ins[7] = zero_point(im, in_at(qn, 2), OX_UINT8, zy);
	ins[8] = q->db != NONE ? in_at(g->node[q->db], 0) : NULL;
	if (!ins[2] || !ins[5] || !ins[7])
		return npurt_last_status();
	nd.op_type = conv ? "QLinearConv" : "QLinearMatMul";
	nd.name = n->name;
	nd.input = (char **)ins;
	nd.n_input = ins[8] ? 9 : 8;
	nd.output = qn->output;
	nd.n_output = 1;
	nd.attribute = n->attribute;	/* the Conv's kernel, pads, strides, group */
	nd.n_attribute = n->n_attribute;
	return ox_quant_qlinear(im, &nd, conv, q->relu != NONE);
}

bool ox_qdq_fuse(struct ox_imp *im, const Onnx__GraphProto *g, size_t k, npurt_status *st)
{
	const Onnx__NodeProto *n = g->node[k];
	struct qdq q;

	*st = NPURT_OK;
	if (g != im->model_graph || !g->n_node)
		return false;
	if (!im->skip) {
		im->skip = calloc(g->n_node, 1);
		if (!im->skip)
			return false;	/* no fusion: the nodes import one by one */
	}
	if (im->skip[k])
		return true;
	if (ox_op_is(n, "DequantizeLinear"))
		return dq_fuses(im, g, k);
	if (!(ox_op_is(n, "Conv") || ox_op_is(n, "MatMul")) || !match(im, g, k, &q))
		return false;
	*st = fuse(im, g, k, &q);
	if (q.relu != NONE)
		im->skip[q.relu] = 1;
	im->skip[q.q] = 1;
	im->info.fused++;
	im->info.qdq++;
	return true;
}
