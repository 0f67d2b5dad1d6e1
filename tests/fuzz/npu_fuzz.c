// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: a seeded, reproducible fuzzer of the whole uapi of npu.ko.
 *
 *   npu-fuzz [--seed N] [--calls N] [--procs N] [--verbose] [--log-from N]
 *            [--replay-from N] [--stop-at N] [--only I] [--duration S]
 *            [--skip KIND,...]
 *
 * Workers (--procs, default 2) each make their share of --calls: every
 * DRM_IOCTL_NPU_*, the DRM core ioctls the driver serves (GEM_CLOSE,
 * PRIME, FLINK/OPEN on the primary node, syncobjs, VERSION, GET_CAP),
 * ioctl numbers and sizes nobody serves, io_uring commands on rings of
 * every kind, mmap of buffers and dma-bufs, host memory registered and
 * unmapped, files opened, dup()ed and closed in any order, children forked
 * to work on some of the files and on their own and SIGKILLed at a random
 * point of their work, notifies and dma-bufs handed between processes.
 *
 * Worker I draws from a stream made of the seed and I only, so a run is
 * reproduced by its seed, and `--seed S --procs P --only I` runs worker I
 * of it alone; `--log-from N` prints the calls from number N on and
 * `--stop-at N` ends there. What the device does, and when, still varies
 * from run to run, and outcomes feed back into the choices (a queue that
 * failed gets destroyed, a full table is emptied), so a replay follows the
 * same calls only as long as the outcomes do.
 *
 * Each call says beforehand what it may return: the errnos the uapi
 * documents for what is wrong with it (any of them when several things
 * are wrong: the order of the checks is not ABI), and success only when
 * nothing is. Anything else is a finding, printed with the call number
 * and the calls before it; so are values that make no sense (sizes, page
 * sizes, addresses, sequence numbers, statuses, io_uring second results).
 * The supervisor watches the kernel log (/dev/kmsg: a WARNING, BUG, KASAN
 * or lockdep report names the call each worker was in) and the workers'
 * progress (a worker stuck for 120 s is shown with its kernel stack), and
 * at the end checks that device memory, queues, events and notifies and
 * parked io_uring commands are back to what they were before. Output is
 * KTAP: one result per worker, one for the kernel log, one for the
 * baseline; then calls by kind and a summary.
 *
 * Left out on purpose: fault injection (the recovery tests' business),
 * huge device work (the device is emulated: copies and fills are at most
 * a few MiB, GEMMs 32x32), and SQPOLL rings in children, which are killed:
 * before Linux 6.7 a killed process whose SQPOLL thread has an NPU
 * command parked cannot exit (see the report that came with this tool).
 */
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

static struct fz_proc proc;

/* ---- the calls, and how often each is made ------------------------------------ */
static void op_queue_destroy_w(void) { op_queue_destroy(false); }
static void op_queue_abort_w(void) { op_queue_destroy(true); }
static void op_uring_reap_w(void) { op_uring_reap(chance(300)); }
static void op_child_reap_w(void) { op_child_reap(false); }

static const struct {
	unsigned int weight;
	int op;
	void (*fn)(void);
} ops[] = {
	{ 40, OP_GET_PARAM, op_get_param },	{ 60, OP_BO_CREATE, op_bo_create },
	{ 35, OP_BO_INFO, op_bo_info },		{ 15, OP_MEM_USAGE, op_mem_usage },
	{ 170, OP_SUBMIT, op_submit },		{ 90, OP_WAIT, op_wait },
	{ 25, OP_USERPTR, op_userptr },		{ 25, OP_QUEUE_CREATE, op_queue_create },
	{ 12, OP_QUEUE_DESTROY, op_queue_destroy_w }, { 5, OP_QUEUE_ABORT, op_queue_abort_w },
	{ 35, OP_SYNC_CREATE, op_sync_create },	{ 20, OP_SYNC_DESTROY, op_sync_destroy },
	{ 15, OP_EVENT_QUERY, op_event_query },	{ 20, OP_EVENT_WAIT, op_event_wait },
	{ 12, OP_NOTIFY_EXPORT, op_notify_export }, { 15, OP_NOTIFY_IMPORT, op_notify_import },
	{ 50, OP_GEM_CLOSE, op_gem_close },	{ 15, OP_PRIME_EXPORT, op_prime_export },
	{ 15, OP_PRIME_IMPORT, op_prime_import }, { 4, OP_GEM_FLINK_OPEN, op_gem_flink_open },
	{ 60, OP_SYNCOBJ, op_syncobj },		{ 10, OP_DRM_INFO, op_drm_info },
	{ 8, OP_RAW_IOCTL, op_raw_ioctl },	{ 8, OP_SIZED_IOCTL, op_sized_ioctl },
	{ 30, OP_MMAP, op_mmap },		{ 15, OP_MUNMAP, op_munmap },
	{ 25, OP_TOUCH, op_touch },		{ 10, OP_HOST, op_host },
	{ 8, OP_OPEN, op_open },		{ 6, OP_CLOSE, op_close },
	{ 4, OP_DUP, op_dup },			{ 12, OP_XFD, op_xfd_close },
	{ 5, OP_READ_INFO, op_read_info },	{ 4, OP_URING_SETUP, op_uring_setup },
	{ 90, OP_URING_SUBMIT, op_uring_submit }, { 45, OP_URING_REAP, op_uring_reap_w },
	{ 2, OP_URING_EXIT, op_uring_exit },	{ 3, OP_FORK, op_fork },
	{ 2, OP_CHILD_REAP, op_child_reap_w },	{ 4, OP_XFD, op_recv_fds },
	{ 12, OP_TASKLIST, op_tasklist_create }, { 6, OP_TASKLIST, op_tasklist_destroy },
	{ 10, OP_SUBMIT_MULTI, op_submit_multi },
};

/* Kinds of call left out (--skip), to narrow a finding down. */
static uint64_t skipped;

static void one_call(void)
{
	static unsigned int total;
	unsigned int r;

	if (!total)
		for (unsigned int i = 0; i < ARRAY_LEN(ops); i++)
			total += skipped >> ops[i].op & 1 ? 0 : ops[i].weight;
	if (fz->depth == 0 && rnd_below(25000) == 0 && !(skipped >> OP_SYNC_QUOTA & 1)) {
		op_sync_quota();
		return;
	}
	if (fz->followup_file) {
		op_queue_destroy(false);
		return;
	}
	r = (unsigned int)rnd_below(total);
	for (unsigned int i = 0; i < ARRAY_LEN(ops); i++) {
		unsigned int w = skipped >> ops[i].op & 1 ? 0 : ops[i].weight;

		if (r < w) {
			ops[i].fn();
			return;
		}
		r -= w;
	}
}

static bool time_to_stop(void)
{
	if (fz->shared->stop)
		return true;
	if (fz->depth == 0 && fz->stop_at && fz->calls >= fz->stop_at)
		return true;
	return fz->calls >= fz->limit;
}

void fz_child_loop(void)
{
	while (!time_to_stop())
		one_call();
	if (chance(300))
		op_recv_fds();	/* a child sends */
	if (chance(500))
		teardown();
	_exit(fz->findings ? 1 : 0);
}

/* ---- setting a worker up --------------------------------------------------------- */
static void on_alarm(int sig)
{
	(void)sig;
}

static int find_nodes(void)
{
	const char *drv = "/sys/bus/pci/drivers/npu";
	DIR *d = opendir(drv), *sub;
	struct dirent *de, *ne;
	char path[512];

	fz_render[0] = fz_card[0] = '\0';
	while (d && (de = readdir(d))) {
		if (!strchr(de->d_name, ':'))
			continue;
		for (int k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), "%s/%s/%s", drv, de->d_name, k ? "accel" : "drm");
			sub = opendir(path);
			while (sub && (ne = readdir(sub))) {
				if (!strncmp(ne->d_name, "renderD", 7) && !fz_render[0])
					snprintf(fz_render, sizeof(fz_render), "/dev/dri/%.32s", ne->d_name);
				else if (!strncmp(ne->d_name, "card", 4) && !fz_card[0])
					snprintf(fz_card, sizeof(fz_card), "/dev/dri/%.32s", ne->d_name);
				else if (!strncmp(ne->d_name, "accel", 5) && !fz_render[0])
					snprintf(fz_render, sizeof(fz_render), "/dev/accel/%.32s", ne->d_name);
			}
			if (sub)
				closedir(sub);
		}
		if (fz_render[0])
			break;
	}
	if (d)
		closedir(d);
	return fz_render[0] ? 0 : -1;
}

