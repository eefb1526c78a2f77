/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's commands that ask hubd: one function per command, each
 * sending its request through client.c and printing the answer for people
 * (a table, "key: value" lines) or, with -j, as the JSON it is. */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "daemon/control.h"
#include "daemon/escape.h"
#include "daemon/jsonout.h"
#include "daemon/request.h"
#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "proto/clock.h"

/* How a death ended, brief: "crashed SIGSEGV", "hung SIGKILL", "exited 1"
 * (a hubd that does not name signals: "crashed 11"). */
static const char *
death_cause(char *buf, size_t len, json_object *d)
{
	if (*js_text(d, "signal") != '\0')
		snprintf(buf, len, "%s %s", js_text(d, "reason"), js_text(d, "signal"));
	else
		snprintf(buf, len, "%s %d", js_text(d, "reason"),
			 json_object_get_int(js_get(d, "status")));
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
	char at[32] = "?", ago[24], sig[48] = "", serving[320];
	struct tm tm;

	if (localtime_r(&t, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%d %H:%M:%S", &tm);
	if (*js_text(d, "signal") != '\0')
		snprintf(sig, sizeof(sig), " (%s)", js_text(d, "signal"));
	snprintf(buf, len, "%s (%s ago): %s, status %d%s%s%s%s", at,
		 duration_text(ago, sizeof(ago), now > when ? now - when : 0), js_text(d, "reason"),
		 json_object_get_int(js_get(d, "status")), sig, *js_text(d, "detail") ? ", " : "",
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
	printf("state: %s\n", js_text(p, "state"));
	if (strcmp(js_text(p, "state"), "waiting") == 0)
		printf("  (start = manual: 'hubctl ticket %s' says how to start it)\n",
		       js_text(p, "name"));
	if (*js_text(p, "note") != '\0')	/* what it says of itself (hub.describe) */
		printf("note: %s\n", js_text(p, "note"));
	printf("pid: %d\n", json_object_get_int(js_get(p, "pid")));
	printf("epoch: %" PRId64 "\n", json_object_get_int64(js_get(p, "epoch")));
	printf("uptime: %s\n", duration_text(buf, sizeof(buf), js_ns(js_get(p, "uptime_s"), HP_NS_PER_S)));
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
	int rc;

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
		fprintf(stderr, "hubctl: no guest named '%s' (hubctl peers lists them)\n", argv[0]);
		return 1;
	}
	peers = js_list(a, "peers");
	printf("%-16s %4s %-9s %8s %-8s %5s %12s %4s %10s %9s %5s %5s  %s\n", "NAME", "PEER",
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
				 *js_text(d, "detail") ? " " : "", js_text(d, "detail"),
				 death_serving(serving, sizeof(serving), d));
		}
		if (js_get(p, "heartbeat_age_ms") != NULL)
			duration_text(hb, sizeof(hb), js_ns(js_get(p, "heartbeat_age_ms"), HP_NS_PER_MS));
		snprintf(rings, sizeof(rings), "%d/%d", json_object_get_int(js_get(p, "g2h_depth")),
			 json_object_get_int(js_get(p, "h2g_depth")));
		user_text(user, sizeof(user), js_get(p, "user"), 1);
		printf("%-16s %4d %-9s %8d %-8.8s %5" PRId64 " %12s %4d %10s %9s %5d %5d  %s\n",
		       js_text(p, "name"), json_object_get_int(js_get(p, "peer_id")), js_text(p, "state"),
		       json_object_get_int(js_get(p, "pid")), user,
		       json_object_get_int64(js_get(p, "epoch")),
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

int
hubctl_methods(struct ctl *ctl, int argc, char **argv)
{
	json_object *a, *ms;
	int rc, where = 0;

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
	if (where)
		printf("%-24s %-28s %-16s %s\n", "METHOD", "SIGNATURE", "OWNER", "WHERE");
	else
		printf("%-24s %-28s %s\n", "METHOD", "SIGNATURE", "OWNER");
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);

		if (*js_text(m, "where") != '\0')
			printf("%-24s %-28s %-16s %s\n", js_text(m, "name"), js_text(m, "signature"),
			       js_text(m, "owner"), js_text(m, "where"));
		else
			printf("%-24s %-28s %s\n", js_text(m, "name"), js_text(m, "signature"),
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
	int rc;

	(void)argc;
	(void)argv;
	if ((a = client_ask(ctl, "lanes", &rc)) == NULL)
		return rc;
	if (ctl->json)
		return js_print(a);
	ls = js_list(a, "lanes");
	vs = js_list(a, "violations");
	printf("%-5s %-16s %-16s %10s %10s %10s %10s %8s %8s\n", "LANE", "A", "B", "CALLS-A>B",
	       "CALLS-B>A", "BYTES-A>B", "BYTES-B>A", "WAKES", "AGE");
	for (size_t i = 0; i < json_object_array_length(ls); i++) {
		json_object *l = json_object_array_get_idx(ls, i), *x = js_get(l, "a"), *y = js_get(l, "b");

		printf("%-5" PRIu64 " %-16s %-16s %10" PRIu64 " %10" PRIu64 " %10s %10s %8" PRIu64
		       " %8s\n", json_object_get_uint64(js_get(l, "id")), js_text(x, "guest"),
		       js_text(y, "guest"), json_object_get_uint64(js_get(x, "calls_out")),
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
			"max_payload_size", NULL };
		char buf[32];
		int is_size = 0;

		if (strcmp(key, "ok") == 0)
			continue;
		for (size_t k = 0; sizes[k] != NULL; k++)
			is_size |= strcmp(key, sizes[k]) == 0;
		if (is_size)
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

/* A value printed for people: strings as they are (ending in a newline)
 * but for their control characters, escaped as in every table (a
 * guest's result could drive the terminal otherwise; -j gives the bytes),
 * newlines and tabs kept; the rest as JSON. */
static void
print_value(json_object *v)
{
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		size_t n = (size_t)json_object_get_string_len(v);	/* NULs too */
		char *buf = malloc(4 * n + 1);

		if (buf == NULL)
			err(2, NULL);
		escape_text(buf, 4 * n + 1, s, n, ESCAPE_KEEP_NL);
		n = strlen(buf);
		fwrite(buf, 1, n, stdout);
		if (n == 0 || buf[n - 1] != '\n')
			putchar('\n');
		free(buf);
	}
	else if (v != NULL)
		printf("%s\n", json_object_to_json_string_ext(v, JSON_OUT_FLAGS));
}

/* The stream a call takes from its caller (hub.sink -): stdin's lines,
 * each an item (its text form, the newline left out), then the end.
 * Sent as fast as hubd reads them: it reads the next once it has taken
 * one, so the socket holds the rest back. */
static void
send_items(struct ctl *ctl)
{
	char *line = NULL;
	size_t cap = 0, nline = 0;
	ssize_t n;
	json_object *req;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		nline++;
		if (line[n - 1] == '\n')
			n--;
		req = json_object_new_object();
		json_object_object_add(req, "item", json_object_new_string_len(line, (int)n));
		if (strlen(json_object_to_json_string_ext(req, JSON_OUT_FLAGS)) + 1 >
		    CONTROL_MSG_MAX)
			errx(2, "stdin line %zu: an item of %zd bytes, too long for a line of "
			     "%d bytes to hubd", nline, n, CONTROL_MSG_MAX);
		client_send(ctl, req);
		if (ctl->write_errno != 0)
			break;		/* hubd said why, or its end says so */
	}
	if (ferror(stdin))
		err(2, "stdin");
	free(line);
	req = json_object_new_object();
	json_object_object_add(req, "end", json_object_new_boolean(1));
	client_send(ctl, req);
}

/* --bytes-file FILE: the file's bytes, whatever they are (NULs, newlines),
 * as a bytes argument's text form "base64:..." (doc/control.md). The
 * request line bounds it: a file too large for one is refused here. */
static json_object *
bytes_file_arg(const char *path)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t cap = (CONTROL_MSG_MAX - 1024) / 4 * 3, n = 0, k, o;	/* room for the rest */
	uint8_t *in = malloc(cap + 1);
	char *out;
	json_object *v;
	FILE *f;

	if (in == NULL || (out = malloc(sizeof("base64:") + (cap + 3) / 3 * 4)) == NULL)
		err(2, "malloc");
	if ((f = fopen(path, "rb")) == NULL)
		err(2, "--bytes-file %s", path);
	while (n <= cap && (k = fread(in + n, 1, cap + 1 - n, f)) > 0)
		n += k;
	if (ferror(f))
		err(2, "--bytes-file %s", path);
	fclose(f);
	if (n > cap)
		errx(2, "--bytes-file %s: more than %zu bytes, too large for a request to hubd",
		     path, cap);
	o = (size_t)sprintf(out, "base64:");
	for (k = 0; k < n; k += 3) {
		uint32_t w = (uint32_t)in[k] << 16 | (k + 1 < n ? (uint32_t)in[k + 1] << 8 : 0) |
		    (k + 2 < n ? in[k + 2] : 0);

		out[o++] = b64[w >> 18 & 63];
		out[o++] = b64[w >> 12 & 63];
		out[o++] = k + 1 < n ? b64[w >> 6 & 63] : '=';
		out[o++] = k + 2 < n ? b64[w & 63] : '=';
	}
	v = json_object_new_string_len(out, (int)o);
	free(in);
	free(out);
	return v;
}

int
hubctl_call(struct ctl *ctl, int argc, char **argv)
{
	json_object *req = json_object_new_object(), *args = json_object_new_array(), *a;

	json_object_object_add(req, "cmd", json_object_new_string("call"));
	json_object_object_add(req, "method", json_object_new_string(argv[0]));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--bytes-file") != 0) {
			json_object_array_add(args, json_object_new_string(argv[i]));
			continue;
		}
		if (++i == argc) {
			fprintf(stderr, "hubctl: call: --bytes-file takes a file\n");
			return 2;
		}
		json_object_array_add(args, bytes_file_arg(argv[i]));
	}
	json_object_object_add(req, "args", args);
	client_send(ctl, req);
	while ((a = client_read(ctl)) != NULL) {
		if (!json_object_is_type(a, json_type_object))
			errx(2, "hubd sent an answer that is not a JSON object");
		json_object *item = js_get(a, "item");

		if (json_object_get_boolean(js_get(a, "send"))) {
			json_object_put(a);	/* ours to send: the items, from stdin */
			send_items(ctl);
			continue;
		}
		if (item != NULL) {
			if (ctl->json)
				js_print(a);
			else {
				print_value(item);
				json_object_put(a);
			}
			/* out as it arrives: a reader downstream sees each item
			 * while the stream goes on, and an interrupted hubctl
			 * has printed every item it took */
			if (fflush(stdout) != 0 || ferror(stdout))	/* nobody takes them: stop */
				err(2, "stdout");
			continue;
		}
		if (client_failed(ctl, a))
			return 1;
		if (ctl->json)
			return js_print(a);
		if (!json_object_is_type(js_get(a, "result"), json_type_null))
			print_value(js_get(a, "result"));
		json_object_put(a);
		return 0;
	}
	client_no_answer(ctl, " during the call");	/* never a silent end: exit 2 */
}

