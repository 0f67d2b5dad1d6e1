// SPDX-License-Identifier: MIT
/*
 * Quantized operators, written as the float operators they mean
 * (ox_emit()): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv. Products of
 * bytes run on the device's integer GEMM and convolution, exactly, the
 * zero points taken off in int32; a convolution the integer one does not
 * take (computed weights, auto_pad SAME, 1-D or 3-D, a weight zero point
 * on a grouped one) is computed in float32 on integers, exact while no
 * sum passes 2^24, and refused where one could. Rounding is
 * ONNX's, half to even (Round); saturation is a Clip to the output type's
 * range before the Cast.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

/* Largest sum of products of 8-bit integers float32 holds exactly. */
#define QUANT_EXACT	(1 << 24)

static npurt_status emit_cast(struct ox_imp *im, const char *x, int64_t to, const char *out)
{
	Onnx__AttributeProto ta;
	ox_name in;

	snprintf(in, sizeof(in), "%s", x);
	ox_attr_ints(&ta, "to", &to, 1, false);
	return ox_emit(im, "Cast", (const char *const[]){ in }, 1, out, &ta);
}

/* Emit op(a[, b]) into a new value named in out. */
static npurt_status emit_new(struct ox_imp *im, const char *op, const char *a, const char *b,
			     ox_name out)
{
	ox_name an, bn;

	snprintf(an, sizeof(an), "%s", a);
	snprintf(bn, sizeof(bn), "%s", b ? b : "");
	return ox_emit(im, op, (const char *const[]){ an, bn }, b ? 2 : 1,
		       ox_tmp_name(im, out, sizeof(ox_name), "quant"), NULL);
}

/*
 * A scale or zero point, as float, shaped to broadcast against a value of
 * rank r along `axis` when it has one value per position of that axis;
 * its name into out. name NULL or "": 0 (no zero point).
 */
static npurt_status param_as(struct ox_imp *im, const char *name, uint32_t r, int axis,
			     int32_t type, ox_name out)
{
	struct ox_val *v = name && name[0] ? ox_find(im, name) : NULL;
	int64_t dims[OX_MAX_DIMS];
	ox_name f, sn;
	npurt_status st;

	if (!v)
		return ox_scalar_named(im, type, 0, out) ? NPURT_OK : npurt_last_status();
	st = emit_cast(im, name, type, ox_tmp_name(im, f, sizeof(f), "quant"));
	if (st || ox_count(ox_find(im, name)) == 1 || r < 2) {
		snprintf(out, sizeof(ox_name), "%s", f);
		return st;
	}
	for (uint32_t k = 0; k < r; k++)
		dims[k] = (int)k == axis ? (int64_t)ox_count(ox_find(im, name)) : 1;
	st = ox_int_const(im, dims, r, false, sn);
	return st ? st : ox_emit(im, "Reshape", (const char *const[]){ f, sn }, 2,
				 ox_tmp_name(im, out, sizeof(ox_name), "quant"), NULL);
}

static npurt_status param(struct ox_imp *im, const char *name, uint32_t r, int axis, ox_name out)
{
	return param_as(im, name, r, axis, OX_FLOAT, out);
}

/* Whether zero point `name` is there and not a constant of zeros. */
static bool zp_counts(struct ox_imp *im, const char *name)
{
	struct ox_val *v = name && name[0] ? ox_find(im, name) : NULL;

	if (!v || !v->is_const || !v->i)
		return v != NULL;
	for (uint64_t k = 0; k < ox_count(v); k++)
		if (v->i[k])
			return true;
	return false;
}

/* The range of an integer type, for saturation; false for another type. */
static bool int_range(int32_t type, double *lo, double *hi)
{
	switch (type) {
	case OX_UINT8:
		*lo = 0;
		*hi = 255;
		return true;
	case OX_INT8:
		*lo = -128;
		*hi = 127;
		return true;
	case OX_INT32:
		*lo = -2147483648.0;
		*hi = 2147483647.0;
		return true;
	default:
		return false;
	}
}

