// SPDX-License-Identifier: MIT
/*
 * Streams: a hardware queue each, taking work through npurt_stream_push()
 * (events and notifies are in event.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "internal.h"

npurt_status npurt_stream_push(npurt_stream *s, const struct drm_npu_task *tasks,
			       uint32_t count, uint64_t *seq, const char *who)
{
	npurt_status st = npurt_path_submit(s, tasks, count, who);

	if (!st && seq)
		*seq = s->issued;
	return st;
}

npurt_status npurt_stream_flush(npurt_stream *s, const char *who)
{
	(void)s;
	(void)who;
	return NPURT_OK;
}

npurt_status npurt_stream_wait(npurt_stream *s, uint64_t seq, const char *who)
{
	npurt_status st = npurt_stream_flush(s, who);

	return st ? st : npurt_path_wait(s, seq, who);
}

static npurt_status stream_submit1(npurt_stream *s, struct drm_npu_task t, const char *who)
{
	return npurt_stream_push(s, &t, 1, NULL, who);
}

npurt_status npurt_stream_create(npurt_device *dev, npurt_stream_priority priority,
				 npurt_stream **out)
{
	static const char who[] = "npurt_stream_create";
	/* The default depth: submit.c keeps each stream's work within it. */
	struct drm_npu_queue_create create = { .priority = (uint32_t)priority,
					       .depth = DRM_NPU_QUEUE_DEPTH_DEFAULT };
	npurt_stream *s;
	int err;

	if (!dev || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if ((unsigned int)priority > NPURT_PRIORITY_HIGH)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: priority %d is not one of "
				       "NPURT_PRIORITY_LOW/NORMAL/HIGH", who, (int)priority);
	s = calloc(1, sizeof(*s));
	if (!s)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_QUEUE_CREATE, &create);
	if (err) {
		free(s);
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: QUEUE_CREATE: %s%s",
				       who, dev->node, strerror(err),
				       err == EBUSY ? " (no hardware queue free)" : "");
	}
	s->dev = dev;
	s->queue = create.queue;
	atomic_init(&s->refs, 1);
	/* memory.c looks at every live stream when memory is freed. */
	pthread_mutex_lock(&dev->lock);
	s->next = dev->streams;
	if (dev->streams)
		dev->streams->prev = s;
	dev->streams = s;
	pthread_mutex_unlock(&dev->lock);
	*out = s;
	return NPURT_OK;
}

void npurt_stream_put(npurt_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1)
		free(s);
}

void npurt_stream_destroy(npurt_stream *s)
{
	struct drm_npu_queue_destroy destroy = { 0 };

	if (!s)
		return;
	/* Failed or not, nothing of it may be in flight when it goes. */
	npurt_stream_wait(s, s->issued, "npurt_stream_destroy");
	npurt_path_drain(s);
	destroy.queue = s->queue;
	npurt_ioctl(s->dev, DRM_IOCTL_NPU_QUEUE_DESTROY, &destroy);
	npurt_mem_free(s->arena);
	s->arena = NULL;
	pthread_mutex_lock(&s->dev->lock);
	s->destroyed = true;
	if (s->prev)
		s->prev->next = s->next;
	else
		s->dev->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&s->dev->lock);
	npurt_stream_put(s);
}

npurt_status npurt_stream_synchronize(npurt_stream *s)
{
	if (!s)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_stream_synchronize: NULL stream");
	return npurt_stream_wait(s, s->issued, "npurt_stream_synchronize");
}

npurt_status npurt_stream_query(npurt_stream *s)
{
	if (!s)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_stream_query: NULL stream");
	return npurt_path_query(s, "npurt_stream_query");
}

npurt_status npurt_memset_async(npurt_stream *s, uint64_t dst, uint32_t pattern, size_t size)
{
	static const char who[] = "npurt_memset_async";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_FILL, .args = { dst, size, pattern } };

	if (!s)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL stream", who);
	if (!size || (dst | size) & 3)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s(%#llx, %zu bytes): address and size must be non-zero multiples of 4",
				       who, (unsigned long long)dst, size);
	return stream_submit1(s, t, who);
}

npurt_status npurt_memcpy_async(npurt_stream *s, uint64_t dst, uint64_t src, size_t size)
{
	static const char who[] = "npurt_memcpy_async";
	struct drm_npu_task t = { .type = DRM_NPU_TASK_COPY, .args = { dst, src, size } };

	if (!s)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL stream", who);
	if (!size)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: size is 0", who);
	return stream_submit1(s, t, who);
}
