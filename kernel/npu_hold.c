// SPDX-License-Identifier: GPL-2.0-only
/*
 * Holds: what a batch or a task list keeps alive while the device may
 * use it (npu_hold.h).
 *
 * Locking: built under ctx->vm_lock, which the mapping lookup needs. Room is
 * made before a reference is taken, so nothing is ever put under it: a
 * last put takes bo->maps_lock, which ranks above ctx->vm_lock, or, for a
 * hole, ctx->vm_lock itself.
 *
 * A range holds its VA as well as what is mapped there: the unmapped
 * gaps become holes in ctx->va_mm for as long as the holder lives, so a
 * buffer created meanwhile is placed elsewhere. Without them a FILL to
 * an address nothing mapped at submit would write into whatever buffer
 * was created there before the FILL ran. A launch's tensors are not
 * among the ranges (the driver does not parse argument blocks): a
 * launch that writes through an address it was not given a buffer for
 * can still reach a buffer of its own context created after it.
 */
#include <drm/npu_accel.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_hold.h"
#include "npu_sync.h"

/*
 * Mappings, and holes, one holder may hold. Each is held once however
 * many tasks name it, so this bounds the arrays whatever the tasks'
 * ranges; more is -E2BIG.
 */
#define NPU_HOLD_MAX_MAPS	4096

/*
 * Marks are unique device-wide, not per context: an event or notify may
 * be held by several contexts (exported and imported), and a mark of one
 * context's holder must never equal another's.
 */
void npu_holds_begin(struct npu_holds *h, struct npu_ctx *ctx)
{
	lockdep_assert_held(&ctx->vm_lock);
	h->mark = atomic64_inc_return(&ctx->ndev->hold_marks);
}

/* Room for one more in the array of `n` pointers at `arrp`. */
static int npu_holds_grow(void *arrp, u32 n, u32 *cap)
{
	void **old = *(void ***)arrp, **grown;
	u32 c;

	if (n < *cap)
		return 0;
	if (*cap == NPU_HOLD_MAX_MAPS)
		return -E2BIG;
	c = min(max(16u, *cap * 2), (u32)NPU_HOLD_MAX_MAPS);
	grown = kvmalloc_array(c, sizeof(*grown), GFP_KERNEL_ACCOUNT);
	if (!grown)
		return -ENOMEM;
	if (n)
		memcpy(grown, old, n * sizeof(*grown));
	kvfree(old);
	*(void ***)arrp = grown;
	*cap = c;
	return 0;
}

static void npu_holds_add_hole(struct npu_holds *h, struct npu_va_hole *hole)
{
	hole->mark = h->mark;
	h->holes[h->nholes++] = hole;
}

/* A hole already in the tree, or a going mapping's heir. */
static int npu_holds_hole(struct npu_holds *h, struct npu_va_hole *hole)
{
	int ret;

	if (hole->mark == h->mark)
		return 0;	/* held already */
	ret = npu_holds_grow(&h->holes, h->nholes, &h->hole_cap);
	if (ret)
		return ret;
	kref_get(&hole->ref);	/* nonzero: a last put takes ctx->vm_lock */
	npu_holds_add_hole(h, hole);
	return 0;
}

/*
 * A new hole, counted against the context's budget: nothing but kernel
 * memory backs one, so a context's task lists could otherwise pile up
 * millions of them.
 */
static struct npu_va_hole *npu_va_hole_new(struct npu_holds *h, struct npu_ctx *ctx)
{
	struct npu_va_hole *hole;
	int ret;

	if (ctx->nholes >= NPU_CTX_MAX_HOLES)
		return ERR_PTR(-E2BIG);
	ret = npu_holds_grow(&h->holes, h->nholes, &h->hole_cap);
	if (ret)
		return ERR_PTR(ret);
	hole = kzalloc(sizeof(*hole), GFP_KERNEL_ACCOUNT);
	if (!hole)
		return ERR_PTR(-ENOMEM);
	kref_init(&hole->ref);		/* the holder's */
	hole->ctx = ctx;
	hole->va.color = NPU_VA_HOLE;
	ctx->nholes++;
	return hole;
}

/* Under ctx->vm_lock: a hole goes, its range back to the allocator. */
static void npu_va_hole_free(struct npu_va_hole *hole)
{
	lockdep_assert_held(&hole->ctx->vm_lock);
	if (drm_mm_node_allocated(&hole->va))
		drm_mm_remove_node(&hole->va);
	hole->ctx->nholes--;
	kfree(hole);
}

