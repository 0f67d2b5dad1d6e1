// SPDX-License-Identifier: MIT
/*
 * Copies and fills on pointers (npurt.h; Documentation/runtime.rst,
 * "Copies"). memory.c says what a pointer is to the device; this file
 * turns a copy into COPY tasks, staged through pinned buffers of the
 * stream when a side is pageable, or a CPU copy in stream order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "error.h"
#include "handle.h"
#include "internal.h"

/*
 * Staging: a chunk per slot, used round robin. A slot is free again once
 * the batch of its last copy completed, so the CPU fills one slot while
 * the device copies out of the others. In the VM, 1 MiB x 4 did better
 * than 256 KiB x 4, 1 MiB x 2 or x 8, 2 MiB x 4 and 4 MiB x 3
 * (tests/bench/copy_bench.c), all bound by the CPU's memcpy.
 */
#define STAGE_CHUNK	(1u << 20)
#define STAGE_SLOTS	4
/* Fills' pattern words, one 8-byte slot each, in one pinned page. */
#define PAT_SLOT	8
#define PAT_SLOTS	512

struct npurt_staging {
	pthread_mutex_t lock;		/* one staged copy or fill at a time */
	npurt_mem *buf;			/* STAGE_SLOTS chunks */
	uint64_t seq[STAGE_SLOTS];	/* the batch of each slot's last copy */
	unsigned int next;
	npurt_mem *pat;
	uint64_t pat_seq[PAT_SLOTS];
	unsigned int pat_next;
};

/* A copy: `height` rows of `width` bytes, each side at its pitch. */
struct plan {
	uint8_t *dst;
	const uint8_t *src;
	uint64_t daddr, saddr;		/* device addresses, unless pageable */
	size_t dpitch, spitch, width, height;
};

struct cursor {
	size_t row, col;
};

/* Tasks gathered for one push; seq: the batch of the last push (0: none). */
struct tasks {
	npurt_stream *s;
	uint32_t n;
	uint64_t seq;
	struct drm_npu_task t[NPURT_BATCH_MAX];
};

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* The next piece of the copy at *c, of at most `room` bytes: 0 at its end. */
static size_t piece(const struct plan *p, const struct cursor *c, size_t room)
{
	return c->row == p->height ? 0 : min_size(p->width - c->col, room);
}

static void advance(const struct plan *p, struct cursor *c, size_t n)
{
	c->col += n;
	if (c->col == p->width) {
		c->row++;
		c->col = 0;
	}
}

static npurt_status tasks_push(struct tasks *q, const char *who)
{
	npurt_status st;

	if (!q->n)
		return NPURT_OK;
	st = npurt_stream_push(q->s, q->t, q->n, &q->seq, who);
	q->n = 0;
	return st;
}

static npurt_status tasks_add(struct tasks *q, struct drm_npu_task t, const char *who)
{
	npurt_status st = q->n == NPURT_BATCH_MAX ? tasks_push(q, who) : NPURT_OK;

	if (!st)
		q->t[q->n++] = t;
	return st;
}

static struct drm_npu_task copy_task(uint64_t dst, uint64_t src, uint64_t size)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_COPY, .args = { dst, src, size } };

	return t;
}

/* The stream's staging state, locked; its buffers made on first use. */
static npurt_status staging_lock(npurt_stream *s, bool chunks, struct npurt_staging **out,
				 const char *who)
{
	struct npurt_staging *st = atomic_load(&s->staging), *mine;
	npurt_mem **m;
	npurt_status rc;
	char why[256];

	if (!st) {
		mine = calloc(1, sizeof(*mine));
		if (!mine)
			return npurt_set_error(NPURT_ERR_NO_MEMORY, "%s: out of memory", who);
		pthread_mutex_init(&mine->lock, NULL);
		if (atomic_compare_exchange_strong(&s->staging, &st, mine)) {
			st = mine;
		} else {
			pthread_mutex_destroy(&mine->lock);
			free(mine);
		}
	}
	pthread_mutex_lock(&st->lock);
	m = chunks ? &st->buf : &st->pat;
	if (!*m) {
		rc = npurt_host_alloc(s->dev, chunks ? (size_t)STAGE_CHUNK * STAGE_SLOTS :
				      (size_t)PAT_SLOT * PAT_SLOTS, m);
		if (rc) {
			pthread_mutex_unlock(&st->lock);
			snprintf(why, sizeof(why), "%s", npurt_last_error());
			return npurt_set_error(rc, "%s: pinning its staging buffer: %s", who, why);
		}
	}
	*out = st;
	return NPURT_OK;
}

