// SPDX-License-Identifier: MIT
/*
 * Op library: the ops themselves, on strided host views. Everything here
 * trusts nothing but npu_op_check() (oplib/npu_opcheck.h): a launch the
 * check accepts cannot make an op read or write outside its tensors.
 */
#include "npu_ops.h"
#include "npu_ops_int.h"
#include "npu_opdefs.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int npu_op_reads_output(const struct npu_op *a)
{
	return npu_op_reads_out(a->op, a->beta);
}

/*
 * One loop per case, the common ones (a contiguous row, one bias or one
 * per element, no activation or one real models fuse: ReLU, leaky ReLU,
 * the hard ones, clips, sigmoid, tanh) with the op as the loop's
 * constant (npu_unary()'s switch folds away), so they
 * vectorize, for the widest ISA the host has (target_clones: the loops
 * hold no contractions, so every clone rounds alike): the epilogue is a
 * pass over every output element.
 */
#define EPI_LOOP(bias, expr)							\
	for (uint64_t j = 0; j < n; j++) {					\
		float x0 = x[j * ys] + (bias);					\
									\
		y[j * ys] = (expr);						\
	}
#define EPI_CASE(bias, op)							\
	case op: EPI_LOOP(bias, npu_unary(op, x0, al, be)) break;
#define EPI_ACTS(bias)								\
	switch (e->act) {							\
	case 0: EPI_LOOP(bias, x0) break;					\
	case NPU_OP_RELU: EPI_LOOP(bias, x0 > 0 ? x0 : 0) break;		\
	EPI_CASE(bias, NPU_OP_LEAKY_RELU)					\
	EPI_CASE(bias, NPU_OP_HARD_SWISH)					\
	EPI_CASE(bias, NPU_OP_HARD_SIGMOID)					\
	EPI_CASE(bias, NPU_OP_CLIP)						\
	EPI_CASE(bias, NPU_OP_SIGMOID)						\
	EPI_CASE(bias, NPU_OP_TANH)						\
	default: EPI_LOOP(bias, npu_unary(e->act, x0, al, be)) break;		\
	}

__attribute__((target_clones("avx512f", "avx2", "default")))
void npu_epilogue_from(const struct npu_epi *e, const float *b, uint64_t bs,
		       const float *x, float *y, uint64_t ys, uint64_t n)
{
	float al = e->alpha, be = e->beta, c = b ? *b : 0.0f;

	if (ys == 1 && e->act == NPU_OP_GELU_ERF) {
		struct npu_epi plain = { .flags = e->flags };

		if (b || x != y)
			npu_epilogue_from(&plain, b, bs, x, y, 1, n);
		npu_vgelu_erf(y, y, n);
	} else if (ys == 1 && (!b || !bs)) {
		EPI_ACTS(c)
	} else if (ys == 1 && bs == 1) {
		EPI_ACTS(b[j])
	} else if (!b || !bs) {
		EPI_ACTS(c)
	} else {
		EPI_ACTS(b[j * bs])
	}
}

void npu_epilogue(const struct npu_epi *e, const float *b, uint64_t bs, float *y,
		  uint64_t ys, uint64_t n)
{
	npu_epilogue_from(e, b, bs, y, y, ys, n);
}

#undef EPI_ACTS
#undef EPI_CASE
#undef EPI_LOOP

uint64_t npu_op_units(const struct npu_op *a)
{
	switch (npu_op_kind(a->op)) {
	case NPU_OPK_GEMM:
		return a->out.shape[0];
	case NPU_OPK_ROW:
		return npu_op_elements(&a->out) / a->out.shape[a->out.ndim - 1];
	case NPU_OPK_WINDOW:
		return a->out.shape[0] * a->out.shape[1];	/* an output plane each */
	case NPU_OPK_SCAN:
		return npu_op_elements(&a->out) / a->out.shape[a->axis];	/* a line each */
	default:
		return npu_op_elements(&a->out);
	}
}

/* The element-at-a-time loop against the fp32 row loops, per element. */
#define ELEMENT_PATH_WEIGHT	16

