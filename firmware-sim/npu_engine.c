// SPDX-License-Identifier: MIT
/*
 * The scheduler. Called with dev->lock held (see npu_dev.c).
 *
 * The queue slot and the ring are host-written memory: the slot is
 * checked when the queue starts, and each task is copied out of the ring
 * and checked before it runs, so a bad task faults its queue and nothing
 * else.
 *
 * A queue has at most one task executing, on the scheduler or on a unit
 * (eng.q[qid].busy), so each queue runs in order while the units work
 * for different queues at once. A kernel launch translates its tensors
 * here, under dev->lock, computes with the lock released, and scatters
 * its output here through fresh translations; copy engines hold a
 * translation for one chunk at most. The mailbox answers TLB_INVALIDATE
 * under the same lock once the chunks in flight landed and no launch
 * reads through a translation from before (npu_engine_settle), QUEUE_STOP
 * once the chunks landed, so either holds for everything after it.
 */
#include "npu_engine.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npu_engine_int.h"
#include "npu_ops.h"

/* Sync tasks one queue runs back to back in a step: they take ns each. */
#define SYNC_BURST	32

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

void npu_engine_count_exec(struct npu_dev *dev, uint64_t qid, uint64_t ns)
{
	struct npu_queue_exec *e = &dev->eng.q[qid];

	e->exec_ns += ns;
	/* Free-running milliseconds: the host compares two readings. */
	__atomic_store_n(&npu_engine_slot(dev, qid)->exec_ms, (uint32_t)(e->exec_ns / 1000000),
			 __ATOMIC_RELEASE);
}

/* A launch in flight computed for its queue up to `until`: count it. */
static void count_launch(struct npu_dev *dev, struct npu_launch *l, uint64_t until)
{
	if (l->discarded || until <= l->counted_ns)
		return;
	npu_engine_count_exec(dev, l->qid, until - l->counted_ns);
	l->counted_ns = until;
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
		struct npu_fw_queue *q = npu_engine_slot(dev, qid);
		struct npu_queue_exec *e = &dev->eng.q[qid];

		/* A task on a unit counts as such, not twice. */
		if (!dev->hang_context || q->context != dev->hang_context ||
		    LOAD_ACQ(&q->state) != NPU_QUEUE_RUNNING ||
		    q->head == LOAD_ACQ(&q->tail) || e->busy) {
			e->hung_since_ns = 0;
			continue;
		}
		seen = true;
		if (e->hung_since_ns && now > e->hung_since_ns)
			npu_engine_count_exec(dev, qid, now - e->hung_since_ns);
		e->hung_since_ns = now;
	}
	dev->eng.hang_seen = seen;
}

/*
 * Bring exec_ms of what runs besides the scheduler up to `now`: launches
 * on the cores (up to their end, if the cores are through) and hung
 * queues. Copy engines count for themselves, chunk by chunk.
 */
static void count_others(struct npu_dev *dev, uint64_t now)
{
	uint64_t finished;

	for (unsigned int g = 0; g < dev->eng.num_groups; g++) {
		struct npu_launch *l = &dev->eng.launch[g];

		if (l->active && !l->discarded)
			count_launch(dev, l, npu_cores_idle(&dev->groups[g], &finished) ?
					     finished : now);
	}
	if (dev->hang_context || dev->eng.hang_seen)
		count_hung(dev, now);
}

/*
 * A task moving data on the scheduler (an inline copy, a gather or a
 * scatter) counts as it goes: a copy of GiBs would otherwise show as
 * exec_ms standing still, then jumping. Every TASK_TICK_BYTES moved (a
 * few ms at memory speed) it is brought up to date, and so is what runs
 * meanwhile on the cores.
 */
#define TASK_TICK_BYTES		(4u << 20)

static void task_begin(struct npu_dev *dev, uint64_t qid)
{
	dev->eng.task_qid = (uint32_t)qid;
	dev->eng.task_counted_ns = npu_dev_clock_ns();
	dev->eng.task_bytes = 0;
}

