// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: the driver's own ioctls (DRM_IOCTL_NPU_*), with what each may
 * return by uapi/drm/npu_accel.h and Documentation/uapi.rst.
 */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)

/* ---- how a call reaches the driver: the right fd and argument, or not ---- */
struct ioc {
	int fd;
	void *arg;
	int bad;	/* 0: fine, 1: not a device fd, 2: bad argument pointer */
};

static int bad_fd(void)
{
	switch (rnd_below(4)) {
	case 0:
		return fz->devnull;
	case 1:
		return fz->evfd;
	case 2:
		return -1;
	default:
		return 4000 + (int)rnd_below(64);	/* past RLIMIT_NOFILE */
	}
}

static void ioc_pick(struct ioc *c, struct fz_file *f, void *arg, size_t len)
{
	c->fd = file_fd(f);
	c->arg = arg;
	c->bad = 0;
	if (chance(5)) {
		c->bad = 1;
		c->fd = bad_fd();
	} else if (chance(6)) {
		c->bad = 2;
		c->arg = bad_ptr(len);
	}
}

/* A bad fd or argument decides the outcome, whatever the rest. */
static bool ioc_expect(const struct ioc *c, struct fz_expect *x)
{
	if (c->bad == 1)
		x_err(x, ENOTTY, EBADF, 0);
	else if (c->bad == 2)
		x_err(x, EFAULT, 0);
	return c->bad != 0;
}

static const char *ioc_str(const struct ioc *c)
{
	return c->bad == 1 ? " [bad fd]" : c->bad == 2 ? " [bad arg]" : "";
}

/* ---- GET_PARAM ------------------------------------------------------------------ */
/*
 * DRM_NPU_CLOCK, by the call count (no draws: the seeded sequence of the
 * other calls stays): flags and padding refused; the device clock of
 * the pair never goes back.
 */
static void clock_call(struct fz_file *f)
{
	static uint64_t last;
	struct drm_npu_clock a = { .flags = fz->calls % 3 == 1, .pad = fz->calls % 3 == 2 };
	struct fz_expect x;
	struct ioc c;
	long ret;

	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_GET_PARAM, "CLOCK fd=%d flags=%#x pad=%#x%s", c.fd, a.flags, a.pad,
		 ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.pad)
			x_err(&x, EINVAL, 0);
		else	/* the firmware may be held or gone under injected faults */
			x_ok(&x, ETIMEDOUT, EIO, ENODEV, EINTR, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_CLOCK, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	if (a.device_ns < last)
		fz_finding("device clock went back from %llu to %llu", (unsigned long long)last,
			   (unsigned long long)a.device_ns);
	last = a.device_ns;
}

void op_get_param(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_get_param a = { 0 };
	struct fz_expect x;
	struct ioc c;
	bool ok;
	long ret;

	/*
	 * The draws are those of the first fifteen parameters: parameters
	 * added later take a turn of the last one by the call count, so the
	 * seeded sequence of every other call stays what it was.
	 */
	a.param = (uint32_t)rnd_below(DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS + 1);
	if (a.param == DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS)
		a.param += (uint32_t)(fz->calls % (FZ_PARAM_LAST - DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS + 1));
	if (chance(40))
		a.param = FZ_PARAM_LAST + 1 + (uint32_t)rnd_below(1000);
	else if (chance(10))
		a.param = rnd_garbage32() | 0x100;
	if (chance(30))
		a.flags = rnd_garbage32() | 1;
	a.value = chance(50) ? rnd64() : 0;	/* an output: ignored */
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_GET_PARAM, "GET_PARAM fd=%d param=%u flags=%#x%s", c.fd, a.param, a.flags,
		 ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.param > FZ_PARAM_LAST ||
		    a.param == DRM_NPU_PARAM_RESERVED_9)
			x_err(&x, EINVAL, 0);
		else
			x_ok(&x, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_GET_PARAM, c.arg);
	ok = fz_end(&x, ret);
	if (fz->calls % 16 == 0)
		clock_call(f);
	if (!ok || ret || c.bad)
		return;
	switch (a.param) {
	case DRM_NPU_PARAM_FW_HEARTBEAT:
		if (a.value < fz->params[a.param])
			fz_finding("heartbeat went back from %llu to %llu",
				   (unsigned long long)fz->params[a.param],
				   (unsigned long long)a.value);
		fz->params[a.param] = a.value;
		break;
	case DRM_NPU_PARAM_HBM_USED:
		if (a.value > fz->params[DRM_NPU_PARAM_HBM_SIZE])
			fz_finding("HBM in use %llu is more than HBM", (unsigned long long)a.value);
		break;
	default:
		if (a.value != fz->params[a.param])
			fz_finding("param %u is %llu, was %llu", a.param,
				   (unsigned long long)a.value,
				   (unsigned long long)fz->params[a.param]);
	}
}

/* ---- buffers ------------------------------------------------------------------------ */
static uint64_t bo_size(void)
{
	unsigned int r = (unsigned int)rnd_below(100);

	if (fz->hbm_live > 48 * MIB)
		r = r % 65;		/* over budget: small ones only */
	if (r < 45)
		return rnd_range(1, 16) * 4096;
	if (r < 65)
		return rnd_range(1, 64 * KIB);
	if (r < 88)
		return rnd_range(16, 256) * 4096;
	return rnd_range(MIB + 1, 4 * MIB);
}

/*
 * A new buffer reads zero, whatever work of its context is in flight: a
 * FILL or COPY queued at an address nothing mapped must not land in it
 * (issue 33, 9e). Read every 64th byte of its first 4 MiB.
 */
static void check_new_buffer_reads_zero(int fd, uint32_t handle, uint64_t va, uint64_t size)
{
	struct drm_npu_bo_info info = { .handle = handle };
	size_t len = size < 4 * MIB ? size : 4 * MIB;
	volatile uint32_t *p;

	if (ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info))
		return;
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)info.mmap_offset);
	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < len / 4; i += 16) {
		if (p[i]) {
			fz_finding("new buffer at device va %#llx reads %#x at +%#zx",
				   (unsigned long long)va, p[i], i * 4);
			break;
		}
	}
	munmap((void *)p, len);
}

/*
 * Whether every batch f queued has finished (or can no longer run): then
 * none of its launches can write anywhere any more. Polls each queue's
 * last sequence number without counting as a fuzzed call.
 */
static bool file_work_settled(struct fz_file *f, int fd)
{
	for (uint32_t i = 0; i < FZ_QUEUES; i++) {
		struct fz_queue *q = &f->q[i];
		struct drm_npu_wait w = { .queue = i };

		if (q->state == Q_NONE || !q->max_seq)
			continue;
		if (q->pending || q->seq_fuzzy)
			return false;
		w.seq = q->max_seq;
		w.deadline_ns = fz_past_deadline();
		/* Done, failed, or the queue gone with its work. */
		if (ioctl(fd, DRM_IOCTL_NPU_WAIT, &w) && errno != EIO && errno != EINVAL)
			return false;
	}
	return true;
}

void op_bo_create(void)
{
	struct fz_file *f = pick_file();
	uint64_t room = fz->params[DRM_NPU_PARAM_HBM_SIZE] - fz->params[DRM_NPU_PARAM_HBM_RESERVED];
	struct drm_npu_bo_create a = { 0 };
	struct fz_expect x;
	bool invalid = false;
	struct ioc c;
	long ret;

	if (f->nbo == FZ_BOS) {
		op_gem_close();
		return;
	}
	a.size = bo_size();
	a.page_policy = (uint32_t)rnd_below(3);
	if (chance(20)) {
		/* Zero, or more than there is: never something huge that fits. */
		a.size = rnd_garbage64();
		if (a.size && a.size <= room)
			a.size = chance(300) ? 0 : room + 1 + rnd_below(1ull << 40);
	}
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	if (chance(15))
		a.page_policy = 3 + (uint32_t)rnd_below(chance(500) ? 10 : UINT32_MAX - 3);
	if (chance(30)) {	/* outputs given as inputs: ignored */
		a.handle = rnd32();
		a.device_va = rnd64();
		a.page_size = rnd32();
	}
	if (f->nbo == FZ_BOS && !a.flags && a.size && a.size <= room)
		a.flags = 2;	/* no room in the model for a handle: make it fail */
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_BO_CREATE, "BO_CREATE fd=%d size=%#llx flags=%#x policy=%u%s", c.fd,
		 (unsigned long long)a.size, a.flags, a.page_policy, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		invalid = !a.size || a.flags || a.page_policy > DRM_NPU_BO_PAGE_NORMAL_ONLY;
		if (invalid)
			x_err(&x, EINVAL, 0);
		else if (a.size > room)
			x_err(&x, ENOMEM, 0);
		else
			x_ok(&x, ENOMEM, 0);
	}
	uint64_t want = a.size;
	uint32_t policy = a.page_policy;

	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_BO_CREATE, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	/* What came back must make sense. */
	if (a.page_size != DRM_NPU_PAGE_SIZE_4K && a.page_size != DRM_NPU_PAGE_SIZE_2M)
		fz_finding("page size %#x", a.page_size);
	else if (a.size < want || a.size % a.page_size || a.size - want >= a.page_size)
		fz_finding("size %#llx for %#llx on %#x pages", (unsigned long long)a.size,
			   (unsigned long long)want, a.page_size);
	if ((policy == DRM_NPU_BO_PAGE_NORMAL_ONLY && a.page_size != DRM_NPU_PAGE_SIZE_4K) ||
	    (policy == DRM_NPU_BO_PAGE_HUGE_ONLY && a.page_size != DRM_NPU_PAGE_SIZE_2M) ||
	    (policy == DRM_NPU_BO_PAGE_HUGE_FIRST && want <= MIB && a.page_size != DRM_NPU_PAGE_SIZE_4K))
		fz_finding("policy %u, %#llx bytes: page size %#x", policy,
			   (unsigned long long)want, a.page_size);
	if (a.device_va < DRM_NPU_VA_BASE || a.device_va + a.size > DRM_NPU_VA_END ||
	    a.device_va % a.page_size)
		fz_finding("device va %#llx", (unsigned long long)a.device_va);
	if (find_handle(f, a.handle) && file_strict(f))
		fz_finding("handle %u handed out twice", a.handle);

	struct fz_bo *b = add_bo(f);

	if (!b)
		return;
	b->handle = a.handle;
	b->obj = new_obj();
	b->size = a.size;
	b->va = a.device_va;
	b->page_size = a.page_size;
	b->info = true;		/* the mmap offset comes from BO_INFO */
	b->mine = true;
	b->user_known = true;
	if (va_overlaps(f, b, b->va, b->size) && file_strict(f))
		fz_finding("device va %#llx+%#llx overlaps another buffer",
			   (unsigned long long)b->va, (unsigned long long)b->size);
	fz->hbm_live += a.size;
	if (file_strict(f) && chance(250)) {
		if (f->launched && file_work_settled(f, c.fd))
			f->launched = false;
		if (!f->launched)
			check_new_buffer_reads_zero(c.fd, a.handle, a.device_va, a.size);
	}
}

