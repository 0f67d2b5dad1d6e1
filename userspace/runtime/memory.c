// SPDX-License-Identifier: MIT
/*
 * Device memory: blocks of the device's caching allocator (mem_cache.c),
 * buffer objects of their own (uncached, shareable, imported) and pinned
 * host memory. This file ties the cache to the driver: its segments are
 * buffer objects mapped for the CPU, and what it knows of streams'
 * progress is the streams' completion state, read without waiting.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"
#include "mem_cache.h"
#include "memory.h"
#include "profile.h"

#define POLICY_FLAGS	(NPURT_MEM_HUGE_FIRST | NPURT_MEM_HUGE_ONLY | NPURT_MEM_NORMAL_ONLY)
#define MEM_FLAGS	(POLICY_FLAGS | NPURT_MEM_NO_CACHE | NPURT_MEM_SHAREABLE)
/* The first npurt_mem_usage: callers built against it pass at least this. */
#define USAGE_V1_SIZE	sizeof(npurt_mem_usage)

struct mr_table npurt_mem_maps = MR_TABLE_INIT;

/* Which step of a buffer's creation failed, for the caller's message. */
static _Thread_local const char *bo_step;
static _Thread_local uint64_t bo_step_size;

void npurt_gem_close(npurt_device *dev, uint32_t handle)
{
	struct drm_gem_close args = { .handle = handle };

	npurt_ioctl(dev, DRM_IOCTL_GEM_CLOSE, &args);
}

int npurt_bo_map(npurt_device *dev, struct bo *bo)
{
	struct drm_npu_bo_info info = { .handle = bo->handle };
	int err = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_INFO, &info);

	if (err)
		return err;
	bo->map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		       (off_t)info.mmap_offset);
	if (bo->map == MAP_FAILED)
		return errno;
	bo->size = info.size;
	bo->page_size = info.page_size;
	bo->device_va = info.device_va;
	return 0;
}

static int bo_create(npurt_device *dev, uint64_t size, uint32_t policy, struct bo *bo)
{
	struct drm_npu_bo_create create = { .size = size, .page_policy = policy };
	int err = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_CREATE, &create);

	bo_step_size = size;
	if (err) {
		bo_step = "BO_CREATE";
		return err;
	}
	bo->handle = create.handle;
	err = npurt_bo_map(dev, bo);
	if (err) {
		bo_step = "mapping";
		npurt_gem_close(dev, create.handle);
	}
	return err;
}

int npurt_bo_ref_get(npurt_device *dev, uint32_t handle)
{
	struct npurt_bo_ref *r;

	pthread_mutex_lock(&dev->bo_lock);
	for (r = dev->bos; r && r->handle != handle; r = r->next)
		;
	if (r) {
		r->refs++;
	} else if ((r = calloc(1, sizeof(*r)))) {
		r->handle = handle;
		r->refs = 1;
		r->next = dev->bos;
		dev->bos = r;
	}
	pthread_mutex_unlock(&dev->bo_lock);
	return r ? 0 : ENOMEM;
}

void npurt_bo_ref_put(npurt_device *dev, uint32_t handle)
{
	struct npurt_bo_ref **at, *r;
	bool last = false;

	pthread_mutex_lock(&dev->bo_lock);
	for (at = &dev->bos; *at && (*at)->handle != handle; at = &(*at)->next)
		;
	r = *at;
	if (r && !--r->refs) {
		*at = r->next;
		free(r);
		last = true;
	}
	pthread_mutex_unlock(&dev->bo_lock);
	if (last)
		npurt_gem_close(dev, handle);
}

/* ---- the cache's callbacks ----------------------------------------- */

static int seg_alloc(void *ctx, uint64_t size, unsigned int policy, bool dedicated,
		     struct mc_seg *seg)
{
	struct bo bo;
	int err = bo_create(ctx, size, policy, &bo);

	/* A dedicated one may be exported, and imported back into this file. */
	if (!err && dedicated && npurt_bo_ref_get(ctx, bo.handle)) {
		munmap(bo.map, bo.size);
		npurt_gem_close(ctx, bo.handle);
		bo_step = NULL;
		err = ENOMEM;
	}
	if (!err) {
		struct mr_range r = { .start = (uintptr_t)bo.map, .size = bo.size,
				      .addr = bo.device_va, .owner = ctx };

		err = mr_insert(&npurt_mem_maps, &r);
		if (err) {
			munmap(bo.map, bo.size);
			if (dedicated)
				npurt_bo_ref_put(ctx, bo.handle);
			else
				npurt_gem_close(ctx, bo.handle);
			bo_step = NULL;
			err = ENOMEM;
		}
	}
	if (err)
		return err;
	seg->addr = bo.device_va;
	seg->host = bo.map;
	seg->size = bo.size;
	seg->page_size = bo.page_size;
	seg->handle = bo.handle;
	return 0;
}

