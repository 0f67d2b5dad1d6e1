/* SPDX-License-Identifier: MIT */
/*
 * libnpurt - the NPU runtime.
 *
 * Conventions:
 *  - Every function that can fail returns an npurt_status. NPURT_OK is 0.
 *    On failure, npurt_last_error() returns a message with the context
 *    (which call, which device, what the kernel said). The message is
 *    per thread and stays until the next failing call in that thread.
 *  - Handles are opaque. Devices, streams and memory may be used from
 *    any thread at once: operations several threads issue to one stream
 *    run in the order the calls took effect, one at a time; to order work
 *    across threads, use events or synchronize. Destroying or closing a
 *    handle while another thread still uses it is a bug of the caller.
 *  - Out-parameters are written only on success.
 */
#ifndef NPURT_H
#define NPURT_H

#include <stdbool.h>
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
#define NPURT_VERSION_MINOR 10
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
	NPURT_ERR_NOT_READY = 9,	/* not done yet; not a failure (queries) */
	NPURT_ERR_BUSY = 10,		/* every one of a resource is taken (queues...) */
	NPURT_ERR_CAPTURE = 11,		/* not allowed on a capturing stream (capture) */
} npurt_status;

/*
 * The version of the library running, which may be newer than the header
 * the caller was built with (NPURT_VERSION_*): a caller can check for calls
 * or struct fields added since. Any pointer may be NULL.
 */
NPURT_API void npurt_runtime_version(uint32_t *major, uint32_t *minor, uint32_t *patch);

/*
 * The last failure's message in this thread, or "" if none. Never NULL.
 * NPURT_LOG=error (or warn, info, debug) in the environment also writes
 * every failure's message, and more, to stderr or NPURT_LOG_FILE
 * (Documentation/runtime.rst, "Logging"); unset, the library is silent.
 */
NPURT_API const char *npurt_last_error(void);

/* A constant name for a status: "NPURT_ERR_TIMEOUT". Never NULL. */
NPURT_API const char *npurt_status_name(npurt_status status);

/*
 * What an error record's task_type and device_status mean, in words:
 * "copy", "kernel launch", "event wait"...; "memory fault", "kernel
 * error", "no progress within the time limit"... NULL for a number that
 * is none.
 */
NPURT_API const char *npurt_task_type_name(uint32_t task_type);
NPURT_API const char *npurt_device_status_name(uint32_t device_status);

typedef struct npurt_stream npurt_stream;

/*
 * A failure, as fields: beside the message, for code that reacts to it.
 * The caller sets `size` to sizeof(npurt_error) before a peek: later
 * versions add fields at the end and fill only what the caller's size
 * covers. Fields that do not apply are 0 (NULL).
 */
typedef struct npurt_error {
	uint32_t size;
	npurt_status status;		/* NPURT_OK: no failure recorded */
	const char *call;		/* the function that failed, or that issued
					 * the failed operation ("npurt_launch") */
	npurt_stream *stream;		/* the stream, for stream work */
	uint64_t op_index;		/* the failed operation: the Nth issued on
					 * the stream, from 1 (0: none known) */
	uint32_t task_type;		/* its device task: DRM_NPU_TASK_* */
	uint32_t op;			/* a kernel launch's op (npurt_op_name()) */
	uint32_t device_status;		/* enum drm_npu_job_status (0: none) */
	int error;			/* the errno behind it, if any */
	uint64_t fault_address;		/* device address of a memory fault */
	uint32_t fault_write;		/* the faulting access wrote (else read) */
	/* Since 0.10: */
	const char *reason;		/* why the device refused a kernel launch
					 * of npurt_launch() (device_status "kernel
					 * error"), by the op library's rule: a
					 * constant string; NULL when not known
					 * (a model's launch) */
} npurt_error;

/* The first version's size: npurt_error_peek() takes any size from it up. */
#define NPURT_ERROR_V1_SIZE	offsetof(npurt_error, reason)

/*
 * This thread's last failure, as npurt_last_error() words it: every
 * failing call records one (a stream's device failure with the stream,
 * operation and device fields). `call` stays valid until the thread's
 * next failure. The record stays until npurt_error_clear() or the next
 * failure. NPURT_ERR_INVALID: NULL out or out->size below the first
 * version's, NPURT_ERROR_V1_SIZE (the record is kept).
 */
NPURT_API npurt_status npurt_error_peek(npurt_error *out);

/* Forget this thread's last failure: its record and its message. */
NPURT_API void npurt_error_clear(void);

/* ---- devices ------------------------------------------------------- */

typedef struct npurt_device npurt_device;

/*
 * Count the NPUs that can be opened: DRM devices whose driver is "npu",
 * render nodes and accel nodes alike, in a stable order (by node path).
 * NPURT_OK with *count = 0 when there are none; NPURT_ERR_INVALID for a
 * NULL count.
 */
NPURT_API npurt_status npurt_device_count(int *count);

/*
 * Open NPU number `index` (0 .. count-1). NPURT_ERR_NO_DEVICE when there is
 * no such device, NPURT_ERR_PERMISSION when its node cannot be opened.
 * Close with npurt_device_close().
 */
NPURT_API npurt_status npurt_device_open(int index, npurt_device **dev);

/*
 * Close a device; NULL is accepted. Objects of the device the caller has
 * not destroyed go with it: each stream is destroyed as
 * npurt_stream_destroy() does (its work completes first), then the
 * events, notifies and memory are freed. Their handles are invalid
 * afterwards. No other thread may use the device or its objects during
 * the close.
 */
NPURT_API void npurt_device_close(npurt_device *dev);

typedef struct npurt_device_info {
	char node[64];			/* "/dev/dri/renderD128" */
	char bus_id[32];		/* "0000:00:02.0", or "" if unknown */
	char driver[16];		/* "npu" */
	uint32_t driver_version[3];	/* major, minor, patch */
	uint32_t if_version[2];		/* kernel-device interface major, minor */
	uint32_t fw_version[3];		/* firmware major, minor, patch */
	uint64_t caps;			/* DRM_NPU_CAP_* bits (drm/npu_accel.h) */
	uint64_t hbm_size;		/* bytes of device memory */
	uint64_t hbm_reserved;		/* of which the firmware keeps */
	uint64_t hbm_used;		/* in use device-wide, live */
	uint32_t queue_count;
	uint32_t core_count;
	uint64_t heartbeat;		/* firmware heartbeat counter */
	uint32_t heartbeat_ms;		/* its period */
	uint32_t core_group_count;	/* kernel launches computing at once */
	uint32_t dma_engine_count;	/* copies moving at once */
} npurt_device_info;

/* Fill *info from the driver. Reads live values (heartbeat, memory in use)
 * each call. NPURT_ERR_INVALID for a NULL argument; the driver's errors
 * mapped by meaning (NPURT_ERR_NO_DEVICE, NPURT_ERR_DEVICE). */
NPURT_API npurt_status npurt_device_get_info(npurt_device *dev,
					     npurt_device_info *info);

/*
 * Round trip to the firmware mailbox, in nanoseconds: proves the device
 * answers. NPURT_ERR_TIMEOUT if it does not; NPURT_ERR_INVALID for a NULL
 * argument; NPURT_ERR_NO_DEVICE, NPURT_ERR_DEVICE from the driver.
 */
NPURT_API npurt_status npurt_device_ping(npurt_device *dev, uint64_t *rtt_ns);

/* The device node's file descriptor, for poll() and raw ioctls. */
NPURT_API int npurt_device_fd(const npurt_device *dev);

/* ---- submission path ----------------------------------------------- */

/*
 * How work reaches the driver. libnpurt submits through io_uring
 * (IORING_OP_URING_CMD: one ring per device, shared by the threads using
 * it) when the kernel and the driver take it, and with ioctls otherwise.
 * NPURT_SUBMIT=ioctl or NPURT_SUBMIT=io_uring in the environment, read by
 * npurt_device_open(), forces one; forcing io_uring where it is missing
 * makes the open fail with NPURT_ERR_UNSUPPORTED.
 */
typedef enum npurt_submit_path {
	NPURT_SUBMIT_IOCTL = 0,
	NPURT_SUBMIT_IO_URING = 1,
} npurt_submit_path;

/* The path this device's work takes. */
NPURT_API npurt_submit_path npurt_device_submit_path(const npurt_device *dev);

/*
 * How a thread waits for a stream's work (synchronize, a stream wait,
 * a query). Where the device writes each queue's completion to memory
 * the library maps (driver 0.4 on firmware 0.12), a waiter can see it
 * without a system call and without the interrupt and wake-up that the
 * kernel's wait costs (Documentation/runtime.rst, "Waiting"):
 *  - NPURT_WAIT_AUTO (the default): spin on that memory for a while,
 *    then sleep in the kernel; how long each stream spins is learnt
 *    from its recent waits (twice their length while that is under
 *    250 us, not at all above), as CUDA's cudaDeviceScheduleAuto
 *    chooses between spinning and blocking.
 *  - NPURT_WAIT_BLOCK: sleep in the kernel at once (the CPU stays free
 *    for other threads; each wait pays the wake-up).
 *  - NPURT_WAIT_SPIN: spin until the work is done, asking the kernel
 *    every millisecond whether it failed (lowest latency; one CPU busy
 *    while waiting).
 * Devices without completion words always sleep. Queries never spin.
 * NPURT_WAIT=auto, block or spin in the environment, read by
 * npurt_device_open(), sets the policy a device starts with; another
 * value makes the open fail with NPURT_ERR_INVALID.
 */
typedef enum npurt_wait_policy {
	NPURT_WAIT_AUTO = 0,
	NPURT_WAIT_BLOCK = 1,
	NPURT_WAIT_SPIN = 2,
} npurt_wait_policy;

/*
 * Set how this device's waits wait, for every thread and stream, from
 * the next wait on. NPURT_ERR_INVALID for a NULL device or an unknown
 * policy.
 */
NPURT_API npurt_status npurt_device_set_wait_policy(npurt_device *dev,
						    npurt_wait_policy policy);

/* ---- profiling --------------------------------------------------------- */

