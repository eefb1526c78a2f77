/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* End to end: a real hubd with real guest processes on private paths.
 * Calls both ways, routing between guests, errors, concurrency, big
 * payloads, streams with credit, Cancel, protocol violations, spawn
 * tickets, config checking. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/builtin.h"
#include "tests/e2e/harness.h"

#define STD_GUESTS \
	"[guest echo]\nexec = @/guests/echo\n" \
	"[guest kv]\nexec = @/guests/kv\n" \
	"[guest counter]\nexec = @/guests/counter\n"

/* How many of pid's mappings are of a file in /dev/shm, and of a memfd
 * of the hub's (a guest's domain or a zone's pool). */
static void
shm_maps(pid_t pid, int *in_dev_shm, int *memfds)
{
	char path[64], line[512];
	FILE *f;

	*in_dev_shm = *memfds = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f) != NULL) {
		*in_dev_shm += strstr(line, " /dev/shm/") != NULL;
		*memfds += strstr(line, " /memfd:hub") != NULL;
	}
	fclose(f);
}

static struct hub_proc hub;

/* Everything until EOF (stderr is unbuffered: a line comes in pieces). */
static void
read_all(int fd, char *out, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len < cap - 1 && (n = read(fd, out + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
}


/* Until hubctl call method prints want (30 s at most, 50 ms apart). */
static void
wait_answer(const char *method, const char *want)
{
	char *out = NULL;
	int got = 0;

	for (double end = now_s() + 30; !got && now_s() < end;) {
		free(out);
		hubctl_ok(&hub, &out, "call", method, (char *)NULL);
		if (!(got = strcmp(out, want) == 0))
			sleep_ms(50);
	}
	ck_assert_msg(got, "%s never answered %s: '%s'", method, want, out);
	free(out);
}

/* name's latest death: it exited by itself, status 0. */
static void
expect_exited_0(const char *name)
{
	json_object *p, *deaths, *d;

	ck_assert_ptr_nonnull(p = hub_peer(&hub, name));
	ck_assert(json_object_object_get_ex(p, "deaths", &deaths));
	d = json_object_array_get_idx(deaths, 0);
	ck_assert_msg(d != NULL && strcmp(json_object_get_string(json_get(d, "reason")), "exited") == 0 &&
		      json_object_get_int(json_get(d, "status")) == 0,
		      "%s: %s", name, json_object_to_json_string(p));
	json_object_put(p);
}

/* Runs hubctl and checks its exit status and exact output. */
static void
expect_ctl(int status, const char *want, ...)
{
	char *argv[12], *out = NULL;
	int n = 0, rc;
	va_list ap;

	va_start(ap, want);
	while (n < 11 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	rc = hubctl(&hub, &out, argv[0], argv[1], argv[2], argv[3], argv[4],
		    argv[5], argv[6], argv[7], argv[8], argv[9], argv[10], (char *)NULL);
	ck_assert_msg(rc == status && (want == NULL || strcmp(out, want) == 0),
		      "hubctl %s %s %s: status %d (want %d), output '%s' (want '%s')",
		      argv[0], argv[1] ? argv[1] : "", argv[1] && argv[2] ? argv[2] : "",
		      rc, status, out, want ? want : "*");
	free(out);
}

/* Stops the hub and checks it left nothing behind: r[shm.goodbye.host-atomic]
 * the guests saw host_goodbye, r[shm.guest.detach] r[shm.goodbye.guest] and
 * left by themselves. */
static void
stop_clean(void)
{
	json_object *a = hub_request(&hub, "{\"cmd\":\"peers\"}", NULL), *peers;
	pid_t pids[64];
	int n = 0, rc, shm, memfds;

	/* the guests' memory is memfds: hubd maps no file in /dev/shm */
	shm_maps(hub.pid, &shm, &memfds);
	ck_assert_msg(shm == 0 && memfds > 0, "hubd maps %d files in /dev/shm, %d memfds",
		      shm, memfds);
	if (a != NULL && json_object_object_get_ex(a, "peers", &peers))
		for (size_t i = 0; i < json_object_array_length(peers) && n < 64; i++) {
			json_object *p = json_object_array_get_idx(peers, i), *pid;

			if (json_object_object_get_ex(p, "pid", &pid))
				pids[n++] = json_object_get_int(pid);
		}
	json_object_put(a);
	rc = hub_stop(&hub);
	ck_assert_msg(rc == 0, "hubd exit status %d: %s", rc, hub_log_tail(&hub));
	/* r[shm.goodbye.host]: on a graceful stop the guests leave by
	 * themselves, none has to be killed */
	char *log = hub_log(&hub), *stopping = strstr(log, "stopping");

	ck_assert_msg(stopping != NULL && strstr(stopping, "killed by signal") == NULL,
		      "a guest was killed at stop: %.2000s", log);
	free(log);
	/* r[shm.file.cleanup]: no lock, no socket (and no file of memory:
	 * there never was one) */
	ck_assert_msg(access(harness_path("hub0.sock.lock"), F_OK) != 0, "lock left behind");
	ck_assert_msg(access(hub.sock, F_OK) != 0, "socket left behind");
	for (int i = 0; i < n; i++)
		ck_assert_msg(!alive(pids[i]), "guest pid %d outlived hubd", pids[i]);
}

/* r[shm.topology.hub] r[shm.topology.hub.calls] r[shm.guest.attach]
 * r[shm.file.path] r[shm.segment.peer-table] */
START_TEST(test_guests_attach_and_answer)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, STD_GUESTS, "echo,kv,counter");
	ck_assert(hub_wait_method(&hub, "echo.reverse,kv.delete,counter.count") == 0);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	ck_assert_msg(strstr(out, "echo") && strstr(out, "kv") && strstr(out, "counter"),
		      "peers: %s", out);
	free(out);
	/* host -> guest calls, results decoded by the registered signature */
	expect_ctl(0, "hello\n", "call", "echo.echo", "hello", NULL);
	expect_ctl(0, "olléh\n", "call", "echo.reverse", "héllo", NULL);
	expect_ctl(0, "", "call", "kv.put", "colour", "blue", NULL);
	expect_ctl(0, "blue\n", "call", "kv.get", "colour", NULL);
	expect_ctl(0, "colour\n", "call", "kv.list", NULL);
	expect_ctl(0, "", "call", "kv.delete", "colour", NULL);
	expect_ctl(1, "", "call", "kv.get", "colour", NULL);
	/* a stream: the items as they come, then the result */
	expect_ctl(0, "1\n2\n3\n4\n5\n5\n", "call", "counter.count", "5", NULL);
	/* host services */
	expect_ctl(0, "ping\n", "call", "hub.ping", "ping", NULL);
	/* hub.signature: a guest's method, a host service, nobody's */
	expect_ctl(0, "str->str\n", "call", "hub.signature", "echo.reverse", NULL);
	expect_ctl(0, "u64,chan<u64>->u64\n", "call", "hub.signature", "counter.count", NULL);
	expect_ctl(0, "str->str\n", "call", "hub.signature", "hub.signature", NULL);
	expect_ctl(0, "u64,u64->u64\n", "call", "hub.signature", "hub.source", NULL);
	expect_ctl(0, "u64->str\n", "call", "hub.signature", "hub.caller", NULL);
	expect_ctl(0, "str,str->unit\n", "call", "hub.signature", "hub.describe", NULL);
	ck_assert_int_eq(hubctl(&hub, &out, "-j", "call", "hub.signature", "no.such", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "no such method: no.such") != NULL, "hub.signature: %s", out);
	free(out);
	expect_ctl(1, "", "call", "hub.signature", "", NULL);
	stop_clean();
}
END_TEST

START_TEST(test_errors_for_bad_calls)
{
	hub_start_up(&hub, NULL, STD_GUESTS, "echo,counter");
	ck_assert(hub_wait_method(&hub, "echo.echo,counter.count") == 0);
	expect_ctl(1, "", "call", "no.such", NULL);
	expect_ctl(1, "", "call", "echo.echo", NULL);		/* too few arguments */
	expect_ctl(1, "", "call", "counter.count", "x", NULL);	/* not a u64 */
	expect_ctl(2, "", "frobnicate", NULL);
	stop_clean();
}
END_TEST

/* r[shm.topology.hub.communication] r[shm.id.request-scope]: guest to guest
 * through the host, request ids its own per pair */
START_TEST(test_guest_to_guest_routing)
{
	hub_start_up(&hub, NULL, STD_GUESTS "[guest prober]\nexec = @/tests/guests/prober\n",
	      "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.route,prober.invalid,prober.concurrent,"
				  "prober.asmap") == 0);
	/* a guest's call routed by the host to another guest and back */
	expect_ctl(0, "hi there\n", "call", "prober.route", "echo.echo", "hi there", NULL);
	/* guests call host services too */
	expect_ctl(0, "pong\n", "call", "prober.route", "hub.ping", "pong", NULL);
	expect_ctl(0, "error: unknown method\n", "call", "prober.route", "no.such", "x", NULL);
	/* hub.signature from a guest: known, and Err User for an unknown name */
	expect_ctl(0, "str,str->str\n", "call", "prober.route", "hub.signature", "prober.route", NULL);
	expect_ctl(0, "error: hub\n", "call", "prober.route", "hub.signature", "no.such", NULL);
	expect_ctl(0, "error: invalid payload\n", "call", "prober.invalid", NULL);
	expect_ctl(0, "64\n", "call", "prober.concurrent", "64", NULL);
	/* a result that is not of the method's type: the method named */
	expect_ctl(1, "{\"ok\":false,\"error\":\"prober.badresult returned a value that does "
		   "not match its signature ->u64\"}\n", "-j", "call", "prober.badresult", NULL);
	/* a value of more values than hubd shows: said so, hubd unharmed */
	expect_ctl(0, "[true,true,true]\n", "call", "prober.bools", "3", NULL);
	expect_ctl(1, "{\"ok\":false,\"error\":\"prober.bools returned more than 1048576 "
		   "values: too many to show\"}\n", "-j", "call", "prober.bools", "2000000", NULL);
	expect_ctl(0, "[true]\n", "call", "prober.bools", "1", NULL);
	/* a map whose keys JSON cannot show, "a" twice or "a\0b": refused,
	 * where the last "a" stood and "a\0b" was shown as "a" */
	expect_ctl(0, "{\"a\":1,\"b\":2}\n", "call", "prober.asmap", "base64:AgFhAQFiAg==", NULL);
	expect_ctl(1, "{\"ok\":false,\"error\":\"prober.asmap returned a map with a key twice, "
		   "or one with a NUL byte, which JSON cannot show (signature "
		   "bytes->map<str,u64>)\"}\n", "-j", "call", "prober.asmap",
		   "base64:AgFhAQFhAg==", NULL);
	expect_ctl(1, "{\"ok\":false,\"error\":\"prober.asmap returned a map with a key twice, "
		   "or one with a NUL byte, which JSON cannot show (signature "
		   "bytes->map<str,u64>)\"}\n", "-j", "call", "prober.asmap", "base64:AQNhAGIB", NULL);
	stop_clean();
}
END_TEST

