// SPDX-License-Identifier: MIT
/*
 * ONNX nodes of the op library's dtypes past float: comparisons (into
 * bool), And / Or / Xor / Not, Mod, BitShift, IsNaN / IsInf, ArgMax /
 * ArgMin (into int64), Hardmax, CumSum, Cast between any two device dtypes, Where (a copy
 * and a SELECT), GatherElements and Gather with indices the device reads
 * (GATHER_ELEMENTS over views), and the losses NegativeLogLikelihoodLoss
 * and SoftmaxCrossEntropyLoss built of those. The elementwise ones go
 * through ox_binary() and ox_unary(), which check the dtypes against the
 * op library's rules (npu_opdtypes.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

static const struct {
	const char *onnx;
	uint32_t op;
} compares[] = {
	{ "Equal", NPU_OP_EQUAL }, { "Less", NPU_OP_LESS }, { "LessOrEqual", NPU_OP_LESS_EQUAL },
	{ "Greater", NPU_OP_GREATER }, { "GreaterOrEqual", NPU_OP_GREATER_EQUAL },
	{ "And", NPU_OP_AND }, { "Or", NPU_OP_OR }, { "Xor", NPU_OP_XOR },
};

/* ArgMax / ArgMin along one axis: the device reduces it to 1, a view drops it. */
static npurt_status op_arg(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			   uint32_t op)
{
	int a = ox_axis(ox_attr_i(n, "axis", 0), x->ndim ? x->ndim : 1);
	bool keep = ox_attr_i(n, "keepdims", 1);
	npurt_graph_node node = { .size = sizeof(node), .op = op };
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	const char *xn = x->name;
	struct ox_val *y;
	char name[96];
	int32_t type;
	uint32_t nd = 0;

	if (a < 0 || !x->ndim)
		return ox_fail(im, NPURT_ERR_INVALID, "axis %lld of rank %u",
			       (long long)ox_attr_i(n, "axis", 0), x->ndim);
	if (ox_attr_i(n, "select_last_index", 0))
		node.flags = NPURT_ARG_LAST_INDEX;
	node.axis = (uint32_t)a;
	if (ox_dtype(x->type) == NPURT_DTYPE_COUNT || ox_device(im, x, &node.in[0]))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" is %s, which the device does "
			       "not have", x->name, ox_type_name(x->type));
	x = ox_find(im, xn);
	type = ox_type((npurt_dtype)npu_op_out_dtype(op, (uint32_t)ox_dtype(x->type), 0));
	memcpy(dims, x->dims, sizeof(dims));
	dims[a] = 1;
	y = ox_fresh(im, keep ? n->output[0] : ox_tmp_name(im, name, sizeof(name), n->output[0]),
		     type, x->ndim, dims);
	if (!y || ox_add(im, &node, y->base))
		return npurt_last_status();
	if (keep)
		return NPURT_OK;
	for (uint32_t k = 0; k < y->ndim; k++) {
		if (k == (uint32_t)a)
			continue;
		dims[nd] = y->dims[k];
		stride[nd++] = y->stride[k];
	}
	return ox_done(ox_view(im, y, n->output[0], nd, dims, y->off, stride));
}

/*
 * Hardmax: 1 where an element is the first largest along the axis. ARGMAX
 * along it, EQUAL against the indices 0..n-1 (a constant repeated over the
 * other dimensions), CAST back to x's type. Before opset 13 the input is
 * coerced to 2-D at the axis.
 */
