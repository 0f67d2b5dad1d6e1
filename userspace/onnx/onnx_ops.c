// SPDX-License-Identifier: MIT
/*
 * ONNX nodes that compute, mapped to the device's op library: elementwise
 * ops with multidirectional broadcasting (zero-stride views), Gemm and
 * MatMul (a GEMM per batch), Softmax, reductions (one axis per op),
 * normalizations folded to scale-and-shift where their statistics are
 * constants, pooling over a whole image, Concat and Pad (copies into views
 * of the output). What the device cannot run fails with
 * NPURT_ERR_UNSUPPORTED naming the node.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "npu_opdefs.h"
#include "onnx.h"

npurt_status ox_add(struct ox_imp *im, const npurt_graph_node *node, uint32_t out)
{
	npurt_status st = npurt_graph_add_into(im->g, node, out);

	if (st)
		return ox_fail(im, st, "%s", npurt_last_error());
	im->info.device_ops++;
	return NPURT_OK;
}

/* v is float, float16 or bfloat16: an op the device computes in f32 takes it. */
npurt_status ox_need_real(struct ox_imp *im, const struct ox_val *v)
{
	if (v->type != OX_FLOAT && v->type != OX_FLOAT16 && v->type != OX_BFLOAT16)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" is %s; the device's op "
			       "library computes in float, float16 and bfloat16", v->name,
			       ox_type_name(v->type));
	return NPURT_OK;
}

npurt_status ox_need_float(struct ox_imp *im, const struct ox_val *v)
{
	if (v->type != OX_FLOAT)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" is %s; the device's op "
			       "library computes in float", v->name, ox_type_name(v->type));
	return NPURT_OK;
}

/*
 * NPURT_ERR_UNSUPPORTED, naming the values, unless device op `op` takes
 * a's (and b's) dtype; else *type is the type of its output.
 */
npurt_status ox_op_types(struct ox_imp *im, uint32_t op, const struct ox_val *a,
			 const struct ox_val *b, int32_t *type)
{
	npurt_dtype da = ox_dtype(a->type), db = b ? ox_dtype(b->type) : NPURT_DTYPE_COUNT;
	const char *err;
	uint32_t out;

	if (da == NPURT_DTYPE_COUNT || (b && db == NPURT_DTYPE_COUNT))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "\"%.64s\" is %s, which the device does "
			       "not have", da == NPURT_DTYPE_COUNT ? a->name : b->name,
			       ox_type_name(da == NPURT_DTYPE_COUNT ? a->type : b->type));
	out = npu_op_out_dtype(op, (uint32_t)da, 0);
	err = npu_op_dtypes(op, (uint32_t)da, b ? (uint32_t)db : NPU_DT_COUNT, out);
	if (err)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%s of %s%s%s: %s", npurt_op_name(op),
			       ox_type_name(a->type), b ? " and " : "", b ? ox_type_name(b->type) : "",
			       err);
	*type = ox_type((npurt_dtype)out);
	return NPURT_OK;
}

/* A device value called `name` of x's type and these dims, dense and new. */
struct ox_val *ox_fresh(struct ox_imp *im, const char *name, int32_t type, uint32_t ndim,
			    const int64_t *dims)
{
	struct ox_val *v = ox_new(im, name, type, ndim, dims);

	if (!v || ox_home(im, v))
		return NULL;
	return v;
}

/* A name for an intermediate value (not in the ONNX graph). */
const char *ox_tmp_name(struct ox_imp *im, char *buf, size_t len, const char *of)
{
	/* \001 starts no name an ONNX exporter writes */
	snprintf(buf, len, "\001%.64s:%u", of, im->scratch++);
	return buf;
}

/*
 * The device tensor of value `name` seen with `dims` (its own broadcast to
 * them: zero strides where it repeats). Constants go up once, at their
 * own size, however far they are broadcast.
 */
npurt_status ox_bcast_tensor(struct ox_imp *im, const char *name, uint32_t nd,
			     const int64_t *dims, uint32_t *t)
{
	struct ox_val *x = ox_find(im, name), v;
	uint32_t own;

	if (ox_device(im, x, &own))
		return npurt_last_status();
	if (x->ndim == nd && !memcmp(x->dims, dims, nd * sizeof(dims[0]))) {
		*t = own;
		return NPURT_OK;
	}
	v = *x;
	v.ndim = nd;
	v.tensor = OX_NONE;
	for (uint32_t k = 0; k < nd; k++) {
		int j = (int)k - (int)(nd - x->ndim);

		v.dims[k] = dims[k];
		v.stride[k] = j < 0 || (x->dims[j] == 1 && dims[k] != 1) ? 0 : x->stride[j];
	}
	return ox_device(im, &v, t);
}

