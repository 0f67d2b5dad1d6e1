// SPDX-License-Identifier: MIT
/*
 * Pinned host memory (allocated or registered: USERPTR buffers) and
 * buffers shared between processes (PRIME export and import); the rest of
 * device memory is memory.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>

#include "error.h"
#include "handle.h"
#include "mem_cache.h"
#include "memory.h"

/* ---- pinned host memory -------------------------------------------- */

/* Milliseconds a registration waits for the driver to retire an old one. */
#define REGISTER_TRIES	1000

static npurt_status host_register(npurt_device *dev, void *ptr, size_t size, uint32_t flags,
				  npurt_mem *m, const char *who)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), p = (uintptr_t)ptr;
	uintptr_t start = p & ~(pg - 1), end = (p + size + pg - 1) & ~(pg - 1);
	struct drm_npu_userptr u = { .addr = start, .size = end - start };
	struct rlimit lim;
	int err;

	if (p + size < p || end < p)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%p, %zu bytes): the range wraps around",
				       who, ptr, size);
	if (flags & NPURT_HOST_READ_ONLY)
		u.flags = DRM_NPU_USERPTR_READ_ONLY;
	for (int tries = 0;; tries++) {
		struct timespec ms = { .tv_nsec = 1000000 };
		struct mr_range r;

		err = npurt_ioctl(dev, DRM_IOCTL_NPU_USERPTR, &u);
		/*
		 * The driver lets go of a registration when the last work using
		 * it is retired, a little after the host saw that work complete:
		 * pages freed and mapped again at once may still be its. Only
		 * a live registration of ours is a real overlap.
		 */
		if (err != EEXIST || tries == REGISTER_TRIES ||
		    mr_find(&dev->ranges, start, end - start, &r) != MR_NONE)
			break;
		nanosleep(&ms, NULL);
	}
	switch (err) {
	case 0:
		break;
	case ENOMEM:
		if (getrlimit(RLIMIT_MEMLOCK, &lim) || lim.rlim_cur == RLIM_INFINITY)
			return npurt_set_error(NPURT_ERR_NO_MEMORY,
					       "%s(%p, %zu bytes): %s: USERPTR: %s (no device address space left)",
					       who, ptr, size, dev->node, strerror(err));
		return npurt_set_error(NPURT_ERR_NO_MEMORY,
				       "%s(%p, %zu bytes): %s: USERPTR: %s: pinning %llu bytes would exceed "
				       "RLIMIT_MEMLOCK (%llu bytes, ulimit -l), or no device address space is left",
				       who, ptr, size, dev->node, strerror(err),
				       (unsigned long long)u.size, (unsigned long long)lim.rlim_cur);
	case EEXIST:
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s(%p, %zu bytes): already registered (its pages overlap memory "
				       "registered on %s)", who, ptr, size, dev->node);
	case EFAULT:
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s(%p, %zu bytes): the memory is not mapped%s", who, ptr, size,
				       flags & NPURT_HOST_READ_ONLY ? "" :
				       ", or read-only (pass NPURT_HOST_READ_ONLY)");
	default:
		return npurt_set_error(npurt_status_from_errno(err), "%s(%p, %zu bytes): %s: USERPTR: %s",
				       who, ptr, size, dev->node, strerror(err));
	}
	m->dev = dev;
	m->kind = MEM_HOST;
	m->handle = u.handle;
	m->device_addr = u.device_va + (p - start);
	m->host = ptr;
	m->size = size;
	m->page_size = pg;
	if (npurt_mem_range_add(m)) {
		npurt_gem_close(dev, u.handle);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	return NPURT_OK;
}

npurt_status npurt_host_register(npurt_device *dev, void *ptr, size_t size, uint32_t flags,
				 npurt_mem **out)
{
	static const char who[] = "npurt_host_register";
	npurt_status st;
	npurt_mem *m;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !ptr || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (!size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: size is 0", who);
	if (flags & ~NPURT_HOST_READ_ONLY)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(%p, %zu bytes): unknown flags %#x",
				       who, ptr, size, flags & ~NPURT_HOST_READ_ONLY);
	m = calloc(1, sizeof(*m));
	if (!m)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	st = host_register(dev, ptr, size, flags, m, who);
	if (st) {
		free(m);
		return st;
	}
	*out = m;
	return NPURT_OK;
}

