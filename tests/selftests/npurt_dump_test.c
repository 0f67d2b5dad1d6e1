// SPDX-License-Identifier: MIT
/*
 * Dump and compare, end to end on the device: npurt_model_dump() hands
 * over each op's tensors as the op left them (checked against the host's
 * arithmetic on the dumped inputs); npurun --dump and --dump-ref write
 * them as .npy files; npu-prof --compare names the first op whose output
 * differs from the reference's (a model with one op swapped plants it),
 * --check-nan the first op that made a NaN or an infinity.
 */
#include <limits.h>
#include <math.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"
#include "npu-prof/dump.h"

enum { B = 8, I = 16, H = 32, O = 8 };

static float frand(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static uint32_t op(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

/*
 * x[B x I] . W1 -> relu -> mid[0] -> mid[1] ... -> . W2 -> softmax -> y:
 * op 0 the first GEMM, op 1 relu, the mids from op 2, then GEMM, softmax.
 */
static int build(const char *const *mid, int nmid, void **file, size_t *len)
{
	float w1[I * H], w2[H * O];
	npurt_plan_info info = { .size = sizeof(info) };
	uint32_t seed = 11, x, a, b, t;
	const char *chain[8] = { "relu" };
	npurt_graph *g;
	int ok;

	for (int i = 0; i < I * H; i++)
		w1[i] = frand(&seed) * 2;
	for (int i = 0; i < H * O; i++)
		w2[i] = frand(&seed);
	for (int i = 0; i < nmid; i++)
		chain[i + 1] = mid[i];
	if (npurt_graph_create(&g))
		return -1;
	ok = !npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ B, I }, &x) &&
	     !npurt_graph_constant(g, "w1", NPURT_F32, 2, (uint64_t[]){ I, H }, w1, &a) &&
	     !npurt_graph_constant(g, "w2", NPURT_F32, 2, (uint64_t[]){ H, O }, w2, &b);
	npurt_graph_node n = { .size = sizeof(n), .op = op("gemm"), .alpha = 1, .in = { x, a } };

	ok = ok && !npurt_graph_add(g, &n, &t);
	for (int i = 0; i <= nmid && ok; i++) {
		n = (npurt_graph_node){ .size = sizeof(n), .op = op(chain[i]), .alpha = 1,
					.in = { t } };
		ok = !npurt_graph_add(g, &n, &t);
	}
	n = (npurt_graph_node){ .size = sizeof(n), .op = op("gemm"), .alpha = 1, .in = { t, b } };
	ok = ok && !npurt_graph_add(g, &n, &t);
	n = (npurt_graph_node){ .size = sizeof(n), .op = op("softmax"), .in = { t } };
	ok = ok && !npurt_graph_add(g, &n, &t) && !npurt_graph_output(g, t, "y") &&
	     !npurt_graph_serialize(g, file, len, &info);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

/* What a dump handed over: each tensor's description and a copy of its data. */
struct got {
	int n, stop_at;
	npurt_dump_tensor t[32];
	float *data[32];
};

static npurt_status collect(const npurt_dump_tensor *t, void *user)
{
	struct got *g = user;

	if (g->n == g->stop_at || g->n == 32)
		return NPURT_ERR_BUSY;
	g->t[g->n] = *t;
	g->data[g->n] = malloc(t->bytes);
	if (g->data[g->n])
		memcpy(g->data[g->n], t->data, t->bytes);
	g->n++;
	return NPURT_OK;
}

static void got_free(struct got *g)
{
	for (int i = 0; i < g->n; i++)
		free(g->data[i]);
	g->n = 0;
}

/* The tensor of op `k` in role `role`, or NULL. */
static const float *tensor(const struct got *g, uint32_t k, uint32_t role)
{
	for (int i = 0; i < g->n; i++)
		if (g->t[i].op == k && g->t[i].role == role)
			return g->data[i];
	return NULL;
}

FIXTURE(dump) {
	npurt_device *dev;
	npurt_model *m;
	void *file;
	size_t len;
	float x[B * I], y[B * O];
	char dir[64];
	uint64_t hbm_before;
};

FIXTURE_SETUP(dump)
{
	uint32_t seed = 5;

	self->hbm_before = npu_hbm_buffers();
	ASSERT_NE(~0ull, self->hbm_before);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, build((const char *[]){ "tanh" }, 1, &self->file, &self->len))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_model_load_buffer(self->dev, self->file, self->len, NULL,
						    &self->m)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < B * I; i++)
		self->x[i] = frand(&seed) * 4;
	ASSERT_EQ(NPURT_OK, npurt_model_bind(self->m, 0, self->x, sizeof(self->x)));
	ASSERT_EQ(NPURT_OK, npurt_model_bind(self->m, 1, self->y, sizeof(self->y)));
	snprintf(self->dir, sizeof(self->dir), "/tmp/npurt-dump-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(dump)
{
	char cmd[128];

	npurt_model_unload(self->m);
	free(self->file);
	npurt_device_close(self->dev);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	if (system(cmd))
		TH_LOG("could not remove %s", self->dir);
	EXPECT_EQ(self->hbm_before, npu_hbm_buffers_settle(self->hbm_before));
}

/*
 * Every op's inputs and output in the ops' order, each as its op saw it:
 * the first GEMM's inputs are x and W1 and its output their product; each
 * later op's input is the output before it, and relu and tanh of it are
 * what the host makes of it. The feature maps share memory (the second
 * GEMM's output takes the first's bytes), so a copy taken late shows.
 */
TEST_F(dump, each_op_is_handed_over_as_it_left_its_tensors)
{
	struct got g = { .stop_at = -1 };
	float y_run[B * O], w1[I * H];
	const float *in, *out, *prev;
	uint32_t seed = 11;

	ASSERT_EQ(NPURT_OK, npurt_model_execute(self->m, -1));
	memcpy(y_run, self->y, sizeof(y_run));
	memset(self->y, 0, sizeof(self->y));
	ASSERT_EQ(NPURT_OK, npurt_model_dump(self->m, NULL, NPURT_DUMP_INPUTS, collect, &g))
		TH_LOG("%s", npurt_last_error());
	/* 5 ops: 2 GEMMs with 2 inputs, 3 with one, an output each. */
	ASSERT_EQ(2 * 3 + 3 * 2, g.n);
	for (int i = 0; i < g.n; i++) {
		EXPECT_EQ((uint32_t)i, g.t[i].seq);
		EXPECT_EQ(NPURT_F32, g.t[i].dtype);
		EXPECT_TRUE(i == 0 || g.t[i].op >= g.t[i - 1].op);
	}
	EXPECT_STREQ("gemm", g.t[0].op_name);
	EXPECT_STREQ("tanh", g.t[6].op_name);
	EXPECT_STREQ("y", g.t[g.n - 1].name);
	EXPECT_EQ(2u, g.t[g.n - 1].ndim);
	EXPECT_EQ((uint64_t)O, g.t[g.n - 1].shape[1]);
	/* The run is a run: the output bound is written, as any run's. */
	EXPECT_EQ(0, memcmp(y_run, self->y, sizeof(y_run)));
	EXPECT_EQ(0, memcmp(self->y, tensor(&g, 4, NPURT_DUMP_OUTPUT), sizeof(self->y)));

	for (int i = 0; i < I * H; i++)
		w1[i] = frand(&seed) * 2;
	in = tensor(&g, 0, NPURT_DUMP_INPUT0);
	ASSERT_NE(NULL, in);
	EXPECT_EQ(0, memcmp(in, self->x, sizeof(self->x)));
	ASSERT_NE(NULL, tensor(&g, 0, NPURT_DUMP_INPUT1));
	EXPECT_EQ(0, memcmp(tensor(&g, 0, NPURT_DUMP_INPUT1), w1, sizeof(w1)));
	out = tensor(&g, 0, NPURT_DUMP_OUTPUT);
	ASSERT_NE(NULL, out);
	for (int r = 0; r < B; r++)
		for (int c = 0; c < H; c++) {
			float s = 0;

			for (int k = 0; k < I; k++)
				s += self->x[r * I + k] * w1[k * H + c];
			ASSERT_TRUE(fabsf(s - out[r * H + c]) <= 1e-4f)
				TH_LOG("gemm [%d][%d]: %g, the host %g", r, c, out[r * H + c], s);
		}
	for (uint32_t k = 1; k <= 2; k++) {
		prev = tensor(&g, k - 1, NPURT_DUMP_OUTPUT);
		in = tensor(&g, k, NPURT_DUMP_INPUT0);
		out = tensor(&g, k, NPURT_DUMP_OUTPUT);
		ASSERT_TRUE(prev && in && out);
		EXPECT_EQ(0, memcmp(prev, in, B * H * sizeof(float))) TH_LOG("op %u", k);
		for (int i = 0; i < B * H; i++) {
			ASSERT_TRUE(fabsf((k == 1 ? fmaxf(in[i], 0) : tanhf(in[i])) - out[i]) <= 1e-5f)
				TH_LOG("op %u [%d]: %g of %g", k, i, out[i], in[i]);
		}
	}
	got_free(&g);
}

/* Patterns pick by op name and output name; mistakes change nothing. */
TEST_F(dump, patterns_pick_ops_and_mistakes_are_refused)
{
	struct got g = { .stop_at = -1 };

	ASSERT_EQ(NPURT_OK, npurt_model_dump(self->m, "relu,soft*", 0, collect, &g));
	ASSERT_EQ(2, g.n);
	EXPECT_STREQ("relu", g.t[0].op_name);
	EXPECT_STREQ("softmax", g.t[1].op_name);
	got_free(&g);
	ASSERT_EQ(NPURT_OK, npurt_model_dump(self->m, "y", 0, collect, &g));
	ASSERT_EQ(1, g.n);
	EXPECT_EQ(4u, g.t[0].op);
	got_free(&g);

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_dump(self->m, "relu,conv*", 0, collect, &g));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "\"conv*\"")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_dump(self->m, NULL, 0, NULL, &g));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_dump(NULL, NULL, 0, collect, &g));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_model_dump(self->m, NULL, 1u << 7, collect, &g));
	EXPECT_EQ(0, g.n);

	/* A callback that stops it: its status back, nothing more handed over. */
	g.stop_at = 2;
	EXPECT_EQ(NPURT_ERR_BUSY, npurt_model_dump(self->m, NULL, 0, collect, &g));
	EXPECT_EQ(2, g.n);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_ERR_BUSY")) TH_LOG("%s",
									   npurt_last_error());
	got_free(&g);
	/* And the model runs on as before, sunk. */
	EXPECT_EQ(NPURT_OK, npurt_model_execute(self->m, -1)) TH_LOG("%s", npurt_last_error());
}

