/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* relay.c: a guest's chan<T> argument to another guest's method. The
 * caller A passes a channel it opened to receive on (odd id a); hubd
 * opens one in the callee B's table (even id b), receives B's items on b
 * and sends them on to A on a, credit carried end to end. */
#ifndef RELAY_H
#define RELAY_H

#include <stdint.h>
#include "daemon/hub.h"
#include "proto/msg.h"

/* p calls q's method meth, whose signature has a chan<T>: checks p's
 * channel, opens q's, sends q the Request with the id rewritten; or
 * answers o with Err User itself. */
void		relay_call(struct hub *h, struct peer *p, struct peer *q,
			   const struct method *meth, struct hp_msg_in *m,
			   const struct hp_request *req, const struct origin *o);
/* The handlers of Data, and of Close and Reset, on any channel: a
 * channel whose hchan has an upload is upload.c's, one with a relay
 * relay.c's, any other streams.c's (streams_data, streams_end). */
void		relay_data(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		relay_end(struct hub *h, struct peer *p, struct hp_msg_in *m);
/* p answered request req_id (o: its origin; ok: the answer decodes):
 * the relay it carries ends. 1 when the answer is held until the
 * caller has every item and the end of its channel (relay.c sends it
 * then), 0 when route_response may pass it on now. */
int		relay_response(struct hub *h, struct peer *p, uint32_t req_id,
			       const struct origin *o, const struct hp_msg_in *m, int ok);
/* Sends what p's credit allows on the streams it receives from other
 * guests, passes its grants on; how many messages. */
int		relay_pump(struct hub *h, struct peer *p);
/* Whether relay_pump would do something for p now. */
int		relay_ready(struct hub *h, struct peer *p);
/* p is going (before answer_detach): its streams end at the other guest
 * with a Reset; nothing of p's is left. */
void		relay_detach(struct hub *h, struct peer *p);
void		relay_free_all(struct hub *h);
/* Streams between guests now, and the bytes hubd holds for them. */
void		relay_stats(struct hub *h, uint32_t *open, uint64_t *queued);

#endif