/* round(x) + zp (float names), saturated to `type` and cast to it: into out. */
static npurt_status requantize(struct ox_imp *im, const char *x, const char *zp, int32_t type,
			       const char *out)
{
	ox_name r, a, c, lo, hi;
	double l, h;
	npurt_status st;

	if (!int_range(type, &l, &h))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "quantized to %s", ox_type_name(type));
	if (!ox_scalar_named(im, OX_FLOAT, l, lo) || !ox_scalar_named(im, OX_FLOAT, h, hi))
		return npurt_last_status();
	st = emit_new(im, "Round", x, NULL, r);
	if (!st)
		st = emit_new(im, "Add", r, zp, a);
	if (!st)
		st = ox_emit(im, "Clip", (const char *const[]){ a, lo, hi }, 3,
			     ox_tmp_name(im, c, sizeof(c), "quant"), NULL);
	return st ? st : emit_cast(im, c, type, out);
}

/* The quantized type a zero point names (uint8 when there is none). */
static int32_t zp_type(struct ox_imp *im, const Onnx__NodeProto *n, size_t k)
{
	struct ox_val *z = n->n_input > k && n->input[k][0] ? ox_find(im, n->input[k]) : NULL;

	return z ? z->type : OX_UINT8;
}

static const char *input(const Onnx__NodeProto *n, size_t k)
{
	return n->n_input > k ? n->input[k] : NULL;
}

/* QuantizeLinear(x, scale[, zero_point]) and DequantizeLinear(x, scale[, zero_point]). */
static npurt_status op_linear(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      bool quantize)
{
	struct ox_val *sc = input(n, 1) ? ox_find(im, input(n, 1)) : NULL;
	uint32_t r = x->ndim;
	/* The axis matters only to a scale of one value per position along it. */
	int axis = sc && ox_count(sc) > 1 ? ox_axis(ox_attr_i(n, "axis", 1), r) : 0;
	int32_t type = zp_type(im, n, 2);
	ox_name xn, s, z, q, d;
	npurt_status st;

	if (axis < 0 || !sc)
		return ox_fail(im, NPURT_ERR_INVALID, "axis %lld, or no scale",
			       (long long)ox_attr_i(n, "axis", 1));
	snprintf(xn, sizeof(xn), "%s", x->name);
	st = param(im, input(n, 1), r, axis, s);
	if (!st)
		st = param(im, input(n, 2), r, axis, z);
	if (st)
		return st;
	if (quantize) {
		st = emit_new(im, "Div", xn, s, q);
		return st ? st : requantize(im, q, z, type, n->output[0]);
	}
	st = emit_cast(im, xn, OX_FLOAT, ox_tmp_name(im, q, sizeof(q), "quant"));
	if (!st)
		st = emit_new(im, "Sub", q, z, d);
	return st ? st : ox_emit(im, "Mul", (const char *const[]){ d, s }, 2, n->output[0], NULL);
}

/*
 * DynamicQuantizeLinear(x): uint8 with the scale and zero point that map
 * the range of x (widened to hold 0) onto 0..255.
 */
