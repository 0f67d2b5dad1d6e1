// SPDX-License-Identifier: MIT
/*
 * libnpurt events and notifies against npu.ko, on both submission paths:
 * timing and plain events, what a query says, host waits with a time
 * limit, records that reuse device events (counted: the test binary's own
 * ioctl() stands in front of the library's), waits that never pass on an
 * earlier record, events shared by threads, notifies that release one wait
 * per record, in this process and another, and bad arguments.
 *
 * Streams are held back by a gate: a stream waiting on a notify nobody
 * recorded yet, opened by recording it on another stream.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1u << 20)

/* Every ioctl of this process, libnpurt's (through libdrm) included. */
static atomic_ulong n_sync_create, n_sync_destroy, n_submit, n_ioctl;

int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	atomic_fetch_add(&n_ioctl, 1);
	if (request == DRM_IOCTL_NPU_SYNC_CREATE)
		atomic_fetch_add(&n_sync_create, 1);
	else if (request == DRM_IOCTL_NPU_SYNC_DESTROY)
		atomic_fetch_add(&n_sync_destroy, 1);
	else if (request == DRM_IOCTL_NPU_SUBMIT)
		atomic_fetch_add(&n_submit, 1);
	return (int)syscall(SYS_ioctl, fd, request, arg);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Until the 32-bit word at p is `want`, at most ms: whether it got there. */
static bool word_becomes(volatile uint32_t *p, uint32_t want, int ms)
{
	for (int64_t end = now_ms() + ms; now_ms() < end; usleep(2000))
		if (*p == want)
			return true;
	return *p == want;
}

FIXTURE(ev) {
	npurt_device *dev;
	npurt_mem *m;			/* markers */
	uint64_t va;
	volatile uint32_t *host;
	npurt_stream *a, *b, *opener;
	npurt_notify *gate;
};

FIXTURE_VARIANT(ev) {
	const char *env;
	npurt_submit_path path;
};

FIXTURE_VARIANT_ADD(ev, ioctl) { .env = "ioctl", .path = NPURT_SUBMIT_IOCTL };
FIXTURE_VARIANT_ADD(ev, io_uring) { .env = "io_uring", .path = NPURT_SUBMIT_IO_URING };

FIXTURE_SETUP(ev)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(variant->path, npurt_device_submit_path(self->dev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, MiB, &self->m));
	self->va = npurt_mem_device_addr(self->m);
	self->host = npurt_mem_host_ptr(self->m);
	memset((void *)self->host, 0, MiB);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->a));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->b));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->opener));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &self->gate)) TH_LOG("%s", npurt_last_error());
}

FIXTURE_TEARDOWN(ev)
{
	npurt_stream_destroy(self->a);
	npurt_stream_destroy(self->b);
	npurt_stream_destroy(self->opener);
	npurt_notify_destroy(self->gate);
	npurt_mem_free(self->m);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "io_uring commands: "));
}

/* Hold s back until gate_open(). */
#define gate_close(s) ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify((s), self->gate))
#define gate_open() ASSERT_EQ(NPURT_OK, npurt_notify_record(self->gate, self->opener))

/* Marker i: word i of the markers, written by stream s. */
#define mark(s, i, v) ASSERT_EQ(NPURT_OK, npurt_memset_async((s), self->va + 4 * (i), (v), 4))

TEST_F(ev, timing_and_plain_events)
{
	npurt_event *t0, *t1, *plain, *dflt;
	int64_t ns = -1;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, NPURT_EVENT_TIMING, &t0));
	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, NPURT_EVENT_TIMING, &t1));
	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, 0, &plain));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &dflt));	/* timing */
	ASSERT_EQ(NPURT_OK, npurt_event_record(t0, self->a));
	ASSERT_EQ(NPURT_OK, npurt_event_record(dflt, self->a));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->a, self->va, 1, MiB));
	ASSERT_EQ(NPURT_OK, npurt_event_record(plain, self->a));
	ASSERT_EQ(NPURT_OK, npurt_event_record(t1, self->a));
	ASSERT_EQ(NPURT_OK, npurt_event_synchronize(t1)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_event_elapsed_ns(t0, t1, &ns)) TH_LOG("%s", npurt_last_error());
	EXPECT_LT(0, ns);
	ASSERT_EQ(NPURT_OK, npurt_event_elapsed_ns(dflt, t1, &ns));
	EXPECT_LT(0, ns);
	/* A plain event completes and orders like any other, but has no time. */
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(plain));
	EXPECT_EQ(NPURT_OK, npurt_event_query(plain));
	ns = -1;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_elapsed_ns(t0, plain, &ns));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_EVENT_TIMING")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_event_elapsed_ns"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_elapsed_ns(plain, t1, &ns));
	EXPECT_EQ(-1, ns);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_create_flags(self->dev, 4, &plain));
	npurt_event_destroy(t0);
	npurt_event_destroy(t1);
	npurt_event_destroy(plain);
	npurt_event_destroy(dflt);
}

