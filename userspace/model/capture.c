// SPDX-License-Identifier: MIT
/*
 * Stream capture (npurt.h, "Stream capture"): between begin and end, the
 * work issued to a stream becomes ops of a graph (graph.c) instead of
 * tasks for the device, and end makes that graph a model, loaded, whose
 * runs replay the work with one submit.
 *
 * Memory: each allocation the captured work touches is one tensor of the
 * graph, the whole allocation, and what the work names in it are views
 * of that tensor. At the end, allocations the work only read become the
 * model's inputs and the ones it wrote its outputs, in the order the
 * capture met them, each bound to the allocation it was: a run with no
 * other binding reads and writes the memory the captured calls named.
 *
 * Streams: the stream that began the capture is the model's stream 0. A
 * stream that waits for an event recorded in the capture joins it as the
 * next model stream, and the wait becomes the graph's order between the
 * two (graph_order_after()); the graph adds the others where streams
 * share memory. A model's run completes when all its streams have, so
 * joined streams need not be joined back.
 *
 * Locking: dev->capture_lock covers every capture of the device, the
 * streams' cap_index and their capture pointer's changes (the pointer is
 * atomic for npurt_capturing()'s look without the lock). An event's
 * capture fields are under its lock, taken before dev->capture_lock.
 * Beginning or ending a capture must not overlap calls on its streams,
 * as npurt.h says: a call that saw the stream capturing finds the
 * capture still there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handle.h"
#include "event.h"
#include "graph.h"
#include "hooks.h"
#include "model.h"
#include "npu_opdefs.h"
#include "npu_oplib.h"

/* One allocation the capture met. */
struct cap_buf {
	uint64_t addr;			/* device address */
	size_t size;
	void *host;			/* for npurt_model_bind() */
	uint32_t tensor;		/* the whole of it, in the graph */
	bool written;
};

struct npurt_capture {
	struct npurt_capture *next;	/* dev->captures */
	uint64_t id;			/* events name it by this */
	npurt_graph *g;
	npurt_stream *streams[NPUM_MAX_STREAMS];	/* [0] began it; NULL: destroyed */
	uint32_t nstreams;
	struct cap_buf *bufs;
	size_t nbufs, bufs_cap;
};

/* Copies of more rows than this are not captured (an op each). */
#define CAPTURE_MAX_ROWS	4096

/* What a capture had before an op: what the op made goes if it fails. */
struct mark {
	uint32_t ntensors;
	size_t nbufs;
};

/* The stream's capture, locked, and a mark; NULL (unlocked) when it ended. */
static struct npurt_capture *op_begin(npurt_stream *s, struct mark *mk, npurt_status *st,
				      const char *who)
{
	struct npurt_capture *c;

	pthread_mutex_lock(&s->dev->capture_lock);
	c = atomic_load(&s->capture);
	if (!c) {
		pthread_mutex_unlock(&s->dev->capture_lock);
		*st = npurt_set_error(NPURT_ERR_CAPTURE, "%s: the stream's capture ended while "
				      "the call ran", who);
		return NULL;
	}
	mk->ntensors = c->g->m.ntensors;
	mk->nbufs = c->nbufs;
	*st = NPURT_OK;
	return c;
}

/* ---- memory ------------------------------------------------------------- */

/* Tensors and buffers made since the mark go: their slots are clean for the next. */
static void rollback(struct npurt_capture *c, const struct mark *mk)
{
	npurt_graph *g = c->g;

	for (uint32_t t = mk->ntensors; t < g->m.ntensors; t++) {
		memset(&g->acc[t], 0, sizeof(g->acc[t]));
		g->produced[t] = false;
	}
	g->m.ntensors = mk->ntensors;
	c->nbufs = mk->nbufs;
}

