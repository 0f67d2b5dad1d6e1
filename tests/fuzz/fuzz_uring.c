// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: io_uring commands (IORING_OP_URING_CMD SUBMIT, WAIT,
 * EVENT_WAIT) on rings of every kind the uapi speaks of: SQE128|CQE32
 * (default and SINGLE_ISSUER|DEFER_TASKRUN), SQPOLL, rings without the
 * big entries, IOPOLL. Every command's CQE is checked against what was
 * expected of it when it was submitted, and must come exactly once.
 */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fuzz.h"

enum { U_SUBMIT, U_WAIT, U_EVENT_WAIT, U_OTHER };

/* What an in-flight SUBMIT reads later (from an io_uring worker): kept apart. */
#define UR_TASKS 16
static struct drm_npu_task ur_tasks[FZ_RINGS][FZ_INFLIGHT][UR_TASKS];
static struct drm_npu_syncobj ur_sync[FZ_RINGS][FZ_INFLIGHT][2][4];

static const char *const ring_names[] = { "default", "defer", "sqpoll", "small", "iopoll" };

static int ring_index(const struct fz_ring *r)
{
	return (int)(r - fz->rings);
}

static struct fz_ring *pick_ring(bool with_inflight)
{
	int idx[FZ_RINGS], n = 0;

	for (int i = 0; i < FZ_RINGS; i++)
		if (fz->rings[i].used && (!with_inflight || fz->rings[i].inflight))
			idx[n++] = i;
	return n ? &fz->rings[idx[rnd_below(n)]] : NULL;
}

bool fz_uring_no_links;

/*
 * Linux 6.10 to 6.13 read a linked uring_cmd's SQE when the link before
 * it completes, not at submit (fixed by "io_uring/uring_cmd:
 * unconditionally copy SQEs at prep time", 6.14 and 6.13.4): by then
 * liburing has handed the slot out again, and the command runs on what
 * is there. This fuzzer reuses slots at once, so on such a kernel it
 * links nothing (libnpurt never links). The probe: a WAIT that completes
 * at once, linked behind a pipe read, its slot rewritten before the read
 * completes; read late, it is a WAIT on a queue that does not exist.
 */
bool uring_reads_sqes_late(int fd)
{
	struct drm_npu_uring_wait good = { .seq = 0, .queue = 0 };
	struct drm_npu_uring_wait bad = { .seq = 5, .queue = 0xfffe };
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32 };
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	char byte = 1, got;
	bool late = false;
	int pfd[2];

	if (pipe(pfd))
		return false;
	if (io_uring_queue_init_params(4, &ring, &p)) {
		close(pfd[0]);
		close(pfd[1]);
		return false;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, pfd[0], &got, 1, 0);
	sqe->flags = IOSQE_IO_LINK;
	sqe->user_data = 1;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = DRM_NPU_URING_CMD_WAIT;
	memcpy(sqe->cmd, &good, sizeof(good));
	sqe->user_data = 2;
	if (io_uring_submit(&ring) == 2) {
		memcpy(sqe->cmd, &bad, sizeof(bad));
		if (write(pfd[1], &byte, 1) == 1) {
			for (int i = 0; i < 2 && !io_uring_wait_cqe(&ring, &cqe); i++) {
				if (cqe->user_data == 2)
					late = cqe->res != 0;
				io_uring_cqe_seen(&ring, cqe);
			}
		}
	}
	io_uring_queue_exit(&ring);
	close(pfd[0]);
	close(pfd[1]);
	return late;
}

