/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's calls out: asynchronous and blocking, their Cancel, the
 * table of calls in flight and the bound on each way's; the answers
 * (the service loop's Response, which this file fills). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"
#include "mt/mt.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/builtin.h"

int
lg_call_send(struct guest *g, struct lg_lane *ln, uint8_t type, uint32_t id,
	     uint64_t method, const void *head, size_t hlen, const void *body,
	     size_t blen, struct timeout *t)
{
	int rc = lg_send_on(g, ln, type, id, method, head, hlen, body, blen, 0, t);

	if (rc == -EPROTO && ln != NULL) {
		lg_lane_broken(ln, "shm.ring.capacity");
		rc = -EPIPE;
	}
	return rc;
}

/* A Cancel goes the way its call went. */
static int
send_cancel(struct guest *g, const struct out_call *c)
{
	return lg_call_send(g, c->lane, HP_MSG_CANCEL, (uint32_t)c->id, 0, NULL, 0, NULL, 0, NULL);
}

/* The Request, its metadata cm's deadline and trace, over the lane its
 * method is routed on (its channels moved there first) or through the
 * hub: what went, in c. */
static int
send_request(struct guest *g, struct lg_route *r, uint32_t id, uint64_t mid,
	     const void *args, size_t len, const struct hp_callmeta *cm, struct out_call *c,
	     struct timeout *t)
{
	uint8_t meta[HP_CALLMETA_MAX];
	int64_t nmeta = hp_callmeta_encode(meta, sizeof(meta), cm);	/* fits */
	struct lg_lane *ln = r != NULL ? r->lane : NULL;
	uint8_t *moved = NULL;
	size_t mlen = 0;
	int rc;

	c->nchans = 0;
	/* larger than the lane carries (the smaller of its two guests'
	 * limits): the hub takes it and answers as it would without a lane,
	 * naming the size and the limit */
	if (ln != NULL && (size_t)nmeta + len > ln->ep.lim.max_payload_size)
		ln = NULL;
	if (ln != NULL && r->chans && (rc = lg_chan_move(g, ln, &r->sig, args, len, c,
							  &moved, &mlen)) != 0) {
		if (rc < 0)
			return rc;
		ln = NULL;	/* channels the hub takes, or refuses, itself */
	}
	if (ln != NULL)
		lg_lane_hold(ln);	/* a wait for room serves: it may close */
	rc = lg_call_send(g, ln, HP_MSG_REQUEST, id, mid, meta, (size_t)nmeta,
		     moved != NULL ? moved : args, moved != NULL ? mlen : len, t);
	if (rc != 0 && moved != NULL) {
		lg_chan_unmove(g, ln, c);
		c->nchans = 0;
	}
	free(moved);
	if (ln != NULL)
		lg_lane_put(ln);	/* not closed if rc is 0: tx_ready saw it open */
	if (rc == -EPIPE && ln != NULL) {
		/* the lane is closing: the hub takes the call, as before it */
		ln = NULL;
		rc = lg_send_msg(g, HP_MSG_REQUEST, id, mid, meta, (size_t)nmeta,
				 args, len, 0, t);
	}
	c->lane = ln;
	return rc;
}

/* A call leaves the table: one fewer of our async calls in flight its
 * way. */
static void
out_gone(struct guest *g, const struct out_call *c)
{
	if (!c->async)
		return;
	if (c->lane != NULL && c->lane->calls_out > 0)
		c->lane->calls_out--;
	else if (c->lane == NULL && g->hub_calls_out > 0)
		g->hub_calls_out--;
}

struct out_room {
	struct guest	*g;
	uint64_t	mid;
};

/* Whether an async call of w->mid may go: its way (a lane, or the hub)
 * below its bound of such calls in flight. */
static int
out_room_ready(void *arg)
{
	struct out_room *w = arg;
	struct lg_route *r;

	if (hp_host_goodbye_said(&w->g->seg))
		return -ESHUTDOWN;
	if (w->g->dead)
		return w->g->dead;
	r = w->g->routes.count > 0 ? lg_lane_route(w->g, w->mid) : NULL;
	if (r == NULL)
		return w->g->hub_calls_out < lg_hub_out_max(w->g);
	return r->lane->calls_out < lg_lane_out_max(r->lane);
}

/* The route of an async call of mid (NULL: through the hub) once its way
 * has room for one more: r[shm.ring.full] past as many as it carries, a
 * call waits, as on a full ring, for an answer, serving meanwhile (a
 * callee may be calling us back to answer). Calls that all wait at their
 * callees (a gate that a later call opens), no answer coming for
 * LG_OUT_QUIET_MS, pile nothing up on us: then it goes all the same.
 * 0 or -errno. */
static int
route_room(struct guest *g, uint64_t mid, struct lg_route **route)
{
	struct timeout quiet = { LG_OUT_QUIET_MS, 0 };
	struct out_room w = { g, mid };
	int rc;

	if ((rc = out_room_ready(&w)) == 0) {
		g->stats.ring_waits++;
		rc = g->rt->wait_serving(g, HP_WAIT_RING_DATA, out_room_ready, &w, &quiet);
		if (rc == 0)
			rc = 1;		/* quiet: it goes */
	}
	if (rc < 0) {
		if (rc == -EPIPE || rc == -ESHUTDOWN)
			g->dead = rc;
		return rc;
	}
	/* its lane may have closed meanwhile: looked up anew */
	*route = g->routes.count > 0 ? lg_lane_route(g, mid) : NULL;
	return 0;
}

const struct guest_call_opts lg_own_call = {
	.size = sizeof(struct guest_call_opts),
	.flags = GUEST_CALL_DEADLINE | GUEST_CALL_TRACE,	/* none of either */
};

/* Where the calls a handler makes inherit from: the microthread's own
 * (mt_ctx, set by runtime_mt.c), else the service thread's (g->cur_meta,
 * set by runtime_callback.c). */
static const struct hp_callmeta *
cur_meta(struct guest *g)
{
	struct hp_callmeta *m = mt_ctx();

	_Static_assert(sizeof(struct hp_callmeta) <= MT_CTX_SIZE, "mt_ctx holds it");
	return m != NULL ? m : &g->cur_meta;
}

/* A call's deadline and trace (r[shm.metadata.in-payload]): inherited
 * from the call being handled (cur_meta), unless opts say otherwise;
 * own_deadline (guest_call's timeout, 0: none) bounds it. 0 or -EINVAL. */
static int
call_meta(struct guest *g, const struct guest_call_opts *o, uint64_t own_deadline,
	  struct hp_callmeta *cm)
{
	const struct hp_callmeta *in = cur_meta(g);
	unsigned flags = 0;

	if (o != NULL) {
		if (o->size < sizeof(*o) ||
		    (o->flags & ~(GUEST_CALL_DEADLINE | GUEST_CALL_TRACE | GUEST_CALL_NEW_TRACE)))
			return -EINVAL;
		flags = o->flags;
		if ((flags & GUEST_CALL_TRACE) && (flags & GUEST_CALL_NEW_TRACE))
			return -EINVAL;
	}
	memset(cm, 0, sizeof(*cm));
	cm->deadline_ns = flags & GUEST_CALL_DEADLINE ? o->deadline_ns : in->deadline_ns;
	cm->deadline_ns = hp_deadline_min(cm->deadline_ns, own_deadline);
	if (flags & GUEST_CALL_TRACE) {
		/* as given: the caller names its own span */
		if (o->trace != NULL &&
		    hp_traceparent_parse(o->trace, strlen(o->trace), cm) != 0)
			return -EINVAL;
	} else if (flags & GUEST_CALL_NEW_TRACE) {
		hp_trace_new(cm, 1);
	} else if (in->has_trace) {
		/* the same trace, a new parent-id: this call's */
		cm->has_trace = 1;
		cm->flags = in->flags;
		memcpy(cm->trace_id, in->trace_id, sizeof(cm->trace_id));
		hp_trace_new(cm, 0);
	}
	return 0;
}

/* guest_call_async (async: bounded, route_room), waiting for room to
 * send up to t. */
static int
call_start(struct guest *g, const char *method, const void *args, size_t len,
	   guest_result_fn fn, void *ctx, uint32_t *call_id, struct timeout *t, int async,
	   const struct hp_callmeta *cm)
{
	struct lg_route *r = NULL, route;
	struct out_call sent, *c;
	uint64_t mid;
	uint32_t id;
	int rc = 0;

	/* a caller's slip, not a method nobody serves */
	if (method == NULL || lg_buf_bad(args, len))
		return -EINVAL;
	if (g->dead)
		return g->dead;
	mid = hp_method_id(method, strlen(method));
	if (async)
		rc = route_room(g, mid, &r);
	else if (g->routes.count > 0)
		r = lg_lane_route(g, mid);
	if (rc != 0)
		return rc;
	/* a copy: the table changes under a send that serves while it waits
	 * for room (the hub's ROUTE, UNROUTE, a lane closing) */
	if (r != NULL) {
		if (r->name[0] == '\0')
			snprintf(r->name, sizeof(r->name), "%s", method);
		route = *r;
		r = &route;
	}
	/* room first: once the Request is out, its entry must not fail */
	if (hp_idtab_reserve(&g->out, 1) != 0)
		return -ENOMEM;
	/* r[shm.id.request-id]: u32, never 0, never one still in flight */
	do {
		id = g->next_req++;
	} while (id == 0 || hp_idtab_find(&g->out, id) != NULL);
	if ((rc = send_request(g, r, id, mid, args, len, cm, &sent, t)) != 0)
		return rc;
	c = hp_idtab_insert(&g->out, id);	/* reserved: never NULL */
	sent.fn = fn;
	sent.ctx = ctx;
	sent.id = c->id;
	sent.method = mid;
	sent.async = (uint8_t)async;
	*c = sent;
	if (c->lane != NULL)
		c->lane->n_out++;
	if (async && c->lane != NULL)
		c->lane->calls_out++;
	else if (async)
		g->hub_calls_out++;
	/* to another guest through hubd: after quiet, the wait for the
	 * answer sleeps at once (wait.c) */
	if (c->lane == NULL && strncmp(method, HP_SVC_PREFIX, strlen(HP_SVC_PREFIX)) != 0)
		g->ep.sleep_first = 1;
	g->stats.calls_out++;
	if (call_id != NULL)
		*call_id = id;
	return 0;
}

int
guest_call_async_with(struct guest *g, const char *method, const void *args,
		      size_t len, guest_result_fn fn, void *ctx, uint32_t *call_id,
		      const struct guest_call_opts *opts)
{
	struct hp_callmeta cm;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	if ((rc = call_meta(g, opts, 0, &cm)) == 0)
		rc = call_start(g, method, args, len, fn, ctx, call_id, NULL, 1, &cm);
	g->rt->unlock(g);
	return rc;
}

int
guest_call_async(struct guest *g, const char *method, const void *args,
		 size_t len, guest_result_fn fn, void *ctx, uint32_t *call_id)
{
	return guest_call_async_with(g, method, args, len, fn, ctx, call_id, NULL);
}

int
guest_cancel(struct guest *g, uint32_t call_id)
{
	struct out_call *c;
	int rc = -ENOENT;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	if ((c = hp_idtab_find(&g->out, call_id)) != NULL)
		rc = send_cancel(g, c);
	g->rt->unlock(g);
	return rc;
}

/* A callee's Err(User): what its error.kind says failed on the far side
 * (guest_reply_status), -EREMOTEIO for none or a kind we do not know. */
static int
user_status(const struct hp_response *r)
{
	const char *k;
	size_t n;

	if (!hp_meta_str(&r->meta, HP_META_ERROR_KIND, &k, &n))
		return -EREMOTEIO;
	if (hp_meta_is(k, n, HP_ERR_KIND_UNREACHABLE))
		return -EHOSTUNREACH;
	if (hp_meta_is(k, n, HP_ERR_KIND_TIMEOUT))
		return -ETIMEDOUT;
	return -EREMOTEIO;
}

/* A Response's status, and for an error its text as text (the string
 * decoded, cut to LG_ERR_TEXT_MAX bytes, NUL-terminated) in text. The
 * host's own mark (r[shm.metadata.in-payload]: its hub.error entry, which
 * hubd keeps out of the answers it routes) wins over what a callee's
 * error.kind or error.text say. */
static int
status_of(const struct hp_response *r, char *text, size_t *tlen)
{
	static const char *const kinds[] = {
		[HP_ERR_UNKNOWN_METHOD] = "no such method",
		[HP_ERR_INVALID_PAYLOAD] = "invalid payload",
		[HP_ERR_CANCELLED] = "cancelled",
	};
	const char *why = NULL;
	struct hp_pc_dec d;
	size_t n = 0;
	int hub, status;

	if (r->result == HP_RESULT_OK)
		return 0;
	hub = hp_meta_str(&r->meta, HP_META_HUB_ERROR, &why, &n);
	switch (r->error) {
	case HP_ERR_USER:
		status = hub ? -ECONNREFUSED : user_status(r);
		hp_pc_dec_init(&d, r->value, r->value_len);
		if (hp_pc_get_str(&d, &why, &n) != 0) {
			why = "(undecodable error)";
			n = strlen(why);
		}
		break;
	case HP_ERR_UNKNOWN_METHOD: status = -ENOSYS; break;
	case HP_ERR_INVALID_PAYLOAD: status = -EBADMSG; break;
	default: status = -ECANCELED; break;
	}
	/* a kind without text of its own: the callee's text, if it gave one */
	if (!hub && r->error != HP_ERR_USER)
		hp_meta_str(&r->meta, HP_META_ERROR_TEXT, &why, &n);
	if (why == NULL) {
		why = kinds[r->error < sizeof(kinds) / sizeof(kinds[0]) &&
			    kinds[r->error] != NULL ? r->error : HP_ERR_CANCELLED];
		n = strlen(why);
	}
	if (n > LG_ERR_TEXT_MAX)
		n = LG_ERR_TEXT_MAX;
	memcpy(text, why, n);
	text[n] = '\0';
	*tlen = n;
	return status;
}

struct sync_call {
	struct guest	*g;
	struct lg_event	ev;		/* the answer */
	int		status;
	uint8_t		*buf;
	size_t		cap;
	size_t		*len;
};

static void
sync_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct sync_call *s = ctx;

	s->ev.done = 1;
	s->status = status;
	if (s->len != NULL)
		*s->len = len;
	if (status == 0) {
		if (len > s->cap) {
			len = s->cap;	/* refused; *len says what it needs */
			s->status = -EMSGSIZE;
		}
		if (len > 0)
			memcpy(s->buf, result, len);
	} else if (result != NULL && s->cap > 0) {
		/* an error's text: cut to fit, NUL-terminated */
		if (len > s->cap - 1)
			len = s->cap - 1;
		memcpy(s->buf, result, len);
		((char *)s->buf)[len] = '\0';
		if (s->len != NULL)
			*s->len = len;
	}
	/* whatever the outcome: a microthread sleeps until woken */
	s->g->rt->wake(&s->ev);
}