/* out = op(a, b) elementwise, broadcasting both to out's dims. */
struct ox_val *ox_binary(struct ox_imp *im, uint32_t op, struct ox_val *a, struct ox_val *b,
			     const char *name)
{
	int64_t dims[OX_MAX_DIMS];
	npurt_graph_node node = { .size = sizeof(node), .op = op };
	const char *a_name, *b_name;	/* names stay put; values move with the table */
	struct ox_val *v;
	int32_t type;
	uint32_t nd;

	if (!a || !b) {
		ox_fail(im, NPURT_ERR_INVALID, "an input is missing");
		return NULL;
	}
	if (ox_op_types(im, op, a, b, &type))
		return NULL;
	if (!ox_broadcast(a->dims, a->ndim, b->dims, b->ndim, dims, &nd)) {
		ox_fail(im, NPURT_ERR_INVALID, "shapes of \"%.64s\" and \"%.64s\" do not broadcast",
			a->name, b->name);
		return NULL;
	}
	a_name = a->name;
	b_name = b->name;
	if (ox_bcast_tensor(im, a_name, nd, dims, &node.in[0]) ||
	    ox_bcast_tensor(im, b_name, nd, dims, &node.in[1]))
		return NULL;
	v = ox_fresh(im, name, type, nd, dims);
	if (!v || ox_add(im, &node, v->base))
		return NULL;
	return v;
}

struct ox_val *ox_unary(struct ox_imp *im, uint32_t op, struct ox_val *x, float alpha,
			    float beta, const char *name)
{
	npurt_graph_node node = { .size = sizeof(node), .op = op, .alpha = alpha, .beta = beta };
	const char *xn = x->name;	/* names stay put; values move with the table */
	struct ox_val *v;
	int32_t type;

	if (ox_op_types(im, op, x, NULL, &type) || ox_device(im, x, &node.in[0]))
		return NULL;
	v = ox_fresh(im, name, type, ox_find(im, xn)->ndim, ox_find(im, xn)->dims);
	if (!v || ox_add(im, &node, v->base))
		return NULL;
	return v;
}

int ox_fuse_act(struct ox_imp *im, struct ox_val *x, uint32_t op, float alpha, float beta,
		const char *name)
{
	if (!ox_is_real(x->type) || !x->computed || x->output || x->tensor != x->base ||
	    ox_read_later(im, x->name) || !npurt_graph_fuse(im->g, x->base, OX_NONE, op, alpha, beta))
		return 0;
	/* The op's output is the activation's now, under its name (no copy). */
	if (!ox_view(im, x, name, x->ndim, x->dims, x->off, x->stride))
		return -1;
	im->info.fused++;
	return 1;
}

/*
 * y = p + b as `name` where p is a GEMM's product (dense over its [M, N]
 * output, nothing else reads it) and b broadcasts a row of N along it: b
 * goes into the GEMM's epilogue as its bias. 1 fused, 0 not, -1 error.
 */
static int fuse_bias(struct ox_imp *im, struct ox_val *p, struct ox_val *b, const char *name)
{
	const char *pn = p->name;
	struct ox_val *row;
	uint32_t nd = p->ndim, bias;
	int64_t n, step = 1;
	char tmp[96];

	/* p dense over all of its base: its last dimension is the GEMM's columns */
	if (!ox_is_real(p->type) || b->type != p->type || !p->computed || p->output ||
	    p->off || !nd || b->ndim > nd || !b->ndim || p->base >= im->g->m.ntensors ||
	    ox_read_later(im, pn))
		return 0;
	n = p->dims[nd - 1];
	if (b->dims[b->ndim - 1] != n)
		return 0;
	for (uint32_t k = nd; k-- > 0; step *= p->dims[k])
		if (p->stride[k] != step)
			return 0;
	if ((uint64_t)step * npu_dtype_size((uint32_t)ox_dtype(p->type)) !=
	    im->g->m.tensors[p->base].bytes)
		return 0;
	for (uint32_t k = 0; k + 1 < b->ndim; k++)
		if (b->dims[k] != 1)
			return 0;
	row = ox_view(im, b, ox_tmp_name(im, tmp, sizeof(tmp), name), 1, &n, b->off,
		      &b->stride[b->ndim - 1]);
	if (!row || ox_device(im, row, &bias))
		return -1;
	p = ox_find(im, pn);
	if (!npurt_graph_fuse(im->g, p->base, bias, 0, 0, 0))
		return 0;
	if (!ox_view(im, p, name, p->ndim, p->dims, p->off, p->stride))
		return -1;
	im->info.fused++;
	return 1;
}

struct ox_val *ox_scalar_of(struct ox_imp *im, int32_t type, double f, int64_t i, const char *of)
{
	char name[96];
	struct ox_val *v = ox_new_const(im, ox_tmp_name(im, name, sizeof(name), of), type, 0, NULL);

