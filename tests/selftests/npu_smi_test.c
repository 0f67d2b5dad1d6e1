// SPDX-License-Identifier: MIT
/*
 * npu-smi against npu.ko in the VM: while this process holds the device
 * with known memory and a queue held busy, the tool must name it, count
 * its memory and queue, measure engine time, redraw in watch mode until
 * SIGINT, and fail with the documented statuses.
 */
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define MiB (1ull << 20)
#define SEC (1000000000ll)

/* build/bin/npu-smi, found from this binary (build/tests/selftests/...). */
static const char *smi(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n;

	if (path[0])
		return path;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return "build/bin/npu-smi";
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../../bin/npu-smi", dirname(exe));
	return path;
}

/* Run `npu-smi ARGS` (through sh, stderr too): its exit status, or -1. */
static int run(const char *prefix, const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX + 256];

	/* No terminal on stdin: watch would take it for keys. */
	snprintf(cmd, sizeof(cmd), "%s %s %s </dev/null 2>&1", prefix, smi(), args);
	return npu_run(cmd, out, len);
}

/* Whether out begins with prefix. */
static bool starts(const char *out, const char *prefix)
{
	return !strncmp(out, prefix, strlen(prefix));
}

/* The number after " key=" on the record line starting with `head`. */
static long long field(const char *out, const char *head, const char *key)
{
	char k[64];
	const char *line = out, *end, *v;

	snprintf(k, sizeof(k), " %s=", key);
	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, head, strlen(head)))
			continue;
		end = strchr(line, '\n');
		v = strstr(line, k);
		if (v && (!end || v < end))
			return strtoll(v + strlen(k), NULL, 10);
	}
	return -1;
}

/* "HBM in use N bytes" of the human output, as tests/selftests/run reads it. */
static long long hbm_in_use(const char *out)
{
	const char *p = strstr(out, "HBM in use");

	return p ? strtoll(p + strlen("HBM in use"), NULL, 10) : -1;
}

static void head_of(char *head, size_t len, int client)
{
	snprintf(head, len, "process device=0 pid=%d comm=npu_smi_test client=%d ", (int)getpid(),
		 client);
}

NPU_BASELINE_FIXTURE(smi);

TEST_F(smi, lists_this_process_its_memory_and_busy_queue)
{
	static char out[65536];
	struct drm_npu_bo_create bo;
	struct drm_npu_task t;
	uint32_t q, ev;
	uint64_t seq, s2;
	char head[128], needle[128];
	int client = (int)npu_client_id(self->fd);

	ASSERT_LT(0, client);
	ASSERT_EQ(0, npu_bo_create(self->fd, 48 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo));
	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_HIGH, 0, 30000, &q));
	ASSERT_EQ(0, npu_sync_create(self->fd, DRM_NPU_SYNC_EVENT, &ev));
	/* Held busy: waits for an event nobody records until the end. */
	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_WAIT, .args = { ev } };
	ASSERT_EQ(0, npu_submit_on(self->fd, q, &t, 1, &seq));

	EXPECT_EQ(0, run("", "-d 0 -n 0 --raw", out, sizeof(out))) TH_LOG("%s", out);
	head_of(head, sizeof(head), client);
	EXPECT_LE((long long)(48 * MiB), field(out, head, "hbm")) TH_LOG("%s", out);
	if (geteuid() == 0) {
		snprintf(needle, sizeof(needle), "queue device=0 hw=");
		EXPECT_NE(NULL, strstr(out, needle)) TH_LOG("%s", out);
		snprintf(needle, sizeof(needle), " client=%d pid=%d queue=%u prio=high ", client,
			 (int)getpid(), q);
		EXPECT_NE(NULL, strstr(out, needle)) TH_LOG("%s", out);
		snprintf(needle, sizeof(needle), "queue=%u prio=high state=running", q);
		EXPECT_NE(NULL, strstr(out, needle)) TH_LOG("%s", out);
	}

	/* The tables people read name the same process and command. */
	EXPECT_EQ(0, run("", "-d 0 -n 0", out, sizeof(out))) TH_LOG("%s", out);
	snprintf(needle, sizeof(needle), "%7d  %-15s %7d ", (int)getpid(), "npu_smi_test", client);
	EXPECT_NE(NULL, strstr(out, needle)) TH_LOG("%s", out);
	if (geteuid() == 0) {
		snprintf(needle, sizeof(needle), "%7d  %-15s %5u %-8s", (int)getpid(), "npu_smi_test",
			 q, "high");
		EXPECT_NE(NULL, strstr(out, needle)) TH_LOG("%s", out);
	}

	t = (struct drm_npu_task){ .type = DRM_NPU_TASK_EVENT_RECORD, .args = { ev } };
	ASSERT_EQ(0, npu_submit(self->fd, &t, 1, &s2));
	EXPECT_EQ(0, npu_wait_on(self->fd, q, seq, 10 * SEC, NULL));
	EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
}