static void seg_free(void *ctx, const struct mc_seg *seg)
{
	mr_remove(&npurt_mem_maps, (uintptr_t)seg->host, ctx);
	munmap(seg->host, seg->size);
	if (seg->dedicated)
		npurt_bo_ref_put(ctx, seg->handle);
	else
		npurt_gem_close(ctx, seg->handle);
}

/*
 * Under dev->lock: the batch of the stream's last operation, which may be
 * one it still gathers (stream.c) and will submit as the next.
 */
static uint64_t stream_last(const npurt_stream *s)
{
	return s->issued + (s->gathering ? 1 : 0);
}

static uint64_t stream_issued(void *ctx, void *stream)
{
	npurt_stream *s = stream;
	uint64_t seq;

	(void)ctx;
	pthread_mutex_lock(&s->dev->lock);
	seq = stream_last(s);
	pthread_mutex_unlock(&s->dev->lock);
	return seq;
}

static bool stream_reached(void *ctx, void *stream, uint64_t seq, bool poll)
{
	npurt_stream *s = stream;
	bool reached;

	(void)ctx;
	if (poll)
		return npurt_path_poll(s, seq);
	pthread_mutex_lock(&s->dev->lock);
	/* Destroying a stream waits for its work; a failed one's stays put. */
	reached = s->done >= seq || s->destroyed;
	pthread_mutex_unlock(&s->dev->lock);
	return reached;
}

static void stream_hold(void *ctx, void *stream, bool take)
{
	npurt_stream *s = stream;

	(void)ctx;
	if (take)
		atomic_fetch_add(&s->refs, 1);
	else
		npurt_stream_put(s);
}

static size_t streams_busy(void *ctx, struct mc_wait *w, size_t max)
{
	npurt_device *dev = ctx;
	size_t n = 0;

	pthread_mutex_lock(&dev->lock);
	for (npurt_stream *s = dev->streams; s; s = s->next) {
		if (s->done >= stream_last(s))
			continue;
		if (n < max) {
			w[n].stream = s;
			w[n].seq = stream_last(s);
			atomic_fetch_add(&s->refs, 1);
		}
		n++;
	}
	pthread_mutex_unlock(&dev->lock);
	return n;
}

static const struct mc_ops cache_ops = {
	.seg_alloc = seg_alloc,
	.seg_free = seg_free,
	.issued = stream_issued,
	.reached = stream_reached,
	.hold = stream_hold,
	.busy = streams_busy,
};

