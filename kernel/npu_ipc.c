// SPDX-License-Identifier: GPL-2.0-only
/*
 * The firmware mailbox: one command slot in the control block.
 *
 * Locking: ipc.lock (a mutex, commands sleep) is held from writing a
 * command until its answer has been read, so there is one command in
 * flight. The interrupt handler takes no lock; it only wakes ipc.wq, and
 * the waiter re-reads done_seq from the device.
 *
 * Sequence numbers continue from whatever the device holds: after a
 * module reload the firmware has already seen the old numbers and would
 * ignore a repeated one.
 *
 * TLB invalidations are posted beside the mailbox (NPU_FW_CAP_TLB_POST,
 * struct npu_fw_tlb): the firmware makes one wait for the launches that
 * read the context's memory in place, up to its settle time, and as a
 * mailbox command that wait held ipc.lock, so every other user's queue
 * start, stop and scrub queued behind it. A posted one holds nothing
 * while the device works: ipc.tlb_lock (a spinlock) covers writing the
 * request and bumping req, and the poster then sleeps on ipc.wq, which
 * the same interrupt wakes, until done passes its request. Requests
 * complete in order, so one counter says which are done.
 *
 * ipc.clock_lock (a mutex) serialises measuring the device clock against
 * CLOCK_MONOTONIC and guards the pair it caches; it is taken before
 * ipc.lock.
 */
#include <drm/drm_managed.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/ktime.h>
#include <linux/random.h>

#include "npu_hw.h"
#include "npu_ipc.h"

static unsigned int ipc_timeout_ms = 2000;
module_param(ipc_timeout_ms, uint, 0644);
MODULE_PARM_DESC(ipc_timeout_ms, "Firmware mailbox timeout in ms (default 2000)");

static irqreturn_t npu_ipc_irq(int irq, void *arg)
{
	struct npu_device *ndev = arg;

	wake_up_all(&ndev->ipc.wq);
	return IRQ_HANDLED;
}

int npu_ipc_init(struct npu_device *ndev)
{
	struct npu_ipc *ipc = &ndev->ipc;
	struct pci_dev *pdev = ndev->pdev;
	int ret;

	ret = drmm_mutex_init(&ndev->drm, &ipc->lock);
	if (!ret)
		ret = drmm_mutex_init(&ndev->drm, &ipc->clock_lock);
	if (ret)
		return ret;
	init_waitqueue_head(&ipc->wq);
	ipc->seq = readl(&ndev->ctrl->mbox.seq);
	spin_lock_init(&ipc->tlb_lock);
	ipc->tlb_req = readl(&ndev->ctrl->tlb.req);

	ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, NPU_VEC_MBOX),
			       npu_ipc_irq, 0, "npu-mbox", ndev);
	if (ret)
		npu_err(ndev, "cannot request mailbox IRQ: %d\n", ret);
	return ret;
}

static int npu_ipc_status_to_errno(s32 status)
{
	switch (-status) {
	case NPU_FW_OK:
		return 0;
	case NPU_FW_EBADCMD:
		return -EOPNOTSUPP;
	case NPU_FW_EINVAL:
		return -EINVAL;
	case NPU_FW_EFAULT:
		return -EFAULT;
	case NPU_FW_EHALTED:
		return -EIO;
	default:
		return -EPROTO;
	}
}

int npu_ipc_send(struct npu_device *ndev, u32 opcode, const u64 args[4],
		 u64 result[4])
{
	struct npu_fw_mbox __iomem *mb = &ndev->ctrl->mbox;
	struct npu_ipc *ipc = &ndev->ipc;
	long left;
	s32 status;
	u32 seq;
	int i;

	mutex_lock(&ipc->lock);
	seq = ++ipc->seq;
	writel(opcode, &mb->opcode);
	for (i = 0; i < 4; i++)
		writeq(args ? args[i] : 0, &mb->args[i]);
	/* The payload must be visible before the seq that announces it. */
	wmb();
	writel(seq, &mb->seq);
	npu_hw_doorbell(ndev, NPU_VEC_MBOX);

	left = wait_event_timeout(ipc->wq, readl(&mb->done_seq) == seq,
				  msecs_to_jiffies(ipc_timeout_ms));
	/* An answer whose interrupt was lost is an answer. */
	if (!left && readl(&mb->done_seq) != seq) {
		mutex_unlock(&ipc->lock);
		npu_err(ndev, "firmware did not answer command %u in %u ms (state %u)\n",
			opcode, ipc_timeout_ms, npu_hw_fw_state(ndev));
		return -ETIMEDOUT;
	}
	rmb();
	status = readl(&mb->status);
	for (i = 0; result && i < 4; i++)
		result[i] = readq(&mb->result[i]);
	mutex_unlock(&ipc->lock);

	return npu_ipc_status_to_errno(status);
}

int npu_ipc_ping(struct npu_device *ndev, u64 *rtt_ns)
{
	u64 args[4] = { get_random_u64() };
	u64 result[4];
	ktime_t start = ktime_get();
	int ret;

	ret = npu_ipc_send(ndev, NPU_FW_CMD_PING, args, result);
	if (ret)
		return ret;
	if (result[0] != args[0]) {
		npu_err(ndev, "PING answered with cookie %#llx, sent %#llx\n",
			result[0], args[0]);
		return -EPROTO;
	}
	if (rtt_ns)
		*rtt_ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	return 0;
}

