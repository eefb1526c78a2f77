/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The control commands (request.h's CTL_COMMANDS): one cmd_* handler
 * each, which answers as JSON: peers, methods, status, stats, pool,
 * reload, restart, stop, start, and call with its stream's items and
 * result rendered from postcard (pcjson.c); and their table, for the
 * socket below (control.c: the clients, parsing, who may run what). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/answer.h"
#include "daemon/client.h"
#include "daemon/commands.h"
#include "daemon/filter.h"
#include "daemon/guestlog.h"
#include "daemon/control.h"
#include "daemon/host.h"
#include "daemon/jsonout.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/manual.h"
#include "daemon/methods.h"
#include "daemon/pcjson.h"
#include "daemon/pool.h"
#include "daemon/poolfig.h"
#include "daemon/relay.h"
#include "daemon/reload.h"
#include "daemon/request.h"
#include "daemon/route.h"
#include "daemon/streams.h"
#include "daemon/supervise.h"
#include "proto/builtin.h"
#include "proto/channel.h"
#include "proto/peer.h"
#include "proto/postcard.h"
#include "proto/sig.h"
#include "proto/xxh.h"
#include "proto/varpool_host.h"

/* An item of a call's stream, as {"item":VALUE}. Its bytes go back to the
 * guest as credit once the line is written (client_mark_add). */
static void
call_item(struct ext_call *x, const uint8_t *item, size_t len)
{
	struct client *c = x->ctx;
	uint64_t start = c->queued;
	struct hp_pc_dec d;
	char line[48];
	json_object *o, *v;
	uint64_t u;
	int n = -1;

	hp_pc_dec_init(&d, item, len);
	if (x->sig.node[x->item].type == HP_T_U64) {	/* the common case, without json-c */
		u = hp_pc_get_u64(&d);
		if (d.err == 0)
			n = snprintf(line, sizeof(line), "{\"item\":%" PRIu64 "}", u);
	}
	if (n > 0) {
		client_out_line(c, line, (size_t)n);
	} else {
		hp_pc_dec_init(&d, item, len);
		o = json_object_new_object();
		if (pcjson_value(&d, &x->sig, x->item, &v) != 0 || hp_pc_remaining(&d) != 0) {
			json_object_put(v);
			v = json_object_new_string("(item does not decode)");
		}
		json_object_object_add(o, "item", v);
		client_reply(c, o);
	}
	client_mark_add(c, start, (uint32_t)len);
}

static void
call_done(struct ext_call *x, int status, const struct hp_response *r)
{
	static const char *const kinds[] = {
		"user", "unknown method", "invalid payload", "cancelled",
	};
	struct client *c = x->ctx;
	json_object *o = json_object_new_object(), *v;
	struct hp_pc_dec d;
	const char *s;
	size_t n;

	c->calling = 0;
	c->mcount = 0;		/* the stream is over: nobody's credit any more */
	if (status != 0 || r == NULL) {
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "error",
				       json_object_new_string("the answer does not decode"));
	} else if (r->result == HP_RESULT_OK) {
		int rc;

		hp_pc_dec_init(&d, r->value, r->value_len);
		if ((rc = pcjson_value(&d, &x->sig, x->sig.ret, &v)) != 0 ||
		    hp_pc_remaining(&d) != 0) {
			char sig[HP_SIG_MAX_LEN + 1];
			char text[sizeof(x->method) + HP_SIG_MAX_LEN + 64];

			json_object_put(v);
			hp_sig_text(&x->sig, sig, sizeof(sig));
			if (rc == -E2BIG)
				snprintf(text, sizeof(text), "%s returned more than %u values: "
					 "too many to show", x->method, PCJSON_VALUES_MAX);
			else
				snprintf(text, sizeof(text), "%s returned a value that does not "
					 "match its signature %s", x->method, sig);
			json_object_object_add(o, "ok", json_object_new_boolean(0));
			json_object_object_add(o, "error", json_object_new_string(text));
		} else {
			json_object_object_add(o, "ok", json_object_new_boolean(1));
			json_object_object_add(o, "result", v);
		}
	} else {
		const char *msg = r->error < 4 ? kinds[r->error] : "error", *t, *why;
		size_t tn, wn;
		int hub = hp_meta_str(&r->meta, HP_META_HUB_ERROR, &why, &wn);

		/* a guest's answer forwarded from elsewhere (guest_reply_status):
		 * what failed there, and the text of a kind that has none */
		if (!hub && r->error == HP_ERR_USER &&
		    hp_meta_str(&r->meta, HP_META_ERROR_KIND, &t, &tn)) {
			if (hp_meta_is(t, tn, HP_ERR_KIND_UNREACHABLE))
				msg = HP_ERR_KIND_UNREACHABLE;
			else if (hp_meta_is(t, tn, HP_ERR_KIND_TIMEOUT))
				msg = HP_ERR_KIND_TIMEOUT;
		}
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "kind", json_object_new_string(msg));
		hp_pc_dec_init(&d, r->value, r->value_len);
		if (r->error == HP_ERR_USER && hp_pc_get_str(&d, &s, &n) == 0)
			json_object_object_add(o, "error", json_object_new_string_len(s, (int)n));
		else if (!hub && r->error != HP_ERR_USER &&
			 hp_meta_str(&r->meta, HP_META_ERROR_TEXT, &t, &tn))
			json_object_object_add(o, "error", json_object_new_string_len(t, (int)tn));
		else
			json_object_object_add(o, "error", json_object_new_string(msg));
		/* what hubd said of an error it made: the error itself for a
		 * User error, not said twice */
		if (hub) {
			json_object *error = json_object_object_get(o, "error");

			if ((size_t)json_object_get_string_len(error) != wn ||
			    memcmp(json_object_get_string(error), why, wn) != 0)
				json_object_object_add(o, "detail",
						       json_object_new_string_len(why, (int)wn));
		}
	}
	client_reply(c, o);
	/* the next request, from the loop: never from inside this call */
	ev_feed_event(c->h->loop, &c->rw, EV_READ);
}

