// SPDX-License-Identifier: MIT
/*
 * Operators that index by constant positions (Compress, GatherND,
 * ScatterElements, Scatter, ScatterND, ReverseSequence): the positions are
 * worked out here, at import, and the operator becomes gathers of them
 * (and for a scatter, selects and its reduction), written as ONNX nodes
 * for the importer to map (ox_emit()). Positions the device computes
 * would make an output's size or its writes data dependent: refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

/* An int64 (or bool) constant of the given shape, its name into `name`; NULL after ox_fail(). */
static struct ox_val *positions(struct ox_imp *im, int32_t type, uint32_t nd, const int64_t *dims,
				ox_name name)
{
	return ox_new_const(im, ox_tmp_name(im, name, sizeof(ox_name), "index"), type, nd, dims);
}

/* x reshaped to dims[0..nd), into a new value named in out. */
static npurt_status reshape(struct ox_imp *im, const char *x, const int64_t *dims, int64_t nd,
			    ox_name out)
{
	ox_name sn, in;
	npurt_status st = ox_int_const(im, dims, nd, false, sn);

	snprintf(in, sizeof(in), "%s", x);
	return st ? st : ox_emit(im, "Reshape", (const char *const[]){ in, sn }, 2,
				 ox_tmp_name(im, out, sizeof(ox_name), "index"), NULL);
}

/* op(x, idx) along `axis` into out (Gather, GatherElements). */
static npurt_status gather(struct ox_imp *im, const char *op, const char *x, const char *idx,
			   int64_t axis, const char *out)
{
	Onnx__AttributeProto aa;
	ox_name xn, in;

	snprintf(xn, sizeof(xn), "%s", x);
	snprintf(in, sizeof(in), "%s", idx);
	ox_attr_ints(&aa, "axis", &axis, 1, false);
	return ox_emit(im, op, (const char *const[]){ xn, in }, 2, out, &aa);
}

static uint64_t count_of(const int64_t *dims, uint32_t nd)
{
	uint64_t c = 1;

	for (uint32_t k = 0; k < nd; k++)
		c *= (uint64_t)dims[k];
	return c;
}

/* Compress(x, condition[, axis]): the positions the condition keeps, gathered. */
npurt_status ox_op_compress(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *c = ox_in(im, n, 1), *idx;
	bool flat = !ox_attr(n, "axis");
	int axis = flat ? 0 : ox_axis(ox_attr_i(n, "axis", 0), x->ndim);
	int64_t len, kept = 0, all = -1;
	ox_name xn, in, fn;
	npurt_status st;

	if (!c || !c->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "condition computed: the output's size "
			       "would be data dependent");
	if (axis < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "axis %lld of rank %u",
			       (long long)ox_attr_i(n, "axis", 0), x->ndim);
	len = flat ? (int64_t)ox_count(x) : x->dims[axis];
	for (int64_t k = 0; k < len && (uint64_t)k < ox_count(c); k++)
		kept += ox_geti(c, (uint64_t)k) != 0;
	if (!kept)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "the condition keeps nothing (an empty "
			       "output)");
	snprintf(xn, sizeof(xn), "%s", x->name);
	idx = positions(im, OX_INT64, 1, &kept, in);
	if (!idx)
		return npurt_last_status();
	c = ox_in(im, n, 1);
	kept = 0;
	for (int64_t k = 0; k < len && (uint64_t)k < ox_count(c); k++)
		if (ox_geti(c, (uint64_t)k))
			idx->i[kept++] = k;
	if (flat) {
		st = reshape(im, xn, &all, 1, fn);
		if (st)
			return st;
		snprintf(xn, sizeof(xn), "%s", fn);
	}
	return gather(im, "Gather", xn, in, axis, n->output[0]);
}

/*
 * GatherND(data, indices): each index tuple (after batch_dims leading
 * dimensions both share) is a position among data's first dimensions,
 * made one linear position into data with those dimensions merged.
 */