static npurt_status op_dynamic(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	Onnx__AttributeProto ka;
	int64_t zero = 0;
	ox_name xn, mx, mn, z0, k255, mx0, mn0, span, neg, q, zf, y;
	npurt_status st;

	if (n->n_output < 3)
		return ox_fail(im, NPURT_ERR_INVALID, "%zu outputs, 3 wanted", n->n_output);
	snprintf(xn, sizeof(xn), "%s", x->name);
	if (!ox_scalar_named(im, OX_FLOAT, 0, z0) || !ox_scalar_named(im, OX_FLOAT, 255, k255))
		return npurt_last_status();
	ox_attr_ints(&ka, "keepdims", &zero, 1, false);
	st = ox_emit(im, "ReduceMax", (const char *const[]){ xn }, 1,
		     ox_tmp_name(im, mx, sizeof(mx), "quant"), &ka);
	if (!st)
		st = ox_emit(im, "ReduceMin", (const char *const[]){ xn }, 1,
			     ox_tmp_name(im, mn, sizeof(mn), "quant"), &ka);
	if (!st)
		st = emit_new(im, "Max", mx, z0, mx0);
	if (!st)
		st = emit_new(im, "Min", mn, z0, mn0);
	if (!st)
		st = emit_new(im, "Sub", mx0, mn0, span);
	if (!st)
		st = ox_emit(im, "Div", (const char *const[]){ span, k255 }, 2, n->output[1], NULL);
	if (!st)
		st = emit_new(im, "Neg", mn0, NULL, neg);
	if (!st)
		st = emit_new(im, "Div", neg, n->output[1], q);
	/* The zero point: round(-min / scale) saturated, as float and as uint8. */
	if (!st)
		st = requantize(im, q, z0, OX_UINT8, n->output[2]);
	if (!st)
		st = emit_cast(im, n->output[2], OX_FLOAT, ox_tmp_name(im, zf, sizeof(zf), "quant"));
	if (!st)
		st = emit_new(im, "Div", xn, n->output[1], y);
	return st ? st : requantize(im, y, zf, OX_UINT8, n->output[0]);
}

/*
 * (a - az) (b - bz) for a MatMul on bytes: the device's integer GEMM
 * (firmware 0.9) multiplies a and b as they are into int32, and the zero
 * points come off in int32 as well, exactly (modulo 2^32, as ONNX's
 * int32 wraps):
 *
 *   (a - az)(b - bz) = a b - az (1 b) - (a 1) bz + k az bz
 *
 * with 1 b the columns' sums and a 1 the rows' (products with a vector
 * of k ones, on the same GEMM). az is per tensor or per row of a, bz per
 * tensor or per column of b. A constant zero point of zeros costs nothing.
 */
/* y (a name, replaced) -= reshape(l r, shape) zp: a zero point's share. */
static npurt_status take_off(struct ox_imp *im, ox_name y, const char *l, const char *r,
			     const int64_t *shape, uint32_t nd, const char *zp)
{
	ox_name s, sh, t, u, v;
	npurt_status st = emit_new(im, "MatMul", l, r, s);

	if (!st)
		st = ox_int_const(im, shape, nd, false, sh);
	if (!st)
		st = ox_emit(im, "Reshape", (const char *const[]){ s, sh }, 2,
			     ox_tmp_name(im, t, sizeof(t), "quant"), NULL);
	if (!st)
		st = emit_new(im, "Mul", t, zp, u);
	if (!st)
		st = emit_new(im, "Sub", y, u, v);
	if (!st)
		snprintf(y, sizeof(ox_name), "%s", v);
	return st;
}

static npurt_status int_matmul(struct ox_imp *im, const char *a, const char *az, const char *b,
			       const char *bz, ox_name out)
{
	struct ox_val *av = ox_find(im, a);
	int64_t k = av->dims[av->ndim - 1], one = 1, shape[OX_MAX_DIMS];
	bool za = zp_counts(im, az), zb = zp_counts(im, bz);
	ox_name y, ones1, ones, sum, sh, t, zi, zj, r, kc;
	uint32_t rank;
	npurt_status st;

	st = emit_new(im, "MatMul", a, b, y);
	if (st || (!za && !zb)) {
		snprintf(out, sizeof(ox_name), "%s", y);
		return st;
	}
	rank = ox_find(im, y)->ndim;
	/* k ones, as u8: a column for a's rows' sums, a row for b's columns' */
	st = ox_int_const(im, &one, 1, true, ones1);
	if (!st)
		st = ox_int_const(im, &k, 1, false, sh);
	if (!st)
		st = ox_emit(im, "Expand", (const char *const[]){ ones1, sh }, 2,
			     ox_tmp_name(im, t, sizeof(t), "quant"), NULL);
	if (!st)
		st = emit_cast(im, t, OX_UINT8, ox_tmp_name(im, ones, sizeof(ones), "quant"));
	if (!st && za) {
		/* y -= az (1 b): 1 b is [..., n], a row once reshaped */
		struct ox_val *bv = ox_find(im, b);

		memcpy(shape, bv->dims, sizeof(shape));
		shape[bv->ndim - 2] = 1;
		st = param_as(im, az, rank, (int)rank - 2, OX_INT32, zi);
		if (!st)
			st = take_off(im, y, ones, b, shape, bv->ndim, zi);
	}
	if (!st && zb) {
		/* y -= (a 1) bz: a 1 is [..., m], a column once reshaped */
		memcpy(shape, av->dims, sizeof(shape));
		shape[av->ndim - 1] = 1;
		st = param_as(im, bz, rank, (int)rank - 1, OX_INT32, zj);
		if (!st)
			st = take_off(im, y, a, ones, shape, av->ndim, zj);
	}
	if (!st && za && zb) {
		/* y += k az bz */
		if (!ox_scalar_named(im, OX_INT32, (double)k, kc))
			return npurt_last_status();
		st = emit_new(im, "Mul", zi, zj, t);
		if (!st)
			st = emit_new(im, "Mul", t, kc, sum);
		if (!st)
			st = emit_new(im, "Add", y, sum, r);
		if (!st)
			snprintf(y, sizeof(y), "%s", r);
	}
	snprintf(out, sizeof(ox_name), "%s", y);
	return st;
}