/* [start, start + size), which no node of ctx->va_mm covers. */
static int npu_holds_gap(struct npu_holds *h, struct npu_ctx *ctx, u64 start, u64 size)
{
	struct npu_va_hole *hole = npu_va_hole_new(h, ctx);
	int ret;

	if (IS_ERR(hole))
		return PTR_ERR(hole);
	hole->va.start = start;
	hole->va.size = size;
	ret = drm_mm_reserve_node(&ctx->va_mm, &hole->va);
	if (ret) {
		npu_va_hole_free(hole);
		return ret;
	}
	npu_holds_add_hole(h, hole);
	return 0;
}

/*
 * A mapping that is going away (its last reference is gone, its range not
 * yet given back): hold the range through its heir.
 */
static int npu_holds_heir(struct npu_holds *h, struct npu_ctx *ctx, struct npu_bo_map *map)
{
	struct npu_va_hole *heir;

	if (map->heir)
		return npu_holds_hole(h, map->heir);
	heir = npu_va_hole_new(h, ctx);
	if (IS_ERR(heir))
		return PTR_ERR(heir);
	kref_get(&heir->ref);			/* the mapping's, until it hands over */
	map->heir = heir;
	npu_holds_add_hole(h, heir);
	return 0;
}

static int npu_holds_map(struct npu_holds *h, struct npu_ctx *ctx, struct npu_bo_map *map)
{
	int ret;

	if (map->job_mark == h->mark)
		return 0;	/* held already */
	ret = npu_holds_grow(&h->maps, h->nmaps, &h->map_cap);
	if (ret)
		return ret;
	if (!kref_get_unless_zero(&map->ref))
		return npu_holds_heir(h, ctx, map);
	map->job_mark = h->mark;
	h->maps[h->nmaps++] = map;
	return 0;
}

/*
 * Under ctx->vm_lock: hold [va, va + size), what is mapped there and what
 * is not. Only the user's VA space can be named; the part of a range
 * outside it has nothing to hold (the device faults there, and no buffer
 * is ever placed there).
 */
int npu_holds_range(struct npu_holds *h, struct npu_ctx *ctx, u64 va, u64 size)
{
	struct drm_mm_node *node;
	u64 at = max_t(u64, va, DRM_NPU_VA_BASE), end = va + size;
	int ret;

	lockdep_assert_held(&ctx->vm_lock);
	if (end < va || end > DRM_NPU_VA_END)
		end = DRM_NPU_VA_END;
	if (at >= end)
		return 0;
	/* A gap reserved on the way goes in before the node the walk is on. */
	drm_mm_for_each_node_in_range(node, &ctx->va_mm, at, end) {
		if (node->start > at) {
			ret = npu_holds_gap(h, ctx, at, node->start - at);
			if (ret)
				return ret;
		}
		at = max(at, node->start + node->size);
		if (node->color == NPU_VA_HOLE)
			ret = npu_holds_hole(h, container_of(node, struct npu_va_hole, va));
		else
			ret = npu_holds_map(h, ctx, container_of(node, struct npu_bo_map, va));
		if (ret)
			return ret;
	}
	return at < end ? npu_holds_gap(h, ctx, at, end - at) : 0;
}

/*
 * Under ctx->vm_lock: the event or notify a task names must be one this
 * context holds, of the task's kind; the holder keeps it alive, with one
 * reference however many tasks name it (a model's list waits on the
 * same notifies thousands of times). Another context's holder may mark
 * the same object meanwhile, under its own lock: then this one takes a
 * second reference, never none.
 */
static int npu_holds_sync(struct npu_holds *h, struct npu_ctx *ctx,
			  const struct drm_npu_task *t)
{
	u32 kind = t->type <= DRM_NPU_TASK_EVENT_RESET ? DRM_NPU_SYNC_EVENT : DRM_NPU_SYNC_NOTIFY;
	struct npu_sync *s;

	lockdep_assert_held(&ctx->vm_lock);
	if (t->args[0] > U32_MAX)
		return -EINVAL;
	/*
	 * Room first: SYNC_DESTROY does not wait for this lock, so a put
	 * here could be the last one.
	 */
	if (h->nsyncs == h->sync_cap) {
		struct npu_sync **syncs;
		u32 cap = max(4u, h->sync_cap * 2);

		syncs = krealloc(h->syncs, cap * sizeof(*syncs), GFP_KERNEL_ACCOUNT);
		if (!syncs)
			return -ENOMEM;
		h->syncs = syncs;
		h->sync_cap = cap;
	}
	s = npu_sync_lookup(ctx, (u32)t->args[0], kind);
	if (!s)
		return -EINVAL;
	if (READ_ONCE(s->hold_mark) == h->mark) {
		npu_sync_put(s);	/* held already: the holder's keeps it */
		return 0;
	}
	WRITE_ONCE(s->hold_mark, h->mark);
	h->syncs[h->nsyncs++] = s;
	return 0;
}

