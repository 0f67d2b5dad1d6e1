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
#include <pthread.h>
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
	/* The device's buffers before this test's handle took anything. */
	self->hbm_before = npu_hbm_buffers();
	ASSERT_NE(~0ull, self->hbm_before);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, build_mlp(&self->mlp, 7)) TH_LOG("%s", npurt_last_error());
}

FIXTURE_TEARDOWN(mod)
{
	free(self->mlp.file);
	npurt_device_close(self->dev);
	/* Everything the test took is back once the device is closed. */
	EXPECT_EQ(self->hbm_before, npu_hbm_buffers_settle(self->hbm_before));
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

/* ---- a CNN of the op library: conv3x3 as GEMMs over views ----------------- */
enum { CC = 3, CH = 10, CW = 10, CK = 4, COH = CH - 2, COW = CW - 2, NCLS = 5 };

struct cnn {
	float wt[9][CK * CC], fc[CK * NCLS];
	void *file;
	size_t len;
};

/* conv3x3 (no padding) -> relu -> global average pool -> fc -> y[1 x NCLS]. */
static int build_cnn(struct cnn *p)
{
	uint32_t seed = 3, x, conv, relu, pooled, fc, w[9], y;
	npurt_graph *g;
	npurt_graph_node n;
	int ok;

	for (int t = 0; t < 9; t++)
		for (int i = 0; i < CK * CC; i++)
			p->wt[t][i] = frand(&seed);
	for (int i = 0; i < CK * NCLS; i++)
		p->fc[i] = frand(&seed);
	if (npurt_graph_create(&g))
		return -1;
	ok = !npurt_graph_input(g, "image", NPURT_F32, 3, (uint64_t[]){ CC, CH, CW }, &x) &&
	     !npurt_graph_tensor(g, "conv", NPURT_F32, 3, (uint64_t[]){ CK, COH, COW }, &conv) &&
	     !npurt_graph_fill(g, 0, conv, 0) &&
	     !npurt_graph_constant(g, "fc", NPURT_F32, 2, (uint64_t[]){ CK, NCLS }, p->fc, &fc);
	for (int t = 0; t < 9 && ok; t++)
		ok = !npurt_graph_constant(g, NULL, NPURT_F32, 2, (uint64_t[]){ CK, CC }, p->wt[t],
					   &w[t]);
	for (int r = 0; r < COH && ok; r++) {
		uint32_t ov;

		ok = !npurt_graph_view(g, conv, (uint64_t)r * COW, 2, (uint64_t[]){ CK, COW },
				       (uint64_t[]){ COH * COW, 1 }, &ov);
		for (int t = 0; t < 9 && ok; t++) {
			uint32_t xv;

			ok = !npurt_graph_view(g, x, (uint64_t)(r + t / 3) * CW + t % 3, 2,
					       (uint64_t[]){ CC, COW }, (uint64_t[]){ CH * CW, 1 }, &xv);
			n = node("gemm", w[t], xv);
			n.beta = 1.0f;
			ok = ok && !npurt_graph_add_into(g, &n, ov);
		}
	}
	n = node("relu", conv, 0);
	ok = ok && !npurt_graph_add(g, &n, &relu);
	/* [K, OH, OW] as [K, OH*OW], averaged over its second dimension. */
	if (ok) {
		uint32_t flat;

		ok = !npurt_graph_view(g, relu, 0, 2, (uint64_t[]){ CK, COH * COW },
				       (uint64_t[]){ COH * COW, 1 }, &flat);
		n = node("reduce_mean", flat, 0);
		n.axis = 1;
		ok = ok && !npurt_graph_add(g, &n, &pooled);
	}
	/* [K, 1] transposed by the GEMM: y[1 x NCLS] = pooled^T fc. */
	n = node("gemm", pooled, fc);
	n.flags = NPURT_LAUNCH_TRANS_A;
	ok = ok && !npurt_graph_add(g, &n, &y) && !npurt_graph_output(g, y, "logits") &&
	     !npurt_graph_serialize(g, &p->file, &p->len, NULL);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

static void cnn_ref(const struct cnn *p, const float *x, float *y)
{
	float pooled[CK];

	for (int k = 0; k < CK; k++) {
		float sum = 0;

		for (int r = 0; r < COH; r++)
			for (int c = 0; c < COW; c++) {
				float a = 0;

				for (int t = 0; t < 9; t++)
					for (int ch = 0; ch < CC; ch++)
						a += p->wt[t][k * CC + ch] *
						     x[ch * CH * CW + (r + t / 3) * CW + c + t % 3];
				sum += a > 0 ? a : 0;
			}
		pooled[k] = sum / (COH * COW);
	}
	for (int j = 0; j < NCLS; j++) {
		y[j] = 0;
		for (int k = 0; k < CK; k++)
			y[j] += pooled[k] * p->fc[k * NCLS + j];
	}
}

TEST_F(mod, a_cnn_of_library_ops_matches_the_host)
{
	static struct cnn p;
	static float x[CC * CH * CW], y[NCLS], want[NCLS];
	uint32_t seed = 11;
	npurt_model *m;

	ASSERT_EQ(0, build_cnn(&p)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < CC * CH * CW; i++)
		x[i] = frand(&seed);
	cnn_ref(&p, x, want);
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, p.file, p.len, NULL, &m))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, y, sizeof(y)));
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, 30000)) TH_LOG("%s", npurt_last_error());
	EXPECT_GT(1e-4f, max_err(y, want, NCLS)) TH_LOG("%f vs %f", y[0], want[0]);
	npurt_model_unload(m);
	free(p.file);
}

