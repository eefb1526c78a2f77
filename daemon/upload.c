/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Uploads: an rx<T> argument, a stream the caller sends and the callee
 * reads (doc/protocol.md, "Uploads"). The caller is a guest A, which
 * opened channel a (odd, in A's table) to send on and passes its id, or
 * a control client, whose lines are the items (cmd_call.c). hubd opens b
 * in the callee B's table (even), gives B that id in the Request, and
 * carries the items on:
 *
 * - hubd is a's receiver: A's Data is checked against hubd's own count
 *   of what it granted (r[shm.flow.remaining-credit]); hubd frees a.
 * - hubd is b's sender: its own sent_total against B's granted_total
 *   (r[shm.flow.wrap-rule]); b is activated with no credit, and B grants
 *   its window when it starts reading, so nothing reaches B before it
 *   reads.
 * - Credit end to end: A is granted back on a only what B grants on b,
 *   and never more than hubd has delivered to B, so hubd holds at most a
 *   window per upload (A's items that B has no credit for yet). A
 *   client's next line is read only once its last item went out.
 *
 * Ends: A's Close on a reaches B as a Close on b after the queue; A's
 * Reset, or A going, as a Reset at once. B's stop (Close or Reset on b,
 * r[shm.flow.reset]) is answered with a Reset on b, and A is told to stop
 * with a Reset on a. B's answer ends the upload: b gets a Reset if it is
 * still open, and A a Reset on a, before the answer. A channel hubd told
 * to stop is freed at once; what A still sends on it is dropped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/answer.h"
#include "daemon/chanq.h"
#include "daemon/host.h"
#include "daemon/log.h"
#include "daemon/streams.h"
#include "daemon/upload.h"
#include "proto/channel.h"

struct upload {
	struct upload	*next;
	struct upload	**prevp;
	/* the sending end: A's channel a, hubd receives; or a client's */
	uint32_t	a_peer, a_epoch, a_chan;
	struct ext_call	*x;		/* the client, or NULL */
	/* the receiving end: B's channel b, hubd sends on it and holds what
	 * B has no credit for yet */
	uint32_t	b_peer, b_epoch;
	struct chanq	b;
	uint32_t	b_req;		/* the Request to B (its pending entry) */
	uint32_t	b_seen;		/* B's granted_total as last passed on */
	uint32_t	returned;	/* credit given back to A on a */
	uint8_t		a_live;		/* hubd receives on a (or the client sends) */
	uint8_t		b_live;		/* b is hubd's to send on */
	uint8_t		b_end;		/* Close or Reset for b once the queue is out */
	uint8_t		waiting;	/* the client's next line waits for the queue */
};

/* The client sends no more into u: what it sends is dropped, and a
 * line that waited for credit is read now. */
static void
release_x(struct upload *u)
{
	struct ext_call *x = u->x;

	if (x == NULL)
		return;
	u->x = NULL;
	x->up = NULL;
	if (u->waiting) {
		u->waiting = 0;
		x->on_more(x);
	}
}

static void
unlink_upload(struct upload *u)
{
	if ((*u->prevp = u->next) != NULL)
		u->next->prevp = u->prevp;
	chanq_drop(&u->b);
	release_x(u);
	free(u);
}

static int
maybe_free(struct upload *u)
{
	if (u->a_live || u->b_live)
		return 0;
	unlink_upload(u);
	return 1;
}

/* b is no longer hubd's to send on: B's grants wake hubd no more for it
 * (host_sleep_prepare). */
static void
b_over(struct hub *h, struct upload *u)
{
	struct peer *b = hub_peer(h, u->b_peer);

	u->b_live = 0;
	if (b != NULL && b->epoch == u->b_epoch && b->uploads > 0)
		b->uploads--;
}

/* b is over for hubd, with type (Close or Reset) unless B is gone; B,
 * its receiver, frees the entry. What B may still send on it crossing
 * ours is taken without complaint (streams.c, STALE_SENT). */
static void
end_b(struct hub *h, struct upload *u, uint8_t type)
{
	struct peer *b = hub_peer(h, u->b_peer);

	if (!u->b_live)
		return;
	b_over(h, u);
	u->b_end = 0;
	chanq_drop(&u->b);
	if (b != NULL && b->epoch == u->b_epoch) {
		b->chans[u->b.chan] = (struct hchan){ .stale = STALE_SENT };
		host_send(h, b, type, u->b.chan, 0, NULL, 0);	/* if served */
	}
}

/* The sender is told to stop (r[shm.flow.reset]): A with a Reset on a,
 * which hubd frees now (nothing more of A's is taken: what it sent
 * meanwhile is dropped, its own end crossing ours taken); a client's
 * items are dropped from now on. */
static void
stop_a(struct hub *h, struct upload *u)
{
	struct peer *a;

	if (!u->a_live)
		return;
	u->a_live = 0;
	chanq_drop(&u->b);
	if (u->x != NULL) {
		release_x(u);
		return;
	}
	a = hub_peer(h, u->a_peer);
	if (a != NULL && a->epoch == u->a_epoch) {
		a->chans[u->a_chan] = (struct hchan){ .stale = STALE_RESET };
		/* r[shm.flow.channel-id-reuse]: the receiver frees it */
		hp_chan_free(&a->view.chans[u->a_chan]);
		host_send(h, a, HP_MSG_RESET, u->a_chan, 0, NULL, 0);
	}
}

/* B's new grants on b, passed on to A on a: never more than hubd has
 * delivered to B, so the queue stays within A's window. */
static void
pass_grants(struct hub *h, struct upload *u, struct peer *b)
{
	/* r[shm.flow.ordering.sender]: acquire, pairs with B's grant */
	uint32_t g = hp_load_acquire_u32(&b->view.chans[u->b.chan].granted_total);
	uint32_t d = g - u->b_seen, room, n;
	struct peer *a;

	if ((int32_t)d <= 0)
		return;
	u->b_seen = g;
	if (!u->a_live || u->x != NULL || (a = host_instance(h, u->a_peer, u->a_epoch)) == NULL)
		return;
	room = u->b.sent_total - u->returned;
	if ((n = d < room ? d : room) == 0)
		return;
	/* r[shm.flow.ordering.receiver] */
	hp_chan_grant(&a->view.chans[u->a_chan], n);
	a->chans[u->a_chan].granted += n;
	u->returned += n;
	hp_endpoint_notify_credit(&a->ep, &a->view.chans[u->a_chan].granted_total);
}

/* Sends what B's credit and ring allow, then b's end once the queue is
 * out. How many messages. */
static int
pump_one(struct hub *h, struct upload *u, struct peer *b)
{
	int n = chanq_pump(h, &u->b, b);

	pass_grants(h, u, b);
	if (chanq_empty(&u->b) && u->b_end != 0)
		end_b(h, u, u->b_end);
	if (chanq_empty(&u->b) && u->waiting && u->x != NULL) {
		u->waiting = 0;
		u->x->on_more(u->x);	/* the client's next line */
	}
	return n;
}

/* The stream cannot go on (an item B cannot take, no memory): both ends
 * stop, with Resets. */
static void
broken(struct hub *h, struct upload *u, const char *why)
{
	struct peer *b = hub_peer(h, u->b_peer);

	log_warnx("guest %s: upload on channel %u: %s",
		  b != NULL && b->conf != NULL ? b->conf->name : "?", u->b.chan, why);
	end_b(h, u, HP_MSG_RESET);
	stop_a(h, u);
}

static struct upload *
upload_new(struct hub *h, struct peer *q, uint32_t b)
{
	struct upload *u = calloc(1, sizeof(*u));

	if (u == NULL)
		return NULL;
	u->b_peer = q->id;
	u->b_epoch = q->epoch;
	chanq_init(&u->b, b);
	/* b starts with no credit, B's window (as if B had activated it
	 * with initial_credit) is granted when B starts reading: that is no
	 * credit A's items have used yet */
	u->b_seen = h->conf.params.initial_credit;
	u->a_live = u->b_live = 1;
	q->uploads++;	/* its grants wake hubd (host_sleep_prepare) */
	return u;
}

static void
link_upload(struct hub *h, struct upload *u)
{
	if ((u->next = h->uploads) != NULL)
		u->next->prevp = &u->next;
	h->uploads = u;
	u->prevp = &h->uploads;
}

/* -- the call ------------------------------------------------------------ */

/* B's end b, opened in q's table with no credit (r[shm.flow.channel-activate];
 * B grants its window as it starts reading). */
static int64_t
open_b(struct hub *h, struct peer *q, uint64_t caller)
{
	if (streams_caller_full(h, q, caller))
		return -EUSERS;
	return hp_chan_open(q->view.chans, h->conf.params.max_channels, HP_SIDE_HOST, 0,
			    &q->chan_cursor);
}

/* A's channel a, a good one, in a call refused for another reason (no
 * channel in B's table, no memory): as if hubd had taken it and stopped
 * at once (a Reset, the entry freed, what A still sends or its end taken
 * without complaint), so that A's sender lets it go. */
static void
refuse_a(struct hub *h, struct peer *p, uint32_t a)
{
	p->chans[a] = (struct hchan){ .stale = STALE_RESET };
	hp_chan_free(&p->view.chans[a]);
	host_send(h, p, HP_MSG_RESET, a, 0, NULL, 0);
}

void
upload_call(struct hub *h, struct peer *p, struct peer *q, const struct method *meth,
	    struct hp_msg_in *m, const struct hp_request *req, const struct origin *o)
{
	const struct hp_params *prm = &h->conf.params;
	struct hp_pc_enc e;
	struct origin qo = *o;
	struct upload *u = NULL;
	size_t at = 0, after = 0, meta_len = (size_t)(req->args - m->payload);
	uint64_t a = 0;
	int64_t b;
	uint8_t *buf;
	uint32_t req_id;
	const char *bad;
	char why[160];

	if ((bad = streams_chan_arg(h, p, meth, req, HP_T_RX, &a, &at, &after)) != NULL) {
		answer_error(h, o, HP_ERR_USER, bad);
		return;
	}
	if ((b = open_b(h, q, p->id)) < 0) {
		snprintf(why, sizeof(why), "no channel available in guest %s%s", q->conf->name,
			 b == -EUSERS ? ": this caller holds channels_per_caller of its "
			 "streams already" : "");
		refuse_a(h, p, (uint32_t)a);
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	/* the Request with a rewritten as b: its varint may change length */
	if ((buf = malloc(m->len + HP_PC_VARINT_MAX_U64)) == NULL ||
	    (u = upload_new(h, q, (uint32_t)b)) == NULL) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	hp_pc_enc_init(&e, buf, m->len + HP_PC_VARINT_MAX_U64);
	hp_pc_put_raw(&e, m->payload, meta_len);
	hp_pc_put_raw(&e, req->args, at);
	hp_pc_put_u64(&e, (uint64_t)b);
	hp_pc_put_raw(&e, req->args + after, req->args_len - after);
	if (e.err != 0 || e.len > q->ep.lim.max_payload_size) {
		answer_call_too_large(why, sizeof(why), q, e.err != 0 ? m->len : e.len);
		b_over(h, u);
		goto fail;
	}
	u->a_peer = p->id;
	u->a_epoch = p->epoch;
	u->a_chan = (uint32_t)a;
	/* hubd sends on b for the call: its answer ends it (upload_response) */
	qo.chan = (uint32_t)b;
	if (answer_call(h, q, m->desc.method_id, buf, (uint32_t)e.len, &qo, &req_id, NULL) != 0) {
		snprintf(why, sizeof(why), "out of memory");
		b_over(h, u);
		goto fail;
	}
	free(buf);
	u->b_req = req_id;
	q->chans[b] = (struct hchan){ .open = 1, .sending = 1, .o = qo, .upload = u,
				      .caller = p->id };
	q->chans[b].o.req_id = req_id;
	/* A activated a with initial_credit: hubd's count of it */
	p->chans[a] = (struct hchan){ .open = 1, .granted = prm->initial_credit, .o = *o,
				      .upload = u };
	link_upload(h, u);
	return;
fail:
	free(buf);
	free(u);
	hp_chan_free(&q->view.chans[b]);
	refuse_a(h, p, (uint32_t)a);
	answer_error(h, o, HP_ERR_USER, why);
}

int64_t
upload_client_open(struct hub *h, struct peer *q, uint64_t caller)
{
	return open_b(h, q, caller);
}

int
upload_client_start(struct hub *h, struct ext_call *x, struct peer *q, uint32_t b,
		    uint32_t req_id)
{
	struct upload *u = upload_new(h, q, b);
	struct origin o = { .kind = ORIGIN_CLIENT, .ext = x, .req_id = req_id, .chan = b };

	if (u == NULL) {
		hp_chan_free(&q->view.chans[b]);
		return -ENOMEM;
	}
	u->x = x;
	u->b_req = req_id;
	x->up = u;
	q->chans[b] = (struct hchan){ .open = 1, .sending = 1, .o = o, .upload = u,
				      .caller = x->caller };
	link_upload(h, u);
	return 0;
}

int
upload_client_item(struct hub *h, struct ext_call *x, const uint8_t *item, uint32_t len)
{
	struct upload *u = x->up;
	struct peer *b;

	if (u == NULL || !u->a_live)
		return -1;
	if (u->b_live && (b = host_instance(h, u->b_peer, u->b_epoch)) != NULL &&
	    len > b->ep.lim.max_payload_size) {
		broken(h, u, "an item is larger than the receiver takes");
		maybe_free(u);
		return -1;
	}
	if (chanq_hold(&u->b, item, len) != 0) {
		broken(h, u, "out of memory");
		maybe_free(u);
		return -1;
	}
	if (u->b_live && (b = host_instance(h, u->b_peer, u->b_epoch)) != NULL)
		pump_one(h, u, b);
	if (chanq_empty(&u->b))
		return 0;
	u->waiting = 1;
	return 1;
}

/* A, the sender, ended its side (Reset, or Close: B gets its end after
 * what is queued for it). */
static void
a_ended(struct hub *h, struct upload *u, int reset)
{
	struct peer *b;

	u->a_live = 0;
	if (reset)
		end_b(h, u, HP_MSG_RESET);
	else if (u->b_live && u->b_end == 0) {
		u->b_end = HP_MSG_CLOSE;
		if ((b = host_instance(h, u->b_peer, u->b_epoch)) != NULL)
			pump_one(h, u, b);
	}
	maybe_free(u);
}

void
upload_client_end(struct hub *h, struct ext_call *x, int reset)
{
	struct upload *u = x->up;

	if (u == NULL)
		return;
	u->waiting = 0;
	release_x(u);
	a_ended(h, u, reset);
}

/* -- messages on the upload's channels ------------------------------------ */

void
upload_data(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct hchan *c = &p->chans[id];
	struct upload *u = c->upload;
	struct peer *b;
	int rc;

	if (u->x != NULL || p->id != u->a_peer || id != u->a_chan) {
		/* B's channel, on which hubd sends: B may not */
		host_fault(h, p, DEATH_VIOLATION, "shm.flow.channel-table-indexing");
		return;
	}
	if (streams_take(h, p, c, m->len) != 0)
		return;
	if (!u->b_live) {
		/* over at B's end; a is stopped with it (not reached) */
		return;
	}
	b = host_instance(h, u->b_peer, u->b_epoch);
	if (b != NULL && m->len > b->ep.lim.max_payload_size) {
		broken(h, u, "an item is larger than the receiver takes");
		maybe_free(u);
		return;
	}
	/* straight on when nothing waits before it and B has credit */
	if (b != NULL && (rc = chanq_forward(h, &u->b, b, m)) != 0) {
		if (rc > 0)
			pass_grants(h, u, b);
		return;		/* sent, or B faulted */
	}
	/* within A's window, which is B's less the queue: bounded */
	if (chanq_hold(&u->b, m->payload, m->len) != 0) {
		broken(h, u, "out of memory");
		maybe_free(u);
	}
}

void
upload_end(struct hub *h, struct peer *p, uint32_t id, int reset)
{
	struct upload *u = p->chans[id].upload;

	if (u->x == NULL && p->id == u->a_peer && id == u->a_chan) {
		/* A is done: the receiver frees a (r[shm.flow.channel-id-reuse]);
		 * B gets the end after the queue, or a Reset now */
		p->chans[id] = (struct hchan){ 0 };
		hp_chan_free(&p->view.chans[id]);
		a_ended(h, u, reset);
		return;
	}
	/* B, the receiver, says stop (r[shm.flow.reset]): nothing more
	 * follows our Reset, and the sender is told to stop */
	b_over(h, u);
	chanq_drop(&u->b);
	p->chans[id] = (struct hchan){ 0 };
	host_send(h, p, HP_MSG_RESET, id, 0, NULL, 0);
	stop_a(h, u);
	maybe_free(u);
}

void
upload_response(struct hub *h, struct peer *p, uint32_t req_id)
{
	struct upload *u;

	for (u = h->uploads; u != NULL; u = u->next)
		if (u->b_peer == p->id && u->b_epoch == p->epoch && u->b_req == req_id)
			break;
	if (u == NULL)
		return;
	/* answered before the end: the stream ends with the answer, b with
	 * a Reset (B frees it) and A told to stop, both before the answer */
	end_b(h, u, HP_MSG_RESET);
	stop_a(h, u);
	unlink_upload(u);
}

/* -- the data path's turn ------------------------------------------------ */

int
upload_pump(struct hub *h, struct peer *p)
{
	struct upload *u, *next;
	int n = 0;

	for (u = h->uploads; u != NULL && host_serving(p); u = next) {
		next = u->next;
		if (!u->b_live || u->b_peer != p->id || u->b_epoch != p->epoch)
			continue;
		n += pump_one(h, u, p);
		maybe_free(u);
	}
	return n;
}

int
upload_ready(struct hub *h, struct peer *p)
{
	for (struct upload *u = h->uploads; u != NULL; u = u->next) {
		if (!u->b_live || u->b_peer != p->id || u->b_epoch != p->epoch)
			continue;
		/* a grant of B's to pass on (acquire: pairs with B's release
		 * add in hp_chan_grant) */
		if ((int32_t)(hp_load_acquire_u32(&p->view.chans[u->b.chan].granted_total) -
			      u->b_seen) > 0)
			return 1;
		if (chanq_empty(&u->b) ? u->b_end != 0 : chanq_ready(&u->b, p))
			return 1;
	}
	return 0;
}

/* -- death and detach ---------------------------------------------------- */

void
upload_detach(struct hub *h, struct peer *p)
{
	struct upload *u, *next;

	for (u = h->uploads; u != NULL; u = next) {
		next = u->next;
		if (u->a_live && u->x == NULL && u->a_peer == p->id) {
			/* the sender is gone mid-stream: B gets a Reset */
			u->a_live = 0;
			end_b(h, u, HP_MSG_RESET);
		}
		if (u->b_live && u->b_peer == p->id) {
			/* the receiver is gone: its table goes with it; the
			 * sender is told to stop (before the call's error,
			 * answer_detach) */
			u->b_live = 0;
			chanq_drop(&u->b);
			stop_a(h, u);
		}
		maybe_free(u);
	}
	p->uploads = 0;
}

void
upload_free_all(struct hub *h)
{
	while (h->uploads != NULL)
		unlink_upload(h->uploads);
}

void
upload_stats(struct hub *h, uint32_t *open, uint64_t *queued)
{
	*open = 0;
	*queued = 0;
	for (struct upload *u = h->uploads; u != NULL; u = u->next) {
		(*open)++;
		*queued += u->b.queued;
	}
}
