/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The host's side of the variable-size shared slot pool (varpool.h,
 * varpool_host.h): its configuration, laying it out, appending extents,
 * the sweeper that takes slots back, rebuilding a free list, validate and
 * the per-class figures. Only hubd (and hubctl inspect, offline) calls it;
 * a guest's view never does. Over 600 lines and whole: growth, the
 * sweeper, rebuilding and validate all walk the same extents and free
 * lists with the same checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/varpool.h"
#include "proto/varpool_host.h"
#include "proto/varpool_internal.h"

void
hp_var_conf_default(struct hp_var_conf *c)
{
	static const uint32_t sizes[][2] = {
		{ 1u << 10, 256 },	/* small arguments */
		{ 16u << 10, 64 },
		{ 256u << 10, 16 },
		{ 4u << 20, 2 },
		{ 32u << 20, 1 },	/* a 16 MiB blob and its envelope */
	};

	memset(c, 0, sizeof(*c));
	c->nclasses = sizeof(sizes) / sizeof(sizes[0]);
	c->max_extents = 4;
	for (uint32_t i = 0; i < c->nclasses; i++) {
		c->cls[i].slot_size = sizes[i][0];
		c->cls[i].count = sizes[i][1];
	}
}

static int
invalid(const char **why, const char *what)
{
	if (why != NULL)
		*why = what;
	return -EINVAL;
}

int
hp_var_conf_check(const struct hp_var_conf *c, const char **why)
{
	if (c->nclasses == 0)
		return 0;
	/* r[shm.varslot.classes] */
	if (c->nclasses > HP_VAR_MAX_CLASSES)
		return invalid(why, "at most 8 size classes");
	if (c->max_extents < 1 || c->max_extents > HP_VAR_MAX_EXTENTS)
		return invalid(why, "max_extents must be 1 to 16");
	for (uint32_t i = 0; i < c->nclasses; i++) {
		uint32_t s = c->cls[i].slot_size;

		if (s < HP_CACHE_LINE || s % HP_CACHE_LINE != 0 || s > HP_VAR_SLOT_MAX)
			return invalid(why, "a class's slot size must be a multiple of 64, 64 to 256M");
		if (i > 0 && s <= c->cls[i - 1].slot_size)
			return invalid(why, "size classes must be listed smallest first, each larger");
		if (c->cls[i].count < 1 ||
		    (uint64_t)c->cls[i].count * c->max_extents > HP_VAR_INDEX_MASK)
			return invalid(why, "a class's slot count must be 1 to 2^27 / max_extents");
		if (hp_var_extent_size(s, c->cls[i].count) > (16ull << 30))
			return invalid(why, "a class's extent would be larger than 16 GiB");
	}
	return 0;
}

uint64_t
hp_var_initial_size(const struct hp_var_conf *c, uint32_t max_guests)
{
	uint64_t n;

	if (c->nclasses == 0)
		return 0;
	n = hp_var_region_size(c->nclasses, max_guests);
	for (uint32_t i = 0; i < c->nclasses; i++)
		n += hp_var_extent_size(c->cls[i].slot_size, c->cls[i].count);
	return n;
}

uint64_t
hp_var_max_size(const struct hp_var_conf *c, uint32_t max_guests)
{
	uint64_t n = hp_var_initial_size(c, max_guests);

	for (uint32_t i = 0; i < c->nclasses && c->max_extents > 1; i++)
		n += (uint64_t)(c->max_extents - 1) *
		    hp_var_extent_size(c->cls[i].slot_size, c->cls[i].count);
	return n;
}

/* -- laying the pool out --------------------------------------------------- */

