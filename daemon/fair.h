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
 * (answered, or q went): counted. A call routed to q ends q's hold; a
 * caller held on its share of q is read again once under it. */
void		fair_sent(struct hub *h, struct peer *q, struct pending *e);
void		fair_done(struct hub *h, struct peer *q, const struct pending *e);
/* Call e's caller went (its answer goes nowhere now): counted for
 * nobody, so that it shrinks no other caller's share of q and the
 * caller's next instance starts with none in flight. */
#define FAIR_NOBODY	UINT32_MAX
void		fair_orphan(struct hub *h, struct peer *q, struct pending *e);
/* Whether the caller in slot (a peer id, 0: not a guest) has its share
 * of q's calls in flight, or more, while q has other callers: it is held
 * (route.c) until it has less. */
int		fair_over_share(const struct peer *q, uint32_t slot);

#endif
