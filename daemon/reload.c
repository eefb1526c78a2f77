/* Reload (SIGHUP, hubctl reload): re-read the config and bring the guests
 * in line with it. A broken file changes nothing. Guests are matched by
 * name: new ones start, dropped ones stop, changed ones restart with their
 * new settings. The segment cannot change under running guests: its
 * parameters, like the segment and control paths, are reported and kept. */
#include <string.h>

#include "daemon/hubd.h"
#include "daemon/log.h"

static struct peer *
find(struct hub *h, const char *name)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (h->peers[i].conf != NULL && !h->peers[i].removed &&
		    strcmp(h->peers[i].conf->name, name) == 0)
			return &h->peers[i];
	return NULL;
}

static void
say(FILE *msgs, const char *fmt, const char *a, const char *b)
{
	char line[256];

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
	*p = *o;
	if (strcmp(h->conf.segment_path, n->segment_path) != 0)
		say(msgs, "segment path cannot change while the hub runs: kept %s%s",
		    h->conf.segment_path, "");
	if (strcmp(h->conf.control_path, n->control_path) != 0)
		say(msgs, "control socket cannot change while the hub runs: kept %s%s",
		    h->conf.control_path, "");
}

int
reload_config(struct hub *h, FILE *msgs)
{
	struct hub_conf n;
	FILE *errs = msgs;

	if (config_load(h->conf.file, &n, errs) != 0) {
		say(msgs, "%s is broken: nothing changed%s", h->conf.file, "");
		return -1;
	}
	if (n.nguests > h->conf.params.max_guests) {
		say(msgs, "more guests than max_guests: nothing changed%s%s", "", "");
		config_free(&n);
		return -1;
	}
	keep_segment(h, &n, msgs);
	/* dropped */
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *p = &h->peers[i];
		int kept = 0;

		if (p->conf == NULL || p->removed)
			continue;
		for (uint32_t k = 0; k < n.nguests; k++)
			kept |= strcmp(n.guests[k].name, p->conf->name) == 0;
		if (kept)
			continue;
		say(msgs, "guest %s: removed from the config, stopping%s", p->conf->name, "");
		p->removed = 1;
		supervise_stop(h, p);
		if (p->state == PEER_DOWN) {	/* nothing running: free now */
			guest_conf_free(p->conf);
			p->conf = NULL;
			p->removed = 0;
		}
	}
	/* changed and added */
	for (uint32_t k = 0; k < n.nguests; k++) {
		struct guest_conf *g = &n.guests[k], *copy;
		struct peer *p = find(h, g->name);

		if (p != NULL && guest_conf_equal(p->conf, g))
			continue;
		if ((copy = guest_conf_dup(g)) == NULL) {
			say(msgs, "guest %s: out of memory%s", g->name, "");
			continue;
		}
		if (p != NULL) {
			say(msgs, "guest %s: changed, restarting%s", g->name, "");
			guest_conf_free(p->next_conf);
			p->next_conf = copy;
			supervise_restart(h, p);
			continue;
		}
		for (uint32_t i = 0; i < h->conf.params.max_guests && copy != NULL; i++) {
			p = &h->peers[i];
			if (p->conf != NULL || p->state != PEER_DOWN)
				continue;
			memset(p->tally, 0, sizeof(p->tally));
			p->ndeaths = p->restarts = 0;
			p->conf = copy;
			copy = NULL;
			say(msgs, "guest %s: added, starting%s", g->name, "");
			supervise_start(h, p);
		}
		if (copy != NULL) {
			say(msgs, "guest %s: no free peer entry%s", g->name, "");
			guest_conf_free(copy);
		}
	}
	/* the new file's other [hub] keys apply from now on */
	h->conf.attach_timeout_ns = n.attach_timeout_ns;
	h->conf.stop_grace_ns = n.stop_grace_ns;
	h->conf.goodbye_grace_ns = n.goodbye_grace_ns;
	h->conf.client_timeout_ns = n.client_timeout_ns;
	config_free(&n);
	return 0;
}