static void
init_extent(struct hp_varpool *vp, uint32_t c, uint32_t e)
{
	struct hp_var_cview *cv = &vp->c[c];
	struct hp_var_extent *x = (struct hp_var_extent *)(void *)((uint8_t *)cv->meta[e] -
								   sizeof(*x));
	uint32_t first = e * cv->spe;

	memset(x, 0, sizeof(*x));
	x->class_index = c;
	x->extent_index = e;
	x->slot_count = cv->spe;
	x->slot_size = cv->slot_size;
	x->meta_offset = sizeof(*x);
	x->data_offset = hp_var_meta_bytes(cv->spe);
	for (uint32_t i = 0; i < cv->spe; i++) {
		struct hp_var_slot *s = &cv->meta[e][i];

		hp_store_relaxed_u64(&s->gen_state, GS(0, HP_VAR_FREE));
		hp_store_relaxed_u32(&s->owner, HP_VAR_NOBODY);
		hp_store_relaxed_u32(&s->next_free, i + 1 < cv->spe ? first + i + 1 : HP_VAR_NIL);
		hp_store_relaxed_u64(&s->claim_ns, 0);
		hp_store_relaxed_u32(&s->last_owner, HP_VAR_NOBODY);
		s->reserved = 0;
	}
}

int
hp_var_create(struct hp_varpool *vp, uint8_t *base, uint64_t base_size, int fd,
	      uint64_t offset, const struct hp_var_conf *c, uint32_t max_guests)
{
	uint64_t off;

	memset(vp, 0, sizeof(*vp));
	if (c->nclasses == 0 || hp_var_conf_check(c, NULL) != 0 ||
	    offset % HP_VAR_EXTENT_ALIGN != 0 ||
	    offset + hp_var_initial_size(c, max_guests) > base_size)
		return -EINVAL;
	/* the record of the host's own slots, for every extent it may add */
	for (uint32_t i = 0; i < c->nclasses; i++)
		if ((vp->mine[i] = calloc((size_t)c->max_extents * c->cls[i].count / 8 + 1,
					  1)) == NULL) {
			hp_var_close(vp);
			return -ENOMEM;
		}
	hp_var_view_headers(vp, base, base_size, fd, offset, c->nclasses, max_guests);
	vp->host = 1;
	vp->writable = 1;
	vp->self = HP_VAR_HOST;
	vp->max_extents = c->max_extents;
	memset(vp->hdr, 0, hp_var_region_size(c->nclasses, max_guests));
	vp->hdr->nclasses = c->nclasses;
	vp->hdr->max_extents = c->max_extents;
	vp->hdr->max_payload = c->cls[c->nclasses - 1].slot_size;
	vp->max_payload = c->cls[c->nclasses - 1].slot_size;
	off = offset + hp_var_region_size(c->nclasses, max_guests);
	for (uint32_t i = 0; i < c->nclasses; i++) {
		struct hp_var_cview *cv = &vp->c[i];
		struct hp_var_class *k = &vp->cls[i];

		cv->slot_size = c->cls[i].slot_size;
		cv->spe = c->cls[i].count;
		cv->extent_bytes = hp_var_extent_size(cv->slot_size, cv->spe);
		hp_var_view_extent(vp, i, 0, off);
		init_extent(vp, i, 0);
		cv->mapped = 1;
		k->slot_size = cv->slot_size;
		k->slots_per_extent = cv->spe;
		hp_store_relaxed_u64(&k->extent_offsets[0], off);
		hp_store_relaxed_u32(&k->extent_count, 1);
		/* r[shm.varslot.freelist]: every slot of the first extent */
		hp_store_relaxed_u64(&k->free_head, HEAD(0, 0));
		off += cv->extent_bytes;
	}
	/* published with the rest of the segment by the magic's release */
	vp->file_end = off;
	return 0;
}

/* -- the host's side: growth, sweeping, rebuilding ------------------------ */

int
hp_var_take_grow_request(struct hp_varpool *vp, uint32_t c)
{
	hp_atomic_u32 *r = &vp->cls[c].grow_request;

	/* relaxed: a hint, never data; a guest that asks again between the
	 * load and the store is served by the growth the caller makes now */
	if (hp_load_relaxed_u32(r) == 0)
		return 0;
	hp_store_relaxed_u32(r, 0);
	return 1;
}

