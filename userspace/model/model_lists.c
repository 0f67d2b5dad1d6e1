// SPDX-License-Identifier: MIT
/*
 * A loaded model's task lists (model.c loads, model_run.c runs): one per
 * stream, each op a task, each kernel launch an argument block in the
 * model's work memory after the feature maps. Wherever a task or block
 * names an input or output, a patch says which I/O slot goes there, so a
 * run binds its buffers without rewriting the lists.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"
#include "npu_opdefs.h"
#include "profile.h"

_Static_assert(sizeof(struct npu_op_args) <= MODEL_ARG_SLOT, "argument blocks fit their slots");
_Static_assert(offsetof(struct npu_op_args, out) < offsetof(struct npu_op_args, epi),
	       "add_kernel() patches in the block's order");

struct builder {
	npurt_model *m;
	struct model_list *l;
	uint32_t task_cap, patch_cap;
	uint8_t *args_host;		/* the argument blocks, CPU-mapped */
	uint64_t args_addr;
	uint32_t next_block;
};

static bool add_task(struct builder *b, struct drm_npu_task t)
{
	struct model_list *l = b->l;

	if (l->ntasks == b->task_cap) {
		uint32_t n = b->task_cap ? 2 * b->task_cap : 64;
		struct drm_npu_task *p = realloc(l->tasks, n * sizeof(*p));

		if (!p)
			return false;
		l->tasks = p;
		b->task_cap = n;
	}
	l->tasks[l->ntasks++] = t;
	return true;
}

/* A patch of the task just added. */
static bool add_patch(struct builder *b, uint16_t kind, uint32_t slot, uint32_t field,
		      uint64_t offset)
{
	struct model_list *l = b->l;

	if (l->npatches == b->patch_cap) {
		uint32_t n = b->patch_cap ? 2 * b->patch_cap : 64;
		struct drm_npu_patch *p = realloc(l->patches, n * sizeof(*p));

		if (!p)
			return false;
		l->patches = p;
		b->patch_cap = n;
	}
	l->patches[l->npatches++] = (struct drm_npu_patch){ .task = l->ntasks - 1, .kind = kind,
							    .slot = (uint16_t)slot, .field = field,
							    .offset = offset };
	return true;
}

/*
 * Where tensor t is for the device: its address, or (NPUM_NONE in *slot
 * otherwise) the I/O slot and offset a run binds.
 */
static uint64_t tensor_addr(const npurt_model *m, uint32_t t, uint32_t *slot, uint64_t *off)
{
	const struct npum_tensor *x = &m->m.tensors[t];
	uint64_t o = 0;

	*slot = NPUM_NONE;
	*off = 0;
	if (x->segment == NPUM_SEG_VIEW) {
		o = x->offset;
		x = &m->m.tensors[x->base];
	}
	switch (x->segment) {
	case NPUM_SEG_WEIGHTS:
		return npurt_mem_device_addr(m->weights->mem) + x->offset + o;
	case NPUM_SEG_FMAP:
		return npurt_mem_device_addr(m->work) + x->offset + o;
	default:
		*slot = x->base;
		*off = o;
		return 0;
	}
}

uint64_t npurt_model_tensor_va(const npurt_model *m, uint32_t t, const uint64_t *io)
{
	uint32_t slot;
	uint64_t off, va = tensor_addr(m, t, &slot, &off);

	return slot == NPUM_NONE ? va : io[slot] + off;
}

uint32_t npurt_model_list_lead(const npurt_model *m, uint32_t s)
{
	return s ? 1 : m->m.plan.streams - 1;
}

