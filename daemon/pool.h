/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* pool.c: the shared variable pool's host side. */
#ifndef POOL_H
#define POOL_H

#include <stdint.h>
#include "daemon/hub.h"

void		pool_start(struct hub *h);
void		pool_stop(struct hub *h);
/* The sweeper's period changed (reload). */
void		pool_retime(struct hub *h);
void		pool_grow_requested(struct hub *h);
/* p's zone (config: zone, or its own), made if it is the first: 0, or
 * -errno with *why. A guest out of the pool (shared_pool = no, or no
 * [pool]) has none. */
int		pool_join(struct hub *h, struct peer *p, const char **why);
/* p out of its zone, the zone dropped with its last member. */
void		pool_leave(struct hub *h, struct peer *p);
/* Every zone dropped (hubd's exit). */
void		pool_free(struct hub *h);
/* A dead guest's slots in its zone's pool back. */
void		pool_reclaim(struct peer *p);
/* Whether p, holding slots and bytes more, is over its share of the
 * shared pool (pool_quota): then it is faulted (host_fault) and 1. What
 * it holds is what the last sweep counted as its (taken, sent, or handed
 * to it and not freed: in its rings too), plus what waits in backlogs on
 * its behalf (host_forward). */
int		pool_over_quota(struct hub *h, struct peer *p, uint32_t slots,
				uint64_t bytes);
/* Whether hubd may put slots for bytes more of calls to p into its pool,
 * by that count and what it put there since: its quota keeps room for as
 * much again and a spare slot, for what p sends itself (its answers). A
 * guest alone in its zone, or holding nothing, always has room. */
int		pool_room(struct hub *h, struct peer *p, uint32_t slots, uint64_t bytes);
/* What p holds of the shared pool by that count, and its quota. */
struct pool_use {
	uint32_t	slots, max_slots;
	uint64_t	bytes, max_bytes;
	uint64_t	mem, max_mem;	/* what waits in hubd's memory for it */
};
void		pool_usage(struct hub *h, struct peer *p, struct pool_use *u);
/* Which of u's bounds it is over, and by what, into buf: "it holds 301
 * slots, ..." or "... wait in hubd's memory ...". */
void		pool_use_text(const struct pool_use *u, char *buf, size_t n);
/* p's count from the last sweep forgotten (a new instance). */
void		pool_forget(struct hub *h, struct peer *p);
int		pool_live(void *h, uint32_t owner);
/* validate() twice: each problem both passes found goes to report, its
 * class is marked for the sweeper to rebuild; returns how many. */
uint32_t	pool_validate(struct hub *h, void (*report)(void *arg, const char *problem),
			      void *arg);

#endif
