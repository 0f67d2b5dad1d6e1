// SPDX-License-Identifier: MIT
/*
 * libnpurt without a device: argument checking, statuses and the
 * per-thread error message. Runs on any host; tests/selftests/ covers the
 * library against the real driver in the VM.
 */
#include <pthread.h>
#include <math.h>
#include <string.h>

#include <drm/npu_accel.h>

#include "kselftest_harness.h"
#include "npurt.h"

TEST(null_arguments_are_invalid)
{
	npurt_device_info info;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_count(NULL));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_device_count"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_open(0, NULL));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "dev is NULL"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_get_info(NULL, &info));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_device_ping(NULL, NULL));
	EXPECT_EQ(-1, npurt_device_fd(NULL));
	npurt_device_close(NULL);	/* accepted, like free(NULL) */
}

TEST(missing_device_is_no_device)
{
	npurt_device *dev = (npurt_device *)0x1;
	int count = -1;

	ASSERT_EQ(NPURT_OK, npurt_device_count(&count));
	ASSERT_LE(0, count);
	EXPECT_EQ(NPURT_ERR_NO_DEVICE, npurt_device_open(count, &dev));
	EXPECT_EQ((npurt_device *)0x1, dev);	/* untouched on failure */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_device_open"));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "found"));
	EXPECT_EQ(NPURT_ERR_NO_DEVICE, npurt_device_open(-1, &dev));
}

TEST(streams_memory_and_events_check_their_arguments)
{
	npurt_stream *s = (npurt_stream *)0x1;
	npurt_event *ev = (npurt_event *)0x1;
	npurt_mem *m = (npurt_mem *)0x1;
	int64_t ns;

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_create(NULL, NPURT_PRIORITY_NORMAL, &s));
	EXPECT_EQ((npurt_stream *)0x1, s);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_synchronize(NULL));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_stream_synchronize"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_memset_async(NULL, 0, 0, 4));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_memcpy_async(NULL, 0, 0, 4));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc(NULL, 4096, &m));
	EXPECT_EQ((npurt_mem *)0x1, m);
	EXPECT_EQ(NULL, npurt_mem_host_ptr(NULL));
	EXPECT_EQ(0, npurt_mem_device_addr(NULL));
	EXPECT_EQ(0, npurt_mem_size(NULL));
	EXPECT_EQ(0, npurt_mem_page_size(NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_flags(NULL, 4096, 0, &m));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_alloc_flags"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_alloc_async(NULL, 4096, 0, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_free_async(NULL, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_trim(NULL, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_set_release_threshold(NULL, 0));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_get_usage(NULL, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_alloc(NULL, 4096, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_host_register(NULL, &ns, 8, 0, &m));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_export(NULL, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_mem_import(NULL, 0, &m));
	EXPECT_EQ((npurt_mem *)0x1, m);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_create(NULL, &ev));
	EXPECT_EQ((npurt_event *)0x1, ev);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_record(NULL, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_stream_wait_event(NULL, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_synchronize(NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_elapsed_ns(NULL, NULL, &ns));
	EXPECT_EQ(NPURT_SUBMIT_IOCTL, npurt_device_submit_path(NULL));
	/* Like free(NULL). */
	npurt_stream_destroy(NULL);
	npurt_event_destroy(NULL);
	npurt_mem_free(NULL);
}

TEST(runtime_version_is_the_headers)
{
	uint32_t major = 99, minor = 99, patch = 99;

	npurt_runtime_version(&major, &minor, &patch);
	EXPECT_EQ(NPURT_VERSION_MAJOR, major);
	EXPECT_EQ(NPURT_VERSION_MINOR, minor);
	EXPECT_EQ(NPURT_VERSION_PATCH, patch);
	npurt_runtime_version(NULL, NULL, NULL);	/* accepted */
}

TEST(status_names_are_distinct)
{
	for (int a = NPURT_OK; a <= NPURT_ERR_CAPTURE; a++) {
		EXPECT_EQ(0, strncmp(npurt_status_name(a), "NPURT_", 6));
		for (int b = a + 1; b <= NPURT_ERR_CAPTURE; b++)
			EXPECT_NE(0, strcmp(npurt_status_name(a), npurt_status_name(b)));
	}
	EXPECT_STREQ("NPURT_ERR_UNKNOWN", npurt_status_name((npurt_status)999));
}

/*
 * Graph builders and executors need no device: used once destroyed, or
 * destroyed twice, they are refused by name and never read.
 */
TEST(graphs_and_executors_used_after_destroy_are_refused)
{
	npurt_exec *e;
	npurt_graph *g;
	uint32_t t;

	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	ASSERT_EQ(NPURT_OK, npurt_graph_input(g, "x", NPURT_F32, 1, (uint64_t[]){ 4 }, &t));
	npurt_graph_destroy(g);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_graph_input(g, "y", NPURT_F32, 1, (uint64_t[]){ 4 }, &t));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "is no live npurt_graph")) TH_LOG("%s",
										 npurt_last_error());
	npurt_graph_destroy(g);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_graph_destroy: "));

	ASSERT_EQ(NPURT_OK, npurt_exec_create(&e));
	npurt_exec_destroy(e);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_run(e));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_exec_run: ")) TH_LOG("%s",
									 npurt_last_error());
	npurt_exec_destroy(e);
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_exec_destroy: "));
	/* One for the other. */
	ASSERT_EQ(NPURT_OK, npurt_graph_create(&g));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_exec_run((npurt_exec *)g));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "is an npurt_graph, not an npurt_exec"));
	npurt_graph_destroy(g);
}

