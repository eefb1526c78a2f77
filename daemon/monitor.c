/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The monitor (hubctl monitor): control clients that watch the calls of
 * the methods a glob matches get a JSON line per call as it ends: caller,
 * callee, method, arguments decoded by the method's signature and cut
 * short, result or error, duration, trace-id. A call is seen where it begins
 * (route.c) and where its answer goes (answer.c), an entry of the
 * watched table in between, named by its origin (origin.watch); with no
 * monitor attached neither place does more than test a pointer. Calls
 * over lanes never pass hubd: while a monitor watches a method, its lane
 * routes are taken back (HP_LANE_UNROUTE) and its calls come through
 * hubd, to be seen; once no monitor watches it, its next call through
 * hubd routes it over the lane again (lanes_offer). A client that reads
 * slowly never makes hubd hold more than MONITOR_OUT_MAX bytes for it:
 * the lines beyond are dropped, and counted in a {"dropped":N} line
 * before the next one that fits. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/answer.h"
#include "daemon/client.h"
#include "daemon/cmd.h"
#include "daemon/host.h"
#include "daemon/jsonout.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/monitor.h"
#include "daemon/pcjson.h"
#include "proto/callmeta.h"
#include "proto/msg.h"
#include "proto/postcard.h"

#define MONITOR_OUT_MAX	(256u << 10)	/* bytes a monitor has not taken: drop beyond */
#define WATCHED_MAX	4096		/* calls watched at once: not seen beyond */
#define ARGS_DECODE_MAX	(64u << 10)	/* arguments or result larger: only their size */
#define SHOW_STR	64		/* bytes of a string (or bytes) shown */
#define SHOW_ITEMS	8		/* elements of a list, tuple or map shown */
#define SHOW_BUDGET	512		/* string bytes shown of one value in all */
#define SHOW_DEPTH	4		/* compounds within compounds shown */

struct monitor {
	struct monitor	*next;
	struct client	*c;
	char		glob[CTL_GLOB_MAX + 1];
	uint64_t	dropped;	/* lines not queued since the last one */
};

/* A call under way that a monitor watches. */
struct watch {
	uint64_t	id;		/* idtab key: origin.watch */
	uint64_t	since_ns;
	uint32_t	caller;		/* the calling guest's peer id, 0: a client */
	uint32_t	epoch;		/* ... its instance */
	uint32_t	callee;		/* the serving guest's, 0: hubd */
	int		lane;		/* the two have a lane: unwatched, it
					 * would have gone over it */
	json_object	*args;
	char		who[ORIGIN_NAME_MAX];
	char		to[CONFIG_GUEST_NAME_MAX + 1];
	char		method[64];
	char		trace[HP_TRACE_ID_HEX + 1];	/* its trace-id, "": none */
	struct hp_sig	sig;		/* the method may go before the answer */
};

/* -- values cut short ---------------------------------------------------- */

/* A string's first SHOW_STR bytes (whole UTF-8 characters) and "...",
 * within what is left of the budget. */
static void
cut_string(json_object *v, size_t *budget)
{
	const char *s = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v), keep = n;
	char buf[SHOW_STR + 8];

	if (keep > SHOW_STR)
		keep = SHOW_STR;
	if (keep > *budget)
		keep = *budget;
	*budget -= keep;
	if (keep == n)
		return;
	while (keep > 0 && ((uint8_t)s[keep] & 0xC0) == 0x80)
		keep--;
	memcpy(buf, s, keep);
	memcpy(buf + keep, "...", 4);
	json_object_set_string_len(v, buf, (int)keep + 3);
}

/* v shortened (v is taken; the result is the caller's): strings cut,
 * lists and maps to their first SHOW_ITEMS elements and a "... N more",
 * what lies deeper than SHOW_DEPTH or past the budget as "...". */
static json_object *
shorten(json_object *v, int depth, size_t *budget)
{
	json_object *out, *e;
	size_t n, i;

	if (v == NULL)
		return NULL;
	if (json_object_is_type(v, json_type_string)) {
		cut_string(v, budget);
		return v;
	}
	if (!json_object_is_type(v, json_type_array) &&
	    !json_object_is_type(v, json_type_object))
		return v;
	if (depth >= SHOW_DEPTH || *budget == 0) {
		json_object_put(v);
		return json_object_new_string("...");
	}
	if (json_object_is_type(v, json_type_array)) {
		n = json_object_array_length(v);
		out = json_object_new_array();
		for (i = 0; i < n && i < SHOW_ITEMS; i++) {
			e = json_object_get(json_object_array_get_idx(v, i));
			json_object_array_add(out, shorten(e, depth + 1, budget));
		}
		if (i < n) {
			char more[48];

			snprintf(more, sizeof(more), "... %zu more", n - i);
			json_object_array_add(out, json_object_new_string(more));
		}
		json_object_put(v);
		return out;
	}
	out = json_object_new_object();
	i = 0;
	n = (size_t)json_object_object_length(v);
	json_object_object_foreach(v, key, val) {
		if (i++ == SHOW_ITEMS)
			break;
		json_object_object_add(out, key, shorten(json_object_get(val), depth + 1,
							 budget));
	}
	if (n > SHOW_ITEMS) {
		char more[48];

		snprintf(more, sizeof(more), "%zu more", n - SHOW_ITEMS);
		json_object_object_add(out, "...", json_object_new_string(more));
	}
	json_object_put(v);
	return out;
}

