/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Every call gets an answer: one too big to send becomes an error, a
 * guest being restarted says so, a guest cannot make the host keep (and
 * list) more methods than its share, a flood of calls does not keep a
 * guest from registering its methods. */
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

/* hubctl call ARGS... expecting exit status 1 and exactly want, "\n"
 * added, on stderr (json: -j, and on stdout). */
static void
expect_fail(int json, const char *want, const char *method, const char *a1, const char *a2)
{
	char *out = NULL, line[2048];
	int rc = json ? hubctl(&hub, &out, "-j", "call", method, a1, a2, (char *)NULL) :
		 hubctl_err(&hub, &out, "call", method, a1, a2, (char *)NULL);

	snprintf(line, sizeof(line), "%s\n", want);
	ck_assert_msg(rc == 1 && strcmp(out, line) == 0, "hubctl call %s %s %s: rc %d, '%s', "
		      "want '%s'", method, a1, a2, rc, out, want);
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
		    "error: hub: the answer is larger than its caller takes: 65533 bytes with "
		    "its envelope, the caller's max_payload_size is 65532\n");
	expect_call("prober.ping", "65527", "ok 65527\n");
	/* a guest's own answer too large: its caller gets an error naming
	 * the method and the size, not a limit of the config it never set */
	expect_fail(0, "hubctl: prober.bools: its result of 100003 bytes is larger than "
		    "the hub carries", "prober.bools", "100000", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Between a guest's death and its next instance, its methods answer that
 * it is restarting, to guests and to hubctl; then they work again. Its
 * backoff is longer than any test runs (a load that slows the calls
 * below cannot outlast it), and hubctl restart ends it. */
START_TEST(test_restarting_guest_says_so)
{
	json_object *p, *v;
	char *out, *err;
	int rc, pid;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\n"
	      "backoff_min = 10min\nbackoff_max = 10min\n"
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
	ck_assert_str_eq(hub_peer_state(&hub, "echo"), "backoff");
	hubctl_ok(&hub, NULL, "restart", "echo", (char *)NULL);
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
	/* 15 host services (hub.advertised, hub.unregister the last), echo's 2, many's 256 */
	ck_assert_int_eq(json_object_array_length(ms), 15 + 2 + 256);
	json_object_put(a);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A caller that floods a guest with calls while the guest still
 * registers its methods costs it no registration: libguest refuses the
 * calls it has no room to keep, rather than leave them in its ring in
 * front of hub.register's answer, which timed out there (10 s, and the
 * guest's next one too). */
START_TEST(test_register_under_a_flood)
{
	char *log = NULL;
	int rc;

	hub_start_up(&hub, NULL,
	    "[guest flooder]\nexec = @/tests/guests/flooder\nargs = --method=many.m0 --window=256\n"
	      "[guest many]\nexec = @/tests/guests/many\nargs = --count=5\n", "flooder,many");
	for (int i = 0; i < 300; i++) {
		log = hub_log(&hub);
		if (strstr(log, "many: the hub took") != NULL)
			break;
		free(log);
		log = NULL;
		usleep(100000);
	}
	ck_assert_msg(log != NULL && strstr(log, "many: the hub took 5 of 5\n") != NULL,
		      "log: %.300s", log ? strstr(log, "many: the hub took") : "(none in 30 s)");
	free(log);
	/* the flood goes on, and its calls are answered */
	rc = hub_wait_method(&hub, "many.m4");
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(hub_peer_int(&hub, "many", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest that forwards an answer from elsewhere (a bridge to another
 * host) answers with the error its own caller would see
 * (guest_reply_status): each kind reaches a guest caller with its status
 * and text, from guest_call and guest_call_async alike, through hubd
 * (_i 0), over a lane (1), between guests on microthreads over a lane
 * (2); hubctl shows what failed. A status it does not take is refused
 * with nothing sent; text that is not UTF-8 goes with U+FFFD for each
 * bad byte (it was refused, and a handler that did not look left its
 * caller waiting); a second answer is refused. guest_reply_error's text
 * is made UTF-8 and cut the same way (one not UTF-8, or cut inside a
 * character, reached callers as "(user)", one NULL crashed the guest). */
START_TEST(test_forwarded_error_kinds)
{
	static const char *const guests[] = {
		"[guest prober]\nexec = @/tests/guests/prober\nlanes = no\n"
		"[guest fwd]\nexec = @/tests/guests/prober\nargs = --prefix fwd\nlanes = no\n",
		"[guest prober]\nexec = @/tests/guests/prober\n"
		"[guest fwd]\nexec = @/tests/guests/prober\nargs = --prefix fwd\n",
		"[guest prober]\nexec = @/tests/guests/mtprober\nargs = --prefix prober\n"
		"[guest fwd]\nexec = @/tests/guests/mtprober\nargs = --prefix fwd\n",
	};
	static const struct { const char *kind, *text, *want; } cases[] = {
		{ "user", "no such key", "user: no such key" },
		{ "user", "@null", "user: error" },
		{ "unreachable", "nats: no responders", "unreachable: nats: no responders" },
		{ "unreachable", "@null", "unreachable: remote hub unreachable" },
		{ "timeout", "nats: timeout after 2s", "timeout: nats: timeout after 2s" },
		{ "timeout", "@null", "timeout: the remote side timed out" },
		{ "unknown", "no method kv.gett there", "unknown method: no method kv.gett there" },
		{ "unknown", "@null", "unknown method: no such method" },
		{ "invalid", "kv.put takes 2 arguments", "invalid payload: kv.put takes 2 arguments" },
		{ "invalid", "@null", "invalid payload: invalid payload" },
		{ "cancelled", "the remote guest died", "cancelled: the remote guest died" },
		{ "cancelled", "@null", "cancelled: cancelled" },
		/* refused: the handler answers a User error instead */
		{ "bogus", "x", "user: refused: EINVAL" },
		{ "timeout", "@bad", "timeout: bad \xef\xbf\xbd text" },
		{ "invalid", "@bad", "invalid payload: bad \xef\xbf\xbd text" },
		/* guest_reply_error: the same User error, its text as checked */
		{ "error", "no such key", "user: no such key" },
		{ "error", "@null", "user: error" },
		{ "error", "@bad", "user: bad \xef\xbf\xbd text" },
	};
	char want[512], *out, *p;
	size_t n;

	hub_start_up(&hub, NULL, guests[_i], "prober,fwd");
	/* every method there: until the last, mtprober serves off
	 * microthreads (inside guest_register) */
	ck_assert(hub_wait_method(&hub, _i < 2 ? "prober.why2,fwd.fail,fwd.fail_rc" :
				  "prober.source,fwd.source") == 0);
	if (_i > 0) {
		/* the first call goes through hubd, which offers the lane the
		 * others take */
		out = NULL;
		ck_assert_int_eq(hubctl(&hub, &out, "call", "prober.why2", "fwd.fail", "user",
					"x", (char *)NULL), 0);
		free(out);
		for (int i = 0; i < 100; i++) {
			json_object *l = hub_request(&hub, "{\"cmd\":\"lanes\"}", NULL);

			n = json_object_array_length(json_get(l, "lanes"));
			json_object_put(l);
			if (n == 1)
				break;
			sleep_ms(50);
		}
		ck_assert_uint_eq(n, 1);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		out = NULL;
		ck_assert_int_eq(hubctl(&hub, &out, "-t", "30", "call", "prober.why2", "fwd.fail",
					cases[i].kind, cases[i].text, (char *)NULL), 0);
		snprintf(want, sizeof(want), "%s | %s\n", cases[i].want, cases[i].want);
		ck_assert_msg(strcmp(out, want) == 0, "%s %s: '%s', want '%s'", cases[i].kind,
			      cases[i].text, out, want);
		free(out);
		/* the second answer, after the first or after a refusal */
		expect_call("fwd.fail_rc", NULL, strncmp(cases[i].want, "user: refused: ", 15) == 0 ?
			    "EINVAL EALREADY\n" : "0 EALREADY\n");
	}
	/* cut to 1023 bytes, between characters: 511 of the 600 "é" */
	out = NULL;
	ck_assert_int_eq(hubctl(&hub, &out, "call", "prober.why2", "fwd.fail", "unreachable",
				"@long", (char *)NULL), 0);
	p = strstr(out, " | ");
	ck_assert_msg(p != NULL && strncmp(out, "unreachable: \xc3\xa9", 15) == 0, "%.80s", out);
	n = (size_t)(p - out) - strlen("unreachable: ");
	ck_assert_uint_eq(n, 1022);
	ck_assert_uint_eq(strlen(p + 3), strlen("unreachable: ") + 1022 + 1);	/* and "\n" */
	free(out);
	/* guest_reply_error's text too */
	out = NULL;
	ck_assert_int_eq(hubctl(&hub, &out, "call", "prober.why2", "fwd.fail", "error",
				"@long", (char *)NULL), 0);
	p = strstr(out, " | ");
	ck_assert_msg(p != NULL && strncmp(out, "user: \xc3\xa9", 8) == 0, "%.80s", out);
	ck_assert_uint_eq((size_t)(p - out) - strlen("user: "), 1022);
	free(out);
	if (_i > 0) {
		/* those went over the lane: 5 s for prober to publish its
		 * lane's figures (it does now and then, and before it sleeps) */
		const unsigned long long need = 2 * sizeof(cases) / sizeof(cases[0]);
		unsigned long long got = 0;

		for (int i = 0; i < 100 && got < need; i++) {
			json_object *st;

			if (i > 0)
				sleep_ms(50);
			st = hub_stats(&hub);
			got = json_u64(st, "guests", "prober", "lane_calls_in");
			json_object_put(st);
		}
		ck_assert_msg(got >= need, "prober's lane_calls_in is %llu, want >= %llu", got, need);
	}
	/* hubctl: what failed, then the text */
	expect_fail(0, "hubctl: no such key", "fwd.fail", "user", "no such key");
	expect_fail(0, "hubctl: remote hub unreachable: no responders", "fwd.fail",
		    "unreachable", "no responders");
	expect_fail(0, "hubctl: remote timeout: after 2s", "fwd.fail", "timeout", "after 2s");
	expect_fail(0, "hubctl: remote timeout: the remote side timed out", "fwd.fail",
		    "timeout", "@null");
	expect_fail(0, "hubctl: unknown method: not there", "fwd.fail", "unknown", "not there");
	expect_fail(0, "hubctl: unknown method", "fwd.fail", "unknown", "@null");
	expect_fail(0, "hubctl: invalid payload: 2 arguments", "fwd.fail", "invalid",
		    "2 arguments");
	expect_fail(0, "hubctl: cancelled: remote died", "fwd.fail", "cancelled", "remote died");
	expect_fail(1, "{\"ok\":false,\"kind\":\"unreachable\",\"error\":\"no responders\"}",
		    "fwd.fail", "unreachable", "no responders");
	expect_fail(1, "{\"ok\":false,\"kind\":\"timeout\",\"error\":\"after 2s\"}",
		    "fwd.fail", "timeout", "after 2s");
	expect_fail(1, "{\"ok\":false,\"kind\":\"unknown method\",\"error\":\"not there\"}",
		    "fwd.fail", "unknown", "not there");
	expect_fail(1, "{\"ok\":false,\"kind\":\"cancelled\",\"error\":\"cancelled\"}",
		    "fwd.fail", "cancelled", "@null");
	ck_assert_int_eq(hub_peer_int(&hub, "fwd", "restarts"), 0);
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
	tcase_add_test(tc, test_register_under_a_flood);
	tcase_add_loop_test(tc, test_forwarded_error_kinds, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