	if (v && v->f)
		v->f[0] = f;
	else if (v)
		v->i[0] = i;
	return v;
}

struct ox_val *ox_scalar(struct ox_imp *im, double x, const char *of)
{
	return ox_scalar_of(im, OX_FLOAT, x, 0, of);
}

static const struct {
	const char *onnx;
	uint32_t op;
} binaries[] = {
	{ "Add", NPU_OP_ADD }, { "Sub", NPU_OP_SUB }, { "Mul", NPU_OP_MUL },
	{ "Div", NPU_OP_DIV }, { "Pow", NPU_OP_POW },
	{ "Max", NPU_OP_MAX }, { "Min", NPU_OP_MIN }, { "Sum", NPU_OP_ADD }, { "Mean", NPU_OP_ADD },
};

/* An op without parameters. */
#define PLAIN(name, op)	{ name, op, 0, 0, NULL, NULL }

static const struct {
	const char *onnx;
	uint32_t op;
	float alpha, beta;		/* defaults of the parameters */
	const char *a, *b;		/* their attribute names */
} unaries[] = {
	PLAIN("Relu", NPU_OP_RELU), PLAIN("Sigmoid", NPU_OP_SIGMOID),
	PLAIN("Tanh", NPU_OP_TANH), PLAIN("Exp", NPU_OP_EXP), PLAIN("Neg", NPU_OP_NEG),
	PLAIN("Abs", NPU_OP_ABS), PLAIN("Sqrt", NPU_OP_SQRT), PLAIN("Log", NPU_OP_LOG),
	PLAIN("Reciprocal", NPU_OP_RECIPROCAL), PLAIN("Floor", NPU_OP_FLOOR),
	PLAIN("Ceil", NPU_OP_CEIL), PLAIN("Sign", NPU_OP_SIGN), PLAIN("Erf", NPU_OP_ERF),
	PLAIN("Softplus", NPU_OP_SOFTPLUS), PLAIN("Softsign", NPU_OP_SOFTSIGN),
	PLAIN("Sin", NPU_OP_SIN), PLAIN("Cos", NPU_OP_COS), PLAIN("Round", NPU_OP_ROUND),
	PLAIN("HardSwish", NPU_OP_HARD_SWISH),
	{ "LeakyRelu", NPU_OP_LEAKY_RELU, 0.01f, 0, "alpha", NULL },
	{ "Elu", NPU_OP_ELU, 1.0f, 0, "alpha", NULL },
	{ "Selu", NPU_OP_SELU, 1.67326319217681884765625f, 1.05070102214813232421875f,
	  "alpha", "gamma" },
	{ "HardSigmoid", NPU_OP_HARD_SIGMOID, 0.2f, 0.5f, "alpha", "beta" },
	PLAIN("Tan", NPU_OP_TAN), PLAIN("Asin", NPU_OP_ASIN), PLAIN("Acos", NPU_OP_ACOS),
	PLAIN("Atan", NPU_OP_ATAN), PLAIN("Sinh", NPU_OP_SINH), PLAIN("Cosh", NPU_OP_COSH),
	PLAIN("Asinh", NPU_OP_ASINH), PLAIN("Acosh", NPU_OP_ACOSH),
	PLAIN("Atanh", NPU_OP_ATANH),
	{ "ThresholdedRelu", NPU_OP_THRESHOLDED_RELU, 1.0f, 0, "alpha", NULL },
	{ "Shrink", NPU_OP_SHRINK, 0.5f, 0, "lambd", "bias" },
	{ "Celu", NPU_OP_CELU, 1.0f, 0, "alpha", NULL },
};

npurt_status ox_done(struct ox_val *v)
{
	return v ? NPURT_OK : npurt_last_status();
}

static npurt_status op_variadic(struct ox_imp *im, const Onnx__NodeProto *n, uint32_t op,
				bool mean)
{
	struct ox_val *acc = ox_in(im, n, 0);
	char name[96];

	if (!acc)
		return ox_fail(im, NPURT_ERR_INVALID, "no input");
	if (n->n_input == 1 && !mean)
		return ox_done(ox_view(im, acc, n->output[0], acc->ndim, acc->dims, acc->off,
				    acc->stride));
	for (size_t k = 1; k < n->n_input; k++) {
		bool last = k + 1 == n->n_input && !mean;

		acc = ox_binary(im, op, acc, ox_in(im, n, k),
			     last ? n->output[0] : ox_tmp_name(im, name, sizeof(name), n->output[0]));
		if (!acc)
			return npurt_last_status();
	}
	if (mean) {
		const char *acc_name = acc->name;
		struct ox_val *s = ox_scalar(im, 1.0 / (double)n->n_input, n->output[0]);

		if (!s)
			return npurt_last_status();
		acc = ox_binary(im, NPU_OP_MUL, ox_find(im, acc_name), s, n->output[0]);
	}
	return ox_done(acc);
}

