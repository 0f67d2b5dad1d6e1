// SPDX-License-Identifier: MIT
/*
 * Loading models (npurt.h, "Models: loading and running"): a checked file
 * (model_file.c) goes to the device as weights, work memory (the planned
 * feature maps, then one kernel argument block per launch), a notify per
 * event between streams plus the ones that start and join the model's
 * streams, and a task list per stream (built in model_lists.c); runs are
 * in model_run.c.
 *
 * Each stream's list: the first stream records a start notify for each
 * other stream, runs its ops, then waits for each other stream's join
 * notify; every other stream waits for its start, runs its ops, records
 * its join. So a run is complete when its first stream's list is, the
 * other streams never run ahead into the next run's feature maps, and
 * runs queued back to back pipeline without the host.
 *
 * Inputs and outputs are the lists' I/O slots: wherever an op names one,
 * a patch puts the run's address there (in a task, or in the device's copy
 * of an argument block), so rebinding rewrites nothing.
 *
 * Eviction: the device's models are on a list in load order; a load that
 * finds device memory short unloads the least recently used idle
 * evictable ones (device resources only: the file stays in memory, and
 * their next run loads them again).
 *
 * Locking: dev->models_lock (the list, the weights' reference counts) is
 * taken before no model lock; a model's lock may be held while taking
 * dev->models_lock, and a victim's lock is only tried, never waited for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "handle.h"
#include "graph.h"
#include "model.h"
#include "npu_opdefs.h"


static uint64_t align_to(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static bool has_task_lists(npurt_device *dev)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_DEVICE_CAPS };

	return !npurt_ioctl(dev, DRM_IOCTL_NPU_GET_PARAM, &p) && (p.value & DRM_NPU_CAP_TASK_LISTS);
}

/* ---- the device's models: the list, eviction ------------------------------- */

static void link_model(npurt_model *m)
{
	npurt_device *dev = m->dev;

	npurt_model_hooks_install(dev);	/* the device's close unloads it */
	pthread_mutex_lock(&dev->models_lock);
	m->next = dev->models;
	if (dev->models)
		dev->models->prev = m;
	dev->models = m;
	pthread_mutex_unlock(&dev->models_lock);
}

static void unlink_model(npurt_model *m)
{
	npurt_device *dev = m->dev;

	pthread_mutex_lock(&dev->models_lock);
	if (m->prev)
		m->prev->next = m->next;
	else if (dev->models == m)
		dev->models = m->next;
	if (m->next)
		m->next->prev = m->prev;
	m->prev = m->next = NULL;
	pthread_mutex_unlock(&dev->models_lock);
}

/* Has its last run completed (without waiting)? */
static bool idle(npurt_model *m)
{
	return !m->last || npurt_stream_query(m->last) != NPURT_ERR_NOT_READY;
}

/*
 * Unload the least recently used idle evictable model other than `self`:
 * the device memory it held, in bytes, or 0 when there was none to unload.
 */
static uint64_t evict_one(npurt_model *self)
{
	npurt_device *dev = self->dev;
	npurt_model *victim = NULL;
	uint64_t freed = 0;

	pthread_mutex_lock(&dev->models_lock);
	for (npurt_model *m = dev->models; m; m = m->next) {
		if (m == self || !(m->flags & NPURT_MODEL_EVICTABLE) || !m->loaded ||
		    m->user_work || (victim && m->used >= victim->used))
			continue;
		if (pthread_mutex_trylock(&m->lock))
			continue;	/* in use: not idle */
		if (m->busy || !idle(m)) {
			pthread_mutex_unlock(&m->lock);
			continue;
		}
		if (victim)
			pthread_mutex_unlock(&victim->lock);
		victim = m;
	}
	pthread_mutex_unlock(&dev->models_lock);
	if (!victim)
		return 0;
	freed = victim->work_bytes + (victim->weights && victim->weights->own &&
				      victim->weights->refs == 1 ? victim->weights->bytes : 0);
	npurt_model_release_device(victim);
	pthread_mutex_unlock(&victim->lock);
	/* Blocks the model freed stay in the cache: the kernel gets them back. */
	npurt_mem_trim(dev, 0);
	return freed ? freed : 1;
}

