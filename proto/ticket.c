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

/* The spawn ticket's options as argv gives them, each NULL when not
 * given. */
struct ticket_args {
	const char	*hand;		/* --hub-ticket */
	const char	*path;		/* --hub-path */
	const char	*pool;		/* --hub-pool */
	const char	*peer;		/* --peer-id */
	const char	*fd;		/* --doorbell-fd */
	const char	*bells;		/* --hub-bells */
};

/* What an option's value must be, besides given. */
#define VALUE_ANY		0
#define VALUE_NONEMPTY		1
#define VALUE_PATH_SECRET	2	/* PATH:SECRET, a colon in it */

/* The options, in the order they are looked for, each with where its
 * value goes and what to say when it is missing or bad, or given twice. */
static const struct ticket_option {
	const char	*name;
	size_t		 at;		/* in struct ticket_args */
	int		 value;		/* VALUE_* */
	const char	*bad;
	const char	*twice;
} ticket_options[] = {
	{ "--hub-ticket", offsetof(struct ticket_args, hand), VALUE_PATH_SECRET,
	  "--hub-ticket needs PATH:SECRET", "--hub-ticket is given twice" },
	{ "--hub-path", offsetof(struct ticket_args, path), VALUE_ANY,
	  "--hub-path needs a value", "--hub-path is given twice" },
	/* ours: the shared pool's file, when the host lets this guest
	 * use one (doc/protocol.md) */
	{ "--hub-pool", offsetof(struct ticket_args, pool), VALUE_NONEMPTY,
	  "--hub-pool needs a value", "--hub-pool is given twice" },
	{ "--peer-id", offsetof(struct ticket_args, peer), VALUE_ANY,
	  "--peer-id needs a value", "--peer-id is given twice" },
	{ "--doorbell-fd", offsetof(struct ticket_args, fd), VALUE_ANY,
	  "--doorbell-fd needs a value", "--doorbell-fd is given twice" },
	/* ours: the bells hubd rings and is rung on (HP_FEAT_BELLS) */
	{ "--hub-bells", offsetof(struct ticket_args, bells), VALUE_NONEMPTY,
	  "--hub-bells needs a value", "--hub-bells is given twice" },
};
#define NOPTIONS	(sizeof(ticket_options) / sizeof(ticket_options[0]))

/* The spawn ticket's options out of argv, up to "--"; the others are
 * the plugin's. -EINVAL with *why for a value missing or bad, or an
 * option given twice. */
static int
ticket_args_scan(int argc, char *const argv[], struct ticket_args *a, const char **why)
{
	const struct ticket_option *o;
	const char *v, **slot;
	int i, m;

	memset(a, 0, sizeof(*a));
	for (i = 1; i < argc && argv[i] != NULL; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		for (o = ticket_options; o < ticket_options + NOPTIONS; o++)
			if ((m = match(argc, argv, &i, o->name, &v)) != 0)
				break;
		if (o == ticket_options + NOPTIONS)
			continue;	/* the plugin's */
		if (m < 0 || (o->value == VALUE_NONEMPTY && *v == '\0') ||
		    (o->value == VALUE_PATH_SECRET && strrchr(v, ':') == NULL)) {
			SET_WHY(o->bad);
			return -EINVAL;
		}
		slot = (const char **)(void *)((char *)a + o->at);
		if (*slot != NULL) {
			SET_WHY(o->twice);
			return -EINVAL;
		}
		*slot = v;
	}
	return 0;
}

/* t emptied: no paths, no fds. */
static void
ticket_clear(struct hp_ticket *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < HP_TICKET_FDS; i++)
		t->fds[i] = -1;
	t->bells[0] = t->bells[1] = -1;
}

/* A guest started by hand: --hub-ticket alone, the rest fetched later
 * (hp_ticket_fetch). */
static int
ticket_by_hand(const struct ticket_args *a, struct hp_ticket *t, const char **why)
{
	if (a->path != NULL || a->pool != NULL || a->peer != NULL || a->fd != NULL ||
	    a->bells != NULL) {
		SET_WHY("--hub-ticket goes without --hub-path, --hub-pool, "
		    "--peer-id, --doorbell-fd and --hub-bells");
		return -EINVAL;
	}
	ticket_clear(t);
	t->hand = a->hand;
	t->doorbell_fd = -1;
	return 0;
}

/* --hub-bells=R,W: two open descriptors, distinct, neither the doorbell. */
static int
ticket_bells(const char *v, int doorbell, struct hp_ticket *t, const char **why)
{
	const char *comma = strchr(v, ',');
	char first[16];
	long r, w;

	if (comma == NULL || (size_t)(comma - v) >= sizeof(first))
		goto bad;
	memcpy(first, v, (size_t)(comma - v));
	first[comma - v] = '\0';
	r = parse_decimal(first, INT_MAX);
	w = parse_decimal(comma + 1, INT_MAX);
	if (r < 0 || w < 0 || r == w || r == doorbell || w == doorbell ||
	    fcntl((int)r, F_GETFD) < 0 || fcntl((int)w, F_GETFD) < 0)
		goto bad;
	t->bells[0] = (int)r;
	t->bells[1] = (int)w;
	return 0;
bad:
	SET_WHY("--hub-bells must be two open file descriptors, R,W");
	return -EINVAL;
}

/* A guest hubd spawned: --hub-path, --peer-id and --doorbell-fd each
 * there and good, --hub-pool if the host gave one. */
static int
ticket_spawned(const struct ticket_args *a, struct hp_ticket *t, const char **why)
{
	long peer_id, dfd;

	if (a->path == NULL) {
		SET_WHY("no --hub-path: this program is a hub guest and must "
		    "be started by hubd");
		return -EINVAL;
	}
	if (a->peer == NULL) {
		SET_WHY("no --peer-id: this program is a hub guest and must "
		    "be started by hubd");
		return -EINVAL;
	}
	if (a->fd == NULL) {
		SET_WHY("no --doorbell-fd: this program is a hub guest and "
		    "must be started by hubd");
		return -EINVAL;
	}
	if (*a->path == '\0') {
		SET_WHY("--hub-path is empty");
		return -EINVAL;
	}
	/* r[shm.topology.peer-id] r[shm.topology.max-guests] */
	peer_id = parse_decimal(a->peer, HP_MAX_GUESTS);
	if (peer_id < 1) {
		SET_WHY("--peer-id must be a decimal number from 1 to 255");
		return -EINVAL;
	}
	dfd = parse_decimal(a->fd, INT_MAX);
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
	ticket_clear(t);
	t->hub_path = a->path;
	t->pool_path = a->pool;
	t->peer_id = (uint32_t)peer_id;
	t->doorbell_fd = (int)dfd;
	if (a->bells != NULL)
		return ticket_bells(a->bells, t->doorbell_fd, t, why);
	return 0;
}

/* r[shm.spawn.args] r[shm.spawn.fd-inheritance]; step 1 of
 * r[shm.spawn.guest-init]. */
int
hp_ticket_parse(int argc, char *const argv[], struct hp_ticket *t,
		const char **why)
{
	struct ticket_args a;
	int rc;

	if ((rc = ticket_args_scan(argc, argv, &a, why)) != 0)
		return rc;
	if (a.hand != NULL)
		return ticket_by_hand(&a, t, why);
	return ticket_spawned(&a, t, why);
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
