// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: files (open, dup, close in any order), CPU mappings of
 * buffers and dma-bufs, host memory for USERPTR, fdinfo and debugfs, and
 * processes: children that fuzz on inherited and their own files, share
 * notifies and dma-bufs back over a socket, and are SIGKILLed at a random
 * point of their work.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

void *bad_ptr(size_t len)
{
	switch (rnd_below(6)) {
	case 0:
		return NULL;
	case 1:
		return fz->guard;
	case 2:		/* starts in memory, ends in the inaccessible page */
		return len > 1 ? fz->guard - len / 2 : fz->guard;
	case 3:
		return (void *)(uintptr_t)0xffff888000000000ull;
	case 4:
		return (void *)(uintptr_t)0x8000000000000000ull;
	default:
		return (void *)(uintptr_t)(16 + rnd_below(4000));
	}
}

uint64_t dmabuf_size(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	lseek(fd, 0, SEEK_SET);
	return end > 0 ? (uint64_t)end : 0;
}

/* ---- files ----------------------------------------------------------------- */
void op_open(void)
{
	struct fz_file *f = NULL;
	bool primary = fz_card[0] && chance(120);
	bool rdonly = chance(40);
	const char *path = primary ? fz_card : fz_render;
	struct fz_expect x;
	long ret;

	for (int i = 0; i < FZ_FILES && !f; i++)
		if (!fz->files[i].used)
			f = &fz->files[i];
	if (!f) {
		op_close();
		return;
	}
	fz_begin(OP_OPEN, "open %s%s", path, rdonly ? " O_RDONLY" : "");
	x_ok(&x, 0);
	ret = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (ret < 0)
		ret = -errno;
	if (!fz_end(&x, ret) || ret < 0)
		return;
	uint32_t gen = f->gen;

	memset(f, 0, sizeof(*f));
	f->gen = gen + 1;
	f->used = true;
	f->primary = primary;
	f->rdonly = rdonly;
	f->nfds = 1;
	f->fds[0] = (int)ret;
}

void op_close(void)
{
	struct fz_file *f = pick_file_maybe();
	struct fz_expect x;
	int i, fd;

	if (!f)
		return;
	i = (int)rnd_below(f->nfds);
	fd = f->fds[i];
	fz_begin(OP_CLOSE, "close fd=%d (file %d, %d fds%s)", fd, file_index(f), f->nfds,
		 f->nfds == 1 ? ", its last" : "");
	x_ok(&x, 0);
	fz_end(&x, close(fd) ? -errno : 0);
	f->fds[i] = f->fds[--f->nfds];
	if (!f->nfds)
		drop_file(f);
}

void op_dup(void)
{
	struct fz_file *f = pick_file();
	struct fz_expect x;
	long ret;
	int fd = file_fd(f);

	if (f->nfds == FZ_FDS_PER_FILE) {
		op_close();
		return;
	}
	fz_begin(OP_DUP, "dup fd=%d", fd);
	x_ok(&x, 0);
	ret = rnd_below(2) ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : dup(fd);
	if (ret < 0)
		ret = -errno;
	if (fz_end(&x, ret) && ret >= 0)
		f->fds[f->nfds++] = (int)ret;
}

void op_xfd_close(void)
{
	struct fz_xfd *d = pick_xfd(0);
	static const char *const kinds[] = { "", "dma-buf", "notify", "syncobj", "sync_file" };
	struct fz_expect x;

	if (!d)
		return;
	fz_begin(OP_XFD, "close %s fd=%d", kinds[d->kind], d->fd);
	x_ok(&x, 0);
	fz_end(&x, close(d->fd) ? -errno : 0);
	drop_xfd(d, false);
}

/* fdinfo of a device fd, or the driver's debugfs files. */
void op_read_info(void)
{
	static const char *const dfs[] = { "npu_queues", "npu_mem", "npu_errlog" };
	char path[128], buf[4096];
	struct fz_file *f = pick_file();
	struct fz_expect x;
	ssize_t n;
	int fd;

	if (rnd_below(2) || !fz->debugfs[0])
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", file_fd(f));
	else
		snprintf(path, sizeof(path), "%s/%s", fz->debugfs, dfs[rnd_below(3)]);
	fz_begin(OP_READ_INFO, "read %s", path);
	x_ok(&x, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fz_end(&x, -errno);
		return;
	}
	do {
		n = read(fd, buf, sizeof(buf) - 1);
	} while (n > 0 && chance(900));
	close(fd);
	if (!fz_end(&x, n < 0 ? -errno : 0) || n < 0)
		return;
}

