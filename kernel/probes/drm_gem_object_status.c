// SPDX-License-Identifier: GPL-2.0-only
/*
 * HAVE_DRM_GEM_OBJECT_STATUS: drm_gem_object_funcs.status, which tells
 * drm_show_memory_stats() whether an object is resident.
 */
#include <drm/drm_gem.h>

static enum drm_gem_object_status npu_probe_status(struct drm_gem_object *obj)
{
	return DRM_GEM_OBJECT_RESIDENT;
}

const struct drm_gem_object_funcs npu_probe_funcs;
const struct drm_gem_object_funcs npu_probe_funcs = { .status = npu_probe_status };
