// SPDX-License-Identifier: MIT
/*
 * ONNX nodes that only rearrange their input: Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity, Transpose, Expand, Slice, Split, Gather with
 * constant indices. Each gives a new layout over its input's elements, a
 * view on the device and a gather on the host for constants, so none
 * costs a device op unless the input must first be made dense.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "npu_oplib.h"
#include "error.h"
#include "onnx.h"

static bool is_dense(const struct ox_val *v)
{
	int64_t s = 1;

	for (uint32_t k = v->ndim; k-- > 0;) {
		if (v->dims[k] != 1 && v->stride[k] != s)
			return false;
		s *= v->dims[k];
	}
	return true;
}

/* Is w another value with v's base as its tensor, laid out as v is? */
static bool own_layout(const struct ox_val *w, const struct ox_val *v)
{
	return w != v && w->base == v->base && w->tensor == v->base && w->ndim == v->ndim &&
	       !memcmp(w->dims, v->dims, v->ndim * sizeof(v->dims[0])) &&
	       !memcmp(w->stride, v->stride, v->ndim * sizeof(v->stride[0]));
}

/* Element `e` (row-major over v's dims) of v's layout, as an offset. */
static uint64_t layout_offset(const struct ox_val *v, uint64_t e)
{
	uint64_t off = v->off;

	for (uint32_t k = v->ndim; k-- > 0;) {
		off += (e % (uint64_t)v->dims[k]) * (uint64_t)v->stride[k];
		e /= (uint64_t)v->dims[k];
	}
	return off;
}

struct ox_val *ox_view(struct ox_imp *im, struct ox_val *x, const char *name, uint32_t ndim,
		       const int64_t *dims, uint64_t off, const int64_t *stride)
{
	int64_t d[OX_MAX_DIMS], st[OX_MAX_DIMS];	/* may point into the table */
	size_t xi = (size_t)(x - im->vals);		/* x by index: names may repeat */
	struct ox_val *v;
	uint64_t n;

	if (ndim > OX_MAX_DIMS) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" has %u dimensions", name, ndim);
		return NULL;
	}
	if (ndim) {
		memcpy(d, dims, ndim * sizeof(d[0]));
		memcpy(st, stride, ndim * sizeof(st[0]));
	}
	dims = d;
	stride = st;
	if (x->is_const) {
		struct ox_val lay = *x;

		v = ox_new_const(im, name, x->type, ndim, dims);
		if (!v)
			return NULL;
		x = &im->vals[xi];	/* the table may have moved */
		lay.ndim = ndim;
		if (ndim) {
			memcpy(lay.dims, dims, ndim * sizeof(dims[0]));
			memcpy(lay.stride, stride, ndim * sizeof(stride[0]));
		}
		lay.off = off;
		n = ox_count(v);
		for (uint64_t e = 0; e < n; e++) {
			uint64_t at = layout_offset(&lay, e);

			if (v->f)
				v->f[e] = x->f[at];
			else
				v->i[e] = x->i[at];
		}
		return v;
	}
	{
		uint32_t base = x->base;
		bool computed = x->computed, output = x->output;

		v = ox_new(im, name, x->type, ndim, dims);
		if (!v)
			return NULL;
		v->base = base;
		v->computed = computed;
		v->output = output;
		v->off = off;
		if (ndim)
			memcpy(v->stride, stride, ndim * sizeof(stride[0]));
		/*
		 * A layout that is its base's own needs no view tensor. x is
		 * looked at first: a chain of such views (a loop's state,
		 * unrolled) then costs no scan of the table each.
		 */
		v->tensor = OX_NONE;
		if (!off && own_layout(&im->vals[xi], v))
			v->tensor = base;
		for (size_t k = 0; !off && v->tensor == OX_NONE && k < im->nvals; k++)
			if (own_layout(&im->vals[k], v))
				v->tensor = base;
	}
	return v;
}

struct ox_val *ox_dense_2d(struct ox_imp *im, struct ox_val *x, int axis, const char *name)
{
	int64_t dims[2] = { 1, 1 }, st[2];