void npu_engine_task_moved(struct npu_dev *dev, uint64_t bytes)
{
	struct npu_engine *e = &dev->eng;
	uint64_t now;

	e->task_bytes += bytes;
	if (!e->task_counted_ns || e->task_bytes < TASK_TICK_BYTES)
		return;
	now = npu_dev_clock_ns();
	npu_engine_count_exec(dev, e->task_qid, now - e->task_counted_ns);
	e->task_counted_ns = now;
	e->task_bytes = 0;
	count_others(dev, now);
}

static void task_end(struct npu_dev *dev)
{
	struct npu_engine *e = &dev->eng;

	if (!e->task_counted_ns)
		return;
	npu_engine_count_exec(dev, e->task_qid, npu_dev_clock_ns() - e->task_counted_ns);
	e->task_counted_ns = 0;
}

/*
 * The launch's queue stopped (or restarted): count its time so far, tell
 * its cores to stop, and make sure its result is dropped, never written.
 */
static void discard_launch(struct npu_dev *dev, unsigned int g)
{
	count_launch(dev, &dev->eng.launch[g], npu_dev_clock_ns());
	dev->eng.launch[g].discarded = true;
	npu_cores_cancel(&dev->groups[g]);
}

/* Whatever runs for `qid` on a unit is dropped, now or at its next chunk. */
static void cancel_queue(struct npu_dev *dev, uint64_t qid)
{
	if (!dev->eng.q[qid].busy)
		return;
	for (unsigned int g = 0; g < dev->eng.num_groups; g++) {
		struct npu_launch *l = &dev->eng.launch[g];

		if (l->active && !l->discarded && l->qid == qid)
			discard_launch(dev, g);
	}
	npu_engine_dma_cancel(dev, (uint32_t)qid);
}

int32_t npu_engine_queue_start(struct npu_dev *dev, uint64_t qid, uint64_t prof_ring,
			       uint64_t prof_arg)
{
	struct npu_prof_queue prof;
	struct npu_fw_queue *q;
	uint32_t n;

	if (qid >= dev->cfg.num_queues)
		return -NPU_FW_EINVAL;
	q = npu_engine_slot(dev, qid);
	n = q->ring_entries;
	if (!n || (n & (n - 1)) || n > NPU_FW_RING_MAX || !q->context ||
	    q->priority >= NPU_FW_PRIORITIES ||
	    q->tail != 0 || !in_hbm(dev, q->ring_offset, (uint64_t)n * sizeof(struct npu_fw_task)) ||
	    !in_hbm(dev, q->pt_root, NPU_PT_SIZE) ||
	    npu_prof_queue_start(dev, &prof, prof_ring, prof_arg))
		return -NPU_FW_EINVAL;
	/*
	 * A host that restarts a running queue gets its task in flight
	 * dropped too; the queue waits for the unit to let go of it.
	 */
	cancel_queue(dev, qid);
	/* Stopped while its launch stops writing: nothing of it runs again. */
	STORE_REL(&q->state, NPU_QUEUE_STOPPED);
	npu_engine_wait_writes(dev, qid);
	q->head = 0;
	q->done_seq = 0;
	q->error = 0;
	q->error_access = 0;
	q->error_address = 0;
	dev->eng.q[qid].exec_ns = 0;
	dev->eng.q[qid].hung_since_ns = 0;
	q->exec_ms = 0;
	dev->eng.q[qid].prof = prof;
	npu_list_reset(dev, qid);
	npu_mmu_invalidate(dev, q->context);
	STORE_REL(&q->state, NPU_QUEUE_RUNNING);
	return NPU_FW_OK;
}

/*
 * Answered at once, whatever the queue runs: a launch still computing is
 * cancelled and its output never scattered (one writing it in place is
 * waited for to stop, at its ops' next check), a copy stops at its next
 * chunk (the mailbox waits for the one moving), and the scheduler looks
 * at the state (under this same lock) before every task and every scatter.
 */
