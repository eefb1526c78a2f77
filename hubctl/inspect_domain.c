/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl inspect's reading of a guest's domain, or of any segment the
 * spec allows: its header, where each area lies, the host pool and each
 * peer entry, with their invariants checked. */
#include <stdio.h>

#include <json-c/json.h>

#include "daemon/jsonout.h"
#include "hubctl/inspector.h"
#include "proto/clock.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/slot.h"

static const char *const peer_states[] = { "empty", "attached", "goodbye", "reserved" };

/* Whether the entry has no areas at all: in a guest's domain every other
 * guest's entry is so (Empty, its areas never made). */
static int
no_areas(const struct hp_peer_snap *e)
{
	return e->ring_offset == 0 && e->slot_pool_offset == 0 && e->channel_table_offset == 0;
}

/* Whether the segment is laid out as hubd lays out its own: then it was
 * most likely made by hubd; any other layout the spec allows reads the
 * same. Entries without areas (the other guests' in a domain) say nothing. */
static int
hubd_layout(const struct hp_segment *seg)
{
	struct hp_geometry mine;

	if (hp_geometry_compute(&seg->params, &mine, NULL) != 0 ||
	    mine.total_size != hp_segment_header(seg)->total_size ||
	    mine.peer_table_offset != seg->geo.peer_table_offset ||
	    mine.slot_region_offset != seg->geo.slot_region_offset)
		return 0;
	for (uint32_t id = 1; id <= seg->params.max_guests; id++) {
		struct hp_peer_snap e;

		hp_peer_snapshot(hp_segment_peer(seg, id), &e);
		if (no_areas(&e))
			continue;
		if (e.ring_offset != hp_geometry_ring_offset(&mine, id) ||
		    e.slot_pool_offset != hp_geometry_pool_offset(&mine, id) ||
		    e.channel_table_offset != hp_geometry_chan_offset(&mine, id))
			return 0;
	}
	return 1;
}

/* The peer whose domain seg is: the one entry with areas; 0 when there
 * are more (a whole hub's segment, as the spec draws it) or none. */
static uint32_t
domain_owner(const struct hp_segment *seg)
{
	uint32_t own = 0, n = 0;

	for (uint32_t id = 1; id <= seg->params.max_guests; id++) {
		struct hp_peer_snap e;

		hp_peer_snapshot(hp_segment_peer(seg, id), &e);
		if (!no_areas(&e)) {
			own = id;
			n++;
		}
	}
	return n == 1 ? own : 0;
}

/* One peer entry: its words, and the invariants of it and of its areas;
 * NULL for an entry never used that has no areas (every other guest's in
 * a domain). */
static json_object *
inspect_peer(struct hp_segment *seg, uint32_t id, uint64_t now, json_object *areas,
	     json_object *problems)
{
	const struct hp_params *p = &seg->params;
	const struct hp_geometry *geo = &seg->geo;
	struct hp_slot_pool pool;
	struct hp_peer_snap e;
	struct hp_peer_view v;
	const char *why = NULL;
	json_object *j;
	uint32_t open = 0, freeslots = 0, idx[4];
	int usable;

	hp_peer_snapshot(hp_segment_peer(seg, id), &e);
	if (no_areas(&e) && e.state == HP_PEER_EMPTY && e.epoch == 0 && e.g2h_head == 0 &&
	    e.g2h_tail == 0 && e.h2g_head == 0 && e.h2g_tail == 0)
		return NULL;
	idx[0] = e.g2h_head;
	idx[1] = e.g2h_tail;
	idx[2] = e.h2g_head;
	idx[3] = e.h2g_tail;
	if (e.state > HP_PEER_RESERVED)
		inspect_problem(problems, "peer %u: state %u is not a state", id, e.state);
	for (int k = 0; k < 4; k++)
		if (idx[k] >= p->ring_size)
			inspect_problem(problems, "peer %u: ring index %u out of range", id, idx[k]);
	usable = hp_peer_view_guest(seg, id, &v, &why) == 0;
	if (!usable && !(no_areas(&e) && e.state == HP_PEER_EMPTY)) {
		inspect_problem(problems, "peer %u: %s", id, why);
	} else if (usable) {
		inspect_area(areas, "rings", (int)id, (uint64_t)((uint8_t *)v.g2h - seg->base),
			 geo->ring_bytes);
		inspect_area(areas, "slot pool", (int)id, (uint64_t)(v.pool - seg->base), geo->pool_size);
		inspect_area(areas, "channel table", (int)id, (uint64_t)((uint8_t *)v.chans - seg->base),
			 geo->chan_bytes);
		hp_slot_pool_view(&pool, v.pool, p->slots_per_guest, p->slot_size);
		freeslots = hp_slot_count_free(&pool);
		/* r[shm.slot.pool-layout]: no bits past the last slot */
		if (p->slots_per_guest % 64 != 0 &&
		    (hp_load_relaxed_u64(&pool.bitmap[pool.nwords - 1]) >>
		     (p->slots_per_guest % 64)) != 0)
			inspect_problem(problems, "peer %u: bitmap bits set past the last slot", id);
		for (uint32_t c = 0; c < p->max_channels; c++) {
			uint32_t cs = hp_load_relaxed_u32(&v.chans[c].state);

			open += cs == HP_CHAN_ACTIVE;
			if (cs > HP_CHAN_CLOSED || (c == 0 && cs != HP_CHAN_FREE))
				inspect_problem(problems, "peer %u: channel %u in state %u", id, c, cs);
		}
		/* r[shm.crash.recovery]: an Empty entry was left clean */
		if (e.state == HP_PEER_EMPTY && (idx[0] != idx[1] || idx[2] != idx[3] ||
						 freeslots != p->slots_per_guest || open != 0))
			inspect_problem(problems, "peer %u: Empty but not recovered (rings, slots or "
				"channels in use)", id);
	}
	j = json_object_new_object();
	json_object_object_add(j, "peer_id", json_object_new_int((int)id));
	json_object_object_add(j, "state", json_object_new_string(
		e.state <= HP_PEER_RESERVED ? peer_states[e.state] : "?"));
	json_object_object_add(j, "epoch", json_object_new_int64(e.epoch));
	json_object_object_add(j, "g2h_head", json_object_new_int64(idx[0]));
	json_object_object_add(j, "g2h_tail", json_object_new_int64(idx[1]));
	json_object_object_add(j, "h2g_head", json_object_new_int64(idx[2]));
	json_object_object_add(j, "h2g_tail", json_object_new_int64(idx[3]));
	json_object_object_add(j, "slots_free", usable ? json_object_new_int((int)freeslots) : NULL);
	json_object_object_add(j, "channels_open", usable ? json_object_new_int((int)open) : NULL);
	json_object_object_add(j, "heartbeat_age_ms",
			       e.last_heartbeat == 0 || e.last_heartbeat > now ? NULL :
			       json_fixed((now - e.last_heartbeat) / 1000, 3));
	return j;
}

