// SPDX-License-Identifier: MIT
/*
 * Notifies: device notifies (DRM_NPU_SYNC_NOTIFY), which count records;
 * each device wait consumes one. They need no pool like events: a record
 * is never lost or superseded, so one device notify serves for good.
 *
 * The driver gives a context one id per notify, however often it is
 * imported (importing one the context holds returns the same id and no
 * new hold), so the device keeps a count per id of the handles naming it
 * and the last one to go drops the context's hold.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"

struct npurt_notify_ref {
	struct npurt_notify_ref *next;
	uint32_t id;
	uint32_t handles;
};

struct npurt_notify {
	uint32_t id;
	npurt_device *dev;
	npurt_notify *prev, *next;	/* dev->notify_live, under notify_lock */
};

void npurt_notifies_open(npurt_device *dev)
{
	pthread_mutex_init(&dev->notify_lock, NULL);
	dev->notifies = NULL;
}

void npurt_notifies_close(npurt_device *dev)
{
	struct npurt_notify_ref *r, *next;

	/* Notifies the caller left go as npurt_notify_destroy() takes them. */
	while (dev->notify_live)
		npurt_notify_destroy(dev->notify_live);
	/* The holds go with the file. */
	for (r = dev->notifies; r; r = next) {
		next = r->next;
		free(r);
	}
	pthread_mutex_destroy(&dev->notify_lock);
}

/* A handle for id, which the context holds (one more handle on it). */
static npurt_status notify_new(npurt_device *dev, uint32_t id, npurt_notify **out,
			       const char *who)
{
	npurt_notify *n = calloc(1, sizeof(*n));
	struct npurt_notify_ref *r;

	if (!n)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	if (npurt_handle_add(n, NPURT_KIND_NOTIFY, dev, who)) {
		free(n);
		return NPURT_ERR_NO_MEMORY;
	}
	pthread_mutex_lock(&dev->notify_lock);
	for (r = dev->notifies; r && r->id != id; r = r->next)
		;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			pthread_mutex_unlock(&dev->notify_lock);
			npurt_handle_drop(n);
			free(n);
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		}
		r->id = id;
		r->next = dev->notifies;
		dev->notifies = r;
	}
	r->handles++;
	n->id = id;
	n->dev = dev;
	n->next = dev->notify_live;
	if (n->next)
		n->next->prev = n;
	dev->notify_live = n;
	pthread_mutex_unlock(&dev->notify_lock);
	*out = n;
	return NPURT_OK;
}

/* The last handle of an id lets the context's hold go. */
static void notify_put(npurt_device *dev, uint32_t id)
{
	struct npurt_notify_ref **link, *r;
	bool last = false;

	pthread_mutex_lock(&dev->notify_lock);
	for (link = &dev->notifies; (r = *link) && r->id != id; link = &r->next)
		;
	if (r && !--r->handles) {
		*link = r->next;
		free(r);
		last = true;
	}
	pthread_mutex_unlock(&dev->notify_lock);
	if (last) {
		struct drm_npu_sync_destroy destroy = { .id = id };

		/* Batches that name it keep it alive in the driver. */
		npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_DESTROY, &destroy);
	}
}

static npurt_status check_notify(const npurt_notify *n, const npurt_stream *s, const char *who)
{
	if (npurt_handle_check(n, NPURT_KIND_NOTIFY, who))
		return NPURT_ERR_INVALID;
	if (s && n->dev != s->dev)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: the notify and the stream are of different devices", who);
	return NPURT_OK;
}

npurt_status npurt_notify_create(npurt_device *dev, npurt_notify **out)
{
	static const char who[] = "npurt_notify_create";
	struct drm_npu_sync_create create = { .kind = DRM_NPU_SYNC_NOTIFY };
	npurt_status st;
	int err;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_CREATE, &create);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: SYNC_CREATE: %s",
				       who, dev->node, strerror(err));
	st = notify_new(dev, create.id, out, who);
	if (st) {
		struct drm_npu_sync_destroy destroy = { .id = create.id };

		npurt_ioctl(dev, DRM_IOCTL_NPU_SYNC_DESTROY, &destroy);
	}
	return st;
}

void npurt_notify_destroy(npurt_notify *n)
{
	/* NULL is a no-op; a notify destroyed already is said, and not read. */
	if (!n || npurt_handle_take(n, NPURT_KIND_NOTIFY, "npurt_notify_destroy"))
		return;
	pthread_mutex_lock(&n->dev->notify_lock);
	if (n->prev)
		n->prev->next = n->next;
	else
		n->dev->notify_live = n->next;
	if (n->next)
		n->next->prev = n->prev;
	pthread_mutex_unlock(&n->dev->notify_lock);
	notify_put(n->dev, n->id);
	free(n);
}

/* A NOTIFY_RECORD or NOTIFY_WAIT task on the stream. */
static npurt_status notify_push(npurt_notify *n, npurt_stream *s, uint16_t type, const char *who)
{
	struct drm_npu_task t = { .type = type };
	npurt_status st;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	st = check_notify(n, s, who);
	if (st)
		return st;
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "notifies are not captured (events are)");
	t.args[0] = n->id;
	st = npurt_stream_push(s, &t, 1, NULL, who);
	/*
	 * Submitted at once: a record's waiters may be other streams or
	 * processes, and the driver keeps a notify alive only for submitted
	 * batches that name it (the caller may destroy it right after).
	 */
	return st ? st : npurt_stream_flush(s, who);
}

npurt_status npurt_notify_record(npurt_notify *n, npurt_stream *s)
{
	return notify_push(n, s, DRM_NPU_TASK_NOTIFY_RECORD, "npurt_notify_record");
}

npurt_status npurt_stream_wait_notify(npurt_stream *s, npurt_notify *n)
{
	return notify_push(n, s, DRM_NPU_TASK_NOTIFY_WAIT, "npurt_stream_wait_notify");
}

npurt_status npurt_notify_export(npurt_notify *n, int *fd)
{
	static const char who[] = "npurt_notify_export";
	struct drm_npu_notify_export args = { 0 };
	npurt_status st = check_notify(n, NULL, who);
	int err;

	if (st)
		return st;
	if (!fd)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL fd", who);
	args.id = n->id;
	err = npurt_ioctl(n->dev, DRM_IOCTL_NPU_NOTIFY_EXPORT, &args);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: NOTIFY_EXPORT: %s", who,
				       strerror(err));
	*fd = args.fd;
	return NPURT_OK;
}

npurt_status npurt_notify_import(npurt_device *dev, int fd, npurt_notify **out)
{
	static const char who[] = "npurt_notify_import";
	struct drm_npu_notify_import args = { .fd = fd };
	int err;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (fd < 0)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: fd %d", who, fd);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_NOTIFY_IMPORT, &args);
	if (err)
		return npurt_set_error(err == EBADF ? NPURT_ERR_INVALID : npurt_status_from_errno(err),
				       "%s: NOTIFY_IMPORT of fd %d: %s%s", who, fd, strerror(err),
				       err == EINVAL ? " (not a notify of this device)" : "");
	/* A hold the context had already is not dropped on failure: no new one. */
	return notify_new(dev, args.id, out, who);
}
