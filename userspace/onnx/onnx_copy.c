// SPDX-License-Identifier: MIT
/*
 * ONNX nodes that are device copies: Concat, Pad (a fill and a copy, or
 * a copy and its border's copies: edge, reflect),
 * Tile, Trilu, DepthToSpace and SpaceToDepth, Gather of constant indices
 * from a computed tensor; and EyeLike, a constant. Copies are TRANSPOSE
 * ops of the identity between strided views, so they take any dtype.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "npu_opdefs.h"
#include "onnx.h"

/* One device op copying layout src to layout dst (values not in the table). */
static npurt_status copy_layout(struct ox_imp *im, struct ox_val *src, struct ox_val *dst)
{
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_TRANSPOSE,
				  .perm = OX_PERM_IDENTITY };
	uint32_t t;

	if (ox_device(im, src, &node.in[0]) || ox_device(im, dst, &t))
		return npurt_last_status();
	return ox_add(im, &node, t);
}

/* Copy x into the view of `out` at element offset `off` with out's strides. */
static npurt_status copy_into(struct ox_imp *im, struct ox_val *x, const struct ox_val *out,
			      uint64_t off)
{
	struct ox_val dst = *out;

	dst.ndim = x->ndim;
	memcpy(dst.dims, x->dims, sizeof(dst.dims));
	dst.off = off;
	dst.tensor = OX_NONE;
	return copy_layout(im, x, &dst);
}

/* Trilu: zeros, then the kept stretch of each row copied, every batch at once. */
#define OX_MAX_ROWS	256

npurt_status ox_op_trilu(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *kv = ox_in(im, n, 1), *y;
	bool upper = ox_attr_i(n, "upper", 1);
	const char *xn = x->name;
	uint32_t r = x->ndim;
	int64_t k = 0, rows, cols;
	npurt_status st;

	if (kv && !kv->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a computed k");
	if (kv)
		k = ox_geti(kv, 0);
	if (r < 2)
		return ox_fail(im, NPURT_ERR_INVALID, "rank %u, at least 2", r);
	rows = x->dims[r - 2];
	cols = x->dims[r - 1];
	if (rows > OX_MAX_ROWS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%lld rows, at most %d", (long long)rows,
			       OX_MAX_ROWS);
	y = ox_fresh(im, n->output[0], x->type, r, x->dims);
	if (!y)
		return npurt_last_status();
	st = npurt_graph_fill(im->g, 0, y->base, 0);
	if (st)
		return ox_fail(im, st, "%s", npurt_last_error());
	im->info.device_ops++;
	/* Clamped so that huge k saturates instead of overflowing. */
	k = k > cols ? cols : k < -rows ? -rows : k;
	for (int64_t i = 0; i < rows; i++) {
		int64_t lo = upper ? i + k : 0, hi = upper ? cols : i + k + 1;
		struct ox_val src, dst;

		lo = lo < 0 ? 0 : lo;
		hi = hi > cols ? cols : hi;
		if (lo >= hi)
			continue;
		src = *ox_find(im, xn);
		dst = *ox_find(im, n->output[0]);
		src.tensor = dst.tensor = OX_NONE;
		src.dims[r - 2] = dst.dims[r - 2] = 1;
		src.dims[r - 1] = dst.dims[r - 1] = hi - lo;
		src.off += (uint64_t)(i * src.stride[r - 2] + lo * src.stride[r - 1]);
		dst.off += (uint64_t)(i * dst.stride[r - 2] + lo * dst.stride[r - 1]);
		st = copy_layout(im, &src, &dst);
		if (st)
			return st;
	}
	return NPURT_OK;
}

/* Tile: a copy of x into each of the repeats' places in the output. */
#define OX_MAX_TILES	64

npurt_status ox_op_tile(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t rep[OX_MAX_DIMS], dims[OX_MAX_DIMS], count = 1;
	const char *xn = x->name;
	npurt_status st;
	int cnt = ox_ints(im, n, 1, NULL, rep, OX_MAX_DIMS, &st);

	if (st)
		return st;
	if (cnt != (int)x->ndim)
		return ox_fail(im, NPURT_ERR_INVALID, "%d repeats for rank %u", cnt, x->ndim);
	for (int k = 0; k < cnt; k++)
		if (rep[k] < 1 || rep[k] > (1 << 24))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "repeat %lld (an empty output, or "
				       "past 2^24)", (long long)rep[k]);
	for (int k = 0; k < cnt; k++) {
		/* Past that many copies, a gather per axis costs less. */
		if (rep[k] > OX_MAX_TILES || count * rep[k] > OX_MAX_TILES)
			return ox_tile_gathers(im, n, x, rep);
		count *= rep[k];
		dims[k] = x->dims[k] * rep[k];
	}
	if (!ox_fresh(im, n->output[0], x->type, x->ndim, dims))
		return npurt_last_status();
	for (int64_t e = 0; e < count; e++) {
		struct ox_val *y = ox_find(im, n->output[0]);
		uint64_t off = 0;
		int64_t rest = e;

		x = ox_find(im, xn);
		for (int k = cnt; k-- > 0;) {
			off += (uint64_t)(rest % rep[k] * x->dims[k] * y->stride[k]);
			rest /= rep[k];
		}
		st = copy_into(im, x, y, off);
		if (st)
			return st;
	}
	return NPURT_OK;
}

