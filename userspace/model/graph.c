// SPDX-License-Identifier: MIT
/*
 * The graph builder: models without a compiler (npurt.h, "Models:
 * building"). It collects tensors (inputs, constants, feature maps,
 * views) and ops of the device's op library on up to eight streams,
 * infers each output's shape, adds the events that order streams where
 * one touches what another made, plans the feature maps by lifetime
 * (plan.c), and writes the model file (model_file.c), which it checks as
 * any loader would before it hands it out.
 *
 * Cross-stream order: each stream's view of the others is a vector clock
 * (how many of stream t's ops stream s has waited for). An op on s that
 * reads what t wrote, or writes what t read or wrote, needs t's op before
 * it: unless s's clock covers it, t signals an event at its end and s
 * waits for it. Within a stream, order is program order.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "graph.h"
#include "internal.h"
#include "model_file.h"
#include "npu_opdefs.h"
#include "npurt.h"

_Static_assert(NPURT_GRAPH_MAX_STREAMS == NPUM_MAX_STREAMS, "stream limits agree");

npurt_status graph_nomem(npurt_graph *g, const char *who)
{
	g->broken = NPURT_ERR_NO_MEMORY;
	return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
}

bool graph_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * elem);
	if (!q)
		return false;
	memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
	*p = q;
	*cap = n;
	return true;
}

npurt_status npurt_graph_create(npurt_graph **out)
{
	npurt_graph *g;

	if (!out)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_graph_create: NULL argument");
	g = calloc(1, sizeof(*g));
	if (!g)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_graph_create: out of memory");
	g->m.strings = calloc(1, 64);
	if (!g->m.strings) {
		free(g);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_graph_create: out of memory");
	}
	g->strings_cap = 64;
	g->m.strings_len = 1;	/* "" */
	g->m.plan.streams = 1;
	if (npurt_handle_add(g, NPURT_KIND_GRAPH, NULL, "npurt_graph_create")) {
		free(g->m.strings);
		free(g);
		return NPURT_ERR_NO_MEMORY;
	}
	*out = g;
	return NPURT_OK;
}

void npurt_graph_destroy(npurt_graph *g)
{
	/* NULL is a no-op; a graph destroyed already is said, and not read. */
	if (!g || npurt_handle_take(g, NPURT_KIND_GRAPH, "npurt_graph_destroy"))
		return;
	for (int s = 0; s < NPUM_MAX_STREAMS; s++)
		free(g->ops[s]);
	free(g->acc);
	free(g->produced);
	mf_free(&g->m);
	free(g);
}

static npurt_status check_graph(npurt_graph *g, const char *who)
{
	if (npurt_handle_check(g, NPURT_KIND_GRAPH, who))
		return NPURT_ERR_INVALID;
	if (g->broken)
		return npurt_set_error(g->broken, "%s: the graph ran out of memory earlier", who);
	return NPURT_OK;
}

uint32_t graph_string_add(npurt_graph *g, const char *s)
{
	size_t n = strlen(s) + 1;
	uint32_t at;

	if (n == 1)
		return 0;
	if (!graph_grow((void **)&g->m.strings, &g->strings_cap, g->m.strings_len + n, 1))
		return NPUM_NONE;
	at = (uint32_t)g->m.strings_len;
	memcpy(g->m.strings + at, s, n);
	g->m.strings_len += n;
	return at;
}

static npurt_status check_shape(npurt_dtype dtype, uint32_t ndim, const uint64_t *shape,
				const char *who)
{
	if (!shape || !ndim || ndim > NPURT_MAX_DIMS)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %u dimensions (1 to %d)", who, ndim,
				       NPURT_MAX_DIMS);
	if (!mf_dtype_size((uint32_t)dtype))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown dtype %d", who, (int)dtype);
	for (uint32_t k = 0; k < ndim; k++)
		if (!shape[k])
			return npurt_set_error(NPURT_ERR_INVALID, "%s: dimension %u is 0", who, k);
	return NPURT_OK;
}