/* ---- two streams joined by an event ------------------------------------------ */
enum { TN = 64 };

static int build_two_streams(float *w, void **file, size_t *len)
{
	uint32_t seed = 21, x, c, a, b, s;
	npurt_graph *g;
	npurt_graph_node n;
	int ok;

	for (int i = 0; i < TN * TN; i++)
		w[i] = frand(&seed);
	if (npurt_graph_create(&g))
		return -1;
	ok = !npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ TN, TN }, &x) &&
	     !npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ TN, TN }, w, &c);
	n = node("gemm", x, c);
	ok = ok && !npurt_graph_add(g, &n, &a);		/* stream 0 */
	n = node("tanh", x, 0);
	n.stream = 1;
	ok = ok && !npurt_graph_add(g, &n, &b);		/* stream 1, at the same time */
	n = node("add", a, b);
	ok = ok && !npurt_graph_add(g, &n, &s) && !npurt_graph_output(g, s, "s") &&
	     !npurt_graph_serialize(g, file, len, NULL);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

static void two_ref(const float *w, const float *x, float *s)
{
	for (int i = 0; i < TN; i++)
		for (int j = 0; j < TN; j++) {
			float a = 0;

			for (int k = 0; k < TN; k++)
				a += x[i * TN + k] * w[k * TN + j];
			s[i * TN + j] = a + tanhf(x[i * TN + j]);
		}
}

/* Pipelined on a user's stream, each run with its own device buffers. */
TEST_F(mod, two_streams_joined_by_an_event_pipeline_on_a_user_stream)
{
	enum { RUNS = 6 };
	static float w[TN * TN], want[TN * TN];
	npurt_model_info info = { .size = sizeof(info) };
	npurt_mem *in[RUNS], *out[RUNS];
	npurt_stream *st;
	npurt_model *m;
	void *file;
	size_t len;

	ASSERT_EQ(0, build_two_streams(w, &file, &len)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, file, len, NULL, &m))
		TH_LOG("%s", npurt_last_error());
	free(file);
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m, &info));
	EXPECT_EQ(2, info.streams);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &st));
	for (int r = 0; r < RUNS; r++) {
		uint32_t seed = 40 + r;
		float *x;

		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, sizeof(want), &in[r]));
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, sizeof(want), &out[r]));
		x = npurt_mem_host_ptr(in[r]);
		for (int i = 0; i < TN * TN; i++)
			x[i] = frand(&seed);
		/* Device memory: bound in place, nothing copied. */
		ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(want)));
		ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, npurt_mem_host_ptr(out[r]), sizeof(want)));
		ASSERT_EQ(NPURT_OK, npurt_model_execute_async(m, st)) TH_LOG("%s", npurt_last_error());
	}
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(st)) TH_LOG("%s", npurt_last_error());
	for (int r = 0; r < RUNS; r++) {
		two_ref(w, npurt_mem_host_ptr(in[r]), want);
		EXPECT_GT(1e-4f, max_err(npurt_mem_host_ptr(out[r]), want, TN * TN)) TH_LOG("run %d", r);
		npurt_mem_free(in[r]);
		npurt_mem_free(out[r]);
	}
	npurt_stream_destroy(st);
	npurt_model_unload(m);
}

