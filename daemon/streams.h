/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* streams.c: the channels the host receives on */
#ifndef STREAMS_H
#define STREAMS_H

#include <stdint.h>
#include "daemon/hub.h"

/* Whom hubd opens a channel in a guest's table for (hchan.caller): a
 * calling guest, by its peer id, or control clients, one caller per user. */
#define CALLER_CLIENT	(1ull << 32)	/* | the client's uid */
/* Whether caller holds channels_per_caller of p's channels already:
 * one caller may not take every id that others' streams need. */
int		streams_caller_full(struct hub *h, struct peer *p, uint64_t caller);
/* Opens a channel of p for a client call's chan<T> argument: its id, or
 * -errno. */
int64_t		streams_open_client(struct hub *h, struct peer *p,
				    const struct origin *o, uint64_t caller);
void		streams_unopen(struct peer *p, uint32_t id);
void		streams_data(struct hub *h, struct peer *p, struct hp_msg_in *m);
/* Data of len bytes on c from p: checked against what we granted (p's
 * violation if beyond) and counted. 0, or -1 once p was faulted. */
int		streams_take(struct hub *h, struct peer *p, struct hchan *c, uint32_t len);
/* Close (reset 0) or Reset of channel id by the guest. */
void		streams_end(struct hub *h, struct peer *p, uint32_t id, int reset);
/* The answer to request req_id came while the client stream it carries,
 * channel chan, is still open: the guest answered without closing it
 * (nothing sent, an error, or simply forgotten). The stream ends with the
 * answer. We receive, so we free the entry (r[shm.flow.channel-id-reuse]);
 * what the guest may still send on it is dropped (STALE_ENDED). */
void		streams_over(struct hub *h, struct peer *p, uint32_t req_id, uint32_t chan);
void		streams_consumed(struct hub *h, struct peer *p, struct ext_call *x,
				 uint32_t bytes);
void		streams_abandon(struct hub *h, struct peer *p, struct ext_call *x);
/* The one channel argument (a chan<T> or an rx<T>: type says which) of
 * a call p makes to meth, routed between guests: its id in *a, where its
 * varint starts (*at) and ends (*after). NULL, or why it cannot be taken
 * (more than one, or not p's own odd id, open, unused by hubd). */
struct method;
struct hp_request;
const char	*streams_chan_arg(struct hub *h, struct peer *p, const struct method *meth,
				  const struct hp_request *req, uint8_t type, uint64_t *a,
				  size_t *at, size_t *after);
/* Every channel of p closed and forgotten (attach, detach). */
void		streams_reset_all(struct hub *h, struct peer *p);

#endif
