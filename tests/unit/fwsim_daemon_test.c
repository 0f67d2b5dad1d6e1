// SPDX-License-Identifier: MIT
/*
 * npu-fwsim as a process: this test plays QEMU's ivshmem-doorbell device.
 * It connects to the server socket, checks the setup messages against the
 * ivshmem protocol, maps the device memory it was sent and talks to the
 * firmware through the eventfds, exactly as a guest's doorbell would.
 *
 * The binary is $NPU_FWSIM, or build/bin/npu-fwsim from the top directory.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fwsim_test_util.h"

#define HBM (8u << 20)

extern char **environ;

static const char *fwsim_path(void)
{
	const char *p = getenv("NPU_FWSIM");

	return p ? p : "build/bin/npu-fwsim";
}

/* Start npu-fwsim with `args` (NULL-terminated), stderr into `log`. */
static pid_t spawn_fwsim(const char *const *args, const char *log)
{
	posix_spawn_file_actions_t fa;
	char *argv[32];
	pid_t pid;
	int n = 0;

	argv[n++] = (char *)fwsim_path();
	while (*args && n < 31)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

static int wait_exit(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int file_contains(const char *path, const char *needle)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static int wait_for_socket(const char *path)
{
	struct stat st;

	for (int i = 0; i < 200; i++) {
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
			return 0;
		usleep(10000);
	}
	return -1;
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strncpy(addr.sun_path, path, sizeof(addr.sun_path) - 1);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One protocol message: 0 on success, 1 on EOF, -1 on error/timeout. */
static int recv_msg(int sock, int64_t *value, int *fd)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	struct iovec iov = { .iov_base = value, .iov_len = sizeof(*value) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cmsg;
	ssize_t n;

	*fd = -1;
	if (poll(&pfd, 1, 2000) != 1)
		return -1;
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n == 0)
		return 1;
	if (n != sizeof(*value))
		return -1;
	*value = (int64_t)le64toh((uint64_t)*value);
	cmsg = CMSG_FIRSTHDR(&msg);
	if (cmsg && cmsg->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cmsg), sizeof(int));
	return 0;
}

struct guest {
	int sock;
	int shm_fd;
	struct npu_fw_ctrl *ctrl;
	size_t size;				/* of the device memory */
	int doorbell[NPU_FW_NUM_VECTORS];	/* the device's eventfds */
	int irq[NPU_FW_NUM_VECTORS];		/* our own eventfds */
};

/* Connect and take the whole setup sequence, checking it as we go. */
static int guest_connect(struct __test_metadata *_metadata, const char *path,
			 struct guest *g)
{
	struct stat st;
	int64_t v;
	int fd;

	memset(g, -1, sizeof(*g));
	g->ctrl = NULL;
	g->size = 0;
	g->sock = connect_to(path);
	ASSERT_LE(0, g->sock);

	ASSERT_EQ(0, recv_msg(g->sock, &v, &fd));
	EXPECT_EQ(0, v);		/* protocol version */
	EXPECT_EQ(-1, fd);
	ASSERT_EQ(0, recv_msg(g->sock, &v, &fd));
	EXPECT_EQ(1, v);		/* our peer id */
	EXPECT_EQ(-1, fd);
	ASSERT_EQ(0, recv_msg(g->sock, &v, &g->shm_fd));
	EXPECT_EQ(-1, v);		/* shared memory */
	ASSERT_LE(0, g->shm_fd);
	for (int i = 0; i < NPU_FW_NUM_VECTORS; i++) {
		ASSERT_EQ(0, recv_msg(g->sock, &v, &g->doorbell[i]));
		EXPECT_EQ(0, v);	/* the device is peer 0 */
		ASSERT_LE(0, g->doorbell[i]);
	}
	for (int i = 0; i < NPU_FW_NUM_VECTORS; i++) {
		ASSERT_EQ(0, recv_msg(g->sock, &v, &g->irq[i]));
		EXPECT_EQ(1, v);
		ASSERT_LE(0, g->irq[i]);
	}
	ASSERT_EQ(0, fstat(g->shm_fd, &st));
	g->size = st.st_size;
	g->ctrl = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, g->shm_fd, 0);
	ASSERT_NE(MAP_FAILED, g->ctrl);
	return 0;
}

