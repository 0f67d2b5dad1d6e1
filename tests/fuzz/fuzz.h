/* SPDX-License-Identifier: MIT */
/*
 * npu-fuzz: a seeded fuzzer of the whole uapi of npu.ko (see npu_fuzz.c).
 *
 * One fuzzing process (a worker, or a child a worker forked) keeps a model
 * of what it holds: open files of the device, and in each its buffer
 * handles, queues, events and notifies, syncobjs; CPU mappings, dma-buf,
 * notify and syncobj fds, host memory for USERPTR, io_uring rings and the
 * commands in flight on them. Calls pick their arguments from the model
 * (mostly plausible ones, so they get past validation) or make them up,
 * and each call says beforehand what it may return: a result outside that
 * is a finding, printed with the call number and the calls before it.
 */
#ifndef NPU_FUZZ_H
#define NPU_FUZZ_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <liburing.h>
#include <drm.h>
#include <time.h>

#include <drm/npu_accel.h>

#include "npu_oplib.h"	/* the op library's argument block */

/* Driver ioctl numbers end here; past it, -EINVAL up to the io_uring range. */
#define FZ_DRIVER_NR_END	(DRM_COMMAND_BASE + DRM_NPU_CLOCK + 1)

/* The highest GET_PARAM number the driver knows; past it, -EINVAL. */
#define FZ_PARAM_LAST	DRM_NPU_PARAM_DMA_ENGINES

/* ---- limits of the model (per process) --------------------------------- */
#define FZ_FILES	4	/* open files of the device */
#define FZ_FDS_PER_FILE	3	/* dup()s of one file */
#define FZ_BOS		40	/* handles per file */
#define FZ_SYNCS	40	/* events and notifies per file */
#define FZ_SYNCOBJS	16	/* syncobjs per file */
#define FZ_URANGES	24	/* USERPTR ranges per file */
#define FZ_QUEUES	8	/* NPU_CTX_QUEUES */
#define FZ_GONE		4	/* closed buffers' ranges remembered */
#define FZ_MAPS		24	/* CPU mappings */
#define FZ_XFDS		24	/* dma-buf, notify, syncobj and sync_file fds */
#define FZ_HOSTS	10	/* anonymous memory for USERPTR */
#define FZ_RINGS	3
#define FZ_INFLIGHT	40	/* commands in flight per ring */
#define FZ_CHILDREN	2
#define FZ_DEPS		4	/* batch fences a syncobj may carry */
#define FZ_HIST		16	/* calls kept for reports */
#define FZ_DESC		320
#define FZ_LISTS	8	/* task lists per file */
#define FZ_LIST_SLOTS	4	/* I/O slots per list */

/* ---- the random stream: xoshiro256** seeded by splitmix64 ------------------ */
struct fz_rng {
	uint64_t s[4];
};

uint64_t fz_splitmix(uint64_t *x);
void rng_seed(struct fz_rng *r, uint64_t seed, uint64_t stream);
uint64_t rnd64(void);
uint32_t rnd32(void);
uint64_t rnd_below(uint64_t n);			/* [0, n), n > 0 */
uint64_t rnd_range(uint64_t lo, uint64_t hi);	/* [lo, hi] */
bool chance(unsigned int per_mille);
uint64_t rnd_garbage64(void);			/* interesting values */
uint32_t rnd_garbage32(void);

/* ---- what a call may return --------------------------------------------- */
struct fz_expect {
	uint64_t err[3];	/* allowed errnos, a bit each (< 192) */
	bool ok;		/* success allowed */
};

static inline void x_none(struct fz_expect *x)
{
	x->err[0] = x->err[1] = x->err[2] = 0;
	x->ok = false;
}

static inline void x_allow(struct fz_expect *x, int e)
{
	if (e > 0 && e < 192)
		x->err[e / 64] |= 1ull << (e % 64);
}

static inline bool x_allows(const struct fz_expect *x, int e)
{
	return e > 0 && e < 192 && (x->err[e / 64] >> (e % 64) & 1);
}

/* Success expected, with these errors also possible (0-terminated). */
void x_ok(struct fz_expect *x, ...);
/* Failure expected, with one of these (0-terminated). */
void x_err(struct fz_expect *x, ...);

