/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl peers: every guest in a table, a row each (its last death
 * brief), or one guest in detail, a "key: value" per line (its deaths in
 * full); with -j, as the JSON it is. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "daemon/escape.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"

/* Whether a death's status means something to people: a spawn that
 * failed has its errno there, which its detail says in words. */
static int
status_shown(json_object *d)
{
	/* null: hubd could not know it (a guest started by hand) */
	return strcmp(js_text(d, "reason"), "spawn failed") != 0 && js_get(d, "status") != NULL;
}

/* How a death ended, brief: "crashed SIGSEGV", "hung SIGKILL", "exited 1",
 * "spawn failed" (a hubd that does not name signals: "crashed 11"). */
static const char *
death_cause(char *buf, size_t len, json_object *d)
{
	if (*js_text(d, "signal") != '\0')
		snprintf(buf, len, "%s %s", js_text(d, "reason"), js_text(d, "signal"));
	else if (status_shown(d))
		snprintf(buf, len, "%s %d", js_text(d, "reason"),
			 json_object_get_int(js_get(d, "status")));
	else
		snprintf(buf, len, "%s", js_text(d, "reason"));
	return buf;
}

/* The calls it was serving: " while serving kv.get (1 call), kv.put (2
 * calls)", or "". */
static const char *
death_serving(char *buf, size_t len, json_object *d)
{
	json_object *f = js_get(d, "in_flight"), *ms = js_get(f, "methods");
	uint64_t all = js_u64(f, "calls"), named = 0;
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; json_object_is_type(ms, json_type_array) &&
	     i < json_object_array_length(ms) && n < len; i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		uint64_t calls = js_u64(m, "calls");

		named += calls;
		n += (size_t)snprintf(buf + n, len - n, "%s%s (%" PRIu64 " call%s)",
				      i == 0 ? " while serving " : ", ", js_text(m, "method"),
				      calls, calls == 1 ? "" : "s");
	}
	if (all > named && n < len)
		snprintf(buf + n, len - n, "%s%" PRIu64 " more call%s",
			 n == 0 ? " while serving " : " and ", all - named,
			 all - named == 1 ? "" : "s");
	return buf;
}

