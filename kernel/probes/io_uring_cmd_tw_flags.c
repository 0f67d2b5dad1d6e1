// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_CMD_TW_FLAGS: task-work callbacks of uring commands are
 * void (*)(struct io_uring_cmd *, unsigned int issue_flags). */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

static void npu_probe_cb(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
}

void npu_probe(struct io_uring_cmd *cmd);
void npu_probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_complete_in_task(cmd, npu_probe_cb);
}
