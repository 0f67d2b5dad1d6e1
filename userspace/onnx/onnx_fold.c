// SPDX-License-Identifier: MIT
/*
 * Constant folding: nodes whose inputs are all constants (and Shape and
 * Size, which read only a static shape) are evaluated on the host at
 * import, so shape arithmetic and constant subgraphs cost the device
 * nothing. Elementwise arithmetic follows the ONNX types: integers stay
 * integers (division truncates), comparisons give bools. Layout-only
 * nodes of constants go through onnx_view.c, which gathers on the host.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "npu_opdefs.h"
#include "error.h"
#include "onnx.h"

static bool all_const(struct ox_imp *im, const Onnx__NodeProto *n)
{
	if (!ox_in(im, n, 0))		/* a first input left out: nothing to fold */
		return false;
	for (size_t k = 0; k < n->n_input; k++) {
		struct ox_val *v = ox_in(im, n, k);

		if (n->input[k][0] && (!v || !v->is_const))
			return false;
	}
	return n->n_input > 0;
}

static npurt_status fold_constant(struct ox_imp *im, const Onnx__NodeProto *n)
{
	const Onnx__AttributeProto *a;
	struct ox_val *v;
	int64_t len;

	if ((a = ox_attr(n, "value")) && a->t)
		return ox_tensor_proto(im, a->t, n->output[0]) ? NPURT_OK :
		       npurt_last_status();
	if ((a = ox_attr(n, "value_float")) || (a = ox_attr(n, "value_int"))) {
		bool f = !strcmp(a->name, "value_float");

		v = ox_new_const(im, n->output[0], f ? OX_FLOAT : OX_INT64, 0, NULL);
		if (v)
			ox_set(v, 0, f ? a->f : (double)a->i);
		return v ? NPURT_OK : npurt_last_status();
	}
	if ((a = ox_attr(n, "value_floats")) || (a = ox_attr(n, "value_ints"))) {
		bool f = !strcmp(a->name, "value_floats");

		len = (int64_t)(f ? a->n_floats : a->n_ints);
		v = ox_new_const(im, n->output[0], f ? OX_FLOAT : OX_INT64, 1, &len);
		for (int64_t k = 0; v && k < len; k++)
			ox_set(v, (uint64_t)k, f ? a->floats[k] : (double)a->ints[k]);
		return v ? NPURT_OK : npurt_last_status();
	}
	return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a constant that is no tensor");
}

static npurt_status fold_shape(struct ox_imp *im, const Onnx__NodeProto *n, bool size)
{
	struct ox_val *x = ox_in(im, n, 0), *v;
	int64_t rank = x->ndim, b = ox_attr_i(n, "start", 0), e = ox_attr_i(n, "end", rank), len;
	int64_t dims[OX_MAX_DIMS];
	uint32_t nd = x->ndim;

	memcpy(dims, x->dims, sizeof(dims));
	if (size) {
		uint64_t cnt = ox_count(x);

		v = ox_new_const(im, n->output[0], OX_INT64, 0, NULL);
		if (v)
			v->i[0] = (int64_t)cnt;
		return v ? NPURT_OK : npurt_last_status();
	}
	b = b < 0 ? b + rank : b;
	e = e < 0 ? e + rank : e;
	b = b < 0 ? 0 : b > rank ? rank : b;
	e = e < 0 ? 0 : e > rank ? rank : e;
	len = e > b ? e - b : 0;
	v = ox_new_const(im, n->output[0], OX_INT64, 1, &len);
	for (int64_t k = 0; v && k < len && (uint32_t)(b + k) < nd; k++)
		v->i[k] = dims[b + k];
	return v ? NPURT_OK : npurt_last_status();
}

static npurt_status fold_constant_of_shape(struct ox_imp *im, const Onnx__NodeProto *n)
{
	const Onnx__AttributeProto *a = ox_attr(n, "value");
	struct ox_val *shape = ox_in(im, n, 0), *val = NULL, *v;
	int64_t dims[OX_MAX_DIMS];
	int32_t type = OX_FLOAT;
	double x = 0;
	uint64_t cnt = ox_count(shape);

	if (cnt > OX_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "rank %llu", (unsigned long long)cnt);
	for (uint64_t k = 0; k < cnt; k++)
		dims[k] = ox_geti(shape, k);
	if (a && a->t) {
		char name[96];

		snprintf(name, sizeof(name), "%.64s:value", n->output[0]);
		val = ox_tensor_proto(im, a->t, name);
		if (!val)
			return npurt_last_status();
		type = val->type;
		x = ox_getf(val, 0);
	}
	v = ox_new_const(im, n->output[0], type, (uint32_t)cnt, dims);
	for (uint64_t k = 0; v && k < ox_count(v); k++)
		ox_set(v, k, x);
	return v ? NPURT_OK : npurt_last_status();
}

