/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * npu_accel.h - the user/kernel ABI of npu.ko. Nothing else is ABI.
 *
 * Rules every ioctl here follows (Documentation/uapi.rst explains them):
 *
 *  - Fixed-width types only. Pointers travel as __u64 (cast through
 *    uintptr_t), so 32-bit and 64-bit processes share one layout.
 *  - Every struct is 8-byte aligned with explicit padding. Padding and
 *    reserved fields must be zero: the kernel returns -EINVAL otherwise,
 *    which keeps them free for later use.
 *  - Flags the kernel does not know are rejected with -EINVAL, never
 *    ignored, so a new flag cannot be silently dropped by an old kernel.
 *  - Structs grow only at the end. The ioctl number encodes the size the
 *    caller was built with; the DRM core zero-fills a shorter struct and
 *    truncates a longer one, and a zero new field means "old behaviour".
 *  - Errors: -EINVAL for malformed arguments, -EFAULT for unreadable or
 *    unwritable user memory, -ENODEV once the device is gone (unbound or
 *    reset beyond recovery); ioctls document any other code they return.
 *
 * The driver registers as "npu": a render node (/dev/dri/renderD*) on
 * kernels without the accel subsystem, /dev/accel/accel* where it exists.
 *
 * Changes before the first release (Documentation/uapi.rst, "Changes"):
 * DRM_NPU_ prefix on every name; absolute CLOCK_MONOTONIC deadlines in
 * every wait; a flags field in every struct; the firmware's ring slot and
 * the op library's argument block out of this header (a KERNEL task now
 * gives its block's size); the firmware ping moved to debugfs fw_ping.
 * Driver 0.3: SUBMIT_MULTI's entries and TASKLIST_CREATE's tasks, patches
 * and slots are struct drm_npu_obj_array; each entry has flags and its
 * own seq; QUEUE_ABORT has its own struct.
 */
#ifndef _UAPI_NPU_ACCEL_H_
#define _UAPI_NPU_ACCEL_H_

#ifdef __KERNEL__
#include <drm/drm.h>
#else
#include "drm.h"	/* libdrm's copy: pkg-config --cflags libdrm */
#endif

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_NPU_GET_PARAM		0x00
#define DRM_NPU_BO_CREATE		0x01
#define DRM_NPU_BO_INFO			0x02
#define DRM_NPU_GET_MEM_USAGE		0x03
#define DRM_NPU_SUBMIT			0x04
#define DRM_NPU_WAIT			0x05
#define DRM_NPU_USERPTR			0x06
#define DRM_NPU_QUEUE_CREATE		0x07
#define DRM_NPU_QUEUE_DESTROY		0x08
#define DRM_NPU_SYNC_CREATE		0x09
#define DRM_NPU_SYNC_DESTROY		0x0a
#define DRM_NPU_EVENT_QUERY		0x0b
#define DRM_NPU_EVENT_WAIT		0x0c
#define DRM_NPU_NOTIFY_EXPORT		0x0d
#define DRM_NPU_NOTIFY_IMPORT		0x0e
#define DRM_NPU_QUEUE_ABORT		0x0f
#define DRM_NPU_TASKLIST_CREATE		0x10
#define DRM_NPU_TASKLIST_DESTROY	0x11
#define DRM_NPU_SUBMIT_MULTI		0x12
#define DRM_NPU_CLOCK			0x13

#define DRM_IOCTL_NPU_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_PARAM, struct drm_npu_get_param)
#define DRM_IOCTL_NPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_CREATE, struct drm_npu_bo_create)
#define DRM_IOCTL_NPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_INFO, struct drm_npu_bo_info)
#define DRM_IOCTL_NPU_GET_MEM_USAGE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_MEM_USAGE, struct drm_npu_mem_usage)
#define DRM_IOCTL_NPU_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_SUBMIT, struct drm_npu_submit)
#define DRM_IOCTL_NPU_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_WAIT, struct drm_npu_wait)
#define DRM_IOCTL_NPU_USERPTR \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_USERPTR, struct drm_npu_userptr)
#define DRM_IOCTL_NPU_QUEUE_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_QUEUE_CREATE, struct drm_npu_queue_create)
#define DRM_IOCTL_NPU_QUEUE_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_QUEUE_DESTROY, struct drm_npu_queue_destroy)
#define DRM_IOCTL_NPU_SYNC_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_SYNC_CREATE, struct drm_npu_sync_create)
#define DRM_IOCTL_NPU_SYNC_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_SYNC_DESTROY, struct drm_npu_sync_destroy)
#define DRM_IOCTL_NPU_EVENT_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_EVENT_QUERY, struct drm_npu_event_query)
#define DRM_IOCTL_NPU_EVENT_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_EVENT_WAIT, struct drm_npu_event_wait)
#define DRM_IOCTL_NPU_NOTIFY_EXPORT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_NOTIFY_EXPORT, struct drm_npu_notify_export)
#define DRM_IOCTL_NPU_NOTIFY_IMPORT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_NOTIFY_IMPORT, struct drm_npu_notify_import)
#define DRM_IOCTL_NPU_QUEUE_ABORT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_QUEUE_ABORT, struct drm_npu_queue_abort)
#define DRM_IOCTL_NPU_TASKLIST_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_TASKLIST_CREATE, struct drm_npu_tasklist_create)
#define DRM_IOCTL_NPU_TASKLIST_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_TASKLIST_DESTROY, struct drm_npu_tasklist_destroy)
#define DRM_IOCTL_NPU_SUBMIT_MULTI \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_SUBMIT_MULTI, struct drm_npu_submit_multi)
#define DRM_IOCTL_NPU_CLOCK \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_CLOCK, struct drm_npu_clock)

