// SPDX-License-Identifier: MIT
/*
 * Weights packed once, as a graph becomes a model file: the B of an f32
 * GEMM that is a constant goes into the panels the device's matrix
 * kernels read (NPU_OP_F_B_PANELS, npu_oplib.h), so no launch repacks it
 * (every launch did, on every core: a sixth of a transformer's device
 * time). Several GEMMs reading one B share one copy; a constant that
 * nothing reads once its GEMMs read panels leaves the file. A B whose
 * panels would pad it by more than a quarter (a handful of columns)
 * stays as it is: the kernels pack it per launch, as before.
 *
 * This works on finish()'s copy of the model: the graph keeps what was
 * built, and a second serialization packs again from it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "npu_opdefs.h"

static uint32_t base_of(const struct mf_model *m, uint32_t t)
{
	return m->tensors[t].segment == NPUM_SEG_VIEW ? m->tensors[t].base : t;
}

/* B's rows and columns as this GEMM reads them; 0 if it is not worth packing. */
static uint64_t packable(const struct mf_model *m, const struct npum_op *op, uint64_t *k,
			 uint64_t *n)
{
	const struct npum_tensor *a, *b, *o;
	uint64_t shape[3], stride[3];

	if (op->type != NPUM_OP_KERNEL || op->kernel != NPU_OP_GEMM ||
	    op->flags & NPU_OP_F_B_PANELS || op->in[1] == NPUM_NONE)
		return 0;
	a = &m->tensors[op->in[0]];
	b = &m->tensors[op->in[1]];
	o = &m->tensors[op->out];
	if (a->dtype != NPUM_F32 || b->dtype != NPUM_F32 || o->dtype != NPUM_F32 || b->ndim != 2 ||
	    m->tensors[base_of(m, op->in[1])].segment != NPUM_SEG_WEIGHTS)
		return 0;
	*k = op->flags & NPU_OP_F_TRANS_B ? b->shape[1] : b->shape[0];
	*n = o->shape[1];
	if (npu_panels_tensor(*k, *n, shape, stride) * 4 > *k * *n * 5)
		return 0;
	return *k * *n;
}

/* The bytes of weights tensor (or view of one) t, element 0 of it. */
static const float *weight_data(const struct mf_model *m, uint32_t t)
{
	const struct npum_tensor *v = &m->tensors[t];
	uint64_t off = v->segment == NPUM_SEG_VIEW ? m->tensors[v->base].offset + v->offset :
		       v->offset;

	return (const float *)(m->weights + off);
}

static uint64_t aligned(uint64_t at)
{
	return (at + NPUM_ALIGN - 1) & ~(uint64_t)(NPUM_ALIGN - 1);
}

/* The new tables, built aside and swapped in whole. */
struct packing {
	uint32_t *packed;		/* per op: its panels' index among the new, or NONE */
	uint32_t *remap;		/* old tensor -> new, NPUM_NONE: dropped */
	bool *live;			/* per old tensor: referenced after the rewrite */
	bool *touched;			/* per old tensor: a B packed, or its base */
	struct npum_tensor *tensors;
	struct npum_io *io;
	uint8_t *weights;
	struct panels {
		uint32_t op;		/* the first GEMM that reads them */
		uint64_t k, n;
	} *panels;
};

static void packing_free(struct packing *p)
{
	free(p->packed);
	free(p->remap);
	free(p->live);
	free(p->touched);
	free(p->tensors);
	free(p->io);
	free(p->weights);
	free(p->panels);
}

static void mark_live(const struct mf_model *m, bool *live, uint32_t t)
{
	if (t == NPUM_NONE)
		return;
	live[t] = true;
	live[base_of(m, t)] = true;
}

