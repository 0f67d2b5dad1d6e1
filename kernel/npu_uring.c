// SPDX-License-Identifier: GPL-2.0-only
/*
 * io_uring commands: SUBMIT, WAIT and EVENT_WAIT as IORING_OP_URING_CMD.
 *
 * A command that waits is parked: an npu_ucmd on the device's list of
 * parked commands and on the list of what it waits for, either its
 * queue's (sorted by sequence number, so a completion takes commands from
 * the front) or its event's; events with waiters are on the device's
 * list, so the queue interrupt looks at each such event once, at most
 * NPU_FW_MAX_SYNCS of them, however many commands wait. The queue
 * interrupt, a time limit (hrtimer), an abort, a reset or a cancellation
 * settles a command.
 *
 * Exactly once: whoever takes a command off the lists, under ucmd_lock,
 * settles it. Settling records the result and hands the command to task
 * work in its submitter's context, which frees it and posts the CQE:
 * completions come from interrupt threads and timers, where
 * io_uring_cmd_done() may not be called.
 *
 * Cancellation: the ring holds the file while a command is parked, so
 * the file cannot be released under one. A ring that closes waits for its
 * commands instead: from 6.7 io_uring asks the driver to cancel them
 * (IO_URING_F_CANCEL); before, the watchdog finds them orphaned and
 * cancels them (npu_uring_reap()), and those of a task that exits too.
 * From 6.7 a task's exit leaves them parked (io_uring cancels only the
 * requests it tracks): they settle when their work does, and io_uring
 * posts the CQE from its fallback work. debugfs says which applies.
 *
 * Locking: ndev->ucmd_lock protects the lists. It is innermost (taken
 * under ndev->queue_lock, never the other way) and irq-safe, because the
 * time limits expire in hard interrupt context. Parking takes only
 * ucmd_lock; see npu_ucmd_settle_queue() for why that cannot miss a
 * completion.
 */
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <linux/delay.h>
#include <linux/slab.h>

#include "npu_compat.h"
#include "npu_ctx.h"
#include "npu_queue.h"
#include "npu_sync.h"
#include "npu_uring.h"

enum npu_ucmd_op {
	NPU_UCMD_SUBMIT,
	NPU_UCMD_WAIT,
	NPU_UCMD_EVENT_WAIT,
	NPU_UCMD_COUNT,
};

static const char *const npu_ucmd_names[] = { "submit", "wait", "event_wait" };

static const u32 npu_ucmd_size[NPU_UCMD_COUNT] = {
	[NPU_UCMD_SUBMIT] = sizeof(struct drm_npu_submit),
	[NPU_UCMD_WAIT] = sizeof(struct drm_npu_uring_wait),
	[NPU_UCMD_EVENT_WAIT] = sizeof(struct drm_npu_uring_event_wait),
};

/* An op's result when it completed at issue, with res 0 and res2 0. */
#define NPU_UCMD_DONE		1

/* What an SQE128 carries in sqe->cmd. */
#define NPU_URING_PAYLOAD	80

union npu_ucmd_args {
	struct drm_npu_submit submit;
	struct drm_npu_uring_wait wait;
	struct drm_npu_uring_event_wait event_wait;
};

static_assert(sizeof(union npu_ucmd_args) <= NPU_URING_PAYLOAD);
static_assert(DRM_NPU_URING_CMD_SUBMIT ==
	      DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + NPU_UCMD_SUBMIT,
		      struct drm_npu_submit));
static_assert(DRM_NPU_URING_CMD_WAIT ==
	      DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + NPU_UCMD_WAIT,
		      struct drm_npu_uring_wait));
static_assert(DRM_NPU_URING_CMD_EVENT_WAIT ==
	      DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + NPU_UCMD_EVENT_WAIT,
		      struct drm_npu_uring_event_wait));

