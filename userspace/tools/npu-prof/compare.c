// SPDX-License-Identifier: MIT
/*
 * npu-prof --compare and --check-nan: a dump's tensors in the dump's
 * order, which respects the ops' dependencies, so the first tensor that
 * is wrong belongs to the op that went wrong: what comes after it only
 * carries the error on.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dump.h"

/* npurun's file-name form of a tensor name (npurun/dump.c). */
static void file_form(const char *in, char *out, size_t len)
{
	size_t k = 0;

	for (; *in && k + 1 < len; in++)
		out[k++] = (*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z') ||
			   (*in >= '0' && *in <= '9') || *in == '-' || *in == '.' ? *in : '_';
	out[k] = '\0';
}

/*
 * REF's tensor for e: the same role of the tensor of the same name (of
 * the same op, for tensors without one); in a dump without an index, the
 * file of its name.
 */
static const struct dump_entry *find(const struct dump *ref, const struct dump_entry *e)
{
	char form[256];

	file_form(e->name, form, sizeof(form));
	for (size_t i = 0; i < ref->n; i++) {
		const struct dump_entry *r = &ref->e[i];

		if (strcmp(r->role, e->role))
			continue;
		if (ref->indexed ? (e->name[0] ? !strcmp(r->name, e->name) : r->op == e->op) :
		    !strcmp(r->name, e->name) || !strcmp(r->name, form))
			return r;
	}
	return NULL;
}

/* "op 3 (tanh), its output "t3" [16x64]", the name left out when there is none */
static void describe(const struct dump_entry *e, const struct npy *a, char *buf, size_t len)
{
	size_t n;

	if (e->op >= 0)
		n = (size_t)snprintf(buf, len, "op %ld (%s), its %s %s%s%s[", e->op, e->op_name,
				     !strcmp(e->role, "out") ? "output" :
				     !strcmp(e->role, "in0") ? "input 0" : "input 1",
				     e->name[0] ? "\"" : "", e->name, e->name[0] ? "\" " : "");
	else
		n = (size_t)snprintf(buf, len, "\"%s\" [", e->name);
	for (uint32_t k = 0; k < a->ndim && n < len; k++)
		n += (size_t)snprintf(buf + n, len - n, "%s%llu", k ? "x" : "",
				      (unsigned long long)a->shape[k]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

static int same(double x, double y, double atol, double rtol)
{
	if (isnan(x) || isnan(y))
		return isnan(x) && isnan(y);
	if (isinf(x) || isinf(y))
		return x == y;
	return fabs(x - y) <= atol + rtol * fabs(y);
}

/* a against b: 0 the same within tolerance, else 1 with what differs printed. */
static int differ(const struct dump_entry *e, const struct npy *a, const struct npy *b,
		  double atol, double rtol, double *worst, const char *ref)
{
	uint64_t bad = 0, at = 0;
	double big = -1;
	char what[512];

	describe(e, a, what, sizeof(what));
	if (a->n != b->n) {
		printf("first difference: %s: %llu elements, %llu in %s\n", what,
		       (unsigned long long)a->n, (unsigned long long)b->n, ref);
		return 1;
	}
	for (uint64_t i = 0; i < a->n; i++) {
		double d = fabs(a->v[i] - b->v[i]);

		if (same(a->v[i], b->v[i], atol, rtol)) {
			if (d == d && d != INFINITY && d > *worst)
				*worst = d;
			continue;
		}
		if (d != d)
			d = INFINITY;
		if (!bad++ || d > big) {
			big = d;
			at = i;
		}
	}
	if (!bad)
		return 0;
	printf("first difference: %s: %llu of %llu elements differ beyond %g + %g x |ref|; the "
	       "largest at element %llu: %.9g here, %.9g in %s\n", what, (unsigned long long)bad,
	       (unsigned long long)a->n, atol, rtol, (unsigned long long)at, a->v[at], b->v[at],
	       ref);
	return 1;
}

int dump_compare(const char *dir, const char *ref, double atol, double rtol)
{
	struct dump d, r;
	size_t compared = 0, missing = 0;
	double worst = 0;
	char err[4600];
	int rc = 0;

	if (dump_read(dir, &d, err, sizeof(err)) || (dump_read(ref, &r, err, sizeof(err)) &&
						     (dump_free(&d), 1))) {
		fprintf(stderr, "npu-prof: %s\n", err);
		return 2;
	}
	for (size_t i = 0; i < d.n && !rc; i++) {
		const struct dump_entry *x = find(&r, &d.e[i]);
		struct npy a, b;

		if (!x) {
			missing++;
			continue;
		}
		if (npy_read_entry(&d, &d.e[i], &a, err, sizeof(err)) ||
		    (npy_read_entry(&r, x, &b, err, sizeof(err)) && (npy_free(&a), 1))) {
			fprintf(stderr, "npu-prof: %s\n", err);
			rc = 2;
			break;
		}
		rc = differ(&d.e[i], &a, &b, atol, rtol, &worst, ref);
		npy_free(&a);
		npy_free(&b);
		if (rc && compared == 1)
			printf("  the tensor before it matches\n");
		else if (rc)
			printf("  the %zu tensors before it match\n", compared);
		else
			compared++;
	}
	if (!rc && !compared) {
		fprintf(stderr, "npu-prof: no tensor of %s is in %s\n", dir, ref);
		rc = 2;
	} else if (!rc) {
		printf("all %zu tensors match %s (largest difference %.3g)", compared, ref, worst);
		if (missing)
			printf("; %zu not in it", missing);
		printf("\n");
	}
	dump_free(&d);
	dump_free(&r);
	return rc;
}

int dump_check_nan(const char *dir)
{
	struct dump d;
	size_t outputs = 0;
	char err[4600];
	int rc = 0;

	if (dump_read(dir, &d, err, sizeof(err))) {
		fprintf(stderr, "npu-prof: %s\n", err);
		return 2;
	}
	for (size_t i = 0; i < d.n && !rc; i++) {
		uint64_t nan = 0, inf = 0, first = 0;
		char what[512];
		struct npy a;

		if (strcmp(d.e[i].role, "out"))
			continue;
		if (npy_read_entry(&d, &d.e[i], &a, err, sizeof(err))) {
			fprintf(stderr, "npu-prof: %s\n", err);
			rc = 2;
			break;
		}
		outputs++;
		for (uint64_t k = 0; k < a.n; k++) {
			if (!isnan(a.v[k]) && !isinf(a.v[k]))
				continue;
			if (!nan && !inf)
				first = k;
			nan += isnan(a.v[k]) != 0;
			inf += isinf(a.v[k]) != 0;
		}
		if (nan || inf) {
			describe(&d.e[i], &a, what, sizeof(what));
			printf("first NaN or Inf: %s: %llu NaN and %llu Inf of %llu elements, the "
			       "first at element %llu\n  the %zu output%s before it %s none\n", what,
			       (unsigned long long)nan, (unsigned long long)inf,
			       (unsigned long long)a.n, (unsigned long long)first, outputs - 1,
			       outputs == 2 ? "" : "s", outputs == 2 ? "has" : "have");
			rc = 1;
		}
		npy_free(&a);
	}
	if (!rc)
		printf("no NaN or Inf in the %zu outputs of %s\n", outputs, dir);
	dump_free(&d);
	return rc;
}