	for (uint32_t k = 0; k < x->ndim; k++)
		dims[k >= (uint32_t)axis] *= x->dims[k];
	x = ox_dense(im, x);
	if (!x)
		return NULL;
	st[0] = dims[1], st[1] = 1;
	return ox_view(im, x, name, 2, dims, x->off, st);
}

struct ox_val *ox_dense(struct ox_imp *im, struct ox_val *x)
{
	char name[80];
	struct ox_val *v;
	uint32_t src;
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_TRANSPOSE };

	if (x->is_const || is_dense(x))
		return x;
	snprintf(name, sizeof(name), "\001%.64s:dense%u", x->name, im->scratch++);
	if (ox_device(im, x, &src))
		return NULL;
	v = ox_new(im, name, x->type, x->ndim, x->dims);
	if (!v || ox_home(im, v))
		return NULL;
	for (uint32_t k = 0; k < NPURT_MAX_DIMS; k++)
		node.perm[k] = k;
	node.in[0] = src;
	if (ox_add(im, &node, v->base))
		return NULL;
	return v;
}

/* x's elements in row-major order under new dims. */
static npurt_status reshape_to(struct ox_imp *im, struct ox_val *x, const char *name,
			       uint32_t ndim, const int64_t *dims)
{
	int64_t stride[OX_MAX_DIMS], s = 1;
	uint64_t n = 1;

	for (uint32_t k = 0; k < ndim; k++)
		n *= (uint64_t)dims[k];
	if (n != ox_count(x))
		return ox_fail(im, NPURT_ERR_INVALID, "%llu elements reshaped into %llu",
			       (unsigned long long)ox_count(x), (unsigned long long)n);
	x = ox_dense(im, x);
	if (!x)
		return npurt_last_status();
	for (uint32_t k = ndim; k-- > 0;) {
		stride[k] = s;
		s *= dims[k];
	}
	return ox_view(im, x, name, ndim, dims, x->off, stride) ? NPURT_OK :
	       npurt_last_status();
}

/* Integer values of a constant input or an ints attribute (opset-dependent). */
int ox_ints(struct ox_imp *im, const Onnx__NodeProto *n, size_t input, const char *attr,
	    int64_t *out, int max, npurt_status *st)
{
	const Onnx__AttributeProto *a = attr ? ox_attr(n, attr) : NULL;
	struct ox_val *v = ox_in(im, n, input);
	uint64_t cnt;

	*st = NPURT_OK;
	if (a) {
		if (a->n_ints > (size_t)max) {
			*st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "%s has %zu values", attr, a->n_ints);
			return -1;
		}
		if (a->n_ints)
			memcpy(out, a->ints, a->n_ints * sizeof(out[0]));
		return (int)a->n_ints;
	}
	if (!v)
		return -1;
	if (!v->is_const) {
		*st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "input %zu (\"%.64s\") is computed: "
			      "the device runs static shapes", input, v->name);
		return -1;
	}
	cnt = ox_count(v);
	if (cnt > (uint64_t)max) {
		*st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "input %zu has %llu values", input,
			      (unsigned long long)cnt);
		return -1;
	}
	for (uint64_t k = 0; k < cnt; k++)
		out[k] = ox_geti(v, k);
	return (int)cnt;
}

/* An axis in [-rank, rank) made positive, or -1. */
int ox_axis(int64_t axis, uint32_t rank)
{
	if (axis < -(int64_t)rank || axis >= (int64_t)rank)
		return -1;
	return (int)(axis < 0 ? axis + rank : axis);
}

static npurt_status bad_axis(struct ox_imp *im, int64_t axis, uint32_t rank)
{
	return ox_fail(im, NPURT_ERR_INVALID, "axis %lld of a rank-%u tensor", (long long)axis, rank);
}

