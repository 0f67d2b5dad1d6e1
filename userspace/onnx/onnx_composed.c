// SPDX-License-Identifier: MIT
/*
 * Operators that are other operators: each is written here as the ONNX
 * nodes it amounts to (ox_emit()), which the importer then maps or folds
 * as it would the file's own, so nothing new reaches the device.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

/*
 * OneHot(indices, depth, values): along the new axis, values[1] where the
 * position equals the index (a negative one counts from depth) and
 * values[0] elsewhere. As Equal(Unsqueeze(indices), positions) and Where;
 * depth and values must be constants (depth fixes the output's shape).
 */
bool ox_scalar_named(struct ox_imp *im, int32_t type, double x, ox_name name)
{
	struct ox_val *v = ox_scalar_of(im, type, x, isfinite(x) ? (int64_t)x : 0, "k");

	if (v)
		snprintf(name, sizeof(ox_name), "%s", v->name);
	return v != NULL;
}

npurt_status ox_op_onehot(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *depth = ox_in(im, n, 1), *values = ox_in(im, n, 2), *v;
	int64_t d, dims[OX_MAX_DIMS], vi[2];
	uint32_t r = x->ndim + 1;
	int32_t xt = x->type, vt;
	ox_name xn, pn, an, un, zn, dn, ln, wn, sn, en, on, fn;
	double vf[2];
	int axis;
	npurt_status st;

	if (!depth || !values || !depth->is_const || !values->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "depth or values computed: the output's "
			       "shape would be");
	if (ox_count(depth) != 1 || ox_count(values) != 2 || r > OX_MAX_DIMS)
		return ox_fail(im, NPURT_ERR_INVALID, "depth of %llu elements, values of %llu "
			       "(1 and 2 wanted), or rank %u", (unsigned long long)ox_count(depth),
			       (unsigned long long)ox_count(values), r);
	d = ox_is_float(depth->type) ? (int64_t)ox_getf(depth, 0) : ox_geti(depth, 0);
	axis = ox_axis(ox_attr_i(n, "axis", -1), r);
	if (d < 1 || d > (1 << 24) || axis < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "depth %lld or axis %lld", (long long)d,
			       (long long)ox_attr_i(n, "axis", -1));
	/* Values move as values are made: keep what is needed of them. */
	snprintf(xn, sizeof(xn), "%s", x->name);
	vt = values->type;
	for (int k = 0; k < 2; k++) {
		vf[k] = ox_getf(values, (uint64_t)k);
		vi[k] = ox_geti(values, (uint64_t)k);
	}
	/* Positions up to depth may not fit narrow integer indices: widen them. */
	if (!ox_is_float(xt) && xt != OX_INT64) {
		Onnx__AttributeProto ta;
		int64_t to = OX_INT64;

		ox_attr_ints(&ta, "to", &to, 1, false);
		st = ox_emit(im, "Cast", (const char *const[]){ xn }, 1,
			     ox_tmp_name(im, wn, sizeof(wn), "onehot"), &ta);
		if (st)
			return st;
		snprintf(xn, sizeof(xn), "%s", wn);
		xt = OX_INT64;
	}
	/* The positions 0 .. d-1 along the new axis, in the indices' type. */
	for (uint32_t k = 0; k < r; k++)
		dims[k] = (int)k == axis ? d : 1;
	v = ox_new_const(im, ox_tmp_name(im, pn, sizeof(pn), "onehot"), xt, r, dims);
	if (!v)
		return npurt_last_status();
	for (int64_t k = 0; k < d; k++)
		ox_set(v, (uint64_t)k, (double)k);
	v = ox_new_const(im, ox_tmp_name(im, an, sizeof(an), "onehot"), OX_INT64, 1, (int64_t[]){ 1 });
	if (!v)
		return npurt_last_status();
	v->i[0] = axis;
	/* Negative indices count from depth: where(x < 0, x + d, x). */
	if (!ox_scalar_named(im, xt, 0, zn) || !ox_scalar_named(im, xt, (double)d, dn) ||
	    !ox_scalar_named(im, vt, ox_is_float(vt) ? vf[0] : (double)vi[0], fn) ||
	    !ox_scalar_named(im, vt, ox_is_float(vt) ? vf[1] : (double)vi[1], on))
		return npurt_last_status();
	st = ox_emit(im, "Less", (const char *const[]){ xn, zn }, 2,
		     ox_tmp_name(im, ln, sizeof(ln), "onehot"), NULL);
	if (!st)
		st = ox_emit(im, "Add", (const char *const[]){ xn, dn }, 2,
			     ox_tmp_name(im, sn, sizeof(sn), "onehot"), NULL);
	if (!st)
		st = ox_emit(im, "Where", (const char *const[]){ ln, sn, xn }, 3,
			     ox_tmp_name(im, wn, sizeof(wn), "onehot"), NULL);
	if (!st)
		st = ox_emit(im, "Unsqueeze", (const char *const[]){ wn, an }, 2,
			     ox_tmp_name(im, un, sizeof(un), "onehot"), NULL);
	if (!st)
		st = ox_emit(im, "Equal", (const char *const[]){ un, pn }, 2,
			     ox_tmp_name(im, en, sizeof(en), "onehot"), NULL);
	if (!st)
		st = ox_emit(im, "Where", (const char *const[]){ en, on, fn }, 3, n->output[0],
			     NULL);
	return st;
}

