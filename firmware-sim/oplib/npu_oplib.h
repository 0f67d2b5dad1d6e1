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
 * size in bytes (NPU_OP_ARGS_SIZE today). The firmware reads at most that
 * many bytes: a block shorter than NPU_OP_ARGS_V1_SIZE fails the launch
 * (DRM_NPU_JOB_KERNEL_ERROR); fields past a shorter block's end read as
 * zero (the ops that need them refuse it); bytes past the struct it knows
 * are ignored, so the block can grow at its end. Documentation/firmware-interface.rst,
 * "Op library", describes each op.
 */
#ifndef NPU_OPLIB_H
#define NPU_OPLIB_H

#include <linux/types.h>

enum npu_op_dtype {
	NPU_DT_F32 = 0,
	NPU_DT_F16 = 1,
	NPU_DT_BF16 = 2,
	/* Since firmware 0.4 (npu_opdtypes.h says what each op takes) */
	NPU_DT_F64 = 3,
	NPU_DT_I8 = 4,
	NPU_DT_U8 = 5,
	NPU_DT_I16 = 6,
	NPU_DT_U16 = 7,
	NPU_DT_I32 = 8,
	NPU_DT_U32 = 9,
	NPU_DT_I64 = 10,
	NPU_DT_U64 = 11,
	NPU_DT_BOOL = 12,		/* a byte, 0 or 1 */
	NPU_DT_COUNT,
};

/*
 * Dimensions a struct npu_op_tensor holds; a tensor of more (up to
 * NPU_OP_MAX_DIMS, since firmware 0.6) keeps the rest in the block's
 * `hi` (struct npu_op_args).
 */
#define NPU_MAX_DIMS		4
#define NPU_OP_MAX_DIMS		8

/*
 * A strided view of device memory: element (i0, i1, ...) of a tensor lives
 * at va + sum(i_k * stride_k) * element size. Strides are in elements and
 * not negative; a stride of 0 broadcasts along that dimension.
 */
struct npu_op_tensor {
	__u64 va;
	__u32 dtype;			/* enum npu_op_dtype */
	__u32 ndim;			/* 1..NPU_OP_MAX_DIMS */
	__u64 shape[NPU_MAX_DIMS];
	__u64 stride[NPU_MAX_DIMS];
};

