// SPDX-License-Identifier: MIT
/*
 * Copy engines: each runs one COPY or FILL at a time, chunk by chunk.
 *
 * A chunk (up to DMA_CHUNK bytes) is translated under dev->lock, where
 * the engine also checks that its task is still wanted, and moved with
 * the lock released, so copies of several queues, the scheduler and the
 * AI cores all proceed at once. No translation outlives its chunk, and a
 * mailbox command waits out the chunks moving when it ran
 * (npu_engine_dma_quiesce): after TLB_INVALIDATE or QUEUE_STOP is
 * answered, nothing moves through a stale translation or for a stopped
 * queue. DMA_CHUNK bounds that wait (tens of microseconds) and the
 * interval between exec_ms updates.
 */
#include <string.h>

#include "npu_engine_int.h"

#define DMA_CHUNK	(256u << 10)
#define DMA_SEGS	64

struct seg {
	uint8_t *dst;
	const uint8_t *src;		/* NULL for a fill */
	uint64_t n;
};

static uint64_t task_bytes(const struct npu_fw_task *t)
{
	return t->type == NPU_FW_TASK_FILL ? t->args[1] : t->args[2];
}

/*
 * Under dev->lock: translate the next chunk of `t` after its first `done`
 * bytes into host segments, merging contiguous pages. Returns how many
 * segments (0: nothing left), or -1 on a fault at the chunk's start; a
 * fault further on ends the chunk there, and the next call reports it,
 * so every byte before a faulting address is moved, as a device would.
 */
static int plan(struct npu_dev *dev, struct npu_fw_queue *q, const struct npu_fw_task *t,
		uint64_t done, struct seg *segs, uint64_t *bytes, struct fault *f)
{
	bool fill = t->type == NPU_FW_TASK_FILL;
	uint64_t left = task_bytes(t) - done;
	uint64_t dst = t->args[0] + done, src = fill ? 0 : t->args[1] + done;
	int n = 0;

	*bytes = 0;
	if (left > DMA_CHUNK)
		left = DMA_CHUNK;
	while (left && n < DMA_SEGS) {
		uint8_t *d, *s = NULL;
		uint64_t da, sa = UINT64_MAX, len;

		if ((!fill && npu_engine_xlate(dev, q, src, NPU_ACCESS_READ, &s, &sa, f)) ||
		    npu_engine_xlate(dev, q, dst, NPU_ACCESS_WRITE, &d, &da, f))
			return n ? n : -1;
		len = left < sa ? left : sa;
		len = len < da ? len : da;
		if (n && segs[n - 1].dst + segs[n - 1].n == d &&
		    (fill || segs[n - 1].src + segs[n - 1].n == s)) {
			segs[n - 1].n += len;
		} else {
			segs[n].dst = d;
			segs[n].src = s;
			segs[n].n = len;
			n++;
		}
		*bytes += len;
		left -= len;
		dst += len;
		src += len;
	}
	return n;
}

static void move(const struct npu_fw_task *t, const struct seg *segs, int n)
{
	uint32_t pattern = (uint32_t)t->args[2];

	for (int i = 0; i < n; i++) {
		if (segs[i].src) {
			memmove(segs[i].dst, segs[i].src, segs[i].n);
			continue;
		}
		/* dst and size are multiples of 4, and so is every page. */
		for (uint64_t k = 0; k < segs[i].n; k += 4)
			memcpy(segs[i].dst + k, &pattern, 4);
	}
}

int npu_engine_dma_inline(struct npu_dev *dev, struct npu_fw_queue *q,
			  const struct npu_fw_task *t, struct fault *f)
{
	struct seg segs[DMA_SEGS];
	uint64_t done = 0, bytes;
	int n;

	while ((n = plan(dev, q, t, done, segs, &bytes, f)) > 0) {
		move(t, segs, n);
		npu_engine_task_moved(dev, bytes);
		done += bytes;
	}
	return n;
}

/*
 * The engine is through with its task: advance or fault its queue, unless
 * the queue stopped or was restarted meanwhile, and wake the scheduler,
 * which may now give the queue's next task (and this engine) out.
 */
static void finish(struct npu_dev *dev, struct npu_dma *e, const struct fault *f)
{
	struct npu_fw_queue *q = npu_engine_slot(dev, e->qid);

	if (!e->cancel && LOAD_ACQ(&q->state) == NPU_QUEUE_RUNNING &&
	    npu_engine_cursor(dev, e->qid, q) == e->cursor) {
		uint64_t now = npu_dev_clock_ns();

		npu_engine_count_exec(dev, e->qid, now - e->counted_ns);
		if (f)
			npu_engine_queue_fault(dev, e->qid, f);
		else
			npu_engine_advance(dev, e->qid, q);
	}
	e->busy = false;
	e->cancel = false;
	dev->eng.q[e->qid].busy = false;
	pthread_cond_signal(&dev->work);
}

