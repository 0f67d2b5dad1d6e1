// SPDX-License-Identifier: MIT
/*
 * Stream capture through libnpurt on the device: calls issued between
 * begin and end run only when the model they became does, and then as
 * the calls would have (a GEMM, an activation, copies and fills, checked
 * against the host); a capture spanning two streams joined by events;
 * each call that cannot be captured fails with NPURT_ERR_CAPTURE and
 * leaves the capture and the stream usable; a captured model saved to a
 * file, loaded and run on other memory; captures that end with nothing,
 * or whose stream goes, leave nothing behind.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

/* Every buffer a multiple of 512 bytes: the allocator's size classes, so whole. */
enum { M = 8, K = 16, N = 16 };

static uint32_t op(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

FIXTURE(cap) {
	npurt_device *dev;
	npurt_stream *s, *t;
	npurt_mem *x, *w, *h, *y;	/* x[M x K] . w[K x N] = h, relu(h) = y */
	uint64_t hbm_before;
};

FIXTURE_SETUP(cap)
{
	/* The device's buffers before this test's handle took anything. */
	self->hbm_before = npu_hbm_buffers();
	ASSERT_NE(~0ull, self->hbm_before);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->t));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, M * K * 4, &self->x));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, K * N * 4, &self->w));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, M * N * 4, &self->h));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, M * N * 4, &self->y));
}

FIXTURE_TEARDOWN(cap)
{
	npurt_device_close(self->dev);
	/* Everything the test took is back once the device is closed. */
	EXPECT_EQ(self->hbm_before, npu_hbm_buffers_settle(self->hbm_before));
}

static float *f32(npurt_mem *m)
{
	return npurt_mem_host_ptr(m);
}

static void fill_inputs(FIXTURE_DATA(cap) *self, float scale)
{
	for (int i = 0; i < M * K; i++)
		f32(self->x)[i] = scale * (float)((i % 9) - 4);
	for (int i = 0; i < K * N; i++)
		f32(self->w)[i] = (float)((i % 5) - 2) * 0.25f;
}

/* relu(x . w), from the host copies */
static void reference(const float *x, const float *w, float *want)
{
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float a = 0;

			for (int k = 0; k < K; k++)
				a += x[i * K + k] * w[k * N + j];
			want[i * N + j] = a > 0 ? a : 0;
		}
}

static npurt_status gemm(npurt_stream *s, npurt_mem *a, npurt_mem *b, npurt_mem *out)
{
	npurt_launch_desc d = { .size = sizeof(d), .op = op("gemm"), .alpha = 1.0f };

	npurt_tensor_init(&d.in[0], npurt_mem_device_addr(a), NPURT_F32, 2, (uint64_t[]){ M, K });
	npurt_tensor_init(&d.in[1], npurt_mem_device_addr(b), NPURT_F32, 2, (uint64_t[]){ K, N });
	npurt_tensor_init(&d.out, npurt_mem_device_addr(out), NPURT_F32, 2, (uint64_t[]){ M, N });
	return npurt_launch(s, &d);
}

static npurt_status unary(npurt_stream *s, const char *name, npurt_mem *in, npurt_mem *out,
			  uint64_t n)
{
	npurt_launch_desc d = { .size = sizeof(d), .op = op(name) };

	npurt_tensor_init(&d.in[0], npurt_mem_device_addr(in), NPURT_F32, 1, &n);
	npurt_tensor_init(&d.out, npurt_mem_device_addr(out), NPURT_F32, 1, &n);
	return npurt_launch(s, &d);
}

static npurt_status binary(npurt_stream *s, const char *name, npurt_mem *a, npurt_mem *b,
			   npurt_mem *out, uint64_t n)
{
	npurt_launch_desc d = { .size = sizeof(d), .op = op(name) };

	npurt_tensor_init(&d.in[0], npurt_mem_device_addr(a), NPURT_F32, 1, &n);
	npurt_tensor_init(&d.in[1], npurt_mem_device_addr(b), NPURT_F32, 1, &n);
	npurt_tensor_init(&d.out, npurt_mem_device_addr(out), NPURT_F32, 1, &n);
	return npurt_launch(s, &d);
}

static int mismatches(const float *got, const float *want, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		bad += fabsf(got[i] - want[i]) > 1e-4f * (1 + fabsf(want[i]));
	return bad;
}

