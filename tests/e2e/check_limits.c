/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The size limits at the limit and one byte over, path by path: a call's
 * arguments and its answer between a guest in the shared pool and one on
 * its fixed pool (max_payload_size), through hubd and over a lane. At
 * the limit the bytes arrive whole (hashed); one byte over, the same
 * error on every path, naming the size and the limit. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/harness.h"

/* sa in the shared pool (a zone of its own), sf on its fixed pool:
 * max_payload_size 65532. A call's envelope is 1 byte (its metadata,
 * empty: sizer sends no deadline and no trace), an answer's 2. A
 * deadline would add a CLOCK_MONOTONIC time, whose varint grows with
 * the machine's uptime: with one, this test failed on a machine up for
 * less than 73 minutes. */
#define CALL_ENVELOPE	1
#define SIZERS(lanes) \
	"[guest sa]\nexec = @/tests/guests/sizer\nargs = --prefix sa\nlanes = " lanes "\n" \
	"[guest sf]\nexec = @/tests/guests/sizer\nargs = --prefix sf\nlanes = " lanes "\n" \
	"shared_pool = no\n"
#define FIXED_MAX	65532

static struct hub_proc hub;

/* No heartbeat: a 32 MiB call computes in its handlers (the payload
 * filled, copied and hashed, on pages touched for the first time) for
 * as long as a loaded machine makes it, and once took the 2.25 s that
 * reads as hung (under CI's load). The limits are this file's matter. */
#define HUB_KEYS	"heartbeat_interval = 0\n"

/* hubctl call METHOD ARG N: its output, which must contain want. */
static void
expect_has(const char *method, const char *arg, unsigned long n, const char *want)
{
	char num[32], *out = NULL;
	int rc;

	snprintf(num, sizeof(num), "%lu", n);
	rc = hubctl(&hub, &out, "-t", "60", "call", method, arg, num, (char *)NULL);
	ck_assert_msg(rc == 0 && out != NULL && strstr(out, want) != NULL,
		      "%s %s %s: rc %d: '%s', want '%s'%s", method, arg, num, rc,
		      out != NULL ? out : "", want, hub_log_tail(&hub));
	free(out);
}

/* Calls carried over the open lane so far, both ways (-1: no lane). */
static long long
lane_calls(void)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"lanes\"}", NULL), *l;
	long long n = -1;

	ck_assert_ptr_nonnull(o);
	if ((l = json_object_array_get_idx(json_get(o, "lanes"), 0)) != NULL)
		n = (long long)(json_u64(l, "a", "calls_out", NULL) +
				json_u64(l, "b", "calls_out", NULL));
	json_object_put(o);
	return n;
}

/* lane_calls once it is want (30 s at most): the guests publish their
 * lane's figures when they go to sleep, not at each call. */
static long long
lane_calls_come_to(long long want)
{
	long long n = lane_calls();

	for (double end = now_s() + 30; n != want && now_s() < end; sleep_ms(20))
		n = lane_calls();
	return n;
}

/* The calls to sf hubd routed itself: its count of requests to sf
 * less those over lanes that the lanes' figures add to it, both of one
 * answer. */
static long long
routed_to_sf(void)
{
	json_object *o = hub_stats(&hub);
	long long n = (long long)(json_u64(o, "guests", "sf", "calls_out") -
				  json_u64(o, "guests", "sf", "lane_calls_out"));

	json_object_put(o);
	return n;
}

/* The errors one byte over, as hubd says them: the size with the
 * envelope and the limit. */
#define ARGS_OVER \
	"error -111: the arguments are larger than guest sf takes: 65533 bytes with " \
	"the call's envelope, its max_payload_size is 65532"
#define ANSWER_OVER \
	"error -111: the answer is larger than its caller takes: 65533 bytes with its " \
	"envelope, the caller's max_payload_size is 65532"

/* Through hubd: arguments of 65531 bytes (65532 with the envelope) reach
 * sf whole, 65532 are refused naming both numbers; an answer of 65530
 * reaches sf whole, 65531 is refused so too. In the pool, the largest
 * class (32 MiB) bounds them, refused at the sender (-EMSGSIZE). */
START_TEST(test_calls_through_hubd)
{
	hub_start_up(&hub, HUB_KEYS, SIZERS("no"), "sa,sf");
	ck_assert(hub_wait_method(&hub, "sa.send,sf.hash") == 0);
	expect_has("sa.send", "sf.hash", FIXED_MAX - CALL_ENVELOPE, "ok intact");
	expect_has("sa.send", "sf.hash", FIXED_MAX - CALL_ENVELOPE + 1, ARGS_OVER);
	expect_has("sf.fetch", "sa.make", FIXED_MAX - 2, "ok 65530 intact");
	expect_has("sf.fetch", "sa.make", FIXED_MAX - 1, ANSWER_OVER);
	/* sf's own sends: refused by libguest, before the hub */
	expect_has("sf.send", "sa.hash", FIXED_MAX - CALL_ENVELOPE, "ok intact");
	expect_has("sf.send", "sa.hash", FIXED_MAX - CALL_ENVELOPE + 1, "error -90");
	expect_has("sa.send", "sa.hash", (32ul << 20) - CALL_ENVELOPE, "ok intact");
	expect_has("sa.send", "sa.hash", (32ul << 20) - CALL_ENVELOPE + 1, "error -90");
	ck_assert_str_eq(hub_peer_state(&hub, "sa"), "up");
	ck_assert_str_eq(hub_peer_state(&hub, "sf"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Over a lane the same: a lane carries the smaller of its two guests'
 * limits, and a call over it goes through hubd, which says why, as
 * without a lane (it failed with a bare -EMSGSIZE at the sender, so the
 * error hung on whether a lane was open yet). */
START_TEST(test_calls_over_a_lane)
{
	long long before, sent = 0;

	hub_start_up(&hub, HUB_KEYS, SIZERS("yes"), "sa,sf");
	ck_assert(hub_wait_method(&hub, "sa.send,sf.hash") == 0);
	/* until sa sends its calls of sf.hash over the lane */
	for (int i = 0; i < 200 && lane_calls() <= 0; i++, sent++) {
		expect_has("sa.send", "sf.hash", 100, "ok intact");
		sleep_ms(25);
	}
	/* each of those went over the lane or through hubd: the lane's
	 * figure is what hubd did not route, once sa has published it (a
	 * figure that stayed the same 200 ms was not that: sa, not run
	 * meanwhile, had not published its last call yet) */
	before = sent - routed_to_sf();
	ck_assert_msg(before > 0, "no call went over a lane: %s", hub_log_tail(&hub));
	ck_assert_int_eq(lane_calls_come_to(before), before);
	expect_has("sa.send", "sf.hash", FIXED_MAX - CALL_ENVELOPE, "ok intact");
	ck_assert_int_eq(lane_calls_come_to(before + 1), before + 1);
	/* through hubd: its words (over the lane it was a bare -EMSGSIZE) */
	expect_has("sa.send", "sf.hash", FIXED_MAX - CALL_ENVELOPE + 1, ARGS_OVER);
	expect_has("sa.send", "sf.hash", FIXED_MAX - CALL_ENVELOPE, "ok intact");
	ck_assert_int_eq(lane_calls_come_to(before + 2), before + 2);	/* the lane stays */
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_limits(void);
Suite *
suite_limits(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("limits");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_calls_through_hubd);
	tcase_add_test(tc, test_calls_over_a_lane);
	suite_add_tcase(s, tc);
	return s;
}