/* Whom the guest runs as (users.c): {"as": "own" | "user" | "hubd",
 * "uid", "gid", "name" (null: no passwd entry), "why" (for "hubd")}. */
static json_object *
user_json(const struct config_guest *g)
{
	static const char *const as[] = {
		[GUEST_RUNS_HUBD] = "hubd", [GUEST_RUNS_OWN] = "own", [GUEST_RUNS_USER] = "user",
	};
	json_object *o = json_object_new_object();

	json_object_object_add(o, "as", json_object_new_string(as[g->runs]));
	json_object_object_add(o, "uid", json_object_new_int64(
		g->run_uid >= 0 ? g->run_uid : (int64_t)geteuid()));
	json_object_object_add(o, "gid", json_object_new_int64(
		g->run_gid >= 0 ? g->run_gid : (int64_t)getegid()));
	json_object_object_add(o, "name", g->run_user[0] != '\0' ?
			       json_object_new_string(g->run_user) : NULL);
	if (g->runs == GUEST_RUNS_HUBD)
		json_object_object_add(o, "why", json_object_new_string(g->run_why));
	return o;
}

/* What a guest was serving when it died: {"calls": N, "methods":
 * [{"method", "calls"}...]} (the first methods by name, every call in
 * "calls"). */
static json_object *
serving_json(const struct death *d)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	json_object_object_add(o, "calls", json_object_new_int64(d->in_flight));
	for (uint32_t k = 0; k < d->nserving; k++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "method", json_object_new_string(d->serving[k].method));
		json_object_object_add(e, "calls", json_object_new_int64(d->serving[k].calls));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "methods", a);
	return o;
}

