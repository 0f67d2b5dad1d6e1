/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_STATS_H__
#define __NPU_STATS_H__

struct drm_file;
struct drm_minor;
struct drm_printer;
struct file;
struct npu_device;
struct seq_file;

void npu_show_fdinfo(struct seq_file *m, struct file *f);
void npu_drm_show_fdinfo(struct drm_printer *p, struct drm_file *file);
void npu_debugfs_init(struct drm_minor *minor);
void npu_debugfs_register(struct npu_device *ndev);

#endif /* __NPU_STATS_H__ */
