/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/harness.h"
#include "tests/e2e/natsd.h"

static const char *
server_path(void)
{
	return access("/usr/sbin/nats-server", X_OK) == 0 ? "/usr/sbin/nats-server" : "nats-server";
}

/* A loopback port nobody listens on now. */
static int
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int
listening(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	if (fd < 0)
		return 0;
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static void
spawn(struct natsd *n)
{
	char port[16], pidfile[256], cluster[64], log[256];

	snprintf(port, sizeof(port), "%d", n->port);
	/* .lock: the harness's teardown kills the pid in it */
	snprintf(pidfile, sizeof(pidfile), "%s", harness_path("natsd-"));
	snprintf(pidfile + strlen(pidfile), sizeof(pidfile) - strlen(pidfile), "%d.lock", n->port);
	snprintf(log, sizeof(log), "%s", harness_path("natsd-"));
	snprintf(log + strlen(log), sizeof(log) - strlen(log), "%d.log", n->port);
	snprintf(cluster, sizeof(cluster), "nats://127.0.0.1:%d", n->cluster);
	if ((n->pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (n->conf[0] != '\0')
			execl(server_path(), "nats-server", "-c", n->conf, "-a", "127.0.0.1",
			      "-p", port, "-P", pidfile, "-l", log, (char *)NULL);
		else if (n->cert[0] != '\0')
			execl(server_path(), "nats-server", "-a", "127.0.0.1", "-p", port,
			      "-P", pidfile, "-l", log, "--tls", "--tlscert", n->cert,
			      "--tlskey", n->key, (char *)NULL);
		else if (n->user[0] != '\0')
			execl(server_path(), "nats-server", "-a", "127.0.0.1", "-p", port,
			      "-P", pidfile, "-l", log, "--user", n->user, "--pass", n->password,
			      (char *)NULL);
		else if (n->cluster != 0)
			execl(server_path(), "nats-server", "-a", "127.0.0.1", "-p", port,
			      "-P", pidfile, "-l", log, "--cluster_name", "hubtest",
			      "--cluster", cluster, "--routes", n->routes, (char *)NULL);
		else
			execl(server_path(), "nats-server", "-a", "127.0.0.1", "-p", port,
			      "-P", pidfile, "-l", log, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(n->pid, 0);
	for (int i = 0; i < 200 && !listening(n->port); i++) {
		ck_assert_msg(waitpid(n->pid, NULL, WNOHANG) == 0,
			      "nats-server exited at once: is it installed (make deps)?");
		sleep_ms(25);
	}
	ck_assert_msg(listening(n->port), "nats-server is not listening on %d", n->port);
}

void
natsd_start(struct natsd *n)
{
	memset(n, 0, sizeof(*n));
	n->port = free_port();
	snprintf(n->url, sizeof(n->url), "nats://127.0.0.1:%d", n->port);
	spawn(n);
}

void
natsd_start_auth(struct natsd *n, const char *user, const char *password)
{
	memset(n, 0, sizeof(*n));
	n->port = free_port();
	snprintf(n->url, sizeof(n->url), "nats://127.0.0.1:%d", n->port);
	snprintf(n->user, sizeof(n->user), "%s", user);
	snprintf(n->password, sizeof(n->password), "%s", password);
	spawn(n);
}

void
natsd_start_conf(struct natsd *n, const char *conf_text)
{
	FILE *f;

	memset(n, 0, sizeof(*n));
	n->port = free_port();
	snprintf(n->url, sizeof(n->url), "nats://127.0.0.1:%d", n->port);
	snprintf(n->conf, sizeof(n->conf), "%s", harness_path("natsd.conf"));
	ck_assert_ptr_nonnull(f = fopen(n->conf, "w"));
	fputs(conf_text, f);
	ck_assert_int_eq(fclose(f), 0);
	spawn(n);
}

void
natsd_start_tls(struct natsd *n)
{
	char cmd[1024];

	memset(n, 0, sizeof(*n));
	n->port = free_port();
	snprintf(n->url, sizeof(n->url), "tls://127.0.0.1:%d", n->port);
	snprintf(n->cert, sizeof(n->cert), "%s", harness_path("natsd.crt"));
	snprintf(n->key, sizeof(n->key), "%s", harness_path("natsd.key"));
	snprintf(cmd, sizeof(cmd), "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
		 "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
		 "-keyout %s -out %s 2>/dev/null", n->key, n->cert);
	ck_assert_msg(system(cmd) == 0, "openssl could not make a certificate (make deps)");
	/* the guests run as users of their own: they read the certificate */
	ck_assert_int_eq(chmod(n->cert, 0644), 0);
	spawn(n);
}

void
natsd_cluster(struct natsd *n, int count)
{
	for (int i = 0; i < count; i++) {
		memset(&n[i], 0, sizeof(n[i]));
		n[i].port = free_port();
		n[i].cluster = free_port();
		snprintf(n[i].url, sizeof(n[i].url), "nats://127.0.0.1:%d", n[i].port);
	}
	for (int i = 0; i < count; i++) {
		for (int j = 0; j < count; j++) {
			size_t len = strlen(n[i].routes);

			if (j != i)
				snprintf(n[i].routes + len, sizeof(n[i].routes) - len, "%snats://127.0.0.1:%d",
					 len ? "," : "", n[j].cluster);
		}
	}
	for (int i = 0; i < count; i++)
		spawn(&n[i]);
}

void
natsd_restart(struct natsd *n)
{
	spawn(n);
}

void
natsd_kill(struct natsd *n)
{
	if (n->pid > 0) {
		kill(n->pid, SIGKILL);
		waitpid(n->pid, NULL, 0);
	}
	n->pid = 0;
}
