// SPDX-License-Identifier: GPL-2.0-only
/*
 * Holds: what a batch or a task list keeps alive while the device may
 * use it (npu_hold.h).
 *
 * Locking: built under ctx->lock, which the mapping lookup needs. Room is
 * made before a reference is taken, so nothing is ever put under it: a
 * last put takes bo->maps_lock, which ranks above ctx->lock.
 */
#include <drm/npu_accel.h>
#include <linux/slab.h>

#include "npu_ctx.h"
#include "npu_gem.h"
#include "npu_hold.h"
#include "npu_sync.h"

/*
 * Mappings one holder may hold. Each is held once however many tasks
 * name it, so this bounds the array whatever the tasks' ranges; more is
 * -E2BIG.
 */
#define NPU_HOLD_MAX_MAPS	4096

/*
 * Marks are unique device-wide, not per context: an event or notify may
 * be held by several contexts (exported and imported), and a mark of one
 * context's holder must never equal another's.
 */
void npu_holds_begin(struct npu_holds *h, struct npu_ctx *ctx)
{
	lockdep_assert_held(&ctx->lock);
	h->mark = atomic64_inc_return(&ctx->ndev->hold_marks);
}

/*
 * Under ctx->lock: take a reference on every mapping in [va, va + size)
 * not held yet. An address nothing maps is left for the device to fault
 * on: that is how a context learns it touched what it may not.
 */
int npu_holds_range(struct npu_holds *h, struct npu_ctx *ctx, u64 va, u64 size)
{
	struct drm_mm_node *node;
	u64 end = va + size;

	lockdep_assert_held(&ctx->lock);
	if (end < va)
		end = U64_MAX;
	drm_mm_for_each_node_in_range(node, &ctx->va_mm, va, end) {
		struct npu_bo_map *map = container_of(node, struct npu_bo_map, va);

		/* A range past the VA space ends on the allocator's own node. */
		if (node == &ctx->va_mm.head_node)
			break;
		if (map->job_mark == h->mark)
			continue;	/* held already */
		if (h->nmaps == h->map_cap) {
			struct npu_bo_map **maps;
			u32 n;

			if (h->map_cap == NPU_HOLD_MAX_MAPS)
				return -E2BIG;
			n = min(max(16u, h->map_cap * 2), (u32)NPU_HOLD_MAX_MAPS);
			maps = kvmalloc_array(n, sizeof(*maps), GFP_KERNEL_ACCOUNT);
			if (!maps)
				return -ENOMEM;
			if (h->nmaps)
				memcpy(maps, h->maps, h->nmaps * sizeof(*maps));
			kvfree(h->maps);
			h->maps = maps;
			h->map_cap = n;
		}
		if (!kref_get_unless_zero(&map->ref))
			continue;	/* going away: not mapped for the device */
		map->job_mark = h->mark;
		h->maps[h->nmaps++] = map;
	}
	return 0;
}

/*
 * Under ctx->lock: the event or notify a task names must be one this
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

	lockdep_assert_held(&ctx->lock);
	if (t->args[0] > U32_MAX)
		return -EINVAL;
	s = npu_sync_hold(ctx, (u32)t->args[0], kind);
	if (!s)
		return -EINVAL;
	if (READ_ONCE(s->hold_mark) == h->mark) {
		npu_sync_put(s);	/* held already; the context's is not the last */
		return 0;
	}
	if (h->nsyncs == h->sync_cap) {
		struct npu_sync **syncs;
		u32 cap = max(4u, h->sync_cap * 2);

		syncs = krealloc(h->syncs, cap * sizeof(*syncs), GFP_KERNEL_ACCOUNT);
		if (!syncs) {
			npu_sync_put(s);
			return -ENOMEM;
		}
		h->syncs = syncs;
		h->sync_cap = cap;
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

void npu_holds_release(struct npu_holds *h)
{
	u32 i;

	for (i = 0; i < h->nmaps; i++)
		npu_bo_map_put(h->maps[i]);
	kvfree(h->maps);
	for (i = 0; i < h->nsyncs; i++)
		npu_sync_put(h->syncs[i]);
	kfree(h->syncs);
	memset(h, 0, sizeof(*h));
}

bool npu_holds_put_not_last(struct npu_holds *h)
{
	while (h->nmaps && npu_bo_map_put_not_last(h->maps[h->nmaps - 1]))
		h->nmaps--;
	while (h->nsyncs && npu_sync_put_not_last(h->syncs[h->nsyncs - 1]))
		h->nsyncs--;
	return !h->nmaps && !h->nsyncs;
}