void op_bo_info(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_bo_info a = { 0 };
	struct fz_bo *b = pick_bo(f, false);
	struct fz_expect x;
	struct ioc c;
	long ret;

	if (b && !chance(100))
		a.handle = b->handle;
	else
		a.handle = unused_handle(f), b = NULL;
	if (chance(20))
		a.flags = rnd_garbage32() | 1;
	if (chance(30))
		a.size = rnd64(), a.mmap_offset = rnd64();	/* outputs */
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_BO_INFO, "BO_INFO fd=%d handle=%u flags=%#x%s", c.fd, a.handle, a.flags,
		 ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags)
			x_err(&x, EINVAL, 0);
		else if (b)
			x_ok(&x, file_strict(f) ? 0 : ENOENT, 0);
		else if (file_strict(f))
			x_err(&x, ENOENT, 0);
		else
			x_ok(&x, ENOENT, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_BO_INFO, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad || !b)
		return;
	bool user = !a.mmap_offset;	/* registered host memory has no offset */

	if ((a.bo_flags & ~(user ? DRM_NPU_USERPTR_READ_ONLY : 0)) ||
	    (a.page_size != DRM_NPU_PAGE_SIZE_4K && a.page_size != DRM_NPU_PAGE_SIZE_2M) ||
	    !a.size || a.size % a.page_size || a.device_va < DRM_NPU_VA_BASE ||
	    a.device_va + a.size > DRM_NPU_VA_END ||
	    (b->user_known && user != b->user && file_strict(f))) {
		fz_finding("info: size %#llx va %#llx offset %#llx flags %#x page %#x",
			   (unsigned long long)a.size, (unsigned long long)a.device_va,
			   (unsigned long long)a.mmap_offset, a.bo_flags, a.page_size);
		return;
	}
	if (b->info && (a.size != b->size || a.device_va != b->va ||
			(b->page_size && a.page_size != b->page_size) ||
			(b->mmap_offset && a.mmap_offset != b->mmap_offset))) {
		if (file_strict(f))
			fz_finding("info changed: size %#llx va %#llx page %#x offset %#llx, was %#llx %#llx %#x %#llx",
				   (unsigned long long)a.size, (unsigned long long)a.device_va,
				   a.page_size, (unsigned long long)a.mmap_offset,
				   (unsigned long long)b->size, (unsigned long long)b->va,
				   b->page_size, (unsigned long long)b->mmap_offset);
	}
	/* Another handle to the same buffer in this context has the same va. */
	struct fz_bo *same = find_obj(f, b->obj);

	if (same && same != b && same->va != a.device_va && file_strict(f))
		fz_finding("two handles of one buffer at %#llx and %#llx",
			   (unsigned long long)same->va, (unsigned long long)a.device_va);
	b->size = a.size;
	b->va = a.device_va;
	b->page_size = a.page_size;
	b->mmap_offset = a.mmap_offset;
	b->info = true;
	if (!b->user_known) {
		b->user = user;
		b->user_ro = user;	/* read-only or not: not known */
		b->user_known = true;
	}
}

void op_mem_usage(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_mem_usage a = { 0 };
	struct fz_expect x;
	struct ioc c;
	long ret;

	if (chance(20))
		a.flags = rnd_garbage32() | 1;
	if (chance(20))
		a.pad = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_MEM_USAGE, "GET_MEM_USAGE fd=%d flags=%#x pad=%#x%s", c.fd, a.flags, a.pad,
		 ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.pad)
			x_err(&x, EINVAL, 0);
		else
			x_ok(&x, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_GET_MEM_USAGE, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	for (int r = 0; r < DRM_NPU_MEM_REGION_COUNT; r++) {
		if (a.ctx_current[r] > a.ctx_peak[r] || a.dev_current[r] > a.dev_peak[r] ||
		    a.ctx_current[r] > a.dev_current[r] || a.ctx_peak[r] > a.dev_peak[r])
			fz_finding("region %d: context %llu (peak %llu), device %llu (peak %llu)", r,
				   (unsigned long long)a.ctx_current[r],
				   (unsigned long long)a.ctx_peak[r],
				   (unsigned long long)a.dev_current[r],
				   (unsigned long long)a.dev_peak[r]);
	}
	/* What this context made and still holds is charged to it. */
	uint64_t hbm = 0, host = 0, rings = 0;

	for (int i = 0; i < f->nbo; i++) {
		const struct fz_bo *b = &f->bo[i];
		bool first = true;

		if (!b->mine)
			continue;
		for (int j = 0; j < i; j++)
			if (f->bo[j].obj == b->obj)
				first = false;
		if (first)
			*(b->user ? &host : &hbm) += b->size;
	}
	for (int q = 0; q < FZ_QUEUES; q++)
		if (f->q[q].state == Q_LIVE)
			rings += DRM_NPU_QUEUE_DEPTH_MIN * sizeof(struct drm_npu_task);	/* at least */
	if (file_strict(f) && (hbm > a.ctx_current[DRM_NPU_MEM_REGION_HBM] ||
			       host > a.ctx_current[DRM_NPU_MEM_REGION_HOST] ||
			       rings > a.ctx_current[DRM_NPU_MEM_REGION_QUEUES]))
		fz_finding("context charged hbm %llu host %llu queues %llu, holds at least %llu %llu %llu",
			   (unsigned long long)a.ctx_current[DRM_NPU_MEM_REGION_HBM],
			   (unsigned long long)a.ctx_current[DRM_NPU_MEM_REGION_HOST],
			   (unsigned long long)a.ctx_current[DRM_NPU_MEM_REGION_QUEUES],
			   (unsigned long long)hbm, (unsigned long long)host,
			   (unsigned long long)rings);
}

/* ---- queues ------------------------------------------------------------------------ */
static uint32_t live_created_queues(struct fz_file *f)
{
	uint32_t n = 0;

	for (int q = 1; q < FZ_QUEUES; q++)
		n += f->q[q].state != Q_NONE;
	return n;
}

