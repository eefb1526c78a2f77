/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The isolation end to end: a hostile guest (tests/guests/hostile.c)
 * attacks from inside its own memory, a domain and a pool of its own, and
 * searches for the others'. Each test starts hubd with echo, kv and
 * counter beside it, checks they serve, has the hostile guest attack, then
 * checks that hubd is the same process and answers, that the three serve
 * with their data intact, that none was restarted or ended, and that each
 * was called exactly as often as the test called it (nobody ran a request
 * the test did not send). The hostile guest is ended for the rule it
 * broke, or, when what it wrote reaches nobody, serves on. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

#define VICTIMS \
	"[guest echo]\nexec = @/guests/echo\n" \
	"[guest kv]\nexec = @/guests/kv\n" \
	"[guest counter]\nexec = @/guests/counter\n"
#define HOSTILE	"[guest hostile]\nexec = @/tests/guests/hostile\nrestart = never\n"
#define NGUESTS	4
#define METHODS	"echo.echo,kv.put,kv.get,kv.list,counter.count,counter.stream," \
		"hostile.ping,hostile.fds,hostile.seals,hostile.search,hostile.attack"
/* counter.stream's bytes while the hostile guest forges answers */
#define STREAM_BYTES	"2147483648"

static struct hub_proc hub;

/* What the victims were before the attack, and how often the test called
 * each of them. */
struct victims {
	pid_t		hubd, echo, kv, counter;
	unsigned	echo_calls, kv_calls, counter_calls, counter_streams;
	unsigned long long calls_made[3];	/* theirs before the attack
						 * (hub.register's, say) */
};

static const char *const victim_names[3] = { "echo", "kv", "counter" };

/* The number of calls stats counts for guest name (key calls_out: made
 * to it; calls_in: made by it). */
static unsigned long long
calls(json_object *stats, const char *name, const char *key)
{
	return json_u64(stats, "guests", name, key);
}

/* hubctl call method [a1 [a2]]: its exit status and exact output
 * asserted (want NULL: any output); a call of a victim counted. */
static void
call(struct victims *v, int status, const char *want, const char *method, const char *a1,
     const char *a2)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "-t", "60", "call", method, a1, a2, (char *)NULL);

	if (v != NULL) {
		v->echo_calls += strncmp(method, "echo.", 5) == 0;
		v->kv_calls += strncmp(method, "kv.", 3) == 0;
		v->counter_calls += strncmp(method, "counter.", 8) == 0;
	}
	ck_assert_msg(rc == status && (want == NULL || strcmp(out, want) == 0),
		      "%s %s %s: status %d (want %d), output '%s' (want '%s'); %s", method,
		      a1 ? a1 : "", a2 ? a2 : "", rc, status, out, want ? want : "*",
		      hub_log_tail(&hub));
	free(out);
}

/* A hostile method's answer (malloc'd). */
static char *
hostile_call(const char *method, const char *arg)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "-t", "60", "call", method, arg, (char *)NULL);

	ck_assert_msg(rc == 0, "%s: status %d, '%s'; %s", method, rc, out, hub_log_tail(&hub));
	return out;
}

static json_object *
status(void)
{
	json_object *st = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);

	ck_assert_msg(st != NULL, "hubd does not answer status: %s", hub_log_tail(&hub));
	return st;
}

/* Up, with the pid it had, never restarted, never ended. */
static void
untouched(const char *name, pid_t pid)
{
	json_object *p = hub_peer(&hub, name);

	ck_assert_msg(p != NULL, "no peer %s", name);
	ck_assert_msg(strcmp(json_object_get_string(json_get(p, "state")), "up") == 0 &&
		      json_object_get_int(json_get(p, "pid")) == pid &&
		      json_object_get_int(json_get(p, "restarts")) == 0 &&
		      json_object_array_length(json_get(p, "deaths")) == 0,
		      "%s (pid %d before) was touched: %s; %s", name, (int)pid,
		      json_object_to_json_string(p), hub_log_tail(&hub));
	ck_assert(alive(pid));
	json_object_put(p);
}

