// SPDX-License-Identifier: MIT
/*
 * Timeouts and recovery, driven by the firmware's fault injection
 * (npu-fwsim --fault-injection, through debugfs npu_inject): a hung queue
 * is detected by lack of progress and its waiters fail in time while other
 * contexts go on, and its job is freed; lost interrupts cost latency
 * only; a stopped heartbeat resets the device, which stays usable.
 */
#include <dirent.h>
#include <pthread.h>
#include <time.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

/* The default queue failed with everything else in a reset: replace it. */
static int queue_destroy_default(int fd)
{
	struct drm_npu_queue_destroy d = { .queue = 0 };

	return ioctl(fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d) && errno != EINVAL ? -errno : 0;
}

FIXTURE(rec) {
	int a, b;
	struct drm_npu_bo_create ba, bb;
};

FIXTURE_SETUP(rec)
{
	uint64_t caps = 0;

	self->a = npu_open();
	self->b = npu_open();
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
	ASSERT_EQ(0, npu_get_param(self->a, DRM_NPU_PARAM_DEVICE_CAPS, &caps));
	if (!(caps & DRM_NPU_CAP_FAULT_INJECTION) || npu_inject("clear"))
		SKIP(return, "no fault injection (npu-fwsim --fault-injection, debugfs)");
	ASSERT_EQ(0, npu_bo_create(self->a, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &self->ba));
	ASSERT_EQ(0, npu_bo_create(self->b, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &self->bb));
}

FIXTURE_TEARDOWN(rec)
{
	npu_inject("clear");
	close(self->a);
	close(self->b);
}

TEST_F(rec, hung_queue_fails_in_time_and_others_go_on)
{
	struct drm_npu_task t = npu_task_fill(self->ba.device_va, 4096, 1);
	struct drm_npu_wait w;
	char cmd[32];
	uint32_t q;
	uint64_t seq, seq_b;
	int64_t t0, elapsed;

	ASSERT_EQ(0, npu_queue_create(self->a, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 500, &q));
	snprintf(cmd, sizeof(cmd), "hang %u", npu_client_id(self->a));
	ASSERT_EQ(0, npu_inject(cmd));
	t0 = now_ns();
	ASSERT_EQ(0, npu_submit_on(self->a, q, &t, 1, &seq));
	/* Meanwhile another context's work completes. */
	t = npu_task_fill(self->bb.device_va, 4096, 2);
	ASSERT_EQ(0, npu_submit_on(self->b, 0, &t, 1, &seq_b));
	EXPECT_EQ(0, npu_wait_on(self->b, 0, seq_b, 10 * SEC, &w));

	EXPECT_EQ(-EIO, npu_wait_on(self->a, q, seq, 10 * SEC, &w));
	elapsed = now_ns() - t0;
	EXPECT_EQ(DRM_NPU_JOB_TIMEOUT, w.status);
	/* Within the queue's limit plus a second. */
	EXPECT_GT(1500 * 1000000ll, elapsed) TH_LOG("took %lld ms", (long long)(elapsed / 1000000));
	EXPECT_LT(450 * 1000000ll, elapsed);
	t = npu_task_fill(self->ba.device_va, 4096, 3);
	EXPECT_EQ(-EIO, npu_submit_on(self->a, q, &t, 1, &seq));

	/* With the hang gone, a new queue of the same context works. */
	ASSERT_EQ(0, npu_inject("clear"));
	uint32_t q2;

	ASSERT_EQ(0, npu_queue_create(self->a, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q2));
	ASSERT_EQ(0, npu_submit_on(self->a, q2, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->a, q2, seq, 10 * SEC, &w));
}

/*
 * `rounds` times: a queue whose task hangs times out after 1 ms and is
 * destroyed at once. 0, or the step that went wrong.
 */