/* Parameters readable with DRM_IOCTL_NPU_GET_PARAM. */
enum drm_npu_param {
	/* Kernel-device interface version: major << 16 | minor. */
	DRM_NPU_PARAM_IF_VERSION = 0,
	/* Firmware build: major << 16 | minor << 8 | patch. */
	DRM_NPU_PARAM_FW_VERSION = 1,
	/* Device capability bits: DRM_NPU_CAP_*, defined by the driver. */
	DRM_NPU_PARAM_DEVICE_CAPS = 2,
	/* Bytes of device memory (HBM), including the firmware's part. */
	DRM_NPU_PARAM_HBM_SIZE = 3,
	/* Bytes at the start of HBM that the firmware keeps for itself. */
	DRM_NPU_PARAM_HBM_RESERVED = 4,
	/* Hardware task-scheduler queues on the device. */
	DRM_NPU_PARAM_QUEUE_COUNT = 5,
	/* AI cores on the device. */
	DRM_NPU_PARAM_CORE_COUNT = 6,
	/* Firmware heartbeat counter; it advances while the firmware runs. */
	DRM_NPU_PARAM_FW_HEARTBEAT = 7,
	/* Heartbeat period in milliseconds. */
	DRM_NPU_PARAM_FW_HEARTBEAT_MS = 8,
	/*
	 * Reserved, never reused: was a firmware mailbox ping, now debugfs
	 * fw_ping (root only). GET_PARAM returns -EINVAL for it.
	 */
	DRM_NPU_PARAM_RESERVED_9 = 9,
	/* Bytes of HBM in use device-wide: buffers and page tables. */
	DRM_NPU_PARAM_HBM_USED = 10,
	/* Queues one context may have, its default queue included. */
	DRM_NPU_PARAM_QUEUES_PER_CONTEXT = 11,
	/*
	 * io_uring commands the driver takes: bit n set for DRM_NPU_URING_CMD_*
	 * number n (see below); 0 on kernels without io_uring.
	 */
	DRM_NPU_PARAM_URING_CMDS = 12,
	/* Events and notifies one context may hold (-EDQUOT past it). */
	DRM_NPU_PARAM_SYNCS_PER_CONTEXT = 13,
	/* Largest queue timeout_ms QUEUE_CREATE accepts. */
	DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS = 14,
	/*
	 * AI-core groups: kernel launches of different queues computing at
	 * once, each on its group's share of DRM_NPU_PARAM_CORE_COUNT cores.
	 */
	DRM_NPU_PARAM_CORE_GROUPS = 15,
	/* Copy engines: COPY and FILL tasks of different queues moving at once. */
	DRM_NPU_PARAM_DMA_ENGINES = 16,
};

/*
 * Capability bits of DRM_NPU_PARAM_DEVICE_CAPS. The driver defines them and
 * never passes the firmware's own bits through; unknown bits are 0.
 */
/* Test devices: faults can be injected through debugfs npu_inject (root). */
#define DRM_NPU_CAP_FAULT_INJECTION		(1ull << 0)
/* Task lists: TASKLIST_CREATE, DRM_NPU_TASK_RUN_LIST and SUBMIT_MULTI. */
#define DRM_NPU_CAP_TASK_LISTS			(1ull << 1)
/* QUEUE_CREATE takes a completion word (done_handle, done_offset). */
#define DRM_NPU_CAP_DONE_WORD			(1ull << 2)
/* QUEUE_CREATE takes a profiling ring (prof_handle...); DRM_NPU_CLOCK works. */
#define DRM_NPU_CAP_PROFILE			(1ull << 3)

/**
 * struct drm_npu_get_param - read one device parameter
 * @param: in, an enum drm_npu_param value; unknown values give -EINVAL
 * @flags: in, must be zero
 * @value: out, the parameter's value
 */
struct drm_npu_get_param {
	__u32 param;
	__u32 flags;
	__u64 value;
};

/*
 * Page policies for device memory. Large pages (2 MiB) cost fewer
 * translations; small pages (4 KiB) waste less memory.
 */
enum drm_npu_page_policy {
	/* 2 MiB pages for buffers over 1 MiB, 4 KiB pages otherwise or when
	 * no 2 MiB-aligned space is left. */
	DRM_NPU_BO_PAGE_HUGE_FIRST = 0,
	/* 2 MiB pages or -ENOMEM. */
	DRM_NPU_BO_PAGE_HUGE_ONLY = 1,
	/* 4 KiB pages. */
	DRM_NPU_BO_PAGE_NORMAL_ONLY = 2,
};

#define DRM_NPU_PAGE_SIZE_4K	(1u << 12)
#define DRM_NPU_PAGE_SIZE_2M	(1u << 21)

/*
 * Each open file is a context with its own device virtual address space;
 * buffers are placed in [DRM_NPU_VA_BASE, DRM_NPU_VA_END).
 */
#define DRM_NPU_VA_BASE		0x0000000100000000ull	/* 4 GiB: 0 is never valid */
#define DRM_NPU_VA_END		0x0000010000000000ull	/* 1 TiB */

/**
 * struct drm_npu_bo_create - allocate a buffer object in device memory
 * @size: in, bytes (> 0); out, rounded up to the page size
 * @flags: in, must be zero (placement flags will come here)
 * @page_policy: in, an enum drm_npu_page_policy
 * @handle: out, GEM handle
 * @page_size: out, DRM_NPU_PAGE_SIZE_4K or DRM_NPU_PAGE_SIZE_2M
 * @device_va: out, the buffer's address in this context's device VA space
 *
 * New buffers read as zeros. Errors: -EINVAL for a zero size, unknown
 * flags or policy; -ENOMEM when device memory or VA space cannot hold it.
 */
struct drm_npu_bo_create {
	__u64 size;
	__u32 flags;
	__u32 page_policy;
	__u32 handle;
	__u32 page_size;
	__u64 device_va;
};