/* int64 values v (n of them) as an int32 constant of these dims: its name into out. */
static npurt_status int32_const(struct ox_imp *im, const int64_t *v, int64_t n,
				const int64_t *dims, uint32_t nd, ox_name out)
{
	ox_name c, t, sh;
	npurt_status st = ox_int_const(im, v, n, false, c);

	if (!st)
		st = emit_cast(im, c, OX_INT32, ox_tmp_name(im, t, sizeof(t), "quant"));
	if (!st)
		st = ox_int_const(im, dims, nd, false, sh);
	return st ? st : ox_emit(im, "Reshape", (const char *const[]){ t, sh }, 2,
				 ox_tmp_name(im, out, sizeof(ox_name), "quant"), NULL);
}

/* A Conv of the node's attributes on bytes x and w (padding 0): into out. */
static npurt_status conv_bytes(struct ox_imp *im, const Onnx__NodeProto *n, const char *x,
			       const char *w, ox_name out)
{
	return ox_emit_attrs(im, "Conv", (const char *const[]){ x, w }, 2,
			     ox_tmp_name(im, out, sizeof(ox_name), "quant"), n->attribute,
			     n->n_attribute);
}

/* A weight zero point's values, one per channel (o of them), or false if it is not a constant. */
static bool zw_values(struct ox_imp *im, const char *name, int64_t o, int64_t *v)
{
	struct ox_val *z = name && name[0] ? ox_find(im, name) : NULL;

	if (z && (!z->is_const || !z->i || (ox_count(z) != 1 && ox_count(z) != (uint64_t)o)))
		return false;
	for (int64_t k = 0; k < o; k++)
		v[k] = z ? z->i[ox_count(z) == 1 ? 0 : k] : 0;
	return true;
}

/* A 2-D window's geometry, from explicit attributes. */
struct win2 {
	int64_t h, w, ho, wo, kh, kw, st[2], dl[2], pad[4];
};

