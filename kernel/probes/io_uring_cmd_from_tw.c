// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_CMD_FROM_TW: task-work callbacks take a struct io_tw_req
 * and find their command with io_uring_cmd_from_tw(). */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

static void npu_probe_cb(struct io_tw_req tw_req, io_tw_token_t tw)
{
	struct io_uring_cmd *cmd = io_uring_cmd_from_tw(tw_req);

	(void)cmd;
}

void npu_probe(struct io_uring_cmd *cmd);
void npu_probe(struct io_uring_cmd *cmd)
{
	io_uring_cmd_complete_in_task(cmd, npu_probe_cb);
}
