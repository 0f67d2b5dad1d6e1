// SPDX-License-Identifier: MIT
/*
 * npurun --check: the model computed again on the host, op by op, with
 * plain loops written from the op library's definitions (not the
 * device's code), to compare the device's outputs with. Every feature map
 * gets its own buffer here, so a wrong memory plan shows as a difference.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_file.h"
#include "npu_opdefs.h"
#include "reference.h"

struct ref {
	const struct mf_model *m;
	uint8_t **mem;			/* per base tensor: weights, maps, I/O */
};

/* fp16 and bf16 from and to f32, round to nearest even. */
static float from_half(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, f = h & 0x3ff, u;
	float v;

	if (e == 0) {
		v = ldexpf((float)f, -24);
		return s ? -v : v;
	}
	u = e == 31 ? s | 0x7f800000u | f << 13 : s | (e + 112) << 23 | f << 13;
	memcpy(&v, &u, 4);
	return v;
}

static uint16_t to_half(float v)
{
	uint32_t u, s;
	int e;
	float a = fabsf(v);

	memcpy(&u, &v, 4);
	s = (u >> 16) & 0x8000;
	if (isnan(v))
		return (uint16_t)(s | 0x7e00);
	if (a >= 65520.0f)
		return (uint16_t)(s | 0x7c00);
	if (a < ldexpf(1.0f, -14)) {
		float q = rintf(a * ldexpf(1.0f, 24));

		return (uint16_t)(s | (uint32_t)q);
	}
	e = (int)((u >> 23) & 0xff) - 127;
	{
		float m = a / ldexpf(1.0f, e) - 1.0f;
		uint32_t f = (uint32_t)rintf(m * 1024.0f);

		if (f == 1024) {
			f = 0;
			e++;
		}
		return (uint16_t)(s | (uint32_t)(e + 15) << 10 | f);
	}
}

static float from_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float v;

	memcpy(&v, &u, 4);
	return v;
}

