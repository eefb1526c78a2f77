/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Guests on microthreads (guest_run_mt) against a real hubd: handlers
 * that block (in a call, on a runtime channel) suspend alone, thousands
 * at once; a handler that computes keeps the heartbeat by yielding; a
 * crashing handler takes down its guest only, which hubd restarts; hub
 * channels read and written as runtime channels. Two instances of the
 * mtprober test guest, "m1" and "m2", on P processors (loop: 1, 2). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

static void
start(int processors, const char *keys)
{
	char guests[512];

	snprintf(guests, sizeof(guests),
		 "[guest m1]\nexec = @/tests/guests/mtprober\n"
		 "args = --prefix m1 --processors %d\n"
		 "[guest m2]\nexec = @/tests/guests/mtprober\n"
		 "args = --prefix m2 --processors %d\n"
		 "[guest echo]\nexec = @/guests/echo\n",
		 processors, processors);
	hub_start_up(&hub, keys, guests, "m1,m2,echo");
	/* PREFIX.source, mtprober's last: every method there. A call that
	 * comes while the guest still registers waits for guest_run_mt (a
	 * handler's channel or spawn would fail off the microthreads) */
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source,echo.echo") == 0);
}

/* hubctl call METHOD ARGS...: its output without the newline (malloc'd),
 * asserting the exit status. */
