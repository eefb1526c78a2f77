/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* One guest's PeerEntry and its lifecycle: the only code that stores its
 * words (r[shm.segment.peer-table], r[shm.segment.peer-state]), and where
 * each guest's shared areas are (hp_peer_view). Host and guest each call
 * their side; functions return 0 or -errno and never print.
 *
 *   host  hp_peer_reserve      Empty    -> Reserved   (spawn)
 *   guest hp_peer_attach       Reserved -> Attached   (then epoch + 1)
 *   guest hp_peer_goodbye      Attached -> Goodbye    (detach)
 *   host  hp_peer_goodbye      any      -> Goodbye    (recovery step 1)
 *   host  hp_peer_unreserve    Reserved -> Empty      (spawn failed)
 *
 * hubd makes a fresh domain (segment) for each instance of a guest and
 * drops it at recovery, so an entry of its is never reused: recovery
 * steps 3-6 are the domain going (daemon/supervise.c). A host that keeps
 * one segment for every guest resets the entry itself (tests/host). 
 *
 * The ring indices in the entry belong to the ring protocol (proto/ring.h)
 * once a side has set its rings up; here they are only reset and read. */
#ifndef HP_PEER_H
#define HP_PEER_H

#include <stdint.h>

#include "proto/layout.h"
#include "proto/segment.h"


/* Where one guest's shared areas are, resolved once and kept locally. */
struct hp_peer_view {
	uint32_t		peer_id;
	struct hp_peer_entry	*entry;
	struct hp_desc		*g2h;		/* ring_size descriptors */
	struct hp_desc		*h2g;		/* ring_size descriptors */
	uint8_t			*pool;		/* the guest's slot pool */
	uint8_t			*host_pool;	/* the host's slot pool */
	struct hp_chan_entry	*chans;		/* max_channels entries */
	struct hp_peer_ext	*ext;		/* NULL when the segment has none */
};

/* The host's view: from its own geometry, never from guest-writable offsets. */
int hp_peer_view_host(const struct hp_segment *seg, uint32_t peer_id,
		      struct hp_peer_view *v);

/* The guest's view, whoever laid the segment out: its rings, pool and
 * channel table where its PeerEntry says (read once), the host's pool at
 * the slot region. -EBADMSG with *why naming the area and the problem
 * when one lies outside the file, is misaligned for its atomics (rings 64,
 * pool 8, channel table 4), or overlaps the header, the peer table, the
 * host's pool (rings and channel table: the slot region), the extension
 * table or another of its areas (hp_segment_check_areas). */
int hp_peer_view_guest(const struct hp_segment *seg, uint32_t peer_id,
		       struct hp_peer_view *v, const char **why);

/* Every word of an entry, read once: the state with acquire (pairs with
 * the release or CAS that last set it), the rest relaxed. For the host's
 * periodic checks, its statistics and the inspector; the words a guest
 * writes are shown as read, never trusted. */
struct hp_peer_snap {
	uint32_t	state;			/* HP_PEER_*, or nonsense */
	uint32_t	epoch;
	uint32_t	g2h_head, g2h_tail;
	uint32_t	h2g_head, h2g_tail;
	uint64_t	last_heartbeat;		/* CLOCK_MONOTONIC ns, 0: none yet */
	uint64_t	ring_offset;
	uint64_t	slot_pool_offset;
	uint64_t	channel_table_offset;
	uint32_t	guest_features;
};
void hp_peer_snapshot(struct hp_peer_entry *e, struct hp_peer_snap *s);

/* Single words, acquire: the state (pairs with the CAS or release store
 * that set it), the epoch (pairs with the guest's release increment in
 * hp_peer_attach), the features (pairs with the guest's release store
 * made before its CAS to Attached, hp_peer_announce). */
uint32_t hp_peer_state(struct hp_peer_entry *e);
uint32_t hp_peer_epoch(struct hp_peer_entry *e);
uint32_t hp_peer_features(struct hp_peer_entry *e);

/* The guest's last heartbeat, relaxed: compared with our clock only
 * (r[shm.crash.heartbeat-clock]); 0 before its first. */
uint64_t hp_peer_heartbeat(struct hp_peer_entry *e);

/* -- host ----------------------------------------------------------------- */

/* r[shm.spawn.reserved-state]: Empty -> Reserved before the guest is
 * spawned. -EBUSY with *seen the state found when the entry is not Empty. */
int hp_peer_reserve(struct hp_peer_entry *e, uint32_t *seen);

/* r[shm.spawn.reserved-state]: spawn failed or the guest never attached:
 * Reserved -> Empty again. */
void hp_peer_unreserve(struct hp_peer_entry *e);

/* The HP_FEAT_* the host lets this guest use, in the extension table
 * (nothing without one); written before the guest is spawned. */
void hp_peer_offer(const struct hp_peer_view *v, uint32_t features);

/* A fresh entry's epoch set to the last instance's (before reserve): a
 * host that gives each instance new memory still has every instance
 * attach with an epoch of its own (r[shm.crash.epoch]). */
void hp_peer_carry_epoch(struct hp_peer_entry *e, uint32_t epoch);

/* Wakes a guest written from the spec alone, asleep on its ring head. */
void hp_peer_wake(struct hp_peer_entry *e);

/* -- guest ---------------------------------------------------------------- */

/* r[shm.guest.attach] 4-5: Reserved -> Attached, then the epoch
 * incremented (r[shm.crash.epoch]). -EBUSY with *seen the state found
 * when the entry was not reserved (r[shm.guest.attach-failure]). */
int hp_peer_attach(struct hp_peer_entry *e, uint32_t *seen);

/* The HP_FEAT_* this guest honours, stored before its attach CAS so the
 * host reads them once it sees it Attached (hp_peer_features). */
void hp_peer_announce(struct hp_peer_entry *e, uint32_t features);

/* r[shm.crash.heartbeat] r[shm.crash.heartbeat-clock]: now, our
 * CLOCK_MONOTONIC in ns. */
void hp_peer_beat(struct hp_peer_entry *e, uint64_t now);

/* r[shm.guest.detach] r[shm.goodbye.guest]: the guest leaving; the host
 * too, as the first step of recovery (r[shm.crash.recovery] 1). */
void hp_peer_goodbye(struct hp_peer_entry *e);

#endif
