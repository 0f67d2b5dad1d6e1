// SPDX-License-Identifier: MIT
/*
 * npu-prof: profile any program linked with libnpurt, and summarise a
 * profile.
 *
 *   npu-prof [-o FILE] [-s] -- CMD [ARGS]   run CMD with NPURT_PROFILE=FILE
 *   npu-prof --summary FILE                 a table of the device's tasks
 *                                           and the host's calls in FILE
 *   npu-prof --compare DIR REF              the first op whose output in
 *                                           dump DIR differs from REF's
 *   npu-prof --check-nan DIR                the first op whose output in
 *                                           dump DIR has a NaN or an Inf
 *
 * The program writes the profile itself, when it closes its device
 * (libnpurt reads NPURT_PROFILE at npurt_device_open()), as nsys and
 * msprof inject theirs: nothing here touches the device.
 * Documentation/profiling.rst walks through it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npu-prof/dump.h"
#include "npu-prof/trace.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

static void usage(FILE *out)
{
	fprintf(out,
		"usage: npu-prof [OPTIONS] -- CMD [ARGS]   profile CMD (it must use libnpurt)\n"
		"       npu-prof --summary FILE             summarise a profile\n"
		"       npu-prof --compare DIR REF          compare dumps (npurun --dump)\n"
		"       npu-prof --check-nan DIR            find where NaN or Inf appeared\n"
		"\n"
		"  -o, --output FILE      where CMD writes its profile (default npu-prof.json);\n"
		"                         Chrome trace-event JSON, for ui.perfetto.dev\n"
		"  -s, --stats            print the summary once CMD is done\n"
		"  -r, --records N        the device's ring, in records (a power of two,\n"
		"                         default 16384): raise it when the profile says\n"
		"                         records were dropped\n"
		"      --summary FILE     per task and per call: calls, total, mean, min, max\n"
		"                         and share of the time, longest first\n"
		"      --compare DIR REF  name the first op of dump DIR (npurun --dump) whose\n"
		"                         tensor differs from REF's (npurun --dump-ref, or\n"
		"                         NAME.npy files of another runtime)\n"
		"      --atol A, --rtol R equal within A + R x |ref| (default 1e-4, 1e-3)\n"
		"      --check-nan DIR    name the first op of dump DIR whose output has a\n"
		"                         NaN or an Inf\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: CMD's; 1 no profile written or one that cannot be read, dumps\n"
		"that differ, a NaN or Inf found; 2 bad usage, a dump that cannot be read.\n");
}

/* One row: the slices of one name. */
struct row {
	char name[128];
	unsigned long calls;
	double total, min, max;
};

static int by_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->name, y->name);
}

/* Add the slice of `name` and `dur` us to the table. */
static int add(struct row **rows, size_t *n, size_t *cap, const char *name, double dur)
{
	size_t i;

	for (i = 0; i < *n && strcmp((*rows)[i].name, name); i++)
		;
	if (i == *n) {
		if (*n == *cap) {
			struct row *r = realloc(*rows, (*cap ? 2 * *cap : 64) * sizeof(*r));

			if (!r)
				return -1;
			*rows = r;
			*cap = *cap ? 2 * *cap : 64;
		}
		memset(&(*rows)[i], 0, sizeof(**rows));
		snprintf((*rows)[i].name, sizeof((*rows)[i].name), "%s", name);
		(*rows)[i].min = (*rows)[i].max = dur;
		(*n)++;
	}
	(*rows)[i].calls++;
	(*rows)[i].total += dur;
	if (dur < (*rows)[i].min)
		(*rows)[i].min = dur;
	if (dur > (*rows)[i].max)
		(*rows)[i].max = dur;
	return 0;
}

static void table(const char *title, struct row *rows, size_t n)
{
	double all = 0;

	for (size_t i = 0; i < n; i++)
		all += rows[i].total;
	qsort(rows, n, sizeof(*rows), by_total);
	printf("%s\n\n %8s %12s %8s %10s %10s %10s  %s\n", title, "Time (%)", "Total (us)",
	       "Calls", "Mean (us)", "Min (us)", "Max (us)", "Name");
	for (size_t i = 0; i < n; i++)
		printf(" %8.1f %12.1f %8lu %10.1f %10.1f %10.1f  %s\n",
		       all > 0 ? 100.0 * rows[i].total / all : 0.0, rows[i].total, rows[i].calls,
		       rows[i].total / (double)rows[i].calls, rows[i].min, rows[i].max,
		       rows[i].name);
	if (!n)
		printf(" (none)\n");
	printf("\n");
}

