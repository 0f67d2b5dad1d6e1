/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Differences between the kernel trees we build against.
 *
 * Every HAVE_* macro comes from npu_config.h, which scripts/probe.sh
 * writes by test-compiling the snippets in probes/ against the target
 * tree. Version numbers are never consulted: distributions backport.
 */
#ifndef __NPU_COMPAT_H__
#define __NPU_COMPAT_H__

#include <linux/err.h>
#include <linux/pci.h>

#include "npu_config.h"

#ifdef HAVE_DRM_ACCEL
#include <drm/drm_accel.h>
/* A compute-only device: /dev/accel/accelN. */
#define NPU_DRIVER_NODE_FEATURE	DRIVER_COMPUTE_ACCEL
#define npu_node_open		accel_open
#else
#include <drm/drm_file.h>
/* No accel subsystem: a render node, /dev/dri/renderDN. */
#define NPU_DRIVER_NODE_FEATURE	DRIVER_RENDER
#define npu_node_open		drm_open
#endif

#ifdef HAVE_DRM_DRIVER_DATE
#define NPU_DRM_DRIVER_DATE(d)	.date = (d),
#else
#define NPU_DRM_DRIVER_DATE(d)
#endif

#ifdef HAVE_VM_FLAGS_SET
#define npu_vm_flags_set(vma, flags)	vm_flags_set(vma, flags)
#else
#define npu_vm_flags_set(vma, flags)	((vma)->vm_flags |= (flags))
#endif

#ifdef HAVE_DRM_DRIVER_PRIME_HANDLE_TO_FD
#include <drm/drm_prime.h>
#define NPU_DRM_DRIVER_PRIME \
	.prime_handle_to_fd = drm_gem_prime_handle_to_fd, \
	.prime_fd_to_handle = drm_gem_prime_fd_to_handle,
#else
/* PRIME is wired up by the DRM core for every GEM driver. */
#define NPU_DRM_DRIVER_PRIME
#endif

/* Request and map one BAR for the life of the driver binding. */
static inline void __iomem *npu_pcim_map_bar(struct pci_dev *pdev, int bar,
					     const char *name)
{
#ifdef HAVE_PCIM_IOMAP_REGION
	return pcim_iomap_region(pdev, bar, name);
#else
	int ret = pcim_iomap_regions(pdev, BIT(bar), name);

	if (ret)
		return IOMEM_ERR_PTR(ret);
	return pcim_iomap_table(pdev)[bar];
#endif
}

#endif /* __NPU_COMPAT_H__ */