struct npu_ucmd {
	struct list_head link;		/* ndev->ucmds, while parked */
	struct list_head wait_link;	/* q->ucmds or event->ucmds */
	struct io_uring_cmd *cmd;
	struct npu_device *ndev;
	struct npu_ctx *ctx;
	u32 op;				/* enum npu_ucmd_op */
	struct npu_queue *q;		/* SUBMIT, WAIT: referenced */
	struct npu_sync *event;		/* EVENT_WAIT: referenced */
	u64 seq;			/* SUBMIT, WAIT: completes at done_seq >= seq */
	struct hrtimer timer;		/* the time limit, if any */
	unsigned int issue_flags;	/* while it is being issued */
	s32 res;
	u64 res2;
};

/*
 * In the command's pdu, which io_uring keeps until the CQE is posted:
 * `settled` outlives the npu_ucmd, which the task work frees first, so a
 * late cancel from io_uring can tell it must not touch it.
 */
struct npu_ucmd_pdu {
	struct npu_ucmd *u;
	bool settled;		/* under ucmd_lock */
};

static_assert(sizeof(struct npu_ucmd_pdu) <= sizeof_field(struct io_uring_cmd, pdu));

static struct npu_ucmd_pdu *npu_ucmd_pdu(struct io_uring_cmd *cmd)
{
	return (struct npu_ucmd_pdu *)cmd->pdu;
}

static struct npu_ucmd *npu_ucmd_of(struct io_uring_cmd *cmd)
{
	return npu_ucmd_pdu(cmd)->u;
}

u64 npu_uring_cmds_supported(void)
{
	return IS_ENABLED(CONFIG_IO_URING) ? GENMASK_ULL(NPU_UCMD_COUNT - 1, 0) : 0;
}

void npu_uring_init_device(struct npu_device *ndev)
{
	spin_lock_init(&ndev->ucmd_lock);
	INIT_LIST_HEAD(&ndev->ucmds);
	INIT_LIST_HEAD(&ndev->ucmd_events);
	atomic_set(&ndev->ucmd_count, 0);
}

static void npu_ucmd_free(struct npu_ucmd *u)
{
	if (u->q)
		npu_queue_put(u->q);
	if (u->event)
		npu_sync_put(u->event);
	atomic_dec(&u->ctx->ucmds);
	atomic_dec(&u->ndev->ucmd_count);
	kfree(u);
}

/* Task work in the submitter's context: post the CQE. */
static void npu_ucmd_complete(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct npu_ucmd *u = npu_ucmd_of(cmd);
	s32 res = u->res;
	u64 res2 = u->res2;

	/* Waits for an expiry running now; it finds the command settled. */
	hrtimer_cancel(&u->timer);
	/* Before the CQE: posting it may drop the last hold on the file. */
	npu_ucmd_free(u);
	npu_uring_cmd_done(cmd, res, res2, issue_flags);
}
NPU_URING_TASK_WORK(npu_ucmd_task_work, npu_ucmd_complete)

/* Under ucmd_lock, u parked: take it off the lists and complete it. */
static void npu_ucmd_settle(struct npu_ucmd *u, s32 res, u64 res2)
{
	lockdep_assert_held(&u->ndev->ucmd_lock);
	list_del_init(&u->link);
	list_del_init(&u->wait_link);
	if (u->event && list_empty(&u->event->ucmds))
		list_del_init(&u->event->waited_link);
	npu_ucmd_pdu(u->cmd)->settled = true;
	u->res = res;
	u->res2 = res2;
	io_uring_cmd_complete_in_task(u->cmd, npu_ucmd_task_work);
}

static s32 npu_ucmd_status_errno(u32 status)
{
	return status == DRM_NPU_JOB_ABORTED ? -ECANCELED : -EIO;
}

/*
 * Under ucmd_lock: settle what q's state decides. The state is written
 * under queue_lock, and every change is followed by npu_uring_queue_settle():
 * a command parked after a change sees it here, one parked before is
 * settled by that call. True if `mine` was among them: its task work may
 * free it on another CPU at once, ucmd_lock or not, so its parker must
 * not touch it again.
 */
