// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu.ko: PCI binding, DRM registration and the ioctl table.
 *
 * Lifetime: the npu_device is DRM-managed and outlives the PCI binding
 * while files are open. npu_remove() unplugs the DRM device first; every
 * ioctl that touches the hardware runs inside drm_dev_enter/exit and
 * returns -ENODEV once the device is gone.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_print.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "npu_compat.h"
#include "npu_ctx.h"
#include "npu_drv.h"
#include "npu_gem.h"
#include "npu_hw.h"
#include "npu_ipc.h"
#include "npu_list.h"
#include "npu_queue.h"
#include "npu_recovery.h"
#include "npu_stats.h"
#include "npu_sync.h"
#include "npu_uring.h"
#include <drm/npu_accel.h>

#define NPU_DRIVER_DESC		"NPU task-scheduler device"
#define NPU_DRIVER_DATE		"20261129"
#define NPU_DRIVER_MAJOR	0
#define NPU_DRIVER_MINOR	5
#define NPU_DRIVER_PATCHLEVEL	0

/*
 * Reads a struct drm_npu_obj_array into `dst`, elements of `ksize` bytes
 * (the kernel's struct), whatever the caller's stride: a shorter element,
 * at least `min` (the struct's first version), reads as zero past its
 * end; a longer one must be zero past ours (copy_struct_from_user()'s
 * -E2BIG). The caller has bounded a->count.
 */
