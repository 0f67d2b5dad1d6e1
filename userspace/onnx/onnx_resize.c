// SPDX-License-Identifier: MIT
/*
 * ONNX's Resize (opsets 10 to 13) and Upsample, nearest and linear: per
 * axis that changes, GATHER_ELEMENTS of the source positions worked out
 * here (and for linear a second gather and the blend).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

/*
 * Input coordinate of output position o along an axis, as ONNX's Resize
 * maps it. align_corners divides by the resized length before rounding
 * (in * scale), as the operator's reference does when scales are given.
 */
static double resize_coord(const char *mode, int64_t o, int64_t in, int64_t out, double scale)
{
	if (!strcmp(mode, "align_corners")) {
		double len = (double)in * scale;

		return len <= 1 ? 0 : (double)o * (double)(in - 1) / (len - 1);
	}
	if (!strcmp(mode, "asymmetric"))
		return (double)o / scale;
	if (!strcmp(mode, "tf_half_pixel_for_nearest"))
		return ((double)o + 0.5) / scale;
	if (!strcmp(mode, "pytorch_half_pixel") && out == 1)
		return 0;
	return ((double)o + 0.5) / scale - 0.5;		/* half_pixel, pytorch_half_pixel */
}

static int64_t round_nearest(const char *mode, double x)
{
	if (!strcmp(mode, "floor"))
		return (int64_t)floor(x);
	if (!strcmp(mode, "ceil"))
		return (int64_t)ceil(x);
	if (!strcmp(mode, "round_prefer_ceil"))
		return (int64_t)floor(x + 0.5);
	return (int64_t)ceil(x - 0.5);			/* round_prefer_floor */
}

/*
 * Along axis k of cur (named cn), from in to out positions: a gather of
 * constant indices (nearest), or two and their weights (linear), into a
 * value called `name`.
 */
static struct ox_val *resize_axis(struct ox_imp *im, const char *cn, uint32_t k, int64_t out,
				  double scale, bool linear, const char *coord,
				  const char *nearest, const char *name)
{
	struct ox_val *c = ox_find(im, cn), *iv[2], *wv[2], *g[2];
	int64_t in = c->dims[k], dims[OX_MAX_DIMS], cdims[OX_MAX_DIMS], st[OX_MAX_DIMS];
	uint32_t r = c->ndim, t;
	int32_t type = c->type;
	char in_[2][96], wn[2][96], gn[2][96], pn[2][96];

	memcpy(dims, c->dims, sizeof(dims));
	dims[k] = out;
	for (uint32_t j = 0; j < r; j++) {
		cdims[j] = (int64_t)j == k ? out : 1;
		st[j] = j == k ? 1 : 0;
	}
	for (int e = 0; e < (linear ? 2 : 1); e++) {
		iv[e] = ox_new_const(im, ox_tmp_name(im, in_[e], sizeof(in_[e]), name), OX_INT64, r,
				     cdims);
		wv[e] = iv[e] && linear ? ox_new_const(im, ox_tmp_name(im, wn[e], sizeof(wn[e]), name),
						       type, r, cdims) : NULL;
		if (!iv[e] || (linear && !wv[e]))
			return NULL;
	}
	for (int64_t o = 0; o < out; o++) {
		double x = resize_coord(coord, o, in, out, scale);

		if (!linear) {
			int64_t i = round_nearest(nearest, x);

			ox_find(im, in_[0])->i[o] = i < 0 ? 0 : i >= in ? in - 1 : i;
			continue;
		}
		x = x < 0 ? 0 : x > (double)(in - 1) ? (double)(in - 1) : x;
		ox_find(im, in_[0])->i[o] = (int64_t)floor(x);
		ox_find(im, in_[1])->i[o] = (int64_t)floor(x) + 1 < in ? (int64_t)floor(x) + 1 : in - 1;
		ox_set(ox_find(im, wn[0]), (uint64_t)o, 1 - (x - floor(x)));
		ox_set(ox_find(im, wn[1]), (uint64_t)o, x - floor(x));
	}
	for (int e = 0; e < (linear ? 2 : 1); e++) {
		struct ox_val il, dl;

		if (ox_device(im, ox_find(im, in_[e]), &t) || ox_device(im, ox_find(im, cn), &t))
			return NULL;
		il = ox_layout(ox_find(im, in_[e]), r, dims, st);
		dl = *ox_find(im, cn);
		dl.tensor = OX_NONE;
		g[e] = ox_gather_op(im, &dl, &il, k, type,
			      linear ? ox_tmp_name(im, gn[e], sizeof(gn[e]), name) : name);
		if (!g[e])
			return NULL;
	}
	if (!linear)
		return g[0];
	for (int e = 0; e < 2; e++) {
		ox_tmp_name(im, pn[e], sizeof(pn[e]), name);
		if (!ox_binary(im, NPU_OP_MUL, ox_find(im, gn[e]), ox_find(im, wn[e]), pn[e]))
			return NULL;
	}
	return ox_binary(im, NPU_OP_ADD, ox_find(im, pn[0]), ox_find(im, pn[1]), name);
}