void op_queue_create(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_queue_create a = { 0 };
	uint32_t maxto = (uint32_t)fz->params[DRM_NPU_PARAM_MAX_QUEUE_TIMEOUT_MS];
	static const uint32_t depths[] = { 0, 0, 0, 512, 1024, 2048, 4096, 65536 };
	bool invalid, perm;
	struct fz_expect x;
	struct ioc c;
	long ret;

	if (live_queues() >= queue_budget() && chance(900)) {
		op_queue_destroy(false);
		return;
	}

	a.priority = (uint32_t)rnd_below(chance(800) ? 2 : 4);
	a.depth = depths[rnd_below(chance(950) ? 6 : ARRAY_LEN(depths))];
	a.timeout_ms = chance(700) ? 0 : (uint32_t)rnd_range(chance(900) ? 3000 : 1, maxto);
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	if (chance(10))
		a.queue = rnd_garbage32() | 1;
	if (chance(10))
		a.pad = rnd_garbage32() | 1;
	if (chance(15))
		a.priority = 4 + (uint32_t)rnd_below(UINT32_MAX - 4);
	if (chance(20))
		a.depth = chance(500) ? rnd_garbage32() : 512 + 1 + (uint32_t)rnd_below(4000);
	if (chance(10))
		a.timeout_ms = maxto + 1 + (uint32_t)rnd_below(UINT32_MAX - maxto - 1);
	/* A completion word: mostly a good one in a buffer of the file's. */
	struct fz_bo *w = chance(300) ? pick_bo(f, true) : NULL;
	bool bad_bufs = false, maybe_bufs = false;

	if (w) {
		a.done_handle = w->handle;
		a.done_offset = chance(900) ? rnd_below(w->size / 8) * 8 :
				chance(500) ? w->size - 4 : rnd_garbage64();
		bad_bufs = a.done_offset & 7 || a.done_offset > w->size - 8;
		/* Host memory is refused; where the book is unsure, either answer. */
		if (!bad_bufs && (!w->user_known || !file_strict(f)))
			maybe_bufs = true;
		else
			bad_bufs = bad_bufs || w->user;
	} else if (chance(10)) {
		/* A handle the file does not have, or an offset in nothing. */
		uint32_t h = rnd_garbage32() | 1;

		if (chance(500) && !find_handle(f, h))
			a.done_handle = h;
		else
			a.done_offset = rnd_garbage64() | 8;
		bad_bufs = true;
	}
	if (chance(10)) {
		a.pad2 = rnd_garbage32() | 1;
		bad_bufs = true;
	}
	/* A profiling ring: mostly a good one, which the device may write. */
	struct fz_bo *pr = chance(200) ? pick_bo(f, true) : NULL;

	if (pr) {
		uint64_t n = chance(900) ? 16u << rnd_below(4) : rnd_garbage32();
		uint64_t bytes = sizeof(struct drm_npu_prof_ring) + n * sizeof(struct drm_npu_prof_record);

		a.prof_handle = pr->handle;
		a.prof_entries = (uint32_t)n;
		a.prof_offset = chance(900) && bytes <= pr->size ?
				rnd_below((pr->size - bytes) / 64 + 1) * 64 : rnd_garbage64();
		if ((n & (n - 1)) || n < DRM_NPU_PROF_MIN || n > DRM_NPU_PROF_MAX ||
		    a.prof_offset & 63 || bytes > pr->size || a.prof_offset > pr->size - bytes)
			bad_bufs = true;
		else if (!pr->user_known || !file_strict(f))
			maybe_bufs = true;
		else
			bad_bufs = bad_bufs || pr->user;
	} else if (chance(10)) {
		/* A size or an offset without a ring. */
		if (chance(500))
			a.prof_entries = 16;
		else
			a.prof_offset = rnd_garbage64() | 64;
		bad_bufs = true;
	}
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_QUEUE_CREATE, "QUEUE_CREATE fd=%d prio=%u depth=%u timeout=%u flags=%#x queue=%u "
		 "pad=%#x word=%u@%#llx pad2=%#x ring=%u@%#llx*%u%s", c.fd, a.priority, a.depth,
		 a.timeout_ms, a.flags, a.queue, a.pad, a.done_handle,
		 (unsigned long long)a.done_offset, a.pad2, a.prof_handle,
		 (unsigned long long)a.prof_offset, a.prof_entries, ioc_str(&c));
	uint32_t d = a.depth ? a.depth : DRM_NPU_QUEUE_DEPTH_DEFAULT;

	invalid = a.flags || a.queue || a.pad || a.priority > DRM_NPU_QUEUE_PRIORITY_REALTIME ||
		  (d & (d - 1)) || d < DRM_NPU_QUEUE_DEPTH_MIN || d > DRM_NPU_QUEUE_DEPTH_MAX ||
		  a.timeout_ms > maxto || bad_bufs;
	perm = a.priority > DRM_NPU_QUEUE_PRIORITY_NORMAL && fz->unpriv;
	if (!ioc_expect(&c, &x)) {
		if (invalid)
			x_err(&x, EINVAL, 0);
		else if (perm)
			x_err(&x, EPERM, maybe_bufs ? EINVAL : EPERM, 0);
		else if (maybe_bufs)
			x_ok(&x, EINVAL, EBUSY, ENOMEM, EIO, 0);
		else if (live_created_queues(f) == FZ_QUEUES - 1 && file_strict(f))
			x_err(&x, EBUSY, 0);
		else
			x_ok(&x, EBUSY, ENOMEM, EIO, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_QUEUE_CREATE, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	if (a.queue < 1 || a.queue >= FZ_QUEUES) {
		fz_finding("queue id %u", a.queue);
		return;
	}
	struct fz_queue *q = &f->q[a.queue];

	if (q->state == Q_LIVE && file_strict(f))
		fz_finding("queue %u handed out while live", a.queue);
	uint32_t gen = q->gen + 1, pending = q->pending;
	bool strays = q->strays;

	memset(q, 0, sizeof(*q));
	q->gen = gen;
	q->pending = pending;
	q->strays = strays;
	/* Punted io_uring SUBMITs find queues by id: they may land here. */
	q->seq_fuzzy = pending > 0 || strays;
	q->state = Q_LIVE;
	q->timeout_ms = a.timeout_ms;
	/* A short time limit can cut off honest work. */
	q->may_fail = a.timeout_ms && a.timeout_ms < 2000;
}

void op_queue_destroy(bool abort)
{
	struct fz_file *f = pick_file();
	struct drm_npu_queue_destroy a = { 0 };
	struct fz_expect x;
	int qi = pick_queue(f, true);
	struct ioc c;
	long ret;

	for (int i = 0; i < FZ_QUEUES; i++)
		if (f->q[i].failed && f->q[i].state != Q_NONE && chance(700))
			qi = i;
	if (fz->followup_file && !abort) {
		f = &fz->files[fz->followup_file - 1];
		qi = fz->followup_queue;
		fz->followup_file = 0;
		if (!f->used)
			f = pick_file();
	}
	if (qi < 0 || chance(100))
		a.queue = chance(700) ? (uint32_t)rnd_below(FZ_QUEUES) : rnd_garbage32();
	else
		a.queue = (uint32_t)qi;
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(abort ? OP_QUEUE_ABORT : OP_QUEUE_DESTROY, "QUEUE_%s fd=%d queue=%u flags=%#x%s",
		 abort ? "ABORT" : "DESTROY", c.fd, a.queue, a.flags, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.queue >= FZ_QUEUES || queue_sure_absent(f, (int)a.queue))
			x_err(&x, EINVAL, 0);
		else if (queue_sure_live(f, (int)a.queue))
			x_ok(&x, 0);
		else
			x_ok(&x, EINVAL, 0);
	}
	ret = fz_ioctl(c.fd, abort ? DRM_IOCTL_NPU_QUEUE_ABORT : DRM_IOCTL_NPU_QUEUE_DESTROY,
		       c.arg);
	if (!fz_end(&x, ret) || c.bad || a.flags || a.queue >= FZ_QUEUES)
		return;
	struct fz_queue *q = &f->q[a.queue];

	if (abort) {
		if (!ret)
			q->may_fail = q->failed = true;
		return;
	}
	if (!ret || ret == -EINVAL) {
		/* Gone (or never there): what waited on it is released. */
		uint32_t gen = q->gen + 1, pending = q->pending;
		bool strays = q->strays;

		memset(q, 0, sizeof(*q));
		q->gen = gen;
		q->pending = pending;
		q->strays = q->seq_fuzzy = strays;
		/* A late SUBMIT makes the default queue again. */
		q->state = (pending || strays) && a.queue == 0 ? Q_UNKNOWN : Q_NONE;
	}
}

/* ---- events and notifies ---------------------------------------------------------- */
void op_sync_create(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_sync_create a = { 0 };
	struct fz_expect x;
	struct ioc c;
	long ret;

	a.kind = chance(500) ? DRM_NPU_SYNC_EVENT : DRM_NPU_SYNC_NOTIFY;
	if (chance(20))
		a.kind = chance(500) ? 0 : 3 + (uint32_t)rnd_below(UINT32_MAX - 3);
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	if (chance(10))
		a.id = rnd_garbage32() | 1;
	if (chance(10))
		a.pad = rnd_garbage32() | 1;
	if (f->nsync == FZ_SYNCS && !a.flags)
		a.flags = 4;	/* no room in the model */
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_SYNC_CREATE, "SYNC_CREATE fd=%d kind=%u flags=%#x id=%u pad=%#x%s", c.fd,
		 a.kind, a.flags, a.id, a.pad, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if ((a.kind != DRM_NPU_SYNC_EVENT && a.kind != DRM_NPU_SYNC_NOTIFY) || a.flags || a.id ||
		    a.pad)
			x_err(&x, EINVAL, 0);
		else if (file_strict(f))
			x_ok(&x, ENOSPC, ENOMEM, 0);
		else
			x_ok(&x, ENOSPC, ENOMEM, EDQUOT, 0);
	}
	uint32_t kind = a.kind;

	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_SYNC_CREATE, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	if (a.id >= 2048 || (find_sync(f, a.id) && file_strict(f))) {
		fz_finding("sync id %u", a.id);
		return;
	}
	if (f->nsync < FZ_SYNCS && !find_sync(f, a.id))
		f->sync[f->nsync++] = (struct fz_sync){ .id = a.id, .kind = (uint8_t)kind };
}

void op_sync_destroy(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_sync_destroy a = { 0 };
	struct fz_sync *s = pick_sync(f, 0);
	struct fz_expect x;
	struct ioc c;
	long ret;

	if (s && !chance(100))
		a.id = s->id;
	else
		a.id = unused_sync_id(f), s = NULL;
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_SYNC_DESTROY, "SYNC_DESTROY fd=%d id=%u flags=%#x%s", c.fd, a.id, a.flags,
		 ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags)
			x_err(&x, EINVAL, 0);
		else if (!file_strict(f))
			x_ok(&x, EINVAL, 0);
		else if (s)
			x_ok(&x, 0);
		else
			x_err(&x, EINVAL, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_SYNC_DESTROY, c.arg);
	if (fz_end(&x, ret) && !c.bad && !a.flags && s)
		drop_sync(f, s);
}

/* An id for a call about events: mostly ours, sometimes a notify or a stranger. */
static uint32_t event_id(struct fz_file *f, bool *held)
{
	struct fz_sync *s = pick_sync(f, DRM_NPU_SYNC_EVENT);
	struct fz_sync *n = pick_sync(f, DRM_NPU_SYNC_NOTIFY);

	*held = false;
	if (s && chance(900)) {
		*held = true;
		return s->id;
	}
	if (n && chance(500))
		return n->id;
	return unused_sync_id(f);
}