static npurt_status op_hardmax(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t axis = ox_attr_i(n, "axis", im->opset < 13 ? 1 : -1);
	int a = ox_axis(axis, x->ndim);
	npurt_graph_node arg = { .size = sizeof(arg), .op = NPU_OP_ARGMAX };
	npurt_graph_node cast = { .size = sizeof(cast), .op = NPU_OP_CAST };
	int64_t dims[OX_MAX_DIMS], idims[OX_MAX_DIMS], xdims[OX_MAX_DIMS], len;
	char vn[96], mn[96], in[96], en[96], yn[96];
	const char *eqn;
	int32_t type = x->type;
	uint32_t nd = x->ndim, xnd = x->ndim;
	struct ox_val *v = x, *m, *idx;

	if (a < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "axis %lld of rank %u", (long long)axis, nd);
	if (!ox_is_float(type))
		return ox_fail(im, NPURT_ERR_INVALID, "%s input", ox_type_name(type));
	memcpy(xdims, x->dims, sizeof(xdims));
	if (im->opset < 13) {
		v = ox_dense_2d(im, x, a, ox_tmp_name(im, vn, sizeof(vn), n->output[0]));
		if (!v)
			return npurt_last_status();
		memcpy(dims, v->dims, 2 * sizeof(dims[0]));
		nd = 2;
		a = 1;
	} else {
		memcpy(dims, x->dims, sizeof(dims));
	}
	len = dims[a];
	arg.axis = (uint32_t)a;
	if (ox_device(im, v, &arg.in[0]))
		return npurt_last_status();
	dims[a] = 1;
	ox_tmp_name(im, mn, sizeof(mn), n->output[0]);
	m = ox_fresh(im, mn, OX_INT64, nd, dims);
	if (!m || ox_add(im, &arg, m->base))
		return npurt_last_status();
	for (uint32_t k = 0; k < nd; k++)
		idims[k] = (int)k == a ? len : 1;
	idx = ox_new_const(im, ox_tmp_name(im, in, sizeof(in), n->output[0]), OX_INT64, nd, idims);
	if (!idx)
		return npurt_last_status();
	for (int64_t k = 0; k < len; k++)
		idx->i[k] = k;
	ox_tmp_name(im, en, sizeof(en), n->output[0]);
	idx = ox_binary(im, NPU_OP_EQUAL, idx, ox_find(im, mn), en);
	if (!idx)
		return npurt_last_status();
	eqn = idx->name;
	cast.out_dtype = ox_dtype(type);
	if (ox_device(im, idx, &cast.in[0]))
		return npurt_last_status();
	v = ox_fresh(im, xnd == nd && im->opset >= 13 ? n->output[0] :
		     ox_tmp_name(im, yn, sizeof(yn), n->output[0]), type, nd, ox_find(im, eqn)->dims);
	if (!v || ox_add(im, &cast, v->base))
		return npurt_last_status();
	if (im->opset >= 13)
		return NPURT_OK;
	{
		int64_t st[OX_MAX_DIMS], sz = 1;

		for (uint32_t k = xnd; k-- > 0;) {
			st[k] = sz;
			sz *= xdims[k];
		}
		return ox_done(ox_view(im, v, n->output[0], xnd, xdims, v->off, st));
	}
}

npurt_status ox_op_cast(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t to = ox_in(im, n, 1) ? ox_in(im, n, 1)->type : ox_attr_i(n, "to", 0);
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_CAST };
	const char *xn = x->name;
	struct ox_val *y;

	if (to == x->type)
		return ox_done(ox_view(im, x, n->output[0], x->ndim, x->dims, x->off, x->stride));
	if (to < 0 || to > INT32_MAX || ox_dtype((int32_t)to) == NPURT_DTYPE_COUNT ||
	    ox_dtype(x->type) == NPURT_DTYPE_COUNT)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "cast from %s to %s", ox_type_name(x->type),
			       ox_type_name(to < 0 || to > INT32_MAX ? 0 : (int32_t)to));
	if (ox_device(im, x, &node.in[0]))
		return npurt_last_status();
	x = ox_find(im, xn);
	node.out_dtype = ox_dtype((int32_t)to);
	y = ox_fresh(im, n->output[0], (int32_t)to, x->ndim, x->dims);
	if (!y)
		return npurt_last_status();
	return ox_add(im, &node, y->base);
}

/* Not one value of the table: a layout of v's tensor, made a view when used. */
struct ox_val ox_layout(const struct ox_val *v, uint32_t nd, const int64_t *dims,
			    const int64_t *stride)
{
	struct ox_val l = *v;

	l.ndim = nd;
	memcpy(l.dims, dims, nd * sizeof(dims[0]));
	memcpy(l.stride, stride, nd * sizeof(stride[0]));
	l.tensor = OX_NONE;
	return l;
}