/* A value too large to decode for a line: its size. */
static json_object *
too_large(size_t len)
{
	char text[64];

	snprintf(text, sizeof(text), "(%zu bytes)", len);
	return json_object_new_string(text);
}

/* The arguments as a JSON array by sig, shortened. */
static json_object *
args_json(const struct hp_sig *sig, const uint8_t *args, size_t len)
{
	size_t budget = SHOW_BUDGET;
	json_object *all, *a;

	if (args == NULL)
		return json_object_new_string("(do not match the signature)");
	if (len > ARGS_DECODE_MAX)
		return too_large(len);
	if (pcjson_args(sig, args, len, &all) != 0)
		return json_object_new_string("(do not decode)");
	a = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(all); i++)
		json_object_array_add(a, shorten(json_object_get(json_object_array_get_idx(all, i)),
						 1, &budget));
	json_object_put(all);
	return a;
}

/* -- monitors ------------------------------------------------------------ */

int
monitor_matches(struct hub *h, const char *method)
{
	for (struct monitor *m = h->monitors; m != NULL; m = m->next)
		if (fnmatch(m->glob, method, 0) == 0)
			return 1;
	return 0;
}

/* A line to m's client, unless it holds too much not taken yet: then
 * dropped and counted, the count said before the next line. */
static void
monitor_put(struct monitor *m, const char *s, size_t n)
{
	struct client *c = m->c;
	char line[48];
	int k;

	if (client_unsent(c) + n + sizeof(line) > MONITOR_OUT_MAX) {
		m->dropped++;
		return;
	}
	if (m->dropped > 0) {
		k = snprintf(line, sizeof(line), "{\"dropped\":%llu}",
			     (unsigned long long)m->dropped);
		client_out_line(c, line, (size_t)k);
		m->dropped = 0;
	}
	client_out_line(c, s, n);
}

/* Calls not seen for want of room: each monitor that would have seen
 * them hears of it. */
static void
monitor_missed(struct hub *h, const char *method)
{
	for (struct monitor *m = h->monitors; m != NULL; m = m->next)
		if (fnmatch(m->glob, method, 0) == 0)
			m->dropped++;
}

static void
watch_drop(struct watch *w)
{
	json_object_put(w->args);
	w->args = NULL;
}

/* No monitor left: the calls under way are seen no more (their ids,
 * never used again, find nothing when they end). */
static void
watched_clear(struct hub *h)
{
	struct watch *w;
	uint32_t pos = 0;

	while ((w = hp_idtab_next(&h->watched, &pos)) != NULL)
		watch_drop(w);
	hp_idtab_free(&h->watched);
}

void
monitor_begin(struct hub *h, struct origin *o, const struct peer *caller,
	      const struct peer *callee, const struct method *meth,
	      const uint8_t *args, size_t len)
{
	struct watch *w;
	uint64_t id;

	o->watch = 0;
	if (!monitor_matches(h, meth->name))
		return;
	if (h->watched.count >= WATCHED_MAX) {
		monitor_missed(h, meth->name);
		return;
	}
	id = ++h->next_watch;	/* 64 bits: never wraps to one in use */
	if ((w = hp_idtab_insert(&h->watched, id)) == NULL) {
		monitor_missed(h, meth->name);
		return;
	}
	w->since_ns = hp_now_ns();
	w->caller = caller != NULL ? caller->id : 0;
	w->epoch = caller != NULL ? caller->epoch : 0;
	w->callee = callee != NULL ? callee->id : 0;
	w->lane = caller != NULL && callee != NULL && lanes_between(h, caller, callee);
	origin_name(h, o, w->who, sizeof(w->who));
	snprintf(w->to, sizeof(w->to), "%s", callee != NULL ? callee->conf->name : "hub");
	snprintf(w->method, sizeof(w->method), "%s", meth->name);
	w->trace[0] = '\0';
	if (o->meta.has_trace)
		hp_trace_id_format(&o->meta, w->trace);
	w->sig = meth->sig;
	w->args = args_json(&meth->sig, args, len);
	o->watch = id;
}

