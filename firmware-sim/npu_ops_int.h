/* SPDX-License-Identifier: MIT */
/*
 * Internal to the op library (npu_ops.c, npu_window.c): cancellation
 * points, and the window ops' entry.
 *
 * Elementwise loops look every CHECK_EVERY elements and long inner loops
 * every CHECK_EVERY_INNER iterations, so the flag's load (a cache hit
 * until someone writes it) costs nothing measurable and a cancelled op
 * stops within well under a millisecond of work per core.
 */
#ifndef NPU_OPS_INT_H
#define NPU_OPS_INT_H

#include "npu_ops.h"

#define CHECK_EVERY		4096
#define CHECK_EVERY_INNER	65536

static inline int npu_cancelled(const uint32_t *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED);
}

/* At iteration j of a long loop: time to look, and cancelled? */
#define STOP_AT(j, cancel) \
	(!((j) & (CHECK_EVERY_INNER - 1)) && npu_cancelled(cancel))

/* CONV2D, MAXPOOL2D, AVGPOOL2D over output planes [begin, end) (npu_window.c). */
int npu_window_run(const struct npu_op_args *a, const struct npu_view *in,
		   const struct npu_view *out, uint64_t begin, uint64_t end,
		   const uint32_t *cancel);

#endif /* NPU_OPS_INT_H */
