/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The views of the guests, answered as JSON: peers (each guest's
 * settings, deaths, traffic and memory), logs (a guest's output), calls
 * (those waiting for a guest's answer); and the guest a request names. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/answer.h"
#include "daemon/client.h"
#include "daemon/cmd.h"
#include "daemon/filter.h"
#include "daemon/host.h"
#include "daemon/jsonout.h"
#include "daemon/lanes.h"
#include "daemon/methods.h"
#include "daemon/pool.h"
#include "daemon/supervise.h"
#include "daemon/tally.h"
#include "proto/channel.h"
#include "proto/peer.h"

static void
add_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

/* restart, stop, start, logs, ticket NAME: the guest, or NULL when there
 * is none (and the client is told). */
struct peer *
cmd_guest_named(struct client *c, const char *name)
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

/* What its config says it runs: exec, user, heartbeat, start, seccomp,
 * args. */
static void
add_settings(struct hub *h, json_object *o, const struct peer *p)
{
	json_object *args = json_object_new_array();

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
	for (char **a = p->conf->argv + 1; *a != NULL; a++)
		json_object_array_add(args, json_object_new_string(*a));
	json_object_object_add(o, "args", args);
}

/* Its tally (tally.c), the last death first. */
static json_object *
deaths_json(const struct peer *p)
{
	json_object *deaths = json_object_new_array();
	char sig[32];

	for (uint32_t i = 0; i < TALLY_MAX && i < p->ndeaths; i++) {
		const struct death *d = &p->tally[(p->ndeaths - 1 - i) % TALLY_MAX];
		json_object *e = json_object_new_object();

		json_object_object_add(e, "time", json_seconds(d->when_ns));
		json_object_object_add(e, "reason", json_object_new_string(
			lifecycle_death_name(d->reason)));
		/* -1 without a signal: not hubd's to know (started by hand) */
		json_object_object_add(e, "status", d->status < 0 && d->sig == 0 ? NULL :
				       json_object_new_int(d->status));
		json_object_object_add(e, "signal", d->sig == 0 ? NULL : json_object_new_string(
			tally_signal_name(d->sig, sig, sizeof(sig))));
		json_object_object_add(e, "detail", json_object_new_string(d->detail));
		json_object_object_add(e, "in_flight", serving_json(d));
		json_object_array_add(deaths, e);
	}
	return deaths;
}

/* Its traffic, lanes included (lanes.c), and its lanes. */
static void
add_traffic(struct hub *h, json_object *o, struct peer *p)
{
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
	/* messages waiting in hubd for room in its ring; whether hubd reads
	 * its ring (host.h's holds) */
	json_object_object_add(o, "backlog", json_object_new_int64(p->bl_count));
	if (p->held_by != 0) {
		const struct peer *q = hub_peer(h, p->held_on);

		json_object_object_add(o, "held_on", json_object_new_string(
			q != NULL && q->conf != NULL ? q->conf->name : "?"));
		json_object_object_add(o, "held_by", json_object_new_string(
			p->held_by == (HOLD_BACKLOG | HOLD_SHARE) ? "backlog,share" :
			p->held_by == HOLD_BACKLOG ? "backlog" : "share"));
	}
}

/* Its share of its zone's pool (as of the last sweep). */
static void
add_zone_share(struct hub *h, json_object *o, struct peer *p)
{
	struct pool_use u;

	pool_usage(h, p, &u);
	json_object_object_add(o, "zone", json_object_new_string(p->zone->name));
	json_object_object_add(o, "pool_slots", json_object_new_uint64(u.slots));
	json_object_object_add(o, "pool_bytes", json_object_new_uint64(u.bytes));
	json_object_object_add(o, "pool_quota_slots",
			       json_object_new_uint64(u.max_slots));
	json_object_object_add(o, "pool_quota", json_object_new_uint64(u.max_bytes));
}

/* Its memory as read now, while it has a domain: slots, rings, channels,
 * its zone's pool, its heartbeat's age. */
static void
add_memory(struct hub *h, json_object *o, struct peer *p, uint64_t now)
{
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
	if (p->zone != NULL)
		add_zone_share(h, o, p);
	json_object_object_add(o, "heartbeat_age_ms", beat == 0 || beat > now ?
		NULL : json_fixed((now - beat) / 1000, 3));
}

void
cmd_add_state(struct hub *h, json_object *o, struct peer *p)
{
	uint64_t left = supervise_starts_in(h, p);

	json_object_object_add(o, "state", json_object_new_string(lifecycle_state_name(p->state)));
	if (lifecycle_start_pending(&p->life, p->state))	/* once stopped */
		json_object_object_add(o, "then", json_object_new_string("start"));
	if (left != 0)	/* backing off: when it tries again */
		json_object_object_add(o, "starts_in_s", json_seconds(left));
}

/* One guest, as hubctl peers shows it. */
static json_object *
peer_json(struct hub *h, struct peer *p)
{
	json_object *o = json_object_new_object();
	uint64_t now = hp_now_ns();

	json_object_object_add(o, "name", json_object_new_string(p->conf->name));
	json_object_object_add(o, "peer_id", json_object_new_int((int)p->id));
	cmd_add_state(h, o, p);
	if (p->note[0] != '\0')	/* hub.describe "": what it says of itself */
		json_object_object_add(o, "note", json_object_new_string(p->note));
	json_object_object_add(o, "pid", json_object_new_int((int)p->pid));
	json_object_object_add(o, "epoch", json_object_new_int64(p->epoch));
	json_object_object_add(o, "uptime_s", json_seconds(p->state == PEER_UP ? now - p->up_ns : 0));
	add_settings(h, o, p);
	json_object_object_add(o, "restarts", json_object_new_int(
		p->restarts > 0 ? (int)p->restarts - 1 : 0));
	json_object_object_add(o, "deaths", deaths_json(p));
	add_traffic(h, o, p);
	if (p->view.pool != NULL)
		add_memory(h, o, p, now);
	return o;
}

void
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

/* The older call first (its age, then hubd's id). */
static int
older_first(const void *x, const void *y)
{
	json_object *a = *(json_object *const *)x, *b = *(json_object *const *)y;
	double aa = json_object_get_double(json_object_object_get(a, "age_s"));
	double ab = json_object_get_double(json_object_object_get(b, "age_s"));
	uint64_t ia = json_object_get_uint64(json_object_object_get(a, "id"));
	uint64_t ib = json_object_get_uint64(json_object_object_get(b, "id"));

	return aa != ab ? (aa < ab) - (aa > ab) : (ia > ib) - (ia < ib);
}

/* The calls hubd routed to guests and that wait for their answer: each
 * guest's pending table (answer.c), its oldest call first (the table's
 * order is its hash's). Calls over lanes never pass here. */
void
cmd_calls(struct client *c, const struct control_req *r)
{
	struct hub *h = c->h;
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	uint64_t now = hp_now_ns();

	(void)r;
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		json_object *mine;
		struct pending *e;
		uint32_t pos = 0;

		if (p->conf == NULL || p->pend.count == 0)
			continue;
		mine = json_object_new_array();
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
			if (e->o.meta.has_trace) {
				char id[HP_TRACE_ID_HEX + 1];

				hp_trace_id_format(&e->o.meta, id);
				json_object_object_add(j, "trace", json_object_new_string(id));
			}
			/* time left to its deadline, 0 once it passed */
			if (e->o.meta.deadline_ns != 0)
				json_object_object_add(j, "left_s", json_seconds(
					e->o.meta.deadline_ns > now ? e->o.meta.deadline_ns - now : 0));
			json_object_array_add(mine, j);
		}
		json_object_array_sort(mine, older_first);
		for (size_t k = 0; k < json_object_array_length(mine); k++)
			json_object_array_add(a, json_object_get(json_object_array_get_idx(mine, k)));
		json_object_put(mine);
	}
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "calls", a);
	client_reply(c, o);
}

/* A guest's last lines of output (guestlog.c), the oldest first; kept
 * across its restarts. */
void
cmd_logs(struct client *c, const struct control_req *r)
{
	json_object *o, *a;
	struct peer *p;

	if ((p = cmd_guest_named(c, r->name)) == NULL)
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