static void guest_close(struct guest *g)
{
	if (g->ctrl)
		munmap(g->ctrl, g->size);
	for (int i = 0; i < NPU_FW_NUM_VECTORS; i++) {
		if (g->doorbell[i] >= 0)
			close(g->doorbell[i]);
		if (g->irq[i] >= 0)
			close(g->irq[i]);
	}
	if (g->shm_fd >= 0)
		close(g->shm_fd);
	if (g->sock >= 0)
		close(g->sock);
	g->sock = -1;
}

/*
 * A mailbox command like npu.ko's, answered within its 2 s timeout:
 * returns its status, or -1000 when it was not answered in time.
 */
static int guest_cmd(struct guest *g, uint32_t opcode, uint64_t a0, uint64_t a1)
{
	struct npu_fw_mbox *mb = &g->ctrl->mbox;
	uint32_t seq = mb->seq + 1;
	struct pollfd pfd = { .fd = g->irq[NPU_VEC_MBOX], .events = POLLIN };
	uint64_t one = 1, count;

	mb->opcode = opcode;
	mb->args[0] = a0;
	mb->args[1] = a1;
	__atomic_store_n(&mb->seq, seq, __ATOMIC_RELEASE);
	if (write(g->doorbell[NPU_VEC_MBOX], &one, sizeof(one)) != sizeof(one))
		return -1000;
	if (poll(&pfd, 1, 2000) != 1 || read(pfd.fd, &count, sizeof(count)) != sizeof(count))
		return -1000;
	if (__atomic_load_n(&mb->done_seq, __ATOMIC_ACQUIRE) != seq)
		return -1000;
	return mb->status;
}

/* PING through the mailbox; returns 0 when answered in time. */
static int guest_ping(struct guest *g, uint64_t cookie)
{
	if (guest_cmd(g, NPU_FW_CMD_PING, cookie, 0))
		return -1;
	return g->ctrl->mbox.result[0] == cookie ? 0 : -1;
}

FIXTURE(daemon) {
	char dir[64], sock[96], log[96];
	pid_t pid;
};

FIXTURE_SETUP(daemon)
{
	strcpy(self->dir, "/tmp/npu-fwsim-test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/npu.sock", self->dir);
	snprintf(self->log, sizeof(self->log), "%s/fwsim.log", self->dir);
	const char *args[] = { "-s", self->sock, "--hbm-size", "8M", "--queues", "4",
			       "--cores", "3", "--heartbeat-ms", "10", "-v", NULL };
	self->pid = spawn_fwsim(args, self->log);
	ASSERT_LT(0, self->pid);
	ASSERT_EQ(0, wait_for_socket(self->sock));
}

FIXTURE_TEARDOWN(daemon)
{
	if (self->pid > 0) {
		kill(self->pid, SIGTERM);
		wait_exit(self->pid);
	}
	unlink(self->sock);
	unlink(self->log);
	rmdir(self->dir);
}

TEST_F(daemon, setup_follows_ivshmem_protocol)
{
	struct guest g;
	struct stat st;

	guest_connect(_metadata, self->sock, &g);
	ASSERT_EQ(0, fstat(g.shm_fd, &st));
	EXPECT_EQ(HBM, st.st_size);
	EXPECT_EQ(NPU_FW_MAGIC, g.ctrl->magic);
	EXPECT_EQ(HBM, g.ctrl->hbm_size);
	EXPECT_EQ(4, g.ctrl->num_queues);
	EXPECT_EQ(3, g.ctrl->num_cores);
	EXPECT_EQ(0, g.ctrl->fw_peer_id);
	EXPECT_EQ(NPU_FW_STATE_READY, g.ctrl->state);
	guest_close(&g);
}

TEST_F(daemon, ping_over_doorbell_and_interrupt)
{
	struct guest g;

	guest_connect(_metadata, self->sock, &g);
	for (uint64_t i = 1; i <= 100; i++)
		ASSERT_EQ(0, guest_ping(&g, i * 0x9e3779b97f4a7c15ull));
	guest_close(&g);
}

TEST_F(daemon, second_guest_is_turned_away)
{
	struct guest a;
	int64_t v;
	int b, fd;

	guest_connect(_metadata, self->sock, &a);
	b = connect_to(self->sock);
	ASSERT_LE(0, b);
	EXPECT_EQ(1, recv_msg(b, &v, &fd));	/* EOF, no setup */
	close(b);
	EXPECT_EQ(0, guest_ping(&a, 42));	/* the first guest is unharmed */
	guest_close(&a);
}

