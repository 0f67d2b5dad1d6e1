// SPDX-License-Identifier: MIT
/*
 * Events, notifies, timestamps and barriers: the device blocks a queue on
 * an event another queue records (no host in between), notifies release
 * exactly one wait per record and cross processes as fds, and the host can
 * query and wait for events.
 */
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_fw_if.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)

static struct drm_npu_task task1(uint16_t type, uint64_t arg)
{
	struct drm_npu_task t = { .type = type, .args = { arg } };

	return t;
}

FIXTURE(ev) {
	int fd;
	struct drm_npu_bo_create bo;
	uint32_t *map;
	uint32_t qa, qb;
};

FIXTURE_SETUP(ev)
{
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, npu_bo_create(self->fd, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &self->bo));
	self->map = npu_bo_mmap(self->fd, self->bo.handle, 1 << 20);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &self->qa));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &self->qb));
}

FIXTURE_TEARDOWN(ev)
{
	munmap(self->map, 1 << 20);
	close(self->fd);
}

TEST_F(ev, timestamps_and_barrier)
{
	struct drm_npu_task t[4] = {
		task1(DRM_NPU_TASK_TIMESTAMP, self->bo.device_va),
		npu_task_fill(self->bo.device_va + 4096, 512 << 10, 3),
		task1(DRM_NPU_TASK_BARRIER, 0),
		task1(DRM_NPU_TASK_TIMESTAMP, self->bo.device_va + 8),
	};
	uint64_t seq, *ts = (uint64_t *)self->map;

	t[2].args[0] = 0;
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, t, 4, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, self->qa, seq, 10 * SEC, NULL));
	EXPECT_NE(0, ts[0]);
	EXPECT_LT(ts[0], ts[1]);
	/* Misaligned timestamps are refused at submit. */
	t[0].args[0] = self->bo.device_va + 4;
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, self->qa, t, 1, &seq));
}

TEST_F(ev, record_query_reset_and_host_wait)
{
	struct drm_npu_event_query q = { 0 };
	struct drm_npu_event_wait w = { .deadline_ns = npu_deadline(100000000) };
	struct drm_npu_task t;
	uint64_t seq;
	uint32_t e;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &e));
	q.id = w.id = e;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_QUERY, &q));
	EXPECT_EQ(0, q.recorded);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
	EXPECT_EQ(ETIMEDOUT, errno);

	t = task1(DRM_NPU_TASK_EVENT_RECORD, e);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &t, 1, &seq));
	w.deadline_ns = npu_deadline(10 * SEC);
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_QUERY, &q));
	EXPECT_EQ(1, q.recorded);
	EXPECT_NE(0, q.timestamp_ns);

	t = task1(DRM_NPU_TASK_EVENT_RESET, e);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, self->qa, seq, 10 * SEC, NULL));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_QUERY, &q));
	EXPECT_EQ(0, q.recorded);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * WAIT and EVENT_WAIT take absolute CLOCK_MONOTONIC deadlines: one in the
 * past polls (negative ones too, down to INT64_MIN, where deadline - now
 * would overflow), a near one expires on time, and an
 * interrupted wait leaves the struct as it was (no write-back), so
 * calling again keeps the deadline.
 */
TEST_F(ev, waits_take_absolute_deadlines)
{
	const int64_t past[] = { -1, -5 * SEC, 1, mono_ns() - SEC, INT64_MIN, INT64_MIN + SEC };
	struct sigaction sa = { .sa_handler = on_alarm }, old;	/* no SA_RESTART */
	struct itimerval it = { .it_value = { 0, 50000 } };
	struct drm_npu_event_wait w = { 0 };
	struct drm_npu_wait qw = { .queue = self->qa };
	struct drm_npu_task t;
	int64_t start, deadline;
	uint64_t seq;
	uint32_t e;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &e));
	w.id = e;
	t = task1(DRM_NPU_TASK_EVENT_WAIT, e);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &t, 1, &seq));
	qw.seq = seq;
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		start = mono_ns();
		w.deadline_ns = qw.deadline_ns = past[i];
		EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
		EXPECT_EQ(ETIMEDOUT, errno);
		EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_WAIT, &qw));
		EXPECT_EQ(ETIMEDOUT, errno);
		EXPECT_GT(start + SEC, mono_ns()) TH_LOG("deadline %lld", (long long)past[i]);
	}
	start = mono_ns();
	w.deadline_ns = start + 200000000;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_LE(w.deadline_ns, mono_ns());
	qw.deadline_ns = mono_ns() + 200000000;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_WAIT, &qw));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_LE(qw.deadline_ns, mono_ns());
	EXPECT_GT(start + 5 * SEC, mono_ns());

	/* Interrupted: -EINTR, and the deadline is not rewritten. */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old));
	deadline = mono_ns() + 3 * SEC;
	w.deadline_ns = deadline;
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_WAIT, &w));
	EXPECT_EQ(EINTR, errno);
	EXPECT_EQ(deadline, w.deadline_ns);
	qw.deadline_ns = deadline;
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_WAIT, &qw));
	EXPECT_EQ(EINTR, errno);
	EXPECT_EQ(deadline, qw.deadline_ns);
	sigaction(SIGALRM, &old, NULL);

	t = task1(DRM_NPU_TASK_EVENT_RECORD, e);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qb, &t, 1, &seq));
	qw.deadline_ns = npu_deadline(10 * SEC);
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_WAIT, &qw));
}