void op_uring_setup(void)
{
	struct fz_ring *r = NULL;
	struct io_uring_params p;
	struct fz_expect x;
	unsigned int entries = 1u << rnd_range(3, 6);
	int kind, ret;

	for (int i = 0; i < FZ_RINGS && !r; i++)
		if (!fz->rings[i].used)
			r = &fz->rings[i];
	if (!r) {
		op_uring_exit();
		return;
	}
	unsigned int k = (unsigned int)rnd_below(100);

	kind = k < 45 ? RING_DEFAULT : k < 80 ? RING_DEFER : k < 88 ? RING_SMALL :
	       k < 95 ? RING_SQPOLL : RING_IOPOLL;
	/*
	 * Not in children, which get killed: before 6.7 a killed process's
	 * SQPOLL thread waits forever for commands the driver parked (see
	 * the report of this fuzzer; npu_uring_reap() does not see them).
	 */
	if (kind == RING_SQPOLL && fz->depth)
		kind = RING_DEFAULT;
	memset(&p, 0, sizeof(p));
	if (kind != RING_SMALL)
		p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	if (kind == RING_DEFER)
		p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	if (kind == RING_SQPOLL) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 5;	/* ms: the thread must not spin long under TCG */
	}
	if (kind == RING_IOPOLL)
		p.flags |= IORING_SETUP_IOPOLL;
	fz_begin(OP_URING_SETUP, "io_uring_setup ring %d: %s, %u entries", ring_index(r),
		 ring_names[kind], entries);
	x_ok(&x, fz->unpriv ? ENOMEM : 0, 0);
	memset(&r->r, 0, sizeof(r->r));
	ret = io_uring_queue_init_params(entries, &r->r, &p);
	if (!fz_end(&x, ret) || ret)
		return;
	r->used = true;
	r->kind = (uint8_t)kind;
	r->inflight = 0;
	memset(r->pend, 0, sizeof(r->pend));
	r->next_ud = ((uint64_t)ring_index(r) << 56) | 1;
}

static struct fz_pending *find_pending(struct fz_ring *r, uint64_t ud)
{
	for (int i = 0; i < FZ_INFLIGHT; i++)
		if (r->pend[i].used && r->pend[i].ud == ud)
			return &r->pend[i];
	return NULL;
}

/* The model forgets what a lost CQE would have told it. */
static void forget_pending(struct fz_pending *p)
{
	if (p->op == U_SUBMIT && p->file >= 0) {
		struct fz_file *f = &fz->files[p->file];

		if (f->used && f->gen == p->file_gen) {
			struct fz_queue *q = &f->q[p->queue];

			if (q->pending)
				q->pending--;
			q->seq_fuzzy = q->strays = true;
		}
	}
	p->used = false;
}

void ring_exit(struct fz_ring *r)
{
	for (int i = 0; i < FZ_INFLIGHT; i++)
		if (r->pend[i].used)
			forget_pending(&r->pend[i]);
	io_uring_queue_exit(&r->r);
	r->used = false;
	r->inflight = 0;
}

void op_uring_exit(void)
{
	struct fz_ring *r = pick_ring(false);
	struct fz_expect x;

	if (!r)
		return;
	fz_begin(OP_URING_EXIT, "close ring %d (%s) with %d commands in flight", ring_index(r),
		 ring_names[r->kind], r->inflight);
	x_ok(&x, 0);
	ring_exit(r);
	fz_end(&x, 0);
}

/* A CQE against what its command expected. */
static void check_cqe(struct fz_ring *r, uint64_t ud, int32_t res, uint64_t res2)
{
	struct fz_pending *p = find_pending(r, ud);
	char want[64];

	if (!p) {
		fz_finding("ring %d: a CQE for user_data %#llx, which is not in flight (res %d)",
			   ring_index(r), (unsigned long long)ud, res);
		return;
	}
	r->inflight--;
	bool good = res >= 0 ? p->x.ok : x_allows(&p->x, -res);
	uint32_t st = DRM_NPU_URING_RES2_STATUS(res2);

	if (good) {
		/* The second result. */
		if (res == 0 && p->op == U_SUBMIT && r->kind <= RING_SQPOLL && !res2)
			good = false;
		else if (res == 0 && p->op == U_WAIT && r->kind <= RING_SQPOLL && res2 != p->seq)
			good = false;
		else if (res == -EIO && r->kind <= RING_SQPOLL && !(p->op == U_SUBMIT && !res2) &&
			 (st < DRM_NPU_JOB_FAULT || st > DRM_NPU_JOB_RESET || st == DRM_NPU_JOB_ABORTED))
			good = false;
		else if (res == -ECANCELED && res2 && st != DRM_NPU_JOB_ABORTED)
			good = false;
		else if (res < 0 && res != -EIO && res != -ECANCELED && res2)
			good = false;
	}
	if (!good) {
		snprintf(want, sizeof(want), "res %d res2 %#llx", res, (unsigned long long)res2);
		fz_finding("ring %d (%s): CQE %s for [%s]", ring_index(r), ring_names[r->kind], want,
			   p->desc);
	}
	/* What it tells of the queue. */
	if (p->file >= 0) {
		struct fz_file *f = &fz->files[p->file];
		struct fz_queue *q = &f->q[p->queue];

		if (f->used && f->gen == p->file_gen) {
			if (p->op == U_SUBMIT && q->pending)
				q->pending--;
			/* Issued late, it may have landed on a newer queue of that id. */
			if (p->op == U_SUBMIT && q->gen != p->qgen) {
				q->seq_fuzzy = q->may_fail = true;
				if (p->queue == 0 && q->state == Q_NONE)
					q->state = Q_UNKNOWN;	/* it made a default queue */
			}
			if (q->gen == p->qgen) {
				if (res == 0 && p->op == U_SUBMIT) {
					if (res2 > q->max_seq)
						q->max_seq = res2;
					if (res2 > q->done)
						q->done = res2;
					if (q->state == Q_UNKNOWN)
						q->state = Q_LIVE;
				} else if (res == 0 && p->op == U_WAIT && p->seq > q->done) {
					q->done = p->seq;
				} else if (res == -EIO || res == -ECANCELED) {
					q->may_fail = true;
					q->failed |= res == -EIO;
					if (p->op == U_SUBMIT)
						q->seq_fuzzy = true;
				}
			}
		}
	}
	p->used = false;
}