/* The device's debugfs directory: dri/ or accel/, by minor or by device. */
static void find_debugfs(char *out, size_t len)
{
	static const char *const roots[] = { "/sys/kernel/debug/dri", "/sys/kernel/debug/accel" };
	struct dirent *de;
	char path[256];

	out[0] = '\0';
	for (int r = 0; r < 2 && !out[0]; r++) {
		DIR *d = opendir(roots[r]);

		while (d && (de = readdir(d))) {
			snprintf(path, sizeof(path), "%s/%.64s/npu_queues", roots[r], de->d_name);
			if (de->d_name[0] != '.' && !access(path, R_OK)) {
				snprintf(out, len, "%s/%.64s", roots[r], de->d_name);
				break;
			}
		}
		if (d)
			closedir(d);
	}
}

static void worker_init(int idx, uint64_t seed, uint64_t limit, struct fz_shared *sh)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART: EINTR */
	int fd;

	memset(&proc, 0, sizeof(proc));
	fz = &proc;
	fz->worker = idx;
	snprintf(fz->name, sizeof(fz->name), "w%d", idx);
	rng_seed(&fz->rng, seed, (uint64_t)idx + 1);
	fz->limit = limit;
	fz->shared = sh;
	fz->slot = &sh->slot[idx];
	fz->slot->pid = getpid();
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	fz->scratch = mmap(NULL, FZ_SCRATCH + 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fz->scratch == MAP_FAILED)
		_exit(3);
	fz->guard = fz->scratch + FZ_SCRATCH;
	mprotect(fz->guard, 4096, PROT_NONE);
	fz->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	fz->evfd = eventfd(0, EFD_CLOEXEC);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fz->sock))
		fz->sock[0] = fz->sock[1] = -1;
	find_debugfs(fz->debugfs, sizeof(fz->debugfs));
	/* What the device says of itself: constant from here on. */
	fd = open(fz_render, O_RDWR | O_CLOEXEC);
	for (uint32_t p = 0; fd >= 0 && p <= FZ_PARAM_LAST; p++) {
		struct drm_npu_get_param a = { .param = p };

		if (p != DRM_NPU_PARAM_RESERVED_9 && !ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &a))
			fz->params[p] = a.value;
	}
	if (fd >= 0)
		close(fd);
}

