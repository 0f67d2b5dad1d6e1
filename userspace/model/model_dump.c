// SPDX-License-Identifier: MIT
/*
 * Dumps (npurt.h, npurt_model_dump()): one run issued from the host with
 * a COPY task after each dumped op (before it, for its inputs) into
 * pinned memory of the dump's. In the queue's order, so each tensor is
 * taken as its op left it, before a later op reuses the feature-map bytes
 * it lives in (the memory plan shares them); a run of its own, since a
 * sunk list has no room for the copies.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "model.h"
#include "npu_opdefs.h"

#define DUMP_ALIGN	64

/* One tensor to copy out: op's `role` (NPURT_DUMP_*), at `at` in the buffer. */
struct dump_item {
	uint32_t op, role, tensor;
	uint64_t at, bytes;		/* bytes: the tensor's extent */
};

struct model_dump {
	struct dump_item *items;	/* op after op, in the ops' topological order */
	uint32_t n;
	uint32_t *first;		/* per op: its first item; NPUM_NONE: not dumped */
	npurt_mem *buf;
	uint64_t va;
};

static const char *op_name(const struct npum_op *op)
{
	switch (op->type) {
	case NPUM_OP_KERNEL: return npurt_op_name(op->kernel);
	case NPUM_OP_COPY: return "copy";
	case NPUM_OP_FILL: return "fill";
	default: return NULL;	/* SIGNAL, WAIT: nothing to dump */
	}
}

static const char *tensor_name(const npurt_model *m, uint32_t t)
{
	return m->m.strings + m->m.tensors[t].name;
}

/* Whether pattern `p` (len bytes, no NUL) matches op's name or its output's. */
static bool matches(const npurt_model *m, const struct npum_op *op, const char *p, size_t len)
{
	char pat[256];

	if (len >= sizeof(pat))
		return false;
	memcpy(pat, p, len);
	pat[len] = '\0';
	return !fnmatch(pat, op_name(op), 0) || !fnmatch(pat, tensor_name(m, op->out), 0);
}

/*
 * Pick the ops `ops` names (NULL, "": all) into d->first (1: dumped).
 * NPURT_ERR_INVALID naming a pattern that matches no op.
 */
static npurt_status pick(const npurt_model *m, struct model_dump *d, const char *ops,
			 const char *who)
{
	const char *p = ops && *ops ? ops : "*";

	for (;;) {
		size_t len = strcspn(p, ",");
		bool any = false;

		for (uint32_t k = 0; k < m->m.nops; k++) {
			const struct npum_op *op = &m->m.ops[k];

			if (op_name(op) && len && matches(m, op, p, len)) {
				d->first[k] = 1;
				any = true;
			}
		}
		if (!any)
			return npurt_set_error(NPURT_ERR_INVALID, "%s: no op of the model is "
					       "called \"%.*s\", nor writes a tensor of that name",
					       who, (int)len, p);
		if (!p[len])
			return NPURT_OK;
		p += len + 1;
	}
}