/* The buffer [addr, addr + len) is in, met before or new. */
static npurt_status buf_of(struct npurt_capture *c, npurt_device *dev, uint64_t addr,
			   uint64_t len, uint32_t *out, const char *who, const char *what)
{
	struct mr_range r;
	struct cap_buf *b;
	uint64_t elems;
	uint32_t dtype;
	int err;

	for (size_t i = 0; i < c->nbufs; i++) {
		b = &c->bufs[i];
		if (addr < b->addr || addr - b->addr >= b->size)
			continue;
		if (len > b->size - (addr - b->addr))
			break;	/* the allocation there now is another: ask again */
		*out = (uint32_t)i;
		return NPURT_OK;
	}
	err = npurt_mem_va_find(dev, addr, len, &r);
	if (err)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s [%#llx, +%llu bytes) %s", who,
				       what, (unsigned long long)addr, (unsigned long long)len,
				       err == ERANGE ? "runs past the end of its allocation" :
				       "is not in a live allocation of this device handle");
	for (size_t i = 0; i < c->nbufs; i++)
		if (c->bufs[i].addr < r.addr + r.size && r.addr < c->bufs[i].addr + c->bufs[i].size)
			return npurt_set_error(NPURT_ERR_CAPTURE, "%s: %s [%#llx, +%llu bytes) is in "
					       "memory freed and allocated again during the capture",
					       who, what, (unsigned long long)addr,
					       (unsigned long long)len);
	dtype = r.size % 4 ? NPUM_F16 : NPUM_F32;
	elems = r.size / mf_dtype_size(dtype);
	if (r.size % 2 || r.size > NPUM_MAX_TENSOR_BYTES)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: %s: an allocation of %llu bytes "
				       "(captures take even sizes up to %llu bytes)", who, what,
				       (unsigned long long)r.size,
				       (unsigned long long)NPUM_MAX_TENSOR_BYTES);
	if (c->nbufs >= NPUM_MAX_IO)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: the capture touches more than "
				       "%d allocations", who, NPUM_MAX_IO);
	if (!graph_grow((void **)&c->bufs, &c->bufs_cap, c->nbufs + 1, sizeof(*c->bufs)))
		return graph_nomem(c->g, who);
	b = &c->bufs[c->nbufs];
	*b = (struct cap_buf){ .addr = r.addr, .size = r.size, .host = (void *)(uintptr_t)r.start };
	b->tensor = graph_tensor_new(c->g, NULL, dtype, 1, &elems, NPUM_SEG_FMAP, who);
	if (b->tensor == NPUM_NONE)
		return c->g->broken ? c->g->broken : NPURT_ERR_INVALID;
	/* Its contents are there before the capture's first op. */
	c->g->produced[b->tensor] = true;
	*out = (uint32_t)c->nbufs++;
	return NPURT_OK;
}

/* A view of `dtype` at device address `addr`, inside a buffer of the capture. */
static npurt_status view(struct npurt_capture *c, npurt_device *dev, uint64_t addr,
			 uint32_t dtype, uint32_t ndim, const uint64_t *shape,
			 const uint64_t *stride, uint32_t *tensor, uint32_t *buf, const char *who,
			 const char *what)
{
	struct npum_tensor probe = { .dtype = (uint8_t)dtype, .ndim = (uint8_t)ndim };
	struct npum_tensor *v;
	uint64_t ext;
	npurt_status st;
	uint32_t t;

	memcpy(probe.shape, shape, ndim * sizeof(*shape));
	memcpy(probe.stride, stride, ndim * sizeof(*stride));
	ext = mf_extent(&probe);
	if (!ext)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s has a zero or oversized dimension",
				       who, what);
	st = buf_of(c, dev, addr, ext, buf, who, what);
	if (st)
		return st;
	if ((addr - c->bufs[*buf].addr) % mf_dtype_size(dtype))
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: %s at %#llx is not aligned to its "
				       "%u-byte elements", who, what, (unsigned long long)addr,
				       mf_dtype_size(dtype));
	t = graph_tensor_new(c->g, NULL, dtype, ndim, shape, NPUM_SEG_VIEW, who);
	if (t == NPUM_NONE)
		return c->g->broken ? c->g->broken : NPURT_ERR_INVALID;
	v = &c->g->m.tensors[t];
	v->base = c->bufs[*buf].tensor;
	v->offset = addr - c->bufs[*buf].addr;
	memcpy(v->stride, stride, ndim * sizeof(*stride));
	v->bytes = ext;
	*tensor = t;
	return NPURT_OK;
}

