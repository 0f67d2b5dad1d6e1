// SPDX-License-Identifier: MIT
/*
 * libnpurt copies and fills on pointers against npu.ko, on both
 * submission paths: every direction between device memory, pinned,
 * registered and pageable host memory, at sizes below, at and well above
 * a staging chunk (1 MiB) and odd offsets, checked byte for byte with the
 * bytes around left alone; 2-D copies; fills of 8, 16 and 32 bits at any
 * alignment; what "async" means for pageable memory; and bad arguments
 * refused with nothing changed.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define KiB (1u << 10)
#define MiB (1u << 20)
#define CHUNK MiB		/* copy.c's staging chunk */
#define GUARD 64		/* bytes checked on either side of a copy */
#define GUARD_BYTE 0xee

enum kind { DEVICE, PINNED, REGISTERED, PAGEABLE, KINDS };
static const char *const kind_name[] = { "device", "pinned", "registered", "pageable" };

/* Memory of one kind: `p` is where copies go, `m` its allocation (if any). */
struct buf {
	enum kind kind;
	npurt_mem *m;
	uint8_t *p;
	size_t size, map;
};

FIXTURE(copy) {
	npurt_device *dev;
	npurt_stream *s;
};

FIXTURE_VARIANT(copy) {
	const char *env;
};

FIXTURE_VARIANT_ADD(copy, ioctl) { .env = "ioctl" };
FIXTURE_VARIANT_ADD(copy, io_uring) { .env = "io_uring" };

FIXTURE_SETUP(copy)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
}

FIXTURE_TEARDOWN(copy)
{
	npurt_stream_destroy(self->s);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
}

static int buf_get(npurt_device *dev, enum kind kind, size_t size, struct buf *b)
{
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->size = size;
	switch (kind) {
	case DEVICE:
		if (npurt_mem_alloc(dev, size, &b->m))
			return -1;
		b->p = npurt_mem_host_ptr(b->m);
		return 0;
	case PINNED:
		if (npurt_host_alloc(dev, size, &b->m))
			return -1;
		b->p = npurt_mem_host_ptr(b->m);
		return 0;
	case REGISTERED:
	case PAGEABLE:
		/* Pages of its own: registrations may not share one. */
		b->map = (size + 4095) / 4096 * 4096;
		b->p = mmap(NULL, b->map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b->p == MAP_FAILED)
			return -1;
		return kind == REGISTERED ? (int)npurt_host_register(dev, b->p, size, 0, &b->m) : 0;
	default:
		return -1;
	}
}

#define GET(kind, size, b) \
	ASSERT_EQ(0, buf_get(self->dev, kind, size, b)) TH_LOG("%s", npurt_last_error())

static void buf_put(struct buf *b)
{
	npurt_mem_free(b->m);
	if (b->map)
		munmap(b->p, b->map);
	memset(b, 0, sizeof(*b));
}

static uint8_t byte_at(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u + (uint32_t)(i >> 13);

	return (uint8_t)(x ^ x >> 11 ^ x >> 21);
}

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = byte_at(seed, i);
}

/* The first index where p differs from the pattern, or n. */
static size_t first_wrong(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte_at(seed, i))
			return i;
	return n;
}

static size_t first_not(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return i;
	return n;
}

TEST_F(copy, every_direction_and_size_copies_exactly)
{
	static const size_t sizes[] = { 1, 7, 4096 + 3, CHUNK - 1, CHUNK, CHUNK + 1,
					9 * CHUNK + 7 };
	const size_t cap = 9 * CHUNK + 7 + 2 * GUARD + 64;
	struct buf src, dst;
	uint32_t seed = 1;

	for (int sk = 0; sk < KINDS; sk++) {
		GET(sk, cap, &src);
		for (int dk = 0; dk < KINDS; dk++) {
			GET(dk, cap, &dst);
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				/* Odd offsets, different on each side. */
				size_t n = sizes[i], so = GUARD + 3 + i, doff = GUARD + 5 + 2 * i;
				uint8_t *d = dst.p + doff;

				seed++;
				pattern(src.p + so, n, seed);
				memset(dst.p + doff - GUARD, GUARD_BYTE, n + 2 * GUARD);
				ASSERT_EQ(NPURT_OK, npurt_copy_async(self->s, d, src.p + so, n))
					TH_LOG("%s -> %s, %zu bytes: %s", kind_name[sk], kind_name[dk],
					       n, npurt_last_error());
				ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s))
					TH_LOG("%s", npurt_last_error());
				EXPECT_EQ(n, first_wrong(d, n, seed))
					TH_LOG("%s -> %s, %zu bytes", kind_name[sk], kind_name[dk], n);
				EXPECT_EQ(GUARD, first_not(d - GUARD, GUARD, GUARD_BYTE));
				EXPECT_EQ(GUARD, first_not(d + n, GUARD, GUARD_BYTE))
					TH_LOG("%s -> %s, %zu bytes: written past the end",
					       kind_name[sk], kind_name[dk], n);
			}
			buf_put(&dst);
		}
		buf_put(&src);
	}
}

