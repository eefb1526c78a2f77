/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What varpool.c (every view) and varpool_host.c (the host's upkeep)
 * share and no one else uses: the words' encodings, the loop bounds, and
 * the helpers both sides of the pool call. Not a public header. */
#ifndef HP_VARPOOL_INTERNAL_H
#define HP_VARPOOL_INTERNAL_H

#include <stdint.h>

#include "proto/varpool.h"

/* Bounds on every loop over shared words a peer can write: a CAS that a
 * hostile peer keeps failing, or a free list it made circular, costs a
 * bounded number of steps, then the class is marked for rebuild. */
#define CAS_TRIES	256
#define BAD_POPS	8
#define NOBODY_GRACE_NS	1000000000ull

#define TAG(head)	((uint32_t)((head) >> 32))
#define IDX(head)	((uint32_t)(head))
#define HEAD(tag, idx)	((uint64_t)(tag) << 32 | (idx))
#define GS(gen, state)	((uint64_t)(state) << 32 | (gen))
#define GEN(gs)		((uint32_t)(gs))
#define STATE(gs)	((uint32_t)((gs) >> 32))
/* The generation an allocation gives: never 0, which no held slot has
 * (validate reports it, rebuild and the sweeper take such a slot back),
 * even after 2^32 allocations of one slot. */
#define NEXT_GEN(gs)	(GEN(gs) + 1 != 0 ? GEN(gs) + 1 : 1u)

/* Bytes of an extent's header and slot metadata, cache-line aligned. */
uint64_t hp_var_meta_bytes(uint32_t count);
/* Fills the view's pointers to the region at base + offset. */
void hp_var_view_headers(struct hp_varpool *vp, uint8_t *base, uint64_t base_size, int fd,
			 uint64_t offset, uint32_t nclasses, uint32_t max_guests);
/* Points the view at extent e of class c, at file offset off: -ENOMEM when
 * it cannot be mapped. */
int hp_var_view_extent(struct hp_varpool *vp, uint32_t c, uint32_t e, uint64_t off);
/* A guest's view: maps the extents of class c the host published since,
 * checked first. 0, -EBADMSG, -ENOMEM, -errno. */
int hp_var_map_published(struct hp_varpool *vp, uint32_t c);
/* The host's record of the slots it holds (varpool.h): idx of class c set
 * (held) or cleared. */
void hp_var_note_mine(struct hp_varpool *vp, uint32_t c, uint32_t idx, int held);
/* Pushes the chain first..last (linked through next_free) of class c:
 * 0, or -EAGAIN (left off the list, the class marked for rebuild). */
int hp_var_push(struct hp_varpool *vp, uint32_t c, uint32_t first, struct hp_var_slot *last);
/* A free slot of class c taken as the host's, and given back, as an
 * allocation and a free that no statistics count (hp_var_release): 0,
 * or -EAGAIN / -ENOMEM as hp_var_alloc. */
int hp_var_take(struct hp_varpool *vp, uint32_t c, struct hp_var_ref *r);
int hp_var_give(struct hp_varpool *vp, uint32_t slot, uint32_t gen);
/* Wakes the processes asleep for a slot, after a push (Dekker with
 * hp_var_sleep_begin). */
void hp_var_wake_waiters(struct hp_varpool *vp);

#endif
