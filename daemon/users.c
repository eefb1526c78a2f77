/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Whom each guest runs as. After systemd's DynamicUser: a guest without
 * user = runs as a uid of its own from [hub] guest_uids, with no passwd
 * entry and no supplementary groups; so guests cannot signal, ptrace or
 * read each other's /proc files, nor hubd's. The number is unique on the
 * machine, not only in this hub: hubd holds a lock on byte NUMBER of
 * HUB_UID_LOCK, one file for every hub, for as long as the guest is in
 * its config (across the guest's restarts), and the kernel drops it when
 * hubd dies, however; a number is taken only with its lock, and only
 * while no process runs as it. A hash of the name is where the search
 * starts, so a name gets the same number again when it is free. Where
 * that cannot be (hubd is not root, the uid cannot reach the executable,
 * no number is free) the guest runs as hubd's user and the log says why,
 * once, when hubd takes its settings (start, reload): a restart decides
 * nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/users.h"

#ifndef HUB_UID_LOCK
#define HUB_UID_LOCK	"/run/hub/uids.lock"	/* byte N locked: uid N is a hub's */
#endif
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

/* Why users_number left guests without a number, when the lock file or
 * a lock in it failed, for users_take; "" when none did. */
static char no_locks[200];

/* HUB_UID_LOCK, open for h (made if missing, its directory too); 0, or
 * -1 with why. Root's alone: a file that others could replace or lock
 * would be no lock. Kept open until hubd exits: every lock in it is on
 * this open file description (OFD locks), so all go when hubd dies. */
static int
locks_open(struct hub *h, char *why, size_t len)
{
	char dir[sizeof(HUB_UID_LOCK)], *slash;
	struct stat st;
	int fd;

	if (h->uid_fd >= 0)
		return 0;
	snprintf(dir, sizeof(dir), "%s", HUB_UID_LOCK);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			goto fail;
	}
	/* O_NONBLOCK: a FIFO planted there would not hang us */
	fd = open(HUB_UID_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		  0600);
	if (fd < 0)
		goto fail;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022) != 0) {
		close(fd);
		snprintf(why, len, "%s is not a file of root's alone, so it holds no uid locks",
			 HUB_UID_LOCK);
		return -1;
	}
	h->uid_fd = fd;
	return 0;
fail:
	snprintf(why, len, "cannot lock uids in %s: %s", HUB_UID_LOCK, strerror(errno));
	return -1;
}

static int
lock_find(const struct hub *h, uint32_t u)
{
	for (uint32_t i = 0; i < h->nuid_locks; i++)
		if (h->uid_locks[i] == u)
			return (int)i;
	return -1;
}

/* Byte u of the lock file: F_WRLCK to take it, F_UNLCK to let it go. */
static int
lock_byte(int fd, uint32_t u, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)u,
			    .l_len = 1 };

	return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

/* The lock of number u: 0 once it is ours (or was), -EBUSY while
 * another hubd holds it, or -errno. */
static int
lock_take(struct hub *h, uint32_t u)
{
	uint32_t *more;
	int rc;

	if (lock_find(h, u) >= 0)
		return 0;
	if ((more = realloc(h->uid_locks, (h->nuid_locks + 1) * sizeof(*more))) == NULL)
		return -ENOMEM;
	h->uid_locks = more;
	if ((rc = lock_byte(h->uid_fd, u, F_WRLCK)) != 0)
		return rc == -EAGAIN || rc == -EACCES ? -EBUSY : rc;
	h->uid_locks[h->nuid_locks++] = u;
	return 0;
}

static void
lock_drop(struct hub *h, uint32_t i)
{
	if (lock_byte(h->uid_fd, h->uid_locks[i], F_UNLCK) != 0)
		log_warn("%s: uid %u", HUB_UID_LOCK, h->uid_locks[i]);
	h->uid_locks[i] = h->uid_locks[--h->nuid_locks];
}

/* Whether a guest of h (an entry's settings, or one waiting for an
 * entry) holds number u. */
static int
lock_used(const struct hub *h, uint32_t u)
{
	for (uint32_t i = 0; i < h->npeers; i++)
		if ((h->peers[i].conf != NULL && h->peers[i].conf->own_uid == u) ||
		    (h->peers[i].next_conf != NULL && h->peers[i].next_conf->own_uid == u))
			return 1;
	for (uint32_t k = 0; k < h->nwaiting; k++)
		if (h->waiting[k]->own_uid == u)
			return 1;
	return 0;
}

void
users_release(struct hub *h)
{
	for (uint32_t i = 0; i < h->nuid_locks;)
		if (lock_used(h, h->uid_locks[i]))
			i++;
		else
			lock_drop(h, i);
}

void
users_release_all(struct hub *h)
{
	free(h->uid_locks);
	h->uid_locks = NULL;
	h->nuid_locks = 0;
	if (h->uid_fd >= 0)
		close(h->uid_fd);	/* and every lock in it */
	h->uid_fd = -1;
}

/* Marks in busy which of the n numbers u some live process runs as, by
 * any of its uids or gids (real, effective, saved, file system): a guest
 * of a hubd that died may outlive its lock, or leave a child behind. 0,
 * or -errno when /proc cannot be read. */