int graph_pack_weights(struct mf_model *m)
{
	struct packing p = { 0 };
	uint32_t npacked = 0, nt = 0;
	uint64_t at = 0, k, n;

	p.packed = malloc(m->nops * sizeof(*p.packed));
	p.panels = calloc(m->nops, sizeof(*p.panels));
	if (!p.packed || !p.panels)
		goto nomem;
	for (uint32_t i = 0; i < m->nops; i++) {
		const struct npum_op *op = &m->ops[i];
		uint32_t j;

		p.packed[i] = NPUM_NONE;
		if (!packable(m, op, &k, &n))
			continue;
		/* One copy for every GEMM that reads this B the same way (so k and n agree). */
		for (j = 0; j < npacked; j++) {
			const struct npum_op *q = &m->ops[p.panels[j].op];

			if (q->in[1] == op->in[1] && !((q->flags ^ op->flags) & NPU_OP_F_TRANS_B))
				break;
		}
		if (j == npacked)
			p.panels[npacked++] = (struct panels){ .op = i, .k = k, .n = n };
		p.packed[i] = j;
	}
	if (!npacked) {
		packing_free(&p);
		return 0;
	}

	p.live = calloc(m->ntensors, sizeof(*p.live));
	p.touched = calloc(m->ntensors, sizeof(*p.touched));
	p.remap = malloc(m->ntensors * sizeof(*p.remap));
	p.tensors = calloc((size_t)m->ntensors + npacked, sizeof(*p.tensors));
	p.io = malloc((m->plan.inputs + m->plan.outputs) * sizeof(*p.io));
	if (!p.live || !p.touched || !p.remap || !p.tensors || !p.io)
		goto nomem;
	for (uint32_t i = 0; i < m->nops; i++) {
		for (int r = 0; r < NPUM_OP_READS; r++)
			if (r != 1 || p.packed[i] == NPUM_NONE)
				mark_live(m, p.live, npum_op_read(&m->ops[i], r));
		mark_live(m, p.live, m->ops[i].out);
	}
	for (uint32_t i = 0; i < m->plan.inputs + m->plan.outputs; i++)
		mark_live(m, p.live, m->io[i].tensor);
	/* Only what packing left unread goes: a constant nothing read stays. */
	for (uint32_t i = 0; i < m->nops; i++)
		if (p.packed[i] != NPUM_NONE) {
			p.touched[m->ops[i].in[1]] = true;
			p.touched[base_of(m, m->ops[i].in[1])] = true;
		}
	for (uint32_t t = 0; t < m->ntensors; t++) {
		bool gone = !p.live[t] && p.touched[t];

		/* An unread view of a weight that goes, goes too (views follow their base). */
		if (m->tensors[t].segment == NPUM_SEG_VIEW && p.remap[m->tensors[t].base] == NPUM_NONE)
			gone = true;
		if (gone) {
			p.remap[t] = NPUM_NONE;
			continue;
		}
		p.remap[t] = nt;
		p.tensors[nt] = m->tensors[t];
		if (m->tensors[t].segment == NPUM_SEG_WEIGHTS) {
			p.tensors[nt].offset = at;
			at = aligned(at + m->tensors[t].bytes);
		}
		nt++;
	}
	for (uint32_t j = 0; j < npacked; j++) {
		const struct panels *pn = &p.panels[j];
		struct npum_tensor *t = &p.tensors[nt + j];

		*t = (struct npum_tensor){ .name = m->tensors[base_of(m, m->ops[pn->op].in[1])].name,
					   .dtype = NPUM_F32, .ndim = 3,
					   .segment = NPUM_SEG_WEIGHTS, .offset = at };
		t->bytes = npu_panels_tensor(pn->k, pn->n, t->shape, t->stride) * sizeof(float);
		at = aligned(at + t->bytes);
	}
	if (at > NPUM_MAX_SEGMENT) {	/* the old weights were in it: keep them */
		packing_free(&p);
		return 0;
	}
	p.weights = calloc(1, at ? at : 1);
	if (!p.weights)
		goto nomem;
	for (uint32_t t = 0; t < m->ntensors; t++)
		if (p.remap[t] != NPUM_NONE && m->tensors[t].segment == NPUM_SEG_WEIGHTS)
			memcpy(p.weights + p.tensors[p.remap[t]].offset,
			       m->weights + m->tensors[t].offset, m->tensors[t].bytes);
	for (uint32_t j = 0; j < npacked; j++) {
		const struct npum_op *op = &m->ops[p.panels[j].op];
		const struct npum_tensor *b = &m->tensors[op->in[1]];
		bool tb = op->flags & NPU_OP_F_TRANS_B;

		npu_panels_pack(weight_data(m, op->in[1]), tb ? b->stride[1] : b->stride[0],
				tb ? b->stride[0] : b->stride[1], p.panels[j].k, p.panels[j].n,
				(float *)(p.weights + p.tensors[nt + j].offset));
	}

	/* Everything checked and built: swap in the new tables. */
	for (uint32_t t = 0; t < nt; t++)
		if (p.tensors[t].segment == NPUM_SEG_VIEW)
			p.tensors[t].base = p.remap[p.tensors[t].base];
	for (uint32_t i = 0; i < m->plan.inputs + m->plan.outputs; i++) {
		p.io[i] = m->io[i];
		p.io[i].tensor = p.remap[p.io[i].tensor];
	}
	for (uint32_t i = 0; i < m->nops; i++) {
		struct npum_op *op = &m->ops[i];

		op->in[0] = op->in[0] == NPUM_NONE ? NPUM_NONE : p.remap[op->in[0]];
		op->in[1] = p.packed[i] != NPUM_NONE ? nt + p.packed[i] :
			    op->in[1] == NPUM_NONE ? NPUM_NONE : p.remap[op->in[1]];
		op->out = op->out == NPUM_NONE ? NPUM_NONE : p.remap[op->out];
		if (op->epi_flags & NPU_OP_E_BIAS)
			op->bias = p.remap[op->bias];
		/* The panels hold B as the GEMM reads it: transposed, if it was. */
		if (p.packed[i] != NPUM_NONE)
			op->flags = (op->flags & ~NPU_OP_F_TRANS_B) | NPU_OP_F_B_PANELS;
	}
	m->tensors = p.tensors;
	m->ntensors = nt + npacked;
	m->weights = p.weights;
	m->plan.weights_bytes = at;
	m->io = p.io;
	p.tensors = NULL;
	p.weights = NULL;
	p.io = NULL;
	packing_free(&p);
	return 0;
nomem:
	packing_free(&p);
	return ENOMEM;
}