/* A run on a user's stream sits between that stream's other work. */
TEST_F(mod, a_run_on_a_stream_sees_the_work_before_it)
{
	static float y[B * O], want[B * O], x[B * I];
	npurt_mem *xin, *yout;
	npurt_stream *st;
	npurt_model *m;

	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &m));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &st));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, sizeof(x), &xin));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, sizeof(y), &yout));
	fill_x(x, 77);
	mlp_ref(&self->mlp, x, want);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, npurt_mem_host_ptr(xin), sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, npurt_mem_host_ptr(yout), sizeof(y)));
	/* The input arrives on the stream just before the run; the output leaves after. */
	ASSERT_EQ(NPURT_OK, npurt_copy_async(st, npurt_mem_host_ptr(xin), x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_execute_async(m, st));
	ASSERT_EQ(NPURT_OK, npurt_copy_async(st, y, npurt_mem_host_ptr(yout), sizeof(y)));
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(st)) TH_LOG("%s", npurt_last_error());
	EXPECT_GT(1e-5f, max_err(y, want, B * O));
	npurt_mem_free(xin);
	npurt_mem_free(yout);
	npurt_stream_destroy(st);
	npurt_model_unload(m);
}

/*
 * LONG_OPS GEMMs of k = 2^16 over broadcast views accumulating into y
 * (filled with 0 first): each a tenth of a second or more of compute
 * (well inside the queues' 2 s limit for one task), bytes of memory. A
 * run that completes leaves LONG_OPS * k in every element.
 */
#define LONG_OPS	8

static int build_long(void **file, size_t *len)
{
	const uint64_t k = 1ull << 16;
	uint32_t one, a, b, y;
	float v = 1.0f;
	npurt_graph *g;
	npurt_graph_node n;
	int ok;

	if (npurt_graph_create(&g))
		return -1;
	ok = !npurt_graph_constant(g, "one", NPURT_F32, 1, (uint64_t[]){ 1 }, &v, &one) &&
	     !npurt_graph_view(g, one, 0, 2, (uint64_t[]){ 128, k }, (uint64_t[]){ 0, 0 }, &a) &&
	     !npurt_graph_view(g, one, 0, 2, (uint64_t[]){ k, 64 }, (uint64_t[]){ 0, 0 }, &b) &&
	     !npurt_graph_tensor(g, "y", NPURT_F32, 2, (uint64_t[]){ 128, 64 }, &y) &&
	     !npurt_graph_fill(g, 0, y, 0);
	n = node("gemm", a, b);
	n.beta = 1.0f;
	for (int i = 0; i < LONG_OPS; i++)
		ok = ok && !npurt_graph_add_into(g, &n, y);
	ok = ok && !npurt_graph_output(g, y, "y") && !npurt_graph_serialize(g, file, len, NULL);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

/*
 * A run past its timeout is aborted in the middle of its list: the ops
 * after the abort never run (the output, device memory, is short of a
 * whole run), and the next run, on fresh queues, runs them all.
 */
TEST_F(mod, an_execute_timeout_aborts_and_the_model_runs_again)
{
	const float whole = (float)LONG_OPS * (float)(1u << 16);
	npurt_mem *out;
	uint64_t t0;
	npurt_model *m;
	float *y;
	void *file;
	size_t len;

	ASSERT_EQ(0, build_long(&file, &len)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, file, len, NULL, &m))
		TH_LOG("%s", npurt_last_error());
	free(file);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 128 * 64 * 4, &out));
	y = npurt_mem_host_ptr(out);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, y, 128 * 64 * 4));
	t0 = npu_now_ms();
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_model_execute(m, 50)) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "aborted")) TH_LOG("%s", npurt_last_error());
	EXPECT_GT(5000, npu_now_ms() - t0);
	/* Stopped: what is there stays short of a whole run. */
	usleep(200 * 1000);
	EXPECT_GT(whole, y[0]);
	EXPECT_GT(whole, y[128 * 64 - 1]);
	/* Fresh queues: the model runs to the end now. */
	ASSERT_EQ(NPURT_OK, npurt_model_execute(m, -1)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(whole, y[0]);
	EXPECT_EQ(whole, y[128 * 64 - 1]);
	npurt_model_unload(m);
	npurt_mem_free(out);
}

