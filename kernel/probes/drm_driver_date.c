// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_DRIVER_DATE: struct drm_driver still has .date (gone in 6.14). */
#include <drm/drm_drv.h>

const struct drm_driver npu_probe_drv;
const struct drm_driver npu_probe_drv = { .date = "20000101" };
