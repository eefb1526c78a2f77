/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Discovery (discovery.h): a guest's state as the supervisor moves it
 * (hub.guests: up, down, restarting, failed, and why), its methods as
 * they are registered and go with it (hub.methods). */
#include <stdio.h>

#include "daemon/discovery.h"
#include "daemon/host.h"
#include "daemon/lifecycle.h"
#include "daemon/topics.h"

void
discovery_method(struct hub *h, const struct method *m)
{
	if (m != NULL)
		topics_discover(h, TOPIC_METHODS, m->name, "registered", m->signature);
}

/* A guest gone: its methods with it. */
static void
methods_gone(struct hub *h, struct peer *p)
{
	for (uint32_t i = 0; i < h->nmethods; i++) {
		const struct method *m = &h->methods[i];

		if (m->owner == p->id && m->epoch == p->epoch)
			topics_discover(h, TOPIC_METHODS, m->name, "gone", m->signature);
	}
}

/* hub.guests: a state's word (1 up, 2 down, 3 restarting, 4 failed), 0
 * for those in between (starting, waiting), which are not news. A guest
 * asked to stop, or ended, is down from then on: it serves no more. */
static int
state_word(enum peer_state s)
{
	switch (s) {
	case PEER_UP:		return 1;
	case PEER_DOWN:
	case PEER_STOPPING:
	case PEER_ENDING:	return 2;
	case PEER_BACKOFF:	return 3;
	case PEER_FAILED:	return 4;
	default:		return 0;
	}
}

/* Why it is not up: what ended it, or its last death. */
static void
reason_of(const struct peer *p, char *buf, size_t cap)
{
	const struct death *d;

	buf[0] = '\0';
	if (p->state == PEER_STOPPING || p->state == PEER_ENDING) {
		snprintf(buf, cap, "%s", p->kill_detail[0] ? p->kill_detail : "asked to stop");
		return;
	}
	if (p->state == PEER_UP || p->ndeaths == 0)
		return;
	d = &p->tally[(p->ndeaths - 1) % TALLY_MAX];
	if (d->detail[0] != '\0')
		snprintf(buf, cap, "%s: %s", lifecycle_death_name(d->reason), d->detail);
	else if (d->sig != 0)
		snprintf(buf, cap, "%s: signal %d", lifecycle_death_name(d->reason), d->sig);
	else
		snprintf(buf, cap, "%s: status %d", lifecycle_death_name(d->reason), d->status);
}

static void
on_state(struct hub *h, struct peer *p)
{
	static const char *const words[] = { "", "up", "down", "restarting", "failed" };
	int word = state_word(p->state);
	char reason[DEATH_DETAIL_MAX + 64];

	if (word == 0 || p->conf == NULL || p->said_state == word)
		return;
	p->said_state = word;
	reason_of(p, reason, sizeof(reason));
	topics_discover(h, TOPIC_GUESTS, p->conf->name, words[word], reason);
}

void
discovery_init(struct hub *h)
{
	host_on_detach(h, methods_gone);
	h->hooks.state_changed = on_state;
}
