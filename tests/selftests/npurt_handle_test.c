// SPDX-License-Identifier: MIT
/*
 * The mistakes a newcomer makes with handles, against the real device,
 * the whole library built with ASan and UBSan: memory freed twice (of the
 * cache, NPURT_MEM_NO_CACHE, pinned), used after its free or its device's
 * close; a stream destroyed and then used, or destroyed twice; events and
 * notifies likewise; one kind of handle passed for another; a device
 * closed twice; a model run by another caller while a run loop serves
 * it, or used once unloaded, and a loop once stopped. Each is refused with NPURT_ERR_INVALID and a message that
 * names the call and the handle, and nothing is read that was freed (ASan
 * would stop the test).
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define EXPECT_REFUSED(call, words)							\
	do {										\
		EXPECT_EQ(NPURT_ERR_INVALID, (call));					\
		EXPECT_NE(NULL, strstr(npurt_last_error(), words))			\
			TH_LOG("%s: %s", #call, npurt_last_error());			\
	} while (0)

FIXTURE(h) {
	npurt_device *dev;
	uint64_t hbm_before;
};

FIXTURE_SETUP(h)
{
	self->hbm_before = npu_hbm_buffers();
	ASSERT_NE(~0ull, self->hbm_before);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
}

FIXTURE_TEARDOWN(h)
{
	npurt_device_close(self->dev);
	EXPECT_EQ(self->hbm_before, npu_hbm_buffers_settle(self->hbm_before));
}

/* Freed twice, or used once freed: refused, of every kind of memory. */
TEST_F(h, memory_freed_twice_or_used_after_is_refused)
{
	static const uint32_t flags[] = { 0, NPURT_MEM_NO_CACHE, NPURT_MEM_SHAREABLE };
	npurt_mem *m;
	int fd;

	for (unsigned int i = 0; i <= 3; i++) {
		npurt_status st = i < 3 ? npurt_mem_alloc_flags(self->dev, 1 << 20, flags[i], &m) :
				  npurt_host_alloc(self->dev, 1 << 20, &m);

		ASSERT_EQ(NPURT_OK, st) TH_LOG("%u: %s", i, npurt_last_error());
		EXPECT_EQ(NPURT_OK, npurt_mem_release(m)) TH_LOG("%u", i);
		EXPECT_REFUSED(npurt_mem_release(m), "npurt_mem_release: ");
		EXPECT_NE(NULL, strstr(npurt_last_error(), "is no live npurt_mem"));
		npurt_mem_free(m);
		EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_free: "));
		EXPECT_EQ(NULL, npurt_mem_host_ptr(m));
		EXPECT_EQ(0u, npurt_mem_device_addr(m));
		EXPECT_EQ(0u, npurt_mem_size(m));
		EXPECT_REFUSED(npurt_mem_export(m, &fd), "npurt_mem_export: ");
	}
	/* NULL stays a no-op, as free(NULL) is. */
	EXPECT_EQ(NPURT_OK, npurt_mem_release(NULL));
	npurt_mem_free(NULL);
}

/* The device's close frees what was left; the handles are dead after it. */
TEST_F(h, memory_and_streams_left_at_close_are_dead_after_it)
{
	npurt_device *dev;
	npurt_stream *s;
	npurt_event *ev;
	npurt_mem *m;

	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(dev, 4096, &m));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s));
	ASSERT_EQ(NPURT_OK, npurt_event_create(dev, &ev));
	npurt_device_close(dev);
	EXPECT_REFUSED(npurt_mem_release(m), "its device closed");
	EXPECT_REFUSED(npurt_memset_async(s, 0, 0, 4), "npurt_memset_async: ");
	EXPECT_REFUSED(npurt_event_query(ev), "npurt_event_query: ");
	EXPECT_REFUSED(npurt_mem_alloc(dev, 4096, &m), "is no live npurt_device");
	/* Closed twice: said, nothing read. */
	npurt_device_close(dev);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_device_close: ")) TH_LOG("%s",
										npurt_last_error());
}

/*
 * A destroyed stream takes no work (before, a memset on one returned
 * NPURT_OK and the failure showed at the next synchronize); destroyed
 * twice, the second is said and does nothing.
 */
TEST_F(h, a_destroyed_stream_takes_no_work)
{
	npurt_stream *s, *live;
	npurt_mem *m;
	npurt_error rec;

	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4096, &m));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &live));
	npurt_stream_destroy(s);
	EXPECT_REFUSED(npurt_memset_async(s, npurt_mem_device_addr(m), 7, 4096),
		       "no live npurt_stream");
	EXPECT_REFUSED(npurt_stream_synchronize(s), "npurt_stream_synchronize: ");
	EXPECT_REFUSED(npurt_stream_query(s), "npurt_stream_query: ");
	EXPECT_REFUSED(npurt_stream_abort(s), "npurt_stream_abort: ");
	EXPECT_REFUSED(npurt_stream_error_peek(s, &rec), "npurt_stream_error_peek: ");
	EXPECT_REFUSED(npurt_copy_async(s, npurt_mem_host_ptr(m), npurt_mem_host_ptr(m), 64),
		       "npurt_copy_async: ");
	EXPECT_REFUSED(npurt_mem_free_async(m, s), "npurt_mem_free_async: ");
	npurt_stream_destroy(s);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_stream_destroy: "));
	/* The memory was not freed by the refused free, and the live stream works. */
	EXPECT_EQ(NPURT_OK, npurt_memset_async(live, npurt_mem_device_addr(m), 7, 4096));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(live));
	EXPECT_EQ(7u, *(uint32_t *)npurt_mem_host_ptr(m));
	npurt_stream_destroy(live);
	npurt_mem_free(m);
}