static void write_model(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
}

/*
 * npurun writes the device's dump and the host reference's of the same
 * inputs; npu-prof --compare finds them equal, tensor by tensor, and the
 * files are what numpy writes (npu-prof's reader checks the header).
 */
TEST_F(dump, npurun_dumps_match_the_host_reference)
{
	char npurun[PATH_MAX], prof[PATH_MAX], out[8192], model[128];
	struct npy a;
	char err[512];

	ASSERT_NE(NULL, npu_built("bin", "npurun", npurun, sizeof(npurun)));
	ASSERT_NE(NULL, npu_built("bin", "npu-prof", prof, sizeof(prof)));
	snprintf(model, sizeof(model), "%s/m.npumodel", self->dir);
	write_model(model, self->file, self->len);
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -n 1 --dump-inputs --dump %s/dev --dump-ref %s/ref %s",
			npurun, self->dir, self->dir, model)) TH_LOG("%s", out);
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s --compare %s/dev %s/ref", prof, self->dir, self->dir))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "all 12 tensors match")) TH_LOG("%s", out);

	snprintf(out, sizeof(out), "%s/dev/00002_tanh.npy", self->dir);
	ASSERT_EQ(0, npy_read(out, &a, err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(2u, a.ndim);
	EXPECT_EQ((uint64_t)B, a.shape[0]);
	EXPECT_EQ((uint64_t)H, a.shape[1]);
	EXPECT_TRUE(a.floating);
	npy_free(&a);

	/* Only some ops: one file, one line. */
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -n 1 --dump %s/some --dump-ops tanh %s", npurun,
			self->dir, model)) TH_LOG("%s", out);
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "ls %s/some", self->dir));
	EXPECT_STREQ("00002_tanh.npy\nindex.tsv\n", out);
	/* A dump directory that cannot be made: said, and a failure. */
	EXPECT_EQ(1, npu_sh(out, sizeof(out), "%s -n 1 --dump %s/m.npumodel/x %s", npurun, self->dir,
			model));
	EXPECT_NE(NULL, strstr(out, "dump directory")) TH_LOG("%s", out);
}

