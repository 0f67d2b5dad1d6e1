/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The kernel <-> device interface of the NPU.
 *
 * This header is the contract between npu.ko and the device firmware
 * (firmware-sim/ plays the firmware). Both sides include it; nothing else
 * defines device-visible layout. Documentation/firmware-interface.rst
 * describes the protocol around these structures.
 *
 * Transport: an ivshmem-doorbell PCI function.
 *   BAR0  registers: IntrMask, IntrStatus, IVPosition (own peer id), Doorbell.
 *   BAR1  MSI-X table.
 *   BAR2  device memory (HBM). The firmware owns the first
 *         NPU_FW_RESERVED_SIZE bytes: the control block lives at offset 0.
 *
 * All fields are little-endian. Fields the host writes and the device
 * reads (or the reverse) are marked; a "seq" field is always written last
 * by its producer, after a write barrier, so the consumer may read the
 * rest once it sees the new seq.
 */
#ifndef NPU_FW_IF_H
#define NPU_FW_IF_H

#include <linux/types.h>

#define NPU_FW_MAGIC		0x3055504eU	/* "NPU0" */

/*
 * Major changes break compatibility. Minor versions only add: a driver
 * accepts any firmware with its own major and a minor at least
 * NPU_FW_IF_MINOR_MIN.
 */
#define NPU_FW_IF_MAJOR		2
#define NPU_FW_IF_MINOR		5
#define NPU_FW_IF_MINOR_MIN	0
#define NPU_FW_IF_VERSION(maj, min)	(((__u32)(maj) << 16) | (__u32)(min))
#define NPU_FW_IF_VERSION_MAJOR(v)	((__u32)(v) >> 16)
#define NPU_FW_IF_VERSION_MINOR(v)	((__u32)(v) & 0xffff)

/* ivshmem register offsets in BAR0. */
#define NPU_REG_INTR_MASK	0x00
#define NPU_REG_INTR_STATUS	0x04
#define NPU_REG_IVPOSITION	0x08
#define NPU_REG_DOORBELL	0x0c
/* Doorbell value: the peer to interrupt and which of its vectors. */
#define NPU_DOORBELL(peer, vector)	(((__u32)(peer) << 16) | ((vector) & 0xffff))

/*
 * Vectors. The same numbering is used in both directions: the host rings
 * device vector N (doorbell) and the device raises host MSI-X vector N.
 */
enum npu_fw_vector {
	NPU_VEC_MBOX = 0,	/* mailbox command / mailbox response */
	NPU_VEC_QUEUE = 1,	/* queue work submitted / completions posted */
	NPU_FW_NUM_VECTORS = 2,
};

/* Bytes at the start of HBM that belong to the firmware. */
#define NPU_FW_RESERVED_SIZE	0x10000

enum npu_fw_state {
	NPU_FW_STATE_OFF = 0,
	NPU_FW_STATE_BOOTING = 1,
	NPU_FW_STATE_READY = 2,
	NPU_FW_STATE_HALTED = 3,	/* stopped; needs a reset */
};

/*
 * Mailbox commands: one at a time, host -> device. The device answers them
 * (and bumps the heartbeat) while tasks run: a command waits at most for
 * the task moving data at that moment (a copy, a fill, a KERNEL's gather
 * or scatter), never for a KERNEL's compute.
 */
