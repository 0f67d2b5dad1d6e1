// SPDX-License-Identifier: MIT
/*
 * Who uses an NPU: every process's open files of the device, from
 * /proc/<pid>/fdinfo (the drm-usage-stats keys the driver prints), and the
 * hardware queues from debugfs npu_queues. Formats: Documentation/uapi.rst,
 * "Statistics", and kernel/npu_stats.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "smi.h"

static const char *const region_keys[SMI_REGIONS] = {
	[SMI_HBM] = "drm-total-hbm:",
	[SMI_HOST] = "drm-total-host:",
	[SMI_PAGE_TABLES] = "drm-total-pagetables:",
	[SMI_QUEUES] = "drm-total-queues:",
};

/* Value of "key:\tvalue" in an fdinfo text, or NULL. */
static const char *fdinfo_value(const char *text, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, len))
			return p + len + strspn(p + len, " \t");
	}
	return NULL;
}

/* A whole small file into buf (NUL-terminated): bytes read, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	n = got ? got : (n < 0 ? -errno : 0);
	close(fd);
	buf[got] = '\0';
	return n;
}

static int add_client(struct smi_clients *c, const struct smi_client *cl)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct smi_client *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = *cl;
	return 0;
}

/*
 * Parse one fdinfo: 1 when it is an npu file of the device at bus_id, 0
 * when not. The driver prints memory in KiB.
 */
static int parse_fdinfo(const char *text, const char *bus_id, struct smi_client *cl)
{
	const char *v = fdinfo_value(text, "drm-driver:");
	size_t len;

	if (!v || strncmp(v, "npu", 3) || (v[3] != '\n' && v[3] != '\0'))
		return 0;
	v = fdinfo_value(text, "drm-pdev:");
	len = strlen(bus_id);
	if (len && (!v || strncmp(v, bus_id, len) || (v[len] != '\n' && v[len] != '\0')))
		return 0;
	v = fdinfo_value(text, "npu-context:");
	cl->id = v ? (unsigned int)strtoul(v, NULL, 10) : 0;
	v = fdinfo_value(text, "drm-engine-npu:");
	cl->engine_ns = v ? strtoull(v, NULL, 10) : 0;
	for (int r = 0; r < SMI_REGIONS; r++) {
		v = fdinfo_value(text, region_keys[r]);
		cl->mem[r] = v ? strtoull(v, NULL, 10) << 10 : 0;
	}
	return 1;
}

/* The open files of one process that are this device's contexts. */
static int scan_pid(pid_t pid, const char *bus_id, struct smi_clients *out)
{
	char path[64], target[64], text[4096];
	struct smi_client cl = { .pid = pid };
	struct dirent *de;
	int ret = 0, seen;
	ssize_t n;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir) {
		if (errno == EACCES || errno == EPERM)
			out->hidden = 1;
		return 0;	/* gone, or not ours to read */
	}
	while (!ret && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		/* Only device nodes need their fdinfo read: cheap filter. */
		snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", (int)pid, de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "/dev/dri/", 9) && strncmp(target, "/dev/accel/", 11))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%.16s", (int)pid, de->d_name);
		if (read_small(path, text, sizeof(text)) <= 0 || !parse_fdinfo(text, bus_id, &cl))
			continue;
		/* A file shared by dup() or fork() is one context: count it once
		 * per process. */
		seen = 0;
		for (size_t i = 0; i < out->n; i++)
			seen |= out->v[i].pid == pid && out->v[i].id == cl.id;
		if (seen)
			continue;
		if (!cl.comm[0]) {
			snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
			if (read_small(path, cl.comm, sizeof(cl.comm)) > 0)
				cl.comm[strcspn(cl.comm, "\n")] = '\0';
			else
				snprintf(cl.comm, sizeof(cl.comm), "?");
		}
		ret = add_client(out, &cl);
	}
	closedir(dir);
	return ret;
}

