/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Whom each guest runs as. After systemd's DynamicUser: a guest without
 * user = runs as a uid of its own from [hub] guest_uids, the number a
 * hash of its name (so the same across its restarts and hubd's), with no
 * passwd entry and no supplementary groups; so guests cannot signal,
 * ptrace or read each other's /proc files, nor hubd's. Where that cannot
 * be (hubd is not root, the uid cannot reach the executable, the range is
 * full) the guest runs as hubd's user and the log says why, once, when
 * hubd takes its settings (start, reload): a restart decides nothing. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/users.h"

#define PROBE_MAX	4096	/* numbers tried for one guest before giving up */
#define UID_16BIT_NONE	65535	/* (uid_t)-1 of 16-bit uids: never anybody's */

/* FNV-1a: a name's place in the range, the same on every build. */
static uint32_t
name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *s = (const unsigned char *)name; *s != '\0'; s++)
		h = (h ^ *s) * 16777619u;
	return h;
}

/* Whether the system has no user and no group of this number (the gid
 * is the same number), and it is nobody special. */
static int
number_free(uint32_t u)
{
	return u != UID_16BIT_NONE && u != geteuid() && getpwuid(u) == NULL &&
	    getgrgid(u) == NULL;
}

/* A number another guest than name holds: of c (numbered so far, or its
 * user =), or running in h (removed and still stopping ones too). */
static int
number_held(struct hub *h, const struct hub_conf *c, const char *name, uint32_t u)
{
	for (uint32_t i = 0; i < c->nguests; i++) {
		const struct config_guest *g = &c->guests[i];

		if (strcmp(g->name, name) != 0 && (g->own_uid == u || g->uid == (int64_t)u))
			return 1;
	}
	for (uint32_t i = 0; i < h->npeers; i++) {
		const struct config_guest *v[2] = { h->peers[i].conf, h->peers[i].next_conf };

		for (int k = 0; k < 2; k++)
			if (v[k] != NULL && strcmp(v[k]->name, name) != 0 &&
			    (v[k]->own_uid == u || v[k]->run_uid == (int64_t)u))
				return 1;
	}
	return 0;
}