void op_event_query(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_event_query a = { 0 };
	struct fz_expect x;
	struct ioc c;
	bool held;
	long ret;

	a.id = event_id(f, &held);
	if (chance(30))
		a.recorded = rnd32(), a.timestamp_ns = rnd64();	/* outputs */
	if (chance(20))
		a.flags = rnd_garbage32() | 1;
	if (chance(20))
		a.pad = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_EVENT_QUERY, "EVENT_QUERY fd=%d id=%u flags=%#x pad=%#x%s", c.fd, a.id,
		 a.flags, a.pad, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.pad)
			x_err(&x, EINVAL, 0);
		else if (!file_strict(f))
			x_ok(&x, EINVAL, 0);
		else if (held)
			x_ok(&x, 0);
		else
			x_err(&x, EINVAL, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_EVENT_QUERY, c.arg);
	if (fz_end(&x, ret) && !ret && !c.bad && a.recorded > 1)
		fz_finding("recorded = %u", a.recorded);
}

void op_event_wait(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_event_wait a = { 0 };
	struct fz_expect x;
	bool held, armed = false;
	struct ioc c;
	long ret;

	a.id = event_id(f, &held);
	switch (rnd_below(10)) {
	case 0:
	case 1:
	case 2:
	case 3:
		/* polls: 0, the past, any negative value */
		a.deadline_ns = fz_past_deadline();
		break;
	case 4:
	case 5:
	case 6:
		a.deadline_ns = fz_deadline((int64_t)rnd_range(1000, 2000000));
		break;
	case 7:
	case 8:
		a.deadline_ns = fz_deadline((int64_t)rnd_range(2000000, 20000000));
		break;
	default:
		a.deadline_ns = chance(500) ? DRM_NPU_DEADLINE_NONE : (int64_t)rnd_garbage64();
		armed = true;
	}
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_EVENT_WAIT, "EVENT_WAIT fd=%d id=%u deadline=%lld flags=%#x%s", c.fd, a.id,
		 (long long)a.deadline_ns, a.flags, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags)
			x_err(&x, EINVAL, 0);
		else if (!file_strict(f))
			x_ok(&x, EINVAL, ETIMEDOUT, EINTR, EIO, 0);
		else if (held)
			x_ok(&x, ETIMEDOUT, EINTR, EIO, 0);
		else
			x_err(&x, EINVAL, 0);
	}
	if (armed)
		fz_arm_ms(50);
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_EVENT_WAIT, c.arg);
	fz_disarm();
	if (!fz_end(&x, ret) || c.bad || ret != -EINTR)
		return;
	/* An absolute deadline: the kernel never writes it back. */
	int64_t after = ((struct drm_npu_event_wait *)c.arg)->deadline_ns;

	if (after != a.deadline_ns)
		fz_finding("deadline_ns %lld after EINTR (was %lld)", (long long)after,
			   (long long)a.deadline_ns);
}

void op_notify_export(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_notify_export a = { 0 };
	struct fz_sync *s = pick_sync(f, DRM_NPU_SYNC_NOTIFY);
	struct fz_expect x;
	bool held = false;
	struct ioc c;
	long ret;

	if (s && chance(900)) {
		a.id = s->id;
		held = true;
	} else {
		struct fz_sync *e = pick_sync(f, DRM_NPU_SYNC_EVENT);

		a.id = e && chance(500) ? e->id : unused_sync_id(f);
	}
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	if (chance(10))
		a.fd = (int32_t)(rnd_garbage32() | 1);
	if (chance(10))
		a.pad = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_NOTIFY_EXPORT, "NOTIFY_EXPORT fd=%d id=%u flags=%#x out_fd=%d pad=%#x%s", c.fd,
		 a.id, a.flags, a.fd, a.pad, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.pad || a.fd)
			x_err(&x, EINVAL, 0);
		else if (!file_strict(f))
			x_ok(&x, EINVAL, EMFILE, 0);
		else if (held)
			x_ok(&x, EMFILE, 0);
		else
			x_err(&x, EINVAL, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_NOTIFY_EXPORT, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	if (a.fd < 0) {
		fz_finding("fd %d", a.fd);
		return;
	}
	add_xfd(X_NOTIFY, a.fd);
}

void op_notify_import(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_notify_import a = { 0 };
	struct fz_xfd *n = pick_xfd(X_NOTIFY);
	struct fz_xfd *other = pick_xfd(0);
	int kind = 0;	/* 0: a notify fd, 1: another kind of fd, 2: no fd */
	struct fz_expect x;
	struct ioc c;
	long ret;

	if (n && chance(850)) {
		a.fd = n->fd;
	} else if (other && other->kind != X_NOTIFY && chance(500)) {
		a.fd = other->fd;
		kind = 1;
	} else {
		switch (rnd_below(4)) {
		case 0:
			a.fd = fz->devnull, kind = 1;
			break;
		case 1:
			a.fd = file_fd(f), kind = 1;
			break;
		case 2:
			a.fd = -1, kind = 2;
			break;
		default:
			a.fd = 4000 + (int)rnd_below(50), kind = 2;
		}
	}
	if (chance(15))
		a.flags = rnd_garbage32() | 1;
	if (chance(10))
		a.id = rnd_garbage32() | 1;
	if (chance(10))
		a.pad = rnd_garbage32() | 1;
	if (f->nsync == FZ_SYNCS && !a.flags)
		a.flags = 4;	/* no room in the model to count what it would add */
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_NOTIFY_IMPORT, "NOTIFY_IMPORT fd=%d notify_fd=%d flags=%#x id=%u pad=%#x%s",
		 c.fd, a.fd, a.flags, a.id, a.pad, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		if (a.flags || a.pad || a.id)
			x_err(&x, EINVAL, 0);
		else if (kind == 1)
			x_err(&x, EINVAL, 0);
		else if (kind == 2)
			x_err(&x, EBADF, 0);
		else if (f->nsync < 400 && file_strict(f))
			x_ok(&x, ENOMEM, 0);
		else
			x_ok(&x, ENOMEM, EDQUOT, 0);
	}
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_NOTIFY_IMPORT, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	struct fz_sync *s = find_sync(f, a.id);

	if (a.id >= 2048 || (s && s->kind != DRM_NPU_SYNC_NOTIFY && file_strict(f))) {
		fz_finding("imported notify id %u", a.id);
		return;
	}
	if (!s && f->nsync < FZ_SYNCS)
		f->sync[f->nsync++] = (struct fz_sync){ .id = a.id, .kind = DRM_NPU_SYNC_NOTIFY };
}

/*
 * A context holds at most DRM_NPU_PARAM_SYNCS_PER_CONTEXT events and notifies:
 * fill one up (EDQUOT exactly there), then give them all back. Many calls.
 */
void op_sync_quota(void)
{
	struct fz_file *f = pick_file();
	uint32_t max = (uint32_t)fz->params[DRM_NPU_PARAM_SYNCS_PER_CONTEXT];
	uint32_t *ids = (uint32_t *)(fz->scratch + 8192), n = 0, i;
	bool strict = file_strict(f) && fz->depth == 0;
	int fd = file_fd(f);

	if (max > 1024 || max + f->nsync > 2048)
		return;
	for (i = 0; i < max + 2; i++) {
		struct drm_npu_sync_create a = { .kind = i & 1 ? DRM_NPU_SYNC_NOTIFY : DRM_NPU_SYNC_EVENT };
		struct fz_expect x;
		long ret;

		fz_begin(OP_SYNC_QUOTA, "SYNC_CREATE fd=%d kind=%u (quota: %u held)", fd, a.kind,
			 n + f->nsync);
		if (!strict)
			x_ok(&x, ENOSPC, EDQUOT, ENOMEM, 0);
		else if (n + f->nsync >= max)
			x_err(&x, EDQUOT, 0);
		else
			x_ok(&x, ENOSPC, ENOMEM, 0);
		ret = fz_ioctl(fd, DRM_IOCTL_NPU_SYNC_CREATE, &a);
		fz_end(&x, ret);
		if (ret)
			break;
		ids[n++] = a.id;
	}
	for (i = 0; i < n; i++) {
		struct drm_npu_sync_destroy d = { .id = ids[i] };
		struct fz_expect x;

		fz_begin(OP_SYNC_QUOTA, "SYNC_DESTROY fd=%d id=%u (quota)", fd, d.id);
		x_ok(&x, strict ? 0 : EINVAL, 0);
		fz_end(&x, fz_ioctl(fd, DRM_IOCTL_NPU_SYNC_DESTROY, &d));
	}
}