static npurt_status tensor_view(struct npurt_capture *c, npurt_device *dev, const npurt_tensor *t,
				uint32_t *tensor, uint32_t *buf, const char *who, const char *what)
{
	if (!t->ndim || t->ndim > NPURT_MAX_DIMS || (unsigned int)t->dtype >= NPURT_DTYPE_COUNT)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s has ndim %u, dtype %u", who, what,
				       t->ndim, (unsigned int)t->dtype);
	return view(c, dev, t->addr, (uint32_t)t->dtype, t->ndim, t->shape, t->stride, tensor, buf,
		    who, what);
}

/*
 * After the op's views (`st`, their status): add it on the stream's model
 * stream, or drop what was made for it.
 */
static npurt_status add(struct npurt_capture *c, npurt_stream *s, npurt_status st,
			struct npum_op *op, uint32_t out_buf, const struct mark *mk, const char *who)
{
	bool reads_out = op->type == NPUM_OP_KERNEL && npu_op_reads_out(op->kernel, op->beta);

	if (!st)
		st = graph_op_add(c->g, s->cap_index, op, reads_out, who);
	if (st) {
		rollback(c, mk);
		return st;
	}
	c->bufs[out_buf].written = true;
	return NPURT_OK;
}

/* ---- work ----------------------------------------------------------------- */

static npurt_status capture_launch(npurt_stream *s, const npurt_launch_desc *d, int inputs,
				   const char *who)
{
	static const char *const what[] = { "input 0", "input 1" };
	struct npum_op op = { .type = NPUM_OP_KERNEL, .kernel = (uint16_t)d->op, .flags = d->flags,
			      .in = { NPUM_NONE, NPUM_NONE }, .axis = d->axis, .alpha = d->alpha,
			      .beta = d->beta, .eps = d->eps, .block_dim = d->block_dim };
	struct npurt_capture *c;
	uint32_t buf = 0;
	npurt_status st;
	struct mark mk;

	for (int k = 0; k < NPURT_MAX_DIMS; k++)
		*(k < 4 ? &op.perm[k] : &op.perm_hi[k - 4]) =
			(uint8_t)(d->perm[k] < 256 ? d->perm[k] : 255);
	c = op_begin(s, &mk, &st, who);
	if (!c)
		return st;
	for (int k = 0; k < inputs && !st; k++)
		st = tensor_view(c, s->dev, &d->in[k], &op.in[k], &buf, who, what[k]);
	if (!st)
		st = tensor_view(c, s->dev, &d->out, &op.out, &buf, who, "the output");
	st = add(c, s, st, &op, buf, &mk, who);
	pthread_mutex_unlock(&s->dev->capture_lock);
	return st;
}

/* The element a copy of `width` bytes between these addresses moves in. */
static uint32_t copy_dtype(uint64_t dst, uint64_t src, size_t width)
{
	if (!((dst | src | width) & 3))
		return NPUM_F32;
	if (!((dst | src | width) & 1))
		return NPUM_F16;
	return NPUM_NONE;
}

static npurt_status capture_copy(npurt_stream *s, uint64_t dst, size_t dpitch, uint64_t src,
				 size_t spitch, size_t width, size_t height, const char *who)
{
	uint32_t dtype = copy_dtype(dst, src, width), sbuf, dbuf = 0;
	struct npum_op op = { .type = NPUM_OP_COPY, .in = { NPUM_NONE, NPUM_NONE } };
	struct npurt_capture *c;
	npurt_status st;
	uint64_t elems;
	struct mark mk;

	if (dtype == NPUM_NONE || (height > 1 && ((dpitch | spitch) & 1)))
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: a capture copies whole 16-bit "
				       "units at even addresses (%#llx to %#llx, %zu bytes)", who,
				       (unsigned long long)src, (unsigned long long)dst, width);
	if (height > CAPTURE_MAX_ROWS)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: %zu rows; a capture copies %d at "
				       "most at once", who, height, CAPTURE_MAX_ROWS);
	elems = width / mf_dtype_size(dtype);
	c = op_begin(s, &mk, &st, who);
	if (!c)
		return st;
	/* Rows added stay on failure: the call fails, the capture has them. */
	for (size_t r = 0; r < height && !st; r++) {
		mk = (struct mark){ c->g->m.ntensors, c->nbufs };
		st = view(c, s->dev, src + r * spitch, dtype, 1, &elems, (uint64_t[]){ 1 }, &op.in[0],
			  &sbuf, who, "the source");
		if (!st)
			st = view(c, s->dev, dst + r * dpitch, dtype, 1, &elems, (uint64_t[]){ 1 },
				  &op.out, &dbuf, who, "the destination");
		st = add(c, s, st, &op, dbuf, &mk, who);
	}
	pthread_mutex_unlock(&s->dev->capture_lock);
	return st;
}

