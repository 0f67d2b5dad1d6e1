/* SPDX-License-Identifier: MIT */
/*
 * The AI cores: a pool of worker threads that split a kernel's units of
 * work between them. Without started workers (unit tests), a launch runs
 * on the caller's thread.
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
	/* the launch */
	const struct drm_npu_kernel_args *args;
	const struct npu_view *in, *out;
	uint64_t units;
	unsigned int parts;
};

void npu_cores_init(struct npu_cores *c);
int npu_cores_start(struct npu_cores *c, unsigned int n);
void npu_cores_stop(struct npu_cores *c);

/* Run the op on up to `parts` cores (0: all) and wait for it. */
void npu_cores_run(struct npu_cores *c, const struct drm_npu_kernel_args *a,
		   const struct npu_view *in, const struct npu_view *out,
		   unsigned int parts);

#endif /* NPU_CORES_H */
