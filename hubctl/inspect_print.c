/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl inspect's answer for people: per domain its header, areas and
 * peer entries; per pool its areas and classes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "hubctl/inspector.h"
#include "proto/clock.h"
#include "proto/layout.h"

static void
print_areas(json_object *areas)
{
	char size[24];

	/* where everything is, in file order */
	printf("%-18s %-16s %s\n", "OFFSET", "SIZE", "AREA");
	for (size_t i = 0; i < json_object_array_length(areas); i++) {
		json_object *a = json_object_array_get_idx(areas, i), *peer = js_get(a, "peer_id");
		char name[48];

		if (peer != NULL)
			snprintf(name, sizeof(name), "peer %d %s", json_object_get_int(peer),
				 js_text(a, "area"));
		else
			snprintf(name, sizeof(name), "%s", js_text(a, "area"));
		printf("0x%-16" PRIx64 " %-16s %s\n", js_u64(a, "offset"),
		       size_text(size, sizeof(size), js_u64(a, "size")), name);
	}
}

void
inspect_print_domain(json_object *o)
{
	json_object *peers = js_get(o, "peers");
	int64_t feat = json_object_get_int64(js_get(o, "host_features"));
	char size[24], label[96], where[160] = "";

	if (js_get(o, "peer_id") != NULL)
		snprintf(where, sizeof(where), "peer %d%s%s%s%s", json_object_get_int(js_get(o, "peer_id")),
			 js_get(o, "zone") ? ", zone " : "", js_text(o, "zone"),
			 js_get(o, "file") ? ", " : "", js_text(o, "file"));
	else
		snprintf(where, sizeof(where), "%s", js_text(o, "file"));
	printf("%s (%s): %s, version %d, %s layout, %d guests at most, ring %d, "
	       "%d slots of %" PRId64 " bytes, %d channels, host_goodbye %d\n",
	       inspect_domain_label(label, sizeof(label), o), where,
	       size_text(size, sizeof(size), js_u64(o, "size")),
	       json_object_get_int(js_get(o, "version")), js_text(o, "layout"),
	       json_object_get_int(js_get(o, "max_guests")),
	       json_object_get_int(js_get(o, "ring_size")), json_object_get_int(js_get(o, "slots_per_guest")),
	       json_object_get_int64(js_get(o, "slot_size")), json_object_get_int(js_get(o, "max_channels")),
	       json_object_get_int(js_get(o, "host_goodbye")));
	printf("host pool: %d slots free; extensions: %s%s%s\n",
	       json_object_get_int(js_get(o, "host_slots_free")),
	       feat & HP_FEAT_WAITERS ? "waiter words" : "",
	       (feat & HP_FEAT_ALL) == HP_FEAT_ALL ? ", " : "",
	       feat & HP_FEAT_VARSLOT ? "shared pool" : (feat & HP_FEAT_ALL) == 0 ? "none" : "");
	print_areas(js_get(o, "areas"));
	printf("%4s %-9s %6s %11s %11s %6s %5s %10s\n", "PEER", "STATE", "EPOCH", "G2H H/T",
	       "H2G H/T", "FREE", "CHANS", "HB-AGE");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *j = json_object_array_get_idx(peers, i);
		char g2h[24], h2g[24], hb[24] = "-";

		if (strcmp(js_text(j, "state"), "empty") == 0 &&
		    json_object_get_int64(js_get(j, "epoch")) == 0)
			continue;	/* never used */
		snprintf(g2h, sizeof(g2h), "%" PRId64 "/%" PRId64,
			 json_object_get_int64(js_get(j, "g2h_head")),
			 json_object_get_int64(js_get(j, "g2h_tail")));
		snprintf(h2g, sizeof(h2g), "%" PRId64 "/%" PRId64,
			 json_object_get_int64(js_get(j, "h2g_head")),
			 json_object_get_int64(js_get(j, "h2g_tail")));
		if (js_get(j, "heartbeat_age_ms") != NULL)
			duration_text(hb, sizeof(hb), js_ns(js_get(j, "heartbeat_age_ms"), HP_NS_PER_MS));
		printf("%4d %-9s %6" PRId64 " %11s %11s %6d %5d %10s\n",
		       json_object_get_int(js_get(j, "peer_id")), js_text(j, "state"),
		       json_object_get_int64(js_get(j, "epoch")), g2h, h2g,
		       json_object_get_int(js_get(j, "slots_free")),
		       json_object_get_int(js_get(j, "channels_open")), hb);
	}
}

void
inspect_print_pool(json_object *o)
{
	json_object *cls = js_get(o, "classes");
	char size[24];

	printf("pool %s%s%s%s: %s in the extents grown, %d per class at most\n", js_text(o, "name"),
	       js_get(o, "file") ? " (" : "", js_text(o, "file"), js_get(o, "file") ? ")" : "",
	       size_text(size, sizeof(size), js_u64(o, "bytes")),
	       json_object_get_int(js_get(o, "max_extents")));
	print_areas(js_get(o, "areas"));
	printf("%5s %6s %7s %7s %6s %6s %6s %6s %10s %10s %8s\n", "CLASS", "SIZE",
	       "PER-EXT", "EXTENTS", "SLOTS", "FREE", "IN-USE", "HIGH", "ALLOCS", "FREES",
	       "ERRORS");
	for (size_t i = 0; i < json_object_array_length(cls); i++) {
		json_object *c = json_object_array_get_idx(cls, i);

		printf("%5d %6s %7" PRIu64 " %7" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64
		       " %6" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 "%s\n",
		       json_object_get_int(js_get(c, "class")),
		       size_text(size, sizeof(size), js_u64(c, "slot_size")),
		       js_u64(c, "slots_per_extent"), js_u64(c, "extents"), js_u64(c, "slots"),
		       js_u64(c, "free"), js_u64(c, "in_use"), js_u64(c, "high_water"), js_u64(c, "allocs"),
		       js_u64(c, "frees"), js_u64(c, "errors"),
		       json_object_get_boolean(js_get(c, "corrupt")) ? " (marked corrupt)" : "");
	}
}
