/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* SPSC descriptor rings (ring.h). */
#include <errno.h>
#include <string.h>

#include "proto/ring.h"

static int
ring_init(struct hp_ring *r, hp_atomic_u32 *head, hp_atomic_u32 *tail,
	  struct hp_desc *descs, uint32_t size)
{
	if (size < 2 || size > (1u << 30) || (size & (size - 1)) != 0)
		return -EINVAL;
	r->head = head;
	r->tail = tail;
	r->descs = descs;
	r->size = size;
	r->mask = size - 1;
	return 0;
}

int
hp_ring_init_producer(struct hp_ring *r, hp_atomic_u32 *head, hp_atomic_u32 *tail,
		      struct hp_desc *descs, uint32_t size)
{
	int rc;

	if ((rc = ring_init(r, head, tail, descs, size)) != 0)
		return rc;
	r->mine = hp_load_relaxed_u32(head);
	/* acquire: pairs with the consumer's release store of tail in
	 * hp_ring_dequeue_batch */
	r->theirs = hp_load_acquire_u32(tail);
	if (r->mine >= size || r->theirs >= size)
		return -EPROTO;
	return 0;
}

int
hp_ring_init_consumer(struct hp_ring *r, hp_atomic_u32 *head, hp_atomic_u32 *tail,
		      struct hp_desc *descs, uint32_t size)
{
	int rc;

	if ((rc = ring_init(r, head, tail, descs, size)) != 0)
		return rc;
	r->mine = hp_load_relaxed_u32(tail);
	/* acquire: pairs with the producer's release store of head in
	 * hp_ring_enqueue_batch */
	r->theirs = hp_load_acquire_u32(head);
	if (r->mine >= size || r->theirs >= size)
		return -EPROTO;
	return 0;
}

/* r[shm.ring.capacity]: full is (head + 1) % size == tail, so at most
 * size - 1 descriptors are in the ring. */
static uint32_t
free_places(const struct hp_ring *r)
{
	return (r->theirs - r->mine - 1) & r->mask;
}

static uint32_t
ready_places(const struct hp_ring *r)
{
	return (r->theirs - r->mine) & r->mask;
}

/* Re-reads the consumer's tail; a value outside the ring is a protocol
 * error and is never used as an index. */
static int
load_tail(struct hp_ring *r)
{
	/* acquire: pairs with the consumer's release store of tail in
	 * hp_ring_dequeue_batch, so its copies of those descriptors are
	 * taken before we overwrite their places */
	uint32_t t = hp_load_acquire_u32(r->tail);

	if (t >= r->size)
		return -EPROTO;
	r->theirs = t;
	return 0;
}

static int
load_head(struct hp_ring *r)
{
	/* acquire: pairs with the producer's release store of head in
	 * hp_ring_enqueue_batch, making the descriptors it wrote visible
	 * (r[shm.ordering.ring-consume] 1-2) */
	uint32_t h = hp_load_acquire_u32(r->head);

	if (h >= r->size)
		return -EPROTO;
	r->theirs = h;
	return 0;
}

int
hp_ring_space(struct hp_ring *r)
{
	int rc;

	if ((rc = load_tail(r)) != 0)
		return rc;
	return (int)free_places(r);
}

int
hp_ring_available(struct hp_ring *r)
{
	int rc;

	if ((rc = load_head(r)) != 0)
		return rc;
	return (int)ready_places(r);
}

int
hp_ring_enqueue_batch(struct hp_ring *r, const struct hp_desc *d, uint32_t n)
{
	uint32_t room = free_places(r), i;
	int rc;

	if (room < n) {
		/* the cached tail says full: look again (r[shm.ring.full]) */
		if ((rc = load_tail(r)) != 0)
			return rc;
		room = free_places(r);
	}
	if (n > room)
		n = room;
	for (i = 0; i < n; i++)
		memcpy(&r->descs[(r->mine + i) & r->mask], &d[i], sizeof(*d));
	if (n == 0)
		return 0;
	r->mine = (r->mine + n) & r->mask;
	/* r[shm.ordering.ring-publish]: release: the descriptors (and the
	 * payloads written before them) are visible before the new head;
	 * pairs with the consumer's acquire load of head in load_head
	 * (and hp_ring_init_consumer) */
	hp_store_release_u32(r->head, r->mine);
	return (int)n;
}

int
hp_ring_enqueue(struct hp_ring *r, const struct hp_desc *d)
{
	int n = hp_ring_enqueue_batch(r, d, 1);

	return n < 0 ? n : n == 1 ? 0 : -EAGAIN;
}

int
hp_ring_dequeue_batch(struct hp_ring *r, struct hp_desc *d, uint32_t n)
{
	uint32_t ready = ready_places(r), i;
	int rc;

	if (ready < n) {
		if ((rc = load_head(r)) != 0)
			return rc;
		ready = ready_places(r);
	}
	if (n > ready)
		n = ready;
	for (i = 0; i < n; i++)
		memcpy(&d[i], &r->descs[(r->mine + i) & r->mask], sizeof(*d));
	if (n == 0)
		return 0;
	r->mine = (r->mine + n) & r->mask;
	/* r[shm.ordering.ring-consume] 4: release: our copies are taken
	 * before the producer may overwrite the places; pairs with the
	 * producer's acquire load of tail in load_tail (and
	 * hp_ring_init_producer) */
	hp_store_release_u32(r->tail, r->mine);
	return (int)n;
}

int
hp_ring_dequeue(struct hp_ring *r, struct hp_desc *d)
{
	int n = hp_ring_dequeue_batch(r, d, 1);

	return n < 0 ? n : n == 1 ? 0 : -EAGAIN;
}

void
hp_ring_reset(struct hp_ring *r)
{
	/* relaxed: the caller publishes these (ring.h) */
	hp_store_relaxed_u32(r->head, 0);
	hp_store_relaxed_u32(r->tail, 0);
	r->mine = 0;
	r->theirs = 0;
}