void npurt_staging_free(npurt_stream *s)
{
	struct npurt_staging *st = atomic_exchange(&s->staging, NULL);

	if (!st)
		return;
	npurt_mem_free(st->buf);
	npurt_mem_free(st->pat);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static npurt_status slot_wait(npurt_stream *s, uint64_t seq, const char *who)
{
	return seq ? npurt_stream_wait(s, seq, who) : NPURT_OK;
}

/* Both sides have device addresses: tasks alone. */
static npurt_status device_copy(npurt_stream *s, const struct plan *p, const char *who)
{
	struct tasks q = { .s = s };
	npurt_status st = NPURT_OK;

	for (size_t r = 0; r < p->height && !st; r++)
		st = tasks_add(&q, copy_task(p->daddr + r * p->dpitch, p->saddr + r * p->spitch,
					     p->width), who);
	return st ? st : tasks_push(&q, who);
}

/*
 * The copies between staging slot k and the device side of the plan, from
 * *c on, up to a chunk: for a pageable source (`in`) the CPU first copies
 * each piece into the slot. *bytes: how much of the slot they use.
 */
static npurt_status slot_gather(const struct plan *p, struct cursor *c, struct npurt_staging *sg,
				unsigned int k, bool in, struct tasks *q, size_t *bytes,
				const char *who)
{
	uint8_t *host = (uint8_t *)npurt_mem_host_ptr(sg->buf) + (size_t)k * STAGE_CHUNK;
	uint64_t addr = npurt_mem_device_addr(sg->buf) + (uint64_t)k * STAGE_CHUNK;
	npurt_status st = NPURT_OK;
	size_t off = 0, n;

	q->seq = 0;
	while (!st && (n = piece(p, c, STAGE_CHUNK - off))) {
		if (in) {
			memcpy(host + off, p->src + c->row * p->spitch + c->col, n);
			st = tasks_add(q, copy_task(p->daddr + c->row * p->dpitch + c->col,
						    addr + off, n), who);
		} else {
			st = tasks_add(q, copy_task(addr + off, p->saddr + c->row * p->spitch + c->col,
						    n), who);
		}
		off += n;
		advance(p, c, n);
	}
	*bytes = off;
	return st;
}

/* Slot k's copies go to the device now; it is busy until they all ran. */
static npurt_status slot_send(npurt_stream *s, struct npurt_staging *sg, unsigned int k,
			      struct tasks *q, npurt_status st, const char *who)
{
	if (!st)
		st = tasks_push(q, who);
	/* Pushed, maybe not all of it: the slot waits for what was. */
	if (q->seq)
		sg->seq[k] = q->seq;
	return st ? st : npurt_stream_flush(s, who);
}

/*
 * Pageable source: the CPU fills a slot, its copies go out at once, and
 * the next slot is filled while the device copies this one.
 */
static npurt_status staged_in(npurt_stream *s, const struct plan *p, const char *who)
{
	struct npurt_staging *sg;
	struct cursor c = { 0 };
	struct tasks q = { .s = s };
	npurt_status st = staging_lock(s, true, &sg, who);
	size_t bytes;

	if (st)
		return st;
	while (!st && c.row < p->height) {
		unsigned int k = sg->next;

		sg->next = (k + 1) % STAGE_SLOTS;
		st = slot_wait(s, sg->seq[k], who);
		if (!st)
			st = slot_send(s, sg, k, &q, slot_gather(p, &c, sg, k, true, &q, &bytes, who),
				       who);
	}
	pthread_mutex_unlock(&sg->lock);
	return st;
}

/*
 * Pageable destination: every slot's copy is issued ahead, and each slot
 * is emptied by the CPU (then reissued) as its copy completes.
 */
static npurt_status staged_out(npurt_stream *s, const struct plan *p, const char *who)
{
	struct npurt_staging *sg;
	struct cursor c = { 0 }, at[STAGE_SLOTS];
	struct tasks q = { .s = s };
	size_t bytes[STAGE_SLOTS];
	unsigned int first, issued = 0, drained = 0;
	npurt_status st = staging_lock(s, true, &sg, who);

	if (st)
		return st;
	first = sg->next;
	while (!st && (drained < issued || c.row < p->height)) {
		while (!st && issued - drained < STAGE_SLOTS && c.row < p->height) {
			unsigned int k = (first + issued++) % STAGE_SLOTS;

			at[k] = c;
			st = slot_wait(s, sg->seq[k], who);
			if (!st)
				st = slot_send(s, sg, k, &q, slot_gather(p, &c, sg, k, false, &q,
									 &bytes[k], who), who);
		}
		if (!st && drained < issued) {
			unsigned int k = (first + drained++) % STAGE_SLOTS;
			const uint8_t *host = (uint8_t *)npurt_mem_host_ptr(sg->buf) +
					      (size_t)k * STAGE_CHUNK;
			struct cursor d = at[k];
			size_t off = 0, n;

			st = slot_wait(s, sg->seq[k], who);
			while (!st && off < bytes[k]) {
				n = piece(p, &d, bytes[k] - off);
				memcpy(p->dst + d.row * p->dpitch + d.col, host + off, n);
				off += n;
				advance(p, &d, n);
			}
		}
	}
	sg->next = (first + issued) % STAGE_SLOTS;
	pthread_mutex_unlock(&sg->lock);
	return st;
}

/* Pageable on both sides: the CPU copies once the stream's work has run. */
static npurt_status host_copy(npurt_stream *s, const struct plan *p, const char *who)
{
	npurt_status st = npurt_stream_synchronize(s);
	char why[256];

	if (st) {
		snprintf(why, sizeof(why), "%s", npurt_last_error());
		return npurt_set_error(st, "%s: waiting for the stream's earlier work: %s", who, why);
	}
	for (size_t r = 0; r < p->height; r++)
		memcpy(p->dst + r * p->dpitch, p->src + r * p->spitch, p->width);
	return NPURT_OK;
}

/* [p, p + its rows' extent) must not wrap: the extent, or 0 when it does. */
static size_t extent(const void *p, size_t pitch, size_t width, size_t height)
{
	size_t ext;

	if (height > 1 && (height - 1) > (SIZE_MAX - width) / pitch)
		return 0;
	ext = (height - 1) * pitch + width;
	return (uintptr_t)p + ext < (uintptr_t)p ? 0 : ext;
}

static npurt_status copy_2d(npurt_stream *s, void *dst, size_t dpitch, const void *src,
			    size_t spitch, size_t width, size_t height, const char *who)
{
	struct plan p = { .dst = dst, .src = src, .dpitch = dpitch, .spitch = spitch,
			  .width = width, .height = height };
	enum npurt_place dplace, splace;
	size_t dext, sext;
	npurt_status st;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!s || !dst || !src)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL %s", who,
				       !s ? "stream" : !dst ? "destination" : "source");
	if (!width || !height)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s", who,
				       height == 1 ? "size is 0" : "width or height is 0");
	if (height > 1 && (dpitch < width || spitch < width))
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: pitches (destination %zu, source %zu) below the width %zu",
				       who, dpitch, spitch, width);
	dext = extent(dst, dpitch, width, height);
	sext = extent(src, spitch, width, height);
	if (!dext || !sext)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: the %s's %zu rows of pitch %zu wrap "
				       "around the address space", who, !dext ? "destination" : "source",
				       height, !dext ? dpitch : spitch);
	st = npurt_mem_where(s->dev, dst, dext, &dplace, &p.daddr, who, "destination");
	if (!st)
		st = npurt_mem_where(s->dev, src, sext, &splace, &p.saddr, who, "source");
	if (st)
		return st;
	if (npurt_path_failed(s))
		return npurt_set_error(NPURT_ERR_DEVICE,
				       "%s: the stream failed earlier (npurt_stream_synchronize says how)",
				       who);
	if (p.dpitch == width && p.spitch == width) {
		p.width = dext;
		p.height = 1;
	}
	if (npurt_capturing(s)) {
		if (dplace == NPURT_PAGEABLE || splace == NPURT_PAGEABLE)
			return npurt_capture_refuse(s, who, "the CPU copies pageable memory; capture "
						    "device, pinned or registered memory");
		return npurt_capture_copy(s, p.daddr, p.dpitch, p.saddr, p.spitch, p.width,
					  p.height, who);
	}
	if (dplace != NPURT_PAGEABLE && splace != NPURT_PAGEABLE)
		return device_copy(s, &p, who);
	if (dplace != NPURT_PAGEABLE)
		return staged_in(s, &p, who);
	if (splace != NPURT_PAGEABLE)
		return staged_out(s, &p, who);
	return host_copy(s, &p, who);
}

