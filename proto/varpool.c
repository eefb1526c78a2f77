/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The variable-size shared slot pool (varpool.h): what every view does,
 * the guest's and the host's: views and their extents, attach, and the hot
 * path (alloc, send, check, pass, free, the wait for a slot). What only the
 * host does (lay the pool out, grow, sweep, rebuild, validate, figures) is
 * varpool_host.c. Over 600 lines and whole: every function here is a
 * transition of the one slot state machine (r[shm.varslot.*]), checked
 * against the others it races with. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "proto/futex.h"
#include "proto/varpool.h"
#include "proto/varpool_internal.h"

static uint64_t
align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* The claim timestamp: a coarse clock (vDSO, no syscall) is enough to
 * tell a slot held for seconds. */
static uint64_t
claim_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


uint64_t
hp_var_region_size(uint32_t nclasses, uint32_t max_guests)
{
	uint64_t n = sizeof(struct hp_var_header) +
	    (uint64_t)nclasses * sizeof(struct hp_var_class) +
	    ((uint64_t)max_guests + 1) * nclasses * sizeof(struct hp_var_stats);

	return align_up(n, HP_VAR_EXTENT_ALIGN);
}

uint64_t
hp_var_meta_bytes(uint32_t count)
{
	return align_up(sizeof(struct hp_var_extent) + (uint64_t)count * sizeof(struct hp_var_slot),
			HP_CACHE_LINE);
}

uint64_t
hp_var_extent_size(uint32_t slot_size, uint32_t count)
{
	return align_up(hp_var_meta_bytes(count) + (uint64_t)count * slot_size, HP_VAR_EXTENT_ALIGN);
}


/* -- views ----------------------------------------------------------------- */

void
hp_var_view_headers(struct hp_varpool *vp, uint8_t *base, uint64_t base_size, int fd,
	     uint64_t offset, uint32_t nclasses, uint32_t max_guests)
{
	vp->base = base;
	vp->base_size = base_size;
	vp->fd = fd;
	vp->offset = offset;
	vp->nclasses = nclasses;
	vp->max_guests = max_guests;
	vp->hdr = (struct hp_var_header *)(void *)(base + offset);
	vp->cls = (struct hp_var_class *)(void *)(base + offset + sizeof(struct hp_var_header));
	vp->stats = (struct hp_var_stats *)(void *)((uint8_t *)vp->cls +
						    nclasses * sizeof(struct hp_var_class));
	vp->want = HP_VAR_NIL;
}

/* Points the view at extent e of class c, at file offset off: inside the
 * segment's mapping when it lies there, else mapped on its own. */
int
hp_var_view_extent(struct hp_varpool *vp, uint32_t c, uint32_t e, uint64_t off)
{
	struct hp_var_cview *cv = &vp->c[c];
	uint8_t *p;

	if (off + cv->extent_bytes <= vp->base_size) {
		p = vp->base + off;
		cv->map[e] = NULL;
	} else {
		p = mmap(NULL, cv->extent_bytes,
			 vp->writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
			 vp->fd, (off_t)off);
		if (p == MAP_FAILED)
			return -ENOMEM;
		cv->map[e] = p;
	}
	cv->meta[e] = (struct hp_var_slot *)(void *)(p + sizeof(struct hp_var_extent));
	cv->data[e] = p + hp_var_meta_bytes(cv->spe);
	return 0;
}

/* A guest's view reaches extents the host published since: maps them,
 * after checking where the host says they are. */
int
hp_var_map_published(struct hp_varpool *vp, uint32_t c)
{
	struct hp_var_cview *cv = &vp->c[c];
	/* acquire: pairs with the host's release store of extent_count in
	 * hp_var_grow, made after the extent's offset and metadata */
	uint32_t n = hp_load_acquire_u32(&vp->cls[c].extent_count);
	struct stat st;

	if (n > vp->max_extents)
		return -EBADMSG;
	if (n <= cv->mapped)
		return 0;
	if (fstat(vp->fd, &st) != 0)
		return -errno;
	while (cv->mapped < n) {
		uint32_t e = cv->mapped;
		uint64_t off = hp_load_relaxed_u64(&vp->cls[c].extent_offsets[e]);
		const struct hp_var_extent *x;

		if (off % HP_VAR_EXTENT_ALIGN != 0 || off < vp->offset ||
		    off > (uint64_t)st.st_size || cv->extent_bytes > (uint64_t)st.st_size - off)
			return -EBADMSG;
		if (hp_var_view_extent(vp, c, e, off) != 0)
			return -ENOMEM;
		x = (const struct hp_var_extent *)(const void *)((uint8_t *)cv->meta[e] -
								 sizeof(*x));
		if (x->class_index != c || x->extent_index != e || x->slot_count != cv->spe ||
		    x->slot_size != cv->slot_size) {
			if (cv->map[e] != NULL)
				munmap(cv->map[e], cv->extent_bytes);
			cv->map[e] = NULL;
			return -EBADMSG;
		}
		cv->mapped = e + 1;
	}
	return 0;
}


