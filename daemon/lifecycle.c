/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The supervisor's decisions (lifecycle.h): the transition table, the
 * restart policy, the backoff and the death tally. No OS calls, no clock
 * of its own: the unit tests drive it with a fake one. */
#include <stdlib.h>
#include <string.h>

#include "daemon/lifecycle.h"

/* "By the policy": a death's next state is decided in decide(). */
#define POLICY	PEER_NSTATES

#define R(next, action)	{ (next), (action), 1 }

/* Every pair is written out; LA_IGNORE marks those that cannot happen
 * (their watcher or timer is not running in that state). */
static const struct life_rule rules[PEER_NSTATES][PE_NEVENTS] = {
	[PEER_DOWN] = {
		[PE_START]		= R(PEER_STARTING, LA_SPAWN),
		[PE_SPAWN_OK]		= R(PEER_DOWN, LA_IGNORE),
		[PE_SPAWN_FAILED]	= R(PEER_DOWN, LA_IGNORE),
		[PE_ATTACHED]		= R(PEER_DOWN, LA_IGNORE),
		[PE_DIED]		= R(PEER_DOWN, LA_IGNORE),
		[PE_TIMER]		= R(PEER_DOWN, LA_IGNORE),
		[PE_STOP]		= R(PEER_DOWN, LA_NONE),
		[PE_RESTART]		= R(PEER_STARTING, LA_SPAWN),
		[PE_DOORBELL_GONE]	= R(PEER_DOWN, LA_IGNORE),
		[PE_VIOLATION]		= R(PEER_DOWN, LA_IGNORE),
		[PE_HUNG]		= R(PEER_DOWN, LA_IGNORE),
	},
	[PEER_STARTING] = {
		[PE_START]		= R(PEER_STARTING, LA_NONE),
		[PE_SPAWN_OK]		= R(PEER_STARTING, LA_WATCH),
		[PE_SPAWN_FAILED]	= R(POLICY, LA_DEATH),
		[PE_ATTACHED]		= R(PEER_UP, LA_ATTACH),
		[PE_DIED]		= R(POLICY, LA_DEATH),
		[PE_TIMER]		= R(PEER_ENDING, LA_KILL),	/* attach timeout */
		[PE_STOP]		= R(PEER_STOPPING, LA_TERM),
		[PE_RESTART]		= R(PEER_STOPPING, LA_TERM),
		[PE_DOORBELL_GONE]	= R(PEER_ENDING, LA_BELL_GRACE),
		/* not attached: it could not read a Goodbye */
		[PE_VIOLATION]		= R(PEER_ENDING, LA_KILL),
		[PE_HUNG]		= R(PEER_ENDING, LA_KILL),
	},
	[PEER_UP] = {
		[PE_START]		= R(PEER_UP, LA_NONE),
		[PE_SPAWN_OK]		= R(PEER_UP, LA_IGNORE),
		[PE_SPAWN_FAILED]	= R(PEER_UP, LA_IGNORE),
		[PE_ATTACHED]		= R(PEER_UP, LA_IGNORE),
		[PE_DIED]		= R(POLICY, LA_DEATH),
		[PE_TIMER]		= R(PEER_UP, LA_IGNORE),
		[PE_STOP]		= R(PEER_STOPPING, LA_TERM),
		[PE_RESTART]		= R(PEER_STOPPING, LA_TERM),
		[PE_DOORBELL_GONE]	= R(PEER_ENDING, LA_BELL_GRACE),
		[PE_VIOLATION]		= R(PEER_ENDING, LA_GOODBYE),
		/* hung: it cannot read a Goodbye, no grace */
		[PE_HUNG]		= R(PEER_ENDING, LA_KILL),
	},
	[PEER_STOPPING] = {
		/* a start that comes while it stops is not lost: it
		 * waits for its death */
		[PE_START]		= R(PEER_STOPPING, LA_PEND),
		[PE_SPAWN_OK]		= R(PEER_STOPPING, LA_IGNORE),
		[PE_SPAWN_FAILED]	= R(PEER_STOPPING, LA_IGNORE),
		/* stopped while it started, it attaches all the same: served
		 * as it winds down, or its calls to the hub (registering its
		 * methods) would wait unanswered until stop_grace killed it */
		[PE_ATTACHED]		= R(PEER_STOPPING, LA_ATTACH),
		[PE_DIED]		= R(POLICY, LA_DEATH),
		[PE_TIMER]		= R(PEER_STOPPING, LA_KILL),	/* stop_grace over */
		[PE_STOP]		= R(PEER_STOPPING, LA_NONE),
		[PE_RESTART]		= R(PEER_STOPPING, LA_PEND),
		[PE_DOORBELL_GONE]	= R(PEER_STOPPING, LA_UNWATCH_BELL),
		/* served as it winds down (host_serving): a rule broken then
		 * ends it at once, it was leaving anyway */
		[PE_VIOLATION]		= R(PEER_ENDING, LA_KILL),
		/* it stopped reading its ring: served no more, stop_grace's
		 * timer ends it */
		[PE_HUNG]		= R(PEER_ENDING, LA_NONE),
	},
	[PEER_ENDING] = {
		[PE_START]		= R(PEER_ENDING, LA_PEND),
		[PE_SPAWN_OK]		= R(PEER_ENDING, LA_IGNORE),
		[PE_SPAWN_FAILED]	= R(PEER_ENDING, LA_IGNORE),
		[PE_ATTACHED]		= R(PEER_ENDING, LA_IGNORE),
		[PE_DIED]		= R(POLICY, LA_DEATH),
		[PE_TIMER]		= R(PEER_ENDING, LA_KILL),	/* grace over */
		[PE_STOP]		= R(PEER_ENDING, LA_NONE),
		[PE_RESTART]		= R(PEER_ENDING, LA_PEND),
		[PE_DOORBELL_GONE]	= R(PEER_ENDING, LA_UNWATCH_BELL),
		[PE_VIOLATION]		= R(PEER_ENDING, LA_NONE),	/* the first reason stays */
		[PE_HUNG]		= R(PEER_ENDING, LA_NONE),
	},
	[PEER_BACKOFF] = {
		[PE_START]		= R(PEER_BACKOFF, LA_NONE),	/* when the backoff is over */
		[PE_SPAWN_OK]		= R(PEER_BACKOFF, LA_IGNORE),
		[PE_SPAWN_FAILED]	= R(PEER_BACKOFF, LA_IGNORE),
		[PE_ATTACHED]		= R(PEER_BACKOFF, LA_IGNORE),
		[PE_DIED]		= R(PEER_BACKOFF, LA_IGNORE),
		[PE_TIMER]		= R(PEER_STARTING, LA_SPAWN),
		[PE_STOP]		= R(PEER_DOWN, LA_CANCEL),
		[PE_RESTART]		= R(PEER_STARTING, LA_SPAWN),
		[PE_DOORBELL_GONE]	= R(PEER_BACKOFF, LA_IGNORE),
		[PE_VIOLATION]		= R(PEER_BACKOFF, LA_IGNORE),
		[PE_HUNG]		= R(PEER_BACKOFF, LA_IGNORE),
	},
	[PEER_FAILED] = {
		[PE_START]		= R(PEER_STARTING, LA_SPAWN),
		[PE_SPAWN_OK]		= R(PEER_FAILED, LA_IGNORE),
		[PE_SPAWN_FAILED]	= R(PEER_FAILED, LA_IGNORE),
		[PE_ATTACHED]		= R(PEER_FAILED, LA_IGNORE),
		[PE_DIED]		= R(PEER_FAILED, LA_IGNORE),
		[PE_TIMER]		= R(PEER_FAILED, LA_IGNORE),
		[PE_STOP]		= R(PEER_DOWN, LA_NONE),
		[PE_RESTART]		= R(PEER_STARTING, LA_SPAWN),
		[PE_DOORBELL_GONE]	= R(PEER_FAILED, LA_IGNORE),
		[PE_VIOLATION]		= R(PEER_FAILED, LA_IGNORE),
		[PE_HUNG]		= R(PEER_FAILED, LA_IGNORE),
	},
	/* start = manual: nothing runs yet, nothing is watched */
	[PEER_WAITING] = {
		[PE_START]		= R(PEER_WAITING, LA_NONE),
		[PE_SPAWN_OK]		= R(PEER_STARTING, LA_WATCH),
		[PE_SPAWN_FAILED]	= R(PEER_WAITING, LA_IGNORE),
		[PE_ATTACHED]		= R(PEER_WAITING, LA_IGNORE),
		[PE_DIED]		= R(PEER_WAITING, LA_IGNORE),
		[PE_TIMER]		= R(PEER_WAITING, LA_IGNORE),
		[PE_STOP]		= R(PEER_DOWN, LA_WITHDRAW),
		[PE_RESTART]		= R(PEER_STARTING, LA_WITHDRAW),	/* a new ticket */
		[PE_DOORBELL_GONE]	= R(PEER_WAITING, LA_IGNORE),
		[PE_VIOLATION]		= R(PEER_WAITING, LA_IGNORE),
		[PE_HUNG]		= R(PEER_WAITING, LA_IGNORE),
	},
};