/* Bounds known only at run time: max, then min, with the inputs. */
static npurt_status op_clip_computed(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *y = ox_in(im, n, 0);
	char name[96];

	for (size_t k = 1; k < 3 && y; k++) {
		bool last = k == 2 || !ox_in(im, n, 2);

		if (!ox_in(im, n, k))
			continue;
		y = ox_binary(im, k == 1 ? NPU_OP_MAX : NPU_OP_MIN, y, ox_in(im, n, k),
			   last ? n->output[0] : ox_tmp_name(im, name, sizeof(name), n->output[0]));
		if (last)
			break;
	}
	return ox_done(y);
}

static npurt_status op_clip(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	float lo = -INFINITY, hi = INFINITY;

	if (im->opset < 11) {
		lo = ox_attr_f(n, "min", lo);
		hi = ox_attr_f(n, "max", hi);
	} else {
		for (size_t k = 1; k < 3; k++) {
			struct ox_val *b = ox_in(im, n, k);

			if (!b)
				continue;
			if (!b->is_const)
				return op_clip_computed(im, n);
			if (ox_count(b) != 1)
				return ox_fail(im, NPURT_ERR_INVALID, "a bound of %llu elements",
					       (unsigned long long)ox_count(b));
			*(k == 1 ? &lo : &hi) = (float)ox_getf(b, 0);
		}
	}
	return ox_done(ox_unary(im, NPU_OP_CLIP, x, lo, hi, n->output[0]));
}

/* Y = alpha * A' B' + beta * C, C broadcast to [M, N]. */
static npurt_status op_gemm(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1), *c = ox_in(im, n, 2), *y;
	bool ta = ox_attr_i(n, "transA", 0), tb = ox_attr_i(n, "transB", 0);
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_GEMM,
				  .alpha = ox_attr_f(n, "alpha", 1.0f) };
	float beta = ox_attr_f(n, "beta", 1.0f);
	int64_t dims[2];
	const char *cn = c ? c->name : NULL;

	if (!a || !b || a->ndim != 2 || b->ndim != 2)
		return ox_fail(im, NPURT_ERR_INVALID, "A and B must be 2-D");
	if (ox_need_real(im, a) || ox_need_real(im, b) || (c && ox_need_real(im, c)))
		return npurt_last_status();
	dims[0] = ta ? a->dims[1] : a->dims[0];
	dims[1] = tb ? b->dims[0] : b->dims[1];
	if ((ta ? a->dims[0] : a->dims[1]) != (tb ? b->dims[1] : b->dims[0]))
		return ox_fail(im, NPURT_ERR_INVALID, "A and B do not multiply");
	if (c && (c->ndim > 2 || (c->ndim == 2 && c->dims[0] != 1 && c->dims[0] != dims[0]) ||
		  (c->ndim >= 1 && c->dims[c->ndim - 1] != 1 && c->dims[c->ndim - 1] != dims[1])))
		return ox_fail(im, NPURT_ERR_INVALID, "C does not broadcast to [%lld, %lld]",
			       (long long)dims[0], (long long)dims[1]);
	node.flags = (ta ? NPURT_LAUNCH_TRANS_A : 0) | (tb ? NPURT_LAUNCH_TRANS_B : 0);
	if (ox_device(im, a, &node.in[0]) || ox_device(im, ox_find(im, n->input[1]), &node.in[1]))
		return npurt_last_status();
	/* A C of one row (a bias per column) is the GEMM's epilogue: no copy first. */
	if (cn && beta == 1.0f) {
		struct ox_val *cv = ox_find(im, cn);
		char tmp[96];

		if (cv->ndim >= 1 && cv->dims[cv->ndim - 1] == dims[1] &&
		    (cv->ndim == 1 || cv->dims[0] == 1)) {
			cv = ox_view(im, cv, ox_tmp_name(im, tmp, sizeof(tmp), n->output[0]), 1,
				     &dims[1], cv->off, &cv->stride[cv->ndim - 1]);
			if (!cv || ox_device(im, cv, &node.epi.bias))
				return npurt_last_status();
			node.epi.flags = NPURT_EPILOGUE_BIAS;
			cn = NULL;
		}
	}
	y = ox_fresh(im, n->output[0], ox_find(im, n->input[0])->type, 2, dims);
	if (!y)
		return npurt_last_status();
	if (cn && beta != 0.0f) {
		/* C goes into Y first; the GEMM then adds its product (beta). */
		npurt_graph_node copy = { .size = sizeof(copy), .op = NPU_OP_TRANSPOSE,
					  .perm = OX_PERM_IDENTITY };
		uint32_t out = ox_find(im, n->output[0])->base;

		if (ox_bcast_tensor(im, cn, 2, dims, &copy.in[0]) || ox_add(im, &copy, out))
			return npurt_last_status();
		node.beta = beta;
		return ox_add(im, &node, out);
	}
	return ox_add(im, &node, y->base);
}

