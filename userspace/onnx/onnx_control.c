// SPDX-License-Identifier: MIT
/*
 * Control flow. An If whose condition folds at import (a constant, or
 * computed from static shapes: exporters write `if x.shape[0] > 1`) is
 * no control flow on the device: the branch it picks is imported in its
 * place, node by node, reading the enclosing graphs' values by name, and
 * the If's outputs become views of the branch's. An If whose condition
 * the device computes needs the host to decide per run: refused, saying
 * so.
 */
#include <string.h>

#include "error.h"
#include "onnx.h"

npurt_status ox_op_if(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *c = ox_in(im, n, 0);
	const Onnx__AttributeProto *a;
	const Onnx__GraphProto *b;
	struct ox_scope sc;
	npurt_status st;
	bool then;

	if (!c)
		return ox_fail(im, NPURT_ERR_INVALID, "no condition");
	if (!c->is_const)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "condition \"%.64s\" is computed on the "
			       "device; only an If whose condition folds at import is inlined",
			       c->name);
	if (ox_count(c) != 1)
		return ox_fail(im, NPURT_ERR_INVALID, "a condition of %llu elements, 1 wanted",
			       (unsigned long long)ox_count(c));
	then = ox_getf(c, 0) != 0;
	a = ox_attr(n, then ? "then_branch" : "else_branch");
	if (!a || !a->g)
		return ox_fail(im, NPURT_ERR_INVALID, "no %s graph", then ? "then_branch" :
			       "else_branch");
	b = a->g;
	if (b->n_output != n->n_output)
		return ox_fail(im, NPURT_ERR_INVALID, "its %s has %zu outputs, the If %zu",
			       then ? "then_branch" : "else_branch", b->n_output, n->n_output);
	for (size_t k = 0; k < b->n_initializer; k++) {
		if (b->initializer[k]->name && ox_find(im, b->initializer[k]->name))
			return ox_fail(im, NPURT_ERR_INVALID, "initializer \"%.64s\" of the %s is "
				       "defined already", b->initializer[k]->name,
				       then ? "then_branch" : "else_branch");
		if (!ox_tensor_proto(im, b->initializer[k], NULL))
			return npurt_last_status();
	}
	sc = (struct ox_scope){ .graph = im->graph, .node_index = im->node_index, .node = n,
				.branch = then ? "then_branch" : "else_branch", .up = im->scope };
	im->scope = &sc;
	st = ox_import_nodes(im, b);
	im->scope = sc.up;
	im->graph = sc.graph;
	im->node_index = sc.node_index;
	im->node = n;
	if (st)
		return st;
	for (size_t k = 0; k < n->n_output; k++) {
		const char *name = b->output[k]->name;
		struct ox_val *v = name ? ox_find(im, name) : NULL;

		if (!n->output[k][0])
			continue;
		if (!v)
			return ox_fail(im, NPURT_ERR_INVALID, "output %zu of its %s (\"%.64s\") is "
				       "computed by none of its nodes", k, sc.branch,
				       name ? name : "");
		if (!ox_view(im, v, n->output[k], v->ndim, v->dims, v->off, v->stride))
			return npurt_last_status();
	}
	im->info.folded++;
	return NPURT_OK;
}
