// SPDX-License-Identifier: MIT
/*
 * Stages (Documentation/executor.rst, "Values the shapes wait for"): a
 * model whose shapes hang on values only a run computes -- NonZero's
 * count, TopK's k when the graph computes it -- cannot be lowered whole
 * before its run. A session cuts such a model's top-level graph at each
 * such node into stages, each a model of its own that is lowered, cached
 * and run per shape as any session's model is. Between two stages the
 * run waits for the first (a synchronization the session counts) and the
 * value read back decides the next stage's shapes:
 *
 *  - NonZero runs on the host after its stage: its count is a shape of
 *    the next stage's input;
 *  - a TopK of a computed k begins the next stage, where k is pinned by
 *    its value, so that stage's plans are keyed by k too.
 *
 * A value made in one stage and read in a later one is the first's
 * output and the later one's input. A Constant node is copied into each
 * stage that reads it instead. ONNX sorts a graph's nodes, so cutting the
 * node list keeps each stage reading only what earlier stages, host
 * nodes or the model's inputs made.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx.h"
#include "onnx_stages.h"

/* A set of names, in the order first added; they point into the model. */
struct names {
	const char **v;
	uint32_t n, cap;
};

static bool has(const struct names *ns, const char *name)
{
	for (uint32_t k = 0; k < ns->n; k++)
		if (!strcmp(ns->v[k], name))
			return true;
	return false;
}

static bool add(struct names *ns, const char *name)
{
	if (!name || !name[0] || has(ns, name))
		return true;
	if (ns->n == ns->cap) {
		uint32_t cap = ns->cap ? 2 * ns->cap : 16;
		const char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return false;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n++] = name;
	return true;
}

/*
 * Every name node n reads, also inside its subgraphs (which read the
 * outer graph's values by name). A subgraph's own names come along too;
 * no stage has them to give, so they never become a stage's input.
 */
static bool reads(const Onnx__NodeProto *n, struct names *r)
{
	bool ok = true;

	for (size_t i = 0; i < n->n_input; i++)
		ok &= add(r, n->input[i]);
	for (size_t a = 0; a < n->n_attribute; a++) {
		const Onnx__AttributeProto *at = n->attribute[a];

		for (size_t i = 0; at->g && i < at->g->n_node; i++)
			ok &= reads(at->g->node[i], r);
		for (size_t k = 0; k < at->n_graphs; k++)
			for (size_t i = 0; i < at->graphs[k]->n_node; i++)
				ok &= reads(at->graphs[k]->node[i], r);
	}
	return ok;
}

bool ox_graph_initializer(const Onnx__GraphProto *g, const char *name)
{
	for (size_t k = 0; k < g->n_initializer; k++)
		if (g->initializer[k]->name && !strcmp(g->initializer[k]->name, name))
			return true;
	return false;
}

static const Onnx__ValueInfoProto *graph_input(const Onnx__GraphProto *g, const char *name)
{
	for (size_t k = 0; k < g->n_input; k++)
		if (g->input[k]->name && !strcmp(g->input[k]->name, name))
			return g->input[k];
	return NULL;
}

static bool graph_output(const Onnx__GraphProto *g, const char *name)
{
	for (size_t k = 0; k < g->n_output; k++)
		if (g->output[k]->name && !strcmp(g->output[k]->name, name))
			return true;
	return false;
}

bool ox_values_pin(const char *const *values, uint32_t n, const char *name)
{
	for (uint32_t k = 0; k < n; k++) {
		const char *eq = strrchr(values[k], '=');

		if (eq && (size_t)(eq - values[k]) == strlen(name) &&
		    !strncmp(values[k], name, strlen(name)))
			return true;
	}
	return false;
}

/*
 * Known before any run: an initializer, a Constant node's output, or an
 * input the caller pins by value (values[0..nvalues)).
 */
static bool constant(const Onnx__GraphProto *g, const char *name, const char *const *values,
		     uint32_t nvalues)
{
	long p = ox_graph_producer(g, name);

	return ox_graph_initializer(g, name) || (p >= 0 && ox_op_is(g->node[p], "Constant")) ||
	       (p < 0 && ox_values_pin(values, nvalues, name));
}

/* Where a stage begins and ends in the top-level node list, while cutting. */
struct span {
	uint32_t first, end;
	const Onnx__NodeProto *host;
	const char *by_value;
};

static void stage_free(struct ox_stage *st)
{
	free(st->nodes);
	free(st->in);
	free(st->by_value);
	free(st->out);
	free(st->file);
	free(st->rank);
}

