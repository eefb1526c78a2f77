/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Answers: each call the host makes to a guest waits in that guest's
 * pending table under a request id of the host's (r[shm.id.request-scope])
 * until its Response comes or the guest goes; each answer, the guest's or
 * one the host makes itself, goes to the origin of the call: a calling
 * guest, a control client, or nobody any more. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/answer.h"
#include "daemon/fair.h"
#include "daemon/host.h"
#include "daemon/methods.h"
#include "daemon/tally.h"
#include "proto/builtin.h"

/* -- answers ------------------------------------------------------------- */

void
answer_send(struct hub *h, const struct origin *o, const uint8_t *payload, size_t len,
       struct hp_msg_in *m)
{
	struct hp_meta_entry meta[HP_META_MAX_ENTRIES];
	struct hp_response r = { .meta = { .entries = meta, .cap = HP_META_MAX_ENTRIES } };
	struct peer *p;
	int rc;

	p = o->kind == ORIGIN_PEER ? hub_peer(h, o->peer) : NULL;
	/* an answer that cannot be sent must still end the call (below) */
	if (p != NULL && host_serving(p) && p->epoch == o->epoch &&
	    len > p->ep.lim.max_payload_size) {
		char why[160];

		snprintf(why, sizeof(why), "the answer is larger than its caller takes: %zu bytes "
			 "with its envelope, the caller's max_payload_size is %u", len,
			 p->ep.lim.max_payload_size);
		answer_error(h, o, HP_ERR_USER, why);
		return;
	}
	/* a monitor sees the call end (monitor.c's hook) */
	if (o->watch != 0 && h->hooks.answered != NULL)
		h->hooks.answered(h, o->watch, payload, len);
	switch (o->kind) {
	case ORIGIN_PEER:
		if (p == NULL || !host_serving(p) || p->epoch != o->epoch)
			return;		/* the caller died meanwhile */
		p->inbound--;
		if (m != NULL)
			host_forward(h, p, m, HP_MSG_RESPONSE, o->req_id, 0, p->id);
		else
			host_send(h, p, HP_MSG_RESPONSE, o->req_id, 0, payload, (uint32_t)len);
		return;
	case ORIGIN_CLIENT:
		rc = hp_msg_decode_response(payload, len, &r);
		o->ext->on_done(o->ext, rc, rc == 0 ? &r : NULL);
		return;
	case ORIGIN_NONE:
	case ORIGIN_SINK:
		return;
	}
}

void
answer_error(struct hub *h, const struct origin *o, uint32_t code, const char *why)
{
	uint8_t buf[512];
	struct hp_meta_entry e = { .key = HP_META_HUB_ERROR,
				   .key_len = strlen(HP_META_HUB_ERROR),
				   .type = HP_META_STRING,
				   .value = (const uint8_t *)why,
				   .value_len = strlen(why) };
	struct hp_response r = { .meta = { .entries = &e, .count = 1, .cap = 1 },
				 .result = HP_RESULT_ERR, .error = code };
	uint8_t err[256];
	struct hp_pc_enc enc;
	int64_t n;

	if (code == HP_ERR_USER) {
		hp_pc_enc_init(&enc, err, sizeof(err));
		hp_pc_put_str(&enc, why, strnlen(why, 200));
		r.value = err;
		r.value_len = enc.len;
	}
	if ((n = hp_msg_encode_response(buf, sizeof(buf), &r)) > 0)
		answer_send(h, o, buf, (size_t)n, NULL);
}

void
answer_late(struct hub *h, const struct origin *o)
{
	uint8_t buf[128], err[64];
	struct hp_meta_entry e = { .key = HP_META_ERROR_KIND,
				   .key_len = strlen(HP_META_ERROR_KIND),
				   .type = HP_META_STRING,
				   .value = (const uint8_t *)HP_ERR_KIND_TIMEOUT,
				   .value_len = strlen(HP_ERR_KIND_TIMEOUT) };
	struct hp_response r = { .meta = { .entries = &e, .count = 1, .cap = 1 },
				 .result = HP_RESULT_ERR, .error = HP_ERR_USER };
	struct hp_pc_enc enc;
	int64_t n;

	hp_pc_enc_init(&enc, err, sizeof(err));
	hp_pc_put_str(&enc, ANSWER_LATE_TEXT, strlen(ANSWER_LATE_TEXT));
	r.value = err;
	r.value_len = enc.len;
	if ((n = hp_msg_encode_response(buf, sizeof(buf), &r)) > 0)
		answer_send(h, o, buf, (size_t)n, NULL);
}

