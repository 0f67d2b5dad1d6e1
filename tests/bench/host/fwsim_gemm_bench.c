// SPDX-License-Identifier: MIT
/*
 * The op library's fp32 GEMM against OpenBLAS sgemm, both on one thread
 * of this host, in the same run: 512 and 1024 square, the op library's
 * widest kernel for this CPU (AVX-512 or AVX2 + FMA, packed), its AVX2
 * kernel and its portable loop (NPU_FWSIM_ISA). The ratio is the widest
 * kernel's speed as a fraction of OpenBLAS's. Then bf16 A and B (f32
 * sums) and u8 A, i8 B (i32 sums) against that fp32 kernel on the same
 * sizes. make bench pins OpenBLAS's
 * core type to what the CPU has (OPENBLAS_CORETYPE): its detection may not
 * know the CPU (0.3.21 takes a Zen 4 VM for a Prescott).
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench.h"
#include "npu_ops.h"
#include "npu_ops_int.h"

void openblas_set_num_threads(int n);

static void view(struct npu_tensor *t, struct npu_view *v, float *data, uint64_t r,
		 uint64_t c)
{
	memset(t, 0, sizeof(*t));
	t->ndim = 2;
	t->shape[0] = r, t->shape[1] = c;
	t->stride[0] = c, t->stride[1] = 1;
	*v = (struct npu_view){ .data = data, .dtype = NPU_DT_F32, .ndim = 2 };
	memcpy(v->shape, t->shape, sizeof(v->shape));
	memcpy(v->stride, t->stride, sizeof(v->stride));
}

static double best_of(int runs, const struct npu_op *a, struct npu_view *v)
{
	double best = 1e30;

	for (int r = 0; r < runs; r++) {
		double t = now_s();

		npu_op_run(a, v, &v[2], 0, npu_op_units(a));
		best = fmin(best, now_s() - t);
	}
	return best;
}

static const int sizes[] = { 512, 1024 };

/* A lower precision's times t against fp32's, size by size. */
static void against(const char *title, const char *name, const char *isa, const double *t_f32,
		    const double *t)
{
	printf("\n%-22s %9s %9s %7s   (%s)\n", title, "fp32", name, "ratio", isa);
	for (unsigned int s = 0; s < 2; s++) {
		double flops = 2.0 * sizes[s] * sizes[s] * sizes[s];

		printf("%-22s %9.2f %9.2f %7.2f\n",
		       sizes[s] == 512 ? "512 x 512 x 512" : "1024 x 1024 x 1024",
		       flops / t_f32[s] * 1e-9, flops / t[s] * 1e-9, t_f32[s] / t[s]);
	}
}

