// SPDX-License-Identifier: MIT
/*
 * The order of a model's ops across its streams, and the feature-map
 * memory plan that order allows (model_file.h).
 *
 * Order: streams run their ops in order and wait for each other only at
 * events, so "op x happens before op y" is reachability through stream
 * order and signal-to-wait edges. Every op gets a vector clock: for each
 * stream, how many of its ops happen before it. A cycle (streams waiting
 * for each other) leaves ops unordered and is refused.
 *
 * Plan: a feature map's bytes may be another's only when every access to
 * one happens before every access to the other; with the clocks that is a
 * comparison per stream (before()). Planning places the largest tensors
 * first, each at the lowest offset where it overlaps no tensor it may be
 * live with (greedy by size); checking a file's plan finds every pair
 * that shares bytes and asks the same question.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model_file.h"
#include "npu_oplib.h"

struct mf_order {
	uint32_t streams;
	uint32_t nops;
	uint32_t *stream;		/* per op */
	uint32_t *pos;			/* per op: its place in its stream */
	uint32_t *clock;		/* per op, `streams` each: ops of s before it */
	uint32_t *topo;			/* the ops in an order that respects it */
};

const uint32_t *mf_order_topo(const struct mf_order *o)
{
	return o->topo;
}

void mf_order_free(struct mf_order *o)
{
	if (!o)
		return;
	free(o->stream);
	free(o->pos);
	free(o->clock);
	free(o->topo);
	free(o);
}