/* Device memory for the model, unloading evictable models to make room. */
static npurt_status alloc_evicting(npurt_model *m, size_t bytes, npurt_mem **out,
				   const char *who, const char *what)
{
	npurt_status st;
	uint64_t freed;

	for (;;) {
		st = npurt_mem_alloc(m->dev, bytes, out);
		if (st != NPURT_ERR_NO_MEMORY)
			break;
		freed = evict_one(m);
		if (!freed)
			break;
		m->evicted++;
		m->evicted_bytes += freed;
	}
	if (st) {
		char why[256];

		snprintf(why, sizeof(why), "%s", npurt_last_error());
		return npurt_set_error(st, "%s: %s (%zu bytes): %s", who, what, bytes, why);
	}
	return NPURT_OK;
}

/* ---- device resources: take, give back ---------------------------------------- */

static void destroy_streams(npurt_model *m)
{
	for (int s = 0; s < NPUM_MAX_STREAMS; s++) {
		npurt_stream_destroy(m->streams[s]);
		m->streams[s] = NULL;
	}
}

npurt_status npurt_model_new_streams(npurt_model *m, const char *who)
{
	destroy_streams(m);
	for (uint32_t s = 0; s < m->m.plan.streams; s++) {
		npurt_status st = npurt_stream_create(m->dev, NPURT_PRIORITY_NORMAL, &m->streams[s]);

		if (st) {
			char why[256];

			snprintf(why, sizeof(why), "%s", npurt_last_error());
			destroy_streams(m);
			return npurt_set_error(st, "%s: the model's stream %u: %s", who, s, why);
		}
	}
	return NPURT_OK;
}

static void put_weights(npurt_model *m)
{
	struct model_weights *w = m->weights;
	bool last;

	if (!w)
		return;
	pthread_mutex_lock(&m->dev->models_lock);
	last = !--w->refs;
	pthread_mutex_unlock(&m->dev->models_lock);
	m->weights = NULL;
	if (!last)
		return;
	if (w->own)
		npurt_mem_free(w->mem);
	free(w);
}

void npurt_model_release_device(npurt_model *m)
{
	if (m->last) {
		npurt_stream_wait(m->last, m->last_seq, "npurt_model_unload");
		npurt_stream_put(m->last);
		m->last = NULL;
	}
	destroy_streams(m);
	for (int s = 0; s < NPUM_MAX_STREAMS; s++) {
		struct model_list *l = &m->lists[s];

		if (l->handle)
			npurt_ioctl(m->dev, DRM_IOCTL_NPU_TASKLIST_DESTROY,
				    &(struct drm_npu_tasklist_destroy){ .handle = l->handle });
		free(l->tasks);
		free(l->patches);
		memset(l, 0, sizeof(*l));
	}
	for (uint32_t i = 0; i < m->nnotify; i++)
		if (m->notify[i])
			npurt_ioctl(m->dev, DRM_IOCTL_NPU_SYNC_DESTROY,
				    &(struct drm_npu_sync_destroy){ .id = m->notify[i] });
	free(m->notify);
	m->notify = NULL;
	m->nnotify = 0;
	for (uint32_t i = 0; i < m->nio; i++) {
		npurt_mem_free(m->io[i].staging);
		m->io[i].staging = NULL;
		/* Plain host memory is bound through staging: bind it again. */
		if (m->io[i].staged)
			m->io[i] = (struct model_io){ 0 };
	}
	if (!m->user_work)
		npurt_mem_free(m->work);
	m->work = NULL;
	put_weights(m);
	m->loaded = false;
}

static npurt_status take_weights(npurt_model *m, const npurt_model_desc *d, const char *who)
{
	uint64_t bytes = m->m.plan.weights_bytes;
	struct model_weights *w;
	npurt_status st;

	if (d && d->share) {
		npurt_model *o = d->share;

		pthread_mutex_lock(&m->dev->models_lock);
		w = o->weights;
		if (w && w->bytes == bytes && w->crc == mf_crc32(m->m.weights, bytes))
			w->refs++;
		else
			w = NULL;
		pthread_mutex_unlock(&m->dev->models_lock);
		if (!w)
			return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->share has other weights "
					       "(or none loaded now)", who);
		m->weights = w;
		return NPURT_OK;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	w->bytes = bytes;
	w->crc = mf_crc32(m->m.weights, bytes);
	w->refs = 1;
	if (d && d->weights) {
		if (npurt_mem_size(d->weights) < bytes) {
			free(w);
			return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->weights has %zu bytes, "
					       "the model needs %llu", who, npurt_mem_size(d->weights),
					       (unsigned long long)bytes);
		}
		w->mem = d->weights;
	} else {
		st = alloc_evicting(m, bytes ? bytes : 64, &w->mem, who, "weights");
		if (st) {
			free(w);
			return st;
		}
		w->own = true;
	}
	/* Through the write-combined mapping: written once, never read back. */
	memcpy(npurt_mem_host_ptr(w->mem), m->m.weights, bytes);
	m->weights = w;
	return NPURT_OK;
}