int
hp_var_grow(struct hp_varpool *vp, uint32_t c)
{
	struct hp_var_cview *cv = &vp->c[c];
	struct hp_var_class *k = &vp->cls[c];
	uint32_t e = cv->mapped;
	uint64_t off = vp->file_end;
	struct stat st;

	if (!vp->host || c >= vp->nclasses || e >= vp->max_extents)
		return -ENOSPC;
	/* r[shm.varslot.extents]: appended to the file, every page
	 * reserved (a sparse extent would SIGBUS a guest later). A file
	 * already long enough (hubd sizes a pool's for its growth, and seals
	 * it) is used as it is. */
	if (fstat(vp->fd, &st) != 0 ||
	    ((uint64_t)st.st_size < off + cv->extent_bytes &&
	     ftruncate(vp->fd, (off_t)(off + cv->extent_bytes)) != 0) ||
	    posix_fallocate(vp->fd, (off_t)off, (off_t)cv->extent_bytes) != 0)
		return -ENOSPC;
	if (hp_var_view_extent(vp, c, e, off) != 0)
		return -ENOSPC;
	init_extent(vp, c, e);
	cv->mapped = e + 1;
	vp->file_end = off + cv->extent_bytes;
	vp->diag[c].grown++;
	hp_store_relaxed_u64(&k->extent_offsets[e], off);
	/* release: pairs with the acquire in hp_var_map_published; the offset and
	 * the extent's metadata first */
	hp_store_release_u32(&k->extent_count, e + 1);
	hp_store_relaxed_u32(&k->grow_request, 0);
	hp_var_push(vp, c, e * cv->spe, &cv->meta[e][cv->spe - 1]);
	hp_var_wake_waiters(vp);
	return 0;
}

/* Gives back the pages wholly inside slots first..last (indexes) of
 * extent e of class c. Returns the bytes. */
static uint64_t
punch(const struct hp_varpool *vp, uint32_t c, uint32_t e, uint32_t first, uint32_t last)
{
	const struct hp_var_cview *cv = &vp->c[c];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = (uintptr_t)(cv->data[e] + (uint64_t)first * cv->slot_size);
	uintptr_t to = (uintptr_t)(cv->data[e] + (uint64_t)(last + 1) * cv->slot_size);

	from = (from + page - 1) & ~(page - 1);
	to &= ~(page - 1);
	if (to <= from || madvise((void *)from, to - from, MADV_REMOVE) != 0)
		return 0;
	return to - from;
}

uint64_t
hp_var_release(struct hp_varpool *vp, uint32_t c)
{
	struct hp_var_cview *cv;
	uint32_t total, n = 0, run = HP_VAR_NIL;
	struct hp_var_ref *held;
	uint8_t *taken;
	uint64_t bytes = 0;

	if (!vp->host || !vp->writable || c >= vp->nclasses || (cv = &vp->c[c])->mapped < 2)
		return 0;
	total = cv->mapped * cv->spe;
	held = malloc((size_t)total * sizeof(*held));
	taken = calloc(total, 1);
	if (held == NULL || taken == NULL) {
		free(held);
		free(taken);
		return 0;
	}
	/* bounded: no more than the class has slots */
	while (n < total && hp_var_take(vp, c, &held[n]) == 0) {
		uint32_t idx = held[n].slot & HP_VAR_INDEX_MASK;

		if (idx < total)
			taken[idx] = 1;
		n++;
	}
	/* the runs of taken slots in each extent past the first */
	for (uint32_t idx = cv->spe; idx <= total; idx++) {
		int in = idx < total && taken[idx] && (run == HP_VAR_NIL || idx % cv->spe != 0);

		if (in && run == HP_VAR_NIL)
			run = idx;
		if (!in && run != HP_VAR_NIL) {
			bytes += punch(vp, c, run / cv->spe, run % cv->spe,
				       (idx - 1) % cv->spe);
			run = idx < total && taken[idx] ? idx : HP_VAR_NIL;
		}
	}
	/* back: the first extent's last, the warmest (taken first) on top */
	for (uint32_t i = 0; i < n; i++)
		if ((held[i].slot & HP_VAR_INDEX_MASK) >= cv->spe)
			hp_var_give(vp, held[i].slot, held[i].gen);
	for (uint32_t i = n; i-- > 0;)
		if ((held[i].slot & HP_VAR_INDEX_MASK) < cv->spe)
			hp_var_give(vp, held[i].slot, held[i].gen);
	free(held);
	free(taken);
	return bytes;
}

