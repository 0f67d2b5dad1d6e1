// SPDX-License-Identifier: MIT
/*
 * Running models (model.h; npurt.h, "Models: loading and running").
 *
 * Sink: one RUN_LIST per model stream, the run's I/O table inside each
 * batch (so a batch CONTINUE resubmits, or io_uring reads late, still
 * has it), all queued with one SUBMIT_MULTI: the first stream's on the
 * stream the run is for, the others on the model's own streams.
 *
 * Host: the same lists' tasks submitted from the host, the I/O table
 * patched into a copy of the tasks and into the argument blocks in
 * device memory (so a host run waits for the run before it), in batches
 * the streams gather; or one task at a time, each waited for (STEP).
 *
 * Plain host memory bound to an input is copied into its staging buffer
 * on the run's stream before the run, and an output's out after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "hooks.h"
#include "profile.h"
#include "model.h"

static npurt_status io_table(npurt_model *m, uint64_t *io, const char *who)
{
	for (uint32_t i = 0; i < m->nio; i++) {
		if (!m->io[i].ptr)
			return npurt_set_error(NPURT_ERR_INVALID, "%s: %s \"%s\" is not bound "
					       "(npurt_model_bind())", who,
					       i < m->m.plan.inputs ? "input" : "output",
					       m->m.strings + m->m.tensors[m->m.io[i].tensor].name);
		io[i] = m->io[i].addr;
	}
	return NPURT_OK;
}

/* Inputs (out: outputs) in plain host memory, through their staging buffers. */
static npurt_status stage(npurt_model *m, npurt_stream *s, bool out, const char *who)
{
	uint32_t first = out ? m->m.plan.inputs : 0, end = out ? m->nio : m->m.plan.inputs;

	for (uint32_t i = first; i < end; i++) {
		struct model_io *b = &m->io[i];
		size_t bytes = m->m.tensors[m->m.io[i].tensor].bytes;
		void *dev = npurt_mem_host_ptr(b->staging);
		npurt_status st;

		if (!b->staged)
			continue;
		st = out ? npurt_copy_async(s, b->ptr, dev, bytes) :
			   npurt_copy_async(s, dev, b->ptr, bytes);
		if (st) {
			char why[256];

			snprintf(why, sizeof(why), "%s", npurt_last_error());
			return npurt_set_error(st, "%s: copying %s \"%s\": %s", who,
					       out ? "output" : "input",
					       m->m.strings + m->m.tensors[m->m.io[i].tensor].name, why);
		}
	}
	return NPURT_OK;
}

/* A batch of one RUN_LIST, its I/O table inside it. */
static struct npurt_batch *run_batch(const npurt_model *m, uint32_t s, const uint64_t *io,
				     const char *who)
{
	struct npurt_batch *b = malloc(sizeof(*b) + sizeof(b->tasks[0]) + sizeof(*b->ops) +
				       m->nio * sizeof(*io));
	uint64_t *table;

	if (!b)
		return NULL;
	b->count = 1;
	b->in = b->out = 0;
	b->next = NULL;
	b->ops = (struct npurt_op_ref *)&b->tasks[1];
	b->ops[0] = (struct npurt_op_ref){ .op = 0, .call = who };
	table = (uint64_t *)(b->ops + 1);
	memcpy(table, io, m->nio * sizeof(*io));
	b->tasks[0] = (struct drm_npu_task){ .type = DRM_NPU_TASK_RUN_LIST,
					     .args = { m->lists[s].handle,
						       m->nio ? (uintptr_t)table : 0, m->nio } };
	return b;
}

