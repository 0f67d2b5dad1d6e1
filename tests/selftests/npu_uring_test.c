// SPDX-License-Identifier: MIT
/*
 * io_uring commands (IORING_OP_URING_CMD): SUBMIT, WAIT and EVENT_WAIT
 * complete as CQEs with the documented results; malformed commands and
 * rings are refused with -EINVAL; parked commands are cancelled by a queue
 * abort, a ring close, a killed process and a device reset, leaving no
 * command behind; 10,000 commands in flight on 8 queues complete exactly
 * once.
 *
 * "Parked" commands are counted by debugfs npu_queues ("io_uring
 * commands: N"), which every test checks is back to zero at the end.
 * Each test runs on a default ring and on a single-thread one
 * (SINGLE_ISSUER | DEFER_TASKRUN), where completions are posted only
 * when the thread waits.
 */
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <xf86drm.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)
#define MS (1000000ll)
#define URING_FLAGS (IORING_SETUP_SQE128 | IORING_SETUP_CQE32)

struct cqe {
	uint64_t user_data;
	int32_t res;
	uint64_t res2;
};

static struct drm_npu_task task1(uint16_t type, uint64_t arg)
{
	struct drm_npu_task t = { .type = type, .args = { arg } };

	return t;
}

/* Queue a command in the next SQE (of either size), with SQE flags. */
static int prep_flags(struct io_uring *r, int fd, uint32_t op, const void *payload, size_t len,
		      uint64_t user_data, uint8_t flags)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, (r->flags & IORING_SETUP_SQE128) ? 128 : 64);
	sqe->flags = flags;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->user_data = user_data;
	memcpy(sqe->cmd, payload, len);
	return 0;
}

/* Queue a command in the next SQE (of either size); 0 or -EBUSY. */
static int prep(struct io_uring *r, int fd, uint32_t op, const void *payload, size_t len,
		uint64_t user_data)
{
	return prep_flags(r, fd, op, payload, len, user_data, 0);
}

/* The next CQE within timeout_ns: 0, or -ETIME when none came. */
static int reap(struct io_uring *r, int64_t timeout_ns, struct cqe *out)
{
	struct __kernel_timespec ts = { .tv_sec = timeout_ns / SEC, .tv_nsec = timeout_ns % SEC };
	struct io_uring_cqe *c;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = io_uring_wait_cqe_timeout(r, &c, &ts);
	if (ret)
		return ret;
	out->user_data = c->user_data;
	out->res = c->res;
	out->res2 = (r->flags & IORING_SETUP_CQE32) ? c->big_cqe[0] : 0;
	io_uring_cqe_seen(r, c);
	return 0;
}

/* Submit one command and take its CQE (which must come within 10 s). */
static int run(struct io_uring *r, int fd, uint32_t op, const void *payload, size_t len,
	       struct cqe *out)
{
	int ret = prep(r, fd, op, payload, len, 42);

	memset(out, 0, sizeof(*out));
	if (ret)
		return ret;
	ret = io_uring_submit(r);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	return reap(r, 10 * SEC, out);
}

static long long parked(void)
{
	return npu_debugfs_value("npu_queues", "io_uring commands: ");
}

/* Parked commands drain to `want` within 5 s (the watchdog reaps in 100 ms). */
static long long parked_settles(long long want)
{
	long long v = parked();

	for (int i = 0; i < 500 && v != want; i++) {
		usleep(10000);
		v = parked();
	}
	return v;
}

FIXTURE(ur) {
	int fd;
	unsigned int flags;		/* the variant's ring flags */
	struct io_uring ring;
	struct drm_npu_bo_create bo;
	uint32_t *map;
	uint32_t q, gate;		/* a queue and an event that blocks it */
};

FIXTURE_VARIANT(ur) {
	unsigned int flags;
};

FIXTURE_VARIANT_ADD(ur, default_ring) { .flags = URING_FLAGS };
FIXTURE_VARIANT_ADD(ur, single_thread_ring) {
	.flags = URING_FLAGS | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
};

FIXTURE_SETUP(ur)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	self->flags = variant->flags;
	ASSERT_EQ(0, io_uring_queue_init(64, &self->ring, self->flags));
	ASSERT_EQ(0, npu_bo_create(self->fd, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &self->bo));
	self->map = npu_bo_mmap(self->fd, self->bo.handle, 1 << 20);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 30000, &self->q));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &self->gate));
}

FIXTURE_TEARDOWN(ur)
{
	int fd;

	io_uring_queue_exit(&self->ring);
	munmap(self->map, 1 << 20);
	close(self->fd);
	EXPECT_EQ(0, parked_settles(0));
	fd = npu_open();
	EXPECT_EQ(0, npu_usage_settles(fd, DRM_NPU_MEM_REGION_QUEUES, 0));
	close(fd);
}

/* Block self->q on the gate event: returns the blocking batch's seq. */
static uint64_t block_queue(struct __test_metadata *_metadata, FIXTURE_DATA(ur) *self)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_EVENT_WAIT, self->gate);
	uint64_t seq;

	EXPECT_EQ(0, npu_submit_on(self->fd, self->q, &t, 1, &seq));
	return seq;
}

/* Record the gate from the default queue, releasing self->q. */
static void open_gate(struct __test_metadata *_metadata, FIXTURE_DATA(ur) *self)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_EVENT_RECORD, self->gate);
	uint64_t seq;

	EXPECT_EQ(0, npu_submit_on(self->fd, 0, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->fd, 0, seq, 10 * SEC, NULL));
}

