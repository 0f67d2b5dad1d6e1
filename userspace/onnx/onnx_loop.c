// SPDX-License-Identifier: MIT
/*
 * Loop and Scan, unrolled. The device runs a static task list, so a loop
 * whose trip count the importer knows is no loop on the device: its body
 * is imported once per iteration, each copy's values renamed apart
 * (SSA holds across copies), the state one iteration leaves read by the
 * next by name. What a Loop's scan outputs collect, and what a Scan's
 * outputs stack, is a Concat of the iterations' values.
 *
 * A Loop's trip count and condition must fold at import: a constant, or
 * computed from static shapes (exporters write `for i in
 * range(x.shape[0])`), and the condition each iteration leaves must fold
 * too. Everything else in the body may run on the device. A count the
 * device computes would need the host to wait on it mid-run and lower the
 * rest afterwards, which a sunk model does not do: such a Loop is
 * refused, saying so. A Scan's count is the length of its scan inputs,
 * always static here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

/* Iterations, and body nodes over them, one Loop or Scan may unroll into. */
#define OX_MAX_UNROLLED		(1u << 16)

/* A loop being unrolled: its node, body, and where the iterations stand. */
struct unroll {
	const Onnx__NodeProto *n;
	const Onnx__GraphProto *body;
	struct ox_body_names names;
	struct ox_body_copy copy;		/* the iteration being imported */
	const Onnx__GraphProto *g;	/* its renamed body */
	size_t imported;		/* body nodes, over the iterations so far */
	size_t iterations;
};

static npurt_status unroll_begin(struct ox_imp *im, const Onnx__NodeProto *n,
				 struct unroll *u)
{
	const Onnx__AttributeProto *a = ox_attr(n, "body");

	*u = (struct unroll){ .n = n };
	if (!a || !a->g)
		return ox_fail(im, NPURT_ERR_INVALID, "no body graph");
	u->body = a->g;
	if (!ox_body_names(&u->names, u->body))
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	return NPURT_OK;
}

static void unroll_end(struct unroll *u)
{
	ox_body_copy_free(&u->copy);
	free(u->names.v);
}

/* Begin iteration `it`: a fresh copy of the body with its names. */
static npurt_status iteration_begin(struct ox_imp *im, struct unroll *u)
{
	/* a body of no nodes still costs its views: iterations count too */
	if (u->imported + u->body->n_node > OX_MAX_UNROLLED || u->iterations >= OX_MAX_UNROLLED)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "unrolled, it would be more than %u "
			       "iterations or body nodes", OX_MAX_UNROLLED);
	u->iterations++;
	ox_body_copy_free(&u->copy);
	u->g = ox_body_copy(&u->copy, &u->names, u->body, im->scratch++);
	if (!u->g)
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	return NPURT_OK;
}

/* Body input k of this iteration: a view of value `from` (by name). */
static npurt_status bind_view(struct ox_imp *im, struct unroll *u, size_t k, const char *from)
{
	struct ox_val *v = ox_find(im, from);
	const char *name = u->g->input[k]->name;

	if (!v)
		return ox_fail(im, NPURT_ERR_INVALID, "\"%.64s\" is defined by no earlier node",
			       from);
	if (!name || !name[0])
		return ox_fail(im, NPURT_ERR_INVALID, "body input %zu has no name", k);
	return ox_view(im, v, name, v->ndim, v->dims, v->off, v->stride) ? NPURT_OK :
	       npurt_last_status();
}

/* Body input k of this iteration: constant x, shaped as the body declares it. */
static npurt_status bind_const(struct ox_imp *im, struct unroll *u, size_t k, int32_t type,
			       int64_t x)
{
	const Onnx__TypeProto *t = u->body->input[k]->type;
	const Onnx__TensorShapeProto *sh = t && t->tensor_type ? t->tensor_type->shape : NULL;
	int64_t one[1] = { 1 };
	struct ox_val *v;

	/* a scalar, or [1] where the body says so (older exporters) */
	v = ox_new_const(im, u->g->input[k]->name, type, sh && sh->n_dim == 1 ? 1 : 0, one);
	if (!v)
		return npurt_last_status();
	v->i[0] = x;
	return NPURT_OK;
}

