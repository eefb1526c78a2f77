/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's words at the edges, against a real hubd: how a result prints
 * (unit, an opt's none, some("")), what an argument that is not of its
 * type is told, one wording for an unknown guest, methods grouped by
 * guest, a malformed signature refused with what and where, hub-run
 * -h's help and the exec paths it gives hubd (-g's and -c's), and
 * check-man's hold on doc/control.md's commands. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/e2e/harness.h"

#define PROBER	"[guest prober]\nexec = @/tests/guests/prober\n"
#define GUEST_ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define COUNTER	"[guest counter]\nexec = @/guests/counter\n"

static struct hub_proc hub;

/* hubctl ARGS... (NULL-ended, 8 at most): its exit status must be status
 * and its stdout want exactly (NULL: any), or its stderr hold err_has
 * (NULL: anything). */
static void
expect_ctl(int status, const char *want, const char *err_has, ...)
{
	char *argv[9], *out = NULL;
	int n = 0, rc;
	va_list ap;

	va_start(ap, err_has);
	while (n < 8 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	rc = hubctl(&hub, &out, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5],
		    argv[6], argv[7], (char *)NULL);
	ck_assert_msg(rc == status && (want == NULL || strcmp(out, want) == 0) &&
		      (err_has == NULL || strstr(hubctl_stderr(), err_has) != NULL),
		      "hubctl %s %s %s %s: status %d (want %d), stdout '%s' (want '%s'), "
		      "stderr '%s' (want '%s' in it)", argv[0], argv[1] ? argv[1] : "",
		      argv[1] && argv[2] ? argv[2] : "", argv[1] && argv[2] && argv[3] ?
		      argv[3] : "", rc, status, out, want ? want : "*", hubctl_stderr(),
		      err_has ? err_has : "");
	free(out);
}

/* A result prints by its type: unit nothing, an opt's none "null", its
 * some("") an empty line, some("x") x; -j says the type (returns) and
 * keeps "null" the text apart from none. */
START_TEST(test_call_prints_opt)
{
	hub_start_up(&hub, NULL, PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.maybe,prober.busy") == 0);
	expect_ctl(0, "null\n", NULL, "call", "prober.maybe", "none", NULL);
	expect_ctl(0, "\n", NULL, "call", "prober.maybe", "", NULL);
	expect_ctl(0, "x\n", NULL, "call", "prober.maybe", "x", NULL);
	expect_ctl(0, "", NULL, "call", "prober.busy", "0", NULL);	/* unit */
	expect_ctl(0, "{\"ok\":true,\"result\":null,\"returns\":\"opt<str>\"}\n", NULL,
		   "-j", "call", "prober.maybe", "none", NULL);
	expect_ctl(0, "{\"ok\":true,\"result\":\"\",\"returns\":\"opt<str>\"}\n", NULL,
		   "-j", "call", "prober.maybe", "", NULL);
	expect_ctl(0, "{\"ok\":true,\"result\":\"null\",\"returns\":\"opt<str>\"}\n", NULL,
		   "-j", "call", "prober.maybe", "null", NULL);
	expect_ctl(0, "{\"ok\":true,\"result\":null,\"returns\":\"unit\"}\n", NULL,
		   "-j", "call", "prober.busy", "0", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

#define U64_RANGE	"(a whole number from 0 to 18446744073709551615)"
#define I64_RANGE	"(a whole number from -9223372036854775808 to 9223372036854775807)"

/* An argument not of its type says what the type takes: a number's
 * range, where its base64 goes wrong. */
START_TEST(test_argument_errors)
{
	static const char *const cases[][4] = {
		{ "counter.count", "-1", NULL, "argument 1 is not a u64 " U64_RANGE "\n" },
		{ "counter.count", "18446744073709551616", NULL,
		  "argument 1 is not a u64 " U64_RANGE "\n" },
		{ "counter.count", "x", NULL, "argument 1 is not a u64 " U64_RANGE "\n" },
		{ "prober.negate", "9223372036854775808", NULL,
		  "argument 1 is not an i64 " I64_RANGE "\n" },
		{ "prober.negate", "-9223372036854775809", NULL,
		  "argument 1 is not an i64 " I64_RANGE "\n" },
		{ "kv.put", "k", "base64:ab!d",
		  "argument 2 is not a bytes: bad base64 at character 3 after \"base64:\": "
		  "'!' is not a base64 character\n" },
		{ "kv.put", "k", "base64:YR==",
		  "argument 2 is not a bytes: bad base64 at character 2 after \"base64:\": "
		  "'R' leaves bits set past the last byte\n" },
		{ "kv.put", "k", "base64:YQ=",
		  "argument 2 is not a bytes: bad base64: its padding ends after one '=' of "
		  "two\n" },
		{ "kv.put", "k", "base64:YQ",
		  "argument 2 is not a bytes: bad base64: it ends inside a group of 4 "
		  "characters ('=' pads one)\n" },
		{ "kv.put", "k", "base64:Y===",
		  "bad base64 at character 2 after \"base64:\": '=' pads a group of 4 that "
		  "has fewer than 2 characters\n" },
		{ "kv.put", "k", "base64:YQ==YQ==",
		  "bad base64 at character 5 after \"base64:\": 'Y' comes after the "
		  "padding\n" },
	};

	hub_start_up(&hub, NULL, PROBER COUNTER "[guest kv]\nexec = @/guests/kv\n",
		     "prober,counter,kv");
	ck_assert(hub_wait_method(&hub, "prober.negate,prober.wait,counter.count,kv.put,kv.mget") == 0);
	expect_ctl(0, "-5\n", NULL, "call", "prober.negate", "5", NULL);
	expect_ctl(0, "9223372036854775807\n", NULL, "call", "prober.negate",
		   "-9223372036854775807", NULL);
	expect_ctl(0, "", NULL, "call", "kv.put", "k", "base64:YQ==", NULL);
	expect_ctl(0, "", NULL, "call", "kv.put", "k", "base64: Y Q = = ", NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_ctl(1, "", cases[i][3], "call", cases[i][0], cases[i][1], cases[i][2],
			   NULL);
	/* -t whole seconds only; a call's --timeout alone: hubctl waits it
	 * and 2 s more, and says so (it once said 2 s, and blamed -t) */
	expect_ctl(2, "", "-t takes a number of seconds, from 1 to 2147483\n", "-t", "5x",
		   "status", NULL);
	expect_ctl(2, "", "-t takes a number of seconds", "-t", "99999999999", "status", NULL);
	expect_ctl(1, "", "no answer within 2.3 s (the call's --timeout, and 2 s for its "
		   "answer to come)\n", "call", "--timeout", "300", "prober.wait", NULL);
	/* -j: as JSON on stdout, as hubd's refusals */
	expect_ctl(1, "{\"ok\":false,\"error\":\"no answer within 2.3 s (the call's --timeout, "
		   "and 2 s for its answer to come)\"}\n", NULL, "-j", "call", "--timeout", "300",
		   "prober.wait", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A call's wait is for the whole call: a stream whose items come more
 * often than the wait does not hold hubctl past it (each item restarted
 * the wait: 20 items 250 ms apart went on for 5 s). */
START_TEST(test_stream_wait_is_whole)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, "[guest streamer]\nexec = @/tests/guests/streamer\n",
		     "streamer");
	ck_assert(hub_wait_method(&hub, "streamer.drip") == 0);
	expect_ctl(1, NULL, "no answer within 2.3 s (the call's --timeout, and 2 s for its "
		   "answer to come)\n", "call", "--timeout", "300", "streamer.drip", "20", "250",
		   NULL);
	expect_ctl(1, NULL, "no answer within 1 s (-t)\n", "-t", "1", "call", "streamer.drip",
		   "20", "250", NULL);
	/* given the time, all of it */
	hubctl_ok(&hub, &out, "call", "--timeout", "30000", "streamer.drip", "3", "10", (char *)NULL);
	ck_assert_str_eq(out, "1\n2\n3\n3\n");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* An unknown guest: one wording, whoever says it (hubd or hubctl). */
START_TEST(test_unknown_guest)
{
	static const char *const cmds[] = { "peers", "restart", "stop", "start", "logs",
					    "ticket" };

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		expect_ctl(1, "", "hubctl: no such guest: nosuch\n", cmds[i], "nosuch", NULL);
		/* -j: the refusal as JSON on stdout, whoever made it */
		expect_ctl(1, "{\"ok\":false,\"error\":\"no such guest: nosuch\"}\n", NULL,
			   "-j", cmds[i], "nosuch", NULL);
	}
	/* hubctl's own refusal of remotes with no bridge: the same with -j */
	expect_ctl(1, "", "hubctl: remotes: no NATS bridge on this hub (no guest serves "
		   "GUEST.stats)\n", "remotes", NULL);
	expect_ctl(1, "{\"ok\":false,\"error\":\"remotes: no NATS bridge on this hub (no guest "
		   "serves GUEST.stats)\"}\n", NULL, "-j", "remotes", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* -s naming no hub's socket: what it is instead, exit 2, no hub needed
 * (a directory and a file were "Connection refused", "" an abstract
 * socket). */
START_TEST(test_socket_not_a_hub)
{
	snprintf(hub.sock, sizeof(hub.sock), "%s", harness_dir());
	expect_ctl(2, "", "hubctl: cannot reach hubd at ", "status", NULL);
	expect_ctl(2, "", ": not a socket (-s names hubd's control socket, its [hub] control =)\n",
		   "status", NULL);
	expect_ctl(2, "", ": not a socket", "-j", "peers", NULL);
	snprintf(hub.sock, sizeof(hub.sock), "%s", bin("hubctl"));
	expect_ctl(2, "", ": not a socket", "status", NULL);
	hub.sock[0] = '\0';
	expect_ctl(2, "", "hubctl: no control socket: -s (or HUBCTL_SOCKET) is empty\n", "status",
		   NULL);
}
END_TEST

/* hubctl methods: the hub's first, then a guest's methods together, by
 * guest then by name; one registered late (prober.aaa, after echo's and
 * kv's) among its own. The same order with -j. */
START_TEST(test_methods_grouped)
{
	char *out = NULL, *line, *save = NULL, last_owner[64] = "", last_name[128] = "";
	char name[128], sig[300], owner[64];
	int rows = 0, guests = 0, aaa = 0;

	hub_start_up(&hub, NULL, PROBER GUEST_ECHO "[guest kv]\nexec = @/guests/kv\n",
		     "prober,echo,kv");
	ck_assert(hub_wait_method(&hub, "prober.register_lib,echo.echo,kv.put") == 0);
	expect_ctl(0, "ok\n", NULL, "call", "prober.register_lib", "prober.aaa", "->str", NULL);
	ck_assert_int_eq(hubctl(&hub, &out, "methods", (char *)NULL), 0);
	for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "METHOD", 6) == 0)
			continue;
		ck_assert_msg(sscanf(line, "%127s %299s %63s", name, sig, owner) == 3, "'%s'", line);
		if (strcmp(owner, last_owner) != 0) {
			/* a new group: the hub's first, then guests in order, each once */
			ck_assert_msg(rows == 0 ? strcmp(owner, "hub") == 0 :
				      strcmp(last_owner, "hub") == 0 || strcmp(owner, last_owner) > 0,
				      "owner %s after %s", owner, last_owner);
			guests++;
		} else {
			ck_assert_msg(strcmp(name, last_name) > 0, "%s after %s", name, last_name);
		}
		aaa += strcmp(name, "prober.aaa") == 0;
		snprintf(last_owner, sizeof(last_owner), "%s", owner);
		snprintf(last_name, sizeof(last_name), "%s", name);
		rows++;
	}
	ck_assert_msg(guests == 4 && aaa == 1, "%d groups, prober.aaa %d times", guests, aaa);
	free(out);
	/* -j: the same order, as hubd answers */
	ck_assert_int_eq(hubctl(&hub, &out, "-j", "methods", (char *)NULL), 0);
	ck_assert_msg(strstr(out, "\"name\":\"prober.aaa\"") != NULL &&
		      strstr(out, "\"name\":\"prober.aaa\"") < strstr(out, "\"name\":\"prober.busy\"") &&
		      strstr(out, "\"name\":\"echo.echo\"") < strstr(out, "\"name\":\"kv.put\"") &&
		      strstr(out, "\"name\":\"kv.put\"") < strstr(out, "\"name\":\"prober.aaa\""),
		      "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* sh -c cmd: what it printed into out (cap bytes, NUL-terminated), its
 * exit status (-1 if a signal ended it). */
static int
sh_out(const char *cmd, char *out, size_t cap)
{
	FILE *f;
	size_t n;
	int status;

	ck_assert_ptr_nonnull(f = popen(cmd, "r"));
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	status = pclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* hub-run -h: its whole help (usage, every option, the environment,
 * examples, exit status) on stdout, exit 0, as the other tools. */
START_TEST(test_hub_run_help)
{
	static const char *const has[] = {
		"usage: hub-run ", "  -c conf ", "  -g 'name=exec [arg...]'", "  -w method ",
		"  -t seconds ", "  -v ", "  -h ", "HUBCTL_SOCKET", "TMPDIR", "examples:",
		"hub-run -g kv=", "exit status: ",
	};
	char cmd[600], out[8192];
	int status;

	snprintf(cmd, sizeof(cmd), "'%s' -h 2>&1", bin("hub-run"));
	status = sh_out(cmd, out, sizeof(out));
	ck_assert_msg(status == 0, "status %d: %s", status, out);
	for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++)
		ck_assert_msg(strstr(out, has[i]) != NULL, "no '%s' in: %s", has[i], out);
}
END_TEST

/* hub-run with a guest that cannot start: it says which and why at
 * once (exit 125), rather than waiting for -t to run out; a spawn that
 * fails too (it once counted only deaths that restarted); and a config
 * hubd refuses. hubd's log is shown once. */
START_TEST(test_hub_run_says_which_guest_died)
{
	static const struct {
		const char *guest, *said;
	} cases[] = {
		{ "bad=/nonexistent/guest",
		  "hub-run: guest bad died: spawn failed, exec /nonexistent/guest: "
		  "No such file or directory\n" },
		{ "quits=/bin/false", "hub-run: guest quits died: exited, status 1\n" },
		/* hubd refuses the config: its log once, not again as it exits */
		{ "a b=/bin/true", "hub-run: hubd exited\n" },
	};
	char cmd[800], out[16384];
	int status;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(cmd, sizeof(cmd), "TMPDIR='%s' '%s' -t 300 -g '%s' -- true 2>&1",
			 harness_dir(), bin("hub-run"), cases[i].guest);
		status = sh_out(cmd, out, sizeof(out));
		ck_assert_msg(status == 125, "status %d: %s", status, out);
		ck_assert_msg(strstr(out, cases[i].said) != NULL, "no '%s' in: %s", cases[i].said,
			      out);
		ck_assert_msg(strstr(out, "hubd's log:") != NULL &&
			      strstr(strstr(out, "hubd's log:") + 1, "hubd's log:") == NULL,
			      "hubd's log not shown once: %s", out);
	}
}
END_TEST

/* hub-run -g with a path relative to here, as the README shows it: the
 * path made absolute, and the words after it the guest's arguments, none
 * when there are none (the path itself was given as one). */
START_TEST(test_hub_run_relative_exec)
{
	char cmd[800], out[16384], want[600];
	int status;

	snprintf(cmd, sizeof(cmd), "cd '%s' && TMPDIR='%s' '%s' -t 300 -g 'echo=./guests/echo' "
		 "-g 'kv=./guests/kv  --quiet' -w echo.echo -w kv.get -- "
		 "sh -c 'cat \"${HUBCTL_SOCKET%%/*}/hubd.conf\"' 2>&1", BUILD_DIR,
		 harness_dir(), bin("hub-run"));
	status = sh_out(cmd, out, sizeof(out));
	ck_assert_msg(status == 0, "status %d: %s", status, out);
	snprintf(want, sizeof(want), "[guest echo]\nexec = %s/./guests/echo\n[guest kv]\n",
		 BUILD_DIR);
	ck_assert_msg(strstr(out, want) != NULL, "no '%s' in: %s", want, out);
	snprintf(want, sizeof(want), "[guest kv]\nexec = %s/./guests/kv\nargs = --quiet\n",
		 BUILD_DIR);
	ck_assert_msg(strstr(out, want) != NULL, "no '%s' in: %s", want, out);
}
END_TEST

/* hub-run -c with a relative exec: relative to the file's directory, as
 * hubd.conf(5) says, not to the directory hub-run copies the file to (nor
 * to here). The file lies in a directory of its own, its name with a
 * blank in it; exec = name, and exec: ../name with a comment after it. */
START_TEST(test_hub_run_conf_relative_exec)
{
	char cmd[1600], out[16384], want[600];
	int status;

	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir 'conf dir' && "
		 "ln -s '%s/guests/echo' 'conf dir/echo' && ln -s '%s/guests/kv' kv && "
		 "printf '[guest echo]\\nexec = echo\\n[guest kv]\\nexec: ../kv ; its own\\n' "
		 "> 'conf dir/hubd.conf' && "
		 "TMPDIR='%s' '%s' -t 300 -c 'conf dir/hubd.conf' -w echo.echo -w kv.get -- "
		 "sh -c 'hubctl call echo.echo hi && grep exec \"${HUBCTL_SOCKET%%/*}/hubd.conf\"' "
		 "2>&1", harness_dir(), BUILD_DIR, BUILD_DIR, harness_dir(), bin("hub-run"));
	status = sh_out(cmd, out, sizeof(out));
	ck_assert_msg(status == 0, "status %d: %s", status, out);
	snprintf(want, sizeof(want), "hi\nexec = %s/conf dir/echo\nexec: %s/conf dir/../kv ; "
		 "its own\n", harness_dir(), harness_dir());
	ck_assert_msg(strcmp(out, want) == 0, "not '%s': %s", want, out);
}
END_TEST

/* hub-run -g with a program's name, no slash in it: found on PATH as a
 * shell finds it, given to hubd with its path (it was taken relative to
 * hub-run's directory); its arguments after it. */
START_TEST(test_hub_run_exec_on_path)
{
	char cmd[1600], out[16384], want[600];
	int status;

	snprintf(cmd, sizeof(cmd), "mkdir '%s/bin' && ln -s '%s/guests/kv' '%s/bin/my-kv' && "
		 "PATH='%s/bin':\"$PATH\" TMPDIR='%s' '%s' -t 300 -g 'kv=my-kv  --quiet' -w kv.get -- "
		 "sh -c 'hubctl call kv.put a b && hubctl call kv.get a && "
		 "grep -A 1 exec \"${HUBCTL_SOCKET%%/*}/hubd.conf\"' 2>&1", harness_dir(), BUILD_DIR,
		 harness_dir(), harness_dir(), harness_dir(), bin("hub-run"));
	status = sh_out(cmd, out, sizeof(out));
	ck_assert_msg(status == 0, "status %d: %s", status, out);
	snprintf(want, sizeof(want), "b\nexec = %s/bin/my-kv\nargs = --quiet\n", harness_dir());
	ck_assert_msg(strcmp(out, want) == 0, "not '%s': %s", want, out);
}
END_TEST

/* hub-run -g with a program's name found nowhere on PATH: hub-run says
 * so and exits 125 at once, as for its other usage errors, with no hub
 * started (hubd once got the name and failed to spawn it). */
START_TEST(test_hub_run_exec_not_found)
{
	char cmd[800], out[16384];
	int status;

	snprintf(cmd, sizeof(cmd), "TMPDIR='%s' '%s' -t 300 -g 'nope=hub-run-no-such-guest -x' "
		 "-- echo ran 2>&1", harness_dir(), bin("hub-run"));
	status = sh_out(cmd, out, sizeof(out));
	ck_assert_msg(status == 125, "status %d: %s", status, out);
	ck_assert_msg(strcmp(out, "hub-run: -g nope=hub-run-no-such-guest -x: "
			     "hub-run-no-such-guest not found on PATH\n") == 0, "said: %s", out);
}
END_TEST

/* Whether every line of a table has col (a column's heading in its first
 * line) where the heading is: starting where it starts (left-aligned), or
 * ending where it ends (right): the rows aligned. */
static void
expect_aligned(const char *table, const char *col, int right, const char *what)
{
	const char *nl = strchr(table, '\n'), *at = strstr(table, col);
	size_t x;

	ck_assert_msg(nl != NULL && at != NULL && at < nl, "%s: no %s heading: %s", what, col,
		      table);
	x = (size_t)(at - table) + (right ? strlen(col) - 1 : 0);
	for (const char *l = nl + 1; *l != '\0'; l = strchr(l, '\n') + 1) {
		ck_assert_msg(strchr(l, '\n') != NULL && (size_t)(strchr(l, '\n') - l) > x &&
			      l[x] != ' ' && l[right ? x + 1 : x - 1] == ' ', "%s: a row's %s is "
			      "not under its heading: %s", what, col, table);
	}
}

/* Names as long as the config (32) and a method's (63) allow: the
 * tables' columns widen, the rows stay under their headings. */
START_TEST(test_tables_fit_long_names)
{
	static const char longname[] = "a234567890123456789012345678901b";
	char guests[512], method[80], *out = NULL;

	snprintf(guests, sizeof(guests), PROBER "[guest %s]\nexec = @/tests/guests/lifeguest\n"
		 "args = --mode=idle\n[guest later]\nexec = @/tests/guests/lifeguest\n"
		 "start = manual\n", longname);
	hub_start_up(&hub, NULL, guests, "prober,a234567890123456789012345678901b");
	ck_assert(hub_wait_method(&hub, "prober.register") == 0);
	snprintf(method, sizeof(method), "prober.%.*s", 56, "m23456789012345678901234567890123456"
		 "789012345678901234567890");
	expect_ctl(0, "ok\n", NULL, "call", "prober.register", method, "str->str", NULL);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	expect_aligned(out, "STATE", 0, "peers");
	expect_aligned(out, "PEER", 1, "peers");
	expect_aligned(out, "UPTIME", 1, "peers");	/* "-" for one not running */
	free(out);
	/* the same alone: not "0 ns" */
	hubctl_ok(&hub, &out, "peers", "later", (char *)NULL);
	ck_assert_msg(strstr(out, "\nuptime: -\n") != NULL, "%s", out);
	free(out);
	/* a limit as it is, not rounded: 65532 B is no "64.0 KiB" */
	hubctl_ok(&hub, &out, "status", (char *)NULL);
	ck_assert_msg(strstr(out, "\nmax_payload_size       65532 B\n") != NULL &&
		      strstr(out, "\ninitial_credit         64.0 KiB\n") != NULL, "%s", out);
	free(out);
	hubctl_ok(&hub, &out, "methods", (char *)NULL);
	expect_aligned(out, "SIGNATURE", 0, "methods");
	expect_aligned(out, "OWNER", 0, "methods");
	free(out);
	hubctl_ok(&hub, &out, "stats", (char *)NULL);
	ck_assert_ptr_nonnull(strstr(out, "\n(total) "));
	strchr(strstr(out, "\n(total) ") + 1, '\n')[1] = '\0';	/* the table, not what follows */
	expect_aligned(out, "CALLS-IN", 1, "stats");
	free(out);
	/* top's frame: a line about the hub, then the table */
	hubctl_ok(&hub, &out, "top", "-n", "1", (char *)NULL);
	ck_assert_ptr_nonnull(strchr(out, '\n'));
	expect_aligned(strchr(out, '\n') + 1, "STATE", 0, "top");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A malformed signature is refused with what is wrong and where: by
 * libguest before it asks (on the guest's stderr: hubctl logs), by hubd
 * when a guest sends it anyway (its answer, and its log). */
START_TEST(test_bad_signature_said)
{
	static const char what[] =
	    "signature \"str,strr->u64\": unknown type at byte 5 (\"strr->u64\")";
	char want[256], *out = NULL, *log;

	hub_start_up(&hub, NULL, PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.register,prober.register_lib") == 0);
	expect_ctl(0, "error: EINVAL\n", NULL, "call", "prober.register_lib", "prober.bad",
		   "str,strr->u64", NULL);
	snprintf(want, sizeof(want), "libguest: guest_register prober.bad: %s", what);
	ck_assert_int_eq(hubctl(&hub, &out, "logs", "prober", (char *)NULL), 0);
	ck_assert_msg(strstr(out, want) != NULL, "no '%s' in: %s", want, out);
	free(out);
	snprintf(want, sizeof(want), "error: hub: %s\n", what);
	expect_ctl(0, want, NULL, "call", "prober.register", "prober.bad", "str,strr->u64",
		   NULL);
	snprintf(want, sizeof(want), "guest prober: may not register prober.bad: %s", what);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, want) != NULL, "no '%s' in: %s", want, hub_log_tail(&hub));
	free(log);
	/* a guest's control characters reach neither the log nor hubctl raw */
	expect_ctl(0, "error: hub: signature \"\\x1b[2J->u64\": unknown type at byte 1 "
		   "(\"\\x1b[2J->u64\")\n", NULL, "call", "prober.register", "prober.bad",
		   "\033[2J->u64", NULL);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "\033") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	/* one that parses is registered */
	expect_ctl(0, "ok\n", NULL, "call", "prober.register_lib", "prober.good", "str->str",
		   NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* scripts/check-man.sh on a copy of the tree (BUILD_DIR/..) with edit
 * made to it (sh, run in the copy): exit status, its stderr in err. */
static int
check_man_after(const char *edit, char *err, size_t cap)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "set -e; d='%s'; rm -rf \"$d\"; mkdir \"$d\"; cd '%s/..'; "
		 "cp -r README.md doc daemon hubctl nats guestlib proto mt bindings scripts "
		 "\"$d\"; cd \"$d\"; %s; sh scripts/check-man.sh 2>&1 >/dev/null",
		 harness_path("tree"), BUILD_DIR, edit);
	return sh_out(cmd, err, cap);
}

/* check-man fails when a control command is missing from doc/control.md
 * (its table, or its section) or hubctl sends one hubd does not have. */
START_TEST(test_check_man_commands)
{
	static const char *const cases[][2] = {
		{ "sed -i '/^| `calls` |/d' doc/control.md",
		  "doc/control.md: commands missing from the Commands table: calls" },
		{ "sed -i 's/^### `ticket`$/### the ticket/' doc/control.md",
		  "doc/control.md: commands not documented: ticket" },
		{ "echo 'static void f(void) { client_cmd(ctl, \"bogus\"); }' >> hubctl/debug.c",
		  "hubctl sends commands that daemon/request.h and doc/control.md do not have: "
		  "bogus" },
	};
	char err[16384];
	int rc;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = check_man_after(cases[i][0], err, sizeof(err));
		ck_assert_msg(rc == 1 && strstr(err, cases[i][1]) != NULL,
			      "after %s: exit %d, %s", cases[i][0], rc, err);
	}
}
END_TEST

Suite *suite_hubctl(void);
Suite *
suite_hubctl(void)
{
	Suite *s = suite_create("hubctl");
	TCase *tc = tcase_create("edges");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_call_prints_opt);
	tcase_add_test(tc, test_argument_errors);
	tcase_add_test(tc, test_stream_wait_is_whole);
	tcase_add_test(tc, test_unknown_guest);
	tcase_add_test(tc, test_socket_not_a_hub);
	tcase_add_test(tc, test_methods_grouped);
	tcase_add_test(tc, test_bad_signature_said);
	tcase_add_test(tc, test_hub_run_help);
	tcase_add_test(tc, test_hub_run_says_which_guest_died);
	tcase_add_test(tc, test_hub_run_relative_exec);
	tcase_add_test(tc, test_hub_run_conf_relative_exec);
	tcase_add_test(tc, test_hub_run_exec_on_path);
	tcase_add_test(tc, test_hub_run_exec_not_found);
	tcase_add_test(tc, test_tables_fit_long_names);
	tcase_add_test(tc, test_check_man_commands);
	suite_add_tcase(s, tc);
	return s;
}
