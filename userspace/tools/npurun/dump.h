/* SPDX-License-Identifier: MIT */
/*
 * npurun --dump and --dump-ref: a directory of .npy files, one a tensor,
 * and index.tsv saying which op's which tensor each is, in the order of
 * the dump (Documentation/profiling.rst, "Dump and compare").
 */
#ifndef NPURUN_DUMP_H
#define NPURUN_DUMP_H

#include <stdio.h>

#include "npurt.h"

struct dump_dir {
	const char *path;
	FILE *index;
	int err;		/* the first failure's errno */
	char what[4400];	/* and what it was writing */
};

/* Make (or reuse) directory `path` and start its index: 0, or 1 with the reason on stderr. */
int dump_open(struct dump_dir *d, const char *path);
/* An npurt_dump_fn: tensor t into d's directory (user: the dump_dir). */
npurt_status dump_tensor(const npurt_dump_tensor *t, void *user);
/* Finish the index: 0, or 1 with the reason (the first failure) on stderr. */
int dump_close(struct dump_dir *d);

#endif /* NPURUN_DUMP_H */