/* EyeLike: ones on diagonal k, whatever x holds: a constant of x's shape. */
npurt_status ox_op_eye_like(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t k = ox_attr_i(n, "k", 0), type = ox_attr_i(n, "dtype", x->type), r, c;
	struct ox_val *v;

	if (x->ndim != 2)
		return ox_fail(im, NPURT_ERR_INVALID, "rank %u, not 2", x->ndim);
	r = x->dims[0];
	c = x->dims[1];
	v = ox_new_const(im, n->output[0], (int32_t)type, 2, ox_find(im, n->input[0])->dims);
	if (!v)
		return npurt_last_status();
	for (int64_t i = 0; i < r; i++)
		if (i + k >= 0 && i + k < c)
			ox_set(v, (uint64_t)(i * c + i + k), 1);
	im->info.folded++;
	return NPURT_OK;
}

/*
 * DepthToSpace and SpaceToDepth: blocksize^2 copies of [N, C', H, W]
 * layouts, each channel block to (or from) its place in the blocks of
 * the image.
 */
npurt_status ox_op_depth_space(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	bool to_space = !strcmp(n->op_type, "DepthToSpace");
	const Onnx__AttributeProto *mode = ox_attr(n, "mode");
	bool crd = mode && mode->has_s && mode->s.len == 3 && !memcmp(mode->s.data, "CRD", 3);
	int64_t b = ox_attr_i(n, "blocksize", 0), dims[4], c;
	const char *xn = x->name;
	struct ox_val *y;

	if (x->ndim != 4 || b < 1 || b > 16)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "rank %u, blocksize %lld", x->ndim,
			       (long long)b);
	if (to_space ? x->dims[1] % (b * b) : x->dims[2] % b || x->dims[3] % b)
		return ox_fail(im, NPURT_ERR_INVALID, "the blocks do not divide the input");
	c = to_space ? x->dims[1] / (b * b) : x->dims[1];
	dims[0] = x->dims[0];
	dims[1] = to_space ? c : c * b * b;
	dims[2] = to_space ? x->dims[2] * b : x->dims[2] / b;
	dims[3] = to_space ? x->dims[3] * b : x->dims[3] / b;
	y = ox_fresh(im, n->output[0], x->type, 4, dims);
	if (!y)
		return npurt_last_status();
	x = ox_find(im, xn);	/* the table moved */
	for (int64_t i = 0; i < b; i++)
		for (int64_t j = 0; j < b; j++) {
			struct ox_val deep = *ox_find(im, to_space ? xn : n->output[0]);
			struct ox_val flat = *ox_find(im, to_space ? n->output[0] : xn);
			const int64_t h = to_space ? x->dims[2] : dims[2];
			const int64_t w = to_space ? x->dims[3] : dims[3];
			npurt_status st;

			/* deep: the channels of block (i, j); flat: its pixels */
			deep.tensor = flat.tensor = OX_NONE;
			if (crd && to_space) {
				deep.off += (uint64_t)((i * b + j) * deep.stride[1]);
				deep.stride[1] *= b * b;
			} else {
				deep.off += (uint64_t)((i * b + j) * c * deep.stride[1]);
			}
			deep.dims[1] = c;
			flat.off += (uint64_t)(i * flat.stride[2] + j * flat.stride[3]);
			flat.stride[2] *= b;
			flat.stride[3] *= b;
			deep.dims[2] = flat.dims[2] = h;
			deep.dims[3] = flat.dims[3] = w;
			flat.dims[1] = c;
			st = to_space ? copy_layout(im, &deep, &flat) : copy_layout(im, &flat, &deep);
			if (st)
				return st;
			x = ox_find(im, xn);
		}
	return NPURT_OK;
}

