/* SPDX-License-Identifier: MIT */
/*
 * Dumps read back (npurun --dump, --dump-ref; Documentation/profiling.rst):
 * a directory of .npy files with index.tsv, or of NAME.npy files alone
 * (another runtime's tensors, saved with numpy.save()), for npu-prof
 * --compare and --check-nan.
 */
#ifndef NPU_PROF_DUMP_H
#define NPU_PROF_DUMP_H

#include <stddef.h>
#include <stdint.h>

/* One tensor of a dump: a line of index.tsv, or a file NAME.npy. */
struct dump_entry {
	long op;			/* -1 when the dump has no index */
	char role[8];			/* "out", "in0", "in1" */
	char op_name[64];
	char name[256];
	char file[256];
};

struct dump {
	char dir[4096];
	struct dump_entry *e;		/* in the dump's order */
	size_t n;
	int indexed;			/* read from index.tsv */
};

/* An .npy file's array, every element as a double. */
struct npy {
	uint32_t ndim;
	uint64_t shape[32];
	uint64_t n;			/* elements */
	double *v;
	int floating;
};

/* Read dump `dir`: 0, or -1 with the reason in err. */
int dump_read(const char *dir, struct dump *d, char *err, size_t errlen);
void dump_free(struct dump *d);
/* Read entry e of d: 0, or -1 with the reason in err. */
int npy_read_entry(const struct dump *d, const struct dump_entry *e, struct npy *a, char *err,
		   size_t errlen);
int npy_read(const char *path, struct npy *a, char *err, size_t errlen);
void npy_free(struct npy *a);

/*
 * compare.c, npu-prof's exit status: --compare DIR REF (0 every tensor of
 * DIR that REF has matches, 1 the first that does not named, 2 unreadable)
 * and --check-nan DIR (0 none, 1 the first op whose output has one named).
 */
int dump_compare(const char *dir, const char *ref, double atol, double rtol);
int dump_check_nan(const char *dir);

#endif /* NPU_PROF_DUMP_H */
