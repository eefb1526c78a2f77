/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Debugging a guest under hubd: deaths named by signal with the calls the
 * guest was serving, the calls in flight (hubctl calls), its output
 * tagged and kept (hubctl logs), heartbeat = off per guest, and its
 * stack taken before a hung guest is killed. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/postcard.h"
#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define PROBER	"[guest prober]\nexec = @/tests/guests/prober\n"
#define GUEST_ECHO	"[guest echo]\nexec = @/guests/echo\n"

/* The calls answer (a new reference), asserting there is one. */
static json_object *
calls(void)
{
	json_object *a = hub_request(&hub, "{\"cmd\":\"calls\"}", NULL);

	ck_assert_msg(a != NULL && json_get(a, "calls") != NULL, "no calls: %s",
		      hub_log_tail(&hub));
	return a;
}

/* Waits until n calls of method are in flight (10 s); 0 or -1. */
static int
wait_calls(const char *method, int n)
{
	double end = now_s() + 10;

	while (now_s() < end) {
		json_object *a = calls(), *cs = json_get(a, "calls");
		int k = 0;

		for (size_t i = 0; i < json_object_array_length(cs); i++)
			k += strcmp(json_object_get_string(json_get(
				json_object_array_get_idx(cs, i), "method")), method) == 0;
		json_object_put(a);
		if (k == n)
			return 0;
		sleep_ms(5);
	}
	return -1;
}

/* A control client that calls method (args: a JSON array, or NULL) and
 * leaves the answer unread. */
static int
call_unread(const char *method, const char *args)
{
	char line[256];
	int fd = hub_client(&hub, 10);
	int n = snprintf(line, sizeof(line), "{\"cmd\":\"call\",\"method\":\"%s\"%s%s}\n",
			 method, args != NULL ? ",\"args\":" : "", args != NULL ? args : "");

	ck_assert_int_eq(write(fd, line, (size_t)n), n);
	return fd;
}

/* The latest death of name (a new reference to its guest's entry in *p). */
static json_object *
last_death(const char *name, json_object **p)
{
	json_object *deaths;

	*p = hub_peer(&hub, name);
	ck_assert_ptr_nonnull(*p);
	deaths = json_get(*p, "deaths");
	ck_assert_msg(deaths != NULL && json_object_array_length(deaths) > 0, "no death");
	return json_object_array_get_idx(deaths, 0);
}

/* A guest killed by SIGABRT while serving two calls: the log, peers and
 * its JSON say the signal by name and the calls by method. (Not SIGSEGV:
 * under ASan its own handler takes that one and exits.) */
START_TEST(test_death_says_signal_and_calls)
{
	json_object *p, *d, *f, *m;
	char *log, *out = NULL;
	int fd[2], pid;

	hub_start_up(&hub, NULL, PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.wait") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	fd[0] = call_unread("prober.wait", NULL);
	fd[1] = call_unread("prober.wait", NULL);
	ck_assert_msg(wait_calls("prober.wait", 2) == 0, "the calls never showed");
	ck_assert_int_eq(kill(pid, SIGABRT), 0);
	ck_assert_msg(hub_wait_new_pid(&hub, "prober", pid, 10) > 0, "%s", hub_log_tail(&hub));
	d = last_death("prober", &p);
	ck_assert_str_eq(json_object_get_string(json_get(d, "reason")), "crashed");
	ck_assert_int_eq(json_object_get_int(json_get(d, "status")), SIGABRT);
	ck_assert_str_eq(json_object_get_string(json_get(d, "signal")), "SIGABRT");
	f = json_get(d, "in_flight");
	ck_assert_int_eq(json_object_get_int(json_get(f, "calls")), 2);
	m = json_object_array_get_idx(json_get(f, "methods"), 0);
	ck_assert_str_eq(json_object_get_string(json_get(m, "method")), "prober.wait");
	ck_assert_int_eq(json_object_get_int(json_get(m, "calls")), 2);
	json_object_put(p);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "guest prober: killed by signal 6 (SIGABRT), while serving "
			     "prober.wait (2 calls)") != NULL, "%s", hub_log_tail(&hub));
	free(log);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	ck_assert_msg(strstr(out, "crashed SIGABRT while serving prober.wait (2 calls)") != NULL,
		      "%s", out);
	free(out);
	/* the calls failed with the death: none is left */
	ck_assert_int_eq(wait_calls("prober.wait", 0), 0);
	close(fd[0]);
	close(fd[1]);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The entry of the calls answer for method (a new reference in *a). */
