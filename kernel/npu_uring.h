/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_URING_H__
#define __NPU_URING_H__

#include <linux/seq_file.h>
#include <linux/types.h>

struct io_uring_cmd;
struct npu_device;
struct npu_queue;

u64 npu_uring_cmds_supported(void);
void npu_uring_init_device(struct npu_device *ndev);
int npu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void npu_uring_queue_settle(struct npu_queue *q);
void npu_uring_events_settle(struct npu_device *ndev);
void npu_uring_fail_events(struct npu_device *ndev, u32 status);
void npu_uring_reap(struct npu_device *ndev);
void npu_uring_debugfs_show(struct seq_file *m, struct npu_device *ndev);

#endif /* __NPU_URING_H__ */
