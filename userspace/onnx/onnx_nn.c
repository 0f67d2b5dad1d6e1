// SPDX-License-Identifier: MIT
/*
 * ONNX layers with more to them than an op: normalizations (BatchNorm
 * folded to a scale and shift, InstanceNorm and LayerNormalization on the
 * device's layernorm), whole-image pools, PRelu, and the windows (Conv,
 * MaxPool, AveragePool in 1-D to 3-D) on the op library's CONV2D and
 * pools.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

/* Over every axis from 2 on: GlobalAveragePool, GlobalMaxPool. */
/*
 * GlobalAveragePool, GlobalMaxPool: [N, C, spatial...] reduced over the
 * spatial dimensions. A dense input is [N, C, H * W...] as well, so that
 * is one reduction of contiguous rows; reducing H and then W would be
 * two launches, the first reading with a stride of a row (a squeeze-and-
 * excitation block runs one per block, and they were a third of a
 * MobileNet's device time).
 */
npurt_status ox_op_global_pool(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			       uint32_t op)
{
	npurt_graph_node node = { .size = sizeof(node), .op = op, .axis = 2 };
	int64_t rows[3], stride[3], dims[OX_MAX_DIMS], st[OX_MAX_DIMS];
	uint32_t rank = x->ndim;
	ox_name flat, red;
	struct ox_val *y;

	if (ox_need_real(im, x))
		return npurt_last_status();
	if (rank < 3)
		return ox_fail(im, NPURT_ERR_INVALID, "rank %u, at least 3", rank);
	memcpy(dims, x->dims, sizeof(dims));
	rows[0] = dims[0], rows[1] = dims[1], rows[2] = 1;
	for (uint32_t a = 2; a < rank; a++)
		rows[2] *= dims[a];
	x = ox_dense(im, x);
	if (!x)
		return npurt_last_status();
	stride[2] = 1, stride[1] = rows[2], stride[0] = rows[1] * rows[2];
	x = ox_view(im, x, ox_tmp_name(im, flat, sizeof(flat), n->output[0]), 3, rows, x->off,
		    stride);
	if (!x || ox_device(im, x, &node.in[0]))
		return npurt_last_status();
	rows[2] = 1;
	y = ox_fresh(im, ox_tmp_name(im, red, sizeof(red), n->output[0]), x->type, 3, rows);
	if (!y || ox_add(im, &node, y->base))
		return npurt_last_status();
	/* [N, C, 1] is [N, C, 1, 1...]: the output, a view */
	for (uint32_t a = 0; a < rank; a++) {
		dims[a] = a < 2 ? rows[a] : 1;
		st[a] = a == 0 ? rows[1] : 1;
	}
	return ox_done(ox_view(im, y, n->output[0], rank, dims, y->off, st));
}

/* y = x * a + b with per-channel constants a, b (axis 1), two device ops. */
static npurt_status scale_shift(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
				const double *a, const double *b, int64_t c)
{
	int64_t dims[OX_MAX_DIMS];
	struct ox_val *va, *vb, *y;
	char an[96], bn[96], yn[96];
	const char *xn = x->name;
	uint32_t rank = x->ndim;

	for (uint32_t k = 0; k + 1 < rank; k++)
		dims[k] = k == 0 ? c : 1;
	va = ox_new_const(im, ox_tmp_name(im, an, sizeof(an), n->output[0]), x->type, rank - 1, dims);
	vb = va ? ox_new_const(im, ox_tmp_name(im, bn, sizeof(bn), n->output[0]), x->type, rank - 1,
			       dims) : NULL;
	if (!vb)
		return npurt_last_status();
	va = ox_find(im, an);
	for (int64_t k = 0; k < c; k++) {
		va->f[k] = a[k];
		vb->f[k] = b[k];
	}
	y = ox_binary(im, NPU_OP_MUL, ox_find(im, xn), va, ox_tmp_name(im, yn, sizeof(yn), n->output[0]));
	if (!y)
		return npurt_last_status();
	return ox_done(ox_binary(im, NPU_OP_ADD, y, ox_find(im, bn), n->output[0]));
}

/*
 * BatchNormalization with statistics known only at run time: the same
 * scale and shift, computed on the device over the [C] inputs (five
 * small ops), then applied as views of [C, 1, ...].
 */
static npurt_status batchnorm_computed(struct ox_imp *im, const Onnx__NodeProto *n,
				       struct ox_val *x)
{
	const char *xn = x->name;
	int64_t dims[OX_MAX_DIMS] = { x->dims[1] }, stride[OX_MAX_DIMS] = { 1 };
	uint32_t rank = x->ndim - 1;
	char an[96], bn[96], tn[96], vn[96];
	struct ox_val *t, *a, *b;