npurt_status npurt_host_alloc(npurt_device *dev, size_t size, npurt_mem **out)
{
	static const char who[] = "npurt_host_alloc";
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len;
	npurt_status st;
	npurt_mem *m;
	void *p;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (!size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: size is 0", who);
	len = (size + pg - 1) / pg * pg;
	if (len < size)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s(%zu bytes): too large", who, size);
	m = calloc(1, sizeof(*m));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!m || p == MAP_FAILED) {
		free(m);
		if (p != MAP_FAILED)
			munmap(p, len);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s(%zu bytes): out of host memory",
				       who, size);
	}
	st = host_register(dev, p, len, 0, m, who);
	if (st) {
		munmap(p, len);
		free(m);
		return st;
	}
	m->size = size;
	m->map = p;
	m->map_size = len;
	*out = m;
	return NPURT_OK;
}

/* ---- sharing ------------------------------------------------------- */

npurt_status npurt_mem_export(npurt_mem *m, int *fd)
{
	static const char who[] = "npurt_mem_export";
	int out = -1;

	if (!fd)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL fd", who);
	if (npurt_handle_check(m, NPURT_KIND_MEM, who))
		return NPURT_ERR_INVALID;
	if (m->kind == MEM_BLOCK && !mc_block_segment(m->block)->dedicated)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: memory from the cache shares its buffer with other "
				       "allocations: allocate it with NPURT_MEM_SHAREABLE", who);
	if (m->kind == MEM_HOST)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: pinned host memory is the caller's to share", who);
	if (drmPrimeHandleToFD(m->dev->fd, m->kind == MEM_BO ? m->handle :
			       mc_block_segment(m->block)->handle, DRM_CLOEXEC | DRM_RDWR, &out)) {
		int err = errno;

		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: PRIME export: %s",
				       who, m->dev->node, strerror(err));
	}
	*fd = out;
	return NPURT_OK;
}

npurt_status npurt_mem_import(npurt_device *dev, int fd, npurt_mem **out)
{
	static const char who[] = "npurt_mem_import";
	struct bo bo = { 0 };
	npurt_mem *m;
	int err;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (fd < 0)
		return npurt_set_error(NPURT_ERR_INVALID, "%s(fd %d): not a file descriptor", who, fd);
	m = calloc(1, sizeof(*m));
	if (!m)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	if (drmPrimeFDToHandle(dev->fd, fd, &bo.handle)) {
		err = errno;
		free(m);
		return npurt_set_error(err == EBADF || err == EINVAL ? NPURT_ERR_INVALID :
				       npurt_status_from_errno(err),
				       "%s(fd %d): %s: not a buffer of an NPU: %s", who, fd, dev->node,
				       strerror(err));
	}
	err = npurt_bo_ref_get(dev, bo.handle);
	if (err) {
		/* The handle stays open until the device closes: it may be another's. */
		free(m);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	}
	err = npurt_bo_map(dev, &bo);
	if (err) {
		npurt_bo_ref_put(dev, bo.handle);
		free(m);
		return npurt_set_error(npurt_status_from_errno(err), "%s(fd %d): %s: mapping: %s",
				       who, fd, dev->node, strerror(err));
	}
	m->dev = dev;
	m->kind = MEM_BO;
	m->handle = bo.handle;
	m->device_addr = bo.device_va;
	m->host = m->map = bo.map;
	m->size = m->map_size = bo.size;
	m->page_size = bo.page_size;
	{
		struct mr_range r = { .start = (uintptr_t)bo.map, .size = bo.size,
				      .addr = bo.device_va, .owner = dev };

		err = mr_insert(&npurt_mem_maps, &r) ? ENOMEM : npurt_mem_range_add(m);
		if (err) {
			mr_remove(&npurt_mem_maps, r.start, dev);
			munmap(bo.map, bo.size);
			npurt_bo_ref_put(dev, bo.handle);
			free(m);
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		}
	}
	*out = m;
	return NPURT_OK;
}