/* ---- Einsum ---------------------------------------------------------- */

/*
 * A term's labels, one per dimension: letters as written, and '0' + j for
 * the j-th dimension an ellipsis stands for (right-aligned across terms).
 */
struct ein_term {
	char l[OX_MAX_DIMS];
	uint32_t n;
};

static bool ein_has(const struct ein_term *t, char c)
{
	return memchr(t->l, c, t->n) != NULL;
}

/* One term of the equation from s to end; `rank`: its input's (0: the output's). */
static bool ein_term(const char *s, const char *end, uint32_t rank, uint32_t ell,
		     struct ein_term *t, uint32_t *ell_seen)
{
	uint32_t letters = 0, e = 0;
	bool dots = false;

	for (const char *p = s; p < end; p++)
		letters += (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
	t->n = 0;
	for (const char *p = s; p < end; p++) {
		if (*p == ' ')
			continue;
		if (end - p >= 3 && !strncmp(p, "...", 3) && !dots) {
			dots = true;
			e = rank ? (rank >= letters ? rank - letters : UINT32_MAX) : ell;
			if (e > OX_MAX_DIMS || t->n + e > OX_MAX_DIMS || (rank && e > ell))
				return false;
			for (uint32_t j = 0; j < e; j++)
				t->l[t->n++] = (char)('0' + (ell - e + j));
			p += 2;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || t->n == OX_MAX_DIMS)
			return false;
		t->l[t->n++] = *p;
	}
	if (ell_seen && e > *ell_seen)
		*ell_seen = e;
	return !rank || t->n == rank;
}

/* Emit op(x, int64 constant c[0..n)) -> out, with attribute `a` (may be NULL). */
static npurt_status emit_with(struct ox_imp *im, const char *op, const char *x, const int64_t *c,
			      int64_t n, Onnx__AttributeProto *a, const char *out)
{
	ox_name cn;
	npurt_status st = ox_int_const(im, c, n, false, cn);

	return st ? st : ox_emit(im, op, (const char *const[]){ x, cn }, 2, out, a);
}

/*
 * x transposed so its labels (t, updated) come in the order of `want`,
 * into a value called `name` (NULL: a new name, written to out).
 */
static npurt_status ein_transpose(struct ox_imp *im, const char *x, struct ein_term *t,
				  const char *want, const char *name, ox_name out)
{
	Onnx__AttributeProto pa;
	int64_t perm[OX_MAX_DIMS];
	ox_name in;

	for (uint32_t k = 0; k < t->n; k++)
		perm[k] = (const char *)memchr(t->l, want[k], t->n) - t->l;
	memcpy(t->l, want, t->n);
	snprintf(in, sizeof(in), "%s", x);
	if (!name)
		name = ox_tmp_name(im, out, sizeof(ox_name), "einsum");
	ox_attr_ints(&pa, "perm", perm, t->n, true);
	return ox_emit(im, "Transpose", (const char *const[]){ in }, 1, name, &pa);
}

/*
 * One input made ready: repeated labels become its diagonal (a view whose
 * stride is the two strides summed), and labels no other term has are
 * summed away. Its value's name goes to out.
 */
static npurt_status ein_input(struct ox_imp *im, const char *x, struct ein_term *t,
			      const struct ein_term *other, const struct ein_term *res, ox_name out)
{
	struct ox_val *v = ox_find(im, x);
	int64_t axes[OX_MAX_DIMS], na = 0, dims[OX_MAX_DIMS], st[OX_MAX_DIMS];
	Onnx__AttributeProto ka;
	int64_t zero = 0;
	uint32_t home;
	ox_name in;

	snprintf(out, sizeof(ox_name), "%s", x);
	for (uint32_t p = 0; p < t->n; p++)
		for (uint32_t q = p + 1; q < t->n; q++) {
			if (t->l[p] != t->l[q])
				continue;
			if (v->dims[p] != v->dims[q])
				return ox_fail(im, NPURT_ERR_INVALID, "label %c of sizes %lld and %lld",
					       t->l[p], (long long)v->dims[p], (long long)v->dims[q]);
			if (v->is_const && ox_device(im, v, &home))
				return npurt_last_status();
			v = ox_find(im, out);
			memcpy(dims, v->dims, sizeof(dims));
			memcpy(st, v->stride, sizeof(st));
			st[p] += st[q];
			memmove(dims + q, dims + q + 1, (t->n - q - 1) * sizeof(dims[0]));
			memmove(st + q, st + q + 1, (t->n - q - 1) * sizeof(st[0]));
			memmove(t->l + q, t->l + q + 1, t->n - q - 1);
			t->n--;
			v = ox_view(im, v, ox_tmp_name(im, out, sizeof(ox_name), "einsum"), t->n, dims,
				    v->off, st);
			if (!v)
				return npurt_last_status();
			q = p;
		}
	for (uint32_t k = 0; k < t->n; k++)
		if (!ein_has(other, t->l[k]) && !ein_has(res, t->l[k]))
			axes[na++] = k;
	if (!na)
		return NPURT_OK;
	for (int64_t k = na - 1; k >= 0; k--) {
		memmove(t->l + axes[k], t->l + axes[k] + 1, t->n - (uint32_t)axes[k] - 1);
		t->n--;
	}
	ox_attr_ints(&ka, "keepdims", &zero, 1, false);
	snprintf(in, sizeof(in), "%s", out);
	return emit_with(im, "ReduceSum", in, axes, na, &ka,
			 ox_tmp_name(im, out, sizeof(ox_name), "einsum"));
}

/* The product of x's dimensions labelled by t->l[from..to). */
static int64_t ein_size(struct ox_imp *im, const char *x, uint32_t from, uint32_t to)
{
	const struct ox_val *v = ox_find(im, x);
	int64_t p = 1;

	for (uint32_t k = from; k < to; k++)
		p *= v->dims[k];
	return p;
}

/*
 * Two operands: A's labels as batch, left, contracted and B's as batch,
 * contracted, right (transposes), each made 3-D (reshapes), one batched
 * MatMul, and the result given its labels' shape and the output's order.
 */
static npurt_status ein_pair(struct ox_imp *im, const Onnx__NodeProto *n, ox_name a, ox_name b,
			     struct ein_term *ta, struct ein_term *tb, const struct ein_term *res)
{
	char oa[OX_MAX_DIMS], ob[OX_MAX_DIMS], oc[3 * OX_MAX_DIMS];
	uint32_t nb = 0, nl = 0, nk = 0, nr = 0, na = 0, nbb = 0, nc = 0;
	int64_t sa[3], sb[3], sc[3 * OX_MAX_DIMS], sq[3] = { 0, 1, 2 };
	const struct ox_val *va, *vb;
	struct ein_term tc;
	ox_name x, y, z, w;
	npurt_status st;

