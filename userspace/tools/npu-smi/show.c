// SPDX-License-Identifier: MIT
/*
 * npu-smi's output: the figures of two samples as tables for people and as
 * key=value records for scripts (Documentation/runtime.rst, "npu-smi").
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "smi.h"

/* "512.0 MiB": one decimal, the largest unit under 1024. */
static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

static const char *human_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	return buf;
}

/* Engine time a client gained since the previous sample: all of it for a
 * context opened since, so short-lived processes still count. */
static uint64_t engine_delta(const struct smi_dev *d, const struct smi_client *c)
{
	for (size_t i = 0; d->have_prev && i < d->prev.n; i++) {
		const struct smi_client *p = &d->prev.v[i];

		if (p->pid == c->pid && p->id == c->id)
			return c->engine_ns >= p->engine_ns ? c->engine_ns - p->engine_ns : 0;
	}
	return d->have_prev ? c->engine_ns : 0;
}

/*
 * Busy, in percent of the interval: a context's queue time over wall
 * time. Several queues busy at once count each, as top counts threads;
 * the device figure sums its contexts (each once, however many processes
 * share it) and stops at 100.
 */
static double client_busy(const struct smi_dev *d, const struct smi_client *c)
{
	uint64_t dt = d->t_ns - d->prev_t_ns;

	return d->have_prev && dt ? 100.0 * (double)engine_delta(d, c) / (double)dt : NAN;
}

double smi_device_busy(const struct smi_dev *d)
{
	uint64_t dt = d->t_ns - d->prev_t_ns, sum = 0;

	if (!d->have_prev || !dt)
		return NAN;
	for (size_t i = 0; i < d->clients.n; i++) {
		size_t j;

		for (j = 0; j < i && d->clients.v[j].id != d->clients.v[i].id; j++)
			;
		if (j == i)
			sum += engine_delta(d, &d->clients.v[i]);
	}
	return sum >= dt ? 100.0 : 100.0 * (double)sum / (double)dt;
}

/* Firmware heartbeat over the interval: alive, stalled, or not known yet. */
const char *smi_heartbeat_state(const struct smi_dev *d)
{
	if (!d->have_prev)
		return "-";
	if (d->info.heartbeat != d->prev_heartbeat)
		return "alive";
	/* One missed beat is jitter; two is a firmware that stopped. */
	return d->t_ns - d->prev_t_ns >= 2ull * d->info.heartbeat_ms * 1000000ull ? "STALLED" : "-";
}

uint64_t smi_hbm_used(const struct smi_dev *d)
{
	return d->cur[SMI_HBM] + d->cur[SMI_PAGE_TABLES] +
	       d->cur[SMI_QUEUES];
}

uint64_t smi_hbm_free(const struct smi_dev *d)
{
	uint64_t usable = d->info.hbm_size - d->info.hbm_reserved, used = smi_hbm_used(d);

	return usable > used ? usable - used : 0;
}

static const char *prio_name(unsigned int p)
{
	static const char *const names[] = { "low", "normal", "high", "realtime" };

	return p < 4 ? names[p] : "?";
}

/* The process owning context `id` (the first, if several share it). */
static const struct smi_client *owner(const struct smi_dev *d, unsigned int id)
{
	for (size_t i = 0; i < d->clients.n; i++)
		if (d->clients.v[i].id == id)
			return &d->clients.v[i];
	return NULL;
}

static unsigned int queues_of(const struct smi_dev *d, unsigned int id)
{
	unsigned int n = 0;

	for (size_t i = 0; i < d->queues.n; i++)
		n += d->queues.v[i].ctx == id;
	return n;
}

