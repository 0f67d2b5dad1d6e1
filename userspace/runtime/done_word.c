// SPDX-License-Identifier: MIT
/*
 * Completion words and spin-then-sleep waiting.
 *
 * Where the device has them (DRM_NPU_CAP_DONE_WORD), each stream's queue
 * has a u64 in one page-sized buffer of the device's, which the device
 * sets to a batch's queue number as the batch completes, before it raises
 * the interrupt. A waiter that reads it from the buffer's CPU mapping
 * sees the completion without a system call, an interrupt or a wake-up:
 * the legs of the round trip after the device (Documentation/runtime.rst,
 * "Waiting").
 *
 * A wait first spins on the word for up to the stream's budget, then
 * sleeps in the kernel as before. NPURT_WAIT_AUTO learns the budget per
 * stream from how long its waits take (a moving average): twice that
 * while it is short, nothing once it passes 250 us, so a stream whose
 * work takes milliseconds sleeps at once and one whose work takes
 * microseconds seldom sleeps. Failures never reach the word (a failed
 * batch's FENCE never runs): the kernel's answer after the spin brings
 * them, and a stream spinning for good (NPURT_WAIT_SPIN) asks it every
 * millisecond.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "error.h"
#include "handle.h"
#include "internal.h"
#include "memory.h"

#define WORDS_BYTES		4096
#define SPIN_MAX_NS		500000	/* NPURT_WAIT_AUTO never spins longer */
#define SPIN_START_NS		50000	/* nor, before it has measured a wait, this */
#define SPIN_POLL_NS		1000000	/* NPURT_WAIT_SPIN asks the kernel this often */

static_assert(NPURT_WORDS == WORDS_BYTES / sizeof(uint64_t), "one page of words");

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

npurt_status npurt_words_open(npurt_device *dev, const char *who)
{
	static const char *const names[] = { "auto", "block", "spin" };
	struct drm_npu_get_param caps = { .param = DRM_NPU_PARAM_DEVICE_CAPS };
	struct drm_npu_bo_create create = { .size = WORDS_BYTES,
					    .page_policy = DRM_NPU_BO_PAGE_NORMAL_ONLY };
	struct drm_npu_bo_info info = { 0 };
	const char *env = getenv("NPURT_WAIT");
	int policy = NPURT_WAIT_AUTO;
	void *map;

	if (env) {
		for (policy = 0; policy < 3 && strcmp(env, names[policy]); policy++)
			;
		if (policy == 3)
			return npurt_set_error(NPURT_ERR_INVALID, "%s: NPURT_WAIT=%s: not auto, "
					       "block or spin", who, env);
	}
	atomic_init(&dev->wait_policy, (npurt_wait_policy)policy);
	/* Without words every wait sleeps in the kernel, as before. */
	if (npurt_ioctl(dev, DRM_IOCTL_NPU_GET_PARAM, &caps) ||
	    !(caps.value & DRM_NPU_CAP_DONE_WORD) ||
	    npurt_ioctl(dev, DRM_IOCTL_NPU_BO_CREATE, &create))
		return NPURT_OK;
	info.handle = create.handle;
	/* The device writes them; nothing here may. */
	map = npurt_ioctl(dev, DRM_IOCTL_NPU_BO_INFO, &info) ? MAP_FAILED :
	      mmap(NULL, WORDS_BYTES, PROT_READ, MAP_SHARED, dev->fd, (off_t)info.mmap_offset);
	if (map == MAP_FAILED) {
		npurt_gem_close(dev, create.handle);
		return NPURT_OK;
	}
	dev->words_handle = create.handle;
	dev->words = map;
	return NPURT_OK;
}

void npurt_words_close(npurt_device *dev)
{
	if (!dev->words)
		return;
	munmap((void *)dev->words, WORDS_BYTES);
	npurt_gem_close(dev, dev->words_handle);
	dev->words = NULL;
}