	for (uint32_t k = 0; k < ta->n; k++)	/* batch */
		if (ein_has(tb, ta->l[k]) && ein_has(res, ta->l[k]))
			oa[na++] = ob[nbb++] = oc[nc++] = ta->l[k], nb++;
	for (uint32_t k = 0; k < ta->n; k++)	/* left */
		if (!ein_has(tb, ta->l[k]))
			oa[na++] = oc[nc++] = ta->l[k], nl++;
	for (uint32_t k = 0; k < ta->n; k++)	/* contracted */
		if (ein_has(tb, ta->l[k]) && !ein_has(res, ta->l[k]))
			oa[na++] = ob[nbb++] = ta->l[k], nk++;
	for (uint32_t k = 0; k < tb->n; k++)	/* right */
		if (!ein_has(ta, tb->l[k]))
			ob[nbb++] = oc[nc++] = tb->l[k], nr++;
	va = ox_find(im, a);
	vb = ox_find(im, b);
	for (uint32_t k = 0; k < ta->n; k++) {
		const char *q = memchr(tb->l, ta->l[k], tb->n);

		if (q && va->dims[k] != vb->dims[q - tb->l])
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "label %c of sizes %lld and %lld "
				       "(broadcast)", ta->l[k], (long long)va->dims[k],
				       (long long)vb->dims[q - tb->l]);
	}
	st = ein_transpose(im, a, ta, oa, NULL, x);
	if (!st)
		st = ein_transpose(im, b, tb, ob, NULL, y);
	if (st)
		return st;
	sa[0] = ein_size(im, x, 0, nb);
	sa[1] = ein_size(im, x, nb, nb + nl);
	sa[2] = ein_size(im, x, nb + nl, nb + nl + nk);
	sb[0] = sa[0];
	sb[1] = sa[2];
	sb[2] = ein_size(im, y, nb + nk, nb + nk + nr);
	tc.n = nc;
	memcpy(tc.l, oc, nc);
	for (uint32_t k = 0; k < nc; k++) {
		const char *q = memchr(ta->l, oc[k], ta->n);

		sc[k] = q ? ox_find(im, x)->dims[q - ta->l] :
			ox_find(im, y)->dims[(const char *)memchr(tb->l, oc[k], tb->n) - tb->l];
	}
	st = emit_with(im, "Reshape", x, sa, 3, NULL, ox_tmp_name(im, z, sizeof(z), "einsum"));
	if (!st)
		st = emit_with(im, "Reshape", y, sb, 3, NULL, ox_tmp_name(im, w, sizeof(w), "einsum"));
	if (!st)
		st = ox_emit(im, "MatMul", (const char *const[]){ z, w }, 2,
			     ox_tmp_name(im, x, sizeof(x), "einsum"), NULL);
	if (st)
		return st;
	/* A scalar result cannot be a reshape to no dimensions: squeeze all three. */
	st = nc ? emit_with(im, "Reshape", x, sc, nc, NULL, ox_tmp_name(im, y, sizeof(y), "einsum")) :
		  emit_with(im, "Squeeze", x, sq, 3, NULL, n->output[0]);
	if (st || !nc)
		return st;
	return ein_transpose(im, y, &tc, res->l, n->output[0], NULL);
}

