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
#include <linux/hrtimer.h>
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

/*
 * DRM's fake mmap offsets need not fit a signed loff_t: since 6.12 it
 * refuses (with a WARN) to open a node whose fops lack FOP_UNSIGNED_OFFSET.
 * DEFINE_DRM_*_FOPS set it; our own fops must too.
 */
#ifdef HAVE_FOP_UNSIGNED_OFFSET
#define NPU_FOPS_FLAGS		.fop_flags = FOP_UNSIGNED_OFFSET,
#else
#define NPU_FOPS_FLAGS
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
#define NPU_DRM_DRIVER_PRIME_FDS \
	.prime_handle_to_fd = drm_gem_prime_handle_to_fd, \
	.prime_fd_to_handle = drm_gem_prime_fd_to_handle,
#else
/* PRIME is wired up by the DRM core for every GEM driver. */
#define NPU_DRM_DRIVER_PRIME_FDS
#endif

#ifdef HAVE_DRM_DRIVER_GEM_PRIME_MMAP
#include <drm/drm_prime.h>
#define NPU_DRM_DRIVER_PRIME_MMAP	.gem_prime_mmap = drm_gem_prime_mmap,
#else
#define NPU_DRM_DRIVER_PRIME_MMAP
#endif

#define NPU_DRM_DRIVER_PRIME	NPU_DRM_DRIVER_PRIME_FDS NPU_DRM_DRIVER_PRIME_MMAP

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