static json_object *
call_of(json_object **a, const char *method)
{
	json_object *cs;

	*a = calls();
	cs = json_get(*a, "calls");
	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		json_object *c = json_object_array_get_idx(cs, i);

		if (strcmp(json_object_get_string(json_get(c, "method")), method) == 0)
			return c;
	}
	ck_abort_msg("no call of %s: %s", method, json_object_to_json_string(*a));
	return NULL;
}

/* A call whose handler never answers is listed with its caller, method
 * and age; gone once its caller gives up (a guest's call with a timeout:
 * its Cancel ends it). The table is as wide as the longest name (a
 * 32-byte caller pushed the columns after it out of line). */
#define LONG_CALLER	"caller_with_a_name_of_32_bytes__"
START_TEST(test_calls_lists_unanswered)
{
	json_object *a, *c;
	char *out = NULL, *head, *row;
	int fd;

	hub_start_up(&hub, NULL, PROBER "[guest " LONG_CALLER "]\nexec = @/tests/guests/prober\n"
		     "args = --prefix caller\nprovides = caller.*\n", "prober," LONG_CALLER);
	ck_assert(hub_wait_method(&hub, "prober.wait,caller.route_timeout") == 0);
	fd = call_unread("caller.route_timeout", "[\"prober.wait\",\"5000\"]");
	ck_assert_msg(wait_calls("prober.wait", 1) == 0, "the call never showed");
	c = call_of(&a, "prober.wait");
	ck_assert_str_eq(json_object_get_string(json_get(c, "callee")), "prober");
	ck_assert_str_eq(json_object_get_string(json_get(c, "caller")), LONG_CALLER);
	ck_assert_str_eq(json_object_get_string(json_get(c, "caller_kind")), "guest");
	ck_assert_msg(json_object_get_double(json_get(c, "age_s")) >= 0, "%s",
		      json_object_to_json_string(c));
	ck_assert_msg(json_object_get_int64(json_get(c, "id")) > 0, "%s",
		      json_object_to_json_string(c));
	json_object_put(a);
	hubctl_ok(&hub, &out, "calls", (char *)NULL);
	ck_assert_msg(strstr(out, "prober.wait") != NULL && strstr(out, "client:") != NULL,
		      "%s", out);
	head = strstr(out, "METHOD");
	row = strstr(out, "\n" LONG_CALLER " ");
	ck_assert_msg(head != NULL && row != NULL &&
		      strncmp(row + 1 + (head - out), "prober.wait ", 12) == 0, "%s", out);
	free(out);
	/* the caller gives up: Cancel, and prober.wait answers Cancelled;
	 * then caller.route_timeout answers the client */
	ck_assert_msg(wait_calls("prober.wait", 0) == 0, "the call stayed: %s",
		      hub_log_tail(&hub));
	ck_assert_msg(wait_calls("caller.route_timeout", 0) == 0, "the call stayed: %s",
		      hub_log_tail(&hub));
	hubctl_ok(&hub, &out, "calls", (char *)NULL);
	ck_assert_msg(strstr(out, "(no call in flight through hubd)") != NULL, "%s", out);
	free(out);
	close(fd);
	/* a client that goes (killed, Ctrl-C) gives its call up at once: the
	 * callee gets a Cancel, nothing waits for an answer nobody reads;
	 * one that only shuts down its sending side still gets its answer */
	fd = call_unread("prober.wait", NULL);
	ck_assert_msg(wait_calls("prober.wait", 1) == 0, "the call never showed");
	close(fd);
	ck_assert_msg(wait_calls("prober.wait", 0) == 0, "the call stayed after its client went: %s",
		      hub_log_tail(&hub));
	fd = call_unread("prober.wait", NULL);
	ck_assert_msg(wait_calls("prober.wait", 1) == 0, "the call never showed");
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	sleep_ms(300);
	ck_assert_msg(wait_calls("prober.wait", 1) == 0, "a half-closed client's call was dropped");
	close(fd);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubctl call METHOD [ARG [ARG2]]: its output's first line (malloc'd),
 * asserting it succeeded. */
