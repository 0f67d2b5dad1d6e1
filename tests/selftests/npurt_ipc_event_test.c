// SPDX-License-Identifier: MIT
/*
 * libnpurt interprocess events (NPURT_EVENT_INTERPROCESS) against npu.ko,
 * on both submission paths: a child process records an event after its
 * device work and the parent's stream waits for it and reads what the
 * child wrote (the child on the other path); in one process they order
 * streams like any event; a failure before the record reaches the
 * event's waiters; bad fds and flags are refused.
 *
 * Streams are held back by a gate: a stream waiting on a notify nobody
 * recorded yet, opened by recording it on another stream.
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define MiB (1u << 20)
#define PATTERN 0x5a5aa5a5u

FIXTURE(ipc) {
	npurt_device *dev;
	npurt_mem *m;			/* markers */
	uint64_t va;
	volatile uint32_t *host;
	npurt_stream *a, *b, *opener;
	npurt_notify *gate;
};

FIXTURE_VARIANT(ipc) {
	const char *env, *other;
	npurt_submit_path path;
};

FIXTURE_VARIANT_ADD(ipc, ioctl) { .env = "ioctl", .other = "io_uring", .path = NPURT_SUBMIT_IOCTL };
FIXTURE_VARIANT_ADD(ipc, io_uring) { .env = "io_uring", .other = "ioctl",
				     .path = NPURT_SUBMIT_IO_URING };

FIXTURE_SETUP(ipc)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->dev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(variant->path, npurt_device_submit_path(self->dev));
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->dev, MiB, &self->m));
	self->va = npurt_mem_device_addr(self->m);
	self->host = npurt_mem_host_ptr(self->m);
	memset((void *)self->host, 0, MiB);
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->a));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->b));
	ASSERT_EQ(NPURT_OK, npurt_stream_create(self->dev, NPURT_PRIORITY_NORMAL, &self->opener));
	ASSERT_EQ(NPURT_OK, npurt_notify_create(self->dev, &self->gate));
}

FIXTURE_TEARDOWN(ipc)
{
	npurt_stream_destroy(self->a);
	npurt_stream_destroy(self->b);
	npurt_stream_destroy(self->opener);
	npurt_notify_destroy(self->gate);
	npurt_mem_free(self->m);
	npurt_device_close(self->dev);
	unsetenv("NPURT_SUBMIT");
	EXPECT_EQ(0, npu_debugfs_value("npu_queues", "io_uring commands: "));
}

#define gate_close(s) ASSERT_EQ(NPURT_OK, npurt_stream_wait_notify((s), self->gate))
#define gate_open() ASSERT_EQ(NPURT_OK, npurt_notify_record(self->gate, self->opener))
#define mark(s, i, v) ASSERT_EQ(NPURT_OK, npurt_memset_async((s), self->va + 4 * (i), (v), 4))

/*
 * The child, on the other submission path: behind the parent's gate, fills
 * the shared buffer and records the shared event, then says so.
 */
static int child(int sock, const char *path)
{
	int fd_ev = npu_recv_fd(sock), fd_mem = npu_recv_fd(sock), fd_gate = npu_recv_fd(sock);
	npurt_device *dev;
	npurt_stream *s;
	npurt_event *ev;
	npurt_notify *gate;
	npurt_mem *m;

	if (fd_ev < 0 || fd_mem < 0 || fd_gate < 0)
		return 2;
	setenv("NPURT_SUBMIT", path, 1);
	if (npurt_device_open(0, &dev) || npurt_stream_create(dev, NPURT_PRIORITY_NORMAL, &s))
		return 3;
	if (npurt_event_import(dev, fd_ev, &ev) || npurt_mem_import(dev, fd_mem, &m) ||
	    npurt_notify_import(dev, fd_gate, &gate))
		return 4;
	close(fd_ev);
	close(fd_mem);
	close(fd_gate);
	if (npurt_stream_wait_notify(s, gate) ||
	    npurt_memset_async(s, npurt_mem_device_addr(m), PATTERN, MiB) ||
	    npurt_event_record(ev, s))
		return 5;
	if (write(sock, "r", 1) != 1)
		return 6;
	if (npurt_stream_synchronize(s))
		return 7;
	npurt_event_destroy(ev);
	npurt_notify_destroy(gate);
	npurt_mem_free(m);
	npurt_stream_destroy(s);
	npurt_device_close(dev);
	return 0;
}

TEST_F(ipc, a_stream_waits_for_a_record_made_in_another_process)
{
	npurt_event *ev;
	npurt_mem *shared;
	int sv[2], fd, status;
	char byte;
	pid_t pid;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, NPURT_EVENT_INTERPROCESS, &ev))
		TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_mem_alloc_flags(self->dev, MiB, NPURT_MEM_SHAREABLE, &shared));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1], variant->other));
	}
	close(sv[1]);
	ASSERT_EQ(NPURT_OK, npurt_event_export(ev, &fd)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(0, npu_send_fd(sv[0], fd));
	close(fd);
	ASSERT_EQ(NPURT_OK, npurt_mem_export(shared, &fd));
	ASSERT_EQ(0, npu_send_fd(sv[0], fd));
	close(fd);
	ASSERT_EQ(NPURT_OK, npurt_notify_export(self->gate, &fd));
	ASSERT_EQ(0, npu_send_fd(sv[0], fd));
	close(fd);

	/* Recorded in the child, behind the gate: not run yet. */
	ASSERT_EQ(1, read(sv[0], &byte, 1));
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_event_query"));
	EXPECT_EQ(NPURT_ERR_TIMEOUT, npurt_event_synchronize_timeout(ev, 100));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->b, ev)) TH_LOG("%s", npurt_last_error());
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->b, self->va, npurt_mem_device_addr(shared), 4096));
	usleep(150000);
	EXPECT_EQ(0, self->host[0]);
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	gate_open();
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(PATTERN, self->host[0]);
	EXPECT_EQ(PATTERN, self->host[4096 / 4 - 1]);
	EXPECT_EQ(NPURT_OK, npurt_event_query(ev)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(ev));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	npurt_mem_free(shared);
	npurt_event_destroy(ev);
	close(sv[0]);
}

