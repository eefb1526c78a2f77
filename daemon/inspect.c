/* hubctl inspect: reads a segment file read-only, without any daemon,
 * and checks its invariants. Part of hubctl (hubctl.h), not of hubd. */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/hubctl.h"
#include "daemon/size.h"
#include "proto/clock.h"
#include "proto/segment.h"
#include "proto/slot.h"

static const char *const peer_states[] = { "empty", "attached", "goodbye", "reserved" };

/* Reads a segment file without any daemon and checks its invariants. */
int
cmd_inspect(int fd, int argc, char **argv)
{
	struct hp_segment seg;
	struct hp_slot_pool pool;
	const char *why = NULL;
	struct hp_header *h;
	json_object *o = json_object_new_object(), *peers = json_object_new_array();
	json_object *problems = json_object_new_array();
	char size[24];
	uint64_t now;
	int rc;

	(void)fd;
	(void)argc;
	if ((rc = hp_segment_attach(&seg, argv[0], HP_ATTACH_RDONLY, &why)) != 0)
		errx(2, "%s: %s", argv[0], why ? why : strerror(-rc));
	now = hp_now_ns();
	h = hp_segment_header(&seg);
	const struct hp_params *p = &seg.params;
/* One broken invariant, as a line of the answer's "problems". */
#define PROBLEM(...) do {							\
	char m[160];								\
	snprintf(m, sizeof(m), __VA_ARGS__);					\
	json_object_array_add(problems, json_object_new_string(m));		\
} while (0)
	json_object_object_add(o, "segment", json_object_new_string(argv[0]));
	json_object_object_add(o, "size", json_object_new_uint64(seg.size));
	json_object_object_add(o, "version", json_object_new_int((int)h->version));
	json_object_object_add(o, "max_guests", json_object_new_int((int)p->max_guests));
	json_object_object_add(o, "ring_size", json_object_new_int((int)p->ring_size));
	json_object_object_add(o, "slot_size", json_object_new_int64(p->slot_size));
	json_object_object_add(o, "slots_per_guest", json_object_new_int((int)p->slots_per_guest));
	json_object_object_add(o, "max_channels", json_object_new_int((int)p->max_channels));
	json_object_object_add(o, "host_goodbye", json_object_new_int(
		(int)hp_load_relaxed_u32(&h->host_goodbye)));
	hp_slot_pool_view(&pool, seg.base + hp_geometry_pool_offset(&seg.geo, 0),
			  p->slots_per_guest, p->slot_size);
	json_object_object_add(o, "host_slots_free", json_object_new_int(
		(int)hp_slot_count_free(&pool)));
	uint32_t bad = 0;

	if (hp_segment_check_peers(seg.base, seg.size, p, &seg.geo, &bad) != 0)
		PROBLEM("peer %u: its entry's offsets point outside the segment", bad);
	for (uint32_t id = 1; id <= p->max_guests; id++) {
		struct hp_peer_entry *e = hp_segment_peer(&seg, id);
		struct hp_peer_view v;
		json_object *j = json_object_new_object();
		uint32_t state = hp_load_relaxed_u32(&e->state), open = 0, freeslots;
		uint32_t idx[4] = { hp_load_relaxed_u32(&e->g2h_head), hp_load_relaxed_u32(&e->g2h_tail),
				    hp_load_relaxed_u32(&e->h2g_head), hp_load_relaxed_u32(&e->h2g_tail) };
		uint64_t beat = hp_load_relaxed_u64(&e->last_heartbeat);

		hp_peer_view_host(&seg, id, &v);
		hp_slot_pool_view(&pool, v.pool, p->slots_per_guest, p->slot_size);
		freeslots = hp_slot_count_free(&pool);
		if (state > HP_PEER_RESERVED)
			PROBLEM("peer %u: state %u is not a state", id, state);
		for (int k = 0; k < 4; k++)
			if (idx[k] >= p->ring_size)
				PROBLEM("peer %u: ring index %u out of range", id, idx[k]);
		/* r[shm.slot.pool-layout]: no bits past the last slot */
		if (p->slots_per_guest % 64 != 0 &&
		    (hp_load_relaxed_u64(&pool.bitmap[pool.nwords - 1]) >> (p->slots_per_guest % 64)) != 0)
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
		json_object_object_add(j, "peer_id", json_object_new_int((int)id));
		json_object_object_add(j, "state", json_object_new_string(
			state <= HP_PEER_RESERVED ? peer_states[state] : "?"));
		json_object_object_add(j, "epoch", json_object_new_int64(hp_load_relaxed_u32(&e->epoch)));
		json_object_object_add(j, "g2h_head", json_object_new_int64(idx[0]));
		json_object_object_add(j, "g2h_tail", json_object_new_int64(idx[1]));
		json_object_object_add(j, "h2g_head", json_object_new_int64(idx[2]));
		json_object_object_add(j, "h2g_tail", json_object_new_int64(idx[3]));
		json_object_object_add(j, "slots_free", json_object_new_int((int)freeslots));
		json_object_object_add(j, "channels_open", json_object_new_int((int)open));
		json_object_object_add(j, "heartbeat_age_ms", beat == 0 || beat > now ? NULL :
				       json_object_new_double((double)(now - beat) / 1e6));
		json_object_array_add(peers, j);
	}