static int
corrupt(const char **why, const char *what)
{
	if (why != NULL)
		*why = what;
	return -EBADMSG;
}

int
hp_var_attach(struct hp_varpool *vp, uint8_t *base, uint64_t base_size, int fd,
	      int writable, uint64_t offset, uint32_t max_guests, uint32_t self,
	      const char **why)
{
	const struct hp_var_header *h;
	uint32_t n;

	memset(vp, 0, sizeof(*vp));
	if (offset % HP_VAR_EXTENT_ALIGN != 0 || offset >= base_size ||
	    base_size - offset < sizeof(*h))
		return corrupt(why, "the variable pool lies outside the segment or is misaligned");
	h = (const struct hp_var_header *)(const void *)(base + offset);
	n = h->nclasses;
	if (n < 1 || n > HP_VAR_MAX_CLASSES || h->max_extents < 1 ||
	    h->max_extents > HP_VAR_MAX_EXTENTS)
		return corrupt(why, "the variable pool's class count or max_extents is out of range");
	if (hp_var_region_size(n, max_guests) > base_size - offset)
		return corrupt(why, "the variable pool's headers run past the end of the segment");
	if (self > max_guests)
		return -EINVAL;
	hp_var_view_headers(vp, base, base_size, fd, offset, n, max_guests);
	vp->writable = writable;
	vp->self = self;
	vp->max_extents = h->max_extents;
	for (uint32_t i = 0; i < n; i++) {
		struct hp_var_cview *cv = &vp->c[i];
		const struct hp_var_class *k = &vp->cls[i];

		cv->slot_size = k->slot_size;
		cv->spe = k->slots_per_extent;
		if (cv->slot_size < HP_CACHE_LINE || cv->slot_size % HP_CACHE_LINE != 0 ||
		    cv->slot_size > HP_VAR_SLOT_MAX ||
		    (i > 0 && cv->slot_size <= vp->c[i - 1].slot_size) || cv->spe < 1 ||
		    (uint64_t)cv->spe * vp->max_extents > HP_VAR_INDEX_MASK)
			return corrupt(why, "a size class's slot size or count is out of range");
		cv->extent_bytes = hp_var_extent_size(cv->slot_size, cv->spe);
	}
	if (h->max_payload != vp->c[n - 1].slot_size)
		return corrupt(why, "the variable pool's max_payload is not its largest class");
	vp->max_payload = vp->c[n - 1].slot_size;
	for (uint32_t i = 0; i < n; i++) {
		int rc = hp_var_map_published(vp, i);

		if (rc != 0 || vp->c[i].mapped == 0) {
			hp_var_close(vp);
			return rc == -ENOMEM ? rc :
			    corrupt(why, "a size class's extent lies outside the file or has a bad header");
		}
	}
	return 0;
}

void
hp_var_close(struct hp_varpool *vp)
{
	for (uint32_t c = 0; c < vp->nclasses; c++)
		for (uint32_t e = 0; e < HP_VAR_MAX_EXTENTS; e++)
			if (vp->c[c].map[e] != NULL) {
				munmap(vp->c[c].map[e], vp->c[c].extent_bytes);
				vp->c[c].map[e] = NULL;
			}
	for (uint32_t c = 0; c < HP_VAR_MAX_CLASSES; c++) {
		free(vp->mine[c]);
		vp->mine[c] = NULL;
	}
}

/* -- slots ----------------------------------------------------------------- */

static struct hp_var_stats *
my_stats(struct hp_varpool *vp, uint32_t c)
{
	return &vp->stats[(uint64_t)vp->self * vp->nclasses + c];
}

/* One writer per line: a plain read and write, no locked instruction. */
static void
count(hp_atomic_u64 *ctr)
{
	hp_store_relaxed_u64(ctr, hp_load_relaxed_u64(ctr) + 1);
}

/* The host's record of the slots it holds (varpool.h), index idx of class
 * c below max_extents * slots per extent: set as the host takes a slot,
 * cleared as it lets one go. Other views keep none. */