TEST_F(ur, the_driver_says_which_commands_it_takes)
{
	uint64_t v = 0;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_URING_CMDS, &v));
	EXPECT_EQ(7, v);
}

TEST_F(ur, submit_completes_when_the_batch_does)
{
	struct drm_npu_task t = npu_task_fill(self->bo.device_va, 64 << 10, 0x5a5a5a5a);
	struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1, .queue = self->q };
	struct cqe c;

	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(1, c.res2);	/* the queue's first sequence number */
	EXPECT_EQ(42, c.user_data);
	/* The CQE came after the device wrote the data. */
	EXPECT_EQ(0x5a5a5a5a, self->map[0]);
	EXPECT_EQ(0x5a5a5a5a, self->map[(64 << 10) / 4 - 1]);
	EXPECT_EQ(0, self->map[(64 << 10) / 4]);
	/* The ioctl sees the same sequence numbers. */
	EXPECT_EQ(0, npu_wait_on(self->fd, self->q, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, npu_wait_on(self->fd, self->q, 2, 0, NULL));
	/* And the default queue is created on first use, as with the ioctl. */
	s.queue = 0;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(1, c.res2);
}

TEST_F(ur, submit_rejects_what_the_ioctl_rejects_and_queues_nothing)
{
	struct drm_npu_task good = task1(DRM_NPU_TASK_NOP, 0), bad = task1(77, 0);
	struct drm_npu_submit s;
	struct cqe c;
	struct {
		const char *what;
		struct drm_npu_submit s;
		int err;
	} cases[] = {
		{ "flags", { .tasks = (uintptr_t)&good, .count = 1, .flags = 1 }, -EINVAL },
		{ "pad", { .tasks = (uintptr_t)&good, .count = 1, .pad = 1 }, -EINVAL },
		{ "no tasks", { .tasks = (uintptr_t)&good, .count = 0 }, -EINVAL },
		{ "too many", { .tasks = (uintptr_t)&good, .count = DRM_NPU_SUBMIT_MAX_TASKS + 1 }, -EINVAL },
		{ "bad task", { .tasks = (uintptr_t)&bad, .count = 1 }, -EINVAL },
		{ "bad pointer", { .tasks = 8, .count = 1 }, -EFAULT },
		{ "seq is an output", { .tasks = (uintptr_t)&good, .count = 1, .seq = 5 }, -EINVAL },
		{ "unknown queue", { .tasks = (uintptr_t)&good, .count = 1, .queue = 7 }, -EINVAL },
		{ "queue out of range", { .tasks = (uintptr_t)&good, .count = 1, .queue = 1000 }, -EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].s.queue == 0)
			cases[i].s.queue = self->q;
		ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &cases[i].s,
				 sizeof(cases[i].s), &c));
		EXPECT_EQ(cases[i].err, c.res) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(0, c.res2) TH_LOG("%s", cases[i].what);
	}
	/* Nothing was queued: the next batch is the queue's first. */
	s = (struct drm_npu_submit){ .tasks = (uintptr_t)&good, .count = 1, .queue = self->q };
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(1, c.res2);
}

TEST_F(ur, unknown_commands_and_payload_sizes)
{
	struct drm_npu_uring_wait w = { .seq = 0, .deadline_ns = 0, .queue = self->q };
	uint8_t big[80] = { 0 };
	struct cqe c;

	/* Numbers next to ours, and ours with the wrong direction or type. */
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 3, struct drm_npu_uring_wait),
			 &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE - 1, struct drm_npu_uring_wait),
			 &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 1, struct drm_npu_uring_wait),
			 &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
	ASSERT_EQ(0, run(&self->ring, self->fd, _IOW('x', DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 1,
						     struct drm_npu_uring_wait), &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
	/* An ioctl number is not a command. */
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_IOCTL_NPU_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);

	/* Reserved fields and flags. */
	w.flags = 1;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
	w.flags = 0;

	/* A newer caller's longer payload: zero tail accepted, else refused. */
	memcpy(big, &w, sizeof(w));
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 _IOC(_IOC_WRITE, DRM_IOCTL_BASE, DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 1, 40),
			 big, sizeof(big), &c));
	EXPECT_EQ(0, c.res);
	big[39] = 1;
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 _IOC(_IOC_WRITE, DRM_IOCTL_BASE, DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 1, 40),
			 big, sizeof(big), &c));
	EXPECT_EQ(-EINVAL, c.res);
	/* Larger than an SQE can carry. */
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 _IOC(_IOC_WRITE, DRM_IOCTL_BASE, DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 1, 81),
			 big, sizeof(big), &c));
	EXPECT_EQ(-EINVAL, c.res);
	/*
	 * An older caller's shorter payload is zero-extended: 16 bytes of
	 * WAIT are seq and timeout, on queue 0 (not created: seq 0 is done).
	 */
	memset(big, 0xff, sizeof(big));
	memset(big, 0, 16);
	ASSERT_EQ(0, run(&self->ring, self->fd,
			 _IOC(_IOC_WRITE, DRM_IOCTL_BASE, DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 1, 16),
			 big, sizeof(big), &c));
	EXPECT_EQ(0, c.res);
}