static uint16_t to_bf16(float v)
{
	uint32_t u;

	memcpy(&u, &v, 4);
	if (isnan(v))
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* Element `idx` (linear, row-major over the shape) of tensor t. */
static uint8_t *at(const struct ref *r, uint32_t t, uint64_t idx)
{
	const struct npum_tensor *x = &r->m->tensors[t];
	const struct npum_tensor *b = mf_base(r->m, x);
	uint64_t off = 0;

	for (int k = (int)x->ndim - 1; k >= 0; k--) {
		off += (idx % x->shape[k]) * x->stride[k];
		idx /= x->shape[k];
	}
	return r->mem[b - r->m->tensors] + (x->segment == NPUM_SEG_VIEW ? x->offset : 0) +
	       off * mf_dtype_size(x->dtype);
}

static float get(const struct ref *r, uint32_t t, uint64_t idx)
{
	const uint8_t *p = at(r, t, idx);
	uint16_t h;
	float v;

	switch (r->m->tensors[t].dtype) {
	case NPUM_F32:
		memcpy(&v, p, 4);
		return v;
	case NPUM_F16:
		memcpy(&h, p, 2);
		return from_half(h);
	default:
		memcpy(&h, p, 2);
		return from_bf16(h);
	}
}

static void put(const struct ref *r, uint32_t t, uint64_t idx, float v)
{
	uint8_t *p = at(r, t, idx);
	uint16_t h;

	switch (r->m->tensors[t].dtype) {
	case NPUM_F32:
		memcpy(p, &v, 4);
		break;
	case NPUM_F16:
		h = to_half(v);
		memcpy(p, &h, 2);
		break;
	default:
		h = to_bf16(v);
		memcpy(p, &h, 2);
		break;
	}
}

static uint64_t count(const struct npum_tensor *t)
{
	uint64_t n = 1;

	for (unsigned int k = 0; k < t->ndim; k++)
		n *= t->shape[k];
	return n;
}

/*
 * Conv2d and the pools in 2-D or 3-D, one output element at a time,
 * every window position tested against the image (not the firmware's
 * loop order). A 2-D window is one of depth 1.
 */
static void window(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *x = &r->m->tensors[op->in[0]], *y = &r->m->tensors[op->out];
	const struct npum_tensor *w = op->kernel == NPU_OP_CONV2D ? &r->m->tensors[op->in[1]] : NULL;
	struct npu_op a = { .op = op->kernel };
	unsigned int nsp = x->ndim - 2, z = nsp - 2;	/* z: whether there is a depth */
	struct npu_win_dim d[3];
	uint64_t C = x->shape[1], O = y->shape[1], in[3] = { 1, 1, 1 }, on[3] = { 1, 1, 1 };
	uint64_t kn[3] = { 1, 1, 1 }, cpg, opg, per;

	mf_window_args(op, &a);
	d[0] = (struct npu_win_dim){ 1, 1, 1, 0, 0 };
	for (unsigned int k = 0; k < nsp; k++) {
		d[k + 1 - z] = npu_window_dim(&a, nsp, k);
		in[k + 1 - z] = x->shape[2 + k];
		on[k + 1 - z] = y->shape[2 + k];
		kn[k + 1 - z] = w ? w->shape[2 + k] : d[k + 1 - z].kernel;
	}
	cpg = w ? C / a.win.group : 1;
	opg = w ? O / a.win.group : 1;
	per = on[0] * on[1] * on[2];
	for (uint64_t e = 0; e < y->shape[0] * O * per; e++) {
		uint64_t p = e % per, o = e / per % O, n = e / (per * O), ix[3];
		double acc = 0, cnt = 0, all = 0;
		float m = -INFINITY;

		ix[2] = p % on[2];
		ix[1] = p / on[2] % on[1];
		ix[0] = p / (on[2] * on[1]);
		for (uint64_t c = 0; c < cpg; c++)
			for (uint64_t t = 0; t < kn[0] * kn[1] * kn[2]; t++) {
				uint64_t tap[3] = { t / (kn[1] * kn[2]), t / kn[2] % kn[1], t % kn[2] };
				uint64_t ic = w ? (o / opg) * cpg + c : o, src = n * C + ic;
				bool inside = true, counted = true;
				float v;

				for (int k = 0; k < 3; k++) {
					int64_t q = (int64_t)(ix[k] * d[k].stride + tap[k] * d[k].dilation) -
						    (int64_t)d[k].pad0;

					counted = counted && q < (int64_t)(in[k] + d[k].pad1);
					inside = inside && q >= 0 && q < (int64_t)in[k];
					src = src * in[k] + (uint64_t)(q < 0 ? 0 : q);
				}
				if (counted)
					all++;
				if (!inside)
					continue;
				v = get(r, op->in[0], src);
				cnt++;
				if (w)
					acc += (double)v * get(r, op->in[1], (o * cpg + c) *
							       kn[0] * kn[1] * kn[2] + t);
				else
					acc += v;
				m = v > m || isnan(v) ? v : m;
			}
		put(r, op->out, e, op->kernel == NPU_OP_MAXPOOL2D ? m :
		    op->kernel == NPU_OP_CONV2D ? (float)acc :
		    (float)(acc / (a.win.flags & NPU_OP_W_COUNT_PAD ? all : cnt ? cnt : 1)));
	}
}

static void gemm(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *o = &r->m->tensors[op->out];
	const struct npum_tensor *a = &r->m->tensors[op->in[0]];
	bool ta = op->flags & NPU_OP_F_TRANS_A, tb = op->flags & NPU_OP_F_TRANS_B;
	uint64_t M = o->shape[0], N = o->shape[1], K = ta ? a->shape[0] : a->shape[1];
	/* B in panels, [K, P, 32]: row k's column j is its element k * P * 32 + j. */
	uint64_t bn = op->flags & NPU_OP_F_B_PANELS ?
		      r->m->tensors[op->in[1]].shape[1] * NPU_OP_PANEL : N;

	for (uint64_t i = 0; i < M; i++)
		for (uint64_t j = 0; j < N; j++) {
			double acc = 0;

			for (uint64_t k = 0; k < K; k++)
				acc += (double)get(r, op->in[0], ta ? k * M + i : i * K + k) *
				       get(r, op->in[1], tb ? j * K + k : k * bn + j);
			put(r, op->out, i * N + j, (float)(op->alpha * acc +
				(op->beta != 0 ? op->beta * get(r, op->out, i * N + j) : 0)));
		}
}

/* Along the last dimension: softmax, layernorm. */
static void rows(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *t = &r->m->tensors[op->in[0]];
	uint64_t n = t->shape[t->ndim - 1], rowsn = count(t) / n;

	for (uint64_t i = 0; i < rowsn; i++) {
		double mx = -INFINITY, sum = 0, mean = 0, var = 0;

		for (uint64_t j = 0; j < n; j++) {
			double v = get(r, op->in[0], i * n + j);

			mx = v > mx ? v : mx;
			mean += v;
		}
		mean /= (double)n;
		for (uint64_t j = 0; j < n; j++) {
			double v = get(r, op->in[0], i * n + j);

			sum += exp(v - mx);
			var += (v - mean) * (v - mean);
		}
		var /= (double)n;
		for (uint64_t j = 0; j < n; j++) {
			double v = get(r, op->in[0], i * n + j);

			put(r, op->out, i * n + j, op->kernel == NPU_OP_SOFTMAX ?
			    (float)(exp(v - mx) / sum) : (float)((v - mean) / sqrt(var + op->eps)));
		}
	}
}

/* Any dtype, in its domain (npu_opdtypes.h). */
static union npu_num load(const struct ref *r, uint32_t t, uint64_t idx)
{
	return npu_load(at(r, t, idx), 0, r->m->tensors[t].dtype);
}

static void store(const struct ref *r, uint32_t t, uint64_t idx, union npu_num v,
		  enum npu_dom dom)
{
	npu_store(at(r, t, idx), 0, r->m->tensors[t].dtype, v, dom);
}

static bool is_float16_32(uint32_t dt)
{
	return dt == NPUM_F32 || dt == NPUM_F16 || dt == NPUM_BF16;
}

/* Element v at a later index replaces best for ARGMAX (max) or ARGMIN. */
static bool arg_takes(enum npu_dom dom, union npu_num v, union npu_num best, bool max, bool last)
{
	int c;

	if (dom == NPU_DOM_FLOAT) {
		if (isnan(best.f) || isnan(v.f))
			return isnan(v.f) && (!isnan(best.f) || last);
		c = v.f > best.f ? 1 : v.f < best.f ? -1 : 0;
	} else if (dom == NPU_DOM_INT) {
		c = v.i > best.i ? 1 : v.i < best.i ? -1 : 0;
	} else {
		c = v.u > best.u ? 1 : v.u < best.u ? -1 : 0;
	}
	return (max ? c > 0 : c < 0) || (last && !c);
}

static void arg_reduce(const struct ref *r, const struct npum_op *op, uint64_t outer,
		       uint64_t n, uint64_t inner)
{
	uint32_t dt = r->m->tensors[op->in[0]].dtype;

	for (uint64_t o = 0; o < outer; o++)
		for (uint64_t i = 0; i < inner; i++) {
			union npu_num best = load(r, op->in[0], o * n * inner + i), at_ = { .i = 0 };

			for (uint64_t j = 1; j < n; j++) {
				union npu_num v = load(r, op->in[0], (o * n + j) * inner + i);

				if (arg_takes(npu_dtype_dom(dt), v, best, op->kernel == NPU_OP_ARGMAX,
					      op->flags & NPU_OP_F_LAST_INDEX)) {
					best = v;
					at_.i = (int64_t)j;
				}
			}
			store(r, op->out, o * inner + i, at_, NPU_DOM_INT);
		}
}

static void reduce(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *t = &r->m->tensors[op->in[0]];
	uint64_t inner = 1, outer = 1, n = t->shape[op->axis];

	for (unsigned int k = op->axis + 1; k < t->ndim; k++)
		inner *= t->shape[k];
	for (unsigned int k = 0; k < op->axis; k++)
		outer *= t->shape[k];
	if (op->kernel == NPU_OP_ARGMAX || op->kernel == NPU_OP_ARGMIN) {
		arg_reduce(r, op, outer, n, inner);
		return;
	}
	for (uint64_t o = 0; o < outer; o++)
		for (uint64_t i = 0; i < inner; i++) {
			bool max = op->kernel == NPU_OP_REDUCE_MAX, min = op->kernel == NPU_OP_REDUCE_MIN;
			double acc = max ? -INFINITY : min ? INFINITY :
				     op->kernel == NPU_OP_REDUCE_PROD ? 1 : 0;
			union npu_num res;

			for (uint64_t j = 0; j < n; j++) {
				double v = load(r, op->in[0], (o * n + j) * inner + i).f;

				if (max || min)		/* a nan met stays */
					acc = isnan(acc) || isnan(v) ? NAN : max ? fmax(acc, v) : fmin(acc, v);
				else if (op->kernel == NPU_OP_REDUCE_PROD)
					acc *= v;
				else
					acc += v;
			}
			if (op->kernel == NPU_OP_REDUCE_MEAN)
				acc /= (double)n;
			res.f = t->dtype == NPUM_F64 ? acc : (float)acc;
			store(r, op->out, o * inner + i, res, NPU_DOM_FLOAT);
		}
}

/* Elementwise ops on dtypes past f32, f16 and bf16, or the ops added with them. */
static void elementwise_any(const struct ref *r, const struct npum_op *op, uint64_t n)
{
	uint32_t d0 = r->m->tensors[op->in[0]].dtype;
	bool two = npu_op_kind(op->kernel) == NPU_OPK_BINARY;
	uint32_t d1 = two ? r->m->tensors[op->in[1]].dtype : d0;

	for (uint64_t i = 0; i < n; i++) {
		enum npu_dom dom = npu_dtype_dom(d0);
		union npu_num x = load(r, op->in[0], i);

		if (op->kernel == NPU_OP_SELECT) {
			if (x.u)
				memcpy(at(r, op->out, i), at(r, op->in[1], i), mf_dtype_size(d1));
			continue;
		}
		if (op->kernel == NPU_OP_REQUANT) {
			uint32_t dout = r->m->tensors[op->out].dtype;

			x.i = npu_requant(d0 == NPU_DT_I32 ? (float)x.i : (float)x.f,
					  (float)load(r, op->in[1], i).f, op->alpha, op->beta, dout);
			store(r, op->out, i, x, NPU_DOM_INT);
			continue;
		}
		if (op->kernel == NPU_OP_CAST)
			;
		else if (two)
			x = npu_eval_binary(op->kernel, d0, d1, x, load(r, op->in[1], i), &dom);
		else
			x = npu_eval_unary(op->kernel, d0, x, op->alpha, op->beta, &dom);
		store(r, op->out, i, x, dom);
	}
}

/* Running sums along the axis, in double, from either end, with or without each element. */
static void cumsum(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *t = &r->m->tensors[op->in[0]];
	uint64_t inner = 1, outer = 1, n = t->shape[op->axis];
	bool excl = op->flags & NPU_OP_F_EXCLUSIVE, rev = op->flags & NPU_OP_F_REVERSE;

	for (unsigned int k = op->axis + 1; k < t->ndim; k++)
		inner *= t->shape[k];
	for (unsigned int k = 0; k < op->axis; k++)
		outer *= t->shape[k];
	for (uint64_t o = 0; o < outer; o++)
		for (uint64_t i = 0; i < inner; i++) {
			double acc = 0;

			for (uint64_t j = 0; j < n; j++) {
				uint64_t e = (o * n + (rev ? n - 1 - j : j)) * inner + i;
				double v = load(r, op->in[0], e).f;
				union npu_num res = { .f = excl ? acc : acc + v };

				acc += v;
				if (t->dtype != NPUM_F64)
					res.f = (float)res.f;
				store(r, op->out, e, res, NPU_DOM_FLOAT);
			}
		}
}

/* out[i] = in0[i, its `axis` index from in1] (0 outside the range). */
static void gather_elements(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *o = &r->m->tensors[op->out], *d = &r->m->tensors[op->in[0]];
	size_t es = mf_dtype_size(o->dtype);

	for (uint64_t idx = 0; idx < count(o); idx++) {
		uint64_t ci[NPUM_MAX_DIMS], rest = idx, src = 0;
		int64_t j = load(r, op->in[1], idx).i, n = (int64_t)d->shape[op->axis];

		for (int k = (int)o->ndim - 1; k >= 0; k--) {
			ci[k] = rest % o->shape[k];
			rest /= o->shape[k];
		}
		j += j < 0 ? n : 0;
		if (j < 0 || j >= n) {
			memset(at(r, op->out, idx), 0, es);
			continue;
		}
		ci[op->axis] = (uint64_t)j;
		for (unsigned int k = 0; k < d->ndim; k++)
			src = src * d->shape[k] + ci[k];
		memcpy(at(r, op->out, idx), at(r, op->in[0], src), es);
	}
}

static void transpose(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *o = &r->m->tensors[op->out], *a = &r->m->tensors[op->in[0]];
	uint64_t n = count(o);

	for (uint64_t idx = 0; idx < n; idx++) {
		uint64_t ci[NPUM_MAX_DIMS], rest = idx, src = 0;

		for (int k = (int)o->ndim - 1; k >= 0; k--) {
			ci[k] = rest % o->shape[k];
			rest /= o->shape[k];
		}
		/* out's index k is in's index perm[k]. */
		for (unsigned int k = 0; k < a->ndim; k++) {
			uint64_t i = 0;

			for (unsigned int j = 0; j < o->ndim; j++)
				if (mf_perm(op, j) == k)
					i = ci[j];
			src = src * a->shape[k] + i;
		}
		memcpy(at(r, op->out, idx), at(r, op->in[0], src), mf_dtype_size(o->dtype));
	}
}

/*
 * The epilogue, after the op: the bias of element i's output channel (dim
 * 1: conv2d's channel, gemm's column), then the activation.
 */
static void epilogue(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *o = &r->m->tensors[op->out];
	uint64_t n = count(o), inner = 1;

	if (!op->epi_flags && !op->act)
		return;
	for (uint32_t k = 2; k < o->ndim; k++)
		inner *= o->shape[k];
	for (uint64_t i = 0; i < n; i++) {
		float v = get(r, op->out, i);

		if (op->epi_flags & NPU_OP_E_BIAS)
			v += get(r, op->bias, i / inner % o->shape[1]);
		put(r, op->out, i, op->act ? npu_unary(op->act, v, op->act_alpha, op->act_beta) : v);
	}
}

static void run_op(const struct ref *r, const struct npum_op *op)
{
	const struct npum_tensor *o = &r->m->tensors[op->out];
	uint64_t n;

	switch (op->type) {
	case NPUM_OP_COPY:
		memcpy(at(r, op->out, 0), at(r, op->in[0], 0), o->bytes);
		return;
	case NPUM_OP_FILL:
		for (uint64_t i = 0; i < o->bytes; i += 4)
			memcpy(at(r, op->out, 0) + i, &op->value, 4);
		return;
	case NPUM_OP_KERNEL:
		break;
	default:
		return;		/* events order streams; one thread needs none */
	}
	n = count(o);
	switch (op->kernel) {
	case NPU_OP_GEMM:
		gemm(r, op);
		break;
	case NPU_OP_SOFTMAX:
	case NPU_OP_LAYERNORM:
		rows(r, op);
		break;
	case NPU_OP_REDUCE_SUM: case NPU_OP_REDUCE_MEAN: case NPU_OP_REDUCE_MAX:
	case NPU_OP_REDUCE_MIN: case NPU_OP_REDUCE_PROD: case NPU_OP_ARGMAX: case NPU_OP_ARGMIN:
		reduce(r, op);
		break;
	case NPU_OP_TRANSPOSE:
		transpose(r, op);
		break;
	case NPU_OP_GATHER_ELEMENTS:
		gather_elements(r, op);
		break;
	case NPU_OP_CUMSUM:
		cumsum(r, op);
		break;
	case NPU_OP_CONV2D:
	case NPU_OP_MAXPOOL2D:
	case NPU_OP_AVGPOOL2D:
		window(r, op);
		break;
	case NPU_OP_CAST:
		if (!is_float16_32(r->m->tensors[op->in[0]].dtype) || !is_float16_32(o->dtype)) {
			elementwise_any(r, op, n);
			break;
		}
		for (uint64_t i = 0; i < n; i++)
			put(r, op->out, i, get(r, op->in[0], i));
		break;
	default:
		if (!npu_op_is_f32_classic(op->kernel) ||
		    !is_float16_32(r->m->tensors[op->in[0]].dtype) || !is_float16_32(o->dtype) ||
		    (npu_op_kind(op->kernel) == NPU_OPK_BINARY &&
		     !is_float16_32(r->m->tensors[op->in[1]].dtype))) {
			elementwise_any(r, op, n);
			break;
		}
		if (npu_op_kind(op->kernel) == NPU_OPK_BINARY) {
			for (uint64_t i = 0; i < n; i++)
				put(r, op->out, i, npu_binary(op->kernel, get(r, op->in[0], i),
							      get(r, op->in[1], i)));
			break;
		}
		for (uint64_t i = 0; i < n; i++)
			put(r, op->out, i, npu_unary(op->kernel, get(r, op->in[0], i),
						     op->alpha, op->beta));
		break;
	}
	epilogue(r, op);
}

/* Whether the dump picks op: a pattern of its names the op's or its output's. */
static bool picked(const struct ref *r, const struct npum_op *op, const char *name,
		   const char *ops)
{
	const char *out = r->m->strings + r->m->tensors[op->out].name;
	char *list, *save = NULL;
	bool yes = false;

	if (!ops || !*ops)
		return true;
	list = strdup(ops);
	for (char *p = list ? strtok_r(list, ",", &save) : NULL; p && !yes;
	     p = strtok_r(NULL, ",", &save))
		yes = !fnmatch(p, name, 0) || !fnmatch(p, out, 0);
	free(list);
	return yes;
}

/* Tensor t, dense, to the dump's callback as op k's `role`. */
static int dump_one(const struct ref *r, const struct ref_dump *d, uint32_t *seq, uint32_t k,
		    const char *name, uint32_t role, uint32_t t)
{
	const struct npum_tensor *x = &r->m->tensors[t];
	size_t es = mf_dtype_size(x->dtype);
	npurt_dump_tensor v = { .size = sizeof(v), .seq = (*seq)++, .op = k, .role = role,
				.op_name = name, .name = r->m->strings + x->name,
				.dtype = (npurt_dtype)x->dtype, .ndim = x->ndim,
				.bytes = count(x) * es };
	uint8_t *data = malloc(v.bytes ? v.bytes : 1);
	npurt_status st;

	if (!data)
		return ENOMEM;
	for (uint32_t j = 0; j < x->ndim; j++)
		v.shape[j] = x->shape[j];
	for (uint64_t i = 0; i < v.bytes / es; i++)
		memcpy(data + i * es, at(r, t, i), es);
	v.data = data;
	st = d->fn(&v, d->user);
	free(data);
	return st ? EIO : 0;
}

/* Op k, and its tensors to the dump if it picks them: 0 or an errno. */
static int run_dumped(const struct ref *r, const struct ref_dump *d, uint32_t *seq, uint32_t k)
{
	const struct npum_op *op = &r->m->ops[k];
	const char *name = op->type == NPUM_OP_KERNEL ? npurt_op_name(op->kernel) :
			   op->type == NPUM_OP_COPY ? "copy" : op->type == NPUM_OP_FILL ? "fill" :
			   NULL;
	int err = 0;

	if (!d || !name || !picked(r, op, name, d->ops)) {
		run_op(r, op);
		return 0;
	}
	for (uint32_t i = 0; i < 2 && !err && (d->flags & NPURT_DUMP_INPUTS); i++)
		if (op->type != NPUM_OP_FILL && op->in[i] != NPUM_NONE)
			err = dump_one(r, d, seq, k, name, NPURT_DUMP_INPUT0 + i, op->in[i]);
	run_op(r, op);
	return err ? err : dump_one(r, d, seq, k, name, NPURT_DUMP_OUTPUT, op->out);
}

int ref_run(const void *file, size_t len, void *const *io, const struct ref_dump *dump,
	    char *why, size_t why_len)
{
	uint32_t seq = 0;
	struct mf_model m;
	struct mf_order *o;
	struct ref r = { .m = &m };
	int err = mf_parse(file, len, &m, why, why_len);

	if (err)
		return err;
	err = mf_order_make(&m, &o, why, why_len);
	if (err) {
		mf_free(&m);
		return err;
	}
	r.mem = calloc(m.ntensors, sizeof(*r.mem));
	err = r.mem ? 0 : ENOMEM;
	for (uint32_t i = 0; i < m.ntensors && !err; i++) {
		const struct npum_tensor *t = &m.tensors[i];

		if (t->segment == NPUM_SEG_WEIGHTS)
			r.mem[i] = m.weights + t->offset;
		else if (t->segment == NPUM_SEG_IO)
			r.mem[i] = io[t->base];
		else if (t->segment == NPUM_SEG_FMAP && !(r.mem[i] = calloc(1, t->bytes)))
			err = ENOMEM;
	}
	for (uint32_t k = 0; k < m.nops && !err; k++)
		err = run_dumped(&r, dump, &seq, mf_order_topo(o)[k]);
	if (err == EIO)
		snprintf(why, why_len, "the dump stopped");
	else if (err == ENOMEM)
		snprintf(why, why_len, "out of memory");
	for (uint32_t i = 0; r.mem && i < m.ntensors; i++)
		if (m.tensors[i].segment == NPUM_SEG_FMAP)
			free(r.mem[i]);
	free(r.mem);
	mf_order_free(o);
	mf_free(&m);
	return err;
}