npurt_status ox_op_gathernd(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *ix = ox_in(im, n, 1), *lin;
	int64_t b = ox_attr_i(n, "batch_dims", 0), m, q, r = x->ndim, dims[OX_MAX_DIMS];
	int64_t flat[OX_MAX_DIMS], lead = 1, tuples, per_batch = 1, inner = 1;
	ox_name xn, ln, fn;
	npurt_status st;

	if (!ix || !ix->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "indices computed on the device");
	q = ix->ndim;
	m = q ? ix->dims[q - 1] : 0;
	if (q < 1 || b < 0 || b >= q || m < 1 || b + m > r)
		return ox_fail(im, NPURT_ERR_INVALID, "indices of rank %lld with %lld per tuple, "
			       "batch_dims %lld, data of rank %lld", (long long)q, (long long)m,
			       (long long)b, (long long)r);
	for (int64_t k = 0; k < b; k++)
		if (ix->dims[k] != x->dims[k])
			return ox_fail(im, NPURT_ERR_INVALID, "batch dimension %lld differs", (long long)k);
	for (int64_t k = 0; k < b + m; k++)
		lead *= x->dims[k];
	for (int64_t k = b; k < b + m; k++)
		per_batch *= x->dims[k];
	for (int64_t k = 0; k < q - 1; k++)
		dims[k] = ix->dims[k];
	tuples = (int64_t)count_of(ix->dims, (uint32_t)q - 1);
	for (int64_t k = b; k < q - 1; k++)
		inner *= ix->dims[k];
	snprintf(xn, sizeof(xn), "%s", x->name);
	flat[0] = lead;
	for (int64_t k = b + m; k < r; k++)
		flat[1 + k - b - m] = x->dims[k];
	lin = positions(im, OX_INT64, (uint32_t)q - 1, dims, ln);
	if (!lin)
		return npurt_last_status();
	ix = ox_in(im, n, 1);
	x = ox_find(im, xn);
	for (int64_t t = 0; t < tuples; t++) {
		int64_t pos = 0;

		for (int64_t j = 0; j < m; j++) {
			int64_t d = x->dims[b + j], v = ox_geti(ix, (uint64_t)(t * m + j));

			v = v < 0 ? v + d : v;
			if (v < 0 || v >= d)
				return ox_fail(im, NPURT_ERR_INVALID, "index %lld out of [0, %lld)",
					       (long long)ox_geti(ix, (uint64_t)(t * m + j)),
					       (long long)d);
			pos = pos * d + v;
		}
		lin->i[t] = (t / inner) * per_batch + pos;
	}
	st = reshape(im, xn, flat, 1 + r - b - m, fn);
	return st ? st : gather(im, "Gather", fn, ln, 0, n->output[0]);
}

/*
 * ScatterElements, Scatter (opsets before 11) and ScatterND: for each of
 * data's positions, which updates land there, in order. With no
 * reduction the last one wins: one gather of the updates and a select.
 * With add or mul each round of updates landing is a gather, a select
 * against 0 or 1, and the reduction into the running result.
 */
