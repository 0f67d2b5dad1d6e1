/* SPDX-License-Identifier: MIT */
/*
 * Internal: the caching allocator's block logic, apart from the device.
 *
 * The cache carves blocks out of segments that callbacks get from and give
 * back to the kernel, and tells when a freed block may be used again from
 * what callbacks say of streams' progress. Nothing here makes a system
 * call, so tests/unit/npurt_cache_test.c runs it on the host with fakes.
 */
#ifndef NPURT_MEM_CACHE_H
#define NPURT_MEM_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Requests below this are small: 512-byte classes carved from 2 MiB segments. */
#define MC_SMALL_MAX		(1ull << 20)
#define MC_SMALL_ALIGN		512ull
#define MC_LARGE_ALIGN		4096ull
#define MC_SEGMENT		(2ull << 20)
#define MC_POLICIES		3	/* the driver's page policies, 0..2 */
#define MC_THRESHOLD_DEFAULT	(64ull << 20)

/* A segment as the callbacks got it. */
struct mc_seg {
	uint64_t addr;		/* device address */
	void *host;		/* CPU mapping */
	uint64_t size;		/* what the kernel gave, at least what was asked */
	uint32_t page_size;
	uint32_t handle;	/* the callbacks' own */
	bool dedicated;		/* one block's alone (MC_BYPASS) */
};

/* A stream position a freed block waits for. */
struct mc_wait {
	void *stream;
	uint64_t seq;
	bool done;
};

struct mc_ops {
	/* A new segment of at least `size` bytes: 0, or an errno (ENOMEM makes
	 * the cache trim itself and try once more). `dedicated`: for one
	 * block, never cached. */
	int (*seg_alloc)(void *ctx, uint64_t size, unsigned int policy, bool dedicated,
			 struct mc_seg *seg);
	void (*seg_free)(void *ctx, const struct mc_seg *seg);
	/* The stream's last issued sequence number. */
	uint64_t (*issued)(void *ctx, void *stream);
	/* Has the stream completed everything up to seq? Never blocks; with
	 * `poll` it may ask the kernel instead of trusting what it knows. */
	bool (*reached)(void *ctx, void *stream, uint64_t seq, bool poll);
	/* Keep a stream's record alive while a wait names it (take) or not. */
	void (*hold)(void *ctx, void *stream, bool take);
	/* Streams with work in flight, and their last issued sequence number,
	 * each held: fills at most `max`, returns how many there are. */
	size_t (*busy)(void *ctx, struct mc_wait *w, size_t max);
};

/* A block handed out: read-only outside mem_cache.c. */
struct mc_block {
	uint64_t addr;
	void *host;
	uint64_t size;
	uint32_t page_size;
	/* The cache's own. */
	int state;
	struct mc_segment *seg;
	struct mc_block *prev, *next;	/* neighbours in the segment */
	struct mc_block *lprev, *lnext;	/* in a free or pending list */
	struct mc_fence *fence;		/* pending: what it waits for */
};

struct mc_stats {
	uint64_t reserved, reserved_peak;	/* bytes of segments held */
	uint64_t in_use, in_use_peak;		/* bytes of blocks not free */
	uint64_t idle;				/* bytes of wholly free segments */
	uint64_t seg_allocs, seg_frees;		/* calls to the callbacks */
};

struct mc_cache;

struct mc_cache *mc_create(const struct mc_ops *ops, void *ctx);
/* Give every segment back; blocks still handed out die with it. */
void mc_destroy(struct mc_cache *c);

/* Bypass the cache: a segment of the block's own, given back when it is freed. */
#define MC_BYPASS	(1u << 0)

/*
 * A block of at least `size` bytes (> 0) with the page policy (< MC_POLICIES).
 * `stream` (or NULL): the stream that will use it, which may take blocks
 * it freed itself before its own work completed. 0 or an errno.
 */
int mc_alloc(struct mc_cache *c, uint64_t size, unsigned int policy, unsigned int flags,
	     void *stream, struct mc_block **out);

/* The segment a block is carved from. */
const struct mc_seg *mc_block_segment(const struct mc_block *b);

/*
 * Give a block back. With a stream: reusable at once by that stream, by
 * everyone once the stream's work issued so far completed. Without: once
 * every stream's work issued so far completed.
 */
void mc_free(struct mc_cache *c, struct mc_block *b, void *stream);

/*
 * Call release(arg) once the work issued so far completed: on `stream`
 * alone, or on every stream when NULL (at once if none is busy). Runs
 * under the cache's lock, from a later call of the cache or mc_destroy().
 */
void mc_defer(struct mc_cache *c, void (*release)(void *arg), void *arg, void *stream);

/* Give wholly free segments back until at most `keep` bytes of them stay. */
void mc_trim(struct mc_cache *c, uint64_t keep);

/* Wholly free segments beyond `bytes` go back as soon as they are free. */
void mc_set_threshold(struct mc_cache *c, uint64_t bytes);

void mc_get_stats(struct mc_cache *c, struct mc_stats *st);

/* The size a request gets. */
uint64_t mc_round(uint64_t size);

#endif /* NPURT_MEM_CACHE_H */