/* Before an attack: hubd started (on a control socket named after the
 * test: a hub a failed test left stopping holds none of its paths), its
 * pid and the victims', each serving, kv holding a value. */
static void
victims_up(struct victims *v, const char *test, const char *guests)
{
	json_object *stats;
	char keys[512], sock[64];

	memset(v, 0, sizeof(*v));
	snprintf(sock, sizeof(sock), "%s.sock", test);
	/* goodbye_grace: the hostile guest, ended for what it wrote, still
	 * says what it did, however long load keeps it from its line (the
	 * default's 100 ms is not enough for that); the test kills it then */
	snprintf(keys, sizeof(keys), "control = %s\ngoodbye_grace = 120s\n",
		 harness_path(sock));
	hub_start_up(&hub, keys, guests, "echo,kv,counter,hostile");
	ck_assert_msg(hub_wait_method(&hub, METHODS) == 0, "methods: %s", hub_log_tail(&hub));
	v->hubd = hub.pid;
	v->echo = hub_peer_int(&hub, "echo", "pid");
	v->kv = hub_peer_int(&hub, "kv", "pid");
	v->counter = hub_peer_int(&hub, "counter", "pid");
	ck_assert(alive(v->hubd) && alive(v->echo) && alive(v->kv) && alive(v->counter));
	call(v, 0, "before\n", "echo.echo", "before", NULL);
	call(v, 0, "", "kv.put", "before", "v1");
	call(v, 0, "v1\n", "kv.get", "before", NULL);
	call(v, 0, "1\n2\n3\n3\n", "counter.count", "3", NULL);
	stats = hub_stats(&hub);
	for (int i = 0; i < 3; i++)
		v->calls_made[i] = calls(stats, victim_names[i], "calls_in");
	json_object_put(stats);
}

/* After an attack: hubd the same process and answering, the victims
 * serving with kv's data as it was, none restarted or ended, none called
 * but by the test, and the awake count no more than the hub's processes. */
static void
victims_fine(struct victims *v)
{
	json_object *st, *stats;
	char *out = NULL;
	int rc;

	ck_assert_msg(hub.pid == v->hubd && alive(v->hubd), "hubd %d is gone: %s", (int)v->hubd,
		      hub_log_tail(&hub));
	hubctl_ok(&hub, &out, "status", (char *)NULL);
	free(out);
	st = status();
	ck_assert_msg(json_object_get_int(json_get(st, "awake_processes")) <= NGUESTS + 1,
		      "awake_processes %d with %d guests", json_object_get_int(json_get(st,
		      "awake_processes")), NGUESTS);
	json_object_put(st);
	call(v, 0, "after\n", "echo.echo", "after", NULL);
	call(v, 0, "v1\n", "kv.get", "before", NULL);
	call(v, 1, "", "kv.get", "forged", NULL);
	call(v, 0, "", "kv.put", "after", "v2");
	call(v, 0, "v2\n", "kv.get", "after", NULL);
	rc = hubctl(&hub, &out, "call", "kv.list", (char *)NULL);
	v->kv_calls++;
	ck_assert_msg(rc == 0 && (strcmp(out, "after\nbefore\n") == 0 ||
				  strcmp(out, "before\nafter\n") == 0), "kv.list: %d '%s'", rc, out);
	free(out);
	call(v, 0, "1\n2\n3\n3\n", "counter.count", "3", NULL);
	untouched("echo", v->echo);
	untouched("kv", v->kv);
	untouched("counter", v->counter);
	/* r[shm.topology.hub.calls]: every call to them came from the test,
	 * and they made none since, but counter its hub.sink for a stream */
	stats = hub_stats(&hub);
	ck_assert_msg(calls(stats, "echo", "calls_out") == v->echo_calls &&
		      calls(stats, "kv", "calls_out") == v->kv_calls &&
		      calls(stats, "counter", "calls_out") == v->counter_calls &&
		      calls(stats, "echo", "calls_in") == v->calls_made[0] &&
		      calls(stats, "kv", "calls_in") == v->calls_made[1] &&
		      calls(stats, "counter", "calls_in") == v->calls_made[2] + v->counter_streams,
		      "calls made: echo %u, kv %u, counter %u (%u streams); stats %s",
		      v->echo_calls, v->kv_calls, v->counter_calls, v->counter_streams,
		      json_object_to_json_string(json_get(stats, "guests")));
	ck_assert_msg(json_u64(stats, "guests", "echo", "violations") == 0 &&
		      json_u64(stats, "guests", "kv", "violations") == 0 &&
		      json_u64(stats, "guests", "counter", "violations") == 0,
		      "a victim was charged: %s", json_object_to_json_string(stats));
	json_object_put(stats);
}

