/* SPDX-License-Identifier: MIT */
/*
 * The AI cores: a pool of worker threads that split a kernel's units of
 * work between them. Without started workers (unit tests), a launch runs
 * on the caller's thread.
 *
 * A launch is asynchronous: npu_cores_launch() hands it to the workers and
 * returns, so the engine goes on with other queues while it computes; the
 * pool calls on_done when the last worker is through. One launch at a
 * time: the engine does not start another until the pool is idle again.
 */
#ifndef NPU_CORES_H
#define NPU_CORES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "npu_ops.h"

struct npu_cores {
	unsigned int n;			/* started workers */
	pthread_t *threads;
	pthread_mutex_t lock;
	pthread_cond_t go, done;
	uint64_t generation;		/* bumped per launch */
	unsigned int pending;		/* workers still busy with it */
	bool stop;
	/*
	 * Called on a worker's thread, with no lock of the pool held, when a
	 * launch finished (ran to the end or stopped on cancel). Set once
	 * before the workers start.
	 */
	void (*on_done)(void *opaque);
	void *opaque;
	/* the launch */
	const struct npu_op *args;
	const struct npu_view *in, *out;
	uint64_t units;
	unsigned int parts;
	uint32_t cancel;		/* atomic: the ops stop at their next check */
	uint64_t finished_ns;		/* when the last worker got through */
};

void npu_cores_init(struct npu_cores *c);
int npu_cores_start(struct npu_cores *c, unsigned int n);
void npu_cores_stop(struct npu_cores *c);

/*
 * Start the op on up to `parts` cores (0: all) and return at once. The
 * pool must have started workers and be idle; the arguments and views
 * must stay valid until it is idle again.
 */
void npu_cores_launch(struct npu_cores *c, const struct npu_op *a,
		      const struct npu_view *in, const struct npu_view *out,
		      unsigned int parts);

/* Ask the launch in flight to stop at its ops' next cancellation point. */
void npu_cores_cancel(struct npu_cores *c);

/*
 * No launch in flight: every worker is through with the last one, since
 * *finished_ns (CLOCK_MONOTONIC; may be NULL).
 */
bool npu_cores_idle(struct npu_cores *c, uint64_t *finished_ns);

#endif /* NPU_CORES_H */