/*
 * Einsum of one or two operands, as ONNX writes it ("bij,bjk->bik",
 * "...ii->...i", implicit outputs): diagonals as views, sums as
 * ReduceSum, products as one batched MatMul between transposes and
 * reshapes.
 */
npurt_status ox_op_einsum(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	char eqb[160];
	const char *eq = ox_attr_s(n, "equation", NULL, eqb, sizeof(eqb));
	const char *arrow, *end, *p = eq, *cut[3];
	struct ein_term in[2], res = { .n = 0 }, none = { .n = 0 };
	uint32_t nin = (uint32_t)n->n_input, ell = 0, count[128] = { 0 };
	ox_name name[2], cur[2];
	npurt_status st;

	(void)x;
	if (!eq)
		return ox_fail(im, NPURT_ERR_INVALID, "no equation");
	if (nin < 1 || nin > 2)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%u operands: 1 or 2", nin);
	arrow = strstr(eq, "->");
	end = arrow ? arrow : eq + strlen(eq);
	for (uint32_t k = 0; k < nin; k++) {
		cut[k] = p;
		p = k + 1 < nin ? memchr(p, ',', (size_t)(end - p)) : end;
		if (!p || (k + 1 == nin && memchr(cut[k], ',', (size_t)(end - cut[k]))))
			return ox_fail(im, NPURT_ERR_INVALID, "equation \"%s\" has not %u operands",
				       eq, nin);
		p += k + 1 < nin;
	}
	cut[nin] = end + 1;
	/* Twice: the first pass finds how many dimensions an ellipsis stands for. */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t k = 0; k < nin; k++) {
			struct ox_val *v = ox_in(im, n, k);

			if (!v || !ein_term(cut[k], cut[k + 1] - 1, v->ndim, pass ? ell : OX_MAX_DIMS,
					    &in[k], pass ? NULL : &ell))
				return ox_fail(im, NPURT_ERR_INVALID, "equation \"%s\": operand %u "
					       "does not match its rank", eq, k);
			snprintf(name[k], sizeof(name[k]), "%s", v->name);
		}
	for (uint32_t k = 0; k < nin; k++)
		for (uint32_t j = 0; j < in[k].n; j++)
			count[(unsigned char)in[k].l[j] & 127]++;
	if (arrow) {
		if (!ein_term(arrow + 2, arrow + 2 + strlen(arrow + 2), 0, ell, &res, NULL))
			return ox_fail(im, NPURT_ERR_INVALID, "equation \"%s\": its output", eq);
	} else {
		for (uint32_t j = 0; j < ell; j++)
			res.l[res.n++] = (char)('0' + j);
		for (int c = 'A'; c <= 'z' && res.n < OX_MAX_DIMS; c++)
			if (((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) && count[c] == 1)
				res.l[res.n++] = (char)c;
	}
	for (uint32_t j = 0; j < res.n; j++)
		if (!count[(unsigned char)res.l[j] & 127] || memchr(res.l + j + 1, res.l[j],
								   res.n - j - 1))
			return ox_fail(im, NPURT_ERR_INVALID, "equation \"%s\": output label %c",
				       eq, res.l[j]);
	for (uint32_t k = 0; k < nin; k++) {
		st = ein_input(im, name[k], &in[k], nin == 2 ? &in[1 - k] : &none, &res, cur[k]);
		if (st)
			return st;
	}
	if (nin == 2)
		return ein_pair(im, n, cur[0], cur[1], &in[0], &in[1], &res);
	return ein_transpose(im, cur[0], &in[0], res.l, n->output[0], NULL);
}