/* ---- CPU mappings ------------------------------------------------------------- */
static void bo_fetch_info(struct fz_file *f, struct fz_bo *b)
{
	struct drm_npu_bo_info a = { .handle = b->handle };
	struct fz_expect x;
	int fd = file_fd(f);
	long ret;

	fz_begin(OP_BO_INFO, "BO_INFO fd=%d handle=%u (to map it)", fd, a.handle);
	x_ok(&x, file_strict(f) ? 0 : ENOENT, 0);
	ret = fz_ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	if (b->info && (a.size != b->size || a.device_va != b->va) && file_strict(f))
		fz_finding("info: size %#llx va %#llx, was %#llx %#llx",
			   (unsigned long long)a.size, (unsigned long long)a.device_va,
			   (unsigned long long)b->size, (unsigned long long)b->va);
	b->size = a.size;
	b->va = a.device_va;
	b->page_size = a.page_size;
	b->mmap_offset = a.mmap_offset;
	b->info = true;
	if (!b->user_known) {
		b->user = b->user_ro = !a.mmap_offset;	/* host memory has no offset */
		b->user_known = true;
	} else if (b->user != !a.mmap_offset && file_strict(f)) {
		fz_finding("mmap offset %#llx for %s", (unsigned long long)a.mmap_offset,
			   b->user ? "registered host memory" : "a buffer in HBM");
	}
}

