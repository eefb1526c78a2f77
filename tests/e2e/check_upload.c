/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Uploads: an rx<T> argument, a stream the caller sends and the callee
 * reads (daemon/upload.c, doc/protocol.md "Uploads"): from hubctl's
 * stdin to counter.sum, between two uploader test guests ("a" calls
 * "b"), and every way one may end early or break the rules. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define COUNTER	"[guest counter]\nexec = @/guests/counter\n"
#define UPLOADERS_L(bargs, lanes)					\
	"[guest a]\nexec = @/tests/guests/uploader\nargs = --prefix a\n"	\
	"restart = never\nlanes = " lanes "\n"					\
	"[guest b]\nexec = @/tests/guests/uploader\nargs = --prefix b " bargs "\n" \
	"restart = never\nlanes = " lanes "\n"
#define UPLOADERS(bargs)	UPLOADERS_L(bargs, "no")

/* hubctl call with stdin from a file (NULL: /dev/null); its stdout in
 * *out (malloc'd) and exit status. */
static int
call_stdin(const char *in, char **out, const char *method, const char *arg1,
	   const char *arg2)
{
	char cmd[1024];
	FILE *p;
	size_t n = 0, cap = 4096;
	int status;

	snprintf(cmd, sizeof(cmd), "%s -s %s call %s %s %s < %s 2>&1", bin("hubctl"), hub.sock,
		 method, arg1, arg2 != NULL ? arg2 : "", in != NULL ? in : "/dev/null");
	ck_assert_ptr_nonnull(p = popen(cmd, "r"));
	*out = malloc(cap);
	while (!feof(p) && !ferror(p)) {
		if (n + 1024 > cap)
			*out = realloc(*out, cap *= 2);
		n += fread(*out + n, 1, cap - n - 1, p);
	}
	(*out)[n] = '\0';
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* hubctl call a.send M N A MODE: its answer line. */
static char *
a_send(const char *m, unsigned long long n, unsigned long long arg, int mode)
{
	char ns[32], as[32], ms[16], *out = NULL;

	snprintf(ns, sizeof(ns), "%llu", n);
	snprintf(as, sizeof(as), "%llu", arg);
	snprintf(ms, sizeof(ms), "%d", mode);
	hubctl(&hub, &out, "call", "a.send", m, ns, as, ms, (char *)NULL);
	return out;
}

/* b.last, once its upload has ended (it says "1 0" until then) and,
 * unless before is NULL, once it no longer says before (the upload
 * ahead of it): a caller that died has hubctl's answer at once, perhaps
 * before b has even taken the call. */
static char *
b_last_after(const char *before)
{
	char *out = NULL;

	for (int i = 0; i < 500; i++) {
		free(out);
		hubctl_ok(&hub, &out, "call", "b.last", (char *)NULL);
		if (strncmp(out, "1 0", 3) != 0 && (before == NULL || strcmp(out, before) != 0))
			break;
		sleep_ms(20);
	}
	return out;
}

static char *
b_last(void)
{
	return b_last_after(NULL);
}

/* The detail of name's first death (a rule it broke), waited for. */
static void
assert_violation(const char *name, const char *rule)
{
	json_object *p = NULL, *deaths = NULL, *d, *x;
	int i;

	for (i = 0; i < 500; i++) {
		json_object_put(p);
		p = hub_peer(&hub, name);
		if (p != NULL && json_object_object_get_ex(p, "deaths", &deaths) &&
		    json_object_array_length(deaths) > 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(i < 500, "%s was not ended for %s: %s", name, rule, hub_log_tail(&hub));
	d = json_object_array_get_idx(deaths, 0);
	json_object_object_get_ex(d, "detail", &x);
	ck_assert_msg(strstr(json_object_get_string(x), rule) != NULL, "%s: detail '%s', want %s",
		      name, json_object_get_string(x), rule);
	json_object_put(p);
}

/* Nothing of an upload left (r[shm.flow.channel-id-reuse]): none open
 * in hubd, every channel of the named guests freed. */
static void
assert_nothing_left(const char *names)
{
	char list[64], *name, *save = NULL;
	unsigned long long open = 1;

	for (double end = now_s() + 30; open != 0 && now_s() < end;) {
		json_object *o = hub_stats(&hub);

		open = json_u64(o, "uploads", "open", NULL);
		json_object_put(o);
		if (open != 0)
			sleep_ms(20);
	}
	ck_assert_msg(open == 0, "%llu uploads left open", open);
	snprintf(list, sizeof(list), "%s", names);
	for (name = strtok_r(list, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
		int n = -1;

		for (double end = now_s() + 30;
		     (n = hub_peer_int(&hub, name, "channels_open")) != 0 && now_s() < end;)
			sleep_ms(20);
		ck_assert_msg(n == 0, "guest %s has %d channels open", name, n);
	}
}

/* seq 1 100 | hubctl call counter.sum -: 5050; a long stream goes
 * through hubd without it holding more than a line (it reads the next
 * once the callee has credit for the last); a bad item, a missing -. */
START_TEST(test_hubctl_stdin)
{
	const char *path = harness_path("items");
	char *out, want[64];
	FILE *f;
	int rc;

	hub_start_up(&hub, "initial_credit = 4K\n", COUNTER, "counter");
	ck_assert_int_eq(hub_wait_method(&hub, "counter.sum"), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 1; i <= 100; i++)
		fprintf(f, "%d\n", i);
	ck_assert_int_eq(fclose(f), 0);
	rc = call_stdin(path, &out, "counter.sum", "-", NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "5050\n") == 0, "exit %d: %s", rc, out);
	free(out);
	/* far more than a window (4K) */
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 1; i <= 200000; i++)
		fprintf(f, "%d\n", i);
	ck_assert_int_eq(fclose(f), 0);
	rc = call_stdin(path, &out, "counter.sum", "-", NULL);
	snprintf(want, sizeof(want), "%llu\n", 200000ull * 200001ull / 2);
	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "exit %d: %s", rc, out);
	free(out);
	/* none: the sum of nothing */
	rc = call_stdin(NULL, &out, "counter.sum", "-", NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "0\n") == 0, "exit %d: %s", rc, out);
	free(out);
	/* an item that is not a u64: the call given up, the reason said */
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "1\n2\nthree\n4\n");
	ck_assert_int_eq(fclose(f), 0);
	rc = call_stdin(path, &out, "counter.sum", "-", NULL);
	ck_assert_msg(rc == 1 && strstr(out, "item 3 is not a u64") != NULL, "exit %d: %s", rc,
		      out);
	free(out);
	/* no -: said what to give */
	rc = call_stdin(NULL, &out, "counter.sum", "", NULL);
	ck_assert_msg(rc == 1 && strstr(out, "give - for it") != NULL, "exit %d: %s", rc, out);
	free(out);
	rc = call_stdin(NULL, &out, "counter.sum", "7", NULL);
	ck_assert_msg(rc == 1 && strstr(out, "caller's stream") != NULL, "exit %d: %s", rc, out);
	free(out);
	/* the counter serves on */
	rc = call_stdin(NULL, &out, "counter.count", "3", NULL);
	ck_assert_msg(rc == 0 && strstr(out, "3") != NULL, "exit %d: %s", rc, out);
	free(out);
	unlink(path);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* --bytes-file into an rx<bytes>: hub.sink's hash of the chunks is the
 * same whatever their size, checked against a guest's stream of the
 * same bytes... here simply: it answers, and a file of nothing gives
 * the empty stream's hash, 0. */