static json_object *
peer_json(struct hub *h, struct peer *p)
{
	json_object *o = json_object_new_object(), *deaths = json_object_new_array();
	uint64_t now = hp_now_ns();
	char sig[32];

	json_object_object_add(o, "name", json_object_new_string(p->conf->name));
	json_object_object_add(o, "peer_id", json_object_new_int((int)p->id));
	json_object_object_add(o, "state", json_object_new_string(lifecycle_state_name(p->state)));
	if (lifecycle_start_pending(&p->life, p->state))	/* once stopped */
		json_object_object_add(o, "then", json_object_new_string("start"));
	if (p->note[0] != '\0')	/* hub.describe "": what it says of itself */
		json_object_object_add(o, "note", json_object_new_string(p->note));
	json_object_object_add(o, "pid", json_object_new_int((int)p->pid));
	json_object_object_add(o, "epoch", json_object_new_int64(p->epoch));
	json_object_object_add(o, "uptime_s", json_seconds(p->state == PEER_UP ? now - p->up_ns : 0));
	json_object_object_add(o, "exec", json_object_new_string(p->conf->exec));
	json_object_object_add(o, "user", user_json(p->conf));
	json_object_object_add(o, "heartbeat_interval_ns", json_object_new_uint64(
		p->conf->heartbeat_ns != CONFIG_HEARTBEAT_HUB ? p->conf->heartbeat_ns :
		h->conf.params.heartbeat_interval));
	json_object_object_add(o, "start", json_object_new_string(
		p->conf->start_manual ? "manual" : "auto"));
	/* one started by hand runs without hubd's filter and limits */
	json_object_object_add(o, "seccomp", json_object_new_boolean(p->conf->seccomp &&
		!p->conf->start_manual && filter_ready()));
	{
		json_object *args = json_object_new_array();

		for (char **a = p->conf->argv + 1; *a != NULL; a++)
			json_object_array_add(args, json_object_new_string(*a));
		json_object_object_add(o, "args", args);
	}
	json_object_object_add(o, "restarts", json_object_new_int(
		p->restarts > 0 ? (int)p->restarts - 1 : 0));
	for (uint32_t i = 0; i < TALLY_MAX && i < p->ndeaths; i++) {
		struct death *d = &p->tally[(p->ndeaths - 1 - i) % TALLY_MAX];
		json_object *e = json_object_new_object();

		json_object_object_add(e, "time", json_seconds(d->when_ns));
		json_object_object_add(e, "reason", json_object_new_string(
			lifecycle_death_name(d->reason)));
		json_object_object_add(e, "status", json_object_new_int(d->status));
		json_object_object_add(e, "signal", d->sig == 0 ? NULL : json_object_new_string(
			supervise_signal_name(d->sig, sig, sizeof(sig))));
		json_object_object_add(e, "detail", json_object_new_string(d->detail));
		json_object_object_add(e, "in_flight", serving_json(d));
		json_object_array_add(deaths, e);
	}
	json_object_object_add(o, "deaths", deaths);
	{
		/* its traffic, lanes included (lanes.c), and its lanes */
		struct peer_stats st;

		host_stats(p, &st);
		lanes_stats(h, p, &st);
		json_object_object_add(o, "calls_in", json_object_new_uint64(st.calls_in));
		json_object_object_add(o, "calls_out", json_object_new_uint64(st.calls_out));
		json_object_object_add(o, "lanes", json_object_new_int((int)p->nlanes));
		json_object_object_add(o, "lane_calls_in", json_object_new_uint64(st.lane_calls_in));
		json_object_object_add(o, "lane_calls_out", json_object_new_uint64(st.lane_calls_out));
		json_object_object_add(o, "lane_violations",
				       json_object_new_uint64(st.lane_violations));
	}
	if (p->view.pool != NULL) {
		const struct hp_params *prm = &h->conf.params;
		struct hp_peer_snap e;
		struct hp_slot_pool pool;
		uint64_t beat;
		uint32_t mask = prm->ring_size - 1, open = 0;

		hp_peer_snapshot(p->view.entry, &e);
		beat = e.last_heartbeat;
		/* what its pool holds now: all free once it is quiet */
		hp_slot_pool_view(&pool, p->view.pool, prm->slots_per_guest, prm->slot_size);
		json_object_object_add(o, "slots_free", json_object_new_int(
			(int)hp_slot_count_free(&pool)));
		json_object_object_add(o, "slots_used", json_object_new_int(
			(int)(prm->slots_per_guest - hp_slot_count_free(&pool))));
		/* guest-written words: shown as read, masked to the ring */
		json_object_object_add(o, "g2h_depth", json_object_new_int((int)(
			(e.g2h_head - e.g2h_tail) & mask)));
		json_object_object_add(o, "h2g_depth", json_object_new_int((int)(
			(e.h2g_head - e.h2g_tail) & mask)));
		for (uint32_t id = 1; id < prm->max_channels; id++)
			open += hp_chan_state(&p->view.chans[id]) == HP_CHAN_ACTIVE;
		json_object_object_add(o, "channels_open", json_object_new_int((int)open));
		/* what hubd sent it and it has not freed yet */
		hp_slot_pool_view(&pool, p->view.host_pool, prm->slots_per_guest, prm->slot_size);
		json_object_object_add(o, "host_slots_free", json_object_new_int(
			(int)hp_slot_count_free(&pool)));
		json_object_object_add(o, "domain_bytes", json_object_new_uint64(p->dom.size));
		if (p->zone != NULL) {
			/* its share of its zone's pool (as of the last sweep) */
			struct pool_use u;

			pool_usage(h, p, &u);
			json_object_object_add(o, "zone", json_object_new_string(p->zone->name));
			json_object_object_add(o, "pool_slots", json_object_new_uint64(u.slots));
			json_object_object_add(o, "pool_bytes", json_object_new_uint64(u.bytes));
			json_object_object_add(o, "pool_quota_slots",
					       json_object_new_uint64(u.max_slots));
			json_object_object_add(o, "pool_quota", json_object_new_uint64(u.max_bytes));
		}
		json_object_object_add(o, "heartbeat_age_ms", beat == 0 || beat > now ?
			NULL : json_fixed((now - beat) / 1000, 3));
	}
	return o;
}

static void
cmd_peers(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	(void)r;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (h->peers[i].conf != NULL)
			json_object_array_add(a, peer_json(h, &h->peers[i]));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "peers", a);
	client_reply(c, o);
}