npurt_status ox_op_concat(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int a = ox_axis(ox_attr_i(n, "axis", 0), x->ndim);
	int64_t dims[OX_MAX_DIMS], at = 0;
	struct ox_val *y;

	if (a < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "axis");
	memcpy(dims, x->dims, sizeof(dims));
	dims[a] = 0;
	for (size_t k = 0; k < n->n_input; k++) {
		struct ox_val *v = ox_in(im, n, k);

		if (!v || v->ndim != x->ndim || v->type != x->type)
			return ox_fail(im, NPURT_ERR_INVALID, "inputs of other ranks or types");
		for (uint32_t j = 0; j < x->ndim; j++)
			if (j != (uint32_t)a && v->dims[j] != x->dims[j])
				return ox_fail(im, NPURT_ERR_INVALID, "inputs of other shapes");
		dims[a] += v->dims[a];
	}
	y = ox_fresh(im, n->output[0], x->type, x->ndim, dims);
	if (!y)
		return npurt_last_status();
	for (size_t k = 0; k < n->n_input; k++) {
		struct ox_val *v = ox_in(im, n, k);
		npurt_status st;

		if (!ox_count(v))
			continue;
		y = ox_find(im, n->output[0]);
		st = copy_into(im, v, y, (uint64_t)(at * y->stride[a]));
		if (st)
			return st;
		at += ox_find(im, n->input[k])->dims[a];
	}
	return NPURT_OK;
}

/* Copies a reflect Pad may make at most (one per padded position). */
#define OX_MAX_REFLECT	64

/*
 * The border of dimension k of y (x padded by `pads`) from what is inside
 * it: along the dimensions before k the whole (already padded) extent,
 * along those after it the inside only (padded after). edge: each side's
 * positions are one copy of the nearest inside slice, broadcast (stride
 * 0); reflect: one copy per position, of the slice mirrored about the
 * edge (the edge itself not repeated).
 */
static npurt_status pad_border(struct ox_imp *im, const Onnx__NodeProto *n, uint32_t k,
			       const int64_t *pads, const int64_t *xdims, bool reflect)
{
	uint32_t r = ox_find(im, n->output[0])->ndim;
	int64_t p0 = pads[k], p1 = pads[k + r], in = xdims[k];

	for (int side = 0; side < 2; side++) {
		int64_t cnt = side ? p1 : p0, first = side ? p0 + in : 0;

		for (int64_t j = 0; j < (reflect ? cnt : cnt ? 1 : 0); j++) {
			struct ox_val *y = ox_find(im, n->output[0]), src = *y, dst;
			int64_t at = first + (reflect ? j : 0), from;
			npurt_status st;

			if (reflect)	/* mirrored about the first or last inside index */
				from = side ? 2 * (p0 + in - 1) - at : 2 * p0 - at;
			else
				from = side ? p0 + in - 1 : p0;
			src.tensor = OX_NONE;
			for (uint32_t d = k + 1; d < r; d++) {	/* not padded yet: the inside */
				src.dims[d] = xdims[d];
				src.off += (uint64_t)(pads[d] * y->stride[d]);
			}
			src.dims[k] = reflect ? 1 : cnt;
			dst = src;
			src.off += (uint64_t)(from * y->stride[k]);
			dst.off += (uint64_t)(at * y->stride[k]);
			if (!reflect)
				src.stride[k] = 0;
			st = copy_layout(im, &src, &dst);
			if (st)
				return st;
		}
	}
	return NPURT_OK;
}