/* A call's error reaches the caller as text, the same from guest_call
 * and guest_call_async; the callee's (guest_reply_error: user) apart from
 * the hub's own (hub). */
START_TEST(test_error_text)
{
	double until;

	hub_start_up(&hub, NULL, STD_GUESTS "[guest prober]\nexec = @/tests/guests/prober\n",
		     "kv,prober");
	ck_assert(hub_wait_method(&hub, "kv.get,prober.why") == 0);
	expect_ctl(0, "user: no such key | user: no such key\n",
		   "call", "prober.why", "kv.get", "nokey", NULL);
	expect_ctl(0, "unknown method: no such method | unknown method: no such method\n",
		   "call", "prober.why", "no.such", "x", NULL);
	expect_ctl(0, "hub: no such method: no.such | hub: no such method: no.such\n",
		   "call", "prober.why", "hub.signature", "no.such", NULL);
	/* the callee stopped: hubd answers for it */
	expect_ctl(0, NULL, "stop", "kv", NULL);
	until = now_s() + 30;
	while (strcmp(hub_peer_state(&hub, "kv"), "down") != 0 && now_s() < until)
		sleep_ms(20);
	ck_assert_str_eq(hub_peer_state(&hub, "kv"), "down");
	expect_ctl(0, "hub: guest kv is down | hub: guest kv is down\n",
		   "call", "prober.why", "kv.get", "nokey", NULL);
	stop_clean();
}
END_TEST

/* A second answer to a call is refused (-EALREADY), from the handler
 * and from a callback after it returned; the guest serves on. */
START_TEST(test_second_answer_is_refused)
{
	pid_t pid;

	hub_start_up(&hub, NULL, "[guest prober]\nexec = @/tests/guests/prober\n", "prober");
	ck_assert(hub_wait_method(&hub, "prober.twice") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	expect_ctl(0, "first\n", "call", "prober.twice", "0", NULL);
	expect_ctl(0, "EALREADY EALREADY\n", "call", "prober.twice_rc", NULL);
	expect_ctl(1, NULL, "call", "prober.twice", "1", NULL);
	expect_ctl(0, "EALREADY EALREADY\n", "call", "prober.twice_rc", NULL);
	expect_ctl(0, "first\n", "call", "prober.twice", "2", NULL);
	expect_ctl(0, "EALREADY EALREADY\n", "call", "prober.twice_rc", NULL);
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "pid"), pid);
	stop_clean();
}
END_TEST

/* hubctl stop of a C guest: libguest takes SIGTERM for a clean detach
 * (guest_run returns 0), the example exits 0, and hubd records an exit
 * with status 0, not a crash by signal 15; the same on microthreads. */
