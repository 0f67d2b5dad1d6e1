// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_CMD_DONE32: a 32-byte CQE's second result is posted
 * with io_uring_cmd_done32() (io_uring_cmd_done() lost res2). */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

void npu_probe(struct io_uring_cmd *cmd);
void npu_probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_done32(cmd, 0, 1, 0);
}