/*
 * The word a fill repeats to pad y with a constant (f, or i for an
 * integer type): the value's bytes as y's dtype holds it, repeated to 32
 * bits. A fill writes whole words, so y must take a multiple of 4 bytes,
 * and an 8-byte value must be two equal halves (0 and -1 are).
 */
static npurt_status pad_word(struct ox_imp *im, const struct ox_val *y, double f, int64_t i,
			     uint32_t *word)
{
	size_t size = npurt_dtype_size(ox_dtype(y->type));
	float f32 = (float)f;
	uint64_t bits;
	uint32_t w;

	if (ox_count(y) * size % 4)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a constant pad into %llu bytes of %s: "
			       "the device fills whole 32-bit words",
			       (unsigned long long)(ox_count(y) * size), ox_type_name(y->type));
	switch (y->type) {
	case OX_FLOAT:
		memcpy(&w, &f32, 4);
		bits = w;
		break;
	case OX_FLOAT16:
		bits = npu_f32_to_f16(npu_f64_to_f32_odd(f));
		break;
	case OX_BFLOAT16:
		bits = npu_f32_to_bf16(npu_f64_to_f32_odd(f));
		break;
	case OX_DOUBLE:
		memcpy(&bits, &f, 8);
		break;
	case OX_BOOL:
		bits = i != 0;
		break;
	default:			/* an integer keeps its width's low bits */
		bits = (uint64_t)i;
		break;
	}
	if (size == 8 && (uint32_t)bits != bits >> 32)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a pad value of %g in %s: the device "
			       "fills 32-bit words, and its halves differ", f,
			       ox_type_name(y->type));
	if (size == 1)
		*word = (uint32_t)(bits & 0xff) * 0x01010101u;
	else if (size == 2)
		*word = (uint32_t)(bits & 0xffff) * 0x00010001u;
	else
		*word = (uint32_t)bits;
	return NPURT_OK;
}

/*
 * A reflect Pad of more positions than copies are worth: along each padded
 * dimension in turn, one Gather of the positions every output position
 * reads (the inside, and the border mirrored about the edge).
 */
static npurt_status pad_reflect_gathers(struct ox_imp *im, const Onnx__NodeProto *n,
					const int64_t *pads, uint32_t r)
{
	char names[2][96], idxn[96];
	const char *cur = n->input[0];
	uint32_t last = 0;

	for (uint32_t k = 0; k < r; k++)
		if (pads[k] || pads[k + r])
			last = k;
	for (uint32_t k = 0; k <= last; k++) {
		const char *out = k == last ? n->output[0] :
				  ox_tmp_name(im, names[k & 1], sizeof(names[k & 1]), n->output[0]);
		int64_t d = ox_find(im, cur)->dims[k], total = d + pads[k] + pads[k + r];
		struct ox_val *idx;
		npurt_status st;

		if (!pads[k] && !pads[k + r])
			continue;
		idx = ox_positions(im, n->output[0], total, idxn, sizeof(idxn));
		if (!idx)
			return npurt_last_status();
		for (int64_t o = 0; o < total; o++) {
			int64_t at = o - pads[k];

			idx->i[o] = at < 0 ? -at : at >= d ? 2 * (d - 1) - at : at;
		}
		st = ox_gather_at(im, n, cur, idxn, k, out);
		if (st)
			return st;
		cur = out;
	}
	return NPURT_OK;
}

