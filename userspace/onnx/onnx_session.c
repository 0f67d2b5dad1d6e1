// SPDX-License-Identifier: MIT
/*
 * Sessions (npuonnx.h, Documentation/executor.rst): an ONNX model run at
 * the shapes its inputs come in. A set of input shapes is a key; the
 * first run at a key lowers the model for it -- the importer with the
 * shapes pinned, then a load, so the plan is a sunk model like any other
 * and its runs cost what a static model's do -- and later runs at that
 * key find the plan in a small cache, kept by last use within a plan
 * count and a device byte limit. Nothing of an op is defined here: what
 * the importer makes of a node at given shapes is all a plan is.
 *
 * Locking: session->lock is held across a run, the stats and the cache.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "npuonnx.h"
#include "onnx.h"
#include "onnx.pb-c.h"

#define SESSION_MAX_IO		64
#define SESSION_PLANS		8
#define SESSION_BYTES		(512ull << 20)
/* Past a name: "=", dimensions up to 2^40 joined by x, the NUL. */
#define SESSION_PIN_LEN		(NPURT_MAX_DIMS * 15 + 2)

struct session_io {
	char *name;
	npurt_dtype dtype;
	uint32_t ndim;
	uint64_t dims[NPURT_MAX_DIMS];	/* 0: symbolic */
	bool shaped;			/* the file declares a shape */
};

/* One lowering: the model at one set of input shapes. */
struct plan {
	uint64_t key[1 + SESSION_MAX_IO * (NPURT_MAX_DIMS + 1)];
	uint32_t key_len;
	uint64_t hash;
	npurt_model *model;
	uint64_t bytes;			/* the model's device memory */
	uint64_t last_use;
	uint32_t in_index[SESSION_MAX_IO];	/* the model's io index of each input */
	npurt_value out[SESSION_MAX_IO];	/* shapes, and host memory bound */
};

struct npurt_onnx_session {
	pthread_mutex_t lock;
	npurt_device *dev;
	void *data;
	size_t size;
	npurt_onnx_options opts;	/* the caller's pins, no shapes */
	char **dim_params, **values;
	struct session_io in[SESSION_MAX_IO], out[SESSION_MAX_IO];
	uint32_t n_in, n_out;
	uint32_t max_plans;
	uint64_t max_bytes;
	int32_t timeout_ms;
	struct plan **plans;
	uint32_t nplans;
	uint64_t clock;
	npurt_onnx_session_stats stats;
};

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
	for (uint32_t i = 0; i < s->opts.n_values; i++) {
		const char *eq = strrchr(s->values[i], '=');

		if (eq && (size_t)(eq - s->values[i]) == strlen(name) &&
		    !strncmp(s->values[i], name, strlen(name)))
			return true;
	}
	return false;
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name)
{
	for (size_t k = 0; k < g->n_initializer; k++)
		if (g->initializer[k]->name && !strcmp(g->initializer[k]->name, name))
			return true;
	return false;
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

		if (!name || is_initializer(g, name) || pinned_by_value(s, name))
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
	s->plans = calloc(s->max_plans, sizeof(*s->plans));
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
	if (!s->data || !s->plans || !ok1 || !ok2) {
		st = (s->data && s->plans && s->dim_params && s->values) ?
			npurt_set_error(NPURT_ERR_INVALID, "%s: a NULL pin in opts", who) :
			npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		npurt_onnx_session_destroy(s);
		return st;
	}
	memcpy(s->data, data, size);
	s->size = size;
	st = read_graph(s);
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

static void plan_free(struct plan *p, uint32_t n_out)
{
	if (!p)
		return;
	npurt_model_unload(p->model);
	for (uint32_t i = 0; i < n_out; i++)
		free(p->out[i].data);
	free(p);
}

void npurt_onnx_session_destroy(npurt_onnx_session *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nplans; i++)
		plan_free(s->plans[i], s->n_out);
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
	if (!s || !out || out->size < sizeof(*out))
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_session_stats_get: %s",
				       !s ? "session is NULL" : !out ? "stats is NULL" :
				       "stats->size too small");
	pthread_mutex_lock(&s->lock);
	*out = s->stats;
	pthread_mutex_unlock(&s->lock);
	return NPURT_OK;
}

