/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct lanes between guests (lanes.c, proto/lane.h): hubd offers them,
 * closes them when a side goes, hears the guests' reports, and shows
 * them; it never carries their traffic. */
#ifndef LANES_H
#define LANES_H

#include <json-c/json.h>

#include "daemon/hub.h"
#include "proto/lane.h"

#define LANES_HISTORY	16	/* lanes closed for a broken rule, kept to show */
#define LANES_GONE	32	/* lanes dropped, kept for a report on its way */
#define LANES_BANNED	64	/* pairs kept off lanes ([hub] lane_ban) */

/* Which lane, between which instances: side A is peer[0], side B
 * peer[1]. */
struct lane_ends {
	uint32_t	id;
	uint32_t	peer[2];
	uint32_t	epoch[2];
};

/* One open lane. */
struct lane {
	struct lane		*next;
	struct lane_ends	e;
	uint64_t		opened_ns;	/* CLOCK_MONOTONIC */
	struct hp_lane_map	map;		/* hubd's mapping: the figures */
	uint64_t		*routes[2];	/* methods side s was told to call over it */
	uint32_t		nroutes[2];
};

/* A lane that closed because a side said the other broke a rule, or
 * could not take it: the pair gets no lane again until either
 * restarts. */
struct lane_record {
	uint64_t	when_ns;	/* CLOCK_REALTIME */
	struct lane_ends e;
	char		name[2][CONFIG_GUEST_NAME_MAX + 1];
	uint32_t	reporter;	/* 0: side A said so, 1: side B */
	int		violation;	/* a broken rule (shown), or a set-up failure */
	char		reason[HP_LANE_REASON_MAX + 1];
};

/* Two guests, by name (whatever their instances), that get no lane
 * until until_ns (CLOCK_MONOTONIC): one of their lanes closed over a
 * broken rule. */
struct lane_ban {
	char		name[2][CONFIG_GUEST_NAME_MAX + 1];
	uint64_t	until_ns;	/* 0: a free entry */
};

/* Registers the Lane handler and the detach hook; -ENOMEM. */
int	lanes_init(struct hub *h);
/* Caller p called a method of callee q through the hub: offer them a
 * lane and tell p to call m over it, as the policy allows, unless
 * watched(h, name) says a monitor watches it (NULL: none does); with a
 * new route, q's other methods with chan<T> or rx<T> arguments too. */
void	lanes_offer(struct hub *h, struct peer *p, struct peer *q, const struct method *m,
		    int (*watched)(struct hub *h, const char *method));
/* q registered m: a method with chan<T> or rx<T> arguments is routed at
 * once for the callers that have routes to q over a lane, as
 * lanes_offer does for those q had then (not one watched(h, name)). */
void	lanes_method_added(struct hub *h, struct peer *q, const struct method *m,
			   int (*watched)(struct hub *h, const char *method));
/* Takes back the routes of the methods watched(h, name) says yes to
 * (HP_LANE_UNROUTE): their calls come through hubd, where a monitor sees
 * them (monitor.c); lanes_offer routes them again once it says no. */
void	lanes_withdraw(struct hub *h, int (*watched)(struct hub *h, const char *method));
/* Whether p and q have a lane open. */
int	lanes_between(struct hub *h, const struct peer *p, const struct peer *q);
/* Adds p's lane traffic (open lanes, and those closed before) to s. */
void	lanes_stats(struct hub *h, const struct peer *p, struct peer_stats *s);
/* Every open lane and the records, for hubctl lanes. */
json_object *lanes_json(struct hub *h);
/* Closes every lane (hubd stopping). */
void	lanes_free(struct hub *h);

#endif
