/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The spawn ticket (r[shm.spawn.ticket], r[shm.spawn.args]): hubd starts a
 * guest with --hub-path, --peer-id and --doorbell-fd; a guest started by
 * hand has --hub-ticket and fetches the rest from hubd. Each is accepted
 * as "--name=value" or "--name value"; everything else is the plugin's,
 * and nothing after "--" is looked at. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/fdpass.h"
#include "proto/layout.h"
#include "proto/ticket.h"

#define FETCH_TIMEOUT_S	30	/* hubd answers at once, or never */

#define SET_WHY(s)	do { if (why != NULL) *why = (s); } while (0)

/* Strict decimal: digits only, no sign, no leading zero, at most max.
 * -1 when s is not such a number. */
static long
parse_decimal(const char *s, long max)
{
	long v = 0;

	if (*s == '\0' || (s[0] == '0' && s[1] != '\0'))
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -1;
	}
	return v;
}

/* If argv[*i] is option name, points *val at its value (taking the next
 * argument for the "--name value" form) and returns 1; 0 if it is another
 * argument; -1 if the value is missing. */
static int
match(int argc, char *const argv[], int *i, const char *name,
      const char **val)
{
	const char *a = argv[*i];
	size_t len = strlen(name);

	if (strncmp(a, name, len) != 0)
		return 0;
	if (a[len] == '=') {
		*val = a + len + 1;
		return 1;
	}
	if (a[len] != '\0')
		return 0;	/* --hub-pathX: not ours */
	if (*i + 1 >= argc || argv[*i + 1] == NULL)
		return -1;
	*val = argv[++*i];
	return 1;
}

/* r[shm.spawn.args] r[shm.spawn.fd-inheritance]; step 1 of
 * r[shm.spawn.guest-init]. */
int
hp_ticket_parse(int argc, char *const argv[], struct hp_ticket *t,
		const char **why)
{
	const char *path = NULL, *pool = NULL, *peer = NULL, *fd = NULL, *hand = NULL, *v;
	long peer_id, dfd;
	int i, m;

	for (i = 1; i < argc && argv[i] != NULL; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if ((m = match(argc, argv, &i, "--hub-ticket", &v)) != 0) {
			if (m < 0 || strrchr(v, ':') == NULL) {
				SET_WHY("--hub-ticket needs PATH:SECRET");
				return -EINVAL;
			}
			if (hand != NULL) {
				SET_WHY("--hub-ticket is given twice");
				return -EINVAL;
			}
			hand = v;
		} else if ((m = match(argc, argv, &i, "--hub-path", &v)) != 0) {
			if (m < 0) {
				SET_WHY("--hub-path needs a value");
				return -EINVAL;
			}
			if (path != NULL) {
				SET_WHY("--hub-path is given twice");
				return -EINVAL;
			}
			path = v;
		} else if ((m = match(argc, argv, &i, "--hub-pool", &v)) != 0) {
			/* ours: the shared pool's file, when the host lets
			 * this guest use one (doc/protocol.md) */
			if (m < 0 || *v == '\0') {
				SET_WHY("--hub-pool needs a value");
				return -EINVAL;
			}
			if (pool != NULL) {
				SET_WHY("--hub-pool is given twice");
				return -EINVAL;
			}
			pool = v;
		} else if ((m = match(argc, argv, &i, "--peer-id", &v)) != 0) {
			if (m < 0) {
				SET_WHY("--peer-id needs a value");
				return -EINVAL;
			}
			if (peer != NULL) {
				SET_WHY("--peer-id is given twice");
				return -EINVAL;
			}
			peer = v;
		} else if ((m = match(argc, argv, &i, "--doorbell-fd", &v)) != 0) {
			if (m < 0) {
				SET_WHY("--doorbell-fd needs a value");
				return -EINVAL;
			}
			if (fd != NULL) {
				SET_WHY("--doorbell-fd is given twice");
				return -EINVAL;
			}
			fd = v;
		}
	}

	if (hand != NULL) {
		if (path != NULL || pool != NULL || peer != NULL || fd != NULL) {
			SET_WHY("--hub-ticket goes without --hub-path, --hub-pool, "
			    "--peer-id and --doorbell-fd");
			return -EINVAL;
		}
		memset(t, 0, sizeof(*t));
		for (i = 0; i < HP_TICKET_FDS; i++)
			t->fds[i] = -1;
		t->hand = hand;
		t->doorbell_fd = -1;
		return 0;
	}
	if (path == NULL) {
		SET_WHY("no --hub-path: this program is a hub guest and must "
		    "be started by hubd");
		return -EINVAL;
	}
	if (peer == NULL) {
		SET_WHY("no --peer-id: this program is a hub guest and must "
		    "be started by hubd");
		return -EINVAL;
	}
	if (fd == NULL) {
		SET_WHY("no --doorbell-fd: this program is a hub guest and "
		    "must be started by hubd");
		return -EINVAL;
	}
	if (*path == '\0') {
		SET_WHY("--hub-path is empty");
		return -EINVAL;
	}
	/* r[shm.topology.peer-id] r[shm.topology.max-guests] */
	peer_id = parse_decimal(peer, HP_MAX_GUESTS);
	if (peer_id < 1) {
		SET_WHY("--peer-id must be a decimal number from 1 to 255");
		return -EINVAL;
	}
	dfd = parse_decimal(fd, INT_MAX);
	if (dfd < 0) {
		SET_WHY("--doorbell-fd must be a decimal file descriptor "
		    "number");
		return -EINVAL;
	}
	/* r[shm.spawn.fd-inheritance]: hubd left it open across exec. */
	if (fcntl((int)dfd, F_GETFD) < 0) {
		SET_WHY("--doorbell-fd names a file descriptor that is not "
		    "open");
		return -EINVAL;
	}
	memset(t, 0, sizeof(*t));
	for (i = 0; i < HP_TICKET_FDS; i++)
		t->fds[i] = -1;
	t->hub_path = path;
	t->pool_path = pool;
	t->peer_id = (uint32_t)peer_id;
	t->doorbell_fd = (int)dfd;
	return 0;
}

