/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The views of the hub as a whole, answered as JSON: status, version,
 * methods, stats, lanes, pool (with validate, its check) and domains (the
 * hub's memory as fds, for inspect and dump). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "daemon/client.h"
#include "daemon/cmd.h"
#include "daemon/host.h"
#include "daemon/jsonout.h"
#include "daemon/lanes.h"
#include "daemon/methods.h"
#include "daemon/pool.h"
#include "daemon/poolfig.h"
#include "daemon/relay.h"
#include "daemon/upload.h"

/* The host's services first, then each guest's methods together: by
 * owner's name, then by name (no guest is named "hub": config.h). */
static int
method_order(const void *x, const void *y)
{
	json_object *a = *(json_object *const *)x, *b = *(json_object *const *)y;
	const char *oa = json_object_get_string(json_object_object_get(a, "owner"));
	const char *ob = json_object_get_string(json_object_object_get(b, "owner"));
	int ha = strcmp(oa, "hub") == 0, hb = strcmp(ob, "hub") == 0, d;

	if (ha != hb)
		return hb - ha;
	if ((d = strcmp(oa, ob)) != 0)
		return d;
	return strcmp(json_object_get_string(json_object_object_get(a, "name")),
		      json_object_get_string(json_object_object_get(b, "name")));
}

void
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
	json_object_array_sort(a, method_order);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "methods", a);
	client_reply(c, o);
}

static void
add_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

/* The shared pools' counters: every zone's pool together. */
static json_object *
pool_counters(struct hub *h)
{
	struct hp_var_class_stats cs;
	uint64_t allocs = 0, frees = 0, waits = 0, errors = 0, reclaimed = 0;
	json_object *pool = json_object_new_object();

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
	return pool;
}

/* A guest's counters (or those of the guests gone), in cmd_stats' keys'
 * order. */
static void
counters(const struct peer_stats *st, uint64_t deaths, uint64_t restarts,
	 uint64_t v[HUB_TOTALS])
{
	v[0] = st->calls_in;
	v[1] = st->calls_out;
	v[2] = st->bytes_in;
	v[3] = st->bytes_out;
	v[4] = st->ring_full;
	v[5] = st->slot_exhausted;
	v[6] = st->credit_waits;
	v[7] = st->wakes;
	v[8] = deaths;
	v[9] = restarts;
	v[10] = st->violations;
	v[11] = st->lane_calls_in;
	v[12] = st->lane_calls_out;
	v[13] = st->lane_violations;
}

/* Counters per guest and in all. The totals count since hubd started:
 * those of guests a reload removed stay in them (host_retire), and they
 * never go down, whatever a guest writes in the figures of its lanes. */
void
cmd_stats(struct client *c, const struct control_req *r)
{
	static const char *const keys[] = {
		"calls_in", "calls_out", "bytes_in", "bytes_out", "ring_full",
		"slot_exhausted", "credit_waits", "wakes", "deaths", "restarts",
		"violations", "lane_calls_in", "lane_calls_out", "lane_violations",
	};
	_Static_assert(sizeof(keys) / sizeof(keys[0]) == HUB_TOTALS, "a key per counter");
	struct hub *h = c->h;
	uint64_t total[HUB_TOTALS];
	json_object *o = json_object_new_object(), *guests = json_object_new_object();
	json_object *all = json_object_new_object();

	(void)r;

	counters(&h->gone, h->gone_deaths, h->gone_restarts, total);
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		json_object *g;
		uint64_t v[HUB_TOTALS];
		struct peer_stats st;

		if (p->conf == NULL)
			continue;
		host_stats(p, &st);
		lanes_stats(h, p, &st);	/* its calls over lanes count as well */
		counters(&st, p->ndeaths, p->restarts > 0 ? p->restarts - 1 : 0, v);
		g = json_object_new_object();
		for (size_t k = 0; k < HUB_TOTALS; k++) {
			add_u64(g, keys[k], v[k]);
			total[k] += v[k];
		}
		json_object_object_add(guests, p->conf->name, g);
	}
	for (size_t k = 0; k < HUB_TOTALS; k++) {
		if (total[k] < h->totals[k])
			total[k] = h->totals[k];
		h->totals[k] = total[k];
		add_u64(all, keys[k], total[k]);
	}
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
		/* uploads (rx<T>), and what hubd holds for them */
		rel = json_object_new_object();
		upload_stats(h, &open, &queued);
		add_u64(rel, "open", open);
		add_u64(rel, "queued_bytes", queued);
		json_object_object_add(o, "uploads", rel);
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
	if (h->conf.params.var.nclasses > 0)
		json_object_object_add(o, "pool", pool_counters(h));
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

static json_object *
tally_json(const char *name, const struct hp_var_tally *t)
{
	json_object *e = json_object_new_object();

	json_object_object_add(e, "name", json_object_new_string(name));
	add_u64(e, "slots", t->slots);
	add_u64(e, "bytes", t->bytes);
	return e;
}

/* Who holds what of a zone's pool, by the sweeper's last count: each
 * member (hubd's own share is hubd_held). A
 * guest alone in its zone is counted too, though not against its quota:
 * an operator asks who filled a pool either way. */
static json_object *
zone_held(struct hub *h, const struct zone *z)
{
	json_object *a = json_object_new_array();

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		const struct peer *p = &h->peers[i];

		if (p->zone == z && p->conf != NULL)
			json_object_array_add(a, tally_json(p->conf->name, &z->held[p->id]));
	}
	return a;
}

/* Each zone's pool per class; with "validate", its check on the live hub. */
/* What a zone's pool holds in memory: its file's pages (those reserved
 * as extents grew, those touched, less those given back). */
static uint64_t
zone_memory(const struct zone *z)
{
	struct stat st;

	return fstat(z->fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

void
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

		json_object *guests = json_object_new_array();

		json_object_object_add(e, "name", json_object_new_string(z->name));
		add_u64(e, "members", z->members);
		for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
			if (h->peers[i].zone == z && h->peers[i].conf != NULL)
				json_object_array_add(guests, json_object_new_string(
					h->peers[i].conf->name));
		json_object_object_add(e, "guests", guests);
		json_object_object_add(e, "held", zone_held(h, z));
		json_object_object_add(e, "hubd_held", tally_json("hubd", &z->held[HP_VAR_HOST]));
		add_u64(e, "bytes", z->var.file_end);
		add_u64(e, "memory_bytes", zone_memory(z));
		add_u64(e, "released_bytes", z->released);
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
void
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

void
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
	/* what the registry holds: the host's, its guests' (down or not) */
	json_object_object_add(o, "methods", json_object_new_int64(h->nmethods));
	/* the wait strategy's view: spin while awake <= cpus (endpoint.h) */
	json_object_object_add(o, "awake_processes", json_object_new_int64(h->awake));
	json_object_object_add(o, "cpus", json_object_new_int((int)h->ncpus));
	client_reply(c, o);
}

/* The control protocol's version and the commands this hubd takes, each
 * with whether this client may run it: what a client checks before it
 * relies on one (doc/control.md, versioning). */
void
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
void
cmd_lanes(struct client *c, const struct control_req *r)
{
	json_object *o = lanes_json(c->h);

	(void)r;
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	client_reply(c, o);
}
