/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Slot pools (r[shm.slot.*]): a free bitmap (1 = free) then slots whose
 * first 4 bytes are a generation counter, payload from byte 4. */
#ifndef HP_SLOT_H
#define HP_SLOT_H

#include <stdint.h>

#include "proto/layout.h"

struct hp_slot_pool {
	hp_atomic_u64	*bitmap;	/* nwords words */
	uint8_t		*slots;		/* nslots * slot_size bytes */
	uint32_t	nslots;
	uint32_t	slot_size;
	uint32_t	nwords;
	uint32_t	hint;		/* word to start the next scan at */
};

/* Size of the bitmap header, padded to 64 (r[shm.slot.pool-header-size]). */
uint64_t hp_slot_pool_header_size(uint32_t nslots);

/* Describes the pool at base (header then slots); touches nothing. */
void hp_slot_pool_view(struct hp_slot_pool *pool, uint8_t *base,
		       uint32_t nslots, uint32_t slot_size);

/* Marks every slot free (creation and recovery); generations are kept so a
 * stale descriptor can never match a reused slot. */
void hp_slot_pool_reset(struct hp_slot_pool *pool);

/* r[shm.slot.allocate]: claims a free slot, bumps its generation and returns
 * its index and new generation. -EAGAIN when none is free
 * (r[shm.slot.exhaustion]: the caller waits). */
int hp_slot_alloc(struct hp_slot_pool *pool, uint32_t *index, uint32_t *generation);

/* Payload area of a slot (slot_size - 4 bytes). index must be valid. */
uint8_t *hp_slot_payload(const struct hp_slot_pool *pool, uint32_t index);

/* r[shm.slot.free]: returns a slot to the pool. -EINVAL for a bad index,
 * -EALREADY when it was already free (double free; nothing changes). */
int hp_slot_free(struct hp_slot_pool *pool, uint32_t index);

/* Frees several slots of one bitmap word with a single atomic OR (batch
 * frees). 0 when all were in use; -EALREADY when some were already free
 * (double frees: the others are freed, *already, when not NULL, gets the
 * bits that were free); -EINVAL for a bad word or bits past the last slot
 * (nothing changes). The double-free bits come back through *already, not
 * the return value, so that bit 63 cannot read as a negative error. */
int hp_slot_free_mask(struct hp_slot_pool *pool, uint32_t word, uint64_t mask,
		      uint64_t *already);

/* Receiver's check of a slot payload named by a descriptor: index in range,
 * slot in use, generation equal (r[shm.slot.generation]), offset + len
 * inside the payload area without overflow (r[shm.slot.payload-offset]).
 * On success *payload points at the bytes. -EPROTO otherwise, *rule naming
 * the rule that was broken. */
int hp_slot_check(const struct hp_slot_pool *pool, uint32_t index,
		  uint32_t generation, uint32_t offset, uint32_t len,
		  const uint8_t **payload, const char **rule);

/* How many slots are free now (inspection, tests, leak checks). */
uint32_t hp_slot_count_free(const struct hp_slot_pool *pool);

#endif