/*
 * The profiler records the device's timeline of every task (start and
 * end on the device's clock, which copy engine or AI-core group ran it)
 * for the streams created while it exists, and host spans of runtime
 * calls that wait or allocate (Documentation/profiling.rst). It needs
 * driver 0.5 on firmware 0.13 (NPURT_ERR_UNSUPPORTED otherwise).
 *
 * npurt_profiler_start() begins recording; the first start makes the
 * device's profiling ring, which streams created from then on share:
 * start the profiler before creating the streams and loading the models
 * to profile (those made earlier are not recorded). npurt_profiler_stop()
 * stops recording and keeps what was recorded; a stopped profiler costs
 * the device next to nothing. Both are for the whole device, from any
 * thread. NPURT_PROFILE=FILE in the environment starts the profiler at
 * npurt_device_open() and writes FILE at npurt_device_close() (npu-prof
 * and npurun --profile use it; a relative FILE is taken from the working
 * directory at the close, and each device closed writes it over the
 * last; a device without profiling, or a bad NPURT_PROFILE_RECORDS,
 * fails the open); NPURT_PROFILE_RECORDS (a power of two,
 * default 16384) sizes the ring, which the library drains as work is
 * submitted: a ring that fills in between loses records, counted in the
 * file's "dropped".
 */
NPURT_API npurt_status npurt_profiler_start(npurt_device *dev);
NPURT_API npurt_status npurt_profiler_stop(npurt_device *dev);

/*
 * Write everything recorded so far to `path` as Chrome trace-event JSON
 * (ui.perfetto.dev and chrome://tracing open it): a track per stream and
 * per copy engine, AI-core group and the scheduler, the host's threads
 * beside them, an arrow from each submit to its batch's first task.
 * Device times are put on CLOCK_MONOTONIC through DRM_NPU_CLOCK. Work
 * still running is written once a later write finds it done.
 * NPURT_ERR_INVALID when the profiler never started on `dev`.
 */
NPURT_API npurt_status npurt_profiler_write(npurt_device *dev, const char *path);

/* ---- exceptions ------------------------------------------------------ */

/*
 * Called once per stream failure on the device (a failed operation, an
 * abort, a reset, work the driver refused) with the stream's record (see
 * npurt_stream_error_peek()), which is valid during the call only.
 *
 * Which thread calls it: on io_uring, the library's progress thread, as
 * soon as the completion arrives, whether or not the application calls
 * into the library; on the ioctl path (where nothing waits in the
 * background) the first thread whose call learns of the failure
 * (synchronize, query, a wait, an operation refused). Either way, a call
 * that returns the failure to the application has run the callback first.
 * It runs with libnpurt locks held: it may only read records and
 * messages (npurt_stream_error_peek(), npurt_error_peek(),
 * npurt_last_error(), npurt_status_name(), npurt_op_name()); any other
 * call on the device may deadlock. Hand the work to another thread.
 */
typedef void (*npurt_exception_fn)(const npurt_error *error, void *user);

/*
 * Set the device's callback (NULL: none); `user` is passed to it. A
 * callback running meanwhile may finish with the old one.
 * NPURT_ERR_INVALID for a NULL device.
 */
NPURT_API npurt_status npurt_device_set_exception_callback(npurt_device *dev,
							   npurt_exception_fn fn,
							   void *user);

/* ---- device memory ------------------------------------------------- */

typedef struct npurt_mem npurt_mem;

/*
 * Device memory (HBM) comes from a caching allocator, one per device:
 * blocks carved from segments (buffer objects) that it keeps when they are
 * freed, so allocating and freeing again does not reach the kernel.
 * Requests under 1 MiB are rounded up to 512 bytes and share 2 MiB
 * segments; larger ones are rounded up to 4 KiB. Memory from the cache is
 * not zeroed: it holds what its last user left. npurt_mem_free() and
 * npurt_mem_free_async() say when freed memory is handed out again.
 * Documentation/runtime.rst describes the design.
 */

/* Page policy flags (at most one; none is NPURT_MEM_HUGE_FIRST). */
#define NPURT_MEM_HUGE_FIRST	(1u << 0)	/* 2 MiB pages where they fit, else 4 KiB */
#define NPURT_MEM_HUGE_ONLY	(1u << 1)	/* 2 MiB pages, or NPURT_ERR_NO_MEMORY */
#define NPURT_MEM_NORMAL_ONLY	(1u << 2)	/* 4 KiB pages */
/* A buffer object of its own, not from the cache: it reads as zeros and
 * goes back to the kernel when freed. */
#define NPURT_MEM_NO_CACHE	(1u << 3)
/* Like NPURT_MEM_NO_CACHE, and said to be for npurt_mem_export(). */
#define NPURT_MEM_SHAREABLE	(1u << 4)

/*
 * Allocate at least `size` bytes of device memory, mapped for the device
 * at npurt_mem_device_addr() and for the CPU at npurt_mem_host_ptr()
 * (write-combined: write it sequentially, avoid reading it in loops).
 * `flags`: NPURT_MEM_* above. The device address is 512-byte aligned
 * (4 KiB from 1 MiB up).
 * NPURT_ERR_INVALID: NULL argument, size 0, unknown or conflicting flags.
 * NPURT_ERR_NO_MEMORY: the device has no room, even after the cache gave
 * back what it held (NPURT_MEM_HUGE_ONLY: no room for 2 MiB pages).
 * NPURT_ERR_NO_DEVICE, NPURT_ERR_DEVICE: the driver failed otherwise.
 */
NPURT_API npurt_status npurt_mem_alloc_flags(npurt_device *dev, size_t size, uint32_t flags,
					     npurt_mem **mem);

/* npurt_mem_alloc_flags() with flags 0: cached, 2 MiB pages where they fit. */
NPURT_API npurt_status npurt_mem_alloc(npurt_device *dev, size_t size, npurt_mem **mem);

/*
 * Free memory of any kind (device, pinned host, registered host,
 * imported); NULL is accepted. The call returns at once and the work
 * issued before it that uses the memory stays safe, launches included
 * (the driver holds a buffer for the copies and fills that name it, but
 * a launch's tensors are only in its argument block): the memory is
 * handed out again (the cache's) or goes back to the kernel (the
 * others) only once every stream of the device has completed that work,
 * which libnpurt finds out without waiting. Registered host memory
 * (npurt_host_register()) is the only exception: it is the caller's
 * again when the call returns, so that free waits for the work.
 * npurt_device_close() frees what the caller left of its device's
 * memory. The handle is dead once freed: passing it again (a double
 * free, a use after free or after the device's close) is refused with
 * NPURT_ERR_INVALID, never read.
 */
NPURT_API npurt_status npurt_mem_release(npurt_mem *mem);

/* npurt_mem_release() without its status (the message is set the same). */
NPURT_API void npurt_mem_free(npurt_mem *mem);

/* The CPU address of the memory: its mapping, or the pinned host memory. */
NPURT_API void *npurt_mem_host_ptr(const npurt_mem *mem);

/* The memory's device address, which stream operations take. */
NPURT_API uint64_t npurt_mem_device_addr(const npurt_mem *mem);

/* The usable size: what was asked, rounded up as the allocator gives it
 * (0 for NULL). */
NPURT_API size_t npurt_mem_size(const npurt_mem *mem);

/* The size of the device pages mapping it: 4096 or 2 MiB (0 for NULL). */
NPURT_API size_t npurt_mem_page_size(const npurt_mem *mem);

/*
 * Stream-ordered allocation: memory for the work of `stream`. It may be
 * memory the same stream freed with npurt_mem_free_async() whose earlier
 * work is still running: the stream runs its work in order, so its work
 * issued from now on comes after that. Using it on another stream needs
 * that stream to wait for this one (an event). Flags and statuses as for
 * npurt_mem_alloc_flags() (NULL stream: NPURT_ERR_INVALID).
 */
NPURT_API npurt_status npurt_mem_alloc_async(npurt_stream *stream, size_t size, uint32_t flags,
					     npurt_mem **mem);

/*
 * Free memory once the work issued to `stream` so far is done with it:
 * reusable at once by npurt_mem_alloc_async() on the same stream, and
 * by other streams and npurt_mem_alloc() once that work has completed
 * (without waiting for any other stream, unlike npurt_mem_free()). A
 * NULL mem is accepted. NPURT_ERR_INVALID: NULL stream, or a stream of
 * another device (the memory is not freed then).
 */
NPURT_API npurt_status npurt_mem_free_async(npurt_mem *mem, npurt_stream *stream);

/*
 * Give the cache's wholly free segments back to the kernel until at most
 * `keep_bytes` of them remain (0: all). Memory in use stays.
 * NPURT_ERR_INVALID for a NULL device.
 */
NPURT_API npurt_status npurt_mem_trim(npurt_device *dev, size_t keep_bytes);

/*
 * How many bytes of wholly free segments the cache keeps (64 MiB to begin
 * with); a free that leaves more gives the oldest back to the kernel.
 * NPURT_ERR_INVALID for a NULL device.
 */
NPURT_API npurt_status npurt_mem_set_release_threshold(npurt_device *dev, size_t bytes);

/* Pinned host memory flags. */
#define NPURT_HOST_READ_ONLY	(1u << 0)	/* the device only reads it */

/*
 * Allocate `size` bytes of page-aligned host memory, zeroed, pinned and
 * mapped for the device: npurt_mem_host_ptr() is the memory and
 * npurt_mem_device_addr() where the device sees it. Free with
 * npurt_mem_free(). NPURT_ERR_INVALID: NULL argument or size 0.
 * NPURT_ERR_NO_MEMORY: no host memory, or pinning it would exceed
 * RLIMIT_MEMLOCK (the message says so), or no device address space.
 */
NPURT_API npurt_status npurt_host_alloc(npurt_device *dev, size_t size, npurt_mem **mem);

/*
 * Pin `size` bytes of existing host memory at `ptr` and map them for the
 * device; npurt_mem_free() unregisters (the memory itself stays the
 * caller's). The pages around the range are pinned whole, so two
 * registrations may not share a page. `flags`: NPURT_HOST_READ_ONLY
 * (needed for memory the process may not write).
 * NPURT_ERR_INVALID: NULL argument, size 0, unknown flags, memory that is
 * not mapped (or read-only without NPURT_HOST_READ_ONLY), or a range
 * that overlaps memory already registered on the device.
 * NPURT_ERR_NO_MEMORY: over RLIMIT_MEMLOCK, or no device address space.
 */
