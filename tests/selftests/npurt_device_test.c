// SPDX-License-Identifier: MIT
/*
 * libnpurt against npu.ko in the VM: discovery finds the device the
 * driver bound, and the info it reports is what npu-fwsim was started with.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_dev.h"
#include "npu_fw_if.h"
#include "npu_selftest.h"
#include "npurt.h"

TEST(finds_exactly_the_bound_device)
{
	char node[64], bdf[32];
	npurt_device_info info;
	npurt_device *dev = NULL;
	int count = -1;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	ASSERT_EQ(NPURT_OK, npurt_device_count(&count));
	EXPECT_EQ(1, count);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_device_get_info(dev, &info));
	EXPECT_STREQ(node, info.node);
	EXPECT_STREQ(bdf, info.bus_id);
	EXPECT_STREQ("npu", info.driver);
	EXPECT_LE(0, npurt_device_fd(dev));
	npurt_device_close(dev);

	EXPECT_EQ(NPURT_ERR_NO_DEVICE, npurt_device_open(1, &dev));
}

TEST(info_matches_fwsim)
{
	uint64_t hbm = npu_env("NPU_TEST_HBM_SIZE");
	npurt_device_info a, b;
	npurt_device *dev;

	if (!hbm)
		SKIP(return, "NPU_TEST_HBM_SIZE not set (run under tests/vm/run)");
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev));
	ASSERT_EQ(NPURT_OK, npurt_device_get_info(dev, &a));
	EXPECT_EQ(hbm, a.hbm_size);
	EXPECT_GT(a.hbm_size, a.hbm_used);
	EXPECT_EQ(npu_env("NPU_TEST_QUEUES"), a.queue_count);
	EXPECT_EQ(npu_env("NPU_TEST_CORES"), a.core_count);
	EXPECT_EQ(npu_env("NPU_TEST_CORE_GROUPS"), a.core_group_count);
	EXPECT_EQ(npu_env("NPU_TEST_DMA_ENGINES"), a.dma_engine_count);
	EXPECT_EQ(NPU_FW_IF_MAJOR, a.if_version[0]);
	/* The firmware's version, field by field (major << 16 | minor << 8 | patch). */
	EXPECT_EQ((NPU_DEV_FW_VERSION >> 16) & 0xff, a.fw_version[0]);
	EXPECT_EQ((NPU_DEV_FW_VERSION >> 8) & 0xff, a.fw_version[1]);
	EXPECT_EQ(NPU_DEV_FW_VERSION & 0xff, a.fw_version[2]);
	usleep(a.heartbeat_ms * 5 * 1000);
	ASSERT_EQ(NPURT_OK, npurt_device_get_info(dev, &b));
	EXPECT_LT(a.heartbeat, b.heartbeat);	/* live, not cached */
	npurt_device_close(dev);
}

TEST(ping_reports_round_trip)
{
	npurt_device *dev;
	uint64_t rtt = 0;

	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &dev));
	EXPECT_EQ(NPURT_OK, npurt_device_ping(dev, &rtt));
	EXPECT_LT(0, rtt);
	npurt_device_close(dev);
}

TEST(unopenable_node_is_permission_error)
{
	char node[64], bdf[32];
	struct stat st;
	npurt_device *dev = NULL;
	npurt_status st_open;

	ASSERT_EQ(0, npu_find(node, sizeof(node), bdf, sizeof(bdf)));
	ASSERT_EQ(0, stat(node, &st));
	/* Drop root's bypass: an unprivileged user is what this is about. */
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		st_open = npurt_device_open(0, &dev);
		_exit(st_open == NPURT_ERR_PERMISSION &&
		      strstr(npurt_last_error(), "Permission denied") ? 0 : 1);
	}
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * In a child with `level` in NPURT_LOG (NULL: unset) and its log and
 * stderr in files: a device, a stream, a fill, a refused call. The log's
 * text and stderr's, in `log` and `err`.
 */
static void logged_child(struct __test_metadata *_metadata, const char *level, char *log,
			 size_t loglen, char *err, size_t errlen)
{
	char logpath[] = "/tmp/npurt-log-XXXXXX", errpath[] = "/tmp/npurt-err-XXXXXX";
	int lfd = mkstemp(logpath), efd = mkstemp(errpath), status;
	pid_t pid;

	ASSERT_LE(0, lfd);
	ASSERT_LE(0, efd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		npurt_device *dev;
		npurt_stream *s;
		npurt_mem *m;

		if (level)
			setenv("NPURT_LOG", level, 1);
		setenv("NPURT_LOG_FILE", logpath, 1);
		dup2(efd, 2);
		if (npurt_device_open(0, &dev) || npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s) ||
		    npurt_mem_alloc(dev, 4096, &m) ||
		    npurt_memset_async(s, npurt_mem_device_addr(m), 1, 4096) ||
		    npurt_stream_synchronize(s))
			_exit(2);
		if (npurt_memset_async(s, npurt_mem_device_addr(m), 1, 0) != NPURT_ERR_INVALID)
			_exit(3);
		npurt_mem_free(m);
		npurt_stream_destroy(s);
		npurt_device_close(dev);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	npu_read_file(logpath, log, loglen);
	npu_read_file(errpath, err, errlen);
	unlink(logpath);
	unlink(errpath);
	close(lfd);
	close(efd);
}

TEST(the_log_says_what_it_is_asked_to_and_is_silent_by_default)
{
	static char log[1 << 16], err[4096];

	logged_child(_metadata, NULL, log, sizeof(log), err, sizeof(err));
	EXPECT_STREQ("", log);
	EXPECT_STREQ("", err);
	logged_child(_metadata, "error", log, sizeof(log), err, sizeof(err));
	EXPECT_NE(NULL, strstr(log, " error NPURT_ERR_INVALID: npurt_memset_async")) TH_LOG("%s", log);
	EXPECT_EQ(NULL, strstr(log, " info ")) TH_LOG("%s", log);
	logged_child(_metadata, "info", log, sizeof(log), err, sizeof(err));
	EXPECT_NE(NULL, strstr(log, " info  device 0: ")) TH_LOG("%s", log);
	EXPECT_NE(NULL, strstr(log, "stream ")) TH_LOG("%s", log);
	EXPECT_NE(NULL, strstr(log, ": closing")) TH_LOG("%s", log);
	EXPECT_EQ(NULL, strstr(log, " debug ")) TH_LOG("%s", log);
	logged_child(_metadata, "debug", log, sizeof(log), err, sizeof(err));
	EXPECT_NE(NULL, strstr(log, " debug npurt_stream_synchronize: queue ")) TH_LOG("%s", log);
	EXPECT_STREQ("", err);
	logged_child(_metadata, "loud", log, sizeof(log), err, sizeof(err));
	EXPECT_STREQ("", log);
	EXPECT_NE(NULL, strstr(err, "NPURT_LOG=loud")) TH_LOG("%s", err);
}

TEST_HARNESS_MAIN