/**
 * struct drm_npu_bo_info - what a buffer object is
 * @handle: in
 * @flags: in, must be zero
 * @mmap_offset: out, offset to mmap() on the device node for CPU access
 *               (write-combined)
 * @device_va: out
 * @size: out, bytes (a multiple of page_size)
 * @bo_flags: out, the flags it was created with
 * @page_size: out
 *
 * Errors: -ENOENT for an unknown handle, -EINVAL for nonzero flags.
 */
struct drm_npu_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 mmap_offset;
	__u64 device_va;
	__u64 size;
	__u32 bo_flags;
	__u32 page_size;
};

/* The device may only read registered memory (it may be read-only). */
#define DRM_NPU_USERPTR_READ_ONLY	(1u << 0)

/**
 * struct drm_npu_userptr - register host memory for device access
 * @addr: in, page-aligned start of the caller's memory
 * @size: in, page-aligned bytes (> 0)
 * @flags: in, DRM_NPU_USERPTR_* bits
 * @handle: out, a GEM handle; DRM_IOCTL_GEM_CLOSE unregisters
 * @device_va: out, where this context's device sees the memory
 *
 * The pages are pinned, counted against RLIMIT_MEMLOCK (unless the caller
 * has CAP_IPC_LOCK), and stay pinned until the handle is closed and no
 * work in flight uses them. The buffer has no mmap offset: the caller
 * already has the memory.
 *
 * Errors: -EINVAL unaligned or zero @addr/@size, unknown flags, nonzero
 * out fields; -EFAULT memory that is not there, or read-only without
 * DRM_NPU_USERPTR_READ_ONLY; -EEXIST the range overlaps memory this context
 * has registered already; -ENOMEM over RLIMIT_MEMLOCK or out of VA space.
 */
struct drm_npu_userptr {
	__u64 addr;
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 device_va;
};

/* Where device-visible memory lives, for usage accounting. */
enum drm_npu_mem_region {
	DRM_NPU_MEM_REGION_HBM = 0,		/* buffer objects in HBM */
	DRM_NPU_MEM_REGION_HOST = 1,	/* host memory registered for DMA */
	DRM_NPU_MEM_REGION_PAGE_TABLES = 2,	/* device page tables, in HBM */
	DRM_NPU_MEM_REGION_QUEUES = 3,	/* task rings, in HBM */
	DRM_NPU_MEM_REGION_COUNT = 4,
};

/**
 * struct drm_npu_mem_usage - memory in use, in bytes, per region
 * @flags: must be zero
 * @pad: must be zero
 * @ctx_current: out, held by buffers this file's context created
 * @ctx_peak: out, the most @ctx_current has been
 * @dev_current: out, device-wide
 * @dev_peak: out, device-wide, since the driver was loaded
 */
struct drm_npu_mem_usage {
	__u32 flags;
	__u32 pad;
	__u64 ctx_current[DRM_NPU_MEM_REGION_COUNT];
	__u64 ctx_peak[DRM_NPU_MEM_REGION_COUNT];
	__u64 dev_current[DRM_NPU_MEM_REGION_COUNT];
	__u64 dev_peak[DRM_NPU_MEM_REGION_COUNT];
};

/*
 * Device work. Each context has a queue (created on its first submit)
 * whose tasks the device runs in order.
 */
enum drm_npu_task_type {
	DRM_NPU_TASK_NOP = 0,
	/* args[0] dst VA, args[1] src VA, args[2] bytes (> 0) */
	DRM_NPU_TASK_COPY = 1,
	/* args[0] dst VA, args[1] bytes (> 0, multiple of 4),
	 * args[2] 32-bit pattern (upper bits zero) */
	DRM_NPU_TASK_FILL = 2,
	/* args[0] VA of an argument block for the firmware's op library
	 * (not a kernel ABI: firmware-sim/oplib/npu_oplib.h), args[1] how many AI
	 * cores to split it across (0: all, at most DRM_NPU_MAX_BLOCK_DIM),
	 * args[2] the block's size in bytes, 1..DRM_NPU_KERNEL_ARGS_MAX: the
	 * driver keeps exactly [args[0], args[0] + args[2]) mapped while the
	 * launch runs and the device reads no more than that */
	DRM_NPU_TASK_KERNEL = 4,
	/* args[0] VA: the device writes its clock there (u64, ns; 8-aligned) */
	DRM_NPU_TASK_TIMESTAMP = 5,
	/* everything before it on the queue has completed */
	DRM_NPU_TASK_BARRIER = 6,
	/* args[0] an event of this context: record (stamping the device
	 * clock), wait for a record (blocking the queue on the device, not
	 * the host), reset */
	DRM_NPU_TASK_EVENT_RECORD = 7,
	DRM_NPU_TASK_EVENT_WAIT = 8,
	DRM_NPU_TASK_EVENT_RESET = 9,
	/* args[0] a notify this context holds: a record releases exactly one
	 * wait (auto-reset); records made before a wait are not lost */
	DRM_NPU_TASK_NOTIFY_RECORD = 10,
	DRM_NPU_TASK_NOTIFY_WAIT = 11,
	/* args[0] a task list of this context (DRM_NPU_TASKLIST_CREATE),
	 * args[1] pointer to the run's I/O table: args[2] __u64 device
	 * addresses, one per I/O slot of the list (args[2] must be its
	 * slot count, 0 to DRM_NPU_TASKLIST_MAX_SLOTS; with 0, args[1] must
	 * be 0 too, since driver 0.2). The list's tasks run
	 * here, in order, with the addresses patched in; the table is read
	 * at submit. Not allowed inside a list. */
	DRM_NPU_TASK_RUN_LIST = 12,
};

#define DRM_NPU_MAX_BLOCK_DIM		64
#define DRM_NPU_KERNEL_ARGS_MAX		4096

