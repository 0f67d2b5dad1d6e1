// SPDX-License-Identifier: MIT
/*
 * Model files on the host (no device): the graph builder's files parse
 * back to what was built; the plan shares memory by lifetime, close to
 * the peak of live bytes, never between tensors live at once, also across
 * streams; and the reader refuses every truncation, every flipped byte
 * and every inconsistency a file can have, with a reason. Built plain
 * and with ASan and UBSan.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "model_file.h"
#include "npu_oplib.h"
#include "npurt.h"

static uint32_t op_id(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

static npurt_graph_node node(const char *op, uint32_t a, uint32_t b)
{
	npurt_graph_node n = { .size = sizeof(n), .op = op_id(op), .alpha = 1.0f,
			       .in = { a, b } };

	return n;
}

/* x[4 x k0] -> gemm W[i] -> relu, `layers` times -> y. */
static npurt_graph *mlp(uint32_t layers, uint64_t width)
{
	static float w[256 * 256];
	npurt_graph *g = NULL;
	uint32_t x, t, c;

	if (npurt_graph_create(&g))
		return NULL;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		w[i] = (float)(i % 7) * 0.125f;
	if (npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 4, width }, &x))
		goto bad;
	t = x;
	for (uint32_t l = 0; l < layers; l++) {
		npurt_graph_node n;

		if (npurt_graph_constant(g, NULL, NPURT_F32, 2, (uint64_t[]){ width, width }, w, &c))
			goto bad;
		n = node("gemm", t, c);
		if (npurt_graph_add(g, &n, &t))
			goto bad;
		n = node("relu", t, 0);
		if (npurt_graph_add(g, &n, &t))
			goto bad;
	}
	if (npurt_graph_output(g, t, "y"))
		goto bad;
	return g;
bad:
	npurt_graph_destroy(g);
	return NULL;
}

TEST(a_built_model_parses_back)
{
	npurt_graph *g = mlp(3, 32);
	npurt_plan_info info = { .size = sizeof(info) };
	struct mf_model m;
	char why[256] = "";
	void *data;
	size_t len;

	ASSERT_NE(NULL, g) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &data, &len, &info)) TH_LOG("%s",
										  npurt_last_error());
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(1, m.plan.streams);
	EXPECT_EQ(1, m.plan.inputs);
	EXPECT_EQ(1, m.plan.outputs);
	EXPECT_EQ(6, m.nops);
	EXPECT_EQ(0, m.plan.events);
	EXPECT_EQ(info.weights_bytes, m.plan.weights_bytes);
	EXPECT_EQ(3ull * 32 * 32 * 4, m.plan.weights_bytes);
	EXPECT_STREQ("x", m.strings + m.tensors[m.io[0].tensor].name);
	EXPECT_STREQ("y", m.strings + m.tensors[m.io[1].tensor].name);
	EXPECT_EQ(0.25f, ((float *)m.weights)[2]);
	/* A chain needs two buffers of 4 x 32 floats at once, no more. */
	EXPECT_EQ(2 * 4 * 32 * 4, info.fmap_peak);
	EXPECT_EQ(info.fmap_peak, info.fmap_bytes);
	EXPECT_EQ(5 * 4 * 32 * 4, info.fmap_sum);
	mf_free(&m);
	free(data);
	npurt_graph_destroy(g);
}

/* Two streams: the builder orders them by events; memory they may use at once is apart. */
TEST(streams_are_joined_where_they_share_tensors)
{
	static float w[16 * 16];
	npurt_graph *g;
	npurt_graph_node n;
	uint32_t x, c, a, b, s;
	struct mf_model m;
	char why[256] = "";
	void *data;
	size_t len;
	npurt_plan_info info = { .size = sizeof(info) };

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 16, 16 }, &x));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ 16, 16 }, w,
						  &c));
	n = node("gemm", x, c);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &a));	/* stream 0 */
	n = node("tanh", x, 0);
	n.stream = 1;
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &b));	/* stream 1, beside it */
	n = node("add", a, b);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &s));	/* waits for stream 1 */
	ASSERT_EQ(NPURT_OK, npurt_graph_output(g, s, "s"));
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &data, &len, &info)) TH_LOG("%s",
										  npurt_last_error());
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(2, m.plan.streams);
	EXPECT_EQ(1, m.plan.events);
	EXPECT_EQ(NPUM_OP_SIGNAL, m.ops[m.streams[1].first_op + 1].type);
	EXPECT_EQ(NPUM_OP_WAIT, m.ops[1].type);
	/* a and b are live at once, on two streams: never in the same bytes. */
	EXPECT_NE(m.tensors[a].offset, m.tensors[b].offset);
	EXPECT_EQ(2 * 16 * 16 * 4, info.fmap_bytes);
	mf_free(&m);
	free(data);
	npurt_graph_destroy(g);
}

