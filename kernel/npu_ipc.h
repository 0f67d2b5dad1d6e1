/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_IPC_H__
#define __NPU_IPC_H__

#include "npu_drv.h"

int npu_ipc_init(struct npu_device *ndev);
int npu_ipc_send(struct npu_device *ndev, u32 opcode, const u64 args[4],
		 u64 result[4]);
int npu_ipc_ping(struct npu_device *ndev, u64 *rtt_ns);

#endif /* __NPU_IPC_H__ */
