/* SPDX-License-Identifier: MIT */
/* npurun's host reference (reference.c). */
#ifndef NPURUN_REFERENCE_H
#define NPURUN_REFERENCE_H

#include <stddef.h>

/*
 * Compute the model in `file` on the host: io[i] is input or output i
 * (inputs read, outputs written). 0, or an errno with the reason.
 */
int ref_run(const void *file, size_t len, void *const *io, char *why, size_t why_len);

#endif /* NPURUN_REFERENCE_H */