/* Import this iteration's copy of the body, its scope naming the loop. */
static npurt_status iteration_import(struct ox_imp *im, struct unroll *u, int64_t it)
{
	struct ox_scope sc = { .graph = im->graph, .node_index = im->node_index, .node = u->n,
			       .branch = "body", .iteration = it, .up = im->scope };
	npurt_status st;

	for (size_t k = 0; k < u->g->n_initializer; k++)
		if (!ox_tensor_proto(im, u->g->initializer[k], NULL))
			return npurt_last_status();
	im->scope = &sc;
	/* values of one iteration are read by the next: none is done with early */
	im->unrolling++;
	st = ox_import_nodes(im, u->g);
	im->unrolling--;
	im->scope = sc.up;
	im->graph = sc.graph;
	im->node_index = sc.node_index;
	im->node = u->n;
	u->imported += u->body->n_node;
	return st;
}

/* Body output k of this iteration, which its nodes (or inputs) must define. */
static const char *iteration_output(struct ox_imp *im, struct unroll *u, size_t k)
{
	const char *name = u->g->output[k]->name;

	if (!name || !ox_find(im, name)) {
		ox_fail(im, NPURT_ERR_INVALID, "body output %zu (\"%.64s\") is computed by none "
			"of its nodes", k, u->body->output[k]->name ? u->body->output[k]->name : "");
		return NULL;
	}
	return name;
}

/* names[0..count) along a new axis `axis` of their rank + 1, into `out`. */
static npurt_status stack(struct ox_imp *im, char **names, int64_t count, int64_t axis,
			  bool reverse, const char *out)
{
	const char **parts = calloc((size_t)count, sizeof(*parts));
	ox_name *made = calloc((size_t)count, sizeof(*made));
	Onnx__AttributeProto ax;
	npurt_status st = NPURT_OK;
	struct ox_val *v;
	ox_name axes;

	if (!parts || !made) {
		st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		goto out;
	}
	v = ox_find(im, names[0]);
	if (axis < -(int64_t)v->ndim - 1 || axis > (int64_t)v->ndim) {
		st = ox_fail(im, NPURT_ERR_INVALID, "output axis %lld of a rank-%u output",
			     (long long)axis, v->ndim + 1);
		goto out;
	}
	axis = axis < 0 ? axis + v->ndim + 1 : axis;
	st = ox_int_const(im, &axis, 1, false, axes);
	for (int64_t t = 0; !st && t < count; t++) {
		const char *in[2] = { names[reverse ? count - 1 - t : t], axes };

		parts[t] = count == 1 ? out : ox_tmp_name(im, made[t], sizeof(made[t]), "stack");
		st = ox_emit(im, "Unsqueeze", in, 2, parts[t], NULL);
	}
	ox_attr_ints(&ax, "axis", &axis, 1, false);
	if (!st && count > 1)
		st = ox_emit(im, "Concat", parts, (size_t)count, out, &ax);
out:
	free(parts);
	free(made);
	return st;
}

/* Node output `out` as a view of value `from`. */
static npurt_status output_view(struct ox_imp *im, const char *from, const char *out)
{
	struct ox_val *v = ox_find(im, from);

	return v && ox_view(im, v, out, v->ndim, v->dims, v->off, v->stride) ? NPURT_OK :
	       npurt_last_status();
}

/* A constant of one element, as an int64 (false: it is no such constant). */
static bool folded(struct ox_imp *im, const char *name, int64_t *x)
{
	struct ox_val *v = name && name[0] ? ox_find(im, name) : NULL;

	if (!v || !v->is_const || ox_count(v) != 1)
		return false;
	*x = ox_is_float(v->type) ? (int64_t)ox_getf(v, 0) : ox_geti(v, 0);
	return true;
}