static int
supervise(struct ctl *ctl, const char *cmd, const char *name)
{
	json_object *a;
	int rc;

	if ((a = client_ask_about(ctl, cmd, name, &rc)) == NULL)
		return rc;
	/* a start that waits for the guest to stop says so */
	if (strcmp(js_text(a, "then"), "start") == 0)
		printf("%s: %s, will start when stopped\n", name, js_text(a, "state"));
	else
		printf("%s: %s\n", name, js_text(a, "state"));
	json_object_put(a);
	return 0;
}

int
hubctl_restart(struct ctl *ctl, int argc, char **argv)
{
	(void)argc;
	return supervise(ctl, "restart", argv[0]);
}

int
hubctl_stop(struct ctl *ctl, int argc, char **argv)
{
	(void)argc;
	return supervise(ctl, "stop", argv[0]);
}

int
hubctl_start(struct ctl *ctl, int argc, char **argv)
{
	(void)argc;
	return supervise(ctl, "start", argv[0]);
}

/* What reload did and refused, then the verdict. A refusal (permission)
 * has no messages: only the error. */
int
hubctl_reload(struct ctl *ctl, int argc, char **argv)
{
	json_object *a = client_cmd(ctl, "reload"), *msgs;
	int ok = json_object_get_boolean(js_get(a, "ok"));

	(void)argc;
	(void)argv;
	msgs = js_get(a, "messages");
	if (ctl->json) {
		js_print(a);
		return !ok;
	}
	for (size_t i = 0; json_object_is_type(msgs, json_type_array) &&
	     i < json_object_array_length(msgs); i++)
		printf("%s\n", js_shown(json_object_array_get_idx(msgs, i)));
	if (client_failed(ctl, a))
		return 1;
	json_object_put(a);
	return 0;
}

