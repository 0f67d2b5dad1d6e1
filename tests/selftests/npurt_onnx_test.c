// SPDX-License-Identifier: MIT
/*
 * ONNX models on the device: files written by tests/onnx/make_models.py
 * (Debian's python3-onnx, fixed random weights) imported with
 * npurt_onnx_import_file(), loaded, run sunk and from the host, and
 * compared with the outputs numpy computed in float64: an MLP, a
 * transformer encoder block (LayerNorm decomposed and whole), a small
 * ResNet (convolutions, batch norm, residual adds, pooling), and the MLP,
 * transformer and ResNet again in bfloat16 and float16. Imports that
 * cannot be mapped say which node and op; broken files are refused; no
 * import or failed load leaves device memory behind.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npuonnx.h"
#include "npu_onnx_files.h"

FIXTURE(onnx) {
	npurt_device *dev;
	uint64_t hbm_before;
};

FIXTURE_SETUP(onnx)
{
	self->hbm_before = npu_hbm_buffers();
	ASSERT_NE(~0ull, self->hbm_before);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
}

FIXTURE_TEARDOWN(onnx)
{
	npurt_device_close(self->dev);
	EXPECT_EQ(self->hbm_before, npu_hbm_buffers_settle(self->hbm_before));
}

/* Element k of an output of type dt (float32, float16 or bfloat16). */
static double real_at(const void *p, npurt_dtype dt, size_t k)
{
	uint16_t h;
	uint32_t u;
	float f;
	int e;

	if (dt == NPURT_F32)
		return ((const float *)p)[k];
	h = ((const uint16_t *)p)[k];
	if (dt == NPURT_BF16) {
		u = (uint32_t)h << 16;
		memcpy(&f, &u, 4);
		return f;
	}
	e = h >> 10 & 31;
	if (e == 31)
		return h & 1023 ? NAN : (h & 0x8000 ? -INFINITY : INFINITY);
	f = e ? ldexpf(1024 + (h & 1023), e - 25) : ldexpf(h & 1023, -24);
	return h & 0x8000 ? -f : f;
}

/*
 * Import NAME.onnx, run it on NAME.in and compare with NAME.out: within
 * tol of the output's largest magnitude. Float32 models get 1e-3 (float32
 * on the device against float64 in numpy, sums in another order); half
 * precision ones round every activation, so they get what 11 (float16) or
 * 8 (bfloat16) bits leave over a model's depth.
 */
static void run_model_pinned(struct __test_metadata *_metadata, npurt_device *dev,
			     const char *name, const npurt_onnx_options *pins,
			     npurt_dispatch dispatch, double tol)
{
	npurt_onnx_info oi = { .size = sizeof(oi) };
	npurt_graph *g = NULL;
	npurt_model *m = NULL;
	npurt_io_info in = { .size = sizeof(in) }, out = { .size = sizeof(out) };
	char path[PATH_MAX];
	size_t in_len = 0, want_len = 0, len;
	float *want;
	void *x, *got;
	size_t elem;
	void *file;
	double err = 0, big = 0;

	snprintf(path, sizeof(path), "%s/%s.in", models_dir(), name);
	x = read_all(path, &in_len);
	snprintf(path, sizeof(path), "%s/%s.out", models_dir(), name);
	want = read_all(path, &want_len);
	ASSERT_TRUE(x && want) TH_LOG("no %s data in %s (make builds it)", name, models_dir());
	snprintf(path, sizeof(path), "%s/%s.onnx", models_dir(), name);
	ASSERT_EQ(NPURT_OK, npurt_onnx_import_file(path, pins, &g, &oi))
		TH_LOG("%s", npurt_last_error());
	EXPECT_GT(oi.device_ops, 0);
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &file, &len, NULL));
	npurt_graph_destroy(g);
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(dev, file, len, NULL, &m))
		TH_LOG("%s", npurt_last_error());
	free(file);
	ASSERT_EQ(NPURT_OK, npurt_model_set_dispatch(m, dispatch));
	ASSERT_EQ(NPURT_OK, npurt_model_io(m, 0, &in));
	ASSERT_EQ(NPURT_OK, npurt_model_io(m, 1, &out));
	ASSERT_FALSE(in.output);
	ASSERT_TRUE(out.output);
	ASSERT_EQ(in_len, in.bytes);
	ASSERT_EQ(in.dtype, out.dtype);
	elem = out.dtype == NPURT_F32 ? 4 : 2;
	ASSERT_EQ(want_len, out.bytes / elem * 4);
	got = calloc(1, out.bytes);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, in.bytes));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, got, out.bytes));
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 60000)) TH_LOG("%s", npurt_last_error());
	for (size_t k = 0; k < out.bytes / elem; k++) {
		double d = fabs(real_at(got, out.dtype, k) - want[k]);

		err = d > err || isnan(d) ? d : err;
		big = fabs(want[k]) > big ? fabs(want[k]) : big;
	}
	EXPECT_LE(err, tol * (big > 1 ? big : 1))
		TH_LOG("%s: largest difference %.3g, values up to %.3g", name, err, big);
	npurt_model_unload(m);
	free(got);
	free(x);
	free(want);
}

