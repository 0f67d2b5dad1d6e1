// SPDX-License-Identifier: MIT
/*
 * Sessions (npuonnx.h, Documentation/executor.rst): an ONNX model run at
 * the shapes its inputs come in. A set of input shapes is a key; the
 * first run at a key lowers the model for it -- the importer with the
 * shapes pinned, then a load, so the plan is a sunk model like any other
 * and its runs cost what a static model's do -- and later runs at that
 * key find the plan in a small cache (onnx_plans.c), kept by last use
 * within a plan count and a device byte limit. Nothing of an op is defined here: what
 * the importer makes of a node at given shapes is all a plan is. A model
 * whose shapes wait for values a run computes runs as stages
 * (onnx_stages.c), each planned and cached the same way, values passing
 * from one to the next by name through the run's pool.
 *
 * Locking: session->lock is held across a run, the stats and the cache.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "npuonnx.h"
#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_session.h"
#include "onnx_stages.h"

static char **copy_specs(const char *const *specs, uint32_t n, bool *ok)
{
	char **c = calloc(n ? n : 1, sizeof(*c));

	*ok = c != NULL;
	for (uint32_t i = 0; c && i < n; i++)
		if (!specs || !specs[i] || !(c[i] = strdup(specs[i])))
			*ok = false;
	return c;
}

static void free_specs(char **c, uint32_t n)
{
	for (uint32_t i = 0; c && i < n; i++)
		free(c[i]);
	free(c);
}

/* Whether input `name` is pinned by value in opts ("NAME=V,..."). */
static bool pinned_by_value(const npurt_onnx_session *s, const char *name)
{
	return ox_values_pin((const char *const *)s->values, s->opts.n_values, name);
}

static npurt_status read_io(struct session_io *io, const Onnx__ValueInfoProto *vi, bool output)
{
	const Onnx__TypeProto__Tensor *tt;

	if (!vi->name || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type->has_elem_type)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED,
				       "npurt_onnx_session_create: %s \"%.64s\" is no tensor",
				       output ? "output" : "input", vi->name ? vi->name : "");
	tt = vi->type->tensor_type;
	io->name = strdup(vi->name);
	if (!io->name)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_create: out of memory");
	io->dtype = ox_dtype(tt->elem_type);
	if (!tt->shape)
		return NPURT_OK;
	if (tt->shape->n_dim > NPURT_MAX_DIMS)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED,
				       "npurt_onnx_session_create: %s \"%.64s\" has %zu dimensions",
				       output ? "output" : "input", vi->name, tt->shape->n_dim);
	io->shaped = true;
	io->ndim = (uint32_t)tt->shape->n_dim;
	for (uint32_t d = 0; d < io->ndim; d++) {
		const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];

		if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    dim->dim_value > 0)
			io->dims[d] = (uint64_t)dim->dim_value;
	}
	return NPURT_OK;
}

/* The session's inputs and outputs, from the file's graph. */
static npurt_status read_graph(npurt_onnx_session *s)
{
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, s->size, s->data);
	const Onnx__GraphProto *g;
	npurt_status st = NPURT_OK;

	if (!m)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_create: not an ONNX "
				       "model (the protobuf does not parse as a ModelProto)");
	g = m->graph;
	if (!g) {
		st = npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_create: no graph");
		goto out;
	}
	for (size_t i = 0; !st && i < g->n_input; i++) {
		const char *name = g->input[i]->name;

		if (!name || ox_graph_initializer(g, name) || pinned_by_value(s, name))
			continue;
		if (s->n_in == SESSION_MAX_IO) {
			st = npurt_set_error(NPURT_ERR_UNSUPPORTED, "npurt_onnx_session_create: over "
					     "%d inputs", SESSION_MAX_IO);
			break;
		}
		st = read_io(&s->in[s->n_in++], g->input[i], false);
	}
	for (size_t i = 0; !st && i < g->n_output; i++) {
		if (s->n_out == SESSION_MAX_IO) {
			st = npurt_set_error(NPURT_ERR_UNSUPPORTED, "npurt_onnx_session_create: over "
					     "%d outputs", SESSION_MAX_IO);
			break;
		}
		st = read_io(&s->out[s->n_out++], g->output[i], true);
	}
out:
	onnx__model_proto__free_unpacked(m, NULL);
	return st;
}

/*
 * The stages a run goes through (one, the file, unless the model is cut),
 * and room for the values a run passes between them.
 */
