// SPDX-License-Identifier: MIT
/*
 * The ONNX importer's values on the host: the table every value the graph
 * names lives in (ox_new() may move it: hold names, not pointers, across
 * a call that makes values), constants and their elements, a node's
 * attributes, and TensorProtos read into constants.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

#define OX_MAX_CONST	(1ull << 25)	/* elements of one constant (256 MiB on the host) */
#define OX_MAX_ELEMS	(1ull << 40)

npurt_status ox_fail(struct ox_imp *im, npurt_status st, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (im && im->node && im->scope) {	/* in an inlined branch or body: whose */
		const struct ox_scope *sc = im->scope;
		char it[32] = "";

		if (sc->iteration >= 0)
			snprintf(it, sizeof(it), ", iteration %lld", (long long)sc->iteration);
		return npurt_set_error(st, "onnx: node %zu \"%.64s\" (%.32s) of the %s%s of node "
				       "%zu \"%.64s\" (%.32s): %s", im->node_index,
				       im->node->name ? im->node->name : "",
				       im->node->op_type ? im->node->op_type : "?", sc->branch, it,
				       sc->node_index, sc->node->name ? sc->node->name : "",
				       sc->node->op_type ? sc->node->op_type : "?", msg);
	}
	if (im && im->node)
		return npurt_set_error(st, "onnx: node %zu \"%.64s\" (%.32s): %s", im->node_index,
				       im->node->name ? im->node->name : "",
				       im->node->op_type ? im->node->op_type : "?", msg);
	return npurt_set_error(st, "onnx: %s", msg);
}

bool ox_is_real(int32_t type)
{
	return type == OX_FLOAT || type == OX_FLOAT16 || type == OX_BFLOAT16;
}

bool ox_is_float(int32_t type)
{
	return type == OX_FLOAT || type == OX_FLOAT16 || type == OX_BFLOAT16 || type == OX_DOUBLE;
}

const char *ox_type_name(int32_t type)
{
	static const char *const names[] = {
		[OX_FLOAT] = "float", [OX_UINT8] = "uint8", [OX_INT8] = "int8",
		[OX_UINT16] = "uint16", [OX_INT16] = "int16", [OX_INT32] = "int32",
		[OX_INT64] = "int64", [OX_STRING] = "string", [OX_BOOL] = "bool",
		[OX_FLOAT16] = "float16", [OX_DOUBLE] = "double", [OX_UINT32] = "uint32",
		[OX_UINT64] = "uint64", [OX_BFLOAT16] = "bfloat16",
	};

	if (type > 0 && (size_t)type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "an unknown dtype";
}

uint64_t ox_count(const struct ox_val *v)
{
	uint64_t n = 1;

	for (uint32_t k = 0; k < v->ndim; k++)
		n *= (uint64_t)v->dims[k];
	return n;
}

/*
 * Values by name: an unrolled loop or recurrent op defines hundreds of
 * thousands, and every node looks its inputs up and its outputs' names
 * (which must be new) too, so a scan of the table would make an import
 * quadratic in its size.
 */
static size_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return (size_t)h;
}

/* Slot of `name` in the index: its entry, or the empty one it would take. */
static uint32_t *name_slot(const struct ox_imp *im, const char *name)
{
	size_t mask = im->by_name_cap - 1;

	for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
		uint32_t *e = &im->by_name[i];

		if (!*e || !strcmp(im->vals[*e - 1].name, name))
			return e;
	}
}

/* Index vals[k] under its name; a name defined again points at the newest. */
static bool name_index(struct ox_imp *im, size_t k)
{
	if (2 * (im->nvals + 1) > im->by_name_cap) {
		size_t cap = im->by_name_cap ? 2 * im->by_name_cap : 256;
		uint32_t *p = calloc(cap, sizeof(*p));

		if (!p || k >= UINT32_MAX) {
			free(p);
			return false;
		}
		free(im->by_name);
		im->by_name = p;
		im->by_name_cap = cap;
		for (size_t j = 0; j < k; j++)
			*name_slot(im, im->vals[j].name) = (uint32_t)j + 1;
	}
	*name_slot(im, im->vals[k].name) = (uint32_t)k + 1;
	return true;
}

struct ox_val *ox_find(struct ox_imp *im, const char *name)
{
	uint32_t *e;

	/* no name (an input a node leaves out) is no value */
	if (!name || !im->by_name_cap)
		return NULL;
	e = name_slot(im, name);
	return *e ? &im->vals[*e - 1] : NULL;
}

struct ox_val *ox_in(struct ox_imp *im, const Onnx__NodeProto *n, size_t k)
{
	if (k >= n->n_input || !n->input[k][0])
		return NULL;
	return ox_find(im, n->input[k]);
}

