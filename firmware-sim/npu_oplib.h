/* SPDX-License-Identifier: MIT */
/*
 * npu_oplib.h - the argument block of a kernel launch: the contract
 * between the runtime (or any program that launches ops) and the op
 * library of the device's firmware. It is not a kernel ABI: the driver
 * never reads the block, it only keeps the range the task names mapped
 * while the launch runs (DRM_NPU_TASK_KERNEL in uapi/drm/npu_accel.h).
 *
 * Userspace writes a struct npu_op_args to device memory and submits a
 * DRM_NPU_TASK_KERNEL task with args[0] its device VA and args[2] its
 * size in bytes (sizeof(struct npu_op_args) today). The firmware reads at
 * most that many bytes: a block shorter than the struct it knows fails
 * the launch (DRM_NPU_JOB_KERNEL_ERROR); bytes past it are ignored, so
 * the block can grow at its end. Documentation/firmware-interface.rst,
 * "Op library", describes each op.
 */
#ifndef NPU_OPLIB_H
#define NPU_OPLIB_H

#include <linux/types.h>

enum npu_op_dtype {
	NPU_DT_F32 = 0,
	NPU_DT_F16 = 1,
	NPU_DT_BF16 = 2,
};

#define NPU_MAX_DIMS		4

/*
 * A strided view of device memory: element (i0, i1, ...) of a tensor lives
 * at va + sum(i_k * stride_k) * element size. Strides are in elements and
 * not negative; a stride of 0 broadcasts along that dimension.
 */
struct npu_op_tensor {
	__u64 va;
	__u32 dtype;			/* enum npu_op_dtype */
	__u32 ndim;			/* 1..NPU_MAX_DIMS */
	__u64 shape[NPU_MAX_DIMS];
	__u64 stride[NPU_MAX_DIMS];
};

enum npu_op_id {
	/* out = in0 (op) in1, elementwise; fp32; same shapes (0-strides broadcast) */
	NPU_OP_ADD = 1, NPU_OP_SUB, NPU_OP_MUL, NPU_OP_DIV, NPU_OP_MAX, NPU_OP_MIN,
	/* out = f(in0), elementwise; fp32 */
	NPU_OP_RELU = 16, NPU_OP_GELU, NPU_OP_SIGMOID, NPU_OP_TANH, NPU_OP_EXP,
	/*
	 * out[M,N] = alpha * op(in0)[M,K] x op(in1)[K,N] + beta * out; fp32,
	 * 2-D. flags: NPU_OP_F_TRANS_A / NPU_OP_F_TRANS_B.
	 */
	NPU_OP_GEMM = 32,
	/* Along the last dimension; fp32. LAYERNORM uses eps, no affine part. */
	NPU_OP_SOFTMAX = 48, NPU_OP_LAYERNORM,
	/* Over dimension `axis` of in0; out has that dimension of size 1; fp32 */
	NPU_OP_REDUCE_SUM = 64, NPU_OP_REDUCE_MEAN, NPU_OP_REDUCE_MAX,
	/* out = in0 with dimensions swapped: perm[k] gives in0's dim for out's k */
	NPU_OP_TRANSPOSE = 80,
	/* out = in0 converted to out's dtype (f32 <-> f16 / bf16) */
	NPU_OP_CAST = 96,
};

#define NPU_OP_F_TRANS_A	(1u << 0)
#define NPU_OP_F_TRANS_B	(1u << 1)

struct npu_op_args {
	__u32 op;			/* enum npu_op_id */
	__u32 flags;			/* NPU_OP_F_* */
	__u32 axis;			/* REDUCE_* */
	__u32 perm[NPU_MAX_DIMS];	/* TRANSPOSE */
	float alpha, beta, eps;		/* GEMM, LAYERNORM */
	struct npu_op_tensor in[2];
	struct npu_op_tensor out;
};

#endif /* NPU_OPLIB_H */
