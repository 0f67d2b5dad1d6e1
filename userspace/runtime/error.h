/* SPDX-License-Identifier: MIT */
/* Internal: the thread-local last-error message. */
#ifndef NPURT_ERROR_H
#define NPURT_ERROR_H

#include "npurt.h"

/*
 * What the libraries layered on libnpurt (libnpuonnx) call of its
 * internals: exported under the version node NPURT_PRIVATE
 * (userspace/libnpurt.map), never declared to applications, and only
 * callable by a library of the same release (the packages pin it).
 */
#if defined(__GNUC__)
#define NPURT_PRIVATE_API __attribute__((visibility("default")))
#else
#define NPURT_PRIVATE_API
#endif

/* Record a failure and return its status, so callers can `return err(...)`. */
NPURT_PRIVATE_API npurt_status npurt_set_error(npurt_status status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Record a failure as `rec` says (a stream's device failure) with its
 * message, and return rec->status.
 */
npurt_status npurt_set_error_record(const npurt_error *rec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Copy `rec` into a caller's record as its size allows (peeks); who == NULL:
 * a bad `out` is refused without recording the failure.
 */
npurt_status npurt_error_copy(npurt_error *out, const npurt_error *rec, const char *who);

/* The status of this thread's last failure (NPURT_OK: none recorded). */
NPURT_PRIVATE_API npurt_status npurt_last_status(void);

/* Map an errno from the kernel to a status. */
NPURT_PRIVATE_API npurt_status npurt_status_from_errno(int err);

#endif /* NPURT_ERROR_H */
