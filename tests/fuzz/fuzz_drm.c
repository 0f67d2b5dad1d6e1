// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: the DRM core ioctls the driver serves (GEM_CLOSE, PRIME,
 * FLINK/OPEN on the primary node, syncobjs, VERSION, GET_CAP), ioctl
 * numbers nobody serves, and the driver's ioctls called with other struct
 * sizes and directions than their own.
 */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Does any file of ours still hold a handle to obj? */
static bool obj_held(uint32_t obj)
{
	for (int i = 0; i < FZ_FILES; i++)
		for (int j = 0; fz->files[i].used && j < fz->files[i].nbo; j++)
			if (fz->files[i].bo[j].obj == obj)
				return true;
	return false;
}

void op_gem_close(void)
{
	struct fz_file *f = pick_file();
	struct fz_bo *b = pick_bo(f, false);
	struct drm_gem_close a = { 0 };
	struct fz_expect x;
	long ret;
	int fd = file_fd(f);

	if (!b || chance(80))
		b = NULL, a.handle = unused_handle(f);
	else
		a.handle = b->handle;
	fz_begin(OP_GEM_CLOSE, "GEM_CLOSE fd=%d handle=%u", fd, a.handle);
	if (!file_strict(f))
		x_ok(&x, EINVAL, 0);
	else if (b)
		x_ok(&x, 0);
	else
		x_err(&x, EINVAL, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &a);
	if (!fz_end(&x, ret) || ret || !b)
		return;
	uint32_t obj = b->obj;
	uint64_t size = b->size;
	bool mine = b->mine && !b->user;

	if (b->info && b->va && b->size) {
		f->gone_va[f->ngone % FZ_GONE] = b->va;
		f->gone_len[f->ngone % FZ_GONE] = b->size;
		f->ngone++;
	}
	drop_bo(f, b);
	if (mine && !obj_held(obj))
		fz->hbm_live = fz->hbm_live > size ? fz->hbm_live - size : 0;
}