static void run_model_tol(struct __test_metadata *_metadata, npurt_device *dev,
			  const char *name, npurt_dispatch dispatch, double tol)
{
	run_model_pinned(_metadata, dev, name, NULL, dispatch, tol);
}

static void run_model(struct __test_metadata *_metadata, npurt_device *dev, const char *name,
		      npurt_dispatch dispatch)
{
	run_model_tol(_metadata, dev, name, dispatch, 1e-3);
}

TEST_F(onnx, an_mlp_of_gemms_matches_numpy)
{
	run_model(_metadata, self->dev, "mlp", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, a_transformer_block_with_decomposed_layernorm_matches_numpy)
{
	run_model(_metadata, self->dev, "transformer13", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, a_transformer_block_with_layernormalization_matches_numpy)
{
	run_model(_metadata, self->dev, "transformer17", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, a_resnet_of_convolutions_and_pools_matches_numpy)
{
	run_model(_metadata, self->dev, "resnet_mini", NPURT_DISPATCH_SINK);
}

/* Opset 6: legacy broadcasting at an axis, a per-channel PRelu slope, is_test. */
TEST_F(onnx, an_opset_6_model_imports_as_opset_7_means_it_and_matches_numpy)
{
	run_model(_metadata, self->dev, "legacy_ops", NPURT_DISPATCH_SINK);
}

/* Shape arithmetic in int32 folds on the host; casts wrap as ONNX's do. */
TEST_F(onnx, shapes_computed_in_int32_fold_and_casts_wrap)
{
	run_model(_metadata, self->dev, "int_shapes", NPURT_DISPATCH_SINK);
}

/*
 * A model exported with symbolic batch and sequence dimensions imports
 * static once they are pinned, by name (dim_params) or by the input's
 * whole shape, and runs as numpy computed it at those sizes.
 */
TEST_F(onnx, symbolic_dimensions_pinned_by_name_or_shape_import_static_and_match)
{
	static const char *const dims[] = { "seq=3", "batch=2" };
	static const char *const shapes[] = { "x=2x3x4" };
	const npurt_onnx_options by_name = { .size = sizeof(by_name), .dim_params = dims,
					     .n_dim_params = 2 };
	const npurt_onnx_options by_shape = { .size = sizeof(by_shape), .shapes = shapes,
					      .n_shapes = 1 };

	run_model_pinned(_metadata, self->dev, "pinned", &by_name, NPURT_DISPATCH_SINK, 1e-3);
	run_model_pinned(_metadata, self->dev, "pinned", &by_shape, NPURT_DISPATCH_SINK, 1e-3);
}

/* An input pinned by value is a constant: an If on it folds and inlines. */
TEST_F(onnx, an_input_pinned_by_value_folds_the_if_it_decides)
{
	static const char *const values[] = { "sr=16000" };
	const npurt_onnx_options pins = { .size = sizeof(pins), .values = values, .n_values = 1 };

	run_model_pinned(_metadata, self->dev, "pinned_value", &pins, NPURT_DISPATCH_SINK, 1e-3);
}

/*
 * Pins that are malformed, disagree with the file or name nothing in it
 * are refused with the spec quoted; a dimension left symbolic says how
 * to pin it.
 */
TEST_F(onnx, pins_that_do_not_fit_the_model_are_refused_by_spec)
{
	static const struct {
		const char *shape, *dim, *why, *value;
	} cases[] = {
		{ "x=2x3x4", NULL, "value \"x=1,2\": 2 values, input \"x\" holds 24", "x=1,2" },
		{ "x=2x3x4", NULL, "value \"x=one\": numbers wanted", "x=one" },
		{ NULL, "seq=3", "value \"z=1\": the model has no input \"z\"", "z=1" },
		{ "x=2x3x5", NULL, "dimension 2 of input \"x\" is 4 in the file", NULL },
		{ "x=2x3", NULL, "shape \"x=2x3\": 2 dimensions", NULL },
		{ "y=2x3x4", "batch=2", "the model has no input \"y\"", NULL },
		{ NULL, "seq=3", "dynamic dimension 0 (\"batch\")", NULL },
		{ NULL, "batch=2", "dynamic dimension 1 (\"seq\")", NULL },
		{ "x=2x0x4", NULL, "shape \"x=2x0x4\": dimensions of 1", NULL },
		{ NULL, "seq", "dim_param \"seq\": NAME=VALUE wanted", NULL },
		{ NULL, "seq=3x2", "dim_param \"seq=3x2\": a value of 1 to 2^40", NULL },
	};
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/pinned.onnx", models_dir());
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		npurt_onnx_options o = { .size = sizeof(o), .shapes = &cases[k].shape,
					 .n_shapes = !!cases[k].shape, .dim_params = &cases[k].dim,
					 .n_dim_params = !!cases[k].dim, .values = &cases[k].value,
					 .n_values = !!cases[k].value };
		npurt_graph *g = (npurt_graph *)1;
		npurt_status st = npurt_onnx_import_file(path, &o, &g, NULL);

		EXPECT_TRUE(st == NPURT_ERR_INVALID || st == NPURT_ERR_UNSUPPORTED) TH_LOG("%zu", k);
		EXPECT_EQ((npurt_graph *)1, g);
		EXPECT_NE(NULL, strstr(npurt_last_error(), cases[k].why))
			TH_LOG("%zu: %s", k, npurt_last_error());
	}
}

/* An LSTM of 2 steps, unrolled: its sequence and last states match numpy's. */
TEST_F(onnx, an_lstm_unrolled_matches_numpy_in_every_output)
{
	run_model(_metadata, self->dev, "lstm", NPURT_DISPATCH_SINK);
}

/* A GRU as PyTorch exports it (reset after the recurrent product), unrolled. */
TEST_F(onnx, a_gru_unrolled_matches_numpy)
{
	run_model(_metadata, self->dev, "gru", NPURT_DISPATCH_SINK);
}

/*
 * Recurrent ops with every activation function ONNX names for them (their
 * alphas and betas taken in order), clip and input_forget, unrolled: an
 * LSTM, a reverse GRU and two bidirectional RNNs against numpy.
 */
TEST_F(onnx, recurrent_ops_take_every_activation_clip_and_input_forget)
{
	run_model(_metadata, self->dev, "rnn_acts", NPURT_DISPATCH_SINK);
}

/* A reflect Pad of 82 positions: a gather per padded dimension. */
TEST_F(onnx, a_wide_reflect_pad_matches_numpy)
{
	run_model(_metadata, self->dev, "reflect_wide", NPURT_DISPATCH_SINK);
}

/* An If whose condition folds from the static shape: its branch inlined. */
TEST_F(onnx, an_if_on_the_static_shape_runs_the_branch_it_picks)
{
	run_model(_metadata, self->dev, "shape_if", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, triangles_of_a_batch_of_matrices_match_numpy)
{
	run_model(_metadata, self->dev, "trilu", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, a_batch_norm_after_no_conv_matches_numpy)
{
	run_model(_metadata, self->dev, "relu_bn", NPURT_DISPATCH_SINK);
}

/*
 * Layer normalizations written out in elementary ops: the first becomes one
 * LAYERNORM (its six other nodes fused), the second, whose centred values
 * are read again, runs op by op; both match numpy.
 */
TEST_F(onnx, a_layernorm_written_out_runs_as_one_op)
{
	npurt_onnx_info oi = { .size = sizeof(oi) };
	npurt_graph *g = NULL;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/layernorm_written_out.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_import_file(path, NULL, &g, &oi))
		TH_LOG("%s", npurt_last_error());
	/* 16 launches op by op; the first normalization's seven are one. */
	EXPECT_EQ(11, oi.device_ops);
	npurt_graph_destroy(g);
	run_model(_metadata, self->dev, "layernorm_written_out", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, a_column_picked_by_computed_indices_matches_numpy)
{
	run_model(_metadata, self->dev, "picked_column", NPURT_DISPATCH_SINK);
}

/* Fusions: a Conv read twice keeps its activations apart; Gemm/MatMul take their biases. */
TEST_F(onnx, fused_and_unfusable_epilogues_match_numpy)
{
	run_model(_metadata, self->dev, "shared_conv", NPURT_DISPATCH_SINK);
}

/* 3-D windows, each dimension its own; reflect and edge pads; a 6-D output. */
TEST_F(onnx, a_3d_cnn_with_reflect_and_edge_pads_matches_numpy)
{
	run_model(_metadata, self->dev, "video_cnn", NPURT_DISPATCH_SINK);
}

/* Einsum: a batched product, a contraction, an inner product, a transpose. */
TEST_F(onnx, einsum_products_contractions_and_transposes_match_numpy)
{
	run_model(_metadata, self->dev, "einsum_chain", NPURT_DISPATCH_SINK);
}

/* TopK over masked (-inf) logits: the masked come last, each once. */
TEST_F(onnx, topk_puts_masked_positions_last_each_once)
{
	run_model(_metadata, self->dev, "topk_inf", NPURT_DISPATCH_SINK);
}

/* MaxPool's Indices count over the whole input: several images and channels. */
TEST_F(onnx, maxpool_indices_count_over_images_and_channels)
{
	run_model(_metadata, self->dev, "maxpool_indices", NPURT_DISPATCH_SINK);
}

/*
 * An If on a value the device computes runs as a select of both branches:
 * one model, data that takes each branch.
 */
TEST_F(onnx, an_if_on_a_computed_condition_selects_the_taken_branch)
{
	run_model(_metadata, self->dev, "if_select", NPURT_DISPATCH_SINK);
	run_model(_metadata, self->dev, "if_select_neg", NPURT_DISPATCH_SINK);
}

/*
 * A Loop (trip count from a shape, ended early by its condition, a scan
 * output) and a Scan (inputs walked both ways, outputs stacked reversed
 * on axis 1), unrolled at import, their state computed on the device.
 */
TEST_F(onnx, loops_and_scans_unroll_into_the_task_list)
{
	run_model(_metadata, self->dev, "loop_scan", NPURT_DISPATCH_SINK);
}

/*
 * Half precision models: the device widens each launch to float32 and back.
 * Measured: largest differences 3.6e-4 (bfloat16 MLP, softmax outputs up
 * to 0.13), 1.1e-3 of 4.5 (float16 transformer), 3.3e-4 of 6.5 (float16
 * ResNet); the tolerances leave 4-10x of that.
 */
TEST_F(onnx, a_bfloat16_mlp_matches_numpy)
{
	run_model_tol(_metadata, self->dev, "mlp_bf16", NPURT_DISPATCH_SINK, 4e-3);
}

/*
 * An MLP quantized as onnxruntime's quantize_dynamic exports one:
 * DynamicQuantizeLinear and MatMulInteger with per-column weight zero
 * points, 784 and 512 byte products a sum (float32 cannot hold those
 * sums exactly: this runs on the device's integer GEMM, firmware 0.9).
 * The reference quantizes the same way in float32 and sums exactly, so
 * the outputs agree to float32 rounding of the scales.
 */
TEST_F(onnx, an_int8_mlp_runs_on_the_integer_gemm)
{
	run_model_tol(_metadata, self->dev, "mlp_int8", NPURT_DISPATCH_SINK, 1e-5);
}

/*
 * Two quantized convolutions (DynamicQuantizeLinear, ConvInteger with
 * int8 weights): 288 byte products a sum and a zero point per output
 * channel, then grouped, strided and symmetric. They run on the device's
 * integer convolution, padding and zero points accounted for in int32;
 * the reference sums exactly, so only the float32 scales round.
 */
TEST_F(onnx, an_int8_cnn_runs_on_the_integer_convolution)
{
	run_model_tol(_metadata, self->dev, "cnn_int8", NPURT_DISPATCH_SINK, 1e-5);
}

/* Import model `name` with an info of `size` bytes (qdq preset to 77): the info. */
static npurt_onnx_info import_info(struct __test_metadata *_metadata, const char *name,
				   uint32_t size)
{
	npurt_onnx_info oi = { .size = size, .qdq = 77 };
	npurt_graph *g = NULL;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s.onnx", models_dir(), name);
	EXPECT_EQ(NPURT_OK, npurt_onnx_import_file(p, NULL, &g, &oi)) TH_LOG("%s", npurt_last_error());
	npurt_graph_destroy(g);
	return oi;
}

/*
 * A CNN as static quantization exports it (QDQ): its two Conv groups and
 * its MatMul group import as integer ops, and the output matches the
 * integer reference (onnxruntime's to the last bit) within one step of
 * its scale, 0.1: the device scales each sum in float32.
 */
TEST_F(onnx, a_qdq_cnn_runs_its_groups_as_integer_ops)
{
	npurt_onnx_info oi = import_info(_metadata, "cnn_qdq", sizeof(oi));

	EXPECT_EQ(3, oi.qdq);
	/* A caller built before `qdq` existed gets what it knows. */
	oi = import_info(_metadata, "cnn_qdq", offsetof(npurt_onnx_info, qdq));
	EXPECT_EQ(77, oi.qdq);
	EXPECT_EQ(13, oi.opset);
	/* tolerances are of the largest output, 5.3 */
	run_model_tol(_metadata, self->dev, "cnn_qdq", NPURT_DISPATCH_SINK, 0.1001 / 5.3);
}

/*
 * resnet_mini as static quantization exports it: its ten convolutions run
 * as integer ones; the residual Adds, pooling and Gemm in float. Against
 * the same integer pipeline in numpy (onnxruntime's within 1e-4 of the
 * largest output): 1e-2 leaves room for a sum the device scales to the
 * other side of a rounding boundary.
 */
TEST_F(onnx, a_qdq_resnet_runs_its_convolutions_as_integer_ones)
{
	EXPECT_EQ(10, import_info(_metadata, "resnet_mini_qdq", sizeof(npurt_onnx_info)).qdq);
	run_model_tol(_metadata, self->dev, "resnet_mini_qdq", NPURT_DISPATCH_SINK, 1e-2);
}

TEST_F(onnx, a_float16_transformer_block_matches_numpy)
{
	run_model_tol(_metadata, self->dev, "transformer17_f16", NPURT_DISPATCH_SINK, 5e-3);
}

TEST_F(onnx, a_float16_resnet_matches_numpy)
{
	run_model_tol(_metadata, self->dev, "resnet_mini_f16", NPURT_DISPATCH_SINK, 3e-3);
}

/* A constant pad in float16: the value's half repeated into whole words. */
TEST_F(onnx, a_constant_pad_of_a_float16_image_matches_numpy)
{
	run_model_tol(_metadata, self->dev, "pad_f16", NPURT_DISPATCH_SINK, 0);
}

/* Folded half-precision constants round to their type at each node, as ONNX does. */
TEST_F(onnx, half_precision_constants_fold_as_onnx_rounds_them)
{
	run_model(_metadata, self->dev, "half_folds", NPURT_DISPATCH_SINK);
}

TEST_F(onnx, host_dispatch_runs_an_imported_model_the_same)
{
	run_model(_metadata, self->dev, "transformer17", NPURT_DISPATCH_HOST);
}

/*
 * What the device cannot run is refused, by node, op type and reason, and
 * nothing is made: an op with no mapping; an If whose condition the
 * device computes; opset-6 nodes with no opset-7 meaning (unequal shapes
 * without broadcast=1, a batch norm in training).
 */
TEST_F(onnx, what_cannot_be_mapped_is_refused_by_node_and_reason)
{
	static const struct {
		const char *file, *where, *why;
		npurt_status st;
	} cases[] = {
		{ "unsupported", "node 1 \"uniq\" (Unique)", "output 1", NPURT_ERR_UNSUPPORTED },
		{ "if_computed", "node 2 \"branch\" (If)", "GatherElements node \"pick\" indexes "
		  "by values it computes", NPURT_ERR_UNSUPPORTED },
		{ "if_same_names", "else_branch of node 2 \"same\" (If)",
		  "output \"y1\" is defined already", NPURT_ERR_INVALID },
		{ "loop_computed", "node 2 \"repeat\" (Loop)", "trip count \"m\" is computed on "
		  "the device", NPURT_ERR_UNSUPPORTED },
		{ "loop_unsupported_body", "node 1 \"uniq\" (Unique) of the body, iteration 0 of "
		  "node 0 \"repeat\" (Loop)", "output 1", NPURT_ERR_UNSUPPORTED },
		{ "loop_forever", "node 0 \"spin\" (Loop)", "more than 65536 iterations",
		  NPURT_ERR_UNSUPPORTED },
		{ "legacy_add", "node 1 \"add\" (Add)", "without broadcast=1", NPURT_ERR_INVALID },
		{ "legacy_bn", "node 0 \"bn\" (BatchNormalization)", "is_test=0",
		  NPURT_ERR_UNSUPPORTED },
	};
	char path[PATH_MAX];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		npurt_graph *g = (npurt_graph *)1;

		snprintf(path, sizeof(path), "%s/%s.onnx", models_dir(), cases[k].file);
		EXPECT_EQ(cases[k].st, npurt_onnx_import_file(path, NULL, &g, NULL)) TH_LOG("%s", path);
		EXPECT_EQ((npurt_graph *)1, g);
		EXPECT_NE(NULL, strstr(npurt_last_error(), cases[k].where))
			TH_LOG("%s", npurt_last_error());
		EXPECT_NE(NULL, strstr(npurt_last_error(), cases[k].why))
			TH_LOG("%s", npurt_last_error());
	}
}

TEST_F(onnx, a_dynamic_dimension_is_unsupported)
{
	char path[PATH_MAX];
	npurt_graph *g = NULL;

	snprintf(path, sizeof(path), "%s/dynamic.onnx", models_dir());
	ASSERT_EQ(NPURT_ERR_UNSUPPORTED, npurt_onnx_import_file(path, NULL, &g, NULL));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "dynamic")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "\"N\"")) TH_LOG("%s", npurt_last_error());
}