START_TEST(test_sigterm_is_a_clean_detach)
{
	static const char *const names[] = { "echo", "fanout" };

	hub_start_up(&hub, NULL, STD_GUESTS "[guest fanout]\nexec = @/guests/fanout\n",
		     "echo,fanout");
	for (int i = 0; i < 2; i++) {
		json_object *p, *deaths, *d;
		double until = now_s() + 10;

		expect_ctl(0, NULL, "stop", names[i], NULL);
		while (strcmp(hub_peer_state(&hub, names[i]), "down") != 0 && now_s() < until)
			sleep_ms(20);
		ck_assert_str_eq(hub_peer_state(&hub, names[i]), "down");
		ck_assert_ptr_nonnull(p = hub_peer(&hub, names[i]));
		ck_assert(json_object_object_get_ex(p, "deaths", &deaths));
		ck_assert_int_eq(json_object_array_length(deaths), 1);
		d = json_object_array_get_idx(deaths, 0);
		ck_assert_msg(strcmp(json_object_get_string(json_get(d, "reason")), "exited") == 0 &&
			      json_object_get_int(json_get(d, "status")) == 0,
			      "%s: %s", names[i], json_object_to_json_string(d));
		ck_assert_int_eq(hub_peer_int(&hub, names[i], "restarts"), 0);
		json_object_put(p);
	}
	stop_clean();
}
END_TEST

/* hubctl stop of a guest whose handler waits for an answer that comes
 * only with a Cancel (p2.wait, asked for a minute), in guest_run (_i 0)
 * and in a loop of its own, guest_service (_i 1): libguest ends the
 * wait (-ESHUTDOWN), the handler answers its caller, the callee gets the
 * Cancel, and the guest exits 0 by itself. Before, the wait went on and
 * stop_grace's SIGKILL came first; and hubd served a stopping guest's
 * ring no more, so its answer and Cancel were lost (r[shm.guest.detach]:
 * in-flight work completed or cancelled). */
/* p1 on guest_run, in its own poll loop (guest_service), and on
 * microthreads (guest_run_mt), with the method that calls another's
 * with a timeout */
static const char *const p1_runtimes[] = {
	"[guest p1]\nexec = @/tests/guests/prober\nargs = --prefix p1\n",
	"[guest p1]\nexec = @/tests/guests/prober\nargs = --prefix p1 --poll\n",
	"[guest p1]\nexec = @/tests/guests/mtprober\nargs = --prefix p1 --processors 2\n",
};
#define P1_CALLER(i)	((i) == 2 ? "p1.call_timeout" : "p1.route_timeout")

/* Starts p1 (p1_runtimes[i]) and p2, and p1's handler waiting for
 * p2.wait, which answers only when cancelled, called by a child; the
 * read end of a pipe the child's "STATUS OUTPUT" comes on. */
static pid_t
handler_waiting(int i, const char *hub_keys, const char *more_guests, int *rfd)
{
	char conf[1024];
	int fds[2];
	pid_t caller;

	snprintf(conf, sizeof(conf), STD_GUESTS "%s"
		 "[guest p2]\nexec = @/tests/guests/prober\nargs = --prefix p2\n%s",
		 p1_runtimes[i], more_guests != NULL ? more_guests : "");
	hub_start_up(&hub, hub_keys, conf, "p1,p2");
	ck_assert(hub_wait_method(&hub, "p2.wait,p2.cancels") == 0);
	ck_assert(hub_wait_method(&hub, P1_CALLER(i)) == 0);
	ck_assert_int_eq(pipe(fds), 0);
	if ((caller = fork()) == 0) {
		char *res = NULL;
		int rc = hubctl(&hub, &res, "call", P1_CALLER(i), "p2.wait", "60000",
				(char *)NULL);

		dprintf(fds[1], "%d %s%s", rc, res != NULL ? res : "", hubctl_stderr());
		_exit(0);
	}
	ck_assert_int_gt(caller, 0);
	close(fds[1]);
	ck_assert_msg(hub_wait_in_flight(&hub, "p2.wait") == 0, "p2.wait never in flight");
	*rfd = fds[0];
	return caller;
}

START_TEST(test_stop_ends_a_handlers_wait)
{
	char out[256] = "";
	double until;
	int rfd, status;
	/* a stop_grace far past the test's bounds: only p1's own exit ends it */
	pid_t caller = handler_waiting(_i, "stop_grace = 300s\n", NULL, &rfd);

	expect_ctl(0, NULL, "stop", "p1", NULL);
	read_all(rfd, out, sizeof(out));
	close(rfd);
	waitpid(caller, &status, 0);
	/* the handler's own answer, not hubd's "guest p1 died" */
	ck_assert_msg(strncmp(out, "0 error: ", 9) == 0 && strstr(out, "died") == NULL,
		      "the caller got: %s; %s", out, hub_log_tail(&hub));
	until = now_s() + 30;
	while (strcmp(hub_peer_state(&hub, "p1"), "down") != 0 && now_s() < until)
		sleep_ms(20);
	ck_assert_str_eq(hub_peer_state(&hub, "p1"), "down");
	expect_exited_0("p1");
	wait_answer("p2.cancels", "1\n");	/* the Cancel came */
	stop_clean();
}
END_TEST

/* p1 is killed while its handler waits for p2.wait: p2 is told with
 * Cancel, as when a control client goes, and its handler ends (before,
 * it waited for a caller that was gone until its own end). */
START_TEST(test_caller_killed_cancels_its_calls)
{
	char out[256] = "";
	int rfd, status;
	pid_t caller = handler_waiting(0, NULL, NULL, &rfd);

	ck_assert_int_eq(kill(hub_peer_int(&hub, "p1", "pid"), SIGKILL), 0);
	read_all(rfd, out, sizeof(out));
	close(rfd);
	waitpid(caller, &status, 0);
	ck_assert_msg(strncmp(out, "1 ", 2) == 0 && strstr(out, "p1") != NULL,
		      "the caller got: %s; %s", out, hub_log_tail(&hub));
	wait_answer("p2.cancels", "1\n");	/* the Cancel came */
	stop_clean();
}
END_TEST

/* Another guest's Cancels of every request id there is, while p1's call
 * waits at p2 (p1's request ids are among them): none reaches p2, and
 * the canceller is not ended for them (a Cancel may race its answer).
 * (test_cancel_reaches_the_callee: a caller's own Cancel.) hubd finds a Cancel's call in its caller's
 * index (answer.c), where it once walked every guest's pending calls for
 * each: 65536 of them made hubd do that many walks. */