npurt_status npurt_copy_2d_async(npurt_stream *s, void *dst, size_t dpitch, const void *src,
				 size_t spitch, size_t width, size_t height)
{
	return copy_2d(s, dst, dpitch, src, spitch, width, height, "npurt_copy_2d_async");
}

npurt_status npurt_copy_async(npurt_stream *s, void *dst, const void *src, size_t size)
{
	return copy_2d(s, dst, size, src, size, size, 1, "npurt_copy_async");
}

static npurt_status then_wait(npurt_stream *s, npurt_status st)
{
	return st ? st : npurt_stream_synchronize(s);
}

npurt_status npurt_copy_2d(npurt_stream *s, void *dst, size_t dpitch, const void *src,
			   size_t spitch, size_t width, size_t height)
{
	if (s && npurt_capturing(s))
		return npurt_capture_refuse(s, "npurt_copy_2d", "it waits for the stream");
	return then_wait(s, copy_2d(s, dst, dpitch, src, spitch, width, height, "npurt_copy_2d"));
}

npurt_status npurt_copy(npurt_stream *s, void *dst, const void *src, size_t size)
{
	if (s && npurt_capturing(s))
		return npurt_capture_refuse(s, "npurt_copy", "it waits for the stream");
	return then_wait(s, copy_2d(s, dst, size, src, size, size, 1, "npurt_copy"));
}

