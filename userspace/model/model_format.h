/* SPDX-License-Identifier: MIT */
/*
 * The model file format (Documentation/model-format.rst): a header, a
 * table of sections, and the sections, every number little-endian, every
 * section checksummed (CRC-32, as zlib's). Internal to libnpurt and its
 * tools; the file is the interface, not these structs.
 */
#ifndef NPURT_MODEL_FORMAT_H
#define NPURT_MODEL_FORMAT_H

#include <stdint.h>

#define NPUM_MAGIC		"NPUMODL"	/* and a NUL: 8 bytes */
#define NPUM_MAJOR		1
#define NPUM_MINOR		2

#define NPUM_MAX_DIMS		8	/* 4 before format 1.2 */
#define NPUM_MAX_STREAMS	8
#define NPUM_MAX_TENSORS	65536
#define NPUM_MAX_OPS		65536
#define NPUM_MAX_IO		256	/* the task list's I/O slots */
#define NPUM_MAX_TENSOR_BYTES	(1ull << 30)
#define NPUM_MAX_SEGMENT	(16ull << 30)
#define NPUM_NONE		0xffffffffu
/* Feature maps and views are placed at multiples of this. */
#define NPUM_ALIGN		64

struct npum_header {
	char magic[8];
	uint16_t major, minor;
	uint32_t header_size;		/* sizeof(struct npum_header) */
	uint64_t file_size;
	uint64_t section_offset;	/* the section table */
	uint32_t section_count;
	uint32_t section_size;		/* sizeof(struct npum_section) */
	uint32_t flags;			/* 0 */
	uint32_t header_crc;		/* of the header with this field 0 */
	uint32_t table_crc;		/* of the section table */
	uint8_t reserved[12];		/* 0 */
};

/* A section whose type this reader does not know may be skipped. */
#define NPUM_SECF_OPTIONAL	(1u << 0)

struct npum_section {
	uint32_t type;			/* enum npum_section_type */
	uint32_t flags;			/* NPUM_SECF_* */
	uint64_t offset;
	uint64_t size;
	uint32_t count;			/* records in it; 0 for a blob */
	uint32_t crc;			/* of its bytes */
};

enum npum_section_type {
	NPUM_SEC_STRINGS = 1,		/* NUL-terminated names; offset 0 is "" */
	NPUM_SEC_PLAN = 2,		/* one struct npum_plan */
	NPUM_SEC_TENSORS = 3,		/* struct npum_tensor */
	NPUM_SEC_IO = 4,		/* struct npum_io: the inputs, then the outputs */
	NPUM_SEC_STREAMS = 5,		/* struct npum_stream */
	NPUM_SEC_OPS = 6,		/* struct npum_op, stream after stream */
	NPUM_SEC_WEIGHTS = 7,		/* the weights segment's bytes */
};

struct npum_plan {
	uint64_t weights_bytes;		/* the WEIGHTS section's size */
	uint64_t fmap_bytes;		/* feature-map segment, as planned */
	uint64_t fmap_sum;		/* its tensors' bytes, summed */
	uint64_t fmap_peak;		/* the most bytes live at once: a lower bound */
	uint32_t streams;
	uint32_t events;		/* cross-stream edges, one signal and one wait each */
	uint32_t inputs, outputs;
	uint32_t flags;			/* 0 */
	uint32_t reserved[3];		/* 0 */
};

enum npum_segment {
	NPUM_SEG_WEIGHTS = 1,		/* read-only; offset into the WEIGHTS section */
	NPUM_SEG_FMAP = 2,		/* feature maps; offset from the plan */
	NPUM_SEG_IO = 3,		/* bound per run; `base` is its I/O index */
	NPUM_SEG_VIEW = 4,		/* a strided view of tensor `base` at byte `offset` */
};

/* The op library's dtypes (enum npu_op_dtype); a reader refuses one it does not know. */
enum npum_dtype {
	NPUM_F32 = 0, NPUM_F16 = 1, NPUM_BF16 = 2, NPUM_F64 = 3, NPUM_I8 = 4, NPUM_U8 = 5,
	NPUM_I16 = 6, NPUM_U16 = 7, NPUM_I32 = 8, NPUM_U32 = 9, NPUM_I64 = 10, NPUM_U64 = 11,
	NPUM_BOOL = 12,
};

struct npum_tensor {
	uint32_t name;			/* in STRINGS */
	uint8_t dtype;			/* enum npum_dtype */
	uint8_t ndim;			/* 1..NPUM_MAX_DIMS */
	uint8_t segment;		/* enum npum_segment */
	uint8_t flags;			/* 0 */
	uint32_t base;			/* VIEW: an earlier tensor, not a view; IO: index */
	uint32_t reserved;		/* 0 */
	uint64_t offset;		/* bytes, in the segment or the base */
	uint64_t bytes;			/* its extent: first to last element */
	/* Format 1.0 and 1.1 records hold 4 of each (NPUM_TENSOR_V11_SIZE). */
	uint64_t shape[NPUM_MAX_DIMS];
	uint64_t stride[NPUM_MAX_DIMS];	/* elements */
};