/* ---- USERPTR ------------------------------------------------------------------------ */
void op_userptr(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_userptr a = { 0 };
	int hidx[FZ_HOSTS], nh = 0;
	struct fz_host *h = NULL;
	int what = 0;	/* 0 plausible, 1 EFAULT pinning, 2 EINVAL, 3 ENOMEM, 4 EFAULT early */
	bool overlap = false, maybe_overlap = false;
	struct fz_expect x;
	struct ioc c;
	long ret;

	for (int i = 0; i < FZ_HOSTS; i++)
		if (fz->hosts[i].used)
			hidx[nh++] = i;
	if (nh && chance(850)) {
		uint64_t pages, first, n;

		h = &fz->hosts[hidx[rnd_below(nh)]];
		pages = h->len / 4096;
		first = rnd_below(pages);
		n = rnd_range(1, pages - first);
		a.addr = (uintptr_t)h->addr + first * 4096;
		a.size = n * 4096;
		if (h->ro ? chance(850) : chance(150))
			a.flags = DRM_NPU_USERPTR_READ_ONLY;
		if (h->ro && !a.flags)
			what = 1;
	} else {
		switch (rnd_below(8)) {
		case 0:		/* nothing mapped there */
			a.addr = (uintptr_t)fz->guard;
			a.size = 4096;
			what = 1;
			break;
		case 1:		/* runs into unmapped memory */
			a.addr = (uintptr_t)fz->guard - 4096;
			a.size = 2 * 4096;
			what = 1;
			break;
		case 2:		/* a kernel address */
			a.addr = 0xffff888000000000ull;
			a.size = 4096;
			what = 4;
			break;
		case 3:		/* unaligned or zero */
			a.addr = chance(500) ? 0 : (uintptr_t)fz->scratch + 1 + rnd_below(4095);
			a.size = chance(500) ? 0 : 4096 + rnd_range(1, 4095);
			what = 2;
			break;
		case 4:		/* wraps around */
			a.addr = UINT64_MAX - 4095;
			a.size = 2 * 4096;
			what = 2;
			break;
		case 5:		/* more than the machine has */
			a.addr = (uintptr_t)fz->scratch;
			a.size = (1ull << rnd_range(36, 46));
			what = 3;
			break;
		case 6: {	/* a mapping of a buffer: device memory, not pages */
			struct fz_map *m = NULL;

			for (int i = 0; i < FZ_MAPS && !m; i++)
				if (fz->maps[i].used)
					m = &fz->maps[i];
			if (!m) {
				a.addr = (uintptr_t)fz->guard;
				a.size = 4096;
			} else {
				a.addr = (uintptr_t)m->addr;
				a.size = 4096;
			}
			what = 1;
			break;
		}
		default:	/* our own memory, read-only for the device: harmless */
			a.addr = (uintptr_t)fz->scratch;
			a.size = 4096 * rnd_range(1, 4);
			a.flags = DRM_NPU_USERPTR_READ_ONLY;
			break;
		}
	}
	if (chance(15)) {
		a.flags |= rnd_garbage32() & ~DRM_NPU_USERPTR_READ_ONLY;
		if (a.flags & ~DRM_NPU_USERPTR_READ_ONLY)
			what = 2;
	}
	if (chance(10)) {
		a.handle = rnd_garbage32() | 1;
		what = 2;
	}
	if (chance(10)) {
		a.device_va = rnd_garbage64() | 1;
		what = 2;
	}
	if (f->nbo == FZ_BOS && !what) {
		a.handle = 1;	/* no room in the model */
		what = 2;
	}
	/* Registered already by this context (through this mm)? */
	if (f->nur == FZ_URANGES)
		maybe_overlap = true;	/* the model lost track */
	for (int i = 0; i < f->nur; i++) {
		const struct fz_urange *u = &f->ur[i];

		if (a.addr < u->addr + u->size && u->addr < a.addr + a.size) {
			if (u->zombie)
				maybe_overlap = true;
			else
				overlap = true;
		}
	}
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_USERPTR, "USERPTR fd=%d addr=%#llx size=%#llx flags=%#x handle=%u va=%#llx%s",
		 c.fd, (unsigned long long)a.addr, (unsigned long long)a.size, a.flags, a.handle,
		 (unsigned long long)a.device_va, ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		bool invalid = (a.flags & ~DRM_NPU_USERPTR_READ_ONLY) || a.handle || a.device_va ||
			       !a.addr || !a.size || a.addr % 4096 || a.size % 4096 ||
			       a.addr + a.size < a.addr;

		if (invalid)
			x_err(&x, EINVAL, 0);
		else if (what == 3)
			x_err(&x, ENOMEM, 0);
		else if (what == 4)
			x_err(&x, EFAULT, 0);
		else if (what == 1 && (overlap || maybe_overlap || !file_strict(f)))
			x_err(&x, EFAULT, EEXIST, 0);	/* the overlap is found first */
		else if (what == 1)
			x_err(&x, EFAULT, 0);
		else if (overlap && file_strict(f))
			x_err(&x, EEXIST, 0);
		else if (overlap || maybe_overlap || !file_strict(f))
			x_ok(&x, EEXIST, ENOMEM, 0);
		else
			x_ok(&x, ENOMEM, 0);
		if (what == 1 && fz->unpriv)
			x_allow(&x, ENOMEM);	/* RLIMIT_MEMLOCK is checked before pinning */
	}
	uint64_t addr = a.addr, size = a.size;
	bool ro = a.flags & DRM_NPU_USERPTR_READ_ONLY;

	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_USERPTR, c.arg);
	if (!fz_end(&x, ret) || ret || c.bad)
		return;
	if (a.device_va < DRM_NPU_VA_BASE || a.device_va % 4096 || a.device_va + size > DRM_NPU_VA_END) {
		fz_finding("device va %#llx", (unsigned long long)a.device_va);
		return;
	}
	if (f->nur < FZ_URANGES)
		f->ur[f->nur++] = (struct fz_urange){ .addr = addr, .size = size };
	if (!h) {
		/* Our own memory: close it at once, nothing may write there. */
		struct drm_gem_close g = { .handle = a.handle };

		ioctl(c.fd, DRM_IOCTL_GEM_CLOSE, &g);
		f->ur[f->nur - 1].zombie = true;
		return;
	}
	struct fz_bo *b = add_bo(f);

	if (!b)
		return;
	b->handle = a.handle;
	b->obj = new_obj();
	b->size = size;
	b->va = a.device_va;
	b->page_size = 4096;
	b->user = true;
	b->user_ro = ro || h->ro;
	b->uaddr = addr;
	b->info = true;
	b->mine = true;
	b->user_known = true;
	if (va_overlaps(f, b, b->va, b->size) && file_strict(f))
		fz_finding("device va %#llx+%#llx overlaps another buffer",
			   (unsigned long long)b->va, (unsigned long long)b->size);
}

/* ---- SUBMIT and WAIT ---------------------------------------------------------------- */
struct range {
	uint64_t va, len;
	bool fault;	/* may fault on the device */
};

/* A range in one of f's buffers, `align`-aligned, at most `max` bytes. */
static struct range pick_range(struct fz_file *f, uint64_t align, uint64_t max, bool write)
{
	struct fz_bo *b = pick_bo(f, false);
	struct range r = { 0 };

	if (!b || !b->va || !b->size || chance(15)) {
		/* Somewhere in the address space: likely nothing there. */
		r.va = align_down(DRM_NPU_VA_BASE + rnd_below(1ull << 34), align);
		r.len = align_down(rnd_range(align, 64 * KIB), align);
		r.fault = true;
		if (f->ngone && chance(500)) {
			/* Where a buffer it closed was: the next one may go there. */
			uint32_t k = (uint32_t)rnd_below(f->ngone < FZ_GONE ? f->ngone : FZ_GONE);

			r.va = align_down(f->gone_va[k], align);
			r.len = align_down(rnd_range(align, f->gone_len[k] < 64 * KIB ?
							     f->gone_len[k] : 64 * KIB), align);
			if (r.len < align)
				r.len = align;
		}
		return r;
	}
	if (max > b->size)
		max = b->size;
	uint64_t off = align_down(rnd_below(b->size), align);

	if (chance(800))
		r.len = rnd_range(align, chance(900) ? 4 * KIB : 64 * KIB);
	else
		r.len = rnd_range(align, max);
	if (r.len > max)
		r.len = max;
	r.len = align_down(r.len, align);
	if (r.len < align)
		r.len = align;
	if (off + r.len > b->size) {
		if (chance(980))
			off = align_down(b->size - r.len, align);
		else
			r.fault = true;	/* past its end */
	}
	r.va = b->va + off;
	if (write && b->user_ro)
		r.fault = true;
	if (!b->info)
		r.fault = true;	/* imported: its va is a guess until BO_INFO */
	return r;
}