static npurt_status take_notifies(npurt_model *m, const char *who)
{
	uint32_t n = m->m.plan.events + 2 * (m->m.plan.streams - 1);

	m->notify = calloc(n ? n : 1, sizeof(*m->notify));
	if (!m->notify)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	for (uint32_t i = 0; i < n; i++) {
		struct drm_npu_sync_create c = { .kind = DRM_NPU_SYNC_NOTIFY };
		int err = npurt_ioctl(m->dev, DRM_IOCTL_NPU_SYNC_CREATE, &c);

		if (err)
			return npurt_set_error(npurt_status_from_errno(err),
					       "%s: %u notifies for the model's streams: %s", who, n,
					       strerror(err));
		m->notify[m->nnotify++] = c.id;
	}
	return NPURT_OK;
}

/* Everything on the device, from the checked file; on failure, nothing. */
/*
 * The firmware (major << 16 | minor << 8) op `op` needs, and why: 0.5
 * for an epilogue (older firmware would ignore it), 0.6 for a tensor of
 * more than 4 dimensions or a 3-D window, 0.7 for an op that computes
 * in f32 on a tensor of f16, bf16 (or MaxPool's i8, u8), 0.9 for a GEMM
 * or convolution on i8 or u8, 0.10 for REQUANT, 0.11 for a GEMM on B in
 * panels (older firmware refuses the launch: better to say so at load
 * than at the first run).
 */
static uint32_t op_needs(const npurt_model *m, const struct npum_op *op, const char **why)
{
	if (op->type == NPUM_OP_KERNEL) {
		uint32_t need = 0;

		if (op->kernel == NPU_OP_GEMM && op->flags & NPU_OP_F_B_PANELS) {
			*why = "a GEMM on weights packed in panels";
			return 0x000b00;
		}
		if (op->kernel == NPU_OP_REQUANT) {
			*why = "requant";
			return 0x000a00;
		}
		if ((op->kernel == NPU_OP_GEMM || op->kernel == NPU_OP_CONV2D) &&
		    npum_op_read(op, 0) != NPUM_NONE &&
		    npu_dtype_is_byte_int(m->m.tensors[npum_op_read(op, 0)].dtype)) {
			*why = "a GEMM or convolution on i8 or u8 bytes (into i32)";
			return 0x000900;
		}

		for (int k = 0; k < NPUM_OP_READS + 1; k++) {
			uint32_t t = k < NPUM_OP_READS ? npum_op_read(op, k) : op->out;

			if (t != NPUM_NONE && npu_op_widens(op->kernel, m->m.tensors[t].dtype)) {
				*why = "a tensor it widens to f32 (f16, bf16, or i8 and u8 to maxpool)";
				need = 0x000700;
			}
			if (t != NPUM_NONE && m->m.tensors[t].ndim > 4 && !need) {
				*why = "a tensor of more than 4 dimensions";
				need = 0x000600;
			}
		}
		if (need)
			return need;
		if (op->window_d[1]) {
			*why = "a 3-D window";
			return 0x000600;
		}
	}
	*why = "an epilogue (fused bias or activation)";
	return op->epi_flags || op->act ? 0x000500 : 0;
}

static npurt_status check_firmware(npurt_model *m, const char *who)
{
	uint32_t need = 0, at = 0;
	const char *why = NULL;
	uint64_t fw;
	npurt_status st;

	for (uint32_t i = 0; i < m->m.nops; i++) {
		const char *w;
		uint32_t n = op_needs(m, &m->m.ops[i], &w);

		if (n > need) {
			need = n;
			at = i;
			why = w;
		}
	}
	if (!need)
		return NPURT_OK;
	st = npurt_device_param(m->dev, who, DRM_NPU_PARAM_FW_VERSION, &fw);
	if (st || (fw & 0xffff00) >= need)
		return st;
	return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: op %u has %s, which needs firmware "
			       "%u.%u; the device runs %u.%u", who, at, why, need >> 16,
			       need >> 8 & 0xff, (unsigned int)(fw >> 16) & 0xff,
			       (unsigned int)(fw >> 8) & 0xff);
}