/*
 * A GEMM and a ReLU captured: nothing runs at capture time; each execute
 * then computes from what the inputs hold at that run, in place.
 */
TEST_F(cap, captured_calls_run_when_the_model_does)
{
	float want[M * N];
	npurt_model_info info = { .size = sizeof(info) };
	npurt_io_info io = { .size = sizeof(io) };
	npurt_model *m = NULL;
	bool capturing = true;

	fill_inputs(self, 1.0f);
	memset(f32(self->y), 0x7f, M * N * 4);
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->s, &capturing));
	EXPECT_TRUE(capturing);
	ASSERT_EQ(NPURT_OK, gemm(self->s, self->x, self->w, self->h)) TH_LOG("%s",
									     npurt_last_error());
	ASSERT_EQ(NPURT_OK, unary(self->s, "relu", self->h, self->y, M * N))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_end_capture(self->s, &m)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->s, &capturing));
	EXPECT_FALSE(capturing);
	/* Nothing ran: y is as it was. */
	usleep(100 * 1000);
	EXPECT_EQ(0x7f7f7f7fu, ((uint32_t *)f32(self->y))[0]);

	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m, &info));
	EXPECT_EQ(2, info.inputs);	/* x, w */
	EXPECT_EQ(2, info.outputs);	/* h, y */
	EXPECT_EQ(2, info.ops);
	EXPECT_TRUE(info.sunk);
	ASSERT_EQ(NPURT_OK, npurt_model_io(m, 3, &io));
	EXPECT_TRUE(io.output);
	EXPECT_STREQ("output1", io.name);
	EXPECT_EQ(M * N * 4, io.bytes);

	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 10000)) TH_LOG("%s", npurt_last_error());
	reference(f32(self->x), f32(self->w), want);
	EXPECT_EQ(0, mismatches(f32(self->y), want, M * N));
	/* New inputs in the same memory: the next run sees them. */
	fill_inputs(self, -2.0f);
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 10000)) TH_LOG("%s", npurt_last_error());
	reference(f32(self->x), f32(self->w), want);
	EXPECT_EQ(0, mismatches(f32(self->y), want, M * N));
	/* The stream is an ordinary one again. */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, npurt_mem_device_addr(self->y), 0, 4));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0.0f, f32(self->y)[0]);
	npurt_model_unload(m);
}

/*
 * Work before the capture runs as issued; copies, fills and 2-D copies
 * are captured; a run on a user's stream is ordered with its other work.
 */
TEST_F(cap, copies_and_fills_are_captured_and_runs_order_with_a_stream)
{
	enum { R = 4, C = 6 };	/* rows of C floats, pitch K floats */
	float *x = f32(self->x), *h = f32(self->h), *y = f32(self->y);
	npurt_model *m = NULL;

	memset(h, 0, M * N * 4);
	for (int i = 0; i < M * K; i++)
		x[i] = (float)i;
	/* Issued before: runs, though the stream captures right after. */
	ASSERT_EQ(NPURT_OK, npurt_fill_d32_async(self->s, y, 0x3f800000u, M * N));
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->s));
	ASSERT_EQ(NPURT_OK, npurt_copy_2d_async(self->s, h, C * 4, x, K * 4, C * 4, R))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_fill_d16_async(self->s, y + 4, 0x4000, 4))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, npurt_mem_device_addr(self->y) + 32,
					       npurt_mem_device_addr(self->x) + 4, 8));
	ASSERT_EQ(NPURT_OK, npurt_stream_end_capture(self->s, &m)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < 200 && y[0] != 1.0f; i++)
		usleep(10 * 1000);
	EXPECT_EQ(1.0f, y[0]);		/* the work before the capture ran */
	EXPECT_EQ(1.0f, y[4]);		/* the captured fill did not */
	EXPECT_EQ(0.0f, h[0 * C + 1]);

	/* On the stream: a fill of y before the run, a copy after it. */
	ASSERT_EQ(NPURT_OK, npurt_fill_d32_async(self->t, y, 0, M * N));
	ASSERT_EQ(NPURT_OK, npurt_model_execute_async(m, self->t)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->t, npurt_mem_device_addr(self->x),
					       npurt_mem_device_addr(self->y) + 16, 16));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->t)) TH_LOG("%s", npurt_last_error());
	for (int r = 0; r < R; r++) {
		for (int c = 0; c < C; c++) {
			ASSERT_EQ((float)(r * K + c), h[r * C + c]) TH_LOG("row %d col %d", r, c);
		}
	}
	EXPECT_EQ(0.0f, y[0]);		/* the stream's fill, before the run */
	EXPECT_EQ(0x40004000u, ((uint32_t *)y)[4]);	/* the 16-bit fill */
	EXPECT_EQ(0x40004000u, ((uint32_t *)y)[5]);
	EXPECT_EQ(0.0f, y[6]);
	EXPECT_EQ(1.0f, y[8]);		/* x[1], x[2] */
	EXPECT_EQ(2.0f, y[9]);
	/* The copy after the run saw what the run wrote. */
	EXPECT_EQ(0x40004000u, ((uint32_t *)x)[0]);
	EXPECT_EQ(0.0f, x[2]);
	npurt_model_unload(m);
}

