/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Reload (SIGHUP, hubctl reload): re-read the config and bring the guests
 * in line with it. A broken file changes nothing. Guests are matched by
 * name, one name one entry: new ones start, dropped ones stop, changed ones
 * restart with their new settings (but for what the instance running
 * takes as it is: its restart policy and pool quota), and one dropped
 * earlier and still
 * stopping is kept in its entry and restarted. A new guest finding every
 * entry taken (an old one still stopping) waits and starts as soon as an
 * entry is free. Each [hub] and [pool] key the file changes is said by
 * name: taken from then on, or, for what cannot change under running
 * guests (the parameters of their memory and pools, the control path),
 * kept with its running value.
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
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control.h"
#include "daemon/host.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "daemon/reload.h"
#include "daemon/spawn.h"
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

/* Lines said by this reload: none, and it says that nothing changed. */
static unsigned said;

static void
say(FILE *msgs, const char *fmt, const char *a, const char *b)
{
	char line[512];

	said++;
	snprintf(line, sizeof(line), fmt, a, b);
	log_info("reload: %s", line);
	if (msgs != stderr)
		fprintf(msgs, "%s\n", line);
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
		if (p->state == PEER_DOWN)	/* nothing running: free now */
			supervise_forget(h, p);	/* its uid: reload_config's release */
	}
}

/* A guest (re)started by the reload, said: hubd starts one, a person
 * one of start = manual (hubd stops it if it runs, then waits). */
static void
say_start(FILE *msgs, const struct config_guest *g, const char *what, const char *then)
{
	char line[512], why[256];

	if (g->start_manual)
		snprintf(line, sizeof(line), "%s%s waits to be started by hand (hubctl ticket %s)",
			 what, strcmp(what, "added") == 0 ? ": it" :
			 ": stopping it if it runs; then it", g->name);
	else if (spawn_exec_problem(g->exec, why, sizeof(why)) != NULL)
		/* as hubd -n warns: it will fail to spawn, and back off */
		snprintf(line, sizeof(line), "%s, %s; warning: exec %s: %s: it will not start",
			 what, then, g->exec, why);
	else
		snprintf(line, sizeof(line), "%s, %s", what, then);
	say(msgs, "guest %s: %s", g->name, line);
}

/* g differs from p's settings only in keys its instance takes as it runs
 * (its restart policy, from its next death, and its pool quota): taken,
 * and it runs on. A restart pending takes them too. */