/* One line of hubctl stats: counts as they are, bytes for people. */
static void
stats_row(const char *name, json_object *g, const char *const *cols)
{
	char size[24];

	printf("%-16s", name);
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
	int rc;
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
	printf("%-16s", "GUEST");
	for (size_t k = 0; k < 11; k++)
		printf(" %*s", k < 4 ? 12 : 10, heads[k]);
	printf("\n");
	if (!json_object_is_type(guests = js_get(a, "guests"), json_type_object))
		errx(2, "hubd's answer has no \"guests\"");
	json_object_object_foreach(guests, name, g)
		stats_row(name, g, cols);
	stats_row("(total)", js_get(a, "total"), cols);
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

/* One zone's table: a row per size class, then what the errors were. */
static void
pool_zone(json_object *a, json_object *z)
{
	static const char *const cols[] = { "slots", "free", "in_use", "high_water", "allocs",
		"frees", "conflicts", "fallbacks", "waits", "reclaimed", "rebuilds", "errors" };
	static const char *const heads[] = { "SLOTS", "FREE", "IN-USE", "HIGH", "ALLOCS",
		"FREES", "CONFL", "FALLBK", "WAITS", "RECLAIM", "REBUILD", "ERRORS" };
	json_object *classes = js_list(z, "classes");
	char size[24], num[24];

	printf("zone %s: %" PRIu64 " member%s, %s, %" PRIu64 " slots held too long\n",
	       js_text(z, "name"), js_u64(z, "members"), js_u64(z, "members") == 1 ? "" : "s",
	       size_iec(size, sizeof(size), js_u64(z, "bytes")), js_u64(z, "stuck"));
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
