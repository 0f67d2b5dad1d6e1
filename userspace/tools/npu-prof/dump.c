// SPDX-License-Identifier: MIT
/*
 * Reading dumps: index.tsv (npurun's dump.c writes it) and .npy files of
 * format 1.0 to 3.0, little-endian, C order, of the dtypes numpy.save()
 * writes for numbers (f2 f4 f8, i1..i8, u1..u8, b1). Everything else is
 * refused with what it is, never guessed at.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int add(struct dump *d, const struct dump_entry *e)
{
	struct dump_entry *p = realloc(d->e, (d->n + 1) * sizeof(*p));

	if (!p)
		return -1;
	d->e = p;
	d->e[d->n++] = *e;
	return 0;
}

/* Copy field `f` (up to a tab or the end) into dst: the next field, or NULL. */
static char *field(char *f, char *dst, size_t len)
{
	size_t n = f ? strcspn(f, "\t\n") : 0;

	if (!f)
		return NULL;
	snprintf(dst, len, "%.*s", (int)n, f);
	return f[n] == '\t' ? f + n + 1 : NULL;
}

static int read_index(FILE *f, struct dump *d, const char *path, char *err, size_t errlen)
{
	char line[2048], num[32], skip[64];
	unsigned long no = 0;

	while (fgets(line, sizeof(line), f)) {
		struct dump_entry e = { 0 };
		char *p = line;

		no++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		p = field(p, num, sizeof(num));	/* seq: the line's place says it */
		p = field(p, num, sizeof(num));
		e.op = strtol(num, NULL, 10);
		p = field(p, e.role, sizeof(e.role));
		p = field(p, e.op_name, sizeof(e.op_name));
		p = field(p, e.name, sizeof(e.name));
		p = field(p, skip, sizeof(skip));	/* dtype, shape: the file has them */
		p = field(p, skip, sizeof(skip));
		if (!p)
			return fail(err, errlen, "%s:%lu: not a line of a dump's index", path, no);
		field(p, e.file, sizeof(e.file));
		if (!e.file[0] || strchr(e.file, '/'))
			return fail(err, errlen, "%s:%lu: no file, or one outside the dump", path,
				    no);
		if (add(d, &e))
			return fail(err, errlen, "out of memory");
	}
	return ferror(f) ? fail(err, errlen, "%s: %s", path, strerror(errno)) : 0;
}

static int by_file(const void *a, const void *b)
{
	return strcmp(((const struct dump_entry *)a)->file, ((const struct dump_entry *)b)->file);
}

/* A directory of NAME.npy: each an output called NAME, in the order of their names. */
static int read_plain(struct dump *d, char *err, size_t errlen)
{
	DIR *dir = opendir(d->dir);
	struct dirent *de;

	if (!dir)
		return fail(err, errlen, "%s: %s", d->dir, strerror(errno));
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		struct dump_entry e = { .op = -1, .role = "out" };

		if (n <= 4 || n >= sizeof(e.file) || strcmp(de->d_name + n - 4, ".npy"))
			continue;
		memcpy(e.file, de->d_name, n + 1);
		snprintf(e.name, sizeof(e.name), "%.*s", (int)(n - 4), de->d_name);
		if (add(d, &e)) {
			closedir(dir);
			return fail(err, errlen, "out of memory");
		}
	}
	closedir(dir);
	if (!d->n)
		return fail(err, errlen, "%s: no index.tsv and no .npy file", d->dir);
	qsort(d->e, d->n, sizeof(*d->e), by_file);
	return 0;
}

int dump_read(const char *dir, struct dump *d, char *err, size_t errlen)
{
	char path[4200];
	FILE *f;
	int ret;

	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/index.tsv", dir);
	f = fopen(path, "r");
	if (!f && errno != ENOENT)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	if (!f)
		return read_plain(d, err, errlen);
	d->indexed = 1;
	ret = read_index(f, d, path, err, errlen);
	fclose(f);
	if (!ret && !d->n)
		ret = fail(err, errlen, "%s: lists no tensor", path);
	return ret;
}

void dump_free(struct dump *d)
{
	free(d->e);
	d->e = NULL;
	d->n = 0;
}

/* The quoted value after 'key': in the header's dict, into out. */
static int dict_str(const char *h, const char *key, char *out, size_t len)
{
	const char *p = strstr(h, key), *q;

	if (!p || !(p = strchr(p + strlen(key), ':')))
		return -1;
	p += strspn(p + 1, " ") + 1;
	if (*p != '\'' && *p != '"')
		return -1;
	q = strchr(p + 1, *p);
	if (!q || (size_t)(q - p - 1) >= len)
		return -1;
	snprintf(out, len, "%.*s", (int)(q - p - 1), p + 1);
	return 0;
}