/* A segment read the way a guest reads it (hp_segment_validate, then
 * each PeerEntry), so any segment the spec allows, not only hubd's: a
 * guest's domain (its own entry alone has areas) or a whole hub's. own:
 * the peer whose domain it is (0: find out). */
json_object *
inspect_domain(struct hp_segment *seg, const char *name, uint32_t own, const char *zone,
	       const char *file)
{
	const struct hp_params *p = &seg->params;
	const struct hp_geometry *geo = &seg->geo;
	struct hp_header *h = hp_segment_header(seg);
	json_object *o = json_object_new_object(), *peers = json_object_new_array();
	json_object *problems = json_object_new_array(), *areas = json_object_new_array();
	struct hp_slot_pool pool;
	uint64_t now = hp_now_ns();

	if (own == 0)
		own = domain_owner(seg);
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "peer_id", own != 0 ? json_object_new_int((int)own) : NULL);
	if (zone != NULL)
		json_object_object_add(o, "zone", json_object_new_string(zone));
	if (file != NULL)
		json_object_object_add(o, "file", json_object_new_string(file));
	json_object_object_add(o, "size", json_object_new_uint64(seg->size));
	json_object_object_add(o, "version", json_object_new_int((int)h->version));
	json_object_object_add(o, "layout", json_object_new_string(hubd_layout(seg) ? "hubd" : "other"));
	json_object_object_add(o, "host_features", json_object_new_int64(h->host_features));
	json_object_object_add(o, "max_guests", json_object_new_int((int)p->max_guests));
	json_object_object_add(o, "ring_size", json_object_new_int((int)p->ring_size));
	json_object_object_add(o, "slot_size", json_object_new_int64(p->slot_size));
	json_object_object_add(o, "slots_per_guest", json_object_new_int((int)p->slots_per_guest));
	json_object_object_add(o, "max_channels", json_object_new_int((int)p->max_channels));
	json_object_object_add(o, "max_payload_size", json_object_new_int64(p->max_payload_size));
	json_object_object_add(o, "host_goodbye", json_object_new_int(
		(int)hp_load_relaxed_u32(&h->host_goodbye)));
	inspect_area(areas, "header", 0, 0, HP_HEADER_SIZE);
	inspect_area(areas, "peer table", 0, geo->peer_table_offset,
		 (uint64_t)p->max_guests * HP_PEER_ENTRY_SIZE);
	if (geo->ext_offset != 0)
		inspect_area(areas, "extension table", 0, geo->ext_offset,
			 (uint64_t)p->max_guests * HP_PEER_EXT_SIZE);
	inspect_area(areas, "host slot pool", 0, geo->slot_region_offset, geo->pool_size);
	hp_slot_pool_view(&pool, seg->base + hp_geometry_pool_offset(geo, 0),
			  p->slots_per_guest, p->slot_size);
	json_object_object_add(o, "host_slots_free", json_object_new_int(
		(int)hp_slot_count_free(&pool)));
	for (uint32_t id = 1; id <= p->max_guests; id++) {
		json_object *j = inspect_peer(seg, id, now, areas, problems);

		if (j != NULL)
			json_object_array_add(peers, j);
	}
	inspect_areas_sort(areas);
	json_object_object_add(o, "areas", areas);
	json_object_object_add(o, "peers", peers);
	json_object_object_add(o, "problems", problems);
	return o;
}
