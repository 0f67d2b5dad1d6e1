// SPDX-License-Identifier: MIT
/*
 * libnpurt streams, memory and events against npu.ko, on both submission
 * paths (NPURT_SUBMIT=ioctl and NPURT_SUBMIT=io_uring): the data is what
 * the operations say, failures are reported with where they happened,
 * events order streams, and threads sharing the device's ring all see
 * their own completions.
 */
#include <malloc.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1u << 20)

FIXTURE(rt) {
	npurt_device *dev;
	npurt_mem *a, *b;
	npurt_stream *s;
};

FIXTURE_VARIANT(rt) {
	const char *env;
	npurt_submit_path path;
};

FIXTURE_VARIANT_ADD(rt, ioctl) { .env = "ioctl", .path = NPURT_SUBMIT_IOCTL };
FIXTURE_VARIANT_ADD(rt, io_uring) { .env = "io_uring", .path = NPURT_SUBMIT_IO_URING };

FIXTURE_SETUP(rt)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(variant->path, npurt_device_submit_path(self->dev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4 * MiB, &self->a));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4 * MiB, &self->b));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
}

FIXTURE_TEARDOWN(rt)
{
	npurt_stream_destroy(self->s);
	npurt_mem_free(self->a);
	npurt_mem_free(self->b);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "io_uring commands: "));
}

TEST_F(rt, memset_and_memcpy_land_in_order)
{
	uint64_t a = npurt_mem_device_addr(self->a), b = npurt_mem_device_addr(self->b);
	uint32_t *hb = npurt_mem_host_ptr(self->b);

	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 0x11111111, 4 * MiB));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a + MiB, 0x22222222, MiB));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, b, a, 4 * MiB));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0x11111111, hb[0]);
	EXPECT_EQ(0x22222222, hb[MiB / 4]);
	EXPECT_EQ(0x22222222, hb[2 * MiB / 4 - 1]);
	EXPECT_EQ(0x11111111, hb[2 * MiB / 4]);
	EXPECT_EQ(0x11111111, hb[4 * MiB / 4 - 1]);
	/* Synchronizing again with nothing new returns at once. */
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
}

TEST_F(rt, more_work_than_a_queue_holds_runs_in_issue_order)
{
	uint64_t a = npurt_mem_device_addr(self->a), b = npurt_mem_device_addr(self->b);
	uint32_t *ha = npurt_mem_host_ptr(self->a);
	npurt_stream *busy;
	npurt_event *ev;

	/* Hold the stream back behind ~200 MB of fills on another one... */
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &busy));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(busy, b, i, 4 * MiB));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, busy));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->s, ev));
	/*
	 * ...so these 3000 batches fill its queue, six times over. Each copies
	 * the word before it one further: a batch run before its predecessor
	 * leaves a 0 behind.
	 */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 7, 4));
	for (uint32_t i = 1; i < 3000; i++) {
		ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, a + 4 * i, a + 4 * (i - 1), 4));
	}
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (uint32_t i = 0; i < 3000; i++) {
		ASSERT_EQ(7, ha[i]) TH_LOG("word %u", i);
	}
	npurt_event_destroy(ev);
	npurt_stream_destroy(busy);
}

/*
 * Each batch's ring slots come back when it completes, its FENCE's too:
 * more batches than the queue's 512 slots, one at a time, all run.
 */
TEST_F(rt, more_batches_than_a_queue_holds_run_one_after_another)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	uint32_t *ha = npurt_mem_host_ptr(self->a);

	for (uint32_t i = 0; i < 1200; i++) {
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, i, 4));
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("batch %u", i);
	}
	EXPECT_EQ(1199, ha[0]);
}

TEST_F(rt, bad_arguments_are_refused_before_the_device)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	npurt_stream *s = (npurt_stream *)0x1;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_memset_async(self->s, a + 2, 0, 64));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "multiples of 4"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_memset_async(self->s, a, 0, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_memcpy_async(self->s, a, a, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create(self->dev, 7, &s));
	EXPECT_EQ((npurt_stream *)0x1, s);
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
}