START_TEST(test_cancels_of_calls_never_made_go_nowhere)
{
	char out[256] = "", *logs = NULL;
	int rfd, status, i;
	pid_t caller = handler_waiting(0, NULL, "[guest bad]\nexec = @/tests/guests/violator\n"
				       "args = --mode=cancels --on-term\nrestart = never\n", &rfd);

	for (i = 0; i < 1500 && strcmp(hub_peer_state(&hub, "bad"), "up") != 0; i++)
		sleep_ms(20);
	ck_assert_str_eq(hub_peer_state(&hub, "bad"), "up");
	/* SIGTERM from us, not hubd: the violator's signal to start */
	ck_assert_int_eq(kill(hub_peer_int(&hub, "bad", "pid"), SIGTERM), 0);
	for (i = 0; i < 3000; i++) {
		free(logs);
		logs = NULL;
		hubctl_ok(&hub, &logs, "logs", "bad", (char *)NULL);
		if (strstr(logs, "cancels sent") != NULL)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(i < 3000, "no \"cancels sent\": %s; %s", logs, hub_log_tail(&hub));
	free(logs);
	ck_assert_str_eq(hub_peer_state(&hub, "bad"), "up");
	expect_ctl(0, "0\n", "call", "p2.cancels", NULL);
	ck_assert_msg(hub_wait_in_flight(&hub, "p2.wait") == 0, "p1's call ended");
	ck_assert_int_eq(kill(hub_peer_int(&hub, "p1", "pid"), SIGKILL), 0);
	read_all(rfd, out, sizeof(out));
	close(rfd);
	waitpid(caller, &status, 0);
	wait_answer("p2.cancels", "1\n");	/* p1's death's Cancel */
	/* the violator ignores a hub's goodbye: it goes before the stop */
	ck_assert_int_eq(kill(hub_peer_int(&hub, "bad", "pid"), SIGKILL), 0);
	for (i = 0; i < 1500 && strcmp(hub_peer_state(&hub, "bad"), "down") != 0; i++)
		sleep_ms(20);
	stop_clean();
}
END_TEST

/* Whether pid blocks SIGTERM (its SigBlk in /proc). */
static int
sigterm_blocked(int pid)
{
	char path[64], line[128];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
	return (mask >> (SIGTERM - 1) & 1) != 0;
}

/* A guest stopped while it starts that attaches all the same (the
 * SIGTERM came during its attach): hubd serves it as it winds down, so
 * that its calls to the hub (registering its methods) are answered and
 * it ends by itself at once. Before, hubd ignored its attach, its first
 * call waited unanswered (10 s), and stop_grace killed it ("did not stop
 * in time": a bridge stopped just after it started). */
START_TEST(test_stopped_while_starting_ends_by_itself)
{
	char *out = NULL, *log;
	int i;

	ck_assert_int_eq(hub_start(&hub, "stop_grace = 60s\n",
				   "[guest late]\nexec = @/tests/guests/prober\n"
				   "args = --prefix late --term-first\nrestart = never\n"), 0);
	for (i = 0; i < 1500 && hub_peer_int(&hub, "late", "pid") <= 0; i++)
		sleep_ms(20);
	ck_assert_str_eq(hub_peer_state(&hub, "late"), "starting");
	/* its SIGTERM blocked first: sent before, it would kill it as its
	 * default action (the test's race, not hubd's) */
	for (i = 0; i < 1500 && !sigterm_blocked(hub_peer_int(&hub, "late", "pid")); i++)
		sleep_ms(20);
	ck_assert_msg(i < 1500, "prober never blocked SIGTERM: %s", hub_log_tail(&hub));
	hubctl_ok(&hub, &out, "stop", "late", (char *)NULL);
	free(out);
	for (i = 0; i < 4500 && strcmp(hub_peer_state(&hub, "late"), "down") != 0; i++)
		sleep_ms(20);
	ck_assert_msg(i < 4500, "it never went down: %s", hub_log_tail(&hub));
	expect_exited_0("late");
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "guest late: attached as peer") != NULL &&
		      strstr(log, ", stopping\n") != NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest stopped before it attached (its uptime "-" meanwhile), which
 * dies of hubd's SIGTERM (the signal's default action: no libguest yet
 * to turn it into an exit), was stopped as asked: its death says
 * "stopped". Before, it read "crashed SIGTERM" (with "killed by signal
 * 15" in the log), though nothing crashed; a restart's stop too. */
START_TEST(test_stopped_before_attaching_is_no_crash)
{
	json_object *p, *d;
	char *out = NULL, *log;
	int i;

	ck_assert_int_eq(hub_start(&hub, NULL, "[guest mute]\nexec = /bin/sh\n"
				   "args = -c \"exec sleep 600\"\nrestart = never\n"), 0);
	for (i = 0; i < 1500 && hub_peer_int(&hub, "mute", "pid") <= 0; i++)
		sleep_ms(20);
	ck_assert_str_eq(hub_peer_state(&hub, "mute"), "starting");
	/* running, not up: no uptime yet (it read "0 ns") */
	hubctl_ok(&hub, &out, "peers", "mute", (char *)NULL);
	ck_assert_msg(strstr(out, "\nuptime: -\n") != NULL, "%s", out);
	free(out);
	hubctl_ok(&hub, &out, "stop", "mute", (char *)NULL);
	free(out);
	for (i = 0; i < 1500 && strcmp(hub_peer_state(&hub, "mute"), "down") != 0; i++)
		sleep_ms(20);
	ck_assert_msg(i < 1500, "it never went down: %s", hub_log_tail(&hub));
	ck_assert_ptr_nonnull(p = hub_peer(&hub, "mute"));
	d = json_object_array_get_idx(json_get(p, "deaths"), 0);
	ck_assert_msg(d != NULL && strcmp(json_object_get_string(json_get(d, "reason")),
					  "stopped") == 0 &&
		      strcmp(json_object_get_string(json_get(d, "signal")), "SIGTERM") == 0,
		      "%s", json_object_to_json_string(p));
	json_object_put(p);
	hubctl_ok(&hub, &out, "peers", "mute", (char *)NULL);
	ck_assert_msg(strstr(out, ": stopped, status 15 (SIGTERM)") != NULL &&
		      strstr(out, "crashed") == NULL,
		      "%s", out);
	free(out);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "guest mute: stopped by the SIGTERM that asked it to") !=
		      NULL && strstr(log, "killed by signal") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The hub stops while p1's handler waits for its call: p1 ends cleanly
 * with it, whatever its runtime, never crashing (on microthreads it did:
 * its abandoned handler's answer slot lay on a freed stack). */
START_TEST(test_hub_stop_while_a_handler_waits)
{
	char out[256] = "", *log;
	int rfd, status;
	pid_t caller = handler_waiting(_i, NULL, NULL, &rfd);

	ck_assert_int_eq(hub_stop(&hub), 0);
	read_all(rfd, out, sizeof(out));
	close(rfd);
	waitpid(caller, &status, 0);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "fatal signal") == NULL && strstr(log, "killed by") == NULL,
		      "%s", hub_log_tail(&hub));
	free(log);
}
END_TEST

START_TEST(test_polled_guest_and_inherited_fds)
{
	double until;

	/* a plugin with its own poll() loop serves as well as guest_run; a
	 * long heartbeat makes its poll timeout (half of it) 30 s, and a
	 * stop's grace longer still */
	hub_start_up(&hub, "heartbeat_interval = 60s\nstop_grace = 60s\n",
	    STD_GUESTS "[guest prober]\nexec = @/tests/guests/prober\nargs = --poll\n",
	      "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.route,prober.concurrent,prober.fds") == 0);
	/* each call rings its fd, the first too (the loop polls before it
	 * ever called guest_service): none waits for the poll timeout to
	 * be heard (a bound far from both: a loaded machine, and 30 s) */
	for (int i = 0; i < 5; i++) {
		double t0 = now_s();

		expect_ctl(0, "polled\n", "call", "prober.route", "echo.echo", "polled", NULL);
		ck_assert_msg(now_s() - t0 < 15, "call %d through a polled guest took %.3f s",
			      i, now_s() - t0);
	}
	expect_ctl(0, "64\n", "call", "prober.concurrent", "64", NULL);
	/* r[shm.spawn.fd-inheritance]: stdio, the doorbell, its domain, its
	 * pool and its bells (7, 8), nothing else */
	expect_ctl(0, "0 1 2 3 5 6 7 8\n", "call", "prober.fds", NULL);
	/* SIGTERM (guest_stop) makes guest_fd readable and guest_service
	 * end the loop: a clean exit, well before the poll timeout (it
	 * spun before, until SIGKILL) */
	until = now_s() + 15;
	expect_ctl(0, NULL, "stop", "prober", NULL);
	while (strcmp(hub_peer_state(&hub, "prober"), "down") != 0 && now_s() < until)
		sleep_ms(20);
	ck_assert_str_eq(hub_peer_state(&hub, "prober"), "down");
	expect_exited_0("prober");
	stop_clean();
}
END_TEST

