/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's calls: calls out (asynchronous, blocking, Cancel, the
 * table of calls in flight), calls in (to the registered handler, run by
 * the runtime in use; replies) and method registration. Fills the service
 * loop's Request, Response and Cancel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"
#include "guestlib/list.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/builtin.h"

/* -- calls out ---------------------------------------------------------- */

/* lg_send_on for a call's message: a lane whose peer broke its ring
 * closes, and the send says -EPIPE as for a lane that is closing. */
static int
send_on(struct guest *g, struct lg_lane *ln, uint8_t type, uint32_t id, uint64_t method,
	const void *head, size_t hlen, const void *body, size_t blen, struct timeout *t)
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
	return send_on(g, c->lane, HP_MSG_CANCEL, (uint32_t)c->id, 0, NULL, 0, NULL, 0, NULL);
}

/* The Request, over the lane its method is routed on (its channels
 * moved there first) or through the hub: what went, in c. */
static int
send_request(struct guest *g, struct lg_route *r, uint32_t id, uint64_t mid,
	     const void *args, size_t len, struct out_call *c, struct timeout *t)
{
	static const uint8_t no_meta[1] = { 0 };	/* empty metadata Vec */
	struct lg_lane *ln = r != NULL ? r->lane : NULL;
	uint8_t *moved = NULL;
	size_t mlen = 0;
	int rc;

	c->nchans = 0;
	if (ln != NULL && r->chans && (rc = lg_chan_move(g, ln, &r->sig, args, len, c,
							  &moved, &mlen)) != 0) {
		if (rc < 0)
			return rc;
		ln = NULL;	/* channels the hub takes, or refuses, itself */
	}
	if (ln != NULL)
		lg_lane_hold(ln);	/* a wait for room serves: it may close */
	rc = send_on(g, ln, HP_MSG_REQUEST, id, mid, no_meta, sizeof(no_meta),
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
		rc = lg_send_msg(g, HP_MSG_REQUEST, id, mid, no_meta, sizeof(no_meta),
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
	r = w->g->nroutes > 0 ? lg_lane_route(w->g, w->mid) : NULL;
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
	*route = g->nroutes > 0 ? lg_lane_route(g, mid) : NULL;
	return 0;
}

/* guest_call_async (async: bounded, route_room), waiting for room to
 * send up to t. */
static int
call_start(struct guest *g, const char *method, const void *args, size_t len,
	   guest_result_fn fn, void *ctx, uint32_t *call_id, struct timeout *t, int async)
{
	uint64_t mid = hp_method_id(method, strlen(method));
	struct lg_route *r = NULL;
	struct out_call sent, *c;
	uint32_t id;
	int rc = 0;

	if (g->dead)
		return g->dead;
	if (async)
		rc = route_room(g, mid, &r);
	else if (g->nroutes > 0)
		r = lg_lane_route(g, mid);
	if (rc != 0)
		return rc;
	/* room first: once the Request is out, its entry must not fail */
	if (hp_idtab_reserve(&g->out, 1) != 0)
		return -ENOMEM;
	/* r[shm.id.request-id]: u32, never 0, never one still in flight */
	do {
		id = g->next_req++;
	} while (id == 0 || hp_idtab_find(&g->out, id) != NULL);
	if ((rc = send_request(g, r, id, mid, args, len, &sent, t)) != 0)
		return rc;
	c = hp_idtab_insert(&g->out, id);	/* reserved: never NULL */
	sent.fn = fn;
	sent.ctx = ctx;
	sent.id = c->id;
	sent.async = (uint8_t)async;
	*c = sent;
	if (c->lane != NULL)
		c->lane->n_out++;
	if (async && c->lane != NULL)
		c->lane->calls_out++;
	else if (async)
		g->hub_calls_out++;
	g->stats.calls_out++;
	if (call_id != NULL)
		*call_id = id;
	return 0;
}

int
guest_call_async(struct guest *g, const char *method, const void *args,
		 size_t len, guest_result_fn fn, void *ctx, uint32_t *call_id)
{
	int rc;

	g->rt->lock(g);
	rc = call_start(g, method, args, len, fn, ctx, call_id, NULL, 1);
	g->rt->unlock(g);
	return rc;
}

int
guest_cancel(struct guest *g, uint32_t call_id)
{
	struct out_call *c;
	int rc = -ENOENT;

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
guest_call(struct guest *g, const char *method, const void *args, size_t len,
	   void *result, size_t cap, size_t *result_len, int timeout_ms)
{
	struct sync_call s = { .g = g, .buf = result, .cap = cap, .len = result_len };
	/* one timeout for sending and waiting; the clock from the first
	 * wait on: a quick answer needs none */
	struct timeout t = { timeout_ms, 0 };
	uint32_t id;
	int rc;

	if (result_len != NULL)
		*result_len = 0;	/* stays so unless an answer came */
	g->rt->lock(g);
	if ((rc = call_start(g, method, args, len, sync_done, &s, &id, &t, 0)) != 0)
		goto out;
	rc = g->rt->await(g, &s.ev, &t);
	if (s.ev.done) {
		rc = s.status;
		goto out;
	}
	/* Gave up: the answer, if it ever comes, is dropped. */
	struct out_call *c = hp_idtab_find(&g->out, id);

	if (c != NULL) {
		if (rc == -ETIMEDOUT)
			send_cancel(g, c);
		/* over a lane, the answer must still come (its peer answers
		 * what it was asked, and nothing else): kept, for nobody */
		if (c->lane != NULL && rc == -ETIMEDOUT) {
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

/* -- calls in ------------------------------------------------------------ */

/* c is answered and its handler has returned: kept a while, so that a
 * second answer, a bug of the guest's, gets -EALREADY rather than
 * memory freed under it; the call answered LG_DONE_KEPT calls ago goes. */
static void
call_done(struct guest *g, struct guest_call *c)
{
	free(g->done[g->done_pos]);
	g->done[g->done_pos] = c;
	g->done_pos = (g->done_pos + 1) % LG_DONE_KEPT;
}

static int
respond(struct guest_call *c, const struct hp_response *r)
{
	struct guest *g = c->g;
	/* the envelope: a hub.error, or an error.text of up to
	 * LG_ERR_TEXT_MAX bytes, at most */
	uint8_t head[LG_ERR_TEXT_MAX + 64];
	struct hp_response env = *r;
	/* compared only: c->lane is NULL once its lane closes (while we
	 * wait for room, on a microthread) */
	const struct lg_lane *ln = c->lane;
	int64_t n;
	int rc;

	g->rt->lock(g);
	if (c->answered) {
		g->rt->unlock(g);
		return -EALREADY;
	}
	/* The envelope (metadata, result tag, error tag) goes first, the
	 * value bytes follow unchanged: encode the envelope alone. */
	env.value = NULL;
	env.value_len = 0;
	if (c->lane_gone)
		rc = 0;		/* its caller is gone: as through the hub, dropped */
	else if ((n = hp_msg_encode_response(head, sizeof(head), &env)) < 0)
		rc = (int)n;
	else
		rc = send_on(g, c->lane, HP_MSG_RESPONSE, c->req_id, 0, head, (size_t)n,
			     r->value, r->value_len, NULL);
	if (rc == -EPIPE && ln != NULL)
		rc = 0;		/* the lane closed meanwhile: the same */
	if (c->lane != NULL && c->nchans > 0)
		lg_chan_replied(c);
	if (rc == -EMSGSIZE) {
		/* The caller must get an answer: a short error instead. */
		static const char msg[] = "result over max_payload_size";
		uint8_t err[64];
		struct hp_pc_enc e;
		struct hp_response tb = { .result = HP_RESULT_ERR, .error = HP_ERR_USER };

		hp_pc_enc_init(&e, err, sizeof(err));
		hp_pc_put_str(&e, msg, sizeof(msg) - 1);
		/* envelope alone, the error string follows it */
		if ((n = hp_msg_encode_response(head, sizeof(head), &tb)) > 0)
			send_on(g, c->lane, HP_MSG_RESPONSE, c->req_id, 0, head, (size_t)n,
				err, e.len, NULL);
	}
	if (c->lane != NULL)
		c->lane->calls_in--;
	/* out of the calls being handled (thousands, on microthreads) */
	LG_LIST_UNLINK(&g->active, c);
	c->answered = 1;
	if (c->running)
		LG_LIST_PUSH(&g->answered, c);	/* freed once its handler returns */
	else
		call_done(g, c);
	g->rt->unlock(g);
	return rc;
}

static void
call_ran(struct guest *g, struct guest_call *c)
{
	g->rt->lock(g);
	c->running = 0;
	if (c->answered) {
		LG_LIST_UNLINK(&g->answered, c);
		call_done(g, c);
	}
	g->rt->unlock(g);
}

void
lg_calls_free(struct guest *g)
{
	struct guest_call *c;

	while ((c = g->active) != NULL) {
		g->active = c->next;
		free(c);
	}
	while ((c = g->answered) != NULL) {
		g->answered = c->next;
		free(c);
	}
	for (uint32_t i = 0; i < LG_DONE_KEPT; i++)
		free(g->done[i]);
}

int
guest_reply(struct guest_call *c, const void *result, size_t len)
{
	struct hp_response r = { .result = HP_RESULT_OK, .value = result,
				 .value_len = len };

	return respond(c, &r);
}

int
guest_reply_error(struct guest_call *c, const char *message)
{
	uint8_t buf[256];
	struct hp_pc_enc e;
	struct hp_response r = { .result = HP_RESULT_ERR, .error = HP_ERR_USER };
	size_t n = strnlen(message, 200);

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_str(&e, message, n);
	r.value = buf;
	r.value_len = e.len;
	return respond(c, &r);
}

int
guest_reply_cancelled(struct guest_call *c)
{
	struct hp_response r = { .result = HP_RESULT_ERR, .error = HP_ERR_CANCELLED };

	return respond(c, &r);
}

/* guest_reply_status's statuses: the error each answers with, the
 * error.kind beside a User one, the text when given none (NULL: none
 * sent, the caller's libguest has the kind's own). */
static const struct {
	int		status;
	uint32_t	error;
	const char	*kind;
	const char	*text;
} reply_kinds[] = {
	{ -EREMOTEIO, HP_ERR_USER, NULL, "error" },
	{ -EHOSTUNREACH, HP_ERR_USER, HP_ERR_KIND_UNREACHABLE, "remote hub unreachable" },
	{ -ETIMEDOUT, HP_ERR_USER, HP_ERR_KIND_TIMEOUT, "the remote side timed out" },
	{ -ENOSYS, HP_ERR_UNKNOWN_METHOD, NULL, NULL },
	{ -EBADMSG, HP_ERR_INVALID_PAYLOAD, NULL, NULL },
	{ -ECANCELED, HP_ERR_CANCELLED, NULL, NULL },
};

int
guest_reply_status(struct guest_call *c, int status, const char *text)
{
	uint8_t buf[LG_ERR_TEXT_MAX + 8];
	struct hp_meta_entry me = { .type = HP_META_STRING };
	struct hp_response r = { .meta = { .entries = &me, .cap = 1 },
				 .result = HP_RESULT_ERR };
	struct hp_pc_enc e;
	size_t i, n = 0;

	for (i = 0; i < sizeof(reply_kinds) / sizeof(reply_kinds[0]); i++)
		if (reply_kinds[i].status == status)
			break;
	if (i == sizeof(reply_kinds) / sizeof(reply_kinds[0]))
		return -EINVAL;
	if (text == NULL)
		text = reply_kinds[i].text;
	if (text != NULL) {
		/* what the caller (and hubd on the way) would refuse is never
		 * sent; cut between characters */
		n = strlen(text);
		if (!hp_utf8_valid((const uint8_t *)text, n))
			return -EILSEQ;
		if (n > LG_ERR_TEXT_MAX)
			for (n = LG_ERR_TEXT_MAX; n > 0 && ((uint8_t)text[n] & 0xc0) == 0x80; n--)
				;
	}
	r.error = reply_kinds[i].error;
	if (r.error == HP_ERR_USER) {
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_str(&e, text, n);
		r.value = buf;
		r.value_len = e.len;
		if (reply_kinds[i].kind != NULL) {
			me.key = HP_META_ERROR_KIND;
			me.value = (const uint8_t *)reply_kinds[i].kind;
			me.value_len = strlen(reply_kinds[i].kind);
			r.meta.count = 1;
		}
	} else if (text != NULL) {
		/* UnknownMethod, InvalidPayload and Cancelled carry no text of
		 * their own: it goes in the metadata */
		me.key = HP_META_ERROR_TEXT;
		me.value = (const uint8_t *)text;
		me.value_len = n;
		r.meta.count = 1;
	}
	me.key_len = me.key != NULL ? strlen(me.key) : 0;
	return respond(c, &r);
}

int
guest_call_cancelled(const struct guest_call *c)
{
	int cancelled;

	c->g->rt->lock(c->g);
	cancelled = c->cancelled;
	c->g->rt->unlock(c->g);
	return cancelled;
}

const char *
guest_call_caller(struct guest_call *c)
{
	struct guest *g = c->g;
	uint8_t arg[16], res[HP_LANE_NAME_MAX + 8];
	const char *name;
	size_t n, pos = 0, len;
	int gone;

	g->rt->lock(g);
	gone = c->answered || c->lane_gone;
	if (!gone && c->caller[0] == '\0' && c->lane != NULL)
		snprintf(c->caller, sizeof(c->caller), "%s", c->lane->peer);
	g->rt->unlock(g);
	/* over a closed lane req_id is the lane's, which the hub never saw */
	if (gone)
		return NULL;
	if (c->caller[0] != '\0')
		return c->caller;
	/* through the hub: it knows the call by the id it gave it */
	n = 0;
	if (guest_pc_put_u64(arg, sizeof(arg), &n, c->req_id) < 0 ||
	    guest_call(g, HP_SVC_CALLER, arg, n, res, sizeof(res), &len, 10000) != 0 ||
	    guest_pc_get_str(res, len, &pos, &name, &n) != 0 || n == 0 ||
	    n >= sizeof(c->caller))
		return NULL;
	memcpy(c->caller, name, n);
	c->caller[n] = '\0';
	return c->caller;
}

struct guest *
guest_call_guest(const struct guest_call *c)
{
	return c->g;
}

/* An error of ours to a request no handler sees, back the way it came
 * (g->cur_lane), marked as hubd marks its own (over a lane, libguest
 * answers what hubd would). message: Err(User(message)), else Err(code). */
static int
reply_error_code(struct guest *g, uint32_t req_id, uint32_t code, const char *message)
{
	struct guest_call *c = calloc(1, sizeof(*c));
	const char *why = message != NULL ? message :
		code == HP_ERR_UNKNOWN_METHOD ? "no such method" :
		"arguments do not match the signature";
	struct hp_meta_entry me = { .key = HP_META_HUB_ERROR,
				    .key_len = strlen(HP_META_HUB_ERROR),
				    .type = HP_META_STRING, .value = (const uint8_t *)why,
				    .value_len = strlen(why) };
	struct hp_response r = { .meta = { .entries = &me, .count = 1, .cap = 1 },
				 .result = HP_RESULT_ERR, .error = code };
	uint8_t buf[128];
	struct hp_pc_enc e;

	if (c == NULL)
		return -ENOMEM;
	c->g = g;
	c->req_id = req_id;
	if ((c->lane = g->cur_lane) != NULL)
		c->lane->calls_in++;
	if (message != NULL) {
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_str(&e, message, strlen(message));
		r.value = buf;
		r.value_len = e.len;
	}
	return respond(c, &r);
}

/* hub.register's refusal, by the shared error strings (services.h). */
static int
register_error(const char *why)
{
	if (strcmp(why, HP_SVC_REG_TAKEN) == 0)
		return -EEXIST;
	if (strcmp(why, HP_SVC_REG_TOO_MANY) == 0)
		return -ENOSPC;
	if (strcmp(why, HP_SVC_REG_NOT_YOURS) == 0)
		return -EPERM;
	if (strncmp(why, HP_METHOD_NAME_BAD, strlen(HP_METHOD_NAME_BAD)) == 0)
		return -EINVAL;
	return -EREMOTEIO;
}

static int
register_method(struct guest *g, const char *name, const char *signature,
		guest_handler fn, void *ctx)
{
	uint8_t args[512], res[128];
	struct hp_pc_enc e;
	struct hp_sig sig;
	struct method *m;
	const char *why;
	size_t n, rlen = 0;
	uint64_t id;
	int rc;

	/* what the host would refuse anyway, without asking it */
	if (name == NULL || fn == NULL || (n = strlen(name)) == 0)
		return -EINVAL;
	if (n > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;
	if (hp_method_name_refused(name, n) != NULL || hp_sig_parse(signature, &sig, &why) != 0)
		return -EINVAL;
	id = hp_method_id(name, n);
	for (uint32_t i = 0; i < g->nmethods; i++)
		if (g->methods[i].id == id)
			return -EEXIST;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, name, n);
	hp_pc_put_str(&e, signature, strlen(signature));
	if (e.err != 0)
		return -ENAMETOOLONG;
	/* Known locally first: a call may arrive right after the host agrees. */
	if ((m = realloc(g->methods, (g->nmethods + 1) * sizeof(*m))) == NULL)
		return -ENOMEM;
	g->methods = m;
	m = &g->methods[g->nmethods];
	*m = (struct method){ .id = id, .fn = fn, .ctx = ctx, .sig = sig };
	if ((m->name = strdup(name)) == NULL)
		return -ENOMEM;
	g->nmethods++;
	for (uint8_t i = 0; i < sig.nargs; i++)
		if (hp_sig_arg_type(&sig, i) == HP_T_CHAN)
			m->chans = 1;
	g->holding++;
	rc = guest_call(g, HP_SVC_REGISTER, args, e.len, res, sizeof(res), &rlen, 10000);
	g->holding--;
	/* A host with no method registry (one written from the spec alone)
	 * does not know hub.register: it calls us by method id, which we
	 * serve all the same. */
	if (rc == -ENOSYS)
		return 0;
	if (rc != 0) {
		/* a handler run meanwhile may have registered more: find ours */
		for (uint32_t i = 0; i < g->nmethods; i++) {
			if (g->methods[i].id == id) {
				free(g->methods[i].name);
				g->methods[i] = g->methods[--g->nmethods];
				break;
			}
		}
		if (rc == -EREMOTEIO || rc == -ECONNREFUSED)
			rc = register_error((const char *)res);
		return rc;
	}
	return 0;
}

int
guest_register(struct guest *g, const char *name, const char *signature,
	       guest_handler fn, void *ctx)
{
	int rc;

	g->rt->lock(g);
	rc = register_method(g, name, signature, fn, ctx);
	g->rt->unlock(g);
	return rc;
}

int
guest_describe(struct guest *g, const char *method, const char *text)
{
	uint8_t args[HP_METHOD_NAME_MAX + HP_DESCRIBE_MAX + 16], res[128] = "";
	size_t n, tn, rlen = 0;
	struct hp_pc_enc e;
	const char *why;
	int rc;

	method = method != NULL ? method : "";
	text = text != NULL ? text : "";
	if ((n = strlen(method)) > HP_METHOD_NAME_MAX)
		return -ENAMETOOLONG;
	/* what the host refuses anyway, without asking it */
	if ((why = hp_describe_refused(text, tn = strlen(text))) != NULL)
		return strcmp(why, HP_SVC_DESC_TOO_LONG) == 0 ? -EMSGSIZE :
		    strcmp(why, HP_SVC_DESC_NOT_UTF8) == 0 ? -EILSEQ : -EINVAL;
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_str(&e, method, n);
	hp_pc_put_str(&e, text, tn);
	if (e.err != 0)
		return -EMSGSIZE;
	g->rt->lock(g);
	g->holding++;
	rc = guest_call(g, HP_SVC_DESCRIBE, args, e.len, res, sizeof(res), &rlen, 10000);
	g->holding--;
	g->rt->unlock(g);
	if (rc != -EREMOTEIO && rc != -ECONNREFUSED)
		return rc;	/* 0; -ENOSYS: a host without hub.describe; ... */
	if (strncmp((const char *)res, HP_SVC_DESC_NOT_YOURS, strlen(HP_SVC_DESC_NOT_YOURS)) == 0)
		return -EPERM;
	if (strncmp((const char *)res, HP_SVC_SIG_UNKNOWN, strlen(HP_SVC_SIG_UNKNOWN)) == 0)
		return -ENOENT;
	return -EREMOTEIO;
}

/* A request's chan<T> arguments are channels the host has just opened for
 * us to send on (r[shm.id.channel-parity]: even): whatever we knew of an
 * earlier channel with the same id is over. */
static void
note_channels(struct guest *g, const struct hp_sig *sig, const uint8_t *args,
	      size_t len)
{
	struct hp_pc_dec d;
	uint64_t id;

	hp_pc_dec_init(&d, args, len);
	for (uint8_t i = 0; i < sig->nargs; i++) {
		if (hp_sig_arg_type(sig, i) != HP_T_CHAN) {
			if (hp_sig_skip(&d, sig, sig->args[i]) != 0)
				return;		/* the handler will say so */
			continue;
		}
		id = hp_pc_get_u64(&d);
		if (d.err != 0)
			return;
		if (id == 0 || id >= g->chans.max || id % 2 != 0 || g->chans.tx[id].open)
			continue;
		g->chans.tx[id].ended = 0;
	}
}

static int
on_request(struct guest *g, struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_request req = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct lg_lane *ln = g->cur_lane;
	struct method *me = NULL;
	struct guest_call *c;
	uint8_t *adopted = NULL;
	size_t alen = 0;
	int rc;

	for (uint32_t i = 0; i < g->nmethods && me == NULL; i++)
		if (g->methods[i].id == m->desc.method_id)
			me = &g->methods[i];
	if (me == NULL)
		return reply_error_code(g, m->desc.id, HP_ERR_UNKNOWN_METHOD, NULL);
	/* the hub's limit, kept by the callee on a lane */
	if (ln != NULL && ln->calls_in >= ln->calls_max)
		return reply_error_code(g, m->desc.id, HP_ERR_USER, "too many calls in flight");
	/* arguments that do not match the signature never reach the
	 * handler: hubd checks them too, a host written from the spec
	 * alone need not */
	if (hp_msg_decode_request(m->payload, m->len, &req) != 0 ||
	    hp_sig_check_args(&me->sig, req.args, req.args_len) != 0)
		return reply_error_code(g, m->desc.id, HP_ERR_INVALID_PAYLOAD, NULL);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->g = g;
	c->req_id = m->desc.id;
	c->method = me->name;
	/* over a lane, its channels are the lane's: checked, and named for
	 * the handler as ids of the lane's (LG_LANE_CHAN) */
	if (ln != NULL && me->chans &&
	    (rc = lg_chan_adopt(g, ln, &me->sig, req.args, req.args_len, c,
				&adopted, &alen)) != 0) {
		free(c);
		return rc;
	}
	if ((c->lane = ln) != NULL) {
		ln->calls_in++;
		ln->n_in++;
	}
	LG_LIST_PUSH(&g->active, c);
	c->running = 1;
	g->stats.calls_in++;
	if (ln == NULL && me->chans)
		note_channels(g, &me->sig, req.args, req.args_len);
	rc = g->rt->handle(g, c, me->fn, me->ctx, adopted != NULL ? adopted : req.args,
			   adopted != NULL ? alen : req.args_len);
	free(adopted);		/* the handler's runtime copies what it keeps */
	return rc;
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

static int
on_cancel(struct guest *g, struct hp_msg_in *m)
{
	for (struct guest_call *c = g->active; c != NULL; c = c->next)
		if (c->req_id == m->desc.id && c->lane == g->cur_lane && !c->lane_gone)
			c->cancelled = 1;
	return 0;
}

/* The lane's hook (g->lane_gone): its callee is gone for us, so each call
 * over it fails as one through the hub does when the callee dies
 * (Cancelled); the calls it brought are cancelled, their answers
 * dropped. */
static void
lane_gone(struct guest *g, struct lg_lane *ln)
{
	struct out_call c, *e;
	uint32_t pos = 0;

	/* its streams end first, as hubd resets them before the answer */
	lg_chan_lane_gone(g, ln);
	for (struct guest_call *a = g->active; a != NULL; a = a->next) {
		if (a->lane == ln) {
			a->lane = NULL;
			a->lane_gone = 1;
			a->cancelled = 1;
		}
	}
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
		if (c.fn != NULL)
			c.fn(c.ctx, -ECANCELED, NULL, 0);
	}
}

void
lg_call_wire(struct guest *g)
{
	g->lane_gone = lane_gone;
	g->on_msg[HP_MSG_REQUEST] = on_request;
	g->call_ran = call_ran;
	g->on_msg[HP_MSG_RESPONSE] = on_response;
	g->on_msg[HP_MSG_CANCEL] = on_cancel;
}
