/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Routing: each Request, from a guest or a control client, goes to its
 * target (a host service, or the guest that registered the method: a call
 * the host makes, answer.c); each Response is matched to the call it
 * answers and handed to its origin (answer.c), after the stream it
 * carries (streams.c, relay.c); a Cancel follows its call. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/answer.h"
#include "daemon/fair.h"
#include "daemon/host.h"
#include "daemon/lanes.h"
#include "daemon/methods.h"
#include "daemon/monitor.h"
#include "daemon/pcjson.h"
#include "daemon/pool.h"
#include "daemon/relay.h"
#include "daemon/upload.h"
#include "daemon/request.h"
#include "daemon/route.h"
#include "daemon/services.h"
#include "daemon/streams.h"
#include "proto/builtin.h"

/* -- messages from a guest ---------------------------------------------- */

/* After p's call went to q: p is read no more for now if q is backlogged
 * (host.c), or while it has its share of q in flight (fair.c). Never
 * while anyone waits on p: a call routed to it (a guest's or a control
 * client's), a stream of its own calls, one it receives. Its ring would
 * hold the answer, the item or the credit they wait for, unread while q
 * is: a guest waiting on p may be what keeps q from answering (A calls
 * B, B calls A back), and whoever waits on p, waits for q. A call routed
 * to p ends its hold (fair_sent). */
static void
hold_caller(struct peer *p, struct peer *q)
{
	if (p->pend.count != 0 || p->relays != 0 || p->streaming != 0 || p->hold_off == q->id)
		return;
	if (host_backlogged(q))
		host_hold(p, q, HOLD_BACKLOG);
	if (fair_over_share(q, p->id))
		host_hold(p, q, HOLD_SHARE);
}

/* Whether one more of p's requests waiting in a callee's backlog would
 * put p over its pool quota (host.c charges it to p), why says so. Past
 * it p would be ended (pool.c); a caller that serves a call is never
 * held (hold_caller), so an honest one that fans out to a callee slower
 * than its calls would be: it is refused that call instead. */
static int
over_quota(struct hub *h, struct peer *p, const struct peer *q, uint32_t len, char *why,
	   size_t n)
{
	struct pool_use u;
	char text[160];

	pool_usage(h, p, &u);
	if (u.max_slots == 0 || (u.slots < u.max_slots && u.bytes + len <= u.max_bytes &&
				 u.mem + len <= u.max_mem))
		return 0;
	/* the bound it would pass with this call: hubd's memory only if not
	 * the slots' */
	if (u.slots < u.max_slots && u.bytes + len <= u.max_bytes)
		u.mem += len;
	pool_use_text(&u, text, sizeof(text));
	snprintf(why, n, "guest %s is behind: this caller's calls waiting for it reached "
		 "its pool quota: %s", q->conf->name, text);
	return 1;
}