TEST_F(daemon, new_guest_gets_a_fresh_device)
{
	struct guest g;

	guest_connect(_metadata, self->sock, &g);
	ASSERT_EQ(0, guest_ping(&g, 1));
	ASSERT_EQ(0, guest_ping(&g, 2));
	memset((char *)g.ctrl + NPU_FW_RESERVED_SIZE, 0x5a, 4096);
	guest_close(&g);
	usleep(50000);	/* let the daemon see the hang-up */

	guest_connect(_metadata, self->sock, &g);
	EXPECT_EQ(0, g.ctrl->mbox.seq);
	EXPECT_EQ(NPU_FW_STATE_READY, g.ctrl->state);
	/* Memory the old guest wrote does not leak to the new one. */
	EXPECT_EQ(0, ((unsigned char *)g.ctrl)[NPU_FW_RESERVED_SIZE]);
	EXPECT_EQ(0, guest_ping(&g, 3));
	guest_close(&g);
}

TEST_F(daemon, heartbeat_advances)
{
	struct guest g;
	uint64_t before;

	guest_connect(_metadata, self->sock, &g);
	before = __atomic_load_n(&g.ctrl->heartbeat, __ATOMIC_ACQUIRE);
	usleep(200000);	/* 20 periods of 10 ms */
	EXPECT_LE(before + 5, __atomic_load_n(&g.ctrl->heartbeat, __ATOMIC_ACQUIRE));
	guest_close(&g);
}

/*
 * The management side never waits for the AI cores: with a GEMM computing
 * for seconds, the mailbox answers within the driver's timeout and the
 * heartbeat goes on, while the launch's queue still has it at head.
 */