static int time_out_and_destroy(int fd, uint64_t va, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		struct drm_npu_task t = npu_task_fill(va, 4096, i);
		struct drm_npu_wait w;
		uint64_t seq;
		uint32_t q;

		if (npu_queue_create(fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 1, &q) ||
		    npu_submit_on(fd, q, &t, 1, &seq))
			return 2;
		if (npu_wait_on(fd, q, seq, 10 * SEC, &w) != -EIO || w.status != DRM_NPU_JOB_TIMEOUT)
			return 3;
		if (npu_queue_destroy(fd, q))
			return 4;
	}
	return 0;
}

/*
 * The scheduler's timeout handler holds a job off its pending list while
 * the driver stops the queue, which signals the job's fence: the free
 * work that signal queues may run before the job is back on the list and
 * miss it (6.8+, a workqueue; 6.1 has a thread to wake), so the driver
 * queues it again. The window is microseconds wide; "hold-timeout"
 * widens it to 5 ms, so every round goes through it. A job never freed
 * keeps its queue's destruction waiting forever: many short timeouts,
 * each queue destroyed at once, in a child the test can give up on (a
 * destruction that never returns cannot be interrupted).
 */
TEST_F(rec, every_timed_out_job_is_freed)
{
	int status = 0;
	char cmd[32];
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "hang %u", npu_client_id(self->a));
	ASSERT_EQ(0, npu_inject(cmd));
	ASSERT_EQ(0, npu_inject("hold-timeout 5"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(time_out_and_destroy(self->a, self->ba.device_va, 50));
	ASSERT_EQ(pid, npu_wait_child(pid, &status, 20)) TH_LOG("a timed-out queue's destruction has waited 20 s");
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("step %d failed", WEXITSTATUS(status));
}

/* A kworker whose comm names workqueue `wq` as the one it runs work of. */
static bool a_worker_runs(const char *wq)
{
	char path[300], comm[96], want[40];
	struct dirent *d;
	bool found = false;
	DIR *dir = opendir("/proc");

	snprintf(want, sizeof(want), "+%s", wq);
	while (dir && !found && (d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
		    npu_read_file(path, comm, sizeof(comm)))
			continue;
		found = !strncmp(comm, "kworker/", 8) && strstr(comm, want);
	}
	if (dir)
		closedir(dir);
	return found;
}

/*
 * The schedulers' timeout handlers run on the driver's own ordered
 * workqueue, not on system_wq, where a handler's mailbox round trip and
 * sleeps held up everyone's work. A kworker's comm names the workqueue
 * of the work it runs ("kworker/u4:1+npu-timeout"): seen during a
 * handler held 100 ms ("hold-timeout").
 */
TEST_F(rec, timeouts_run_on_the_drivers_own_workqueue)
{
	struct drm_npu_task t = npu_task_fill(self->ba.device_va, 4096, 6);
	struct drm_npu_wait w;
	bool seen = false;
	uint64_t seq;
	char cmd[32];
	uint32_t q;

	snprintf(cmd, sizeof(cmd), "hang %u", npu_client_id(self->a));
	ASSERT_EQ(0, npu_inject(cmd));
	ASSERT_EQ(0, npu_inject("hold-timeout 100"));
	ASSERT_EQ(0, npu_queue_create(self->a, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 1, &q));
	ASSERT_EQ(0, npu_submit_on(self->a, q, &t, 1, &seq));
	for (int i = 0; i < 500 && !seen; i++) {
		seen = a_worker_runs("npu-timeout");
		usleep(2000);
	}
	EXPECT_TRUE(seen);
	EXPECT_EQ(-EIO, npu_wait_on(self->a, q, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_TIMEOUT, w.status);
	EXPECT_EQ(0, npu_queue_destroy(self->a, q));
}

TEST_F(rec, lost_interrupts_cost_latency_not_a_hang)
{
	struct drm_npu_task t = npu_task_fill(self->ba.device_va, 4096, 4);
	struct drm_npu_wait w;
	uint64_t seq;

	ASSERT_EQ(0, npu_inject("drop-irqs 1000"));
	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));
		EXPECT_EQ(0, npu_wait_on(self->a, 0, seq, 5 * SEC, &w));
	}
}

