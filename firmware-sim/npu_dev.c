// SPDX-License-Identifier: MIT
/*
 * Device core: control block, mailbox and error log.
 *
 * Shared-memory rules: the host (another process, or a guest) reads and
 * writes the control block concurrently. Every field that carries a
 * hand-off (seq, done_seq, errlog.head, state) is stored with release and
 * loaded with acquire semantics so the payload written before it is
 * visible once it is.
 */
#include "npu_dev.h"
#include "npu_engine.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(struct npu_fw_ctrl) <= NPU_FW_RESERVED_SIZE,
	       "control block must fit the reserved area");
_Static_assert(offsetof(struct npu_fw_ctrl, mbox) % 8 == 0,
	       "mailbox must be 8-byte aligned");
_Static_assert(sizeof(struct npu_fw_ctrl) <= NPU_FW_QUEUE_TABLE,
	       "control block must end before the queue table");
_Static_assert(NPU_FW_QUEUE_TABLE + NPU_FW_MAX_QUEUES * sizeof(struct npu_fw_queue) <=
	       NPU_FW_RESERVED_SIZE, "queue table must fit the reserved area");
_Static_assert(sizeof(struct npu_fw_queue) == 72 && sizeof(struct npu_fw_task) == 64,
	       "queue slots are 72 bytes (interface 2.0), tasks 64");
_Static_assert(offsetof(struct npu_fw_queue, exec_ms) == 64,
	       "exec_ms follows the 1.0 slot, nothing before it moved");
_Static_assert(NPU_FW_QUEUE_TABLE + NPU_FW_MAX_QUEUES * sizeof(struct npu_fw_queue) <=
	       NPU_FW_SYNC_TABLE, "the queue table must end before the sync table");
_Static_assert(NPU_FW_SYNC_TABLE + NPU_FW_MAX_SYNCS * sizeof(struct npu_fw_sync) <=
	       NPU_FW_RESERVED_SIZE, "the sync table must fit the reserved area");

#define LOAD_ACQ(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v)		__atomic_store_n((p), (v), __ATOMIC_RELEASE)

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

void npu_dev_config_default(struct npu_dev_config *cfg)
{
	cfg->hbm_size = 256ull << 20;
	cfg->num_queues = 16;
	cfg->num_cores = 4;
	cfg->num_core_groups = 2;
	cfg->num_dma = 2;
	cfg->heartbeat_ms = 100;
}

const char *npu_dev_config_check(const struct npu_dev_config *cfg)
{
	/* A PCI BAR is a power of two, and HBM is exactly BAR2. */
	if (!is_pow2(cfg->hbm_size))
		return "HBM size must be a power of two";
	if (cfg->hbm_size < NPU_DEV_HBM_MIN || cfg->hbm_size > NPU_DEV_HBM_MAX)
		return "HBM size must be between 4 MiB and 16 GiB";
	if (cfg->num_queues < 1 || cfg->num_queues > NPU_DEV_QUEUES_MAX)
		return "queue count must be between 1 and 256";
	if (cfg->num_cores < 1 || cfg->num_cores > NPU_DEV_CORES_MAX)
		return "core count must be between 1 and 64";
	if (cfg->num_core_groups < 1 || cfg->num_core_groups > NPU_DEV_GROUPS_MAX ||
	    cfg->num_core_groups > cfg->num_cores)
		return "core group count must be between 1 and 16, and at most the core count";
	if (cfg->num_dma < 1 || cfg->num_dma > NPU_DEV_DMA_MAX)
		return "copy engine count must be between 1 and 16";
	if (cfg->heartbeat_ms < 1 || cfg->heartbeat_ms > 10000)
		return "heartbeat period must be between 1 and 10000 ms";
	return NULL;
}

uint64_t npu_dev_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Under dev->lock. */
static void clear_injections(struct npu_dev *dev)
{
	dev->hang_context = 0;
	dev->fail_invalidates = 0;
	dev->hold_invalidates = false;
	pthread_cond_broadcast(&dev->tlb_wake);
	__atomic_store_n(&dev->drop_irqs, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&dev->heartbeat_stopped, false, __ATOMIC_RELAXED);
}