TEST_F(ev, query_says_recorded_not_ready_or_the_streams_failure)
{
	npurt_event *ev;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, 0, &ev));
	EXPECT_EQ(NPURT_OK, npurt_event_query(ev));	/* never recorded */
	gate_close(self->a);
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_event_query")) TH_LOG("%s", npurt_last_error());
	usleep(100000);
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	gate_open();
	ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_event_query(ev));

	/*
	 * Recorded behind a fault: the stream's failure, not "not ready" for
	 * ever. The gate keeps the fault from failing the stream before the
	 * record is issued.
	 */
	gate_close(self->b);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->b, DRM_NPU_VA_END - MiB, 1, 4096));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->b));
	gate_open();
	for (int i = 0; i < 500 && npurt_event_query(ev) == NPURT_ERR_NOT_READY; i++)
		usleep(2000);
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_event_query(ev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "memory fault")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_event_synchronize(ev));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_event_synchronize_timeout(ev, 1000));
	npurt_event_destroy(ev);
}

struct opener {
	npurt_notify *gate;
	npurt_stream *s;
	int after_ms;
};

static void *open_later(void *arg)
{
	struct opener *o = arg;

	usleep(o->after_ms * 1000);
	npurt_notify_record(o->gate, o->s);
	return NULL;
}

TEST_F(ev, synchronize_polls_times_out_or_waits)
{
	struct opener o = { self->gate, self->opener, 300 };
	npurt_stream *g;
	npurt_event *held, *ev;
	pthread_t t;
	int64_t t0;

	/* a waits for an event of g, which the gate holds back. */
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &g));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &held));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	gate_close(g);
	ASSERT_EQ(NPURT_OK, npurt_event_record(held, g));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->a, held));
	mark(self->a, 0, 0xa);
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));

	t0 = now_ms();
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_event_synchronize_timeout(ev, 0));
	EXPECT_LT(now_ms() - t0, 1000);
	t0 = now_ms();
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_event_synchronize_timeout(ev, 150));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_event_synchronize_timeout"));
	EXPECT_LE(150, now_ms() - t0);
	EXPECT_GT(2000, now_ms() - t0);
	EXPECT_EQ(0, self->host[0]);

	/* Without limit: returns once the gate opens, with a's work done. */
	ASSERT_EQ(0, pthread_create(&t, NULL, open_later, &o));
	t0 = now_ms();
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize_timeout(ev, -1)) TH_LOG("%s", npurt_last_error());
	EXPECT_LE(250, now_ms() - t0);
	EXPECT_EQ(0xa, self->host[0]);
	pthread_join(t, NULL);
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize_timeout(ev, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_synchronize_timeout(ev, -2));
	npurt_event_destroy(held);
	npurt_event_destroy(ev);
	npurt_stream_destroy(g);
}

/*
 * The device events a run of records costs. Before the pool, each record
 * was SYNC_CREATE + SUBMIT + SYNC_DESTROY.
 */