static npurt_status fold_range(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *s = ox_in(im, n, 0), *l = ox_in(im, n, 1), *d = ox_in(im, n, 2), *v;
	double start, delta, cnt;
	int32_t type;
	int64_t len;

	if (!s || !l || !d)
		return ox_fail(im, NPURT_ERR_INVALID, "three inputs");
	start = ox_getf(s, 0);
	delta = ox_getf(d, 0);
	type = s->type;
	cnt = delta ? ceil((ox_getf(l, 0) - start) / delta) : -1;
	if (!(cnt >= 0) || cnt > (1 << 24))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a range of %g elements", cnt);
	len = (int64_t)cnt;
	v = ox_new_const(im, n->output[0], type, 1, &len);
	for (int64_t k = 0; v && k < len; k++)
		ox_set(v, (uint64_t)k, start + (double)k * delta);
	return v ? NPURT_OK : npurt_last_status();
}

/* NonZero of a constant: int64 [rank, count], positions in row-major order. */
static npurt_status fold_nonzero(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *x = ox_in(im, n, 0), *v;
	uint64_t count = ox_count(x), nz = 0, c = 0;
	int64_t dims[2];

	for (uint64_t k = 0; k < count; k++)
		nz += ox_getf(x, k) != 0;
	if (!x->ndim || !nz)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%s: the device has no empty or "
			       "dimensionless tensor", x->ndim ? "no nonzero element" : "a scalar");
	dims[0] = x->ndim;
	dims[1] = (int64_t)nz;
	v = ox_new_const(im, n->output[0], OX_INT64, 2, dims);
	for (uint64_t k = 0; v && k < count; k++) {
		uint64_t rest = k;

		if (ox_getf(x, k) == 0)
			continue;
		for (uint32_t d = x->ndim; d-- > 0;) {
			ox_set(v, d * nz + c, (double)(rest % (uint64_t)x->dims[d]));
			rest /= (uint64_t)x->dims[d];
		}
		c++;
	}
	return v ? NPURT_OK : npurt_last_status();
}

enum fop { F_ADD, F_SUB, F_MUL, F_DIV, F_POW, F_MAX, F_MIN, F_EQ, F_LT, F_GT, F_LE, F_GE,
	   F_AND, F_OR, F_XOR, F_WHERE, F_MOD };

static const struct {
	const char *onnx;
	enum fop op;
} folds[] = {
	{ "Add", F_ADD }, { "Sub", F_SUB }, { "Mul", F_MUL }, { "Div", F_DIV }, { "Pow", F_POW },
	{ "Max", F_MAX }, { "Min", F_MIN }, { "Equal", F_EQ }, { "Less", F_LT },
	{ "Greater", F_GT }, { "LessOrEqual", F_LE }, { "GreaterOrEqual", F_GE },
	{ "And", F_AND }, { "Or", F_OR }, { "Xor", F_XOR }, { "Where", F_WHERE },
	{ "Mod", F_MOD },
};

static double apply(enum fop op, bool integer, double x, double y, double z)
{
	switch (op) {
	case F_ADD: return x + y;
	case F_SUB: return x - y;
	case F_MUL: return x * y;
	case F_DIV: return integer ? (y ? trunc(x / y) : 0) : x / y;
	case F_POW: return pow(x, y);
	case F_MAX: return x > y ? x : y;
	case F_MIN: return x < y ? x : y;
	case F_EQ: return x == y;
	case F_LT: return x < y;
	case F_GT: return x > y;
	case F_LE: return x <= y;
	case F_GE: return x >= y;
	case F_AND: return x && y;
	case F_OR: return x || y;
	case F_XOR: return !x != !y;
	case F_WHERE: return x ? y : z;
	/* integer Mod takes the divisor's sign, as Python's % */
	case F_MOD: return y ? x - y * floor(x / y) : 0;
	}
	return 0;
}

/* Offset of out element e in an input broadcast to out's dims. */
static uint64_t bcast_at(const struct ox_val *in, const struct ox_val *out, uint64_t e)
{
	uint64_t off = 0;

	for (uint32_t k = out->ndim; k-- > 0;) {
		uint64_t i = e % (uint64_t)out->dims[k];
		int j = (int)k - (int)(out->ndim - in->ndim);

		e /= (uint64_t)out->dims[k];
		if (j >= 0 && in->dims[j] != 1)
			off += i * (uint64_t)in->stride[j];
	}
	return off;
}