TEST_F(rec, stopped_heartbeat_resets_the_device)
{
	struct drm_npu_task t = npu_task_fill(self->ba.device_va, 4096, 5);
	struct drm_npu_wait w;
	uint64_t seq, beat1 = 0, beat2 = 0, rtt;
	char cmd[32];
	uint32_t q;

	/* Work that cannot finish, on a queue patient enough to wait it out. */
	ASSERT_EQ(0, npu_queue_create(self->a, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 30000, &q));
	snprintf(cmd, sizeof(cmd), "hang %u", npu_client_id(self->a));
	ASSERT_EQ(0, npu_inject(cmd));
	ASSERT_EQ(0, npu_submit_on(self->a, q, &t, 1, &seq));
	ASSERT_EQ(0, npu_inject("heartbeat-stop"));

	EXPECT_EQ(-EIO, npu_wait_on(self->a, q, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_RESET, w.status);

	/* The device is usable again: heartbeat, mailbox, new work. */
	ASSERT_EQ(0, npu_get_param(self->b, DRM_NPU_PARAM_FW_HEARTBEAT, &beat1));
	usleep(500000);
	ASSERT_EQ(0, npu_get_param(self->b, DRM_NPU_PARAM_FW_HEARTBEAT, &beat2));
	EXPECT_LT(beat1, beat2);
	EXPECT_EQ(0, npu_fw_ping(self->b, &rtt));
	ASSERT_EQ(0, queue_destroy_default(self->b));
	t = npu_task_fill(self->bb.device_va, 4096, 6);
	ASSERT_EQ(0, npu_submit_on(self->b, 0, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->b, 0, seq, 10 * SEC, &w));
}

/*
 * A TLB invalidation the device does not confirm leaves stale entries
 * that may still reach the buffer's memory: the driver wedges the device,
 * keeps that memory out of use, resets the device at once and only then
 * gives the memory back. Other contexts' work fails with the reset, and
 * the device takes new work afterwards.
 */
TEST_F(rec, a_failed_invalidation_quarantines_memory_until_a_reset)
{
	long long resets = npu_debugfs_value("npu_queues", "device resets: ");
	struct drm_npu_task t = npu_task_fill(self->ba.device_va, 1 << 20, 9);
	struct drm_npu_bo_create c;
	struct drm_npu_wait w;
	uint64_t seq, used;

	ASSERT_LE(0, resets);
	used = npu_dev_usage(self->a, DRM_NPU_MEM_REGION_HBM);
	/* The device has translations of the buffer cached. */
	ASSERT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait_on(self->a, 0, seq, 10 * SEC, &w));
	ASSERT_EQ(0, npu_inject("fail-invalidate 1"));
	ASSERT_EQ(0, npu_gem_close(self->a, self->ba.handle));
	/*
	 * The mapping goes when the last batch using it is freed: then the
	 * memory is quarantined, or the device already reset; never simply
	 * freed.
	 */
	for (int i = 0; i < 50 && npu_debugfs_value("npu_queues", "device resets: ") == resets &&
			npu_debugfs_value("npu_mem", "quarantined until a reset: ") <= 0; i++)
		usleep(100000);
	/* The reset releases the quarantine once it has succeeded. */
	for (int i = 0; i < 50 && (npu_debugfs_value("npu_queues", "device resets: ") == resets ||
				   npu_debugfs_value("npu_queues", "wedged: ")); i++)
		usleep(100000);
	EXPECT_EQ(resets + 1, npu_debugfs_value("npu_queues", "device resets: "));
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "wedged: "));
	EXPECT_EQ(0, npu_debugfs_value("npu_mem", "quarantined until a reset: "));
	EXPECT_EQ(used - (1 << 20), npu_usage_settles(self->b, DRM_NPU_MEM_REGION_HBM, used - (1 << 20)));
	/* The reset failed the default queue; a new buffer and queue work. */
	ASSERT_EQ(0, queue_destroy_default(self->a));
	ASSERT_EQ(0, npu_bo_create(self->a, 1 << 20, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c));
	t = npu_task_fill(c.device_va, 1 << 20, 10);
	ASSERT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->a, 0, seq, 10 * SEC, &w));
}