/*
 * Two streams joined by events: stream t joins by waiting for an event
 * recorded in the capture, computes on its own, and s waits for it back.
 */
TEST_F(cap, a_capture_spans_streams_joined_by_events)
{
	float *x = f32(self->x), *h = f32(self->h), *y = f32(self->y);
	npurt_model_info info = { .size = sizeof(info) };
	npurt_event *e1, *e2;
	npurt_model *m = NULL;
	bool capturing = false;
	uint64_t n = M * N;

	for (int i = 0; i < M * K; i++)
		x[i] = (float)(i % 11) - 5.0f;
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &e1));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &e2));
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->s));
	/* s: h = x (its first M * N floats); t: y = relu(h); s: h = y + y */
	ASSERT_EQ(NPURT_OK, npurt_copy_async(self->s, h, x, n * 4)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_event_record(e1, self->s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->t, e1)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->t, &capturing));
	EXPECT_TRUE(capturing);
	ASSERT_EQ(NPURT_OK, unary(self->t, "relu", self->h, self->y, n)) TH_LOG("%s",
										npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_event_record(e2, self->t));
	/* The event is a point of the capture: no host waits on it. */
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_event_synchronize(e2));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_event_query(e2));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->s, e2));
	ASSERT_EQ(NPURT_OK, binary(self->s, "add", self->y, self->y, self->h, n))
		TH_LOG("%s", npurt_last_error());
	/* Only the stream that began it ends it. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_end_capture(self->t, &m));
	ASSERT_EQ(NPURT_OK, npurt_stream_end_capture(self->s, &m)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->t, &capturing));
	EXPECT_FALSE(capturing);
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m, &info));
	EXPECT_EQ(2, info.streams);
	EXPECT_EQ(1, info.inputs);	/* x */
	EXPECT_EQ(2, info.outputs);	/* h, y */
	/* Waiting for an event of an ended capture says so. */
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_wait_event(self->t, e2));
	for (int run = 0; run < 3; run++) {
		for (int i = 0; i < M * K; i++)
			x[i] = (float)((i + run) % 11) - 5.0f;
		ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 10000)) TH_LOG("%s", npurt_last_error());
		for (uint64_t i = 0; i < n; i++) {
			float r = x[i] > 0 ? x[i] : 0;

			ASSERT_EQ(r, y[i]) TH_LOG("run %d y[%llu]", run, (unsigned long long)i);
			ASSERT_EQ(2 * r, h[i]) TH_LOG("run %d h[%llu]", run, (unsigned long long)i);
		}
	}
	/* A real record replaces the captured one. */
	ASSERT_EQ(NPURT_OK, npurt_event_record(e2, self->t));
	ASSERT_EQ(NPURT_OK, npurt_event_synchronize(e2)) TH_LOG("%s", npurt_last_error());
	npurt_model_unload(m);
	npurt_event_destroy(e1);
	npurt_event_destroy(e2);
}

static void cb(npurt_stream *s, npurt_status st, void *user)
{
	(void)s;
	(void)st;
	(void)user;
}

/*
 * Every call that cannot be replayed fails with NPURT_ERR_CAPTURE (or
 * says what a capture cannot express), records nothing, and the capture
 * goes on: the model has the one launch that was good.
 */
