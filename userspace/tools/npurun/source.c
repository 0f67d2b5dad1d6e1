// SPDX-License-Identifier: MIT
/*
 * npurun's model: a model file read as it is, or an ONNX model (.onnx)
 * imported with npurt_onnx_import() and kept in a cache, so the next run
 * of the same file loads at once. The cache is keyed by the ONNX file's
 * bytes, the library's version and this program's own bytes (it links the
 * importer); a cache that cannot be written (a read-only home) only costs
 * the import next time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npuonnx.h"
#include "source.h"

void *source_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 20, n = 0, got;
	uint8_t *p = f ? malloc(cap) : NULL;
	int err = f ? ENOMEM : errno;

	errno = 0;
	while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *q = realloc(p, cap *= 2);

			if (!q)
				free(p);
			p = q;
		}
	}
	/* A directory opens, and fails its first read: say why, as for any read. */
	if (p && ferror(f)) {
		err = errno ? errno : EIO;
		free(p);
		p = NULL;
	}
	if (f)
		fclose(f);
	*len = n;
	if (!p)
		errno = err;
	return p;
}

static uint64_t fnv1a(const void *data, size_t len, uint64_t h)
{
	const uint8_t *p = data;

	for (size_t k = 0; k < len; k++)
		h = (h ^ p[k]) * 0x100000001b3ull;
	return h;
}

/* $NPU_CACHE_DIR, else $XDG_CACHE_HOME/npu, else ~/.cache/npu. */
static int cache_dir(char *dir, size_t len)
{
	const char *env = getenv("NPU_CACHE_DIR"), *home = getenv("HOME");
	const char *xdg = getenv("XDG_CACHE_HOME");

	if (env && env[0])
		return snprintf(dir, len, "%s", env) >= (int)len ? -1 : 0;
	if (xdg && xdg[0])
		return snprintf(dir, len, "%s/npu", xdg) >= (int)len ? -1 : 0;
	if (home && home[0])
		return snprintf(dir, len, "%s/.cache/npu", home) >= (int)len ? -1 : 0;
	return -1;
}

static void cache_store(const char *dir, const char *path, const void *data, size_t len)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	if (mkdir(dir, 0755) && errno != EEXIST) {
		char parent[4096];
		char *slash;

		snprintf(parent, sizeof(parent), "%s", dir);
		slash = strrchr(parent, '/');
		if (!slash)
			return;
		*slash = 0;
		if (mkdir(parent, 0755) && errno != EEXIST)
			return;
		if (mkdir(dir, 0755) && errno != EEXIST)
			return;
	}
	{
		/* a fresh file of ours: no symlink followed in a shared cache */
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

		f = fd < 0 ? NULL : fdopen(fd, "wb");
		if (!f) {
			if (fd >= 0)
				close(fd);
			return;
		}
	}
	if (fwrite(data, 1, len, f) != len || fclose(f)) {
		unlink(tmp);
		return;
	}
	/* rename: a reader sees the whole file or none */
	if (rename(tmp, path))
		unlink(tmp);
}

int source_read(const char *path, const npurt_onnx_options *pins, struct source *s, bool quiet)
{
	size_t n = strlen(path), len;
	npurt_onnx_info oi = { .size = sizeof(oi) };
	npurt_model_info mi = { .size = sizeof(mi) };
	uint32_t major, minor, patch;
	char dir[4000], cached[4200];
	npurt_graph *g;
	void *onnx;
	uint64_t h;

	memset(s, 0, sizeof(*s));
	if (n < 5 || strcmp(path + n - 5, ".onnx")) {
		if (pins->n_shapes || pins->n_dim_params || pins->n_values) {
			fprintf(stderr, "npurun: %s: --shape, --dim-param and --value pin an ONNX "
				"model's inputs; a model file's are fixed\n", path);
			return 1;
		}
		s->data = source_slurp(path, &s->len);
		if (!s->data || !s->len) {
			fprintf(stderr, "npurun: %s: %s\n", path,
				s->data ? "empty: no model in it" : strerror(errno));
			free(s->data);
			return 1;
		}
		return 0;
	}
	onnx = source_slurp(path, &len);
	if (!onnx) {
		fprintf(stderr, "npurun: %s: %s\n", path, strerror(errno));
		return 1;
	}
	npurt_runtime_version(&major, &minor, &patch);
	h = fnv1a(onnx, len, 0xcbf29ce484222325ull);
	h = fnv1a(&major, sizeof(major), h);
	h = fnv1a(&minor, sizeof(minor), h);
	h = fnv1a(&patch, sizeof(patch), h);
	/* and the pins: the same file imports into another model per shape */
	for (uint32_t k = 0; k < pins->n_shapes; k++)
		h = fnv1a(pins->shapes[k], strlen(pins->shapes[k]) + 1, fnv1a("S", 1, h));
	for (uint32_t k = 0; k < pins->n_dim_params; k++)
		h = fnv1a(pins->dim_params[k], strlen(pins->dim_params[k]) + 1, fnv1a("D", 1, h));
	for (uint32_t k = 0; k < pins->n_values; k++)
		h = fnv1a(pins->values[k], strlen(pins->values[k]) + 1, fnv1a("V", 1, h));
	{
		/*
		 * And this program (the importer is linked in): a rebuilt
		 * importer of the same version makes its own entries.
		 */
		size_t elen;
		void *exe = source_slurp("/proc/self/exe", &elen);

		if (exe)
			h = fnv1a(exe, elen, h);
		free(exe);
	}
	if (!cache_dir(dir, sizeof(dir))) {
		snprintf(cached, sizeof(cached), "%s/%016llx.npu", dir, (unsigned long long)h);
		s->data = source_slurp(cached, &s->len);
		if (s->data && s->len && !npurt_model_query(s->data, s->len, &mi)) {
			s->from_cache = true;
			free(onnx);
			return 0;
		}
		free(s->data);
		s->data = NULL;
	} else {
		cached[0] = 0;
	}
	if (npurt_onnx_import(onnx, len, pins, &g, &oi)) {
		fprintf(stderr, "npurun: %s: %s\n", path, npurt_last_error());
		free(onnx);
		return 1;
	}
	free(onnx);
	if (npurt_graph_serialize(g, &s->data, &s->len, NULL)) {
		fprintf(stderr, "npurun: %s: %s\n", path, npurt_last_error());
		npurt_graph_destroy(g);
		return 1;
	}
	npurt_graph_destroy(g);
	if (!quiet)
		printf("%s: imported: opset %u, %u nodes, %u device ops\n", path, oi.opset,
		       oi.nodes, oi.device_ops);
	if (cached[0])
		cache_store(dir, cached, s->data, s->len);
	return 0;
}