npurt_status npurt_memory_open(npurt_device *dev, const char *who)
{
	pthread_mutex_init(&dev->bo_lock, NULL);
	mr_init(&dev->ranges);
	mr_init(&dev->vas);
	dev->cache = mc_create(&cache_ops, dev);
	if (!dev->cache) {
		mr_destroy(&dev->vas);
		mr_destroy(&dev->ranges);
		pthread_mutex_destroy(&dev->bo_lock);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	return NPURT_OK;
}

static void mem_release(npurt_mem *m, npurt_stream *s);

void npurt_memory_close(npurt_device *dev)
{
	struct npurt_bo_ref *r, *next;

	/*
	 * What the caller did not free goes as npurt_mem_free() would take it;
	 * the streams are gone, so nothing waits. Every npurt_mem has a range.
	 */
	for (;;) {
		npurt_mem *m = NULL;

		pthread_rwlock_rdlock(&dev->ranges.lock);
		if (dev->ranges.n)
			m = (npurt_mem *)dev->ranges.v[0].owner;
		pthread_rwlock_unlock(&dev->ranges.lock);
		if (!m)
			break;
		mem_release(m, NULL);
	}
	mc_destroy(dev->cache);
	/* Closing the device file closes what the caller did not free. */
	for (r = dev->bos; r; r = next) {
		next = r->next;
		free(r);
	}
	mr_destroy(&dev->ranges);
	mr_destroy(&dev->vas);
	/* Imports the caller did not free: their mappings name a dead device. */
	mr_remove_owner(&npurt_mem_maps, dev);
	pthread_mutex_destroy(&dev->bo_lock);
}

/* ---- pointers ------------------------------------------------------ */

/* The allocation's host and device ranges join the device's tables: 0 or ENOMEM. */
int npurt_mem_range_add(npurt_mem *m)
{
	struct mr_range r = { .start = (uintptr_t)m->host, .size = m->size,
			      .addr = m->device_addr, .owner = m,
			      .kind = m->kind == MEM_HOST ? NPURT_HOST_MEM : NPURT_DEVICE_MEM };
	struct mr_range v = { .start = m->device_addr, .size = m->size, .addr = r.start,
			      .owner = m, .kind = r.kind };

	/* The driver refuses overlapping registrations; mappings are apart. */
	if (mr_insert(&m->dev->ranges, &r))
		return ENOMEM;
	/* A buffer imported twice has one device range: each import an entry of it. */
	if (mr_insert_shared(&m->dev->vas, &v)) {
		mr_remove(&m->dev->ranges, (uintptr_t)m->host, m);
		return ENOMEM;
	}
	/* And the caller may use it: every npurt_mem has a range. */
	if (npurt_handle_add(m, NPURT_KIND_MEM, m->dev, "npurt_mem")) {
		mr_remove(&m->dev->vas, m->device_addr, m);
		mr_remove(&m->dev->ranges, (uintptr_t)m->host, m);
		return ENOMEM;
	}
	return 0;
}

int npurt_mem_va_find(npurt_device *dev, uint64_t va, uint64_t len, struct mr_range *out)
{
	struct mr_range v;
	enum mr_hit hit = mr_find(&dev->vas, va, len, &v);

	if (hit == MR_NONE || va < v.start)
		return ENOENT;
	*out = v;
	out->start = v.addr;
	out->addr = v.start;
	return hit == MR_INSIDE ? 0 : ERANGE;
}

npurt_status npurt_mem_where(npurt_device *dev, const void *p, size_t len, enum npurt_place *place,
			     uint64_t *addr, const char *who, const char *what)
{
	uintptr_t at = (uintptr_t)p;
	struct mr_range r;

	switch (mr_find(&dev->ranges, at, len, &r)) {
	case MR_INSIDE:
		*place = (enum npurt_place)r.kind;
		*addr = r.addr + (at - r.start);
		return NPURT_OK;
	case MR_STRADDLE:
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: %s [%p, +%zu bytes) is not within one allocation: "
				       "it meets %s [%p, +%llu bytes) and runs past its %s",
				       who, what, p, len,
				       r.kind == NPURT_HOST_MEM ? "host memory" : "device memory",
				       (void *)(uintptr_t)r.start, (unsigned long long)r.size,
				       at < r.start ? "start" : "end");
	case MR_NONE:
		break;
	}
	if (mr_find(&npurt_mem_maps, at, len, &r) != MR_NONE)
		return npurt_set_error(NPURT_ERR_INVALID,
				       r.owner == dev ?
				       "%s: %s %p (%zu bytes) is device memory of %s that no live "
				       "allocation holds (freed?)" :
				       "%s: %s %p (%zu bytes) is device memory of another device "
				       "handle than %s", who, what, p, len, dev->node);
	*place = NPURT_PAGEABLE;
	*addr = 0;
	return NPURT_OK;
}

/* ---- allocation ---------------------------------------------------- */

static npurt_status alloc_failed(npurt_device *dev, const char *who, size_t size,
				 uint32_t policy, int err)
{
	const char *hint = err == ENOMEM && policy == DRM_NPU_BO_PAGE_HUGE_ONLY ?
			   " (no room for 2 MiB pages)" : "";

	if (!bo_step)
		return npurt_set_error(npurt_status_from_errno(err), "%s(%zu bytes): %s", who, size,
				       err == ENOMEM ? "out of memory" : strerror(err));
	return npurt_set_error(npurt_status_from_errno(err), "%s(%zu bytes): %s: %s of %llu bytes: %s%s",
			       who, size, dev->node, bo_step, (unsigned long long)bo_step_size,
			       strerror(err), hint);
}