START_TEST(test_one_mib_payload)
{
	/* r[shm.payload.slot]: a payload far over 32 bytes goes in a slot */
	hub_start_up(&hub, "slot_size = 1040K\nslots_per_guest = 4\n",
	      STD_GUESTS "[guest prober]\nexec = @/tests/guests/prober\n", "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big") == 0);
	expect_ctl(0, "1048576\n", "call", "prober.big", "1048576", NULL);
	expect_ctl(0, "40\n", "call", "prober.big", "40", NULL);
	stop_clean();
}
END_TEST

START_TEST(test_stream_with_small_credit)
{
	char *out = NULL;
	unsigned long long bytes = 0, waits = 0;
	char sum[32];

	/* r[shm.flow.zero-credit]: 256 MiB through a 64 KiB window, every
	 * byte counted and checksummed by the host; whether the sender ever
	 * finds the window empty depends on who runs faster (the wait and its
	 * wake: test_grant_wakes_a_sender_out_of_credit) */
	hub_start_up(&hub, "initial_credit = 64K\nslot_size = 32K\n", STD_GUESTS, "counter");
	ck_assert(hub_wait_method(&hub, "counter.stream") == 0);
	ck_assert_int_eq(hubctl(&hub, &out, "call", "counter.stream", "268435456", "16384",
				(char *)NULL), 0);
	ck_assert_msg(sscanf(out, "ok %llu %31s %llu", &bytes, sum, &waits) == 3,
		      "counter.stream: %s", out);
	ck_assert_msg(bytes == 268435456ull, "bytes %llu", bytes);
	fprintf(stderr, "256 MiB through a 64 KiB window: %llu credit waits\n", waits);
	free(out);
	stop_clean();
}
END_TEST

START_TEST(test_stream_to_a_guest)
{
	/* r[shm.flow.ordering.sender] r[shm.flow.ordering.receiver]: the host
	 * sends, the guest grants; 64 MiB through a 16 KiB window */
	hub_start_up(&hub, "initial_credit = 16K\n",
	    STD_GUESTS "[guest prober]\nexec = @/tests/guests/prober\n",
	      "prober");
	ck_assert(hub_wait_method(&hub, "prober.pull") == 0);
	expect_ctl(0, "ok 67108864\n", "call", "prober.pull", "67108864", NULL);
	expect_ctl(0, "ok 0\n", "call", "prober.pull", "0", NULL);
	stop_clean();
}
END_TEST

START_TEST(test_cancel_reaches_the_callee)
{
	hub_start_up(&hub, NULL, STD_GUESTS
	      "[guest p1]\nexec = @/tests/guests/prober\nargs = --prefix p1\n"
	      "[guest p2]\nexec = @/tests/guests/prober\nargs = --prefix p2\n", "p1,p2");
	/* p1's call to p2.wait times out; libguest sends Cancel, the host
	 * routes it, p2 answers Cancelled */
	ck_assert(hub_wait_method(&hub, "p1.route_timeout,p2.wait,p2.cancels") == 0);
	expect_ctl(0, "error: timeout\n", "call", "p1.route_timeout", "p2.wait", "200", NULL);
	wait_answer("p2.cancels", "1\n");	/* the Cancel came */
	stop_clean();
}
END_TEST

struct violation {
	const char	*mode;
	const char	*rule;
	const char	*hub_keys;
};

static const struct violation violations[] = {
	{ "msgtype", "shm.desc.msg-type", NULL },
	{ "slot", "shm.payload.slot", NULL },
	{ "generation", "shm.slot.generation", NULL },
	{ "offset", "shm.slot.payload-offset", NULL },
	{ "parity", "shm.id.channel-parity", NULL },
	{ "credit", "shm.flow.remaining-credit", "initial_credit = 4K\n" },
	{ "postcard", "shm.payload.encoding", NULL },
	{ "response", "shm.id.request-id", NULL },	/* r[shm.id.request-id] */
	{ "epoch", "shm.crash.epoch", NULL },		/* r[shm.crash.epoch] */
};


/* r[shm.host.poll-peers]: the host looks at its peers and ends the one
 * that broke a rule */
START_TEST(test_violation_ends_only_the_violator)
{
	const struct violation *v = &violations[_i];
	char guests[512], *log;
	json_object *p = NULL, *deaths, *d, *x;
	int i;

	snprintf(guests, sizeof(guests), STD_GUESTS
		 "[guest bad]\nexec = @/tests/guests/violator\nargs = --mode=%s\n"
		 "restart = never\n", v->mode);
	hub_start_up(&hub, v->hub_keys, guests, "echo");
	if (strcmp(v->mode, "postcard") == 0) {
		/* it answers our call with bytes that are not a Response */
		ck_assert(hub_wait_method(&hub, "bad.call") == 0);
		expect_ctl(1, "", "call", "bad.call", NULL);
	}
	for (i = 0; i < 1500; i++) {
		json_object_put(p);
		p = hub_peer(&hub, "bad");
		if (p != NULL && json_object_object_get_ex(p, "deaths", &deaths) &&
		    json_object_array_length(deaths) > 0)
			break;
		usleep(20000);
	}
	ck_assert_msg(i < 1500, "mode %s: the violator was not ended: %s", v->mode,
		      log = hub_log(&hub));
	d = json_object_array_get_idx(deaths, 0);
	json_object_object_get_ex(d, "reason", &x);
	ck_assert_str_eq(json_object_get_string(x), "protocol violation");
	json_object_object_get_ex(d, "detail", &x);
	ck_assert_msg(strstr(json_object_get_string(x), v->rule) != NULL,
		      "mode %s: detail '%s', want rule %s", v->mode,
		      json_object_get_string(x), v->rule);
	json_object_put(p);
	/* r[shm.goodbye.payload]: the Goodbye named the rule in the log too */
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, v->rule) != NULL, "log: %.2000s", log);
	free(log);
	/* the others go on */
	expect_ctl(0, "still here\n", "call", "echo.echo", "still here", NULL);
	stop_clean();
}
END_TEST

/* A guest told to stop is served until it exits (r[shm.guest.detach]);
 * one that breaks a rule meanwhile is ended at once for it, not left
 * running, unchecked, until stop_grace (300 s here) is over. */