static npurt_status take_device(npurt_model *m, const npurt_model_desc *d, const char *who)
{
	npurt_status st = check_firmware(m, who);

	if (!st)
		st = take_weights(m, d, who);

	if (!st) {
		if (m->user_work) {
			if (npurt_mem_size(m->user_work) < m->work_bytes)
				st = npurt_set_error(NPURT_ERR_INVALID, "%s: desc->work has %zu bytes, "
						     "the model needs %llu", who,
						     npurt_mem_size(m->user_work),
						     (unsigned long long)m->work_bytes);
			m->work = m->user_work;
		} else {
			/* A model of copies and fills needs none, but has a place. */
			st = alloc_evicting(m, m->work_bytes ? m->work_bytes : 64, &m->work, who,
					    "work memory");
		}
	}
	if (!st)
		st = take_notifies(m, who);
	if (!st)
		st = npurt_model_build_lists(m, who);
	if (!st && m->can_sink)
		st = npurt_model_sink_lists(m, who);
	if (!st)
		st = npurt_model_new_streams(m, who);
	if (st) {
		char why[512];

		snprintf(why, sizeof(why), "%s", npurt_last_error());
		npurt_model_release_device(m);
		return npurt_set_error(st, "%s", why);
	}
	m->loaded = true;
	return NPURT_OK;
}

npurt_status npurt_model_reload(npurt_model *m, const char *who)
{
	return m->loaded ? NPURT_OK : take_device(m, NULL, who);
}

/* ---- the API ---------------------------------------------------------------------- */

static void fill_info(const struct mf_model *mf, npurt_model_info *info)
{
	uint32_t kernels = 0;

	for (uint32_t i = 0; i < mf->nops; i++)
		kernels += mf->ops[i].type == NPUM_OP_KERNEL;
	*info = (npurt_model_info){
		.size = sizeof(*info), .inputs = mf->plan.inputs, .outputs = mf->plan.outputs,
		.streams = mf->plan.streams, .ops = mf->nops,
		.weights_bytes = mf->plan.weights_bytes,
		.work_bytes = align_to(mf->plan.fmap_bytes, 4096) + (uint64_t)kernels * MODEL_ARG_SLOT,
	};
}

npurt_status npurt_model_query(const void *data, size_t size, npurt_model_info *info)
{
	static const char who[] = "npurt_model_query";
	struct mf_model mf;
	char why[256];
	int err;

	if (!data || !info)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (info->size < sizeof(*info))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: info->size %u, want %zu", who,
				       info->size, sizeof(*info));
	err = mf_parse(data, size, &mf, why, sizeof(why));
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s", who,
				       err == ENOMEM ? "out of memory" : why);
	fill_info(&mf, info);
	mf_free(&mf);
	return NPURT_OK;
}