TEST(builder_refusals_say_why)
{
	npurt_graph *g;
	npurt_graph_node n;
	uint32_t x, y, t, f;

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 4, 8 }, &x));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "y", NPURT_F32, 2, (uint64_t[]){ 8, 4 }, &y));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_input(g, "x", NPURT_F32, 1, (uint64_t[]){ 4 }, &t));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "taken"));
	n = node("add", x, y);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add(g, &n, &t));
	/* The op library's rule, the device's own, with the tensors it is about. */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_graph_add(add): input and output shapes "
			       "differ (in0 f32 [4, 8], in1 f32 [8, 4], out f32 [4, 8])"))
		TH_LOG("%s", npurt_last_error());
	n = node("gemm", y, y);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add(g, &n, &t));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_graph_add(gemm): GEMM shapes do not agree"))
		TH_LOG("%s", npurt_last_error());
	n = node("relu", x, 0);
	n.stream = NPURT_GRAPH_MAX_STREAMS;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add(g, &n, &t));
	n = node("relu", 77, 0);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add(g, &n, &t));
	ASSERT_EQ(NPURT_OK, npurt_graph_tensor(g, "f", NPURT_F32, 2, (uint64_t[]){ 4, 8 }, &f));
	n = node("relu", f, 0);		/* nothing wrote f */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add(g, &n, &t));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "before anything writes it"));
	n = node("relu", f, 0);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add_into(g, &n, x));	/* an input */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "an input"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_output(g, f, "f"));	/* never written */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_view(g, x, 30, 1, (uint64_t[]){ 4 },
						      (uint64_t[]){ 1 }, &t));
	/* Not a model yet: no output. */
	{
		void *data;
		size_t len;

		EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_serialize(g, &data, &len, NULL));
		EXPECT_NE(NULL, strstr(npurt_last_error(), "no ops"));
	}
	npurt_graph_destroy(g);
}

/* Every prefix of a file, and every single flipped byte, is refused. */
TEST(truncated_and_corrupted_files_are_refused)
{
	npurt_graph *g = mlp(2, 8);
	struct mf_model m;
	char why[256];
	uint8_t *data;
	size_t len;

	ASSERT_NE(NULL, g);
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, (void **)&data, &len, NULL));
	for (size_t n = 0; n < len; n++) {
		why[0] = 0;
		ASSERT_EQ(EINVAL, mf_parse(data, n, &m, why, sizeof(why))) TH_LOG("%zu bytes", n);
		ASSERT_NE(0, why[0]);
	}
	for (size_t i = 0; i < len; i++) {
		data[i] ^= 0x40;
		ASSERT_EQ(EINVAL, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("byte %zu", i);
		data[i] ^= 0x40;
	}
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why)));
	mf_free(&m);
	free(data);
	npurt_graph_destroy(g);
}

/*
 * Models that are consistent files but wrong models: each made from a
 * good one, written back (checksums right) and refused with the reason.
 */