const struct life_rule *
lifecycle_rule(enum peer_state s, enum peer_event e)
{
	static const struct life_rule none = { PEER_DOWN, LA_IGNORE, 0 };

	if ((unsigned)s >= PEER_NSTATES || (unsigned)e >= PE_NEVENTS)
		return &none;
	return &rules[s][e];
}

static uint64_t
age(uint64_t then, uint64_t now)
{
	return now > then ? now - then : 0;
}

static void
drop_oldest(struct life *l)
{
	l->first = (l->first + 1) % l->cap;
	l->n--;
}

/* Records a death at now; returns the deaths within the window, this one
 * included, counted up to max_deaths + 1 (all that is needed). */
static uint32_t
tally_add(struct life *l, const struct config_guest *c, uint64_t now)
{
	uint32_t want = c->max_deaths + 1;

	/* what fell out of the window, and what is beyond counting */
	while (l->n > 0 && (age(l->died[l->first], now) > c->death_window_ns ||
			    l->n >= want))
		drop_oldest(l);
	if (l->n == l->cap) {		/* l->n < want: room to grow */
		uint32_t cap = l->cap < 4 ? 8 : l->cap * 2;
		uint64_t *d;

		if (cap > want || cap < l->cap)
			cap = want;
		if ((d = malloc((size_t)cap * sizeof(*d))) != NULL) {
			for (uint32_t i = 0; i < l->n; i++)
				d[i] = l->died[(l->first + i) % l->cap];
			free(l->died);
			l->died = d;
			l->cap = cap;
			l->first = 0;
		} else if (l->n > 0) {
			drop_oldest(l);	/* counts low from now on */
			l->short_ring = 1;
		} else {
			l->short_ring = 1;
			return 1;
		}
	}
	l->died[(l->first + l->n) % l->cap] = now;
	return ++l->n;
}

