/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_HW_H__
#define __NPU_HW_H__

#include "npu_drv.h"

int npu_hw_check(struct pci_dev *pdev, void __iomem **regs,
		 struct npu_fw_ctrl __iomem **ctrl);
int npu_hw_init(struct npu_device *ndev);
void npu_hw_doorbell(struct npu_device *ndev, unsigned int vector);
void npu_hw_queue_kick(struct npu_device *ndev);
void npu_hw_queue_irq_ack(struct npu_device *ndev);
u32 npu_hw_fw_state(struct npu_device *ndev);
u64 npu_hw_heartbeat(struct npu_device *ndev);

#endif /* __NPU_HW_H__ */
