// SPDX-License-Identifier: MIT
/*
 * npu-smi -L and --query: the one-line list and the CSV of chosen fields
 * that scripts written for nvidia-smi reach for first. Field names follow
 * nvidia-smi's where the meaning is the same (index, pci.bus_id,
 * memory.used, utilization...); the NPU's own have names of their kind.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "smi.h"

enum unit { NONE, MIB, PERCENT };

struct field {
	const char *name;
	enum unit unit;
	const char *help;
};

enum {
	F_INDEX, F_COUNT, F_NAME, F_BUS, F_NODE, F_DRIVER, F_FIRMWARE, F_INTERFACE,
	F_MEM_TOTAL, F_MEM_RESERVED, F_MEM_USED, F_MEM_FREE, F_UTIL, F_CORES, F_GROUPS,
	F_COPY, F_QUEUES, F_HEARTBEAT, F_PROCESSES,
};

static const struct field fields[] = {
	[F_INDEX] = { "index", NONE, "the device's index (-d)" },
	[F_COUNT] = { "count", NONE, "how many devices are listed" },
	[F_NAME] = { "name", NONE, "the driver's name" },
	[F_BUS] = { "pci.bus_id", NONE, "PCI address" },
	[F_NODE] = { "node", NONE, "device node" },
	[F_DRIVER] = { "driver_version", NONE, "npu.ko's version" },
	[F_FIRMWARE] = { "firmware_version", NONE, "the firmware's version" },
	[F_INTERFACE] = { "interface_version", NONE, "the kernel-device interface's" },
	[F_MEM_TOTAL] = { "memory.total", MIB, "HBM" },
	[F_MEM_RESERVED] = { "memory.reserved", MIB, "HBM the firmware keeps" },
	[F_MEM_USED] = { "memory.used", MIB, "HBM in use, device-wide" },
	[F_MEM_FREE] = { "memory.free", MIB, "HBM left" },
	[F_UTIL] = { "utilization.npu", PERCENT, "busy over the interval (-n)" },
	[F_CORES] = { "cores", NONE, "AI cores" },
	[F_GROUPS] = { "core_groups", NONE, "launches computing at once" },
	[F_COPY] = { "copy_engines", NONE, "copies moving at once" },
	[F_QUEUES] = { "queues", NONE, "hardware queues" },
	[F_HEARTBEAT] = { "heartbeat", NONE, "alive or STALLED over the interval" },
	[F_PROCESSES] = { "processes", NONE, "contexts open (of other users: root)" },
};

#define N_FIELDS	(int)(sizeof(fields) / sizeof(fields[0]))

void smi_list(FILE *out, const struct smi_dev *devs, int n)
{
	for (int i = 0; i < n; i++) {
		const npurt_device_info *in = &devs[i].info;

		if (!devs[i].ok) {
			fprintf(out, "NPU %d: %s\n", devs[i].index, devs[i].err);
			continue;
		}
		fprintf(out, "NPU %d: %s at %s (%s), firmware %u.%u.%u, %" PRIu64 " MiB\n",
			devs[i].index, in->driver, in->bus_id[0] ? in->bus_id : "?", in->node,
			in->fw_version[0], in->fw_version[1], in->fw_version[2],
			in->hbm_size >> 20);
	}
}

void smi_query_fields(FILE *out)
{
	for (int f = 0; f < N_FIELDS; f++)
		fprintf(out, "  %-20s %s%s\n", fields[f].name, fields[f].help,
			fields[f].unit == MIB ? " [MiB]" : fields[f].unit == PERCENT ? " [%]" : "");
}

static int lookup(const char *name, size_t len)
{
	for (int f = 0; f < N_FIELDS; f++)
		if (strlen(fields[f].name) == len && !strncmp(fields[f].name, name, len))
			return f;
	return -1;
}

int smi_query_parse(struct smi_query *q, const char *list, const char *format, char *err,
		    size_t len)
{
	const char *p = list;

	memset(q, 0, sizeof(*q));
	q->header = q->units = 1;
	while (*p) {
		size_t n = strcspn(p, ",");
		int f = lookup(p, n);

		if (f < 0) {
			snprintf(err, len, "no field '%.*s' (npu-smi --help-query lists them)",
				 (int)n, p);
			return -1;
		}
		if (q->n == SMI_MAX_FIELDS) {
			snprintf(err, len, "more than %d fields", SMI_MAX_FIELDS);
			return -1;
		}
		q->field[q->n++] = f;
		p += n + (p[n] == ',');
	}
	if (!q->n) {
		snprintf(err, len, "--query names no field");
		return -1;
	}
	for (p = format ? format : "csv"; *p;) {
		size_t n = strcspn(p, ",");

		if (n == 8 && !strncmp(p, "noheader", n)) {
			q->header = 0;
		} else if (n == 7 && !strncmp(p, "nounits", n)) {
			q->units = 0;
		} else if (!(n == 3 && !strncmp(p, "csv", n))) {
			snprintf(err, len, "format '%.*s': csv, noheader, nounits", (int)n, p);
			return -1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

int smi_query_needs_interval(const struct smi_query *q)
{
	for (int i = 0; i < q->n; i++)
		if (q->field[i] == F_UTIL || q->field[i] == F_HEARTBEAT)
			return 1;
	return 0;
}

/* One value as nvidia-smi writes it: "512 MiB", "37 %", "[N/A]". */
static void value(FILE *out, const struct smi_query *q, int f, const struct smi_dev *d, int n)
{
	const npurt_device_info *in = &d->info;
	const char *unit = fields[f].unit == MIB ? " MiB" : fields[f].unit == PERCENT ? " %" : "";
	double busy;

	if (!q->units)
		unit = "";
	if (!d->ok && f != F_INDEX && f != F_COUNT) {
		fputs("[N/A]", out);
		return;
	}
	switch (f) {
	case F_INDEX:
		fprintf(out, "%d", d->index);
		break;
	case F_COUNT:
		fprintf(out, "%d", n);
		break;
	case F_NAME:
		fputs(in->driver, out);
		break;
	case F_BUS:
		fputs(in->bus_id[0] ? in->bus_id : "[N/A]", out);
		break;
	case F_NODE:
		fputs(in->node, out);
		break;
	case F_DRIVER:
		fprintf(out, "%u.%u.%u", in->driver_version[0], in->driver_version[1],
			in->driver_version[2]);
		break;
	case F_FIRMWARE:
		fprintf(out, "%u.%u.%u", in->fw_version[0], in->fw_version[1], in->fw_version[2]);
		break;
	case F_INTERFACE:
		fprintf(out, "%u.%u", in->if_version[0], in->if_version[1]);
		break;
	case F_MEM_TOTAL:
	case F_MEM_RESERVED:
	case F_MEM_USED:
	case F_MEM_FREE:
		fprintf(out, "%" PRIu64 "%s", (f == F_MEM_TOTAL ? in->hbm_size :
					      f == F_MEM_RESERVED ? in->hbm_reserved :
					      f == F_MEM_USED ? smi_hbm_used(d) : smi_hbm_free(d)) >> 20,
			unit);
		break;
	case F_UTIL:
		busy = smi_device_busy(d);
		if (isnan(busy))
			fputs("[N/A]", out);
		else
			fprintf(out, "%.0f%s", busy, unit);
		break;
	case F_CORES:
		fprintf(out, "%u", in->core_count);
		break;
	case F_GROUPS:
		fprintf(out, "%u", in->core_group_count);
		break;
	case F_COPY:
		fprintf(out, "%u", in->dma_engine_count);
		break;
	case F_QUEUES:
		fprintf(out, "%u", in->queue_count);
		break;
	case F_HEARTBEAT:
		fputs(smi_heartbeat_state(d), out);
		break;
	case F_PROCESSES:
		fprintf(out, "%zu", d->clients.n);
		break;
	}
}

void smi_query_show(FILE *out, const struct smi_query *q, const struct smi_dev *devs, int n)
{
	if (q->header) {
		for (int i = 0; i < q->n; i++) {
			const struct field *f = &fields[q->field[i]];

			/* nounits takes them from the values; the header still says them. */
			fprintf(out, "%s%s%s", i ? ", " : "", f->name,
				f->unit == MIB ? " [MiB]" : f->unit == PERCENT ? " [%]" : "");
		}
		fputc('\n', out);
	}
	for (int d = 0; d < n; d++) {
		for (int i = 0; i < q->n; i++) {
			if (i)
				fputs(", ", out);
			value(out, q, q->field[i], &devs[d], n);
		}
		fputc('\n', out);
	}
}