void
hp_var_note_mine(struct hp_varpool *vp, uint32_t c, uint32_t idx, int held)
{
	uint8_t *m = vp->mine[c], bit = (uint8_t)(1u << (idx % 8));

	if (m != NULL)
		m[idx / 8] = held ? (uint8_t)(m[idx / 8] | bit) : (uint8_t)(m[idx / 8] & ~bit);
}


/* The metadata of index idx of class c in *s, mapping its extent if the
 * host published it since: 0, -ENOMEM (cannot map it), -EINVAL (no
 * such slot). */
static int
find_slot(struct hp_varpool *vp, uint32_t c, uint32_t idx, struct hp_var_slot **s)
{
	struct hp_var_cview *cv = &vp->c[c];
	uint32_t e = idx / cv->spe;

	if (e >= vp->max_extents)
		return -EINVAL;
	if (e >= cv->mapped && !vp->host && hp_var_map_published(vp, c) == -ENOMEM)
		return -ENOMEM;
	if (e >= cv->mapped)
		return -EINVAL;
	*s = &cv->meta[e][idx % cv->spe];
	return 0;
}

static struct hp_var_slot *
slot_meta(struct hp_varpool *vp, uint32_t c, uint32_t idx)
{
	struct hp_var_slot *s;

	return find_slot(vp, c, idx, &s) == 0 ? s : NULL;
}

static uint8_t *
slot_data(const struct hp_varpool *vp, uint32_t c, uint32_t idx)
{
	const struct hp_var_cview *cv = &vp->c[c];

	return cv->data[idx / cv->spe] + (uint64_t)(idx % cv->spe) * cv->slot_size;
}

static void
mark_corrupt(struct hp_varpool *vp, uint32_t c)
{
	hp_store_relaxed_u32(&vp->cls[c].corrupt, 1);
	if (vp->host)
		vp->diag[c].bad_links++;
	else
		count(&my_stats(vp, c)->errors);
}

/* r[shm.varslot.allocation] from class c: 0, -EAGAIN (empty, or too
 * contended or broken to pop within bounds). */
static int
pop(struct hp_varpool *vp, uint32_t c, struct hp_var_ref *r)
{
	struct hp_var_class *k = &vp->cls[c];
	int bad = 0;

	for (int tries = 0; tries < CAS_TRIES; tries++) {
		/* 1. acquire: pairs with the release CAS of the push that
		 * put this head there, after writing its next_free */
		uint64_t head = hp_load_acquire_u64(&k->free_head), gs;
		uint32_t idx = IDX(head), next, prev;
		struct hp_var_slot *s;
		int rc;

		/* 2. */
		if (idx == HP_VAR_NIL)
			return -EAGAIN;
		if ((rc = find_slot(vp, c, idx, &s)) != 0) {
			if (rc == -ENOMEM)
				return rc;	/* refused slots, nothing else */
			mark_corrupt(vp, c);	/* a head naming no slot */
			return -EAGAIN;
		}
		/* 3. */
		next = hp_load_relaxed_u32(&s->next_free);
		if (next != HP_VAR_NIL && next / vp->c[c].spe >= vp->max_extents) {
			mark_corrupt(vp, c);
			return -EAGAIN;
		}
		/* 4. the tag changes on every successful CAS: a head popped
		 * and pushed back meanwhile (ABA) fails this one */
		if (!hp_cas_u64(&k->free_head, &head, HEAD(TAG(head) + 1, next))) {
			count(&my_stats(vp, c)->conflicts);
			continue;
		}
		/* 5. ours, if it really was free. The owner and the claim
		 * time go first, released by the state CAS: the sweeper never
		 * sees a held slot that belongs to nobody. A slot on the list
		 * that is held (a double free, a scribbled link) is left to
		 * its holder, its owner put back; the list is rebuilt later. */
		prev = hp_load_relaxed_u32(&s->owner);
		hp_store_relaxed_u32(&s->owner, vp->self);
		hp_store_relaxed_u64(&s->claim_ns, claim_now());
		gs = hp_load_relaxed_u64(&s->gen_state);
		if (STATE(gs) != HP_VAR_FREE ||
		    !hp_cas_u64(&s->gen_state, &gs, GS(NEXT_GEN(gs), HP_VAR_ALLOCATED))) {
			uint32_t self = vp->self;

			hp_cas_u32(&s->owner, &self, prev);
			mark_corrupt(vp, c);
			if (++bad >= BAD_POPS)
				return -EAGAIN;
			continue;
		}
		r->slot = HP_VAR_SLOT_FLAG | c << HP_VAR_CLASS_SHIFT | idx;
		r->gen = NEXT_GEN(gs);
		r->data = slot_data(vp, c, idx);
		r->cap = vp->c[c].slot_size;
		return 0;
	}
	return -EAGAIN;
}

