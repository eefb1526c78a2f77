/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The supervisor end to end: deaths counted for any max_deaths, failed
 * spawns as deaths, guests that hang up their doorbell, a guest's own
 * children, reloads that rename or re-add guests, and the Goodbye grace. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

/* Waits until name is in state (up to timeout s); 0 or -1. */
static int
wait_state(const char *name, const char *state, double timeout)
{
	double end = now_s() + timeout;

	while (now_s() < end) {
		if (strcmp(hub_peer_state(&hub, name), state) == 0)
			return 0;
		sleep_ms(5);
	}
	return -1;
}

/* Kills name's process (it ignores SIGTERM: hubctl stop leaves it
 * stopping until this, whatever the load) and waits until hubd saw it go:
 * down, or up again with another pid when start is set. */
static void
kill_stopping(const char *name, int pid, int start)
{
	double end = now_s() + 30;

	ck_assert_str_eq(hub_peer_state(&hub, name), "stopping");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	while (now_s() < end && hub_peer_int(&hub, name, "pid") == pid)
		sleep_ms(5);
	if (start)
		ck_assert_msg(hub_wait_new_pid(&hub, name, pid, 30) > 0,
			      "%s is %s; log: %s", name, hub_peer_state(&hub, name),
			      hub_log_tail(&hub));
	else
		ck_assert_msg(wait_state(name, "down", 30) == 0, "%s is %s; log: %s", name,
			      hub_peer_state(&hub, name), hub_log_tail(&hub));
}

/* hubctl cmd name: its output, asserted. */
static void
ctl_says(const char *cmd, const char *name, const char *want)
{
	char *out = NULL;

	hubctl_ok(&hub, &out, cmd, name, (char *)NULL);
	ck_assert_msg(strcmp(out, want) == 0, "hubctl %s %s: '%s', want '%s'", cmd, name,
		      out, want);
	free(out);
}

/* The latest death of name: field key as a string ("" if none). */
static const char *
last_death(const char *name, const char *key)
{
	static char buf[512];
	json_object *p = hub_peer(&hub, name), *deaths, *d, *v;

	buf[0] = '\0';
	if (p != NULL && json_object_object_get_ex(p, "deaths", &deaths) &&
	    (d = json_object_array_get_idx(deaths, 0)) != NULL &&
	    json_object_object_get_ex(d, key, &v))
		snprintf(buf, sizeof(buf), "%s", json_object_get_string(v));
	json_object_put(p);
	return buf;
}

/* How many entries hold a guest called name. */
static int
entries_named(const char *name)
{
	json_object *a = hub_request(&hub, "{\"cmd\":\"peers\"}", NULL), *peers;
	int n = 0;

	if (a == NULL || !json_object_object_get_ex(a, "peers", &peers)) {
		json_object_put(a);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(peers); i++)
		n += strcmp(json_object_get_string(json_get(json_object_array_get_idx(peers, i),
							    "name")), name) == 0;
	json_object_put(a);
	return n;
}

/* Waits until n entries hold name (timeout s); 0 or -1. */
static int
entries_named_wait(const char *name, int n, double timeout)
{
	for (double end = now_s() + timeout; now_s() < end; sleep_ms(5))
		if (entries_named(name) == n)
			return 0;
	return -1;
}

/* The pid of the last child lifeguest --mode=forker reported in the log
 * after offset (or -1), and where that line ends. */
static int
logged_child(size_t *offset)
{
	char *log = hub_log(&hub), *p = log + *offset, *hit;
	int pid = -1;

	while ((hit = strstr(p, "lifeguest child ")) != NULL) {
		pid = atoi(hit + strlen("lifeguest child "));
		p = hit + 1;
		*offset = (size_t)(p - log);
	}
	free(log);
	return pid;
}

/* Children of forker guests outlive a failed test unless killed here:
 * every pid any hub's log reported, then the harness's cleanup. */