int npu_obj_array_copy(void *dst, const struct drm_npu_obj_array *a, size_t ksize, size_t min)
{
	const char __user *src = u64_to_user_ptr(a->array);
	u32 i;
	int ret;

	if (a->stride < min || a->stride > PAGE_SIZE)
		return -EINVAL;
	if (a->stride == ksize)
		return copy_from_user(dst, src, (size_t)a->count * ksize) ? -EFAULT : 0;
	for (i = 0; i < a->count; i++) {
		ret = copy_struct_from_user((char *)dst + (size_t)i * ksize, ksize,
					    src + (size_t)i * a->stride, a->stride);
		if (ret)
			return ret;
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

/* As npu_obj_array_copy(), into a new kvmalloc'ed array; NULL with *err set, or for none. */
void *npu_obj_array_dup(const struct drm_npu_obj_array *a, u32 max, size_t ksize, size_t min,
			int *err)
{
	void *p;

	*err = a->count > max ? -EINVAL : 0;
	if (*err || !a->count)
		return NULL;
	p = kvmalloc_array(a->count, ksize, GFP_KERNEL_ACCOUNT);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = npu_obj_array_copy(p, a, ksize, min);
	if (*err) {
		kvfree(p);
		return NULL;
	}
	return p;
}

static int npu_ioctl_get_param(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_get_param *args = data;
	const struct npu_fw_info *fw = &ndev->fw;
	int idx;

	if (args->flags)
		return -EINVAL;

	switch (args->param) {
	case DRM_NPU_PARAM_IF_VERSION:
		args->value = fw->if_version;
		return 0;
	case DRM_NPU_PARAM_FW_VERSION:
		args->value = fw->fw_version;
		return 0;
	case DRM_NPU_PARAM_DEVICE_CAPS:
		/* The firmware's bits are its contract with us, not with users. */
		args->value = (fw->caps & NPU_FW_CAP_FAULT_INJECTION ? DRM_NPU_CAP_FAULT_INJECTION : 0) |
			      (fw->caps & NPU_FW_CAP_TASK_LISTS ? DRM_NPU_CAP_TASK_LISTS : 0) |
			      (fw->caps & NPU_FW_CAP_FENCE_WRITE ? DRM_NPU_CAP_DONE_WORD : 0) |
			      (fw->caps & NPU_FW_CAP_PROFILE ? DRM_NPU_CAP_PROFILE : 0);
		return 0;
	case DRM_NPU_PARAM_HBM_SIZE:
		args->value = fw->hbm_size;
		return 0;
	case DRM_NPU_PARAM_HBM_RESERVED:
		args->value = fw->fw_reserved;
		return 0;
	case DRM_NPU_PARAM_QUEUE_COUNT:
		args->value = fw->num_queues;
		return 0;
	case DRM_NPU_PARAM_CORE_COUNT:
		args->value = fw->num_cores;
		return 0;
	case DRM_NPU_PARAM_CORE_GROUPS:
		args->value = fw->num_core_groups;
		return 0;
	case DRM_NPU_PARAM_DMA_ENGINES:
		args->value = fw->num_dma_engines;
		return 0;
	case DRM_NPU_PARAM_FW_HEARTBEAT_MS:
		args->value = fw->heartbeat_ms;
		return 0;
	case DRM_NPU_PARAM_HBM_USED:
		args->value = npu_gem_hbm_used(ndev);
		return 0;
	case DRM_NPU_PARAM_QUEUES_PER_CONTEXT:
		args->value = NPU_CTX_QUEUES;
		return 0;
	case DRM_NPU_PARAM_URING_CMDS:
		args->value = npu_uring_cmds_supported();
		return 0;
	case DRM_NPU_PARAM_SYNCS_PER_CONTEXT:
		args->value = npu_sync_ctx_max();
		return 0;
	case DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS:
		args->value = npu_recovery_max_job_timeout_ms();
		return 0;
	case DRM_NPU_PARAM_FW_HEARTBEAT:
		/* Reads the device. */
		if (!drm_dev_enter(drm, &idx))
			return -ENODEV;
		args->value = npu_hw_heartbeat(ndev);
		drm_dev_exit(idx);
		return 0;
	default:
		/* DRM_NPU_PARAM_RESERVED_9 (the old ping: debugfs fw_ping) too. */
		return -EINVAL;
	}
}

static int npu_ioctl_clock(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(drm);
	struct drm_npu_clock *args = data;
	struct npu_clock_pair pair;
	int idx, ret;

	if (args->flags || args->pad)
		return -EINVAL;
	if (!(ndev->fw.caps & NPU_FW_CAP_PROFILE))
		return -EINVAL;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = npu_ipc_clock(ndev, &pair);
	drm_dev_exit(idx);
	if (ret)
		return ret;
	args->device_ns = pair.device_ns;
	args->host_ns = pair.host_ns;
	args->window_ns = pair.window_ns;
	return 0;
}

static const struct drm_ioctl_desc npu_ioctls[] = {
	DRM_IOCTL_DEF_DRV(NPU_GET_PARAM, npu_ioctl_get_param, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_CREATE, npu_ioctl_bo_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_INFO, npu_ioctl_bo_info, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_GET_MEM_USAGE, npu_ioctl_get_mem_usage, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_SUBMIT, npu_ioctl_submit, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_WAIT, npu_ioctl_wait, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERPTR, npu_ioctl_userptr, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_QUEUE_CREATE, npu_ioctl_queue_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_QUEUE_DESTROY, npu_ioctl_queue_destroy, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_QUEUE_ABORT, npu_ioctl_queue_abort, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_SYNC_CREATE, npu_ioctl_sync_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_SYNC_DESTROY, npu_ioctl_sync_destroy, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_EVENT_QUERY, npu_ioctl_event_query, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_EVENT_WAIT, npu_ioctl_event_wait, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_NOTIFY_EXPORT, npu_ioctl_notify_export, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_NOTIFY_IMPORT, npu_ioctl_notify_import, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_TASKLIST_CREATE, npu_ioctl_tasklist_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_TASKLIST_DESTROY, npu_ioctl_tasklist_destroy, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_SUBMIT_MULTI, npu_ioctl_submit_multi, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_CLOCK, npu_ioctl_clock, DRM_RENDER_ALLOW),
};

#ifdef HAVE_DRM_ACCEL
/*
 * DRM serves its core ioctls on an accel node without the filter of a
 * render node (DRM_RENDER_ALLOW): there GET_UNIQUE dereferences the
 * master an accel file never has (an oops on 6.12), and root's files,
 * counted as authenticated, could FLINK buffers to global names. So an
 * accel node takes the core ioctls a render node takes, and refuses the
 * rest as a render node does. The driver's own pass untouched.
 */
static bool npu_core_ioctl_allowed(unsigned int cmd)
{
	unsigned int nr = DRM_IOCTL_NR(cmd);

	if (_IOC_TYPE(cmd) != DRM_IOCTL_BASE ||
	    (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END))
		return true;
	switch (nr) {
	case DRM_IOCTL_NR(DRM_IOCTL_VERSION):
	case DRM_IOCTL_NR(DRM_IOCTL_GET_CAP):
	case DRM_IOCTL_NR(DRM_IOCTL_GEM_CLOSE):
	case DRM_IOCTL_NR(DRM_IOCTL_PRIME_HANDLE_TO_FD):
	case DRM_IOCTL_NR(DRM_IOCTL_PRIME_FD_TO_HANDLE):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_CREATE):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_DESTROY):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_WAIT):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_RESET):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_SIGNAL):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_QUERY):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TRANSFER):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL):
