// SPDX-License-Identifier: MIT
/*
 * Operators of opsets 1 to 6, imported as the operators of opset 7 they
 * became (onnx's docs/Changelog.md), so that the rest of the importer
 * knows one version of each: a node is rewritten, when it has to be,
 * into a copy that means the same under the newer rules.
 *
 * What changed at opset 7 that matters here:
 *  - binary arithmetic, logic and comparison took numpy broadcasting.
 *    Before, B broadcast to A only with broadcast=1, its dimensions
 *    lined up with A's from `axis` on (by default with A's last ones);
 *    without it the shapes had to be equal. B gets as many trailing
 *    1-dimensions as A has past its span (a view: no op), and numpy's
 *    rule then pairs the same dimensions.
 *  - PRelu's slope took numpy broadcasting; before, a slope of one value
 *    per channel lined up with dimension 1 (as Caffe2 and PyTorch have
 *    it), so [C] becomes [C, 1, ...].
 *  - BatchNormalization lost is_test (0, the default, normalised by the
 *    batch's own statistics: training) and spatial (0: statistics per
 *    activation, not per channel): only is_test=1, spatial=1 import.
 *  - consumed_inputs (opsets 1 to 5) only told a runtime which inputs it
 *    might overwrite: ignored.
 * And earlier: Cast's `to` was a string (before 6), Tile took a count and
 * an axis (before 6), Concat's axis was optional, 1 by default (before
 * 4), Pad's pads were `paddings` (before 2), Upsample had height_scale
 * and width_scale (before 7).
 */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

/* A copy of n without attribute `drop` (NULL: none), inputs shared until set. */
static npurt_status lg_copy(struct ox_imp *im, struct ox_legacy *lg, const Onnx__NodeProto *n,
			    const char *drop)
{
	size_t na = 0;

	if (n->n_input > OX_LEGACY_INPUTS || n->n_attribute > OX_LEGACY_ATTRS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%zu inputs and %zu attributes: an "
			       "opset-%lld node takes at most %d and %d here", n->n_input,
			       n->n_attribute, (long long)im->opset, OX_LEGACY_INPUTS, OX_LEGACY_ATTRS);
	lg->node = *n;
	for (size_t k = 0; k < n->n_input; k++)
		lg->inputs[k] = n->input[k];
	lg->node.input = lg->inputs;
	for (size_t k = 0; k < n->n_attribute; k++)
		if (!drop || !n->attribute[k]->name || strcmp(n->attribute[k]->name, drop))
			lg->attrs[na++] = n->attribute[k];
	lg->node.attribute = lg->attrs;
	lg->node.n_attribute = na;
	return NPURT_OK;
}

/* Add attribute `name` to the copy: an int, or floats (nf of them). */
static void lg_add_attr(struct ox_legacy *lg, const char *name, int64_t i, const float *f, size_t nf)
{
	Onnx__AttributeProto *a = &lg->added;

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = true;
	if (f) {
		memcpy(lg->floats, f, nf * sizeof(*f));
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
		a->floats = lg->floats;
		a->n_floats = nf;
	} else {
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		a->has_i = true;
		a->i = i;
	}
	lg->attrs[lg->node.n_attribute++] = a;
}

/* Input k of the copy becomes a view of itself with `trail` dimensions of 1 after its own. */
static npurt_status lg_pad_dims(struct ox_imp *im, struct ox_legacy *lg, size_t k, uint32_t trail)
{
	struct ox_val *b = ox_find(im, lg->inputs[k]);
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	uint32_t nd = 0;

	if (!trail)
		return NPURT_OK;
	if (b->ndim + trail > OX_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" would have %u dimensions",
			       b->name, b->ndim + trail);
	for (uint32_t d = 0; d < b->ndim; d++, nd++) {
		dims[nd] = b->dims[d];
		stride[nd] = b->stride[d];
	}
	for (uint32_t d = 0; d < trail; d++, nd++) {
		dims[nd] = 1;
		stride[nd] = 0;
	}
	ox_tmp_name(im, lg->names[k], sizeof(lg->names[k]), lg->inputs[k]);
	if (!ox_view(im, b, lg->names[k], nd, dims, b->off, stride))
		return npurt_last_status();
	lg->inputs[k] = lg->names[k];
	return NPURT_OK;
}

static bool legacy_binary(const char *t)
{
	static const char *const ops[] = {
		"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less",
	};

	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (!strcmp(t, ops[k]))
			return true;
	return false;
}