NPURT_API npurt_status npurt_host_register(npurt_device *dev, void *ptr, size_t size,
					   uint32_t flags, npurt_mem **mem);

/*
 * Memory use, in bytes. The caller sets `size` to sizeof(npurt_mem_usage):
 * later versions add fields at the end and fill only what the caller's
 * size covers.
 */
typedef struct npurt_mem_usage {
	size_t size;
	/*
	 * The driver's accounting: device-wide and this device handle's
	 * (which includes the library's own buffers: the cache's segments
	 * and one 4 KiB page of completion words).
	 */
	uint64_t device_hbm, device_hbm_peak;	/* buffers in HBM */
	uint64_t device_host, device_host_peak;	/* registered host memory */
	uint64_t context_hbm, context_hbm_peak;
	uint64_t context_host, context_host_peak;
	/* The cache. */
	uint64_t cache_reserved, cache_reserved_peak;	/* segments it holds */
	uint64_t cache_in_use, cache_in_use_peak;	/* blocks handed out, and
							 * freed ones not yet reusable */
	uint64_t cache_idle;				/* wholly free segments */
	uint64_t cache_segment_allocs;	/* buffers it created since open */
	uint64_t cache_segment_frees;	/* and gave back */
} npurt_mem_usage;

/*
 * Fill *usage. NPURT_ERR_INVALID: NULL argument, or usage->size smaller
 * than the first version of the struct; driver errors as for
 * npurt_mem_alloc_flags(). On failure *usage is untouched.
 */
NPURT_API npurt_status npurt_mem_get_usage(npurt_device *dev, npurt_mem_usage *usage);

/*
 * Share memory with another process: *fd is a dma-buf of the whole
 * buffer, for npurt_mem_import() there (pass it over a Unix socket);
 * close it when done. Only memory allocated with NPURT_MEM_SHAREABLE or
 * NPURT_MEM_NO_CACHE, or itself imported, can be exported: a block of
 * the cache shares its buffer with other blocks (NPURT_ERR_INVALID, as
 * for host memory and NULL arguments). NPURT_ERR_DEVICE and others: the
 * driver refused.
 */
NPURT_API npurt_status npurt_mem_export(npurt_mem *mem, int *fd);

/*
 * Map a buffer exported by npurt_mem_export() (in any process) on `dev`:
 * it has its own device address here, and the CPU mapping shows the same
 * memory. The fd stays the caller's. Free with npurt_mem_free().
 * NPURT_ERR_INVALID: NULL argument, or an fd that is not an NPU buffer.
 */
NPURT_API npurt_status npurt_mem_import(npurt_device *dev, int fd, npurt_mem **mem);

/* ---- streams ------------------------------------------------------- */

typedef enum npurt_stream_priority {
	NPURT_PRIORITY_LOW = 0,
	NPURT_PRIORITY_NORMAL = 1,
	NPURT_PRIORITY_HIGH = 2,	/* needs CAP_SYS_NICE */
	NPURT_PRIORITY_REALTIME = 3,	/* needs CAP_SYS_NICE */
} npurt_stream_priority;

/*
 * How a stream is made. Set `size` to sizeof(npurt_stream_desc): the
 * struct may grow at its end.
 */
typedef struct npurt_stream_desc {
	uint32_t size;
	npurt_stream_priority priority;	/* the device serves higher levels first */
	uint32_t depth;			/* tasks its hardware queue holds: 0 for 1024,
					 * else a power of two from 512 to 65536 */
	uint32_t time_limit_ms;		/* a task executing longer fails the stream
					 * (NPURT_ERR_TIMEOUT); 0: the driver's default */
	uint32_t flags;			/* NPURT_STREAM_* */
} npurt_stream_desc;

/*
 * npurt_stream_desc flag: the failure mode. By default a failed operation
 * stops the stream: what was issued after it does not run and later
 * operations return NPURT_ERR_DEVICE. With NPURT_STREAM_CONTINUE the
 * failed operation is reported (the stream's record, the exception
 * callback, and npurt_stream_synchronize() or npurt_stream_query()
 * returning the failure once) and every operation issued after it still
 * runs, in order: libnpurt replaces the stream's hardware queue and
 * issues again what the failure cancelled (Documentation/runtime.rst,
 * "Failure modes"). The rest of a failed kernel launch's or copy's
 * output is undefined. An abort, a device reset and work the driver
 * refuses still stop the stream.
 */
#define NPURT_STREAM_CONTINUE	(1u << 0)

/*
 * A stream as `desc` says. NPURT_ERR_INVALID for a NULL argument, a
 * desc->size too small, an unknown priority, a bad depth, unknown flags or
 * a time limit above the driver's; NPURT_ERR_PERMISSION for HIGH or
 * REALTIME without CAP_SYS_NICE; NPURT_ERR_BUSY when no hardware queue is
 * free.
 */
NPURT_API npurt_status npurt_stream_create_desc(npurt_device *dev,
						const npurt_stream_desc *desc,
						npurt_stream **stream);

/*
 * A stream: work that runs on the device in the order it was issued, on
 * one hardware queue of its own. Operations return once the work is
 * queued; npurt_stream_synchronize() waits for it. A failed operation
 * fails the stream: later ones return NPURT_ERR_DEVICE, and
 * npurt_stream_synchronize() says which operation failed and how.
 * Statuses as for npurt_stream_create_desc().
 */
NPURT_API npurt_status npurt_stream_create(npurt_device *dev,
					   npurt_stream_priority priority,
					   npurt_stream **stream);

/*
 * Wait for the stream's work, then release its queue; NULL is accepted.
 * Work that fails meanwhile is not reported. The default stream is not
 * destroyed (a no-op): npurt_device_close() does that.
 */
NPURT_API void npurt_stream_destroy(npurt_stream *stream);

/*
 * The device's default stream, at normal priority: made on the first
 * call and the same for every caller and thread after, so code that does
 * not manage streams can share one. npurt_stream_destroy() leaves it;
 * npurt_device_close() destroys it. NPURT_ERR_INVALID for NULL
 * arguments; NPURT_ERR_BUSY when no hardware queue is free for it (a
 * later call tries again).
 */
NPURT_API npurt_status npurt_device_default_stream(npurt_device *dev, npurt_stream **stream);

/*
 * Wait until all the work issued to the stream has completed.
 * NPURT_ERR_DEVICE when some of it failed on the device (the message
 * names the failure, the operation and the address for a memory fault;
 * npurt_stream_error_peek() has it as fields), NPURT_ERR_TIMEOUT when a
 * task ran past the stream's time limit, NPURT_ERR_NO_MEMORY or
 * NPURT_ERR_DEVICE when the driver refused the work; a stopped stream
 * returns its failure every time, an NPURT_STREAM_CONTINUE one once.
 * NPURT_ERR_INVALID for a NULL stream.
 */
NPURT_API npurt_status npurt_stream_synchronize(npurt_stream *stream);

/*
 * npurt_stream_synchronize() with a time limit: -1 waits without one, 0
 * only looks. NPURT_ERR_TIMEOUT when the work is not done in time (it
 * goes on), otherwise as npurt_stream_synchronize().
 */
NPURT_API npurt_status npurt_stream_synchronize_timeout(npurt_stream *stream, int timeout_ms);

/*
 * The stream's first failure since its record was last cleared (status
 * NPURT_OK: none), as the exception callback gets it; `call` names the
 * function that issued the failed operation. Readable from any thread.
 * NPURT_ERR_INVALID: NULL argument or out->size below the first
 * version's.
 */
NPURT_API npurt_status npurt_stream_error_peek(npurt_stream *stream, npurt_error *out);

/*
 * Forget the stream's record, so that the next failure is recorded. A
 * stopped stream stays failed. NPURT_ERR_INVALID for a NULL stream.
 */
NPURT_API npurt_status npurt_stream_error_clear(npurt_stream *stream);

/*
 * Stop the stream's work on the device: what has not run fails with
 * "aborted", and so does later work (the stream stays failed until
 * destroyed). NPURT_ERR_INVALID for a NULL stream.
 */
NPURT_API npurt_status npurt_stream_abort(npurt_stream *stream);

/*
 * Wait for the work of every stream of the device. The first failure
 * found is returned as npurt_stream_synchronize() returns it, its message
 * prefixed with this call's name (the others are still waited for).
 * NPURT_ERR_INVALID for a NULL device, NPURT_ERR_NO_MEMORY.
 */
NPURT_API npurt_status npurt_device_synchronize(npurt_device *dev);

/*
 * Whether the stream's work has all completed, without waiting:
 * NPURT_OK when it has, NPURT_ERR_NOT_READY when some is still to run,
 * or the failure npurt_stream_synchronize() would report (NPURT_ERR_DEVICE,
 * NPURT_ERR_TIMEOUT). NPURT_ERR_INVALID for a NULL stream.
 */
NPURT_API npurt_status npurt_stream_query(npurt_stream *stream);

/*
 * A host function in a stream's work (npurt_stream_add_callback()):
 * `status` is NPURT_OK when the work issued to the stream before it
 * completed, else that work's failure as npurt_stream_synchronize() reports
 * it (npurt_last_error(), in the callback, says how).
 */
typedef void (*npurt_callback_fn)(npurt_stream *stream, npurt_status status, void *user);