TEST_F(smi, hbm_used_grows_by_the_allocation)
{
	static char out[65536];
	struct drm_npu_bo_create bo;
	long long before, after, raw;

	ASSERT_EQ(0, run("", "-d 0 -n 0", out, sizeof(out))) TH_LOG("%s", out);
	before = hbm_in_use(out);
	ASSERT_LE(0, before) TH_LOG("%s", out);
	ASSERT_EQ(0, npu_bo_create(self->fd, 64 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo));
	ASSERT_EQ(0, run("", "-d 0 -n 0", out, sizeof(out))) TH_LOG("%s", out);
	after = hbm_in_use(out);
	/* The buffer, plus at most a little of page tables for it. */
	EXPECT_LE(before + (long long)(64 * MiB), after);
	EXPECT_GT(before + (long long)(65 * MiB), after);
	ASSERT_EQ(0, run("", "-d 0 -n 0 --raw", out, sizeof(out))) TH_LOG("%s", out);
	raw = field(out, "device index=0 ", "hbm_used");
	EXPECT_EQ(after, raw);
	EXPECT_LE((long long)(64 * MiB), field(out, "device index=0 ", "hbm_buffers_peak"));
	EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
}

struct busy {
	int fd;
	uint64_t va;
	volatile int stop;
};

/* Keeps a queue working: fills, each waited for, until told to stop. */
static void *keep_busy(void *arg)
{
	struct busy *b = arg;
	struct drm_npu_task t = npu_task_fill(b->va, 16 * MiB, 7);
	uint64_t seq;

	while (!b->stop) {
		if (npu_submit(b->fd, &t, 1, &seq) || npu_wait(b->fd, seq, 10 * SEC, NULL))
			break;
	}
	return NULL;
}

TEST_F(smi, busy_percentages_come_from_engine_time)
{
	static char out[65536];
	struct drm_npu_bo_create bo;
	struct busy b = { .fd = self->fd };
	char head[128];
	pthread_t th;

	ASSERT_EQ(0, npu_bo_create(self->fd, 16 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo));
	b.va = bo.device_va;
	ASSERT_EQ(0, pthread_create(&th, NULL, keep_busy, &b));
	EXPECT_EQ(0, run("", "-d 0 -n 1 --raw", out, sizeof(out))) TH_LOG("%s", out);
	b.stop = 1;
	pthread_join(th, NULL);
	head_of(head, sizeof(head), (int)npu_client_id(self->fd));
	/* The fills run back to back: well over a tenth of the second. */
	EXPECT_LE(10, field(out, head, "busy_pct")) TH_LOG("%s", out);
	EXPECT_LT(0, field(out, head, "engine_ns")) TH_LOG("%s", out);
	EXPECT_LE(10, field(out, "device index=0 ", "busy_pct")) TH_LOG("%s", out);
	EXPECT_GE(100, field(out, "device index=0 ", "busy_pct")) TH_LOG("%s", out);
	EXPECT_LE(1000, field(out, "device index=0 ", "interval_ms")) TH_LOG("%s", out);
	EXPECT_GT(2000, field(out, "device index=0 ", "interval_ms")) TH_LOG("%s", out);
	EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
}

/* Occurrences of the clear-screen sequence that starts each frame. */
static int frames(const char *out)
{
	int n = 0;

	for (const char *p = out; (p = strstr(p, "\033[H\033[2J")); p++)
		n++;
	return n;
}

TEST(watch_redraws_until_sigint_and_exits_0)
{
	static char out[262144];
	int st = run("timeout --preserve-status -s INT 3", "watch -n 1 -d 0", out, sizeof(out));

	EXPECT_EQ(0, st) TH_LOG("%s", out);
	EXPECT_LE(2, frames(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "npu-smi watch: every 1.0 s"));
	EXPECT_NE(NULL, strstr(out, "HBM in use"));
}

/* Open files of a process, from /proc. */
static int fd_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Read what the pipe holds without blocking; true if it held `want`. */
static bool drain(int fd, const char *want)
{
	static char tail[64];
	char buf[4096 + sizeof(tail)];
	bool seen = false;
	ssize_t n;

	while ((n = read(fd, buf + strlen(tail), 4096)) > 0) {
		size_t keep = strlen(tail);

		memcpy(buf, tail, keep);
		buf[keep + n] = '\0';
		seen |= want && strstr(buf, want);
		/* A match may straddle two reads. */
		keep = keep + n < sizeof(tail) - 1 ? keep + n : sizeof(tail) - 1;
		memcpy(tail, buf + strlen(buf) - keep, keep);
		tail[keep] = '\0';
	}
	return seen;
}

/*
 * Files held between frames: the fewest seen over a second (a sample that
 * lands inside a frame also counts the files it reads), its output drained.
 */
static int held_fds(pid_t pid, int out)
{
	int n = -1;

	for (int i = 0; i < 20; i++) {
		int c = fd_count(pid);

		if (n < 0 || (c >= 0 && c < n))
			n = c;
		drain(out, NULL);
		usleep(50 * 1000);
	}
	return n;
}

/*
 * Counted once the first frame is out: before it the tool may still be
 * opening the device (on the debug kernel that outlasts half a second).
 */
