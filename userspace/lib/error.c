// SPDX-License-Identifier: MIT
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

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

npurt_status npurt_set_error(npurt_status status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return status;
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
	}
	return "NPURT_ERR_UNKNOWN";
}