void npu_dev_raise_irq(struct npu_dev *dev, unsigned int vector)
{
	uint32_t n = __atomic_load_n(&dev->drop_irqs, __ATOMIC_RELAXED);

	/* Lose this one if an injected fault says so (engine and mailbox
	 * both raise interrupts, so the count is taken atomically). */
	while (n && !__atomic_compare_exchange_n(&dev->drop_irqs, &n, n - 1, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (n)
		return;
	if (dev->ops && dev->ops->raise_irq)
		dev->ops->raise_irq(dev->opaque, vector);
}

/* A queue interrupt, unless one is pending with the host (see npu_fw_if.h). */
void npu_dev_raise_queue_irq(struct npu_dev *dev)
{
	struct npu_fw_ctrl *c = dev->ctrl;

	if (__atomic_load_n(&c->irq_suppress, __ATOMIC_ACQUIRE) &&
	    __atomic_exchange_n(&c->queue_irq_pending, 1, __ATOMIC_SEQ_CST))
		return;
	npu_dev_raise_irq(dev, NPU_VEC_QUEUE);
}

static int32_t inject(struct npu_dev *dev, uint64_t kind, uint64_t arg)
{
	if (!dev->cfg.fault_injection)
		return -NPU_FW_EBADCMD;
	switch (kind) {
	case NPU_FW_INJECT_NONE:
		clear_injections(dev);
		/* A hung queue may have work: the engine looks again. */
		pthread_cond_signal(&dev->work);
		return NPU_FW_OK;
	case NPU_FW_INJECT_HANG_CONTEXT:
		dev->hang_context = (uint32_t)arg;
		/* Its queues start counting exec time, even asleep. */
		pthread_cond_signal(&dev->work);
		return NPU_FW_OK;
	case NPU_FW_INJECT_STOP_HEARTBEAT:
		__atomic_store_n(&dev->heartbeat_stopped, true, __ATOMIC_RELAXED);
		return NPU_FW_OK;
	case NPU_FW_INJECT_DROP_IRQS:
		__atomic_store_n(&dev->drop_irqs, (uint32_t)arg, __ATOMIC_RELAXED);
		return NPU_FW_OK;
	case NPU_FW_INJECT_FAIL_INVALIDATE:
		dev->fail_invalidates = (uint32_t)arg;
		return NPU_FW_OK;
	case NPU_FW_INJECT_HOLD_INVALIDATE:
		if (arg)
			return -NPU_FW_EINVAL;
		dev->hold_invalidates = true;
		return NPU_FW_OK;
	default:
		return -NPU_FW_EINVAL;
	}
}

/*
 * NPU_FW_CMD_RESET: under dev->lock. Every queue stops as by QUEUE_STOP,
 * so a launch computing is cancelled and its output dropped.
 */
static int32_t recover(struct npu_dev *dev)
{
	for (uint64_t qid = 0; qid < dev->cfg.num_queues; qid++)
		npu_engine_queue_stop(dev, qid);
	npu_mmu_invalidate(dev, 0);
	npu_engine_settle(dev, 0);
	clear_injections(dev);
	return NPU_FW_OK;
}

void npu_dev_reset(struct npu_dev *dev)
{
	struct npu_fw_ctrl *c = dev->ctrl;

	pthread_mutex_lock(&dev->lock);
	/* Hide the device while the block is rewritten. */
	STORE_REL(&c->state, NPU_FW_STATE_BOOTING);
	memset((uint8_t *)c + sizeof(c->magic), 0,
	       NPU_FW_RESERVED_SIZE - sizeof(c->magic));

	c->if_version = NPU_FW_IF_VERSION(NPU_FW_IF_MAJOR, NPU_FW_IF_MINOR);
	c->caps = (dev->cfg.fault_injection ? NPU_FW_CAP_FAULT_INJECTION : 0) |
		  NPU_FW_CAP_NOTIFY_SUPPRESS | NPU_FW_CAP_TASK_LISTS | NPU_FW_CAP_TLB_POST |
		  NPU_FW_CAP_FENCE_WRITE | NPU_FW_CAP_PROFILE;
	c->fw_version = NPU_DEV_FW_VERSION;
	c->fw_peer_id = 0;
	c->hbm_offset = 0;
	c->hbm_size = dev->cfg.hbm_size;
	c->fw_reserved = NPU_FW_RESERVED_SIZE;
	c->num_vectors = NPU_FW_NUM_VECTORS;
	c->num_queues = dev->cfg.num_queues;
	c->num_cores = dev->cfg.num_cores;
	c->num_core_groups = dev->cfg.num_core_groups;
	c->num_dma_engines = dev->cfg.num_dma;
	c->heartbeat_period_ms = dev->cfg.heartbeat_ms;
	dev->mbox_seen = 0;
	dev->tlb_gen++;			/* a request in flight is not reported */
	/* Nothing of the last host's work may land in the new one's memory. */
	npu_engine_reset(dev);
	npu_mmu_invalidate(dev, 0);
	npu_engine_settle(dev, 0);
	clear_injections(dev);
	npu_engine_dma_quiesce(dev);

	STORE_REL(&c->magic, NPU_FW_MAGIC);
	STORE_REL(&c->state, NPU_FW_STATE_READY);
	pthread_mutex_unlock(&dev->lock);
}

/* Scheduler steps the last worker through a launch takes, at most. */
#define WORKER_STEPS	64

/*
 * The cores finished a launch. The last worker through completes it and
 * dispatches what its queue has next, as the engine thread would: waking
 * that thread for it, and being woken for the next launch, cost two
 * context switches per launch, a model's launches back to back. Small
 * launches run inline, in the step, so a model's run of them (a
 * MobileNet's activations and scales between its convolutions) goes on
 * here too, up to WORKER_STEPS: four took a third of such a model's
 * device time in context switches. A worker with more to do than that,
 * or with a mailbox command waiting for the lock, hands the rest to the
 * engine thread.
 */
static void launch_done(void *opaque)
{
	struct npu_dev *dev = opaque;
	unsigned int n = 0;

	pthread_mutex_lock(&dev->lock);
	npu_engine_cores_idle(dev);
	if (dev->engine_stop || !npu_engine_poll(dev))
		n = WORKER_STEPS;
	for (; n < WORKER_STEPS; n++) {
		if (__atomic_load_n(&dev->mbox_waiting, __ATOMIC_ACQUIRE))
			n = WORKER_STEPS - 1;
		else if (!npu_engine_step(dev))
			break;
	}
	/* Under the lock, so an engine about to sleep cannot miss it. */
	if (n == WORKER_STEPS)
		pthread_cond_signal(&dev->work);
	pthread_mutex_unlock(&dev->lock);
}

void npu_dev_init(struct npu_dev *dev, void *hbm,
		  const struct npu_dev_config *cfg,
		  const struct npu_dev_ops *ops, void *opaque)
{
	pthread_condattr_t attr;

	memset(dev, 0, sizeof(*dev));
	dev->hbm = hbm;
	dev->ctrl = hbm;
	dev->cfg = *cfg;
	dev->ops = ops;
	dev->opaque = opaque;
	pthread_mutex_init(&dev->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&dev->work, &attr);
	pthread_condattr_destroy(&attr);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&dev->tlb_wake, &attr);
	pthread_condattr_destroy(&attr);
	for (unsigned int g = 0; g < NPU_DEV_GROUPS_MAX; g++) {
		npu_cores_init(&dev->groups[g]);
		dev->groups[g].on_done = launch_done;
		dev->groups[g].opaque = dev;
	}
	npu_engine_init(dev);
	npu_dev_reset(dev);
}

void npu_dev_fini(struct npu_dev *dev)
{
	npu_dev_stop_engine(dev);
	npu_engine_fini(dev);
	pthread_cond_destroy(&dev->tlb_wake);
	pthread_cond_destroy(&dev->work);
	pthread_mutex_destroy(&dev->lock);
}

/* Wait for work, at most `ms` (-1: no limit). Under dev->lock. */
static void engine_wait(struct npu_dev *dev, int ms)
{
	struct timespec ts;

	if (ms < 0) {
		pthread_cond_wait(&dev->work, &dev->lock);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&dev->work, &dev->lock, &ts);
}

/*
 * The engine thread. Each turn completes a launch the cores are through
 * with and brings exec_ms up to date (npu_engine_poll), then runs one task
 * per queue (npu_engine_step). Mailbox commands get the lock between
 * turns. With nothing to run it sleeps until a doorbell or a launch's end,
 * or only EXEC_TICK_MS while exec_ms must keep advancing.
 */
static void *engine_main(void *arg)
{
	struct npu_dev *dev = arg;

	pthread_mutex_lock(&dev->lock);
	while (!dev->engine_stop) {
		bool completed;

		if (dev->work_pending) {
			dev->work_pending = false;
			__atomic_store_n(&dev->ctrl->engine_awake, 1, __ATOMIC_SEQ_CST);
		}
		completed = npu_engine_poll(dev);
		if (npu_engine_step(dev) || completed) {
			pthread_mutex_unlock(&dev->lock);
			while (__atomic_load_n(&dev->mbox_waiting, __ATOMIC_ACQUIRE))
				sched_yield();
			pthread_mutex_lock(&dev->lock);
			continue;
		}
		/*
		 * Going to sleep: from now on the host rings. Then one more
		 * look, for a tail written before it saw the 0.
		 */
		__atomic_store_n(&dev->ctrl->engine_awake, 0, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (npu_engine_step(dev)) {
			__atomic_store_n(&dev->ctrl->engine_awake, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		if (!dev->work_pending && !dev->engine_stop)
			engine_wait(dev, npu_engine_sleep_ms(dev));
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

/* Start the AI-core groups' workers: group g gets its share of the cores. */
static int start_groups(struct npu_dev *dev)
{
	unsigned int n = dev->cfg.num_cores, groups = dev->cfg.num_core_groups;

	for (unsigned int g = 0; g < groups; g++) {
		unsigned int first = n * g / groups, end = n * (g + 1) / groups;

		if (npu_cores_start(&dev->groups[g], end - first)) {
			while (g--)
				npu_cores_stop(&dev->groups[g]);
			return -1;
		}
	}
	return 0;
}

static void stop_groups(struct npu_dev *dev)
{
	for (unsigned int g = 0; g < dev->cfg.num_core_groups; g++)
		npu_cores_stop(&dev->groups[g]);
}

int npu_dev_start_engine(struct npu_dev *dev)
{
	int err;

	if (start_groups(dev))
		return EAGAIN;
	if (npu_engine_dma_start(dev)) {
		stop_groups(dev);
		return EAGAIN;
	}
	dev->engine_stop = false;
	err = pthread_create(&dev->engine, NULL, engine_main, dev);
	if (err) {
		npu_engine_dma_stop(dev);
		stop_groups(dev);
		return err;
	}
	dev->engine_running = true;
	err = npu_tlb_start(dev);
	if (err)
		npu_dev_stop_engine(dev);
	return err;
}

void npu_dev_stop_engine(struct npu_dev *dev)
{
	if (!dev->engine_running)
		return;
	npu_tlb_stop(dev);
	pthread_mutex_lock(&dev->lock);
	dev->engine_stop = true;
	pthread_cond_signal(&dev->work);
	pthread_mutex_unlock(&dev->lock);
	pthread_join(dev->engine, NULL);
	/*
	 * Launches still computing stop early and copies at their next
	 * chunk; their tasks stay at head. engine_running stays true until
	 * the units are gone, so a doorbell meanwhile does not run the
	 * engine inline with workers about.
	 */
	pthread_mutex_lock(&dev->lock);
	npu_engine_abandon(dev);
	pthread_mutex_unlock(&dev->lock);
	/* Unlocked: a worker finishing a launch takes the lock. */
	stop_groups(dev);
	npu_engine_dma_stop(dev);
	pthread_mutex_lock(&dev->lock);
	npu_engine_poll(dev);		/* frees the abandoned launches */
	dev->engine_running = false;
	pthread_mutex_unlock(&dev->lock);
}

static void queue_doorbell(struct npu_dev *dev)
{
	pthread_mutex_lock(&dev->lock);
	if (dev->engine_running) {
		dev->work_pending = true;
		pthread_cond_signal(&dev->work);
	} else {
		npu_engine_poll(dev);	/* exec_ms of hung queues */
		while (npu_engine_step(dev))
			;
	}
	pthread_mutex_unlock(&dev->lock);
}

void npu_dev_log_error(struct npu_dev *dev, uint32_t code, uint32_t context,
		       uint64_t address, uint64_t info)
{
	struct npu_fw_errlog *log = &dev->ctrl->errlog;
	uint32_t head = log->head;	/* only the device writes head */
	struct npu_fw_err_entry *e = &log->entries[head % NPU_FW_ERRLOG_ENTRIES];

	e->timestamp_ns = npu_dev_clock_ns();
	e->code = code;
	e->context = context;
	e->address = address;
	e->info = info;
	STORE_REL(&log->head, head + 1);
}

/* How long an injected hold keeps a mailbox TLB_INVALIDATE (and the mailbox). */
#define HOLD_MBOX_MS	10000

static int32_t mbox_exec(struct npu_dev *dev, struct npu_fw_mbox *mb)
{
	switch (mb->opcode) {
	case NPU_FW_CMD_NOP:
		return NPU_FW_OK;
	case NPU_FW_CMD_PING:
		mb->result[0] = mb->args[0];
		mb->result[1] = npu_dev_clock_ns();
		return NPU_FW_OK;
	case NPU_FW_CMD_TLB_INVALIDATE:
		npu_tlb_hold(dev, HOLD_MBOX_MS);
		/* An injected failure leaves the TLB as it was, as a broken one would. */
		if (dev->fail_invalidates) {
			dev->fail_invalidates--;
			return -NPU_FW_EHALTED;
		}
		npu_mmu_invalidate(dev, (uint32_t)mb->args[0]);
		npu_engine_settle(dev, (uint32_t)mb->args[0]);
		return NPU_FW_OK;
	case NPU_FW_CMD_QUEUE_START:
		return npu_engine_queue_start(dev, mb->args[0], mb->args[1], mb->args[2]);
	case NPU_FW_CMD_QUEUE_STOP:
		return npu_engine_queue_stop(dev, mb->args[0]);
	case NPU_FW_CMD_INJECT:
		return inject(dev, mb->args[0], mb->args[1]);
	case NPU_FW_CMD_RESET:
		return recover(dev);
	case NPU_FW_CMD_SCRUB: {
		uint64_t off = mb->args[0], len = mb->args[1];

		/* Never the firmware's own area, never past the end. */
		if (off < NPU_FW_RESERVED_SIZE || off > dev->cfg.hbm_size ||
		    len > dev->cfg.hbm_size - off)
			return -NPU_FW_EINVAL;
		memset(dev->hbm + off, 0, len);
		return NPU_FW_OK;
	}
	default:
		npu_dev_log_error(dev, NPU_FW_EBADCMD, 0, 0, mb->opcode);
		return -NPU_FW_EBADCMD;
	}
}

static void mbox_doorbell(struct npu_dev *dev)
{
	struct npu_fw_mbox *mb = &dev->ctrl->mbox;
	uint32_t seq = LOAD_ACQ(&mb->seq);
	int32_t status;

	/* The vector is shared with posted invalidations: look there first. */
	npu_tlb_doorbell(dev);
	/* Doorbells can coalesce or repeat; the seq says if there is work. */
	if (seq == dev->mbox_seen)
		return;
	dev->mbox_seen = seq;

	memset(mb->result, 0, sizeof(mb->result));
	__atomic_fetch_add(&dev->mbox_waiting, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&dev->lock);
	__atomic_fetch_sub(&dev->mbox_waiting, 1, __ATOMIC_ACQ_REL);
	if (LOAD_ACQ(&dev->ctrl->state) != NPU_FW_STATE_READY)
		status = -NPU_FW_EHALTED;
	else
		status = mbox_exec(dev, mb);
	/* Whatever the command changed holds for every byte moved after it. */
	npu_engine_dma_quiesce(dev);
	pthread_mutex_unlock(&dev->lock);
	mb->status = status;
	STORE_REL(&mb->done_seq, seq);
	npu_dev_raise_irq(dev, NPU_VEC_MBOX);
	/* A command may have released invalidations (a clear of a hold). */
	npu_tlb_doorbell(dev);
}

void npu_dev_doorbell(struct npu_dev *dev, unsigned int vector)
{
	switch (vector) {
	case NPU_VEC_MBOX:
		mbox_doorbell(dev);
		break;
	case NPU_VEC_QUEUE:
		queue_doorbell(dev);
		break;
	default:
		break;
	}
}

void npu_dev_heartbeat(struct npu_dev *dev)
{
	if (LOAD_ACQ(&dev->ctrl->state) != NPU_FW_STATE_READY ||
	    __atomic_load_n(&dev->heartbeat_stopped, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&dev->ctrl->heartbeat, 1, __ATOMIC_RELEASE);
}

void npu_dev_halt(struct npu_dev *dev)
{
	STORE_REL(&dev->ctrl->state, NPU_FW_STATE_HALTED);
}

void npu_dev_attach_host_mem(struct npu_dev *dev, void *mem, size_t size)
{
	pthread_mutex_lock(&dev->lock);
	dev->host_mem = mem;
	dev->host_mem_size = mem ? size : 0;
	npu_mmu_invalidate(dev, 0);
	/* The caller unmaps the old memory next: no launch may read it. */
	npu_engine_settle(dev, 0);
	npu_engine_dma_quiesce(dev);
	pthread_mutex_unlock(&dev->lock);
}
