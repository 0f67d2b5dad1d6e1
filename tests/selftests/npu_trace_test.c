// SPDX-License-Identifier: MIT
/*
 * The driver's tracepoints (kernel/npu_trace.h) as perf and trace-cmd see
 * them in tracefs: a batch's submit, run and done in that order with its
 * context, queue and seq; a fault with where it happened; a posted TLB
 * invalidation when a mapped buffer goes. Root only (tracefs).
 */
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"

#define SEC (1000000000ll)

static char tracing[64];

/* tracefs, mounted if it is not: 0, or -1 (the test skips). */
static int find_tracefs(void)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	struct stat st;

	for (int i = 0; i < 2; i++) {
		char p[96];

		snprintf(p, sizeof(p), "%s/events/npu", where[i]);
		if (!stat(p, &st)) {
			snprintf(tracing, sizeof(tracing), "%s", where[i]);
			return 0;
		}
	}
	if (mount("tracefs", where[0], "tracefs", 0, NULL))
		return -1;
	snprintf(tracing, sizeof(tracing), "%s", where[0]);
	return 0;
}

static int trace_write(const char *file, const char *text)
{
	char p[128];
	int fd, ret;

	snprintf(p, sizeof(p), "%s/%s", tracing, file);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	ret = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return ret;
}

/* The trace buffer as text (static, truncated at its size). */
static const char *trace_read(void)
{
	static char buf[1 << 20];
	char p[128];

	snprintf(p, sizeof(p), "%s/trace", tracing);
	if (npu_read_file(p, buf, sizeof(buf)))
		return "";
	return buf;
}

FIXTURE(tr) {
	int fd;
	unsigned int ctx;
};

FIXTURE_SETUP(tr)
{
	if (geteuid() || find_tracefs())
		SKIP(return, "tracefs needs root");
	ASSERT_EQ(0, trace_write("events/npu/enable", "1"));
	ASSERT_EQ(0, trace_write("trace", ""));		/* empties the buffer */
	self->fd = npu_open();
	ASSERT_LE(0, self->fd);
	self->ctx = npu_client_id(self->fd);
	ASSERT_NE(0, self->ctx);
}

FIXTURE_TEARDOWN(tr)
{
	if (self->fd > 0)
		close(self->fd);
	trace_write("events/npu/enable", "0");
}

/* Where `event` for ctx, queue and seq first shows in the buffer, or NULL. */
static const char *find(const char *buf, const char *event, unsigned int ctx, uint32_t queue,
			uint64_t seq, const char *more)
{
	char want[160];

	snprintf(want, sizeof(want), "%s: ctx=%u queue=%u hw=", event, ctx, queue);
	for (const char *p = strstr(buf, want); p; p = strstr(p + 1, want)) {
		char tail[64];
		const char *s = strstr(p, " seq=");
		const char *eol = strchr(p, '\n');

		snprintf(tail, sizeof(tail), " seq=%llu ", (unsigned long long)seq);
		if (s && (!eol || s < eol) && !strncmp(s, tail, strlen(tail)) &&
		    (!more || (strstr(p, more) && (!eol || strstr(p, more) < eol))))
			return p;
	}
	return NULL;
}

TEST_F(tr, a_batch_is_submitted_run_and_done_in_order)
{
	struct drm_npu_bo_create bo;
	struct drm_npu_task t[2];
	uint64_t seq = 0;
	uint32_t queue;
	const char *buf, *sub, *run, *done;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &queue));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	t[0] = npu_task_fill(bo.device_va, 4096, 1);
	t[1] = npu_task_fill(bo.device_va, 64, 2);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 2, &seq));
	ASSERT_EQ(0, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	buf = trace_read();
	sub = find(buf, "npu_submit", self->ctx, queue, 2, "tasks=2");
	run = find(buf, "npu_run", self->ctx, queue, 2, "tasks=2");
	done = find(buf, "npu_done", self->ctx, queue, 2, "error=0");
	ASSERT_NE(NULL, sub) TH_LOG("%.2000s", buf);
	ASSERT_NE(NULL, run) TH_LOG("%.2000s", buf);
	ASSERT_NE(NULL, done) TH_LOG("%.2000s", buf);
	EXPECT_LT(sub, run);
	EXPECT_LT(run, done);
	EXPECT_NE(NULL, find(buf, "npu_done", self->ctx, queue, 3, "error=0"));
	npu_gem_close(self->fd, bo.handle);
}

TEST_F(tr, a_fault_says_where_and_fails_the_batch)
{
	struct drm_npu_bo_create bo;
	struct drm_npu_task t[2];
	uint64_t seq = 0, hole;
	uint32_t queue;
	char where[64];
	const char *buf;

	ASSERT_EQ(0, npu_queue_create(self->fd, DRM_NPU_QUEUE_PRIORITY_NORMAL, 0, 0, &queue));
	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	hole = bo.device_va + (1ull << 30);
	t[0] = npu_task_fill(bo.device_va, 64, 1);
	t[1] = npu_task_copy(bo.device_va, hole, 64);
	ASSERT_EQ(0, npu_submit_on(self->fd, queue, t, 2, &seq));
	EXPECT_EQ(-EIO, npu_wait_on(self->fd, queue, seq, 10 * SEC, NULL));
	buf = trace_read();
	snprintf(where, sizeof(where), "task=1 address=%#llx read", (unsigned long long)hole);
	EXPECT_NE(NULL, find(buf, "npu_queue_fault", self->ctx, queue, seq, where))
		TH_LOG("%.2000s", buf);
	EXPECT_NE(NULL, find(buf, "npu_done", self->ctx, queue, seq, "error=-5"))
		TH_LOG("%.2000s", buf);
	npu_gem_close(self->fd, bo.handle);
}

/* A mapped buffer's last handle going: its translations are invalidated. */
TEST_F(tr, freeing_a_buffer_invalidates_its_translations)
{
	struct drm_npu_bo_create bo;
	char want[64];

	ASSERT_EQ(0, npu_bo_create(self->fd, 4096, DRM_NPU_BO_PAGE_NORMAL_ONLY, &bo));
	ASSERT_EQ(0, npu_gem_close(self->fd, bo.handle));
	snprintf(want, sizeof(want), "npu_tlb_invalidate: ctx=%u ticket=", self->ctx);
	const char *buf = trace_read(), *p = strstr(buf, want);

	ASSERT_NE(NULL, p) TH_LOG("%.2000s", buf);
	EXPECT_NE(NULL, strstr(p, "result=0"));
}

TEST_HARNESS_MAIN