/* Truncated and corrupted files: refused, whatever byte they end at. */
TEST_F(onnx, broken_files_are_refused)
{
	char path[PATH_MAX];
	size_t len = 0;
	uint8_t *file;
	npurt_graph *g;
	unsigned int refused = 0, tried = 0;

	snprintf(path, sizeof(path), "%s/mlp.onnx", models_dir());
	file = read_all(path, &len);
	ASSERT_NE(NULL, file);
	ASSERT_EQ(NPURT_OK, npurt_onnx_import(file, len, NULL, &g, NULL)) TH_LOG("%s", npurt_last_error());
	npurt_graph_destroy(g);
	for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
		npurt_status st = npurt_onnx_import(file, cut, NULL, &g, NULL);

		tried++;
		if (st == NPURT_OK) {
			npurt_graph_destroy(g);
			continue;
		}
		EXPECT_TRUE(st == NPURT_ERR_INVALID || st == NPURT_ERR_UNSUPPORTED)
			TH_LOG("cut at %zu: %s", cut, npurt_last_error());
		refused++;
	}
	/* A protobuf cut between fields can parse; most cuts do not. */
	EXPECT_GT(refused, tried * 9 / 10);
	ASSERT_EQ(NPURT_ERR_INVALID, npurt_onnx_import("not a model", 11, NULL, &g, NULL));
	free(file);
}

TEST_HARNESS_MAIN