/* How often the clock pair is measured again, at most. */
#define NPU_CLOCK_REFRESH_NS	NSEC_PER_SEC

/*
 * The device clock against CLOCK_MONOTONIC: the PING of the shortest
 * round trip of three, whose answer the device stamped within it. Every
 * user gets the pair measured in the last second, so one process asking
 * in a loop puts at most three commands a second in front of the
 * others' queue starts and scrubs. A failed measurement is kept for that
 * second too: a firmware that does not answer costs each PING the
 * mailbox's whole timeout.
 */
int npu_ipc_clock(struct npu_device *ndev, struct npu_clock_pair *out)
{
	struct npu_ipc *ipc = &ndev->ipc;
	struct npu_clock_pair best = { 0 };
	u64 now;
	int ret, i;

	if (READ_ONCE(ndev->wedged))
		return -EIO;
	ret = mutex_lock_killable(&ipc->clock_lock);
	if (ret)
		return ret;
	now = ktime_get_ns();
	if (ipc->clock_tried_ns && now - ipc->clock_tried_ns < NPU_CLOCK_REFRESH_NS) {
		ret = ipc->clock_err;
		goto out;
	}
	ipc->clock_tried_ns = now;
	for (i = 0; i < 3; i++) {
		u64 args[4] = { get_random_u64() };
		u64 result[4], t0, t1;

		t0 = ktime_get_ns();
		ret = npu_ipc_send(ndev, NPU_FW_CMD_PING, args, result);
		t1 = ktime_get_ns();
		if (!ret && result[0] != args[0])
			ret = -EPROTO;
		if (ret)
			break;
		if (!i || t1 - t0 < best.window_ns)
			best = (struct npu_clock_pair){ .device_ns = result[1],
							.host_ns = t0 + (t1 - t0) / 2,
							.window_ns = t1 - t0 };
	}
	ipc->clock_err = ret;
	if (!ret)
		ipc->clock = best;
out:
	if (!ret)
		*out = ipc->clock;
	mutex_unlock(&ipc->clock_lock);
	return ret;
}

/* After a reset: a device's clock may start over, so the pair is measured anew. */
void npu_ipc_clock_forget(struct npu_device *ndev)
{
	mutex_lock(&ndev->ipc.clock_lock);
	ndev->ipc.clock_tried_ns = 0;
	mutex_unlock(&ndev->ipc.clock_lock);
}

static bool npu_tlb_has_room(struct npu_device *ndev)
{
	return READ_ONCE(ndev->ipc.tlb_req) - readl(&ndev->ctrl->tlb.done) < NPU_FW_TLB_RING;
}

/*
 * Have the device drop context ctx_id's translations (0: every context's),
 * the memory behind them not reused until npu_tlb_wait() says so. Takes
 * no lock the caller may hold, sleeps only while the device's ring of
 * requests is full. A firmware without posted invalidations gets the
 * mailbox command, answered before this returns.
 */
void npu_tlb_post(struct npu_device *ndev, u32 ctx_id, struct npu_tlb_ticket *t)
{
	struct npu_fw_tlb __iomem *r = &ndev->ctrl->tlb;
	struct npu_ipc *ipc = &ndev->ipc;

	*t = (struct npu_tlb_ticket){ 0 };
	if (!(ndev->fw.caps & NPU_FW_CAP_TLB_POST)) {
		u64 args[4] = { ctx_id };

		t->err = npu_ipc_send(ndev, NPU_FW_CMD_TLB_INVALIDATE, args, NULL);
		return;
	}
	for (;;) {
		spin_lock(&ipc->tlb_lock);
		if (npu_tlb_has_room(ndev))
			break;
		spin_unlock(&ipc->tlb_lock);
		if (!wait_event_timeout(ipc->wq, npu_tlb_has_room(ndev),
					msecs_to_jiffies(ipc_timeout_ms)) &&
		    !npu_tlb_has_room(ndev)) {
			t->err = -ETIMEDOUT;
			return;
		}
	}
	writel(ctx_id, &r->ctx[ipc->tlb_req % NPU_FW_TLB_RING]);
	t->failed = readl(&r->failed);
	t->seq = ++ipc->tlb_req;
	t->posted = true;
	/* The context must be visible before the count that announces it. */
	wmb();
	writel(t->seq, &r->req);
	spin_unlock(&ipc->tlb_lock);
	npu_hw_doorbell(ndev, NPU_VEC_MBOX);
}

/*
 * Wait for a posted invalidation, uninterruptibly (the caller frees what
 * it covered next) but for the mailbox's timeout at most. 0 once complete;
 * -EIO if the device failed one (it may have been another context's: the
 * device is wedged either way), -ETIMEDOUT.
 */
int npu_tlb_wait(struct npu_device *ndev, const struct npu_tlb_ticket *t)
{
	struct npu_fw_tlb __iomem *r = &ndev->ctrl->tlb;

	if (!t->posted)
		return t->err;
	if (!wait_event_timeout(ndev->ipc.wq, (s32)(readl(&r->done) - t->seq) >= 0,
				msecs_to_jiffies(ipc_timeout_ms)) &&
	    (s32)(readl(&r->done) - t->seq) < 0) {
		npu_err(ndev, "firmware did not complete TLB invalidation %u in %u ms (state %u)\n",
			t->seq, ipc_timeout_ms, npu_hw_fw_state(ndev));
		return -ETIMEDOUT;
	}
	rmb();
	return readl(&r->failed) != t->failed ? -EIO : 0;
}
