// SPDX-License-Identifier: MIT
/*
 * ivshmem server transport. See ivshmem_server.h for the protocol.
 */
#include "ivshmem_server.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define IVS_PROTOCOL_VERSION	0

static int send_msg(int sock, int64_t value, int fd)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	int64_t le = (int64_t)htole64((uint64_t)value);
	struct iovec iov = { .iov_base = &le, .iov_len = sizeof(le) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *cmsg;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == sizeof(le) ? 0 : -EIO;
}

static void close_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

static int make_eventfds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fds[i] < 0) {
			int err = -errno;

			close_fds(fds, i);
			return err;
		}
	}
	return 0;
}

/* Is someone already serving on this path? */
static int socket_in_use(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int used;

	if (fd < 0)
		return 0;
	used = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
	close(fd);
	return used;
}

int ivs_server_open(struct ivs_server *s, const char *path, int shm_fd,
		    unsigned int nvec)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int err;

	memset(s, 0, sizeof(*s));
	s->listen_fd = -1;
	s->client_fd = -1;
	s->shm_fd = shm_fd;
	s->nvec = nvec;
	for (unsigned int i = 0; i < IVS_MAX_VECTORS; i++)
		s->dev_efd[i] = s->guest_efd[i] = -1;

	if (nvec == 0 || nvec > IVS_MAX_VECTORS)
		return -EINVAL;
	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	strcpy(s->path, path);

	if (socket_in_use(&addr))
		return -EADDRINUSE;
	unlink(path);	/* a stale file from a process that died */

	err = make_eventfds(s->dev_efd, nvec);
	if (err)
		return err;

	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0)
		goto fail;
	if (bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		goto fail;
	if (listen(s->listen_fd, 4) < 0) {
		err = -errno;
		unlink(path);
		goto fail_err;
	}
	return 0;

fail:
	err = -errno;
fail_err:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	s->path[0] = '\0';
	close_fds(s->dev_efd, nvec);
	return err;
}

static int send_setup(struct ivs_server *s)
{
	int err;

	err = send_msg(s->client_fd, IVS_PROTOCOL_VERSION, -1);
	if (!err)
		err = send_msg(s->client_fd, IVS_GUEST_PEER, -1);
	if (!err)
		err = send_msg(s->client_fd, -1, s->shm_fd);
	for (unsigned int i = 0; !err && i < s->nvec; i++)
		err = send_msg(s->client_fd, IVS_DEVICE_PEER, s->dev_efd[i]);
	for (unsigned int i = 0; !err && i < s->nvec; i++)
		err = send_msg(s->client_fd, IVS_GUEST_PEER, s->guest_efd[i]);
	return err;
}

int ivs_server_accept(struct ivs_server *s)
{
	int fd, err;

	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;

	if (s->client_fd >= 0) {
		close(fd);
		return 0;
	}

	s->client_fd = fd;
	err = make_eventfds(s->guest_efd, s->nvec);
	if (err) {
		ivs_server_drop_client(s);
		return err;
	}
	return 1;
}

int ivs_server_welcome(struct ivs_server *s)
{
	int err = send_setup(s);

	if (err)
		ivs_server_drop_client(s);
	return err;
}

void ivs_server_drop_client(struct ivs_server *s)
{
	if (s->client_fd >= 0)
		close(s->client_fd);
	s->client_fd = -1;
	close_fds(s->guest_efd, s->nvec);
}

int ivs_server_notify(struct ivs_server *s, unsigned int vector)
{
	uint64_t one = 1;

	if (vector >= s->nvec || s->guest_efd[vector] < 0)
		return 0;
	if (write(s->guest_efd[vector], &one, sizeof(one)) != sizeof(one))
		return errno == EAGAIN ? 0 : -errno;	/* EAGAIN: already pending */
	return 0;
}

uint64_t ivs_server_take_doorbell(struct ivs_server *s, unsigned int vector)
{
	uint64_t count = 0;

	if (vector >= s->nvec)
		return 0;
	if (read(s->dev_efd[vector], &count, sizeof(count)) != sizeof(count))
		return 0;
	return count;
}

void ivs_server_close(struct ivs_server *s)
{
	ivs_server_drop_client(s);
	close_fds(s->dev_efd, s->nvec);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	if (s->path[0])
		unlink(s->path);
	s->path[0] = '\0';
}
