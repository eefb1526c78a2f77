/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's topic commands end to end (issue 41): listen prints each event
 * as it arrives into a pipe, for people and as JSON, several values and
 * a retained one, escaped, and ends cleanly on Ctrl-C, a closed pipe or
 * hubd's going; emit publishes as the operator and refuses what is not
 * of the signature; topics lists publisher, subscribers, policy and the
 * retained value. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

#define GUESTS "[guest kv]\nexec = @/guests/kv\n" \
	"[guest topicpub]\nexec = @/tests/guests/topicpub\n"
#define WAIT_MS	10000	/* a bound, never a figure under test */

static struct hub_proc hub;

/* A hubctl listen running, its stdout a pipe read line by line. */
struct listener {
	pid_t	pid;
	int	out;		/* -1: closed */
	char	errpath[256];
	char	buf[8192];
	size_t	len;
};

/* Starts hubctl -s SOCK args... with stdout into a pipe, stderr into a
 * file (for failure messages). */
static void
listen_start(struct listener *l, ...)
{
	char *argv[16];
	int argc = 0, p[2];
	va_list ap;

	memset(l, 0, sizeof(*l));
	snprintf(l->errpath, sizeof(l->errpath), "%s", harness_path("listen.err"));
	/* each listener its own file */
	snprintf(l->errpath + strlen(l->errpath), sizeof(l->errpath) - strlen(l->errpath),
		 ".%p", (void *)l);
	argv[argc++] = "hubctl";
	argv[argc++] = "-s";
	argv[argc++] = hub.sock;
	va_start(ap, l);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	ck_assert(pipe2(p, O_CLOEXEC) == 0);
	if ((l->pid = fork()) == 0) {
		int e = open(l->errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		dup2(e, 2);
		dup2(p[1], 1);
		execv(bin("hubctl"), argv);
		_exit(127);
	}
	ck_assert(l->pid > 0);
	close(p[1]);
	l->out = p[0];
}

/* What the listener wrote on stderr (static), for failure messages. */
static const char *
listen_err(const struct listener *l)
{
	static char text[2048];
	int fd = open(l->errpath, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : 0;

	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = '\0';
	return text;
}

/* Its next line (static, without the newline), or NULL after WAIT_MS or
 * at its end. */
static const char *
listen_line(struct listener *l)
{
	static char line[8192];
	double end = now_s() + WAIT_MS / 1000.0;
	char *nl;
	ssize_t n;

	for (;;) {
		if ((nl = memchr(l->buf, '\n', l->len)) != NULL) {
			size_t k = (size_t)(nl - l->buf);

			memcpy(line, l->buf, k);
			line[k] = '\0';
			l->len -= k + 1;
			memmove(l->buf, nl + 1, l->len);
			return line;
		}
		struct pollfd pfd = { .fd = l->out, .events = POLLIN };
		int left = (int)((end - now_s()) * 1000);

		if (left <= 0 || poll(&pfd, 1, left) <= 0 || l->len == sizeof(l->buf))
			return NULL;
		if ((n = read(l->out, l->buf + l->len, sizeof(l->buf) - l->len)) <= 0)
			return NULL;
		l->len += (size_t)n;
	}
}

/* Its next line must be want. */
static void
expect_line(struct listener *l, const char *want)
{
	const char *got = listen_line(l);

	ck_assert_msg(got != NULL && strcmp(got, want) == 0,
		      "listen printed '%s', not '%s'; its stderr: %s", got ? got : "(nothing)",
		      want, listen_err(l));
}

/* Its exit status once it ended (signal sig first, unless 0), -1 if it
 * did not within WAIT_MS (then killed). */
static int
listen_end(struct listener *l, int sig)
{
	double end = now_s() + WAIT_MS / 1000.0;
	int status;

	if (sig != 0)
		kill(l->pid, sig);
	while (waitpid(l->pid, &status, WNOHANG) == 0) {
		if (now_s() > end) {
			kill(l->pid, SIGKILL);
			waitpid(l->pid, &status, 0);
			status = -1;
			break;
		}
		sleep_ms(10);
	}
	if (l->out >= 0)
		close(l->out);
	l->out = -1;
	if (status == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* hubctl -j topics: the entry of topic (a new reference) or NULL. */
static json_object *
topic_entry(const char *topic)
{
	json_object *o, *ts, *t = NULL;
	char *out = NULL;

	if (hubctl(&hub, &out, "-j", "topics", (char *)NULL) != 0 ||
	    (o = json_tokener_parse(out)) == NULL) {
		free(out);
		return NULL;
	}
	free(out);
	ts = json_get(o, "topics");
	for (size_t i = 0; ts != NULL && i < json_object_array_length(ts); i++) {
		json_object *e = json_object_array_get_idx(ts, i);

		if (strcmp(json_object_get_string(json_get(e, "name")), topic) == 0)
			t = json_object_get(e);
	}
	json_object_put(o);
	return t;
}

/* Waits until topic has n subscribers (the listeners are in). */
static void
wait_subscribers(const char *topic, size_t n)
{
	double end = now_s() + WAIT_MS / 1000.0;
	size_t have = 0;

	while (now_s() < end) {
		json_object *t = topic_entry(topic), *subs = json_get(t, "subscribers");

		have = subs != NULL ? json_object_array_length(subs) : 0;
		json_object_put(t);
		if (have >= n)
			return;
		sleep_ms(20);
	}
	ck_abort_msg("%s has %zu subscribers, not %zu: %s", topic, have, n, hub_log_tail(&hub));
}

/* The seq of a -j listen line of value want (a JSON string). */
static void
expect_json(struct listener *l, const char *want)
{
	const char *got = listen_line(l);
	json_object *o = got != NULL ? json_tokener_parse(got) : NULL;
	const char *v = json_object_to_json_string_ext(json_get(o, "value"),
						       JSON_C_TO_STRING_PLAIN);

	ck_assert_msg(o != NULL && strcmp(v, want) == 0 && json_get(o, "seq") != NULL &&
		      json_object_get_int64(json_get(o, "lost")) == 0,
		      "listen -j printed '%s', not a value %s; its stderr: %s",
		      got ? got : "(nothing)", want, listen_err(l));
	json_object_put(o);
}

START_TEST(test_listen_prints_each_event)
{
	struct listener people, js;
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS, "kv,topicpub");
	ck_assert(hub_wait_method(&hub, "kv.put,kv.delete,topicpub.kept") == 0);
	listen_start(&people, "listen", "kv.changed", (char *)NULL);
	listen_start(&js, "-j", "listen", "--policy", "drop-oldest", "kv.changed", (char *)NULL);
	wait_subscribers("kv.changed", 2);
	/* kv publishes the key of each put and delete: into the pipe at once */
	hubctl_ok(&hub, NULL, "call", "kv.put", "colour", "blue", (char *)NULL);
	expect_line(&people, "colour");
	expect_json(&js, "\"colour\"");
	hubctl_ok(&hub, NULL, "call", "kv.delete", "colour", (char *)NULL);
	expect_line(&people, "colour");
	expect_json(&js, "\"colour\"");
	/* the operator's emit reaches them the same way */
	hubctl_ok(&hub, &out, "emit", "kv.changed", "size", (char *)NULL);
	ck_assert_msg(strcmp(out, "") == 0, "emit printed '%s'", out);
	free(out);
	expect_line(&people, "size");
	expect_json(&js, "\"size\"");
	/* a closed pipe ends listen cleanly at its next event */
	close(people.out);
	people.out = -1;
	hubctl_ok(&hub, NULL, "emit", "kv.changed", "more", (char *)NULL);
	ck_assert_msg(listen_end(&people, 0) == 0, "listen into a closed pipe: %s",
		      listen_err(&people));
	/* Ctrl-C too */
	expect_json(&js, "\"more\"");
	ck_assert_msg(listen_end(&js, SIGINT) == 0, "listen -j on SIGINT: %s", listen_err(&js));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

START_TEST(test_listen_several_values_escaped_retained)
{
	struct listener people, js, esc;
	char *out = NULL;
	int rc;

	hub_start_up(&hub, NULL, GUESTS, "topicpub");
	ck_assert(hub_wait_method(&hub, "topicpub.kept,topicpub.pair") == 0);
	listen_start(&people, "listen", "topicpub.pair", (char *)NULL);
	listen_start(&js, "-j", "listen", "topicpub.pair", (char *)NULL);
	listen_start(&esc, "listen", "--policy=latest", "topicpub.kept", (char *)NULL);
	wait_subscribers("topicpub.pair", 2);
	wait_subscribers("topicpub.kept", 1);
	/* "u64,str": space-separated for people, an array with -j */
	hubctl_ok(&hub, NULL, "call", "topicpub.pair", "7", "seven", (char *)NULL);
	expect_line(&people, "7 seven");
	expect_json(&js, "[7,\"seven\"]");
	/* a guest's text never reaches the terminal raw: one line, escaped */
	hubctl_ok(&hub, NULL, "call", "topicpub.kept", "a\033[2Jb\nc", (char *)NULL);
	expect_line(&esc, "a\\033[2Jb\\nc");
	ck_assert_int_eq(listen_end(&people, SIGTERM), 0);
	ck_assert_int_eq(listen_end(&js, SIGINT), 0);
	ck_assert_int_eq(listen_end(&esc, SIGINT), 0);
	/* retained: a listener that comes late gets the newest at once */
	hubctl_ok(&hub, NULL, "call", "topicpub.kept", "v2", (char *)NULL);
	rc = hubctl(&hub, &out, "listen", "-n", "1", "topicpub.kept", (char *)NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "v2\n") == 0, "listen -n 1 of a retained topic: "
		      "%d, '%s' (%s)", rc, out, hubctl_stderr());
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

START_TEST(test_emit_checks_the_signature)
{
	struct listener watcher;
	json_object *o;
	FILE *f;
	char *out = NULL, *err = NULL;
	int rc;

	hub_start_up(&hub, NULL, GUESTS, "kv,topicpub");
	ck_assert(hub_wait_method(&hub, "kv.put,topicpub.pair") == 0);
	/* -j: the event's sequence */
	hubctl_ok(&hub, &out, "-j", "emit", "topicpub.pair", "3", "three", (char *)NULL);
	o = json_tokener_parse(out);
	ck_assert_msg(o != NULL && json_object_get_boolean(json_get(o, "ok")) &&
		      json_get(o, "seq") != NULL, "emit -j printed '%s'", out);
	json_object_put(o);
	free(out);
	/* not of the signature: refused, saying which */
	rc = hubctl_err(&hub, &err, "emit", "topicpub.pair", "three", "3", (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(err, "u64") != NULL, "emit of a bad u64: %d '%s'", rc,
		      err);
	free(err);
	rc = hubctl_err(&hub, &err, "emit", "kv.changed", "a", "b", (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(err, "str") != NULL, "emit of two values to a str "
		      "topic: %d '%s'", rc, err);
	free(err);
	/* a file's bytes for a str: refused, exit 2 (it got the text
	 * "base64:...") */
	ck_assert_ptr_nonnull(f = fopen(harness_path("blob"), "w"));
	ck_assert_int_eq(fputs("raw\n", f) >= 0 && fclose(f) == 0, 1);
	rc = hubctl_err(&hub, &err, "emit", "kv.changed", "--bytes-file", harness_path("blob"),
			(char *)NULL);
	ck_assert_msg(rc == 2 && strstr(err, "argument 1 of kv.changed is a str: --bytes-file "
					"gives bytes\n") != NULL, "emit --bytes-file to a str "
		      "topic: %d '%s'", rc, err);
	free(err);
	rc = hubctl_err(&hub, &err, "emit", "no.such", "x", (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(err, "no such topic") != NULL, "emit to no topic: %d "
		      "'%s'", rc, err);
	free(err);
	/* hubd's own topics are hubd's to publish: guest_wait_method
	 * believes hub.methods (a topic once somebody listens); said so
	 * before anybody listens too */
	rc = hubctl_err(&hub, &err, "emit", "hub.guests", "x", (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(err, "hubd publishes the hub.* topics itself") != NULL,
		      "emit to hub.guests: %d '%s'", rc, err);
	free(err);
	listen_start(&watcher, "listen", "hub.methods", (char *)NULL);
	for (double end = now_s() + WAIT_MS / 1000.0; (o = topic_entry("hub.methods")) == NULL &&
	     now_s() < end; )
		sleep_ms(20);
	json_object_put(o);
	rc = hubctl_err(&hub, &err, "emit", "hub.methods", "kv.fake", "registered", "str->str",
			(char *)NULL);
	ck_assert_msg(rc == 1 && strstr(err, "hubd publishes the hub.* topics itself") != NULL,
		      "emit to hub.methods: %d '%s'", rc, err);
	free(err);
	ck_assert_msg(listen_end(&watcher, SIGINT) == 0, "listen hub.methods: %s",
		      listen_err(&watcher));
	/* a topic's name is checked as a method's is, and said to be a topic's */
	rc = hubctl_err(&hub, &err, "listen", "a..b", (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(err, "bad topic name: an empty part between dots") != NULL,
		      "listen a..b: %d '%s'", rc, err);
	free(err);
	/* bad usage of listen: exit 2, nothing asked */
	rc = hubctl_err(&hub, &err, "listen", "--policy", "sometimes", "kv.changed", (char *)NULL);
	ck_assert_msg(rc == 2 && strstr(err, "block, drop-oldest or latest") != NULL,
		      "listen --policy sometimes: %d '%s'", rc, err);
	free(err);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

START_TEST(test_topics_lists_publishers_and_subscribers)
{
	struct listener l;
	json_object *t, *s;
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS, "kv,topicpub");
	ck_assert(hub_wait_method(&hub, "topicpub.kept") == 0);
	hubctl_ok(&hub, NULL, "call", "topicpub.kept", "blue", (char *)NULL);
	listen_start(&l, "listen", "--policy", "latest", "topicpub.kept", (char *)NULL);
	wait_subscribers("topicpub.kept", 1);
	expect_line(&l, "blue");	/* retained: at once */
	t = topic_entry("topicpub.kept");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(json_object_get_string(json_get(t, "publisher")), "topicpub");
	ck_assert_str_eq(json_object_get_string(json_get(t, "signature")), "str");
	/* the retained event's values */
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(json_get(t, "retained"),
									  0)), "blue");
	s = json_object_array_get_idx(json_get(t, "subscribers"), 0);
	ck_assert_str_eq(json_object_get_string(json_get(s, "policy")), "latest");
	json_object_put(t);
	/* the table for people: the topic's row, its subscriber's under it */
	hubctl_ok(&hub, &out, "topics", (char *)NULL);
	ck_assert_msg(strstr(out, "topicpub.kept") != NULL && strstr(out, "topicpub ") != NULL &&
		      strstr(out, "blue") != NULL && strstr(out, "latest") != NULL &&
		      strstr(out, "SUBSCRIBER") != NULL && strstr(out, "kv.changed") != NULL,
		      "hubctl topics printed:\n%s", out);
	free(out);
	/* hubd going away ends listen with a message, exit 2 */
	ck_assert_int_eq(hub_stop(&hub), 0);
	ck_assert_msg(listen_end(&l, 0) == 2 && strstr(listen_err(&l), "hubd") != NULL,
		      "listen when hubd went: %s", listen_err(&l));
}
END_TEST

Suite *suite_hubctl_topics(void);
Suite *
suite_hubctl_topics(void)
{
	Suite *s = suite_create("hubctl_topics");
	TCase *tc = tcase_create("topics");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_listen_prints_each_event);
	tcase_add_test(tc, test_listen_several_values_escaped_retained);
	tcase_add_test(tc, test_emit_checks_the_signature);
	tcase_add_test(tc, test_topics_lists_publishers_and_subscribers);
	suite_add_tcase(s, tc);
	return s;
}