/*
 * Device tasks are the slices on a stream's track (each also lies on its
 * unit's); host calls the slices of the host process.
 */
static int summary(const char *path)
{
	struct row *dev = NULL, *host = NULL;
	size_t ndev = 0, capdev = 0, nhost = 0, caphost = 0;
	struct trace t;
	char err[256];
	int ret = 0;

	if (trace_read(path, &t, err, sizeof(err))) {
		fprintf(stderr, "npu-prof: %s: %s\n", path, err);
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < t.n && !ret; i++) {
		const struct trace_event *e = &t.ev[i];
		const char *track;

		if (e->ph != 'X' || !e->has_dur)
			continue;
		track = trace_thread_name(&t, e->pid, e->tid);
		if (track && !strncmp(track, "stream", 6))
			ret = add(&dev, &ndev, &capdev, e->name, e->dur);
		else if (!e->type[0] && e->pid == 1)
			ret = add(&host, &nhost, &caphost, e->name, e->dur);
	}
	if (ret) {
		fprintf(stderr, "npu-prof: out of memory\n");
		ret = EXIT_FAIL;
	} else {
		table("Device tasks (time executing, or waiting for an event or notify)", dev,
		      ndev);
		table("Host calls", host, nhost);
		if (t.dropped > 0)
			printf("The device dropped %lld records: its ring was full (npu-prof -r).\n",
			       t.dropped);
	}
	free(dev);
	free(host);
	trace_free(&t);
	return ret;
}

static int run(char **argv, const char *out, const char *records, bool stats)
{
	struct stat before, after;
	bool had = !stat(out, &before);
	int status;
	pid_t pid;

	if (setenv("NPURT_PROFILE", out, 1) || (records && setenv("NPURT_PROFILE_RECORDS",
								   records, 1))) {
		fprintf(stderr, "npu-prof: setenv: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "npu-prof: fork: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "npu-prof: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "npu-prof: waitpid: %s\n", strerror(errno));
			return EXIT_FAIL;
		}
	if (stat(out, &after) || (had && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
				  after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)) {
		fprintf(stderr, "npu-prof: %s wrote no profile to %s (does it use libnpurt, "
			"and close its devices?)\n", argv[0], out);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
		return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : EXIT_FAIL;
	}
	fprintf(stderr, "npu-prof: profile in %s (open it in ui.perfetto.dev)\n", out);
	if (stats && summary(out))
		return EXIT_FAIL;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "stats", no_argument, NULL, 's' },
		{ "records", required_argument, NULL, 'r' },
		{ "summary", required_argument, NULL, 'S' },
		{ "compare", required_argument, NULL, 'C' },
		{ "atol", required_argument, NULL, 'A' },
		{ "rtol", required_argument, NULL, 'T' },
		{ "check-nan", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out = "npu-prof.json", *records = NULL, *sum = NULL, *cmp = NULL, *nan = NULL;
	const char *ref = NULL;
	double atol = 1e-4, rtol = 1e-3;
	bool stats = false;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "+o:sr:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			stats = true;
			break;
		case 'r':
			records = optarg;
			break;
		case 'S':
			sum = optarg;
			break;
		case 'C':
			/* REF is the option's second argument: options may follow it. */
			cmp = optarg;
			if (optind < argc && argv[optind][0] != '-')
				ref = argv[optind++];
			break;
		case 'N':
			nan = optarg;
			break;
		case 'A':
		case 'T':
			*(c == 'A' ? &atol : &rtol) = strtod(optarg, &end);
			if (end == optarg || *end || !(atol >= 0) || !(rtol >= 0)) {
				fprintf(stderr, "npu-prof: --%s %s: not a tolerance\n",
					c == 'A' ? "atol" : "rtol", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (cmp || nan) {
		if (!!cmp + !!nan + !!sum != 1 || optind != argc || (cmp && !ref)) {
			fprintf(stderr, "npu-prof: --compare DIR REF, or --check-nan DIR\n");
			return EXIT_USAGE;
		}
		return cmp ? dump_compare(cmp, ref, atol, rtol) : dump_check_nan(nan);
	}
	if (sum) {
		if (optind < argc) {
			fprintf(stderr, "npu-prof: --summary takes a file, not a command\n");
			return EXIT_USAGE;
		}
		return summary(sum);
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	return run(argv + optind, out, records, stats);
}
