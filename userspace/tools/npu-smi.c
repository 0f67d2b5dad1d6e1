// SPDX-License-Identifier: MIT
/*
 * npu-smi: what each NPU is, how full it is, how busy, and who uses it.
 *
 * The device's own figures come through libnpurt and the GET_MEM_USAGE
 * ioctl; the processes from /proc/<pid>/fdinfo; the queues from debugfs
 * (root only). Busy figures are engine time (drm-engine-npu) sampled over
 * an interval. Documentation/runtime.rst, "npu-smi", describes the output.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <drm/npu_accel.h>

#include "npurt.h"
#include "npu-smi/smi.h"

enum { EXIT_DEVICE = 1, EXIT_USAGE = 2 };

static struct {
	int only, ping, raw, watch, list, version;
	double interval;
	int interval_set;
	const char *query, *format;	/* --query=FIELDS, --format */
	struct smi_query q;
} opt = { .only = -1, .interval = 1.0 };

static volatile sig_atomic_t stop;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu-smi [OPTIONS]          every NPU, once\n"
		"       npu-smi watch [OPTIONS]    redrawn every interval until q or Ctrl-C\n"
		"\n"
		"  -d, --device INDEX     only this device (default: all)\n"
		"  -n, --interval SEC     busy figures are measured over SEC seconds, and\n"
		"                         watch redraws that often (default 1; 0 without\n"
		"                         watch: no busy figures, no wait)\n"
		"  -w, --watch            the same as the watch command\n"
		"  -r, --raw              key=value records for scripts, one per line\n"
		"  -p, --ping             also time a firmware mailbox round trip (root)\n"
		"  -q, --query            the full report (what npu-smi prints by default)\n"
		"  -L, --list             one line per NPU, at once\n"
		"  --query=FIELDS, --query-npu=FIELDS\n"
		"                         comma-separated fields, a CSV line per NPU\n"
		"                         (utilization.npu and heartbeat wait the interval;\n"
		"                         --help-query lists the fields)\n"
		"  --format=csv[,noheader][,nounits]\n"
		"                         how --query writes them (default csv)\n"
		"  -V, --version          npu-smi's, libnpurt's and each NPU's versions\n"
		"  -h, --help             this text\n"
		"\n"
		"Processes of other users, and the per-queue table (debugfs), need root.\n"
		"\n"
		"Exit status: 0 success; 1 no such device, or it cannot be opened or read\n"
		"(permission: join the group owning the node, npu with the packages, or run as root);\n"
		"2 bad usage.\n");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Why a device cannot be opened, with what an operator can do about it. */
static void open_error(npurt_status st, char *buf, size_t len)
{
	const char *msg = npurt_last_error();
	const char *node = strstr(msg, "/dev/");
	struct group *gr;
	char path[64] = "";
	struct stat sb;

	if (st != NPURT_ERR_PERMISSION) {
		snprintf(buf, len, "%s", msg);
		return;
	}
	/* The library's message names the node; its group is what to join. */
	if (node)
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(node, ": "), node);
	gr = path[0] && !stat(path, &sb) ? getgrgid(sb.st_gid) : NULL;
	snprintf(buf, len, "%s: permission denied; join group '%s' or run as root", msg,
		 gr ? gr->gr_name : "npu");
}

