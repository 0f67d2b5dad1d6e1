// SPDX-License-Identifier: MIT
/*
 * Task engine. Called with dev->lock held (see npu_dev.c).
 *
 * The queue slot and the ring are host-written memory: the slot is
 * checked when the queue starts, and each task is copied out of the ring
 * and checked before it runs, so a bad task faults its queue and nothing
 * else.
 *
 * Every access to device memory (HBM, or host memory through the MMU)
 * happens here under dev->lock, and no translation outlives the lock: a
 * kernel launch gathers its inputs and later scatters its output through
 * fresh translations, computing in between on private buffers with the
 * lock released. So a TLB_INVALIDATE or QUEUE_STOP, which the mailbox
 * answers under the same lock, is atomic with respect to all of them.
 */
#include "npu_engine.h"

#include <stdlib.h>
#include <string.h>

#include "npu_dev.h"
#include "npu_ops.h"

#define LOAD_ACQ(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v)		__atomic_store_n((p), (v), __ATOMIC_RELEASE)

struct fault {
	uint32_t code;
	uint32_t access;
	uint64_t address;
};

static struct npu_fw_queue *slot(struct npu_dev *dev, uint64_t qid)
{
	return (struct npu_fw_queue *)(dev->hbm + NPU_FW_QUEUE_TABLE) + qid;
}

/* The sync entry `id`, or NULL when out of range. */
static struct npu_fw_sync *sync_entry(struct npu_dev *dev, uint64_t id)
{
	if (id >= NPU_FW_MAX_SYNCS)
		return NULL;
	return (struct npu_fw_sync *)(dev->hbm + NPU_FW_SYNC_TABLE) + id;
}

static const struct npu_fw_task *head_task(struct npu_dev *dev, struct npu_fw_queue *q)
{
	return (const struct npu_fw_task *)(dev->hbm + q->ring_offset) +
	       (q->head & (q->ring_entries - 1));
}

static int in_hbm(struct npu_dev *dev, uint64_t off, uint64_t len)
{
	return off >= NPU_FW_RESERVED_SIZE && off <= dev->cfg.hbm_size &&
	       len <= dev->cfg.hbm_size - off;
}

/* Queue `qid` executed for `ns` more: count it and publish exec_ms. */
static void count_exec(struct npu_dev *dev, uint64_t qid, uint64_t ns)
{
	struct npu_queue_exec *e = &dev->eng.q[qid];

	e->exec_ns += ns;
	/* Free-running milliseconds: the host compares two readings. */
	__atomic_store_n(&slot(dev, qid)->exec_ms, (uint32_t)(e->exec_ns / 1000000),
			 __ATOMIC_RELEASE);
}

/* The launch in flight computed for its queue up to `until`: count it. */
static void count_launch(struct npu_dev *dev, uint64_t until)
{
	struct npu_launch *l = &dev->eng.launch;

	if (l->discarded || until <= l->counted_ns)
		return;
	count_exec(dev, l->qid, until - l->counted_ns);
	l->counted_ns = until;
}

static bool launch_of(struct npu_dev *dev, uint64_t qid)
{
	const struct npu_launch *l = &dev->eng.launch;

	return l->active && !l->discarded && l->qid == qid;
}

/*
 * An injected hang makes every running queue of the context that has
 * work look like a task executing forever: exec_ms advances, head stays.
 */
static void count_hung(struct npu_dev *dev, uint64_t now)
{
	bool seen = false;

	if (!dev->hang_context && !dev->eng.hang_seen)
		return;
	for (uint64_t qid = 0; qid < dev->cfg.num_queues; qid++) {
		struct npu_fw_queue *q = slot(dev, qid);
		struct npu_queue_exec *e = &dev->eng.q[qid];

		/* A launch in flight counts as such, not twice. */
		if (!dev->hang_context || q->context != dev->hang_context ||
		    LOAD_ACQ(&q->state) != NPU_QUEUE_RUNNING ||
		    q->head == LOAD_ACQ(&q->tail) || launch_of(dev, qid)) {
			e->hung_since_ns = 0;
			continue;
		}
		seen = true;
		if (e->hung_since_ns && now > e->hung_since_ns)
			count_exec(dev, qid, now - e->hung_since_ns);
		e->hung_since_ns = now;
	}
	dev->eng.hang_seen = seen;
}

/*
 * Bring exec_ms of what runs besides the engine up to `now`: the launch on
 * the cores (up to its end, if the cores are through) and hung queues.
 */