#ifdef DRM_IOCTL_SYNCOBJ_EVENTFD
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_EVENTFD):
#endif
#ifdef DRM_IOCTL_SET_CLIENT_NAME
	case DRM_IOCTL_NR(DRM_IOCTL_SET_CLIENT_NAME):
#endif
		return true;
	}
	return false;
}

static long npu_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	if (!npu_core_ioctl_allowed(cmd))
		return -EACCES;
	return drm_ioctl(filp, cmd, arg);
}

#ifdef CONFIG_COMPAT
static long npu_compat_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	if (!npu_core_ioctl_allowed(cmd))
		return -EACCES;
	return drm_compat_ioctl(filp, cmd, arg);
}
#else
#define npu_compat_ioctl	NULL
#endif
#else
/* A render node: DRM itself refuses what is not DRM_RENDER_ALLOW. */
#define npu_ioctl		drm_ioctl
#define npu_compat_ioctl	drm_compat_ioctl
#endif

/*
 * Our own file_operations rather than DEFINE_DRM_GEM_FOPS: io_uring
 * commands (.uring_cmd) need a slot the DRM macros do not fill.
 */
static const struct file_operations npu_fops = {
	.owner = THIS_MODULE,
	.open = npu_node_open,
	.release = drm_release,
	.unlocked_ioctl = npu_ioctl,
	.compat_ioctl = npu_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = npu_mmap,
	NPU_FOPS_FLAGS
	NPU_FOPS_SHOW_FDINFO
#if IS_ENABLED(CONFIG_IO_URING)
	.uring_cmd = npu_uring_cmd,
#endif
};

static const struct drm_driver npu_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_SYNCOBJ | DRIVER_SYNCOBJ_TIMELINE |
			   NPU_DRIVER_NODE_FEATURE,
	.fops = &npu_fops,
	.open = npu_ctx_open,
	.postclose = npu_ctx_postclose,
	.debugfs_init = npu_debugfs_init,
	NPU_DRM_DRIVER_SHOW_FDINFO
	/* Buffers are shared as dma-bufs; importing is for our own only. */
	NPU_DRM_DRIVER_PRIME
	.ioctls = npu_ioctls,
	.num_ioctls = ARRAY_SIZE(npu_ioctls),
	.name = NPU_DRIVER_NAME,
	.desc = NPU_DRIVER_DESC,
	NPU_DRM_DRIVER_DATE(NPU_DRIVER_DATE)
	.major = NPU_DRIVER_MAJOR,
	.minor = NPU_DRIVER_MINOR,
	.patchlevel = NPU_DRIVER_PATCHLEVEL,
};

