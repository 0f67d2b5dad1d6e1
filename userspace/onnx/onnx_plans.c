// SPDX-License-Identifier: MIT
/*
 * A session's plans (onnx_session.h): the key of a stage at a run's
 * shapes, the cache lookup, and on a miss the lowering -- the importer
 * with the shapes (and values a stage decides shapes by) pinned -- the
 * load, the binding of the plan's inputs and outputs, and the evictions
 * that make room, least recently used first and never a plan of the run
 * in progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "npuonnx.h"
#include "onnx.h"
#include "onnx_session.h"
#include "onnx_stages.h"

void ox_plan_free(struct plan *p)
{
	if (!p)
		return;
	npurt_model_unload(p->model);
	for (uint32_t i = 0; i < p->n_out; i++)
		free(p->out[i].data);
	free(p);
}

/* An input pinned by value, as an integer (TopK's k): false if it is none. */
static bool int_at(const npurt_value *v, uint64_t k, int64_t *x)
{
	if (v->dtype == NPURT_I64)
		memcpy(x, (const int64_t *)v->data + k, sizeof(*x));
	else if (v->dtype == NPURT_I32)
		*x = ((const int32_t *)v->data)[k];
	else
		return false;
	return true;
}

/*
 * Stage j's key: the stage, each input's rank and dimensions, and the
 * values of those pinned by value. in[k] NULL: an input opts pin.
 */
static npurt_status make_key(uint32_t j, const struct ox_stage *st, const npurt_value *const *in,
			     struct plan *key)
{
	static const char who[] = "npurt_onnx_session_run";
	uint64_t *k = key->key, h = 1469598103934665603ull, values = 0;

	*k++ = j;
	for (uint32_t i = 0; i < st->n_in; i++) {
		const npurt_value *v = in[i];
		uint64_t count = 1;

		if (!v)
			continue;
		*k++ = v->ndim;
		for (uint32_t d = 0; d < v->ndim; d++) {
			*k++ = v->shape[d];
			count *= v->shape[d];
		}
		if (!count)
			return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: \"%.64s\", computed by "
					       "stage %u for stage %u, is empty: the device runs no "
					       "empty tensor", who, st->in[i], j - 1, j);
		if (!st->by_value[i])
			continue;
		for (uint64_t c = 0; c < count; c++) {
			int64_t x;

			if (values == SESSION_KEY_VALUES || !int_at(v, c, &x))
				return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: \"%.64s\" decides "
						       "a shape by its value: over %d values, or "
						       "not int32 or int64", who, st->in[i],
						       SESSION_KEY_VALUES);
			*k++ = (uint64_t)x;
			values++;
		}
	}
	key->key_len = (uint32_t)(k - key->key);
	for (uint32_t i = 0; i < key->key_len; i++)
		h = (h ^ key->key[i]) * 1099511628211ull;
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

/*
 * Drop the least recently used plan; false: none to drop. This run's
 * plans stay: the values earlier stages gave live in their memory.
 */
static bool evict_one(npurt_onnx_session *s)
{
	uint32_t lru = UINT32_MAX;

	for (uint32_t i = 0; i < s->nplans; i++)
		if (s->plans[i]->last_use < s->run_start &&
		    (lru == UINT32_MAX || s->plans[i]->last_use < s->plans[lru]->last_use))
			lru = i;
	if (lru == UINT32_MAX)
		return false;
	s->stats.bytes -= s->plans[lru]->bytes;
	ox_plan_free(s->plans[lru]);
	s->plans[lru] = s->plans[--s->nplans];
	s->stats.evictions++;
	return true;
}

/* Whether stage st declares input `name` as the file does (opts pin it by value). */
static bool takes_pin(const struct ox_stage *st, const npurt_value *const *in, const char *spec)
{
	for (uint32_t k = 0; k < st->n_in; k++)
		if (!in[k] && ox_values_pin(&spec, 1, st->in[k]))
			return true;
	return false;
}

/*
 * Stage j imported with its inputs' shapes pinned, and the values of
 * those pinned by value, serialized. The whole model takes the caller's
 * pins as they are; a stage takes the value pins of the inputs it reads.
 */
