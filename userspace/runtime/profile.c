// SPDX-License-Identifier: MIT
/*
 * The profiler: the device's timeline of every task, joined with what
 * the host knows, written as Chrome trace-event JSON
 * (Documentation/profiling.rst).
 *
 * Where the driver has profiling rings (DRM_NPU_CAP_PROFILE), a device
 * that profiles has one ring in a buffer of its own, which every stream
 * created from then on shares (the records' tag is the queue). The
 * device writes a record per completed task while the ring's enable is
 * set; npurt_profiler_stop() clears it, so a stopped profiler costs the
 * device nothing but counting its FENCEs. Records are drained into host
 * memory as batches are submitted and when the profile is written, and
 * joined there with the batch each came from: the stream, the call that
 * queued it, a launch's op, a model's node (the model layer names its
 * task lists' tasks), and when the host submitted it. Host spans (runtime
 * calls that wait or allocate) go beside them, and DRM_NPU_CLOCK puts
 * both timelines on CLOCK_MONOTONIC.
 *
 * Everything here is under prof->lock, taken last: no hook calls out
 * while holding it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "handle.h"
#include "internal.h"
#include "log.h"
#include "memory.h"
#include "profile.h"

#define RECORDS_DEFAULT		16384	/* 512 KiB of device memory */

/* A batch a stream submitted while recording. */
struct pbatch {
	uint32_t queue;
	uint32_t kseq;			/* the queue's number, low 32 bits: the records' */
	uint64_t seq;			/* the stream's */
	int64_t enqueue_ns;
	uint32_t tid;
	uint32_t first, count;		/* its tasks in prof->tasks */
};

struct ptask {
	uint8_t type;
	uint32_t list;			/* a RUN_LIST's task list */
	const char *call;		/* the runtime call that queued it */
	const char *what;		/* a launch's op, or NULL */
};

struct pspan {
	const char *name;
	uint32_t tid;
	int64_t t0, t1;
};

struct plist {
	uint32_t handle, count;
	char **names;
};

/* A record taken from the ring, and its batch (-1: none known). */
struct precord {
	struct drm_npu_prof_record r;
	int64_t batch;
};

/* The latest batch of each (queue, kseq): open addressing. */
struct pslot {
	uint64_t key;			/* queue << 32 | kseq; 0: empty (queues are >= 1) */
	int64_t batch;
};

struct npurt_prof {
	pthread_mutex_t lock;
	atomic_bool on;			/* written under lock, read anywhere */
	uint32_t handle;		/* the ring's buffer */
	size_t bytes;
	uint32_t entries;
	volatile struct drm_npu_prof_ring *ring;
	int64_t t0;			/* CLOCK_MONOTONIC at the first start */
	char *path;			/* NPURT_PROFILE's file */
	struct precord *recs;
	size_t nrecs, caprecs;
	struct pslot *index;
	size_t capindex, nindex;
	struct pbatch *batches;
	size_t nbatches, capbatches;
	struct ptask *tasks;
	size_t ntasks, captasks;
	struct pspan *spans;
	size_t nspans, capspans;
	struct plist *lists;
	size_t nlists, caplists;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Room for one more in a growing array: 0, or -1 out of memory. */
static int grow(void **a, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? *cap * 2 : 256;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*a, want * size);
	if (!p)
		return -1;
	*a = p;
	*cap = want;
	return 0;
}

#define GROW(p, arr, n, cap) grow((void **)&(p)->arr, &(p)->cap, (p)->n, sizeof(*(p)->arr))

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int64_t index_find(const struct npurt_prof *p, uint32_t queue, uint32_t kseq)
{
	uint64_t key = (uint64_t)queue << 32 | kseq;

	if (!p->capindex)
		return -1;
	for (size_t h = slot_of(key, p->capindex); p->index[h].key; h = (h + 1) & (p->capindex - 1))
		if (p->index[h].key == key)
			return p->index[h].batch;
	return -1;
}

static void index_put(struct pslot *index, size_t cap, uint64_t key, int64_t batch)
{
	size_t h = slot_of(key, cap);

	while (index[h].key && index[h].key != key)
		h = (h + 1) & (cap - 1);
	index[h] = (struct pslot){ key, batch };
}

/*
 * Batch `i` is now the latest of its (queue, kseq): a queue id and its
 * numbers come back once a stream is destroyed and another made, which
 * is why records are joined as they are drained, and everything is
 * drained before a new queue is made. -1 out of memory.
 */
