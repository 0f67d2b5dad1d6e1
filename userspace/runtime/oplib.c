// SPDX-License-Identifier: MIT
/*
 * The device's op library by name (npu_oplib.h), and dense tensors: what
 * launches and the graph builder share, with no device behind them.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "internal.h"
#include "npu_opdefs.h"

static const struct {
	const char *name;
	uint32_t id;
	uint32_t inputs;
} ops[] = {
	{ "add", NPU_OP_ADD, 2 }, { "sub", NPU_OP_SUB, 2 }, { "mul", NPU_OP_MUL, 2 },
	{ "div", NPU_OP_DIV, 2 }, { "max", NPU_OP_MAX, 2 }, { "min", NPU_OP_MIN, 2 },
	{ "pow", NPU_OP_POW, 2 },
	{ "relu", NPU_OP_RELU, 1 }, { "gelu", NPU_OP_GELU, 1 },
	{ "sigmoid", NPU_OP_SIGMOID, 1 }, { "tanh", NPU_OP_TANH, 1 }, { "exp", NPU_OP_EXP, 1 },
	{ "neg", NPU_OP_NEG, 1 }, { "abs", NPU_OP_ABS, 1 }, { "sqrt", NPU_OP_SQRT, 1 },
	{ "log", NPU_OP_LOG, 1 }, { "reciprocal", NPU_OP_RECIPROCAL, 1 },
	{ "floor", NPU_OP_FLOOR, 1 }, { "ceil", NPU_OP_CEIL, 1 }, { "sign", NPU_OP_SIGN, 1 },
	{ "erf", NPU_OP_ERF, 1 }, { "softplus", NPU_OP_SOFTPLUS, 1 },
	{ "softsign", NPU_OP_SOFTSIGN, 1 }, { "gelu_erf", NPU_OP_GELU_ERF, 1 },
	{ "leaky_relu", NPU_OP_LEAKY_RELU, 1 }, { "elu", NPU_OP_ELU, 1 },
	{ "selu", NPU_OP_SELU, 1 }, { "hard_sigmoid", NPU_OP_HARD_SIGMOID, 1 },
	{ "hard_swish", NPU_OP_HARD_SWISH, 1 }, { "clip", NPU_OP_CLIP, 1 },
	{ "sin", NPU_OP_SIN, 1 }, { "cos", NPU_OP_COS, 1 }, { "round", NPU_OP_ROUND, 1 },
	{ "tan", NPU_OP_TAN, 1 }, { "asin", NPU_OP_ASIN, 1 }, { "acos", NPU_OP_ACOS, 1 },
	{ "atan", NPU_OP_ATAN, 1 }, { "sinh", NPU_OP_SINH, 1 }, { "cosh", NPU_OP_COSH, 1 },
	{ "asinh", NPU_OP_ASINH, 1 }, { "acosh", NPU_OP_ACOSH, 1 }, { "atanh", NPU_OP_ATANH, 1 },
	{ "thresholded_relu", NPU_OP_THRESHOLDED_RELU, 1 }, { "shrink", NPU_OP_SHRINK, 1 },
	{ "celu", NPU_OP_CELU, 1 },
	{ "gemm", NPU_OP_GEMM, 2 },
	{ "softmax", NPU_OP_SOFTMAX, 1 }, { "layernorm", NPU_OP_LAYERNORM, 1 },
	{ "reduce_sum", NPU_OP_REDUCE_SUM, 1 }, { "reduce_mean", NPU_OP_REDUCE_MEAN, 1 },
	{ "reduce_max", NPU_OP_REDUCE_MAX, 1 },
	{ "transpose", NPU_OP_TRANSPOSE, 1 }, { "cast", NPU_OP_CAST, 1 },
	{ "conv2d", NPU_OP_CONV2D, 2 }, { "maxpool2d", NPU_OP_MAXPOOL2D, 1 },
	{ "avgpool2d", NPU_OP_AVGPOOL2D, 1 },
	{ "reduce_min", NPU_OP_REDUCE_MIN, 1 }, { "reduce_prod", NPU_OP_REDUCE_PROD, 1 },
	{ "argmax", NPU_OP_ARGMAX, 1 }, { "argmin", NPU_OP_ARGMIN, 1 },
	{ "cumsum", NPU_OP_CUMSUM, 1 },
	{ "mod", NPU_OP_MOD, 2 }, { "fmod", NPU_OP_FMOD, 2 }, { "equal", NPU_OP_EQUAL, 2 },
	{ "less", NPU_OP_LESS, 2 }, { "less_equal", NPU_OP_LESS_EQUAL, 2 },
	{ "greater", NPU_OP_GREATER, 2 }, { "greater_equal", NPU_OP_GREATER_EQUAL, 2 },
	{ "and", NPU_OP_AND, 2 }, { "or", NPU_OP_OR, 2 }, { "xor", NPU_OP_XOR, 2 },
	{ "shl", NPU_OP_SHL, 2 }, { "shr", NPU_OP_SHR, 2 },
	{ "select", NPU_OP_SELECT, 2 }, { "gather_elements", NPU_OP_GATHER_ELEMENTS, 2 },
	{ "requant", NPU_OP_REQUANT, 2 },
	{ "not", NPU_OP_NOT, 1 }, { "isnan", NPU_OP_ISNAN, 1 }, { "isinf", NPU_OP_ISINF, 1 },
};

#define N_OPS	(sizeof(ops) / sizeof(ops[0]))

_Static_assert(NPURT_EPILOGUE_BIAS == NPU_OP_E_BIAS, "runtime and op library epilogue flags");
_Static_assert(NPURT_LAUNCH_TRANS_A == NPU_OP_F_TRANS_A && NPURT_LAUNCH_TRANS_B ==
	       NPU_OP_F_TRANS_B && NPURT_ARG_LAST_INDEX == NPU_OP_F_LAST_INDEX &&
	       NPURT_CUMSUM_EXCLUSIVE == NPU_OP_F_EXCLUSIVE && NPURT_CUMSUM_REVERSE == NPU_OP_F_REVERSE &&
	       (int)NPURT_BOOL == (int)NPU_DT_BOOL && (int)NPURT_DTYPE_COUNT == (int)NPU_DT_COUNT,
	       "runtime and op library flags and dtypes");

static int op_index(uint32_t id)
{
	for (unsigned int i = 0; i < N_OPS; i++)
		if (ops[i].id == id)
			return (int)i;
	return -1;
}

/* Edits from a to b, up to 3 (more is 3): how close a misspelt name is. */
static unsigned int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned int row[40], prev, cur;

	if (la >= sizeof(row) / sizeof(row[0]) || lb >= sizeof(row) / sizeof(row[0]))
		return 3;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned int)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned int best = prev + (tolower((unsigned char)a[i - 1]) !=
						    tolower((unsigned char)b[j - 1]));

			cur = row[j];
			best = row[j] + 1 < best ? row[j] + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb] < 3 ? row[lb] : 3;
}

