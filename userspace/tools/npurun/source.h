/* SPDX-License-Identifier: MIT */
/* npurun's model bytes: a model file, or an ONNX model imported (and cached). */
#ifndef NPURUN_SOURCE_H
#define NPURUN_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "npuonnx.h"

struct source {
	void *data;		/* the model file's bytes (free()) */
	size_t len;
	bool from_cache;	/* an ONNX model's import found in the cache */
};

/* 0, or 1 with the reason on stderr; pins: an ONNX model's pinned dimensions. */
int source_read(const char *path, const npurt_onnx_options *pins, struct source *s, bool quiet);
/* The whole file, malloc'd; NULL with errno set when it cannot be read. */
void *source_slurp(const char *path, size_t *len);

#endif /* NPURUN_SOURCE_H */
