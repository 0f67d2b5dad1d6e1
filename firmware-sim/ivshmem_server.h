/* SPDX-License-Identifier: MIT */
/*
 * The ivshmem server side of QEMU's ivshmem-doorbell device.
 *
 * Protocol (QEMU docs/specs/ivshmem-spec.rst): on a UNIX stream socket the
 * server sends little-endian int64 messages, some carrying one fd by
 * SCM_RIGHTS: the protocol version (0); the client's peer id; -1 with the
 * shared memory fd; for every other peer, its id once per vector with that
 * vector's eventfd; finally the client's own id once per vector with its
 * own eventfds.
 *
 * The device is peer 0 and owns its eventfds for the server's whole life:
 * the guest's doorbell writes land on them. A guest gets peer id 1 and a
 * fresh set of eventfds per connection; writing one raises the guest's
 * MSI-X vector. One guest at a time: a second client is turned away.
 */
#ifndef IVSHMEM_SERVER_H
#define IVSHMEM_SERVER_H

#include <stdint.h>

#define IVS_MAX_VECTORS		8
#define IVS_DEVICE_PEER		0
#define IVS_GUEST_PEER		1

struct ivs_server {
	int listen_fd;
	int client_fd;			/* -1 while no guest is connected */
	int shm_fd;
	unsigned int nvec;
	int dev_efd[IVS_MAX_VECTORS];	/* doorbells: the guest writes, we read */
	int guest_efd[IVS_MAX_VECTORS];	/* interrupts: we write, QEMU injects */
	char path[108];
};

/*
 * Listen on `path` (an existing socket file is replaced only if nothing
 * answers on it). Returns 0 or a negative errno.
 */
int ivs_server_open(struct ivs_server *s, const char *path, int shm_fd,
		    unsigned int nvec);

/*
 * Accept a pending connection. Returns 1 when it is the new guest, 0 when
 * it was turned away (a guest is already connected), or a negative errno.
 * The guest hears nothing until ivs_server_welcome(): the caller gets the
 * device ready first, since the guest may read it the moment it is sent.
 */
int ivs_server_accept(struct ivs_server *s);

/* Send the accepted guest its setup messages. 0 or a negative errno. */
int ivs_server_welcome(struct ivs_server *s);

/* Forget the connected guest and close its eventfds. */
void ivs_server_drop_client(struct ivs_server *s);

/* Raise guest interrupt `vector`; a no-op without a guest. */
int ivs_server_notify(struct ivs_server *s, unsigned int vector);

/* Consume pending doorbells on `vector`; returns how many were rung. */
uint64_t ivs_server_take_doorbell(struct ivs_server *s, unsigned int vector);

/* Close everything and remove the socket file. */
void ivs_server_close(struct ivs_server *s);

#endif /* IVSHMEM_SERVER_H */
