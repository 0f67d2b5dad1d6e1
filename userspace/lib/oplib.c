// SPDX-License-Identifier: MIT
/*
 * The device's op library by name (npu_oplib.h), and dense tensors: what
 * launches and the graph builder share, with no device behind them.
 */
#include <string.h>

#include "error.h"
#include "internal.h"
#include "npu_oplib.h"

static const struct {
	const char *name;
	uint32_t id;
	uint32_t inputs;
} ops[] = {
	{ "add", NPU_OP_ADD, 2 }, { "sub", NPU_OP_SUB, 2 }, { "mul", NPU_OP_MUL, 2 },
	{ "div", NPU_OP_DIV, 2 }, { "max", NPU_OP_MAX, 2 }, { "min", NPU_OP_MIN, 2 },
	{ "relu", NPU_OP_RELU, 1 }, { "gelu", NPU_OP_GELU, 1 },
	{ "sigmoid", NPU_OP_SIGMOID, 1 }, { "tanh", NPU_OP_TANH, 1 }, { "exp", NPU_OP_EXP, 1 },
	{ "gemm", NPU_OP_GEMM, 2 },
	{ "softmax", NPU_OP_SOFTMAX, 1 }, { "layernorm", NPU_OP_LAYERNORM, 1 },
	{ "reduce_sum", NPU_OP_REDUCE_SUM, 1 }, { "reduce_mean", NPU_OP_REDUCE_MEAN, 1 },
	{ "reduce_max", NPU_OP_REDUCE_MAX, 1 },
	{ "transpose", NPU_OP_TRANSPOSE, 1 }, { "cast", NPU_OP_CAST, 1 },
};

#define N_OPS	(sizeof(ops) / sizeof(ops[0]))

static int op_index(uint32_t id)
{
	for (unsigned int i = 0; i < N_OPS; i++)
		if (ops[i].id == id)
			return (int)i;
	return -1;
}

npurt_status npurt_op_lookup(const char *name, uint32_t *op)
{
	static const char who[] = "npurt_op_lookup";

	if (!name || !op)
		return npurt_set_error(NPURT_ERR_INVALID, "%s: NULL argument", who);
	for (unsigned int i = 0; i < N_OPS; i++) {
		if (!strcmp(ops[i].name, name)) {
			*op = ops[i].id;
			return NPURT_OK;
		}
	}
	return npurt_set_error(NPURT_ERR_INVALID,
			       "%s: no op \"%.32s\" (add sub mul div max min relu gelu sigmoid "
			       "tanh exp gemm softmax layernorm reduce_sum reduce_mean reduce_max "
			       "transpose cast)", who, name);
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
	if (!ndim || ndim > NPURT_MAX_DIMS || (unsigned int)dtype > NPURT_BF16)
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

int npurt_op_inputs(uint32_t op)
{
	int i = op_index(op);

	return i < 0 ? -1 : (int)ops[i].inputs;
}