TEST_F(rt, a_device_fault_fails_the_stream_and_says_where)
{
	uint64_t a = npurt_mem_device_addr(self->a);

	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 1, 4096));
	/* The top of the device address space: mapped by nothing. */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, DRM_NPU_VA_END - MiB, 1, 4096));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "memory fault")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "write")) TH_LOG("%s", npurt_last_error());
	/* The stream takes no more work; another one does. */
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_memset_async(self->s, a, 1, 4096));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));

	npurt_stream *s2;

	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_HIGH, &s2));
	EXPECT_EQ(NPURT_OK, npurt_memset_async(s2, a, 3, 4096));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s2));
	EXPECT_EQ(3, ((uint32_t *)npurt_mem_host_ptr(self->a))[0]);
	npurt_stream_destroy(s2);
}

/*
 * Hold the fixture's stream back on the device: a gate stream records
 * `ev` behind 100 MB of fills, and the stream waits for it.
 */
static void hold_behind_gate(struct __test_metadata *_metadata, FIXTURE_DATA(rt) *self,
			     npurt_stream **gate, npurt_event **ev)
{
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, gate));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, ev));
	for (int i = 0; i < 25; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(*gate, npurt_mem_device_addr(self->b), i,
						       4 * MiB));
	ASSERT_EQ(NPURT_OK, npurt_event_record(*ev, *gate));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->s, *ev));
}

/*
 * self->s held back until gate_open(), however slow or fast the machine:
 * its next work waits for an event recorded behind a notify nobody
 * records yet.
 */
struct gate {
	npurt_stream *s, *opener;
	npurt_notify *n;
	npurt_event *ev;
};

static void gate_close(struct __test_metadata *_metadata, FIXTURE_DATA(rt) *self,
		       struct gate *g)
{
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &g->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &g->opener));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &g->n));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &g->ev));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify(g->s, g->n));
	ASSERT_EQ(NPURT_OK, npurt_event_record(g->ev, g->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->s, g->ev));
}

static void gate_open(struct __test_metadata *_metadata, struct gate *g)
{
	ASSERT_EQ(NPURT_OK, npurt_notify_record(g->n, g->opener));
}

static void gate_free(struct gate *g)
{
	npurt_event_destroy(g->ev);
	npurt_stream_destroy(g->s);
	npurt_stream_destroy(g->opener);
	npurt_notify_destroy(g->n);
}

/*
 * Operations issued while the stream has a batch in flight are gathered;
 * they must reach the device when that batch completes even if the
 * application makes no further call (on io_uring the progress thread
 * submits them). The host only watches memory here: no synchronize, no
 * query, no other libnpurt call until the values are there.
 */
TEST_F(rt, gathered_work_runs_without_another_call)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	volatile uint32_t *ha = npurt_mem_host_ptr(self->a);
	npurt_stream *gate;
	npurt_event *ev;
	uint64_t t0;
	enum { N = 32 };	/* fewer than a batch holds: no flush for size */

	ha[N - 1] = 0;
	/* The stream's first batch waits on the device for the gate... */
	hold_behind_gate(_metadata, self, &gate, &ev);
	/* ...so these are issued while it is in flight. */
	for (uint32_t i = 0; i < N; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a + 4 * i, i + 1, 4));
	t0 = npu_now_ms();
	while (ha[N - 1] != N && npu_now_ms() - t0 < 20000)
		usleep(1000);
	EXPECT_EQ(N, ha[N - 1]) TH_LOG("the last operation never reached the device");
	for (uint32_t i = 0; i < N; i++)
		EXPECT_EQ(i + 1, ha[i]);
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	npurt_event_destroy(ev);
	npurt_stream_destroy(gate);
}