	for (uint32_t k = 1; k < rank; k++)
		dims[k] = 1, stride[k] = 0;
	/* a = scale / sqrt(var + eps); b = bias - mean a */
	t = ox_in(im, n, 4);
	t = ox_scalar_of(im, t->type, ox_attr_f(n, "epsilon", 1e-5f), 0, n->output[0]);
	if (t)
		t = ox_binary(im, NPU_OP_ADD, ox_in(im, n, 4), t, ox_tmp_name(im, tn, sizeof(tn),
									    n->output[0]));
	if (t)
		t = ox_unary(im, NPU_OP_SQRT, t, 0, 0, ox_tmp_name(im, tn, sizeof(tn), n->output[0]));
	a = t ? ox_binary(im, NPU_OP_DIV, ox_in(im, n, 1), t, ox_tmp_name(im, an, sizeof(an),
									     n->output[0])) : NULL;
	t = a ? ox_binary(im, NPU_OP_MUL, ox_in(im, n, 3), a, ox_tmp_name(im, tn, sizeof(tn),
									     n->output[0])) : NULL;
	b = t ? ox_binary(im, NPU_OP_SUB, ox_in(im, n, 2), t, ox_tmp_name(im, bn, sizeof(bn),
									     n->output[0])) : NULL;
	if (!b)
		return npurt_last_status();
	/* [C] as [C, 1, ...] against x [N, C, ...] */
	/* (looked up before ox_tmp_name() rewrites the name buffers) */
	a = ox_find(im, an);
	a = ox_view(im, a, ox_tmp_name(im, an, sizeof(an), n->output[0]), rank, dims, 0, stride);
	b = a ? ox_find(im, bn) : NULL;
	b = b ? ox_view(im, b, ox_tmp_name(im, bn, sizeof(bn), n->output[0]), rank, dims, 0,
			stride) : NULL;
	if (!b)
		return npurt_last_status();
	t = ox_binary(im, NPU_OP_MUL, ox_find(im, xn), ox_find(im, an),
		      ox_tmp_name(im, vn, sizeof(vn), n->output[0]));
	return ox_done(t ? ox_binary(im, NPU_OP_ADD, t, ox_find(im, bn), n->output[0]) : NULL);
}

npurt_status ox_op_batchnorm(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *p[4];
	double eps = ox_attr_f(n, "epsilon", 1e-5f), *a, *b;
	int64_t c;
	npurt_status st;

	if (ox_attr_i(n, "training_mode", 0))
		return ox_op_batchnorm_training(im, n, x);
	if (n->n_output > 1)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "running statistics out, outside "
			       "training mode");
	if (ox_need_real(im, x))
		return npurt_last_status();
	if (x->ndim < 2)
		return ox_fail(im, NPURT_ERR_INVALID, "rank %u, at least 2", x->ndim);
	c = x->dims[1];
	for (int k = 0; k < 4; k++) {
		p[k] = ox_in(im, n, (size_t)k + 1);
		if (!p[k] || p[k]->ndim != 1 || p[k]->dims[0] != c)
			return ox_fail(im, NPURT_ERR_INVALID, "scale, bias, mean and variance "
				       "must be [%lld]", (long long)c);
	}
	for (int k = 0; k < 4; k++)
		if (!p[k]->is_const)
			return batchnorm_computed(im, n, x);
	a = malloc(2 * (size_t)c * sizeof(*a));
	if (!a)
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	b = a + c;
	for (int64_t k = 0; k < c; k++) {
		a[k] = ox_getf(p[0], k) / sqrt(ox_getf(p[3], k) + eps);
		b[k] = ox_getf(p[1], k) - ox_getf(p[2], k) * a[k];
	}
	st = scale_shift(im, n, x, a, b, c);
	free(a);
	return st;
}