void ox_stages_free(struct ox_stages *s)
{
	if (!s)
		return;
	for (uint32_t j = 0; s->st && j < s->n; j++)
		stage_free(&s->st[j]);
	free(s->st);
	if (s->m)
		onnx__model_proto__free_unpacked(s->m, NULL);
	free(s);
}

/* What later stages' nodes read, and what host nodes from stage j's on read. */
static bool read_after(const Onnx__GraphProto *g, const struct span *sp, uint32_t n, uint32_t j,
		       struct names *nodes, struct names *hosts)
{
	bool ok = true;

	for (uint32_t k = j; k < n; k++) {
		for (uint32_t i = sp[k].first; k > j && i < sp[k].end; i++)
			ok &= reads(g->node[i], nodes);
		if (sp[k].host)
			ok &= reads(sp[k].host, hosts);
	}
	return ok;
}

/* Stage j's nodes, inputs and outputs, from its span. */
static npurt_status fill(const Onnx__GraphProto *g, const struct span *sp, uint32_t n, uint32_t j,
			 struct ox_stage *st)
{
	struct names r = { 0 }, later = { 0 }, hosts = { 0 }, copies = { 0 };
	const struct span *p = &sp[j];
	bool ok = true;
	uint32_t k;

	st->host = p->host;
	for (uint32_t i = p->first; i < p->end; i++)
		ok &= reads(g->node[i], &r);
	ok &= read_after(g, sp, n, j, &later, &hosts);
	st->nodes = calloc(r.n + (p->end - p->first) + 1, sizeof(*st->nodes));
	st->in = calloc(r.n + 1, sizeof(*st->in));
	st->by_value = calloc(r.n + 1, sizeof(*st->by_value));
	if (!ok || !st->nodes || !st->in || !st->by_value)
		goto nomem;
	for (k = 0; k < r.n; k++) {
		long q = ox_graph_producer(g, r.v[k]);

		if (q >= 0 && ox_op_is(g->node[q], "Constant")) {
			if ((q < p->first || q >= p->end) && !has(&copies, r.v[k]))
				st->nodes[st->n_nodes++] = g->node[q];
			ok &= add(&copies, r.v[k]);
		} else if (!ox_graph_initializer(g, r.v[k]) &&
			   ((q < 0 && graph_input(g, r.v[k])) || (q >= 0 && q < p->first))) {
			st->by_value[st->n_in] = p->by_value && !strcmp(p->by_value, r.v[k]);
			st->in[st->n_in++] = r.v[k];
		}
	}
	for (uint32_t i = p->first; i < p->end; i++)
		st->nodes[st->n_nodes++] = g->node[i];
	/*
	 * Outputs: made here and read after, or the model's. A later stage
	 * has its own copy of a Constant; a host node reads the value.
	 */
	for (uint32_t i = p->first; ok && i < p->end; i++) {
		const Onnx__NodeProto *nd = g->node[i];

		for (size_t o = 0; o < nd->n_output; o++) {
			const char *name = nd->output[o];
			bool copied = ox_op_is(nd, "Constant");

			if (!name[0] || !(graph_output(g, name) || has(&hosts, name) ||
					  (has(&later, name) && !copied)))
				continue;
			if (!(st->n_out & 15)) {
				const char **v = realloc(st->out, (st->n_out + 16) * sizeof(*v));

				if (!v)
					goto nomem;
				st->out = v;
			}
			st->out[st->n_out++] = name;
		}
	}
	if (!ok)
		goto nomem;
	free(r.v);
	free(later.v);
	free(hosts.v);
	free(copies.v);
	return NPURT_OK;
nomem:
	free(r.v);
	free(later.v);
	free(hosts.v);
	free(copies.v);
	return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_create: out of memory");
}

/*
 * Where the graph is cut: a NonZero of a value a run computes ends a
 * stage (of a constant, the importer folds it), a TopK of a computed k
 * begins one.
 */
static uint32_t spans(const Onnx__GraphProto *g, const char *const *values, uint32_t nvalues,
		      struct span *sp, bool *cut)
{
	uint32_t n = 0, start = 0;
	const char *pending = NULL;

