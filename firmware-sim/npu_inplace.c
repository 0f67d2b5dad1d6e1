// SPDX-License-Identifier: MIT
/*
 * Launch inputs read in place, and what makes that safe.
 *
 * A launch's cores read its inputs straight from HBM or guest RAM where
 * a tensor lies in one run of host memory (npu_engine_borrow), instead of
 * from a copy taken when it starts: copying every weight on every launch
 * cost small models a third of their time. The pointers it holds come
 * from translations the host may drop while it computes; the host then
 * reuses the pages once TLB_INVALIDATE is answered. So the answer waits
 * (npu_engine_settle) until every launch reading through an older
 * translation of that context got through. A launch long enough to hold
 * the mailbox up is cancelled instead and runs again from its start on
 * copies of its inputs: its output goes to a private buffer, scattered
 * only at the end, so starting over is invisible but for time.
 *
 * An output is written in place the same way, where it lies in one run
 * of writable host memory, dense, of the dtype the op computes,
 * overlapping no input read in place, and the op does not read it:
 * scattering a private copy cost a text detector a sixth of its time.
 * Such a launch is settled as one reading in place is, and a running
 * one gets a private buffer when it must run again; its queue's stop
 * waits for it to stop writing (npu_engine_wait_writes), so the memory
 * of a stopped queue is the host's again once the stop is answered. What
 * a launch cancelled mid-way leaves in its output is undefined, as for
 * any op that did not complete.
 *
 * Called with dev->lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_engine_int.h"

int npu_engine_borrow(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
		      uint64_t size, uint64_t align, enum npu_access access, uint8_t **ptr,
		      struct fault *f)
{
	uint8_t *base, *p;
	uint64_t done, avail;

	if (!size)
		return 1;
	if (npu_engine_xlate(dev, q, va, access, &base, &avail, f))
		return -1;
	if ((uintptr_t)base & (align - 1))
		return 1;
	for (done = avail; done < size; done += avail) {
		if (npu_engine_xlate(dev, q, va + done, access, &p, &avail, f))
			return -1;
		if (p != base + done)
			return 1;
	}
	*ptr = base;
	return 0;
}

/* Group `g`'s launch reads `ctx`'s memory (0: any) in place, translated before `epoch`. */
static bool reads_before(struct npu_dev *dev, unsigned int g, uint32_t ctx, uint64_t epoch)
{
	const struct npu_launch *l = &dev->eng.launch[g];

	return l->active && l->borrowed && l->epoch < epoch && (!ctx || l->ctx == ctx) &&
	       !npu_cores_idle(&dev->groups[g], NULL);
}

/*
 * Launch `l`, cancelled and through, is to run again: copy the inputs it
 * read in place while the pages are still the context's (the host reuses
 * them only once settle returns, and settle returns only once every such
 * launch is through and copied: here, or in complete_launch if that came
 * first), so the second run reads what the first one did. With no memory
 * for a copy it is lost: its queue faults.
 */
void npu_engine_own_inputs(struct npu_launch *l)
{
	const struct npu_tensor *ts[3] = { &l->run.in[0], &l->run.in[1], &l->run.epi.bias };

	for (unsigned int i = 0; i < 3; i++) {
		uint64_t extent = npu_tensor_extent(ts[i]);
		void *p;

		if (!(l->borrowed & (1u << i)))
			continue;
		p = malloc(extent);
		if (p)
			memcpy(p, l->v[i].data, extent);
		else
			l->lost = true;
		l->v[i].data = p;
	}
	/* The op does not read its output: a buffer to compute into is enough. */
	if (l->borrowed & NPU_BORROWED_OUT) {
		l->v[3].data = malloc(npu_tensor_extent(&l->run.out));
		if (!l->v[3].data)
			l->lost = true;
	}
	l->borrowed = 0;
}

static bool writes_discarded(struct npu_dev *dev, uint64_t qid)
{
	for (unsigned int g = 0; g < dev->eng.num_groups; g++) {
		const struct npu_launch *l = &dev->eng.launch[g];

		if (l->active && l->discarded && l->borrowed & NPU_BORROWED_OUT &&
		    (qid == NPU_FW_MAX_QUEUES || l->qid == qid) &&
		    !npu_cores_idle(&dev->groups[g], NULL))
			return true;
	}
	return false;
}

void npu_engine_wait_writes(struct npu_dev *dev, uint64_t qid)
{
	struct timespec until;

	/* Discarded launches were cancelled: their ops stop at the next check. */
	while (writes_discarded(dev, qid)) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&dev->eng.cores_idle, &dev->lock, &until);
	}
}

/*
 * Long enough for the launches of a model's layer to finish on their
 * own, short against the host's mailbox timeout (seconds).
 */
#define SETTLE_MS	20

void npu_engine_settle(struct npu_dev *dev, uint32_t ctx)
{
	uint64_t epoch = ++dev->eng.epoch;
	bool cancelled = false;
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += SETTLE_MS * 1000000L;
	for (;;) {
		bool any = false;

		for (unsigned int g = 0; g < dev->eng.num_groups; g++)
			any |= reads_before(dev, g, ctx, epoch);
		if (!any)
			break;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (pthread_cond_timedwait(&dev->eng.cores_idle, &dev->lock, &until) != ETIMEDOUT)
			continue;
		/*
		 * Past SETTLE_MS: cancel, then look again every tick, as the
		 * cores stop at their ops' next cancellation point.
		 */
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 1000000L;
		if (cancelled)
			continue;
		cancelled = true;
		for (unsigned int g = 0; g < dev->eng.num_groups; g++) {
			if (!reads_before(dev, g, ctx, epoch))
				continue;
			dev->eng.launch[g].rerun = !dev->eng.launch[g].discarded;
			npu_cores_cancel(&dev->groups[g]);
		}
	}
	for (unsigned int g = 0; g < dev->eng.num_groups; g++) {
		struct npu_launch *l = &dev->eng.launch[g];

		if (l->active && l->rerun && l->borrowed && npu_cores_idle(&dev->groups[g], NULL))
			npu_engine_own_inputs(l);
	}
}

void npu_engine_cores_idle(struct npu_dev *dev)
{
	pthread_cond_broadcast(&dev->eng.cores_idle);
}
