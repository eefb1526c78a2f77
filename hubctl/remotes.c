/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What the hub's NATS bridges (hub-nats) say of the other hubs, from
 * their GUEST.stats (nats/tally.h): hubctl remotes [GUEST], a table per
 * remote hub and per imported method; and, for hubctl calls, where a
 * call that waits at a bridge went on NATS, and from which hub a call a
 * bridge makes came. Every word a remote hub controls (its name, a
 * method's, a subject) is printed through js_shown. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/size.h"
#include "hubctl/hubctl.h"
#include "nats/tally.h"

/* hubd's methods answer; NULL when hubd said no (printed). */
static json_object *
methods_answer(struct ctl *ctl)
{
	json_object *a = client_cmd(ctl, "methods");

	return client_failed(ctl, a) ? NULL : a;
}

/* The guests that serve GUEST.stats with the bridge's signature, in
 * methods answer a, as a list of names. */
static json_object *
bridges_in(json_object *a)
{
	json_object *ms = js_list(a, "methods"), *out = json_object_new_array();
	char want[128];

	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		const char *owner = json_object_get_string(js_get(m, "owner"));
		const char *name = json_object_get_string(js_get(m, "name"));
		const char *sig = json_object_get_string(js_get(m, "signature"));

		if (owner == NULL || name == NULL || sig == NULL)
			continue;
		snprintf(want, sizeof(want), "%s." BR_STATS_METHOD, owner);
		if (strcmp(name, want) == 0 && strcmp(sig, BR_STATS_SIG) == 0)
			json_object_array_add(out, json_object_new_string(owner));
	}
	return out;
}

json_object *
bridges_list(struct ctl *ctl)
{
	json_object *a = methods_answer(ctl), *out;

	if (a == NULL)
		return NULL;
	out = bridges_in(a);
	json_object_put(a);
	return out;
}

/* The owner of method in methods answer a, "?" if none. */
static const char *
owner_of(json_object *a, const char *method)
{
	json_object *ms = js_list(a, "methods");

	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		const char *name = json_object_get_string(js_get(m, "name"));

		if (name != NULL && strcmp(name, method) == 0 && js_get(m, "owner") != NULL)
			return json_object_get_string(js_get(m, "owner"));
	}
	return "?";
}

/* tuple t's field i, of type (0 any) */
static json_object *
field(json_object *t, size_t i)
{
	return json_object_is_type(t, json_type_array) ? json_object_array_get_idx(t, i) : NULL;
}

static void
add(json_object *o, const char *key, json_object *t, size_t i)
{
	json_object_object_add(o, key, json_object_get(field(t, i)));
}

/* GUEST.stats's tuples as named objects: {"hub", "remotes": [{"hub",
 * "state", "calls", "errors", "mean_ns", "p99_ns", "in_flight",
 * "last_seen_ms"}], "imports": [{"method", "subject", "hubs", "calls",
 * "errors", "mean_ns", "p99_ns", "in_flight"}], "calls_in": [{"call_id",
 * "method", "from", "age_ms"}], "calls_out": [{"method", "age_ms"}]}. */
static json_object *
named(json_object *r)
{
	static const char *const rkeys[] = { "hub", "state", "calls", "errors", "mean_ns",
					     "p99_ns", "in_flight", "last_seen_ms" };
	static const char *const ikeys[] = { "method", "subject", "hubs", "calls", "errors",
					     "mean_ns", "p99_ns", "in_flight" };
	static const char *const ckeys[] = { "call_id", "method", "from", "age_ms" };
	static const char *const okeys[] = { "method", "age_ms" };
	static const struct {
		const char		*key;
		const char *const	*keys;
		size_t			n;
	} lists[] = {
		{ "remotes", rkeys, 8 }, { "imports", ikeys, 8 }, { "calls_in", ckeys, 4 },
		{ "calls_out", okeys, 2 },
	};
	json_object *o = json_object_new_object();

	add(o, "hub", r, 0);
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		json_object *in = field(r, l + 1), *out = json_object_new_array();

		for (size_t i = 0; json_object_is_type(in, json_type_array) &&
		     i < json_object_array_length(in); i++) {
			json_object *t = json_object_array_get_idx(in, i), *e = json_object_new_object();

			for (size_t k = 0; k < lists[l].n; k++)
				add(e, lists[l].keys[k], t, k);
			json_object_array_add(out, e);
		}
		json_object_object_add(o, lists[l].key, out);
	}
	return o;
}

/* GUEST.stats called through hubd, named; NULL if it failed: said as any
 * failure (-j too), or for quiet (hubctl calls, which goes on without
 * it) on stderr alone. A hung bridge is what hubctl calls may be run
 * for: the call waits STATS_MS at most. */
