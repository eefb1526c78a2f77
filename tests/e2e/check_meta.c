/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Call metadata end to end (proto/callmeta.c, daemon/route.c,
 * guestlib/call_in.c, call_out.c): a handler reads its call's deadline
 * and trace through hubd and over a lane, under guest_run and on
 * microthreads; the calls it makes inherit both; a call whose deadline
 * has passed never starts its handler; hubctl call --timeout and
 * --trace set them, hubctl calls shows the trace id. Most guests are
 * the metaguest test guest (tests/guests/metaguest.c). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define MG(name, extra) \
	"[guest " name "]\nexec = @/tests/guests/metaguest\nargs = --prefix " name extra "\n"
#define TP	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* hubctl call ARGS... (up to seven): its first line (malloc'd),
 * asserting it succeeded. */
static char *
callv(const char *const *a)
{
	char *out = NULL, *nl;
	int rc = hubctl(&hub, &out, "call", a[0], a[1], a[2], a[3], a[4], a[5], a[6],
			(char *)NULL);

	ck_assert_msg(rc == 0, "hubctl call %s %s %s %s %s: status %d, output '%s', stderr "
		      "'%s'; %s", a[0], a[1] ? a[1] : "", a[2] ? a[2] : "", a[3] ? a[3] : "",
		      a[4] ? a[4] : "", rc, out, hubctl_stderr(), hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	return out;
}
#define call(...)	callv((const char *const[8]){ __VA_ARGS__ })

/* A show's answer "DEADLINE TRACE" taken apart; asserts its shape. */
struct shown {
	uint64_t	deadline;
	char		trace[64];	/* "-": none */
};

static struct shown
shown(const char *s)
{
	struct shown r = { 0 };

	ck_assert_msg(sscanf(s, "%" SCNu64 " %63s", &r.deadline, r.trace) == 2,
		      "not DEADLINE TRACE: '%s'", s);
	ck_assert_msg(strcmp(r.trace, "-") == 0 || strlen(r.trace) == 55,
		      "not a traceparent: '%s'", r.trace);
	return r;
}

/* "MINE|ITS" of a nested call: both taken apart. */
static void
nested_parts(const char *s, struct shown *mine, struct shown *its)
{
	const char *bar = strchr(s, '|');
	char first[128];

	ck_assert_msg(bar != NULL && (size_t)(bar - s) < sizeof(first), "not MINE|ITS: '%s'", s);
	memcpy(first, s, (size_t)(bar - s));
	first[bar - s] = '\0';
	*mine = shown(first);
	*its = shown(bar + 1);
}

/* The nested call inherited: the same trace-id, another parent-id, the
 * same flags; a deadline, not later than its caller's. */
static void
inherited(const char *s, int with_deadline)
{
	struct shown mine, its;

	nested_parts(s, &mine, &its);
	ck_assert_msg(strcmp(mine.trace, "-") != 0 && strcmp(its.trace, "-") != 0,
		      "no trace: '%s'", s);
	ck_assert_msg(memcmp(mine.trace, its.trace, 35) == 0, "another trace-id: '%s'", s);
	ck_assert_msg(memcmp(mine.trace + 36, its.trace + 36, 16) != 0,
		      "the same parent-id: '%s'", s);
	ck_assert_msg(strcmp(mine.trace + 52, its.trace + 52) == 0, "other flags: '%s'", s);
	if (with_deadline) {
		ck_assert_msg(mine.deadline != 0 && its.deadline != 0, "no deadline: '%s'", s);
		ck_assert_msg(its.deadline <= mine.deadline, "a later deadline: '%s'", s);
	}
}

static void
start(const char *extra_guests, const char *names, const char *methods)
{
	char guests[1024];

	snprintf(guests, sizeof(guests), MG("a", "") MG("b", "") "%s", extra_guests);
	hub_start_up(&hub, NULL, guests, names);
	ck_assert(hub_wait_method(&hub, methods) == 0);
}

/* Waits (5 s) until hubd lists n open lanes; asserts it. */
static void
lanes_open(size_t n)
{
	size_t have = 0;

	for (int i = 0; i < 100; i++) {
		json_object *o = hub_request(&hub, "{\"cmd\":\"lanes\"}", NULL);

		ck_assert_msg(o != NULL, "no answer to lanes; %s", hub_log_tail(&hub));
		have = json_object_array_length(json_get(o, "lanes"));
		json_object_put(o);
		if (have == n)
			return;
		sleep_ms(50);
	}
	ck_assert_msg(have == n, "%zu lanes open, want %zu; %s", have, n, hub_log_tail(&hub));
}

/* Waits (5 s) until the calls guest made over lanes (lane_calls_in: hubd
 * counts a guest's calls as coming in to it) are at least min (published
 * now and then); asserts it. */
static void
lane_calls_at_least(const char *guest, unsigned long long min)
{
	unsigned long long v = 0;

	for (int i = 0; i < 100; i++) {
		json_object *s = hub_stats(&hub);

		v = json_u64(s, "guests", guest, "lane_calls_in");
		json_object_put(s);
		if (v >= min)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(v >= min, "%s's lane_calls_in is %llu, want >= %llu", guest, v, min);
}

static void
stop_hub(void)
{
	hub_stop(&hub);
}

/* hubctl call --timeout/--trace: the handler sees both, the calls it
 * makes inherit both (through hubd); without either there is none
 * (-t SECS gives a deadline), --trace new starts a trace. */
START_TEST(test_through_hubd)
{
	struct shown s;
	char *out;

	start("", "a,b", "a.show,a.nested,b.show");
	out = call("--timeout", "60000", "--trace", TP, "a.show");
	s = shown(out);
	ck_assert_msg(s.deadline != 0 && strcmp(s.trace, TP) == 0, "a.show: '%s'", out);
	free(out);
	out = call("--trace", TP, "--timeout", "60000", "a.nested", "b.show");
	inherited(out, 1);
	ck_assert_msg(strncmp(out, "0 ", 2) != 0 && strstr(out, TP) == out + strcspn(out, " ") + 1,
		      "a.nested: '%s'", out);
	free(out);
	/* no --trace, no --timeout: neither, nor for the nested call */
	out = call("a.show");
	ck_assert_str_eq(out, "0 -");
	free(out);
	out = call("a.nested", "b.show");	/* its own timeout: a deadline */
	ck_assert_msg(strncmp(out, "0 -|", 4) == 0 && strcmp(out + strlen(out) - 2, " -") == 0 &&
		      strcmp(out, "0 -|0 -") != 0, "a.nested: '%s'", out);
	free(out);
	/* --trace new: a trace of its own, inherited */
	out = call("--trace", "new", "a.nested", "b.show");
	ck_assert_msg(strncmp(out, "0 00-", 5) == 0 && strstr(out, TP + 3) == NULL,
		      "a.nested: '%s'", out);
	{
		struct shown mine, its;

		nested_parts(out, &mine, &its);
		ck_assert_msg(memcmp(mine.trace, its.trace, 35) == 0, "a.nested: '%s'", out);
	}
	free(out);
	/* -t SECS: the deadline too */
	{
		char *o2 = NULL;

		ck_assert_int_eq(hubctl(&hub, &o2, "-t", "30", "call", "a.show", (char *)NULL), 0);
		s = shown(o2);
		ck_assert_msg(s.deadline != 0, "-t 30: '%s'", o2);
		free(o2);
	}
}
END_TEST

/* hubctl call refuses a bad --timeout or --trace, saying what it takes;
 * hubd refuses the same in a request. */
START_TEST(test_bad_options)
{
	json_object *o;
	char *err = NULL;

	start("", "a,b", "a.show");
	ck_assert_int_eq(hubctl_err(&hub, &err, "call", "--trace", "00-xyz", "a.show",
				    (char *)NULL), 2);
	ck_assert_msg(strstr(err, "--trace takes a W3C traceparent") != NULL, "'%s'", err);
	free(err);
	ck_assert_int_eq(hubctl_err(&hub, &err, "call", "--timeout", "0", "a.show",
				    (char *)NULL), 2);
	ck_assert_msg(strstr(err, "--timeout takes milliseconds") != NULL, "'%s'", err);
	free(err);
	o = hub_request(&hub, "{\"cmd\":\"call\",\"method\":\"a.show\",\"trace\":\"00-"
			"00000000000000000000000000000000-00f067aa0ba902b7-01\"}", NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_msg(strstr(json_object_to_json_string(o), "must be a W3C traceparent") != NULL,
		      "%s", json_object_to_json_string(o));
	json_object_put(o);
	o = hub_request(&hub, "{\"cmd\":\"call\",\"method\":\"a.show\",\"timeout_ms\":-5}", NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_msg(strstr(json_object_to_json_string(o), "timeout_ms") != NULL, "%s",
		      json_object_to_json_string(o));
	json_object_put(o);
}
END_TEST

/* A deadline already past: hubd answers timeout and routes nothing, so
 * the handler never runs; the caller gets -ETIMEDOUT with the text. */
START_TEST(test_late_through_hubd)
{
	char *out;

	start("", "a,b", "a.late,b.touch,b.touched");
	out = call("a.late", "b.touch");
	ck_assert_str_eq(out, "ETIMEDOUT: the deadline passed before the call started");
	free(out);
	out = call("b.touched");
	ck_assert_msg(strcmp(out, "0") == 0, "b.touch ran: touched %s", out);
	free(out);
}
END_TEST

/* Over a lane: the callee's libguest reads both (and refuses a late
 * call itself, its handler never started). */
START_TEST(test_lane)
{
	char *out;

	start("", "a,b", "a.nested,a.late,b.show,b.touch,b.touched");
	out = call("--trace", TP, "--timeout", "60000", "a.nested", "b.show");
	inherited(out, 1);
	free(out);
	lanes_open(1);
	/* the second goes over the lane */
	out = call("--trace", TP, "--timeout", "60000", "a.nested", "b.show");
	inherited(out, 1);
	free(out);
	out = call("a.nested", "b.touch");	/* through hubd: routed */
	ck_assert_msg(strstr(out, "|touched") != NULL, "a.nested b.touch: '%s'", out);
	free(out);
	out = call("a.late", "b.touch");
	ck_assert_str_eq(out, "ETIMEDOUT: the deadline passed before the call started");
	free(out);
	out = call("b.touched");
	ck_assert_msg(strcmp(out, "1") == 0, "b.touch ran %s times, want 1", out);
	free(out);
	/* both over the lane: the second show and the late touch */
	lane_calls_at_least("a", 2);
}
END_TEST

/* On microthreads: the handler's microthread and one it spawns inherit
 * the call's deadline and trace. */
START_TEST(test_microthreads)
{
	char *out;

	start(MG("m", " --mt"), "a,b,m", "m.nested,m.spawned,b.show");
	out = call("--trace", TP, "--timeout", "60000", "m.nested", "b.show");
	inherited(out, 1);
	free(out);
	out = call("--trace", TP, "--timeout", "60000", "m.spawned", "b.show");
	inherited(out, 1);
	free(out);
}
END_TEST

/* guest_call_with's opts: no deadline, a trace given as it is, or a new
 * one, whatever the handled call had. */
START_TEST(test_override)
{
	static const char other[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
	struct shown s;
	char *out;

	start("", "a,b", "a.own,b.show");
	out = call("--trace", TP, "--timeout", "60000", "a.own", "b.show", other);
	s = shown(out);
	ck_assert_msg(s.deadline == 0 && strcmp(s.trace, other) == 0, "a.own: '%s'", out);
	free(out);
	/* a trace that is not a traceparent: refused, nothing sent */
	out = call("a.own", "b.show", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
	ck_assert_str_eq(out, "error -22");
	free(out);
	out = call("--trace", TP, "--timeout", "60000", "a.own", "b.show", "new");
	s = shown(out);
	ck_assert_msg(s.deadline == 0 && strncmp(s.trace, TP, 35) != 0 &&
		      strncmp(s.trace, "00-", 3) == 0, "a.own new: '%s'", out);
	free(out);
}
END_TEST

/* hubctl calls shows a call's trace id and the time left: a raw client
 * calls prober.wait (answered once cancelled), with a trace and a
 * deadline, and goes away after. */
START_TEST(test_calls_show_trace)
{
	const char *line = "{\"cmd\":\"call\",\"method\":\"prober.wait\",\"timeout_ms\":600000,"
	    "\"trace\":\"" TP "\"}\n";
	char *out = NULL;
	int fd, found = 0;

	start("[guest prober]\nexec = @/tests/guests/prober\n", "a,b,prober", "prober.wait");
	fd = hub_client(&hub, 10);
	ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	for (int i = 0; i < 100 && !found; i++) {
		free(out);
		out = NULL;
		hubctl_ok(&hub, &out, "calls", (char *)NULL);
		found = strstr(out, "4bf92f3577b34da6a3ce929d0e0e4736") != NULL;
		if (!found)
			sleep_ms(50);
	}
	close(fd);
	ck_assert_msg(found, "hubctl calls: '%s'", out);
	ck_assert_msg(strstr(out, "TRACE") != NULL && strstr(out, "LEFT") != NULL,
		      "hubctl calls: '%s'", out);
	free(out);
}
END_TEST

/* The example fanout logs the trace and time left of each call, and its
 * legs (microthreads it spawns) inherit them. */
START_TEST(test_fanout_example)
{
	char *out, *logs = NULL;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\n"
		     "[guest fanout]\nexec = @/guests/fanout\n", "echo,fanout");
	ck_assert(hub_wait_method(&hub, "fanout.both,echo.echo,echo.reverse") == 0);
	out = call("--trace", TP, "--timeout", "60000", "fanout.both", "abc");
	ck_assert_str_eq(out, "abc | cba");
	free(out);
	for (int i = 0; i < 100; i++) {
		free(logs);
		logs = NULL;
		hubctl_ok(&hub, &logs, "logs", "fanout", (char *)NULL);
		if (strstr(logs, "fanout.both: trace 4bf92f3577b34da6a3ce929d0e0e4736, ") != NULL)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(strstr(logs, "fanout.both: trace 4bf92f3577b34da6a3ce929d0e0e4736, ") != NULL &&
		      strstr(logs, " s left") != NULL, "hubctl logs fanout: '%s'", logs);
	free(logs);
}
END_TEST

Suite *suite_meta(void);
Suite *
suite_meta(void)
{
	Suite *s = suite_create("meta");
	TCase *tc = tcase_create("core");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_add_checked_fixture(tc, NULL, stop_hub);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_through_hubd);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_late_through_hubd);
	tcase_add_test(tc, test_lane);
	tcase_add_test(tc, test_microthreads);
	tcase_add_test(tc, test_override);
	tcase_add_test(tc, test_calls_show_trace);
	tcase_add_test(tc, test_fanout_example);
	suite_add_tcase(s, tc);
	return s;
}