npurt_status npurt_model_load_buffer(npurt_device *dev, const void *data, size_t size,
				     const npurt_model_desc *desc, npurt_model **out)
{
	static const char who[] = "npurt_model_load";
	npurt_model_info info = { .size = sizeof(info) };
	npurt_model *m;
	npurt_status st;
	char why[256];
	int err;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !data || !out)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (desc && desc->size < sizeof(*desc))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->size %u, want %zu", who,
				       desc->size, sizeof(*desc));
	if (desc && desc->flags & ~(NPURT_MODEL_EVICTABLE | NPURT_MODEL_HOST_DISPATCH))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown flags %#x", who, desc->flags);
	if (desc && desc->share && desc->share->dev != dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: desc->share is another device's",
				       who);
	m = calloc(1, sizeof(*m));
	if (!m)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	err = mf_parse(data, size, &m->m, why, sizeof(why));
	if (err) {
		free(m);
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s", who,
				       err == ENOMEM ? "out of memory" : why);
	}
	fill_info(&m->m, &info);
	m->dev = dev;
	pthread_mutex_init(&m->lock, NULL);
	m->flags = desc ? desc->flags : 0;
	m->user_work = desc ? desc->work : NULL;
	m->can_sink = !(m->flags & NPURT_MODEL_HOST_DISPATCH) && has_task_lists(dev);
	m->dispatch = m->can_sink ? NPURT_DISPATCH_SINK : NPURT_DISPATCH_HOST;
	m->nio = m->m.plan.inputs + m->m.plan.outputs;
	m->fmap_bytes = align_to(m->m.plan.fmap_bytes, 4096);
	m->work_bytes = info.work_bytes;
	m->io = calloc(m->nio, sizeof(*m->io));
	if (!m->io) {
		st = npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		goto err;
	}
	if (desc && desc->work && npurt_mem_size(desc->work) < m->work_bytes) {
		st = npurt_set_error(NPURT_ERR_INVALID, "%s: desc->work has %zu bytes, the model "
				     "needs %llu", who, npurt_mem_size(desc->work),
				     (unsigned long long)m->work_bytes);
		goto err;
	}
	st = npurt_handle_add(m, NPURT_KIND_MODEL, dev, who);
	if (st)
		goto err;
	st = take_device(m, desc, who);
	if (st) {
		npurt_handle_drop(m);
		goto err;
	}
	link_model(m);
	*out = m;
	return NPURT_OK;
err:
	free(m->io);
	mf_free(&m->m);
	pthread_mutex_destroy(&m->lock);
	free(m);
	return st;
}

npurt_status npurt_model_load(npurt_device *dev, const char *path, const npurt_model_desc *desc,
			      npurt_model **out)
{
	static const char who[] = "npurt_model_load";
	struct stat sb;
	npurt_status st;
	uint8_t *data;
	ssize_t got;
	size_t at = 0;
	int fd, err;

	if (!path)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL path", who);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		err = errno;
		if (fd >= 0)
			close(fd);
		return npurt_set_error(err == ENOENT ? NPURT_ERR_INVALID : npurt_status_from_errno(err),
				       "%s: %s: %s", who, path, strerror(err));
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > NPUM_MAX_SEGMENT * 2) {
		close(fd);
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s: not a regular file of at most "
				       "%llu bytes", who, path,
				       (unsigned long long)(NPUM_MAX_SEGMENT * 2));
	}
	data = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	if (!data) {
		close(fd);
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: %s: out of memory", who, path);
	}
	while (at < (size_t)sb.st_size && (got = read(fd, data + at, (size_t)sb.st_size - at)) > 0)
		at += (size_t)got;
	err = errno;
	close(fd);
	if (at != (size_t)sb.st_size) {
		free(data);
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s: read %zu of %lld bytes: %s", who,
				       path, at, (long long)sb.st_size, strerror(err));
	}
	st = npurt_model_load_buffer(dev, data, at, desc, out);
	free(data);
	return st;
}

void npurt_model_unload(npurt_model *m)
{
	/* NULL is a no-op; a model unloaded already is said, and not read. */
	if (!m || npurt_handle_take(m, NPURT_KIND_MODEL, "npurt_model_unload"))
		return;
	unlink_model(m);
	pthread_mutex_lock(&m->lock);
	npurt_model_release_device(m);
	pthread_mutex_unlock(&m->lock);
	free(m->io);
	mf_free(&m->m);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void npurt_models_close(npurt_device *dev)
{
	while (dev->models)
		npurt_model_unload(dev->models);
}

npurt_status npurt_model_save(npurt_model *m, const char *path)
{
	static const char who[] = "npurt_model_save";
	npurt_status st;
	void *data;
	size_t len;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !path)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	pthread_mutex_lock(&m->lock);
	st = mf_serialize(&m->m, &data, &len) ?
	     npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who) : NPURT_OK;
	pthread_mutex_unlock(&m->lock);
	if (st)
		return st;
	st = graph_write_file(path, data, len, who);
	free(data);
	return st;
}

npurt_status npurt_model_info_get(npurt_model *m, npurt_model_info *info)
{
	static const char who[] = "npurt_model_info_get";

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !info)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (info->size < sizeof(*info))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: info->size %u, want %zu", who,
				       info->size, sizeof(*info));
	pthread_mutex_lock(&m->lock);
	fill_info(&m->m, info);
	info->loaded = m->loaded;
	info->sunk = m->dispatch == NPURT_DISPATCH_SINK;
	info->evicted = m->evicted;
	info->evicted_bytes = m->evicted_bytes;
	pthread_mutex_unlock(&m->lock);
	return NPURT_OK;
}