static npurt_status setup_stages(npurt_onnx_session *s)
{
	static const char who[] = "npurt_onnx_session_create";
	struct ox_stage *w = &s->whole;
	uint32_t n = 1;
	npurt_status st = ox_stages_cut(s->data, s->size, (const char *const *)s->values,
					s->opts.n_values, &s->stages);

	if (st)
		return st;
	w->in = calloc(s->n_in + 1, sizeof(*w->in));
	w->by_value = calloc(s->n_in + 1, sizeof(*w->by_value));
	w->out = calloc(s->n_out + 1, sizeof(*w->out));
	if (!w->in || !w->by_value || !w->out)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	for (uint32_t i = 0; i < s->n_in; i++)
		w->in[w->n_in++] = s->in[i].name;
	for (uint32_t i = 0; i < s->n_out; i++)
		w->out[w->n_out++] = s->out[i].name;
	w->n_nodes = 1;		/* never 0: the device part runs */
	w->file = s->data;
	w->size = s->size;
	s->pool_cap = s->n_in + (s->stages ? 0 : s->n_out);
	if (s->stages) {
		n = s->stages->n;
		for (uint32_t j = 0; j < n; j++) {
			const struct ox_stage *t = &s->stages->st[j];

			if (t->n_in > SESSION_MAX_IO || t->n_out > SESSION_MAX_IO)
				return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: %u values go into "
						       "stage %u and %u come out (cut at the nodes "
						       "whose shapes wait for values); at most %d",
						       who, t->n_in, j, t->n_out, SESSION_MAX_IO);
			s->pool_cap += t->n_out + (t->host ? 1 : 0);
		}
	}
	s->host = calloc(n, sizeof(*s->host));
	s->pool = calloc(s->pool_cap + 1, sizeof(*s->pool));
	/* A run keeps each stage's plan while it runs, whatever max_plans says. */
	s->plans = calloc(s->max_plans + n, sizeof(*s->plans));
	if (!s->host || !s->pool || !s->plans)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	return NPURT_OK;
}

npurt_status npurt_onnx_session_create(npurt_device *dev, const void *data, size_t size,
				       const npurt_onnx_session_desc *desc,
				       npurt_onnx_session **session)
{
	static const char who[] = "npurt_onnx_session_create";
	const npurt_onnx_options *o = desc ? desc->opts : NULL;
	npurt_onnx_session *s;
	npurt_status st;
	bool ok1, ok2;

	if (!dev || !data || !session)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (desc && desc->size < sizeof(*desc))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->size %u, want %zu", who,
				       desc->size, sizeof(*desc));
	if (o && o->size < sizeof(*o))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: opts->size %u, want %zu", who,
				       o->size, sizeof(*o));
	if (o && o->n_shapes)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: opts pin %u shapes; a session's "
				       "runs give the shapes", who, o->n_shapes);
	if (!ox_nesting_ok(data, size))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: not an ONNX model (malformed, or "
				       "nested too deep)", who);
	s = calloc(1, sizeof(*s));
	if (!s)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	s->dev = dev;
	s->max_plans = desc && desc->max_plans ? desc->max_plans : SESSION_PLANS;
	s->max_bytes = desc && desc->max_bytes ? desc->max_bytes : SESSION_BYTES;
	s->timeout_ms = desc && desc->timeout_ms > 0 ? desc->timeout_ms : -1;
	s->stats.size = sizeof(s->stats);
	s->data = malloc(size ? size : 1);
	s->opts.size = sizeof(s->opts);
	if (o) {
		s->opts.n_dim_params = o->n_dim_params;
		s->opts.n_values = o->n_values;
	}
	s->dim_params = copy_specs(o ? o->dim_params : NULL, s->opts.n_dim_params, &ok1);
	s->values = copy_specs(o ? o->values : NULL, s->opts.n_values, &ok2);
	s->opts.dim_params = (const char *const *)s->dim_params;
	s->opts.values = (const char *const *)s->values;
	pthread_mutex_init(&s->lock, NULL);
	if (!s->data || !ok1 || !ok2) {
		st = (s->data && s->dim_params && s->values) ?
			npurt_set_error(NPURT_ERR_INVALID, "%s: a NULL pin in opts", who) :
			npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		npurt_onnx_session_destroy(s);
		return st;
	}
	memcpy(s->data, data, size);
	s->size = size;
	st = read_graph(s);
	if (!st)
		st = setup_stages(s);
	/* Each run pins every input's shape beside the caller's pins. */
	if (!st && s->n_in + s->opts.n_dim_params + s->opts.n_values > OX_MAX_PINS)
		st = npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: %u inputs and %u pins; a lowering "
				     "takes %d pins", who, s->n_in,
				     s->opts.n_dim_params + s->opts.n_values, OX_MAX_PINS);
	if (st) {
		npurt_onnx_session_destroy(s);
		return st;
	}
	*session = s;
	return NPURT_OK;
}

