// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPU mappings of buffers: write-combined views of their part of BAR2,
 * through the DRM node or a dma-buf.
 *
 * Mappings and the DRM file: a mapping made through the DRM node would
 * hold the file (vma->vm_file), and with it the file's context and
 * queues, until munmap: a process that closed its file with buffers
 * still mapped kept hardware queue slots from everyone else. Each such
 * mapping gets a file of its own instead (npu_mmap()), which shares the
 * DRM node's address space, so the unmap_mapping_range() of a buffer
 * still finds it, and holds the DRM device and the module, which the
 * mapping needs (its buffer, its vm_ops), but nothing of the DRM file.
 * mmap is not on anyone's hot path: a file per call is cheap enough.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/mm.h>

#include "npu_compat.h"
#include "npu_gem.h"

static int npu_mmap_file_release(struct inode *inode, struct file *f)
{
	drm_dev_put(f->private_data);
	return 0;
}

static const struct file_operations npu_mmap_fops = {
	.owner = THIS_MODULE,
	.release = npu_mmap_file_release,
};

int npu_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct drm_file *priv = filp->private_data;
	struct drm_device *drm = priv->minor->dev;
	struct file *f;
	int ret;

	f = anon_inode_getfile("npu-mmap", &npu_mmap_fops, drm, O_RDWR);
	if (IS_ERR(f))
		return PTR_ERR(f);
	f->f_mapping = drm->anon_inode->i_mapping;
	drm_dev_get(drm);		/* the file's, dropped at its release */
	ret = drm_gem_mmap(filp, vma);
	if (!ret)
		vma_set_file(vma, f);
	fput(f);			/* the mapping holds it now, or nothing does */
	return ret;
}

int npu_bo_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct npu_device *ndev = to_npu_device(obj->dev);
	unsigned long first;
	phys_addr_t phys;
	int ret, idx;

	if (to_npu_bo(obj)->user)
		return -EINVAL;	/* the caller has the memory already */
	/* Device memory has no page to copy on write: shared mappings only. */
	if (is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	/*
	 * Both the DRM node and a dma-buf hand us the fake offset plus the
	 * page the caller asked for, and have checked that the whole
	 * mapping lies inside the buffer; check again all the same.
	 */
	first = vma->vm_pgoff - drm_vma_node_start(&obj->vma_node);
	if (first > obj->size >> PAGE_SHIFT ||
	    vma_pages(vma) > (obj->size >> PAGE_SHIFT) - first)
		return -EINVAL;
	phys = ndev->hbm_phys + to_npu_bo(obj)->hbm.start + ((u64)first << PAGE_SHIFT);

	/* A dma-buf outlives the binding; the BAR does not. */
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
	npu_vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	ret = io_remap_pfn_range(vma, vma->vm_start, phys >> PAGE_SHIFT,
				 vma->vm_end - vma->vm_start, vma->vm_page_prot);
	drm_dev_exit(idx);
	return ret;
}

const struct vm_operations_struct npu_bo_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};
