// SPDX-License-Identifier: MIT
/*
 * Copies of a subgraph with its names renamed apart. An unrolled Loop or
 * Scan imports its body once per iteration, and the importer's values are
 * SSA: each copy must define names no other copy does. A copy renames
 * what the body defines (its inputs, initializers, nodes' outputs, and
 * those of graphs nested in it) and leaves the names it reads from the
 * graphs around it, which every copy shares. Node, attribute and graph
 * structs are copied shallowly; constants are shared, not copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool names_add(struct ox_body_names *bn, const char *name)
{
	if (!name || !name[0])
		return true;
	if (bn->n == bn->cap) {
		size_t cap = bn->cap ? 2 * bn->cap : 64;
		const char **p = realloc(bn->v, cap * sizeof(*p));

		if (!p)
			return false;
		bn->v = p;
		bn->cap = cap;
	}
	bn->v[bn->n++] = name;
	return true;
}

static bool collect(struct ox_body_names *bn, const Onnx__GraphProto *g)
{
	for (size_t k = 0; k < g->n_input; k++)
		if (!names_add(bn, g->input[k]->name))
			return false;
	for (size_t k = 0; k < g->n_initializer; k++)
		if (!names_add(bn, g->initializer[k]->name))
			return false;
	for (size_t k = 0; k < g->n_node; k++) {
		const Onnx__NodeProto *nd = g->node[k];

		for (size_t i = 0; i < nd->n_output; i++)
			if (!names_add(bn, nd->output[i]))
				return false;
		for (size_t a = 0; a < nd->n_attribute; a++)
			if (nd->attribute[a]->g && !collect(bn, nd->attribute[a]->g))
				return false;
	}
	return true;
}

static bool is_local(const struct ox_body_names *bn, const char *name)
{
	return bn->n && bsearch(&name, bn->v, bn->n, sizeof(bn->v[0]), by_str);
}

static void *owned(struct ox_body_copy *c, void *p)
{
	if (!p)
		return NULL;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		void **q = realloc(c->owned, cap * sizeof(*q));

		if (!q) {
			free(p);
			return NULL;
		}
		c->owned = q;
		c->cap = cap;
	}
	c->owned[c->n++] = p;
	return p;
}

void ox_body_copy_free(struct ox_body_copy *c)
{
	for (size_t k = 0; k < c->n; k++)
		free(c->owned[k]);
	free(c->owned);
	*c = (struct ox_body_copy){ 0 };
}

/* The name `name` has in copy c: renamed if the body defines it. */
static char *copy_name(struct ox_body_copy *c, const struct ox_body_names *bn, const char *name)
{
	size_t len;
	char *s;

	if (!name || !name[0] || !is_local(bn, name))
		return (char *)name;
	/* \001 starts no name an exporter writes: no clash with the file's */
	len = strlen(name) + 24;
	s = owned(c, malloc(len));
	if (s)
		snprintf(s, len, "\001%s#%u", name, c->tag);
	return s;
}

static char **copy_names(struct ox_body_copy *c, const struct ox_body_names *bn, char **names,
			 size_t n)
{
	char **v = owned(c, calloc(n ? n : 1, sizeof(*v)));

	for (size_t k = 0; v && k < n; k++)
		if (!(v[k] = copy_name(c, bn, names[k])))
			return NULL;
	return v;
}

static Onnx__GraphProto *copy_graph(struct ox_body_copy *c, const struct ox_body_names *bn,
				    const Onnx__GraphProto *g);

static Onnx__NodeProto *copy_node(struct ox_body_copy *c, const struct ox_body_names *bn,
				  const Onnx__NodeProto *nd)
{
	Onnx__NodeProto *m = owned(c, malloc(sizeof(*m)));

	if (!m)
		return NULL;
	*m = *nd;
	m->input = copy_names(c, bn, nd->input, nd->n_input);
	m->output = copy_names(c, bn, nd->output, nd->n_output);
	if (!m->input || !m->output)
		return NULL;
	for (size_t a = 0; a < nd->n_attribute; a++) {
		Onnx__AttributeProto **at;

		if (!nd->attribute[a]->g)
			continue;
		/* a graph inside reads this copy's values: a copy of it too */
		if (m->attribute == nd->attribute) {
			at = owned(c, malloc(nd->n_attribute * sizeof(*at)));
			if (!at)
				return NULL;
			memcpy(at, nd->attribute, nd->n_attribute * sizeof(*at));
			m->attribute = at;
		}
		m->attribute[a] = owned(c, malloc(sizeof(**at)));
		if (!m->attribute[a])
			return NULL;
		*m->attribute[a] = *nd->attribute[a];
		m->attribute[a]->g = copy_graph(c, bn, nd->attribute[a]->g);
		if (!m->attribute[a]->g)
			return NULL;
	}
	return m;
}

static Onnx__ValueInfoProto **copy_infos(struct ox_body_copy *c, const struct ox_body_names *bn,
					 Onnx__ValueInfoProto **vi, size_t n)
{
	Onnx__ValueInfoProto **v = owned(c, calloc(n ? n : 1, sizeof(*v)));

	for (size_t k = 0; v && k < n; k++) {
		v[k] = owned(c, malloc(sizeof(*v[k])));
		if (!v[k])
			return NULL;
		*v[k] = *vi[k];
		if (!(v[k]->name = copy_name(c, bn, vi[k]->name)))
			return NULL;
	}
	return v;
}

/* g with every local name renamed for copy c (constants shared, not copied). */
static Onnx__GraphProto *copy_graph(struct ox_body_copy *c, const struct ox_body_names *bn,
				    const Onnx__GraphProto *g)
{
	Onnx__GraphProto *m = owned(c, malloc(sizeof(*m)));

	if (!m)
		return NULL;
	*m = *g;
	m->input = copy_infos(c, bn, g->input, g->n_input);
	m->output = copy_infos(c, bn, g->output, g->n_output);
	m->node = owned(c, calloc(g->n_node ? g->n_node : 1, sizeof(*m->node)));
	m->initializer = owned(c, calloc(g->n_initializer ? g->n_initializer : 1,
					 sizeof(*m->initializer)));
	if (!m->input || !m->output || !m->node || !m->initializer)
		return NULL;
	for (size_t k = 0; k < g->n_node; k++)
		if (!(m->node[k] = copy_node(c, bn, g->node[k])))
			return NULL;
	for (size_t k = 0; k < g->n_initializer; k++) {
		m->initializer[k] = owned(c, malloc(sizeof(*m->initializer[k])));
		if (!m->initializer[k])
			return NULL;
		*m->initializer[k] = *g->initializer[k];
		if (!(m->initializer[k]->name = copy_name(c, bn, g->initializer[k]->name)))
			return NULL;
	}
	return m;
}

bool ox_body_names(struct ox_body_names *bn, const Onnx__GraphProto *g)
{
	*bn = (struct ox_body_names){ 0 };
	if (!collect(bn, g))
		return false;
	if (bn->n)
		qsort(bn->v, bn->n, sizeof(bn->v[0]), by_str);
	return true;
}

const Onnx__GraphProto *ox_body_copy(struct ox_body_copy *c, const struct ox_body_names *bn,
				     const Onnx__GraphProto *g, unsigned int tag)
{
	c->tag = tag;
	return copy_graph(c, bn, g);
}