static bool npu_ucmd_settle_queue(struct npu_queue *q, struct npu_ucmd *mine)
{
	struct npu_ucmd *u, *tmp;
	bool settled = false;

	lockdep_assert_held(&q->ctx->ndev->ucmd_lock);
	list_for_each_entry_safe(u, tmp, &q->ucmds, wait_link) {
		if (u->seq <= READ_ONCE(q->done_seq))
			npu_ucmd_settle(u, 0, u->seq);
		/*
		 * Nothing after a failure runs: everything waiting fails. The
		 * acquire pairs with the release that publishes the record.
		 */
		else if (smp_load_acquire(&q->failed))
			npu_ucmd_settle(u, npu_ucmd_status_errno(q->status),
					DRM_NPU_URING_RES2(q->status, q->error_task));
		else
			break;	/* sorted: the rest wait for later batches */
		settled |= u == mine;
	}
	return settled;
}

/* Under queue_lock: q completed work or failed. */
void npu_uring_queue_settle(struct npu_queue *q)
{
	struct npu_device *ndev = q->ctx->ndev;
	unsigned long flags;

	lockdep_assert_held(&q->ctx->ndev->queue_lock);
	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	npu_ucmd_settle_queue(q, NULL);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
}

/* Under ucmd_lock: settle every waiter of s, with res and res2. */
static void npu_ucmd_settle_event(struct npu_sync *s, s32 res, u64 res2)
{
	struct npu_ucmd *u, *tmp;

	lockdep_assert_held(&s->ndev->ucmd_lock);
	list_for_each_entry_safe(u, tmp, &s->ucmds, wait_link)
		npu_ucmd_settle(u, res, res2);
}

/*
 * Under ucmd_lock: settle the waiters of events that were recorded; true
 * if those of `mine` were among them (see npu_ucmd_settle_queue()).
 */
static bool npu_ucmd_settle_events(struct npu_device *ndev, const struct npu_sync *mine)
{
	struct npu_sync *s, *tmp;
	bool settled = false;
	u64 ts;

	lockdep_assert_held(&ndev->ucmd_lock);
	list_for_each_entry_safe(s, tmp, &ndev->ucmd_events, waited_link) {
		if (npu_event_recorded(s, &ts)) {
			npu_ucmd_settle_event(s, 0, ts);
			settled |= s == mine;
		}
	}
	return settled;
}

/* The device raised its queue interrupt, which also announces records. */
void npu_uring_events_settle(struct npu_device *ndev)
{
	unsigned long flags;

	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	npu_ucmd_settle_events(ndev, NULL);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
}

/* The device was reset or removed: no event waiter can be satisfied now. */
void npu_uring_fail_events(struct npu_device *ndev, u32 status)
{
	struct npu_sync *s, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	list_for_each_entry_safe(s, tmp, &ndev->ucmd_events, waited_link)
		npu_ucmd_settle_event(s, npu_ucmd_status_errno(status),
				      DRM_NPU_URING_RES2(status, 0));
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
}

/* Cancel what a closing ring or an exiting task waits for; see the top. */
void npu_uring_reap(struct npu_device *ndev)
{
#ifdef NPU_URING_REAP
	struct npu_ucmd *u, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	list_for_each_entry_safe(u, tmp, &ndev->ucmds, link)
		if (npu_uring_cmd_orphaned(u->cmd))
			npu_ucmd_settle(u, -ECANCELED, 0);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
#endif
}

static enum hrtimer_restart npu_ucmd_expire(struct hrtimer *t)
{
	struct npu_ucmd *u = container_of(t, struct npu_ucmd, timer);
	struct npu_device *ndev = u->ndev;
	unsigned long flags;

	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	if (!list_empty(&u->link))
		npu_ucmd_settle(u, -ETIMEDOUT, 0);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
	return HRTIMER_NORESTART;
}

