/* SPDX-License-Identifier: MIT */
/*
 * Internal: a model in memory, as a file holds it (model_format.h), and
 * what reads, checks, writes and plans one. No device here: the loader
 * (model.c) takes a checked model to the device, and the fuzzer and the
 * host unit tests drive this part alone.
 */
#ifndef NPURT_MODEL_FILE_H
#define NPURT_MODEL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model_format.h"

struct mf_model {
	struct npum_plan plan;
	char *strings;			/* NUL-terminated names, [0] = "" */
	size_t strings_len;
	struct npum_tensor *tensors;
	uint32_t ntensors;
	struct npum_io *io;		/* plan.inputs, then plan.outputs */
	struct npum_stream *streams;	/* plan.streams */
	struct npum_op *ops;
	uint32_t nops;
	uint8_t *weights;		/* plan.weights_bytes */
};

/*
 * Parse `len` bytes of a model file into *m (which owns copies of
 * everything), checking everything: format, checksums, every reference,
 * the ops' shapes, the streams' order (no cycles) and the memory plan
 * (tensors live at once never share bytes). On failure returns an errno
 * (EINVAL for a bad file, ENOMEM), leaves *m empty and says why in
 * `why`.
 */
int mf_parse(const void *data, size_t len, struct mf_model *m, char *why, size_t why_len);

/* Check a model built in memory the same way (the builder's last word). */
int mf_check(const struct mf_model *m, char *why, size_t why_len);

/* The file for *m, in a malloc'ed buffer. */
int mf_serialize(const struct mf_model *m, void **data, size_t *len);

void mf_free(struct mf_model *m);

/* Bytes of one element. */
unsigned int mf_dtype_size(uint32_t dtype);

/* A tensor's extent in bytes, from element 0 to its last; 0 on overflow. */
uint64_t mf_extent(const struct npum_tensor *t);

/* Is it dense row-major (strides from its shape)? */
bool mf_dense(const struct npum_tensor *t);

/* The tensor whose memory t is (itself unless a view). */
static inline const struct npum_tensor *mf_base(const struct mf_model *m,
						 const struct npum_tensor *t)
{
	return t->segment == NPUM_SEG_VIEW ? &m->tensors[t->base] : t;
}

/*
 * Check op `op` against its tensors (kinds, dtypes, shapes, what it may
 * write); 0 or EINVAL with a reason. The builder asks before it adds one.
 */
int mf_op_check(const struct mf_model *m, const struct npum_op *op, char *why, size_t why_len);

struct npu_op;
/* A window op's npu_op_window (its group and flags included) into a. */
void mf_window_args(const struct npum_op *op, struct npu_op *a);

/* TRANSPOSE's perm[k], k < NPUM_MAX_DIMS (perm, then perm_hi). */
unsigned int mf_perm(const struct npum_op *op, unsigned int k);

struct npu_tensor;
/* A tensor's dtype, rank, shape and strides, as a launch gives them (its address 0). */
void mf_tensor_args(const struct npum_tensor *t, struct npu_tensor *o);

/*
 * A kernel op as its launch will be, device addresses aside (0):
 * what the op library's rule checks and model_lists.c encodes. The op's
 * tensor indices must be in range.
 */
void mf_kernel_args(const struct mf_model *m, const struct npum_op *op, struct npu_op *a);

/* plan.c: the streams' order and the feature-map plan. */
struct mf_order;
/*
 * Order the ops: every op's view of each stream (how many of its ops
 * happen before it), through stream order and events. EINVAL if the
 * events make a cycle (the streams would wait for each other for ever).
 */
int mf_order_make(const struct mf_model *m, struct mf_order **out, char *why, size_t why_len);
void mf_order_free(struct mf_order *o);
/* The ops in an order that respects streams and events (nops of them). */
const uint32_t *mf_order_topo(const struct mf_order *o);
/* EINVAL if two feature maps share bytes while both may be live. */
int mf_plan_verify(const struct mf_model *m, const struct mf_order *o, char *why,
		   size_t why_len);
/* Place the feature maps; sets plan.fmap_bytes, fmap_sum and fmap_peak. */
int mf_plan_make(struct mf_model *m, const struct mf_order *o);

uint32_t mf_crc32(const void *data, size_t len);

/* The reason into why (len bytes, may be 0): returns EINVAL, for `return mf_fail(...)`. */
int mf_fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* NPURT_MODEL_FILE_H */
