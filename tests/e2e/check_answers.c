/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Every call gets an answer: one too big to send becomes an error, a
 * guest being restarted says so, a guest cannot make the host keep (and
 * list) more methods than its share. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

/* One call through hubctl: exit status 0 and exactly want on stdout. */
static void
expect_call(const char *method, const char *arg, const char *want)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "-t", "30", "call", method, arg, (char *)NULL);

	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "rc %d: %s", rc, out);
	free(out);
}

/* A guest's hub.ping whose answer is one byte over max_payload_size gets
 * an error answer at once instead of waiting for ever (fixed pools only:
 * the shared pool's largest class is far larger). */
START_TEST(test_answer_too_big_is_an_error)
{
	hub_start_up(&hub, NULL, "[pool]\nclasses = none\n[guest prober]\nexec = @/tests/guests/prober\n", "prober");
	ck_assert(hub_wait_method(&hub, "prober.ping") == 0);
	/* max_payload_size 65532: a request of 1 + 3 + 65528 bytes fits,
	 * the answer (1 + 1 + 3 + 65528) does not */
	expect_call("prober.ping", "65528",
		    "error: hub: the answer is larger than the caller's max_payload_size\n");
	expect_call("prober.ping", "65527", "ok 65527\n");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Between a guest's death and its next instance, its methods answer that
 * it is restarting, to guests and to hubctl; then they work again. */
START_TEST(test_restarting_guest_says_so)
{
	json_object *p, *v;
	char *out, *err;
	int rc, pid;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\nbackoff_min = 3s\n"
	      "[guest prober]\nexec = @/tests/guests/prober\n", "echo,prober");
	ck_assert(hub_wait_method(&hub, "prober.route") == 0);
	p = hub_peer(&hub, "echo");
	ck_assert(json_object_object_get_ex(p, "pid", &v));
	pid = json_object_get_int(v);
	json_object_put(p);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	for (int i = 0; i < 500; i++) {
		p = hub_peer(&hub, "echo");
		json_object_object_get_ex(p, "state", &v);
		rc = strcmp(json_object_get_string(v), "backoff");
		json_object_put(p);
		if (rc == 0)
			break;
		usleep(10000);
	}
	ck_assert_int_eq(rc, 0);
	/* a guest's call */
	out = hubctl(&hub, &err, "call", "prober.route", "echo.echo", "hi", (char *)NULL) == 0 ?
	    err : NULL;
	ck_assert_msg(out != NULL && strstr(out, "error: hub") != NULL, "route: %s", err);
	free(err);
	/* hubctl's: exit 1, the reason as the error's JSON */
	rc = hubctl(&hub, &out, "-j", "call", "echo.echo", "hi", (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(out, "guest echo is restarting") != NULL,
		      "rc %d: %s", rc, out);
	free(out);
	ck_assert(hub_wait_up(&hub, "echo", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	expect_call("echo.echo", "back", "back\n");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest registering thousands of methods gets a clear refusal past its
 * share; the hub's method list still answers everyone. */
START_TEST(test_methods_per_guest_bounded)
{
	json_object *a, *ms;
	char *log, *out = NULL;
	int rc;

	hub_start_up(&hub, NULL,
	    "[guest many]\nexec = @/tests/guests/many\nargs = --count=2000\n"
	      "[guest echo]\nexec = @/guests/echo\n", "many,echo");
	for (int i = 0; i < 1000; i++) {
		log = hub_log(&hub);
		if (strstr(log, "many: the hub took") != NULL)
			break;
		free(log);
		log = NULL;
		usleep(10000);
	}
	ck_assert_msg(log != NULL && strstr(log, "many: the hub took 256 of 2000, then: No space left on device") != NULL,
		      "log: %.300s", log ? strstr(log, "many: the hub took") : "(nothing)");
	free(log);
	rc = hubctl(&hub, &out, "methods", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "many.m255") != NULL && strstr(out, "echo.echo"),
		      "rc %d", rc);
	free(out);
	a = hub_request(&hub, "{\"cmd\":\"methods\"}", NULL);
	ck_assert(a != NULL && json_object_object_get_ex(a, "methods", &ms));
	/* 10 host services, echo's 2, many's 256 */
	ck_assert_int_eq(json_object_array_length(ms), 10 + 2 + 256);
	json_object_put(a);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_answers(void);
Suite *
suite_answers(void)
{
	Suite *s = suite_create("answers");
	TCase *tc = tcase_create("answers");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_answer_too_big_is_an_error);
	tcase_add_test(tc, test_restarting_guest_says_so);
	tcase_add_test(tc, test_methods_per_guest_bounded);
	suite_add_tcase(s, tc);
	return s;
}