npurt_status ox_op_instancenorm(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	/* Normalize each (n, c) over the rest: layernorm over a flattened view. */
	struct ox_val *s = ox_in(im, n, 1), *b = ox_in(im, n, 2), *y;
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_LAYERNORM,
				  .eps = ox_attr_f(n, "epsilon", 1e-5f) };
	int64_t dims[3], stride[3], ds[OX_MAX_DIMS], st_ = 1;
	char xn[96], yn[96];
	double *a, *sh;
	int64_t c;
	npurt_status st;

	if (x->ndim < 3 || ox_need_real(im, x))
		return x->ndim < 3 ? ox_fail(im, NPURT_ERR_INVALID, "rank %u", x->ndim) :
		       npurt_last_status();
	c = x->dims[1];
	if (!ox_count(x))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "an empty input");
	if (!s || !b || !s->is_const || !b->is_const || ox_count(s) != (uint64_t)c ||
	    ox_count(b) != (uint64_t)c)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "scale and bias must be constants");
	x = ox_dense(im, x);
	if (!x)
		return npurt_last_status();
	dims[0] = x->dims[0], dims[1] = c, dims[2] = (int64_t)(ox_count(x) / (uint64_t)(c * x->dims[0]));
	stride[2] = 1, stride[1] = dims[2], stride[0] = dims[1] * dims[2];
	x = ox_view(im, x, ox_tmp_name(im, xn, sizeof(xn), n->output[0]), 3, dims, x->off, stride);
	if (!x || ox_device(im, x, &node.in[0]))
		return npurt_last_status();
	y = ox_fresh(im, ox_tmp_name(im, yn, sizeof(yn), n->output[0]), x->type, 3, dims);
	if (!y || ox_add(im, &node, y->base))
		return npurt_last_status();
	a = malloc(2 * (size_t)c * sizeof(*a));
	if (!a)
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	sh = a + c;
	s = ox_in(im, n, 1), b = ox_in(im, n, 2);
	for (int64_t k = 0; k < c; k++) {
		a[k] = ox_getf(s, k);
		sh[k] = ox_getf(b, k);
	}
	/* back to x's dims, then per-channel scale and shift */
	x = ox_find(im, n->input[0]);
	for (uint32_t k = x->ndim; k-- > 0;) {
		ds[k] = st_;
		st_ *= x->dims[k];
	}
	y = ox_find(im, yn);
	y = ox_view(im, y, ox_tmp_name(im, yn, sizeof(yn), n->output[0]), x->ndim, x->dims, 0, ds);
	st = y ? scale_shift(im, n, y, a, sh, c) : npurt_last_status();
	free(a);
	return st;
}

/*
 * LayerNormalization's optional outputs: Mean and InvStdDev of each row
 * of x2 (x as [rows, normalized]), shaped as x with the normalized axes
 * at 1. var = E[x^2] - E[x]^2, as the device's layernorm computes it.
 */
static npurt_status layernorm_stats(struct ox_imp *im, const Onnx__NodeProto *n,
				    struct ox_val *x2, int axis, float eps)
{
	const char *x2n = x2->name;
	npurt_graph_node red = { .size = sizeof(red), .op = NPU_OP_REDUCE_MEAN, .axis = 1 };
	int64_t dims[2] = { x2->dims[0], 1 }, od[OX_MAX_DIMS], os[OX_MAX_DIMS], s = 1;
	char mn[96], qn[96], tn[96];
	struct ox_val *mean, *msq, *v, *x;
	int32_t type = x2->type;

	if (ox_device(im, x2, &red.in[0]))
		return npurt_last_status();
	mean = ox_fresh(im, ox_tmp_name(im, mn, sizeof(mn), n->output[0]), type, 2, dims);
	if (!mean || ox_add(im, &red, mean->base))
		return npurt_last_status();
	v = ox_binary(im, NPU_OP_MUL, ox_find(im, x2n), ox_find(im, x2n),
		   ox_tmp_name(im, tn, sizeof(tn), n->output[0]));
	if (!v || ox_device(im, v, &red.in[0]))
		return npurt_last_status();
	msq = ox_fresh(im, ox_tmp_name(im, qn, sizeof(qn), n->output[0]), type, 2, dims);
	if (!msq || ox_add(im, &red, msq->base))
		return npurt_last_status();
	v = ox_binary(im, NPU_OP_MUL, ox_find(im, mn), ox_find(im, mn),
		   ox_tmp_name(im, tn, sizeof(tn), n->output[0]));
	if (v)
		v = ox_binary(im, NPU_OP_SUB, ox_find(im, qn), v, ox_tmp_name(im, tn, sizeof(tn), n->output[0]));
	if (v) {
		const char *vn = v->name;
		struct ox_val *e = ox_scalar_of(im, type, eps, 0, n->output[0]);

		v = e ? ox_binary(im, NPU_OP_ADD, ox_find(im, vn), e, ox_tmp_name(im, tn, sizeof(tn),
									    n->output[0])) : NULL;
	}
	if (v)
		v = ox_unary(im, NPU_OP_SQRT, v, 0, 0, ox_tmp_name(im, tn, sizeof(tn), n->output[0]));
	if (v)
		v = ox_unary(im, NPU_OP_RECIPROCAL, v, 0, 0, ox_tmp_name(im, qn, sizeof(qn), n->output[0]));
	if (!v)
		return npurt_last_status();
	/* x's dims with the normalized ones at 1; row-major over [rows]. */
	x = ox_find(im, n->input[0]);
	for (uint32_t k = 0; k < x->ndim; k++)
		od[k] = (int)k < axis ? x->dims[k] : 1;
	for (uint32_t k = x->ndim; k-- > 0;) {
		os[k] = s;
		s *= od[k];
	}
	for (size_t k = 1; k < 3 && k < n->n_output; k++) {
		if (!n->output[k][0])
			continue;
		if (!ox_view(im, ox_find(im, k == 1 ? mn : qn), n->output[k], x->ndim, od, 0, os))
			return npurt_last_status();
		x = ox_find(im, n->input[0]);
	}
	return NPURT_OK;
}

