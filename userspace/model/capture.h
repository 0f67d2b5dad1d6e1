/* SPDX-License-Identifier: MIT */
/*
 * Internal: stream capture (capture.c). The calls that put work on a
 * stream ask npurt_capturing() first; while it says so they hand their
 * work to the capture instead of the device, or refuse with
 * NPURT_ERR_CAPTURE when the work cannot be replayed by a model.
 */
#ifndef NPURT_CAPTURE_H
#define NPURT_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "internal.h"

static inline bool npurt_capturing(npurt_stream *s)
{
	return atomic_load_explicit(&s->capture, memory_order_acquire) != NULL;
}

/* NPURT_ERR_CAPTURE: `who` cannot be captured (the message says why not). */
npurt_status npurt_capture_refuse(npurt_stream *s, const char *who, const char *why);

/* The work, recorded into the stream's capture; addresses are the device's. */
npurt_status npurt_capture_launch(npurt_stream *s, const npurt_launch_desc *d, int inputs,
				  const char *who);
npurt_status npurt_capture_copy(npurt_stream *s, uint64_t dst, size_t dpitch, uint64_t src,
				size_t spitch, size_t width, size_t height, const char *who);
npurt_status npurt_capture_fill(npurt_stream *s, uint64_t dst, uint32_t word, size_t size,
				const char *who);

/* A record on a capturing stream: the event marks a point of the capture. */
npurt_status npurt_capture_record(npurt_event *ev, npurt_stream *s, const char *who);
/*
 * A wait that is the capture's: on a capturing stream, or for an event
 * recorded in a capture (the stream joins it). *handled false: neither,
 * the caller waits as usual.
 */
npurt_status npurt_capture_wait(npurt_stream *s, npurt_event *ev, bool *handled, const char *who);
/* The event's latest record was captured: NPURT_ERR_CAPTURE for host calls on it. */
npurt_status npurt_capture_event_check(npurt_event *ev, const char *who);
/* A real record replaces a captured one. Under ev->lock. */
void npurt_capture_event_recorded(npurt_event *ev);

/* Is any stream of the device capturing (npurt_device_synchronize())? */
bool npurt_capture_any(npurt_device *dev);
/* The stream goes: a capture it began is dropped, one it joined loses it. */
void npurt_capture_stream_gone(npurt_stream *s);

#endif /* NPURT_CAPTURE_H */