	*cut = false;
	for (uint32_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *nd = g->node[i];

		if (ox_op_is(nd, "NonZero") && nd->n_input && nd->input[0][0] &&
		    !constant(g, nd->input[0], values, nvalues)) {
			sp[n++] = (struct span){ start, i, nd, pending };
			start = i + 1;
			pending = NULL;
			*cut = true;
		} else if (ox_op_is(nd, "TopK") && nd->n_input >= 2 && nd->input[1][0] &&
			   !constant(g, nd->input[1], values, nvalues)) {
			if (i > start)
				sp[n++] = (struct span){ start, i, NULL, pending };
			start = i;
			pending = nd->input[1];
			*cut = true;
		}
	}
	if (start < g->n_node)
		sp[n++] = (struct span){ start, (uint32_t)g->n_node, NULL, pending };
	return n;
}

npurt_status ox_stages_cut(const void *data, size_t size, const char *const *values,
			   uint32_t nvalues, struct ox_stages **out)
{
	struct ox_stages *s = calloc(1, sizeof(*s));
	struct span *sp = NULL;
	npurt_status st = NPURT_OK;
	bool cut;

	*out = NULL;
	if (!s)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_create: out of memory");
	s->m = onnx__model_proto__unpack(NULL, size, data);
	if (!s->m || !s->m->graph) {
		ox_stages_free(s);
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_create: not an ONNX "
				       "model (the protobuf does not parse as a ModelProto)");
	}
	sp = calloc(s->m->graph->n_node + 1, sizeof(*sp));
	if (!sp) {
		st = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_create: out of memory");
		goto out;
	}
	s->n = spans(s->m->graph, values, nvalues, sp, &cut);
	if (!cut)
		goto out;
	s->st = calloc(s->n, sizeof(*s->st));
	if (!s->st) {
		st = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_create: out of memory");
		goto out;
	}
	for (uint32_t j = 0; !st && j < s->n; j++) {
		st = fill(s->m->graph, sp, s->n, j, &s->st[j]);
		/* Nothing it makes is read (Constants the next stages copy): no device part. */
		if (!st && !s->st[j].n_out)
			s->st[j].n_nodes = 0;
	}
	if (!st) {
		*out = s;
		s = NULL;
	}
out:
	free(sp);
	ox_stages_free(s);
	return st;
}

/* An input's declaration as a stage's file has it: the value's dtype and rank. */
struct decl {
	Onnx__ValueInfoProto vi;
	Onnx__TypeProto type;
	Onnx__TypeProto__Tensor tensor;
	Onnx__TensorShapeProto shape;
	Onnx__TensorShapeProto__Dimension dim[NPURT_MAX_DIMS];
	Onnx__TensorShapeProto__Dimension *dims[NPURT_MAX_DIMS];
};

static void declare(struct decl *d, const char *name, const npurt_value *v)
{
	*d = (struct decl){ .vi = ONNX__VALUE_INFO_PROTO__INIT, .type = ONNX__TYPE_PROTO__INIT,
			    .tensor = ONNX__TYPE_PROTO__TENSOR__INIT,
			    .shape = ONNX__TENSOR_SHAPE_PROTO__INIT };
	for (uint32_t k = 0; k < v->ndim; k++) {
		d->dim[k] = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
		d->dims[k] = &d->dim[k];
	}
	d->shape.n_dim = v->ndim;
	d->shape.dim = d->dims;
	d->tensor.has_elem_type = 1;
	d->tensor.elem_type = ox_type(v->dtype);
	d->tensor.shape = &d->shape;
	d->type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	d->type.tensor_type = &d->tensor;
	d->vi.name = (char *)name;
	d->vi.type = &d->type;
}