TEST_F(ev, records_reuse_device_events)
{
	unsigned long creates, submits, ioctls;
	npurt_event *ev, *t0, *t1;

	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &t0));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &t1));

	/* Record and wait, 1000 times: the record is its submit alone. */
	creates = n_sync_create, submits = n_submit, ioctls = n_ioctl;
	for (int i = 0; i < 1000; i++) {
		unsigned long before = n_ioctl;

		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
		if (i >= 10 && variant->path == NPURT_SUBMIT_IOCTL)
			ASSERT_EQ(before + 1, n_ioctl) TH_LOG("record %d", i);
		if (i >= 10 && variant->path == NPURT_SUBMIT_IO_URING)
			ASSERT_EQ(before, n_ioctl) TH_LOG("record %d", i);
		ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev)) TH_LOG("%s", npurt_last_error());
	}
	TH_LOG("record + synchronize x1000: %lu SYNC_CREATE, %lu SUBMIT, %lu ioctls",
	       n_sync_create - creates, n_submit - submits, n_ioctl - ioctls);
	EXPECT_GE(3, n_sync_create - creates);

	/* Timing pairs around work, as a profiler records them. */
	creates = n_sync_create;
	for (int i = 0; i < 300; i++) {
		int64_t ns;

		ASSERT_EQ(NPURT_OK, npurt_event_record(t0, self->a));
		mark(self->a, 1, i);
		ASSERT_EQ(NPURT_OK, npurt_event_record(t1, self->a));
		ASSERT_EQ(NPURT_OK, npurt_event_synchronize(t1));
		ASSERT_EQ(NPURT_OK, npurt_event_elapsed_ns(t0, t1, &ns)) TH_LOG("%s", npurt_last_error());
	}
	TH_LOG("timing pairs x300: %lu SYNC_CREATE", n_sync_create - creates);
	EXPECT_GE(4, n_sync_create - creates);

	/* Another stream waits each record, and is synchronized. */
	creates = n_sync_create;
	for (int i = 0; i < 300; i++) {
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
		ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->b, ev));
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b));
	}
	TH_LOG("record, wait on another stream x300: %lu SYNC_CREATE", n_sync_create - creates);
	EXPECT_GE(3, n_sync_create - creates);

	/*
	 * Nobody waits, and the device falls behind: the pool grows to at most
	 * 64 device events, then recycles (the context's holds stay bounded)...
	 */
	creates = n_sync_create, ioctls = n_ioctl;
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	TH_LOG("record x1000 unsynchronized: %lu SYNC_CREATE, %lu SYNC_DESTROY, %lu ioctls",
	       n_sync_create - creates, n_sync_destroy, n_ioctl - ioctls);
	/* The pool's 64 and the gate. */
	EXPECT_GE(65, n_sync_create - n_sync_destroy);
	/* ...and is reused once it has caught up. */
	creates = n_sync_create;
	for (int i = 0; i < 200; i++) {
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
		ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	}
	EXPECT_EQ(0, n_sync_create - creates);
	npurt_event_destroy(ev);
	npurt_event_destroy(t0);
	npurt_event_destroy(t1);
}
/*
 * A wait issued after a record waits for that record, not the one before,
 * whose device event (if it were the same, or reused too early) is still
 * recorded. Each round records twice behind the gate, so the pool has
 * resets still held back there when it picks entries.
 */
TEST_F(ev, a_wait_after_a_record_never_passes_on_the_record_before)
{
	npurt_event *ev;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, 0, &ev));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	for (uint32_t round = 1; round <= 6; round++) {
		gate_close(self->a);
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
		if (round > 1)
			ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
		ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->b, ev));
		mark(self->b, round, round);
		usleep(150000);
		ASSERT_EQ(0, self->host[round]) TH_LOG("round %u: b passed a record behind the gate",
							round);
		EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
		gate_open();
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b)) TH_LOG("%s", npurt_last_error());
		EXPECT_EQ(round, self->host[round]);
		if (round % 2)
			ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	}
	npurt_event_destroy(ev);
}

/*
 * The other way round: a wait issued before the re-records still passes on
 * the record it was issued after, although that record's device event
 * retired meanwhile (a reset run before the wait would block it for good).
 */
TEST_F(ev, a_wait_before_a_rerecord_still_passes_on_its_record)
{
	npurt_event *ev, *after;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, 0, &ev));
	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, 0, &after));
	/* Not synchronized: a record known to have run would need no wait. */
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	gate_close(self->b);
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->b, ev));
	mark(self->b, 0, 0x77);
	ASSERT_EQ(NPURT_OK, npurt_event_record(after, self->b));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
		ASSERT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	}
	gate_open();
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize_timeout(after, 5000)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0x77, self->host[0]);
	npurt_event_destroy(ev);
	npurt_event_destroy(after);
}

/*
 * Four threads, a stream each, in a ring: each fills its word, records its
 * event, then waits for the event of the thread before it and copies that
 * thread's word. The copy must show at least the record that thread had
 * made when the wait was issued: a device event reused while still
 * recorded (or handed to two records at once) lets the wait pass early and
 * copies an older fill. All four also record, query and wait for one
 * shared event.
 */
#define ROUNDS 150

struct worker {
	npurt_device *dev;
	npurt_event *own, *prev, *shared;
	atomic_uint *done, *prev_done;		/* records made, this thread's and the one before */
	uint64_t word, prev_word, slots;	/* device addresses */
	uint32_t expect[ROUNDS + 1];		/* at least this round of the one before */
	int id;
	char why[128];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	npurt_stream *s;