TEST_F(rt, streams_are_made_as_their_descriptor_says)
{
	npurt_stream_desc d = { .size = sizeof(d), .priority = NPURT_PRIORITY_REALTIME,
				.depth = 512, .time_limit_ms = 5000 };
	npurt_stream *s = (npurt_stream *)0x1;
	uint64_t a = npurt_mem_device_addr(self->a);

	/* Tests run as root: REALTIME is allowed. 600 tasks overflow a 512 ring. */
	ASSERT_EQ(NPURT_OK, npurt_stream_create_desc(self->dev, &d, &s)) TH_LOG("%s", npurt_last_error());
	for (uint32_t i = 0; i < 600; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(s, a + 4 * (i % 1024), i, 4));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(599, ((uint32_t *)npurt_mem_host_ptr(self->a))[599]);
	npurt_stream_destroy(s);

	s = (npurt_stream *)0x1;
	d.depth = 1000;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create_desc(self->dev, &d, &s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "power of two"));
	d.depth = 0;
	d.size = 4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create_desc(self->dev, &d, &s));
	d.size = sizeof(d);
	d.flags = 2;		/* not an NPURT_STREAM_* flag */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create_desc(self->dev, &d, &s));
	d.flags = 0;
	d.priority = (npurt_stream_priority)4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create_desc(self->dev, &d, &s));
	d.priority = NPURT_PRIORITY_NORMAL;
	d.time_limit_ms = 0xffffffffu;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create_desc(self->dev, &d, &s));
	EXPECT_EQ((npurt_stream *)0x1, s);
}

/* A time limit on synchronize: 0 looks, a short one runs out, -1 waits. */
TEST_F(rt, synchronize_gives_up_when_its_time_runs_out)
{
	uint64_t a = npurt_mem_device_addr(self->a), t0;
	struct gate g;

	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize_timeout(self->s, 0));
	gate_close(_metadata, self, &g);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 9, 4096));
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_stream_synchronize_timeout(self->s, 0));
	t0 = npu_now_ms();
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_stream_synchronize_timeout(self->s, 1));
	/* In the stream's terms: which of its operations is still to run, the queue's after. */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "the time ran out before operations 1 "
			       "(npurt_stream_wait_event) to 2 of the stream completed (its queue"))
		TH_LOG("%s", npurt_last_error());
	EXPECT_GT(5000, npu_now_ms() - t0);
	gate_open(_metadata, &g);
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize_timeout(self->s, -1)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(9, ((uint32_t *)npurt_mem_host_ptr(self->a))[0]);
	gate_free(&g);
}

/*
 * Every wait policy sees completions (with the data landed: a wait that
 * saw the completion word returns only once the batch's writes are
 * visible) and failures, which never reach the word: spinning for good
 * asks the kernel, and spinning for a while then sleeping hears it.
 * Each round's wait finds its batch in flight or done, in turn.
 */
TEST_F(rt, every_wait_policy_sees_completions_and_failures)
{
	static const npurt_wait_policy policies[] = { NPURT_WAIT_AUTO, NPURT_WAIT_BLOCK,
						      NPURT_WAIT_SPIN };
	uint64_t a = npurt_mem_device_addr(self->a), b = npurt_mem_device_addr(self->b);
	volatile uint32_t *hb = npurt_mem_host_ptr(self->b);

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_set_wait_policy(self->dev, 3));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_set_wait_policy(NULL, NPURT_WAIT_AUTO));
	for (int p = 0; p < 3; p++) {
		npurt_stream *s;
		uint64_t t0;

		ASSERT_EQ(NPURT_OK, npurt_device_set_wait_policy(self->dev, policies[p]));
		ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s));
		for (uint32_t i = 1; i <= 300; i++) {
			ASSERT_EQ(NPURT_OK, npurt_memset_async(s, a, i, 64 * 1024));
			ASSERT_EQ(NPURT_OK, npurt_memcpy_async(s, b, a, 64 * 1024));
			if (i % 2)
				usleep(500);
			ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());
			ASSERT_EQ(i, hb[0]) TH_LOG("policy %d", p);
			ASSERT_EQ(i, hb[64 * 1024 / 4 - 1]) TH_LOG("policy %d", p);
		}
		EXPECT_EQ(NPURT_OK, npurt_stream_query(s));
		ASSERT_EQ(NPURT_OK, npurt_memset_async(s, DRM_NPU_VA_END - MiB, 1, 4096));
		t0 = npu_now_ms();
		EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(s));
		EXPECT_NE(NULL, strstr(npurt_last_error(), "memory fault")) TH_LOG("%s", npurt_last_error());
		EXPECT_GT(5000, npu_now_ms() - t0);
		npurt_stream_destroy(s);
	}
	EXPECT_EQ(NPURT_OK, npurt_device_set_wait_policy(self->dev, NPURT_WAIT_AUTO));
}