int npurt_word_take(npurt_device *dev)
{
	int i = -1;

	if (!dev->words)
		return -1;
	pthread_mutex_lock(&dev->lock);
	for (int w = 0; w < NPURT_WORDS / 64; w++) {
		if (~dev->words_used[w]) {
			int b = __builtin_ctzll(~dev->words_used[w]);

			dev->words_used[w] |= 1ull << b;
			i = w * 64 + b;
			break;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return i;
}

void npurt_word_give(npurt_device *dev, int word)
{
	if (word < 0)
		return;
	pthread_mutex_lock(&dev->lock);
	dev->words_used[word / 64] &= ~(1ull << (word % 64));
	pthread_mutex_unlock(&dev->lock);
}

void npurt_word_ask(const npurt_stream *s, struct drm_npu_queue_create *create)
{
	if (s->word < 0)
		return;
	create->done_handle = s->dev->words_handle;
	create->done_offset = (uint64_t)s->word * sizeof(uint64_t);
}

/* The word's value: the queue's last completed batch, by its number. */
static uint64_t word_read(const npurt_stream *s, int word)
{
	return atomic_load_explicit(&s->dev->words[word], memory_order_acquire);
}

/*
 * Under dev->lock: the stream's batch `seq` done as its word says. The
 * numbers are the queue's: a wait that began before a recovery replaced
 * the queue compares them to the words of the old one only.
 */
bool npurt_word_reached(npurt_stream *s, uint64_t seq)
{
	uint64_t kseq = npurt_stream_kseq(s, seq);

	if (s->word < 0 || s->destroyed || !kseq || word_read(s, s->word) < kseq)
		return false;
	if (seq > s->done)
		s->done = seq;
	return true;
}

/*
 * Spin budget as the policy says; 0: go to sleep at once. AUTO spins for
 * twice the stream's recent waits while they are short, not at all once
 * they are long: a wait that sleeps still measures how long it took, so
 * the budget comes back when the work gets short again.
 */
static int64_t budget(const npurt_stream *s, npurt_wait_policy policy)
{
	if (policy == NPURT_WAIT_SPIN)
		return SPIN_POLL_NS;
	if (policy != NPURT_WAIT_AUTO || s->wait_ns > SPIN_MAX_NS / 2)
		return 0;
	return s->wait_ns ? 2 * s->wait_ns : SPIN_START_NS;
}

void npurt_word_learn(npurt_stream *s, int64_t start_ns)
{
	int64_t took;

	if (!start_ns)
		return;
	took = mono_ns() - start_ns;
	pthread_mutex_lock(&s->dev->lock);
	s->wait_ns = s->wait_ns ? (3 * s->wait_ns + took) / 4 : took;
	pthread_mutex_unlock(&s->dev->lock);
}

enum npurt_spin npurt_word_spin(npurt_stream *s, uint64_t seq, int64_t deadline_ns,
				int64_t *start_ns)
{
	npurt_device *dev = s->dev;
	npurt_wait_policy policy = atomic_load_explicit(&dev->wait_policy, memory_order_relaxed);
	uint64_t kseq, base;
	int64_t start, limit, now;
	uint32_t queue;
	bool seen = false;
	int word;

	/* Only AUTO learns from the waits: the others pay no clock or lock for it. */
	if (!*start_ns && dev->words && policy == NPURT_WAIT_AUTO)
		*start_ns = mono_ns();
	pthread_mutex_lock(&dev->lock);
	if (npurt_word_reached(s, seq)) {
		pthread_mutex_unlock(&dev->lock);
		return NPURT_SPIN_SEEN;
	}
	word = s->destroyed || s->broken || s->failed ? -1 : s->word;
	kseq = npurt_stream_kseq(s, seq);
	queue = s->queue;
	base = s->base;
	limit = budget(s, policy);
	pthread_mutex_unlock(&dev->lock);
	if (word < 0 || !kseq || limit <= 0)
		return NPURT_SPIN_SLEEP;
	start = mono_ns();
	now = start;
	while (now - start < limit && (deadline_ns == DRM_NPU_DEADLINE_NONE || now < deadline_ns)) {
		for (int i = 0; i < 64 && !seen; i++) {
			seen = word_read(s, word) >= kseq;
			cpu_relax();
		}
		now = mono_ns();
		if (seen)
			break;
	}
	pthread_mutex_lock(&dev->lock);
	/* A recovery meanwhile renumbered the batches: the kernel knows. */
	seen = seen && s->queue == queue && s->base == base;
	if (seen && seq > s->done)
		s->done = seq;
	pthread_mutex_unlock(&dev->lock);
	if (seen)
		return NPURT_SPIN_SEEN;
	if (policy == NPURT_WAIT_SPIN &&
	    (deadline_ns == DRM_NPU_DEADLINE_NONE || now < deadline_ns))
		return NPURT_SPIN_ASK;
	return NPURT_SPIN_SLEEP;
}

npurt_status npurt_device_set_wait_policy(npurt_device *dev, npurt_wait_policy policy)
{
	if (npurt_handle_check(dev, NPURT_KIND_DEVICE, "npurt_device_set_wait_policy"))
		return NPURT_ERR_INVALID;
	if (!dev || (unsigned int)policy > NPURT_WAIT_SPIN)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_device_set_wait_policy: %s",
				       dev ? "policy is not one of NPURT_WAIT_AUTO/BLOCK/SPIN" :
				       "dev is NULL");
	atomic_store_explicit(&dev->wait_policy, policy, memory_order_relaxed);
	return NPURT_OK;
}