/* False for auto_pad SAME, another rank, or a window that does not fit. */
static bool win2_of(struct ox_imp *im, const Onnx__NodeProto *n, const struct ox_val *x,
		    const struct ox_val *w, struct win2 *g)
{
	const Onnx__AttributeProto *ap = ox_attr(n, "auto_pad");
	npurt_status st;
	int64_t v[4];

	if (x->ndim != 4 || w->ndim != 4 ||
	    (ap && ap->has_s && ap->s.len >= 4 && !memcmp(ap->s.data, "SAME", 4)))
		return false;
	*g = (struct win2){ .h = x->dims[2], .w = x->dims[3], .kh = w->dims[2], .kw = w->dims[3],
			    .st = { 1, 1 }, .dl = { 1, 1 } };
	if (ox_ints(im, n, SIZE_MAX, "strides", v, 4, &st) == 2)
		g->st[0] = v[0], g->st[1] = v[1];
	if (ox_ints(im, n, SIZE_MAX, "dilations", v, 4, &st) == 2)
		g->dl[0] = v[0], g->dl[1] = v[1];
	if (ox_ints(im, n, SIZE_MAX, "pads", v, 4, &st) == 4 &&
	    !(ap && ap->has_s && ap->s.len == 5 && !memcmp(ap->s.data, "VALID", 5)))
		memcpy(g->pad, v, sizeof(g->pad));
	for (int k = 0; k < 2; k++)
		if (g->st[k] < 1 || g->dl[k] < 1 || g->pad[k] < 0 || g->pad[k + 2] < 0)
			return false;
	g->ho = (g->h + g->pad[0] + g->pad[2] - g->dl[0] * (g->kh - 1) - 1);
	g->wo = (g->w + g->pad[1] + g->pad[3] - g->dl[1] * (g->kw - 1) - 1);
	if (g->ho < 0 || g->wo < 0)
		return false;
	g->ho = g->ho / g->st[0] + 1;
	g->wo = g->wo / g->st[1] + 1;
	return true;
}

/*
 * (x - xz) conv (w - wz) on the device's integer convolution (firmware
 * 0.9), for constant weights and weight zero points and a 2-D window of
 * explicit pads. Over the taps V(t) of output position t that fall inside
 * the image (the padding holds xz: it counts for nothing):
 *
 *   y = conv(x, w) - xz (S[o][t] - wz[o] cpg |V(t)|) - wz[o] box(x)[t]
 *
 * with conv padding with 0, S[o][t] the sum of w[o] over V(t) and box
 * the sum of x over V(t) and every channel (a convolution with ones).
 * S and |V| are taken here, so xz may be computed (DynamicQuantizeLinear's);
 * box only for a weight zero point not all 0, and then ungrouped. Sets
 * *took to false, doing nothing, where it does not apply.
 */