#ifdef HAVE_IO_URING_CMD_MARK_CANCELABLE
/*
 * io_uring cancels a command it still lists as cancelable: until its CQE
 * is posted, which is after the task work freed the npu_ucmd. It lists
 * it from npu_ucmd_parking(), before the parker takes ucmd_lock: a
 * command issued from an io_uring worker (which holds no ring lock) can
 * be cancelled in between. Settled there, it would be parked after its
 * task work had freed it. So a command not parked yet is left alone:
 * io_uring asks again until no cancelable command is left, and by then
 * it is parked. (Asked again: when its ring closes, at exec and when an
 * SQPOLL thread exits; a task's plain exit never asks, see the top.)
 */
static void npu_ucmd_cancel(struct npu_device *ndev, struct io_uring_cmd *cmd)
{
	struct npu_ucmd_pdu *pdu = npu_ucmd_pdu(cmd);
	unsigned long flags;

	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	if (!pdu->settled && !list_empty(&pdu->u->link))
		npu_ucmd_settle(pdu->u, -ECANCELED, 0);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
}
#endif

/*
 * Under ucmd_lock: a parked command's deadline, as the uapi defines it
 * (absolute CLOCK_MONOTONIC; not in the future polls).
 */
static void npu_ucmd_arm(struct npu_ucmd *u, s64 deadline_ns)
{
	lockdep_assert_held(&u->ndev->ucmd_lock);
	if (list_empty(&u->link) || deadline_ns == DRM_NPU_DEADLINE_NONE)
		return;
	if (deadline_ns <= ktime_to_ns(ktime_get()))
		npu_ucmd_settle(u, -ETIMEDOUT, 0);
	else
		hrtimer_start(&u->timer, ns_to_ktime(deadline_ns), HRTIMER_MODE_ABS);
}

/*
 * Fault injection: a parker held up right after what it settled, while
 * the completion it queued runs (and frees the command) on another CPU.
 */
static void npu_ucmd_inject_hold(struct npu_device *ndev)
{
	unsigned int us = READ_ONCE(ndev->inject_hold_park_us);

	if (us)
		udelay(us);
}

/*
 * About to park: from here on the command completes only through
 * npu_ucmd_settle(), so io_uring may now ask to cancel it. The caller
 * must park it after this, without an error path in between: a cancel
 * ignored until then (npu_ucmd_cancel()) is retried by a ring's exit
 * work, which would spin until it is.
 */
static void npu_ucmd_parking(struct npu_ucmd *u)
{
#ifdef HAVE_IO_URING_CMD_MARK_CANCELABLE
	unsigned int ms = READ_ONCE(u->ndev->inject_hold_cancelable_ms);

	io_uring_cmd_mark_cancelable(u->cmd, u->issue_flags);
	/*
	 * Fault injection: cancelable, and not parked yet (for EVENT_WAIT
	 * inside the device's section, which an unplug then waits out).
	 */
	if (ms && (u->issue_flags & IO_URING_F_UNLOCKED))
		msleep(ms);
#endif
}

/*
 * Park u on its queue, settling it at once if the queue is already past
 * u->seq or failed. u belongs to the completion side afterwards.
 */
static void npu_ucmd_park_queue(struct npu_ucmd *u, s64 deadline_ns)
{
	struct npu_device *ndev = u->ndev;
	struct npu_queue *q = u->q;
	struct npu_ucmd *pos;
	unsigned long flags;
	bool settled;

	npu_ucmd_parking(u);
	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	list_add_tail(&u->link, &ndev->ucmds);
	/* Keep the order by seq: SUBMITs append, a WAIT walks back a little. */
	list_for_each_entry_reverse(pos, &q->ucmds, wait_link)
		if (pos->seq <= u->seq)
			break;
	list_add(&u->wait_link, &pos->wait_link);
	settled = npu_ucmd_settle_queue(q, u);
	npu_ucmd_inject_hold(ndev);
	if (!settled)
		npu_ucmd_arm(u, deadline_ns);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
}

static int npu_ucmd_submit(struct npu_ucmd *u, struct drm_file *file,
			   struct drm_npu_submit *args)
{
	int ret;