enum npu_fw_cmd {
	NPU_FW_CMD_NOP = 0,
	/* args[0]: cookie. result[0]: cookie, result[1]: device clock (ns). */
	NPU_FW_CMD_PING = 1,
	/*
	 * Zero HBM: args[0] offset, args[1] bytes. The range must lie in
	 * host-managed HBM (past fw_reserved), else -NPU_FW_EINVAL.
	 */
	NPU_FW_CMD_SCRUB = 2,
	/*
	 * Drop cached translations of context args[0] (0: all contexts). Once
	 * answered, no device access uses a translation made before it. It
	 * waits for launches reading that context's memory in place: posted
	 * invalidations (struct npu_fw_tlb) do the same off the mailbox.
	 */
	NPU_FW_CMD_TLB_INVALIDATE = 3,
	/*
	 * Start queue args[0]: the host has filled its slot (ring, context,
	 * page-table root) with tail = 0. The device checks the slot, resets
	 * head and done_seq to 0 and sets the state RUNNING. Since 2.5, with
	 * NPU_FW_CAP_PROFILE: args[1] and args[2] name the queue's profiling
	 * ring (below); both 0 for none.
	 */
	NPU_FW_CMD_QUEUE_START = 4,
	/*
	 * Stop queue args[0]; once answered the device no longer touches it.
	 * A KERNEL of the queue still computing is cancelled and its output
	 * never written.
	 */
	NPU_FW_CMD_QUEUE_STOP = 5,
	/*
	 * Test only, with NPU_FW_CAP_FAULT_INJECTION: args[0] an enum
	 * npu_fw_inject, args[1] its argument. Otherwise -NPU_FW_EBADCMD.
	 */
	NPU_FW_CMD_INJECT = 6,
	/*
	 * Recover the device: stop every queue (as QUEUE_STOP), drop the TLB
	 * and any injected fault, restart the heartbeat. Identity, HBM and the
	 * mailbox stay.
	 */
	NPU_FW_CMD_RESET = 7,
};

enum npu_fw_inject {
	NPU_FW_INJECT_NONE = 0,		/* clear every injected fault */
	NPU_FW_INJECT_HANG_CONTEXT = 1,	/* queues of context args[1] stop making progress */
	NPU_FW_INJECT_STOP_HEARTBEAT = 2,
	NPU_FW_INJECT_DROP_IRQS = 3,	/* the next args[1] interrupts are lost */
	/* the next args[1] TLB_INVALIDATEs fail (-NPU_FW_EHALTED), TLB untouched */
	NPU_FW_INJECT_FAIL_INVALIDATE = 4,
	/*
	 * Since 2.3: TLB invalidations are held, not carried out, until
	 * INJECT_NONE (posted ones wait in their ring; a mailbox one holds
	 * the mailbox, 10 s at most). args[1] must be 0.
	 */
	NPU_FW_INJECT_HOLD_INVALIDATE = 5,
};

/* Mailbox and error-log status codes (negative in npu_fw_mbox.status). */
enum npu_fw_status {
	NPU_FW_OK = 0,
	NPU_FW_EBADCMD = 1,	/* unknown opcode */
	NPU_FW_EINVAL = 2,	/* bad argument */
	NPU_FW_EFAULT = 3,	/* device memory access fault */
	NPU_FW_EHALTED = 4,	/* firmware halted */
	NPU_FW_EKERNEL = 5,	/* a kernel launch failed: bad arguments */
};

struct npu_fw_mbox {
	/* host -> device */
	__u32 seq;		/* bumped by the host after args are written */
	__u32 opcode;		/* enum npu_fw_cmd */
	__u64 args[4];
	/* device -> host */
	__u32 done_seq;		/* == seq once the command completed */
	__s32 status;		/* 0 or -enum npu_fw_status */
	__u64 result[4];
};

struct npu_fw_err_entry {
	__u64 timestamp_ns;	/* device clock */
	__u32 code;		/* enum npu_fw_status */
	__u32 context;		/* context id, 0 for the device itself */
	__u64 address;		/* faulting device address, or 0 */
	__u64 info;		/* code-specific */
};

#define NPU_FW_ERRLOG_ENTRIES	32

/*
 * Device -> host error log. The device writes entry (head % ENTRIES) and
 * then bumps head; a reader that falls more than ENTRIES behind has lost
 * the oldest ones and can tell from head.
 */
struct npu_fw_errlog {
	__u32 head;
	__u32 pad;
	struct npu_fw_err_entry entries[NPU_FW_ERRLOG_ENTRIES];
};

/*
 * Device page tables.
 *
 * Each context has its own tables in HBM, written by the host. Four
 * levels of 4 KiB tables with 512 little-endian u64 entries each, indexed
 * by VA bits [47:39], [38:30], [29:21] and [20:12]. An entry at the third
 * level (VA bits [29:21]) with NPU_PTE_HUGE maps a 2 MiB page; otherwise
 * the walk continues to a fourth-level 4 KiB entry. Table pointers hold
 * the HBM offset of the next table with NPU_PTE_VALID set.
 *
 * A leaf addresses HBM (offset into HBM) or, with NPU_PTE_SYSMEM, host
 * memory (a DMA address). An access through an invalid entry, a write
 * through an entry without NPU_PTE_WRITE, or a leaf pointing outside its
 * memory is an MMU fault.
 *
 * The device may cache translations: after the host clears or changes a
 * valid entry it sends NPU_FW_CMD_TLB_INVALIDATE before reusing the range.
 */