static bool index_type(int32_t type)
{
	return type == OX_INT64 || type == OX_INT32;
}

/* One GATHER_ELEMENTS of layouts d and i (on the device) along axis into a new `name`. */
struct ox_val *ox_gather_op(struct ox_imp *im, struct ox_val *d, struct ox_val *i, uint32_t axis,
			     int32_t type, const char *name)
{
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_GATHER_ELEMENTS, .axis = axis };
	int64_t dims[OX_MAX_DIMS];
	uint32_t nd = i->ndim;
	struct ox_val *y;

	memcpy(dims, i->dims, sizeof(dims));
	if (ox_device(im, d, &node.in[0]) || ox_device(im, i, &node.in[1]))
		return NULL;
	y = ox_fresh(im, name, type, nd, dims);
	if (!y || ox_add(im, &node, y->base))
		return NULL;
	return y;
}

/*
 * Gather(x, idx, axis), idx read by the device: the output has dims
 * x[:axis] + idx + x[axis+1:]. x is seen at that rank, repeating (zero
 * strides) along idx's dimensions but the last, which it is gathered
 * along; idx repeats along x's other dimensions. A scalar idx is one of
 * one dimension, dropped from the result.
 */
npurt_status ox_gather_device(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      int axis, struct ox_val *idx)
{
	uint32_t ir = idx->ndim ? idx->ndim : 1, r = x->ndim - 1 + ir, p = (uint32_t)axis + ir - 1;
	int64_t od[OX_MAX_DIMS], ds[OX_MAX_DIMS], is[OX_MAX_DIMS], dd[OX_MAX_DIMS];
	const char *xn = x->name, *in = idx->name;
	struct ox_val dv, iv, *y;
	bool scalar;
	uint32_t t;
	char name[96];

	if (r > NPURT_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a gather into %u dimensions, at most %d",
			       r, NPURT_MAX_DIMS);
	if (!index_type(idx->type))
		return ox_fail(im, NPURT_ERR_INVALID, "indices of %s", ox_type_name(idx->type));
	/* Known indices are checked here; the device reads others outside as 0. */
	for (uint64_t k = 0; idx->is_const && k < ox_count(idx); k++)
		if (ox_geti(idx, k) < -x->dims[axis] || ox_geti(idx, k) >= x->dims[axis])
			return ox_fail(im, NPURT_ERR_INVALID, "index %lld out of %lld",
				       (long long)ox_geti(idx, k), (long long)x->dims[axis]);
	if (ox_device(im, x, &t) || ox_device(im, ox_find(im, in), &t))
		return npurt_last_status();
	x = ox_find(im, xn);
	idx = ox_find(im, in);
	for (uint32_t k = 0; k < r; k++) {
		if (k < (uint32_t)axis || k > p) {
			uint32_t j = k < (uint32_t)axis ? k : k - ir + 1;

			od[k] = dd[k] = x->dims[j];
			ds[k] = x->stride[j];
			is[k] = 0;
		} else {
			od[k] = idx->ndim ? idx->dims[k - axis] : 1;
			is[k] = idx->ndim ? idx->stride[k - axis] : 0;
			dd[k] = k == p ? x->dims[axis] : od[k];
			ds[k] = k == p ? x->stride[axis] : 0;
		}
	}
	dv = ox_layout(x, r, dd, ds);
	iv = ox_layout(idx, r, od, is);
	scalar = !idx->ndim;	/* idx and x move with the table from here */
	y = ox_gather_op(im, &dv, &iv, p, x->type,
		   scalar ? ox_tmp_name(im, name, sizeof(name), n->output[0]) : n->output[0]);
	if (!y || !scalar)
		return ox_done(y);
	for (uint32_t k = p; k + 1 < r; k++) {
		od[k] = od[k + 1];
		ds[k] = y->stride[k + 1];
	}
	for (uint32_t k = 0; k < p; k++)
		ds[k] = y->stride[k];
	return ox_done(ox_view(im, y, n->output[0], r - 1, od, y->off, ds));
}

