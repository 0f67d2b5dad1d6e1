/* SPDX-License-Identifier: MIT */
/*
 * The files tests/onnx/make_models.py writes, for the tests that run
 * them: where they are, and reading one whole.
 */
#ifndef NPU_ONNX_FILES_H
#define NPU_ONNX_FILES_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* build/onnx-models, next to this test's build/tests/selftests. */
/* Not inlined: the callers size their paths for any directory. */
static __attribute__((noinline, unused)) const char *models_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("NPU_ONNX_MODELS");
	char exe[PATH_MAX - 32];
	ssize_t n;

	if (env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return ".";
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(dir, sizeof(dir), "%s/../../onnx-models", exe);
	return dir;
}

static __attribute__((unused)) void *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc((size_t)n);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return p;
}

#endif /* NPU_ONNX_FILES_H */
