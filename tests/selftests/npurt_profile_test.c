// SPDX-License-Identifier: MIT
/*
 * The profiler, end to end: npu-prof runs the two-stream overlap example
 * and its trace parses as trace-event JSON with copies on the copy
 * engines' tracks overlapping GEMMs on the AI-core groups', each batch
 * tied to its submit; a captured model run sunk names its ops; a stopped
 * profiler records nothing more; and the errors a user meets say what
 * is wrong.
 */
#include <limits.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"
#include "npu-prof/trace.h"

#define M 64

/* The name of the track event `e` lies on, or "". */
static const char *track(const struct trace *t, const struct trace_event *e)
{
	const char *name = trace_thread_name(t, e->pid, e->tid);

	return name ? name : "";
}

static bool on(const struct trace *t, const struct trace_event *e, const char *prefix)
{
	return e->ph == 'X' && !strncmp(track(t, e), prefix, strlen(prefix));
}

/*
 * The example's copies and GEMMs on two streams: in the trace, some copy
 * on a copy engine's track overlaps some GEMM on an AI-core group's
 * track; every device slice lies on a stream's track and on a unit's;
 * each submit's flow arrow lands on its stream.
 */
TEST(the_overlap_example_shows_copies_beside_launches)
{
	char prof[PATH_MAX], example[PATH_MAX], cmd[3 * PATH_MAX], out[16384], err[256];
	char file[] = "/tmp/npurt-profile-XXXXXX";
	size_t copies = 0, gemms = 0, on_streams = 0, on_units = 0, starts = 0, ends = 0;
	bool overlap = false, sync_span = false;
	struct trace t;
	int fd = mkstemp(file);

	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_NE(NULL, npu_built("bin", "npu-prof", prof, sizeof(prof)));
	ASSERT_NE(NULL, npu_built("examples", "overlap", example, sizeof(example)));
	snprintf(cmd, sizeof(cmd), "%s -s -o %s -- %s 2>&1", prof, file, example);
	ASSERT_EQ(0, npu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Device tasks")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  gemm\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  copy\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  npurt_stream_synchronize\n")) TH_LOG("%s", out);

	ASSERT_EQ(0, trace_read(file, &t, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(0, t.dropped);
	EXPECT_LT(0, t.records);
	for (size_t i = 0; i < t.n; i++) {
		const struct trace_event *e = &t.ev[i];

		if (e->ph == 'X' && e->pid == 1 && !strcmp(e->name, "npurt_stream_synchronize"))
			sync_span = true;
		starts += e->ph == 's';
		ends += e->ph == 'f';
		if (e->ph != 'X' || e->pid == 1)
			continue;
		EXPECT_TRUE(e->has_ts && e->has_dur && e->dur >= 0) TH_LOG("%s", e->name);
		on_streams += on(&t, e, "stream (queue ");
		on_units += on(&t, e, "copy engine ") || on(&t, e, "AI-core group ") ||
			    on(&t, e, "scheduler");
		if (on(&t, e, "copy engine ") && !strcmp(e->name, "copy"))
			copies++;
		if (!on(&t, e, "AI-core group ") || strcmp(e->name, "gemm"))
			continue;
		gemms++;
		EXPECT_STREQ("kernel", e->type);
		EXPECT_STREQ("npurt_launch", e->call);
		for (size_t k = 0; k < t.n && !overlap; k++) {
			const struct trace_event *c = &t.ev[k];

			overlap = on(&t, c, "copy engine ") && !strcmp(c->name, "copy") &&
				  c->ts < e->ts + e->dur && e->ts < c->ts + c->dur;
		}
	}
	/* Warm-up, one stream, two streams: 8 of each every time. */
	EXPECT_EQ(24, copies);
	EXPECT_EQ(24, gemms);
	EXPECT_EQ(on_streams, on_units);
	EXPECT_TRUE(overlap);
	EXPECT_TRUE(sync_span);
	EXPECT_LT(0, starts);
	EXPECT_EQ(starts, ends);
	for (size_t i = 0; i < t.n; i++) {
		const struct trace_event *f = &t.ev[i];
		bool found = false;

		if (f->ph != 'f')
			continue;
		EXPECT_EQ(0, strncmp(track(&t, f), "stream (queue ", 14));
		for (size_t k = 0; k < t.n && !found; k++)
			found = t.ev[k].ph == 's' && t.ev[k].id == f->id && t.ev[k].pid == 1 &&
				t.ev[k].ts <= f->ts + 1000.0;	/* the clocks' pair is that close */
		EXPECT_TRUE(found) TH_LOG("flow %lld", f->id);
	}
	trace_free(&t);

	/* --summary on its own reads the same file. */
	snprintf(cmd, sizeof(cmd), "%s --summary %s 2>&1", prof, file);
	ASSERT_EQ(0, npu_run(cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  gemm\n")) TH_LOG("%s", out);
	unlink(file);
}

static npurt_status launch(npurt_stream *s, const char *name, uint64_t a, uint64_t b,
			   uint64_t c, int dims)
{
	npurt_launch_desc d = { .size = sizeof(d), .alpha = 1.0f };
	uint64_t shape[2] = { M, M }, n = M * M;

	npurt_op_lookup(name, &d.op);
	if (dims == 2) {
		npurt_tensor_init(&d.in[0], a, NPURT_F32, 2, shape);
		npurt_tensor_init(&d.in[1], b, NPURT_F32, 2, shape);
		npurt_tensor_init(&d.out, c, NPURT_F32, 2, shape);
	} else {
		npurt_tensor_init(&d.in[0], a, NPURT_F32, 1, &n);
		npurt_tensor_init(&d.out, c, NPURT_F32, 1, &n);
	}
	return npurt_launch(s, &d);
}

/* A device profiling from its start, memory, a stream, and a file for the trace. */
FIXTURE(pt) {
	npurt_device *dev;
	npurt_stream *s;
	npurt_mem *buf;
	uint64_t va;
	char file[32];
	struct trace t;
};

FIXTURE_SETUP(pt)
{
	int fd;

	snprintf(self->file, sizeof(self->file), "/tmp/npurt-profile-XXXXXX");
	fd = mkstemp(self->file);
	ASSERT_LE(0, fd);
	close(fd);
	memset(&self->t, 0, sizeof(self->t));
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_profiler_start(self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4 * 4 * M * M, &self->buf));
	memset(npurt_mem_host_ptr(self->buf), 0, 4 * 4 * M * M);
	self->va = npurt_mem_device_addr(self->buf);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
}

FIXTURE_TEARDOWN(pt)
{
	trace_free(&self->t);
	npurt_stream_destroy(self->s);
	npurt_mem_free(self->buf);
	npurt_device_close(self->dev);
	unlink(self->file);
}

/* Write the profile and read it back into self->t: 0, or -1 (logged). */
static int write_and_read(struct __test_metadata *_metadata, FIXTURE_DATA(pt) *self)
{
	char err[256];

	if (npurt_profiler_write(self->dev, self->file)) {
		TH_LOG("%s", npurt_last_error());
		return -1;
	}
	if (trace_read(self->file, &self->t, err, sizeof(err))) {
		TH_LOG("%s", err);
		return -1;
	}
	return 0;
}

/*
 * A GEMM and a ReLU captured on self->s, run twice dispatched as `d`,
 * and the profile read back: 0, or -1 (logged).
 */
static int run_gemm_relu(struct __test_metadata *_metadata, FIXTURE_DATA(pt) *self,
			 npurt_dispatch d)
{
	uint64_t va = self->va;
	npurt_status st;
	npurt_model *m;

	st = npurt_stream_begin_capture(self->s);
	if (!st)
		st = launch(self->s, "gemm", va, va + 4 * M * M, va + 8 * M * M, 2);
	if (!st)
		st = launch(self->s, "relu", va + 8 * M * M, 0, va + 12 * M * M, 1);
	if (!st)
		st = npurt_stream_end_capture(self->s, &m);
	if (st) {
		TH_LOG("%s", npurt_last_error());
		return -1;
	}
	st = npurt_model_set_dispatch(m, d);
	for (int i = 0; i < 2 && !st; i++)
		st = npurt_model_execute(m, 10000);
	if (st)
		TH_LOG("%s", npurt_last_error());
	npurt_model_unload(m);
	return st ? -1 : write_and_read(_metadata, self);
}

/*
 * Each run's GEMM then ReLU on a stream's track, by name, queued by
 * npurt_model_execute: as tasks of a list (sunk) or on their own.
 */
static void expect_gemm_relu(struct __test_metadata *_metadata, const struct trace *t,
			     bool sunk)
{
	size_t gemm = 0, relu = 0;
	double last_gemm = -1;

	for (size_t i = 0; i < t->n; i++) {
		const struct trace_event *e = &t->ev[i];

		if (!on(t, e, "stream (queue ") || strcmp(e->type, "kernel"))
			continue;
		if (!strcmp(e->name, "gemm")) {
			gemm++;
			last_gemm = e->ts;
		} else {
			EXPECT_STREQ("relu", e->name);
			relu++;
			EXPECT_LE(last_gemm, e->ts);	/* each run's GEMM first */
		}
		EXPECT_STREQ("npurt_model_execute", e->call);
		EXPECT_EQ(sunk, e->list_task >= 0);
	}
	EXPECT_EQ(2, gemm);
	EXPECT_EQ(2, relu);
}

/* A captured model run sunk: its list's tasks, each named by its op. */
TEST_F(pt, a_sunk_model_names_its_ops)
{
	ASSERT_EQ(0, run_gemm_relu(_metadata, self, NPURT_DISPATCH_SINK));
	expect_gemm_relu(_metadata, &self->t, true);
}

/* The same model dispatched from the host: each op its own task, by name. */
TEST_F(pt, a_host_dispatched_model_names_its_ops)
{
	ASSERT_EQ(0, run_gemm_relu(_metadata, self, NPURT_DISPATCH_HOST));
	expect_gemm_relu(_metadata, &self->t, false);
}

/* Count the slices on stream tracks of type `type`, each named `name` by `call`. */
static size_t count(struct __test_metadata *_metadata, const struct trace *t, const char *type,
		    const char *name, const char *call)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct trace_event *e = &t->ev[i];

		if (!on(t, e, "stream (queue ") || strcmp(e->type, type))
			continue;
		n++;
		EXPECT_STREQ(name, e->name);
		EXPECT_STREQ(call, e->call);
	}
	return n;
}