int
guest_call_with(struct guest *g, const char *method, const void *args, size_t len,
		void *result, size_t cap, size_t *result_len, int timeout_ms,
		const struct guest_call_opts *opts)
{
	struct sync_call s = { .g = g, .buf = result, .cap = cap, .len = result_len };
	/* one timeout for sending and waiting; the clock from the first
	 * wait on: a quick answer needs none */
	struct timeout t = { timeout_ms, 0 };
	uint64_t now = hp_now_ns();
	struct hp_callmeta cm;
	uint32_t id;
	int rc;

	if (result_len != NULL)
		*result_len = 0;	/* stays so unless an answer came */
	if (lg_detached(g))
		return -ENOTCONN;
	if (lg_buf_bad(result, cap))
		return -EINVAL;
	g->rt->lock(g);
	/* the timeout is the call's deadline too */
	if ((rc = call_meta(g, opts, timeout_ms >= 0 ?
			    now + (uint64_t)timeout_ms * HP_NS_PER_MS : 0, &cm)) != 0)
		goto out;
	/* ... and an earlier one, inherited or given, bounds the wait (to
	 * the millisecond, at least one: its answer, a timeout, may come) */
	if (cm.deadline_ns != 0) {
		uint64_t left = cm.deadline_ns > now ? cm.deadline_ns - now : 0;
		uint64_t ms = (left + HP_NS_PER_MS - 1) / HP_NS_PER_MS;

		if (ms == 0)
			ms = 1;
		if (t.ms < 0 || ms < (uint64_t)t.ms)
			t.ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
	}
	if ((rc = call_start(g, method, args, len, sync_done, &s, &id, &t, 0, &cm)) != 0)
		goto out;
	rc = g->rt->await(g, &s.ev, &t);
	if (s.ev.done) {
		rc = s.status;
		goto out;
	}
	/* Gave up: the answer, if it ever comes, is dropped. */
	struct out_call *c = hp_idtab_find(&g->out, id);

	if (c != NULL) {
		/* given up (its timeout, or guest_stop: not the hub's
		 * goodbye): the callee is told, and may stop working on it */
		int gave_up = rc == -ETIMEDOUT ||
		    (rc == -ESHUTDOWN && !hp_host_goodbye_said(&g->seg));

		if (gave_up)
			send_cancel(g, c);
		/* over a lane, the answer must still come (its peer answers
		 * what it was asked, and nothing else): kept, for nobody */
		if (c->lane != NULL && gave_up) {
			c->fn = NULL;
		} else {
			out_gone(g, c);
			hp_idtab_remove(&g->out, c);
		}
	}
out:
	g->rt->unlock(g);
	return rc;
}