#define STATS_MS	3000
static json_object *
bridge_stats(struct ctl *ctl, const char *guest, int quiet)
{
	json_object *req = json_object_new_object(), *a, *o;
	char method[128];

	snprintf(method, sizeof(method), "%s." BR_STATS_METHOD, guest);
	json_object_object_add(req, "cmd", json_object_new_string("call"));
	json_object_object_add(req, "method", json_object_new_string(method));
	json_object_object_add(req, "args", json_object_new_array());
	json_object_object_add(req, "timeout_ms", json_object_new_int64(STATS_MS));
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
	if (quiet && !json_object_get_boolean(js_get(a, "ok"))) {
		fprintf(stderr, "hubctl: %s did not answer: %s\n", method, js_text(a, "error"));
		json_object_put(a);
		return NULL;
	}
	if (client_failed(ctl, a))
		return NULL;
	o = named(js_get(a, "result"));
	json_object_put(a);
	return o;
}

/* A duration in ns for a table, "-" for none. */
static const char *
ns_text(char *buf, size_t len, json_object *v)
{
	if (v == NULL || json_object_is_type(v, json_type_null) || json_object_get_uint64(v) == 0)
		return snprintf(buf, len, "-"), buf;
	return duration_text(buf, len, json_object_get_uint64(v));
}

static void
print_tables(json_object *o, const char *guest)
{
	json_object *rs = js_list(o, "remotes"), *is = js_list(o, "imports");
	char mean[32], p99[32], seen[32], flight[24];

	printf("hub %s on NATS (guest %s)\n", js_text(o, "hub"), guest);
	printf("%-24s %-6s %10s %8s %10s %10s %9s %10s\n", "HUB", "STATE", "CALLS", "ERRORS",
	       "MEAN", "P99", "IN-FLIGHT", "LAST-SEEN");
	for (size_t i = 0; i < json_object_array_length(rs); i++) {
		json_object *r = json_object_array_get_idx(rs, i), *f = js_get(r, "in_flight");

		if (f == NULL || json_object_is_type(f, json_type_null))
			snprintf(flight, sizeof(flight), "-");
		else
			snprintf(flight, sizeof(flight), "%" PRIu64, json_object_get_uint64(f));
		printf("%-24s %-6s %10" PRIu64 " %8" PRIu64 " %10s %10s %9s %10s\n",
		       js_text(r, "hub"), js_text(r, "state"), js_u64(r, "calls"), js_u64(r, "errors"),
		       ns_text(mean, sizeof(mean), js_get(r, "mean_ns")),
		       ns_text(p99, sizeof(p99), js_get(r, "p99_ns")), flight,
		       duration_text(seen, sizeof(seen), js_u64(r, "last_seen_ms") * 1000000u));
	}
	if (json_object_array_length(rs) == 0)
		printf("(no hub heard of)\n");
	printf("\n%-32s %5s %10s %8s %10s %10s %9s %s\n", "METHOD", "HUBS", "CALLS", "ERRORS",
	       "MEAN", "P99", "IN-FLIGHT", "SUBJECT");
	for (size_t i = 0; i < json_object_array_length(is); i++) {
		json_object *m = json_object_array_get_idx(is, i);

		printf("%-32s %5" PRIu64 " %10" PRIu64 " %8" PRIu64 " %10s %10s %9" PRIu64 " %s\n",
		       js_text(m, "method"), js_u64(m, "hubs"), js_u64(m, "calls"),
		       js_u64(m, "errors"), ns_text(mean, sizeof(mean), js_get(m, "mean_ns")),
		       ns_text(p99, sizeof(p99), js_get(m, "p99_ns")), js_u64(m, "in_flight"),
		       js_text(m, "subject"));
	}
	if (json_object_array_length(is) == 0)
		printf("(no method imported)\n");
}

/* hubctl remotes [GUEST]: every bridge's tables (GUEST: that one's). */
int
hubctl_remotes(struct ctl *ctl, int argc, char **argv)
{
	json_object *list, *o;
	int rc = 0;

	if (argc > 0) {
		list = json_object_new_array();
		json_object_array_add(list, json_object_new_string(argv[0]));
	} else if ((list = bridges_list(ctl)) == NULL) {
		return 1;
	}
	if (json_object_array_length(list) == 0) {
		json_object_put(list);
		return client_refusal(ctl, "remotes: no NATS bridge on this hub (no guest serves "
				     "GUEST." BR_STATS_METHOD ")");
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		const char *guest = json_object_get_string(json_object_array_get_idx(list, i));

		if ((o = bridge_stats(ctl, guest, 0)) == NULL) {
			rc = 1;
			continue;
		}
		json_object_object_add(o, "guest", json_object_new_string(guest));
		if (ctl->json) {
			js_print(o);
			continue;
		}
		if (i > 0)
			putchar('\n');
		print_tables(o, js_shown(json_object_array_get_idx(list, i)));
		json_object_put(o);
	}
	json_object_put(list);
	return rc;
}

/* Where on NATS a call of import m goes. */
static const char *
import_where(json_object *m, char *buf, size_t len)
{
	const char *subject = json_object_get_string(js_get(m, "subject"));
	const char *at = subject != NULL ? strchr(subject, '.') : NULL;

	/* PREFIX.at.HUB.METHOD: that hub; PREFIX.call.METHOD: the queue
	 * group's */
	if (at != NULL && strncmp(at, ".at.", 4) == 0)
		snprintf(buf, len, "NATS: hub %.*s", (int)strcspn(at + 4, "."), at + 4);
	else
		snprintf(buf, len, "NATS: queue, %" PRIu64 " hub(s)", js_u64(m, "hubs"));
	return buf;
}

