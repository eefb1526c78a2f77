/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Which hub an imported call goes to. NATS's queue group picks one of
 * the hubs that export a method, and goes on picking a hub that is
 * frozen (its TCP connection open, nothing answered): a hub with a call
 * unanswered for longer than [import] suspect is passed over, the calls
 * going by name (PREFIX.at.HUB.METHOD) round-robin to the hubs that
 * answer, until it answers again (a late answer, even "timeout", says it
 * runs) or is forgotten (silent, or gone). Which hub the queue gave a
 * call is not known: each hub that may have it is asked by name for a
 * method nobody exports (PREFIX.at.HUB.hub.ping: its bridge answers
 * "no-method" at once), and the one that does not answer in time is the
 * suspect; a suspect is asked so again every [import] suspect. */
#include <stdio.h>
#include <string.h>

#include "nats/hubnats.h"

static struct br_remote *
remote_named(struct bridge *b, const char *name)
{
	for (uint32_t i = 0; i < b->nremotes; i++)
		if (strcmp(b->remotes[i].name, name) == 0)
			return &b->remotes[i];
	return NULL;
}

static int
serves(const struct br_remote *r, const char *method)
{
	if (r->solo)
		return 0;	/* not in the queue group: not ours to pick */
	for (uint32_t i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], method) == 0)
			return 1;
	return 0;
}

/* Asks r by name whether it runs: any answer clears it (callout.c hands
 * answers from unknown calls to br_route_answered too). */
static void
probe(struct bridge *b, struct br_remote *r)
{
	char subject[BR_SUBJECT_MAX], reply[BR_SUBJECT_MAX];
	natsMsg *m = NULL;

	r->probe_ns = b->now_ns;
	if (b->nc == NULL)
		return;
	snprintf(subject, sizeof(subject), "%s.at.%s.hub.ping", b->conf.subject, r->name);
	/* inbox.p.HUB: NATS's "no responders" says which hub is gone */
	snprintf(reply, sizeof(reply), "%s.p.%s", b->inbox, r->name);
	/* with our key, as a call: its answer MAC'd, so that no NATS
	 * client can say for it that it runs (callout.c checks) */
	if (natsMsg_Create(&m, subject, reply, NULL, 0) == NATS_OK &&
	    natsMsgHeader_Set(m, BR_H_FROM, b->conf.name) == NATS_OK &&
	    natsMsgHeader_Set(m, BR_H_KEY, br_trust_pk_text(b)) == NATS_OK)
		natsConnection_PublishMsg(b->nc, m);
	natsMsg_Destroy(m);
}

static void
suspect(struct bridge *b, struct br_remote *r)
{
	r->suspect_ns = b->now_ns;
	br_log("hub %s has not answered a call in %u ms: calls go to the other hubs until it answers",
	       r->name, b->conf.suspect_ms);
	b->next_describe_ns = 0;
}

const char *
br_route_pick(struct bridge *b, const struct br_import *imp)
{
	uint32_t serving = 0, suspects = 0;

	/* from = names the hub; a stream's items follow the queue's pick */
	if (b->conf.from[0] != '\0' || imp->chan_arg != -1 || b->conf.suspect_ms == 0)
		return NULL;
	for (uint32_t i = 0; i < b->nremotes; i++) {
		if (!serves(&b->remotes[i], imp->remote))
			continue;
		serving++;
		if (b->remotes[i].suspect_ns != 0)
			suspects++;
	}
	/* none suspect: NATS shares; all: nothing better than NATS's pick */
	if (suspects == 0 || suspects == serving)
		return NULL;
	for (uint32_t n = 0; n < b->nremotes; n++) {
		uint32_t i = (b->next_route + n) % b->nremotes;
		struct br_remote *r = &b->remotes[i];

		if (r->suspect_ns == 0 && serves(r, imp->remote)) {
			b->next_route = i + 1;
			return r->name;
		}
	}
	return NULL;
}

void
br_route_unanswered(struct bridge *b, const struct icall *ic)
{
	struct br_remote *r;

	if (b->conf.suspect_ms == 0)
		return;
	if (ic->hub[0] != '\0') {
		if ((r = remote_named(b, ic->hub)) != NULL && r->suspect_ns == 0) {
			suspect(b, r);
			probe(b, r);
		}
		return;
	}
	/* the queue's pick is not known: each hub that serves the method
	 * and has answered nothing since the call went is asked */
	for (uint32_t i = 0; i < b->nremotes; i++) {
		r = &b->remotes[i];
		if (r->suspect_ns == 0 && r->probe_ns == 0 && r->answer_ns < ic->sent_ns &&
		    serves(r, ic->imp->remote))
			probe(b, r);
	}
}

void
br_route_tick(struct bridge *b)
{
	uint64_t bound = (uint64_t)b->conf.suspect_ms * 1000000u;

	for (uint32_t i = 0; i < b->nremotes; i++) {
		struct br_remote *r = &b->remotes[i];

		if (r->probe_ns == 0 || b->now_ns < r->probe_ns + bound)
			continue;
		if (r->suspect_ns == 0)
			suspect(b, r);	/* asked, and no answer in time */
		probe(b, r);		/* asked again */
	}
}

void
br_route_answered(struct bridge *b, const char *hub)
{
	struct br_remote *r = remote_named(b, hub);

	if (r == NULL)
		return;
	r->answer_ns = b->now_ns;
	r->probe_ns = 0;
	if (r->suspect_ns != 0) {
		r->suspect_ns = 0;
		br_log("hub %s answers again", r->name);
		b->next_describe_ns = 0;
	}
}

void
br_route_probed(struct bridge *b, const char *hub, natsMsg *m)
{
	struct br_remote *r = remote_named(b, hub);

	if (r == NULL)
		return;
	if (!natsMsg_IsNoResponders(m)) {
		br_route_answered(b, hub);
		return;
	}
	/* nobody listens by its name: it is gone, not frozen (forgotten by
	 * import.c's next scan) */
	if (r->silent)
		r->gone = 1;
}

void
br_route_silent(struct bridge *b, struct br_remote *r)
{
	/* silent, frozen or gone: passed over while asked which */
	if (r->suspect_ns == 0)
		r->suspect_ns = b->now_ns;
	if (!r->silent)
		br_log("hub %s is silent: passed over, asked whether it runs", r->name);
	r->silent = 1;
	b->next_describe_ns = 0;
	if (r->probe_ns == 0)
		probe(b, r);
}
