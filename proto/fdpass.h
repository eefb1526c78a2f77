/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* File descriptors over a UNIX stream socket (SCM_RIGHTS): how hubd hands
 * the guests' memory to an inspector it trusts (root or its own user). */
#ifndef HP_FDPASS_H
#define HP_FDPASS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The most one message carries (the kernel's SCM_MAX_FD is 253). */
#define HP_FDPASS_MAX	250

/* Sends len bytes (at least 1) of buf with n fds (n <= HP_FDPASS_MAX,
 * kept open here). The bytes sent, or -errno (-EAGAIN on a full
 * non-blocking socket: nothing sent). */
ssize_t hp_fdpass_send(int sock, const void *buf, size_t len, const int *fds, uint32_t n);

/* Receives up to cap bytes, and the fds that came with them appended to
 * fds[*nfds], up to max in all (close-on-exec; any beyond max are
 * closed). The bytes read (0: end of stream), or -errno. */
ssize_t hp_fdpass_recv(int sock, void *buf, size_t cap, int *fds, uint32_t max,
		       uint32_t *nfds);

#endif
