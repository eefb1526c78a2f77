/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* answer.c: the calls hubd makes to guests, and the answers to the
 * origin of every call: a calling guest, a control client, or nobody. */
#ifndef ANSWER_H
#define ANSWER_H

#include <stddef.h>
#include <stdint.h>
#include "daemon/hub.h"

/* p's table of the calls it was made, empty (init) or freed. */
void		answer_init(struct peer *p);
void		answer_free(struct peer *p);
/* A Request to guest q on behalf of o: payload (metadata and arguments),
 * or a guest's message m whose slot is handed on as it is (m NULL:
 * payload copied); the host's request id goes to *idp when not NULL.
 * 0 or -ENOMEM. */
int		answer_call(struct hub *h, struct peer *q, uint64_t method_id,
			    const uint8_t *payload, uint32_t len, const struct origin *o,
			    uint32_t *idp, struct hp_msg_in *m);
/* Ends q's pending call e, answered: out of q's table and its caller's
 * index. */
void		answer_done(struct hub *h, struct peer *q, struct pending *e);
/* q's pending call that guest p made as its request req_id, or NULL
 * (answered, never made, or made by an earlier instance of p). */
struct pending	*answer_find_call(struct hub *h, const struct peer *p, uint32_t req_id,
				  struct peer **q);
/* The calls of control clients of caller (CALLER_CLIENT | uid) that
 * guests hold: theirs to answer, whether or not the client is still
 * there (Cancel is advisory). */
uint32_t	answer_client_calls(struct hub *h, uint64_t caller);
/* Why a Request of len bytes (envelope and arguments) is refused for
 * guest q, on its fixed pool: the size and the limit, into why. */
void		answer_call_too_large(char *why, size_t cap, const struct peer *q, size_t len);
/* A complete Response payload to whoever waits for it: from a guest's
 * message m (handed on without copying where it can), or copied (m
 * NULL). */
void		answer_send(struct hub *h, const struct origin *o, const uint8_t *payload,
			    size_t len, struct hp_msg_in *m);
/* Answers with an error the host makes itself, explained in metadata. */
void		answer_error(struct hub *h, const struct origin *o, uint32_t code,
			     const char *why);
/* Answers a call whose deadline has passed before it started, as a
 * callee that timed out does (error.kind "timeout": hubd did not make
 * the deadline, so no hub.error). */
#define ANSWER_LATE_TEXT	"the deadline passed before the call started"
void		answer_late(struct hub *h, const struct origin *o);
void		answer_ok(struct hub *h, const struct origin *o,
			  const uint8_t *value, size_t len);
/* Who made a call, as handlers (hub.caller) and hubctl calls name it:
 * the calling guest's name, "client:UID" for a control client, "hub" for
 * hubd's own, "(gone)" when nobody waits any more. Into buf (n bytes:
 * ORIGIN_NAME_MAX fits every one); returns buf. */
#define ORIGIN_NAME_MAX	64
const char	*origin_name(struct hub *h, const struct origin *o, char *buf, size_t n);
/* Fails every call that involves p (r[shm.crash.recovery] 2). */
void		answer_detach(struct hub *h, struct peer *p);

#endif