/* LayerNormalization (opset 17): over the axes from `axis` on. */
npurt_status ox_op_layernorm(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int a = ox_axis(ox_attr_i(n, "axis", -1), x->ndim);
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_LAYERNORM,
				  .eps = ox_attr_f(n, "epsilon", 1e-5f) };
	int64_t dims[2] = { 1, 1 }, stride[2], ds[OX_MAX_DIMS], s = 1;
	char xn[96], yn[96];
	struct ox_val *y;

	if (a < 0 || ox_need_real(im, x))
		return a < 0 ? ox_fail(im, NPURT_ERR_INVALID, "axis") : npurt_last_status();
	for (uint32_t k = 0; k < x->ndim; k++)
		dims[k >= (uint32_t)a] *= x->dims[k];
	x = ox_dense(im, x);
	if (!x)
		return npurt_last_status();
	stride[0] = dims[1], stride[1] = 1;
	x = ox_view(im, x, ox_tmp_name(im, xn, sizeof(xn), n->output[0]), 2, dims, x->off, stride);
	if (!x || ox_device(im, x, &node.in[0]))
		return npurt_last_status();
	y = ox_fresh(im, ox_tmp_name(im, yn, sizeof(yn), n->output[0]), x->type, 2, dims);
	if (!y || ox_add(im, &node, y->base))
		return npurt_last_status();
	if (n->n_output > 1) {
		npurt_status st = layernorm_stats(im, n, ox_find(im, xn), a, node.eps);

		if (st)
			return st;
		y = ox_find(im, yn);
	}
	x = ox_find(im, n->input[0]);
	for (uint32_t k = x->ndim; k-- > 0;) {
		ds[k] = s;
		s *= x->dims[k];
	}
	y = ox_view(im, y, ox_tmp_name(im, yn, sizeof(yn), n->output[0]), x->ndim, x->dims, 0, ds);
	if (!y)
		return npurt_last_status();
	if (ox_in(im, n, 1)) {
		bool bias = ox_in(im, n, 2) != NULL;

		y = ox_binary(im, NPU_OP_MUL, y, ox_in(im, n, 1),
			   bias ? ox_tmp_name(im, yn, sizeof(yn), n->output[0]) : n->output[0]);
		if (y && bias)
			y = ox_binary(im, NPU_OP_ADD, y, ox_in(im, n, 2), n->output[0]);
		return ox_done(y);
	}
	return ox_done(ox_view(im, y, n->output[0], y->ndim, y->dims, y->off, y->stride));
}

npurt_status ox_op_prelu(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	/* relu(x) + slope * min(x, 0) */
	char pn[96], mn[96];
	const char *sn = ox_in(im, n, 1) ? n->input[1] : NULL;
	struct ox_val *pos, *neg, *zero;

	if (!sn)
		return ox_fail(im, NPURT_ERR_INVALID, "no slope");
	pos = ox_unary(im, NPU_OP_RELU, x, 0, 0, ox_tmp_name(im, pn, sizeof(pn), n->output[0]));
	zero = pos ? ox_scalar(im, 0.0, n->output[0]) : NULL;
	if (!zero)
		return npurt_last_status();
	neg = ox_binary(im, NPU_OP_MIN, ox_find(im, n->input[0]), zero,
		     ox_tmp_name(im, mn, sizeof(mn), n->output[0]));
	if (neg)
		neg = ox_binary(im, NPU_OP_MUL, neg, ox_find(im, sn), ox_tmp_name(im, mn, sizeof(mn),
									      n->output[0]));
	if (!neg)
		return npurt_last_status();
	return ox_done(ox_binary(im, NPU_OP_ADD, ox_find(im, pn), neg, n->output[0]));
}

/* x of rank 3 seen as [N, C, H, W] with H = 1; any other as it is. */
static struct ox_val *as_4d(struct ox_imp *im, struct ox_val *x, const char *of)
{
	int64_t dims[4], stride[4];
	char name[96];

	if (x->ndim != 3)
		return x;
	dims[0] = x->dims[0], dims[1] = x->dims[1], dims[2] = 1, dims[3] = x->dims[2];
	stride[0] = x->stride[0], stride[1] = x->stride[1], stride[2] = 0;
	stride[3] = x->stride[2];
	return ox_view(im, x, ox_tmp_name(im, name, sizeof(name), of), 4, dims, x->off, stride);
}

