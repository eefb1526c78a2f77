/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* upload.c: an rx<T> argument, a stream the caller sends and the callee
 * reads. The caller is a guest A (its channel a, odd, opened to send on;
 * hubd receives) or a control client (its lines); hubd opens b in the
 * callee B's table (even) and sends on it, credit carried end to end. */
#ifndef UPLOAD_H
#define UPLOAD_H

#include <stdint.h>
#include "daemon/hub.h"
#include "proto/msg.h"

/* p calls q's method meth, whose signature has an rx<T>: checks p's
 * channel, opens q's, sends q the Request with the id rewritten; or
 * answers o with Err User itself. */
void		upload_call(struct hub *h, struct peer *p, struct peer *q,
			    const struct method *meth, struct hp_msg_in *m,
			    const struct hp_request *req, const struct origin *o);
/* A control client's call of a method with an rx<T>: b opened in q's
 * table for it (its id, or -errno: -EUSERS when this caller holds
 * channels_per_caller of them); the client's items then go on it. */
int64_t		upload_client_open(struct hub *h, struct peer *q, uint64_t caller);
/* The call went to q as request req_id (0, or -ENOMEM: b is freed);
 * x's items go to b from now on. */
int		upload_client_start(struct hub *h, struct ext_call *x, struct peer *q,
				    uint32_t b, uint32_t req_id);
/* An item of the client's, len bytes of postcard: sent, or kept until
 * the callee grants credit for it (1: the client's next line waits, and
 * x->on_more says when it may come). 0, 1, or -1 when the stream is over
 * (the callee stopped it or answered): the item is dropped. */
int		upload_client_item(struct hub *h, struct ext_call *x, const uint8_t *item,
				   uint32_t len);
/* The client's end of its stream: Close, or Reset (given up, or gone). */
void		upload_client_end(struct hub *h, struct ext_call *x, int reset);
/* Data, Close or Reset on a channel whose hchan has an upload. */
void		upload_data(struct hub *h, struct peer *p, struct hp_msg_in *m);
void		upload_end(struct hub *h, struct peer *p, uint32_t id, int reset);
/* p answered request req_id: the upload it carries, if any, ends (the
 * caller told to stop if it still sends). */
void		upload_response(struct hub *h, struct peer *p, uint32_t req_id);
/* Sends what p's credit allows of the uploads it reads, passes its
 * grants on to their senders; how many messages. */
int		upload_pump(struct hub *h, struct peer *p);
int		upload_ready(struct hub *h, struct peer *p);
/* p is going: its uploads end at the other end with a Reset. */
void		upload_detach(struct hub *h, struct peer *p);
void		upload_free_all(struct hub *h);
/* Uploads under way, and the bytes hubd holds for them. */
void		upload_stats(struct hub *h, uint32_t *open, uint64_t *queued);

#endif