/*
 * Call fn(stream, status, user) on a runtime thread once the work issued
 * to the stream so far has completed, or failed: it runs either way. The
 * stream's later work waits, on the device, until fn returns; nothing
 * the caller issues meanwhile waits for it. npurt_stream_synchronize()
 * thus returns once the callbacks added before it returned (unless the
 * stream failed: it then returns at once, and they run on their own).
 *
 * A stream's callbacks run one at a time, in the order they were added;
 * callbacks of different streams may run at the same time, on different
 * threads. A callback may call the runtime, and issue work on any stream,
 * its own included (that work runs after the callback, like any work
 * issued after it). It must not wait for its own stream's later work
 * (npurt_stream_synchronize() of its own stream, npurt_stream_destroy() of
 * it, an event recorded on it after the callback): that work waits for
 * the callback to return.
 *
 * npurt_stream_destroy() waits for the stream's callbacks to return, and
 * npurt_device_close() for any still queued. The first callback of a
 * stream takes the device context's default queue (one hardware queue
 * per device handle, used by all of them), from which the runtime lets
 * streams go on after their callbacks.
 *
 * NPURT_ERR_INVALID: NULL stream or fn. NPURT_ERR_DEVICE: the stream
 * failed earlier (fn is not called). NPURT_ERR_BUSY: no hardware queue
 * free for the default queue, or the context holds all the notifies it
 * may (a stream with callbacks holds one). NPURT_ERR_NO_MEMORY: no memory
 * or no thread for it. On failure fn is never called and the stream is
 * as it was.
 */
NPURT_API npurt_status npurt_stream_add_callback(npurt_stream *stream, npurt_callback_fn fn,
						 void *user);

/*
 * Fill `size` bytes at device address `dst` with the 32-bit `pattern`.
 * `dst` and `size` are multiples of 4 (npurt_fill_d32_async() and the
 * others below take pointers and any alignment). NPURT_ERR_INVALID: NULL
 * stream, size 0, a misaligned address or size. NPURT_ERR_DEVICE: the
 * stream failed earlier (stopped); NPURT_ERR_NO_MEMORY, NPURT_ERR_DEVICE:
 * the driver refused the work (the stream then fails). A fault on the
 * device is reported later, by npurt_stream_synchronize().
 */
NPURT_API npurt_status npurt_memset_async(npurt_stream *stream, uint64_t dst,
					  uint32_t pattern, size_t size);

/* Copy `size` bytes between device addresses (npurt_copy_async() below
 * takes pointers of any kind). Statuses as for npurt_memset_async()
 * (size 0: NPURT_ERR_INVALID). */
NPURT_API npurt_status npurt_memcpy_async(npurt_stream *stream, uint64_t dst,
					  uint64_t src, size_t size);

/* ---- copies and fills on pointers ------------------------------------ */

/*
 * Copies take CPU pointers and find out what each points into: device
 * memory (npurt_mem_host_ptr() of it, at any offset), pinned host memory
 * (npurt_host_alloc()) or registered host memory (npurt_host_register()),
 * all of this device handle's; anything else is pageable host memory.
 *
 *  - Device or pinned/registered on both sides: copy tasks on the stream,
 *    run in stream order; the call returns once they are queued.
 *  - Pageable source (host to device): the data goes through the stream's
 *    pinned staging buffers (4 of 1 MiB, made at its first such copy and
 *    freed with it), the CPU filling one while the device copies another.
 *    The call returns once the source has been read: it may be reused at
 *    once, while the last chunks' copies still run in stream order. It
 *    waits for earlier work only as far as the staging buffers are busy.
 *  - Pageable destination (device to host): the call returns once the
 *    data is in the destination, so it waits for the stream's earlier work.
 *  - Pageable on both sides: the call waits for the stream's earlier work,
 *    then copies with the CPU, so the copy too is in stream order.
 *
 * Every range lies within one allocation, or in none (pageable). A stream
 * failed earlier makes them NPURT_ERR_DEVICE before anything is copied;
 * one failing meanwhile (a wait above) makes them NPURT_ERR_DEVICE with
 * part of the data copied.
 *
 * NPURT_ERR_INVALID: NULL stream or pointer, size 0, a range that
 * straddles an allocation's start or end, a pointer into device memory
 * no live allocation holds (freed) or of another device handle.
 * NPURT_ERR_NO_MEMORY: the staging buffers cannot be pinned
 * (RLIMIT_MEMLOCK). NPURT_ERR_DEVICE: the stream failed.
 */
NPURT_API npurt_status npurt_copy_async(npurt_stream *stream, void *dst, const void *src,
					size_t size);

/* npurt_copy_async(), then wait for the stream's work (the copy included):
 * statuses as for it and npurt_stream_synchronize(). */
NPURT_API npurt_status npurt_copy(npurt_stream *stream, void *dst, const void *src, size_t size);

/*
 * Copy `height` rows of `width` bytes: row r from src + r * spitch to
 * dst + r * dpitch, as npurt_copy_async() does (each side's rows lie in
 * one allocation, or in none). Pitches of at least `width`; when both
 * equal it, one contiguous copy. NPURT_ERR_INVALID as for
 * npurt_copy_async(), and for a zero width or height, a pitch below the
 * width, or an extent that overflows.
 */
NPURT_API npurt_status npurt_copy_2d_async(npurt_stream *stream, void *dst, size_t dpitch,
					   const void *src, size_t spitch, size_t width,
					   size_t height);

/* npurt_copy_2d_async(), then wait for the stream's work. */
NPURT_API npurt_status npurt_copy_2d(npurt_stream *stream, void *dst, size_t dpitch,
				     const void *src, size_t spitch, size_t width, size_t height);

/*
 * Set `count` 8-, 16- or 32-bit elements at `dst` to `value`, in stream
 * order: element i is at dst + i * its size, at any alignment. `dst` is
 * device memory or pinned/registered host memory of the device (pageable
 * memory: NPURT_ERR_INVALID, as for NULL arguments, a zero count, a
 * range straddling an allocation, freed or another device's memory);
 * NPURT_ERR_DEVICE: the stream failed earlier. The device fills the
 * 4-byte-aligned words; up to 3 bytes at either end are copied from a
 * small pinned buffer of the stream (NPURT_ERR_NO_MEMORY when it cannot
 * be pinned).
 */
NPURT_API npurt_status npurt_fill_d8_async(npurt_stream *stream, void *dst, uint8_t value,
					   size_t count);
NPURT_API npurt_status npurt_fill_d16_async(npurt_stream *stream, void *dst, uint16_t value,
					    size_t count);
NPURT_API npurt_status npurt_fill_d32_async(npurt_stream *stream, void *dst, uint32_t value,
					    size_t count);

/* ---- kernel launch -------------------------------------------------- */

/*
 * A kernel launch runs an op of the device's op library (elementwise
 * arithmetic and activations, GEMM, softmax, layer norm, reductions,
 * transpose, cast; Documentation/firmware-interface.rst, "Op library")
 * on tensors in device memory, in stream order.
 */

/*
 * Element types. The float ops compute in f32 (f16 and bf16 convert on the
 * way); since runtime 0.4 (firmware 0.4) tensors also take f64, the
 * integers and bool (a byte, 0 or 1), for the elementwise ops, the
 * comparisons and logic, reductions, arg max / min, transpose and cast
 * (Documentation/firmware-interface.rst says which op takes which).
 */
typedef enum npurt_dtype {
	NPURT_F32 = 0,
	NPURT_F16 = 1,
	NPURT_BF16 = 2,
	NPURT_F64 = 3,
	NPURT_I8 = 4,
	NPURT_U8 = 5,
	NPURT_I16 = 6,
	NPURT_U16 = 7,
	NPURT_I32 = 8,
	NPURT_U32 = 9,
	NPURT_I64 = 10,
	NPURT_U64 = 11,
	NPURT_BOOL = 12,
	NPURT_DTYPE_COUNT
} npurt_dtype;

/* Bytes of an element of `dtype`; 0 for none. */
NPURT_API size_t npurt_dtype_size(npurt_dtype dtype);

#define NPURT_MAX_DIMS 8

/*
 * A strided view of device memory: element (i0, i1, ...) is at
 * addr + sum(i_k * stride[k]) * element size. Strides count elements; a
 * stride of 0 repeats the same elements along that dimension (broadcast).
 * npurt_tensor_init() fills a dense row-major view.
 */
typedef struct npurt_tensor {
	uint64_t addr;			/* device address */
	npurt_dtype dtype;
	uint32_t ndim;			/* 1 .. NPURT_MAX_DIMS */
	uint64_t shape[NPURT_MAX_DIMS];
	uint64_t stride[NPURT_MAX_DIMS];
} npurt_tensor;

/*
 * A dense row-major tensor of `ndim` dimensions at device address `addr`.
 * NPURT_ERR_INVALID for a NULL argument, ndim outside 1..NPURT_MAX_DIMS,
 * an unknown dtype or a zero extent.
 */
NPURT_API npurt_status npurt_tensor_init(npurt_tensor *t, uint64_t addr, npurt_dtype dtype,
					 uint32_t ndim, const uint64_t *shape);

/* GEMM flags: use the transpose of input 0 / input 1. */
#define NPURT_LAUNCH_TRANS_A	(1u << 0)
#define NPURT_LAUNCH_TRANS_B	(1u << 1)
/* "argmax", "argmin": the last index of the extreme value, not the first. */
#define NPURT_ARG_LAST_INDEX	(1u << 2)
/* "cumsum": each element left out of its own sum; summed from the end. */
#define NPURT_CUMSUM_EXCLUSIVE	(1u << 3)
#define NPURT_CUMSUM_REVERSE	(1u << 4)

/*
 * One launch. Set `size` to sizeof(npurt_launch_desc): the struct may grow
 * at its end, and the library reads only what the caller's version has.
 * Fields an op does not use are ignored.
 */
typedef struct npurt_launch_desc {
	uint32_t size;
	uint32_t op;			/* from npurt_op_lookup() */
	uint32_t block_dim;		/* AI cores to split it across; 0: all it may */
	uint32_t flags;			/* NPURT_LAUNCH_* */
	uint32_t axis;			/* REDUCE_*: the dimension reduced */
	uint32_t perm[NPURT_MAX_DIMS];	/* TRANSPOSE: out's dim k is in's perm[k] */
	float alpha, beta;		/* GEMM: out = alpha * A x B + beta * out */
	float eps;			/* LAYERNORM */
	npurt_tensor in[2];		/* in[1] only for two-input ops */
	npurt_tensor out;
} npurt_launch_desc;

