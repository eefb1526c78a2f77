/* Doorbells (doorbell.h). */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
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

int
hp_doorbell_drain(int fd)
{
	char buf[64];
	ssize_t n;

	for (;;) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
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
hp_doorbell_wait(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	/* r[shm.doorbell.wait] */
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	if (pfd.revents & POLLNVAL)
		return -EBADF;
	/* Hang-up wins over pending bytes: the peer is gone either way. */
	if (pfd.revents & (POLLHUP | POLLERR))
		return -EPIPE;
	return (rc = hp_doorbell_drain(fd)) < 0 ? rc : 1;
}
