/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats when hubs stop, hang or change: a bridge stops promptly and
 * says goodbye, calls carry their deadline and trace, a hung hub is
 * passed over, imports follow what hubs announce, and the bridge's state
 * shows from its first moment. Real nats-server and hubds throughout. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>

#include "tests/e2e/natsd.h"
#include "tests/e2e/natshubs.h"

static struct natsd natsd;
static struct hub_proc hub_a, hub_b, hub_b2;

/* CPU time (user + system, clock ticks) process pid has used. */
static unsigned long
cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's ")": state is field 3, utime 14, stime 15 */
	ck_assert_ptr_nonnull(p = strrchr(buf, ')'));
	ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
	return ut + st;
}

/* hubctl stop or restart of the bridge; once hubd has it down (stop) or
 * up again as a new process (restart): it ended by itself, exit status 0,
 * not killed after stop_grace (no time asserted: load can slow a stop,
 * never change how it ended). */
static void
stop_or_restart(struct hub_proc *h, const char *cmd)
{
	int pid = hub_peer_int(h, "nats", "pid"), i;
	json_object *p, *deaths, *d;
	char *out = NULL;

	hubctl_ok(h, &out, cmd, "nats", (char *)NULL);
	free(out);
	for (i = 0; i < 3000; i++) {
		if (cmd[0] == 's' ? strcmp(hub_peer_state(h, "nats"), "down") == 0 :
		    strcmp(hub_peer_state(h, "nats"), "up") == 0 &&
		    hub_peer_int(h, "nats", "pid") != pid)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(i < 3000, "%s: the bridge never came %s; %s", cmd,
		      cmd[0] == 's' ? "down" : "up again", hub_log_tail(h));
	ck_assert_ptr_nonnull(p = hub_peer(h, "nats"));
	deaths = json_get(p, "deaths");
	ck_assert(deaths != NULL && json_object_array_length(deaths) > 0);
	d = json_object_array_get_idx(deaths, 0);
	ck_assert_msg(strcmp(json_object_get_string(json_get(d, "reason")), "exited") == 0 &&
		      json_object_get_int(json_get(d, "status")) == 0,
		      "%s: the bridge did not stop by itself: %s; %s", cmd,
		      json_object_to_json_string(d), hub_log_tail(h));
	json_object_put(p);
}

/* hubctl stop / start / restart of a bridge, with calls in flight or
 * with NATS gone: each ends well within hubd's stop grace (never "did
 * not stop in time"), a start sent while it stops is honoured, and a
 * bridge whose NATS is gone waits for it without spinning. */
START_TEST(test_bridge_stops_promptly)
{
	char *out = NULL, *log;
	unsigned long ticks;
	pid_t pid;
	int rfd;

	natsd_start(&natsd);
	nh_start_b(&hub_b, "b", natsd.url);
	nh_start_a(&hub_a, natsd.url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.sleep") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	for (int i = 0; i < 4; i++) {
		struct hub_proc *h = i % 2 ? &hub_a : &hub_b;

		/* a call in flight through both bridges */
		pid = nh_load_in_child(&hub_a, "sl.sleep", "1", &rfd);
		sleep_ms(200);
		stop_or_restart(h, "restart");
		nh_all_ended(nh_child_answer(pid, rfd), 1);
		nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	}
	stop_or_restart(&hub_b, "stop");
	/* stop, and start at once, while it may still be stopping */
	hubctl_ok(&hub_b, &out, "start", "nats", (char *)NULL);
	free(out);
	hubctl_ok(&hub_b, &out, "stop", "nats", (char *)NULL);
	free(out);
	hubctl_ok(&hub_b, &out, "start", "nats", (char *)NULL);
	free(out);
	ck_assert(hub_wait_up(&hub_b, "nats", 10000) == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	/* NATS gone: the bridge waits, idle, and still stops at once */
	natsd_kill(&natsd);
	for (int i = 0; i < 100 && strstr(hub_log_tail(&hub_b), "NATS connection lost") == NULL; i++)
		sleep_ms(50);
	sleep_ms(200);
	ticks = cpu_ticks(hub_peer_int(&hub_b, "nats", "pid"));
	sleep_ms(2000);
	ticks = cpu_ticks(hub_peer_int(&hub_b, "nats", "pid")) - ticks;
	ck_assert_msg(ticks < (unsigned long)sysconf(_SC_CLK_TCK) / 2,
		      "the bridge used %lu ticks of CPU in 2 s without NATS", ticks);
	stop_or_restart(&hub_b, "restart");
	stop_or_restart(&hub_b, "stop");
	for (int i = 0; i < 2; i++) {
		log = hub_log(i ? &hub_a : &hub_b);
		ck_assert_msg(strstr(log, "did not stop in time") == NULL, "%s",
			      hub_log_tail(i ? &hub_a : &hub_b));
		free(log);
	}
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
}
END_TEST

/* hub B as nh_start_b starts it, with nats ([nats] keys) in its
 * bridge's config; its bridge never taken for hung by hubd (the tests
 * freeze it longer than hubd's heartbeat). */
static void
start_b(struct hub_proc *h, const char *name, const char *nats)
{
	char ex[256], *sect, guests[1024];

	snprintf(ex, sizeof(ex), "%s[export]\nmethods = kv.* sl.*\n", nats);
	sect = nh_bridge(name, natsd.url, NULL, ex);
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n" LB("sl") "%sheartbeat = off\n",
		 sect);
	hub_start_up(h, NULL, guests, "kv,sl,nats");
	free(sect);
}

/* hub A as nh_start_a starts it, with nats ([nats] keys) and imp
 * ([import] keys) in its bridge's config. */
static void
start_a(struct hub_proc *h, const char *nats, const char *imp)
{
	char ex[512], *sect, guests[1024];

	snprintf(ex, sizeof(ex), "%s[import]\nmethods = kv.* sl.*\n%s", nats, imp);
	sect = nh_bridge("a", natsd.url, "kv.*, sl.*", ex);
	snprintf(guests, sizeof(guests), LB("cl") "%s", sect);
	hub_start_up(h, NULL, guests, "cl,nats");
	free(sect);
}

/* A call from A waiting on B, in a child: its pid; hubctl's error
 * output comes on *rfd. */
static pid_t
call_in_child(struct hub_proc *h, const char *method, const char *arg, int *rfd)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		char *err = NULL;
		double t = now_s();
		int rc = hubctl_err(h, &err, "-t", "30", "call", method, arg, (char *)NULL);

		close(p[0]);
		dprintf(p[1], "status %d after %.1f s: %s", rc, now_s() - t, err != NULL ? err : "");
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* Whether h's log holds what or, unless NULL, or_what, waiting up to ms
 * for either. */
static int
log_waits_for_either(struct hub_proc *h, const char *what, const char *or_what, int ms)
{
	char *log;
	int found = 0;

	for (int i = 0; i <= ms / 50 && !found; i++) {
		if (i > 0)
			sleep_ms(50);
		log = hub_log(h);
		found = strstr(log, what) != NULL || (or_what != NULL && strstr(log, or_what) != NULL);
		free(log);
	}
	return found;
}

/* Whether h's log holds what, waiting up to ms for it. */
static int
log_waits_for(struct hub_proc *h, const char *what, int ms)
{
	return log_waits_for_either(h, what, NULL, ms);
}

/* Waits until hubctl methods on h no longer lists method; asserts so. */
static void
wait_unlisted(struct hub_proc *h, const char *method)
{
	char *out = NULL, *p = NULL;

	for (double end = now_s() + 30; now_s() < end;) {
		free(out);
		hubctl_ok(h, &out, "methods", (char *)NULL);
		if ((p = strstr(out, method)) == NULL || p[strlen(method)] != ' ')
			break;
		sleep_ms(50);
	}
	ck_assert_msg(p == NULL || p[strlen(method)] != ' ', "%s still listed: %s; %s", method, out,
		      hub_log_tail(h));
	free(out);
}

/* How many calls of method hubctl calls on h lists in flight. */
static int
calls_of(struct hub_proc *h, const char *method)
{
	json_object *a = hub_request(h, "{\"cmd\":\"calls\"}", NULL), *calls;
	int n = 0;

	ck_assert_msg(a != NULL && json_object_object_get_ex(a, "calls", &calls), "%s",
		      hub_log_tail(h));
	for (size_t i = 0; i < json_object_array_length(calls); i++)
		n += strcmp(json_object_get_string(json_get(json_object_array_get_idx(calls, i),
							    "method")), method) == 0;
	json_object_put(a);
	return n;
}

/* Waits (30 s) until h lists more calls of method in flight than before
 * (a call has crossed, not a guess at how long that takes; an earlier
 * one may still run there); asserts it. */
static void
wait_in_flight(struct hub_proc *h, const char *method, int before)
{
	int n = before;

	for (double end = now_s() + 30; (n = calls_of(h, method)) <= before && now_s() < end;)
		sleep_ms(25);
	ck_assert_msg(n > before, "no new call of %s in flight (%d); %s", method, n,
		      hub_log_tail(h));
}

/* A bridge that stops says goodbye: its calls in flight are answered
 * "unreachable" at once, and other hubs drop it at once ("left", not
 * "went silent" announcements later), whether hubctl stops it, SIGTERM
 * or its hubd stopping does. */
START_TEST(test_goodbye)
{
	char *out = NULL, *answer;
	pid_t pid;
	int rfd, n;

	natsd_start(&natsd);
	/* announcements far apart: "went silent" would take 30 s */
	start_b(&hub_b, "b", "announce = 10s\n");
	nh_start_a(&hub_a, natsd.url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.sleep") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	nh_wait_where(&hub_a, "sl.echo", "NATS: hub b");
	/* hubctl stop: the call in flight ends at once, A drops b */
	n = calls_of(&hub_b, "sl.sleep");
	pid = call_in_child(&hub_a, "sl.sleep", "20000", &rfd);
	wait_in_flight(&hub_b, "sl.sleep", n);
	hubctl_ok(&hub_b, &out, "stop", "nats", (char *)NULL);
	free(out);
	answer = nh_child_answer(pid, rfd);
	ck_assert_msg(strstr(answer, "status 0") == NULL && strstr(answer, "stopping") != NULL,
		      "call in flight: %s; %s", answer, hub_log_tail(&hub_a));
	/* said as it left: "went silent" would take 30 s, and says so */
	ck_assert_msg(log_waits_for(&hub_a, "hub b left", 20000), "%s", hub_log_tail(&hub_a));
	wait_unlisted(&hub_a, "sl.echo");
	/* SIGTERM to the bridge, once A has b's sl.sleep again (sl.echo
	 * may come back first) */
	hubctl_ok(&hub_b, &out, "start", "nats", (char *)NULL);
	free(out);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	ck_assert_msg(hub_wait_method(&hub_a, "sl.sleep") == 0, "%s", hub_log_tail(&hub_a));
	nh_wait_where(&hub_a, "sl.sleep", "NATS: hub b");
	n = calls_of(&hub_b, "sl.sleep");
	pid = call_in_child(&hub_a, "sl.sleep", "20000", &rfd);
	wait_in_flight(&hub_b, "sl.sleep", n);
	kill(hub_peer_int(&hub_b, "nats", "pid"), SIGTERM);
	answer = nh_child_answer(pid, rfd);
	ck_assert_msg(strstr(answer, "status 0") == NULL && strstr(answer, "stopping") != NULL,
		      "call in flight: %s; %s", answer, hub_log_tail(&hub_a));
	wait_unlisted(&hub_a, "sl.echo");
	/* started again; then hubd itself stops */
	for (int i = 0; i < 100 && strcmp(hub_peer_state(&hub_b, "nats"), "up") == 0; i++)
		sleep_ms(50);
	hubctl(&hub_b, &out, "start", "nats", (char *)NULL);	/* unless hubd has */
	free(out);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	nh_wait_where(&hub_a, "sl.echo", "NATS: hub b");
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	wait_unlisted(&hub_a, "sl.echo");
	answer = hub_log(&hub_a);
	ck_assert_msg(strstr(answer, "went silent") == NULL, "%s", hub_log_tail(&hub_a));
	free(answer);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Waits until the bridge's note on h holds want; asserts it does. */
static void
wait_note(struct hub_proc *h, const char *want, int ms)
{
	for (int i = 0; i < ms / 50 && strstr(nh_note_of(h, "nats"), want) == NULL; i++)
		sleep_ms(50);
	ck_assert_msg(strstr(nh_note_of(h, "nats"), want) != NULL, "note '%s', want '%s'",
		      nh_note_of(h, "nats"), want);
}

/* What hubctl peers and methods show is the state as it is, from the
 * first moment: connecting, connected, which hub serves a method, even
 * with announcements (and so the bridge's own updates) a minute apart:
 * each is waited for 20 s at most, time enough under any load, and far
 * short of the next announcement. */
START_TEST(test_state_shown_at_once)
{
	char connecting[128];

	natsd_start(&natsd);
	natsd_kill(&natsd);
	start_a(&hub_a, "announce = 60s\n", "");
	snprintf(connecting, sizeof(connecting), "NATS (connecting to %s) as hub a", natsd.url);
	wait_note(&hub_a, connecting, 20000);
	natsd_restart(&natsd);
	wait_note(&hub_a, natsd.url, 20000);
	wait_note(&hub_a, "0 imported from 0 hub(s)", 100);
	start_b(&hub_b, "b", "announce = 60s\n");
	/* A hears B's first announcement: the methods, where, the note */
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_where(&hub_a, "sl.echo", "NATS: hub b");
	wait_note(&hub_a, "from 1 hub(s) (b)", 20000);
	/* NATS gone and back: said at once both ways */
	natsd_kill(&natsd);
	wait_note(&hub_a, "NATS (reconnecting) as hub a", 20000);
	natsd_restart(&natsd);
	wait_note(&hub_a, natsd.url, 20000);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Hubs A and B for calls with metadata: B has kv and metaguest (meta.*),
 * its bridge exports both; A imports both. */
static void
start_meta(void)
{
	char *sect, guests[1024];

	/* announcements far apart: frozen, B is not taken for silent */
	sect = nh_bridge("b", natsd.url, NULL, "announce = 10s\n[export]\nmethods = kv.* meta.*\n");
	/* heartbeat off: the tests freeze the bridge longer than hubd
	 * takes to call a guest hung */
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n"
		 "[guest meta]\nexec = @/tests/guests/metaguest\n%sheartbeat = off\n", sect);
	hub_start_up(&hub_b, NULL, guests, "kv,meta,nats");
	free(sect);
	sect = nh_bridge("a", natsd.url, "kv.*, meta.*", "[import]\nmethods = kv.* meta.*\n");
	snprintf(guests, sizeof(guests), LB("cl") "%s", sect);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	free(sect);
	ck_assert_msg(hub_wait_method(&hub_a, "kv.put,kv.get,meta.show,meta.touch") == 0, "%s",
		      hub_log_tail(&hub_a));
}

/* Whether h holds a call to any of methods (comma-separated). */
static int
calls_on(struct hub_proc *h, const char *methods)
{
	json_object *a = hub_request(h, "{\"cmd\":\"calls\"}", NULL);
	const char *text = a != NULL ? json_object_to_json_string(a) : "";
	char list[128], quoted[140], *save = NULL;
	int found = 0;

	snprintf(list, sizeof(list), "%s", methods);
	for (char *m = strtok_r(list, ",", &save); m != NULL && !found;
	     m = strtok_r(NULL, ",", &save)) {
		snprintf(quoted, sizeof(quoted), "\"%s\"", m);
		found = strstr(text, quoted) != NULL;
	}
	json_object_put(a);
	return found;
}

/* A call carries its caller's deadline and trace across: the callee on
 * B sees the trace hubctl gave on A, and a deadline; calls that timed
 * out on A while B's bridge was frozen are never made on B once it
 * thaws (kv.put wrote nothing, meta.touch never ran). */
START_TEST(test_deadline_and_trace_cross)
{
	const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	char *out = NULL;
	pid_t bridge;

	natsd_start(&natsd);
	start_meta();
	nh_wait_ok(&hub_a, "", "kv.put", "warm", "up");
	hubctl_ok(&hub_a, &out, "call", "--trace", tp, "meta.show", (char *)NULL);
	ck_assert_msg(strstr(out, "4bf92f3577b34da6a3ce929d0e0e4736") != NULL && strncmp(out, "0 ", 2) != 0,
		      "meta.show on B: '%s'", out);
	free(out);
	/* B's bridge frozen: A's calls time out (hubctl waits 1 s) */
	bridge = hub_peer_int(&hub_b, "nats", "pid");
	kill(bridge, SIGSTOP);
	for (int i = 0; i < 3; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_ne(hubctl(&hub_a, &out, "-t", "1", "call", "kv.put", key, "v", (char *)NULL), 0);
		free(out);
		ck_assert_int_ne(hubctl(&hub_a, &out, "-t", "1", "call", "meta.touch", (char *)NULL), 0);
		free(out);
	}
	/* their deadlines past for sure before the thaw: hubd set each when
	 * it took the call, which under load can be later than hubctl gave
	 * up; A's bridge ends each call at its deadline */
	for (int i = 0; i < 600 && calls_on(&hub_a, "kv.put,meta.touch"); i++)
		sleep_ms(50);
	ck_assert_msg(!calls_on(&hub_a, "kv.put,meta.touch"), "calls still in flight on A: %s",
		      hub_log_tail(&hub_a));
	kill(bridge, SIGCONT);
	/* thawed, it reads them all, in order, before this one (through
	 * it), and never makes them */
	nh_wait_ok(&hub_a, "0", "meta.touched", NULL, NULL);
	for (int i = 0; i < 3; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		nh_expect_err(&hub_b, "no such key", "kv.get", key, NULL);
	}
	wait_note(&hub_b, "6 call(s) past their deadline not made", 20000);
	/* and calls go on */
	nh_expect_ok(&hub_a, "touched", "meta.touch", NULL, NULL);
	nh_expect_ok(&hub_a, "1", "meta.touched", NULL, NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Of n calls of kv.get who on A, how many hub name answered (each B's
 * kv holds its own name under "who"). */
static int
answers_from(const char *name, int n)
{
	int count = 0;

	for (int i = 0; i < n; i++) {
		char *out = NULL;

		if (nh_ctl(&hub_a, &out, "kv.get", "who", NULL) == 0 && strcmp(out, name) == 0)
			count++;
		free(out);
	}
	return count;
}

/* Two hubs export kv.* and sl.*: one frozen under load (its bridge
 * stopped, its TCP connection open) is passed over once it leaves a
 * call unanswered for [import] suspect: (nearly) every call goes to the
 * other; thawed, it gets calls again. */
START_TEST(test_hung_hub_passed_over)
{
	char *answer;
	pid_t pid, bridge;
	int rfd, n;

	natsd_start(&natsd);
	start_b(&hub_b, "b1", "");
	start_b(&hub_b2, "b2", "");
	start_a(&hub_a, "", "timeout = 3s\nsuspect = 500ms\n");
	nh_expect_ok(&hub_b, "", "kv.put", "who", "b1");
	nh_expect_ok(&hub_b2, "", "kv.put", "who", "b2");
	ck_assert(hub_wait_method(&hub_a, "sl.echo,kv.get") == 0);
	wait_note(&hub_a, "from 2 hub(s)", 20000);
	ck_assert_int_gt(answers_from("b1", 40), 0);
	/* b1 frozen, then a load: the calls the queue gives it time out,
	 * the others go to b2 (frozen first: a load's calls go as a few
	 * batches, and a short one could end before a freeze in its midst) */
	bridge = hub_peer_int(&hub_b, "nats", "pid");
	kill(bridge, SIGSTOP);
	pid = nh_load_in_child(&hub_a, "sl.echo", "2000", &rfd);
	answer = nh_child_answer(pid, rfd);
	nh_all_ended(answer, 2000);
	ck_assert_msg(log_waits_for_either(&hub_a, "hub b1 has not answered a call",
					   "hub b1 is silent: passed over", 20000), "%s",
		      hub_log_tail(&hub_a));
	/* from now on b2 has them all */
	ck_assert_msg((n = answers_from("b2", 40)) >= 39, "%d of 40 calls answered by b2; %s", n,
		      hub_log_tail(&hub_a));
	pid = nh_load_in_child(&hub_a, "sl.echo", "500", &rfd);
	answer = nh_child_answer(pid, rfd);
	ck_assert_msg(nh_load_count(answer, "ok=") >= 495, "load with b1 frozen: %s; %s", answer,
		      hub_log_tail(&hub_a));
	/* thawed: b1 answers (late), and gets calls again */
	kill(bridge, SIGCONT);
	for (int i = 0; i < 20 && (n = answers_from("b1", 10)) == 0; i++)
		;
	ck_assert_msg(n > 0, "b1 gets no call; %s", hub_log_tail(&hub_a));
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	ck_assert_int_eq(hub_stop(&hub_b2), 0);
	natsd_kill(&natsd);
}
END_TEST

/* A NATS client's answer to hub a's "does b1 run?" (PREFIX.at.b1.hub.ping),
 * as b1: no MAC, so not b1's. */
static void
on_ping(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
	natsMsg *r = NULL;

	(void)sub;
	(void)arg;
	if (natsMsg_GetReply(m) != NULL &&
	    natsMsg_Create(&r, natsMsg_GetReply(m), NULL, "no", 2) == NATS_OK) {
		natsMsgHeader_Set(r, "Hub-Status", "no-method");
		natsMsgHeader_Set(r, "Hub-From", "b1");
		natsConnection_PublishMsg(nc, r);
		natsMsg_Destroy(r);
	}
	natsMsg_Destroy(m);
}

/* A hung hub stays passed over while a NATS client answers, in its name,
 * each time it is asked whether it runs: only its own (MAC'd) answer
 * counts; thawed, it answers again. */
START_TEST(test_hung_hub_forged_ping)
{
	natsSubscription *sub = NULL;
	natsConnection *nc = NULL;
	char *answer;
	pid_t pid, bridge;
	int rfd;

	natsd_start(&natsd);
	start_b(&hub_b, "b1", "");
	start_b(&hub_b2, "b2", "");
	start_a(&hub_a, "", "timeout = 3s\nsuspect = 500ms\n");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	wait_note(&hub_a, "from 2 hub(s)", 20000);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	ck_assert_int_eq(natsConnection_Subscribe(&sub, nc, "hub.at.b1.hub.ping", on_ping, NULL),
			 NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	bridge = hub_peer_int(&hub_b, "nats", "pid");
	kill(bridge, SIGSTOP);
	pid = nh_load_in_child(&hub_a, "sl.echo", "2000", &rfd);
	answer = nh_child_answer(pid, rfd);
	nh_all_ended(answer, 2000);
	ck_assert_msg(log_waits_for_either(&hub_a, "hub b1 has not answered a call",
					   "hub b1 is silent: passed over", 20000), "%s",
		      hub_log_tail(&hub_a));
	/* asked again every 500 ms, and "answered" at once each time */
	sleep_ms(1500);
	ck_assert_msg(!log_waits_for(&hub_a, "hub b1 answers again", 0),
		      "a forged answer was believed: %s", hub_log_tail(&hub_a));
	kill(bridge, SIGCONT);
	ck_assert_msg(log_waits_for_either(&hub_a, "hub b1 answers again",
					   "hub b1 announced itself again", 30000), "%s",
		      hub_log_tail(&hub_a));
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	ck_assert_int_eq(hub_stop(&hub_b2), 0);
	natsd_kill(&natsd);
}
END_TEST

/* hub.unregister and guest_unregister: a guest withdraws its own
 * methods only; a call in flight to one still gets its answer, a new one
 * "no such method"; hubctl (no guest) may not. */
START_TEST(test_unregister)
{
	char *out = NULL, *answer;
	pid_t pid;
	int rfd;

	hub_start_up(&hub_a, NULL, "[guest kv]\nexec = @/guests/kv\n"
		     "[guest sh]\nexec = @/tests/guests/shifty\n", "kv,sh");
	ck_assert(hub_wait_method(&hub_a, "sh.get,sh.hold,kv.get") == 0);
	/* not its own: libguest knows (ENOENT), and hubd refuses too */
	nh_expect_ok(&hub_a, "error -2", "sh.drop", "kv.get", NULL);
	nh_expect_ok(&hub_a, "error -2", "sh.drop", "sh.nothing", NULL);
	nh_expect_ok(&hub_a, "error -111 not your method: kv.get", "sh.raw", "kv.get", NULL);
	nh_expect_ok(&hub_a, "error -111 no such method: sh.nothing", "sh.raw", "sh.nothing", NULL);
	nh_expect_err(&hub_a, "only guests unregister methods", "hub.unregister", "sh.get", NULL);
	/* a call in flight to sh.hold, which goes meanwhile */
	pid = call_in_child(&hub_a, "sh.hold", "3000", &rfd);
	wait_in_flight(&hub_a, "sh.hold", 0);
	nh_expect_ok(&hub_a, "ok", "sh.drop", "sh.hold", NULL);
	nh_expect_ok(&hub_a, "ok", "sh.drop", "sh.get", NULL);
	answer = nh_child_answer(pid, rfd);
	ck_assert_msg(strstr(answer, "status 0") != NULL, "call in flight: %s", answer);
	ck_assert_int_ne(hubctl(&hub_a, &out, "call", "sh.hold", "1", (char *)NULL), 0);
	free(out);
	ck_assert_msg(strstr(hubctl_stderr(), "sh.hold") != NULL, "%s", hubctl_stderr());
	ck_assert_str_eq(nh_where(&hub_a, "sh.get"), "");
	hubctl_ok(&hub_a, &out, "methods", (char *)NULL);
	ck_assert_msg(strstr(out, "sh.get") == NULL && strstr(out, "sh.drop") != NULL, "%s", out);
	free(out);
	/* kv.get is still there, still kv's */
	nh_expect_err(&hub_a, "no such key", "kv.get", "k", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
}
END_TEST

/* Imports follow what hubs announce: a method no hub serves any more is
 * withdrawn on A (hubctl methods no longer lists it), and comes back
 * with the next hub that serves it, with the signature that hub serves
 * it with. */
START_TEST(test_imports_follow_announcements)
{
	char *out = NULL, *sect, guests[1024];

	natsd_start(&natsd);
	sect = nh_bridge("b", natsd.url, NULL, "[export]\nmethods = kv.* sh.*\n");
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n"
		 "[guest sh]\nexec = @/tests/guests/shifty\n%s", sect);
	hub_start_up(&hub_b, NULL, guests, "kv,sh,nats");
	free(sect);
	sect = nh_bridge("a", natsd.url, "kv.*, sh.*", "[import]\nmethods = kv.* sh.*\n");
	snprintf(guests, sizeof(guests), LB("cl") "%s", sect);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	free(sect);
	ck_assert(hub_wait_method(&hub_a, "kv.get,sh.get") == 0);
	nh_wait_ok(&hub_a, "v1", "sh.get", "k", NULL);
	/* B stops: A withdraws what only B served */
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	wait_unlisted(&hub_a, "kv.get");
	wait_unlisted(&hub_a, "sh.get");
	nh_expect_err(&hub_a, "no such method: kv.get", "kv.get", "k", NULL);
	/* B back, sh.get changed: A follows */
	sect = nh_bridge("b", natsd.url, NULL, "[export]\nmethods = kv.* sh.*\n");
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n"
		 "[guest sh]\nexec = @/tests/guests/shifty\nargs = --alt\n%s", sect);
	ck_assert_int_eq(hub_write_conf(&hub_b, NULL, guests), 0);
	free(sect);
	ck_assert_int_eq(hub_restart(&hub_b), 0);
	ck_assert(hub_wait_method(&hub_a, "kv.get,sh.get") == 0);
	nh_wait_ok(&hub_a, "v2", "sh.get", "k", "2");
	hubctl_ok(&hub_a, &out, "call", "hub.signature", "sh.get", (char *)NULL);
	ck_assert_msg(strstr(out, "str,u64->bytes") != NULL, "%s", out);
	free(out);
	/* and again, while A runs on: B's sh restarted with the first one */
	sect = nh_bridge("b", natsd.url, NULL, "[export]\nmethods = kv.* sh.*\n");
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n"
		 "[guest sh]\nexec = @/tests/guests/shifty\n%s", sect);
	ck_assert_int_eq(hub_write_conf(&hub_b, NULL, guests), 0);
	free(sect);
	hubctl_ok(&hub_b, &out, "reload", (char *)NULL);
	free(out);
	hubctl_ok(&hub_b, &out, "restart", "sh", (char *)NULL);
	free(out);
	nh_wait_ok(&hub_a, "v1", "sh.get", "k", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

Suite *suite_nats_faults(void);

Suite *
suite_nats_faults(void)
{
	Suite *s = suite_create("nats_faults");
	TCase *tc = tcase_create("nats_faults");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bridge_stops_promptly);
	tcase_add_test(tc, test_goodbye);
	tcase_add_test(tc, test_state_shown_at_once);
	tcase_add_test(tc, test_deadline_and_trace_cross);
	tcase_add_test(tc, test_hung_hub_passed_over);
	tcase_add_test(tc, test_hung_hub_forged_ping);
	tcase_add_test(tc, test_unregister);
	tcase_add_test(tc, test_imports_follow_announcements);
	suite_add_tcase(s, tc);
	return s;
}