static int index_add(struct npurt_prof *p, size_t i)
{
	const struct pbatch *b = &p->batches[i];

	if (2 * (p->nindex + 1) > p->capindex) {
		size_t cap = p->capindex ? 2 * p->capindex : 1024;
		struct pslot *n = calloc(cap, sizeof(*n));

		if (!n)
			return -1;
		for (size_t k = 0; k < p->capindex; k++)
			if (p->index[k].key)
				index_put(n, cap, p->index[k].key, p->index[k].batch);
		free(p->index);
		p->index = n;
		p->capindex = cap;
	}
	if (index_find(p, b->queue, b->kseq) < 0)
		p->nindex++;
	index_put(p->index, p->capindex, (uint64_t)b->queue << 32 | b->kseq, (int64_t)i);
	return 0;
}

/* Forget every batch of queue `queue`: the id now names a new queue. */
static void index_forget_queue(struct npurt_prof *p, uint32_t queue)
{
	struct pslot *n;

	if (!p->capindex)
		return;
	n = calloc(p->capindex, sizeof(*n));
	if (!n)
		return;		/* kept: a record may join an older batch */
	p->nindex = 0;
	for (size_t k = 0; k < p->capindex; k++) {
		if (!p->index[k].key || p->index[k].key >> 32 == queue)
			continue;
		index_put(n, p->capindex, p->index[k].key, p->index[k].batch);
		p->nindex++;
	}
	free(p->index);
	p->index = n;
}

/* Take the records the device wrote, joined with their batches: under prof->lock. */
static void drain_locked(struct npurt_prof *p)
{
	const struct drm_npu_prof_record *ring = (const void *)(p->ring + 1);
	uint32_t head = __atomic_load_n(&p->ring->head, __ATOMIC_ACQUIRE);
	uint32_t tail = p->ring->tail, from = tail, unknown = 0;

	/* The mapping is writable: never more than the ring holds. */
	if (head - tail > p->entries)
		tail = head - p->entries;

	for (; tail != head; tail++) {
		struct precord *r;

		if (GROW(p, recs, nrecs, caprecs))
			break;		/* kept on the device until there is room */
		r = &p->recs[p->nrecs++];
		r->r = ring[tail & (p->entries - 1)];
		r->batch = index_find(p, r->r.tag, r->r.seq);
		unknown += r->batch < 0;
	}
	__atomic_store_n(&p->ring->tail, tail, __ATOMIC_RELEASE);
	if (tail != from)
		npurt_log(NPURT_LOG_DEBUG, "profiler: %u records taken, %u of unknown batches",
			  tail - from, unknown);
}

static void ring_free(npurt_device *dev, struct npurt_prof *p)
{
	if (!p->ring)
		return;
	munmap((void *)p->ring, p->bytes);
	npurt_gem_close(dev, p->handle);
	p->ring = NULL;
}

/* The device's ring, made at the profiler's first start. */
static npurt_status ring_make(npurt_device *dev, struct npurt_prof *p, const char *who)
{
	struct drm_npu_get_param caps = { .param = DRM_NPU_PARAM_DEVICE_CAPS };
	struct drm_npu_bo_create create = { .page_policy = DRM_NPU_BO_PAGE_HUGE_FIRST };
	struct drm_npu_bo_info info = { 0 };
	const char *env = getenv("NPURT_PROFILE_RECORDS");
	char *end = NULL;
	unsigned long n = env ? strtoul(env, &end, 0) : RECORDS_DEFAULT;
	void *map;
	int err;

	if ((end && (end == env || *end)) || n < DRM_NPU_PROF_MIN || n > DRM_NPU_PROF_MAX || (n & (n - 1)))
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NPURT_PROFILE_RECORDS=%s: not a "
				       "power of two from %u to %u", who, env, DRM_NPU_PROF_MIN,
				       DRM_NPU_PROF_MAX);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_GET_PARAM, &caps);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: GET_PARAM: %s", who,
				       strerror(err));
	if (!(caps.value & DRM_NPU_CAP_PROFILE))
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: %s has no profiling rings "
				       "(driver 0.5 on firmware 0.13 has)", who, dev->node);
	p->entries = (uint32_t)n;
	p->bytes = (sizeof(struct drm_npu_prof_ring) + n * sizeof(struct drm_npu_prof_record) +
		    4095) & ~(size_t)4095;
	create.size = p->bytes;
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_CREATE, &create);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %zu bytes of device "
				       "memory for the profiling ring: %s", who, p->bytes,
				       strerror(err));
	info.handle = create.handle;
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_INFO, &info);
	map = err ? MAP_FAILED : mmap(NULL, p->bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
				      dev->fd, (off_t)info.mmap_offset);
	if (map == MAP_FAILED) {
		err = err ? err : errno;
		npurt_gem_close(dev, create.handle);
		return npurt_set_error(npurt_status_from_errno(err), "%s: mapping the profiling "
				       "ring: %s", who, strerror(err));
	}
	memset(map, 0, sizeof(struct drm_npu_prof_ring));
	p->handle = create.handle;
	p->ring = map;
	return NPURT_OK;
}