/* What became of the hostile guest: ended for a rule (rule, or any when
 * NULL: a death whose detail names one) or, if may_live, up, never
 * restarted, and still answering. */
static void
hostile_outcome(const char *rule, int may_live)
{
	json_object *p = NULL, *d;
	const char *why, *detail;
	int killed = 0;

	/* the checks run every quarter heartbeat; Goodbye's grace follows,
	 * long (victims_up): once hubd has ended it ("ending"), the test
	 * kills it, and its death says what hubd ended it for */
	for (double t0 = now_s(); now_s() < t0 + 60; sleep_ms(50)) {
		json_object_put(p);
		p = hub_peer(&hub, "hostile");
		ck_assert_ptr_nonnull(p);
		if (json_object_array_length(json_get(p, "deaths")) > 0)
			break;
		if (!killed && strcmp(json_object_get_string(json_get(p, "state")), "ending") == 0) {
			int pid = json_object_get_int(json_get(p, "pid"));

			ck_assert_msg(pid > 0 && kill(pid, SIGKILL) == 0, "kill %d", pid);
			killed = 1;
		}
		if (may_live && !killed && now_s() >= t0 + 2)
			break;
	}
	if (json_object_array_length(json_get(p, "deaths")) == 0) {
		char *out;

		ck_assert_msg(may_live, "the hostile guest was not ended: %s; %s",
			      json_object_to_json_string(p), hub_log_tail(&hub));
		ck_assert_msg(strcmp(json_object_get_string(json_get(p, "state")), "up") == 0 &&
			      json_object_get_int(json_get(p, "restarts")) == 0,
			      "hostile: %s", json_object_to_json_string(p));
		out = hostile_call("hostile.ping", NULL);
		ck_assert_str_eq(out, "pong\n");
		free(out);
		json_object_put(p);
		return;
	}
	d = json_object_array_get_idx(json_get(p, "deaths"), 0);
	why = json_object_get_string(json_get(d, "reason"));
	detail = json_object_get_string(json_get(d, "detail"));
	ck_assert_msg((strcmp(why, "protocol violation") == 0 || strcmp(why, "hung") == 0) &&
		      strstr(detail, "shm.") != NULL && (rule == NULL || strcmp(detail, rule) == 0),
		      "the hostile guest ended for no rule%s%s: %s; %s", rule ? " or not for " : "",
		      rule ? rule : "", json_object_to_json_string(p), hub_log_tail(&hub));
	json_object_put(p);
}

/* Has the hostile guest attack (hostile.c's modes), and waits for its
 * line in the log saying it did (done: the line's start). */
static void
attack(const char *mode, const char *done)
{
	char *out = hostile_call("hostile.attack", mode), want[64];

	snprintf(want, sizeof(want), "ok %s\n", mode);
	ck_assert_str_eq(out, want);
	free(out);
	ck_assert_msg(hub_log_wait(&hub, done, 60000), "the hostile guest did not %s: %s", mode,
		      hub_log_tail(&hub));
}