void
answer_ok(struct hub *h, const struct origin *o, const uint8_t *value, size_t len)
{
	uint8_t stackbuf[256], *buf = stackbuf;
	size_t cap = len + 8 > sizeof(stackbuf) ? len + 8 : sizeof(stackbuf);
	struct hp_response r = { .result = HP_RESULT_OK, .value = value, .value_len = len };
	int64_t n;

	if (cap > sizeof(stackbuf) && (buf = malloc(cap)) == NULL) {
		answer_error(h, o, HP_ERR_USER, "out of memory");
		return;
	}
	/* empty metadata, Ok(value) */
	n = hp_msg_encode_response(buf, cap, &r);
	answer_send(h, o, buf, n < 0 ? 0 : (size_t)n, NULL);
	if (buf != stackbuf)
		free(buf);
}

/* -- calls the host makes to a guest ------------------------------------- */

const char *
origin_name(struct hub *h, const struct origin *o, char *buf, size_t n)
{
	const struct peer *q;

	switch (o->kind) {
	case ORIGIN_PEER:
		q = hub_peer(h, o->peer);
		snprintf(buf, n, "%s", q != NULL && q->conf != NULL ? q->conf->name : "?");
		break;
	case ORIGIN_CLIENT:
		/* no guest name has a ':' (config_valid_name) */
		snprintf(buf, n, "%s%u", HP_SVC_CALLER_CLIENT,
			 (unsigned)(o->ext->caller & 0xffffffffu));
		break;
	case ORIGIN_SINK:
		snprintf(buf, n, "hub");
		break;
	case ORIGIN_NONE:
	default:
		snprintf(buf, n, "(gone)");
		break;
	}
	return buf;
}

void
answer_init(struct peer *p)
{
	p->pend = (struct hp_idtab)HP_IDTAB_INIT(struct pending);
	p->calls_out = (struct hp_idtab)HP_IDTAB_INIT(struct call_out);
}

void
answer_free(struct peer *p)
{
	hp_idtab_free(&p->pend);
	hp_idtab_free(&p->calls_out);
}

/* The calling guest of o, if o is a guest's call of its current instance. */
static struct peer *
caller_of(struct hub *h, const struct origin *o)
{
	struct peer *c = o->kind == ORIGIN_PEER ? hub_peer(h, o->peer) : NULL;

	return c != NULL && c->epoch == o->epoch ? c : NULL;
}

/* Notes where o's call waits: q's entry e. A guest that reuses a request
 * id still in flight has only the first findable (its own doing). */
static void
index_call(struct hub *h, const struct peer *q, const struct pending *e)
{
	struct peer *c = caller_of(h, &e->o);
	uint64_t key = (uint64_t)e->o.req_id + 1;
	struct call_out *x;

	if (c == NULL || hp_idtab_find(&c->calls_out, key) != NULL ||
	    (x = hp_idtab_insert(&c->calls_out, key)) == NULL)
		return;
	x->callee = q->id;
	x->pend_id = (uint32_t)e->id;
}

static void
unindex_call(struct hub *h, const struct peer *q, const struct pending *e)
{
	struct peer *c = caller_of(h, &e->o);
	struct call_out *x;

	if (c != NULL && (x = hp_idtab_find(&c->calls_out, (uint64_t)e->o.req_id + 1)) != NULL &&
	    x->callee == q->id && x->pend_id == e->id)
		hp_idtab_remove(&c->calls_out, x);
}

void
answer_done(struct hub *h, struct peer *q, struct pending *e)
{
	unindex_call(h, q, e);
	fair_done(h, q, e);
	hp_idtab_remove(&q->pend, e);
}