/* ---- the model ------------------------------------------------------------ */
struct fz_bo {
	uint32_t handle;
	uint32_t obj;		/* same obj: same buffer (a process-wide id) */
	uint64_t size;		/* 0 until known (imports) */
	uint64_t va;		/* in this file's context; 0 until known */
	uint64_t mmap_offset;	/* 0: none (USERPTR) or not known yet */
	uint32_t page_size;
	bool user;		/* registered host memory */
	bool user_ro;
	bool user_known;	/* whether it is host memory is known */
	uint64_t uaddr;		/* user: the host address registered */
	bool mine;		/* created through this file (charged to it) */
	bool info;		/* size, va, offset are known */
};

enum fz_qstate { Q_NONE, Q_LIVE, Q_UNKNOWN };

struct fz_queue {
	uint8_t state;		/* enum fz_qstate */
	bool may_fail;		/* it was given work that can fail, or aborted */
	bool blocked;		/* it may wait on an event nobody records */
	uint32_t gen;		/* bumped on destroy and create */
	uint64_t max_seq;	/* the last sequence number seen handed out */
	uint64_t done;		/* known completed up to */
	uint32_t pending;	/* io_uring SUBMITs without their CQE */
	bool seq_fuzzy;		/* sequence numbers went unseen */
	/*
	 * SUBMITs of a closed ring, forgotten, may still land on a queue of
	 * this id, whichever one has it by then: never cleared.
	 */
	bool strays;
	bool failed;		/* it said EIO: failed (until destroyed) */
	uint32_t timeout_ms;
};

struct fz_sync {
	uint32_t id;
	uint8_t kind;		/* DRM_NPU_SYNC_EVENT or DRM_NPU_SYNC_NOTIFY */
	bool recorded;		/* a record was queued for it (a hint) */
};

struct fz_dep {
	uint8_t q;
	uint32_t gen;
	uint64_t seq;
};

struct fz_syncobj {
	uint32_t handle;
	bool timeline;		/* used with points */
	bool fence;		/* it has a fence (a hint) */
	bool risky;		/* may wait for a fence we cannot see through */
	uint8_t ndeps;
	struct fz_dep deps[FZ_DEPS];
	uint64_t last_point;
};

struct fz_list {
	uint32_t handle;
	uint32_t nslots;
	uint64_t size[FZ_LIST_SLOTS];
	bool write[FZ_LIST_SLOTS];	/* the list's tasks may write it */
	bool may_fail;		/* running it may fault on the device */
	bool blocks;		/* it may wait on an event nobody records */
	bool launches;		/* it holds a launch, whose tensors nobody holds */
};

struct fz_urange {
	uint64_t addr, size;
	bool zombie;		/* handle closed; may still be registered */
};

struct fz_file {
	bool used;
	bool primary;		/* the primary node (card), not the render node */
	bool rdonly;		/* opened O_RDONLY */
	bool tainted;		/* another process may change it: relax oracles */
	bool launched;		/* has queued a launch, whose tensors the driver
				 * does not hold: it may write a buffer created
				 * after it (uapi.rst) */
	bool unsure_objs;	/* holds imports whose buffer is not known, which
				 * may be any file's: a mapping of another file's
				 * buffer may be allowed */
	uint32_t gen;		/* bumped when the slot is reused */
	int nfds;
	int fds[FZ_FDS_PER_FILE];
	int nbo, nsync, nso, nur, nlist;
	struct fz_bo bo[FZ_BOS];
	struct fz_queue q[FZ_QUEUES];
	struct fz_sync sync[FZ_SYNCS];
	struct fz_syncobj so[FZ_SYNCOBJS];
	struct fz_urange ur[FZ_URANGES];
	struct fz_list list[FZ_LISTS];
	/* The last ranges of buffers it closed, which a task may still name. */
	uint64_t gone_va[FZ_GONE], gone_len[FZ_GONE];
	uint32_t ngone;
};

struct fz_map {
	bool used;
	uint8_t *addr;
	size_t len;
	uint32_t obj;		/* the buffer shown */
	uint64_t bo_off;	/* where in the buffer addr is */
	bool writable;
};