/*
 * What the iterations leave: the state (loop-carried values) as the last
 * one left it, and per scan output the value of each, by name.
 */
struct leftover {
	size_t nstate, nscan;
	char **state;
	char ***scan;			/* [output][iteration] */
	int64_t cap;			/* iterations scan[k] has room for */
};

static bool leftover_init(struct leftover *l, size_t nstate, size_t nscan)
{
	*l = (struct leftover){ .nstate = nstate, .nscan = nscan };
	l->state = calloc(nstate ? nstate : 1, sizeof(*l->state));
	l->scan = calloc(nscan ? nscan : 1, sizeof(*l->scan));
	return l->state && l->scan;
}

static void leftover_free(struct leftover *l)
{
	for (size_t k = 0; l->state && k < l->nstate; k++)
		free(l->state[k]);
	for (size_t k = 0; l->scan && k < l->nscan; k++) {
		for (int64_t t = 0; l->scan[k] && t < l->cap; t++)
			free(l->scan[k][t]);
		free(l->scan[k]);
	}
	free(l->state);
	free(l->scan);
}

/* Keep what iteration t's body outputs first .. first + nstate + nscan give. */
static npurt_status leftover_take(struct ox_imp *im, struct unroll *u, struct leftover *l,
				  size_t first, int64_t t)
{
	if (t >= l->cap) {
		int64_t cap = l->cap ? 2 * l->cap : 16;

		for (size_t k = 0; k < l->nscan; k++) {
			char **p = realloc(l->scan[k], (size_t)cap * sizeof(*p));

			if (!p)
				return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
			memset(p + l->cap, 0, (size_t)(cap - l->cap) * sizeof(*p));
			l->scan[k] = p;
		}
		l->cap = cap;
	}
	for (size_t k = 0; k < l->nstate + l->nscan; k++) {
		const char *o = iteration_output(im, u, first + k);
		char **slot = k < l->nstate ? &l->state[k] : &l->scan[k - l->nstate][t];

		if (!o)
			return npurt_last_status();
		free(*slot);
		if (!(*slot = strdup(o)))
			return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	}
	return NPURT_OK;
}

/*
 * Loop (opset 1 on): inputs M, cond, v_initial...; the body takes
 * (iteration, cond, v...) and gives (cond, v..., scan...). Runs while
 * iteration < M (if M is given) and cond (if cond is given).
 */