/*
 * A descriptor for op `op`: size set, every other field 0 but the op's
 * parameters, which take ONNX's defaults: GEMM alpha 1 (beta 0);
 * leaky_relu alpha 0.01; elu, celu, thresholded_relu alpha 1; selu alpha
 * 1.6733, gamma (beta) 1.0507; hard_sigmoid alpha 0.2, beta 0.5; clip no
 * bounds (-inf, inf); shrink lambda 0.5; isinf both signs; requant no
 * lower bound; layernorm eps 1e-5. Then fill in the tensors.
 * NPURT_ERR_INVALID for a NULL desc or an unknown op. It writes the
 * whole struct as this header declares it: a later library whose
 * descriptor is larger keeps this version of the call (by symbol
 * version) for programs built with this header.
 */
NPURT_API npurt_status npurt_launch_init(npurt_launch_desc *desc, uint32_t op);

/*
 * The id of op `name` ("add", "gemm", "softmax", ... as in the op library's
 * documentation; any case). NPURT_ERR_INVALID for a NULL argument or an
 * unknown name, the message naming the closest known ones.
 */
NPURT_API npurt_status npurt_op_lookup(const char *name, uint32_t *op);

/* The name of op `op` (lower case), or NULL when there is no such op. */
NPURT_API const char *npurt_op_name(uint32_t op);

/* How many ops the library knows: npurt_op_at() takes 0 to this - 1. */
NPURT_API uint32_t npurt_op_count(void);

/*
 * The index-th op the library knows, in the op library's order: its id
 * in *op and its name in *name (either may be NULL).
 * NPURT_ERR_INVALID past the last.
 */
NPURT_API npurt_status npurt_op_at(uint32_t index, uint32_t *op, const char **name);

/*
 * Launch `desc` on the stream. The argument block goes to device memory
 * the stream owns (an arena reused as its launches complete; when every
 * slot is in flight the call waits for the oldest).
 *
 * The launch is checked here by the op library's own rule, the one the
 * device applies and the graph builder checks models by: ranks, shapes,
 * strides, dtypes, flags and parameters for the op. One that breaks it
 * returns NPURT_ERR_INVALID, the message naming the rule and the
 * tensors: "npurt_launch(gemm): GEMM shapes do not agree: A's columns
 * are not B's rows (in0 f32 [4, 3], in1 f32 [5, 2], out f32 [4, 2])".
 * So does a GEMM with alpha and beta both 0, a zeroed descriptor's
 * (npurt_launch_init() fills the defaults), and a tensor whose elements
 * do not lie in one live allocation of this device (past its end, or
 * freed). With NPURT_LAUNCH_CHECK=device in the environment at
 * npurt_device_open() the library leaves every check to the device (as
 * to try a firmware newer than the library), which then fails the stream
 * (NPURT_ERR_DEVICE from npurt_stream_synchronize(), the error record's
 * `reason` saying why), and a tensor outside the context's memory fails
 * it the same way, with the faulting address.
 *
 * NPURT_ERR_INVALID also for a NULL argument, desc->size too small, an
 * unknown op or block_dim above 64. NPURT_ERR_NO_MEMORY when the arena
 * cannot be allocated; NPURT_ERR_DEVICE when the stream has failed.
 */
NPURT_API npurt_status npurt_launch(npurt_stream *stream, const npurt_launch_desc *desc);

/* ---- events -------------------------------------------------------- */

/*
 * An event marks a point in a stream's work: recording it on a stream
 * makes it complete once the work issued to the stream before the record
 * has run. Other streams wait for it on the device, the host waits for it
 * or asks whether it completed, and timing events give the device time
 * between two of them. Each record is a new one: waits and queries issued
 * after it are about it, never about an earlier record.
 *
 * Threads: an event may be used from any thread; its calls may run at the
 * same time (each takes the event's lock; a host wait holds it only to
 * start), except npurt_event_destroy(), which nothing may overlap. A call
 * naming a stream is one of the stream's operations, ordered with those
 * of other threads as the conventions at the top say. A wait that
 * overlaps a record is about the record that was the latest when the
 * wait started.
 *
 * Costs: events take device events from a per-device pool, reused once the
 * device has run their reset (Documentation/runtime.rst, "Events and
 * notifies"): creating an event costs no syscall, and recording one is the
 * push of its task onto the stream.
 *
 * Events are usable in the process (the device handle) that created them
 * only, except those created with NPURT_EVENT_INTERPROCESS, which other
 * processes (and device handles) import (npurt_event_export()).
 */
typedef struct npurt_event npurt_event;

/* npurt_event_create_flags() flag: the event's records are timed. */
#define NPURT_EVENT_TIMING	(1u << 0)
/*
 * npurt_event_create_flags() flag: the event can be shared with other
 * processes (npurt_event_export()). Its records are not timed, and each
 * costs a batch of its own when the stream has nothing gathered; waits on
 * it cost a batch each.
 */
#define NPURT_EVENT_INTERPROCESS	(1u << 1)

/*
 * Create an event. `flags`: 0, NPURT_EVENT_TIMING (needed by
 * npurt_event_elapsed_ns()) or NPURT_EVENT_INTERPROCESS.
 * NPURT_ERR_INVALID: NULL argument, unknown flags, both flags;
 * NPURT_ERR_NO_MEMORY.
 */
NPURT_API npurt_status npurt_event_create_flags(npurt_device *dev, uint32_t flags,
						npurt_event **event);

/* npurt_event_create_flags() with NPURT_EVENT_TIMING. */
NPURT_API npurt_status npurt_event_create(npurt_device *dev, npurt_event **event);

/*
 * Free an event; NULL is accepted. Work already issued that records or
 * waits on it is not affected.
 */
NPURT_API void npurt_event_destroy(npurt_event *event);

/*
 * Record the event when the stream's work issued so far has run; the
 * device timestamps the record. Recording again starts a new record:
 * waits issued afterwards wait for the new one. The stream's work issued
 * so far is submitted to the device (so that other streams, threads and
 * the host waiting for the record see it run).
 * NPURT_ERR_INVALID: NULL argument, a destroyed event (detected while its
 * memory is not reused), an event and a stream of different devices.
 * NPURT_ERR_DEVICE: the stream failed earlier. NPURT_ERR_BUSY: the
 * context holds all the device events it may (records the device has not
 * been seen to run hold theirs).
 */
NPURT_API npurt_status npurt_event_record(npurt_event *event, npurt_stream *stream);

/*
 * Make the stream's later work wait, on the device, for the event's
 * latest record (none yet: the wait passes). NPURT_ERR_INVALID as for
 * npurt_event_record(); NPURT_ERR_DEVICE: the stream failed earlier.
 */
NPURT_API npurt_status npurt_stream_wait_event(npurt_stream *stream, npurt_event *event);

/*
 * Whether the event's latest record has run, without waiting: NPURT_OK when
 * it has (or the event was never recorded), NPURT_ERR_NOT_READY when it
 * has not, or the failure of the stream it was recorded on when that
 * stream failed before the record (NPURT_ERR_DEVICE, NPURT_ERR_TIMEOUT, as
 * npurt_stream_synchronize() reports it). NPURT_ERR_INVALID: NULL or
 * destroyed event.
 */
NPURT_API npurt_status npurt_event_query(npurt_event *event);

/*
 * Wait on the host, at most `timeout_ms` milliseconds (-1: without limit,
 * 0: poll), for the event's latest record to run (never recorded: returns
 * at once). NPURT_ERR_TIMEOUT when the time ran out; the recording
 * stream's failure as for npurt_event_query(); NPURT_ERR_DEVICE when the
 * device was reset meanwhile; NPURT_ERR_INVALID: NULL or destroyed event,
 * timeout below -1.
 */
NPURT_API npurt_status npurt_event_synchronize_timeout(npurt_event *event, int timeout_ms);

/* npurt_event_synchronize_timeout() with -1. */
NPURT_API npurt_status npurt_event_synchronize(npurt_event *event);

/*
 * Device time between two timing events' latest records, in ns.
 * NPURT_ERR_INVALID: NULL argument, an event created without
 * NPURT_EVENT_TIMING, events of different devices, or either not recorded
 * or its record not run yet (the message says which).
 */
NPURT_API npurt_status npurt_event_elapsed_ns(npurt_event *start, npurt_event *end,
					      int64_t *ns);

/*
 * Share an NPURT_EVENT_INTERPROCESS event: *fd gives whoever holds it the
 * event, for npurt_event_import() in another process (pass it over a Unix
 * socket); close it when done. Records in either process are records of
 * the same event, and waits anywhere are about the latest one made when
 * the wait was issued (none: the wait passes). NPURT_ERR_INVALID: NULL
 * argument, a destroyed event, an event created without
 * NPURT_EVENT_INTERPROCESS.
 *
 * On an interprocess event, npurt_event_query() and the synchronize calls
 * report a failure before the record as NPURT_ERR_DEVICE (the recording
 * stream, maybe in another process, says how), and
 * npurt_event_elapsed_ns() returns NPURT_ERR_INVALID (not timed).
 */
NPURT_API npurt_status npurt_event_export(npurt_event *event, int *fd);

/*
 * Take an event from an fd of npurt_event_export() (any process, any device
 * handle); the fd stays the caller's. The event is an interprocess one; free
 * it with npurt_event_destroy(). NPURT_ERR_INVALID: NULL argument, an fd
 * that is not an exported event.
 */
NPURT_API npurt_status npurt_event_import(npurt_device *dev, int fd, npurt_event **event);

/* ---- notifies ------------------------------------------------------ */

/*
 * A notify counts records: each npurt_notify_record() lets exactly one
 * npurt_stream_wait_notify() through, on the device (auto-reset), and a
 * record made before the wait is not lost. Notifies can be shared between
 * processes (npurt_notify_export(), npurt_notify_import()). Their calls
 * may run from any thread at once, except npurt_notify_destroy().
 */
typedef struct npurt_notify npurt_notify;

/*
 * Create a notify with no record. NPURT_ERR_INVALID: NULL argument;
 * NPURT_ERR_BUSY: the context holds all the events and notifies it may;
 * NPURT_ERR_NO_MEMORY: the device's table is full.
 */