struct closer {
	int fd;
	uint32_t handle;
	int ret;
	volatile int done;
};

static void *close_bo(void *arg)
{
	struct closer *c = arg;

	c->ret = npu_gem_close(c->fd, c->handle);
	c->done = 1;
	return NULL;
}

struct starter {
	int fd;
	uint32_t queue;
	struct drm_npu_bo_create bo;
	int ret;
	volatile int done;
};

static void *create_bo(void *arg)
{
	struct starter *s = arg;

	s->ret = npu_bo_create(s->fd, 4096, 0, &s->bo);
	s->done = 1;
	return NULL;
}

static void *start_queue(void *arg)
{
	struct starter *s = arg;

	s->ret = npu_queue_create(s->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &s->queue);
	s->done = 1;
	return NULL;
}

/* Waits for *flag, at most `ms`: whether it was set. */
static int settles(volatile int *flag, int ms)
{
	for (int i = 0; i < ms / 10 && !*flag; i++)
		usleep(10000);
	return *flag;
}

#define IPC_TIMEOUT "/sys/module/npu/parameters/ipc_timeout_ms"

/*
 * A TLB invalidation the device takes its time over (the firmware waits
 * for launches reading the memory in place; here an injected hold keeps
 * it) holds up only the close that asked for it: another context starts
 * a queue through the mailbox meanwhile, and the same context makes a
 * buffer. Sent as a mailbox command under the context's lock, it held
 * both: every user's QUEUE_START, QUEUE_STOP and SCRUB, and the
 * context's every mapping, waited for it.
 */
TEST_F(rec, an_invalidation_the_device_holds_holds_up_no_one_else)
{
	struct closer c = { .fd = self->a, .handle = self->ba.handle };
	struct starter st = { .fd = self->b }, mk = { .fd = self->a };
	struct drm_npu_task t = npu_task_fill(self->ba.device_va, 1 << 20, 9);
	char old[32] = "2000";
	pthread_t ct, sth, mkt;
	uint64_t seq;

	/* The hold must not outlast the driver's patience: no wedge here. */
	ASSERT_EQ(0, npu_read_file(IPC_TIMEOUT, old, sizeof(old)));
	ASSERT_EQ(0, npu_sysfs_write(IPC_TIMEOUT, "30000"));
	ASSERT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));
	ASSERT_EQ(0, npu_wait_on(self->a, 0, seq, 10 * SEC, NULL));
	ASSERT_EQ(0, npu_inject("hold-invalidate"));
	ASSERT_EQ(0, pthread_create(&ct, NULL, close_bo, &c));
	EXPECT_FALSE(settles(&c.done, 300));	/* waiting on the device */

	ASSERT_EQ(0, pthread_create(&sth, NULL, start_queue, &st));
	ASSERT_EQ(0, pthread_create(&mkt, NULL, create_bo, &mk));
	EXPECT_TRUE(settles(&st.done, 5000));
	EXPECT_TRUE(settles(&mk.done, 5000));
	EXPECT_FALSE(c.done);

	ASSERT_EQ(0, npu_inject("clear"));
	EXPECT_TRUE(settles(&c.done, 20000));
	pthread_join(ct, NULL);
	pthread_join(sth, NULL);
	pthread_join(mkt, NULL);
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(0, st.ret);
	EXPECT_EQ(0, mk.ret);
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "wedged: "));
	/* Both contexts go on. */
	t = npu_task_fill(mk.bo.device_va, 4096, 3);
	EXPECT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));
	EXPECT_EQ(0, npu_wait_on(self->a, 0, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, npu_queue_destroy(self->b, st.queue));
	npu_sysfs_write(IPC_TIMEOUT, old);
}

/*
 * A FILL is submitted naming a buffer whose close is waiting on the
 * device's invalidation (held here): the buffer is going, its range not
 * yet given back. The range stays out of the allocator until the FILL
 * has run: a buffer created after the close lands elsewhere and reads
 * zero, and the FILL faults.
 */