static int by_pid_then_id(const void *a, const void *b)
{
	const struct smi_client *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int smi_scan_clients(const char *bus_id, struct smi_clients *out)
{
	pid_t self = getpid();
	struct dirent *de;
	int ret = 0;
	DIR *proc;

	memset(out, 0, sizeof(*out));
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!ret && (de = readdir(proc))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		ret = scan_pid((pid_t)pid, bus_id, out);
	}
	closedir(proc);
	if (ret) {
		smi_clients_free(out);
		return ret;
	}
	qsort(out->v, out->n, sizeof(*out->v), by_pid_then_id);
	return 0;
}

void smi_clients_free(struct smi_clients *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* Open the first of the places debugfs may keep the device's npu_queues. */
static FILE *open_queues(const char *node, const char *bus_id, struct smi_queues *out)
{
	char cand[4][80];
	struct stat st;
	int n = 0;

	if (!stat(node, &st)) {
		unsigned int m = minor(st.st_rdev);

		snprintf(cand[n++], sizeof(cand[0]), "/sys/kernel/debug/%s/%u/npu_queues",
			 strncmp(node, "/dev/accel/", 11) ? "dri" : "accel", m);
		/* Kernels that give only the primary minor a directory. */
		if (m >= 128)
			snprintf(cand[n++], sizeof(cand[0]), "/sys/kernel/debug/dri/%u/npu_queues",
				 m - 128);
	}
	/* Kernels with one directory per device, named by its bus id. */
	if (bus_id[0]) {
		snprintf(cand[n++], sizeof(cand[0]), "/sys/kernel/debug/dri/%.24s/npu_queues", bus_id);
		snprintf(cand[n++], sizeof(cand[0]), "/sys/kernel/debug/accel/%.24s/npu_queues",
			 bus_id);
	}
	out->err = ENOENT;
	_Static_assert(sizeof(out->path) >= sizeof(cand[0]), "a candidate fits out->path");
	memcpy(out->path, n ? cand[0] : "/sys/kernel/debug", n ? sizeof(cand[0]) : 18);
	for (int i = 0; i < n; i++) {
		FILE *f = fopen(cand[i], "re");

		if (f) {
			memcpy(out->path, cand[i], sizeof(cand[i]));
			out->err = 0;
			return f;
		}
		/* Not root: debugfs itself is closed, say so rather than ENOENT. */
		if (errno != ENOENT)
			out->err = errno;
	}
	if (out->err == ENOENT && access("/sys/kernel/debug", X_OK) && errno == EACCES)
		out->err = EACCES;
	return NULL;
}

void smi_read_queues(const char *node, const char *bus_id, struct smi_queues *out)
{
	char *line = NULL;
	size_t cap = 0, room = 0;
	FILE *f;

	memset(out, 0, sizeof(*out));
	out->syncs = out->resets = out->wedged = out->uring_cmds = -1;
	f = open_queues(node, bus_id, out);
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		struct smi_queue q = { 0 };

		if (sscanf(line, "%u %u %u %u %11s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			   " %u %11s", &q.hw, &q.ctx, &q.queue, &q.prio, q.state, &q.head, &q.tail,
			   &q.done, &q.submitted, &q.pending, q.status) == 11) {
			if (out->n == room) {
				struct smi_queue *v;

				room = room ? room * 2 : 16;
				v = realloc(out->v, room * sizeof(*v));
				if (!v) {
					out->err = ENOMEM;
					break;
				}
				out->v = v;
			}
			out->v[out->n++] = q;
			continue;
		}
		sscanf(line, "events and notifies in use: %ld", &out->syncs);
		sscanf(line, "device resets: %ld", &out->resets);
		sscanf(line, "wedged: %ld", &out->wedged);
		sscanf(line, "io_uring commands: %ld", &out->uring_cmds);
	}
	/* A device that went away mid-read fails the read, not the tool. */
	if (ferror(f) && !out->err)
		out->err = errno ? errno : EIO;
	free(line);
	fclose(f);
}

void smi_queues_free(struct smi_queues *q)
{
	free(q->v);
	q->v = NULL;
	q->n = 0;
}
