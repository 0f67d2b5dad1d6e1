// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_CMD_H: the uring_cmd driver API lives in
 * <linux/io_uring/cmd.h> (6.7+) rather than <linux/io_uring.h>. */
#include <linux/io_uring/cmd.h>

int npu_probe(struct io_uring_cmd *cmd);
int npu_probe(struct io_uring_cmd *cmd)
{
	return cmd->cmd_op;
}
