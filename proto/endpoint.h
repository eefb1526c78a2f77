/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* One end of a guest-host pair: the ring it produces, the ring it consumes,
 * the slot pool it sends from, the peer's pool it receives from, and the
 * wake protocol between them. hubd keeps one per guest, libguest one.
 *
 * Wake protocol (extension HP_FEAT_WAITERS, after blitz's sleepy/sleeping
 * handshake): an end that found nothing to do spins briefly, yields, then
 * announces what it waits for in its own waiter word, issues a full fence,
 * checks once more, and only then sleeps in poll() on its doorbell. The
 * other end, after each event (publish, consume, slot free, credit grant),
 * issues a full fence and reads that word; it writes the doorbell only when
 * the matching bit is set, clearing the word as it does (compare-and-swap
 * to 0): the sleeper is awake from that byte on, and the events after it
 * ring nothing until it announces again, as each sleep does. Either the
 * sleeper's re-check sees the event or the waker sees the bit
 * (store-fence-load on both sides), and a doorbell byte stays until read,
 * so no wake is lost; while both ends are busy no syscall is made, and a
 * batch of messages to a sleeper costs one byte. Without the extension
 * on both sides, each end follows the plain spec (r[shm.wakeup.*]): hubd
 * futex_wakes the word a spec-only guest waits on; libguest under a host
 * that does not offer it futex-waits
 * on the word the spec names (bounded, so a wake the host never makes
 * costs latency, not a hang) and wakes the host with futex_wake on that
 * word plus a doorbell byte (r[shm.doorbell.ring-integration]). */
#ifndef HP_ENDPOINT_H
#define HP_ENDPOINT_H

#include <poll.h>
#include <stdint.h>

#include "proto/desc.h"
#include "proto/doorbell.h"
#include "proto/peer.h"
#include "proto/ring.h"
#include "proto/segment.h"
#include "proto/slot.h"

#define HP_STAGE_MAX	32	/* descriptors published per head store at most */

struct hp_endpoint_stats {
	uint64_t	sent;		/* messages published */
	uint64_t	received;
	uint64_t	bytes_sent;	/* payload bytes */
	uint64_t	bytes_received;
	uint64_t	ring_full;	/* sends refused: ring full */
	uint64_t	slot_exhausted;	/* sends refused: no slot */
	uint64_t	wakes;		/* doorbell writes and futex wakes issued */
	uint64_t	sleeps;		/* times this end slept in hp_endpoint_wait */
};

struct hp_wait_group;

/* A wait is long when it spun and its condition came (or its time ran
 * out) over HP_WAIT_LONG_NS after it began: well past the spin and the
 * yields (70 us), so that no spin would have caught it. After
 * HP_WAIT_OUTLASTED long waits in a row an endpoint's waits sleep at
 * once, all but one in HP_WAIT_PROBE, which spins again to see whether
 * its peer is quick once more; a wait that spun and was not long, or
 * whose condition held at its first look, ends the run. A wait that slept
 * at once leaves it be: its length holds its own wake. A peer that
 * answers in hundreds of microseconds (a call across hosts, a request
 * now and then) gains nothing from the spin, and the process this one
 * woke waits for its CPU or lands on an idle one meanwhile
 * (doc/performance.md, "Spin only where it pays"). */
#define HP_WAIT_LONG_NS		200000
#define HP_WAIT_OUTLASTED	2
#define HP_WAIT_PROBE		8

