/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's commands that ask hubd what it has and print it for people
 * (a table, "key value" lines) or, with -j, as the JSON it is: status,
 * version, methods, lanes and stats. */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/request.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"

int
hubctl_status(struct ctl *ctl, int argc, char **argv)
{
	json_object *a;
	int rc;

	(void)argc;
	(void)argv;
	if ((a = client_ask(ctl, "status", &rc)) == NULL)
		return rc;
	json_object_object_foreach(a, key, val) {
		static const char *const sizes[] = { "mapped_bytes", "slot_size",
			"max_payload_size", "initial_credit", NULL };
		char buf[32];
		int is_size = 0;

		if (strcmp(key, "ok") == 0)
			continue;
		for (size_t k = 0; sizes[k] != NULL; k++)
			is_size |= strcmp(key, sizes[k]) == 0;
		/* a limit exactly (65532 B, not "64.0 KiB"); what is mapped
		 * for people */
		if (is_size && strcmp(key, "mapped_bytes") != 0 &&
		    json_object_get_uint64(val) % 1024 != 0)
			printf("%-22s %" PRIu64 " B\n", key, json_object_get_uint64(val));
		else if (is_size)
			printf("%-22s %s\n", key, size_iec(buf, sizeof(buf), json_object_get_uint64(val)));
		else if (strcmp(key, "uptime_s") == 0)
			printf("%-22s %s\n", "uptime", duration_text(buf, sizeof(buf),
				js_ns(val, HP_NS_PER_S)));
		else if (strcmp(key, "heartbeat_interval_ns") == 0)
			printf("%-22s %s\n", "heartbeat_interval", duration_text(buf, sizeof(buf),
				json_object_get_uint64(val)));
		if (is_size || strcmp(key, "uptime_s") == 0 || strcmp(key, "heartbeat_interval_ns") == 0)
			continue;
		if (strcmp(key, "pool_classes") != 0) {
			printf("%-22s %s\n", key, js_shown(val));
			continue;
		}
		/* each zone's pool has these classes: slot size x slots per
		 * extent (its extents: hubctl pool), or none */
		printf("%-22s", key);
		for (size_t i = 0; json_object_is_type(val, json_type_array) &&
		     i < json_object_array_length(val); i++) {
			json_object *c = json_object_array_get_idx(val, i);
			char size[24];

			printf("%s%s x %" PRIu64, i > 0 ? ", " : " ",
			       size_iec(size, sizeof(size), js_u64(c, "slot_size")),
			       js_u64(c, "slots_per_extent"));
		}
		if (!json_object_is_type(val, json_type_array) || json_object_array_length(val) == 0)
			printf(" none");
		printf("\n");
	}
	json_object_put(a);
	return 0;
}

/* hubctl version: the control protocol hubd speaks and hubctl's, and the
 * commands hubd takes (those this user may not run, apart). */
int
hubctl_version(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *cmds;
	int rc, denied = 0;

	(void)argc;
	(void)argv;
	if ((a = client_ask(ctl, "version", &rc)) == NULL)
		return rc;
	cmds = js_list(a, "commands");
	printf("protocol: %" PRIu64 " (hubctl's: %d)\ncommands:", js_u64(a, "protocol"),
	       CONTROL_PROTOCOL);
	for (size_t i = 0; i < json_object_array_length(cmds); i++) {
		json_object *c = json_object_array_get_idx(cmds, i);

		if (json_object_get_boolean(js_get(c, "allowed")))
			printf(" %s", js_text(c, "name"));
		else
			denied++;
	}
	printf("\n");
	if (denied > 0) {
		printf("for root and hubd's user only:");
		for (size_t i = 0; i < json_object_array_length(cmds); i++) {
			json_object *c = json_object_array_get_idx(cmds, i);

			if (!json_object_get_boolean(js_get(c, "allowed")))
				printf(" %s", js_text(c, "name"));
		}
		printf("\n");
	}
	json_object_put(a);
	return 0;
}

