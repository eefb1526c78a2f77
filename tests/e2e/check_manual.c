/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest started by hand (start = manual), as one debugs it: hubd does
 * not start it but waits; hubctl ticket prints the command line, which
 * the test runs itself; the guest serves; hubd sees it die and waits
 * again with a new secret, the old one refused; a wrong secret or a
 * connection that says nothing changes nothing. Every process the test
 * starts is written down in this run's directory and killed by the
 * teardown, failed test or not. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define MANUAL	"[guest echo]\nexec = @/guests/echo\nstart = manual\nheartbeat = off\n" \
		"env = HUB_TEST_MANUAL=1\n"

/* The processes the test started, for the teardown. */
static const char *
pids_file(void)
{
	return harness_path("manual.pids");
}

static void
teardown(void)
{
	FILE *f = fopen(pids_file(), "r");
	int pid;

	while (f != NULL && fscanf(f, "%d", &pid) == 1)
		if (pid > 1)
			kill(pid, SIGKILL);
	if (f != NULL)
		fclose(f);
	harness_teardown();
}

/* hubctl ticket's first line: the command (malloc'd). */
static char *
ticket_line(void)
{
	char *out = NULL, *nl;
	int rc = hubctl(&hub, &out, "ticket", "echo", (char *)NULL);

	ck_assert_msg(rc == 0 && out != NULL, "hubctl ticket: %d\n%s", rc, hub_log_tail(&hub));
	ck_assert_msg(strstr(out, "--hub-ticket=") != NULL && strstr(out, "gdb --args") != NULL &&
		      strstr(out, "HUB_TEST_MANUAL=1") != NULL, "ticket: %s", out);
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	return out;
}

/* Runs line as the person would (exec: the shell becomes the guest);
 * its pid, written down first. */
static pid_t
run_line(const char *line)
{
	FILE *f;
	pid_t pid;

	if ((pid = fork()) == 0) {
		char *cmd;
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		if (asprintf(&cmd, "exec %s", line) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	f = fopen(pids_file(), "a");
	ck_assert(f != NULL);
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
	return pid;
}

/* Waits until echo is in state (10 s); 0 or -1. */
static int
wait_state(const char *state)
{
	for (int i = 0; i < 2000; i++) {
		if (strcmp(hub_peer_state(&hub, "echo"), state) == 0)
			return 0;
		sleep_ms(5);
	}
	return -1;
}

/* echo.echo answers what (hubctl prints it and a newline). */
static void
call_echo_line(const char *what)
{
	char *out = NULL, want[128];

	snprintf(want, sizeof(want), "%s\n", what);
	ck_assert_msg(hub_wait_method(&hub, "echo.echo") == 0, "%s", hub_log_tail(&hub));
	hubctl_ok(&hub, &out, "call", "echo.echo", what, (char *)NULL);
	ck_assert_str_eq(out, want);
	free(out);
}

/* The secret's socket (from the line: --hub-ticket=PATH:SECRET). */
static void
ticket_parts(const char *line, char *path, size_t plen, char *secret, size_t slen)
{
	const char *t = strstr(line, "--hub-ticket="), *colon;
	size_t n;

	ck_assert(t != NULL);
	t += strlen("--hub-ticket=");
	n = strcspn(t, " '");
	colon = memrchr(t, ':', n);
	ck_assert(colon != NULL && (size_t)(colon - t) < plen && n - (size_t)(colon - t) <= slen);
	snprintf(path, plen, "%.*s", (int)(colon - t), t);
	snprintf(secret, slen, "%.*s", (int)(n - (size_t)(colon - t) - 1), colon + 1);
}

/* Connects to the ticket socket and writes what; whether hubd answered
 * with anything but the end of the connection. */
static int
try_secret(const char *path, const char *what)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 };
	char buf[64];
	ssize_t n;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert(s >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_msg(connect(s, (struct sockaddr *)&sun, sizeof(sun)) == 0, "connect %s: %s",
		      path, strerror(errno));
	ck_assert_int_eq(write(s, what, strlen(what)), (ssize_t)strlen(what));
	n = read(s, buf, sizeof(buf));
	close(s);
	return n > 0;
}

/* hubd does not start it; the line hubctl ticket prints does, and it
 * serves like a spawned guest; the socket is used once. */
START_TEST(test_started_by_hand)
{
	char *line, path[100], secret[64];
	pid_t pid;
	int status;

	hub_start_up(&hub, NULL, MANUAL, NULL);
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), 0);
	line = ticket_line();
	ticket_parts(line, path, sizeof(path), secret, sizeof(secret));
	ck_assert_int_eq(strlen(secret), 32);
	pid = run_line(line);
	ck_assert_msg(wait_state("up") == 0, "%s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), pid);
	call_echo_line("by hand");
	/* used once: the socket is gone */
	ck_assert_int_eq(access(path, F_OK), -1);
	/* no ticket while it runs */
	{
		char *err = NULL;

		ck_assert_int_ne(hubctl_err(&hub, &err, "ticket", "echo", (char *)NULL), 0);
		ck_assert_msg(strstr(err, "no ticket waits") != NULL, "%s", err);
		free(err);
	}
	/* it dies: hubd sees it (no status: not its child) and waits with
	 * a new secret; the old one is refused, the new one works */
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	{
		json_object *p = hub_peer(&hub, "echo"), *d, *st;
		char *out = NULL;

		d = json_object_array_get_idx(json_get(p, "deaths"), 0);
		ck_assert_msg(d != NULL && strcmp(json_object_get_string(json_get(d, "reason")),
						  "exited") == 0, "%s", json_object_to_json_string(p));
		/* its status unknown: null, and no "exited -1" for people */
		ck_assert_msg(json_object_object_get_ex(d, "status", &st) && st == NULL, "%s",
			      json_object_to_json_string(d));
		json_object_put(p);
		hubctl_ok(&hub, &out, "peers", (char *)NULL);
		ck_assert_msg(strstr(out, " exited, started by hand: its status is not hubd's "
				     "to see") != NULL, "%s", out);
		free(out);
	}
	pid = run_line(line);		/* the old secret */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "status %#x", status);
	ck_assert_str_eq(hub_peer_state(&hub, "echo"), "waiting");
	free(line);
	line = ticket_line();
	{
		char secret2[64];

		ticket_parts(line, path, sizeof(path), secret2, sizeof(secret2));
		ck_assert_str_ne(secret, secret2);
	}
	pid = run_line(line);
	ck_assert_msg(wait_state("up") == 0, "%s", hub_log_tail(&hub));
	call_echo_line("again");
	free(line);
	ck_assert_int_eq(hub_stop(&hub), 0);
	/* hubd gone: the guest follows, the socket is gone */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

