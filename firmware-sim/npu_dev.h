/* SPDX-License-Identifier: MIT */
/*
 * The emulated NPU: device logic only.
 *
 * The core knows nothing of ivshmem, sockets or QEMU. A transport gives it
 * the device memory (HBM, whose first bytes hold the control block) and a
 * way to raise host interrupts, and calls it when the host rings a
 * doorbell or when time passes. The same core runs under npu-fwsim and
 * inside unit tests.
 */
#ifndef NPU_DEV_H
#define NPU_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_cores.h"
#include "npu_engine.h"
#include "npu_fw_if.h"
#include "npu_mmu.h"

#define NPU_DEV_FW_VERSION	((0u << 16) | (13u << 8) | 0u)	/* 0.13.0 */

struct npu_dev_config {
	uint64_t hbm_size;	/* power of two, >= NPU_DEV_HBM_MIN */
	uint32_t num_queues;
	uint32_t num_cores;
	uint32_t num_core_groups;	/* launches computing at once; divides the cores */
	uint32_t num_dma;		/* copy engines */
	uint32_t heartbeat_ms;
	bool fault_injection;	/* accept NPU_FW_CMD_INJECT (tests) */
};

#define NPU_DEV_HBM_MIN		(4ull << 20)
#define NPU_DEV_HBM_MAX		(16ull << 30)
#define NPU_DEV_QUEUES_MAX	256
#define NPU_DEV_CORES_MAX	64

struct npu_dev_ops {
	/* Raise host interrupt `vector` (enum npu_fw_vector). */
	void (*raise_irq)(void *opaque, unsigned int vector);
};

struct npu_dev {
	uint8_t *hbm;
	struct npu_fw_ctrl *ctrl;	/* == (void *)hbm */
	struct npu_dev_config cfg;
	const struct npu_dev_ops *ops;
	void *opaque;
	uint32_t mbox_seen;		/* last mailbox seq handled */
	void *host_mem;			/* host RAM the device may DMA to */
	size_t host_mem_size;
	struct npu_mmu mmu;
	struct npu_cores groups[NPU_DEV_GROUPS_MAX];	/* AI-core groups */
	struct npu_engine eng;

	/*
	 * lock serialises everything that touches queues, the TLB, the
	 * units' state or the mailbox: the scheduler (sync tasks, and the
	 * gather and scatter of kernel launches), the copy engines' chunk
	 * translations and mailbox commands. It is never held while a launch
	 * computes (the AI cores work on private buffers) or while a copy
	 * engine moves a chunk, so the mailbox (the management core) answers
	 * within one scheduler step and one chunk. Without an engine thread,
	 * queue doorbells run every task inline, copies and launches too.
	 */
	pthread_mutex_t lock;
	pthread_cond_t work;		/* CLOCK_MONOTONIC, for timed waits */
	pthread_t engine;
	bool engine_running;
	bool engine_stop;
	bool work_pending;
	/* Mailbox commands waiting for the lock: the engine steps aside, as
	 * pthread mutexes are not fair and a busy engine would starve them. */
	uint32_t mbox_waiting;

	/* Posted TLB invalidations (npu_tlb.c): their thread, with the engine's. */
	pthread_t tlb_thread;
	pthread_cond_t tlb_wake;
	bool tlb_running;
	bool tlb_stop;
	uint32_t tlb_gen;		/* bumped when the counters are rewritten */

	/* Injected faults: hang_context and fail_invalidates under lock, the others atomic. */
	uint32_t hang_context;		/* its queues make no progress; 0: none */
	bool heartbeat_stopped;
	uint32_t drop_irqs;		/* interrupts still to lose */
	uint32_t fail_invalidates;	/* TLB invalidations still to fail, under lock */
	bool hold_invalidates;		/* TLB invalidations wait for a clear, under lock */
};

/* Default configuration, as npu-fwsim starts without options. */
void npu_dev_config_default(struct npu_dev_config *cfg);

/*
 * Check a configuration. Returns NULL when valid, otherwise a message
 * naming the bad field and its limits.
 */
const char *npu_dev_config_check(const struct npu_dev_config *cfg);

/*
 * Bring up the device on `hbm` (cfg->hbm_size bytes, zeroed or not): writes
 * the control block and sets the state to READY. The config must have
 * passed npu_dev_config_check().
 */
void npu_dev_init(struct npu_dev *dev, void *hbm,
		  const struct npu_dev_config *cfg,
		  const struct npu_dev_ops *ops, void *opaque);

/* Device reset: the control block is rewritten and pending work dropped. */
void npu_dev_reset(struct npu_dev *dev);

/* The host rang doorbell `vector`. */
void npu_dev_doorbell(struct npu_dev *dev, unsigned int vector);

/*
 * Run queues on a thread of their own (npu-fwsim), so a long copy does not
 * hold up the mailbox loop. Without it, queue doorbells run the engine
 * before returning (unit tests). Returns 0 or an errno.
 */
int npu_dev_start_engine(struct npu_dev *dev);
void npu_dev_stop_engine(struct npu_dev *dev);

/* Posted TLB invalidations (npu_tlb.c): the host rang NPU_VEC_MBOX. */
void npu_tlb_doorbell(struct npu_dev *dev);
int npu_tlb_start(struct npu_dev *dev);
/* Under dev->lock: wait out an injected hold, `ms` at most. */
void npu_tlb_hold(struct npu_dev *dev, int ms);
void npu_tlb_stop(struct npu_dev *dev);

/* Free what npu_dev_init() set up (the device must be stopped). */
void npu_dev_fini(struct npu_dev *dev);

/* One heartbeat period passed. */
void npu_dev_heartbeat(struct npu_dev *dev);

/* Stop the device: the host sees HALTED and no more commands run. */
void npu_dev_halt(struct npu_dev *dev);

/* Host memory the device can reach by DMA (NULL, 0 to detach). */
void npu_dev_attach_host_mem(struct npu_dev *dev, void *mem, size_t size);

/* Raise host interrupt `vector`, unless an injected fault drops it. */
void npu_dev_raise_irq(struct npu_dev *dev, unsigned int vector);
void npu_dev_raise_queue_irq(struct npu_dev *dev);

/* Append an entry to the error log in the control block. */
void npu_dev_log_error(struct npu_dev *dev, uint32_t code, uint32_t context,
		       uint64_t address, uint64_t info);

/* The device clock, in nanoseconds. */
uint64_t npu_dev_clock_ns(void);

#endif /* NPU_DEV_H */