int mf_order_make(const struct mf_model *m, struct mf_order **out, char *why, size_t len)
{
	uint32_t n = m->nops, S = m->plan.streams, done = 0, head = 0;
	struct mf_order *o = calloc(1, sizeof(*o));
	uint32_t *waiter = NULL, *indeg = NULL;
	int ret = ENOMEM;

	*out = NULL;
	if (!o)
		return ENOMEM;
	o->streams = S;
	o->nops = n;
	o->stream = malloc(n * sizeof(*o->stream));
	o->pos = malloc(n * sizeof(*o->pos));
	o->clock = calloc((size_t)n * S, sizeof(*o->clock));
	o->topo = malloc(n * sizeof(*o->topo));
	waiter = malloc((m->plan.events ? m->plan.events : 1) * sizeof(*waiter));
	indeg = calloc(n, sizeof(*indeg));
	if (!o->stream || !o->pos || !o->clock || !o->topo || !waiter || !indeg)
		goto out;
	for (uint32_t s = 0; s < S; s++) {
		for (uint32_t i = 0; i < m->streams[s].op_count; i++) {
			uint32_t op = m->streams[s].first_op + i;

			o->stream[op] = s;
			o->pos[op] = i;
			indeg[op] = i > 0;
			if (m->ops[op].type == NPUM_OP_WAIT)
				waiter[m->ops[op].event] = op;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		indeg[i] += m->ops[i].type == NPUM_OP_WAIT;
	/* Kahn's algorithm; topo doubles as its queue. */
	for (uint32_t s = 0; s < S; s++)
		if (!indeg[m->streams[s].first_op])
			o->topo[done++] = m->streams[s].first_op;
	while (head < done) {
		uint32_t x = o->topo[head++], s = o->stream[x];
		uint32_t next[2], k = 0;
		uint32_t *cx = &o->clock[(size_t)x * S];

		if (o->pos[x] + 1 < m->streams[s].op_count)
			next[k++] = x + 1;
		/* Events are checked to have one signal and one wait each. */
		if (m->ops[x].type == NPUM_OP_SIGNAL)
			next[k++] = waiter[m->ops[x].event];
		for (uint32_t j = 0; j < k; j++) {
			uint32_t *cy = &o->clock[(size_t)next[j] * S];

			for (uint32_t t = 0; t < S; t++) {
				uint32_t c = cx[t] + (t == s);

				if (c > cy[t])
					cy[t] = c;
			}
			if (!--indeg[next[j]])
				o->topo[done++] = next[j];
		}
	}
	if (done < n) {
		for (uint32_t i = 0; i < n; i++) {
			if (indeg[i] && m->ops[i].type == NPUM_OP_WAIT) {
				ret = mf_fail(why, len, "the streams wait for each other for ever: a cycle "
					   "through event %u", m->ops[i].event);
				goto out;
			}
		}
		ret = mf_fail(why, len, "the streams wait for each other for ever");
		goto out;
	}
	*out = o;
	o = NULL;
	ret = 0;
out:
	free(waiter);
	free(indeg);
	mf_order_free(o);
	return ret;
}

/* Per feature-map tensor: where its accesses start and end, per stream. */
struct span {
	uint32_t tensor;
	uint64_t bytes;			/* aligned */
	uint64_t offset;
	uint32_t *first;		/* min over accesses y of clock(y)[s] */
	uint32_t *last;			/* max over accesses on s of pos + 1 */
	uint32_t topo_first, topo_last;	/* in o->topo, for the peak */
	bool used;
};

struct spans {
	uint32_t n, S;
	struct span *v;
	uint32_t *index;		/* tensor -> span, or NPUM_NONE */
	uint32_t *mem;
};

static void spans_free(struct spans *sp)
{
	free(sp->v);
	free(sp->index);
	free(sp->mem);
}

static uint64_t align_up(uint64_t v)
{
	return (v + NPUM_ALIGN - 1) & ~(uint64_t)(NPUM_ALIGN - 1);
}

static void touch(struct spans *sp, const struct mf_model *m, const struct mf_order *o,
		  uint32_t op, uint32_t tensor, uint32_t topo_at)
{
	const struct npum_tensor *b;
	struct span *x;
	uint32_t s = o->stream[op];

	if (tensor >= m->ntensors)
		return;
	b = mf_base(m, &m->tensors[tensor]);
	if (b->segment != NPUM_SEG_FMAP)
		return;
	x = &sp->v[sp->index[b - m->tensors]];
	for (uint32_t t = 0; t < sp->S; t++) {
		uint32_t c = t == s ? o->pos[op] : o->clock[(size_t)op * sp->S + t];

		if (!x->used || c < x->first[t])
			x->first[t] = c;
	}
	if (o->pos[op] + 1 > x->last[s])
		x->last[s] = o->pos[op] + 1;
	if (!x->used || topo_at < x->topo_first)
		x->topo_first = topo_at;
	if (!x->used || topo_at > x->topo_last)
		x->topo_last = topo_at;
	x->used = true;
}

static int spans_make(struct spans *sp, const struct mf_model *m, const struct mf_order *o)
{
	uint32_t S = m->plan.streams, n = 0;

	memset(sp, 0, sizeof(*sp));
	sp->S = S;
	sp->index = malloc(m->ntensors * sizeof(*sp->index));
	if (!sp->index)
		return ENOMEM;
	for (uint32_t i = 0; i < m->ntensors; i++) {
		sp->index[i] = m->tensors[i].segment == NPUM_SEG_FMAP ? n : NPUM_NONE;
		n += m->tensors[i].segment == NPUM_SEG_FMAP;
	}
	sp->n = n;
	sp->v = calloc(n ? n : 1, sizeof(*sp->v));
	sp->mem = calloc((size_t)(n ? n : 1) * 2 * S, sizeof(*sp->mem));
	if (!sp->v || !sp->mem) {
		spans_free(sp);
		return ENOMEM;
	}
	for (uint32_t i = 0, k = 0; i < m->ntensors; i++) {
		if (sp->index[i] == NPUM_NONE)
			continue;
		sp->v[k] = (struct span){ .tensor = i, .bytes = align_up(m->tensors[i].bytes),
					  .offset = m->tensors[i].offset,
					  .first = &sp->mem[(size_t)k * 2 * S],
					  .last = &sp->mem[(size_t)k * 2 * S + S] };
		k++;
	}
	for (uint32_t t = 0; t < o->nops; t++) {
		uint32_t op = o->topo[t];
		const struct npum_op *x = &m->ops[op];

		if (x->type == NPUM_OP_SIGNAL || x->type == NPUM_OP_WAIT)
			continue;
		for (int k = 0; k < NPUM_OP_READS; k++)
			touch(sp, m, o, op, npum_op_read(x, k), t);
		touch(sp, m, o, op, x->out, t);
	}
	return 0;
}

/* Does every access to a happen before every access to b? */
static bool before(const struct spans *sp, const struct span *a, const struct span *b)
{
	if (!a->used || !b->used)
		return true;
	for (uint32_t s = 0; s < sp->S; s++)
		if (a->last[s] > b->first[s])
			return false;
	return true;
}

static bool apart(const struct spans *sp, const struct span *a, const struct span *b)
{
	return before(sp, a, b) || before(sp, b, a);
}

static int by_offset(const void *x, const void *y)
{
	const struct span *a = *(const struct span *const *)x, *b = *(const struct span *const *)y;

	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

int mf_plan_verify(const struct mf_model *m, const struct mf_order *o, char *why, size_t len)
{
	struct span **sorted;
	struct spans sp;
	int ret = spans_make(&sp, m, o);

	if (ret)
		return ret;
	sorted = malloc((sp.n ? sp.n : 1) * sizeof(*sorted));
	if (!sorted) {
		spans_free(&sp);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < sp.n; i++)
		sorted[i] = &sp.v[i];
	qsort(sorted, sp.n, sizeof(*sorted), by_offset);
	/* Each against those after it that start before it ends. */
	for (uint32_t i = 0; i < sp.n && !ret; i++) {
		uint64_t end = sorted[i]->offset + m->tensors[sorted[i]->tensor].bytes;

		for (uint32_t j = i + 1; j < sp.n && sorted[j]->offset < end && !ret; j++) {
			if (!apart(&sp, sorted[i], sorted[j])) {
				const char *a = m->strings + m->tensors[sorted[i]->tensor].name;
				const char *b = m->strings + m->tensors[sorted[j]->tensor].name;

				ret = mf_fail(why, len, "the plan puts feature maps %u (%s) and %u (%s) in "
					   "the same bytes while both may be live",
					   sorted[i]->tensor, a, sorted[j]->tensor, b);
			}
		}
	}
	free(sorted);
	spans_free(&sp);
	return ret;
}

static int by_size(const void *x, const void *y)
{
	const struct span *a = *(const struct span *const *)x, *b = *(const struct span *const *)y;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->topo_first < b->topo_first ? -1 : a->topo_first > b->topo_first;
}

/* The peak of live bytes along the topological order: a lower bound (one execution). */
static uint64_t peak(const struct spans *sp, uint32_t nops)
{
	int64_t *delta = calloc((size_t)nops + 1, sizeof(*delta));
	int64_t live = 0, best = 0;

	if (!delta)
		return 0;
	for (uint32_t i = 0; i < sp->n; i++) {
		if (!sp->v[i].used)
			continue;
		delta[sp->v[i].topo_first] += (int64_t)sp->v[i].bytes;
		delta[sp->v[i].topo_last + 1] -= (int64_t)sp->v[i].bytes;
	}
	for (uint32_t t = 0; t <= nops; t++) {
		live += delta[t];
		if (live > best)
			best = live;
	}
	free(delta);
	return (uint64_t)best;
}

/*
 * A lower bound under concurrency: feature maps that pairwise may be live
 * together must all be apart in any plan, so the bytes of any such set
 * bound the plan from below. Streams run at the same time, so a set can
 * be larger than anything one serial order has live at once (two streams'
 * intermediates, say). A greedy set from each of the largest tensors (each
 * largest first, added when it conflicts with all taken) finds one.
 */
static uint64_t clique(const struct spans *sp, struct span **by_size, struct span **set)
{
	uint64_t best = 0;
	uint32_t seeds = sp->n < 256 ? sp->n : 256;

	for (uint32_t i = 0; i < seeds; i++) {
		uint32_t k = 0;
		uint64_t bytes = 0;

		if (!by_size[i]->used)
			continue;
		set[k++] = by_size[i];
		bytes = by_size[i]->bytes;
		for (uint32_t j = 0; j < sp->n; j++) {
			bool all = by_size[j]->used && j != i;

			for (uint32_t q = 0; q < k && all; q++)
				all = !apart(sp, by_size[j], set[q]);
			if (all) {
				set[k++] = by_size[j];
				bytes += by_size[j]->bytes;
			}
		}
		if (bytes > best)
			best = bytes;
	}
	return best;
}

int mf_plan_make(struct mf_model *m, const struct mf_order *o)
{
	struct span **order, **placed, **conf;
	uint64_t top = 0, sum = 0;
	uint32_t np = 0;
	struct spans sp;
	int ret = spans_make(&sp, m, o);

	if (ret)
		return ret;
	order = malloc((sp.n ? sp.n : 1) * sizeof(*order));
	placed = malloc((sp.n ? sp.n : 1) * sizeof(*placed));
	conf = malloc((sp.n ? sp.n : 1) * sizeof(*conf));
	if (!order || !placed || !conf) {
		ret = ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < sp.n; i++)
		order[i] = &sp.v[i];
	qsort(order, sp.n, sizeof(*order), by_size);
	for (uint32_t i = 0; i < sp.n; i++) {
		struct span *x = order[i];
		uint32_t nc = 0;
		uint64_t at = 0;

		/* The placed ones it may be live with, by offset: the first gap that fits. */
		for (uint32_t j = 0; j < np; j++)
			if (!apart(&sp, x, placed[j]))
				conf[nc++] = placed[j];
		qsort(conf, nc, sizeof(*conf), by_offset);
		for (uint32_t k = 0; k < nc && conf[k]->offset < at + x->bytes; k++)
			if (conf[k]->offset + conf[k]->bytes > at)
				at = conf[k]->offset + conf[k]->bytes;
		x->offset = at;
		placed[np++] = x;
		sum += x->bytes;
		if (at + x->bytes > top)
			top = at + x->bytes;
	}
	for (uint32_t i = 0; i < sp.n; i++)
		m->tensors[sp.v[i].tensor].offset = sp.v[i].offset;
	m->plan.fmap_bytes = top;
	m->plan.fmap_sum = sum;
	m->plan.fmap_peak = peak(&sp, o->nops);
	{
		uint64_t c = clique(&sp, order, conf);

		if (c > m->plan.fmap_peak)
			m->plan.fmap_peak = c;
	}
out:
	free(order);
	free(placed);
	free(conf);
	spans_free(&sp);
	return ret;
}
