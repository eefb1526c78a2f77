/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's client: a connection to hubd's control socket, a request line
 * sent, its answer lines read (of any length), an answer that says no
 * printed. What goes wrong on the way ends hubctl with exit 2. */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <bsd/string.h>
#include <json-c/json.h>

#include "daemon/control.h"
#include "daemon/jsonout.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"

#define ANSWER_MAX	(512ul << 20)	/* one answer line, for sanity only */

int
client_connect(const struct ctl *ctl)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = ctl->sock;
	int fd;

	if (*path == '\0')	/* would be the abstract socket of no name */
		errx(2, "no control socket: -s (or HUBCTL_SOCKET) is empty");
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >= sizeof(sun.sun_path))
		errx(2, "socket path too long: %s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		err(2, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		struct stat st;

		if (errno == EACCES)
			errx(2, "cannot reach hubd at %s: permission denied (the socket is for "
			     "root, hubd's user and its group)", path);
		/* the kernel says "refused" of a file or directory too */
		if (errno == ECONNREFUSED && stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
			errx(2, "cannot reach hubd at %s: not a socket (-s names hubd's control "
			     "socket, its [hub] control =)", path);
		err(2, "cannot reach hubd at %s (is it running? -s sets the socket)", path);
	}
	if (ctl->timeout_s > 0) {
		struct timeval tv = { ctl->timeout_s, 0 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

void
client_no_answer_in_time(const struct ctl *ctl)
{
	if (ctl->call_wait_ms > 0)
		exit(client_refusal(ctl, "no answer within %.1f s (the call's --timeout, and 2 s "
				   "for its answer to come)", ctl->call_wait_ms / 1000.0));
	exit(client_refusal(ctl, "no answer within %d s (-t)", ctl->timeout_s));
}

int
client_refusal(const struct ctl *ctl, const char *fmt, ...)
{
	json_object *a;
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!ctl->json) {
		fprintf(stderr, "hubctl: %s\n", text);
		return 1;
	}
	a = json_object_new_object();
	json_object_object_add(a, "ok", json_object_new_boolean(0));
	json_object_object_add(a, "error", json_object_new_string(text));
	js_print(a);
	return 1;
}

/* One request line. Refused here if hubd would refuse it for its size. If
 * hubd closed the connection meanwhile, its answer (it may have said why)
 * is read all the same; write_errno says what went wrong if none comes. */
void
client_send(struct ctl *ctl, json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_OUT_FLAGS);
	size_t n = strlen(s), off = 0;
	char *line;
	ssize_t w;

	if (n + 1 > CONTROL_MSG_MAX)
		errx(2, "the request would be %zu bytes with its newline: hubd takes %d at most "
		     "(shorter arguments?)", n + 1, CONTROL_MSG_MAX);
	if ((line = malloc(n + 1)) == NULL)
		err(2, "malloc");
	memcpy(line, s, n);
	line[n] = '\n';
	json_object_put(req);
	while (off < n + 1) {
		if ((w = send(ctl->fd, line + off, n + 1 - off, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EPIPE && errno != ECONNRESET)
				err(2, "write to hubd");
			ctl->write_errno = errno;
			break;
		}
		off += (size_t)w;
	}
	free(line);
}

/* The connection ended without an answer. */
void
client_no_answer(const struct ctl *ctl, const char *during)
{
	if (ctl->write_errno != 0)
		errx(2, "hubd closed the connection%s: %s", during, strerror(ctl->write_errno));
	errx(2, "hubd closed the connection%s", during);
}

/* Until there is something to read, or a call's time is up (exits). */
static void
await_answer(const struct ctl *ctl)
{
	struct pollfd pfd = { .fd = ctl->fd, .events = POLLIN };
	uint64_t now;
	int rc;

	if (ctl->answer_by_ns == 0)
		return;		/* SO_RCVTIMEO (-t) or no bound */
	do {
		if ((now = hp_now_ns()) >= ctl->answer_by_ns)
			client_no_answer_in_time(ctl);
		rc = poll(&pfd, 1, (int)((ctl->answer_by_ns - now + 999999) / 1000000));
	} while (rc == 0 || (rc < 0 && errno == EINTR));
}

/* Reads one answer line, of any length (up to ANSWER_MAX); NULL when hubd
 * closed the connection. */
json_object *
client_read(struct ctl *ctl)
{
	static char *buf;
	static size_t len, cap, scanned;	/* no newline in buf[0, scanned) */
	json_object *o;
	char *nl;
	ssize_t n;

	for (;;) {
		if (len > scanned && (nl = memchr(buf + scanned, '\n', len - scanned)) != NULL) {
			*nl = '\0';
			o = json_tokener_parse(buf);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len);
			scanned = 0;
			if (o == NULL)
				errx(2, "hubd sent something that is not JSON");
			return o;
		}
		scanned = len;
		if (len == cap) {
			if (cap >= ANSWER_MAX)
				errx(2, "an answer from hubd longer than %lu MiB", ANSWER_MAX >> 20);
			cap = cap ? cap * 2 : 65536;
			if ((buf = realloc(buf, cap)) == NULL)
				err(2, "an answer of %zu bytes", cap);
		}
		await_answer(ctl);
		if ((n = read(ctl->fd, buf + len, cap - len)) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				client_no_answer_in_time(ctl);
			if (ctl->write_errno == 0)
				ctl->write_errno = errno;
			client_no_answer(ctl, "");
		}
		if (n == 0)
			return NULL;
		len += (size_t)n;
	}
}

/* What failed, for a call's error of kind (call's "kind"), before its
 * text; NULL for none: the method's own error ("user") says itself. */
static const char *
kind_label(const char *kind, const char *error)
{
	if (kind == NULL || strcmp(kind, "user") == 0)
		return NULL;
	if (strcmp(kind, "unreachable") == 0)
		return "remote hub unreachable";
	if (strcmp(kind, "timeout") == 0)
		return "remote timeout";
	/* "unknown method" alone when that is all there is to say */
	return strcmp(kind, error) == 0 ? NULL : kind;
}

/* 1 for an answer with ok false, printed and freed; 0 otherwise. */
int
client_failed(const struct ctl *ctl, json_object *a)
{
	json_object *detail = js_get(a, "detail");
	const char *error, *label;

	if (json_object_get_boolean(js_get(a, "ok")))
		return 0;
	if (ctl->json) {	/* as hubd sent it: js_text() escapes in place */
		printf("%s\n", json_object_to_json_string_ext(a, JSON_OUT_FLAGS));
		json_object_put(a);
		return 1;
	}
	error = js_get(a, "error") != NULL ? js_text(a, "error") : "hubd said no, without a reason";
	label = kind_label(js_get(a, "kind") != NULL ? js_text(a, "kind") : NULL, error);
	fprintf(stderr, "hubctl: %s%s%s%s%s\n", label ? label : "", label ? ": " : "",
		error, detail ? ": " : "", detail ? js_shown(detail) : "");
	json_object_put(a);
	return 1;
}

/* {"cmd": cmd}, and "name": name unless it is NULL. */
static void
send_cmd(struct ctl *ctl, const char *cmd, const char *name)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	if (name != NULL)
		json_object_object_add(req, "name", json_object_new_string(name));
	client_send(ctl, req);
}