static struct npurt_prof *prof_get(npurt_device *dev)
{
	return atomic_load_explicit(&dev->prof, memory_order_acquire);
}

/* The device's profiler, made at first use (under dev->default_lock). */
static npurt_status prof_make(npurt_device *dev, const char *who, struct npurt_prof **out)
{
	struct npurt_prof *p;
	npurt_status st = NPURT_OK;

	pthread_mutex_lock(&dev->default_lock);
	p = prof_get(dev);
	if (!p) {
		p = calloc(1, sizeof(*p));
		st = p ? ring_make(dev, p, who) :
			 npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		if (st) {
			free(p);
			p = NULL;
		} else {
			pthread_mutex_init(&p->lock, NULL);
			p->t0 = mono_ns();
			atomic_store_explicit(&dev->prof, p, memory_order_release);
		}
	}
	pthread_mutex_unlock(&dev->default_lock);
	*out = p;
	return st;
}

static npurt_status set_on(npurt_device *dev, bool on, const char *who)
{
	struct npurt_prof *p;
	npurt_status st;

	if (!dev)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL device", who);
	p = prof_get(dev);
	if (!p && !on)
		return NPURT_OK;
	if (!p) {
		st = prof_make(dev, who, &p);
		if (st)
			return st;
	}
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->on, on);
	__atomic_store_n(&p->ring->enable, on, __ATOMIC_RELEASE);
	if (!on)
		drain_locked(p);
	pthread_mutex_unlock(&p->lock);
	npurt_log(NPURT_LOG_INFO, "device %s: profiler %s", dev->node, on ? "on" : "off");
	return NPURT_OK;
}

npurt_status npurt_profiler_start(npurt_device *dev)
{
	return set_on(dev, true, "npurt_profiler_start");
}

npurt_status npurt_profiler_stop(npurt_device *dev)
{
	return set_on(dev, false, "npurt_profiler_stop");
}

npurt_status npurt_prof_open(npurt_device *dev, const char *who)
{
	const char *path = getenv("NPURT_PROFILE");
	struct npurt_prof *p;
	npurt_status st;

	if (!path || !*path)
		return NPURT_OK;
	st = set_on(dev, true, who);
	if (st)
		return st;
	p = prof_get(dev);
	p->path = strdup(path);
	if (!p->path)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	return NPURT_OK;
}