int
guest_call(struct guest *g, const char *method, const void *args, size_t len,
	   void *result, size_t cap, size_t *result_len, int timeout_ms)
{
	return guest_call_with(g, method, args, len, result, cap, result_len, timeout_ms,
			       NULL);
}

static int
on_response(struct guest *g, struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct out_call *c = hp_idtab_find(&g->out, m->desc.id), call;

	if (c == NULL && g->cur_lane != NULL) {
		/* a lane's peer answers only what it was asked: a call we
		 * gave up on was never on it, or is over here for good */
		g->lane_rule = "shm.id.request-id";
		return -EPROTO;
	}
	if (c == NULL)
		return 0;	/* we gave up on it (timeout) */
	if (c->lane != g->cur_lane) {
		if (g->cur_lane == NULL)
			return 0;	/* not the hub's to answer */
		g->lane_rule = "shm.id.request-id";
		return -EPROTO;
	}
	call = *c;
	out_gone(g, c);
	hp_idtab_remove(&g->out, c);
	if (hp_msg_decode_response(m->payload, m->len, &r) != 0) {
		if (call.lane == NULL)
			return -EPROTO;
		/* as hubd says of a callee's answer that does not decode */
		if (call.fn != NULL)
			call.fn(call.ctx, -EBADMSG, NULL, 0);
		g->lane_rule = "shm.payload.encoding";
		return -EPROTO;
	}
	if (call.nchans > 0)
		lg_chan_answered(g, &call);
	if (call.fn != NULL) {	/* NULL: given up on (guest_call) */
		char text[LG_ERR_TEXT_MAX + 1];
		size_t tlen = 0;
		int status = status_of(&r, text, &tlen);

		if (status == 0)
			call.fn(call.ctx, 0, r.value, r.value_len);
		else
			call.fn(call.ctx, status, (const uint8_t *)text, tlen);
	}
	return 0;
}