/*
 * HannWindow, HammingWindow, BlackmanWindow of a constant size: a
 * constant, worked out here (periodic: the period is size, else size - 1).
 */
static npurt_status op_window_fn(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	static const double pi = 3.14159265358979323846;
	int64_t size, type = ox_attr_i(n, "output_datatype", OX_FLOAT);
	bool periodic = ox_attr_i(n, "periodic", 1) != 0;
	struct ox_val *w;
	double den, a0, a1, a2 = 0;

	if (!x->is_const || ox_count(x) != 1)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "size computed on the device");
	size = ox_is_float(x->type) ? (int64_t)ox_getf(x, 0) : ox_geti(x, 0);
	if (size < 1 || size > (1 << 20) || ox_dtype((int32_t)type) == NPURT_DTYPE_COUNT)
		return ox_fail(im, NPURT_ERR_INVALID, "size %lld or output_datatype %lld",
			       (long long)size, (long long)type);
	if (n->op_type[0] == 'B') {		/* Blackman */
		a0 = 0.42;
		a1 = 0.5;
		a2 = 0.08;
	} else {
		a0 = n->op_type[2] == 'm' ? 25.0 / 46.0 : 0.5;	/* Hamming, Hann */
		a1 = 1 - a0;
	}
	den = periodic ? (double)size : (double)(size - 1);
	w = ox_new_const(im, n->output[0], (int32_t)type, 1, &size);
	if (!w)
		return npurt_last_status();
	for (int64_t k = 0; k < size; k++) {
		double t = den > 0 ? 2 * pi * (double)k / den : 0;

		ox_set(w, (uint64_t)k, a0 - a1 * cos(t) + a2 * cos(2 * t));
	}
	return NPURT_OK;
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(variance) + 1e-9) over `axes`. */
static npurt_status op_mvn(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	const Onnx__AttributeProto *a = ox_attr(n, "axes");
	int64_t def[3] = { 0, 2, 3 }, *axes = a ? a->ints : def;
	size_t na = a ? a->n_ints : 3;
	Onnx__AttributeProto aa;
	ox_name xn, m, d, q, v, e, s, en;
	npurt_status st;

	snprintf(xn, sizeof(xn), "%s", x->name);
	if (!ox_scalar_named(im, x->type, 1e-9, en))
		return npurt_last_status();
	ox_attr_ints(&aa, "axes", axes, na, true);
	st = ox_emit(im, "ReduceMean", (const char *const[]){ xn }, 1,
		     ox_tmp_name(im, m, sizeof(m), "mvn"), &aa);
	if (!st)
		st = ox_emit(im, "Sub", (const char *const[]){ xn, m }, 2,
			     ox_tmp_name(im, d, sizeof(d), "mvn"), NULL);
	if (!st)
		st = ox_emit(im, "Mul", (const char *const[]){ d, d }, 2,
			     ox_tmp_name(im, q, sizeof(q), "mvn"), NULL);
	if (!st)
		st = ox_emit(im, "ReduceMean", (const char *const[]){ q }, 1,
			     ox_tmp_name(im, v, sizeof(v), "mvn"), &aa);
	if (!st)
		st = ox_emit(im, "Sqrt", (const char *const[]){ v }, 1,
			     ox_tmp_name(im, s, sizeof(s), "mvn"), NULL);
	if (!st)
		st = ox_emit(im, "Add", (const char *const[]){ s, en }, 2,
			     ox_tmp_name(im, e, sizeof(e), "mvn"), NULL);
	if (!st)
		st = ox_emit(im, "Div", (const char *const[]){ d, e }, 2, n->output[0], NULL);
	return st;
}