void npurt_prof_close(npurt_device *dev)
{
	struct npurt_prof *p = prof_get(dev);

	if (!p)
		return;
	if (p->path && npurt_profiler_write(dev, p->path))
		npurt_log(NPURT_LOG_ERROR, "%s", npurt_last_error());
	ring_free(dev, p);
	for (size_t i = 0; i < p->nlists; i++) {
		for (uint32_t k = 0; k < p->lists[i].count; k++)
			free(p->lists[i].names[k]);
		free(p->lists[i].names);
	}
	free(p->lists);
	free(p->recs);
	free(p->index);
	free(p->batches);
	free(p->tasks);
	free(p->spans);
	free(p->path);
	atomic_store_explicit(&dev->prof, NULL, memory_order_release);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void npurt_prof_queue(npurt_device *dev, struct drm_npu_queue_create *create)
{
	struct npurt_prof *p = prof_get(dev);

	if (!p || !p->ring)
		return;
	/* The id it gets may be a destroyed queue's: its records are all there. */
	pthread_mutex_lock(&p->lock);
	drain_locked(p);
	pthread_mutex_unlock(&p->lock);
	create->prof_handle = p->handle;
	create->prof_entries = p->entries;
	create->prof_offset = 0;
}

void npurt_prof_queue_made(npurt_device *dev, uint32_t queue)
{
	struct npurt_prof *p = prof_get(dev);

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	index_forget_queue(p, queue);
	pthread_mutex_unlock(&p->lock);
}

void npurt_prof_batch(npurt_stream *s, const struct npurt_batch *b)
{
	struct npurt_prof *p = prof_get(s->dev);
	struct pbatch *pb;

	if (!p || !atomic_load(&p->on))
		return;
	pthread_mutex_lock(&p->lock);
	/* Out of memory, its records say "unknown". */
	if (!atomic_load(&p->on) || GROW(p, batches, nbatches, capbatches))
		goto out;
	while (p->ntasks + b->count > p->captasks)
		if (grow((void **)&p->tasks, &p->captasks, p->captasks, sizeof(*p->tasks)))
			goto out;
	pb = &p->batches[p->nbatches];
	*pb = (struct pbatch){ .queue = s->queue, .kseq = (uint32_t)npurt_stream_kseq(s, b->seq),
			       .seq = b->seq, .enqueue_ns = mono_ns(), .tid = (uint32_t)gettid(),
			       .first = (uint32_t)p->ntasks, .count = b->count };
	if (index_add(p, p->nbatches))
		goto out;
	p->nbatches++;
	for (uint32_t i = 0; i < b->count; i++)
		p->tasks[p->ntasks++] = (struct ptask){
			.type = (uint8_t)b->tasks[i].type,
			.list = b->tasks[i].type == DRM_NPU_TASK_RUN_LIST ?
				(uint32_t)b->tasks[i].args[0] : 0,
			.call = b->ops[i].call, .what = b->ops[i].what };
	/* Half full: take what is there before the device must drop any. */
	if (p->ring->head - p->ring->tail > p->entries / 2)
		drain_locked(p);
out:
	pthread_mutex_unlock(&p->lock);
}

int64_t npurt_prof_now(npurt_device *dev)
{
	struct npurt_prof *p = dev ? prof_get(dev) : NULL;

	return p && atomic_load(&p->on) ? mono_ns() : 0;
}

void npurt_prof_span(npurt_device *dev, const char *name, int64_t t0_ns)
{
	struct npurt_prof *p;

	if (!t0_ns)
		return;
	p = prof_get(dev);
	pthread_mutex_lock(&p->lock);
	if (atomic_load(&p->on) && !GROW(p, spans, nspans, capspans))
		p->spans[p->nspans++] = (struct pspan){ name, (uint32_t)gettid(), t0_ns, mono_ns() };
	pthread_mutex_unlock(&p->lock);
}

void npurt_prof_name_list(npurt_device *dev, uint32_t handle, uint32_t count,
			  const char *const *names)
{
	struct npurt_prof *p = prof_get(dev);
	struct plist *l = NULL;
	char **copy;

	if (!p)
		return;
	copy = calloc(count ? count : 1, sizeof(*copy));
	for (uint32_t i = 0; copy && i < count; i++)
		copy[i] = names[i] ? strdup(names[i]) : NULL;	/* NULL: by its type */
	pthread_mutex_lock(&p->lock);
	/* A handle used again names another list now. */
	for (size_t i = 0; i < p->nlists && !l; i++)
		if (p->lists[i].handle == handle)
			l = &p->lists[i];
	if (!l && !GROW(p, lists, nlists, caplists)) {
		l = &p->lists[p->nlists++];
		*l = (struct plist){ .handle = handle };
	}
	if (l && copy) {
		/* The list that had the handle may have records still in the ring. */
		drain_locked(p);
		for (uint32_t k = 0; k < l->count; k++)
			free(l->names[k]);
		free(l->names);
		l->names = copy;
		l->count = count;
		copy = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	for (uint32_t i = 0; copy && i < count; i++)
		free(copy[i]);
	free(copy);
}

/* ---- writing ------------------------------------------------------------ */

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static const char *type_name(uint8_t type)
{
	/* A launch is named by its op where known; "kernel" when not. */
	const char *name = type == DRM_NPU_TASK_KERNEL ? "kernel" : npurt_task_type_name(type);

	return name ? name : "task";
}

/* The tracks of the device's process: units, then streams. */
#define TID_SCHED	1
#define TID_DMA		100
#define TID_CORES	200
#define TID_STREAM	1000

static uint32_t unit_tid(uint8_t unit)
{
	switch (DRM_NPU_UNIT_KIND(unit)) {
	case DRM_NPU_UNIT_DMA:
		return TID_DMA + DRM_NPU_UNIT_INDEX(unit);
	case DRM_NPU_UNIT_CORES:
		return TID_CORES + DRM_NPU_UNIT_INDEX(unit);
	default:
		return TID_SCHED;
	}
}

static const char *list_name(const struct npurt_prof *p, uint32_t handle, uint32_t pos)
{
	for (size_t i = 0; i < p->nlists; i++)
		if (p->lists[i].handle == handle && pos < p->lists[i].count)
			return p->lists[i].names[pos];	/* NULL: by its type */
	return NULL;
}

/*
 * Nanoseconds as JSON microseconds with three decimals, whatever the
 * program's LC_NUMERIC says (printf's %f would write "12,345" in some).
 */
struct us_text {
	char s[32];
};

static struct us_text us(int64_t ns)
{
	struct us_text t;
	uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;

	snprintf(t.s, sizeof(t.s), "%s%llu.%03llu", ns < 0 ? "-" : "",
		 (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
	return t;
}

static void put_slice(FILE *f, const struct npurt_prof *p, uint32_t tid, const char *name,
		      int64_t t0, int64_t t1, const char *args)
{
	/* A device that said end < start has done nothing for that long. */
	fprintf(f, ",\n{\"ph\":\"X\",\"pid\":2,\"tid\":%u,\"ts\":%s,\"dur\":%s,\"name\":",
		tid, us(t0 - p->t0).s, us(t1 > t0 ? t1 - t0 : 0).s);
	put_string(f, name);
	fprintf(f, ",\"args\":{%s}}", args);
}

static void put_thread(FILE *f, uint32_t pid, uint32_t tid, const char *name)
{
	fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_name\",\"args\":{"
		"\"name\":", pid, tid);
	put_string(f, name);
	fputs("}}", f);
}

static void write_records(FILE *f, const struct npurt_prof *p, const struct drm_npu_clock *c,
			  bool *units, bool *queues)
{
	for (size_t i = 0; i < p->nrecs; i++) {
		const struct drm_npu_prof_record *r = &p->recs[i].r;
		const struct pbatch *b = p->recs[i].batch >= 0 ? &p->batches[p->recs[i].batch] : NULL;
		const struct ptask *t = b && r->index < b->count ? &p->tasks[b->first + r->index] :
					NULL;
		int64_t t0 = (int64_t)(r->start_ns - c->device_ns) + (int64_t)c->host_ns;
		int64_t t1 = (int64_t)(r->end_ns - c->device_ns) + (int64_t)c->host_ns;
		const char *name = NULL;
		char args[256], fallback[48];
		uint32_t utid = unit_tid(r->unit);

		if (r->flags & DRM_NPU_PROF_IN_LIST && t)
			name = list_name(p, t->list, r->list_pos);
		if (!name && t && t->what && !(r->flags & DRM_NPU_PROF_IN_LIST))
			name = t->what;
		if (!name && r->flags & DRM_NPU_PROF_IN_LIST) {
			snprintf(fallback, sizeof(fallback), "%s (list task %u)", type_name(r->type),
				 r->list_pos);
			name = fallback;
		}
		if (!name)
			name = type_name(r->type);
		snprintf(args, sizeof(args), "\"batch\":%llu,\"task\":%u,\"list_task\":%d,"
			 "\"type\":\"%s\",\"call\":\"%s\"",
			 (unsigned long long)(b ? b->seq : r->seq), r->index,
			 r->flags & DRM_NPU_PROF_IN_LIST ? (int)r->list_pos : -1,
			 type_name(r->type), t && t->call ? t->call : "unknown");
		put_slice(f, p, TID_STREAM + r->tag, name, t0, t1, args);
		put_slice(f, p, utid, name, t0, t1, args);
		units[utid < TID_DMA ? 0 : utid < TID_CORES ? 1 + utid - TID_DMA :
		      65 + utid - TID_CORES] = true;
		queues[r->tag & 0xff] = true;
		/* The host's submit to the batch's first task on the device. */
		if (b && !r->index && !(r->flags & DRM_NPU_PROF_IN_LIST && r->list_pos)) {
			fprintf(f, ",\n{\"ph\":\"s\",\"id\":%zu,\"pid\":1,\"tid\":%u,\"ts\":%s,"
				"\"name\":\"submit\",\"cat\":\"flow\"}", (size_t)(b - p->batches) + 1,
				b->tid, us(b->enqueue_ns - p->t0).s);
			fprintf(f, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%zu,\"pid\":2,\"tid\":%u,"
				"\"ts\":%s,\"name\":\"submit\",\"cat\":\"flow\"}",
				(size_t)(b - p->batches) + 1, TID_STREAM + r->tag, us(t0 - p->t0).s);
		}
	}
}

static int write_trace(FILE *f, npurt_device *dev, const struct npurt_prof *p,
		       const struct drm_npu_clock *c, uint32_t dropped)
{
	bool units[129] = { false }, queues[256] = { false };
	char name[80];

	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"device\":\"%s\","
		"\"records\":%zu,\"dropped\":%u,\"clock_window_ns\":%llu},\n\"traceEvents\":[\n",
		dev->node, p->nrecs, dropped, (unsigned long long)c->window_ns);
	fprintf(f, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":"
		"\"host (pid %d)\"}}", (int)getpid());
	fprintf(f, ",\n{\"ph\":\"M\",\"pid\":2,\"name\":\"process_name\",\"args\":{\"name\":");
	snprintf(name, sizeof(name), "NPU %s", dev->node);
	put_string(f, name);
	fputs("}}", f);
	for (size_t i = 0; i < p->nspans; i++)
		fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
			"\"name\":\"%s\"}", p->spans[i].tid, us(p->spans[i].t0 - p->t0).s,
			us(p->spans[i].t1 - p->spans[i].t0).s, p->spans[i].name);
	write_records(f, p, c, units, queues);
	if (units[0])
		put_thread(f, 2, TID_SCHED, "scheduler");
	for (uint32_t i = 0; i < 64; i++) {
		if (units[1 + i]) {
			snprintf(name, sizeof(name), "copy engine %u", i);
			put_thread(f, 2, TID_DMA + i, name);
		}
		if (units[65 + i]) {
			snprintf(name, sizeof(name), "AI-core group %u", i);
			put_thread(f, 2, TID_CORES + i, name);
		}
	}
	for (uint32_t q = 0; q < 256; q++) {
		if (queues[q]) {
			snprintf(name, sizeof(name), "stream (queue %u)", q);
			put_thread(f, 2, TID_STREAM + q, name);
		}
	}
	fputs("\n]}\n", f);
	return 0;
}

npurt_status npurt_profiler_write(npurt_device *dev, const char *path)
{
	static const char who[] = "npurt_profiler_write";
	struct drm_npu_clock c = { 0 };
	struct npurt_prof *p;
	uint32_t dropped;
	int err;
	FILE *f;

	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, who))
		return NPURT_ERR_INVALID;
	if (!dev || !path)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	p = prof_get(dev);
	if (!p)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the profiler never started on %s",
				       who, dev->node);
	err = npurt_ioctl(dev, DRM_IOCTL_NPU_CLOCK, &c);
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: DRM_NPU_CLOCK: %s", who,
				       strerror(err));
	f = fopen(path, "w");
	if (!f)
		return npurt_set_error(npurt_status_from_errno(errno), "%s: %s: %s", who, path,
				       strerror(errno));
	pthread_mutex_lock(&p->lock);
	drain_locked(p);
	/* Drained before its batch was told (another thread's submit): try again. */
	for (size_t i = 0; i < p->nrecs; i++)
		if (p->recs[i].batch < 0)
			p->recs[i].batch = index_find(p, p->recs[i].r.tag, p->recs[i].r.seq);
	dropped = p->ring->dropped;
	err = write_trace(f, dev, p, &c, dropped);
	pthread_mutex_unlock(&p->lock);
	if (ferror(f) && !err)
		err = EIO;
	if (fclose(f) && !err)
		err = errno;
	if (err)
		return npurt_set_error(npurt_status_from_errno(err), "%s: %s: %s", who, path,
				       strerror(err));
	if (dropped)
		npurt_log(NPURT_LOG_WARN, "%s: %s: the device dropped %u records (a full ring: "
			  "NPURT_PROFILE_RECORDS raises it)", who, path, dropped);
	return NPURT_OK;
}