/* A new dense tensor; NPUM_NONE with the error set. */
uint32_t graph_tensor_new(npurt_graph *g, const char *name, uint32_t dtype, uint32_t ndim,
			   const uint64_t *shape, uint8_t segment, const char *who)
{
	struct npum_tensor t = { .dtype = (uint8_t)dtype, .ndim = (uint8_t)ndim,
				 .segment = segment };
	uint64_t stride = 1;

	if (g->m.ntensors >= NPUM_MAX_TENSORS) {
		npurt_set_error(NPURT_ERR_INVALID, "%s: more than %d tensors", who, NPUM_MAX_TENSORS);
		return NPUM_NONE;
	}
	for (int k = (int)ndim - 1; k >= 0; k--) {
		t.shape[k] = shape[k];
		t.stride[k] = stride;
		stride *= shape[k];
	}
	t.bytes = mf_extent(&t);
	if (!t.bytes) {
		npurt_set_error(NPURT_ERR_INVALID, "%s: a tensor over %llu bytes", who,
				(unsigned long long)NPUM_MAX_TENSOR_BYTES);
		return NPUM_NONE;
	}
	t.name = name ? graph_string_add(g, name) : 0;
	if (t.name == NPUM_NONE ||
	    !graph_grow((void **)&g->m.tensors, &g->tensor_cap, g->m.ntensors + 1, sizeof(t)) ||
	    !graph_grow((void **)&g->acc, &g->acc_cap, g->m.ntensors + 1, sizeof(*g->acc)) ||
	    !graph_grow((void **)&g->produced, &g->produced_cap, g->m.ntensors + 1,
		  sizeof(*g->produced))) {
		graph_nomem(g, who);
		return NPUM_NONE;
	}
	g->m.tensors[g->m.ntensors] = t;
	return g->m.ntensors++;
}

static bool name_taken(const npurt_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->m.plan.inputs + g->m.plan.outputs; i++)
		if (!strcmp(g->m.strings + g->m.tensors[g->m.io[i].tensor].name, name))
			return true;
	return false;
}

npurt_status npurt_graph_input(npurt_graph *g, const char *name, npurt_dtype dtype, uint32_t ndim,
			       const uint64_t *shape, uint32_t *tensor)
{
	static const char who[] = "npurt_graph_input";
	npurt_status st = check_graph(g, who);
	uint32_t t;

	if (st)
		return st;
	if (!name || !*name || !tensor)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL or empty name, or NULL tensor", who);
	st = check_shape(dtype, ndim, shape, who);
	if (st)
		return st;
	if (g->m.plan.outputs)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(\"%s\"): inputs come before outputs",
				       who, name);
	if (name_taken(g, name))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: \"%s\" is taken", who, name);
	if (g->m.plan.inputs >= NPUM_MAX_IO)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: more than %d inputs and outputs", who,
				       NPUM_MAX_IO);
	if (!graph_grow((void **)&g->m.io, &g->io_cap, g->m.plan.inputs + 1, sizeof(*g->m.io)))
		return graph_nomem(g, who);
	t = graph_tensor_new(g, name, (uint32_t)dtype, ndim, shape, NPUM_SEG_IO, who);
	if (t == NPUM_NONE)
		return g->broken ? g->broken : NPURT_ERR_INVALID;
	g->m.tensors[t].base = g->m.plan.inputs;
	g->m.io[g->m.plan.inputs++] = (struct npum_io){ .tensor = t };
	g->produced[t] = true;
	*tensor = t;
	return NPURT_OK;
}

npurt_status npurt_graph_constant(npurt_graph *g, const char *name, npurt_dtype dtype,
				  uint32_t ndim, const uint64_t *shape, const void *data,
				  uint32_t *tensor)
{
	static const char who[] = "npurt_graph_constant";
	npurt_status st = check_graph(g, who);
	uint64_t at;
	uint32_t t;

	if (st)
		return st;
	if (!data || !tensor)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL data or tensor", who);
	st = check_shape(dtype, ndim, shape, who);
	if (st)
		return st;
	t = graph_tensor_new(g, name, (uint32_t)dtype, ndim, shape, NPUM_SEG_WEIGHTS, who);
	if (t == NPUM_NONE)
		return g->broken ? g->broken : NPURT_ERR_INVALID;
	at = (g->m.plan.weights_bytes + NPUM_ALIGN - 1) & ~(uint64_t)(NPUM_ALIGN - 1);
	if (at + g->m.tensors[t].bytes > NPUM_MAX_SEGMENT) {
		g->m.ntensors--;
		return npurt_set_error(NPURT_ERR_INVALID, "%s: weights over %llu bytes", who,
				       (unsigned long long)NPUM_MAX_SEGMENT);
	}
	if (!graph_grow((void **)&g->m.weights, &g->weights_cap, at + g->m.tensors[t].bytes, 1))
		return graph_nomem(g, who);
	memcpy(g->m.weights + at, data, g->m.tensors[t].bytes);
	g->m.tensors[t].offset = at;
	g->m.plan.weights_bytes = at + g->m.tensors[t].bytes;
	g->produced[t] = true;
	*tensor = t;
	return NPURT_OK;
}