npurt_status npurt_model_io(npurt_model *m, uint32_t index, npurt_io_info *info)
{
	static const char who[] = "npurt_model_io";
	const struct npum_tensor *t;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !info)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (info->size < sizeof(*info))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: info->size %u, want %zu", who,
				       info->size, sizeof(*info));
	if (index >= m->nio)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: index %u of %u inputs and outputs",
				       who, index, m->nio);
	t = &m->m.tensors[m->m.io[index].tensor];
	*info = (npurt_io_info){ .size = sizeof(*info), .output = index >= m->m.plan.inputs,
				 .dtype = (npurt_dtype)t->dtype, .ndim = t->ndim, .bytes = t->bytes,
				 .name = m->m.strings + t->name };
	memcpy(info->shape, t->shape, sizeof(info->shape));
	return NPURT_OK;
}

npurt_status npurt_model_io_find(npurt_model *m, const char *name, uint32_t *index)
{
	static const char who[] = "npurt_model_io_find";

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !name || !index)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	for (uint32_t i = 0; i < m->nio; i++) {
		if (!strcmp(m->m.strings + m->m.tensors[m->m.io[i].tensor].name, name)) {
			*index = i;
			return NPURT_OK;
		}
	}
	return npurt_set_error(NPURT_ERR_INVALID, "%s: the model has no input or output \"%.64s\"",
			       who, name);
}

npurt_status npurt_model_bind(npurt_model *m, uint32_t index, void *ptr, size_t bytes)
{
	static const char who[] = "npurt_model_bind";
	enum npurt_place place;
	uint64_t addr, want;
	npurt_status st;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m || !ptr)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (npurt_model_loop_check(m, who))
		return NPURT_ERR_INVALID;
	if (index >= m->nio)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: index %u of %u inputs and outputs",
				       who, index, m->nio);
	want = m->m.tensors[m->m.io[index].tensor].bytes;
	if (bytes != want)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s \"%s\" takes %llu bytes, not %zu",
				       who, index < m->m.plan.inputs ? "input" : "output",
				       m->m.strings + m->m.tensors[m->m.io[index].tensor].name,
				       (unsigned long long)want, bytes);
	st = npurt_mem_where(m->dev, ptr, bytes, &place, &addr, who, "the binding");
	if (st)
		return st;
	pthread_mutex_lock(&m->lock);
	if (place == NPURT_PAGEABLE && !m->io[index].staging) {
		st = npurt_mem_alloc(m->dev, bytes, &m->io[index].staging);
		if (st) {
			char why[256];

			snprintf(why, sizeof(why), "%s", npurt_last_error());
			st = npurt_set_error(st, "%s: a device buffer for plain host memory: %s", who,
					     why);
		}
	}
	if (!st)
		m->io[index] = (struct model_io){
			.ptr = ptr, .staged = place == NPURT_PAGEABLE,
			.staging = m->io[index].staging,
			.addr = place == NPURT_PAGEABLE ? npurt_mem_device_addr(m->io[index].staging) :
				addr };
	pthread_mutex_unlock(&m->lock);
	return st;
}

npurt_status npurt_model_set_dispatch(npurt_model *m, npurt_dispatch d)
{
	static const char who[] = "npurt_model_set_dispatch";
	npurt_status st = NPURT_OK;

	if (npurt_handle_check(m, NPURT_KIND_MODEL, who))
		return NPURT_ERR_INVALID;
	if (!m)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL model", who);
	if ((unsigned int)d > NPURT_DISPATCH_HOST_STEP)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: unknown dispatch %d", who, (int)d);
	pthread_mutex_lock(&m->lock);
	if (d == NPURT_DISPATCH_SINK && !m->can_sink)
		st = npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: the model was loaded for host "
				     "dispatch (NPURT_MODEL_HOST_DISPATCH, or a device without task "
				     "lists)", who);
	else if (d == NPURT_DISPATCH_HOST_STEP && m->m.plan.streams > 1)
		st = npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: stepping runs one stream; the model "
				     "has %u", who, m->m.plan.streams);
	else
		m->dispatch = d;
	pthread_mutex_unlock(&m->lock);
	return st;
}
