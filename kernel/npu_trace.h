/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints: the device's work beside the CPU's in perf and trace-cmd
 * (`perf record -e 'npu:*'`, /sys/kernel/tracing/events/npu/). A batch
 * is (context, queue, seq): npu_submit when SUBMIT queues it, npu_run
 * when the scheduler writes it to the ring and rings the doorbell,
 * npu_done when the driver learns it finished (status 0) or failed.
 * npu_queue_fault is the device stopping a queue; npu_reset a device
 * reset; npu_tlb_invalidate a posted invalidation and its result.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM npu

#if !defined(__NPU_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __NPU_TRACE_H__

#include <linux/tracepoint.h>
#include <linux/types.h>

DECLARE_EVENT_CLASS(npu_batch,
	TP_PROTO(u32 ctx, u32 queue, u32 hw, u64 seq, u32 tasks),
	TP_ARGS(ctx, queue, hw, seq, tasks),
	TP_STRUCT__entry(
		__field(u32, ctx)
		__field(u32, queue)
		__field(u32, hw)
		__field(u32, tasks)
		__field(u64, seq)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->queue = queue;
		__entry->hw = hw;
		__entry->tasks = tasks;
		__entry->seq = seq;
	),
	TP_printk("ctx=%u queue=%u hw=%u seq=%llu tasks=%u", __entry->ctx, __entry->queue,
		  __entry->hw, __entry->seq, __entry->tasks)
);

DEFINE_EVENT(npu_batch, npu_submit,
	TP_PROTO(u32 ctx, u32 queue, u32 hw, u64 seq, u32 tasks),
	TP_ARGS(ctx, queue, hw, seq, tasks));

DEFINE_EVENT(npu_batch, npu_run,
	TP_PROTO(u32 ctx, u32 queue, u32 hw, u64 seq, u32 tasks),
	TP_ARGS(ctx, queue, hw, seq, tasks));

TRACE_EVENT(npu_done,
	TP_PROTO(u32 ctx, u32 queue, u32 hw, u64 seq, int error),
	TP_ARGS(ctx, queue, hw, seq, error),
	TP_STRUCT__entry(
		__field(u32, ctx)
		__field(u32, queue)
		__field(u32, hw)
		__field(int, error)
		__field(u64, seq)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->queue = queue;
		__entry->hw = hw;
		__entry->error = error;
		__entry->seq = seq;
	),
	TP_printk("ctx=%u queue=%u hw=%u seq=%llu error=%d", __entry->ctx, __entry->queue,
		  __entry->hw, __entry->seq, __entry->error)
);

TRACE_EVENT(npu_queue_fault,
	TP_PROTO(u32 ctx, u32 queue, u32 hw, u64 seq, u32 status, u32 task, u64 address,
		 u32 access),
	TP_ARGS(ctx, queue, hw, seq, status, task, address, access),
	TP_STRUCT__entry(
		__field(u32, ctx)
		__field(u32, queue)
		__field(u32, hw)
		__field(u32, status)
		__field(u64, seq)
		__field(u64, address)
		__field(u32, task)
		__field(u32, access)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->queue = queue;
		__entry->hw = hw;
		__entry->status = status;
		__entry->seq = seq;
		__entry->address = address;
		__entry->task = task;
		__entry->access = access;
	),
	TP_printk("ctx=%u queue=%u hw=%u seq=%llu status=%u task=%u address=%#llx %s",
		  __entry->ctx, __entry->queue, __entry->hw, __entry->seq, __entry->status,
		  __entry->task, __entry->address, __entry->access ? "write" : "read")
);

TRACE_EVENT(npu_reset,
	TP_PROTO(int count, int result),
	TP_ARGS(count, result),
	TP_STRUCT__entry(
		__field(int, count)
		__field(int, result)
	),
	TP_fast_assign(
		__entry->count = count;
		__entry->result = result;
	),
	TP_printk("reset=%d result=%d", __entry->count, __entry->result)
);

TRACE_EVENT(npu_tlb_invalidate,
	TP_PROTO(u32 ctx, u32 ticket, int result),
	TP_ARGS(ctx, ticket, result),
	TP_STRUCT__entry(
		__field(u32, ctx)
		__field(u32, ticket)
		__field(int, result)
	),
	TP_fast_assign(
		__entry->ctx = ctx;
		__entry->ticket = ticket;
		__entry->result = result;
	),
	TP_printk("ctx=%u ticket=%u result=%d", __entry->ctx, __entry->ticket, __entry->result)
);

#endif /* __NPU_TRACE_H__ */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE npu_trace
#include <trace/define_trace.h>