#define NPU_PT_LEVELS		4
#define NPU_PT_ENTRIES		512
#define NPU_PT_SIZE		4096
#define NPU_PTE_VALID		(1ull << 0)
#define NPU_PTE_WRITE		(1ull << 1)
#define NPU_PTE_HUGE		(1ull << 2)
#define NPU_PTE_SYSMEM		(1ull << 3)
#define NPU_PTE_ADDR_MASK	0x000ffffffffff000ull
/* Index of `va` in a table of `level` (0 = root). */
#define NPU_PT_INDEX(va, level)	(((va) >> (39 - 9 * (level))) & (NPU_PT_ENTRIES - 1))

/*
 * Task queues.
 *
 * A queue is a ring of 64-byte tasks in HBM plus a slot in the queue
 * table (in the reserved area, at NPU_FW_QUEUE_TABLE). The host writes
 * tasks at tail, then tail, then rings NPU_VEC_QUEUE; the device runs
 * them in order from head: the runnable queues of the highest priority
 * first, one task per queue in turn among equals. A FENCE task sets
 * done_seq and raises
 * NPU_VEC_QUEUE, which is how the host learns of completions.
 *
 * If a task faults (MMU) or is malformed, the device stops that queue in
 * state FAULTED with head at the task and the error fields filled, logs
 * it in the error log and raises NPU_VEC_QUEUE. Other queues go on.
 *
 * A KERNEL task computes on the AI cores while the engine goes on with
 * other queues; its own queue is not runnable until it completes, and a
 * KERNEL waits (its queue not runnable) while the cores are busy.
 *
 * exec_ms (device -> host) counts the milliseconds this queue's tasks have
 * spent executing since QUEUE_START zeroed it: on the engine, or on the AI
 * cores for a KERNEL. Time blocked on an event or notify, behind other
 * queues or waiting for free cores does not count. While a task executes,
 * exec_ms advances at least every 20 ms, so a head that stays put while
 * exec_ms advances is a task running that long: the host's hang test. A
 * queue of a context hung by NPU_FW_INJECT_HANG_CONTEXT that has work looks
 * exactly so: exec_ms advances, head never moves.
 */
#define NPU_FW_QUEUE_TABLE	0x2000
#define NPU_FW_PRIORITIES	4
#define NPU_FW_MAX_QUEUES	256
#define NPU_FW_RING_MAX		65536

enum npu_fw_queue_state {
	NPU_QUEUE_STOPPED = 0,
	NPU_QUEUE_RUNNING = 1,
	NPU_QUEUE_FAULTED = 2,
};

struct npu_fw_queue {
	/* host, while the queue is stopped */
	__u64 ring_offset;	/* HBM offset of the ring */
	__u32 ring_entries;	/* a power of two, <= NPU_FW_RING_MAX */
	__u32 context;		/* context id, != 0 */
	__u64 pt_root;		/* HBM offset of the context's root table */
	/* host -> device */
	__u32 tail;		/* free-running; slot = tail % ring_entries */
	__u32 priority;		/* 0 (low) .. NPU_FW_PRIORITIES - 1; set while stopped */
	/* device -> host */
	__u32 head;		/* free-running: the next task to run */
	__u32 state;		/* enum npu_fw_queue_state */
	__u64 done_seq;		/* seq of the last FENCE executed */
	__u32 error;		/* enum npu_fw_status, when FAULTED */
	__u32 error_access;	/* 0 read, 1 write */
	__u64 error_address;	/* faulting device VA */
	__u32 exec_ms;		/* ms spent executing since QUEUE_START, see above */
	/*
	 * Since 2.2 (device -> host): while the task at head is a RUN_LIST,
	 * the index in its list of the task running, or that faulted; 0
	 * otherwise. Progress inside a list, for the hang test and reports.
	 */
	__u32 list_pos;
};