/* Take what CQEs there are (waiting up to wait_ms for the first). */
void ring_reap_all(struct fz_ring *r, int wait_ms)
{
	struct io_uring_cqe *c;
	int n = 0;

	if (r->kind == RING_DEFER || r->kind == RING_IOPOLL || r->kind == RING_SQPOLL)
		io_uring_get_events(&r->r);
	while (r->inflight > 0) {
		int ret = io_uring_peek_cqe(&r->r, &c);

		if (ret && wait_ms && !n) {
			struct __kernel_timespec ts = { .tv_sec = wait_ms / 1000,
							.tv_nsec = (wait_ms % 1000) * 1000000ll };

			ret = io_uring_wait_cqe_timeout(&r->r, &c, &ts);
		}
		if (ret)
			break;
		check_cqe(r, c->user_data, c->res,
			  (r->r.flags & IORING_SETUP_CQE32) ? c->big_cqe[0] : 0);
		io_uring_cqe_seen(&r->r, c);
		n++;
	}
}

void op_uring_reap(bool wait)
{
	struct fz_ring *r = pick_ring(true);
	struct fz_expect x;
	int ms = wait ? (int)rnd_range(1, 10) : 0;

	if (!r)
		return;
	fz_begin(OP_URING_REAP, "reap ring %d (%s), %d in flight, waiting %d ms", ring_index(r),
		 ring_names[r->kind], r->inflight, ms);
	x_ok(&x, 0);
	ring_reap_all(r, ms);
	fz_end(&x, 0);
}

/* ---- commands ----------------------------------------------------------------------- */
struct ucmd {
	uint32_t cmd_op;
	uint8_t payload[80];
	unsigned int len;	/* bytes of payload written */
	int fd;
	int op;			/* U_* */
	int file;		/* -1: not one of ours */
	uint32_t queue;
	uint64_t seq;
	struct fz_expect x;
	char desc[112];
	bool link, async;
	/* What a SUBMIT does to the model, if it goes ahead as built. */
	bool may_fail, blocks;
	struct fz_syncobj *out;
	uint64_t out_point;
};

/*
 * A SUBMIT: tasks and syncobjs in memory that stays as it is until the
 * CQE, since an io_uring worker may read them late.
 */