TEST(watch_keeps_its_files_across_frames)
{
	int a, b, st, p[2], frames = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		close(null);
		execl(smi(), "npu-smi", "watch", "-n", "0.1", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ASSERT_EQ(0, fcntl(p[0], F_SETFL, O_NONBLOCK));
	for (int i = 0; i < 200 && !frames; i++) {
		frames = drain(p[0], "npu-smi watch:");
		usleep(50 * 1000);
	}
	a = held_fds(pid, p[0]);
	b = held_fds(pid, p[0]);	/* ten more frames at least */
	kill(pid, SIGINT);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	close(p[0]);
	EXPECT_TRUE(frames);
	EXPECT_LT(0, a);
	EXPECT_EQ(a, b);
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

/*
 * What nvidia-smi users reach for first: -L a line per NPU, --query a CSV
 * of chosen fields (units in the header, nounits and noheader as asked,
 * utilization measured over the interval), -V the versions.
 */
TEST_F(smi, list_query_and_version_answer_as_nvidia_smi_does)
{
	static char out[8192];
	struct drm_npu_bo_create bo;
	long long total, used;

	ASSERT_EQ(0, npu_bo_create(self->fd, 16 * MiB, DRM_NPU_BO_PAGE_HUGE_FIRST, &bo));
	EXPECT_EQ(0, run("", "-L", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_TRUE(starts(out, "NPU 0: npu at ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, ", firmware ")) TH_LOG("%s", out);

	EXPECT_EQ(0, run("", "--query=index,name,memory.total,memory.used --format=csv",
			 out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_TRUE(starts(out, "index, name, memory.total [MiB], memory.used [MiB]\n0, npu, "))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, " MiB, ")) TH_LOG("%s", out);
	EXPECT_EQ(0, run("", "--query-npu=memory.total,memory.used --format=csv,noheader,nounits",
			 out, sizeof(out))) TH_LOG("%s", out);
	ASSERT_EQ(2, sscanf(out, "%lld, %lld", &total, &used)) TH_LOG("%s", out);
	EXPECT_LE(16, used) TH_LOG("%s", out);		/* this process's buffer, at least */
	EXPECT_LT(used, total);
	EXPECT_EQ(0, run("", "--query=index,utilization.npu -n 0.2", out, sizeof(out)))
		TH_LOG("%s", out);
	EXPECT_TRUE(starts(out, "index, utilization.npu [%]\n0, ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, " %\n")) TH_LOG("%s", out);

	EXPECT_EQ(0, run("", "-V", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_TRUE(starts(out, "npu-smi 0.")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nlibnpurt 0.")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nNPU 0: driver npu ")) TH_LOG("%s", out);

	EXPECT_EQ(2, run("", "--query=index,bogus", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no field 'bogus'")) TH_LOG("%s", out);
	EXPECT_EQ(2, run("", "--query=index --format=tsv", out, sizeof(out)));
	EXPECT_EQ(2, run("", "-L --query=index", out, sizeof(out)));
	EXPECT_EQ(0, run("", "--help-query", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "utilization.npu")) TH_LOG("%s", out);
	EXPECT_EQ(0, npu_gem_close(self->fd, bo.handle));
}

TEST(bad_usage_exits_2_with_usage)
{
	static char out[8192];

	EXPECT_EQ(2, run("", "--no-such-option", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "usage: npu-smi")) TH_LOG("%s", out);
	EXPECT_EQ(2, run("", "-n soon", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "bad interval")) TH_LOG("%s", out);
	EXPECT_EQ(2, run("", "frobnicate", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "unexpected argument 'frobnicate'")) TH_LOG("%s", out);
	EXPECT_EQ(0, run("", "--help", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "Exit status")) TH_LOG("%s", out);
}

TEST(missing_device_exits_1_and_says_so)
{
	static char out[8192];

	EXPECT_EQ(1, run("", "-d 7", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no NPU 7: 1 device found")) TH_LOG("%s", out);
}

/*
 * As nobody: with the node open to all, the tool works and says what
 * needs root; with the node closed, it fails with 1 and says what to do.
 */
TEST(unprivileged_user_is_told_what_needs_root)
{
	static char out[65536];
	char node[64], bdf[32];
	struct stat st;

	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK))
		SKIP(return, "needs root and setpriv");
	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	ASSERT_EQ(0, stat(node, &st));

	EXPECT_EQ(0, chmod(node, 0666));
	EXPECT_EQ(0, run("setpriv --reuid=65534 --regid=65534 --clear-groups", "-d 0 -n 0",
			 out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "per-queue detail needs root")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "processes of other users are not shown")) TH_LOG("%s", out);

	EXPECT_EQ(0, chmod(node, 0600));
	EXPECT_EQ(1, run("setpriv --reuid=65534 --regid=65534 --clear-groups", "-d 0 -n 0",
			 out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "permission denied")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "or run as root")) TH_LOG("%s", out);
	/* libnpurt's own words name the group that owns the node. */
	{
		struct group *gr = getgrgid(st.st_gid);
		char want[128];

		ASSERT_NE(NULL, gr);
		snprintf(want, sizeof(want), "(join group '%s', which owns it, or run as root)",
			 gr->gr_name);
		EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	}
	chmod(node, st.st_mode & 07777);
}

TEST_HARNESS_MAIN