/* Spatial dimensions of a window at most: the device's windows are 1-D to 3-D. */
#define SP_MAX	3

/*
 * A window node's strides, dilations, output_padding (when asked for) and
 * pads (begins in pads[0..], ends in pads[SP_MAX..]) over `sp` spatial
 * dimensions; what a node leaves out keeps its default.
 */
static npurt_status window_attrs(struct ox_imp *im, const Onnx__NodeProto *n, uint32_t sp,
				 int64_t *st, int64_t *dl, int64_t *opad, int64_t *pads)
{
	static const char *const names[3] = { "strides", "dilations", "output_padding" };
	int64_t *to[3] = { st, dl, opad }, v[2 * SP_MAX];
	npurt_status stt;
	int cnt;

	for (int a = 0; a < 3; a++)
		if (to[a] && (cnt = ox_ints(im, n, SIZE_MAX, names[a], v, 2 * SP_MAX, &stt)) >= 0)
			for (int k = 0; k < cnt && k < (int)sp; k++)
				to[a][k] = v[k];
	if ((cnt = ox_ints(im, n, SIZE_MAX, "pads", v, 2 * SP_MAX, &stt)) >= 0) {
		if (cnt != 2 * (int)sp)
			return ox_fail(im, NPURT_ERR_INVALID, "%d pads for %u-D", cnt, sp);
		for (uint32_t k = 0; k < sp; k++) {
			pads[k] = v[k];
			pads[k + SP_MAX] = v[k + sp];
		}
	}
	return NPURT_OK;
}

/*
 * ONNX's spatial dimension k of `sp` into the device's window: a 3-D
 * window's depth is win_d; rows and columns are win's [0] and [1], and a
 * 1-D window is a 2-D one over a single row.
 */
static void set_window_dim(npurt_graph_node *node, uint32_t sp, uint32_t k, uint32_t kernel,
			   int64_t st, int64_t dl, int64_t p0, int64_t p1)
{
	npurt_window *w = &node->win;
	uint32_t j = sp == 3 ? k - 1 : k + 2 - sp;

	if (sp == 3 && k == 0) {
		node->win_d = (npurt_window_depth){ .kernel = kernel, .stride = (uint32_t)st,
						    .dilation = (uint32_t)dl,
						    .pad = { (uint32_t)p0, (uint32_t)p1 } };
		return;
	}
	w->kernel[j] = kernel;
	w->stride[j] = (uint32_t)st;
	w->dilation[j] = (uint32_t)dl;
	w->pad[j] = (uint32_t)p0;
	w->pad[j + 2] = (uint32_t)p1;
}

/*
 * Conv, MaxPool, AveragePool in 1-D, 2-D or 3-D: one window op, its bias
 * the epilogue. Pads come from the attribute or auto_pad; a pool's
 * ceil_mode adds the last partial window where it starts inside the
 * padded image. A Conv of bytes (onnx_quant.c) writes int32.
 */
