/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl pool: each zone's shared pool, a table of its size classes and
 * what their errors were, and with --validate hubd's check of them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/size.h"
#include "hubctl/hubctl.h"

/* A count of the pool's table: as it is, or in K and M when too wide. */
static const char *
count_text(char *buf, size_t len, uint64_t v)
{
	if (v < 1000000)
		snprintf(buf, len, "%" PRIu64, v);
	else
		size_text(buf, len, v);
	return buf;
}

/* Who holds its slots, by hubd's last sweep (an older hubd does not say). */
static void
held_by(const char *sep, const char *who, json_object *e)
{
	char size[24];

	printf("%s %s %" PRIu64 " slot%s, %s", sep, who, js_u64(e, "slots"),
	       js_u64(e, "slots") == 1 ? "" : "s",
	       size_iec(size, sizeof(size), js_u64(e, "bytes")));
}

static void
pool_held(json_object *z)
{
	json_object *held = js_get(z, "held");

	if (!json_object_is_type(held, json_type_array))
		return;
	printf("held:");
	for (size_t i = 0; i < json_object_array_length(held); i++) {
		json_object *e = json_object_array_get_idx(held, i);

		held_by(i == 0 ? "" : ";", js_shown(js_get(e, "name")), e);
	}
	held_by(json_object_array_length(held) > 0 ? ";" : "", "hubd itself",
		js_get(z, "hubd_held"));
	printf("\n");
}

/* One zone's table: who holds what, a row per size class, then what the
 * errors were. */
static void
pool_zone(json_object *a, json_object *z)
{
	static const char *const cols[] = { "slots", "free", "in_use", "high_water", "allocs",
		"frees", "conflicts", "fallbacks", "waits", "reclaimed", "rebuilds", "errors" };
	static const char *const heads[] = { "SLOTS", "FREE", "IN-USE", "HIGH", "ALLOCS",
		"FREES", "CONFL", "FALLBK", "WAITS", "RECLAIM", "REBUILD", "ERRORS" };
	json_object *classes = js_list(z, "classes"), *guests = js_get(z, "guests");
	char size[24], num[24];

	printf("zone %s: %" PRIu64 " member%s", js_text(z, "name"), js_u64(z, "members"),
	       js_u64(z, "members") == 1 ? "" : "s");
	/* which (an older hubd does not say) */
	for (size_t i = 0; json_object_is_type(guests, json_type_array) &&
	     i < json_object_array_length(guests); i++)
		printf("%s%s", i == 0 ? " (" : ", ", js_shown(json_object_array_get_idx(guests, i)));
	if (json_object_is_type(guests, json_type_array) && json_object_array_length(guests) > 0)
		printf(")");
	printf(", %s", size_iec(size, sizeof(size), js_u64(z, "bytes")));
	/* (an older hubd does not say) */
	if (js_get(z, "memory_bytes") != NULL)
		printf(" (%s in memory, %s given back)",
		       size_iec(size, sizeof(size), js_u64(z, "memory_bytes")),
		       size_iec(num, sizeof(num), js_u64(z, "released_bytes")));
	printf(", %" PRIu64 " slots held too long\n", js_u64(z, "stuck"));
	pool_held(z);
	printf("%-5s %9s %7s %7s", "CLASS", "SIZE", "PER-EXT", "EXTENTS");
	for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
		printf(" %*s", (int)(strlen(heads[k]) > 6 ? strlen(heads[k]) : 6), heads[k]);
	printf("\n");
	for (size_t i = 0; i < json_object_array_length(classes); i++) {
		json_object *c = json_object_array_get_idx(classes, i);
		char ext[24];

		snprintf(ext, sizeof(ext), "%" PRIu64 "/%" PRIu64, js_u64(c, "extents"),
			 js_u64(a, "max_extents"));
		printf("%5" PRIu64 " %9s %7" PRIu64 " %7s", js_u64(c, "class"),
		       size_iec(size, sizeof(size), js_u64(c, "slot_size")),
		       js_u64(c, "slots_per_extent"), ext);
		for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
			printf(" %*s", (int)(strlen(heads[k]) > 6 ? strlen(heads[k]) : 6),
			       count_text(num, sizeof(num), js_u64(c, cols[k])));
		printf("\n");
	}
	/* what the errors were, where there were any */
	for (size_t i = 0; i < json_object_array_length(classes); i++) {
		json_object *c = json_object_array_get_idx(classes, i);

		if (js_u64(c, "errors") != 0)
			printf("class %" PRIu64 " errors: %" PRIu64 " double frees, %" PRIu64
			       " stale frees, %" PRIu64 " bad links, %" PRIu64 " by guests\n",
			       js_u64(c, "class"), js_u64(c, "double_frees"), js_u64(c, "stale_frees"),
			       js_u64(c, "bad_links"), js_u64(c, "errors") - js_u64(c, "double_frees") -
			       js_u64(c, "stale_frees") - js_u64(c, "bad_links"));
	}
}

/* hubctl pool [--validate] [--json]: each zone's shared pool per size
 * class, and with --validate their check on the live hub (exit 1 when
 * broken). */
int
hubctl_pool(struct ctl *ctl, int argc, char **argv)
{
	json_object *req = json_object_new_object(), *a, *zones, *problems;
	char size[24];
	int validate = 0, valid;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--validate") == 0)
			validate = 1;
		else if (strcmp(argv[i], "--json") == 0)
			ctl->json = 1;
		else {
			json_object_put(req);
			fprintf(stderr, "usage: hubctl pool [--validate] [--json]\n");
			return 2;
		}
	}
	json_object_object_add(req, "cmd", json_object_new_string("pool"));
	if (validate)
		json_object_object_add(req, "validate", json_object_new_boolean(1));
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	if (client_failed(ctl, a))
		return 1;
	/* without --validate there is no verdict: nothing is wrong */
	valid = !validate || json_object_get_boolean(js_get(a, "valid"));
	if (ctl->json) {
		js_print(a);
		return !valid;
	}
	zones = js_list(a, "zones");
	for (size_t i = 0; i < json_object_array_length(zones); i++) {
		if (i > 0)
			printf("\n");
		pool_zone(a, json_object_array_get_idx(zones, i));
	}
	printf("%s%zu zone%s, each pool %s at start\n", json_object_array_length(zones) > 0 ?
	       "\n" : "", json_object_array_length(zones),
	       json_object_array_length(zones) == 1 ? "" : "s",
	       size_iec(size, sizeof(size), js_u64(a, "initial_bytes")));
	if (validate) {
		problems = js_list(a, "problems");
		for (size_t i = 0; i < json_object_array_length(problems); i++)
			printf("PROBLEM: %s\n", js_shown(json_object_array_get_idx(problems, i)));
		printf("validate: %s\n", valid ? "valid" : "broken");
	}
	json_object_put(a);
	return !valid;
}
