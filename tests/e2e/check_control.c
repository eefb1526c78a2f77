/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control socket and hubctl against slow, idle, hostile and departed
 * clients: streams with backpressure (r[shm.flow.*]), channels freed on
 * every path, connection limits, hubctl's refusals and limits; hubctl's
 * views (top, on a terminal and not; stats -w), peers NAME, its JSON and
 * its errors. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "daemon/control.h"
#include "daemon/request.h"
#include "proto/clock.h"
#include "proto/xxh.h"
#include "proto/fdpass.h"
#include "proto/segment.h"
#include "tests/e2e/harness.h"

#define COUNTER	"[guest counter]\nexec = @/guests/counter\n"
#define GUEST_ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define OTHER	65534		/* nobody, nogroup: a user other than hubd's */

/* -- running hubctl ---------------------------------------------------- */

struct run {
	int		as_other;	/* as OTHER instead of ourselves */
	const char	*out_file;	/* stdout into this file, not into out */
	const char	*in_file;	/* stdin from this file (NULL: none) */
	int		timeout_ms;	/* killed after this (0: 60 s) */
	char		*out;		/* what it printed (malloc'd) */
	char		*err;
	int		status;		/* exit status, 128 + signal, -1 killed at the deadline */
};

/* Reads what fd has into *buf; 0 at its end. */
static ssize_t
collect(int fd, char **buf, size_t *len, size_t *cap)
{
	ssize_t n;

	if (*len + 65536 + 1 > *cap) {
		*cap = (*len + 65536 + 1) * 2;
		*buf = realloc(*buf, *cap);
		ck_assert_ptr_nonnull(*buf);
	}
	n = read(fd, *buf + *len, *cap - *len - 1);
	if (n > 0)
		*len += (size_t)n;
	(*buf)[*len] = '\0';
	return n;
}

