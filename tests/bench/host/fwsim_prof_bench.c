// SPDX-License-Identifier: MIT
/*
 * What profiling costs the device, per task, in-process (no QEMU, no
 * driver): NOP tasks, the cheapest there are, so the hooks' share is at
 * its largest, through the device core
 *
 *   - built without the hooks (NPU_PROF_OFF: fwsim_prof_bench_off, which
 *     this binary runs between its own rounds),
 *   - with them, the queue without a ring,
 *   - with a ring, recording off,
 *   - with a ring, recording on (drained as it fills).
 *
 * Each figure is the median of ROUNDS rounds, taken in turn. What the
 * hooks cost per task is the difference; issue 37's goals (off within
 * 1.01x of without, on within 1.05x of off) are about a real model,
 * whose launches take microseconds: make bench's VM part runs npurun on
 * the transformer with and without --profile.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu_dev.h"

#define HBM	(16ull << 20)
#define RING	(1ull << 20)
#define PROF	(4ull << 20)
#define ENTRIES	4096u
#define RECORDS	65536u
#define TASKS	1000000u
#define ROUNDS	7

enum mode { NO_RING, RING_OFF, RING_ON, MODES };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ns per task of TASKS NOPs (a FENCE every 64) in `mode`; < 0 if it broke. */
static double round_ns(enum mode mode)
{
	uint8_t *hbm = calloc(1, HBM);
	struct npu_dev dev;
	struct npu_dev_config cfg;
	struct npu_fw_queue *q = (struct npu_fw_queue *)(hbm + NPU_FW_QUEUE_TABLE);
	struct npu_fw_task *ring = (struct npu_fw_task *)(hbm + RING);
	struct npu_fw_prof_ring *pr = (struct npu_fw_prof_ring *)(hbm + PROF);
	uint64_t seq = 0;
	double t;

	if (!hbm)
		return -1;
	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM;
	npu_dev_init(&dev, hbm, &cfg, NULL, NULL);
	for (uint32_t i = 63; i < ENTRIES; i += 64)
		ring[i].type = NPU_FW_TASK_FENCE;
	q->ring_offset = RING;
	q->ring_entries = ENTRIES;
	q->context = 1;
	q->pt_root = 2ull << 20;
	pr->enable = mode == RING_ON;
	dev.ctrl->mbox.opcode = NPU_FW_CMD_QUEUE_START;
	dev.ctrl->mbox.args[0] = 0;
	dev.ctrl->mbox.args[1] = mode == NO_RING ? 0 : PROF;
	dev.ctrl->mbox.args[2] = mode == NO_RING ? 0 : RECORDS;
	dev.ctrl->mbox.seq = 1;
	npu_dev_doorbell(&dev, NPU_VEC_MBOX);
	if (dev.ctrl->mbox.status)
		return -1;
	t = now_s();
	for (uint32_t done = 0; done < TASKS; done += ENTRIES / 2) {
		/* FENCEs number their batches, as the driver's do. */
		for (uint32_t i = q->tail + 63; i < q->tail + ENTRIES / 2; i += 64)
			ring[i % ENTRIES].args[0] = ++seq;
		__atomic_store_n(&q->tail, q->tail + ENTRIES / 2, __ATOMIC_RELEASE);
		npu_dev_doorbell(&dev, NPU_VEC_QUEUE);
		/* What the library does as it submits: take the records. */
		__atomic_store_n(&pr->tail, __atomic_load_n(&pr->head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	}
	t = now_s() - t;
	if (q->head != q->tail || (mode == RING_ON && (pr->dropped || !pr->head)))
		t = -1;
	npu_dev_fini(&dev);
	free(hbm);
	return t < 0 ? -1 : t / TASKS * 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The build without the hooks: one round of its NO_RING, from its binary. */
static double without_ns(const char *self)
{
	char path[PATH_MAX + 8], copy[PATH_MAX], line[64];
	double ns = -1;
	FILE *p;

	snprintf(copy, sizeof(copy), "%s", self);
	snprintf(path, sizeof(path), "%s/fwsim_prof_bench_off --round", dirname(copy));
	p = popen(path, "r");
	if (p && fgets(line, sizeof(line), p))
		ns = strtod(line, NULL);
	if (p && pclose(p))
		ns = -1;
	return ns;
}

int main(int argc, char **argv)
{
	double ns[MODES + 1][ROUNDS], med[MODES + 1];
	static const char *const names[MODES + 1] = {
		"with hooks, no ring", "ring, recording off", "ring, recording on",
		"built without the hooks",
	};
	bool off_build = strstr(argv[0], "_off") != NULL;

	if (argc > 1 && !strcmp(argv[1], "--round")) {
		printf("%.3f\n", round_ns(NO_RING));
		return 0;
	}
	if (off_build) {
		printf("fwsim_prof_bench_off: fwsim_prof_bench runs it (--round)\n");
		return 0;
	}
	for (int r = 0; r < ROUNDS; r++) {
		ns[MODES][r] = without_ns(argv[0]);
		for (int m = 0; m < MODES; m++)
			ns[m][r] = round_ns((enum mode)m);
		for (int m = 0; m <= MODES; m++)
			if (ns[m][r] < 0) {
				fprintf(stderr, "fwsim_prof_bench: %s: a round failed\n", names[m]);
				return 1;
			}
	}
	for (int m = 0; m <= MODES; m++) {
		qsort(ns[m], ROUNDS, sizeof(double), cmp);
		med[m] = ns[m][ROUNDS / 2];
	}
	printf("%-34s %10s %12s %10s\n", "device core, NOP tasks", "ns/task", "x without",
	       "+ns/task");
	printf("%-34s %10.1f %12.3f %10.1f\n", names[MODES], med[MODES], 1.0, 0.0);
	for (int m = 0; m < MODES; m++)
		printf("%-34s %10.1f %12.3f %10.1f\n", names[m], med[m], med[m] / med[MODES],
		       med[m] - med[MODES]);
	printf("(medians of %d rounds in turn. A NOP is the cheapest task: what the hooks\n"
	       "add per task is +ns/task, against the microseconds a model's launch takes;\n"
	       "the ratios on a real model are make bench's npurun --profile lines)\n", ROUNDS);
	return 0;
}
