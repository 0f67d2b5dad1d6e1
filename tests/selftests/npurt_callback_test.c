// SPDX-License-Identifier: MIT
/*
 * libnpurt host callbacks against npu.ko, on both submission paths: a
 * callback sees the device work before it done, work after it sees what
 * the callback wrote, a stream's callbacks run in order, those of
 * different streams do not wait for each other, callbacks issue work, a
 * failure reaches the callback, destroy waits for callbacks, and bad
 * arguments leave the stream as it was.
 *
 * Streams are held back by a gate: a stream waiting on a notify nobody
 * recorded yet, opened by recording it on another stream.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define KiB (1u << 10)
#define MiB (1u << 20)

FIXTURE(cb) {
	npurt_device *dev;
	npurt_mem *d, *h;		/* device memory, pinned host memory */
	uint64_t dva, hva;
	volatile uint32_t *dp, *hp;
	npurt_stream *s, *t, *opener;
	npurt_notify *gate;
};

FIXTURE_VARIANT(cb) {
	const char *env;
	npurt_submit_path path;
};

FIXTURE_VARIANT_ADD(cb, ioctl) { .env = "ioctl", .path = NPURT_SUBMIT_IOCTL };
FIXTURE_VARIANT_ADD(cb, io_uring) { .env = "io_uring", .path = NPURT_SUBMIT_IO_URING };

FIXTURE_SETUP(cb)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(variant->path, npurt_device_submit_path(self->dev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, MiB, &self->d));
	ASSERT_EQ(NPURT_OK, npurt_host_alloc(self->dev, MiB, &self->h)) TH_LOG("%s", npurt_last_error());
	self->dva = npurt_mem_device_addr(self->d);
	self->hva = npurt_mem_device_addr(self->h);
	self->dp = npurt_mem_host_ptr(self->d);
	self->hp = npurt_mem_host_ptr(self->h);
	memset((void *)self->hp, 0, MiB);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->t));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->opener));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &self->gate));
}

FIXTURE_TEARDOWN(cb)
{
	npurt_stream_destroy(self->s);
	npurt_stream_destroy(self->t);
	npurt_stream_destroy(self->opener);
	npurt_notify_destroy(self->gate);
	npurt_mem_free(self->d);
	npurt_mem_free(self->h);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "io_uring commands: "));
}

#define gate_close(s) ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify((s), self->gate))
#define gate_open() ASSERT_EQ(NPURT_OK, npurt_notify_record(self->gate, self->opener))

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Until *flag is set, at most ms: whether it got set. */
static bool flag_set_within(atomic_int *flag, int ms)
{
	for (int64_t end = now_ms() + ms; now_ms() < end; usleep(1000))
		if (atomic_load(flag))
			return true;
	return atomic_load(flag);
}

/* What a callback saw, and did. */
struct seen {
	volatile uint32_t *host;	/* the pinned host words */
	uint32_t words, expect, write;
	npurt_status status;
	npurt_stream *stream;
	bool data_ok;
	atomic_int ran;
};

/* Check the host words hold `expect`, then (slowly) write `write` there. */
static void check_then_write(npurt_stream *s, npurt_status status, void *user)
{
	struct seen *w = user;

	w->stream = s;
	w->status = status;
	w->data_ok = true;
	for (uint32_t i = 0; i < w->words; i++)
		w->data_ok &= w->host[i] == w->expect;
	/* Work after the callback must not run meanwhile. */
	usleep(100000);
	for (uint32_t i = 0; i < w->words; i++)
		w->host[i] = w->write;
	atomic_store(&w->ran, 1);
}