/* Stopped, nothing more is recorded; started again, it is. */
TEST_F(pt, a_stopped_profiler_records_nothing_more)
{
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->va, i, 64));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	ASSERT_EQ(NPURT_OK, npurt_profiler_stop(self->dev));
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->va, i, 64));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	ASSERT_EQ(NPURT_OK, npurt_profiler_start(self->dev));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->va, 9, 64));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	ASSERT_EQ(0, write_and_read(_metadata, self));
	EXPECT_EQ(4, count(_metadata, &self->t, "fill", "fill", "npurt_memset_async"));
	EXPECT_EQ(4, self->t.records);
}

/*
 * A destroyed stream's queue id comes back with the next stream, and its
 * batches are numbered from 1 again: each record still goes with the
 * batch it ran in.
 */
TEST_F(pt, a_queue_id_used_again_keeps_its_records_apart)
{
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, self->va, i, 64));
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	}
	npurt_stream_destroy(self->s);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(NPURT_OK, launch(self->s, "relu", self->va, 0, self->va + 4 * M * M, 1))
			TH_LOG("%s", npurt_last_error());
		ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->s));
	}
	ASSERT_EQ(0, write_and_read(_metadata, self));
	EXPECT_EQ(3, count(_metadata, &self->t, "fill", "fill", "npurt_memset_async"));
	EXPECT_EQ(3, count(_metadata, &self->t, "kernel", "relu", "npurt_launch"));
}

