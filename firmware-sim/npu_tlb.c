// SPDX-License-Identifier: MIT
/*
 * Posted TLB invalidations (struct npu_fw_tlb in npu_fw_if.h).
 *
 * An invalidation returns only once no launch reads the context's memory
 * in place through an older translation (npu_engine_settle: up to
 * SETTLE_MS, then the launch is cancelled and runs again). Run by the
 * mailbox, that wait held every other command of every other context:
 * the mailbox answers on the transport's one thread. Posted requests run
 * on a thread of their own instead (with npu_dev_start_engine(); inline
 * on the doorbell without it, as queue work does), taking dev->lock as
 * the mailbox does and giving it up while settle waits.
 *
 * A power-on reset (npu_dev_reset) rewrites the counters under dev->lock;
 * a request carried out across one is not reported: dev->tlb_gen says.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "npu_dev.h"
#include "npu_engine.h"
#include "npu_mmu.h"

#define LOAD_ACQ(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v)		__atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Under dev->lock: carry out request `done`, if any. Returns whether there was one. */
static bool tlb_one(struct npu_dev *dev)
{
	struct npu_fw_tlb *t = &dev->ctrl->tlb;
	uint32_t done = t->done, gen = dev->tlb_gen;
	uint32_t ctx;
	bool ok = false;

	if (LOAD_ACQ(&t->req) == done || dev->hold_invalidates)
		return false;
	ctx = __atomic_load_n(&t->ctx[done % NPU_FW_TLB_RING], __ATOMIC_RELAXED);
	/* An injected failure leaves the TLB as it was, as a broken one would. */
	if (dev->fail_invalidates) {
		dev->fail_invalidates--;
	} else if (LOAD_ACQ(&dev->ctrl->state) == NPU_FW_STATE_READY) {
		npu_mmu_invalidate(dev, ctx);
		npu_engine_settle(dev, ctx);	/* may give dev->lock up */
		npu_engine_dma_quiesce(dev);
		ok = true;
	}
	if (gen != dev->tlb_gen)
		return true;		/* the block was rewritten meanwhile */
	if (!ok)
		STORE_REL(&t->failed, t->failed + 1);
	STORE_REL(&t->done, done + 1);
	return true;
}

static void *tlb_main(void *arg)
{
	struct npu_dev *dev = arg;

	pthread_mutex_lock(&dev->lock);
	while (!dev->tlb_stop) {
		if (!tlb_one(dev)) {
			pthread_cond_wait(&dev->tlb_wake, &dev->lock);
			continue;
		}
		pthread_mutex_unlock(&dev->lock);
		npu_dev_raise_irq(dev, NPU_VEC_MBOX);
		pthread_mutex_lock(&dev->lock);
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

void npu_tlb_hold(struct npu_dev *dev, int ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	while (dev->hold_invalidates)
		if (pthread_cond_timedwait(&dev->tlb_wake, &dev->lock, &until) == ETIMEDOUT)
			break;
}

void npu_tlb_doorbell(struct npu_dev *dev)
{
	bool any = false;

	if (LOAD_ACQ(&dev->ctrl->tlb.req) == LOAD_ACQ(&dev->ctrl->tlb.done))
		return;
	pthread_mutex_lock(&dev->lock);
	if (dev->tlb_running)
		pthread_cond_signal(&dev->tlb_wake);
	else
		while (tlb_one(dev))
			any = true;
	pthread_mutex_unlock(&dev->lock);
	if (any)
		npu_dev_raise_irq(dev, NPU_VEC_MBOX);
}

int npu_tlb_start(struct npu_dev *dev)
{
	int err;

	dev->tlb_stop = false;
	err = pthread_create(&dev->tlb_thread, NULL, tlb_main, dev);
	if (!err)
		dev->tlb_running = true;
	return err;
}

void npu_tlb_stop(struct npu_dev *dev)
{
	if (!dev->tlb_running)
		return;
	pthread_mutex_lock(&dev->lock);
	dev->tlb_stop = true;
	pthread_cond_signal(&dev->tlb_wake);
	pthread_mutex_unlock(&dev->lock);
	pthread_join(dev->tlb_thread, NULL);
	dev->tlb_running = false;
}