static npurt_status mem_alloc(npurt_device *dev, npurt_stream *s, size_t size, uint32_t flags,
			      npurt_mem **out, const char *who)
{
	uint32_t pol = flags & POLICY_FLAGS, policy = DRM_NPU_BO_PAGE_HUGE_FIRST;
	npurt_mem *m;
	int err;

	if (!size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: size is 0", who);
	if (flags & ~MEM_FLAGS)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%zu bytes): unknown flags %#x", who, size,
				       flags & ~MEM_FLAGS);
	if (pol & (pol - 1))
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s(%zu bytes): flags %#x name more than one page policy",
				       who, size, flags);
	if (pol == NPURT_MEM_HUGE_ONLY)
		policy = DRM_NPU_BO_PAGE_HUGE_ONLY;
	else if (pol == NPURT_MEM_NORMAL_ONLY)
		policy = DRM_NPU_BO_PAGE_NORMAL_ONLY;
	m = calloc(1, sizeof(*m));
	if (!m)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	m->dev = dev;
	bo_step = NULL;
	err = mc_alloc(dev->cache, size, policy,
		       flags & (NPURT_MEM_NO_CACHE | NPURT_MEM_SHAREABLE) ? MC_BYPASS : 0, s, &m->block);
	if (!err) {
		m->kind = MEM_BLOCK;
		m->device_addr = m->block->addr;
		m->host = m->block->host;
		m->size = m->block->size;
		m->page_size = m->block->page_size;
		err = npurt_mem_range_add(m);
		if (err) {
			mc_free(dev->cache, m->block, NULL);
			bo_step = NULL;
		}
	}
	if (err) {
		free(m);
		return alloc_failed(dev, who, size, policy, err);
	}
	*out = m;
	return NPURT_OK;
}

npurt_status npurt_mem_alloc_flags(npurt_device *dev, size_t size, uint32_t flags, npurt_mem **out)
{
	static const char who[] = "npurt_mem_alloc_flags";

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	return mem_alloc(dev, NULL, size, flags, out, who);
}

npurt_status npurt_mem_alloc(npurt_device *dev, size_t size, npurt_mem **out)
{
	static const char who[] = "npurt_mem_alloc";

	int64_t t0;
	npurt_status st;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	t0 = npurt_prof_now(dev);
	st = mem_alloc(dev, NULL, size, 0, out, who);
	npurt_prof_span(dev, who, t0);
	return st;
}

npurt_status npurt_mem_alloc_async(npurt_stream *s, size_t size, uint32_t flags, npurt_mem **out)
{
	static const char who[] = "npurt_mem_alloc_async";

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!s || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "stream-ordered allocation is the host's");
	return mem_alloc(s->dev, s, size, flags, out, who);
}

static void mem_drop(void *arg)
{
	npurt_mem *m = arg;

	if (m->kind == MEM_BO) {
		mr_remove(&npurt_mem_maps, (uintptr_t)m->map, m->dev);
		npurt_bo_ref_put(m->dev, m->handle);
	} else
		npurt_gem_close(m->dev, m->handle);
	if (m->map)
		munmap(m->map, m->map_size);
	free(m);
}

/* Wait for the work the stream was given so far. */
static void wait_stream(npurt_stream *s)
{
	uint64_t seq;

	pthread_mutex_lock(&s->dev->lock);
	seq = stream_last(s);
	pthread_mutex_unlock(&s->dev->lock);
	/* A failure is the stream's to report, not the free's. */
	npurt_stream_wait(s, seq, "npurt_mem_free");
}

/* Wait for the work every stream of the device was given so far. */
static void wait_issued(npurt_device *dev)
{
	npurt_stream **all;
	size_t n;

	/* The caller gets the memory back after this: no early return. */
	while (!(all = npurt_streams_get(dev, &n)))
		usleep(1000);
	for (size_t i = 0; i < n; i++)
		wait_stream(all[i]);
	npurt_streams_put(all, n);
}

/*
 * The driver holds a buffer for the tasks that name it, but a kernel
 * launch's tensors are in its argument block, which the driver never
 * reads: memory goes back only once the work that may use it completed.
 * Registered host memory is the caller's again when the free returns, so
 * that one waits; the others are released by a later call.
 */
static void mem_release(npurt_mem *m, npurt_stream *s)
{
	npurt_handle_drop(m);
	mr_remove(&m->dev->ranges, (uintptr_t)m->host, m);
	mr_remove(&m->dev->vas, m->device_addr, m);
	switch (m->kind) {
	case MEM_BLOCK:
		mc_free(m->dev->cache, m->block, s);
		free(m);
		break;
	case MEM_HOST:
		if (!m->map) {
			if (s)
				wait_stream(s);
			else
				wait_issued(m->dev);
			mem_drop(m);
			break;
		}
		/* fall through */
	case MEM_BO:
		mc_defer(m->dev->cache, mem_drop, m, s);
		break;
	}
}

npurt_status npurt_mem_release(npurt_mem *m)
{
	npurt_status st;

	if (!m)
		return NPURT_OK;
	st = npurt_handle_take(m, NPURT_KIND_MEM, "npurt_mem_release");
	if (!st)
		mem_release(m, NULL);
	return st;
}