void
route_request(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_request req = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct origin o = { .kind = ORIGIN_PEER, .peer = p->id, .epoch = p->epoch,
			    .req_id = m->desc.id };
	struct method *meth = methods_by_id(h, m->desc.method_id);
	const char *bad_meta;
	struct peer *q;
	char why[320];
	int bad;

	p->stats.calls_in++;
	p->inbound++;
	if (meth == NULL) {
		answer_error(h, &o, HP_ERR_UNKNOWN_METHOD, "no such method");
		return;
	}
	bad = hp_msg_decode_request(m->payload, m->len, &req) != 0 ||
	    hp_sig_check_args(&meth->sig, req.args, req.args_len) != 0;
	/* its deadline and trace (the monitor shows the trace): kept for
	 * hubctl calls, passed on as they are (the payload goes on whole) */
	bad_meta = NULL;
	if (!bad && hp_callmeta_read(&req.meta, &o.meta, &bad_meta) != 0)
		memset(&o.meta, 0, sizeof(o.meta));
	if (h->monitors != NULL)
		monitor_begin(h, &o, p, hub_peer(h, meth->owner), meth,
			      bad ? NULL : req.args, req.args_len);
	if (bad) {
		char text[HP_SIG_MAX_LEN + 128];

		snprintf(text, sizeof(text), "arguments do not match the signature of %s: %s",
			 meth->name, meth->signature);
		answer_error(h, &o, HP_ERR_INVALID_PAYLOAD, text);
		return;
	}
	if (bad_meta != NULL) {
		answer_error(h, &o, HP_ERR_INVALID_PAYLOAD, bad_meta);
		return;
	}
	/* a call whose deadline has passed goes nowhere */
	if (hp_deadline_passed(o.meta.deadline_ns, hp_now_ns())) {
		answer_late(h, &o);
		return;
	}
	if (meth->owner == 0) {
		services_call(h, p, meth, &o, req.args, req.args_len);
		return;
	}
	if (!methods_live(h, meth)) {
		answer_error(h, &o, HP_ERR_USER,
				   methods_unavailable(h, meth, why, sizeof(why)));
		return;
	}
	q = hub_peer(h, meth->owner);
	if (p->inbound > h->conf.calls_in_flight) {
		answer_error(h, &o, HP_ERR_USER, "too many calls in flight");
		return;
	}
	if (host_would_queue(q) && over_quota(h, p, q, m->len, why, sizeof(why))) {
		answer_error(h, &o, HP_ERR_USER, why);
		return;
	}
	/* a guest on the fixed pools only takes max_payload_size */
	if (m->len > q->ep.lim.max_payload_size) {
		answer_call_too_large(why, sizeof(why), q, m->len);
		answer_error(h, &o, HP_ERR_USER, why);
		return;
	}
	if (hp_sig_takes(&meth->sig, HP_T_RX)) {
		/* a stream the caller sends: upload.c carries it, and a
		 * lane later calls (the guests move it there) */
		upload_call(h, p, q, meth, m, &req, &o);
		lanes_offer(h, p, q, meth, monitor_watches);
		hold_caller(p, q);
		return;
	}
	for (uint8_t i = 0; i < meth->sig.nargs; i++) {
		if (hp_sig_arg_type(&meth->sig, i) == HP_T_CHAN) {
			/* a channel of the caller's: relay.c carries it, and
			 * a lane later calls (lanes.c) */
			relay_call(h, p, q, meth, m, &req, &o);
			lanes_offer(h, p, q, meth, monitor_watches);
			hold_caller(p, q);
			return;
		}
	}
	if (answer_call(h, q, m->desc.method_id, m->payload, m->len, &o, NULL, m) != 0) {
		answer_error(h, &o, HP_ERR_USER, "out of memory");
		return;
	}
	/* later calls of this method may go straight to q (lanes.c), unless
	 * a monitor watches them (monitor.c) */
	lanes_offer(h, p, q, meth, monitor_watches);
	hold_caller(p, q);
}

/* A guest's answer that carries the hub.error entry the host gives its
 * own errors (proto/builtin.h) loses it: a caller takes an error with it
 * for the hub's. The answer without it goes in *copy (buf malloc'd,
 * freed by the caller); 0, 1 when there was none, -ENOMEM. */
static int
strip_hub_error(struct hp_response *r, const struct hp_msg_in *m,
		struct hp_msg_in *copy, uint8_t **buf)
{
	uint32_t i, keep = 0;
	int64_t n;

	for (i = 0; i < r->meta.count; i++) {
		const struct hp_meta_entry *e = &r->meta.entries[i];

		if (e->key_len == strlen(HP_META_HUB_ERROR) &&
		    memcmp(e->key, HP_META_HUB_ERROR, e->key_len) == 0)
			continue;
		r->meta.entries[keep++] = *e;
	}
	if (keep == r->meta.count)
		return 1;
	r->meta.count = keep;
	if ((*buf = malloc(m->len)) == NULL)
		return -ENOMEM;
	/* shorter than it was: it fits */
	n = hp_msg_encode_response(*buf, m->len, r);
	*copy = (struct hp_msg_in){ .desc = m->desc, .payload = *buf,
				    .len = n < 0 ? 0 : (uint32_t)n };
	return 0;
}