enum npu_op_id {
	/*
	 * out = in0 (op) in1, elementwise; same shapes (0-strides
	 * broadcast). POW is powf(in0, in1). Dtypes: npu_opdtypes.h (fp32
	 * only before firmware 0.4).
	 */
	NPU_OP_ADD = 1, NPU_OP_SUB, NPU_OP_MUL, NPU_OP_DIV, NPU_OP_MAX, NPU_OP_MIN,
	NPU_OP_POW,
	NPU_OP_LAST_BINARY = NPU_OP_POW,
	/*
	 * More binary ops, since firmware 0.4. MOD takes the divisor's sign
	 * (Python's %), FMOD the dividend's (C's fmod); both give 0 for a
	 * zero integer divisor. The comparisons write BOOL. AND, OR and XOR
	 * take BOOL; SHL and SHR unsigned integers (shifts past the width
	 * give 0).
	 */
	NPU_OP_MOD = 160, NPU_OP_FMOD, NPU_OP_EQUAL, NPU_OP_LESS, NPU_OP_LESS_EQUAL,
	NPU_OP_GREATER, NPU_OP_GREATER_EQUAL, NPU_OP_AND, NPU_OP_OR, NPU_OP_XOR,
	NPU_OP_SHL, NPU_OP_SHR,
	/*
	 * out = in0 ? in1 : out, in0 BOOL and in1 of out's dtype: it reads
	 * its output (ONNX's Where is a copy of the "else" tensor, then this).
	 */
	NPU_OP_SELECT,
	/*
	 * Since firmware 0.10: out = in0 * in1 requantized, the epilogue of a
	 * quantized product. in0 i32 (an integer GEMM's or convolution's
	 * sums) or f32, in1 f32 (the scale, usually per channel through a
	 * 0-stride view), out u8 or i8: the product in f32, rounded half to
	 * even, alpha (the zero point) added, clamped to [max(beta, out's
	 * least), out's largest]; nan gives that least. beta at the zero
	 * point is a Relu before the quantization. npu_requant() defines it.
	 */
	NPU_OP_REQUANT,
	NPU_OP_LAST_BINARY2 = NPU_OP_REQUANT,
	/*
	 * More unary ops, since firmware 0.4: NOT of BOOL; ISNAN and ISINF
	 * of a float into BOOL (ISINF: +inf counts unless alpha is 0, -inf
	 * unless beta is 0).
	 */
	NPU_OP_NOT = 176, NPU_OP_ISNAN, NPU_OP_ISINF,
	NPU_OP_LAST_UNARY2 = NPU_OP_ISINF,
	/*
	 * out = f(in0), elementwise; fp32. GELU is the tanh approximation,
	 * GELU_ERF the exact form. Parameters: LEAKY_RELU and ELU alpha; SELU
	 * alpha and gamma in beta; HARD_SIGMOID max(0, min(1, alpha x + beta));
	 * CLIP bounds [alpha, beta]; THRESHOLDED_RELU and CELU alpha; SHRINK
	 * lambda in alpha, bias in beta. npu_opdefs.h defines each.
	 */
	NPU_OP_RELU = 16, NPU_OP_GELU, NPU_OP_SIGMOID, NPU_OP_TANH, NPU_OP_EXP,
	NPU_OP_NEG = 112, NPU_OP_ABS, NPU_OP_SQRT, NPU_OP_LOG, NPU_OP_RECIPROCAL,
	NPU_OP_FLOOR, NPU_OP_CEIL, NPU_OP_SIGN, NPU_OP_ERF, NPU_OP_SOFTPLUS,
	NPU_OP_SOFTSIGN, NPU_OP_GELU_ERF, NPU_OP_LEAKY_RELU, NPU_OP_ELU, NPU_OP_SELU,
	NPU_OP_HARD_SIGMOID, NPU_OP_HARD_SWISH, NPU_OP_CLIP, NPU_OP_SIN, NPU_OP_COS,
	NPU_OP_ROUND, NPU_OP_TAN, NPU_OP_ASIN, NPU_OP_ACOS, NPU_OP_ATAN, NPU_OP_SINH,
	NPU_OP_COSH, NPU_OP_ASINH, NPU_OP_ACOSH, NPU_OP_ATANH, NPU_OP_THRESHOLDED_RELU,
	NPU_OP_SHRINK, NPU_OP_CELU,
	NPU_OP_LAST_UNARY = NPU_OP_CELU,
	/*
	 * out[M,N] = alpha * op(in0)[M,K] x op(in1)[K,N] + beta * out; fp32,
	 * 2-D. flags: NPU_OP_F_TRANS_A / NPU_OP_F_TRANS_B.
	 */
	NPU_OP_GEMM = 32,
	/* Along the last dimension; fp32. LAYERNORM uses eps, no affine part. */
	NPU_OP_SOFTMAX = 48, NPU_OP_LAYERNORM,
	/*
	 * Over dimension `axis` of in0; out has that dimension of size 1.
	 * Sums accumulate in double. Since firmware 0.4 also MIN and PROD,
	 * and ARGMAX / ARGMIN: the index (I64) of the first largest or
	 * smallest element, the last with NPU_OP_F_LAST_INDEX; a nan wins.
	 */
	NPU_OP_REDUCE_SUM = 64, NPU_OP_REDUCE_MEAN, NPU_OP_REDUCE_MAX, NPU_OP_REDUCE_MIN,
	NPU_OP_REDUCE_PROD, NPU_OP_ARGMAX, NPU_OP_ARGMIN,
	NPU_OP_LAST_REDUCE = NPU_OP_ARGMIN,
	/*
	 * Since firmware 0.4: running sums along `axis` (ONNX's CumSum), out
	 * of in0's shape and float dtype, accumulated in double;
	 * NPU_OP_F_EXCLUSIVE leaves each element out of its own sum,
	 * NPU_OP_F_REVERSE sums from the end.
	 */
	NPU_OP_CUMSUM = 72,
	/* out = in0 with dimensions swapped: perm[k] gives in0's dim for out's k */
	NPU_OP_TRANSPOSE = 80,
	/*
	 * out = in0 converted to out's dtype: floats round to nearest even;
	 * a float into an integer truncates toward zero into 64 bits,
	 * saturating there (nan gives 0), and keeps the low bits of out's
	 * width, as integers into narrower ones do; anything not 0 into BOOL
	 * is 1. Before firmware 0.4: f32 <-> f16 / bf16 only.
	 */
	NPU_OP_CAST = 96,
	/*
	 * Windows over in0 [N, C, H, W] into out [N, O, Ho, Wo], fp32, with
	 * args.win: window k covers rows ho * stride - pad_top + i * dilation
	 * (i < kernel) and the same for columns; what falls outside the image
	 * is padding. CONV2D: in1 the weights [O, C / group, kh, kw], padding
	 * reads 0. MAXPOOL2D: the largest element of the window inside the
	 * image. AVGPOOL2D: their mean, counting the padding too with
	 * NPU_OP_W_COUNT_PAD. Needs a block that holds `win`. Since firmware
	 * 0.6 also in three dimensions: in0 [N, C, D, H, W] into out
	 * [N, O, Do, Ho, Wo] (CONV2D's weights [O, C / group, kd, kh, kw]),
	 * the depth's window in args.win_d.
	 */
	NPU_OP_CONV2D = 192, NPU_OP_MAXPOOL2D, NPU_OP_AVGPOOL2D,
	/*
	 * Since firmware 0.4: out[i] = in0[i with dimension `axis` replaced
	 * by in1[i]] (ONNX's GatherElements). in1 I32 or I64, of out's
	 * shape; in0 of out's dtype and shape but along `axis` (a view may
	 * broadcast it). A negative index counts from the end; one outside
	 * [-n, n) reads as 0.
	 */
	NPU_OP_GATHER_ELEMENTS = 208,
};