/* Every loader error: nothing allocated, nothing sunk, the reason said. */
TEST_F(mod, bad_model_files_leave_nothing_behind)
{
	int fd = npurt_device_fd(self->dev);
	uint64_t hbm = npu_hbm_used(fd), rings = npu_dev_usage(fd, DRM_NPU_MEM_REGION_QUEUES);
	uint8_t *bad = malloc(self->mlp.len);
	npurt_model_info info = { .size = sizeof(info) };
	npurt_model *m = (npurt_model *)1;

	ASSERT_NE(NULL, bad);
	for (size_t i = 0; i < self->mlp.len; i += 97) {
		memcpy(bad, self->mlp.file, self->mlp.len);
		bad[i] ^= 1;
		EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_load_buffer(self->dev, bad, self->mlp.len,
								      NULL, &m)) TH_LOG("byte %zu", i);
		EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_query(bad, self->mlp.len, &info));
	}
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_load_buffer(self->dev, self->mlp.file,
							      self->mlp.len - 1, NULL, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "truncated"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_load(self->dev, "/nonexistent.npu", NULL, &m));
	EXPECT_EQ((npurt_model *)1, m);
	EXPECT_EQ(hbm, npu_hbm_used(fd));
	EXPECT_EQ(rings, npu_dev_usage(fd, DRM_NPU_MEM_REGION_QUEUES));
	EXPECT_EQ(NPURT_OK, npurt_model_query(self->mlp.file, self->mlp.len, &info));
	EXPECT_EQ(4, info.ops);
	free(bad);
}