static npurt_status op_reshape(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t shape[OX_MAX_DIMS], known = 1;
	int infer = -1, k, cnt;
	npurt_status st;

	cnt = ox_ints(im, n, 1, im->opset < 5 ? "shape" : NULL, shape, OX_MAX_DIMS, &st);
	if (cnt < 0)
		return st ? st : ox_fail(im, NPURT_ERR_INVALID, "no shape");
	for (k = 0; k < cnt; k++) {
		if (shape[k] == 0 && !ox_attr_i(n, "allowzero", 0)) {
			if ((uint32_t)k >= x->ndim)
				return ox_fail(im, NPURT_ERR_INVALID, "shape[%d] = 0 past the input's "
					       "rank", k);
			shape[k] = x->dims[k];
		}
		if (shape[k] == -1) {
			if (infer >= 0)
				return ox_fail(im, NPURT_ERR_INVALID, "two -1 in the shape");
			infer = k;
			continue;
		}
		if (shape[k] < 0 || (shape[k] && known > ((int64_t)1 << 40) / shape[k]))
			return ox_fail(im, NPURT_ERR_INVALID, "shape[%d] = %lld", k,
				       (long long)shape[k]);
		known *= shape[k];
	}
	if (infer >= 0) {
		if (!known || ox_count(x) % (uint64_t)known)
			return ox_fail(im, NPURT_ERR_INVALID, "cannot infer the -1 of the shape");
		shape[infer] = (int64_t)(ox_count(x) / (uint64_t)known);
	}
	return reshape_to(im, x, n->output[0], (uint32_t)cnt, shape);
}

static npurt_status op_flatten(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t axis = ox_attr_i(n, "axis", 1), dims[2] = { 1, 1 };

	if (axis < 0)
		axis += x->ndim;
	if (axis < 0 || axis > (int64_t)x->ndim)
		return bad_axis(im, axis, x->ndim);
	for (uint32_t k = 0; k < x->ndim; k++)
		dims[k >= axis] *= x->dims[k];
	return reshape_to(im, x, n->output[0], 2, dims);
}

static npurt_status op_squeeze(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			       bool unsqueeze)
{
	int64_t axes[OX_MAX_DIMS], dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	bool mark[OX_MAX_DIMS + 1] = { false };
	uint32_t rank, j = 0;
	npurt_status st;
	int cnt = ox_ints(im, n, 1, im->opset < 13 ? "axes" : NULL, axes, OX_MAX_DIMS, &st);

	if (st)
		return st;
	rank = unsqueeze ? x->ndim + (uint32_t)(cnt > 0 ? cnt : 0) : x->ndim;
	if (unsqueeze && (cnt <= 0 || rank > OX_MAX_DIMS))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "unsqueeze to rank %u", rank);
	for (int k = 0; k < cnt; k++) {
		int a = ox_axis(axes[k], rank);

		if (a < 0 || mark[a])
			return bad_axis(im, axes[k], rank);
		if (!unsqueeze && x->dims[a] != 1)
			return ox_fail(im, NPURT_ERR_INVALID, "squeezes axis %d of size %lld", a,
				       (long long)x->dims[a]);
		mark[a] = true;
	}
	if (unsqueeze) {
		for (uint32_t k = 0, i = 0; k < rank; k++) {
			dims[k] = mark[k] ? 1 : x->dims[i];
			stride[k] = mark[k] ? 0 : x->stride[i];
			i += !mark[k];
		}
		j = rank;
	} else {
		for (uint32_t k = 0; k < x->ndim; k++) {
			if (cnt > 0 ? mark[k] : x->dims[k] == 1)
				continue;
			dims[j] = x->dims[k];
			stride[j++] = x->stride[k];
		}
	}
	return ox_view(im, x, n->output[0], j, dims, x->off, stride) ? NPURT_OK :
	       npurt_last_status();
}

