// SPDX-License-Identifier: MIT
/*
 * AI-core worker pool. One launch at a time (the engine runs one task at
 * a time); every worker wakes per launch and takes its slice, if any.
 */
#include "npu_cores.h"

#include <stdlib.h>

struct worker {
	struct npu_cores *c;
	unsigned int id;
};

static void run_part(struct npu_cores *c, unsigned int part)
{
	uint64_t begin = c->units * part / c->parts;
	uint64_t end = c->units * (part + 1) / c->parts;

	if (begin < end)
		npu_op_run(c->args, c->in, c->out, begin, end);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct npu_cores *c = w->c;
	uint64_t seen = 0;

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
		if (--c->pending == 0)
			pthread_cond_signal(&c->done);
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
}

void npu_cores_run(struct npu_cores *c, const struct drm_npu_kernel_args *a,
		   const struct npu_view *in, const struct npu_view *out,
		   unsigned int parts)
{
	uint64_t units = npu_op_units(a);

	if (!c->n) {
		npu_op_run(a, in, out, 0, units);
		return;
	}
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
	c->pending = c->n;
	c->generation++;
	pthread_cond_broadcast(&c->go);
	while (c->pending)
		pthread_cond_wait(&c->done, &c->lock);
	pthread_mutex_unlock(&c->lock);
}