/* A guest started by hand has no bells (HP_FEAT_BELLS): hubd wakes it on
 * its doorbell, and a lane to a spawned guest (which has bells) rings
 * the lane's doorbell both ways. Calls work before and after the lane. */
START_TEST(test_lane_without_bells)
{
	char *line, *out = NULL, *log;
	pid_t pid;
	int status;

	hub_start_up(&hub, NULL, MANUAL "[guest prober]\nexec = @/tests/guests/prober\n", "prober");
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	line = ticket_line();
	pid = run_line(line);
	free(line);
	ck_assert_msg(wait_state("up") == 0, "%s", hub_log_tail(&hub));
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.route") == 0);
	for (int i = 0; i < 20; i++) {
		hubctl_ok(&hub, &out, "call", "prober.route", "echo.echo", "hi", (char *)NULL);
		ck_assert_msg(strstr(out, "hi") != NULL, "call %d: %s", i, out);
		free(out);
		out = NULL;
	}
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "lanes"), 1);
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "lanes"), 1);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "call each other directly") != NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

/* A wrong secret, a short one and a silent connection are refused and
 * change nothing: the right secret still works after them. */
START_TEST(test_refusals)
{
	char *line, path[100], secret[64], wrong[64];
	pid_t pid;
	int s, status;

	hub_start_up(&hub, NULL, MANUAL, NULL);
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	line = ticket_line();
	ticket_parts(line, path, sizeof(path), secret, sizeof(secret));
	snprintf(wrong, sizeof(wrong), "%s", secret);
	wrong[0] = wrong[0] == '0' ? '1' : '0';
	ck_assert_int_eq(try_secret(path, wrong), 0);
	ck_assert_int_eq(try_secret(path, "short"), 0);
	{
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		/* says nothing and stays: the next connection is heard */
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
		ck_assert_int_eq(connect(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	}
	ck_assert_str_eq(hub_peer_state(&hub, "echo"), "waiting");
	ck_assert_msg(strstr(hub_log_tail(&hub), "a wrong ticket") != NULL, "%s",
		      hub_log_tail(&hub));
	/* a guest that is not manual has no ticket */
	{
		char *err = NULL;

		ck_assert_int_ne(hubctl_err(&hub, &err, "ticket", "nosuch", (char *)NULL), 0);
		free(err);
	}
	pid = run_line(line);
	ck_assert_msg(wait_state("up") == 0, "%s", hub_log_tail(&hub));
	call_echo_line("after refusals");
	close(s);
	/* stopped by hand: it goes, and no ticket waits; started: one does */
	{
		char *out = NULL;

		hubctl_ok(&hub, &out, "stop", "echo", (char *)NULL);
		free(out);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(wait_state("down") == 0, "%s", hub_log_tail(&hub));
	ck_assert_int_eq(access(path, F_OK), -1);
	{
		char *out = NULL;

		hubctl_ok(&hub, &out, "start", "echo", (char *)NULL);
		free(out);
	}
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	ck_assert_int_eq(access(path, F_OK), 0);
	free(line);
	ck_assert_int_eq(hub_stop(&hub), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/* A guest of start = manual that a reload adds is not started: the reload
 * says it waits for a person, not that it starts, and it waits; changed,
 * it is said to wait again, not to restart. */
START_TEST(test_reload_adds_manual)
{
	char msgs[1024];

	ck_assert_int_eq(hub_start(&hub, NULL, ""), 0);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, MANUAL), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 1, "%s", msgs);
	ck_assert_msg(strstr(msgs, "guest echo: added: it waits to be started by hand "
			     "(hubctl ticket echo)") != NULL, "reload said: %s", msgs);
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	/* changed: it waits again, with a new ticket (it said 'restarting') */
	ck_assert_int_eq(hub_write_conf(&hub, NULL, MANUAL "args = --changed\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 1, "%s", msgs);
	ck_assert_msg(strstr(msgs, "guest echo: changed: stopping it if it runs; then it waits "
			     "to be started by hand (hubctl ticket echo)") != NULL,
		      "reload said: %s", msgs);
	ck_assert_msg(wait_state("waiting") == 0, "%s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A script guest in Python: the ticket's second line runs it under pdb,
 * not gdb (which cannot debug a script): before the script the shebang
 * names, after the interpreter exec names. */
START_TEST(test_ticket_python_pdb)
{
	const char *names[] = { "greet", "greet2" };
	const char *want[] = {
		" python3 -m pdb " BUILD_DIR "/../tests/python/guests/greet.py "
		    "--hub-ticket=",
		" /usr/bin/python3 -m pdb " BUILD_DIR "/../tests/python/guests/greet.py "
		    "--hub-ticket=",
	};

	hub_start_up(&hub, NULL,
		     "[guest greet]\nexec = @/../tests/python/guests/greet.py\n"
		     "start = manual\nheartbeat = off\n"
		     "[guest greet2]\nexec = /usr/bin/python3\n"
		     "args = @/../tests/python/guests/greet.py\nstart = manual\n", NULL);
	for (size_t i = 0; i < 2; i++) {
		char *out = NULL;
		int n;

		for (n = 0; n < 2000 && strcmp(hub_peer_state(&hub, names[i]), "waiting") != 0;
		     n++)
			sleep_ms(5);
		ck_assert_msg(n < 2000, "%s not waiting: %s", names[i], hub_log_tail(&hub));
		ck_assert_msg(hubctl(&hub, &out, "ticket", names[i], (char *)NULL) == 0 &&
			      out != NULL, "hubctl ticket %s: %s", names[i], hubctl_stderr());
		ck_assert_msg(strstr(out, want[i]) != NULL && strstr(out, "gdb") == NULL,
			      "ticket %s: %s", names[i], out);
		free(out);
	}
	/* stopped here, not by its parent's death after the test: the next
	 * test's hub has the same paths, and this one, still exiting, would
	 * take its control socket away */
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_manual(void);
Suite *
suite_manual(void)
{
	Suite *s = suite_create("manual");
	TCase *tc = tcase_create("manual");

	tcase_add_unchecked_fixture(tc, harness_setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_started_by_hand);
	tcase_add_test(tc, test_lane_without_bells);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_ticket_python_pdb);
	tcase_add_test(tc, test_reload_adds_manual);
	suite_add_tcase(s, tc);
	return s;
}