/* Refresh one device: info, memory, processes, queues. */
static void sample(struct smi_dev *d)
{
	struct drm_npu_mem_usage mem = { 0 };
	npurt_status st;
	uint64_t rtt;

	/* The previous sample is what busy figures are measured against. */
	smi_clients_free(&d->prev);
	if (d->ok) {
		d->prev = d->clients;
		d->prev_t_ns = d->t_ns;
		d->prev_heartbeat = d->info.heartbeat;
		d->have_prev = 1;
	} else {
		smi_clients_free(&d->clients);
		d->have_prev = 0;
	}
	memset(&d->clients, 0, sizeof(d->clients));
	smi_queues_free(&d->queues);
	d->ok = 0;

	st = npurt_device_get_info(d->dev, &d->info);
	if (st) {
		snprintf(d->err, sizeof(d->err), "%s", npurt_last_error());
		return;
	}
	if (ioctl(npurt_device_fd(d->dev), DRM_IOCTL_NPU_GET_MEM_USAGE, &mem)) {
		snprintf(d->err, sizeof(d->err), "NPU %d: GET_MEM_USAGE: %s", d->index,
			 strerror(errno));
		return;
	}
	for (int r = 0; r < SMI_REGIONS; r++) {
		d->cur[r] = mem.dev_current[r];
		d->peak[r] = mem.dev_peak[r];
	}
	d->t_ns = now_ns();
	if (smi_scan_clients(d->info.bus_id, &d->clients)) {
		snprintf(d->err, sizeof(d->err), "cannot read /proc: %s", strerror(errno));
		return;
	}
	smi_read_queues(d->info.node, d->info.bus_id, &d->queues);
	d->io_uring = npurt_device_submit_path(d->dev) == NPURT_SUBMIT_IO_URING;
	d->ping_us = -1;
	if (opt.ping && !npurt_device_ping(d->dev, &rtt))
		d->ping_us = (double)rtt / 1000.0;
	d->ok = 1;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * Wait one interval, or less if a signal or 'q' comes: 1 to go on, 0 to
 * stop. SIGINT and SIGTERM are blocked except inside ppoll(), so one that
 * arrives between two waits is not lost.
 */
static int wait_interval(const sigset_t *unblocked, int tty)
{
	uint64_t end = now_ns() + (uint64_t)(opt.interval * 1e9);
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	uint64_t now;
	char ch;

	while (!stop && (now = now_ns()) < end) {
		struct timespec ts = { .tv_sec = (time_t)((end - now) / 1000000000ull),
				       .tv_nsec = (long)((end - now) % 1000000000ull) };
		int r = ppoll(&pfd, tty ? 1 : 0, &ts, unblocked);

		if (r > 0) {
			/* A closed terminal (hangup, EOF) ends watch as q does. */
			if (read(STDIN_FILENO, &ch, 1) != 1 || ch == 'q' || ch == 'Q')
				return 0;
		}
	}
	return !stop;
}

static int watch(struct smi_dev *devs, int n)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, unblocked;
	struct termios saved, raw;
	int tty = isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved);
	char *frame = NULL, stamp[32];
	size_t len = 0;
	time_t t;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &unblocked);
	sigdelset(&unblocked, SIGINT);
	sigdelset(&unblocked, SIGTERM);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (tty) {
		/* Keys without Enter, not echoed over the table. */
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	do {
		FILE *out = open_memstream(&frame, &len);

		if (!out)
			break;
		t = time(NULL);
		strftime(stamp, sizeof(stamp), "%F %T", localtime(&t));
		if (!opt.raw)
			fprintf(out, "npu-smi watch: every %.1f s, q or Ctrl-C quits    %s\n\n",
				opt.interval, stamp);
		smi_show(out, devs, n, opt.raw);
		fclose(out);
		/* One write per frame: the screen never shows half a table. */
		fputs("\033[H\033[2J", stdout);
		fwrite(frame, 1, len, stdout);
		fflush(stdout);
		free(frame);
		frame = NULL;
		if (!wait_interval(&unblocked, tty))
			break;
		for (int i = 0; i < n; i++)
			sample(&devs[i]);
	} while (!stop);
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	return 0;
}

/* -V: after npu-smi's and the library's, each device's driver, interface and firmware. */
static void show_versions(const struct smi_dev *devs, int n)
{
	for (int i = 0; i < n; i++) {
		const npurt_device_info *in = &devs[i].info;

		if (!devs[i].ok)
			continue;
		printf("NPU %d: driver %s %u.%u.%u, interface %u.%u, firmware %u.%u.%u\n",
		       devs[i].index, in->driver, in->driver_version[0], in->driver_version[1],
		       in->driver_version[2], in->if_version[0], in->if_version[1],
		       in->fw_version[0], in->fw_version[1], in->fw_version[2]);
	}
}