static inline void npu_hrtimer_setup(struct hrtimer *t,
				     enum hrtimer_restart (*fn)(struct hrtimer *))
{
#ifdef HAVE_HRTIMER_SETUP
	hrtimer_setup(t, fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
#else
	hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	t->function = fn;
#endif
}

/*
 * drm_sched: one scheduler and one entity per hardware queue. Initialising
 * a scheduler took positional arguments until an argument struct (6.15,
 * backported to Debian's 6.1), gained a submission workqueue, run-queue
 * count and credit limit (6.8); jobs gained credits (6.8) and a client id
 * (6.17); the extra-dependency callback was renamed (6.2).
 */
#include <drm/gpu_scheduler.h>
#include <linux/sched.h>

static inline int npu_sched_init(struct drm_gpu_scheduler *sched,
				 const struct drm_sched_backend_ops *ops, u32 jobs,
				 long timeout, struct workqueue_struct *timeout_wq,
				 const char *name, struct device *dev)
{
#if defined(HAVE_DRM_SCHED_INIT_ARGS)
	const struct drm_sched_init_args args = {
		.ops = ops,
#ifdef HAVE_DRM_SCHED_INIT_ARGS_SUBMIT_WQ
		.num_rqs = 1,
#endif
		.credit_limit = jobs,
		.timeout = timeout,
		.timeout_wq = timeout_wq,
		.name = name,
		.dev = dev,
	};

	return drm_sched_init(sched, &args);
#elif defined(HAVE_DRM_SCHED_INIT_SUBMIT_WQ)
	return drm_sched_init(sched, ops, NULL, 1, jobs, 0, timeout, timeout_wq, NULL, name, dev);
#else
	return drm_sched_init(sched, ops, jobs, 0, timeout, timeout_wq, NULL, name, dev);
#endif
}

/* Every job costs one credit: ring room is the prepare callback's. */
static inline int npu_sched_job_init(struct drm_sched_job *job,
				     struct drm_sched_entity *entity, void *owner)
{
#if defined(HAVE_DRM_SCHED_JOB_INIT_CLIENT_ID)
	return drm_sched_job_init(job, entity, 1, owner, 0);
#elif defined(HAVE_DRM_SCHED_JOB_INIT_CREDITS)
	return drm_sched_job_init(job, entity, 1, owner);
#else
	return drm_sched_job_init(job, entity, owner);
#endif
}

#ifdef HAVE_DRM_SCHED_OPS_PREPARE_JOB
#define NPU_SCHED_OPS_PREPARE	.prepare_job
#else
#define NPU_SCHED_OPS_PREPARE	.dependency
#endif

/*
 * The end of timedout_job: the job stays the scheduler's, to free once
 * its finished fence signals (the queue was stopped, or is making
 * progress). From 6.17 the scheduler keeps it on NO_HANG. Before, it took
 * the job off its pending list: the driver puts it back (as etnaviv does
 * on 6.1), and wakes the scheduler, which may have looked for it (to
 * free it, signalled meanwhile) while it was off the list. On the
 * workqueue scheduler (6.8+) that is queueing its free work again, or
 * the job is never freed: its queue's admission, then its destruction,
 * wait for it forever. The driver never pauses the scheduler, so
 * drm_sched_wqueue_start() only queues the work.
 */
static inline enum drm_gpu_sched_stat npu_sched_keep_job(struct drm_sched_job *job)
{
#ifdef HAVE_DRM_GPU_SCHED_STAT_NO_HANG
	return DRM_GPU_SCHED_STAT_NO_HANG;
#else
	spin_lock(&job->sched->job_list_lock);
	list_add(&job->list, &job->sched->pending_list);
	spin_unlock(&job->sched->job_list_lock);
#ifdef HAVE_DRM_SCHED_WAKE_UP_WORKER
	wake_up_interruptible(&job->sched->wake_up_worker);
#elif defined(HAVE_DRM_SCHED_WQUEUE_START)
	drm_sched_wqueue_start(job->sched);
#endif
	return DRM_GPU_SCHED_STAT_NOMINAL;
#endif
}

/*
 * Until the submission workqueue (6.8) the scheduler ran a kthread of its
 * own at SCHED_FIFO, which preempts the submitter at every push: a switch
 * per batch, and another per free. Run it as a normal task, as later
 * kernels' workqueue does; called from run_job, in that thread.
 */
static inline void npu_sched_thread_normal(struct drm_gpu_scheduler *sched)
{
#ifdef HAVE_DRM_SCHED_WAKE_UP_WORKER
	if (unlikely(current == sched->thread && current->policy != SCHED_NORMAL))
		sched_set_normal(current, 0);
#endif
}

/*
 * io_uring commands. The driver API moved header (6.7), reached the
 * payload through the SQE (6.6), gained issue_flags (6.3, backported to
 * Debian's 6.1), split off done32 for 32-byte CQEs and changed the
 * task-work callback type. Each is probed; npu_uring.c sees one API.
 */
#ifdef HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

static inline const void *npu_uring_cmd_payload(const struct io_uring_cmd *cmd)
{
#ifdef HAVE_IO_URING_SQE_CMD
	return io_uring_sqe_cmd(cmd->sqe);
#else
	return cmd->cmd;
#endif
}

/* Post the command's CQE: res, and res2 in the second half of a CQE32. */
static inline void npu_uring_cmd_done(struct io_uring_cmd *cmd, s32 res, u64 res2,
				      unsigned int issue_flags)
{
#if defined(HAVE_IO_URING_CMD_DONE32)
	io_uring_cmd_done32(cmd, res, res2, issue_flags);
#elif defined(HAVE_IO_URING_CMD_DONE_FLAGS)
	io_uring_cmd_done(cmd, res, res2, issue_flags);
#else
	io_uring_cmd_done(cmd, res, res2);
#endif
}

/*
 * NPU_URING_TASK_WORK(name, fn) defines `name`, a task-work callback of
 * this tree's type that calls fn(struct io_uring_cmd *, issue_flags).
 */
#if defined(HAVE_IO_URING_CMD_FROM_TW)
#define NPU_URING_TASK_WORK(name, fn)						\
	static void name(struct io_tw_req tw_req, io_tw_token_t tw)		\
	{									\
		fn(io_uring_cmd_from_tw(tw_req), IO_URING_CMD_TASK_WORK_ISSUE_FLAGS); \
	}
#elif defined(HAVE_IO_URING_CMD_TW_FLAGS)
#define NPU_URING_TASK_WORK(name, fn)						\
	static void name(struct io_uring_cmd *cmd, unsigned int issue_flags)	\
	{									\
		fn(cmd, issue_flags);						\
	}
#else
#define NPU_URING_TASK_WORK(name, fn)						\
	static void name(struct io_uring_cmd *cmd)				\
	{									\
		fn(cmd, 0);							\
	}
#endif

/*
 * fdinfo: from 6.5 the DRM core prints it (drm_show_fdinfo: drm-driver,
 * drm-client-id, drm-pdev) and the GEM memory keys (drm_show_memory_stats:
 * drm-total-memory, drm-resident-memory, ...), the driver adding its own
 * keys through drm_driver.show_fdinfo. Before (6.1) the driver prints
 * everything from file_operations.show_fdinfo.
 */
#ifdef HAVE_DRM_SHOW_MEMORY_STATS
#define NPU_FOPS_SHOW_FDINFO		.show_fdinfo = drm_show_fdinfo,
#define NPU_DRM_DRIVER_SHOW_FDINFO	.show_fdinfo = npu_drm_show_fdinfo,
#else
#define NPU_FOPS_SHOW_FDINFO		.show_fdinfo = npu_show_fdinfo,
#define NPU_DRM_DRIVER_SHOW_FDINFO
#endif

/*
 * Before 6.7 io_uring cannot cancel a driver's parked command: a ring
 * closing, or a task exiting, would wait for it forever. There the
 * driver looks at the request itself and cancels what is orphaned.
 */
#if !defined(HAVE_IO_URING_CMD_MARK_CANCELABLE) && defined(HAVE_IO_URING_REQ_TASK)
#include <linux/io_uring_types.h>
#include <linux/percpu-refcount.h>
#define NPU_URING_REAP	1
static inline bool npu_uring_cmd_orphaned(struct io_uring_cmd *cmd)
{
	struct io_kiocb *req = cmd_to_io_kiocb(cmd);

	return (READ_ONCE(req->task->flags) & PF_EXITING) ||
	       percpu_ref_is_dying(&req->ctx->refs);
}
#endif

#endif /* __NPU_COMPAT_H__ */
