// SPDX-License-Identifier: MIT
/*
 * AI-core worker pool. One launch at a time (the engine starts one only
 * when the pool is idle); every worker wakes per launch and takes its
 * slice, if any. The last worker through tells the engine (on_done).
 */
#include "npu_cores.h"

#include <stdlib.h>
#include <time.h>

struct worker {
	struct npu_cores *c;
	unsigned int id;
	uint64_t seen;		/* the generation it has run */
};

static void run_part(struct npu_cores *c, unsigned int part)
{
	uint64_t begin = c->units * part / c->parts;
	uint64_t end = c->units * (part + 1) / c->parts;

	if (begin < end)
		npu_op_run_cancellable(c->args, c->in, c->out, begin, end, &c->cancel);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct npu_cores *c = w->c;
	uint64_t seen = w->seen;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->stop && c->generation == seen)
			pthread_cond_wait(&c->go, &c->lock);
		if (c->stop)
			break;
		seen = c->generation;
		pthread_mutex_unlock(&c->lock);
		if (w->id < c->parts)
			run_part(c, w->id);
		pthread_mutex_lock(&c->lock);
		if (--c->pending == 0) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			c->finished_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			pthread_cond_broadcast(&c->done);
			/* Without the pool's lock: on_done takes the engine's,
			 * which is held around npu_cores_launch(). */
			if (c->on_done) {
				pthread_mutex_unlock(&c->lock);
				c->on_done(c->opaque);
				pthread_mutex_lock(&c->lock);
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
	free(w);
	return NULL;
}

void npu_cores_init(struct npu_cores *c)
{
	c->n = 0;
	c->threads = NULL;
	c->generation = 0;
	c->pending = 0;
	c->stop = false;
	c->on_done = NULL;
	c->opaque = NULL;
	c->cancel = 0;
	c->finished_ns = 0;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->done, NULL);
}

int npu_cores_start(struct npu_cores *c, unsigned int n)
{
	c->threads = calloc(n, sizeof(*c->threads));
	if (!c->threads)
		return -1;
	c->stop = false;
	for (c->n = 0; c->n < n; c->n++) {
		struct worker *w = malloc(sizeof(*w));

		if (w) {
			w->c = c;
			w->id = c->n;
			/* Not 0: the pool may have run launches before a restart. */
			w->seen = c->generation;
		}
		if (!w || pthread_create(&c->threads[c->n], NULL, worker_main, w)) {
			free(w);
			npu_cores_stop(c);
			return -1;
		}
	}
	return 0;
}

void npu_cores_stop(struct npu_cores *c)
{
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	for (unsigned int i = 0; i < c->n; i++)
		pthread_join(c->threads[i], NULL);
	free(c->threads);
	c->threads = NULL;
	c->n = 0;
	/* Workers may have left a launch unstarted: none is in flight now. */
	c->pending = 0;
}

void npu_cores_launch(struct npu_cores *c, const struct npu_op *a,
		      const struct npu_view *in, const struct npu_view *out,
		      unsigned int parts)
{
	uint64_t units = npu_op_units(a);

	if (!parts || parts > c->n)
		parts = c->n;
	if (parts > units)
		parts = (unsigned int)units;
	pthread_mutex_lock(&c->lock);
	c->args = a;
	c->in = in;
	c->out = out;
	c->units = units;
	c->parts = parts;
	c->cancel = 0;
	c->pending = c->n;
	c->generation++;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
}

void npu_cores_cancel(struct npu_cores *c)
{
	__atomic_store_n(&c->cancel, 1, __ATOMIC_RELAXED);
}

bool npu_cores_idle(struct npu_cores *c, uint64_t *finished_ns)
{
	bool idle;

	pthread_mutex_lock(&c->lock);
	idle = !c->pending;
	if (finished_ns)
		*finished_ns = c->finished_ns;
	pthread_mutex_unlock(&c->lock);
	return idle;
}