void
route_response(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct pending *e = hp_idtab_find(&p->pend, m->desc.id);
	struct hp_msg_in copy;
	uint8_t *buf = NULL;
	struct origin o;
	int rc;

	if (e == NULL) {
		/* answers nothing we asked */
		host_fault(h, p, DEATH_VIOLATION, "shm.id.request-id");
		return;
	}
	o = e->o;
	answer_done(h, p, e);
	/* a stream the call carries ends with its answer */
	if (o.chan != 0) {
		streams_over(h, p, m->desc.id, o.chan);
		upload_response(h, p, m->desc.id);
	}
	rc = hp_msg_decode_response(m->payload, m->len, &r);
	if (rc == 0 && (rc = strip_hub_error(&r, m, &copy, &buf)) == 0)
		m = &copy;	/* sent on as a copy */
	else if (rc == 1)
		rc = 0;
	/* a stream relayed to a guest: its items and end go first */
	if (o.chan != 0 && relay_response(h, p, m->desc.id, &o, m, rc == 0)) {
		free(buf);
		return;
	}
	if (rc == -ENOMEM)
		answer_error(h, &o, HP_ERR_USER, "out of memory");
	else if (rc != 0) {
		answer_error(h, &o, HP_ERR_INVALID_PAYLOAD,
				   "the guest's answer does not decode");
		host_fault(h, p, DEATH_VIOLATION, "shm.payload.encoding");
	} else
		answer_send(h, &o, m->payload, m->len, m);
	free(buf);
}

void
route_cancel(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	struct peer *q;
	struct pending *e;

	/* Pass it on to where we routed the call (advisory); a Cancel of a
	 * call answered already, or never made, goes nowhere. */
	if ((e = answer_find_call(h, p, m->desc.id, &q)) != NULL)
		host_send(h, q, HP_MSG_CANCEL, (uint32_t)e->id, 0, NULL, 0);
}

/* -- calls from control clients ----------------------------------------- */

/* Arguments refused, with the method's signature as people write it, in
 * c->why: "kv.set takes (str, str) -> unit: argument 2 missing". */
static const char * __attribute__((format(printf, 3, 4)))
args_refused(struct ext_call *c, const struct method *m, const char *fmt, ...)
{
	char type[HP_SIG_MAX_LEN + 1];
	size_t off;
	va_list ap;

	off = (size_t)snprintf(c->why, sizeof(c->why), "%s takes (", m->name);
	for (uint8_t i = 0; i < m->sig.nargs && off < sizeof(c->why); i++) {
		hp_sig_type_text(&m->sig, m->sig.args[i], type, sizeof(type));
		off += (size_t)snprintf(c->why + off, sizeof(c->why) - off, "%s%s",
					i > 0 ? ", " : "", type);
	}
	hp_sig_type_text(&m->sig, m->sig.ret, type, sizeof(type));
	if (off < sizeof(c->why))
		off += (size_t)snprintf(c->why + off, sizeof(c->why) - off, ") -> %s: ", type);
	if (off < sizeof(c->why)) {
		va_start(ap, fmt);
		vsnprintf(c->why + off, sizeof(c->why) - off, fmt, ap);
		va_end(ap);
	}
	return c->why;
}

/* Whether a client may call m with nargs arguments now: every argument
 * but channels given, its guest up. 0, or -errno with why. */
static int
client_call_checked(struct hub *h, struct ext_call *c, const struct method *m, int nargs,
		    const char **why)
{
	int want = 0;

	/* the caller gives every argument but chan<T>s, which we open; an
	 * rx<T>'s is "-", the stream it sends */
	for (uint8_t i = 0; i < m->sig.nargs; i++)
		want += hp_sig_arg_type(&m->sig, i) != HP_T_CHAN;
	if (nargs < want) {
		uint8_t i;
		int k = 0;

		for (i = 0; i < m->sig.nargs; i++)
			if (hp_sig_arg_type(&m->sig, i) != HP_T_CHAN && k++ == nargs)
				break;
		*why = i < m->sig.nargs && hp_sig_arg_type(&m->sig, i) == HP_T_RX ?
		    args_refused(c, m, "argument %d missing: its stream is the caller's "
				 "to send: give - for it, the items after (hubctl: on its "
				 "stdin, a line each)", nargs + 1) :
		    args_refused(c, m, "argument %d missing", nargs + 1);
		return -EINVAL;
	}
	if (nargs > want) {
		*why = args_refused(c, m, "%d arguments given, %d taken", nargs, want);
		return -EINVAL;
	}
	if (!methods_live(h, m)) {
		*why = methods_unavailable(h, m, c->why, sizeof(c->why));
		return -EHOSTDOWN;
	}
	return 0;
}