static void count_others(struct npu_dev *dev, uint64_t now)
{
	struct npu_launch *l = &dev->eng.launch;
	uint64_t finished;

	if (l->active && !l->discarded)
		count_launch(dev, npu_cores_idle(&dev->cores, &finished) ? finished : now);
	if (dev->hang_context || dev->eng.hang_seen)
		count_hung(dev, now);
}

/*
 * A task moving data on the engine counts as it goes: a copy of GiBs
 * would otherwise show as exec_ms standing still, then jumping. Every
 * TASK_TICK_BYTES moved (a few ms at memory speed) it is brought up to
 * date, and so is what runs meanwhile on the cores.
 */
#define TASK_TICK_BYTES		(4u << 20)

static void task_begin(struct npu_dev *dev, uint64_t qid)
{
	dev->eng.task_qid = (uint32_t)qid;
	dev->eng.task_counted_ns = npu_dev_clock_ns();
	dev->eng.task_bytes = 0;
}

static void task_moved(struct npu_dev *dev, uint64_t bytes)
{
	struct npu_engine *e = &dev->eng;
	uint64_t now;

	e->task_bytes += bytes;
	if (!e->task_counted_ns || e->task_bytes < TASK_TICK_BYTES)
		return;
	now = npu_dev_clock_ns();
	count_exec(dev, e->task_qid, now - e->task_counted_ns);
	e->task_counted_ns = now;
	e->task_bytes = 0;
	count_others(dev, now);
}

static void task_end(struct npu_dev *dev)
{
	struct npu_engine *e = &dev->eng;

	if (!e->task_counted_ns)
		return;
	count_exec(dev, e->task_qid, npu_dev_clock_ns() - e->task_counted_ns);
	e->task_counted_ns = 0;
}

/*
 * The launch's queue stopped (or restarted): count its time so far, tell
 * the cores to stop, and make sure its result is dropped, never written.
 */
static void discard_launch(struct npu_dev *dev)
{
	count_launch(dev, npu_dev_clock_ns());
	dev->eng.launch.discarded = true;
	npu_cores_cancel(&dev->cores);
}

int32_t npu_engine_queue_start(struct npu_dev *dev, uint64_t qid)
{
	struct npu_fw_queue *q;
	uint32_t n;

	if (qid >= dev->cfg.num_queues)
		return -NPU_FW_EINVAL;
	q = slot(dev, qid);
	n = q->ring_entries;
	if (!n || (n & (n - 1)) || n > NPU_FW_RING_MAX || !q->context ||
	    q->priority >= NPU_FW_PRIORITIES ||
	    q->tail != 0 || !in_hbm(dev, q->ring_offset, (uint64_t)n * sizeof(struct npu_fw_task)) ||
	    !in_hbm(dev, q->pt_root, NPU_PT_SIZE))
		return -NPU_FW_EINVAL;
	/* A host that restarts a running queue gets its launch dropped too. */
	if (launch_of(dev, qid))
		discard_launch(dev);
	q->head = 0;
	q->done_seq = 0;
	q->error = 0;
	q->error_access = 0;
	q->error_address = 0;
	memset(&dev->eng.q[qid], 0, sizeof(dev->eng.q[qid]));
	q->exec_ms = 0;
	npu_mmu_invalidate(dev, q->context);
	STORE_REL(&q->state, NPU_QUEUE_RUNNING);
	return NPU_FW_OK;
}

/*
 * Answered at once, whatever the queue runs: a launch still computing is
 * cancelled and its output never scattered, and the engine looks at the
 * state (under this same lock) before every task and every scatter.
 */
int32_t npu_engine_queue_stop(struct npu_dev *dev, uint64_t qid)
{
	if (qid >= dev->cfg.num_queues)
		return -NPU_FW_EINVAL;
	if (launch_of(dev, qid))
		discard_launch(dev);
	STORE_REL(&slot(dev, qid)->state, NPU_QUEUE_STOPPED);
	return NPU_FW_OK;
}

void npu_engine_abandon(struct npu_dev *dev)
{
	if (dev->eng.launch.active && !dev->eng.launch.discarded)
		discard_launch(dev);
}

void npu_engine_reset(struct npu_dev *dev)
{
	npu_engine_abandon(dev);
	memset(dev->eng.q, 0, sizeof(dev->eng.q));
	dev->eng.hang_seen = false;
}

static int xlate(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
		 enum npu_access access, uint8_t **ptr, uint64_t *avail,
		 struct fault *f)
{
	if (!npu_mmu_translate(dev, q->context, q->pt_root, va, access, ptr, avail))
		return 0;
	f->code = NPU_FW_EFAULT;
	f->access = access;
	f->address = va;
	return -1;
}

