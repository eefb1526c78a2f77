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

/* The guests that serve GUEST.stats with the bridge's signature (hubd's
 * methods answer), as a list of names; NULL when hubd said no. */
json_object *
bridges_list(struct ctl *ctl)
{
	json_object *a = client_cmd(ctl, "methods"), *ms, *out;
	char want[128];

	if (a == NULL || client_failed(ctl, a))
		return NULL;
	ms = js_list(a, "methods");
	out = json_object_new_array();
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
	json_object_put(a);
	return out;
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
 * "method", "from"}]}. */
static json_object *
named(json_object *r)
{
	static const char *const rkeys[] = { "hub", "state", "calls", "errors", "mean_ns",
					     "p99_ns", "in_flight", "last_seen_ms" };
	static const char *const ikeys[] = { "method", "subject", "hubs", "calls", "errors",
					     "mean_ns", "p99_ns", "in_flight" };
	static const char *const ckeys[] = { "call_id", "method", "from" };
	static const struct {
		const char		*key;
		const char *const	*keys;
		size_t			n;
	} lists[] = {
		{ "remotes", rkeys, 8 }, { "imports", ikeys, 8 }, { "calls_in", ckeys, 3 },
	};
	json_object *o = json_object_new_object();

	add(o, "hub", r, 0);
	for (size_t l = 0; l < 3; l++) {
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

/* GUEST.stats called through hubd, named; NULL (said why on stderr) if
 * it failed. */
static json_object *
bridge_stats(struct ctl *ctl, const char *guest)
{
	json_object *req = json_object_new_object(), *a, *o;
	char method[128];

	snprintf(method, sizeof(method), "%s." BR_STATS_METHOD, guest);
	json_object_object_add(req, "cmd", json_object_new_string("call"));
	json_object_object_add(req, "method", json_object_new_string(method));
	json_object_object_add(req, "args", json_object_new_array());
	client_send(ctl, req);
	if ((a = client_read(ctl)) == NULL)
		client_no_answer(ctl, "");
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
		fprintf(stderr, "hubctl: remotes: no NATS bridge on this hub (no guest serves "
			"GUEST." BR_STATS_METHOD ")\n");
		json_object_put(list);
		return 1;
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		const char *guest = json_object_get_string(json_object_array_get_idx(list, i));

		if ((o = bridge_stats(ctl, guest)) == NULL) {
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

/* Where call c (hubd's) is on NATS, from bridge stats s of guest g: a
 * call of an import waits for a hub; a call the bridge made came from
 * one. NULL: not the bridge's. */
static const char *
where_of(json_object *c, const char *g, json_object *s, char *buf, size_t len)
{
	const char *callee = json_object_get_string(js_get(c, "callee"));
	const char *caller = json_object_get_string(js_get(c, "caller"));
	const char *method = json_object_get_string(js_get(c, "method"));
	json_object *is = js_get(s, "imports"), *cs = js_get(s, "calls_in");

	if (callee != NULL && method != NULL && strcmp(callee, g) == 0)
		for (size_t i = 0; i < json_object_array_length(is); i++) {
			json_object *m = json_object_array_get_idx(is, i);
			const char *subject = json_object_get_string(js_get(m, "subject"));
			const char *at;

			if (strcmp(json_object_get_string(js_get(m, "method")), method) != 0 ||
			    subject == NULL)
				continue;
			/* PREFIX.at.HUB.METHOD: that hub; PREFIX.call.METHOD: the
			 * queue group's */
			at = strchr(subject, '.');
			if (at != NULL && strncmp(at, ".at.", 4) == 0)
				snprintf(buf, len, "NATS: hub %.*s", (int)strcspn(at + 4, "."), at + 4);
			else
				snprintf(buf, len, "NATS: queue, %" PRIu64 " hub(s)", js_u64(m, "hubs"));
			return buf;
		}
	if (caller != NULL && strcmp(caller, g) == 0 && js_get(c, "caller_id") != NULL)
		for (size_t i = 0; i < json_object_array_length(cs); i++) {
			json_object *e = json_object_array_get_idx(cs, i);

			if (js_u64(e, "call_id") != js_u64(c, "caller_id"))
				continue;
			snprintf(buf, len, "NATS: from hub %s", json_object_get_string(js_get(e, "from")));
			return buf;
		}
	return NULL;
}

void
bridges_where(struct ctl *ctl, json_object *calls)
{
	json_object *list;
	char buf[200];
	const char *w;

	if (json_object_array_length(calls) == 0 || (list = bridges_list(ctl)) == NULL)
		return;
	for (size_t b = 0; b < json_object_array_length(list); b++) {
		const char *g = json_object_get_string(json_object_array_get_idx(list, b));
		json_object *s = NULL;
		int involved = 0;

		for (size_t i = 0; i < json_object_array_length(calls); i++) {
			json_object *c = json_object_array_get_idx(calls, i);
			const char *callee = json_object_get_string(js_get(c, "callee"));
			const char *caller = json_object_get_string(js_get(c, "caller"));

			involved |= (callee != NULL && strcmp(callee, g) == 0) ||
			    (caller != NULL && strcmp(caller, g) == 0);
		}
		/* a bridge that is busy or gone: its calls without WHERE */
		if (!involved || (s = bridge_stats(ctl, g)) == NULL)
			continue;
		for (size_t i = 0; i < json_object_array_length(calls); i++) {
			json_object *c = json_object_array_get_idx(calls, i);

			if ((w = where_of(c, g, s, buf, sizeof(buf))) != NULL)
				json_object_object_add(c, "where", json_object_new_string(w));
		}
		json_object_put(s);
	}
	json_object_put(list);
}
