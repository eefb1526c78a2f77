/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd's topic table (daemon/topics.c) on a hub of no guests: the ids of
 * topics and subscriptions once their counters wrap. */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "daemon/topics.h"
#include "proto/topic.h"

static struct hub hub;

static void
setup(void)
{
	memset(&hub, 0, sizeof(hub));
}

static void
teardown(void)
{
	topics_free(&hub);
}

/* A control client's subscription to name (hubctl listen); its fds are
 * closed at once, as a client that went would. */
static struct topic_sub *
listen_to(const char *name)
{
	struct topic_sub *s = NULL;
	const char *why = NULL;
	int fds[3];

	ck_assert_msg(topics_listen(&hub, name, HP_TOPIC_DROP_OLDEST, 0, 1, NULL, NULL, fds, &s,
				    &why) == 0, "listen %s: %s", name, why);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	return s;
}

/* Defect: the ids of topics and subscriptions came from counters that
 * wrap after 2^32 (a guest subscribing to new names and leaving them
 * again churns both), and were handed out again while a topic or a
 * subscription still held them: a guest that publishes two topics, or
 * reads two, tells them apart by their ids. */
START_TEST(test_ids_in_use_are_skipped)
{
	struct topic_sub *a = listen_to("a.one"), *b;

	/* 2^32 topics and subscriptions later: the counters are back, past 0 */
	hub.next_topic = a->t->id - 1;
	hub.next_sub = a->id - 1;
	hub.topic_ids_wrapped = hub.sub_ids_wrapped = 1;
	b = listen_to("a.two");
	ck_assert_uint_ne(b->t->id, a->t->id);
	ck_assert_uint_ne(b->id, a->id);
	ck_assert_ptr_eq(topics_find(&hub, "a.one"), a->t);
	ck_assert_ptr_eq(topics_find(&hub, "a.two"), b->t);
	topics_drop(&hub, b);
	topics_drop(&hub, a);
	ck_assert_ptr_null(hub.topics);	/* nobody reads them: both went */
}
END_TEST

/* Only once a counter passed 0 are ids looked for among those held (a
 * scan of every topic and subscription, which a new name need not pay
 * before): the pass sets it. */
START_TEST(test_a_wrap_is_noted)
{
	struct topic_sub *a;

	hub.next_topic = hub.next_sub = UINT32_MAX;
	a = listen_to("a.one");
	ck_assert_uint_eq(a->t->id, 1);
	ck_assert_uint_eq(a->id, 1);
	ck_assert(hub.topic_ids_wrapped && hub.sub_ids_wrapped);
	topics_drop(&hub, a);
}
END_TEST

Suite *suite_hubtopics(void);
Suite *
suite_hubtopics(void)
{
	Suite *s = suite_create("hubtopics");
	TCase *tc = tcase_create("ids");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ids_in_use_are_skipped);
	tcase_add_test(tc, test_a_wrap_is_noted);
	suite_add_tcase(s, tc);
	return s;
}
