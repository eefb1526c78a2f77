/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Channels between guests. A guest A calling guest B's method with a
 * chan<T> argument passes a channel it opened to receive on (odd id a in
 * A's table); hubd opens one of its own in B's table (even id b), gives
 * B that id in the Request, and carries what B sends on b on to A on a.
 * hubd is the receiver of b (it checks B's credit against its own count
 * and frees b) and the sender on a (its own sent_total against A's
 * grants, r[shm.flow.remaining-credit]).
 *
 * Credit is carried end to end: B is granted back on b only what A has
 * granted on a, and never more than hubd has delivered to A. B's window
 * is then A's window less what waits in hubd's queue, as if B sent to A
 * directly: the queue never holds more than initial_credit bytes, and a
 * slow receiver slows the sender.
 *
 * Ends: B's Close or Reset on b goes to A on a after the queued items;
 * A's Close or Reset on a ("stop"), or A's death, empties the queue, is
 * answered with a Reset on a (nothing more follows), and B is told with a
 * Reset on b and granted nothing more: what it sent meanwhile is dropped
 * until B ends b or answers. B's Response reaches A only after the queue and the end
 * of a: an answer that comes while b is open ends b (freed, as
 * streams_over does) and a (Close, after the queue). Data, Close and
 * Reset on any channel come here first; one without a relay is streams.c's.
 *
 * Over 600 lines, one job: a relay's state (both ends, the queue, the
 * credit passed on, B's answer held) is private to this file, and every
 * part (the call that makes a relay, the messages on its channels, its
 * ends, a guest's detach) changes it through the same helpers; split,
 * struct relay and those helpers would be shared across files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/answer.h"
#include "daemon/chanq.h"
#include "daemon/host.h"
#include "daemon/log.h"
#include "daemon/relay.h"
#include "daemon/streams.h"
#include "daemon/upload.h"
#include "proto/channel.h"

struct relay {
	struct relay	*next;
	struct relay	**prevp;
	/* the receiving end: the caller's channel a, hubd sends on it and
	 * holds what A has no credit for yet */
	uint32_t	a_peer, a_epoch;
	struct chanq	a;
	/* the sending end: the callee's channel, hubd receives on it */
	uint32_t	b_peer, b_epoch, b_chan;
	uint32_t	b_req;		/* the Request to B (its pending entry) */
	uint32_t	a_seen;		/* A's granted_total as last passed on */
	uint8_t		a_live;		/* a is hubd's to send on */
	uint8_t		a_end;		/* Close or Reset for a once the queue is empty */
	uint8_t		b_live;		/* b is open in B's table, hubd receives */
	uint8_t		b_drain;	/* B was told to stop: its items are dropped */
	uint8_t		answered;	/* B's Response came */
	/* B's answer, held until A has the queue and the end of a */
	struct origin	ro;
	uint8_t		*resp;
	uint32_t	resp_len;
	uint8_t		has_resp;
};

/* n more bytes of credit to B on b (r[shm.flow.ordering.receiver]). */
static void
grant_b(struct hub *h, struct relay *r, uint32_t n)
{
	struct peer *b = host_instance(h, r->b_peer, r->b_epoch);

	if (b == NULL || !r->b_live || n == 0)
		return;
	hp_chan_grant(&b->view.chans[r->b_chan], n);
	b->chans[r->b_chan].granted += n;
	hp_endpoint_notify_credit(&b->ep, &b->view.chans[r->b_chan].granted_total);
}

/* b's entry freed: hubd receives on it (r[shm.flow.channel-id-reuse]).
 * stale: what late messages from B on it mean (streams.c), STALE_NO when
 * B ended it itself. */
static void
free_b(struct hub *h, struct relay *r, uint8_t stale)
{
	struct peer *b = hub_peer(h, r->b_peer);

	if (!r->b_live)
		return;
	r->b_live = 0;
	if (b == NULL || b->epoch != r->b_epoch)
		return;		/* its table was reset with it */
	b->chans[r->b_chan] = (struct hchan){ .stale = stale };
	hp_chan_free(&b->view.chans[r->b_chan]);
}

/* B stops: told once with a Reset on b (r[shm.flow.reset]) and granted
 * nothing more, so that it stops within its window even if it never looks
 * at its ring; what it sent meanwhile is dropped. */
static void
stop_b(struct hub *h, struct relay *r)
{
	struct peer *b = host_instance(h, r->b_peer, r->b_epoch);

	if (!r->b_live || r->b_drain)
		return;
	r->b_drain = 1;
	if (b != NULL)
		host_send(h, b, HP_MSG_RESET, r->b_chan, 0, NULL, 0);
}

/* a is over: type (Close or Reset) to A unless A is gone, the queue
 * dropped, and then B's answer if it waited for this. stale: STALE_SENT
 * when A may still send its own stop crossing ours, STALE_NO when ours
 * answers A's. */
static void
end_a(struct hub *h, struct relay *r, uint8_t type, uint8_t stale)
{
	struct peer *a = hub_peer(h, r->a_peer);

	if (!r->a_live)
		return;
	r->a_live = 0;
	chanq_drop(&r->a);
	/* still the same instance (relay_detach ends a before A's table
	 * is reset): our side of a goes, whether A is served or not */
	if (a != NULL && a->epoch == r->a_epoch) {
		a->chans[r->a.chan] = (struct hchan){ .stale = stale };
		a->relays--;
		host_send(h, a, type, r->a.chan, 0, NULL, 0);	/* if served */
	}
	if (r->has_resp) {
		r->has_resp = 0;
		answer_send(h, &r->ro, r->resp, r->resp_len, NULL);
		free(r->resp);
		r->resp = NULL;
	}
}

/* Forgets r once neither end is open and nothing waits. */
static int
maybe_free(struct relay *r)
{
	if (r->a_live || r->b_live || r->has_resp)
		return 0;
	chanq_drop(&r->a);
	if ((*r->prevp = r->next) != NULL)
		r->next->prevp = r->prevp;
	free(r);
	return 1;
}

/* A's new grants on a, passed on to B on b: never more than hubd has
 * delivered to A, so hubd's queue stays within B's window. */
static void
pass_grants(struct hub *h, struct relay *r, struct peer *a)
{
	/* r[shm.flow.ordering.sender]: acquire, pairs with A's grant */
	uint32_t g = hp_load_acquire_u32(&a->view.chans[r->a.chan].granted_total);
	uint32_t d = g - r->a_seen, room;
	struct peer *b;

	if ((int32_t)d <= 0)
		return;		/* nothing new (or corrupt: the credit check says so) */
	r->a_seen = g;
	if (!r->b_live || r->b_drain || (b = host_instance(h, r->b_peer, r->b_epoch)) == NULL)
		return;
	room = r->a.sent_total - (b->chans[r->b_chan].granted - h->conf.params.initial_credit);
	grant_b(h, r, d < room ? d : room);
}

/* Sends what A's credit and ring allow, then a's end once the queue is
 * empty. How many messages. */
static int
pump_one(struct hub *h, struct relay *r, struct peer *a)
{
	int n;

	pass_grants(h, r, a);
	n = chanq_pump(h, &r->a, a);
	if (chanq_empty(&r->a) && r->a_end != 0)
		end_a(h, r, r->a_end, STALE_SENT);
	return n;
}

/* The stream cannot go on (an item A cannot take, no memory): both ends
 * stop, with Resets. */
static void
broken(struct hub *h, struct relay *r, const char *why)
{
	struct peer *a = hub_peer(h, r->a_peer);

	log_warnx("guest %s: channel %u from another guest: %s",
		  a != NULL && a->conf != NULL ? a->conf->name : "?", r->a.chan, why);
	end_a(h, r, HP_MSG_RESET, STALE_SENT);
	stop_b(h, r);
}

/* -- the call ------------------------------------------------------------ */

static void
refuse(struct hub *h, const struct origin *o, const char *why)
{
	answer_error(h, o, HP_ERR_USER, why);
}

/* B's end b, opened in q's table for caller p as for a client's call
 * (r[shm.flow.channel-activate]); -1 with why in buf. */
static int64_t
open_b(struct hub *h, struct peer *p, struct peer *q, char *why, size_t len)
{
	const struct hp_params *prm = &h->conf.params;
	int64_t b;

	if (streams_caller_full(h, q, p->id)) {
		snprintf(why, len, "no channel available in guest %s: this caller "
			 "holds channels_per_caller of its streams already", q->conf->name);
		return -1;
	}
	if ((b = hp_chan_open(q->view.chans, prm->max_channels, HP_SIDE_HOST,
			      prm->initial_credit, &q->chan_cursor)) < 0) {
		snprintf(why, len, "no channel available in guest %s", q->conf->name);
		return -1;
	}
	return b;
}

/* The relay r made: its ends' channels in A's and B's tables, and r in
 * the hub's list. */
static void
link_relay(struct hub *h, struct relay *r, struct peer *p, struct peer *q,
	   const struct origin *o, const struct origin *qo, uint32_t req_id)
{
	const struct hp_params *prm = &h->conf.params;

	r->b_req = req_id;
	q->chans[r->b_chan] = (struct hchan){ .open = 1, .granted = prm->initial_credit,
					      .o = *qo, .relay = r, .caller = p->id };
	q->chans[r->b_chan].o.req_id = req_id;
	p->chans[r->a.chan] = (struct hchan){ .open = 1, .o = *o, .relay = r };
	p->relays++;
	if ((r->next = h->relays) != NULL)
		r->next->prevp = &r->next;
	h->relays = r;
	r->prevp = &h->relays;
}

void
relay_call(struct hub *h, struct peer *p, struct peer *q, const struct method *meth,
	   struct hp_msg_in *m, const struct hp_request *req, const struct origin *o)
{
	struct hp_pc_enc e;
	struct origin qo = *o;
	struct relay *r;
	size_t at = 0, after = 0, meta_len = (size_t)(req->args - m->payload);
	uint64_t a = 0;
	int64_t b;
	uint8_t *buf;
	uint32_t req_id;
	const char *bad;
	char why[128];

	if ((bad = streams_chan_arg(h, p, meth, req, HP_T_CHAN, &a, &at, &after)) != NULL) {
		refuse(h, o, bad);
		return;
	}
	if ((b = open_b(h, p, q, why, sizeof(why))) < 0) {
		refuse(h, o, why);
		return;
	}
	/* the Request with a rewritten as b: its varint may change length */
	if ((buf = malloc(m->len + HP_PC_VARINT_MAX_U64)) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL) {
		free(buf);
		hp_chan_free(&q->view.chans[b]);
		refuse(h, o, "out of memory");
		return;
	}
	hp_pc_enc_init(&e, buf, m->len + HP_PC_VARINT_MAX_U64);
	hp_pc_put_raw(&e, m->payload, meta_len);
	hp_pc_put_raw(&e, req->args, at);
	hp_pc_put_u64(&e, (uint64_t)b);
	hp_pc_put_raw(&e, req->args + after, req->args_len - after);
	if (e.err != 0 || e.len > q->ep.lim.max_payload_size) {
		free(buf);
		free(r);
		hp_chan_free(&q->view.chans[b]);
		answer_call_too_large(why, sizeof(why), q, e.err != 0 ? m->len : e.len);
		refuse(h, o, why);
		return;
	}
	*r = (struct relay){
		.a_peer = p->id, .a_epoch = p->epoch,
		.b_peer = q->id, .b_epoch = q->epoch, .b_chan = (uint32_t)b,
		/* acquire: pairs with A's release add in hp_chan_grant */
		.a_seen = hp_load_acquire_u32(&p->view.chans[a].granted_total),
		.a_live = 1, .b_live = 1,
	};
	chanq_init(&r->a, (uint32_t)a);
	/* hubd receives on b for the call: its answer ends it (streams_over
	 * leaves it to us, route_response calls relay_response) */
	qo.chan = (uint32_t)b;
	if (answer_call(h, q, m->desc.method_id, buf, (uint32_t)e.len, &qo, &req_id, NULL) != 0) {
		free(buf);
		free(r);
		hp_chan_free(&q->view.chans[b]);
		refuse(h, o, "out of memory");
		return;
	}
	free(buf);
	link_relay(h, r, p, q, o, &qo, req_id);
}

/* -- messages on the relay's channels ------------------------------------ */

/* Data on any channel of p's: an upload's to upload.c, a relayed one's
 * here, the others' to streams.c. */
void
relay_data(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct hchan *c = &p->chans[id];
	struct relay *r = c->relay;
	struct peer *a;

	if (c->upload != NULL) {
		upload_data(h, p, m);
		return;
	}
	if (r == NULL) {
		streams_data(h, p, m);
		return;
	}
	if (p->id != r->b_peer || id != r->b_chan) {
		/* A's own channel, on which hubd sends: A may not */
		host_fault(h, p, DEATH_VIOLATION, "shm.flow.channel-table-indexing");
		return;
	}
	if (streams_take(h, p, c, m->len) != 0)
		return;
	if (!r->a_live || r->b_drain)
		return;		/* nobody takes it: dropped, no credit back */
	a = host_instance(h, r->a_peer, r->a_epoch);
	if (a != NULL && m->len > a->ep.lim.max_payload_size) {
		broken(h, r, "an item is larger than the receiver takes");
		return;
	}
	/* straight on when nothing waits before it and A has credit (A's
	 * grants read only then: with items held, the pump passes them on) */
	if (a != NULL && chanq_empty(&r->a)) {
		pass_grants(h, r, a);
		if (chanq_forward(h, &r->a, a, m) != 0)
			return;		/* sent, or A faulted */
	}
	if (chanq_hold(&r->a, m->payload, m->len) != 0)
		broken(h, r, "out of memory");
}

/* Close or Reset of any channel of p's: an upload's to upload.c, a
 * relayed one's here, the others' to streams.c. */
void
relay_end(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	int reset = m->desc.msg_type == HP_MSG_RESET;
	struct relay *r = p->chans[id].relay;
	struct peer *a;

	if (p->chans[id].upload != NULL) {
		upload_end(h, p, id, reset);
		return;
	}
	if (r == NULL) {
		streams_end(h, p, id, reset);
		return;
	}
	if (p->id == r->b_peer && id == r->b_chan) {
		/* B is done: A gets the end after the queue */
		free_b(h, r, STALE_NO);
		if (r->a_live && r->a_end == 0) {
			r->a_end = reset ? HP_MSG_RESET : HP_MSG_CLOSE;
			if ((a = host_instance(h, r->a_peer, r->a_epoch)) != NULL)
				pump_one(h, r, a);
		}
		maybe_free(r);
		return;
	}
	/* A, the receiver, says stop: r[shm.flow.reset]. Nothing more
	 * follows our Reset; B is told and drained. */
	end_a(h, r, HP_MSG_RESET, STALE_NO);
	stop_b(h, r);
	maybe_free(r);
}

int
relay_response(struct hub *h, struct peer *p, uint32_t req_id, const struct origin *o,
	       const struct hp_msg_in *m, int ok)
{
	struct relay *r;
	struct peer *a;

	for (r = h->relays; r != NULL; r = r->next)
		if (r->b_peer == p->id && r->b_epoch == p->epoch && r->b_req == req_id &&
		    !r->answered)
			break;
	if (r == NULL)
		return 0;
	r->answered = 1;
	/* answered while b is open: b ends with the answer, a after the
	 * queue (or at once, the answer being garbage) */
	free_b(h, r, r->b_drain ? STALE_RESET : STALE_ENDED);
	if (!ok)
		end_a(h, r, HP_MSG_RESET, STALE_SENT);
	if (r->a_live && r->a_end == 0)
		r->a_end = HP_MSG_CLOSE;
	if (r->a_live && (a = host_instance(h, r->a_peer, r->a_epoch)) != NULL)
		pump_one(h, r, a);
	if (!r->a_live) {
		maybe_free(r);
		return 0;
	}
	/* A gets it once the queue and the end of a are out */
	if ((r->resp = malloc(m->len > 0 ? m->len : 1)) == NULL) {
		end_a(h, r, HP_MSG_RESET, STALE_SENT);
		maybe_free(r);
		return 0;
	}
	memcpy(r->resp, m->payload, m->len);
	r->resp_len = m->len;
	r->ro = *o;
	r->has_resp = 1;
	return 1;
}

/* -- the data path's turn ------------------------------------------------ */

int
relay_pump(struct hub *h, struct peer *p)
{
	struct relay *r, *next;
	int n = 0;

	if (p->relays == 0)
		return 0;	/* it receives no stream from another guest */
	for (r = h->relays; r != NULL && host_serving(p); r = next) {
		next = r->next;
		if (!r->a_live || r->a_peer != p->id || r->a_epoch != p->epoch)
			continue;
		n += pump_one(h, r, p);
		maybe_free(r);
	}
	return n;
}

int
relay_ready(struct hub *h, struct peer *p)
{
	if (p->relays == 0)
		return 0;
	for (struct relay *r = h->relays; r != NULL; r = r->next) {
		if (!r->a_live || r->a_peer != p->id || r->a_epoch != p->epoch)
			continue;
		/* a grant of A's to pass on to B (acquire: pairs with A's
		 * release add in hp_chan_grant) */
		if (r->b_live && !r->b_drain &&
		    (int32_t)(hp_load_acquire_u32(&p->view.chans[r->a.chan].granted_total) -
			      r->a_seen) > 0)
			return 1;	/* not != : a total A moved back is no work */
		if (chanq_empty(&r->a) ? r->a_end != 0 : chanq_ready(&r->a, p))
			return 1;
	}
	return 0;
}

/* -- death and detach ---------------------------------------------------- */

void
relay_detach(struct hub *h, struct peer *p)
{
	struct relay *r, *next;

	for (r = h->relays; r != NULL; r = next) {
		next = r->next;
		if (r->a_live && r->a_peer == p->id) {
			/* the receiver is gone: its table is reset with it;
			 * B stops and is drained */
			r->a_live = 0;
			chanq_drop(&r->a);
			if (r->has_resp) {
				r->has_resp = 0;
				free(r->resp);
				r->resp = NULL;
			}
			if (r->b_peer != p->id)
				stop_b(h, r);
		}
		if (r->b_live && r->b_peer == p->id) {
			/* the sender is gone: A gets a Reset (before the
			 * call's error, answer_detach) */
			r->b_live = 0;
			end_a(h, r, HP_MSG_RESET, STALE_SENT);
		}
		maybe_free(r);
	}
	p->relays = 0;
}

void
relay_free_all(struct hub *h)
{
	struct relay *r;

	while ((r = h->relays) != NULL) {
		h->relays = r->next;
		chanq_drop(&r->a);
		free(r->resp);
		free(r);
	}
}

void
relay_stats(struct hub *h, uint32_t *open, uint64_t *queued)
{
	*open = 0;
	*queued = 0;
	for (struct relay *r = h->relays; r != NULL; r = r->next) {
		(*open)++;
		*queued += r->a.queued;
	}
}