static void
note_in_use(struct hp_var_class *k)
{
	uint32_t n = hp_fetch_add_u32(&k->in_use, 1, memory_order_relaxed) + 1;
	uint32_t hw = hp_load_relaxed_u32(&k->high_water);

	for (int tries = 0; n > hw && tries < CAS_TRIES; tries++)
		if (hp_cas_u32(&k->high_water, &hw, n))
			break;
}

/* Whether class c has no more than spare slots free, by its in_use
 * count: a hint that any process of the pool can write (a zone mate that
 * lies there delays what is sent into its own zone, nothing else), kept
 * true by every alloc and free and set anew by each sweep. */
static int
at_spare(struct hp_varpool *vp, uint32_t c, uint32_t spare)
{
	uint64_t slots = (uint64_t)vp->c[c].mapped * vp->c[c].spe;
	uint32_t used = hp_load_relaxed_u32(&vp->cls[c].in_use);

	/* a class with no more slots than spare keeps none: the host's
	 * copies would find none at all, for as long as it cannot grow (no
	 * memory for an extent, or max_extents); one the guests find empty
	 * grows as ever */
	if (spare == 0 || slots <= spare)
		return 0;
	return used >= slots || slots - used <= spare;
}

int
hp_var_short(struct hp_varpool *vp, uint32_t payload_slot, uint32_t spare)
{
	uint32_t c = (payload_slot & ~HP_VAR_SLOT_FLAG) >> HP_VAR_CLASS_SHIFT;

	if (!hp_var_is_slot(payload_slot) || c >= vp->nclasses || !at_spare(vp, c, spare))
		return 0;
	if (hp_load_relaxed_u32(&vp->cls[c].extent_count) < vp->max_extents) {
		/* r[shm.varslot.extents]: it grows first */
		hp_store_relaxed_u32(&vp->cls[c].grow_request, 1);
		return 0;
	}
	return 1;
}

int
hp_var_take(struct hp_varpool *vp, uint32_t c, struct hp_var_ref *r)
{
	int rc = pop(vp, c, r);

	/* counted in use (hp_var_give takes it off), not as a high water:
	 * every free slot taken at once is no load */
	if (rc == 0) {
		hp_fetch_add_u32(&vp->cls[c].in_use, 1, memory_order_relaxed);
		hp_var_note_mine(vp, c, r->slot & HP_VAR_INDEX_MASK, 1);
	}
	return rc;
}

int
hp_var_alloc(struct hp_varpool *vp, uint32_t len, struct hp_var_ref *r)
{
	return hp_var_alloc_spare(vp, len, 0, r);
}

int
hp_var_alloc_spare(struct hp_varpool *vp, uint32_t len, uint32_t spare,
		   struct hp_var_ref *r)
{
	uint32_t first = HP_VAR_NIL;
	int rc;

	if (len > vp->max_payload)
		return -EMSGSIZE;
	/* r[shm.varslot.selection] 1: the smallest class that fits */
	for (uint32_t c = 0; c < vp->nclasses; c++) {
		if (vp->c[c].slot_size < len)
			continue;
		if (first == HP_VAR_NIL)
			first = c;
		/* 2-3: its list, else the next larger class's; a class down
		 * to its spare slots counts as empty */
		if (at_spare(vp, c, spare))
			rc = -EAGAIN;
		else if ((rc = pop(vp, c, r)) == -ENOMEM)
			return rc;
		if (rc == 0) {
			struct hp_var_stats *st = my_stats(vp, c);

			count(&st->allocs);
			if (c != first)
				count(&st->fallbacks);
			note_in_use(&vp->cls[c]);
			hp_var_note_mine(vp, c, r->slot & HP_VAR_INDEX_MASK, 1);
			vp->want = HP_VAR_NIL;
			return 0;
		}
		if (c == first && hp_load_relaxed_u32(&vp->cls[c].extent_count) < vp->max_extents)
			/* r[shm.varslot.extents]: the host appends an extent */
			hp_store_relaxed_u32(&vp->cls[c].grow_request, 1);
	}
	/* 4: all exhausted: the caller waits */
	count(&my_stats(vp, first)->waits);
	vp->want = first;
	return -EAGAIN;
}