TEST(inconsistent_models_are_refused)
{
	static const struct {
		const char *what, *reason;
	} cases[] = {
		{ "unknown op", "unknown op" },
		{ "two live tensors in one place", "same bytes" },
		{ "a view past its base", "runs past" },
		{ "a tensor past the plan", "outside the feature-map plan" },
		{ "a weight written", "a weight" },
		{ "an event waited twice", "twice" },
		{ "a cycle", "for ever" },
		{ "a stream without ops", "follow the previous" },
		{ "an unknown dtype", "dtype" },
		{ "a name out of the strings", "name outside" },
		{ "oversized", "oversized" },
		{ "a newer major version", "version" },
		{ "a bias of the wrong shape", "epilogue's bias" },
		{ "an epilogue act that is no unary op", "not an f32 unary op" },
		{ "a bias without its flag", "epilogue fields set" },
		{ "an epilogue on a unary op", "an epilogue takes" },
	};
	static float w[8 * 8];
	npurt_graph *g;
	npurt_graph_node n;
	uint32_t x, c, a, b, d;

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 8, 8 }, &x));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ 8, 8 }, w, &c));
	n = node("gemm", x, c);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &a));
	n = node("relu", x, 0);
	n.stream = 1;
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &b));
	n = node("add", a, b);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &d));
	ASSERT_EQ(NPURT_OK, npurt_graph_output(g, d, "d"));

	for (unsigned int k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct mf_model m, back;
		char why[256] = "";
		void *data, *bad;
		size_t len, blen;

		ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &data, &len, NULL));
		ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
		switch (k) {
		case 0: m.ops[0].kernel = 999; break;
		case 1: m.tensors[b].offset = m.tensors[a].offset; break;
		case 2: {
			/* One more tensor: a view past x's end. */
			struct npum_tensor *v;

			m.tensors = realloc(m.tensors, (m.ntensors + 1) * sizeof(*m.tensors));
			ASSERT_NE(NULL, m.tensors);
			v = &m.tensors[m.ntensors++];
			*v = m.tensors[x];
			v->segment = NPUM_SEG_VIEW;
			v->base = x;
			v->name = 0;
			v->offset = 64;
			break;
		}
		case 3: m.tensors[a].offset = m.plan.fmap_bytes; break;
		case 4: m.ops[0].out = c; break;
		case 5: {
			/* Stream 1's signal becomes a second wait. */
			struct npum_op *sig = &m.ops[m.streams[1].first_op + 1];

			sig->type = NPUM_OP_WAIT;
			break;
		}
		case 6:
			/*
			 * Stream 0: wait e0, signal e1, add; stream 1: wait e1,
			 * signal e0. Each waits for what the other does after its
			 * own wait.
			 */
			m.plan.events = 2;
			m.ops[0] = (struct npum_op){ .type = NPUM_OP_WAIT, .event = 0,
						     .in = { NPUM_NONE, NPUM_NONE }, .out = NPUM_NONE };
			m.ops[1] = (struct npum_op){ .type = NPUM_OP_SIGNAL, .event = 1,
						     .in = { NPUM_NONE, NPUM_NONE }, .out = NPUM_NONE };
			m.ops[m.streams[1].first_op] = m.ops[0];
			m.ops[m.streams[1].first_op].event = 1;
			break;
		case 7: m.streams[1].op_count = 0; break;
		case 8: m.tensors[x].dtype = 99; break;
		case 9: m.tensors[a].name = (uint32_t)m.strings_len; break;
		case 10: m.tensors[x].shape[0] = 1ull << 40; break;
		case 11: break;
		case 12: m.ops[0].epi_flags = NPU_OP_E_BIAS, m.ops[0].bias = c; break;
		case 13: m.ops[0].act = NPU_OP_ADD; break;
		case 14: m.ops[0].bias = c; break;
		case 15: m.ops[m.streams[1].first_op].act = NPU_OP_RELU; break;
		}
		ASSERT_EQ(0, mf_serialize(&m, &bad, &blen));
		if (k == 11) {
			struct npum_header *h = bad;

			h->major = NPUM_MAJOR + 1;
			h->header_crc = 0;
			h->header_crc = mf_crc32(h, sizeof(*h));
		}
		why[0] = 0;
		EXPECT_EQ(EINVAL, mf_parse(bad, blen, &back, why, sizeof(why))) TH_LOG("%s", cases[k].what);
		EXPECT_NE(NULL, strstr(why, cases[k].reason)) TH_LOG("%s: \"%s\"", cases[k].what, why);
		mf_free(&m);
		free(bad);
		free(data);
	}
	npurt_graph_destroy(g);
}