TEST_F(mod, bindings_are_checked)
{
	static float x[B * I], y[B * O];
	npurt_mem *gone;
	npurt_model *m;
	uint32_t i;

	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_execute(m, 1000));	/* nothing bound */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "not bound"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_bind(m, 0, x, sizeof(x) - 4));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_bind(m, 2, x, sizeof(x)));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_bind(m, 0, NULL, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, 2 * sizeof(x), &gone));
	/* Straddling the end of an allocation. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_bind(m, 0, (uint8_t *)npurt_mem_host_ptr(gone) +
						      sizeof(x) + 4, sizeof(x)));
	npurt_mem_free(gone);
	EXPECT_EQ(NPURT_OK, npurt_model_io_find(m, "y", &i));
	EXPECT_EQ(1, i);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_io_find(m, "z", &i));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, y, sizeof(y)));
	EXPECT_EQ(NPURT_OK, npurt_model_execute(m, 10000));
	npurt_model_unload(m);
}

/* A second load sharing the first's weights takes only its work memory. */
TEST_F(mod, shared_weights_are_loaded_once)
{
	static float x[B * I], y1[B * O], y2[B * O], want[B * O];
	npurt_model_info info = { .size = sizeof(info) };
	int fd = npurt_device_fd(self->dev);
	npurt_model *a, *b;
	npurt_model_desc d = { .size = sizeof(d) };
	uint64_t before;

	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &a));
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(a, &info));
	npurt_mem_trim(self->dev, 0);
	before = npu_hbm_used(fd);
	d.share = a;
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, &d,
						    &b)) TH_LOG("%s", npurt_last_error());
	/* Its work memory, its lists and page tables: not the weights again. */
	EXPECT_GT(before + info.weights_bytes, npu_hbm_used(fd) - info.work_bytes - 64 * 1024);
	fill_x(x, 9);
	mlp_ref(&self->mlp, x, want);
	ASSERT_EQ(NPURT_OK, npurt_model_bind(a, 0, x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(a, 1, y1, sizeof(y1)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(b, 0, x, sizeof(x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(b, 1, y2, sizeof(y2)));
	ASSERT_EQ(NPURT_OK, npurt_model_execute(a, 10000));
	npurt_model_unload(a);		/* the weights stay for b */
	ASSERT_EQ(NPURT_OK, npurt_model_execute(b, 10000)) TH_LOG("%s", npurt_last_error());
	EXPECT_GT(1e-5f, max_err(y1, want, B * O));
	EXPECT_EQ(0, memcmp(y1, y2, sizeof(y1)));
	npurt_model_unload(b);
}

/* ---- run loops --------------------------------------------------------------- */
struct served {
	struct mlp *mlp;
	float x[24][B * I];
	uint64_t next;
	int bad;
	pthread_mutex_t lock;
};

static void served(void *user, uint64_t tag, npurt_status st, void *const *outputs)
{
	struct served *s = user;
	float want[B * O];

	mlp_ref(s->mlp, s->x[tag], want);
	pthread_mutex_lock(&s->lock);
	if (st || tag != s->next || max_err(outputs[0], want, B * O) > 1e-5f)
		s->bad++;
	s->next++;
	pthread_mutex_unlock(&s->lock);
}

TEST_F(mod, a_run_loop_serves_requests_in_order)
{
	static struct served sv;
	npurt_runloop_desc d = { .size = sizeof(d), .depth = 3, .done = served, .user = &sv };
	npurt_runloop *loop;
	npurt_model *m;

	sv.mlp = &self->mlp;
	pthread_mutex_init(&sv.lock, NULL);
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &m));
	ASSERT_EQ(NPURT_OK, npurt_runloop_start(m, &d, &loop)) TH_LOG("%s", npurt_last_error());
	for (uint64_t r = 0; r < 24; r++) {
		const void *in[1] = { sv.x[r] };

		fill_x(sv.x[r], 500 + (uint32_t)r);
		ASSERT_EQ(NPURT_OK, npurt_runloop_push(loop, in, r)) TH_LOG("%s", npurt_last_error());
	}
	npurt_runloop_stop(loop);		/* every request first */
	EXPECT_EQ(24, sv.next);
	EXPECT_EQ(0, sv.bad);
	npurt_model_unload(m);
}

/* ---- stopping a loop that pushers are feeding ---------------------------- */
enum { PUSHERS = 3, PER_PUSHER = 40 };

struct feed {
	struct mlp *mlp;
	npurt_runloop *loop;
	float x[PUSHERS][PER_PUSHER][B * I];
	pthread_mutex_t lock;
	int accepted[PUSHERS], refused[PUSHERS], wrong_status[PUSHERS];
	int seen[PUSHERS];		/* results handed over, per pusher */
	int bad;			/* wrong result, out of order, or never pushed */
};

static void fed(void *user, uint64_t tag, npurt_status st, void *const *outputs)
{
	struct feed *f = user;
	int p = (int)(tag / PER_PUSHER), i = (int)(tag % PER_PUSHER);
	float want[B * O];

	mlp_ref(f->mlp, f->x[p][i], want);
	pthread_mutex_lock(&f->lock);
	/* A pusher's requests come back in its order, each once, right. */
	if (st || i != f->seen[p] || max_err(outputs[0], want, B * O) > 1e-5f)
		f->bad++;
	f->seen[p]++;
	pthread_mutex_unlock(&f->lock);
}

struct pusher {
	struct feed *f;
	int id;
};

static void *pusher_main(void *arg)
{
	struct pusher *p = arg;
	struct feed *f = p->f;

	for (int i = 0; i < PER_PUSHER; i++) {
		const void *in[1] = { f->x[p->id][i] };
		npurt_status st = npurt_runloop_push(f->loop, in, (uint64_t)(p->id * PER_PUSHER + i));

		pthread_mutex_lock(&f->lock);
		if (!st)
			f->accepted[p->id]++;
		else if (st == NPURT_ERR_INVALID)
			f->refused[p->id]++;
		else
			f->wrong_status[p->id]++;
		pthread_mutex_unlock(&f->lock);
		/* Once refused, the loop is stopping: every later push is refused. */
		if (st)
			break;
	}
	return NULL;
}

/*
 * Three threads push while the loop is stopped under them: every request
 * accepted is served, in each pusher's order, and right; every push after
 * the stop began is refused; stop returns with the pushers still pushing
 * (none touches the loop after). A new loop on the same model serves.
 */
TEST_F(mod, a_run_loop_stops_under_load_and_starts_again)
{
	static struct feed fd;
	npurt_runloop_desc d = { .size = sizeof(d), .depth = 2, .done = fed, .user = &fd };
	struct pusher ps[PUSHERS];
	pthread_t th[PUSHERS];
	npurt_model *m;
	int accepted = 0, served = 0;

	fd.mlp = &self->mlp;
	pthread_mutex_init(&fd.lock, NULL);
	for (int p = 0; p < PUSHERS; p++)
		for (int i = 0; i < PER_PUSHER; i++)
			fill_x(fd.x[p][i], 900 + (uint32_t)(p * PER_PUSHER + i));
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->mlp.file, self->mlp.len, NULL,
						    &m));
	for (int round = 0; round < 2; round++) {
		memset(fd.accepted, 0, sizeof(fd.accepted));
		memset(fd.refused, 0, sizeof(fd.refused));
		memset(fd.seen, 0, sizeof(fd.seen));
		ASSERT_EQ(NPURT_OK, npurt_runloop_start(m, &d, &fd.loop)) TH_LOG("%s",
										npurt_last_error());
		for (int p = 0; p < PUSHERS; p++) {
			ps[p] = (struct pusher){ &fd, p };
			ASSERT_EQ(0, pthread_create(&th[p], NULL, pusher_main, &ps[p]));
		}
		/* Round 0 stops while they push; round 1 once they are done. */
		if (round == 0) {
			for (int i = 0; i < 500; i++) {
				pthread_mutex_lock(&fd.lock);
				served = fd.seen[0] + fd.seen[1] + fd.seen[2];
				pthread_mutex_unlock(&fd.lock);
				if (served >= 10)
					break;
				usleep(2000);
			}
			npurt_runloop_stop(fd.loop);
		}
		for (int p = 0; p < PUSHERS; p++)
			pthread_join(th[p], NULL);
		if (round == 1)
			npurt_runloop_stop(fd.loop);
		accepted = served = 0;
		for (int p = 0; p < PUSHERS; p++) {
			accepted += fd.accepted[p];
			served += fd.seen[p];
			EXPECT_EQ(fd.accepted[p], fd.seen[p]) TH_LOG("round %d pusher %d", round, p);
			EXPECT_EQ(0, fd.wrong_status[p]);
			if (round == 1)
				EXPECT_EQ(PER_PUSHER, fd.accepted[p]);
		}
		EXPECT_EQ(accepted, served);
		EXPECT_EQ(0, fd.bad);
		if (round == 0) {
			EXPECT_LE(10, served);
			/* Stopped under them: some pushes were turned away. */
			EXPECT_LT(accepted, PUSHERS * PER_PUSHER);
		}
	}
	npurt_model_unload(m);
}