/* GatherElements: indices of x's rank, at most x's extent off the axis. */
static npurt_status op_gather_elements(struct ox_imp *im, const Onnx__NodeProto *n,
				       struct ox_val *x)
{
	struct ox_val *idx = ox_in(im, n, 1), dv;
	int a = ox_axis(ox_attr_i(n, "axis", 0), x->ndim);
	const char *xn = x->name, *in;
	int64_t dims[OX_MAX_DIMS];
	uint32_t t;

	if (!idx || a < 0 || idx->ndim != x->ndim || !index_type(idx->type))
		return ox_fail(im, NPURT_ERR_INVALID, "indices of the data's rank, and an axis");
	for (uint32_t k = 0; k < x->ndim; k++) {
		if ((int)k != a && idx->dims[k] > x->dims[k])
			return ox_fail(im, NPURT_ERR_INVALID, "indices past the data in dimension %u",
				       k);
		dims[k] = (int)k == a ? x->dims[k] : idx->dims[k];
	}
	in = idx->name;
	if (ox_device(im, x, &t))
		return npurt_last_status();
	x = ox_find(im, xn);
	dv = ox_layout(x, x->ndim, dims, x->stride);
	return ox_done(ox_gather_op(im, &dv, ox_find(im, in), (uint32_t)a, x->type, n->output[0]));
}

/* Where(c, x, y): y copied into the output, then x selected over it where c holds. */
static npurt_status op_where(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *c)
{
	struct ox_val *x = ox_in(im, n, 1), *y = ox_in(im, n, 2), *out;
	npurt_graph_node copy = { .size = sizeof(copy), .op = NPU_OP_TRANSPOSE,
				  .perm = OX_PERM_IDENTITY };
	npurt_graph_node sel = { .size = sizeof(sel), .op = NPU_OP_SELECT };
	int64_t d1[OX_MAX_DIMS], dims[OX_MAX_DIMS];
	uint32_t n1, nd;
	const char *cn, *xn, *yn;

	if (!x || !y || c->type != OX_BOOL || x->type != y->type)
		return ox_fail(im, NPURT_ERR_INVALID, "a bool condition and two values of one type");
	if (!ox_broadcast(c->dims, c->ndim, x->dims, x->ndim, d1, &n1) ||
	    !ox_broadcast(d1, n1, y->dims, y->ndim, dims, &nd))
		return ox_fail(im, NPURT_ERR_INVALID, "shapes do not broadcast");
	cn = c->name, xn = x->name, yn = y->name;
	out = ox_fresh(im, n->output[0], x->type, nd, dims);
	if (!out)
		return npurt_last_status();
	if (ox_bcast_tensor(im, yn, nd, dims, &copy.in[0]) ||
	    ox_add(im, &copy, ox_find(im, n->output[0])->base) ||
	    ox_bcast_tensor(im, cn, nd, dims, &sel.in[0]) ||
	    ox_bcast_tensor(im, xn, nd, dims, &sel.in[1]))
		return npurt_last_status();
	return ox_add(im, &sel, ox_find(im, n->output[0])->base);
}

/* The sum of every element of dense v: [1]. */
static struct ox_val *sum_all(struct ox_imp *im, struct ox_val *v, const char *of)
{
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_REDUCE_SUM };
	int64_t cnt = (int64_t)ox_count(v), one = 1, unit = 1;
	int32_t type = v->type;
	char name[96];
	struct ox_val *flat = ox_view(im, v, ox_tmp_name(im, name, sizeof(name), of), 1, &cnt,
				      v->off, &unit), *s;

	if (!flat || ox_device(im, flat, &node.in[0]))
		return NULL;
	s = ox_fresh(im, ox_tmp_name(im, name, sizeof(name), of), type, 1, &one);
	if (!s || ox_add(im, &node, s->base))
		return NULL;
	return s;
}