npurt_status ox_op_scatter(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	bool nd = !strcmp(n->op_type, "ScatterND");
	struct ox_val *ix = ox_in(im, n, 1), *u = ox_in(im, n, 2), *src, *mask;
	char rb[16];
	const char *red = ox_attr_s(n, "reduction", "none", rb, sizeof(rb));
	int axis = nd ? 0 : ox_axis(ox_attr_i(n, "axis", 0), x->ndim);
	uint64_t cnt = ox_count(x), nu, inner = 1;
	int64_t dims[OX_MAX_DIMS], all = -1, m = 0;
	uint32_t r = x->ndim, rounds = 0, *hits = NULL;
	int64_t *first = NULL;
	int32_t type = x->type;
	ox_name xn, un, fn, sn, mn, gn, wn, cur, next, zn;
	npurt_status st = NPURT_OK;
	bool none = !strcmp(red, "none"), add = !strcmp(red, "add");

	if (!ix || !u || !ix->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "indices computed on the device");
	if (!none && !add && strcmp(red, "mul"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "reduction \"%s\"", red);
	if (axis < 0 || cnt > (1u << 22))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "axis %lld, or data of %llu elements",
			       (long long)ox_attr_i(n, "axis", 0), (unsigned long long)cnt);
	nu = ox_count(u);
	if (nd) {
		m = ix->ndim ? ix->dims[ix->ndim - 1] : 0;
		for (uint32_t k = (uint32_t)m; k < r; k++)
			inner *= (uint64_t)x->dims[k];
		if (m < 1 || m > r || nu != count_of(ix->dims, ix->ndim - 1) * inner)
			return ox_fail(im, NPURT_ERR_INVALID, "indices and updates do not fit data");
	} else if (ix->ndim != r || u->ndim != r || ox_count(ix) != nu) {
		return ox_fail(im, NPURT_ERR_INVALID, "indices, updates and data of other ranks");
	}
	memcpy(dims, x->dims, sizeof(dims));
	snprintf(xn, sizeof(xn), "%s", x->name);
	snprintf(un, sizeof(un), "%s", u->name);
	/* Where each update lands (data's linear position), in order. */
	first = malloc(nu * sizeof(*first));
	hits = calloc(cnt, sizeof(*hits));
	if (!first || !hits) {
		st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		goto out;
	}
	for (uint64_t p = 0; p < nu; p++) {
		int64_t at = 0;

		if (nd) {
			uint64_t t = p / inner;

			for (int64_t j = 0; j < m; j++) {
				int64_t d = dims[j], v = ox_geti(ix, t * (uint64_t)m + (uint64_t)j);

				v = v < 0 ? v + d : v;
				if (v < 0 || v >= d)
					goto bad_index;
				at = at * d + v;
			}
			at = at * (int64_t)inner + (int64_t)(p % inner);
		} else {
			uint64_t rest = p;

			/* p's coordinates in updates' shape, with indices' value on the axis. */
			for (int k = (int)r - 1; k >= 0; k--) {
				int64_t c = (int64_t)(rest % (uint64_t)u->dims[k]), v;

				rest /= (uint64_t)u->dims[k];
				if (k == axis) {
					v = ox_geti(ix, p);
					c = v < 0 ? v + dims[k] : v;
				}
				if (c < 0 || c >= dims[k])
					goto bad_index;
				at += c * (int64_t)count_of(dims + k + 1, r - (uint32_t)k - 1);
			}
		}
		first[p] = at;
		hits[at]++;
		if (hits[at] > rounds)
			rounds = hits[at];
	}
	if (none)
		rounds = rounds ? 1 : 0;
	/* A round costs constants of data's size: a few updates per position at most. */
	if (rounds > 16) {
		st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "%u updates land on one position (a "
			     "scatter op is missing)", rounds);
		goto out;
	}
	st = reshape(im, un, &all, 1, fn);
	snprintf(cur, sizeof(cur), "%s", xn);
	if (!st && !none && !ox_scalar_named(im, type, add ? 0 : 1, zn))
		st = npurt_last_status();
	for (uint32_t round = 0; !st && round < rounds; round++) {
		/* Round j: the j-th update landing on each position (the last, for none). */
		int64_t c = (int64_t)cnt;

		/* 1-D, so a gather of constant updates folds; reshaped after. */
		src = positions(im, OX_INT64, 1, &c, sn);
		mask = src ? positions(im, OX_BOOL, r, dims, mn) : NULL;
		if (!mask) {
			st = npurt_last_status();
			break;
		}
		memset(hits, 0, cnt * sizeof(*hits));
		for (uint64_t p = 0; p < nu; p++) {
			uint64_t at = (uint64_t)first[p];

			if (none || hits[at]++ == round) {
				ox_find(im, sn)->i[at] = (int64_t)p;
				ox_find(im, mn)->i[at] = 1;
			}
		}
		st = gather(im, "Gather", fn, sn, 0, ox_tmp_name(im, wn, sizeof(wn), "index"));
		if (!st)
			st = reshape(im, wn, dims, r, gn);
		if (st)
			break;
		if (none) {
			st = ox_emit(im, "Where", (const char *const[]){ mn, gn, cur }, 3, n->output[0],
				     NULL);
			break;
		}
		st = ox_emit(im, "Where", (const char *const[]){ mn, gn, zn }, 3,
			     ox_tmp_name(im, wn, sizeof(wn), "index"), NULL);
		if (!st)
			st = ox_emit(im, add ? "Add" : "Mul", (const char *const[]){ cur, wn }, 2,
				     round + 1 == rounds ? n->output[0] :
				     ox_tmp_name(im, next, sizeof(next), "index"), NULL);
		if (round + 1 < rounds)
			snprintf(cur, sizeof(cur), "%s", next);
	}
	/* Nothing lands anywhere: the data itself. */
	if (!st && !rounds)
		st = ox_emit(im, "Identity", (const char *const[]){ xn }, 1, n->output[0], NULL);
out:
	free(first);
	free(hits);
	return st;
bad_index:
	st = ox_fail(im, NPURT_ERR_INVALID, "an index out of data's dimensions");
	goto out;
}