static void make_submit(struct ucmd *u, struct fz_file *f, int slot, int ring)
{
	struct drm_npu_submit s = { 0 };
	struct drm_npu_task *t = ur_tasks[ring][slot];
	struct drm_npu_syncobj *in = ur_sync[ring][slot][0], *out = ur_sync[ring][slot][1];
	unsigned int invalid;
	bool sure_bad = false;
	int qi = pick_queue(f, false);
	uint32_t n = (uint32_t)rnd_range(1, chance(900) ? 4 : UR_TASKS);
	struct fz_expect *x = &u->x;

	if (qi < 0 || chance(30))
		s.queue = chance(700) ? (uint32_t)rnd_below(FZ_QUEUES) : rnd_garbage32();
	else
		s.queue = (uint32_t)qi;
	build_tasks(f, (int)s.queue, t, n, &invalid, &u->may_fail, &u->blocks);
	s.tasks = (uintptr_t)t;
	s.count = n;
	if (chance(20))
		s.count = chance(500) ? 0 : DRM_NPU_SUBMIT_MAX_TASKS + 1;
	if (chance(10))
		s.flags = rnd32() | 1;
	if (chance(10))
		s.pad = rnd32() | 1;
	if (chance(15))
		s.seq = rnd64() | 1;	/* must be zero here */
	if (chance(20)) {
		s.tasks = (uintptr_t)bad_ptr(n * sizeof(*t));
		sure_bad = true;
	}
	if (chance(100) && f->nso) {
		in[0] = (struct drm_npu_syncobj){ .handle = pick_so(f)->handle };
		s.in_syncobjs = (uintptr_t)in;
		s.in_count = 1;
	}
	if (chance(100) && f->nso) {
		u->out = pick_so(f);
		u->out_point = chance(500) ? u->out->last_point + 1 : 0;
		out[0] = (struct drm_npu_syncobj){ .handle = u->out->handle, .point = u->out_point };
		s.out_syncobjs = (uintptr_t)out;
		s.out_count = 1;
	}
	if (chance(20))
		s.in_count = DRM_NPU_SUBMIT_MAX_SYNCOBJS + 1;
	memcpy(u->payload, &s, sizeof(s));
	u->len = sizeof(s);
	u->op = U_SUBMIT;
	u->queue = s.queue;
	snprintf(u->desc, sizeof(u->desc), "SUBMIT queue=%u count=%u flags=%#x pad=%#x seq=%llu in=%u out=%u%s%s",
		 s.queue, s.count, s.flags, s.pad, (unsigned long long)s.seq, s.in_count,
		 s.out_count, invalid ? " [invalid]" : "", sure_bad ? " [bad tasks]" : "");

	/* Expected as for the ioctl (see op_submit()): any error of what is wrong. */
	struct fz_queue *q = s.queue < FZ_QUEUES ? &f->q[s.queue] : NULL;
	bool wrong = false;

	x_none(x);
	x_allow(x, ENOMEM);
	if (s.seq || s.flags || s.pad || !s.count || s.count > DRM_NPU_SUBMIT_MAX_TASKS) {
		x_err(x, EINVAL, 0);
		return;
	}
	if (sure_bad)
		x_allow(x, EFAULT), wrong = true;
	if (invalid)
		x_allow(x, EINVAL), wrong = true;
	if (s.in_count > DRM_NPU_SUBMIT_MAX_SYNCOBJS)
		x_allow(x, EINVAL), wrong = true;
	if (s.in_count) {
		x_allow(x, EINVAL);	/* a dependency without a fence */
		x_allow(x, ENOENT);
	}
	if (!file_strict(f)) {
		x_allow(x, EINVAL);
		x_allow(x, ENOENT);
	}
	if (!q || (s.queue && queue_sure_absent(f, (int)s.queue)))
		x_allow(x, EINVAL), wrong = true;
	else if (s.queue && !queue_sure_live(f, (int)s.queue))
		x_allow(x, EINVAL);
	if (s.queue == 0 && !queue_sure_live(f, 0))
		x_allow(x, EBUSY), x_allow(x, EIO);
	/* Failed on the device, aborted, destroyed, or its ring closed. */
	x_allow(x, ECANCELED);
	if (!q || u->may_fail || queue_may_fail(f, (int)s.queue))
		x_allow(x, EIO);
	x->ok = !wrong;
}