/*
 * NegativeLogLikelihoodLoss(x [N, C, d...], t [N, d...], w [C]): each
 * loss is -x[n, t, d] w[t], 0 where t is ignore_index. The device gathers
 * x (and w, seen as [N, C, d...]) at t seen as [N, 1, d...]; "mean"
 * divides the sum by the weights' (or the count's), "sum" sums.
 */
static npurt_status op_nll(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *t = ox_in(im, n, 1), *w = ox_in(im, n, 2), *g, *wt = NULL, *l, *tv;
	const Onnx__AttributeProto *ii = ox_attr(n, "ignore_index");
	bool none = ox_attr_is(n, "reduction", "none"), sum = ox_attr_is(n, "reduction", "sum");
	int64_t dims[OX_MAX_DIMS], st[OX_MAX_DIMS], wd[OX_MAX_DIMS], ws[OX_MAX_DIMS];
	const char *xn = x->name, *out = n->output[0], *wtn = NULL, *ln;
	char tn[96], gn[96], wn[96];
	uint32_t r = x->ndim, tmp;

	if (!none && !sum && ox_attr(n, "reduction") && !ox_attr_is(n, "reduction", "mean"))
		return ox_fail(im, NPURT_ERR_INVALID, "reduction is none, sum or mean");
	if (!t || r < 2 || t->ndim + 1 != r || !index_type(t->type) ||
	    (w && (w->ndim != 1 || w->dims[0] != x->dims[1] || w->type != x->type)))
		return ox_fail(im, NPURT_ERR_INVALID, "input [N, C, d...], target [N, d...], "
			       "weight [C]");
	for (uint32_t k = 0, j = 0; k < r; k++) {
		if (k != 1 && t->dims[j++] != x->dims[k])
			return ox_fail(im, NPURT_ERR_INVALID, "target's dims are not the input's");
	}
	if (ox_device(im, x, &tmp) || ox_device(im, ox_find(im, n->input[1]), &tmp) ||
	    (w && ox_device(im, ox_find(im, n->input[2]), &tmp)))
		return npurt_last_status();
	t = ox_find(im, n->input[1]);
	/* t as [N, 1, d...] */
	for (uint32_t k = 0, j = 0; k < r; k++) {
		dims[k] = k == 1 ? 1 : t->dims[j];
		st[k] = k == 1 ? 0 : t->stride[j++];
	}
	tv = ox_view(im, t, ox_tmp_name(im, tn, sizeof(tn), out), r, dims, t->off, st);
	if (!tv)
		return npurt_last_status();
	{
		struct ox_val *xv = ox_find(im, xn);

		g = ox_gather_op(im, xv, tv, 1, xv->type, ox_tmp_name(im, gn, sizeof(gn), out));
	}
	if (!g)
		return npurt_last_status();
	if (w) {
		w = ox_find(im, n->input[2]);
		for (uint32_t k = 0; k < r; k++) {
			wd[k] = k == 1 ? w->dims[0] : dims[k];
			ws[k] = k == 1 ? w->stride[0] : 0;
		}
		{
			struct ox_val wl = ox_layout(w, r, wd, ws);

			wt = ox_gather_op(im, &wl, ox_find(im, tn), 1, w->type,
				    ox_tmp_name(im, wn, sizeof(wn), out));
		}
		if (!wt)
			return npurt_last_status();
		wtn = wt->name;
	}
	if (ii) {
		npurt_graph_node sel = { .size = sizeof(sel), .op = NPU_OP_SELECT };
		int32_t type = ox_find(im, xn)->type;
		struct ox_val *v, *eq;
		const char *zn;
		char en[96];

		if (!wtn) {
			npurt_graph_node copy = { .size = sizeof(copy), .op = NPU_OP_TRANSPOSE,
						  .perm = OX_PERM_IDENTITY };
			const char *on;

			v = ox_scalar_of(im, type, 1, 1, out);
			if (!v)
				return npurt_last_status();
			on = v->name;	/* names stay put; values move with the table */
			ox_tmp_name(im, wn, sizeof(wn), out);
			if (!ox_fresh(im, wn, type, r, dims) ||
			    ox_bcast_tensor(im, on, r, dims, &copy.in[0]) ||
			    ox_add(im, &copy, ox_find(im, wn)->base))
				return npurt_last_status();
			wtn = wn;
		}
		v = ox_scalar_of(im, type, 0, 0, out);
		if (!v)
			return npurt_last_status();
		zn = v->name;
		v = ox_scalar_of(im, ox_find(im, tn)->type, 0, ii->i, out);
		ox_tmp_name(im, en, sizeof(en), out);
		eq = v ? ox_binary(im, NPU_OP_EQUAL, ox_find(im, tn), v, en) : NULL;
		if (!eq || ox_device(im, eq, &sel.in[0]) ||
		    ox_bcast_tensor(im, zn, r, dims, &sel.in[1]) ||
		    ox_add(im, &sel, ox_find(im, wtn)->base))
			return npurt_last_status();
	}
	{
		char nn[96], mn[96];

		ox_tmp_name(im, nn, sizeof(nn), out);
		ox_tmp_name(im, mn, sizeof(mn), out);
		l = ox_unary(im, NPU_OP_NEG, ox_find(im, gn), 0, 0, nn);
		if (l && wtn)
			l = ox_binary(im, NPU_OP_MUL, l, ox_find(im, wtn), mn);
	}
	if (!l)
		return npurt_last_status();
	ln = l->name;
	if (none) {
		for (uint32_t k = 0, j = 0; k < r; k++)
			if (k != 1) {
				dims[j] = l->dims[k];
				st[j++] = l->stride[k];
			}
		return ox_done(ox_view(im, l, out, r - 1, dims, l->off, st));
	}
	{
		struct ox_val *s = sum_all(im, l, out), *den;
		const char *sn = s ? s->name : NULL;
		char dn[96];

		if (!s)
			return npurt_last_status();
		if (!sum) {
			den = wtn ? sum_all(im, ox_find(im, wtn), out) :
			      ox_scalar_of(im, s->type, (double)ox_count(ox_find(im, ln)), 0, out);
			ox_tmp_name(im, dn, sizeof(dn), out);
			s = den ? ox_binary(im, NPU_OP_DIV, ox_find(im, sn), den, dn) : NULL;
			if (!s)
				return npurt_last_status();
		}
		return ox_done(ox_view(im, s, out, 0, dims, s->off, st));	/* a scalar */
	}
}

