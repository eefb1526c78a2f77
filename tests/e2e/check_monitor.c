/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl monitor and the monitor command (daemon/monitor.c): each call
 * through hubd shown with its arguments decoded, its result or error;
 * lane calls shown while a monitor watches their method, back on the
 * lane once it is gone; a glob that matches nothing shows nothing; a
 * guest's text printed escaped; a client that does not read gets a
 * dropped count, and hubd stays responsive. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define PROBER	"[guest prober]\nexec = @/tests/guests/prober\n"
#define LB(name) \
	"[guest " name "]\nexec = @/tests/guests/lanebreaker\nargs = --prefix " name "\n"

/* -- a hubctl monitor running beside the test ------------------------- */

struct mon {
	pid_t	pid;
	int	fd;		/* its stdout */
	char	buf[1 << 16];
	size_t	len;
};

#define MONS_MAX	4
static pid_t mons[MONS_MAX];	/* killed at teardown, whatever happened */

static void
teardown(void)
{
	for (int i = 0; i < MONS_MAX; i++) {
		if (mons[i] > 0) {
			kill(mons[i], SIGKILL);
			waitpid(mons[i], NULL, 0);
		}
		mons[i] = 0;
	}
	harness_teardown();
}

/* hubctl [-j] monitor [glob], its stdout a pipe of ours. */
static void
mon_start(struct mon *m, int json, const char *glob)
{
	int p[2];

	memset(m, 0, sizeof(*m));
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	m->pid = fork();
	ck_assert_int_ge(m->pid, 0);
	if (m->pid == 0) {
		char *argv[8], j[] = "-j", s[] = "-s", cmd[] = "monitor", g[64];
		int n = 0;

		dup2(p[1], 1);
		argv[n++] = cmd;
		argv[n++] = s;
		argv[n++] = hub.sock;
		if (json)
			argv[n++] = j;
		argv[n++] = cmd;
		if (glob != NULL) {
			snprintf(g, sizeof(g), "%s", glob);
			argv[n++] = g;
		}
		argv[n] = NULL;
		execv(bin("hubctl"), argv);
		_exit(127);
	}
	close(p[1]);
	m->fd = p[0];
	for (int i = 0; i < MONS_MAX; i++) {
		if (mons[i] == 0) {
			mons[i] = m->pid;
			break;
		}
	}
}

/* Its next line (malloc'd, no newline), NULL after timeout_ms. */
static char *
mon_line(struct mon *m, int timeout_ms)
{
	double end = now_s() + timeout_ms / 1000.0;
	char *nl, *line;
	ssize_t n;

	for (;;) {
		if ((nl = memchr(m->buf, '\n', m->len)) != NULL) {
			line = strndup(m->buf, (size_t)(nl - m->buf));
			m->len -= (size_t)(nl + 1 - m->buf);
			memmove(m->buf, nl + 1, m->len);
			return line;
		}
		struct pollfd pfd = { m->fd, POLLIN, 0 };
		int left = (int)((end - now_s()) * 1000);

		if (left <= 0 || poll(&pfd, 1, left) <= 0 || m->len == sizeof(m->buf))
			return NULL;
		if ((n = read(m->fd, m->buf + m->len, sizeof(m->buf) - m->len)) <= 0)
			return NULL;
		m->len += (size_t)n;
	}
}

/* Its lines until one holds each of the words (NULL-ended), 10 s at most:
 * that line (malloc'd), or a failure with what came. */
static char *
mon_expect(struct mon *m, const char *what, ...)
{
	char seen[2048] = "";
	char *line;

	while ((line = mon_line(m, 10000)) != NULL) {
		va_list ap;
		const char *w;
		int all = 1;

		va_start(ap, what);
		for (w = what; w != NULL && all; w = va_arg(ap, const char *))
			all = strstr(line, w) != NULL;
		va_end(ap);
		if (all)
			return line;
		if (strlen(seen) + strlen(line) + 2 < sizeof(seen)) {
			strcat(seen, line);
			strcat(seen, "|");
		}
		free(line);
	}
	ck_abort_msg("hubctl monitor printed no line with '%s'; it printed: %s; %s", what, seen,
		     hub_log_tail(&hub));
	return NULL;
}