int main(void)
{
	double t_f32[2], t_bf16[2], t_int8[2];
	int bad = 0;

	openblas_set_num_threads(1);
	printf("%-22s %9s %9s %9s %9s %7s\n", "fp32 GEMM, one thread", "widest", "avx2",
	       "portable", "OpenBLAS", "ratio");
	for (unsigned int s = 0; s < 2; s++) {
		int n = sizes[s], runs = n <= 512 ? 5 : 3;
		float *A = malloc(sizeof(float) * n * n), *B = malloc(sizeof(float) * n * n);
		float *C = malloc(sizeof(float) * n * n), *D = malloc(sizeof(float) * n * n);
		struct npu_op a = { .op = NPU_OP_GEMM, .alpha = 1.0f };
		struct npu_view v[3];
		double t_fast, t_avx2, t_port, t_blas = 1e30, flops = 2.0 * n * n * n, err = 0;
		uint16_t *Ah = malloc(sizeof(uint16_t) * n * n), *Bh = malloc(sizeof(uint16_t) * n * n);

		for (int i = 0; i < n * n; i++) {
			A[i] = (float)((uint32_t)i * 7919u % 1000u) / 1000.0f - 0.5f;
			B[i] = (float)((uint32_t)i * 104729u % 1000u) / 1000.0f - 0.5f;
		}
		view(&a.in[0], &v[0], A, (uint64_t)n, (uint64_t)n);
		view(&a.in[1], &v[1], B, (uint64_t)n, (uint64_t)n);
		view(&a.out, &v[2], C, (uint64_t)n, (uint64_t)n);
		t_fast = best_of(runs, &a, v);
		setenv("NPU_FWSIM_ISA", "avx2", 1);
		t_avx2 = best_of(runs, &a, v);
		setenv("NPU_FWSIM_ISA", "portable", 1);
		t_port = best_of(1, &a, v);
		unsetenv("NPU_FWSIM_ISA");
		npu_op_run(&a, v, &v[2], 0, npu_op_units(&a));	/* C from the fast path */
		for (int r = 0; r < runs; r++) {
			double t = now_s();

			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n,
				    B, n, 0.0f, D, n);
			t_blas = fmin(t_blas, now_s() - t);
		}
		for (int i = 0; i < n * n; i++)
			err = fmax(err, fabs((double)C[i] - D[i]));
		printf("%-22s %9.2f %9.2f %9.2f %9.2f %7.2f\n",
		       n == 512 ? "512 x 512 x 512" : "1024 x 1024 x 1024", flops / t_fast * 1e-9,
		       flops / t_avx2 * 1e-9, flops / t_port * 1e-9, flops / t_blas * 1e-9,
		       t_blas / t_fast);
		bad |= err > 1e-2;
		/*
		 * bf16 A and B, f32 C: the same values rounded to bf16, against
		 * OpenBLAS on those rounded values (D still holds its timing run).
		 */
		for (int i = 0; i < n * n; i++) {
			Ah[i] = npu_f32_to_bf16(A[i]), A[i] = npu_bf16_to_f32(Ah[i]);
			Bh[i] = npu_f32_to_bf16(B[i]), B[i] = npu_bf16_to_f32(Bh[i]);
		}
		v[0].data = Ah, v[0].dtype = a.in[0].dtype = NPU_DT_BF16;
		v[1].data = Bh, v[1].dtype = a.in[1].dtype = NPU_DT_BF16;
		t_bf16[s] = best_of(runs, &a, v);
		t_f32[s] = t_fast;
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n,
			    0.0f, D, n);
		err = 0;
		for (int i = 0; i < n * n; i++)
			err = fmax(err, fabs((double)C[i] - D[i]));
		bad |= err > 1e-2;
		/* u8 A, i8 B, i32 C: the same shape on bytes, against sums in 64 bits */
		for (int i = 0; i < n * n; i++) {
			((uint8_t *)Ah)[i] = (uint8_t)(i * 7919u >> 3);
			((int8_t *)Bh)[i] = (int8_t)(i * 104729u >> 5);
		}
		v[0].data = Ah, v[0].dtype = a.in[0].dtype = NPU_DT_U8;
		v[1].data = Bh, v[1].dtype = a.in[1].dtype = NPU_DT_I8;
		v[2].dtype = a.out.dtype = NPU_DT_I32;
		t_int8[s] = best_of(runs, &a, v);
		for (int i = 0; i < n; i += 97)
			for (int j = 0; j < n; j += 89) {
				int64_t sum = 0;

				for (int p = 0; p < n; p++)
					sum += (int64_t)((uint8_t *)Ah)[i * n + p] *
					       ((int8_t *)Bh)[p * n + j];
				bad |= (int32_t)sum != ((int32_t *)C)[i * n + j];
			}
		a.in[0].dtype = a.in[1].dtype = a.out.dtype = NPU_DT_F32;
		free(A), free(B), free(C), free(D), free(Ah), free(Bh);
	}
	printf("(GFLOP/s; ratio: the widest kernel this CPU runs against OpenBLAS, goal >= 0.5)\n");
	against("bf16 GEMM, one thread", "bf16",
		npu_gemm_bf16_native() ? "AVX512_BF16" : "no AVX512_BF16: widened", t_f32, t_bf16);
	printf("(GFLOP/s; ratio: bf16 A and B, f32 sums, against the fp32 kernel, goal >= 1.8)\n");
	against("int8 GEMM, one thread", "u8 x i8",
		npu_gemm_int8_native() ? "AVX512_VNNI" : "no AVX512_VNNI: portable", t_f32, t_int8);
	printf("(G multiply-adds x 2 /s; ratio: u8 A, i8 B, i32 sums, against the fp32 kernel, "
	       "goal >= 3)\n");
	return bad;
}