/*
 * The chain model with `mid` after its relu, dumped by npurun into
 * DIR/nan: npu-prof --check-nan's exit status and output, -1 if the
 * dump could not be made (the reason in out).
 */
static int check_nan_of(const char *npurun, const char *prof, const char *dir,
			const char *const *mid, int n, char *out, size_t len)
{
	char model[128];
	void *file;
	size_t bytes;

	snprintf(model, sizeof(model), "%s/nan.npumodel", dir);
	if (build(mid, n, &file, &bytes)) {
		snprintf(out, len, "build: %s", npurt_last_error());
		return -1;
	}
	write_model(model, file, bytes);
	free(file);
	if (npu_sh(out, len, "rm -rf %s/nan && %s -n 1 --dump %s/nan %s", dir, npurun, dir, model))
		return -1;
	return npu_sh(out, len, "%s --check-nan %s/nan", prof, dir);
}

/*
 * The same model with op 2 swapped (sigmoid for tanh) dumped on the
 * device, against the reference of the original: the comparison names
 * op 2, after the two before it matched; NaNs made by op 3 (the square
 * root of a negative) are found there, not in the ops they flow into,
 * and so are infinities (1 / 0).
 */
TEST_F(dump, compare_and_check_name_the_op_that_went_wrong)
{
	char npurun[PATH_MAX], prof[PATH_MAX], out[8192], model[128], planted[128];
	void *file;
	size_t len;

	ASSERT_NE(NULL, npu_built("bin", "npurun", npurun, sizeof(npurun)));
	ASSERT_NE(NULL, npu_built("bin", "npu-prof", prof, sizeof(prof)));
	snprintf(model, sizeof(model), "%s/m.npumodel", self->dir);
	write_model(model, self->file, self->len);
	snprintf(planted, sizeof(planted), "%s/planted.npumodel", self->dir);
	ASSERT_EQ(0, build((const char *[]){ "sigmoid" }, 1, &file, &len));
	write_model(planted, file, len);
	free(file);

	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -n 1 --dump-ref %s/ref %s", npurun, self->dir, model))
		TH_LOG("%s", out);
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -n 1 --dump %s/dev %s", npurun, self->dir, planted))
		TH_LOG("%s", out);
	EXPECT_EQ(1, npu_sh(out, sizeof(out), "%s --compare %s/dev %s/ref", prof, self->dir,
			self->dir)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "first difference: op 2 (sigmoid), its output")) TH_LOG("%s",
											 out);
	EXPECT_NE(NULL, strstr(out, "the 2 tensors before it match")) TH_LOG("%s", out);
	/* The first, alone: the ops it flows into are not the ones to look at. */
	EXPECT_EQ(NULL, strstr(out, "op 3 (")) TH_LOG("%s", out);
	/* Loose enough, the same: tolerances are the caller's. */
	EXPECT_EQ(0, npu_sh(out, sizeof(out), "%s --compare %s/dev %s/ref --atol 100", prof, self->dir,
			self->dir)) TH_LOG("%s", out);

	/* relu, neg, sqrt: a NaN wherever relu passed something on. */
	EXPECT_EQ(1, check_nan_of(npurun, prof, self->dir, (const char *[]){ "neg", "sqrt" }, 2,
				  out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "first NaN or Inf: op 3 (sqrt), its output")) TH_LOG("%s",
											 out);
	EXPECT_NE(NULL, strstr(out, "the 3 outputs before it have none")) TH_LOG("%s", out);
	/* relu, reciprocal: an infinity wherever relu gave 0. */
	EXPECT_EQ(1, check_nan_of(npurun, prof, self->dir, (const char *[]){ "reciprocal" }, 1,
				  out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "first NaN or Inf: op 2 (reciprocal), its output"))
		TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, " 0 Inf")) TH_LOG("%s", out);
	EXPECT_EQ(0, npu_sh(out, sizeof(out), "%s --check-nan %s/ref", prof, self->dir))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "no NaN or Inf in the 5 outputs")) TH_LOG("%s", out);
}

