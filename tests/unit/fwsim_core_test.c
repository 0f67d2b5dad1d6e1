// SPDX-License-Identifier: MIT
/*
 * The firmware-sim device core, driven in-process: no QEMU, no sockets.
 * The test plays the host: it writes the control block the way npu.ko
 * does and rings doorbells by calling the core.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "npu_dev.h"

#define HBM_SIZE (4ull << 20)

struct irq_log {
	unsigned int count[NPU_FW_NUM_VECTORS];
};

static void record_irq(void *opaque, unsigned int vector)
{
	struct irq_log *log = opaque;

	if (vector < NPU_FW_NUM_VECTORS)
		log->count[vector]++;
}

static const struct npu_dev_ops test_ops = { .raise_irq = record_irq };

FIXTURE(core) {
	struct npu_dev dev;
	struct npu_dev_config cfg;
	struct irq_log irqs;
	void *hbm;
};

FIXTURE_SETUP(core)
{
	npu_dev_config_default(&self->cfg);
	self->cfg.hbm_size = HBM_SIZE;
	self->cfg.num_queues = 8;
	self->cfg.num_cores = 2;
	memset(&self->irqs, 0, sizeof(self->irqs));
	self->hbm = malloc(HBM_SIZE);
	ASSERT_NE(NULL, self->hbm);
	memset(self->hbm, 0xa5, HBM_SIZE);	/* HBM powers up with garbage */
	npu_dev_init(&self->dev, self->hbm, &self->cfg, &test_ops, &self->irqs);
}

FIXTURE_TEARDOWN(core)
{
	npu_dev_fini(&self->dev);
	free(self->hbm);
}

/* Post a mailbox command like the driver: payload, then seq, then ring. */
static uint32_t post(struct npu_dev *dev, uint32_t opcode, uint64_t arg0)
{
	struct npu_fw_mbox *mb = &dev->ctrl->mbox;
	uint32_t seq = mb->seq + 1;

	mb->opcode = opcode;
	mb->args[0] = arg0;
	__atomic_store_n(&mb->seq, seq, __ATOMIC_RELEASE);
	npu_dev_doorbell(dev, NPU_VEC_MBOX);
	return seq;
}

TEST(config_limits)
{
	struct npu_dev_config c;

	npu_dev_config_default(&c);
	EXPECT_EQ(NULL, npu_dev_config_check(&c));
	c.hbm_size = 3ull << 20;
	EXPECT_NE(NULL, strstr(npu_dev_config_check(&c), "power of two"));
	c.hbm_size = 2ull << 20;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
	c.hbm_size = 32ull << 30;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
	npu_dev_config_default(&c);
	c.num_queues = 0;
	EXPECT_NE(NULL, strstr(npu_dev_config_check(&c), "queue"));
	npu_dev_config_default(&c);
	c.num_cores = NPU_DEV_CORES_MAX + 1;
	EXPECT_NE(NULL, strstr(npu_dev_config_check(&c), "core"));
	npu_dev_config_default(&c);
	c.heartbeat_ms = 0;
	EXPECT_NE(NULL, npu_dev_config_check(&c));
}

TEST_F(core, control_block_describes_device)
{
	struct npu_fw_ctrl *c = self->dev.ctrl;

	EXPECT_EQ(NPU_FW_MAGIC, c->magic);
	EXPECT_EQ(NPU_FW_IF_VERSION(NPU_FW_IF_MAJOR, NPU_FW_IF_MINOR), c->if_version);
	EXPECT_EQ(HBM_SIZE, c->hbm_size);
	EXPECT_EQ(0, c->hbm_offset);
	EXPECT_EQ(NPU_FW_RESERVED_SIZE, c->fw_reserved);
	EXPECT_EQ(8, c->num_queues);
	EXPECT_EQ(2, c->num_cores);
	EXPECT_EQ(NPU_FW_NUM_VECTORS, c->num_vectors);
	EXPECT_EQ(NPU_FW_STATE_READY, c->state);
	/* Garbage from power-up is gone from the whole reserved area. */
	EXPECT_EQ(0, c->mbox.seq);
	EXPECT_EQ(0, c->errlog.head);
	EXPECT_EQ(0, c->reserved1[0]);
}

TEST_F(core, ping_answers_and_interrupts)
{
	struct npu_fw_mbox *mb = &self->dev.ctrl->mbox;
	uint32_t seq = post(&self->dev, NPU_FW_CMD_PING, 0x1234abcdull);

	EXPECT_EQ(seq, mb->done_seq);
	EXPECT_EQ(0, mb->status);
	EXPECT_EQ(0x1234abcdull, mb->result[0]);
	EXPECT_NE(0, mb->result[1]);		/* device clock */
	EXPECT_EQ(1, self->irqs.count[NPU_VEC_MBOX]);
	EXPECT_EQ(0, self->irqs.count[NPU_VEC_QUEUE]);
}

