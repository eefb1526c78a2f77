/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control socket and its clients (after OpenBSD's control.c): a UNIX
 * stream socket, stale socket replaced, mode 0660, callers identified with
 * SO_PEERCRED; accepting, per-user limits, reading and writing each client,
 * timeouts; each request parsed (request.c), checked for who may run it,
 * and handed to its command. What each command does is handed in at
 * control_init (commands.c's table); a client's output buffer and credit
 * marks are client.c's. Requests are JSON objects, one per line, at most
 * CONTROL_MSG_MAX bytes; answers likewise, of any size. A client is
 * served one request at a time and no client can block the loop or
 * another client:
 * - connections are bounded per ordinary user and in all, with a reserve
 *   for root and hubd's own user (CONTROL_CLIENTS_*);
 * - a client with unsent answers past OUT_HIGH is not read from until they
 *   drain; a call's stream is held back by the channel's credit, given
 *   back to the guest only as the client takes the items;
 * - a client that takes nothing for client_timeout while answers wait, or
 *   asks nothing for that long, is closed; but a monitor, which asks once
 *   and listens until it closes, never: what it does not take is dropped
 *   (monitor.c);
 * - out of file descriptors (guests failing to spawn take every one that
 *   comes free), one kept in reserve takes a client, so that an operator
 *   can still stop guests; beyond it accepting pauses for ACCEPT_RETRY. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bsd/string.h>

#include "daemon/client.h"
#include "daemon/control.h"
#include "daemon/hub.h"
#include "daemon/jsonout.h"
#include "daemon/log.h"
#include "proto/doorbell.h"
#include "proto/fdpass.h"
#include "daemon/request.h"
#include "proto/clock.h"

#define OUT_HIGH	(256u << 10)	/* unsent answers: stop reading requests */
#define OUT_LOW		(64u << 10)	/* ... and read on once below this */
#define OUT_KEEP	(1u << 20)	/* an empty buffer larger than this is freed */
#define ACCEPT_RETRY	0.1		/* s: accepting paused for want of fds */
#define FINAL_WRITE_MS	500		/* hubd exiting: pending answers go out */

/* What the clients are served with (control_init): one socket per hubd. */
static const struct control_ops *handlers;

static void client_close(struct client *c);
static void spare_take(struct hub *h);
static void client_process(struct client *c);

/* Whether c holds what only its going ends (a call, a listen, a monitor)
 * while it is not read (it shut down its side, its lines fill the buffer,
 * its upload waits for credit): read_cb cannot see it go then, so
 * timer_cb looks once a second. */
static int
held_unread(const struct client *c)
{
	return c->feed_wait || ((c->calling || c->monitoring) && !ev_is_active(&c->rw));
}

/* Reading requests: while none is too long or waits to be served behind
 * unread answers. Also while a call runs, so that a client that goes
 * away is seen at once. */
static void
client_watch(struct client *c)
{
	struct ev_loop *loop = c->h->loop;

	if (!c->eof && !c->closing && !c->broken && c->inlen < CONTROL_MSG_MAX &&
	    client_unsent(c) < OUT_HIGH)
		ev_io_start(loop, &c->rw);
	else
		ev_io_stop(loop, &c->rw);
	if (held_unread(c) && (!ev_is_active(&c->tw) || ev_timer_remaining(loop, &c->tw) > 1)) {
		c->tw.repeat = 1;
		ev_timer_again(loop, &c->tw);
	}
}

static void
write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = w->data;
	uint64_t credit;
	int progress = 0;
	ssize_t n;

	(void)revents;
	if (c->broken) {
		client_close(c);
		return;
	}
	while (client_unsent(c) > 0) {
		if (c->fds_sent < c->nfds && c->written >= c->fds_at) {
			/* the fds an answer hands over go with its first bytes,
			 * a message's worth (and one byte) at a time */
			uint32_t k = c->nfds - c->fds_sent;

			k = k > HP_FDPASS_MAX ? HP_FDPASS_MAX : k;
			n = hp_fdpass_send(c->fd, c->out + c->outpos, 1, c->fds + c->fds_sent, k);
			if (n == 1 && (c->fds_sent += k) == c->nfds) {
				client_drop_fds(c);	/* the receiver has its own */
				/* the requests after it may be taken now */
				ev_feed_event(loop, &c->rw, EV_READ);
			} else if (n < 0)
				errno = (int)-n;
		} else {
			size_t len = client_unsent(c);

			/* up to the answer whose fds go with its first byte */
			if (c->fds_sent < c->nfds && c->fds_at - c->written < len)
				len = (size_t)(c->fds_at - c->written);
			n = send(c->fd, c->out + c->outpos, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			client_close(c);	/* gone: its call is abandoned */
			return;
		}
		c->outpos += (size_t)n;
		c->written += (uint64_t)n;
		progress = 1;
	}
	/* what the client has taken of the call's stream: credit for the guest */
	if (progress) {
		c->tx_ns = hp_now_ns();
		credit = client_marks_written(c);
		if (credit > 0 && c->calling)
			handlers->call_consumed(c->h, &c->call,
						credit > UINT32_MAX ? UINT32_MAX : (uint32_t)credit);
	}
	if (client_unsent(c) > 0) {
		if (progress && client_unsent(c) < OUT_LOW && !ev_is_active(&c->rw))
			ev_feed_event(loop, &c->rw, EV_READ);	/* requests again */
		return;
	}
	ev_io_stop(loop, w);
	c->outpos = c->outlen = 0;
	if (c->outcap > OUT_KEEP) {	/* after a large answer */
		free(c->out);
		c->out = NULL;
		c->outcap = 0;
	}
	if (c->closing) {
		client_close(c);
		return;
	}
	if (!ev_is_active(&c->rw))
		ev_feed_event(loop, &c->rw, EV_READ);
}

/* One request line: parsed, checked for who may run it, and handed to its
 * command. Changing state is for root and the hub's user
 * (client.privileged, from SO_PEERCRED). */
static void
client_request(struct client *c, const char *line, size_t len)
{
	struct control_req r;
	const char *why;

	if (request_parse(line, len, &r, &why) != 0) {
		log_debug("control: client %d (uid %u): bad request: %s", c->fd,
			  (unsigned)c->uid, why);
		client_reply_error(c, why);
		return;
	}
	log_debug("control: client %d (uid %u): %s%s%s", c->fd, (unsigned)c->uid,
		  ctl_commands[r.cmd].name, r.method || r.name ? " " : "",
		  r.method ? r.method : r.name ? r.name : "");
	if (ctl_commands[r.cmd].access != CTL_READ && !c->privileged) {
		log_debug("control: client %d (uid %u): %s: permission denied", c->fd,
			  (unsigned)c->uid, ctl_commands[r.cmd].name);
		client_reply_error(c, "permission denied: for root and the hub's user");
	} else {
		handlers->cmd[r.cmd](c, &r);
	}
	request_free(&r);
}

/* Handles the complete lines in the buffer, one request at a time, while
 * the answers to earlier ones are not piling up unread. */
static void
client_process(struct client *c)
{
	char *nl;

	/* one answer's fds at a time: the next request waits until they
	 * are handed over (write_cb) */
	while ((!c->calling || c->feeding) && !c->feed_wait && !c->monitoring && !c->closing &&
	       !c->broken && c->nfds == 0 &&
	       client_unsent(c) < OUT_HIGH && (nl = memchr(c->in, '\n', c->inlen)) != NULL) {
		size_t n = (size_t)(nl - c->in);
		char *line = malloc(n + 1);

		if (line == NULL) {
			client_break(c);
			return;
		}
		memcpy(line, c->in, n);
		memmove(c->in, nl + 1, c->inlen - n - 1);
		c->inlen -= n + 1;
		if (c->feeding)		/* a line of the stream it sends */
			handlers->call_feed(c, line, n);
		else if (n > 0)
			client_request(c, line, n);
		free(line);
	}
	/* its upload waits for the callee: timer_cb looks every second
	 * whether it went */
	if (c->feed_wait && ev_timer_remaining(c->h->loop, &c->tw) > 1) {
		c->tw.repeat = 1;
		ev_timer_again(c->h->loop, &c->tw);
	}
}

static void
read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	if (c->broken || c->closing) {
		client_watch(c);
		return;
	}
	if (!c->eof && c->inlen < CONTROL_MSG_MAX) {
		n = recv(c->fd, c->in + c->inlen, CONTROL_MSG_MAX - c->inlen, MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			client_close(c);	/* gone: its call is abandoned */
			return;
		}
		if (n == 0 && (c->calling || c->monitoring) && hp_sock_hung_up(c->fd)) {
			client_close(c);	/* killed or Ctrl-C: its call is abandoned */
			return;
		}
		if (n == 0)		/* only its sending side: answers still go */
			c->eof = 1;
		if (n > 0) {
			c->inlen += (size_t)n;
			c->rx_ns = hp_now_ns();
		}
		if (c->monitoring)
			c->inlen = 0;	/* it asks nothing more: read to see it go */
	}
	client_process(c);
	if (c->inlen == CONTROL_MSG_MAX && memchr(c->in, '\n', c->inlen) == NULL) {
		client_reply_error(c, "request longer than 65536 bytes");
		c->inlen = 0;
		c->closing = 1;
	}
	/* it sends no more of its stream: the stream ends there (unended) */
	if (c->eof && c->feeding && !c->feed_wait && memchr(c->in, '\n', c->inlen) == NULL)
		handlers->call_feed(c, NULL, 0);
	/* it asks no more: close once what it asked is answered and written
	 * (if it is gone altogether, writing fails first) */
	if (c->eof && !c->calling && !c->monitoring && memchr(c->in, '\n', c->inlen) == NULL) {
		/* a last line without its newline: said, not taken as a
		 * request (it may be cut short) */
		if (c->inlen > 0 && !c->feeding) {
			client_reply_error(c, "the last request has no newline at its end: not read");
			c->inlen = 0;
		}
		if (client_unsent(c) == 0) {
			client_close(c);
			return;
		}
		c->closing = 1;
	}
	client_watch(c);
}

/* client_timeout: answers waiting that the client does not take, or
 * nothing asked and nothing to send. A client waiting for a call's answer
 * with everything written is waiting for the hub: never its fault; one
 * that sends a call's stream and sends nothing more is idle. */
static void
timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct client *c = w->data;
	uint64_t timeout = c->h->conf.client_timeout_ns, now = hp_now_ns(), since;

	(void)revents;
	/* gone while not read: what it held is let go */
	if (held_unread(c) && hp_sock_hung_up(c->fd)) {
		client_close(c);
		return;
	}
	if (timeout == 0 || c->monitoring) {	/* none: look again later */
		w->repeat = 1;
		ev_timer_again(loop, w);
		return;
	}
	if (client_unsent(c) > 0)
		since = c->tx_ns;
	else if ((c->calling && !c->feeding) || c->feed_wait)
		since = now;	/* the callee's to answer, or to read */
	else
		since = c->rx_ns > c->tx_ns ? c->rx_ns : c->tx_ns;
	if (now - since < timeout) {
		w->repeat = (ev_tstamp)(since + timeout - now) / 1e9;
		if (held_unread(c) && w->repeat > 1)
			w->repeat = 1;
		ev_timer_again(loop, w);
		return;
	}
	if (client_unsent(c) > 0)
		log_warnx("control: a client (uid %u) took none of its answers for %.1f s: dropped%s",
			  (unsigned)c->uid, (double)timeout / 1e9,
			  c->calling ? ", its call abandoned" : "");
	else
		log_debug("control: a client (uid %u) idle for %.1f s: closed",
			  (unsigned)c->uid, (double)timeout / 1e9);
	client_close(c);
}