/* (class, index) of a descriptor's slot, or -1. */
static int
decode(const struct hp_varpool *vp, uint32_t slot, uint32_t *c, uint32_t *idx)
{
	if (!hp_var_is_slot(slot))
		return -1;
	*c = (slot & ~HP_VAR_SLOT_FLAG) >> HP_VAR_CLASS_SHIFT;
	*idx = slot & HP_VAR_INDEX_MASK;
	return *c < vp->nclasses ? 0 : -1;
}

int
hp_var_send(struct hp_varpool *vp, uint32_t slot, uint32_t gen, uint32_t to)
{
	struct hp_var_slot *s;
	uint32_t c, idx, self = vp->self;
	uint64_t gs = GS(gen, HP_VAR_ALLOCATED);

	if (decode(vp, slot, &c, &idx) != 0 || (s = slot_meta(vp, c, idx)) == NULL)
		return -EINVAL;
	/* the host lets it go, sent or not: a caller drops a slot it could
	 * not send */
	hp_var_note_mine(vp, c, idx, 0);
	/* ours only if (gen, Allocated) and owned by us: a stale reference
	 * (the slot reclaimed and someone else's now) must not touch the
	 * owner, or the sweeper would take the slot from its holder when
	 * we die */
	if (hp_load_relaxed_u64(&s->gen_state) != gs || !hp_cas_u32(&s->owner, &self, to))
		return -ESTALE;
	/* release: the payload written before it is visible to whoever
	 * checks InFlight with acquire (hp_var_check) */
	if (!hp_cas_u64(&s->gen_state, &gs, GS(gen, HP_VAR_INFLIGHT))) {
		hp_cas_u32(&s->owner, &to, vp->self);
		return -ESTALE;
	}
	hp_var_note_mine(vp, c, idx, to == HP_VAR_HOST);
	return 0;
}

int
hp_var_check(struct hp_varpool *vp, uint32_t slot, uint32_t gen, uint32_t offset,
	     uint32_t len, uint32_t owner, const uint8_t **payload, const char **rule)
{
	struct hp_var_slot *s;
	uint32_t c, idx;

	if (decode(vp, slot, &c, &idx) != 0 || (s = slot_meta(vp, c, idx)) == NULL) {
		*rule = "shm.varslot.classes";
		return -EPROTO;
	}
	/* acquire: pairs with the sender's release CAS to InFlight
	 * (hp_var_send), after its payload writes */
	if (hp_load_acquire_u64(&s->gen_state) != GS(gen, HP_VAR_INFLIGHT)) {
		*rule = "shm.slot.generation";
		return -EPROTO;
	}
	if (hp_load_relaxed_u32(&s->owner) != owner) {
		*rule = "shm.varslot.ownership";
		return -EPROTO;
	}
	if ((uint64_t)offset + len > vp->c[c].slot_size) {
		*rule = "shm.slot.payload-offset";
		return -EPROTO;
	}
	*payload = slot_data(vp, c, idx) + offset;
	return 0;
}

int
hp_var_pass(struct hp_varpool *vp, uint32_t slot, uint32_t gen, uint32_t from, uint32_t to)
{
	struct hp_var_slot *s;
	uint32_t c, idx;

	if (decode(vp, slot, &c, &idx) != 0 || (s = slot_meta(vp, c, idx)) == NULL)
		return -EINVAL;
	/* the host lets its own go, passed or not (a caller drops a slot it
	 * could not pass on) */
	if (from == HP_VAR_HOST)
		hp_var_note_mine(vp, c, idx, 0);
	if (GEN(hp_load_relaxed_u64(&s->gen_state)) != gen ||
	    !hp_cas_u32(&s->owner, &from, to))
		return -ESTALE;
	if (to == HP_VAR_HOST)
		hp_var_note_mine(vp, c, idx, 1);
	hp_store_relaxed_u64(&s->claim_ns, claim_now());
	return 0;
}

/* Pushes the chain first..last (linked through next_free) of class c. */
int
hp_var_push(struct hp_varpool *vp, uint32_t c, uint32_t first, struct hp_var_slot *last)
{
	struct hp_var_class *k = &vp->cls[c];

	for (int tries = 0; tries < CAS_TRIES; tries++) {
		uint64_t head = hp_load_relaxed_u64(&k->free_head);

		/* 4. */
		hp_store_relaxed_u32(&last->next_free, IDX(head));
		/* 5. release: our next_free (and the holder's reads of the
		 * payload) before the slot is seen on the list */
		if (hp_cas_u64(&k->free_head, &head, HEAD(TAG(head) + 1, first)))
			return 0;
		count(&my_stats(vp, c)->conflicts);
	}
	/* left off the list, Free: a rebuild finds it */
	mark_corrupt(vp, c);
	return -EAGAIN;
}

