// SPDX-License-Identifier: GPL-2.0-only
/* HAVE_IO_URING_REQ_TASK: without cancelable commands, the driver sees
 * a command's ring and submitting task in struct io_kiocb to reap it. */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
#include <linux/io_uring_types.h>
#include <linux/percpu-refcount.h>

bool npu_probe(struct io_uring_cmd *cmd);
bool npu_probe(struct io_uring_cmd *cmd)
{
	struct io_kiocb *req = cmd_to_io_kiocb(cmd);

	return (req->task->flags & PF_EXITING) || percpu_ref_is_dying(&req->ctx->refs);
}
