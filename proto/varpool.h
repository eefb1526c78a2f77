/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The variable-size shared slot pool (r[shm.varslot.*]) with the SP8D slot
 * state machine: size classes, each a lock-free Treiber free list with a
 * tagged head, slots in extents the host appends as a class runs out,
 * Free -> Allocated -> InFlight -> Free with every transition a CAS on the
 * slot's (generation, state) word, and the host's sweeper, validate and
 * rebuild (declared in varpool_host.h). Layout in layout.h; the protocol
 * in doc/protocol.md.
 *
 * Ownership: a slot's owner is who must free it next. The allocator owns
 * it (Allocated); sending makes it InFlight: a guest's slot stays its own
 * until the host dequeues the descriptor and takes it, a slot the host
 * sends is the receiving guest's at once. So when a peer dies, every slot
 * it owns is the dead peer's to lose and the sweeper returns it.
 *
 * The host's slots: the owner word says 0 for them, and any guest can
 * write 0 there too, so the host's view keeps its own record of the slots
 * it holds, a bit per slot: hp_var_alloc and hp_var_pass to 0 set it;
 * hp_var_send, hp_var_pass from 0 and hp_var_free clear it, failing or
 * not (a caller drops a slot it could not send, pass or free), as do the
 * sweeper's and rebuild's reclaims. A held slot that says 0 but is not in
 * the record is forged: the sweeper takes it back, validate names it.
 *
 * Trust: the host's view (host = 1) keeps the class geometry and extent
 * offsets privately and checks every index, link and state it reads from
 * the shared region; every walk is bounded. A view is used by one thread. */
#ifndef HP_VARPOOL_H
#define HP_VARPOOL_H

#include <stdint.h>

#include "proto/layout.h"

struct hp_var_conf {
	uint32_t	nclasses;	/* 0: no variable pool */
	uint32_t	max_extents;	/* per class, the first included */
	struct {
		uint32_t	slot_size;	/* multiple of 64, ascending */
		uint32_t	count;		/* slots per extent */
	} cls[HP_VAR_MAX_CLASSES];
};

#define HP_VAR_SLOT_MAX		(256u << 20)	/* largest class slot: 256 MiB */
#define HP_VAR_LOST_MAX		16u	/* lost slots a class's sweep keeps track of */

/* What the host saw itself, per class (guests count theirs in stats). */
struct hp_var_diag {
	uint64_t	reclaimed;	/* returned from dead owners */
	uint64_t	rebuilds;	/* free list rebuilt from the metadata */
	uint64_t	double_frees;	/* a free of a slot already free */
	uint64_t	stale_frees;	/* a free whose generation moved on */
	uint64_t	bad_links;	/* free list link out of range or to a held slot */
	uint64_t	grown;		/* extents appended */
};

struct hp_var_cview {
	uint32_t	slot_size;
	uint32_t	spe;		/* slots per extent */
	uint64_t	extent_bytes;
	uint32_t	mapped;		/* extents this view can reach */
	struct hp_var_slot *meta[HP_VAR_MAX_EXTENTS];
	uint8_t		*data[HP_VAR_MAX_EXTENTS];
	void		*map[HP_VAR_MAX_EXTENTS];	/* own mmap, or NULL */
};

struct hp_varpool {
	uint8_t			*base;		/* the segment's mapping */
	uint64_t		base_size;
	int			fd;
	int			writable;
	int			host;
	uint32_t		self;		/* owner id: 0 host, else peer id */
	uint32_t		max_guests;
	uint32_t		nclasses;
	uint32_t		max_extents;
	uint32_t		max_payload;
	uint64_t		offset;		/* of the region */
	uint64_t		file_end;	/* host: where the next extent goes */
	struct hp_var_header	*hdr;
	struct hp_var_class	*cls;		/* nclasses */
	struct hp_var_stats	*stats;		/* (max_guests + 1) * nclasses */
	struct hp_var_cview	c[HP_VAR_MAX_CLASSES];
	struct hp_var_diag	diag[HP_VAR_MAX_CLASSES];
	uint32_t		want;		/* class an exhausted alloc waits for */
	/* host: Free slots its sweeps found on no list, since when */
	struct hp_var_lost {
		uint32_t	idx;
		uint64_t	gs, since;
	}			lost[HP_VAR_MAX_CLASSES][HP_VAR_LOST_MAX];
	uint32_t		nlost[HP_VAR_MAX_CLASSES];
	/* host: the slots it holds itself, a bit per slot of each class
	 * (max_extents * slots per extent bits, allocated by hp_var_create) */
	uint8_t			*mine[HP_VAR_MAX_CLASSES];
};

/* A slot held by this process. */
struct hp_var_ref {
	uint32_t	slot;		/* as a descriptor names it */
	uint32_t	gen;
	uint8_t		*data;
	uint32_t	cap;		/* the class's slot size */
};

static inline int
hp_var_is_slot(uint32_t payload_slot)
{
	return payload_slot != 0xFFFFFFFFu && (payload_slot & HP_VAR_SLOT_FLAG) != 0;
}

/* A descriptor's slot's class + 1, 0 for none (or a class out of range). */
static inline uint32_t
hp_var_slot_class1(const struct hp_varpool *vp, uint32_t payload_slot)
{
	uint32_t c = (payload_slot & ~HP_VAR_SLOT_FLAG) >> HP_VAR_CLASS_SHIFT;

	return hp_var_is_slot(payload_slot) && c < vp->nclasses ? c + 1 : 0;
}