static void show_human(FILE *out, const struct smi_dev *d)
{
	const npurt_device_info *in = &d->info;
	char a[32], b[32], c[32], e[32];
	double busy;

	if (!d->ok) {
		fprintf(out, "NPU %d: %s\n", d->index, d->err);
		return;
	}
	fprintf(out, "NPU %d  %s  pci %s\n", d->index, in->node, in->bus_id[0] ? in->bus_id : "?");
	fprintf(out, "  driver        %s %u.%u.%u, interface %u.%u, firmware %u.%u.%u, submission %s\n",
		in->driver, in->driver_version[0], in->driver_version[1], in->driver_version[2],
		in->if_version[0], in->if_version[1], in->fw_version[0], in->fw_version[1],
		in->fw_version[2],
		d->io_uring ? "io_uring" : "ioctl");
	fprintf(out, "  compute       %u AI cores in %u groups, %u copy engines, %u queues\n",
		in->core_count, in->core_group_count, in->dma_engine_count, in->queue_count);
	fprintf(out, "  heartbeat     %" PRIu64 " every %u ms: %s\n", in->heartbeat,
		in->heartbeat_ms, smi_heartbeat_state(d));
	if (d->ping_us >= 0)
		fprintf(out, "  mailbox ping  %.1f us\n", d->ping_us);
	busy = smi_device_busy(d);
	if (isnan(busy))
		fprintf(out, "  busy          - (not measured: no interval yet)\n");
	else
		fprintf(out, "  busy          %.1f%% over %.1f s\n", busy,
			(double)(d->t_ns - d->prev_t_ns) / 1e9);
	fprintf(out, "  HBM           %s total, %s firmware, %s used, %s free\n",
		human(in->hbm_size, a, sizeof(a)), human(in->hbm_reserved, b, sizeof(b)),
		human(smi_hbm_used(d), c, sizeof(c)), human(smi_hbm_free(d), e, sizeof(e)));
	fprintf(out, "  HBM used      buffers %s (peak %s), page tables %s, queue rings %s\n",
		human(d->cur[SMI_HBM], a, sizeof(a)),
		human(d->peak[SMI_HBM], b, sizeof(b)),
		human(d->cur[SMI_PAGE_TABLES], c, sizeof(c)),
		human(d->cur[SMI_QUEUES], e, sizeof(e)));
	/* Exact, for scripts that compare before and after (tests/selftests/run). */
	fprintf(out, "  HBM in use    %" PRIu64 " bytes\n", smi_hbm_used(d));
	fprintf(out, "  host memory   %s registered (peak %s)\n",
		human(d->cur[SMI_HOST], a, sizeof(a)),
		human(d->peak[SMI_HOST], b, sizeof(b)));

	fprintf(out, "  processes%s\n", d->clients.n ? "" : "     none");
	if (d->clients.n)
		fprintf(out, "    %7s  %-15s %7s %10s %10s %6s %7s %10s\n", "PID", "COMMAND",
			"CONTEXT", "HBM", "HOST", "QUEUES", "BUSY", "ENGINE");
	for (size_t i = 0; i < d->clients.n; i++) {
		const struct smi_client *cl = &d->clients.v[i];
		double pct = client_busy(d, cl);
		char q[16], p[16];

		snprintf(q, sizeof(q), d->queues.err ? "-" : "%u", queues_of(d, cl->id));
		snprintf(p, sizeof(p), isnan(pct) ? "-" : "%.1f%%", pct);
		fprintf(out, "    %7d  %-15s %7u %10s %10s %6s %7s %10s\n", (int)cl->pid, cl->comm,
			cl->id, human(cl->mem[SMI_HBM], a, sizeof(a)),
			human(cl->mem[SMI_HOST], b, sizeof(b)), q, p,
			human_ns(cl->engine_ns, c, sizeof(c)));
	}
	if (d->clients.hidden)
		fprintf(out, "    (processes of other users are not shown: that needs root)\n");

	if (d->queues.err == EACCES || d->queues.err == EPERM) {
		fprintf(out, "  queues        per-queue detail needs root (debugfs %s)\n",
			d->queues.path);
		return;
	}
	if (d->queues.err) {
		fprintf(out, "  queues        no detail: %s: %s (is debugfs mounted?)\n",
			d->queues.path, strerror(d->queues.err));
		return;
	}
	fprintf(out, "  queues        %zu in use, events and notifies %ld, io_uring commands %ld, "
		"resets %ld%s\n", d->queues.n, d->queues.syncs, d->queues.uring_cmds,
		d->queues.resets, d->queues.wedged > 0 ? ", WEDGED" : "");
	if (d->queues.n)
		fprintf(out, "    %3s %7s %7s  %-15s %5s %-8s %-8s %10s %10s %7s %s\n", "HW",
			"CONTEXT", "PID", "COMMAND", "QUEUE", "PRIO", "STATE", "SUBMITTED", "DONE",
			"PENDING", "STATUS");
	for (size_t i = 0; i < d->queues.n; i++) {
		const struct smi_queue *q = &d->queues.v[i];
		const struct smi_client *cl = owner(d, q->ctx);
		char pid[16];

		snprintf(pid, sizeof(pid), cl ? "%d" : "?", cl ? (int)cl->pid : 0);
		fprintf(out, "    %3u %7u %7s  %-15s %5u %-8s %-8s %10" PRIu64 " %10" PRIu64
			" %7u %s\n", q->hw, q->ctx, pid, cl ? cl->comm : "?", q->queue,
			prio_name(q->prio), q->state, q->submitted, q->done, q->pending, q->status);
	}
}

