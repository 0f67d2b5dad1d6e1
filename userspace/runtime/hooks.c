// SPDX-License-Identifier: MIT
/*
 * The runtime's side of capture (hooks.h): what it can answer without the
 * model layer, from the state model/capture.c keeps in its structs.
 */
#include <pthread.h>

#include "error.h"
#include "hooks.h"

npurt_status npurt_capture_refuse(npurt_stream *s, const char *who, const char *why)
{
	(void)s;
	return npurt_set_error(NPURT_ERR_CAPTURE, "%s: not allowed while the stream captures: %s",
			       who, why);
}

npurt_status npurt_capture_event_check(npurt_event *ev, const char *who)
{
	if (!atomic_load(&ev->cap_id))
		return NPURT_OK;
	return npurt_set_error(NPURT_ERR_CAPTURE, "%s: the event's latest record is in a stream "
			       "capture: it is a point of a model, not of the device's work", who);
}

bool npurt_capture_any(npurt_device *dev)
{
	bool any;

	pthread_mutex_lock(&dev->capture_lock);
	any = dev->captures != NULL;
	pthread_mutex_unlock(&dev->capture_lock);
	return any;
}