/**
 * struct drm_npu_obj_array - an array of structs that may grow
 * @stride: bytes from one element to the next: sizeof the element struct
 *          the caller was built with, at least the size of its first
 *          version (-EINVAL otherwise). As for an ioctl's struct, the
 *          kernel reads fields it knows of past a shorter stride as zero,
 *          and bytes of a longer one it does not know of must be zero
 *          (-E2BIG otherwise). Output fields are written at the stride.
 * @count: elements
 * @array: in, pointer to the first
 *
 * DRM_NPU_OBJ_ARRAY(n, p) fills one for n elements at p.
 */
struct drm_npu_obj_array {
	__u32 stride;
	__u32 count;
	__u64 array;
};

#define DRM_NPU_OBJ_ARRAY(n, p) \
	{ .stride = sizeof((p)[0]), .count = (n), .array = (__u64)(unsigned long)(p) }

/*
 * Task lists (with DRM_NPU_CAP_TASK_LISTS): a model's tasks, checked and
 * stored in device memory once, then run with one DRM_NPU_TASK_RUN_LIST
 * task each time, on whichever queue of the context gets it.
 *
 * Each run binds the list's I/O slots to device addresses (its I/O
 * table); patch entries say where those addresses go: into a task's
 * argument, or into a KERNEL task's argument block (in the device's copy
 * of it: the block in memory never changes). A patched argument must be 0
 * in the list. The list keeps every buffer, event and notify its tasks
 * name alive for its life; a run keeps the list and each slot's range,
 * [address, address + size), alive until it completes.
 */
#define DRM_NPU_TASKLIST_MAX_TASKS	65536
#define DRM_NPU_TASKLIST_MAX_PATCHES	262144
#define DRM_NPU_TASKLIST_MAX_SLOTS	256

/* The list's tasks may write the slot (COPY and FILL destinations, TIMESTAMP). */
#define DRM_NPU_IO_SLOT_WRITE		(1u << 0)

/**
 * struct drm_npu_io_slot - one input or output of a task list
 * @size: bytes every address bound to it must provide (> 0)
 * @flags: DRM_NPU_IO_SLOT_* bits
 * @pad: must be zero
 */
struct drm_npu_io_slot {
	__u64 size;
	__u32 flags;
	__u32 pad;
};

enum drm_npu_patch_kind {
	/* @field: an address argument of the task (COPY 0 and 1, FILL 0,
	 * KERNEL 0, TIMESTAMP 0); the range it addresses must lie in the
	 * slot: @offset plus the task's length (COPY and KERNEL args[2],
	 * FILL args[1], TIMESTAMP 8) at most the slot's size */
	DRM_NPU_PATCH_TASK_ARG = 0,
	/* @field: a byte offset in the KERNEL task's argument block,
	 * 8-aligned, the 8 bytes inside args[2]; @offset below the slot's
	 * size */
	DRM_NPU_PATCH_KERNEL_ARGS = 1,
};

/**
 * struct drm_npu_patch - where a run's I/O address goes
 * @task: index of the task in the list
 * @kind: an enum drm_npu_patch_kind
 * @slot: the I/O slot whose address is written
 * @field: what is written, per @kind
 * @flags: must be zero
 * @offset: added to the slot's address
 *
 * Entries are sorted by (@task, @kind, @field), each at most once.
 */
struct drm_npu_patch {
	__u32 task;
	__u16 kind;
	__u16 slot;
	__u32 field;
	__u32 flags;
	__u64 offset;
};

/**
 * struct drm_npu_tasklist_create - check a task list and store it on the device
 * @tasks: in, 1..DRM_NPU_TASKLIST_MAX_TASKS struct drm_npu_task
 * @patches: in, at most DRM_NPU_TASKLIST_MAX_PATCHES struct drm_npu_patch
 * @slots: in, at most DRM_NPU_TASKLIST_MAX_SLOTS struct drm_npu_io_slot
 * @flags: in, must be zero
 * @handle: out, the list's handle in this context (for RUN_LIST)
 *
 * Tasks are checked as SUBMIT checks them, once; RUN_LIST is not allowed
 * in a list. The list takes device memory (counted as
 * DRM_NPU_MEM_REGION_QUEUES) and is mapped read-only for the device.
 *
 * Errors: -EINVAL a malformed task, patch, slot or array (nothing is
 * created); -E2BIG an element longer than the kernel knows with nonzero
 * bytes past its end, or tasks that name more than 4096 buffers;
 * -EOPNOTSUPP the device has no task lists; -EFAULT; -EDQUOT the context
 * holds DRM_NPU_TASKLISTS_PER_CONTEXT lists; -ENOMEM.
 */
struct drm_npu_tasklist_create {
	struct drm_npu_obj_array tasks;
	struct drm_npu_obj_array patches;
	struct drm_npu_obj_array slots;
	__u32 flags;
	__u32 handle;
};

#define DRM_NPU_TASKLISTS_PER_CONTEXT	1024

/*
 * Drop a task list: runs in flight keep it until they complete. -EINVAL
 * for a handle this context does not have. @flags must be zero.
 */
struct drm_npu_tasklist_destroy {
	__u32 handle;
	__u32 flags;
};

/**
 * struct drm_npu_task - one task
 * @type: an enum drm_npu_task_type
 * @flags: must be zero
 * @pad: must be zero
 * @args: per type; arguments a type does not use must be zero
 *
 * Addresses are device VAs of this context: buffers, registered host
 * memory. An address the context did not map faults on the device.
 */
struct drm_npu_task {
	__u16 type;
	__u16 flags;
	__u32 pad;
	__u64 args[7];
};

/*
 * Waits (DRM_NPU_WAIT, DRM_NPU_EVENT_WAIT and the io_uring WAIT and
 * EVENT_WAIT commands) take an absolute deadline, @deadline_ns: a time of
 * CLOCK_MONOTONIC (clock_gettime(), in nanoseconds), as
 * DRM_IOCTL_SYNCOBJ_WAIT does. A deadline at or before the present
 * (0 and negative values included) polls: the wait returns at once, with
 * -ETIMEDOUT if what it waits for has not happened.
 * DRM_NPU_DEADLINE_NONE waits without limit. The kernel never writes the
 * deadline back: a wait interrupted by a signal and restarted (SA_RESTART,
 * or the caller calling again with the same struct) keeps its deadline.
 */