/* A client's arguments to m, from their text, into e; a chan<T> argument
 * opened in p's table (c->chan) for the client to see its items. 0, or
 * -errno with why (the caller closes a channel it opened). */
static int
client_args(struct hub *h, struct ext_call *c, const struct method *m, struct peer *p,
	    struct origin *o, const struct ctl_arg *args, struct hp_pc_enc *e,
	    const char **why)
{
	int rc, next = 0;

	for (uint8_t i = 0; i < m->sig.nargs; i++) {
		if (hp_sig_arg_type(&m->sig, i) == HP_T_RX) {
			/* an rx<T>: the client sends it ("-"), we send on b */
			int64_t id = -EINVAL;

			if (args[next].len != 1 || args[next].s[0] != '-') {
				*why = args_refused(c, m, "argument %d is the caller's stream: "
						    "give - for it, the items after (hubctl: on "
						    "its stdin, a line each)", next + 1);
				return -EINVAL;
			}
			next++;
			if (p != NULL && c->chan == 0 && c->up == NULL &&
			    (id = upload_client_open(h, p, c->caller)) >= 0) {
				c->chan = o->chan = (uint32_t)id;
				c->item = hp_sig_chan_item(&m->sig, i);
			}
			if (p == NULL) {
				/* hub.sink: cmd_call.c feeds it itself */
				*why = "only hub.sink - is fed by hubd itself";
				return -EINVAL;
			}
			if (id < 0) {
				*why = id == -EUSERS ? "no channel available: this user's calls "
				    "hold channels_per_caller streams of the guest already" :
				    "no channel available";
				return -EAGAIN;
			}
			hp_pc_put_u64(e, (uint64_t)id);
			continue;
		}
		if (hp_sig_arg_type(&m->sig, i) != HP_T_CHAN) {
			char what[384];

			/* too large is said below, with the limit */
			if ((rc = pcjson_encode_arg(e, &m->sig, m->sig.args[i], args[next].s,
						    args[next].len, what, sizeof(what))) != 0 &&
			    e->err == 0) {
				*why = rc == -EINVAL ? args_refused(c, m, "argument %d %s", next + 1,
								    what) : "out of memory";
				return rc;
			}
			next++;
			continue;
		}
		/* a chan<T>: we receive it, the client sees the items */
		int64_t id = p == NULL || c->chan != 0 ? -EINVAL :
		    streams_open_client(h, p, o, c->caller);

		if (id < 0 && p == NULL) {
			/* hub.sink: the caller sends (cmd_call.c, "-") */
			*why = args_refused(c, m, "its stream is the caller's to send: give - "
					    "for the channel, the items after (hubctl: on "
					    "its stdin, a line each)");
			return -EINVAL;
		}
		if (id < 0) {
			*why = id == -EUSERS ? "no channel available: this user's calls hold "
			    "channels_per_caller streams of the guest already" :
			    "no channel available";
			return -EAGAIN;
		}
		c->chan = o->chan = (uint32_t)id;
		c->item = hp_sig_chan_item(&m->sig, i);
		hp_pc_put_u64(e, (uint64_t)id);
	}
	if (e->err != 0) {
		*why = "arguments larger than max_payload_size";
		return -EMSGSIZE;
	}
	return 0;
}