uint32_t
lifecycle_recent(struct life *l, const struct config_guest *c, uint64_t now)
{
	uint32_t k = 0;

	/* newest first: the ring is in order of time */
	while (k < l->n && age(l->died[(l->first + l->n - 1 - k) % l->cap], now) <=
			   c->death_window_ns)
		k++;
	return k;
}

int
lifecycle_start_pending(const struct life *l, enum peer_state s)
{
	return l->want_restart && (s == PEER_STOPPING || s == PEER_ENDING);
}

void
lifecycle_reset(struct life *l)
{
	l->n = l->first = 0;
	l->backoff_ns = 0;
	l->short_ring = 0;
}

void
lifecycle_free(struct life *l)
{
	free(l->died);
	memset(l, 0, sizeof(*l));
}

/* Exponential backoff from backoff_min, doubled per death up to
 * backoff_max; back to the minimum after a run longer than twice the
 * maximum. */
static uint64_t
backoff(struct life *l, const struct config_guest *c, uint64_t ran_ns)
{
	if (l->backoff_ns == 0 || l->backoff_ns < c->backoff_min_ns ||
	    ran_ns - ran_ns / 2 > c->backoff_max_ns)	/* ran > 2 max */
		l->backoff_ns = c->backoff_min_ns;
	else if (l->backoff_ns > c->backoff_max_ns / 2)
		l->backoff_ns = c->backoff_max_ns;
	else
		l->backoff_ns *= 2;
	return l->backoff_ns;
}

/* After a death: start at once (restart asked while it was going), down
 * (wanted down, or the policy says so), failed (too many deaths in the
 * window), or a backoff. */
static void
decide(struct life *l, const struct life_in *in, struct life_out *out)
{
	const struct config_guest *c = in->conf;
	int restart = l->want_restart;

	/* an end somebody asked for (hubctl stop or restart, a reload, the
	 * hub stopping) is no death: it brings no guest nearer max_deaths */
	out->recent = restart || l->want_down || in->hub_stopping ?
	    lifecycle_recent(l, c, in->now_ns) : tally_add(l, c, in->now_ns);
	l->want_restart = 0;
	if (restart && !in->hub_stopping) {
		out->next = PEER_STARTING;
		return;
	}
	/* start = manual: a person starts it again, with a new ticket;
	 * hubd only gets that ready (a failure to is a death like others) */
	if (c->start_manual && !l->want_down && !in->hub_stopping &&
	    in->reason != DEATH_SPAWN) {
		out->next = PEER_STARTING;
		return;
	}
	if (l->want_down || in->hub_stopping || c->restart == RESTART_NEVER ||
	    (c->restart == RESTART_ON_FAILURE && in->reason == DEATH_EXITED &&
	     in->status == 0)) {
		out->next = PEER_DOWN;
		return;
	}
	if (out->recent > c->max_deaths) {
		out->next = PEER_FAILED;
		return;
	}
	out->next = PEER_BACKOFF;
	out->delay_ns = backoff(l, c, in->ran_ns);
}