TEST_F(ipc, in_one_process_it_orders_streams_like_any_event)
{
	npurt_event *ev, *again;
	int64_t ns;
	int fd;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, NPURT_EVENT_INTERPROCESS, &ev));
	/* Never recorded: complete, and waits on it pass. */
	EXPECT_EQ(NPURT_OK, npurt_event_query(ev)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize_timeout(ev, 0));
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->b, ev)) TH_LOG("%s", npurt_last_error());
	mark(self->b, 0, 1);
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(1, self->host[0]);

	/* A record behind the gate holds back b's work issued after its wait. */
	gate_close(self->a);
	mark(self->a, 1, 2);
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a)) TH_LOG("%s", npurt_last_error());
	mark(self->b, 2, 0);		/* before the wait: runs */
	ASSERT_EQ(NPURT_OK, npurt_stream_wait_event(self->b, ev));
	ASSERT_EQ(NPURT_OK, npurt_memcpy_async(self->b, self->va + 12, self->va + 4, 4));
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	usleep(150000);
	EXPECT_EQ(0, self->host[3]);
	gate_open();
	ASSERT_EQ(NPURT_OK, npurt_stream_synchronize(self->b)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(2, self->host[3]);
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(ev));

	/* Imported in the same process: the same event. Recorded with nothing gathered. */
	ASSERT_EQ(NPURT_OK, npurt_event_export(ev, &fd));
	ASSERT_EQ(NPURT_OK, npurt_event_import(self->dev, fd, &again)) TH_LOG("%s", npurt_last_error());
	close(fd);
	gate_close(self->a);
	ASSERT_EQ(NPURT_OK, npurt_event_record(again, self->a));
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	gate_open();
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize_timeout(ev, 20000)) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_OK, npurt_event_query(again));

	/* Not timed. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_elapsed_ns(ev, again, &ns));
	npurt_event_destroy(again);
	npurt_event_destroy(ev);
}

TEST_F(ipc, a_failure_before_the_record_reaches_its_waiters)
{
	npurt_event *ev;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, NPURT_EVENT_INTERPROCESS, &ev));
	gate_close(self->a);
	/* The top of the device address space: mapped by nothing. */
	ASSERT_EQ(NPURT_OK, npurt_memset_async(self->a, DRM_NPU_VA_END - MiB, 1, 4096));
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	EXPECT_EQ(NPURT_ERR_NOT_READY, npurt_event_query(ev));
	gate_open();
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_event_synchronize_timeout(ev, 20000));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "failed")) TH_LOG("%s", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_event_query(ev));
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_stream_synchronize(self->a));
	/* The failed stream takes no more records. */
	EXPECT_EQ(NPURT_ERR_DEVICE, npurt_event_record(ev, self->a));
	npurt_event_destroy(ev);
}

TEST_F(ipc, bad_fds_and_flags_are_refused)
{
	npurt_event *ev, *local, *out = (npurt_event *)0x1;
	int fd = -7, nfd, closed;

	ASSERT_EQ(NPURT_OK, npurt_event_create_flags(self->dev, NPURT_EVENT_INTERPROCESS, &ev));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->dev, &local));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_create_flags(self->dev,
				NPURT_EVENT_INTERPROCESS | NPURT_EVENT_TIMING, &out));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "not timed")) TH_LOG("%s", npurt_last_error());
	/* A process-local event stays local. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_export(local, &fd));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "NPURT_EVENT_INTERPROCESS"));
	EXPECT_EQ(-7, fd);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_export(ev, NULL));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_import(self->dev, -1, &out));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_event_import"));
	/* Not a syncobj: the device's fd, a notify's. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_import(self->dev, npurt_device_fd(self->dev), &out));
	ASSERT_EQ(NPURT_OK, npurt_notify_export(self->gate, &nfd));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_import(self->dev, nfd, &out));
	close(nfd);
	closed = dup(0);
	ASSERT_LE(0, closed);
	close(closed);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_import(self->dev, closed, &out));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_event_import(NULL, 0, &out));
	EXPECT_EQ((npurt_event *)0x1, out);
	/* Nothing changed: the event still works. */
	ASSERT_EQ(NPURT_OK, npurt_event_record(ev, self->a));
	EXPECT_EQ(NPURT_OK, npurt_event_synchronize(ev)) TH_LOG("%s", npurt_last_error());
	npurt_event_destroy(local);
	npurt_event_destroy(ev);
}

TEST_HARNESS_MAIN
