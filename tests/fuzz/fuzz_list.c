// SPDX-License-Identifier: MIT
/*
 * npu-fuzz: task lists. TASKLIST_CREATE from the batches build_tasks()
 * makes (with I/O slots and patches, mostly good ones), TASKLIST_DESTROY,
 * RUN_LIST tasks inside the batches every submit path builds
 * (list_run_task()), and SUBMIT_MULTI over a file's queues.
 *
 * The model keeps each file's lists: handle, slot count, and what running
 * one may do (fault on the device, block on an event nobody records).
 * Runs bind slots to buffers of the file or to garbage; a garbage binding
 * may fault the run, never more.
 */
#include <string.h>
#include <sys/ioctl.h>

#include "fuzz.h"

/* I/O tables live here until the kernel has read them, io_uring too. */
#define IO_POOL		512
static uint64_t io_pool[IO_POOL][FZ_LIST_SLOTS];
static unsigned int io_next;

static struct fz_list *find_list(struct fz_file *f, uint32_t handle)
{
	for (int i = 0; i < f->nlist; i++)
		if (f->list[i].handle == handle)
			return &f->list[i];
	return NULL;
}

static uint32_t unused_list_handle(struct fz_file *f)
{
	uint32_t h;

	do
		h = chance(500) ? (uint32_t)rnd_range(1, 64) : rnd_garbage32();
	while (find_list(f, h));
	return h;
}

/*
 * An address for a slot of `size` bytes: a buffer of the file, or not.
 * Anything but a buffer big enough that the list may write may fault.
 */
static uint64_t slot_address(struct fz_file *f, uint64_t size, bool write, bool *wild)
{
	struct fz_bo *b = pick_bo(f, true);

	if (!b || chance(100)) {
		*wild = true;
		return chance(500) ? DRM_NPU_VA_END - 4096 : rnd_garbage64() & ~7ull;
	}
	if (b->size < size || (write && b->user_ro) || !b->user_known)
		*wild = true;
	return b->va;
}

bool list_run_task(struct fz_file *f, struct drm_npu_task *k, unsigned int *invalid,
		   bool *may_fail, bool *blocks)
{
	struct fz_list *l = f->nlist ? &f->list[rnd_below(f->nlist)] : NULL;
	uint64_t *io = io_pool[io_next++ % IO_POOL];
	bool wild = false;

	memset(k, 0, sizeof(*k));
	k->type = DRM_NPU_TASK_RUN_LIST;
	if (!l || chance(60)) {
		k->args[0] = unused_list_handle(f);
		k->args[1] = chance(2) ? (uintptr_t)io : 0;
		/*
		 * A child sharing the file may have made that one; a table
		 * for no slots is refused whatever the list.
		 */
		if (file_strict(f) || k->args[1])
			*invalid |= FZ_BAD_TASK;
		else
			*may_fail = *blocks = true;
		return true;
	}
	/*
	 * In a file a child shares, the handle may name another list by now
	 * (destroyed and made again there): its slot count is not known.
	 */
	unsigned int bad = file_strict(f) ? FZ_BAD_TASK : 0;

	if (!bad)
		*may_fail = *blocks = true;
	k->args[0] = l->handle;
	k->args[1] = l->nslots || chance(50) ? (uintptr_t)io : 0;
	k->args[2] = l->nslots;
	if (!l->nslots && k->args[1])
		*invalid |= bad;	/* a table for no slots */
	for (uint32_t i = 0; i < l->nslots; i++)
		io[i] = slot_address(f, l->size[i], l->write[i], &wild);
	if (chance(40)) {
		k->args[2] = l->nslots + 1 + (chance(500) ? 0 : rnd_below(300));
		/* A readable table, so the count is what is wrong. */
		k->args[1] = k->args[2] > FZ_LIST_SLOTS ? (uintptr_t)fz->scratch : (uintptr_t)io;
		*invalid |= bad;
	}
	*may_fail |= wild || l->may_fail;
	*blocks |= l->blocks;
	/* Each run launches again: a new buffer may be where it writes. */
	f->launched |= l->launches;
	return true;
}

/*
 * Patches for the list: each COPY or FILL, by chance, gets its first
 * address from a slot. A good patch clears the argument and fits the slot;
 * a bad one is refused (EINVAL) with the whole list.
 */