/* numpy matmul: a GEMM for each matrix of the broadcast batch. */
#define OX_MAX_BATCH	256

static npurt_status op_matmul(struct ox_imp *im, const Onnx__NodeProto *n)
{
	struct ox_val *a = ox_in(im, n, 0), *b = ox_in(im, n, 1), *y, va, vb, vy;
	int64_t ad[OX_MAX_DIMS], bd[OX_MAX_DIMS], as[OX_MAX_DIMS], bs[OX_MAX_DIMS];
	int64_t batch[OX_MAX_DIMS], dims[OX_MAX_DIMS];
	uint32_t an, bn, nb, nd;
	uint64_t count = 1;
	npurt_status st;
	bool bytes;

	if (!a || !b || !a->ndim || !b->ndim)
		return ox_fail(im, NPURT_ERR_INVALID, "inputs must have a dimension");
	/* i8 and u8 multiply as bytes into int32 (MatMulInteger's product: onnx_quant.c) */
	bytes = (a->type == OX_UINT8 || a->type == OX_INT8) &&
		(b->type == OX_UINT8 || b->type == OX_INT8);
	if (!bytes && (ox_need_real(im, a) || ox_need_real(im, b)))
		return npurt_last_status();
	if (ox_device(im, a, &va.tensor) || ox_device(im, ox_find(im, n->input[1]), &vb.tensor))
		return npurt_last_status();
	a = ox_find(im, n->input[0]);
	b = ox_find(im, n->input[1]);
	{
		uint32_t ta = va.tensor, tb = vb.tensor;

		va = *a;
		vb = *b;
		va.tensor = ta;
		vb.tensor = tb;
	}
	/* 1-D operands are a row (A) or a column (B) for the product. */
	an = a->ndim < 2 ? 2 : a->ndim;
	bn = b->ndim < 2 ? 2 : b->ndim;
	memcpy(ad, a->dims, sizeof(ad));
	memcpy(as, a->stride, sizeof(as));
	memcpy(bd, b->dims, sizeof(bd));
	memcpy(bs, b->stride, sizeof(bs));
	if (a->ndim == 1) {
		ad[1] = ad[0], as[1] = as[0];
		ad[0] = 1, as[0] = 0;
	}
	if (b->ndim == 1) {
		bd[1] = 1, bs[1] = 0;
	}
	if (ad[an - 1] != bd[bn - 2])
		return ox_fail(im, NPURT_ERR_INVALID, "inner dimensions %lld and %lld differ",
			       (long long)ad[an - 1], (long long)bd[bn - 2]);
	if (!ox_broadcast(ad, an - 2, bd, bn - 2, batch, &nb))
		return ox_fail(im, NPURT_ERR_INVALID, "batch dimensions do not broadcast");
	for (uint32_t k = 0; k < nb; k++)
		count *= (uint64_t)batch[k];
	if (count > OX_MAX_BATCH)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "a batch of %llu matrices",
			       (unsigned long long)count);
	/* Y's dims as ONNX has them: 1-D operands drop their dimension again. */
	nd = 0;
	for (uint32_t k = 0; k < nb; k++)
		dims[nd++] = batch[k];
	if (a->ndim > 1)
		dims[nd++] = ad[an - 2];
	if (b->ndim > 1)
		dims[nd++] = bd[bn - 1];
	y = ox_fresh(im, n->output[0], bytes ? OX_INT32 : a->type, nd, dims);
	if (!y)
		return npurt_last_status();
	vy = *y;
	if (va.ndim == 2 && vb.ndim == 2) {
		npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_GEMM, .alpha = 1.0f,
					  .in = { va.tensor, vb.tensor } };

		return ox_add(im, &node, y->base);
	}
	for (uint64_t e = 0; e < count; e++) {
		npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_GEMM, .alpha = 1.0f };
		uint64_t rest = e, ao = va.off, bo = vb.off, yo = 0;
		struct ox_val ma = va, mb = vb, my = vy;

		for (uint32_t k = nb; k-- > 0;) {
			uint64_t i = rest % (uint64_t)batch[k];
			int ja = (int)k - (int)(nb - (an - 2)), jb = (int)k - (int)(nb - (bn - 2));

			rest /= (uint64_t)batch[k];
			if (ja >= 0 && ad[ja] != 1)
				ao += i * (uint64_t)as[ja];
			if (jb >= 0 && bd[jb] != 1)
				bo += i * (uint64_t)bs[jb];
		}
		yo = e * (uint64_t)(ad[an - 2] * bd[bn - 1]);
		ma.ndim = mb.ndim = my.ndim = 2;
		ma.dims[0] = ad[an - 2], ma.dims[1] = ad[an - 1];
		ma.stride[0] = as[an - 2], ma.stride[1] = as[an - 1];
		mb.dims[0] = bd[bn - 2], mb.dims[1] = bd[bn - 1];
		mb.stride[0] = bs[bn - 2], mb.stride[1] = bs[bn - 1];
		my.dims[0] = ad[an - 2], my.dims[1] = bd[bn - 1];
		my.stride[0] = bd[bn - 1], my.stride[1] = 1;
		ma.off = ao, mb.off = bo, my.off = yo;
		ma.tensor = mb.tensor = my.tensor = OX_NONE;
		/* stride 0 for a dimension of 1 is still a valid view */
		st = ox_device(im, &ma, &node.in[0]);
		if (!st)
			st = ox_device(im, &mb, &node.in[1]);
		if (!st)
			st = ox_device(im, &my, &my.tensor);
		if (!st)
			st = ox_add(im, &node, my.tensor);
		if (st)
			return st;
	}
	return NPURT_OK;
}

