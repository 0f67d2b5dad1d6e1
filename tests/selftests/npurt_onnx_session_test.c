// SPDX-License-Identifier: MIT
/*
 * Sessions (npuonnx.h): ONNX models run at the shapes their inputs come
 * in, on the device. A transformer encoder block exported with a symbolic
 * batch and sequence length (tests/onnx/make_models.py, transformer_dyn)
 * runs at five shapes and matches numpy at each; the plan cache hits on a
 * shape seen before, keeps plans by last use within its count and byte
 * limit, and counts what it did; bad inputs are refused naming the input,
 * with nothing lowered; a model the device cannot run fails at its first
 * run naming the node; a model whose shapes wait for values it computes
 * (NonZero, a computed TopK k) runs in stages, each cached by its shapes
 * and values; nothing is left in device memory.
 */
#include <math.h>
#include <stddef.h>

#include "kselftest_harness.h"
#include "npu_onnx_files.h"
#include "npu_selftest.h"
#include "npuonnx.h"

#define D 64

static const uint32_t shapes[5][2] = { { 1, 8 }, { 1, 16 }, { 2, 24 }, { 1, 48 }, { 1, 100 } };

FIXTURE(session) {
	npurt_device *dev;
	uint64_t hbm_before;
	void *x[5], *want[5];
	char path[PATH_MAX];
};

FIXTURE_SETUP(session)
{
	self->hbm_before = npu_hbm_buffers();
	ASSERT_NE(~0ull, self->hbm_before);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < 5; i++) {
		char p[PATH_MAX];
		size_t len = 0;

		snprintf(p, sizeof(p), "%s/transformer_dyn.%ux%u.in", models_dir(), shapes[i][0],
			 shapes[i][1]);
		self->x[i] = read_all(p, &len);
		ASSERT_EQ((size_t)shapes[i][0] * shapes[i][1] * D * 4, len) TH_LOG("%s", p);
		snprintf(p, sizeof(p), "%s/transformer_dyn.%ux%u.out", models_dir(), shapes[i][0],
			 shapes[i][1]);
		self->want[i] = read_all(p, &len);
		ASSERT_EQ((size_t)shapes[i][0] * shapes[i][1] * D * 4, len) TH_LOG("%s", p);
	}
	snprintf(self->path, sizeof(self->path), "%s/transformer_dyn.onnx", models_dir());
}

FIXTURE_TEARDOWN(session)
{
	for (int i = 0; i < 5; i++) {
		free(self->x[i]);
		free(self->want[i]);
	}
	npurt_device_close(self->dev);
	EXPECT_EQ(self->hbm_before, npu_hbm_buffers_settle(self->hbm_before));
}

static npurt_value input_at(FIXTURE_DATA(session) *self, int i)
{
	npurt_value v = { .dtype = NPURT_F32, .ndim = 3, .data = self->x[i],
			  .shape = { shapes[i][0], shapes[i][1], D } };

	v.bytes = v.shape[0] * v.shape[1] * D * 4;
	return v;
}

/* Run at shape i and compare with numpy: within 1e-3 of the largest value. */
static void run_at(struct __test_metadata *_metadata, FIXTURE_DATA(session) *self,
		   npurt_onnx_session *s, int i)
{
	npurt_value in = input_at(self, i), out;
	const float *want = self->want[i];
	double err = 0, big = 0;

	ASSERT_EQ(NPURT_OK, npurt_onnx_session_run(s, &in, 1, &out, 1))
		TH_LOG("%ux%u: %s", shapes[i][0], shapes[i][1], npurt_last_error());
	ASSERT_EQ(NPURT_F32, out.dtype);
	ASSERT_EQ(3, out.ndim);
	ASSERT_EQ(shapes[i][0], out.shape[0]);
	ASSERT_EQ(shapes[i][1], out.shape[1]);
	ASSERT_EQ(D, out.shape[2]);
	ASSERT_EQ(in.bytes, out.bytes);
	for (size_t k = 0; k < out.bytes / 4; k++) {
		double d = fabs(((const float *)out.data)[k] - want[k]);

		err = d > err || isnan(d) ? d : err;
		big = fabs(want[k]) > big ? fabs(want[k]) : big;
	}
	EXPECT_LE(err, 1e-3 * (big > 1 ? big : 1))
		TH_LOG("%ux%u: largest difference %.3g, values up to %.3g", shapes[i][0],
		       shapes[i][1], err, big);
}

