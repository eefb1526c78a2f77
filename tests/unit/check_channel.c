/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Channel ids, table states and credit arithmetic. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "proto/channel.h"

#define MAXC 8

/* r[shm.id.channel-parity] r[shm.flow.channel-table-indexing] */
START_TEST(test_id_rules)
{
	ck_assert_int_eq(hp_chan_id_check(0, MAXC, HP_SIDE_GUEST), -EPROTO);
	ck_assert_int_eq(hp_chan_id_check(0, MAXC, HP_SIDE_HOST), -EPROTO);
	ck_assert_int_eq(hp_chan_id_check(1, MAXC, HP_SIDE_GUEST), 0);
	ck_assert_int_eq(hp_chan_id_check(1, MAXC, HP_SIDE_HOST), -EPROTO);
	ck_assert_int_eq(hp_chan_id_check(2, MAXC, HP_SIDE_HOST), 0);
	ck_assert_int_eq(hp_chan_id_check(2, MAXC, HP_SIDE_GUEST), -EPROTO);
	ck_assert_int_eq(hp_chan_id_check(7, MAXC, HP_SIDE_GUEST), 0);
	ck_assert_int_eq(hp_chan_id_check(8, MAXC, HP_SIDE_HOST), -EPROTO);
	ck_assert_int_eq(hp_chan_id_check(0xFFFFFFFFu, MAXC, HP_SIDE_GUEST), -EPROTO);
}
END_TEST

/* r[shm.flow.channel-table] r[shm.flow.channel-activate] r[shm.flow.initial]
 * r[shm.id.channel-id] */
START_TEST(test_open_by_parity_until_exhausted)
{
	struct hp_chan_entry t[MAXC];
	uint32_t gc = 0, hc = 0;
	int64_t id;

	memset(t, 0, sizeof(t));
	for (int i = 0; i < 4; i++) {	/* 1 3 5 7 */
		id = hp_chan_open(t, MAXC, HP_SIDE_GUEST, 1000, &gc);
		ck_assert_int_eq(id, 1 + 2 * i);
		ck_assert_uint_eq(t[id].state, HP_CHAN_ACTIVE);
		ck_assert_uint_eq(t[id].granted_total, 1000);
	}
	ck_assert_int_eq(hp_chan_open(t, MAXC, HP_SIDE_GUEST, 1000, &gc), -EAGAIN);
	for (int i = 0; i < 3; i++)	/* 2 4 6 */
		ck_assert_int_eq(hp_chan_open(t, MAXC, HP_SIDE_HOST, 5, &hc), 2 + 2 * i);
	ck_assert_int_eq(hp_chan_open(t, MAXC, HP_SIDE_HOST, 5, &hc), -EAGAIN);
	ck_assert_uint_eq(t[0].state, HP_CHAN_FREE);	/* id 0 never used */
}
END_TEST

/* r[shm.flow.channel-id-reuse]: after the receiver frees it */
START_TEST(test_close_free_reuse)
{
	struct hp_chan_entry t[MAXC];
	uint32_t c = 0;
	int64_t a, b;

	memset(t, 0, sizeof(t));
	a = hp_chan_open(t, MAXC, HP_SIDE_GUEST, 10, &c);
	hp_chan_close(&t[a]);
	ck_assert_uint_eq(hp_chan_state(&t[a]), HP_CHAN_CLOSED);
	ck_assert_int_eq(hp_chan_activate(&t[a], 10), -EBUSY);
	hp_chan_free(&t[a]);
	/* the next id first, the freed one only when its turn comes round */
	b = hp_chan_open(t, MAXC, HP_SIDE_GUEST, 10, &c);
	ck_assert_int_ne(b, a);
	for (int i = 0; i < 3; i++)
		hp_chan_open(t, MAXC, HP_SIDE_GUEST, 10, &c);
	ck_assert_uint_eq(hp_chan_state(&t[a]), HP_CHAN_ACTIVE);
}
END_TEST

/* r[shm.flow.remaining-credit] r[shm.flow.wrap-rule] r[shm.flow.granted-total]
 * r[shm.flow.counter-per-channel] r[shm.bytes.what-counts] */
START_TEST(test_credit_arithmetic)
{
	struct hp_chan_entry e;

	memset(&e, 0, sizeof(e));
	hp_chan_activate(&e, 100);
	ck_assert_int_eq(hp_chan_credit(&e, 0), 100);
	ck_assert_int_eq(hp_chan_credit(&e, 100), 0);
	hp_chan_grant(&e, 50);
	ck_assert_int_eq(hp_chan_credit(&e, 100), 50);
	/* across the u32 wrap */
	e.granted_total = 5;
	ck_assert_int_eq(hp_chan_credit(&e, 0xFFFFFFF0u), 21);
	/* sent more than granted: corruption */
	ck_assert_int_eq(hp_chan_credit(&e, 6), -EPROTO);
	e.granted_total = 0x80000000u;
	ck_assert_int_eq(hp_chan_credit(&e, 0), -EPROTO);
	ck_assert(hp_credit_allows(100, 60, 40));
	ck_assert(!hp_credit_allows(100, 60, 41));
	ck_assert(hp_credit_allows(5, 0xFFFFFFF0u, 21));
	ck_assert(!hp_credit_allows(5, 6, 0));
}
END_TEST

Suite *suite_channel(void);
Suite *
suite_channel(void)
{
	Suite *s = suite_create("channel");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_id_rules);
	tcase_add_test(tc, test_open_by_parity_until_exhausted);
	tcase_add_test(tc, test_close_free_reuse);
	tcase_add_test(tc, test_credit_arithmetic);
	suite_add_tcase(s, tc);
	return s;
}
