// SPDX-License-Identifier: MIT
/*
 * npurun's dumps: each tensor an .npy file (format 1.0: numpy.load() and
 * npu-prof read it), named NNNNN_NAME[.inK].npy after its op's index and
 * its name (its op's, for a tensor without one); index.tsv lists them in the dump's order. bf16, which numpy
 * has no type for, is written as the f32 it widens to exactly.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dump.h"

static const char *const descr[NPURT_DTYPE_COUNT] = {
	[NPURT_F32] = "<f4", [NPURT_F16] = "<f2", [NPURT_BF16] = "<f4", [NPURT_F64] = "<f8",
	[NPURT_I8] = "|i1", [NPURT_U8] = "|u1", [NPURT_I16] = "<i2", [NPURT_U16] = "<u2",
	[NPURT_I32] = "<i4", [NPURT_U32] = "<u4", [NPURT_I64] = "<i8", [NPURT_U64] = "<u8",
	[NPURT_BOOL] = "|b1",
};

static const char *const dtype_name[NPURT_DTYPE_COUNT] = {
	[NPURT_F32] = "f32", [NPURT_F16] = "f16", [NPURT_BF16] = "bf16", [NPURT_F64] = "f64",
	[NPURT_I8] = "i8", [NPURT_U8] = "u8", [NPURT_I16] = "i16", [NPURT_U16] = "u16",
	[NPURT_I32] = "i32", [NPURT_U32] = "u32", [NPURT_I64] = "i64", [NPURT_U64] = "u64",
	[NPURT_BOOL] = "bool",
};

static const char *const role_name[] = { "out", "in0", "in1" };

static void failed(struct dump_dir *d, const char *fmt, const char *arg)
{
	if (d->err)
		return;
	d->err = errno ? errno : EIO;
	snprintf(d->what, sizeof(d->what), fmt, arg);
}

int dump_open(struct dump_dir *d, const char *path)
{
	char file[4096];

	memset(d, 0, sizeof(*d));
	d->path = path;
	if (mkdir(path, 0777) && errno != EEXIST) {
		fprintf(stderr, "npurun: dump directory %s: %s\n", path, strerror(errno));
		return 1;
	}
	snprintf(file, sizeof(file), "%s/index.tsv", path);
	d->index = fopen(file, "w");
	if (!d->index) {
		fprintf(stderr, "npurun: %s: %s\n", file, strerror(errno));
		return 1;
	}
	fprintf(d->index, "# seq\top\trole\top_name\tname\tdtype\tshape\tfile\n");
	return 0;
}

/* The .npy header of t: magic, version 1.0, its length, the dict padded to 64 bytes. */
static int npy_header(FILE *f, const npurt_dump_tensor *t)
{
	char dict[512], shape[256] = "";
	size_t n = 0, len;
	uint16_t hlen;

	for (uint32_t k = 0; k < t->ndim; k++)
		n += (size_t)snprintf(shape + n, sizeof(shape) - n, "%llu,%s",
				      (unsigned long long)t->shape[k],
				      k + 1 < t->ndim ? " " : "");
	if (t->ndim > 1)
		shape[n - 1] = '\0';	/* (2, 3), but (5,) */
	len = (size_t)snprintf(dict, sizeof(dict),
			       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
			       descr[t->dtype], shape);
	while ((10 + len + 1) % 64)
		dict[len++] = ' ';
	dict[len++] = '\n';
	hlen = (uint16_t)len;
	return fwrite("\x93NUMPY\x01\x00", 1, 8, f) != 8 || fputc(hlen & 0xff, f) == EOF ||
	       fputc(hlen >> 8, f) == EOF || fwrite(dict, 1, len, f) != len;
}

static int npy_data(FILE *f, const npurt_dump_tensor *t)
{
	const uint16_t *h = t->data;
	uint64_t n = t->bytes / 2;

	if (t->dtype != NPURT_BF16)
		return fwrite(t->data, 1, t->bytes, f) != t->bytes;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)h[i] << 16;

		if (fwrite(&u, 4, 1, f) != 1)
			return 1;
	}
	return 0;
}

npurt_status dump_tensor(const npurt_dump_tensor *t, void *user)
{
	struct dump_dir *d = user;
	char name[96], file[160], path[4096];
	size_t k = 0;
	bool bad;
	FILE *f;

	if ((unsigned int)t->dtype >= NPURT_DTYPE_COUNT || t->role > NPURT_DUMP_INPUT1) {
		errno = EINVAL;
		failed(d, "a tensor of dtype or role %s unknown to npurun", "");
		return NPURT_ERR_INVALID;
	}
	/* A file name of the tensor's, whatever characters it has. */
	for (const char *p = t->name; *p && k < 80; p++)
		name[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ? *p : '_';
	name[k] = '\0';
	/* An unnamed tensor (the graph builder's): the op's name says more than nothing. */
	snprintf(file, sizeof(file), "%05u_%s%s%s.npy", t->op, k ? name : t->op_name,
		 t->role ? "." : "", t->role ? role_name[t->role] : "");
	snprintf(path, sizeof(path), "%s/%s", d->path, file);
	f = fopen(path, "wb");
	bad = !f || npy_header(f, t) || npy_data(f, t);
	if ((f && fclose(f)) || bad) {
		failed(d, "%s", path);
		return NPURT_ERR_INVALID;
	}
	fprintf(d->index, "%u\t%u\t%s\t%s\t", t->seq, t->op, role_name[t->role], t->op_name);
	for (const char *p = t->name; *p; p++)	/* a field of its own whatever it holds */
		fputc(*p == '\t' || *p == '\n' ? ' ' : *p, d->index);
	fprintf(d->index, "\t%s\t", dtype_name[t->dtype]);
	for (uint32_t j = 0; j < t->ndim; j++)
		fprintf(d->index, "%s%llu", j ? "x" : "", (unsigned long long)t->shape[j]);
	fprintf(d->index, "\t%s\n", file);
	return NPURT_OK;
}

int dump_close(struct dump_dir *d)
{
	if (d->index && fclose(d->index))
		failed(d, "%s/index.tsv", d->path);
	d->index = NULL;
	if (d->err)
		fprintf(stderr, "npurun: dump: %s: %s\n", d->what, strerror(d->err));
	return d->err != 0;
}