/*
 * GEMM + bias + RELU as one op, through the builder and back; and the same
 * file as format 1.0 wrote it (records without the epilogue) reads as the
 * ops without one.
 */
/*
 * Rewrite a file in place as format 1.`minor` (0 or 1) wrote it: its op
 * records cut to that format's size, its tensor records (when it is 1.2)
 * to 4 dimensions, what that frees at each section's end zeroed.
 */
static void downgrade(void *data, unsigned int minor)
{
	struct npum_header *h = data;
	struct npum_section *tab = (struct npum_section *)((uint8_t *)data + h->section_offset);

	for (uint32_t i = 0; i < h->section_count; i++) {
		struct npum_section *sec = &tab[i];
		uint8_t *p = (uint8_t *)data + sec->offset;
		size_t from = sec->count ? sec->size / sec->count : 0, to = from;

		if (sec->type == NPUM_SEC_OPS)
			to = minor ? NPUM_OP_V11_SIZE : NPUM_OP_V10_SIZE;
		else if (sec->type == NPUM_SEC_TENSORS)
			to = NPUM_TENSOR_V11_SIZE;
		if (!sec->count || to == from)
			continue;
		for (uint32_t r = 0; r < sec->count; r++) {
			uint8_t rec[sizeof(struct npum_tensor) + sizeof(struct npum_op)];

			memcpy(rec, p + r * from, from);
			if (sec->type == NPUM_SEC_TENSORS)	/* shape[0..3], then stride[0..3] */
				memmove(rec + NPUM_TENSOR_HEAD + 32, rec + NPUM_TENSOR_HEAD + 64, 32);
			memcpy(p + r * to, rec, to);
		}
		memset(p + sec->count * to, 0, sec->size - sec->count * to);
		sec->size = sec->count * to;
		sec->crc = mf_crc32(p, sec->size);
	}
	h->table_crc = mf_crc32(tab, h->section_count * sizeof(*tab));
	h->minor = (uint16_t)minor;
	h->header_crc = 0;
	h->header_crc = mf_crc32(h, sizeof(*h));
}

TEST(epilogues_round_trip_and_formats_1_0_and_1_1_still_read)
{
	static float w[8 * 8], bias[8];
	npurt_graph *g;
	npurt_graph_node n;
	struct mf_model m;
	uint32_t x, c, b, y;
	char why[256] = "";
	void *data;
	size_t len;

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 4, 8 }, &x));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ 8, 8 }, w, &c));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "b", NPURT_F32, 1, (uint64_t[]){ 8 }, bias, &b));
	n = node("gemm", x, c);
	n.epi = (npurt_epilogue){ .flags = NPURT_EPILOGUE_BIAS, .bias = b, .act = op_id("relu") };
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y)) TH_LOG("%s", npurt_last_error());
	/* a bias of the wrong length is refused by name */
	n.epi.bias = c;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_add(g, &n, &y));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "bias"));
	ASSERT_EQ(NPURT_OK, npurt_graph_output(g, y, "y"));
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &data, &len, NULL));
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(1, m.nops);
	EXPECT_EQ(NPU_OP_E_BIAS, m.ops[0].epi_flags);
	EXPECT_EQ(b, m.ops[0].bias);
	EXPECT_EQ(NPU_OP_RELU, m.ops[0].act);
	mf_free(&m);

	/* As 1.1 wrote it: tensors of 4 dimensions, ops without perm_hi. */
	ASSERT_EQ(NPUM_MINOR, ((struct npum_header *)data)->minor);
	downgrade(data, 1);
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(NPU_OP_E_BIAS, m.ops[0].epi_flags);
	EXPECT_EQ(b, m.ops[0].bias);
	EXPECT_EQ(8, m.tensors[m.ops[0].out].shape[1]);
	EXPECT_EQ(1, m.tensors[m.ops[0].out].stride[1]);
	mf_free(&m);
	/* And as 1.0: each op record cut at `bias` too. */
	downgrade(data, 0);
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(NPU_OP_GEMM, m.ops[0].kernel);
	EXPECT_EQ(0, m.ops[0].epi_flags);
	EXPECT_EQ(0, m.ops[0].act);
	EXPECT_EQ(NPUM_NONE, npum_op_read(&m.ops[0], 2));
	mf_free(&m);
	free(data);
	npurt_graph_destroy(g);
}