static int dma_copy(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t dst,
		    uint64_t src, uint64_t size, struct fault *f)
{
	while (size) {
		uint8_t *s, *d;
		uint64_t sa, da, n;

		if (xlate(dev, q, src, NPU_ACCESS_READ, &s, &sa, f) ||
		    xlate(dev, q, dst, NPU_ACCESS_WRITE, &d, &da, f))
			return -1;
		n = size < sa ? size : sa;
		n = n < da ? n : da;
		memmove(d, s, n);
		task_moved(dev, n);
		src += n;
		dst += n;
		size -= n;
	}
	return 0;
}

static int dma_fill(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t dst,
		    uint64_t size, uint32_t pattern, struct fault *f)
{
	while (size) {
		uint8_t *d;
		uint64_t da, n;

		if (xlate(dev, q, dst, NPU_ACCESS_WRITE, &d, &da, f))
			return -1;
		n = size < da ? size : da;
		/* dst and size are multiples of 4, and so is every page. */
		for (uint64_t i = 0; i < n; i += 4)
			memcpy(d + i, &pattern, 4);
		task_moved(dev, n);
		dst += n;
		size -= n;
	}
	return 0;
}

/* Move bytes between device VA and a host buffer, page by page. */
static int dma_host(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
		    void *buf, uint64_t size, enum npu_access access, struct fault *f)
{
	uint8_t *h = buf;

	while (size) {
		uint8_t *d;
		uint64_t avail, n;

		if (xlate(dev, q, va, access, &d, &avail, f))
			return -1;
		n = size < avail ? size : avail;
		if (access == NPU_ACCESS_WRITE)
			memcpy(d, h, n);
		else
			memcpy(h, d, n);
		task_moved(dev, n);
		va += n;
		h += n;
		size -= n;
	}
	return 0;
}

static void free_views(struct npu_view *v)
{
	for (unsigned int i = 0; i < 3; i++) {
		free(v[i].data);
		v[i].data = NULL;
	}
}

/* Write a launch's output back to device memory. */
static int scatter(struct npu_dev *dev, struct npu_fw_queue *q,
		   const struct npu_op_args *a, const struct npu_view *out,
		   struct fault *f)
{
	return dma_host(dev, q, a->out.va, out->data, npu_tensor_extent(&a->out),
			NPU_ACCESS_WRITE, f);
}

/*
 * A kernel launch: read and check the argument block, gather the tensors
 * into host buffers (keeping their strides), run the op on the cores and
 * scatter the output back. An output with gaps between its elements is
 * gathered first, so the gaps are written back unchanged.
 *
 * With the cores' workers started the compute is handed to them and the
 * task stays at head (returns 1) until npu_engine_poll() sees it done;
 * without, it runs here and now (returns 0). -1: the task failed.
 */
static int run_kernel(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		      const struct npu_fw_task *t, struct fault *f)
{
	struct npu_op_args a;
	struct npu_view v[3] = { 0 };	/* in[0], in[1], out */
	const struct npu_op_tensor *ts[3];
	unsigned int n_in, i;
	int ret = -1;

	/*
	 * args[2] is the block's size: never read past it. A block shorter
	 * than the struct this op library knows is malformed; bytes past it
	 * are a newer caller's, ignored.
	 */
	if (t->args[2] < sizeof(a)) {
		f->code = NPU_FW_EKERNEL;
		f->access = NPU_ACCESS_READ;
		f->address = t->args[0];
		return -1;
	}
	if (dma_host(dev, q, t->args[0], &a, sizeof(a), NPU_ACCESS_READ, f))
		return -1;
	if (t->args[1] > NPU_DEV_CORES_MAX || npu_op_check(&a)) {
		f->code = NPU_FW_EKERNEL;
		f->access = NPU_ACCESS_READ;
		f->address = t->args[0];
		return -1;
	}
	n_in = npu_op_inputs(&a);
	ts[0] = &a.in[0];
	ts[1] = &a.in[1];
	ts[2] = &a.out;
	for (i = 0; i < 3; i++) {
		const struct npu_op_tensor *tt = ts[i];
		uint64_t extent, elems = 1;
		int gather;

		if (i < 2 && i >= n_in)
			continue;
		extent = npu_tensor_extent(tt);
		for (uint32_t k = 0; k < tt->ndim; k++)
			elems *= tt->shape[k];
		gather = i < 2 || npu_op_reads_output(&a) ||
			 extent != elems * npu_dtype_size(tt->dtype);
		v[i].data = malloc(extent);
		if (!v[i].data) {
			f->code = NPU_FW_EKERNEL;
			f->address = tt->va;
			goto out;
		}
		v[i].dtype = tt->dtype;
		v[i].ndim = tt->ndim;
		memcpy(v[i].shape, tt->shape, sizeof(v[i].shape));
		memcpy(v[i].stride, tt->stride, sizeof(v[i].stride));
		if (gather && dma_host(dev, q, tt->va, v[i].data, extent, NPU_ACCESS_READ, f))
			goto out;
	}
	if (dev->cores.n) {
		struct npu_launch *l = &dev->eng.launch;

		l->active = true;
		l->discarded = false;
		l->qid = (uint32_t)qid;
		l->head = q->head;
		l->counted_ns = npu_dev_clock_ns();
		l->args = a;
		memcpy(l->v, v, sizeof(v));
		dev->eng.cores_next = (uint32_t)qid + 1;
		npu_cores_launch(&dev->cores, &l->args, l->v, &l->v[2],
				 (unsigned int)t->args[1]);
		return 1;
	}
	npu_cores_run(&dev->cores, &a, v, &v[2], (unsigned int)t->args[1]);
	ret = scatter(dev, q, &a, &v[2], f);
out:
	free_views(v);
	return ret;
}

