/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef __NPU_RECOVERY_H__
#define __NPU_RECOVERY_H__

#include "npu_drv.h"

int npu_recovery_init(struct npu_device *ndev);
void npu_recovery_start(struct npu_device *ndev);
void npu_recovery_stop(struct npu_device *ndev);
unsigned int npu_recovery_job_timeout_ms(void);
unsigned int npu_recovery_max_job_timeout_ms(void);
void npu_device_wedge(struct npu_device *ndev, const char *what, int err);
void npu_ctx_id_free(struct npu_device *ndev, u32 id);

#endif /* __NPU_RECOVERY_H__ */