npurt_status npurt_graph_tensor(npurt_graph *g, const char *name, npurt_dtype dtype, uint32_t ndim,
				const uint64_t *shape, uint32_t *tensor)
{
	static const char who[] = "npurt_graph_tensor";
	npurt_status st = check_graph(g, who);
	uint32_t t;

	if (st)
		return st;
	if (!tensor)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL tensor", who);
	st = check_shape(dtype, ndim, shape, who);
	if (st)
		return st;
	t = graph_tensor_new(g, name, (uint32_t)dtype, ndim, shape, NPUM_SEG_FMAP, who);
	if (t == NPUM_NONE)
		return g->broken ? g->broken : NPURT_ERR_INVALID;
	*tensor = t;
	return NPURT_OK;
}

static npurt_status check_tensor_id(const npurt_graph *g, uint32_t t, const char *who,
				    const char *what)
{
	if (t >= g->m.ntensors)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s %u is not a tensor of the graph",
				       who, what, t);
	return NPURT_OK;
}

npurt_status npurt_graph_view(npurt_graph *g, uint32_t base, uint64_t offset, uint32_t ndim,
			      const uint64_t *shape, const uint64_t *stride, uint32_t *tensor)
{
	static const char who[] = "npurt_graph_view";
	npurt_status st = check_graph(g, who);
	const struct npum_tensor *b;
	struct npum_tensor *v;
	uint32_t t;

	if (st)
		return st;
	if (!stride || !tensor)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL stride or tensor", who);
	st = check_tensor_id(g, base, who, "base");
	if (st)
		return st;
	/* A view of a view is a view of its base. */
	if (g->m.tensors[base].segment == NPUM_SEG_VIEW) {
		offset += g->m.tensors[base].offset / mf_dtype_size(g->m.tensors[base].dtype);
		base = g->m.tensors[base].base;
	}
	b = &g->m.tensors[base];
	st = check_shape((npurt_dtype)b->dtype, ndim, shape, who);
	if (st)
		return st;
	t = graph_tensor_new(g, NULL, b->dtype, ndim, shape, NPUM_SEG_VIEW, who);
	if (t == NPUM_NONE)
		return g->broken ? g->broken : NPURT_ERR_INVALID;
	b = &g->m.tensors[base];	/* the array may have moved */
	v = &g->m.tensors[t];
	v->base = base;
	v->offset = offset * mf_dtype_size(b->dtype);
	for (uint32_t k = 0; k < ndim; k++)
		v->stride[k] = stride[k];
	v->bytes = mf_extent(v);
	if (!v->bytes || v->offset > b->bytes || v->bytes > b->bytes - v->offset) {
		g->m.ntensors--;
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the view runs past its base's %llu bytes",
				       who, (unsigned long long)b->bytes);
	}
	*tensor = t;
	return NPURT_OK;
}

/* The memory a tensor is: itself or its view's base. */
static uint32_t base_of(const npurt_graph *g, uint32_t t)
{
	return g->m.tensors[t].segment == NPUM_SEG_VIEW ? g->m.tensors[t].base : t;
}

static npurt_status push_op(npurt_graph *g, uint32_t s, const struct npum_op *op, const char *who)
{
	size_t cap = g->ops_cap[s];
	uint32_t total = 0;

	for (int k = 0; k < NPUM_MAX_STREAMS; k++)
		total += g->nops[k];
	if (total >= NPUM_MAX_OPS)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: more than %d ops", who, NPUM_MAX_OPS);
	if (!graph_grow((void **)&g->ops[s], &cap, g->nops[s] + 1, sizeof(*op)))
		return graph_nomem(g, who);
	g->ops_cap[s] = (uint32_t)cap;
	g->ops[s][g->nops[s]++] = *op;
	if (s + 1 > g->m.plan.streams)
		g->m.plan.streams = s + 1;
	return NPURT_OK;
}