npurt_status npurt_onnx_session_create_file(npurt_device *dev, const char *path,
					    const npurt_onnx_session_desc *desc,
					    npurt_onnx_session **session)
{
	npurt_status st;
	void *data;
	size_t size;

	if (!path)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_create_file: path "
				       "is NULL");
	st = ox_read_file(path, "npurt_onnx_session_create_file", &data, &size);
	if (st)
		return st;
	st = npurt_onnx_session_create(dev, data, size, desc, session);
	free(data);
	return st;
}

void npurt_onnx_session_destroy(npurt_onnx_session *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->plans && i < s->nplans; i++)
		ox_plan_free(s->plans[i]);
	for (uint32_t j = 0; s->host && j < (s->stages ? s->stages->n : 1); j++)
		free(s->host[j].data);
	free(s->host);
	free(s->pool);
	ox_stages_free(s->stages);
	free(s->whole.in);
	free(s->whole.by_value);
	free(s->whole.out);
	for (uint32_t i = 0; i < s->n_in; i++)
		free(s->in[i].name);
	for (uint32_t i = 0; i < s->n_out; i++)
		free(s->out[i].name);
	free_specs(s->dim_params, s->opts.n_dim_params);
	free_specs(s->values, s->opts.n_values);
	pthread_mutex_destroy(&s->lock);
	free(s->plans);
	free(s->data);
	free(s);
}

npurt_status npurt_onnx_session_counts(npurt_onnx_session *s, uint32_t *inputs, uint32_t *outputs)
{
	if (!s)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_counts: session is NULL");
	if (inputs)
		*inputs = s->n_in;
	if (outputs)
		*outputs = s->n_out;
	return NPURT_OK;
}

npurt_status npurt_onnx_session_io(npurt_onnx_session *s, uint32_t index, npurt_io_info *info)
{
	const struct session_io *io;

	if (!s || !info || info->size < sizeof(*info) || index >= s->n_in + s->n_out)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_io: %s",
				       !s ? "session is NULL" : !info ? "info is NULL" :
				       info->size < sizeof(*info) ? "info->size too small" :
				       "no such input or output");
	io = index < s->n_in ? &s->in[index] : &s->out[index - s->n_in];
	memset((char *)info + sizeof(info->size), 0, sizeof(*info) - sizeof(info->size));
	info->output = index >= s->n_in;
	info->dtype = io->dtype;
	info->ndim = io->ndim;
	memcpy(info->shape, io->dims, sizeof(io->dims));
	info->name = io->name;
	return NPURT_OK;
}

npurt_status npurt_onnx_session_stats_get(npurt_onnx_session *s, npurt_onnx_session_stats *out)
{
	/* Callers built before `syncs` was added pass the size up to it. */
	size_t old = offsetof(npurt_onnx_session_stats, syncs), size;

	if (!s || !out || out->size < old)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_stats_get: %s",
				       !s ? "session is NULL" : !out ? "stats is NULL" :
				       "stats->size too small");
	size = out->size < sizeof(*out) ? out->size : sizeof(*out);
	pthread_mutex_lock(&s->lock);
	memcpy((char *)out + sizeof(out->size), (const char *)&s->stats + sizeof(out->size),
	       size - sizeof(out->size));
	pthread_mutex_unlock(&s->lock);
	return NPURT_OK;
}

/* ---- runs ---------------------------------------------------------- */

/* Check the inputs against what the file declares. */
static npurt_status check_inputs(const npurt_onnx_session *s, const npurt_value *in)
{
	static const char who[] = "npurt_onnx_session_run";

	for (uint32_t i = 0; i < s->n_in; i++) {
		const struct session_io *io = &s->in[i];
		uint64_t count = 1;

		if (in[i].dtype != io->dtype || in[i].ndim > NPURT_MAX_DIMS ||
		    (io->shaped && in[i].ndim != io->ndim))
			return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u \"%.64s\" is %s of %u "
					       "dimensions; the model takes %s of %u", who, i,
					       io->name, ox_type_name(ox_type(in[i].dtype)), in[i].ndim,
					       ox_type_name(ox_type(io->dtype)), io->ndim);
		for (uint32_t d = 0; d < in[i].ndim; d++) {
			uint64_t n = in[i].shape[d];

			if (!n || n > (1ull << 40) || (io->shaped && io->dims[d] && io->dims[d] != n))
				return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u \"%.64s\": "
						       "dimension %u is %llu; the model's is %llu",
						       who, i, io->name, d, (unsigned long long)n,
						       (unsigned long long)io->dims[d]);
			count *= n;
		}
		if (!in[i].data || in[i].bytes != count * npurt_dtype_size(in[i].dtype))
			return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u \"%.64s\": %s", who, i,
					       io->name, !in[i].data ? "data is NULL" :
					       "bytes do not match its shape");
	}
	return NPURT_OK;
}

static const npurt_value *pool_find(const npurt_onnx_session *s, const char *name)
{
	for (uint32_t k = s->npool; k-- > 0;)
		if (!strcmp(s->pool[k].name, name))
			return &s->pool[k].v;
	return NULL;
}