static npurt_status lower_file(npurt_onnx_session *s, uint32_t j, const npurt_value *const *in,
			       void **file, size_t *len)
{
	struct ox_stage *st = stage_at(s, j);
	uint32_t n = 2 * st->n_in + s->opts.n_values + 1;
	char **text = calloc(n, sizeof(*text));
	const char **shapes = calloc(n, sizeof(*shapes)), **values = calloc(n, sizeof(*values));
	npurt_onnx_options o = s->opts;
	npurt_graph *g = NULL;
	npurt_status st_ = NPURT_OK;
	uint32_t nt = 0;

	if (!text || !shapes || !values)
		goto nomem;
	o.shapes = shapes;
	o.n_shapes = 0;
	if (s->stages) {
		o.values = values;
		o.n_values = 0;
		o.n_dim_params = 0;	/* every input's shape is pinned */
		for (uint32_t k = 0; k < s->opts.n_values; k++)
			if (takes_pin(st, in, s->values[k]))
				values[o.n_values++] = s->values[k];
	}
	for (uint32_t i = 0; i < st->n_in; i++) {
		/* "NAME=" and the dimensions (or values), each at most 20 digits and a separator. */
		size_t cap = strlen(st->in[i]) + SESSION_PIN_LEN + SESSION_KEY_VALUES * 22;
		uint64_t count = 1;
		int w;

		if (!in[i])
			continue;
		if (!(text[nt] = malloc(cap)))
			goto nomem;
		w = snprintf(text[nt], cap, "%s=", st->in[i]);
		for (uint32_t d = 0; d < in[i]->ndim; d++) {
			w += snprintf(text[nt] + w, cap - (size_t)w, "%s%llu", d ? "x" : "",
				      (unsigned long long)in[i]->shape[d]);
			count *= in[i]->shape[d];
		}
		shapes[o.n_shapes++] = text[nt++];
		if (!st->by_value[i])
			continue;
		if (!(text[nt] = malloc(cap)))
			goto nomem;
		w = snprintf(text[nt], cap, "%s=", st->in[i]);
		for (uint64_t c = 0; c < count; c++) {
			int64_t x = 0;

			int_at(in[i], c, &x);	/* make_key checked the dtype and count */
			w += snprintf(text[nt] + w, cap - (size_t)w, "%s%lld", c ? "," : "",
				      (long long)x);
		}
		values[o.n_values++] = text[nt++];
	}
	if (s->stages && !ox_stage_file_fits(st, in) && (st_ = ox_stage_file(s->stages, j, in)))
		goto out;
	st_ = npurt_onnx_import(st->file, st->size, &o, &g, NULL);
	if (!st_)
		st_ = npurt_graph_serialize(g, file, len, NULL);
	npurt_graph_destroy(g);
	goto out;
nomem:
	st_ = npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of memory");
out:
	for (uint32_t i = 0; text && i < nt; i++)
		free(text[i]);
	free(text);
	free(shapes);
	free(values);
	return st_;
}

/* Wire a loaded model's inputs and outputs to stage st's. */
static npurt_status plan_bind(struct ox_stage *st, const npurt_value *const *in, struct plan *p)
{
	for (uint32_t i = 0; i < st->n_in; i++) {
		npurt_status ret;

		p->in_index[i] = UINT32_MAX;
		if (!in[i] || st->by_value[i])
			continue;
		ret = npurt_model_io_find(p->model, st->in[i], &p->in_index[i]);
		if (ret)
			return ret;
	}
	for (uint32_t i = 0; i < st->n_out; i++) {
		npurt_io_info io = { .size = sizeof(io) };
		uint32_t idx;
		npurt_status ret = npurt_model_io_find(p->model, st->out[i], &idx);

		if (!ret)
			ret = npurt_model_io(p->model, idx, &io);
		if (ret)
			return ret;
		p->out[i] = (npurt_value){ .dtype = io.dtype, .ndim = io.ndim, .bytes = io.bytes };
		memcpy(p->out[i].shape, io.shape, sizeof(io.shape));
		p->out[i].data = aligned_alloc(64, (io.bytes + 63) & ~63ull);
		p->n_out = i + 1;
		if (!p->out[i].data)
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_session_run: out of "
					       "host memory for output \"%.64s\"", st->out[i]);
		ret = npurt_model_bind(p->model, idx, p->out[i].data, io.bytes);
		if (ret)
			return ret;
	}
	return NPURT_OK;
}

/* A miss: lower stage j for these shapes, load (making room), cache. */
static npurt_status new_plan(npurt_onnx_session *s, uint32_t j, const npurt_value *const *in,
			     const struct plan *key, struct plan **out)
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
	st = lower_file(s, j, in, &file, &len);
	/*
	 * Device memory or hardware queues short (each plan's streams hold
	 * queues): older plans make room, least recently used first.
	 */
	while (!st && ((st = npurt_model_load_buffer(s->dev, file, len, NULL, &p->model)) ==
		       NPURT_ERR_NO_MEMORY || st == NPURT_ERR_BUSY) && evict_one(s))
		st = NPURT_OK;
	free(file);
	if (!st)
		st = npurt_model_info_get(p->model, &mi);
	if (!st)
		st = plan_bind(stage_at(s, j), in, p);
	if (st) {
		ox_plan_free(p);
		return st;
	}
	p->bytes = mi.weights_bytes + mi.work_bytes;
	while ((s->nplans >= s->max_plans || s->stats.bytes + p->bytes > s->max_bytes) &&
	       evict_one(s))
		;
	s->plans[s->nplans++] = p;
	s->stats.bytes += p->bytes;
	s->stats.misses++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->stats.lower_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			     (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	*out = p;
	return NPURT_OK;
}

npurt_status ox_plan_get(npurt_onnx_session *s, uint32_t j, const npurt_value *const *in,
			 struct plan *key, struct plan **out)
{
	const struct ox_stage *st = stage_at(s, j);
	struct plan *p;
	npurt_status ret = make_key(j, st, in, key);

	if (ret)
		return ret;
	p = find_plan(s, key);
	if (p)
		s->stats.hits++;
	else if ((ret = new_plan(s, j, in, key, &p)))
		return ret;
	p->last_use = ++s->clock;
	*out = p;
	return NPURT_OK;
}