static npurt_status int_conv(struct ox_imp *im, const Onnx__NodeProto *n, const char *x,
			     const char *xz, const char *w, const char *wz, ox_name out,
			     bool *took)
{
	struct ox_val *xv = ox_find(im, x), *wv = ox_find(im, w);
	int64_t o_n = wv->dims[0], cpg = wv->ndim > 1 ? wv->dims[1] : 0, *zw = NULL;
	int64_t *kt = NULL, *ones = NULL, dims[4] = { 1, o_n, 1, 1 }, hn, wn;
	bool any_zw = false;
	struct win2 g;
	ox_name y, c, box, oc, t, r, zx;
	npurt_status st = NPURT_OK;

	*took = false;
	if (!wv->is_const || !wv->i || !win2_of(im, n, xv, wv, &g))
		return NPURT_OK;
	/* where no padding cuts a window, K is one value per channel */
	hn = g.pad[0] || g.pad[2] ? g.ho : 1;
	wn = g.pad[1] || g.pad[3] ? g.wo : 1;
	zw = calloc((size_t)o_n, sizeof(*zw));
	kt = calloc((size_t)(o_n * hn * wn), sizeof(*kt));
	if (!zw || !kt) {
		st = ox_fail(im, NPURT_ERR_NO_MEMORY, "sums of %lld channels", (long long)o_n);
		goto out;
	}
	if (!zw_values(im, wz, o_n, zw))
		goto out;
	for (int64_t o = 0; o < o_n; o++)
		any_zw |= zw[o] != 0;
	if (any_zw && ox_attr_i(n, "group", 1) != 1)
		goto out;
	*took = true;
	/* K[o][t] = S[o][t] - wz[o] cpg |V(t)| */
	for (int64_t o = 0; o < o_n; o++)
		for (int64_t ho = 0; ho < hn; ho++)
			for (int64_t wo = 0; wo < wn; wo++) {
				int64_t sum = 0, valid = 0;

				for (int64_t i = 0; i < g.kh; i++)
					for (int64_t j = 0; j < g.kw; j++) {
						int64_t hi = ho * g.st[0] - g.pad[0] + i * g.dl[0];
						int64_t wi = wo * g.st[1] - g.pad[1] + j * g.dl[1];

						if ((hn > 1 && (hi < 0 || hi >= g.h)) ||
						    (wn > 1 && (wi < 0 || wi >= g.w)))
							continue;
						valid++;
						for (int64_t ch = 0; ch < cpg; ch++)
							sum += wv->i[((o * cpg + ch) * g.kh + i) * g.kw + j];
					}
				kt[(o * hn + ho) * wn + wo] =
					(int32_t)(uint32_t)(uint64_t)(sum - zw[o] * cpg * valid);
			}
	dims[2] = hn, dims[3] = wn;
	st = conv_bytes(im, n, x, w, y);
	if (!st && xz && xz[0]) {
		st = emit_cast(im, xz, OX_INT32, ox_tmp_name(im, zx, sizeof(zx), "quant"));
		if (!st)
			st = int32_const(im, kt, o_n * hn * wn, dims, 4, c);
		if (!st)
			st = emit_new(im, "Mul", c, zx, t);
		if (!st)
			st = emit_new(im, "Sub", y, t, r);
		if (!st)
			snprintf(y, sizeof(y), "%s", r);
	}
	if (!st && any_zw) {
		int64_t kc = cpg * g.kh * g.kw, wd[4] = { 1, cpg, g.kh, g.kw };

		ones = malloc((size_t)kc * sizeof(*ones));
		if (!ones) {
			st = ox_fail(im, NPURT_ERR_NO_MEMORY, "a window of %lld", (long long)kc);
			goto out;
		}
		for (int64_t k = 0; k < kc; k++)
			ones[k] = 1;
		dims[2] = dims[3] = 1;
		st = int32_const(im, ones, kc, wd, 4, t);
		if (!st)
			st = emit_cast(im, t, OX_UINT8, ox_tmp_name(im, oc, sizeof(oc), "quant"));
		if (!st)
			st = conv_bytes(im, n, x, oc, box);
		if (!st)
			st = int32_const(im, zw, o_n, dims, 4, c);
		if (!st)
			st = emit_new(im, "Mul", box, c, t);
		if (!st)
			st = emit_new(im, "Sub", y, t, r);
		if (!st)
			snprintf(y, sizeof(y), "%s", r);
	}
	snprintf(out, sizeof(ox_name), "%s", y);
out:
	free(zw);
	free(kt);
	free(ones);
	return st;
}

/*
 * (a - a_zero) op (b - b_zero): a MatMul on bytes in int32 (int_matmul()),
 * or in float on integers: a Conv (with the node's attributes), whose
 * sums over `red` products float32 must hold exactly. The result's name
 * into out, int32 for a MatMul, float for a Conv.
 */