/* Abort stops what has not run; device synchronize waits for every stream. */
TEST_F(rt, abort_fails_the_stream_and_device_synchronize_waits_for_all)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	npurt_stream *other;
	struct gate g;

	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &other));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(other, a + 8192, 7, 4096));
	gate_close(_metadata, self, &g);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 9, 4096));
	ASSERT_EQ(NPURT_OK, npurt_stream_abort(self->s));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "aborted")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(9, ((uint32_t *)npurt_mem_host_ptr(self->a))[0]);
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_memset_async(self->s, a, 9, 4096));
	gate_open(_metadata, &g);
	/* The failed stream is among the device's: its failure is reported. */
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_device_synchronize(self->dev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_device_synchronize"));
	EXPECT_EQ(7, ((uint32_t *)npurt_mem_host_ptr(self->a))[2048]);
	EXPECT_EQ(NPURT_OK, npurt_stream_query(g.s));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_abort(NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_synchronize(NULL));
	gate_free(&g);
	npurt_stream_destroy(other);
}

/*
 * A wait for an event, issued while the stream has a batch in flight,
 * must still name a live device event when it reaches the driver, even
 * though the event was recorded again meanwhile (which lets the old
 * device event go).
 */
TEST_F(rt, a_wait_issued_behind_work_survives_a_new_record)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	npurt_stream *gate, *s2;
	npurt_event *held, *ev;

	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s2));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, s2));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(s2));
	hold_behind_gate(_metadata, self, &gate, &held);
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->s, ev));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, s2));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 3, 4096));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(3, ((uint32_t *)npurt_mem_host_ptr(self->a))[0]);
	npurt_event_destroy(held);
	npurt_event_destroy(ev);
	npurt_stream_destroy(gate);
	npurt_stream_destroy(s2);
}

/* A query never waits: done, not ready behind an unrecorded event, failed. */
TEST_F(rt, query_says_done_not_ready_or_failed_without_waiting)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	struct gate g;

	EXPECT_EQ(NPURT_OK, npurt_stream_query(self->s));	/* nothing issued */
	gate_close(_metadata, self, &g);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 5, 4096));
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_stream_query(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_stream_query: operations 1 "
			       "(npurt_stream_wait_event) to 2 of the stream not completed yet"))
		TH_LOG("%s", npurt_last_error());
	gate_open(_metadata, &g);
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_stream_query(self->s));
	/*
	 * The gate's record let self->s go before the gate's own batch
	 * completed (its fence comes after the record): done once waited for.
	 */
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(g.s));
	EXPECT_EQ(NPURT_OK, npurt_stream_query(g.s));
	EXPECT_EQ(5, ((uint32_t *)npurt_mem_host_ptr(self->a))[0]);

	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, DRM_NPU_VA_END - MiB, 1, 4096));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_query(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "memory fault")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_query(NULL));
	gate_free(&g);
}

/* Running out of queues is a resource taken (BUSY), not a device error. */
TEST_F(rt, no_free_queue_is_busy)
{
	npurt_stream *s[16] = { 0 };
	npurt_status st = NPURT_OK;
	int n;

	for (n = 0; n < 16; n++) {
		st = npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s[n]);
		if (st)
			break;
	}
	EXPECT_EQ(NPURT_ERR_BUSY, st) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "no hardware queue free"));
	EXPECT_LT(0, n);
	while (n-- > 0)
		npurt_stream_destroy(s[n]);
}

