/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest started by hand (start = manual), to run it under a debugger.
 * spawn.c makes its domain, reserves its entry and makes its doorbell as
 * for any guest, then, instead of the fork, this listens on a socket of
 * its own beside the control socket (mode 0600, the guest's user's when
 * hubd is root) with a 128-bit secret. hubctl ticket prints the command
 * line with --hub-ticket=PATH:SECRET; libguest connects, writes the secret
 * and receives what a spawned guest inherits (proto/ticket.h). The peer's
 * credentials must be the guest's user, root or hubd's, and the secret
 * right (compared in constant time); then the socket goes, used once, and
 * the process is watched by a pidfd (it is not our child: no exit status,
 * no process group). Anything else closes that connection and changes
 * nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/manual.h"
#include "proto/fdpass.h"
#include "proto/ticket.h"

struct manual {
	int		lfd;		/* listening */
	ev_io		lw;
	int		cfd;		/* the one connection being heard, -1: none */
	ev_io		cw;
	struct ucred	cred;		/* cfd's peer */
	int		guest_end;	/* its doorbell's end, handed over */
	host_peer_fn	*started;	/* the supervisor's, once handed over */
	char		path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		secret[HP_TICKET_SECRET_LEN + 1];	/* hex */
};

static void
drop_conn(struct hub *h, struct manual *m)
{
	if (m->cfd < 0)
		return;
	ev_io_stop(h->loop, &m->cw);
	close(m->cfd);
	m->cfd = -1;
}

void
manual_end(struct hub *h, struct peer *p)
{
	struct manual *m = p->manual;

	if (m == NULL)
		return;
	drop_conn(h, m);
	ev_io_stop(h->loop, &m->lw);
	if (m->lfd >= 0) {
		close(m->lfd);
		unlink(m->path);
	}
	if (m->guest_end >= 0)
		close(m->guest_end);
	explicit_bzero(m->secret, sizeof(m->secret));
	free(m);
	p->manual = NULL;
}

const char *
manual_socket(const struct peer *p)
{
	return p->manual != NULL ? p->manual->path : NULL;
}

const char *
manual_secret(const struct peer *p)
{
	return p->manual != NULL ? p->manual->secret : NULL;
}

int
manual_path(char *path, size_t n, const char *control, const char *name)
{
	return snprintf(path, n, "%s.%s.ticket", control, name);
}

/* Compares in a time that does not depend on where they differ. */
static int
same_secret(const char *a, const char *b, size_t n)
{
	volatile unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* Who may take the ticket: the guest's user, root, or hubd's own. */
static int
allowed(const struct peer *p, uid_t uid)
{
	return uid == 0 || uid == geteuid() ||
	    (p->conf->run_uid >= 0 && uid == (uid_t)p->conf->run_uid);
}

/* The secret, or anything else: the ticket handed over, or refused. */
static void
conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct hub *h = p->hub;
	struct manual *m = p->manual;
	host_peer_fn *started;
	char got[HP_TICKET_SECRET_LEN + 1], reply[32];
	int fds[HP_TICKET_FDS], nfds = 0, pidfd, len;
	ssize_t n;

	(void)loop;
	(void)revents;
	/* the whole secret in one read: it is written at once, and a
	 * client that dribbles is nobody we wait for */
	if ((n = recv(m->cfd, got, sizeof(got), MSG_DONTWAIT)) < 0 &&
	    (errno == EAGAIN || errno == EINTR))
		return;
	if (n != HP_TICKET_SECRET_LEN ||
	    !same_secret(got, m->secret, HP_TICKET_SECRET_LEN)) {
		log_warnx("guest %s: a wrong ticket from pid %d, refused", p->conf->name,
			  (int)m->cred.pid);
		drop_conn(h, m);
		return;
	}
	/* r[shm.death.process-handle]: its pidfd, before anything is handed */
	if ((pidfd = (int)syscall(SYS_pidfd_open, m->cred.pid, 0)) < 0) {
		log_warn("guest %s: pidfd_open of pid %d", p->conf->name, (int)m->cred.pid);
		drop_conn(h, m);
		return;
	}
	/* r[shm.spawn.fd-inheritance], by hand: what spawn.c's child gets */
	fds[nfds++] = m->guest_end;
	fds[nfds++] = p->dom.fd;
	if (p->zone != NULL)
		fds[nfds++] = p->zone->fd;
	len = snprintf(reply, sizeof(reply), HP_TICKET_REPLY, p->id);
	if (hp_fdpass_send(m->cfd, reply, (size_t)len, fds, (uint32_t)nfds) != len) {
		log_warnx("guest %s: cannot hand its ticket to pid %d", p->conf->name,
			  (int)m->cred.pid);
		close(pidfd);
		drop_conn(h, m);
		return;
	}
	p->pid = m->cred.pid;
	p->pidfd = pidfd;
	if (p->restarts++ > 0)
		log_info("guest %s: started again by hand (pid %d)", p->conf->name, (int)p->pid);
	else
		log_info("guest %s: started by hand (pid %d)", p->conf->name, (int)p->pid);
	started = m->started;
	manual_end(h, p);	/* used once */
	started(h, p);
}

