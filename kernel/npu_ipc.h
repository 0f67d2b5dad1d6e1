/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_IPC_H__
#define __NPU_IPC_H__

#include "npu_drv.h"

int npu_ipc_init(struct npu_device *ndev);
int npu_ipc_send(struct npu_device *ndev, u32 opcode, const u64 args[4],
		 u64 result[4]);
int npu_ipc_ping(struct npu_device *ndev, u64 *rtt_ns);
int npu_ipc_clock(struct npu_device *ndev, struct npu_clock_pair *out);
void npu_ipc_clock_forget(struct npu_device *ndev);

/* A TLB invalidation posted to the device: what to wait for. */
struct npu_tlb_ticket {
	u32 seq;		/* done reaches it once complete */
	u32 failed;		/* the device's failure count when posted */
	int err;		/* set at post: nothing to wait for */
	bool posted;
};

void npu_tlb_post(struct npu_device *ndev, u32 ctx_id, struct npu_tlb_ticket *t);
int npu_tlb_wait(struct npu_device *ndev, const struct npu_tlb_ticket *t);

#endif /* __NPU_IPC_H__ */