	if (npurt_stream_create(w->dev, NPURT_PRIORITY_NORMAL, &s)) {
		snprintf(w->why, sizeof(w->why), "setup: %s", npurt_last_error());
		return NULL;
	}
	for (uint32_t i = 1; i <= ROUNDS && !w->why[0]; i++) {
		npurt_status q;

		if (npurt_memset_async(s, w->word, (uint32_t)w->id << 16 | i, 4) ||
		    npurt_event_record(w->own, s)) {
			snprintf(w->why, sizeof(w->why), "%u: %s", i, npurt_last_error());
			break;
		}
		atomic_store(w->done, i);
		w->expect[i] = atomic_load(w->prev_done);
		if (npurt_stream_wait_event(s, w->prev) ||
		    npurt_memcpy_async(s, w->slots + 4 * i, w->prev_word, 4) ||
		    npurt_event_record(w->shared, s)) {
			snprintf(w->why, sizeof(w->why), "%u: %s", i, npurt_last_error());
			break;
		}
		q = npurt_event_query(w->shared);
		if (q != NPURT_OK && q != NPURT_ERR_NOT_READY)
			snprintf(w->why, sizeof(w->why), "query: %s", npurt_last_error());
		if (i % 25 == 0 && npurt_event_synchronize_timeout(w->shared, 20000))
			snprintf(w->why, sizeof(w->why), "sync %u: %s", i, npurt_last_error());
	}
	if (!w->why[0] && npurt_stream_synchronize(s))
		snprintf(w->why, sizeof(w->why), "stream: %s", npurt_last_error());
	npurt_stream_destroy(s);
	return NULL;
}

TEST_F(ev, events_are_used_from_four_threads)
{
	static struct worker w[4];
	atomic_uint done[4];
	pthread_t th[4];
	npurt_event *shared;
	unsigned long creates = n_sync_create;

	/* A context has 8 queues: the threads' four and a. */
	npurt_stream_destroy(self->b);
	npurt_stream_destroy(self->opener);
	self->b = self->opener = NULL;
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &shared));
	for (int i = 0; i < 4; i++) {
		atomic_init(&done[i], 0);
		memset(&w[i], 0, sizeof(w[i]));
		w[i].dev = self->dev;
		w[i].shared = shared;
		w[i].id = i + 1;
		w[i].word = self->va + 4 * i;
		w[i].slots = self->va + 4096 * (i + 1);
		ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, 0, &w[i].own));
	}
	for (int i = 0; i < 4; i++) {
		int before = (i + 3) % 4;

		w[i].prev = w[before].own;
		w[i].prev_word = w[before].word;
		w[i].done = &done[i];
		w[i].prev_done = &done[before];
	}
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_main, &w[i]));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		volatile uint32_t *slot = self->host + 1024 * (i + 1);
		uint32_t prev_id = (uint32_t)(i + 3) % 4 + 1;

		EXPECT_EQ(0, w[i].why[0]) TH_LOG("thread %d: %s", i, w[i].why);
		for (uint32_t k = 1; k <= ROUNDS; k++) {
			if (!w[i].expect[k])
				continue;
			ASSERT_EQ(prev_id, slot[k] >> 16) TH_LOG("thread %d, round %u", i, k);
			ASSERT_LE(w[i].expect[k], slot[k] & 0xffff)
				TH_LOG("thread %d, round %u: copied round %u", i, k, slot[k] & 0xffff);
		}
	}
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(shared));
	/* Far behind, the device leaves few to reuse; the context's holds stay bounded. */
	TH_LOG("4 threads x %d x 2 records: %lu SYNC_CREATE, %lu SYNC_DESTROY", ROUNDS,
	       n_sync_create - creates, n_sync_destroy);
	EXPECT_GE(128, n_sync_create - n_sync_destroy);
	for (int i = 0; i < 4; i++)
		npurt_event_destroy(w[i].own);
	npurt_event_destroy(shared);
}

