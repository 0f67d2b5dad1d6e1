/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the kselftests that run against npu.ko.
 *
 * The VM harness (tests/vm/run) exports what npu-fwsim was started with
 * (NPU_TEST_HBM_SIZE, NPU_TEST_QUEUES, NPU_TEST_CORES) and where the
 * module is (NPU_KO), so tests compare against the truth, not constants.
 */
#ifndef NPU_SELFTEST_H
#define NPU_SELFTEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <drm/npu_accel.h>

#include "npu_oplib.h"	/* the op library's argument block */

#define NPU_SYSFS_DRIVER "/sys/bus/pci/drivers/npu"

/*
 * The first device bound to npu.ko: its PCI address and its node
 * (/dev/dri/renderDN, or /dev/accel/accelN on kernels with accel).
 */
static inline int npu_find(char *node, size_t node_len, char *bdf, size_t bdf_len)
{
	static const char *const kinds[][2] = {
		{ "drm", "renderD" }, { "accel", "accel" },
	};
	struct dirent *de, *ne;
	char path[512];
	DIR *dir, *sub;
	int found = -1;

	dir = opendir(NPU_SYSFS_DRIVER);
	while (dir && found && (de = readdir(dir))) {
		if (!strchr(de->d_name, ':'))
			continue;
		for (int k = 0; k < 2 && found; k++) {
			snprintf(path, sizeof(path), NPU_SYSFS_DRIVER "/%s/%s",
				 de->d_name, kinds[k][0]);
			sub = opendir(path);
			while (sub && found && (ne = readdir(sub))) {
				if (strncmp(ne->d_name, kinds[k][1], strlen(kinds[k][1])))
					continue;
				snprintf(node, node_len, "/dev/%s/%.32s",
					 k == 0 ? "dri" : "accel", ne->d_name);
				snprintf(bdf, bdf_len, "%.24s", de->d_name);
				found = 0;
			}
			if (sub)
				closedir(sub);
		}
	}
	if (dir)
		closedir(dir);
	return found;
}

static inline int npu_open(void)
{
	char node[64], bdf[32];

	if (npu_find(node, sizeof(node), bdf, sizeof(bdf)))
		return -ENODEV;
	return open(node, O_RDWR | O_CLOEXEC);
}

/* GET_PARAM: 0 or -errno. */
static inline int npu_get_param(int fd, uint32_t param, uint64_t *value)
{
	struct drm_npu_get_param args = { .param = param };

	if (ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &args))
		return -errno;
	*value = args.value;
	return 0;
}

/* BO_CREATE: 0 or -errno; *out filled on success, zeroed otherwise. */
static inline int npu_bo_create(int fd, uint64_t size, uint32_t policy,
				struct drm_npu_bo_create *out)
{
	struct drm_npu_bo_create args = { .size = size, .page_policy = policy };

	if (out)
		memset(out, 0, sizeof(*out));
	if (ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &args))
		return -errno;
	if (out)
		*out = args;
	return 0;
}

static inline int npu_bo_info(int fd, uint32_t handle, struct drm_npu_bo_info *out)
{
	struct drm_npu_bo_info args = { .handle = handle };

	memset(out, 0, sizeof(*out));
	if (ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &args))
		return -errno;
	*out = args;
	return 0;
}

static inline int npu_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close args = { .handle = handle };

	return ioctl(fd, DRM_IOCTL_GEM_CLOSE, &args) ? -errno : 0;
}

/* Device-wide bytes held by buffer objects in `region`. */
static inline uint64_t npu_dev_usage(int fd, int region)
{
	struct drm_npu_mem_usage u = { 0 };

	if (ioctl(fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u))
		return ~0ull;
	return u.dev_current[region];
}

/*
 * Wait up to 5 s for region usage to reach `want`: the driver releases
 * what finished work held just after it wakes the work's waiters.
 */
static inline uint64_t npu_usage_settles(int fd, int region, uint64_t want)
{
	uint64_t v = npu_dev_usage(fd, region);

	for (int i = 0; i < 500 && v != want; i++) {
		usleep(10000);
		v = npu_dev_usage(fd, region);
	}
	return v;
}

/*
 * The device's HBM buffers now, through a handle of its own (~0 when the
 * device cannot be opened): a fixture's baseline, taken before its own
 * handle holds anything, and npu_hbm_buffers_settle() to compare after.
 */
static inline uint64_t npu_hbm_buffers(void)
{
	int fd = npu_open();
	uint64_t v = ~0ull;

	if (fd >= 0) {
		v = npu_dev_usage(fd, DRM_NPU_MEM_REGION_HBM);
		close(fd);
	}
	return v;
}

static inline uint64_t npu_hbm_buffers_settle(uint64_t want)
{
	int fd = npu_open();
	uint64_t v = ~0ull;

	if (fd >= 0) {
		v = npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, want);
		close(fd);
	}
	return v;
}

/* Device-wide HBM in use (buffers and page tables). */
static inline uint64_t npu_hbm_used(int fd)
{
	uint64_t v = ~0ull;

	npu_get_param(fd, DRM_NPU_PARAM_HBM_USED, &v);
	return v;
}