static int npu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct npu_fw_ctrl __iomem *ctrl;
	struct npu_device *ndev;
	void __iomem *regs;
	u64 rtt_ns;
	int ret;

	/* Not our firmware: -ENODEV leaves the function to other drivers. */
	ret = npu_hw_check(pdev, &regs, &ctrl);
	if (ret)
		return ret;

	ndev = devm_drm_dev_alloc(&pdev->dev, &npu_drm_driver,
				  struct npu_device, drm);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	ndev->pdev = pdev;
	ret = npu_recovery_init(ndev);
	if (ret)
		return ret;
	ndev->regs = regs;
	ndev->ctrl = ctrl;
	pci_set_drvdata(pdev, ndev);

	ret = npu_hw_init(ndev);
	if (ret)
		return ret;
	ret = npu_ipc_init(ndev);
	if (ret)
		return ret;
	ret = npu_gem_init(ndev);
	if (ret)
		return ret;
	ret = npu_ctx_init_device(ndev);
	if (ret)
		return ret;
	ret = npu_queue_init_device(ndev);
	if (ret)
		return ret;
	ret = npu_sync_init_device(ndev);
	if (ret)
		return ret;
	npu_uring_init_device(ndev);

	ret = npu_ipc_ping(ndev, &rtt_ns);
	if (ret) {
		npu_err(ndev, "firmware PING failed: %d\n", ret);
		return ret;
	}
	ret = npu_queue_quiesce_hw(ndev);
	if (ret) {
		npu_err(ndev, "cannot stop the device's queues: %d\n", ret);
		return ret;
	}

	ret = drm_dev_register(&ndev->drm, 0);
	if (ret)
		return ret;
	npu_debugfs_register(ndev);
	npu_recovery_start(ndev);

	npu_info(ndev, "interface %u.%u, HBM %llu MiB, %u queues, %u cores in %u groups, %u copy engines, PING %llu us\n",
		 NPU_FW_IF_VERSION_MAJOR(ndev->fw.if_version),
		 NPU_FW_IF_VERSION_MINOR(ndev->fw.if_version),
		 ndev->fw.hbm_size >> 20, ndev->fw.num_queues,
		 ndev->fw.num_cores, ndev->fw.num_core_groups, ndev->fw.num_dma_engines,
		 div_u64(rtt_ns, 1000));
	return 0;
}

static void npu_remove(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);

	/* Open files keep the drm_device; they now get -ENODEV. */
	drm_dev_unplug(&ndev->drm);
	/* Nothing can re-arm it now (npu_device_wedge() enters the device). */
	npu_recovery_stop(ndev);
	/*
	 * The device stops touching memory, then work in flight is failed.
	 * A device that does not confirm it stays wedged: what it may still
	 * reach is never given back.
	 */
	if (npu_queue_quiesce_hw(ndev))
		npu_device_wedge(ndev, "stopping the device at unbind", -EIO);
	npu_queue_abort_all(ndev);
	/* Waiters outside the device (event waits) find it unplugged. */
	wake_up_all(&ndev->sync_wq);
}

static const struct pci_device_id npu_pci_ids[] = {
	/* ivshmem-doorbell; npu_hw_check() tells ours from others. */
	{ PCI_DEVICE(0x1af4, 0x1110) },
	{ }
};
MODULE_DEVICE_TABLE(pci, npu_pci_ids);

static struct pci_driver npu_pci_driver = {
	.name = NPU_DRIVER_NAME,
	.id_table = npu_pci_ids,
	.probe = npu_probe,
	.remove = npu_remove,
};
struct workqueue_struct *npu_wq;
struct workqueue_struct *npu_timeout_wq;

static int __init npu_init(void)
{
	int ret = -ENOMEM;

	npu_wq = alloc_workqueue("npu", WQ_UNBOUND, 0);
	if (!npu_wq)
		return -ENOMEM;
	npu_timeout_wq = alloc_ordered_workqueue("npu-timeout", WQ_MEM_RECLAIM);
	if (!npu_timeout_wq)
		goto err_wq;
	ret = pci_register_driver(&npu_pci_driver);
	if (ret)
		goto err_timeout_wq;
	return 0;

err_timeout_wq:
	destroy_workqueue(npu_timeout_wq);
err_wq:
	destroy_workqueue(npu_wq);
	return ret;
}

static void __exit npu_exit(void)
{
	pci_unregister_driver(&npu_pci_driver);
	/* Every scheduler went with its device: no timeout is queued. */
	destroy_workqueue(npu_timeout_wq);
	/* Jobs freed after an unbind, by files closed since, finish here. */
	destroy_workqueue(npu_wq);
	/* The last fence's free may still be returning from its module_put(). */
	rcu_barrier();
	npu_queue_pool_fini();
}

module_init(npu_init);
module_exit(npu_exit);

MODULE_DESCRIPTION(NPU_DRIVER_DESC);
MODULE_AUTHOR("The npu authors");
MODULE_LICENSE("GPL");
