// SPDX-License-Identifier: MIT
/*
 * Control flow. An If whose condition folds at import (a constant, or
 * computed from static shapes: exporters write `if x.shape[0] > 1`) is
 * no control flow on the device: the branch it picks is imported in its
 * place, node by node, reading the enclosing graphs' values by name, and
 * the If's outputs become views of the branch's.
 *
 * An If whose condition the device computes (a wake-word model that runs
 * its verifier only when the detector fires) is lowered as a select:
 * both branches are imported and each output is Where(condition, then,
 * else), so a run stays one submit and the host never waits on a value.
 * That costs the branch not taken, and is only right when running it on
 * data it was not meant for is harmless: both branches must give each
 * output the same dtype and shape, and neither may index by values it
 * computes (Gather, Scatter: out of range on the other data). Else the
 * If is refused, saying why.
 */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

/* Ops that index by their inputs' values, which a select's idle branch may get wrong. */
static const char *const indexing_ops[] = {
	"Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND",
	"OneHot", "Compress", "NonZero", "TopK", "Loop", "Scan",
};

/* The first node of g (or of graphs inside it) that indexes by values, or NULL. */
static const Onnx__NodeProto *indexing_node(const Onnx__GraphProto *g)
{
	for (size_t i = 0; g && i < g->n_node; i++) {
		const Onnx__NodeProto *nd = g->node[i];

		for (size_t k = 0; k < sizeof(indexing_ops) / sizeof(indexing_ops[0]); k++)
			if (nd->op_type && !strcmp(nd->op_type, indexing_ops[k]))
				return nd;
		for (size_t a = 0; a < nd->n_attribute; a++) {
			const Onnx__NodeProto *in = indexing_node(nd->attribute[a]->g);

			if (in)
				return in;
		}
	}
	return NULL;
}

/* Import branch `which` of If n in a scope of its own; *b is its graph. */
static npurt_status import_branch(struct ox_imp *im, const Onnx__NodeProto *n, const char *which,
				  const Onnx__GraphProto **b)
{
	const Onnx__AttributeProto *a = ox_attr(n, which);
	struct ox_scope sc;
	npurt_status st;

	if (!a || !a->g)
		return ox_fail(im, NPURT_ERR_INVALID, "no %s graph", which);
	*b = a->g;
	if ((*b)->n_output != n->n_output)
		return ox_fail(im, NPURT_ERR_INVALID, "its %s has %zu outputs, the If %zu", which,
			       (*b)->n_output, n->n_output);
	for (size_t k = 0; k < (*b)->n_initializer; k++) {
		if ((*b)->initializer[k]->name && ox_find(im, (*b)->initializer[k]->name))
			return ox_fail(im, NPURT_ERR_INVALID, "initializer \"%.64s\" of the %s is "
				       "defined already", (*b)->initializer[k]->name, which);
		if (!ox_tensor_proto(im, (*b)->initializer[k], NULL))
			return npurt_last_status();
	}
	sc = (struct ox_scope){ .graph = im->graph, .node_index = im->node_index, .node = n,
				.branch = which, .iteration = -1, .up = im->scope };
	im->scope = &sc;
	st = ox_import_nodes(im, *b);
	im->scope = sc.up;
	im->graph = sc.graph;
	im->node_index = sc.node_index;
	im->node = n;
	return st;
}

/* Branch output k of graph b, which its nodes must have computed. */
static struct ox_val *branch_output(struct ox_imp *im, const Onnx__GraphProto *b, size_t k,
				   const char *which)
{
	const char *name = b->output[k]->name;
	struct ox_val *v = name ? ox_find(im, name) : NULL;

	if (!v)
		ox_fail(im, NPURT_ERR_INVALID, "output %zu of its %s (\"%.64s\") is computed by "
			"none of its nodes", k, which, name ? name : "");
	return v;
}

/* Both branches, each output selected by the condition (see the top). */
static npurt_status select_branches(struct ox_imp *im, const Onnx__NodeProto *n,
				    struct ox_val *c)
{
	const Onnx__GraphProto *tb, *eb;
	const Onnx__NodeProto *bad;
	const char *ab, *bb;
	ox_name cn, cs;
	npurt_status st;

	/* Importing the branches moves values: keep the condition's name. */
	snprintf(cn, sizeof(cn), "%s", c->name);
	for (int br = 0; br < 2; br++) {
		const char *which = br ? "else_branch" : "then_branch";
		const Onnx__AttributeProto *a = ox_attr(n, which);

		bad = a ? indexing_node(a->g) : NULL;
		if (bad)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "condition \"%.64s\" is computed on "
				       "the device, so both branches would run, and the %s's %s "
				       "node \"%.64s\" indexes by values it computes",
				       cn, which, bad->op_type, bad->name ? bad->name : "");
	}
	/* A condition of shape [1] would broadcast scalar outputs to [1]. */
	snprintf(cs, sizeof(cs), "%s", cn);
	if (c->ndim) {
		st = ox_emit(im, "Squeeze", (const char *const[]){ cn }, 1,
			     ox_tmp_name(im, cs, sizeof(cs), "if"), NULL);
		if (st)
			return st;
	}
	/* The select's idle branch must not write over what the other reads. */
	im->unrolling++;
	st = import_branch(im, n, "then_branch", &tb);
	if (!st)
		st = import_branch(im, n, "else_branch", &eb);
	im->unrolling--;
	for (size_t k = 0; !st && k < n->n_output; k++) {
		struct ox_val *t, *e;

		if (!n->output[k][0])
			continue;
		t = branch_output(im, tb, k, "then_branch");
		e = t ? branch_output(im, eb, k, "else_branch") : NULL;
		if (!e)
			return npurt_last_status();
		if (t->type != e->type || t->ndim != e->ndim ||
		    memcmp(t->dims, e->dims, t->ndim * sizeof(t->dims[0])))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "condition \"%.64s\" is computed on "
				       "the device, and the branches give output %zu as %s of %u "
				       "dimensions and %s of %u, or of other sizes: no select",
				       cn, k, ox_type_name(t->type), t->ndim,
				       ox_type_name(e->type), e->ndim);
		ab = tb->output[k]->name;
		bb = eb->output[k]->name;
		st = ox_emit(im, "Where", (const char *const[]){ cs, ab, bb }, 3, n->output[k],
			     NULL);
	}
	return st;
}

npurt_status ox_op_if(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *c = ox_in(im, n, 0);
	const Onnx__GraphProto *b;
	const char *which;
	npurt_status st;
	bool then;

	if (!c)
		return ox_fail(im, NPURT_ERR_INVALID, "no condition");
	if (ox_count(c) != 1)
		return ox_fail(im, NPURT_ERR_INVALID, "a condition of %llu elements, 1 wanted",
			       (unsigned long long)ox_count(c));
	if (!c->is_const)
		return select_branches(im, n, c);
	then = ox_getf(c, 0) != 0;
	which = then ? "then_branch" : "else_branch";
	st = import_branch(im, n, which, &b);
	if (st)
		return st;
	for (size_t k = 0; k < n->n_output; k++) {
		struct ox_val *v;

		if (!n->output[k][0])
			continue;
		v = branch_output(im, b, k, which);
		if (!v)
			return npurt_last_status();
		if (!ox_view(im, v, n->output[k], v->ndim, v->dims, v->off, v->stride))
			return npurt_last_status();
	}
	im->info.folded++;
	return NPURT_OK;
}
