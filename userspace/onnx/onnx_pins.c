// SPDX-License-Identifier: MIT
/*
 * Pins: what an importer's caller fixes that a file leaves open
 * (npurt_onnx_options), so a model exported with a dynamic batch or
 * sequence length imports static. Specs are text, as a command line has
 * them: "NAME=1x3x48x320" pins input NAME's whole shape, "NAME=VALUE"
 * every dimension called NAME, and "NAME=V,V,..." an input's values (it
 * becomes a constant: an If on a sample rate folds). A pin naming nothing
 * in the model is a typo the caller hears about before anything else.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

#define OX_MAX_VALUES	4096	/* of an input pinned by value */

enum pin_kind { PIN_SHAPE, PIN_DIM, PIN_VALUE };

static const char *const kind_name[] = { "shape", "dim_param", "value" };

struct ox_pin {
	const char *spec;		/* the caller's text */
	size_t name_len;		/* of the name before the last '=' */
	enum pin_kind kind;
	uint32_t ndim;			/* PIN_SHAPE, PIN_DIM (1) */
	int64_t dims[OX_MAX_DIMS];
	uint32_t nvalues;		/* PIN_VALUE: parsed again when applied */
};

/* A positive count, as a dimension takes it; the end of its digits in *end. */
static bool parse_dim(const char *s, const char **end, int64_t *v)
{
	char *e;
	long long x;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoll(s, &e, 10);
	if (errno || x < 1 || x > ((int64_t)1 << 40))
		return false;
	*v = x;
	*end = e;
	return true;
}

/* A finite number; the end of it in *end. */
static bool parse_value(const char *s, const char **end, double *v)
{
	char *e;

	errno = 0;
	*v = strtod(s, &e);
	if (e == s || errno || !isfinite(*v))
		return false;
	*end = e;
	return true;
}

static npurt_status bad_pin(const struct ox_pin *p, const char *why)
{
	return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: %s \"%.64s\": %s",
			       kind_name[p->kind], p->spec, why);
}

static npurt_status parse_pin(const char *spec, enum pin_kind kind, struct ox_pin *p)
{
	static const char *const want[] = {
		"dimensions of 1 to 2^40 wanted, at most 8, joined by x",
		"a value of 1 to 2^40 wanted", "numbers wanted, joined by commas",
	};
	const char *eq = spec ? strrchr(spec, '=') : NULL, *s;

	*p = (struct ox_pin){ .spec = spec ? spec : "(null)", .kind = kind };
	if (!eq || eq == spec)
		return bad_pin(p, kind == PIN_SHAPE ? "NAME=AxBxC wanted" :
			       kind == PIN_DIM ? "NAME=VALUE wanted" : "NAME=V,V,... wanted");
	p->name_len = (size_t)(eq - spec);
	s = eq + 1;
	if (kind == PIN_SHAPE && !*s)
		return NPURT_OK;	/* a scalar */
	for (;;) {
		double v;
		bool ok;

		if (kind == PIN_VALUE)
			ok = p->nvalues < OX_MAX_VALUES && parse_value(s, &s, &v) && ++p->nvalues;
		else
			ok = p->ndim < (kind == PIN_SHAPE ? OX_MAX_DIMS : 1) &&
			     parse_dim(s, &s, &p->dims[p->ndim]) && ++p->ndim;
		if (!ok)
			return bad_pin(p, want[kind]);
		if (!*s)
			return NPURT_OK;
		if (kind == PIN_DIM || *s != (kind == PIN_SHAPE ? 'x' : ','))
			return bad_pin(p, want[kind]);
		s++;
	}
}

npurt_status ox_pins_parse(struct ox_imp *im, const npurt_onnx_options *opts)
{
	const char *const *lists[3];
	uint32_t counts[3];
	size_t n;
	npurt_status st;

	if (!opts)
		return NPURT_OK;
	if (opts->size < sizeof(*opts))
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: opts->size %u, want "
				       "%zu", opts->size, sizeof(*opts));
	lists[PIN_SHAPE] = opts->shapes;
	lists[PIN_DIM] = opts->dim_params;
	lists[PIN_VALUE] = opts->values;
	counts[PIN_SHAPE] = opts->n_shapes;
	counts[PIN_DIM] = opts->n_dim_params;
	counts[PIN_VALUE] = opts->n_values;
	n = (size_t)counts[0] + counts[1] + counts[2];
	for (int k = 0; k < 3; k++)
		if (counts[k] && !lists[k])
			n = SIZE_MAX;
	if (n > OX_MAX_PINS)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: %u shapes, %u "
				       "dim_params and %u values (at most %d in all, their arrays "
				       "not NULL)", counts[0], counts[1], counts[2], OX_MAX_PINS);
	if (!n)
		return NPURT_OK;
	im->pins = calloc(n, sizeof(*im->pins));
	if (!im->pins)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_import: out of host memory");
	for (int kind = 0; kind < 3; kind++)
		for (uint32_t k = 0; k < counts[kind]; k++) {
			st = parse_pin(lists[kind][k], kind, &im->pins[im->npins]);
			if (st)
				return st;
			im->npins++;
		}
	return NPURT_OK;
}