static void
cmd_methods(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	(void)r;

	for (uint32_t i = 0; i < h->nmethods; i++) {
		const struct method *m = &h->methods[i];
		json_object *e;

		if (!methods_live(h, m))
			continue;	/* its guest is restarting or down */
		e = json_object_new_object();

		json_object_object_add(e, "name", json_object_new_string(m->name));
		json_object_object_add(e, "signature", json_object_new_string(m->signature));
		json_object_object_add(e, "owner", json_object_new_string(
			m->owner == 0 ? "hub" : h->peers[m->owner - 1].conf->name));
		if (m->where[0] != '\0')	/* hub.describe: where it is served */
			json_object_object_add(e, "where", json_object_new_string(m->where));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "methods", a);
	client_reply(c, o);
}

/* hub.sink called with "-" for its channel: the client sends the stream,
 * a line per item, and hubd, the sink, hashes each as it comes (as it
 * hashes a guest's: the item's postcard value, r[shm.flow.ordering.receiver]).
 * Nothing is held: the next line is read once this one is taken, so a
 * client that sends fast waits on the socket. */
static int
sink_fed(const struct control_req *r)
{
	return strcmp(r->method, HP_SVC_SINK) == 0 && r->nargs == 1 && r->args[0].len == 1 &&
	    r->args[0].s[0] == '-';
}

static void
feed_over(struct client *c, const char *error)
{
	json_object *o = json_object_new_object();

	c->calling = c->feeding = 0;
	json_object_object_add(o, "ok", json_object_new_boolean(error == NULL));
	if (error != NULL) {
		json_object_object_add(o, "kind", json_object_new_string("user"));
		json_object_object_add(o, "error", json_object_new_string(error));
	} else {
		json_object_object_add(o, "result", json_object_new_uint64(c->sink_hash));
	}
	client_reply(c, o);
}

/* One line of the stream: {"item":TEXT}, then {"end":true} (or
 * {"reset":true}: given up). Anything else ends the call, and the
 * connection, which may hold more of what was meant as items. */
static void
call_feed(struct client *c, const char *line, size_t len)
{
	static uint8_t buf[CONTROL_MSG_MAX + 16];
	json_tokener *tok;
	json_object *o = NULL, *v;
	struct hp_pc_enc e;

	if (line == NULL) {
		feed_over(c, "the stream was reset");	/* its sender went */
		return;
	}
	if ((tok = json_tokener_new()) != NULL) {
		o = json_tokener_parse_ex(tok, line, (int)len);
		if (o != NULL && json_tokener_get_parse_end(tok) != len) {
			json_object_put(o);
			o = NULL;
		}
		json_tokener_free(tok);
	}
	if (json_object_object_get_ex(o, "item", &v) && json_object_is_type(v, json_type_string)) {
		const struct method *m = methods_find(c->h, HP_SVC_SINK);
		char why[128];

		hp_pc_enc_init(&e, buf, sizeof(buf));
		/* an item's text form as the channel's item type has it */
		if (m == NULL || pcjson_encode_arg(&e, &m->sig, hp_sig_chan_item(&m->sig, 0),
						   json_object_get_string(v),
						   (size_t)json_object_get_string_len(v),
						   why, sizeof(why)) != 0 || e.err != 0) {
			feed_over(c, "an item that is not bytes");
			c->closing = 1;
		} else if (e.len > c->h->conf.params.initial_credit) {
			/* what a channel could never carry */
			feed_over(c, "an item larger than initial_credit");
			c->closing = 1;
		} else {
			c->sink_hash = XXH3_64bits_withSeed(buf, e.len, c->sink_hash);
		}
	} else if (json_object_object_get_ex(o, "end", &v) && json_object_get_boolean(v)) {
		feed_over(c, NULL);
	} else if (json_object_object_get_ex(o, "reset", &v) && json_object_get_boolean(v)) {
		feed_over(c, "the stream was reset");
	} else {
		feed_over(c, "a line of the stream is {\"item\":TEXT}, {\"end\":true} or "
			  "{\"reset\":true}");
		c->closing = 1;
	}
	json_object_put(o);
}

static void
cmd_call(struct client *c, const struct control_req *r)
{
	const char *why = "bad request";

	if (sink_fed(r)) {
		json_object *o = json_object_new_object();

		/* no guest's: nothing to abandon if the client goes */
		c->call = (struct ext_call){ .ctx = c };
		c->calling = c->feeding = 1;
		c->sink_hash = HP_STREAM_HASH_SEED;
		json_object_object_add(o, "send", json_object_new_boolean(1));
		client_reply(c, o);
		return;
	}

	c->call = (struct ext_call){ .ctx = c, .on_item = call_item, .on_done = call_done,
				     .caller = CALLER_CLIENT | c->uid };
	c->calling = 1;		/* one request at a time: the next after on_done */
	if (route_client_call(c->h, &c->call, r->method, r->args, r->nargs, &why) != 0) {
		c->calling = 0;
		client_reply_error(c, why);
	}
}

/* restart, stop, start NAME: the guest, or NULL when there is none (and
 * the client is told). */
