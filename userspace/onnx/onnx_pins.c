// SPDX-License-Identifier: MIT
/*
 * Pins: the values an importer's caller gives the dimensions a file
 * leaves symbolic (npurt_onnx_options), so a model exported with a
 * dynamic batch or sequence length imports static. Specs are text, as a
 * command line has them: "NAME=1x3x48x320" pins input NAME's whole shape,
 * "NAME=VALUE" every dimension called NAME. A pin naming nothing in the
 * model is a typo the caller hears about before anything else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "onnx.h"

#define OX_MAX_PINS	64

struct ox_pin {
	const char *spec;		/* the caller's text */
	size_t name_len;		/* of the name before the last '=' */
	bool shape;			/* a whole shape, else a dim_param */
	uint32_t ndim;
	int64_t dims[OX_MAX_DIMS];
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

static npurt_status parse_pin(const char *spec, bool shape, struct ox_pin *p)
{
	const char *eq = spec ? strrchr(spec, '=') : NULL, *s;
	const char *what = shape ? "shape" : "dim_param";

	if (!eq || eq == spec)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: %s \"%.64s\": "
				       "NAME=%s wanted", what, spec ? spec : "(null)",
				       shape ? "AxBxC" : "VALUE");
	*p = (struct ox_pin){ .spec = spec, .name_len = (size_t)(eq - spec), .shape = shape };
	s = eq + 1;
	if (shape && !*s)
		return NPURT_OK;	/* a scalar */
	for (;;) {
		if (p->ndim == (shape ? OX_MAX_DIMS : 1) || !parse_dim(s, &s, &p->dims[p->ndim]))
			return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: %s \"%.64s\": "
					       "%s of 1 to 2^40 wanted%s", what, spec,
					       shape ? "dimensions" : "a value",
					       shape ? " (at most 8, joined by x)" : "");
		p->ndim++;
		if (!*s)
			return NPURT_OK;
		if (!shape || (*s != 'x' && *s != ','))
			return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: %s \"%.64s\": "
					       "\"%c\" after a %s", what, spec, *s,
					       shape ? "dimension" : "value");
		s++;
	}
}

npurt_status ox_pins_parse(struct ox_imp *im, const npurt_onnx_options *opts)
{
	size_t n;
	npurt_status st;

	if (!opts)
		return NPURT_OK;
	if (opts->size < sizeof(*opts))
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: opts->size %u, want "
				       "%zu", opts->size, sizeof(*opts));
	n = (size_t)opts->n_shapes + opts->n_dim_params;
	if ((opts->n_shapes && !opts->shapes) || (opts->n_dim_params && !opts->dim_params) ||
	    n > OX_MAX_PINS)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_onnx_import: %u shapes and %u "
				       "dim_params (at most %d in all, their arrays not NULL)",
				       opts->n_shapes, opts->n_dim_params, OX_MAX_PINS);
	if (!n)
		return NPURT_OK;
	im->pins = calloc(n, sizeof(*im->pins));
	if (!im->pins)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "npurt_onnx_import: out of host memory");
	for (size_t k = 0; k < n; k++) {
		bool shape = k < opts->n_shapes;

		st = parse_pin(shape ? opts->shapes[k] : opts->dim_params[k - opts->n_shapes], shape,
			       &im->pins[k]);
		if (st)
			return st;
		im->npins++;
	}
	return NPURT_OK;
}

static struct ox_pin *find(struct ox_imp *im, const char *name, bool shape)
{
	size_t len = strlen(name);

	for (size_t k = 0; k < im->npins; k++)
		if (im->pins[k].shape == shape && im->pins[k].name_len == len &&
		    !memcmp(im->pins[k].spec, name, len))
			return &im->pins[k];
	return NULL;
}

npurt_status ox_pins_dims(struct ox_imp *im, const char *input,
			  const Onnx__TensorShapeProto *shape, int64_t *dims)
{
	struct ox_pin *p = find(im, input, true);

	if (p) {
		if (p->ndim != shape->n_dim)
			return ox_fail(im, NPURT_ERR_INVALID, "shape \"%.64s\": %u dimensions, input "
				       "\"%.64s\" has %zu", p->spec, p->ndim, input, shape->n_dim);
	}
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
		} else if (sym[0] && (q = find(im, sym, false))) {
			dims[k] = q->dims[0];
		} else {
			if (!sym[0])
				return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" has a "
					       "dynamic dimension %zu, unnamed: the device runs static "
					       "shapes; pin the input's shape", input, k);
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "input \"%.64s\" has a dynamic "
				       "dimension %zu (\"%.32s\"): the device runs static shapes; pin "
				       "it (a dim_param \"%.32s=VALUE\", or the input's shape)", input,
				       k, sym, sym);
		}
	}
	return NPURT_OK;
}

static bool names(const struct ox_pin *p, const char *name)
{
	return name && strlen(name) == p->name_len && !memcmp(p->spec, name, p->name_len);
}

/* Does the pin name an input (shape) or a dimension of one (dim_param)? */
static bool pin_fits(struct ox_imp *im, const Onnx__GraphProto *g, const struct ox_pin *p)
{
	for (size_t k = 0; k < g->n_input; k++) {
		const Onnx__ValueInfoProto *vi = g->input[k];
		const Onnx__TensorShapeProto *sh;

		/* before IR 4 initializers are listed as inputs: no pin moves them */
		if (!vi->name || ox_find(im, vi->name))
			continue;
		if (p->shape) {
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
				       "\"%.*s\"", im->pins[k].shape ? "shape" : "dim_param",
				       im->pins[k].spec, im->pins[k].shape ? "input" :
				       "input dimension called", (int)im->pins[k].name_len,
				       im->pins[k].spec);
	return NPURT_OK;
}