npurt_status ox_stage_file(struct ox_stages *s, uint32_t j, const npurt_value *const *in)
{
	const Onnx__GraphProto *g = s->m->graph;
	struct ox_stage *st = &s->st[j];
	Onnx__GraphProto sg = *g;
	Onnx__ModelProto sm = *s->m;
	struct decl *decl = calloc(st->n_in + 1, sizeof(*decl));
	Onnx__ValueInfoProto *outs = calloc(st->n_out + 1, sizeof(*outs));
	Onnx__ValueInfoProto **ins = calloc(st->n_in + 1, sizeof(*ins));
	Onnx__ValueInfoProto **outp = calloc(st->n_out + 1, sizeof(*outp));
	Onnx__TensorProto **inits = calloc(g->n_initializer + 1, sizeof(*inits));
	struct names r = { 0 };
	npurt_status ret = NPURT_OK;
	bool ok = decl && outs && ins && outp && inits;

	/* made again for other ranks: the first run's declared them */
	free(st->file);
	st->file = NULL;
	if (!st->rank)
		st->rank = calloc(st->n_in + 1, sizeof(*st->rank));
	ok = ok && st->rank;

	for (uint32_t i = 0; ok && i < st->n_nodes; i++)
		ok = reads(st->nodes[i], &r);
	if (!ok) {
		ret = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < st->n_in; k++) {
		st->rank[k] = in[k] ? in[k]->ndim : UINT32_MAX;
		if (in[k]) {
			declare(&decl[k], st->in[k], in[k]);
			ins[k] = &decl[k].vi;
		} else if (!(ins[k] = (Onnx__ValueInfoProto *)graph_input(g, st->in[k]))) {
			ret = npurt_set_error(NPURT_ERR_INTERNAL, "npurt_onnx_session_run: no value "
					      "for \"%.64s\", an input of stage %u", st->in[k], j);
			goto out;
		}
	}
	for (uint32_t k = 0; k < st->n_out; k++) {
		outs[k] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
		outs[k].name = (char *)st->out[k];
		outp[k] = &outs[k];
	}
	sg.n_initializer = 0;
	for (size_t k = 0; k < g->n_initializer; k++)
		if (g->initializer[k]->name && has(&r, g->initializer[k]->name))
			inits[sg.n_initializer++] = g->initializer[k];
	sg.initializer = inits;
	sg.node = st->nodes;
	sg.n_node = st->n_nodes;
	sg.input = ins;
	sg.n_input = st->n_in;
	sg.output = outp;
	sg.n_output = st->n_out;
	sg.value_info = NULL;
	sg.n_value_info = 0;
	sm.graph = &sg;
	st->size = onnx__model_proto__get_packed_size(&sm);
	st->file = malloc(st->size ? st->size : 1);
	if (!st->file)
		ret = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of memory");
	else
		onnx__model_proto__pack(&sm, st->file);
out:
	free(r.v);
	free(decl);
	free(outs);
	free(ins);
	free(outp);
	free(inits);
	return ret;
}

bool ox_stage_file_fits(const struct ox_stage *st, const npurt_value *const *in)
{
	for (uint32_t k = 0; st->file && k < st->n_in; k++)
		if (st->rank[k] != (in[k] ? in[k]->ndim : UINT32_MAX))
			return false;
	return st->file != NULL;
}

/* Whether element k of x is nonzero: floats by value (-0 is zero, NaN is not). */
static bool nonzero_at(const npurt_value *x, size_t es, uint64_t k)
{
	const uint8_t *p = (const uint8_t *)x->data + k * es;
	uint64_t bits = 0;

	memcpy(&bits, p, es);	/* little endian: the element's bits, low first */
	switch (x->dtype) {
	case NPURT_F16:
	case NPURT_BF16:
		return bits & 0x7fff;
	case NPURT_F32:
		return bits & 0x7fffffffu;
	case NPURT_F64:
		return bits & 0x7fffffffffffffffull;
	default:
		return bits != 0;
	}
}

npurt_status ox_host_nonzero(const npurt_value *x, npurt_value *y, void **buf, size_t *cap)
{
	size_t es = npurt_dtype_size(x->dtype);
	uint64_t count = 1, nz = 0, at[NPURT_MAX_DIMS] = { 0 }, c = 0;
	int64_t *o;
	size_t need;

	if (!x->ndim)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "npurt_onnx_session_run: NonZero of "
				       "a scalar");
	for (uint32_t d = 0; d < x->ndim; d++)
		count *= x->shape[d];
	for (uint64_t k = 0; k < count; k++)
		nz += nonzero_at(x, es, k);
	need = (size_t)(x->ndim * nz * sizeof(int64_t));
	if (need > *cap) {
		void *b = realloc(*buf, need);

		if (!b)
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of "
					       "memory for NonZero's %llu positions",
					       (unsigned long long)nz);
		*buf = b;
		*cap = need;
	}
	o = *buf;
	/* Walk the positions as an odometer: no division per element. */
	for (uint64_t k = 0; k < count; k++) {
		if (nonzero_at(x, es, k)) {
			for (uint32_t d = 0; d < x->ndim; d++)
				o[d * nz + c] = (int64_t)at[d];
			c++;
		}
		for (uint32_t d = x->ndim; d-- > 0;) {
			if (++at[d] < x->shape[d])
				break;
			at[d] = 0;
		}
	}
	*y = (npurt_value){ .dtype = NPURT_I64, .ndim = 2, .shape = { x->ndim, nz },
			    .data = *buf, .bytes = need };
	return NPURT_OK;
}