static npurt_status run_sink(npurt_model *m, npurt_stream *first, const uint64_t *io,
			     uint64_t *seq, const char *who)
{
	npurt_stream *st[NPUM_MAX_STREAMS];
	struct npurt_batch *b[NPUM_MAX_STREAMS] = { 0 };
	uint64_t seqs[NPUM_MAX_STREAMS];
	uint32_t S = m->m.plan.streams;
	npurt_status rc;

	for (uint32_t s = 0; s < S; s++) {
		st[s] = s ? m->streams[s] : first;
		b[s] = run_batch(m, s, io, who);
		if (!b[s]) {
			for (uint32_t k = 0; k <= s; k++)
				free(b[k]);
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		}
	}
	rc = npurt_streams_run(st, b, S, seqs, who);
	if (rc) {
		for (uint32_t s = 0; s < S; s++)
			free(b[s]);
		return rc;
	}
	*seq = seqs[0];
	return NPURT_OK;
}

static npurt_status run_host(npurt_model *m, npurt_stream *first, const uint64_t *io,
			     const struct model_dump *d, uint64_t *seq, const char *who)
{
	uint8_t *work = npurt_mem_host_ptr(m->work);
	uint64_t base = npurt_mem_device_addr(m->work);
	bool step = m->dispatch == NPURT_DISPATCH_HOST_STEP;
	npurt_status st = NPURT_OK;

	/* The argument blocks are rewritten: the run before must be through them. */
	if (m->last) {
		st = npurt_stream_wait(m->last, m->last_seq, who);
		if (st)
			return st;
	}
	for (uint32_t s = m->m.plan.streams; s-- > 0 && !st;) {
		const struct model_list *l = &m->lists[s];
		npurt_stream *to = s ? m->streams[s] : first;
		struct drm_npu_task *t = malloc((l->ntasks ? l->ntasks : 1) * sizeof(*t));
		uint32_t ntasks = l->ntasks;
		const char **names = NULL;

		if (!t)
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		memcpy(t, l->tasks, l->ntasks * sizeof(*t));
		for (uint32_t i = 0; i < l->npatches; i++) {
			const struct drm_npu_patch *p = &l->patches[i];
			uint64_t v = io[p->slot] + p->offset;

			if (p->kind == DRM_NPU_PATCH_TASK_ARG)
				t[p->task].args[p->field] = v;
			else
				memcpy(work + (t[p->task].args[0] - base) + p->field, &v, sizeof(v));
		}
		if (d) {
			struct drm_npu_task *with;

			st = npurt_dump_tasks(d, m, s, t, io, &with, &ntasks, who);
			free(t);
			if (st)
				return st;
			t = with;
		}
		/* The profiler's names for them, while it records. */
		if (npurt_prof_now(m->dev))
			names = calloc(ntasks ? ntasks : 1, sizeof(*names));
		for (uint32_t i = 0; names && i < ntasks; i++)
			names[i] = npurt_model_task_name(m, &t[i]);
		for (uint32_t i = 0; i < ntasks && !st;) {
			uint32_t n = step ? 1 : ntasks - i < NPURT_BATCH_MAX ? ntasks - i :
				     NPURT_BATCH_MAX;

			st = npurt_stream_push_op(to, t + i, n, seq, who, names ? names + i : NULL);
			if (!st && step)
				st = npurt_stream_wait(to, *seq, who);
			i += n;
		}
		free(names);
		free(t);
	}
	return st;
}

/* Staged inputs (out: outputs) copied by the CPU, the run's streams idle. */
static void stage_host(npurt_model *m, bool out)
{
	uint32_t first = out ? m->m.plan.inputs : 0, end = out ? m->nio : m->m.plan.inputs;

	for (uint32_t i = first; i < end; i++) {
		struct model_io *b = &m->io[i];
		size_t bytes = m->m.tensors[m->m.io[i].tensor].bytes;

		if (!b->staged)
			continue;
		if (out)
			memcpy(b->ptr, npurt_mem_host_ptr(b->staging), bytes);
		else
			memcpy(npurt_mem_host_ptr(b->staging), b->ptr, bytes);
	}
}

/*
 * One run queued on `first`: inputs in, the lists, outputs out; `async`:
 * staged inputs and outputs copied on the stream, else by the caller.
 * Lock held.
 */