static void make_wait(struct ucmd *u, struct fz_file *f)
{
	struct drm_npu_uring_wait w = { 0 };
	int qi = pick_queue(f, false);
	struct fz_queue *q;
	bool beyond = false;
	unsigned int k;

	if (qi < 0 || chance(40))
		w.queue = chance(600) ? (uint32_t)rnd_below(FZ_QUEUES) : rnd_garbage32();
	else
		w.queue = (uint32_t)qi;
	q = w.queue < FZ_QUEUES ? &f->q[w.queue] : NULL;
	k = (unsigned int)rnd_below(100);
	if (!q)
		w.seq = 1;
	else if (k < 60)
		w.seq = q->max_seq;
	else if (k < 80)
		w.seq = q->max_seq ? rnd_range(1, q->max_seq) : 0;
	else if (k < 88)
		w.seq = 0;
	else
		w.seq = q->max_seq + 1000000 + rnd_below(1ull << 40), beyond = true;
	k = (unsigned int)rnd_below(10);
	/* polls (0, the past), a short deadline, none, or anything */
	w.deadline_ns = k < 2 ? 0 : k < 4 ? fz_past_deadline() :
			k < 7 ? fz_deadline((int64_t)rnd_range(1000, 5000000)) :
			k < 9 ? DRM_NPU_DEADLINE_NONE : (int64_t)rnd_garbage64();
	if (chance(30))
		w.flags = rnd32() | 1;
	memcpy(u->payload, &w, sizeof(w));
	u->len = sizeof(w);
	u->op = U_WAIT;
	u->queue = w.queue;
	u->seq = w.seq;
	snprintf(u->desc, sizeof(u->desc), "WAIT queue=%u seq=%llu deadline=%lld flags=%#x",
		 w.queue, (unsigned long long)w.seq, (long long)w.deadline_ns, w.flags);
	if (w.flags || !q)
		x_err(&u->x, EINVAL, 0);
	else if (queue_sure_absent(f, (int)w.queue))
		w.queue == 0 && !w.seq ? x_ok(&u->x, 0) : x_err(&u->x, EINVAL, 0);
	else if (beyond && queue_sure_live(f, (int)w.queue))
		x_err(&u->x, EINVAL, 0);
	else {
		x_ok(&u->x, ETIMEDOUT, ECANCELED, 0);
		if (queue_may_fail(f, (int)w.queue))
			x_allow(&u->x, EIO);
		if (!queue_sure_live(f, (int)w.queue) || beyond)
			x_allow(&u->x, EINVAL);
	}
}

static void make_event_wait(struct ucmd *u, struct fz_file *f)
{
	struct drm_npu_uring_event_wait w = { 0 };
	struct fz_sync *s = pick_sync(f, DRM_NPU_SYNC_EVENT), *n = pick_sync(f, DRM_NPU_SYNC_NOTIFY);
	bool held = false;
	unsigned int k;

	if (s && chance(850))
		w.id = s->id, held = true;
	else
		w.id = n && chance(500) ? n->id : unused_sync_id(f);
	k = (unsigned int)rnd_below(10);
	/* polls (0, the past), a short deadline, none, or anything */
	w.deadline_ns = k < 2 ? 0 : k < 4 ? fz_past_deadline() :
			k < 7 ? fz_deadline((int64_t)rnd_range(1000, 5000000)) :
			k < 9 ? DRM_NPU_DEADLINE_NONE : (int64_t)rnd_garbage64();
	if (chance(30))
		w.flags = rnd32() | 1;
	memcpy(u->payload, &w, sizeof(w));
	u->len = sizeof(w);
	u->op = U_EVENT_WAIT;
	snprintf(u->desc, sizeof(u->desc), "EVENT_WAIT id=%u deadline=%lld flags=%#x", w.id,
		 (long long)w.deadline_ns, w.flags);
	if (w.flags || (!held && file_strict(f)))
		x_err(&u->x, EINVAL, 0);
	else if (!file_strict(f))
		x_ok(&u->x, EINVAL, ETIMEDOUT, EIO, ECANCELED, 0);
	else
		x_ok(&u->x, ETIMEDOUT, EIO, ECANCELED, 0);
}