static json_object *
ask(struct ctl *ctl, const char *cmd, const char *name)
{
	json_object *a;

	send_cmd(ctl, cmd, name);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	return a;
}

json_object *
client_cmd(struct ctl *ctl, const char *cmd)
{
	return ask(ctl, cmd, NULL);
}

json_object *
client_ask(struct ctl *ctl, const char *cmd, int *rc)
{
	return client_ask_about(ctl, cmd, NULL, rc);
}

/* Asks cmd (about name); NULL when that is all there is to do: it failed
 * (*rc 1, printed) or the answer went out as JSON (*rc 0). */
json_object *
client_ask_about(struct ctl *ctl, const char *cmd, const char *name, int *rc)
{
	json_object *a = ask(ctl, cmd, name);

	*rc = 0;
	if (client_failed(ctl, a)) {
		*rc = 1;
		return NULL;
	}
	if (ctl->json) {
		*rc = js_print(a);
		return NULL;
	}
	return a;
}

/* A view's question: hubd closes a connection idle longer than its
 * client_timeout, so a view that waits longer connects again. */
json_object *
client_ask_again(struct ctl *ctl, const char *cmd)
{
	json_object *a;

	send_cmd(ctl, cmd, NULL);
	if ((a = client_read(ctl)) == NULL) {
		close(ctl->fd);
		ctl->write_errno = 0;
		ctl->fd = client_connect(ctl);
		a = client_cmd(ctl, cmd);
	}
	if (client_failed(ctl, a))
		exit(1);
	return a;
}