/* A held slot whose owner word says the host's: whether that is forged,
 * the host's record not holding it (only the host's view can tell). */
static int
forged(const struct hp_varpool *vp, uint32_t c, uint32_t idx, uint32_t owner)
{
	return owner == HP_VAR_HOST && vp->mine[c] != NULL &&
	    (vp->mine[c][idx / 8] & (1u << (idx % 8))) == 0;
}

/* A held slot back to its list with a new generation, so a descriptor
 * that still names it fails its check. */
static int
reclaim(struct hp_varpool *vp, uint32_t c, uint32_t idx, struct hp_var_slot *s, uint64_t gs)
{
	if (!hp_cas_u64(&s->gen_state, &gs, GS(GEN(gs) + 1, HP_VAR_FREE)))
		return 0;
	hp_store_relaxed_u32(&s->last_owner, hp_load_relaxed_u32(&s->owner));
	hp_store_relaxed_u32(&s->owner, HP_VAR_NOBODY);
	hp_var_note_mine(vp, c, idx, 0);
	hp_fetch_add_u32(&vp->cls[c].in_use, (uint32_t)-1, memory_order_relaxed);
	vp->diag[c].reclaimed++;
	hp_var_push(vp, c, idx, s);
	return 1;
}

/* One look at class c's list: marks in seen the slots on it, puts in lost
 * (at most HP_VAR_LOST_MAX) the Free slots that are not, and says in
 * *broken whether the walk ended anywhere but at the list's end. 1 if the
 * head did not move meanwhile (no pop or push completed, so the list
 * walked was the list), 0 if it did. */
static int
look_lost(struct hp_varpool *vp, uint32_t c, uint8_t *seen, struct hp_var_lost *lost,
	  uint32_t *nlost, int *broken)
{
	struct hp_var_cview *cv = &vp->c[c];
	uint32_t total = cv->mapped * cv->spe, idx, steps = 0;
	/* acquire: pairs with the release CAS of the push that put this
	 * head there, after writing its next_free (as in pop) */
	uint64_t head = hp_load_acquire_u64(&vp->cls[c].free_head);

	memset(seen, 0, total / 8 + 1);
	*nlost = 0;
	/* bounded, stops at a cycle or a link out of range: what lies
	 * beyond is found lost, and the rebuild mends the list too */
	for (idx = IDX(head); idx < total && !(seen[idx / 8] & (1u << (idx % 8))) &&
	     steps++ < total;
	     idx = hp_load_relaxed_u32(&cv->meta[idx / cv->spe][idx % cv->spe].next_free))
		seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
	/* r[shm.varslot.freelist]: a list ends at nil. One stopped by a slot
	 * seen already (a cycle: a slot linked to itself, the only one of
	 * its class, loses no other) or by a link out of range is broken
	 * even when no slot is lost off it */
	*broken = idx != HP_VAR_NIL;
	for (idx = 0; idx < total && *nlost < HP_VAR_LOST_MAX; idx++) {
		/* acquire: pairs with the release of pop's state CAS, so
		 * the owner it stored first is seen when lost_slots reads it */
		uint64_t gs = hp_load_acquire_u64(&cv->meta[idx / cv->spe][idx % cv->spe].gen_state);

		if (STATE(gs) == HP_VAR_FREE && !(seen[idx / 8] & (1u << (idx % 8)))) {
			lost[*nlost].idx = idx;
			lost[*nlost].gs = gs;
			(*nlost)++;
		}
	}
	/* acquire: as above; an unmoved head (its tag changes on every
	 * pop and push) means the walk saw one list */
	return hp_load_acquire_u64(&vp->cls[c].free_head) == head;
}

/* How many Free slots of class c are on no list for good: a peer that
 * died between its pop's head CAS and its state CAS, or between its
 * free's state CAS and its push, left them there. A live peer passes
 * through the same states for an instant, so a slot counts only once
 * looks (each of a list that stood still) have found it so, its
 * gen_state unchanged, for NOBODY_GRACE_NS, and its owner (set by a pop
 * before its state CAS, cleared by a free after its own) is no live
 * peer. *broken: the look at a list that stood still found it broken. */