/* Make u a command the driver must refuse, or one for a file that is not the driver's. */
static void mangle(struct ucmd *u)
{
	const char *what;

	if (u->op == U_WAIT && chance(300)) {
		/* An older, shorter payload: the rest reads as zero. */
		uint32_t len = chance(500) ? 8 : 16;

		memset(u->payload + len, 0, sizeof(u->payload) - len);
		u->cmd_op = _IOC(_IOC_WRITE, DRM_IOCTL_BASE, _IOC_NR(u->cmd_op), len);
		x_ok(&u->x, ETIMEDOUT, ECANCELED, EIO, EINVAL, 0);
		what = " (short payload)";
	} else if (chance(150)) {
		/* /dev/null takes any command (it has uring_cmd, for tests). */
		switch (rnd_below(3)) {
		case 0:
			u->fd = fz->devnull;
			x_ok(&u->x, 0);
			break;
		case 1:
			u->fd = fz->evfd;
			x_err(&u->x, EOPNOTSUPP, 0);
			break;
		default:
			u->fd = 4000 + (int)rnd_below(50);
			x_err(&u->x, EBADF, 0);
		}
		u->file = -1;
		what = " [not a device fd]";
	} else {
		switch (rnd_below(6)) {
		case 0:	/* unknown command */
			u->cmd_op = DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_URING_CMD_BASE + 3 +
					    (uint32_t)rnd_below(60), struct drm_npu_uring_wait);
			break;
		case 1:	/* another direction */
			u->cmd_op = _IOC(rnd_below(2) ? _IOC_READ | _IOC_WRITE : _IOC_READ,
					 DRM_IOCTL_BASE, _IOC_NR(u->cmd_op), _IOC_SIZE(u->cmd_op));
			break;
		case 2:	/* another type */
			u->cmd_op = _IOC(_IOC_WRITE, 'x', _IOC_NR(u->cmd_op), _IOC_SIZE(u->cmd_op));
			break;
		case 3:	/* more than 80 bytes */
			u->cmd_op = _IOC(_IOC_WRITE, DRM_IOCTL_BASE, _IOC_NR(u->cmd_op),
					 81 + (uint32_t)rnd_below(100));
			break;
		case 4:	/* longer, with something past the struct */
			u->cmd_op = _IOC(_IOC_WRITE, DRM_IOCTL_BASE, _IOC_NR(u->cmd_op), 80);
			u->payload[u->len + rnd_below(80 - u->len)] = (uint8_t)(rnd32() | 1);
			break;
		default:	/* a plain ioctl number */
			u->cmd_op = DRM_IOCTL_NPU_GET_PARAM;
		}
		x_err(&u->x, EINVAL, 0);
		what = " [bad cmd_op]";
	}
	u->op = U_OTHER;
	strncat(u->desc, what, sizeof(u->desc) - strlen(u->desc) - 1);
}