TEST_F(ur, rings_without_big_sqes_and_cqes_are_refused)
{
	struct drm_npu_uring_wait w = { .queue = self->q };
	unsigned int flags[] = { 0, IORING_SETUP_SQE128, IORING_SETUP_CQE32 };
	struct io_uring r;
	struct cqe c;

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, io_uring_queue_init(8, &r, flags[i]));
		/* A 64-byte SQE has 16 bytes of payload: all the WAIT needs is 24. */
		ASSERT_EQ(0, run(&r, self->fd, DRM_NPU_URING_CMD_WAIT, &w,
				 (flags[i] & IORING_SETUP_SQE128) ? sizeof(w) : 16, &c));
		EXPECT_EQ(-EINVAL, c.res) TH_LOG("ring flags %#x", flags[i]);
		io_uring_queue_exit(&r);
	}
	/* Polled rings: io_uring itself refuses commands of drivers without iopoll. */
	ASSERT_EQ(0, io_uring_queue_init(8, &r, URING_FLAGS | IORING_SETUP_IOPOLL));
	ASSERT_EQ(0, run(&r, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(-EOPNOTSUPP, c.res);
	io_uring_queue_exit(&r);
}

TEST_F(ur, wait_completes_at_the_sequence_number_or_times_out)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_uring_wait w = { .deadline_ns = npu_deadline(-1), .queue = self->q };
	uint64_t gate_seq, seq;
	struct cqe c;

	gate_seq = block_queue(_metadata, self);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->q, &t, 1, &seq));
	w.seq = seq;
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 1));
	/* The same wait with a time limit ends first. */
	w.deadline_ns = npu_deadline(50 * MS);
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 2));
	w.deadline_ns = 0;
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 3));
	ASSERT_EQ(3, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(3, c.user_data);
	EXPECT_EQ(-ETIMEDOUT, c.res);
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(2, c.user_data);
	EXPECT_EQ(-ETIMEDOUT, c.res);
	EXPECT_EQ(1, parked());
	EXPECT_EQ(-ETIME, reap(&self->ring, 100 * MS, &c));

	open_gate(_metadata, self);
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(1, c.user_data);
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(seq, c.res2);
	EXPECT_EQ(0, npu_wait_on(self->fd, self->q, gate_seq, 0, NULL));

	/* Done already: completes at once. Never handed out: -EINVAL. */
	w = (struct drm_npu_uring_wait){ .seq = seq, .deadline_ns = 0, .queue = self->q };
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(seq, c.res2);
	w.seq = seq + 1;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
	w.seq = 1;
	w.queue = 6;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(-EINVAL, c.res);
}

TEST_F(ur, a_device_fault_fails_the_command_with_its_task)
{
	struct drm_npu_task t[3] = {
		task1(DRM_NPU_TASK_NOP, 0),
		npu_task_fill(0x7f0000000000ull, 4096, 1),	/* nothing mapped there */
		task1(DRM_NPU_TASK_NOP, 0),
	};
	struct drm_npu_submit s = { .tasks = (uintptr_t)t, .count = 3, .queue = self->q };
	struct drm_npu_uring_wait w = { .seq = 1, .deadline_ns = npu_deadline(-1), .queue = self->q };
	struct cqe c;

	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(-EIO, c.res);
	EXPECT_EQ(DRM_NPU_JOB_FAULT, DRM_NPU_URING_RES2_STATUS(c.res2));
	EXPECT_EQ(1, DRM_NPU_URING_RES2_TASK(c.res2));
	/* A wait for it after the fact says the same. */
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(-EIO, c.res);
	EXPECT_EQ(DRM_NPU_URING_RES2(DRM_NPU_JOB_FAULT, 1), c.res2);
	/* The failed queue takes no more work, as with the ioctl. */
	s.count = 1;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(-EIO, c.res);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

/*
 * Deadlines are absolute CLOCK_MONOTONIC: any in the past polls (negative
 * ones too), a near one expires on time, in both waiting commands.
 */
TEST_F(ur, waits_take_absolute_deadlines)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_uring_wait w = { .queue = self->q };
	struct drm_npu_uring_event_wait ew = { .id = self->gate };
	const int64_t past[] = { -1, -5 * SEC, 1, mono_ns() - SEC };
	uint64_t seq;
	int64_t start;
	struct cqe c;

	block_queue(_metadata, self);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->q, &t, 1, &seq));
	w.seq = seq;
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		w.deadline_ns = ew.deadline_ns = past[i];
		ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 1));
		ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew,
				  sizeof(ew), 2));
		ASSERT_EQ(2, io_uring_submit(&self->ring));
		for (int k = 0; k < 2; k++) {
			ASSERT_EQ(0, reap(&self->ring, SEC, &c)) TH_LOG("deadline %lld",
									(long long)past[i]);
			EXPECT_EQ(-ETIMEDOUT, c.res);
		}
	}
	start = mono_ns();
	w.deadline_ns = ew.deadline_ns = start + 200 * MS;
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 1));
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 2));
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
		EXPECT_EQ(-ETIMEDOUT, c.res);
	}
	EXPECT_LE(start + 200 * MS, mono_ns());
	EXPECT_GT(start + 3 * SEC, mono_ns());
}