static npurt_status capture_fill(npurt_stream *s, uint64_t dst, uint32_t word, size_t size,
				 const char *who)
{
	struct npum_op op = { .type = NPUM_OP_FILL, .in = { NPUM_NONE, NPUM_NONE }, .value = word };
	uint64_t elems = size / 4;
	struct npurt_capture *c;
	uint32_t buf = 0;
	npurt_status st;
	struct mark mk;

	if ((dst | size) & 3)
		return npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: a capture fills whole 32-bit "
				       "words at multiples of 4 (%#llx, %zu bytes)", who,
				       (unsigned long long)dst, size);
	c = op_begin(s, &mk, &st, who);
	if (!c)
		return st;
	st = view(c, s->dev, dst, NPUM_F32, 1, &elems, (uint64_t[]){ 1 }, &op.out, &buf, who,
		  "the destination");
	st = add(c, s, st, &op, buf, &mk, who);
	pthread_mutex_unlock(&s->dev->capture_lock);
	return st;
}

/* ---- events --------------------------------------------------------------- */

static struct npurt_capture *capture_by_id(npurt_device *dev, uint64_t id)
{
	struct npurt_capture *c = dev->captures;

	while (c && c->id != id)
		c = c->next;
	return c;
}

static npurt_status capture_record(npurt_event *ev, npurt_stream *s, const char *who)
{
	struct npurt_capture *c;
	npurt_status st;

	if (ev->syncobj)
		return npurt_capture_refuse(s, who, "an interprocess event is another process's "
					    "to wait for, at the time of the record");
	pthread_mutex_lock(&ev->lock);
	c = op_begin(s, &(struct mark){ 0 }, &st, who);
	if (c) {
		atomic_store(&ev->cap_id, c->id);
		ev->cap_stream = s->cap_index;
		ev->cap_pos = c->g->nops[s->cap_index];
		pthread_mutex_unlock(&s->dev->capture_lock);
	}
	pthread_mutex_unlock(&ev->lock);
	return st;
}

/* Only called when the wait is the capture's (npurt_capture_wait()). */
static npurt_status capture_wait(npurt_stream *s, npurt_event *ev, const char *who)
{
	npurt_device *dev = s->dev;
	struct npurt_capture *mine, *theirs = NULL;
	npurt_status st = NPURT_OK;
	uint64_t id;

	/* A stream about to join: what it had before runs as it was issued. */
	if (!npurt_capturing(s)) {
		st = npurt_stream_flush(s, who);
		if (st)
			return st;
	}
	pthread_mutex_lock(&ev->lock);
	pthread_mutex_lock(&dev->capture_lock);
	mine = atomic_load(&s->capture);
	id = atomic_load(&ev->cap_id);
	if (id) {
		theirs = capture_by_id(dev, id);
		if (!theirs)
			st = npurt_set_error(NPURT_ERR_CAPTURE, "%s: the event was last recorded in a "
					     "capture that has ended", who);
		else if (mine && mine != theirs)
			st = npurt_set_error(NPURT_ERR_CAPTURE, "%s: the event was recorded in "
					     "another capture than the stream's", who);
		else if (!mine && theirs->nstreams == NPUM_MAX_STREAMS)
			st = npurt_set_error(NPURT_ERR_UNSUPPORTED, "%s: the capture has %d streams "
					     "already", who, NPUM_MAX_STREAMS);
	} else if (mine && (ev->cur || ev->syncobj)) {
		st = npurt_capture_refuse(s, who, "the event was recorded outside the capture, "
					  "and the model's runs cannot wait for that record");
	}
	if (!st && theirs && !mine) {
		s->cap_index = theirs->nstreams;
		theirs->streams[theirs->nstreams++] = s;
		atomic_store(&s->capture, theirs);
	}
	if (!st && theirs)
		st = graph_order_after(theirs->g, s->cap_index, ev->cap_stream, ev->cap_pos, who);
	pthread_mutex_unlock(&dev->capture_lock);
	pthread_mutex_unlock(&ev->lock);
	return st;
}