void op_mmap(void)
{
	struct fz_map *m = NULL;
	int prot = chance(800) ? PROT_READ | PROT_WRITE : PROT_READ;
	int flags = chance(950) ? MAP_SHARED : MAP_PRIVATE;
	struct fz_expect x;
	uint64_t off, len, bo_off = 0, size = 0;
	uint32_t obj = 0;
	bool bad = false, denied = false;
	void *p;
	int fd;

	for (int i = 0; i < FZ_MAPS && !m; i++)
		if (!fz->maps[i].used)
			m = &fz->maps[i];
	if (!m) {
		op_munmap();
		return;
	}
	struct fz_xfd *d = pick_xfd(X_DMABUF);

	if (d && chance(300)) {
		/* A dma-buf maps from any page of its buffer. */
		size = d->size ? d->size : 4096;
		uint64_t pages = size / 4096, first = rnd_below(pages);

		fd = d->fd;
		obj = d->obj;
		off = first * 4096;
		len = rnd_range(1, pages - first) * 4096;
		if (chance(100)) {
			len = (pages - first + rnd_range(1, 4)) * 4096;	/* past its end */
			bad = true;
		}
		if (!d->size)
			bad = true;	/* not known: anything goes */
		if ((d->user && d->user_known) || flags == MAP_PRIVATE)
			bad = true;
		/* Read-write or not was fixed when the buffer was first exported. */
		bool maybe_denied = (prot & PROT_WRITE) && flags == MAP_SHARED;

		bo_off = off;
		fz_begin(OP_MMAP, "mmap dma-buf fd=%d off=%#llx len=%#llx prot=%d %s%s", fd,
			 (unsigned long long)off, (unsigned long long)len, prot,
			 flags == MAP_SHARED ? "shared" : "private", d->user ? " (host memory)" : "");
		if (!d->size)
			x_ok(&x, EINVAL, EACCES, 0);
		else if (bad)
			x_err(&x, EINVAL, 0);
		else
			x_ok(&x, ENOMEM, 0);
		if (maybe_denied)
			x_allow(&x, EACCES);
		if (!d->user_known)
			x_allow(&x, EINVAL);
	} else {
		struct fz_file *f = pick_file();
		struct fz_bo *b = pick_bo(f, false);

		fd = file_fd(f);
		if (b && !b->user && !b->mmap_offset)
			bo_fetch_info(f, b);
		if (!b || !b->info || chance(50)) {
			/* An offset nobody handed out, or another file's buffer. */
			struct fz_file *g = pick_file_maybe();
			struct fz_bo *o = g && g != f ? pick_bo(g, true) : NULL;

			bool held = false;

			for (int i = 0; o && i < f->nbo; i++)
				held |= f->bo[i].obj == o->obj;
			if (o && o->mmap_offset && !held && !f->unsure_objs && chance(500)) {
				off = o->mmap_offset;
				len = 4096;
				denied = true;
			} else {
				off = align_down(rnd_garbage64(), 4096);
				len = 4096 * rnd_range(1, 4);
				bad = true;
			}
			fz_begin(OP_MMAP, "mmap fd=%d off=%#llx len=%#llx prot=%d %s%s", fd,
				 (unsigned long long)off, (unsigned long long)len, prot,
				 flags == MAP_SHARED ? "shared" : "private",
				 denied ? " (another file's buffer)" : "");
			if (flags == MAP_SHARED && (prot & PROT_WRITE) && f->rdonly)
				x_err(&x, EACCES, 0);
			else if (denied)
				x_err(&x, EACCES, EINVAL, 0);
			else	/* made up: it may even be a buffer of this file */
				x_ok(&x, EINVAL, EACCES, ENOMEM, 0);
			if (off + len < off || off + len > (1ull << 63))
				x_allow(&x, EOVERFLOW);	/* the VFS checks this first */
			if (!file_strict(f))
				x.ok = true;
		} else {
			uint64_t pages = b->size / 4096;

			off = b->mmap_offset;
			obj = b->obj;
			len = chance(600) ? b->size : rnd_range(1, pages) * 4096;
			switch (rnd_below(12)) {
			case 0:	/* starts inside the buffer: the node takes its start only */
				if (pages > 1) {
					off += rnd_range(1, pages - 1) * 4096;
					len = 4096;
					bad = true;
				}
				break;
			case 1:
				len = b->size + rnd_range(1, 8) * 4096;
				bad = true;
				break;
			}
			if (b->user && b->user_known)
				bad = true;	/* no offset: the caller has the memory */
			if (flags == MAP_PRIVATE)
				bad = true;
			if (flags == MAP_SHARED && (prot & PROT_WRITE) && f->rdonly)
				denied = true;
			fz_begin(OP_MMAP, "mmap fd=%d handle=%u off=%#llx len=%#llx (of %#llx) prot=%d %s",
				 fd, b->handle, (unsigned long long)off, (unsigned long long)len,
				 (unsigned long long)b->size, prot,
				 flags == MAP_SHARED ? "shared" : "private");
			if (denied)
				x_err(&x, EACCES, 0);
			else if (bad)
				x_err(&x, EINVAL, 0);
			else
				x_ok(&x, ENOMEM, 0);
			if (!b->user_known && !denied)
				x_allow(&x, EINVAL);
			/* A handle a child may have closed, its number reused. */
			if (!file_strict(f))
				x_ok(&x, ENOMEM, EINVAL, EACCES, 0);
		}
	}
	p = mmap(NULL, len, prot, flags, fd, (off_t)off);
	if (!fz_end(&x, p == MAP_FAILED ? -errno : 0) || p == MAP_FAILED)
		return;
	if (!obj || bad || denied) {
		munmap(p, len);	/* nothing we know how to use */
		return;
	}
	m->used = true;
	m->addr = p;
	m->len = len;
	m->obj = obj;
	m->bo_off = bo_off;
	m->writable = prot & PROT_WRITE;
	(void)size;
}