/* A value for key=value output: no spaces or '=', so `read` and awk split it. */
static const char *word(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i < len - 1; i++)
		buf[i] = s[i] > ' ' && s[i] != '=' && s[i] < 127 ? s[i] : '_';
	buf[i] = '\0';
	return i ? buf : "-";
}

static void show_raw(FILE *out, const struct smi_dev *d)
{
	const npurt_device_info *in = &d->info;
	char w[64];
	double busy;

	if (!d->ok) {
		fprintf(out, "device index=%d error=%s\n", d->index, word(d->err, w, sizeof(w)));
		return;
	}
	busy = smi_device_busy(d);
	fprintf(out, "device index=%d node=%s bus_id=%s driver=%s driver_version=%u.%u.%u "
		"if_version=%u.%u fw_version=%u.%u.%u cores=%u core_groups=%u dma_engines=%u "
		"queues=%u heartbeat=%" PRIu64 " heartbeat_ms=%u heartbeat_state=%s "
		"hbm_total=%" PRIu64 " hbm_reserved=%" PRIu64 " hbm_used=%" PRIu64
		" hbm_free=%" PRIu64 " hbm_buffers=%" PRIu64 " hbm_buffers_peak=%" PRIu64
		" hbm_page_tables=%" PRIu64 " hbm_queue_rings=%" PRIu64 " host_registered=%" PRIu64
		" host_registered_peak=%" PRIu64, d->index, in->node, in->bus_id[0] ? in->bus_id : "-",
		in->driver, in->driver_version[0], in->driver_version[1], in->driver_version[2],
		in->if_version[0], in->if_version[1], in->fw_version[0], in->fw_version[1],
		in->fw_version[2], in->core_count, in->core_group_count, in->dma_engine_count,
		in->queue_count, in->heartbeat, in->heartbeat_ms, smi_heartbeat_state(d), in->hbm_size,
		in->hbm_reserved, smi_hbm_used(d), smi_hbm_free(d), d->cur[SMI_HBM],
		d->peak[SMI_HBM], d->cur[SMI_PAGE_TABLES],
		d->cur[SMI_QUEUES], d->cur[SMI_HOST],
		d->peak[SMI_HOST]);
	if (!isnan(busy))
		fprintf(out, " busy_pct=%.1f interval_ms=%" PRIu64, busy,
			(d->t_ns - d->prev_t_ns) / 1000000);
	if (d->ping_us >= 0)
		fprintf(out, " ping_us=%.1f", d->ping_us);
	fprintf(out, " queue_detail=%s processes_hidden=%d\n",
		!d->queues.err ? "yes" : d->queues.err == EACCES ? "needs-root" : "unavailable",
		d->clients.hidden);
	for (size_t i = 0; i < d->clients.n; i++) {
		const struct smi_client *cl = &d->clients.v[i];
		double pct = client_busy(d, cl);

		fprintf(out, "process device=%d pid=%d comm=%s client=%u hbm=%" PRIu64
			" host=%" PRIu64 " page_tables=%" PRIu64 " queue_rings=%" PRIu64
			" engine_ns=%" PRIu64, d->index, (int)cl->pid, word(cl->comm, w, sizeof(w)),
			cl->id, cl->mem[SMI_HBM], cl->mem[SMI_HOST], cl->mem[SMI_PAGE_TABLES],
			cl->mem[SMI_QUEUES], cl->engine_ns);
		if (!isnan(pct))
			fprintf(out, " busy_pct=%.1f", pct);
		fprintf(out, "\n");
	}
	for (size_t i = 0; i < d->queues.n; i++) {
		const struct smi_queue *q = &d->queues.v[i];
		const struct smi_client *cl = owner(d, q->ctx);

		fprintf(out, "queue device=%d hw=%u client=%u pid=%d queue=%u prio=%s state=%s "
			"submitted=%" PRIu64 " done=%" PRIu64 " pending=%u status=%s\n", d->index,
			q->hw, q->ctx, cl ? (int)cl->pid : 0, q->queue, prio_name(q->prio), q->state,
			q->submitted, q->done, q->pending, q->status);
	}
}

void smi_show(FILE *out, const struct smi_dev *devs, int n, int raw)
{
	for (int i = 0; i < n; i++) {
		if (raw)
			show_raw(out, &devs[i]);
		else
			show_human(out, &devs[i]);
		if (!raw && i + 1 < n)
			fputc('\n', out);
	}
}
