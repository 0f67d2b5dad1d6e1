// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_CMD_MARK_CANCELABLE: io_uring itself cancels parked
 * commands (IO_URING_F_CANCEL) when their ring or task goes away (6.7+). */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

void npu_probe(struct io_uring_cmd *cmd, unsigned int issue_flags);
void npu_probe(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	if (!(issue_flags & IO_URING_F_CANCEL))
		io_uring_cmd_mark_cancelable(cmd, issue_flags);
}