void npurt_mem_free(npurt_mem *m)
{
	/* The status is npurt_mem_release()'s; the message says it here too. */
	if (m && npurt_handle_take(m, NPURT_KIND_MEM, "npurt_mem_free") == NPURT_OK)
		mem_release(m, NULL);
}

npurt_status npurt_mem_free_async(npurt_mem *m, npurt_stream *s)
{
	static const char who[] = "npurt_mem_free_async";
	npurt_status st = npurt_handle_check(s, NPURT_KIND_STREAM, who);

	if (st)
		return st;
	if (!m)
		return NPURT_OK;
	st = npurt_handle_check(m, NPURT_KIND_MEM, who);
	if (st)
		return st;
	if (s->dev != m->dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: memory and stream are of different devices",
				       who);
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "stream-ordered allocation is the host's");
	st = npurt_handle_take(m, NPURT_KIND_MEM, who);
	if (!st)
		mem_release(m, s);
	return st;
}

/* m, if it is a live npurt_mem, else NULL (and, but for NULL, the reason in the error message). */
static const npurt_mem *live(const npurt_mem *m, const char *who)
{
	return !m || npurt_handle_check(m, NPURT_KIND_MEM, who) ? NULL : m;
}

void *npurt_mem_host_ptr(const npurt_mem *m)
{
	return (m = live(m, "npurt_mem_host_ptr")) ? m->host : NULL;
}

uint64_t npurt_mem_device_addr(const npurt_mem *m)
{
	return (m = live(m, "npurt_mem_device_addr")) ? m->device_addr : 0;
}

size_t npurt_mem_size(const npurt_mem *m)
{
	return (m = live(m, "npurt_mem_size")) ? m->size : 0;
}

size_t npurt_mem_page_size(const npurt_mem *m)
{
	return (m = live(m, "npurt_mem_page_size")) ? m->page_size : 0;
}

npurt_status npurt_mem_trim(npurt_device *dev, size_t keep_bytes)
{
	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_mem_trim"))
		return NPURT_ERR_INVALID;
	if (!dev)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_mem_trim: NULL device");
	mc_trim(dev->cache, keep_bytes);
	return NPURT_OK;
}

npurt_status npurt_mem_set_release_threshold(npurt_device *dev, size_t bytes)
{
	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_mem_set_release_threshold"))
		return NPURT_ERR_INVALID;
	if (!dev)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_mem_set_release_threshold: NULL device");
	mc_set_threshold(dev->cache, bytes);
	return NPURT_OK;
}

npurt_status npurt_mem_get_usage(npurt_device *dev, npurt_mem_usage *usage)
{
	static const char who[] = "npurt_mem_get_usage";
	struct drm_npu_mem_usage u = { 0 };
	npurt_mem_usage out = { 0 };
	struct mc_stats st;
	int err;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !usage)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (usage->size < USAGE_V1_SIZE)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: usage->size is %zu: set it to sizeof(npurt_mem_usage)",
				       who, usage->size);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_GET_MEM_USAGE, &u);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: GET_MEM_USAGE: %s",
				       who, dev->node, strerror(err));
	mc_get_stats(dev->cache, &st);
	out.size = usage->size;
	out.device_hbm = u.dev_current[DRM_NPU_MEM_REGION_HBM];
	out.device_hbm_peak = u.dev_peak[DRM_NPU_MEM_REGION_HBM];
	out.device_host = u.dev_current[DRM_NPU_MEM_REGION_HOST];
	out.device_host_peak = u.dev_peak[DRM_NPU_MEM_REGION_HOST];
	out.context_hbm = u.ctx_current[DRM_NPU_MEM_REGION_HBM];
	out.context_hbm_peak = u.ctx_peak[DRM_NPU_MEM_REGION_HBM];
	out.context_host = u.ctx_current[DRM_NPU_MEM_REGION_HOST];
	out.context_host_peak = u.ctx_peak[DRM_NPU_MEM_REGION_HOST];
	out.cache_reserved = st.reserved;
	out.cache_reserved_peak = st.reserved_peak;
	out.cache_in_use = st.in_use;
	out.cache_in_use_peak = st.in_use_peak;
	out.cache_idle = st.idle;
	out.cache_segment_allocs = st.seg_allocs;
	out.cache_segment_frees = st.seg_frees;
	/* A newer caller's fields beyond these are left as they are. */
	memcpy(usage, &out, sizeof(out));
	return NPURT_OK;
}