npurt_status ox_op_window(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	bool conv = !strcmp(n->op_type, "Conv"), max = !strcmp(n->op_type, "MaxPool");
	npurt_graph_node node = { .size = sizeof(node), .op = conv ? NPU_OP_CONV2D :
				  max ? NPU_OP_MAXPOOL2D : NPU_OP_AVGPOOL2D };
	const Onnx__AttributeProto *ap = ox_attr(n, "auto_pad");
	int64_t ks[SP_MAX], st[SP_MAX] = { 1, 1, 1 }, dl[SP_MAX] = { 1, 1, 1 };
	int64_t pads[2 * SP_MAX] = { 0 }, v[2 * SP_MAX], dims[2 + SP_MAX];
	struct ox_val *w = conv ? ox_in(im, n, 1) : NULL, *y;
	const char *xn = x->name, *wn = w ? w->name : NULL;
	bool ceil_mode = !conv && ox_attr_i(n, "ceil_mode", 0), bytes;
	uint32_t sp = x->ndim - 2;	/* spatial dimensions */
	char yn[96];
	npurt_status stt;
	int cnt;

	if (x->ndim < 3 || x->ndim > 2 + SP_MAX || (conv && (!w || w->ndim != x->ndim)))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%u-D windows; the device has 1-D to 3-D",
			       x->ndim >= 2 ? x->ndim - 2 : 0);
	bytes = conv && (x->type == OX_INT8 || x->type == OX_UINT8) &&
		(w->type == OX_INT8 || w->type == OX_UINT8);
	if (!bytes && !(max && (x->type == OX_INT8 || x->type == OX_UINT8)) &&
	    ox_need_real(im, x))
		return npurt_last_status();
	if (w && !bytes && ox_need_real(im, w))
		return npurt_last_status();
	for (uint32_t k = 0; k < sp; k++)
		ks[k] = conv ? w->dims[2 + k] : 0;
	cnt = ox_ints(im, n, SIZE_MAX, "kernel_shape", v, 2 * SP_MAX, &stt);
	if (cnt >= 0 && cnt != (int)sp)
		return ox_fail(im, NPURT_ERR_INVALID, "kernel_shape of %d for %u-D", cnt, sp);
	for (int k = 0; k < cnt; k++) {
		if (conv && v[k] != ks[k])
			return ox_fail(im, NPURT_ERR_INVALID, "kernel_shape is not the weights'");
		ks[k] = v[k];
	}
	if (!conv && cnt < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "no kernel_shape");
	stt = window_attrs(im, n, sp, st, dl, NULL, pads);
	if (stt)
		return stt;
	for (uint32_t k = 0; k < sp; k++) {
		int64_t *p0 = &pads[k], *p1 = &pads[k + SP_MAX];

		if (ks[k] < 1 || st[k] < 1 || dl[k] < 1 || *p0 < 0 || *p1 < 0 || ks[k] > 0xffff ||
		    st[k] > 0xffff || dl[k] > 0xffff || *p0 > 0xffff || *p1 > 0xffff)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "window attributes out of range");
		if (ap && ap->has_s && ap->s.len >= 4 && !memcmp(ap->s.data, "SAME", 4)) {
			int64_t in = x->dims[2 + k], out = (in + st[k] - 1) / st[k];
			int64_t total = (out - 1) * st[k] + dl[k] * (ks[k] - 1) + 1 - in;

			total = total > 0 ? total : 0;
			*p0 = ap->s.len == 10 && !memcmp(ap->s.data, "SAME_LOWER", 10) ?
			      total - total / 2 : total / 2;
			*p1 = total - *p0;
		} else if (ap && ap->has_s && ap->s.len == 5 && !memcmp(ap->s.data, "VALID", 5)) {
			*p0 = *p1 = 0;
		}
		set_window_dim(&node, sp, k, conv ? 0 : (uint32_t)ks[k], st[k], dl[k], *p0, *p1);
	}
	if (sp == 1)		/* the one row */
		set_window_dim(&node, 2, 0, conv ? 0 : 1, 1, 1, 0, 0);
	node.win.group = conv ? (uint32_t)ox_attr_i(n, "group", 1) : 0;
	node.win.flags = !conv && !max && ox_attr_i(n, "count_include_pad", 0) ?
			 NPURT_WINDOW_COUNT_PAD : 0;
	x = as_4d(im, ox_find(im, xn), n->output[0]);
	if (!x || ox_device(im, x, &node.in[0]))
		return npurt_last_status();
	if (conv) {
		w = as_4d(im, ox_find(im, wn), n->output[0]);
		if (!w || ox_device(im, w, &node.in[1]))
			return npurt_last_status();
		x = ox_find(im, xn);
		w = ox_find(im, wn);
		if (node.win.group < 1 || x->dims[1] % node.win.group ||
		    w->dims[0] % node.win.group || w->dims[1] * (int64_t)node.win.group != x->dims[1])
			return ox_fail(im, NPURT_ERR_INVALID, "group %u does not split the channels",
				       node.win.group);
	}
	x = ox_find(im, xn);
	dims[0] = x->dims[0];
	dims[1] = conv ? ox_find(im, wn)->dims[0] : x->dims[1];
	for (uint32_t k = 0; k < sp; k++) {
		uint64_t in = (uint64_t)x->dims[2 + k], p0 = (uint64_t)pads[k];
		uint64_t o = npu_window_out(in, p0, (uint64_t)pads[k + SP_MAX], (uint64_t)ks[k],
					    (uint64_t)st[k], (uint64_t)dl[k], ceil_mode);

		/* A last window starting in the end padding is dropped. */
		if (ceil_mode && o > 1 && (o - 1) * (uint64_t)st[k] >= in + p0)
			o--;
		if (!o)
			return ox_fail(im, NPURT_ERR_INVALID, "the window does not fit the input");
		dims[2 + k] = (int64_t)o;
	}
	/* The bias is the convolution's epilogue: added on the way out. */
	if (conv && ox_in(im, n, 2)) {
		struct ox_val *b = ox_in(im, n, 2);

		if (b->ndim != 1 || b->dims[0] != dims[1])
			return ox_fail(im, NPURT_ERR_INVALID, "a bias of other than [O]");
		if (ox_need_real(im, b) || ox_device(im, b, &node.epi.bias))
			return npurt_last_status();
		node.epi.flags = NPURT_EPILOGUE_BIAS;
	}
	if (sp == 1) {		/* computed as [N, O, 1, Wo], seen as [N, O, Wo] */
		int64_t d4[4] = { dims[0], dims[1], 1, dims[2] }, s3[3];

		y = ox_fresh(im, ox_tmp_name(im, yn, sizeof(yn), n->output[0]),
			     bytes ? OX_INT32 : ox_find(im, xn)->type, 4, d4);
		if (!y || ox_add(im, &node, y->base))
			return npurt_last_status();
		s3[0] = y->stride[0];
		s3[1] = y->stride[1];
		s3[2] = y->stride[3];
		return ox_done(ox_view(im, y, n->output[0], 3, dims, y->off, s3));
	}
	y = ox_fresh(im, ox_tmp_name(im, yn, sizeof(yn), n->output[0]),
		     bytes ? OX_INT32 : ox_find(im, xn)->type, 2 + sp, dims);
	if (!y || ox_add(im, &node, y->base))
		return npurt_last_status();
	stt = ox_done(ox_view(im, y, n->output[0], y->ndim, y->dims, y->off, y->stride));
	if (!stt && max && n->n_output > 1 && n->output[1][0])
		stt = ox_maxpool_indices(im, n, xn, sp, ks, st, dl, pads, dims + 2,
					 ox_attr_i(n, "storage_order", 0) != 0);
	return stt;
}