TEST_F(ev, device_blocks_a_queue_on_another_queues_event)
{
	struct drm_npu_task wait_then_fill[2], rec;
	uint64_t sb, sa;
	uint32_t e;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &e));
	wait_then_fill[0] = task1(DRM_NPU_TASK_EVENT_WAIT, e);
	wait_then_fill[1] = npu_task_fill(self->bo.device_va + 4096, 4, 0xb);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qb, wait_then_fill, 2, &sb));
	/* Queue B is blocked on the device; its fill has not run. */
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(self->fd, self->qb, sb, 200000000, NULL));
	EXPECT_EQ(0, self->map[1024]);
	/* Queue A records: B goes on, with no host step in between. */
	rec = task1(DRM_NPU_TASK_EVENT_RECORD, e);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &rec, 1, &sa));
	EXPECT_EQ(0, npu_wait_on(self->fd, self->qb, sb, 10 * SEC, NULL));
	EXPECT_EQ(0xb, self->map[1024]);
}

TEST_F(ev, notify_releases_exactly_one_wait_per_record)
{
	struct drm_npu_task waits[4], rec;
	uint64_t sb, sa, first;
	uint32_t n;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	waits[0] = task1(DRM_NPU_TASK_NOTIFY_WAIT, n);
	waits[1] = npu_task_fill(self->bo.device_va + 4096, 4, 1);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qb, waits, 2, &first));
	waits[1] = npu_task_fill(self->bo.device_va + 8192, 4, 2);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qb, waits, 2, &sb));

	rec = task1(DRM_NPU_TASK_NOTIFY_RECORD, n);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &rec, 1, &sa));
	EXPECT_EQ(0, npu_wait_on(self->fd, self->qb, first, 10 * SEC, NULL));
	EXPECT_EQ(1, self->map[1024]);
	/* One record, one wait: the second stays blocked (auto-reset). */
	EXPECT_EQ(-ETIMEDOUT, npu_wait_on(self->fd, self->qb, sb, 200000000, NULL));
	EXPECT_EQ(0, self->map[2048]);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &rec, 1, &sa));
	EXPECT_EQ(0, npu_wait_on(self->fd, self->qb, sb, 10 * SEC, NULL));
	EXPECT_EQ(2, self->map[2048]);
}

TEST_F(ev, notify_crosses_processes_as_an_fd)
{
	struct drm_npu_notify_export ex = { 0 };
	struct drm_npu_task rec;
	uint64_t seq;
	uint32_t n;
	int status, ready[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	ex.id = n;
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &ex));
	ASSERT_LE(0, ex.fd);
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Another process, another context: it has the notify only via fd. */
		int fd = npu_open();
		struct drm_npu_notify_import im = { .fd = ex.fd };
		struct drm_npu_bo_create b;
		struct drm_npu_task t[2];
		uint64_t s;

		if (fd < 0 || ioctl(fd, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im) ||
		    npu_bo_create(fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &b))
			_exit(1);
		t[0] = task1(DRM_NPU_TASK_NOTIFY_WAIT, im.id);
		t[1] = npu_task_fill(b.device_va, 4, 9);
		if (npu_submit_on(fd, 0, t, 2, &s) || write(ready[1], "r", 1) != 1)
			_exit(2);
		_exit(npu_wait_on(fd, 0, s, 20 * SEC, NULL) ? 3 : 0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	rec = task1(DRM_NPU_TASK_NOTIFY_RECORD, n);
	ASSERT_EQ(0, npu_submit_on(self->fd, self->qa, &rec, 1, &seq));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* A context that never imported it cannot name it. */
	int other = npu_open();

	ASSERT_LE(0, other);
	EXPECT_EQ(-EINVAL, npu_submit_on(other, 0, &rec, 1, &seq));
	close(other);
	close(ex.fd);
	close(ready[0]);
	close(ready[1]);
}

