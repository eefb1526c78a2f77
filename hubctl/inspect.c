/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl inspect: reads a segment file read-only, without any daemon,
 * and checks its invariants. Part of hubctl (hubctl.h), not of hubd. */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/jsonout.h"
#include "daemon/poolfig.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/slot.h"
#include "proto/varpool_host.h"

static const char *const peer_states[] = { "empty", "attached", "goodbye", "reserved" };

/* One area of the file, as the answer's "areas" lists them. */
static void
add_area(json_object *areas, const char *name, int peer, uint64_t off, uint64_t len)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "area", json_object_new_string(name));
	if (peer > 0)
		json_object_object_add(a, "peer_id", json_object_new_int(peer));
	json_object_object_add(a, "offset", json_object_new_uint64(off));
	json_object_object_add(a, "size", json_object_new_uint64(len));
	json_object_array_add(areas, a);
}

static int
by_offset(const void *a, const void *b)
{
	uint64_t x = json_object_get_uint64(get(*(json_object *const *)a, "offset"));
	uint64_t y = json_object_get_uint64(get(*(json_object *const *)b, "offset"));

	return x < y ? -1 : x > y;
}

static void
add_pool_problem(void *arg, const char *problem)
{
	char m[224];

	snprintf(m, sizeof(m), "pool: %s", problem);
	json_object_array_add(arg, json_object_new_string(m));
}

/* The shared pool, read-only: its areas, its figures per class and
 * validate()'s problems. Who is alive is not known offline: any peer id
 * in range counts as a live owner. */
static json_object *
inspect_pool(struct hp_segment *seg, json_object *areas, json_object *problems)
{
	struct hp_varpool *vp = &seg->var;
	json_object *o = json_object_new_object(), *classes = json_object_new_array();
	uint64_t end = vp->offset + hp_var_region_size(vp->nclasses, vp->max_guests);

	add_area(areas, "shared pool headers", 0, vp->offset, end - vp->offset);
	for (uint32_t c = 0; c < vp->nclasses; c++) {
		json_object *e = pool_class_json(vp, c);
		uint64_t extents = json_object_get_uint64(json_object_object_get(e, "extents"));

		for (uint32_t x = 0; x < extents; x++) {
			uint64_t off = hp_load_relaxed_u64(&vp->cls[c].extent_offsets[x]);
			char name[48];

			snprintf(name, sizeof(name), "pool class %u extent %u", c, x);
			add_area(areas, name, 0, off, vp->c[c].extent_bytes);
			if (off + vp->c[c].extent_bytes > end)
				end = off + vp->c[c].extent_bytes;
		}
		json_object_array_add(classes, e);
	}
	json_object_object_add(o, "offset", json_object_new_uint64(vp->offset));
	json_object_object_add(o, "bytes", json_object_new_uint64(end - vp->offset));
	json_object_object_add(o, "max_extents", json_object_new_int((int)vp->max_extents));
	json_object_object_add(o, "classes", classes);
	hp_var_validate(vp, NULL, NULL, add_pool_problem, problems);
	return o;
}

/* Whether the segment is laid out as hubd lays out its own: then it was
 * most likely made by hubd; any other layout the spec allows reads the same. */
static int
hubd_layout(const struct hp_segment *seg)
{
	struct hp_geometry mine;

	/* the header's total_size: extents the shared pool grew lie beyond */
	if (hp_geometry_compute(&seg->params, &mine, NULL) != 0 ||
	    mine.total_size != hp_segment_header(seg)->total_size ||
	    mine.peer_table_offset != seg->geo.peer_table_offset ||
	    mine.slot_region_offset != seg->geo.slot_region_offset)
		return 0;
	for (uint32_t id = 1; id <= seg->params.max_guests; id++) {
		struct hp_peer_snap e;

		hp_peer_snapshot(hp_segment_peer(seg, id), &e);
		if (e.ring_offset != hp_geometry_ring_offset(&mine, id) ||
		    e.slot_pool_offset != hp_geometry_pool_offset(&mine, id) ||
		    e.channel_table_offset != hp_geometry_chan_offset(&mine, id))
			return 0;
	}
	return 1;
}

/* Reads a segment file without any daemon and checks its invariants. It
 * finds every area the way a guest does (hp_segment_validate, then each
 * PeerEntry), so it reads any segment the spec allows, not only hubd's. */