/*
 * Another runtime's tensors, NAME.npy without an index, are matched by
 * name; a file that is not .npy is refused by name, and so is usage.
 */
TEST_F(dump, compare_takes_another_runtimes_files_and_refuses_bad_ones)
{
	char npurun[PATH_MAX], prof[PATH_MAX], out[8192], model[128];

	ASSERT_NE(NULL, npu_built("bin", "npurun", npurun, sizeof(npurun)));
	ASSERT_NE(NULL, npu_built("bin", "npu-prof", prof, sizeof(prof)));
	snprintf(model, sizeof(model), "%s/m.npumodel", self->dir);
	write_model(model, self->file, self->len);
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -n 1 --dump %s/dev --dump-ref %s/ref %s", npurun,
			self->dir, self->dir, model)) TH_LOG("%s", out);
	ASSERT_EQ(0, mkdir(strcat(strcpy(out, self->dir), "/ort"), 0755));
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "cp %s/ref/00004_y.npy %s/ort/y.npy", self->dir,
			self->dir));
	EXPECT_EQ(0, npu_sh(out, sizeof(out), "%s --compare %s/dev %s/ort", prof, self->dir, self->dir))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "all 1 tensors match")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "4 not in it")) TH_LOG("%s", out);

	ASSERT_EQ(0, npu_sh(out, sizeof(out), "echo garbage > %s/ort/y.npy", self->dir));
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s --compare %s/dev %s/ort", prof, self->dir, self->dir));
	EXPECT_NE(NULL, strstr(out, "y.npy: not an .npy file")) TH_LOG("%s", out);
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s --compare %s/dev %s/none", prof, self->dir, self->dir));
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s --compare %s/dev", prof, self->dir));
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s --check-nan %s/dev --atol x", prof, self->dir));
}

TEST_HARNESS_MAIN