enum fz_xkind { X_DMABUF = 1, X_NOTIFY, X_SYNCOBJ, X_SYNCFILE };

struct fz_xfd {
	bool used;
	uint8_t kind;		/* enum fz_xkind */
	int fd;
	uint32_t obj;		/* X_DMABUF: the buffer (0 if unknown) */
	uint64_t size;		/* X_DMABUF: bytes (0 if unknown) */
	bool user;		/* X_DMABUF of registered host memory */
	bool user_known;	/* X_DMABUF: whether host memory is known */
	bool obj_known;		/* X_DMABUF: obj is the buffer, not a stand-in */
};

struct fz_host {
	bool used;
	uint8_t *addr;
	size_t len;
	bool ro;
};

enum fz_ring_kind { RING_DEFAULT, RING_DEFER, RING_SQPOLL, RING_SMALL, RING_IOPOLL };

struct fz_pending {
	bool used;
	uint64_t ud;
	uint64_t call;		/* the call that submitted it */
	uint8_t op;		/* 0 submit, 1 wait, 2 event wait, 3 other */
	int8_t file;		/* -1: not a file of ours */
	uint32_t file_gen;
	uint8_t queue;
	uint32_t qgen;
	uint64_t seq;		/* WAIT: the seq asked for */
	struct fz_expect x;
	char desc[96];
};

struct fz_ring {
	bool used;
	uint8_t kind;		/* enum fz_ring_kind */
	struct io_uring r;
	int inflight;
	uint64_t next_ud;
	struct fz_pending pend[FZ_INFLIGHT];
};

struct fz_child {
	pid_t pid;
	uint64_t kill_at;	/* our call count at which it is killed */
};

/* Per worker, in memory shared with the supervisor. */
struct fz_slot {
	volatile uint64_t calls;	/* the worker's own */
	volatile uint64_t child_calls;
	volatile uint64_t findings;
	volatile uint64_t children;
	volatile uint64_t kills;
	volatile int pid;
	volatile int finished;
	volatile uint32_t hist_pos;
	char hist[FZ_HIST][FZ_DESC];
	/* The worker's (or a child's) first finding, for the verdict's line. */
	volatile int first_taken;
	char first[FZ_DESC + 520];
};

/* Calls per kind, over all processes (shared, approximate under races). */
enum fz_op {
	OP_GET_PARAM, OP_BO_CREATE, OP_BO_INFO, OP_MEM_USAGE, OP_SUBMIT, OP_WAIT,
	OP_USERPTR, OP_QUEUE_CREATE, OP_QUEUE_DESTROY, OP_QUEUE_ABORT,
	OP_SYNC_CREATE, OP_SYNC_DESTROY, OP_EVENT_QUERY, OP_EVENT_WAIT,
	OP_NOTIFY_EXPORT, OP_NOTIFY_IMPORT, OP_GEM_CLOSE, OP_PRIME_EXPORT,
	OP_PRIME_IMPORT, OP_GEM_FLINK_OPEN, OP_SYNCOBJ, OP_DRM_INFO, OP_RAW_IOCTL,
	OP_SIZED_IOCTL, OP_MMAP, OP_MUNMAP, OP_TOUCH, OP_HOST, OP_OPEN, OP_CLOSE,
	OP_DUP, OP_URING_SETUP, OP_URING_SUBMIT, OP_URING_REAP, OP_URING_EXIT,
	OP_FORK, OP_CHILD_REAP, OP_XFD, OP_READ_INFO, OP_SYNC_QUOTA,
	OP_TASKLIST, OP_SUBMIT_MULTI,
	OP_COUNT
};

struct fz_shared {
	volatile int device_reset;	/* the supervisor saw a reset: relax */
	volatile int stop;		/* time is up: finish now */
	volatile uint64_t op_calls[OP_COUNT];
	volatile uint64_t op_ok[OP_COUNT];
	volatile uint64_t op_ns[OP_COUNT];	/* time spent in them */
	volatile uint64_t uring_cmds;		/* io_uring commands issued */
	struct fz_slot slot[];
};