struct hp_endpoint {
	int			side;		/* HP_SIDE_*: this end */
	int			wake_yield;	/* steps aside after a wake (a guest
						 * process: see wake_peer) */
	struct hp_wait_group	*group;		/* sleeps with these, NULL: alone */
	int			hung;		/* in a group: its doorbell hung up */
	int			woke;		/* its last wait slept and was woken */
	int			rang;		/* woke the peer since it last waited
						 * (wake_peer) */
	int			sleep_first;	/* hint: after quiet, its next wait
						 * sleeps at once (a call to, or an
						 * answer for, another guest through
						 * the host: wait.c) */
	uint64_t		wait_began_ns;	/* when its last wait began */
	unsigned		outlasted;	/* its long waits in a row, and its */
	unsigned		since_probe;	/* waits at once since the last that
						 * spun: HP_WAIT_OUTLASTED */
	int			wake_fd;	/* readable: also ends hp_endpoint_wait's
						 * sleep (drained), -1: none */
	struct hp_ring		tx;
	struct hp_ring		rx;
	struct hp_slot_pool	tx_pool;	/* payloads this end sends */
	struct hp_slot_pool	rx_pool;	/* payloads it receives and frees */
	struct hp_varpool	*var;		/* the shared variable pool, when both
						 * ends use it: then every payload
						 * that is not inline goes there */
	uint32_t		var_peer;	/* the guest's id: owner of what this
						 * end sends and receives */
	int			var_asked;	/* rang the host to grow the pool */
	uint32_t		var_spare;	/* slots per class what this end
						 * sends leaves free (the host's
						 * copies: hp_var_alloc_spare) */
	struct hp_desc_limits	lim;		/* what received descriptors obey */
	hp_atomic_u32		*my_waits;	/* NULL: no waiter words */
	hp_atomic_u32		*their_waits;
	int			peer_waiters;	/* the peer honours HP_FEAT_WAITERS */
	hp_atomic_u32		*legacy_words[4]; /* the peer's futex words per HP_WAIT_* bit */
	hp_atomic_u32		*sleep_words[4]; /* ours, when the peer has no waiter words */
	hp_atomic_u32		*credit_word;	/* granted_total an HP_WAIT_CREDIT wait is for */
	hp_atomic_u32		*awake;		/* a guest's header.awake (hubd writes
						 * it), NULL: no waiter words */
	hp_atomic_u32		*awake_flag;	/* the guest's own: hubd counts it */
	uint32_t		ncpus;		/* CPUs this process may run on */
	int			doorbell;
	int			bell_in;	/* HP_FEAT_BELLS: the peer rings this
						 * (polled and drained with the
						 * doorbell), -1: none */
	int			bell_out;	/* and we ring this, -1: the doorbell */
	uint8_t			*tx_cls;	/* the host's, ring size long: per
						 * place of tx, the class + 1 of the
						 * variable slot it published there,
						 * 0 none (NULL: not kept) */
	struct hp_desc		stage[HP_STAGE_MAX];	/* written, unpublished */
	uint32_t		staged;
	struct hp_desc		inbox[HP_STAGE_MAX];	/* dequeued, not yet handed out */
	uint32_t		inbox_pos;
	uint32_t		inbox_len;
	uint32_t		free_word;	/* batched frees into rx_pool */
	uint64_t		free_mask;
	struct hp_endpoint_stats stats;
};

/* Endpoints one process sleeps on together (a guest's hub endpoint and
 * its lanes, HP_FEAT_LANES): a sleep announces the awaited bits on the
 * endpoint waited on and on every other, HP_WAIT_RING_DATA on all, and polls
 * every doorbell. ep[0] is the hub's: its hang-up is -EPIPE; another's
 * is only noted (its hung) and its doorbell left out of polls from then
 * on. */
#define HP_GROUP_MAX	65
#define HP_GROUP_BELLS	320	/* other descriptors a sleep ends on: a
				 * guest's subscriptions' bells (64), and its
				 * block subscribers' (guestlib/topics.c) */
struct hp_wait_group {
	struct hp_endpoint	*ep[HP_GROUP_MAX];
	uint32_t		n;
	struct hp_fdq		fdq;	/* descriptors the hub's doorbell carried */
	/* Just before a sleep, after the last look: nonzero if something
	 * came after all (the sleep is skipped). */
	int			(*on_sleep)(void *arg);
	void			*on_sleep_arg;
	/* Doorbells that are no endpoint's (topics' bells, proto/topic.h):
	 * a sleep ends when one rings and drains it; one that hung up is
	 * left out from then on (-1). */
	int			bell[HP_GROUP_BELLS];
	uint32_t		nbells;
	uint32_t		bells_hung;	/* bells left out so far, ever */
};

/* Adds ep (0, -ENOSPC) or takes it out of g. */
int hp_group_add(struct hp_wait_group *g, struct hp_endpoint *ep);
void hp_group_remove(struct hp_wait_group *g, struct hp_endpoint *ep);
/* Whether ep's doorbell hung up (its peer is gone). */
int hp_group_hung(const struct hp_endpoint *ep);
/* Adds a bell (0, -ENOSPC) or takes it out (by its fd). */
int hp_group_bell_add(struct hp_wait_group *g, int fd);
void hp_group_bell_remove(struct hp_wait_group *g, int fd);

/* Sleeps on ep's doorbell (its group's doorbells) and kick (-1: none) up
 * to ms (-1: forever), draining what rang: 1 woken, 0 timed out, -EPIPE
 * when the hub's doorbell hung up, or poll's -errno. */
int hp_endpoint_sleep(struct hp_endpoint *ep, int kick, int ms);
/* The same in three steps, for a process whose other threads change the
 * group while it sleeps (libguest on microthreads): prepare and finish
 * under its lock, the poll without: 1 woken, 0 timed out, -errno; then
 * finish: 0, or -EPIPE. */