static uint32_t make_patches(struct drm_npu_task *t, uint32_t n, struct drm_npu_patch *p,
			     const struct drm_npu_io_slot *s, uint32_t nslots, bool *bad)
{
	uint32_t np = 0;

	for (uint32_t i = 0; i < n && nslots; i++) {
		uint64_t len;
		uint16_t slot = (uint16_t)rnd_below(nslots);

		if ((t[i].type != DRM_NPU_TASK_COPY && t[i].type != DRM_NPU_TASK_FILL) ||
		    !chance(500))
			continue;
		len = t[i].type == DRM_NPU_TASK_COPY ? t[i].args[2] : t[i].args[1];
		p[np] = (struct drm_npu_patch){ .task = i, .kind = DRM_NPU_PATCH_TASK_ARG,
						.slot = slot, .field = 0 };
		t[i].args[0] = 0;
		if (len > s[slot].size || !(s[slot].flags & DRM_NPU_IO_SLOT_WRITE))
			*bad = true;
		if (chance(40)) {
			switch (rnd_below(4)) {
			case 0: p[np].field = 3 + (uint32_t)rnd_below(100); break;
			case 1: p[np].slot = (uint16_t)(nslots + rnd_below(4)); break;
			case 2: p[np].flags = rnd32() | 1; break;
			default: t[i].args[0] = 4096; break;	/* not a placeholder */
			}
			*bad = true;
		}
		np++;
	}
	/* Out of order: refused. */
	if (np >= 2 && chance(50)) {
		struct drm_npu_patch x = p[0];

		p[0] = p[np - 1];
		p[np - 1] = x;
		*bad = true;
	}
	return np;
}

/*
 * Tasks at a longer stride, as a caller built with a newer header passes
 * them: zero past the known struct, or (sometimes, -E2BIG) not. Returns
 * whether the call must now fail on that.
 */
static bool widen_tasks(struct drm_npu_obj_array *a)
{
	const struct drm_npu_task *t = (const struct drm_npu_task *)(uintptr_t)a->array;
	uint32_t stride = sizeof(*t) + 8 * (uint32_t)rnd_range(1, 4);
	uint8_t *w = fz->scratch + 16 * 1024;
	bool tail = chance(200);

	memset(w, 0, (size_t)a->count * stride);
	for (uint32_t i = 0; i < a->count; i++)
		memcpy(w + (size_t)i * stride, &t[i], sizeof(*t));
	if (tail)
		w[(size_t)rnd_below(a->count) * stride + sizeof(*t) + rnd_below(8)] = 1;
	a->stride = stride;
	a->array = (uintptr_t)w;
	return tail;
}

void op_tasklist_create(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_task *t = (struct drm_npu_task *)fz->scratch;
	struct drm_npu_patch *p = (struct drm_npu_patch *)(fz->scratch + 8 * 1024);
	struct drm_npu_io_slot s[FZ_LIST_SLOTS];
	struct drm_npu_tasklist_create a = { 0 };
	bool may_fail, blocks, bad = false, ptr_bad = false;
	uint32_t n = (uint32_t)rnd_range(1, 8), nslots = (uint32_t)rnd_below(FZ_LIST_SLOTS + 1);
	unsigned int invalid;
	struct fz_expect x;
	long ret;

	build_tasks(f, 0, t, n, &invalid, &may_fail, &blocks);
	for (uint32_t i = 0; i < n; i++)
		if (t[i].type == DRM_NPU_TASK_RUN_LIST)
			invalid |= FZ_BAD_TASK;		/* not inside a list */
	for (uint32_t i = 0; i < nslots; i++)
		s[i] = (struct drm_npu_io_slot){ .size = chance(500) ? 4096 : 1 << 20,
						 .flags = chance(700) ? DRM_NPU_IO_SLOT_WRITE : 0 };
	/* Patching clears an address: it must not mend a malformed task. */
	if (!invalid)
		a.patches = (struct drm_npu_obj_array)DRM_NPU_OBJ_ARRAY(
			make_patches(t, n, p, s, nslots, &bad), p);
	a.tasks = (struct drm_npu_obj_array)DRM_NPU_OBJ_ARRAY(n, t);
	a.slots = (struct drm_npu_obj_array)DRM_NPU_OBJ_ARRAY(nslots, s);
	if (chance(30))
		ptr_bad |= widen_tasks(&a.tasks);	/* a newer caller's longer tasks */
	if (chance(20)) {
		switch (rnd_below(6)) {
		case 0: a.flags = rnd32() | 1; break;
		case 1: a.tasks.stride = (uint32_t)rnd_below(sizeof(*t)); break;
		case 2: a.handle = rnd32() | 1; break;
		case 3: a.tasks.count = chance(500) ? 0 : DRM_NPU_TASKLIST_MAX_TASKS + 1; break;
		case 4: a.slots.count = DRM_NPU_TASKLIST_MAX_SLOTS + 1; break;
		default:
			if (nslots)
				s[0].size = 0;
			else
				a.flags = 2;
		}
		bad = true;
	}
	if (chance(15)) {
		a.tasks.array = (uintptr_t)bad_ptr(n * sizeof(*t));
		ptr_bad = true;
	}
	fz_begin(OP_TASKLIST, "TASKLIST_CREATE fd=%d count=%u stride=%u patches=%u slots=%u%s%s%s",
		 file_fd(f), a.tasks.count, a.tasks.stride, a.patches.count, a.slots.count,
		 bad || invalid ? " [bad]" : "", ptr_bad ? " [bad tasks]" : "",
		 may_fail ? " [may fault]" : "");
	if (bad || invalid || ptr_bad) {
		x_err(&x, ENOMEM, 0);
		if (bad || invalid)
			x_allow(&x, EINVAL);
		/* Which the kernel finds first is its business. */
		if (ptr_bad) {
			x_allow(&x, EFAULT);
			x_allow(&x, E2BIG);
		}
	} else {
		x_ok(&x, ENOMEM, 0);
	}
	if (!file_strict(f))
		x_allow(&x, EINVAL);	/* an event a child let go */
	ret = fz_ioctl(file_fd(f), DRM_IOCTL_NPU_TASKLIST_CREATE, &a);
	if (!fz_end(&x, ret) || ret)
		return;
	if (f->nlist == FZ_LISTS) {
		/* The model is full: let the kernel have it back. */
		ioctl(file_fd(f), DRM_IOCTL_NPU_TASKLIST_DESTROY,
		      &(struct drm_npu_tasklist_destroy){ .handle = a.handle });
		return;
	}
	struct fz_list *l = &f->list[f->nlist++];

	bool launches = false;

	/* Every run waits again: a record seen once satisfies one run only. */
	for (uint32_t i = 0; i < n; i++) {
		blocks |= t[i].type == DRM_NPU_TASK_EVENT_WAIT ||
			  t[i].type == DRM_NPU_TASK_NOTIFY_WAIT;
		launches |= t[i].type == DRM_NPU_TASK_KERNEL;
	}

	*l = (struct fz_list){ .handle = a.handle, .nslots = nslots, .may_fail = may_fail,
			       .blocks = blocks, .launches = launches };
	for (uint32_t i = 0; i < nslots; i++) {
		l->size[i] = s[i].size;
		l->write[i] = s[i].flags & DRM_NPU_IO_SLOT_WRITE;
	}
}