static npurt_status op_transpose(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	const Onnx__AttributeProto *a = ox_attr(n, "perm");
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	unsigned int seen = 0;

	if (a && a->n_ints != x->ndim)
		return ox_fail(im, NPURT_ERR_INVALID, "perm of %zu for rank %u", a->n_ints, x->ndim);
	for (uint32_t k = 0; k < x->ndim; k++) {
		int64_t p = a ? a->ints[k] : (int64_t)(x->ndim - 1 - k);

		if (p < 0 || p >= (int64_t)x->ndim || seen & (1u << p))
			return ox_fail(im, NPURT_ERR_INVALID, "perm is no permutation");
		seen |= 1u << p;
		dims[k] = x->dims[p];
		stride[k] = x->stride[p];
	}
	return ox_view(im, x, n->output[0], x->ndim, dims, x->off, stride) ? NPURT_OK :
	       npurt_last_status();
}

/* Multidirectional broadcasting of b's dims onto a's (ONNX's rule). */
bool ox_broadcast(const int64_t *a, uint32_t na, const int64_t *b, uint32_t nb, int64_t *out,
		  uint32_t *nout)
{
	uint32_t n = na > nb ? na : nb;

	for (uint32_t k = 0; k < n; k++) {
		int64_t x = k + na >= n ? a[k + na - n] : 1, y = k + nb >= n ? b[k + nb - n] : 1;

		if (x != y && x != 1 && y != 1)
			return false;
		out[k] = x == 1 ? y : x;
	}
	*nout = n;
	return true;
}

/* x seen with `dims` (x's broadcast to them): zero strides where it repeats. */
struct ox_val *ox_expand_to(struct ox_imp *im, struct ox_val *x, const char *name, uint32_t ndim,
			    const int64_t *dims)
{
	int64_t stride[OX_MAX_DIMS];

	for (uint32_t k = 0; k < ndim; k++) {
		int j = (int)k - (int)(ndim - x->ndim);

		stride[k] = j < 0 || (x->dims[j] == 1 && dims[k] != 1) ? 0 : x->stride[j];
	}
	return ox_view(im, x, name, ndim, dims, x->off, stride);
}

static npurt_status op_expand(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t shape[OX_MAX_DIMS], dims[OX_MAX_DIMS];
	uint32_t nd;
	npurt_status st;
	int cnt = ox_ints(im, n, 1, NULL, shape, OX_MAX_DIMS, &st);

	if (cnt < 0)
		return st ? st : ox_fail(im, NPURT_ERR_INVALID, "no shape");
	if (!ox_broadcast(x->dims, x->ndim, shape, (uint32_t)cnt, dims, &nd))
		return ox_fail(im, NPURT_ERR_INVALID, "shapes do not broadcast");
	return ox_expand_to(im, x, n->output[0], nd, dims) ? NPURT_OK : npurt_last_status();
}

static npurt_status op_gather(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x);

struct ox_val *ox_positions(struct ox_imp *im, const char *of, int64_t count, char *name,
			    size_t len)
{
	return ox_new_const(im, ox_tmp_name(im, name, len, of), OX_INT64, 1, &count);
}

npurt_status ox_gather_at(struct ox_imp *im, const Onnx__NodeProto *n, const char *x,
			  const char *idx, int64_t axis, const char *out)
{
	Onnx__AttributeProto ax = ONNX__ATTRIBUTE_PROTO__INIT, *attrs[1] = { &ax };
	Onnx__NodeProto g = ONNX__NODE_PROTO__INIT;
	char *ins[2] = { (char *)x, (char *)idx }, *outs[1] = { (char *)out };

	ax.name = (char *)"axis";
	ax.has_type = true;
	ax.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	ax.has_i = true;
	ax.i = axis;
	g.op_type = (char *)"Gather";
	g.name = n->name;
	g.input = ins;
	g.n_input = 2;
	g.output = outs;
	g.n_output = 1;
	g.attribute = attrs;
	g.n_attribute = 1;
	return op_gather(im, &g, ox_find(im, x));
}

/*
 * Backward steps: each such axis is a Gather of the positions it visits,
 * in order (views only step forward). in: what the forward steps made;
 * per axis stepped back: its first position, the count and the step.
 */