TEST_F(ev, each_notify_record_releases_exactly_one_wait)
{
	npurt_notify *n;

	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &n));
	for (int i = 1; i <= 3; i++) {
		ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify(self->b, n));
		mark(self->b, i, i);
	}
	ASSERT_EQ(NPURT_OK, npurt_notify_record(n, self->a));
	ASSERT_EQ(NPURT_OK, npurt_notify_record(n, self->a));
	ASSERT_TRUE(word_becomes(&self->host[2], 2, 5000));
	usleep(150000);
	EXPECT_EQ(1, self->host[1]);
	EXPECT_EQ(0, self->host[3]);	/* auto-reset: two records, two waits */
	ASSERT_EQ(NPURT_OK, npurt_notify_record(n, self->a));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(3, self->host[3]);
	/* A record before its wait is kept for it. */
	ASSERT_EQ(NPURT_OK, npurt_notify_record(n, self->a));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->a));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify(self->b, n));
	mark(self->b, 4, 4);
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b));
	EXPECT_EQ(4, self->host[4]);
	npurt_notify_destroy(n);
}

/* The child: waits for the parent's notify, then records its own for the parent. */
static int notify_child(int sock)
{
	npurt_notify *go, *done;
	npurt_device *dev;
	npurt_stream *s;
	int fd_go = npu_recv_fd(sock), fd_done = npu_recv_fd(sock);

	if (fd_go < 0 || fd_done < 0)
		return 2;
	if (npurt_device_open(0, &dev) || npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s))
		return 3;
	if (npurt_notify_import(dev, fd_go, &go) || npurt_notify_import(dev, fd_done, &done))
		return 4;
	close(fd_go);
	close(fd_done);
	if (npurt_stream_wait_notify(s, go) || npurt_notify_record(done, s) ||
	    npurt_stream_synchronize(s))
		return 5;
	npurt_notify_destroy(go);
	npurt_notify_destroy(done);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	return 0;
}

TEST_F(ev, a_notify_crosses_to_a_child_process)
{
	npurt_notify *go, *done, *again;
	npurt_event *ev;
	int sv[2], fd, status;
	pid_t pid;

	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &go));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &done));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sv[0]);
		_exit(notify_child(sv[1]));
	}
	close(sv[1]);
	ASSERT_EQ(NPURT_OK, npurt_notify_export(go, &fd)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, npu_send_fd(sv[0], fd));
	close(fd);
	ASSERT_EQ(NPURT_OK, npurt_notify_export(done, &fd));
	ASSERT_EQ(0, npu_send_fd(sv[0], fd));
	/* Imported where it was made: another handle of the same notify. */
	ASSERT_EQ(NPURT_OK, npurt_notify_import(self->dev, fd, &again)) TH_LOG("%s", npurt_last_error());
	close(fd);

	/* b goes on once the child's stream records `done`, after `go`. */
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify(self->b, again));
	mark(self->b, 0, 0xd0);
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->b));
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_event_synchronize_timeout(ev, 200));
	EXPECT_EQ(0, self->host[0]);
	ASSERT_EQ(NPURT_OK, npurt_notify_record(go, self->a));
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize_timeout(ev, 20000)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0xd0, self->host[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Both handles name one notify: the first to go leaves the other working. */
	npurt_notify_destroy(done);
	ASSERT_EQ(NPURT_OK, npurt_notify_record(again, self->a));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify(self->b, again));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->b)) TH_LOG("%s", npurt_last_error());
	npurt_notify_destroy(again);
	npurt_notify_destroy(go);
	npurt_event_destroy(ev);
	close(sv[0]);
}