npurt_status graph_order_after(npurt_graph *g, uint32_t s, uint32_t t, uint32_t pos1,
				const char *who)
{
	struct npum_op sig = { .type = NPUM_OP_SIGNAL, .in = { NPUM_NONE, NPUM_NONE },
			       .out = NPUM_NONE }, wait;
	npurt_status st;

	if (s == t || !pos1 || g->clock[s][t] >= pos1)
		return NPURT_OK;
	sig.event = g->m.plan.events;
	wait = sig;
	wait.type = NPUM_OP_WAIT;
	st = push_op(g, t, &sig, who);
	if (st)
		return st;
	st = push_op(g, s, &wait, who);
	if (st) {
		g->nops[t]--;
		return st;
	}
	g->m.plan.events++;
	/* s has now seen all t had, and all t had seen. */
	for (uint32_t k = 0; k < NPUM_MAX_STREAMS; k++)
		if (g->clock[t][k] > g->clock[s][k])
			g->clock[s][k] = g->clock[t][k];
	g->clock[s][t] = g->nops[t];
	return NPURT_OK;
}

/* The waits an op on s touching tensor x needs before it. */
static npurt_status order_access(npurt_graph *g, uint32_t s, uint32_t x, bool write,
				 const char *who)
{
	const struct access *a = &g->acc[base_of(g, x)];
	npurt_status st = NPURT_OK;

	for (uint32_t t = 0; t < NPUM_MAX_STREAMS && !st; t++) {
		st = graph_order_after(g, s, t, a->write[t], who);
		if (!st && write)
			st = graph_order_after(g, s, t, a->read[t], who);
	}
	return st;
}

static void note_access(npurt_graph *g, uint32_t s, uint32_t x, bool write)
{
	struct access *a = &g->acc[base_of(g, x)];

	if (write)
		a->write[s] = g->nops[s];
	else
		a->read[s] = g->nops[s];
}

/* Add `op` on stream s: its waits first, then it, then what it touched. */
npurt_status graph_op_add(npurt_graph *g, uint32_t s, struct npum_op *op, bool reads_out,
			   const char *who)
{
	npurt_status st = NPURT_OK;
	char why[320];

	if (s >= NPUM_MAX_STREAMS)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: stream %u (0 to %d)", who, s,
				       NPUM_MAX_STREAMS - 1);
	/* Checked against the tensors now, with the model's own rules. */
	if (mf_op_check(&g->m, op, why, sizeof(why)))
		return op->type == NPUM_OP_KERNEL && npurt_op_name(op->kernel) ?
		       npurt_set_error(NPURT_ERR_INVALID, "%s(%s): %s", who,
				       npurt_op_name(op->kernel), why) :
		       npurt_set_error(NPURT_ERR_INVALID, "%s: %s", who, why);
	for (int k = 0; k < NPUM_OP_READS && !st; k++) {
		uint32_t x = npum_op_read(op, k);

		if (x == NPUM_NONE)
			continue;
		if (!g->produced[base_of(g, x)])
			return npurt_set_error(NPURT_ERR_INVALID,
					       "%s: tensor %u is read before anything writes it", who, x);
		st = order_access(g, s, x, false, who);
	}
	if (!st && reads_out && !g->produced[base_of(g, op->out)])
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: accumulates into tensor %u before anything writes it",
				       who, op->out);
	if (!st)
		st = order_access(g, s, op->out, true, who);
	if (!st)
		st = push_op(g, s, op, who);
	/* Waits already added stay: harmless, and the graph stays sound. */
	if (st)
		return st;
	for (int k = 0; k < NPUM_OP_READS; k++)
		if (npum_op_read(op, k) != NPUM_NONE)
			note_access(g, s, npum_op_read(op, k), false);
	note_access(g, s, op->out, true);
	g->produced[base_of(g, op->out)] = true;
	return NPURT_OK;
}

