// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_DRIVER_GEM_PRIME_MMAP: a dma-buf's mmap goes through
 * .gem_prime_mmap, which drivers must set (gone in 6.6, where the core
 * calls the object's own mmap). */
#include <drm/drm_drv.h>
#include <drm/drm_prime.h>

const struct drm_driver npu_probe_drv;
const struct drm_driver npu_probe_drv = {
	.gem_prime_mmap = drm_gem_prime_mmap,
};