/* Views: a 3x3 convolution made of GEMMs over shifted views of its input. */
TEST(views_and_accumulation_make_a_convolution)
{
	enum { C = 2, H = 6, W = 6, K = 3, OH = H - 2, OW = W - 2 };
	static float wt[9][K * C];
	npurt_graph *g;
	uint32_t x, out, wv[9];
	struct mf_model m;
	char why[256] = "";
	void *data;
	size_t len;

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 3, (uint64_t[]){ C, H, W }, &x));
	ASSERT_EQ(NPURT_OK, npurt_graph_tensor(g, "conv", NPURT_F32, 3, (uint64_t[]){ K, OH, OW },
						&out));
	ASSERT_EQ(NPURT_OK, npurt_graph_fill(g, 0, out, 0));
	for (int t = 0; t < 9; t++)
		ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, NULL, NPURT_F32, 2,
							  (uint64_t[]){ K, C }, wt[t], &wv[t]));
	for (int y = 0; y < OH; y++) {
		uint32_t ov;

		ASSERT_EQ(NPURT_OK, npurt_graph_view(g, out, (uint64_t)y * OW, 2,
						      (uint64_t[]){ K, OW },
						      (uint64_t[]){ OH * OW, 1 }, &ov));
		for (int t = 0; t < 9; t++) {
			npurt_graph_node n = node("gemm", wv[t], 0);
			uint32_t xv;

			ASSERT_EQ(NPURT_OK, npurt_graph_view(g, x, (uint64_t)(y + t / 3) * W + t % 3,
							      2, (uint64_t[]){ C, OW },
							      (uint64_t[]){ H * W, 1 }, &xv));
			n.in[1] = xv;
			n.beta = 1.0f;
			ASSERT_EQ(NPURT_OK, npurt_graph_add_into(g, &n, ov)) TH_LOG("%s",
										npurt_last_error());
		}
	}
	ASSERT_EQ(NPURT_OK, npurt_graph_output(g, out, "conv"));
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &data, &len, NULL)) TH_LOG("%s",
									       npurt_last_error());
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(1 + 9 * OH, m.nops);
	mf_free(&m);
	free(data);
	npurt_graph_destroy(g);
}

/*
 * Constant GEMM weights leave the builder packed in panels (graph_pack.c):
 * one copy per B however many GEMMs read it, transposed ones as read, a
 * constant another op reads kept as it was too, a B of a few columns not
 * packed; and the graph keeps what was built (a second file is the same).
 */