/*
 * ReverseSequence: along the time axis, each batch's first sequence_lens
 * positions reversed and the rest kept: one GatherElements of positions
 * worked out here.
 */
npurt_status ox_op_reverse_sequence(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *lens = ox_in(im, n, 1), *idx;
	int ta = ox_axis(ox_attr_i(n, "time_axis", 0), x->ndim);
	int ba = ox_axis(ox_attr_i(n, "batch_axis", 1), x->ndim);
	int64_t dims[OX_MAX_DIMS];
	uint32_t r = x->ndim;
	uint64_t cnt = ox_count(x);
	ox_name xn, in;

	if (!lens || !lens->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "sequence_lens computed on the device");
	if (ta < 0 || ba < 0 || ta == ba || r < 2 || ox_count(lens) != (uint64_t)x->dims[ba])
		return ox_fail(im, NPURT_ERR_INVALID, "time_axis, batch_axis or sequence_lens");
	memcpy(dims, x->dims, sizeof(dims));
	snprintf(xn, sizeof(xn), "%s", x->name);
	idx = positions(im, OX_INT64, r, dims, in);
	if (!idx)
		return npurt_last_status();
	lens = ox_in(im, n, 1);
	for (uint64_t p = 0; p < cnt; p++) {
		uint64_t rest = p;
		int64_t t = 0, b = 0, len;

		for (int k = (int)r - 1; k >= 0; k--) {
			int64_t c = (int64_t)(rest % (uint64_t)dims[k]);

			rest /= (uint64_t)dims[k];
			t = k == ta ? c : t;
			b = k == ba ? c : b;
		}
		len = ox_geti(lens, (uint64_t)b);
		len = len < 0 ? 0 : len > dims[ta] ? dims[ta] : len;
		ox_find(im, in)->i[p] = t < len ? len - 1 - t : t;
	}
	return gather(im, "GatherElements", xn, in, ta, n->output[0]);
}

/* Tile as a Gather per repeated axis of the positions it visits (j mod d). */
npurt_status ox_tile_gathers(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			     const int64_t *rep)
{
	uint32_t r = x->ndim, last = 0;
	int64_t dims[OX_MAX_DIMS];
	ox_name cur, in, nx;
	npurt_status st = NPURT_OK;

	memcpy(dims, x->dims, sizeof(dims));
	snprintf(cur, sizeof(cur), "%s", x->name);
	for (uint32_t k = 0; k < r; k++)
		if (rep[k] > 1)
			last = k;
	for (uint32_t k = 0; k < r && !st; k++) {
		int64_t len;
		struct ox_val *idx;

		if (rep[k] == 1)
			continue;
		/* Checked before the product, which could overflow. */
		if (rep[k] < 1 || dims[k] > (1 << 24) / rep[k])
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "axis %u of %lld tiled %lld times",
				       k, (long long)dims[k], (long long)rep[k]);
		len = dims[k] * rep[k];
		idx = positions(im, OX_INT64, 1, &len, in);
		if (!idx)
			return npurt_last_status();
		for (int64_t j = 0; j < len; j++)
			idx->i[j] = j % dims[k];
		st = gather(im, "Gather", cur, in, k, k == last ? n->output[0] :
			    ox_tmp_name(im, nx, sizeof(nx), "tile"));
		if (k != last)
			snprintf(cur, sizeof(cur), "%s", nx);
	}
	return st;
}

/*
 * Det of matrices of at most 4 x 4 (the last two axes): Leibniz's sum
 * over the permutations, each term a product of elements picked by
 * constant positions (views), the odd ones subtracted.
 */
