/* SPDX-License-Identifier: MIT */
/*
 * Internal: which allocation a host address range falls in (or a device
 * address range: the same table keyed by device address).
 *
 * Copies and fills take host pointers (npurt_mem_host_ptr() of device
 * memory, pinned or registered host memory, or plain pageable memory) and
 * need the device address behind them. A table holds the live ranges,
 * sorted by start address and never overlapping, so a lookup is a binary
 * search under a read lock. Nothing here makes a system call:
 * tests/unit/npurt_ranges_test.c runs it on the host.
 */
#ifndef NPURT_MEM_RANGES_H
#define NPURT_MEM_RANGES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* 64 bits whatever the host's pointers: a device table holds device addresses. */
struct mr_range {
	uint64_t start;		/* host address (a device table's: device address) */
	uint64_t size;		/* > 0 */
	uint64_t addr;		/* the device address of start (a device table's: host) */
	const void *owner;	/* the caller's: an npurt_mem, a device */
	int kind;		/* the caller's */
};

struct mr_table {
	pthread_rwlock_t lock;
	struct mr_range *v;
	size_t n, cap;
};

#define MR_TABLE_INIT	{ .lock = PTHREAD_RWLOCK_INITIALIZER }

/* What a lookup of [p, p + len) found. */
enum mr_hit {
	MR_NONE,	/* no range meets it */
	MR_INSIDE,	/* it lies in *out */
	MR_STRADDLE,	/* it meets *out but does not lie in it */
};

void mr_init(struct mr_table *t);
void mr_destroy(struct mr_table *t);

/* 0, ENOMEM, EEXIST (it overlaps a range held) or EINVAL (size 0, wraps). */
int mr_insert(struct mr_table *t, const struct mr_range *r);

/* Remove the range starting at `start` that `owner` inserted: 0 or ENOENT. */
int mr_remove(struct mr_table *t, uint64_t start, const void *owner);

/*
 * Insert r, which may be the very range (start and size) of entries
 * already held, as a device maps one buffer imported twice at one
 * address: each import has its entry and its own host address, and
 * mr_remove() takes out the one of its owner. Any other overlap:
 * EEXIST. Otherwise as mr_insert().
 */
int mr_insert_shared(struct mr_table *t, const struct mr_range *r);

/* Remove every range of `owner`. */
void mr_remove_owner(struct mr_table *t, const void *owner);

/*
 * The range [p, p + len) (len > 0; a range wrapping around the address
 * space straddles whatever it meets) is in: *out is the range it meets
 * (the lowest, when it meets several), written unless MR_NONE.
 */
enum mr_hit mr_find(struct mr_table *t, uint64_t p, uint64_t len, struct mr_range *out);

#endif /* NPURT_MEM_RANGES_H */