/* The items of the ops picked, in topological order, and the buffer they go to. */
static npurt_status plan(npurt_model *m, struct model_dump *d, uint32_t flags, const char *who)
{
	const struct npum_op *ops = m->m.ops;
	struct mf_order *o;
	char why[256];
	uint64_t at = 0;
	npurt_status st;

	if (mf_order_make(&m->m, &o, why, sizeof(why)))
		return npurt_set_error(NPURT_ERR_INTERNAL, "%s: %s", who, why);
	d->items = calloc((size_t)m->m.nops * 3, sizeof(*d->items));
	if (!d->items) {
		mf_order_free(o);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	for (uint32_t k = 0; k < m->m.nops; k++) {
		uint32_t i = mf_order_topo(o)[k];
		const struct npum_op *op = &ops[i];
		uint32_t tensors[3] = { NPUM_NONE, NPUM_NONE, op->out };

		if (!d->first[i]) {
			d->first[i] = NPUM_NONE;
			continue;
		}
		d->first[i] = d->n;
		if ((flags & NPURT_DUMP_INPUTS) && op->type != NPUM_OP_FILL) {
			tensors[0] = op->in[0];
			tensors[1] = op->in[1];
		}
		for (uint32_t r = 0; r < 3; r++) {
			uint32_t role = r == 2 ? NPURT_DUMP_OUTPUT : NPURT_DUMP_INPUT0 + r;
			uint64_t bytes;

			if (tensors[r] == NPUM_NONE)
				continue;
			bytes = m->m.tensors[tensors[r]].bytes;
			d->items[d->n++] = (struct dump_item){ .op = i, .role = role,
							       .tensor = tensors[r], .at = at,
							       .bytes = bytes };
			at += (bytes + DUMP_ALIGN - 1) & ~(uint64_t)(DUMP_ALIGN - 1);
		}
	}
	mf_order_free(o);
	st = npurt_host_alloc(m->dev, at, &d->buf);
	if (st)
		return npurt_set_error(st, "%s: %u tensors need %llu bytes of pinned memory (dump "
				       "fewer ops): %s", who, d->n, (unsigned long long)at,
				       npurt_last_error());
	d->va = npurt_mem_device_addr(d->buf);
	return NPURT_OK;
}

static struct drm_npu_task copy_out(const struct model_dump *d, const npurt_model *m,
				    const struct dump_item *it, const uint64_t *io)
{
	return (struct drm_npu_task){ .type = DRM_NPU_TASK_COPY,
				      .args = { d->va + it->at,
						npurt_model_tensor_va(m, it->tensor, io),
						it->bytes } };
}

npurt_status npurt_dump_tasks(const struct model_dump *d, const npurt_model *m, uint32_t s,
			      const struct drm_npu_task *t, const uint64_t *io,
			      struct drm_npu_task **out, uint32_t *n, const char *who)
{
	const struct npum_stream *st = &m->m.streams[s];
	uint32_t lead = npurt_model_list_lead(m, s), extra = 0, k = 0;
	struct drm_npu_task *w;

	for (uint32_t i = 0; i < d->n; i++)
		extra += d->items[i].op - st->first_op < st->op_count;
	w = malloc((*n + extra) * sizeof(*w));
	if (!w)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	for (uint32_t i = 0; i < *n; i++) {
		uint32_t op = i - lead < st->op_count ? st->first_op + (i - lead) : NPUM_NONE;
		uint32_t f = op == NPUM_NONE ? NPUM_NONE : d->first[op], j = f;

		/* Inputs as the op reads them, its output as it wrote it. */
		for (; f != NPUM_NONE && j < d->n && d->items[j].op == op; j++)
			if (d->items[j].role != NPURT_DUMP_OUTPUT)
				w[k++] = copy_out(d, m, &d->items[j], io);
		w[k++] = t[i];
		for (j = f; f != NPUM_NONE && j < d->n && d->items[j].op == op; j++)
			if (d->items[j].role == NPURT_DUMP_OUTPUT)
				w[k++] = copy_out(d, m, &d->items[j], io);
	}
	*out = w;
	*n = k;
	return NPURT_OK;
}

/* Tensor t's elements from its strided extent at src, row-major into dst. */
static void gather(const struct npum_tensor *t, const uint8_t *src, uint8_t *dst, size_t es)
{
	uint64_t idx[NPUM_MAX_DIMS] = { 0 }, off = 0, n = 1;

	for (uint32_t k = 0; k < t->ndim; k++)
		n *= t->shape[k];
	for (uint64_t e = 0; e < n; e++) {
		memcpy(dst + e * es, src + off * es, es);
		for (uint32_t k = t->ndim; k-- > 0;) {
			off += t->stride[k];
			if (++idx[k] < t->shape[k])
				break;
			off -= t->stride[k] * t->shape[k];
			idx[k] = 0;
		}
	}
}

static bool dense(const struct npum_tensor *t)
{
	uint64_t want = 1;

	for (uint32_t k = t->ndim; k-- > 0;) {
		if (t->shape[k] > 1 && t->stride[k] != want)
			return false;
		want *= t->shape[k];
	}
	return true;
}

/* Hand the copied tensors to fn, in the dump's order. */
static npurt_status deliver(const npurt_model *m, const struct model_dump *d, npurt_dump_fn fn,
			    void *user, const char *who)
{
	const uint8_t *base = npurt_mem_host_ptr(d->buf);

	for (uint32_t i = 0; i < d->n; i++) {
		const struct dump_item *it = &d->items[i];
		const struct npum_tensor *t = &m->m.tensors[it->tensor];
		size_t es = npurt_dtype_size((npurt_dtype)t->dtype);
		npurt_dump_tensor x = { .size = sizeof(x), .seq = i, .op = it->op,
					.role = it->role, .op_name = op_name(&m->m.ops[it->op]),
					.name = tensor_name(m, it->tensor),
					.dtype = (npurt_dtype)t->dtype, .ndim = t->ndim,
					.bytes = es };
		void *copy = NULL;
		npurt_status st;

		for (uint32_t k = 0; k < t->ndim; k++)
			x.bytes *= x.shape[k] = t->shape[k];
		x.data = base + it->at;
		if (!dense(t)) {
			copy = malloc(x.bytes);
			if (!copy)
				return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
			gather(t, base + it->at, copy, es);
			x.data = copy;
		}
		st = fn(&x, user);
		free(copy);
		if (st)
			return npurt_set_error(st, "%s: the callback returned %s for op %u's "
					       "tensor \"%s\"", who, npurt_status_name(st), it->op,
					       x.name);
	}
	return NPURT_OK;
}

npurt_status npurt_model_dump(npurt_model *m, const char *ops, uint32_t flags, npurt_dump_fn fn,
			      void *user)
{
	static const char who[] = "npurt_model_dump";
	struct model_dump d = { 0 };
	npurt_status st;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !fn)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL %s", who, m ? "callback" : "model");
	if (npurt_model_loop_check(m, who))
		return NPURT_ERR_INVALID;
	if (flags & ~NPURT_DUMP_INPUTS)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown flags %#x", who,
				       flags & ~NPURT_DUMP_INPUTS);
	d.first = calloc(m->m.nops ? m->m.nops : 1, sizeof(*d.first));
	if (!d.first)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	st = pick(m, &d, ops, who);
	if (!st)
		st = plan(m, &d, flags, who);
	if (!st)
		st = npurt_model_run_dump(m, -1, &d, who);
	if (!st)
		st = deliver(m, &d, fn, user, who);
	npurt_mem_free(d.buf);
	free(d.items);
	free(d.first);
	return st;
}