#undef PROBLEM
	json_object_object_add(o, "peers", peers);
	json_object_object_add(o, "problems", problems);
	rc = json_object_array_length(problems) == 0 ? 0 : 1;
	hp_segment_close(&seg);
	if (json_out) {
		print_json(o);
		return rc;
	}
	printf("segment %s: %s, version %d, %d guests at most, ring %d, "
	       "%d slots of %" PRId64 " bytes, %d channels, host_goodbye %d\n",
	       argv[0], size_text(size, sizeof(size), json_object_get_uint64(get(o, "size"))),
	       json_object_get_int(get(o, "version")), json_object_get_int(get(o, "max_guests")),
	       json_object_get_int(get(o, "ring_size")), json_object_get_int(get(o, "slots_per_guest")),
	       json_object_get_int64(get(o, "slot_size")), json_object_get_int(get(o, "max_channels")),
	       json_object_get_int(get(o, "host_goodbye")));
	printf("host pool: %d slots free\n", json_object_get_int(get(o, "host_slots_free")));
	printf("%4s %-9s %6s %11s %11s %6s %5s %8s\n", "PEER", "STATE", "EPOCH", "G2H H/T",
	       "H2G H/T", "FREE", "CHANS", "HB-AGE");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *j = json_object_array_get_idx(peers, i);
		char g2h[24], h2g[24], hb[16] = "-";

		if (strcmp(json_object_get_string(get(j, "state")), "empty") == 0 &&
		    json_object_get_int64(get(j, "epoch")) == 0)
			continue;	/* never used */
		snprintf(g2h, sizeof(g2h), "%" PRId64 "/%" PRId64, json_object_get_int64(get(j, "g2h_head")),
			 json_object_get_int64(get(j, "g2h_tail")));
		snprintf(h2g, sizeof(h2g), "%" PRId64 "/%" PRId64, json_object_get_int64(get(j, "h2g_head")),
			 json_object_get_int64(get(j, "h2g_tail")));
		if (get(j, "heartbeat_age_ms") != NULL)
			snprintf(hb, sizeof(hb), "%.0fms", json_object_get_double(get(j, "heartbeat_age_ms")));
		printf("%4d %-9s %6" PRId64 " %11s %11s %6d %5d %8s\n", json_object_get_int(get(j, "peer_id")),
		       json_object_get_string(get(j, "state")), json_object_get_int64(get(j, "epoch")),
		       g2h, h2g, json_object_get_int(get(j, "slots_free")),
		       json_object_get_int(get(j, "channels_open")), hb);
	}
	for (size_t i = 0; i < json_object_array_length(problems); i++)
		printf("PROBLEM: %s\n", json_object_get_string(json_object_array_get_idx(problems, i)));
	printf("invariants: %s\n", rc == 0 ? "ok" : "broken");
	json_object_put(o);
	return rc;
}