int
hubctl_inspect(struct ctl *ctl, int argc, char **argv)
{
	struct hp_segment seg;
	struct hp_slot_pool pool;
	const char *why = NULL;
	struct hp_header *h;
	json_object *o = json_object_new_object(), *peers = json_object_new_array();
	json_object *problems = json_object_new_array(), *areas = json_object_new_array();
	char size[24];
	uint64_t now;
	int rc;

	(void)argc;
	if ((rc = hp_segment_attach(&seg, argv[0], HP_ATTACH_RDONLY, &why)) != 0)
		errx(2, "%s: %s", argv[0], why ? why : strerror(-rc));
	now = hp_now_ns();
	h = hp_segment_header(&seg);
	const struct hp_params *p = &seg.params;
	const struct hp_geometry *geo = &seg.geo;
/* One broken invariant, as a line of the answer's "problems". */
#define PROBLEM(...) do {							\
	char m[160];								\
	snprintf(m, sizeof(m), __VA_ARGS__);					\
	json_object_array_add(problems, json_object_new_string(m));		\
} while (0)
	json_object_object_add(o, "segment", json_object_new_string(argv[0]));
	json_object_object_add(o, "size", json_object_new_uint64(seg.size));
	json_object_object_add(o, "version", json_object_new_int((int)h->version));
	json_object_object_add(o, "layout", json_object_new_string(hubd_layout(&seg) ? "hubd" : "other"));
	json_object_object_add(o, "host_features", json_object_new_int64(seg.host_features));
	json_object_object_add(o, "max_guests", json_object_new_int((int)p->max_guests));
	json_object_object_add(o, "ring_size", json_object_new_int((int)p->ring_size));
	json_object_object_add(o, "slot_size", json_object_new_int64(p->slot_size));
	json_object_object_add(o, "slots_per_guest", json_object_new_int((int)p->slots_per_guest));
	json_object_object_add(o, "max_channels", json_object_new_int((int)p->max_channels));
	json_object_object_add(o, "max_payload_size", json_object_new_int64(p->max_payload_size));
	json_object_object_add(o, "host_goodbye", json_object_new_int(
		(int)hp_load_relaxed_u32(&h->host_goodbye)));
	add_area(areas, "header", 0, 0, HP_HEADER_SIZE);
	add_area(areas, "peer table", 0, geo->peer_table_offset,
		 (uint64_t)p->max_guests * HP_PEER_ENTRY_SIZE);
	if (geo->ext_offset != 0)
		add_area(areas, "extension table", 0, geo->ext_offset,
			 (uint64_t)p->max_guests * HP_PEER_EXT_SIZE);
	add_area(areas, "host slot pool", 0, geo->slot_region_offset, geo->pool_size);
	hp_slot_pool_view(&pool, seg.base + hp_geometry_pool_offset(geo, 0),
			  p->slots_per_guest, p->slot_size);
	json_object_object_add(o, "host_slots_free", json_object_new_int(
		(int)hp_slot_count_free(&pool)));
	if (seg.var.nclasses > 0)
		json_object_object_add(o, "pool", inspect_pool(&seg, areas, problems));
	for (uint32_t id = 1; id <= p->max_guests; id++) {
		struct hp_peer_snap e;
		struct hp_peer_view v;
		json_object *j = json_object_new_object();
		uint32_t state, open = 0, freeslots = 0;
		uint32_t idx[4];
		uint64_t beat;
		int usable;

		hp_peer_snapshot(hp_segment_peer(&seg, id), &e);
		state = e.state;
		idx[0] = e.g2h_head;
		idx[1] = e.g2h_tail;
		idx[2] = e.h2g_head;
		idx[3] = e.h2g_tail;
		beat = e.last_heartbeat;
		usable = hp_peer_view_guest(&seg, id, &v, &why) == 0;

		if (state > HP_PEER_RESERVED)
			PROBLEM("peer %u: state %u is not a state", id, state);
		for (int k = 0; k < 4; k++)
			if (idx[k] >= p->ring_size)
				PROBLEM("peer %u: ring index %u out of range", id, idx[k]);
		if (!usable) {
			PROBLEM("peer %u: %s", id, why);
		} else {
			add_area(areas, "rings", (int)id, (uint64_t)((uint8_t *)v.g2h - seg.base),
				 geo->ring_bytes);
			add_area(areas, "slot pool", (int)id, (uint64_t)(v.pool - seg.base),
				 geo->pool_size);
			add_area(areas, "channel table", (int)id,
				 (uint64_t)((uint8_t *)v.chans - seg.base), geo->chan_bytes);
			hp_slot_pool_view(&pool, v.pool, p->slots_per_guest, p->slot_size);
			freeslots = hp_slot_count_free(&pool);
			/* r[shm.slot.pool-layout]: no bits past the last slot */
			if (p->slots_per_guest % 64 != 0 &&
			    (hp_load_relaxed_u64(&pool.bitmap[pool.nwords - 1]) >>
			     (p->slots_per_guest % 64)) != 0)
				PROBLEM("peer %u: bitmap bits set past the last slot", id);
			for (uint32_t c = 0; c < p->max_channels; c++) {
				uint32_t cs = hp_load_relaxed_u32(&v.chans[c].state);

				open += cs == HP_CHAN_ACTIVE;
				if (cs > HP_CHAN_CLOSED || (c == 0 && cs != HP_CHAN_FREE))
					PROBLEM("peer %u: channel %u in state %u", id, c, cs);
			}
			/* r[shm.crash.recovery]: an Empty entry was left clean */
			if (state == HP_PEER_EMPTY && (idx[0] != idx[1] || idx[2] != idx[3] ||
						       freeslots != p->slots_per_guest || open != 0))
				PROBLEM("peer %u: Empty but not recovered (rings, slots or channels in use)", id);
		}
		json_object_object_add(j, "peer_id", json_object_new_int((int)id));
		json_object_object_add(j, "state", json_object_new_string(
			state <= HP_PEER_RESERVED ? peer_states[state] : "?"));
		json_object_object_add(j, "epoch", json_object_new_int64(e.epoch));
		json_object_object_add(j, "g2h_head", json_object_new_int64(idx[0]));
		json_object_object_add(j, "g2h_tail", json_object_new_int64(idx[1]));
		json_object_object_add(j, "h2g_head", json_object_new_int64(idx[2]));
		json_object_object_add(j, "h2g_tail", json_object_new_int64(idx[3]));
		json_object_object_add(j, "slots_free", usable ? json_object_new_int((int)freeslots) : NULL);
		json_object_object_add(j, "channels_open", usable ? json_object_new_int((int)open) : NULL);
		json_object_object_add(j, "heartbeat_age_ms", beat == 0 || beat > now ? NULL :
				       json_fixed((now - beat) / 1000, 3));
		json_object_array_add(peers, j);
	}