/* The bytes a descriptor's slot takes (its class's slot size), 0 for none. */
static inline uint32_t
hp_var_slot_bytes(const struct hp_varpool *vp, uint32_t payload_slot)
{
	uint32_t c = hp_var_slot_class1(vp, payload_slot);

	return c != 0 ? vp->c[c - 1].slot_size : 0;
}

/* What lays the pool out or views it. The configuration, the pool's
 * sizes and hp_var_create are the host's (varpool_host.c); the region's
 * and an extent's size, attach and close are every view's. */

/* -EINVAL with *why when out of range. */
int hp_var_conf_check(const struct hp_var_conf *c, const char **why);
/* The defaults: 1 KiB to 32 MiB in five classes (doc/protocol.md). */
void hp_var_conf_default(struct hp_var_conf *c);
/* Bytes of the region (headers and stats, page aligned) and of one extent. */
uint64_t hp_var_region_size(uint32_t nclasses, uint32_t max_guests);
uint64_t hp_var_extent_size(uint32_t slot_size, uint32_t count);
/* Region plus every class's first extent: what the pool starts with. */
uint64_t hp_var_initial_size(const struct hp_var_conf *c, uint32_t max_guests);
/* ... and grown to max_extents in every class: how far its file goes. */
uint64_t hp_var_max_size(const struct hp_var_conf *c, uint32_t max_guests);

/* Host: lays the pool out at base + offset (offset page aligned, the file
 * at least offset + hp_var_initial_size) and keeps fd to grow it by
 * (extents appended, and the file made longer if it is not yet).
 * -EINVAL, or -ENOMEM for the record of the host's own slots. */
int hp_var_create(struct hp_varpool *vp, uint8_t *base, uint64_t base_size, int fd,
		  uint64_t offset, const struct hp_var_conf *c, uint32_t max_guests);
/* Anyone else: a view of the pool at offset, its headers checked (-EBADMSG
 * with *why). self is the owner id this view allocates as. */
int hp_var_attach(struct hp_varpool *vp, uint8_t *base, uint64_t base_size, int fd,
		  int writable, uint64_t offset, uint32_t max_guests, uint32_t self,
		  const char **why);
/* Unmaps the extents mapped apart from the segment; frees the host's
 * record. */
void hp_var_close(struct hp_varpool *vp);

/* r[shm.varslot.selection] r[shm.varslot.allocation]: a slot for len
 * bytes, Allocated and owned by vp->self. 0; -EMSGSIZE over max_payload;
 * -EAGAIN when every class that fits is exhausted (vp->want is set, the
 * host asked to grow: wait with hp_var_wait); -ENOMEM when a new extent
 * cannot be mapped (this view is refused slots, nothing else breaks). */
int hp_var_alloc(struct hp_varpool *vp, uint32_t len, struct hp_var_ref *r);
/* The same, leaving spare slots free in every class it takes from (a
 * class down to them counts as exhausted): the host's copies into a
 * guest's pool, so that what the guests send themselves, their answers
 * above all, always finds a slot. By the classes' in_use counts (a
 * hint) and this view's extents; a class with no more slots than spare
 * keeps none. */
int hp_var_alloc_spare(struct hp_varpool *vp, uint32_t len, uint32_t spare,
		       struct hp_var_ref *r);
/* Whether the class of a descriptor's slot is down to spare free slots,
 * by the same count, and can grow no more (one that can is asked to);
 * 0 for no variable slot. */
int hp_var_short(struct hp_varpool *vp, uint32_t payload_slot, uint32_t spare);
/* Allocated -> InFlight, owned by to. -ESTALE if the slot is not ours. */
int hp_var_send(struct hp_varpool *vp, uint32_t slot, uint32_t gen, uint32_t to);
/* A received descriptor's slot: in range, InFlight, of generation gen and
 * owned by owner, [offset, offset + len) inside it. -EPROTO with *rule. */
int hp_var_check(struct hp_varpool *vp, uint32_t slot, uint32_t gen, uint32_t offset,
		 uint32_t len, uint32_t owner, const uint8_t **payload, const char **rule);
/* Host: hands a checked slot from one owner to another (CAS on owner),
 * stamping the claim time. -ESTALE if it is no longer from's. */
int hp_var_pass(struct hp_varpool *vp, uint32_t slot, uint32_t gen, uint32_t from,
		uint32_t to);
/* r[shm.varslot.freeing]: back on its list. -EALREADY: already free
 * (a double free); -ESTALE: its generation moved on; -EINVAL: no such
 * slot. Wakes processes waiting for a slot. */
int hp_var_free(struct hp_varpool *vp, uint32_t slot, uint32_t gen);

/* Whether the class an exhausted alloc waits for (or a larger one) has a
 * free slot now. */
int hp_var_ready(struct hp_varpool *vp);
/* The futex word and the waiter count a sleeper for a slot uses:
 * hp_var_sleep_begin returns the value to wait on, _end undoes the count. */
uint32_t hp_var_sleep_begin(struct hp_varpool *vp);
void hp_var_sleep_end(struct hp_varpool *vp);

#endif