/*
 * A CONTINUE stream whose queue faults gets a new queue, which numbers
 * from 1 again under the same id, and the work issued behind the fault
 * is issued again there: its records go with that work (fills), not with
 * the old queue's first batches (launches).
 */
TEST_F(pt, work_issued_again_after_a_fault_keeps_its_records)
{
	npurt_stream_desc d = { .size = sizeof(d), .flags = NPURT_STREAM_CONTINUE };
	npurt_stream *s, *gate;
	npurt_event *ev;
	npurt_mem *big;

	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4u << 20, &big));
	ASSERT_EQ(NPURT_OK, npurt_stream_create_desc(self->dev, &d, &s));
	/* Everything issued before the gate opens, the fault among it. */
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &gate));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &ev));
	for (int i = 0; i < 25; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(gate, npurt_mem_device_addr(big), i,
						       4u << 20));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, gate));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(s, ev));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(NPURT_OK, launch(s, "relu", self->va, 0, self->va + 4 * M * M, 1))
			TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, self->va + (1ull << 30), 7, 4096));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(s, self->va, i, 64));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(s));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, write_and_read(_metadata, self));
	EXPECT_EQ(3, count(_metadata, &self->t, "kernel", "relu", "npurt_launch"));
	/* The gate's 25 and the 3 behind the fault, all by their own call. */
	EXPECT_EQ(28, count(_metadata, &self->t, "fill", "fill", "npurt_memset_async"));
	npurt_event_destroy(ev);
	npurt_stream_destroy(gate);
	npurt_stream_destroy(s);
	npurt_mem_free(big);
}