#define DRM_NPU_DEADLINE_NONE	((__s64)0x7fffffffffffffffll)

/*
 * Queues. Every context has a default queue, id 0, created on first use
 * at normal priority; DRM_NPU_QUEUE_CREATE adds more. The device runs the
 * runnable queues of the highest priority first and shares fairly
 * (one task each in turn) among equal priorities.
 */
enum drm_npu_queue_priority {
	DRM_NPU_QUEUE_PRIORITY_LOW = 0,
	DRM_NPU_QUEUE_PRIORITY_NORMAL = 1,
	DRM_NPU_QUEUE_PRIORITY_HIGH = 2,		/* needs CAP_SYS_NICE */
	DRM_NPU_QUEUE_PRIORITY_REALTIME = 3,	/* needs CAP_SYS_NICE */
};

#define DRM_NPU_QUEUE_DEPTH_DEFAULT	1024
#define DRM_NPU_QUEUE_DEPTH_MIN	512	/* a full batch and its fence fit */
#define DRM_NPU_QUEUE_DEPTH_MAX	65536

/**
 * struct drm_npu_queue_create - add a queue to this context
 * @priority: in, an enum drm_npu_queue_priority
 * @depth: in, tasks the ring holds: 0 for DRM_NPU_QUEUE_DEPTH_DEFAULT, else a
 *         power of two from DRM_NPU_QUEUE_DEPTH_MIN to DRM_NPU_QUEUE_DEPTH_MAX
 * @flags: in, must be zero
 * @queue: out, the queue's id for SUBMIT and WAIT (never 0)
 * @timeout_ms: in, how long one of the queue's tasks may execute on the
 *              device without finishing before the queue is declared
 *              hung: 0 for the driver's default (module parameter
 *              job_timeout_ms), at most DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS.
 *              Time waiting on events or behind other queues is not
 *              execution.
 * @pad: must be zero
 * @done_handle: in, 0 or (with DRM_NPU_CAP_DONE_WORD) a buffer object of
 *               this file in device memory (not USERPTR) that holds the
 *               queue's completion word
 * @pad2: must be zero
 * @done_offset: in, where in that buffer the word is: 8-aligned, the 8
 *               bytes inside it; 0 without a done_handle
 * @prof_handle: in, 0 or (with DRM_NPU_CAP_PROFILE) a buffer object of
 *               this file in device memory (not USERPTR) that holds the
 *               queue's profiling ring
 * @prof_entries: in, the ring's records: a power of two from
 *                DRM_NPU_PROF_MIN to DRM_NPU_PROF_MAX; 0 without a
 *                prof_handle
 * @prof_offset: in, where in that buffer the ring's struct
 *               drm_npu_prof_ring is: 64-aligned, the header and its
 *               records inside it; 0 without a prof_handle
 *
 * The completion word is a little-endian u64 that the device sets to a
 * batch's seq when the batch completes, before the completion interrupt:
 * a thread that reads it from its CPU mapping of the buffer sees a
 * completion without a system call (WAIT and the io_uring commands stay
 * the way to learn of a failure). QUEUE_CREATE sets it to 0, and the
 * queue keeps the buffer until it is destroyed. Several queues may
 * share a buffer, at different offsets.
 *
 * The profiling ring gets a struct drm_npu_prof_record for each task the
 * queue completes while the ring's enable is set (see struct
 * drm_npu_prof_ring). Unlike the completion word the kernel leaves the
 * ring's contents alone: the process sets it up, before or after, and
 * several queues may share one ring (the records' tag is the queue's
 * id). The queue keeps the buffer until it is destroyed.
 *
 * Errors: -EINVAL bad priority, depth, time limit, flags, completion
 * word or profiling ring (no such buffer, host memory, offset, size), or
 * one the device cannot write; -EPERM HIGH or REALTIME without CAP_SYS_NICE;
 * -EBUSY the context or the device has no queue left; -ENOMEM.
 */
struct drm_npu_queue_create {
	__u32 priority;
	__u32 depth;
	__u32 flags;
	__u32 queue;
	__u32 timeout_ms;
	__u32 pad;
	__u32 done_handle;
	__u32 pad2;
	__u64 done_offset;
	__u32 prof_handle;
	__u32 prof_entries;
	__u64 prof_offset;
};

#define DRM_NPU_PROF_MIN	16
#define DRM_NPU_PROF_MAX	(1u << 20)

/**
 * struct drm_npu_prof_ring - the header of a profiling ring
 * @enable: written by the process: the device records while it is not 0
 *          (a disabled ring costs the device nothing but its bookkeeping)
 * @tail: written by the process: the records it has consumed
 * @head: written by the device: the records it has written
 * @dropped: written by the device: records lost because the ring was
 *           full (head - tail == entries)
 * @reserved: zero (the kernel cannot check: a later meaning is asked for
 *            with a QUEUE_CREATE flag)
 *
 * The counters run free and wrap at 2^32; record i lives at index
 * i % entries of the array that follows the header. The device writes
 * a record, then head (release): a reader loads head (acquire), reads
 * up to it, then stores tail.
 */
struct drm_npu_prof_ring {
	__u32 enable;
	__u32 tail;
	__u32 head;
	__u32 dropped;
	__u32 reserved[12];
};

/* A record's unit: its kind in bits 6-7, the unit's index in bits 0-5. */
#define DRM_NPU_UNIT_SCHEDULER	0x00	/* sync tasks, small launches */
#define DRM_NPU_UNIT_DMA	0x40	/* | a copy engine */
#define DRM_NPU_UNIT_CORES	0x80	/* | an AI-core group */
#define DRM_NPU_UNIT_KIND(u)	((u) & 0xc0)
#define DRM_NPU_UNIT_INDEX(u)	((u) & 0x3f)