static char *
call3(int status, const char *method, const char *a1, const char *a2, const char *a3)
{
	char *out = NULL, *nl;
	int rc = hubctl(&hub, &out, "-t", "120", "call", method, a1, a2, a3, (char *)NULL);

	ck_assert_msg(rc == status, "hubctl call %s %s %s: status %d, want %d, output '%s'; %s",
		      method, a1 ? a1 : "", a2 ? a2 : "", rc, status, out,
		      hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	return out;
}

static char *
call(int status, const char *method, const char *a1, const char *a2)
{
	return call3(status, method, a1, a2, NULL);
}

static void
expect3(const char *method, const char *a1, const char *a2, const char *a3,
	const char *want)
{
	char *out = call3(0, method, a1, a2, a3);

	ck_assert_msg(strcmp(out, want) == 0, "%s %s %s: '%s', want '%s'; log: %s", method,
		      a1 ? a1 : "", a2 ? a2 : "", out, want, hub_log_tail(&hub));
	free(out);
}

static void
expect(const char *method, const char *a1, const char *a2, const char *want)
{
	expect3(method, a1, a2, NULL, want);
}

/* hubd stops cleanly, its guests detached (the next test's hub takes
 * the same paths). */
static void
stop(void)
{
	int rc = hub_stop(&hub);

	ck_assert_msg(rc == 0, "hubd exit status %d: %s", rc, hub_log_tail(&hub));
}

/* Neither guest died (under ThreadSanitizer: no race ended one). */
static void
none_restarted(void)
{
	ck_assert_msg(hub_peer_int(&hub, "m1", "restarts") == 0 &&
		      hub_peer_int(&hub, "m2", "restarts") == 0,
		      "a guest was restarted: %s", hub_log_tail(&hub));
}

/* 200 handlers of m1 block on its gate at once, each waited on by a
 * microthread of m2 blocked in its call; the call that opens the gate
 * gets through all the same. A guest whose handlers ran one inside the
 * other could not answer any of them before the last came back. */
START_TEST(test_blocked_handlers_do_not_stall_the_guest)
{
	start(_i + 1, NULL);
	expect3("m2.fanopen", "200", "m1", "true", "ok 200");
	/* and again: the handler microthreads are reused */
	expect3("m2.fanopen", "200", "m1", "true", "ok 200");
	none_restarted();
	stop();
}
END_TEST

/* 10,000 calls blocked at once: 10,000 microthreads of m2 in guest_call,
 * 10,000 handlers of m1 suspended on the gate (calls_in_flight raised
 * for it: the default lets a guest route 1024 at once). */
START_TEST(test_ten_thousand_calls_blocked_at_once)
{
	start(_i + 1, "calls_in_flight = 20000\n");
	expect3("m2.fanopen", "10000", "m1", "true", "ok 10000");
	stop();
}
END_TEST

/* The limit holds: past calls_in_flight calls routed at once the rest
 * are refused with an error, and the guest goes on. The gate opens from
 * inside m1 (a call to open it would be refused too), a second after the
 * 100th wait is in: not a second after the test asked, which a loaded
 * machine could spend before the first call came. */
START_TEST(test_calls_in_flight_limit_answers_an_error)
{
	char *out;

	start(1, "calls_in_flight = 100\n");
	expect3("m1.open_when", "100", "1000", "300", "ok");
	out = call3(0, "m2.fanopen", "300", "m1", "false");
	ck_assert_msg(strncmp(out, "error: ", 7) == 0 && strstr(out, "of 300 ok, first: hub") != NULL,
		      "fanopen past the limit: '%s'", out);
	free(out);
	expect("m2.call", "echo.echo", "still here", "still here");
	stop();
}
END_TEST

/* A nested call from a handler, and one that times out (a Cancel goes
 * out; the guest stays up). */
START_TEST(test_nested_call_and_timeout)
{
	char *out;

	start(_i + 1, NULL);
	expect("m2.call", "echo.reverse", "abc", "cba");
	out = call(0, "m2.call_timeout", "m1.wait", "200");
	ck_assert_msg(strcmp(out, "error: timeout") == 0, "call_timeout: '%s'", out);
	free(out);
	/* the waiting handler of m1 is still there: one token frees it */
	expect("m1.open", "1", NULL, "ok 1");
	expect("m2.call", "echo.echo", "after", "after");
	none_restarted();
	stop();
}
END_TEST

/* A handler computing for 6 s (six heartbeat intervals) yields now and
 * then: the guest is never taken for hung. The interval is 1 s: a beat
 * more than 2 s late is a hang, not load. */
START_TEST(test_computing_handler_keeps_the_heartbeat)
{
	start(_i + 1, "heartbeat_interval = 1s\n");
	expect("m1.spin", "6000", "true", "ok");
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	ck_assert_str_eq(hub_peer_state(&hub, "m1"), "up");
	stop();
}
END_TEST

/* On two processors it need not even yield: the other one serves the
 * rings and beats meanwhile. */
START_TEST(test_computing_handler_on_two_processors)
{
	start(2, "heartbeat_interval = 1s\n");
	expect("m1.spin", "6000", "false", "ok");
	expect("m2.call", "echo.echo", "served", "served");
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	stop();
}
END_TEST

/* hubd.conf's processors = N reaches a guest that leaves the choice to
 * the operator (its threads: one per processor); unset, it has one. */
START_TEST(test_processors_from_the_config)
{
	hub_start_up(&hub, NULL,
		     "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1\n"
		     "processors = 3\n"
		     "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2\n",
		     "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	expect("m1.threads", NULL, NULL, "3");
	expect("m2.threads", NULL, NULL, "1");
	stop();
}
END_TEST

/* A call that comes while the guest still sets up (in hub.describe, as
 * in hub.register) waits for guest_run_mt and runs on a microthread: it
 * ran inside the setup's wait before, off the runtime, where a handler's
 * channel or spawn fails. */
START_TEST(test_call_during_setup_waits_for_the_runtime)
{
	hub_start_up(&hub, NULL,
		     "[guest m1]\nexec = @/tests/guests/mtprober\n"
		     "args = --prefix m1 --describe-until-called\n", "m1");
	ck_assert(hub_wait_method(&hub, "m1.source") == 0);
	expect("m1.onmt", NULL, NULL, "yes");
	expect("m1.onmt", NULL, NULL, "yes");
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	stop();
}
END_TEST

/* A handler that crashes takes its guest down, nothing else: the caller
 * gets an error, hubd restarts the guest, which serves again. */
START_TEST(test_crashing_handler_restarts_the_guest)
{
	char *out;

	start(_i + 1, NULL);
	out = call(1, "m1.crash", NULL, NULL);
	free(out);
	ck_assert_msg(hub_wait_up(&hub, "m1", 10000) == 0, "m1 not back: %s",
		      hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 1);
	ck_assert(hub_wait_method(&hub, "m1.source") == 0);	/* all of them */
	expect3("m2.fanopen", "20", "m1", "true", "ok 20");
	/* a microthread whose callee dies hears Cancelled at once, not
	 * when its own timeout (20 s, past the hubctl call's) runs out */
	expect("m2.call_timeout", "m1.crash", "20000", "error: cancelled");
	ck_assert(hub_wait_up(&hub, "m1", 10000) == 0);
	ck_assert_int_eq(hub_peer_int(&hub, "m2", "restarts"), 0);
	stop();
}
END_TEST

/* A handler that ends its microthread with guest_mt_exit, as guest.h
 * allows, is done with its request as one that returns: a stop then
 * ends the guest at once. It waited for those requests until hubd's
 * SIGKILL (stop_grace: 300 s here). */
START_TEST(test_handler_that_exits_lets_the_guest_stop)
{
	int i;

	start(_i + 1, "stop_grace = 300s\n");
	for (i = 0; i < 3; i++)
		expect("m1.exit", NULL, NULL, "ok");
	expect("m1.onmt", NULL, NULL, "yes");
	hubctl_ok(&hub, NULL, "stop", "m1", (char *)NULL);
	for (i = 0; i < 1500 && strcmp(hub_peer_state(&hub, "m1"), "down") != 0; i++)
		sleep_ms(20);
	ck_assert_msg(i < 1500, "m1 did not stop: %s: %s", hub_peer_state(&hub, "m1"),
		      hub_log_tail(&hub));
	stop();
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* A handler that needs more stack than a microthread has dies in its
 * guard with a line that names it and says what to raise; with env =
 * HUB_MT_STACK=1m the same call fits; a HUB_MT_STACK that is not a size
 * stops the guest at its start, saying so. Not under ASan or TSan: their
 * own SIGSEGV handler is there first, and libguest leaves it alone. */
START_TEST(test_stack_overflow_is_named)
{
	char guests[256], *out;

	start(_i + 1, NULL);
	out = call(1, "m1.big", NULL, NULL);
	free(out);
	ck_assert_msg(hub_log_wait(&hub, "libguest: microthread stack overflow in the handler "
			      "of m1.big (stack 64 KiB; raise it with "
			      "guest_rt_config.stack_size or HUB_MT_STACK)\n", 10000),
		      "no overflow message: %s", hub_log_tail(&hub));
	ck_assert(hub_wait_up(&hub, "m1", 10000) == 0);
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 1);
	stop();

	snprintf(guests, sizeof(guests),
		 "[guest m1]\nexec = @/tests/guests/mtprober\n"
		 "args = --prefix m1 --processors %d\nenv = HUB_MT_STACK=1m\n", _i + 1);
	hub_start_up(&hub, NULL, guests, "m1");
	ck_assert(hub_wait_method(&hub, "m1.source") == 0);
	expect("m1.big", NULL, NULL, "ok");
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	stop();

	hub_start_up(&hub, NULL, "[guest m1]\nexec = @/tests/guests/mtprober\n"
		     "args = --prefix m1\nenv = HUB_MT_STACK=64x\n", NULL);
	ck_assert_msg(hub_log_wait(&hub, "libguest: HUB_MT_STACK=64x: not a stack size", 10000),
		      "no complaint: %s", hub_log_tail(&hub));
	stop();
}
END_TEST

/* A frame larger than the guard (a large local array) jumps it: its
 * first write lands below, not in the guard, and the overflow is named
 * all the same (by the stack pointer, below the stack). It said only
 * "libguest: fatal signal SIGSEGV at 0x...". */
START_TEST(test_frame_past_the_guard_is_named)
{
	char *out;

	hub_start_up(&hub, NULL, "[guest m1]\nexec = @/tests/guests/mtprober\n"
		     "args = --prefix m1\nlanes = no\n", "m1");
	ck_assert(hub_wait_method(&hub, "m1.source") == 0);
	out = call(1, "m1.huge", "16", NULL);
	free(out);
	ck_assert_msg(hub_log_wait(&hub, "libguest: microthread stack overflow in the handler "
			      "of m1.huge (stack 64 KiB", 10000), "not named: %s", hub_log_tail(&hub));
	stop();
}
END_TEST

/* A guest out of room for microthreads (here its address space, bounded
 * by limit_memory, 1 MiB stacks; by default the kernel's
 * vm.max_map_count, some 32,000) refuses the calls it cannot run with
 * an error, says so once, and serves on: the failed spawn ended its
 * runtime, every call it held cancelled, and the guest restarted. The
 * caller, m2, may have all 2000 answers wait for it: m1 refuses faster
 * than m2, busy making its calls, reads (on a loaded machine more than
 * 512 waited, which ended m2 for "pool quota" while hubd counted answers
 * waiting in its memory as slots). */
START_TEST(test_out_of_microthreads_refuses_the_call)
{
	char *out;

	hub_start_up(&hub, "calls_in_flight = 5000\n",
		     "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1\n"
		     "env = HUB_MT_STACK=1m\nlimit_memory = 512M\nlanes = no\n"
		     "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2\n",
		     "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	/* the gate opens in 3 s, for those that got a microthread */
	expect("m1.open_later", "3000", "2000", "ok");
	out = call3(0, "m2.fanopen", "2000", "m1", "false");
	ck_assert_msg(strstr(out, " of 2000 ok, first: user") != NULL &&
		      strncmp(out, "error: 0 ", 9) != 0,
		      "fanopen: '%s'; %s", out, hub_log_tail(&hub));
	free(out);
	ck_assert_msg(hub_log_wait(&hub, "libguest: no microthread for a call of m1.wait "
			      "(Cannot allocate memory): refused with an error "
			      "until one can be made\n", 10000), "not said: %s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	expect("m1.onmt", NULL, NULL, "yes");
	stop();
}
END_TEST
#endif

/* hub.source into a runtime channel, hub.sink from one: every byte, in
 * order (the stream hashes agree), through a 64 KiB window. */
START_TEST(test_hub_channels_as_runtime_channels)
{
	start(_i + 1, "initial_credit = 64K\n");
	expect("m1.pull", "3000000", "0", "ok 3000000");
	expect("m1.push", "3000000", NULL, "ok 3000000");
	expect("m1.pull", "1", "0", "ok 1");
	/* the reader closes early: hub.source hears of it and gives up */
	expect("m1.pull", "100000000", "300000", "stopped: hub");
	expect("m1.pull", "200000", "0", "ok 200000");
	expect("m1.push", "1", NULL, "ok 1");
	none_restarted();
	stop();
}
END_TEST

Suite *suite_mtguest(void);
/* A second answer from a microthread handler, or from a callback after
 * it returned, is refused (-EALREADY): the guest serves on. */
START_TEST(test_second_answer_is_refused)
{
	start(_i + 1, NULL);
	ck_assert(hub_wait_method(&hub, "m1.twice,m1.twice_rc") == 0);
	expect("m1.twice", "0", NULL, "first");
	expect("m1.twice_rc", NULL, NULL, "EALREADY EALREADY");
	free(call(1, "m1.twice", "1", NULL));
	expect("m1.twice_rc", NULL, NULL, "EALREADY EALREADY");
	expect("m1.twice", "2", NULL, "first");
	expect("m1.twice_rc", NULL, NULL, "EALREADY EALREADY");
	none_restarted();
	stop();
}
END_TEST

Suite *
suite_mtguest(void)
{
	Suite *s = suite_create("mtguest");
	TCase *tc = tcase_create("mtguest");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_loop_test(tc, test_blocked_handlers_do_not_stall_the_guest, 0, 2);
	tcase_add_loop_test(tc, test_ten_thousand_calls_blocked_at_once, 0, 2);
	tcase_add_test(tc, test_calls_in_flight_limit_answers_an_error);
	tcase_add_loop_test(tc, test_nested_call_and_timeout, 0, 2);
	tcase_add_loop_test(tc, test_computing_handler_keeps_the_heartbeat, 0, 2);
	tcase_add_test(tc, test_computing_handler_on_two_processors);
	tcase_add_test(tc, test_processors_from_the_config);
	tcase_add_test(tc, test_call_during_setup_waits_for_the_runtime);
	tcase_add_loop_test(tc, test_crashing_handler_restarts_the_guest, 0, 2);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	tcase_add_loop_test(tc, test_stack_overflow_is_named, 0, 2);
#endif
	tcase_add_loop_test(tc, test_hub_channels_as_runtime_channels, 0, 2);
	tcase_add_loop_test(tc, test_second_answer_is_refused, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("mtguest_exit");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_loop_test(tc, test_handler_that_exits_lets_the_guest_stop, 0, 2);
	suite_add_tcase(s, tc);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* limits a guest on microthreads meets: its address space bounded,
	 * its stack overflowed (not under ASan or TSan, which reserve
	 * terabytes of address space and keep their own SIGSEGV handler) */
	tc = tcase_create("mtguest_limits");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_out_of_microthreads_refuses_the_call);
	tcase_add_test(tc, test_frame_past_the_guard_is_named);
	suite_add_tcase(s, tc);
#endif
	/* the guest's lock, its service and its microthreads on two
	 * processors under ThreadSanitizer (make check-tsan builds the
	 * guests with it; a race ends the guest: halt_on_error) */
	tc = tcase_create("mtguest_threads");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 180);
	tcase_set_tags(tc, "tsan");
	tcase_add_loop_test(tc, test_blocked_handlers_do_not_stall_the_guest, 1, 2);
	tcase_add_loop_test(tc, test_nested_call_and_timeout, 1, 2);
	tcase_add_loop_test(tc, test_hub_channels_as_runtime_channels, 1, 2);
	suite_add_tcase(s, tc);
	return s;
}