static struct peer *
guest_named(struct client *c, const char *name)
{
	struct hub *h = c->h;

	char why[96];

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (h->peers[i].conf != NULL && strcmp(h->peers[i].conf->name, name) == 0)
			return &h->peers[i];
	snprintf(why, sizeof(why), "no such guest: %.64s", name);
	client_reply_error(c, why);
	return NULL;
}

/* Its state, and "then": "start" when it starts again once stopped (a
 * start or restart came while it stopped): never a bare "stopping" that
 * reads as if the start was lost. */
static void
reply_state(struct client *c, const struct peer *p)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "state", json_object_new_string(lifecycle_state_name(p->state)));
	if (lifecycle_start_pending(&p->life, p->state))
		json_object_object_add(o, "then", json_object_new_string("start"));
	client_reply(c, o);
}

/* restart, start: the guest, or NULL when it cannot start (told why). */
static struct peer *
guest_startable(struct client *c, const char *name)
{
	struct peer *p;
	char why[160];

	if ((p = guest_named(c, name)) == NULL)
		return NULL;
	/* its pending start would be dropped (the hub stops) or would run
	 * a guest the config no longer has */
	if (c->h->stopping) {
		client_reply_error(c, "hubd is stopping");
		return NULL;
	}
	if (p->removed) {
		snprintf(why, sizeof(why), "guest %.64s was removed from the config and is "
			 "stopping: add it again and reload", name);
		client_reply_error(c, why);
		return NULL;
	}
	return p;
}

static void
cmd_restart(struct client *c, const struct control_req *r)
{
	struct peer *p;

	if ((p = guest_startable(c, r->name)) == NULL)
		return;
	supervise_restart(c->h, p);
	reply_state(c, p);
}

static void
cmd_stop(struct client *c, const struct control_req *r)
{
	struct peer *p;

	if ((p = guest_named(c, r->name)) == NULL)
		return;
	supervise_stop(c->h, p);
	reply_state(c, p);
}

/* A stopped or failed guest starts, a stopping one once it has stopped
 * (lifecycle.c decides); a running one is left as it is. */
static void
cmd_start(struct client *c, const struct control_req *r)
{
	struct peer *p;

	if ((p = guest_startable(c, r->name)) == NULL)
		return;
	supervise_start(c->h, p);
	reply_state(c, p);
}

static void
cmd_reload(struct client *c, const struct control_req *r)
{
	json_object *o, *lines = json_object_new_array();
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *msgs;
	int rc;

	(void)r;

	if ((msgs = open_memstream(&text, &len)) == NULL) {
		json_object_put(lines);
		client_reply_error(c, "out of memory");
		return;
	}
	rc = reload_config(c->h, msgs);
	fclose(msgs);
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		json_object_array_add(lines, json_object_new_string(line));
	free(text);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(rc == 0));
	if (rc != 0)
		json_object_object_add(o, "error", json_object_new_string(
			"reload refused: nothing changed"));
	json_object_object_add(o, "messages", lines);
	client_reply(c, o);
}

static void
add_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

/* Counters per guest and in all. */
static void
cmd_stats(struct client *c, const struct control_req *r)
{
	static const char *const keys[] = {
		"calls_in", "calls_out", "bytes_in", "bytes_out", "ring_full",
		"slot_exhausted", "credit_waits", "wakes", "deaths", "restarts",
		"violations", "lane_calls_in", "lane_calls_out", "lane_violations",
	};
	struct hub *h = c->h;
	uint64_t total[sizeof(keys) / sizeof(keys[0])] = { 0 };
	json_object *o = json_object_new_object(), *guests = json_object_new_object();
	json_object *all = json_object_new_object();

	(void)r;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		json_object *g;
		uint64_t v[sizeof(keys) / sizeof(keys[0])];
		struct peer_stats st;

		if (p->conf == NULL)
			continue;
		host_stats(p, &st);
		lanes_stats(h, p, &st);	/* its calls over lanes count as well */
		v[0] = st.calls_in;
		v[1] = st.calls_out;
		v[2] = st.bytes_in;
		v[3] = st.bytes_out;
		v[4] = st.ring_full;
		v[5] = st.slot_exhausted;
		v[6] = st.credit_waits;
		v[7] = st.wakes;
		v[8] = p->ndeaths;
		v[9] = p->restarts > 0 ? p->restarts - 1 : 0;
		v[10] = st.violations;
		v[11] = st.lane_calls_in;
		v[12] = st.lane_calls_out;
		v[13] = st.lane_violations;
		g = json_object_new_object();
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			add_u64(g, keys[k], v[k]);
			total[k] += v[k];
		}
		json_object_object_add(guests, p->conf->name, g);
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		add_u64(all, keys[k], total[k]);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "guests", guests);
	json_object_object_add(o, "total", all);
	{
		/* streams between guests, and what hubd holds for them */
		json_object *rel = json_object_new_object();
		uint64_t queued;
		uint32_t open;

		relay_stats(h, &open, &queued);
		add_u64(rel, "open", open);
		add_u64(rel, "queued_bytes", queued);
		json_object_object_add(o, "relays", rel);
	}
	{
		/* the data path's own work: loop iterations, ring polling
		 * rounds and sleeps grow with traffic, never while idle */
		json_object *loop = json_object_new_object();

		add_u64(loop, "iterations", ev_iteration(h->loop));
		add_u64(loop, "polls", h->polls);
		add_u64(loop, "sleeps", h->sleeps);
		json_object_object_add(o, "loop", loop);
	}
	if (h->conf.params.var.nclasses > 0) {
		struct hp_var_class_stats cs;
		uint64_t allocs = 0, frees = 0, waits = 0, errors = 0, reclaimed = 0;
		json_object *pool = json_object_new_object();

		/* every zone's pool together */
		for (struct zone *z = h->zones; z != NULL; z = z->next) {
			for (uint32_t k = 0; k < z->var.nclasses; k++) {
				hp_var_class_stats(&z->var, k, &cs);
				allocs += cs.allocs;
				frees += cs.frees;
				waits += cs.waits;
				errors += cs.errors;
				reclaimed += cs.diag.reclaimed;
			}
		}
		add_u64(pool, "allocations", allocs);
		add_u64(pool, "frees", frees);
		add_u64(pool, "waits", waits);
		add_u64(pool, "errors", errors);
		add_u64(pool, "reclaimed", reclaimed);
		json_object_object_add(o, "pool", pool);
	}
	client_reply(c, o);
}

