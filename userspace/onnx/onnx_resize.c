// SPDX-License-Identifier: MIT
/*
 * ONNX's Resize (opsets 10 to 13) and Upsample, nearest, linear and
 * cubic: per axis that changes, GATHER_ELEMENTS of the source positions
 * worked out here, one per tap (1, 2 or 4), and for more than one tap
 * the taps weighted and summed.
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
	if (!strcmp(mode, "tf_half_pixel_for_nearest") || !strcmp(mode, "tf_half_pixel_for_nn"))
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

/* How an axis is resampled: the taps per output position and their weights. */
struct resample {
	int taps;			/* 1 nearest, 2 linear, 4 cubic */
	const char *coord, *nearest;
	double a;			/* cubic_coeff_a */
	bool exclude_outside;
	bool crop;			/* tf_crop_and_resize: this axis's roi */
	double start, end, extrapolation;
};

/* The cubic convolution weights of the 4 taps at distances 1 + t, t, 1 - t, 2 - t. */
static void cubic_weights(double a, double t, double w[4])
{
	double d[4] = { 1 + t, t, 1 - t, 2 - t };

	for (int e = 0; e < 4; e++)
		w[e] = d[e] <= 1 ? ((a + 2) * d[e] - (a + 3)) * d[e] * d[e] + 1 :
		       ((a * d[e] - 5 * a) * d[e] + 8 * a) * d[e] - 4 * a;
}

/*
 * Output position o's taps: source indices (clamped to the axis, as edge
 * padding has them) and weights. Linear clamps the coordinate; cubic
 * takes the 4 positions nearest it (an integral coordinate counts as the
 * right end of the span before it, as ONNX's reference has it), and with
 * exclude_outside drops the taps outside the axis, the rest renormalized.
 */
static bool resample_taps(const struct resample *rs, int64_t o, int64_t in, int64_t out,
			  double scale, int64_t idx[4], double w[4])
{
	double x = resize_coord(rs->coord, o, in, out, scale), sum = 0;
	int64_t x0;

	/* A crop's positions outside the input take the extrapolation value. */
	if (rs->crop) {
		x = out > 1 ? rs->start * (double)(in - 1) +
			      (double)o * (rs->end - rs->start) * (double)(in - 1) / (double)(out - 1) :
			      0.5 * (rs->start + rs->end) * (double)(in - 1);
		if (x < 0 || x > (double)(in - 1)) {
			for (int e = 0; e < rs->taps; e++) {
				idx[e] = 0;
				w[e] = 0;
			}
			return true;
		}
	}

	if (rs->taps == 1) {
		x0 = round_nearest(rs->nearest, x);
		idx[0] = x0 < 0 ? 0 : x0 >= in ? in - 1 : x0;
		w[0] = 1;
		return false;
	}
	if (rs->taps == 2) {
		x = x < 0 ? 0 : x > (double)(in - 1) ? (double)(in - 1) : x;
		idx[0] = (int64_t)floor(x);
		idx[1] = idx[0] + 1 < in ? idx[0] + 1 : in - 1;
		w[0] = 1 - (x - floor(x));
		w[1] = x - floor(x);
		return false;
	}
	x0 = (int64_t)floor(x);
	if ((double)x0 == x)
		x0--;
	cubic_weights(rs->a, x - (double)x0, w);
	for (int e = 0; e < 4; e++) {
		int64_t i = x0 - 1 + e;

		if (rs->exclude_outside && (i < 0 || i >= in))
			w[e] = 0;
		sum += w[e];
		idx[e] = i < 0 ? 0 : i >= in ? in - 1 : i;
	}
	for (int e = 0; rs->exclude_outside && sum != 0 && e < 4; e++)
		w[e] /= sum;
	return false;
}

/*
 * Along axis k of cur (named cn), from in to out positions: a gather of
 * constant indices per tap, and for more than one tap their weights and
 * the sum, into a value called `name`.
 */
