/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* dispatch.c: serves the guests' rings, each message to the handler of
 * its type, and the work sources their turn. */
#ifndef DISPATCH_H
#define DISPATCH_H

#include <stdint.h>
#include "daemon/hub.h"

/* The dispatcher's own handlers (a Goodbye's words to the log). */
void		dispatch_init(struct hub *h);
/* fn handles every message of type HP_MSG_* (one per type). */
void		dispatch_on(struct hub *h, uint8_t type, dispatch_fn *fn);
/* A source of work of the host's own (streams it sends): pump runs each
 * round for every guest served, after its messages; ready keeps the loop
 * from sleeping. */
void		dispatch_source(struct hub *h, dispatch_work_fn *pump, dispatch_work_fn *ready);
/* One round over every guest served; how much work it found. */
int		dispatch_poll(struct hub *h);
/* The same for guest p alone, if it is served. */
int		dispatch_serve(struct hub *h, struct peer *p);
/* A guest that died while served (up, or stopping): what it sent before
 * it died (an answer, the Cancel of a call it gave up: r[shm.guest.detach])
 * is read and handled, before its calls in flight fail (host_detach). */
void		dispatch_last_words(struct hub *h, struct peer *p);
/* Before the loop blocks (host_sleep_prepare): nonzero when there is work
 * after all, in a ring, a backlog or a source. */
int		dispatch_sleep_prepare(struct hub *h);

#endif