void
hp_var_wake_waiters(struct hp_varpool *vp)
{
	/* Dekker with hp_var_sleep_begin: our push, a full fence, then the
	 * count; the sleeper counts itself, fences, then re-checks */
	hp_fence_seq_cst();
	if (hp_load_relaxed_u32(&vp->hdr->waiters) == 0)
		return;
	hp_fetch_add_u32(&vp->hdr->wake_seq, 1, memory_order_relaxed);
	hp_futex_wake(&vp->hdr->wake_seq, INT_MAX);
}

/* Frees a slot held; counted in this view's stats or not (hp_var_give). */
static int
free_slot(struct hp_varpool *vp, uint32_t slot, uint32_t gen, int counted)
{
	struct hp_var_slot *s;
	uint32_t c, idx;
	uint64_t gs;

	if (decode(vp, slot, &c, &idx) != 0 || (s = slot_meta(vp, c, idx)) == NULL)
		return -EINVAL;
	/* the host lets it go, freed or not: a free that fails (a peer freed
	 * it or moved it on) leaves it to nobody */
	hp_var_note_mine(vp, c, idx, 0);
	/* r[shm.varslot.freeing] 1-2: generation and state in one CAS, so
	 * a late free never frees the slot's next allocation */
	gs = hp_load_relaxed_u64(&s->gen_state);
	/* bounded: a guest flipping the word cannot keep the host here */
	for (int tries = 0;; tries++) {
		int rc = 0;

		if (tries == CAS_TRIES) {
			mark_corrupt(vp, c);
			return -ESTALE;
		}
		if (GEN(gs) != gen)
			rc = -ESTALE;
		else if (STATE(gs) == HP_VAR_FREE)
			rc = -EALREADY;
		else if (STATE(gs) != HP_VAR_ALLOCATED && STATE(gs) != HP_VAR_INFLIGHT)
			rc = -ESTALE;
		if (rc != 0) {
			if (vp->host) {
				if (rc == -EALREADY)
					vp->diag[c].double_frees++;
				else
					vp->diag[c].stale_frees++;
			} else {
				count(&my_stats(vp, c)->errors);
			}
			return rc;
		}
		if (hp_cas_u64(&s->gen_state, &gs, GS(gen, HP_VAR_FREE)))
			break;
	}
	hp_store_relaxed_u32(&s->last_owner, hp_load_relaxed_u32(&s->owner));
	hp_store_relaxed_u32(&s->owner, HP_VAR_NOBODY);
	hp_fetch_add_u32(&vp->cls[c].in_use, (uint32_t)-1, memory_order_relaxed);
	if (counted)
		count(&my_stats(vp, c)->frees);
	hp_var_push(vp, c, idx, s);
	hp_var_wake_waiters(vp);
	return 0;
}

int
hp_var_free(struct hp_varpool *vp, uint32_t slot, uint32_t gen)
{
	return free_slot(vp, slot, gen, 1);
}

int
hp_var_give(struct hp_varpool *vp, uint32_t slot, uint32_t gen)
{
	return free_slot(vp, slot, gen, 0);
}

int
hp_var_ready(struct hp_varpool *vp)
{
	if (vp->want == HP_VAR_NIL)
		return 1;
	for (uint32_t c = vp->want; c < vp->nclasses; c++)
		/* acquire: pairs with a free's release CAS (step 5) */
		if (IDX(hp_load_acquire_u64(&vp->cls[c].free_head)) != HP_VAR_NIL)
			return 1;
	return 0;
}

uint32_t
hp_var_sleep_begin(struct hp_varpool *vp)
{
	uint32_t seen;

	hp_fetch_add_u32(&vp->hdr->waiters, 1, memory_order_relaxed);
	seen = hp_load_relaxed_u32(&vp->hdr->wake_seq);
	/* Dekker with hp_var_wake_waiters: counted, fenced, then the caller
	 * re-checks hp_var_ready before it sleeps on wake_seq */
	hp_fence_seq_cst();
	return seen;
}

void
hp_var_sleep_end(struct hp_varpool *vp)
{
	hp_fetch_add_u32(&vp->hdr->waiters, (uint32_t)-1, memory_order_relaxed);
}