TEST_F(rt, events_order_streams_and_time_them)
{
	uint64_t a = npurt_mem_device_addr(self->a), b = npurt_mem_device_addr(self->b);
	uint32_t *hb = npurt_mem_host_ptr(self->b);
	npurt_event *start, *end;
	npurt_stream *s2;
	int64_t ns = -1;

	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &start));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &end));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s2));
	/* Never recorded: waits pass, elapsed time is refused. */
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(end));
	EXPECT_EQ(NPURT_OK, npurt_stream_wait_event(s2, end));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_elapsed_ns(start, end, &ns));

	for (int round = 1; round <= 3; round++) {
		ASSERT_EQ(NPURT_OK, npurt_event_record(start, self->s));
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 0x100 + round, 4 * MiB));
		ASSERT_EQ(NPURT_OK, npurt_event_record(end, self->s));
		/* s2 copies only after the fill: it waits for this round's record. */
		ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(s2, end));
		ASSERT_EQ(NPURT_OK, npurt_memcpy_async(s2, b, a, 4 * MiB));
		ASSERT_EQ(NPURT_OK, npurt_event_synchronize(end)) TH_LOG("%s", npurt_last_error());
		ASSERT_EQ(NPURT_OK, npurt_event_elapsed_ns(start, end, &ns));
		EXPECT_LT(0, ns);
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(s2));
		EXPECT_EQ(0x100 + round, hb[0]);
		EXPECT_EQ(0x100 + round, hb[4 * MiB / 4 - 1]);
	}
	/* An event outlives the stream it was recorded on. */
	npurt_stream_destroy(s2);
	npurt_stream_destroy(self->s);
	self->s = NULL;
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(end));
	EXPECT_EQ(NPURT_OK, npurt_event_elapsed_ns(start, end, &ns));
	npurt_event_destroy(start);
	npurt_event_destroy(end);
}

struct worker {
	npurt_device *dev;
	uint64_t addr;
	uint32_t *host;
	int id, ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	npurt_stream *s;
	int bad = 0;

	if (npurt_stream_create(w->dev, NPURT_PRIORITY_NORMAL, &s))
		return NULL;
	for (int i = 0; i < 300; i++) {
		if (npurt_memset_async(s, w->addr + 4096 * (i % 16), w->id * 1000 + i, 4096))
			bad++;
		if (i % 50 == 49 && npurt_stream_synchronize(s))
			bad++;
	}
	if (npurt_stream_synchronize(s))
		bad++;
	/* Each page holds its last write, from the last 16 iterations. */
	for (int p = 0; p < 16; p++)
		if (w->host[p * 1024] != (uint32_t)(w->id * 1000 + 299 - (299 - p) % 16))
			bad++;
	npurt_stream_destroy(s);
	w->ok = !bad;
	return NULL;
}

TEST_F(rt, threads_share_the_device_and_each_sees_its_own_work)
{
	struct worker w[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .dev = self->dev, .id = i + 1,
					.addr = npurt_mem_device_addr(self->a) + i * 64 * 1024,
					.host = (uint32_t *)npurt_mem_host_ptr(self->a) + i * 16 * 1024 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_main, &w[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_TRUE(w[i].ok) TH_LOG("thread %d", i);
	}
}

static void *default_of(void *dev)
{
	npurt_stream *s = NULL;

	return npurt_device_default_stream(dev, &s) ? NULL : s;
}

TEST_F(rt, the_default_stream_is_one_per_device_and_survives_destroy)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	uint32_t *ha = npurt_mem_host_ptr(self->a);
	npurt_stream *d, *again, *other;
	npurt_device *dev2;
	pthread_t t;
	void *from_thread;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_default_stream(NULL, &d));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_default_stream(self->dev, NULL));
	ASSERT_EQ(NPURT_OK, npurt_device_default_stream(self->dev, &d));
	ASSERT_EQ(NPURT_OK, npurt_device_default_stream(self->dev, &again));
	EXPECT_EQ(d, again);
	ASSERT_EQ(0, pthread_create(&t, NULL, default_of, self->dev));
	ASSERT_EQ(0, pthread_join(t, &from_thread));
	EXPECT_EQ(d, from_thread);
	/* Someone's destroy must not take it from the others. */
	npurt_stream_destroy(d);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(d, a, 0x5a5a5a5a, MiB));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(d)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0x5a5a5a5a, ha[MiB / 4 - 1]);
	/* Another device handle has its own. */
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev2));
	ASSERT_EQ(NPURT_OK, npurt_device_default_stream(dev2, &other));
	EXPECT_NE(d, other);
	npurt_device_close(dev2);
}

/*
 * Closing a device with streams, events and memory the caller left: the
 * streams' work completes first (registered host memory outlives the
 * device, so the result can be read after the close), and nothing of the
 * device is left behind (the fixture's teardown checks the driver's
 * io_uring commands, and the suite checks HBM goes back to its baseline).
 */