npurt_status ox_op_loop(struct ox_imp *im, const Onnx__NodeProto *n)
{
	const char *m_name = n->n_input > 0 ? n->input[0] : "";
	const char *c_name = n->n_input > 1 ? n->input[1] : "";
	size_t nv = n->n_input > 2 ? n->n_input - 2 : 0;
	int64_t trips = INT64_MAX, cond = 1, t = 0;
	struct leftover l = { 0 };
	npurt_status st;
	struct unroll u;

	st = unroll_begin(im, n, &u);
	if (st)
		goto out;
	if (u.body->n_input != nv + 2 || u.body->n_output < nv + 1) {
		st = ox_fail(im, NPURT_ERR_INVALID, "its body takes %zu inputs and gives %zu "
			     "outputs, for %zu loop-carried values", u.body->n_input,
			     u.body->n_output, nv);
		goto out;
	}
	if (!leftover_init(&l, nv, u.body->n_output - 1 - nv)) {
		st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		goto out;
	}
	if (n->n_output > nv + l.nscan) {
		st = ox_fail(im, NPURT_ERR_INVALID, "%zu outputs, its body gives %zu", n->n_output,
			     nv + l.nscan);
		goto out;
	}
	if (m_name[0] && !folded(im, m_name, &trips)) {
		st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "its trip count \"%.64s\" is computed on "
			     "the device: the device runs a static task list, so a Loop is "
			     "unrolled, and needs its count at import (pin the inputs it comes "
			     "from)", m_name);
		goto out;
	}
	if (c_name[0] && !folded(im, c_name, &cond)) {
		st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "its condition \"%.64s\" is computed on the "
			     "device: a Loop is unrolled, and needs it at import", c_name);
		goto out;
	}
	for (size_t k = 0; k < nv; k++)
		if (!(l.state[k] = strdup(n->input[k + 2]))) {
			st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
			goto out;
		}
	for (; t < trips && cond; t++) {
		const char *c;

		st = iteration_begin(im, &u);
		if (!st)
			st = bind_const(im, &u, 0, OX_INT64, t);
		if (!st)
			st = bind_const(im, &u, 1, OX_BOOL, 1);
		for (size_t k = 0; !st && k < nv; k++)
			st = bind_view(im, &u, k + 2, l.state[k]);
		if (!st)
			st = iteration_import(im, &u, t);
		if (!st)
			st = leftover_take(im, &u, &l, 1, t);
		if (st)
			break;
		/* Without a cond input, the body's condition is ignored. */
		if (!c_name[0])
			continue;
		c = iteration_output(im, &u, 0);
		if (!c) {
			st = npurt_last_status();
			break;
		}
		if (!folded(im, c, &cond)) {
			st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "the condition its body gives in "
				     "iteration %lld is computed on the device: a Loop is "
				     "unrolled, and needs it at import", (long long)t);
			break;
		}
	}
	for (size_t k = 0; !st && k < n->n_output; k++) {
		if (!n->output[k][0])
			continue;
		if (k < nv)
			st = output_view(im, l.state[k], n->output[k]);
		else if (!t)
			st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "it runs no iteration, and scan "
				     "output %zu (\"%.64s\") would be empty", k, n->output[k]);
		else
			st = stack(im, l.scan[k - nv], t, 0, false, n->output[k]);
	}
	if (!st)
		im->info.folded++;
out:
	leftover_free(&l);
	unroll_end(&u);
	return st;
}

/* Value `from` at position pos of its axis `axis`, that axis dropped, as `name`. */
static npurt_status slice_view(struct ox_imp *im, const char *from, uint32_t axis, int64_t pos,
			       const char *name)
{
	struct ox_val *v = ox_find(im, from);
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	uint32_t nd = 0;

	if (!v)
		return ox_fail(im, NPURT_ERR_INVALID, "\"%.64s\" is defined by no earlier node",
			       from);
	for (uint32_t k = 0; k < v->ndim; k++) {
		if (k == axis)
			continue;
		dims[nd] = v->dims[k];
		stride[nd++] = v->stride[k];
	}
	return ox_view(im, v, name, nd, dims, v->off + (uint64_t)(pos * v->stride[axis]),
		       stride) ? NPURT_OK : npurt_last_status();
}

/* A Scan's attributes, for its scan inputs and outputs. */
struct scan_attrs {
	size_t nstate, nin, nout;
	int64_t in_axis[OX_MAX_OUTPUTS], in_rev[OX_MAX_OUTPUTS];
	int64_t out_axis[OX_MAX_OUTPUTS], out_rev[OX_MAX_OUTPUTS];
};

/*
 * One Scan over states[0..nstate) and scan inputs ins[0..nin): the body
 * once per position along the scan axis, the final states into
 * outs[0..nstate) and the stacked scan outputs into outs[nstate..) ("" or
 * NULL: not wanted).
 */