#define DRM_NPU_PROF_IN_LIST	(1u << 0)	/* a task of the RUN_LIST at index */

/**
 * struct drm_npu_prof_record - one task, as the device ran it
 * @seq: the batch it belonged to (low 32 bits of SUBMIT's seq)
 * @index: its index in the batch's tasks
 * @type: its enum drm_npu_task_type
 * @unit: where it executed: DRM_NPU_UNIT_*
 * @list_pos: with DRM_NPU_PROF_IN_LIST, its index in the RUN_LIST's list
 * @tag: the queue's id (unique within its context)
 * @flags: DRM_NPU_PROF_*
 * @pad: zero
 * @start_ns: device clock (see DRM_NPU_CLOCK): it began executing, or,
 *            for EVENT_WAIT and NOTIFY_WAIT, began holding its queue up
 * @end_ns: device clock: it completed
 *
 * A failed batch's failing task has no record, nor do the tasks after
 * it.
 */
struct drm_npu_prof_record {
	__u32 seq;
	__u16 index;
	__u8 type;
	__u8 unit;
	__u32 list_pos;
	__u16 tag;
	__u8 flags;
	__u8 pad;
	__u64 start_ns;
	__u64 end_ns;
};

/**
 * struct drm_npu_clock - relate the device clock to CLOCK_MONOTONIC
 * @flags: in, must be zero
 * @pad: must be zero
 * @device_ns: out, the device clock (profiling records, TIMESTAMP tasks,
 *             event stamps) at ...
 * @host_ns: out, ... this CLOCK_MONOTONIC time
 * @window_ns: out, how far off the pair may be: the device read its
 *             clock within host_ns +- window_ns / 2
 *
 * The driver measures the pair with the firmware at most once a second
 * for all its users and answers from that; the clocks run at the same
 * rate, so host = device - device_ns + host_ns. A measurement that failed
 * is answered for that second too. Errors: -EINVAL flags, padding, or a
 * device without DRM_NPU_CAP_PROFILE; -ENODEV; -EIO the device is wedged;
 * -ETIMEDOUT or -EPROTO the firmware did not answer right; -EINTR.
 */
struct drm_npu_clock {
	__u32 flags;
	__u32 pad;
	__u64 device_ns;
	__u64 host_ns;
	__u64 window_ns;
};

/**
 * struct drm_npu_queue_destroy - remove a queue
 * @queue: in, an id from QUEUE_CREATE
 * @flags: in, must be zero
 *
 * Work still queued is stopped and fails with DRM_NPU_JOB_ABORTED; waiters
 * wake. The default queue (0) may be destroyed too; it comes back on its
 * next use. Errors: -EINVAL for a queue this context does not have.
 */
struct drm_npu_queue_destroy {
	__u32 queue;
	__u32 flags;
};

/**
 * struct drm_npu_queue_abort - stop a queue's work and keep the queue
 * @queue: in, an id from QUEUE_CREATE
 * @flags: in, must be zero
 *
 * As QUEUE_DESTROY, but the queue stays, in the failed state (submits
 * get -EIO), until it is destroyed. Errors: -EINVAL for a queue this
 * context does not have.
 */
struct drm_npu_queue_abort {
	__u32 queue;
	__u32 flags;
};

/*
 * A syncobj a submit waits for or signals. point 0 is a binary syncobj;
 * a nonzero point is a timeline point.
 */
struct drm_npu_syncobj {
	__u32 handle;
	__u32 flags;		/* must be zero */
	__u64 point;
};

#define DRM_NPU_SUBMIT_MAX_SYNCOBJS	16
/*
 * Events and notifies: device-side sync objects, used by tasks.
 * An event is recorded (with a device timestamp) and waited for; it stays
 * recorded until reset. A notify counts records; each wait consumes one.
 * Events belong to the context that created them; notifies can be shared
 * with other processes as file descriptors.
 */
enum drm_npu_sync_kind {
	DRM_NPU_SYNC_EVENT = 1,
	DRM_NPU_SYNC_NOTIFY = 2,
};

/**
 * struct drm_npu_sync_create - create an event or a notify
 * @kind: in, an enum drm_npu_sync_kind
 * @flags: in, must be zero
 * @id: out, its id, for tasks and the calls below
 * @pad: must be zero
 *
 * Errors: -EINVAL; -ENOSPC the device's table is full.
 */
struct drm_npu_sync_create {
	__u32 kind;
	__u32 flags;
	__u32 id;
	__u32 pad;
};

/*
 * Drop this context's hold of an event or notify: -EINVAL if it has none.
 * @flags must be zero.
 */
struct drm_npu_sync_destroy {
	__u32 id;
	__u32 flags;
};

/**
 * struct drm_npu_event_query - an event's state
 * @id: in
 * @flags: in, must be zero
 * @timestamp_ns: out, the device clock at its last record
 * @recorded: out, 1 once recorded (until reset), else 0
 * @pad: must be zero
 */
struct drm_npu_event_query {
	__u32 id;
	__u32 flags;
	__u64 timestamp_ns;
	__u32 recorded;
	__u32 pad;
};

/**
 * struct drm_npu_event_wait - wait on the host for an event to be recorded
 * @id: in
 * @flags: in, must be zero
 * @deadline_ns: in, absolute CLOCK_MONOTONIC (see DRM_NPU_DEADLINE_NONE)
 *
 * Returns 0 once recorded, -ETIMEDOUT, -EIO if the device was reset
 * meanwhile, -ENODEV once it is unbound, -EINTR.
 */
struct drm_npu_event_wait {
	__u32 id;
	__u32 flags;
	__s64 deadline_ns;
};