/*
 * Softmax along `axis`: the device works along the last dimension, and
 * reads any strides, so other axes are a permuted view in and out.
 * Before opset 13 the input is coerced to 2-D at axis.
 */
static npurt_status op_softmax(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x,
			       bool log)
{
	int64_t axis = ox_attr_i(n, "axis", im->opset < 13 ? 1 : -1);
	int64_t dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	npurt_graph_node node = { .size = sizeof(node), .op = NPU_OP_SOFTMAX };
	uint32_t order[OX_MAX_DIMS], nd = x->ndim, j = 0;
	char pn[96], yn[96];
	struct ox_val *p, *y;
	int a = ox_axis(axis, nd);

	if (ox_need_real(im, x))
		return npurt_last_status();
	if (a < 0)
		return ox_fail(im, NPURT_ERR_INVALID, "axis %lld of rank %u", (long long)axis, nd);
	if (im->opset < 13) {
		p = ox_dense_2d(im, x, a, ox_tmp_name(im, pn, sizeof(pn), n->output[0]));
		if (!p)
			return npurt_last_status();
		nd = 2;
		for (uint32_t k = 0; k < nd; k++) {
			order[k] = k;
			dims[k] = p->dims[k];
		}
	} else {
		/* The axis last, the others in order. */
		for (uint32_t k = 0; k < nd; k++)
			if (k != (uint32_t)a)
				order[j++] = k;
		order[j] = (uint32_t)a;
		for (uint32_t k = 0; k < nd; k++) {
			dims[k] = x->dims[order[k]];
			stride[k] = x->stride[order[k]];
		}
	}
	if (im->opset >= 13)
		p = ox_view(im, x, ox_tmp_name(im, pn, sizeof(pn), n->output[0]), nd, dims, x->off,
			    stride);
	if (!p || ox_device(im, p, &node.in[0]))
		return npurt_last_status();
	y = ox_fresh(im, ox_tmp_name(im, yn, sizeof(yn), n->output[0]), x->type, nd, dims);
	if (!y || ox_add(im, &node, y->base))
		return npurt_last_status();
	if (log) {
		y = ox_unary(im, NPU_OP_LOG, y, 0, 0, ox_tmp_name(im, yn, sizeof(yn), n->output[0]));
		if (!y)
			return npurt_last_status();
	}
	/* Back to x's dims: y is dense over the permuted (or coerced) dims. */
	x = ox_find(im, n->input[0]);
	if (im->opset < 13) {
		int64_t s = 1;

		for (uint32_t k = x->ndim; k-- > 0;) {
			stride[k] = s;
			s *= x->dims[k];
		}
	} else {
		for (uint32_t k = 0; k < nd; k++)
			stride[order[k]] = y->stride[k];
	}
	return ox_done(ox_view(im, y, n->output[0], x->ndim, x->dims, 0, stride));
}