/* Emit op(ins[0..nin)) with attribute a (may be NULL) into a new value named in out. */
static npurt_status emit_to(struct ox_imp *im, const char *op, const char *const *ins, size_t nin,
			    Onnx__AttributeProto *a, ox_name out, const char *final)
{
	return ox_emit(im, op, ins, nin, final ? final : ox_tmp_name(im, out, sizeof(ox_name), op),
		       a);
}

/* Per-channel parameter p ([C]) shaped [1, C, 1, ...] for rank r. */
static npurt_status per_channel(struct ox_imp *im, const char *p, int64_t c, uint32_t r,
				ox_name out)
{
	int64_t dims[OX_MAX_DIMS];
	ox_name sn, pn;
	npurt_status st;

	for (uint32_t k = 0; k < r; k++)
		dims[k] = k == 1 ? c : 1;
	snprintf(pn, sizeof(pn), "%s", p);
	st = ox_int_const(im, dims, r, false, sn);
	return st ? st : emit_to(im, "Reshape", (const char *const[]){ pn, sn }, 2, NULL, out, NULL);
}

/*
 * BatchNormalization in training mode: normalized by the batch's own
 * mean and (biased) variance over every axis but the channels', with the
 * running statistics out: input * momentum + batch's * (1 - momentum).
 */
npurt_status ox_op_batchnorm_training(struct ox_imp *im, const Onnx__NodeProto *n,
				      struct ox_val *x)
{
	double eps = ox_attr_f(n, "epsilon", 1e-5f), mom = ox_attr_f(n, "momentum", 0.9f);
	int64_t axes[OX_MAX_DIMS], na = 0, c = x->ndim > 1 ? x->dims[1] : 0;
	uint32_t r = x->ndim;
	int32_t t = x->type;
	Onnx__AttributeProto aa;
	ox_name xn, mk, d, q, vk, ve, sd, nrm, sc, bi, ys, v, mo, om, a1, a2, en;
	npurt_status st;

	if (r < 2 || n->n_input < 5)
		return ox_fail(im, NPURT_ERR_INVALID, "rank %u, or %zu inputs", r, n->n_input);
	for (uint32_t k = 0; k < r; k++)
		if (k != 1)
			axes[na++] = k;
	snprintf(xn, sizeof(xn), "%s", x->name);
	if (!ox_scalar_named(im, t, eps, en) || !ox_scalar_named(im, t, mom, mo) ||
	    !ox_scalar_named(im, t, 1 - mom, om))
		return npurt_last_status();
	ox_attr_ints(&aa, "axes", axes, (size_t)na, true);
	st = emit_to(im, "ReduceMean", (const char *const[]){ xn }, 1, &aa, mk, NULL);
	if (!st)
		st = emit_to(im, "Sub", (const char *const[]){ xn, mk }, 2, NULL, d, NULL);
	if (!st)
		st = emit_to(im, "Mul", (const char *const[]){ d, d }, 2, NULL, q, NULL);
	if (!st)
		st = emit_to(im, "ReduceMean", (const char *const[]){ q }, 1, &aa, vk, NULL);
	if (!st)
		st = emit_to(im, "Add", (const char *const[]){ vk, en }, 2, NULL, ve, NULL);
	if (!st)
		st = emit_to(im, "Sqrt", (const char *const[]){ ve }, 1, NULL, sd, NULL);
	if (!st)
		st = emit_to(im, "Div", (const char *const[]){ d, sd }, 2, NULL, nrm, NULL);
	if (!st)
		st = per_channel(im, n->input[1], c, r, sc);
	if (!st)
		st = per_channel(im, n->input[2], c, r, bi);
	if (!st)
		st = emit_to(im, "Mul", (const char *const[]){ nrm, sc }, 2, NULL, ys, NULL);
	if (!st)
		st = emit_to(im, "Add", (const char *const[]){ ys, bi }, 2, NULL, NULL, n->output[0]);
	/* The running statistics: the batch's mean and variance as [C]. */
	for (int k = 0; !st && k < 2 && (size_t)k + 1 < n->n_output; k++) {
		const char *out = n->output[k + 1];
		ox_name cs;

		if (!out[0])
			continue;
		/* The batch's statistics as [C]. */
		st = ox_int_const(im, &c, 1, false, cs);
		if (!st)
			st = emit_to(im, "Reshape", (const char *const[]){ k ? vk : mk, cs }, 2, NULL,
				     v, NULL);
		if (!st)
			st = emit_to(im, "Mul", (const char *const[]){ n->input[3 + k], mo }, 2, NULL,
				     a1, NULL);
		if (!st)
			st = emit_to(im, "Mul", (const char *const[]){ v, om }, 2, NULL, a2, NULL);
		if (!st)
			st = emit_to(im, "Add", (const char *const[]){ a1, a2 }, 2, NULL, NULL, out);
	}
	return st;
}