void op_munmap(void)
{
	struct fz_map *m = NULL;
	int idx[FZ_MAPS], n = 0;
	struct fz_expect x;

	for (int i = 0; i < FZ_MAPS; i++)
		if (fz->maps[i].used)
			idx[n++] = i;
	if (!n)
		return;
	m = &fz->maps[idx[rnd_below(n)]];
	x_ok(&x, 0);
	if (m->len > 4096 && chance(200)) {
		bool head = rnd_below(2);
		uint8_t *at = head ? m->addr : m->addr + m->len - 4096;

		fz_begin(OP_MUNMAP, "munmap %p len 4096 (the %s of %#zx)", (void *)at,
			 head ? "head" : "tail", m->len);
		fz_end(&x, munmap(at, 4096) ? -errno : 0);
		if (head) {
			m->addr += 4096;
			m->bo_off += 4096;
		}
		m->len -= 4096;
		return;
	}
	fz_begin(OP_MUNMAP, "munmap %p len %#zx", (void *)m->addr, m->len);
	fz_end(&x, munmap(m->addr, m->len) ? -errno : 0);
	m->used = false;
}

void op_touch(void)
{
	struct fz_map *m = NULL;
	int idx[FZ_MAPS], n = 0;
	struct fz_expect x;

	for (int i = 0; i < FZ_MAPS; i++)
		if (fz->maps[i].used)
			idx[n++] = i;
	if (!n)
		return;
	m = &fz->maps[idx[rnd_below(n)]];
	size_t off = align_down(rnd_below(m->len), 4);
	volatile uint32_t *w = (volatile uint32_t *)(m->addr + off);
	bool write = m->writable && chance(500);

	fz_begin(OP_TOUCH, "%s %p (+%#zx of a mapping of %#zx)", write ? "write" : "read",
		 (void *)w, off, m->len);
	x_ok(&x, 0);
	if (write)
		*w = rnd32();
	else
		(void)*w;
	fz_end(&x, 0);
}

/* Anonymous memory to register with USERPTR (read-only some of it). */
void op_host(void)
{
	struct fz_host *h = NULL;
	int idx[FZ_HOSTS], n = 0;
	struct fz_expect x;

	for (int i = 0; i < FZ_HOSTS; i++) {
		if (fz->hosts[i].used)
			idx[n++] = i;
		else if (!h)
			h = &fz->hosts[i];
	}
	if (n && (!h || chance(400))) {
		h = &fz->hosts[idx[rnd_below(n)]];
		fz_begin(OP_HOST, "munmap host memory %p len %#zx%s", (void *)h->addr, h->len,
			 h->ro ? " (read-only)" : "");
		x_ok(&x, 0);
		fz_end(&x, munmap(h->addr, h->len) ? -errno : 0);
		h->used = false;
		return;
	}
	size_t len = 4096 * rnd_range(1, chance(800) ? 16 : 64);
	bool ro = chance(200);
	void *p;

	fz_begin(OP_HOST, "mmap host memory len %#zx%s", len, ro ? " (read-only)" : "");
	x_ok(&x, ENOMEM, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 (chance(500) ? MAP_POPULATE : 0), -1, 0);
	if (!fz_end(&x, p == MAP_FAILED ? -errno : 0) || p == MAP_FAILED)
		return;
	memset(p, 0x5a, 64);
	if (ro)
		mprotect(p, len, PROT_READ);
	h->used = true;
	h->addr = p;
	h->len = len;
	h->ro = ro;
}

/* ---- processes ------------------------------------------------------------------- */
struct fdmsg {
	uint32_t kind;	/* X_DMABUF or X_NOTIFY */
	uint32_t user;	/* 1: host memory, 0: HBM, 2: not known */
};

/* A child hands a dma-buf or notify to its parent. */
static void send_fd(void)
{
	struct fz_xfd *d = pick_xfd(rnd_below(2) ? X_DMABUF : X_NOTIFY);
	struct fdmsg m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	struct fz_expect x;

	if (!d || fz->sock[1] < 0)
		return;
	m = (struct fdmsg){ .kind = d->kind, .user = d->user_known ? d->user : 2 };
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &d->fd, sizeof(int));
	fz_begin(OP_XFD, "send fd=%d (%s) to the parent", d->fd,
		 d->kind == X_DMABUF ? "dma-buf" : "notify");
	x_ok(&x, EAGAIN, ENOBUFS, 0);
	fz_end(&x, sendmsg(fz->sock[1], &mh, MSG_DONTWAIT) < 0 ? -errno : 0);
}