#define NPU_OP_W_COUNT_PAD	(1u << 0)

/* The window of CONV2D and the pools: [0] rows, [1] columns. */
struct npu_op_window {
	__u32 kernel[2];		/* pools: the window (CONV2D: from in1) */
	__u32 stride[2];		/* >= 1 */
	__u32 dilation[2];		/* >= 1 */
	__u32 pad[4];			/* top, left, bottom, right */
	__u32 group;			/* CONV2D: C and O split in `group` */
	__u32 flags;			/* NPU_OP_W_* */
};

/*
 * Since firmware 0.6: the depth of a window over [N, C, D, H, W]; all 0
 * for every other launch.
 */
struct npu_op_window_depth {
	__u32 kernel;			/* pools: the window (CONV2D: from in1) */
	__u32 stride;			/* >= 1 */
	__u32 dilation;			/* >= 1 */
	__u32 pad[2];			/* front, back */
	__u32 reserved;			/* 0 */
};

/* Dimensions NPU_MAX_DIMS.. of a tensor of more than NPU_MAX_DIMS; else 0. */
struct npu_op_dims_hi {
	__u64 shape[NPU_OP_MAX_DIMS - NPU_MAX_DIMS];
	__u64 stride[NPU_OP_MAX_DIMS - NPU_MAX_DIMS];
};

#define NPU_OP_F_TRANS_A	(1u << 0)
#define NPU_OP_F_TRANS_B	(1u << 1)
#define NPU_OP_F_LAST_INDEX	(1u << 2)	/* ARGMAX, ARGMIN */
#define NPU_OP_F_EXCLUSIVE	(1u << 3)	/* CUMSUM */
#define NPU_OP_F_REVERSE	(1u << 4)	/* CUMSUM */
/*
 * Since firmware 0.11, GEMM: in1 holds B [K, N] packed once, as weights
 * are, in the layout the matrix kernels read: panels of NPU_OP_PANEL
 * columns, each K rows of NPU_OP_PANEL values, panel after panel, zero
 * past N. in1 describes that memory: f32, 3-D, shape [K, P, NPU_OP_PANEL]
 * with P = ceil(N / NPU_OP_PANEL), strides [NPU_OP_PANEL, K *
 * NPU_OP_PANEL, 1]; in0 and out f32, no NPU_OP_F_TRANS_B. The firmware
 * refuses any other shape or stride (npu_panels_check() in npu_opdefs.h),
 * so a layout it does not read never runs. The launch computes what the
 * unpacked B would, to the bit.
 */
#define NPU_OP_F_B_PANELS	(1u << 5)
#define NPU_OP_PANEL		32

/*
 * Since firmware 0.5, what CONV2D, GEMM and the f32 binary ops do to each
 * output element on its way out: add bias[c] (NPU_OP_E_BIAS: CONV2D and
 * GEMM; c is CONV2D's output channel, GEMM's column; a 1-D f32 tensor of
 * that many elements), then apply `act`, an f32 unary op of the library
 * (RELU, GELU_ERF, CLIP, ...) with alpha and beta as its parameters; 0:
 * none. All f32. The fusions an NPU compiler makes (Conv + bias + Relu,
 * Gemm + bias + Gelu, Add + Relu) run as one launch.
 */
#define NPU_OP_E_BIAS		(1u << 0)

struct npu_op_epilogue {
	__u32 flags;			/* NPU_OP_E_* */
	__u32 act;			/* enum npu_op_id, 0: none */
	float alpha, beta;		/* act's parameters */
	struct npu_op_tensor bias;
};

struct npu_op_args {
	__u32 op;			/* enum npu_op_id */
	__u32 flags;			/* NPU_OP_F_* */
	__u32 axis;			/* REDUCE_* */
	__u32 perm[NPU_MAX_DIMS];	/* TRANSPOSE */
	float alpha, beta, eps;		/* GEMM, unary parameters, LAYERNORM */
	struct npu_op_tensor in[2];
	struct npu_op_tensor out;
	/* Since firmware 0.4: a block ending before it reads as zeros here. */
	struct npu_op_window win;
	/* Since firmware 0.5, the same way: none. */
	struct npu_op_epilogue epi;
	/*
	 * Since firmware 0.6, the same way: tensors of 4 dimensions or fewer,
	 * windows in two. Dimensions 4.. of in[0], in[1] and out (the bias
	 * is 1-D), TRANSPOSE's perm[4..], and a 3-D window's depth.
	 */
	struct npu_op_dims_hi hi[3];
	__u32 perm_hi[NPU_OP_MAX_DIMS - NPU_MAX_DIMS];
	struct npu_op_window_depth win_d;
};

/* The first block's size: launches of the ops before windows may send it. */
#define NPU_OP_ARGS_V1_SIZE	__builtin_offsetof(struct npu_op_args, win)
#define NPU_OP_ARGS_SIZE	sizeof(struct npu_op_args)

#endif /* NPU_OPLIB_H */
