/* SPDX-License-Identifier: MIT */
/*
 * The op library the AI cores run: pure computation on host memory.
 *
 * The engine gathers each tensor of a kernel launch out of device memory
 * (through the MMU) into a host buffer, keeping its strides, runs the op
 * on those views split into units across cores, and scatters the output
 * back. This file knows nothing of queues or MMUs, so it is tested
 * directly against reference implementations.
 */
#ifndef NPU_OPS_H
#define NPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "npu_fw_if.h"
#include "npu_opcheck.h"

/* A tensor in host memory: `data` is element 0, strides in elements. */
struct npu_view {
	void *data;
	uint32_t dtype;
	uint32_t ndim;
	uint64_t shape[NPU_OP_MAX_DIMS];
	uint64_t stride[NPU_OP_MAX_DIMS];
};

/* Whether the op reads its output before writing it (GEMM with beta, SELECT). */
int npu_op_reads_output(const struct npu_op *a);


/*
 * About how many multiply-adds (or element steps) the launch takes: what
 * the firmware weighs to run a small one at once instead of handing it to
 * a core group. Only valid after npu_op_check().
 */
uint64_t npu_op_cost(const struct npu_op *a);

/* Independent units of work, to split across cores. */
uint64_t npu_op_units(const struct npu_op *a);

/*
 * Run units [begin, end). Views: in[0], in[1] (if used), in[2] (the
 * epilogue's bias, if it has one), out.
 */
void npu_op_run(const struct npu_op *a, const struct npu_view *in,
		const struct npu_view *out, uint64_t begin, uint64_t end);

/*
 * The same, but cancellable: the op reads *cancel (atomically; NULL never
 * cancels) at safe points, at most a few ms of work apart (every few
 * thousand elements, every row, every GEMM row panel), and returns as
 * soon as it is non-zero, leaving the output partly written. Returns 0
 * when every unit ran, -1 when cancelled.
 */
int npu_op_run_cancellable(const struct npu_op *a, const struct npu_view *in,
			   const struct npu_view *out, uint64_t begin, uint64_t end,
			   const uint32_t *cancel);

/*
 * A launch of an op that computes in f32 on f16, bf16 (or MaxPool's i8,
 * u8) tensors (npu_op_widens) runs as *run, `a` with those tensors' dtypes
 * f32: the engine gives npu_op_run() f32 views of them (npu_widen.c), with
 * the same strides, and narrows the output back. npu_op_run() takes no
 * other f16 or bf16 tensors for these ops, but for a GEMM's A and B both
 * bf16 where the host multiplies bf16 (npu_gemm_bf16_native()): those
 * stay bf16.
 */
void npu_op_widened(const struct npu_op *a, struct npu_op *run);

/*
 * n elements of dt at src into f32 at dst, and back; dst may be src (the
 * buffer must hold n floats).
 */
void npu_widen(float *dst, const void *src, uint64_t n, uint32_t dt);
void npu_narrow(void *dst, const float *src, uint64_t n, uint32_t dt);

/* Only the elements of dst (its dtype, shape, strides) from src (f32, same strides). */
void npu_narrow_view(const struct npu_view *dst, const float *src);

/* npu_dtype_size() and the fp16 / bf16 conversions: npu_opdefs.h. */

/*
 * C[i][j] += alpha * A[i][p] B[p][j] for rows [begin, end), B[p][j] at
 * B[p * bp + j * bj] (rows or columns contiguous: packing reads either)
 * and C's rows contiguous (npu_gemm.c): 0 done, -1 cancelled, 1 no fast
 * path here (neither AVX-512 nor AVX2 and FMA, or
 * NPU_FWSIM_ISA=portable): use the portable one.
 */
int npu_gemm_fast(const float *A, uint64_t ai, uint64_t ap, const float *B, uint64_t bp,
		  uint64_t bj, float *C, uint64_t ci, uint64_t n, uint64_t k, float alpha,
		  uint64_t begin, uint64_t end, const uint32_t *cancel);

/*
 * The same with B packed once in panels (NPU_OP_F_B_PANELS): column j of
 * row p at P[j / NPU_OP_PANEL * k * NPU_OP_PANEL + p * NPU_OP_PANEL +
 * j % NPU_OP_PANEL]. Read where it lies, never copied.
 */
int npu_gemm_panels(const float *A, uint64_t ai, uint64_t ap, const float *P, float *C,
		    uint64_t ci, uint64_t n, uint64_t k, float alpha, uint64_t begin, uint64_t end,
		    const uint32_t *cancel);

#endif /* NPU_OPS_H */