/* Share a notify: @fd (out) gives whoever holds it access to it. */
struct drm_npu_notify_export {
	__u32 id;
	__u32 flags;		/* must be zero */
	__s32 fd;
	__u32 pad;
};

/* Take a notify from an exported fd: @id (out) is its id here. */
struct drm_npu_notify_import {
	__s32 fd;
	__u32 flags;		/* must be zero */
	__u32 id;
	__u32 pad;
};

#define DRM_NPU_SUBMIT_MAX_TASKS	256

/**
 * struct drm_npu_submit - queue a batch of tasks
 * @tasks: in, pointer to @count struct drm_npu_task
 * @count: in, 1..DRM_NPU_SUBMIT_MAX_TASKS
 * @flags: in, must be zero
 * @seq: out, the batch's sequence number on that queue
 * @queue: in, the queue: 0 for the default one, or an id from QUEUE_CREATE
 * @pad: must be zero
 * @in_syncobjs: in, pointer to @in_count struct drm_npu_syncobj whose
 *               fences the batch depends on: it gets its number at once
 *               and runs once they have signalled (the submit does not
 *               wait for them)
 * @out_syncobjs: in, pointer to @out_count struct drm_npu_syncobj that get
 *                the batch's fence; it signals when the batch completes,
 *                with an error if it failed or was aborted
 * @in_count, @out_count: in, at most DRM_NPU_SUBMIT_MAX_SYNCOBJS each
 *
 * Buffers the tasks touch stay alive until the batch completes, even if
 * they are closed; what the batch kept alive is released shortly after
 * its waiters are woken. A full ring holds the batch in the queue's
 * scheduler without the submit waiting; only a queue that already holds
 * 16 rings' worth of batches not yet freed makes it wait for
 * room (interruptibly).
 *
 * Errors: -EINVAL malformed tasks or syncobj entries (nothing is
 * queued); -ENOENT an unknown syncobj handle or point; -EFAULT bad
 * pointers; -E2BIG the tasks' ranges cover more than 4096 buffers or
 * unmapped stretches, or the context's work in flight holds too many
 * of the latter (uapi.rst); -EIO
 * the queue failed earlier and takes no more work; -EBUSY no hardware
 * queue is free; -ENOMEM; -EINTR.
 */
struct drm_npu_submit {
	__u64 tasks;
	__u32 count;
	__u32 flags;
	__u64 seq;
	__u32 queue;
	__u32 pad;
	__u64 in_syncobjs;
	__u64 out_syncobjs;
	__u32 in_count;
	__u32 out_count;
};

enum drm_npu_job_status {
	DRM_NPU_JOB_DONE = 0,
	DRM_NPU_JOB_FAULT = 1,		/* MMU fault: see fault_* */
	DRM_NPU_JOB_INVALID = 2,		/* the device rejected a task */
	DRM_NPU_JOB_ABORTED = 3,		/* the device went away */
	DRM_NPU_JOB_KERNEL_ERROR = 4,	/* a kernel launch had bad arguments */
	DRM_NPU_JOB_TIMEOUT = 5,		/* a task executed past its queue's time limit */
	DRM_NPU_JOB_RESET = 6,		/* the device was reset (firmware stopped) */
};

/**
 * struct drm_npu_wait - wait for a batch
 * @seq: in, from drm_npu_submit
 * @deadline_ns: in, absolute CLOCK_MONOTONIC (see DRM_NPU_DEADLINE_NONE)
 * @queue: in, the queue the batch was submitted to (0: the default one)
 * @flags: in, must be zero
 * @status: out, an enum drm_npu_job_status
 * @error_task: out, for a failed batch the index of the task that failed
 * @fault_address: out, for DRM_NPU_JOB_FAULT the device VA
 * @fault_access: out, 0 read, 1 write
 * @pad: must be zero
 * @error_list_task: out, for a failed batch whose failing task is a
 *                   RUN_LIST the index in its list of the task that
 *                   failed (or was running when the queue was stopped),
 *                   else DRM_NPU_NO_LIST_TASK
 * @pad2: must be zero
 *
 * Returns 0 when the batch completed, -EIO when it (or an earlier one)
 * failed, with the out fields saying how, -ETIMEDOUT when it did not
 * finish in time, -EINVAL for a @seq never handed out or an unknown
 * @queue, -EINTR.
 */
struct drm_npu_wait {
	__u64 seq;
	__s64 deadline_ns;
	__u32 queue;
	__u32 flags;
	__u32 status;
	__u32 error_task;
	__u64 fault_address;
	__u32 fault_access;
	__u32 pad;
	__u32 error_list_task;
	__u32 pad2;
};

/* error_list_task when the failing task is not a RUN_LIST. */
#define DRM_NPU_NO_LIST_TASK		0xffffffffu

#define DRM_NPU_SUBMIT_MULTI_MAX	8

/**
 * struct drm_npu_submit_entry - one queue's part of a DRM_NPU_SUBMIT_MULTI
 * @tasks: in, pointer to @count struct drm_npu_task, as SUBMIT's
 * @count: in, 1..DRM_NPU_SUBMIT_MAX_TASKS
 * @queue: in, a queue of the context, as SUBMIT's
 * @flags: in, must be zero
 * @pad: must be zero
 * @seq: out, the batch's sequence number on its queue (its value on the
 *       way in is ignored, so an array can be submitted again as it is)
 */
struct drm_npu_submit_entry {
	__u64 tasks;
	__u32 count;
	__u32 queue;
	__u32 flags;
	__u32 pad;
	__u64 seq;
};