TEST(constant_gemm_weights_leave_the_builder_in_panels)
{
	static float w[64 * 96], v[64 * 64], s[64 * 3], u[96 * 64];
	uint32_t x, tw, tv, ts, tu, y[6];
	npurt_graph_node n;
	npurt_graph *g;
	struct mf_model m;
	char why[256] = "";
	void *data, *again;
	size_t len, len2;

	for (size_t i = 0; i < 64 * 96; i++)
		w[i] = (float)i, u[i] = -(float)i;
	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ 64, 64 }, &x));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ 64, 96 }, w,
						 &tw));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "v", NPURT_F32, 2, (uint64_t[]){ 64, 64 }, v,
						 &tv));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "s", NPURT_F32, 2, (uint64_t[]){ 64, 3 }, s,
						 &ts));
	ASSERT_EQ(NPURT_OK, npurt_graph_constant(g, "u", NPURT_F32, 2, (uint64_t[]){ 96, 64 }, u,
						 &tu));
	n = node("gemm", x, tw);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y[0]));
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y[1]));
	n = node("gemm", x, tv);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y[2]));
	n = node("add", x, tv);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y[3]));
	n = node("gemm", x, ts);
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y[4]));
	n = node("gemm", x, tu);
	n.flags = NPURT_LAUNCH_TRANS_B;
	ASSERT_EQ(NPURT_OK, npurt_graph_add(g, &n, &y[5]));
	for (int k = 0; k < 6; k++)
		ASSERT_EQ(NPURT_OK, npurt_graph_output(g, y[k], (const char *[]){ "a", "b", "c", "d",
										     "e", "f" }[k]));
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &data, &len, NULL)) TH_LOG("%s",
										 npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_graph_serialize(g, &again, &len2, NULL));
	ASSERT_EQ(len, len2);
	EXPECT_EQ(0, memcmp(data, again, len));
	ASSERT_EQ(0, mf_parse(data, len, &m, why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_EQ(6, m.nops);
	for (int i = 0; i < 6; i++) {
		const struct npum_op *op = &m.ops[i];
		const struct npum_tensor *b = &m.tensors[op->in[1]];
		bool panels = op->flags & NPU_OP_F_B_PANELS;

		/* Ops in order: w, w, v, add, s, u. */
		EXPECT_EQ(i != 3 && i != 4, panels) TH_LOG("op %d", i);
		if (!panels)
			continue;
		EXPECT_EQ(0u, op->flags & NPU_OP_F_TRANS_B);
		EXPECT_EQ(3, b->ndim);
		EXPECT_EQ(64u, b->shape[0]);
		EXPECT_EQ(32u, b->shape[2]);
		EXPECT_EQ(64u * 32, b->stride[1]);
		EXPECT_EQ(NPUM_SEG_WEIGHTS, b->segment);
	}
	EXPECT_EQ(m.ops[0].in[1], m.ops[1].in[1]);
	EXPECT_EQ(3u, m.tensors[m.ops[0].in[1]].shape[1]);
	EXPECT_EQ(2u, m.tensors[m.ops[2].in[1]].shape[1]);
	EXPECT_EQ(2, m.tensors[m.ops[3].in[1]].ndim);	/* the add's v, as it was */
	EXPECT_EQ(2, m.tensors[m.ops[4].in[1]].ndim);
	/* w's row 5, column 70: panel 2, its column 6; u's is u[70][5], transposed. */
	EXPECT_EQ(w[5 * 96 + 70], ((float *)(m.weights + m.tensors[m.ops[0].in[1]].offset))
				  [2 * 64 * 32 + 5 * 32 + 6]);
	EXPECT_EQ(u[70 * 64 + 5], ((float *)(m.weights + m.tensors[m.ops[5].in[1]].offset))
				  [2 * 64 * 32 + 5 * 32 + 6]);
	/* w and u as they were are gone: panels of w, v twice, s (padded to 64), panels of u. */
	EXPECT_EQ(64 * 96 * 4 + 2 * 64 * 64 * 4 + 768 + 64 * 96 * 4, m.plan.weights_bytes);
	/* A reader refuses panels in any other layout, or read transposed. */
	for (int k = 0; k < 3; k++) {
		struct mf_model bad = m, back;
		struct npum_tensor *t = malloc(m.ntensors * sizeof(*t));
		struct npum_op *ops = malloc(m.nops * sizeof(*ops));
		void *file;
		size_t flen;

		memcpy(t, m.tensors, m.ntensors * sizeof(*t));
		memcpy(ops, m.ops, m.nops * sizeof(*ops));
		bad.tensors = t, bad.ops = ops;
		if (k == 0)
			t[ops[0].in[1]].stride[1] = 64 * 16;
		else if (k == 1)
			ops[2].flags |= NPU_OP_F_TRANS_B;
		else
			ops[4].flags |= NPU_OP_F_B_PANELS;	/* a plain 2-D B */
		ASSERT_EQ(0, mf_serialize(&bad, &file, &flen));
		why[0] = 0;
		EXPECT_EQ(EINVAL, mf_parse(file, flen, &back, why, sizeof(why))) TH_LOG("case %d", k);
		EXPECT_NE(NULL, strstr(why, k ? "panels" : "span")) TH_LOG("case %d: %s", k, why);
		free(file), free(t), free(ops);
	}
	mf_free(&m);
	free(data);
	free(again);
	npurt_graph_destroy(g);
}

TEST_HARNESS_MAIN
