// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: the random stream, call bookkeeping and oracles, and the
 * model of what a fuzzing process holds.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

struct fz_proc *fz;
char fz_render[64], fz_card[64];

/* ---- random stream --------------------------------------------------------- */
uint64_t fz_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct fz_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull);

	for (int i = 0; i < 4; i++)
		r->s[i] = fz_splitmix(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rnd64(void)
{
	uint64_t *s = fz->rng.s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint32_t rnd32(void)
{
	return (uint32_t)(rnd64() >> 32);
}

uint64_t rnd_below(uint64_t n)
{
	return n ? rnd64() % n : 0;
}

uint64_t rnd_range(uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	if (hi - lo == UINT64_MAX)
		return rnd64();
	return lo + rnd_below(hi - lo + 1);
}

bool chance(unsigned int per_mille)
{
	return rnd_below(1000) < per_mille;
}

uint64_t rnd_garbage64(void)
{
	static const uint64_t special[] = {
		0, 1, 2, 3, 4, 7, 8, 0xff, 0x100, 0x1000, 0xfff, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
		UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 4095, DRM_NPU_VA_BASE, DRM_NPU_VA_BASE - 1,
		DRM_NPU_VA_END, DRM_NPU_VA_END - 1, DRM_NPU_VA_END - 4096, 1ull << 21, 1ull << 30,
		1ull << 40, 0xffff800000000000ull, 0x00007ffffffff000ull,
	};

	switch (rnd_below(4)) {
	case 0:
		return special[rnd_below(ARRAY_LEN(special))];
	case 1:
		return 1ull << rnd_below(64);
	case 2:
		return (1ull << rnd_below(64)) - 1 + rnd_below(3);
	default:
		return rnd64();
	}
}

uint32_t rnd_garbage32(void)
{
	static const uint32_t special[] = {
		0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 255, 256, 511, 512, 1023, 1024, 4095, 4096,
		65535, 65536, 65537, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
	};

	switch (rnd_below(3)) {
	case 0:
		return special[rnd_below(ARRAY_LEN(special))];
	case 1:
		return 1u << rnd_below(32);
	default:
		return rnd32();
	}
}

/* ---- expectations ----------------------------------------------------------- */
void x_ok(struct fz_expect *x, ...)
{
	va_list ap;
	int e;

	x_none(x);
	x->ok = true;
	va_start(ap, x);
	while ((e = va_arg(ap, int)))
		x_allow(x, e);
	va_end(ap);
}

void x_err(struct fz_expect *x, ...)
{
	va_list ap;
	int e;

	x_none(x);
	va_start(ap, x);
	while ((e = va_arg(ap, int)))
		x_allow(x, e);
	va_end(ap);
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static void expect_str(const struct fz_expect *x, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (x->ok)
		n += snprintf(buf + n, len - n, "0");
	for (int e = 1; e < 192 && n < len; e++)
		if (x_allows(x, e))
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "", ename(e));
}

/* ---- calls ------------------------------------------------------------------ */
static char hist[FZ_HIST][FZ_DESC];
static uint32_t hist_pos;

static void out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_line(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write per line: processes share stdout. */
	if (write(STDOUT_FILENO, buf, n) < 0)
		return;
}

static void hist_store(void)
{
	memcpy(hist[hist_pos % FZ_HIST], fz->desc, FZ_DESC);
	if (fz->depth == 0) {
		memcpy(fz->slot->hist[hist_pos % FZ_HIST], fz->desc, FZ_DESC);
		__atomic_store_n(&fz->slot->hist_pos, hist_pos, __ATOMIC_RELEASE);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fz_begin(int op, const char *fmt, ...)
{
	va_list ap;
	int n;

	fz->t_begin = mono_ns();
	fz->calls++;
	fz->cur_op = op;
	if (fz->depth == 0)
		__atomic_store_n(&fz->slot->calls, fz->calls, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&fz->slot->child_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fz->shared->op_calls[op], 1, __ATOMIC_RELAXED);
	n = snprintf(fz->desc, FZ_DESC, "%s #%llu ", fz->name, (unsigned long long)fz->calls);
	va_start(ap, fmt);
	vsnprintf(fz->desc + n, FZ_DESC - n, fmt, ap);
	va_end(ap);
	hist_pos++;
	hist_store();
}

void fz_more(const char *fmt, ...)
{
	size_t n = strlen(fz->desc);
	va_list ap;

	if (n >= FZ_DESC - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(fz->desc + n, FZ_DESC - n, fmt, ap);
	va_end(ap);
}

void fz_after(const char *fmt, ...)
{
	size_t n = strlen(fz->desc);
	va_list ap;

	if (n >= FZ_DESC - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(fz->desc + n, FZ_DESC - n, fmt, ap);
	va_end(ap);
	hist_store();
	if (fz->verbose && fz->calls >= fz->log_from)
		out_line("%s", fz->desc);
}

void fz_dump_history(void)
{
	out_line("#   the calls before it (oldest first):");
	for (uint32_t i = FZ_HIST - 1; i > 0; i--) {
		const char *h = hist[(hist_pos - i) % FZ_HIST];

		if (h[0] && hist_pos >= i)
			out_line("#     %s", h);
	}
}

static void finding_head(void)
{
	fz->findings++;
	if (fz->depth == 0)
		fz->slot->findings = fz->findings;
	else
		__atomic_add_fetch(&fz->slot->findings, 1, __ATOMIC_RELAXED);
}

void fz_finding(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	finding_head();
	if (fz->findings > 12)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	out_line("# FINDING %s: %s", fz->desc, buf);
	fz_dump_history();
	if (!__atomic_exchange_n(&fz->slot->first_taken, 1, __ATOMIC_ACQ_REL))
		snprintf(fz->slot->first, sizeof(fz->slot->first), "%s%s%s", fz->desc,
			 fz->desc[0] ? ": " : "", buf);
}

void fz_note(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	out_line("# %s: %s", fz->name, buf);
}

bool fz_end(const struct fz_expect *x, long ret)
{
	bool good = ret >= 0 ? x->ok : x_allows(x, (int)-ret);

	if (ret >= 0)
		fz_more(" -> %ld", ret);
	else
		fz_more(" -> -%s", ename((int)-ret));
	hist_store();
	if (ret >= 0)
		__atomic_add_fetch(&fz->shared->op_ok[fz->cur_op], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fz->shared->op_ns[fz->cur_op], mono_ns() - fz->t_begin,
			   __ATOMIC_RELAXED);
	if (fz->verbose && fz->calls >= fz->log_from)
		out_line("%s", fz->desc);
	if (!good) {
		char want[256];

		expect_str(x, want, sizeof(want));
		fz_finding("unexpected %s, expected {%s}",
			   ret >= 0 ? "success" : ename((int)-ret), want);
	}
	return good;
}

/* ---- syscalls ------------------------------------------------------------------ */
long fz_ioctl(int fd, unsigned long req, void *arg)
{
	int r = ioctl(fd, req, arg);

	return r < 0 ? -errno : r;
}

/*
 * Every ms until fz_disarm(), not once: on a loaded guest a worker can be
 * scheduled out for longer than ms between arming and entering the wait,
 * and a single SIGALRM spent before the wait left one with no deadline
 * blocked for good (a hang the watchdog reported as a finding).
 */
void fz_arm_ms(unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	struct itimerval it = { .it_interval = tv, .it_value = tv };

	setitimer(ITIMER_REAL, &it, NULL);
	fz->alarm_armed = true;
}

void fz_disarm(void)
{
	struct itimerval it = { 0 };

	if (!fz->alarm_armed)
		return;
	setitimer(ITIMER_REAL, &it, NULL);
	fz->alarm_armed = false;
}

/* ---- the model ------------------------------------------------------------------ */
uint32_t new_obj(void)
{
	return ++fz->next_obj;
}

int file_index(const struct fz_file *f)
{
	return (int)(f - fz->files);
}

int file_fd(const struct fz_file *f)
{
	return f->fds[rnd_below(f->nfds)];
}

bool file_strict(const struct fz_file *f)
{
	return !f->tainted && !fz->shared->device_reset;
}

struct fz_file *pick_file_maybe(void)
{
	int idx[FZ_FILES], n = 0;

	for (int i = 0; i < FZ_FILES; i++)
		if (fz->files[i].used)
			idx[n++] = i;
	return n ? &fz->files[idx[rnd_below(n)]] : NULL;
}

struct fz_file *pick_file(void)
{
	struct fz_file *f = pick_file_maybe();

	for (int i = 0; !f && i < 3; i++) {
		op_open();
		f = pick_file_maybe();
	}
	if (!f) {
		fz_finding("cannot open %s: giving up", fz_render);
		_exit(3);
	}
	return f;
}

void taint_all(void)
{
	for (int i = 0; i < FZ_FILES; i++)
		if (fz->files[i].used)
			fz->files[i].tainted = true;
}

struct fz_bo *pick_bo(struct fz_file *f, bool need_info)
{
	int idx[FZ_BOS], n = 0;

	for (int i = 0; i < f->nbo; i++)
		if (!need_info || f->bo[i].info)
			idx[n++] = i;
	return n ? &f->bo[idx[rnd_below(n)]] : NULL;
}

struct fz_bo *find_handle(struct fz_file *f, uint32_t handle)
{
	for (int i = 0; i < f->nbo; i++)
		if (f->bo[i].handle == handle)
			return &f->bo[i];
	return NULL;
}

struct fz_bo *find_obj(struct fz_file *f, uint32_t obj)
{
	for (int i = 0; i < f->nbo; i++)
		if (f->bo[i].obj == obj && f->bo[i].info)
			return &f->bo[i];
	return NULL;
}

struct fz_bo *add_bo(struct fz_file *f)
{
	struct fz_bo *b;

	if (f->nbo == FZ_BOS)
		return NULL;
	b = &f->bo[f->nbo++];
	memset(b, 0, sizeof(*b));
	return b;
}

void drop_bo(struct fz_file *f, struct fz_bo *b)
{
	/* Work in flight, or another handle or a dma-buf, may keep it registered. */
	for (int i = 0; b->user && i < f->nur; i++)
		if (f->ur[i].addr == b->uaddr)
			f->ur[i].zombie = true;
	*b = f->bo[--f->nbo];
}

uint32_t unused_handle(struct fz_file *f)
{
	for (;;) {
		uint32_t h = chance(700) ? (uint32_t)rnd_range(1, 200) : rnd_garbage32();

		if (!find_handle(f, h))
			return h;
	}
}

bool va_overlaps(struct fz_file *f, const struct fz_bo *self, uint64_t va, uint64_t size)
{
	for (int i = 0; i < f->nbo; i++) {
		const struct fz_bo *b = &f->bo[i];

		if (b == self || !b->info || !b->va || b->obj == self->obj)
			continue;
		if (va < b->va + b->size && b->va < va + size)
			return true;
	}
	return false;
}

struct fz_sync *find_sync(struct fz_file *f, uint32_t id)
{
	for (int i = 0; i < f->nsync; i++)
		if (f->sync[i].id == id)
			return &f->sync[i];
	return NULL;
}

struct fz_sync *pick_sync(struct fz_file *f, int kind)
{
	int idx[FZ_SYNCS], n = 0;

	for (int i = 0; i < f->nsync; i++)
		if (!kind || f->sync[i].kind == kind)
			idx[n++] = i;
	return n ? &f->sync[idx[rnd_below(n)]] : NULL;
}

uint32_t unused_sync_id(struct fz_file *f)
{
	for (;;) {
		uint32_t id = chance(800) ? (uint32_t)rnd_below(2048) : rnd_garbage32();

		if (!find_sync(f, id))
			return id;
	}
}

void drop_sync(struct fz_file *f, struct fz_sync *s)
{
	*s = f->sync[--f->nsync];
}

struct fz_syncobj *find_so(struct fz_file *f, uint32_t handle)
{
	for (int i = 0; i < f->nso; i++)
		if (f->so[i].handle == handle)
			return &f->so[i];
	return NULL;
}

struct fz_syncobj *pick_so(struct fz_file *f)
{
	return f->nso ? &f->so[rnd_below(f->nso)] : NULL;
}

void drop_so(struct fz_file *f, struct fz_syncobj *s)
{
	*s = f->so[--f->nso];
}

uint32_t unused_so_handle(struct fz_file *f)
{
	for (;;) {
		uint32_t h = chance(700) ? (uint32_t)rnd_range(1, 100) : rnd_garbage32();

		if (!find_so(f, h))
			return h;
	}
}

void so_add_dep(struct fz_file *f, struct fz_syncobj *s, int q, uint64_t seq, bool replace)
{
	if (replace)
		s->ndeps = 0;
	s->fence = true;
	if (s->ndeps == FZ_DEPS) {
		s->risky = true;
		return;
	}
	s->deps[s->ndeps++] = (struct fz_dep){ .q = (uint8_t)q, .gen = f->q[q].gen, .seq = seq };
}

bool queue_sure_absent(struct fz_file *f, int q)
{
	return file_strict(f) && f->q[q].state == Q_NONE && !f->q[q].pending;
}

bool queue_sure_live(struct fz_file *f, int q)
{
	return file_strict(f) && f->q[q].state == Q_LIVE;
}

bool queue_may_fail(const struct fz_file *f, int q)
{
	const struct fz_queue *Q = &f->q[q];

	return Q->may_fail || Q->failed || Q->pending || Q->seq_fuzzy || !file_strict(f) ||
	       Q->state != Q_LIVE;
}

int live_queues(void)
{
	int n = 0;

	for (int i = 0; i < FZ_FILES; i++)
		for (int q = 0; fz->files[i].used && q < FZ_QUEUES; q++)
			n += fz->files[i].q[q].state != Q_NONE;
	return n;
}

/*
 * Hardware queues are few (16 in the test VM) and every process wants
 * some: a worker keeps at most 3, a child 1, or most submits would find
 * none for a default queue (EBUSY).
 */
int queue_budget(void)
{
	return fz->depth ? 1 : 3;
}

/*
 * A queue to submit to: a live one that has not failed, mostly; the
 * default queue (made on first use) while the budget allows.
 */
int pick_queue(struct fz_file *f, bool live_only)
{
	int idx[FZ_QUEUES], n = 0, healthy[FZ_QUEUES], h = 0;
	bool room = live_queues() < queue_budget();

	for (int i = 0; i < FZ_QUEUES; i++) {
		if (f->q[i].state == Q_NONE && (i || live_only || !room))
			continue;
		idx[n++] = i;
		if (!f->q[i].failed)
			healthy[h++] = i;
	}
	if (h && chance(850))
		return healthy[rnd_below(h)];
	if (!n && !live_only)
		return 0;
	return n ? idx[rnd_below(n)] : -1;
}

struct fz_xfd *add_xfd(int kind, int fd)
{
	for (int i = 0; i < FZ_XFDS; i++) {
		struct fz_xfd *x = &fz->xfds[i];

		if (!x->used) {
			memset(x, 0, sizeof(*x));
			x->used = true;
			x->kind = (uint8_t)kind;
			x->fd = fd;
			return x;
		}
	}
	close(fd);	/* no room to keep it */
	return NULL;
}

struct fz_xfd *pick_xfd(int kind)
{
	int idx[FZ_XFDS], n = 0;

	for (int i = 0; i < FZ_XFDS; i++)
		if (fz->xfds[i].used && (!kind || fz->xfds[i].kind == kind))
			idx[n++] = i;
	return n ? &fz->xfds[idx[rnd_below(n)]] : NULL;
}

void drop_xfd(struct fz_xfd *x, bool close_it)
{
	if (close_it)
		close(x->fd);
	x->used = false;
}

struct fz_map *add_map(void)
{
	for (int i = 0; i < FZ_MAPS; i++)
		if (!fz->maps[i].used) {
			memset(&fz->maps[i], 0, sizeof(fz->maps[i]));
			fz->maps[i].used = true;
			return &fz->maps[i];
		}
	return NULL;
}

/* The file's last fd is closed: nothing in it can be named any more. */
void drop_file(struct fz_file *f)
{
	uint32_t gen = f->gen + 1;

	memset(f, 0, sizeof(*f));
	f->gen = gen;
}