struct hp_sleep {
	struct pollfd		pfd[2 * HP_GROUP_MAX + 1 + HP_GROUP_BELLS];	/* doorbells,
							 * their bell_in, kick,
							 * then other bells */
	struct hp_endpoint	*ep[HP_GROUP_MAX];
	uint32_t		n;
	uint32_t		nbells;
};
void hp_endpoint_sleep_prepare(struct hp_endpoint *ep, int kick, struct hp_sleep *s);
int hp_sleep_poll(struct hp_sleep *s, int ms);
int hp_endpoint_sleep_finish(struct hp_endpoint *ep, const struct hp_sleep *s);
/* Drains ep's doorbell and bell (its group's) where they rang, after one
 * poll of them all: 0 or -EPIPE as above. The group's other bells
 * (topics') are left to whoever sleeps on them (hp_endpoint_sleep). */
int hp_endpoint_drain(struct hp_endpoint *ep);
/* The same, and the group's other bells too: for a loop that polls them
 * all itself (libguest's guest_fd) and so never drains them in a sleep;
 * a bell left rung keeps that loop awake. */
int hp_endpoint_drain_all(struct hp_endpoint *ep);

/* The index of an HP_WAIT_* bit in legacy_words and sleep_words. */
static inline int
hp_wait_bit_index(uint32_t bit)
{
	return __builtin_ctz(bit);
}

/* The host's end for guest peer_id; doorbell is the host's socket end.
 * guest_features: what the guest announced in its PeerEntry; var: the
 * shared pool the host lets it use (NULL: none). */
int hp_endpoint_init_host(struct hp_endpoint *ep, struct hp_segment *seg,
			  const struct hp_peer_view *v, int doorbell,
			  uint32_t guest_features, struct hp_varpool *var);
/* The guest's end. Announces HP_FEAT_WAITERS, HP_FEAT_VARSLOT and
 * HP_FEAT_LANES when the host offers them and use has them (HP_FEAT_ALL
 * for the first two); HP_FEAT_BELLS too, with waiter words, when the host
 * offers it and bells (the ticket's: [0] read, [1] rung) is not NULL.
 * The host's end rings a guest's bell once it announced HP_FEAT_BELLS:
 * its owner sets bell_out. */
int hp_endpoint_init_guest(struct hp_endpoint *ep, struct hp_segment *seg,
			   const struct hp_peer_view *v, int doorbell, const int *bells,
			   uint32_t use);

#define HP_SEND_MORE	0x1	/* more follow: stage, publish on a later send or flush */

/* Sends a message with len payload bytes (inline when <= 32, else copied to
 * a slot). -EAGAIN when the ring is full or no slot is free (nothing sent:
 * wait for HP_WAIT_RING_SPACE or HP_WAIT_SLOT), -EMSGSIZE when len is over
 * max_payload_size, -EPROTO when the peer corrupted the ring. */
int hp_endpoint_send(struct hp_endpoint *ep, uint8_t type, uint32_t id,
		     uint64_t method_id, const void *payload, uint32_t len,
		     int flags);

/* Zero-copy send: reserve room for up to len bytes, write them at buf,
 * commit the length actually written (<= len). */
struct hp_outbuf {
	uint8_t		*buf;
	uint32_t	cap;
	uint32_t	slot;		/* HP_SLOT_INLINE: buf is inl */
	uint32_t	generation;
	uint8_t		inl[HP_INLINE_MAX];
};
int hp_endpoint_reserve(struct hp_endpoint *ep, uint32_t len, struct hp_outbuf *ob);
int hp_endpoint_commit(struct hp_endpoint *ep, struct hp_outbuf *ob, uint8_t type,
		       uint32_t id, uint64_t method_id, uint32_t len, int flags);
/* Gives back a reservation that will not be sent. */
void hp_endpoint_unreserve(struct hp_endpoint *ep, struct hp_outbuf *ob);

/* Host: sends a variable slot it holds (taken from a received message
 * with hp_endpoint_take) on to this end's guest, without copying: the
 * guest becomes its owner. -EAGAIN when the ring is full (the slot stays
 * the host's), -ESTALE when the slot is no longer the host's. */
int hp_endpoint_send_var(struct hp_endpoint *ep, uint32_t slot, uint32_t gen,
			 uint32_t len, uint8_t type, uint32_t id, uint64_t method_id,
			 int flags);

/* Publishes staged descriptors (one head store) and wakes the peer if it
 * sleeps. 0, -EAGAIN if the ring is full (some stay staged), -EPROTO. */
int hp_endpoint_flush(struct hp_endpoint *ep);

