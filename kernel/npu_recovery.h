/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_RECOVERY_H__
#define __NPU_RECOVERY_H__

#include "npu_drv.h"

void npu_recovery_init(struct npu_device *ndev);
void npu_recovery_start(struct npu_device *ndev);
void npu_recovery_stop(struct npu_device *ndev);
unsigned int npu_recovery_job_timeout_ms(void);

#endif /* __NPU_RECOVERY_H__ */
