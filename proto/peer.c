/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest's PeerEntry, its lifecycle and its view (peer.h). */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "proto/channel.h"
#include "proto/futex.h"
#include "proto/peer.h"
#include "proto/slot.h"

static void
view_common(const struct hp_segment *seg, uint32_t peer_id, struct hp_peer_view *v)
{
	memset(v, 0, sizeof(*v));
	v->peer_id = peer_id;
	v->entry = hp_segment_peer(seg, peer_id);
	v->host_pool = seg->base + hp_geometry_pool_offset(&seg->geo, 0);
	if (seg->geo.ext_offset != 0)
		v->ext = (struct hp_peer_ext *)(void *)(seg->base + seg->geo.ext_offset +
			(uint64_t)(peer_id - 1) * HP_PEER_EXT_SIZE);
}

int
hp_peer_view_host(const struct hp_segment *seg, uint32_t peer_id, struct hp_peer_view *v)
{
	const struct hp_geometry *g = &seg->geo;

	if (hp_segment_peer(seg, peer_id) == NULL)
		return -EINVAL;
	view_common(seg, peer_id, v);
	/* the host's own layout: a guest can scribble over its entry's
	 * offsets, never redirect the host */
	v->g2h = (struct hp_desc *)(void *)(seg->base + hp_geometry_ring_offset(g, peer_id));
	v->h2g = v->g2h + seg->params.ring_size;
	v->pool = seg->base + hp_geometry_pool_offset(g, peer_id);
	/* r[shm.id.channel-scope]: a table of its own, so its channel ids
	 * are its own */
	v->chans = (struct hp_chan_entry *)(void *)(seg->base + hp_geometry_chan_offset(g, peer_id));
	return 0;
}

int
hp_peer_view_guest(const struct hp_segment *seg, uint32_t peer_id,
		   struct hp_peer_view *v, const char **why)
{
	const struct hp_peer_entry *e = hp_segment_peer(seg, peer_id);
	uint64_t rings, pool, chans;

	if (e == NULL) {
		if (why != NULL)
			*why = "peer id beyond the hub's max_guests";
		return -EINVAL;
	}
	/* the offsets read once: what is checked is what is used */
	rings = e->ring_offset;
	pool = e->slot_pool_offset;
	chans = e->channel_table_offset;
	if (hp_segment_check_areas(seg, rings, pool, chans, why) != 0)
		return -EBADMSG;
	view_common(seg, peer_id, v);
	v->g2h = (struct hp_desc *)(void *)(seg->base + rings);
	v->h2g = v->g2h + seg->params.ring_size;
	v->pool = seg->base + pool;
	v->chans = (struct hp_chan_entry *)(void *)(seg->base + chans);
	return 0;
}

void
hp_peer_snapshot(struct hp_peer_entry *e, struct hp_peer_snap *s)
{
	/* acquire: pairs with whichever CAS or release store set the state
	 * last (hp_peer_reserve, hp_peer_attach, hp_peer_goodbye,
	 * hp_peer_unreserve) */
	s->state = hp_load_acquire_u32(&e->state);
	s->epoch = hp_load_relaxed_u32(&e->epoch);
	s->g2h_head = hp_load_relaxed_u32(&e->g2h_head);
	s->g2h_tail = hp_load_relaxed_u32(&e->g2h_tail);
	s->h2g_head = hp_load_relaxed_u32(&e->h2g_head);
	s->h2g_tail = hp_load_relaxed_u32(&e->h2g_tail);
	s->last_heartbeat = hp_load_relaxed_u64(&e->last_heartbeat);
	s->ring_offset = e->ring_offset;
	s->slot_pool_offset = e->slot_pool_offset;
	s->channel_table_offset = e->channel_table_offset;
	s->guest_features = hp_load_relaxed_u32(&e->guest_features);
}

uint32_t
hp_peer_state(struct hp_peer_entry *e)
{
	/* acquire: pairs with the guest's CAS Reserved -> Attached
	 * (hp_peer_attach) and its release of Goodbye (hp_peer_goodbye) */
	return hp_load_acquire_u32(&e->state);
}