	if (args->seq)
		return -EINVAL;
	/*
	 * SUBMIT never blocks the ring: dependencies and ring room are the
	 * queue's scheduler's to wait for, so SUBMITs reach the device in
	 * the order they were issued. Only a queue holding its whole backlog
	 * sends one to an io_uring worker, which waits for room.
	 */
	ret = npu_submit(file, args, u->issue_flags & IO_URING_F_NONBLOCK, &u->q);
	if (ret)
		return ret;
	u->seq = args->seq;
	npu_ucmd_park_queue(u, DRM_NPU_DEADLINE_NONE);
	return 0;
}

static int npu_ucmd_wait(struct npu_ucmd *u, struct drm_npu_uring_wait *args)
{
	struct npu_queue *q;

	if (args->flags)
		return -EINVAL;
	q = npu_wait_queue(u->ctx, args->queue, args->seq);
	if (IS_ERR(q))
		return PTR_ERR(q);
	if (!q)
		return NPU_UCMD_DONE;
	u->q = q;
	u->seq = args->seq;
	npu_ucmd_park_queue(u, args->deadline_ns);
	return 0;
}

static int npu_ucmd_event_wait(struct npu_ucmd *u, struct drm_npu_uring_event_wait *args)
{
	struct npu_device *ndev = u->ndev;
	unsigned long flags;
	bool settled;
	int idx;

	if (args->flags)
		return -EINVAL;
	u->event = npu_sync_lookup(u->ctx, args->id, DRM_NPU_SYNC_EVENT);
	if (!u->event)
		return -EINVAL;
	/* Removal fails every event waiter after the device is unplugged. */
	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	npu_ucmd_parking(u);
	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	list_add_tail(&u->link, &ndev->ucmds);
	if (list_empty(&u->event->ucmds))
		list_add_tail(&u->event->waited_link, &ndev->ucmd_events);
	list_add_tail(&u->wait_link, &u->event->ucmds);
	/* Settled, u is its task work's: see npu_ucmd_settle_queue(). */
	settled = npu_ucmd_settle_events(ndev, u->event);
	npu_ucmd_inject_hold(ndev);
	if (!settled)
		npu_ucmd_arm(u, args->deadline_ns);
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
	drm_dev_exit(idx);
	return 0;
}

/*
 * The command's payload, read once out of the SQE (which userspace can
 * still write) and checked against the size its cmd_op encodes.
 */
static int npu_ucmd_decode(const struct io_uring_cmd *cmd, u32 *op,
			   union npu_ucmd_args *args)
{
	u8 raw[NPU_URING_PAYLOAD];
	u32 usize = _IOC_SIZE(cmd->cmd_op), ksize;
	int nr = (int)_IOC_NR(cmd->cmd_op) - DRM_COMMAND_BASE - DRM_NPU_URING_CMD_BASE;

	if (_IOC_TYPE(cmd->cmd_op) != DRM_IOCTL_BASE || _IOC_DIR(cmd->cmd_op) != _IOC_WRITE ||
	    nr < 0 || nr >= NPU_UCMD_COUNT || usize > sizeof(raw))
		return -EINVAL;
	memcpy(raw, npu_uring_cmd_payload(cmd), usize);
	ksize = npu_ucmd_size[nr];
	if (usize > ksize && memchr_inv(raw + ksize, 0, usize - ksize))
		return -EINVAL;	/* fields this kernel does not know */
	memset(args, 0, sizeof(*args));
	memcpy(args, raw, min(usize, ksize));
	*op = nr;
	return 0;
}

/*
 * file_operations.uring_cmd. Errors found before a command parks are
 * returned here and become its CQE; a parked command completes later.
 */
int npu_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct drm_file *file = cmd->file->private_data;
	struct npu_ctx *ctx = file->driver_priv;
	struct npu_device *ndev = ctx->ndev;
	union npu_ucmd_args args;
	struct npu_ucmd *u;
	u32 op;
	int ret;