static npurt_status run(npurt_model *m, npurt_stream *first, bool async,
			const struct model_dump *d, const char *who)
{
	uint64_t io[NPUM_MAX_IO], seq = 0;
	npurt_status st;

	st = npurt_model_reload(m, who);
	if (!st)
		st = io_table(m, io, who);
	if (st)
		return st;
	/* Runs share the feature maps: never two at once on the device. */
	if (m->last && m->last != first) {
		st = npurt_stream_wait(m->last, m->last_seq, who);
		if (st)
			return st;
	}
	if (async)
		st = stage(m, first, false, who);
	else
		stage_host(m, false);
	if (!st)
		/* A dump's copies go between the tasks: never sunk. */
		st = m->dispatch == NPURT_DISPATCH_SINK && !d ? run_sink(m, first, io, &seq, who) :
		     run_host(m, first, io, d, &seq, who);
	if (!st && async)
		st = stage(m, first, true, who);
	if (st)
		return st;
	if (m->last != first) {
		if (m->last)
			npurt_stream_put(m->last);
		atomic_fetch_add(&first->refs, 1);
		m->last = first;
	}
	m->last_seq = npurt_stream_last(first);
	m->used = atomic_fetch_add(&m->dev->model_clock, 1) + 1;
	return NPURT_OK;
}

npurt_status npurt_model_execute(npurt_model *m, int32_t timeout_ms)
{
	static const char who[] = "npurt_model_execute";

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL model", who);
	if (timeout_ms < -1)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: timeout %d ms (-1: none)", who,
				       timeout_ms);
	if (npurt_model_loop_check(m, who))
		return NPURT_ERR_INVALID;
	return npurt_model_run_dump(m, timeout_ms, NULL, who);
}

npurt_status npurt_model_run_dump(npurt_model *m, int32_t timeout_ms, const struct model_dump *d,
				  const char *who)
{
	npurt_status st;

	pthread_mutex_lock(&m->lock);
	m->busy = true;
	st = npurt_model_reload(m, who);
	/* A run elsewhere may still read the staging buffers the CPU fills. */
	if (!st && m->last && m->last != m->streams[0])
		st = npurt_stream_wait(m->last, m->last_seq, who);
	if (!st)
		st = run(m, m->streams[0], false, d, who);
	if (!st) {
		st = npurt_stream_synchronize_timeout(m->streams[0], timeout_ms);
		if (!st)
			stage_host(m, true);
		if (st) {
			/* A wait that timed out, or the stream's own failure (its time limit too). */
			bool waited = st == NPURT_ERR_TIMEOUT && !npurt_path_failed(m->streams[0]);
			char why[512];
			npurt_status again;

			snprintf(why, sizeof(why), "%s", npurt_last_error());
			/* Stop what is left of the run; the next one gets fresh queues. */
			for (uint32_t s = 0; s < m->m.plan.streams; s++)
				npurt_stream_abort(m->streams[s]);
			if (m->last) {
				npurt_stream_put(m->last);
				m->last = NULL;
			}
			again = npurt_model_new_streams(m, who);
			if (again)
				npurt_model_release_device(m);	/* the next run loads it again */
			st = waited ? npurt_set_error(st, "%s: the run did not finish in %d ms, so it "
						      "was aborted", who, timeout_ms) :
				      npurt_set_error(st, "%s: %s", who, why);
		}
	}
	m->busy = false;
	pthread_mutex_unlock(&m->lock);
	return st;
}

npurt_status npurt_model_execute_async(npurt_model *m, npurt_stream *stream)
{
	static const char who[] = "npurt_model_execute_async";
	npurt_status st;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL model", who);
	if (npurt_handle_check(stream, NPURT_KIND_STREAM, who) || npurt_model_loop_check(m, who))
		return NPURT_ERR_INVALID;
	if (stream->dev != m->dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the stream is another device's", who);
	if (npurt_capturing(stream))
		return npurt_capture_refuse(stream, who, "a model does not run inside a capture");
	pthread_mutex_lock(&m->lock);
	m->busy = true;
	st = run(m, stream, true, NULL, who);
	m->busy = false;
	pthread_mutex_unlock(&m->lock);
	return st;
}
