/* SPDX-License-Identifier: MIT */
/* npurun's host reference (reference.c). */
#ifndef NPURUN_REFERENCE_H
#define NPURUN_REFERENCE_H

#include <stddef.h>

#include "npurt.h"

/* --dump-ref: the ops' tensors, as npurt_model_dump() hands the device's over. */
struct ref_dump {
	const char *ops;		/* npurt_model_dump()'s patterns; NULL all */
	uint32_t flags;			/* NPURT_DUMP_INPUTS */
	npurt_dump_fn fn;
	void *user;
};

/*
 * Compute the model in `file` on the host: io[i] is input or output i
 * (inputs read, outputs written); dump, if not NULL, gets the tensors of
 * the ops it picks. 0, or an errno with the reason.
 */
int ref_run(const void *file, size_t len, void *const *io, const struct ref_dump *dump,
	    char *why, size_t why_len);

#endif /* NPURUN_REFERENCE_H */
