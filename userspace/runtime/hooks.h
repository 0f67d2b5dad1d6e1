/* SPDX-License-Identifier: MIT */
/*
 * Internal: what the model layer (userspace/model/) hooks into the
 * runtime. Calls go down only, so the runtime never calls model code by
 * name: a device's hooks are installed by model/ the first time the
 * device loads a model or begins a capture (npurt_model_hooks_install()),
 * and are NULL before, when there is no model and no capture to tell.
 *
 * Capture: the calls that put work on a stream ask npurt_capturing()
 * first; while it says so they hand the work to the capture through these
 * (model/capture.c) instead of the device, or refuse with
 * NPURT_ERR_CAPTURE (npurt_capture_refuse()) when a model cannot replay
 * it. A capturing stream implies installed hooks.
 */
#ifndef NPURT_HOOKS_H
#define NPURT_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>

#include "event.h"
#include "internal.h"

struct npurt_model_hooks {
	/* The work, recorded into the stream's capture; addresses are the device's. */
	npurt_status (*launch)(npurt_stream *s, const npurt_launch_desc *d, int inputs,
			       const char *who);
	npurt_status (*copy)(npurt_stream *s, uint64_t dst, size_t dpitch, uint64_t src,
			     size_t spitch, size_t width, size_t height, const char *who);
	npurt_status (*fill)(npurt_stream *s, uint64_t dst, uint32_t word, size_t size,
			     const char *who);
	/* A record on a capturing stream: the event marks a point of the capture. */
	npurt_status (*record)(npurt_event *ev, npurt_stream *s, const char *who);
	/* A wait on a capturing stream, or for an event recorded in a capture. */
	npurt_status (*wait)(npurt_stream *s, npurt_event *ev, const char *who);
	/* The stream goes: a capture it began is dropped, one it joined loses it. */
	void (*stream_gone)(npurt_stream *s);
	/* The device closes: its models are unloaded first. */
	void (*device_close)(npurt_device *dev);
};

static inline const struct npurt_model_hooks *npurt_hooks(npurt_device *dev)
{
	return atomic_load_explicit(&dev->hooks, memory_order_acquire);
}

static inline bool npurt_capturing(npurt_stream *s)
{
	return atomic_load_explicit(&s->capture, memory_order_acquire) != NULL;
}

/* NPURT_ERR_CAPTURE: `who` cannot be captured (the message says why not). */
npurt_status npurt_capture_refuse(npurt_stream *s, const char *who, const char *why);

static inline npurt_status npurt_capture_launch(npurt_stream *s, const npurt_launch_desc *d,
						int inputs, const char *who)
{
	return npurt_hooks(s->dev)->launch(s, d, inputs, who);
}

static inline npurt_status npurt_capture_copy(npurt_stream *s, uint64_t dst, size_t dpitch,
					      uint64_t src, size_t spitch, size_t width,
					      size_t height, const char *who)
{
	return npurt_hooks(s->dev)->copy(s, dst, dpitch, src, spitch, width, height, who);
}

static inline npurt_status npurt_capture_fill(npurt_stream *s, uint64_t dst, uint32_t word,
					      size_t size, const char *who)
{
	return npurt_hooks(s->dev)->fill(s, dst, word, size, who);
}

static inline npurt_status npurt_capture_record(npurt_event *ev, npurt_stream *s,
						const char *who)
{
	return npurt_hooks(s->dev)->record(ev, s, who);
}

/*
 * A wait that is the capture's: on a capturing stream, or for an event
 * recorded in a capture (the stream joins it). *handled false: neither,
 * the caller waits as usual.
 */
static inline npurt_status npurt_capture_wait(npurt_stream *s, npurt_event *ev, bool *handled,
					      const char *who)
{
	*handled = npurt_capturing(s) || atomic_load(&ev->cap_id);
	return *handled ? npurt_hooks(s->dev)->wait(s, ev, who) : NPURT_OK;
}

/* The event's latest record was captured: NPURT_ERR_CAPTURE for host calls on it. */
npurt_status npurt_capture_event_check(npurt_event *ev, const char *who);

/* A real record replaces a captured one. Under ev->lock. */
static inline void npurt_capture_event_recorded(npurt_event *ev)
{
	atomic_store(&ev->cap_id, 0);
}

/* Is any stream of the device capturing (npurt_device_synchronize())? */
bool npurt_capture_any(npurt_device *dev);

static inline void npurt_capture_stream_gone(npurt_stream *s)
{
	const struct npurt_model_hooks *h = npurt_hooks(s->dev);

	if (h)
		h->stream_gone(s);
}

#endif /* NPURT_HOOKS_H */
