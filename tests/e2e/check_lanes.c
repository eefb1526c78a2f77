/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct lanes between guests (daemon/lanes.c, guestlib/lane.c,
 * proto/lane.h): hubd offers a lane after the first call of a method
 * through it, later calls go straight from guest to guest; a side that
 * goes takes its lanes with it, and the calls in flight over them fail as
 * they would through hubd; a peer that breaks a lane's rules loses the
 * lane and nothing else; the config can refuse lanes. Most guests here
 * are the lanebreaker test guest (tests/guests/lanebreaker.c). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define LB(name, extra) \
	"[guest " name "]\nexec = @/tests/guests/lanebreaker\nargs = --prefix " name "\n" extra

/* hubctl call METHOD ARGS... (up to three): its first line (malloc'd),
 * asserting it succeeded. */
static char *
call(const char *method, const char *a1, const char *a2, const char *a3)
{
	char *out = NULL, *nl;
	int rc = hubctl(&hub, &out, "-t", "30", "call", method, a1, a2, a3, (char *)NULL);

	ck_assert_msg(rc == 0, "hubctl call %s %s %s: status %d, output '%s'; %s", method,
		      a1 ? a1 : "", a2 ? a2 : "", rc, out, hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	return out;
}

static void
expect(const char *want, const char *method, const char *a1, const char *a2, const char *a3)
{
	char *out = call(method, a1, a2, a3);

	ck_assert_msg(strcmp(out, want) == 0, "%s %s %s: '%s', want '%s'", method,
		      a1 ? a1 : "", a2 ? a2 : "", out, want);
	free(out);
}

/* hubctl -j lanes (a new reference). */
static json_object *
lanes(void)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"lanes\"}", NULL);

	ck_assert_msg(o != NULL, "no answer to lanes; %s", hub_log_tail(&hub));
	return o;
}

static size_t
count(const char *key)
{
	json_object *o = lanes();
	size_t n = json_object_array_length(json_get(o, key));

	json_object_put(o);
	return n;
}

/* Waits (30 s) until hubd lists n open lanes; asserts it. */
static void
expect_open(size_t n)
{
	for (double end = now_s() + 30; count("lanes") != n && now_s() < end;)
		sleep_ms(50);
	ck_assert_msg(count("lanes") == n, "%zu lanes open, want %zu; %s", count("lanes"), n,
		      hub_log_tail(&hub));
}

/* The open lane's id, side figure or guest name (the first lane). */
static unsigned long long
lane_u64(const char *side, const char *key)
{
	json_object *o = lanes(), *l = json_object_array_get_idx(json_get(o, "lanes"), 0);
	unsigned long long v;

	ck_assert_msg(l != NULL, "no lane open");
	v = side != NULL ? json_u64(l, side, key, NULL) : json_u64(l, key, NULL, NULL);
	json_object_put(o);
	return v;
}

/* Waits (30 s) until guest callee has taken a call over the open lane
 * (its side's calls_in, published before it sleeps in the handler):
 * the call is in flight there, whatever the load; asserts it. */
static void
wait_lane_call_at(const char *callee)
{
	unsigned long long in = 0;

	for (double end = now_s() + 30; in == 0 && now_s() < end;) {
		json_object *o = lanes(), *l = json_object_array_get_idx(json_get(o, "lanes"), 0);

		for (int s = 0; l != NULL && s < 2; s++) {
			json_object *side = json_get(l, s == 0 ? "a" : "b");

			if (strcmp(json_object_get_string(json_get(side, "guest")), callee) == 0)
				in = json_u64(side, "calls_in", NULL, NULL);
		}
		json_object_put(o);
		if (in == 0)
			sleep_ms(20);
	}
	ck_assert_msg(in > 0, "no call over the lane reached %s; %s", callee,
		      hub_log_tail(&hub));
}

/* Waits (30 s) until guest name's key in hubctl peers is want. */
static void
expect_peer(const char *name, const char *key, int want)
{
	int v = -1;

	for (double end = now_s() + 30; (v = hub_peer_int(&hub, name, key)) != want &&
					now_s() < end;)
		sleep_ms(50);
	ck_assert_msg(v == want, "%s's %s is %d, want %d; %s", name, key, v, want,
		      hub_log_tail(&hub));
}

/* A guest's stats counter, waited for (30 s) to reach at least min: the
 * guests publish their lanes' figures now and then, and before they
 * sleep. */
