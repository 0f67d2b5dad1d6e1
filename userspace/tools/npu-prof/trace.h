/* SPDX-License-Identifier: MIT */
/*
 * Chrome trace-event JSON, read back: the events npurt_profiler_write()
 * writes (and any file in the same format), for npu-prof --summary and
 * the tests. The whole file must be JSON; the events keep what a summary
 * and a check need.
 */
#ifndef NPU_PROF_TRACE_H
#define NPU_PROF_TRACE_H

#include <stdbool.h>
#include <stddef.h>

struct trace_event {
	char ph;			/* "X", "M", "s", "f", ... */
	long pid, tid;
	double ts, dur;			/* microseconds */
	bool has_ts, has_dur;
	long long id;			/* flow events */
	char name[128];
	char thread[64];		/* "M" thread_name / process_name: args.name */
	char type[32];			/* args.type: the task's type */
	char call[64];			/* args.call: the runtime call that queued it */
	long long batch;		/* args.batch, -1 if none */
	long long list_task;		/* args.list_task: its place in a task list, -1 if none */
};

struct trace {
	struct trace_event *ev;
	size_t n;
	size_t *threads;		/* the "M" thread_name events' places in ev */
	size_t nthreads;
	long long records, dropped;	/* otherData, -1 if absent */
};

/* Read `path`: 0, or -1 with a message in err (the place and what is wrong). */
int trace_read(const char *path, struct trace *t, char *err, size_t errlen);
void trace_free(struct trace *t);

/* The name a "M" event gave (pid, tid), or NULL. */
const char *trace_thread_name(const struct trace *t, long pid, long tid);

#endif /* NPU_PROF_TRACE_H */