START_TEST(test_violation_while_stopping_ends_it)
{
	json_object *p = NULL, *deaths, *d;
	int i;

	hub_start_up(&hub, "stop_grace = 300s\n", STD_GUESTS
		     "[guest bad]\nexec = @/tests/guests/violator\n"
		     "args = --mode=msgtype --on-term\nrestart = never\n", "echo,bad");
	expect_ctl(0, NULL, "stop", "bad", NULL);
	for (i = 0; i < 3000; i++) {
		json_object_put(p);
		p = hub_peer(&hub, "bad");
		if (p != NULL && json_object_object_get_ex(p, "deaths", &deaths) &&
		    json_object_array_length(deaths) > 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(i < 3000, "the violator, stopping, was not ended: %s", hub_log_tail(&hub));
	d = json_object_array_get_idx(deaths, 0);
	ck_assert_msg(strcmp(json_object_get_string(json_get(d, "reason")), "protocol violation") == 0 &&
		      strstr(json_object_get_string(json_get(d, "detail")), "shm.desc.msg-type") != NULL,
		      "bad: %s", json_object_to_json_string(d));
	json_object_put(p);
	expect_ctl(0, "still here\n", "call", "echo.echo", "still here", NULL);
	stop_clean();
}
END_TEST

/* r[shm.guest.attach]: a guest sets Attached (4), then increments its
 * epoch (5). The host waits for both: a guest slow between the two is not
 * recorded with the old epoch and then ended for changing it
 * (r[shm.crash.epoch]). */
START_TEST(test_slow_attach_keeps_its_epoch)
{
	int pid;

	hub_start_up(&hub, NULL, "[guest late]\nexec = @/tests/guests/lateepoch\n"
		     "restart = never\n", "late");
	pid = hub_peer_int(&hub, "late", "pid");
	sleep_ms(1500);		/* six ticks: heartbeat and epoch checks */
	ck_assert_msg(strcmp(hub_peer_state(&hub, "late"), "up") == 0 &&
		      hub_peer_int(&hub, "late", "pid") == pid,
		      "state %s; log: %s", hub_peer_state(&hub, "late"), hub_log(&hub));
	stop_clean();
}
END_TEST

/* r[shm.crash.heartbeat]: a guest's first beat may come a while after it
 * attached (libguest's comes just after, a guest preempted there later):
 * the host counts its quiet from the attach, not from the entry's word,
 * 0 until then, which made it hung at the first look (a well-behaved
 * guest of the chaos test, on a loaded machine). */
START_TEST(test_first_beat_after_attach)
{
	int pid;

	hub_start_up(&hub, "heartbeat_interval = 1s\n",
		     "[guest late]\nexec = @/tests/guests/lateepoch\nargs = --beat-late\n"
		     "restart = never\n", "late");
	pid = hub_peer_int(&hub, "late", "pid");
	sleep_ms(1000);		/* ticks while it has not beaten, and after */
	ck_assert_msg(strcmp(hub_peer_state(&hub, "late"), "up") == 0 &&
		      hub_peer_int(&hub, "late", "pid") == pid,
		      "state %s; log: %s", hub_peer_state(&hub, "late"), hub_log_tail(&hub));
	stop_clean();
}
END_TEST

START_TEST(test_spec_only_guest_is_woken)
{
	/* r[shm.wakeup.consumer-wait]: it sleeps in futex_wait on its ring
	 * head for 60 s; only the host's futex_wake gets the answer in time */
	hub_start_up(&hub, "heartbeat_interval = 0\n",
	    "[guest spec]\nexec = @/tests/guests/specguest\n"
	    "[guest prober]\nexec = @/tests/guests/prober\n", "spec,prober");
	ck_assert(hub_wait_method(&hub, "spec.echo,prober.why") == 0);
	expect_ctl(0, "woken\n", "call", "spec.echo", "woken", NULL);
	expect_ctl(0, "again\n", "call", "spec.echo", "again", NULL);
	/* a guest's error that claims to be the hub's is the guest's */
	expect_ctl(0, "user: forged | user: forged\n", "call", "prober.why", "spec.echo",
		   "forge", NULL);
	stop_clean();
}
END_TEST

/* Runs path with argv until it exits, its stderr (and its stdout too when
 * both) into out; its wait status. */
static int
run_captured(const char *path, char *const argv[], int both, char *out, size_t cap)
{
	int pipefd[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(pipefd), 0);
	if ((pid = fork()) == 0) {
		if (both)
			dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execv(path, argv);
		_exit(127);
	}
	close(pipefd[1]);
	read_all(pipefd[0], out, cap);
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return status;
}

START_TEST(test_guest_without_ticket)
{
	char *argv[] = { "echo", NULL };
	char buf[512] = "";
	int status;

	/* r[shm.spawn.args]: started by hand, it says what it needs */
	status = run_captured(bin("guests/echo"), argv, 0, buf, sizeof(buf));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
	ck_assert_msg(strstr(buf, "--hub-path") != NULL, "stderr: %s", buf);
}
END_TEST

/* hubd -n on a config: exit status and what it printed. */
static int
check_config(const char *text, char *out, size_t cap)
{
	char path[] = "/tmp/hub-e2e-conf-XXXXXX";
	char *argv[] = { "hubd", "-n", "-f", path, NULL };
	int fd = mkstemp(path), status;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	status = run_captured(bin("hubd"), argv, 1, out, cap);
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(test_check_config)
{
	const char *d98 = "/tmp/hub-e2e-long/" "0123456789012345678901234567890123456789"
	    "01234567890123456789012345678901234.sock";	/* 98 bytes */
	char out[2048], text[512];

	ck_assert_int_eq(check_config("[hub]\nring_size = 64\n[guest a]\nexec = /bin/true\n",
				      out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "OK") != NULL, "%s", out);
	ck_assert_int_eq(check_config("[hub]\nring_size = 63\n", out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":2: ring_size: 63 is not a power of two") != NULL, "%s", out);
	ck_assert_int_eq(check_config("[hub]\n\nbogus = 1\n", out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":3: unknown key") != NULL, "%s", out);
	/* what it names: a guest that cannot start is a warning (the hub
	 * runs on without it), a socket hubd cannot make an error */
	ck_assert_int_eq(check_config("[guest a]\nexec = /etc/passwd\n\n[guest b]\n"
				      "exec = /nonexistent/b\n[guest c]\nexec = /tmp\n",
				      out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, ":1: warning: guest a: exec /etc/passwd: not executable: "
			     "it will not start\n") != NULL &&
		      strstr(out, ":4: warning: guest b: exec /nonexistent/b: No such file or "
			     "directory: it will not start\n") != NULL &&
		      strstr(out, ":6: warning: guest c: exec /tmp: not a regular file") != NULL &&
		      strstr(out, "configuration OK (3 guests)\n") != NULL, "%s", out);
	ck_assert_int_eq(check_config("[hub]\n\ncontrol = /nonexistent/hub/hubd.sock\n",
				      out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":3: control /nonexistent/hub/hubd.sock: /nonexistent does "
			     "not exist: hubd makes the socket's own directory only, not the "
			     "ones above it\n") != NULL && strstr(out, "OK") == NULL, "%s", out);
	ck_assert_int_eq(check_config("[hub]\ncontrol = /etc/passwd/hub/hubd.sock\n",
				      out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":2: control /etc/passwd/hub/hubd.sock: /etc/passwd is not "
			     "a directory: hubd") != NULL, "%s", out);
	/* a problem between keys is at the line of the key it names (it was
	 * at the [hub] line), or of the later of the two */
	ck_assert_int_eq(check_config("[hub]\n\nslot_size = 100\n", out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":3: [hub]: slot_size must be a multiple of 64") != NULL,
		      "%s", out);
	ck_assert_int_eq(check_config("[hub]\n\nmax_payload_size = 65533\n", out, sizeof(out)),
			 1);
	ck_assert_msg(strstr(out, ":3: [hub]: max_payload_size must be 1 to slot_size") != NULL,
		      "%s", out);
	ck_assert_int_eq(check_config("[hub]\nmax_channels = 8\n\nchannels_per_caller = 100\n",
				      out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":4: channels_per_caller is 100") != NULL, "%s", out);
	ck_assert_int_eq(check_config("[guest a]\nexec = /bin/true\n\nbackoff_max = 0\n",
				      out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":4: guest 'a': backoff_min (100 ms) is above backoff_max "
			     "(0 ns)\n") != NULL, "%s", out);
	ck_assert_int_eq(check_config("[guest a]\nexec = /bin/true\n", out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "configuration OK (1 guest)\n") != NULL, "%s", out);
	/* a socket's path holds 107 bytes: the control socket's, and the
	 * ticket socket beside it of each guest started by hand */
	ck_assert_uint_eq(strlen(d98), 98);
	snprintf(text, sizeof(text), "[hub]\ncontrol = %s0123456789\n", d98);
	ck_assert_int_eq(check_config(text, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, ":2: control /tmp/hub-e2e-long/") != NULL &&
		      strstr(out, ".sock0123456789: socket path too long (108 bytes, at most "
			     "107): hubd cannot start\n") != NULL && strstr(out, "OK") == NULL,
		      "%s", out);
	snprintf(text, sizeof(text), "[hub]\ncontrol = %s\n[guest a]\nexec = /bin/true\n"
		 "start = manual\n\n[guest b]\nexec = /bin/true\n[guest cd]\n"
		 "exec = x\nstart = manual\n", d98);
	ck_assert_int_eq(check_config(text, out, sizeof(out)), 1);
	/* a's is 107 bytes, cd's 108 */
	ck_assert_msg(strstr(out, ":9: guest cd: ticket socket path too long (108 bytes, at "
			     "most 107): it cannot be started by hand\n") != NULL &&
		      strstr(out, "guest a") == NULL && strstr(out, "guest b") == NULL &&
		      strstr(out, "OK") == NULL, "%s", out);
}
END_TEST

START_TEST(test_one_hubd_per_segment)
{
	char *argv[] = { "hubd", "-f", hub.conf, NULL };
	char out[2048];
	int status;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\n", "echo");
	status = run_captured(bin("hubd"), argv, 0, out, sizeof(out));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
		      strstr(out, "another hubd") != NULL, "second hubd: %d %s", status, out);
	/* and the first one is undisturbed */
	expect_ctl(0, "x\n", "call", "echo.echo", "x", NULL);
	stop_clean();
}
END_TEST

/* A method's "where" in hubctl methods' JSON (a new string), NULL for none. */
static char *
method_where(const char *name)
{
	json_object *a = hub_request(&hub, "{\"cmd\":\"methods\"}", NULL), *ms;
	char *where = NULL;
	int seen = 0;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(ms = json_get(a, "methods"));
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i), *w;

		if (strcmp(json_object_get_string(json_get(m, "name")), name) != 0)
			continue;
		seen = 1;
		if ((w = json_get(m, "where")) != NULL)
			where = strdup(json_object_get_string(w));
	}
	json_object_put(a);
	ck_assert_msg(seen, "%s not listed", name);
	return where;
}