TEST_F(cb, the_callback_sees_the_work_before_and_the_work_after_sees_it)
{
	struct seen w = { .host = self->hp, .words = 4 * KiB / 4, .expect = 0x11111111,
			  .write = 0x22222222 };

	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->dva, 0x11111111, 4 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, self->hva, self->dva, 4 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, check_then_write, &w))
		TH_LOG("%s", npurt_last_error());
	/* Reads what the callback wrote, not what the device put there. */
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, self->dva + 4 * KiB, self->hva, 4 * KiB));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(1, atomic_load(&w.ran));
	EXPECT_EQ(NPURT_OK, w.status);
	EXPECT_EQ(self->s, w.stream);
	EXPECT_TRUE(w.data_ok);
	EXPECT_EQ(0x22222222, self->dp[4 * KiB / 4]);
	EXPECT_EQ(0x22222222, self->dp[8 * KiB / 4 - 1]);
	EXPECT_EQ(0x11111111, self->dp[0]);
}

/* Callback i: the device wrote word i (i + 1) before it; it appends i. */
struct order {
	volatile uint32_t *host;
	uint32_t ran[100];
	atomic_uint n;
	bool seen_ok;
};

struct order_arg {
	struct order *o;
	uint32_t i;
};

static void append(npurt_stream *s, npurt_status status, void *user)
{
	struct order_arg *a = user;
	uint32_t n = atomic_fetch_add(&a->o->n, 1);

	(void)s;
	if (n < 100)
		a->o->ran[n] = a->i;
	if (status || a->o->host[a->i] != a->i + 1)
		a->o->seen_ok = false;
}

TEST_F(cb, a_streams_callbacks_run_in_order_each_after_its_work)
{
	struct order o = { .host = self->hp, .seen_ok = true };
	struct order_arg args[100];

	atomic_init(&o.n, 0);
	for (uint32_t i = 0; i < 100; i++) {
		args[i] = (struct order_arg){ &o, i };
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->hva + 4 * i, i + 1, 4));
		ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, append, &args[i]))
			TH_LOG("%s", npurt_last_error());
	}
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(100, atomic_load(&o.n));
	for (uint32_t i = 0; i < 100; i++)
		ASSERT_EQ(i, o.ran[i]);
	EXPECT_TRUE(o.seen_ok);
}

/* The first waits (bounded) until the second, on another stream, ran. */
struct pair {
	atomic_int first_started, first_ran, second_ran;
	bool first_saw_second;
};

static void first(npurt_stream *s, npurt_status status, void *user)
{
	struct pair *p = user;

	(void)s;
	(void)status;
	atomic_store(&p->first_started, 1);
	p->first_saw_second = flag_set_within(&p->second_ran, 10000);
	atomic_store(&p->first_ran, 1);
}

static void second(npurt_stream *s, npurt_status status, void *user)
{
	struct pair *p = user;

	(void)s;
	(void)status;
	atomic_store(&p->second_ran, 1);
}

TEST_F(cb, callbacks_wait_for_their_stream_only_and_not_for_each_other)
{
	struct pair p = { 0 };
	npurt_notify *gate2;

	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &gate2));
	/* Neither runs while its stream's work before it has not. */
	gate_close(self->s);
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, first, &p));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify(self->t, gate2));
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->t, second, &p));
	usleep(150000);
	EXPECT_EQ(0, atomic_load(&p.first_started));
	EXPECT_EQ(0, atomic_load(&p.second_ran));
	/* s's callback runs first, and waits for t's, which another thread runs. */
	gate_open();
	ASSERT_TRUE(flag_set_within(&p.first_started, 10000));
	EXPECT_EQ(0, atomic_load(&p.second_ran));
	ASSERT_EQ(NPURT_OK, npurt_notify_record(gate2, self->opener));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->t)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(1, atomic_load(&p.first_ran));
	EXPECT_EQ(1, atomic_load(&p.second_ran));
	EXPECT_TRUE(p.first_saw_second);
	npurt_notify_destroy(gate2);
}

/* A callback that issues work: on another stream, on its own, and a callback. */
struct issuer {
	uint64_t dva;
	npurt_stream *other;
	npurt_status st[3];
	struct seen tail;
	atomic_int ran;
};

