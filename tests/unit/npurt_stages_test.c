// SPDX-License-Identifier: MIT
/*
 * A session's stages (userspace/onnx/onnx_stages.c) on the host: the
 * staged test model (tests/onnx/make_models.py, data_dependent) is cut at
 * its NonZero and its TopK of a computed k into the stages executor.rst
 * draws, values crossing by name and the Constant read after the first
 * cut copied instead; each stage's file parses with its inputs declared;
 * a model with nothing to cut is one stage; and NonZero on the host
 * gives numpy's positions for every dtype (-0 is zero, NaN is not).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "npu_onnx_files.h"
#include "onnx_stages.h"

static bool lists(const char **names, uint32_t n, const char *const *want, uint32_t nwant)
{
	if (n != nwant)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(names[i], want[i]))
			return false;
	return true;
}

static const char *node_names(const struct ox_stage *st, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < st->n_nodes && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", st->nodes[i]->name);
	return buf;
}

static struct ox_stages *cut_file(struct __test_metadata *_metadata, const char *name)
{
	char p[PATH_MAX];
	struct ox_stages *s = NULL;
	size_t len = 0;
	void *data;

	snprintf(p, sizeof(p), "%s/%s", models_dir(), name);
	data = read_all(p, &len);
	EXPECT_NE(NULL, data) TH_LOG("%s (make tests builds it)", p);
	if (!data)
		return NULL;
	EXPECT_EQ(NPURT_OK, ox_stages_cut(data, len, NULL, 0, &s)) TH_LOG("%s", npurt_last_error());
	free(data);
	return s;
}

TEST(a_model_is_cut_at_nonzero_and_at_a_computed_k)
{
	static const char *const in1[] = { "x" }, *const out1[] = { "pos" };
	static const char *const in2[] = { "where", "x", "k" }, *const out2[] = { "picked", "kk" };
	static const char *const in3[] = { "picked", "kk" }, *const out3[] = { "top", "top_i" };
	struct ox_stages *s = cut_file(_metadata, "data_dependent.onnx");
	char buf[256];

	ASSERT_NE(NULL, s);
	ASSERT_EQ(3, s->n);
	EXPECT_STREQ("zero two positive", node_names(&s->st[0], buf, sizeof(buf)));
	EXPECT_TRUE(lists(s->st[0].in, s->st[0].n_in, in1, 1));
	EXPECT_TRUE(lists(s->st[0].out, s->st[0].n_out, out1, 1));
	ASSERT_NE(NULL, s->st[0].host);
	EXPECT_STREQ("where", s->st[0].host->name);
	/* The Constant two is read after the cut: copied first, not passed. */
	EXPECT_STREQ("two idx select double count clip_k", node_names(&s->st[1], buf, sizeof(buf)));
	EXPECT_TRUE(lists(s->st[1].in, s->st[1].n_in, in2, 3));
	EXPECT_TRUE(lists(s->st[1].out, s->st[1].n_out, out2, 2));
	EXPECT_EQ(NULL, s->st[1].host);
	EXPECT_STREQ("top", node_names(&s->st[2], buf, sizeof(buf)));
	EXPECT_TRUE(lists(s->st[2].in, s->st[2].n_in, in3, 2));
	EXPECT_TRUE(lists(s->st[2].out, s->st[2].n_out, out3, 2));
	/* k is pinned by its value there; picked passes as data. */
	EXPECT_FALSE(s->st[2].by_value[0]);
	EXPECT_TRUE(s->st[2].by_value[1]);
	for (uint32_t j = 0; j < 3; j++)
		for (uint32_t k = 0; j < 2 && k < s->st[j].n_in; k++)
			EXPECT_FALSE(s->st[j].by_value[k]);
	ox_stages_free(s);
}

TEST(each_stage_file_parses_with_its_inputs_declared)
{
	npurt_value f = { .dtype = NPURT_F32, .ndim = 1, .shape = { 5 } };
	npurt_value idx = { .dtype = NPURT_I64, .ndim = 2, .shape = { 1, 3 } };
	npurt_value k = { .dtype = NPURT_I64, .ndim = 1, .shape = { 1 } };
	const npurt_value *in[3][3] = { { &f }, { &idx, &f, &k }, { &f, &k } };
	static const int32_t types[3][3] = { { 1 }, { 7, 1, 7 }, { 1, 7 } };	/* FLOAT, INT64 */
	struct ox_stages *s = cut_file(_metadata, "data_dependent.onnx");

	ASSERT_NE(NULL, s);
	ASSERT_EQ(3, s->n);
	for (uint32_t j = 0; j < 3; j++) {
		Onnx__ModelProto *m;

		ASSERT_EQ(NPURT_OK, ox_stage_file(s, j, in[j])) TH_LOG("%s", npurt_last_error());
		m = onnx__model_proto__unpack(NULL, s->st[j].size, s->st[j].file);
		ASSERT_NE(NULL, m);
		EXPECT_EQ(s->st[j].n_nodes, m->graph->n_node);
		EXPECT_EQ(s->st[j].n_out, m->graph->n_output);
		ASSERT_EQ(s->st[j].n_in, m->graph->n_input);
		for (uint32_t i = 0; i < s->st[j].n_in; i++) {
			const Onnx__TypeProto__Tensor *t = m->graph->input[i]->type->tensor_type;

			EXPECT_STREQ(s->st[j].in[i], m->graph->input[i]->name);
			EXPECT_EQ(types[j][i], t->elem_type);
			EXPECT_EQ(in[j][i]->ndim, t->shape->n_dim);
		}
		/* Only the initializers the stage reads: the Reshape's shape in the second. */
		EXPECT_EQ(j == 1 ? 1u : 0u, m->graph->n_initializer);
		onnx__model_proto__free_unpacked(m, NULL);
	}
	ox_stages_free(s);
}