int
hubctl_methods(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *ms;
	int rc, where = 0, wn, ws, wo;

	(void)argc;
	(void)argv;
	if ((a = client_ask(ctl, "methods", &rc)) == NULL)
		return rc;
	ms = js_list(a, "methods");
	/* a WHERE column once a method has one (hub.describe: where its
	 * guest really serves it, a bridge's remote hubs, say) */
	for (size_t i = 0; i < json_object_array_length(ms); i++)
		if (*js_text(json_object_array_get_idx(ms, i), "where") != '\0')
			where = 1;
	wn = js_width(ms, "name", 24);
	ws = js_width(ms, "signature", 28);
	wo = js_width(ms, "owner", 16);
	if (where)
		printf("%-*s %-*s %-*s %s\n", wn, "METHOD", ws, "SIGNATURE", wo, "OWNER", "WHERE");
	else
		printf("%-*s %-*s %s\n", wn, "METHOD", ws, "SIGNATURE", "OWNER");
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);

		if (*js_text(m, "where") != '\0')
			printf("%-*s %-*s %-*s %s\n", wn, js_text(m, "name"), ws,
			       js_text(m, "signature"), wo, js_text(m, "owner"), js_text(m, "where"));
		else
			printf("%-*s %-*s %s\n", wn, js_text(m, "name"), ws, js_text(m, "signature"),
			       js_text(m, "owner"));
	}
	json_object_put(a);
	return 0;
}

/* hubctl lanes: the open lanes, each side's figures, and the lanes
 * closed because a side said the other broke a rule. */
int
hubctl_lanes(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *ls, *vs, *bs;
	char ab[24], ba[24], age[32];
	int rc, w = 16;

	(void)argc;
	(void)argv;
	if ((a = client_ask(ctl, "lanes", &rc)) == NULL)
		return rc;
	if (ctl->json)
		return js_print(a);
	ls = js_list(a, "lanes");
	vs = js_list(a, "violations");
	for (size_t i = 0; i < json_object_array_length(ls); i++) {
		json_object *l = json_object_array_get_idx(ls, i);
		size_t n = strlen(js_text(js_get(l, "a"), "guest")), m = strlen(js_text(js_get(l,
								"b"), "guest"));

		w = n > (size_t)w ? (int)n : m > (size_t)w ? (int)m : w;
	}
	printf("%-5s %-*s %-*s %10s %10s %10s %10s %8s %8s\n", "LANE", w, "A", w, "B",
	       "CALLS-A>B", "CALLS-B>A", "BYTES-A>B", "BYTES-B>A", "WAKES", "AGE");
	for (size_t i = 0; i < json_object_array_length(ls); i++) {
		json_object *l = json_object_array_get_idx(ls, i), *x = js_get(l, "a"), *y = js_get(l, "b");

		printf("%-5" PRIu64 " %-*s %-*s %10" PRIu64 " %10" PRIu64 " %10s %10s %8" PRIu64
		       " %8s\n", json_object_get_uint64(js_get(l, "id")), w, js_text(x, "guest"),
		       w, js_text(y, "guest"), json_object_get_uint64(js_get(x, "calls_out")),
		       json_object_get_uint64(js_get(y, "calls_out")),
		       size_iec(ab, sizeof(ab), json_object_get_uint64(js_get(x, "bytes_out"))),
		       size_iec(ba, sizeof(ba), json_object_get_uint64(js_get(y, "bytes_out"))),
		       json_object_get_uint64(js_get(x, "wakes")) +
		       json_object_get_uint64(js_get(y, "wakes")),
		       duration_text(age, sizeof(age), json_object_get_uint64(js_get(l, "age_ms")) *
				     HP_NS_PER_MS));
	}
	if (json_object_array_length(ls) == 0)
		printf("(no lane open)\n");
	for (size_t i = 0; i < json_object_array_length(vs); i++) {
		json_object *v = json_object_array_get_idx(vs, i);

		printf("closed: %s-%s, %s said: %s\n", js_text(v, "a"), js_text(v, "b"),
		       js_text(v, "reported_by"), js_text(v, "reason"));
	}
	bs = js_list(a, "banned");
	for (size_t i = 0; i < json_object_array_length(bs); i++) {
		json_object *b = json_object_array_get_idx(bs, i);

		printf("banned: %s-%s, no lane for %s more\n", js_text(b, "a"), js_text(b, "b"),
		       duration_text(age, sizeof(age), json_object_get_uint64(js_get(b, "left_ms")) *
				     HP_NS_PER_MS));
	}
	json_object_put(a);
	return 0;
}

