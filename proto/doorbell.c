/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Doorbells (doorbell.h). */
#include <errno.h>
#include <stdint.h>
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