TEST(a_model_with_nothing_to_cut_is_one_stage)
{
	char p[PATH_MAX];
	struct ox_stages *s = (void *)1;
	size_t len = 0;
	void *data;

	snprintf(p, sizeof(p), "%s/transformer_dyn.onnx", models_dir());
	data = read_all(p, &len);
	ASSERT_NE(NULL, data) TH_LOG("%s", p);
	EXPECT_EQ(NPURT_OK, ox_stages_cut(data, len, NULL, 0, &s));
	EXPECT_EQ(NULL, s);
	EXPECT_EQ(NPURT_ERR_INVALID, ox_stages_cut("no model", 8, NULL, 0, &s));
	EXPECT_EQ(NULL, s);
	free(data);
}

/* numpy.nonzero, by nested position: [rank][count]. */
static uint64_t reference(const float *x, const uint64_t *dims, uint32_t rank, int64_t *out)
{
	uint64_t count = 1, n = 0, total;

	for (uint32_t d = 0; d < rank; d++)
		count *= dims[d];
	for (uint64_t k = 0; k < count; k++)
		n += x[k] != 0 || isnan(x[k]);
	total = n;
	n = 0;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t rest = k;

		if (!(x[k] != 0 || isnan(x[k])))
			continue;
		for (uint32_t d = rank; d-- > 0;) {
			out[d * total + n] = (int64_t)(rest % dims[d]);
			rest /= dims[d];
		}
		n++;
	}
	return total;
}

TEST(nonzero_on_the_host_gives_numpys_positions)
{
	float x[2 * 3 * 4];
	uint16_t h[2 * 3 * 4];
	uint8_t b[2 * 3 * 4];
	int64_t want[3 * 24];
	npurt_value v = { .dtype = NPURT_F32, .ndim = 3, .shape = { 2, 3, 4 }, .data = x,
			  .bytes = sizeof(x) }, y;
	void *buf = NULL;
	size_t cap = 0;
	uint64_t n;

	for (int k = 0; k < 24; k++)
		x[k] = k % 3 == 0 ? 0.0f : k % 5 == 0 ? -0.0f : (float)(k - 12);
	x[7] = NAN;
	n = reference(x, v.shape, 3, want);
	ASSERT_EQ(NPURT_OK, ox_host_nonzero(&v, &y, &buf, &cap));
	ASSERT_EQ(NPURT_I64, y.dtype);
	ASSERT_EQ(2, y.ndim);
	ASSERT_EQ(3, y.shape[0]);
	ASSERT_EQ(n, y.shape[1]);
	ASSERT_EQ(3 * n * 8, y.bytes);
	EXPECT_EQ(0, memcmp(want, y.data, y.bytes));
	/* The same zeros as bfloat16 (the high half of each float) and as bytes. */
	for (int k = 0; k < 24; k++) {
		uint32_t bits;

		memcpy(&bits, &x[k], 4);
		h[k] = (uint16_t)(bits >> 16);
		b[k] = x[k] != 0 || isnan(x[k]) ? (uint8_t)(k + 1) : 0;
	}
	v.dtype = NPURT_BF16;
	v.data = h;
	ASSERT_EQ(NPURT_OK, ox_host_nonzero(&v, &y, &buf, &cap));
	ASSERT_EQ(n, y.shape[1]);
	EXPECT_EQ(0, memcmp(want, y.data, y.bytes));
	v.dtype = NPURT_U8;
	v.data = b;
	ASSERT_EQ(NPURT_OK, ox_host_nonzero(&v, &y, &buf, &cap));
	ASSERT_EQ(n, y.shape[1]);
	EXPECT_EQ(0, memcmp(want, y.data, y.bytes));
	/* None: an empty [3, 0]; a scalar is refused. */
	memset(b, 0, sizeof(b));
	ASSERT_EQ(NPURT_OK, ox_host_nonzero(&v, &y, &buf, &cap));
	EXPECT_EQ(0, y.shape[1]);
	EXPECT_EQ(0, y.bytes);
	v.ndim = 0;
	EXPECT_EQ(NPURT_ERR_UNSUPPORTED, ox_host_nonzero(&v, &y, &buf, &cap));
	free(buf);
}

TEST_HARNESS_MAIN