/* What a user gets wrong is named, and nothing is left half made. */
TEST(mistakes_are_named)
{
	char prof[PATH_MAX], cmd[2 * PATH_MAX], out[4096];
	char file[] = "/tmp/npurt-profile-XXXXXX";
	npurt_device *dev;
	FILE *f;
	int fd = mkstemp(file);

	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_profiler_write(dev, file));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "never started")) TH_LOG("%s",
									 npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_profiler_stop(dev));	/* nothing to stop */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_profiler_start(NULL));
	ASSERT_EQ(NPURT_OK, npurt_profiler_start(dev));
	EXPECT_NE(NPURT_OK, npurt_profiler_write(dev, "/nonexistent/dir/trace.json"));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "/nonexistent/dir/trace.json"))
		TH_LOG("%s", npurt_last_error());
	npurt_device_close(dev);

	/* A ring size that is no power of two fails the open that asked for it. */
	setenv("NPURT_PROFILE", file, 1);
	setenv("NPURT_PROFILE_RECORDS", "1000", 1);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_open(0, &dev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_PROFILE_RECORDS=1000"))
		TH_LOG("%s", npurt_last_error());
	unsetenv("NPURT_PROFILE_RECORDS");
	unsetenv("NPURT_PROFILE");

	/* npu-prof: a file that is not JSON, a program that writes no profile. */
	ASSERT_NE(NULL, npu_built("bin", "npu-prof", prof, sizeof(prof)));
	f = fopen(file, "w");
	ASSERT_NE(NULL, f);
	fputs("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\"},]}", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s --summary %s 2>&1", prof, file);
	EXPECT_EQ(1, npu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "byte ")) TH_LOG("%s", out);
	unlink(file);
	snprintf(cmd, sizeof(cmd), "%s -o %s -- true 2>&1", prof, file);
	EXPECT_EQ(1, npu_run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "wrote no profile")) TH_LOG("%s", out);
	unlink(file);
}

TEST_HARNESS_MAIN