/* Kernel launch arguments, written through a CPU mapping of one of f's buffers. */
static bool kernel_args(struct fz_file *f, uint64_t *va, bool *fault)
{
	struct npu_op_args *k;
	struct fz_map *m = NULL;
	struct fz_bo *b = NULL;
	int idx[FZ_MAPS], n = 0;
	uint64_t off;

	for (int i = 0; i < FZ_MAPS; i++) {
		struct fz_map *mm = &fz->maps[i];

		if (mm->used && mm->writable && mm->len >= sizeof(*k) + 8 && find_obj(f, mm->obj))
			idx[n++] = i;
	}
	if (!n)
		return false;
	m = &fz->maps[idx[rnd_below(n)]];
	b = find_obj(f, m->obj);
	off = align_down(rnd_below(m->len - sizeof(*k)), 8);
	k = (struct npu_op_args *)(m->addr + off);
	*va = b->va + m->bo_off + off;

	struct npu_op_args a;
	static const uint32_t ops[] = {
		NPU_OP_ADD, NPU_OP_SUB, NPU_OP_MUL, NPU_OP_DIV, NPU_OP_MAX, NPU_OP_MIN,
		NPU_OP_RELU, NPU_OP_GELU, NPU_OP_SIGMOID, NPU_OP_TANH, NPU_OP_EXP,
		NPU_OP_GEMM, NPU_OP_SOFTMAX, NPU_OP_LAYERNORM, NPU_OP_REDUCE_SUM,
		NPU_OP_REDUCE_MEAN, NPU_OP_REDUCE_MAX, NPU_OP_TRANSPOSE, NPU_OP_CAST,
	};
	uint64_t shape[3][NPU_MAX_DIMS] = { { 0 } };
	uint32_t ndim = (uint32_t)rnd_range(1, 3), dt[3] = { NPU_DT_F32, NPU_DT_F32, NPU_DT_F32 };
	uint32_t nin = 2;

	memset(&a, 0, sizeof(a));
	a.op = ops[rnd_below(ARRAY_LEN(ops))];
	for (uint32_t d = 0; d < ndim; d++)
		shape[0][d] = rnd_range(1, d ? 16 : 64);
	memcpy(shape[1], shape[0], sizeof(shape[0]));
	memcpy(shape[2], shape[0], sizeof(shape[0]));
	switch (a.op) {
	case NPU_OP_GEMM: {
		uint64_t M = rnd_range(1, 32), N = rnd_range(1, 32), K = rnd_range(1, 32);

		ndim = 2;
		a.flags = (uint32_t)rnd_below(4);
		shape[0][0] = a.flags & NPU_OP_F_TRANS_A ? K : M;
		shape[0][1] = a.flags & NPU_OP_F_TRANS_A ? M : K;
		shape[1][0] = a.flags & NPU_OP_F_TRANS_B ? N : K;
		shape[1][1] = a.flags & NPU_OP_F_TRANS_B ? K : N;
		shape[2][0] = M;
		shape[2][1] = N;
		a.alpha = 1.0f;
		a.beta = chance(500) ? 0.0f : 0.5f;
		break;
	}
	case NPU_OP_SOFTMAX:
	case NPU_OP_LAYERNORM:
		a.eps = 1e-5f;
		/* fall through */
	case NPU_OP_RELU: case NPU_OP_GELU: case NPU_OP_SIGMOID: case NPU_OP_TANH:
	case NPU_OP_EXP:
		nin = 1;
		break;
	case NPU_OP_REDUCE_SUM: case NPU_OP_REDUCE_MEAN: case NPU_OP_REDUCE_MAX:
		nin = 1;
		a.axis = (uint32_t)rnd_below(ndim);
		shape[2][a.axis] = 1;
		break;
	case NPU_OP_TRANSPOSE: {
		uint32_t p[3] = { 0, 1, 2 };

		nin = 1;
		for (uint32_t i = ndim - 1; i > 0; i--) {
			uint32_t j = (uint32_t)rnd_below(i + 1), t = p[i];

			p[i] = p[j];
			p[j] = t;
		}
		for (uint32_t d = 0; d < ndim; d++) {
			a.perm[d] = p[d];
			shape[2][d] = shape[0][p[d]];
		}
		dt[0] = dt[2] = (uint32_t)rnd_below(3);
		break;
	}
	case NPU_OP_CAST:
		nin = 1;
		dt[0] = (uint32_t)rnd_below(3);
		dt[2] = dt[0] == NPU_DT_F32 ? 1 + (uint32_t)rnd_below(2) : NPU_DT_F32;
		break;
	}
	for (uint32_t t = 0; t < 3; t++) {
		struct npu_op_tensor *ts = t < 2 ? &a.in[t] : &a.out;
		uint64_t stride = 1, elems = 1, bytes;
		struct fz_bo *d = pick_bo(f, true);

		if (t == 1 && nin < 2)
			continue;
		ts->dtype = dt[t];
		ts->ndim = ndim;
		for (int dd = (int)ndim - 1; dd >= 0; dd--) {
			ts->shape[dd] = shape[t][dd];
			ts->stride[dd] = (t < 2 && chance(100)) ? 0 : stride;
			stride *= shape[t][dd];
			elems *= shape[t][dd];
		}
		bytes = elems * (dt[t] == NPU_DT_F32 ? 4 : 2);
		if (!d || d->size < bytes || chance(5)) {
			ts->va = DRM_NPU_VA_BASE + align_down(rnd_below(1ull << 32), 4);
			*fault = true;
		} else {
			ts->va = d->va + align_down(rnd_below(d->size - bytes + 1), 4);
			if (d->user_ro && t == 2)
				*fault = true;
		}
	}
	if (chance(40)) {
		/* One field made up: the device must refuse, not misbehave. */
		uint8_t *p = (uint8_t *)&a;
		size_t at = align_down(rnd_below(sizeof(a)), 4);
		uint32_t v = chance(500) ? rnd_garbage32() : (uint32_t)rnd_below(70);

		memcpy(p + at, &v, 4);
		/* Keep the work small: nothing huge passes the device's checks. */
		for (uint32_t t = 0; t < 3; t++) {
			struct npu_op_tensor *ts = t < 2 ? &a.in[t] : &a.out;

			for (int dd = 0; dd < NPU_MAX_DIMS; dd++)
				if (ts->shape[dd] > 64 && ts->shape[dd] < (1ull << 31) + 1)
					ts->shape[dd] = (1ull << 31) + 1;
		}
		*fault = true;
	}
	memcpy(k, &a, sizeof(a));
	*fault = true;	/* tensors are not held: a buffer closed meanwhile faults */
	return true;
}

/* A task that is well formed and names what f holds. */
static void task_normal(struct fz_file *f, struct drm_npu_task *k, bool cheap, bool *may_fail,
			bool *blocks)
{
	unsigned int r = (unsigned int)rnd_below(100);
	struct range a, b;
	struct fz_sync *s;
	uint64_t va;

	if (cheap && r >= 12)
		r = rnd_below(3) ? 0 : (rnd_below(2) ? 8 : 70);
	if (r < 10) {
		k->type = DRM_NPU_TASK_NOP;
	} else if (r < 15) {
		k->type = DRM_NPU_TASK_BARRIER;
	} else if (r < 35) {
		k->type = DRM_NPU_TASK_FILL;
		a = pick_range(f, 4, 4 * MIB, true);
		k->args[0] = a.va;
		k->args[1] = a.len;
		k->args[2] = rnd32();
		*may_fail |= a.fault;
	} else if (r < 55) {
		k->type = DRM_NPU_TASK_COPY;
		a = pick_range(f, 1, 4 * MIB, true);
		b = pick_range(f, 1, 4 * MIB, false);
		k->args[0] = a.va;
		k->args[1] = b.va;
		k->args[2] = a.len < b.len ? a.len : b.len;
		*may_fail |= a.fault || b.fault;
	} else if (r < 63) {
		k->type = DRM_NPU_TASK_TIMESTAMP;
		a = pick_range(f, 8, 8, true);
		k->args[0] = a.va;
		*may_fail |= a.fault;
	} else if (r < 69) {
		k->type = DRM_NPU_TASK_KERNEL;
		if (kernel_args(f, &va, may_fail)) {
			k->args[0] = va;
		} else {
			k->args[0] = DRM_NPU_VA_BASE + align_down(rnd_below(1ull << 34), 8);
			*may_fail = true;
		}
		k->args[1] = rnd_below(3);
		if (chance(50))
			k->args[1] = rnd_range(3, DRM_NPU_MAX_BLOCK_DIM);
		/* The block's size: a short one fails on the device. */
		k->args[2] = sizeof(struct npu_op_args);
		if (chance(30)) {
			k->args[2] = rnd_range(1, sizeof(struct npu_op_args) - 1);
			*may_fail = true;
		} else if (chance(30)) {
			k->args[2] = rnd_range(sizeof(struct npu_op_args), DRM_NPU_KERNEL_ARGS_MAX);
			*may_fail = true;	/* the range may run past the buffer */
		}
	} else {
		int ev = rnd_below(2) ? DRM_NPU_SYNC_EVENT : DRM_NPU_SYNC_NOTIFY;

		s = pick_sync(f, ev);
		if (!s) {
			k->type = DRM_NPU_TASK_BARRIER;
			return;
		}
		k->args[0] = s->id;
		if (ev == DRM_NPU_SYNC_EVENT) {
			unsigned int w = (unsigned int)rnd_below(10);

			if (w < 5 || (w < 8 && !s->recorded && chance(700))) {
				k->type = DRM_NPU_TASK_EVENT_RECORD;
				s->recorded = true;
			} else if (w < 8) {
				k->type = DRM_NPU_TASK_EVENT_WAIT;
				*blocks |= !s->recorded;
			} else {
				k->type = DRM_NPU_TASK_EVENT_RESET;
				s->recorded = false;
			}
		} else if (rnd_below(5) < 3 || !s->recorded) {
			k->type = DRM_NPU_TASK_NOTIFY_RECORD;
			s->recorded = true;
		} else {
			k->type = DRM_NPU_TASK_NOTIFY_WAIT;
			s->recorded = false;
		}
		if (!file_strict(f))
			*may_fail = true;
	}
}

/* Malformed: the driver refuses the batch before anything happens. */
static void task_malformed(struct drm_npu_task *k)
{
	memset(k, 0, sizeof(*k));
	switch (rnd_below(9)) {
	case 0:
		k->type = chance(500) ? 3 : (uint16_t)rnd_range(12, 0xffff);
		break;
	case 1:
		k->type = (uint16_t)rnd_below(12);
		k->flags = (uint16_t)(rnd32() | 1);
		break;
	case 2:
		k->type = (uint16_t)rnd_below(12);
		k->pad = rnd32() | 1;
		break;
	case 3:
		k->type = DRM_NPU_TASK_NOP;
		k->args[rnd_below(7)] = rnd_garbage64() | 1;
		break;
	case 4:
		k->type = DRM_NPU_TASK_FILL;
		k->args[0] = DRM_NPU_VA_BASE + 1 + 4 * rnd_below(100);
		k->args[1] = 4096;
		break;
	case 5:
		k->type = DRM_NPU_TASK_FILL;
		k->args[0] = DRM_NPU_VA_BASE;
		if (rnd_below(2))
			k->args[1] = 0;
		else
			k->args[1] = 4096, k->args[2] = (1ull << 32) + rnd_below(1000);
		break;
	case 6:
		k->type = DRM_NPU_TASK_COPY;
		k->args[0] = DRM_NPU_VA_BASE;
		k->args[1] = DRM_NPU_VA_BASE + 4096;
		break;
	case 7:
		k->type = DRM_NPU_TASK_TIMESTAMP;
		k->args[0] = DRM_NPU_VA_BASE + 1 + rnd_below(7);
		break;
	default:
		k->type = DRM_NPU_TASK_KERNEL;
		k->args[0] = DRM_NPU_VA_BASE;
		k->args[2] = sizeof(struct npu_op_args);
		/* too many cores, an empty or an oversized argument block */
		switch (rnd_below(3)) {
		case 0:
			k->args[1] = DRM_NPU_MAX_BLOCK_DIM + 1 + rnd_below(1000);
			break;
		case 1:
			k->args[2] = 0;
			break;
		default:
			k->args[2] = DRM_NPU_KERNEL_ARGS_MAX + 1 +
				     (chance(2) ? rnd_below(1000) : rnd_garbage64() >> 1);
		}
	}
}