/* A guest's "note" in hubctl peers' JSON (a new string), NULL for none. */
static char *
peer_note(const char *name)
{
	json_object *p = hub_peer(&hub, name), *n;
	char *note = NULL;

	ck_assert_ptr_nonnull(p);
	if ((n = json_get(p, "note")) != NULL)
		note = strdup(json_object_get_string(n));
	json_object_put(p);
	return note;
}

static void
expect_where(const char *method, const char *want)
{
	char *where = method_where(method);

	ck_assert_msg(want == NULL ? where == NULL : where != NULL && strcmp(where, want) == 0,
		      "%s: where '%s', want '%s'", method, where ? where : "(none)",
		      want ? want : "(none)");
	free(where);
}

static void
expect_note(const char *guest, const char *want)
{
	char *note = peer_note(guest);

	ck_assert_msg(want == NULL ? note == NULL : note != NULL && strcmp(note, want) == 0,
		      "%s: note '%s', want '%s'", guest, note ? note : "(none)",
		      want ? want : "(none)");
	free(note);
}

#define BRIDGE_WHERE	"NATS: hub b, hub c"
#define BRIDGE_NOTE	"NATS nats://10.0.0.2:4222: connected, 2 remote hubs"

/* hub.describe: a guest says where a method of its is really served
 * (WHERE in hubctl methods) and how it is (a note in hubctl peers);
 * hubd refuses what is not its to describe or not fit to print, and
 * changes nothing then; a restarted guest's words are gone. */