static uint32_t
lost_slots(struct hp_varpool *vp, uint32_t c, uint64_t now,
	   int (*dead)(void *arg, uint32_t owner), void *arg, int *broken)
{
	struct hp_var_cview *cv = &vp->c[c];
	struct hp_var_lost seen_now[HP_VAR_LOST_MAX];
	uint32_t total = cv->mapped * cv->spe, n = 0, nnow = 0;
	uint8_t *seen;
	int tries;

	*broken = 0;
	if (!vp->host || (seen = malloc(total / 8 + 1)) == NULL)
		return 0;
	for (tries = 0; tries < 4; tries++)
		if (look_lost(vp, c, seen, seen_now, &nnow, broken))
			break;
	free(seen);
	if (tries == 4) {
		*broken = 0;
		return 0;	/* busy: the next sweep looks again */
	}
	for (uint32_t i = 0; i < nnow; i++) {
		struct hp_var_lost *l = &seen_now[i];
		uint32_t owner;

		l->since = now;
		for (uint32_t j = 0; j < vp->nlost[c]; j++)
			if (vp->lost[c][j].idx == l->idx && vp->lost[c][j].gs == l->gs)
				l->since = vp->lost[c][j].since;
		if (now < l->since || now - l->since < NOBODY_GRACE_NS)
			continue;
		owner = hp_load_relaxed_u32(&cv->meta[l->idx / cv->spe][l->idx % cv->spe].owner);
		if (owner == HP_VAR_NOBODY || owner == HP_VAR_HOST || owner > vp->max_guests ||
		    dead(arg, owner))
			n++;
	}
	memcpy(vp->lost[c], seen_now, nnow * sizeof(seen_now[0]));
	/* a rebuild lists them all again */
	vp->nlost[c] = n > 0 || *broken ? 0 : nnow;
	return n;
}

static void rebuild(struct hp_varpool *vp, uint32_t c, struct hp_var_back *b);

uint32_t
hp_var_sweep(struct hp_varpool *vp, uint64_t now, uint64_t stuck_ns,
	     int (*dead)(void *arg, uint32_t owner), void *arg,
	     void (*on_stuck)(void *arg, const struct hp_var_held *s), uint32_t *stuck,
	     struct hp_var_back *why, struct hp_var_tally *held_by)
{
	struct hp_var_back b;
	uint32_t back, held = 0, lost;
	int broken;

	memset(&b, 0, sizeof(b));
	if (held_by != NULL)
		memset(held_by, 0, ((size_t)vp->max_guests + 1) * sizeof(*held_by));
	for (uint32_t c = 0; c < vp->nclasses; c++) {
		struct hp_var_cview *cv = &vp->c[c];

		if (hp_load_relaxed_u32(&vp->cls[c].corrupt))
			rebuild(vp, c, &b);
		for (uint32_t idx = 0; idx < cv->mapped * cv->spe; idx++) {
			struct hp_var_slot *s = &cv->meta[idx / cv->spe][idx % cv->spe];
			/* acquire: pairs with the release of the state CAS in
			 * pop, so the owner it stored first is seen */
			uint64_t gs = hp_load_acquire_u64(&s->gen_state), at;
			uint32_t owner, *reason = NULL;

			if (STATE(gs) == HP_VAR_FREE)
				continue;
			owner = hp_load_relaxed_u32(&s->owner);
			at = hp_load_relaxed_u64(&s->claim_ns);
			/* in no state, or held as generation 0 (never
			 * allocated: no reference can free it): taken back.
			 * Held by nobody: normal only for the instant a freer
			 * that lost a race with a rebuild clears the owner
			 * late; taken back once it has lasted. Held as the
			 * host's: only what the host's record holds */
			if (STATE(gs) > HP_VAR_INFLIGHT)
				reason = &b.bad_state;
			else if (GEN(gs) == 0)
				reason = &b.gen_zero;
			else if ((owner > vp->max_guests && owner != HP_VAR_NOBODY) ||
				 (owner == HP_VAR_NOBODY && now > at &&
				  now - at > (stuck_ns != 0 ? stuck_ns : NOBODY_GRACE_NS)))
				reason = &b.no_owner;
			else if (forged(vp, c, idx, owner))
				reason = &b.forged;
			else if (owner != HP_VAR_HOST && owner <= vp->max_guests &&
				 dead(arg, owner))
				reason = &b.dead;
			if (reason != NULL) {
				*reason += (uint32_t)reclaim(vp, c, idx, s, gs);
				continue;
			}
			if (held_by != NULL && owner <= vp->max_guests) {
				held_by[owner].slots++;
				held_by[owner].bytes += cv->slot_size;
			}
			if (stuck_ns != 0 && owner != HP_VAR_HOST && now > at && now - at > stuck_ns) {
				struct hp_var_held h = { c, idx, owner, GEN(gs), now - at };

				held++;
				if (on_stuck != NULL)
					on_stuck(arg, &h);
			}
		}
		/* r[shm.varslot.freelist]: a list that loops or runs out of
		 * range is rebuilt; r[shm.varslot.ownership]: what a peer
		 * that died mid-alloc or mid-free left on no list comes back */
		lost = lost_slots(vp, c, now, dead, arg, &broken);
		if (broken)
			vp->diag[c].bad_links++;
		if (lost > 0 || broken) {
			rebuild(vp, c, &b);
			b.lost += lost;
		}
	}
	back = b.dead + b.forged + b.no_owner + b.bad_state + b.gen_zero + b.lost;
	if (back > 0)
		hp_var_wake_waiters(vp);
	if (stuck != NULL)
		*stuck = held;
	if (why != NULL)
		*why = b;
	return back;
}

