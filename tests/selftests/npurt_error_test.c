// SPDX-License-Identifier: MIT
/*
 * libnpurt failures as records, on both submission paths: a device
 * failure names its stream, operation, op and address per stream and per
 * thread; the exception callback gets it once; NPURT_STREAM_CONTINUE
 * streams run what was issued after a failure; a thread that exits leaves
 * its streams' work running; messages quoting earlier ones stay whole.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1u << 20)
#define HOLE (DRM_NPU_VA_END - MiB)	/* mapped by nothing */

FIXTURE(err) {
	npurt_device *dev;
	npurt_mem *a, *b;
	npurt_stream *s;
};

FIXTURE_VARIANT(err) {
	const char *env;
	npurt_submit_path path;
};

FIXTURE_VARIANT_ADD(err, ioctl) { .env = "ioctl", .path = NPURT_SUBMIT_IOCTL };
FIXTURE_VARIANT_ADD(err, io_uring) { .env = "io_uring", .path = NPURT_SUBMIT_IO_URING };

FIXTURE_SETUP(err)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	/* The device's own refusals are what this file records: launches reach it unchecked. */
	setenv("NPURT_LAUNCH_CHECK", "device", 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	unsetenv("NPURT_LAUNCH_CHECK");
	ASSERT_EQ(variant->path, npurt_device_submit_path(self->dev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4 * MiB, &self->a));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 4 * MiB, &self->b));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->s));
}

FIXTURE_TEARDOWN(err)
{
	npurt_stream_destroy(self->s);
	npurt_mem_free(self->a);
	npurt_mem_free(self->b);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "io_uring commands: "));
}

/* Hold `s` back on the device behind a gate stream's 100 MB of fills. */
static void hold_behind_gate(struct __test_metadata *_metadata, FIXTURE_DATA(err) *self,
			     npurt_stream *s, npurt_stream **gate, npurt_event **ev)
{
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, gate));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, ev));
	for (int i = 0; i < 25; i++)
		ASSERT_EQ(NPURT_OK, npurt_memset_async(*gate, npurt_mem_device_addr(self->b), i,
						       4 * MiB));
	ASSERT_EQ(NPURT_OK, npurt_event_record(*ev, *gate));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(s, *ev));
}

TEST_F(err, a_fault_is_recorded_per_stream_and_per_thread)
{
	uint64_t a = npurt_mem_device_addr(self->a);
	npurt_error r = { .size = sizeof(r) }, t = { .size = sizeof(t) };

	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 1, 4096));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->s, a + 8192, a, 4096));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, HOLE + 64, 2, 4096));
	ASSERT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "operation 3")) TH_LOG("%s", npurt_last_error());

	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(self->s, &r));
	EXPECT_EQ(NPURT_ERR_DEVICE, r.status);
	EXPECT_STREQ("npurt_memset_async", r.call);
	EXPECT_EQ(self->s, r.stream);
	EXPECT_EQ(3, r.op_index);
	EXPECT_EQ(DRM_NPU_TASK_FILL, r.task_type);
	EXPECT_EQ(0, r.op);
	EXPECT_EQ(DRM_NPU_JOB_FAULT, r.device_status);
	EXPECT_EQ(EIO, r.error);
	EXPECT_LE(HOLE + 64, r.fault_address);
	EXPECT_GT(HOLE + 64 + 4096, r.fault_address);
	EXPECT_EQ(1, r.fault_write);
	EXPECT_EQ(NULL, r.reason);

	/* The thread's record is the same failure, and peeking keeps both. */
	ASSERT_EQ(NPURT_OK, npurt_error_peek(&t));
	EXPECT_EQ(NPURT_ERR_DEVICE, t.status);
	EXPECT_EQ(self->s, t.stream);
	EXPECT_EQ(3, t.op_index);
	EXPECT_EQ(r.fault_address, t.fault_address);
	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	ASSERT_EQ(NPURT_OK, npurt_error_peek(&t));
	EXPECT_EQ(3, t.op_index);
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(self->s, &r));
	EXPECT_EQ(3, r.op_index);

	/* Clearing forgets; a stopped stream stays failed. */
	EXPECT_EQ(NPURT_OK, npurt_stream_error_clear(self->s));
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(self->s, &r));
	EXPECT_EQ(NPURT_OK, r.status);
	EXPECT_EQ(0, r.op_index);
	npurt_error_clear();
	EXPECT_STREQ("", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_error_peek(&t));
	EXPECT_EQ(NPURT_OK, t.status);
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_memset_async(self->s, a, 1, 4096));
	ASSERT_EQ(NPURT_OK, npurt_error_peek(&t));
	EXPECT_EQ(NPURT_ERR_DEVICE, t.status);
	EXPECT_STREQ("npurt_memset_async", t.call);
}

