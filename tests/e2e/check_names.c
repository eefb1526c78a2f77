/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Method names belong to their guests, end to end: a guest registers its
 * own NAME.* and what its provides lists, and nothing else, so another
 * guest cannot take a name while its guest is stopped or failed; provides
 * gives a guest more names; a reload that would let two guests share a
 * name is refused, and one that moves a name hands it over. The hostile
 * guest is lifeguest --mode=claim. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "proto/method.h"
#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define CLAIMER	"exec = @/tests/guests/lifeguest\nargs = --mode=claim --claim="

/* Waits until name is in state (10 s); 0 or -1. */
static int
wait_state(const char *name, const char *state)
{
	for (double end = now_s() + 10; now_s() < end; sleep_ms(5))
		if (strcmp(hub_peer_state(&hub, name), state) == 0)
			return 0;
	return -1;
}

/* Waits until name is up after n restarts (10 s), and asserts it. */
static void
wait_restarted(const char *name, int n)
{
	for (double end = now_s() + 10; now_s() < end; sleep_ms(5))
		if (hub_peer_int(&hub, name, "restarts") == n &&
		    strcmp(hub_peer_state(&hub, name), "up") == 0)
			return;
	ck_abort_msg("%s: %d restarts, %s; log: %s", name, hub_peer_int(&hub, name, "restarts"),
		     hub_peer_state(&hub, name), hub_log_tail(&hub));
}

/* Waits until the log says what guest name's instance (its pid now) got
 * for its claim of method, and asserts it is want (ok, EPERM...). */
static void
expect_claim(const char *name, const char *method, const char *want)
{
	char line[256], *log = NULL;
	int pid = hub_peer_int(&hub, name, "pid");

	snprintf(line, sizeof(line), "lifeguest %d: claim %s: ", pid, method);
	for (double end = now_s() + 10; now_s() < end; sleep_ms(10)) {
		free(log);
		log = hub_log(&hub);
		if (strstr(log, line) != NULL)
			break;
	}
	strcat(line, want);
	strcat(line, "\n");
	ck_assert_msg(strstr(log, line) != NULL, "no '%s' in the log: %s", line,
		      hub_log_tail(&hub));
	free(log);
}

/* hubctl call method arg: its exit status, its output in *out. */
static int
call(const char *method, const char *arg, char **out)
{
	return hubctl(&hub, out, "-j", "call", method, arg, (char *)NULL);
}

static void
expect_answer(const char *method, const char *arg, const char *want)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "call", method, arg, (char *)NULL);

	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "%s %s: exit %d, '%s' (want '%s')",
		      method, arg, rc, out, want);
	free(out);
}

static void
ctl(const char *cmd, const char *name)
{
	char *out = NULL;

	ck_assert_msg(hubctl(&hub, &out, cmd, name, (char *)NULL) == 0, "hubctl %s %s: %s",
		      cmd, name, out);
	free(out);
}

/* Defect: after hubctl stop echo, another guest registered echo.echo
 * (answering HIJACKED) and echo, started again, looped on "cannot
 * register methods". Stopped, its names stay its own. */