/*
 * npurt_launch_init(): the size set, and each op's parameters as ONNX
 * defaults them, so a descriptor made with it never means GEMM alpha 0.
 */
TEST(launch_init_fills_each_ops_defaults)
{
	npurt_launch_desc d;
	uint32_t id;

	memset(&d, 0x5a, sizeof(d));
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("gemm", &id));
	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, id));
	EXPECT_EQ(sizeof(d), d.size);
	EXPECT_EQ(id, d.op);
	EXPECT_EQ(1.0f, d.alpha);
	EXPECT_EQ(0.0f, d.beta);
	EXPECT_EQ(0u, d.flags);
	EXPECT_EQ(0u, d.in[0].ndim);
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("hard_sigmoid", &id));
	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, id));
	EXPECT_EQ(0.2f, d.alpha);
	EXPECT_EQ(0.5f, d.beta);
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("clip", &id));
	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, id));
	EXPECT_TRUE(isinf(d.alpha) && d.alpha < 0 && isinf(d.beta) && d.beta > 0);
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("add", &id));
	ASSERT_EQ(NPURT_OK, npurt_launch_init(&d, id));
	EXPECT_EQ(0.0f, d.alpha);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch_init(&d, 12345));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "unknown op 12345"));
	EXPECT_EQ(id, d.op);		/* untouched on failure */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_launch_init(NULL, id));
}

/*
 * Ops by name in any case, every one of them listed by npurt_op_at(), a
 * misspelt one answered with the names it is close to; task types and
 * device statuses in words.
 */
TEST(ops_are_found_listed_and_misspellings_answered)
{
	uint32_t id, gemm = 0, n = npurt_op_count();
	const char *name;

	ASSERT_LT(70u, n);
	for (uint32_t i = 0; i < n; i++) {
		ASSERT_EQ(NPURT_OK, npurt_op_at(i, &id, &name));
		EXPECT_STREQ(name, npurt_op_name(id));
		ASSERT_EQ(NPURT_OK, npurt_op_lookup(name, &gemm));
		EXPECT_EQ(id, gemm);
	}
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_op_at(n, &id, &name));
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("GEMM", &id));
	EXPECT_STREQ("gemm", npurt_op_name(id));
	ASSERT_EQ(NPURT_OK, npurt_op_lookup("LayerNorm", &id));
	EXPECT_STREQ("layernorm", npurt_op_name(id));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_op_lookup("Relu6", &id));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "no op \"Relu6\"; did you mean relu"))
		TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_op_at()"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_op_lookup("reduce", &id));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "reduce_sum, reduce_mean"))
		TH_LOG("%s", npurt_last_error());

	EXPECT_STREQ("copy", npurt_task_type_name(DRM_NPU_TASK_COPY));
	EXPECT_STREQ("kernel launch", npurt_task_type_name(DRM_NPU_TASK_KERNEL));
	EXPECT_EQ(NULL, npurt_task_type_name(3));	/* a number no task has */
	EXPECT_EQ(NULL, npurt_task_type_name(1000));
	EXPECT_STREQ("memory fault", npurt_device_status_name(DRM_NPU_JOB_FAULT));
	EXPECT_STREQ("no progress within the time limit",
		     npurt_device_status_name(DRM_NPU_JOB_TIMEOUT));
	EXPECT_EQ(NULL, npurt_device_status_name(99));
}

static void *fail_in_thread(void *arg)
{
	npurt_device *dev;

	npurt_device_open(-5, &dev);
	return strstr(npurt_last_error(), "(-5)") ? arg : NULL;
}

TEST(last_error_is_per_thread)
{
	pthread_t t;
	void *ret;

	npurt_device_count(NULL);
	ASSERT_EQ(0, pthread_create(&t, NULL, fail_in_thread, (void *)1));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ((void *)1, ret);
	/* The other thread's failure did not overwrite ours. */
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_device_count"));
}

TEST_HARNESS_MAIN