enum npu_fw_task_type {
	NPU_FW_TASK_NOP = 0,
	NPU_FW_TASK_COPY = 1,	/* args: dst VA, src VA, bytes */
	NPU_FW_TASK_FILL = 2,	/* args: dst VA, bytes (multiple of 4), u32 pattern */
	/*
	 * args: seq; done_seq = seq, raise NPU_VEC_QUEUE. Since 2.4, with
	 * NPU_FW_CAP_FENCE_WRITE: args[1], when not 0, is the HBM offset of
	 * a u64 (8-aligned, past fw_reserved) that gets seq too, before
	 * done_seq: where a host thread sees completion without the
	 * interrupt. A bad offset faults the queue (NPU_FW_EINVAL).
	 */
	NPU_FW_TASK_FENCE = 3,
	/* args: VA of an op-library argument block, block dim (cores, 0 = all),
	 * the block's size in bytes (the device reads no more) */
	NPU_FW_TASK_KERNEL = 4,
	NPU_FW_TASK_TIMESTAMP = 5,	/* args: VA; writes the device clock (u64 ns) */
	NPU_FW_TASK_BARRIER = 6,	/* earlier tasks of the queue are complete */
	NPU_FW_TASK_EVENT_RECORD = 7,	/* args: sync id; value = 1, stamp, interrupt */
	NPU_FW_TASK_EVENT_WAIT = 8,	/* args: sync id; the queue waits for value != 0 */
	NPU_FW_TASK_EVENT_RESET = 9,	/* args: sync id; value = 0 */
	NPU_FW_TASK_NOTIFY_RECORD = 10,	/* args: sync id; value += 1 */
	NPU_FW_TASK_NOTIFY_WAIT = 11,	/* args: sync id; waits for value > 0, then -= 1 */
	/*
	 * Since 2.2, with NPU_FW_CAP_TASK_LISTS: run a task list (below).
	 * args: the list's VA, its task count, its patch table's VA, the
	 * patch count, the I/O slot count n; the ring slots after it hold
	 * the I/O table, n little-endian u64 device addresses (8 a slot,
	 * DIV_ROUND_UP(n, 8) slots), which head skips with the task.
	 */
	NPU_FW_TASK_RUN_LIST = 12,
};

/* A ring slot: 64 bytes. Arguments a type does not use are zero. */
struct npu_fw_task {
	__u16 type;		/* enum npu_fw_task_type */
	__u16 flags;		/* zero */
	__u32 pad;		/* zero */
	__u64 args[7];
};

/*
 * Task lists (NPU_FW_CAP_TASK_LISTS). A list is an array of tasks in
 * device memory, read through the queue's context like any operand and
 * run in order as if they sat in the ring in place of the RUN_LIST that
 * names it; FENCE and RUN_LIST are not allowed inside. Its patch table
 * rebinds addresses per run without rewriting the list: before a task
 * runs, each patch entry naming it writes io[slot] + offset, from the
 * run's I/O table, into the task's args[field] (NPU_FW_PATCH_ARG) or
 * into the KERNEL task's argument block at byte `field`, in the copy the
 * device takes of it (NPU_FW_PATCH_KERNEL_ARGS). Entries are sorted by
 * task. A bad list, patch or I/O table faults the queue (NPU_FW_EINVAL,
 * or NPU_FW_EFAULT reading them) with list_pos at the task.
 */
#define NPU_FW_LIST_MAX_SLOTS	256

enum npu_fw_patch_kind {
	NPU_FW_PATCH_ARG = 0,
	NPU_FW_PATCH_KERNEL_ARGS = 1,
};

struct npu_fw_patch {
	__u32 task;		/* index in the list */
	__u16 kind;		/* enum npu_fw_patch_kind */
	__u16 slot;		/* in the I/O table */
	__u32 field;		/* args[] index, or byte offset in the block */
	__u32 pad;		/* zero */
	__u64 offset;		/* added to the slot's address */
};

/*
 * Events and notifies: one table of 16-byte entries in the reserved area,
 * indexed by sync id, written by the device's tasks (and zeroed by the
 * host when it hands an id out). A queue whose next task waits on an
 * entry is simply not runnable until the entry allows it: the device
 * blocks the queue, never the host.
 */
#define NPU_FW_SYNC_TABLE	0x8000
#define NPU_FW_MAX_SYNCS	2048

