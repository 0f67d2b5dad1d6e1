// SPDX-License-Identifier: MIT
/*
 * Quantized operators, written as the float operators they mean
 * (ox_emit()): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv. A matrix
 * product of bytes runs on the device's integer GEMM, exactly; a
 * convolution's is computed in float32 on integers, which is exact while
 * no sum passes 2^24: one whose reduction could is refused, until the op
 * library has an integer convolution. Rounding is
 * ONNX's, half to even (Round); saturation is a Clip to the output type's
 * range before the Cast.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
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

	if (!av || !bv || av->ndim < 1 || bv->ndim < 2)
		return ox_fail(im, NPURT_ERR_INVALID, "operands of rank %u and %u",
			       av ? av->ndim : 0, bv ? bv->ndim : 0);
	if (!conv)
		return int_matmul(im, a, az, b, bz, out);
	for (uint32_t k = 1; k < bv->ndim; k++)
		red *= (uint64_t)bv->dims[k];
	if (red * 255 * 255 > QUANT_EXACT)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "sums over %llu products of 8-bit integers, "
			       "which float32 does not hold exactly (the device has no integer "
			       "convolution yet)", (unsigned long long)red);
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
 * QLinearMatMul(a, as, az, b, bs, bz, ys, yz) and QLinearConv(x, xs, xz,
 * w, ws, wz, ys, yz[, bias]): the integer product (and the int32 bias),
 * scaled by as bs / ys, requantized to y's zero point's type.
 */
static npurt_status op_qlinear(struct ox_imp *im, const Onnx__NodeProto *n, bool conv)
{
	ox_name p, pb, sa, sb, sy, zy, m, k, q, bf;
	struct ox_val *w = input(n, 3) ? ox_find(im, input(n, 3)) : NULL;
	uint32_t r = w ? w->ndim : 2;
	npurt_status st;

	if (n->n_input < 8 || !w)
		return ox_fail(im, NPURT_ERR_INVALID, "%zu inputs, 8 wanted", n->n_input);
	st = int_product(im, n, conv, input(n, 0), input(n, 2), input(n, 3), input(n, 5), p);
	if (!st && !conv) {	/* int32: scaled in float, as onnxruntime does */
		st = emit_cast(im, p, OX_FLOAT, ox_tmp_name(im, pb, sizeof(pb), "quant"));
		snprintf(p, sizeof(p), "%s", pb);
	}
	if (!st && conv && input(n, 8) && input(n, 8)[0]) {
		/* The int32 bias, per output channel: axis 1 of the output. */
		st = param(im, input(n, 8), r, 1, bf);
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
		st = param(im, input(n, 7), 1, 0, zy);
	if (!st)
		st = emit_new(im, "Mul", sa, sb, m);
	if (!st)
		st = emit_new(im, "Div", m, sy, k);
	if (!st)
		st = emit_new(im, "Mul", p, k, q);
	return st ? st : requantize(im, q, zy, zp_type(im, n, 7), n->output[0]);
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
		return op_qlinear(im, n, t[7] == 'C');
	*handled = false;
	return NPURT_OK;
}