TEST_F(ur, event_wait_completes_with_the_record_timestamp)
{
	struct drm_npu_uring_event_wait ew = { .deadline_ns = npu_deadline(-1), .id = self->gate };
	struct drm_npu_event_query eq = { .id = self->gate };
	uint32_t notify;
	struct cqe c;

	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 1));
	ew.deadline_ns = 0;
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 2));
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(2, c.user_data);
	EXPECT_EQ(-ETIMEDOUT, c.res);
	EXPECT_EQ(-ETIME, reap(&self->ring, 100 * MS, &c));

	open_gate(_metadata, self);
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(1, c.user_data);
	EXPECT_EQ(0, c.res);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_QUERY, &eq));
	EXPECT_EQ(1, eq.recorded);
	EXPECT_EQ(eq.timestamp_ns, c.res2);
	EXPECT_NE(0, c.res2);

	/* Recorded already: at once. Not an event of ours: -EINVAL. */
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), &c));
	EXPECT_EQ(0, c.res);
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &notify));
	ew.id = notify;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), &c));
	EXPECT_EQ(-EINVAL, c.res);
	ew.id = 4095;
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), &c));
	EXPECT_EQ(-EINVAL, c.res);
	ew = (struct drm_npu_uring_event_wait){ .id = self->gate, .flags = 2 };
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), &c));
	EXPECT_EQ(-EINVAL, c.res);
}

/*
 * Waits with a deadline for what is done already, issued from io_uring's
 * workers (IOSQE_ASYNC): each settles as it parks, and its completion,
 * run by this thread meanwhile, frees it. The parking worker, held up a
 * millisecond after settling (debugfs hold-park), must not touch it
 * again: it armed the deadline of a freed command, a use after free that
 * KASAN reports on the debug kernel (make check-debug runs this too).
 */
TEST_F(ur, commands_settled_as_they_park_are_left_alone)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_EVENT_RECORD, self->gate);
	struct drm_npu_uring_event_wait ew = { .id = self->gate };
	struct drm_npu_uring_wait w = { .queue = self->q };
	int done = 0, bad = 0;
	uint64_t seq;
	struct cqe c;

	if (npu_inject("hold-park 1000"))
		SKIP(return, "no fault injection (npu-fwsim --fault-injection, debugfs)");
	ASSERT_EQ(0, npu_submit_on(self->fd, self->q, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, self->q, seq, 10 * SEC, NULL));
	w.seq = seq;
	for (int round = 0; round < 40; round++) {
		w.deadline_ns = ew.deadline_ns = npu_deadline(SEC);
		for (int i = 0; i < 32; i++) {
			if (i & 1) {
				ASSERT_EQ(0, prep_flags(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT,
							&w, sizeof(w), i, IOSQE_ASYNC));
			} else {
				ASSERT_EQ(0, prep_flags(&self->ring, self->fd,
							DRM_NPU_URING_CMD_EVENT_WAIT, &ew,
							sizeof(ew), i, IOSQE_ASYNC));
			}
		}
		ASSERT_EQ(32, io_uring_submit(&self->ring));
		for (int i = 0; i < 32; i++) {
			ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
			bad += c.res != 0;
			done++;
		}
	}
	EXPECT_EQ(0, npu_inject("clear"));
	EXPECT_EQ(40 * 32, done);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, parked_settles(0));
}

TEST_F(ur, abort_and_destroy_cancel_what_waits_on_the_queue)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1, .queue = self->q };
	struct drm_npu_uring_wait w = { .deadline_ns = npu_deadline(-1), .queue = self->q };
	struct drm_npu_queue_destroy qa = { .queue = self->q };
	uint32_t q2;
	struct cqe c;
	int seen = 0;

	block_queue(_metadata, self);
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), 1));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	w.seq = 2;
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 2));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	EXPECT_EQ(2, parked());
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &qa));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
		seen |= 1 << (c.user_data - 1);
		EXPECT_EQ(-ECANCELED, c.res);
		EXPECT_EQ(DRM_NPU_JOB_ABORTED, DRM_NPU_URING_RES2_STATUS(c.res2));
	}
	EXPECT_EQ(3, seen);

	/* Destroying a queue cancels the same way. */
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q2));
	t = task1(DRM_NPU_TASK_EVENT_WAIT, self->gate);
	ASSERT_EQ(0, npu_submit_on(self->fd, q2, &t, 1, NULL));
	w = (struct drm_npu_uring_wait){ .seq = 1, .deadline_ns = npu_deadline(-1), .queue = q2 };
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 3));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	EXPECT_EQ(-ETIME, reap(&self->ring, 50 * MS, &c));
	ASSERT_EQ(0, npu_queue_destroy(self->fd, q2));
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(3, c.user_data);
	EXPECT_EQ(-ECANCELED, c.res);
	EXPECT_EQ(DRM_NPU_JOB_ABORTED, DRM_NPU_URING_RES2_STATUS(c.res2));
}

TEST_F(ur, closing_the_ring_cancels_its_commands)
{
	struct drm_npu_uring_wait w = { .seq = 0, .deadline_ns = npu_deadline(-1), .queue = self->q };
	struct drm_npu_uring_event_wait ew = { .deadline_ns = npu_deadline(-1), .id = self->gate };
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1, .queue = self->q };
	struct io_uring r;
	uint64_t seq;
	struct cqe c;

	w.seq = block_queue(_metadata, self);
	ASSERT_EQ(0, io_uring_queue_init(8, &r, self->flags));
	ASSERT_EQ(0, prep(&r, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 1));
	ASSERT_EQ(0, prep(&r, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 2));
	ASSERT_EQ(0, prep(&r, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), 3));
	ASSERT_EQ(3, io_uring_submit(&r));
	EXPECT_EQ(3, parked());
	io_uring_queue_exit(&r);
	EXPECT_EQ(0, parked_settles(0));

	/* The file and its queue go on: the batch queued by the SUBMIT runs. */
	open_gate(_metadata, self);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->q, &t, 1, &seq));
	EXPECT_EQ(3, seq);
	EXPECT_EQ(0, npu_wait_on(self->fd, self->q, seq, 10 * SEC, NULL));
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(4, c.res2);
}

