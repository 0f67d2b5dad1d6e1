// SPDX-License-Identifier: GPL-2.0-only
/*
 * HAVE_DRM_DEVICE_DEBUGFS_ROOT: DRM keeps one debugfs directory per
 * device (6.8+), and no longer calls drm_driver.debugfs_init for accel
 * minors: such a driver fills the directory itself.
 */
#include <drm/drm_device.h>

struct dentry *npu_probe(struct drm_device *dev);
struct dentry *npu_probe(struct drm_device *dev)
{
	return dev->debugfs_root;
}