static npurt_status node_op(npurt_graph *g, const npurt_graph_node *n, struct npum_op *op,
			    const char *who)
{
	npurt_status st;

	if (!n)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL node", who);
	if (n->size < offsetof(npurt_graph_node, win))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: node size %u, want %zu", who, n->size,
				       sizeof(*n));
	if (!npurt_op_name(n->op))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown op %u", who, n->op);
	*op = (struct npum_op){ .type = NPUM_OP_KERNEL, .kernel = (uint16_t)n->op,
				.flags = n->flags, .in = { n->in[0], NPUM_NONE }, .axis = n->axis,
				.alpha = n->alpha, .beta = n->beta, .eps = n->eps,
				.block_dim = n->block_dim };
	if (n->size >= offsetof(npurt_graph_node, win) + sizeof(n->win) &&
	    npu_op_kind(n->op) == NPU_OPK_WINDOW) {
		const npurt_window *w = &n->win;
		const uint32_t *f[5] = { w->kernel, w->stride, w->dilation, w->pad, w->pad + 2 };

		for (int k = 0; k < 5; k++)
			for (int j = 0; j < 2; j++) {
				if (f[k][j] > 0xffff)
					return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): window "
							       "field %u over 65535", who,
							       npurt_op_name(n->op), f[k][j]);
				op->window[2 * k + j] = (uint16_t)f[k][j];
			}
		op->value = w->group;
		op->flags = w->flags;
		if (n->size >= offsetof(npurt_graph_node, win_d) + sizeof(n->win_d)) {
			const uint32_t d[5] = { n->win_d.kernel, n->win_d.stride,
						n->win_d.dilation, n->win_d.pad[0],
						n->win_d.pad[1] };

			for (int k = 0; k < 5; k++) {
				if (d[k] > 0xffff)
					return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): window "
							       "depth field %u over 65535", who,
							       npurt_op_name(n->op), d[k]);
				op->window_d[k] = (uint16_t)d[k];
			}
		}
	} else if (npu_op_kind(n->op) == NPU_OPK_WINDOW) {
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): the node's size %u leaves out "
				       "its window", who, npurt_op_name(n->op), n->size);
	}
	for (int k = 0; k < NPUM_MAX_DIMS; k++)
		*(k < 4 ? &op->perm[k] : &op->perm_hi[k - 4]) =
			(uint8_t)(n->perm[k] < 256 ? n->perm[k] : 255);
	if (npurt_op_inputs(n->op) == 2)
		op->in[1] = n->in[1];
	for (int k = 0; k < npurt_op_inputs(n->op); k++) {
		st = check_tensor_id(g, op->in[k], who, "input");
		if (st)
			return st;
	}
	if (n->size < offsetof(npurt_graph_node, epi) + sizeof(n->epi))
		return NPURT_OK;
	if (n->epi.act > 0xffff || n->epi.flags > 0xffff)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%s): epilogue act %u, flags %#x",
				       who, npurt_op_name(n->op), n->epi.act, n->epi.flags);
	op->epi_flags = (uint16_t)n->epi.flags;
	op->act = (uint16_t)n->epi.act;
	op->act_alpha = n->epi.alpha;
	op->act_beta = n->epi.beta;
	if (!(n->epi.flags & NPURT_EPILOGUE_BIAS))
		return NPURT_OK;
	op->bias = n->epi.bias;
	return check_tensor_id(g, op->bias, who, "bias");
}

/* The output an op makes of its inputs, for npurt_graph_add(). */
static npurt_status infer(const npurt_graph *g, const npurt_graph_node *n,
			  const struct npum_op *op, uint32_t *dtype,
			  uint32_t *ndim, uint64_t *shape, const char *who)
{
	const struct npum_tensor *a = &g->m.tensors[n->in[0]];

	*dtype = npu_op_out_dtype(n->op, a->dtype, (uint32_t)n->out_dtype);
	*ndim = a->ndim;
	memcpy(shape, a->shape, sizeof(a->shape));
	switch (n->op) {
	case NPU_OP_GEMM: {
		const struct npum_tensor *b = &g->m.tensors[n->in[1]];

		if (a->ndim != 2 || b->ndim != 2)
			return npurt_set_error(NPURT_ERR_INVALID, "%s: gemm takes 2-D inputs", who);
		shape[0] = n->flags & NPURT_LAUNCH_TRANS_A ? a->shape[1] : a->shape[0];
		shape[1] = n->flags & NPURT_LAUNCH_TRANS_B ? b->shape[0] : b->shape[1];
		break;
	}
	case NPU_OP_REDUCE_SUM: case NPU_OP_REDUCE_MEAN: case NPU_OP_REDUCE_MAX:
	case NPU_OP_REDUCE_MIN: case NPU_OP_REDUCE_PROD: case NPU_OP_ARGMAX: case NPU_OP_ARGMIN:
		if (n->axis >= a->ndim)
			return npurt_set_error(NPURT_ERR_INVALID, "%s: axis %u of %u dimensions", who,
					       n->axis, a->ndim);
		shape[n->axis] = 1;
		break;
	case NPU_OP_TRANSPOSE:
		for (uint32_t k = 0; k < a->ndim; k++) {
			if (n->perm[k] >= a->ndim)
				return npurt_set_error(NPURT_ERR_INVALID, "%s: perm[%u] = %u", who, k,
						       n->perm[k]);
			shape[k] = a->shape[n->perm[k]];
		}
		break;
	case NPU_OP_GATHER_ELEMENTS:
		memcpy(shape, g->m.tensors[n->in[1]].shape, sizeof(a->shape));
		break;
	case NPU_OP_CONV2D:
	case NPU_OP_MAXPOOL2D:
	case NPU_OP_AVGPOOL2D: {
		const struct npum_tensor *b = n->op == NPU_OP_CONV2D ? &g->m.tensors[n->in[1]] : NULL;
		struct npu_op wa = { .op = n->op };
		unsigned int nsp = a->ndim - 2;

		if ((a->ndim != 4 && a->ndim != 5) || (b && b->ndim != a->ndim))
			return npurt_set_error(NPURT_ERR_INVALID, "%s: %s takes [N, C, H, W] or "
					       "[N, C, D, H, W]", who, npurt_op_name(n->op));
		if (b)
			shape[1] = b->shape[0];
		mf_window_args(op, &wa);
		for (unsigned int k = 0; k < nsp; k++) {
			struct npu_win_dim d = npu_window_dim(&wa, nsp, k);

			shape[2 + k] = npu_window_out(a->shape[2 + k], d.pad0, d.pad1,
						      b ? b->shape[2 + k] : d.kernel, d.stride,
						      d.dilation, 0);
			if (!shape[2 + k])
				return npurt_set_error(NPURT_ERR_INVALID, "%s: the %s window does "
						       "not fit the input", who, npurt_op_name(n->op));
		}
		break;
	}
	default:
		break;
	}
	return NPURT_OK;
}