TEST_F(err, bad_peeks_are_refused_and_keep_the_record)
{
	npurt_error r = { .size = sizeof(r) };

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_memset_async(self->s, 1, 0, 4));
	r.size = 8;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_error_peek(&r));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_error_peek(NULL));
	r.size = sizeof(r);
	ASSERT_EQ(NPURT_OK, npurt_error_peek(&r));
	EXPECT_EQ(NPURT_ERR_INVALID, r.status);
	EXPECT_STREQ("npurt_memset_async", r.call);
	EXPECT_EQ(NULL, r.stream);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_error_peek(NULL, &r));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_error_peek(self->s, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_error_clear(NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_set_exception_callback(NULL, NULL, NULL));
}

TEST_F(err, a_refused_launch_names_its_op)
{
	uint64_t a = npurt_mem_device_addr(self->a), n = 16, m = 17;
	npurt_launch_desc d = { .size = sizeof(d) };
	npurt_error r = { .size = sizeof(r) };
	uint32_t add;

	ASSERT_EQ(NPURT_OK, npurt_op_lookup("add", &add));
	d.op = add;
	npurt_tensor_init(&d.in[0], a, NPURT_F32, 1, &n);
	npurt_tensor_init(&d.in[1], a + 4096, NPURT_F32, 1, &m);	/* shapes disagree */
	npurt_tensor_init(&d.out, a + 8192, NPURT_F32, 1, &n);
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, a, 0, 4096));
	ASSERT_EQ(NPURT_OK, npurt_launch(self->s, &d));
	ASSERT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_launch add")) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(self->s, &r));
	EXPECT_STREQ("npurt_launch", r.call);
	EXPECT_EQ(2, r.op_index);
	EXPECT_EQ(DRM_NPU_TASK_KERNEL, r.task_type);
	EXPECT_EQ(add, r.op);
	EXPECT_EQ(DRM_NPU_JOB_KERNEL_ERROR, r.device_status);
	EXPECT_EQ(0, r.fault_address);
	EXPECT_STREQ("input and output shapes differ", r.reason);
}

struct seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls;
	npurt_error last;
};

static void on_exception(const npurt_error *e, void *user)
{
	struct seen *w = user;
	npurt_error mine = { .size = sizeof(mine) };

	/* Reading the stream's record from the callback is allowed. */
	npurt_stream_error_peek(e->stream, &mine);
	pthread_mutex_lock(&w->lock);
	w->calls++;
	w->last = *e;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

TEST_F(err, the_callback_gets_each_failure_once)
{
	struct seen w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	npurt_error r = { .size = sizeof(r) };
	npurt_stream *other;

	ASSERT_EQ(NPURT_OK, npurt_device_set_exception_callback(self->dev, on_exception, &w));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &other));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, HOLE, 2, 4096));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(other, npurt_mem_device_addr(self->a), 2, 4096));
	if (variant->path == NPURT_SUBMIT_IO_URING) {
		/* The progress thread tells without another call. */
		pthread_mutex_lock(&w.lock);
		while (!w.calls)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
	}
	/* A call returning the failure has run the callback. */
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->s));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(other));
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(self->s, &r));
	pthread_mutex_lock(&w.lock);
	EXPECT_EQ(1, w.calls);
	EXPECT_EQ(self->s, w.last.stream);
	EXPECT_EQ(1, w.last.op_index);
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.last.device_status);
	EXPECT_EQ(0, memcmp(&r, &w.last, sizeof(r)));
	pthread_mutex_unlock(&w.lock);
	npurt_stream_destroy(other);
	/* Another stream's failure is another call. */
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &other));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(other, HOLE, npurt_mem_device_addr(self->a), 64));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(other));
	pthread_mutex_lock(&w.lock);
	EXPECT_EQ(2, w.calls);
	EXPECT_EQ(other, w.last.stream);
	EXPECT_EQ(DRM_NPU_TASK_COPY, w.last.task_type);
	pthread_mutex_unlock(&w.lock);
	ASSERT_EQ(NPURT_OK, npurt_device_set_exception_callback(self->dev, NULL, NULL));
	npurt_stream_destroy(other);
}

/*
 * A CONTINUE stream: a fault among gathered operations (one batch on
 * io_uring, one each on the ioctl path) is reported once, and every
 * operation after it runs, in order, with the stream usable afterwards.
 * Held behind a gate, everything is issued before the fault; without
 * one, the device faults while the operations after it are issued, so
 * some reach the failed queue and some find it failed.
 */