/* The shared pools' terms: a class's slot size and slots per extent. */
static json_object *
pool_classes(struct hub *h)
{
	const struct hp_var_conf *vc = &h->conf.params.var;
	json_object *a = json_object_new_array();

	for (uint32_t k = 0; k < vc->nclasses; k++) {
		json_object *e = json_object_new_object();

		add_u64(e, "slot_size", vc->cls[k].slot_size);
		add_u64(e, "slots_per_extent", vc->cls[k].count);
		json_object_array_add(a, e);
	}
	return a;
}

/* The memory the hub maps now: each guest's domain and each zone's pool
 * (its extents included). What is resident is what has been touched. */
static uint64_t
mapped_bytes(const struct hub *h)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < h->npeers; i++)
		n += h->peers[i].dom.size;
	for (const struct zone *z = h->zones; z != NULL; z = z->next)
		n += z->var.file_end;
	return n;
}

static void
add_problem(void *arg, const char *problem)
{
	json_object_array_add(arg, json_object_new_string(problem));
}

/* Each zone's pool per class; with "validate", its check on the live hub. */
static void
cmd_pool(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	json_object *o, *zones;

	if (h->conf.params.var.nclasses == 0) {
		client_reply_error(c, "no shared pool in this hub");
		return;
	}
	o = json_object_new_object();
	zones = json_object_new_array();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	add_u64(o, "max_extents", h->conf.params.var.max_extents);
	add_u64(o, "initial_bytes", hp_var_initial_size(&h->conf.params.var,
							 h->conf.params.max_guests));
	for (struct zone *z = h->zones; z != NULL; z = z->next) {
		json_object *e = json_object_new_object(), *classes = json_object_new_array();

		json_object_object_add(e, "name", json_object_new_string(z->name));
		add_u64(e, "members", z->members);
		add_u64(e, "bytes", z->var.file_end);
		add_u64(e, "stuck", z->stuck);
		for (uint32_t k = 0; k < z->var.nclasses; k++)
			json_object_array_add(classes, pool_class_json(&z->var, k));
		json_object_object_add(e, "classes", classes);
		json_object_array_add(zones, e);
	}
	json_object_object_add(o, "zones", zones);
	if (r->validate) {
		json_object *problems = json_object_new_array();
		uint32_t n = pool_validate(h, add_problem, problems);

		json_object_object_add(o, "valid", json_object_new_boolean(n == 0));
		json_object_object_add(o, "problems", problems);
	}
	client_reply(c, o);
}

/* Every guest's domain and every zone's pool, as fds that go with the
 * answer (SCM_RIGHTS, in the answer's order): hubctl inspect and dump.
 * Root and hubd's own user only (request.h): it is all the hub's memory. */
