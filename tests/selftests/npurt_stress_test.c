// SPDX-License-Identifier: MIT
/*
 * libnpurt under threads: 8 threads share 4 streams of one device and
 * issue random work (fills, copies, launches, event records and
 * cross-stream waits, synchronizes and queries), each on memory of its
 * own; every result is checked. Streams and events shared by threads are
 * what npurt.h allows; a lost, reordered or duplicated operation, or a
 * launch block overwritten under another thread, shows as a wrong value.
 */
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "npu_selftest.h"
#include "npurt.h"

#define THREADS		8
#define STREAMS		4
#define ROUNDS		150
#define WORDS		1024		/* per vector */

struct shared {
	npurt_device *dev;
	npurt_stream *s[STREAMS];
	npurt_event *any;		/* recorded by every thread on any stream */
};

struct worker {
	struct shared *sh;
	int id;
	unsigned int seed;
	npurt_mem *m;			/* a, b, c: this thread's vectors */
	npurt_event *done;		/* its last round's record */
	char error[256];
};

static uint32_t op_id(const char *name)
{
	uint32_t id = 0;

	npurt_op_lookup(name, &id);
	return id;
}

#define FAIL(w, ...) do { snprintf((w)->error, sizeof((w)->error), __VA_ARGS__); return NULL; } while (0)

/*
 * Each round, on a random stream that first waits for the thread's last
 * round: fill a with k, copy a to b, launch c = b + b (floats), then
 * record. Every few rounds the thread synchronizes and checks c == 2k.
 */
static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	uint64_t base = npurt_mem_device_addr(w->m), n = WORDS;
	float *host = npurt_mem_host_ptr(w->m);
	npurt_launch_desc add = { .size = sizeof(add), .op = op_id("add") };

	npurt_tensor_init(&add.in[0], base + 4 * WORDS, NPURT_F32, 1, &n);
	npurt_tensor_init(&add.in[1], base + 4 * WORDS, NPURT_F32, 1, &n);
	npurt_tensor_init(&add.out, base + 8 * WORDS, NPURT_F32, 1, &n);
	for (int r = 1; r <= ROUNDS; r++) {
		npurt_stream *s = sh->s[rand_r(&w->seed) % STREAMS];
		float k = (float)(w->id * 1000 + r);
		uint32_t bits;
		npurt_status st;

		memcpy(&bits, &k, 4);
		if ((st = npurt_stream_wait_event(s, w->done)) ||
		    (st = npurt_memset_async(s, base, bits, 4 * WORDS)) ||
		    (st = npurt_memcpy_async(s, base + 4 * WORDS, base, 4 * WORDS)) ||
		    (st = npurt_launch(s, &add)) ||
		    (st = npurt_event_record(w->done, s)))
			FAIL(w, "round %d: %s", r, npurt_last_error());
		switch (rand_r(&w->seed) % 8) {
		case 0:		/* others' work orders after an event anybody records */
			if (npurt_event_record(sh->any, s) ||
			    npurt_stream_wait_event(sh->s[rand_r(&w->seed) % STREAMS], sh->any))
				FAIL(w, "round %d: shared event: %s", r, npurt_last_error());
			break;
		case 1:
			st = npurt_stream_query(s);
			if (st && st != NPURT_ERR_NOT_READY)
				FAIL(w, "round %d: query: %s", r, npurt_last_error());
			break;
		case 2:
		case 3:
			if (npurt_event_synchronize(w->done))
				FAIL(w, "round %d: event synchronize: %s", r, npurt_last_error());
			for (int i = 0; i < WORDS; i++)
				if (host[2 * WORDS + i] != 2 * k)
					FAIL(w, "round %d: c[%d] = %f, want %f", r, i,
					     host[2 * WORDS + i], 2 * k);
			break;
		default:
			break;
		}
	}
	if (npurt_event_synchronize(w->done))
		FAIL(w, "last round: %s", npurt_last_error());
	for (int i = 0; i < WORDS; i++)
		if (host[2 * WORDS + i] != 2.0f * (float)(w->id * 1000 + ROUNDS))
			FAIL(w, "at the end: c[%d] = %f", i, host[2 * WORDS + i]);
	return NULL;
}

FIXTURE(stress) {
	struct shared sh;
	struct worker w[THREADS];
};

FIXTURE_VARIANT(stress) {
	const char *env;
};

FIXTURE_VARIANT_ADD(stress, ioctl) { .env = "ioctl" };
FIXTURE_VARIANT_ADD(stress, io_uring) { .env = "io_uring" };

FIXTURE_SETUP(stress)
{
	setenv("NPURT_SUBMIT", variant->env, 1);
	ASSERT_EQ(NPURT_OK, npurt_device_open(0, &self->sh.dev)) TH_LOG("%s", npurt_last_error());
	for (int i = 0; i < STREAMS; i++)
		ASSERT_EQ(NPURT_OK, npurt_stream_create(self->sh.dev, NPURT_PRIORITY_NORMAL,
							&self->sh.s[i]));
	ASSERT_EQ(NPURT_OK, npurt_event_create(self->sh.dev, &self->sh.any));
	for (int t = 0; t < THREADS; t++) {
		struct worker *w = &self->w[t];

		w->sh = &self->sh;
		w->id = t;
		w->seed = 1234u + (unsigned int)t;
		ASSERT_EQ(NPURT_OK, npurt_mem_alloc(self->sh.dev, 3 * 4 * WORDS, &w->m));
		ASSERT_EQ(NPURT_OK, npurt_event_create(self->sh.dev, &w->done));
	}
}

FIXTURE_TEARDOWN(stress)
{
	npurt_device_synchronize(self->sh.dev);
	for (int t = 0; t < THREADS; t++) {
		npurt_event_destroy(self->w[t].done);
		npurt_mem_free(self->w[t].m);
	}
	npurt_event_destroy(self->sh.any);
	for (int i = 0; i < STREAMS; i++)
		npurt_stream_destroy(self->sh.s[i]);
	npurt_device_close(self->sh.dev);
	unsetenv("NPURT_SUBMIT");
}

TEST_F_TIMEOUT(stress, eight_threads_on_four_streams_get_every_result_right, 300)
{
	pthread_t th[THREADS];

	for (int t = 0; t < THREADS; t++)
		ASSERT_EQ(0, pthread_create(&th[t], NULL, work, &self->w[t]));
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < THREADS; t++) {
		EXPECT_EQ(0, self->w[t].error[0]) TH_LOG("thread %d: %s", t, self->w[t].error);
	}
	EXPECT_EQ(NPURT_OK, npurt_device_synchronize(self->sh.dev)) TH_LOG("%s", npurt_last_error());
}

TEST_HARNESS_MAIN