/* ---- begin, end ------------------------------------------------------------ */

/* Its streams leave it and the device forgets it. Under dev->capture_lock. */
static void detach(npurt_device *dev, struct npurt_capture *c)
{
	for (uint32_t i = 0; i < c->nstreams; i++)
		if (c->streams[i])
			atomic_store(&c->streams[i]->capture, NULL);
	for (struct npurt_capture **p = &dev->captures; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
}

static void capture_free(struct npurt_capture *c)
{
	npurt_graph_destroy(c->g);
	free(c->bufs);
	free(c);
}

static void capture_stream_gone(npurt_stream *s)
{
	struct npurt_capture *c;

	pthread_mutex_lock(&s->dev->capture_lock);
	c = atomic_load(&s->capture);
	if (c && c->streams[0] == s) {
		detach(s->dev, c);
		capture_free(c);
	} else if (c) {
		/* Its ops stay in the capture; the stream does not. */
		c->streams[s->cap_index] = NULL;
		atomic_store(&s->capture, NULL);
	}
	pthread_mutex_unlock(&s->dev->capture_lock);
}

static const struct npurt_model_hooks model_hooks = {
	.launch = capture_launch,
	.copy = capture_copy,
	.fill = capture_fill,
	.record = capture_record,
	.wait = capture_wait,
	.stream_gone = capture_stream_gone,
	.device_close = npurt_models_close,
};

void npurt_model_hooks_install(npurt_device *dev)
{
	atomic_store_explicit(&dev->hooks, &model_hooks, memory_order_release);
}

npurt_status npurt_stream_begin_capture(npurt_stream *s)
{
	static const char who[] = "npurt_stream_begin_capture";
	struct npurt_capture *c;
	npurt_status st;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (npurt_capturing(s))
		return npurt_capture_refuse(s, who, "it captures already");
	if (npurt_path_failed(s))
		return npurt_set_error(NPURT_ERR_DEVICE, "%s: the stream failed earlier "
				       "(npurt_stream_synchronize says how)", who);
	c = calloc(1, sizeof(*c));
	if (!c)
		return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
	st = npurt_graph_create(&c->g);
	/* The work issued before runs as it was issued. */
	if (!st)
		st = npurt_stream_flush(s, who);
	if (st) {
		capture_free(c);
		return st;
	}
	/* Before the stream captures: its calls then hand work to the hooks. */
	npurt_model_hooks_install(s->dev);
	pthread_mutex_lock(&s->dev->capture_lock);
	c->id = ++s->dev->capture_ids;
	c->streams[0] = s;
	c->nstreams = 1;
	c->next = s->dev->captures;
	s->dev->captures = c;
	s->cap_index = 0;
	atomic_store(&s->capture, c);
	pthread_mutex_unlock(&s->dev->capture_lock);
	return NPURT_OK;
}

npurt_status npurt_stream_is_capturing(npurt_stream *s, bool *capturing)
{
	if (npurt_handle_check(s, NPURT_KIND_STREAM, "npurt_stream_is_capturing"))
		return NPURT_ERR_INVALID;
	if (!capturing)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_stream_is_capturing: NULL argument");
	*capturing = npurt_capturing(s);
	return NPURT_OK;
}

/* Model streams with no ops go (their numbers close up): a model has none. */
static void compact_streams(npurt_graph *g)
{
	uint32_t n = 0;

	for (uint32_t s = 0; s < g->m.plan.streams; s++) {
		if (!g->nops[s]) {
			free(g->ops[s]);
			continue;
		}
		g->ops[n] = g->ops[s];
		g->nops[n] = g->nops[s];
		g->ops_cap[n] = g->ops_cap[s];
		n++;
	}
	for (uint32_t s = n; s < NPUM_MAX_STREAMS; s++) {
		g->ops[s] = NULL;
		g->nops[s] = g->ops_cap[s] = 0;
	}
	g->m.plan.streams = n;
}

/* The buffers become inputs (only read) and outputs (written), in order met. */
static npurt_status make_io(struct npurt_capture *c, const char *who)
{
	npurt_graph *g = c->g;
	uint32_t n = 0;
	char name[32];

	if (!graph_grow((void **)&g->m.io, &g->io_cap, c->nbufs + 1, sizeof(*g->m.io)))
		return graph_nomem(g, who);
	for (int out = 0; out < 2; out++)
		for (size_t i = 0; i < c->nbufs; i++) {
			struct npum_tensor *t = &g->m.tensors[c->bufs[i].tensor];

			if (c->bufs[i].written != out)
				continue;
			snprintf(name, sizeof(name), "%s%u", out ? "output" : "input",
				 out ? n - g->m.plan.inputs : n);
			t->name = graph_string_add(g, name);
			if (t->name == NPUM_NONE)
				return graph_nomem(g, who);
			t->segment = NPUM_SEG_IO;
			t->base = n;
			g->m.io[n++] = (struct npum_io){ .tensor = c->bufs[i].tensor,
							 .flags = out ? NPUM_IO_OUTPUT : 0 };
			if (out)
				g->m.plan.outputs++;
			else
				g->m.plan.inputs++;
		}
	if (!g->m.plan.outputs)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the captured work writes no memory: "
				       "there is nothing to run", who);
	return NPURT_OK;
}