void op_tasklist_destroy(void)
{
	struct fz_file *f = pick_file();
	struct fz_list *l = f->nlist && chance(850) ? &f->list[rnd_below(f->nlist)] : NULL;
	struct drm_npu_tasklist_destroy a = { .handle = l ? l->handle : unused_list_handle(f) };
	struct fz_expect x;
	long ret;

	if (chance(20))
		a.flags = rnd32() | 1;
	fz_begin(OP_TASKLIST, "TASKLIST_DESTROY fd=%d handle=%u flags=%#x%s", file_fd(f),
		 a.handle, a.flags, l ? "" : " [not ours]");
	if (a.flags)
		x_err(&x, EINVAL, 0);
	else if (!l)
		x_err(&x, EINVAL, 0), x.ok = !file_strict(f);	/* the other side's */
	else if (file_strict(f))
		x_ok(&x, 0);
	else
		x_ok(&x, EINVAL, 0);	/* a child destroyed it */
	ret = fz_ioctl(file_fd(f), DRM_IOCTL_NPU_TASKLIST_DESTROY, &a);
	fz_end(&x, ret);
	if (l && !a.flags) {
		*l = f->list[--f->nlist];
	}
}

/*
 * SUBMIT_MULTI over distinct queues of a file. The queue model learns
 * the sequence numbers; a run's batches can stop each other's queues,
 * so every queue of a run that may fail may fail.
 */