static int
numbers_running(const uint32_t *u, uint32_t n, unsigned char *busy)
{
	static const char *const keys[] = { "\nUid:", "\nGid:" };
	char path[300], buf[2048];
	struct dirent *e;
	DIR *d;

	memset(busy, 0, n);
	if ((d = opendir("/proc")) == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		ssize_t len;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/status", e->d_name);
		if ((fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;	/* gone meanwhile */
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* a zombie runs nothing; its parent may be slow to reap it */
		if (strstr(buf, "\nState:\tZ") != NULL || strstr(buf, "\nState:\tX") != NULL)
			continue;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			char *p = strstr(buf, keys[k]), *end;

			for (int f = 0; p != NULL && f < 4; f++, p = end) {
				unsigned long v = strtoul(f == 0 ? p + 5 : p, &end, 10);

				if (end == (f == 0 ? p + 5 : p))
					break;
				for (uint32_t i = 0; i < n; i++)
					busy[i] |= v == u[i];
			}
		}
	}
	closedir(d);
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	const struct config_guest *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* One guest's search: where it started, how far it went. */
struct search {
	struct config_guest	*g;
	uint64_t		start, k;
	int			over;	/* searched all it may: none */
};

static int
by_guest_name(const void *a, const void *b)
{
	const struct search *x = a, *y = b;

	return by_name(&x->g, &y->g);
}

/* The next number of s's search that no guest of h or c holds, the
 * system has no user or group of, and no other hubd holds the lock of:
 * locked for it; 0 when the search is over; -errno when locks fail
 * (no_locks says why). */
static int64_t
number_next(struct hub *h, const struct hub_conf *c, struct search *s)
{
	const struct config_guest *g = s->g;
	uint64_t size = (uint64_t)g->uids.last - g->uids.first + 1;

	while (s->k < size && s->k < PROBE_MAX) {
		uint32_t u = (uint32_t)(g->uids.first + (s->start + s->k++) % size);
		int rc;

		if (number_held(h, c, g->name, u) || !number_free(u))
			continue;
		if ((rc = lock_take(h, u)) == 0)
			return u;
		if (rc != -EBUSY) {
			snprintf(no_locks, sizeof(no_locks), "cannot lock uid %u in %s: %s", u,
				 HUB_UID_LOCK, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

void
users_number(struct hub *h, struct hub_conf *c)
{
	struct search *want = NULL;
	uint32_t *cand = NULL, *who = NULL, n = 0, m;
	unsigned char *busy = NULL;
	int said = 0, broken = 0;

	no_locks[0] = '\0';
	for (uint32_t i = 0; i < c->nguests; i++) {
		c->guests[i].own_uid = 0;
		n += c->guests[i].uids.first != 0;
	}
	/* not root: no uid to give (users_take says so), no lock to take */
	if (n == 0 || geteuid() != 0)
		return;
	n = 0;
	if (locks_open(h, no_locks, sizeof(no_locks)) != 0)
		return;		/* own_uid 0: users_take says why per guest */
	if ((want = calloc(c->nguests, sizeof(*want))) == NULL ||
	    (cand = calloc(c->nguests, sizeof(*cand))) == NULL ||
	    (who = calloc(c->nguests, sizeof(*who))) == NULL ||
	    (busy = calloc(c->nguests, 1)) == NULL) {
		snprintf(no_locks, sizeof(no_locks), "out of memory");
		goto done;
	}
	/* the numbers running guests hold first (their locks are ours),
	 * then the others by name: the same file gives the same numbers
	 * whatever its order */
	for (uint32_t i = 0; i < c->nguests; i++) {
		struct config_guest *g = &c->guests[i];
		uint32_t u;

		if (g->uids.first == 0)
			continue;
		if ((u = number_kept(h, c, g->name, g->uids)) != 0 && lock_take(h, u) == 0)
			g->own_uid = u;
		else
			want[n++] = (struct search){ g, name_hash(g->name) %
			    ((uint64_t)g->uids.last - g->uids.first + 1), 0, 0 };
	}
	qsort(want, n, sizeof(*want), by_guest_name);
	/* each round locks a number for every guest still without one,
	 * then looks for processes running as them: only a locked number
	 * can gain no new one (a hubd that dies lets go of its locks, not
	 * always of its processes) */
	while (!broken) {
		m = 0;
		for (uint32_t i = 0; i < n && !broken; i++) {
			int64_t u;

			if (want[i].g->own_uid != 0 || want[i].over)
				continue;
			if ((u = number_next(h, c, &want[i])) < 0)
				broken = 1;
			else if (u == 0)
				want[i].over = 1;
			else {
				want[i].g->own_uid = (uint32_t)u;
				who[m] = i;
				cand[m++] = (uint32_t)u;
			}
		}
		if (m == 0)
			break;
		if (numbers_running(cand, m, busy) != 0 && !said++)
			log_warn("cannot read /proc to see which uids processes run as");
		for (uint32_t j = 0; j < m; j++) {
			if (!busy[j])
				continue;
			log_debug("guest %s: uid %u: a process runs as it, not taken",
				  want[who[j]].g->name, cand[j]);
			want[who[j]].g->own_uid = 0;
			if (!lock_used(h, cand[j]))	/* else a guest of ours has it */
				lock_drop(h, (uint32_t)lock_find(h, cand[j]));
		}
	}
done:
	free(want);
	free(cand);
	free(who);
	free(busy);
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
		if (no_locks[0] != '\0')
			snprintf(why, sizeof(why), "%s", no_locks);
		else
			snprintf(why, sizeof(why), "no free uid in guest_uids %u-%u",
				 g->uids.first, g->uids.last);
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
