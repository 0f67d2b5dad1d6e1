// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_DRM_ACCEL: the accel subsystem exists and is enabled (Linux 6.2+). */
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>

#if !IS_ENABLED(CONFIG_DRM_ACCEL)
#error accel subsystem disabled in this kernel
#endif

int npu_probe(void);
int npu_probe(void)
{
	return DRIVER_COMPUTE_ACCEL;
}
