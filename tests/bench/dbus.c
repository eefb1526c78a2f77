/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* dbus: the D-Bus baseline for make bench, with sd-bus (libsystemd).
 *   dbus ADDRESS N	fork a server onto the bus at ADDRESS (it owns
 *			hub.bench.Echo and serves Echo(t) -> t), then make N
 *			synchronous Echo calls after a warm-up, each with the
 *			call's counter, each reply checked and each call timed:
 *			"median_ns=.. p99_ns=.. n=.."
 *   dbus broker PATH	run a bare dbus-broker listening on the UNIX socket
 *			PATH, this process its controller (what
 *			dbus-broker-launch does, without systemd): prints
 *			"broker_pid=.." once listening, then serves the
 *			controller connection until the broker or we die.
 * Both calls go through the bus daemon: client -> daemon -> server and
 * back, the way D-Bus peers talk. Exits non-zero on any wrong reply. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "proto/clock.h"

#define NAME	"hub.bench.Echo"
#define PATH	"/hub/bench"
#define IFACE	"hub.bench.Echo"

static sd_bus *
connect_bus(const char *address)
{
	sd_bus *b;
	int r;

	if ((r = sd_bus_new(&b)) < 0 ||
	    (r = sd_bus_set_address(b, address)) < 0 ||
	    (r = sd_bus_set_bus_client(b, 1)) < 0 ||
	    (r = sd_bus_start(b)) < 0)
		errx(1, "connect %s: %s", address, strerror(-r));
	return b;
}

static int
echo(sd_bus_message *m, void *ctx, sd_bus_error *e)
{
	uint64_t v;
	int r;

	(void)ctx;
	(void)e;
	if ((r = sd_bus_message_read(m, "t", &v)) < 0)
		return r;
	return sd_bus_reply_method_return(m, "t", v);
}

static const sd_bus_vtable vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("Echo", "t", "t", echo, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END
};

/* The server: owns NAME, then says so on READY; serves until the bus goes. */
static void
serve(const char *address, int ready)
{
	sd_bus *b = connect_bus(address);
	int r;

	if ((r = sd_bus_add_object_vtable(b, NULL, PATH, IFACE, vtable, NULL)) < 0 ||
	    (r = sd_bus_request_name(b, NAME, 0)) < 0)
		errx(1, "server: %s", strerror(-r));
	if (write(ready, "R", 1) != 1)
		_exit(1);
	close(ready);
	for (;;) {
		if ((r = sd_bus_process(b, NULL)) < 0)
			_exit(r == -ECONNRESET || r == -ENOTCONN ? 0 : 1);
		if (r == 0 && sd_bus_wait(b, UINT64_MAX) < 0)
			_exit(1);
	}
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int
bench(const char *address, uint64_t n)
{
	uint64_t warm = n / 10 + 10, *t = calloc(n, sizeof(*t));
	struct pollfd pfd;
	int p[2], status, bad = 0;
	char c;
	pid_t pid;
	sd_bus *b;

	if (t == NULL || pipe(p) != 0)
		err(1, "setup");
	if ((pid = fork()) < 0)
		err(1, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		serve(address, p[1]);
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	if (poll(&pfd, 1, 5000) != 1 || read(p[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		errx(1, "server not ready in 5 s");
	}
	close(p[0]);
	b = connect_bus(address);
	for (uint64_t i = 0; i < warm + n && !bad; i++) {
		sd_bus_error e = SD_BUS_ERROR_NULL;
		sd_bus_message *reply = NULL;
		uint64_t t0 = hp_now_ns(), v = ~i;
		int r;

		r = sd_bus_call_method(b, NAME, PATH, IFACE, "Echo", &e, &reply, "t", i);
		if (r >= 0)
			r = sd_bus_message_read(reply, "t", &v);
		if (i >= warm)
			t[i - warm] = hp_now_ns() - t0;
		if (r < 0 || v != i) {
			warnx("call %llu: %s, reply %llu", (unsigned long long)i,
			      r < 0 ? (e.message ? e.message : strerror(-r)) : "wrong",
			      (unsigned long long)v);
			bad = 1;
		}
		sd_bus_error_free(&e);
		sd_bus_message_unref(reply);
	}
	sd_bus_flush_close_unref(b);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (bad)
		return 1;
	qsort(t, n, sizeof(*t), cmp);
	printf("median_ns=%llu p99_ns=%llu n=%llu\n", (unsigned long long)t[n / 2],
	       (unsigned long long)t[n * 99 / 100], (unsigned long long)n);
	free(t);
	return 0;
}

/* dbus-broker's policy for AddListener, everything allowed: connect,
 * own any name, send and receive anything (a(btssssuutt): allow,
 * priority, name, path, interface, member, type, broadcast, fds from..to) */
#define BATCH	"bta(btbs)a(btssssuutt)a(btssssuutt)"
#define POLICY	"(a(u(" BATCH "))a(buu(" BATCH "))a(ss)bs)"
#define ALLOW	1, (uint64_t)1, "", "", "", "", 0, 0, (uint64_t)0, UINT64_MAX

static int
broker(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sd_bus_error e = SD_BUS_ERROR_NULL;
	int cp[2], l, r;
	char fd[16];
	sd_bus *b;
	pid_t pid;

	l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l < 0 || strlen(path) >= sizeof(sa.sun_path))
		errx(1, "listener %s", path);
	strcpy(sa.sun_path, path);
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 64) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, cp) != 0)
		err(1, "%s", path);
	if ((pid = fork()) == 0) {	/* the broker: cp[1] its controller */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		fcntl(cp[1], F_SETFD, 0);
		snprintf(fd, sizeof(fd), "%d", cp[1]);
		execlp("dbus-broker", "dbus-broker", "--controller", fd, "--machine-id",
		       "0123456789abcdef0123456789abcdef", (char *)NULL);
		err(127, "dbus-broker");
	}
	close(cp[1]);
	if ((r = sd_bus_new(&b)) < 0 || (r = sd_bus_set_fd(b, cp[0], cp[0])) < 0 ||
	    (r = sd_bus_start(b)) < 0 ||
	    (r = sd_bus_call_method(b, NULL, "/org/bus1/DBus/Broker", "org.bus1.DBus.Broker",
				    "AddListener", &e, NULL, "ohv", "/org/bus1/DBus/Listener/0",
				    l, POLICY, 1, (uint32_t)-1, 1, (uint64_t)1, 1, 1, (uint64_t)1,
				    1, "", 1, ALLOW, 1, ALLOW, 0, 0, 0, "")) < 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		errx(1, "dbus-broker: %s", e.message ? e.message : strerror(-r));
	}
	printf("broker_pid=%d\n", (int)pid);
	fflush(stdout);
	while ((r = sd_bus_process(b, NULL)) >= 0)	/* until the broker goes */
		if (r == 0 && sd_bus_wait(b, UINT64_MAX) < 0)
			break;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return 0;
}

int
main(int argc, char *argv[])
{
	uint64_t n;

	if (argc == 3 && strcmp(argv[1], "broker") == 0)
		return broker(argv[2]);
	if (argc != 3 || (n = strtoull(argv[2], NULL, 10)) == 0)
		errx(2, "usage: dbus ADDRESS N | dbus broker SOCKET");
	return bench(argv[1], n);
}