/* Pads of a transposed window that ends at out_shape, or SAME's (auto_pad). */
static void transposed_same(int64_t in, int64_t st, int64_t op, int64_t span, int64_t out,
			    bool lower, int64_t *lo, int64_t *hi)
{
	int64_t total = st * (in - 1) + op + span - out;

	*lo = lower ? total - total / 2 : total / 2;
	*hi = total - *lo;
}

/*
 * ConvTranspose as a convolution: x spread out with stride - 1 zeros
 * between its elements and framed by what the transposed window reaches
 * past it (a fill of zeros and one strided copy), then Conv at stride 1
 * with the weights flipped and their channel axes swapped, per group (a
 * constant made here). Pads that crop past the kernel's reach are refused.
 */
npurt_status ox_op_conv_transpose(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *w = ox_in(im, n, 1), *xz, *wt, dst;
	const Onnx__AttributeProto *ap = ox_attr(n, "auto_pad");
	bool same = ap && ap->has_s && ap->s.len >= 4 && !memcmp(ap->s.data, "SAME", 4);
	bool lower = same && ap->s.len == 10 && !memcmp(ap->s.data, "SAME_LOWER", 10);
	int64_t ks[SP_MAX], st[SP_MAX] = { 1, 1, 1 }, dl[SP_MAX] = { 1, 1, 1 };
	int64_t pads[2 * SP_MAX] = { 0 }, opad[SP_MAX] = { 0 }, osh[2 + SP_MAX], v[2 * SP_MAX];
	int64_t zd[2 + SP_MAX], wd[2 + SP_MAX], g = ox_attr_i(n, "group", 1), lo[SP_MAX];
	int64_t hi[SP_MAX], cg, mg;
	Onnx__AttributeProto dil = ONNX__ATTRIBUTE_PROTO__INIT, grp = ONNX__ATTRIBUTE_PROTO__INIT;
	Onnx__AttributeProto *attrs[2] = { &dil, &grp };
	npurt_graph_node copy = { .size = sizeof(copy), .op = NPU_OP_TRANSPOSE,
				  .perm = OX_PERM_IDENTITY };
	Onnx__NodeProto conv = ONNX__NODE_PROTO__INIT;
	char zn[96], wn[96], *ins[3];
	const char *xn = x->name;
	uint32_t sp = x->ndim - 2, t;
	int osh_n, cnt;
	npurt_status stt;

	if (x->ndim < 3 || x->ndim > 2 + SP_MAX || !w || w->ndim != x->ndim)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%u-D windows; the device has 1-D to 3-D",
			       x->ndim >= 2 ? x->ndim - 2 : 0);
	if (!w->is_const || ox_need_real(im, x) || !ox_is_real(w->type))
		return npurt_last_status() ? npurt_last_status() :
		       ox_fail(im, NPURT_ERR_UNSUPPORTED, "weights that are not float constants");
	if (g < 1 || x->dims[1] != w->dims[0] || w->dims[0] % g)
		return ox_fail(im, NPURT_ERR_INVALID, "weights [C, M / group, k...] for C %lld",
			       (long long)x->dims[1]);
	for (uint32_t k = 0; k < sp; k++)
		ks[k] = w->dims[2 + k];
	if ((cnt = ox_ints(im, n, SIZE_MAX, "kernel_shape", v, 2 * SP_MAX, &stt)) >= 0)
		for (int k = 0; k < cnt; k++)
			if (k >= (int)sp || v[k] != ks[k])
				return ox_fail(im, NPURT_ERR_INVALID, "kernel_shape is not the weights'");
	stt = window_attrs(im, n, sp, st, dl, opad, pads);
	if (stt)
		return stt;
	/* output_shape: the spatial dimensions, or all of them */
	osh_n = ox_ints(im, n, SIZE_MAX, "output_shape", osh, 2 + SP_MAX, &stt);
	if (stt)
		return stt;
	for (uint32_t k = 0; k < sp; k++) {
		int64_t in = x->dims[2 + k], span;

		if (ks[k] < 1 || ks[k] > 0xffff || st[k] < 1 || st[k] > 0xffff || dl[k] < 1 ||
		    dl[k] > 0xffff || opad[k] < 0 || opad[k] >= (st[k] > dl[k] ? st[k] : dl[k]))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "window attributes out of range");
		span = dl[k] * (ks[k] - 1) + 1;
		if (osh_n >= (int)sp)
			transposed_same(in, st[k], opad[k], span, osh[osh_n - sp + k], lower,
					&pads[k], &pads[k + SP_MAX]);
		else if (same)
			transposed_same(in, st[k], opad[k], span, in * st[k], lower, &pads[k],
					&pads[k + SP_MAX]);
		lo[k] = span - 1 - pads[k];
		hi[k] = span - 1 - pads[k + SP_MAX] + opad[k];
		if (lo[k] < 0 || hi[k] < 0 || lo[k] > 0xffff || hi[k] > 0xffff)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "pads that crop past the kernel");
		zd[2 + k] = (in - 1) * st[k] + 1 + lo[k] + hi[k];
	}
	/* The spread-out input, zeros first. */
	zd[0] = x->dims[0];
	zd[1] = x->dims[1];
	xz = ox_fresh(im, ox_tmp_name(im, zn, sizeof(zn), n->output[0]), x->type, x->ndim, zd);
	if (!xz)
		return npurt_last_status();
	stt = npurt_graph_fill(im->g, 0, xz->base, 0);
	if (stt)
		return ox_fail(im, stt, "%s", npurt_last_error());
	im->info.device_ops++;
	x = ox_find(im, xn);
	xz = ox_find(im, zn);
	dst = *xz;
	dst.tensor = OX_NONE;
	for (uint32_t k = 0; k < x->ndim; k++) {
		dst.dims[k] = x->dims[k];
		if (k >= 2) {
			dst.stride[k] = xz->stride[k] * st[k - 2];
			dst.off += (uint64_t)(lo[k - 2] * xz->stride[k]);
		}
	}
	if (ox_device(im, x, &copy.in[0]) || ox_device(im, &dst, &t) || ox_add(im, &copy, t))
		return npurt_last_status();
	/* The weights flipped, [C, M/g, k...] to [M, C/g, k...]. */
	w = ox_find(im, n->input[1]);
	cg = w->dims[0] / g;
	mg = w->dims[1];
	wd[0] = mg * g;
	wd[1] = cg;
	for (uint32_t k = 0; k < sp; k++)
		wd[2 + k] = ks[k];
	wt = ox_new_const(im, ox_tmp_name(im, wn, sizeof(wn), n->output[0]), w->type, w->ndim, wd);
	if (!wt)
		return npurt_last_status();
	w = ox_find(im, n->input[1]);
	{
		int64_t taps = 1;

		for (uint32_t k = 0; k < sp; k++)
			taps *= ks[k];
		/* every spatial index flipped is the whole tap index reversed */
		for (int64_t gi = 0; gi < g; gi++)
			for (int64_t m = 0; m < mg; m++)
				for (int64_t c = 0; c < cg; c++)
					for (int64_t t = 0; t < taps; t++) {
						uint64_t to = (uint64_t)(((gi * mg + m) * cg + c) *
									 taps + t);
						uint64_t from = (uint64_t)(((gi * cg + c) * mg + m) *
									   taps + (taps - 1 - t));

						ox_set(wt, to, ox_getf(w, from));
					}
	}
	/* Conv of the two at stride 1, the window's dilations, the groups. */
	dil.name = (char *)"dilations";
	dil.n_ints = sp;
	dil.ints = dl;
	dil.has_type = true;
	dil.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	grp.name = (char *)"group";
	grp.has_i = true;
	grp.i = g;
	grp.has_type = true;
	grp.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	ins[0] = zn;
	ins[1] = wn;
	ins[2] = n->n_input > 2 ? n->input[2] : NULL;
	conv.op_type = (char *)"Conv";
	conv.name = n->name;
	conv.input = ins;
	conv.n_input = n->n_input > 2 && n->input[2][0] ? 3 : 2;
	conv.output = n->output;
	conv.n_output = 1;
	conv.attribute = attrs;
	conv.n_attribute = 2;
	return ox_op_window(im, &conv, ox_find(im, zn));
}