static bool add_kernel(struct builder *b, const struct npum_op *op)
{
	const npurt_model *m = b->m;
	struct npu_op a;
	struct npu_op_args blk;
	/* In the order of the block: patches are sorted by field. */
	static const uint32_t field[4] = { offsetof(struct npu_op_args, in[0].va),
					   offsetof(struct npu_op_args, in[1].va),
					   offsetof(struct npu_op_args, out.va),
					   offsetof(struct npu_op_args, epi.bias.va) };
	uint32_t slot[4] = { NPUM_NONE, NPUM_NONE, NPUM_NONE, NPUM_NONE };
	uint32_t block = b->next_block++;
	uint64_t off[4] = { 0 };
	uint64_t at = b->args_addr + (uint64_t)block * MODEL_ARG_SLOT;

	mf_kernel_args(&m->m, op, &a);
	a.in[0].va = tensor_addr(m, op->in[0], &slot[0], &off[0]);
	if (op->in[1] != NPUM_NONE)
		a.in[1].va = tensor_addr(m, op->in[1], &slot[1], &off[1]);
	a.out.va = tensor_addr(m, op->out, &slot[2], &off[2]);
	if (op->epi_flags & NPU_OP_E_BIAS)
		a.epi.bias.va = tensor_addr(m, op->bias, &slot[3], &off[3]);
	npu_op_encode(&a, &blk);
	memcpy(b->args_host + (uint64_t)block * MODEL_ARG_SLOT, &blk, sizeof(blk));
	if (!add_task(b, (struct drm_npu_task){ .type = DRM_NPU_TASK_KERNEL,
						.args = { at, op->block_dim, sizeof(blk) } }))
		return false;
	for (int k = 0; k < 4; k++)
		if (slot[k] != NPUM_NONE &&
		    !add_patch(b, DRM_NPU_PATCH_KERNEL_ARGS, slot[k], field[k], off[k]))
			return false;
	return true;
}

static bool add_op(struct builder *b, const struct npum_op *op)
{
	const npurt_model *m = b->m;
	struct drm_npu_task t = { 0 };
	uint32_t ds, ss;
	uint64_t doff, soff;

	switch (op->type) {
	case NPUM_OP_KERNEL:
		return add_kernel(b, op);
	case NPUM_OP_SIGNAL:
	case NPUM_OP_WAIT:
		t.type = op->type == NPUM_OP_SIGNAL ? DRM_NPU_TASK_NOTIFY_RECORD :
			 DRM_NPU_TASK_NOTIFY_WAIT;
		t.args[0] = m->notify[op->event];
		return add_task(b, t);
	case NPUM_OP_COPY:
		t.type = DRM_NPU_TASK_COPY;
		t.args[0] = tensor_addr(m, op->out, &ds, &doff);
		t.args[1] = tensor_addr(m, op->in[0], &ss, &soff);
		t.args[2] = m->m.tensors[op->out].bytes;
		return add_task(b, t) &&
		       (ds == NPUM_NONE || add_patch(b, DRM_NPU_PATCH_TASK_ARG, ds, 0, doff)) &&
		       (ss == NPUM_NONE || add_patch(b, DRM_NPU_PATCH_TASK_ARG, ss, 1, soff));
	case NPUM_OP_FILL:
		t.type = DRM_NPU_TASK_FILL;
		t.args[0] = tensor_addr(m, op->out, &ds, &doff);
		t.args[1] = m->m.tensors[op->out].bytes;
		t.args[2] = op->value;
		return add_task(b, t) &&
		       (ds == NPUM_NONE || add_patch(b, DRM_NPU_PATCH_TASK_ARG, ds, 0, doff));
	default:
		return false;	/* the reader let no other type through */
	}
}

static bool notify_task(struct builder *b, bool record, uint32_t id)
{
	return add_task(b, (struct drm_npu_task){ .type = record ? DRM_NPU_TASK_NOTIFY_RECORD :
							 DRM_NPU_TASK_NOTIFY_WAIT,
						  .args = { id } });
}