struct npu_fw_sync {
	__u64 value;		/* event: 0 or 1 (recorded); notify: records pending */
	__u64 timestamp_ns;	/* event: device clock at its last record */
};

/*
 * Kernel launches: an op from the device's op library on tensors in
 * device memory. Userspace writes the argument block (struct
 * npu_op_args of firmware-sim/oplib/npu_oplib.h: a contract between userspace
 * and the op library, which the kernel does not parse) to device memory
 * and the task carries its VA and size; the device reads at most that
 * size, copies the block in and checks it before running. A block
 * shorter than the op library's struct, a bad block, a shape or stride the op cannot take fails the
 * task with NPU_FW_EKERNEL; a fault reading or writing a tensor with
 * NPU_FW_EFAULT. Either way the queue stops as for any fault.
 */

/* Capability bits in npu_fw_ctrl.caps. */
#define NPU_FW_CAP_FAULT_INJECTION	(1ull << 0)	/* NPU_FW_CMD_INJECT works */
#define NPU_FW_CAP_NOTIFY_SUPPRESS	(1ull << 1)	/* engine_awake, queue_irq_pending */
#define NPU_FW_CAP_TASK_LISTS		(1ull << 2)	/* NPU_FW_TASK_RUN_LIST, since 2.2 */
#define NPU_FW_CAP_TLB_POST		(1ull << 3)	/* struct npu_fw_tlb, since 2.3 */
#define NPU_FW_CAP_FENCE_WRITE		(1ull << 4)	/* FENCE args[1], since 2.4 */
#define NPU_FW_CAP_PROFILE		(1ull << 5)	/* profiling rings, since 2.5 */

/*
 * Profiling rings (NPU_FW_CAP_PROFILE): a timeline of every task a queue
 * runs, on the device clock. QUEUE_START's args[1] is the HBM offset of a
 * struct npu_fw_prof_ring (64-aligned, past fw_reserved); args[2] holds
 * its record count in bits 0-31 (a power of two from NPU_FW_PROF_MIN to
 * NPU_FW_PROF_MAX) and a tag in bits 32-47 that the queue's records
 * carry, so that queues can share a ring; bits 48-63 are 0. A bad ring
 * fails the QUEUE_START with -NPU_FW_EINVAL.
 *
 * While `enable` is not 0 the device appends a record for each task of
 * the queue it completes, in completion order: every task but FENCE, the
 * tasks of a RUN_LIST one by one in its place. A record is written, then
 * head is bumped (release); a ring with no room (head - tail == entries)
 * loses the record and bumps dropped instead, so nothing is lost
 * silently. The host owns the header's contents: the device never
 * writes outside the ring whatever head and tail say. Off (no ring, or
 * enable 0), the device does no profiling work at all.
 */
#define NPU_FW_PROF_MIN		16
#define NPU_FW_PROF_MAX		(1u << 20)

struct npu_fw_prof_ring {
	__u32 enable;		/* host -> device: record while not 0 */
	__u32 tail;		/* host -> device: records consumed, free-running */
	__u32 head;		/* device -> host: records written, free-running */
	__u32 dropped;		/* device -> host: records lost to a full ring */
	__u32 reserved[12];
	/* then the records: struct npu_fw_prof_record[entries] */
};

/* Where a task executed: the unit kind in bits 6-7, its index in 0-5. */
#define NPU_FW_UNIT_SCHEDULER	0x00	/* sync tasks, small launches, inline copies */
#define NPU_FW_UNIT_DMA		0x40	/* | copy engine */
#define NPU_FW_UNIT_CORES	0x80	/* | AI-core group */
#define NPU_FW_UNIT_KIND(u)	((u) & 0xc0)
#define NPU_FW_UNIT_INDEX(u)	((u) & 0x3f)

/* Record flags. */
#define NPU_FW_PROF_IN_LIST	(1u << 0)	/* a task of the RUN_LIST at index */

