/* SPDX-License-Identifier: MIT */
/* Internal: the thread-local last-error message. */
#ifndef NPURT_ERROR_H
#define NPURT_ERROR_H

#include "npurt.h"

/* Record a failure and return its status, so callers can `return err(...)`. */
npurt_status npurt_set_error(npurt_status status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Map an errno from the kernel to a status. */
npurt_status npurt_status_from_errno(int err);

#endif /* NPURT_ERROR_H */