START_TEST(test_hubctl_bytes_file)
{
	const char *path = harness_path("blob");
	char *out = NULL;
	FILE *f;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 0; i < 100000; i++)
		fputc(i % 256, f);
	ck_assert_int_eq(fclose(f), 0);
	hubctl_ok(&hub, &out, "call", "hub.sink", "--bytes-file", path, (char *)NULL);
	ck_assert_msg(strlen(out) > 1 && strcmp(out, "0\n") != 0, "%s", out);
	free(out);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert_int_eq(fclose(f), 0);
	hubctl_ok(&hub, &out, "call", "hub.sink", "--bytes-file", path, (char *)NULL);
	ck_assert_str_eq(out, "0\n");
	free(out);
	unlink(path);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Guest to guest through hubd, far more than a window, with the callee
 * on callbacks (_i 0) or a microthread (_i 1); then Cancel mid-upload
 * (advisory: the stream goes on) and the caller's Reset. */
START_TEST(test_between_guests)
{
	char *out, want[128];

	hub_start_up(&hub, "initial_credit = 4K\n", _i ? UPLOADERS("--mt") : UPLOADERS(""),
		     "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	out = a_send("b.sum", 100000, 0, 0);
	snprintf(want, sizeof(want), "sent 100000 rc 0: ok %llu\n", 100000ull * 100001ull / 2);
	ck_assert_msg(out != NULL && strcmp(out, want) == 0, "%s %s", out, hub_log_tail(&hub));
	free(out);
	out = b_last();
	ck_assert_str_eq(out, "0 100000\n");
	free(out);
	/* r[shm.flow.reset]: a Cancel is advisory: the upload goes on */
	out = a_send("b.sum", 1000, 0, 4);
	ck_assert_msg(out != NULL && strcmp(out, "sent 1000 rc 0: ok 500500\n") == 0, "%s", out);
	free(out);
	/* the caller ends with a Reset: the callee's reader sees it */
	out = a_send("b.sum", 1000, 0, 5);
	ck_assert_msg(out != NULL && strcmp(out, "sent 1000 rc 0: err the stream was reset\n") == 0,
		      "%s", out);
	free(out);
	assert_nothing_left("a,b");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The callee answers before reading all, or not at all, or stops the
 * stream: the caller's sends fail (-ENOTCONN), no hang, and the answer
 * comes. */
START_TEST(test_callee_ends_early)
{
	char *out, want[128];

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	out = a_send("b.take", 100000, 10, 0);
	snprintf(want, sizeof(want), "rc %d: ok 55\n", -ENOTCONN);
	ck_assert_msg(out != NULL && strstr(out, want) != NULL, "%s", out);
	free(out);
	out = a_send("b.ignore", 100000, 0, 0);
	snprintf(want, sizeof(want), "rc %d: ok 0\n", -ENOTCONN);
	ck_assert_msg(out != NULL && strstr(out, want) != NULL, "%s", out);
	free(out);
	/* r[shm.flow.reset]: the receiver's stop */
	out = a_send("b.stop", 100000, 10, 0);
	snprintf(want, sizeof(want), "rc %d: ok ", -ENOTCONN);
	ck_assert_msg(out != NULL && strstr(out, want) != NULL, "%s", out);
	free(out);
	out = b_last();
	ck_assert_msg(strncmp(out, "-104 ", 5) == 0, "%s", out);	/* our Reset */
	free(out);
	/* b serves on */
	out = a_send("b.sum", 100, 0, 0);
	ck_assert_msg(out != NULL && strcmp(out, "sent 100 rc 0: ok 5050\n") == 0, "%s", out);
	free(out);
	assert_nothing_left("a,b");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Either side dies mid-upload: the callee sees a Reset; the caller's
 * sends fail and its call gets the callee's death. */
START_TEST(test_death_mid_upload)
{
	char *out, *before, want[64];

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	out = a_send("b.crash", 100000, 5, 0);
	snprintf(want, sizeof(want), "rc %d: err ", -ENOTCONN);
	ck_assert_msg(out != NULL && strstr(out, want) != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	before = b_last();
	out = a_send("b.sum", 1000, 0, 1);	/* a exits after its items */
	free(out);
	/* a Reset, after what of its items hubd had passed on (those still
	 * queued are dropped with it) */
	out = b_last_after(before);
	free(before);
	ck_assert_msg(strncmp(out, "-104 ", 5) == 0, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A hostile caller: Data past its credit (r[shm.flow.remaining-credit]),
 * Data after its Close (r[shm.flow.channel-table-indexing]); ids that
 * are not its own open ones are refused (r[shm.id.channel-parity]). */
START_TEST(test_hostile_caller)
{
	static const char *const modes[] = { "10", "11", "12" };
	char *out;

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		out = a_send("b.sum", 10, 0, atoi(modes[i]));
		ck_assert_msg(out != NULL && strstr(out, "err the rx<T> argument must be a "
						     "channel the caller opened") != NULL,
			      "mode %s: '%s', hubctl said '%s'; %s", modes[i], out,
			      hubctl_stderr(), hub_log_tail(&hub));
		free(out);
	}
	out = a_send("b.stall", 0, 0, 2);
	free(out);
	assert_violation("a", "shm.flow.remaining-credit");
	ck_assert_int_eq(hub_stop(&hub), 0);

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	out = a_send("b.sum", 10, 0, 3);
	free(out);
	assert_violation("a", "shm.flow.channel-table-indexing");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A hostile callee: Data on the channel it receives on, a credit word
 * gone negative (r[shm.flow.wrap-rule]). The caller's sends then fail. */
START_TEST(test_hostile_callee)
{
	char *out;

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	out = a_send("b.evil", 10, 0, 0);
	free(out);
	assert_violation("b", "shm.flow.channel-table-indexing");
	ck_assert_int_eq(hub_stop(&hub), 0);

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	out = a_send("b.greedy", 100, 0, 0);
	ck_assert_msg(out != NULL && strstr(out, "err ") != NULL, "%s", out);
	free(out);
	assert_violation("b", "shm.flow.wrap-rule");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* a's calls to b over a lane, once at least want (published now and then). */
static unsigned long long
lane_calls(unsigned long long want)
{
	unsigned long long n = 0;

	for (double end = now_s() + 30; now_s() < end;) {
		json_object *o = hub_stats(&hub);

		n = json_u64(o, "guests", "a", "lane_calls_in");	/* as hubd counts them */
		json_object_put(o);
		if (n >= want)
			break;
		sleep_ms(20);
	}
	return n;
}

/* Over a lane (the first call through hubd offers it): the upload moves
 * to the lane's table with the call, the lane's own ids and credit
 * (r[shm.flow.channel-activate]: none until the callee reads), and the
 * same ends as through hubd; with the callee on callbacks (_i 0) or a
 * microthread (_i 1). */
START_TEST(test_over_lane)
{
	static const char *const methods[] = { "b.sum", "b.take", "b.ignore", "b.stop" };
	char *out, *before, want[128];

	hub_start_up(&hub, "initial_credit = 4K\n",
		     _i ? UPLOADERS_L("--mt", "yes") : UPLOADERS_L("", "yes"), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	/* each method's first call goes through hubd, which routes it to
	 * the lane from then on */
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		out = a_send(methods[i], 20, 20, 0);
		ck_assert_msg(out != NULL && strstr(out, ": ok ") != NULL, "%s: %s", methods[i], out);
		free(out);
	}
	out = a_send("b.sum", 100000, 0, 0);
	snprintf(want, sizeof(want), "sent 100000 rc 0: ok %llu\n", 100000ull * 100001ull / 2);
	ck_assert_msg(out != NULL && strcmp(out, want) == 0, "%s %s", out, hub_log_tail(&hub));
	free(out);
	ck_assert_msg(lane_calls(1) >= 1, "no call over a lane: %s", hub_log_tail(&hub));
	out = b_last();
	ck_assert_str_eq(out, "0 100000\n");
	free(out);
	/* early answers and the receiver's stop: the sender's sends fail */
	out = a_send("b.take", 100000, 10, 0);
	snprintf(want, sizeof(want), "rc %d: ok 55\n", -ENOTCONN);
	ck_assert_msg(out != NULL && strstr(out, want) != NULL, "%s", out);
	free(out);
	/* nothing read, so nothing sent: no credit until the callee reads */
	out = a_send("b.ignore", 100000, 0, 0);
	snprintf(want, sizeof(want), "sent 0 rc %d: ok 0\n", -ENOTCONN);
	ck_assert_msg(out != NULL && strcmp(out, want) == 0, "%s", out);
	free(out);
	if (!_i) {
		out = a_send("b.stop", 100000, 10, 0);
		snprintf(want, sizeof(want), "rc %d: ok ", -ENOTCONN);
		ck_assert_msg(out != NULL && strstr(out, want) != NULL, "%s", out);
		free(out);
	}
	out = a_send("b.sum", 1000, 0, 5);
	ck_assert_msg(out != NULL && strcmp(out, "sent 1000 rc 0: err the stream was reset\n") == 0,
		      "%s", out);
	free(out);
	out = a_send("b.sum", 0, 0, 0);
	ck_assert_msg(out != NULL && strcmp(out, "sent 0 rc 0: ok 0\n") == 0, "%s", out);
	free(out);
	assert_nothing_left("a,b");
	/* the caller dies mid-upload: the lane goes, the callee's reader
	 * gets a Reset */
	before = b_last();
	out = a_send("b.sum", 1000, 0, 1);
	free(out);
	out = b_last_after(before);
	free(before);
	ck_assert_msg(strncmp(out, "-104 ", 5) == 0, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A callee that does not read holds hubctl back: hubd reads the client's
 * next line only once the callee has credit for the last, so what we
 * pipe into hubctl's stdin stops being taken long before 64 MiB, and
 * hubd holds at most one item; then hubctl goes (killed) and hubd serves
 * on. */
START_TEST(test_slow_callee_holds_the_client_back)
{
	static char buf[65536];
	size_t total = 0;
	int in[2], stalled = 0, status;
	json_object *o;
	pid_t pid;

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "b.stall"), 0);
	for (size_t i = 0; i + 2 <= sizeof(buf); i += 2)
		memcpy(buf + i, "7\n", 2);
	ck_assert_int_eq(pipe(in), 0);
	if ((pid = fork()) == 0) {
		dup2(in[0], 0);
		close(in[0]);
		close(in[1]);
		execl(bin("hubctl"), "hubctl", "-s", hub.sock, "call", "b.stall", "0", "-",
		      (char *)NULL);
		_exit(127);
	}
	ck_assert_int_ge(pid, 0);
	close(in[0]);
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	while (total < (64u << 20) && !stalled) {
		ssize_t n = write(in[1], buf, sizeof(buf));
		struct pollfd pfd = { .fd = in[1], .events = POLLOUT };

		if (n > 0)
			total += (size_t)n;
		else if (n < 0 && errno == EAGAIN)
			stalled = poll(&pfd, 1, 3000) == 0;	/* nobody takes more */
		else
			break;
	}
	o = hub_stats(&hub);
	ck_assert_msg(stalled && total < (16u << 20), "%zu bytes taken, stalled %d: %s", total,
		      stalled, hub_log_tail(&hub));
	ck_assert_msg(json_u64(o, "uploads", "open", NULL) == 1 &&
		      json_u64(o, "uploads", "queued_bytes", NULL) <= 16,
		      "uploads: %s", json_object_to_json_string(json_get(o, "uploads")));
	json_object_put(o);
	kill(pid, SIGKILL);
	close(in[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* its upload ends with the client (a Reset for b, which never read) */
	for (double end = now_s() + 30; now_s() < end;) {
		o = hub_stats(&hub);
		total = json_u64(o, "uploads", "open", NULL);
		json_object_put(o);
		if (total == 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(total == 0, "%zu uploads left", total);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A caller that sends past the credit the callee granted over a lane
 * (r[shm.flow.remaining-credit], checked by the callee by its own count)
 * loses the lane, nothing more: both stay up, and uploads go on through
 * hubd. */
START_TEST(test_hostile_caller_over_lane)
{
	unsigned long long v = 0;
	char *out;

	hub_start_up(&hub, "initial_credit = 4K\n", UPLOADERS_L("", "yes"), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "a.send,b.last"), 0);
	/* b.hold reads but takes nothing: its window is all it grants */
	out = a_send("b.hold", 0, 0, 0);	/* through hubd: routes b.hold */
	ck_assert_msg(out != NULL && strcmp(out, "sent 0 rc 0: ok 0\n") == 0, "%s", out);
	free(out);
	out = a_send("b.hold", 10, 0, 2);
	free(out);
	for (double end = now_s() + 30; v == 0 && now_s() < end;) {
		json_object *o = hub_stats(&hub);

		v = json_u64(o, "guests", "b", "lane_violations");
		json_object_put(o);
		if (v == 0)
			sleep_ms(20);
	}
	ck_assert_msg(v >= 1, "no lane violation: %s", hub_log_tail(&hub));
	ck_assert_str_eq(hub_peer_state(&hub, "a"), "up");
	ck_assert_str_eq(hub_peer_state(&hub, "b"), "up");
	out = a_send("b.sum", 100, 0, 0);
	ck_assert_msg(out != NULL && strcmp(out, "sent 100 rc 0: ok 5050\n") == 0, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* What a raw client that sends text gets back until hubd closes the
 * connection (malloc'd). */
static char *
raw_exchange(const char *text)
{
	char *buf = calloc(1, 8192);
	size_t len = 0;
	ssize_t n;
	int fd = hub_client(&hub, 30);

	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	while (len < 8191 && (n = read(fd, buf + len, 8191 - len)) > 0)
		len += (size_t)n;
	close(fd);
	return buf;
}

/* A line of an upload that is not {"item":TEXT}, {"end":true} or
 * {"reset":true} gives the call up, counting it among the items from 1:
 * "end" and "reset" must be JSON true ("false" the string is no end). */
START_TEST(test_upload_bad_lines)
{
	static const struct {
		const char *lines, *said;
	} cases[] = {
		{ "{\"item\":\"1\"}\n{\"item\":\"2\"}\n{\"end\":\"false\"}\n",
		  "item 3 is not a line of the stream: {\\\"item\\\":TEXT}" },
		{ "{\"item\":1}\n", "item 1 is not a line of the stream" },
		{ "{\"item\":\"5\"}\n{\"reset\":1}\n", "item 2 is not a line of the stream" },
	};
	char text[512], *out;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert_int_eq(hub_wait_method(&hub, "counter.sum"), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "{\"cmd\":\"call\",\"method\":\"counter.sum\","
			 "\"args\":[\"-\"]}\n%s", cases[i].lines);
		out = raw_exchange(text);
		ck_assert_msg(strstr(out, cases[i].said) != NULL && strstr(out, "\"ok\":false") != NULL,
			      "case %zu: '%s' (want '%s')", i, out, cases[i].said);
		free(out);
	}
	/* JSON true ends it */
	out = raw_exchange("{\"cmd\":\"call\",\"method\":\"counter.sum\",\"args\":[\"-\"]}\n"
			   "{\"item\":\"2\"}\n{\"item\":\"3\"}\n{\"end\":true}\n");
	ck_assert_msg(strstr(out, "\"ok\":true,\"result\":5") != NULL, "'%s'", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A control client that goes mid-upload: the callee sees a Reset. */
START_TEST(test_client_goes)
{
	char *out;
	int fd;

	hub_start_up(&hub, NULL, UPLOADERS(""), "a,b");
	ck_assert_int_eq(hub_wait_method(&hub, "b.last"), 0);
	fd = hub_client(&hub, 10);
	dprintf(fd, "{\"cmd\":\"call\",\"method\":\"b.sum\",\"args\":[\"0\",\"-\"]}\n"
		"{\"item\":\"1\"}\n{\"item\":\"2\"}\n");
	sleep_ms(100);	/* not an assertion: items taken or not, the end is a Reset */
	close(fd);
	out = b_last();
	ck_assert_msg(strncmp(out, "-104 ", 5) == 0, "%s", out);
	free(out);
	assert_nothing_left("b");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_upload(void);
Suite *
suite_upload(void)
{
	Suite *s = suite_create("upload");
	TCase *tc = tcase_create("upload");

	tcase_add_checked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_hubctl_stdin);
	tcase_add_test(tc, test_hubctl_bytes_file);
	tcase_add_loop_test(tc, test_between_guests, 0, 2);
	tcase_add_test(tc, test_callee_ends_early);
	tcase_add_test(tc, test_death_mid_upload);
	tcase_add_test(tc, test_hostile_caller);
	tcase_add_test(tc, test_hostile_callee);
	tcase_add_test(tc, test_client_goes);
	tcase_add_test(tc, test_upload_bad_lines);
	tcase_add_test(tc, test_slow_callee_holds_the_client_back);
	tcase_add_test(tc, test_hostile_caller_over_lane);
	tcase_add_loop_test(tc, test_over_lane, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