NPURT_API npurt_status npurt_notify_create(npurt_device *dev, npurt_notify **notify);

/*
 * Free a notify handle; NULL is accepted. Work already issued that names
 * it is not affected, nor are other processes holding it.
 */
NPURT_API void npurt_notify_destroy(npurt_notify *notify);

/*
 * Add a record once the stream's work issued so far has run; the stream's
 * work is submitted to the device. NPURT_ERR_INVALID: NULL argument, a
 * destroyed notify (detected while its memory is not reused), a notify
 * and a stream of different devices; NPURT_ERR_DEVICE: the stream failed.
 */
NPURT_API npurt_status npurt_notify_record(npurt_notify *notify, npurt_stream *stream);

/*
 * Make the stream's later work wait, on the device, until the notify has a
 * record, and consume it. Statuses as for npurt_notify_record().
 */
NPURT_API npurt_status npurt_stream_wait_notify(npurt_stream *stream, npurt_notify *notify);

/*
 * Share a notify: *fd gives whoever holds it the notify, for
 * npurt_notify_import() in another process (pass it over a Unix socket);
 * close it when done. NPURT_ERR_INVALID: NULL or destroyed notify, NULL fd.
 */
NPURT_API npurt_status npurt_notify_export(npurt_notify *notify, int *fd);

/*
 * Take a notify from an fd of npurt_notify_export() (any process); the fd
 * stays the caller's. Records and waits in either process count against
 * the same notify. NPURT_ERR_INVALID: NULL argument, an fd that is not a
 * notify of this device; NPURT_ERR_BUSY: over the context's quota.
 */
NPURT_API npurt_status npurt_notify_import(npurt_device *dev, int fd, npurt_notify **notify);

/* ---- models: building ---------------------------------------------- */

/*
 * A model is a graph of ops of the device's op library over tensors, on
 * one or more streams, saved as a model file (Documentation/model-format.rst)
 * and loaded with npurt_model_load(). The graph builder makes one without
 * a compiler: inputs, constants (the weights), ops (each output's shape
 * inferred), outputs. Where an op on one stream touches memory an op on
 * another stream wrote (or reads what it will write), the builder orders
 * the two with an event. Feature maps (tensors the graph computes that
 * are not outputs) share memory by lifetime: npurt_graph_serialize() plans
 * them, and says how well in its npurt_plan_info.
 *
 * Tensors are numbered in the order made. A graph is used by one thread at
 * a time. Every call returns NPURT_ERR_INVALID for a NULL graph or an
 * argument the graph cannot take (the message says which), and
 * NPURT_ERR_NO_MEMORY, after which the graph takes no more.
 */
typedef struct npurt_graph npurt_graph;

#define NPURT_GRAPH_MAX_STREAMS	8

NPURT_API npurt_status npurt_graph_create(npurt_graph **graph);
NPURT_API void npurt_graph_destroy(npurt_graph *graph);

/*
 * An input of the model, bound at each run (npurt_model_bind()): a dense
 * tensor called `name` (unique among inputs and outputs). Inputs come
 * before outputs.
 */
NPURT_API npurt_status npurt_graph_input(npurt_graph *graph, const char *name, npurt_dtype dtype,
					 uint32_t ndim, const uint64_t *shape, uint32_t *tensor);

/* A constant, copied from `data` (dense, row-major) into the model's weights. */
NPURT_API npurt_status npurt_graph_constant(npurt_graph *graph, const char *name,
					    npurt_dtype dtype, uint32_t ndim, const uint64_t *shape,
					    const void *data, uint32_t *tensor);

/*
 * A tensor the graph computes (a feature map, dense), written by a later
 * npurt_graph_add_into(), npurt_graph_copy() or npurt_graph_fill(): for
 * outputs assembled from several ops (accumulations, pieces of views).
 * npurt_graph_add() makes its own output.
 */
NPURT_API npurt_status npurt_graph_tensor(npurt_graph *graph, const char *name,
					  npurt_dtype dtype, uint32_t ndim, const uint64_t *shape,
					  uint32_t *tensor);

/*
 * A strided view of tensor `base` (any kind), starting `offset` elements
 * in: element (i0, i1, ...) is base element offset + sum(i_k * stride[k]).
 * It must lie inside base. Ops may read and write through views.
 */
NPURT_API npurt_status npurt_graph_view(npurt_graph *graph, uint32_t base, uint64_t offset,
					uint32_t ndim, const uint64_t *shape,
					const uint64_t *stride, uint32_t *tensor);

/*
 * An op of the graph: `op` from npurt_op_lookup(), on `stream` (0 to
 * NPURT_GRAPH_MAX_STREAMS - 1; stream 0 is the model's first, the one its
 * runs complete on); the other fields as in npurt_launch_desc (GEMM's
 * alpha is taken as given: set it to 1 for a plain product). Set `size`
 * to sizeof(npurt_graph_node) (callers built before `win` set the size
 * that ends before it, and make no window ops).
 */
/*
 * The window of "conv2d", "maxpool2d" and "avgpool2d" over [N, C, H, W]:
 * [0] rows, [1] columns (Documentation/firmware-interface.rst, "Op
 * library"). kernel is the pools' (conv2d takes it from its weights);
 * strides and dilations at least 1; pads top, left, bottom, right; group
 * splits conv2d's channels; flags NPURT_WINDOW_COUNT_PAD makes avgpool2d
 * divide by the whole window. Every field fits 16 bits.
 */
typedef struct npurt_window {
	uint32_t kernel[2], stride[2], dilation[2], pad[4];
	uint32_t group;
	uint32_t flags;
} npurt_window;

#define NPURT_WINDOW_COUNT_PAD	(1u << 0)

/*
 * The depth of a window op over [N, C, D, H, W] (since 0.6; needs
 * firmware 0.6): kernel (the pools'; 0 for conv2d), stride and dilation
 * at least 1, pads front and back, every field within 16 bits. npurt_window
 * keeps the rows and columns. All zero for a window over [N, C, H, W].
 */
typedef struct npurt_window_depth {
	uint32_t kernel, stride, dilation, pad[2];
} npurt_window_depth;

/*
 * What "conv2d", "gemm" and the f32 arithmetic binary ops ("add", "mul",
 * ...) do to each output element on its way out, in the same launch:
 * with NPURT_EPILOGUE_BIAS add bias[c], a 1-D f32 tensor of one element
 * per output channel (conv2d) or column (gemm); then apply `act`, the id
 * of an f32 unary op ("relu", "gelu_erf", "clip", ... from
 * npurt_op_lookup(); 0: none) with alpha and beta as its parameters. All
 * f32. Needs firmware 0.5 (npurt_model_load() refuses a model with
 * epilogues on older firmware: NPURT_ERR_UNSUPPORTED). Zeroed: none.
 */
typedef struct npurt_epilogue {
	uint32_t flags;			/* NPURT_EPILOGUE_* */
	uint32_t bias;			/* graph tensor, with NPURT_EPILOGUE_BIAS */
	uint32_t act;
	float alpha, beta;
} npurt_epilogue;

#define NPURT_EPILOGUE_BIAS	(1u << 0)

typedef struct npurt_graph_node {
	uint32_t size;
	uint32_t op;
	uint32_t stream;
	uint32_t flags;			/* NPURT_LAUNCH_TRANS_A/B */
	uint32_t axis;
	uint32_t perm[NPURT_MAX_DIMS];
	float alpha, beta, eps;		/* eps: layernorm; alpha, beta: GEMM and */
	uint32_t block_dim;		/* the parameters of some unary ops */
	uint32_t in[2];			/* tensors; in[1] for two-input ops only */
	npurt_dtype out_dtype;		/* CAST: what to */
	npurt_window win;		/* window ops (since 0.4; a smaller size
					 * leaves it out) */
	npurt_epilogue epi;		/* since 0.5, the same way: none */
	npurt_window_depth win_d;	/* since 0.6, the same way: a 2-D window */
} npurt_graph_node;

/*
 * Add the op; *out is its output, a new dense tensor whose shape and dtype
 * follow from the op and its inputs. The op is checked as the model's
 * loader and the device check it (shapes, dtypes): NPURT_ERR_INVALID says
 * what does not fit. beta must be 0 (see npurt_graph_add_into()).
 */
NPURT_API npurt_status npurt_graph_add(npurt_graph *graph, const npurt_graph_node *node,
				       uint32_t *out);

/* The op writing tensor `out` (GEMM with beta != 0 also reads it). */
NPURT_API npurt_status npurt_graph_add_into(npurt_graph *graph, const npurt_graph_node *node,
					    uint32_t out);

/* Copy dense `src` to dense `dst` of the same size, on `stream`. */
NPURT_API npurt_status npurt_graph_copy(npurt_graph *graph, uint32_t stream, uint32_t src,
					uint32_t dst);

/* Fill dense `dst` (whole 32-bit words) with `value`, on `stream`. */
NPURT_API npurt_status npurt_graph_fill(npurt_graph *graph, uint32_t stream, uint32_t dst,
					uint32_t value);

/*
 * Make tensor `tensor` (one the graph computes, not a view) the output
 * called `name`: bound at each run, written by the model.
 */
NPURT_API npurt_status npurt_graph_output(npurt_graph *graph, uint32_t tensor, const char *name);

/*
 * What planning did. fmap_bytes is the feature-map memory the model needs;
 * fmap_sum what its feature maps take end to end; fmap_peak the most bytes
 * of them live at once (a lower bound for any plan). Sizes count each
 * tensor rounded up to 64 bytes. Set `size` to sizeof(npurt_plan_info).
 */
typedef struct npurt_plan_info {
	uint32_t size;
	uint32_t streams, ops, events, inputs, outputs;
	uint64_t weights_bytes;
	uint64_t fmap_bytes, fmap_sum, fmap_peak;
} npurt_plan_info;

/*
 * Plan the graph and write its model file into a malloc'ed buffer (*data,
 * *size; free() it), checked as npurt_model_load() would check it.
 * `info` may be NULL. NPURT_ERR_INVALID for a graph that is not a model
 * yet (no output, a stream without ops, ...).
 */
