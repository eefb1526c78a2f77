/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Reload (SIGHUP, hubctl reload): re-read the config and bring the guests
 * in line with it. A broken file changes nothing. Guests are matched by
 * name, one name one entry: new ones start, dropped ones stop, changed ones
 * restart with their new settings, and one dropped earlier and still
 * stopping is kept in its entry and restarted. A new guest finding every
 * entry taken (an old one still stopping) waits and starts as soon as an
 * entry is free. The segment cannot change under running guests: its
 * parameters, like the segment and control paths, are reported and kept.
 * The [topic] sections are the new file's from then on: for topics made
 * after it, and for every subscription (apply_topics).
 *
 * Method names: the new file is checked as at start (config_load: no name
 * two guests', none the host's), so one that lets two guests share a name
 * changes nothing. A changed provides is a changed setting: its guest
 * restarts with it. A guest registers by the settings its instance
 * started with (p->conf, not next_conf) until it restarts; a name a
 * reload moves to another guest is that guest's once no live instance of
 * the old one holds it (methods.c). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/pool.h"
#include "daemon/reload.h"
#include "daemon/supervise.h"
#include "daemon/topics.h"
#include "daemon/users.h"

/* The entry holding name, removed and still stopping included. */
static struct peer *
find(struct hub *h, const char *name)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (h->peers[i].conf != NULL &&
		    strcmp(h->peers[i].conf->name, name) == 0)
			return &h->peers[i];
	return NULL;
}

static struct peer *
free_entry(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (h->peers[i].conf == NULL && h->peers[i].state == PEER_DOWN)
			return &h->peers[i];
	return NULL;
}

/* A new guest in a free entry: nothing of the last one's carries over. */
static void
take(struct peer *p, struct config_guest *g)
{
	memset(p->tally, 0, sizeof(p->tally));
	memset(&p->stats, 0, sizeof(p->stats));
	p->ndeaths = p->restarts = 0;
	lifecycle_reset(&p->life);
	p->conf = g;
}

static void
waiting_clear(struct hub *h)
{
	for (uint32_t k = 0; k < h->nwaiting; k++)
		config_guest_free(h->waiting[k]);
	free(h->waiting);
	h->waiting = NULL;
	h->nwaiting = 0;
}

void
reload_free(struct hub *h)
{
	waiting_clear(h);
}

void
reload_start_waiting(struct hub *h)
{
	struct peer *p;

	while (h->nwaiting > 0 && !h->stopping && (p = free_entry(h)) != NULL) {
		struct config_guest *g = h->waiting[0];

		memmove(h->waiting, h->waiting + 1, --h->nwaiting * sizeof(*h->waiting));
		log_info("guest %s: peer entry %u is free, starting", g->name, p->id);
		take(p, g);
		supervise_start(h, p);
	}
}

static void
say(FILE *msgs, const char *fmt, const char *a, const char *b)
{
	char line[512];

	snprintf(line, sizeof(line), fmt, a, b);
	log_info("reload: %s", line);
	if (msgs != stderr)
		fprintf(msgs, "%s\n", line);
}

static void
keep_segment(struct hub *h, struct hub_conf *n, FILE *msgs)
{
	const struct hp_params *o = &h->conf.params;
	struct hp_params *p = &n->params;

	if (o->max_guests != p->max_guests || o->ring_size != p->ring_size ||
	    o->slot_size != p->slot_size || o->slots_per_guest != p->slots_per_guest ||
	    o->max_channels != p->max_channels || o->initial_credit != p->initial_credit ||
	    o->max_payload_size != p->max_payload_size ||
	    o->heartbeat_interval != p->heartbeat_interval)
		say(msgs, "segment parameters cannot change while the hub runs: "
		    "kept%s%s (restart hubd to apply)", "", "");
	if (memcmp(&o->var, &p->var, sizeof(o->var)) != 0)
		say(msgs, "[pool] classes and max_extents cannot change while the hub runs: "
		    "kept%s%s (restart hubd to apply)", "", "");
	*p = *o;
	if (strcmp(h->conf.control_path, n->control_path) != 0)
		say(msgs, "control socket cannot change while the hub runs: kept %s%s",
		    h->conf.control_path, "");
}