int
route_client_call(struct hub *h, struct ext_call *c, const char *method,
		  const struct ctl_arg *args, int nargs, const char **why)
{
	const struct method *m = methods_find(h, method);
	struct origin o = { .kind = ORIGIN_CLIENT, .ext = c };
	struct hp_pc_enc e;
	struct peer *p = NULL;
	uint8_t *buf;
	size_t cap = h->conf.params.max_payload_size;
	uint8_t meta[HP_CALLMETA_MAX];
	uint32_t req_id;
	int64_t n;
	int rc;

	if (m == NULL) {
		/* named as asked (cut to 64 bytes, as hub.signature's) */
		snprintf(c->why, sizeof(c->why), "no such method: %.64s", method);
		*why = c->why;
		return -ENOENT;
	}
	if ((rc = client_call_checked(h, c, m, nargs, why)) != 0)
		return rc;
	p = hub_peer(h, m->owner);
	if (p != NULL)
		cap = p->ep.lim.max_payload_size;	/* the variable pool's, if it uses it */
	if ((buf = malloc(cap)) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	c->chan = 0;
	c->sig = m->sig;		/* the method may go before its answer comes */
	snprintf(c->method, sizeof(c->method), "%s", m->name);
	hp_pc_enc_init(&e, buf, cap);
	/* the client's deadline and trace (cmd_call.c), else none */
	o.meta = c->meta;
	n = hp_callmeta_encode(meta, sizeof(meta), &o.meta);	/* fits */
	hp_pc_put_raw(&e, meta, (size_t)n);
	if (hp_deadline_passed(o.meta.deadline_ns, hp_now_ns())) {
		/* too late already: it goes nowhere, as a guest's */
		c->peer = 0;
		answer_late(h, &o);
		rc = 0;
		goto out;
	}
	if ((rc = client_args(h, c, m, p, &o, args, &e, why)) != 0)
		goto out;
	if (h->monitors != NULL)
		monitor_begin(h, &o, NULL, p, m, buf + n, e.len - (size_t)n);
	if (p == NULL) {
		c->peer = 0;
		services_call(h, NULL, m, &o, buf + n, e.len - (size_t)n);
	} else {
		c->peer = p->id;
		if ((rc = answer_call(h, p, m->id, buf, (uint32_t)e.len, &o, &req_id, NULL)) != 0)
			*why = "out of memory";
		else if (c->chan != 0 && hp_sig_takes(&m->sig, HP_T_RX))
			upload_client_start(h, c, p, c->chan, req_id);	/* b freed if it fails */
		else if (c->chan != 0)
			p->chans[c->chan].o.req_id = req_id;	/* for streams_over */
	}
out:
	if (rc != 0 && c->chan != 0) {
		streams_unopen(p, c->chan);
		c->chan = 0;
	}
	free(buf);
	return rc;
}

void
route_client_consumed(struct hub *h, struct ext_call *x, uint32_t bytes)
{
	struct peer *p = hub_peer(h, x->peer);

	if (p != NULL && p->state == PEER_UP)
		streams_consumed(h, p, x, bytes);
}

/* The client went away (closed, or dropped for not reading): its answer
 * has nobody to go to, the guest is told with Cancel (advisory), and its
 * stream is stopped (streams_abandon: a Reset, no more credit) until the
 * guest ends it or answers (streams_over). */
void
route_client_abandon(struct hub *h, struct ext_call *x)
{
	struct peer *p = hub_peer(h, x->peer);
	struct pending *e;
	uint32_t pos = 0;

	if (x->on_abandon != NULL) {
		x->on_abandon(x);
		return;
	}
	if (x->up != NULL)	/* its upload ends: the callee gets a Reset */
		upload_client_end(h, x, 1);
	if (p == NULL)
		return;
	while ((e = hp_idtab_next(&p->pend, &pos)) != NULL) {
		if (e->o.kind != ORIGIN_CLIENT || e->o.ext != x)
			continue;
		e->o.kind = ORIGIN_NONE;
		e->o.ext = NULL;
		host_send(h, p, HP_MSG_CANCEL, (uint32_t)e->id, 0, NULL, 0);
	}
	streams_abandon(h, p, x);
}