/* hp_var_rebuild, counting what it takes back into *b. */
static void
rebuild(struct hp_varpool *vp, uint32_t c, struct hp_var_back *b)
{
	struct hp_var_cview *cv = &vp->c[c];
	struct hp_var_class *k = &vp->cls[c];
	struct hp_var_slot *last = NULL;
	uint32_t first = HP_VAR_NIL, used = 0;
	uint64_t head = hp_load_relaxed_u64(&k->free_head);

	if (!vp->host)
		return;
	hp_store_relaxed_u32(&k->corrupt, 0);
	/* detach the list: pops racing with us fail their CAS */
	for (int tries = 0; tries < CAS_TRIES; tries++)
		if (hp_cas_u64(&k->free_head, &head, HEAD(TAG(head) + 1, HP_VAR_NIL)))
			break;
	/* every Free slot, chained from the metadata; anything that is no
	 * state at all, held by no peer or held as generation 0 is
	 * reclaimed. A slot a racing pop took but has not
	 * marked yet may be chained too: whoever pops it second fails the
	 * state CAS and leaves it (pop's step 5). */
	for (uint32_t idx = cv->mapped * cv->spe; idx-- > 0;) {
		struct hp_var_slot *s = &cv->meta[idx / cv->spe][idx % cv->spe];
		/* acquire: as in hp_var_sweep */
		uint64_t gs = hp_load_acquire_u64(&s->gen_state);

		uint32_t owner = hp_load_relaxed_u32(&s->owner);

		if (STATE(gs) > HP_VAR_INFLIGHT || (STATE(gs) != HP_VAR_FREE &&
		    ((owner > vp->max_guests && owner != HP_VAR_NOBODY) || GEN(gs) == 0))) {
			if (!hp_cas_u64(&s->gen_state, &gs, GS(GEN(gs) + 1, HP_VAR_FREE)))
				continue;
			hp_store_relaxed_u32(&s->owner, HP_VAR_NOBODY);
			hp_var_note_mine(vp, c, idx, 0);
			vp->diag[c].reclaimed++;
			if (STATE(gs) > HP_VAR_INFLIGHT)
				b->bad_state++;
			else if (GEN(gs) == 0)
				b->gen_zero++;
			else
				b->no_owner++;
		} else if (STATE(gs) != HP_VAR_FREE) {
			used++;
			continue;
		}
		hp_store_relaxed_u32(&s->next_free, first);
		if (last == NULL)
			last = s;
		first = idx;
	}
	hp_store_relaxed_u32(&k->in_use, used);
	vp->diag[c].rebuilds++;
	if (last != NULL)
		hp_var_push(vp, c, first, last);
	hp_var_wake_waiters(vp);
}