/* The entry of list l whose key is the string value, NULL if none. */
static json_object *
find(json_object *l, const char *key, const char *value)
{
	for (size_t i = 0; value != NULL && i < json_object_array_length(l); i++) {
		const char *v = json_object_get_string(js_get(json_object_array_get_idx(l, i), key));

		if (v != NULL && strcmp(v, value) == 0)
			return json_object_array_get_idx(l, i);
	}
	return NULL;
}

/* A call hubd did not list (over a lane), as its calls are. */
static json_object *
lane_call(const char *caller, const char *callee, const char *method, uint64_t age_ms,
	  const char *where)
{
	json_object *c = json_object_new_object();

	json_object_object_add(c, "caller", json_object_new_string(caller));
	json_object_object_add(c, "callee", json_object_new_string(callee));
	json_object_object_add(c, "method", json_object_new_string(method));
	json_object_object_add(c, "age_s", json_object_new_double((double)age_ms / 1000));
	json_object_object_add(c, "lane", json_object_new_boolean(1));
	json_object_object_add(c, "where", json_object_new_string(where));
	return c;
}

/* Bridge g's calls (stats s) in hubd's list, each given its where, and
 * those hubd does not list (over lanes) added; methods a names the
 * callee of a call the bridge makes over a lane. */
static void
merge(json_object *calls, const char *g, json_object *s, json_object *a)
{
	json_object *is = js_get(s, "imports"), *in = js_get(s, "calls_in");
	json_object *out = js_get(s, "calls_out"), *taken = json_object_new_object(), *m;
	size_t n = json_object_array_length(calls);
	char buf[200];

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(calls, i);
		const char *callee = json_object_get_string(js_get(c, "callee"));
		const char *caller = json_object_get_string(js_get(c, "caller"));
		const char *method = json_object_get_string(js_get(c, "method"));

		if (callee != NULL && strcmp(callee, g) == 0 && (m = find(is, "method", method)) != NULL) {
			json_object_object_add(c, "where", json_object_new_string(
				import_where(m, buf, sizeof(buf))));
			/* one of the bridge's calls out of method: not a lane's */
			json_object_object_add(taken, method, json_object_new_int64(
				json_object_get_int64(js_get(taken, method)) + 1));
		}
		if (caller == NULL || strcmp(caller, g) != 0 || js_get(c, "caller_id") == NULL)
			continue;
		for (size_t k = 0; k < json_object_array_length(in); k++) {
			json_object *e = json_object_array_get_idx(in, k);

			if (js_get(e, "listed") != NULL || js_u64(e, "call_id") != js_u64(c, "caller_id"))
				continue;
			snprintf(buf, sizeof(buf), "NATS: from hub %s",
				 json_object_get_string(js_get(e, "from")));
			json_object_object_add(c, "where", json_object_new_string(buf));
			json_object_object_add(e, "listed", json_object_new_boolean(1));
			break;
		}
	}
	/* calls in from NATS that hubd did not route: over the lane from the
	 * bridge to the method's guest */
	for (size_t k = 0; k < json_object_array_length(in); k++) {
		json_object *e = json_object_array_get_idx(in, k);
		const char *method = json_object_get_string(js_get(e, "method"));

		if (js_get(e, "listed") != NULL || method == NULL)
			continue;
		snprintf(buf, sizeof(buf), "NATS: from hub %s", json_object_get_string(js_get(e, "from")));
		json_object_array_add(calls, lane_call(g, owner_of(a, method), method,
						       js_u64(e, "age_ms"), buf));
	}
	/* calls out beyond those hubd lists, per method: from guests over
	 * their lane to the bridge (which caller, the bridge does not ask) */
	for (size_t k = 0; k < json_object_array_length(out); k++) {
		json_object *o = json_object_array_get_idx(out, k);
		const char *method = json_object_get_string(js_get(o, "method"));
		int64_t left;

		if (method == NULL || (m = find(is, "method", method)) == NULL)
			continue;
		if ((left = json_object_get_int64(js_get(taken, method))) > 0) {
			json_object_object_add(taken, method, json_object_new_int64(left - 1));
			continue;
		}
		json_object_array_add(calls, lane_call("(lane)", g, method, js_u64(o, "age_ms"),
						       import_where(m, buf, sizeof(buf))));
	}
	json_object_put(taken);
}

void
bridges_where(struct ctl *ctl, json_object *calls)
{
	json_object *a, *list;

	if ((a = methods_answer(ctl)) == NULL)
		return;
	list = bridges_in(a);
	for (size_t b = 0; b < json_object_array_length(list); b++) {
		const char *g = json_object_get_string(json_object_array_get_idx(list, b));
		json_object *s;

		/* a bridge that does not answer: its calls without WHERE */
		if ((s = bridge_stats(ctl, g, 1)) == NULL)
			continue;
		merge(calls, g, s, a);
		json_object_put(s);
	}
	json_object_put(list);
	json_object_put(a);
}