#define EXPECT_INVALID(call, name)							\
	do {										\
		EXPECT_EQ(NPURT_ERR_INVALID, (call));					\
		EXPECT_NE(NULL, strstr(npurt_last_error(), name))			\
			TH_LOG("%s: %s", #call, npurt_last_error());			\
	} while (0)

TEST_F(ev, bad_arguments_are_refused_and_name_the_call)
{
	npurt_event *ev, *other_ev, *out = (npurt_event *)0x1;
	npurt_notify *n, *other_n, *nout = (npurt_notify *)0x1;
	npurt_device *other;
	npurt_stream *other_s;
	int64_t ns;
	int fd = -7;

	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &n));
	EXPECT_INVALID(npurt_event_create_flags(NULL, 0, &out), "npurt_event_create_flags");
	EXPECT_INVALID(npurt_event_create_flags(self->dev, 0, NULL), "npurt_event_create_flags");
	EXPECT_INVALID(npurt_event_create_flags(self->dev, ~0u, &out), "npurt_event_create_flags");
	EXPECT_EQ((npurt_event *)0x1, out);
	EXPECT_INVALID(npurt_event_create(NULL, &out), "npurt_event_create");
	EXPECT_INVALID(npurt_event_record(NULL, self->a), "npurt_event_record");
	EXPECT_INVALID(npurt_event_record(ev, NULL), "npurt_event_record");
	EXPECT_INVALID(npurt_stream_wait_event(NULL, ev), "npurt_stream_wait_event");
	EXPECT_INVALID(npurt_stream_wait_event(self->a, NULL), "npurt_stream_wait_event");
	EXPECT_INVALID(npurt_event_query(NULL), "npurt_event_query");
	EXPECT_INVALID(npurt_event_synchronize(NULL), "npurt_event_synchronize");
	EXPECT_INVALID(npurt_event_synchronize_timeout(NULL, 0), "npurt_event_synchronize_timeout");
	EXPECT_INVALID(npurt_event_elapsed_ns(ev, NULL, &ns), "npurt_event_elapsed_ns");
	EXPECT_INVALID(npurt_event_elapsed_ns(ev, ev, NULL), "npurt_event_elapsed_ns");
	EXPECT_INVALID(npurt_event_elapsed_ns(ev, ev, &ns), "never recorded");
	EXPECT_INVALID(npurt_event_export(NULL, &fd), "npurt_event_export");
	EXPECT_INVALID(npurt_event_export(ev, NULL), "npurt_event_export");
	EXPECT_INVALID(npurt_event_import(NULL, 0, &out), "npurt_event_import");
	/* Only interprocess events cross processes (npurt_ipc_event_test.c). */
	EXPECT_INVALID(npurt_event_export(ev, &fd), "NPURT_EVENT_INTERPROCESS");
	EXPECT_EQ(-7, fd);
	EXPECT_INVALID(npurt_event_import(self->dev, 0, &out), "npurt_event_import");

	EXPECT_INVALID(npurt_notify_create(NULL, &nout), "npurt_notify_create");
	EXPECT_INVALID(npurt_notify_create(self->dev, NULL), "npurt_notify_create");
	EXPECT_EQ((npurt_notify *)0x1, nout);
	EXPECT_INVALID(npurt_notify_record(NULL, self->a), "npurt_notify_record");
	EXPECT_INVALID(npurt_notify_record(n, NULL), "npurt_notify_record");
	EXPECT_INVALID(npurt_stream_wait_notify(NULL, n), "npurt_stream_wait_notify");
	EXPECT_INVALID(npurt_stream_wait_notify(self->a, NULL), "npurt_stream_wait_notify");
	EXPECT_INVALID(npurt_notify_export(NULL, &fd), "npurt_notify_export");
	EXPECT_INVALID(npurt_notify_export(n, NULL), "npurt_notify_export");
	EXPECT_INVALID(npurt_notify_import(NULL, 0, &nout), "npurt_notify_import");
	EXPECT_INVALID(npurt_notify_import(self->dev, -1, &nout), "npurt_notify_import");
	/* An fd that is not a notify: the device's own. */
	EXPECT_INVALID(npurt_notify_import(self->dev, npurt_device_fd(self->dev), &nout),
		       "npurt_notify_import");
	EXPECT_EQ((npurt_notify *)0x1, nout);
	/* The wrong kind of handle is caught by its tag. */
	EXPECT_INVALID(npurt_event_query((npurt_event *)n), "not an npurt_event");
	EXPECT_INVALID(npurt_notify_record((npurt_notify *)ev, self->a), "not an npurt_notify");

	/* Another device handle (another context): its ids mean nothing here. */
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &other));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(other, NPURT_PRIORITY_NORMAL, &other_s));
	ASSERT_EQ(NPURT_OK, npurt_event_create(other, &other_ev));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(other, &other_n));
	EXPECT_INVALID(npurt_event_record(ev, other_s), "different devices");
	EXPECT_INVALID(npurt_stream_wait_event(other_s, ev), "npurt_stream_wait_event");
	EXPECT_INVALID(npurt_notify_record(n, other_s), "different devices");
	EXPECT_INVALID(npurt_stream_wait_notify(other_s, n), "npurt_stream_wait_notify");
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	ASSERT_EQ(NPURT_OK, npurt_event_record(other_ev, other_s));
	EXPECT_INVALID(npurt_event_elapsed_ns(ev, other_ev, &ns), "different devices");
	npurt_event_destroy(other_ev);
	npurt_notify_destroy(other_n);
	npurt_stream_destroy(other_s);
	npurt_device_close(other);

	/* None of it reached the device or changed the stream. */
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->a));
	npurt_event_destroy(NULL);
	npurt_notify_destroy(NULL);
	npurt_event_destroy(ev);
	npurt_notify_destroy(n);
}

TEST_HARNESS_MAIN