/*
 * SoftmaxCrossEntropyLoss: LogSoftmax along the classes (the second
 * output, when asked for), then NegativeLogLikelihoodLoss of it.
 */
static npurt_status op_sce(struct ox_imp *im, const Onnx__NodeProto *n)
{
	Onnx__AttributeProto axis = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = { &axis };
	Onnx__NodeProto ls = ONNX__NODE_PROTO__INIT, nll;
	char lpn[96], *lp, *ins[3];
	int64_t opset = im->opset;
	npurt_status st;

	lp = n->n_output > 1 && n->output[1][0] ? n->output[1] :
	     (char *)ox_tmp_name(im, lpn, sizeof(lpn), n->output[0]);
	axis.name = (char *)"axis";
	axis.has_i = true;
	axis.i = 1;
	axis.has_type = true;
	axis.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	ls.op_type = (char *)"LogSoftmax";
	ls.n_input = 1;
	ls.input = n->input;
	ls.n_output = 1;
	ls.output = &lp;
	ls.n_attribute = 1;
	ls.attribute = attrs;
	/* Along axis 1 alone: LogSoftmax as opset 13 has it, not coerced to 2-D. */
	im->opset = opset < 13 ? 13 : opset;
	st = ox_node(im, &ls);
	im->opset = opset;
	if (st)
		return st;
	nll = *n;
	ins[0] = lp;
	for (size_t k = 1; k < n->n_input && k < 3; k++)
		ins[k] = n->input[k];
	nll.input = ins;
	nll.n_input = n->n_input < 3 ? n->n_input : 3;
	nll.n_output = 1;
	return op_nll(im, &nll, ox_find(im, lp));
}