static void
stop_hub(void)
{
	int rc = hub_stop(&hub);

	/* an ASan build of hubd fails its exit on any leak */
	ck_assert_msg(rc == 0, "hubd exit status %d: %s", rc, hub_log_tail(&hub));
}

/* -- 1: shrinking, emptying and punching its own memory ------------------- */

/* r[shm.file.create]: a domain and a pool are sealed against shrinking
 * and growing (a pool's file is as long as it may grow), and against new
 * seals: no guest can SIGBUS hubd or the others by taking pages from
 * under a mapping, nor stop hubd writing by F_SEAL_WRITE. Punching holes
 * keeps the size, so the seals allow it: the guest zeroes its own memory,
 * which hubd reads as a broken rule (r[shm.segment.peer-state],
 * r[shm.host.poll-peers]). */
START_TEST(test_shrink_and_punch)
{
	struct victims v;
	char *out;

	victims_up(&v, "punch", VICTIMS HOSTILE);
	out = hostile_call("hostile.seals", NULL);
	ck_assert_str_eq(out,
		"domain fd: shrink EPERM, empty EPERM, grow EPERM, seal-write EPERM; "
		"domain fresh: shrink EPERM, empty EPERM, grow EPERM, seal-write EPERM; "
		"pool fd: shrink EPERM, empty EPERM, grow EPERM, seal-write EPERM; "
		"pool fresh: shrink EPERM, empty EPERM, grow EPERM, seal-write EPERM; \n");
	free(out);
	/* all of that failed: it serves on */
	out = hostile_call("hostile.ping", NULL);
	ck_assert_str_eq(out, "pong\n");
	free(out);
	attack("punch", "hostile: punched its domain");
	{
		char *log = hub_log(&hub), *line = strstr(log, "hostile: punched its domain");
		unsigned long long dom = 0, pool = 0;
		char how[32] = "";

		ck_assert_ptr_nonnull(line);
		ck_assert_msg(sscanf(line, "hostile: punched its domain (%llu bytes) and pool "
				     "(%llu bytes): %31[^\n]", &dom, &pool, how) == 3 &&
			      dom > 0 && pool > 0 && strcmp(how, "reads back zero") == 0,
			      "the punched memory: %.200s", line);
		free(log);
	}
	hostile_outcome(NULL, 0);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* -- 2: searching for the others' memory --------------------------------- */

/* Whether process pid has path open or mapped. */
static int
holds(pid_t pid, const char *path)
{
	char name[64], link[512], line[1024];
	struct dirent *e;
	int found = 0;
	FILE *f;
	DIR *d;

	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	if ((f = fopen(name, "re")) != NULL) {
		while (!found && fgets(line, sizeof(line), f) != NULL)
			found = strstr(line, path) != NULL;
		fclose(f);
	}
	snprintf(name, sizeof(name), "/proc/%d/fd", (int)pid);
	if ((d = opendir(name)) != NULL) {
		while (!found && (e = readdir(d)) != NULL) {
			char fd[320];
			ssize_t n;

			snprintf(fd, sizeof(fd), "%s/%s", name, e->d_name);
			if ((n = readlink(fd, link, sizeof(link) - 1)) > 0) {
				link[n] = '\0';
				found = strstr(link, path) != NULL;
			}
		}
		closedir(d);
	}
	return found;
}

/* r[shm.spawn.fd-inheritance]: the hostile guest was started with stdio,
 * its doorbell, its domain and its pool, nothing else. Then it tries to
 * open every fd of hubd, echo's domain and pool, echo's and hubd's
 * memory (/proc/PID/mem, map_files): with each guest a user of its own
 * (hubd's [hub] guest_uids, the default) and hubd root, every open
 * fails. It finds no file of this hub in /dev/shm: there is none (other
 * hubs on the machine may have theirs: what it lists is checked to be
 * nobody's here). */
static void
search(const char *test, const char *guests)
{
	struct victims v;
	pid_t pids[5];
	char *out, arg[64], *line, *save;

	victims_up(&v, test, guests);
	out = hostile_call("hostile.fds", NULL);
	ck_assert_str_eq(out, "0 1 2 3 5 6 7 8\n");
	free(out);
	pids[0] = v.hubd;
	pids[1] = v.echo;
	pids[2] = v.kv;
	pids[3] = v.counter;
	pids[4] = hub_peer_int(&hub, "hostile", "pid");
	snprintf(arg, sizeof(arg), "%d %d", (int)v.hubd, (int)v.echo);
	out = hostile_call("hostile.search", arg);
	ck_assert_msg(strstr(out, "\nopened 0\n") != NULL || strncmp(out, "opened 0\n", 9) == 0,
		      "the hostile guest opened what is not its own:\n%.2500s", out);
	for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char path[300];

		if (strncmp(line, "shm ", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", line + 4);
		for (int i = 0; i < 5; i++)
			ck_assert_msg(!holds(pids[i], path), "process %d of this hub holds %s",
				      (int)pids[i], path);
	}
	free(out);
	/* r[shm.file.path]: nothing of this hub is in /dev/shm at all */
	for (int i = 0; i < 5; i++)
		ck_assert_msg(!holds(pids[i], "/dev/shm/"), "process %d holds a file in /dev/shm",
			      (int)pids[i]);
	hostile_outcome(NULL, 1);
	victims_fine(&v);
	stop_hub();
}

START_TEST(test_search_others_memory)
{
	search("search", VICTIMS HOSTILE);
}
END_TEST

/* The same, the hostile guest given a user of its own by the config */
START_TEST(test_search_as_user)
{
	search("search-user", VICTIMS HOSTILE "user = nobody\n");
}
END_TEST

/* -- 3: scribbling over its own memory ----------------------------------- */

/* Random bytes (a fixed seed) over its header, its peer table and
 * extension table, its own areas, and at random places of its domain and
 * pool: hubd reads only its own areas' words there, and ends it for the
 * first rule they break. */
START_TEST(test_scribble_random)
{
	struct victims v;

	victims_up(&v, "random", VICTIMS HOSTILE);
	attack("random", "hostile: scribbled random bytes");
	hostile_outcome(NULL, 0);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* Targeted, every word it can reach that once reached the others:
 * host_goodbye (r[shm.goodbye.host-atomic]: its own header's stops
 * nobody), awake, the geometry, its entry's state, epoch, heartbeat, ring
 * indices and offsets, credit and waiter words, the host's slot bitmap
 * in its domain, its pool's free lists, counters and slot owners. */
START_TEST(test_scribble_self)
{
	struct victims v;

	victims_up(&v, "self", VICTIMS HOSTILE);
	attack("self", "hostile: scribbled itself");
	hostile_outcome(NULL, 0);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* The other entries of its domain (state, epoch, heartbeat, ring
 * indices, offsets, extension words) belong to nobody: in its domain
 * only its own entry has areas, and hubd reads no other. Its header's
 * awake (0, then 0xffffffff) and its own awake flag (0xffffffff, again
 * after each of its rounds) are its own: hubd counts each guest's flag
 * as one, so the count stays within the hub's processes. */
START_TEST(test_scribble_others)
{
	struct victims v;
	json_object *st;

	victims_up(&v, "others", VICTIMS HOSTILE);
	attack("others", "hostile: scribbled the");
	for (int i = 0; i < 20; i++) {
		st = status();
		ck_assert_msg(json_object_get_int(json_get(st, "awake_processes")) <= NGUESTS + 1,
			      "awake_processes %d with %d guests",
			      json_object_get_int(json_get(st, "awake_processes")), NGUESTS);
		json_object_put(st);
		sleep_ms(50);
	}
	hostile_outcome(NULL, 1);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* -- 4: forging --------------------------------------------------------- */

/* Requests (kv.put "forged", echo.echo, counter.count) and answers in the
 * rings where every other peer's would be, their entries made to look
 * attached, its doorbell rung: those rings exist for nobody, so nobody
 * runs them (kv has no key "forged", the calls counted are the test's). */
START_TEST(test_forge_rings)
{
	struct victims v;

	victims_up(&v, "forge-rings", VICTIMS HOSTILE);
	attack("forge-rings", "hostile: forged");
	/* a few rounds of hubd's checks */
	sleep_ms(1000);
	hostile_outcome(NULL, 1);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* Its bells (HP_FEAT_BELLS): the eventfd it shares with hubd made
 * blocking, rung and read dry 20000 times. hubd reads it without waiting
 * whatever its flags (RWF_NOWAIT), so it neither hangs nor stops serving
 * the others, and the hostile guest serves on. */
START_TEST(test_hostile_bells)
{
	struct victims v;

	victims_up(&v, "bells", VICTIMS HOSTILE);
	attack("bells", "hostile: rang and emptied its bell");
	hostile_outcome(NULL, 1);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* hubctl call args... in the background, its output into path; its pid. */
static pid_t
hubctl_bg(const char *path, const char *method, const char *a1, const char *a2)
{
	pid_t pid = fork();
	int fd;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* gone with a failed test */
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
		    dup2(fd, 1) != 1)
			_exit(126);
		execl(bin("hubctl"), "hubctl", "-s", hub.sock, "-t", "300", "call", method, a1,
		      a2, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* r[shm.id.request-id] r[shm.id.request-scope]: Responses with ids hubd
 * never sent it (low ones, which hubd's calls to the others also use:
 * each guest's ids are its own) while counter streams into hub.sink
 * with calls open both ways: hubd ends the forger only, and counter's
 * stream ends with the checksum it had. */
START_TEST(test_forge_responses)
{
	struct victims v;
	char path[300], buf[256];
	json_object *stats;
	unsigned long long before;
	pid_t bg;
	int ws = -1;
	FILE *f;

	victims_up(&v, "forge-responses", VICTIMS HOSTILE);
	stats = hub_stats(&hub);
	before = calls(stats, "counter", "calls_out");
	json_object_put(stats);
	snprintf(path, sizeof(path), "%s/stream.out", harness_dir());
	bg = hubctl_bg(path, "counter.stream", STREAM_BYTES, "16384");
	v.counter_calls++;
	v.counter_streams++;
	/* its call is with counter (no timing asserted: it may be over by
	 * the time the forgeries come) */
	for (int t = 0; t < 10000; t += 10) {
		stats = hub_stats(&hub);
		if (calls(stats, "counter", "calls_out") > before) {
			json_object_put(stats);
			break;
		}
		json_object_put(stats);
		sleep_ms(10);
	}
	attack("forge-responses", "hostile: forged");
	hostile_outcome("shm.id.request-id", 0);
	for (int t = 0; t < 300000 && waitpid(bg, &ws, WNOHANG) != bg; t += 50)
		sleep_ms(50);
	if (!WIFEXITED(ws)) {
		kill(bg, SIGKILL);
		waitpid(bg, &ws, 0);
	}
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	buf[0] = '\0';
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0 &&
		      strncmp(buf, "ok " STREAM_BYTES " ", strlen("ok " STREAM_BYTES " ")) == 0,
		      "counter.stream: wait status %d, '%s'", ws, buf);
	victims_fine(&v);
	stop_hub();
}
END_TEST

/* -- 5: zones ------------------------------------------------------------ */

/* The inode of /proc/PID/fd/FD (what the fd is), 0 if it has none. */
static ino_t
fd_inode(pid_t pid, int fd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

static void
fd_link(pid_t pid, int fd, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* Whether pid's command line has an argument starting with arg. */
static int
has_arg(pid_t pid, const char *arg)
{
	char path[64], buf[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (strncmp(buf + i, arg, strlen(arg)) == 0)
			return 1;
	return 0;
}

/* Guests in one zone share its pool, by design (r[shm.varslot.shared]):
 * a zone is for guests that trust each other, and what one of them writes
 * in a slot the others of its zone may read, even after sending it; so
 * echo and kv, both in zone z, hold the same pool. Guests in different
 * zones hold different pools (hubd copies what goes between them), every
 * guest a domain of its own, and a guest with shared_pool = no has no pool
 * at all: no fd 6, no --hub-pool. */
START_TEST(test_zones)
{
	struct victims v;
	pid_t hostile;
	char a[256], b[256];
	char *out;

	victims_up(&v, "zones",
		   "[guest echo]\nexec = @/guests/echo\nzone = z\n"
		   "[guest kv]\nexec = @/guests/kv\nzone = z\n"
		   "[guest counter]\nexec = @/guests/counter\n"
		   HOSTILE "shared_pool = no\n");
	hostile = hub_peer_int(&hub, "hostile", "pid");
	ck_assert(fd_inode(v.echo, 6) != 0 && fd_inode(v.counter, 6) != 0);
	ck_assert(fd_inode(v.echo, 6) == fd_inode(v.kv, 6));
	fd_link(v.echo, 6, a, sizeof(a));
	fd_link(v.counter, 6, b, sizeof(b));
	ck_assert_msg(strcmp(a, b) != 0 && fd_inode(v.echo, 6) != fd_inode(v.counter, 6),
		      "echo's pool %s, counter's %s", a, b);
	/* domains: one each */
	ck_assert(fd_inode(v.echo, 5) != 0 && fd_inode(v.kv, 5) != 0 &&
		  fd_inode(v.counter, 5) != 0 && fd_inode(hostile, 5) != 0);
	ck_assert(fd_inode(v.echo, 5) != fd_inode(v.kv, 5) &&
		  fd_inode(v.echo, 5) != fd_inode(v.counter, 5) &&
		  fd_inode(v.kv, 5) != fd_inode(v.counter, 5) &&
		  fd_inode(hostile, 5) != fd_inode(v.echo, 5) &&
		  fd_inode(hostile, 5) != fd_inode(v.kv, 5) &&
		  fd_inode(hostile, 5) != fd_inode(v.counter, 5));
	/* no pool for a guest out of every zone: it was started without
	 * one (its fd 6 now, if any, is what it opened itself: no pool) */
	out = hostile_call("hostile.fds", NULL);
	ck_assert_str_eq(out, "0 1 2 3 5 7 8\n");
	free(out);
	fd_link(hostile, 6, a, sizeof(a));
	ck_assert_msg(strstr(a, "hub-pool") == NULL, "hostile's fd 6: %s", a);
	fd_link(v.echo, 6, a, sizeof(a));
	ck_assert_msg(strstr(a, "hub-pool:z") != NULL, "echo's fd 6: %s", a);
	ck_assert(has_arg(hostile, "--hub-path="));
	ck_assert(!has_arg(hostile, "--hub-pool"));
	ck_assert(has_arg(v.echo, "--hub-pool="));
	victims_fine(&v);
	stop_hub();
}
END_TEST

Suite *suite_isolation(void);
Suite *
suite_isolation(void)
{
	Suite *s = suite_create("isolation");
	TCase *tc = tcase_create("hostile");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_shrink_and_punch);
	tcase_add_test(tc, test_search_others_memory);
	tcase_add_test(tc, test_search_as_user);
	tcase_add_test(tc, test_scribble_random);
	tcase_add_test(tc, test_scribble_self);
	tcase_add_test(tc, test_scribble_others);
	tcase_add_test(tc, test_forge_rings);
	tcase_add_test(tc, test_hostile_bells);
	tcase_add_test(tc, test_forge_responses);
	tcase_add_test(tc, test_zones);
	suite_add_tcase(s, tc);
	return s;
}