void op_recv_fds(void)
{
	struct fdmsg m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	struct fz_expect x;
	ssize_t n;
	int fd;

	if (fz->depth) {
		send_fd();
		return;
	}
	fz_begin(OP_XFD, "receive an fd from a child");
	x_ok(&x, EAGAIN, 0);
	n = recvmsg(fz->sock[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (!fz_end(&x, n < 0 ? -errno : 0) || n < (ssize_t)sizeof(m))
		return;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	struct fz_xfd *d = add_xfd(m.kind == X_DMABUF ? X_DMABUF : X_NOTIFY, fd);

	if (d && m.kind == X_DMABUF) {
		d->obj = new_obj();
		d->size = dmabuf_size(fd);
		d->user = m.user == 1;
		d->user_known = m.user < 2;
	}
}

static void drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { 64 << 10, 64 << 10 };

	if (syscall(SYS_capget, &h, d))
		return;
	for (int i = 0; i < 2; i++) {
		d[i].effective &= ~((1u << CAP_SYS_NICE) | (1u << CAP_IPC_LOCK));
		d[i].permitted &= ~((1u << CAP_SYS_NICE) | (1u << CAP_IPC_LOCK));
		d[i].inheritable = 0;
	}
	if (syscall(SYS_capset, &h, d))
		return;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	fz->unpriv = true;
}

void fz_child_loop(void);

void op_fork(void)
{
	struct fz_child *k = NULL;
	uint64_t seed = rnd64();
	int no;
	pid_t pid;

	if (fz->depth)
		return;
	for (int i = 0; i < FZ_CHILDREN && !k; i++)
		if (!fz->kids[i].pid)
			k = &fz->kids[i];
	if (!k) {
		op_child_reap(true);
		return;
	}
	/* Something to share: a notify of ours, exported. */
	if (chance(500))
		op_notify_export();
	/* The files it may use as well as we do: none, mostly, or one or two. */
	unsigned int share = 0;

	for (int i = 0; i < FZ_FILES; i++)
		if (fz->files[i].used && chance(200))
			share |= 1u << i;
	no = (int)fz->slot->children + 1;
	fz_begin(OP_FORK, "fork child %d, sharing files %#x", no, share);
	pid = fork();
	if (pid == 0) {
		struct fz_expect x;

		/* The child: a new stream, and everything inherited is shared. */
		snprintf(fz->name, sizeof(fz->name), "w%d.c%d", fz->worker, no);
		fz->depth = 1;
		rng_seed(&fz->rng, seed, 0);
		fz->calls = 0;
		fz->findings = 0;
		fz->limit = rnd_range(5, 400);
		/* Only the files shared with it: the others it closes (its copies). */
		for (int i = 0; i < FZ_FILES; i++) {
			struct fz_file *f = &fz->files[i];

			if (!f->used)
				continue;
			if (share >> i & 1) {
				f->tainted = true;
				continue;
			}
			for (int j = 0; j < f->nfds; j++)
				close(f->fds[j]);
			drop_file(f);
		}
		/* The parent's rings and children are the parent's. */
		for (int i = 0; i < FZ_RINGS; i++)
			fz->rings[i].used = false;
		memset(fz->kids, 0, sizeof(fz->kids));
		close(fz->sock[0]);
		fz->sock[0] = -1;
		if (chance(300))
			drop_caps();
		fz_begin(OP_FORK, "child started (%llu calls%s)", (unsigned long long)fz->limit,
			 fz->unpriv ? ", without CAP_SYS_NICE and CAP_IPC_LOCK" : "");
		x_ok(&x, 0);
		fz_end(&x, 0);
		fz_child_loop();
		/* Not reached */
	}
	struct fz_expect x;

	x_ok(&x, EAGAIN, ENOMEM, 0);
	if (!fz_end(&x, pid < 0 ? -errno : pid) || pid < 0)
		return;
	__atomic_add_fetch(&fz->slot->children, 1, __ATOMIC_RELAXED);
	k->pid = pid;
	/* Killed at a random point of its work, or left to finish. */
	k->kill_at = fz->calls + (chance(700) ? rnd_below(120) : 2000);
	/* The files shared with it can change under us from now on. */
	for (int i = 0; i < FZ_FILES; i++)
		if (share >> i & 1)
			fz->files[i].tainted = true;
}

/* Wait up to `ms` for a child: true once reaped. */
static bool kid_wait(struct fz_child *k, int ms, int *status)
{
	for (int i = 0; i <= ms; i += 5) {
		pid_t r = waitpid(k->pid, status, WNOHANG);

		if (r == k->pid || (r < 0 && errno == ECHILD))
			return true;
		if (ms)
			usleep(5000);
		else
			break;
	}
	return false;
}

static void show_file(const char *path, const char *grep)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fz_note("  %s: %s", path, strerror(errno));
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		fz_note("  %s: %s", path, strerror(errno));
		return;
	}
	buf[n] = '\0';
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (!grep || !strncmp(line, grep, strlen(grep)))
			fz_note("  %s: %s", path + 6, line);
}

