/* SPDX-License-Identifier: MIT */
/*
 * A session's state (onnx_session.c: create, runs; onnx_plans.c: the
 * plan cache). Locking: session->lock is held across a run, the stats
 * and the cache.
 */
#ifndef NPU_ONNX_SESSION_H
#define NPU_ONNX_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "npuonnx.h"
#include "onnx_stages.h"

#define SESSION_MAX_IO		64
#define SESSION_PLANS		8
#define SESSION_BYTES		(512ull << 20)
/* Past a name: "=", dimensions up to 2^40 joined by x, the NUL. */
#define SESSION_PIN_LEN		(NPURT_MAX_DIMS * 15 + 2)
/* Values of inputs pinned by value (TopK's k) in a plan's key, at most. */
#define SESSION_KEY_VALUES	16

struct session_io {
	char *name;
	npurt_dtype dtype;
	uint32_t ndim;
	uint64_t dims[NPURT_MAX_DIMS];	/* 0: symbolic */
	bool shaped;			/* the file declares a shape */
};

/* One lowering: a stage of the model (or all of it) at one set of input shapes. */
struct plan {
	/* the stage, each input's rank and dimensions, values pinned by value */
	uint64_t key[1 + SESSION_KEY_VALUES + SESSION_MAX_IO * (NPURT_MAX_DIMS + 1)];
	uint32_t key_len;
	uint64_t hash;
	npurt_model *model;
	uint64_t bytes;			/* the model's device memory */
	uint64_t last_use;
	uint32_t n_out;
	uint32_t in_index[SESSION_MAX_IO];	/* the model's io index of each input, or ~0 */
	npurt_value out[SESSION_MAX_IO];	/* shapes, and host memory bound */
};

/* A value of a run, by name: an input, a stage's output, a host node's. */
struct pooled {
	const char *name;
	npurt_value v;
};

/* A host node's output, kept from run to run. */
struct host_buf {
	void *data;
	size_t cap;
};

struct npurt_onnx_session {
	pthread_mutex_t lock;
	npurt_device *dev;
	void *data;
	size_t size;
	npurt_onnx_options opts;	/* the caller's pins, no shapes */
	char **dim_params, **values;
	struct session_io in[SESSION_MAX_IO], out[SESSION_MAX_IO];
	uint32_t n_in, n_out;
	uint32_t max_plans;
	uint64_t max_bytes;
	int32_t timeout_ms;
	struct plan **plans;
	uint32_t nplans;
	uint64_t clock;
	uint64_t run_start;		/* plans used since are this run's: kept */
	npurt_onnx_session_stats stats;
	struct ox_stages *stages;	/* NULL: the model is one stage, `whole` */
	struct ox_stage whole;
	struct host_buf *host;		/* per stage */
	struct pooled *pool;
	uint32_t npool, pool_cap;
};

static inline uint32_t n_stages(const npurt_onnx_session *s)
{
	return s->stages ? s->stages->n : 1;
}

static inline struct ox_stage *stage_at(npurt_onnx_session *s, uint32_t j)
{
	return s->stages ? &s->stages->st[j] : &s->whole;
}

/*
 * Stage j's plan for the values in[] (NULL: an input opts pin by value):
 * from the cache, or lowered and loaded. key is scratch for its key.
 */
npurt_status ox_plan_get(npurt_onnx_session *s, uint32_t j, const npurt_value *const *in,
			 struct plan *key, struct plan **p);
void ox_plan_free(struct plan *p);

#endif
