// SPDX-License-Identifier: MIT
/*
 * The set of live handles (userspace/runtime/handle.c), without a device:
 * a handle is live from its add until it is taken or dropped, of the kind
 * it was added as; a second take fails and names the call; a device's
 * close drops its handles of a kind and no other's; the table keeps
 * every handle through its growth and under threads. Runs under ASan and
 * UBSan too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "handle.h"

static char pool[4096] __attribute__((aligned(16)));

TEST(a_handle_is_live_from_add_to_take)
{
	void *h = pool;
	npurt_device *dev = (npurt_device *)(pool + 16);

	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check(h, NPURT_KIND_MEM, "f"));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "f: ")) TH_LOG("%s", npurt_last_error());
	EXPECT_NE(NULL, strstr(npurt_last_error(), "is no live npurt_mem"));
	ASSERT_EQ(NPURT_OK, npurt_handle_add(h, NPURT_KIND_MEM, dev, "add"));
	EXPECT_EQ(NPURT_OK, npurt_handle_check(h, NPURT_KIND_MEM, "f"));
	EXPECT_EQ(NPURT_OK, npurt_handle_take(h, NPURT_KIND_MEM, "npurt_mem_release"));
	/* The second free: refused, named. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_take(h, NPURT_KIND_MEM, "npurt_mem_release"));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "npurt_mem_release: "));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "freed or destroyed already"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check(h, NPURT_KIND_MEM, "f"));
	/* NULL, and the addresses no allocation has, are never live. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check(NULL, NPURT_KIND_STREAM, "g"));
	EXPECT_STREQ("g: NULL npurt_stream", npurt_last_error());
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check((void *)1, NPURT_KIND_STREAM, "g"));
	npurt_handle_drop(NULL);
}

TEST(a_handle_of_another_kind_is_named_and_kept)
{
	void *ev = pool + 32;

	ASSERT_EQ(NPURT_OK, npurt_handle_add(ev, NPURT_KIND_EVENT, NULL, "add"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check(ev, NPURT_KIND_STREAM, "npurt_memset_async"));
	EXPECT_NE(NULL, strstr(npurt_last_error(), "is an npurt_event, not an npurt_stream"))
		TH_LOG("%s", npurt_last_error());
	/* A wrong take takes nothing. */
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_take(ev, NPURT_KIND_NOTIFY, "npurt_notify_destroy"));
	EXPECT_EQ(NPURT_OK, npurt_handle_check(ev, NPURT_KIND_EVENT, "f"));
	npurt_handle_drop(ev);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check(ev, NPURT_KIND_EVENT, "f"));
}

TEST(a_device_close_drops_its_handles_of_a_kind)
{
	npurt_device *a = (npurt_device *)(pool + 64), *b = (npurt_device *)(pool + 80);

	ASSERT_EQ(NPURT_OK, npurt_handle_add(pool + 96, NPURT_KIND_STREAM, a, "add"));
	ASSERT_EQ(NPURT_OK, npurt_handle_add(pool + 112, NPURT_KIND_STREAM, b, "add"));
	ASSERT_EQ(NPURT_OK, npurt_handle_add(pool + 128, NPURT_KIND_MEM, a, "add"));
	npurt_handles_drop_device(a, NPURT_KIND_STREAM);
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_check(pool + 96, NPURT_KIND_STREAM, "f"));
	EXPECT_EQ(NPURT_OK, npurt_handle_check(pool + 112, NPURT_KIND_STREAM, "f"));
	EXPECT_EQ(NPURT_OK, npurt_handle_check(pool + 128, NPURT_KIND_MEM, "f"));
	npurt_handle_drop(pool + 112);
	npurt_handle_drop(pool + 128);
}

/* Many handles, taken every other one, through the table's growth: each answer right. */
TEST(the_table_keeps_every_handle_as_it_grows)
{
	enum { N = 100000 };
	char *many = malloc(N * 16);

	ASSERT_NE(NULL, many);
	for (int i = 0; i < N; i++)
		ASSERT_EQ(NPURT_OK, npurt_handle_add(many + i * 16, NPURT_KIND_MEM, NULL, "add"));
	for (int i = 0; i < N; i += 2)
		ASSERT_EQ(NPURT_OK, npurt_handle_take(many + i * 16, NPURT_KIND_MEM, "take"));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(i % 2 ? NPURT_OK : NPURT_ERR_INVALID,
			  npurt_handle_check(many + i * 16, NPURT_KIND_MEM, "f")) TH_LOG("%d", i);
	}
	/* Added again after a take: live again, once. */
	ASSERT_EQ(NPURT_OK, npurt_handle_add(many, NPURT_KIND_MEM, NULL, "add"));
	EXPECT_EQ(NPURT_OK, npurt_handle_take(many, NPURT_KIND_MEM, "take"));
	EXPECT_EQ(NPURT_ERR_INVALID, npurt_handle_take(many, NPURT_KIND_MEM, "take"));
	for (int i = 1; i < N; i += 2)
		npurt_handle_drop(many + i * 16);
	free(many);
}

struct churn {
	char *base;
	int bad;
};

/* Add, check and take handles of one's own, as threads of a program do. */
static void *churn(void *arg)
{
	struct churn *c = arg;

	for (int round = 0; round < 200; round++)
		for (int i = 0; i < 64; i++) {
			char *h = c->base + i * 16;

			c->bad += npurt_handle_add(h, NPURT_KIND_STREAM, NULL, "add") != NPURT_OK;
			c->bad += npurt_handle_check(h, NPURT_KIND_STREAM, "f") != NPURT_OK;
			c->bad += npurt_handle_take(h, NPURT_KIND_STREAM, "t") != NPURT_OK;
			c->bad += npurt_handle_take(h, NPURT_KIND_STREAM, "t") != NPURT_ERR_INVALID;
		}
	return NULL;
}

TEST(threads_keep_their_handles_apart)
{
	static char area[8][64 * 16] __attribute__((aligned(16)));
	struct churn c[8];
	pthread_t t[8];

	for (int i = 0; i < 8; i++) {
		c[i] = (struct churn){ .base = area[i] };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn, &c[i]));
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, c[i].bad) TH_LOG("thread %d", i);
	}
}

TEST_HARNESS_MAIN