npurt_status ox_op_pad(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	const Onnx__AttributeProto *mode = ox_attr(n, "mode");
	int64_t pads[2 * OX_MAX_DIMS], dims[OX_MAX_DIMS], xdims[OX_MAX_DIMS], copies = 0;
	double value = ox_attr_f(n, "value", 0.0f);
	int64_t ivalue;
	bool edge = false, reflect = false;
	struct ox_val *y, *cv;
	uint64_t off = 0;
	npurt_status st;
	uint32_t bits = 0;
	int cnt;

	if (mode && mode->has_s) {
		edge = mode->s.len == 4 && !memcmp(mode->s.data, "edge", 4);
		reflect = mode->s.len == 7 && !memcmp(mode->s.data, "reflect", 7);
		if (!edge && !reflect && (mode->s.len != 8 || memcmp(mode->s.data, "constant", 8)))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "mode \"%.*s\": constant, edge "
				       "and reflect only", (int)(mode->s.len < 16 ? mode->s.len : 16),
				       (const char *)mode->s.data);
	}
	cnt = ox_ints(im, n, 1, im->opset < 11 ? "pads" : NULL, pads, 2 * OX_MAX_DIMS, &st);
	if (st)
		return st;
	if (cnt != 2 * (int)x->ndim)
		return ox_fail(im, NPURT_ERR_INVALID, "%d pads for rank %u", cnt, x->ndim);
	ivalue = (int64_t)value;
	cv = im->opset >= 11 ? ox_in(im, n, 2) : NULL;
	if (cv) {
		if (!cv->is_const)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a computed pad value");
		value = ox_getf(cv, 0);
		ivalue = ox_geti(cv, 0);
	}
	for (uint32_t k = 0; k < x->ndim; k++) {
		if (pads[k] < 0 || pads[k + x->ndim] < 0)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "negative pads (crops)");
		if (pads[k] > (1 << 30) || pads[k + x->ndim] > (1 << 30))
			return ox_fail(im, NPURT_ERR_INVALID, "pads of %lld", (long long)pads[k]);
		if (reflect && (pads[k] >= x->dims[k] || pads[k + x->ndim] >= x->dims[k]))
			return ox_fail(im, NPURT_ERR_INVALID, "reflect pads of %lld and %lld on a "
				       "dimension of %lld", (long long)pads[k],
				       (long long)pads[k + x->ndim], (long long)x->dims[k]);
		copies += pads[k] + pads[k + x->ndim];
		dims[k] = x->dims[k] + pads[k] + pads[k + x->ndim];
		xdims[k] = x->dims[k];
	}
	if (reflect && copies > OX_MAX_REFLECT)
		return pad_reflect_gathers(im, n, pads, x->ndim);
	y = ox_fresh(im, n->output[0], x->type, x->ndim, dims);
	if (!y)
		return npurt_last_status();
	if (!edge && !reflect) {
		/* the border's copies fill every padded element of the other modes */
		st = pad_word(im, y, value, ivalue, &bits);
		if (st)
			return st;
		st = npurt_graph_fill(im->g, 0, y->base, bits);
		if (st)
			return ox_fail(im, st, "%s", npurt_last_error());
		im->info.device_ops++;
	}
	for (uint32_t k = 0; k < y->ndim; k++)
		off += (uint64_t)(pads[k] * y->stride[k]);
	st = copy_into(im, ox_find(im, n->input[0]), ox_find(im, n->output[0]), off);
	for (uint32_t k = 0; !st && (edge || reflect) && k < y->ndim; k++)
		st = pad_border(im, n, k, pads, xdims, reflect);
	return st;
}

npurt_status ox_gather_copies(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      int axis, struct ox_val *idx)
{
	int64_t dims[OX_MAX_DIMS];
	uint64_t cnt = ox_count(idx);
	struct ox_val *y;

	if (cnt > 64)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%llu indices into a computed tensor",
			       (unsigned long long)cnt);
	memcpy(dims, x->dims, sizeof(dims));
	dims[axis] = (int64_t)cnt;
	y = ox_fresh(im, n->output[0], x->type, x->ndim, dims);
	if (!y)
		return npurt_last_status();
	for (uint64_t j = 0; j < cnt; j++) {
		struct ox_val src;
		int64_t i;
		npurt_status st;

		x = ox_find(im, n->input[0]);
		i = ox_geti(ox_find(im, n->input[1]), j);
		i += i < 0 ? x->dims[axis] : 0;
		src = *x;
		src.dims[axis] = 1;
		src.off += (uint64_t)(i * x->stride[axis]);
		src.tensor = OX_NONE;
		y = ox_find(im, n->output[0]);
		st = copy_into(im, &src, y, j * (uint64_t)y->stride[axis]);
		if (st)
			return st;
	}
	return NPURT_OK;
}