struct ox_val *ox_new(struct ox_imp *im, const char *name, int32_t type, uint32_t ndim,
		      const int64_t *dims)
{
	int64_t d[OX_MAX_DIMS];		/* dims may point into the table realloc moves */
	struct ox_val *v;
	uint64_t n = 1;

	if (ndim > OX_MAX_DIMS) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" has %u dimensions, at most %d",
			name, ndim, OX_MAX_DIMS);
		return NULL;
	}
	if (ndim)
		memcpy(d, dims, ndim * sizeof(dims[0]));
	/* Each dimension, and the product of those not 0, at most 2^40. */
	for (uint32_t k = 0; k < ndim; k++) {
		if (d[k] < 0 || (uint64_t)d[k] > OX_MAX_ELEMS ||
		    (d[k] && n > OX_MAX_ELEMS / (uint64_t)d[k])) {
			ox_fail(im, NPURT_ERR_INVALID, "\"%.64s\": dimension %u is %lld", name, k,
				(long long)d[k]);
			return NULL;
		}
		n *= d[k] ? (uint64_t)d[k] : 1;
	}
	if (im->nvals == im->cap) {
		size_t cap = im->cap ? 2 * im->cap : 64;
		struct ox_val *p = realloc(im->vals, cap * sizeof(*p));

		if (!p) {
			ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
			return NULL;
		}
		im->vals = p;
		im->cap = cap;
	}
	v = &im->vals[im->nvals];
	*v = (struct ox_val){ .type = type, .ndim = ndim, .base = OX_NONE, .tensor = OX_NONE };
	v->name = strdup(name);
	if (!v->name || !name_index(im, im->nvals)) {
		free(v->name);
		ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		return NULL;
	}
	if (ndim)
		memcpy(v->dims, d, ndim * sizeof(d[0]));
	n = 1;
	for (uint32_t k = ndim; k-- > 0;) {	/* dense until told otherwise */
		v->stride[k] = (int64_t)n;
		n *= (uint64_t)d[k];
	}
	im->nvals++;
	return v;
}

struct ox_val *ox_new_const(struct ox_imp *im, const char *name, int32_t type, uint32_t ndim,
			    const int64_t *dims)
{
	struct ox_val *v = ox_new(im, name, type, ndim, dims);
	uint64_t n;

	if (!v)
		return NULL;
	n = ox_count(v);
	if (n > OX_MAX_CONST) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "constant \"%.64s\" of %llu elements", name,
			(unsigned long long)n);
		return NULL;
	}
	v->is_const = true;
	if (ox_is_float(type))
		v->f = calloc(n ? n : 1, sizeof(double));
	else
		v->i = calloc(n ? n : 1, sizeof(int64_t));
	if (!v->f && !v->i) {
		ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		return NULL;
	}
	return v;
}

double ox_getf(const struct ox_val *v, uint64_t idx)
{
	return v->f ? v->f[idx] : (double)v->i[idx];
}

int64_t ox_geti(const struct ox_val *v, uint64_t idx)
{
	double x;

	if (v->i)
		return v->i[idx];
	x = v->f[idx];
	/* Saturate, as the shape arithmetic wants (INT64_MAX ends in Slice). */
	if (!(x == x))
		return 0;
	if (x >= 9.2e18)
		return INT64_MAX;
	if (x <= -9.2e18)
		return INT64_MIN;
	return (int64_t)x;
}

void ox_set(struct ox_val *v, uint64_t idx, double x)
{
	if (v->f) {
		/* as the device will hold it */
		if (v->type == OX_FLOAT)
			x = (float)x;
		else if (v->type == OX_FLOAT16)
			x = npu_f16_to_f32(npu_f32_to_f16(npu_f64_to_f32_odd(x)));
		else if (v->type == OX_BFLOAT16)
			x = npu_bf16_to_f32(npu_f32_to_bf16(npu_f64_to_f32_odd(x)));
		v->f[idx] = x;
		return;
	}
	if (v->type == OX_BOOL)
		v->i[idx] = x != 0;
	else if (!(x == x))
		v->i[idx] = 0;
	else
		v->i[idx] = ox_wrap(v->type, x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN :
					     (int64_t)x);
}

int64_t ox_wrap(int32_t type, int64_t x)
{
	uint64_t u = (uint64_t)x;

	switch (type) {
	case OX_BOOL: return x != 0;
	case OX_INT8: return (int8_t)(uint8_t)u;
	case OX_UINT8: return (uint8_t)u;
	case OX_INT16: return (int16_t)(uint16_t)u;
	case OX_UINT16: return (uint16_t)u;
	case OX_INT32: return (int32_t)(uint32_t)u;
	case OX_UINT32: return (uint32_t)u;
	default: return x;	/* int64, and uint64 held in its bits */
	}
}

/* ---- attributes --------------------------------------------------------- */

const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name)
{
	for (size_t k = 0; k < n->n_attribute; k++)
		if (n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
			return n->attribute[k];
	return NULL;
}

int64_t ox_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	return a && a->has_i ? a->i : def;
}

float ox_attr_f(const Onnx__NodeProto *n, const char *name, float def)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	return a && a->has_f ? a->f : def;
}

bool ox_attr_is(const Onnx__NodeProto *n, const char *name, const char *want)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	return a && a->has_s && a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

