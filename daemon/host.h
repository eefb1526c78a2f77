/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* host.c: the data path's transport: rings, sending, backlogs, sleep and
 * wake, liveness, attach and detach; the hooks the parts above register. */
#ifndef HOST_H
#define HOST_H

#include <stdint.h>
#include "daemon/hub.h"
#include "proto/endpoint.h"

int		host_attach(struct hub *h, struct peer *p);
void		host_goodbye(struct hub *h, struct peer *p, const char *reason);
void		host_detach(struct hub *h, struct peer *p);
/* What an attach or a detach of p means to the parts above: run in the
 * order registered, at attach once the transport is set up, at detach
 * before it lets go of p's backlog and slots. */
void		host_on_attach(struct hub *h, host_peer_fn *fn);
void		host_on_detach(struct hub *h, host_peer_fn *fn);
/* over checks a guest charged for a backlogged slot against its pool
 * quota (host_forward); room says whether hubd may put a slot for a
 * payload of bytes more into a guest's pool (its quota keeps room for
 * what it sends itself), else the payload waits in its backlog. */
void		host_on_charge(struct hub *h, host_quota_fn *over, host_quota_fn *room);
/* p's next message into m: 0, -EAGAIN for none, or another -errno once
 * p was faulted for the rule its ring broke. */
int		host_recv(struct hub *h, struct peer *p, struct hp_msg_in *m);
/* A received message done with (its slot freed). */
void		host_release(struct peer *p, struct hp_msg_in *m);
/* p's backlog into its ring, as far as there is room. */
void		host_flush_backlog(struct hub *h, struct peer *p);
/* The round's end for p: what it consumed and what we staged published. */
void		host_publish(struct hub *h, struct peer *p);
/* Announces sleep to every guest; nonzero when a ring or a backlog has
 * work after all. */
int		host_sleep_prepare(struct hub *h);
void		host_wake(struct hub *h);
/* More of the hub's processes awake than hubd's CPUs (hp_endpoint_crowded). */
int		host_crowded(const struct hub *h);
/* The hub's processes awake (self: hubd counts itself), written into each
 * guest's header when the count changed. */
void		host_awake_update(struct hub *h, int self);
void		host_check(struct hub *h, uint64_t now);
/* p broke rule (DEATH_VIOLATION) or stopped reading (DEATH_HUNG): it is
 * served no more, and the supervisor ends it (supervise_faults). The data
 * path never calls the supervisor itself. */
void		host_fault(struct hub *h, struct peer *p, int reason, const char *rule);
/* Whether p is attached and has broken no rule: the data path serves it.
 * Also while it stops (SIGTERM, stop_grace running), once it was up: what
 * it sends as it winds down (r[shm.guest.detach]: a handler's answer, the
 * Cancel of a call it gave up) reaches its peer; no new call is routed to
 * it (methods.c). */
static inline int
host_serving(const struct peer *p)
{
	return (p->state == PEER_UP || (p->state == PEER_STOPPING && p->up_ns != 0)) &&
	    p->fault == NULL;
}
/* Peer id if it is still instance epoch and served: NULL otherwise
 * (what a stream between two guests holds of each end). */
static inline struct peer *
host_instance(struct hub *h, uint32_t id, uint32_t epoch)
{
	struct peer *p = hub_peer(h, id);

	return p != NULL && p->epoch == epoch && host_serving(p) ? p : NULL;
}
/* Sends to a guest, or queues in order behind what already waits. */
void		host_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
			  uint64_t method_id, const uint8_t *payload, uint32_t len);
int		host_try_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
			      uint64_t method_id, const uint8_t *payload, uint32_t len);
int		host_reserve(struct hub *h, struct peer *p, uint32_t len,
			     struct hp_outbuf *ob);
/* Whether p's backlog is long enough to hold those who call it. */
int		host_backlogged(const struct peer *p);
/* Whether a message for p would wait in its backlog now (its ring is
 * full, or others wait before it). */
int		host_would_queue(struct peer *p);
/* Holds: why hubd reads a caller's ring no more for now, after its call
 * to a guest (route.c). What it wrote waits there: back-pressure on it
 * alone. */
#define HOLD_BACKLOG	1	/* the guest is backlogged (host.c) */
#define HOLD_SHARE	2	/* it has its share of the guest's calls in
				 * flight (fair.c) */
/* A hold this long ends: the guest held on answered none of the caller's
 * calls meanwhile (or never read its backlog), and is not held on again
 * until it answers one (hold_off). A guest that answers nobody cannot
 * stop its callers' calls to everyone else; one that reads none of its
 * ring is ended once its backlog is past the bound (host.c). */
#define HOLD_MAX_NS	(2 * HP_NS_PER_S)
/* Whether hubd reads p's ring: not while it is held. */
static inline int
host_reading(const struct peer *p)
{
	return p->held_by == 0;
}
/* p is held on q, which it called, for why (HOLD_*). */
void		host_hold(struct peer *p, struct peer *q, uint8_t why);
/* p's holds of why (HOLD_*) end: it is read again once none is left. */
static inline void
host_unhold(struct peer *p, uint8_t why)
{
	if ((p->held_by &= (uint8_t)~why) == 0)
		p->held_on = 0;
}
/* A received message's payload on to q as type/id/method_id: its
 * variable slot handed on without copying when q uses the pool it is in
 * (q's zone), else copied (host_send). -EMSGSIZE, nothing sent, when q cannot take it.
 * While its slot waits in q's backlog it counts against the pool quota
 * of the guest charged (a peer id, 0: none): q for an answer or an item,
 * the caller for a request. */
int		host_forward(struct hub *h, struct peer *q, struct hp_msg_in *m,
		    uint8_t type, uint32_t id, uint64_t method_id, uint32_t charged);
/* p's counters over all its instances, the live one's included. */
void		host_stats(const struct peer *p, struct peer_stats *s);
/* p's entry is being freed (a reload removed its guest, which is down):
 * its counters go into the hub's (h->gone) and start again from 0. */
void		host_retire(struct hub *h, struct peer *p);

#endif