static void
teardown(void)
{
	char path[512];
	DIR *d = opendir(harness_dir());
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		char line[256];
		FILE *f;

		if (n < 4 || strcmp(e->d_name + n - 4, ".log") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", harness_dir(), e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL) {
			char *hit = strstr(line, "lifeguest child ");
			int pid = hit ? atoi(hit + strlen("lifeguest child ")) : 0;

			if (pid > 1)
				kill(pid, SIGKILL);
		}
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	harness_teardown();
}

/* Defect: the tally held 8 deaths, so max_deaths >= 8 never failed a
 * guest (/bin/false restarted 1,298 times in 28 s with max_deaths 10). */
START_TEST(test_max_deaths_10_fails_after_11)
{
	char *out = NULL;

	ck_assert(hub_start(&hub, NULL,
		"[guest quitter]\nexec = /bin/false\nmax_deaths = 10\n"
		"backoff_min = 10ms\nbackoff_max = 20ms\n") == 0);
	ck_assert_msg(wait_state("quitter", "failed", 15) == 0,
		      "never failed: %s after %d restarts", hub_peer_state(&hub, "quitter"),
		      hub_peer_int(&hub, "quitter", "restarts"));
	/* 11 deaths: the first start and 10 restarts */
	ck_assert_int_eq(hub_peer_int(&hub, "quitter", "restarts"), 10);
	ck_assert_str_eq(last_death("quitter", "reason"), "exited");
	/* and it stays failed */
	sleep_ms(200);
	ck_assert_str_eq(hub_peer_state(&hub, "quitter"), "failed");
	ck_assert_int_eq(hub_peer_int(&hub, "quitter", "restarts"), 10);
	hubctl_ok(&hub, &out, "restart", "quitter", (char *)NULL);
	free(out);
	ck_assert(wait_state("quitter", "failed", 15) == 0);
	ck_assert_int_eq(hub_peer_int(&hub, "quitter", "restarts"), 21);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: a reload renaming the guest while the only entry was still
 * taken by the old name said ok and never started the new one. */
START_TEST(test_rename_with_one_entry)
{
	char msgs[2048];

	/* the same binary under both names: echo.* is theirs in turn */
	ck_assert(hub_start(&hub, "max_guests = 1\n",
			    "[guest old]\nexec = @/guests/echo\nprovides = echo.*\n") == 0);
	ck_assert(hub_wait_up(&hub, "old", 10000) == 0);
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	ck_assert_int_eq(hub_write_conf(&hub, "max_guests = 1\n", "[guest new]\n"
					"exec = @/guests/echo\nprovides = echo.*\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "reload: %s", msgs);
	ck_assert_msg(strstr(msgs, "new: added, waiting for a free peer entry") != NULL,
		      "reload said: %s", msgs);
	/* old stops, its entry frees, new starts: no second reload */
	ck_assert_msg(hub_wait_up(&hub, "new", 10000) == 0, "new is %s; log: %s",
		      hub_peer_state(&hub, "new"), hub_log_tail(&hub));
	ck_assert_int_eq(entries_named("old"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "new", "peer_id"), 1);
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	/* more guests than entries can never fit: refused, nothing changes */
	ck_assert_int_eq(hub_write_conf(&hub, "max_guests = 2\n", "[guest new]\n"
					"exec = @/guests/echo\nprovides = echo.*\n"
					"[guest other]\nexec = @/guests/echo\n"), 0);
	ck_assert(!hub_reload(&hub, msgs, sizeof(msgs)));
	ck_assert_msg(strstr(msgs, ": guest 'other': 2 guests but max_guests is 1: the running "
			     "one, kept until hubd restarts") != NULL, "%s", msgs);
	ck_assert_str_eq(hub_peer_state(&hub, "new"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: a guest whose doorbell hung up while it was still starting was
 * never ended: deaf, yet up forever. r[shm.doorbell.death] */
START_TEST(test_doorbell_closed_while_starting)
{
	double end;
	int pid = -1;

	ck_assert(hub_start(&hub, NULL,
		"[guest deaf]\nexec = @/tests/guests/lifeguest\nargs = --mode=hangup\n"
		"backoff_min = 10s\n") == 0);
	for (end = now_s() + 10; pid <= 0 && now_s() < end; sleep_ms(5))
		pid = hub_peer_int(&hub, "deaf", "pid");
	ck_assert_int_gt(pid, 0);
	for (end = now_s() + 10; now_s() < end; sleep_ms(20))
		if (strstr(last_death("deaf", "detail"), "closed its doorbell") != NULL)
			break;
	ck_assert_msg(strstr(last_death("deaf", "detail"), "closed its doorbell") != NULL,
		      "deaf is %s, never ended; log: %s", hub_peer_state(&hub, "deaf"),
		      hub_log_tail(&hub));
	ck_assert_str_eq(last_death("deaf", "reason"), "hung");
	ck_assert_msg(!alive(pid), "pid %d lives on", pid);
	/* restarted under its policy (on-failure): backing off first */
	ck_assert_str_eq(hub_peer_state(&hub, "deaf"), "backoff");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: what a guest forks outlived it and hubd, still mapping the
 * segment. The guest's process group goes with it. */
START_TEST(test_children_go_with_the_guest)
{
	size_t off = 0;
	double end;
	int pid, child = -1, pid2, child2 = -1;

	ck_assert(hub_start(&hub, NULL,
		"[guest forker]\nexec = @/tests/guests/lifeguest\nargs = --mode=forker\n"
		"backoff_min = 10ms\n") == 0);
	ck_assert(hub_wait_up(&hub, "forker", 10000) == 0);
	pid = hub_peer_int(&hub, "forker", "pid");
	for (end = now_s() + 10; child <= 0 && now_s() < end; sleep_ms(5))
		child = logged_child(&off);
	ck_assert_msg(child > 0 && alive(child), "no child: %s", hub_log_tail(&hub));
	/* kill -9 the guest: its child is gone too */
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	for (end = now_s() + 30; alive(child) && now_s() < end; sleep_ms(5))
		;
	ck_assert_msg(!alive(child), "child %d of killed guest %d lives on", child, pid);
	/* the next instance's child goes when hubd stops */
	for (end = now_s() + 10; now_s() < end; sleep_ms(5)) {
		pid2 = hub_peer_int(&hub, "forker", "pid");
		if (pid2 > 0 && pid2 != pid &&
		    strcmp(hub_peer_state(&hub, "forker"), "up") == 0)
			break;
	}
	for (end = now_s() + 10; child2 <= 0 && now_s() < end; sleep_ms(5))
		child2 = logged_child(&off);
	ck_assert_msg(child2 > 0 && child2 != child && alive(child2), "no second child: %s",
		      hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
	for (end = now_s() + 30; alive(child2) && now_s() < end; sleep_ms(5))
		;
	ck_assert_msg(!alive(child2), "child %d outlived hubd", child2);
}
END_TEST


/* Defect: a guest re-added by a reload while still stopping got a second
 * entry: two instances, the new one crash-looping on EEXIST. */
START_TEST(test_readded_while_stopping)
{
	const char *both = "[guest slow]\nexec = @/tests/guests/lifeguest\n"
			   "args = --mode=slowstop\nprovides = life.*\n"
			   "[guest echo]\nexec = @/guests/echo\n";
	char msgs[2048], *log;
	int id, pid;

	/* it ignores SIGTERM, and stop_grace is long: it stops when the test
	 * kills it, not when a short grace ran out under load */
	ck_assert(hub_start(&hub, "stop_grace = 300s\n", both) == 0);
	ck_assert(hub_wait_up(&hub, "slow,echo", 10000) == 0);
	id = hub_peer_int(&hub, "slow", "peer_id");
	pid = hub_wait_ignores_term(&hub, "slow");
	ck_assert_int_eq(hub_write_conf(&hub, "stop_grace = 300s\n",
					"[guest echo]\nexec = @/guests/echo\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_str_eq(hub_peer_state(&hub, "slow"), "stopping");
	ck_assert_int_eq(hub_write_conf(&hub, "stop_grace = 300s\n", both), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_msg(strstr(msgs, "slow: back in the config") != NULL, "%s", msgs);
	ck_assert_int_eq(entries_named("slow"), 1);
	/* killed, then started again in the same entry */
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	for (double end = now_s() + 30; now_s() < end; sleep_ms(5))
		if (hub_peer_int(&hub, "slow", "pid") != pid &&
		    strcmp(hub_peer_state(&hub, "slow"), "up") == 0)
			break;
	ck_assert_msg(strcmp(hub_peer_state(&hub, "slow"), "up") == 0 &&
		      hub_peer_int(&hub, "slow", "pid") != pid,
		      "slow is %s; log: %s", hub_peer_state(&hub, "slow"), hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "slow", "peer_id"), id);
	ck_assert_int_eq(entries_named("slow"), 1);
	ck_assert(hub_wait_method(&hub, "life.ping") == 0);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "register life.ping") == NULL, "two instances: %s",
		      hub_log_tail(&hub));
	free(log);
	/* hubctl stop reaches the one there is */
	pid = hub_wait_ignores_term(&hub, "slow");
	ctl_says("stop", "slow", "slow: stopping\n");
	kill_stopping("slow", pid, 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect (issue 39): "hubctl stop greeter; hubctl start greeter" back to
 * back answered "greeter: stopping" twice and left it down: the start,
 * arriving while it stopped, was lost. A start, restart or changing
 * reload while it stops is carried out once it has stopped, and says so;
 * a stop after it forgets it. The guest ignores SIGTERM and stop_grace is
 * long: the test ends it, so it stops when the test says, under any load. */
START_TEST(test_start_while_stopping)
{
	const char *keys = "stop_grace = 300s\n";
	const char *slow = "[guest slow]\nexec = @/tests/guests/lifeguest\n"
			   "args = --mode=slowstop\nprovides = life.*\nrestart = never\n";
	char msgs[2048], *out = NULL;
	json_object *p;
	int pid;

	hub_start_up(&hub, keys, slow, "slow");
	/* stop, start */
	pid = hub_wait_ignores_term(&hub, "slow");
	ctl_says("stop", "slow", "slow: stopping\n");
	ctl_says("start", "slow", "slow: stopping, will start when stopped\n");
	p = hub_peer(&hub, "slow");
	ck_assert_str_eq(json_object_get_string(json_get(p, "then")), "start");
	json_object_put(p);
	kill_stopping("slow", pid, 1);
	ck_assert(hub_wait_method(&hub, "life.ping") == 0);
	/* stop, restart */
	pid = hub_wait_ignores_term(&hub, "slow");
	ctl_says("stop", "slow", "slow: stopping\n");
	ctl_says("restart", "slow", "slow: stopping, will start when stopped\n");
	kill_stopping("slow", pid, 1);
	/* stop, start, stop: stays down */
	pid = hub_wait_ignores_term(&hub, "slow");
	ctl_says("stop", "slow", "slow: stopping\n");
	ctl_says("start", "slow", "slow: stopping, will start when stopped\n");
	ctl_says("stop", "slow", "slow: stopping\n");
	p = hub_peer(&hub, "slow");
	ck_assert_ptr_null(json_get(p, "then"));
	json_object_put(p);
	kill_stopping("slow", pid, 0);
	/* down: a start is at once */
	ctl_says("start", "slow", "slow: starting\n");
	ck_assert(hub_wait_new_pid(&hub, "slow", 0, 30) > 0);
	/* stop, then a reload that changes it: it starts, changed, once
	 * stopped */
	pid = hub_wait_ignores_term(&hub, "slow");
	ctl_says("stop", "slow", "slow: stopping\n");
	ck_assert_int_eq(hub_write_conf(&hub, keys, "[guest slow]\nexec = @/tests/guests/lifeguest\n"
					"args = --mode=slowstop --changed\nprovides = life.*\nrestart = never\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_msg(strstr(msgs, "slow: changed") != NULL, "%s", msgs);
	kill_stopping("slow", pid, 1);
	hubctl_ok(&hub, &out, "-j", "peers", (char *)NULL);
	ck_assert_msg(strstr(out, "--changed") != NULL, "%s", out);
	free(out);
	/* removed, still stopping: no start brings it back */
	pid = hub_wait_ignores_term(&hub, "slow");
	ck_assert_int_eq(hub_write_conf(&hub, keys, "[guest echo]\nexec = @/guests/echo\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_int_eq(hubctl_err(&hub, &out, "start", "slow", (char *)NULL), 1);
	ck_assert_msg(strstr(out, "removed from the config") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hubctl_err(&hub, &out, "restart", "slow", (char *)NULL), 1);
	free(out);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_msg(entries_named_wait("slow", 0, 30) == 0, "slow is still listed: %s",
		      hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: out of fds, spawning failed quietly: guests left down forever,
 * no death, no retry. A failed spawn is a death, retried with backoff. */
START_TEST(test_spawn_without_fds)
{
	enum { N = 12 };
	char names[N][16], guests[N * 128] = "", *out = NULL;
	int failed[N], nfailed = 0, nup = 0, stopped = 0;
	double end;

	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "g%d", i);
		snprintf(guests + strlen(guests), sizeof(guests) - strlen(guests),
			 "[guest g%d]\nexec = @/tests/guests/lifeguest\nargs = --mode=idle\n"
			 "max_deaths = 1000\n"
			 "backoff_min = 10ms\nbackoff_max = 100ms\n", i);
	}
	/* hubd starts with a limit too low for all of them (seven fds
	 * each: pidfd, doorbell, domain, pool, two bells, its output), its
	 * hard limit too, or it raises it */
	hub_next_nofile(75, 75);
	ck_assert(hub_start(&hub, "max_guests = 16\n", guests) == 0);
	/* some up, the others dying at spawn, again and again */
	for (end = now_s() + 15; now_s() < end; sleep_ms(50)) {
		nfailed = nup = 0;
		for (int i = 0; i < N; i++) {
			if (strcmp(hub_peer_state(&hub, names[i]), "up") == 0)
				nup++;
			else if (strcmp(last_death(names[i], "reason"), "spawn failed") == 0)
				failed[nfailed++] = i;
		}
		if (nup + nfailed == N && nfailed > 0)
			break;
	}
	ck_assert_msg(nfailed > 0 && nup + nfailed == N, "%d up, %d failed to spawn",
		      nup, nfailed);
	ck_assert_msg(nup > nfailed, "only %d up for %d failed", nup, nfailed);
	ck_assert_msg(strstr(last_death(names[failed[0]], "detail"), "Too many open files"),
		      "detail: %s", last_death(names[failed[0]], "detail"));
	/* fds back: stop one more guest than failed, the failed ones come up */
	for (int i = 0; i < N && stopped <= nfailed; i++) {
		if (strcmp(hub_peer_state(&hub, names[i]), "up") != 0)
			continue;
		hubctl_ok(&hub, &out, "stop", names[i], (char *)NULL);
		free(out);
		stopped++;
	}
	for (int k = 0; k < nfailed; k++)
		ck_assert_msg(wait_state(names[failed[k]], "up", 10) == 0, "%s is %s: %s",
			      names[failed[k]], hub_peer_state(&hub, names[failed[k]]),
			      last_death(names[failed[k]], "detail"));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Smaller defect: spawn failures were cut at 63 characters. */
START_TEST(test_long_spawn_detail)
{
	char path[200], guests[512], want[300], *out;

	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	memcpy(path, "/nonexistent/", 13);
	snprintf(guests, sizeof(guests), "[guest missing]\nexec = %s\nrestart = never\n", path);
	snprintf(want, sizeof(want), "exec %s: No such file or directory", path);
	ck_assert(hub_start(&hub, NULL, guests) == 0);
	ck_assert(wait_state("missing", "down", 10) == 0);
	ck_assert_str_eq(last_death("missing", "reason"), "spawn failed");
	ck_assert_str_eq(last_death("missing", "detail"), want);
	/* hubctl peers says why in words: no bare errno before them */
	hubctl_ok(&hub, &out, "peers", "missing", (char *)NULL);
	snprintf(want, sizeof(want), "spawn failed, exec %s: No such file or directory\n", path);
	ck_assert_msg(strstr(out, want) != NULL, "hubctl peers missing: %s", out);
	free(out);
	hubctl_ok(&hub, &out, "peers", (char *)NULL);
	snprintf(want, sizeof(want), "  spawn failed, exec /nonexistent/");
	ck_assert_msg(strstr(out, want) != NULL, "hubctl peers: %s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: a script whose #! line names an interpreter that is not there
 * failed to spawn with "exec /path/script: No such file or directory",
 * of a script that is there; a directory with "Permission denied". */
START_TEST(test_spawn_detail_says_what_is_wrong)
{
	char script[300], guests[1024], want[400];
	FILE *f;

	snprintf(script, sizeof(script), "%s", harness_path("badint.sh"));
	ck_assert_ptr_nonnull(f = fopen(script, "w"));
	fputs("#!/nonexistent/interp -x\necho never\n", f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(script, 0755), 0);
	snprintf(guests, sizeof(guests), "[guest badint]\nexec = %s\nrestart = never\n"
		 "[guest dir]\nexec = %s\nrestart = never\n", script, harness_dir());
	ck_assert(hub_start(&hub, NULL, guests) == 0);
	ck_assert(wait_state("badint", "down", 10) == 0);
	ck_assert(wait_state("dir", "down", 10) == 0);
	snprintf(want, sizeof(want), "exec %s: its #! interpreter /nonexistent/interp: "
		 "No such file or directory", script);
	ck_assert_str_eq(last_death("badint", "detail"), want);
	snprintf(want, sizeof(want), "exec %s: not a regular file", harness_dir());
	ck_assert_str_eq(last_death("dir", "detail"), want);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The Goodbye grace: a guest ended for breaking a rule reads the Goodbye
 * naming it and may leave by itself before SIGKILL. r[shm.goodbye.payload] */
START_TEST(test_goodbye_grace)
{
	char *log;

	/* a grace far past any load's delay: only the guest's own exit,
	 * not its SIGKILL, ends it soon */
	ck_assert(hub_start(&hub, "goodbye_grace = 60s\n",
		"[guest rude]\nexec = @/tests/guests/lifeguest\nargs = --mode=goodbye\n"
		"restart = never\n") == 0);
	ck_assert_msg(wait_state("rude", "down", 90) == 0, "rude is %s",
		      hub_peer_state(&hub, "rude"));
	ck_assert_str_eq(last_death("rude", "reason"), "protocol violation");
	ck_assert_str_eq(last_death("rude", "detail"), "shm.desc.msg-type");
	/* its own exit status: it left before the SIGKILL */
	ck_assert_str_eq(last_death("rude", "status"), "3");
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "lifeguest: hub ended me: shm.desc.msg-type\n") != NULL,
		      "log: %s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: a guest backing off said only "backoff", in hubctl peers and in
 * the answer to hubctl start: not when it would be started again (a
 * backoff_max of minutes looked like a guest left down). */
START_TEST(test_backoff_says_when)
{
	json_object *p;
	char *out = NULL;
	double left;

	ck_assert(hub_start(&hub, NULL,
		"[guest quitter]\nexec = /bin/false\nbackoff_min = 1min\n"
		"backoff_max = 2min\n") == 0);
	ck_assert_msg(wait_state("quitter", "backoff", 15) == 0, "quitter is %s",
		      hub_peer_state(&hub, "quitter"));
	p = hub_peer(&hub, "quitter");
	left = json_object_get_double(json_get(p, "starts_in_s"));
	json_object_put(p);
	ck_assert_msg(left > 0 && left <= 60, "starts_in_s %f", left);
	hubctl_ok(&hub, &out, "peers", "quitter", (char *)NULL);
	ck_assert_msg(strstr(out, "\nstate: backoff, starts in ") != NULL, "%s", out);
	free(out);
	/* start leaves it to its backoff, and says when */
	hubctl_ok(&hub, &out, "start", "quitter", (char *)NULL);
	ck_assert_msg(strncmp(out, "quitter: backoff, starts in ", 28) == 0, "%s", out);
	free(out);
	/* not backing off: nothing said */
	ctl_says("stop", "quitter", "quitter: down\n");
	p = hub_peer(&hub, "quitter");
	ck_assert(json_get(p, "starts_in_s") == NULL);
	json_object_put(p);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.death.callback-context]: a guest's death is handled on hubd's loop
 * and schedules what follows rather than waiting through it: while echo,
 * killed, backs off, hubd answers (echo shown backing off, the death
 * recorded against echo alone) and kv is served; the backoff's end then
 * starts echo again. */
START_TEST(test_death_schedules_the_restart)
{
	char *out = NULL;
	int pid, kv;

	ck_assert(hub_start(&hub, NULL,
		"[guest echo]\nexec = @/guests/echo\nbackoff_min = 8s\nbackoff_max = 8s\n"
		"[guest kv]\nexec = @/guests/kv\n") == 0);
	ck_assert(hub_wait_up(&hub, "echo,kv", 10000) == 0);
	/* up is attached, not registered: kv's methods may come later */
	ck_assert(hub_wait_method(&hub, "kv.put,kv.get") == 0);
	pid = hub_peer_int(&hub, "echo", "pid");
	kv = hub_peer_int(&hub, "kv", "pid");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_msg(wait_state("echo", "backoff", 30) == 0, "echo is %s; log: %s",
		      hub_peer_state(&hub, "echo"), hub_log_tail(&hub));
	ck_assert_str_eq(last_death("echo", "reason"), "crashed");
	ck_assert_str_eq(last_death("kv", "reason"), "");
	hubctl_ok(&hub, &out, "call", "kv.put", "colour", "blue", (char *)NULL);
	free(out);
	hubctl_ok(&hub, &out, "call", "kv.get", "colour", (char *)NULL);
	ck_assert_str_eq(out, "blue\n");
	free(out);
	ck_assert_str_eq(hub_peer_state(&hub, "kv"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "kv", "pid"), kv);
	ck_assert_msg(hub_wait_new_pid(&hub, "echo", pid, 60) > 0, "echo is %s; log: %s",
		      hub_peer_state(&hub, "echo"), hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_restarts(void);
Suite *
suite_restarts(void)
{
	Suite *s = suite_create("restarts");
	TCase *tc = tcase_create("supervisor");

	tcase_add_unchecked_fixture(tc, harness_setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_max_deaths_10_fails_after_11);
	tcase_add_test(tc, test_rename_with_one_entry);
	tcase_add_test(tc, test_doorbell_closed_while_starting);
	tcase_add_test(tc, test_children_go_with_the_guest);
	tcase_add_test(tc, test_readded_while_stopping);
	tcase_add_test(tc, test_start_while_stopping);
	tcase_add_test(tc, test_spawn_without_fds);
	tcase_add_test(tc, test_long_spawn_detail);
	tcase_add_test(tc, test_spawn_detail_says_what_is_wrong);
	tcase_add_test(tc, test_goodbye_grace);
	tcase_add_test(tc, test_backoff_says_when);
	tcase_add_test(tc, test_death_schedules_the_restart);
	suite_add_tcase(s, tc);
	return s;
}