/* Where a process is stuck: every thread's kernel stack. */
static void kid_stack(pid_t pid)
{
	char path[96];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	show_file(path, "State:");
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", pid, de->d_name);
		show_file(path, NULL);
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/wchan", pid, de->d_name);
		show_file(path, NULL);
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stack", pid, de->d_name);
		show_file(path, NULL);
	}
	if (d)
		closedir(d);
}

static void kid_done(struct fz_child *k, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)
		fz_finding("child %d exited with status %d", k->pid, WEXITSTATUS(status));
	else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		fz_finding("child %d died of signal %d", k->pid, WTERMSIG(status));
	k->pid = 0;
}

/* Reap children that finished; kill those whose time came (force: all). */
void op_child_reap(bool force)
{
	int status;

	for (int i = 0; i < FZ_CHILDREN; i++) {
		struct fz_child *k = &fz->kids[i];

		if (!k->pid)
			continue;
		if (kid_wait(k, 0, &status)) {
			kid_done(k, status);
			continue;
		}
		if (!force && fz->calls < k->kill_at)
			continue;
		struct fz_expect x;

		fz_begin(OP_CHILD_REAP, "kill -9 child %d", k->pid);
		x_ok(&x, 0);
		fz_end(&x, kill(k->pid, SIGKILL) ? -errno : 0);
		__atomic_add_fetch(&fz->slot->kills, 1, __ATOMIC_RELAXED);
		if (kid_wait(k, 20000, &status)) {
			kid_done(k, status);
			continue;
		}
		fz_finding("child %d did not die within 20 s of SIGKILL; its kernel stack:",
			   k->pid);
		kid_stack(k->pid);
		/* Give it more time; the baseline check will tell what it held. */
		if (kid_wait(k, 60000, &status))
			kid_done(k, status);
		else
			k->pid = 0;
	}
}

void kids_kill_all(void)
{
	op_child_reap(true);
}

/* ---- the end: close everything, in a random order ------------------------------ */
void teardown(void)
{
	int order[6] = { 0, 1, 2, 3, 4, 5 };

	for (int i = 5; i > 0; i--) {
		int j = (int)rnd_below(i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int s = 0; s < 6; s++) {
		switch (order[s]) {
		case 0:
			kids_kill_all();
			break;
		case 1:
			for (int i = 0; i < FZ_RINGS; i++)
				if (fz->rings[i].used)
					ring_exit(&fz->rings[i]);
			break;
		case 2:
			for (int i = 0; i < FZ_MAPS; i++)
				if (fz->maps[i].used) {
					munmap(fz->maps[i].addr, fz->maps[i].len);
					fz->maps[i].used = false;
				}
			break;
		case 3:
			for (int i = 0; i < FZ_XFDS; i++)
				if (fz->xfds[i].used)
					drop_xfd(&fz->xfds[i], true);
			break;
		case 4:
			for (int i = 0; i < FZ_FILES; i++) {
				struct fz_file *f = &fz->files[i];

				for (int j = 0; f->used && j < f->nfds; j++)
					close(f->fds[j]);
				if (f->used)
					drop_file(f);
			}
			break;
		default:
			for (int i = 0; i < FZ_HOSTS; i++)
				if (fz->hosts[i].used) {
					munmap(fz->hosts[i].addr, fz->hosts[i].len);
					fz->hosts[i].used = false;
				}
		}
	}
}