static char *
call_line(const char *method, const char *arg, const char *arg2)
{
	char *out = NULL, *nl;

	ck_assert_msg(hubctl(&hub, &out, "-t", "30", "call", method, arg, arg2,
			     (char *)NULL) == 0,
		      "hubctl call %s: %s; %s", method, out, hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	return out;
}

static void
expect_line(const char *want, const char *method, const char *arg)
{
	char *out = call_line(method, arg, NULL);

	ck_assert_msg(strcmp(out, want) == 0, "%s %s: '%s', want '%s'", method,
		      arg != NULL ? arg : "", out, want);
	free(out);
}

/* guest_call_caller in a callback guest, answered by hubd's hub.caller:
 * a control client is client:UID, another guest its name; after the
 * answer the call is forgotten (NULL). A guest learns only about calls
 * in flight to itself: asking about a call in flight to another guest,
 * or an id nobody uses, is an error that names nobody. */
START_TEST(test_handler_learns_its_caller)
{
	json_object *a, *c;
	char client[32], id[32], *out = NULL;
	int fd;

	snprintf(client, sizeof(client), "client:%u", (unsigned)getuid());
	hub_start_up(&hub, NULL, PROBER "[guest caller]\nexec = @/tests/guests/prober\n"
		     "args = --prefix caller\n", "prober,caller");
	ck_assert(hub_wait_method(&hub, "prober.caller,prober.wait,caller.route,"
				  "caller.askcaller") == 0);
	expect_line(client, "prober.caller", "x");
	expect_line("NULL", "prober.caller_after", NULL);
	out = call_line("caller.route", "prober.caller", "x");
	ck_assert_msg(strcmp(out, "caller") == 0, "through hubd: '%s'", out);
	free(out);
	/* hub.caller itself: for guests only */
	ck_assert_int_eq(hubctl_err(&hub, &out, "call", "hub.caller", "1", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "only guests ask who called them") != NULL, "%s", out);
	free(out);
	/* a call in flight to prober: prober may ask about it, caller may
	 * not (caller's own calls have smaller ids: it was called once) */
	fd = call_unread("prober.wait", NULL);
	ck_assert_msg(wait_calls("prober.wait", 1) == 0, "the call never showed");
	c = call_of(&a, "prober.wait");
	snprintf(id, sizeof(id), "%lld", (long long)json_object_get_int64(json_get(c, "id")));
	json_object_put(a);
	ck_assert_msg(atoi(id) > 2, "prober.wait's id %s", id);
	expect_line(client, "prober.askcaller", id);
	out = call_line("caller.askcaller", id, NULL);
	ck_assert_msg(strstr(out, "error: ") == out && strstr(out, "no call ") != NULL &&
		      strstr(out, " in flight to you") != NULL && strstr(out, "client") == NULL,
		      "asking about another guest's call: '%s'", out);
	free(out);
	out = call_line("prober.askcaller", "99999", NULL);
	ck_assert_msg(strstr(out, "no call 99999 in flight to you") != NULL, "'%s'", out);
	free(out);
	close(fd);
	ck_assert_msg(wait_calls("prober.wait", 0) == 0, "the call stayed: %s",
		      hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The lines of hubctl logs NAME -j (a new reference), asserting there
 * are some. */
static json_object *
logs(const char *name, json_object **a)
{
	char line[128];

	snprintf(line, sizeof(line), "{\"cmd\":\"logs\",\"name\":\"%s\"}", name);
	*a = hub_request(&hub, line, NULL);
	ck_assert_msg(*a != NULL && json_get(*a, "lines") != NULL, "no logs: %s",
		      hub_log_tail(&hub));
	return json_get(*a, "lines");
}

/* Waits until the last kept line of name holds s (10 s); 0 or -1. */
static int
wait_last_line(const char *name, const char *s)
{
	double end = now_s() + 10;

	while (now_s() < end) {
		json_object *a, *ls = logs(name, &a);
		size_t n = json_object_array_length(ls);
		int found = n > 0 && strstr(json_object_get_string(
			json_object_array_get_idx(ls, n - 1)), s) != NULL;

		json_object_put(a);
		if (found)
			return 0;
		sleep_ms(5);
	}
	return -1;
}

/* A guest's stderr and stdout: tagged with its name in hubd's log, the
 * last lines kept for hubctl logs, bounded in count and bytes, control
 * characters and bytes that are not UTF-8 replaced (a JSON answer
 * carries them), long lines cut between characters; kept across a
 * restart. */
START_TEST(test_output_tagged_and_kept)
{
	json_object *a, *ls;
	char *log, *out = NULL, hello[64];
	size_t bytes = 0;
	int pid, yline = 0, eline = 0;

	hub_start_up(&hub, NULL, "[guest chatty]\nexec = @/tests/guests/lifeguest\n"
		     "args = --mode=chatty\n", "chatty");
	pid = hub_peer_int(&hub, "chatty", "pid");
	ck_assert_msg(wait_last_line("chatty", "lifeguest serving") == 0, "%s",
		      hub_log_tail(&hub));
	ls = logs("chatty", &a);
	ck_assert_msg(json_object_array_length(ls) <= 200, "%zu lines kept",
		      json_object_array_length(ls));
	for (size_t i = 0; i < json_object_array_length(ls); i++) {
		const char *l = json_object_get_string(json_object_array_get_idx(ls, i));

		bytes += strlen(l) + 1;
		ck_assert_msg(strlen(l) <= 1024, "a line of %zu bytes", strlen(l));
		ck_assert_msg(strchr(l, '\033') == NULL && strchr(l, '\r') == NULL, "%s", l);
		/* valid UTF-8 (the answer is JSON), no C1 control */
		ck_assert_msg(hp_utf8_valid((const uint8_t *)l, strlen(l)) &&
			      strstr(l, "\302\233") == NULL, "line %zu: %s", i, l);
		if (strncmp(l, "yyyyyyyyyy?yyyyyyyyy?yyyyyyyyy?yyyyyyyyy??yyy", 45) == 0)
			yline = (int)strlen(l);
		/* the character across the cut, whole at the next piece's start */
		eline |= strncmp(l, "\303\251yyy", 5) == 0;
	}
	ck_assert_msg(bytes <= 65536, "%zu bytes kept", bytes);
	ck_assert_msg(yline == 1023, "the long line was not kept, cut before its character "
		      "across byte 1024 (%d bytes)", yline);
	ck_assert_msg(eline, "the character across the cut was not kept whole");
	json_object_put(a);
	snprintf(hello, sizeof(hello), "lifeguest says hello (pid %d)", pid);
	log = hub_log(&hub);
	{
		char tagged[96];

		snprintf(tagged, sizeof(tagged), "hubd: chatty: %s\n", hello);
		ck_assert_msg(strstr(log, tagged) != NULL, "%s", hub_log_tail(&hub));
		ck_assert_msg(strstr(log, "hubd: chatty: 0000 xxx") != NULL, "%s",
			      hub_log_tail(&hub));
	}
	free(log);
	/* hubd still serves while and after it floods; what its log did
	 * not take (over GUESTLOG_BURST at once) is kept all the same */
	hubctl_ok(&hub, &out, "logs", "chatty", (char *)NULL);
	ck_assert_msg(strstr(out, "lifeguest flood done\n") != NULL &&
		      strstr(out, "2999 xxx") != NULL, "%s", out);
	free(out);
	/* a restart: the lines of before stay, the new instance's follow */
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_msg(hub_wait_new_pid(&hub, "chatty", pid, 10) > 0, "%s", hub_log_tail(&hub));
	ck_assert_msg(wait_last_line("chatty", "lifeguest serving") == 0, "%s",
		      hub_log_tail(&hub));
	/* 3000 lines at once: hubd's log took the first 1000 or so and said
	 * how many it did not (at the latest when the instance ended); a few
	 * more may pass as the budget refills (50 a second: a flood slowed by
	 * load), never all of them */
	log = hub_log(&hub);
	{
		int logged = 0;

		for (const char *at = log; (at = strstr(at, "hubd: chatty: ")) != NULL; at++)
			logged += strncmp(at + 18, " xxx", 4) == 0;
		ck_assert_msg(logged >= 900 && logged < 3000 &&
			      strstr(log, " lines of its output not logged (more than 1000 at "
				     "once, then 50 a second): hubctl logs chatty has the last "
				     "ones\n") != NULL, "%d lines logged; %s", logged,
			      hub_log_tail(&hub));
	}
	free(log);
	ck_assert_int_eq(hubctl_err(&hub, &out, "logs", "nosuch", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "no such guest") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest whose output comes faster than GUESTLOG_READ_RATE after
 * GUESTLOG_READ_BURST waits in its writes: 8 MiB take it 4 s at the
 * least from its start (2.5 s from when the test sees it up: a bound
 * load cannot break, only lengthen), while hubd serves
 * others and the guest itself as ever. */
START_TEST(test_output_flood_waits)
{
	double t0, took;
	char *out = NULL;

	hub_start_up(&hub, NULL, GUEST_ECHO "[guest hose]\nexec = @/tests/guests/lifeguest\n"
		     "args = --mode=firehose\n", "echo,hose");
	t0 = now_s();
	/* up is not registered: echo's methods come a moment after */
	ck_assert_msg(hub_wait_method(&hub, "echo.echo") == 0, "%s", hub_log_tail(&hub));
	hubctl_ok(&hub, &out, "call", "echo.echo", "meanwhile", (char *)NULL);
	ck_assert_str_eq(out, "meanwhile\n");
	free(out);
	for (double end = t0 + 120; now_s() < end && wait_last_line("hose",
	     "lifeguest firehose done") != 0; )
		;
	took = now_s() - t0;
	ck_assert_msg(wait_last_line("hose", "lifeguest firehose done") == 0, "%s",
		      hub_log_tail(&hub));
	ck_assert_msg(took >= 2.5, "8 MiB of output read in %.2f s", took);
	ck_assert_str_eq(hub_peer_state(&hub, "hose"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* heartbeat = off: a guest stopped (as in a debugger) is not taken for
 * hung, while one on the hub's heartbeat is; a bad value is refused. */
START_TEST(test_heartbeat_off_per_guest)
{
	int quiet, beating;
	char *out = NULL;

	hub_start_up(&hub, "heartbeat_interval = 100ms\n",
		     "[guest quiet]\nexec = @/guests/echo\nheartbeat = off\nprovides = echo.*\n"
		     "[guest beating]\nexec = @/tests/guests/lifeguest\nargs = --mode=idle\n",
		     "quiet,beating");
	ck_assert_int_eq(hub_peer_int(&hub, "quiet", "heartbeat_interval_ns"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "beating", "heartbeat_interval_ns"), 100000000);
	quiet = hub_peer_int(&hub, "quiet", "pid");
	beating = hub_peer_int(&hub, "beating", "pid");
	ck_assert_int_eq(kill(quiet, SIGSTOP), 0);
	ck_assert_int_eq(kill(beating, SIGSTOP), 0);
	ck_assert_msg(hub_wait_new_pid(&hub, "beating", beating, 10) > 0, "%s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "quiet", "pid"), quiet);
	ck_assert_str_eq(hub_peer_state(&hub, "quiet"), "up");
	ck_assert_int_eq(kill(quiet, SIGCONT), 0);
	/* it serves on, once let go */
	hubctl_ok(&hub, &out, "call", "echo.echo", "still here", (char *)NULL);
	ck_assert_msg(strstr(out, "still here") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
	ck_assert(hub_start(&hub, NULL, "[guest bad]\nexec = @/guests/echo\nheartbeat = soon\n")
		  != 0);
	out = hub_log(&hub);
	ck_assert_msg(strstr(out, "heartbeat: 'soon' is not a duration") != NULL, "%s",
		      hub_log_tail(&hub));
	free(out);
}
END_TEST

/* A guest hung in a handler: its stack is taken before it is killed, by
 * eu-stack or gdb when installed (the lines in hubd's log and hubctl
 * logs), else by SIGABRT; then it is killed and restarted. The tool runs
 * as the guest's user, also when the guest made itself not dumpable
 * (_i 1), whose /proc files are then root's: the tool fails, and the log
 * says why. */
START_TEST(test_hung_guest_stack_taken)
{
	json_object *p, *d;
	char *log, *out = NULL, as[64];
	int pid, fd;

	hub_start_up(&hub, "heartbeat_interval = 100ms\n", _i == 0 ? PROBER :
		     PROBER "args = --undumpable\n", "prober");
	ck_assert(hub_wait_method(&hub, "prober.busy") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	fd = call_unread("prober.busy", "[\"60000\"]");
	ck_assert_msg(hub_wait_new_pid(&hub, "prober", pid, 20) > 0, "%s", hub_log_tail(&hub));
	d = last_death("prober", &p);
	ck_assert_str_eq(json_object_get_string(json_get(d, "reason")), "hung");
	snprintf(as, sizeof(as), " as uid %d (",
		 json_object_get_int(json_get(json_get(p, "user"), "uid")));
	json_object_put(p);
	log = hub_log(&hub);
	if (strstr(log, "guest prober: taking its stack with ") != NULL) {
		/* a tool's lines, tagged, taken as the guest's user (not
		 * hubd's root) and showing the handler it hung in; then the
		 * kill */
		ck_assert_msg(strstr(log, as) != NULL, "not%s: %s", as, hub_log_tail(&hub));
		if (_i == 0)
			ck_assert_msg(strstr(log, "hubd: prober: [stack] ") != NULL &&
				      strstr(strstr(log, "hubd: prober: [stack] "), "busy") != NULL,
				      "%s", hub_log_tail(&hub));
		else	/* not dumpable: the tool's failure, and why */
			ck_assert_msg(strstr(log, "could not trace it: the guest made itself not dumpable") != NULL,
				      "%s", strstr(log, "taking its stack"));
		ck_assert_msg(strstr(log, "guest prober: stack taken, killing it") != NULL ||
			      strstr(log, "guest prober: stack taken") != NULL, "%s",
			      hub_log_tail(&hub));
		hubctl_ok(&hub, &out, "logs", "prober", (char *)NULL);
		ck_assert_msg(strstr(out, "[stack] ") != NULL, "%s", out);
		free(out);
	} else {
		ck_assert_msg(strstr(log, "no eu-stack nor gdb installed: SIGABRT") != NULL,
			      "%s", hub_log_tail(&hub));
	}
	ck_assert_msg(strstr(log, "while serving prober.busy (1 call)") != NULL, "%s",
		      hub_log_tail(&hub));
	free(log);
	close(fd);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hang_stack = off: killed at once; a bad value is refused. */
START_TEST(test_hang_stack_off)
{
	char *log;
	int pid, fd;

	hub_start_up(&hub, "heartbeat_interval = 100ms\nhang_stack = off\n", PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.busy") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	fd = call_unread("prober.busy", "[\"60000\"]");
	ck_assert_msg(hub_wait_new_pid(&hub, "prober", pid, 20) > 0, "%s", hub_log_tail(&hub));
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "taking its stack") == NULL &&
		      strstr(log, "SIGABRT") == NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(strstr(log, "guest prober: hung: heartbeat stale") != NULL, "%s",
		      hub_log_tail(&hub));
	free(log);
	close(fd);
	ck_assert_int_eq(hub_stop(&hub), 0);
	ck_assert(hub_start(&hub, "hang_stack = maybe\n", PROBER) != 0);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "hang_stack: 'maybe' is not auto or off") != NULL, "%s",
		      hub_log_tail(&hub));
	free(log);
}
END_TEST

Suite *suite_debug(void);
Suite *
suite_debug(void)
{
	Suite *s = suite_create("debug");
	TCase *tc = tcase_create("debug");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_death_says_signal_and_calls);
	tcase_add_test(tc, test_calls_lists_unanswered);
	tcase_add_test(tc, test_handler_learns_its_caller);
	tcase_add_test(tc, test_output_tagged_and_kept);
	tcase_add_test(tc, test_output_flood_waits);
	tcase_add_test(tc, test_heartbeat_off_per_guest);
	tcase_add_loop_test(tc, test_hung_guest_stack_taken, 0, 2);
	tcase_add_test(tc, test_hang_stack_off);
	suite_add_tcase(s, tc);
	return s;
}