void
hp_var_rebuild(struct hp_varpool *vp, uint32_t c)
{
	struct hp_var_back b;

	memset(&b, 0, sizeof(b));
	rebuild(vp, c, &b);
}

/* -- validate and figures ------------------------------------------------- */

static void
problem(void (*report)(void *, const char *), void *rarg, uint32_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
problem(void (*report)(void *, const char *), void *rarg, uint32_t *n, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	(*n)++;
	if (report == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	report(rarg, buf);
}

static const char *
state_name(uint32_t st)
{
	return st == HP_VAR_ALLOCATED ? "allocated" : st == HP_VAR_INFLIGHT ? "in flight" :
	    st == HP_VAR_FREE ? "free" : "in no state";
}

uint32_t
hp_var_validate(struct hp_varpool *vp, int (*live)(void *arg, uint32_t owner), void *arg,
		void (*report)(void *arg, const char *problem), void *rarg)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < vp->nclasses; c++) {
		struct hp_var_cview *cv = &vp->c[c];
		uint32_t total, idx, steps = 0;
		uint8_t *seen;

		if (!vp->host)
			hp_var_map_published(vp, c);
		total = cv->mapped * cv->spe;
		if ((seen = calloc(total / 8 + 1, 1)) == NULL) {
			problem(report, rarg, &n, "class %u: out of memory to validate", c);
			continue;
		}
		/* the free list, at most one step per slot */
		/* acquire: pairs with a free's release CAS (step 5), so the
		 * next_free words read below are the ones it wrote */
		idx = IDX(hp_load_acquire_u64(&vp->cls[c].free_head));
		for (uint32_t prev = HP_VAR_NIL; idx != HP_VAR_NIL; prev = idx,
		     idx = hp_load_relaxed_u32(&cv->meta[prev / cv->spe][prev % cv->spe].next_free)) {
			uint64_t gs;

			if (idx >= total) {
				problem(report, rarg, &n, "class %u: free list link out of range "
					"(slot %d -> %u, %u slots)", c,
					prev == HP_VAR_NIL ? -1 : (int)prev, idx, total);
				break;
			}
			if (seen[idx / 8] & (1u << (idx % 8))) {
				problem(report, rarg, &n, "class %u: free list has a cycle at slot %u",
					c, idx);
				break;
			}
			seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
			gs = hp_load_relaxed_u64(&cv->meta[idx / cv->spe][idx % cv->spe].gen_state);
			if (STATE(gs) != HP_VAR_FREE)
				problem(report, rarg, &n, "class %u: slot %u is on the free list "
					"but %s", c, idx, state_name(STATE(gs)));
			if (++steps > total)
				break;
		}
		for (idx = 0; idx < total; idx++) {
			struct hp_var_slot *s = &cv->meta[idx / cv->spe][idx % cv->spe];
			uint64_t gs = hp_load_relaxed_u64(&s->gen_state);
			uint32_t owner = hp_load_relaxed_u32(&s->owner);
			int on = (seen[idx / 8] & (1u << (idx % 8))) != 0;

			if (STATE(gs) == HP_VAR_FREE) {
				if (!on)
					problem(report, rarg, &n, "class %u: slot %u is free but on "
						"no free list", c, idx);
				continue;
			}
			if (STATE(gs) > HP_VAR_INFLIGHT) {
				problem(report, rarg, &n, "class %u: slot %u has state %u", c, idx,
					STATE(gs));
				continue;
			}
			if (GEN(gs) == 0)
				problem(report, rarg, &n, "class %u: slot %u is %s with generation 0 "
					"(never allocated)", c, idx, state_name(STATE(gs)));
			if (owner > vp->max_guests)
				problem(report, rarg, &n, "class %u: slot %u is %s by no peer "
					"(owner %u)", c, idx, state_name(STATE(gs)), owner);
			else if (forged(vp, c, idx, owner))
				problem(report, rarg, &n, "class %u: slot %u is held as the "
					"host's, but the host does not hold it", c, idx);
			else if (live != NULL && owner != HP_VAR_HOST && !live(arg, owner))
				problem(report, rarg, &n, "class %u: slot %u is %s by peer %u, "
					"which is not running", c, idx, state_name(STATE(gs)), owner);
		}
		free(seen);
	}
	return n;
}

