// SPDX-License-Identifier: MIT
/*
 * Device memory: a buffer object in HBM, at a device address of the
 * device's context (the open file) and mapped for the CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xf86drm.h>

#include "error.h"
#include "internal.h"

struct npurt_mem {
	npurt_device *dev;
	uint32_t handle;
	size_t size;
	uint64_t device_addr;
	void *host;
};

npurt_status npurt_mem_alloc(npurt_device *dev, size_t size, npurt_mem **out)
{
	static const char who[] = "npurt_mem_alloc";
	struct drm_npu_bo_create create = { .size = size };
	struct drm_npu_bo_info info = { 0 };
	struct drm_gem_close close_args = { 0 };
	npurt_status st;
	npurt_mem *m;
	int err;

	if (!dev || !out || !size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s", who,
				       !size ? "size is 0" : "NULL argument");
	m = calloc(1, sizeof(*m));
	if (!m)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_CREATE, &create);
	if (err) {
		free(m);
		return npurt_set_error(npurt_status_from_errno(err),
				       "%s(%zu bytes): %s: BO_CREATE: %s", who, size, dev->node,
				       strerror(err));
	}
	info.handle = create.handle;
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_INFO, &info);
	if (!err) {
		m->host = mmap(NULL, create.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
			       (off_t)info.mmap_offset);
		if (m->host == MAP_FAILED)
			err = errno;
	}
	if (err) {
		st = npurt_set_error(npurt_status_from_errno(err), "%s(%zu bytes): mapping: %s",
				     who, size, strerror(err));
		close_args.handle = create.handle;
		npurt_ioctl(dev, DRM_IOCTL_GEM_CLOSE, &close_args);
		free(m);
		return st;
	}
	m->dev = dev;
	m->handle = create.handle;
	m->size = create.size;
	m->device_addr = create.device_va;
	*out = m;
	return NPURT_OK;
}

void npurt_mem_free(npurt_mem *m)
{
	struct drm_gem_close close_args = { 0 };

	if (!m)
		return;
	munmap(m->host, m->size);
	close_args.handle = m->handle;
	npurt_ioctl(m->dev, DRM_IOCTL_GEM_CLOSE, &close_args);
	free(m);
}

void *npurt_mem_host_ptr(const npurt_mem *m)
{
	return m ? m->host : NULL;
}

uint64_t npurt_mem_device_addr(const npurt_mem *m)
{
	return m ? m->device_addr : 0;
}