/*
 * Resize (opset 10 to 13) and Upsample, modes nearest and linear: one
 * axis at a time, each a gather of the source positions (and for linear
 * a second one and the blend), all indices and weights worked out here.
 */
npurt_status ox_op_resize(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	bool upsample = !strcmp(n->op_type, "Upsample");
	char mb[32], cb[40], nb[32], name[96];
	const char *mode = ox_attr_s(n, "mode", "nearest", mb, sizeof(mb));
	const char *coord = upsample || im->opset < 11 ? "asymmetric" :
			    ox_attr_s(n, "coordinate_transformation_mode", "half_pixel", cb, sizeof(cb));
	const char *nearest = upsample || im->opset < 11 ? "floor" :
			      ox_attr_s(n, "nearest_mode", "round_prefer_floor", nb, sizeof(nb));
	struct ox_val *sc = NULL, *sz = NULL;
	int64_t out[OX_MAX_DIMS], todo = 0, last = -1;
	double scale[OX_MAX_DIMS];
	const char *cur = x->name;
	uint32_t r = x->ndim;
	bool linear;

	if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "bilinear"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "mode \"%s\": nearest and linear only",
			       mode);
	if (strcmp(coord, "half_pixel") && strcmp(coord, "pytorch_half_pixel") &&
	    strcmp(coord, "align_corners") && strcmp(coord, "asymmetric") &&
	    strcmp(coord, "tf_half_pixel_for_nearest"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "coordinate_transformation_mode \"%s\"",
			       coord);
	linear = strcmp(mode, "nearest");
	if (upsample && im->opset < 9) {
		const Onnx__AttributeProto *a = ox_attr(n, "scales");

		if (!a || a->n_floats != r)
			return ox_fail(im, NPURT_ERR_INVALID, "%u scales for rank %u",
				       a ? (unsigned int)a->n_floats : 0, r);
		for (uint32_t k = 0; k < r; k++)
			scale[k] = a->floats[k];
	} else {
		sc = ox_in(im, n, upsample || im->opset < 11 ? 1 : 2);
		sz = upsample || im->opset < 11 ? NULL : ox_in(im, n, 3);
		if (sz && ox_count(sz) == 0)
			sz = NULL;
		if (sc && ox_count(sc) == 0)
			sc = NULL;
		if ((!sc && !sz) || (sc && !sc->is_const) || (sz && !sz->is_const))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "scales or sizes computed, or neither");
		if ((sz && ox_count(sz) != r) || (!sz && ox_count(sc) != r))
			return ox_fail(im, NPURT_ERR_INVALID, "scales or sizes not of rank %u", r);
		for (uint32_t k = 0; k < r; k++)
			scale[k] = sz ? (double)ox_geti(sz, k) / (double)x->dims[k] : ox_getf(sc, k);
	}
	for (uint32_t k = 0; k < r; k++) {
		out[k] = sz ? ox_geti(sz, k) : (int64_t)floor((double)x->dims[k] * scale[k]);
		if (!(scale[k] > 0) || out[k] < 1 || out[k] > (1 << 24))
			return ox_fail(im, NPURT_ERR_INVALID, "axis %u resized to %lld", k,
				       (long long)out[k]);
		if (out[k] != x->dims[k] || scale[k] != 1) {
			todo++;
			last = k;
		}
	}
	if (!todo)
		return ox_done(ox_view(im, x, n->output[0], r, x->dims, x->off, x->stride));
	for (uint32_t k = 0; k < r; k++) {
		struct ox_val *y;

		if (out[k] == ox_find(im, cur)->dims[k] && scale[k] == 1)
			continue;
		y = resize_axis(im, cur, k, out[k], scale[k], linear, coord, nearest,
				(int64_t)k == last ? n->output[0] :
				ox_tmp_name(im, name, sizeof(name), n->output[0]));
		if (!y)
			return npurt_last_status();
		cur = y->name;
	}
	return NPURT_OK;
}
