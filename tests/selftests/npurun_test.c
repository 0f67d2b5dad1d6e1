// SPDX-License-Identifier: MIT
/*
 * npurun as a user meets it, on the device: the flags onnxruntime_perf_test
 * users expect (--duration, --concurrency through a run loop, --version),
 * a run that is still checked against the host, and a file it cannot read
 * named with the system's reason.
 */
#include <limits.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

enum { B = 4, I = 64, O = 32 };

/* y = relu(x [B, I] x w [I, O]): a model file of one GEMM and a relu. */
static int build(void **file, size_t *len)
{
	static float w[I * O];
	npurt_plan_info info = { .size = sizeof(info) };
	npurt_graph_node n = { .size = sizeof(n), .alpha = 1 };
	uint32_t x, c, t;
	npurt_graph *g;
	int ok;

	for (int i = 0; i < I * O; i++)
		w[i] = (float)((i * 37) % 11 - 5) / 8.0f;
	if (npurt_graph_create(&g))
		return -1;
	ok = !npurt_graph_input(g, "x", NPURT_F32, 2, (uint64_t[]){ B, I }, &x) &&
	     !npurt_graph_constant(g, "w", NPURT_F32, 2, (uint64_t[]){ I, O }, w, &c) &&
	     !npurt_op_lookup("gemm", &n.op);
	n.in[0] = x;
	n.in[1] = c;
	ok = ok && !npurt_graph_add(g, &n, &t);
	n = (npurt_graph_node){ .size = sizeof(n), .in = { t } };
	ok = ok && !npurt_op_lookup("relu", &n.op) && !npurt_graph_add(g, &n, &t) &&
	     !npurt_graph_output(g, t, "y") && !npurt_graph_serialize(g, file, len, &info);
	npurt_graph_destroy(g);
	return ok ? 0 : -1;
}

FIXTURE(run) {
	char npurun[PATH_MAX], dir[64], model[128];
};

FIXTURE_SETUP(run)
{
	void *file = NULL;
	size_t len = 0;
	FILE *f;

	ASSERT_NE(NULL, npu_built("bin", "npurun", self->npurun, sizeof(self->npurun)));
	snprintf(self->dir, sizeof(self->dir), "/tmp/npurun_test.%d", (int)getpid());
	ASSERT_EQ(0, mkdir(self->dir, 0700));
	snprintf(self->model, sizeof(self->model), "%s/m.npumodel", self->dir);
	ASSERT_EQ(0, build(&file, &len)) TH_LOG("%s", npurt_last_error());
	f = fopen(self->model, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(len, fwrite(file, 1, len, f));
	ASSERT_EQ(0, fclose(f));
	free(file);
}

FIXTURE_TEARDOWN(run)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	if (system(cmd))
		TH_LOG("could not remove %s", self->dir);
}

/* Whether out begins with prefix. */
static bool starts(const char *out, const char *prefix)
{
	return !strncmp(out, prefix, strlen(prefix));
}

/* As many runs as fit in the time asked, and it says how long it ran. */
TEST_F(run, duration_runs_for_its_seconds)
{
	static char out[8192];
	double secs = 0;
	long runs = 0;
	const char *p;

	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -t 1.5 --check %s", self->npurun, self->model))
		TH_LOG("%s", out);
	p = strstr(out, " runs in ");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	while (p > out && p[-1] >= '0' && p[-1] <= '9')
		p--;
	ASSERT_EQ(2, sscanf(p, "%ld runs in %lf s", &runs, &secs)) TH_LOG("%s", out);
	EXPECT_LT(1, runs);
	EXPECT_LE(1.5, secs);
	EXPECT_GT(10.0, secs);
	EXPECT_NE(NULL, strstr(out, "device us: ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "check y: largest difference from the host")) TH_LOG("%s", out);
}

/* --concurrency keeps that many runs in flight through a run loop: each request timed. */
TEST_F(run, concurrency_serves_through_a_run_loop)
{
	static char out[8192];
	const char *p;
	long reached;

	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -C 4 -n 40 %s", self->npurun, self->model))
		TH_LOG("%s", out);
	p = strstr(out, "; 40 runs, 4 in flight (a run loop; up to ");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	/*
	 * The device runs for milliseconds, a push takes microseconds: they
	 * pile up, to the depth and one being handed back.
	 */
	reached = strtol(p + strlen("; 40 runs, 4 in flight (a run loop; up to "), NULL, 10);
	EXPECT_LE(2, reached) TH_LOG("%s", out);
	EXPECT_GE(5, reached) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "latency us (request: push to outputs): p50 ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "throughput: ")) TH_LOG("%s", out);
	/* The overlapping requests have no single device time. */
	EXPECT_EQ(NULL, strstr(out, "device us: ")) TH_LOG("%s", out);
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -C 2 -t 1 %s", self->npurun, self->model))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, ", 2 in flight (a run loop; up to ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, " requests waiting at once) in ")) TH_LOG("%s", out);
}

/* A file it cannot read is named with the reason; bad flags are usage. */
TEST_F(run, what_it_cannot_do_it_says_why)
{
	static char out[8192];

	EXPECT_EQ(0, npu_sh(out, sizeof(out), "%s --version", self->npurun));
	EXPECT_TRUE(starts(out, "npurun 0.")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nlibnpurt 0.")) TH_LOG("%s", out);
	EXPECT_EQ(1, npu_sh(out, sizeof(out), "%s %s/none.npumodel", self->npurun, self->dir));
	EXPECT_NE(NULL, strstr(out, "none.npumodel: No such file or directory")) TH_LOG("%s", out);
	EXPECT_EQ(1, npu_sh(out, sizeof(out), "%s %s", self->npurun, self->dir));
	EXPECT_NE(NULL, strstr(out, ": Is a directory")) TH_LOG("%s", out);
	EXPECT_EQ(1, npu_sh(out, sizeof(out), "%s /dev/null", self->npurun));
	EXPECT_NE(NULL, strstr(out, "/dev/null: empty")) TH_LOG("%s", out);
	EXPECT_EQ(1, npu_sh(out, sizeof(out), "%s -n 1 -i x=%s/none.bin %s", self->npurun, self->dir,
			self->model));
	EXPECT_NE(NULL, strstr(out, "input x: ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "none.bin: No such file or directory")) TH_LOG("%s", out);
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -C 0 %s", self->npurun, self->model));
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -C 17 %s", self->npurun, self->model));
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -C 2 -P 2 %s", self->npurun, self->model));
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -t 0 %s", self->npurun, self->model));
	/* What would be taken and ignored is refused, and says why. */
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -C 2 -T 100 %s", self->npurun, self->model));
	EXPECT_NE(NULL, strstr(out, "-T limits one run at a time")) TH_LOG("%s", out);
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -n 5 -t 2 %s", self->npurun, self->model));
	EXPECT_NE(NULL, strstr(out, "-n counts runs and -t times them")) TH_LOG("%s", out);
	/* After a run loop the model runs bound to npurun's buffers again: --dump reads them. */
	ASSERT_EQ(0, npu_sh(out, sizeof(out), "%s -C 2 -n 4 --dump %s/d %s", self->npurun,
			    self->dir, self->model)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "dump: ")) TH_LOG("%s", out);
	EXPECT_EQ(2, npu_sh(out, sizeof(out), "%s -t soon %s", self->npurun, self->model));
}

TEST_HARNESS_MAIN