/* The number name had in h, if it is still in r and still free. */
static uint32_t
number_kept(struct hub *h, const struct hub_conf *c, const char *name, struct config_uids r)
{
	for (uint32_t i = 0; i < h->npeers; i++) {
		const struct peer *p = &h->peers[i];
		const struct config_guest *g = p->next_conf != NULL ? p->next_conf : p->conf;

		if (g == NULL || strcmp(g->name, name) != 0 || g->own_uid == 0)
			continue;
		if (g->own_uid >= r.first && g->own_uid <= r.last &&
		    !number_held(h, c, name, g->own_uid) && number_free(g->own_uid))
			return g->own_uid;
	}
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	const struct config_guest *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

void
users_number(struct hub *h, struct hub_conf *c)
{
	struct config_guest **order;
	uint32_t n = 0;

	if (c->nguests == 0)
		return;
	if ((order = calloc(c->nguests, sizeof(*order))) == NULL) {
		log_warnx("out of memory: guests run as hubd's user");
		return;		/* own_uid 0: users_take says so per guest */
	}
	/* the numbers running guests hold first, then the others by name:
	 * the same file gives the same numbers whatever its order */
	for (uint32_t i = 0; i < c->nguests; i++) {
		struct config_guest *g = &c->guests[i];

		g->own_uid = 0;
		if (g->uids.first == 0)
			continue;
		if ((g->own_uid = number_kept(h, c, g->name, g->uids)) == 0)
			order[n++] = g;
	}
	qsort(order, n, sizeof(*order), by_name);
	for (uint32_t i = 0; i < n; i++) {
		struct config_guest *g = order[i];
		uint64_t size = (uint64_t)g->uids.last - g->uids.first + 1;
		uint64_t start = name_hash(g->name) % size;

		for (uint64_t k = 0; k < size && k < PROBE_MAX; k++) {
			uint32_t u = (uint32_t)(g->uids.first + (start + k) % size);

			if (!number_held(h, c, g->name, u) && number_free(u)) {
				g->own_uid = u;
				break;
			}
		}
	}
	free(order);
}

/* Whether uid, with gid and no other groups, can run exec: a child takes
 * those ids and asks access(2), which goes by them now (its real ids);
 * a script ("#!") must be readable too, for its interpreter. The answer
 * comes up a pipe: 0, or the errno that denies it; -errno when the child
 * could not ask. The child is reaped before this returns. */
static int
probe(const char *exec, uid_t uid, gid_t gid)
{
	char head[2] = "";
	int fds[2], answer = -EIO, status, fd, script;
	ssize_t n;
	pid_t pid;

	/* read as hubd: whether it is a script is the file's, not the uid's */
	if ((fd = open(exec, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (read(fd, head, sizeof(head)) != sizeof(head))
			head[0] = '\0';
		close(fd);
	}
	script = head[0] == '#' && head[1] == '!';
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	if ((pid = fork()) < 0) {
		answer = -errno;
		close(fds[0]);
		close(fds[1]);
		return answer;
	}
	if (pid == 0) {
		close(fds[0]);
		if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
			answer = -errno;
		else if (access(exec, X_OK) != 0 || (script && access(exec, R_OK) != 0))
			answer = errno;
		else
			answer = 0;
		_exit(write(fds[1], &answer, sizeof(answer)) == sizeof(answer) ? 0 : 1);
	}
	close(fds[1]);
	while ((n = read(fds[0], &answer, sizeof(answer))) < 0 && errno == EINTR)
		;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return n == sizeof(answer) ? answer : -EIO;
}

static void
user_name(char *buf, size_t len, uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	snprintf(buf, len, "%s", pw != NULL ? pw->pw_name : "");
}

/* g runs as hubd's user (its group = still applies), because why. */
static void
runs_hubd(struct config_guest *g, const char *why)
{
	g->runs = GUEST_RUNS_HUBD;
	g->run_uid = -1;
	g->run_gid = g->gid;
	user_name(g->run_user, sizeof(g->run_user), geteuid());
	snprintf(g->run_why, sizeof(g->run_why), "%s", why);
}

void
users_take(struct config_guest *g)
{
	static int said_not_root;	/* one line for the hub, not one per guest */
	char why[sizeof(g->run_why)], hubd[48];
	gid_t gid;
	int rc;

	g->run_why[0] = '\0';
	if (g->uid >= 0) {		/* user = NAME */
		g->runs = GUEST_RUNS_USER;
		g->run_uid = g->uid;
		g->run_gid = g->gid;
		user_name(g->run_user, sizeof(g->run_user), (uid_t)g->uid);
		return;
	}
	user_name(hubd, sizeof(hubd), geteuid());
	if (hubd[0] == '\0')
		snprintf(hubd, sizeof(hubd), "uid %u", (unsigned)geteuid());
	if (g->uids.first == 0) {
		runs_hubd(g, "guest_uids = no");
		return;
	}
	if (geteuid() != 0) {
		if (!said_not_root++)
			log_info("guests run as hubd's user (%s), apart by memory alone: "
				 "hubd is not root, so guest_uids gives them no users of "
				 "their own", hubd);
		runs_hubd(g, "hubd is not root");
		return;
	}
	if (g->own_uid == 0) {
		snprintf(why, sizeof(why), "no free uid in guest_uids %u-%u", g->uids.first,
			 g->uids.last);
		log_warnx("guest %s: runs as hubd's user (%s): %s", g->name, hubd, why);
		runs_hubd(g, why);
		return;
	}
	/* group = NAME, else the number itself: not [hub] group, which is
	 * the control socket's (its memory is handed to it as fds) */
	gid = g->gid >= 0 ? (gid_t)g->gid : (gid_t)g->own_uid;
	/* only a uid that cannot reach what hubd can is a reason for hubd's:
	 * an exec missing for everyone fails its spawn, as it should */
	if (access(g->exec, X_OK) == 0 && (rc = probe(g->exec, g->own_uid, gid)) != 0) {
		if (rc > 0) {
			snprintf(why, sizeof(why), "%s is not reachable by uid %u", g->exec,
				 g->own_uid);
			log_warnx("guest %s: runs as hubd's user (%s), not as a user of its "
				  "own: %s", g->name, hubd, why);
			runs_hubd(g, why);
			return;
		}
		/* not known: the uid stands, a spawn that fails says why */
		log_warnx("guest %s: cannot check that uid %u reaches %s: %s", g->name,
			  g->own_uid, g->exec, strerror(-rc));
	}
	g->runs = GUEST_RUNS_OWN;
	g->run_uid = g->own_uid;
	g->run_gid = gid;
	g->run_user[0] = '\0';
	log_debug("guest %s: runs as uid %u, gid %u, its own", g->name, g->own_uid,
		  (unsigned)gid);
}