/*
 * From 6.7 io_uring lists a command as cancelable before the driver parks
 * it, and a command issued from an io_uring worker holds no ring lock in
 * between: a ring closed then asks the driver to cancel a command that is
 * not parked yet. Settling it there let its task work free it, and the
 * worker then parked the freed command (heap corruption, found by the
 * fuzzer on 6.12). hold-cancelable keeps the worker in that window while
 * the ring closes; the cancel must wait until the command is parked. The
 * parked list in debugfs then holds nothing, and the queue's completion,
 * which walks it, finds nothing stale.
 */
TEST_F(ur, a_ring_closed_before_its_worker_parks_cancels_the_parked_command)
{
	struct drm_npu_uring_wait w = { .deadline_ns = npu_deadline(-1), .queue = self->q };
	struct drm_npu_uring_event_wait ew = { .deadline_ns = npu_deadline(-1), .id = self->gate };
	struct drm_npu_task t;
	struct io_uring r;
	uint64_t seq;
	struct cqe c;

	/* Before 6.7 the watchdog cancels, from the parked list only. */
	if (npu_debugfs_value("npu_queues", "orphans: cancelled by the watchdog") != -1)
		SKIP(return, "io_uring does not cancel commands on this kernel");
	if (npu_inject("hold-cancelable 600"))
		SKIP(return, "no fault injection (npu-fwsim --fault-injection, debugfs)");
	w.seq = block_queue(_metadata, self);
	for (int round = 0; round < 3; round++) {
		ASSERT_EQ(0, io_uring_queue_init(8, &r, self->flags));
		ASSERT_EQ(0, prep_flags(&r, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 1,
					IOSQE_ASYNC));
		ASSERT_EQ(0, prep_flags(&r, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew),
					2, IOSQE_ASYNC));
		ASSERT_EQ(2, io_uring_submit(&r));
		usleep(250 * 1000);	/* both workers inside the hold */
		io_uring_queue_exit(&r);
		EXPECT_EQ(0, parked_settles(0));
		EXPECT_EQ(-1, npu_debugfs_value("npu_queues", " wait queue "));
		EXPECT_EQ(-1, npu_debugfs_value("npu_queues", " event_wait event "));
	}
	EXPECT_EQ(0, npu_inject("clear"));

	/* The queue's completion walks what waits on it. */
	open_gate(_metadata, self);
	EXPECT_EQ(0, npu_wait_on(self->fd, self->q, w.seq, 10 * SEC, NULL));
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(0, c.res);
	t = task1(DRM_NPU_TASK_NOP, 0);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->q, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->fd, self->q, seq, 10 * SEC, NULL));
}

TEST_F(ur, a_killed_process_with_parked_commands_leaves_nothing)
{
	uint64_t hbm_before = npu_hbm_used(self->fd);
	uint64_t queues_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_QUEUES);
	long long syncs_before = npu_debugfs_value("npu_queues", "events and notifies in use: ");
	int ready[2];
	char byte;
	pid_t pid;
	int status;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
		struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1 };
		struct drm_npu_uring_wait w = { .deadline_ns = npu_deadline(-1) };
		struct drm_npu_uring_event_wait ew = { .deadline_ns = npu_deadline(-1) };
		struct drm_npu_bo_create bo;
		struct io_uring r;
		uint32_t q, ev;
		int fd = npu_open();

		if (fd < 0 || npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q) ||
		    npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &ev) ||
		    npu_bo_create(fd, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo) ||
		    io_uring_queue_init(16, &r, variant->flags))
			_exit(1);
		t = task1(DRM_NPU_TASK_EVENT_WAIT, ev);
		if (npu_submit_on(fd, q, &t, 1, NULL))
			_exit(2);
		t = npu_task_fill(bo.device_va, 4096, 1);
		s.queue = w.queue = q;
		w.seq = 1;
		ew.id = ev;
		for (int i = 0; i < 4; i++) {
			prep(&r, fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), i);
			prep(&r, fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), 10 + i);
			prep(&r, fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 20 + i);
		}
		if (io_uring_submit(&r) != 12)
			_exit(3);
		/* The buffer is held by the parked batches only. */
		npu_gem_close(fd, bo.handle);
		if (write(ready[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &byte, 1));
	close(ready[0]);
	EXPECT_EQ(12, parked());
	EXPECT_LT(hbm_before, npu_hbm_used(self->fd));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));

	EXPECT_EQ(0, parked_settles(0));
	EXPECT_EQ(queues_before, npu_usage_settles(self->fd, DRM_NPU_MEM_REGION_QUEUES, queues_before));
	for (int i = 0; i < 500 && npu_hbm_used(self->fd) != hbm_before; i++)
		usleep(10000);
	EXPECT_EQ(hbm_before, npu_hbm_used(self->fd));
	EXPECT_EQ(syncs_before, npu_debugfs_value("npu_queues", "events and notifies in use: "));
}

