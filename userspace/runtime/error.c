// SPDX-License-Identifier: MIT
#include "error.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <drm/npu_accel.h>

static _Thread_local char last_error[512];
static _Thread_local char last_call[64];
static _Thread_local npurt_error last_record;

void npurt_runtime_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
	if (major)
		*major = NPURT_VERSION_MAJOR;
	if (minor)
		*minor = NPURT_VERSION_MINOR;
	if (patch)
		*patch = NPURT_VERSION_PATCH;
}

const char *npurt_last_error(void)
{
	return last_error;
}

/*
 * Messages often quote the one before (a call failing because another
 * did): formatting into a copy keeps the quoted text from being
 * overwritten as it is read.
 */
static void set_message(const char *fmt, va_list ap)
{
	char msg[sizeof(last_error)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	memcpy(last_error, msg, sizeof(msg));
}

/* The failing function: the message's leading "%s" names it by convention. */
static void set_call(const char *fmt, va_list ap)
{
	const char *who = strncmp(fmt, "%s", 2) ? NULL : va_arg(ap, const char *);
	size_t n = who ? strcspn(who, ": ") : 0;

	if (n >= sizeof(last_call))
		n = sizeof(last_call) - 1;
	memcpy(last_call, who ? who : "", n);
	last_call[n] = 0;
}

npurt_status npurt_set_error(npurt_status status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_message(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	set_call(fmt, ap);
	va_end(ap);
	last_record = (npurt_error){ .size = sizeof(npurt_error), .status = status,
				     .call = last_call[0] ? last_call : NULL };
	/* "Not yet" is an answer, not a failure. */
	npurt_log(status == NPURT_ERR_NOT_READY ? NPURT_LOG_DEBUG : NPURT_LOG_ERROR, "%s: %s",
		  npurt_status_name(status), last_error);
	return status;
}

npurt_status npurt_set_error_record(const npurt_error *rec, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_message(fmt, ap);
	va_end(ap);
	last_record = *rec;
	last_record.size = sizeof(npurt_error);
	npurt_log(NPURT_LOG_ERROR, "%s: %s", npurt_status_name(rec->status), last_error);
	return rec->status;
}

npurt_status npurt_error_copy(npurt_error *out, const npurt_error *rec, const char *who)
{
	size_t n;

	if (!out || out->size < NPURT_ERROR_V1_SIZE)
		return !who ? NPURT_ERR_INVALID : !out ?
		       npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who) :
		       npurt_set_error(NPURT_ERR_INVALID, "%s: out->size %u, want sizeof(npurt_error)"
				       " (%zu)", who, out->size, sizeof(npurt_error));
	n = out->size < sizeof(*rec) ? out->size : sizeof(*rec);
	memcpy((char *)out + sizeof(out->size), (const char *)rec + sizeof(rec->size),
	       n - sizeof(out->size));
	return NPURT_OK;
}

npurt_status npurt_error_peek(npurt_error *out)
{
	npurt_error rec = last_record;

	/* A bad argument here keeps the record it would have read. */
	return npurt_error_copy(out, &rec, NULL);
}

void npurt_error_clear(void)
{
	last_error[0] = 0;
	last_call[0] = 0;
	memset(&last_record, 0, sizeof(last_record));
}

npurt_status npurt_status_from_errno(int err)
{
	switch (err) {
	/* A stale handle or id (ENOENT) is the caller's, not a missing device. */
	case EINVAL:
	case EFAULT:
	case ENOTTY:
	case ENOENT:
	case EEXIST:
		return NPURT_ERR_INVALID;
	case ENODEV:
	case ENXIO:
		return NPURT_ERR_NO_DEVICE;
	/* No free queue, a full quota: a resource taken, not a device error. */
	case EBUSY:
	case EAGAIN:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
		return NPURT_ERR_BUSY;
	case EACCES:
	case EPERM:
		return NPURT_ERR_PERMISSION;
	case ENOMEM:
	case ENOSPC:
		return NPURT_ERR_NO_MEMORY;
	case ETIMEDOUT:
	case ETIME:
		return NPURT_ERR_TIMEOUT;
	case EOPNOTSUPP:
		return NPURT_ERR_UNSUPPORTED;
	default:
		return NPURT_ERR_DEVICE;
	}
}

const char *npurt_status_name(npurt_status status)
{
	switch (status) {
	case NPURT_OK: return "NPURT_OK";
	case NPURT_ERR_INVALID: return "NPURT_ERR_INVALID";
	case NPURT_ERR_NO_DEVICE: return "NPURT_ERR_NO_DEVICE";
	case NPURT_ERR_PERMISSION: return "NPURT_ERR_PERMISSION";
	case NPURT_ERR_NO_MEMORY: return "NPURT_ERR_NO_MEMORY";
	case NPURT_ERR_TIMEOUT: return "NPURT_ERR_TIMEOUT";
	case NPURT_ERR_DEVICE: return "NPURT_ERR_DEVICE";
	case NPURT_ERR_UNSUPPORTED: return "NPURT_ERR_UNSUPPORTED";
	case NPURT_ERR_INTERNAL: return "NPURT_ERR_INTERNAL";
	case NPURT_ERR_NOT_READY: return "NPURT_ERR_NOT_READY";
	case NPURT_ERR_BUSY: return "NPURT_ERR_BUSY";
	case NPURT_ERR_CAPTURE: return "NPURT_ERR_CAPTURE";
	}
	return "NPURT_ERR_UNKNOWN";
}

npurt_status npurt_last_status(void)
{
	return last_record.status;
}

const char *npurt_task_type_name(uint32_t type)
{
	static const char *const names[] = {
		[DRM_NPU_TASK_NOP] = "nop", [DRM_NPU_TASK_COPY] = "copy",
		[DRM_NPU_TASK_FILL] = "fill", [DRM_NPU_TASK_KERNEL] = "kernel launch",
		[DRM_NPU_TASK_TIMESTAMP] = "timestamp", [DRM_NPU_TASK_BARRIER] = "barrier",
		[DRM_NPU_TASK_EVENT_RECORD] = "event record",
		[DRM_NPU_TASK_EVENT_WAIT] = "event wait",
		[DRM_NPU_TASK_EVENT_RESET] = "event reset",
		[DRM_NPU_TASK_NOTIFY_RECORD] = "notify record",
		[DRM_NPU_TASK_NOTIFY_WAIT] = "notify wait", [DRM_NPU_TASK_RUN_LIST] = "task list",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : NULL;
}

const char *npurt_device_status_name(uint32_t status)
{
	switch (status) {
	case DRM_NPU_JOB_DONE: return "done";
	case DRM_NPU_JOB_FAULT: return "memory fault";
	case DRM_NPU_JOB_INVALID: return "invalid task";
	case DRM_NPU_JOB_ABORTED: return "aborted";
	case DRM_NPU_JOB_KERNEL_ERROR: return "kernel error";
	case DRM_NPU_JOB_TIMEOUT: return "no progress within the time limit";
	case DRM_NPU_JOB_RESET: return "device reset";
	}
	return NULL;
}