/* ---- runs ---------------------------------------------------------- */

/* Check the inputs against what the file declares, and make their key. */
static npurt_status check_inputs(const npurt_onnx_session *s, const npurt_value *in,
				 struct plan *key)
{
	static const char who[] = "npurt_onnx_session_run";
	uint64_t *k = key->key, h = 1469598103934665603ull;

	for (uint32_t i = 0; i < s->n_in; i++) {
		const struct session_io *io = &s->in[i];
		uint64_t count = 1;

		if (in[i].dtype != io->dtype || in[i].ndim > NPURT_MAX_DIMS ||
		    (io->shaped && in[i].ndim != io->ndim))
			return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u \"%.64s\" is %s of %u "
					       "dimensions; the model takes %s of %u", who, i,
					       io->name, ox_type_name(ox_type(in[i].dtype)), in[i].ndim,
					       ox_type_name(ox_type(io->dtype)), io->ndim);
		*k++ = in[i].ndim;
		for (uint32_t d = 0; d < in[i].ndim; d++) {
			uint64_t n = in[i].shape[d];

			if (!n || n > (1ull << 40) || (io->shaped && io->dims[d] && io->dims[d] != n))
				return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u \"%.64s\": "
						       "dimension %u is %llu; the model's is %llu",
						       who, i, io->name, d, (unsigned long long)n,
						       (unsigned long long)io->dims[d]);
			count *= n;
			*k++ = n;
		}
		if (!in[i].data || in[i].bytes != count * npurt_dtype_size(in[i].dtype))
			return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u \"%.64s\": %s", who, i,
					       io->name, !in[i].data ? "data is NULL" :
					       "bytes do not match its shape");
	}
	key->key_len = (uint32_t)(k - key->key);
	for (uint32_t j = 0; j < key->key_len; j++)
		h = (h ^ key->key[j]) * 1099511628211ull;
	key->hash = h;
	return NPURT_OK;
}

static struct plan *find_plan(npurt_onnx_session *s, const struct plan *key)
{
	for (uint32_t i = 0; i < s->nplans; i++) {
		struct plan *p = s->plans[i];

		if (p->hash == key->hash && p->key_len == key->key_len &&
		    !memcmp(p->key, key->key, key->key_len * sizeof(key->key[0])))
			return p;
	}
	return NULL;
}

/* Drop the least recently used plan but `keep`; false: none to drop. */
static bool evict_one(npurt_onnx_session *s, const struct plan *keep)
{
	uint32_t lru = UINT32_MAX;

	for (uint32_t i = 0; i < s->nplans; i++)
		if (s->plans[i] != keep &&
		    (lru == UINT32_MAX || s->plans[i]->last_use < s->plans[lru]->last_use))
			lru = i;
	if (lru == UINT32_MAX)
		return false;
	s->stats.bytes -= s->plans[lru]->bytes;
	plan_free(s->plans[lru], s->n_out);
	s->plans[lru] = s->plans[--s->nplans];
	s->stats.evictions++;
	return true;
}

/* The model imported with the inputs' shapes pinned, serialized. */
static npurt_status lower_file(npurt_onnx_session *s, const npurt_value *in, void **file,
			       size_t *len)
{
	char **text = calloc(s->n_in ? s->n_in : 1, sizeof(*text));
	const char **shapes = calloc(s->n_in ? s->n_in : 1, sizeof(*shapes));
	npurt_onnx_options o = s->opts;
	npurt_graph *g = NULL;
	npurt_status st = NPURT_OK;

	for (uint32_t i = 0; text && shapes && i < s->n_in; i++) {
		/* "NAME=" and the dimensions, each at most 13 digits and an x. */
		size_t cap = strlen(s->in[i].name) + SESSION_PIN_LEN;
		int n;

		text[i] = malloc(cap);
		if (!text[i])
			break;
		n = snprintf(text[i], cap, "%s=", s->in[i].name);
		for (uint32_t d = 0; d < in[i].ndim; d++)
			n += snprintf(text[i] + n, cap - (size_t)n, "%s%llu", d ? "x" : "",
				      (unsigned long long)in[i].shape[d]);
		shapes[i] = text[i];
	}
	if (!text || !shapes || (s->n_in && !shapes[s->n_in - 1])) {
		st = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of memory");
		goto out;
	}
	o.shapes = shapes;
	o.n_shapes = s->n_in;
	st = npurt_onnx_import(s->data, s->size, &o, &g, NULL);
	if (!st)
		st = npurt_graph_serialize(g, file, len, NULL);
	npurt_graph_destroy(g);
out:
	for (uint32_t i = 0; text && i < s->n_in; i++)
		free(text[i]);
	free(text);
	free(shapes);
	return st;
}