static unsigned long long
stat_at_least(const char *guest, const char *key, unsigned long long min)
{
	unsigned long long v = 0;

	for (double end = now_s() + 30; now_s() < end;) {
		json_object *s = hub_stats(&hub);

		v = json_u64(s, "guests", guest, key);
		json_object_put(s);
		if (v >= min)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(v >= min, "%s's %s is %llu, want >= %llu", guest, key, v, min);
	return v;
}

/* The first call goes through hubd, which offers a lane; the second goes
 * over it: both guests see the lane, hubd lists it with its figures, and
 * the stats count the lane's calls as every other. */
START_TEST(test_lane_set_up)
{
	char *out = NULL, *log;

	hub_start_up(&hub, NULL, LB("a", "") LB("b", ""), "a,b");
	ck_assert(hub_wait_method(&hub, "a.call,b.echo,b.lanes") == 0);
	expect_open(0);
	expect("ok hi", "a.call", "b.echo", "hi", NULL);
	expect_open(1);
	expect("1", "a.lanes", NULL, NULL, NULL);
	expect("1", "b.lanes", NULL, NULL, NULL);
	/* the second call of the two went over the lane */
	stat_at_least("a", "lane_calls_in", 1);
	stat_at_least("b", "lane_calls_out", 1);
	stat_at_least("b", "calls_out", 2);	/* both, whichever way */
	ck_assert_uint_ge(lane_u64("a", "calls_out"), 1);
	ck_assert_uint_eq(lane_u64("b", "calls_out"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "a", "lanes"), 1);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "lane 1: a and b call each other directly") != NULL,
		      "no lane in the log: %s", hub_log_tail(&hub));
	free(log);
	hubctl_ok(&hub, &out, "lanes", (char *)NULL);
	ck_assert_msg(strstr(out, "CALLS-A>B") != NULL && strstr(out, " a ") != NULL &&
		      strstr(out, " b ") != NULL, "hubctl lanes: %s", out);
	free(out);
	/* calls the other way take the same lane: no second one */
	expect("ok back", "b.call", "a.echo", "back", NULL);
	expect_open(1);
	stat_at_least("b", "lane_calls_in", 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* 1 MiB and 16 MiB arguments and answers over a lane: prober.big sends N
 * bytes to echo.echo and checks what comes back. */
START_TEST(test_big_payloads_over_a_lane)
{
	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\n"
		     "[guest prober]\nexec = @/tests/guests/prober\n", "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big") == 0);
	expect("100", "prober.big", "100", NULL, NULL);	/* through hubd: a lane follows */
	expect_open(1);
	expect("1048576", "prober.big", "1048576", NULL, NULL);
	expect("16777216", "prober.big", "16777216", NULL, NULL);
	stat_at_least("prober", "lane_calls_in", 2);
	ck_assert_uint_ge(lane_u64("a", "bytes_out"), 16777216 + 1048576);
	ck_assert_uint_ge(lane_u64("b", "bytes_out"), 16777216 + 1048576);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A lane takes the payloads hubd takes and no larger: its slots round the
 * largest class up to 64 bytes past the slot's generation, and a payload
 * of those 60 bytes more went over the lane where hubd refused it (a
 * call's fate hung on whether a lane was open yet). The largest class
 * here is 64 KiB: prober.big 65536 sends its 65536 bytes with the
 * string's length and the call's metadata, more than any slot holds. */
START_TEST(test_lane_takes_no_larger_payload_than_the_hub)
{
	char *out = NULL;
	int rc;

	hub_start_up(&hub, "[pool]\nclasses = 1K x 256, 64K x 4\n",
		     "[guest echo]\nexec = @/guests/echo\n"
		     "[guest prober]\nexec = @/tests/guests/prober\n", "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big") == 0);
	/* through hubd, before any lane: refused */
	rc = hubctl(&hub, &out, "-t", "30", "call", "prober.big", "65536", (char *)NULL);
	ck_assert_msg(rc != 0, "through hubd: %s", out);
	free(out);
	expect_open(0);
	expect("100", "prober.big", "100", NULL, NULL);	/* through hubd: a lane follows */
	expect_open(1);
	expect("65000", "prober.big", "65000", NULL, NULL);
	stat_at_least("prober", "lane_calls_in", 1);
	/* over the lane: refused as well, as too long */
	rc = hubctl(&hub, &out, "-t", "30", "call", "prober.big", "65536", (char *)NULL);
	ck_assert_msg(rc != 0, "over the lane: %s", out);
	free(out);
	ck_assert_msg(strstr(hubctl_stderr(), "Message too long") != NULL, "%s",
		      hubctl_stderr());
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The policy: lanes = no on either side, a list that does not name the
 * caller, or lanes_per_guest reached: calls go through hubd, and work. */
START_TEST(test_lanes_refused_by_config)
{
	static const char *const keys[] = { NULL, NULL, "lanes_per_guest = 1\n" };
	static const char *const bs[] = { LB("b", "lanes = no\n"), LB("b", "lanes = c, d\n"),
					  LB("b", "") };
	char guests[1024];

	snprintf(guests, sizeof(guests), "%s%s%s", LB("a", "lanes = yes\n"), bs[_i],
		 LB("c", "lanes = a\n"));
	hub_start_up(&hub, keys[_i], guests, "a,b,c");
	ck_assert(hub_wait_method(&hub, "a.call,b.echo,c.echo") == 0);
	expect("ok one", "a.call", "b.echo", "one", NULL);
	expect("ok two", "a.call", "c.echo", "two", NULL);
	expect("ok one", "a.call", "b.echo", "one", NULL);
	/* 0, 1: a-c only (c allows a); 2: a's one lane, with b */
	expect_open(1);
	expect("1", "a.lanes", NULL, NULL, NULL);
	expect(_i == 2 ? "1" : "0", "b.lanes", NULL, NULL, NULL);
	expect(_i == 2 ? "0" : "1", "c.lanes", NULL, NULL, NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Runs hubctl call METHOD A1 A2 in a child; its pid, and the read end of
 * a pipe its output comes on. */
static pid_t
call_in_child(const char *method, const char *a1, const char *a2, int *rfd)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		char *out = NULL;
		int rc;

		close(p[0]);
		rc = hubctl(&hub, &out, "-t", "30", "call", method, a1, a2, (char *)NULL);
		if (out != NULL)
			(void)!write(p[1], out, strlen(out));
		_exit(rc == 0 ? 0 : 1);
	}
	ck_assert_int_gt(pid, 0);
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* The child's output, once it is done. */
static char *
child_output(pid_t pid, int rfd)
{
	char *buf = calloc(1, 512), *nl;
	ssize_t n = read(rfd, buf, 511);

	close(rfd);
	waitpid(pid, NULL, 0);
	ck_assert_int_ge(n, 0);
	if ((nl = strchr(buf, '\n')) != NULL)
		*nl = '\0';
	return buf;
}

static void
kill_guest(const char *name)
{
	int pid = hub_peer_int(&hub, name, "pid");

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
}

/* The callee dies while a call over the lane is in flight: the caller's
 * call fails with Cancelled (-ECANCELED), as it does through hubd (_i 1:
 * lanes = no, the same test), and its text says why: over the lane
 * hubd's word on how the peer went, which the caller waits for after
 * the peer's hang-up (it said "it hung up the lane" when that came
 * first, most often), with the method named by the caller, as hubd
 * names it (it was left out). */
START_TEST(test_callee_dies_mid_call)
{
	char guests[512], *out;
	int rfd, calls;
	pid_t pid;

	snprintf(guests, sizeof(guests), "%s%s", LB("a", ""),
		 _i == 0 ? LB("b", "") : LB("b", "lanes = no\n"));
	hub_start_up(&hub, NULL, guests, "a,b");
	ck_assert(hub_wait_method(&hub, "a.callsleep,b.sleep") == 0);
	/* b.sleep(0), then b.sleep(20 s), the one b dies in: over the lane
	 * (_i 0) or through hubd, where it is the second call a makes */
	calls = hub_peer_int(&hub, "a", "calls_in");
	pid = call_in_child("a.callsleep", "b.sleep", "20000", &rfd);
	if (_i == 0) {
		expect_open(1);
		wait_lane_call_at("b");
	} else {
		/* at least: a's last registrations may count too */
		for (double end = now_s() + 30;
		     hub_peer_int(&hub, "a", "calls_in") < calls + 2 && now_s() < end;)
			sleep_ms(50);
		ck_assert_msg(hub_peer_int(&hub, "a", "calls_in") >= calls + 2,
			      "a made %d calls, not 2: %s",
			      hub_peer_int(&hub, "a", "calls_in") - calls, hub_log_tail(&hub));
		ck_assert_msg(hub_wait_in_flight(&hub, "b.sleep") == 0, "%s", hub_log_tail(&hub));
	}
	kill_guest("b");
	out = child_output(pid, rfd);
	/* either way, the method it died in named */
	ck_assert_msg(strcmp(out, "error: -125: guest b died serving b.sleep: "
			     "killed by signal 9 (SIGKILL)") == 0,
		      "the caller got '%s'; %s", out, hub_log_tail(&hub));
	free(out);
	expect_open(0);
	ck_assert_str_eq(hub_peer_state(&hub, "a"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "a", "restarts"), 0);
	ck_assert_int_eq(hub_wait_up(&hub, "b", 10000), 0);
	ck_assert(hub_wait_method(&hub, "b.echo") == 0);
	expect("ok again", "a.call", "b.echo", "again", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest on microthreads that stops (guest_stop) waits for its handlers
 * to finish; meanwhile a call over a lane reaches it, which hubd no
 * longer routes to it, and is answered "the guest is stopping" by the
 * guest itself, not run (hubd's own refusal reads "guest m1 is
 * stopping"). */
START_TEST(test_stopping_microthreads_refuse_lane_calls)
{
	char *out = NULL, *held;
	double until;
	int rfd, refused = 0;
	pid_t pid;

	hub_start_up(&hub, "stop_grace = 300s\n",
		     "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1 --processors 2\n"
		     "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2\n",
		     "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	expect("m2", "m2.call", "m1.caller", "x", NULL);	/* through hubd */
	expect_open(1);
	/* a handler that holds m1's stop: it waits on a runtime channel,
	 * not on the hub, so the stop does not end its wait */
	pid = call_in_child("m1.wait", NULL, NULL, &rfd);
	ck_assert_msg(hub_wait_in_flight(&hub, "m1.wait") == 0, "m1.wait never in flight");
	ck_assert_msg(hubctl(&hub, &out, "stop", "m1", (char *)NULL) == 0, "hubctl stop m1: %s%s",
		      out, hubctl_stderr());
	/* until m1 has seen the stop, it answers as before */
	for (until = now_s() + 30; !refused && now_s() < until; sleep_ms(20)) {
		free(out);
		out = call("m2.call", "m1.caller", "x", NULL);
		refused = strcmp(out, "error: user: the guest is stopping") == 0;
		ck_assert_msg(refused || strcmp(out, "m2") == 0, "m2's call to m1: '%s'; %s", out,
			      hub_log_tail(&hub));
	}
	ck_assert_msg(refused, "m2's call to m1 while it stopped: '%s'; %s", out,
		      hub_log_tail(&hub));
	free(out);
	/* still held by its handler, and still stopping */
	ck_assert_str_eq(hub_peer_state(&hub, "m1"), "stopping");
	kill_guest("m1");
	held = child_output(pid, rfd);
	ck_assert_msg(strcmp(held, "ok") != 0, "m1.wait answered though its gate stayed shut");
	free(held);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The caller dies while its call over the lane is being handled: the
 * callee's answer goes nowhere and harms nobody; the caller's next
 * instance gets a lane of its own. */
START_TEST(test_caller_dies_mid_call)
{
	char *out;
	unsigned long long first;
	int rfd;
	pid_t pid;

	hub_start_up(&hub, NULL, LB("a", "") LB("b", ""), "a,b");
	ck_assert(hub_wait_method(&hub, "a.callsleep,b.sleep") == 0);
	pid = call_in_child("a.callsleep", "b.sleep", "1500", &rfd);
	expect_open(1);
	first = lane_u64(NULL, "id");
	wait_lane_call_at("b");	/* b serves it: its answer has a lane to miss */
	kill_guest("a");
	out = child_output(pid, rfd);
	free(out);
	expect_open(0);
	sleep_ms(1500);		/* b answers into the closed lane */
	ck_assert_str_eq(hub_peer_state(&hub, "b"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "b", "restarts"), 0);
	ck_assert_int_eq(hub_wait_up(&hub, "a", 10000), 0);
	ck_assert(hub_wait_method(&hub, "a.call") == 0);
	expect("ok x", "a.call", "b.echo", "x", NULL);
	expect_open(1);
	ck_assert_uint_gt(lane_u64(NULL, "id"), first);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A restarted callee: its lanes close at once (the caller is told), the
 * next call goes through hubd to the new instance and a new lane
 * follows. */
START_TEST(test_restart_reroutes)
{
	char *out = NULL;
	unsigned long long first;

	hub_start_up(&hub, NULL, LB("a", "") LB("b", ""), "a,b");
	ck_assert(hub_wait_method(&hub, "a.call,b.echo") == 0);
	expect("ok 1", "a.call", "b.echo", "1", NULL);
	expect_open(1);
	first = lane_u64(NULL, "id");
	hubctl_ok(&hub, &out, "restart", "b", (char *)NULL);
	free(out);
	ck_assert_int_eq(hub_wait_up(&hub, "b", 10000), 0);
	ck_assert(hub_wait_method(&hub, "b.echo") == 0);
	expect("0", "a.lanes", NULL, NULL, NULL);
	expect("ok 2", "a.call", "b.echo", "2", NULL);
	expect_open(1);
	ck_assert_uint_gt(lane_u64(NULL, "id"), first);
	expect("1", "b.lanes", NULL, NULL, NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Cancel goes the way its call went: prober pa calls pb.wait (which
 * answers only when cancelled) with a timeout, twice: the first through
 * hubd, the second over the lane; pb sees both Cancels. */
START_TEST(test_cancel_over_a_lane)
{
	hub_start_up(&hub, NULL,
		     "[guest pa]\nexec = @/tests/guests/prober\nargs = --prefix pa\n"
		     "[guest pb]\nexec = @/tests/guests/prober\nargs = --prefix pb\n", "pa,pb");
	ck_assert(hub_wait_method(&hub, "pa.route_timeout,pb.wait,pb.cancels") == 0);
	expect("error: timeout", "pa.route_timeout", "pb.wait", "300", NULL);
	expect_open(1);
	expect("error: timeout", "pa.route_timeout", "pb.wait", "300", NULL);
	for (double end = now_s() + 30; now_s() < end;) {
		char *out = call("pb.cancels", NULL, NULL, NULL);
		int done = strcmp(out, "2") == 0;

		free(out);
		if (done)
			break;
		sleep_ms(50);
	}
	expect("2", "pb.cancels", NULL, NULL, NULL);
	ck_assert_uint_ge(lane_u64("a", "calls_out"), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A callee with its own poll() loop on guest_fd(): a call over the lane
 * wakes it (no heartbeat here to wake it otherwise). */
START_TEST(test_own_loop_woken_by_a_lane)
{
	hub_start_up(&hub, "heartbeat_interval = 0\n",
		     LB("a", "") "[guest pp]\nexec = @/tests/guests/lanebreaker\n"
		     "args = --prefix pp --poll\n", "a,pp");
	ck_assert(hub_wait_method(&hub, "a.call,pp.echo") == 0);
	for (int i = 0; i < 5; i++) {
		expect("ok w", "a.call", "pp.echo", "w", NULL);
		sleep_ms(100);	/* pp sleeps in its poll() again */
	}
	expect_open(1);
	stat_at_least("pp", "lane_calls_out", 5);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* pp's own loop's wakes so far (lanebreaker's polls). */
static unsigned long long
polls(void)
{
	char *out = call("pp.polls", NULL, NULL, NULL);
	unsigned long long n = strtoull(out, NULL, 10);

	free(out);
	return n;
}

/* A peer that closes the pipe it rings the other on (its bell) keeps its
 * lane: the other, in its own poll() loop on guest_fd(), polls that pipe
 * no more (its hang-up left guest_fd readable for ever: the loop spun,
 * a CPU's worth) and the lane carries calls both ways still, woken by
 * its doorbell. pp wakes here for the calls alone (no heartbeat). */
START_TEST(test_peer_hushes_its_bell)
{
	unsigned long long before, after;

	hub_start_up(&hub, "heartbeat_interval = 0\n",
		     LB("brk", "") "[guest pp]\nexec = @/tests/guests/lanebreaker\n"
		     "args = --prefix pp --poll\n", "brk,pp");
	ck_assert(hub_wait_method(&hub, "brk.break,pp.echo,pp.polls") == 0);
	expect("sent", "brk.break", "hush", "pp.echo", NULL);
	expect("ok z", "brk.call", "pp.echo", "z", NULL);
	before = polls();
	sleep_ms(1000);
	after = polls();
	ck_assert_msg(after - before < 100, "pp's loop woke %llu times in a second of quiet",
		      after - before);
	expect("ok y", "pp.call", "brk.echo", "y", NULL);
	expect_open(1);
	stat_at_least("pp", "lane_calls_out", 2);
	stat_at_least("brk", "lane_calls_out", 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* How many lanes hubd's log says it opened. */
static int
lanes_opened(void)
{
	char *log = hub_log(&hub);
	int n = 0;

	for (const char *s = log; (s = strstr(s, "call each other directly")) != NULL; s++)
		n++;
	free(log);
	return n;
}

/* A side that closes each lane it gets, saying that its peer (up and
 * well) hung up, its figures forged to show calls, gets one lane from
 * hubd, not one per call: hubd made, logged and handed over a new lane
 * (a memfd of 2 GiB to map, both sides) after each such word, as fast as
 * the guest could call. Its calls go on through hubd; a new instance
 * gets a lane again. */
START_TEST(test_lane_churn_refused)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, LB("vic", "") LB("brk", ""), "vic,brk");
	ck_assert(hub_wait_method(&hub, "brk.churn,vic.echo") == 0);
	expect("ok 1", "brk.churn", "vic.echo", "50", NULL);
	expect_open(0);
	ck_assert_int_eq(lanes_opened(), 1);
	ck_assert_msg(strstr(hub_log_tail(&hub), "guest brk closed it while its peer is up") != NULL,
		      "%s", hub_log_tail(&hub));
	expect("ok z", "brk.call", "vic.echo", "z", NULL);
	expect("ok z", "vic.call", "brk.echo", "z", NULL);
	expect_open(0);
	hubctl_ok(&hub, &out, "restart", "brk", (char *)NULL);
	free(out);
	ck_assert_int_eq(hub_wait_up(&hub, "brk", 10000), 0);
	ck_assert(hub_wait_method(&hub, "brk.echo") == 0);
	expect("ok z", "vic.call", "brk.echo", "z", NULL);
	expect_open(1);
	ck_assert_int_eq(lanes_opened(), 2);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A hostile peer on a lane, each rule it can break: the victim closes the
 * lane and says why, hubd records it against the lane, both keep
 * running, the pair gets no new lane and its calls go through hubd. */
static const struct {
	const char	*mode;
	const char	*rule;		/* in the record's reason */
	const char	*reporter;
} breaches[] = {
	{ "data", "lane.channel", "vic" },
	{ "close", "lane.channel", "vic" },
	{ "goodbye", "lane.msg-type", "vic" },
	{ "unknown", "shm.desc.msg-type", "vic" },
	{ "slot", "shm.payload.slot", "vic" },
	{ "generation", "shm.slot.generation", "vic" },
	{ "bounds", "shm.slot.payload-offset", "vic" },
	{ "inline", "shm.desc.inline-fields", "vic" },
	{ "response", "shm.id.request-id", "vic" },
	{ "channels", "shm.flow.channel-activate", "vic" },
	{ "parity", "shm.id.channel-parity", "vic" },
	{ "credit", "shm.flow.remaining-credit", "vic" },
	{ "ring", "shm.ring.capacity", "vic" },
	{ "lie", "lies", "brk" },
	/* brk's plain close heard first: vic's record still counts */
	{ "first", "lane.channel", "vic" },
};

START_TEST(test_hostile_peer)
{
	json_object *o, *rec;

	hub_start_up(&hub, NULL, LB("vic", "") LB("brk", ""), "vic,brk");
	ck_assert(hub_wait_method(&hub, "brk.break,vic.echo,vic.sink,brk.flood") == 0);
	if (strcmp(breaches[_i].mode, "credit") == 0)	/* brk the sender, vic the caller */
		free(call("vic.stream", "brk.flood", NULL, NULL));
	else
		expect("sent", "brk.break", breaches[_i].mode, "vic.echo", NULL);
	for (double end = now_s() + 30; count("violations") == 0 && now_s() < end;)
		sleep_ms(50);
	o = lanes();
	ck_assert_msg(json_object_array_length(json_get(o, "violations")) == 1,
		      "%s: %zu records, want 1; %s", breaches[_i].mode,
		      json_object_array_length(json_get(o, "violations")), hub_log_tail(&hub));
	rec = json_object_array_get_idx(json_get(o, "violations"), 0);
	ck_assert_msg(strstr(json_object_get_string(json_get(rec, "reason")),
			     breaches[_i].rule) != NULL, "%s: reason '%s', want %s",
		      breaches[_i].mode, json_object_get_string(json_get(rec, "reason")),
		      breaches[_i].rule);
	ck_assert_str_eq(json_object_get_string(json_get(rec, "reported_by")),
			 breaches[_i].reporter);
	json_object_put(o);
	expect_open(0);
	/* nobody ended, nobody restarted */
	ck_assert_str_eq(hub_peer_state(&hub, "vic"), "up");
	ck_assert_str_eq(hub_peer_state(&hub, "brk"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "vic", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "brk", "restarts"), 0);
	/* through hubd from now on: no new lane for the pair */
	expect("ok z", "brk.call", "vic.echo", "z", NULL);
	expect("ok z", "vic.call", "brk.echo", "z", NULL);
	expect_open(0);
	stat_at_least("vic", "lane_violations", 1);
	stat_at_least("brk", "lane_violations", 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A pair whose lane closed over a broken rule gets no lane for
 * lane_ban, whatever their instances: brk breaks the lane, restarts,
 * and its calls to vic go through hubd (_i 0: the default, 10 min).
 * With lane_ban = 1s (_i 1) the ban lapses (hubctl lanes lists it until
 * then) and the next call brings a lane; lane_ban = 0 (_i 2): only the
 * two instances were kept off lanes, the new one gets one at once. */
START_TEST(test_ban_across_restarts)
{
	static const char *const keys[] = { NULL, "lane_ban = 1s\n", "lane_ban = 0\n" };
	char *out = NULL;
	json_object *o, *b;

	hub_start_up(&hub, keys[_i], LB("vic", "") LB("brk", ""), "vic,brk");
	ck_assert(hub_wait_method(&hub, "brk.break,vic.echo,brk.call") == 0);
	expect("sent", "brk.break", "goodbye", "vic.echo", NULL);
	for (double end = now_s() + 30; count("violations") == 0 && now_s() < end;)
		sleep_ms(50);
	ck_assert_uint_eq(count("violations"), 1);
	expect_open(0);
	o = lanes();
	ck_assert_uint_eq(json_object_array_length(json_get(o, "banned")), _i == 2 ? 0 : 1);
	if (_i != 2) {
		b = json_object_array_get_idx(json_get(o, "banned"), 0);
		ck_assert_msg(json_u64(b, "left_ms", NULL, NULL) > 0 &&
			      json_u64(b, "left_ms", NULL, NULL) <= (_i == 0 ? 600000u : 1000u),
			      "left_ms %llu", json_u64(b, "left_ms", NULL, NULL));
	}
	json_object_put(o);
	hubctl_ok(&hub, &out, "restart", "brk", (char *)NULL);
	free(out);
	ck_assert_int_eq(hub_wait_up(&hub, "brk", 10000), 0);
	ck_assert(hub_wait_method(&hub, "brk.call") == 0);
	if (_i == 1) {
		for (int i = 0; i < 200 && count("banned") != 0; i++)
			sleep_ms(50);
		ck_assert_uint_eq(count("banned"), 0);
	}
	expect("ok z", "brk.call", "vic.echo", "z", NULL);
	expect("ok z", "brk.call", "vic.echo", "z", NULL);
	expect_open(_i == 0 ? 0 : 1);
	if (_i == 0) {
		hubctl_ok(&hub, &out, "lanes", (char *)NULL);
		ck_assert_msg(strstr(out, "banned: ") != NULL, "hubctl lanes: %s", out);
		free(out);
	}
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Guests on microthreads (_i + 1 processors): calls over the lane from
 * many microthreads at once, each waiting in its own handler; the
 * callee keeps calls_in_flight per lane as hubd does (past it: an
 * error, the guest goes on). */
START_TEST(test_microthreads_over_a_lane)
{
	char guests[512], *out;

	snprintf(guests, sizeof(guests),
		 "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1 --processors %d\n"
		 "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2 --processors %d\n",
		 _i + 1, _i + 1);
	hub_start_up(&hub, "calls_in_flight = 100\n", guests, "m1,m2");
	/* mtprober's last method: it serves on microthreads from then on */
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	/* through hubd, then over the lane */
	expect("ok 20", "m2.fanopen", "20", "m1", "true");
	expect_open(1);
	expect("ok 60", "m2.fanopen", "60", "m1", "true");
	stat_at_least("m2", "lane_calls_in", 60);
	/* past the limit: refused by m1 itself (its gate opens a second
	 * after the 100th wait is in, however long the calls took) */
	expect("ok", "m1.open_when", "100", "1000", "300");
	out = call("m2.fanopen", "300", "m1", "false");
	ck_assert_msg(strncmp(out, "error: ", 7) == 0 &&
		      strstr(out, "of 300 ok, first: hub") != NULL, "fanopen past the limit: '%s'",
		      out);
	free(out);
	expect("ok 10", "m2.fanopen", "10", "m1", "true");
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "m2", "restarts"), 0);
	expect_open(1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* guest_call_caller on microthreads: client:UID for hubctl's call; the
 * calling guest's name through hubd (hub.caller) and over the lane that
 * follows (the lane's peer, no question to hubd). */
START_TEST(test_callee_learns_its_caller)
{
	char client[32];

	snprintf(client, sizeof(client), "client:%u", (unsigned)getuid());
	hub_start_up(&hub, NULL,
		     "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1\n"
		     "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2\n",
		     "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	expect(client, "m1.caller", "x", NULL, NULL);
	expect("NULL", "m1.caller_after", NULL, NULL, NULL);
	expect_open(0);
	expect("m2", "m2.call", "m1.caller", "x", NULL);	/* through hubd */
	expect_open(1);
	expect("m2", "m2.call", "m1.caller", "x", NULL);	/* over the lane */
	stat_at_least("m2", "lane_calls_in", 1);	/* as test_lane_set_up counts */
	expect(client, "m1.caller", "x", NULL, NULL);
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "m2", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.flow.remaining-credit] r[shm.flow.reset]: a stream over a lane
 * between guests on microthreads (_i + 1 processors): the reader takes
 * it through guest_chan_reader, the sender waits for credit on its
 * microthread; every byte arrives in order (the hashes agree), and a
 * reader that stops early stops the sender, both guests going on. */
START_TEST(test_streams_over_a_lane_on_microthreads)
{
	char guests[512];

	snprintf(guests, sizeof(guests),
		 "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1 --processors %d\n"
		 "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2 --processors %d\n",
		 _i + 1, _i + 1);
	hub_start_up(&hub, NULL, guests, "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	/* through hubd, then over the lane */
	expect("ok 1000", "m1.pullfrom", "1000", "0", "m2.source");
	expect_open(1);
	expect("ok 3000000", "m1.pullfrom", "3000000", "0", "m2.source");
	stat_at_least("m1", "lane_calls_in", 1);
	expect("stopped: user", "m1.pullfrom", "100000000", "300000", "m2.source");
	expect("ok 200000", "m1.pullfrom", "200000", "0", "m2.source");
	stat_at_least("m1", "lane_calls_in", 3);
	expect_open(1);
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "m2", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A lane between two guests carries the first call of each of the
 * callee's stream methods too: hubd, which relays the stream of a call
 * that passes it for as long as the stream lasts, routes them all
 * (daemon/lanes.c) when it routes the first method of the pair. */
START_TEST(test_first_stream_over_an_open_lane)
{
	hub_start_up(&hub, NULL,
		     "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1\n"
		     "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2\n",
		     "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.call,m2.caller,m2.source") == 0);
	/* a plain method through hubd opens the lane */
	free(call("m1.call", "m2.caller", "x", NULL));
	expect_open(1);
	ck_assert_int_eq(lane_u64("a", "methods") + lane_u64("b", "methods"), 2);
	/* m2.source's first call, a stream, goes over it */
	expect("ok 300000", "m1.pullfrom", "300000", "0", "m2.source");
	stat_at_least("m1", "lane_calls_in", 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* And a stream method the callee registers after the lane opened: its
 * callers over the lane are given its route then (a plain method's
 * waits for its first call through hubd). */
START_TEST(test_stream_method_registered_later)
{
	unsigned long long before;
	char *out;

	hub_start_up(&hub, NULL,
		     "[guest p1]\nexec = @/tests/guests/prober\nargs = --prefix p1\n"
		     "[guest p2]\nexec = @/tests/guests/prober\nargs = --prefix p2\n",
		     "p1,p2");
	ck_assert(hub_wait_method(&hub, "p1.route,p2.caller,p2.register_lib") == 0);
	out = call("p1.route", "p2.caller", "x", NULL);	/* through hubd: a lane follows */
	ck_assert_msg(strncmp(out, "error", 5) != 0, "p1.route p2.caller: %s", out);
	free(out);
	expect_open(1);
	before = lane_u64("a", "methods") + lane_u64("b", "methods");
	expect("ok", "p2.register_lib", "p2.plain", "u64->u64", NULL);
	ck_assert_uint_eq(lane_u64("a", "methods") + lane_u64("b", "methods"), before);
	expect("ok", "p2.register_lib", "p2.late", "u64,chan<bytes>->str", NULL);
	ck_assert_uint_eq(lane_u64("a", "methods") + lane_u64("b", "methods"), before + 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A peer that stops reading the lane (its slots never come back): a
 * sender waiting for room gives up on the lane after a while, says the
 * peer broke shm.ring.full, and its call goes through hubd, where the
 * peer still answers. Nobody is ended. */
START_TEST(test_deaf_peer)
{
	json_object *o, *rec;

	/* 8 slots a side: a burst of 20 100-byte calls fills them */
	hub_start_up(&hub, "lane_slots = 8\n", LB("vic", "") LB("brk", ""), "vic,brk");
	ck_assert(hub_wait_method(&hub, "vic.burst,vic.call,brk.echo,brk.deaf") == 0);
	expect("ok x", "vic.call", "brk.echo", "x", NULL);
	expect_open(1);
	expect("deaf 1", "brk.deaf", NULL, NULL, NULL);
	expect("ok last", "vic.burst", "brk.echo", "20", NULL);
	o = lanes();
	rec = json_object_array_get_idx(json_get(o, "violations"), 0);
	ck_assert_msg(rec != NULL && strstr(json_object_get_string(json_get(rec, "reason")),
					    "shm.ring.full") != NULL, "no record; %s",
		      hub_log_tail(&hub));
	json_object_put(o);
	expect_open(0);
	ck_assert_int_eq(hub_peer_int(&hub, "vic", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "brk", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Whether every class of every zone's shared pool has all its slots free
 * again, and the pool checks out (hubctl pool, validated); what it found
 * in why. */
static int
pool_idle(char *why, size_t cap)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"pool\",\"validate\":true}", NULL);
	json_object *zones = o != NULL ? json_get(o, "zones") : NULL;
	int idle = o != NULL && json_object_get_boolean(json_get(o, "valid"));

	snprintf(why, cap, "%s", o == NULL ? "no answer" : idle ? "" : "not valid");
	for (size_t z = 0; zones != NULL && z < json_object_array_length(zones); z++) {
		json_object *zn = json_object_array_get_idx(zones, z);
		json_object *cls = json_get(zn, "classes");

		for (size_t c = 0; c < json_object_array_length(cls); c++) {
			json_object *k = json_object_array_get_idx(cls, c);
			int64_t in_use = json_object_get_int64(json_get(k, "in_use"));

			if (in_use != 0 || json_object_get_int64(json_get(k, "free")) !=
			    json_object_get_int64(json_get(k, "slots"))) {
				idle = 0;
				snprintf(why, cap, "zone %s class %zu: %lld in use",
					 json_object_get_string(json_get(zn, "name")), c,
					 (long long)in_use);
			}
		}
	}
	if (o != NULL)
		json_object_put(o);
	return idle;
}

/* r[shm.ring.full]: a burst over a lane, N guest_call_async of
 * echo.echo (100 bytes) back to back from a callback guest (_i 0: 5,000,
 * 1: 100,000). A full lane makes the caller wait, serving the answers,
 * within its bound of calls in flight: every call is answered with what
 * it sent, nobody breaks the lane, nobody is ended, the lane stays open
 * and every slot comes back. _i 2 and 3: the same through hubd (lanes =
 * no), where the answers waiting for the caller stay within its pool
 * quota. */
START_TEST(test_burst_over_a_lane)
{
	static const char *const counts[] = { "5000", "100000", "5000", "100000" };
	char want[32], *out = NULL, *nl;
	json_object *st;
	int rc, slots;

	hub_start_up(&hub, NULL, _i < 2 ? "[guest echo]\nexec = @/guests/echo\n" LB("a", "") :
		     "[guest echo]\nexec = @/guests/echo\n" LB("a", "lanes = no\n"), "echo,a");
	ck_assert(hub_wait_method(&hub, "echo.echo,a.storm,a.call") == 0);
	expect("ok x", "a.call", "echo.echo", "x", NULL);	/* the second over a lane */
	expect_open(_i < 2 ? 1 : 0);
	rc = hubctl(&hub, &out, "-t", "600", "call", "a.storm", "echo.echo", counts[_i],
		    (char *)NULL);
	ck_assert_msg(rc == 0, "a.storm: status %d, '%s'; %s", rc, out, hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	snprintf(want, sizeof(want), "ok=%s", counts[_i]);
	ck_assert_msg(strcmp(out, want) == 0, "a.storm %s: '%s'; %s", counts[_i], out,
		      hub_log_tail(&hub));
	free(out);
	/* over the lane, which stayed open (hubd's view: what a sent came
	 * in): no violation, nobody ended */
	if (_i < 2) {
		stat_at_least("a", "lane_calls_in", strtoull(counts[_i], NULL, 10));
		stat_at_least("echo", "lane_calls_out", strtoull(counts[_i], NULL, 10));
	}
	ck_assert_uint_eq(count("violations"), 0);
	expect_open(_i < 2 ? 1 : 0);
	for (int i = 0; i < 2; i++) {
		const char *name = i == 0 ? "echo" : "a";

		ck_assert_str_eq(hub_peer_state(&hub, name), "up");
		ck_assert_int_eq(hub_peer_int(&hub, name, "restarts"), 0);
		ck_assert_int_eq(hub_peer_int(&hub, name, "lane_violations"), 0);
	}
	/* the pools back to their size */
	st = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
	ck_assert(st != NULL);
	slots = json_object_get_int(json_get(st, "slots_per_guest"));
	json_object_put(st);
	for (int i = 0; i < 2; i++) {
		const char *name = i == 0 ? "echo" : "a";

		expect_peer(name, "slots_free", slots);
		expect_peer(name, "host_slots_free", slots);
		expect_peer(name, "pool_slots", 0);
	}
	{
		char why[160] = "";
		int idle = 0;

		for (int i = 0; i < 200 && !(idle = pool_idle(why, sizeof(why))); i++)
			sleep_ms(50);
		ck_assert_msg(idle, "the shared pool after the burst: %s", why);
	}
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The same burst from a guest on microthreads (_i + 1 processors): the
 * calls start on a handler's microthread, which waits at the bound while
 * the runtime serves; the answers come on the scheduler. */
START_TEST(test_burst_on_microthreads)
{
	static const char *const counts[] = { "20000", "5000" };
	char guests[512], want[32], *out = NULL, *nl;
	int rc;

	snprintf(guests, sizeof(guests), "[guest echo]\nexec = @/guests/echo\n"
		 "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1 --processors %d\n",
		 _i + 1);
	hub_start_up(&hub, NULL, guests, "echo,m1");
	ck_assert(hub_wait_method(&hub, "echo.echo,m1.storm,m1.call") == 0);
	expect("x", "m1.call", "echo.echo", "x", NULL);	/* through hubd: a lane follows */
	expect_open(1);
	rc = hubctl(&hub, &out, "-t", "600", "call", "m1.storm", "echo.echo", counts[_i],
		    (char *)NULL);
	ck_assert_msg(rc == 0, "m1.storm: status %d, '%s'; %s", rc, out, hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	snprintf(want, sizeof(want), "ok=%s", counts[_i]);
	ck_assert_msg(strcmp(out, want) == 0, "m1.storm %s: '%s'; %s", counts[_i], out,
		      hub_log_tail(&hub));
	free(out);
	stat_at_least("m1", "lane_calls_in", strtoull(counts[_i], NULL, 10));
	ck_assert_uint_eq(count("violations"), 0);
	expect_open(1);
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Async calls that wait at their callee until a later call of the
 * caller's opens the gate, more of them (300) than the bound on calls in
 * flight: the one that opens it still goes (the bound waits for an
 * answer only so long), over a lane or through hubd; all are answered. */
START_TEST(test_bound_lets_the_opener_through)
{
	hub_start_up(&hub, NULL, LB("a", "") "[guest m1]\nexec = @/tests/guests/mtprober\n"
		     "args = --prefix m1\n", "a,m1");
	ck_assert(hub_wait_method(&hub, "a.gate,m1.wait,m1.open") == 0);
	expect("ok=2", "a.gate", "m1", "1", NULL);	/* lanes follow */
	expect_open(1);
	expect("ok=301", "a.gate", "m1", "300", NULL);
	ck_assert_uint_eq(count("violations"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "a", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "m1", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_lanes(void);
Suite *
suite_lanes(void)
{
	Suite *s = suite_create("lanes");
	TCase *tc = tcase_create("lanes");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lane_set_up);
	tcase_add_test(tc, test_big_payloads_over_a_lane);
	tcase_add_test(tc, test_lane_takes_no_larger_payload_than_the_hub);
	tcase_add_test(tc, test_callee_learns_its_caller);
	tcase_add_loop_test(tc, test_lanes_refused_by_config, 0, 3);
	tcase_add_loop_test(tc, test_callee_dies_mid_call, 0, 2);
	tcase_add_test(tc, test_caller_dies_mid_call);
	tcase_add_test(tc, test_stopping_microthreads_refuse_lane_calls);
	tcase_add_test(tc, test_restart_reroutes);
	tcase_add_test(tc, test_cancel_over_a_lane);
	tcase_add_test(tc, test_own_loop_woken_by_a_lane);
	tcase_add_test(tc, test_peer_hushes_its_bell);
	tcase_add_test(tc, test_lane_churn_refused);
	tcase_add_loop_test(tc, test_hostile_peer, 0, (int)(sizeof(breaches) / sizeof(breaches[0])));
	tcase_add_loop_test(tc, test_microthreads_over_a_lane, 0, 1);
	tcase_add_loop_test(tc, test_streams_over_a_lane_on_microthreads, 0, 1);
	tcase_add_test(tc, test_deaf_peer);
	tcase_add_test(tc, test_first_stream_over_an_open_lane);
	tcase_add_test(tc, test_stream_method_registered_later);
	tcase_add_loop_test(tc, test_ban_across_restarts, 0, 3);
	suite_add_tcase(s, tc);
	/* bursts: 100,000 calls take a few seconds, more under a sanitizer */
	tc = tcase_create("lanes_load");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_burst_over_a_lane, 0, 4);
	tcase_add_loop_test(tc, test_burst_on_microthreads, 0, 1);
	tcase_add_test(tc, test_bound_lets_the_opener_through);
	suite_add_tcase(s, tc);
	/* two processors a guest under ThreadSanitizer (make check-tsan) */
	tc = tcase_create("lanes_threads");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 180);
	tcase_set_tags(tc, "tsan");
	tcase_add_loop_test(tc, test_microthreads_over_a_lane, 1, 2);
	tcase_add_loop_test(tc, test_streams_over_a_lane_on_microthreads, 1, 2);
	tcase_add_test(tc, test_lane_set_up);
	tcase_add_loop_test(tc, test_burst_on_microthreads, 1, 2);
	tcase_add_test(tc, test_stopping_microthreads_refuse_lane_calls);
	suite_add_tcase(s, tc);
	return s;
}
