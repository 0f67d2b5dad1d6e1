/* SPDX-License-Identifier: MIT */
/*
 * npu-smi's view of the system: who holds an NPU open (fdinfo) and what
 * its queues are doing (debugfs). Kept apart from the device calls so it
 * needs nothing but /proc and /sys.
 */
#ifndef NPU_SMI_H
#define NPU_SMI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "npurt.h"

/* The regions of drm_npu_mem_usage, in its order (uapi/drm/npu_accel.h). */
enum { SMI_HBM, SMI_HOST, SMI_PAGE_TABLES, SMI_QUEUES, SMI_REGIONS };

/* One open file of the device in one process: a driver context. */
struct smi_client {
	pid_t pid;
	char comm[32];
	unsigned int id;		/* npu-context: the hardware queues' context */
	uint64_t engine_ns;		/* drm-engine-npu */
	uint64_t mem[SMI_REGIONS];	/* drm-total-<region>, bytes */
};

struct smi_clients {
	struct smi_client *v;
	size_t n, cap;
	int hidden;	/* some process's files could not be read (not ours) */
};

/* Every context of the device at PCI address bus_id ("" matches any NPU),
 * this process's own left out. 0, or -errno when /proc cannot be read. */
int smi_scan_clients(const char *bus_id, struct smi_clients *out);
void smi_clients_free(struct smi_clients *c);

/* One line of debugfs npu_queues. */
struct smi_queue {
	unsigned int hw, ctx, queue, prio, pending;
	uint64_t head, tail, done, submitted;
	char state[12], status[12];
};

struct smi_queues {
	int err;		/* 0, or errno reading debugfs (EACCES: not root) */
	char path[96];		/* the file read, or the first one tried */
	struct smi_queue *v;
	size_t n;
	long syncs, resets, wedged, uring_cmds;	/* -1 when not printed */
};

/* Read debugfs npu_queues of the device whose node is `node`. Failing to
 * read leaves out->err set, never fails the caller. */
void smi_read_queues(const char *node, const char *bus_id, struct smi_queues *out);
void smi_queues_free(struct smi_queues *q);

/* One device and its last two samples: busy figures are their difference. */
struct smi_dev {
	int index;
	npurt_device *dev;
	int ok;				/* the last sample worked */
	char err[256];			/* else why not */
	npurt_device_info info;
	int io_uring;			/* the submission path libnpurt took */
	uint64_t cur[SMI_REGIONS], peak[SMI_REGIONS];	/* device-wide, GET_MEM_USAGE */
	struct smi_clients clients;
	struct smi_queues queues;
	uint64_t t_ns;
	int have_prev;
	uint64_t prev_t_ns, prev_heartbeat;
	struct smi_clients prev;
	double ping_us;			/* < 0: not asked, or failed */
};

/* The devices' last samples, as tables or (raw) key=value records. */
void smi_show(FILE *out, const struct smi_dev *devs, int n, int raw);

/* show.c's figures: busy percent over the interval (NAN: none yet), heartbeat
 * state ("alive", "STALLED", "-"), HBM in use and free, bytes. */
double smi_device_busy(const struct smi_dev *d);
const char *smi_heartbeat_state(const struct smi_dev *d);
uint64_t smi_hbm_used(const struct smi_dev *d);
uint64_t smi_hbm_free(const struct smi_dev *d);

/* query.c: one line per device, "NPU 0: npu at 0000:00:02.0 (/dev/accel/accel0)..." (-L). */
void smi_list(FILE *out, const struct smi_dev *devs, int n);

/* CSV output of --query: its fields and format, checked before any device opens. */
#define SMI_MAX_FIELDS	32
struct smi_query {
	int field[SMI_MAX_FIELDS];	/* indices into query.c's table */
	int n;
	int header, units;		/* --format's noheader, nounits turn them off */
};

/* Parse "index,memory.used" and "csv,noheader,nounits": 0, or -1 with why in err. */
int smi_query_parse(struct smi_query *q, const char *fields, const char *format, char *err,
		    size_t len);
/* Whether a field needs two samples an interval apart (utilization.npu, heartbeat). */
int smi_query_needs_interval(const struct smi_query *q);
/* The header line and a line per device. */
void smi_query_show(FILE *out, const struct smi_query *q, const struct smi_dev *devs, int n);
/* Every field, a line each with what it holds (--help-query). */
void smi_query_fields(FILE *out);

#endif