/* A received message: a validated copy of the descriptor and its payload.
 * payload points into desc (inline) or into the peer's slot, so the struct
 * must not be copied while in use; release it when done. */
struct hp_msg_in {
	struct hp_desc	desc;
	const uint8_t	*payload;
	uint32_t	len;
	struct hp_varpool *var;		/* the pool a variable slot of it is in */
};

/* 0 with *m filled, -EAGAIN when nothing is there, -EPROTO when the peer
 * broke a rule (*rule names it; the pair is then beyond repair). */
int hp_endpoint_recv(struct hp_endpoint *ep, struct hp_msg_in *m, const char **rule);
/* The type (HP_MSG_*, not validated yet) of the message recv would return
 * next, without taking it; -EAGAIN when there is none, -EPROTO. */
int hp_endpoint_peek(struct hp_endpoint *ep);
/* Frees the message's slot (batched per bitmap word, r[shm.slot.free]). */
void hp_endpoint_release(struct hp_endpoint *ep, struct hp_msg_in *m);
/* Takes a received message's variable slot out of it, so that release
 * leaves it alone: 1 with *slot and *gen, 0 when its payload is not in
 * a variable slot. */
int hp_endpoint_take(struct hp_msg_in *m, uint32_t *slot, uint32_t *gen);

/* What the host handed the guest in variable slots that the guest has not
 * taken yet (published places its tail has not passed, and staged ones),
 * from the host's own record (tx_cls; nothing without one, or when the
 * guest's tail is out of range): the guest's tail picks the places, at
 * most the ring's length, but what each held is the host's to say. */
void hp_endpoint_unread_var(struct hp_endpoint *ep, uint32_t *slots, uint64_t *bytes);

/* Publishes the batched slot frees (one atomic OR) and wakes the peer if it
 * waits for a slot. Ring-tail progress is published by hp_endpoint_recv as
 * it dequeues, with its wake; nothing here touches the ring. */
void hp_endpoint_notify_consumed(struct hp_endpoint *ep);

/* The peer may be waiting for credit on a channel this end receives: wake
 * it if it said so, or, the host serving a spec-only guest, futex_wake
 * granted_total (r[shm.wakeup.credit-wait]). The grant itself is
 * hp_chan_grant. */
void hp_endpoint_notify_credit(struct hp_endpoint *ep, hp_atomic_u32 *granted_total);

/* Sleep announcement, for an end that sleeps in its own event loop (hubd):
 * announce, then re-check everything, then sleep on the doorbell; cancel on
 * waking. hp_endpoint_wait does the whole dance for a blocking caller. */
void hp_endpoint_announce(struct hp_endpoint *ep, uint32_t waits);
void hp_endpoint_cancel(struct hp_endpoint *ep);
/* Whether ep (or its group) woke its peer since the last call: a guest
 * then yields once before it spins (wake_peer says why). Clears it. */
int hp_endpoint_take_rang(struct hp_endpoint *ep);

/* Crowding (HP_FEAT_WAITERS): how many of the hub's processes are not
 * asleep. While they outnumber this process's CPUs, spinning only keeps
 * the peer it waits for off a CPU, so a waiter yields instead. A guest
 * raises its own flag (hp_peer_ext.guest_awake) from attach until it
 * sleeps, again when it wakes, and clears it once detached; hubd sums the
 * flags of its guests and itself and writes the count into each guest's
 * header.awake. A hint only, and each guest's copy is its own: a guest
 * that writes nonsense there misleads nobody but itself. */
void hp_endpoint_set_awake(struct hp_endpoint *ep, int awake);
int hp_endpoint_crowded(const struct hp_endpoint *ep);
/* hubd: whether a guest's flag says it is awake. */
int hp_awake_flag(const struct hp_peer_view *v);
/* hubd: the hub's count into one guest's header. */
void hp_awake_publish(struct hp_segment *seg, uint32_t count);
/* CPUs this process may run on (its affinity mask). */
uint32_t hp_cpus_usable(void);

/* wait.c: progressive wait until ready(arg) returns nonzero: spin (only while the
 * hub's processes fit the CPUs), yield, announce waits, re-check, poll the
 * doorbell. 1 when ready, 0 on timeout (ms, -1
 * forever), -EPIPE when the peer's doorbell end closed, or ready()'s
 * negative value. */
int hp_endpoint_wait(struct hp_endpoint *ep, uint32_t waits,
		     int (*ready)(void *arg), void *arg, int timeout_ms);

/* Conditions for hp_endpoint_wait. */
int hp_endpoint_rx_ready(void *ep);
int hp_endpoint_tx_ready(void *ep);
/* Room in the ring for one more descriptor (no slot looked at). */
int hp_endpoint_tx_room(void *ep);

#endif
