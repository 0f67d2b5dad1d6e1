/* SPDX-License-Identifier: MIT */
/*
 * Internal: the handles the library has handed out and not taken back
 * (handle.c). Every public call checks the handles it is given here
 * before it reads them, so a freed, destroyed or never-made one, or one
 * of another kind, is refused with NPURT_ERR_INVALID and a message
 * instead of being read.
 */
#ifndef NPURT_HANDLE_H
#define NPURT_HANDLE_H

#include "npurt.h"

enum npurt_kind {
	NPURT_KIND_DEVICE = 1,
	NPURT_KIND_MEM,
	NPURT_KIND_STREAM,
	NPURT_KIND_EVENT,
	NPURT_KIND_NOTIFY,
	NPURT_KIND_MODEL,
	NPURT_KIND_GRAPH,
	NPURT_KIND_RUNLOOP,
	NPURT_KIND_EXEC,
	NPURT_KIND_COUNT
};

/* h is a live handle of `kind` from now on, of device dev: NPURT_OK or NPURT_ERR_NO_MEMORY. */
npurt_status npurt_handle_add(const void *h, enum npurt_kind kind, const npurt_device *dev,
			      const char *who);
/*
 * NPURT_OK if h is a live handle of `kind`; else NPURT_ERR_INVALID with
 * "who: NULL npurt_mem", "who: 0x... is no live npurt_mem (freed,
 * destroyed, or its device closed)" or "who: 0x... is an npurt_stream,
 * not an npurt_mem".
 */
npurt_status npurt_handle_check(const void *h, enum npurt_kind kind, const char *who);
/* As npurt_handle_check(), and h is no longer live if it was: for frees. */
npurt_status npurt_handle_take(const void *h, enum npurt_kind kind, const char *who);
/* h is no longer live (the library's own teardown; nothing if it was not). */
void npurt_handle_drop(const void *h);
/* None of dev's handles of `kind` is live any more (its close). */
void npurt_handles_drop_device(const npurt_device *dev, enum npurt_kind kind);

#endif /* NPURT_HANDLE_H */
