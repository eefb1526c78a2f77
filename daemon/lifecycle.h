/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The guest supervisor's decisions, without the OS (after s6-supervise):
 * the states a guest goes through, the events that move it, one table of
 * (state x event) -> (next state, action), the restart policy, the backoff
 * and the tally of recent deaths. The clock is passed in; supervise.c
 * carries the actions out (fork and exec, signals, timers, recovery).
 *
 *	DOWN --START--> STARTING --ATTACHED--> UP
 *	STARTING, UP --STOP--> STOPPING (SIGTERM; SIGKILL after stop_grace)
 *	STOPPING, ENDING --START, RESTART--> the same, a start pending: it
 *	    starts once down (a STOP forgets it), never lost
 *	UP --VIOLATION--> ENDING (Goodbye; SIGKILL after goodbye_grace)
 *	STARTING, UP --HUNG, attach timeout--> ENDING (SIGKILL now)
 *	STARTING, UP --DOORBELL_GONE--> ENDING (SIGKILL unless it exits in 1 s)
 *	any running state --DIED--> DOWN, BACKOFF, FAILED, or STARTING at
 *	    once after a restart by hand; a failed spawn is a death too
 *	BACKOFF --TIMER--> STARTING; BACKOFF, FAILED --STOP--> DOWN
 *	start = manual (manual.c): STARTING prepares everything but the
 *	    process and WAITS for a person to start it; WAITING --SPAWN_OK
 *	    (it came for its ticket)--> STARTING; WAITING --STOP--> DOWN,
 *	    --RESTART--> STARTING (a new ticket); a death waits again */
#ifndef HUB_LIFECYCLE_H
#define HUB_LIFECYCLE_H

#include <stdint.h>

#include "daemon/config.h"

enum peer_state {
	PEER_DOWN,		/* not running, not wanted (stopped, restart = never) */
	PEER_STARTING,		/* spawned, entry Reserved, not attached yet */
	PEER_UP,		/* attached and served */
	PEER_STOPPING,		/* asked to leave; SIGKILL after stop_grace */
	PEER_ENDING,		/* ended by the hub: no longer served; SIGKILL at
				 * once or when its grace is over */
	PEER_BACKOFF,		/* died; starts again when the backoff is over */
	PEER_FAILED,		/* died too often; down until started by hand */
	PEER_WAITING,		/* start = manual: ready, its ticket waits for
				 * a process started by hand (manual.c) */
	PEER_NSTATES
};

enum peer_event {
	PE_START,		/* wanted up: hubd starts, hubctl start, reload added it */
	PE_SPAWN_OK,		/* forked and exec'd; start = manual: a process
				 * took its ticket */
	PE_SPAWN_FAILED,	/* could not be started: a death of its own */
	PE_ATTACHED,		/* its entry says Attached */
	PE_DIED,		/* its pidfd says it exited */
	PE_TIMER,		/* attach timeout, backoff, stop or goodbye grace over */
	PE_STOP,		/* by hand, hub stopping, removed by a reload */
	PE_RESTART,		/* by hand, config changed, re-added by a reload */
	PE_DOORBELL_GONE,	/* its end of the doorbell closed */
	PE_VIOLATION,		/* it broke a protocol rule */
	PE_HUNG,		/* heartbeat stale, or it stopped reading its ring */
	PE_NEVENTS
};