npurt_status ox_op_det(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	uint32_t r = x->ndim;
	int64_t m = r >= 2 ? x->dims[r - 1] : 0, dims[OX_MAX_DIMS], perm[4] = { 0, 1, 2, 3 };
	ox_name xn, flat, el[16], term, nx, sum;
	npurt_status st;
	bool first = true;

	if (r < 2 || m != x->dims[r - 2] || m < 1 || m > 4 || !ox_is_float(x->type))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "matrices of %lld x %lld (%s): square, "
			       "float, at most 4 x 4", (long long)(r >= 2 ? x->dims[r - 2] : 0),
			       (long long)m, ox_type_name(x->type));
	memcpy(dims, x->dims, sizeof(dims));
	dims[r - 2] = m * m;
	snprintf(xn, sizeof(xn), "%s", x->name);
	st = reshape(im, xn, dims, r - 1, flat);
	for (int64_t e = 0; !st && e < m * m; e++) {
		ox_name ix;

		st = ox_int_const(im, &e, 1, true, ix);
		if (!st)
			st = gather(im, "Gather", flat, ix, (int64_t)r - 2,
				    ox_tmp_name(im, el[e], sizeof(el[e]), "det"));
	}
	/* Permutations in lexicographic order; a term's sign is its inversions' parity. */
	for (bool more = true; !st && more;) {
		int inv = 0;
		int64_t i, j;

		snprintf(term, sizeof(term), "%s", el[perm[0]]);
		for (i = 1; !st && i < m; i++) {
			st = ox_emit(im, "Mul", (const char *const[]){ term, el[i * m + perm[i]] }, 2,
				     ox_tmp_name(im, nx, sizeof(nx), "det"), NULL);
			snprintf(term, sizeof(term), "%s", nx);
		}
		for (i = 0; i < m; i++)
			for (j = i + 1; j < m; j++)
				inv += perm[i] > perm[j];
		if (!st && first && !(inv & 1)) {
			snprintf(sum, sizeof(sum), "%s", term);
			first = false;
		} else if (!st) {
			/* The identity comes first, so sum exists when an odd term does. */
			st = ox_emit(im, inv & 1 ? "Sub" : "Add", (const char *const[]){ sum, term },
				     2, ox_tmp_name(im, nx, sizeof(nx), "det"), NULL);
			snprintf(sum, sizeof(sum), "%s", nx);
		}
		/* The next permutation, if any. */
		for (i = m - 2; i >= 0 && perm[i] > perm[i + 1]; i--)
			;
		more = i >= 0;
		if (more) {
			for (j = m - 1; perm[j] < perm[i]; j--)
				;
			int64_t t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
			for (int64_t a = i + 1, b = m - 1; a < b; a++, b--) {
				t = perm[a];
				perm[a] = perm[b];
				perm[b] = t;
			}
		}
	}
	return st ? st : ox_emit(im, "Identity", (const char *const[]){ sum }, 1, n->output[0],
				 NULL);
}

/*
 * MaxPool's Indices: each window's positions gathered
 * (a slot past the input, holding the lowest value, for padding), the
 * first of the largest found by ArgMax, and its position in the input
 * (counted over N, C and the spatial axes, as ONNX flattens it; the
 * spatial axes last first for column_major, storage_order 1) looked up in
 * a table of those. ks, st, dl: the window per spatial axis; pb: the
 * begin pads; od: the output's spatial dimensions.
 */