static npurt_status scan_run(struct ox_imp *im, struct unroll *u, const struct scan_attrs *sa,
			     const char *const *states, const char *const *ins,
			     const char *const *outs, size_t nouts)
{
	struct leftover l;
	int64_t steps = -1;
	npurt_status st = NPURT_OK;

	for (size_t j = 0; j < sa->nin; j++) {
		struct ox_val *x = ox_find(im, ins[j]);
		int a = x ? ox_axis(sa->in_axis[j], x->ndim) : -1;

		if (a < 0)
			return ox_fail(im, NPURT_ERR_INVALID, "scan input %zu (\"%.64s\"): axis %lld",
				       j, ins[j], (long long)sa->in_axis[j]);
		if (steps >= 0 && x->dims[a] != steps)
			return ox_fail(im, NPURT_ERR_INVALID, "scan inputs of %lld and %lld steps",
				       (long long)steps, (long long)x->dims[a]);
		steps = x->dims[a];
	}
	if (steps <= 0)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "no steps to scan: its outputs would be "
			       "empty");
	if (!leftover_init(&l, sa->nstate, sa->nout)) {
		leftover_free(&l);
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	}
	for (size_t k = 0; k < sa->nstate; k++)
		if (!(l.state[k] = strdup(states[k])))
			st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	for (int64_t t = 0; !st && t < steps; t++) {
		st = iteration_begin(im, u);
		for (size_t k = 0; !st && k < sa->nstate; k++)
			st = bind_view(im, u, k, l.state[k]);
		for (size_t j = 0; !st && j < sa->nin; j++) {
			struct ox_val *x = ox_find(im, ins[j]);
			int a = ox_axis(sa->in_axis[j], x->ndim);

			st = slice_view(im, ins[j], (uint32_t)a, sa->in_rev[j] ? steps - 1 - t : t,
					u->g->input[sa->nstate + j]->name);
		}
		if (!st)
			st = iteration_import(im, u, t);
		if (!st)
			st = leftover_take(im, u, &l, 0, t);
	}
	for (size_t k = 0; !st && k < nouts; k++) {
		if (!outs[k] || !outs[k][0])
			continue;
		if (k < sa->nstate)
			st = output_view(im, l.state[k], outs[k]);
		else
			st = stack(im, l.scan[k - sa->nstate], steps, sa->out_axis[k - sa->nstate],
				   sa->out_rev[k - sa->nstate], outs[k]);
	}
	leftover_free(&l);
	return st;
}

/* An ints attribute of up to `count` values into v (default def), checked. */
static npurt_status scan_ints(struct ox_imp *im, const Onnx__NodeProto *n, const char *name,
			      size_t count, int64_t def, int64_t *v)
{
	const Onnx__AttributeProto *a = ox_attr(n, name);

	for (size_t k = 0; k < count; k++)
		v[k] = def;
	if (!a)
		return NPURT_OK;
	if (a->n_ints != count)
		return ox_fail(im, NPURT_ERR_INVALID, "%s has %zu values, for %zu", name, a->n_ints,
			       count);
	memcpy(v, a->ints, count * sizeof(v[0]));
	return NPURT_OK;
}

/*
 * Scan before opset 9: input 0 the optional sequence lengths, then the
 * states and scan inputs, all with a batch axis 0 and the scan axis 1
 * after it; the body sees one batch entry. Each entry is scanned on its
 * own and the outputs stacked back along the batch axis.
 */
static npurt_status scan_batched(struct ox_imp *im, const Onnx__NodeProto *n, struct unroll *u,
				 struct scan_attrs *sa)
{
	const char *lens = n->input[0];
	size_t nall = sa->nstate + sa->nin, nouts = n->n_output;
	char ***parts = calloc(nouts ? nouts : 1, sizeof(*parts));
	ox_name (*names)[OX_MAX_OUTPUTS] = calloc(2, sizeof(*names));
	const char *ins[2 * OX_MAX_OUTPUTS], *outs[OX_MAX_OUTPUTS];
	struct ox_val *x = ox_in(im, n, 1);
	npurt_status st = NPURT_OK;
	int64_t batch = 0, b;