/* hubctl -s SOCK args... as r says; r->status. */
static int
run_hubctl(struct run *r, const char *sock, ...)
{
	char *argv[32], **bufs[2] = { &r->out, &r->err };
	int argc = 0, out[2], err[2], status;
	size_t len[2] = { 0, 0 }, cap[2] = { 0, 0 };
	uint64_t deadline = (hp_now_ns() / HP_NS_PER_MS) + (uint64_t)(r->timeout_ms > 0 ? r->timeout_ms : 60000);
	struct pollfd p[2];
	va_list ap;
	pid_t pid;

	argv[argc++] = "hubctl";
	argv[argc++] = "-s";
	argv[argc++] = (char *)(uintptr_t)sock;
	va_start(ap, sock);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (r->as_other && (setgroups(0, NULL) != 0 || setgid(OTHER) != 0 ||
				    setuid(OTHER) != 0))
			_exit(120);
		if (r->out_file != NULL) {
			int fd = open(r->out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd < 0)
				_exit(121);
			dup2(fd, 1);
		} else {
			dup2(out[1], 1);
		}
		dup2(err[1], 2);
		if (r->in_file != NULL) {
			int fd = open(r->in_file, O_RDONLY);

			if (fd < 0)
				_exit(122);
			dup2(fd, 0);
		}
		execv(bin("hubctl"), argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	p[0] = (struct pollfd){ out[0], POLLIN, 0 };
	p[1] = (struct pollfd){ err[0], POLLIN, 0 };
	while ((p[0].fd >= 0 || p[1].fd >= 0) && (hp_now_ns() / HP_NS_PER_MS) < deadline) {
		if (poll(p, 2, 100) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			if (collect(p[i].fd, bufs[i], &len[i], &cap[i]) <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	r->status = -1;
	while ((hp_now_ns() / HP_NS_PER_MS) < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			return r->status;
		}
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return r->status;
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* -- segments that are not --------------------------------------------- */

/* r[shm.file.attach]: a FIFO is not a segment, and opening it must not
 * block (inspect, and libguest's attach, go through hp_segment_attach). */
START_TEST(test_inspect_fifo)
{
	struct run r = { .timeout_ms = 10000 };
	struct hp_segment seg;
	const char *why = NULL;
	char path[256];

	snprintf(path, sizeof(path), "%s/fifo", harness_dir());
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(hp_segment_attach(&seg, path, HP_ATTACH_RDONLY, &why), -EBADMSG);
	ck_assert_str_eq(why, "the segment is not a regular file");
	ck_assert_int_eq(hp_segment_attach(&seg, path, 0, &why), -EBADMSG);
	run_hubctl(&r, "/nonexistent", "inspect", path, (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "not a regular file") != NULL,
		      "exit %d: %s", r.status, r.err);
	run_free(&r);
	unlink(path);
}
END_TEST

static struct hub_proc hub;

/* A guest's peers entry, field by field. */
static int64_t
peer_field(const char *name, const char *field)
{
	json_object *p = hub_peer(&hub, name);
	int64_t v = p != NULL ? json_object_get_int64(json_get(p, field)) : -1;

	json_object_put(p);
	return v;
}

/* The control socket open to OTHER's group, as [hub] group would. */
static void
socket_for_other(void)
{
	ck_assert_int_eq(chown(hub.sock, 0, OTHER), 0);
	ck_assert_int_eq(chmod(hub.sock, 0660), 0);
}

/* -- hubctl's refusals and limits -------------------------------------- */

/* Every change refused to another user: a clear message, exit 1. */
START_TEST(test_refusals_exit_1)
{
	static const char *const cmds[][3] = {
		{ "reload", NULL, NULL }, { "call", "echo.echo", "x" }, { "restart", "echo", NULL },
		{ "stop", "echo", NULL }, { "start", "echo", NULL }, { "monitor", NULL, NULL },
	};

	if (geteuid() != 0)
		return;
	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	socket_for_other();
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		for (int json = 0; json < 2; json++) {
			struct run r = { .as_other = 1 };

			if (json)
				run_hubctl(&r, hub.sock, "-j", cmds[i][0], cmds[i][1], cmds[i][2],
					   (char *)NULL);
			else
				run_hubctl(&r, hub.sock, cmds[i][0], cmds[i][1], cmds[i][2],
					   (char *)NULL);
			ck_assert_msg(r.status == 1, "%s%s: exit %d: %s", json ? "-j " : "",
				      cmds[i][0], r.status, r.err);
			ck_assert_msg(strstr(json ? r.out : r.err, "permission denied") != NULL,
				      "%s: %s / %s", cmds[i][0], r.out, r.err);
			run_free(&r);
		}
	}
	ck_assert_int_eq(peer_field("echo", "epoch"), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The domains are all the hub's memory: a user other than root and
 * hubd's gets none of it. With the socket as hubd made it (0660, root's
 * group) it cannot even connect; let in by the socket's group, hubd
 * refuses it the domains. Either way no fd: hubctl inspect and dump say
 * why and exit 2, dump makes nothing, and a raw client's answer carries
 * no fd. */
START_TEST(test_other_user_gets_no_domains)
{
	static const char refused[] = "hubctl: hubd refused the domains: permission denied: "
				      "for root and the hub's user";
	const char *dir = harness_path("other-dump");
	struct run r = { .as_other = 1, .timeout_ms = 20000 };
	struct stat st;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		return;		/* needs root to be somebody else */
	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	run_hubctl(&r, hub.sock, "inspect", (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "cannot reach hubd at ") != NULL &&
		      strstr(r.err, ": permission denied (the socket is for root, hubd's user "
			     "and its group)") != NULL && r.out[0] == '\0',
		      "exit %d: %s / %s", r.status, r.out, r.err);
	run_free(&r);

	socket_for_other();
	run_hubctl(&r, hub.sock, "inspect", (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, refused) != NULL && r.out[0] == '\0',
		      "exit %d: %s / %s", r.status, r.out, r.err);
	run_free(&r);
	run_hubctl(&r, hub.sock, "-j", "inspect", (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, refused) != NULL, "exit %d: %s / %s",
		      r.status, r.out, r.err);
	run_free(&r);
	run_hubctl(&r, hub.sock, "dump", dir, (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, refused) != NULL, "exit %d: %s / %s",
		      r.status, r.out, r.err);
	run_free(&r);
	ck_assert_msg(stat(dir, &st) != 0 && errno == ENOENT, "dump made %s", dir);

	if ((pid = fork()) == 0) {
		static char buf[4096];
		int fds[16], fd;
		uint32_t nfds = 0;
		size_t len = 0;
		const char *line = "{\"cmd\":\"domains\"}\n";

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) != 0 || setgid(OTHER) != 0 || setuid(OTHER) != 0)
			_exit(3);
		fd = hub_client(&hub, 10);
		if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
			_exit(4);
		while (memchr(buf, '\n', len) == NULL && len < sizeof(buf) - 1) {
			ssize_t n = hp_fdpass_recv(fd, buf + len, sizeof(buf) - 1 - len, fds, 16,
						   &nfds);

			if (n <= 0)
				_exit(5);
			len += (size_t)n;
		}
		_exit(nfds != 0 ? 6 : strstr(buf, "permission denied") == NULL ? 7 : 0);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the other user's raw client: status %#x (6: it got fds)", status);
	/* and the hub's own user still gets them */
	ck_assert_int_ge(status = hub_domain_fd(&hub, "guest", "echo"), 0);
	close(status);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A request over CONTROL_MSG_MAX is refused by hubctl before sending,
 * naming the limit: exit 2, never SIGPIPE. */
START_TEST(test_request_too_large)
{
	struct run r = { 0 };
	char *big = malloc(70001);

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	memset(big, 'x', 70000);
	big[70000] = '\0';
	run_hubctl(&r, hub.sock, "call", "echo.echo", big, (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "65536") != NULL, "exit %d: %s", r.status,
		      r.err);
	run_free(&r);
	/* just below the limit goes through */
	memset(big, 'x', 65000);
	big[65000] = '\0';
	run_hubctl(&r, hub.sock, "call", "echo.echo", big, (char *)NULL);
	ck_assert_msg(r.status == 0 && strlen(r.out) == 65001, "exit %d: %s", r.status, r.err);
	run_free(&r);
	free(big);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubctl takes an answer line of any size: a fake hubd answers 20 MiB. */
START_TEST(test_large_answer)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct run r = { 0 };
	size_t big = 20u << 20;
	char path[256];
	json_object *o;
	int lfd, status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/fake.sock", harness_dir());
	memcpy(sun.sun_path, path, strlen(path) + 1);
	ck_assert_int_ge(lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	if ((pid = fork()) == 0) {
		char *answer = malloc(big + 64), c;
		int fd, n;
		size_t off = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (answer == NULL || (fd = accept(lfd, NULL, NULL)) < 0)
			_exit(3);
		while (read(fd, &c, 1) == 1 && c != '\n')	/* the request */
			continue;
		n = snprintf(answer, 64, "{\"ok\":true,\"segment\":\"");
		memset(answer + n, 'x', big);
		memcpy(answer + n + big, "\"}\n", 3);
		for (size_t len = (size_t)n + big + 3; off < len;) {
			ssize_t w = write(fd, answer + off, len - off);

			if (w <= 0)
				_exit(4);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(lfd);
	run_hubctl(&r, path, "-j", "status", (char *)NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	o = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq((size_t)json_object_get_string_len(json_get(o, "segment")), big);
	json_object_put(o);
	run_free(&r);
	waitpid(pid, &status, 0);
	ck_assert_int_eq(status, 0);
	unlink(path);
}
END_TEST

/* -- arguments with NUL ------------------------------------------------ */

START_TEST(test_nul_in_arguments)
{
	json_object *o, *v;

	hub_start_up(&hub, NULL, GUEST_ECHO COUNTER, "echo,counter");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse,counter.count,counter.stream") == 0);
	o = hub_request(&hub, "{\"cmd\":\"call\",\"method\":\"echo.echo\",\"args\":[\"a\\u0000b\"]}",
			NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_msg(json_object_get_boolean(json_get(o, "ok")), "%s", json_object_to_json_string(o));
	v = json_get(o, "result");
	ck_assert_int_eq(json_object_get_string_len(v), 3);
	ck_assert_int_eq(memcmp(json_object_get_string(v), "a\0b", 3), 0);
	json_object_put(o);
	/* in a number it is an error, not a shorter number */
	o = hub_request(&hub, "{\"cmd\":\"call\",\"method\":\"counter.count\",\"args\":[\"5\\u0000\"]}",
			NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_msg(!json_object_get_boolean(json_get(o, "ok")) &&
		      strstr(json_object_get_string(json_get(o, "error")), "argument 1 is not a u64"),
		      "%s", json_object_to_json_string(o));
	json_object_put(o);
	/* and in a method's name */
	o = hub_request(&hub, "{\"cmd\":\"call\",\"method\":\"echo.echo\\u0000x\",\"args\":[\"a\"]}",
			NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert(!json_object_get_boolean(json_get(o, "ok")));
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* -- raw clients ------------------------------------------------------- */

static void
send_line(int fd, const char *line)
{
	size_t n = strlen(line);

	ck_assert_int_eq(send(fd, line, n, MSG_NOSIGNAL), (ssize_t)n);
	ck_assert_int_eq(send(fd, "\n", 1, MSG_NOSIGNAL), 1);
}

/* Buffered lines from a socket. */
struct reader {
	int	fd;
	char	buf[1 << 16];
	size_t	len;
	char	line[1 << 16];
};

/* The next line (r->line, without its newline): 1, or 0 at the end of the
 * connection, -1 on an error (errno). */
static int
read_line(struct reader *r)
{
	char *nl;
	ssize_t n;

	for (;;) {
		if ((nl = memchr(r->buf, '\n', r->len)) != NULL) {
			size_t k = (size_t)(nl - r->buf);

			memcpy(r->line, r->buf, k);
			r->line[k] = '\0';
			memmove(r->buf, nl + 1, r->len - k - 1);
			r->len -= k + 1;
			return 1;
		}
		if (r->len == sizeof(r->buf))
			return -1;
		if ((n = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len)) < 0)
			return -1;
		if (n == 0)
			return 0;
		r->len += (size_t)n;
	}
}

/* The channels open hubctl shows for a guest (hubctl -j peers NAME). */
static int
chans_shown(const char *name)
{
	char *out = NULL;
	json_object *o;
	int chans = -1;

	hubctl_ok(&hub, &out, "-j", "peers", name, (char *)NULL);
	if ((o = json_tokener_parse(out)) != NULL &&
	    json_object_is_type(json_get(o, "channels_open"), json_type_int))
		chans = json_object_get_int(json_get(o, "channels_open"));
	json_object_put(o);
	free(out);
	return chans;
}

/* Waits until the guest shows no channel open (30 s); its last count. */
static int
wait_chans_zero(const char *name)
{
	int n = -1;

	for (uint64_t end = (hp_now_ns() / HP_NS_PER_MS) + 30000; (hp_now_ns() / HP_NS_PER_MS) < end; sleep_ms(50))
		if ((n = chans_shown(name)) == 0)
			break;
	return n;
}

/* The guest is still its first instance: never died, never restarted. */
static void
never_restarted(const char *name)
{
	json_object *p = hub_peer(&hub, name);

	ck_assert_ptr_nonnull(p);
	ck_assert_msg(json_object_get_int64(json_get(p, "epoch")) == 1 &&
		      json_object_get_int64(json_get(p, "restarts")) == 0 &&
		      json_object_array_length(json_get(p, "deaths")) == 0,
		      "%s: %s; %s", name, json_object_to_json_string(p), hub_log_tail(&hub));
	json_object_put(p);
}

/* -- channels freed on every path -------------------------------------- */

/* After whatever a test did: counter streams again, with no channel left
 * open and without ever having been restarted; then the hub stops. */
static void
counter_still_serves(void)
{
	char *out = NULL;

	hubctl_ok(&hub, &out, "call", "counter.count", "5", (char *)NULL);
	ck_assert_str_eq(out, "1\n2\n3\n4\n5\n5\n");
	free(out);
	ck_assert_int_eq(wait_chans_zero("counter"), 0);
	never_restarted("counter");
	ck_assert_int_eq(hub_stop(&hub), 0);
}

/* r[shm.flow.channel-id-reuse]: a count of 0 sends no item and (with
 * some libguests) no Close: the call's answer ends the stream and frees
 * the channel, 100 times over 31 host channel ids. */
START_TEST(test_count_zero_leaks_nothing)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count,counter.stream") == 0);
	for (int i = 0; i < 100; i++) {
		int rc = hubctl(&hub, &out, "call", "counter.count", "0", (char *)NULL);

		ck_assert_msg(rc == 0 && strcmp(out, "0\n") == 0, "call %d: %d %s; %s", i, rc,
			      out, hub_log_tail(&hub));
		free(out);
	}
	counter_still_serves();
}
END_TEST

/* Clients that go away in the middle of a stream: each call abandoned,
 * its stream drained to its end and the channel freed; the guest never
 * taken for a violator. */
START_TEST(test_disconnect_mid_stream)
{
	struct reader *r = calloc(1, sizeof(*r));

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count,counter.stream") == 0);
	for (int k = 0; k < 50; k++) {
		r->len = 0;
		r->fd = hub_client(&hub, 30);
		send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"counter.count\",\"args\":[\"100000\"]}");
		for (int i = 1; i <= 10; i++)
			ck_assert_msg(read_line(r) == 1, "client %d, item %d", k, i);
		close(r->fd);
	}
	free(r);
	counter_still_serves();
}
END_TEST

/* hubctl -s SOCK args... with its stdout a pipe (*fd, to read from) and
 * its stderr dropped; its pid. PR_SET_PDEATHSIG ends it with the test. */
static pid_t
spawn_hubctl(int *fd, ...)
{
	char *argv[16];
	int argc = 0, p[2];
	va_list ap;
	pid_t pid;

	argv[argc++] = "hubctl";
	argv[argc++] = "-s";
	argv[argc++] = hub.sock;
	va_start(ap, fd);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	if ((pid = fork()) == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		dup2(null, 2);
		execv(bin("hubctl"), argv);
		_exit(127);
	}
	ck_assert_int_ge(pid, 0);
	close(p[1]);
	*fd = p[0];
	return pid;
}

/* The next line of r within ms: 1, 0 at its end, -1 when none came. */
static int
read_line_within(struct reader *r, int ms)
{
	struct pollfd pfd = { r->fd, POLLIN, 0 };

	if (memchr(r->buf, '\n', r->len) == NULL && poll(&pfd, 1, ms) != 1)
		return -1;
	return read_line(r);
}

/* hubctl writes each item of a stream as it comes, not at the stream's
 * end, with its stdout a pipe (not line-buffered by stdio): the guest
 * holds the stream open after 3 items, and the reader has them all the
 * same. Interrupted then (SIGINT, SIGTERM), hubctl has printed them and
 * nothing is lost; the guest sees its caller go (Cancel) and serves on.
 * Both for people and with -j. */
START_TEST(test_stream_items_flushed)
{
	static const char *const want[2][3] = {
		{ "1", "2", "3" }, { "{\"item\":1}", "{\"item\":2}", "{\"item\":3}" },
	};
	struct reader *r = calloc(1, sizeof(*r));
	char *out = NULL;
	int status;
	pid_t pid;

	hub_start_up(&hub, NULL, "[guest streamer]\nexec = @/tests/guests/streamer\n",
		     "streamer");
	ck_assert(hub_wait_method(&hub, "streamer.trickle,streamer.waits") == 0);
	for (int json = 0; json < 2; json++) {
		int sig = json ? SIGTERM : SIGINT;

		r->len = 0;
		pid = json ? spawn_hubctl(&r->fd, "-j", "call", "streamer.trickle", "3",
					  (char *)NULL) :
		    spawn_hubctl(&r->fd, "call", "streamer.trickle", "3", (char *)NULL);
		/* the stream is open for a minute yet: a line now is an item
		 * flushed as it came (the deadline is for a broken hubctl) */
		for (int i = 0; i < 3; i++) {
			ck_assert_msg(read_line_within(r, 30000) == 1,
				      "%s: item %d not out while the stream is open",
				      json ? "-j" : "text", i + 1);
			ck_assert_str_eq(r->line, want[json][i]);
		}
		ck_assert_int_eq(kill(pid, sig), 0);
		ck_assert_int_eq(read_line_within(r, 30000), 0);	/* nothing more */
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == sig, "status %d", status);
		close(r->fd);
		/* its caller gone, the guest's handler was cancelled: it serves */
		hubctl_ok(&hub, &out, "call", "streamer.waits", (char *)NULL);
		free(out);
		out = NULL;
	}
	free(r);
	never_restarted("streamer");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubctl call ... | head: the reader takes the first items and goes;
 * hubctl ends at its next item, with status 0 and nothing said (it was
 * "hubctl: stdout: Broken pipe" and status 2), and the stream is
 * drained as for any client gone. stats -w and top too. */
START_TEST(test_reader_gone_ends_hubctl_quietly)
{
	struct reader *r = calloc(1, sizeof(*r));
	int status;
	pid_t pid;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count,counter.stream") == 0);
	pid = spawn_hubctl(&r->fd, "call", "counter.count", "1000000", (char *)NULL);
	for (int i = 1; i <= 2; i++) {
		char want[8];

		snprintf(want, sizeof(want), "%d", i);
		ck_assert_msg(read_line_within(r, 30000) == 1, "item %d not out", i);
		ck_assert_str_eq(r->line, want);
	}
	close(r->fd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	/* so do the views that print until stopped (they exited 2,
	 * "hubctl: stdout: Broken pipe"): a frame or two read, then gone */
	for (int i = 0; i < 3; i++) {
		free(r);
		r = calloc(1, sizeof(*r));
		pid = i == 0 ? spawn_hubctl(&r->fd, "stats", "-w", "-d", "0.05", (char *)NULL) :
		    i == 1 ? spawn_hubctl(&r->fd, "top", "-d", "0.05", (char *)NULL) :
		    spawn_hubctl(&r->fd, "-j", "stats", "-w", "-d", "0.05", (char *)NULL);
		ck_assert_msg(read_line_within(r, 30000) == 1, "view %d: nothing out", i);
		close(r->fd);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "view %d: status %d",
			      i, status);
	}
	free(r);
	counter_still_serves();
}
END_TEST

/* hubctl's errors name what they are about, once each: the method or
 * guest asked for, and an error hubd made said once, not as error and
 * again as its detail. The same texts for JSON clients. */
START_TEST(test_call_errors_named_once)
{
	static const char *const cases[][4] = {
		{ "call", "echo.ech", "x", "hubctl: no such method: echo.ech\n" },
		{ "call", "hub.source", "10", "hubctl: hub.source needs a channel the guest opened\n" },
		{ "call", "hub.signature", "no.such", "hubctl: no such method: no.such\n" },
		{ "restart", "nosuch", NULL, "hubctl: no such guest: nosuch\n" },
		{ "stop", "nosuch", NULL, "hubctl: no such guest: nosuch\n" },
	};
	char *err = NULL, *out = NULL;
	int rc;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i][1], "hub.source") == 0)
			rc = hubctl_err(&hub, &err, cases[i][0], cases[i][1], cases[i][2], "3",
					(char *)NULL);
		else
			rc = hubctl_err(&hub, &err, cases[i][0], cases[i][1], cases[i][2],
					(char *)NULL);
		ck_assert_msg(rc == 1, "%s %s: exit %d", cases[i][0], cases[i][1], rc);
		ck_assert_str_eq(err, cases[i][3]);
		free(err);
		err = NULL;
	}
	/* an option out of place is one, not a method ("no such method: -t") */
	{
		static const char *const bad[][3] = {
			{ "-t", "1", "hubctl: call: unknown option '-t': hubctl's own options go "
			  "before the command (hubctl -t 5 call ...)\n" },
			{ "--timeout", NULL, "hubctl: call: no value after '--timeout'\n" },
		};

		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			rc = hubctl_err(&hub, &err, "call", bad[k][0], bad[k][1], (char *)NULL);
			ck_assert_msg(rc == 2, "call %s: exit %d", bad[k][0], rc);
			ck_assert_str_eq(err, bad[k][2]);
			free(err);
			err = NULL;
		}
	}
	ck_assert_int_eq(hubctl(&hub, &out, "-j", "call", "echo.ech", "x", (char *)NULL), 1);
	ck_assert_str_eq(out, "{\"ok\":false,\"error\":\"no such method: echo.ech\"}\n");
	free(out);
	ck_assert_int_eq(hubctl(&hub, &out, "-j", "call", "hub.source", "10", "3", (char *)NULL), 1);
	ck_assert_str_eq(out, "{\"ok\":false,\"kind\":\"user\","
			 "\"error\":\"hub.source needs a channel the guest opened\"}\n");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The guests hubctl status counts: those of the config now, after each
 * reload (it said the start-up count for ever). */
static int64_t
status_guests(void)
{
	char *out = NULL;
	json_object *o;
	int64_t n = -1;

	hubctl_ok(&hub, &out, "-j", "status", (char *)NULL);
	if ((o = json_tokener_parse(out)) != NULL)
		n = json_object_get_int64(json_get(o, "guests"));
	json_object_put(o);
	free(out);
	return n;
}

START_TEST(test_status_after_reload)
{
	char msgs[2048], *out = NULL;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	ck_assert_int_eq(status_guests(), 1);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, GUEST_ECHO COUNTER), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "reload: %s", msgs);
	ck_assert_int_eq(status_guests(), 2);
	hubctl_ok(&hub, &out, "status", (char *)NULL);
	ck_assert_msg(strstr(out, "\nguests                 2\n") != NULL, "%s", out);
	free(out);
	/* a dropped guest no longer counts, stopping or not */
	ck_assert_int_eq(hub_write_conf(&hub, NULL, COUNTER), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "reload: %s", msgs);
	ck_assert_int_eq(status_guests(), 1);
	ck_assert(hub_wait_up(&hub, "counter", 10000) == 0);
	ck_assert_int_eq(status_guests(), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* version: the control protocol's version and every command of hubd's
 * table, in order, each allowed to us (root or hubd's user); to another
 * user, those that change things are not (doc/control.md). */
START_TEST(test_version)
{
	struct run r = { 0 };
	char *out = NULL, want[64];
	json_object *o, *cmds;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	hubctl_ok(&hub, &out, "-j", "version", (char *)NULL);
	ck_assert_ptr_nonnull(o = json_tokener_parse(out));
	ck_assert_int_eq(json_object_get_int(json_get(o, "protocol")), CONTROL_PROTOCOL);
	cmds = json_get(o, "commands");
	ck_assert_int_eq(json_object_array_length(cmds), CTL_NCMDS - 1);
	for (int i = CTL_NONE + 1; i < CTL_NCMDS; i++) {
		json_object *c = json_object_array_get_idx(cmds, (size_t)i - 1);

		ck_assert_str_eq(json_object_get_string(json_get(c, "name")), ctl_commands[i].name);
		ck_assert(json_object_get_boolean(json_get(c, "allowed")));
	}
	json_object_put(o);
	free(out);
	hubctl_ok(&hub, &out, "version", (char *)NULL);
	snprintf(want, sizeof(want), "protocol: %d (hubctl's: %d)\ncommands: version peers ",
		 CONTROL_PROTOCOL, CONTROL_PROTOCOL);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "only") == NULL, "%s", out);
	free(out);
	if (geteuid() == 0) {
		r.as_other = 1;
		socket_for_other();
		run_hubctl(&r, hub.sock, "version", (char *)NULL);
		char *only = strstr(r.out, "\nfor root and hubd's user only: ");

		ck_assert_msg(r.status == 0 && only != NULL && strstr(only, " call ") != NULL &&
			      strstr(only, " reload ") != NULL &&
			      strstr(r.out, " status ") != NULL && strstr(r.out, " status ") < only,
			      "exit %d: %s%s", r.status, r.out, r.err);
		run_free(&r);
	}
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubctl call hub.sink -: the stream is the caller's to send, stdin's
 * lines its items; hubd, the sink, answers the stream hash of what came
 * (doc/protocol.md: XXH3 over each item's postcard value, in order). Far
 * more than a window of initial_credit, and nothing held by hubd: it
 * reads a line once it has taken the last one. */
static long rss_anon_kb(pid_t pid);

START_TEST(test_sink_from_stdin)
{
	struct run r = { .timeout_ms = 120000 };
	char path[256], line[64], want[32];
	uint8_t item[80];
	uint64_t hash = 0;
	size_t bytes = 0;
	long before, after;
	FILE *f;

	hub_start_up(&hub, "initial_credit = 65536\n", GUEST_ECHO, "echo");
	snprintf(path, sizeof(path), "%s/items", harness_dir());
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 0; i < 100000; i++) {
		int n = snprintf(line, sizeof(line), "item %d of the stream", i);

		item[0] = (uint8_t)n;	/* its postcard value: length (< 128), bytes */
		memcpy(item + 1, line, (size_t)n);
		hash = XXH3_64bits_withSeed(item, (size_t)n + 1, hash);
		bytes += (size_t)n + 1;
		fprintf(f, "%s\n", line);
	}
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(bytes > 30 * 65536, "%zu bytes", bytes);
	before = rss_anon_kb(hub.pid);
	r.in_file = path;
	run_hubctl(&r, hub.sock, "call", "hub.sink", "-", (char *)NULL);
	after = rss_anon_kb(hub.pid);
	snprintf(want, sizeof(want), "%" PRIu64 "\n", hash);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.out, want);
	run_free(&r);
#ifndef __SANITIZE_ADDRESS__
	ck_assert_msg(after - before < 2048, "hubd grew by %ld kB", after - before);
#else
	(void)before;
	(void)after;
#endif
	/* an empty stream, and one given up (hubctl gone before its end) */
	r.in_file = "/dev/null";
	run_hubctl(&r, hub.sock, "call", "hub.sink", "-", (char *)NULL);
	snprintf(want, sizeof(want), "%" PRIu64 "\n", (uint64_t)0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.out, want);
	run_free(&r);
	/* without -: the refusal says what to give */
	run_hubctl(&r, hub.sock, "call", "hub.sink", (char *)NULL);
	ck_assert_int_eq(r.status, 1);
	ck_assert_str_eq(r.err, "hubctl: hub.sink takes (rx<bytes>) -> u64: argument 1 missing: "
			 "its stream is the caller's to send: give - for it, the items after "
			 "(hubctl: on its stdin, a line each)\n");
	run_free(&r);
	unlink(path);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A client that sends a stream and goes before its end, or sends what is
 * not an item: the call ends there with an error, hubd serves on; one
 * that stops sending is idle, closed after client_timeout. */
START_TEST(test_sink_feed_broken)
{
	struct reader *r = calloc(1, sizeof(*r));
	json_object *o;

	hub_start_up(&hub, "client_timeout = 1s\n", GUEST_ECHO, "echo");
	r->fd = hub_client(&hub, 30);
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"hub.sink\",\"args\":[\"-\"]}");
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"send\":true}");
	send_line(r->fd, "{\"item\":\"a\"}");
	send_line(r->fd, "{\"cmd\":\"status\"}");
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"ok\":false,\"kind\":\"user\",\"error\":\"a line of the "
			 "stream is {\\\"item\\\":TEXT}, {\\\"end\\\":true} or "
			 "{\\\"reset\\\":true}\"}");
	ck_assert_int_eq(read_line(r), 0);	/* and closed */
	close(r->fd);
	r->len = 0;
	r->fd = hub_client(&hub, 30);
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"hub.sink\",\"args\":[\"-\"]}");
	send_line(r->fd, "{\"item\":\"a\"}");
	send_line(r->fd, "{\"reset\":true}");
	send_line(r->fd, "{\"cmd\":\"status\"}");
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"ok\":false,\"kind\":\"user\",\"error\":\"the stream was reset\"}");
	ck_assert_int_eq(read_line(r), 1);	/* the next request is served */
	ck_assert_ptr_nonnull(o = json_tokener_parse(r->line));
	ck_assert(json_object_get_boolean(json_get(o, "ok")));
	json_object_put(o);
	/* and one that closes mid stream: nothing left behind */
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"hub.sink\",\"args\":[\"-\"]}");
	send_line(r->fd, "{\"item\":\"a\"}");
	ck_assert_int_eq(shutdown(r->fd, SHUT_WR), 0);
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"send\":true}");
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"ok\":false,\"kind\":\"user\",\"error\":\"the stream was reset\"}");
	ck_assert_int_eq(read_line(r), 0);
	close(r->fd);
	/* and one that sends nothing more: idle, closed after client_timeout */
	r->len = 0;
	r->fd = hub_client(&hub, 30);
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"hub.sink\",\"args\":[\"-\"]}");
	send_line(r->fd, "{\"item\":\"a\"}");
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"send\":true}");
	ck_assert_int_eq(read_line(r), 0);
	close(r->fd);
	free(r);
	ck_assert_int_eq(status_guests(), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* --bytes-file FILE: a bytes argument that is a file's bytes, NULs and
 * newlines included (none of which a command line can carry), reaches
 * the method whole. hubctl sends it as "base64:..."; hubd decodes that
 * form for a bytes parameter (the value forms of doc/hubctl.md). A file
 * too large for a request, or given for an argument that is not bytes,
 * is refused by hubctl, before hubd sees it. */
START_TEST(test_call_bytes_file)
{
	struct run r = { 0 };
	char path[256], want[64];
	uint8_t data[40000];
	FILE *f;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 131 + i / 256);	/* every byte value, NUL and \n too */
	hub_start_up(&hub, NULL, "[guest streamer]\nexec = @/tests/guests/streamer\n",
		     "streamer");
	ck_assert(hub_wait_method(&hub, "streamer.digest") == 0);
	snprintf(path, sizeof(path), "%s/blob", harness_dir());
	ck_assert_ptr_nonnull(f = fopen(path, "wb"));
	ck_assert_int_eq(fwrite(data, 1, sizeof(data), f), sizeof(data));
	ck_assert_int_eq(fclose(f), 0);
	run_hubctl(&r, hub.sock, "call", "streamer.digest", "--bytes-file", path, (char *)NULL);
	snprintf(want, sizeof(want), "%zu %016llx\n", sizeof(data),
		 (unsigned long long)XXH3_64bits(data, sizeof(data)));
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.out, want);	/* hubd's base64: decoding */
	run_free(&r);
	/* after "--", "--bytes-file" is the argument's text; before it, an
	 * option that takes the next argument, and "--" is none */
	run_hubctl(&r, hub.sock, "call", "streamer.digest", "--", "--bytes-file", (char *)NULL);
	snprintf(want, sizeof(want), "%zu %016llx\n", strlen("--bytes-file"),
		 (unsigned long long)XXH3_64bits("--bytes-file", strlen("--bytes-file")));
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.out, want);
	run_free(&r);
	run_hubctl(&r, hub.sock, "call", "streamer.digest", "--bytes-file", "--", path,
		   (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "--bytes-file takes a file") != NULL,
		      "exit %d: %s", r.status, r.err);
	run_free(&r);
	/* for an argument that is not bytes: refused, exit 2, where a str
	 * got the text "base64:..." */
	run_hubctl(&r, hub.sock, "call", "hub.log", "--bytes-file", path, (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "argument 1 of hub.log is a str: "
					      "--bytes-file gives bytes or an rx<bytes>") != NULL,
		      "exit %d: %s", r.status, r.err);
	run_free(&r);
	run_hubctl(&r, hub.sock, "call", "streamer.consume", "x", "--bytes-file", path,
		   (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "argument 2 of streamer.consume is a "
					      "u64: ") != NULL, "exit %d: %s", r.status, r.err);
	run_free(&r);
	/* too large for a request line: refused by hubctl, exit 2 */
	ck_assert_ptr_nonnull(f = fopen(path, "wb"));
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(fwrite(data, 1, sizeof(data), f), sizeof(data));
	ck_assert_int_eq(fclose(f), 0);
	run_hubctl(&r, hub.sock, "call", "streamer.digest", "--bytes-file", path, (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "too large for a request to hubd") != NULL,
		      "exit %d: %s", r.status, r.err);
	run_free(&r);
	unlink(path);
	run_hubctl(&r, hub.sock, "call", "streamer.digest", "--bytes-file", path, (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "No such file") != NULL, "exit %d: %s",
		      r.status, r.err);
	run_free(&r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Items 1..n in order on r, then the final answer with result n. */
static void
expect_count(struct reader *r, uint64_t from, uint64_t n)
{
	char want[64];
	json_object *o;

	for (uint64_t i = from; i <= n; i++) {
		ck_assert_msg(read_line(r) == 1, "item %" PRIu64 ": the stream ended (%s)", i,
			      strerror(errno));
		snprintf(want, sizeof(want), "{\"item\":%" PRIu64 "}", i);
		ck_assert_msg(strcmp(r->line, want) == 0, "item %" PRIu64 ": got %s", i, r->line);
	}
	ck_assert_msg(read_line(r) == 1, "no final answer");
	o = json_tokener_parse(r->line);
	ck_assert_msg(o != NULL && json_object_get_boolean(json_get(o, "ok")) &&
		      json_object_get_uint64(json_get(o, "result")) == n, "final: %s", r->line);
	json_object_put(o);
}

/* hubd's anonymous memory (malloc), kB. */
static long
rss_anon_kb(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "RssAnon:", 8) == 0)
			v = strtol(line + 8, NULL, 10);
	fclose(f);
	return v;
}