/* One line of hubctl stats: counts as they are, bytes for people. */
static void
stats_row(int w, const char *name, json_object *g, const char *const *cols)
{
	char size[24];

	printf("%-*s", w, name);
	for (size_t k = 0; k < 11; k++) {
		uint64_t v = json_object_get_uint64(js_get(g, cols[k]));

		if (strncmp(cols[k], "bytes_", 6) == 0)
			printf(" %12s", size_iec(size, sizeof(size), v));
		else
			printf(" %*" PRIu64, k < 4 ? 12 : 10, v);
	}
	printf("\n");
}

int
hubctl_stats(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *guests;
	int rc, w = 16;
	static const char *const cols[] = { "calls_in", "calls_out", "bytes_in", "bytes_out",
			       "ring_full", "slot_exhausted", "credit_waits", "wakes",
			       "deaths", "restarts", "violations" };
	static const char *const heads[] = { "CALLS-IN", "CALLS-OUT", "BYTES-IN", "BYTES-OUT",
				"RING-FULL", "NO-SLOT", "NO-CREDIT", "WAKES", "DEATHS",
				"RESTARTS", "VIOLATIONS" };

	(void)argc;
	(void)argv;
	if (ctl->every.watch)
		return stats_watch(ctl);
	if ((a = client_ask(ctl, "stats", &rc)) == NULL)
		return rc;
	if (!json_object_is_type(guests = js_get(a, "guests"), json_type_object))
		errx(2, "hubd's answer has no \"guests\"");
	json_object_object_foreach(guests, key, v) {
		(void)v;
		w = strlen(key) > (size_t)w ? (int)strlen(key) : w;
	}
	printf("%-*s", w, "GUEST");
	for (size_t k = 0; k < 11; k++)
		printf(" %*s", k < 4 ? 12 : 10, heads[k]);
	printf("\n");
	json_object_object_foreach(guests, name, g)
		stats_row(w, name, g, cols);
	stats_row(w, "(total)", js_get(a, "total"), cols);
	if (js_get(js_get(a, "total"), "lane_calls_in") != NULL)
		printf("over direct lanes (counted above too): %" PRIu64 " calls\n",
		       json_object_get_uint64(js_get(js_get(a, "total"), "lane_calls_in")));
	if (js_get(a, "pool") != NULL) {
		json_object *p = js_get(a, "pool");

		printf("shared pool: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		       " waits, %" PRIu64 " errors, %" PRIu64 " reclaimed\n",
		       json_object_get_uint64(js_get(p, "allocations")),
		       json_object_get_uint64(js_get(p, "frees")),
		       json_object_get_uint64(js_get(p, "waits")),
		       json_object_get_uint64(js_get(p, "errors")),
		       json_object_get_uint64(js_get(p, "reclaimed")));
	}
	if (js_get(a, "relays") != NULL) {
		char size[24];
		json_object *r = js_get(a, "relays");

		printf("streams between guests: %" PRIu64 " open, %s held\n",
		       json_object_get_uint64(js_get(r, "open")),
		       size_iec(size, sizeof(size),
				 json_object_get_uint64(js_get(r, "queued_bytes"))));
	}
	if (js_get(a, "uploads") != NULL) {
		char size[24];
		json_object *r = js_get(a, "uploads");

		printf("uploads: %" PRIu64 " open, %s held\n",
		       json_object_get_uint64(js_get(r, "open")),
		       size_iec(size, sizeof(size),
				 json_object_get_uint64(js_get(r, "queued_bytes"))));
	}
	if (js_get(a, "loop") != NULL) {
		json_object *l = js_get(a, "loop");

		printf("hubd's loop: %" PRIu64 " iterations, %" PRIu64 " ring polls, %" PRIu64
		       " sleeps\n", json_object_get_uint64(js_get(l, "iterations")),
		       json_object_get_uint64(js_get(l, "polls")),
		       json_object_get_uint64(js_get(l, "sleeps")));
	}
	json_object_put(a);
	return 0;
}