npurt_status ox_maxpool_indices(struct ox_imp *im, const Onnx__NodeProto *n, const char *x,
				uint32_t sp, const int64_t *ks, const int64_t *st,
				const int64_t *dl, const int64_t *pb, const int64_t *od,
				bool column_major)
{
	struct ox_val *v = ox_find(im, x), *tab, *idx, *pad, *qo, *off;
	int64_t nb = v->dims[0], c = v->dims[1], p = 1, q = 1, w = 1, qw, sd[4], d[6];
	int64_t three = 3, zero = 0, two = 2;
	int32_t t = v->type;
	Onnx__AttributeProto aa, ka, ca;
	Onnx__AttributeProto *both[2] = { &aa, &ka };
	ox_name xf, padn, xp, tn, in, g, g4, am, qn, ix, fl, offn, sum;
	npurt_status s;

	for (uint32_t k = 0; k < sp; k++) {
		sd[k] = v->dims[2 + k];
		p *= sd[k];
		q *= od[k];
		w *= ks[k];
	}
	qw = q * w;
	if (qw > (1 << 22) || nb * c > (1 << 22))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "Indices of %lld windows of %lld",
			       (long long)q, (long long)w);
	d[0] = nb;
	d[1] = c;
	d[2] = p;
	s = reshape(im, x, d, 3, xf);
	d[2] = 1;
	pad = s ? NULL : positions(im, t, 3, d, padn);
	if (!pad)
		return s ? s : npurt_last_status();
	for (int64_t k = 0; k < nb * c; k++)
		ox_set(pad, (uint64_t)k, ox_is_float(t) ? -INFINITY : t == OX_UINT8 ? 0 : -128);
	ox_attr_ints(&ca, "axis", &two, 1, false);
	s = ox_emit(im, "Concat", (const char *const[]){ xf, padn }, 2,
		    ox_tmp_name(im, xp, sizeof(xp), "argmax"), &ca);
	tab = s ? NULL : positions(im, OX_INT64, 1, &qw, tn);
	if (!tab)
		return s ? s : npurt_last_status();
	/*
	 * Window position j of output position o: where it is in the padded
	 * slot row (the pad slot p outside the input), and in the table the
	 * index Indices reports.
	 */
	idx = positions(im, OX_INT64, 1, &qw, in);
	if (!idx)
		return npurt_last_status();
	for (int64_t o = 0; o < q; o++) {
		int64_t first = -1;

		for (int64_t j = 0; j < w; j++) {
			int64_t ro = o, rj = j, at = 0, rep = 0, row = 1, col = 1;
			bool inside = true;

			for (int k = (int)sp - 1; k >= 0; k--) {
				int64_t ok = ro % od[k], jk = rj % ks[k];
				int64_t pos = ok * st[k] - pb[k] + jk * dl[k];

				ro /= od[k];
				rj /= ks[k];
				inside &= pos >= 0 && pos < sd[k];
				at += pos * row;
				row *= sd[k];
			}
			/* Column-major: the first spatial axis varies fastest. */
			ro = at;
			for (int k = (int)sp - 1; k >= 0; k--) {
				int64_t pos = ro % sd[k];

				ro /= sd[k];
				col = 1;
				for (int m = 0; m < k; m++)
					col *= sd[m];
				rep += pos * col;
			}
			ox_find(im, in)->i[o * w + j] = inside ? at : p;
			ox_find(im, tn)->i[o * w + j] = inside ? (column_major ? rep : at) : p;
			if (inside && first < 0)
				first = j;
		}
		/*
		 * Padding taps read the window's first position in the input
		 * instead: the pad slot's lowest value could tie with the
		 * input's, and ArgMax would report a position past the plane.
		 */
		for (int64_t j = 0; first >= 0 && j < w; j++)
			if (ox_find(im, in)->i[o * w + j] == p) {
				ox_find(im, in)->i[o * w + j] = ox_find(im, in)->i[o * w + first];
				ox_find(im, tn)->i[o * w + j] = ox_find(im, tn)->i[o * w + first];
			}
	}
	s = gather(im, "Gather", xp, in, 2, ox_tmp_name(im, g, sizeof(g), "argmax"));
	d[2] = q;
	d[3] = w;
	if (!s)
		s = reshape(im, g, d, 4, g4);
	ox_attr_ints(&aa, "axis", &three, 1, false);
	ox_attr_ints(&ka, "keepdims", &zero, 1, false);
	if (!s)
		s = ox_emit_attrs(im, "ArgMax", (const char *const[]){ g4 }, 1,
				  ox_tmp_name(im, am, sizeof(am), "argmax"), both, 2);
	/* Its entry in the table: o * w + j. */
	qo = s ? NULL : positions(im, OX_INT64, 1, &q, qn);
	if (!qo)
		return s ? s : npurt_last_status();
	for (int64_t o = 0; o < q; o++)
		qo->i[o] = o * w;
	s = ox_emit(im, "Add", (const char *const[]){ am, qn }, 2,
		    ox_tmp_name(im, ix, sizeof(ix), "argmax"), NULL);
	if (!s)
		s = gather(im, "Gather", tn, ix, 0, ox_tmp_name(im, fl, sizeof(fl), "argmax"));
	d[2] = 1;
	off = s ? NULL : positions(im, OX_INT64, 3, d, offn);
	if (!off)
		return s ? s : npurt_last_status();
	for (int64_t k = 0; k < nb * c; k++)
		off->i[k] = k * p;
	s = ox_emit(im, "Add", (const char *const[]){ fl, offn }, 2,
		    ox_tmp_name(im, sum, sizeof(sum), "argmax"), NULL);
	d[0] = nb;
	d[1] = c;
	for (uint32_t k = 0; k < sp; k++)
		d[2 + k] = od[k];
	if (!s) {
		ox_name shp;

		s = ox_int_const(im, d, 2 + sp, false, shp);
		if (!s)
			s = ox_emit(im, "Reshape", (const char *const[]){ sum, shp }, 2, n->output[1],
				    NULL);
	}
	return s;
}