NPURT_API npurt_status npurt_graph_serialize(npurt_graph *graph, void **data, size_t *size,
					     npurt_plan_info *info);

/* The same, into the file at `path` (errors of the file system mapped by errno). */
NPURT_API npurt_status npurt_graph_save(npurt_graph *graph, const char *path,
					npurt_plan_info *info);

/* ---- models: loading and running ----------------------------------- */

/*
 * A loaded model: its weights and planned feature maps in device memory,
 * and each of its streams' ops sunk to the device as a task list
 * (uapi.rst, "Task lists"), so a run is one submit whatever the model's
 * size and the host does nothing per op. Inputs and outputs are bound to
 * memory (npurt_model_bind()) and a run reads and writes that memory.
 *
 * A model holds a stream (a hardware queue) per model stream, made at
 * load; npurt_model_execute() runs on them, npurt_model_execute_async()
 * runs its first stream's list on the caller's stream. Runs of one model
 * never overlap on the device (they share its feature maps): runs on one
 * stream queue back to back; a run on another stream than the last run's
 * first waits on the host for that run to complete.
 *
 * Threads: every call on a model takes its lock; a model may be used
 * from any thread. Unloading must not overlap other calls on the model.
 */
typedef struct npurt_model npurt_model;

/* May be unloaded (and reloaded at its next run) when a load finds HBM short. */
#define NPURT_MODEL_EVICTABLE		(1u << 0)
/* Run from the host, task by task (as on devices without task lists). */
#define NPURT_MODEL_HOST_DISPATCH	(1u << 1)

/*
 * How to load. Every field but size may be 0. `weights` and `work` are
 * the caller's memory to load into (at least the model's weights_bytes and
 * work_bytes of npurt_model_query(); the caller frees them after the
 * unload); `share` is a loaded model of the same file whose weights this
 * one uses instead of its own copy. Set `size` to sizeof(npurt_model_desc).
 */
typedef struct npurt_model_desc {
	uint32_t size;
	uint32_t flags;			/* NPURT_MODEL_* */
	npurt_mem *weights;
	npurt_mem *work;
	npurt_model *share;
} npurt_model_desc;

/* What a model needs and has. Set `size` to sizeof(npurt_model_info). */
typedef struct npurt_model_info {
	uint32_t size;
	uint32_t inputs, outputs, streams, ops;
	uint64_t weights_bytes;		/* its weights */
	uint64_t work_bytes;		/* feature maps and kernel argument blocks */
	bool loaded;			/* on the device now (not evicted) */
	bool sunk;			/* runs as task lists (not host dispatch) */
	uint32_t evicted;		/* models its loads evicted so far */
	uint64_t evicted_bytes;		/* and the device memory that freed */
} npurt_model_info;

/*
 * Check a model file in memory (as npurt_model_load() does, no device) and
 * say what it needs. NPURT_ERR_INVALID with the reason for a file that is
 * not a good model (truncated, corrupted, inconsistent).
 */
NPURT_API npurt_status npurt_model_query(const void *data, size_t size, npurt_model_info *info);

/*
 * Load a model file: check it (NPURT_ERR_INVALID with the reason, nothing
 * left on the device), then take its memory, upload its weights, and sink
 * its task lists. When device memory runs short, models loaded with
 * NPURT_MODEL_EVICTABLE that are idle are unloaded, least recently used
 * first, until this one fits (npurt_model_info_get() counts them); else
 * NPURT_ERR_NO_MEMORY. A device without task lists gets a host-dispatch
 * model. `desc` may be NULL.
 */
NPURT_API npurt_status npurt_model_load(npurt_device *dev, const char *path,
					const npurt_model_desc *desc, npurt_model **model);
NPURT_API npurt_status npurt_model_load_buffer(npurt_device *dev, const void *data, size_t size,
					       const npurt_model_desc *desc, npurt_model **model);

/* Unload: its runs complete first; its memory and queues go back. NULL is fine. */
NPURT_API void npurt_model_unload(npurt_model *model);

/*
 * What a loaded model needs and how it stands now: npurt_model_query()'s
 * fields, and whether it is on the device, runs sunk, and what its loads
 * evicted. Set info->size to sizeof(npurt_model_info). NPURT_ERR_INVALID
 * for a NULL argument or a size below it.
 */
NPURT_API npurt_status npurt_model_info_get(npurt_model *model, npurt_model_info *info);

/* An input or output: index 0 .. inputs - 1 are inputs, then the outputs. */
typedef struct npurt_io_info {
	uint32_t size;			/* set to sizeof(npurt_io_info) */
	bool output;
	npurt_dtype dtype;
	uint32_t ndim;
	uint64_t shape[NPURT_MAX_DIMS];
	uint64_t bytes;			/* dense, row-major */
	const char *name;		/* the model's, valid while it is loaded */
} npurt_io_info;

NPURT_API npurt_status npurt_model_io(npurt_model *model, uint32_t index, npurt_io_info *info);

/* The index of the input or output called `name`; NPURT_ERR_INVALID if none. */
NPURT_API npurt_status npurt_model_io_find(npurt_model *model, const char *name, uint32_t *index);

/*
 * Bind input or output `index` to `bytes` (its size exactly) at `ptr`,
 * for the runs that follow. Device memory (npurt_mem_host_ptr()) and
 * pinned or registered host memory are used in place: the run's I/O
 * table points at them, nothing is copied. Plain host memory goes through
 * a device buffer of the model's: inputs are copied in before each run,
 * outputs out after it. NPURT_ERR_INVALID: bad index, size, NULL pointer,
 * memory of another device.
 */
NPURT_API npurt_status npurt_model_bind(npurt_model *model, uint32_t index, void *ptr,
					size_t bytes);

/*
 * Run once on the model's own streams and wait, at most `timeout_ms` (-1:
 * no limit): past it the run is aborted (its queues stopped, new ones made
 * for the next run) and NPURT_ERR_TIMEOUT says so. A failed run gives
 * NPURT_ERR_DEVICE with the failing op (npurt_error_peek()),
 * and the next run starts afresh. NPURT_ERR_INVALID for an input or
 * output not bound.
 */
NPURT_API npurt_status npurt_model_execute(npurt_model *model, int32_t timeout_ms);

/*
 * Queue a run on `stream`, in order with its other work (events included):
 * inputs are read once the work issued before has run; later work sees
 * the outputs. A failure fails the stream, as any of its work would.
 */
NPURT_API npurt_status npurt_model_execute_async(npurt_model *model, npurt_stream *stream);

/*
 * Write the model's file to `path` (Documentation/model-format.rst): a
 * captured model's too, which npurt_model_load() then loads anywhere.
 * Errors of the file system mapped by errno; NPURT_ERR_INVALID for NULL.
 */
NPURT_API npurt_status npurt_model_save(npurt_model *model, const char *path);

typedef enum npurt_dispatch {
	NPURT_DISPATCH_SINK = 0,	/* one submit per run (task lists) */
	NPURT_DISPATCH_HOST = 1,	/* the ops' tasks submitted from the host */
	NPURT_DISPATCH_HOST_STEP = 2,	/* and each waited for: for comparisons */
} npurt_dispatch;

/*
 * How the following runs go. SINK needs a device with task lists
 * (NPURT_ERR_UNSUPPORTED); HOST_STEP a model of one stream.
 */
NPURT_API npurt_status npurt_model_set_dispatch(npurt_model *model, npurt_dispatch dispatch);

/*
 * Dumps, for finding which op of a model goes wrong: one run whose ops'
 * outputs (and, with NPURT_DUMP_INPUTS, their inputs) are copied out as
 * each op finishes, then handed to the caller one tensor at a time.
 * npurun --dump writes them as .npy files and npu-prof --compare finds the
 * first that differs from a reference (Documentation/profiling.rst).
 */
#define NPURT_DUMP_INPUTS	(1u << 0)

#define NPURT_DUMP_OUTPUT	0	/* npurt_dump_tensor.role: the op's output */
#define NPURT_DUMP_INPUT0	1	/* its first input, as the op read it */
#define NPURT_DUMP_INPUT1	2	/* its second */

typedef struct npurt_dump_tensor {
	uint32_t size;			/* sizeof(npurt_dump_tensor): it may grow */
	uint32_t seq;			/* 0, 1, ...: the order of the dump */
	uint32_t op;			/* the op's index in the model file */
	uint32_t role;			/* NPURT_DUMP_* */
	const char *op_name;		/* npurt_op_name() of a launch, "copy", "fill" */
	const char *name;		/* the tensor's in the model; may be "" */
	npurt_dtype dtype;
	uint32_t ndim;
	uint64_t shape[NPURT_MAX_DIMS];
	uint64_t bytes;			/* of data */
	const void *data;		/* dense, row-major; valid during the call */
} npurt_dump_tensor;

/* Anything but NPURT_OK stops the dump, which then returns it. */
typedef npurt_status (*npurt_dump_fn)(const npurt_dump_tensor *tensor, void *user);

/*
 * Run the model once, as npurt_model_execute() does (bound inputs read,
 * outputs written), its tasks issued from the host with a copy of each
 * dumped tensor after the op that wrote it (inputs: before the op that
 * reads them), into pinned memory of the dump's own. Then `fn` gets them
 * in an order of the ops that respects their dependencies: the first op
 * whose output is wrong is the first wrong tensor. `ops` selects: NULL or
 * "" every op, else a comma-separated list of fnmatch(3) patterns, an op
 * dumped when one matches its op name ("gemm") or its output's name.
 * NPURT_ERR_INVALID for NULL model or fn, unknown flags, a pattern no op
 * matches; NPURT_ERR_NO_MEMORY when the dumped tensors do not fit in
 * pinned memory (dump fewer ops); a failed run as npurt_model_execute().
 */
NPURT_API npurt_status npurt_model_dump(npurt_model *model, const char *ops, uint32_t flags,
					npurt_dump_fn fn, void *user);

