// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_SQE_CMD: a command reaches its payload through
 * io_uring_sqe_cmd(cmd->sqe) (6.6+) rather than cmd->cmd. */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

const void *npu_probe(struct io_uring_cmd *cmd);
const void *npu_probe(struct io_uring_cmd *cmd)
{
	return io_uring_sqe_cmd(cmd->sqe);
}