TEST_F(rec, a_range_named_while_its_buffer_goes_stays_held)
{
	struct drm_npu_sync_create ev = { .kind = DRM_NPU_SYNC_EVENT };
	struct closer c = { .fd = self->a, .handle = self->ba.handle };
	const uint64_t va = self->ba.device_va, size = 1 << 20;
	struct drm_npu_bo_create fresh;
	struct drm_npu_task t;
	struct drm_npu_wait w;
	char old[32] = "2000";
	uint64_t seq, rec, i, nonzero = 0;
	uint32_t other, *p;
	pthread_t ct;

	ASSERT_EQ(0, npu_read_file(IPC_TIMEOUT, old, sizeof(old)));
	ASSERT_EQ(0, npu_sysfs_write(IPC_TIMEOUT, "30000"));
	ASSERT_EQ(0, ioctl(self->a, DRM_IOCTL_NPU_SYNC_CREATE, &ev));
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev.id } };
	ASSERT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));

	ASSERT_EQ(0, npu_inject("hold-invalidate"));
	ASSERT_EQ(0, pthread_create(&ct, NULL, close_bo, &c));
	EXPECT_FALSE(settles(&c.done, 300));	/* the buffer is going */
	t = npu_task_fill(va, size, 0x7560c694);
	EXPECT_EQ(0, npu_submit_on(self->a, 0, &t, 1, &seq));
	ASSERT_EQ(0, npu_inject("clear"));
	EXPECT_TRUE(settles(&c.done, 20000));
	pthread_join(ct, NULL);
	EXPECT_EQ(0, c.ret);

	ASSERT_EQ(0, npu_bo_create(self->a, size, DRM_NPU_BO_PAGE_NORMAL_ONLY, &fresh));
	EXPECT_NE(va, fresh.device_va);
	ASSERT_EQ(0, npu_queue_create(self->a, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &other));
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { ev.id } };
	ASSERT_EQ(0, npu_submit_on(self->a, other, &t, 1, &rec));
	EXPECT_EQ(-EIO, npu_wait_on(self->a, 0, seq, 10 * SEC, &w));
	EXPECT_EQ(DRM_NPU_JOB_FAULT, w.status);
	EXPECT_EQ(va, w.fault_address);

	p = npu_bo_mmap(self->a, fresh.handle, size);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < size / 4; i++)
		nonzero += p[i] != 0;
	EXPECT_EQ(0, nonzero) TH_LOG("first word %#x", p[0]);
	munmap(p, size);
	npu_sysfs_write(IPC_TIMEOUT, old);
}

/*
 * A context's locks are one per concern: while one of its mappings holds
 * the VM lock (held a second here, as a huge map over a slow bus would),
 * the same context still creates and destroys queues, events and
 * notifies, and queries an event. Only another mapping waits.
 */
TEST_F(rec, a_slow_mapping_holds_up_only_the_contexts_mappings)
{
	struct starter mk = { .fd = self->a }, mk2 = { .fd = self->a };
	struct drm_npu_event_query eq = { 0 };
	struct drm_npu_sync_destroy sd = { 0 };
	uint32_t q, ev, nt;
	pthread_t t1, t2;

	ASSERT_EQ(0, npu_inject("hold-map 1000"));
	ASSERT_EQ(0, pthread_create(&t1, NULL, create_bo, &mk));
	EXPECT_FALSE(settles(&mk.done, 200));	/* mapping, the lock held */
	ASSERT_EQ(0, pthread_create(&t2, NULL, create_bo, &mk2));

	EXPECT_EQ(0, npu_queue_create(self->a, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &q));
	EXPECT_EQ(0, npu_sync_create(self->a, DRM_NPU_SYNC_EVENT, &ev));
	EXPECT_EQ(0, npu_sync_create(self->a, DRM_NPU_SYNC_NOTIFY, &nt));
	eq.id = ev;
	EXPECT_EQ(0, ioctl(self->a, DRM_IOCTL_NPU_EVENT_QUERY, &eq));
	EXPECT_EQ(0, eq.recorded);
	sd.id = nt;
	EXPECT_EQ(0, ioctl(self->a, DRM_IOCTL_NPU_SYNC_DESTROY, &sd));
	EXPECT_EQ(0, npu_queue_destroy(self->a, q));
	EXPECT_FALSE(mk.done);
	EXPECT_FALSE(mk2.done);			/* behind the first */

	ASSERT_EQ(0, npu_inject("clear"));
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	EXPECT_EQ(0, mk.ret);
	EXPECT_EQ(0, mk2.ret);
}