static npurt_status fold_elementwise(struct ox_imp *im, const Onnx__NodeProto *n, enum fop op)
{
	const char *names[3] = { NULL, NULL, NULL };
	int64_t dims[OX_MAX_DIMS];
	struct ox_val *in[3], *v;
	uint32_t nd = 0;
	size_t ni = op == F_WHERE ? 3 : 2;
	int32_t type;

	if (n->n_input != ni)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%zu inputs", n->n_input);
	for (size_t k = 0; k < ni; k++) {
		in[k] = ox_in(im, n, k);
		if (!in[k])
			return ox_fail(im, NPURT_ERR_INVALID, "input %zu missing", k);
		names[k] = in[k]->name;
		if (!k) {
			nd = in[0]->ndim;
			memcpy(dims, in[0]->dims, sizeof(dims));
		} else {
			int64_t was[OX_MAX_DIMS];	/* ox_broadcast must not alias */

			memcpy(was, dims, sizeof(was));
			if (!ox_broadcast(was, nd, in[k]->dims, in[k]->ndim, dims, &nd))
				return ox_fail(im, NPURT_ERR_INVALID, "shapes do not broadcast");
		}
	}
	type = op >= F_EQ && op <= F_XOR ? OX_BOOL : op == F_WHERE ? in[1]->type : in[0]->type;
	v = ox_new_const(im, n->output[0], type, nd, dims);
	if (!v)
		return npurt_last_status();
	for (size_t k = 0; k < ni; k++)
		in[k] = ox_find(im, names[k]);
	for (uint64_t e = 0; e < ox_count(v); e++) {
		double x = ox_getf(in[0], bcast_at(in[0], v, e));
		double y = ox_getf(in[1], bcast_at(in[1], v, e));
		double z = ni > 2 ? ox_getf(in[2], bcast_at(in[2], v, e)) : 0;

		if (!ox_is_float(in[0]->type) && (op == F_ADD || op == F_SUB || op == F_MUL)) {
			/* int64 arithmetic exactly, not through doubles */
			int64_t a = ox_geti(in[0], bcast_at(in[0], v, e));
			int64_t b = ox_geti(in[1], bcast_at(in[1], v, e));

			v->i[e] = ox_wrap(type, op == F_ADD ? (int64_t)((uint64_t)a + (uint64_t)b) :
						op == F_SUB ? (int64_t)((uint64_t)a - (uint64_t)b) :
						(int64_t)((uint64_t)a * (uint64_t)b));
			continue;
		}
		ox_set(v, e, apply(op, !ox_is_float(in[0]->type), x, y, z));
	}
	return NPURT_OK;
}

static const struct {
	const char *onnx;
	uint32_t op;
} unary_folds[] = {
	{ "Neg", NPU_OP_NEG }, { "Abs", NPU_OP_ABS }, { "Sqrt", NPU_OP_SQRT },
	{ "Exp", NPU_OP_EXP }, { "Log", NPU_OP_LOG }, { "Relu", NPU_OP_RELU },
	{ "Floor", NPU_OP_FLOOR }, { "Ceil", NPU_OP_CEIL }, { "Reciprocal", NPU_OP_RECIPROCAL },
	{ "Sigmoid", NPU_OP_SIGMOID }, { "Tanh", NPU_OP_TANH }, { "Sign", NPU_OP_SIGN },
};

static npurt_status fold_unary(struct ox_imp *im, const Onnx__NodeProto *n, int op)
{
	struct ox_val *x = ox_in(im, n, 0), *v;
	const char *name = x->name;
	bool integer = !ox_is_float(x->type);

	v = ox_new_const(im, n->output[0], op < 0 ? (int32_t)ox_attr_i(n, "to", 0) : x->type,
			 x->ndim, x->dims);
	if (!v)
		return npurt_last_status();
	x = ox_find(im, name);
	for (uint64_t e = 0; e < ox_count(v); e++) {
		double a = ox_getf(x, e);

		if (op == -1 && x->i && v->i)		/* Cast, integers exactly */
			v->i[e] = ox_wrap(v->type, x->i[e]);
		else if (op == -1)			/* Cast */
			ox_set(v, e, v->type == OX_BOOL ? a != 0 : a);
		else if (op == -2)			/* Not */
			ox_set(v, e, !a);
		else if (integer && op == NPU_OP_NEG)
			v->i[e] = (int64_t)(0 - (uint64_t)x->i[e]);
		else if (integer && op == NPU_OP_ABS)
			v->i[e] = x->i[e] < 0 ? (int64_t)(0 - (uint64_t)x->i[e]) : x->i[e];
		else if (integer && op == NPU_OP_RELU)
			v->i[e] = x->i[e] > 0 ? x->i[e] : 0;
		else if (integer && op == NPU_OP_SIGN)
			v->i[e] = (x->i[e] > 0) - (x->i[e] < 0);
		else if (integer && (op == NPU_OP_FLOOR || op == NPU_OP_CEIL))
			v->i[e] = x->i[e];
		else
			ox_set(v, e, npu_unary((uint32_t)op, (float)a, 0, 0));
	}
	return NPURT_OK;
}