/*
 * LRN: x / (bias + alpha / size * s)^beta, s the sum of squares over the
 * size channels around each: the squares padded along the channels and
 * size slices of them added.
 */
static npurt_status op_lrn(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	int64_t size = ox_attr_i(n, "size", 0), c = x->ndim > 2 ? x->dims[1] : 0;
	double alpha = ox_attr_f(n, "alpha", 1e-4f), beta = ox_attr_f(n, "beta", 0.75f);
	double bias = ox_attr_f(n, "bias", 1.0f);
	int64_t pads[2 * OX_MAX_DIMS] = { 0 }, lo = (size - 1) / 2, one = 1;
	uint32_t r = x->ndim;
	int32_t t = x->type;
	ox_name xn, sq, pd, pn, sum, sl, nx, sc, ad, pw, al, bs, be, st_, en, ax;
	npurt_status st;

	if (size < 1 || size > 64 || r < 3)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "size %lld, rank %u", (long long)size, r);
	snprintf(xn, sizeof(xn), "%s", x->name);
	pads[1] = lo;
	pads[r + 1] = size - 1 - lo;
	if (!ox_scalar_named(im, t, alpha / (double)size, al) || !ox_scalar_named(im, t, bias, bs) ||
	    !ox_scalar_named(im, t, beta, be))
		return npurt_last_status();
	st = emit_to(im, "Mul", (const char *const[]){ xn, xn }, 2, NULL, sq, NULL);
	if (!st)
		st = ox_int_const(im, pads, 2 * r, false, pn);
	if (!st)
		st = emit_to(im, "Pad", (const char *const[]){ sq, pn }, 2, NULL, pd, NULL);
	if (!st)
		st = ox_int_const(im, &one, 1, false, ax);
	for (int64_t k = 0; !st && k < size; k++) {
		int64_t e = k + c;

		st = ox_int_const(im, &k, 1, false, st_);
		if (!st)
			st = ox_int_const(im, &e, 1, false, en);
		if (!st)
			st = emit_to(im, "Slice", (const char *const[]){ pd, st_, en, ax }, 4, NULL,
				     sl, NULL);
		if (!st && k)
			st = emit_to(im, "Add", (const char *const[]){ sum, sl }, 2, NULL, nx, NULL);
		if (!st)
			snprintf(sum, sizeof(sum), "%s", k ? nx : sl);
	}
	if (!st)
		st = emit_to(im, "Mul", (const char *const[]){ sum, al }, 2, NULL, sc, NULL);
	if (!st)
		st = emit_to(im, "Add", (const char *const[]){ sc, bs }, 2, NULL, ad, NULL);
	if (!st)
		st = emit_to(im, "Pow", (const char *const[]){ ad, be }, 2, NULL, pw, NULL);
	return st ? st : emit_to(im, "Div", (const char *const[]){ xn, pw }, 2, NULL, NULL,
				 n->output[0]);
}

/* TopK by at most this many rounds of ArgMax (a sort op would take more). */
#define TOPK_MAX	16

/*
 * TopK of a constant k: k rounds, each an ArgMax (ArgMin for the
 * smallest: the first of equals, as TopK orders ties), the value there
 * gathered, and that position masked out for the next round; the rounds'
 * values and indices concatenated along the axis.
 */