static void issue(npurt_stream *s, npurt_status status, void *user)
{
	struct issuer *w = user;

	(void)status;
	w->st[0] = npurt_memset_async(w->other, w->dva, 0xa1, 4);
	w->st[1] = npurt_memset_async(s, w->dva + 4, 0xb2, 4);
	w->st[2] = npurt_stream_add_callback(s, check_then_write, &w->tail);
	atomic_store(&w->ran, 1);
}

TEST_F(cb, a_callback_issues_work_on_other_streams_and_its_own)
{
	struct issuer w = { .dva = self->dva, .other = self->t,
			    .tail = { .host = self->dp + 1, .words = 1, .expect = 0xb2,
				      .write = 0xc3 } };

	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, issue, &w));
	ASSERT_TRUE(flag_set_within(&w.ran, 10000));
	ASSERT_TRUE(flag_set_within(&w.tail.ran, 10000));
	EXPECT_EQ(NPURT_OK, w.st[0]);
	EXPECT_EQ(NPURT_OK, w.st[1]);
	EXPECT_EQ(NPURT_OK, w.st[2]);
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->t)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0xa1, self->dp[0]);
	/* The second callback ran after the work its caller issued before it. */
	EXPECT_TRUE(w.tail.data_ok);
	EXPECT_EQ(NPURT_OK, w.tail.status);
	EXPECT_EQ(0xc3, self->dp[1]);
}

TEST_F(cb, a_failure_before_the_callback_is_its_status)
{
	struct seen w = { .host = self->hp, .words = 0, .write = 0 };

	/* Behind the gate, so that the fault comes after the callback is added. */
	gate_close(self->s);
	/* The top of the device address space: mapped by nothing. */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, DRM_NPU_VA_END - MiB, 1, 4096));
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, check_then_write, &w))
		TH_LOG("%s", npurt_last_error());
	gate_open();
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	ASSERT_TRUE(flag_set_within(&w.ran, 10000));
	EXPECT_EQ(NPURT_ERR_DEVICE, w.status);
	/* Known failed: refused, and never called. */
	atomic_store(&w.ran, 0);
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_add_callback(self->s, check_then_write, &w));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_stream_add_callback"));
	usleep(100000);
	EXPECT_EQ(0, atomic_load(&w.ran));
}

TEST_F(cb, destroy_waits_for_the_callbacks_and_their_work)
{
	struct issuer w = { .dva = self->dva, .other = self->t,
			    .tail = { .host = self->hp, .words = 0, .write = 0 } };
	struct seen slow = { .host = self->hp, .words = 0, .write = 0 };
	npurt_stream *x;

	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &x));
	gate_close(x);
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(x, check_then_write, &slow));
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(x, issue, &w));
	gate_open();
	npurt_stream_destroy(x);
	EXPECT_EQ(1, atomic_load(&slow.ran));
	EXPECT_EQ(1, atomic_load(&w.ran));
	EXPECT_EQ(1, atomic_load(&w.tail.ran));
	EXPECT_EQ(NPURT_OK, w.st[1]);
	/* What the callback issued on the stream ran before it went. */
	EXPECT_EQ(0xb2, self->dp[1]);
}

static void never(npurt_stream *s, npurt_status status, void *user)
{
	(void)s;
	(void)status;
	atomic_store((atomic_int *)user, 1);
}

TEST_F(cb, bad_arguments_are_refused_and_leave_the_stream_as_it_was)
{
	atomic_int ran = 0;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_add_callback(NULL, never, &ran));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_stream_add_callback"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_add_callback(self->s, NULL, &ran));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NULL function")) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->dva, 5, 4));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(5, self->dp[0]);
	EXPECT_EQ(0, atomic_load(&ran));
	ASSERT_EQ(NPURT_OK, npurt_stream_add_callback(self->s, never, &ran));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	EXPECT_EQ(1, atomic_load(&ran));
}

TEST_HARNESS_MAIN