void op_prime_export(void)
{
	struct fz_file *f = pick_file();
	struct fz_bo *b = pick_bo(f, false);
	struct drm_prime_handle a = { 0 };
	struct fz_expect x;
	int fd = file_fd(f);
	long ret;

	if (!b || chance(60))
		b = NULL, a.handle = unused_handle(f);
	else
		a.handle = b->handle;
	a.flags = (uint32_t)rnd_below(4) & (DRM_CLOEXEC | DRM_RDWR);
	a.flags = (a.flags & 1 ? DRM_CLOEXEC : 0) | (a.flags & 2 ? DRM_RDWR : 0);
	if (chance(50))
		a.flags |= rnd_garbage32() & ~(DRM_CLOEXEC | DRM_RDWR);
	if (chance(30))
		a.fd = (int)rnd32();	/* an output */
	fz_begin(OP_PRIME_EXPORT, "PRIME_HANDLE_TO_FD fd=%d handle=%u flags=%#x", fd, a.handle,
		 a.flags);
	if (a.flags & ~(DRM_CLOEXEC | DRM_RDWR))
		x_err(&x, EINVAL, 0);
	else if (!file_strict(f))
		x_ok(&x, ENOENT, EMFILE, 0);
	else if (b)
		x_ok(&x, EMFILE, ENOMEM, 0);
	else
		x_err(&x, ENOENT, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	if (a.fd < 0) {
		fz_finding("fd %d", a.fd);
		return;
	}
	/* A dma-buf tells its size (lseek to its end): it must be the buffer's. */
	uint64_t size = dmabuf_size(a.fd);

	fz_after(" (fd %d, %#llx bytes)", a.fd, (unsigned long long)size);
	if (b && b->info && file_strict(f) && size != b->size)
		fz_finding("dma-buf of %#llx bytes for a buffer of %#llx",
			   (unsigned long long)size, (unsigned long long)b->size);
	struct fz_xfd *d = add_xfd(X_DMABUF, a.fd);

	if (!d)
		return;
	d->size = size;
	if (b) {
		/*
		 * A handle of a file a child also uses may be another buffer by
		 * now: then which buffer this is is not known either (imported
		 * into a strict file, it must not take the info of a handle of
		 * the buffer the model guessed).
		 */
		d->obj = file_strict(f) ? b->obj : new_obj();
		d->obj_known = file_strict(f);
		d->user = b->user;
		d->user_known = b->user_known && file_strict(f);
	} else {
		d->obj = new_obj();	/* a buffer some other process made */
	}
}

void op_prime_import(void)
{
	struct fz_file *f = pick_file();
	struct fz_xfd *d = pick_xfd(X_DMABUF), *o = pick_xfd(0);
	struct drm_prime_handle a = { 0 };
	int kind = 0, fd = file_fd(f);
	struct fz_expect x;
	long ret;

	if (d && chance(850)) {
		a.fd = d->fd;
	} else if (o && o->kind != X_DMABUF && chance(500)) {
		a.fd = o->fd, kind = 1, d = NULL;
	} else {
		d = NULL;
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
	a.flags = chance(100) ? rnd32() : 0;	/* not looked at */
	a.handle = chance(100) ? rnd32() : 0;	/* an output */
	if (f->nbo == FZ_BOS && !kind)
		return;
	fz_begin(OP_PRIME_IMPORT, "PRIME_FD_TO_HANDLE fd=%d dmabuf=%d", fd, a.fd);
	if (kind == 1)
		x_err(&x, EINVAL, 0);
	else if (kind == 2)
		x_err(&x, EBADF, 0);
	else
		x_ok(&x, ENOMEM, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &a);
	if (!fz_end(&x, ret) || ret || !d)
		return;
	struct fz_bo *b = find_handle(f, a.handle);

	if (b) {
		/*
		 * A handle this file had for the buffer already. Our ids of
		 * buffers are a guess where they came from elsewhere (a name,
		 * a child): what can be checked is its size.
		 */
		struct drm_npu_bo_info info = { .handle = a.handle };

		if (b->obj != d->obj && d->size && !ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info) &&
		    info.size != d->size && file_strict(f))
			fz_finding("import gave handle %u, a buffer of %#llx bytes, for a dma-buf of %#llx",
				   a.handle, (unsigned long long)info.size,
				   (unsigned long long)d->size);
		/* The same buffer, now we know; unless b may be stale (see op_prime_export()). */
		if (file_strict(f))
			d->obj = b->obj;
		return;
	}
	b = add_bo(f);
	if (!b)
		return;
	if (!d->obj_known)
		f->unsure_objs = true;
	b->handle = a.handle;
	b->obj = d->obj;
	b->size = d->size;
	b->user = d->user;
	b->user_ro = d->user;	/* whether read-only is not known: assume so */
	b->user_known = d->user_known;
	struct fz_bo *same = find_obj(f, d->obj);

	if (same && same != b) {
		b->va = same->va;
		b->size = same->size;
		b->page_size = same->page_size;
		b->mmap_offset = same->mmap_offset;
		b->info = true;
	}
}

/* GEM_FLINK and GEM_OPEN: the primary node only (DRM_AUTH). */
static uint32_t names[16], name_obj[16];
static uint64_t name_size[16];

void op_gem_flink_open(void)
{
	struct fz_file *f = pick_file();
	int fd = file_fd(f);
	struct fz_expect x;
	long ret;

	if (rnd_below(2)) {
		struct drm_gem_flink a = { 0 };
		struct fz_bo *b = pick_bo(f, true);

		if (!b || chance(100))
			b = NULL, a.handle = unused_handle(f);
		else
			a.handle = b->handle;
		fz_begin(OP_GEM_FLINK_OPEN, "GEM_FLINK fd=%d%s handle=%u", fd,
			 f->primary ? " (primary)" : "", a.handle);
		if (!f->primary)
			x_err(&x, EACCES, 0);
		else if (!file_strict(f))
			x_ok(&x, ENOENT, 0);
		else if (b)
			x_ok(&x, ENOMEM, ENOSPC, 0);
		else
			x_err(&x, ENOENT, 0);
		ret = fz_ioctl(fd, DRM_IOCTL_GEM_FLINK, &a);
		if (fz_end(&x, ret) && !ret && b) {
			int i = (int)rnd_below(ARRAY_LEN(names));

			names[i] = a.name;
			/* 0 (no buffer): b may be stale in a file a child also uses. */
			name_obj[i] = file_strict(f) ? b->obj : 0;
			name_size[i] = b->size;
		}
		return;
	}
	struct drm_gem_open a = { 0 };
	int i = (int)rnd_below(ARRAY_LEN(names));
	bool known = names[i] && chance(800);
	/*
	 * A name lasts while its buffer has a handle somewhere: held by us,
	 * it is surely that buffer; else it may be gone, and the name reused.
	 * Held in a file a child shares, it may not be held at all (the child
	 * may have closed the handle), and the name may be another buffer's.
	 */
	bool alive = false;

	for (int j = 0; known && name_obj[i] && j < FZ_FILES; j++)
		for (int k = 0; fz->files[j].used && file_strict(&fz->files[j]) &&
				k < fz->files[j].nbo; k++)
			alive |= fz->files[j].bo[k].obj == name_obj[i];

	a.name = known ? names[i] : (chance(500) ? 0 : rnd_garbage32() | 0x10000000);
	fz_begin(OP_GEM_FLINK_OPEN, "GEM_OPEN fd=%d%s name=%u", fd, f->primary ? " (primary)" : "",
		 a.name);
	if (!f->primary)
		x_err(&x, EACCES, 0);
	else if (known)
		x_ok(&x, ENOENT, ENOMEM, 0);	/* the buffer may be gone */
	else
		x_ok(&x, ENOENT, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_GEM_OPEN, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	struct fz_bo *b = add_bo(f);

	if (!b) {
		struct drm_gem_close c = { .handle = a.handle };

		ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
		return;
	}
	b->handle = a.handle;
	b->obj = known && alive ? name_obj[i] : new_obj();
	b->size = a.size;
	if (known && alive && name_size[i] && a.size != name_size[i])
		fz_finding("GEM_OPEN size %llu, buffer has %llu", (unsigned long long)a.size,
			   (unsigned long long)name_size[i]);
	struct fz_bo *same = find_obj(f, b->obj);

	if (same && same != b && known && alive) {
		b->va = same->va;
		b->page_size = same->page_size;
		b->mmap_offset = same->mmap_offset;
		b->info = true;
	}
}

/* ---- syncobjs ------------------------------------------------------------------------ */
static void so_reset(struct fz_syncobj *s, bool fence)
{
	s->fence = fence;
	s->ndeps = 0;
	s->timeline = false;
	s->last_point = 0;
}

/* 1..n handles into h[]: ours mostly; *unknown: one is not. */
static uint32_t so_handles(struct fz_file *f, uint32_t *h, struct fz_syncobj **s, uint32_t n,
			   bool *unknown)
{
	uint32_t k = (uint32_t)rnd_range(1, n);

	*unknown = false;
	for (uint32_t i = 0; i < k; i++) {
		s[i] = pick_so(f);
		if (!s[i] || chance(50)) {
			s[i] = NULL;
			h[i] = unused_so_handle(f);
			*unknown = true;
		} else {
			h[i] = s[i]->handle;
		}
	}
	return k;
}

static void so_op_create(struct fz_file *f, int fd)
{
	struct drm_syncobj_create a = { 0 };
	struct fz_expect x;
	long ret;

	a.flags = chance(300) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
	if (chance(40))
		a.flags |= rnd_garbage32() & ~DRM_SYNCOBJ_CREATE_SIGNALED;
	if (f->nso == FZ_SYNCOBJS && !(a.flags & ~DRM_SYNCOBJ_CREATE_SIGNALED))
		a.flags |= 2;
	fz_begin(OP_SYNCOBJ, "SYNCOBJ_CREATE fd=%d flags=%#x", fd, a.flags);
	if (a.flags & ~DRM_SYNCOBJ_CREATE_SIGNALED)
		x_err(&x, EINVAL, 0);
	else
		x_ok(&x, ENOMEM, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	if (!a.handle || (find_so(f, a.handle) && file_strict(f))) {
		fz_finding("syncobj handle %u", a.handle);
		return;
	}
	struct fz_syncobj *s = &f->so[f->nso++];

	memset(s, 0, sizeof(*s));
	s->handle = a.handle;
	s->fence = a.flags & DRM_SYNCOBJ_CREATE_SIGNALED;
}

static void so_op_destroy(struct fz_file *f, int fd)
{
	struct drm_syncobj_destroy a = { 0 };
	struct fz_syncobj *s = pick_so(f);
	struct fz_expect x;
	long ret;

	if (!s || chance(100))
		s = NULL, a.handle = unused_so_handle(f);
	else
		a.handle = s->handle;
	if (chance(30))
		a.pad = rnd_garbage32() | 1;
	fz_begin(OP_SYNCOBJ, "SYNCOBJ_DESTROY fd=%d handle=%u pad=%#x", fd, a.handle, a.pad);
	if (a.pad || (!s && file_strict(f)))
		x_err(&x, EINVAL, 0);
	else if (!file_strict(f))
		x_ok(&x, EINVAL, 0);
	else
		x_ok(&x, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &a);
	if (fz_end(&x, ret) && !ret && s)
		drop_so(f, s);
}

static void so_op_export(struct fz_file *f, int fd)
{
	struct drm_syncobj_handle a = { 0 };
	struct fz_syncobj *s = pick_so(f);
	bool sync_file = chance(500);
	struct fz_expect x;
	long ret;

	if (!s || chance(80))
		s = NULL, a.handle = unused_so_handle(f);
	else
		a.handle = s->handle;
	a.flags = sync_file ? DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE : 0;
	if (chance(30))
		a.flags = rnd_garbage32() | 2;
	if (chance(20))
		a.pad = rnd_garbage32() | 1;
	fz_begin(OP_SYNCOBJ, "SYNCOBJ_HANDLE_TO_FD fd=%d handle=%u flags=%#x pad=%#x", fd, a.handle,
		 a.flags, a.pad);
	if (a.pad || (a.flags && a.flags != DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE))
		x_err(&x, EINVAL, 0);
	else if (!s || !file_strict(f) || s->risky)
		x_ok(&x, ENOENT, EINVAL, EMFILE, 0);
	else if (sync_file && !s->fence)
		x_err(&x, EINVAL, 0);
	else if (sync_file && (s->timeline || s->ndeps > 1))
		x_ok(&x, EINVAL, EMFILE, ENOMEM, 0);
	else
		x_ok(&x, EMFILE, ENOMEM, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	if (a.fd < 0) {
		fz_finding("fd %d", a.fd);
		return;
	}
	add_xfd(a.flags ? X_SYNCFILE : X_SYNCOBJ, a.fd);
	if (s && !a.flags)
		s->risky = true;	/* shared now: others may change it */
}

static void so_op_import(struct fz_file *f, int fd)
{
	struct drm_syncobj_handle a = { 0 };
	bool sync_file = chance(500);
	struct fz_xfd *d = pick_xfd(sync_file ? X_SYNCFILE : X_SYNCOBJ), *o = pick_xfd(0);
	struct fz_syncobj *s = pick_so(f);
	int kind = 0;
	struct fz_expect x;
	long ret;

	if (d && chance(850))
		a.fd = d->fd;
	else if (o && chance(500))
		a.fd = o->fd, kind = o->kind == (sync_file ? X_SYNCFILE : X_SYNCOBJ) ? 0 : 1;
	else
		a.fd = chance(500) ? fz->devnull : -1, kind = 2;
	a.flags = sync_file ? DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE : 0;
	if (sync_file) {
		if (!s || chance(80))
			s = NULL, a.handle = unused_so_handle(f);
		else
			a.handle = s->handle;
	} else {
		s = NULL;
		if (f->nso == FZ_SYNCOBJS)
			a.pad = 1;
	}
	if (chance(30))
		a.flags = rnd_garbage32() | 2;
	if (chance(20))
		a.pad = rnd_garbage32() | 1;
	fz_begin(OP_SYNCOBJ, "SYNCOBJ_FD_TO_HANDLE fd=%d in_fd=%d handle=%u flags=%#x pad=%#x", fd,
		 a.fd, a.handle, a.flags, a.pad);
	if (a.pad || (a.flags && a.flags != DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE) ||
	    kind)
		x_err(&x, EINVAL, 0);
	else if (sync_file && !s && file_strict(f))
		x_err(&x, ENOENT, 0);
	else if (sync_file && !file_strict(f))
		x_ok(&x, ENOENT, 0);
	else
		x_ok(&x, ENOMEM, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	if (sync_file) {
		if (s) {
			so_reset(s, true);
			s->risky = true;	/* a fence we did not follow */
		}
		return;
	}
	if (find_so(f, a.handle) || f->nso == FZ_SYNCOBJS) {
		if (file_strict(f))
			fz_finding("imported syncobj handle %u", a.handle);
		return;
	}
	struct fz_syncobj *n = &f->so[f->nso++];

	memset(n, 0, sizeof(*n));
	n->handle = a.handle;
	n->fence = true;
	n->risky = true;
}

/* SYNCOBJ_WAIT and TIMELINE_WAIT, in the order the core checks. */
static void wait_expect(struct fz_expect *x, struct fz_file *f, uint32_t flags, uint32_t bad_flags,
			uint32_t count, bool bad_ptr_h, bool unknown, bool maybe_nofence,
			bool nofence, uint32_t submit_flags)
{
	/* DRM_SYNCOBJ_WAIT_FLAGS_WAIT_DEADLINE: unknown to 6.1, known to 6.12. */
	const uint32_t deadline = 1u << 3;

	if (flags & bad_flags & ~deadline)
		x_err(x, EINVAL, 0);
	else if (!count)	/* refused by 6.1; 6.12 returns at once */
		x_ok(x, EINVAL, 0);
	else if (bad_ptr_h)
		x_err(x, EFAULT, 0);
	else if (unknown && file_strict(f))
		x_err(x, ENOENT, 0);
	else if (unknown || !file_strict(f))
		x_ok(x, ETIME, EINTR, ENOENT, EINVAL, 0);
	else if (maybe_nofence)
		x_ok(x, ETIME, EINTR, EINVAL, 0);
	else if (nofence && !(flags & submit_flags))
		x_err(x, EINVAL, 0);
	else
		x_ok(x, ETIME, EINTR, 0);
	if (flags & bad_flags & deadline)
		x_allow(x, EINVAL);
}

static void so_op_wait(struct fz_file *f, int fd, bool timeline)
{
	uint32_t *h = (uint32_t *)(fz->scratch + 4096);
	uint64_t *pts = (uint64_t *)(fz->scratch + 8192);
	struct fz_syncobj *s[4];
	bool unknown, nofence = false, maybe_nofence = false, bad_ptr_h = false;
	uint32_t k = so_handles(f, h, s, 4, &unknown);
	uint32_t flags = (uint32_t)rnd_below(timeline ? 8 : 4);
	int64_t timeout = chance(500) ? 0 : now_ns() + (int64_t)rnd_range(100000, 3000000);
	struct fz_expect x;
	long ret;

	for (uint32_t i = 0; i < k; i++) {
		pts[i] = 0;
		if (timeline && s[i] && s[i]->timeline && chance(700))
			pts[i] = rnd_range(1, s[i]->last_point + (chance(100) ? 3 : 0));
		if (!s[i] || s[i]->risky || !file_strict(f))
			maybe_nofence = true;
		else if (!s[i]->fence || (pts[i] && (!s[i]->timeline || pts[i] > s[i]->last_point)))
			nofence = true;
	}
	if (chance(30))
		flags |= rnd_garbage32() & ~7u;
	uint64_t hp = (uintptr_t)h;

	if (chance(15)) {
		hp = (uintptr_t)bad_ptr(k * 4);
		bad_ptr_h = true;
	}
	uint32_t count = chance(20) ? 0 : k;

	if (timeline) {
		struct drm_syncobj_timeline_wait a = {
			.handles = hp, .points = (uintptr_t)pts, .timeout_nsec = timeout,
			.count_handles = count, .flags = flags,
		};

		fz_begin(OP_SYNCOBJ, "SYNCOBJ_TIMELINE_WAIT fd=%d count=%u flags=%#x timeout=%lld h0=%u p0=%llu",
			 fd, count, flags, (long long)(timeout ? timeout - now_ns() : 0), h[0],
			 (unsigned long long)pts[0]);
		wait_expect(&x, f, flags, ~7u, count, bad_ptr_h, unknown, maybe_nofence, nofence, 6);
		fz_arm_ms(200);
		ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &a);
		fz_disarm();
		fz_end(&x, ret);
		return;
	}
	struct drm_syncobj_wait a = {
		.handles = hp, .timeout_nsec = timeout, .count_handles = count, .flags = flags,
	};

	fz_begin(OP_SYNCOBJ, "SYNCOBJ_WAIT fd=%d count=%u flags=%#x timeout=%lld h0=%u", fd, count,
		 flags, (long long)(timeout ? timeout - now_ns() : 0), h[0]);
	wait_expect(&x, f, flags, ~3u, count, bad_ptr_h, unknown, maybe_nofence, nofence, 2);
	fz_arm_ms(200);
	ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &a);
	fz_disarm();
	fz_end(&x, ret);
}

static void so_op_array(struct fz_file *f, int fd, int which)
{
	uint32_t *h = (uint32_t *)(fz->scratch + 4096);
	uint64_t *pts = (uint64_t *)(fz->scratch + 8192);
	struct fz_syncobj *s[4];
	bool unknown;
	uint32_t k = so_handles(f, h, s, 3, &unknown), count = chance(20) ? 0 : k;
	static const char *const what[] = { "RESET", "SIGNAL", "TIMELINE_SIGNAL", "QUERY" };
	struct fz_expect x;
	uint32_t flags = 0, pad = 0;
	bool bad = false;
	long ret;

	for (uint32_t i = 0; i < k; i++)
		pts[i] = s[i] && chance(800) ? s[i]->last_point + rnd_range(chance(200) ? 0 : 1, 3) : 0;
	if (chance(25)) {
		if (which < 2)
			pad = rnd_garbage32() | 1;
		else
			flags = rnd_garbage32() | 2;
		bad = true;
	}
	uint64_t hp = (uintptr_t)h;
	bool bad_h = chance(15);

	if (bad_h)
		hp = (uintptr_t)bad_ptr(k * 4);
	fz_begin(OP_SYNCOBJ, "SYNCOBJ_%s fd=%d count=%u flags=%#x pad=%#x h0=%u p0=%llu",
		 what[which], fd, count, flags, pad, h[0], (unsigned long long)pts[0]);
	if (bad || !count)
		x_err(&x, EINVAL, 0);
	else if (bad_h)
		x_err(&x, EFAULT, 0);
	else if (unknown && file_strict(f))
		x_err(&x, ENOENT, 0);
	else if (!file_strict(f) || unknown)
		x_ok(&x, ENOENT, ENOMEM, 0);
	else
		x_ok(&x, ENOMEM, 0);
	if (which < 2) {
		struct drm_syncobj_array a = { .handles = hp, .count_handles = count, .pad = pad };

		ret = fz_ioctl(fd, which ? DRM_IOCTL_SYNCOBJ_SIGNAL : DRM_IOCTL_SYNCOBJ_RESET, &a);
	} else {
		struct drm_syncobj_timeline_array a = {
			.handles = hp, .points = (uintptr_t)pts, .count_handles = count,
			.flags = which == 3 && chance(500) && !flags ?
				 DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : flags,
		};

		ret = fz_ioctl(fd, which == 2 ? DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL :
				   DRM_IOCTL_SYNCOBJ_QUERY, &a);
		if (!ret && which == 3 && a.flags && file_strict(f)) {
			for (uint32_t i = 0; i < k; i++) {
				if (!s[i] || s[i]->risky || !s[i]->timeline || !s[i]->fence)
					continue;
				if (pts[i] != s[i]->last_point)
					fz_finding("QUERY(last submitted) of %u: %llu, expected %llu",
						   h[i], (unsigned long long)pts[i],
						   (unsigned long long)s[i]->last_point);
			}
		}
	}
	if (!fz_end(&x, ret) || ret)
		return;
	for (uint32_t i = 0; i < k; i++) {
		if (!s[i])
			continue;
		if (which == 0)
			so_reset(s[i], false);
		else if (which == 1)
			so_reset(s[i], true);
		else if (which == 2) {
			if (!pts[i]) {
				/*
				 * Not a binary signal: TIMELINE_SIGNAL adds a chain
				 * node for point 0 too (drm_syncobj_add_point()), and
				 * dma_fence_chain_init() gives it the seqno
				 * max(head's, 0). A timeline keeps its last point
				 * (QUERY(LAST_SUBMITTED) still says it) and the node
				 * still waits for the fences before it.
				 */
				s[i]->fence = true;
			} else {
				s[i]->fence = true;
				s[i]->timeline = true;
				if (pts[i] > s[i]->last_point)
					s[i]->last_point = pts[i];
			}
		}
	}
}

static void so_op_transfer(struct fz_file *f, int fd)
{
	struct drm_syncobj_transfer a = { 0 };
	struct fz_syncobj *src = pick_so(f), *dst = pick_so(f);
	struct fz_expect x;
	long ret;

	if (!src || chance(50))
		src = NULL, a.src_handle = unused_so_handle(f);
	else
		a.src_handle = src->handle;
	if (!dst || chance(50))
		dst = NULL, a.dst_handle = unused_so_handle(f);
	else
		a.dst_handle = dst->handle;
	if (src && src->timeline && chance(600))
		a.src_point = rnd_range(1, src->last_point + (chance(100) ? 2 : 0));
	if (dst && chance(500))
		a.dst_point = dst->last_point + rnd_range(chance(100) ? 0 : 1, 3);
	if (chance(20))
		a.pad = rnd_garbage32() | 1;
	if (chance(30))
		a.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	fz_begin(OP_SYNCOBJ, "SYNCOBJ_TRANSFER fd=%d src=%u@%llu dst=%u@%llu flags=%#x pad=%#x", fd,
		 a.src_handle, (unsigned long long)a.src_point, a.dst_handle,
		 (unsigned long long)a.dst_point, a.flags, a.pad);
	if (a.pad)
		x_err(&x, EINVAL, 0);
	else if (!dst && file_strict(f))
		x_err(&x, ENOENT, 0);
	else if (!src && file_strict(f))
		x_err(&x, ENOENT, 0);
	else if (!file_strict(f) || src->risky)
		x_ok(&x, ENOENT, EINVAL, EINTR, ETIME, ENOMEM, 0);
	else if ((!src->fence || (a.src_point && (!src->timeline || a.src_point > src->last_point))) &&
		 !a.flags)
		x_err(&x, EINVAL, 0);
	else
		x_ok(&x, ENOMEM, EINTR, ETIME, EINVAL, 0);
	fz_arm_ms(100);
	ret = fz_ioctl(fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &a);
	fz_disarm();
	if (!fz_end(&x, ret) || ret || !dst)
		return;
	if (!src) {
		dst->risky = true;
		return;
	}
	struct fz_syncobj t = *src;

	if (!a.dst_point) {
		so_reset(dst, true);
		/*
		 * A binary transfer installs the fence the source point finds:
		 * for point 0 the source's head itself, a chain node when the
		 * source is a timeline, so the destination answers QUERY and
		 * takes new points as that timeline would. For a point, some
		 * node of the chain at or after it: which one is not ours to
		 * know.
		 */
		if (t.timeline && !a.src_point) {
			dst->timeline = true;
			dst->last_point = t.last_point;
		} else if (t.timeline) {
			dst->risky = true;
		}
	} else {
		dst->fence = true;
		dst->timeline = true;
		if (a.dst_point > dst->last_point)
			dst->last_point = a.dst_point;
	}
	for (int i = 0; i < t.ndeps; i++) {
		if (dst->ndeps == FZ_DEPS) {
			dst->risky = true;
			break;
		}
		dst->deps[dst->ndeps++] = t.deps[i];
	}
	dst->risky |= t.risky;
}

void op_syncobj(void)
{
	struct fz_file *f = pick_file();
	int fd = file_fd(f);
	unsigned int r = (unsigned int)rnd_below(100);

	if (r < 18 || !f->nso)
		so_op_create(f, fd);
	else if (r < 28)
		so_op_destroy(f, fd);
	else if (r < 36)
		so_op_export(f, fd);
	else if (r < 44)
		so_op_import(f, fd);
	else if (r < 56)
		so_op_wait(f, fd, false);
	else if (r < 64)
		so_op_wait(f, fd, true);
	else if (r < 70)
		so_op_array(f, fd, 0);
	else if (r < 78)
		so_op_array(f, fd, 1);
	else if (r < 86)
		so_op_array(f, fd, 2);
	else if (r < 93)
		so_op_array(f, fd, 3);
	else
		so_op_transfer(f, fd);
}

/* ---- VERSION, GET_CAP, SET_CLIENT_CAP ---------------------------------------------- */
void op_drm_info(void)
{
	struct fz_file *f = pick_file();
	int fd = file_fd(f);
	struct fz_expect x;
	long ret;

	switch (rnd_below(3)) {
	case 0: {
		struct drm_version v = { 0 };
		char *buf = (char *)fz->scratch + 12288;
		bool bad = false;

		v.name_len = rnd_below(2) ? rnd_below(8) : rnd_garbage32() % 64;
		v.name = buf;
		v.date_len = rnd_below(32);
		v.date = buf + 64;
		v.desc_len = rnd_below(64);
		v.desc = buf + 128;
		if (chance(100)) {
			/* Not NULL: the core copies nothing there. */
			while (!(v.desc = bad_ptr(8)))
				;
			v.desc_len = 8;
			bad = true;
		}
		if (chance(100))
			v.name = NULL;
		size_t asked = v.name_len;
		fz_begin(OP_DRM_INFO, "VERSION fd=%d name_len=%zu date_len=%zu desc_len=%zu%s", fd,
			 v.name_len, v.date_len, v.desc_len, bad ? " [bad desc]" : "");
		if (bad)
			x_err(&x, EFAULT, 0);
		else
			x_ok(&x, 0);
		memset(buf, 0, 256);
		ret = fz_ioctl(fd, DRM_IOCTL_VERSION, &v);
		if (fz_end(&x, ret) && !ret &&
		    (v.version_major != 0 || v.version_minor != 5 || v.name_len != 3 ||
		     (v.name && memcmp(buf, "npu", asked < 3 ? asked : 3))))
			fz_finding("version %d.%d name_len %zu", v.version_major, v.version_minor,
				   v.name_len);
		break;
	}
	case 1: {
		static const uint64_t caps[] = { DRM_CAP_TIMESTAMP_MONOTONIC, DRM_CAP_PRIME,
						 DRM_CAP_SYNCOBJ, DRM_CAP_SYNCOBJ_TIMELINE };
		struct drm_get_cap c = { 0 };
		bool known = chance(700);

		c.capability = known ? caps[rnd_below(4)] : rnd_garbage64();
		for (unsigned int i = 0; i < 4; i++)
			if (c.capability == caps[i])
				known = true;
		fz_begin(OP_DRM_INFO, "GET_CAP fd=%d cap=%#llx", fd,
			 (unsigned long long)c.capability);
		if (known)
			x_ok(&x, 0);
		else
			x_err(&x, EOPNOTSUPP, EINVAL, 0);
		ret = fz_ioctl(fd, DRM_IOCTL_GET_CAP, &c);
		if (fz_end(&x, ret) && !ret) {
			uint64_t want = c.capability == DRM_CAP_PRIME ?
					DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT : 1;

			if (c.value != want)
				fz_finding("cap %#llx = %llu", (unsigned long long)c.capability,
					   (unsigned long long)c.value);
		}
		break;
	}
	default: {
		struct drm_set_client_cap c = { .capability = rnd_below(8), .value = rnd_below(3) };

		fz_begin(OP_DRM_INFO, "SET_CLIENT_CAP fd=%d%s cap=%llu value=%llu", fd,
			 f->primary ? " (primary)" : "", (unsigned long long)c.capability,
			 (unsigned long long)c.value);
		if (!f->primary)
			x_err(&x, EACCES, 0);
		else
			x_ok(&x, EINVAL, EOPNOTSUPP, 0);
		ret = fz_ioctl(fd, DRM_IOCTL_SET_CLIENT_CAP, &c);
		fz_end(&x, ret);
	}
	}
}

/* ---- ioctl numbers nobody serves ----------------------------------------------------- */
static bool core_modelled(unsigned int nr)
{
	/* Render-node ioctls this fuzzer calls on purpose: never with junk. */
	static const unsigned int nrs[] = { 0x00, 0x09, 0x0a, 0x0b, 0x0c, 0x2d, 0x2e, 0xbf, 0xc0,
					    0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xca, 0xcb, 0xcc, 0xcd };

	for (unsigned int i = 0; i < ARRAY_LEN(nrs); i++)
		if (nrs[i] == nr)
			return true;
	/* Master state of the primary node: leave it to the process holding it. */
	return nr == 0x1e || nr == 0x1f || nr == 0x07 || nr == 0x11;
}

void op_raw_ioctl(void)
{
	struct fz_file *f = pick_file();
	int fd = file_fd(f), type = 'd', dir;
	unsigned int nr, size;
	struct fz_expect x;
	long ret;

	do {
		nr = (unsigned int)rnd_below(256);
	} while (core_modelled(nr) || (nr >= DRM_COMMAND_BASE && nr < FZ_DRIVER_NR_END));
	dir = (int)rnd_below(4);
	size = chance(900) ? (unsigned int)rnd_below(256) : (unsigned int)rnd_below(1 << 14);
	if (chance(50))
		type = (int)rnd_below(256);
	for (unsigned int i = 0; i < 256; i += 8) {
		uint64_t v = chance(500) ? 0 : rnd64();

		memcpy(fz->scratch + 4096 + i, &v, 8);
	}
	unsigned long cmd = _IOC(dir, type, nr, size);

	fz_begin(OP_RAW_IOCTL, "ioctl fd=%d%s cmd=%#lx (dir %d type %#x nr %#x size %u)", fd,
		 f->primary ? " (primary)" : "", cmd, dir, type, nr, size);
	if (type != 'd')
		x_err(&x, ENOTTY, 0);
	else if (nr >= FZ_DRIVER_NR_END && nr < 0xa0)
		x_err(&x, EINVAL, 0);
	else if (nr == 0xcf)	/* SYNCOBJ_EVENTFD, a render node's since 6.6: junk */
		x_ok(&x, EACCES, EINVAL, ENOENT, EFAULT, EBADF, 0);
	else if (!f->primary)
		x_err(&x, EACCES, EINVAL, 0);
	else
		x_ok(&x, EINVAL, EACCES, EOPNOTSUPP, ENOSYS, EPERM, EFAULT, ENOENT, EBADF, ENOMEM,
		     EBUSY, ENOSPC, E2BIG, ERANGE, ENODEV, 0);
	/* Larger sizes than the scratch holds: the kernel must not read past it. */
	if (size > FZ_SCRATCH - 4096)
		size = 0;
	ret = fz_ioctl(fd, cmd, fz->scratch + 4096);
	fz_end(&x, ret);
}

/*
 * The driver's ioctls that change nothing, called with another size or
 * direction than their own: the DRM core zero-extends or truncates.
 */
void op_sized_ioctl(void)
{
	static const struct {
		unsigned int nr;
		const char *name;
	} ioc[] = {
		{ DRM_NPU_GET_PARAM, "GET_PARAM" }, { DRM_NPU_BO_INFO, "BO_INFO" },
		{ DRM_NPU_GET_MEM_USAGE, "GET_MEM_USAGE" }, { DRM_NPU_WAIT, "WAIT" },
		{ DRM_NPU_EVENT_QUERY, "EVENT_QUERY" }, { DRM_NPU_EVENT_WAIT, "EVENT_WAIT" },
	};
	struct fz_file *f = pick_file();
	int fd = file_fd(f), i = (int)rnd_below(ARRAY_LEN(ioc)), dir = (int)rnd_below(4);
	unsigned int size = (unsigned int)rnd_below(chance(900) ? 200 : 4096);
	uint8_t *arg = fz->scratch + 4096;
	struct fz_expect x;
	long ret;

	memset(arg, 0, 4096);
	if (chance(500))
		for (unsigned int b = 0; b < size; b++)
			arg[b] = chance(300) ? (uint8_t)rnd32() : 0;
	if (ioc[i].nr == DRM_NPU_WAIT || ioc[i].nr == DRM_NPU_EVENT_WAIT) {
		/* Keep the waits short: timeout_ns is at 8 in both. */
		int64_t t = 0;

		if (size >= 16 && ioc[i].nr == DRM_NPU_EVENT_WAIT)
			memcpy(arg + 8, &t, 8);
		if (size >= 16 && ioc[i].nr == DRM_NPU_WAIT)
			memcpy(arg + 8, &t, 8);
	}
	unsigned long cmd = _IOC(dir, DRM_IOCTL_BASE, DRM_COMMAND_BASE + ioc[i].nr, size);

	fz_begin(OP_SIZED_IOCTL, "%s fd=%d with dir %d size %u", ioc[i].name, fd, dir, size);
	x_ok(&x, EINVAL, ENOENT, ETIMEDOUT, EINTR, EIO, 0);
	fz_arm_ms(50);
	ret = fz_ioctl(fd, cmd, arg);
	fz_disarm();
	fz_end(&x, ret);
}