static npurt_status slice_backward(struct ox_imp *im, const Onnx__NodeProto *n, const char *in,
				   int nrev, const int *axis, const int64_t *first,
				   const int64_t *count, const int64_t *step)
{
	char names[OX_MAX_DIMS][96], idxn[96];
	const char *cur = in;

	for (int r = 0; r < nrev; r++) {
		const char *out = r == nrev - 1 ? n->output[0] :
				  ox_tmp_name(im, names[r], sizeof(names[r]), n->output[0]);
		struct ox_val *idx = ox_positions(im, n->output[0], count[r], idxn, sizeof(idxn));
		npurt_status st;

		if (!idx)
			return npurt_last_status();
		for (int64_t k = 0; k < count[r]; k++)
			idx->i[k] = first[r] + k * step[r];
		st = ox_gather_at(im, n, cur, idxn, axis[r], out);
		if (st)
			return st;
		cur = out;
	}
	return NPURT_OK;
}

static npurt_status op_slice(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t starts[OX_MAX_DIMS], ends[OX_MAX_DIMS], axes[OX_MAX_DIMS], steps[OX_MAX_DIMS];
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	int64_t first[OX_MAX_DIMS], count[OX_MAX_DIMS], back[OX_MAX_DIMS];
	int axis[OX_MAX_DIMS], nrev = 0;
	bool old = im->opset < 10;
	uint64_t off = x->off;
	unsigned int seen = 0;
	char tmp[96];
	npurt_status st;
	int cs, ce, ca, cp;

	cs = ox_ints(im, n, 1, old ? "starts" : NULL, starts, OX_MAX_DIMS, &st);
	if (!st)
		ce = ox_ints(im, n, 2, old ? "ends" : NULL, ends, OX_MAX_DIMS, &st);
	if (!st)
		ca = ox_ints(im, n, 3, old ? "axes" : NULL, axes, OX_MAX_DIMS, &st);
	if (!st)
		cp = old ? -1 : ox_ints(im, n, 4, NULL, steps, OX_MAX_DIMS, &st);
	if (st)
		return st;
	if (cs < 0 || ce != cs || (ca >= 0 && ca != cs) || (cp >= 0 && cp != cs))
		return ox_fail(im, NPURT_ERR_INVALID, "starts, ends, axes and steps differ in length");
	memcpy(dims, x->dims, sizeof(dims));
	memcpy(stride, x->stride, sizeof(stride));
	for (int k = 0; k < cs; k++) {
		int a = ox_axis(ca >= 0 ? axes[k] : k, x->ndim);
		int64_t step = cp >= 0 ? steps[k] : 1, d, b, e;

		if (a < 0)
			return bad_axis(im, ca >= 0 ? axes[k] : k, x->ndim);
		if (seen & (1u << a))
			return ox_fail(im, NPURT_ERR_INVALID, "axis %d sliced twice", a);
		seen |= 1u << a;
		if (!step)
			return ox_fail(im, NPURT_ERR_INVALID, "step 0");
		d = x->dims[a];
		b = starts[k] < 0 ? starts[k] + d : starts[k];
		e = ends[k] < 0 ? ends[k] + d : ends[k];
		if (step < 0) {
			/* from b down to past e: b in [0, d - 1], e in [-1, d - 1] */
			b = b < 0 ? -1 : b > d - 1 ? d - 1 : b;
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			if (b <= e || b < 0)
				return ox_fail(im, NPURT_ERR_UNSUPPORTED, "an empty slice");
			axis[nrev] = a;
			first[nrev] = b;
			count[nrev] = 1 + (b - e - 1) / -step;
			back[nrev++] = step;
			continue;
		}
		b = b < 0 ? 0 : b > d ? d : b;
		e = e < 0 ? 0 : e > d ? d : e;
		dims[a] = e > b ? 1 + (e - b - 1) / step : 0;
		/* Empty values live on the host only (a shape's empty tail). */
		if (!dims[a] && !x->is_const)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "an empty slice");
		off += (uint64_t)(b * x->stride[a]);
		/* one element: its stride is never used (and step may be huge) */
		stride[a] = dims[a] == 1 ? x->stride[a] : x->stride[a] * step;
	}
	if (!nrev)
		return ox_view(im, x, n->output[0], x->ndim, dims, off, stride) ? NPURT_OK :
		       npurt_last_status();
	ox_tmp_name(im, tmp, sizeof(tmp), n->output[0]);
	if (!ox_view(im, x, tmp, x->ndim, dims, off, stride))
		return npurt_last_status();
	return slice_backward(im, n, tmp, nrev, axis, first, count, back);
}