static void dims_str(const struct ox_val *v, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (uint32_t k = 0; k < v->ndim && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? "x" : "",
				       (long long)v->dims[k]);
	if (!v->ndim)
		snprintf(buf, len, "a scalar");
}

static npurt_status lg_broadcast(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg)
{
	struct ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1);
	int64_t axis;
	char sa[64], sb[64];
	npurt_status st;

	if (n->n_input != 2 || !a || !b)
		return ox_fail(im, NPURT_ERR_INVALID, "%zu inputs, 2 wanted", n->n_input);
	dims_str(a, sa, sizeof(sa));
	dims_str(b, sb, sizeof(sb));
	if (!ox_attr_i(n, "broadcast", 0)) {
		if (a->ndim != b->ndim || memcmp(a->dims, b->dims, a->ndim * sizeof(a->dims[0])))
			return ox_fail(im, NPURT_ERR_INVALID, "inputs of %s and %s: without "
				       "broadcast=1, opset %lld wants equal shapes", sa, sb,
				       (long long)im->opset);
		return NPURT_OK;
	}
	axis = ox_attr_i(n, "axis", (int64_t)a->ndim - (int64_t)b->ndim);
	if (axis < 0 || b->ndim > a->ndim || axis > (int64_t)(a->ndim - b->ndim))
		return ox_fail(im, NPURT_ERR_INVALID, "B of %s does not fit A of %s at axis %lld",
			       sb, sa, (long long)axis);
	for (uint32_t k = 0; k < b->ndim; k++)
		if (b->dims[k] != 1 && b->dims[k] != a->dims[axis + k])
			return ox_fail(im, NPURT_ERR_INVALID, "B of %s does not match A of %s "
				       "from axis %lld", sb, sa, (long long)axis);
	st = lg_copy(im, lg, n, NULL);
	if (!st)
		st = lg_pad_dims(im, lg, 1, a->ndim - (uint32_t)axis - b->ndim);
	return st;
}

/* A slope of one value per channel, [C], lines up with x's dimension 1. */
static npurt_status lg_prelu(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg)
{
	struct ox_val *x = ox_in(im, n, 0), *s = ox_in(im, n, 1);
	npurt_status st;

	if (!x || !s || x->ndim < 3 || s->ndim != 1 || s->dims[0] == 1 || s->dims[0] != x->dims[1])
		return NPURT_OK;
	st = lg_copy(im, lg, n, NULL);
	if (!st)
		st = lg_pad_dims(im, lg, 1, x->ndim - 2);
	return st;
}

/* Cast's `to` named the type: "FLOAT", "INT64", ... (TensorProto.DataType's names). */
static npurt_status lg_cast(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg)
{
	static const struct { const char *name; int32_t type; } types[] = {
		{ "FLOAT", OX_FLOAT }, { "UINT8", OX_UINT8 }, { "INT8", OX_INT8 },
		{ "UINT16", OX_UINT16 }, { "INT16", OX_INT16 }, { "INT32", OX_INT32 },
		{ "INT64", OX_INT64 }, { "STRING", OX_STRING }, { "BOOL", OX_BOOL },
		{ "FLOAT16", OX_FLOAT16 }, { "DOUBLE", OX_DOUBLE }, { "UINT32", OX_UINT32 },
		{ "UINT64", OX_UINT64 },
	};
	const Onnx__AttributeProto *to = ox_attr(n, "to");
	char buf[32];
	npurt_status st;

	if (!to || !to->has_s)
		return NPURT_OK;	/* an int already, or none: Cast says */
	ox_attr_s(n, "to", "", buf, sizeof(buf));
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		if (!strcmp(buf, types[k].name)) {
			st = lg_copy(im, lg, n, "to");
			if (!st)
				lg_add_attr(lg, "to", types[k].type, NULL, 0);
			return st;
		}
	return ox_fail(im, NPURT_ERR_INVALID, "to = \"%s\": no type of that name", buf);
}