TEST_F(ev, bad_arguments)
{
	struct drm_npu_sync_create c = { .kind = 3 };
	struct drm_npu_sync_destroy d = { .id = 4000 };
	struct drm_npu_event_query q = { 0 };
	struct drm_npu_notify_export ex = { 0 };
	struct drm_npu_notify_import im = { .fd = 999 };
	struct drm_npu_task t;
	uint64_t seq;
	uint32_t e, n;
	int p[2];

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SYNC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_SYNC_DESTROY, &d));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &e));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_NOTIFY, &n));
	/* Kinds do not mix. */
	q.id = n;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_EVENT_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	ex.id = e;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, &ex));
	EXPECT_EQ(EINVAL, errno);
	t = task1(DRM_NPU_TASK_NOTIFY_WAIT, e);
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, self->qa, &t, 1, &seq));
	t = task1(DRM_NPU_TASK_EVENT_RECORD, 4000);
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, self->qa, &t, 1, &seq));
	/* Only notify fds import. */
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im));
	EXPECT_EQ(EBADF, errno);
	ASSERT_EQ(0, pipe(p));
	im.fd = p[0];
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_NPU_NOTIFY_IMPORT, &im));
	EXPECT_EQ(EINVAL, errno);
	close(p[0]);
	close(p[1]);
	/* Destroyed, an id is no longer this context's. */
	d.id = e;
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_NPU_SYNC_DESTROY, &d));
	t = task1(DRM_NPU_TASK_EVENT_RECORD, e);
	EXPECT_EQ(-EINVAL, npu_submit_on(self->fd, self->qa, &t, 1, &seq));
}

/*
 * A context holds at most its quota (-EDQUOT), so no file takes the whole
 * table; files together fill it (-ENOSPC), and closing gives it back.
 */
TEST(the_table_fills_up_by_quota_and_empties_on_close)
{
	int fds[NPU_FW_MAX_SYNCS], nfds = 0, n = 0, ret = 0, in_first = 0;
	uint64_t quota = 0;
	uint32_t id;

	fds[nfds] = npu_open();
	ASSERT_LE(0, fds[nfds]);
	ASSERT_EQ(0, npu_get_param(fds[0], DRM_NPU_PARAM_SYNCS_PER_CONTEXT, &quota));
	ASSERT_LT(0, quota);
	ASSERT_GT(NPU_FW_MAX_SYNCS, quota);
	while (ret != -ENOSPC && nfds < NPU_FW_MAX_SYNCS) {
		int in_this = 0;

		while (!(ret = npu_sync_create(fds[nfds], DRM_NPU_SYNC_EVENT, &id)))
			in_this++;
		n += in_this;
		if (!nfds)
			in_first = in_this;
		if (ret == -EDQUOT)
			EXPECT_EQ(quota, in_this);
		ASSERT_TRUE(ret == -EDQUOT || ret == -ENOSPC) TH_LOG("%d", ret);
		nfds++;
		if (ret == -EDQUOT) {
			fds[nfds] = npu_open();
			ASSERT_LE(0, fds[nfds]);
		}
	}
	EXPECT_EQ(quota, in_first);
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_LT(1000, n);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	/* Everything the closed files held is free again. */
	for (int i = 0; i < n; i += quota) {
		int fd = npu_open();

		ASSERT_LE(0, fd);
		for (int j = i; j < n && j < i + (int)quota; j++) {
			ASSERT_EQ(0, npu_sync_create(fd, DRM_NPU_SYNC_EVENT, &id)) TH_LOG("%d", j);
		}
		fds[i / quota] = fd;
	}
	for (int i = 0; i < n; i += quota)
		close(fds[i / quota]);
}

TEST_HARNESS_MAIN