static npurt_status int_product(struct ox_imp *im, const Onnx__NodeProto *n, bool conv,
				const char *a, const char *az, const char *b, const char *bz,
				ox_name out)
{
	struct ox_val *av = ox_find(im, a), *bv = ox_find(im, b);
	uint32_t a_nd = av ? av->ndim : 0, b_nd = bv ? bv->ndim : 0;
	uint64_t red = 1;
	ox_name af, bf, zaf, zbf, ad, bd;
	npurt_status st;
	bool took;

	if (!av || !bv || av->ndim < 1 || bv->ndim < 2)
		return ox_fail(im, NPURT_ERR_INVALID, "operands of rank %u and %u",
			       av ? av->ndim : 0, bv ? bv->ndim : 0);
	if (!conv)
		return int_matmul(im, a, az, b, bz, out);
	st = int_conv(im, n, a, az, b, bz, out, &took);
	if (st || took)
		return st;
	for (uint32_t k = 1; k < bv->ndim; k++)
		red *= (uint64_t)bv->dims[k];
	if (red * 255 * 255 > QUANT_EXACT)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "sums over %llu products of 8-bit integers, "
			       "which float32 does not hold exactly (and the integer convolution "
			       "takes constant weights, explicit pads, 2-D)", (unsigned long long)red);
	/* A per-channel zero point lies along axis 1 of x, 0 of w. */
	st = emit_cast(im, a, OX_FLOAT, ox_tmp_name(im, af, sizeof(af), "quant"));
	if (!st)
		st = emit_cast(im, b, OX_FLOAT, ox_tmp_name(im, bf, sizeof(bf), "quant"));
	if (!st)
		st = param(im, az, a_nd, 1, zaf);
	if (!st)
		st = param(im, bz, b_nd, 0, zbf);
	if (!st)
		st = emit_new(im, "Sub", af, zaf, ad);
	if (!st)
		st = emit_new(im, "Sub", bf, zbf, bd);
	if (st)
		return st;
	/* The node's own attributes are Conv's (kernel_shape, pads, strides, ...). */
	return ox_emit_attrs(im, "Conv", (const char *const[]){ ad, bd }, 2,
			     ox_tmp_name(im, out, sizeof(ox_name), "quant"), n->attribute,
			     n->n_attribute);
}

/* MatMulInteger, ConvInteger: the integer product, as int32. */
static npurt_status op_integer(struct ox_imp *im, const Onnx__NodeProto *n, bool conv)
{
	ox_name p;
	npurt_status st = int_product(im, n, conv, input(n, 0), input(n, 2), input(n, 1),
				      input(n, 3), p);

	return st ? st : emit_cast(im, p, OX_INT32, n->output[0]);
}

/*
 * out = the device's REQUANT of p by k (firmware 0.10): p * k in f32,
 * rounded, the constant zero point zp added, saturated to `type`; a Relu
 * before it is the zero point as the least value.
 */
static npurt_status requant_op(struct ox_imp *im, const char *p, const char *k, double zp,
			       bool relu, int32_t type, const char *out)
{
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_REQUANT, .alpha = (float)zp,
				  .beta = relu ? (float)zp : -INFINITY,
				  .out_dtype = ox_dtype(type) };
	struct ox_val *pv = ox_find(im, p), *kv = ox_find(im, k), *v;
	int64_t dims[OX_MAX_DIMS];
	uint32_t nd;

	if (!ox_broadcast(pv->dims, pv->ndim, kv->dims, kv->ndim, dims, &nd))
		return ox_fail(im, NPURT_ERR_INVALID, "scales of %u dimensions against a product "
			       "of %u", kv->ndim, pv->ndim);
	if (ox_bcast_tensor(im, p, nd, dims, &node.in[0]) ||
	    ox_bcast_tensor(im, k, nd, dims, &node.in[1]))
		return npurt_last_status();
	v = ox_fresh(im, out, type, nd, dims);
	if (!v || ox_add(im, &node, v->base))
		return npurt_last_status();
	return NPURT_OK;
}

/*
 * QLinearMatMul(a, as, az, b, bs, bz, ys, yz) and QLinearConv(x, xs, xz,
 * w, ws, wz, ys, yz[, bias]): the integer product (and the int32 bias,
 * added in int32), scaled by as bs / ys and requantized to y's zero
 * point's type: by the device's REQUANT when that zero point is a
 * constant (one op), else by the float ops it means.
 */