#undef PROBLEM
	json_object_array_sort(areas, by_offset);
	json_object_object_add(o, "areas", areas);
	json_object_object_add(o, "peers", peers);
	json_object_object_add(o, "problems", problems);
	rc = json_object_array_length(problems) == 0 ? 0 : 1;
	hp_segment_close(&seg);
	if (ctl->json) {
		print_json(o);
		return rc;
	}
	printf("segment %s: %s, version %d, %s layout, %d guests at most, ring %d, "
	       "%d slots of %" PRId64 " bytes, %d channels, host_goodbye %d\n",
	       argv[0], size_text(size, sizeof(size), json_object_get_uint64(get(o, "size"))),
	       json_object_get_int(get(o, "version")), json_object_get_string(get(o, "layout")),
	       json_object_get_int(get(o, "max_guests")),
	       json_object_get_int(get(o, "ring_size")), json_object_get_int(get(o, "slots_per_guest")),
	       json_object_get_int64(get(o, "slot_size")), json_object_get_int(get(o, "max_channels")),
	       json_object_get_int(get(o, "host_goodbye")));
	int64_t feat = json_object_get_int64(get(o, "host_features"));

	printf("host pool: %d slots free; extensions: %s%s%s\n",
	       json_object_get_int(get(o, "host_slots_free")),
	       feat & HP_FEAT_WAITERS ? "waiter words" : "",
	       (feat & HP_FEAT_ALL) == HP_FEAT_ALL ? ", " : "",
	       feat & HP_FEAT_VARSLOT ? "shared pool" : (feat & HP_FEAT_ALL) == 0 ? "none" : "");
	/* Where everything is, in file order. */
	printf("%-18s %-16s %s\n", "OFFSET", "SIZE", "AREA");
	for (size_t i = 0; i < json_object_array_length(areas); i++) {
		json_object *a = json_object_array_get_idx(areas, i), *peer = get(a, "peer_id");
		char name[48];

		if (peer != NULL)
			snprintf(name, sizeof(name), "peer %d %s", json_object_get_int(peer),
				 json_object_get_string(get(a, "area")));
		else
			snprintf(name, sizeof(name), "%s", json_object_get_string(get(a, "area")));
		printf("0x%-16" PRIx64 " %-16s %s\n", json_object_get_uint64(get(a, "offset")),
		       size_text(size, sizeof(size), json_object_get_uint64(get(a, "size"))), name);
	}
	printf("%4s %-9s %6s %11s %11s %6s %5s %10s\n", "PEER", "STATE", "EPOCH", "G2H H/T",
	       "H2G H/T", "FREE", "CHANS", "HB-AGE");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *j = json_object_array_get_idx(peers, i);
		char g2h[24], h2g[24], hb[24] = "-";

		if (strcmp(json_object_get_string(get(j, "state")), "empty") == 0 &&
		    json_object_get_int64(get(j, "epoch")) == 0)
			continue;	/* never used */
		snprintf(g2h, sizeof(g2h), "%" PRId64 "/%" PRId64, json_object_get_int64(get(j, "g2h_head")),
			 json_object_get_int64(get(j, "g2h_tail")));
		snprintf(h2g, sizeof(h2g), "%" PRId64 "/%" PRId64, json_object_get_int64(get(j, "h2g_head")),
			 json_object_get_int64(get(j, "h2g_tail")));
		if (get(j, "heartbeat_age_ms") != NULL)
			duration_text(hb, sizeof(hb), json_ns(get(j, "heartbeat_age_ms"), HP_NS_PER_MS));
		printf("%4d %-9s %6" PRId64 " %11s %11s %6d %5d %10s\n", json_object_get_int(get(j, "peer_id")),
		       json_object_get_string(get(j, "state")), json_object_get_int64(get(j, "epoch")),
		       g2h, h2g, json_object_get_int(get(j, "slots_free")),
		       json_object_get_int(get(j, "channels_open")), hb);
	}
	if (get(o, "pool") != NULL) {
		json_object *vp = get(o, "pool"), *cls = get(vp, "classes");

		printf("shared pool: %s, %d extents per class at most\n",
		       size_text(size, sizeof(size), json_object_get_uint64(get(vp, "bytes"))),
		       json_object_get_int(get(vp, "max_extents")));
		printf("%5s %6s %7s %7s %6s %6s %6s %6s %10s %10s %8s\n", "CLASS", "SIZE",
		       "PER-EXT", "EXTENTS", "SLOTS", "FREE", "IN-USE", "HIGH", "ALLOCS", "FREES",
		       "ERRORS");
		for (size_t i = 0; i < json_object_array_length(cls); i++) {
			json_object *c = json_object_array_get_idx(cls, i);

			printf("%5d %6s %7" PRId64 " %7" PRId64 " %6" PRId64 " %6" PRId64
			       " %6" PRId64 " %6" PRId64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 "%s\n",
			       json_object_get_int(get(c, "class")),
			       size_text(size, sizeof(size), json_object_get_uint64(get(c, "slot_size"))),
			       json_object_get_int64(get(c, "slots_per_extent")),
			       json_object_get_int64(get(c, "extents")),
			       json_object_get_int64(get(c, "slots")),
			       json_object_get_int64(get(c, "free")),
			       json_object_get_int64(get(c, "in_use")),
			       json_object_get_int64(get(c, "high_water")),
			       json_object_get_uint64(get(c, "allocs")),
			       json_object_get_uint64(get(c, "frees")),
			       json_object_get_uint64(get(c, "errors")),
			       json_object_get_boolean(get(c, "corrupt")) ? " (marked corrupt)" : "");
		}
	}
	for (size_t i = 0; i < json_object_array_length(problems); i++)
		printf("PROBLEM: %s\n", json_object_get_string(json_object_array_get_idx(problems, i)));
	printf("invariants: %s\n", rc == 0 ? "ok" : "broken");
	json_object_put(o);
	return rc;
}