TEST_F(rt, closing_a_device_finishes_the_work_its_live_streams_hold)
{
	size_t n = 8 * MiB;
	uint32_t *host = aligned_alloc(4096, n);
	npurt_device *dev2;
	npurt_stream *s, *d;
	npurt_event *ev;
	npurt_mem *m, *reg;

	ASSERT_NE(NULL, host);
	memset(host, 0, n);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev2));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(dev2, NPURT_PRIORITY_NORMAL, &s));
	ASSERT_EQ(NPURT_OK, npurt_device_default_stream(dev2, &d));
	ASSERT_EQ(NPURT_OK, npurt_event_create(dev2, &ev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(dev2, n, &m));
	ASSERT_EQ(NPURT_OK, npurt_host_register(dev2, host, n, 0, &reg));
	/* Enough work that the close comes while it runs. */
	for (int i = 1; i <= 20; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(s, npurt_mem_device_addr(m), i, n));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, s));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(d, ev));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(d, npurt_mem_device_addr(reg),
					       npurt_mem_device_addr(m), n));
	npurt_device_close(dev2);
	EXPECT_EQ(20, host[0]);
	EXPECT_EQ(20, host[n / 4 - 1]);
	free(host);
}

/* One device's life with every kind of object left for the close. */
static int open_and_leave_all(void)
{
	npurt_device *d;
	npurt_stream *s;
	npurt_event *ev;
	npurt_notify *n;
	npurt_mem *m, *h;

	if (npurt_device_open(0, &d))
		return -1;
	if (npurt_stream_create(d, NPURT_PRIORITY_NORMAL, &s) || npurt_event_create(d, &ev) ||
	    npurt_notify_create(d, &n) || npurt_mem_alloc(d, 4096, &m) ||
	    npurt_host_alloc(d, 4096, &h) || npurt_event_record(ev, s)) {
		npurt_device_close(d);
		return -1;
	}
	npurt_device_close(d);
	return 0;
}

/*
 * The close frees what the caller left: its heap does not grow with
 * devices opened, used and closed with their objects alive (the main
 * arena's bytes in use, where this thread's allocations land).
 */
TEST_F(rt, closing_a_device_frees_the_objects_it_still_had)
{
	size_t before;

	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, open_and_leave_all()) TH_LOG("%s", npurt_last_error());
	before = mallinfo2().uordblks;
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(0, open_and_leave_all()) TH_LOG("%s", npurt_last_error());
	/*
	 * A leak of the handles left (an event, a notify, two npurt_mems)
	 * would be 250 bytes a round or more; the heap's own slack, about 30.
	 */
	EXPECT_GT(before + 50 * 128, mallinfo2().uordblks);
}

TEST(bad_submit_path_in_the_environment_is_refused)
{
	npurt_device *dev = (npurt_device *)0x1;

	setenv("NPURT_SUBMIT", "carrier-pigeon", 1);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_open(0, &dev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_SUBMIT=carrier-pigeon"));
	EXPECT_EQ((npurt_device *)0x1, dev);
	/* Unset, the library picks io_uring: the driver here takes it. */
	unsetenv("NPURT_SUBMIT");
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev));
	EXPECT_EQ(NPURT_SUBMIT_IO_URING, npurt_device_submit_path(dev));
	npurt_device_close(dev);
}

/* So is a bad wait policy; a good one is taken, and synchronizes. */
TEST(bad_wait_policy_in_the_environment_is_refused)
{
	npurt_device *dev = (npurt_device *)0x1;
	npurt_stream *s;
	npurt_mem *m;

	setenv("NPURT_WAIT", "yield", 1);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_open(0, &dev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_WAIT=yield"));
	EXPECT_EQ((npurt_device *)0x1, dev);
	setenv("NPURT_WAIT", "spin", 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev));
	unsetenv("NPURT_WAIT");
	ASSERT_EQ(NPURT_OK, npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(dev, 4096, &m));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, npurt_mem_device_addr(m), 5, 4096));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s));
	EXPECT_EQ(5, ((volatile uint32_t *)npurt_mem_host_ptr(m))[1023]);
	npurt_mem_free(m);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
}

TEST_HARNESS_MAIN