/* An event or notify the context does not hold, or one of the wrong kind. */
static void task_not_held(struct fz_file *f, struct drm_npu_task *k)
{
	struct fz_sync *e = pick_sync(f, 0);

	memset(k, 0, sizeof(*k));
	k->type = (uint16_t)rnd_range(DRM_NPU_TASK_EVENT_RECORD, DRM_NPU_TASK_NOTIFY_WAIT);
	if (e && chance(500))
		k->type = e->kind == DRM_NPU_SYNC_EVENT ?
			  (uint16_t)rnd_range(DRM_NPU_TASK_NOTIFY_RECORD, DRM_NPU_TASK_NOTIFY_WAIT) :
			  (uint16_t)rnd_range(DRM_NPU_TASK_EVENT_RECORD, DRM_NPU_TASK_EVENT_RESET),
		k->args[0] = e->id;
	else if (chance(100))
		k->args[0] = (1ull << 32) + rnd_below(8);
	else
		k->args[0] = unused_sync_id(f);
}

/* Well formed, with wild addresses and sizes: the device faults. */
static void task_wild(struct drm_npu_task *k)
{
	memset(k, 0, sizeof(*k));
	k->type = rnd_below(2) ? DRM_NPU_TASK_FILL : DRM_NPU_TASK_COPY;
	if (k->type == DRM_NPU_TASK_FILL) {
		k->args[0] = align_down(rnd_garbage64(), 4);
		k->args[1] = align_down(rnd_garbage64(), 4);
		if (!k->args[1])
			k->args[1] = 4;
		k->args[2] = rnd32();
	} else {
		k->args[0] = rnd_garbage64();
		k->args[1] = rnd_garbage64();
		k->args[2] = rnd_garbage64() | 1;
	}
}

/*
 * Fill t[0..n) with tasks for f. Most batches are all well formed; some
 * have one malformed task (*invalid |= FZ_BAD_TASK), one naming an event
 * the context does not hold (FZ_BAD_SYNC, when that is known), or wild
 * addresses. *may_fail: the device may fail it; *blocks: it may wait on
 * an event or notify that nobody records.
 */
bool build_tasks(struct fz_file *f, int q, struct drm_npu_task *t, uint32_t n,
		 unsigned int *invalid, bool *may_fail, bool *blocks)
{
	bool cheap = n > 16;	/* long batches of cheap tasks only */
	uint32_t bad_at = chance(100) ? (uint32_t)rnd_below(n) : n;
	uint32_t nohold_at = chance(50) ? (uint32_t)rnd_below(n) : n;
	uint32_t wild_at = chance(30) ? (uint32_t)rnd_below(n) : n;

	(void)q;
	*invalid = 0;
	*may_fail = *blocks = false;
	for (uint32_t i = 0; i < n; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		task_normal(f, &t[i], cheap, may_fail, blocks);
	}
	if (wild_at < n) {
		task_wild(&t[wild_at]);
		*may_fail = true;
	}
	if (nohold_at < n) {
		task_not_held(f, &t[nohold_at]);
		if (file_strict(f))
			*invalid |= FZ_BAD_SYNC;
		else
			*may_fail = true;
	}
	if (bad_at < n) {
		task_malformed(&t[bad_at]);
		*invalid |= FZ_BAD_TASK;
	}
	/* A run of one of the file's task lists, now and then. */
	if ((f->nlist && chance(120)) || chance(5)) {
		uint32_t at = (uint32_t)rnd_below(n);

		/* Not over the task that makes the batch bad: it must stay bad. */
		if (at != bad_at && at != nohold_at)
			list_run_task(f, &t[at], invalid, may_fail, blocks);
	}
	for (uint32_t i = 0; i < n; i++)
		f->launched |= t[i].type == DRM_NPU_TASK_KERNEL;
	return true;
}

/*
 * What SUBMIT may return. The uapi lists the errors, not the order in
 * which they are found: a batch with several things wrong may fail with
 * any of their errors, never succeed; a batch with nothing wrong may
 * fail only for the reasons that do not depend on it (a failed queue, no
 * hardware queue for the default one, memory).
 */
struct outcome {
	struct fz_expect x;
	bool bad;	/* something surely wrong */
};

static void oc_maybe(struct outcome *o, int e)
{
	x_allow(&o->x, e);
}

static void oc_sure(struct outcome *o, int e)
{
	x_allow(&o->x, e);
	o->bad = true;
}

static void oc_done(struct outcome *o)
{
	o->x.ok = !o->bad;
}