static npurt_status op_reduce(struct ox_imp *im, const Onnx__NodeProto *n, struct ox_val *x)
{
	const char *t = n->op_type + 6;		/* after "Reduce" */
	int64_t axes[OX_MAX_DIMS], dims[OX_MAX_DIMS], stride[OX_MAX_DIMS];
	bool keep = ox_attr_i(n, "keepdims", 1), mark[OX_MAX_DIMS] = { false };
	bool in_input = !strcmp(t, "Sum") && im->opset >= 13;
	uint32_t op, pre = 0, post = 0, nd = 0, rank;
	struct ox_val *y = x;
	int32_t type;
	char name[96];
	npurt_status st;
	int cnt;

	if (!strcmp(t, "Sum") || !strcmp(t, "SumSquare") || !strcmp(t, "L1") ||
	    !strcmp(t, "L2") || !strcmp(t, "LogSum") || !strcmp(t, "LogSumExp"))
		op = NPU_OP_REDUCE_SUM;
	else if (!strcmp(t, "Mean"))
		op = NPU_OP_REDUCE_MEAN;
	else if (!strcmp(t, "Max"))
		op = NPU_OP_REDUCE_MAX;
	else if (!strcmp(t, "Min"))
		op = NPU_OP_REDUCE_MIN;
	else if (!strcmp(t, "Prod"))
		op = NPU_OP_REDUCE_PROD;
	else
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "no device reduction for it");
	if (!strcmp(t, "SumSquare") || !strcmp(t, "L2"))
		pre = NPU_OP_MUL;		/* x * x */
	else if (!strcmp(t, "L1"))
		pre = NPU_OP_ABS;
	else if (!strcmp(t, "LogSumExp"))
		pre = NPU_OP_EXP;
	post = !strcmp(t, "L2") ? NPU_OP_SQRT :
	       !strcmp(t, "LogSum") || !strcmp(t, "LogSumExp") ? NPU_OP_LOG : 0;
	if (ox_op_types(im, op, x, NULL, &type))
		return npurt_last_status();
	rank = x->ndim;
	cnt = ox_ints(im, n, 1, in_input ? NULL : "axes", axes, OX_MAX_DIMS, &st);
	if (st)
		return st;
	if (cnt <= 0 && in_input && ox_attr_i(n, "noop_with_empty_axes", 0))
		return ox_done(ox_view(im, x, n->output[0], x->ndim, x->dims, x->off, x->stride));
	if (cnt <= 0) {
		for (uint32_t k = 0; k < x->ndim; k++)
			axes[k] = k;
		cnt = (int)x->ndim;
	}
	for (int k = 0; k < cnt; k++) {
		int a = ox_axis(axes[k], x->ndim);

		if (a < 0 || mark[a])
			return ox_fail(im, NPURT_ERR_INVALID, "axis %lld", (long long)axes[k]);
		mark[a] = true;
	}
	if (pre == NPU_OP_MUL)
		y = ox_binary(im, pre, x, x, ox_tmp_name(im, name, sizeof(name), n->output[0]));
	else if (pre)
		y = ox_unary(im, pre, x, 0, 0, ox_tmp_name(im, name, sizeof(name), n->output[0]));
	if (!y)
		return npurt_last_status();
	for (uint32_t a = 0; a < rank; a++) {
		npurt_graph_node node = { .size = sizeof(node), .op = op, .axis = a };
		const char *yn = y->name;

		if (!mark[a])
			continue;
		if (ox_device(im, y, &node.in[0]))
			return npurt_last_status();
		y = ox_find(im, yn);
		memcpy(dims, y->dims, sizeof(dims));
		dims[a] = 1;
		y = ox_fresh(im, ox_tmp_name(im, name, sizeof(name), n->output[0]), type, y->ndim,
			     dims);
		if (!y || ox_add(im, &node, y->base))
			return npurt_last_status();
	}
	if (post) {
		y = ox_unary(im, post, y, 0, 0, ox_tmp_name(im, name, sizeof(name), n->output[0]));
		if (!y)
			return npurt_last_status();
	}
	for (uint32_t k = 0; k < y->ndim; k++) {
		if (!keep && mark[k])
			continue;
		dims[nd] = y->dims[k];
		stride[nd++] = y->stride[k];
	}
	return ox_done(ox_view(im, y, n->output[0], nd, dims, y->off, stride));
}

