// SPDX-License-Identifier: GPL-2.0-only
/*
 * HAVE_FOP_UNSIGNED_OFFSET: file_operations.fop_flags with
 * FOP_UNSIGNED_OFFSET (6.12+), which drm_open_helper() insists on.
 */
#include <linux/fs.h>

static const struct file_operations npu_probe_fops = {
	.fop_flags = FOP_UNSIGNED_OFFSET,
};

const struct file_operations *npu_probe(void);
const struct file_operations *npu_probe(void)
{
	return &npu_probe_fops;
}