static npurt_onnx_session_stats stats_of(struct __test_metadata *_metadata,
					 npurt_onnx_session *s)
{
	npurt_onnx_session_stats st = { .size = sizeof(st) };

	EXPECT_EQ(NPURT_OK, npurt_onnx_session_stats_get(s, &st));
	return st;
}

TEST_F(session, a_transformer_runs_at_five_shapes_and_matches_numpy_at_each)
{
	npurt_io_info io = { .size = sizeof(io) };
	npurt_onnx_session *s;
	npurt_onnx_session_stats st;
	uint32_t ni, no;

	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, self->path, NULL, &s))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_counts(s, &ni, &no));
	EXPECT_EQ(1, ni);
	EXPECT_EQ(1, no);
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_io(s, 0, &io));
	EXPECT_STREQ("x", io.name);
	EXPECT_FALSE(io.output);
	EXPECT_EQ(3, io.ndim);
	EXPECT_EQ(0, io.shape[0]);	/* "batch" */
	EXPECT_EQ(0, io.shape[1]);	/* "seq" */
	EXPECT_EQ(D, io.shape[2]);
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_io(s, 1, &io));
	EXPECT_TRUE(io.output);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 5; i++)
			run_at(_metadata, self, s, i);
	st = stats_of(_metadata, s);
	EXPECT_EQ(10, st.runs);
	EXPECT_EQ(5, st.misses);
	EXPECT_EQ(5, st.hits);
	EXPECT_EQ(0, st.evictions);
	EXPECT_EQ(5, st.plans);
	EXPECT_GT(st.bytes, 5 * 200000);	/* each plan holds its weights */
	EXPECT_GT(st.lower_ns, 0);
	npurt_onnx_session_destroy(s);
}

TEST_F(session, the_cache_drops_the_least_recently_used_plan_at_its_count)
{
	npurt_onnx_session_desc d = { .size = sizeof(d), .max_plans = 2 };
	npurt_onnx_session *s;
	npurt_onnx_session_stats st;
	static const int order[] = { 0, 1, 0, 2, 0 };

	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, self->path, &d, &s));
	/* 0 1 0: a hit; 2 drops 1 (used before 0), so 0 hits again. */
	for (unsigned int k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		run_at(_metadata, self, s, order[k]);
	st = stats_of(_metadata, s);
	EXPECT_EQ(3, st.misses);
	EXPECT_EQ(2, st.hits);
	EXPECT_EQ(1, st.evictions);
	/* And 1 comes back, dropping 2. */
	run_at(_metadata, self, s, 1);
	st = stats_of(_metadata, s);
	EXPECT_EQ(4, st.misses);
	EXPECT_EQ(2, st.hits);
	EXPECT_EQ(2, st.evictions);
	EXPECT_EQ(2, st.plans);
	run_at(_metadata, self, s, 0);
	EXPECT_EQ(3, stats_of(_metadata, s).hits);
	npurt_onnx_session_destroy(s);
}

