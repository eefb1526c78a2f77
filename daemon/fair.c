/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A fair share of a guest for each of its callers. A guest reads its ring
 * in order, so a call waits behind every call routed to the guest before
 * it: a caller that kept a ring's worth of calls in flight made another's
 * one call wait behind all of them. hubd counts each guest's calls in
 * flight by caller (the entries of its pending table, answer.c); while
 * a guest has more than one caller, a caller with its share in flight
 * there (the guest's ring over its callers, FAIR_FLOOR at least) is not
 * read until some are answered: the back-pressure a backlogged target
 * puts on its callers (host.c), on that caller alone (route.c holds it,
 * and never one anybody waits on). A caller alone keeps the whole ring. */
#include <stdlib.h>

#include "daemon/fair.h"
#include "daemon/host.h"
#include "proto/clock.h"

/* A share is never less: enough in flight to keep a guest busy through
 * hubd's rounds. */
#define FAIR_FLOOR	8
/* A caller counts as one of a guest's callers this long after its last
 * call there was answered. */
#define FAIR_RECENT_NS	(1000ull * 1000 * 1000)

/* The counting slot of a call's caller: its peer id, 0 for those that
 * are not guests (control clients, hubd itself), one caller. */
static uint32_t
caller_slot(const struct origin *o)
{
	return o->kind == ORIGIN_PEER ? o->peer : 0;
}

int
fair_init(struct hub *h)
{
	for (uint32_t i = 0; i < h->npeers; i++) {
		h->peers[i].calls_from = calloc(h->npeers + 1, sizeof(uint32_t));
		if (h->peers[i].calls_from == NULL)
			return -1;
		h->peers[i].left[0].slot = h->peers[i].left[1].slot = UINT32_MAX;
	}
	return 0;
}

void
fair_free(struct hub *h)
{
	for (uint32_t i = 0; h->peers != NULL && i < h->npeers; i++) {
		free(h->peers[i].calls_from);
		h->peers[i].calls_from = NULL;
	}
}

/* Whether a caller other than slot's had its last call at q answered
 * within FAIR_RECENT_NS: one that calls one at a time has no call in
 * flight between an answer and its next call (for milliseconds on a
 * loaded machine), and a flood would take the whole ring back each time.
 * The last two to leave are kept: a flood's own count may come down to
 * none meanwhile. */
static int
left_recently(const struct peer *q, uint32_t slot)
{
	uint64_t now = 0;

	for (int i = 0; i < 2; i++) {
		uint32_t s = q->left[i].slot;

		if (s == UINT32_MAX || s == slot || q->calls_from[s] != 0)
			continue;
		if (now == 0)
			now = hp_coarse_ns();
		if (now - q->left[i].ns < FAIR_RECENT_NS)
			return 1;
	}
	return 0;
}

int
fair_over_share(const struct peer *q, uint32_t slot)
{
	uint32_t n = q->ncallers, share;

	if (q->calls_from[slot] < FAIR_FLOOR || (n < 2 && !left_recently(q, slot)))
		return 0;
	share = q->ep.tx.size / (n < 2 ? 2 : n);
	return q->calls_from[slot] >= (share > FAIR_FLOOR ? share : FAIR_FLOOR);
}

void
fair_sent(struct hub *h, struct peer *q, struct pending *e)
{
	struct peer *c;

	e->from = caller_slot(&e->o);
	if (q->calls_from[e->from]++ == 0)
		q->ncallers++;
	e->streams = e->o.chan != 0;
	if ((c = hub_peer(h, e->from)) != NULL)
		c->streaming += e->streams;
	/* somebody waits for q's answer: read it (route.c) */
	host_unhold(q, HOLD_BACKLOG | HOLD_SHARE);
}

void
fair_done(struct hub *h, struct peer *q, const struct pending *e)
{
	struct peer *c;

	if (e->from == FAIR_NOBODY)
		return;
	c = hub_peer(h, e->from);
	if (--q->calls_from[e->from] == 0) {
		q->ncallers--;
		/* a guest that calls one at a time is one of q's callers
		 * between its calls too; a control client's call (hubctl
		 * call, now and then) counts while it is in flight */
		if (e->from != 0) {
			if (q->left[0].slot != e->from)
				q->left[1] = q->left[0];
			q->left[0].slot = e->from;
			q->left[0].ns = hp_coarse_ns();
		}
	}
	if (c == NULL)
		return;
	if (e->streams)
		c->streaming--;
	if (c->held_on == q->id && !fair_over_share(q, e->from))
		host_unhold(c, HOLD_SHARE);
	/* q answers c's calls: c may be held on it again */
	if (c->hold_off == q->id)
		c->hold_off = 0;
}

void
fair_orphan(struct hub *h, struct peer *q, struct pending *e)
{
	fair_done(h, q, e);
	e->from = FAIR_NOBODY;
}