static void
accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer *p = w->data;
	struct hub *h = p->hub;
	struct manual *m = p->manual;
	socklen_t len = sizeof(m->cred);
	int fd;

	(void)loop;
	(void)revents;
	if ((fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0)
		return;		/* gone meanwhile, or out of fds: the next try */
	/* one at a time: a newer one replaces one that said nothing */
	drop_conn(h, m);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &m->cred, &len) != 0 ||
	    !allowed(p, m->cred.uid)) {
		log_warnx("guest %s: a ticket asked by uid %d, not its user, refused",
			  p->conf->name, (int)m->cred.uid);
		close(fd);
		return;
	}
	m->cfd = fd;
	ev_io_init(&m->cw, conn_cb, fd, EV_READ);
	m->cw.data = p;
	ev_io_start(h->loop, &m->cw);
}

int
manual_listen(struct hub *h, struct peer *p, int guest_end, host_peer_fn *started,
	      const char **what)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint8_t rnd[HP_TICKET_SECRET_LEN / 2];
	struct manual *m;
	mode_t old;
	int err;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		*what = "ticket";
		return -ENOMEM;
	}
	m->lfd = m->cfd = m->guest_end = -1;
	m->started = started;
	p->manual = m;
	/* beside the control socket, where only hubd makes files */
	if ((size_t)manual_path(m->path, sizeof(m->path), h->conf.control_path,
				p->conf->name) >= sizeof(m->path)) {
		*what = "ticket socket path";
		err = -ENAMETOOLONG;
		goto fail;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		*what = "ticket secret";
		err = -errno;
		goto fail;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(m->secret + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
	memcpy(sun.sun_path, m->path, strlen(m->path) + 1);
	if ((m->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		*what = "ticket socket";
		err = -errno;
		goto fail;
	}
	unlink(m->path);	/* a hubd before us, killed */
	old = umask(0177);
	if (bind(m->lfd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		err = -errno;
		umask(old);
		*what = "ticket socket";
		close(m->lfd);
		m->lfd = -1;
		goto fail;
	}
	umask(old);
	/* 0600: only its user (and root) may connect */
	if ((geteuid() == 0 && p->conf->run_uid >= 0 &&
	     chown(m->path, (uid_t)p->conf->run_uid, (gid_t)-1) != 0) ||
	    listen(m->lfd, 4) != 0) {
		err = -errno;
		*what = "ticket socket";
		goto fail;
	}
	m->guest_end = guest_end;
	ev_io_init(&m->lw, accept_cb, m->lfd, EV_READ);
	m->lw.data = p;
	ev_io_start(h->loop, &m->lw);
	log_info("guest %s: waiting to be started by hand: hubctl ticket %s",
		 p->conf->name, p->conf->name);
	return 0;
fail:
	manual_end(h, p);
	return err;
}