/* Helpers initialise every out-parameter, success or not. */

/* SUBMIT on queue `queue` (0: the default one): 0 or -errno. */
static inline int npu_submit_on(int fd, uint32_t queue, const struct drm_npu_task *tasks,
				uint32_t count, uint64_t *seq)
{
	struct drm_npu_submit args = {
		.tasks = (uintptr_t)tasks, .count = count, .queue = queue,
	};

	if (seq)
		*seq = 0;
	if (ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &args))
		return -errno;
	if (seq)
		*seq = args.seq;
	return 0;
}

static inline int npu_submit(int fd, const struct drm_npu_task *tasks, uint32_t count,
			     uint64_t *seq)
{
	return npu_submit_on(fd, 0, tasks, count, seq);
}

/*
 * The uapi deadline `rel_ns` from now (absolute CLOCK_MONOTONIC): negative
 * waits without limit, 0 polls.
 */
static inline int64_t npu_deadline(int64_t rel_ns)
{
	struct timespec ts;

	if (rel_ns < 0)
		return DRM_NPU_DEADLINE_NONE;
	if (rel_ns == 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + rel_ns;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline uint64_t npu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* WAIT on queue `queue`: 0 or -errno; *out (if given) gets the result. */
static inline int npu_wait_on(int fd, uint32_t queue, uint64_t seq, int64_t timeout_ns,
			      struct drm_npu_wait *out)
{
	struct drm_npu_wait args = { .seq = seq, .deadline_ns = npu_deadline(timeout_ns), .queue = queue };
	int ret = ioctl(fd, DRM_IOCTL_NPU_WAIT, &args) ? -errno : 0;

	if (out)
		*out = args;
	return ret;
}

static inline int npu_wait(int fd, uint64_t seq, int64_t timeout_ns, struct drm_npu_wait *out)
{
	return npu_wait_on(fd, 0, seq, timeout_ns, out);
}

static inline int npu_queue_create(int fd, uint32_t priority, uint32_t depth,
				   uint32_t timeout_ms, uint32_t *id)
{
	struct drm_npu_queue_create args = {
		.priority = priority, .depth = depth, .timeout_ms = timeout_ms,
	};

	*id = 0;
	if (ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &args))
		return -errno;
	*id = args.queue;
	return 0;
}

/* SYNC_CREATE an event or notify: 0 or -errno. */
static inline int npu_sync_create(int fd, uint32_t kind, uint32_t *id)
{
	struct drm_npu_sync_create args = { .kind = kind };

	*id = 0;
	if (ioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &args))
		return -errno;
	*id = args.id;
	return 0;
}

static inline int npu_queue_destroy(int fd, uint32_t id)
{
	struct drm_npu_queue_destroy args = { .queue = id };

	return ioctl(fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &args) ? -errno : 0;
}

static inline struct drm_npu_task npu_task_fill(uint64_t va, uint64_t size, uint32_t pattern)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_FILL, .args = { va, size, pattern } };

	return t;
}

static inline struct drm_npu_task npu_task_copy(uint64_t dst, uint64_t src, uint64_t size)
{
	struct drm_npu_task t = { .type = DRM_NPU_TASK_COPY, .args = { dst, src, size } };

	return t;
}

/*
 * A program of the build tree, BUILD/DIR/NAME, found from this test's own
 * place (BUILD/tests/selftests/): path, or NULL.
 */
static inline const char *npu_built(const char *dir, const char *name, char *path, size_t len)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n < 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	return snprintf(path, len, "%s/../../%s/%s", exe, dir, name) < (int)len ? path : NULL;
}

/* Run a shell command line: its exit status, or -1; its output (up to len - 1 bytes) in out. */
static inline int npu_run(const char *cmd, char *out, size_t len)
{
	size_t got = 0, n;
	FILE *p = popen(cmd, "r");
	int st;

	if (!p)
		return -1;
	while (got < len - 1 && (n = fread(out + got, 1, len - 1 - got, p)) > 0)
		got += n;
	out[got] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* npu_run() of a command line printf makes, its stderr with its stdout. */
__attribute__((format(printf, 3, 4)))
static inline int npu_sh(char *out, size_t len, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	return npu_run(cmd, out, len);
}

/* Register host memory as a buffer: 0 or -errno. */
static inline int npu_userptr(int fd, void *addr, uint64_t size, uint32_t *handle)
{
	struct drm_npu_userptr u = { .addr = (uintptr_t)addr, .size = size };
	int ret = ioctl(fd, DRM_IOCTL_NPU_USERPTR, &u) ? -errno : 0;

	*handle = u.handle;
	return ret;
}

/* Map a buffer for the CPU, or MAP_FAILED. */
static inline void *npu_bo_mmap(int fd, uint32_t handle, size_t size)
{
	struct drm_npu_bo_info info = { 0 };

	if (npu_bo_info(fd, handle, &info))
		return (void *)-1;
	return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.mmap_offset);
}