/* Two processes run one model file at the same time, with the same results. */
TEST_F(mod, two_processes_run_the_same_model_file)
{
	const char *path = "/tmp/npurt_model_test.npu";
	static float x[B * I], y[B * O], want[B * O];
	FILE *f = fopen(path, "wb");
	pid_t pid;
	int st;

	ASSERT_NE(NULL, f);
	ASSERT_EQ(self->mlp.len, fwrite(self->mlp.file, 1, self->mlp.len, f));
	fclose(f);
	fill_x(x, 1234);
	mlp_ref(&self->mlp, x, want);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		npurt_device *dev;
		npurt_model *m;
		int bad = 0;

		if (npurt_device_open(0, &dev) || npurt_model_load(dev, path, NULL, &m) ||
		    npurt_model_bind(m, 0, x, sizeof(x)) || npurt_model_bind(m, 1, y, sizeof(y)))
			_exit(2);
		for (int r = 0; r < 20; r++)
			bad += npurt_model_execute(m, 10000) || max_err(y, want, B * O) > 1e-5f;
		npurt_model_unload(m);
		npurt_device_close(dev);
		_exit(bad ? 1 : 0);
	}
	{
		npurt_model *m;
		int bad = 0;

		ASSERT_EQ(NPURT_OK, npurt_model_load(self->dev, path, NULL, &m));
		ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 0, x, sizeof(x)));
		ASSERT_EQ(NPURT_OK, npurt_model_bind(m, 1, y, sizeof(y)));
		for (int r = 0; r < 20; r++)
			bad += npurt_model_execute(m, 10000) || max_err(y, want, B * O) > 1e-5f;
		EXPECT_EQ(0, bad);
		npurt_model_unload(m);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	unlink(path);
}

