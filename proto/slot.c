/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Slot pools (slot.h). */
#include <errno.h>

#include "proto/slot.h"

uint64_t
hp_slot_pool_header_size(uint32_t nslots)
{
	uint64_t words = ((uint64_t)nslots + 63) / 64;

	/* r[shm.slot.pool-header-size]: the bitmap padded to 64 bytes */
	return (words * 8 + HP_CACHE_LINE - 1) / HP_CACHE_LINE * HP_CACHE_LINE;
}

void
hp_slot_pool_view(struct hp_slot_pool *pool, uint8_t *base, uint32_t nslots,
		  uint32_t slot_size)
{
	/* r[shm.slot.pool-layout]: bitmap, then the slots */
	pool->bitmap = (hp_atomic_u64 *)(void *)base;
	pool->slots = base + hp_slot_pool_header_size(nslots);
	pool->nslots = nslots;
	pool->slot_size = slot_size;
	pool->nwords = (nslots + 63) / 64;
	pool->hint = 0;
}

/* Bits of word w that name real slots. */
static uint64_t
valid_bits(const struct hp_slot_pool *pool, uint32_t w)
{
	uint32_t rest = pool->nslots - w * 64;

	return rest >= 64 ? ~0ull : (1ull << rest) - 1;
}

void
hp_slot_pool_reset(struct hp_slot_pool *pool)
{
	for (uint32_t w = 0; w < pool->nwords; w++)
		/* release: pairs with the acquire of hp_slot_alloc's CAS
		 * on this word, which then finds the slots free */
		hp_store_release_u64(&pool->bitmap[w], valid_bits(pool, w));
	pool->hint = 0;
}

static hp_atomic_u32 *
generation(const struct hp_slot_pool *pool, uint32_t index)
{
	/* r[shm.slot.generation]: the first 4 bytes of the slot */
	return (hp_atomic_u32 *)(void *)(pool->slots + (uint64_t)index * pool->slot_size);
}

uint8_t *
hp_slot_payload(const struct hp_slot_pool *pool, uint32_t index)
{
	return pool->slots + (uint64_t)index * pool->slot_size + HP_SLOT_GEN_SIZE;
}

int
hp_slot_alloc(struct hp_slot_pool *pool, uint32_t *index, uint32_t *gen)
{
	for (uint32_t n = 0; n < pool->nwords; n++) {
		uint32_t w = (pool->hint + n) % pool->nwords;
		uint64_t bits = hp_load_relaxed_u64(&pool->bitmap[w]);
		int tries = 64;

		/* bits past the last slot are never handed out, even if a
		 * peer set them in the shared bitmap; and a peer flipping bits
		 * to make every CAS fail gets us to move on, not to spin */
		while ((bits & valid_bits(pool, w)) != 0 && tries-- > 0) {
			uint64_t bit = bits & valid_bits(pool, w);

			bit &= -bit;	/* lowest free */
			/* r[shm.slot.allocate] 2-3: CAS the bit from 1 to 0;
			 * its acquire pairs with the release OR in
			 * hp_slot_free_mask (or the release store in
			 * hp_slot_pool_reset), so the receiver is done with
			 * the old payload before we write a new one; its
			 * release half orders nothing we rely on */
			if (hp_cas_u64(&pool->bitmap[w], &bits, bits & ~bit)) {
				uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bit);

				pool->hint = w;
				/* 4: a new generation for the new payload;
				 * relaxed: published with the payload by the
				 * release store of head in
				 * hp_ring_enqueue_batch */
				*gen = hp_fetch_add_u32(generation(pool, i), 1,
							memory_order_relaxed) + 1;
				*index = i;
				return 0;
			}
			/* bits now holds the current word: try again */
		}
	}
	/* r[shm.slot.exhaustion]: backpressure, the caller waits */
	return -EAGAIN;
}

int
hp_slot_free_mask(struct hp_slot_pool *pool, uint32_t word, uint64_t mask,
		  uint64_t *already)
{
	uint64_t old;

	if (word >= pool->nwords || (mask & ~valid_bits(pool, word)) != 0)
		return -EINVAL;
	/* r[shm.slot.free]: atomic OR; release: pairs with the acquire of
	 * the sender's CAS in hp_slot_alloc, so our reads of the payloads
	 * happen before it may reuse the slots */
	old = hp_fetch_or_u64(&pool->bitmap[word], mask, memory_order_release);
	if (already != NULL)
		*already = old & mask;
	return (old & mask) != 0 ? -EALREADY : 0;
}

int
hp_slot_free(struct hp_slot_pool *pool, uint32_t index)
{
	if (index >= pool->nslots)
		return -EINVAL;
	return hp_slot_free_mask(pool, index / 64, 1ull << (index % 64), NULL);
}

int
hp_slot_check(const struct hp_slot_pool *pool, uint32_t index, uint32_t gen,
	      uint32_t offset, uint32_t len, const uint8_t **payload,
	      const char **rule)
{
	uint64_t bits;

	if (index >= pool->nslots) {
		*rule = "shm.payload.slot";
		return -EPROTO;
	}
	bits = hp_load_relaxed_u64(&pool->bitmap[index / 64]);
	if (bits & (1ull << (index % 64))) {
		*rule = "shm.payload.slot";	/* a free slot carries nothing */
		return -EPROTO;
	}
	/* The generation the sender bumped (relaxed, hp_slot_alloc) before
	 * writing the payload must match. What makes it and the payload
	 * visible is the ring: the sender's release store of head in
	 * hp_ring_enqueue_batch, our acquire load of head in load_head
	 * before the descriptor was copied out. This acquire pairs with no
	 * release store of the generation; it is kept, not needed. */
	if (hp_load_acquire_u32(generation(pool, index)) != gen) {
		*rule = "shm.slot.generation";
		return -EPROTO;
	}
	/* r[shm.slot.payload-offset]: inside the payload area, in 64 bits */
	if ((uint64_t)offset + len > (uint64_t)pool->slot_size - HP_SLOT_GEN_SIZE) {
		*rule = "shm.slot.payload-offset";
		return -EPROTO;
	}
	*payload = hp_slot_payload(pool, index) + offset;
	return 0;
}

uint32_t
hp_slot_count_free(const struct hp_slot_pool *pool)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < pool->nwords; w++)
		n += (uint32_t)__builtin_popcountll(hp_load_relaxed_u64(&pool->bitmap[w]) &
						    valid_bits(pool, w));
	return n;
}