TEST_F(copy, sync_copy_has_the_data_on_return)
{
	struct buf a, b, c;
	const size_t n = 3 * CHUNK + 11;

	GET(PAGEABLE, n, &a);
	GET(DEVICE, n, &b);
	GET(PINNED, n, &c);
	pattern(a.p, n, 77);
	ASSERT_EQ(NPURT_OK, npurt_copy(self->s, b.p, a.p, n)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(n, first_wrong(b.p, n, 77));
	ASSERT_EQ(NPURT_OK, npurt_copy(self->s, c.p, b.p, n));
	EXPECT_EQ(n, first_wrong(c.p, n, 77));
	EXPECT_EQ(NPURT_OK, npurt_stream_query(self->s));
	buf_put(&a);
	buf_put(&b);
	buf_put(&c);
}

/* Tens of milliseconds of device work on the stream, ahead of what follows. */
static int keep_busy(npurt_stream *s, struct buf *b)
{
	for (int i = 0; i < 40; i++)
		if (npurt_fill_d32_async(s, b->p, (uint32_t)i, b->size / 4))
			return -1;
	return 0;
}

/* A callback that holds its stream's later work up for a while. */
static void hold_stream(npurt_stream *s, npurt_status st, void *user)
{
	(void)s;
	(void)st;
	usleep(*(unsigned int *)user);
}

TEST_F(copy, pageable_memory_is_done_with_when_the_async_call_returns)
{
	static unsigned int hold_us = 300 * 1000;
	const size_t n = 6 * CHUNK + 5;
	struct buf busy, page, dev, out;

	GET(DEVICE, 4 * MiB, &busy);
	GET(PAGEABLE, n, &page);
	GET(DEVICE, n, &dev);
	GET(PAGEABLE, n, &out);

	/*
	 * Host to device: the source may be overwritten at once. The device
	 * copies nothing until the callback returns, so a staging chunk
	 * refilled before its copy went out would land in place of the one
	 * before it.
	 */
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, hold_stream, &hold_us));
	pattern(page.p, n, 5);
	ASSERT_EQ(NPURT_OK, npurt_copy_async(self->s, dev.p, page.p, n));
	memset(page.p, 0, n);
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(n, first_wrong(dev.p, n, 5));

	/* Device to pageable: the data is there when the call returns. */
	ASSERT_EQ(0, keep_busy(self->s, &busy));
	ASSERT_EQ(NPURT_OK, npurt_copy_async(self->s, out.p, dev.p, n));
	EXPECT_EQ(n, first_wrong(out.p, n, 5));

	/* Pageable to pageable: in stream order, after the earlier work. */
	ASSERT_EQ(0, keep_busy(self->s, &busy));
	ASSERT_EQ(NPURT_OK, npurt_copy_async(self->s, page.p, out.p, n));
	EXPECT_EQ(NPURT_OK, npurt_stream_query(self->s));
	EXPECT_EQ(n, first_wrong(page.p, n, 5));
	buf_put(&busy);
	buf_put(&page);
	buf_put(&dev);
	buf_put(&out);
}

/* A 2-D copy's rows land at the pitch, and the gaps between them stay. */
static int check_2d(const uint8_t *d, size_t dpitch, const uint8_t *s, size_t spitch,
		    size_t width, size_t height)
{
	for (size_t r = 0; r < height; r++) {
		if (memcmp(d + r * dpitch, s + r * spitch, width))
			return (int)r + 1;
		if (r + 1 < height && first_not(d + r * dpitch + width, dpitch - width, GUARD_BYTE) !=
		    dpitch - width)
			return -(int)r - 1;
	}
	return 0;
}