/* An unsigned number from the environment, or 0 when unset. */
static inline uint64_t npu_env(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoull(v, NULL, 0) : 0;
}

/* Write `text` to a sysfs file: 0 or -errno. */
/*
 * Reap child `pid` if it exits within `seconds` (its wait status in
 * *status): pid, or 0 if it is still running then. For a child doing
 * something that may never return, which the test must outlive.
 */
static inline pid_t npu_wait_child(pid_t pid, int *status, int seconds)
{
	pid_t ret = 0;

	for (int i = 0; i < seconds * 10 && !(ret = waitpid(pid, status, WNOHANG)); i++)
		usleep(100000);
	return ret;
}

static inline int npu_sysfs_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* A text file into buf, NUL-terminated (truncated to len - 1): 0 or -errno. */
static inline int npu_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/*
 * The path of this device's debugfs file `name`: 0 or -ENOENT. DRM names
 * the directory after the minor (dri/N; accel/N before 6.8) or, on newer
 * kernels, after the device (dri/0000:00:02.0, accel/0000:00:02.0).
 */
static inline int npu_debugfs_path(const char *name, char *path, size_t len)
{
	static const char *const kinds[] = { "dri", "accel" };
	char node[64], bdf[32];
	struct stat st;

	if (npu_find(node, sizeof(node), bdf, sizeof(bdf)) || stat(node, &st))
		return -ENOENT;
	for (int k = 0; k < 2; k++) {
		snprintf(path, len, "/sys/kernel/debug/%s/%u/%s", kinds[k],
			 minor(st.st_rdev), name);
		if (!access(path, F_OK))
			return 0;
		snprintf(path, len, "/sys/kernel/debug/%s/%s/%s", kinds[k], bdf, name);
		if (!access(path, F_OK))
			return 0;
	}
	return -ENOENT;
}

/*
 * A firmware mailbox round trip through debugfs fw_ping (each read
 * pings; it prints "<ns> ns"): 0 or -errno. The tests' one device.
 */
static inline int npu_fw_ping(int fd, uint64_t *rtt_ns)
{
	char path[128], buf[64], *end;
	int ret;

	(void)fd;
	if (npu_debugfs_path("fw_ping", path, sizeof(path)))
		return -ENOENT;
	ret = npu_read_file(path, buf, sizeof(buf));
	if (ret)
		return ret;
	*rtt_ns = strtoull(buf, &end, 10);
	return end != buf && !strcmp(end, " ns\n") ? 0 : -EPROTO;
}

/* A fault injection for npu-fwsim through debugfs npu_inject: 0 or -errno. */
static inline int npu_inject(const char *what)
{
	char path[96];

	if (npu_debugfs_path("npu_inject", path, sizeof(path)))
		return -ENOENT;
	return npu_sysfs_write(path, what);
}

/* The number after `key` in debugfs file `name`, or -1. */
static inline long long npu_debugfs_value(const char *name, const char *key)
{
	char path[96], buf[8192];
	const char *p;

	if (npu_debugfs_path(name, path, sizeof(path)) || npu_read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* This file's context id (fdinfo npu-context; 0 if unknown). */
static inline unsigned int npu_client_id(int fd)
{
	char path[64], buf[2048];
	const char *p;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (npu_read_file(path, buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "npu-context:\t");
	return p ? (unsigned int)strtoul(p + 13, NULL, 10) : 0;
}

/* Pass an fd to another process over a Unix socket (SCM_RIGHTS). */
static inline int npu_send_fd(int sock, int fd)
{
	char byte = 'f', ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/* The fd npu_send_fd() sent, or -1. */
static inline int npu_recv_fd(int sock)
{
	char byte, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * A fixture with an open device whose teardown checks that closing it gave
 * back every buffer and queue the test made (after the short delay with
 * which finished work releases them). Needs kselftest_harness.h first.
 */
#define NPU_BASELINE_FIXTURE(name)						\
	FIXTURE(name) {								\
		int fd;								\
		uint64_t buffers_before;					\
	};									\
	FIXTURE_SETUP(name)							\
	{									\
		self->fd = npu_open();						\
		ASSERT_LE(0, self->fd);						\
		self->buffers_before = npu_dev_usage(self->fd, DRM_NPU_MEM_REGION_HBM); \
	}									\
	FIXTURE_TEARDOWN(name)							\
	{									\
		int fd;								\
										\
		close(self->fd);						\
		fd = npu_open();						\
		EXPECT_EQ(self->buffers_before,					\
			  npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM, self->buffers_before)); \
		EXPECT_EQ(0, npu_usage_settles(fd, DRM_NPU_MEM_REGION_QUEUES, 0));	\
		close(fd);							\
	}

/*
 * The system's context switches so far, from /proc/stat (0 if it says
 * nothing): benchmarks report them per task, a cost that shows even when
 * the machine is too loaded for rates to compare.
 */
static inline unsigned long long npu_ctxt_switches(void)
{
	unsigned long long n = 0;
	char line[256];
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ctxt %llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

#endif /* NPU_SELFTEST_H */
