/* SPDX-License-Identifier: MIT */
/*
 * libnpurt - the NPU runtime.
 *
 * Conventions:
 *  - Every function that can fail returns an npurt_status. NPURT_OK is 0.
 *    On failure, npurt_last_error() returns a message with the context
 *    (which call, which device, what the kernel said). The message is
 *    per thread and stays until the next failing call in that thread.
 *  - Handles are opaque. A handle is used by one thread at a time unless
 *    its functions say otherwise.
 *  - Out-parameters are written only on success.
 */
#ifndef NPURT_H
#define NPURT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NPURT_API __attribute__((visibility("default")))
#else
#define NPURT_API
#endif

#define NPURT_VERSION_MAJOR 0
#define NPURT_VERSION_MINOR 1
#define NPURT_VERSION_PATCH 0

typedef enum npurt_status {
	NPURT_OK = 0,
	NPURT_ERR_INVALID = 1,		/* bad argument */
	NPURT_ERR_NO_DEVICE = 2,	/* no such NPU, or it went away */
	NPURT_ERR_PERMISSION = 3,	/* the device node cannot be opened */
	NPURT_ERR_NO_MEMORY = 4,	/* host or device memory exhausted */
	NPURT_ERR_TIMEOUT = 5,		/* the device did not answer in time */
	NPURT_ERR_DEVICE = 6,		/* the device or driver reported an error */
	NPURT_ERR_UNSUPPORTED = 7,	/* driver or firmware too old for this */
	NPURT_ERR_INTERNAL = 8,		/* a bug in libnpurt */
} npurt_status;

/* The last failure's message in this thread, or "" if none. Never NULL. */
NPURT_API const char *npurt_last_error(void);

/* A constant name for a status: "NPURT_ERR_TIMEOUT". Never NULL. */
NPURT_API const char *npurt_status_name(npurt_status status);

/* ---- devices ------------------------------------------------------- */

typedef struct npurt_device npurt_device;

/*
 * Count the NPUs that can be opened: DRM devices whose driver is "npu",
 * render nodes and accel nodes alike, in a stable order (by node path).
 * NPURT_OK with *count = 0 when there are none.
 */
NPURT_API npurt_status npurt_device_count(int *count);

/*
 * Open NPU number `index` (0 .. count-1). NPURT_ERR_NO_DEVICE when there is
 * no such device, NPURT_ERR_PERMISSION when its node cannot be opened.
 * Close with npurt_device_close().
 */
NPURT_API npurt_status npurt_device_open(int index, npurt_device **dev);

/* Close a device; NULL is accepted. */
NPURT_API void npurt_device_close(npurt_device *dev);

typedef struct npurt_device_info {
	char node[64];			/* "/dev/dri/renderD128" */
	char bus_id[32];		/* "0000:00:02.0", or "" if unknown */
	char driver[16];		/* "npu" */
	uint32_t driver_version[3];	/* major, minor, patch */
	uint32_t if_version[2];		/* kernel-device interface major, minor */
	uint32_t fw_version[3];		/* firmware major, minor, patch */
	uint64_t caps;
	uint64_t hbm_size;		/* bytes of device memory */
	uint64_t hbm_reserved;		/* of which the firmware keeps */
	uint64_t hbm_used;		/* in use device-wide, live */
	uint32_t queue_count;
	uint32_t core_count;
	uint64_t heartbeat;		/* firmware heartbeat counter */
	uint32_t heartbeat_ms;		/* its period */
} npurt_device_info;

/* Fill *info from the driver. Reads live values (heartbeat, memory in use)
 * each call. */
NPURT_API npurt_status npurt_device_get_info(npurt_device *dev,
					     npurt_device_info *info);

/*
 * Round trip to the firmware mailbox, in nanoseconds: proves the device
 * answers. NPURT_ERR_TIMEOUT if it does not.
 */
NPURT_API npurt_status npurt_device_ping(npurt_device *dev, uint64_t *rtt_ns);

/* The device node's file descriptor, for poll() and raw ioctls. */
NPURT_API int npurt_device_fd(const npurt_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* NPURT_H */