TEST_F(copy, copies_2d_at_any_pitch)
{
	static const struct { size_t width, height, spitch, dpitch; } c[] = {
		{ 1, 1, 1, 1 },
		{ 33, 200, 40, 37 },		/* rows beyond a batch */
		{ 100, 50, 100, 100 },		/* contiguous */
		{ 4093, 300, 4100, 5000 },	/* rows across staging chunks */
		{ CHUNK + CHUNK / 2 + 1, 3, CHUNK * 2, CHUNK + CHUNK / 2 + 9 },	/* rows beyond one */
	};
	static const int dirs[][2] = { { PAGEABLE, DEVICE }, { DEVICE, PAGEABLE }, { DEVICE, DEVICE },
				       { PINNED, DEVICE }, { PAGEABLE, PAGEABLE },
				       { REGISTERED, PAGEABLE } };

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t sbytes = (c[i].height - 1) * c[i].spitch + c[i].width + 3;
		size_t dbytes = (c[i].height - 1) * c[i].dpitch + c[i].width + 2 * GUARD;

		for (size_t k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++) {
			struct buf src, dst;
			uint8_t *d;
			int bad;

			GET(dirs[k][0], sbytes, &src);
			GET(dirs[k][1], dbytes, &dst);
			d = dst.p + GUARD - 1;
			pattern(src.p, sbytes, (uint32_t)(i * 10 + k));
			memset(dst.p, GUARD_BYTE, dbytes);
			ASSERT_EQ(NPURT_OK, npurt_copy_2d_async(self->s, d, c[i].dpitch, src.p + 3,
								c[i].spitch, c[i].width, c[i].height))
				TH_LOG("%s", npurt_last_error());
			ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
			bad = check_2d(d, c[i].dpitch, src.p + 3, c[i].spitch, c[i].width,
				       c[i].height);
			EXPECT_EQ(0, bad) TH_LOG("%s -> %s, %zu x %zu: row %d %s", kind_name[dirs[k][0]],
						 kind_name[dirs[k][1]], c[i].width, c[i].height,
						 bad < 0 ? -bad - 1 : bad - 1,
						 bad < 0 ? "wrote its gap" : "differs");
			EXPECT_EQ(GUARD - 1, first_not(dst.p, GUARD - 1, GUARD_BYTE));
			EXPECT_EQ(GUARD + 1, first_not(d + (c[i].height - 1) * c[i].dpitch + c[i].width,
						       GUARD + 1, GUARD_BYTE));
			buf_put(&src);
			buf_put(&dst);
		}
	}
	/* The synchronous one. */
	{
		struct buf src, dst;

		GET(PAGEABLE, 64 * 10, &src);
		GET(DEVICE, 48 * 10, &dst);
		pattern(src.p, 640, 9);
		memset(dst.p, GUARD_BYTE, 480);
		ASSERT_EQ(NPURT_OK, npurt_copy_2d(self->s, dst.p, 48, src.p, 64, 40, 10));
		EXPECT_EQ(0, check_2d(dst.p, 48, src.p, 64, 40, 10));
		buf_put(&src);
		buf_put(&dst);
	}
}

/* Fill `count` elements of `w` bytes at p; 0 or the status. */
static npurt_status fill_w(npurt_stream *s, int w, void *p, uint32_t v, size_t count)
{
	return w == 1 ? npurt_fill_d8_async(s, p, (uint8_t)v, count) :
	       w == 2 ? npurt_fill_d16_async(s, p, (uint16_t)v, count) :
	       npurt_fill_d32_async(s, p, v, count);
}

