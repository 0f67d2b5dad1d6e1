// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_DRIVER_PRIME_HANDLE_TO_FD: drivers still wire up PRIME by
 * setting .prime_handle_to_fd/.prime_fd_to_handle (gone in 6.6). */
#include <drm/drm_drv.h>
#include <drm/drm_prime.h>

const struct drm_driver npu_probe_drv;
const struct drm_driver npu_probe_drv = {
	.prime_handle_to_fd = drm_gem_prime_handle_to_fd,
	.prime_fd_to_handle = drm_gem_prime_fd_to_handle,
};
