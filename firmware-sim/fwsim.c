// SPDX-License-Identifier: MIT
/*
 * The daemon: owns HBM (a memfd), the ivshmem server, the heartbeat timer
 * and the guest RAM mapping, and feeds events to the device core from one
 * epoll loop.
 */
#include "fwsim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ivshmem_server.h"

/* epoll tags: small integers below the doorbell vectors' base. */
enum { EV_LISTEN, EV_CLIENT, EV_SIGNAL, EV_TIMER, EV_DOORBELL };

struct fwsim {
	const struct fwsim_opts *opts;
	struct npu_dev dev;
	struct ivs_server srv;
	void *hbm;
	int shm_fd, sig_fd, timer_fd, ep_fd;
	void *guest_ram;
	size_t guest_ram_size;
	bool dev_ready;
};

static void logmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("npu-fwsim: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void raise_irq(void *opaque, unsigned int vector)
{
	struct fwsim *fs = opaque;
	int err = ivs_server_notify(&fs->srv, vector);

	if (err)
		logmsg("cannot raise interrupt %u: %s", vector, strerror(-err));
}

static const struct npu_dev_ops fwsim_dev_ops = {
	.raise_irq = raise_irq,
};

static int ep_add(struct fwsim *fs, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(fs->ep_fd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int map_guest_ram(struct fwsim *fs)
{
	const char *path = fs->opts->guest_ram;
	struct stat st;
	int fd;

	if (!path)
		return 0;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		logmsg("cannot open guest RAM %s: %s", path, strerror(errno));
		goto fail;
	}
	fs->guest_ram = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, 0);
	if (fs->guest_ram == MAP_FAILED) {
		logmsg("cannot map guest RAM %s: %s", path, strerror(errno));
		fs->guest_ram = NULL;
		goto fail;
	}
	fs->guest_ram_size = st.st_size;
	close(fd);
	npu_dev_attach_host_mem(&fs->dev, fs->guest_ram, fs->guest_ram_size);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void unmap_guest_ram(struct fwsim *fs)
{
	npu_dev_attach_host_mem(&fs->dev, NULL, 0);
	if (fs->guest_ram)
		munmap(fs->guest_ram, fs->guest_ram_size);
	fs->guest_ram = NULL;
	fs->guest_ram_size = 0;
}

static void guest_gone(struct fwsim *fs)
{
	epoll_ctl(fs->ep_fd, EPOLL_CTL_DEL, fs->srv.client_fd, NULL);
	ivs_server_drop_client(&fs->srv);
	unmap_guest_ram(fs);
	if (fs->opts->verbose)
		logmsg("guest disconnected");
}

/*
 * A new guest is a power-on: HBM contents from the last guest are
 * discarded (punching the hole also gives the memory back to the host),
 * and all of it happens before the guest is sent the memory. The reset
 * comes first: it stops the last guest's queues and drops its kernel
 * launch, if one is computing, so nothing of it lands in the memory
 * punched afterwards; it rewrites the reserved area itself.
 */
static void guest_arrived(struct fwsim *fs)
{
	int err;

	if (map_guest_ram(fs) || ep_add(fs, fs->srv.client_fd, EV_CLIENT)) {
		ivs_server_drop_client(&fs->srv);
		unmap_guest_ram(fs);
		return;
	}
	npu_dev_reset(&fs->dev);
	fallocate(fs->shm_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  NPU_FW_RESERVED_SIZE,
		  (off_t)(fs->opts->cfg.hbm_size - NPU_FW_RESERVED_SIZE));

	err = ivs_server_welcome(&fs->srv);
	if (err) {
		logmsg("guest setup failed: %s", strerror(-err));
		unmap_guest_ram(fs);
		return;
	}
	if (fs->opts->verbose)
		logmsg("guest connected");
}

static void on_client(struct fwsim *fs)
{
	char buf[64];
	ssize_t n = recv(fs->srv.client_fd, buf, sizeof(buf), MSG_DONTWAIT);

	/* QEMU never talks after setup: data or EOF both end the session. */
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		guest_gone(fs);
}

static int setup(struct fwsim *fs)
{
	const struct fwsim_opts *o = fs->opts;
	struct itimerspec its = { 0 };
	sigset_t mask;
	int err;

	/* Before any thread exists: threads inherit the mask, and these
	 * signals must only ever arrive through the signalfd. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	fs->shm_fd = memfd_create("npu-hbm", MFD_CLOEXEC);
	if (fs->shm_fd < 0 || ftruncate(fs->shm_fd, (off_t)o->cfg.hbm_size) < 0) {
		logmsg("cannot create %llu bytes of HBM: %s",
		       (unsigned long long)o->cfg.hbm_size, strerror(errno));
		return -1;
	}
	fs->hbm = mmap(NULL, o->cfg.hbm_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fs->shm_fd, 0);
	if (fs->hbm == MAP_FAILED) {
		fs->hbm = NULL;
		logmsg("cannot map HBM: %s", strerror(errno));
		return -1;
	}
	npu_dev_init(&fs->dev, fs->hbm, &o->cfg, &fwsim_dev_ops, fs);
	fs->dev_ready = true;
	err = npu_dev_start_engine(&fs->dev);
	if (err) {
		logmsg("cannot start the task engine: %s", strerror(err));
		return -1;
	}

	fs->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	fs->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	its.it_interval.tv_sec = o->cfg.heartbeat_ms / 1000;
	its.it_interval.tv_nsec = (long)(o->cfg.heartbeat_ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	fs->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (fs->sig_fd < 0 || fs->timer_fd < 0 || fs->ep_fd < 0 ||
	    timerfd_settime(fs->timer_fd, 0, &its, NULL) < 0) {
		logmsg("cannot set up the event loop: %s", strerror(errno));
		return -1;
	}

	err = ivs_server_open(&fs->srv, o->socket_path, fs->shm_fd,
			      NPU_FW_NUM_VECTORS);
	if (err) {
		logmsg("cannot listen on %s: %s", o->socket_path, strerror(-err));
		return -1;
	}

	err = ep_add(fs, fs->srv.listen_fd, EV_LISTEN);
	if (!err)
		err = ep_add(fs, fs->sig_fd, EV_SIGNAL);
	if (!err)
		err = ep_add(fs, fs->timer_fd, EV_TIMER);
	for (unsigned int v = 0; !err && v < fs->srv.nvec; v++)
		err = ep_add(fs, fs->srv.dev_efd[v], EV_DOORBELL + v);
	if (err) {
		logmsg("epoll: %s", strerror(-err));
		return -1;
	}
	return 0;
}

static void teardown(struct fwsim *fs)
{
	if (fs->dev_ready) {
		npu_dev_halt(&fs->dev);
		npu_dev_fini(&fs->dev);
	}
	if (fs->srv.listen_fd >= 0)
		ivs_server_close(&fs->srv);
	unmap_guest_ram(fs);
	if (fs->hbm)
		munmap(fs->hbm, fs->opts->cfg.hbm_size);
	if (fs->shm_fd >= 0)
		close(fs->shm_fd);
	if (fs->sig_fd >= 0)
		close(fs->sig_fd);
	if (fs->timer_fd >= 0)
		close(fs->timer_fd);
	if (fs->ep_fd >= 0)
		close(fs->ep_fd);
}

static int loop(struct fwsim *fs)
{
	struct epoll_event evs[16];

	for (;;) {
		int n = epoll_wait(fs->ep_fd, evs, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			logmsg("epoll_wait: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			uint64_t ticks;

			switch (tag) {
			case EV_LISTEN:
				if (ivs_server_accept(&fs->srv) == 1)
					guest_arrived(fs);
				break;
			case EV_CLIENT:
				on_client(fs);
				break;
			case EV_SIGNAL:
				if (fs->opts->verbose)
					logmsg("stopping");
				return 0;
			case EV_TIMER:
				if (read(fs->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks))
					npu_dev_heartbeat(&fs->dev);
				break;
			default:
				if (ivs_server_take_doorbell(&fs->srv, tag - EV_DOORBELL))
					npu_dev_doorbell(&fs->dev, tag - EV_DOORBELL);
				break;
			}
		}
	}
}

int fwsim_run(const struct fwsim_opts *opts)
{
	struct fwsim fs = {
		.opts = opts,
		.shm_fd = -1, .sig_fd = -1, .timer_fd = -1, .ep_fd = -1,
		.srv = { .listen_fd = -1, .client_fd = -1 },
	};
	pid_t parent = getppid();
	int status = 1;

	if (opts->die_with_parent) {
		/* SIGTERM is blocked below and read from the signalfd. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			return 1;
	}

	if (setup(&fs) == 0) {
		logmsg("listening on %s (HBM %llu MiB, %u queues, %u cores in %u groups, %u copy engines)",
		       opts->socket_path,
		       (unsigned long long)(opts->cfg.hbm_size >> 20),
		       opts->cfg.num_queues, opts->cfg.num_cores,
		       opts->cfg.num_core_groups, opts->cfg.num_dma);
		status = loop(&fs);
	}
	teardown(&fs);
	return status;
}
