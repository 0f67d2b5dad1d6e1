// SPDX-License-Identifier: MIT
/*
 * Interprocess events (NPURT_EVENT_INTERPROCESS): a drm syncobj each.
 *
 * The device's events belong to the context that made them, but a drm
 * syncobj can be shared as a file descriptor, and a submit can both
 * replace a syncobj's fence with its batch's (out_syncobjs) and wait for
 * one (in_syncobjs) on either path. So a record is a batch of the stream
 * that signals the syncobj when it completes (the stream's gathered work,
 * or a NOP after what it issued), and a stream waiting for the event
 * submits a NOP batch that waits for the fence the syncobj holds then.
 * The host waits on the syncobj itself, and reads the fence's error from
 * a sync file.
 *
 * The syncobj is made signalled: a kernel refuses a wait on a syncobj with
 * no fence at all, and an event never recorded has nothing to wait for.
 * Records are not timed: nothing carries a device time across processes.
 *
 * libdrm's syncobj calls return -1 (most) or -errno (the wait) and leave
 * errno set either way: the errno is what is reported.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <xf86drm.h>

#include "error.h"
#include "event.h"

npurt_status npurt_ipc_syncobj_create(npurt_device *dev, uint32_t *syncobj, const char *who)
{
	int err = drmSyncobjCreate(dev->fd, DRM_SYNCOBJ_CREATE_SIGNALED, syncobj) ? errno : 0;

	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: SYNCOBJ_CREATE: %s",
				       who, dev->node, strerror(err));
	return NPURT_OK;
}

npurt_status npurt_ipc_syncobj_import(npurt_device *dev, int fd, uint32_t *syncobj,
				      const char *who)
{
	int err;

	if (fd < 0)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: fd %d", who, fd);
	err = drmSyncobjFDToHandle(dev->fd, fd, syncobj) ? errno : 0;
	if (err)
		return npurt_set_error(err == EINVAL || err == EBADF ? NPURT_ERR_INVALID :
				       npurt_status_from_errno(err),
				       "%s: SYNCOBJ_FD_TO_HANDLE of fd %d: %s%s", who, fd,
				       strerror(err), err == EINVAL ?
				       " (not an event of npurt_event_export())" : "");
	return NPURT_OK;
}

void npurt_ipc_syncobj_destroy(npurt_device *dev, uint32_t syncobj)
{
	/* Batches that signal or wait for its fence hold the fence, not it. */
	drmSyncobjDestroy(dev->fd, syncobj);
}

npurt_status npurt_ipc_event_export(npurt_event *ev, int *fd, const char *who)
{
	int err = drmSyncobjHandleToFD(ev->dev->fd, ev->syncobj, fd) ? errno : 0;

	if (err)
		return npurt_set_error(npurt_status_from_errno(err),
				       "%s: SYNCOBJ_HANDLE_TO_FD: %s", who, strerror(err));
	return NPURT_OK;
}

npurt_status npurt_ipc_event_record(npurt_event *ev, npurt_stream *s, const char *who)
{
	return npurt_stream_submit_sync(s, 0, ev->syncobj, who);
}

npurt_status npurt_ipc_stream_wait_event(npurt_stream *s, npurt_event *ev, const char *who)
{
	return npurt_stream_submit_sync(s, ev->syncobj, 0, who);
}

/*
 * How the latest record's batch ended: NPURT_OK, NPURT_ERR_NOT_READY, or
 * the failure its fence carries.
 */
static npurt_status fence_status(npurt_event *ev, const char *who)
{
	struct sync_file_info info;
	int sf = -1, err = drmSyncobjExportSyncFile(ev->dev->fd, ev->syncobj, &sf) ? errno : 0;

	if (err)
		return npurt_set_error(npurt_status_from_errno(err),
				       "%s: SYNCOBJ_HANDLE_TO_FD (sync file): %s", who, strerror(err));
	memset(&info, 0, sizeof(info));
	if (ioctl(sf, SYNC_IOC_FILE_INFO, &info))
		err = errno;
	close(sf);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: SYNC_IOC_FILE_INFO: %s",
				       who, strerror(err));
	if (info.status == 0)
		return npurt_set_error(NPURT_ERR_NOT_READY, "%s: the event's record has not run yet",
				       who);
	if (info.status < 0)
		return npurt_set_error(NPURT_ERR_DEVICE,
				       "%s: the work before the event's record failed (%s; the "
				       "recording stream's npurt_stream_synchronize says how)",
				       who, strerror(-info.status));
	return NPURT_OK;
}

npurt_status npurt_ipc_event_query(npurt_event *ev, const char *who)
{
	return fence_status(ev, who);
}

npurt_status npurt_ipc_event_synchronize(npurt_event *ev, int64_t deadline_ns, int timeout_ms,
					 const char *who)
{
	int err = drmSyncobjWait(ev->dev->fd, &ev->syncobj, 1, deadline_ns, 0, NULL) ? errno : 0;

	if (err == ETIME || err == ETIMEDOUT)
		return npurt_set_error(NPURT_ERR_TIMEOUT,
				       "%s: the event's record did not run within %d ms", who,
				       timeout_ms);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: SYNCOBJ_WAIT: %s", who,
				       strerror(err));
	return fence_status(ev, who);
}