static npurt_status op_qlinear(struct ox_imp *im, const Onnx__NodeProto *n, bool conv, bool relu)
{
	ox_name p, pb, sa, sb, sy, zy, m, k, q, bf;
	struct ox_val *w = input(n, 3) ? ox_find(im, input(n, 3)) : NULL, *zv;
	uint32_t r = w ? w->ndim : 2;
	int32_t yt = zp_type(im, n, 7);
	bool has_bias = conv && input(n, 8) && input(n, 8)[0], as_int;
	npurt_status st;

	if (n->n_input < 8 || !w)
		return ox_fail(im, NPURT_ERR_INVALID, "%zu inputs, 8 wanted", n->n_input);
	zv = input(n, 7) && input(n, 7)[0] ? ox_find(im, input(n, 7)) : NULL;
	st = int_product(im, n, conv, input(n, 0), input(n, 2), input(n, 3), input(n, 5), p);
	as_int = !st && ox_find(im, p)->type == OX_INT32;
	if (!st && has_bias) {
		/* The int32 bias, per output channel: axis 1 of the output. */
		st = param_as(im, input(n, 8), r, 1, as_int ? OX_INT32 : OX_FLOAT, bf);
		if (!st)
			st = emit_new(im, "Add", p, bf, pb);
		if (!st)
			snprintf(p, sizeof(p), "%s", pb);
	}
	/* The per-channel scale of b (w) lies along its output axis. */
	if (!st)
		st = param(im, input(n, 1), 1, 0, sa);
	if (!st)
		st = param(im, input(n, 4), r, conv ? 1 : (int)r - 1, sb);
	if (!st)
		st = param(im, input(n, 6), 1, 0, sy);
	if (!st)
		st = emit_new(im, "Mul", sa, sb, m);
	if (!st)
		st = emit_new(im, "Div", m, sy, k);
	if (st)
		return st;
	if ((!zv || (zv->is_const && ox_count(zv) == 1)) && ox_find(im, k)->type == OX_FLOAT &&
	    (yt == OX_UINT8 || yt == OX_INT8))
		return requant_op(im, p, k, zv ? ox_getf(zv, 0) : 0, relu, yt, n->output[0]);
	if (as_int) {	/* scaled in float, as onnxruntime does */
		st = emit_cast(im, p, OX_FLOAT, ox_tmp_name(im, pb, sizeof(pb), "quant"));
		snprintf(p, sizeof(p), "%s", pb);
	}
	if (!st)
		st = param(im, input(n, 7), 1, 0, zy);
	if (!st)
		st = emit_new(im, "Mul", p, k, q);
	if (!st && relu) {	/* a Relu between the product and its QuantizeLinear (QDQ) */
		st = emit_new(im, "Relu", q, NULL, m);
		if (!st)
			snprintf(q, sizeof(q), "%s", m);
	}
	return st ? st : requantize(im, q, zy, yt, n->output[0]);
}

npurt_status ox_quant_qlinear(struct ox_imp *im, const Onnx__NodeProto *n, bool conv, bool relu)
{
	return op_qlinear(im, n, conv, relu);
}

bool ox_quant_conv_is_int(struct ox_imp *im, const Onnx__NodeProto *conv, const char *x,
			  const char *w, const char *wz)
{
	struct ox_val *xv = ox_find(im, x), *wv = ox_find(im, w);
	int64_t *zw;
	bool any = false, ok;
	struct win2 g;

	if (!xv || !wv || !wv->is_const || !wv->i || wv->ndim != 4 || !win2_of(im, conv, xv, wv, &g))
		return false;
	zw = calloc((size_t)wv->dims[0], sizeof(*zw));
	ok = zw && zw_values(im, wz, wv->dims[0], zw);
	for (int64_t o = 0; ok && o < wv->dims[0]; o++)
		any |= zw[o] != 0;
	free(zw);
	return ok && (!any || ox_attr_i(conv, "group", 1) == 1);
}

npurt_status ox_quant_node(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			   bool *handled)
{
	const char *t = n->op_type;

	*handled = true;
	if (!strcmp(t, "QuantizeLinear") || !strcmp(t, "DequantizeLinear"))
		return op_linear(im, n, x, t[0] == 'Q');
	if (!strcmp(t, "DynamicQuantizeLinear"))
		return op_dynamic(im, n, x);
	if (!strcmp(t, "MatMulInteger") || !strcmp(t, "ConvInteger"))
		return op_integer(im, n, t[0] == 'C');
	if (!strcmp(t, "QLinearMatMul") || !strcmp(t, "QLinearConv"))
		return op_qlinear(im, n, t[7] == 'C', false);
	*handled = false;
	return NPURT_OK;
}