/* Ends it as Ctrl-C does: exit 0. */
static void
mon_stop(struct mon *m)
{
	int status;

	kill(m->pid, SIGINT);
	ck_assert_int_eq(waitpid(m->pid, &status, 0), m->pid);
	for (int i = 0; i < MONS_MAX; i++)
		if (mons[i] == m->pid)
			mons[i] = 0;
	close(m->fd);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "hubctl monitor after SIGINT: status 0x%x", status);
}

/* Calls method(arg) until the monitor shows a line with want: it is
 * attached by then (it says nothing when it is). */
static void
mon_ready(struct mon *m, const char *method, const char *arg, const char *want)
{
	for (int i = 0; i < 100; i++) {
		char *line;

		hubctl_ok(&hub, NULL, "call", method, arg, (char *)NULL);
		if ((line = mon_line(m, 100)) != NULL && strstr(line, want) != NULL) {
			free(line);
			return;
		}
		free(line);
	}
	ck_abort_msg("hubctl monitor showed no call of %s; %s", method, hub_log_tail(&hub));
}

/* -- a raw client of the monitor command ------------------------------ */

/* {"cmd":"monitor"} (glob if not NULL) on a connection of its own; its
 * {"ok":true} read: attached. */
static int
raw_monitor(const char *glob)
{
	char req[256], buf[64];
	int fd = hub_client(&hub, 10), n;
	ssize_t k;

	n = glob != NULL ? snprintf(req, sizeof(req), "{\"cmd\":\"monitor\",\"glob\":\"%s\"}\n", glob)
			 : snprintf(req, sizeof(req), "{\"cmd\":\"monitor\"}\n");
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	for (n = 0; n < (int)sizeof(buf) - 1; n++) {
		if ((k = read(fd, buf + n, 1)) != 1)
			break;
		if (buf[n] == '\n')
			break;
	}
	buf[n] = '\0';
	ck_assert_msg(strcmp(buf, "{\"ok\":true}") == 0, "monitor answered '%s'", buf);
	return fd;
}

/* One line from a raw monitor (its reads time out: 10 s), malloc'd. */
static char *
raw_line(int fd)
{
	char buf[4096];
	size_t n = 0;

	while (n < sizeof(buf) - 1 && read(fd, buf + n, 1) == 1 && buf[n] != '\n')
		n++;
	buf[n] = '\0';
	return strdup(buf);
}

/* -- the tests --------------------------------------------------------- */

/* Calls from a client, from a guest to a guest and to hubd's own
 * service, each shown as JSON: who, what, the arguments decoded, the
 * result or the error; ended by Ctrl-C with exit 0. */
