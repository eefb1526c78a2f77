/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's calls in: each Request to its method's handler, run by the
 * runtime in use, and the answer back the way the call came (replies,
 * errors, Cancel seen, the answered calls kept a while); the service
 * loop's Request and Cancel, which this file fills. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestlib/internal.h"
#include "proto/list.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/builtin.h"

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
		rc = lg_call_send(g, c->lane, HP_MSG_RESPONSE, c->req_id, 0, head, (size_t)n,
			     r->value, r->value_len, NULL);
	if (rc == -EPIPE && ln != NULL)
		rc = 0;		/* the lane closed meanwhile: the same */
	if (c->nchans > 0)
		lg_chan_replied(c);
	if (c->nrx > 0)
		lg_chan_rx_answered(g, c);
	if (rc == -EMSGSIZE) {
		/* The caller must get an answer: a short error instead, which
		 * names the method (the limit is the pool's largest class, or
		 * max_payload_size outside the shared pool) */
		char msg[HP_METHOD_NAME_MAX + 80];
		uint8_t err[sizeof(msg) + 8];
		struct hp_pc_enc e;
		struct hp_response tb = { .result = HP_RESULT_ERR, .error = HP_ERR_USER };
		int mn = snprintf(msg, sizeof(msg), "%s: its result of %zu bytes is larger "
				  "than the hub carries", c->method, r->value_len);

		hp_pc_enc_init(&e, err, sizeof(err));
		hp_pc_put_str(&e, msg, (size_t)mn);
		/* envelope alone, the error string follows it */
		if ((n = hp_msg_encode_response(head, sizeof(head), &tb)) > 0)
			lg_call_send(g, c->lane, HP_MSG_RESPONSE, c->req_id, 0, head, (size_t)n,
				err, e.len, NULL);
	}
	if (c->lane != NULL)
		c->lane->calls_in--;
	else
		g->ep.sleep_first = 1;	/* hubd passes it on: wait.c */
	/* out of the calls being handled (thousands, on microthreads) */
	HP_LIST_UNLINK(&g->active, c);
	c->answered = 1;
	if (c->running)
		HP_LIST_PUSH(&g->answered, c);	/* freed once its handler returns */
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
		HP_LIST_UNLINK(&g->answered, c);
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

	if (lg_buf_bad(result, len))
		return -EINVAL;		/* unanswered: a right answer may follow */
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
	uint8_t buf[LG_ERR_TEXT_MAX + 8], shown[LG_ERR_TEXT_MAX];
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
		/* the caller (and hubd on the way) would refuse text that is
		 * not UTF-8: a bad byte becomes U+FFFD rather than the answer
		 * being lost, which would leave the caller waiting */
		n = hp_utf8_lossy(shown, sizeof(shown), (const uint8_t *)text, strlen(text));
		text = (const char *)shown;
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

/* A User error is guest_reply_status's -EREMOTEIO: its text made UTF-8
 * and cut the same way, never bytes the caller cannot decode */
int
guest_reply_error(struct guest_call *c, const char *message)
{
	return guest_reply_status(c, -EREMOTEIO, message);
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
	    guest_call_with(g, HP_SVC_CALLER, arg, n, res, sizeof(res), &len,
			    10000, &lg_own_call) != 0 ||
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
	if (code == HP_ERR_USER) {
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_str(&e, message, strlen(message));
		r.value = buf;
		r.value_len = e.len;
	}
	return respond(c, &r);
}

#define LATE_TEXT	"the deadline passed before the call started"

/* The answer to a call whose deadline has passed before its handler
 * started: the timeout a callee answers (guest_reply_status -ETIMEDOUT,
 * error.kind "timeout"), as hubd does in its place. */
static const struct hp_response *
late_response(struct hp_response *r, struct hp_meta_entry *me, uint8_t *buf, size_t cap)
{
	struct hp_pc_enc e;

	*me = (struct hp_meta_entry){ .key = HP_META_ERROR_KIND,
				      .key_len = strlen(HP_META_ERROR_KIND),
				      .type = HP_META_STRING,
				      .value = (const uint8_t *)HP_ERR_KIND_TIMEOUT,
				      .value_len = strlen(HP_ERR_KIND_TIMEOUT) };
	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_str(&e, LATE_TEXT, strlen(LATE_TEXT));
	*r = (struct hp_response){ .meta = { .entries = me, .count = 1, .cap = 1 },
				   .result = HP_RESULT_ERR, .error = HP_ERR_USER,
				   .value = buf, .value_len = e.len };
	return r;
}

int
lg_call_late(struct guest *g, struct guest_call *c)
{
	struct hp_meta_entry me;
	struct hp_response r;
	uint8_t buf[64];

	if (!hp_deadline_passed(c->meta.deadline_ns, hp_now_ns()))
		return 0;
	respond(c, late_response(&r, &me, buf, sizeof(buf)));
	g->call_ran(g, c);
	return 1;
}