static void worker_main(int idx, uint64_t seed, uint64_t limit, struct fz_shared *sh,
			bool verbose, uint64_t log_from, uint64_t stop_at)
{
	worker_init(idx, seed, limit, sh);
	fz->verbose = verbose;
	fz->log_from = log_from;
	fz->stop_at = stop_at;
	while (!time_to_stop()) {
		one_call();
		if (!(fz->calls & 7))
			op_child_reap(false);
	}
	/* Whatever is still in flight completes or is cancelled by the teardown. */
	for (int i = 0; i < FZ_RINGS; i++)
		if (fz->rings[i].used && chance(500))
			ring_reap_all(&fz->rings[i], 20);
	teardown();
	fz->slot->calls = fz->calls;
	fz->slot->finished = 1;
	_exit(0);
}

/* ---- the device's state, before and after ---------------------------------------- */
struct state {
	uint64_t hbm_used;
	uint64_t region[DRM_NPU_MEM_REGION_COUNT];
	long long queues, syncs, ucmds, resets, wedged, quarantined;
};

static long long num_after(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return 0;
}

static void read_state(int fd, const char *dbg, struct state *s)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_HBM_USED };
	struct drm_npu_mem_usage u = { 0 };
	static char buf[65536];
	char path[160];

	memset(s, 0, sizeof(*s));
	if (!ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
		s->hbm_used = p.value;
	if (!ioctl(fd, DRM_IOCTL_NPU_GET_MEM_USAGE, &u))
		memcpy(s->region, u.dev_current, sizeof(s->region));
	s->queues = s->syncs = s->ucmds = s->resets = s->wedged = s->quarantined = -1;
	if (!dbg[0])
		return;
	snprintf(path, sizeof(path), "%s/npu_queues", dbg);
	if (!read_file(path, buf, sizeof(buf))) {
		long long n = 0;

		for (char *line = buf; line && *line; line = strchr(line, '\n')) {
			if (*line == '\n')
				line++;
			if (*line >= '0' && *line <= '9')
				n++;
		}
		s->queues = n;
		s->syncs = num_after(buf, "events and notifies in use: ");
		s->ucmds = num_after(buf, "io_uring commands: ");
		s->resets = num_after(buf, "device resets: ");
		s->wedged = num_after(buf, "wedged: ");
	}
	snprintf(path, sizeof(path), "%s/npu_mem", dbg);
	if (!read_file(path, buf, sizeof(buf)))
		s->quarantined = num_after(buf, "quarantined until a reset: ");
}

