/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Imports: what other hubs announce on PREFIX.announce, where it matches
 * [import] methods, is registered on this hub (under [import] prefix),
 * and a call of it becomes a NATS request: to PREFIX.call.METHOD (one of
 * the hubs exporting it) or, with [import] from, PREFIX.at.HUB.METHOD.
 * Its reply (to our inbox.SEQ) answers the call, with the same kind of
 * error; no reply in time, or the caller's Cancel, sends PREFIX.cancel.
 * Announcements are untrusted: names, signatures and sizes checked,
 * hubs and methods bounded. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nats/hubnats.h"

struct icall {
	uint64_t		id;		/* SEQ in the reply subject */
	uint64_t		deadline_ns;
	struct guest_call	*c;
	const struct br_import	*imp;
	int			cancel_sent;
};

/* The caller waits this much longer than it tells the callee, so that the
 * callee's own "timeout" (which names where) comes first. */
#define GRACE_NS	(500ull * 1000000)

static void
publish_cancel(struct bridge *b, uint64_t id)
{
	char subject[BR_SUBJECT_MAX], reply[BR_SUBJECT_MAX];

	snprintf(subject, sizeof(subject), "%s.cancel", b->conf.subject);
	snprintf(reply, sizeof(reply), "%s.%" PRIu64, b->inbox, id);
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

/* A call's chan<T> argument, fed from NATS: the exporting side publishes
 * the items to inbox.s.SEQ; each is sent on the caller's channel (a
 * send that would wait for credit waits here instead, the item kept),
 * and what the caller took is acked to the sender's credit subject, so
 * a slow reader here slows the writer there. The call's answer waits
 * until the channel has ended (its items first). */
struct istream {
	struct istream	*next;
	uint64_t	id;		/* the call's SEQ */
	uint32_t	chan;		/* the caller's: we send on it */
	int		end;		/* 0, or the sender ended it: 1 close, 2 reset */
	int		done;		/* the caller's channel is ended */
	char		credit[BR_SUBJECT_MAX];	/* "" until the first item */
	natsMsg		**q;		/* items not sent on yet */
	uint32_t	qhead, qcount, qcap;
	size_t		qbytes;
	size_t		taken;		/* sent on, not acked yet */
	natsMsg		*answer;	/* the call's reply, held */
};

/* What one stream may keep: the sender's window is hubd's credit there,
 * well under this; past it the other side does not keep to its credit. */
#define ISTREAM_BYTES	(64u << 20)
#define ISTREAM_ITEMS	65536u

static struct istream *
istream_find(struct bridge *b, uint64_t id)
{
	struct istream *st;

	for (st = b->istreams; st != NULL && st->id != id; st = st->next)
		;
	return st;
}

static void
istream_free(struct bridge *b, struct istream *st)
{
	for (struct istream **pp = &b->istreams; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	}
	while (st->qcount > 0) {
		natsMsg_Destroy(st->q[st->qhead]);
		st->qhead = (st->qhead + 1) % st->qcap;
		st->qcount--;
	}
	natsMsg_Destroy(st->answer);
	free(st->q);
	free(st);
}

/* To the sender's side: N bytes taken, or the end ("reset"). */
static void
tell_sender(struct bridge *b, struct istream *st, size_t n, const char *end)
{
	char num[24];
	natsMsg *m = NULL;

	if (st->credit[0] == '\0')
		return;
	snprintf(num, sizeof(num), "%zu", n);
	if (natsMsg_Create(&m, st->credit, NULL, end != NULL ? NULL : num,
			   end != NULL ? 0 : (int)strlen(num)) != NATS_OK)
		return;
	if (end != NULL)
		natsMsgHeader_Set(m, BR_H_END, end);
	natsConnection_PublishMsg(b->nc, m);
	natsMsg_Destroy(m);
}

/* Ends the caller's channel (once), dropping what was not sent. */
static void
istream_end(struct bridge *b, struct istream *st, int reset)
{
	if (st->done)
		return;
	st->done = 1;
	if (reset) {
		guest_chan_reset(b->g, st->chan);
		if (st->end == 0)
			tell_sender(b, st, 0, "reset");
	} else {
		guest_chan_close(b->g, st->chan);
	}
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

/* A call of an imported method, on the loop's thread. */
static void
on_call(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	const struct br_import *imp = ctx;
	struct bridge *b = imp->b;
	char subject[BR_SUBJECT_MAX], reply[BR_SUBJECT_MAX], items[BR_SUBJECT_MAX], ms[16];
	char text[160];
	struct istream *st = NULL;
	natsMsg *m = NULL;
	struct icall *ic;
	natsStatus s;
	uint64_t id, chan = 0;
	size_t off, n;

	if (imp->chan_arg == -2) {
		guest_reply_status(c, -EBADMSG, "more than one channel in a call: one crosses NATS");
		return;
	}
	if (imp->chan_arg >= 0 &&
	    br_chan_find(&imp->parsed, imp->chan_arg, args, len, &off, &n, &chan) != 0) {
		guest_reply_status(c, -EBADMSG, "arguments do not match the signature");
		return;
	}
	text[0] = '\0';
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
	if (hp_idtab_reserve(&b->icalls, 1) != 0 ||
	    (imp->chan_arg >= 0 && (st = calloc(1, sizeof(*st))) == NULL)) {
		refuse(b, c, imp, chan, -EREMOTEIO, "hub-nats is out of memory");
		return;
	}
	if (++b->next_seq == 0)
		++b->next_seq;
	id = b->next_seq;
	snprintf(items, sizeof(items), "%s.s.%" PRIu64, b->inbox, id);
	if (b->conf.from[0] != '\0')
		snprintf(subject, sizeof(subject), "%s.at.%s.%s", b->conf.subject, b->conf.from,
			 imp->remote);
	else
		snprintf(subject, sizeof(subject), "%s.call.%s", b->conf.subject, imp->remote);
	snprintf(reply, sizeof(reply), "%s.%" PRIu64, b->inbox, id);
	snprintf(ms, sizeof(ms), "%u", b->conf.timeout_ms);
	s = natsMsg_Create(&m, subject, reply, (const char *)args, (int)len);
	if (s == NATS_OK)
		s = natsMsgHeader_Set(m, BR_H_SIG, imp->sig);
	if (s == NATS_OK)
		s = natsMsgHeader_Set(m, BR_H_TIMEOUT, ms);
	if (s == NATS_OK)
		s = natsMsgHeader_Set(m, BR_H_FROM, b->conf.name);
	if (s == NATS_OK && st != NULL)
		s = natsMsgHeader_Set(m, BR_H_STREAM, items);
	if (s == NATS_OK && st != NULL) {
		/* in the list before the request goes: its first item may
		 * come back before the next turn of the loop */
		st->id = id;
		st->chan = (uint32_t)chan;
		st->next = b->istreams;
		b->istreams = st;
	}
	if (s == NATS_OK)
		s = natsConnection_PublishMsg(b->nc, m);
	natsMsg_Destroy(m);
	if (s != NATS_OK) {
		if (st != NULL) {
			istream_end(b, st, 1);
			istream_free(b, st);
		}
		snprintf(text, sizeof(text), "NATS: %s", natsStatus_GetText(s));
		guest_reply_status(c, -EHOSTUNREACH, text);	/* istream_end reset it */
		return;
	}
	ic = hp_idtab_insert(&b->icalls, id);
	ic->c = c;
	ic->imp = imp;
	ic->deadline_ns = b->now_ns + (uint64_t)b->conf.timeout_ms * 1000000u + GRACE_NS;
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

/* inbox.s.SEQ: an item, or the end, of a call's stream. 1 when m was
 * kept (an item, queued). */
static int
on_stream(struct bridge *b, natsMsg *m, const char *seq)
{
	const char *credit = NULL, *end = NULL;
	struct istream *st;
	struct icall *ic;
	char *stop;
	uint64_t id = strtoull(seq, &stop, 10);
	int len = natsMsg_GetDataLength(m);

	if (*seq == '\0' || *stop != '\0')
		return 0;
	if ((st = istream_find(b, id)) == NULL || st->done) {
		/* gone here (a timeout, the reader left): the sender stops */
		if (natsMsgHeader_Get(m, BR_H_CREDIT, &credit) == NATS_OK && credit != NULL &&
		    st == NULL) {
			struct istream gone = { .credit = "" };

			snprintf(gone.credit, sizeof(gone.credit), "%s", credit);
			tell_sender(b, &gone, 0, "reset");
		}
		return 0;
	}
	if (st->credit[0] == '\0' && natsMsgHeader_Get(m, BR_H_CREDIT, &credit) == NATS_OK &&
	    credit != NULL && strlen(credit) < sizeof(st->credit) && strchr(credit, '*') == NULL &&
	    strchr(credit, '>') == NULL && strchr(credit, ' ') == NULL)
		snprintf(st->credit, sizeof(st->credit), "%s", credit);
	if ((ic = hp_idtab_find(&b->icalls, id)) != NULL)
		ic->deadline_ns = b->now_ns + (uint64_t)b->conf.timeout_ms * 1000000u + GRACE_NS;
	if (natsMsgHeader_Get(m, BR_H_END, &end) == NATS_OK && end != NULL) {
		st->end = strcmp(end, "close") == 0 ? 1 : 2;
		return 0;
	}
	if (st->end != 0)
		return 0;	/* after its end: nothing more counts */
	if (st->qcount == st->qcap) {
		uint32_t cap = st->qcap ? st->qcap * 2 : 64;
		natsMsg **q;

		if (cap > ISTREAM_ITEMS || (q = malloc(cap * sizeof(*q))) == NULL) {
			istream_end(b, st, 1);
			return 0;
		}
		for (uint32_t i = 0; i < st->qcount; i++)
			q[i] = st->q[(st->qhead + i) % st->qcap];
		free(st->q);
		st->q = q;
		st->qhead = 0;
		st->qcap = cap;
	}
	if (st->qbytes + (size_t)len > ISTREAM_BYTES) {
		istream_end(b, st, 1);	/* it sends past any credit */
		return 0;
	}
	st->q[(st->qhead + st->qcount++) % st->qcap] = m;
	st->qbytes += (size_t)len;
	return 1;
}

static void on_reply_now(struct bridge *b, natsMsg *m, uint64_t id);

/* Sends what each stream holds on, as far as the caller's credit goes;
 * acks what was taken; ends a channel whose sender ended it once its
 * items are out; then gives the call the answer it held. */
static void
pump(struct bridge *b)
{
	struct istream *st, *next;

	for (st = b->istreams; st != NULL; st = next) {
		next = st->next;
		while (!st->done && st->qcount > 0) {
			natsMsg *m = st->q[st->qhead];
			size_t len = (size_t)natsMsg_GetDataLength(m);
			int rc = guest_chan_send(b->g, st->chan, natsMsg_GetData(m), len, 0);

			if (rc == -ETIMEDOUT)
				break;		/* no credit now: guest_fd wakes us */
			if (rc != 0) {
				istream_end(b, st, 1);	/* the reader left, or too big */
				break;
			}
			st->qhead = (st->qhead + 1) % st->qcap;
			st->qcount--;
			st->qbytes -= len;
			st->taken += len;
			natsMsg_Destroy(m);
		}
		if (st->taken > 0 && (st->qcount == 0 || st->taken >= BR_ACK_BYTES)) {
			struct icall *ic = hp_idtab_find(&b->icalls, st->id);

			tell_sender(b, st, st->taken, NULL);
			st->taken = 0;
			/* the reader moves: the call is not idle */
			if (ic != NULL)
				ic->deadline_ns = b->now_ns +
				    (uint64_t)b->conf.timeout_ms * 1000000u + GRACE_NS;
		}
		if (st->end != 0 && st->qcount == 0)
			istream_end(b, st, st->end == 2);
		if (st->done && st->answer != NULL) {
			natsMsg *answer = st->answer;
			uint64_t id = st->id;

			st->answer = NULL;
			istream_free(b, st);
			on_reply_now(b, answer, id);
			natsMsg_Destroy(answer);
		}
	}
}

/* A reply on inbox.SEQ: now, or (a stream still open) once the stream
 * has ended. 1 when m was kept. */
static int
on_reply(struct bridge *b, natsMsg *m, const char *seq)
{
	struct istream *st;
	char *end;
	uint64_t id = strtoull(seq, &end, 10);

	if (*seq == '\0' || *end != '\0')
		return 0;
	if ((st = istream_find(b, id)) != NULL && !st->done && st->answer == NULL &&
	    !natsMsg_IsNoResponders(m)) {
		st->answer = m;
		return 1;
	}
	if (st != NULL) {
		/* no responders, or a second answer: the stream ends here */
		istream_end(b, st, 1);
		istream_free(b, st);
	}
	on_reply_now(b, m, id);
	return 0;
}

static void
on_reply_now(struct bridge *b, natsMsg *m, uint64_t id)
{
	const char *word = NULL, *from = NULL;
	const char *data = natsMsg_GetData(m);
	size_t len = (size_t)natsMsg_GetDataLength(m);
	char text[1100];
	struct icall *ic, call;
	int status;

	if ((ic = hp_idtab_find(&b->icalls, id)) == NULL)
		return;		/* answered already (a timeout), or not ours */
	call = *ic;
	hp_idtab_remove(&b->icalls, ic);
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

static struct br_remote *
remote_find(struct bridge *b, const char *name)
{
	for (uint32_t i = 0; i < b->nremotes; i++)
		if (strcmp(b->remotes[i].name, name) == 0)
			return &b->remotes[i];
	return NULL;
}

static void
remote_drop(struct bridge *b, struct br_remote *r)
{
	free(r->methods);
	*r = b->remotes[--b->nremotes];
}

static int
wanted(const struct bridge *b, const char *name)
{
	for (int i = 0; i < b->conf.nimports; i++)
		if (br_pattern_matches(b->conf.imports[i], name))
			return 1;
	return 0;
}

static struct br_import *
import_find(struct bridge *b, const char *remote)
{
	for (uint32_t i = 0; i < b->nimports; i++)
		if (strcmp(b->imports[i]->remote, remote) == 0)
			return b->imports[i];
	return NULL;
}

/* remote offers name as sig: registered here the first time. */
static void
bring_in(struct bridge *b, const char *hub, const char *name, const char *sig)
{
	struct br_import *imp = import_find(b, name), **grown;
	int rc;

	if (imp != NULL) {
		if (strcmp(imp->sig, sig) != 0)
			br_log("hub %s serves %s as %s, here it is %s: it refuses these calls",
			       hub, name, sig, imp->sig);
		return;
	}
	if (b->nimports >= BR_METHODS_MAX || (imp = calloc(1, sizeof(*imp))) == NULL ||
	    (grown = realloc(b->imports, (b->nimports + 1) * sizeof(*grown))) == NULL) {
		free(imp);
		return;
	}
	b->imports = grown;
	imp->b = b;
	snprintf(imp->remote, sizeof(imp->remote), "%s", name);
	snprintf(imp->sig, sizeof(imp->sig), "%s", sig);
	hp_sig_parse(imp->sig, &imp->parsed, NULL);	/* on_announce parsed it */
	imp->chan_arg = br_chan_arg(&imp->parsed);
	if (b->conf.prefix[0] != '\0' &&
	    (size_t)snprintf(imp->local, sizeof(imp->local), "%s.%s", b->conf.prefix, name) >=
	    sizeof(imp->local)) {
		br_log("%s.%s: too long a name for this hub", b->conf.prefix, name);
		b->imports[b->nimports++] = imp;	/* kept: not tried again */
		return;
	} else if (b->conf.prefix[0] == '\0') {
		snprintf(imp->local, sizeof(imp->local), "%s", name);
	}
	b->imports[b->nimports++] = imp;
	rc = guest_register(b->g, imp->local, sig, on_call, imp);
	if (rc == -EPERM)
		br_log("cannot register %s: add it to provides = in hub-nats's [guest] section",
		       imp->local);
	else if (rc == -EEXIST)
		br_log("cannot register %s: this hub has it already", imp->local);
	else if (rc < 0)
		br_log("cannot register %s: %s", imp->local, strerror(-rc));
	else
		br_log("importing %s (%s) from hub %s", imp->local, sig, hub);
}

/* PREFIX.announce: {"hub": NAME, "every_ms": N, "methods": [[NAME, SIG], ...]} */
static void
on_announce(struct bridge *b, natsMsg *m)
{
	struct json_tokener *tok = json_tokener_new_ex(4);
	json_object *o = NULL, *v, *methods;
	const char *hub;
	struct br_remote *r;
	struct hp_sig parsed;
	const char *why;
	int64_t every;
	size_t n;

	if (tok == NULL)
		return;
	o = json_tokener_parse_ex(tok, natsMsg_GetData(m), natsMsg_GetDataLength(m));
	json_tokener_free(tok);
	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "hub", &v) || !json_object_is_type(v, json_type_string) ||
	    !br_subject_part_ok(json_object_get_string(v), (size_t)json_object_get_string_len(v), 0) ||
	    !json_object_object_get_ex(o, "methods", &methods) ||
	    !json_object_is_type(methods, json_type_array) ||
	    (n = json_object_array_length(methods)) > BR_METHODS_MAX)
		goto out;
	hub = json_object_get_string(json_object_object_get(o, "hub"));
	every = json_object_object_get_ex(o, "every_ms", &v) ? json_object_get_int64(v) : 0;
	if (every < 100 || every > 3600000)
		every = 2000;
	if (strcmp(hub, b->conf.name) == 0 ||
	    (b->conf.from[0] != '\0' && strcmp(hub, b->conf.from) != 0))
		goto out;
	if ((r = remote_find(b, hub)) == NULL) {
		if (n == 0)
			goto out;
		if (b->nremotes >= BR_REMOTES_MAX) {
			br_log("hub %s: more than %d hubs heard of, not kept", hub, BR_REMOTES_MAX);
			goto out;
		}
		r = &b->remotes[b->nremotes++];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", hub);
		br_log("hub %s announced itself", hub);
	}
	if (n == 0) {
		br_log("hub %s left", hub);
		remote_drop(b, r);
		goto out;
	}
	r->seen_ns = b->now_ns;
	r->every_ns = (uint64_t)every * 1000000u;
	free(r->methods);
	r->methods = NULL;
	r->nmethods = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *pair = json_object_array_get_idx(methods, i), *jn, *js;
		const char *name, *sig;
		char (*grown)[BR_NAME_MAX + 1];

		if (!json_object_is_type(pair, json_type_array) ||
		    json_object_array_length(pair) != 2 ||
		    !json_object_is_type(jn = json_object_array_get_idx(pair, 0), json_type_string) ||
		    !json_object_is_type(js = json_object_array_get_idx(pair, 1), json_type_string))
			continue;
		name = json_object_get_string(jn);
		sig = json_object_get_string(js);
		/* the length JSON gave: a NUL inside is refused, not cut at */
		if (!br_subject_part_ok(name, (size_t)json_object_get_string_len(jn), 1) ||
		    !wanted(b, name) || (size_t)json_object_get_string_len(js) != strlen(sig) ||
		    strlen(sig) > HP_SIG_MAX_LEN ||
		    hp_sig_parse(sig, &parsed, &why) != 0)
			continue;
		if ((grown = realloc(r->methods, (r->nmethods + 1) * sizeof(*grown))) == NULL)
			break;
		r->methods = grown;
		snprintf(r->methods[r->nmethods++], BR_NAME_MAX + 1, "%s", name);
		bring_in(b, hub, name, sig);
	}
out:
	json_object_put(o);
}

int
br_import_msg(struct bridge *b, natsMsg *m)
{
	const char *s = natsMsg_GetSubject(m);
	size_t plen = strlen(b->conf.subject), ilen = strlen(b->inbox);

	if (b->conf.nimports == 0)
		return 0;
	if (strncmp(s, b->inbox, ilen) == 0 && strncmp(s + ilen, ".s.", 3) == 0) {
		int kept = on_stream(b, m, s + ilen + 3);

		pump(b);
		if (kept)
			return 1;	/* the stream's now, sent on or queued */
	} else if (strncmp(s, b->inbox, ilen) == 0 && s[ilen] == '.') {
		if (on_reply(b, m, s + ilen + 1))
			return 1;
		pump(b);
	} else if (strncmp(s, b->conf.subject, plen) == 0 && strcmp(s + plen, ".announce") == 0)
		on_announce(b, m);
	else
		return 0;
	natsMsg_Destroy(m);
	return 1;
}

void
br_import_drain(struct bridge *b)
{
	br_drain(b->sub_announce, b, br_import_msg);
}

void
br_import_tick(struct bridge *b)
{
	struct istream *st;
	struct icall *ic;
	uint64_t late[64];
	uint32_t pos = 0, nlate = 0;
	char text[128];

	if (b->conf.nimports == 0)
		return;
	pump(b);
	/* the deadlines and Cancels: every BR_SCAN_NS, not every pass (a
	 * pass per message, a walk over every call in flight each) */
	if (b->now_ns < b->next_iscan_ns)
		return;
	b->next_iscan_ns = b->now_ns + BR_SCAN_NS;
	if (b->nc != NULL)
		b->max_payload = natsConnection_GetMaxPayload(b->nc);
	while ((ic = hp_idtab_next(&b->icalls, &pos)) != NULL) {
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
		if (!call.cancel_sent)
			publish_cancel(b, call.id);
		if ((st = istream_find(b, call.id)) != NULL) {
			istream_end(b, st, 1);
			istream_free(b, st);
		}
		snprintf(text, sizeof(text), "no answer through NATS within %u ms",
			 b->conf.timeout_ms);
		reply_status(call.c, -ETIMEDOUT, text);
	}
	for (uint32_t i = 0; i < b->nremotes;) {
		struct br_remote *r = &b->remotes[i];

		if (b->now_ns > r->seen_ns + 3 * r->every_ns) {
			br_log("hub %s went silent", r->name);
			remote_drop(b, r);
		} else {
			i++;
		}
	}
}

void
br_import_start(struct bridge *b)
{
	b->icalls = (struct hp_idtab)HP_IDTAB_INIT(struct icall);
}

int
br_import_attach(struct bridge *b)
{
	char subject[BR_SUBJECT_MAX];

	if (b->conf.nimports == 0)
		return 0;
	snprintf(subject, sizeof(subject), "%s.announce", b->conf.subject);
	if (natsConnection_SubscribeSync(&b->sub_announce, b->nc, subject) != NATS_OK)
		return -1;
	/* who exports what: every hub announces soon */
	snprintf(subject, sizeof(subject), "%s.discover", b->conf.subject);
	natsConnection_Publish(b->nc, subject, NULL, 0);
	return 0;
}

void
br_import_detach(struct bridge *b)
{
	natsSubscription_Destroy(b->sub_announce);
	b->sub_announce = NULL;
}

void
br_import_stop(struct bridge *b)
{
	struct icall call;

	while (b->istreams != NULL) {
		istream_end(b, b->istreams, 1);
		istream_free(b, b->istreams);
	}
	while (hp_idtab_take(&b->icalls, &call) == 0)
		reply_status(call.c, -EHOSTUNREACH, "the hub's bridge is stopping");
	hp_idtab_free(&b->icalls);
	br_import_detach(b);
	for (uint32_t i = 0; i < b->nremotes; i++)
		free(b->remotes[i].methods);
	for (uint32_t i = 0; i < b->nimports; i++)
		free(b->imports[i]);
	free(b->imports);
}

/* Whether remote r announced method name. */
static int
serves(const struct br_remote *r, const char *name)
{
	for (uint32_t i = 0; i < r->nmethods; i++)
		if (strcmp(r->methods[i], name) == 0)
			return 1;
	return 0;
}

void
br_import_describe(struct bridge *b)
{
	char text[sizeof(((struct br_import *)0)->where)];

	for (uint32_t i = 0; i < b->nimports; i++) {
		struct br_import *imp = b->imports[i];
		size_t n = (size_t)snprintf(text, sizeof(text), "NATS:");
		uint32_t named = 0, more = 0;

		for (uint32_t r = 0; r < b->nremotes; r++) {
			if (!serves(&b->remotes[r], imp->remote))
				continue;
			if (n + strlen(b->remotes[r].name) + 24 < sizeof(text))
				n += (size_t)snprintf(text + n, sizeof(text) - n, "%s hub %s",
						      named++ ? "," : "", b->remotes[r].name);
			else
				more++;
		}
		if (more > 0)
			snprintf(text + n, sizeof(text) - n, " and %u more", more);
		else if (named == 0)
			snprintf(text + n, sizeof(text) - n, " no hub serves it now");
		if (strcmp(text, imp->where) == 0)
			continue;
		/* hubd says "not your method" when it could not be
		 * registered: nothing to describe then */
		guest_describe(b->g, imp->local, text);
		snprintf(b->imports[i]->where, sizeof(imp->where), "%s", text);
	}
}

void
br_import_summary(struct bridge *b, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "%u imported from %u hub(s)", b->nimports,
				    b->nremotes);

	for (uint32_t r = 0; r < b->nremotes && r < 4 && n < cap; r++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", r ? ", " : " (", b->remotes[r].name);
	if (b->nremotes > 0 && n < cap)
		snprintf(buf + n, cap - n, "%s)", b->nremotes > 4 ? ", ..." : "");
}
