/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The spawn ticket (r[shm.spawn.ticket], r[shm.spawn.args]): hubd starts a
 * guest with --hub-path, --peer-id and --doorbell-fd. Each is accepted as
 * "--name=value" or "--name value"; everything else is the plugin's, and
 * nothing after "--" is looked at. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "proto/layout.h"
#include "proto/ticket.h"

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
	const char *path = NULL, *pool = NULL, *peer = NULL, *fd = NULL, *v;
	long peer_id, dfd;
	int i, m;

	for (i = 1; i < argc && argv[i] != NULL; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if ((m = match(argc, argv, &i, "--hub-path", &v)) != 0) {
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
	t->hub_path = path;
	t->pool_path = pool;
	t->peer_id = (uint32_t)peer_id;
	t->doorbell_fd = (int)dfd;
	return 0;
}