uint64_t npu_op_cost(const struct npu_op *a)
{
	uint64_t out = npu_op_elements(&a->out);
	enum npu_op_kind c = npu_op_kind(a->op);

	switch (c) {
	case NPU_OPK_GEMM:
		return out * (a->flags & NPU_OP_F_TRANS_A ? a->in[0].shape[0] : a->in[0].shape[1]);
	case NPU_OPK_WINDOW: {
		uint64_t per = 1;

		for (uint32_t k = 1; k < a->in[0].ndim; k++)	/* the window's taps */
			per *= a->op != NPU_OP_CONV2D ? (k < 2 ? 1 : npu_window_dim(a,
			       a->in[0].ndim - 2, k - 2).kernel) : a->in[1].shape[k];
		return out * per;
	}
	case NPU_OPK_REDUCE:
		return npu_op_elements(&a->in[0]) * (a->in[0].dtype == NPU_DT_F32 ? 1 : ELEMENT_PATH_WEIGHT);
	case NPU_OPK_ROW:
		return 3 * out;
	default:
		if ((c == NPU_OPK_BINARY || c == NPU_OPK_UNARY) && npu_op_is_f32_classic(a->op) &&
		    a->in[0].dtype == NPU_DT_F32 && a->out.dtype == NPU_DT_F32 &&
		    (c == NPU_OPK_UNARY || a->in[1].dtype == NPU_DT_F32))
			return out;
		return out * ELEMENT_PATH_WEIGHT;
	}
}

/* ---- ops ------------------------------------------------------------ */

/*
 * A row can be long (up to 2^30 elements): its passes go by blocks and
 * look for cancellation between them, which keeps the loops inside free
 * of exits, so they vectorize. Sums are in double, as the reference's.
 */
#define ROW_BLOCK	CHECK_EVERY_INNER

#define BLOCKS(body)								\
	for (uint64_t jb = 0; jb < n; jb += ROW_BLOCK) {			\
		uint64_t je = n - jb < ROW_BLOCK ? n : jb + ROW_BLOCK;		\
									\
		if (npu_cancelled(cancel))					\
			return -1;						\
		for (uint64_t j = jb; j < je; j++)				\
			body;							\
	}

/* A contiguous row's passes, a block at a time, on the lanes of npu_vmath.c. */
#define RUNS(call)								\
	for (uint64_t jb = 0; jb < n; jb += ROW_BLOCK) {			\
		uint64_t len = n - jb < ROW_BLOCK ? n - jb : ROW_BLOCK;		\
									\
		if (npu_cancelled(cancel))					\
			return -1;						\
		call;								\
	}

static int softmax_dense(const float *x, float *y, uint64_t n, const uint32_t *cancel)
{
	float m = x[0];
	double acc = 0;

	RUNS(m = npu_vmax(x + jb, len, m))
	RUNS((npu_vaffine(y + jb, x + jb, len, m, 1.0), npu_vexp(y + jb, y + jb, len)))
	RUNS(acc += npu_vsum(y + jb, len))
	RUNS(npu_vaffine(y + jb, y + jb, len, 0.0, 1.0 / acc))
	return 0;
}

/* The variance from a second pass: E[x^2] - E[x]^2 cancels to noise on flat rows. */
static int layernorm_dense(const float *x, float *y, uint64_t n, float eps,
			   const uint32_t *cancel)
{
	double acc = 0, dev = 0, mean;

	RUNS(acc += npu_vsum(x + jb, len))
	mean = acc / n;
	RUNS(dev += npu_vsqdev(x + jb, len, mean))
	RUNS(npu_vaffine(y + jb, x + jb, len, mean, 1.0 / sqrt(dev / n + eps)))
	return 0;
}

#undef RUNS