void
hp_ticket_close(struct hp_ticket *t)
{
	for (int i = 0; i < HP_TICKET_FDS; i++) {
		if (t->fds[i] >= 0)
			close(t->fds[i]);
		t->fds[i] = -1;
	}
}

/* A guest started by hand: the fds a spawned one inherits, from hubd's
 * socket (hubd's manual.c), and the spawn ticket made of them. */
int
hp_ticket_fetch(struct hp_ticket *t, const char **why)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { FETCH_TIMEOUT_S, 0 };
	const char *colon = strrchr(t->hand, ':'), *secret = colon + 1;
	size_t plen = (size_t)(colon - t->hand);
	char reply[64], want[64];
	uint32_t n = 0;
	unsigned id;
	ssize_t r;
	int s, rc = -EINVAL;

	if (strlen(secret) != HP_TICKET_SECRET_LEN) {
		SET_WHY("--hub-ticket: the secret is not the one hubctl ticket prints");
		return -EINVAL;
	}
	if (plen == 0 || plen >= sizeof(sun.sun_path)) {
		SET_WHY("--hub-ticket: the path is empty or too long");
		return -EINVAL;
	}
	memcpy(sun.sun_path, t->hand, plen);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		SET_WHY("--hub-ticket: no socket");
		return -errno;
	}
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		rc = -errno;
		SET_WHY("--hub-ticket: cannot connect to hubd's socket (used "
		    "already? 'hubctl ticket NAME' gives a new one)");
		goto out;
	}
	if (write(s, secret, HP_TICKET_SECRET_LEN) != HP_TICKET_SECRET_LEN) {
		rc = -EIO;
		SET_WHY("--hub-ticket: cannot send the secret");
		goto out;
	}
	r = hp_fdpass_recv(s, reply, sizeof(reply) - 1, t->fds, HP_TICKET_FDS, &n);
	if (r <= 0) {
		rc = r < 0 ? (int)r : -EACCES;
		SET_WHY("--hub-ticket: hubd refused it (a wrong or old secret, "
		    "or not the guest's user)");
		goto out;
	}
	reply[r] = '\0';
	/* r[shm.spawn.fd-inheritance], by hand: its doorbell, its domain
	 * and maybe its pool, as a spawned guest inherits them */
	if (sscanf(reply, HP_TICKET_REPLY, &id) != 1 || id < 1 || id > HP_MAX_GUESTS ||
	    snprintf(want, sizeof(want), HP_TICKET_REPLY, id) != (int)r ||
	    strcmp(want, reply) != 0 || n < 2) {
		rc = -EPROTO;
		SET_WHY("--hub-ticket: hubd's answer makes no sense");
		goto out;
	}
	t->peer_id = id;
	t->doorbell_fd = t->fds[0];
	snprintf(t->paths[0], sizeof(t->paths[0]), "/proc/self/fd/%d", t->fds[1]);
	t->hub_path = t->paths[0];
	if (n > 2) {
		snprintf(t->paths[1], sizeof(t->paths[1]), "/proc/self/fd/%d", t->fds[2]);
		t->pool_path = t->paths[1];
	}
	rc = 0;
out:
	close(s);
	if (rc != 0)
		hp_ticket_close(t);
	return rc;
}