TEST_F(copy, fills_of_every_width_at_any_offset)
{
	static const size_t counts[] = { 1, 2, 3, 5, 17, 1001 };
	static const uint32_t value = 0xa1b2c3d4;
	static const int kinds[] = { DEVICE, PINNED, REGISTERED };
	const size_t span = 1001 * 4 + 2 * GUARD + 8;

	for (size_t k = 0; k < 3; k++) {
		struct buf b;

		GET(kinds[k], span, &b);
		for (int w = 1; w <= 4; w *= 2) {
			for (size_t off = 0; off < 8; off++) {
				for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
					uint8_t *d = b.p + GUARD + off;
					size_t n = counts[i] * (size_t)w, j;

					memset(b.p, GUARD_BYTE, span);
					ASSERT_EQ(NPURT_OK, fill_w(self->s, w, d, value, counts[i]))
						TH_LOG("%s", npurt_last_error());
					ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s))
						TH_LOG("%s", npurt_last_error());
					for (j = 0; j < n; j++)
						if (d[j] != (uint8_t)(value >> (8 * (j % w))))
							break;
					EXPECT_EQ(n, j) TH_LOG("%s d%d at offset %zu, %zu elements",
							      kind_name[kinds[k]], 8 * w, off, counts[i]);
					EXPECT_EQ(GUARD + off, first_not(b.p, GUARD + off, GUARD_BYTE));
					EXPECT_EQ(GUARD, first_not(d + n, GUARD, GUARD_BYTE))
						TH_LOG("d%d at offset %zu, %zu elements: past the end",
						       8 * w, off, counts[i]);
				}
			}
		}
		buf_put(&b);
	}
}

TEST_F(copy, large_fills_and_fills_in_stream_order)
{
	struct buf b, out;
	const size_t n = 4 * MiB + 3;

	GET(DEVICE, n + 1, &b);
	GET(PAGEABLE, n + 1, &out);
	/* Each fill overwrites part of the one before: only stream order gives this. */
	ASSERT_EQ(NPURT_OK, npurt_fill_d8_async(self->s, b.p + 1, 0x5a, n));
	ASSERT_EQ(NPURT_OK, npurt_fill_d16_async(self->s, b.p + 1, 0x1234, 1000));
	ASSERT_EQ(NPURT_OK, npurt_fill_d32_async(self->s, b.p + 3, 0xcafef00d, 1));
	ASSERT_EQ(NPURT_OK, npurt_copy_async(self->s, out.p, b.p + 1, n));
	EXPECT_EQ(0x12, out.p[2 * 999 + 1]);
	EXPECT_EQ(0x34, out.p[0]);
	EXPECT_EQ(0x0d, out.p[2]);
	EXPECT_EQ(0xca, out.p[5]);
	EXPECT_EQ(0x34, out.p[6]);
	EXPECT_EQ(n - 2000, first_not(out.p + 2000, n - 2000, 0x5a));
	buf_put(&b);
	buf_put(&out);
}

/* One thread's work: copies through its own stream's staging buffers. */
struct job {
	npurt_device *dev;
	int seed;
	int wrong;
};

static void *job_run(void *arg)
{
	struct job *j = arg;
	const size_t n = 2 * CHUNK + 999;
	struct buf a = { 0 }, b = { 0 }, c = { 0 };
	npurt_stream *s;

	j->wrong = -1;
	if (npurt_stream_create(j->dev, NPURT_PRIORITY_NORMAL, &s))
		return NULL;
	if (!buf_get(j->dev, PAGEABLE, n, &a) && !buf_get(j->dev, DEVICE, n, &b) &&
	    !buf_get(j->dev, PAGEABLE, n, &c)) {
		j->wrong = 0;
		for (int r = 0; r < 5; r++) {
			pattern(a.p, n, (uint32_t)(j->seed * 100 + r));
			if (npurt_copy_async(s, b.p, a.p, n) ||
			    npurt_fill_d8_async(s, b.p + 1, (uint8_t)r, 2) ||
			    npurt_copy_async(s, c.p, b.p, n) ||
			    c.p[0] != a.p[0] || c.p[1] != r || c.p[2] != r ||
			    memcmp(c.p + 3, a.p + 3, n - 3))
				j->wrong++;
		}
	}
	buf_put(&a);
	buf_put(&b);
	buf_put(&c);
	npurt_stream_destroy(s);
	return NULL;
}

TEST_F(copy, copies_and_fills_from_several_threads)
{
	struct job jobs[3];
	pthread_t th[3];

	for (int i = 0; i < 3; i++) {
		jobs[i] = (struct job){ .dev = self->dev, .seed = i + 1 };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, job_run, &jobs[i]));
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, jobs[i].wrong) TH_LOG("thread %d", i);
	}
}