static void *dma_main(void *arg)
{
	struct npu_dma *e = arg;
	struct npu_dev *dev = e->dev;
	struct seg segs[DMA_SEGS];

	pthread_mutex_lock(&dev->lock);
	while (!dev->eng.dma_stop) {
		struct npu_fw_queue *q;
		struct fault f;
		uint64_t bytes, now;
		int n;

		if (!e->busy) {
			pthread_cond_wait(&e->go, &dev->lock);
			continue;
		}
		q = npu_engine_slot(dev, e->qid);
		if (e->cancel || LOAD_ACQ(&q->state) != NPU_QUEUE_RUNNING ||
		    npu_engine_cursor(dev, e->qid, q) != e->cursor) {
			finish(dev, e, NULL);
			continue;
		}
		n = plan(dev, q, &e->t, e->done, segs, &bytes, &f);
		if (n <= 0) {
			finish(dev, e, n ? &f : NULL);
			continue;
		}
		e->moving = true;
		e->chunk_seq++;
		pthread_mutex_unlock(&dev->lock);
		move(&e->t, segs, n);
		pthread_mutex_lock(&dev->lock);
		e->moving = false;
		pthread_cond_broadcast(&dev->eng.dma_idle);
		e->done += bytes;
		if (!e->cancel) {
			now = npu_dev_clock_ns();
			npu_engine_count_exec(dev, e->qid, now - e->counted_ns);
			e->counted_ns = now;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

bool npu_engine_dma_free(struct npu_dev *dev)
{
	for (unsigned int i = 0; i < dev->eng.num_dma; i++)
		if (!dev->eng.dma[i].busy)
			return true;
	return false;
}

void npu_engine_dma_submit(struct npu_dev *dev, uint32_t qid, uint64_t cursor,
			   const struct npu_fw_task *t)
{
	for (unsigned int i = 0; i < dev->eng.num_dma; i++) {
		struct npu_dma *e = &dev->eng.dma[i];

		if (e->busy)
			continue;
		e->busy = true;
		e->cancel = false;
		e->qid = qid;
		e->cursor = cursor;
		e->t = *t;
		e->done = 0;
		e->counted_ns = npu_dev_clock_ns();
		npu_prof_unit(&dev->eng.q[qid].prof, (uint8_t)(NPU_FW_UNIT_DMA | i));
		dev->eng.q[qid].busy = true;
		pthread_cond_signal(&e->go);
		return;
	}
}

void npu_engine_dma_cancel(struct npu_dev *dev, uint32_t qid)
{
	for (unsigned int i = 0; i < dev->eng.num_dma; i++) {
		struct npu_dma *e = &dev->eng.dma[i];

		if (e->busy && e->qid == qid)
			e->cancel = true;
	}
}

void npu_engine_dma_quiesce(struct npu_dev *dev)
{
	uint64_t seen[NPU_DEV_DMA_MAX];

	for (unsigned int i = 0; i < dev->eng.num_dma; i++)
		seen[i] = dev->eng.dma[i].moving ? dev->eng.dma[i].chunk_seq : 0;
	for (unsigned int i = 0; i < dev->eng.num_dma; i++) {
		struct npu_dma *e = &dev->eng.dma[i];

		/* Only the chunk moving now: later ones saw what we did. */
		while (seen[i] && e->moving && e->chunk_seq == seen[i])
			pthread_cond_wait(&dev->eng.dma_idle, &dev->lock);
	}
}

int npu_engine_dma_start(struct npu_dev *dev)
{
	struct npu_engine *eng = &dev->eng;
	unsigned int i;

	eng->dma_stop = false;
	for (i = 0; i < eng->num_dma; i++) {
		eng->dma[i].dev = dev;
		if (pthread_create(&eng->dma[i].thread, NULL, dma_main, &eng->dma[i]))
			break;
	}
	if (i < eng->num_dma) {
		unsigned int started = i;

		pthread_mutex_lock(&dev->lock);
		eng->dma_stop = true;
		for (i = 0; i < started; i++)
			pthread_cond_signal(&eng->dma[i].go);
		pthread_mutex_unlock(&dev->lock);
		for (i = 0; i < started; i++)
			pthread_join(eng->dma[i].thread, NULL);
		return -1;
	}
	pthread_mutex_lock(&dev->lock);
	eng->dma_running = true;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/*
 * Stop the engines between chunks. A task cut short stays at head of its
 * queue, to run again from the start if the engine comes back.
 */
void npu_engine_dma_stop(struct npu_dev *dev)
{
	struct npu_engine *eng = &dev->eng;

	pthread_mutex_lock(&dev->lock);
	if (!eng->dma_running) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	eng->dma_stop = true;
	for (unsigned int i = 0; i < eng->num_dma; i++)
		pthread_cond_signal(&eng->dma[i].go);
	pthread_mutex_unlock(&dev->lock);
	for (unsigned int i = 0; i < eng->num_dma; i++)
		pthread_join(eng->dma[i].thread, NULL);
	pthread_mutex_lock(&dev->lock);
	for (unsigned int i = 0; i < eng->num_dma; i++) {
		struct npu_dma *e = &eng->dma[i];

		if (e->busy)
			eng->q[e->qid].busy = false;
		e->busy = false;
		e->cancel = false;
	}
	eng->dma_running = false;
	pthread_mutex_unlock(&dev->lock);
}