void
lifecycle_step(struct life *l, enum peer_state s, enum peer_event e,
	       const struct life_in *in, struct life_out *out)
{
	const struct life_rule *r = lifecycle_rule(s, e);

	out->next = r->next;
	out->action = r->action;
	out->delay_ns = 0;
	out->recent = 0;
	if (r->action == LA_IGNORE) {
		out->next = s;
		return;
	}
	/* the wishes */
	switch (e) {
	case PE_START:
		l->want_down = 0;
		if (r->action == LA_PEND)
			l->want_restart = 1;
		if (s == PEER_DOWN || s == PEER_FAILED)
			lifecycle_reset(l);	/* a fresh start by hand */
		break;
	case PE_RESTART:
		l->want_down = 0;
		l->want_restart = r->action != LA_SPAWN && r->action != LA_WITHDRAW;
		lifecycle_reset(l);
		break;
	case PE_STOP:
		l->want_down = 1;
		l->want_restart = 0;	/* a pending start is forgotten */
		break;
	case PE_SPAWN_OK:
	case PE_SPAWN_FAILED:
	case PE_ATTACHED:
	case PE_DIED:
	case PE_TIMER:
	case PE_DOORBELL_GONE:
	case PE_VIOLATION:
	case PE_HUNG:
	case PE_NEVENTS:
		break;
	}
	if (r->action == LA_DEATH)
		decide(l, in, out);
}

const char *
lifecycle_state_name(enum peer_state s)
{
	static const char *const names[PEER_NSTATES] = {
		[PEER_DOWN] = "down", [PEER_STARTING] = "starting", [PEER_UP] = "up",
		[PEER_STOPPING] = "stopping", [PEER_ENDING] = "ending",
		[PEER_BACKOFF] = "backoff", [PEER_FAILED] = "failed",
		[PEER_WAITING] = "waiting",
	};

	return (unsigned)s < PEER_NSTATES ? names[s] : "?";
}

const char *
lifecycle_event_name(enum peer_event e)
{
	static const char *const names[PE_NEVENTS] = {
		[PE_START] = "start", [PE_SPAWN_OK] = "spawn ok",
		[PE_SPAWN_FAILED] = "spawn failed", [PE_ATTACHED] = "attached",
		[PE_DIED] = "died", [PE_TIMER] = "timer", [PE_STOP] = "stop",
		[PE_RESTART] = "restart", [PE_DOORBELL_GONE] = "doorbell gone",
		[PE_VIOLATION] = "violation", [PE_HUNG] = "hung",
	};

	return (unsigned)e < PE_NEVENTS ? names[e] : "?";
}

const char *
lifecycle_action_name(enum life_action a)
{
	static const char *const names[LA_NACTIONS] = {
		[LA_NONE] = "none", [LA_IGNORE] = "ignore", [LA_SPAWN] = "spawn",
		[LA_WATCH] = "watch", [LA_ATTACH] = "attach", [LA_TERM] = "term",
		[LA_GOODBYE] = "goodbye", [LA_KILL] = "kill",
		[LA_BELL_GRACE] = "bell grace", [LA_UNWATCH_BELL] = "unwatch bell",
		[LA_CANCEL] = "cancel", [LA_DEATH] = "death", [LA_WITHDRAW] = "withdraw",
		[LA_PEND] = "pend",
	};

	return (unsigned)a < LA_NACTIONS ? names[a] : "?";
}

const char *
lifecycle_death_name(int reason)
{
	static const char *const names[DEATH_NREASONS] = {
		[DEATH_EXITED] = "exited", [DEATH_CRASHED] = "crashed",
		[DEATH_HUNG] = "hung", [DEATH_VIOLATION] = "protocol violation",
		[DEATH_SPAWN] = "spawn failed", [DEATH_STOPPED] = "stopped",
	};

	return reason >= 0 && reason < DEATH_NREASONS ? names[reason] : "?";
}