#ifdef HAVE_IO_URING_CMD_MARK_CANCELABLE
	if (issue_flags & IO_URING_F_CANCEL) {
		npu_ucmd_cancel(ndev, cmd);
		return 0;
	}
#endif
	/* The payloads need 80 bytes; the results need a second value. */
	if (!(issue_flags & IO_URING_F_SQE128) || !(issue_flags & IO_URING_F_CQE32))
		return -EINVAL;
	ret = npu_ucmd_decode(cmd, &op, &args);
	if (ret)
		return ret;

	if (atomic_inc_return(&ctx->ucmds) > DRM_NPU_URING_MAX_PARKED) {
		atomic_dec(&ctx->ucmds);
		return -EBUSY;
	}
	/* Every context under its own limit may still be too many together. */
	if (atomic_read(&ndev->ucmd_count) >= DRM_NPU_URING_MAX_PARKED_DEVICE) {
		atomic_dec(&ctx->ucmds);
		return -EBUSY;
	}
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u) {
		atomic_dec(&ctx->ucmds);
		return -ENOMEM;
	}
	atomic_inc(&ndev->ucmd_count);
	INIT_LIST_HEAD(&u->link);
	INIT_LIST_HEAD(&u->wait_link);
	npu_hrtimer_setup(&u->timer, npu_ucmd_expire);
	u->cmd = cmd;
	u->ndev = ndev;
	u->ctx = ctx;
	u->op = op;
	npu_ucmd_pdu(cmd)->u = u;
	npu_ucmd_pdu(cmd)->settled = false;
	u->issue_flags = issue_flags;

	switch (op) {
	case NPU_UCMD_SUBMIT:
		ret = npu_ucmd_submit(u, file, &args.submit);
		break;
	case NPU_UCMD_WAIT:
		ret = npu_ucmd_wait(u, &args.wait);
		break;
	default:
		ret = npu_ucmd_event_wait(u, &args.event_wait);
		break;
	}
	if (ret) {
		/* Never parked: nobody else has seen it. */
		npu_ucmd_free(u);
		if (ret == NPU_UCMD_DONE)
			return 0;
		/*
		 * A wait in an io_uring worker ends with a restart code when
		 * io_uring cancels the worker; nothing restarts a CQE.
		 */
		if (ret == -ERESTARTSYS || ret == -ERESTARTNOINTR ||
		    ret == -ERESTARTNOHAND || ret == -ERESTART_RESTARTBLOCK)
			return -ECANCELED;
		return ret;
	}
	/* Parked, and perhaps completed already: u is not ours to touch. */
	return -EIOCBQUEUED;
}

/* The first few parked commands: the lock is irq-safe, the list unbounded. */
#define NPU_UCMD_SHOW_MAX	32

void npu_uring_debugfs_show(struct seq_file *m, struct npu_device *ndev)
{
	struct npu_ucmd *u;
	unsigned long flags;
	unsigned int n = 0;

	seq_printf(m, "io_uring commands: %d\n", atomic_read(&ndev->ucmd_count));
#ifdef NPU_URING_REAP
	seq_puts(m, "io_uring orphans: cancelled by the watchdog\n");
#else
	seq_puts(m, "io_uring orphans: settled with their work\n");
#endif
	spin_lock_irqsave(&ndev->ucmd_lock, flags);
	list_for_each_entry(u, &ndev->ucmds, link) {
		if (n++ == NPU_UCMD_SHOW_MAX) {
			seq_puts(m, "  ...\n");
			break;
		}
		if (u->q)
			seq_printf(m, "  context %u %s queue %u seq %llu\n", u->ctx->id,
				   npu_ucmd_names[u->op], u->q->id, u->seq);
		else
			seq_printf(m, "  context %u %s event %u\n", u->ctx->id,
				   npu_ucmd_names[u->op], u->event->id);
	}
	spin_unlock_irqrestore(&ndev->ucmd_lock, flags);
}