static int parse_args(int argc, char **argv)
{
	enum { QUERY_NPU = 256, FORMAT, HELP_QUERY };
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'n' },
		{ "watch", no_argument, NULL, 'w' },
		{ "raw", no_argument, NULL, 'r' },
		{ "ping", no_argument, NULL, 'p' },
		{ "query", optional_argument, NULL, 'q' },
		{ "query-npu", required_argument, NULL, QUERY_NPU },
		{ "format", required_argument, NULL, FORMAT },
		{ "help-query", no_argument, NULL, HELP_QUERY },
		{ "list", no_argument, NULL, 'L' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end, why[160];
	long idx;
	int c;

	while ((c = getopt_long(argc, argv, "d:n:wrpqLVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			idx = strtol(optarg, &end, 10);
			if (end == optarg || *end || idx < 0 || idx > 1 << 20) {
				fprintf(stderr, "npu-smi: bad device index '%s'\n", optarg);
				usage(stderr);
				return EXIT_USAGE;
			}
			opt.only = (int)idx;
			break;
		case 'n':
			opt.interval_set = 1;
			opt.interval = strtod(optarg, &end);
			if (end == optarg || *end || !(opt.interval >= 0 && opt.interval <= 3600)) {
				fprintf(stderr, "npu-smi: bad interval '%s' (seconds, 0 to 3600)\n",
					optarg);
				usage(stderr);
				return EXIT_USAGE;
			}
			break;
		case 'w':
			opt.watch = 1;
			break;
		case 'r':
			opt.raw = 1;
			break;
		case 'p':
			opt.ping = 1;
			break;
		case 'q':		/* -q, --query: the full report; --query=FIELDS: CSV */
		case QUERY_NPU:
			if (optarg)
				opt.query = optarg;
			break;
		case FORMAT:
			opt.format = optarg;
			break;
		case HELP_QUERY:
			printf("npu-smi --query=FIELDS takes, comma-separated:\n");
			smi_query_fields(stdout);
			exit(0);
		case 'L':
			opt.list = 1;
			break;
		case 'V':
			opt.version = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "watch")) {
		opt.watch = 1;
		optind++;
	}
	if (optind < argc) {
		fprintf(stderr, "npu-smi: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (opt.watch && opt.interval < 0.1) {
		fprintf(stderr, "npu-smi: watch needs an interval of at least 0.1 s\n");
		return EXIT_USAGE;
	}
	if (opt.format && !opt.query) {
		fprintf(stderr, "npu-smi: --format goes with --query=FIELDS\n");
		return EXIT_USAGE;
	}
	if (opt.query && smi_query_parse(&opt.q, opt.query, opt.format, why, sizeof(why))) {
		fprintf(stderr, "npu-smi: --query: %s\n", why);
		return EXIT_USAGE;
	}
	if (!!opt.query + opt.list + opt.version + opt.watch + opt.raw > 1) {
		fprintf(stderr, "npu-smi: --query=FIELDS, -L, -V, watch and --raw go one at a time\n");
		return EXIT_USAGE;
	}
	/* What answers at once waits no interval, unless a figure needs one. */
	if ((opt.list || opt.version || (opt.query && !smi_query_needs_interval(&opt.q))) &&
	    !opt.interval_set)
		opt.interval = 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct smi_dev *devs;
	int rc, count, first, n, opened = 0;

	rc = parse_args(argc, argv);
	if (rc)
		return rc;
	if (opt.version) {
		uint32_t v[3];

		npurt_runtime_version(&v[0], &v[1], &v[2]);
		printf("npu-smi %d.%d.%d\nlibnpurt %u.%u.%u\n", NPURT_VERSION_MAJOR,
		       NPURT_VERSION_MINOR, NPURT_VERSION_PATCH, v[0], v[1], v[2]);
	}
	if (npurt_device_count(&count)) {
		fprintf(stderr, "npu-smi: %s\n", npurt_last_error());
		return EXIT_DEVICE;
	}
	if (count == 0) {
		fprintf(stderr, "npu-smi: no NPU found (is npu.ko loaded and the device bound?)\n");
		return opt.version ? 0 : EXIT_DEVICE;
	}
	if (opt.only >= count) {
		fprintf(stderr, "npu-smi: no NPU %d: %d device%s found (indices 0 to %d)\n",
			opt.only, count, count == 1 ? "" : "s", count - 1);
		return EXIT_DEVICE;
	}
	first = opt.only >= 0 ? opt.only : 0;
	n = opt.only >= 0 ? 1 : count;
	devs = calloc((size_t)n, sizeof(*devs));
	if (!devs) {
		fprintf(stderr, "npu-smi: out of memory\n");
		return EXIT_DEVICE;
	}
	rc = 0;
	for (int i = 0; i < n; i++) {
		npurt_status st;

		devs[i].index = first + i;
		st = npurt_device_open(first + i, &devs[i].dev);
		if (st) {
			char msg[512];

			open_error(st, msg, sizeof(msg));
			fprintf(stderr, "npu-smi: %s\n", msg);
			rc = EXIT_DEVICE;
			continue;
		}
		opened++;
	}
	/* Shown are the devices that opened; any that did not fail the run. */
	for (int i = 0, j = 0; i < n; i++)
		if (devs[i].dev)
			devs[j++] = devs[i];
	n = opened;
	if (n == 0)
		goto out;

	for (int i = 0; i < n; i++)
		sample(&devs[i]);
	if (opt.watch) {
		rc = watch(devs, n);
	} else {
		if (opt.interval > 0) {
			struct timespec ts = { .tv_sec = (time_t)opt.interval,
					       .tv_nsec = (long)((opt.interval - (double)(time_t)opt.interval) * 1e9) };

			nanosleep(&ts, NULL);
			for (int i = 0; i < n; i++)
				sample(&devs[i]);
		}
		if (opt.list)
			smi_list(stdout, devs, n);
		else if (opt.query)
			smi_query_show(stdout, &opt.q, devs, n);
		else if (opt.version)
			show_versions(devs, n);
		else
			smi_show(stdout, devs, n, opt.raw);
		for (int i = 0; i < n; i++)
			if (!devs[i].ok)
				rc = EXIT_DEVICE;
	}
out:
	for (int i = 0; i < n; i++) {
		smi_clients_free(&devs[i].clients);
		smi_clients_free(&devs[i].prev);
		smi_queues_free(&devs[i].queues);
		npurt_device_close(devs[i].dev);
	}
	free(devs);
	return rc;
}