static struct ox_val *resize_axis(struct ox_imp *im, const char *cn, uint32_t k, int64_t out,
				  double scale, const struct resample *rs, const char *name)
{
	struct ox_val *c = ox_find(im, cn), *iv[4], *wv[4], *g[4], *acc = NULL, *bias = NULL;
	int64_t in = c->dims[k], dims[OX_MAX_DIMS], cdims[OX_MAX_DIMS], st[OX_MAX_DIMS];
	uint32_t r = c->ndim, t;
	int32_t type = c->type;
	int taps = rs->taps;
	bool weighted = taps > 1 || rs->crop;
	char in_[4][96], wn[4][96], gn[4][96], pn[4][96], an[4][96], bn[96], sn[96];

	memcpy(dims, c->dims, sizeof(dims));
	dims[k] = out;
	for (uint32_t j = 0; j < r; j++) {
		cdims[j] = (int64_t)j == k ? out : 1;
		st[j] = j == k ? 1 : 0;
	}
	for (int e = 0; e < taps; e++) {
		iv[e] = ox_new_const(im, ox_tmp_name(im, in_[e], sizeof(in_[e]), name), OX_INT64, r,
				     cdims);
		wv[e] = iv[e] && weighted ?
			ox_new_const(im, ox_tmp_name(im, wn[e], sizeof(wn[e]), name), type, r,
				     cdims) : NULL;
		if (!iv[e] || (weighted && !wv[e]))
			return NULL;
	}
	if (rs->crop && !(bias = ox_new_const(im, ox_tmp_name(im, bn, sizeof(bn), name), type, r,
					       cdims)))
		return NULL;
	for (int64_t o = 0; o < out; o++) {
		int64_t idx[4];
		double w[4];

		bool outside = resample_taps(rs, o, in, out, scale, idx, w);

		for (int e = 0; e < taps; e++) {
			ox_find(im, in_[e])->i[o] = idx[e];
			if (weighted)
				ox_set(ox_find(im, wn[e]), (uint64_t)o, w[e]);
		}
		if (rs->crop)
			ox_set(ox_find(im, bn), (uint64_t)o, outside ? rs->extrapolation : 0);
	}
	for (int e = 0; e < taps; e++) {
		struct ox_val il, dl;

		if (ox_device(im, ox_find(im, in_[e]), &t) || ox_device(im, ox_find(im, cn), &t))
			return NULL;
		il = ox_layout(ox_find(im, in_[e]), r, dims, st);
		dl = *ox_find(im, cn);
		dl.tensor = OX_NONE;
		g[e] = ox_gather_op(im, &dl, &il, k, type,
				    weighted ? ox_tmp_name(im, gn[e], sizeof(gn[e]), name) : name);
		if (!g[e])
			return NULL;
	}
	if (!weighted)
		return g[0];
	for (int e = 0; e < taps; e++) {
		ox_tmp_name(im, pn[e], sizeof(pn[e]), name);
		if (!ox_binary(im, NPU_OP_MUL, ox_find(im, gn[e]), ox_find(im, wn[e]), pn[e]))
			return NULL;
	}
	acc = ox_find(im, pn[0]);
	/* The sum ends in `name`, or in sn before the crop's extrapolation is added. */
	if (rs->crop)
		ox_tmp_name(im, sn, sizeof(sn), name);
	for (int e = 1; e < taps && acc; e++)
		acc = ox_binary(im, NPU_OP_ADD, acc, ox_find(im, pn[e]), e < taps - 1 ?
				ox_tmp_name(im, an[e], sizeof(an[e]), name) : rs->crop ? sn : name);
	if (taps == 1 && rs->crop)
		snprintf(sn, sizeof(sn), "%s", pn[0]);
	if (!acc || !rs->crop)
		return acc;
	return ox_binary(im, NPU_OP_ADD, ox_find(im, sn), ox_find(im, bn), name);
}

/*
 * Resize (opset 10 to 13) and Upsample, modes nearest, linear and cubic:
 * one axis at a time, each a gather of the source positions per tap and
 * their weighted sum, all indices and weights worked out here.
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
	struct ox_val *sc = NULL, *sz = NULL, *roi = NULL;
	int64_t out[OX_MAX_DIMS], todo = 0, last = -1;
	double roi_v[2 * OX_MAX_DIMS];
	double scale[OX_MAX_DIMS];
	const char *cur = x->name;
	uint32_t r = x->ndim;
	const Onnx__AttributeProto *ca = ox_attr(n, "cubic_coeff_a");
	struct resample rs = { .taps = !strcmp(mode, "nearest") ? 1 : !strcmp(mode, "cubic") ? 4 : 2,
			       .coord = coord, .nearest = nearest,
			       .a = ca && ca->has_f ? ca->f : -0.75,
			       .exclude_outside = ox_attr_i(n, "exclude_outside", 0) != 0 };

	if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "bilinear") &&
	    strcmp(mode, "cubic"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "mode \"%s\": nearest, linear and cubic "
			       "only", mode);
	if (strcmp(coord, "half_pixel") && strcmp(coord, "pytorch_half_pixel") &&
	    strcmp(coord, "align_corners") && strcmp(coord, "asymmetric") &&
	    strcmp(coord, "tf_half_pixel_for_nearest") && strcmp(coord, "tf_half_pixel_for_nn") &&
	    strcmp(coord, "tf_crop_and_resize"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "coordinate_transformation_mode \"%s\"",
			       coord);
	if (!strcmp(coord, "tf_crop_and_resize")) {
		roi = ox_in(im, n, 1);
		if (!roi || !roi->is_const || ox_count(roi) != 2 * (uint64_t)r)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a roi computed, or not of 2 x %u "
				       "values", r);
		rs.crop = true;
		rs.extrapolation = ox_attr_f(n, "extrapolation_value", 0);
	}
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
		if (out[k] != x->dims[k] || scale[k] != 1 ||
		    (rs.crop && (ox_getf(roi, k) != 0 || ox_getf(roi, r + k) != 1))) {
			todo++;
			last = k;
		}
	}
	if (!todo)
		return ox_done(ox_view(im, x, n->output[0], r, x->dims, x->off, x->stride));
	for (uint32_t k = 0; rs.crop && k < 2 * r; k++)
		roi_v[k] = ox_getf(roi, k);
	for (uint32_t k = 0; k < r; k++) {
		struct ox_val *y;

		if (out[k] == ox_find(im, cur)->dims[k] && scale[k] == 1 &&
		    (!rs.crop || (roi_v[k] == 0 && roi_v[r + k] == 1)))
			continue;
		rs.start = rs.crop ? roi_v[k] : 0;
		rs.end = rs.crop ? roi_v[r + k] : 1;
		y = resize_axis(im, cur, k, out[k], scale[k], &rs, (int64_t)k == last ? n->output[0] :
				ox_tmp_name(im, name, sizeof(name), n->output[0]));
		if (!y)
			return npurt_last_status();
		cur = y->name;
	}
	return NPURT_OK;
}