static void
take_live(struct peer *p, const struct config_guest *g, FILE *msgs)
{
	struct config_guest *now = p->next_conf != NULL ? p->next_conf : p->conf;
	char names[160];

	config_guest_take_live(now, g, names, sizeof(names));
	if (now != p->conf)
		config_guest_take_live(p->conf, g, NULL, 0);
	say(msgs, "guest %s: %s changed: taken without a restart", g->name, names);
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
		/* the settings it runs, or restarts, with */
		const struct config_guest *now = p == NULL || p->removed ? NULL :
		    p->next_conf != NULL ? p->next_conf : p->conf;

		if (now != NULL && config_guest_equal(now, g)) {
			log_debug("reload: guest %s: unchanged", g->name);
			continue;
		}
		/* one down or failed starts with them, as with any change */
		if (now != NULL && p->state != PEER_DOWN && p->state != PEER_FAILED &&
		    config_guest_differs_live(now, g)) {
			take_live(p, g, msgs);
			continue;
		}
		if ((copy = config_guest_dup(g)) == NULL) {
			say(msgs, "guest %s: out of memory%s", g->name, "");
			continue;
		}
		users_take(copy);	/* settings taken: whom it runs as */
		if (p != NULL && p->removed) {
			/* one name, one entry: it was stopping, it comes back */
			say_start(msgs, copy, "back in the config while stopping",
				  "restarting it in its entry");
			p->removed = 0;
			config_guest_free(p->next_conf);
			p->next_conf = copy;
			supervise_restart(h, p);
			continue;
		}
		if (p != NULL) {
			say_start(msgs, copy, "changed", "restarting");
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
		say_start(msgs, copy, "added", "starting");
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

/* What apply_hub_keys did not take, and why, for say_key. */
struct keys_told {
	FILE		*msgs;
	const char	*group_why;	/* group = could not be applied: why */
};

/* A [hub] or [pool] key the new file changed, said by name: its new
 * value taken, or its running one kept. */
static void
say_key(void *arg, const char *section, const char *key, const char *was, const char *n,
	int taken)
{
	const struct keys_told *t = arg;
	char name[48], line[512];

	snprintf(name, sizeof(name), "%s%s", strcmp(section, "pool") == 0 ? "[pool] " : "", key);
	if (taken)
		snprintf(line, sizeof(line), "%s: now %s (was %s)", name, n, was);
	else if (strcmp(key, "group") == 0 && t->group_why != NULL)
		snprintf(line, sizeof(line), "%s: cannot change: %s: kept %s", name, t->group_why,
			 was);
	else
		snprintf(line, sizeof(line), "%s: cannot change without a restart: kept %s",
			 name, was);
	say(t->msgs, "%s%s", line, "");
}

/* The new file n's [hub] and [pool] keys that can change under running
 * guests apply from now on. The others keep their running values: the
 * parameters of the guests' memory and pools, which the guests map, and
 * the control path, which hubctl finds hubd by. Every key n changes is
 * said (config_hub_changes compares the table's every row), so a key
 * not taken here is never dropped without a word. */
static void
apply_hub_keys(struct hub *h, const struct hub_conf *n, FILE *msgs)
{
	struct hub_conf was = h->conf;	/* its [hub] and [pool] values only */
	struct keys_told told = { msgs, NULL };
	char why[PATH_MAX + 64];

	log_debug("reload: attach_timeout %.3f s, stop_grace %.3f s, goodbye_grace "
		  "%.3f s, client_timeout %.3f s", n->attach_timeout_ns / 1e9,
		  n->stop_grace_ns / 1e9, n->goodbye_grace_ns / 1e9, n->client_timeout_ns / 1e9);
	h->conf.attach_timeout_ns = n->attach_timeout_ns;
	h->conf.stop_grace_ns = n->stop_grace_ns;
	h->conf.goodbye_grace_ns = n->goodbye_grace_ns;
	h->conf.client_timeout_ns = n->client_timeout_ns;
	h->conf.hang_stack = n->hang_stack;
	/* calls routed and lanes made from now on; backlogs still hold
	 * the answers to the calls made before (host.c) */
	h->conf.calls_in_flight = n->calls_in_flight;
	h->conf.channels_per_caller = n->channels_per_caller;
	h->conf.lanes_per_guest = n->lanes_per_guest;	/* open lanes stay */
	h->conf.lane_ban_ns = n->lane_ban_ns;	/* bans made from now on */
	h->conf.lane_slots = n->lane_slots;	/* lanes made from now on */
	/* each guest's settings carry its range: a change restarts it */
	h->conf.guest_uids = n->guest_uids;
	if (n->gid != h->conf.gid) {
		if (control_regroup(h, n->gid) == 0) {
			h->conf.gid = n->gid;
		} else {
			snprintf(why, sizeof(why), "chown %s: %s", h->conf.control_path,
				 strerror(errno));
			told.group_why = why;
		}
	}
	if (h->conf.pool_sweep_ns != n->pool_sweep_ns) {
		h->conf.pool_sweep_ns = n->pool_sweep_ns;
		pool_retime(h);
	}
	h->conf.pool_stuck_ns = n->pool_stuck_ns;
	h->conf.pool_release_ns = n->pool_release_ns;
	h->conf.pool_quota = n->pool_quota;
	h->conf.pool_quota_slots = n->pool_quota_slots;
	config_hub_changes(&was, &h->conf, n, say_key, &told);
}

int
reload_config(struct hub *h, FILE *msgs)
{
	struct hub_conf n;
	FILE *errs = msgs;
	struct config_guest **waiting;
	char *etext = NULL;
	size_t elen = 0;
	int rc;

	/* what it would start would outlive the stop: hubd would wait for
	 * it for ever */
	if (h->stopping) {
		say(msgs, "hubd is stopping: %s not read, nothing changed%s", h->conf.file, "");
		return -1;
	}
	/* what the file's reading says goes to hubd's log too: a client's
	 * reload (hubctl reload) left only "broken" there */
	if (msgs != stderr && (errs = open_memstream(&etext, &elen)) == NULL)
		errs = msgs;
	/* checked against what it keeps of the hub's (max_guests, ...) */
	rc = config_load_over(h->conf.file, &n, errs, &h->conf);
	if (errs != msgs) {
		char *save = NULL;

		fclose(errs);
		for (char *l = strtok_r(etext, "\n", &save); l != NULL;
		     l = strtok_r(NULL, "\n", &save)) {
			log_warnx("reload: %s", l);
			fprintf(msgs, "%s\n", l);
		}
		free(etext);
	}
	if (rc != 0) {
		say(msgs, "%s is broken: nothing changed%s", h->conf.file, "");
		return -1;
	}
	if ((waiting = calloc(n.nguests + 1, sizeof(*waiting))) == NULL) {
		say(msgs, "out of memory: nothing changed%s%s", "", "");
		config_free(&n);
		return -1;
	}
	log_debug("reload: %s: %u guests", h->conf.file, n.nguests);
	said = 0;
	/* before the guests start: they run by the new values */
	apply_hub_keys(h, &n, msgs);
	apply_topics(h, &n, msgs);
	/* each guest's uid: a running one keeps its own */
	users_number(h, &n);
	/* the new file says who waits for an entry */
	waiting_clear(h);
	h->waiting = waiting;
	drop_removed(h, &n, msgs);
	apply_guests(h, &n, msgs);
	if (said == 0)
		say(msgs, "%s: nothing changed%s", h->conf.file, "");
	config_free(&n);
	users_release(h);	/* the uids of guests dropped or renumbered */
	return 0;
}