/* A format 1.0 or 1.1 tensor record: 4 dimensions, 4 strides. */
#define NPUM_TENSOR_V11_SIZE	96
#define NPUM_TENSOR_HEAD	__builtin_offsetof(struct npum_tensor, shape)

#define NPUM_IO_OUTPUT		(1u << 0)

struct npum_io {
	uint32_t tensor;		/* its tensor (segment IO) */
	uint32_t flags;			/* NPUM_IO_OUTPUT for outputs */
};

struct npum_stream {
	uint32_t first_op;
	uint32_t op_count;
	uint32_t flags;			/* 0 */
	uint32_t reserved;		/* 0 */
};

enum npum_op_type {
	NPUM_OP_KERNEL = 1,		/* an op of the device's op library */
	NPUM_OP_COPY = 2,		/* out = in[0], dense, same bytes */
	NPUM_OP_FILL = 3,		/* out filled with the 32-bit `value` */
	NPUM_OP_SIGNAL = 4,		/* event `event` happened, for its waiter */
	NPUM_OP_WAIT = 5,		/* this stream waits for event `event` */
};

struct npum_op {
	uint16_t type;			/* enum npum_op_type */
	uint16_t kernel;		/* KERNEL: enum npu_op_id */
	uint32_t flags;			/* KERNEL: NPU_OP_F_* */
	uint32_t in[2];			/* tensors, NPUM_NONE when unused */
	uint32_t out;
	uint32_t event;			/* SIGNAL, WAIT */
	uint32_t axis;			/* REDUCE_* */
	uint8_t perm[4];		/* TRANSPOSE; dimensions 4.. in perm_hi */
	float alpha, beta, eps;		/* GEMM, unary parameters, LAYERNORM */
	uint32_t value;			/* FILL; CONV2D: group */
	uint32_t block_dim;		/* KERNEL: cores, 0 all */
	/*
	 * CONV2D and the pools (npu_op_window): kernel[2], stride[2],
	 * dilation[2], pad[4]; 0 for every other op. flags holds NPU_OP_W_*.
	 */
	uint16_t window[10];
	/*
	 * Since format 1.1 (a 1.0 file's records end before `bias`: none):
	 * KERNEL's epilogue (struct npu_op_epilogue), what its output goes
	 * through on the way out. bias: a 1-D f32 tensor, with NPU_OP_E_BIAS
	 * in epi_flags (else 0); act: an f32 unary op (enum npu_op_id), 0 for
	 * none. All 0 for no epilogue.
	 */
	uint32_t bias;
	uint16_t act;
	uint16_t epi_flags;		/* NPU_OP_E_* */
	float act_alpha, act_beta;
	/*
	 * Since format 1.2 (earlier records end before perm_hi: zeros):
	 * TRANSPOSE's perm[4..7], and the depth of a 3-D window
	 * (npu_op_window_depth: kernel, stride, dilation, pad front and back).
	 */
	uint8_t perm_hi[4];
	uint16_t window_d[5];
	uint16_t reserved2;		/* 0 */
};

/* A format 1.0 op record: everything before `bias`; 1.1: before perm_hi. */
#define NPUM_OP_V10_SIZE	__builtin_offsetof(struct npum_op, bias)
#define NPUM_OP_V11_SIZE	__builtin_offsetof(struct npum_op, perm_hi)

/* The tensors an op reads: in[0], in[1], the epilogue's bias (NPUM_NONE: none). */
#define NPUM_OP_READS		3

static inline uint32_t npum_op_read(const struct npum_op *op, int k)
{
	return k < 2 ? op->in[k] : op->epi_flags & 1u ? op->bias : NPUM_NONE;
}

_Static_assert(sizeof(struct npum_header) == 64, "header layout");
_Static_assert(sizeof(struct npum_section) == 32, "section layout");
_Static_assert(sizeof(struct npum_plan) == 64, "plan layout");
_Static_assert(sizeof(struct npum_tensor) == 160 && NPUM_TENSOR_HEAD == 32 &&
	       NPUM_TENSOR_HEAD + 64 == NPUM_TENSOR_V11_SIZE, "tensor layout");
_Static_assert(sizeof(struct npum_op) == 104 && NPUM_OP_V10_SIZE == 72 && NPUM_OP_V11_SIZE == 88,
	       "op layout");

#endif /* NPURT_MODEL_FORMAT_H */