static void
cmd_domains(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	int *fds = calloc(h->npeers + 256, sizeof(*fds));
	uint32_t n = 0;

	(void)r;
	if (fds == NULL) {
		json_object_put(a);
		json_object_put(o);
		client_reply_error(c, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < h->npeers; i++) {
		struct peer *p = &h->peers[i];
		json_object *e;

		if (p->dom.base == NULL)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "kind", json_object_new_string("guest"));
		json_object_object_add(e, "name", json_object_new_string(p->conf->name));
		add_u64(e, "peer", p->id);
		add_u64(e, "bytes", p->dom.size);
		if (p->zone != NULL)
			json_object_object_add(e, "zone", json_object_new_string(p->zone->name));
		json_object_array_add(a, e);
		fds[n++] = p->dom.fd;
	}
	for (struct zone *z = h->zones; z != NULL && n < h->npeers + 256; z = z->next) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "kind", json_object_new_string("pool"));
		json_object_object_add(e, "name", json_object_new_string(z->name));
		add_u64(e, "bytes", z->var.file_end);
		json_object_array_add(a, e);
		fds[n++] = z->fd;
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	add_u64(o, "max_guests", h->conf.params.max_guests);
	json_object_object_add(o, "domains", a);
	if (client_pass_fds(c, fds, n) != 0) {
		json_object_put(o);
		client_reply_error(c, "cannot pass the domains' fds (out of fds?)");
	} else {
		client_reply(c, o);
	}
	free(fds);
}

/* The guests the config has now: after a reload, not at start (h->conf
 * keeps the file hubd started with): those in an entry but the dropped
 * ones still stopping, and those waiting for an entry. */
static uint32_t
configured(const struct hub *h)
{
	uint32_t n = h->nwaiting;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		n += h->peers[i].conf != NULL && !h->peers[i].removed;
	return n;
}

static void
cmd_status(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	const struct hp_params *p = &h->conf.params;
	json_object *o = json_object_new_object();

	(void)r;

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "control", json_object_new_string(h->conf.control_path));
	json_object_object_add(o, "mapped_bytes", json_object_new_uint64(mapped_bytes(h)));
	json_object_object_add(o, "uptime_s", json_seconds(hp_now_ns() - h->start_ns));
	json_object_object_add(o, "max_guests", json_object_new_int((int)p->max_guests));
	json_object_object_add(o, "ring_size", json_object_new_int((int)p->ring_size));
	json_object_object_add(o, "slot_size", json_object_new_int64(p->slot_size));
	json_object_object_add(o, "slots_per_guest", json_object_new_int((int)p->slots_per_guest));
	json_object_object_add(o, "max_channels", json_object_new_int((int)p->max_channels));
	json_object_object_add(o, "initial_credit", json_object_new_int64(p->initial_credit));
	json_object_object_add(o, "max_payload_size", json_object_new_int64(p->max_payload_size));
	json_object_object_add(o, "heartbeat_interval_ns", json_object_new_uint64(p->heartbeat_interval));
	json_object_object_add(o, "guests", json_object_new_int((int)configured(h)));
	{
		uint32_t zones = 0;

		for (struct zone *z = h->zones; z != NULL; z = z->next)
			zones++;
		json_object_object_add(o, "zones", json_object_new_int((int)zones));
	}
	json_object_object_add(o, "pool_classes", pool_classes(h));
	/* the wait strategy's view: spin while awake <= cpus (endpoint.h) */
	json_object_object_add(o, "awake_processes", json_object_new_int64(h->awake));
	json_object_object_add(o, "cpus", json_object_new_int((int)h->ncpus));
	client_reply(c, o);
}

/* The control protocol's version and the commands this hubd takes, each
 * with whether this client may run it: what a client checks before it
 * relies on one (doc/control.md, versioning). */
static void
cmd_version(struct client *c, const struct control_req *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	(void)r;
	for (int i = CTL_NONE + 1; i < CTL_NCMDS; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "name", json_object_new_string(ctl_commands[i].name));
		json_object_object_add(e, "allowed", json_object_new_boolean(
			ctl_commands[i].access == CTL_READ || c->privileged));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "protocol", json_object_new_int(CONTROL_PROTOCOL));
	json_object_object_add(o, "commands", a);
	client_reply(c, o);
}

/* Open lanes with each side's figures, and the lanes closed over a
 * broken rule (lanes.c). */
static void
cmd_lanes(struct client *c, const struct control_req *r)
{
	json_object *o = lanes_json(c->h);

	(void)r;
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	client_reply(c, o);
}

/* Who waits for a call's answer, for hubctl calls. */
static void
caller_json(struct hub *h, json_object *e, const struct origin *o)
{
	static const char *const kinds[] = {
		[ORIGIN_NONE] = "gone", [ORIGIN_PEER] = "guest",
		[ORIGIN_CLIENT] = "client", [ORIGIN_SINK] = "hub",
	};
	char who[ORIGIN_NAME_MAX];

	json_object_object_add(e, "caller_kind", json_object_new_string(kinds[o->kind]));
	if (o->kind == ORIGIN_PEER)
		add_u64(e, "caller_id", o->req_id);
	json_object_object_add(e, "caller", json_object_new_string(
		origin_name(h, o, who, sizeof(who))));
}

/* The calls hubd routed to guests and that wait for their answer: each
 * guest's pending table (answer.c). Calls over lanes never pass here. */