static int parse_header(const char *h, struct npy *a, char *type, size_t tlen)
{
	const char *p = strstr(h, "'fortran_order'");
	char *end;

	if (dict_str(h, "'descr'", type, tlen) || !p || !(p = strchr(p, ':')))
		return -1;
	p += strspn(p + 1, " ") + 1;
	if (strncmp(p, "False", 5))
		return -2;	/* Fortran order: not ours to read */
	p = strstr(h, "'shape'");
	if (!p || !(p = strchr(p, '(')))
		return -1;
	a->n = 1;
	for (p++; *(p += strspn(p, " ,")) != ')';) {
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p || a->ndim == 32)
			return -1;
		a->shape[a->ndim++] = v;
		a->n *= v;
		p = end;
	}
	return 0;
}

/* Element i of raw data of `type` ("<f4") as a double. */
static double element(const unsigned char *p, char kind, int size)
{
	union { float f; double d; int8_t i1; int16_t i2; int32_t i4; int64_t i8; uint8_t u1;
		uint16_t u2; uint32_t u4; uint64_t u8; } v;

	memcpy(&v, p, (size_t)size);
	switch (kind) {
	case 'f':
		if (size == 2) {
			int e = (v.u2 >> 10) & 0x1f, m = v.u2 & 0x3ff;
			double x = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) :
				   ldexp(m | 0x400, e - 25);

			return v.u2 & 0x8000 ? -x : x;
		}
		return size == 4 ? v.f : v.d;
	case 'i':
		return size == 1 ? v.i1 : size == 2 ? v.i2 : size == 4 ? v.i4 : (double)v.i8;
	default:	/* 'u', 'b' */
		return size == 1 ? v.u1 : size == 2 ? v.u2 : size == 4 ? v.u4 : (double)v.u8;
	}
}

int npy_read(const char *path, struct npy *a, char *err, size_t errlen)
{
	unsigned char head[12];
	char type[16], *h = NULL;
	unsigned char *raw = NULL;
	unsigned long hlen;
	int size = 0, bad;
	char kind;
	FILE *f;

	memset(a, 0, sizeof(*a));
	f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) || head[6] < 1 ||
	    head[6] > 3)
		goto not_npy;
	hlen = head[8] | (unsigned long)head[9] << 8;
	if (head[6] > 1) {
		if (fread(head + 10, 1, 2, f) != 2)
			goto not_npy;
		hlen |= (unsigned long)head[10] << 16 | (unsigned long)head[11] << 24;
	}
	if (hlen > 1 << 20 || !(h = calloc(1, hlen + 1)) || fread(h, 1, hlen, f) != hlen)
		goto not_npy;
	bad = parse_header(h, a, type, sizeof(type));
	if (bad == -2) {
		fclose(f);
		free(h);
		return fail(err, errlen, "%s: in Fortran order; save it in C order", path);
	}
	kind = type[1];
	if (!bad && strlen(type) == 3 && strchr("<|=", type[0]) && strchr("fiub", kind))
		size = type[2] - '0';
	if (bad || !(size == 1 || size == 2 || size == 4 || size == 8) ||
	    (kind == 'f' && size == 1) || (kind == 'b' && size != 1)) {
		fclose(f);
		free(h);
		return fail(err, errlen, "%s: an array of '%s', not one of little-endian numbers",
			    path, bad ? "?" : type);
	}
	free(h);
	h = NULL;
	a->floating = kind == 'f';
	raw = malloc(a->n * (uint64_t)size + 1);
	a->v = malloc(a->n * sizeof(double) + 1);
	if (!raw || !a->v) {
		fclose(f);
		free(raw);
		npy_free(a);
		return fail(err, errlen, "%s: out of memory for %llu elements", path,
			    (unsigned long long)a->n);
	}
	if (fread(raw, (size_t)size, a->n, f) != a->n) {
		fclose(f);
		free(raw);
		npy_free(a);
		return fail(err, errlen, "%s: shorter than its shape says", path);
	}
	fclose(f);
	for (uint64_t i = 0; i < a->n; i++)
		a->v[i] = element(raw + i * (uint64_t)size, kind, size);
	free(raw);
	return 0;
not_npy:
	fclose(f);
	free(h);
	return fail(err, errlen, "%s: not an .npy file", path);
}

int npy_read_entry(const struct dump *d, const struct dump_entry *e, struct npy *a, char *err,
		   size_t errlen)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", d->dir, e->file);
	return npy_read(path, a, err, errlen);
}

void npy_free(struct npy *a)
{
	free(a->v);
	a->v = NULL;
}