npurt_status npurt_graph_add(npurt_graph *g, const npurt_graph_node *node, uint32_t *out)
{
	static const char who[] = "npurt_graph_add";
	npurt_status st = check_graph(g, who);
	uint64_t shape[NPUM_MAX_DIMS];
	uint32_t dtype, ndim, t;
	struct npum_op op;

	if (st)
		return st;
	if (!out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL out", who);
	st = node_op(g, node, &op, who);
	if (!st)
		st = infer(g, node, &op, &dtype, &ndim, shape, who);
	if (st)
		return st;
	if (npu_op_reads_out(node->op, node->beta))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s reads its output: "
				       "npurt_graph_add_into() an existing tensor", who,
				       node->op == NPU_OP_GEMM ? "gemm with beta" : npurt_op_name(node->op));
	t = graph_tensor_new(g, NULL, dtype, ndim, shape, NPUM_SEG_FMAP, who);
	if (t == NPUM_NONE)
		return g->broken ? g->broken : NPURT_ERR_INVALID;
	op.out = t;
	st = graph_op_add(g, node->stream, &op, false, who);
	if (st) {
		g->m.ntensors--;
		return st;
	}
	*out = t;
	return NPURT_OK;
}

npurt_status npurt_graph_add_into(npurt_graph *g, const npurt_graph_node *node, uint32_t out)
{
	static const char who[] = "npurt_graph_add_into";
	npurt_status st = check_graph(g, who);
	struct npum_op op;

	if (st)
		return st;
	st = node_op(g, node, &op, who);
	if (!st)
		st = check_tensor_id(g, out, who, "output");
	if (st)
		return st;
	op.out = out;
	return graph_op_add(g, node->stream, &op, npu_op_reads_out(node->op, node->beta), who);
}