/* Everything one fuzzing process has. */
struct fz_proc {
	struct fz_rng rng;
	int worker;		/* index */
	int depth;		/* 0 worker, 1.. a child */
	char name[24];
	uint64_t calls, limit;
	uint64_t findings;
	uint64_t log_from, stop_at;
	bool verbose;
	bool unpriv;		/* dropped CAP_SYS_NICE and CAP_IPC_LOCK */
	uint32_t next_obj;
	uint64_t hbm_live;	/* bytes of buffers this process created, roughly */
	struct fz_file files[FZ_FILES];
	struct fz_map maps[FZ_MAPS];
	struct fz_xfd xfds[FZ_XFDS];
	struct fz_host hosts[FZ_HOSTS];
	struct fz_ring rings[FZ_RINGS];
	struct fz_child kids[FZ_CHILDREN];
	int sock[2];		/* fds from children (SCM_RIGHTS) */
	int followup_file;	/* a queue said EIO: destroy it next, often */
	int followup_queue;
	int devnull;
	int evfd;		/* an fd of no use to the driver */
	/* Memory with an inaccessible page after it, for bad pointers. */
	uint8_t *scratch;	/* FZ_SCRATCH bytes, then a PROT_NONE page */
	uint8_t *guard;
	struct fz_slot *slot;
	struct fz_shared *shared;
	char desc[FZ_DESC];
	int cur_op;
	uint64_t t_begin;	/* ns, when the current call began */
	bool alarm_armed;
	uint64_t params[FZ_PARAM_LAST + 1];	/* GET_PARAM values read at start */
	char debugfs[96];	/* /sys/kernel/debug/dri/N, accel/0000:00:02.0... */
};

#define FZ_SCRATCH	(20 * 4096)

extern struct fz_proc *fz;
extern char fz_render[64], fz_card[64];