static npurt_status op_split(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int a = ox_axis(ox_attr_i(n, "axis", 0), x->ndim);
	int64_t split[OX_MAX_OUTPUTS], dims[OX_MAX_DIMS], at = 0;
	npurt_status st;
	int cnt;

	if (a < 0)
		return bad_axis(im, ox_attr_i(n, "axis", 0), x->ndim);
	if (n->n_output > OX_MAX_OUTPUTS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%zu outputs", n->n_output);
	cnt = ox_ints(im, n, 1, im->opset < 13 ? "split" : NULL, split, OX_MAX_OUTPUTS, &st);
	if (st)
		return st;
	if (cnt < 0) {
		if (x->dims[a] % (int64_t)n->n_output)
			return ox_fail(im, NPURT_ERR_INVALID, "%lld does not split in %zu",
				       (long long)x->dims[a], n->n_output);
		for (size_t k = 0; k < n->n_output; k++)
			split[k] = x->dims[a] / (int64_t)n->n_output;
		cnt = (int)n->n_output;
	}
	if ((size_t)cnt != n->n_output)
		return ox_fail(im, NPURT_ERR_INVALID, "%d parts for %zu outputs", cnt, n->n_output);
	for (int k = 0; k < cnt; k++) {
		x = ox_find(im, n->input[0]);	/* each view may move the table */
		if (split[k] <= 0 || split[k] > x->dims[a] - at)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "part %d of %lld", k,
				       (long long)split[k]);
		if (k + 1 == cnt && at + split[k] != x->dims[a])
			return ox_fail(im, NPURT_ERR_INVALID, "the parts do not add up to %lld",
				       (long long)x->dims[a]);
		memcpy(dims, x->dims, sizeof(dims));
		dims[a] = split[k];
		if (!ox_view(im, x, n->output[k], x->ndim, dims, x->off + (uint64_t)(at * x->stride[a]),
			     x->stride))
			return npurt_last_status();
		at += split[k];
	}
	return NPURT_OK;
}

/* Gather with constant indices: a view for a scalar index, else a copy per index. */
static npurt_status op_gather(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *idx = ox_in(im, n, 1);
	int a = ox_axis(ox_attr_i(n, "axis", 0), x->ndim);
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	uint32_t nd = 0;
	uint64_t cnt;

	if (a < 0)
		return bad_axis(im, ox_attr_i(n, "axis", 0), x->ndim);
	if (!idx)
		return ox_fail(im, NPURT_ERR_INVALID, "no indices");
	if (!idx->is_const || (idx->ndim > 1 && !x->is_const))
		return ox_gather_device(im, n, x, a, idx);
	cnt = ox_count(idx);
	if (idx->ndim > 1 || x->ndim + idx->ndim - 1 > OX_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "indices of rank %u", idx->ndim);
	for (uint64_t k = 0; k < cnt; k++) {
		int64_t i = ox_geti(idx, k);

		if (i < -x->dims[a] || i >= x->dims[a])
			return ox_fail(im, NPURT_ERR_INVALID, "index %lld out of %lld", (long long)i,
				       (long long)x->dims[a]);
	}
	if (idx->ndim == 0 || x->is_const) {
		/* Gather on the host or a single slice: a view of each index. */
		if (idx->ndim == 1 && x->is_const) {
			struct ox_val *v;
			int64_t inner = 1, outer = 1;

			for (uint32_t k = 0; k < x->ndim; k++)
				dims[k] = x->dims[k];
			dims[a] = (int64_t)cnt;
			for (uint32_t k = a + 1; k < x->ndim; k++)
				inner *= x->dims[k];
			for (int k = 0; k < a; k++)
				outer *= x->dims[k];
			v = ox_new_const(im, n->output[0], x->type, x->ndim, dims);
			if (!v)
				return npurt_last_status();
			x = ox_find(im, n->input[0]);
			idx = ox_find(im, n->input[1]);
			for (int64_t o = 0; o < outer; o++)
				for (uint64_t j = 0; j < cnt; j++) {
					int64_t i = ox_geti(idx, j);

					i += i < 0 ? x->dims[a] : 0;
					for (int64_t e = 0; e < inner; e++)
						ox_set(v, ((uint64_t)o * cnt + j) * (uint64_t)inner + (uint64_t)e,
						       ox_getf(x, ((uint64_t)o * (uint64_t)x->dims[a] + (uint64_t)i) *
							       (uint64_t)inner + (uint64_t)e));
				}
			return NPURT_OK;
		}
		{
			int64_t i = ox_geti(idx, 0);

			i += i < 0 ? x->dims[a] : 0;
			for (uint32_t k = 0; k < x->ndim; k++) {
				if ((int)k == a)
					continue;
				dims[nd] = x->dims[k];
				stride[nd++] = x->stride[k];
			}
			return ox_view(im, x, n->output[0], nd, dims,
				       x->off + (uint64_t)(i * x->stride[a]), stride) ? NPURT_OK :
			       npurt_last_status();
		}
	}
	return cnt > 64 ? ox_gather_device(im, n, x, a, idx) : ox_gather_copies(im, n, x, a, idx);
}

