// SPDX-License-Identifier: MIT
/*
 * Logging, silent by default: NPURT_LOG=error|warn|info|debug (read once,
 * at the first message) sets how much, NPURT_LOG_FILE where (appended;
 * stderr without it, or when it cannot be opened, which is said once).
 * A line: "npurt <seconds since the first line> <pid>.<tid> <LEVEL> <text>",
 * written whole with one write(), so threads and processes sharing a file
 * never interleave inside one.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *const names[] = { "off", "error", "warn", "info", "debug" };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int level;		/* enum npurt_log_level: what is written */
static int out = 2;
static double start;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void setup(void)
{
	const char *want = getenv("NPURT_LOG"), *file = getenv("NPURT_LOG_FILE");

	start = mono_s();
	for (int i = NPURT_LOG_ERROR; want && i <= NPURT_LOG_DEBUG; i++)
		if (!strcmp(want, names[i]))
			level = i;
	if (want && !level && strcmp(want, "off"))
		dprintf(2, "npurt: NPURT_LOG=%s: not off, error, warn, info or debug; "
			"logging stays off\n", want);
	if (level && file && *file) {
		int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0)
			out = fd;
		else
			dprintf(2, "npurt: NPURT_LOG_FILE=%s: cannot open it (%m); logging to "
				"stderr\n", file);
	}
}

bool npurt_log_on(enum npurt_log_level l)
{
	pthread_once(&once, setup);
	return (int)l <= level;
}

void npurt_log(enum npurt_log_level l, const char *fmt, ...)
{
	char line[768];
	va_list ap;
	int n;

	if (!npurt_log_on(l))
		return;
	n = snprintf(line, sizeof(line), "npurt %.6f %d.%ld %-5s ", mono_s() - start, getpid(),
		     (long)syscall(SYS_gettid), names[l]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(out, line, n) < 0)
		return;	/* nowhere left to say so */
}