/* Events and notifies: used destroyed, destroyed twice, or one for the other. */
TEST_F(h, events_and_notifies_destroyed_or_mistaken_are_refused)
{
	npurt_event *ev, *e2;
	npurt_notify *n;
	npurt_stream *s;
	int64_t ns;

	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &s));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &e2));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &n));
	EXPECT_REFUSED(npurt_event_record((npurt_event *)n, s), "is an npurt_notify, not an npurt_event");
	EXPECT_REFUSED(npurt_event_record(ev, (npurt_stream *)ev), "is an npurt_event, not an npurt_stream");
	EXPECT_REFUSED(npurt_memset_async((npurt_stream *)self->dev, 0, 0, 4),
		       "is an npurt_device, not an npurt_stream");
	npurt_event_destroy(ev);
	EXPECT_REFUSED(npurt_event_record(ev, s), "npurt_event_record: ");
	EXPECT_REFUSED(npurt_event_synchronize(ev), "npurt_event_synchronize");
	EXPECT_REFUSED(npurt_event_elapsed_ns(ev, e2, &ns), "npurt_event_elapsed_ns: ");
	npurt_event_destroy(ev);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_event_destroy: "));
	npurt_notify_destroy(n);
	EXPECT_REFUSED(npurt_notify_record(n, s), "npurt_notify_record: ");
	EXPECT_REFUSED(npurt_stream_wait_notify(s, n), "npurt_stream_wait_notify: ");
	npurt_notify_destroy(n);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_notify_destroy: "));
	/* What is live still works. */
	EXPECT_EQ(NPURT_OK, npurt_event_record(e2, s));
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(e2));
	npurt_event_destroy(e2);
	npurt_stream_destroy(s);
}

static void served(void *user, uint64_t tag, npurt_status status, void *const *outputs)
{
	float *y = user;

	if (!status)
		*y = *(const float *)outputs[0];
}

/*
 * A model a run loop serves is the loop's: running or binding it from
 * elsewhere is refused (it returned NPURT_OK and raced the loop's own
 * bindings), and so is a second loop; once stopped, it is the caller's.
 */
TEST_F(h, a_model_a_run_loop_serves_is_the_loops)
{
	npurt_runloop_desc d = { .size = sizeof(d), .depth = 2, .done = served };
	npurt_graph_node n = { .size = sizeof(n) };
	npurt_plan_info info = { .size = sizeof(info) };
	float x[4] = { -1, 2, -3, 4 }, y[4], first = -7;
	const void *in[1] = { x };
	npurt_runloop *loop, *second;
	npurt_model *m;
	npurt_graph *g;
	uint32_t t;
	size_t len;
	void *file;

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 1, (uint64_t[]){ 4 }, &t));
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("relu", &n.op));
	n.in[0] = t;
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &t));
	ASSERT_EQ(NPURT_OK, npurt_graph_output(g, t, "y"));
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &file, &len, &info));
	npurt_graph_destroy(g);
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, file, len, NULL, &m));
	free(file);

	/* Bound before the loop: the loop binds its own, and gives these back at stop. */
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, y, sizeof(y)));
	d.user = &first;
	ASSERT_EQ(NPURT_OK, npurt_runloop_start(m, &d, &loop)) TH_LOG("%s", npurt_last_error());
	EXPECT_REFUSED(npurt_model_execute(m, -1), "a run loop serves this model");
	EXPECT_REFUSED(npurt_model_bind(m, 0, x, sizeof(x)), "npurt_model_bind: ");
	EXPECT_REFUSED(npurt_runloop_start(m, &d, &second), "serves this model already");
	EXPECT_EQ(NPURT_OK, npurt_runloop_push(loop, in, 1));
	npurt_runloop_stop(loop);
	EXPECT_EQ(0.0f, first);		/* relu(-1), through the loop */

	/* The caller's again, bound to its own buffers: never the loop's, freed. */
	y[3] = -1;
	EXPECT_EQ(NPURT_OK, npurt_model_execute(m, -1)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(4.0f, y[3]);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x)));
	npurt_model_unload(m);

	/* Unloaded, and stopped: dead handles, said so. */
	EXPECT_REFUSED(npurt_model_execute(m, -1), "is no live npurt_model");
	npurt_model_unload(m);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_model_unload: "));
	EXPECT_REFUSED(npurt_runloop_push(loop, in, 2), "is no live npurt_runloop");
	npurt_runloop_stop(loop);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_runloop_stop: "));
}

TEST_HARNESS_MAIN
