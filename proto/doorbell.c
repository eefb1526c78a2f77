/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Doorbells (doorbell.h). */
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <string.h>
#include <unistd.h>

#include "proto/doorbell.h"

int
hp_doorbell_pair(int fds[2])
{
	/* r[shm.doorbell.socketpair] */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0)
		return -errno;
	return 0;
}

int
hp_doorbell_signal(int fd)
{
	static const char byte = 1;

	/* r[shm.doorbell.signal]: one byte; its value does not matter */
	for (;;) {
		if (send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;	/* full: a wake is pending already */
		return errno == EPIPE || errno == ECONNRESET ? -EPIPE : -errno;
	}
}

/* The descriptors a doorbell byte carried: into q while there is room,
 * else closed (nobody leaks a descriptor by sending many). */
static void
keep_fds(struct msghdr *msg, struct hp_fdq *q)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
		size_t n;
		int fd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (q != NULL && q->n < HP_FDQ_MAX)
				q->fd[q->n++] = fd;
			else
				close(fd);
		}
	}
}

int
hp_doorbell_drain_fds(int fd, struct hp_fdq *q)
{
	char buf[64];
	union {
		struct cmsghdr	h;
		char		space[CMSG_SPACE(sizeof(int) * HP_DOORBELL_FDS_MAX)];
	} cm;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg;
	ssize_t n;

	for (;;) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cm.space;
		msg.msg_controllen = sizeof(cm.space);
		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n > 0) {
			keep_fds(&msg, q);
			continue;
		}
		if (n == 0)
			return -EPIPE;	/* r[shm.doorbell.death] */
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		return errno == ECONNRESET ? -EPIPE : -errno;
	}
}

int
hp_doorbell_drain(int fd)
{
	return hp_doorbell_drain_fds(fd, NULL);
}

int
hp_fdq_take(struct hp_fdq *q)
{
	int fd;

	if (q->n == 0)
		return -1;
	fd = q->fd[0];
	memmove(q->fd, q->fd + 1, --q->n * sizeof(q->fd[0]));
	return fd;
}

void
hp_fdq_clear(struct hp_fdq *q)
{
	while (q->n > 0)
		close(q->fd[--q->n]);
}

int
hp_doorbell_send_fds(int fd, const int *fds, int n)
{
	static char byte = 1;
	union {
		struct cmsghdr	h;
		char		space[CMSG_SPACE(sizeof(int) * HP_DOORBELL_FDS_MAX)];
	} cm;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cm.space,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n) };
	struct cmsghdr *c;

	if (n < 1 || n > HP_DOORBELL_FDS_MAX)
		return -EINVAL;
	memset(&cm, 0, sizeof(cm));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	/* a full socket would refuse it: the byte and the fds go together
	 * or not at all, and the caller gives the lane up */
	if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		return -errno;
	return 0;
}

int
hp_doorbell_wait_or(int fd, int kick, int timeout_ms)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN },
				 { .fd = kick, .events = POLLIN } };
	uint64_t n;
	int rc;

	/* r[shm.doorbell.wait] */
	rc = poll(pfd, kick >= 0 ? 2 : 1, timeout_ms);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	if (pfd[0].revents & POLLNVAL)
		return -EBADF;
	/* Hang-up wins over pending bytes: the peer is gone either way. */
	if (pfd[0].revents & (POLLHUP | POLLERR))
		return -EPIPE;
	if (kick >= 0 && (pfd[1].revents & POLLIN) &&
	    read(kick, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return -errno;
	if (pfd[0].revents & POLLIN)
		return (rc = hp_doorbell_drain(fd)) < 0 ? rc : 1;
	return 1;
}

int
hp_doorbell_wait(int fd, int timeout_ms)
{
	return hp_doorbell_wait_or(fd, -1, timeout_ms);
}

int
hp_bells_make(int host[2], int guest[2])
{
	int efd, p[2];

	if ((efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
		int rc = -errno;

		close(efd);
		return rc;
	}
	host[0] = efd;
	host[1] = p[1];
	guest[0] = p[0];
	guest[1] = efd;
	return 0;
}

void
hp_fds_close(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int
hp_bell_ring(int fd)
{
	/* an eventfd takes 8 bytes, adding 1; a pipe takes them as they are */
	static const uint64_t one = 1;

	for (;;) {
		if (write(fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;	/* full: a wake is pending already */
		return errno == EPIPE ? -EPIPE : -errno;
	}
}

int
hp_bell_drain(int fd)
{
	uint64_t buf[8];
	struct iovec iov = { buf, sizeof(buf) };
	int rang = 0;

	for (;;) {
		/* RWF_NOWAIT: the other side may have cleared O_NONBLOCK on
		 * an eventfd it shares with us */
		ssize_t n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);

		if (n > 0) {
			rang = 1;
			if ((size_t)n < sizeof(buf))
				return 1;	/* all of it (a pipe may hold more) */
			continue;
		}
		if (n == 0)
			return -EPIPE;	/* a pipe's writer is gone */
		if (errno == EAGAIN)
			return rang;
		if (errno != EINTR)
			return -errno;
	}
}

int
hp_sock_hung_up(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP) != 0;
}