struct pending *
answer_find_call(struct hub *h, const struct peer *p, uint32_t req_id, struct peer **qp)
{
	const struct call_out *x = hp_idtab_find(&p->calls_out, (uint64_t)req_id + 1);
	struct pending *e;
	struct peer *q;

	if (x == NULL || (q = hub_peer(h, x->callee)) == NULL ||
	    (e = hp_idtab_find(&q->pend, x->pend_id)) == NULL || caller_of(h, &e->o) != p ||
	    e->o.req_id != req_id)
		return NULL;
	*qp = q;
	return e;
}

/* Sends a Request to guest p on behalf of o. payload is the whole Request
 * payload (metadata and arguments), a guest's message m when it comes
 * from one (its slot handed on as it is). r[shm.topology.hub.calls]: the
 * host calls guests as guests call the host;
 * r[shm.topology.hub.communication]: a guest's call to another guest's
 * method is one the host makes. The request id goes to *idp when not
 * NULL. */
int
answer_call(struct hub *h, struct peer *p, uint64_t method_id,
	    const uint8_t *payload, uint32_t len, const struct origin *o, uint32_t *idp,
	    struct hp_msg_in *m)
{
	struct pending *e;
	uint32_t id;

	/* r[shm.id.request-scope]: ids are ours per guest-host pair */
	do {
		id = p->next_req++;
	} while (id == 0 || hp_idtab_find(&p->pend, id) != NULL);
	if ((e = hp_idtab_insert(&p->pend, id)) == NULL)
		return -ENOMEM;
	e->o = *o;
	e->method_id = method_id;
	e->since_ns = hp_now_ns();
	e->client = o->kind == ORIGIN_CLIENT ? o->ext->caller : 0;
	index_call(h, p, e);
	fair_sent(h, p, e);
	if (idp != NULL)
		*idp = id;
	p->stats.calls_out++;
	if (m != NULL)
		host_forward(h, p, m, HP_MSG_REQUEST, id, method_id,
			     o->kind == ORIGIN_PEER ? o->peer : 0);
	else
		host_send(h, p, HP_MSG_REQUEST, id, method_id, payload, len);
	return 0;
}

uint32_t
answer_client_calls(struct hub *h, uint64_t caller)
{
	const struct pending *e;
	uint32_t n = 0;

	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		uint32_t pos = 0;

		while ((e = hp_idtab_next(&h->peers[i].pend, &pos)) != NULL)
			n += e->client == caller;
	}
	return n;
}

void
answer_call_too_large(char *why, size_t cap, const struct peer *q, size_t len)
{
	snprintf(why, cap, "the arguments are larger than guest %s takes: %zu bytes with the "
		 "call's envelope, its max_payload_size is %u", q->conf->name, len,
		 q->ep.lim.max_payload_size);
}

/* -- a guest that goes ---------------------------------------------------- */

void
answer_detach(struct hub *h, struct peer *p)
{
	char why[320];
	struct pending *e;
	uint32_t pos = 0;

	/* calls to p: their callers get an error naming the method and how
	 * p ended */
	while ((e = hp_idtab_next(&p->pend, &pos)) != NULL) {
		const struct method *m = methods_by_id(h, e->method_id);
		struct origin o = e->o;

		unindex_call(h, p, e);
		fair_done(h, p, e);
		e->o.kind = ORIGIN_NONE;
		answer_error(h, &o, HP_ERR_CANCELLED,
			     tally_gone(h, p, m != NULL ? m->name : NULL, why, sizeof(why)));
	}
	hp_idtab_clear(&p->pend);
	hp_idtab_clear(&p->calls_out);
	/* calls by p routed elsewhere: their answers have nobody to go to,
	 * they count as p's calls no more, and their callee is told with
	 * Cancel (advisory), as for a control client gone: a handler that
	 * waits or computes for p may stop */
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		struct peer *q = &h->peers[i];

		pos = 0;
		while ((e = hp_idtab_next(&q->pend, &pos)) != NULL) {
			if (e->o.kind == ORIGIN_PEER && e->o.peer == p->id) {
				e->o.kind = ORIGIN_NONE;
				fair_orphan(h, q, e);
				host_send(h, q, HP_MSG_CANCEL, (uint32_t)e->id, 0, NULL, 0);
			}
		}
	}
}