/* -- streams with backpressure ----------------------------------------- */

/* r[shm.flow.remaining-credit] r[shm.flow.ordering.receiver]: a million
 * items through hubctl into a file, every one in order, then the result.
 * Heartbeats off here and below: counter's handler sends for seconds under
 * a sanitizer, and whether libguest beats meanwhile is not this test's. */
START_TEST(test_stream_million_into_file)
{
	struct run r = { .timeout_ms = 120000 };
	char path[256], want[64], line[128], *log;
	FILE *f;
	json_object *o;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count,counter.stream") == 0);
	snprintf(path, sizeof(path), "%s/count.json", harness_dir());
	r.out_file = path;
	run_hubctl(&r, hub.sock, "-j", "call", "counter.count", "1000000", (char *)NULL);
	ck_assert_msg(r.status == 0, "hubctl: %d: %s; %s", r.status, r.err, hub_log_tail(&hub));
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	for (int i = 1; i <= 1000000; i++) {
		snprintf(want, sizeof(want), "{\"item\":%d}\n", i);
		ck_assert_msg(fgets(line, sizeof(line), f) != NULL, "item %d missing", i);
		ck_assert_msg(strcmp(line, want) == 0, "item %d: got %s", i, line);
	}
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	o = json_tokener_parse(line);
	ck_assert_msg(o != NULL && json_object_get_boolean(json_get(o, "ok")) &&
		      json_object_get_int64(json_get(o, "result")) == 1000000, "final: %s", line);
	json_object_put(o);
	ck_assert_ptr_null(fgets(line, sizeof(line), f));
	fclose(f);
	unlink(path);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "dropped") == NULL, "%.2000s", log);
	free(log);
	run_free(&r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A client that stops reading for a few seconds mid stream and reads on
 * gets every item: the guest waits for credit meanwhile, and hubd holds
 * about a window of items, not the stream. */
START_TEST(test_stream_slow_reader)
{
	struct reader *r = calloc(1, sizeof(*r));
	long before, during;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count,counter.stream") == 0);
	before = rss_anon_kb(hub.pid);
	r->fd = hub_client(&hub, 30);
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"counter.count\",\"args\":[\"1000000\"]}");
	for (int i = 1; i <= 1000; i++) {
		ck_assert_int_eq(read_line(r), 1);
		ck_assert_int_eq(atoi(r->line + strlen("{\"item\":")), i);
	}
	sleep_ms(3000);		/* the client reads nothing for a while */
	during = rss_anon_kb(hub.pid);
	expect_count(r, 1001, 1000000);
	close(r->fd);
	free(r);
#ifndef __SANITIZE_ADDRESS__	/* ASan's quarantine keeps what is freed */
	/* the whole stream is ~17 MB of JSON: hubd held a window's worth */
	ck_assert_msg(during - before < 8192, "hubd grew by %ld kB while the client slept",
		      during - before);
#else
	(void)before;
	(void)during;
#endif
	never_restarted("counter");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A client that stops reading for longer than client_timeout is dropped,
 * and only then; its call is abandoned cleanly and the guest serves on. */
START_TEST(test_stream_reader_stops_dropped)
{
	struct reader *r = calloc(1, sizeof(*r));
	int n;

	hub_start_up(&hub, "client_timeout = 1s\n", COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count,counter.stream") == 0);
	r->fd = hub_client(&hub, 30);
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"counter.count\",\"args\":[\"1000000\"]}");
	for (int i = 1; i <= 100; i++)
		ck_assert_int_eq(read_line(r), 1);
	/* stops reading: dropped for that, after client_timeout */
	ck_assert_msg(hub_log_wait(&hub, "took none of its answers for 1.0 s: dropped", 15000),
		      "%s", hub_log_tail(&hub));
	/* what was sent before arrives, then the end: never a final answer */
	while ((n = read_line(r)) == 1)
		ck_assert_msg(strstr(r->line, "\"ok\"") == NULL, "got %s", r->line);
	close(r->fd);
	free(r);
	counter_still_serves();
}
END_TEST

/* -- idle and too many clients ----------------------------------------- */

/* Another user opens 256 connections and says nothing: it gets 16, the
 * rest are told why, and root still gets in. */
START_TEST(test_other_user_cannot_lock_out_root)
{
	int ready[2], done[2], status;
	struct run r = { .as_other = 1 };
	char c;
	pid_t pid;

	if (geteuid() != 0)
		return;		/* needs root to be somebody else */
	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	socket_for_other();
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	if ((pid = fork()) == 0) {
		struct reader *rd = calloc(1, sizeof(*rd));
		int fds[256], ok;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) != 0 || setgid(OTHER) != 0 || setuid(OTHER) != 0)
			_exit(3);
		for (int i = 0; i < 256; i++)
			fds[i] = hub_client(&hub, 30);
		/* the last one was refused, with a reason */
		rd->fd = fds[255];
		ok = read_line(rd) == 1 && strstr(rd->line, "too many control connections") != NULL;
		if (write(ready[1], "x", 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(4);
		_exit(ok ? 0 : 5);
	}
	close(ready[1]);
	close(done[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	/* root gets in */
	r.as_other = 0;
	run_hubctl(&r, hub.sock, "peers", (char *)NULL);
	ck_assert_msg(r.status == 0 && strstr(r.out, "echo") != NULL, "root: %d %s %s",
		      r.status, r.out, r.err);
	run_free(&r);
	/* the other user at its limit is told so: exit 1, never SIGPIPE */
	r.as_other = 1;
	run_hubctl(&r, hub.sock, "peers", (char *)NULL);
	ck_assert_msg(r.status == 1 && strstr(r.err, "too many control connections") != NULL,
		      "other: %d %s", r.status, r.err);
	run_free(&r);
	ck_assert_int_eq(write(done[1], "x", 1), 1);
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other user: %d", status);
	close(ready[0]);
	close(done[1]);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A client that asks nothing for client_timeout is closed; one that keeps
 * asking is not. The busy one asks every 400 ms for longer than the
 * timeout, which is 3 s: a test held off the CPU up to 2.6 s between two
 * asks still keeps it (the idle one's read waits for its end). */
START_TEST(test_idle_clients_closed)
{
	struct reader *r = calloc(1, sizeof(*r));
	int idle;
	char buf[16];

	hub_start_up(&hub, "client_timeout = 3s\n", GUEST_ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo,echo.reverse") == 0);
	idle = hub_client(&hub, 30);
	r->fd = hub_client(&hub, 30);
	for (int i = 0; i < 10; i++) {	/* busy for 4 s */
		send_line(r->fd, "{\"cmd\":\"status\"}");
		ck_assert_int_eq(read_line(r), 1);
		ck_assert_ptr_nonnull(strstr(r->line, "\"ok\":true"));
		sleep_ms(400);
	}
	send_line(r->fd, "{\"cmd\":\"status\"}");
	ck_assert_int_eq(read_line(r), 1);
	/* the idle one was closed meanwhile: end of file, not a timeout */
	ck_assert_msg(read(idle, buf, sizeof(buf)) == 0, "idle client: %s", strerror(errno));
	/* and the busy one once it stops asking */
	ck_assert_msg(read_line(r) == 0, "busy client: %s", strerror(errno));
	close(idle);
	close(r->fd);
	free(r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

#define PROBER	"[guest prober]\nexec = @/tests/guests/prober\n"

/* hubd's open files now, but for topics' memory (made at a topic's first
 * subscriber, kept while the topic is). */
static int
hubd_fds(void)
{
	char path[300], target[300];
	struct dirent *e;
	DIR *d;
	int n = 0;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)hub.pid);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)hub.pid, e->d_name);
		k = readlink(path, target, sizeof(target) - 1);
		target[k > 0 ? k : 0] = '\0';
		n += strncmp(target, "/memfd:hub-topic:", 17) != 0;
	}
	closedir(d);
	return n;
}

/* How many Cancels prober has had. */
static long
prober_cancels(void)
{
	char *out = NULL;
	long n;

	hubctl_ok(&hub, &out, "call", "prober.cancels", (char *)NULL);
	n = strtol(out, NULL, 10);
	free(out);
	return n;
}

/* Clients that go while hubd does not read them, each holding what only
 * its going ends: a call that is never answered or a listen or a monitor
 * that nothing comes to, after shutting down its side of the socket (and
 * hubd read the end of it), or with its lines filling hubd's buffer
 * while its call runs. Each is let go: the callee gets a Cancel, and
 * hubd's open files come back to what they were. Before, they stayed
 * until hubd restarted, and 16 of them locked their user out. */
START_TEST(test_gone_while_unread)
{
	static const char *const held[] = {
		"{\"cmd\":\"call\",\"method\":\"prober.wait\"}",
		"{\"cmd\":\"listen\",\"topic\":\"hub.guests\"}",
		"{\"cmd\":\"monitor\"}",
	};
	char *lines = malloc(5000 * 18 + 64);
	size_t len = 0;
	long cancels = -1;
	int fd, before, fds = -1;

	hub_start_up(&hub, "client_timeout = 300s\n", PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.wait,prober.cancels") == 0);
	before = hubd_fds();
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
		fd = hub_client(&hub, 30);
		send_line(fd, held[i]);
		ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
		if (i == 0)
			ck_assert(hub_wait_in_flight(&hub, "prober.wait") == 0);
		/* for hubd to read the end before the close: it sees the
		 * close either way, only sooner without */
		sleep_ms(200);
		close(fd);
	}
	for (uint64_t end = hp_now_ns() + 30 * HP_NS_PER_S;
	     prober_cancels() < 1 && hp_now_ns() < end; )
		sleep_ms(50);
	ck_assert_msg(prober_cancels() == 1, "the call of a client that shut down, then "
		      "closed: not cancelled");
	/* a call, then more lines than hubd's buffer takes, then gone */
	len = (size_t)sprintf(lines, "{\"cmd\":\"call\",\"method\":\"prober.wait\"}\n");
	for (int i = 0; i < 5000; i++)
		len += (size_t)sprintf(lines + len, "{\"cmd\":\"version\"}\n");
	fd = hub_client(&hub, 30);
	ck_assert_int_eq(send(fd, lines, len, MSG_NOSIGNAL), (ssize_t)len);
	ck_assert(hub_wait_in_flight(&hub, "prober.wait") == 0);
	close(fd);
	free(lines);
	/* the figures of one look, asserted: a look again would count the
	 * connection of prober_cancels' hubctl, gone but perhaps not yet
	 * closed by hubd */
	for (uint64_t end = hp_now_ns() + 30 * HP_NS_PER_S; hp_now_ns() < end; sleep_ms(50)) {
		cancels = prober_cancels();
		fds = hubd_fds();
		if (cancels >= 2 && fds <= before)
			break;
	}
	ck_assert_msg(cancels == 2 && fds <= before,
		      "prober had %ld Cancels (2 wanted), hubd %d fds (%d before)", cancels, fds,
		      before);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The calls hubctl calls lists (its array's length). */
static int
calls_listed(void)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"calls\"}", NULL);
	int n = o != NULL ? (int)json_object_array_length(json_get(o, "calls")) : -1;

	json_object_put(o);
	return n;
}

/* Clients that each call a method that never answers, then hang up: the
 * guest is told (Cancel) but keeps each call, its to answer once, so
 * hubd keeps it too; the user's calls that guests hold stop at
 * calls_in_flight, the next refused saying so, where before they grew
 * hubd's tables without end. */
START_TEST(test_gone_clients_calls_bounded)
{
	char *err = NULL;
	int fd;

	hub_start_up(&hub, "calls_in_flight = 3\nstop_grace = 1s\n",
		     "[guest sl]\nexec = @/tests/guests/lanebreaker\nargs = --prefix sl\n", "sl");
	ck_assert(hub_wait_method(&hub, "sl.sleep") == 0);
	for (int i = 1; i <= 5; i++) {
		fd = hub_client(&hub, 30);
		send_line(fd, "{\"cmd\":\"call\",\"method\":\"sl.sleep\",\"args\":[\"3600000\"]}");
		/* hubd has taken it (or refused it) before the client goes */
		for (uint64_t end = hp_now_ns() + 30 * HP_NS_PER_S;
		     i <= 3 && calls_listed() < i && hp_now_ns() < end; )
			sleep_ms(20);
		sleep_ms(100);
		close(fd);
	}
	ck_assert_int_eq(hubctl_err(&hub, &err, "call", "sl.sleep", "1", NULL), 1);
	ck_assert_msg(strstr(err, "too many calls in flight") != NULL &&
		      strstr(err, "calls_in_flight = 3") != NULL, "%s", err);
	free(err);
	ck_assert_int_eq(calls_listed(), 3);
	/* the host's services are answered at once: not refused */
	hubctl_ok(&hub, NULL, "call", "hub.ping", "x", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* An error that quotes a request's bytes that are not UTF-8 (or a name
 * cut inside a character) escapes them: the answer stays JSON that a
 * strict parser reads. */
START_TEST(test_errors_are_utf8)
{
	static const char ask[] =
		"{\"cmd\":\"logs\",\"name\":\"ec\377ho\"}\n"
		"{\"cmd\":\"logs\",\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaa\303\251\"}\n";
	struct reader *r = calloc(1, sizeof(*r));

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	r->fd = hub_client(&hub, 30);
	ck_assert_int_eq(send(r->fd, ask, sizeof(ask) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(ask) - 1);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(read_line(r), 1);
		for (const unsigned char *p = (const unsigned char *)r->line; *p != '\0'; p++)
			ck_assert_msg(*p < 0x80, "answer %d: a byte %#x in '%s'", i, *p, r->line);
		ck_assert_msg(strstr(r->line, i == 0 ? "no such guest: ec\\\\377ho" :
				     "aaaa\\\\303\"") != NULL, "answer %d: '%s'", i, r->line);
	}
	close(r->fd);
	free(r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A last request without its newline, the connection shut down after
 * it: answered with why it is not read, after the answers before it. */
START_TEST(test_last_line_without_newline)
{
	static const char ask[] = "{\"cmd\":\"version\"}\n{\"cmd\":\"version\"}";
	struct reader *r = calloc(1, sizeof(*r));

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	r->fd = hub_client(&hub, 30);
	ck_assert_int_eq(send(r->fd, ask, sizeof(ask) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(ask) - 1);
	ck_assert_int_eq(shutdown(r->fd, SHUT_WR), 0);
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_msg(strstr(r->line, "\"ok\":true") != NULL, "'%s'", r->line);
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_str_eq(r->line, "{\"ok\":false,\"error\":\"the last request has no newline at "
			 "its end: not read\"}");
	ck_assert_int_eq(read_line(r), 0);	/* then closed */
	close(r->fd);
	free(r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Answers that hand over fds (domains, listen's ring) keep them when
 * other requests were sent ahead of them, or after them, on the same
 * connection: before, an answer written in one piece with the one ahead
 * of it lost its fds, and a second domains dropped the first's. */
START_TEST(test_fds_with_pipelined_answers)
{
	static const char ask[] = "{\"cmd\":\"version\"}\n{\"cmd\":\"domains\"}\n"
				  "{\"cmd\":\"version\"}\n{\"cmd\":\"domains\"}\n";
	static char buf[1 << 16];
	int fds[256], fd, lines = 0, alone;
	uint32_t nfds = 0;
	size_t len = 0;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	/* one domains alone: how many fds an answer carries */
	fd = hub_client(&hub, 30);
	send_line(fd, "{\"cmd\":\"domains\"}");
	while (memchr(buf, '\n', len) == NULL) {
		ssize_t n = hp_fdpass_recv(fd, buf + len, sizeof(buf) - 1 - len, fds, 256, &nfds);

		ck_assert_int_gt(n, 0);
		len += (size_t)n;
	}
	close(fd);
	ck_assert_int_gt(alone = (int)nfds, 0);
	for (uint32_t i = 0; i < nfds; i++)
		close(fds[i]);
	/* four requests in one write */
	nfds = 0;
	len = 0;
	fd = hub_client(&hub, 30);
	ck_assert_int_eq(send(fd, ask, sizeof(ask) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(ask) - 1);
	while (lines < 4) {
		ssize_t n = hp_fdpass_recv(fd, buf + len, sizeof(buf) - 1 - len, fds, 256, &nfds);

		ck_assert_msg(n > 0, "%d answers of 4: %.*s", lines, (int)len, buf);
		for (ssize_t i = 0; i < n; i++)
			lines += buf[len + (size_t)i] == '\n';
		len += (size_t)n;
	}
	close(fd);
	for (uint32_t i = 0; i < nfds; i++)
		close(fds[i]);
	ck_assert_msg((int)nfds == 2 * alone, "%u fds with two domains answers, %d with one",
		      nfds, alone);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* hubd out of file descriptors: past the client its reserve fd takes, it
 * stops accepting for a while instead of spinning on accept (and logging
 * each time), and serves again once the connections are gone. */
START_TEST(test_out_of_fds_no_spin)
{
	int fds[300], n = 0, lines = 0;
	json_object *o = NULL;
	char *log;

	/* hard too, or hubd raises its limit; no guest: its few descriptors
	 * are all it needs */
	hub_next_nofile(12, 12);
	int rc = hub_start(&hub, NULL, NULL);

	ck_assert_msg(rc == 0, "hubd: %s", hub_log_tail(&hub));
	for (int i = 0; i < 300; i++) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		memcpy(sun.sun_path, hub.sock, strlen(hub.sock) + 1);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
			fds[n++] = fd;
		else if (fd >= 0)
			close(fd);
	}
	ck_assert_int_gt(n, 12);
	sleep_ms(1500);		/* hubd out of descriptors for a while */
	for (int i = 0; i < n; i++)
		close(fds[i]);
	for (uint64_t end = (hp_now_ns() / HP_NS_PER_MS) + 20000; (hp_now_ns() / HP_NS_PER_MS) < end && o == NULL; sleep_ms(50)) {
		o = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
		if (o != NULL && !json_object_get_boolean(json_get(o, "ok"))) {
			json_object_put(o);
			o = NULL;
		}
	}
	ck_assert_msg(o != NULL, "hubd does not answer again: %s", hub_log_tail(&hub));
	json_object_put(o);
	log = hub_log(&hub);
	for (char *p = log; *p != '\0'; p++)
		lines += *p == '\n';
	ck_assert_msg(lines < 20, "%d lines logged: %.2000s", lines, log);
	ck_assert_ptr_nonnull(strstr(log, "control: out of file descriptors"));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The fd pid's next open would get: the lowest number it has not open. */
static int
lowest_free_fd(pid_t pid)
{
	char path[64];
	struct stat st;
	int fd = 0;

	do
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd++);
	while (lstat(path, &st) == 0);
	return fd - 1;
}

/* hubd's fds below 32 and what each is, for a message (static). */
static const char *
fd_list(pid_t pid)
{
	static char text[2048];
	char path[64], target[128];
	size_t pos = 0;
	ssize_t n;

	text[0] = '\0';
	for (int fd = 0; fd < 32 && pos < sizeof(text) - 160; fd++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
			continue;
		target[n] = '\0';
		pos += (size_t)snprintf(text + pos, sizeof(text) - pos, " %d=%s", fd, target);
	}
	return text;
}

/* lowest_free_fd once hubd has closed what it was closing (the
 * connections of the harness's last requests, say): two looks 200 ms
 * apart agree (3 s at most). */
static int
settled_free_fd(pid_t pid)
{
	int fd = lowest_free_fd(pid), again;

	for (int i = 0; i < 15; i++, fd = again) {
		sleep_ms(200);
		if ((again = lowest_free_fd(pid)) == fd)
			break;
	}
	return fd;
}

/* Defect: guests failing to spawn for want of fds took each one that came
 * free, and hubd accepted no connection again: no operator could stop a
 * guest to end it (CI hung on it). hubd with no fd free still serves one
 * client at a time, with the one it keeps for that. Defect: accept says
 * EMFILE before it looks at its queue, so hubd gave the spare up with
 * nobody waiting and never took it again (this test failed now and then). */
START_TEST(test_out_of_fds_operator_served)
{
	struct rlimit old, none;
	char *out = NULL, before[2048];
	int free_fd, fd;

	hub_start_up(&hub, NULL, "[guest echo]\nexec = @/guests/echo\n", "echo");
	ck_assert_int_eq(prlimit(hub.pid, RLIMIT_NOFILE, NULL, &old), 0);
	/* the limit is one above the highest fd number it may open */
	none = old;
	none.rlim_cur = (rlim_t)(free_fd = settled_free_fd(hub.pid));
	snprintf(before, sizeof(before), "%s", fd_list(hub.pid));
	ck_assert_int_eq(prlimit(hub.pid, RLIMIT_NOFILE, &none, NULL), 0);
	for (int i = 0; i < 3; i++) {
		hubctl_ok(&hub, &out, "-t", "30", "peers", (char *)NULL);
		ck_assert_msg(strstr(out, "echo") != NULL, "%s", out);
		free(out);
		/* the one kept is kept again, once hubd has seen the client
		 * go (it closes the client's fd, then takes the spare anew:
		 * a look in between sees the fd free); a spare given up stays
		 * free for good */
		for (double end = now_s() + 30;
		     (fd = lowest_free_fd(hub.pid)) != free_fd && now_s() < end;)
			sleep_ms(50);
		ck_assert_msg(fd == free_fd, "lowest free fd %d, was %d;%s; before:%s", fd,
			      free_fd, fd_list(hub.pid), before);
	}
	hubctl_ok(&hub, &out, "-t", "30", "stop", "echo", (char *)NULL);
	free(out);
	ck_assert_int_eq(prlimit(hub.pid, RLIMIT_NOFILE, &old, NULL), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* -- hubctl for operators: top, stats -w, peers NAME, JSON, errors ------ */

#define ECHO_CALL "{\"cmd\":\"call\",\"method\":\"echo.echo\",\"args\":[\"hello\"]}\n"

/* How many times needle is in s. */
static int
count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* A child that calls echo.echo over its own connection for ms, so that a
 * view sees calls made meanwhile; its pid. */
static pid_t
calls_meanwhile(int ms)
{
	int fd = hub_client(&hub, 10);
	pid_t pid;

	if ((pid = fork()) == 0) {
		uint64_t end = hp_now_ns() + (uint64_t)ms * HP_NS_PER_MS;
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		while (hp_now_ns() < end) {
			if (write(fd, ECHO_CALL, strlen(ECHO_CALL)) != (ssize_t)strlen(ECHO_CALL))
				_exit(3);
			do {	/* the answer line */
				if (read(fd, &c, 1) != 1)
					_exit(4);
			} while (c != '\n');
		}
		_exit(0);
	}
	close(fd);
	ck_assert_int_gt(pid, 0);
	return pid;
}

static void
calls_done(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "caller: status %d", status);
}

/* Not on a terminal: frames a blank line apart, a row per guest, no
 * escape codes; rates in the second frame; -j a JSON object per frame. */
START_TEST(test_top_not_a_tty)
{
	struct run r = { .timeout_ms = 20000 };
	char *second;
	json_object *o;
	pid_t caller;

	hub_start_up(&hub, NULL, GUEST_ECHO COUNTER, "echo,counter");
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	caller = calls_meanwhile(1500);
	run_hubctl(&r, hub.sock, "top", "-n", "2", "-d", "0.2", (char *)NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strchr(r.out, '\033') == NULL, "escape codes: %s", r.out);
	ck_assert_msg(count_of(r.out, "hub up ") == 2 && count_of(r.out, "\n\nhub up ") == 1,
		      "%s", r.out);
	ck_assert_msg(count_of(r.out, "\necho ") == 2 && count_of(r.out, "\ncounter ") == 2, "%s",
		      r.out);
	/* the first frame has no rates yet, the second has echo's calls */
	second = strstr(r.out, "\n\nhub up ");
	ck_assert_ptr_nonnull(strstr(r.out, "calls/s -,"));
	{
		char state[16];
		int pid;
		double calls;
		const char *row = strstr(second, "\necho ");

		ck_assert_int_eq(sscanf(row, " echo %15s %d %lf", state, &pid, &calls), 3);
		ck_assert_str_eq(state, "up");
		ck_assert_int_eq(pid, hub_peer_int(&hub, "echo", "pid"));
		ck_assert_msg(calls > 0, "%s", r.out);
	}
	run_free(&r);
	run_hubctl(&r, hub.sock, "-j", "top", "-n", "2", "-d", "0.2", (char *)NULL);
	ck_assert_msg(r.status == 0 && count_of(r.out, "\n") == 2, "exit %d: %s / %s", r.status,
		      r.out, r.err);
	o = json_tokener_parse(strchr(r.out, '\n') + 1);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_is_type(json_get(o, "calls_per_s"), json_type_double));
	ck_assert(json_object_is_type(json_get(json_object_array_get_idx(json_get(o, "peers"), 0),
					       "calls_per_s"), json_type_double));
	json_object_put(o);
	run_free(&r);
	calls_done(caller);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* stats -w: a header, a line per interval, calls made meanwhile as rates. */
START_TEST(test_stats_watch)
{
	struct run r = { .timeout_ms = 20000 };
	double in, out, best = 0;
	char *line;
	pid_t caller;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	caller = calls_meanwhile(1500);
	run_hubctl(&r, hub.sock, "stats", "-w", "-n", "3", "-d", "0.2", (char *)NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(count_of(r.out, "\n") == 4 && strncmp(r.out, "CALLS-IN/S", 10) == 0 &&
		      count_of(r.out, "CALLS-IN/S") == 1, "%s", r.out);
	for (line = strchr(r.out, '\n') + 1; *line != '\0'; line = strchr(line, '\n') + 1) {
		ck_assert_int_eq(sscanf(line, "%lf %lf", &in, &out), 2);
		best = in + out > best ? in + out : best;
	}
	ck_assert_msg(best > 0, "no calls seen: %s", r.out);
	run_free(&r);
	run_hubctl(&r, hub.sock, "-j", "stats", "-w", "-n", "2", "-d", "0.2", (char *)NULL);
	ck_assert_msg(r.status == 0 && count_of(r.out, "\n") == 2 &&
		      count_of(r.out, "\"calls_out_per_s\":") == 2, "exit %d: %s", r.status, r.out);
	run_free(&r);
	calls_done(caller);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The stats answer's total (a new reference). */
static json_object *
stats_total(void)
{
	json_object *a = hub_stats(&hub), *t = json_object_get(json_get(a, "total"));

	json_object_put(a);
	ck_assert_ptr_nonnull(t);
	return t;
}

/* A guest a reload removes takes nothing out of the totals: they count
 * since hubd started, so they never go down, and stats -w shows no burst
 * of calls that never happened while its entry goes. */
START_TEST(test_stats_total_keeps_removed)
{
	static const char *const keys[] = {
		"calls_in", "calls_out", "bytes_in", "bytes_out", "wakes", "deaths", "restarts",
	};
	struct run r = { .timeout_ms = 20000 };
	json_object *before, *after, *line;
	char *out = NULL, *s;
	pid_t pid;
	int status;

	hub_start_up(&hub, NULL, GUEST_ECHO COUNTER, "echo,counter");
	ck_assert(hub_wait_method(&hub, "echo.echo,counter.stream") == 0);
	/* echo stays, with many calls; counter goes, with a few */
	calls_done(calls_meanwhile(500));
	for (int i = 0; i < 3; i++) {
		hubctl_ok(&hub, &out, "call", "counter.stream", "10", "5", (char *)NULL);
		free(out);
	}
	before = stats_total();
	ck_assert_int_gt(json_u64(before, "calls_out", NULL, NULL), 10);
	/* the reload half a second into a watch of three seconds, no call
	 * made meanwhile */
	ck_assert_int_eq(hub_write_conf(&hub, NULL, GUEST_ECHO), 0);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		usleep(500000);
		execl(bin("hubctl"), "hubctl", "-s", hub.sock, "reload", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	run_hubctl(&r, hub.sock, "-j", "stats", "-w", "-n", "6", "-d", "0.5", (char *)NULL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reload: %d", status);
	ck_assert_msg(r.status == 0 && count_of(r.out, "\n") == 6, "exit %d: %s / %s", r.status,
		      r.out, r.err);
	/* gone within the watch: its entry was freed while it looked */
	ck_assert_str_eq(hub_peer_state(&hub, "counter"), "?");
	for (s = r.out; *s != '\0'; s = strchr(s, '\n') + 1) {
		ck_assert_ptr_nonnull(line = json_tokener_parse(s));
		ck_assert_msg(json_object_get_double(json_get(line, "calls_in_per_s")) == 0 &&
			      json_object_get_double(json_get(line, "calls_out_per_s")) == 0 &&
			      json_object_get_double(json_get(line, "bytes_out_per_s")) == 0,
			      "a burst that never happened: %s", r.out);
		json_object_put(line);
	}
	run_free(&r);
	after = stats_total();
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ck_assert_msg(json_u64(after, keys[i], NULL, NULL) >=
			      json_u64(before, keys[i], NULL, NULL), "%s went down: %s, before %s",
			      keys[i], json_object_to_json_string(after),
			      json_object_to_json_string(before));
	ck_assert_int_eq(json_u64(after, "calls_out", NULL, NULL),
			 json_u64(before, "calls_out", NULL, NULL));
	json_object_put(before);
	json_object_put(after);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* -- top on a terminal (a pseudo-terminal) ------------------------------ */

struct top_run {
	pid_t		pid;
	int		master, slave, err;
	struct termios	before;
	char		*out;
	size_t		len, cap;
};

/* top on a terminal of rows lines (0: the pseudo-terminal's own). */
static void
top_start_rows(struct top_run *t, unsigned short rows)
{
	struct winsize ws = { .ws_row = rows, .ws_col = 120 };
	int errp[2], fd;

	memset(t, 0, sizeof(*t));
	ck_assert_int_eq(openpty(&t->master, &t->slave, NULL, NULL, rows > 0 ? &ws : NULL), 0);
	ck_assert_int_eq(tcgetattr(t->slave, &t->before), 0);
	ck_assert_int_eq(pipe2(errp, O_CLOEXEC), 0);
	if ((t->pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = t->slave;
		if (setsid() < 0 || ioctl(fd, TIOCSCTTY, 0) != 0)
			_exit(120);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(errp[1], 2);
		execl(bin("hubctl"), "hubctl", "-s", hub.sock, "top", "-d", "0.2", (char *)NULL);
		_exit(127);
	}
	close(errp[1]);
	t->err = errp[0];
	t->out = calloc(1, 1);
}

static void
top_start(struct top_run *t)
{
	top_start_rows(t, 0);
}

/* Reads what top drew for up to ms, or until it has drawn n frames. */
static void
top_read(struct top_run *t, int frames, int ms)
{
	uint64_t end = hp_now_ns() + (uint64_t)ms * HP_NS_PER_MS;
	struct pollfd p = { t->master, POLLIN, 0 };

	while (hp_now_ns() < end && count_of(t->out, "hub up ") < frames) {
		if (poll(&p, 1, 100) > 0 && collect(t->master, &t->out, &t->len, &t->cap) <= 0)
			break;	/* EIO: it is gone */
	}
}

/* Its exit status (128 + signal; -1 still running after 10 s, then
 * killed), with its stderr in *err; the terminal's settings as they were
 * before it started, or the test fails. */
static int
top_end(struct top_run *t, char **err)
{
	uint64_t end = hp_now_ns() + 10 * HP_NS_PER_S;
	size_t elen = 0, ecap = 0;
	struct termios after;
	int status = -1, rc = -1;

	while (hp_now_ns() < end) {
		top_read(t, INT32_MAX, 50);	/* what it writes meanwhile */
		if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
	}
	if (rc == -1) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, &status, 0);
	}
	*err = calloc(1, 1);
	while (collect(t->err, err, &elen, &ecap) > 0)
		continue;
	ck_assert_int_eq(tcgetattr(t->slave, &after), 0);
	ck_assert_msg(after.c_lflag == t->before.c_lflag && after.c_iflag == t->before.c_iflag &&
		      after.c_oflag == t->before.c_oflag &&
		      memcmp(after.c_cc, t->before.c_cc, sizeof(after.c_cc)) == 0,
		      "terminal left changed: lflag %#x, was %#x", (unsigned)after.c_lflag,
		      (unsigned)t->before.c_lflag);
	close(t->master);
	close(t->slave);
	close(t->err);
	free(t->out);
	return rc;
}

/* While top runs the terminal is its own (no echo, no line editing), with
 * the screen redrawn in place. */
static void
top_running(struct top_run *t)
{
	struct termios now;

	top_read(t, 2, 10000);
	ck_assert_msg(count_of(t->out, "hub up ") >= 2, "%s", t->out);
	ck_assert_ptr_nonnull(strstr(t->out, "\033[H"));
	ck_assert_ptr_nonnull(strstr(t->out, "echo "));
	ck_assert_int_eq(tcgetattr(t->slave, &now), 0);
	ck_assert((now.c_lflag & (ICANON | ECHO)) == 0);
}

START_TEST(test_top_terminal)
{
	struct top_run t;
	char *err;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	/* q, without Enter */
	top_start(&t);
	top_running(&t);
	ck_assert_int_eq(write(t.master, "q", 1), 1);
	ck_assert_int_eq(top_end(&t, &err), 0);
	free(err);
	/* Ctrl-C, through the terminal */
	top_start(&t);
	top_running(&t);
	ck_assert_int_eq(write(t.master, "\003", 1), 1);
	ck_assert_int_eq(top_end(&t, &err), 0);
	free(err);
	/* SIGTERM ends it as it would, the terminal restored */
	top_start(&t);
	top_running(&t);
	kill(t.pid, SIGTERM);
	ck_assert_int_eq(top_end(&t, &err), 128 + SIGTERM);
	free(err);
	/* hubd going away: a message, exit 2 */
	top_start(&t);
	top_running(&t);
	kill(hub.pid, SIGKILL);
	ck_assert_int_eq(top_end(&t, &err), 2);
	ck_assert_msg(strstr(err, "hubd") != NULL, "%s", err);
	free(err);
	hub_stop(&hub);		/* reaps it */
}
END_TEST

/* More guests than a terminal has lines: each frame ends a line short of
 * its bottom, so that its last newline scrolls nothing (the hub's line
 * on top went off the screen), and says how many it left out. */
START_TEST(test_top_short_terminal)
{
	const char *frame, *end;
	struct top_run t;
	char guests[2048], *err;
	size_t len = 0, lines = 0;

	for (int i = 0; i < 12; i++)
		len += (size_t)snprintf(guests + len, sizeof(guests) - len, "[guest g%02d]\n"
					"exec = @/tests/guests/lifeguest\nargs = --mode=idle\n", i);
	hub_start_up(&hub, NULL, guests, "g00,g11");
	top_start_rows(&t, 10);
	top_read(&t, 3, 10000);
	/* the second frame, whole: from its home to its clear to the end */
	ck_assert_msg((frame = strstr(t.out, "\033[Hhub up ")) != NULL &&
		      (frame = strstr(frame + 1, "\033[Hhub up ")) != NULL &&
		      (end = strstr(frame, "\033[J")) != NULL, "%s", t.out);
	for (const char *c = frame; c < end; c++)
		lines += *c == '\n';
	ck_assert_msg(lines == 9, "%zu lines on a terminal of 10: %.*s", lines, (int)(end - frame),
		      frame);
	ck_assert_msg(strstr(frame, "(6 more: a taller terminal shows them)") != NULL, "%.*s",
		      (int)(end - frame), frame);
	ck_assert_int_eq(write(t.master, "q", 1), 1);
	ck_assert_int_eq(top_end(&t, &err), 0);
	free(err);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* peers NAME: one guest in detail; an unknown one named in the error. */
START_TEST(test_peers_name)
{
	struct run r = { 0 };
	json_object *o;

	hub_start_up(&hub, NULL, GUEST_ECHO COUNTER, "echo,counter");
	run_hubctl(&r, hub.sock, "peers", "counter", (char *)NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	for (const char *const *k = (const char *const[]){ "name: counter\n", "peer id: ",
	     "state: up\n", "pid: ", "epoch: 1\n", "uptime: ", "restarts: 0\n", "rings: ",
	     "slots: ", "channels: ", "/guests/counter\n", "deaths: none\n", NULL }; *k; k++)
		ck_assert_msg(strstr(r.out, *k) != NULL, "no '%s' in: %s", *k, r.out);
	ck_assert_ptr_null(strstr(r.out, "echo"));
	run_free(&r);
	run_hubctl(&r, hub.sock, "-j", "peers", "echo", (char *)NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	o = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_object_get_string(json_get(o, "name")), "echo");
	ck_assert_int_eq(json_object_get_int(json_get(o, "pid")), hub_peer_int(&hub, "echo", "pid"));
	json_object_put(o);
	run_free(&r);
	run_hubctl(&r, hub.sock, "peers", "nosuch", (char *)NULL);
	ck_assert_msg(r.status == 1 && strcmp(r.err, "hubctl: no such guest: nosuch\n") == 0 &&
		      *r.out == '\0',
		      "exit %d: %s", r.status, r.err);
	run_free(&r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The digits after the point of the number after key in s; -1 if none. */
static int
decimals_of(const char *s, const char *key)
{
	const char *p = strstr(s, key);
	int n = 0;

	if (p == NULL)
		return -1;
	p += strlen(key);
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != '.')
		return 0;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	return n;
}

/* Waits (30 s) until hubd has seen a heartbeat of guest name's (its
 * heartbeat_age_ms is a number, not null); asserts it. */
static void
wait_heartbeat_seen(const char *name)
{
	json_object *p = NULL;

	for (double end = now_s() + 30; now_s() < end; sleep_ms(50)) {
		json_object_put(p);
		p = hub_peer(&hub, name);
		if (json_get(p, "heartbeat_age_ms") != NULL)
			break;
	}
	ck_assert_msg(json_get(p, "heartbeat_age_ms") != NULL, "no heartbeat of %s seen: %s",
		      name, json_object_to_json_string(p));
	json_object_put(p);
}

/* JSON as people and scripts like it: slashes as they are, durations to
 * the millisecond (heartbeat ages to the microsecond), from hubd (a raw
 * client) and from hubctl -j alike. */
START_TEST(test_json_plain)
{
	struct run r = { 0 };
	char line[65536], *raw = line;
	int fd;
	size_t len = 0;
	ssize_t n;

	hub_start_up(&hub, NULL, GUEST_ECHO, "echo");
	wait_heartbeat_seen("echo");
	fd = hub_client(&hub, 10);
	ck_assert_int_eq(write(fd, "{\"cmd\":\"status\"}\n{\"cmd\":\"peers\"}\n", 33), 33);
	while (count_of(line, "\n") < 2 && (n = read(fd, line + len, sizeof(line) - 1 - len)) > 0) {
		len += (size_t)n;
		line[len] = '\0';
	}
	close(fd);
	run_hubctl(&r, hub.sock, "-j", "status", (char *)NULL);
	ck_assert_int_eq(r.status, 0);
	for (int i = 0; i < 2; i++, raw = r.out) {
		ck_assert_msg(strstr(raw, hub.sock) != NULL && strstr(raw, "\\/") == NULL, "%s",
			      raw);
		ck_assert_msg(decimals_of(raw, "\"uptime_s\":") >= 1 &&
			      decimals_of(raw, "\"uptime_s\":") <= 3, "%s", raw);
	}
	ck_assert_msg(decimals_of(line, "\"heartbeat_age_ms\":") >= 1 &&
		      decimals_of(line, "\"heartbeat_age_ms\":") <= 3, "%s", line);
	run_free(&r);
	run_hubctl(&r, hub.sock, "-j", "peers", (char *)NULL);
	ck_assert_msg(decimals_of(r.out, "\"uptime_s\":") <= 3 &&
		      decimals_of(r.out, "\"heartbeat_age_ms\":") <= 3, "%s", r.out);
	run_free(&r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A call's arguments refused: the method's signature in the error, from
 * hubd (so JSON clients have it too). */
START_TEST(test_call_signature_errors)
{
	static const char *const cases[][4] = {
		{ "echo.echo", NULL, NULL, "echo.echo takes (str) -> str: argument 1 missing" },
		{ "echo.echo", "a", "b", "echo.echo takes (str) -> str: 2 arguments given, 1 taken" },
		{ "counter.count", "abc", NULL,
		  "counter.count takes (u64, chan<u64>) -> u64: argument 1 is not a u64" },
		{ "counter.count", "-1", NULL, "argument 1 is not a u64" },
	};
	struct run r = { 0 };

	hub_start_up(&hub, NULL, GUEST_ECHO COUNTER, "echo,counter");
	ck_assert(hub_wait_method(&hub, "echo.echo,counter.count") == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_hubctl(&r, hub.sock, "call", cases[i][0], cases[i][1], cases[i][2],
			   (char *)NULL);
		ck_assert_msg(r.status == 1 && strstr(r.err, cases[i][3]) != NULL &&
			      strncmp(r.err, "hubctl: ", 8) == 0, "exit %d: %s", r.status, r.err);
		run_free(&r);
		run_hubctl(&r, hub.sock, "-j", "call", cases[i][0], cases[i][1], cases[i][2],
			   (char *)NULL);
		ck_assert_msg(r.status == 1 && strstr(r.out, cases[i][3]) != NULL, "exit %d: %s",
			      r.status, r.out);
		run_free(&r);
	}
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The views' options refused before anything is asked: exit 2, usage. */
START_TEST(test_view_bad_options)
{
	static const char *const cases[][5] = {
		{ "top", "-d", "0", NULL, "-d takes seconds from 0.01 to 86400" },
		{ "top", "-d", "-1", NULL, "not '-1'" },
		{ "top", "-d", "abc", NULL, "not 'abc'" },
		{ "top", "-d", "nan", NULL, "not 'nan'" },
		/* strtod's other syntax: plain decimal seconds only */
		{ "top", "-d", "1e300", NULL, "not '1e300'" },
		{ "top", "-d", "1e0", NULL, "not '1e0'" },
		{ "top", "-d", "0x10", NULL, "not '0x10'" },
		{ "top", "-d", "inf", NULL, "not 'inf'" },
		{ "top", "-d", " 1", NULL, "not ' 1'" },
		{ "top", "-d", "+1", NULL, "not '+1'" },
		{ "top", "-d", "1.", NULL, "not '1.'" },
		{ "top", "-d", ".", NULL, "not '.'" },
		{ "top", "-d", "1,5", NULL, "not '1,5'" },
		/* out of range */
		{ "top", "-d", "0.001", NULL, "not '0.001'" },
		{ "top", "-d", "86400.5", NULL, "not '86400.5'" },
		{ "stats", "-w", "-d", "0x10", "-d takes seconds from 0.01 to 86400" },
		{ "stats", "-d", "1e300", NULL, "not '1e300'" },
		{ "top", "-n", "0", NULL, "-n takes a count from 1" },
		{ "top", "-n", "1x", NULL, "not '1x'" },
		{ "top", "-d", NULL, NULL, "-d takes a value" },
		{ "top", "-w", NULL, NULL, "unknown option '-w'" },
		{ "top", "extra", NULL, NULL, "hubctl: top takes no arguments\nusage: hubctl top" },
		{ "stats", "-w", "-n", "0", "-n takes a count from 1" },
		{ "stats", "-wd", "1", NULL, "unknown option '-wd'" },
		/* how many it takes said, not only the usage */
		{ "peers", "a", "b", NULL,
		  "hubctl: peers takes at most 1 argument, not 2\nusage: hubctl peers [NAME]" },
		{ "logs", NULL, NULL, NULL, "hubctl: logs takes 1 argument, not 0\n" },
		/* hubctl's own options, said as hubctl (getopt said argv[0]) */
		{ "-x", "peers", NULL, NULL, "hubctl: unknown option -x\n" },
		{ "--bogus", "peers", NULL, NULL, "hubctl: unknown option --bogus\n" },
	};
	static const char *const good[] = { "2", "0.5", ".25", "0.01", "86400", "007.50" };
	struct run r = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* no hub there: refused before connecting */
		run_hubctl(&r, "/nonexistent", cases[i][0], cases[i][1], cases[i][2], cases[i][3],
			   (char *)NULL);
		ck_assert_msg(r.status == 2 && strstr(r.err, cases[i][4]) != NULL &&
			      strstr(r.err, "usage: hubctl ") != NULL, "%s %s: exit %d: %s",
			      cases[i][0], cases[i][1], r.status, r.err);
		run_free(&r);
	}
	/* good options get as far as connecting */
	run_hubctl(&r, "/nonexistent", "top", "-d0.5", "-n", "3", (char *)NULL);
	ck_assert_msg(r.status == 2 && strstr(r.err, "cannot reach hubd") != NULL, "%s", r.err);
	run_free(&r);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		run_hubctl(&r, "/nonexistent", "stats", "-d", good[i], (char *)NULL);
		ck_assert_msg(r.status == 2 && strstr(r.err, "cannot reach hubd") != NULL,
			      "-d %s: %s", good[i], r.err);
		run_free(&r);
	}
}
END_TEST

/* Defect: a call whose callee died under it failed with "guest prober
 * died": not which of a caller's calls, nor how it died (a crash, a hang,
 * an exit, a kill), which only hubd's log said. */
START_TEST(test_call_error_names_the_death)
{
	const char *want = "guest prober died serving prober.wait: killed by signal 9 (SIGKILL)";
	struct reader *r = calloc(1, sizeof(*r));
	int pid;

	hub_start_up(&hub, NULL, PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.wait") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	r->fd = hub_client(&hub, 30);
	send_line(r->fd, "{\"cmd\":\"call\",\"method\":\"prober.wait\"}");
	ck_assert(hub_wait_in_flight(&hub, "prober.wait") == 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(read_line(r), 1);
	ck_assert_msg(strstr(r->line, want) != NULL, "answer: %s", r->line);
	close(r->fd);
	free(r);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_control(void);
Suite *
suite_control(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("control");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_inspect_fifo);
	tcase_add_test(tc, test_refusals_exit_1);
	tcase_add_test(tc, test_other_user_gets_no_domains);
	tcase_add_test(tc, test_request_too_large);
	tcase_add_test(tc, test_large_answer);
	tcase_add_test(tc, test_nul_in_arguments);
	tcase_add_test(tc, test_count_zero_leaks_nothing);
	tcase_add_test(tc, test_disconnect_mid_stream);
	tcase_add_test(tc, test_reader_gone_ends_hubctl_quietly);
	tcase_add_test(tc, test_stream_million_into_file);
	tcase_add_test(tc, test_stream_slow_reader);
	tcase_add_test(tc, test_stream_reader_stops_dropped);
	tcase_add_test(tc, test_other_user_cannot_lock_out_root);
	tcase_add_test(tc, test_idle_clients_closed);
	tcase_add_test(tc, test_gone_while_unread);
	tcase_add_test(tc, test_fds_with_pipelined_answers);
	tcase_add_test(tc, test_errors_are_utf8);
	tcase_add_test(tc, test_last_line_without_newline);
	tcase_add_test(tc, test_out_of_fds_no_spin);
	tcase_add_test(tc, test_out_of_fds_operator_served);
	tcase_add_test(tc, test_top_not_a_tty);
	tcase_add_test(tc, test_stats_watch);
	tcase_add_test(tc, test_stats_total_keeps_removed);
	tcase_add_test(tc, test_top_terminal);
	tcase_add_test(tc, test_top_short_terminal);
	tcase_add_test(tc, test_peers_name);
	tcase_add_test(tc, test_json_plain);
	tcase_add_test(tc, test_call_signature_errors);
	tcase_add_test(tc, test_view_bad_options);
	suite_add_tcase(s, tc);
	/* hubctl's calls: streams in and out, errors, the protocol's version */
	tc = tcase_create("calls");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stream_items_flushed);
	tcase_add_test(tc, test_call_errors_named_once);
	tcase_add_test(tc, test_status_after_reload);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_sink_from_stdin);
	tcase_add_test(tc, test_sink_feed_broken);
	tcase_add_test(tc, test_call_bytes_file);
	tcase_add_test(tc, test_call_error_names_the_death);
	tcase_add_test(tc, test_gone_clients_calls_bounded);
	suite_add_tcase(s, tc);
	return s;
}