static void continue_after_failure(struct __test_metadata *_metadata, FIXTURE_DATA(err) *self,
				   bool gated)
{
	npurt_stream_desc d = { .size = sizeof(d), .flags = NPURT_STREAM_CONTINUE };
	struct seen w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	uint64_t a = npurt_mem_device_addr(self->a);
	uint32_t *ha = npurt_mem_host_ptr(self->a);
	npurt_error r = { .size = sizeof(r) };
	npurt_stream *s, *gate = NULL;
	npurt_event *ev = NULL;
	enum { N = 40 };
	uint64_t fault_op = gated ? N / 2 + 3 : N / 2 + 2;

	ASSERT_EQ(NPURT_OK, npurt_device_set_exception_callback(self->dev, on_exception, &w));
	ASSERT_EQ(NPURT_OK, npurt_stream_create_desc(self->dev, &d, &s));
	memset(ha, 0, 4 * N);
	memset(ha + 1024, 0, 4 * N);
	if (gated)
		hold_behind_gate(_metadata, self, s, &gate, &ev);	/* operation 1 */
	for (uint32_t i = 0; i < N; i++) {
		ASSERT_EQ(NPURT_OK, npurt_memset_async(s, a + 4 * i, i + 1, 4));
		if (i == N / 2)
			ASSERT_EQ(NPURT_OK, npurt_memset_async(s, HOLE, 7, 4096));
	}
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "memory fault")) TH_LOG("%s", npurt_last_error());
	for (uint32_t i = 0; i < N; i++)
		ASSERT_EQ(i + 1, ha[i]);
	ASSERT_EQ(NPURT_OK, npurt_stream_error_peek(s, &r));
	EXPECT_EQ(fault_op, r.op_index);
	EXPECT_EQ(DRM_NPU_JOB_FAULT, r.device_status);
	pthread_mutex_lock(&w.lock);
	EXPECT_EQ(1, w.calls);
	EXPECT_EQ(fault_op, w.last.op_index);
	pthread_mutex_unlock(&w.lock);
	/* Reported once; the stream goes on. */
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, a, 99, 4));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(s, a + 4096, a, 4 * N));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(99, ha[1024]);
	EXPECT_EQ(N, ha[1024 + N - 1]);

	/* A second failure: reported once more, and the work after it runs. */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, HOLE, 7, 4096));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, a, 5, 4));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(s));
	EXPECT_EQ(NPURT_OK, npurt_stream_query(s));
	EXPECT_EQ(5, ha[0]);
	pthread_mutex_lock(&w.lock);
	EXPECT_EQ(2, w.calls);
	pthread_mutex_unlock(&w.lock);
	ASSERT_EQ(NPURT_OK, npurt_device_set_exception_callback(self->dev, NULL, NULL));
	npurt_stream_destroy(s);
	if (gated) {
		npurt_event_destroy(ev);
		npurt_stream_destroy(gate);
	}
}

TEST_F(err, a_continue_stream_runs_what_follows_a_failure)
{
	continue_after_failure(_metadata, self, true);
}

/*
 * Ungated, where the fault lands among the submits varies: a few rounds,
 * waiting in turn as each policy does (spinning on completion words
 * across the queue's replacement, or asleep in the kernel).
 */
TEST_F(err, a_continue_stream_runs_what_follows_a_failure_met_while_issuing)
{
	static const npurt_wait_policy policies[] = { NPURT_WAIT_AUTO, NPURT_WAIT_SPIN,
						      NPURT_WAIT_BLOCK };

	for (int round = 0; round < 9; round++) {
		ASSERT_EQ(NPURT_OK, npurt_device_set_wait_policy(self->dev, policies[round % 3]));
		continue_after_failure(_metadata, self, false);
	}
}

/* A launch after a failure on a CONTINUE stream takes arena slots as usual. */
TEST_F(err, a_continue_stream_launches_after_a_failure)
{
	npurt_stream_desc d = { .size = sizeof(d), .flags = NPURT_STREAM_CONTINUE };
	uint64_t a = npurt_mem_device_addr(self->a), n = 16;
	float *ha = npurt_mem_host_ptr(self->a);
	npurt_launch_desc l = { .size = sizeof(l) };
	npurt_stream *s;

	ASSERT_EQ(NPURT_OK, npurt_op_lookup("add", &l.op));
	npurt_tensor_init(&l.in[0], a, NPURT_F32, 1, &n);
	npurt_tensor_init(&l.in[1], a + 4096, NPURT_F32, 1, &n);
	npurt_tensor_init(&l.out, a + 8192, NPURT_F32, 1, &n);
	for (int i = 0; i < 16; i++) {
		ha[i] = (float)i;
		ha[1024 + i] = 1.0f;
	}
	ASSERT_EQ(NPURT_OK, npurt_stream_create_desc(self->dev, &d, &s));
	ASSERT_EQ(NPURT_OK, npurt_memset_async(s, HOLE, 7, 4096));
	for (int i = 0; i < 200; i++)		/* more than the arena's slots */
		ASSERT_EQ(NPURT_OK, npurt_launch(s, &l)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(s));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(s)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < 16; i++)
		EXPECT_EQ((float)i + 1.0f, ha[2048 + i]);
	npurt_stream_destroy(s);
}