TEST_F(session, the_cache_stays_within_its_byte_limit_but_keeps_the_plan_it_runs)
{
	npurt_onnx_session_desc d = { .size = sizeof(d), .max_bytes = 1 };
	npurt_onnx_session *s;
	npurt_onnx_session_stats st;

	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, self->path, &d, &s));
	run_at(_metadata, self, s, 0);
	run_at(_metadata, self, s, 0);
	run_at(_metadata, self, s, 3);
	run_at(_metadata, self, s, 0);
	st = stats_of(_metadata, s);
	EXPECT_EQ(1, st.plans);
	EXPECT_EQ(3, st.misses);
	EXPECT_EQ(1, st.hits);
	EXPECT_EQ(2, st.evictions);
	npurt_onnx_session_destroy(s);
}

TEST_F(session, bad_inputs_are_refused_naming_the_input_with_nothing_lowered)
{
	npurt_onnx_session *s;
	npurt_onnx_session_stats st;
	npurt_value in, out[2];

	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, self->path, NULL, &s));
	in = input_at(self, 0);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 0, out, 1));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 2));
	in.dtype = NPURT_F16;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 1));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "\"x\"")) TH_LOG("%s", npurt_last_error());
	in = input_at(self, 0);
	in.ndim = 2;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 1));
	in = input_at(self, 0);
	in.shape[2] = D - 1;		/* the file's fixed dimension */
	in.bytes = in.shape[0] * in.shape[1] * in.shape[2] * 4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 1));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "dimension 2 is 63")) TH_LOG("%s",
									     npurt_last_error());
	in = input_at(self, 0);
	in.bytes -= 4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 1));
	in = input_at(self, 0);
	in.shape[1] = 0;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 1));
	in = input_at(self, 0);
	in.data = NULL;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(s, &in, 1, out, 1));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_run(NULL, &in, 1, out, 1));
	st = stats_of(_metadata, s);
	EXPECT_EQ(0, st.misses);
	EXPECT_EQ(0, st.plans);
	EXPECT_EQ(0, st.runs);
	/* And the session works after. */
	run_at(_metadata, self, s, 1);
	npurt_onnx_session_destroy(s);
}

TEST_F(session, a_model_the_device_cannot_run_fails_its_first_run_naming_the_node)
{
	npurt_value in = { .dtype = NPURT_F32, .ndim = 2, .shape = { 2, 8 } }, out[2];
	npurt_onnx_session *s;
	char p[PATH_MAX];
	float x[16] = { 0 };

	snprintf(p, sizeof(p), "%s/unsupported.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, NULL, &s))
		TH_LOG("%s", npurt_last_error());
	in.data = x;
	in.bytes = sizeof(x);
	EXPECT_EQ(NPURT_ERR_UNSUPPORTED, npurt_onnx_session_run(s, &in, 1, out, 2));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "Unique")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0, stats_of(_metadata, s).plans);
	npurt_onnx_session_destroy(s);
}

TEST_F(session, an_input_pinned_by_value_is_no_input_of_the_session)
{
	const char *values[] = { "sr=16000" };
	npurt_onnx_options o = { .size = sizeof(o), .n_values = 1, .values = values };
	npurt_onnx_session_desc d = { .size = sizeof(d), .opts = &o };
	npurt_value in = { .dtype = NPURT_F32, .ndim = 2, .shape = { 2, 3 } }, out;
	float x[6] = { -1, 2, -3, 4, -5, 6 };
	npurt_onnx_session *s;
	uint32_t ni;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/pinned_value.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, &d, &s))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_counts(s, &ni, NULL));
	EXPECT_EQ(1, ni);
	in.data = x;
	in.bytes = sizeof(x);
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_run(s, &in, 1, &out, 1))
		TH_LOG("%s", npurt_last_error());
	for (int k = 0; k < 6; k++)
		EXPECT_EQ(x[k] > 0 ? x[k] : 0, ((const float *)out.data)[k]);
	npurt_onnx_session_destroy(s);
}

