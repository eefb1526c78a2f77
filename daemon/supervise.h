/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* supervise.c: the lifecycle's actions: starting, death, recovery,
 * restart. Each call is an event of lifecycle.h. */
#ifndef SUPERVISE_H
#define SUPERVISE_H

#include "daemon/hub.h"

void		supervise_init(struct hub *h, struct peer *p);
void		supervise_start(struct hub *h, struct peer *p);
/* fn runs whenever a reload's removal frees a peer entry (a guest may
 * wait for one: reload_start_waiting). */
void		supervise_on_free(struct hub *h, void (*fn)(struct hub *h));
void		supervise_stop(struct hub *h, struct peer *p);
/* The entry of a guest a reload removed, once down, is free: its methods,
 * its share of its zone's pool, its settings and its kept output go (its
 * counters stay in the hub's). Its uid is the caller's to release. */
void		supervise_forget(struct hub *h, struct peer *p);
void		supervise_restart(struct hub *h, struct peer *p);
/* Every tick: guests that attached without ringing. */
void		supervise_tick(struct hub *h);
/* Acts on the faults the data path reported (host_fault): DEATH_VIOLATION
 * gets a Goodbye, then SIGKILL after goodbye_grace; DEATH_HUNG SIGKILL now. */
void		supervise_faults(struct hub *h);
void		supervise_stop_all(struct hub *h);
int		supervise_all_down(struct hub *h);
/* Backing off: ns until it starts again (at least 1); otherwise 0. */
uint64_t	supervise_starts_in(struct hub *h, struct peer *p);
/* SIGKILL to every guest's process group (hubd exiting). */
void		supervise_kill_groups(struct hub *h);

#endif