int32_t npu_engine_queue_stop(struct npu_dev *dev, uint64_t qid)
{
	if (qid >= dev->cfg.num_queues)
		return -NPU_FW_EINVAL;
	cancel_queue(dev, qid);
	STORE_REL(&npu_engine_slot(dev, qid)->state, NPU_QUEUE_STOPPED);
	npu_engine_wait_writes(dev, qid);
	return NPU_FW_OK;
}

void npu_engine_abandon(struct npu_dev *dev)
{
	for (unsigned int g = 0; g < dev->eng.num_groups; g++)
		if (dev->eng.launch[g].active && !dev->eng.launch[g].discarded)
			discard_launch(dev, g);
}

void npu_engine_reset(struct npu_dev *dev)
{
	npu_engine_abandon(dev);
	for (uint64_t qid = 0; qid < NPU_FW_MAX_QUEUES; qid++) {
		npu_engine_dma_cancel(dev, (uint32_t)qid);
		npu_list_reset(dev, qid);
		memset(&dev->eng.q[qid].prof, 0, sizeof(dev->eng.q[qid].prof));
		dev->eng.q[qid].exec_ns = 0;
		dev->eng.q[qid].hung_since_ns = 0;
	}
	dev->eng.hang_seen = false;
}

void npu_engine_init(struct npu_dev *dev)
{
	struct npu_engine *eng = &dev->eng;

	eng->num_dma = dev->cfg.num_dma;
	eng->num_groups = dev->cfg.num_core_groups;
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&eng->cores_idle, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&eng->dma_idle, NULL);
	for (unsigned int i = 0; i < NPU_DEV_DMA_MAX; i++)
		pthread_cond_init(&eng->dma[i].go, NULL);
}

void npu_engine_fini(struct npu_dev *dev)
{
	pthread_cond_destroy(&dev->eng.dma_idle);
	pthread_cond_destroy(&dev->eng.cores_idle);
	for (unsigned int i = 0; i < NPU_DEV_DMA_MAX; i++)
		pthread_cond_destroy(&dev->eng.dma[i].go);
}