TEST_F(session, bad_files_and_options_are_refused_at_create)
{
	const char *shape[] = { "x=1x8x64" };
	npurt_onnx_options o = { .size = sizeof(o), .n_shapes = 1, .shapes = shape };
	npurt_onnx_session_desc d = { .size = sizeof(d), .opts = &o };
	static const char junk[] = "this is no ONNX model, only text";
	npurt_onnx_session *s = NULL;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_create_file(self->dev, self->path, &d, &s));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "shapes"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_create(self->dev, junk, sizeof(junk), NULL,
							       &s));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_create(NULL, junk, sizeof(junk), NULL, &s));
	d.opts = NULL;
	d.size = 4;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_create_file(self->dev, self->path, &d, &s));
	EXPECT_EQ(NPURT_ERR_INVALID,
		  npurt_onnx_session_create_file(self->dev, NULL, NULL, &s));
	EXPECT_NE(NPURT_OK, npurt_onnx_session_create_file(self->dev, "/nonexistent.onnx", NULL,
							   &s));
	EXPECT_EQ(NULL, s);
	npurt_onnx_session_destroy(NULL);
}

/* data_dependent's inputs and what it gives: y = 2 x[x > 0], its top min(k, |y|). */
struct dd_run {
	uint32_t n;
	float x[12];
	int64_t k;
};

static void dd_check(struct __test_metadata *_metadata, npurt_onnx_session *s,
		     const struct dd_run *r)
{
	npurt_value in[2] = {
		{ .dtype = NPURT_F32, .ndim = 1, .shape = { r->n }, .data = (void *)r->x,
		  .bytes = r->n * 4 },
		{ .dtype = NPURT_I64, .ndim = 1, .shape = { 1 }, .data = (void *)&r->k, .bytes = 8 },
	}, out[3];
	float want[12];
	uint32_t m = 0, kk;
	bool taken[12] = { false };

	for (uint32_t i = 0; i < r->n; i++)
		if (r->x[i] > 0)
			want[m++] = 2 * r->x[i];
	kk = r->k < m ? (uint32_t)r->k : m;
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_run(s, in, 2, out, 3))
		TH_LOG("n %u, k %lld: %s", r->n, (long long)r->k, npurt_last_error());
	ASSERT_EQ(1, out[0].ndim);
	ASSERT_EQ(m, out[0].shape[0]);
	for (uint32_t i = 0; i < m; i++) {
		EXPECT_EQ(want[i], ((const float *)out[0].data)[i]) TH_LOG("picked[%u]", i);
	}
	ASSERT_EQ(NPURT_F32, out[1].dtype);
	ASSERT_EQ(kk, out[1].shape[0]);
	ASSERT_EQ(NPURT_I64, out[2].dtype);
	ASSERT_EQ(kk, out[2].shape[0]);
	/* The largest first, each index naming its value. */
	for (uint32_t j = 0; j < kk; j++) {
		int64_t at = ((const int64_t *)out[2].data)[j];
		float v = ((const float *)out[1].data)[j];
		uint32_t best = UINT32_MAX;

		for (uint32_t i = 0; i < m; i++)
			if (!taken[i] && (best == UINT32_MAX || want[i] > want[best]))
				best = i;
		taken[best] = true;
		EXPECT_EQ(want[best], v) TH_LOG("top[%u] of n %u, k %lld", j, r->n, (long long)r->k);
		EXPECT_EQ((int64_t)best, at) TH_LOG("top_i[%u]", j);
	}
}

