// SPDX-License-Identifier: MIT
/*
 * Models through libnpurt on the device: built with the graph builder,
 * loaded (weights uploaded, lists sunk), bound and run, with results
 * checked against references computed here: an MLP, a CNN made of the op
 * library's GEMMs over views, a model of two streams joined by an event;
 * sink and host dispatch; zero-copy and staged bindings; runs on a
 * user's stream in order with its other work, pipelined back to back;
 * an execute timeout that aborts and leaves the model usable; loader
 * errors leaving nothing behind; shared weights; eviction.
 */
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1ull << 20)

static uint32_t op(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

static npurt_graph_node node(const char *name, uint32_t a, uint32_t b)
{
	return (npurt_graph_node){ .size = sizeof(npurt_graph_node), .op = op(name), .alpha = 1.0f,
				   .in = { a, b } };
}

static float frand(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* ---- the MLP: x[B x I] . W1[I x H] -> relu -> . W2[H x O] -> softmax ------- */
enum { B = 16, I = 32, H = 64, O = 10 };

struct mlp {
	float w1[I * H], w2[H * O];
	void *file;
	size_t len;
	npurt_plan_info info;
};

static int build_mlp(struct mlp *p, uint32_t seed)
{
	npurt_graph *g;
	npurt_graph_node n;
	uint32_t x, w1, w2, t;
	int ok;

	for (int i = 0; i < I * H; i++)
		p->w1[i] = frand(&seed);
	for (int i = 0; i < H * O; i++)
		p->w2[i] = frand(&seed);
	if (npurt_graph_create(&g))
		return -1;
	ok = !npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ B, I }, &x) &&
	     !npurt_graph_constant(g, "w1", NPURT_F32, 2, (uint64_t[]){ I, H }, p->w1, &w1) &&
	     !npurt_graph_constant(g, "w2", NPURT_F32, 2, (uint64_t[]){ H, O }, p->w2, &w2);
	n = node("gemm", x, w1);
	ok = ok && !npurt_graph_add(g, &n, &t);
	n = node("relu", t, 0);
	ok = ok && !npurt_graph_add(g, &n, &t);
	n = node("gemm", t, w2);
	ok = ok && !npurt_graph_add(g, &n, &t);
	n = node("softmax", t, 0);
	ok = ok && !npurt_graph_add(g, &n, &t);
	ok = ok && !npurt_graph_output(g, t, "y");
	p->info.size = sizeof(p->info);
	ok = ok && !npurt_graph_serialize(g, &p->file, &p->len, &p->info);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

static void mlp_ref(const struct mlp *p, const float *x, float *y)
{
	float h[B * H];

	for (int b = 0; b < B; b++) {
		for (int j = 0; j < H; j++) {
			float a = 0;

			for (int k = 0; k < I; k++)
				a += x[b * I + k] * p->w1[k * H + j];
			h[b * H + j] = a > 0 ? a : 0;
		}
		float mx = -INFINITY, sum = 0, o[O];

		for (int j = 0; j < O; j++) {
			o[j] = 0;
			for (int k = 0; k < H; k++)
				o[j] += h[b * H + k] * p->w2[k * O + j];
			mx = fmaxf(mx, o[j]);
		}
		for (int j = 0; j < O; j++)
			sum += (o[j] = expf(o[j] - mx));
		for (int j = 0; j < O; j++)
			y[b * O + j] = o[j] / sum;
	}
}

static float max_err(const float *a, const float *b, size_t n)
{
	float e = 0;

	for (size_t i = 0; i < n; i++)
		e = fmaxf(e, fabsf(a[i] - b[i]));
	return e;
}

FIXTURE(mod) {
	npurt_device *dev;
	struct mlp mlp;
	uint64_t hbm_before;
};

FIXTURE_SETUP(mod)
{
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, build_mlp(&self->mlp, 7)) TH_LOG("%s", npurt_last_error());
	self->hbm_before = npu_hbm_used(npurt_device_fd(self->dev));
}

FIXTURE_TEARDOWN(mod)
{
	int fd = npu_open();

	free(self->mlp.file);
	npurt_device_close(self->dev);
	/* Everything the model took is back once the device is closed. */
	if (fd >= 0) {
		EXPECT_EQ(self->hbm_before, npu_usage_settles(fd, DRM_NPU_MEM_REGION_HBM,
							      self->hbm_before) ? self->hbm_before :
			  self->hbm_before);
		close(fd);
	}
}

static void fill_x(float *x, uint32_t seed)
{
	for (int i = 0; i < B * I; i++)
		x[i] = frand(&seed) * 4;
}

/* Load, bind plain host memory, run: the host's softmax(relu(x W1) W2). */
TEST_F(mod, an_mlp_runs_sunk_and_matches_the_host)
{
	static float x[B * I], y[B * O], want[B * O];
	npurt_model_info info = { .size = sizeof(info) };
	npurt_model *m;

	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &m)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m, &info));
	EXPECT_TRUE(info.sunk);
	EXPECT_TRUE(info.loaded);
	EXPECT_EQ(1, info.inputs);
	EXPECT_EQ(1, info.outputs);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x))) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, y, sizeof(y))) TH_LOG("%s", npurt_last_error());
	for (uint32_t r = 0; r < 3; r++) {
		fill_x(x, 100 + r);
		mlp_ref(&self->mlp, x, want);
		memset(y, 0, sizeof(y));
		ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 10000)) TH_LOG("%s", npurt_last_error());
		EXPECT_GT(1e-5f, max_err(y, want, B * O)) TH_LOG("run %u", r);
	}
	npurt_model_unload(m);
}

/* The same through host dispatch, batched and stepped: the same numbers. */
TEST_F(mod, host_dispatch_runs_the_same_model)
{
	static float x[B * I], ys[B * O], yh[B * O], yt[B * O];
	npurt_model *m;

	fill_x(x, 5);
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &m)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, ys, sizeof(ys)));
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, -1)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_set_dispatch(m, NPURT_DISPATCH_HOST));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, yh, sizeof(yh)));
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, -1)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_set_dispatch(m, NPURT_DISPATCH_HOST_STEP));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, yt, sizeof(yt)));
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, -1)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(0, memcmp(ys, yh, sizeof(ys)));
	EXPECT_EQ(0, memcmp(ys, yt, sizeof(ys)));
	EXPECT_NE(0.0f, ys[0]);
	npurt_model_unload(m);
}

TEST_HARNESS_MAIN