/*
 * Serving: a run loop takes requests (inputs) from the caller, keeps up to
 * `depth` runs of the model queued back to back on a stream of its own,
 * and hands each run's outputs to `done` on its thread, in request order.
 * Buffers are the loop's (pinned host memory, zero copy): push copies the
 * inputs into a free set, waiting while all `depth` are in use; `outputs`
 * passed to `done` (the model's outputs in order) are valid during the
 * call. While its loop runs the model is the loop's: npurt_model_bind(),
 * npurt_model_execute(), npurt_model_execute_async(), npurt_model_dump()
 * and a second npurt_runloop_start() on it are refused (NPURT_ERR_INVALID).
 */
typedef struct npurt_runloop npurt_runloop;

typedef void (*npurt_runloop_fn)(void *user, uint64_t tag, npurt_status status,
				 void *const *outputs);

typedef struct npurt_runloop_desc {
	uint32_t size;			/* sizeof(npurt_runloop_desc) */
	uint32_t depth;			/* runs in flight: 1 to 16 (0: 3) */
	npurt_runloop_fn done;
	void *user;
} npurt_runloop_desc;

NPURT_API npurt_status npurt_runloop_start(npurt_model *model, const npurt_runloop_desc *desc,
					   npurt_runloop **loop);

/*
 * Queue a request: `inputs[i]` is the model's input i (its size), copied
 * before this returns; `tag` comes back with its outputs. A failed run
 * gives `done` its status and the loop goes on with the next request.
 * NPURT_ERR_INVALID after npurt_runloop_stop() began.
 */
NPURT_API npurt_status npurt_runloop_push(npurt_runloop *loop, const void *const *inputs,
					  uint64_t tag);

/*
 * Stop: every request pushed is run and handed to `done` first; the model
 * is then the caller's again, bound as it was before the loop started
 * (never to the loop's freed buffers). NULL is fine.
 */
NPURT_API void npurt_runloop_stop(npurt_runloop *loop);

/* ---- stream capture ------------------------------------------------- */

/*
 * Capture turns ordinary calls into a model. Between
 * npurt_stream_begin_capture() and npurt_stream_end_capture() the work
 * issued to the stream is recorded, not run: kernel launches, copies and
 * fills between device memory or pinned/registered host memory, event
 * records, and waits for events recorded in the capture. A stream that
 * waits for an event recorded in the capture joins it (up to 8 streams in
 * all), and its work from then on is the capture's too. End gives a
 * loaded model whose runs do all of it with one submit
 * (npurt_model_execute(), npurt_model_execute_async(), run loops) and
 * that npurt_model_save() writes to a file.
 *
 * The model's inputs and outputs are the allocations the work touched,
 * each one whole: the ones it only read are inputs ("input0", ... in the
 * order the capture met them), the ones it wrote outputs ("output0", ...),
 * each bound to the allocation it was, so a run with no other binding
 * works on the memory the calls named. Keep that memory while the model
 * may run, or bind others of the same size (an output the work also reads
 * must be device or registered memory: plain host memory is only copied
 * out).
 *
 * Calls that cannot be replayed fail with NPURT_ERR_CAPTURE, record
 * nothing, and the capture goes on: synchronizing or querying a capturing
 * stream (npurt_device_synchronize() while any stream of the device
 * captures), copies that the CPU does (pageable memory, npurt_copy()),
 * host callbacks, notifies, stream-ordered allocation, running a model on
 * the stream, waits for events recorded outside the capture (or in an
 * ended one), interprocess events, host waits and queries of an event
 * whose latest record was captured. A capture takes copies and fills it
 * can express as ops: copies of even sizes at even addresses, fills of
 * whole aligned 32-bit words, up to 4096 rows (NPURT_ERR_UNSUPPORTED
 * otherwise). Ops are checked as a model's are, at the call
 * (NPURT_ERR_INVALID with the reason).
 *
 * Threads: beginning and ending a capture must not overlap other calls on
 * its streams; between them, its streams may be used as usual.
 */

/*
 * Begin capturing on `stream` (its earlier work is submitted and runs).
 * NPURT_ERR_INVALID: NULL; NPURT_ERR_CAPTURE: it captures already (or
 * joined a capture); NPURT_ERR_DEVICE: it failed earlier.
 */
NPURT_API npurt_status npurt_stream_begin_capture(npurt_stream *stream);

/*
 * End the capture `stream` began: its streams run normally again and
 * *model is the captured work, loaded (npurt_model_unload() it). The
 * capture is over whatever this returns. NPURT_ERR_INVALID: NULL, a
 * stream not capturing or one that joined another's capture, nothing
 * captured, work that writes no memory; the load's statuses
 * (NPURT_ERR_NO_MEMORY, ...).
 */
NPURT_API npurt_status npurt_stream_end_capture(npurt_stream *stream, npurt_model **model);

/* Whether `stream` is capturing (began or joined a capture). */
NPURT_API npurt_status npurt_stream_is_capturing(npurt_stream *stream, bool *capturing);


/* ---- execution graphs: the host's side of a run ------------------- */

/*
 * An execution graph: small host steps (infer a shape, take memory,
 * launch, give memory back) that a run walks with as little cost as
 * possible between them (Documentation/executor.rst). A node is a
 * function and its context, in one of three sections: INIT runs once,
 * when the graph is prepared (weights, streams, allocators); MAIN at
 * every npurt_exec_run(); DEINIT once, when the graph is destroyed.
 * Relations order nodes of one section: `before` runs, and succeeds,
 * before `after` starts. A node's function returns NPURT_OK, or a
 * failure (with its message, npurt_set_error style) that stops the run:
 * no later node starts, and the run returns that status.
 *
 * The executor is chosen when the graph is prepared:
 *   SEQUENTIAL   one flat array of {function, context}, in an order that
 *                keeps every relation (ready nodes of higher priority
 *                first, then the order they were added in);
 *   TOPOLOGICAL  a ready set: a node runs once the last node it waits for
 *                is done, the highest priority first; a node may run a
 *                graph of its own from its function (an If's branch, a
 *                Loop's body: npurt_exec_run() nests);
 *   THREADED     two threads: the caller's runs the nodes of thread 0
 *                (shapes, memory) and a thread of the graph's those of
 *                thread 1 (launches), each waiting only where a relation
 *                crosses from the other.
 *
 * Threads: a graph is one caller's at a time; its functions run on the
 * threads above and may not add to or destroy their own graph.
 */
typedef struct npurt_exec npurt_exec;

typedef npurt_status (*npurt_exec_fn)(void *ctx);

enum npurt_exec_section {
	NPURT_EXEC_INIT = 0,
	NPURT_EXEC_MAIN = 1,
	NPURT_EXEC_DEINIT = 2,
};

typedef enum npurt_executor {
	NPURT_EXECUTOR_SEQUENTIAL = 0,
	NPURT_EXECUTOR_TOPOLOGICAL = 1,
	NPURT_EXECUTOR_THREADED = 2,
} npurt_executor;

/* A node to add. Set `size` to sizeof(npurt_exec_node_desc). */
typedef struct npurt_exec_node_desc {
	uint32_t size;
	uint32_t section;		/* enum npurt_exec_section */
	npurt_exec_fn fn;		/* not NULL */
	void *ctx;			/* fn's argument, the caller's */
	int32_t priority;		/* among ready nodes, higher runs first */
	uint32_t thread;		/* THREADED: 0 the caller's, 1 the graph's */
} npurt_exec_node_desc;

/*
 * Watching a graph's runs: before and after each MAIN node (its number
 * from npurt_exec_node(), and after: what it returned) and around each
 * run (begin true, then false with the run's status). Any may be NULL.
 * A graph with none attached pays nothing for them. Under THREADED the
 * node callbacks come from both threads. Set `size` to
 * sizeof(npurt_exec_subscriber).
 */
typedef struct npurt_exec_subscriber {
	uint32_t size;
	void (*before)(void *arg, uint32_t node);
	void (*after)(void *arg, uint32_t node, npurt_status status);
	void (*run)(void *arg, bool begin, npurt_status status);
	void *arg;
} npurt_exec_subscriber;

/* A new, empty graph. */
NPURT_API npurt_status npurt_exec_create(npurt_exec **graph);

/*
 * Destroy: if the graph was prepared, its DEINIT nodes run first (each
 * whatever the others return). NULL is fine.
 */
NPURT_API void npurt_exec_destroy(npurt_exec *graph);

/*
 * Add a node; *node (may be NULL) is its number, from 0 in the order
 * added. NPURT_ERR_INVALID: a bad desc, section or thread, or a graph
 * already prepared.
 */
NPURT_API npurt_status npurt_exec_node(npurt_exec *graph, const npurt_exec_node_desc *desc,
				       uint32_t *node);

/*
 * Order node `before` ahead of node `after`, both of one section (the
 * sections are ordered already). A relation may be given twice.
 * NPURT_ERR_INVALID: no such node, a node related to itself, nodes of
 * two sections, or a graph already prepared.
 */
NPURT_API npurt_status npurt_exec_order(npurt_exec *graph, uint32_t before, uint32_t after);

/*
 * Attach a subscriber (at most 8), before or after the graph is prepared,
 * not during a run. NPURT_ERR_INVALID: a bad desc; NPURT_ERR_BUSY: 8 are
 * attached.
 */
NPURT_API npurt_status npurt_exec_subscribe(npurt_exec *graph, const npurt_exec_subscriber *sub);

/*
 * Lower the graph for `executor`: check the relations (NPURT_ERR_INVALID
 * naming a node on a cycle), build the executor's arrays, and run INIT.
 * A failing INIT node fails the prepare: the DEINIT nodes then run at
 * destroy, as always, and must take a half-made state (the graph is
 * not prepared again). Once only.
 */
NPURT_API npurt_status npurt_exec_prepare(npurt_exec *graph, npurt_executor executor);

/*
 * Run the MAIN nodes once and return when all are done or one failed
 * (its status). NPURT_ERR_INVALID: a graph not prepared, or whose INIT
 * failed.
 */
NPURT_API npurt_status npurt_exec_run(npurt_exec *graph);

/* A graph's size: its nodes and relations, as added (any pointer may be NULL). */
NPURT_API npurt_status npurt_exec_count(npurt_exec *graph, uint32_t *nodes, uint64_t *relations);

#ifdef __cplusplus
}
#endif

#endif /* NPURT_H */
