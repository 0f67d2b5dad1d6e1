/* SPDX-License-Identifier: MIT */
/*
 * Internal: the graph builder's state (graph.c), for what builds graphs
 * beside npurt.h's calls: stream capture (capture.c).
 */
#ifndef NPURT_GRAPH_H
#define NPURT_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model_file.h"
#include "npurt.h"

/* The last accesses to a tensor's memory, per stream: positions + 1. */
struct access {
	uint32_t write[NPUM_MAX_STREAMS];	/* 0: none */
	uint32_t read[NPUM_MAX_STREAMS];
};

struct npurt_graph {
	struct mf_model m;		/* tensors and weights grow here */
	size_t tensor_cap, acc_cap, produced_cap, io_cap, strings_cap, weights_cap;
	struct npum_op *ops[NPUM_MAX_STREAMS];	/* per stream */
	uint32_t nops[NPUM_MAX_STREAMS], ops_cap[NPUM_MAX_STREAMS];
	uint32_t clock[NPUM_MAX_STREAMS][NPUM_MAX_STREAMS];	/* [s][t]: t's ops s waited for */
	struct access *acc;		/* per tensor (bases only) */
	bool *produced;			/* bases: written by an op, or an input or constant */
	npurt_status broken;		/* an allocation failed: every call says so */
};

/*
 * Fuse a bias (NPUM_NONE: none) and activation `act` (0: none; alpha,
 * beta) into the epilogue of the op that wrote tensor `out` (a base): true
 * if that is the last op of its stream, a kernel whose epilogue takes
 * them and has no activation (nor a bias, to add one) yet, and no other
 * op touched `out`. false: nothing changed.
 */
NPURT_PRIVATE_API bool npurt_graph_fuse(npurt_graph *g, uint32_t out, uint32_t bias, uint32_t act,
					 float alpha, float beta);

/* An allocation failed: the graph takes no more (NPURT_ERR_NO_MEMORY). */
npurt_status graph_nomem(npurt_graph *g, const char *who);
/* *p holds at least `need` of `elem` bytes, zeroed past the old *cap. */
bool graph_grow(void **p, size_t *cap, size_t need, size_t elem);
/* A name into the strings: its offset, or NPUM_NONE when out of memory. */
uint32_t graph_string_add(npurt_graph *g, const char *s);
/* A new dense tensor in `segment`; NPUM_NONE with the error set. */
uint32_t graph_tensor_new(npurt_graph *g, const char *name, uint32_t dtype, uint32_t ndim,
			  const uint64_t *shape, uint8_t segment, const char *who);
/* Make stream s wait, if it has not already, for op `pos1` - 1 of stream t. */
npurt_status graph_order_after(npurt_graph *g, uint32_t s, uint32_t t, uint32_t pos1,
			       const char *who);
/*
 * Add `op` on stream s, checked as a loader checks it, after the waits it
 * needs; `reads_out`: it also reads its output (GEMM with beta).
 */
npurt_status graph_op_add(npurt_graph *g, uint32_t s, struct npum_op *op, bool reads_out,
			  const char *who);
/*
 * Pack the constant B of each f32 GEMM of *m into panels (graph_pack.c).
 * When it packs any, m's tensors, I/O and weights become new arrays, the
 * caller's to free (the old ones are not freed). 0 or ENOMEM (m as it was).
 */
int graph_pack_weights(struct mf_model *m);
/* Write `size` bytes to a new file at `path` (none left on failure). */
npurt_status graph_write_file(const char *path, const void *data, size_t size, const char *who);

#endif /* NPURT_GRAPH_H */