void op_uring_submit(void)
{
	struct fz_ring *r = pick_ring(false);
	struct fz_file *f = pick_file();
	struct fz_expect x;
	bool prev_link = false;
	int n, ring, queued = 0, ret;
	struct ucmd u;

	if (!r) {
		op_uring_setup();
		return;
	}
	ring = ring_index(r);
	int room = (int)r->r.cq.ring_entries - 8 < FZ_INFLIGHT - 8 ?
		   (int)r->r.cq.ring_entries - 8 : FZ_INFLIGHT - 8;

	if (r->inflight > room) {
		ring_reap_all(r, 5);
		if (r->inflight > room) {
			op_uring_exit();	/* cancels what is parked there */
			return;
		}
	}
	n = (int)rnd_range(1, 6);
	if (n > (int)r->r.sq.ring_entries)
		n = (int)r->r.sq.ring_entries;
	fz_begin(OP_URING_SUBMIT, "ring %d (%s):", ring, ring_names[r->kind]);
	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *sqe;
		struct fz_pending *p;
		int slot = -1;
		unsigned int k;

		for (int s = 0; s < FZ_INFLIGHT && slot < 0; s++)
			if (!r->pend[s].used)
				slot = s;
		if (slot < 0)
			break;
		memset(&u, 0, sizeof(u));
		u.fd = file_fd(f);
		u.file = file_index(f);
		k = (unsigned int)rnd_below(100);
		if (k < 55)
			make_submit(&u, f, slot, ring);
		else if (k < 80)
			make_wait(&u, f);
		else
			make_event_wait(&u, f);
		u.cmd_op = u.op == U_SUBMIT ? DRM_NPU_URING_CMD_SUBMIT :
			   u.op == U_WAIT ? DRM_NPU_URING_CMD_WAIT : DRM_NPU_URING_CMD_EVENT_WAIT;
		if (chance(80))
			mangle(&u);
		/* What the ring does to every command. */
		if (r->kind == RING_SMALL && u.file >= 0)
			x_err(&u.x, EINVAL, 0);
		if (r->kind == RING_IOPOLL)
			x_err(&u.x, EOPNOTSUPP, EINVAL, EBADF, 0);
		if (r->kind >= RING_SMALL)
			u.op = U_OTHER;
		if (r->kind == RING_SQPOLL)
			x_allow(&u.x, EBADF);	/* issued later: the fd may be gone by then */
		u.link = i + 1 < n && chance(100) && !fz_uring_no_links;
		u.async = chance(50);
		/*
		 * Issued later than now (by an io_uring worker, or when the link
		 * before it completes): what the model says of its queue, event
		 * or fd may no longer hold then.
		 */
		if ((u.async || prev_link) && u.op != U_OTHER) {
			u.x.ok = true;
			x_allow(&u.x, EINVAL);
			x_allow(&u.x, ENOENT);
			x_allow(&u.x, EIO);
			x_allow(&u.x, EBUSY);
			x_allow(&u.x, EBADF);
			x_allow(&u.x, EOPNOTSUPP);
			x_allow(&u.x, ETIMEDOUT);
		}
		if (prev_link)
			x_allow(&u.x, ECANCELED);	/* an earlier link of its chain failed */
		prev_link = u.link;

		sqe = io_uring_get_sqe(&r->r);
		if (!sqe)
			break;
		memset(sqe, 0, r->kind == RING_SMALL ? 64 : 128);
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = u.fd;
		sqe->cmd_op = u.cmd_op;
		sqe->user_data = r->next_ud;
		sqe->flags = (u.link ? IOSQE_IO_LINK : 0) | (u.async ? IOSQE_ASYNC : 0);
		memcpy(sqe->cmd, u.payload, r->kind == RING_SMALL ? 16 : 80);

		/* The model: a SUBMIT that goes ahead. */
		if (u.op == U_SUBMIT && u.queue < FZ_QUEUES) {
			struct fz_queue *q = &f->q[u.queue];

			q->may_fail |= u.may_fail;
			q->blocked |= u.blocks;
			q->pending++;
			if (q->state == Q_NONE)
				q->state = Q_UNKNOWN;
		}
		if (u.out) {
			u.out->risky = true;	/* its fence comes with a seq we learn late */
			u.out->fence = true;
			if (u.out_point) {
				u.out->timeline = true;
				if (u.out_point > u.out->last_point)
					u.out->last_point = u.out_point;
			}
		}
		p = &r->pend[slot];
		memset(p, 0, sizeof(*p));
		p->used = true;
		p->ud = r->next_ud++;
		p->call = fz->calls;
		p->op = (uint8_t)u.op;
		p->file = (int8_t)((u.op == U_SUBMIT || u.op == U_WAIT) && u.queue < FZ_QUEUES ?
				   u.file : -1);
		p->file_gen = f->gen;
		p->queue = (uint8_t)(u.queue < FZ_QUEUES ? u.queue : 0);
		p->qgen = u.queue < FZ_QUEUES ? f->q[u.queue].gen : 0;
		p->seq = u.seq;
		p->x = u.x;
		snprintf(p->desc, sizeof(p->desc), "#%llu fd=%d %s%s%s",
			 (unsigned long long)fz->calls, u.fd, u.desc, u.link ? " link" : "",
			 u.async ? " async" : "");
		fz_more(" [%s]", strchr(p->desc, ' ') + 1);
		r->inflight++;
		queued++;
	}
	x_ok(&x, EBUSY, EAGAIN, EINTR, 0);
	__atomic_add_fetch(&fz->shared->uring_cmds, queued, __ATOMIC_RELAXED);
	ret = io_uring_submit(&r->r);
	/* The SQPOLL thread issues them: wait for it, so the model holds. */
	for (int i = 0; r->kind == RING_SQPOLL && ret >= 0 && io_uring_sq_ready(&r->r) && i < 2000; i++)
		usleep(100);
	if (!fz_end(&x, ret < 0 ? ret : 0))
		return;
	if (ret >= 0 && ret != queued && r->kind != RING_SQPOLL)
		fz_note("io_uring_submit took %d of %d", ret, queued);
}