static int softmax_row(const float *x, uint64_t si, float *y, uint64_t so, uint64_t n,
		       const uint32_t *cancel)
{
	float m = x[0];
	double acc = 0;

	if (si == 1 && so == 1)
		return softmax_dense(x, y, n, cancel);
	BLOCKS(m = x[j * si] > m ? x[j * si] : m)
	if (so == 1) {
		BLOCKS(y[j] = x[j * si] - m)
		for (uint64_t jb = 0; jb < n; jb += ROW_BLOCK) {
			if (npu_cancelled(cancel))
				return -1;
			npu_vexp(y + jb, y + jb, n - jb < ROW_BLOCK ? n - jb : ROW_BLOCK);
		}
	} else {
		BLOCKS(y[j * so] = expf(x[j * si] - m))
	}
	BLOCKS(acc += y[j * so])
	BLOCKS(y[j * so] = (float)(y[j * so] / acc))
	return 0;
}

static int layernorm_row(const float *x, uint64_t si, float *y, uint64_t so, uint64_t n,
			 float eps, const uint32_t *cancel)
{
	double acc = 0, dev = 0, mean, inv;

	if (si == 1 && so == 1)
		return layernorm_dense(x, y, n, eps, cancel);
	BLOCKS(acc += x[j * si])
	mean = acc / n;
	BLOCKS(dev += (x[j * si] - mean) * (x[j * si] - mean))
	inv = 1.0 / sqrt(dev / n + eps);
	BLOCKS(y[j * so] = (float)((x[j * si] - mean) * inv))
	return 0;
}

#undef BLOCKS

static int run_rows(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	uint32_t last = out->ndim - 1;
	uint64_t n = out->shape[last], si = in[0].stride[last], so = out->stride[last];
	uint64_t ix[NPU_OP_MAX_DIMS] = { 0 };

	for (uint64_t r = begin; r < end; r++) {
		const float *x;
		float *y;
		int ret;

		npu_unravel(r, out, last, ix);	/* all dimensions but the last */
		x = (const float *)in[0].data + npu_offset(&in[0], ix, last);
		y = (float *)out->data + npu_offset(out, ix, last);
		if (a->op == NPU_OP_SOFTMAX)
			ret = softmax_row(x, si, y, so, n, cancel);
		else
			ret = layernorm_row(x, si, y, so, n, a->eps, cancel);
		if (ret)
			return ret;
	}
	return 0;
}

/* Unit u: the line along the axis through the u-th element of the others. */
static int run_scan(const struct npu_op *a, const struct npu_view *in,
		    const struct npu_view *out, uint64_t begin, uint64_t end,
		    const uint32_t *cancel)
{
	uint32_t nd = out->ndim, ax = a->axis;
	uint64_t n = out->shape[ax], ix[NPU_OP_MAX_DIMS];
	bool excl = a->flags & NPU_OP_F_EXCLUSIVE, rev = a->flags & NPU_OP_F_REVERSE;
	struct npu_view lines = *out;	/* out with the axis at 1: its units */

	lines.shape[ax] = 1;
	for (uint64_t u = begin; u < end; u++) {
		uint64_t si, so;
		double acc = 0;

		if (npu_cancelled(cancel))
			return -1;
		npu_unravel(u, &lines, nd, ix);
		si = npu_offset(&in[0], ix, nd);
		so = npu_offset(out, ix, nd);
		for (uint64_t j = 0; j < n; j++) {
			uint64_t at = rev ? n - 1 - j : j;
			union npu_num x = npu_load(in[0].data, si + at * in[0].stride[ax], in[0].dtype);
			union npu_num r = { .f = excl ? acc : acc + x.f };

			acc += x.f;
			if (out->dtype != NPU_DT_F64)
				r.f = (float)r.f;
			npu_store(out->data, so + at * out->stride[ax], out->dtype, r, NPU_DOM_FLOAT);
		}
	}
	return 0;
}

/* An index outside [-n, n) reads as 0: a launch cannot fail an element. */
/* One run of a gather: cnt elements along the last dimension. */
#define GATHER_RUN(load, type)							\
	for (uint64_t j = 0; j < cnt; j++) {					\
		int64_t i = (load);						\
		type *d = (type *)dst + j * so;					\
									\
		i += i < 0 ? n : 0;						\
		*d = i < 0 || i >= n ? 0 : ((const type *)src)[j * sx + (uint64_t)i * sa]; \
	}

