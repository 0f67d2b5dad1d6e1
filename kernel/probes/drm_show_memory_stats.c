// SPDX-License-Identifier: GPL-2.0-only
/*
 * HAVE_DRM_SHOW_MEMORY_STATS: the DRM core prints fdinfo (drm_show_fdinfo,
 * drm_driver.show_fdinfo) and the GEM memory keys (drm_show_memory_stats).
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_print.h>

void npu_probe_show(struct drm_printer *p, struct drm_file *file);
void npu_probe_show(struct drm_printer *p, struct drm_file *file)
{
	drm_show_memory_stats(p, file);
}

const struct drm_driver npu_probe_drv;
const struct drm_driver npu_probe_drv = { .show_fdinfo = npu_probe_show };

const struct file_operations npu_probe_fops;
const struct file_operations npu_probe_fops = { .show_fdinfo = drm_show_fdinfo };