static bool same_state(const struct state *a, const struct state *b)
{
	return a->hbm_used == b->hbm_used && !memcmp(a->region, b->region, sizeof(a->region)) &&
	       a->queues == b->queues && a->syncs == b->syncs && a->ucmds == b->ucmds &&
	       a->quarantined == b->quarantined && a->wedged == b->wedged;
}

static void print_state(const char *what, const struct state *s)
{
	printf("#   %-7s HBM used %llu; hbm %llu host %llu page tables %llu queues %llu bytes; "
	       "%lld queues, %lld events/notifies, %lld io_uring commands, %lld resets, wedged %lld, quarantined %lld\n",
	       what, (unsigned long long)s->hbm_used, (unsigned long long)s->region[0],
	       (unsigned long long)s->region[1], (unsigned long long)s->region[2],
	       (unsigned long long)s->region[3], s->queues, s->syncs, s->ucmds, s->resets,
	       s->wedged, s->quarantined);
}

/* ---- the kernel log ------------------------------------------------------------------- */
static const char *const trouble[] = {
	"WARNING:", "BUG:", "kernel BUG at", "Oops", "general protection fault", "Call Trace:",
	"UBSAN:", "KASAN:", "Kernel panic", "possible circular locking",
	"possible recursive locking", "inconsistent lock state", "suspicious RCU usage",
	"sleeping function called from invalid context", "blocked for more than",
};

struct kmsg {
	int fd;
	int reports;		/* lines that match trouble[] */
	int shown;
	bool resets;
};

static void where_workers_are(struct fz_shared *sh, int procs)
{
	for (int i = 0; i < procs; i++) {
		struct fz_slot *s = &sh->slot[i];
		uint32_t h = __atomic_load_n(&s->hist_pos, __ATOMIC_ACQUIRE);

		printf("#   w%d is at call %llu: %.*s\n", i, (unsigned long long)s->calls,
		       FZ_DESC, s->hist[h % FZ_HIST]);
	}
}

static void kmsg_poll(struct kmsg *k, struct fz_shared *sh, int procs)
{
	char rec[8192];

	for (;;) {
		ssize_t n = read(k->fd, rec, sizeof(rec) - 1);
		const char *msg;
		int prio;

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			return;
		rec[n] = '\0';
		prio = atoi(rec) & 7;
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		*strchrnul(msg, '\n') = '\0';
		bool bad = false;

		for (unsigned int i = 0; i < ARRAY_LEN(trouble); i++)
			if (strstr(msg, trouble[i]))
				bad = true;
		if (strstr(msg, "resetting the device") || strstr(msg, "wedged")) {
			k->resets = true;
			sh->device_reset = 1;
		}
		if (bad) {
			k->reports++;
			printf("# kernel: %s\n", msg);
			if (k->reports == 1) {
				printf("# the kernel reported trouble while:\n");
				where_workers_are(sh, procs);
			}
			k->shown = 0;	/* show what follows the report */
		} else if (prio <= 4 && k->shown < 60) {
			k->shown++;
			printf("# kernel: %s\n", msg);
		}
	}
}

/* ---- the supervisor ------------------------------------------------------------------- */
static void relay(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		fflush(stdout);
		if (write(STDOUT_FILENO, buf, n) < 0)
			return;
	}
}

static volatile sig_atomic_t interrupted;