/* Fails every call in flight with status (the loop has ended for good:
 * nothing new can start). */
void
lg_out_fail_all(struct guest *g, int status)
{
	struct out_call c;

	/* each out of the table before its caller hears: a callback that
	 * cancels another call finds the table whole */
	while (hp_idtab_take(&g->out, &c) == 0) {
		out_gone(g, &c);
		if (c.fn != NULL)
			c.fn(c.ctx, status, NULL, 0);
	}
}

void
lg_out_forget_abandoned(struct guest *g)
{
	struct out_call *e;
	uint32_t pos = 0;

	while ((e = hp_idtab_next(&g->out, &pos)) != NULL)
		if (e->fn == sync_done && ((struct sync_call *)e->ctx)->ev.abandoned)
			e->fn = NULL;
}

/* Why a call over ln failed: why the lane ended (hubd's word, or the
 * peer's hang-up), with the method named as hubd names it for a call
 * through it when the callee died ("guest b died serving b.sleep: ...");
 * its length. */
static size_t
lane_gone_text(struct guest *g, const struct lg_lane *ln, uint64_t method, char *buf,
	       size_t cap)
{
	const struct lg_route *r = g->routes.count > 0 ? hp_idtab_find(&g->routes, method) : NULL;
	size_t n = (size_t)snprintf(buf, cap, "guest %s died", ln->peer);
	int len;

	if (r == NULL || r->lane != ln || r->name[0] == '\0' || strncmp(ln->why, buf, n) != 0 ||
	    (ln->why[n] != ':' && ln->why[n] != '\0'))
		len = snprintf(buf, cap, "%s", ln->why);
	else
		len = snprintf(buf, cap, "%.*s serving %s%s", (int)n, ln->why, r->name,
			       ln->why + n);
	return len < 0 ? 0 : (size_t)len >= cap ? cap - 1 : (size_t)len;
}

/* The out half of lane_gone (call_in.c): each call over ln fails as one
 * through the hub does when the callee dies (Cancelled), why as its
 * text. Before the lane's routes go (lane.c): they name the methods. */
void
lg_out_lane_gone(struct guest *g, struct lg_lane *ln)
{
	char why[HP_LANE_REASON_MAX + HP_METHOD_NAME_MAX + 16];
	struct out_call c, *e;
	uint32_t pos = 0;
	size_t n;

	/* one at a time, out of the table before its caller hears: a
	 * callback may start or cancel other calls */
	for (;;) {
		pos = 0;
		while ((e = hp_idtab_next(&g->out, &pos)) != NULL && e->lane != ln)
			;
		if (e == NULL)
			break;
		c = *e;
		out_gone(g, e);
		hp_idtab_remove(&g->out, e);
		n = lane_gone_text(g, ln, c.method, why, sizeof(why));
		if (c.fn != NULL)
			c.fn(c.ctx, -ECANCELED, (const uint8_t *)why, n);
	}
}

void
lg_call_out_wire(struct guest *g)
{
	g->on_msg[HP_MSG_RESPONSE] = on_response;
}
