/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* chanq.c: a channel hubd sends on for a stream it carries between two
 * ends (relay.c: the callee's items to the caller; upload.c: the caller's
 * to the callee), with the items it holds until the receiver's credit and
 * ring take them. */
#ifndef CHANQ_H
#define CHANQ_H

#include <stdint.h>
#include "daemon/hub.h"

struct chq_item;

struct chanq {
	uint32_t	chan;		/* its id in the receiver's table */
	uint32_t	sent_total;	/* what hubd delivered on it */
	uint32_t	queued;		/* bytes held */
	struct chq_item	*head;
	struct chq_item	**tail;
};

void	chanq_init(struct chanq *q, uint32_t chan);
/* Every item held dropped. */
void	chanq_drop(struct chanq *q);
static inline int
chanq_empty(const struct chanq *q)
{
	return q->head == NULL;
}
/* What the receiver p's credit lets hubd send now; -1 once p was faulted
 * for credit it could not have given (r[shm.flow.wrap-rule]). */
int64_t	chanq_credit(struct hub *h, struct chanq *q, struct peer *p);
/* Item m straight on to p (its slot handed on as it is) when nothing is
 * held before it and p's credit and ring take it: 1; 0 when it must be
 * held (chanq_hold); -1 once p was faulted. */
int	chanq_forward(struct hub *h, struct chanq *q, struct peer *p, struct hp_msg_in *m);
/* A copy held, after the others: 0, or -ENOMEM. */
int	chanq_hold(struct chanq *q, const uint8_t *data, uint32_t len);
/* Sends what is held as far as p's credit and ring allow: how many
 * items; stops at a fault of p's (faulted). */
int	chanq_pump(struct hub *h, struct chanq *q, struct peer *p);
/* Whether chanq_pump would send something to p now. */
int	chanq_ready(struct chanq *q, struct peer *p);

#endif
