// SPDX-License-Identifier: MIT
/*
 * Run loops (npurt.h, "Serving"): a resident thread per loop serving a
 * model from a queue of requests.
 *
 * A loop has `depth` buffer sets (pinned host memory for every input and
 * output of the model) cycling free -> filled (push copied the inputs in)
 * -> in flight (bound and queued on the loop's stream) -> free again once
 * the outputs went to `done`. Two threads: one queues each filled set as
 * soon as it is filled, the other waits for the oldest run in flight and
 * hands its outputs over; so the device has the next run queued behind
 * the one it runs while the host waits. A failed run gives its status to
 * done; the stream is then replaced once the runs queued on it are told
 * (each reports the failure too).
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "model.h"

#define LOOP_DEPTH_MAX	16

enum set_state { SET_FREE, SET_FILLED, SET_QUEUING, SET_FLIGHT };

struct loop_set {
	enum set_state state;
	uint64_t tag, seq;
	uint64_t order;			/* push order */
	npurt_stream *stream;		/* the one it runs on */
	npurt_mem **mem;		/* per input and output */
	void **ptr;
};

struct npurt_runloop {
	npurt_model *m;
	npurt_runloop_fn done;
	void *user;
	uint32_t depth;
	npurt_stream *stream;
	pthread_t submitter, completer;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a set changed state, or stop */
	bool stopping;
	bool submitted_all;		/* the submitter has left */
	bool failed;			/* a run failed: its stream takes no more */
	uint32_t filling;		/* pushes copying their inputs */
	uint32_t pushers;		/* threads inside npurt_runloop_push() */
	uint64_t pushed, next_submit, next_done;	/* push order numbers */
	struct loop_set sets[LOOP_DEPTH_MAX];
	struct model_io *saved;		/* the caller's bindings, back at stop */
};

static struct loop_set *set_by_order(npurt_runloop *l, uint64_t order, enum set_state state)
{
	for (uint32_t i = 0; i < l->depth; i++)
		if (l->sets[i].state == state && l->sets[i].order == order)
			return &l->sets[i];
	return NULL;
}

/* Bind the set and queue its run: its batch number in s->seq. */
static npurt_status submit(npurt_runloop *l, struct loop_set *s)
{
	npurt_model *m = l->m;
	npurt_status st = NPURT_OK;

	for (uint32_t i = 0; i < m->nio && !st; i++)
		st = npurt_model_bind(m, i, s->ptr[i], m->m.tensors[m->m.io[i].tensor].bytes);
	if (!st)
		st = npurt_model_execute_async(m, l->stream);
	if (!st)
		s->seq = npurt_stream_last(l->stream);
	return st;
}

_Thread_local const struct npurt_runloop *npurt_loop_self;

/* Queue each filled set in push order; replace the stream after a failure. */
static void *submitter(void *arg)
{
	npurt_runloop *l = arg;

	npurt_loop_self = l;	/* the one thread that binds and runs the model */
	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct loop_set *s = set_by_order(l, l->next_submit, SET_FILLED);
		npurt_status st;

		if (!s) {
			if (l->stopping && !l->filling && l->next_submit == l->pushed)
				break;
			pthread_cond_wait(&l->cond, &l->lock);
			continue;
		}
		if (l->failed) {
			npurt_stream *fresh;

			/* The runs queued behind the failure are told first. */
			if (l->next_done != l->next_submit) {
				pthread_cond_wait(&l->cond, &l->lock);
				continue;
			}
			pthread_mutex_unlock(&l->lock);
			if (!npurt_stream_create(l->m->dev, NPURT_PRIORITY_NORMAL, &fresh)) {
				npurt_stream_destroy(l->stream);
				l->stream = fresh;
			}
			pthread_mutex_lock(&l->lock);
			l->failed = false;
		}
		s->state = SET_QUEUING;
		s->stream = l->stream;
		l->next_submit++;
		pthread_mutex_unlock(&l->lock);
		st = submit(l, s);
		pthread_mutex_lock(&l->lock);
		if (st)
			s->seq = 0;	/* failed: reported in order by the completer */
		s->state = SET_FLIGHT;
		pthread_cond_broadcast(&l->cond);
	}
	l->submitted_all = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* Wait for the oldest run, hand its outputs to done, free its set. */