static void
client_close(struct client *c)
{
	struct hub *h = c->h;

	log_debug("control: client %d (uid %u) closed%s", c->fd, (unsigned)c->uid,
		  c->calling ? ", its call abandoned" : "");
	if (c->calling)
		handlers->call_abandon(h, &c->call);
	if (c->monitoring)
		handlers->monitor_gone(c);
	ev_io_stop(h->loop, &c->rw);
	ev_io_stop(h->loop, &c->ww);
	ev_timer_stop(h->loop, &c->tw);
	close(c->fd);
	spare_take(h);		/* before anything else can take the fd just freed */
	for (struct client **pp = &h->clients; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	h->nclients--;
	client_drop_fds(c);
	free(c->out);
	free(c->marks);
	free(c);
}

/* Turned away: a one-line answer saying why, if the socket takes it.
 * Whatever it sent is read first, so that the close does not reset the
 * connection before it reads the answer. */
static void
client_refuse(struct hub *h, int fd, uid_t uid, const char *why)
{
	char buf[4096], line[256];
	int n;

	for (int i = 0; i < 16 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		continue;
	n = snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\"}\n", why);
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("control: refusing a client: %s", strerror(errno));
	close(fd);
	if (!h->ctl_refusing)	/* once until someone gets in again */
		log_warnx("control: refused a client (uid %u): %s", (unsigned)uid, why);
	h->ctl_refusing = 1;
}

/* A new connection, if its user may have one more (control.h): nobody but
 * root and hubd's user can take the last CONTROL_CLIENTS_RESERVED, nor
 * more than CONTROL_CLIENTS_PER_UID, so nobody else locks the operator out. */
static void
client_new(struct hub *h, int fd)
{
	struct client *c;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uint32_t same = 0;
	char why[96];
	int privileged;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		log_warn("control: SO_PEERCRED");
		close(fd);
		return;
	}
	/* a guest of a uid of its own (users.c) is never one of these: the
	 * socket's mode keeps it out, or with [hub] group, this does */
	privileged = cred.uid == 0 || cred.uid == geteuid();
	for (c = h->clients; c != NULL; c = c->next)
		same += c->uid == cred.uid;
	if (h->nclients >= CONTROL_CLIENTS_MAX ||
	    (!privileged && h->nclients >= CONTROL_CLIENTS_MAX - CONTROL_CLIENTS_RESERVED)) {
		client_refuse(h, fd, cred.uid, "too many control connections: try again later");
		return;
	}
	if (!privileged && same >= CONTROL_CLIENTS_PER_UID) {
		snprintf(why, sizeof(why), "too many control connections from this user "
			 "(%d at most): try again later", CONTROL_CLIENTS_PER_UID);
		client_refuse(h, fd, cred.uid, why);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		client_refuse(h, fd, cred.uid, "out of memory");
		return;
	}
	h->ctl_refusing = 0;
	c->h = h;
	c->fd = fd;
	c->uid = cred.uid;
	c->privileged = privileged;
	c->rx_ns = c->tx_ns = hp_now_ns();
	ev_io_init(&c->rw, read_cb, fd, EV_READ);
	ev_io_init(&c->ww, write_cb, fd, EV_WRITE);
	ev_init(&c->tw, timer_cb);
	c->rw.data = c->ww.data = c->tw.data = c;
	c->tw.repeat = h->conf.client_timeout_ns > 0 ?
	    (ev_tstamp)h->conf.client_timeout_ns / 1e9 : 1;
	ev_timer_again(h->loop, &c->tw);
	ev_io_start(h->loop, &c->rw);
	c->next = h->clients;
	h->clients = c;
	h->nclients++;
	log_debug("control: client %d (uid %u, pid %d) connected, %u in all", fd,
		  (unsigned)cred.uid, (int)cred.pid, h->nclients);
}