bool npurt_graph_fuse(npurt_graph *g, uint32_t out, uint32_t bias, uint32_t act, float alpha,
		      float beta)
{
	const struct access *a;
	struct npum_op *op = NULL, fused;
	uint32_t w = NPUM_MAX_STREAMS;	/* the stream of the op */
	char why[320];

	if (g->broken || out >= g->m.ntensors || base_of(g, out) != out || act > 0xffff ||
	    (bias != NPUM_NONE && (bias >= g->m.ntensors || !g->produced[base_of(g, bias)])))
		return false;
	for (uint32_t s = 0; s < NPUM_MAX_STREAMS && !op; s++) {
		const struct npum_op *last = g->nops[s] ? &g->ops[s][g->nops[s] - 1] : NULL;
		const struct npum_tensor *t = last ? &g->m.tensors[last->out] : NULL;

		/* its output `out` itself, or a dense view of all of it */
		if (last && last->type == NPUM_OP_KERNEL && base_of(g, last->out) == out &&
		    (last->out == out || (!t->offset && mf_dense(t) &&
					  t->bytes == g->m.tensors[out].bytes))) {
			op = &g->ops[s][g->nops[s] - 1];
			w = s;
		}
	}
	/* The bias comes before the activation: none may be there yet. */
	if (!op || op->act || (bias != NPUM_NONE && op->epi_flags & NPU_OP_E_BIAS))
		return false;
	/*
	 * No op may have read `out` after that op wrote it (on its stream, a
	 * read before the write saw the old contents), nor touched it on
	 * another stream: none of them would see the change. A bias another
	 * stream writes would need a wait before the op.
	 */
	a = &g->acc[out];
	for (uint32_t t = 0; t < NPUM_MAX_STREAMS; t++)
		if ((t == w ? a->read[t] >= a->write[t] && a->read[t] : a->read[t] || a->write[t]) ||
		    (bias != NPUM_NONE && t != w && g->acc[base_of(g, bias)].write[t]))
			return false;
	fused = *op;
	if (bias != NPUM_NONE) {
		fused.epi_flags |= NPU_OP_E_BIAS;
		fused.bias = bias;
	}
	fused.act = (uint16_t)act;
	fused.act_alpha = alpha;
	fused.act_beta = beta;
	if (mf_op_check(&g->m, &fused, why, sizeof(why)))
		return false;
	*op = fused;
	if (bias != NPUM_NONE)
		note_access(g, w, bias, false);
	return true;
}

npurt_status npurt_graph_copy(npurt_graph *g, uint32_t stream, uint32_t src, uint32_t dst)
{
	static const char who[] = "npurt_graph_copy";
	npurt_status st = check_graph(g, who);
	struct npum_op op = { .type = NPUM_OP_COPY, .in = { src, NPUM_NONE }, .out = dst };

	if (!st)
		st = check_tensor_id(g, src, who, "source");
	if (!st)
		st = check_tensor_id(g, dst, who, "destination");
	return st ? st : graph_op_add(g, stream, &op, false, who);
}

npurt_status npurt_graph_fill(npurt_graph *g, uint32_t stream, uint32_t dst, uint32_t value)
{
	static const char who[] = "npurt_graph_fill";
	npurt_status st = check_graph(g, who);
	struct npum_op op = { .type = NPUM_OP_FILL, .in = { NPUM_NONE, NPUM_NONE }, .out = dst,
			      .value = value };

	if (!st)
		st = check_tensor_id(g, dst, who, "destination");
	return st ? st : graph_op_add(g, stream, &op, false, who);
}

npurt_status npurt_graph_output(npurt_graph *g, uint32_t tensor, const char *name)
{
	static const char who[] = "npurt_graph_output";
	npurt_status st = check_graph(g, who);
	struct npum_tensor *t;
	uint32_t nm;

	if (st)
		return st;
	if (!name || !*name)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL or empty name", who);
	st = check_tensor_id(g, tensor, who, "tensor");
	if (st)
		return st;
	t = &g->m.tensors[tensor];
	if (t->segment != NPUM_SEG_FMAP)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s(\"%s\"): tensor %u is %s, not one the graph computes",
				       who, name, tensor, t->segment == NPUM_SEG_VIEW ? "a view" :
				       t->segment == NPUM_SEG_IO ? "an input or output already" :
				       "a constant");
	if (!g->produced[tensor])
		return npurt_set_error(NPURT_ERR_INVALID, "%s(\"%s\"): nothing writes tensor %u",
				       who, name, tensor);
	if (name_taken(g, name))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: \"%s\" is taken", who, name);
	if (g->m.plan.inputs + g->m.plan.outputs >= NPUM_MAX_IO)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: more than %d inputs and outputs", who,
				       NPUM_MAX_IO);
	nm = graph_string_add(g, name);
	if (nm == NPUM_NONE ||
	    !graph_grow((void **)&g->m.io, &g->io_cap, g->m.plan.inputs + g->m.plan.outputs + 1,
		  sizeof(*g->m.io)))
		return graph_nomem(g, who);
	t = &g->m.tensors[tensor];
	t->name = nm;
	t->segment = NPUM_SEG_IO;
	t->base = g->m.plan.inputs + g->m.plan.outputs;
	t->offset = 0;
	g->m.io[t->base] = (struct npum_io){ .tensor = tensor, .flags = NPUM_IO_OUTPUT };
	g->m.plan.outputs++;
	return NPURT_OK;
}