TEST_F(session, a_model_whose_shapes_wait_for_its_values_runs_in_stages)
{
	static const struct dd_run runs[] = {
		/* 5 positives of 10, k 3 */
		{ 10, { 0.5f, -1, 3, -0.f, 2.25f, -7, 9, 1.5f, -2, 0 }, 3 },
		/* the same shapes, 3 positives: the middle stage gets a new plan */
		{ 10, { -0.5f, 1, -3, 4, -2.25f, -7, -9, 6.5f, -2, 0 }, 3 },
		/* 5 positives again, k 2: the TopK stage is keyed by k */
		{ 10, { 4, 8, -1, -1, 16, -1, 2, -1, 1, -1 }, 2 },
		/* k over the count: min() clips it */
		{ 12, { 1, -1, 2, -2, 3, -3, 0, 0, 0, 0, 0, 0 }, 9 },
		/* the first again: every stage hits */
		{ 10, { 0.5f, -1, 3, -0.f, 2.25f, -7, 9, 1.5f, -2, 0 }, 3 },
	};
	npurt_onnx_session *s;
	npurt_onnx_session_stats st;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/data_dependent.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, NULL, &s))
		TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < 5; i++)
		dd_check(_metadata, s, &runs[i]);
	st = stats_of(_metadata, s);
	EXPECT_EQ(5, st.runs);
	/* Two waits a run: after the first stage (NonZero) and after the second (k). */
	EXPECT_EQ(10, st.syncs);
	/*
	 * Plans: stage 1 at n 10 and n 12; stage 2 at (10, 5 positives),
	 * (10, 3), (12, 3); stage 3 at (5, k 3), (3, k 3), (5, k 2), and
	 * the fourth run's k 9 clipped to 3 finds (3, k 3): 8 misses, the
	 * rest hits. Eight plans hold more hardware queues than the device
	 * has, so loads evict plans too: a plan evicted and needed again is
	 * a miss more.
	 */
	EXPECT_LE(8, st.misses);
	EXPECT_GE(st.evictions, st.misses - 8);
	EXPECT_EQ(15, st.hits + st.misses);
	/* A caller built before `syncs` existed gets the fields it knows, no more. */
	st = (npurt_onnx_session_stats){ .size = offsetof(npurt_onnx_session_stats, syncs),
					 .syncs = 77 };
	EXPECT_EQ(NPURT_OK, npurt_onnx_session_stats_get(s, &st));
	EXPECT_EQ(5, st.runs);
	EXPECT_EQ(77, st.syncs);
	st.size--;
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_onnx_session_stats_get(s, &st));
	npurt_onnx_session_destroy(s);
}

TEST_F(session, a_stage_that_would_get_an_empty_tensor_fails_naming_the_node)
{
	static const struct dd_run none = { 4, { -1, -2, 0, -3 }, 2 }, some = { 4, { -1, 2, 0, 3 }, 1 };
	npurt_value in[2] = {
		{ .dtype = NPURT_F32, .ndim = 1, .shape = { 4 }, .data = (void *)none.x, .bytes = 16 },
		{ .dtype = NPURT_I64, .ndim = 1, .shape = { 1 }, .data = (void *)&none.k, .bytes = 8 },
	}, out[3];
	npurt_onnx_session *s;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/data_dependent.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, NULL, &s))
		TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_UNSUPPORTED, npurt_onnx_session_run(s, in, 2, out, 3));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "\"where\" (NonZero)"))
		TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0, stats_of(_metadata, s).runs);
	/* And the session runs after. */
	dd_check(_metadata, s, &some);
	npurt_onnx_session_destroy(s);
}

/* Device memory the runtime has handed out (plans take theirs from its cache). */
static uint64_t in_use(struct __test_metadata *_metadata, npurt_device *dev)
{
	npurt_mem_usage u = { .size = sizeof(u) };

	EXPECT_EQ(NPURT_OK, npurt_mem_get_usage(dev, &u));
	return u.cache_in_use;
}