/* A process killed with runs in flight: its HBM comes back. */
TEST_F(mod, a_killed_process_gives_its_memory_back)
{
	int fd = npurt_device_fd(self->dev), p[2];
	uint64_t before = npu_hbm_used(fd);
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		static float x[B * I], y[B * O];
		npurt_device *dev;
		npurt_stream *s;
		npurt_model *m;

		if (npurt_device_open(0, &dev) ||
		    npurt_model_load_buffer(dev, self->mlp.file, self->mlp.len, NULL, &m) ||
		    npurt_model_bind(m, 0, x, sizeof(x)) || npurt_model_bind(m, 1, y, sizeof(y)) ||
		    npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s))
			_exit(2);
		if (write(p[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			npurt_model_execute_async(m, s);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	usleep(200 * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
	/* Nothing of the child's stays (the parent may have given some back meanwhile). */
	for (int i = 0; i < 100 && npu_hbm_used(fd) > before; i++)
		usleep(50 * 1000);
	EXPECT_GE(before, npu_hbm_used(fd));
}

/* y[1 x 1] = x (broadcast over k) . w[k x 1], w all ones: k * x. Weights: k floats. */
#define BIG_K	(2u << 20)

static int build_big(void **file, size_t *len)
{
	float *w = malloc((size_t)BIG_K * 4);
	uint32_t x, xv, c, y;
	npurt_graph *g;
	npurt_graph_node n;
	int ok;

	if (!w || npurt_graph_create(&g)) {
		free(w);
		return -1;
	}
	for (uint32_t i = 0; i < BIG_K; i++)
		w[i] = 1.0f;
	ok = !npurt_graph_input(g, "x", NPURT_F32, 1, (uint64_t[]){ 1 }, &x) &&
	     !npurt_graph_view(g, x, 0, 2, (uint64_t[]){ 1, BIG_K }, (uint64_t[]){ 0, 0 }, &xv) &&
	     !npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ BIG_K, 1 }, w, &c);
	free(w);
	n = node("gemm", xv, c);
	ok = ok && !npurt_graph_add(g, &n, &y) && !npurt_graph_output(g, y, "y") &&
	     !npurt_graph_serialize(g, file, len, NULL);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

static npurt_status run_big(npurt_model *m, float x, float *y)
{
	npurt_status st = npurt_model_bind(m, 0, &x, sizeof(x));

	if (!st)
		st = npurt_model_bind(m, 1, y, sizeof(*y));
	return st ? st : npurt_model_execute(m, 30000);
}

/*
 * HBM full of evictable models: the next load unloads the least recently
 * used idle one and says so; an evicted model loads again at its run. A
 * load that finds no evictable model fails cleanly.
 */
TEST_F(mod, evictable_models_make_room_and_come_back)
{
	enum { MAXM = 32 };
	npurt_model_desc d = { .size = sizeof(d), .flags = NPURT_MODEL_EVICTABLE };
	npurt_model_info info = { .size = sizeof(info) };
	int fd = npurt_device_fd(self->dev);
	npurt_model *m[MAXM] = { 0 };
	uint64_t size = 0, used, before, per = (uint64_t)BIG_K * 4 + (1 << 20);
	npurt_mem *blocker = NULL;
	npurt_status st = NPURT_OK;
	int n = 0, fits;
	float y = 0;
	void *file;
	size_t len;

	ASSERT_EQ(0, build_big(&file, &len)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, npu_get_param(fd, DRM_NPU_PARAM_HBM_SIZE, &size));
	npurt_mem_trim(self->dev, 0);
	used = npu_hbm_used(fd);
	/* Leave room for three and a half models, so a few loads fill HBM. */
	ASSERT_LT(used + 4 * per, size);
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, (size - used - 3 * per - per / 2) & ~0xfffffull,
					    &blocker)) TH_LOG("%s", npurt_last_error());
	fits = (int)((size - npu_hbm_used(fd)) / per);
	ASSERT_LE(2, fits);
	ASSERT_GT(MAXM - 1, fits);
	/* A non-evictable model first, which must stay. */
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, file, len, NULL, &m[n++]))
		TH_LOG("%s", npurt_last_error());
	for (; n <= fits + 1; n++) {
		ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, file, len, &d, &m[n]))
			TH_LOG("model %d: %s", n, npurt_last_error());
		ASSERT_EQ(NPURT_OK, run_big(m[n], 1.0f, &y)) TH_LOG("%s", npurt_last_error());
	}
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m[n - 1], &info));
	EXPECT_LE(1, info.evicted);
	EXPECT_LE((uint64_t)BIG_K * 4, info.evicted_bytes);
	/* The first evictable one was the least recently used: it went. */
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m[1], &info));
	EXPECT_FALSE(info.loaded);
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m[0], &info));
	EXPECT_TRUE(info.loaded);
	/* It comes back at its next run, right. */
	ASSERT_EQ(NPURT_OK, run_big(m[1], 2.0f, &y)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(2.0f * BIG_K, y);
	ASSERT_EQ(NPURT_OK, npurt_model_info_get(m[1], &info));
	EXPECT_TRUE(info.loaded);
	/* Nothing evictable is left idle in the way of a plain load? Unload them, fill up. */
	for (int i = 1; i < n; i++)
		npurt_model_unload(m[i]);
	npurt_mem_trim(self->dev, 0);
	before = npu_hbm_used(fd);
	n = 1;
	while (n < MAXM && !(st = npurt_model_load_buffer(self->dev, file, len, NULL, &m[n])))
		n++;
	EXPECT_LT(1, n);
	EXPECT_GT(MAXM, n);
	EXPECT_EQ(NPURT_ERR_NO_MEMORY, st);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "weights")) TH_LOG("%s", npurt_last_error());
	for (int i = 1; i < n; i++)
		npurt_model_unload(m[i]);
	npurt_mem_trim(self->dev, 0);
	EXPECT_EQ(before, npu_hbm_used(fd));
	ASSERT_EQ(NPURT_OK, run_big(m[0], 3.0f, &y));
	EXPECT_EQ(3.0f * BIG_K, y);
	npurt_model_unload(m[0]);
	npurt_mem_free(blocker);
	free(file);
}

TEST_HARNESS_MAIN