/* Tile(input, tiles, axis): the input repeated `tiles` times along `axis`. */
static npurt_status lg_tile(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg)
{
	struct ox_val *x = ox_in(im, n, 0), *tiles = ox_in(im, n, 1), *axis = ox_in(im, n, 2);
	struct ox_val *rep;
	int64_t r, times;
	int a;
	npurt_status st;

	if (n->n_input != 3 || !x || !tiles || !axis)
		return NPURT_OK;	/* the later form already */
	if (!tiles->is_const || !axis->is_const || ox_count(tiles) != 1 || ox_count(axis) != 1)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "tiles and axis computed (the device "
			       "runs static shapes)");
	a = ox_axis(ox_geti(axis, 0), x->ndim);
	if (a < 0 || ox_geti(tiles, 0) < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "tiles %lld along axis %lld of a rank-%u "
			       "input", (long long)ox_geti(tiles, 0), (long long)ox_geti(axis, 0),
			       x->ndim);
	r = x->ndim;
	times = ox_geti(tiles, 0);
	st = lg_copy(im, lg, n, NULL);
	if (st)
		return st;
	/* x and tiles point into the table, which a new value may move */
	rep = ox_new_const(im, ox_tmp_name(im, lg->names[1], sizeof(lg->names[1]), n->output[0]),
			   OX_INT64, 1, &r);
	if (!rep)
		return npurt_last_status();
	for (int64_t k = 0; k < r; k++)
		rep->i[k] = k == a ? times : 1;
	lg->inputs[1] = lg->names[1];
	lg->node.n_input = 2;
	return NPURT_OK;
}

/* Upsample-1: height_scale and width_scale of an NCHW input. */
static npurt_status lg_upsample(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg)
{
	const Onnx__AttributeProto *h = ox_attr(n, "height_scale"), *w = ox_attr(n, "width_scale");
	struct ox_val *x = ox_in(im, n, 0);
	npurt_status st;

	if (!h || !w || !h->has_f || !w->has_f)
		return NPURT_OK;	/* scales given the later way: Upsample says */
	if (x->ndim != 4)
		return ox_fail(im, NPURT_ERR_INVALID, "height_scale and width_scale of a rank-%u "
			       "input: NCHW wanted", x->ndim);
	st = lg_copy(im, lg, n, NULL);
	if (!st) {
		const float scales[4] = { 1, 1, h->f, w->f };

		lg_add_attr(lg, "scales", 0, scales, 4);
	}
	return st;
}

bool ox_legacy_bn_plain(const struct ox_imp *im, const Onnx__NodeProto *bn)
{
	return im->opset >= 7 ||
	       (ox_attr_i(bn, "is_test", 0) == 1 && ox_attr_i(bn, "spatial", 1) == 1);
}

npurt_status ox_legacy(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_legacy *lg,
		       const Onnx__NodeProto **use)
{
	const char *t = n->op_type;
	npurt_status st = NPURT_OK;

	*use = n;
	if (im->opset >= 7)
		return NPURT_OK;
	lg->node.op_type = NULL;
	for (size_t k = 0; k < n->n_input; k++)
		if (n->input[k][0] && !ox_find(im, n->input[k]))
			return NPURT_OK;	/* the walk says which input is missing */
	if (legacy_binary(t))
		st = lg_broadcast(im, n, lg);
	else if (!strcmp(t, "PRelu"))
		st = lg_prelu(im, n, lg);
	else if (!strcmp(t, "BatchNormalization") && !ox_legacy_bn_plain(im, n))
		st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "is_test=%lld, spatial=%lld: before opset "
			     "7 only is_test=1 (inference) with spatial=1 (per channel) maps",
			     (long long)ox_attr_i(n, "is_test", 0),
			     (long long)ox_attr_i(n, "spatial", 1));
	else if (!strcmp(t, "Cast") && im->opset < 6)
		st = lg_cast(im, n, lg);
	else if (!strcmp(t, "Tile") && im->opset < 6)
		st = lg_tile(im, n, lg);
	else if (!strcmp(t, "Concat") && im->opset < 4 && !ox_attr(n, "axis")) {
		st = lg_copy(im, lg, n, NULL);
		if (!st)
			lg_add_attr(lg, "axis", 1, NULL, 0);
	} else if (!strcmp(t, "Pad") && im->opset < 2 && ox_attr(n, "paddings")) {
		st = lg_copy(im, lg, n, NULL);
		for (size_t k = 0; !st && k < lg->node.n_attribute; k++)
			if (lg->attrs[k]->name && !strcmp(lg->attrs[k]->name, "paddings")) {
				lg->added = *lg->attrs[k];
				lg->added.name = (char *)"pads";
				lg->attrs[k] = &lg->added;
			}
	} else if (!strcmp(t, "Upsample")) {
		st = lg_upsample(im, n, lg);
	}
	if (!st && lg->node.op_type)
		*use = &lg->node;
	return st;
}