/* The fd kept in reserve for a client, if one is free to keep. */
static void
spare_take(struct hub *h)
{
	if (h->ctl_spare < 0)
		h->ctl_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void
accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct hub *h = w->data;
	int fd;

	(void)revents;
	for (int i = 0; i < 16; i++) {
		if ((fd = accept4(h->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
			client_new(h, fd);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			/* nobody waits any more: the episode is over. accept
			 * says EMFILE before it looks at the queue, so the
			 * spare may have been given up for nobody: kept again */
			spare_take(h);
			if (h->ctl_starved)
				log_info("control: accepting connections again");
			h->ctl_starved = 0;
			return;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if ((errno == EMFILE || errno == ENFILE) && h->ctl_spare >= 0) {
			if (!h->ctl_starved)
				log_warnx("control: out of file descriptors: a client "
					  "takes the one kept for it");
			h->ctl_starved = 1;
			close(h->ctl_spare);
			h->ctl_spare = -1;
			continue;
		}
		/* EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays queued
		 * and the socket readable; retrying at once would spin */
		if (!h->ctl_starved)
			log_warn("control: accept: not accepting for a while");
		h->ctl_starved = 1;
		ev_io_stop(loop, w);
		ev_timer_set(&h->ctl_retry_w, ACCEPT_RETRY, 0);
		ev_timer_start(loop, &h->ctl_retry_w);
		return;
	}
}

static void
accept_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct hub *h = w->data;

	(void)revents;
	spare_take(h);
	ev_io_start(loop, &h->ctl_w);
	accept_cb(loop, &h->ctl_w, EV_READ);	/* at once: also sees the queue empty */
}

int
control_init(struct hub *h, const struct control_ops *ops)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = h->conf.control_path;
	struct stat st;
	mode_t old;
	int fd;

	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >= sizeof(sun.sun_path)) {
		log_warnx("control socket path too long: %s", path);
		return -1;
	}
	/* its directory exists: the lock beside it was made first (hubd.c) */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
		log_warn("control: socket");
		return -1;
	}
	/* Anything but a socket at the path is somebody's file: refused. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		log_warnx("%s exists and is not a socket: refusing to remove it "
			  "(remove it yourself, or set [hub] control)", path);
		close(fd);
		return -1;
	}
	/* A socket nobody answers on is stale: replace it. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		log_warnx("control socket %s is in use by another process", path);
		close(fd);
		return -1;
	}
	if (errno == ECONNREFUSED)
		unlink(path);
	old = umask(0117);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		log_warn("control: bind %s", path);
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	if (chmod(path, 0660) != 0 || listen(fd, 64) != 0 ||
	    (h->conf.gid >= 0 && chown(path, (uid_t)-1, (gid_t)h->conf.gid) != 0)) {
		log_warn("control: %s", path);
		close(fd);
		unlink(path);
		return -1;
	}
	handlers = ops;
	h->ctl_fd = fd;
	ev_io_init(&h->ctl_w, accept_cb, fd, EV_READ);
	h->ctl_w.data = h;
	ev_timer_init(&h->ctl_retry_w, accept_retry_cb, ACCEPT_RETRY, 0);
	h->ctl_retry_w.data = h;
	spare_take(h);
	ev_io_start(h->loop, &h->ctl_w);
	return 0;
}

int
control_regroup(struct hub *h, int64_t gid)
{
	const char *path = h->conf.control_path, *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;
	gid_t g = (gid_t)gid;

	/* unset: the group a file made there gets, as at bind (the
	 * directory's if it is set-group-ID, else hubd's) */
	if (gid < 0) {
		if (slash == NULL)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
				 path);
		g = stat(dir, &st) == 0 && (st.st_mode & S_ISGID) ? st.st_gid : getegid();
	}
	/* the socket bind made, never what a link there points to */
	if (lstat(path, &st) != 0)
		return -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = ENOTSOCK;
		return -1;
	}
	return lchown(path, (uid_t)-1, g);
}

