/* SPDX-License-Identifier: MIT */
/* Internal: a loaded model, shared by model.c (load) and model_run.c (runs). */
#ifndef NPURT_MODEL_H
#define NPURT_MODEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "internal.h"
#include "model_file.h"

/* A kernel launch's argument block in the model's work memory. */
#define MODEL_ARG_SLOT		768	/* sizeof(struct npu_op_args), rounded up */

/* Weights in device memory, possibly shared by several loads of one file. */
struct model_weights {
	npurt_mem *mem;
	bool own;			/* the model allocated it */
	uint32_t refs;			/* models using it: under the device's model lock */
	uint32_t crc;			/* of the bytes, to tell a share is the same */
	uint64_t bytes;
};

/* One model stream's tasks, as sunk (list) and for host dispatch. */
struct model_list {
	uint32_t handle;		/* the kernel's task list; 0 if none */
	uint32_t ntasks, npatches;
	struct drm_npu_task *tasks;	/* placeholders where patches go */
	struct drm_npu_patch *patches;
};

/* An input or output: what it is bound to. */
struct model_io {
	void *ptr;			/* the caller's, NULL until bound */
	uint64_t addr;			/* what the run's I/O table gets */
	bool staged;			/* plain host memory: through `staging` */
	npurt_mem *staging;
};

struct npurt_model {
	npurt_device *dev;
	npurt_model *prev, *next;	/* dev->models, under dev->models_lock */
	pthread_mutex_t lock;		/* everything below */
	struct mf_model m;		/* the checked file, weights included */
	uint32_t flags;			/* NPURT_MODEL_* */
	npurt_dispatch dispatch;
	bool can_sink;			/* task lists: the device has them, HOST_DISPATCH unset */
	bool loaded;			/* device resources held (not evicted) */
	bool busy;			/* a call is using its device resources */
	uint64_t used;			/* dev->model_clock at its last run: LRU */
	uint32_t nio, nkernels;
	struct model_io *io;
	struct model_weights *weights;
	npurt_mem *work, *user_work;	/* feature maps, then argument blocks */
	uint64_t fmap_bytes, work_bytes;
	uint32_t nnotify;
	uint32_t *notify;		/* sync ids: events, then starts, then joins */
	struct model_list lists[NPUM_MAX_STREAMS];
	npurt_stream *streams[NPUM_MAX_STREAMS];	/* the model's own */
	npurt_stream *last;		/* the last run's first stream, referenced */
	uint64_t last_seq;		/* and its batch there */
	uint32_t evicted;
	uint64_t evicted_bytes;
	_Atomic(const struct npurt_runloop *) loop;	/* the run loop serving it, or NULL */
};

/* model_loop.c: the run loop whose submitter this thread is, or NULL. */
extern _Thread_local const struct npurt_runloop *npurt_loop_self;

/*
 * NPURT_ERR_INVALID, said for `who`, when a run loop serves m and this
 * thread is not that loop's: the loop binds and runs it.
 */
static inline npurt_status npurt_model_loop_check(const npurt_model *m, const char *who)
{
	const struct npurt_runloop *l = atomic_load(&m->loop);

	if (!l || l == npurt_loop_self)
		return NPURT_OK;
	return npurt_set_error(NPURT_ERR_INVALID, "%s: a run loop serves this model: push to "
			       "it (npurt_runloop_push()), or stop it first", who);
}

/* model.c: take the device resources back after an eviction; lock held. */
npurt_status npurt_model_reload(npurt_model *m, const char *who);
/*
 * model.c: give back everything the model holds on the device, once its
 * last run completed; lock held. It loads again at its next run.
 */
void npurt_model_release_device(npurt_model *m);
/* model.c: replace the model's streams (after a failure or an abort). */
npurt_status npurt_model_new_streams(npurt_model *m, const char *who);
/* model.c: the device's models go with it (npurt_device_close()). */
void npurt_models_close(npurt_device *dev);
/*
 * capture.c: the device's runtime calls reach this layer from now on
 * (runtime/hooks.h: capture, and the models' unloading at close).
 */
void npurt_model_hooks_install(npurt_device *dev);

/*
 * model_lists.c: the task lists of a model whose device resources are
 * taken (its streams' lists, their argument blocks and I/O patches), and
 * sinking them to the device (the TASKLIST objects its runs submit).
 */
npurt_status npurt_model_build_lists(npurt_model *m, const char *who);
npurt_status npurt_model_sink_lists(npurt_model *m, const char *who);
/* What the profiler calls list task `t`: a launch's op (read from its block), else NULL. */
const char *npurt_model_task_name(const npurt_model *m, const struct drm_npu_task *t);
/* Where tensor t is on the device for a run of I/O table `io`. */
uint64_t npurt_model_tensor_va(const npurt_model *m, uint32_t t, const uint64_t *io);
/* The index of stream s's first op in its list (the tasks before: the starts). */
uint32_t npurt_model_list_lead(const npurt_model *m, uint32_t s);

/* model_dump.c: what a dump run copies out, and where to. */
struct model_dump;
/*
 * Stream s's tasks `t` (its list's, patched for `io`) with the dump's
 * copies around its ops: a new array in *out (free() it), *n updated.
 */
npurt_status npurt_dump_tasks(const struct model_dump *d, const npurt_model *m, uint32_t s,
			      const struct drm_npu_task *t, const uint64_t *io,
			      struct drm_npu_task **out, uint32_t *n, const char *who);
/*
 * model_run.c: npurt_model_execute() (its checks done), the tasks issued
 * from the host with dump d's copies among them if d.
 */
npurt_status npurt_model_run_dump(npurt_model *m, int32_t timeout_ms, const struct model_dump *d,
				  const char *who);

#endif /* NPURT_MODEL_H */