TEST_F(copy, bad_arguments_are_refused_and_change_nothing)
{
	struct buf d, h, page, reg;
	npurt_device *other;
	npurt_mem *om, *gone;
	uint8_t *gone_p;
	size_t dsz;

	GET(DEVICE, 4096, &d);
	GET(PINNED, 4096, &h);
	GET(PAGEABLE, 4 * 4096, &page);
	dsz = npurt_mem_size(d.m);
	memset(d.p, 0x11, dsz);
	memset(h.p, 0x22, 4096);
	memset(page.p, 0x33, 4 * 4096);

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(NULL, d.p, h.p, 16));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_copy_async: NULL npurt_stream"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, NULL, h.p, 16));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NULL destination"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy(self->s, d.p, NULL, 16));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_copy: NULL source"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, d.p, h.p, 0));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "size is 0"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_2d_async(self->s, d.p, 16, h.p, 16, 0, 4));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_copy_2d_async"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_2d_async(self->s, d.p, 16, h.p, 16, 16, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_2d(self->s, d.p, 8, h.p, 16, 16, 4));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "below the width"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_2d_async(self->s, d.p, SIZE_MAX / 2, h.p, 16, 16, 4));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "wrap"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d8_async(NULL, d.p, 1, 4));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d16_async(self->s, NULL, 1, 4));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_fill_d16_async: NULL destination"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d32_async(self->s, d.p, 1, 0));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "count is 0"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d32_async(self->s, d.p, 1, SIZE_MAX / 2));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "overflows"));

	/* Past the end of device memory, of pinned memory, before its start. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, page.p, d.p + dsz - 10, 11));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "source")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "runs past its end"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, h.p + 4000, page.p, 4096));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "destination"));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "not within one allocation"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d8_async(self->s, d.p + 1, 0, dsz));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "runs past its end"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_2d_async(self->s, d.p, 1024, page.p, 16, 16, 5));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "not within one allocation"));
	ASSERT_EQ(0, npurt_host_register(self->dev, page.p + 4096, 4096, 0, &reg.m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, d.p, page.p + 100, 4096));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "runs past its start"))
		TH_LOG("%s", npurt_last_error());
	npurt_mem_free(reg.m);
	/* Unregistered, it is pageable memory again. */
	EXPECT_EQ(NPURT_OK, npurt_copy_async(self->s, d.p, page.p + 100, 4096));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(4096, first_not(d.p, 4096, 0x33));
	memset(d.p, 0x11, dsz);

	/* Pageable memory cannot be filled. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d8_async(self->s, page.p, 0, 4));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "pageable"));

	/* Another device handle's memory, a freed allocation. */
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &other));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(other, 4096, &om));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, d.p, npurt_mem_host_ptr(om), 16));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "another device")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_fill_d32_async(self->s, npurt_mem_host_ptr(om), 0, 4));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "another device"));
	npurt_mem_free(om);
	npurt_device_close(other);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4096, &gone));
	gone_p = npurt_mem_host_ptr(gone);
	npurt_mem_free(gone);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy_async(self->s, gone_p, h.p, 16));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "freed")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_copy(self->s, page.p, gone_p, 16));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "no live allocation"));

	/* Nothing was written, and the stream is fine. */
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(dsz, first_not(d.p, dsz, 0x11));
	EXPECT_EQ(4096, first_not(h.p, 4096, 0x22));
	EXPECT_EQ(4 * 4096, first_not(page.p, 4 * 4096, 0x33));
	buf_put(&d);
	buf_put(&h);
	buf_put(&page);
}

TEST_F(copy, a_failed_stream_refuses_copies_before_copying)
{
	struct buf a, b, d;

	GET(PAGEABLE, 4096, &a);
	GET(PAGEABLE, 4096, &b);
	GET(DEVICE, 4096, &d);
	memset(a.p, 1, 4096);
	/* A copy from an address nothing maps faults the stream. */
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, npurt_mem_device_addr(d.m), 16, 64));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_copy_async(self->s, b.p, a.p, 4096));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_copy_async: the stream failed"));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_copy(self->s, d.p, a.p, 4096));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_fill_d8_async(self->s, d.p + 1, 0, 5));
	EXPECT_EQ(4096, first_not(b.p, 4096, 0));
	buf_put(&a);
	buf_put(&b);
	buf_put(&d);
}

TEST_HARNESS_MAIN