/* A death as people read it: when (local time, and how long ago), why. */
static void
death_text(char *buf, size_t len, json_object *d)
{
	uint64_t when = js_ns(js_get(d, "time"), HP_NS_PER_S), now = hp_clock_ns(CLOCK_REALTIME);
	time_t t = (time_t)(when / HP_NS_PER_S);
	char at[32] = "?", ago[24], status[80] = "", serving[320];
	struct tm tm;

	if (localtime_r(&t, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%d %H:%M:%S", &tm);
	if (status_shown(d))
		snprintf(status, sizeof(status), ", status %d%s%s%s",
			 json_object_get_int(js_get(d, "status")),
			 *js_text(d, "signal") ? " (" : "", js_text(d, "signal"),
			 *js_text(d, "signal") ? ")" : "");
	snprintf(buf, len, "%s (%s ago): %s%s%s%s%s", at,
		 duration_text(ago, sizeof(ago), now > when ? now - when : 0), js_text(d, "reason"),
		 status, *js_text(d, "detail") ? ", " : "",
		 js_text(d, "detail"), death_serving(serving, sizeof(serving), d));
}

/* Whom a guest runs as (peers' "user"), for people: "uid N (its own)",
 * "kv (user =)", "root (hubd's: hubd is not root)"; brief, for the
 * table: "own", "kv", "hubd's". "" from a hubd that does not say. */
static void
user_text(char *buf, size_t len, json_object *u, int brief)
{
	const char *as = js_text(u, "as"), *name = js_text(u, "name");
	int64_t uid = json_object_get_int64(js_get(u, "uid"));
	int64_t gid = json_object_get_int64(js_get(u, "gid"));
	char who[64];

	if (*name != '\0')
		snprintf(who, sizeof(who), "%s", name);
	else
		snprintf(who, sizeof(who), "uid %" PRId64, uid);
	if (strcmp(as, "own") == 0 && brief)
		snprintf(buf, len, "own");
	else if (strcmp(as, "own") == 0 && gid != uid)
		snprintf(buf, len, "uid %" PRId64 ", gid %" PRId64 " (its own)", uid, gid);
	else if (strcmp(as, "own") == 0)
		snprintf(buf, len, "uid %" PRId64 " (its own)", uid);
	else if (strcmp(as, "user") == 0)
		snprintf(buf, len, brief ? "%s" : "%s (user =)", who);
	else if (strcmp(as, "hubd") == 0)
		snprintf(buf, len, brief ? "hubd's" : "%s (hubd's: %s)", who, js_text(u, "why"));
	else
		snprintf(buf, len, "%s", brief ? "-" : "");
}

const char *
state_text(char *buf, size_t len, json_object *o)
{
	char left[32];

	if (strcmp(js_text(o, "then"), "start") == 0)
		snprintf(buf, len, "%s, will start when stopped", js_text(o, "state"));
	else if (js_get(o, "starts_in_s") != NULL)
		snprintf(buf, len, "%s, starts in %s", js_text(o, "state"),
			 duration_text(left, sizeof(left), js_ns(js_get(o, "starts_in_s"),
								 HP_NS_PER_S)));
	else
		snprintf(buf, len, "%s", js_text(o, "state"));
	return buf;
}

/* hubctl peers NAME: one guest, a "key: value" per line. */
static int
peer_detail(const struct ctl *ctl, json_object *p)
{
	json_object *deaths = js_get(p, "deaths"), *args = js_get(p, "args");
	char buf[512];

	if (ctl->json)
		return js_print(json_object_get(p));
	printf("name: %s\n", js_text(p, "name"));
	printf("peer id: %d\n", json_object_get_int(js_get(p, "peer_id")));
	printf("state: %s\n", state_text(buf, sizeof(buf), p));
	if (strcmp(js_text(p, "state"), "waiting") == 0)
		printf("  (start = manual: 'hubctl ticket %s' says how to start it)\n",
		       js_text(p, "name"));
	if (*js_text(p, "note") != '\0')	/* what it says of itself (hub.describe) */
		printf("note: %s\n", js_text(p, "note"));
	printf("pid: %d\n", json_object_get_int(js_get(p, "pid")));
	printf("epoch: %" PRId64 "\n", json_object_get_int64(js_get(p, "epoch")));
	printf("uptime: %s\n", strcmp(js_text(p, "state"), "up") != 0 ? "-" :	/* not up */
	       duration_text(buf, sizeof(buf), js_ns(js_get(p, "uptime_s"), HP_NS_PER_S)));
	printf("restarts: %d\n", json_object_get_int(js_get(p, "restarts")));
	if (js_get(p, "heartbeat_age_ms") != NULL)
		printf("heartbeat age: %s\n", duration_text(buf, sizeof(buf),
			js_ns(js_get(p, "heartbeat_age_ms"), HP_NS_PER_MS)));
	if (js_get(p, "g2h_depth") != NULL) {
		printf("rings: %d waiting guest->host, %d host->guest\n",
		       json_object_get_int(js_get(p, "g2h_depth")),
		       json_object_get_int(js_get(p, "h2g_depth")));
		printf("slots: %d in use, %d free\n", json_object_get_int(js_get(p, "slots_used")),
		       json_object_get_int(js_get(p, "slots_free")));
		printf("channels: %d open\n", json_object_get_int(js_get(p, "channels_open")));
	}
	if (js_get(p, "calls_in") != NULL)
		printf("calls: %" PRIu64 " made, %" PRIu64 " served (over lanes: %" PRIu64
		       " made, %" PRIu64 " served)\n",
		       json_object_get_uint64(js_get(p, "calls_in")),
		       json_object_get_uint64(js_get(p, "calls_out")),
		       json_object_get_uint64(js_get(p, "lane_calls_in")),
		       json_object_get_uint64(js_get(p, "lane_calls_out")));
	if (js_get(p, "backlog") != NULL && json_object_get_int64(js_get(p, "backlog")) > 0)
		printf("backlog: %" PRId64 " messages wait in hubd for room in its ring\n",
		       json_object_get_int64(js_get(p, "backlog")));
	if (js_get(p, "held_on") != NULL)	/* doc/guests.md: holds */
		printf("held: not read until %s %s\n", js_text(p, "held_on"),
		       strcmp(js_text(p, "held_by"), "share") == 0 ?
		       "answers some of its calls (it has its share in flight there)" :
		       "reads its backlog");
	if (js_get(p, "lanes") != NULL)
		printf("lanes: %d open, %" PRIu64 " closed over a broken rule\n",
		       json_object_get_int(js_get(p, "lanes")),
		       json_object_get_uint64(js_get(p, "lane_violations")));
	if (js_get(p, "pool_slots") != NULL) {
		char q[24];

		printf("shared pool: %" PRIu64 " slots, %s (quota %" PRIu64 " slots, %s)\n",
		       json_object_get_uint64(js_get(p, "pool_slots")),
		       size_iec(buf, sizeof(buf), json_object_get_uint64(js_get(p, "pool_bytes"))),
		       json_object_get_uint64(js_get(p, "pool_quota_slots")),
		       size_iec(q, sizeof(q), json_object_get_uint64(js_get(p, "pool_quota"))));
	}
	if (js_get(p, "exec") != NULL)
		printf("exec: %s\n", js_text(p, "exec"));
	user_text(buf, sizeof(buf), js_get(p, "user"), 0);
	if (buf[0] != '\0')
		printf("user: %s\n", buf);
	if (js_get(p, "start") != NULL)
		printf("start: %s\n", js_text(p, "start"));
	if (js_get(p, "seccomp") != NULL)
		printf("seccomp: %s\n", json_object_get_boolean(js_get(p, "seccomp")) ?
		       "its system calls filtered" : "none");
	if (json_object_is_type(args, json_type_array) && json_object_array_length(args) > 0) {
		printf("args:");
		for (size_t i = 0; i < json_object_array_length(args); i++)
			printf(" %s", js_shown(json_object_array_get_idx(args, i)));
		printf("\n");
	}
	for (size_t i = 0; json_object_is_type(deaths, json_type_array) &&
	     i < json_object_array_length(deaths); i++) {
		death_text(buf, sizeof(buf), json_object_array_get_idx(deaths, i));
		printf("death %zu: %s\n", i + 1, buf);
	}
	if (!json_object_is_type(deaths, json_type_array) || json_object_array_length(deaths) == 0)
		printf("deaths: none\n");
	return 0;
}

/* hubctl peers [NAME]: every guest in a table, or one in detail. */
int
hubctl_peers(struct ctl *ctl, int argc, char **argv)
{
	json_object *a = NULL, *peers;
	char shown[4 * 64 + 1];
	size_t n;
	int rc, w;

	if (argc == 0 && (a = client_ask(ctl, "peers", &rc)) == NULL)
		return rc;
	if (argc == 1) {
		a = client_cmd(ctl, "peers");
		if (client_failed(ctl, a))
			return 1;
		peers = js_list(a, "peers");
		for (size_t i = 0; i < json_object_array_length(peers); i++) {
			json_object *p = json_object_array_get_idx(peers, i);

			if (strcmp(js_text(p, "name"), argv[0]) == 0) {
				rc = peer_detail(ctl, p);
				json_object_put(a);
				return rc;
			}
		}
		json_object_put(a);
		/* hubd's own words for a name it does not know (restart,
		 * logs): cut as it cuts it, escaped as its answers are */
		n = strlen(argv[0]);
		escape_text(shown, sizeof(shown), argv[0], n < 64 ? n : 64, 0);
		return client_refusal(ctl, "no such guest: %s", shown);
	}
	peers = js_list(a, "peers");
	w = js_width(peers, "name", 16);
	printf("%-*s %4s %-9s %8s %-8s %5s %12s %4s %10s %9s %5s %5s  %s\n", w, "NAME", "PEER",
	       "STATE", "PID", "USER", "EPOCH", "UPTIME", "RST", "HB-AGE", "RINGS", "SLOTS",
	       "CHANS", "LAST DEATH");
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		json_object *p = json_object_array_get_idx(peers, i);
		json_object *deaths = js_get(p, "deaths");
		char last[512] = "-", hb[24] = "-", up[24], rings[24], user[64];
		char cause[64], serving[320];

		if (json_object_is_type(deaths, json_type_array) &&
		    json_object_array_length(deaths) > 0) {
			json_object *d = json_object_array_get_idx(deaths, 0);

			snprintf(last, sizeof(last), "%s%s%s%s",
				 death_cause(cause, sizeof(cause), d),
				 *js_text(d, "detail") ? ", " : "", js_text(d, "detail"),
				 death_serving(serving, sizeof(serving), d));
		}
		if (js_get(p, "heartbeat_age_ms") != NULL)
			duration_text(hb, sizeof(hb), js_ns(js_get(p, "heartbeat_age_ms"), HP_NS_PER_MS));
		snprintf(rings, sizeof(rings), "%d/%d", json_object_get_int(js_get(p, "g2h_depth")),
			 json_object_get_int(js_get(p, "h2g_depth")));
		user_text(user, sizeof(user), js_get(p, "user"), 1);
		printf("%-*s %4d %-9s %8d %-8.8s %5" PRId64 " %12s %4d %10s %9s %5d %5d  %s\n",
		       w, js_text(p, "name"), json_object_get_int(js_get(p, "peer_id")), js_text(p, "state"),
		       json_object_get_int(js_get(p, "pid")), user,
		       json_object_get_int64(js_get(p, "epoch")),
		       strcmp(js_text(p, "state"), "up") != 0 ? "-" :	/* not up */
		       duration_text(up, sizeof(up), js_ns(js_get(p, "uptime_s"), HP_NS_PER_S)),
		       json_object_get_int(js_get(p, "restarts")), hb, rings,
		       json_object_get_int(js_get(p, "slots_used")),
		       json_object_get_int(js_get(p, "channels_open")), last);
		/* what it says of itself (hub.describe), under its row */
		if (*js_text(p, "note") != '\0')
			printf("  note: %s\n", js_text(p, "note"));
	}
	json_object_put(a);
	return 0;
}