START_TEST(test_calls_shown)
{
	struct mon m;
	char *line, *out = NULL;

	hub_start_up(&hub, NULL, ECHO PROBER, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.route,prober.fail") == 0);
	mon_start(&m, 1, NULL);
	mon_ready(&m, "echo.echo", "warm", "\"warm\"");
	hubctl_ok(&hub, NULL, "call", "echo.echo", "hello", (char *)NULL);
	line = mon_expect(&m, "\"args\":[\"hello\"]", (char *)NULL);
	ck_assert_msg(strstr(line, "\"caller\":\"client:") != NULL &&
		      strstr(line, "\"callee\":\"echo\"") != NULL &&
		      strstr(line, "\"method\":\"echo.echo\"") != NULL &&
		      strstr(line, "\"result\":\"hello\"") != NULL &&
		      strstr(line, "\"us\":") != NULL && strstr(line, "\"lane\":false") != NULL,
		      "a client's call: %s", line);
	free(line);
	/* a guest's call to another guest: the prober's call of echo.echo */
	hubctl_ok(&hub, &out, "call", "prober.route", "echo.echo", "relayed", (char *)NULL);
	free(out);
	line = mon_expect(&m, "\"caller\":\"prober\"", "\"args\":[\"relayed\"]", (char *)NULL);
	ck_assert_msg(strstr(line, "\"callee\":\"echo\"") != NULL &&
		      strstr(line, "\"result\":\"relayed\"") != NULL, "a guest's call: %s", line);
	free(line);
	/* an error, with its kind */
	ck_assert_int_ne(hubctl(&hub, &out, "call", "prober.fail", "user", "no way", (char *)NULL), 0);
	free(out);
	line = mon_expect(&m, "\"method\":\"prober.fail\"", (char *)NULL);
	ck_assert_msg(strstr(line, "\"args\":[\"user\",\"no way\"]") != NULL &&
		      strstr(line, "\"kind\":\"user\"") != NULL &&
		      strstr(line, "\"error\":\"no way\"") != NULL &&
		      strstr(line, "\"result\"") == NULL, "an error: %s", line);
	free(line);
	/* hubd's own service, and an argument cut short */
	hubctl_ok(&hub, NULL, "call", "hub.ping",
		  "0123456789012345678901234567890123456789012345678901234567890123456789",
		  (char *)NULL);
	line = mon_expect(&m, "\"method\":\"hub.ping\"", (char *)NULL);
	ck_assert_msg(strstr(line, "\"callee\":\"hub\"") != NULL &&
		      strstr(line, "0123456789012345678901234567890123456789012345678901234567890123...") != NULL &&
		      strstr(line, "456789\"") == NULL, "hub.ping: %s", line);
	free(line);
	mon_stop(&m);
	/* the monitor is gone: hubd serves on */
	hubctl_ok(&hub, NULL, "call", "echo.echo", "after", (char *)NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A glob shows the methods it matches and nothing else; a monitor
 * outlives client_timeout; only root and hubd's user may watch (the
 * refusal: check_control's). */
START_TEST(test_glob)
{
	int all, rev;
	char *line;

	hub_start_up(&hub, "client_timeout = 1s\n", ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	rev = raw_monitor("echo.rev*");
	all = raw_monitor(NULL);
	sleep_ms(1500);		/* past client_timeout: both stay */
	hubctl_ok(&hub, NULL, "call", "echo.echo", "one", (char *)NULL);
	hubctl_ok(&hub, NULL, "call", "echo.reverse", "abc", (char *)NULL);
	line = raw_line(all);
	ck_assert_msg(strstr(line, "\"method\":\"echo.echo\"") != NULL, "all: '%s'", line);
	free(line);
	line = raw_line(all);
	ck_assert_msg(strstr(line, "\"method\":\"echo.reverse\"") != NULL, "all: '%s'", line);
	free(line);
	/* the first line echo.rev* shows is the second call's */
	line = raw_line(rev);
	ck_assert_msg(strstr(line, "\"method\":\"echo.reverse\"") != NULL &&
		      strstr(line, "\"result\":\"cba\"") != NULL, "echo.rev*: '%s'", line);
	free(line);
	close(rev);
	close(all);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

#define TP	"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TP_ID	"4bf92f3577b34da6a3ce929d0e0e4736"

/* A call's trace-id is shown, also on the calls its handler makes (they
 * inherit it); a call without a trace shows none. */
START_TEST(test_trace_shown)
{
	struct mon j, m;
	char *line, *out = NULL;

	hub_start_up(&hub, NULL, ECHO PROBER, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.route") == 0);
	mon_start(&j, 1, "echo.*");
	mon_ready(&j, "echo.echo", "warm", "\"warm\"");
	mon_start(&m, 0, "echo.*");
	mon_ready(&m, "echo.echo", "warm", "\"warm\"");
	hubctl_ok(&hub, NULL, "call", "--trace", TP, "echo.echo", "traced", (char *)NULL);
	line = mon_expect(&j, "\"args\":[\"traced\"]", (char *)NULL);
	ck_assert_msg(strstr(line, "\"trace\":\"" TP_ID "\"") != NULL, "-j: %s", line);
	free(line);
	line = mon_expect(&m, "(\"traced\")", (char *)NULL);
	ck_assert_msg(strstr(line, " trace " TP_ID) != NULL, "text: %s", line);
	free(line);
	/* the prober's call of echo.echo, made in a handled call's trace */
	hubctl_ok(&hub, &out, "call", "--trace", TP, "prober.route", "echo.echo", "nested",
		  (char *)NULL);
	free(out);
	line = mon_expect(&j, "\"caller\":\"prober\"", "\"args\":[\"nested\"]", (char *)NULL);
	ck_assert_msg(strstr(line, "\"trace\":\"" TP_ID "\"") != NULL, "nested: %s", line);
	free(line);
	hubctl_ok(&hub, NULL, "call", "echo.echo", "untraced", (char *)NULL);
	line = mon_expect(&j, "\"args\":[\"untraced\"]", (char *)NULL);
	ck_assert_msg(strstr(line, "\"trace\"") == NULL, "untraced: %s", line);
	free(line);
	line = mon_expect(&m, "(\"untraced\")", (char *)NULL);
	ck_assert_msg(strstr(line, " trace ") == NULL, "untraced text: %s", line);
	free(line);
	mon_stop(&j);
	mon_stop(&m);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* What a guest or a client sent (control characters, a terminal's
 * escapes, C1) never reaches the terminal raw; a closed pipe ends
 * hubctl monitor with exit 0. */
START_TEST(test_hostile_text_escaped)
{
	static const char evil[] = "a\033[2J\nb\007\302\233c";
	struct mon m;
	char *line, *out = NULL;
	int status;

	hub_start_up(&hub, NULL, ECHO PROBER, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.fail") == 0);
	mon_start(&m, 0, NULL);
	mon_ready(&m, "echo.echo", "warm", "warm");
	hubctl_ok(&hub, &out, "call", "echo.echo", evil, (char *)NULL);
	free(out);
	line = mon_expect(&m, " > echo echo.echo(\"a", (char *)NULL);
	ck_assert_msg(strchr(line, '\033') == NULL && strchr(line, '\007') == NULL &&
		      strstr(line, "\302\233") == NULL, "raw control bytes: %s", line);
	ck_assert_msg(strstr(line, "\\u001b[2J\\nb\\u0007\\302\\233c") != NULL,
		      "not shown escaped: %s", line);
	free(line);
	ck_assert_int_ne(hubctl(&hub, &out, "call", "prober.fail", "user", evil, (char *)NULL), 0);
	free(out);
	line = mon_expect(&m, "prober.fail(", (char *)NULL);
	ck_assert_msg(strchr(line, '\033') == NULL && strchr(line, '\007') == NULL &&
		      strstr(line, "\302\233") == NULL && strstr(line, " ! user: a\\033[2J") != NULL,
		      "the error: %s", line);
	free(line);
	/* its reader goes: the next line ends it, exit 0 */
	close(m.fd);
	hubctl_ok(&hub, NULL, "call", "echo.echo", "more", (char *)NULL);
	ck_assert_int_eq(waitpid(m.pid, &status, 0), m.pid);
	for (int i = 0; i < MONS_MAX; i++)
		if (mons[i] == m.pid)
			mons[i] = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "hubctl monitor, its pipe closed: status 0x%x", status);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The lane figures of a's side: its calls out over the lane. */
static unsigned long long
lane_calls(void)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"lanes\"}", NULL), *l;
	unsigned long long v = 0;

	ck_assert_msg(o != NULL, "no answer to lanes");
	if ((l = json_object_array_get_idx(json_get(o, "lanes"), 0)) != NULL)
		v = json_u64(l, "a", "calls_out", NULL);
	json_object_put(o);
	return v;
}

/* Waits (5 s) until a's lane figure reaches min (published now and then). */
static unsigned long long
lane_calls_at_least(unsigned long long min)
{
	unsigned long long v = 0;

	for (int i = 0; i < 100 && (v = lane_calls()) < min; i++)
		sleep_ms(50);
	ck_assert_msg(v >= min, "a's lane calls out: %llu, want >= %llu; %s", v, min,
		      hub_log_tail(&hub));
	return v;
}

/* Two guests with a lane: calls of the method a monitor watches come
 * through hubd and are shown (lane: true); once it is gone they go back
 * to the lane. */
START_TEST(test_lane_calls_shown)
{
	unsigned long long before;
	char *out = NULL, *line;
	int fd;

	hub_start_up(&hub, NULL, LB("a") LB("b"), "a,b");
	ck_assert(hub_wait_method(&hub, "a.call,b.echo") == 0);
	/* the first call through hubd, the second over the lane it made */
	hubctl_ok(&hub, &out, "call", "a.call", "b.echo", "hi", (char *)NULL);
	ck_assert_msg(strncmp(out, "ok hi", 5) == 0, "a.call: %s", out);
	free(out);
	before = lane_calls_at_least(1);
	fd = raw_monitor("b.*");
	/* hubd took the route back before it answered: both calls come
	 * through it, each shown */
	hubctl_ok(&hub, &out, "call", "a.call", "b.echo", "seen", (char *)NULL);
	ck_assert_msg(strncmp(out, "ok seen", 7) == 0, "a.call: %s", out);
	free(out);
	for (int i = 0; i < 2; i++) {
		line = raw_line(fd);
		ck_assert_msg(strstr(line, "\"caller\":\"a\"") != NULL &&
			      strstr(line, "\"callee\":\"b\"") != NULL &&
			      strstr(line, "\"method\":\"b.echo\"") != NULL &&
			      strstr(line, "\"args\":[\"seen\"]") != NULL &&
			      strstr(line, "\"result\":\"seen\"") != NULL &&
			      strstr(line, "\"lane\":true") != NULL, "lane call %d: '%s'", i, line);
		free(line);
	}
	ck_assert_uint_eq(lane_calls(), before);
	close(fd);
	/* the monitor gone (once hubd has seen it go): the first call goes
	 * through hubd, which routes the method again, the second over the
	 * lane */
	for (int i = 0; i < 50 && lane_calls() == before; i++) {
		hubctl_ok(&hub, &out, "call", "a.call", "b.echo", "back", (char *)NULL);
		ck_assert_msg(strncmp(out, "ok back", 7) == 0, "a.call: %s", out);
		free(out);
		sleep_ms(100);
	}
	lane_calls_at_least(before + 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A monitor that reads nothing: hubd holds a bounded amount for it,
 * drops the rest and says how many; it serves everyone else meanwhile. */
START_TEST(test_slow_reader_dropped)
{
	char *out = NULL, *line;
	int fd, found = 0;

	hub_start_up(&hub, "client_timeout = 1s\n", LB("a") LB("b"), "a,b");
	ck_assert(hub_wait_method(&hub, "a.load,b.echo") == 0);
	fd = raw_monitor(NULL);
	/* 20000 calls of b.echo, each a line it does not read */
	hubctl_ok(&hub, &out, "-t", "120", "call", "a.load", "b.echo", "20000", (char *)NULL);
	ck_assert_msg(strstr(out, "ok=20000") != NULL, "a.load: %s", out);
	free(out);
	sleep_ms(1500);		/* past client_timeout: a monitor stays */
	hubctl_ok(&hub, &out, "status", (char *)NULL);
	free(out);
	/* read on: after what hubd held, the count of what it dropped */
	for (int i = 0; i < 100000 && !found; i++) {
		struct pollfd pfd = { fd, POLLIN, 0 };

		if (poll(&pfd, 1, 200) == 0) {
			hubctl_ok(&hub, NULL, "call", "b.echo", "late", (char *)NULL);
			continue;
		}
		line = raw_line(fd);
		ck_assert_msg(*line != '\0', "the monitor's connection ended");
		if (strncmp(line, "{\"dropped\":", 11) == 0) {
			found = 1;
			ck_assert_msg(strtoull(line + 11, NULL, 10) > 0, "%s", line);
		}
		free(line);
	}
	ck_assert_msg(found, "no dropped count");
	/* and the line after it is a call's */
	line = raw_line(fd);
	if (*line == '\0') {
		free(line);
		hubctl_ok(&hub, NULL, "call", "b.echo", "late", (char *)NULL);
		line = raw_line(fd);
	}
	ck_assert_msg(strstr(line, "\"method\":\"b.echo\"") != NULL, "after the count: '%s'", line);
	free(line);
	close(fd);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_monitor(void);
Suite *
suite_monitor(void)
{
	Suite *s = suite_create("monitor");
	TCase *tc = tcase_create("monitor");

	tcase_add_unchecked_fixture(tc, harness_setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_calls_shown);
	tcase_add_test(tc, test_glob);
	tcase_add_test(tc, test_trace_shown);
	tcase_add_test(tc, test_hostile_text_escaped);
	tcase_add_test(tc, test_lane_calls_shown);
	tcase_add_test(tc, test_slow_reader_dropped);
	suite_add_tcase(s, tc);
	return s;
}
