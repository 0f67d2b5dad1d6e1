/* SPDX-License-Identifier: MIT */
/* Internal: the library's log (log.c; NPURT_LOG, NPURT_LOG_FILE). */
#ifndef NPURT_LOG_H
#define NPURT_LOG_H

#include <stdbool.h>

enum npurt_log_level {
	NPURT_LOG_ERROR = 1,	/* a call failed */
	NPURT_LOG_WARN = 2,	/* something the caller may want to know went wrong */
	NPURT_LOG_INFO = 3,	/* devices, streams and models coming and going */
	NPURT_LOG_DEBUG = 4,	/* every submit and wait */
};

/* Whether messages of level `l` are written: to skip building them. */
bool npurt_log_on(enum npurt_log_level l);

void npurt_log(enum npurt_log_level l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* NPURT_LOG_H */
