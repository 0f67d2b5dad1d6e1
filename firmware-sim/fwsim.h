/* SPDX-License-Identifier: MIT */
/*
 * npu-fwsim: the device core behind an ivshmem server, as one daemon.
 */
#ifndef FWSIM_H
#define FWSIM_H

#include "npu_dev.h"

struct fwsim_opts {
	const char *socket_path;	/* ivshmem server socket (required) */
	const char *guest_ram;		/* QEMU's shared guest RAM file, or NULL */
	struct npu_dev_config cfg;
	int die_with_parent;		/* exit when the parent process dies */
	int verbose;
};

/* Run until SIGTERM/SIGINT/SIGHUP. Returns the process exit status. */
int fwsim_run(const struct fwsim_opts *opts);

#endif /* FWSIM_H */