void op_submit(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_task *tasks = (struct drm_npu_task *)fz->scratch;
	struct drm_npu_syncobj *in = (struct drm_npu_syncobj *)(fz->scratch + 17 * 1024);
	struct drm_npu_syncobj *out = (struct drm_npu_syncobj *)(fz->scratch + 18 * 1024);
	struct drm_npu_submit a = { 0 };
	struct fz_syncobj *outs[DRM_NPU_SUBMIT_MAX_SYNCOBJS];
	bool may_fail, blocks, ptr_bad = false;
	struct outcome o = { 0 };
	unsigned int invalid;
	uint32_t n, qi;
	int r, so_bad = 0;	/* 1 EINVAL count/flags, 2 EFAULT, 3 ENOENT */
	struct ioc c;
	long ret;

	r = pick_queue(f, false);
	if (r < 0 || chance(40))
		qi = chance(600) ? (uint32_t)rnd_below(FZ_QUEUES) : FZ_QUEUES + rnd_garbage32() % 1000;
	else
		qi = (uint32_t)r;
	a.queue = qi;
	r = (int)rnd_below(100);
	n = r < 80 ? (uint32_t)rnd_range(1, 4) : r < 97 ? (uint32_t)rnd_range(5, 16) :
	    (uint32_t)rnd_range(17, DRM_NPU_SUBMIT_MAX_TASKS);
	build_tasks(f, (int)qi, tasks, n, &invalid, &may_fail, &blocks);
	a.tasks = (uintptr_t)tasks;
	a.count = n;
	if (chance(15))
		a.count = chance(500) ? 0 : DRM_NPU_SUBMIT_MAX_TASKS + 1 +
			  (uint32_t)rnd_below(chance(500) ? 10 : UINT32_MAX - 300);
	if (chance(10))
		a.flags = rnd_garbage32() | 1;
	if (chance(10))
		a.pad = rnd_garbage32() | 1;
	if (chance(10))
		a.seq = rnd64();	/* an output for the ioctl */
	if (chance(15)) {
		/* The tasks run into a page that is not there. */
		size_t len = (size_t)n * sizeof(*tasks);

		if (len <= 16 * 1024 && chance(500)) {
			memmove(fz->guard - len + 32, tasks, len - 32);
			a.tasks = (uintptr_t)(fz->guard - len + 32);
		} else {
			a.tasks = (uintptr_t)bad_ptr(len);
		}
		ptr_bad = true;
	}
	/* Dependencies: any syncobj of ours; one without a fence is refused. */
	if (chance(120) && f->nso) {
		uint32_t k = (uint32_t)rnd_range(1, 3);

		for (uint32_t i = 0; i < k; i++) {
			struct fz_syncobj *s = pick_so(f);

			in[i] = (struct drm_npu_syncobj){ .handle = s->handle };
			if (s->timeline && s->last_point && chance(700))
				in[i].point = rnd_range(1, s->last_point + (chance(100) ? 2 : 0));
		}
		a.in_syncobjs = (uintptr_t)in;
		a.in_count = k;
	}
	if (chance(150) && f->nso) {
		uint32_t k = (uint32_t)rnd_range(1, 3);

		for (uint32_t i = 0; i < k; i++) {
			struct fz_syncobj *s = pick_so(f);

			outs[i] = s;
			out[i] = (struct drm_npu_syncobj){ .handle = s->handle };
			if (chance(400))
				out[i].point = s->last_point + rnd_range(1, 3);
		}
		a.out_syncobjs = (uintptr_t)out;
		a.out_count = k;
	}
	if (chance(20)) {
		switch (rnd_below(5)) {
		case 0:
			a.in_count = DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1 + (uint32_t)rnd_below(100);
			a.in_syncobjs = (uintptr_t)in;
			so_bad = 1;
			break;
		case 1:
			a.out_count = a.out_count ? a.out_count : 1;
			out[0] = (struct drm_npu_syncobj){ .handle = f->nso ? f->so[0].handle : 1,
							   .flags = rnd32() | 1 };
			outs[0] = NULL;
			a.out_syncobjs = (uintptr_t)out;
			so_bad = 1;
			break;
		case 2:
			a.in_count = (uint32_t)rnd_range(1, 3);
			a.in_syncobjs = (uintptr_t)bad_ptr(a.in_count * sizeof(*in));
			so_bad = 2;
			break;
		case 3:
			a.out_count = 1;
			out[0] = (struct drm_npu_syncobj){ .handle = unused_so_handle(f) };
			outs[0] = NULL;
			a.out_syncobjs = (uintptr_t)out;
			so_bad = 3;
			break;
		default:
			a.in_count = 1;
			in[0] = (struct drm_npu_syncobj){ .handle = unused_so_handle(f) };
			a.in_syncobjs = (uintptr_t)in;
			so_bad = 3;
		}
	}
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_SUBMIT, "SUBMIT fd=%d queue=%u count=%u flags=%#x pad=%#x in=%u out=%u%s%s%s%s",
		 c.fd, a.queue, a.count, a.flags, a.pad, a.in_count, a.out_count,
		 ptr_bad ? " [bad tasks]" : "", invalid ? " [invalid]" : "",
		 may_fail ? " [may fault]" : "", ioc_str(&c));
	for (uint32_t i = 0; a.in_syncobjs == (uintptr_t)in && i < a.in_count && i < 4; i++) {
		struct fz_syncobj *s = find_so(f, in[i].handle);

		fz_more(" in%u=%u@%llu%s", i, in[i].handle, (unsigned long long)in[i].point,
			!s ? "(?)" : s->risky ? "(risky)" : !s->fence ? "(no fence)" : "");
	}
	for (uint32_t i = 0; a.out_syncobjs == (uintptr_t)out && i < a.out_count && i < 4; i++)
		fz_more(" out%u=%u@%llu", i, out[i].handle, (unsigned long long)out[i].point);
	for (uint32_t i = 0; i < a.count && i < 4 && !ptr_bad; i++)
		fz_more(" t%u=%u:%#llx,%#llx,%#llx", i, tasks[i].type,
			(unsigned long long)tasks[i].args[0], (unsigned long long)tasks[i].args[1],
			(unsigned long long)tasks[i].args[2]);

	x_none(&o.x);
	oc_maybe(&o, ENOMEM);
	if (a.flags || a.pad || !a.count || a.count > DRM_NPU_SUBMIT_MAX_TASKS) {
		/* Refused before anything else is read. */
		x_none(&o.x);
		oc_sure(&o, EINVAL);
	} else {
		if (ptr_bad)
			oc_sure(&o, EFAULT);
		if (invalid)
			oc_sure(&o, EINVAL);
		if (so_bad == 1)
			oc_sure(&o, EINVAL);
		if (so_bad == 2)
			oc_sure(&o, EFAULT);
		if (so_bad == 3 && file_strict(f))
			oc_sure(&o, ENOENT);
		else if (so_bad == 3)
			oc_maybe(&o, ENOENT);
		for (uint32_t i = 0; a.in_syncobjs == (uintptr_t)in &&
				     i < a.in_count && i < DRM_NPU_SUBMIT_MAX_SYNCOBJS; i++) {
			struct fz_syncobj *s = find_so(f, in[i].handle);

			if (!file_strict(f) || !s || s->risky) {
				oc_maybe(&o, EINVAL);
				oc_maybe(&o, ENOENT);
			} else if (!s->fence ||
				   (in[i].point && (!s->timeline || in[i].point > s->last_point))) {
				oc_sure(&o, EINVAL);	/* nothing to wait for */
			}
		}
		if (!file_strict(f)) {
			oc_maybe(&o, ENOENT);	/* syncobjs, events the child took */
			oc_maybe(&o, EINVAL);
		}
		/* The queue. */
		if (qi >= FZ_QUEUES || (qi && queue_sure_absent(f, (int)qi)))
			oc_sure(&o, EINVAL);
		else if (qi && !queue_sure_live(f, (int)qi))
			oc_maybe(&o, EINVAL);
		if (qi == 0 && !queue_sure_live(f, 0)) {
			oc_maybe(&o, EBUSY);	/* no hardware queue for the default one */
			oc_maybe(&o, EIO);	/* a wedged device makes no queue */
		}
		if (qi >= FZ_QUEUES || queue_may_fail(f, (int)qi))
			oc_maybe(&o, EIO);	/* failed earlier, takes no more work */
	}
	oc_done(&o);
	ioc_expect(&c, &o.x);
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_SUBMIT, c.arg);
	if (!fz_end(&o.x, ret) || c.bad || qi >= FZ_QUEUES)
		return;

	struct fz_queue *q = &f->q[qi];

	if (ret == -EIO) {
		q->may_fail = q->failed = true;
		if (qi == 0 && q->state == Q_NONE)
			q->state = Q_UNKNOWN;	/* failed, or never made (a wedged device) */
		/* A failed queue stays failed: destroy it next, often. */
		if (chance(400)) {
			fz->followup_file = file_index(f) + 1;
			fz->followup_queue = (int)qi;
		}
	}
	if (ret == -EBUSY && qi == 0 && q->state == Q_UNKNOWN && !q->pending)
		q->state = Q_NONE;
	if (ret)
		return;
	uint64_t seq = ((struct drm_npu_submit *)c.arg)->seq;

	if (file_strict(f) && !q->pending && !q->seq_fuzzy) {
		uint64_t want = q->state == Q_NONE ? 1 : q->max_seq + 1;

		if ((q->state != Q_UNKNOWN && seq != want) || seq <= q->max_seq)
			fz_finding("seq %llu, expected %llu", (unsigned long long)seq,
				   (unsigned long long)want);
	}
	q->state = Q_LIVE;
	if (seq > q->max_seq)
		q->max_seq = seq;
	q->may_fail |= may_fail;
	q->blocked |= blocks;
	for (uint32_t i = 0; i < a.out_count; i++) {
		struct fz_syncobj *s = outs[i];

		if (!s)
			continue;
		if (out[i].point) {
			s->timeline = true;
			if (out[i].point > s->last_point)
				s->last_point = out[i].point;
		}
		so_add_dep(f, s, (int)qi, seq, !out[i].point);
		if (!out[i].point)
			s->timeline = false, s->last_point = 0;
	}
}

void op_wait(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_wait a = { 0 };
	int qi = pick_queue(f, false), kind;
	struct fz_expect x;
	bool armed = false;
	struct fz_queue *q;
	struct ioc c;
	long ret;

	if (qi < 0 || chance(40))
		a.queue = chance(600) ? (uint32_t)rnd_below(FZ_QUEUES) : rnd_garbage32();
	else
		a.queue = (uint32_t)qi;
	q = a.queue < FZ_QUEUES ? &f->q[a.queue] : NULL;
	kind = (int)rnd_below(100);
	if (!q || kind < 55)
		a.seq = q ? q->max_seq : 1;
	else if (kind < 80)
		a.seq = q->max_seq ? rnd_range(1, q->max_seq) : 0;
	else if (kind < 88)
		a.seq = 0;
	else
		a.seq = q->max_seq + 1000000 + rnd_below(1ull << 40);	/* never handed out */
	switch (q && q->blocked && chance(800) ? 0 : rnd_below(20)) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
		/* polls (mostly, on a queue that may wait for an event) */
		a.deadline_ns = fz_past_deadline();
		break;
	case 10: case 11: case 12: case 13: case 14: case 15: case 16:
		a.deadline_ns = fz_deadline((int64_t)rnd_range(1000, 2000000));
		break;
	case 17: case 18:
		a.deadline_ns = fz_deadline((int64_t)rnd_range(2000000, 30000000));
		break;
	default:
		a.deadline_ns = chance(500) ? DRM_NPU_DEADLINE_NONE : (int64_t)rnd_garbage64();
		armed = true;
	}
	if (chance(20))
		a.status = rnd32(), a.error_task = rnd32(), a.fault_address = rnd64();
	if (chance(30))
		a.flags = rnd_garbage32() | 1;
	if (chance(30))
		a.pad = rnd_garbage32() | 1;
	ioc_pick(&c, f, &a, sizeof(a));
	fz_begin(OP_WAIT, "WAIT fd=%d queue=%u seq=%llu deadline=%lld flags=%#x pad=%#x%s", c.fd,
		 a.queue, (unsigned long long)a.seq, (long long)a.deadline_ns, a.flags, a.pad,
		 ioc_str(&c));
	if (!ioc_expect(&c, &x)) {
		bool beyond = q && a.seq >= q->max_seq + 1000000;

		if (a.flags || a.pad || !q)
			x_err(&x, EINVAL, 0);
		else if (a.queue == 0 && queue_sure_absent(f, 0))
			a.seq ? x_err(&x, EINVAL, 0) : x_ok(&x, 0);
		else if (queue_sure_absent(f, (int)a.queue))
			x_err(&x, EINVAL, 0);
		else if (beyond && queue_sure_live(f, (int)a.queue))
			x_err(&x, EINVAL, 0);
		else {
			x_ok(&x, ETIMEDOUT, EINTR, 0);
			if (queue_may_fail(f, (int)a.queue))
				x_allow(&x, EIO);
			if (!queue_sure_live(f, (int)a.queue) || beyond)
				x_allow(&x, EINVAL);
		}
	}
	if (armed)
		fz_arm_ms(50);
	ret = fz_ioctl(c.fd, DRM_IOCTL_NPU_WAIT, c.arg);
	fz_disarm();
	if (!fz_end(&x, ret) || c.bad || !q || a.flags || a.pad)
		return;
	const struct drm_npu_wait *w = c.arg;

	if (!ret) {
		if (w->status != DRM_NPU_JOB_DONE && (a.seq || q->state == Q_LIVE) && file_strict(f))
			fz_finding("status %u on success", w->status);
		if (a.seq > q->done)
			q->done = a.seq;
	} else if (ret == -EIO) {
		fz_after(" (status %u, task %u, fault %#llx %s)", w->status, w->error_task,
			 (unsigned long long)w->fault_address, w->fault_access ? "write" : "read");
		if (w->status < DRM_NPU_JOB_FAULT || w->status > DRM_NPU_JOB_RESET)
			fz_finding("status %u with EIO", w->status);
		q->may_fail = q->failed = true;
	} else if (ret == -EINTR) {
		/* An absolute deadline: the kernel never writes it back. */
		if (w->deadline_ns != a.deadline_ns)
			fz_finding("deadline_ns %lld after EINTR (was %lld)",
				   (long long)w->deadline_ns, (long long)a.deadline_ns);
	}
}
