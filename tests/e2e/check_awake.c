/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The wait strategy's crowding count (header.awake, doc/protocol.md section
 * 10, "Crowding"): hubd and libguest count themselves in while they are not
 * asleep, a guest that dies counted is taken back, and a hub whose
 * processes all share one CPU (they yield instead of spinning) still
 * answers every call. No timing is asserted. */
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

#define GUESTS "[guest echo]\nexec = @/guests/echo\n" \
	"[guest prober]\nexec = @/tests/guests/prober\n"

static struct hub_proc hub;
static pid_t caller = -1;

static void
teardown(void)
{
	if (caller > 0) {
		kill(caller, SIGKILL);
		waitpid(caller, NULL, 0);
		caller = -1;
	}
	harness_teardown();
}

/* hubctl status's figure; hubd counts itself while it answers. */
static int
status_int(const char *key)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
	int v;

	ck_assert_msg(o != NULL, "no status: %s", hub_log_tail(&hub));
	v = json_object_get_int(json_get(o, key));
	json_object_put(o);
	return v;
}

/* Waits up to ms for awake_processes to be want; the last value seen. */
static int
wait_awake(int want, int ms)
{
	int v = -1;

	for (int i = 0; i < ms / 20; i++) {
		if ((v = status_int("awake_processes")) == want)
			break;
		sleep_ms(20);
	}
	return v;
}

/* Quiet: the guests sleep, only hubd (answering) is counted. */
START_TEST(test_idle_hub_counts_only_hubd)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.route,prober.busy") == 0);
	ck_assert_int_ge(status_int("cpus"), 1);
	hubctl_ok(&hub, &out, "call", "prober.route", "echo.echo", "hi", NULL);
	ck_assert_str_eq(out, "hi\n");
	free(out);
	ck_assert_int_eq(wait_awake(1, 3000), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest killed while it computes (counted awake) is counted out when
 * hubd recovers it; its successor sleeps like the others. */
START_TEST(test_guest_killed_awake_is_uncounted)
{
	int pid, v;

	hub_start_up(&hub, NULL, GUESTS, "echo,prober");
	ck_assert(hub_wait_method(&hub, "prober.busy") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	if ((caller = fork()) == 0) {
		char *out = NULL;

		hubctl(&hub, &out, "call", "prober.busy", "10000", NULL);
		_exit(0);
	}
	ck_assert_int_gt(caller, 0);
	/* hubd answering, prober computing */
	ck_assert_int_eq(wait_awake(2, 5000), 2);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	waitpid(caller, NULL, 0);
	caller = -1;
	ck_assert(hub_wait_up(&hub, "prober", 10000) == 0);
	ck_assert_int_ne(hub_peer_int(&hub, "prober", "pid"), pid);
	v = wait_awake(1, 3000);
	ck_assert_msg(v == 1, "awake_processes %d after the dead guest's recovery", v);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Every process of the hub on one CPU: more of them awake than CPUs, so
 * nobody spins; routed calls, many in flight, all answered right. */
START_TEST(test_one_cpu_hub_answers)
{
	cpu_set_t one;
	char *out = NULL;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	/* hubd and its guests inherit it */
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	hub_start_up(&hub, NULL, GUESTS, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.concurrent,prober.route") == 0);
	ck_assert_int_eq(status_int("cpus"), 1);
	for (int i = 0; i < 20; i++) {
		hubctl_ok(&hub, &out, "call", "prober.concurrent", "64", NULL);
		ck_assert_str_eq(out, "64\n");
		free(out);
	}
	hubctl_ok(&hub, &out, "call", "prober.route", "echo.echo", "one cpu", NULL);
	ck_assert_str_eq(out, "one cpu\n");
	free(out);
	ck_assert_int_eq(wait_awake(1, 3000), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Calls after quiet, with idle guests beside the caller: each wakes hubd
 * by the caller's bell, whose guest hubd serves before the others, and
 * whose bell it drains only on the loop's next turn (bells_cb). Every
 * answer right, and hubd asleep again afterwards: no bell left readable,
 * no round left turning. */
START_TEST(test_bell_woken_calls_beside_idle_guests)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS
		     "[guest idle1]\nexec = @/tests/guests/prober\nargs = --prefix idle1\n"
		     "[guest idle2]\nexec = @/tests/guests/prober\nargs = --prefix idle2\n",
		     "echo,prober,idle1,idle2");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.sporadic,idle2.sporadic") == 0);
	/* host-served, then to another guest through hubd */
	hubctl_ok(&hub, &out, "call", "prober.sporadic", "hub.ping", "20", "5", NULL);
	ck_assert_str_eq(out, "ok 20\n");
	free(out);
	hubctl_ok(&hub, &out, "call", "prober.sporadic", "echo.echo", "20", "5", NULL);
	ck_assert_str_eq(out, "ok 20\n");
	free(out);
	hub_assert_asleep(&hub, "after calls that woke it by a bell");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_awake(void);
Suite *
suite_awake(void)
{
	Suite *s = suite_create("awake");
	TCase *tc = tcase_create("awake");

	tcase_add_unchecked_fixture(tc, harness_setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_idle_hub_counts_only_hubd);
	tcase_add_test(tc, test_guest_killed_awake_is_uncounted);
	tcase_add_test(tc, test_one_cpu_hub_answers);
	tcase_add_test(tc, test_bell_woken_calls_beside_idle_guests);
	suite_add_tcase(s, tc);
	return s;
}