/* Guests the new file n no longer has: each stops, and its entry is
 * freed once it is down (now, if nothing runs). */
static void
drop_removed(struct hub *h, const struct hub_conf *n, FILE *msgs)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		int kept = 0;

		if (p->conf == NULL || p->removed)
			continue;
		for (uint32_t k = 0; k < n->nguests; k++)
			kept |= strcmp(n->guests[k].name, p->conf->name) == 0;
		if (kept)
			continue;
		say(msgs, "guest %s: removed from the config, stopping%s", p->conf->name, "");
		p->removed = 1;
		supervise_stop(h, p);
		if (p->state == PEER_DOWN) {	/* nothing running: free now */
			methods_forget(h, p);
			guestlog_free(p);
			config_guest_free(p->conf);
			config_guest_free(p->next_conf);
			p->conf = p->next_conf = NULL;
			p->removed = 0;
		}
	}
}

/* Guests of the new file n: a changed one restarts with its new settings,
 * one dropped earlier and still stopping comes back in its entry, a new
 * one starts in a free entry or waits for one. */
static void
apply_guests(struct hub *h, const struct hub_conf *n, FILE *msgs)
{
	for (uint32_t k = 0; k < n->nguests; k++) {
		struct config_guest *g = &n->guests[k], *copy;
		struct peer *p = find(h, g->name);

		if (p != NULL && !p->removed &&
		    config_guest_equal(p->next_conf != NULL ? p->next_conf : p->conf, g)) {
			log_debug("reload: guest %s: unchanged", g->name);
			continue;
		}
		if ((copy = config_guest_dup(g)) == NULL) {
			say(msgs, "guest %s: out of memory%s", g->name, "");
			continue;
		}
		users_take(copy);	/* settings taken: whom it runs as */
		if (p != NULL && p->removed) {
			/* one name, one entry: it was stopping, it comes back */
			say(msgs, "guest %s: back in the config while stopping: "
			    "restarting it in its entry%s", g->name, "");
			p->removed = 0;
			config_guest_free(p->next_conf);
			p->next_conf = copy;
			supervise_restart(h, p);
			continue;
		}
		if (p != NULL) {
			say(msgs, "guest %s: changed, restarting%s", g->name, "");
			config_guest_free(p->next_conf);
			p->next_conf = copy;
			supervise_restart(h, p);
			continue;
		}
		if ((p = free_entry(h)) == NULL) {
			say(msgs, "guest %s: added, waiting for a free peer entry "
			    "(one is still stopping)%s", g->name, "");
			h->waiting[h->nwaiting++] = copy;
			continue;
		}
		say(msgs, "guest %s: added, starting%s", g->name, "");
		take(p, copy);
		supervise_start(h, p);
	}
}

/* Topic name's settings going from o (the defaults, without a section)
 * to t, said. */
static void
say_topic(struct hub *h, const char *what, const struct config_topic *o,
	  const struct config_topic *t, FILE *msgs)
{
	const struct topic *open = topics_find(h, t->name);
	char line[320];

	snprintf(line, sizeof(line), "topic %s: section %s", t->name, what);
	if (o->slots != t->slots || o->event_max != t->event_max || o->block_ns != t->block_ns)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "; slots %u, event_max "
			 "%u, block_timeout %" PRIu64 "ms when the topic is made", t->slots,
			 t->event_max, t->block_ns / 1000000);
	if (open != NULL && (open->geom.slots != t->slots ||
			     open->geom.event_max != t->event_max))
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " (open now: it "
			 "keeps slots %u, event_max %u until it goes)", open->geom.slots,
			 open->geom.event_max);
	if (!config_topic_subscribers_equal(o, t))
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "; who may "
			 "subscribe: %s from now on", t->subscribers != NULL ? "its subscribers" :
			 "every guest");
	say(msgs, "%s%s", line, "");
}