const char *ox_attr_s(const Onnx__NodeProto *n, const char *name, const char *def, char *buf,
		      size_t len)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	if (!a || !a->has_s)
		return def;
	snprintf(buf, len, "%.*s", (int)(a->s.len < len - 1 ? a->s.len : len - 1),
		 (const char *)a->s.data);
	return buf;
}

/* ---- tensors on the host --------------------------------------------------- */

static size_t raw_size(int32_t type)
{
	switch (type) {
	case OX_UINT8: case OX_INT8: case OX_BOOL: return 1;
	case OX_UINT16: case OX_INT16: case OX_FLOAT16: case OX_BFLOAT16: return 2;
	case OX_FLOAT: case OX_INT32: case OX_UINT32: return 4;
	case OX_INT64: case OX_UINT64: case OX_DOUBLE: return 8;
	default: return 0;
	}
}

/* Element k of raw little-endian data. */
static double raw_get(const uint8_t *p, int32_t type, uint64_t k, int64_t *iv)
{
	union { float f; double d; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64;
		int16_t i16; uint16_t u16; } u;
	size_t es = raw_size(type);

	memcpy(&u, p + k * es, es);
	switch (type) {
	case OX_FLOAT: return u.f;
	case OX_DOUBLE: return u.d;
	case OX_FLOAT16: return npu_f16_to_f32(u.u16);
	case OX_BFLOAT16: return npu_bf16_to_f32(u.u16);
	case OX_UINT8: *iv = p[k]; break;
	case OX_INT8: *iv = (int8_t)p[k]; break;
	case OX_BOOL: *iv = p[k] != 0; break;
	case OX_UINT16: *iv = u.u16; break;
	case OX_INT16: *iv = u.i16; break;
	case OX_INT32: *iv = u.i32; break;
	case OX_UINT32: *iv = u.u32; break;
	case OX_INT64: *iv = u.i64; break;
	default: *iv = (int64_t)u.u64; break;
	}
	return (double)*iv;
}

struct ox_val *ox_tensor_proto(struct ox_imp *im, const Onnx__TensorProto *t, const char *name)
{
	const char *nm = name ? name : t->name ? t->name : "";
	int32_t type = t->has_data_type ? t->data_type : 0;
	int64_t dims[OX_MAX_DIMS];
	struct ox_val *v;
	uint64_t n, have;

	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "tensor \"%.64s\" has external data", nm);
		return NULL;
	}
	if (!raw_size(type)) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "tensor \"%.64s\" is of %s", nm, ox_type_name(type));
		return NULL;
	}
	if (t->n_dims > OX_MAX_DIMS) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "tensor \"%.64s\" has %zu dimensions", nm, t->n_dims);
		return NULL;
	}
	if (t->n_dims)
		memcpy(dims, t->dims, t->n_dims * sizeof(dims[0]));
	v = ox_new_const(im, nm, type, (uint32_t)t->n_dims, dims);
	if (!v)
		return NULL;
	n = ox_count(v);
	if (t->has_raw_data) {
		if (t->raw_data.len != n * raw_size(type)) {
			ox_fail(im, NPURT_ERR_INVALID, "tensor \"%.64s\": %zu bytes of data for %llu "
				"elements", nm, t->raw_data.len, (unsigned long long)n);
			return NULL;
		}
		for (uint64_t k = 0; k < n; k++) {
			int64_t iv = 0;
			double x = raw_get(t->raw_data.data, type, k, &iv);

			if (v->f)
				v->f[k] = x;
			else
				v->i[k] = iv;
		}
		return v;
	}
	/* Typed fields: which one holds the values depends on the type. */
	switch (type) {
	case OX_FLOAT: have = t->n_float_data; break;
	case OX_DOUBLE: have = t->n_double_data; break;
	case OX_INT64: have = t->n_int64_data; break;
	case OX_UINT32: case OX_UINT64: have = t->n_uint64_data; break;
	default: have = t->n_int32_data; break;
	}
	if (have != n) {
		ox_fail(im, NPURT_ERR_INVALID, "tensor \"%.64s\": %llu values for %llu elements", nm,
			(unsigned long long)have, (unsigned long long)n);
		return NULL;
	}
	for (uint64_t k = 0; k < n; k++) {
		switch (type) {
		case OX_FLOAT: v->f[k] = t->float_data[k]; break;
		case OX_DOUBLE: v->f[k] = t->double_data[k]; break;
		case OX_INT64: v->i[k] = t->int64_data[k]; break;
		case OX_UINT32: case OX_UINT64: v->i[k] = (int64_t)t->uint64_data[k]; break;
		case OX_FLOAT16: case OX_BFLOAT16:
			v->f[k] = type == OX_BFLOAT16 ? npu_bf16_to_f32((uint16_t)t->int32_data[k]) :
				  npu_f16_to_f32((uint16_t)t->int32_data[k]);
			break;
		case OX_BOOL: v->i[k] = t->int32_data[k] != 0; break;
		default: v->i[k] = t->int32_data[k]; break;
		}
	}
	return v;
}
