/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Doorbells (r[shm.doorbell.*]): a SOCK_STREAM socketpair per guest, for
 * wake-ups that an event loop can poll and for instant death detection. */
#ifndef HP_DOORBELL_H
#define HP_DOORBELL_H

/* r[shm.doorbell.socketpair]: fds[0] host end, fds[1] guest end. Both are
 * close-on-exec and non-blocking; the spawner makes the guest's end
 * inheritable in that child only (dup2 clears the flag). */
int hp_doorbell_pair(int fds[2]);

/* r[shm.doorbell.signal]: writes one byte. A full socket already holds a
 * pending signal, so -EAGAIN counts as success. -EPIPE if the peer is gone. */
int hp_doorbell_signal(int fd);

/* Reads every pending byte. 0, or -EPIPE when the peer has closed its end
 * (r[shm.doorbell.death]). */
int hp_doorbell_drain(int fd);

/* r[shm.doorbell.wait]: waits up to timeout_ms (-1: forever) for a signal,
 * draining it. 1 signalled, 0 timed out, -EPIPE peer gone, -EBADF for an
 * fd that is not open, or poll's -errno (-EINTR). */
int hp_doorbell_wait(int fd, int timeout_ms);
/* The same, also woken (1) by kick, a non-blocking eventfd that is read
 * then (-1: none): another thread of the same process wants the waiter. */
int hp_doorbell_wait_or(int fd, int kick, int timeout_ms);

#endif