static void
cmd_calls(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	uint64_t now = hp_now_ns();

	(void)r;
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		struct pending *e;
		uint32_t pos = 0;

		if (p->conf == NULL)
			continue;
		while ((e = hp_idtab_next(&p->pend, &pos)) != NULL) {
			const struct method *m = methods_by_id(h, e->method_id);
			json_object *j = json_object_new_object();

			json_object_object_add(j, "callee", json_object_new_string(p->conf->name));
			json_object_object_add(j, "method", json_object_new_string(
				m != NULL ? m->name : "?"));
			add_u64(j, "id", e->id);
			caller_json(h, j, &e->o);
			json_object_object_add(j, "age_s", json_seconds(
				now > e->since_ns ? now - e->since_ns : 0));
			json_object_array_add(a, j);
		}
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "calls", a);
	client_reply(c, o);
}

/* A guest's last lines of output (guestlog.c), the oldest first; kept
 * across its restarts. */
static void
cmd_logs(struct client *c, const struct control_req *r)
{
	json_object *o, *a;
	struct peer *p;

	if ((p = guest_named(c, r->name)) == NULL)
		return;
	o = json_object_new_object();
	a = json_object_new_array();
	for (uint32_t i = 0; i < p->out.n; i++)
		json_object_array_add(a, json_object_new_string(guestlog_line(p, i)));
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "name", json_object_new_string(p->conf->name));
	add_u64(o, "lines_ever", p->out.total);
	json_object_object_add(o, "lines", a);
	client_reply(c, o);
}

/* start = manual: how to start the guest by hand, with its ticket
 * (manual.c): {"env": what hubd would add to its environment, "argv",
 * "as": what switches to its user first, [] when nothing need}. */
static void
cmd_ticket(struct client *c, const struct control_req *r)
{
	json_object *o, *env, *argv, *as;
	struct peer *p;
	char why[160], *arg;

	if ((p = guest_named(c, r->name)) == NULL)
		return;
	if (manual_socket(p) == NULL) {
		snprintf(why, sizeof(why), "guest %s is %s: %s", p->conf->name,
			 lifecycle_state_name(p->state), !p->conf->start_manual ?
			 "hubd starts it (its start is not manual)" :
			 "no ticket waits (hubctl start or restart makes one)");
		client_reply_error(c, why);
		return;
	}
	if (asprintf(&arg, "--hub-ticket=%s:%s", manual_socket(p), manual_secret(p)) < 0) {
		client_reply_error(c, "out of memory");
		return;
	}
	o = json_object_new_object();
	env = json_object_new_array();
	argv = json_object_new_array();
	as = json_object_new_array();
	/* what spawn.c's child sets */
	for (char **e = p->conf->env; e != NULL && *e != NULL; e++)
		json_object_array_add(env, json_object_new_string(*e));
	if (p->conf->processors != 0) {
		char n[32];

		snprintf(n, sizeof(n), "HUB_PROCESSORS=%u", p->conf->processors);
		json_object_array_add(env, json_object_new_string(n));
	}
	json_object_array_add(argv, json_object_new_string(p->conf->exec));
	for (char **a = p->conf->argv + 1; *a != NULL; a++)
		json_object_array_add(argv, json_object_new_string(*a));
	json_object_array_add(argv, json_object_new_string(arg));
	explicit_bzero(arg, strlen(arg));
	free(arg);
	/* root runs it as its user, as hubd would */
	if (geteuid() == 0 && p->conf->run_uid > 0) {
		char u[32], g[32];

		snprintf(u, sizeof(u), "--reuid=%lld", (long long)p->conf->run_uid);
		snprintf(g, sizeof(g), "--regid=%lld", (long long)(p->conf->run_gid >= 0 ?
			 p->conf->run_gid : p->conf->run_uid));
		json_object_array_add(as, json_object_new_string("setpriv"));
		json_object_array_add(as, json_object_new_string(u));
		json_object_array_add(as, json_object_new_string(g));
		json_object_array_add(as, json_object_new_string("--clear-groups"));
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "name", json_object_new_string(p->conf->name));
	json_object_object_add(o, "socket", json_object_new_string(manual_socket(p)));
	json_object_object_add(o, "as", as);
	json_object_object_add(o, "env", env);
	json_object_object_add(o, "argv", argv);
	client_reply(c, o);
}

/* Each command's handler (request.h's rows), handed to the socket by
 * hubd.c; a client's call goes through route.c (cmd_call), and so do its
 * client's progress and going away. */
#define CTL_HANDLER(id, name, who, needs)	[CTL_##id] = cmd_##name,
const struct control_ops commands_ops = {
	.cmd = { CTL_COMMANDS(CTL_HANDLER) },
	.call_consumed = route_client_consumed,
	.call_abandon = route_client_abandon,
	.call_feed = call_feed,
};
#undef CTL_HANDLER