static npurt_status op_topk(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	struct ox_val *kv = ox_in(im, n, 1), *pos;
	int axis = ox_axis(ox_attr_i(n, "axis", -1), x->ndim);
	bool largest = ox_attr_i(n, "largest", 1) != 0;
	int64_t k, dims[OX_MAX_DIMS], ax64;
	uint32_t r = x->ndim;
	int32_t t = x->type;
	Onnx__AttributeProto aa, ka, ca;
	ox_name xn, cur, idx[TOPK_MAX], val[TOPK_MAX], pn, eq, fill, nx;
	double big;
	const char *vals[TOPK_MAX], *idxs[TOPK_MAX];
	int64_t one = 1;
	npurt_status st = NPURT_OK;

	if (!kv || !kv->is_const || ox_count(kv) != 1)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "k computed: the output's shape would be "
			       "data dependent; a session (npurt_onnx_session_*) cuts the "
			       "model here");
	k = ox_geti(kv, 0);
	if (axis < 0 || k < 1 || k > x->dims[axis])
		return ox_fail(im, NPURT_ERR_INVALID, "k %lld along axis %lld", (long long)k,
			       (long long)ox_attr_i(n, "axis", -1));
	if (k > TOPK_MAX || !ox_is_float(t))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "k %lld over %d, or %s values: no sort "
			       "op", (long long)k, TOPK_MAX, ox_type_name(t));
	snprintf(xn, sizeof(xn), "%s", x->name);
	/* Rounds look at a copy clamped to finite values: the mask (inf) stays apart. */
	big = t == OX_FLOAT16 ? 65504.0 : t == OX_BFLOAT16 ? 3.38e38 : FLT_MAX;
	if (!ox_scalar_named(im, t, largest ? -big : big, fill))
		return npurt_last_status();
	st = ox_emit(im, largest ? "Max" : "Min", (const char *const[]){ xn, fill }, 2,
		     ox_tmp_name(im, cur, sizeof(cur), "topk"), NULL);
	if (st)
		return st;
	for (uint32_t j = 0; j < r; j++)
		dims[j] = (int)j == axis ? x->dims[axis] : 1;
	pos = ox_new_const(im, ox_tmp_name(im, pn, sizeof(pn), "topk"), OX_INT64, r, dims);
	if (!pos)
		return npurt_last_status();
	for (int64_t j = 0; j < dims[axis]; j++)
		pos->i[j] = j;
	if (!ox_scalar_named(im, t, largest ? -INFINITY : INFINITY, fill))
		return npurt_last_status();
	ax64 = axis;
	ox_attr_ints(&aa, "axis", &ax64, 1, false);
	ox_attr_ints(&ka, "keepdims", &one, 1, false);
	for (int64_t j = 0; !st && j < k; j++) {
		Onnx__AttributeProto *both[2] = { &aa, &ka };

		st = ox_emit_attrs(im, largest ? "ArgMax" : "ArgMin", (const char *const[]){ cur }, 1,
				   ox_tmp_name(im, idx[j], sizeof(idx[j]), "topk"), both, 2);
		if (!st)
			st = emit_to(im, "GatherElements", (const char *const[]){ xn, idx[j] }, 2, &aa,
				     val[j], NULL);
		if (!st && j + 1 < k) {
			st = emit_to(im, "Equal", (const char *const[]){ pn, idx[j] }, 2, NULL, eq, NULL);
			if (!st)
				st = emit_to(im, "Where", (const char *const[]){ eq, fill, cur }, 3, NULL,
					     nx, NULL);
			snprintf(cur, sizeof(cur), "%s", nx);
		}
		vals[j] = val[j];
		idxs[j] = idx[j];
	}
	ca = aa;
	if (!st && n->output[0][0])
		st = ox_emit(im, "Concat", vals, (size_t)k, n->output[0], &ca);
	if (!st && n->n_output > 1 && n->output[1][0])
		st = ox_emit(im, "Concat", idxs, (size_t)k, n->output[1], &ca);
	return st;
}

npurt_status ox_composed_node(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			      bool *handled)
{
	const char *t = n->op_type;

	*handled = true;
	if (!strcmp(t, "OneHot"))
		return ox_op_onehot(im, n, x);
	if (!strcmp(t, "Einsum"))
		return ox_op_einsum(im, n, x);
	if (!strcmp(t, "HannWindow") || !strcmp(t, "HammingWindow") || !strcmp(t, "BlackmanWindow"))
		return op_window_fn(im, n, x);
	if (!strcmp(t, "MeanVarianceNormalization"))
		return op_mvn(im, n, x);
	if (!strcmp(t, "LRN"))
		return op_lrn(im, n, x);
	if (!strcmp(t, "TopK"))
		return op_topk(im, n, x);
	if (!strcmp(t, "Compress"))
		return ox_op_compress(im, n, x);
	if (!strcmp(t, "GatherND"))
		return ox_op_gathernd(im, n, x);
	if (!strcmp(t, "ScatterElements") || !strcmp(t, "Scatter") || !strcmp(t, "ScatterND"))
		return ox_op_scatter(im, n, x);
	if (!strcmp(t, "ReverseSequence"))
		return ox_op_reverse_sequence(im, n, x);
	if (!strcmp(t, "Det"))
		return ox_op_det(im, n, x);
	*handled = false;
	return NPURT_OK;
}