/* CumSum: one CUMSUM along the (constant) axis, exclusive and reverse as flags. */
static npurt_status op_cumsum(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_CUMSUM };
	struct ox_val *av = ox_in(im, n, 1), *y;
	const char *xn = x->name;
	int32_t type;
	int a;

	if (!av || !av->is_const || ox_count(av) != 1)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "an axis that is not one constant");
	a = ox_axis(ox_geti(av, 0), x->ndim);
	if (a < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "axis %lld of rank %u",
			       (long long)ox_geti(av, 0), x->ndim);
	node.axis = (uint32_t)a;
	node.flags = (ox_attr_i(n, "exclusive", 0) ? NPURT_CUMSUM_EXCLUSIVE : 0) |
		     (ox_attr_i(n, "reverse", 0) ? NPURT_CUMSUM_REVERSE : 0);
	if (ox_op_types(im, NPU_OP_CUMSUM, x, NULL, &type) || ox_device(im, x, &node.in[0]))
		return npurt_last_status();
	x = ox_find(im, xn);
	y = ox_fresh(im, n->output[0], type, x->ndim, x->dims);
	if (!y)
		return npurt_last_status();
	return ox_add(im, &node, y->base);
}

npurt_status ox_int_node(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			 bool *done)
{
	const char *t = n->op_type;
	uint32_t op = 0;

	*done = true;
	for (size_t k = 0; k < sizeof(compares) / sizeof(compares[0]); k++)
		if (!strcmp(t, compares[k].onnx))
			op = compares[k].op;
	if (!strcmp(t, "Mod"))
		op = ox_attr_i(n, "fmod", 0) ? NPU_OP_FMOD : NPU_OP_MOD;
	if (!strcmp(t, "BitShift")) {
		if (!ox_attr_is(n, "direction", "LEFT") && !ox_attr_is(n, "direction", "RIGHT"))
			return ox_fail(im, NPURT_ERR_INVALID, "direction is LEFT or RIGHT");
		op = ox_attr_is(n, "direction", "LEFT") ? NPU_OP_SHL : NPU_OP_SHR;
	}
	if (op)
		return ox_done(ox_binary(im, op, x, ox_in(im, n, 1), n->output[0]));
	if (!strcmp(t, "Not") || !strcmp(t, "IsNaN"))
		return ox_done(ox_unary(im, t[0] == 'N' ? NPU_OP_NOT : NPU_OP_ISNAN, x, 0, 0,
					n->output[0]));
	if (!strcmp(t, "IsInf"))
		return ox_done(ox_unary(im, NPU_OP_ISINF, x, ox_attr_i(n, "detect_positive", 1) != 0,
					ox_attr_i(n, "detect_negative", 1) != 0, n->output[0]));
	if (!strcmp(t, "ArgMax") || !strcmp(t, "ArgMin"))
		return op_arg(im, n, x, t[3] == 'M' && t[4] == 'a' ? NPU_OP_ARGMAX : NPU_OP_ARGMIN);
	if (!strcmp(t, "Cast") || !strcmp(t, "CastLike"))
		return ox_op_cast(im, n, x);
	if (!strcmp(t, "Where"))
		return op_where(im, n, x);
	if (!strcmp(t, "Hardmax"))
		return op_hardmax(im, n, x);
	if (!strcmp(t, "Resize") || !strcmp(t, "Upsample"))
		return ox_op_resize(im, n, x);
	if (!strcmp(t, "CumSum"))
		return op_cumsum(im, n, x);
	if (!strcmp(t, "GatherElements"))
		return op_gather_elements(im, n, x);
	if (!strcmp(t, "NegativeLogLikelihoodLoss"))
		return op_nll(im, n, x);
	if (!strcmp(t, "SoftmaxCrossEntropyLoss"))
		return op_sce(im, n);
	*done = false;
	return NPURT_OK;
}