TEST_F(cap, uncapturable_calls_fail_and_the_capture_goes_on)
{
	static char pageable[256];
	npurt_model_info info = { .size = sizeof(info) };
	npurt_event *outside, *ev;
	npurt_notify *nt;
	npurt_mem *async = NULL;
	npurt_model *m = NULL, *other;
	npurt_launch_desc bad = { .size = sizeof(bad), .op = op("add") };
	float *y = f32(self->y);
	uint64_t n = M * N;
	struct mlp_file { void *data; size_t len; } mf = { 0 };
	npurt_graph *g;
	uint32_t a, b;
	npurt_graph_node nd = { .size = sizeof(nd), .op = op("relu") };

	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &outside));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &nt));
	ASSERT_EQ(NPURT_OK, npurt_event_record(outside, self->t));
	/* A model to try running inside the capture. */
	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "a", NPURT_F32, 1, (uint64_t[]){ 4 }, &a));
	nd.in[0] = a;
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &nd, &b));
	ASSERT_EQ(NPURT_OK, npurt_graph_output(g, b, "b"));
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &mf.data, &mf.len, NULL));
	npurt_graph_destroy(g);
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, mf.data, mf.len, NULL, &other));
	free(mf.data);

	for (uint64_t i = 0; i < n; i++)
		f32(self->h)[i] = (float)i - 20.0f;
	memset(y, 0, n * 4);
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->s));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_begin_capture(self->s));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_synchronize(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "captures")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_synchronize_timeout(self->s, 0));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_query(self->s));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_device_synchronize(self->dev));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_copy_async(self->s, y, pageable, 64));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_copy_async(self->s, pageable, y, 64));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_copy(self->s, y, f32(self->h), 64));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_add_callback(self->s, cb, NULL));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_notify_record(nt, self->s));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_wait_notify(self->s, nt));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_mem_alloc_async(self->s, 4096, 0, &async));
	EXPECT_EQ(NULL, async);
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_mem_free_async(self->x, self->s));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_wait_event(self->s, outside));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_model_execute_async(other, self->s));
	/* What a capture cannot express, and ops the model's rules refuse. */
	EXPECT_EQ(NPURT_ERR_UNSUPPORTED, npurt_copy_async(self->s, y, f32(self->h), 3));
	EXPECT_EQ(NPURT_ERR_UNSUPPORTED, npurt_fill_d8_async(self->s, (char *)y + 1, 7, 8));
	npurt_tensor_init(&bad.in[0], npurt_mem_device_addr(self->h), NPURT_F32, 1, &n);
	npurt_tensor_init(&bad.in[1], npurt_mem_device_addr(self->h), NPURT_F32, 1,
			  (uint64_t[]){ n - 1 });
	npurt_tensor_init(&bad.out, npurt_mem_device_addr(self->y), NPURT_F32, 1, &n);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &bad));
	npurt_tensor_init(&bad.in[1], npurt_mem_device_addr(self->h) + 8, NPURT_F32, 1, &n);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch(self->s, &bad));	/* past h's end */
	/* A good one, an event, and the captured event's host calls. */
	ASSERT_EQ(NPURT_OK, unary(self->s, "relu", self->h, self->y, n)) TH_LOG("%s",
										npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->s));
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_event_synchronize_timeout(ev, 0));
	/* Other streams are not capturing: they work. */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->t, npurt_mem_device_addr(self->x), 0, 64));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->t));
	ASSERT_EQ(NPURT_OK, npurt_stream_end_capture(self->s, &m)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m, &info));
	EXPECT_EQ(1, info.ops);
	EXPECT_EQ(1, info.inputs);
	EXPECT_EQ(1, info.outputs);
	EXPECT_EQ(0.0f, y[n - 1]);
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 10000)) TH_LOG("%s", npurt_last_error());
	for (uint64_t i = 0; i < n; i++) {
		ASSERT_EQ(i > 20 ? (float)i - 20.0f : 0.0f, y[i]) TH_LOG("y[%llu]",
									 (unsigned long long)i);
	}
	/* The stream is usable, and synchronizes again. */
	ASSERT_EQ(NPURT_OK, npurt_copy(self->s, pageable, y, 64)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0, memcmp(pageable, y, 64));
	ASSERT_EQ(NPURT_OK, npurt_device_synchronize(self->dev));
	npurt_model_unload(m);
	npurt_model_unload(other);
	npurt_notify_destroy(nt);
	npurt_event_destroy(outside);
	npurt_event_destroy(ev);
}