int npu_engine_xlate(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
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

/* Move bytes between device VA and a host buffer, page by page. */
static int dma_host(struct npu_dev *dev, struct npu_fw_queue *q, uint64_t va,
		    void *buf, uint64_t size, enum npu_access access, struct fault *f)
{
	uint8_t *h = buf;

	while (size) {
		uint8_t *d;
		uint64_t avail, n;

		if (npu_engine_xlate(dev, q, va, access, &d, &avail, f))
			return -1;
		n = size < avail ? size : avail;
		if (access == NPU_ACCESS_WRITE)
			memcpy(d, h, n);
		else
			memcpy(h, d, n);
		npu_engine_task_moved(dev, n);
		va += n;
		h += n;
		size -= n;
	}
	return 0;
}

/* Free the views' private buffers; bit i of `borrowed`: v[i] is device memory. */
static void free_views(struct npu_view *v, unsigned int borrowed)
{
	for (unsigned int i = 0; i < 5; i++) {
		if (!(borrowed & (1u << i)))
			free(v[i].data);
		v[i].data = NULL;
	}
}

/*
 * Write a launch's output (v[3], of the op as run) back to device memory
 * as `a` has it: narrowed first if it was widened, in place, or into
 * v[4] when it has gaps.
 */
static int scatter(struct npu_dev *dev, struct npu_fw_queue *q,
		   const struct npu_op *a, struct npu_view *v, struct fault *f)
{
	uint64_t extent = npu_tensor_extent(&a->out);
	void *data = v[3].data;

	if (v[3].dtype != a->out.dtype && v[4].data) {
		npu_narrow_view(&v[4], data);
		data = v[4].data;
	} else if (v[3].dtype != a->out.dtype) {
		npu_narrow(data, data, extent / npu_dtype_size(a->out.dtype), a->out.dtype);
	}
	return dma_host(dev, q, a->out.va, data, extent, NPU_ACCESS_WRITE, f);
}

/*
 * Where launch output ts[3] can be written in place (see npu_inplace.c):
 * one run of writable host memory that no input read in place (bit i of
 * `borrowed`, at v[i].data) overlaps. A fault here is left for the
 * scatter to report, as for an output computed privately.
 */
static bool out_in_place(struct npu_dev *dev, struct npu_fw_queue *q,
			 const struct npu_tensor *const *ts, const struct npu_view *v,
			 unsigned int borrowed, uint8_t **p)
{
	uint64_t extent = npu_tensor_extent(ts[3]);
	struct fault ignored;

	if (npu_engine_borrow(dev, q, ts[3]->va, extent, npu_dtype_size(ts[3]->dtype),
			      NPU_ACCESS_WRITE, p, &ignored))
		return false;
	for (unsigned int i = 0; i < 3; i++) {
		const uint8_t *in = v[i].data;

		if (borrowed & (1u << i) && in < *p + extent && *p < in + npu_tensor_extent(ts[i]))
			return false;
	}
	return true;
}

/* A core group with no launch, or -1. */
static int free_group(struct npu_dev *dev)
{
	for (unsigned int g = 0; g < dev->eng.num_groups; g++)
		if (!dev->eng.launch[g].active)
			return (int)g;
	return -1;
}

/*
 * A kernel launch: read and check the argument block, run the op on a
 * core group and scatter the output back. An output that lies in one run
 * of host memory, dense, that the op does not read and no input read in
 * place overlaps is written in place (npu_inplace.c says what makes that
 * safe); any other is computed into a private buffer (gathered first
 * when the op reads it, or when it has gaps between its elements, so the
 * gaps are written back unchanged) and scattered at the end.
 *
 * Inputs are read in place where they lie in one run of host memory,
 * else gathered into private buffers (keeping their strides). Reading in
 * place saves a copy of every weight per launch; it is safe because a
 * TLB_INVALIDATE waits for the launches reading through translations
 * from before it (npu_engine_settle), so no launch reads a page the host
 * unmapped and gave to someone else, or guest RAM gone with its guest.
 * A launch settle cancelled runs again from its start on copies settle
 * took of those inputs (complete_launch), so a host invalidating over
 * and over cannot keep it from finishing. An op that reads its output
 * reads no input in place: its output buffer, once computed into, could
 * not start over.
 *
 * With the cores' workers started the compute is handed to a free group
 * and the task stays at head (returns 1) until npu_engine_poll() sees it
 * done; without, it runs here and now (returns 0). -1: the task failed.
 * A small launch runs here and now too (INLINE_COST): handing it to the
 * workers and back costs two thread wake-ups, more than its compute. Its
 * cost is weighted by the path it takes (the element-at-a-time one of
 * dtypes past fp32 is some 16 times slower than the fp32 loops), so one
 * holds the scheduler, and the mailbox, for some tens of microseconds.
 */
#define INLINE_COST		(1ull << 15)

static bool run_inline(const struct npu_op *a)
{
	return npu_op_cost(a) <= INLINE_COST;
}

static int run_kernel(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		      const struct npu_fw_task *t, struct fault *f)
{
	struct npu_op_args blk;
	struct npu_op a, run;
	struct npu_view v[5] = { 0 };	/* struct npu_launch's */
	const struct npu_tensor *ts[4], *rs[4];
	unsigned int n_in, i, borrowed = 0;
	int ret = -1, g = free_group(dev);
	bool in_place;

	size_t len = t->args[2] < sizeof(blk) ? (size_t)t->args[2] : sizeof(blk);

	/*
	 * args[2] is the block's size: never read past it. A block shorter
	 * than the first version's is malformed; fields a shorter block
	 * leaves out read as zero (the ops that need them refuse that);
	 * bytes past the struct this op library knows are a newer caller's,
	 * ignored.
	 */
	if (t->args[2] < NPU_OP_ARGS_V1_SIZE) {
		f->code = NPU_FW_EKERNEL;
		f->access = NPU_ACCESS_READ;
		f->address = t->args[0];
		return -1;
	}
	memset(&blk, 0, sizeof(blk));
	if (dma_host(dev, q, t->args[0], &blk, len, NPU_ACCESS_READ, f) ||
	    npu_list_patch_block(dev, qid, q, &blk, len, t->args[2], f))
		return -1;
	npu_op_decode(&blk, &a);
	if (t->args[1] > NPU_DEV_CORES_MAX || npu_op_check(&a)) {
		f->code = NPU_FW_EKERNEL;
		f->access = NPU_ACCESS_READ;
		f->address = t->args[0];
		return -1;
	}
	n_in = npu_op_inputs(&a);
	in_place = !npu_op_reads_output(&a);
	npu_op_widened(&a, &run);
	ts[0] = &a.in[0], rs[0] = &run.in[0];
	ts[1] = &a.in[1], rs[1] = &run.in[1];
	ts[2] = &a.epi.bias, rs[2] = &run.epi.bias;
	ts[3] = &a.out, rs[3] = &run.out;
	for (i = 0; i < 4; i++) {
		const struct npu_tensor *tt = ts[i];
		uint64_t extent, elems = 1, n;
		bool gather, gaps, widen = tt->dtype != rs[i]->dtype;
		uint8_t *p;

		if ((i < 2 && i >= n_in) || (i == 2 && !(a.epi.flags & NPU_OP_E_BIAS)))
			continue;
		extent = npu_tensor_extent(tt);
		n = extent / npu_dtype_size(tt->dtype);
		for (uint32_t k = 0; k < tt->ndim; k++)
			elems *= tt->shape[k];
		gaps = extent != elems * npu_dtype_size(tt->dtype);
		gather = i < 3 || npu_op_reads_output(&a) || gaps;
		v[i].dtype = rs[i]->dtype;
		v[i].ndim = tt->ndim;
		memcpy(v[i].shape, tt->shape, sizeof(v[i].shape));
		memcpy(v[i].stride, tt->stride, sizeof(v[i].stride));
		if (i < 3 && in_place) {
			int r = npu_engine_borrow(dev, q, tt->va, extent, npu_dtype_size(tt->dtype),
						  NPU_ACCESS_READ, &p, f);

			if (r < 0)
				goto out;
			if (!r && !widen) {
				v[i].data = p;
				borrowed |= 1u << i;
				continue;
			}
			if (!r) {	/* widened straight out of device memory */
				v[i].data = malloc(n * sizeof(float));
				if (!v[i].data)
					goto nomem;
				npu_widen(v[i].data, p, n, tt->dtype);
				continue;
			}
		}
		if (i == 3 && in_place && !widen && !gaps && out_in_place(dev, q, ts, v, borrowed, &p)) {
			v[3].data = p;
			borrowed |= NPU_BORROWED_OUT;
			continue;
		}
		v[i].data = malloc(widen ? n * sizeof(float) : extent);
		if (!v[i].data)
			goto nomem;
		if (gather && dma_host(dev, q, tt->va, v[i].data, extent, NPU_ACCESS_READ, f))
			goto out;
		if (gather && widen)
			npu_widen(v[i].data, v[i].data, n, tt->dtype);
		if (i == 3 && widen && gaps) {
			/* what lies between the elements, to go back unchanged */
			v[4] = v[3];
			v[4].dtype = tt->dtype;
			v[4].data = malloc(extent);
			if (!v[4].data ||
			    dma_host(dev, q, tt->va, v[4].data, extent, NPU_ACCESS_READ, f))
				goto nomem_or_fault;
		}
	}
	if (dev->groups[g].n && !run_inline(&run)) {
		struct npu_launch *l = &dev->eng.launch[g];

		l->active = true;
		l->discarded = false;
		l->rerun = false;
		l->lost = false;
		l->borrowed = (uint8_t)borrowed;
		l->parts = (unsigned int)t->args[1];
		l->qid = (uint32_t)qid;
		l->ctx = q->context;
		l->epoch = dev->eng.epoch;
		l->cursor = npu_engine_cursor(dev, qid, q);
		l->counted_ns = npu_dev_clock_ns();
		npu_prof_unit(&dev->eng.q[qid].prof, (uint8_t)(NPU_FW_UNIT_CORES | g));
		l->args = a;
		l->run = run;
		memcpy(l->v, v, sizeof(v));
		dev->eng.q[qid].busy = true;
		npu_cores_launch(&dev->groups[g], &l->run, l->v, &l->v[3],
				 (unsigned int)t->args[1]);
		return 1;
	}
	npu_op_run(&run, v, &v[3], 0, npu_op_units(&run));
	ret = borrowed & NPU_BORROWED_OUT ? 0 : scatter(dev, q, &a, v, f);
	goto out;
nomem_or_fault:
	if (v[4].data)		/* dma_host() filled in the fault */
		goto out;
nomem:
	f->code = NPU_FW_EKERNEL;
	f->address = ts[i]->va;
out:
	free_views(v, borrowed);
	return ret;
}

void npu_engine_queue_fault(struct npu_dev *dev, uint64_t qid, const struct fault *f)
{
	struct npu_fw_queue *q = npu_engine_slot(dev, qid);

	q->error = f->code;
	q->error_access = f->access;
	q->error_address = f->address;
	STORE_REL(&q->state, NPU_QUEUE_FAULTED);
	npu_dev_log_error(dev, f->code, q->context, f->address,
			  (qid << 8) | f->access);
	npu_dev_raise_queue_irq(dev);
}

/*
 * A FENCE's second word (NPU_FW_CAP_FENCE_WRITE): the host's copy of
 * done_seq, in host-managed HBM, which a host thread polls instead of
 * waiting for the interrupt. Physical, as the queue's own slot is: the
 * host gave it, not the context. 0 if written (or none), -1 if bad.
 */
static int fence_write(struct npu_dev *dev, const struct npu_fw_task *t)
{
	uint64_t at = t->args[1];

	if (!at)
		return 0;
	if (at & 7 || at < NPU_FW_RESERVED_SIZE || at > dev->cfg.hbm_size - sizeof(uint64_t))
		return -1;
	STORE_REL((uint64_t *)(dev->hbm + at), t->args[0]);
	return 0;
}

static bool is_dma(const struct npu_fw_task *t)
{
	return t->type == NPU_FW_TASK_COPY || t->type == NPU_FW_TASK_FILL;
}

/*
 * Run the task `t` at head of queue `qid` here, or hand it to a unit.
 * Returns whether the queue can go on with its next task in this step.
 */
static bool run_one(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		    const struct npu_fw_task *t)
{
	struct fault f = { .code = NPU_FW_EINVAL };
	bool timed;
	int bad = 0;

	npu_prof_begin(dev, &dev->eng.q[qid].prof, t, NPU_FW_UNIT_SCHEDULER);
	if (t->type == NPU_FW_TASK_FILL && (t->args[0] | t->args[1]) & 3) {
		npu_engine_queue_fault(dev, qid, &f);
		return false;
	}
	if (is_dma(t) && dev->eng.dma_running) {
		npu_engine_dma_submit(dev, (uint32_t)qid, npu_engine_cursor(dev, qid, q), t);
		return false;
	}
	/*
	 * Tasks that move data take measurable time: it counts in exec_ms.
	 * The others take nanoseconds, not worth two clock reads.
	 */
	timed = is_dma(t) || t->type == NPU_FW_TASK_KERNEL || t->type == NPU_FW_TASK_TIMESTAMP;
	if (timed)
		task_begin(dev, qid);
	switch (t->type) {
	case NPU_FW_TASK_NOP:
		break;
	case NPU_FW_TASK_COPY:
	case NPU_FW_TASK_FILL:
		bad = npu_engine_dma_inline(dev, q, t, &f);
		break;
	case NPU_FW_TASK_FENCE:
		bad = fence_write(dev, t);
		if (!bad)
			STORE_REL(&q->done_seq, t->args[0]);
		break;
	case NPU_FW_TASK_KERNEL:
		bad = run_kernel(dev, qid, q, t, &f);
		break;
	case NPU_FW_TASK_TIMESTAMP: {
		uint64_t now = npu_dev_clock_ns();

		bad = t->args[0] & 7 ? -1 :
		      dma_host(dev, q, t->args[0], &now, sizeof(now), NPU_ACCESS_WRITE, &f);
		break;
	}
	case NPU_FW_TASK_BARRIER:
		/* A queue runs one task at a time: everything before is done. */
		break;
	case NPU_FW_TASK_EVENT_RECORD:
	case NPU_FW_TASK_EVENT_WAIT:
	case NPU_FW_TASK_EVENT_RESET:
	case NPU_FW_TASK_NOTIFY_RECORD:
	case NPU_FW_TASK_NOTIFY_WAIT: {
		struct npu_fw_sync *s = sync_entry(dev, t->args[0]);

		if (!s) {
			bad = -1;
			break;
		}
		/* Waits only run once runnable() saw them satisfied. */
		if (t->type == NPU_FW_TASK_EVENT_RECORD) {
			s->timestamp_ns = npu_dev_clock_ns();
			STORE_REL(&s->value, 1);
			npu_dev_raise_queue_irq(dev);	/* host waiters */
		} else if (t->type == NPU_FW_TASK_EVENT_RESET) {
			STORE_REL(&s->value, 0);
		} else if (t->type == NPU_FW_TASK_NOTIFY_RECORD) {
			__atomic_fetch_add(&s->value, 1, __ATOMIC_ACQ_REL);
		} else if (t->type == NPU_FW_TASK_NOTIFY_WAIT) {
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
		return false;
	if (bad) {
		npu_engine_queue_fault(dev, qid, &f);
		return false;
	}
	npu_engine_advance(dev, qid, q);
	if (t->type == NPU_FW_TASK_FENCE)
		npu_dev_raise_queue_irq(dev);
	return !timed;
}

/* The head task of `qid` can start now; *t is a copy of it. */
static bool runnable(struct npu_dev *dev, uint64_t qid, struct npu_fw_queue *q,
		     struct npu_fw_task *t)
{
	struct npu_fw_sync *s;

	/*
	 * An injected hang: the context's queues never move (and count
	 * exec time, in npu_engine_poll(), as a task that runs forever).
	 */
	if (dev->hang_context && q->context == dev->hang_context)
		return false;
	if (LOAD_ACQ(&q->state) != NPU_QUEUE_RUNNING || q->head == LOAD_ACQ(&q->tail))
		return false;
	/* Its task on a unit: the next one waits for it. */
	if (dev->eng.q[qid].busy)
		return false;
	memcpy(t, head_task(dev, q), sizeof(*t));
	if (!npu_list_current(dev, qid, q, t))
		return false;
	/* A task that needs a unit waits for a free one. */
	if (t->type == NPU_FW_TASK_KERNEL)
		return free_group(dev) >= 0;
	if (is_dma(t))
		return !dev->eng.dma_running || npu_engine_dma_free(dev);
	/* A queue waiting on an event or notify is blocked until it allows. */
	if (t->type != NPU_FW_TASK_EVENT_WAIT && t->type != NPU_FW_TASK_NOTIFY_WAIT)
		return true;
	s = sync_entry(dev, t->args[0]);
	if (!s || LOAD_ACQ(&s->value) != 0)	/* a bad id runs, and faults */
		return true;
	/* A profile shows the wait from when it held the queue up. */
	npu_prof_begin(dev, &dev->eng.q[qid].prof, t, NPU_FW_UNIT_SCHEDULER);
	return false;
}

/*
 * Strict priority between levels, so a busy low queue never takes a unit
 * a high one is ready for; round-robin within the top level, one dispatch
 * per queue per step (sync tasks in bursts of up to SYNC_BURST). A step
 * starts after the queue that last took a unit, so queues that all want
 * the same units take them in turn.
 */
bool npu_engine_step(struct npu_dev *dev)
{
	uint32_t n = dev->cfg.num_queues, first = dev->eng.next % n;
	struct npu_fw_task t;
	int top = -1;
	bool ran = false;

	for (uint64_t qid = 0; qid < n; qid++) {
		struct npu_fw_queue *q = npu_engine_slot(dev, qid);

		if ((int)q->priority > top && runnable(dev, qid, q, &t))
			top = (int)q->priority;
	}
	if (top < 0)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t qid = (first + i) % n;
		struct npu_fw_queue *q = npu_engine_slot(dev, qid);

		if ((int)q->priority != top)
			continue;
		for (int k = 0; k < SYNC_BURST && runnable(dev, qid, q, &t); k++) {
			ran = true;
			if (run_one(dev, qid, q, &t))
				continue;
			/* It took a unit: the next contest starts after it. */
			if (dev->eng.q[qid].busy)
				dev->eng.next = (uint32_t)qid + 1;
			break;
		}
	}
	return ran;
}

/*
 * Group `g`'s cores are through: unless its queue stopped meanwhile,
 * scatter the output (through fresh translations: a TLB_INVALIDATE
 * answered during the compute holds) and move the queue past the task;
 * or, for a launch settle cancelled, start it over on the same group.
 */
static void complete_launch(struct npu_dev *dev, unsigned int g, uint64_t finished_ns)
{
	struct npu_launch *l = &dev->eng.launch[g];
	struct npu_fw_queue *q = npu_engine_slot(dev, l->qid);
	struct fault f = { .code = NPU_FW_EKERNEL, .access = NPU_ACCESS_READ };
	bool current;
	int bad;

	count_launch(dev, l, finished_ns);
	/* Stopping or restarting the queue discards; the cursor is for a
	 * host that rewrote the slot under a running queue. */
	current = !l->discarded && LOAD_ACQ(&q->state) == NPU_QUEUE_RUNNING &&
		  npu_engine_cursor(dev, l->qid, q) == l->cursor;
	if (current && l->rerun && l->borrowed)
		npu_engine_own_inputs(l);
	if (current && l->rerun && !l->lost) {
		l->rerun = false;
		npu_cores_launch(&dev->groups[g], &l->run, l->v, &l->v[3], l->parts);
		return;
	}
	if (current && l->lost) {	/* no memory for the inputs' copies */
		f.address = l->args.in[0].va;
		npu_engine_queue_fault(dev, l->qid, &f);
	} else if (current) {
		f.code = NPU_FW_EFAULT;
		task_begin(dev, l->qid);
		bad = l->borrowed & NPU_BORROWED_OUT ? 0 : scatter(dev, q, &l->args, l->v, &f);
		task_end(dev);
		if (bad)
			npu_engine_queue_fault(dev, l->qid, &f);
		else
			npu_engine_advance(dev, l->qid, q);
	}
	free_views(l->v, l->borrowed);
	l->active = false;
	dev->eng.q[l->qid].busy = false;
}

bool npu_engine_poll(struct npu_dev *dev)
{
	bool any = dev->hang_context || dev->eng.hang_seen, completed = false;
	uint64_t finished;

	for (unsigned int g = 0; g < dev->eng.num_groups && !any; g++)
		any = dev->eng.launch[g].active;
	if (!any)
		return false;
	count_others(dev, npu_dev_clock_ns());
	for (unsigned int g = 0; g < dev->eng.num_groups; g++) {
		if (dev->eng.launch[g].active && npu_cores_idle(&dev->groups[g], &finished)) {
			complete_launch(dev, g, finished);
			completed = true;
		}
	}
	return completed;
}

/* Well inside the 20 ms the interface promises between exec_ms updates. */
#define EXEC_TICK_MS	10

int npu_engine_sleep_ms(struct npu_dev *dev)
{
	for (unsigned int g = 0; g < dev->eng.num_groups; g++)
		if (dev->eng.launch[g].active)
			return EXEC_TICK_MS;
	return dev->eng.hang_seen ? EXEC_TICK_MS : -1;
}
