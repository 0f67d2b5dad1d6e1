// SPDX-License-Identifier: MIT
/*
 * Events.
 *
 * An event is a device event: recording it is an EVENT_RECORD task and a
 * stream waiting for it an EVENT_WAIT task. A device event records once,
 * so recording again takes a fresh one: waits issued after a record
 * never pass on an earlier one. The host waits for an event by waiting
 * for the batch that records it, which also ends if that stream fails
 * before it gets there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "internal.h"

static npurt_status stream_submit1(npurt_stream *s, struct drm_npu_task t, const char *who)
{
	return npurt_stream_push(s, &t, 1, NULL, who);
}

struct npurt_event {
	npurt_device *dev;
	uint32_t id;			/* the device event of the next record */
	npurt_stream *stream;		/* the latest record's stream, referenced */
	uint64_t seq;			/* and its batch */
	uint32_t recorded_id;		/* and its device event */
};

static npurt_status event_new(npurt_device *dev, uint32_t *id, const char *who)
{
	struct drm_npu_sync_create create = { .kind = DRM_NPU_SYNC_EVENT };
	int err = npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_CREATE, &create);

	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: SYNC_CREATE: %s",
				       who, dev->node, strerror(err));
	*id = create.id;
	return NPURT_OK;
}

static void event_drop(npurt_device *dev, uint32_t id)
{
	struct drm_npu_sync_destroy destroy = { .id = id };

	/* Batches that name it keep it alive in the driver. */
	npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_DESTROY, &destroy);
}

npurt_status npurt_event_create(npurt_device *dev, npurt_event **out)
{
	static const char who[] = "npurt_event_create";
	npurt_event *ev;
	npurt_status st;

	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	st = event_new(dev, &ev->id, who);
	if (st) {
		free(ev);
		return st;
	}
	ev->dev = dev;
	*out = ev;
	return NPURT_OK;
}

void npurt_event_destroy(npurt_event *ev)
{
	if (!ev)
		return;
	if (ev->stream) {
		if (ev->recorded_id != ev->id)
			event_drop(ev->dev, ev->recorded_id);
		npurt_stream_put(ev->stream);
	}
	event_drop(ev->dev, ev->id);
	free(ev);
}

npurt_status npurt_event_record(npurt_event *ev, npurt_stream *s)
{
	static const char who[] = "npurt_event_record";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_EVENT_RECORD };
	npurt_status st;
	uint32_t next;

	if (!ev || !s)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (ev->dev != s->dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: event and stream are of different devices",
				       who);
	/* The device event of the coming record, and one for the record after it. */
	st = event_new(ev->dev, &next, who);
	if (st)
		return st;
	t.args[0] = ev->id;
	st = stream_submit1(s, t, who);
	if (st) {
		event_drop(ev->dev, next);
		return st;
	}
	if (ev->stream) {
		event_drop(ev->dev, ev->recorded_id);
		npurt_stream_put(ev->stream);
	}
	atomic_fetch_add(&s->refs, 1);
	ev->stream = s;
	ev->seq = s->issued;
	ev->recorded_id = ev->id;
	ev->id = next;
	return NPURT_OK;
}

npurt_status npurt_stream_wait_event(npurt_stream *s, npurt_event *ev)
{
	static const char who[] = "npurt_stream_wait_event";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_EVENT_WAIT };

	if (!ev || !s)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (!ev->stream)
		return NPURT_OK;	/* never recorded: nothing to wait for */
	t.args[0] = ev->recorded_id;
	return stream_submit1(s, t, who);
}

npurt_status npurt_event_synchronize(npurt_event *ev)
{
	if (!ev)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_event_synchronize: NULL event");
	if (!ev->stream)
		return NPURT_OK;
	return npurt_stream_wait(ev->stream, ev->seq, "npurt_event_synchronize");
}

static npurt_status event_time(npurt_event *ev, uint64_t *ts, const char *who)
{
	struct drm_npu_event_query q = { 0 };
	int err;

	if (!ev->stream)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: an event was never recorded", who);
	q.id = ev->recorded_id;
	err = npurt_ioctl(ev->dev, DRM_IOCTL_NPU_EVENT_QUERY, &q);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: EVENT_QUERY: %s", who,
				       strerror(err));
	if (!q.recorded)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: an event's record has not run yet (synchronize it first)",
				       who);
	*ts = q.timestamp_ns;
	return NPURT_OK;
}

npurt_status npurt_event_elapsed_ns(npurt_event *start, npurt_event *end, int64_t *ns)
{
	static const char who[] = "npurt_event_elapsed_ns";
	uint64_t t0 = 0, t1 = 0;
	npurt_status st;

	if (!start || !end || !ns)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	st = event_time(start, &t0, who);
	if (!st)
		st = event_time(end, &t1, who);
	if (!st)
		*ns = (int64_t)(t1 - t0);
	return st;
}