/*
 * What finish() made: its ops and streams, and the tensors, I/O and
 * weights when packing made its own (else they are the graph's).
 */
static void finish_free(const npurt_graph *g, struct mf_model *m)
{
	free(m->ops);
	free(m->streams);
	if (m->tensors != g->m.tensors)
		free(m->tensors);
	if (m->io != g->m.io)
		free(m->io);
	if (m->weights != g->m.weights)
		free(m->weights);
}

/* The model in file order (streams after each other), packed, planned and checked. */
static npurt_status finish(npurt_graph *g, struct mf_model *m, const char *who)
{
	struct mf_order *order;
	char why[256];
	uint32_t at = 0;
	int err;

	*m = g->m;
	m->nops = 0;
	for (uint32_t s = 0; s < m->plan.streams; s++) {
		if (!g->nops[s])
			return npurt_set_error(NPURT_ERR_INVALID, "%s: stream %u has no ops (streams are "
					       "numbered from 0 without gaps)", who, s);
		m->nops += g->nops[s];
	}
	if (!m->nops)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the graph has no ops", who);
	if (!m->plan.outputs)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the graph has no output", who);
	m->ops = malloc(m->nops * sizeof(*m->ops));
	m->streams = calloc(m->plan.streams, sizeof(*m->streams));
	if (!m->ops || !m->streams) {
		free(m->ops);
		free(m->streams);
		return graph_nomem(g, who);
	}
	for (uint32_t s = 0; s < m->plan.streams; s++) {
		m->streams[s] = (struct npum_stream){ .first_op = at, .op_count = g->nops[s] };
		memcpy(m->ops + at, g->ops[s], g->nops[s] * sizeof(*m->ops));
		at += g->nops[s];
	}
	err = graph_pack_weights(m);
	if (!err)
		err = mf_order_make(m, &order, why, sizeof(why));
	if (!err) {
		err = mf_plan_make(m, order);
		mf_order_free(order);
	}
	if (!err)
		err = mf_check(m, why, sizeof(why));
	if (err) {
		finish_free(g, m);
		if (err == ENOMEM)
			return graph_nomem(g, who);
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s", who, why);
	}
	return NPURT_OK;
}

npurt_status npurt_graph_serialize(npurt_graph *g, void **data, size_t *size,
				   npurt_plan_info *info)
{
	static const char who[] = "npurt_graph_serialize";
	npurt_status st = check_graph(g, who);
	struct mf_model m;

	if (st)
		return st;
	if (!data || !size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (info && info->size < sizeof(*info))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: info->size %u, want %zu", who,
				       info->size, sizeof(*info));
	st = finish(g, &m, who);
	if (st)
		return st;
	if (mf_serialize(&m, data, size))
		st = graph_nomem(g, who);
	if (!st && info)
		*info = (npurt_plan_info){ .size = sizeof(*info), .weights_bytes = m.plan.weights_bytes,
					   .fmap_bytes = m.plan.fmap_bytes, .fmap_sum = m.plan.fmap_sum,
					   .fmap_peak = m.plan.fmap_peak, .streams = m.plan.streams,
					   .ops = m.nops, .events = m.plan.events,
					   .inputs = m.plan.inputs, .outputs = m.plan.outputs };
	finish_free(g, &m);
	return st;
}

npurt_status graph_write_file(const char *path, const void *data, size_t size, const char *who)
{
	FILE *f = fopen(path, "wb");
	bool written = false;
	int err = errno;

	if (f) {
		errno = EIO;	/* for a short write that says nothing */
		written = fwrite(data, 1, size, f) == size;
		err = errno;
		/* A close that fails loses what was buffered: the write failed. */
		if (fclose(f) && written) {
			written = false;
			err = errno;
		}
		if (!written)
			remove(path);
	}
	if (!written) {
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: %s", who, path,
				       strerror(err));
	}
	return NPURT_OK;
}

npurt_status npurt_graph_save(npurt_graph *g, const char *path, npurt_plan_info *info)
{
	static const char who[] = "npurt_graph_save";
	void *data;
	size_t size;
	npurt_status st;

	if (!path)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL path", who);
	st = npurt_graph_serialize(g, &data, &size, info);
	if (st)
		return st;
	st = graph_write_file(path, data, size, who);
	free(data);
	return st;
}