/* The model of the capture, loaded, each I/O bound to the memory it was. */
static npurt_status make_model(struct npurt_capture *c, npurt_device *dev, npurt_model **out,
			       const char *who)
{
	npurt_model *m = NULL;
	npurt_status st;
	void *data = NULL;
	size_t len = 0;

	compact_streams(c->g);
	if (!c->g->m.plan.streams)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: nothing was captured", who);
	st = make_io(c, who);
	if (!st)
		st = npurt_graph_serialize(c->g, &data, &len, NULL);
	if (!st)
		st = npurt_model_load_buffer(dev, data, len, NULL, &m);
	free(data);
	for (uint32_t i = 0; !st && i < c->g->m.plan.inputs + c->g->m.plan.outputs; i++) {
		const struct npum_tensor *t = &c->g->m.tensors[c->g->m.io[i].tensor];

		for (size_t k = 0; k < c->nbufs; k++)
			if (c->bufs[k].tensor == c->g->m.io[i].tensor)
				st = npurt_model_bind(m, i, c->bufs[k].host, t->bytes);
	}
	if (st) {
		char why[512];

		snprintf(why, sizeof(why), "%s", npurt_last_error());
		npurt_model_unload(m);
		return npurt_set_error(st, "%s: %s", who, why);
	}
	*out = m;
	return NPURT_OK;
}

npurt_status npurt_stream_end_capture(npurt_stream *s, npurt_model **model)
{
	static const char who[] = "npurt_stream_end_capture";
	struct npurt_capture *c;
	npurt_status st;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!s || !model)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	pthread_mutex_lock(&s->dev->capture_lock);
	c = atomic_load(&s->capture);
	if (!c || c->streams[0] != s) {
		pthread_mutex_unlock(&s->dev->capture_lock);
		return npurt_set_error(NPURT_ERR_INVALID, c ? "%s: the stream joined a capture; "
				       "end it on the stream that began it" :
				       "%s: the stream is not capturing", who);
	}
	detach(s->dev, c);
	pthread_mutex_unlock(&s->dev->capture_lock);
	st = make_model(c, s->dev, model, who);
	capture_free(c);
	return st;
}
