/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Single-producer single-consumer descriptor rings (r[shm.ring.*]).
 *
 * Each side keeps its own index in a local copy and treats that copy as the
 * truth; the other side's index is read from shared memory, checked to be in
 * [0, ring_size) and otherwise reported as -EPROTO. A hostile peer can make
 * the ring look full or empty, never make us read or write outside it. */
#ifndef HP_RING_H
#define HP_RING_H

#include <stdint.h>

#include "proto/layout.h"

struct hp_ring {
	hp_atomic_u32	*head;		/* written by the producer */
	hp_atomic_u32	*tail;		/* written by the consumer */
	struct hp_desc	*descs;		/* size descriptors */
	uint32_t	size;		/* power of two */
	uint32_t	mask;
	uint32_t	mine;		/* producer: head; consumer: tail */
	uint32_t	theirs;		/* last value read of the other index */
};

/* Producer side: mine = current head. -EINVAL if size is not a power of two
 * from 2 to 2^30; -EPROTO if the shared head or tail is out of range. */
int hp_ring_init_producer(struct hp_ring *r, hp_atomic_u32 *head,
			  hp_atomic_u32 *tail, struct hp_desc *descs,
			  uint32_t size);
/* Consumer side: mine = current tail. Same errors. */
int hp_ring_init_consumer(struct hp_ring *r, hp_atomic_u32 *head,
			  hp_atomic_u32 *tail, struct hp_desc *descs,
			  uint32_t size);

/* Free places now (r[shm.ring.capacity]: at most size - 1 in all). Reads the
 * consumer's tail; -EPROTO if it is out of range. */
int hp_ring_space(struct hp_ring *r);
/* Descriptors ready now; reads the producer's head; -EPROTO if out of range. */
int hp_ring_available(struct hp_ring *r);

/* Copies d into the ring and publishes it. -EAGAIN when full (r[shm.ring.full]:
 * backpressure, not an error), -EPROTO on a corrupt tail. */
int hp_ring_enqueue(struct hp_ring *r, const struct hp_desc *d);
/* Publishes up to n descriptors with one head store; returns how many went
 * in (0 when full) or -EPROTO. */
int hp_ring_enqueue_batch(struct hp_ring *r, const struct hp_desc *d, uint32_t n);

/* Copies the next descriptor out into *d and releases its place. -EAGAIN
 * when empty, -EPROTO on a corrupt head. */
int hp_ring_dequeue(struct hp_ring *r, struct hp_desc *d);
/* Copies out up to n descriptors, releasing them with one tail store;
 * returns how many (0 when empty) or -EPROTO. */
int hp_ring_dequeue_batch(struct hp_ring *r, struct hp_desc *d, uint32_t n);

/* Empties the ring (r[shm.crash.recovery] 3): head = tail = 0 with relaxed
 * stores while the other side is gone, the caller publishing them; local
 * state reset. (hubd's recovery clears the index words itself.) */
void hp_ring_reset(struct hp_ring *r);

#endif