void
control_close(struct hub *h)
{
	uint64_t end = hp_now_ns() + FINAL_WRITE_MS * HP_NS_PER_MS, now;

	/* hubd is going: what its clients were told last (a call's end: "the
	 * hub is stopping") goes out first, for FINAL_WRITE_MS at most in
	 * all, so that a client that does not read cannot hold the exit up */
	for (struct client *c = h->clients; c != NULL; c = c->next) {
		struct pollfd pfd = { c->fd, POLLOUT, 0 };
		ssize_t n;

		while (client_unsent(c) > 0 && (now = hp_now_ns()) < end &&
		       poll(&pfd, 1, (int)((end - now) / HP_NS_PER_MS) + 1) == 1 &&
		       (n = send(c->fd, c->out + c->outpos, client_unsent(c),
				 MSG_NOSIGNAL | MSG_DONTWAIT)) > 0)
			c->outpos += (size_t)n;
	}
	while (h->clients != NULL)
		client_close(h->clients);
	ev_io_stop(h->loop, &h->ctl_w);
	ev_timer_stop(h->loop, &h->ctl_retry_w);
	close(h->ctl_fd);
	if (h->ctl_spare >= 0)
		close(h->ctl_spare);
	h->ctl_spare = -1;
	unlink(h->conf.control_path);
}
