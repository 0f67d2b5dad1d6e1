// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_CMD_DONE_FLAGS: io_uring_cmd_done() takes the caller's
 * issue_flags (6.3+, and backported to Debian's 6.1). */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

void npu_probe(struct io_uring_cmd *cmd);
void npu_probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_done(cmd, 0, 1, 0);
}