/**
 * struct drm_npu_submit_multi - batches on several queues as one run
 * @entries: in, 1..DRM_NPU_SUBMIT_MULTI_MAX struct drm_npu_submit_entry,
 *           each on a different queue; each entry's @seq is written back
 * @flags: in, must be zero
 * @pad: must be zero
 * @in_syncobjs, @out_syncobjs, @in_count, @out_count: in, as for SUBMIT:
 *           every batch waits for the in-syncobjs; the out-syncobjs get
 *           one fence, signalled when every batch has completed (with the
 *           first error if one failed)
 *
 * All batches are checked and queued together, or none is. They are one
 * run: when one fails, the queues of the others are stopped (their work
 * fails with DRM_NPU_JOB_ABORTED), so no batch waits for a partner
 * that will never come (a model's queues join through notifies).
 *
 * Errors: as SUBMIT; -EINVAL also for two entries on one queue or a
 * malformed array, -E2BIG for an entry longer than the kernel knows with
 * nonzero bytes past its end; -EFAULT when an entry's @seq cannot be
 * written back, after the run was queued.
 */
struct drm_npu_submit_multi {
	struct drm_npu_obj_array entries;
	__u32 flags;
	__u32 pad;
	__u64 in_syncobjs;
	__u64 out_syncobjs;
	__u32 in_count;
	__u32 out_count;
};

/*
 * io_uring commands: IORING_OP_URING_CMD on an open device node.
 *
 * The ring must be created with IORING_SETUP_SQE128 and
 * IORING_SETUP_CQE32 (each command is rejected with -EINVAL otherwise);
 * IORING_SETUP_IOPOLL is not supported. sqe->cmd_op is one of the
 * DRM_NPU_URING_CMD_* below and the payload struct sits in sqe->cmd (80
 * bytes). The payload is read once, when the command is issued.
 *
 * The cmd_op encodes the payload size the caller was built with, like an
 * ioctl number: the kernel zero-extends a shorter payload and requires
 * the bytes it does not know of a longer one to be zero. Unknown command
 * numbers, flags and non-zero padding are -EINVAL.
 *
 * Each command posts one CQE: cqe->res is 0 or a negative errno and
 * big_cqe[0] (the first extra 64 bits of the CQE32) is the second result:
 *
 *  - on success, what the command says (a sequence number, a timestamp);
 *  - when a batch failed on the device: DRM_NPU_URING_RES2(status, task),
 *    the enum drm_npu_job_status and the index of the failing task in its
 *    batch; DRM_IOCTL_NPU_WAIT on the same sequence number gives the fault
 *    address;
 *  - otherwise 0.
 *
 * Commands that wait are parked in the kernel. They are cancelled with
 * -ECANCELED when their queue is aborted or destroyed, when their ring is
 * closed and when the task that submitted them exits; a device reset
 * completes them with -EIO and DRM_NPU_JOB_RESET. A context may have at most
 * DRM_NPU_URING_MAX_PARKED commands parked (-EBUSY beyond).
 */
#define DRM_NPU_URING_MAX_PARKED	65536
/* ... and a device at most this many, all contexts together. */
#define DRM_NPU_URING_MAX_PARKED_DEVICE	(4 * DRM_NPU_URING_MAX_PARKED)

#define DRM_NPU_URING_RES2(status, task)	(((__u64)(status) << 32) | (__u32)(task))
#define DRM_NPU_URING_RES2_STATUS(res2)	((__u32)((res2) >> 32))
#define DRM_NPU_URING_RES2_TASK(res2)	((__u32)(res2))

/*
 * DRM_NPU_URING_CMD_SUBMIT: struct drm_npu_submit, checked exactly as the
 * ioctl checks it (@seq must be zero: it is an output there). The CQE
 * arrives when the batch completes on the device: res 0 and res2 its
 * sequence number, or res -EIO (-ECANCELED if aborted) and res2 saying
 * how it failed. Errors that reject the batch before it is queued are
 * those of DRM_IOCTL_NPU_SUBMIT, posted at once with res2 = 0. Like the
 * ioctl it never waits for in-syncobjs or ring room, so SUBMITs reach the
 * device in issue order; only where the ioctl would wait (a queue holding
 * its whole backlog) an io_uring worker finishes the command, and later
 * SUBMITs to that queue may overtake it.
 */

/**
 * struct drm_npu_uring_wait - DRM_NPU_URING_CMD_WAIT: wait for a sequence number
 * @seq: a sequence number the queue handed out (0: nothing to wait for)
 * @deadline_ns: absolute CLOCK_MONOTONIC (see DRM_NPU_DEADLINE_NONE)
 * @queue: the queue (0: the default one)
 * @flags: must be zero
 *
 * Completes when the queue's batches up to @seq completed: res 0, res2
 * @seq. -EIO or -ECANCELED with res2 as for SUBMIT when one of them
 * failed, -ETIMEDOUT when @deadline_ns passed first, -EINVAL for an
 * unknown queue or a @seq not handed out yet.
 */
struct drm_npu_uring_wait {
	__u64 seq;
	__s64 deadline_ns;
	__u32 queue;
	__u32 flags;
};

/**
 * struct drm_npu_uring_event_wait - DRM_NPU_URING_CMD_EVENT_WAIT
 * @deadline_ns: absolute CLOCK_MONOTONIC (see DRM_NPU_DEADLINE_NONE)
 * @id: an event of this context
 * @flags: must be zero
 *
 * Completes when the event is recorded: res 0, res2 the device timestamp
 * of the record (ns). -ETIMEDOUT when @deadline_ns passed first, -EINVAL
 * for an id that is not one of the caller's events.
 */
struct drm_npu_uring_event_wait {
	__s64 deadline_ns;
	__u32 id;
	__u32 flags;
};

#define DRM_NPU_URING_CMD_BASE		0x40
#define DRM_NPU_URING_CMD_SUBMIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 0x0, struct drm_npu_submit)
#define DRM_NPU_URING_CMD_WAIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 0x1, struct drm_npu_uring_wait)
#define DRM_NPU_URING_CMD_EVENT_WAIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 0x2, struct drm_npu_uring_event_wait)

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_NPU_ACCEL_H_ */