	if (!parts || !names) {
		st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		goto out;
	}
	if (!x || !x->ndim || (batch = x->dims[0]) <= 0) {
		st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "no batch to scan");
		goto out;
	}
	if (lens[0]) {
		struct ox_val *sl = ox_find(im, lens);
		struct ox_val *s0 = ox_in(im, n, 1 + sa->nstate);

		for (int64_t k = 0; sl && s0 && sl->is_const && k < (int64_t)ox_count(sl); k++)
			if (ox_geti(sl, (uint64_t)k) != s0->dims[1])
				sl = NULL;
		if (!sl || !sl->is_const || !s0) {
			st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "sequence_lens \"%.64s\" is not the "
				     "full length of every sequence, as a constant", lens);
			goto out;
		}
	}
	for (size_t k = 0; k < nouts; k++)
		if (!(parts[k] = calloc((size_t)batch, sizeof(char *)))) {
			st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
			goto out;
		}
	for (b = 0; !st && b < batch; b++) {
		for (size_t k = 0; !st && k < nall; k++) {
			ins[k] = ox_tmp_name(im, names[0][k], sizeof(names[0][k]), "scan");
			st = slice_view(im, n->input[1 + k], 0, b, ins[k]);
		}
		for (size_t k = 0; !st && k < nouts; k++) {
			outs[k] = n->output[k][0] ? ox_tmp_name(im, names[1][k], sizeof(names[1][k]),
							       "scan") : "";
			if (outs[k][0] && !(parts[k][b] = strdup(outs[k])))
				st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		}
		if (!st)
			st = scan_run(im, u, sa, ins, ins + sa->nstate, outs, nouts);
	}
	for (size_t k = 0; !st && k < nouts; k++)
		if (n->output[k][0])
			st = stack(im, parts[k], batch, 0, false, n->output[k]);
out:
	for (size_t k = 0; parts && k < nouts; k++) {
		for (b = 0; parts[k] && b < batch; b++)
			free(parts[k][b]);
		free(parts[k]);
	}
	free(parts);
	free(names);
	return st;
}

npurt_status ox_op_scan(struct ox_imp *im, const Onnx__NodeProto *n)
{
	bool batched = im->opset < 9;
	size_t first = batched ? 1 : 0;
	struct scan_attrs sa = { 0 };
	int64_t nin = ox_attr_i(n, "num_scan_inputs", -1);
	npurt_status st;
	struct unroll u;

	st = unroll_begin(im, n, &u);
	if (st)
		goto out;
	if (nin < 1 || (size_t)nin > n->n_input - first ||
	    n->n_input - first > OX_MAX_OUTPUTS || n->n_output > OX_MAX_OUTPUTS) {
		st = ox_fail(im, NPURT_ERR_INVALID, "num_scan_inputs %lld of %zu inputs",
			     (long long)nin, n->n_input - first);
		goto out;
	}
	sa.nin = (size_t)nin;
	sa.nstate = n->n_input - first - sa.nin;
	if (u.body->n_input != sa.nstate + sa.nin || u.body->n_output < sa.nstate ||
	    u.body->n_output - sa.nstate > OX_MAX_OUTPUTS || n->n_output > u.body->n_output ||
	    sa.nstate > OX_MAX_OUTPUTS) {
		st = ox_fail(im, NPURT_ERR_INVALID, "its body takes %zu inputs and gives %zu "
			     "outputs, for %zu states and %zu scan inputs", u.body->n_input,
			     u.body->n_output, sa.nstate, sa.nin);
		goto out;
	}
	sa.nout = u.body->n_output - sa.nstate;
	/* before 9: one "directions" for the inputs, every axis the batch's next */
	st = scan_ints(im, n, batched ? "directions" : "scan_input_directions", sa.nin, 0,
		       sa.in_rev);
	if (!st)
		st = scan_ints(im, n, "scan_input_axes", batched ? 0 : sa.nin, 0, sa.in_axis);
	if (!st)
		st = scan_ints(im, n, "scan_output_axes", batched ? 0 : sa.nout, 0, sa.out_axis);
	if (!st)
		st = scan_ints(im, n, "scan_output_directions", batched ? 0 : sa.nout, 0,
			       sa.out_rev);
	if (st)
		goto out;
	if (batched)
		st = scan_batched(im, n, &u, &sa);
	else
		st = scan_run(im, &u, &sa, (const char *const *)n->input,
			      (const char *const *)n->input + sa.nstate,
			      (const char *const *)n->output, n->n_output);
	if (!st)
		im->info.folded++;
out:
	unroll_end(&u);
	return st;
}