static void on_stop(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: npu-fuzz [--seed N] [--calls N] [--procs N] [--verbose]\n"
		   "                [--log-from N] [--stop-at N] [--only I] [--duration SECONDS]\n"
		   "  --seed      the random stream (default: NPU_FUZZ_SEED, else from the clock)\n"
		   "  --calls     calls in all, shared by the workers (default: NPU_FUZZ_CALLS, else 100000)\n"
		   "  --procs     worker processes (default 2)\n"
		   "  --only I    run worker I alone, making the calls it makes among --procs\n"
		   "  --verbose   print every call; --log-from (or --replay-from) N: from call N of\n"
		   "              each process on\n"
		   "  --stop-at N each worker stops after its call N\n"
		   "  --duration  stop after this many seconds, whatever the calls\n"
		   "  --skip K,.. leave these kinds of call out (names as in the summary, such as\n"
		   "              SUBMIT,fork,uring submit), to narrow a finding down\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const op_names[OP_COUNT] = {
	"GET_PARAM", "BO_CREATE", "BO_INFO", "GET_MEM_USAGE", "SUBMIT", "WAIT", "USERPTR",
	"QUEUE_CREATE", "QUEUE_DESTROY", "QUEUE_ABORT", "SYNC_CREATE", "SYNC_DESTROY",
	"EVENT_QUERY", "EVENT_WAIT", "NOTIFY_EXPORT", "NOTIFY_IMPORT", "GEM_CLOSE",
	"PRIME_HANDLE_TO_FD", "PRIME_FD_TO_HANDLE", "GEM_FLINK/OPEN", "SYNCOBJ_*",
	"VERSION/CAPS", "unknown ioctls", "resized ioctls", "mmap", "munmap", "touch",
	"host memory", "open", "close", "dup", "uring setup", "uring submit", "uring reap",
	"uring close", "fork", "kill child", "other fds", "fdinfo/debugfs", "sync quota",
	"TASKLIST_*", "SUBMIT_MULTI",
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "calls", required_argument, NULL, 'c' },
		{ "procs", required_argument, NULL, 'p' },
		{ "only", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-from", required_argument, NULL, 'l' },
		{ "replay-from", required_argument, NULL, 'l' },
		{ "stop-at", required_argument, NULL, 'S' },
		{ "duration", required_argument, NULL, 'd' },
		{ "skip", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *env;
	uint64_t seed, calls = 100000, log_from = 0, stop_at = 0;
	int procs = 2, only = -1, opt, devfd, failed = 0;
	double duration = 0, t0, t1;
	bool verbose = false, seeded = false;
	struct fz_shared *sh;
	struct state before, after;
	struct kmsg k = { .fd = -1 };
	int outp[2];
	pid_t pids[64] = { 0 };
	int status[64] = { 0 };
	bool done[64] = { 0 };

	if ((env = getenv("NPU_FUZZ_SEED")) && *env)
		seed = strtoull(env, NULL, 0), seeded = true;
	if ((env = getenv("NPU_FUZZ_CALLS")) && *env)
		calls = strtoull(env, NULL, 0);
	while ((opt = getopt_long(argc, argv, "s:c:p:o:vl:S:d:k:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'c':
			calls = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			procs = atoi(optarg);
			break;
		case 'o':
			only = atoi(optarg);
			break;
		case 'v':
			verbose = true;
			break;
		case 'l':
			log_from = strtoull(optarg, NULL, 0);
			verbose = true;
			break;
		case 'S':
			stop_at = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			duration = atof(optarg);
			break;
		case 'k':
			for (char *w = strtok(optarg, ","); w; w = strtok(NULL, ",")) {
				int i;

				for (i = 0; i < OP_COUNT && strcasecmp(w, op_names[i]); i++)
					;
				if (i == OP_COUNT) {
					fprintf(stderr, "npu-fuzz: no call kind '%s'\n", w);
					return 2;
				}
				skipped |= 1ull << i;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (procs < 1 || procs > 64 || only >= procs) {
		usage(stderr);
		return 2;
	}
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
		seed %= 1000000000ull;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (find_nodes()) {
		printf("1..0 # SKIP no device bound to npu.ko\n");
		return 4;
	}
	int nworkers = only >= 0 ? 1 : procs;

	printf("1..%d\n", nworkers + 2);
	printf("# npu-fuzz: seed %llu, %llu calls, %d processes, on %s%s%s\n",
	       (unsigned long long)seed, (unsigned long long)calls, procs, fz_render,
	       fz_card[0] ? " and " : "", fz_card);
	printf("# reproduce: npu-fuzz --seed %llu --calls %llu --procs %d%s%s",
	       (unsigned long long)seed, (unsigned long long)calls, procs,
	       only >= 0 ? " --only N" : "", skipped ? " --skip '" : "");
	for (int i = 0, first = 1; i < OP_COUNT; i++)
		if (skipped >> i & 1)
			printf("%s%s", first ? "" : ",", op_names[i]), first = 0;
	printf("%s\n", skipped ? "'" : "");

	/* The supervisor's own view: a file, the kernel log, debugfs. */
	char dbg[64];

	find_debugfs(dbg, sizeof(dbg));
	devfd = open(fz_render, O_RDWR | O_CLOEXEC);
	if (devfd < 0) {
		printf("Bail out! cannot open %s: %s\n", fz_render, strerror(errno));
		return 1;
	}
	fz_uring_no_links = uring_reads_sqes_late(devfd);
	if (fz_uring_no_links)
		printf("# this kernel's io_uring reads a linked command's SQE late, after its slot is"
		       " reused (fixed in 6.14): no links\n");
	k.fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k.fd >= 0)
		lseek(k.fd, 0, SEEK_END);
	else
		printf("# no /dev/kmsg: the kernel log is not watched here\n");
	/* What the device holds before: let releases from earlier work settle. */
	read_state(devfd, dbg, &before);
	for (int i = 0; i < 50; i++) {
		usleep(100000);
		read_state(devfd, dbg, &after);
		if (same_state(&before, &after))
			break;
		before = after;
	}

	sh = mmap(NULL, sizeof(*sh) + procs * sizeof(sh->slot[0]), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		printf("Bail out! no shared memory\n");
		return 1;
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	/*
	 * Workers and their children write to a pipe that we copy out: one of
	 * them stuck in the kernel must not keep our stdout open (a harness
	 * reading it to the end would wait for it forever).
	 */
	if (pipe2(outp, O_CLOEXEC)) {
		printf("Bail out! pipe: %s\n", strerror(errno));
		return 1;
	}
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fflush(stdout);
	t0 = now_s();
	for (int i = 0; i < procs; i++) {
		uint64_t share = calls / procs + ((uint64_t)i < calls % procs);

		if (only >= 0 && i != only)
			continue;
		pids[i] = fork();
		if (pids[i] == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			if (k.fd >= 0)
				close(k.fd);
			close(devfd);
			dup2(outp[1], STDOUT_FILENO);
			dup2(outp[1], STDERR_FILENO);
			close(outp[0]);
			close(outp[1]);
			worker_main(i, seed, share, sh, verbose, log_from, stop_at);
		}
		if (pids[i] < 0) {
			printf("Bail out! fork: %s\n", strerror(errno));
			return 1;
		}
	}

	/* Watch: the kernel log, the workers' progress, time. */
	uint64_t last[64] = { 0 };
	double moved[64];
	int left = nworkers;

	for (int i = 0; i < procs; i++)
		moved[i] = t0;
	close(outp[1]);
	while (left) {
		struct pollfd pfd[2] = { { .fd = outp[0], .events = POLLIN },
					 { .fd = k.fd, .events = POLLIN } };

		poll(pfd, k.fd >= 0 ? 2 : 1, 100);
		relay(outp[0]);
		if (k.fd >= 0)
			kmsg_poll(&k, sh, procs);
		if ((duration > 0 && now_s() - t0 > duration) || interrupted)
			sh->stop = 1;
		for (int i = 0; i < procs; i++) {
			uint64_t c;

			if (!pids[i] || done[i])
				continue;
			if (waitpid(pids[i], &status[i], WNOHANG) == pids[i]) {
				done[i] = true;
				left--;
				continue;
			}
			c = sh->slot[i].calls + sh->slot[i].child_calls;
			if (c != last[i]) {
				last[i] = c;
				moved[i] = now_s();
			} else if (now_s() - moved[i] > 120) {
				char path[64], buf[4096];
				uint32_t h = sh->slot[i].hist_pos;

				printf("# w%d made no progress for 120 s, in: %.*s\n", i, FZ_DESC,
				       sh->slot[i].hist[h % FZ_HIST]);
				snprintf(path, sizeof(path), "/proc/%d/stack", pids[i]);
				if (!read_file(path, buf, sizeof(buf)))
					for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
						printf("#   %s\n", l);
				fflush(stdout);
				kill(pids[i], SIGKILL);
				moved[i] = now_s();
				sh->slot[i].findings++;
			}
		}
	}
	t1 = now_s();
	usleep(100000);
	relay(outp[0]);	/* what is there: a stuck child may never close its end */
	close(outp[0]);

	/* Results per worker. */
	uint64_t total = 0, child_calls = 0, children = 0, kills = 0;

	for (int i = 0, n = 1; i < procs; i++) {
		struct fz_slot *s = &sh->slot[i];
		bool ok;

		if (!pids[i])
			continue;
		ok = WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0 && s->finished &&
		     !s->findings;
		total += s->calls;
		child_calls += s->child_calls;
		children += s->children;
		kills += s->kills;
		if (!ok) {
			uint32_t h = s->hist_pos;

			if (WIFSIGNALED(status[i]))
				printf("# w%d died of signal %d; its last calls:\n", i, WTERMSIG(status[i]));
			for (uint32_t j = FZ_HIST; !s->finished && j > 0; j--)
				if (s->hist[(h - j + 1) % FZ_HIST][0])
					printf("#   %.*s\n", FZ_DESC, s->hist[(h - j + 1) % FZ_HIST]);
			failed++;
		}
		printf("%sok %d fuzz.worker%d # %llu calls, %llu findings; children %llu (%llu calls, %llu killed); replay: --seed %llu --procs %d --only %d --calls %llu\n",
		       ok ? "" : "not ", n++, i, (unsigned long long)s->calls,
		       (unsigned long long)s->findings, (unsigned long long)s->children,
		       (unsigned long long)s->child_calls, (unsigned long long)s->kills,
		       (unsigned long long)seed, procs, i, (unsigned long long)calls);
		/* Next to the verdict, which a log cut short still shows. */
		if (s->first_taken)
			printf("# w%d's first finding: %.*s\n", i, (int)sizeof(s->first), s->first);
	}

	/* The kernel log. */
	if (k.fd >= 0) {
		usleep(200000);
		kmsg_poll(&k, sh, procs);
	}
	printf("%sok %d fuzz.kernel_log_clean%s\n", k.reports ? "not " : "", nworkers + 1,
	       k.fd < 0 ? " # SKIP no /dev/kmsg" : "");
	failed += k.reports > 0;

	/* Everything given back: the driver frees finished work from a worker. */
	bool back = false;

	for (int i = 0; i < 150 && !back; i++) {
		read_state(devfd, dbg, &after);
		back = same_state(&before, &after);
		if (!back)
			usleep(100000);
	}
	if (after.resets != before.resets)
		printf("# the device was reset %lld times during the run\n",
		       after.resets - before.resets);
	if (!back || after.resets != before.resets) {
		print_state("before", &before);
		print_state("after", &after);
		if (dbg[0]) {
			char path[128], buf[8192];

			snprintf(path, sizeof(path), "%s/npu_queues", dbg);
			if (!read_file(path, buf, sizeof(buf)))
				for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
					printf("#   %s\n", l);
		}
	}
	back = back && after.resets == before.resets;
	printf("%sok %d fuzz.device_state_back_to_baseline\n", back ? "" : "not ", nworkers + 2);
	failed += !back;

	/* What was called, and how much of it got through. */
	printf("# calls by kind: made, succeeded, seconds spent in them\n");
	for (int i = 0; i < OP_COUNT; i++) {
		if (!sh->op_calls[i])
			continue;
		printf("#   %-20s %9llu %9llu %8.1f\n", op_names[i],
		       (unsigned long long)sh->op_calls[i], (unsigned long long)sh->op_ok[i],
		       sh->op_ns[i] / 1e9);
	}
	printf("# fuzz: seed %llu: %llu calls (+%llu in %llu children, %llu of them killed; %llu io_uring commands among them) in %.1f s: %.0f calls/s\n",
	       (unsigned long long)seed, (unsigned long long)total,
	       (unsigned long long)child_calls, (unsigned long long)children,
	       (unsigned long long)kills, (unsigned long long)sh->uring_cmds, t1 - t0,
	       (total + child_calls) / (t1 - t0 > 0 ? t1 - t0 : 1));
	close(devfd);
	return failed ? 1 : 0;
}