START_TEST(test_describe)
{
	char *out = NULL, line[256], big[HP_DESCRIBE_MAX + 2];
	int pid;

	hub_start_up(&hub, NULL, STD_GUESTS "[guest prober]\nexec = @/tests/guests/prober\n",
		     "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.describe,prober.route") == 0);
	expect_where("prober.route", NULL);
	expect_note("prober", NULL);
	/* a method of its own, and itself (through libguest's guest_describe) */
	expect_ctl(0, "ok\n", "call", "prober.describe", "prober.route", BRIDGE_WHERE, NULL);
	expect_ctl(0, "ok\n", "call", "prober.describe_lib", "", BRIDGE_NOTE, NULL);
	expect_where("prober.route", BRIDGE_WHERE);
	expect_where("prober.ping", NULL);
	expect_where("echo.echo", NULL);
	expect_note("prober", BRIDGE_NOTE);
	expect_note("echo", NULL);
	/* up to 200 bytes; UTF-8 beyond ASCII is text like any */
	memset(big, 'x', HP_DESCRIBE_MAX);
	big[HP_DESCRIBE_MAX] = '\0';
	expect_ctl(0, "ok\n", "call", "prober.describe_lib", "prober.ping", big, NULL);
	expect_where("prober.ping", big);
	expect_ctl(0, "ok\n", "call", "prober.describe", "prober.busy", "Zürich → Genève", NULL);
	expect_where("prober.busy", "Zürich → Genève");
	/* hubctl shows them: a WHERE column, a note under the guest's row */
	hubctl_ok(&hub, &out, "methods", (char *)NULL);
	snprintf(line, sizeof(line), "%-24s %-28s %-16s %s\n", "prober.route", "str,str->str",
		 "prober", BRIDGE_WHERE);
	ck_assert_msg(strstr(out, line) != NULL && strstr(out, "WHERE\n") != NULL,
		      "hubctl methods: %s", out);
	snprintf(line, sizeof(line), "%-24s %-28s %s\n", "echo.echo", "str->str", "echo");
	ck_assert_msg(strstr(out, line) != NULL, "hubctl methods: %s", out);
	free(out);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	/* one note, prober's, under its row */
	ck_assert_msg(strstr(out, "\n  note: " BRIDGE_NOTE "\n") != NULL &&
		      strstr(strstr(out, "note:") + 1, "note:") == NULL, "hubctl peers: %s", out);
	free(out);
	hubctl_ok(&hub, &out, "peers", "prober", (char *)NULL);
	ck_assert_msg(strstr(out, "\nnote: " BRIDGE_NOTE "\n") != NULL, "hubctl peers prober: %s", out);
	free(out);
	hubctl_ok(&hub, &out, "peers", "echo", (char *)NULL);
	ck_assert_msg(strstr(out, "note:") == NULL, "hubctl peers echo: %s", out);
	free(out);

	/* refused, each with its reason, and nothing changes */
	expect_ctl(0, "error: hub: not your method: echo.echo\n",
		   "call", "prober.describe", "echo.echo", "mine now", NULL);
	expect_ctl(0, "error: hub: not your method: hub.ping\n",
		   "call", "prober.describe", "hub.ping", "mine now", NULL);
	expect_ctl(0, "error: hub: no such method: prober.nosuch\n",
		   "call", "prober.describe", "prober.nosuch", "x", NULL);
	big[HP_DESCRIBE_MAX] = 'x';
	big[HP_DESCRIBE_MAX + 1] = '\0';
	expect_ctl(0, "error: hub: text longer than 200 bytes\n",
		   "call", "prober.describe", "prober.route", big, NULL);
	expect_ctl(0, "error: hub: text longer than 200 bytes\n",
		   "call", "prober.describe", "", big, NULL);
	expect_ctl(0, "error: hub: text has a control character\n",
		   "call", "prober.describe", "prober.route", "a\x01" "b", NULL);
	expect_ctl(0, "error: hub: text has a control character\n",
		   "call", "prober.describe", "", "tab\there", NULL);
	expect_ctl(0, "error: hub: text has a control character\n",
		   "call", "prober.describe", "", "\x1b[2J", NULL);
	expect_ctl(0, "error: hub: text has a control character\n",
		   "call", "prober.describe", "prober.route", "del\x7f", NULL);
	expect_ctl(0, "error: hub: text has a control character\n",
		   "call", "prober.describe", "prober.route", "c1 \xc2\x9b" "2J", NULL);
	expect_ctl(0, "error: hub: text has a control character\n",
		   "call", "prober.describe", "", "rtl \xe2\x80\xae" "live", NULL);
	/* not UTF-8 (bytes 0xff 0x41): hubd checks a str argument before
	 * any service sees it */
	expect_ctl(0, "error: invalid payload: arguments do not match the signature of "
		   "hub.describe: str,str->unit\n",
		   "call", "prober.describe", "prober.route", "base64:/0E=", NULL);
	/* libguest checks first what hubd would refuse */
	expect_ctl(0, "error: EPERM\n", "call", "prober.describe_lib", "echo.echo", "x", NULL);
	expect_ctl(0, "error: ENOENT\n", "call", "prober.describe_lib", "prober.nosuch", "x",
		   NULL);
	expect_ctl(0, "error: EMSGSIZE\n", "call", "prober.describe_lib", "", big, NULL);
	expect_ctl(0, "error: EINVAL\n", "call", "prober.describe_lib", "", "a\x01" "b", NULL);
	/* a control client is no guest */
	ck_assert_int_eq(hubctl(&hub, &out, "-j", "call", "hub.describe", "", "x", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "only guests describe what they serve") != NULL,
		      "hubctl call hub.describe: %s", out);
	free(out);
	expect_where("prober.route", BRIDGE_WHERE);
	expect_where("echo.echo", NULL);
	expect_where("hub.ping", NULL);
	expect_note("prober", BRIDGE_NOTE);
	expect_note("echo", NULL);
	/* "" clears */
	expect_ctl(0, "ok\n", "call", "prober.describe", "prober.busy", "", NULL);
	expect_where("prober.busy", NULL);
	expect_where("prober.route", BRIDGE_WHERE);

	/* a restart: its methods come back, its words do not */
	pid = hub_peer_int(&hub, "prober", "pid");
	expect_ctl(0, NULL, "restart", "prober", NULL);
	ck_assert_msg(hub_wait_new_pid(&hub, "prober", pid, 10) > 0, "%s", hub_log_tail(&hub));
	ck_assert(hub_wait_method(&hub, "prober.route,prober.ping,prober.describe") == 0);
	expect_where("prober.route", NULL);
	expect_where("prober.ping", NULL);
	expect_note("prober", NULL);
	hubctl_ok(&hub, &out, "methods", (char *)NULL);
	ck_assert_msg(strstr(out, "WHERE") == NULL && strstr(out, BRIDGE_WHERE) == NULL,
		      "hubctl methods: %s", out);
	free(out);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	ck_assert_msg(strstr(out, "note:") == NULL, "hubctl peers: %s", out);
	free(out);
	/* the new instance describes afresh */
	expect_ctl(0, "ok\n", "call", "prober.describe", "prober.route", "again", NULL);
	expect_where("prober.route", "again");
	stop_clean();
}
END_TEST

Suite *suite_e2e(void);
Suite *
suite_e2e(void)
{
	Suite *s = suite_create("e2e");
	TCase *tc = tcase_create("hub");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_guests_attach_and_answer);
	tcase_add_test(tc, test_errors_for_bad_calls);
	tcase_add_test(tc, test_guest_to_guest_routing);
	tcase_add_test(tc, test_error_text);
	tcase_add_test(tc, test_second_answer_is_refused);
	tcase_add_test(tc, test_sigterm_is_a_clean_detach);
	tcase_add_loop_test(tc, test_stop_ends_a_handlers_wait, 0, 3);
	tcase_add_loop_test(tc, test_hub_stop_while_a_handler_waits, 0, 3);
	tcase_add_test(tc, test_polled_guest_and_inherited_fds);
	tcase_add_test(tc, test_one_mib_payload);
	tcase_add_test(tc, test_stream_with_small_credit);
	tcase_add_test(tc, test_stream_to_a_guest);
	tcase_add_test(tc, test_cancel_reaches_the_callee);
	tcase_add_test(tc, test_caller_killed_cancels_its_calls);
	tcase_add_test(tc, test_cancels_of_calls_never_made_go_nowhere);
	tcase_add_test(tc, test_stopped_while_starting_ends_by_itself);
	tcase_add_test(tc, test_stopped_before_attaching_is_no_crash);
	tcase_add_test(tc, test_slow_attach_keeps_its_epoch);
	tcase_add_test(tc, test_first_beat_after_attach);
	tcase_add_test(tc, test_violation_while_stopping_ends_it);
	tcase_add_loop_test(tc, test_violation_ends_only_the_violator, 0,
			    (int)(sizeof(violations) / sizeof(violations[0])));
	tcase_add_test(tc, test_spec_only_guest_is_woken);
	tcase_add_test(tc, test_guest_without_ticket);
	tcase_add_test(tc, test_check_config);
	tcase_add_test(tc, test_one_hubd_per_segment);
	suite_add_tcase(s, tc);
	tc = tcase_create("describe");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_describe);
	suite_add_tcase(s, tc);
	return s;
}