START_TEST(test_stopped_guest_keeps_its_names)
{
	char *out = NULL, *log;
	int rc, pid;

	hub_start_up(&hub, NULL, ECHO "[guest hostile]\n" CLAIMER
		     "echo.echo,echo.reverse,hostile.x\n", "echo,hostile");
	ck_assert(hub_wait_method(&hub, "echo.echo,hostile.x") == 0);
	/* up, echo's names are refused as not hostile's, not as taken */
	expect_claim("hostile", "echo.echo", "EPERM");
	expect_claim("hostile", "hostile.x", "ok");
	ctl("stop", "echo");
	ck_assert(wait_state("echo", "down") == 0);
	/* a new instance of hostile tries again while echo is down */
	ctl("restart", "hostile");
	wait_restarted("hostile", 1);
	expect_claim("hostile", "hostile.x", "ok");
	expect_claim("hostile", "echo.echo", "EPERM");
	expect_claim("hostile", "echo.reverse", "EPERM");
	rc = call("echo.echo", "hi", &out);
	ck_assert_msg(rc == 1 && strstr(out, "guest echo is down") != NULL &&
		      strstr(out, "HIJACKED") == NULL, "exit %d: %s", rc, out);
	free(out);
	/* echo comes back with its names */
	ctl("start", "echo");
	ck_assert(hub_wait_up(&hub, "echo", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	expect_answer("echo.echo", "hi", "hi\n");
	expect_answer("hostile.x", "hi", "HIJACKED\n");
	/* and stays up */
	pid = hub_peer_int(&hub, "echo", "pid");
	sleep_ms(300);
	ck_assert_str_eq(hub_peer_state(&hub, "echo"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), pid);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "cannot register methods") == NULL, "%s", hub_log_tail(&hub));
	/* hubd says it once per refusal, naming the guest */
	ck_assert_msg(strstr(log, "guest hostile: may not register echo.echo: not one of its "
			     "names (hostile.* or provides)") != NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: a guest that got kv failed (killing it repeatedly) then owned
 * kv.get. Failed, its names stay its own. */
START_TEST(test_failed_guest_keeps_its_names)
{
	char *out = NULL;
	int rc;

	hub_start_up(&hub, NULL, "[guest kv]\nexec = @/guests/kv\nmax_deaths = 1\n"
		     "backoff_min = 10ms\n[guest hostile]\n" CLAIMER "kv.get,kv.put\n",
		     "kv,hostile");
	ck_assert(hub_wait_method(&hub, "kv.get") == 0);
	expect_claim("hostile", "kv.get", "EPERM");
	/* two deaths: more than max_deaths, failed */
	ck_assert(kill(hub_peer_int(&hub, "kv", "pid"), SIGKILL) == 0);
	wait_restarted("kv", 1);
	ck_assert(kill(hub_peer_int(&hub, "kv", "pid"), SIGKILL) == 0);
	ck_assert_msg(wait_state("kv", "failed") == 0, "kv is %s", hub_peer_state(&hub, "kv"));
	ctl("restart", "hostile");
	wait_restarted("hostile", 1);
	expect_claim("hostile", "kv.get", "EPERM");
	expect_claim("hostile", "kv.put", "EPERM");
	rc = call("kv.get", "k", &out);
	ck_assert_msg(rc == 1 && strstr(out, "guest kv is failed") != NULL, "exit %d: %s", rc,
		      out);
	free(out);
	/* and kv, started again, has them back */
	ctl("start", "kv");
	ck_assert(hub_wait_method(&hub, "kv.get,kv.put") == 0);
	hubctl_ok(&hub, &out, "call", "kv.put", "k", "v", (char *)NULL);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* provides = other.*, exact.one: those names too, and no others. */
START_TEST(test_provides_gives_names)
{
	json_object *a, *ms;
	int seen = 0;

	hub_start_up(&hub, NULL, ECHO "[guest claimer]\n" CLAIMER
		     "other.x,other.deep.y,others.z,other.,exact.one,exact.two,echo.echo,"
		     "claimer.own\nprovides = other.*, exact.one\n", "echo,claimer");
	ck_assert(hub_wait_method(&hub, "other.x,other.deep.y,exact.one,claimer.own") == 0);
	expect_claim("claimer", "other.x", "ok");
	expect_claim("claimer", "other.deep.y", "ok");
	expect_claim("claimer", "exact.one", "ok");
	expect_claim("claimer", "claimer.own", "ok");
	expect_claim("claimer", "others.z", "EPERM");
	/* PREFIX.* is PREFIX. and more; "other." is no name anyway (an
	 * empty part: libguest says so) */
	expect_claim("claimer", "other.", "Invalid argument");
	expect_claim("claimer", "exact.two", "EPERM");
	expect_claim("claimer", "echo.echo", "EPERM");
	expect_answer("other.x", "hi", "HIJACKED\n");
	expect_answer("echo.echo", "hi", "hi\n");
	/* hubctl methods: the claimer's are its */
	a = hub_request(&hub, "{\"cmd\":\"methods\"}", NULL);
	ck_assert_ptr_nonnull(a);
	ms = json_get(a, "methods");
	ck_assert_ptr_nonnull(ms);
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		const char *name = json_object_get_string(json_get(m, "name"));

		if (strcmp(name, "other.x") == 0 || strcmp(name, "exact.one") == 0) {
			ck_assert_str_eq(json_object_get_string(json_get(m, "owner")), "claimer");
			seen++;
		}
		ck_assert_msg(strcmp(name, "others.z") != 0 && strcmp(name, "exact.two") != 0,
			      "%s registered", name);
	}
	ck_assert_int_eq(seen, 2);
	json_object_put(a);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST


/* A reload whose file would let two guests register one name is refused
 * like any broken file: nothing changes. */
START_TEST(test_reload_overlap_refused)
{
	char msgs[4096];
	int pid;

	hub_start_up(&hub, NULL, ECHO, "echo");
	pid = hub_peer_int(&hub, "echo", "pid");
	ck_assert_int_eq(hub_write_conf(&hub, NULL, ECHO "[guest thief]\n" CLAIMER
					"echo.echo\nprovides = echo.*\n"), 0);
	ck_assert(!hub_reload(&hub, msgs, sizeof(msgs)));
	ck_assert_msg(strstr(msgs, "provides 'echo.*' overlaps echo.*, the names of guest "
			     "'echo'") != NULL && strstr(msgs, "nothing changed") != NULL,
		      "%s", msgs);
	ck_assert_str_eq(hub_peer_state(&hub, "thief"), "?");
	ck_assert_str_eq(hub_peer_state(&hub, "echo"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), pid);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A reload that moves provides = shared.* from a to b: both restart (a
 * setting changed); a's new instance may no longer register shared.x,
 * and b's gets it once a's old instance no longer holds it. */
START_TEST(test_reload_moves_a_name)
{
	char msgs[4096];

	hub_start_up(&hub, NULL, "[guest a]\n" CLAIMER "shared.x\nprovides = shared.*\n"
		     "[guest b]\n" CLAIMER "shared.x\n", "a,b");
	ck_assert(hub_wait_method(&hub, "shared.x") == 0);
	expect_claim("a", "shared.x", "ok");
	expect_claim("b", "shared.x", "EPERM");
	ck_assert_int_eq(hub_write_conf(&hub, NULL, "[guest a]\n" CLAIMER "shared.x\n"
					"[guest b]\n" CLAIMER "shared.x\nprovides = shared.*\n"),
			 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_msg(strstr(msgs, "guest a: changed, restarting") != NULL &&
		      strstr(msgs, "guest b: changed, restarting") != NULL, "%s", msgs);
	wait_restarted("a", 1);
	wait_restarted("b", 1);
	expect_claim("a", "shared.x", "EPERM");
	/* b may have asked while a's old instance still held it: asked
	 * again now, it is b's */
	ctl("restart", "b");
	wait_restarted("b", 2);
	expect_claim("b", "shared.x", "ok");
	ck_assert(hub_wait_method(&hub, "shared.x") == 0);
	expect_answer("shared.x", "hi", "HIJACKED\n");
	ck_assert_str_eq(hub_peer_state(&hub, "a"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Two names with one method id, each its own guest's: the second to
 * ask is refused, and a call by its name reaches no one, not the first's
 * handler. The pair came from a collision search (about 2^32 SipHash
 * runs for two names of one's own choosing; a name with a given name's
 * id would take about 2^64). */
#define TWIN_A	"a.02u30b20kunkn"
#define TWIN_B	"b.topfbhcc5qxuh"
START_TEST(test_id_collision_refused)
{
	char msgs[4096], *out = NULL, *log;

	ck_assert_uint_eq(hp_method_id(TWIN_A, strlen(TWIN_A)),
			  hp_method_id(TWIN_B, strlen(TWIN_B)));
	hub_start_up(&hub, NULL, "[guest a]\n" CLAIMER TWIN_A "\n", "a");
	expect_claim("a", TWIN_A, "ok");
	ck_assert_int_eq(hub_write_conf(&hub, NULL, "[guest a]\n" CLAIMER TWIN_A "\n"
					"[guest b]\n" CLAIMER TWIN_B "\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_int_eq(wait_state("b", "up"), 0);
	expect_claim("b", TWIN_B, "EEXIST");
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "guest b: may not register " TWIN_B ": the method's id collides with another method's, " TWIN_A) != NULL,
		      "%s", hub_log_tail(&hub));
	free(log);
	expect_answer(TWIN_A, "hi", "HIJACKED\n");
	ck_assert_msg(hubctl_err(&hub, &out, "call", TWIN_B, "hi", (char *)NULL) != 0 &&
		      strstr(out, "HIJACKED") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* No line of the log begins with what. */
static int
no_line_begins(const char *log, const char *what)
{
	for (const char *l = log; l != NULL && *l != '\0'; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (strncmp(l, what, strlen(what)) == 0)
			return 0;
	return 1;
}

/* Issue 39, point 3: a guest's text forges no line of hubd's log and
 * reaches no terminal raw. Method names have a character set, checked by
 * libguest (EINVAL) and by hubd for a guest that asks without it; a
 * hub.log line and a Goodbye's reason are escaped in the log; hubctl
 * escapes what it prints. Point 7: a map argument with a key given twice
 * is refused, naming it, before anything is sent. (lifeguest
 * --mode=forger) */
START_TEST(test_guest_text_escaped)
{
	char *log, *out = NULL;
	int rc;

	hub_start_up(&hub, NULL, "[guest h4]\nexec = @/tests/guests/lifeguest\n"
		     "args = --mode=forger\n", "h4");
	ck_assert_msg(hub_wait_method(&hub, "h4.ok") == 0, "%s", hub_log_tail(&hub));
	for (double end = now_s() + 10; now_s() < end; sleep_ms(10)) {
		log = hub_log(&hub);
		if (strstr(log, "guest h4: goodbye: ") != NULL)
			break;
		free(log);
		log = NULL;
	}
	ck_assert_msg(log != NULL, "no goodbye: %s", hub_log_tail(&hub));
	ck_assert_msg(strstr(log, "lifeguest forger: register 0: EINVAL\n") != NULL &&
		      strstr(log, "lifeguest forger: register 1: EINVAL\n") != NULL,
		      "%s", hub_log_tail(&hub));
	/* hubd's own check, and its log line: the name escaped */
	ck_assert_msg(strstr(log, "lifeguest forger: raw register 0: refused: " HP_METHOD_NAME_CHAR
			      "\n") != NULL &&
		      strstr(log, "lifeguest forger: raw register 1: refused: " HP_METHOD_NAME_CHAR
			     "\n") != NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(strstr(log, "hubd: guest h4: may not register \"h4.a\\nhubd: guest kv: "
			      "FAKE\": " HP_METHOD_NAME_CHAR "\n") != NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(strstr(log, "hubd: guest h4: may not register \"h4.b\\033[31mred\": ")
		      != NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(strstr(log, "hubd: guest h4: log\\nhubd: guest kv: FAKE\\033[31mred\n")
		      != NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(strstr(log, "hubd: guest h4: goodbye: b\\nhubd: guest kv: FAKE"
			      "\\033[31m\n") != NULL, "%s", hub_log_tail(&hub));
	ck_assert_msg(no_line_begins(log, "hubd: guest kv: FAKE"), "%s", hub_log_tail(&hub));
	ck_assert_msg(strchr(log, '\033') == NULL, "an ESC in the log: %s", hub_log_tail(&hub));
	free(log);
	/* hubctl: the tables, and a call's result */
	hubctl_ok(&hub, &out, "methods", (char *)NULL);
	ck_assert_msg(strstr(out, "h4.ok") != NULL && strchr(out, '\033') == NULL &&
		      strstr(out, "FAKE") == NULL, "%s", out);
	free(out);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	ck_assert_msg(strchr(out, '\033') == NULL, "%s", out);
	free(out);
	hubctl_ok(&hub, &out, "call", "hub.ping", "a\033[31mb\nc", (char *)NULL);
	ck_assert_msg(strcmp(out, "a\\033[31mb\nc\n") == 0, "%s", out);
	free(out);
	/* point 7: refused here, naming the key; the guest saw no call */
	rc = hubctl_err(&hub, &out, "call", "h4.ok", "{\"a\":1,\"b\":2,\"a\":3}", (char *)NULL);
	ck_assert_msg(rc != 0 && strstr(out, "key \"a\" given twice") != NULL, "%d: %s", rc, out);
	free(out);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "h4.ok called") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The methods the hub keeps (hubctl status). */
static int
methods_kept(void)
{
	char *out = NULL;
	json_object *o;
	int n;

	hubctl_ok(&hub, &out, "-j", "status", (char *)NULL);
	ck_assert_ptr_nonnull(o = json_tokener_parse(out));
	n = json_object_get_int(json_get(o, "methods"));
	json_object_put(o);
	free(out);
	return n;
}

/* A guest whose every instance registers 200 new names: the names its
 * earlier instances left count against its 256, so the hub keeps at
 * most 256 of its names however often it restarts (it kept them all,
 * 700 kB an hour for one that restarted every 13 s), and each instance
 * still registers all of its own. */
START_TEST(test_restarts_keep_names_bounded)
{
	char msgs[2048];
	int base, pid = 0;

	hub_start_up(&hub, NULL, ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);	/* all of them */
	base = methods_kept();
	ck_assert_int_eq(hub_write_conf(&hub, NULL, ECHO "[guest many]\n"
		"exec = @/tests/guests/lifeguest\nargs = --mode=names --prefix=many --count=200\n"
		"max_deaths = 100\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)) == 1, "reload: %s", msgs);
	for (int i = 0; i < 4; i++) {
		char line[96], *log = NULL;

		if (i > 0) {
			ck_assert_int_eq(kill(pid, SIGKILL), 0);
			ck_assert_int_gt(hub_wait_new_pid(&hub, "many", pid, 10), 0);
		}
		ck_assert_int_eq(hub_wait_up(&hub, "many", 10000), 0);
		pid = hub_peer_int(&hub, "many", "pid");
		snprintf(line, sizeof(line), "lifeguest %d: registered ", pid);
		for (double end = now_s() + 10; now_s() < end && (log == NULL ||
		     strstr(log, line) == NULL); sleep_ms(10)) {
			free(log);
			log = hub_log(&hub);
		}
		strcat(line, "200 of 200\n");
		ck_assert_msg(strstr(log, line) != NULL, "instance %d: no '%s': %s", i, line,
			      hub_log_tail(&hub));
		free(log);
	}
	ck_assert_msg(methods_kept() <= base + 256, "the hub keeps %d methods (%d before)",
		      methods_kept(), base);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_names(void);
Suite *
suite_names(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stopped_guest_keeps_its_names);
	tcase_add_test(tc, test_failed_guest_keeps_its_names);
	tcase_add_test(tc, test_provides_gives_names);
	tcase_add_test(tc, test_reload_overlap_refused);
	tcase_add_test(tc, test_reload_moves_a_name);
	tcase_add_test(tc, test_id_collision_refused);
	tcase_add_test(tc, test_guest_text_escaped);
	tcase_add_test(tc, test_restarts_keep_names_bounded);
	suite_add_tcase(s, tc);
	return s;
}