static void queue_fault(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
			const struct fault *f)
{
	q->error = f->code;
	q->error_access = f->access;
	q->error_address = f->address;
	STORE_REL(&q->state, NPU_QUEUE_FAULTED);
	npu_dev_log_error(dev, f->code, q->context, f->address,
			  (qid << 8) | f->access);
	npu_dev_raise_queue_irq(dev);
}

/* Run the task at head of queue `qid`. */
static void run_one(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q)
{
	uint32_t head = q->head;
	struct npu_fw_task t;
	struct fault f = { .code = NPU_FW_EINVAL };
	bool timed;
	int bad = 0;

	memcpy(&t, dev->hbm + q->ring_offset +
	       (uint64_t)(head & (q->ring_entries - 1)) * sizeof(t), sizeof(t));
	/*
	 * Tasks that move data take measurable time: it counts in exec_ms.
	 * The others take nanoseconds, not worth two clock reads.
	 */
	timed = t.type == NPU_FW_TASK_COPY || t.type == NPU_FW_TASK_FILL ||
		t.type == NPU_FW_TASK_KERNEL || t.type == NPU_FW_TASK_TIMESTAMP;
	if (timed)
		task_begin(dev, qid);
	switch (t.type) {
	case NPU_FW_TASK_NOP:
		break;
	case NPU_FW_TASK_COPY:
		bad = dma_copy(dev, q, t.args[0], t.args[1], t.args[2], &f);
		break;
	case NPU_FW_TASK_FILL:
		bad = (t.args[0] | t.args[1]) & 3 ? -1 :
		      dma_fill(dev, q, t.args[0], t.args[1], (uint32_t)t.args[2], &f);
		break;
	case NPU_FW_TASK_FENCE:
		STORE_REL(&q->done_seq, t.args[0]);
		break;
	case NPU_FW_TASK_KERNEL:
		bad = run_kernel(dev, qid, q, &t, &f);
		break;
	case NPU_FW_TASK_TIMESTAMP: {
		uint64_t now = npu_dev_clock_ns();

		bad = t.args[0] & 7 ? -1 :
		      dma_host(dev, q, t.args[0], &now, sizeof(now), NPU_ACCESS_WRITE, &f);
		break;
	}
	case NPU_FW_TASK_BARRIER:
		/* Tasks run one at a time, in order: everything before is done. */
		break;
	case NPU_FW_TASK_EVENT_RECORD:
	case NPU_FW_TASK_EVENT_WAIT:
	case NPU_FW_TASK_EVENT_RESET:
	case NPU_FW_TASK_NOTIFY_RECORD:
	case NPU_FW_TASK_NOTIFY_WAIT: {
		struct npu_fw_sync *s = sync_entry(dev, t.args[0]);

		if (!s) {
			bad = -1;
			break;
		}
		/* Waits only run once runnable() saw them satisfied. */
		if (t.type == NPU_FW_TASK_EVENT_RECORD) {
			s->timestamp_ns = npu_dev_clock_ns();
			STORE_REL(&s->value, 1);
			npu_dev_raise_queue_irq(dev);	/* host waiters */
		} else if (t.type == NPU_FW_TASK_EVENT_RESET) {
			STORE_REL(&s->value, 0);
		} else if (t.type == NPU_FW_TASK_NOTIFY_RECORD) {
			__atomic_fetch_add(&s->value, 1, __ATOMIC_ACQ_REL);
		} else if (t.type == NPU_FW_TASK_NOTIFY_WAIT) {
			__atomic_fetch_sub(&s->value, 1, __ATOMIC_ACQ_REL);
		}
		break;
	}
	default:
		bad = -1;
		break;
	}
	if (timed)
		task_end(dev);
	if (bad > 0)		/* on the cores: head moves when it is done */
		return;
	if (bad) {
		queue_fault(dev, qid, q, &f);
		return;
	}
	STORE_REL(&q->head, head + 1);
	if (t.type == NPU_FW_TASK_FENCE)
		npu_dev_raise_queue_irq(dev);
}