/* The answer's part of the line: "result", or "error" and its "kind". */
static void
answer_json(json_object *o, const struct watch *w, const uint8_t *payload, size_t len)
{
	static const char *const kinds[] = {
		"user", "unknown method", "invalid payload", "cancelled",
	};
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct hp_pc_dec d;
	size_t budget = SHOW_BUDGET, n;
	json_object *v = NULL;
	const char *s;

	if (hp_msg_decode_response(payload, len, &r) != 0) {
		json_object_object_add(o, "error", json_object_new_string(
			"the answer does not decode"));
		return;
	}
	if (r.result == HP_RESULT_OK) {
		if (r.value_len > ARGS_DECODE_MAX) {
			json_object_object_add(o, "result", too_large(r.value_len));
			return;
		}
		hp_pc_dec_init(&d, r.value, r.value_len);
		if (pcjson_value(&d, &w->sig, w->sig.ret, &v) != 0 || hp_pc_remaining(&d) != 0) {
			json_object_put(v);
			json_object_object_add(o, "error", json_object_new_string(
				"the result does not match the signature"));
			return;
		}
		json_object_object_add(o, "result", shorten(v, 0, &budget));
		return;
	}
	json_object_object_add(o, "kind", json_object_new_string(
		r.error < 4 ? kinds[r.error] : "error"));
	hp_pc_dec_init(&d, r.value, r.value_len);
	if (r.error == HP_ERR_USER && hp_pc_get_str(&d, &s, &n) == 0)
		v = json_object_new_string_len(s, (int)n);
	else if (hp_meta_str(&r.meta, HP_META_HUB_ERROR, &s, &n) ||
		 hp_meta_str(&r.meta, HP_META_ERROR_TEXT, &s, &n))
		v = json_object_new_string_len(s, (int)n);
	else
		v = json_object_new_string(r.error < 4 ? kinds[r.error] : "error");
	json_object_object_add(o, "error", shorten(v, 0, &budget));
}

void
monitor_end(struct hub *h, uint64_t watch, const uint8_t *payload, size_t len)
{
	struct watch *e = hp_idtab_find(&h->watched, watch), w;
	uint64_t now = hp_now_ns();
	json_object *o;
	const char *s;

	if (e == NULL)
		return;		/* the monitors went meanwhile */
	w = *e;
	hp_idtab_remove(&h->watched, e);
	if (h->monitors == NULL || !monitor_matches(h, w.method)) {
		watch_drop(&w);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "caller", json_object_new_string(w.who));
	json_object_object_add(o, "callee", json_object_new_string(w.to));
	json_object_object_add(o, "method", json_object_new_string(w.method));
	json_object_object_add(o, "args", w.args);	/* o's now */
	answer_json(o, &w, payload, len);
	json_object_object_add(o, "us", json_object_new_uint64(
		now > w.since_ns ? (now - w.since_ns) / 1000 : 0));
	json_object_object_add(o, "lane", json_object_new_boolean(w.lane));
	if (w.trace[0] != '\0')
		json_object_object_add(o, "trace", json_object_new_string(w.trace));
	if ((s = json_object_to_json_string_ext(o, JSON_OUT_FLAGS)) != NULL) {
		for (struct monitor *m = h->monitors; m != NULL; m = m->next)
			if (fnmatch(m->glob, w.method, 0) == 0)
				monitor_put(m, s, strlen(s));
	}
	json_object_put(o);
}

/* A guest gone: the calls it made to hubd that nobody will answer now
 * (hub.sink, hub.source: their channel went with it) are seen no more.
 * Its calls to guests end as those answer (answer.c). */
static void
monitor_detach(struct hub *h, struct peer *p)
{
	struct watch *w, gone;
	uint32_t pos = 0;

	if (h->watched.count == 0)
		return;
	while ((w = hp_idtab_next(&h->watched, &pos)) != NULL) {
		if (w->callee != 0 || w->caller != p->id || w->epoch != p->epoch)
			continue;
		gone = *w;
		hp_idtab_remove(&h->watched, w);
		watch_drop(&gone);
		pos = 0;	/* the table moved: again from the start */
	}
}

int
monitor_init(struct hub *h)
{
	h->watched = (struct hp_idtab)HP_IDTAB_INIT(struct watch);
	host_on_detach(h, monitor_detach);
	h->hooks.answered = monitor_end;
	return 0;
}

void
monitor_free(struct hub *h)
{
	watched_clear(h);
}

/* -- the command ---------------------------------------------------------- */

/* {"cmd":"monitor","glob":G}: {"ok":true}, then the client watches calls
 * until it closes the connection; client_timeout no longer applies. The
 * lane routes of the methods it watches are taken back at once. */
void
cmd_monitor(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	struct monitor *m;
	json_object *o;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		client_reply_error(c, "out of memory");
		return;
	}
	m->c = c;
	snprintf(m->glob, sizeof(m->glob), "%s", r->glob != NULL ? r->glob : "*");
	m->next = h->monitors;
	h->monitors = m;
	c->monitoring = 1;
	ev_timer_stop(h->loop, &c->tw);
	log_debug("control: client %d (uid %u) monitors calls of %s", c->fd,
		  (unsigned)c->uid, m->glob);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	client_reply(c, o);
	lanes_withdraw(h, monitor_matches);
}

void
monitor_gone(struct client *c)
{
	struct hub *h = c->h;

	for (struct monitor **pp = &h->monitors; *pp != NULL; pp = &(*pp)->next) {
		struct monitor *m = *pp;

		if (m->c != c)
			continue;
		*pp = m->next;
		free(m);
		break;
	}
	c->monitoring = 0;
	/* the methods it alone watched route over lanes again at their
	 * next call through hubd (lanes_offer) */
	if (h->monitors == NULL)
		watched_clear(h);
}