static void *completer(void *arg)
{
	npurt_runloop *l = arg;
	uint32_t first = l->m->m.plan.inputs;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct loop_set *s = set_by_order(l, l->next_done, SET_FLIGHT);
		npurt_status st;
		void *outs[NPUM_MAX_IO];

		if (!s) {
			if (l->submitted_all && l->next_done == l->next_submit)
				break;
			pthread_cond_wait(&l->cond, &l->lock);
			continue;
		}
		pthread_mutex_unlock(&l->lock);
		st = s->seq ? npurt_stream_wait(s->stream, s->seq, "npurt_runloop") :
		     NPURT_ERR_DEVICE;
		for (uint32_t i = first; i < l->m->nio; i++)
			outs[i - first] = s->ptr[i];
		l->done(l->user, s->tag, st, outs);
		pthread_mutex_lock(&l->lock);
		l->failed |= st != NPURT_OK;
		s->state = SET_FREE;
		l->next_done++;
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static void free_sets(npurt_runloop *l)
{
	for (uint32_t k = 0; k < l->depth; k++) {
		struct loop_set *s = &l->sets[k];

		for (uint32_t i = 0; s->mem && i < l->m->nio; i++)
			npurt_mem_free(s->mem[i]);
		free(s->mem);
		free(s->ptr);
	}
}

npurt_status npurt_runloop_start(npurt_model *m, const npurt_runloop_desc *d, npurt_runloop **out)
{
	static const char who[] = "npurt_runloop_start";
	npurt_runloop *l;
	npurt_status st;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !d || !out || !d->done)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (d->size < sizeof(*d))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->size %u, want %zu", who, d->size,
				       sizeof(*d));
	if (d->depth > LOOP_DEPTH_MAX)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: depth %u, at most %d", who, d->depth,
				       LOOP_DEPTH_MAX);
	l = calloc(1, sizeof(*l));
	if (!l)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	/* One loop a model: a second would bind its buffers under the first's runs. */
	{
		const struct npurt_runloop *none = NULL;

		if (!atomic_compare_exchange_strong(&m->loop, &none, l)) {
			free(l);
			return npurt_set_error(NPURT_ERR_INVALID, "%s: a run loop serves this "
					       "model already (npurt_runloop_stop() it first)", who);
		}
	}
	if (npurt_handle_add(l, NPURT_KIND_RUNLOOP, m->dev, who)) {
		atomic_store(&m->loop, NULL);
		free(l);
		return NPURT_ERR_NO_MEMORY;
	}
	l->m = m;
	l->done = d->done;
	l->user = d->user;
	l->depth = d->depth ? d->depth : 3;
	/* The loop binds its own buffers: the caller's come back when it stops. */
	l->saved = malloc(m->nio * sizeof(*l->saved));
	st = l->saved ? npurt_stream_create(m->dev, NPURT_PRIORITY_NORMAL, &l->stream) :
	     npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	if (!st) {
		pthread_mutex_lock(&m->lock);
		memcpy(l->saved, m->io, m->nio * sizeof(*l->saved));
		pthread_mutex_unlock(&m->lock);
	}
	for (uint32_t k = 0; k < l->depth && !st; k++) {
		struct loop_set *s = &l->sets[k];

		s->mem = calloc(m->nio, sizeof(*s->mem));
		s->ptr = calloc(m->nio, sizeof(*s->ptr));
		if (!s->mem || !s->ptr) {
			st = npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
			break;
		}
		for (uint32_t i = 0; i < m->nio && !st; i++) {
			st = npurt_host_alloc(m->dev, m->m.tensors[m->m.io[i].tensor].bytes, &s->mem[i]);
			if (!st)
				s->ptr[i] = npurt_mem_host_ptr(s->mem[i]);
		}
	}
	if (!st) {
		pthread_mutex_init(&l->lock, NULL);
		pthread_cond_init(&l->cond, NULL);
		if (pthread_create(&l->completer, NULL, completer, l)) {
			st = npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: no thread", who);
		} else if (pthread_create(&l->submitter, NULL, submitter, l)) {
			/* The completer leaves at once: nothing will be submitted. */
			pthread_mutex_lock(&l->lock);
			l->submitted_all = true;
			pthread_cond_broadcast(&l->cond);
			pthread_mutex_unlock(&l->lock);
			pthread_join(l->completer, NULL);
			st = npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: no thread", who);
		}
		if (st) {
			pthread_cond_destroy(&l->cond);
			pthread_mutex_destroy(&l->lock);
		}
	}
	if (st) {
		free_sets(l);
		npurt_stream_destroy(l->stream);
		atomic_store(&m->loop, NULL);
		npurt_handle_drop(l);
		free(l->saved);
		free(l);
		return st;
	}
	*out = l;
	return NPURT_OK;
}

