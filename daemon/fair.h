/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* fair.c: each caller's share of a guest it calls with others */
#ifndef FAIR_H
#define FAIR_H

#include "daemon/hub.h"

/* Each guest's count of its calls in flight by caller: 0, or -1 when
 * out of memory (fair_free frees what was made). */
int		fair_init(struct hub *h);
void		fair_free(struct hub *h);
/* Call e was routed to q (in q's pending table), or is done with
 * (answered, or q went): counted, and a caller that waited for its
 * count at q to fall is read again once it has. */
void		fair_sent(struct hub *h, struct peer *q, struct pending *e);
void		fair_done(struct hub *h, struct peer *q, const struct pending *e);
/* After a call of p's was routed to q: p is read no more while it has
 * more than its share of q in flight (host_reading). */
void		fair_check(struct peer *p, const struct peer *q);

#endif