struct issuer {
	npurt_stream *s;
	npurt_notify *n;
	uint64_t a;
	npurt_status st;
};

static void *issue_and_exit(void *arg)
{
	struct issuer *is = arg;

	is->st = npurt_stream_wait_notify(is->s, is->n);
	for (uint32_t i = 0; i < 64 && !is->st; i++)
		is->st = npurt_memset_async(is->s, is->a + 4 * i, i + 1, 4);
	if (!is->st)
		is->st = npurt_stream_query(is->s) == NPURT_ERR_NOT_READY ? NPURT_OK :
			 NPURT_ERR_INTERNAL;	/* not held back: the test proves nothing */
	return NULL;
}

/* Whether the driver has no SUBMIT command parked (the VM runs only us). */
/* Whether the kernel cancels a dead task's parked commands (before 6.7). */
static bool orphans_cancelled(void)
{
	char path[96], buf[8192];

	return !npu_debugfs_path("npu_queues", path, sizeof(path)) &&
	       !npu_read_file(path, buf, sizeof(buf)) &&
	       strstr(buf, "io_uring orphans: cancelled");
}

/* No SUBMIT command parked, within 20 s. */
static bool no_parked_submits(void)
{
	char path[96], buf[8192];

	for (uint64_t t0 = npu_now_ms(); npu_now_ms() - t0 < 20000; usleep(10000)) {
		if (npu_debugfs_path("npu_queues", path, sizeof(path)) ||
		    npu_read_file(path, buf, sizeof(buf)))
			return false;
		if (!strstr(buf, " submit queue "))
			return true;
	}
	return false;
}

/*
 * Work issued by a thread that exits before it can complete (it waits on
 * a notify recorded only after the thread is gone) still completes. On
 * io_uring the thread's SUBMIT commands are cancelled when it exits
 * (before 6.7) or settle with the work (6.7 on): none stays parked.
 */
TEST_F(err, a_thread_that_exits_leaves_its_work_running)
{
	struct issuer is = { .s = self->s, .a = npurt_mem_device_addr(self->a) };
	uint32_t *ha = npurt_mem_host_ptr(self->a);
	npurt_stream *other;
	pthread_t th;

	memset(ha, 0, 4 * 64);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &other));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &is.n));
	ASSERT_EQ(0, pthread_create(&th, NULL, issue_and_exit, &is));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(NPURT_OK, is.st) TH_LOG("%s", npurt_last_error());
	/*
	 * Kernels before 6.7 leave the dead thread's SUBMIT commands parked
	 * until the driver's watchdog cancels them: the work must still be
	 * held back then, so record the notify only afterwards.
	 */
	if (variant->path == NPURT_SUBMIT_IO_URING && orphans_cancelled())
		ASSERT_TRUE(no_parked_submits());
	ASSERT_EQ(NPURT_OK, npurt_notify_record(is.n, other));
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(self->s)) TH_LOG("%s", npurt_last_error());
	for (uint32_t i = 0; i < 64; i++)
		ASSERT_EQ(i + 1, ha[i]);
	EXPECT_EQ(NPURT_OK, npurt_stream_synchronize(other));
	if (variant->path == NPURT_SUBMIT_IO_URING)
		EXPECT_TRUE(no_parked_submits());
	npurt_notify_destroy(is.n);
	npurt_stream_destroy(other);
}

/* A message that quotes an earlier one (device synchronize quoting the stream's) is whole. */
TEST_F(err, a_message_wrapping_another_is_intact)
{
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->s, HOLE, 2, 4096));
	ASSERT_EQ(NPURT_ERR_DEVICE, npurt_device_synchronize(self->dev));
	EXPECT_EQ(0, strncmp(npurt_last_error(), "npurt_device_synchronize: "
			     "npurt_stream_synchronize: memory fault in operation 1 of the stream "
			     "(npurt_memset_async) at device address ",
			     strlen("npurt_device_synchronize: npurt_stream_synchronize: memory "
				    "fault in operation 1 of the stream (npurt_memset_async) "
				    "at device address ")))
		TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "(write); the device's task 0 of its batch, a fill"))
		TH_LOG("%s", npurt_last_error());
}

TEST_HARNESS_MAIN