/* A push is done with the loop (its lock held, and released here). */
static void push_leave(npurt_runloop *l)
{
	/* The last one out lets a stop that waits for it free the loop. */
	if (!--l->pushers && l->stopping)
		pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

npurt_status npurt_runloop_push(npurt_runloop *l, const void *const *inputs, uint64_t tag)
{
	static const char who[] = "npurt_runloop_push";
	struct loop_set *s = NULL;

	if (npurt_handle_check(l, NPURT_KIND_RUNLOOP, who))
		return NPURT_ERR_INVALID;
	if (!l || !inputs)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	for (uint32_t i = 0; i < l->m->m.plan.inputs; i++)
		if (!inputs[i])
			return npurt_set_error(NPURT_ERR_INVALID, "%s: input %u is NULL", who, i);
	pthread_mutex_lock(&l->lock);
	l->pushers++;
	while (!l->stopping) {
		for (uint32_t k = 0; k < l->depth && !s; k++)
			if (l->sets[k].state == SET_FREE)
				s = &l->sets[k];
		if (s)
			break;
		pthread_cond_wait(&l->cond, &l->lock);
	}
	if (l->stopping) {
		push_leave(l);
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the loop is stopping", who);
	}
	/* Taken: filled outside the lock, then handed over. */
	s->state = SET_FILLED;
	s->order = UINT64_MAX;
	l->filling++;
	pthread_mutex_unlock(&l->lock);
	for (uint32_t i = 0; i < l->m->m.plan.inputs; i++)
		memcpy(s->ptr[i], inputs[i], l->m->m.tensors[l->m->m.io[i].tensor].bytes);
	pthread_mutex_lock(&l->lock);
	s->tag = tag;
	s->order = l->pushed++;
	l->filling--;
	pthread_cond_broadcast(&l->cond);
	push_leave(l);
	return NPURT_OK;
}

void npurt_runloop_stop(npurt_runloop *l)
{
	/* NULL is a no-op; a loop stopped already is said, and not read. */
	if (!l || npurt_handle_take(l, NPURT_KIND_RUNLOOP, "npurt_runloop_stop"))
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	pthread_cond_broadcast(&l->cond);
	/* Pushes under way (queued, or turned away) leave before the loop goes. */
	while (l->pushers)
		pthread_cond_wait(&l->cond, &l->lock);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->submitter, NULL);
	pthread_join(l->completer, NULL);
	npurt_stream_synchronize(l->stream);
	npurt_stream_destroy(l->stream);
	/* The model is the caller's again, bound as it was, never to the loop's freed buffers. */
	pthread_mutex_lock(&l->m->lock);
	memcpy(l->m->io, l->saved, l->m->nio * sizeof(*l->saved));
	pthread_mutex_unlock(&l->m->lock);
	atomic_store(&l->m->loop, NULL);
	free(l->saved);
	free_sets(l);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