static void pool_add(npurt_onnx_session *s, const char *name, const npurt_value *v)
{
	if (s->npool < s->pool_cap)	/* setup_stages counted every value */
		s->pool[s->npool++] = (struct pooled){ name, *v };
}

/* Whether a stage after j reads `name` (a host node's output: may it be empty?). */
static bool read_after(npurt_onnx_session *s, uint32_t j, const char *name)
{
	for (uint32_t k = j + 1; k < n_stages(s); k++)
		for (uint32_t i = 0; i < stage_at(s, k)->n_in; i++)
			if (!strcmp(stage_at(s, k)->in[i], name))
				return true;
	return false;
}

/* NonZero after stage j, on the host: its output joins the pool. */
static npurt_status run_host(npurt_onnx_session *s, uint32_t j, const Onnx__NodeProto *n)
{
	const npurt_value *x = n->n_input ? pool_find(s, n->input[0]) : NULL;
	npurt_value y;
	npurt_status st;

	if (!x || n->n_output != 1)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_run: node \"%.64s\" "
				       "(NonZero): %s", n->name ? n->name : "",
				       x ? "not one output" : "no input");
	st = ox_host_nonzero(x, &y, &s->host[j].data, &s->host[j].cap);
	if (st)
		return st;
	if (!y.shape[1] && read_after(s, j, n->output[0]))
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "npurt_onnx_session_run: node "
				       "\"%.64s\" (NonZero) found no nonzero element, and the "
				       "device runs no empty tensor", n->name ? n->name : "");
	pool_add(s, n->output[0], &y);
	return NPURT_OK;
}

/* Stage j's device part: its plan for the shapes in the pool, run; its outputs join the pool. */
static npurt_status run_stage(npurt_onnx_session *s, uint32_t j, struct plan *key)
{
	struct ox_stage *st = stage_at(s, j);
	const npurt_value *in[SESSION_MAX_IO];
	struct plan *p;
	npurt_status ret;

	for (uint32_t k = 0; k < st->n_in; k++) {
		in[k] = pool_find(s, st->in[k]);
		if (!in[k] && !pinned_by_value(s, st->in[k]))
			return npurt_set_error(NPURT_ERR_INTERNAL, "npurt_onnx_session_run: no value "
					       "for \"%.64s\", an input of stage %u", st->in[k], j);
	}
	ret = ox_plan_get(s, j, in, key, &p);
	if (ret)
		return ret;
	for (uint32_t k = 0; !ret && k < st->n_in; k++)
		if (p->in_index[k] != UINT32_MAX)
			ret = npurt_model_bind(p->model, p->in_index[k], in[k]->data, in[k]->bytes);
	if (!ret)
		ret = npurt_model_execute(p->model, s->timeout_ms);
	for (uint32_t k = 0; !ret && k < st->n_out; k++)
		pool_add(s, st->out[k], &p->out[k]);
	return ret;
}

npurt_status npurt_onnx_session_run(npurt_onnx_session *s, const npurt_value *in,
				    uint32_t n_in, npurt_value *out, uint32_t n_out)
{
	static const char who[] = "npurt_onnx_session_run";
	struct plan *key;
	npurt_status st;

	if (!s || (!in && n_in) || (!out && n_out))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (n_in != s->n_in || n_out != s->n_out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %u inputs and %u outputs given; the "
				       "model has %u and %u", who, n_in, n_out, s->n_in, s->n_out);
	key = malloc(sizeof(*key));
	if (!key)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	pthread_mutex_lock(&s->lock);
	st = check_inputs(s, in);
	s->npool = 0;
	s->run_start = s->clock + 1;
	for (uint32_t i = 0; !st && i < s->n_in; i++)
		pool_add(s, s->in[i].name, &in[i]);
	for (uint32_t j = 0; !st && j < n_stages(s); j++) {
		const struct ox_stage *t = stage_at(s, j);

		if (t->n_nodes)
			st = run_stage(s, j, key);
		if (!st && t->host)
			st = run_host(s, j, t->host);
		/* What the next stage is planned for waited for this one. */
		if (!st && (t->n_nodes || t->host) && j + 1 < n_stages(s))
			s->stats.syncs++;
	}
	for (uint32_t i = 0; !st && i < n_out; i++) {
		const npurt_value *v = pool_find(s, s->out[i].name);

		if (!v)
			st = npurt_set_error(NPURT_ERR_INTERNAL, "%s: no value for output \"%.64s\"",
					     who, s->out[i].name);
		else
			out[i] = *v;
	}
	if (!st)
		s->stats.runs++;
	s->stats.plans = s->nplans;
	pthread_mutex_unlock(&s->lock);
	free(key);
	return st;
}