static bool names(const struct ox_pin *p, const char *name)
{
	return name && strlen(name) == p->name_len && !memcmp(p->spec, name, p->name_len);
}

static struct ox_pin *find(struct ox_imp *im, const char *name, enum pin_kind kind)
{
	for (size_t k = 0; k < im->npins; k++)
		if (im->pins[k].kind == kind && names(&im->pins[k], name))
			return &im->pins[k];
	return NULL;
}

npurt_status ox_pins_dims(struct ox_imp *im, const char *input,
			  const Onnx__TensorShapeProto *shape, int64_t *dims)
{
	struct ox_pin *p = find(im, input, PIN_SHAPE);

	if (p && p->ndim != shape->n_dim)
		return ox_fail(im, NPURT_ERR_INVALID, "shape \"%.64s\": %u dimensions, input "
			       "\"%.64s\" has %zu", p->spec, p->ndim, input, shape->n_dim);
	for (size_t k = 0; k < shape->n_dim; k++) {
		const Onnx__TensorShapeProto__Dimension *d = shape->dim[k];
		bool fixed = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		const char *sym = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ?
				  d->dim_param : "";
		struct ox_pin *q;

		if (p && fixed && p->dims[k] != d->dim_value)
			return ox_fail(im, NPURT_ERR_INVALID, "shape \"%.64s\": dimension %zu of "
				       "input \"%.64s\" is %lld in the file", p->spec, k, input,
				       (long long)d->dim_value);
		if (p) {
			dims[k] = p->dims[k];
		} else if (fixed) {
			dims[k] = d->dim_value;
		} else if (sym[0] && (q = find(im, sym, PIN_DIM))) {
			dims[k] = q->dims[0];
		} else if (!sym[0]) {
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" has a dynamic "
				       "dimension %zu, unnamed: the device runs static shapes; pin "
				       "the input's shape", input, k);
		} else {
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" has a dynamic "
				       "dimension %zu (\"%.32s\"): the device runs static shapes; pin "
				       "it (a dim_param \"%.32s=VALUE\", or the input's shape)", input,
				       k, sym, sym);
		}
	}
	return NPURT_OK;
}

struct ox_val *ox_pins_value(struct ox_imp *im, const char *input, int32_t type, uint32_t ndim,
			     const int64_t *dims, bool *pinned)
{
	struct ox_pin *p = find(im, input, PIN_VALUE);
	const char *s;
	struct ox_val *v;

	*pinned = p != NULL;
	if (!p)
		return NULL;
	if (type == OX_STRING) {
		ox_fail(im, NPURT_ERR_UNSUPPORTED, "value \"%.64s\": input \"%.64s\" holds strings",
			p->spec, input);
		return NULL;
	}
	v = ox_new_const(im, input, type, ndim, dims);
	if (!v)
		return NULL;
	if (ox_count(v) != p->nvalues) {
		ox_fail(im, NPURT_ERR_INVALID, "value \"%.64s\": %u values, input \"%.64s\" holds "
			"%llu", p->spec, p->nvalues, input, (unsigned long long)ox_count(v));
		return NULL;
	}
	s = p->spec + p->name_len + 1;
	for (uint32_t k = 0; k < p->nvalues; k++) {
		double x;

		parse_value(s, &s, &x);		/* parse_pin checked it */
		s++;
		ox_set(v, k, x);
	}
	return v;
}

/* Does the pin name an input (shape, value) or a dimension of one (dim_param)? */
static bool pin_fits(struct ox_imp *im, const Onnx__GraphProto *g, const struct ox_pin *p)
{
	for (size_t k = 0; k < g->n_input; k++) {
		const Onnx__ValueInfoProto *vi = g->input[k];
		const Onnx__TensorShapeProto *sh;

		/* before IR 4 initializers are listed as inputs: no pin moves them */
		if (!vi->name || ox_find(im, vi->name))
			continue;
		if (p->kind != PIN_DIM) {
			if (names(p, vi->name))
				return true;
			continue;
		}
		sh = vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ?
		     vi->type->tensor_type->shape : NULL;
		for (size_t d = 0; sh && d < sh->n_dim; d++)
			if (sh->dim[d]->value_case ==
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			    names(p, sh->dim[d]->dim_param))
				return true;
	}
	return false;
}

npurt_status ox_pins_check(struct ox_imp *im, const Onnx__GraphProto *g)
{
	for (size_t k = 0; k < im->npins; k++)
		if (!pin_fits(im, g, &im->pins[k]))
			return ox_fail(im, NPURT_ERR_INVALID, "%s \"%.64s\": the model has no %s "
				       "\"%.*s\"", kind_name[im->pins[k].kind], im->pins[k].spec,
				       im->pins[k].kind == PIN_DIM ? "input dimension called" :
				       "input", (int)im->pins[k].name_len, im->pins[k].spec);
	return NPURT_OK;
}