/*
 * GATHER_ELEMENTS by runs along the output's last dimension (Resize's
 * positions, a Gather's rows): the index is unravelled once a run, not an
 * element, and the common case (32-bit elements, int64 positions) is a
 * loop of its own; other dtypes load each position by its dtype.
 */
static int run_gather(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel)
{
	uint32_t nd = out->ndim, ax = a->axis, last = nd - 1;
	int64_t n = (int64_t)in[0].shape[ax];
	size_t es = npu_dtype_size(out->dtype);
	uint64_t ix[NPU_OP_MAX_DIMS], len = out->shape[last];
	uint64_t si = in[1].stride[last], so = out->stride[last], sa = in[0].stride[ax];
	/* along the run the source moves with it, unless the run is the axis */
	uint64_t sx = ax == last ? 0 : in[0].stride[last];

	for (uint64_t e = begin, cnt; e < end; e += cnt) {
		const int64_t *pos;
		const char *src;
		char *dst;
		uint64_t io;

		if (npu_cancelled(cancel))
			return -1;
		npu_unravel(e, out, nd, ix);
		cnt = len - ix[last] < end - e ? len - ix[last] : end - e;
		cnt = cnt < CHECK_EVERY ? cnt : CHECK_EVERY;
		io = npu_offset(&in[1], ix, nd);
		pos = (const int64_t *)in[1].data + io;
		dst = (char *)out->data + npu_offset(out, ix, nd) * es;
		ix[ax] = 0;
		src = (const char *)in[0].data + npu_offset(&in[0], ix, nd) * es;
		if (!si && sx == 1 && so == 1) {
			/* one position for the run (a Resize's pass along H): a row copy */
			int64_t i = npu_load(in[1].data, io, in[1].dtype).i;

			i += i < 0 ? n : 0;
			if (i < 0 || i >= n)
				memset(dst, 0, cnt * es);
			else
				memcpy(dst, src + (uint64_t)i * sa * es, cnt * es);
			continue;
		}
		if (es == 4 && in[1].dtype == NPU_DT_I64) {
			GATHER_RUN(pos[j * si], uint32_t)
			continue;
		}
		for (uint64_t j = 0; j < cnt; j++) {
			int64_t i = npu_load(in[1].data, io + j * si, in[1].dtype).i;
			char *d = dst + j * so * es;

			i += i < 0 ? n : 0;
			if (i < 0 || i >= n)
				memset(d, 0, es);
			else
				memcpy(d, src + (j * sx + (uint64_t)i * sa) * es, es);
		}
	}
	return 0;
}

#undef GATHER_RUN

/* ARGMAX / ARGMIN: does v (at a later index) take best's place? */
static bool arg_better(const struct npu_op *a, enum npu_dom dom, union npu_num v,
		       union npu_num best)
{
	bool last = a->flags & NPU_OP_F_LAST_INDEX, max = a->op == NPU_OP_ARGMAX;

	if (dom == NPU_DOM_FLOAT) {
		if (isnan(best.f))
			return last && isnan(v.f);
		if (isnan(v.f))
			return true;
		return max ? (last ? v.f >= best.f : v.f > best.f) :
		       (last ? v.f <= best.f : v.f < best.f);
	}
	if (dom == NPU_DOM_INT)
		return max ? (last ? v.i >= best.i : v.i > best.i) :
		       (last ? v.i <= best.i : v.i < best.i);
	return max ? (last ? v.u >= best.u : v.u > best.u) :
	       (last ? v.u <= best.u : v.u < best.u);
}

/*
 * Sums and products accumulate in double; max and min keep a nan they
 * meet (as numpy's do). fp32 input reads through a float pointer, others
 * through npu_load().
 */