void
hp_var_class_stats(struct hp_varpool *vp, uint32_t c, struct hp_var_class_stats *s)
{
	struct hp_var_cview *cv = &vp->c[c];

	memset(s, 0, sizeof(*s));
	if (!vp->host)
		hp_var_map_published(vp, c);
	s->slot_size = cv->slot_size;
	s->slots_per_extent = cv->spe;
	s->extents = cv->mapped;
	s->slots = cv->mapped * cv->spe;
	for (uint32_t idx = 0; idx < s->slots; idx++)
		if (STATE(hp_load_relaxed_u64(&cv->meta[idx / cv->spe][idx % cv->spe].gen_state)) ==
		    HP_VAR_FREE)
			s->free++;
	s->in_use = s->slots - s->free;
	s->high_water = hp_load_relaxed_u32(&vp->cls[c].high_water);
	if (s->high_water < s->in_use)
		s->high_water = s->in_use;
	for (uint32_t p = 0; p <= vp->max_guests; p++) {
		struct hp_var_stats *st = &vp->stats[(uint64_t)p * vp->nclasses + c];

		s->allocs += hp_load_relaxed_u64(&st->allocs);
		s->frees += hp_load_relaxed_u64(&st->frees);
		s->conflicts += hp_load_relaxed_u64(&st->conflicts);
		s->fallbacks += hp_load_relaxed_u64(&st->fallbacks);
		s->waits += hp_load_relaxed_u64(&st->waits);
		s->errors += hp_load_relaxed_u64(&st->errors);
	}
	s->diag = vp->diag[c];
	s->errors += s->diag.double_frees + s->diag.stale_frees + s->diag.bad_links;
}

/* One pass of validate's problems, the first HP_VAR_PROBLEMS_MAX kept. */
struct var_pass {
	char		**s;
	uint32_t	n, total;
	int		nomem;
};

static void
pass_collect(void *arg, const char *problem)
{
	struct var_pass *p = arg;

	p->total++;
	if (p->n == HP_VAR_PROBLEMS_MAX || p->nomem)
		return;
	if (p->s == NULL && (p->s = calloc(HP_VAR_PROBLEMS_MAX, sizeof(*p->s))) == NULL) {
		p->nomem = 1;
		return;
	}
	if ((p->s[p->n] = strdup(problem)) == NULL)
		p->nomem = 1;
	else
		p->n++;
}

static int
pass_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
pass_free(struct var_pass *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		free(p->s[i]);
	free(p->s);
}

int64_t
hp_var_validate_twice(struct hp_varpool *vp, int twice, int (*live)(void *arg, uint32_t owner),
		      void *arg, void (*report)(void *arg, const char *problem), void *rarg)
{
	struct var_pass first = { NULL, 0, 0, 0 }, second = { NULL, 0, 0, 0 }, *last = &first;
	int64_t n = 0;

	hp_var_validate(vp, live, arg, pass_collect, &first);
	if (twice && first.total > 0) {
		hp_var_validate(vp, live, arg, pass_collect, &second);
		if (first.n > 0)
			qsort(first.s, first.n, sizeof(*first.s), pass_order);
		last = &second;
	}
	if (first.nomem || second.nomem) {
		n = -1;
		goto out;
	}
	for (uint32_t i = 0; i < last->n; i++) {
		if (last == &second && bsearch(&second.s[i], first.s, first.n,
					       sizeof(*first.s), pass_order) == NULL)
			continue;
		n++;
		report(rarg, last->s[i]);
	}
	if (n > 0 && last->total > last->n && (last == &first || first.total > first.n)) {
		char more[96];

		snprintf(more, sizeof(more), "and %u more problems (shown: the first %u)",
			 last->total - last->n, HP_VAR_PROBLEMS_MAX);
		report(rarg, more);
		n += last->total - last->n;
	}
out:
	pass_free(&first);
	pass_free(&second);
	return n;
}