static bool runnable(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q)
{
	const struct npu_fw_task *t;
	struct npu_fw_sync *s;

	/*
	 * An injected hang: the context's queues never move (and count
	 * exec time, in npu_engine_poll(), as a task that runs forever).
	 */
	if (dev->hang_context && q->context == dev->hang_context)
		return false;
	if (LOAD_ACQ(&q->state) != NPU_QUEUE_RUNNING || q->head == LOAD_ACQ(&q->tail))
		return false;
	/* Its launch is computing: the next task waits for it. */
	if (launch_of(dev, qid))
		return false;
	t = head_task(dev, q);
	/* The cores take one launch at a time; the next waits for them. */
	if (t->type == NPU_FW_TASK_KERNEL)
		return !dev->eng.launch.active;
	/* A queue waiting on an event or notify is blocked until it allows. */
	if (t->type != NPU_FW_TASK_EVENT_WAIT && t->type != NPU_FW_TASK_NOTIFY_WAIT)
		return true;
	s = sync_entry(dev, t->args[0]);
	return !s || LOAD_ACQ(&s->value) != 0;	/* a bad id runs, and faults */
}

/*
 * Strict priority between levels, so a busy low queue never delays a
 * high one by more than the task it is running; round-robin within the
 * top level, one task per queue per step. A step starts after the queue
 * that last got the AI cores: the first KERNEL met takes them, so queues
 * that all launch share the cores in turn too.
 */
bool npu_engine_step(struct npu_dev *dev)
{
	uint32_t n = dev->cfg.num_queues, first = dev->eng.cores_next % n;
	int top = -1;

	for (uint64_t qid = 0; qid < dev->cfg.num_queues; qid++) {
		struct npu_fw_queue *q = slot(dev, qid);

		if (runnable(dev, qid, q) && (int)q->priority > top)
			top = (int)q->priority;
	}
	if (top < 0)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t qid = (first + i) % n;
		struct npu_fw_queue *q = slot(dev, qid);

		if ((int)q->priority == top && runnable(dev, qid, q))
			run_one(dev, qid, q);
	}
	return true;
}

/*
 * The launch's cores are through: unless its queue stopped meanwhile,
 * scatter the output (through fresh translations: a TLB_INVALIDATE
 * answered during the compute holds) and move the queue past the task.
 */
static void complete_launch(struct npu_dev *dev, uint64_t finished_ns)
{
	struct npu_launch *l = &dev->eng.launch;
	struct npu_fw_queue *q = slot(dev, l->qid);
	struct fault f = { .code = NPU_FW_EFAULT };
	int bad;

	count_launch(dev, finished_ns);
	/* Stopping or restarting the queue discards; this is for a host
	 * that rewrote the slot under a running queue. */
	if (!l->discarded && LOAD_ACQ(&q->state) == NPU_QUEUE_RUNNING &&
	    q->head == l->head) {
		task_begin(dev, l->qid);
		bad = scatter(dev, q, &l->args, &l->v[2], &f);
		task_end(dev);
		if (bad)
			queue_fault(dev, l->qid, q, &f);
		else
			STORE_REL(&q->head, l->head + 1);
	}
	free_views(l->v);
	l->active = false;
}

bool npu_engine_poll(struct npu_dev *dev)
{
	struct npu_launch *l = &dev->eng.launch;
	uint64_t finished;

	if (!l->active && !dev->hang_context && !dev->eng.hang_seen)
		return false;
	count_others(dev, npu_dev_clock_ns());
	if (l->active && npu_cores_idle(&dev->cores, &finished)) {
		complete_launch(dev, finished);
		return true;
	}
	return false;
}

/* Well inside the 20 ms the interface promises between exec_ms updates. */
#define EXEC_TICK_MS	10

int npu_engine_sleep_ms(struct npu_dev *dev)
{
	return dev->eng.launch.active || dev->eng.hang_seen ? EXEC_TICK_MS : -1;
}