/* Every stream's tasks, with the starts and joins around them. */
npurt_status npurt_model_build_lists(npurt_model *m, const char *who)
{
	uint32_t S = m->m.plan.streams, ev = m->m.plan.events;
	struct builder b = { .m = m };

	b.args_host = (uint8_t *)npurt_mem_host_ptr(m->work) + m->fmap_bytes;
	b.args_addr = npurt_mem_device_addr(m->work) + m->fmap_bytes;
	for (uint32_t s = 0; s < S; s++) {
		const struct npum_stream *st = &m->m.streams[s];
		bool ok = true;

		b.l = &m->lists[s];
		b.task_cap = b.patch_cap = 0;
		if (s == 0)
			for (uint32_t k = 1; k < S && ok; k++)
				ok = notify_task(&b, true, m->notify[ev + k - 1]);
		else
			ok = notify_task(&b, false, m->notify[ev + s - 1]);
		for (uint32_t i = 0; i < st->op_count && ok; i++)
			ok = add_op(&b, &m->m.ops[st->first_op + i]);
		if (s == 0)
			for (uint32_t k = 1; k < S && ok; k++)
				ok = notify_task(&b, false, m->notify[ev + S - 1 + k - 1]);
		else if (ok)
			ok = notify_task(&b, true, m->notify[ev + S - 1 + s - 1]);
		if (!ok)
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	return NPURT_OK;
}

const char *npurt_model_task_name(const npurt_model *m, const struct drm_npu_task *t)
{
	uint64_t base = npurt_mem_device_addr(m->work), size = npurt_mem_size(m->work);
	const uint8_t *host = npurt_mem_host_ptr(m->work);
	uint32_t op;

	if (t->type != DRM_NPU_TASK_KERNEL || t->args[0] < base ||
	    t->args[0] - base > size - sizeof(op))
		return NULL;
	memcpy(&op, host + (t->args[0] - base) + offsetof(struct npu_op_args, op), sizeof(op));
	return npurt_op_name(op);
}

/* The profiler's names for list `l`'s tasks. */
static void name_list(const npurt_model *m, const struct model_list *l)
{
	const char **names;

	if (!npurt_prof_now(m->dev))
		return;
	names = calloc(l->ntasks ? l->ntasks : 1, sizeof(*names));
	if (!names)
		return;
	for (uint32_t i = 0; i < l->ntasks; i++)
		names[i] = npurt_model_task_name(m, &l->tasks[i]);
	npurt_prof_name_list(m->dev, l->handle, l->ntasks, names);
	free(names);
}

/* Sink each stream's tasks to the device as a task list. */
npurt_status npurt_model_sink_lists(npurt_model *m, const char *who)
{
	struct drm_npu_io_slot *slots = calloc(m->nio ? m->nio : 1, sizeof(*slots));
	npurt_status st = NPURT_OK;

	if (!slots)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	for (uint32_t i = 0; i < m->nio; i++) {
		const struct npum_tensor *t = &m->m.tensors[m->m.io[i].tensor];

		slots[i] = (struct drm_npu_io_slot){
			.size = t->bytes,
			.flags = m->m.io[i].flags & NPUM_IO_OUTPUT ? DRM_NPU_IO_SLOT_WRITE : 0 };
	}
	for (uint32_t s = 0; s < m->m.plan.streams && !st; s++) {
		struct model_list *l = &m->lists[s];
		struct drm_npu_tasklist_create c = {
			.tasks = DRM_NPU_OBJ_ARRAY(l->ntasks, l->tasks),
			.patches = DRM_NPU_OBJ_ARRAY(l->npatches, l->patches),
			.slots = DRM_NPU_OBJ_ARRAY(m->nio, slots),
		};
		int err = npurt_ioctl(m->dev, DRM_IOCTL_NPU_TASKLIST_CREATE, &c);

		if (err)
			st = npurt_set_error(npurt_status_from_errno(err),
					     "%s: stream %u's task list (%u tasks): %s", who, s,
					     l->ntasks, strerror(err));
		else
			l->handle = c.handle;
		if (!err)
			name_list(m, l);
	}
	free(slots);
	return st;
}
