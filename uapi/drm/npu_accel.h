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

#define DRM_IOCTL_NPU_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_PARAM, struct drm_npu_get_param)

/* Parameters readable with DRM_IOCTL_NPU_GET_PARAM. */
enum drm_npu_param {
	/* Kernel-device interface version: major << 16 | minor. */
	NPU_PARAM_IF_VERSION = 0,
	/* Firmware build: major << 16 | minor << 8 | patch. */
	NPU_PARAM_FW_VERSION = 1,
	/* Device capability bits (none defined yet). */
	NPU_PARAM_DEVICE_CAPS = 2,
	/* Bytes of device memory (HBM), including the firmware's part. */
	NPU_PARAM_HBM_SIZE = 3,
	/* Bytes at the start of HBM that the firmware keeps for itself. */
	NPU_PARAM_HBM_RESERVED = 4,
	/* Hardware task-scheduler queues on the device. */
	NPU_PARAM_QUEUE_COUNT = 5,
	/* AI cores on the device. */
	NPU_PARAM_CORE_COUNT = 6,
	/* Firmware heartbeat counter; it advances while the firmware runs. */
	NPU_PARAM_FW_HEARTBEAT = 7,
	/* Heartbeat period in milliseconds. */
	NPU_PARAM_FW_HEARTBEAT_MS = 8,
	/*
	 * Sends the firmware a mailbox PING now and returns its round trip in
	 * nanoseconds; -ETIMEDOUT when the firmware does not answer.
	 */
	NPU_PARAM_FW_PING_NS = 9,
};

/**
 * struct drm_npu_get_param - read one device parameter
 * @param: in, an enum drm_npu_param value; unknown values give -EINVAL
 * @pad: must be zero
 * @value: out, the parameter's value
 */
struct drm_npu_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_NPU_ACCEL_H_ */