static npurt_status fold_concat(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *x = ox_in(im, n, 0), *v;
	int a = x ? ox_axis(ox_attr_i(n, "axis", 0), x->ndim) : -1;
	int64_t dims[OX_MAX_DIMS];
	uint64_t outer = 1, inner = 1, at = 0;

	if (a < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "axis");
	memcpy(dims, x->dims, sizeof(dims));
	dims[a] = 0;
	for (size_t k = 0; k < n->n_input; k++) {
		struct ox_val *i = ox_in(im, n, k);

		if (!i || i->ndim != x->ndim)
			return ox_fail(im, NPURT_ERR_INVALID, "inputs of other ranks");
		for (uint32_t j = 0; j < x->ndim; j++)
			if (j != (uint32_t)a && i->dims[j] != x->dims[j])
				return ox_fail(im, NPURT_ERR_INVALID, "inputs of other shapes");
		dims[a] += i->dims[a];
	}
	for (int k = 0; k < a; k++)
		outer *= (uint64_t)dims[k];
	for (uint32_t k = (uint32_t)a + 1; k < x->ndim; k++)
		inner *= (uint64_t)dims[k];
	v = ox_new_const(im, n->output[0], x->type, x->ndim, dims);
	if (!v)
		return npurt_last_status();
	for (uint64_t o = 0; o < outer; o++)
		for (size_t k = 0; k < n->n_input; k++) {
			struct ox_val *i = ox_in(im, n, k);
			uint64_t block = (uint64_t)i->dims[a] * inner;

			for (uint64_t e = 0; e < block; e++)
				ox_set(v, at++, ox_getf(i, o * block + e));
		}
	return NPURT_OK;
}

/* A type constants hold: a number or bool (TensorProto.DataType). */
static bool numeric(int64_t type)
{
	switch (type) {
	case OX_FLOAT: case OX_UINT8: case OX_INT8: case OX_UINT16: case OX_INT16: case OX_INT32:
	case OX_INT64: case OX_BOOL: case OX_FLOAT16: case OX_DOUBLE: case OX_UINT32:
	case OX_UINT64: case OX_BFLOAT16:
		return true;
	default:
		return false;
	}
}

bool ox_fold(struct ox_imp *im, const Onnx__NodeProto *n, npurt_status *st)
{
	const char *t = n->op_type ? n->op_type : "";

	*st = NPURT_OK;
	if (!n->n_output || !n->output[0][0])
		return false;
	if (!strcmp(t, "Constant")) {
		*st = fold_constant(im, n);
		return true;
	}
	if ((!strcmp(t, "Shape") || !strcmp(t, "Size")) && ox_in(im, n, 0)) {
		*st = fold_shape(im, n, t[1] == 'i');
		return true;
	}
	if (!all_const(im, n) || n->n_output != 1)
		return false;
	if (!strcmp(t, "ConstantOfShape")) {
		*st = fold_constant_of_shape(im, n);
		return true;
	}
	if (!strcmp(t, "Concat")) {
		*st = fold_concat(im, n);
		return true;
	}
	if (!strcmp(t, "Range")) {
		*st = fold_range(im, n);
		return true;
	}
	if (!strcmp(t, "NonZero")) {
		*st = fold_nonzero(im, n);
		return true;
	}
	for (size_t k = 0; k < sizeof(folds) / sizeof(folds[0]); k++)
		if (!strcmp(t, folds[k].onnx) && (n->n_input == 2 || folds[k].op == F_WHERE)) {
			if (folds[k].op == F_MOD && ox_attr_i(n, "fmod", 0))
				return false;
			*st = fold_elementwise(im, n, folds[k].op);
			return true;
		}
	for (size_t k = 0; k < sizeof(unary_folds) / sizeof(unary_folds[0]); k++)
		if (!strcmp(t, unary_folds[k].onnx)) {
			uint32_t op = unary_folds[k].op;
			int32_t type = ox_in(im, n, 0)->type;

			/* integers fold only where it is exact; doubles not at all */
			if ((!ox_is_float(type) && op != NPU_OP_NEG && op != NPU_OP_ABS &&
			     op != NPU_OP_RELU && op != NPU_OP_SIGN && op != NPU_OP_FLOOR &&
			     op != NPU_OP_CEIL) || type == OX_DOUBLE)
				return false;
			*st = fold_unary(im, n, (int)unary_folds[k].op);
			return true;
		}
	/*
	 * Cast folds into every numeric type and bool (shape arithmetic goes
	 * through int32 too); op_cast refuses strings and types of no name.
	 */
	if (!strcmp(t, "Cast") && !numeric(ox_attr_i(n, "to", 0)))
		return false;
	if (!strcmp(t, "Cast") || !strcmp(t, "Not")) {
		*st = fold_unary(im, n, t[0] == 'C' ? -1 : -2);
		return true;
	}
	return false;
}