npurt_status ox_node(struct ox_imp *im, const Onnx__NodeProto *n)
{
	const char *t = n->op_type ? n->op_type : "";
	struct ox_val *x = ox_in(im, n, 0);
	npurt_status st;
	bool handled;

	/* recurrent ops: two or three outputs, any of them left out */
	if ((!strcmp(t, "LSTM") || !strcmp(t, "GRU") || !strcmp(t, "RNN")) && x)
		return ox_op_rnn(im, n);
	/* Both are optional for some ops (RNN, Scan): none that maps here. */
	if (!n->n_output || !n->output[0][0])
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "its first output is left out");
	if (!x && strcmp(t, "Constant"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "its first input is left out");
	st = ox_view_node(im, n, &handled);
	if (handled)
		return st ? st : (im->info.views++, NPURT_OK);
	if (n->n_output > 1 && strcmp(t, "Split") && strcmp(t, "LayerNormalization") &&
	    strcmp(t, "MaxPool") && strcmp(t, "SoftmaxCrossEntropyLoss") &&
	    strcmp(t, "DynamicQuantizeLinear") && strcmp(t, "TopK") &&
	    strcmp(t, "BatchNormalization"))
		for (size_t k = 1; k < n->n_output; k++)
			if (n->output[k][0])
				return ox_fail(im, NPURT_ERR_UNSUPPORTED, "output %zu (\"%.64s\"): "
					       "only its first output maps", k, n->output[k]);
	for (size_t k = 0; k < sizeof(binaries) / sizeof(binaries[0]); k++)
		if (!strcmp(t, binaries[k].onnx)) {
			struct ox_val *y = ox_in(im, n, 1);
			/* names stay put; values move with the table */
			const char *xn = x->name, *yn = y ? y->name : NULL;
			int fused = 0;

			if (n->n_input != 2 || !strcmp(t, "Mean") || !strcmp(t, "Sum"))
				return op_variadic(im, n, binaries[k].op, !strcmp(t, "Mean"));
			if (y && !strcmp(t, "Add")) {
				fused = fuse_bias(im, x, y, n->output[0]);
				if (!fused)
					fused = fuse_bias(im, ox_find(im, yn), ox_find(im, xn),
							  n->output[0]);
			}
			if (fused)
				return fused > 0 ? NPURT_OK : npurt_last_status();
			return ox_done(ox_binary(im, binaries[k].op, ox_in(im, n, 0), ox_in(im, n, 1),
					      n->output[0]));
		}
	for (size_t k = 0; k < sizeof(unaries) / sizeof(unaries[0]); k++)
		if (!strcmp(t, unaries[k].onnx)) {
			float a = unaries[k].a ? ox_attr_f(n, unaries[k].a, unaries[k].alpha) : 0;
			float b = unaries[k].b ? ox_attr_f(n, unaries[k].b, unaries[k].beta) :
				  unaries[k].beta;

			int fused = ox_fuse_act(im, x, unaries[k].op, a, b, n->output[0]);

			if (fused)
				return fused > 0 ? NPURT_OK : npurt_last_status();
			return ox_done(ox_unary(im, unaries[k].op, x, a, b, n->output[0]));
		}
	if (!strcmp(t, "Clip"))
		return op_clip(im, n, x);
	if (!strcmp(t, "Gemm"))
		return op_gemm(im, n);
	if (!strcmp(t, "MatMul"))
		return op_matmul(im, n);
	if (!strcmp(t, "Softmax") || !strcmp(t, "LogSoftmax"))
		return op_softmax(im, n, x, t[0] == 'L');
	if (!strncmp(t, "Reduce", 6))
		return op_reduce(im, n, x);
	if (!strcmp(t, "GlobalAveragePool"))
		return ox_op_global_pool(im, n, x, NPU_OP_REDUCE_MEAN);
	if (!strcmp(t, "GlobalMaxPool"))
		return ox_op_global_pool(im, n, x, NPU_OP_REDUCE_MAX);
	if (!strcmp(t, "BatchNormalization"))
		return ox_op_batchnorm(im, n, x);
	if (!strcmp(t, "InstanceNormalization"))
		return ox_op_instancenorm(im, n, x);
	if (!strcmp(t, "LayerNormalization"))
		return ox_op_layernorm(im, n, x);
	if (!strcmp(t, "PRelu"))
		return ox_op_prelu(im, n, x);
	if (!strcmp(t, "Concat"))
		return ox_op_concat(im, n, x);
	if (!strcmp(t, "Trilu") || !strcmp(t, "Tile") || !strcmp(t, "DepthToSpace") ||
	    !strcmp(t, "SpaceToDepth")) {
		uint32_t home;

		/* They copy pieces of views of x: a constant goes up whole first. */
		if (ox_device(im, x, &home))
			return npurt_last_status();
		x = ox_in(im, n, 0);
	}
	if (!strcmp(t, "Trilu"))
		return ox_op_trilu(im, n, x);
	if (!strcmp(t, "Tile"))
		return ox_op_tile(im, n, x);
	if (!strcmp(t, "EyeLike"))
		return ox_op_eye_like(im, n, x);
	if (!strcmp(t, "DepthToSpace") || !strcmp(t, "SpaceToDepth"))
		return ox_op_depth_space(im, n, x);
	if (!strcmp(t, "Conv") || !strcmp(t, "MaxPool") || !strcmp(t, "AveragePool"))
		return ox_op_window(im, n, x);
	if (!strcmp(t, "ConvTranspose"))
		return ox_op_conv_transpose(im, n, x);
	if (!strcmp(t, "Pad"))
		return ox_op_pad(im, n, x);
	st = ox_int_node(im, n, x, &handled);
	if (!handled)
		st = ox_composed_node(im, n, x, &handled);
	if (!handled)
		st = ox_quant_node(im, n, x, &handled);
	if (handled)
		return st;
	if (!strcmp(t, "NonZero"))
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "its output's shape is its input's count "
			       "of nonzero elements, known only once run: a session "
			       "(npurt_onnx_session_*) cuts the model here");
	return ox_fail(im, NPURT_ERR_UNSUPPORTED, "no mapping to the device's op library");
}