/*
 * A fill of `count` elements of `w` bytes (1, 2 or 4). Element i is at
 * dst + i * w whatever the alignment, so the byte at device address x is
 * byte (x - dst) % w of the value, and every 4-byte-aligned word holds
 * the same pattern: FILL writes those, and the bytes before the first
 * and after the last are copied from a pinned slot holding the word.
 */
static npurt_status fill(npurt_stream *s, void *dst, uint32_t value, unsigned int w, size_t count,
			 const char *who)
{
	struct drm_npu_task t[3];
	struct npurt_staging *sg;
	enum npurt_place place;
	uint32_t word = 0, n = 0;
	uint64_t addr, pat, seq;
	size_t size, head, body;
	unsigned int r, k;
	npurt_status st;

	if (npurt_handle_check(s, NPURT_KIND_STREAM, who))
		return NPURT_ERR_INVALID;
	if (!s || !dst)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL %s", who, s ? "destination" : "stream");
	if (!count || count > SIZE_MAX / w)
		return count ? npurt_set_error(NPURT_ERR_INVALID, "%s: count %zu overflows", who, count) :
		       npurt_set_error(NPURT_ERR_INVALID, "%s: count is 0", who);
	size = count * w;
	st = npurt_mem_where(s->dev, dst, size, &place, &addr, who, "destination");
	if (st)
		return st;
	if (place == NPURT_PAGEABLE)
		return npurt_set_error(NPURT_ERR_INVALID,
				       "%s: destination %p is pageable host memory: fills take device "
				       "memory or pinned or registered host memory of the device",
				       who, dst);
	r = (unsigned int)(addr & 3);
	for (unsigned int b = 0; b < 4; b++)
		word |= ((value >> (8 * ((b + 4 - r) % w))) & 0xffu) << (8 * b);
	if (npurt_capturing(s))
		return npurt_capture_fill(s, addr, word, size, who);
	head = min_size((4 - r) % 4, size);
	body = (size - head) & ~(size_t)3;
	if (head)
		t[n++] = copy_task(addr, r, head);
	if (body) {
		t[n] = (struct drm_npu_task){ .type = DRM_NPU_TASK_FILL,
					      .args = { addr + head, body, word } };
		n++;
	}
	if (size - head - body)
		t[n++] = copy_task(addr + head + body, 0, size - head - body);
	if (n == 1 && body)
		return npurt_stream_push(s, t, n, NULL, who);
	/* Some bytes come from a pattern slot: its address goes into those tasks. */
	st = staging_lock(s, false, &sg, who);
	if (st)
		return st;
	k = sg->pat_next;
	sg->pat_next = (k + 1) % PAT_SLOTS;
	st = slot_wait(s, sg->pat_seq[k], who);
	if (!st) {
		uint8_t *slot = (uint8_t *)npurt_mem_host_ptr(sg->pat) + (size_t)k * PAT_SLOT;

		pat = npurt_mem_device_addr(sg->pat) + (uint64_t)k * PAT_SLOT;
		memcpy(slot, &word, 4);
		memcpy(slot + 4, &word, 4);
		for (uint32_t i = 0; i < n; i++)
			if (t[i].type == DRM_NPU_TASK_COPY)
				t[i].args[1] += pat;
		st = npurt_stream_push(s, t, n, &seq, who);
		if (!st)
			sg->pat_seq[k] = seq;
	}
	pthread_mutex_unlock(&sg->lock);
	return st;
}

npurt_status npurt_fill_d8_async(npurt_stream *s, void *dst, uint8_t value, size_t count)
{
	return fill(s, dst, value, 1, count, "npurt_fill_d8_async");
}

npurt_status npurt_fill_d16_async(npurt_stream *s, void *dst, uint16_t value, size_t count)
{
	return fill(s, dst, value, 2, count, "npurt_fill_d16_async");
}

npurt_status npurt_fill_d32_async(npurt_stream *s, void *dst, uint32_t value, size_t count)
{
	return fill(s, dst, value, 4, count, "npurt_fill_d32_async");
}