/* What supervise.c does for a pair of the table. */
enum life_action {
	LA_NONE,		/* nothing (flags only, or already under way) */
	LA_IGNORE,		/* cannot happen: logged, nothing done */
	LA_SPAWN,		/* fork and exec; then SPAWN_OK or SPAWN_FAILED */
	LA_WATCH,		/* spawned: watch pidfd and doorbell, attach timer */
	LA_ATTACH,		/* serve its rings; no more timer */
	LA_TERM,		/* ask it to leave (SIGTERM unless the hub stops:
				 * the header's Goodbye asks); stop_grace timer */
	LA_GOODBYE,		/* Goodbye naming the rule; goodbye_grace timer */
	LA_KILL,		/* SIGKILL its process group now */
	LA_BELL_GRACE,		/* stop watching the doorbell; 1 s to exit */
	LA_UNWATCH_BELL,	/* stop watching the doorbell */
	LA_CANCEL,		/* stop the backoff timer */
	LA_DEATH,		/* tally, recover; next by the policy (DOWN, BACKOFF
				 * with a delay, FAILED, or STARTING: spawn) */
	LA_WITHDRAW,		/* WAITING: its ticket and domain go; spawn
				 * again if the next state is STARTING */
	LA_PEND,		/* still going: a start pending, carried out
				 * by its death (want_restart) */
	LA_NACTIONS
};

/* Why a guest went away (the death tally). */
enum death_reason {
	DEATH_EXITED,		/* exited by itself */
	DEATH_CRASHED,		/* killed by a signal */
	DEATH_HUNG,		/* heartbeat stale, attach timeout, ...: we killed it */
	DEATH_VIOLATION,	/* broke the protocol: we ended it */
	DEATH_SPAWN,		/* could not be started */
	DEATH_STOPPED,		/* the SIGTERM hubd sent to stop it ended it */
	DEATH_NREASONS
};

/* One guest's supervisor memory: the wishes and the recent deaths. The
 * death times (CLOCK_MONOTONIC) are a ring, oldest first, holding those
 * within death_window and at most max_deaths + 1: it grows on demand. */
struct life {
	int		want_down;	/* stopped by hand, hub stopping, removed */
	int		want_restart;	/* start again as soon as it is down */
	uint64_t	backoff_ns;	/* the last restart delay; 0: none yet */
	uint64_t	*died;		/* the ring */
	uint32_t	cap;
	uint32_t	n;
	uint32_t	first;		/* index of the oldest */
	int		short_ring;	/* out of memory: the count may be low */
};

struct life_in {
	uint64_t		now_ns;		/* CLOCK_MONOTONIC */
	const struct config_guest	*conf;		/* restart, max_deaths, window, backoff */
	int			hub_stopping;
	int			reason;		/* DIED, SPAWN_FAILED: DEATH_* */
	int			status;		/* DIED: exit status or signal */
	uint64_t		ran_ns;		/* DIED: time it was up (0: never) */
};

struct life_out {
	enum peer_state		next;
	enum life_action	action;
	uint64_t		delay_ns;	/* next BACKOFF: the restart delay */
	uint32_t		recent;		/* after a death: deaths in the window */
};

/* The table: what (state, event) does. A death's next state is
 * PEER_NSTATES there: the policy decides it (lifecycle_step). */
struct life_rule {
	enum peer_state		next;
	enum life_action	action;
	int			listed;		/* written in the table (a test checks all are) */
};
const struct life_rule *lifecycle_rule(enum peer_state s, enum peer_event e);

/* One event: updates l (wishes, deaths, backoff) and says what to do. */
void	lifecycle_step(struct life *l, enum peer_state s, enum peer_event e,
		       const struct life_in *in, struct life_out *out);

/* Whether a guest in state s starts again once it is down (a start or
 * restart came while it was going): what hubctl is told. */
int	lifecycle_start_pending(const struct life *l, enum peer_state s);

/* Deaths in the window ending at now (those counted for max_deaths). */
uint32_t lifecycle_recent(struct life *l, const struct config_guest *c, uint64_t now_ns);

/* Forgets the deaths and the backoff (a restart by hand, a new guest). */
void	lifecycle_reset(struct life *l);
void	lifecycle_free(struct life *l);

const char *lifecycle_state_name(enum peer_state s);
const char *lifecycle_event_name(enum peer_event e);
const char *lifecycle_action_name(enum life_action a);
const char *lifecycle_death_name(int reason);

#endif