TEST_F_TIMEOUT(ur, ten_thousand_commands_on_eight_queues_complete_exactly_once, 120)
{
	enum { QUEUES = 8, PER_QUEUE = 1250, TOTAL = QUEUES * PER_QUEUE };
	struct io_uring_params p = { .flags = self->flags | IORING_SETUP_CQSIZE,
				     .cq_entries = 16384 };
	struct drm_npu_task nop = task1(DRM_NPU_TASK_NOP, 0), t, rec[QUEUES];
	uint32_t queues[QUEUES], notify[QUEUES], submits[QUEUES];
	static uint64_t want[TOTAL];		/* a WAIT's seq; 0 for a SUBMIT */
	static uint8_t seen[TOTAL], submit_seq[QUEUES][1002];
	struct drm_npu_notify_export ex;
	struct drm_npu_notify_import im;
	struct io_uring r;
	int other;
	uint64_t seq;
	struct cqe c;

	uint64_t hw = 0;

	ASSERT_EQ(0, npu_get_param(self->fd, DRM_NPU_PARAM_QUEUE_COUNT, &hw));
	if (hw < QUEUES + 1)
		SKIP(return, "needs %d hardware queues, the device has %llu", QUEUES + 1,
		     (unsigned long long)hw);
	memset(seen, 0, sizeof(seen));
	memset(submit_seq, 0, sizeof(submit_seq));
	other = npu_open();
	ASSERT_LE(0, other);
	ASSERT_EQ(0, io_uring_queue_init_params(2048, &r, &p));
	/*
	 * The default queue (1024 tasks: 500 one-task batches fit) and seven
	 * queues of 4096 (1000 fit); the rest of each queue's 1250 are WAITs.
	 */
	ASSERT_EQ(0, npu_queue_destroy(self->fd, self->q));
	queues[0] = 0;
	submits[0] = 500;
	for (int i = 1; i < QUEUES; i++) {
		ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 4096, 30000,
					      &queues[i]));
		submits[i] = 1000;
	}
	self->q = queues[1];

	/* Each queue waits on a notify that only the other context records. */
	for (int i = 0; i < QUEUES; i++) {
		ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &notify[i]));
		t = task1(DRM_NPU_TASK_NOTIFY_WAIT, notify[i]);
		ASSERT_EQ(0, npu_submit_on(self->fd, queues[i], &t, 1, &seq));
		ASSERT_EQ(1, seq);
	}

	/* Interleaved across the queues: SUBMITs first, then WAITs. */
	for (int k = 0; k < PER_QUEUE; k++) {
		for (int i = 0; i < QUEUES; i++) {
			uint64_t id = (uint64_t)i * PER_QUEUE + k;

			want[id] = 0;
			if (k < (int)submits[i]) {
				struct drm_npu_submit s = { .tasks = (uintptr_t)&nop, .count = 1,
							    .queue = queues[i] };

				ASSERT_EQ(0, prep(&r, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s,
						  sizeof(s), id));
			} else {
				/* From the gate to the last batch, which the last waits for. */
				struct drm_npu_uring_wait w = {
					.seq = 1 + (k - submits[i]) % (submits[i] + 1),
					.deadline_ns = npu_deadline(-1), .queue = queues[i] };

				if (k == PER_QUEUE - 1)
					w.seq = submits[i] + 1;
				want[id] = w.seq;
				ASSERT_EQ(0, prep(&r, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w),
						  id));
			}
			if (io_uring_sq_space_left(&r) == 0)
				ASSERT_LT(0, io_uring_submit(&r));
		}
	}
	ASSERT_LE(0, io_uring_submit(&r));
	/* All 10,000 are parked in the kernel: nothing could complete. */
	EXPECT_EQ(TOTAL, parked());
	EXPECT_EQ(-ETIME, reap(&r, 10 * MS, &c));

	/* Release every queue from the other context, in one batch. */
	for (int i = 0; i < QUEUES; i++) {
		ex = (struct drm_npu_notify_export){ .id = notify[i] };
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &ex));
		im = (struct drm_npu_notify_import){ .fd = ex.fd };
		ASSERT_EQ(0, ioctl(other, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im));
		close(ex.fd);
		rec[i] = task1(DRM_NPU_TASK_NOTIFY_RECORD, im.id);
	}
	ASSERT_EQ(0, npu_submit_on(other, 0, rec, QUEUES, &seq));

	for (int pending = TOTAL; pending; pending--) {
		int i, k;

		ASSERT_EQ(0, reap(&r, 30 * SEC, &c)) TH_LOG("%d CQEs missing", pending);
		ASSERT_GT(TOTAL, c.user_data);
		i = c.user_data / PER_QUEUE;
		k = c.user_data % PER_QUEUE;
		EXPECT_EQ(0, seen[c.user_data]++) TH_LOG("command %d of queue %d twice", k, i);
		EXPECT_EQ(0, c.res);
		if (want[c.user_data]) {
			EXPECT_EQ(want[c.user_data], c.res2);
		} else {
			/* Every SUBMIT got its own batch: seqs 2..submits + 1, once each. */
			ASSERT_LE(2, c.res2);
			ASSERT_GE(submits[i] + 1, c.res2);
			EXPECT_EQ(0, submit_seq[i][c.res2]++);
		}
	}
	EXPECT_EQ(-ETIME, reap(&r, 100 * MS, &c));
	EXPECT_EQ(0, parked());
	io_uring_queue_exit(&r);
	close(other);
}