npurt_status ox_view_node(struct ox_imp *im, const Onnx__NodeProto *n, bool *done)
{
	const char *t = n->op_type;
	struct ox_val *x = ox_in(im, n, 0);

	*done = true;
	if (!strcmp(t, "Reshape"))
		return op_reshape(im, n, x);
	if (!strcmp(t, "Flatten"))
		return op_flatten(im, n, x);
	if (!strcmp(t, "Squeeze"))
		return op_squeeze(im, n, x, false);
	if (!strcmp(t, "Unsqueeze"))
		return op_squeeze(im, n, x, true);
	if (!strcmp(t, "Transpose"))
		return op_transpose(im, n, x);
	if (!strcmp(t, "Expand"))
		return op_expand(im, n, x);
	if (!strcmp(t, "Slice"))
		return op_slice(im, n, x);
	if (!strcmp(t, "Split"))
		return op_split(im, n, x);
	if (!strcmp(t, "Gather"))
		return op_gather(im, n, x);
	if (!strcmp(t, "Dropout")) {
		struct ox_val *train = ox_in(im, n, 2);

		struct ox_val *mask, *ratio = im->opset >= 12 ? ox_in(im, n, 1) : NULL;
		bool none = ratio && ratio->is_const && ox_count(ratio) == 1 && ox_getf(ratio, 0) == 0;

		/* Training drops at random, but a ratio of 0 drops nothing. */
		if ((train && !none && (!train->is_const || ox_getf(train, 0) != 0)) ||
		    ox_attr_i(n, "is_test", 1) == 0 || (im->opset < 7 && n->n_output > 1))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "dropout in training (a mask)");
		/* Nothing is dropped: the mask is all true. */
		if (n->n_output > 1 && n->output[1][0]) {
			int64_t dims[OX_MAX_DIMS];
			uint32_t nd = x->ndim;

			memcpy(dims, x->dims, sizeof(dims));
			mask = ox_new_const(im, n->output[1], OX_BOOL, nd, dims);
			if (!mask)
				return npurt_last_status();
			for (uint64_t k = 0; k < ox_count(mask); k++)
				mask->i[k] = 1;
			x = ox_in(im, n, 0);
		}
	}
	if (!strcmp(t, "Identity") || !strcmp(t, "Dropout")) {
		return ox_view(im, x, n->output[0], x->ndim, x->dims, x->off, x->stride) ? NPURT_OK :
		       npurt_last_status();
	}
	*done = false;
	return NPURT_OK;
}