TEST_F(session, a_run_keeps_each_stage_plan_it_uses_past_the_cache_limit)
{
	static const struct dd_run a = { 6, { 1, -2, 3, -4, 5, -6 }, 2 },
				   b = { 6, { -1, 2, -3, 4, 0, -6 }, 1 };
	npurt_onnx_session_desc d = { .size = sizeof(d), .max_plans = 1 };
	npurt_onnx_session *s;
	npurt_onnx_session_stats st;
	uint64_t before;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/data_dependent.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, &d, &s))
		TH_LOG("%s", npurt_last_error());
	/*
	 * A later stage reads what an earlier one left in its plan's memory:
	 * a run keeps every plan it used. The second run hits the first
	 * stage's plan, and its two new plans drop only the first run's
	 * other two.
	 */
	dd_check(_metadata, s, &a);
	st = stats_of(_metadata, s);
	EXPECT_EQ(3, st.plans);
	EXPECT_EQ(0, st.evictions);
	dd_check(_metadata, s, &b);
	st = stats_of(_metadata, s);
	EXPECT_EQ(3, st.plans);
	EXPECT_EQ(2, st.evictions);
	EXPECT_EQ(1, st.hits);
	npurt_onnx_session_destroy(s);
	/* A destroy unloads every plan: their device memory is back before the device closes. */
	before = in_use(_metadata, self->dev);
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, &d, &s));
	dd_check(_metadata, s, &a);
	EXPECT_LT(before, in_use(_metadata, self->dev));
	npurt_onnx_session_destroy(s);
	EXPECT_EQ(before, in_use(_metadata, self->dev));
}

/* NonZero of a constant folds at import: no stage, no wait (it failed: "no input"). */
TEST_F(session, a_nonzero_of_a_constant_is_folded_not_cut)
{
	float x[5] = { 1, 2, 3, 4, 5 }, want[3] = { 4, 6, 10 };
	npurt_value in = { .dtype = NPURT_F32, .ndim = 1, .shape = { 5 }, .data = x,
			   .bytes = sizeof(x) }, out;
	npurt_onnx_session *s;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/nonzero_const.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, NULL, &s))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_run(s, &in, 1, &out, 1))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(3, out.shape[0]);
	EXPECT_EQ(0, memcmp(want, out.data, sizeof(want)));
	EXPECT_EQ(0, stats_of(_metadata, s).syncs);
	npurt_onnx_session_destroy(s);
}

/*
 * An input of no declared shape comes at any rank: the stage before the
 * NonZero is made again for a new rank (it kept the first run's and was
 * refused).
 */
TEST_F(session, a_stage_input_of_any_rank_is_declared_per_rank)
{
	float x1[5] = { -1, 2, 0, 3, -4 }, x2[6] = { 1, -1, 0, 0, 5, 6 };
	static const float want1[2] = { 1, 3 };			/* [1, 2] */
	static const float want2[6] = { 0, 1, 1, 0, 1, 2 };	/* [2, 3]: rows, then columns */
	npurt_value in1 = { .dtype = NPURT_F32, .ndim = 1, .shape = { 5 }, .data = x1,
			    .bytes = sizeof(x1) };
	npurt_value in2 = { .dtype = NPURT_F32, .ndim = 2, .shape = { 2, 3 }, .data = x2,
			    .bytes = sizeof(x2) }, out;
	npurt_onnx_session *s;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/nonzero_any_rank.onnx", models_dir());
	ASSERT_EQ(NPURT_OK, npurt_onnx_session_create_file(self->dev, p, NULL, &s))
		TH_LOG("%s", npurt_last_error());
	for (int r = 0; r < 3; r++) {	/* rank 1, 2, then 1 again */
		npurt_value *in = r == 1 ? &in2 : &in1;
		const float *want = r == 1 ? want2 : want1;

		ASSERT_EQ(NPURT_OK, npurt_onnx_session_run(s, in, 1, &out, 1))
			TH_LOG("rank %u: %s", in->ndim, npurt_last_error());
		ASSERT_EQ(in->ndim, out.shape[0]);
		ASSERT_EQ(r == 1 ? 3u : 2u, out.shape[1]);
		EXPECT_EQ(0, memcmp(want, out.data, out.bytes));
	}
	EXPECT_EQ(3, stats_of(_metadata, s).syncs);
	npurt_onnx_session_destroy(s);
}

TEST_HARNESS_MAIN
