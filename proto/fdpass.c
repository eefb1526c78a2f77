/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* File descriptors over a UNIX stream socket (fdpass.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/fdpass.h"

ssize_t
hp_fdpass_send(int sock, const void *buf, size_t len, const int *fds, uint32_t n)
{
	union {
		struct cmsghdr	align;
		char		buf[CMSG_SPACE(sizeof(int) * HP_FDPASS_MAX)];
	} u;
	struct iovec iov = { (void *)(uintptr_t)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t r;

	if (n > HP_FDPASS_MAX || len == 0)
		return -EINVAL;
	if (n > 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	do
		r = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

ssize_t
hp_fdpass_recv(int sock, void *buf, size_t cap, int *fds, uint32_t max, uint32_t *nfds)
{
	union {
		struct cmsghdr	align;
		char		buf[CMSG_SPACE(sizeof(int) * 253)];
	} u;
	struct iovec iov = { buf, cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t r;

	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return r;
}