/* The new file n's [topic] sections take the place of the hub's (what
 * n held is the hub's now). A topic made from now on takes them; one
 * made already keeps its memory's slots, event_max and block_timeout
 * until it goes, while who may subscribe is asked at each subscription:
 * that applies to every topic from now on. */
static void
apply_topics(struct hub *h, struct hub_conf *n, FILE *msgs)
{
	struct config_topic def_o, def_t;

	for (uint32_t k = 0; k < n->ntopics; k++) {
		const struct config_topic *t = &n->topics[k];
		const struct config_topic *o = config_topic_of(&h->conf, t->name, &def_o);

		if (o == &def_o)
			say_topic(h, "added", o, t, msgs);
		else if (!config_topic_equal(o, t))
			say_topic(h, "changed", o, t, msgs);
	}
	for (uint32_t i = 0; i < h->conf.ntopics; i++) {
		const struct config_topic *o = &h->conf.topics[i];
		const struct config_topic *t = config_topic_of(n, o->name, &def_t);

		if (t == &def_t)
			say_topic(h, "removed: the defaults", o, t, msgs);
	}
	config_topics_take(&h->conf, n);
}

/* The new file n's other [hub] keys apply from now on. */
static void
apply_hub_keys(struct hub *h, const struct hub_conf *n)
{
	log_debug("reload: attach_timeout %.3f s, stop_grace %.3f s, goodbye_grace "
		  "%.3f s, client_timeout %.3f s", n->attach_timeout_ns / 1e9,
		  n->stop_grace_ns / 1e9, n->goodbye_grace_ns / 1e9, n->client_timeout_ns / 1e9);
	h->conf.attach_timeout_ns = n->attach_timeout_ns;
	h->conf.stop_grace_ns = n->stop_grace_ns;
	h->conf.goodbye_grace_ns = n->goodbye_grace_ns;
	h->conf.client_timeout_ns = n->client_timeout_ns;
	h->conf.hang_stack = n->hang_stack;
	h->conf.channels_per_caller = n->channels_per_caller;
	h->conf.lane_ban_ns = n->lane_ban_ns;	/* bans made from now on */
	h->conf.lane_slots = n->lane_slots;	/* lanes made from now on */
	if (h->conf.pool_sweep_ns != n->pool_sweep_ns) {
		h->conf.pool_sweep_ns = n->pool_sweep_ns;
		pool_retime(h);
	}
	h->conf.pool_stuck_ns = n->pool_stuck_ns;
	h->conf.pool_quota = n->pool_quota;
	h->conf.pool_quota_slots = n->pool_quota_slots;
}

int
reload_config(struct hub *h, FILE *msgs)
{
	struct hub_conf n;
	FILE *errs = msgs;
	struct config_guest **waiting;

	if (config_load(h->conf.file, &n, errs) != 0) {
		say(msgs, "%s is broken: nothing changed%s", h->conf.file, "");
		return -1;
	}
	if (n.nguests > h->conf.params.max_guests) {
		say(msgs, "more guests than max_guests: they can never all run; "
		    "nothing changed%s%s", "", "");
		config_free(&n);
		return -1;
	}
	if ((waiting = calloc(n.nguests + 1, sizeof(*waiting))) == NULL) {
		say(msgs, "out of memory: nothing changed%s%s", "", "");
		config_free(&n);
		return -1;
	}
	log_debug("reload: %s: %u guests", h->conf.file, n.nguests);
	keep_segment(h, &n, msgs);
	apply_topics(h, &n, msgs);	/* before the guests that may use them */
	/* each guest's uid: a running one keeps its own */
	users_number(h, &n);
	/* the new file says who waits for an entry */
	waiting_clear(h);
	h->waiting = waiting;
	drop_removed(h, &n, msgs);
	apply_guests(h, &n, msgs);
	apply_hub_keys(h, &n);
	config_free(&n);
	users_release(h);	/* the uids of guests dropped or renumbered */
	return 0;
}