struct npu_fw_prof_record {
	/*
	 * The task's batch: the last FENCE's seq + 1 (1 before the first
	 * since QUEUE_START), low 32 bits; and the tasks run between that
	 * FENCE and this one. A host that numbers its batches 1, 2, 3...
	 * from QUEUE_START reads them as (batch seq, task index).
	 */
	__u32 seq;
	__u16 index;
	__u8 type;		/* enum npu_fw_task_type */
	__u8 unit;		/* NPU_FW_UNIT_* */
	__u32 list_pos;		/* with NPU_FW_PROF_IN_LIST: its index in the list */
	__u16 tag;		/* the queue's, from QUEUE_START */
	__u8 flags;		/* NPU_FW_PROF_* */
	__u8 pad;
	__u64 start_ns;		/* device clock: it began executing, or waiting */
	__u64 end_ns;		/* device clock: it completed */
};

/*
 * Posted TLB invalidations (NPU_FW_CAP_TLB_POST): NPU_FW_CMD_TLB_INVALIDATE
 * off the mailbox, so that no command waits behind the launches an
 * invalidation waits for. The host writes the context (0: all) to
 * ctx[req % NPU_FW_TLB_RING], then bumps req (release) and rings
 * NPU_VEC_MBOX; it keeps at most NPU_FW_TLB_RING requests outstanding
 * (req - done). The device completes them in order: done becomes n + 1
 * once request n is complete, that is once no device access uses a
 * translation of that context made before the request was posted; a
 * request the device could not carry out (halted, or an injected
 * failure) leaves the TLB as it was and bumps failed before done. It
 * raises NPU_VEC_MBOX after completing. The counters wrap at 2^32.
 */
#define NPU_FW_TLB_RING			64

struct npu_fw_tlb {
	__u32 req;			/* host -> device */
	__u32 done;			/* device -> host */
	__u32 failed;			/* device -> host */
	__u32 pad;
	__u32 ctx[NPU_FW_TLB_RING];	/* host -> device */
};

/*
 * The control block at offset 0 of BAR2. Everything up to `heartbeat` is
 * written by the firmware before it sets state to READY and never changes
 * afterwards.
 */
struct npu_fw_ctrl {
	__u32 magic;			/* NPU_FW_MAGIC */
	__u32 if_version;		/* NPU_FW_IF_VERSION(major, minor) */
	__u64 caps;
	__u32 fw_version;		/* firmware build: major << 16 | minor << 8 | patch */
	__u32 fw_peer_id;		/* ivshmem peer to ring doorbells on */
	__u64 hbm_offset;		/* offset of HBM in BAR2 */
	__u64 hbm_size;			/* bytes of HBM, including the reserved part */
	__u64 fw_reserved;		/* bytes at the start of HBM the host must not use */
	__u32 num_vectors;		/* vectors per direction, >= NPU_FW_NUM_VECTORS */
	__u32 num_queues;		/* hardware queues */
	__u32 num_cores;		/* AI cores */
	__u32 heartbeat_period_ms;
	/* Since interface 2.1; 0 from older firmware means 1. */
	__u32 num_core_groups;		/* kernel launches computing at once */
	__u32 num_dma_engines;		/* copies and fills running at once */
	__u64 reserved0[7];

	/* Live state, device -> host. */
	__u32 state;			/* enum npu_fw_state */
	__u32 pad0;
	__u64 heartbeat;		/* bumped every heartbeat_period_ms while alive */
	/*
	 * Notification suppression (NPU_FW_CAP_NOTIFY_SUPPRESS): busy queues
	 * cost neither a doorbell per batch nor an interrupt per FENCE.
	 *  - engine_awake: 1 while the engine will look at every queue's tail
	 *    again before it sleeps. The host writes a tail and, after a full
	 *    barrier, rings NPU_VEC_QUEUE only if it reads 0; the engine clears
	 *    it and, after a full barrier, looks at the tails once more.
	 *  - queue_irq_pending: once the host has written irq_suppress = 1,
	 *    the device sets it when it raises NPU_VEC_QUEUE and raises only
	 *    if it was 0; the host clears it, then (full barrier) reads the
	 *    queues' state.
	 */
	__u32 engine_awake;		/* device -> host */
	__u32 queue_irq_pending;	/* both */
	__u32 irq_suppress;		/* host -> device; cleared by a power-on reset */
	__u32 pad1;
	__u64 reserved1[4];

	struct npu_fw_mbox mbox;
	struct npu_fw_errlog errlog;
	struct npu_fw_tlb tlb;		/* since 2.3, with NPU_FW_CAP_TLB_POST */
};

#endif /* NPU_FW_IF_H */