/*
 * A queue of the smallest depth, blocked on the gate: `n` SUBMITs, each
 * copying the word before it one further, are all queued behind it.
 */
static uint32_t fill_backlog(struct __test_metadata *_metadata, FIXTURE_DATA(ur) *self,
			     struct drm_npu_task *copies, int n)
{
	struct drm_npu_task gate = task1(DRM_NPU_TASK_EVENT_WAIT, self->gate);
	uint64_t va = self->bo.device_va;
	uint32_t q = 0;

	EXPECT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, DRM_NPU_QUEUE_DEPTH_MIN,
				      30000, &q));
	EXPECT_EQ(0, npu_submit_on(self->fd, q, &gate, 1, NULL));
	for (int i = 0; i < n; i++) {
		struct drm_npu_submit s = { .tasks = (uintptr_t)&copies[i], .count = 1, .queue = q };

		copies[i] = npu_task_copy(va + 4 * (i + 1), va + 4 * i, 4);
		EXPECT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), i));
		if (io_uring_sq_space_left(&self->ring) == 0)
			EXPECT_LT(0, io_uring_submit(&self->ring));
	}
	EXPECT_LE(0, io_uring_submit(&self->ring));
	return q;
}

TEST_F(ur, a_full_queue_keeps_submits_in_issue_order)
{
	enum { N = 1000 };	/* four times what the ring holds */
	static struct drm_npu_task copies[N];
	static uint8_t seen[N];
	struct cqe c;

	memset(seen, 0, sizeof(seen));
	self->map[0] = 7;
	fill_backlog(_metadata, self, copies, N);
	/* Every SUBMIT is waiting in the kernel, none in an io_uring worker. */
	EXPECT_EQ(N, parked());
	open_gate(_metadata, self);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, reap(&self->ring, 10 * SEC, &c));
		ASSERT_GT(N, c.user_data);
		EXPECT_EQ(0, seen[c.user_data]++);
		EXPECT_EQ(0, c.res);
		/* Sequence numbers follow the order of issue: the gate was 1. */
		EXPECT_EQ(c.user_data + 2, c.res2);
	}
	/* A copy run before its predecessor would have left a 0 behind. */
	for (int i = 0; i <= N; i++) {
		ASSERT_EQ(7, self->map[i]) TH_LOG("word %d", i);
	}
}

TEST_F(ur, aborting_a_queue_fails_its_backlog)
{
	enum { N = 600 };
	static struct drm_npu_task copies[N];
	struct drm_npu_queue_destroy qa = { 0 };
	struct cqe c;

	qa.queue = fill_backlog(_metadata, self, copies, N);
	EXPECT_EQ(N, parked());
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &qa));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, reap(&self->ring, 10 * SEC, &c));
		EXPECT_EQ(-ECANCELED, c.res);
		EXPECT_EQ(DRM_NPU_JOB_ABORTED, DRM_NPU_URING_RES2_STATUS(c.res2));
	}
	EXPECT_EQ(0, parked());
	/* Nothing it held is left: the queue goes, and its memory with it. */
	ASSERT_EQ(0, npu_queue_destroy(self->fd, qa.queue));
	open_gate(_metadata, self);
	EXPECT_EQ(0, self->map[1]);
}

struct ioctl_submitter {
	int fd, ret;
	uint32_t queue;
	uint64_t seq;
	struct drm_npu_task task;
};

static void *ioctl_submit_thread(void *arg)
{
	struct ioctl_submitter *t = arg;

	t->ret = npu_submit_on(t->fd, t->queue, &t->task, 1, &t->seq);
	return NULL;
}

/*
 * An ioctl SUBMIT behind io_uring SUBMITs that wait for ring room does
 * not wait itself: it gets the next sequence number at once and runs
 * after them; aborted, everything queued fails, the ioctl's batch too.
 */
TEST_F(ur, an_ioctl_submit_queues_behind_the_io_uring_ones)
{
	enum { N = 600 };
	static struct drm_npu_task copies[N];
	struct ioctl_submitter t = { .fd = self->fd };
	struct drm_npu_queue_destroy qa = { 0 };
	struct drm_npu_wait w;
	struct cqe c;

	self->map[0] = 5;
	t.queue = fill_backlog(_metadata, self, copies, N);
	/* The ioctl's batch continues the chain: it must run after the others. */
	t.task = npu_task_copy(self->bo.device_va + 4 * (N + 1), self->bo.device_va + 4 * N, 4);
	ioctl_submit_thread(&t);
	EXPECT_EQ(0, t.ret);
	EXPECT_EQ(N + 2, t.seq);
	open_gate(_metadata, self);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, reap(&self->ring, 10 * SEC, &c));
		EXPECT_EQ(0, c.res);
	}
	EXPECT_EQ(0, npu_wait_on(self->fd, t.queue, t.seq, 10 * SEC, NULL));
	EXPECT_EQ(5, self->map[N + 1]);

	/* Aborted with the ring full, the queued ioctl batch fails too. */
	struct drm_npu_task gate = task1(DRM_NPU_TASK_EVENT_RESET, self->gate);

	ASSERT_EQ(0, npu_submit_on(self->fd, 0, &gate, 1, NULL));
	EXPECT_EQ(0, npu_wait_on(self->fd, 0, 2, 10 * SEC, NULL));
	ASSERT_EQ(0, npu_queue_destroy(self->fd, t.queue));
	t.queue = fill_backlog(_metadata, self, copies, N);
	ioctl_submit_thread(&t);
	EXPECT_EQ(0, t.ret);
	qa.queue = t.queue;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_ABORT, &qa));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, t.queue, t.seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_ABORTED, w.status);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, reap(&self->ring, 10 * SEC, &c));
		EXPECT_EQ(-ECANCELED, c.res);
	}
}