TEST_F(daemon, mailbox_and_heartbeat_go_on_during_a_long_launch)
{
	const uint64_t ring_off = 1u << 20, data = 2u << 20, va = TEST_VA_BASE;
	uint64_t expect_ms, kdim = long_gemm_k(4000, 2, &expect_ms), hb;
	struct npu_fw_queue *q;
	struct npu_fw_task *t;
	struct pt_pool pool;
	struct guest g;
	uint8_t *hbm;
	uint64_t one = 1;

	guest_connect(_metadata, self->sock, &g);
	hbm = (uint8_t *)g.ctrl;
	pool.hbm = hbm;
	pool.next = 6u << 20;
	q = (struct npu_fw_queue *)(hbm + NPU_FW_QUEUE_TABLE);
	q->pt_root = pt_alloc(&pool);
	pt_map(&pool, q->pt_root, va, data, 2u << 20, NPU_PTE_WRITE);
	*(float *)(hbm + data) = 1.0f;				/* A */
	for (int i = 0; i < LONG_N; i++)
		((float *)(hbm + data + 4096))[i] = 1.0f;	/* B */
	memset(hbm + data + 65536, 0x5a, LONG_C_BYTES);		/* C */
	long_gemm_args((struct npu_op_args *)(hbm + data + (1u << 20)),
		       va, va + 4096, va + 65536, kdim);
	q->ring_offset = ring_off;
	q->ring_entries = 64;
	q->context = 1;
	q->priority = 0;
	q->tail = 0;
	ASSERT_EQ(0, guest_cmd(&g, NPU_FW_CMD_QUEUE_START, 0, 0));
	t = (struct npu_fw_task *)(hbm + ring_off);
	memset(t, 0, 3 * sizeof(*t));
	t[0].type = NPU_FW_TASK_FENCE;
	t[0].args[0] = 1;
	t[1].type = NPU_FW_TASK_KERNEL;
	t[1].args[0] = va + (1u << 20);
	t[1].args[2] = sizeof(struct npu_op_args);
	t[2].type = NPU_FW_TASK_FENCE;
	t[2].args[0] = 2;
	__atomic_store_n(&q->tail, 3, __ATOMIC_RELEASE);
	ASSERT_EQ(sizeof(one), write(g.doorbell[NPU_VEC_QUEUE], &one, sizeof(one)));
	for (int i = 0; i < 5000 && __atomic_load_n(&q->done_seq, __ATOMIC_ACQUIRE) < 1; i++)
		usleep(1000);
	ASSERT_EQ(1, q->done_seq);
	usleep(20000);		/* the kernel is next: now it computes */

	EXPECT_EQ(0, guest_ping(&g, 77)) TH_LOG("no answer within 2 s");
	hb = __atomic_load_n(&g.ctrl->heartbeat, __ATOMIC_ACQUIRE);
	usleep(200000);		/* 20 periods */
	EXPECT_LE(hb + 5, __atomic_load_n(&g.ctrl->heartbeat, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, guest_cmd(&g, NPU_FW_CMD_TLB_INVALIDATE, 0, 0));
	EXPECT_EQ(1, __atomic_load_n(&q->head, __ATOMIC_ACQUIRE))
		TH_LOG("the launch (%llu ms expected) finished first",
		       (unsigned long long)expect_ms);
	EXPECT_EQ(NPU_QUEUE_RUNNING, q->state) TH_LOG("error %u", q->error);
	EXPECT_LE(100, __atomic_load_n(&q->exec_ms, __ATOMIC_ACQUIRE));	/* computing */
	EXPECT_EQ(0, guest_cmd(&g, NPU_FW_CMD_QUEUE_STOP, 0, 0));
	EXPECT_EQ(NPU_QUEUE_STOPPED, q->state);
	guest_close(&g);
}

TEST_F(daemon, sigterm_halts_and_cleans_up)
{
	struct guest g;
	struct stat st;

	guest_connect(_metadata, self->sock, &g);
	ASSERT_EQ(0, kill(self->pid, SIGTERM));
	EXPECT_EQ(0, wait_exit(self->pid));
	self->pid = 0;
	EXPECT_EQ(NPU_FW_STATE_HALTED, g.ctrl->state);
	EXPECT_EQ(-1, stat(self->sock, &st));
	guest_close(&g);
}

TEST_F(daemon, live_socket_is_not_stolen)
{
	const char *args[] = { "-s", self->sock, NULL };
	char log[128];
	pid_t pid;

	snprintf(log, sizeof(log), "%s/second.log", self->dir);
	pid = spawn_fwsim(args, log);
	ASSERT_LT(0, pid);
	EXPECT_EQ(1, wait_exit(pid));
	EXPECT_TRUE(file_contains(log, "Address already in use"));
	unlink(log);
	/* The first daemon still serves. */
	struct guest g;

	guest_connect(_metadata, self->sock, &g);
	EXPECT_EQ(0, guest_ping(&g, 5));
	guest_close(&g);
}

TEST(stale_socket_is_replaced)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/npu-fwsim-test.XXXXXX", log[96];
	int fd;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/npu.sock", dir);
	snprintf(log, sizeof(log), "%s/fwsim.log", dir);
	/* A socket file with nobody behind it, as a killed daemon leaves. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&addr, sizeof(addr)));
	close(fd);

	const char *args[] = { "-s", addr.sun_path, "--hbm-size", "8M", NULL };
	pid_t pid = spawn_fwsim(args, log);
	struct guest g;

	ASSERT_LT(0, pid);
	usleep(100000);
	guest_connect(_metadata, addr.sun_path, &g);
	EXPECT_EQ(0, guest_ping(&g, 6));
	guest_close(&g);
	kill(pid, SIGTERM);
	EXPECT_EQ(0, wait_exit(pid));
	unlink(log);
	rmdir(dir);
}

struct bad_args {
	const char *args[8];
	const char *message;
};

TEST(bad_arguments_fail_clearly)
{
	static const struct bad_args cases[] = {
		{ { NULL }, "--socket PATH is required" },
		{ { "-s", "/tmp/x.sock", "--hbm-size", "3M", NULL }, "power of two" },
		{ { "-s", "/tmp/x.sock", "--hbm-size", "2M", NULL }, "between 4 MiB" },
		{ { "-s", "/tmp/x.sock", "--hbm-size", "lots", NULL }, "bad --hbm-size" },
		{ { "-s", "/tmp/x.sock", "--queues", "0", NULL }, "queue count" },
		{ { "-s", "/tmp/x.sock", "--cores", "-1", NULL }, "bad --cores" },
		{ { "-s", "/tmp/x.sock", "--bogus", NULL }, "usage:" },
		{ { "-s", "/tmp/x.sock", "extra", NULL }, "unexpected argument" },
	};
	char log[] = "/tmp/npu-fwsim-args.XXXXXX";
	int fd = mkstemp(log);

	ASSERT_LE(0, fd);
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = spawn_fwsim(cases[i].args, log);

		ASSERT_LT(0, pid);
		EXPECT_EQ(2, wait_exit(pid)) TH_LOG("case %zu", i);
		EXPECT_TRUE(file_contains(log, cases[i].message))
			TH_LOG("case %zu: no '%s' in the message", i, cases[i].message);
	}
	unlink(log);
}

TEST_HARNESS_MAIN