/* Saved to a file, the captured model loads and runs on other memory. */
TEST_F(cap, a_captured_model_is_saved_and_loaded_again)
{
	char path[] = "/tmp/npurt-capture-XXXXXX";
	float want[M * N], *x2, *w2, *y2, *h2;
	npurt_mem *mx, *mw, *mh, *my;
	npurt_model *m = NULL, *again = NULL;
	npurt_model_info info = { .size = sizeof(info) };
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	close(fd);
	fill_inputs(self, 0.5f);
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->s));
	ASSERT_EQ(NPURT_OK, gemm(self->s, self->x, self->w, self->h));
	ASSERT_EQ(NPURT_OK, unary(self->s, "relu", self->h, self->y, M * N));
	ASSERT_EQ(NPURT_OK, npurt_stream_end_capture(self->s, &m)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_save(m, path)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_save(m, NULL));
	EXPECT_NE(NPURT_OK, npurt_model_save(m, "/nonexistent/dir/model.npu"));
	npurt_model_unload(m);

	ASSERT_EQ(NPURT_OK, npurt_model_load(self->dev, path, NULL, &again))
		TH_LOG("%s", npurt_last_error());
	unlink(path);
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(again, &info));
	EXPECT_EQ(2, info.inputs);
	EXPECT_EQ(2, info.outputs);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, M * K * 4, &mx));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, K * N * 4, &mw));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, M * N * 4, &mh));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, M * N * 4, &my));
	x2 = f32(mx), w2 = f32(mw), h2 = f32(mh), y2 = f32(my);
	for (int i = 0; i < M * K; i++)
		x2[i] = (float)((i * 7) % 13) - 6.0f;
	memcpy(w2, f32(self->w), K * N * 4);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(again, 0, x2, M * K * 4));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(again, 1, w2, K * N * 4));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(again, 2, h2, M * N * 4));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(again, 3, y2, M * N * 4));
	memset(f32(self->y), 0, M * N * 4);
	ASSERT_EQ(NPURT_OK, npurt_model_execute(again, 10000)) TH_LOG("%s", npurt_last_error());
	reference(x2, w2, want);
	EXPECT_EQ(0, mismatches(y2, want, M * N));
	EXPECT_EQ(0.0f, f32(self->y)[0]);	/* not the captured memory */
	npurt_model_unload(again);
	npurt_mem_free(mx);
	npurt_mem_free(mw);
	npurt_mem_free(mh);
	npurt_mem_free(my);
}

/*
 * Captures that end with nothing, and one whose stream is destroyed,
 * leave no model, no device memory and no capturing stream behind.
 */
TEST_F(cap, empty_and_abandoned_captures_leave_nothing)
{
	npurt_model *m = (npurt_model *)&m;
	npurt_stream *gone;
	npurt_event *ev;
	bool capturing = true;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_end_capture(self->s, &m));	/* not capturing */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_begin_capture(NULL));
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->s));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_end_capture(self->s, NULL));
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->s, &capturing));
	EXPECT_TRUE(capturing);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_end_capture(self->s, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "nothing was captured"))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->s, &capturing));
	EXPECT_FALSE(capturing);

	/* A stream destroyed mid-capture: its capture goes with it. */
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &gone));
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(gone));
	ASSERT_EQ(NPURT_OK, unary(gone, "relu", self->h, self->y, M * N));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, gone));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->t, ev));	/* t joins */
	npurt_stream_destroy(gone);
	ASSERT_EQ(NPURT_OK, npurt_stream_is_capturing(self->t, &capturing));
	EXPECT_FALSE(capturing);
	EXPECT_EQ(NPURT_ERR_CAPTURE, npurt_stream_wait_event(self->s, ev));
	ASSERT_EQ(NPURT_OK, npurt_device_synchronize(self->dev)) TH_LOG("%s", npurt_last_error());
	npurt_event_destroy(ev);

	/* A capture left open when the device closes is dropped with it (teardown checks). */
	ASSERT_EQ(NPURT_OK, npurt_stream_begin_capture(self->t));
	ASSERT_EQ(NPURT_OK, unary(self->t, "relu", self->h, self->y, M * N));
}

TEST_HARNESS_MAIN