/* ---- calls ---------------------------------------------------------------- */
/* Start a call: counts it and describes it (printf-like). */
void fz_begin(int op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Add to the description. */
void fz_more(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What a call returned, after fz_end() (shown again in verbose logs). */
void fz_after(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* End it: ret is 0/positive or -errno; false (and a finding) if not allowed. */
bool fz_end(const struct fz_expect *x, long ret);
/* A finding not about an errno: a wrong value. */
void fz_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fz_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ioctl(): 0 or -errno. Blocking ones arm an alarm first (EINTR). */
long fz_ioctl(int fd, unsigned long req, void *arg);
void fz_arm_ms(unsigned int ms);
void fz_disarm(void);

/* ---- the model ------------------------------------------------------------ */
struct fz_file *pick_file(void);		/* opens one if none */
struct fz_file *pick_file_maybe(void);		/* NULL if none */
int file_index(const struct fz_file *f);
int file_fd(const struct fz_file *f);
struct fz_bo *pick_bo(struct fz_file *f, bool need_info);
struct fz_bo *find_handle(struct fz_file *f, uint32_t handle);
struct fz_bo *find_obj(struct fz_file *f, uint32_t obj);
struct fz_bo *add_bo(struct fz_file *f);
void drop_bo(struct fz_file *f, struct fz_bo *b);
uint32_t unused_handle(struct fz_file *f);
bool va_overlaps(struct fz_file *f, const struct fz_bo *self, uint64_t va, uint64_t size);
struct fz_sync *find_sync(struct fz_file *f, uint32_t id);
struct fz_sync *pick_sync(struct fz_file *f, int kind);	/* kind 0: any */
uint32_t unused_sync_id(struct fz_file *f);
void drop_sync(struct fz_file *f, struct fz_sync *s);
struct fz_syncobj *find_so(struct fz_file *f, uint32_t handle);
struct fz_syncobj *pick_so(struct fz_file *f);
void drop_so(struct fz_file *f, struct fz_syncobj *s);
uint32_t unused_so_handle(struct fz_file *f);
void so_add_dep(struct fz_file *f, struct fz_syncobj *s, int q, uint64_t seq, bool replace);
int pick_queue(struct fz_file *f, bool live_only);	/* -1 if none */
int live_queues(void);		/* this process's, all files */
/* May it have failed? (io_uring SUBMITs still pending may land on it.) */
bool queue_may_fail(const struct fz_file *f, int q);
int queue_budget(void);
bool queue_sure_absent(struct fz_file *f, int q);
bool queue_sure_live(struct fz_file *f, int q);
struct fz_xfd *add_xfd(int kind, int fd);
struct fz_xfd *pick_xfd(int kind);		/* kind 0: any */
void drop_xfd(struct fz_xfd *x, bool close_it);
struct fz_map *add_map(void);
void drop_file(struct fz_file *f);
int open_file(bool primary, bool rdonly, struct fz_expect *x_out);
uint32_t new_obj(void);
void taint_all(void);
bool file_strict(const struct fz_file *f);

/* ---- operations (one call each, unless said) -------------------------------- */
void op_get_param(void);
void op_bo_create(void);
void op_bo_info(void);
void op_mem_usage(void);
void op_submit(void);
void op_wait(void);
void op_userptr(void);
void op_queue_create(void);
void op_queue_destroy(bool abort);
void op_sync_create(void);
void op_sync_destroy(void);
void op_event_query(void);
void op_event_wait(void);
void op_notify_export(void);
void op_notify_import(void);
void op_sync_quota(void);		/* many calls */
void op_gem_close(void);
void op_prime_export(void);
void op_prime_import(void);
void op_gem_flink_open(void);
void op_syncobj(void);
void op_drm_info(void);
void op_raw_ioctl(void);
void op_sized_ioctl(void);
void op_mmap(void);
void op_munmap(void);
void op_touch(void);
void op_host(void);
void op_open(void);
void op_close(void);
void op_dup(void);
void op_xfd_close(void);
void op_read_info(void);
void op_uring_setup(void);
void op_uring_submit(void);
void op_uring_reap(bool wait);
void op_uring_exit(void);
bool uring_reads_sqes_late(int fd);
extern bool fz_uring_no_links;
void op_fork(void);
void op_child_reap(bool force);
void op_recv_fds(void);
void op_tasklist_create(void);
void op_tasklist_destroy(void);
void op_submit_multi(void);
uint64_t dmabuf_size(int fd);	/* 0 if it cannot tell */

/* Helpers the operations share. */
/* *invalid: FZ_BAD_TASK (malformed) and FZ_BAD_SYNC (an event the context does not hold) */
#define FZ_BAD_TASK	1u
#define FZ_BAD_SYNC	2u
bool build_tasks(struct fz_file *f, int q, struct drm_npu_task *t, uint32_t n,
		 unsigned int *invalid, bool *may_fail, bool *blocks);
void *bad_ptr(size_t len);			/* an address that faults */
/* A RUN_LIST of one of f's lists (or not), as build_tasks() takes it. */
bool list_run_task(struct fz_file *f, struct drm_npu_task *k, unsigned int *invalid,
		   bool *may_fail, bool *blocks);
void ring_exit(struct fz_ring *r);
void ring_reap_all(struct fz_ring *r, int wait_ms);
void kids_kill_all(void);
void teardown(void);				/* close everything, random order */
void fz_dump_history(void);
int rdonly_allowed(void);

/* A uapi deadline (absolute CLOCK_MONOTONIC ns) rel_ns from now. */
static inline int64_t fz_deadline(int64_t rel_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + rel_ns;
}

/*
 * A deadline that has passed, which makes a wait a poll: 0, the recent
 * past, any negative value, and the far end, INT64_MIN and just above it,
 * where deadline - now overflows (issue 33: it waited forever).
 */
static inline int64_t fz_past_deadline(void)
{
	switch (rnd_below(8)) {
	case 0: case 1: case 2: return 0;
	case 3: case 4: return -(int64_t)rnd_below(1ull << 62);
	case 5: return INT64_MIN + (int64_t)rnd_below(1000000000);
	default: return fz_deadline(-(int64_t)rnd_range(1, 1000000000));
	}
}

static inline uint64_t align_down(uint64_t v, uint64_t a)
{
	return v & ~(a - 1);
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif /* NPU_FUZZ_H */
