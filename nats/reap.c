/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Messages the loop is done with, destroyed many at a time.
 * natsMsg_Destroy gives a message to libnats's garbage-collector thread
 * and wakes that thread whenever it sleeps: one at a time, that is a
 * wake and two context switches per message, received or built, and
 * the loop contending for the collector's mutex. Kept here until
 * BR_REAP_MAX of them or BR_REAP_BYTES of their data, or until the
 * loop has nothing to do, they cost one wake per batch. */
#include "nats/hubnats.h"

#define BR_REAP_BYTES	(1u << 20)

void
br_msg_done(struct bridge *b, natsMsg *m)
{
	if (m == NULL)
		return;
	b->reap[b->nreap++] = m;
	b->reap_bytes += (uint32_t)natsMsg_GetDataLength(m);
	if (b->nreap == BR_REAP_MAX || b->reap_bytes >= BR_REAP_BYTES)
		br_msg_reap(b);
}

void
br_msg_reap(struct bridge *b)
{
	for (uint32_t i = 0; i < b->nreap; i++)
		natsMsg_Destroy(b->reap[i]);
	b->nreap = 0;
	b->reap_bytes = 0;
}