static int run_reduce(const struct npu_op *a, const struct npu_view *in,
		      const struct npu_view *out, uint64_t begin, uint64_t end,
		      const uint32_t *cancel)
{
	uint32_t nd = out->ndim, ax = a->axis, dt = in[0].dtype;
	uint64_t ix[NPU_OP_MAX_DIMS], n = in[0].shape[ax], st = in[0].stride[ax];
	enum npu_dom dom = npu_dtype_dom(dt);
	bool arg = a->op == NPU_OP_ARGMAX || a->op == NPU_OP_ARGMIN;

	for (uint64_t e = begin; e < end; e++) {
		uint64_t base, at = 0;
		union npu_num r, best;
		double acc = a->op == NPU_OP_REDUCE_PROD ? 1 : 0, m;

		npu_unravel(e, out, nd, ix);
		base = npu_offset(&in[0], ix, nd);
		best = npu_load(in[0].data, base, dt);
		m = best.f;
		if (dt == NPU_DT_F32 && (a->op == NPU_OP_REDUCE_SUM || a->op == NPU_OP_REDUCE_MEAN)) {
			/* the common case without the others' tests: a sum, in order */
			const float *x = (const float *)in[0].data + base;

			for (uint64_t jb = 0; jb < n; jb += CHECK_EVERY_INNER) {
				uint64_t je = n - jb < CHECK_EVERY_INNER ? n : jb + CHECK_EVERY_INNER;

				if (npu_cancelled(cancel))
					return -1;
				for (uint64_t j = jb; j < je; j++)
					acc += x[j * st];
			}
			r.f = (float)(a->op == NPU_OP_REDUCE_MEAN ? acc / (double)n : acc);
			npu_store(out->data, npu_offset(out, ix, nd), out->dtype, r, NPU_DOM_FLOAT);
			continue;
		}
		for (uint64_t j = 0; j < n; j++) {
			union npu_num v;

			if (STOP_AT(j, cancel))
				return -1;
			if (dt == NPU_DT_F32)
				v.f = ((const float *)in[0].data)[base + j * st];
			else
				v = npu_load(in[0].data, base + j * st, dt);
			if (arg) {
				if (j && arg_better(a, dom, v, best)) {
					best = v;
					at = j;
				}
				continue;
			}
			if (a->op == NPU_OP_REDUCE_PROD)
				acc *= v.f;
			else
				acc += v.f;
			if (!isnan(m) && (isnan(v.f) || (a->op == NPU_OP_REDUCE_MIN ? v.f < m : v.f > m)))
				m = v.f;
		}
		if (arg) {
			r.i = (int64_t)at;
			npu_store(out->data, npu_offset(out, ix, nd), out->dtype, r, NPU_DOM_INT);
			continue;
		}
		r.f = a->op == NPU_OP_REDUCE_MAX || a->op == NPU_OP_REDUCE_MIN ? m :
		      a->op == NPU_OP_REDUCE_MEAN ? acc / (double)n : acc;
		if (dt != NPU_DT_F64)
			r.f = (float)r.f;	/* as fp32 ops round their result */
		npu_store(out->data, npu_offset(out, ix, nd), out->dtype, r, NPU_DOM_FLOAT);
	}
	return 0;
}

int npu_op_run_cancellable(const struct npu_op *a, const struct npu_view *in,
			   const struct npu_view *out, uint64_t begin, uint64_t end,
			   const uint32_t *cancel)
{
	switch (npu_op_kind(a->op)) {
	case NPU_OPK_GEMM:
		return npu_gemm_run(a, in, out, begin, end, cancel);
	case NPU_OPK_ROW:
		return run_rows(a, in, out, begin, end, cancel);
	case NPU_OPK_REDUCE:
		return run_reduce(a, in, out, begin, end, cancel);
	case NPU_OPK_WINDOW:
		return npu_window_run(a, in, out, begin, end, cancel);
	case NPU_OPK_GATHER:
		return run_gather(a, in, out, begin, end, cancel);
	case NPU_OPK_SCAN:
		return run_scan(a, in, out, begin, end, cancel);
	case NPU_OPK_NONE:
		return 0;
	default:
		return npu_elementwise_run(a, in, out, begin, end, cancel);
	}
}

void npu_op_run(const struct npu_op *a, const struct npu_view *in,
		const struct npu_view *out, uint64_t begin, uint64_t end)
{
	npu_op_run_cancellable(a, in, out, begin, end, NULL);
}
