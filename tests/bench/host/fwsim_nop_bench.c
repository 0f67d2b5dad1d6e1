// SPDX-License-Identifier: MIT
/*
 * The firmware-sim's own cost per task: NOP tasks pushed through the
 * device core in-process (no QEMU, no driver), against the cost of an
 * empty loop iteration that touches the same ring, in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_dev.h"

#define HBM	(8ull << 20)
#define RING	(1ull << 20)
#define ENTRIES	4096u
#define TASKS	2000000u

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
	uint8_t *hbm = calloc(1, HBM);
	struct npu_dev dev;
	struct npu_dev_config cfg;
	struct npu_fw_queue *q = (struct npu_fw_queue *)(hbm + NPU_FW_QUEUE_TABLE);
	struct npu_fw_task *ring = (struct npu_fw_task *)(hbm + RING);
	volatile uint64_t sink = 0;
	double t_dev, t_loop;

	npu_dev_config_default(&cfg);
	cfg.hbm_size = HBM;
	npu_dev_init(&dev, hbm, &cfg, NULL, NULL);
	q->ring_offset = RING;
	q->ring_entries = ENTRIES;
	q->context = 1;
	q->pt_root = 2ull << 20;
	dev.ctrl->mbox.opcode = NPU_FW_CMD_QUEUE_START;
	dev.ctrl->mbox.args[0] = 0;
	dev.ctrl->mbox.seq = 1;
	npu_dev_doorbell(&dev, NPU_VEC_MBOX);
	if (dev.ctrl->mbox.status) {
		fprintf(stderr, "fwsim_nop_bench: queue start failed\n");
		return 1;
	}

	t_dev = now_s();
	for (uint32_t done = 0; done < TASKS; done += ENTRIES / 2) {
		/* Half a ring of NOPs (zeroed slots are NOPs), then run them. */
		__atomic_store_n(&q->tail, q->tail + ENTRIES / 2, __ATOMIC_RELEASE);
		npu_dev_doorbell(&dev, NPU_VEC_QUEUE);
	}
	t_dev = now_s() - t_dev;

	t_loop = now_s();
	for (uint32_t i = 0; i < TASKS; i++)
		sink += ring[i % ENTRIES].type;
	t_loop = now_s() - t_loop;

	printf("%-34s %12s %12s\n", "device core, NOP tasks", "ns/task", "x ring read");
	printf("%-34s %12.1f %12.1f\n", "scheduling + execution", t_dev / TASKS * 1e9,
	       t_dev / t_loop);
	printf("%-34s %12.1f %12.1f\n", "reading the ring alone (baseline)", t_loop / TASKS * 1e9, 1.0);
	npu_dev_fini(&dev);
	free(hbm);
	return sink ? 1 : 0;
}