uint64_t
guest_call_deadline(const struct guest_call *c)
{
	return c->meta.deadline_ns;
}

const char *
guest_call_trace(const struct guest_call *c)
{
	return c->trace[0] != '\0' ? c->trace : NULL;
}

/* A request's chan<T> arguments are channels the host has just opened for
 * us to send on (r[shm.id.channel-parity]: even): whatever we knew of an
 * earlier channel with the same id is over. Its rx<T> arguments are
 * channels the host opened to send on to us, with no credit: offered,
 * for the handler to accept (guest_chan_accept grants the window). */
static void
note_channels(struct guest *g, struct guest_call *c, const struct hp_sig *sig,
	      const uint8_t *args, size_t len)
{
	struct lg_chans *cs = &g->chans;
	struct hp_pc_dec d;
	uint64_t id;
	uint8_t t;

	hp_pc_dec_init(&d, args, len);
	for (uint8_t i = 0; i < sig->nargs; i++) {
		if (!hp_sig_is_chan(t = hp_sig_arg_type(sig, i))) {
			if (hp_sig_skip(&d, sig, sig->args[i]) != 0)
				return;		/* the handler will say so */
			continue;
		}
		id = hp_pc_get_u64(&d);
		if (d.err != 0)
			return;
		if (id == 0 || id >= cs->max || id % 2 != 0 || cs->tx[id].open)
			continue;
		if (t == HP_T_CHAN) {
			/* ours until we end it or answer (lg_chan_replied) */
			cs->tx[id].ended = 0;
			cs->tx[id].serial = ++g->chan_serial;
			c->chans[c->nchans] = (uint32_t)id;
			c->serials[c->nchans++] = cs->tx[id].serial;
			continue;
		}
		/* r[shm.flow.channel-activate]: one the host activated, not
		 * one we receive on already */
		if (cs->rx[id].open || cs->rx[id].offered ||
		    hp_chan_state(lg_chan_entry(cs, (uint32_t)id)) != HP_CHAN_ACTIVE)
			continue;
		cs->rx[id] = (struct rx_chan){ .offered = 1 };
		cs->tx[id] = (struct tx_chan){ .ended = 1 };	/* not ours to send on */
		c->rx[c->nrx++] = (uint32_t)id;
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
	struct hp_callmeta cm;
	uint8_t *adopted = NULL;
	const char *why;
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
	/* its deadline and trace (hubd checked them too; a lane's peer
	 * or a host from the spec alone may not have) */
	if (hp_callmeta_read(&req.meta, &cm, &why) != 0)
		return reply_error_code(g, m->desc.id, HP_ERR_INVALID_PAYLOAD, why);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->g = g;
	c->req_id = m->desc.id;
	c->method = me->name;
	c->meta = cm;
	if (cm.has_trace)
		hp_traceparent_format(&cm, c->trace);
	/* never started once its deadline has passed: answered timeout */
	if (hp_deadline_passed(cm.deadline_ns, hp_now_ns())) {
		struct hp_meta_entry lme;
		struct hp_response lr;
		uint8_t lbuf[64];

		if ((c->lane = ln) != NULL) {
			ln->calls_in++;
			ln->n_in++;
		}
		return respond(c, late_response(&lr, &lme, lbuf, sizeof(lbuf)));
	}
	/* over a lane, its channels are the lane's: checked, and named for
	 * the handler as ids of the lane's (LG_LANE_CHAN) */
	if (ln != NULL && (me->chans || me->rx) &&
	    (rc = lg_chan_adopt(g, ln, &me->sig, req.args, req.args_len, c,
				&adopted, &alen)) != 0) {
		free(c);
		return rc;
	}
	if ((c->lane = ln) != NULL) {
		ln->calls_in++;
		ln->n_in++;
	}
	HP_LIST_PUSH(&g->active, c);
	c->running = 1;
	g->stats.calls_in++;
	if (ln == NULL && (me->chans || me->rx))
		note_channels(g, c, &me->sig, req.args, req.args_len);
	rc = g->rt->handle(g, c, me->fn, me->ctx, adopted != NULL ? adopted : req.args,
			   adopted != NULL ? alen : req.args_len);
	free(adopted);		/* the handler's runtime copies what it keeps */
	return rc;
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
	/* its streams end first, as hubd resets them before the answer */
	lg_chan_lane_gone(g, ln);
	for (struct guest_call *a = g->active; a != NULL; a = a->next) {
		if (a->lane == ln) {
			a->lane = NULL;
			a->lane_gone = 1;
			a->cancelled = 1;
		}
	}
	lg_out_lane_gone(g, ln);
}

void
lg_call_in_wire(struct guest *g)
{
	g->lane_gone = lane_gone;
	g->on_msg[HP_MSG_REQUEST] = on_request;
	g->on_msg[HP_MSG_CANCEL] = on_cancel;
	g->call_ran = call_ran;
}