TEST_F(core, repeated_doorbell_runs_command_once)
{
	struct npu_fw_mbox *mb = &self->dev.ctrl->mbox;

	post(&self->dev, NPU_FW_CMD_PING, 7);
	mb->result[0] = 0;
	npu_dev_doorbell(&self->dev, NPU_VEC_MBOX);	/* no new seq */
	EXPECT_EQ(0, mb->result[0]);
	EXPECT_EQ(1, self->irqs.count[NPU_VEC_MBOX]);
}

TEST_F(core, unknown_command_fails_and_is_logged)
{
	struct npu_fw_ctrl *c = self->dev.ctrl;
	uint32_t seq = post(&self->dev, 0x77, 0);

	EXPECT_EQ(seq, c->mbox.done_seq);
	EXPECT_EQ(-NPU_FW_EBADCMD, c->mbox.status);
	EXPECT_EQ(1, self->irqs.count[NPU_VEC_MBOX]);
	ASSERT_EQ(1, c->errlog.head);
	EXPECT_EQ(NPU_FW_EBADCMD, c->errlog.entries[0].code);
	EXPECT_EQ(0x77, c->errlog.entries[0].info);
}

TEST_F(core, error_log_wraps)
{
	struct npu_fw_errlog *log = &self->dev.ctrl->errlog;

	for (uint32_t i = 0; i < NPU_FW_ERRLOG_ENTRIES + 8; i++)
		npu_dev_log_error(&self->dev, NPU_FW_EFAULT, 3, 0x1000 + i, i);
	EXPECT_EQ(NPU_FW_ERRLOG_ENTRIES + 8, log->head);
	/* The newest entry sits at (head - 1) % ENTRIES. */
	EXPECT_EQ(NPU_FW_ERRLOG_ENTRIES + 7, log->entries[7].info);
	EXPECT_EQ(0x1000 + NPU_FW_ERRLOG_ENTRIES + 7, log->entries[7].address);
	EXPECT_EQ(8, log->entries[8].info);	/* oldest survivor */
}

TEST_F(core, heartbeat_runs_until_halt)
{
	struct npu_fw_ctrl *c = self->dev.ctrl;

	npu_dev_heartbeat(&self->dev);
	npu_dev_heartbeat(&self->dev);
	EXPECT_EQ(2, c->heartbeat);
	npu_dev_halt(&self->dev);
	EXPECT_EQ(NPU_FW_STATE_HALTED, c->state);
	npu_dev_heartbeat(&self->dev);
	EXPECT_EQ(2, c->heartbeat);
}

TEST_F(core, halted_device_refuses_commands)
{
	struct npu_fw_mbox *mb = &self->dev.ctrl->mbox;
	uint32_t seq;

	npu_dev_halt(&self->dev);
	seq = post(&self->dev, NPU_FW_CMD_PING, 1);
	EXPECT_EQ(seq, mb->done_seq);
	EXPECT_EQ(-NPU_FW_EHALTED, mb->status);
	EXPECT_EQ(0, mb->result[0]);
}

TEST_F(core, reset_restarts_the_mailbox)
{
	struct npu_fw_ctrl *c = self->dev.ctrl;

	post(&self->dev, NPU_FW_CMD_PING, 1);
	post(&self->dev, NPU_FW_CMD_PING, 2);
	npu_dev_heartbeat(&self->dev);
	npu_dev_halt(&self->dev);
	npu_dev_reset(&self->dev);
	EXPECT_EQ(NPU_FW_STATE_READY, c->state);
	EXPECT_EQ(NPU_FW_MAGIC, c->magic);
	EXPECT_EQ(0, c->mbox.seq);
	EXPECT_EQ(0, c->heartbeat);
	/* Seq 1 is new again after a reset. */
	EXPECT_EQ(1, post(&self->dev, NPU_FW_CMD_PING, 9));
	EXPECT_EQ(9, c->mbox.result[0]);
}

TEST_F(core, queue_doorbell_is_ignored_without_queues)
{
	npu_dev_doorbell(&self->dev, NPU_VEC_QUEUE);
	npu_dev_doorbell(&self->dev, 99);
	EXPECT_EQ(0, self->irqs.count[NPU_VEC_MBOX]);
	EXPECT_EQ(0, self->irqs.count[NPU_VEC_QUEUE]);
	EXPECT_EQ(0, self->dev.ctrl->errlog.head);
}

TEST_F(core, host_memory_attach_detach)
{
	char buf[64];

	npu_dev_attach_host_mem(&self->dev, buf, sizeof(buf));
	EXPECT_EQ((void *)buf, self->dev.host_mem);
	EXPECT_EQ(sizeof(buf), self->dev.host_mem_size);
	npu_dev_attach_host_mem(&self->dev, NULL, 123);
	EXPECT_EQ(NULL, self->dev.host_mem);
	EXPECT_EQ(0, self->dev.host_mem_size);
}

TEST_HARNESS_MAIN