uint32_t
hp_peer_epoch(struct hp_peer_entry *e)
{
	/* acquire: pairs with the guest's release increment (hp_peer_attach) */
	return hp_load_acquire_u32(&e->epoch);
}

uint32_t
hp_peer_features(struct hp_peer_entry *e)
{
	/* acquire: pairs with the guest's release store in hp_peer_announce,
	 * made before its CAS to Attached */
	return hp_load_acquire_u32(&e->guest_features);
}

uint64_t
hp_peer_heartbeat(struct hp_peer_entry *e)
{
	return hp_load_relaxed_u64(&e->last_heartbeat);
}

int
hp_peer_reserve(struct hp_peer_entry *e, uint32_t *seen)
{
	uint32_t empty = HP_PEER_EMPTY;

	/* r[shm.spawn.reserved-state]: ours until it attaches. acq_rel:
	 * acquires hp_peer_unreserve's release of Empty (a host that reuses
	 * an entry); releases to the guest's CAS Reserved -> Attached
	 * (hp_peer_attach). */
	if (!hp_cas_u32(&e->state, &empty, HP_PEER_RESERVED)) {
		*seen = empty;
		return -EBUSY;
	}
	*seen = HP_PEER_EMPTY;
	return 0;
}

void
hp_peer_carry_epoch(struct hp_peer_entry *e, uint32_t epoch)
{
	/* relaxed: published with the reservation (hp_peer_reserve's CAS,
	 * and the fork that starts the guest) */
	hp_store_relaxed_u32(&e->epoch, epoch);
}

void
hp_peer_unreserve(struct hp_peer_entry *e)
{
	/* r[shm.spawn.reserved-state]: back to Empty (release: pairs with
	 * the next hp_peer_reserve's CAS) */
	hp_store_release_u32(&e->state, HP_PEER_EMPTY);
}

void
hp_peer_offer(const struct hp_peer_view *v, uint32_t features)
{
	/* relaxed: the guest reads it at attach, and the fork or exec that
	 * starts it orders it before */
	if (v->ext != NULL)
		hp_store_relaxed_u32(&v->ext->host_offer, features);
}

void
hp_peer_wake(struct hp_peer_entry *e)
{
	hp_futex_wake(&e->h2g_head, INT32_MAX);
}


int
hp_peer_attach(struct hp_peer_entry *e, uint32_t *seen)
{
	uint32_t state = HP_PEER_RESERVED;

	/* r[shm.guest.attach] 4: Reserved -> Attached, or somebody else's
	 * entry (r[shm.guest.attach-failure]). acq_rel: acquires the host's
	 * CAS to Reserved (hp_peer_reserve); releases what the guest set up
	 * to the host's acquire of Attached (hp_peer_state). */
	if (!hp_cas_u32(&e->state, &state, HP_PEER_ATTACHED)) {
		*seen = state;
		return -EBUSY;
	}
	*seen = HP_PEER_RESERVED;
	/* 5: r[shm.crash.epoch]: a new instance (release: pairs with the
	 * host's acquire of the epoch when it attaches us, hp_peer_epoch) */
	hp_fetch_add_u32(&e->epoch, 1, memory_order_release);
	return 0;
}

void
hp_peer_beat(struct hp_peer_entry *e, uint64_t now)
{
	/* relaxed: the host only compares it with its own clock */
	hp_store_relaxed_u64(&e->last_heartbeat, now);
}

void
hp_peer_announce(struct hp_peer_entry *e, uint32_t features)
{
	/* release: pairs with hubd's acquire load in hp_peer_features, made
	 * once it sees us Attached; publishes what the guest set up before
	 * (its cleared waiter word) */
	hp_store_release_u32(&e->guest_features, features);
}

void
hp_peer_goodbye(struct hp_peer_entry *e)
{
	/* release: pairs with the host's acquire of the state (hp_peer_state,
	 * hp_peer_snapshot); from the host, for the guest's attach CAS that
	 * may read it and fail: nothing is published with it */
	hp_store_release_u32(&e->state, HP_PEER_GOODBYE);
}