int npu_holds_task(struct npu_holds *h, struct npu_ctx *ctx, const struct drm_npu_task *t,
		   u32 skip)
{
	int ret = 0;

	switch (t->type) {
	case DRM_NPU_TASK_COPY:
		if (!(skip & BIT(0)))
			ret = npu_holds_range(h, ctx, t->args[0], t->args[2]);
		if (!ret && !(skip & BIT(1)))
			ret = npu_holds_range(h, ctx, t->args[1], t->args[2]);
		return ret;
	case DRM_NPU_TASK_FILL:
		return skip & BIT(0) ? 0 : npu_holds_range(h, ctx, t->args[0], t->args[1]);
	case DRM_NPU_TASK_TIMESTAMP:
		return skip & BIT(0) ? 0 : npu_holds_range(h, ctx, t->args[0], 8);
	case DRM_NPU_TASK_KERNEL:
		/*
		 * Only the argument block: the tensors it names are in device
		 * memory the driver does not parse. Closing one early makes
		 * the launch fault, never reach freed memory (unmapping waits
		 * for the task running on the device).
		 */
		return skip & BIT(0) ? 0 : npu_holds_range(h, ctx, t->args[0], t->args[2]);
	case DRM_NPU_TASK_EVENT_RECORD:
	case DRM_NPU_TASK_EVENT_WAIT:
	case DRM_NPU_TASK_EVENT_RESET:
	case DRM_NPU_TASK_NOTIFY_RECORD:
	case DRM_NPU_TASK_NOTIFY_WAIT:
		return npu_holds_sync(h, ctx, t);
	default:
		return 0;
	}
}

static void npu_va_hole_release(struct kref *ref)
{
	struct npu_va_hole *hole = container_of(ref, struct npu_va_hole, ref);
	struct npu_ctx *ctx = hole->ctx;

	npu_va_hole_free(hole);
	mutex_unlock(&ctx->vm_lock);
}

static bool npu_va_hole_put_not_last(struct npu_va_hole *hole)
{
	return refcount_dec_not_one(&hole->ref.refcount);
}

static void npu_va_hole_put(struct npu_va_hole *hole)
{
	kref_put_mutex(&hole->ref, npu_va_hole_release, &hole->ctx->vm_lock);
}

/*
 * Under ctx->vm_lock, from the last put of the mapping whose range `va` is:
 * the range goes back to the allocator, or to the heir a holder gave the
 * mapping while it was going (a hole in its place, for that holder's
 * life). Both drops to zero of an heir happen under ctx->vm_lock, so the
 * heir is in the tree exactly while a holder has it.
 */
void npu_va_hand_over(struct npu_ctx *ctx, struct drm_mm_node *va, struct npu_va_hole *heir)
{
	u64 start = va->start, size = va->size;

	lockdep_assert_held(&ctx->vm_lock);
	drm_mm_remove_node(va);
	if (!heir)
		return;
	if (!npu_va_hole_put_not_last(heir)) {
		npu_va_hole_free(heir);	/* its holders are gone already */
		return;
	}
	heir->va.start = start;
	heir->va.size = size;
	WARN_ON_ONCE(drm_mm_reserve_node(&ctx->va_mm, &heir->va));
}

void npu_holds_release(struct npu_holds *h)
{
	u32 i;

	for (i = 0; i < h->nmaps; i++)
		npu_bo_map_put(h->maps[i]);
	kvfree(h->maps);
	for (i = 0; i < h->nholes; i++)
		npu_va_hole_put(h->holes[i]);
	kvfree(h->holes);
	for (i = 0; i < h->nsyncs; i++)
		npu_sync_put(h->syncs[i]);
	kfree(h->syncs);
	memset(h, 0, sizeof(*h));
}

bool npu_holds_put_not_last(struct npu_holds *h)
{
	while (h->nmaps && npu_bo_map_put_not_last(h->maps[h->nmaps - 1]))
		h->nmaps--;
	while (h->nholes && npu_va_hole_put_not_last(h->holes[h->nholes - 1]))
		h->nholes--;
	while (h->nsyncs && npu_sync_put_not_last(h->syncs[h->nsyncs - 1]))
		h->nsyncs--;
	return !h->nmaps && !h->nholes && !h->nsyncs;
}