/*
 * A SUBMIT whose in-syncobj is not signalled yet waits in its queue's
 * scheduler: neither the ring nor an io_uring worker blocks on it, and
 * it keeps its place in its queue's order.
 */
TEST_F(ur, submit_with_in_syncobjs_waits_in_the_scheduler_not_the_ring)
{
	struct drm_npu_task gate = task1(DRM_NPU_TASK_EVENT_WAIT, self->gate);
	struct drm_npu_task t = npu_task_fill(self->bo.device_va, 4096, 9);
	struct drm_npu_syncobj sync = { 0 };
	struct drm_npu_submit gated = { .tasks = (uintptr_t)&gate, .count = 1, .queue = self->q,
					.out_syncobjs = (uintptr_t)&sync, .out_count = 1 };
	struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1,
				    .in_syncobjs = (uintptr_t)&sync, .in_count = 1 };
	struct drm_npu_uring_wait w = { .seq = 1, .deadline_ns = 0, .queue = self->q };
	struct cqe c;

	/* The in-syncobj gets the fence of a batch that waits on the gate. */
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &sync.handle));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &gated));
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), 1));
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	/* The ring is free for other commands meanwhile. */
	ASSERT_EQ(0, run(&self->ring, self->fd, DRM_NPU_URING_CMD_WAIT, &w, sizeof(w), &c));
	EXPECT_EQ(42, c.user_data);
	EXPECT_EQ(-ETIMEDOUT, c.res);
	EXPECT_EQ(0, self->map[0]);
	/*
	 * The gate opens from a third queue; the scheduler then runs the
	 * waiting batch, first on the default queue.
	 */
	struct drm_npu_task rec = task1(DRM_NPU_TASK_EVENT_RECORD, self->gate);
	struct drm_npu_submit r = { .tasks = (uintptr_t)&rec, .count = 1 };

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &r.queue));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_SUBMIT, &r));
	ASSERT_EQ(0, reap(&self->ring, 5 * SEC, &c));
	EXPECT_EQ(1, c.user_data);
	EXPECT_EQ(0, c.res);
	EXPECT_EQ(1, c.res2);
	EXPECT_EQ(9, self->map[0]);
	drmSyncobjDestroy(self->fd, sync.handle);
}

TEST_F(ur, sqpoll_rings_submit_without_a_syscall)
{
	struct io_uring_params p = { .flags = URING_FLAGS | IORING_SETUP_SQPOLL,
				     .sq_thread_idle = 1000 };
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1, .queue = self->q };
	struct io_uring r;
	struct cqe c;

	ASSERT_EQ(0, io_uring_queue_init_params(8, &r, &p));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, run(&r, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), &c));
		EXPECT_EQ(0, c.res);
		EXPECT_EQ(i + 1, c.res2);
	}
	/* A parked command of an SQPOLL ring is cancelled when it closes. */
	struct drm_npu_uring_event_wait ew = { .deadline_ns = npu_deadline(-1), .id = self->gate };

	ASSERT_EQ(0, prep(&r, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 1));
	ASSERT_EQ(1, io_uring_submit(&r));
	EXPECT_EQ(1, parked_settles(1));
	io_uring_queue_exit(&r);
	EXPECT_EQ(0, parked_settles(0));
}

FIXTURE(reset) {
	int fd;
	struct io_uring ring;
	uint32_t q, ev;
};

FIXTURE_SETUP(reset)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	if (npu_inject("clear"))
		SKIP(return, "no fault injection (npu-fwsim --fault-injection, debugfs)");
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, URING_FLAGS));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 30000, &self->q));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &self->ev));
}

FIXTURE_TEARDOWN(reset)
{
	npu_inject("clear");
	io_uring_queue_exit(&self->ring);
	close(self->fd);
	EXPECT_EQ(0, parked_settles(0));
}

TEST_F(reset, a_device_reset_completes_parked_commands_with_the_reset_status)
{
	struct drm_npu_task t = task1(DRM_NPU_TASK_NOP, 0);
	struct drm_npu_submit s = { .tasks = (uintptr_t)&t, .count = 1, .queue = self->q };
	struct drm_npu_uring_event_wait ew = { .deadline_ns = npu_deadline(-1), .id = self->ev };
	char cmd[32];
	struct cqe c;

	snprintf(cmd, sizeof(cmd), "hang %u", npu_client_id(self->fd));
	ASSERT_EQ(0, npu_inject(cmd));
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_SUBMIT, &s, sizeof(s), 1));
	ASSERT_EQ(0, prep(&self->ring, self->fd, DRM_NPU_URING_CMD_EVENT_WAIT, &ew, sizeof(ew), 2));
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	EXPECT_EQ(2, parked());
	ASSERT_EQ(0, npu_inject("heartbeat-stop"));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, reap(&self->ring, 10 * SEC, &c));
		EXPECT_EQ(-EIO, c.res);
		EXPECT_EQ(DRM_NPU_JOB_RESET, DRM_NPU_URING_RES2_STATUS(c.res2));
	}
}

TEST_HARNESS_MAIN