void op_submit_multi(void)
{
	struct fz_file *f = pick_file();
	struct drm_npu_submit_entry e[DRM_NPU_SUBMIT_MULTI_MAX];
	struct drm_npu_submit_multi a = { 0 };
	static struct drm_npu_task t[DRM_NPU_SUBMIT_MULTI_MAX][4];
	static uint8_t eb[DRM_NPU_SUBMIT_MULTI_MAX * (sizeof(e[0]) + 32)];
	bool may_fail = false, blocks = false, bad = false, dup = false, unsure = false;
	bool too_big = false, bad_args = false;
	uint32_t stride;
	uint32_t n = (uint32_t)rnd_range(1, 3), qs[DRM_NPU_SUBMIT_MULTI_MAX];
	struct fz_expect x;
	long ret;

	for (uint32_t i = 0; i < n; i++) {
		int r = pick_queue(f, false);
		unsigned int invalid;
		uint32_t count = (uint32_t)rnd_range(1, 4);
		bool mf, bl;

		qs[i] = r < 0 || chance(100) ? (uint32_t)rnd_below(FZ_QUEUES) : (uint32_t)r;
		for (uint32_t k = 0; k < i; k++)
			dup |= qs[k] == qs[i];
		build_tasks(f, (int)qs[i], t[i], count, &invalid, &mf, &bl);
		bad |= invalid != 0;
		may_fail |= mf;
		blocks |= bl;
		e[i] = (struct drm_npu_submit_entry){ .tasks = (uintptr_t)t[i], .count = count,
						      .queue = qs[i] };
		if (qs[i] && queue_sure_absent(f, (int)qs[i]))
			bad = true;
		else if (qs[i] && !queue_sure_live(f, (int)qs[i]))
			unsure = true;
	}
	/* Entries at the caller's stride: sometimes a newer caller's, longer. */
	stride = chance(300) ? sizeof(e[0]) + 8 * (uint32_t)rnd_range(1, 4) : sizeof(e[0]);
	memset(eb, 0, sizeof(eb));
	for (uint32_t i = 0; i < n; i++)
		memcpy(eb + i * stride, &e[i], sizeof(e[0]));
	a.entries = (struct drm_npu_obj_array){ .stride = stride, .count = n,
						.array = (uintptr_t)eb };
	if (chance(20)) {
		struct drm_npu_submit_entry *e0 = (struct drm_npu_submit_entry *)(void *)eb;

		switch (rnd_below(6)) {
		case 0: a.flags = rnd32() | 1; break;
		case 1: a.pad = rnd32() | 1; break;
		case 2: e0->flags = rnd32() | 1; break;
		case 3: e0->pad = rnd32() | 1; break;
		case 4: a.entries.stride = (uint32_t)rnd_below(sizeof(e[0])); break;
		default: a.entries.count = chance(500) ? 0 : DRM_NPU_SUBMIT_MULTI_MAX + 1; break;
		}
		bad = bad_args = true;
	} else if (stride > sizeof(e[0]) && chance(200)) {
		eb[(n - 1) * stride + sizeof(e[0]) + rnd_below(stride - sizeof(e[0]))] = 1;
		too_big = true;
	}
	fz_begin(OP_SUBMIT_MULTI, "SUBMIT_MULTI fd=%d count=%u stride=%u queues=%u,%u,%u%s%s",
		 file_fd(f), a.entries.count, a.entries.stride, qs[0], n > 1 ? qs[1] : 0,
		 n > 2 ? qs[2] : 0, bad || dup || too_big ? " [bad]" : "",
		 may_fail ? " [may fault]" : "");
	if (too_big)
		x_err(&x, E2BIG, ENOMEM, 0);	/* read before anything is built */
	else if (bad || dup)
		x_err(&x, EINVAL, ENOMEM, 0);
	else
		x_ok(&x, ENOMEM, 0);
	/*
	 * Queues are looked up in id order after the batches are built: the
	 * default one, made on first use, may fail first, whatever comes after.
	 */
	for (uint32_t i = 0; i < n && !bad_args && !too_big; i++) {
		if (qs[i] == 0 && !queue_sure_live(f, 0)) {
			x_allow(&x, EBUSY);
			x_allow(&x, EIO);
		}
	}
	if (!bad && !dup && !too_big) {
		if (unsure || !file_strict(f))
			x_allow(&x, EINVAL);
		for (uint32_t i = 0; i < n; i++)
			if (queue_may_fail(f, (int)qs[i]))
				x_allow(&x, EIO);
	}
	/* Waits for ring room: a blocked queue may keep it waiting. */
	fz_arm_ms(2000);
	ret = fz_ioctl(file_fd(f), DRM_IOCTL_NPU_SUBMIT_MULTI, &a);
	fz_disarm();
	if (ret == -EINTR)
		x_allow(&x, EINTR);
	if (!fz_end(&x, ret))
		return;
	if (ret) {
		/* The default queue is made at lookup, before a later entry can fail. */
		for (uint32_t i = 0; i < n; i++)
			if (qs[i] == 0 && f->q[0].state == Q_NONE)
				f->q[0].state = Q_UNKNOWN;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct fz_queue *q = &f->q[qs[i]];

		q->state = Q_LIVE;
		q->seq_fuzzy = true;	/* numbered beside the model's own count */
		uint64_t seq;

		memcpy(&seq, eb + i * stride + offsetof(struct drm_npu_submit_entry, seq), sizeof(seq));
		if (seq > q->max_seq)
			q->max_seq = seq;
		q->may_fail |= may_fail;
		q->blocked |= blocks;
	}
}
