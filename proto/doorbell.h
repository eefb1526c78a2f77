/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Doorbells (r[shm.doorbell.*]): a SOCK_STREAM socketpair per guest, for
 * wake-ups that an event loop can poll and for instant death detection. */
#ifndef HP_DOORBELL_H
#define HP_DOORBELL_H

#include <stdint.h>

/* r[shm.doorbell.socketpair]: fds[0] host end, fds[1] guest end. Both are
 * close-on-exec and non-blocking; the spawner makes the guest's end
 * inheritable in that child only (dup2 clears the flag). */
int hp_doorbell_pair(int fds[2]);

/* r[shm.doorbell.signal]: writes one byte. A full socket already holds a
 * pending signal, so -EAGAIN counts as success. -EPIPE if the peer is gone. */
int hp_doorbell_signal(int fd);

/* Reads every pending byte. 0, or -EPIPE when the peer has closed its end
 * (r[shm.doorbell.death]). Descriptors sent with a byte are closed. */
int hp_doorbell_drain(int fd);

/* Descriptors that came with doorbell bytes (HP_FEAT_LANES: hubd hands a
 * guest its lanes that way), oldest first. */
#define HP_FDQ_MAX	1024	/* five per lane, for every lane a guest may have,
				 * and what topics' messages bring (topics.h in
				 * hubd: at most 2 per subscriber of a topic it
				 * advertises); more than its doorbell's buffer
				 * holds at once */
struct hp_fdq {
	int		fd[HP_FDQ_MAX];
	uint32_t	n;
};

/* hp_doorbell_drain keeping the descriptors that came in q (NULL: closed;
 * beyond HP_FDQ_MAX: closed too, the taker then finds none). */
int hp_doorbell_drain_fds(int fd, struct hp_fdq *q);
/* The oldest descriptor in q, or -1. */
int hp_fdq_take(struct hp_fdq *q);
/* Closes what is left. */
void hp_fdq_clear(struct hp_fdq *q);
/* Sends one doorbell byte carrying n descriptors (SCM_RIGHTS), 1 to
 * HP_DOORBELL_FDS_MAX (a lane with bells: 5). */
#define HP_DOORBELL_FDS_MAX	8
int hp_doorbell_send_fds(int fd, const int *fds, int n);

/* Bells (HP_FEAT_BELLS): one-way wakes, cheaper than a doorbell byte (a
 * socket write and read cost 10-15 us more than these on a VM), each end
 * of each a file description of one process alone where it can be, so
 * that no guest can make hubd's reads or writes block by changing flags
 * on a description they share. The guest rings hubd on an eventfd (a
 * pipe would raise SIGPIPE in a guest whose hubd died); hubd rings the
 * guest on a pipe whose write end only hubd holds. The doorbell stays
 * for death, descriptors and hosts without bells.
 * hp_bells_make: host[0] the eventfd hubd reads, host[1] the pipe's end
 * hubd writes; guest[0] the pipe's end the guest reads, guest[1] the
 * eventfd the guest writes. All close-on-exec and non-blocking. */
int hp_bells_make(int host[2], int guest[2]);
/* Closes each of the n descriptors that is open (>= 0), leaving -1. */
void hp_fds_close(int *fds, int n);
/* Rings: 0, -EPIPE when nobody reads it any more, else -errno. A bell
 * that holds as much as it can holds a wake already (0). */
int hp_bell_ring(int fd);
/* Reads what rang, whatever the description's flags (RWF_NOWAIT): 1 if
 * something had, 0 if not, -EPIPE when a pipe's writer is gone (poll
 * would report it forever: stop polling it), else -errno. */
int hp_bell_drain(int fd);

/* r[shm.doorbell.wait]: waits up to timeout_ms (-1: forever) for a signal,
 * draining it. 1 signalled, 0 timed out, -EPIPE peer gone, -EBADF for an
 * fd that is not open, or poll's -errno (-EINTR). */
int hp_doorbell_wait(int fd, int timeout_ms);
/* Whether the other end of a UNIX stream socket (a doorbell, a control
 * client's connection) is closed both ways, not only shut down for
 * sending: poll reports POLLHUP only then. Never blocks. */
int hp_sock_hung_up(int fd);
/* The same, also woken (1) by kick, a non-blocking eventfd that is read
 * then (-1: none): another thread of the same process wants the waiter. */
int hp_doorbell_wait_or(int fd, int kick, int timeout_ms);

#endif
