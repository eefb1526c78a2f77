/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Calls out: a call of an imported method (import.c registered it)
 * becomes a NATS request, to PREFIX.call.METHOD (one of the hubs
 * exporting it) or, with [import] from, PREFIX.at.HUB.METHOD. Its reply
 * (to our inbox.SEQ) answers the call, with the same kind of error; no
 * reply in time, or the caller's Cancel, sends PREFIX.cancel. A call's
 * chan<T> argument goes with it (istream.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

static void
publish_cancel(struct bridge *b, uint64_t id)
{
	char subject[BR_SUBJECT_MAX], reply[BR_SUBJECT_MAX + BR_MAC_LEN * 2 + 2];
	char token[BR_MAC_LEN * 2 + 1];
	int n;

	snprintf(subject, sizeof(subject), "%s.cancel", b->conf.subject);
	n = snprintf(reply, sizeof(reply), "%s.n.%" PRIu64, b->inbox, id);
	/* the token the request committed to: only we can make it */
	br_trust_cancel_token(b, reply, token);
	snprintf(reply + n, sizeof(reply) - (size_t)n, " %s", token);
	natsConnection_Publish(b->nc, subject, reply, (int)strlen(reply));
}

/* As libnats's callbacks last said, and as the connection is now (a
 * request published while it reconnects would wait in its buffer). */
static int
connected(struct bridge *b)
{
	return b->nc != NULL && atomic_load_explicit(&b->connected, memory_order_relaxed) &&
	    natsConnection_Status(b->nc) == NATS_CONN_STATUS_CONNECTED;
}

/* A call answered here, never sent: the caller's channel, if it gave
 * one, is ended first (every channel given to send on is ended once). */
static void
refuse(struct bridge *b, struct guest_call *c, const struct br_import *imp, uint64_t chan,
       int status, const char *text)
{
	if (imp->chan_arg >= 0)
		guest_chan_reset(b->g, (uint32_t)chan);
	guest_reply_status(c, status, text);
}

/* A request as it is made (br_out), with the text of its subject and
 * headers. */
struct request {
	struct br_out	o;
	char		subject[BR_SUBJECT_MAX], reply[BR_SUBJECT_MAX], to[BR_SUBJECT_MAX];
	char		items[BR_SUBJECT_MAX], ms[16], deadline[24];
	char		commit[BR_MAC_LEN * 2 + 1];
};

/* The request for call id of imp, to hub by name (NULL: from =, or the
 * queue group), its headers set: the caller's signature, timeout
 * (timeout_ms, from now) and deadline, its trace (NULL: none), this hub,
 * and with_stream where its channel's items go. */
static natsStatus
request_make(struct bridge *b, const struct br_import *imp, const char *hub, const uint8_t *args,
	     size_t len, uint64_t id, uint32_t timeout_ms, const char *trace, int with_stream,
	     struct request *rq)
{
	struct br_out *o = &rq->o;
	natsStatus s;

	snprintf(rq->items, sizeof(rq->items), "%s.s.%" PRIu64, b->inbox, id);
	if (hub != NULL)
		snprintf(rq->subject, sizeof(rq->subject), "%s.at.%s.%s", b->conf.subject, hub,
			 imp->remote);
	else if (b->conf.from[0] != '\0')
		snprintf(rq->subject, sizeof(rq->subject), "%s.at.%s.%s", b->conf.subject,
			 b->conf.from, imp->remote);
	else
		snprintf(rq->subject, sizeof(rq->subject), "%s.call.%s", b->conf.subject, imp->remote);
	/* the answer to inbox.SEQ, which the loop reads itself; NATS's "no
	 * responders" to the reply subject, inbox.n.SEQ, which only
	 * libnats's delivery thread hands over whole */
	snprintf(rq->reply, sizeof(rq->reply), "%s.n.%" PRIu64, b->inbox, id);
	snprintf(rq->to, sizeof(rq->to), "%s.%" PRIu64, b->inbox, id);
	snprintf(rq->ms, sizeof(rq->ms), "%u", timeout_ms);
	/* the same, by the wall clock: a request that waited in the socket
	 * of a frozen bridge is known to be late there (hosts' clocks agree:
	 * doc/nats.md, "Deadlines and cancel") */
	snprintf(rq->deadline, sizeof(rq->deadline), "%llu",
		 (unsigned long long)(br_wall_ms() + timeout_ms));
	*o = (struct br_out){ .subject = rq->subject, .reply = rq->reply, .data = args, .len = len };
	s = br_out_header(o, BR_H_ANSWER, rq->to);
	if (s == NATS_OK)
		s = br_out_header(o, BR_H_SIG, imp->sig);
	if (s == NATS_OK)
		s = br_out_header(o, BR_H_TIMEOUT, rq->ms);
	if (s == NATS_OK)
		s = br_out_header(o, BR_H_DEADLINE, rq->deadline);
	if (s == NATS_OK && trace != NULL)
		s = br_out_header(o, BR_H_TRACE, trace);
	if (s == NATS_OK)
		s = br_out_header(o, BR_H_FROM, b->conf.name);
	if (s == NATS_OK && with_stream)
		s = br_out_header(o, BR_H_STREAM, rq->items);
	if (s == NATS_OK && with_stream)
		s = br_out_header(o, BR_H_PACKS, "1");	/* istream.c reads packs */
	/* the answer's MAC is made with our key; the cancel's token is
	 * what hashes to commit (trust.c) */
	if (s == NATS_OK)
		s = br_out_header(o, BR_H_KEY, br_trust_pk_text(b));
	br_trust_cancel_commit(b, rq->reply, rq->commit);
	if (s == NATS_OK)
		s = br_out_header(o, BR_H_CANCEL, rq->commit);
	return s;
}

/* Request rq published alone. */
static natsStatus
request_publish(struct bridge *b, const struct request *rq)
{
	natsMsg *m = NULL;
	natsStatus s = br_out_msg(&rq->o, &m);

	if (s == NATS_OK)
		s = natsConnection_PublishMsg(b->nc, m);
	br_msg_done(b, m);
	return s;
}

static void	fail(struct bridge *b, uint64_t id, const char *text);

void
br_callout_call(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const struct br_import *imp = ctx;
	struct bridge *b = imp->b;
	char text[160];
	struct istream *st = NULL;
	struct request rq;
	struct icall *ic;
	natsStatus s;
	uint64_t id, chan = 0, deadline = guest_call_deadline(c);
	uint32_t timeout_ms = b->conf.timeout_ms;
	const char *hub = NULL;
	uint8_t *kept = NULL;
	size_t off, n;

	if (imp->chan_arg == -2) {
		guest_reply_status(c, -EBADMSG, "more than one channel in a call, or an rx<T>: one chan<T> crosses NATS");
		return;
	}
	if (imp->chan_arg >= 0 &&
	    br_chan_find(&imp->parsed, imp->chan_arg, args, len, &off, &n, &chan) != 0) {
		guest_reply_status(c, -EBADMSG, "arguments do not match the signature");
		return;
	}
	text[0] = '\0';
	/* the caller's deadline bounds [import] timeout; one already past
	 * is never sent (libguest checked it as the call came: it may have
	 * passed since, the loop busy) */
	if (deadline != 0 && deadline <= br_now_ns() + 1000000u) {
		b->late++;
		refuse(b, c, imp, chan, -ETIMEDOUT, "the caller's deadline passed before the call left this hub");
		return;
	}
	if (deadline != 0 && (deadline - b->now_ns) / 1000000u < timeout_ms)
		timeout_ms = (uint32_t)((deadline - b->now_ns) / 1000000u);
	if (!connected(b)) {
		refuse(b, c, imp, chan, -EHOSTUNREACH, "hub-nats is not connected to NATS");
		return;
	}
	if (b->icalls.count >= b->conf.calls_max) {
		/* never sent: like the hub's own refusal, try again later */
		snprintf(text, sizeof(text), "hub-nats has %u calls out in flight already",
			 b->icalls.count);
		refuse(b, c, imp, chan, -EHOSTUNREACH, text);
		return;
	}
	if (b->max_payload > 0 && (int64_t)len > b->max_payload - 1024) {
		snprintf(text, sizeof(text), "the arguments (%zu bytes) are larger than NATS takes (%lld)",
			 len, (long long)b->max_payload);
		refuse(b, c, imp, chan, -EBADMSG, text);
		return;
	}
	/* by name, around a hub that does not answer: the arguments kept,
	 * for the queue group should that hub be gone */
	if ((hub = br_route_pick(b, imp)) != NULL && (kept = malloc(len > 0 ? len : 1)) == NULL)
		hub = NULL;
	if (hp_idtab_reserve(&b->icalls, 1) != 0 ||
	    (imp->chan_arg >= 0 && (st = br_istream_new()) == NULL)) {
		free(kept);
		refuse(b, c, imp, chan, -EREMOTEIO, "hub-nats is out of memory");
		return;
	}
	if (kept != NULL && len > 0)
		memcpy(kept, args, len);
	if (++b->next_seq == 0)
		++b->next_seq;
	id = b->next_seq;
	s = request_make(b, imp, hub, args, len, id, timeout_ms, guest_call_trace(c), st != NULL,
			 &rq);
	/* in the list before the request goes: its first item may come
	 * back before the next turn of the loop */
	if (s == NATS_OK && st != NULL)
		br_istream_add(b, st, id, (uint32_t)chan);
	/* without a stream, with this pass's others to the same subject
	 * (gather.c) */
	if (s == NATS_OK && (st != NULL || br_gather_request(b, &rq.o, id, fail) != 0))
		s = request_publish(b, &rq);
	if (s != NATS_OK) {
		if (st != NULL) {
			br_istream_end(b, st, 1);
			br_istream_free(b, st);
		}
		free(kept);
		snprintf(text, sizeof(text), "NATS: %s", natsStatus_GetText(s));
		guest_reply_status(c, -EHOSTUNREACH, text);	/* br_istream_end reset it */
		return;
	}
	ic = hp_idtab_insert(&b->icalls, id);
	ic->c = c;
	ic->imp = imp;
	ic->sent_ns = br_now_ns();
	ic->hub[0] = '\0';
	if (hub != NULL)
		snprintf(ic->hub, sizeof(ic->hub), "%s", hub);
	ic->args = kept;
	ic->len = len;
	ic->judged = 0;
	ic->cancel_sent = 0;
	ic->timeout_ms = timeout_ms;
	ic->deadline_ns = b->now_ns + (uint64_t)timeout_ms * 1000000u + BR_GRACE_NS;
	b->calls_out++;
}

/* Answers c, the call taken out of the table first: an answer may wait
 * for room on the ring, and libguest serves meanwhile (another call's
 * handler may come in and change the table). */
static void
reply_status(struct guest_call *c, int status, const char *text)
{
	if (guest_reply_status(c, status, text) == -EILSEQ)
		guest_reply_status(c, status, NULL);	/* not UTF-8: the kind alone */
}

/* Call id (if still waiting) failed: its request, gathered in a batch,
 * could not be sent. */
static void
fail(struct bridge *b, uint64_t id, const char *text)
{
	struct icall *ic, call;

	if ((ic = hp_idtab_find(&b->icalls, id)) == NULL)
		return;
	call = *ic;
	hp_idtab_remove(&b->icalls, ic);
	free(call.args);
	reply_status(call.c, -EHOSTUNREACH, text);
}

/* ic, sent by name to a hub that is gone, sent again to the queue
 * group, as it was; 0, or -1 (it is answered "no hub" then). */
static int
resend(struct bridge *b, struct icall *ic)
{
	uint64_t left = ic->deadline_ns - BR_GRACE_NS;
	struct request rq;
	natsStatus s;

	if (left <= b->now_ns + 1000000u)
		return -1;
	left = (left - b->now_ns) / 1000000u;
	s = request_make(b, ic->imp, NULL, ic->args, ic->len, ic->id, (uint32_t)left,
			 guest_call_trace(ic->c), 0, &rq);
	if (s == NATS_OK)
		s = request_publish(b, &rq);
	free(ic->args);
	ic->args = NULL;
	ic->hub[0] = '\0';
	return s == NATS_OK ? 0 : -1;
}

/* The reply m to call id, now. */
static void
reply_now(struct bridge *b, natsMsg *m, uint64_t id)
{
	const char *word = NULL, *from = NULL;
	const char *data = natsMsg_GetData(m);
	size_t len = (size_t)natsMsg_GetDataLength(m);
	char text[1100];
	struct icall *ic, call;
	int status;

	if ((ic = hp_idtab_find(&b->icalls, id)) == NULL)
		return;		/* answered already (a timeout), or not ours */
	if (natsMsg_IsNoResponders(m) && ic->args != NULL && resend(b, ic) == 0)
		return;		/* the hub it named is gone: to the queue group */
	call = *ic;
	hp_idtab_remove(&b->icalls, ic);
	br_tally_answer(b, &call, m);
	free(call.args);
	if (natsMsg_IsNoResponders(m)) {
		snprintf(text, sizeof(text), "no hub on NATS serves %s%s%s", call.imp->remote,
			 b->conf.from[0] != '\0' ? " at hub " : "", b->conf.from);
		reply_status(call.c, -EHOSTUNREACH, text);
		return;
	}
	natsMsgHeader_Get(m, BR_H_STATUS, &word);
	natsMsgHeader_Get(m, BR_H_FROM, &from);
	if (from == NULL || !br_subject_part_ok(from, strlen(from), 0))
		from = "?";
	status = br_status_of(word);
	if (status == 0) {
		guest_reply(call.c, data, len);
		return;
	}
	if (status == 1) {
		snprintf(text, sizeof(text), "a malformed answer from hub %.63s", from);
		status = -EHOSTUNREACH;
	} else if (status == -ECONNREFUSED) {
		/* only hubd makes a hub's error here; for this caller the
		 * remote hub's refusal is that side being unreachable */
		snprintf(text, sizeof(text), "hub %.63s: %.*s", from, (int)(len > 1000 ? 1000 : len),
			 data != NULL ? data : "");
		status = -EHOSTUNREACH;
	} else {
		snprintf(text, sizeof(text), "%.*s", (int)(len > 1023 ? 1023 : len),
			 data != NULL ? data : "");
	}
	reply_status(call.c, status, text);
}

int
br_callout_reply(struct bridge *b, natsMsg *m, const char *seq)
{
	char *end;
	const char *from = NULL;
	uint64_t id;

	if (seq[0] == 'p' && seq[1] == '.') {
		/* anyone may publish on our inbox: only the hub's own answer
		 * (or NATS's "no responders") says whether it runs */
		if (br_trust_answer_ok(b, m))
			br_route_probed(b, seq + 2, m);
		return 0;
	}
	/* on the reply subject: NATS's "no responders", or the answer of a
	 * bridge of before Hub-Answer-To; the same as on inbox.SEQ */
	if (seq[0] == 'n' && seq[1] == '.')
		seq += 2;
	/* a batch of answers; NATS's answer to a batch of requests */
	if (strcmp(seq, "B") == 0) {
		br_gather_answers(b, m, br_callout_reply);
		return 0;
	}
	if (seq[0] == 'b') {
		br_gather_batch_reply(b, m, seq + 1, reply_now);
		return 0;
	}
	id = strtoull(seq, &end, 10);
	if (*seq == '\0' || *end != '\0')
		return 0;
	/* anyone may publish on our inbox: an answer its hub did not make
	 * is dropped (and counted, late or not), and the call waits on for
	 * the one it did */
	if (!br_trust_answer_ok(b, m))
		return 0;
	/* any answer, late ones too, says its hub runs */
	if (natsMsgHeader_Get(m, BR_H_FROM, &from) == NATS_OK && from != NULL &&
	    br_subject_part_ok(from, strlen(from), 0))
		br_route_answered(b, from);
	if (hp_idtab_find(&b->icalls, id) == NULL)
		return 0;
	if (br_istream_hold(b, id, m))
		return 1;
	reply_now(b, m, id);
	return 0;
}

void
br_callout_pump(struct bridge *b)
{
	br_istream_pump(b, reply_now);
}

void
br_callout_scan(struct bridge *b)
{
	struct icall *ic;
	uint64_t late[64];
	uint32_t pos = 0, nlate = 0;
	char text[128];

	while ((ic = hp_idtab_next(&b->icalls, &pos)) != NULL) {
		if (!ic->judged &&
		    b->now_ns >= ic->sent_ns + (uint64_t)b->conf.suspect_ms * 1000000u) {
			ic->judged = 1;
			br_route_unanswered(b, ic);
		}
		if (b->now_ns >= ic->deadline_ns && nlate < 64) {
			late[nlate++] = ic->id;
		} else if (!ic->cancel_sent && guest_call_cancelled(ic->c)) {
			publish_cancel(b, ic->id);
			ic->cancel_sent = 1;
		}
	}
	for (uint32_t i = 0; i < nlate; i++) {
		struct icall call;

		if ((ic = hp_idtab_find(&b->icalls, late[i])) == NULL)
			continue;
		call = *ic;
		hp_idtab_remove(&b->icalls, ic);
		free(call.args);
		if (!call.cancel_sent)
			publish_cancel(b, call.id);
		br_istream_drop(b, call.id);
		br_tally_timeout(b, &call);
		snprintf(text, sizeof(text), "no answer through NATS within %u ms",
			 call.timeout_ms);
		reply_status(call.c, -ETIMEDOUT, text);
	}
}

void
br_callout_start(struct bridge *b)
{
	b->icalls = (struct hp_idtab)HP_IDTAB_INIT(struct icall);
}

void
br_callout_stop(struct bridge *b)
{
	struct icall call;

	br_istream_stop(b);
	while (hp_idtab_take(&b->icalls, &call) == 0) {
		free(call.args);
		reply_status(call.c, -EHOSTUNREACH, "the hub's bridge is stopping");
	}
	hp_idtab_free(&b->icalls);
}