npurt_status npurt_op_lookup(const char *name, uint32_t *op)
{
	static const char who[] = "npurt_op_lookup";
	char near[200] = "";
	size_t at = 0;

	if (!name || !op)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	for (unsigned int i = 0; i < N_OPS; i++) {
		if (!strcasecmp(ops[i].name, name)) {
			*op = ops[i].id;
			return NPURT_OK;
		}
	}
	/* The names a letter or two away, or that share its first four letters. */
	for (unsigned int i = 0; i < N_OPS && at + 1 < sizeof(near); i++) {
		if (distance(name, ops[i].name) <= 2 ||
		    (strlen(name) >= 3 && !strncasecmp(ops[i].name, name, strlen(name))) ||
		    (strlen(name) >= 4 && !strncasecmp(ops[i].name, name, 4))) {
			int n = snprintf(near + at, sizeof(near) - at, "%s%s", at ? ", " : "",
					 ops[i].name);

			at += n > 0 ? (size_t)n : 0;
		}
	}
	return npurt_set_error(NPURT_ERR_INVALID, "%s: no op \"%.32s\"%s%s%s (%zu ops: "
			       "npurt_op_count(), npurt_op_at())", who, name,
			       at ? "; did you mean " : "", near, at ? "?" : "", N_OPS);
}

uint32_t npurt_op_count(void)
{
	return (uint32_t)N_OPS;
}

npurt_status npurt_op_at(uint32_t index, uint32_t *op, const char **name)
{
	if (index >= N_OPS)
		return npurt_set_error(NPURT_ERR_INVALID, "npurt_op_at: op %u of %zu", index, N_OPS);
	if (op)
		*op = ops[index].id;
	if (name)
		*name = ops[index].name;
	return NPURT_OK;
}

const char *npurt_op_name(uint32_t op)
{
	int i = op_index(op);

	return i < 0 ? NULL : ops[i].name;
}

npurt_status npurt_tensor_init(npurt_tensor *t, uint64_t addr, npurt_dtype dtype,
			       uint32_t ndim, const uint64_t *shape)
{
	static const char who[] = "npurt_tensor_init";
	npurt_tensor out = { .addr = addr, .dtype = dtype, .ndim = ndim };
	uint64_t stride = 1;

	if (!t || !shape)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	if (!ndim || ndim > NPURT_MAX_DIMS || (unsigned int)dtype >= NPURT_DTYPE_COUNT)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: %s %u", who,
				       ndim && ndim <= NPURT_MAX_DIMS ? "unknown dtype" : "ndim",
				       ndim && ndim <= NPURT_MAX_DIMS ? (unsigned int)dtype : ndim);
	for (uint32_t k = ndim; k-- > 0;) {
		if (!shape[k])
			return npurt_set_error(NPURT_ERR_INVALID, "%s: dimension %u is 0", who, k);
		out.shape[k] = shape[k];
		out.stride[k] = stride;
		stride *= shape[k];
	}
	*t = out;
	return NPURT_OK;
}

size_t npurt_dtype_size(npurt_dtype dtype)
{
	return npu_dtype_size((uint32_t)dtype);
}

int npurt_op_inputs(uint32_t op)
{
	int i = op_index(op);

	return i < 0 ? -1 : (int)ops[i].inputs;
}