struct informer {
	int fd;
	uint32_t handle;
	int ret;
	struct drm_npu_bo_info info;
};

static void *bo_info(void *arg)
{
	struct informer *i = arg;

	i->ret = npu_bo_info(i->fd, i->handle, &i->info);
	return NULL;
}

/*
 * BO_INFO finds a handle, and another thread of the file closes it before
 * BO_INFO reads the buffer's mapping (the window held open 300 ms): the
 * answer is "no such handle", as if BO_INFO had come after the close, not
 * a buffer at device VA 0 (the fuzzer found that on the debug kernel).
 */
TEST_F(rec, a_handle_closed_during_bo_info_is_not_found)
{
	struct informer in = { .fd = self->a, .handle = self->ba.handle };
	pthread_t th;

	ASSERT_EQ(0, npu_inject("hold-info 300"));
	ASSERT_EQ(0, pthread_create(&th, NULL, bo_info, &in));
	usleep(100000);
	EXPECT_EQ(0, npu_gem_close(self->a, self->ba.handle));
	pthread_join(th, NULL);
	ASSERT_EQ(0, npu_inject("clear"));
	EXPECT_EQ(-ENOENT, in.ret) TH_LOG("va %#llx", (unsigned long long)in.info.device_va);
	EXPECT_EQ(-ENOENT, npu_bo_info(self->a, self->ba.handle, &in.info));
}

struct creator {
	int fd;
	int ret;
	struct drm_npu_bo_create bo;
};

static void *create_held_bo(void *arg)
{
	struct creator *c = arg;

	c->ret = npu_bo_create(c->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &c->bo);
	return NULL;
}

/*
 * BO_CREATE makes the handle, and another thread of the file closes it
 * before BO_CREATE answers (the window held open 300 ms): the answer is
 * still the buffer's device address, as if the close had come after,
 * not 0 (the fuzzer found that from a forked process sharing the file).
 */
TEST_F(rec, a_buffer_closed_before_its_creation_answers_keeps_its_address)
{
	struct creator c = { .fd = npu_open() };
	pthread_t th;

	ASSERT_LE(0, c.fd);
	ASSERT_EQ(0, npu_inject("hold-info 300"));
	ASSERT_EQ(0, pthread_create(&th, NULL, create_held_bo, &c));
	usleep(100000);
	/* A new file's first handle is 1. */
	EXPECT_EQ(0, npu_gem_close(c.fd, 1));
	pthread_join(th, NULL);
	ASSERT_EQ(0, npu_inject("clear"));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(1, c.bo.handle);
	EXPECT_LE(DRM_NPU_VA_BASE, c.bo.device_va) TH_LOG("va %#llx", (unsigned long long)c.bo.device_va);
	EXPECT_EQ(-ENOENT, npu_bo_info(c.fd, 1, &(struct drm_npu_bo_info){ 0 }));
	close(c.fd);
}

TEST_F(rec, bad_injections_are_refused)
{
	EXPECT_EQ(-EINVAL, npu_inject("bogus"));
	EXPECT_EQ(-EINVAL, npu_inject("hang"));
	EXPECT_EQ(-EINVAL, npu_inject("hold-timeout"));
	EXPECT_EQ(-EINVAL, npu_inject("hold-timeout 101"));
	EXPECT_EQ(-EINVAL, npu_inject("hold-invalidate 1"));
	EXPECT_EQ(-EINVAL, npu_inject("hold-info 1001"));
	EXPECT_EQ(0, npu_inject("hold-timeout 100"));
	EXPECT_EQ(0, npu_inject("clear"));
}

TEST_HARNESS_MAIN