/* Wire a loaded model's inputs and outputs to the session's. */
static npurt_status plan_bind(npurt_onnx_session *s, struct plan *p)
{
	for (uint32_t i = 0; i < s->n_in; i++) {
		npurt_status st = npurt_model_io_find(p->model, s->in[i].name, &p->in_index[i]);

		if (st)
			return st;
	}
	for (uint32_t i = 0; i < s->n_out; i++) {
		npurt_io_info io = { .size = sizeof(io) };
		uint32_t idx;
		npurt_status st = npurt_model_io_find(p->model, s->out[i].name, &idx);

		if (!st)
			st = npurt_model_io(p->model, idx, &io);
		if (st)
			return st;
		p->out[i] = (npurt_value){ .dtype = io.dtype, .ndim = io.ndim, .bytes = io.bytes };
		memcpy(p->out[i].shape, io.shape, sizeof(io.shape));
		p->out[i].data = aligned_alloc(64, (io.bytes + 63) & ~63ull);
		if (!p->out[i].data)
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of "
					       "host memory for output \"%.64s\"", s->out[i].name);
		st = npurt_model_bind(p->model, idx, p->out[i].data, io.bytes);
		if (st)
			return st;
	}
	return NPURT_OK;
}

/* A miss: lower for these shapes, load (making room), cache. */
static npurt_status new_plan(npurt_onnx_session *s, const npurt_value *in, const struct plan *key,
			     struct plan **out)
{
	struct timespec t0, t1;
	npurt_model_info mi = { .size = sizeof(mi) };
	struct plan *p = calloc(1, sizeof(*p));
	npurt_status st;
	void *file = NULL;
	size_t len = 0;

	if (!p)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of memory");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memcpy(p->key, key->key, key->key_len * sizeof(key->key[0]));
	p->key_len = key->key_len;
	p->hash = key->hash;
	st = lower_file(s, in, &file, &len);
	/* Device memory short: older plans make room, least recently used first. */
	while (!st && (st = npurt_model_load_buffer(s->dev, file, len, NULL, &p->model)) ==
	       NPURT_ERR_NO_MEMORY && evict_one(s, NULL))
		;
	free(file);
	if (!st)
		st = npurt_model_info_get(p->model, &mi);
	if (!st)
		st = plan_bind(s, p);
	if (st) {
		plan_free(p, s->n_out);
		return st;
	}
	p->bytes = mi.weights_bytes + mi.work_bytes;
	while (s->nplans && (s->nplans >= s->max_plans || s->stats.bytes + p->bytes > s->max_bytes))
		evict_one(s, NULL);
	s->plans[s->nplans++] = p;
	s->stats.bytes += p->bytes;
	s->stats.misses++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->stats.lower_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			     (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	*out = p;
	return NPURT_OK;
}

npurt_status npurt_onnx_session_run(npurt_onnx_session *s, const npurt_value *in,
				    uint32_t n_in, npurt_value *out, uint32_t n_out)
{
	static const char who[] = "npurt_onnx_session_run";
	struct plan *key, *p;
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
	st = check_inputs(s, in, key);
	if (st)
		goto out;
	p = find_plan(s, key);
	if (p)
		s->stats.hits++;
	else if ((st = new_plan(s, in, key, &p)))
		goto out;
	p->last_use = ++s->clock;
	for (uint32_t i = 0; !st && i < s->n_in; i++)
		st = npurt_model_bind(p->model, p->in_index[i], in[i].data, in[i].bytes);
	if (!st)
		st = npurt_model_execute(p->model, s->timeout_ms);
	if (!st) {
		memcpy(out, p->out, n_out * sizeof(*out));
		s->stats.runs++;
	}
out:
	s->stats.plans = s->nplans;
	pthread_mutex_unlock(&s->lock);
	free(key);
	return st;
}
