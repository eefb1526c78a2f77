/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Exports: this hub's methods that match [export] methods, served on
 * NATS. hub.methods lists them (now and every announce interval: a
 * method comes and goes with its guest); each gets a subscription to
 * PREFIX.call.METHOD in the queue group PREFIX (NATS gives each request
 * to one of the hubs that export it), and PREFIX.at.HUB.> reaches this
 * hub by name. A request becomes a call here; its answer, the reply.
 * Every byte from NATS is untrusted: the signature the caller used must
 * be ours, hubd checks the arguments against it, and the calls in
 * flight are bounded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nats/hubnats.h"
#include "proto/builtin.h"

struct ecall {
	uint64_t	id;		/* ours: the answer's callback finds it so */
	uint64_t	deadline_ns;
	uint64_t	forget_ns;	/* after a timeout: a late answer is dropped */
	uint32_t	call_id;	/* libguest's, for guest_cancel */
	uint32_t	timeout_ms;	/* the caller's: each stream item restarts it */
	int		answered;	/* the reply went (a timeout) */
	char		*reply;		/* the caller's reply subject */
};

#define FORGET_NS	(60ull * 1000000000)	/* a timed-out call kept for its answer */

/* Publishes an answer on reply: Hub-Status word, the bytes. */
static void
answer(struct bridge *b, const char *reply, const char *word, const void *data, size_t len)
{
	natsMsg *r = NULL;
	char text[160];

	if (b->max_payload > 0 && (int64_t)len > b->max_payload - 512) {
		snprintf(text, sizeof(text), "the answer (%zu bytes) is larger than NATS takes (%lld)",
			 len, (long long)b->max_payload);
		word = "error";
		data = text;
		len = strlen(text);
	}
	if (natsMsg_Create(&r, reply, NULL, data, (int)len) != NATS_OK)
		return;
	natsMsgHeader_Set(r, BR_H_STATUS, word);
	natsMsgHeader_Set(r, BR_H_FROM, b->conf.name);
	if (natsConnection_PublishMsg(b->nc, r) != NATS_OK)
		b->errors++;
	natsMsg_Destroy(r);
}

static void
answer_text(struct bridge *b, const char *reply, const char *word, const char *text)
{
	answer(b, reply, word, text, strlen(text));
}

static struct br_export *
export_find(struct bridge *b, const char *name)
{
	for (uint32_t i = 0; i < b->nexports; i++)
		if (strcmp(b->exports[i].name, name) == 0)
			return &b->exports[i];
	return NULL;
}

/* What an answer's callback is told: which bridge, which call. */
struct answer_ctx {
	struct bridge	*b;
	uint64_t	id;
};

/* The local call's answer: the reply, unless a timeout answered first. */
static void
on_answer(void *ctx, int status, const uint8_t *result, size_t len)
{
	struct answer_ctx *a = ctx;
	struct bridge *b = a->b;
	struct ecall *e = hp_idtab_find(&b->ecalls, a->id);

	free(a);
	if (e == NULL)
		return;
	if (!e->answered)
		answer(b, e->reply, br_status_word(status), result, len);
	free(e->reply);
	hp_idtab_remove(&b->ecalls, e);
}

/* A call's chan<T> argument, served here: a channel this bridge receives
 * on (held: its credit goes back only as the caller's side says it took
 * the items), its items published to the caller's stream subject. */
struct estream {
	struct estream	*next;
	struct bridge	*b;
	uint64_t	id;		/* inbox.c.ID: the caller's acks */
	uint64_t	ecall;		/* the call it belongs to */
	uint32_t	chan;
	int		told;		/* the credit subject went with an item */
	char		items[BR_SUBJECT_MAX];
};

static struct estream *
estream_find(struct bridge *b, uint64_t id)
{
	struct estream *es;

	for (es = b->estreams; es != NULL && es->id != id; es = es->next)
		;
	return es;
}

static void
estream_free(struct bridge *b, struct estream *es)
{
	for (struct estream **pp = &b->estreams; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == es) {
			*pp = es->next;
			break;
		}
	}
	free(es);
}

/* One stream message to the caller's side: an item, or the end. */
static void
stream_publish(struct bridge *b, struct estream *es, const void *data, size_t len,
	       const char *end)
{
	char credit[BR_SUBJECT_MAX];
	natsMsg *m = NULL;

	if (natsMsg_Create(&m, es->items, NULL, data, (int)len) != NATS_OK)
		return;
	if (!es->told) {
		snprintf(credit, sizeof(credit), "%s.c.%llu", b->inbox, (unsigned long long)es->id);
		natsMsgHeader_Set(m, BR_H_CREDIT, credit);
		es->told = 1;
	}
	if (end != NULL)
		natsMsgHeader_Set(m, BR_H_END, end);
	if (natsConnection_PublishMsg(b->nc, m) != NATS_OK)
		b->errors++;
	natsMsg_Destroy(m);
}

/* A stream is as slow as its reader: its call times out when nothing
 * moves, an item sent or taken, for the caller's timeout. */
static void
stream_moved(struct bridge *b, struct estream *es)
{
	struct ecall *e = hp_idtab_find(&b->ecalls, es->ecall);

	if (e != NULL && !e->answered)
		e->deadline_ns = br_now_ns() + (uint64_t)e->timeout_ms * 1000000u;
}

static void
on_item(void *ctx, const uint8_t *item, size_t len)
{
	struct estream *es = ctx;

	stream_publish(es->b, es, item, len, NULL);
	stream_moved(es->b, es);
}

static void
on_end(void *ctx, int status)
{
	struct estream *es = ctx;
	struct bridge *b = es->b;

	stream_publish(b, es, NULL, 0, status == 0 ? "close" : "reset");
	estream_free(b, es);
}

/* inbox.c.ID: the caller's side took N bytes of items (their credit
 * goes back to the sender here), or said Hub-End: reset (its reader
 * went away: the sender is told to stop). */
static void
on_credit(struct bridge *b, natsMsg *m, const char *idtext)
{
	const char *end = NULL, *data = natsMsg_GetData(m);
	char num[24], *stop;
	struct estream *es;
	unsigned long long n;
	uint64_t id;
	int len = natsMsg_GetDataLength(m);

	id = strtoull(idtext, &stop, 10);
	if (*idtext == '\0' || *stop != '\0' || (es = estream_find(b, id)) == NULL)
		return;
	if (natsMsgHeader_Get(m, BR_H_END, &end) == NATS_OK && end != NULL) {
		guest_chan_reset(b->g, es->chan);
		return;
	}
	if (len <= 0 || len >= (int)sizeof(num))
		return;
	memcpy(num, data, (size_t)len);
	num[len] = '\0';
	n = strtoull(num, &stop, 10);
	/* more than it was sent: the other side lies, the stream ends */
	if (*stop != '\0' || guest_chan_consumed(b->g, es->chan, (size_t)n) == -EINVAL)
		guest_chan_reset(b->g, es->chan);
	else
		stream_moved(b, es);
}

static uint32_t
timeout_of(struct bridge *b, natsMsg *m)
{
	const char *v = NULL;
	char *end;
	unsigned long ms;

	if (natsMsgHeader_Get(m, BR_H_TIMEOUT, &v) != NATS_OK || v == NULL)
		return b->conf.timeout_ms;
	ms = strtoul(v, &end, 10);
	if (*v == '\0' || *end != '\0' || ms == 0 || ms > 86400000)
		return b->conf.timeout_ms;
	return (uint32_t)ms;
}

/* A chan<T> argument's channel, opened here and put in the arguments in
 * place of the caller's (*args then points to malloc'd bytes, freed by
 * the caller); NULL with the reason in text. */
static struct estream *
stream_open(struct bridge *b, natsMsg *m, const struct br_export *x, const uint8_t **args,
	    size_t *len, uint8_t **copy, char *text, size_t cap)
{
	const char *items = NULL;
	struct estream *es;
	size_t off, n;
	uint64_t theirs;
	int64_t chan;

	if (x->chan_arg == -2) {
		snprintf(text, cap, "%s takes more than one channel: one crosses NATS", x->name);
		return NULL;
	}
	if (natsMsgHeader_Get(m, BR_H_STREAM, &items) != NATS_OK || items == NULL ||
	    strlen(items) >= BR_SUBJECT_MAX || strchr(items, ' ') != NULL ||
	    strchr(items, '*') != NULL || strchr(items, '>') != NULL) {
		snprintf(text, cap, "%s takes a channel: the request names no stream subject",
			 x->name);
		return NULL;
	}
	if (br_chan_find(&x->parsed, x->chan_arg, *args, *len, &off, &n, &theirs) != 0) {
		snprintf(text, cap, "arguments do not match the signature of %s", x->name);
		return NULL;
	}
	if ((es = calloc(1, sizeof(*es))) == NULL) {
		snprintf(text, cap, "hub-nats is out of memory");
		return NULL;
	}
	es->b = b;
	snprintf(es->items, sizeof(es->items), "%s", items);
	if ((chan = guest_chan_open(b->g, on_item, on_end, es)) < 0) {
		snprintf(text, cap, "no channel for %s: %s", x->name, strerror((int)-chan));
		free(es);
		return NULL;
	}
	es->chan = (uint32_t)chan;
	/* what it sends waits, in its credit, for the far side to take it */
	guest_chan_hold(b->g, es->chan);
	if ((*copy = br_chan_rewrite(*args, *len, off, n, (uint64_t)chan, len)) == NULL) {
		snprintf(text, cap, "hub-nats is out of memory");
		guest_chan_close(b->g, es->chan);	/* on_end frees it */
		es->id = 0;
		es->next = b->estreams;
		b->estreams = es;
		return NULL;
	}
	*args = *copy;
	if (++b->next_seq == 0)
		++b->next_seq;
	es->id = b->next_seq;
	es->next = b->estreams;
	b->estreams = es;
	return es;
}

/* A request for method: checked, then called here. */
static void
request(struct bridge *b, natsMsg *m, const char *method)
{
	const char *reply = natsMsg_GetReply(m), *sig = NULL;
	const struct br_export *x = export_find(b, method);
	const uint8_t *args = (const uint8_t *)natsMsg_GetData(m);
	size_t len = (size_t)natsMsg_GetDataLength(m);
	char text[HP_SIG_MAX_LEN * 2 + 400], name[BR_NAME_MAX + 1];
	struct estream *es = NULL;
	struct answer_ctx *ctx;
	uint8_t *copy = NULL;
	struct ecall *e;
	uint32_t call_id;
	uint64_t id;
	int rc;

	if (reply == NULL || *reply == '\0')
		return;		/* nobody to answer */
	if (x == NULL) {
		snprintf(text, sizeof(text), "hub %s does not export %.64s", b->conf.name, method);
		answer_text(b, reply, "no-method", text);
		return;
	}
	if (natsMsgHeader_Get(m, BR_H_SIG, &sig) != NATS_OK || sig == NULL ||
	    strcmp(sig, x->sig) != 0) {
		snprintf(text, sizeof(text), "hub %s serves %s as %s, the caller's is %.256s",
			 b->conf.name, x->name, x->sig, sig != NULL ? sig : "(none)");
		answer_text(b, reply, "bad-payload", text);
		return;
	}
	if (b->ecalls.count >= b->conf.calls_max) {
		snprintf(text, sizeof(text), "hub %s has %u calls from NATS in flight already",
			 b->conf.name, b->ecalls.count);
		answer_text(b, reply, "refused", text);
		return;
	}
	if ((ctx = malloc(sizeof(*ctx))) == NULL || hp_idtab_reserve(&b->ecalls, 1) != 0) {
		free(ctx);
		answer_text(b, reply, "refused", "hub-nats is out of memory");
		return;
	}
	/* x may move from here on: libguest serves while it sends */
	snprintf(name, sizeof(name), "%s", x->name);
	if (x->chan_arg != -1 &&
	    (es = stream_open(b, m, x, &args, &len, &copy, text, sizeof(text))) == NULL) {
		free(ctx);
		answer_text(b, reply, "bad-payload", text);
		return;
	}
	if (++b->next_ecall == 0)
		++b->next_ecall;
	*ctx = (struct answer_ctx){ b, b->next_ecall };
	id = ctx->id;	/* ctx is the callback's from the call on */
	if (es != NULL)
		es->ecall = id;
	rc = guest_call_async(b->g, name, args, len, on_answer, ctx, &call_id);
	free(copy);
	if (rc < 0) {
		free(ctx);
		if (es != NULL)
			guest_chan_close(b->g, es->chan);	/* on_end frees it */
		snprintf(text, sizeof(text), "hub %s could not call %s: %s", b->conf.name,
			 name, strerror(-rc));
		answer_text(b, reply, "refused", text);
		return;
	}
	e = hp_idtab_insert(&b->ecalls, id);
	e->call_id = call_id;
	e->timeout_ms = timeout_of(b, m);
	e->deadline_ns = b->now_ns + (uint64_t)e->timeout_ms * 1000000u;
	e->reply = strdup(reply);
	if (e->reply == NULL) {
		guest_cancel(b->g, call_id);
		e->answered = 1;
		e->forget_ns = b->now_ns;
	}
	b->calls_in++;
}

/* PREFIX.cancel: the caller gave up on the call it asked for on reply. */
static void
cancel(struct bridge *b, natsMsg *m)
{
	int n = natsMsg_GetDataLength(m);
	const char *reply = natsMsg_GetData(m);
	struct ecall *e;
	uint32_t pos = 0;

	if (n <= 0 || n > BR_SUBJECT_MAX)
		return;
	while ((e = hp_idtab_next(&b->ecalls, &pos)) != NULL)
		if (e->reply != NULL && (int)strlen(e->reply) == n && memcmp(e->reply, reply, (size_t)n) == 0)
			guest_cancel(b->g, e->call_id);
}

/* Announces what this hub exports (an empty list: it is leaving). */
static void
announce(struct bridge *b, int leaving)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	char subject[BR_SUBJECT_MAX];
	const char *text;
	size_t budget = b->max_payload > 0 ? (size_t)b->max_payload - 1024 : 1u << 20;
	size_t used = 0;

	json_object_object_add(o, "hub", json_object_new_string(b->conf.name));
	json_object_object_add(o, "every_ms", json_object_new_int64(b->conf.announce_ms));
	for (uint32_t i = 0; !leaving && i < b->nexports; i++) {
		const struct br_export *x = &b->exports[i];
		json_object *pair;

		/* with queue = no too: callers that name this hub (from =)
		 * learn of it so */
		used += strlen(x->name) + strlen(x->sig) + 8;
		if (used > budget)
			break;	/* the rest stay reachable, unannounced */
		pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_string(x->name));
		json_object_array_add(pair, json_object_new_string(x->sig));
		json_object_array_add(a, pair);
	}
	json_object_object_add(o, "methods", a);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	snprintf(subject, sizeof(subject), "%s.announce", b->conf.subject);
	natsConnection_Publish(b->nc, subject, text, (int)strlen(text));
	json_object_put(o);
}

static int
subscribe(struct bridge *b, struct br_export *x)
{
	char subject[BR_SUBJECT_MAX];

	snprintf(subject, sizeof(subject), "%s.call.%s", b->conf.subject, x->name);
	return natsConnection_QueueSubscribeSync(&x->sub, b->nc, subject, b->conf.subject) ==
	    NATS_OK ? 0 : -1;
}

/* hub.methods's answer for one pattern: what it lists is exported. */
static void
on_methods(void *ctx, int status, const uint8_t *res, size_t len)
{
	struct bridge *b = ctx;
	const char *name, *sig;
	char nbuf[BR_NAME_MAX + 1];
	size_t count = 0, pos = 0, nn, sn;

	b->refreshing--;
	if (status != 0) {
		b->refresh_failed = 1;
		br_log("hub.methods: %.*s", (int)len, res != NULL ? (const char *)res : "");
		return;
	}
	if (guest_pc_get_len(res, len, &pos, &count) != 0)
		return;
	for (size_t i = 0; i < count; i++) {
		struct br_export *x, *grown;

		if (guest_pc_get_str(res, len, &pos, &name, &nn) != 0 ||
		    guest_pc_get_str(res, len, &pos, &sig, &sn) != 0)
			return;
		if (!br_subject_part_ok(name, nn, 1) || sn > HP_SIG_MAX_LEN)
			continue;
		snprintf(nbuf, sizeof(nbuf), "%.*s", (int)nn, name);
		if ((x = export_find(b, nbuf)) == NULL) {
			if (b->nexports >= BR_METHODS_MAX ||
			    (grown = realloc(b->exports, (b->nexports + 1) * sizeof(*grown))) == NULL)
				continue;
			b->exports = grown;
			x = &b->exports[b->nexports++];
			memset(x, 0, sizeof(*x));
			memcpy(x->name, nbuf, nn + 1);
		}
		snprintf(x->sig, sizeof(x->sig), "%.*s", (int)sn, sig);
		if (hp_sig_parse(x->sig, &x->parsed, NULL) != 0) {
			x->sig[0] = '\0';	/* hubd checked it: not reached */
			continue;
		}
		x->chan_arg = br_chan_arg(&x->parsed);
		x->seen = b->refresh;
	}
}

/* After every pattern's answer: new methods subscribed, gone ones
 * dropped, then announced. */
static void
refresh_done(struct bridge *b)
{
	for (uint32_t i = 0; i < b->nexports;) {
		struct br_export *x = &b->exports[i];

		if (x->seen != b->refresh) {
			if (x->sub != NULL) {
				natsSubscription_Unsubscribe(x->sub);
				natsSubscription_Destroy(x->sub);
				br_log("no longer exporting %s", x->name);
			}
			b->exports[i] = b->exports[--b->nexports];
			continue;
		}
		if (x->sub == NULL && b->conf.queue && b->nc != NULL) {
			if (subscribe(b, x) == 0)
				br_log("exporting %s (%s)", x->name, x->sig);
			else
				x->sub = NULL;
		}
		i++;
	}
	if (b->nc != NULL)
		announce(b, 0);
}

static void
refresh(struct bridge *b)
{
	uint8_t arg[BR_NAME_MAX + 8];
	size_t pos;

	b->refresh++;
	b->refresh_pending = 1;
	b->refresh_failed = 0;
	for (int i = 0; i < b->conf.nexports; i++) {
		pos = 0;
		guest_pc_put_str(arg, sizeof(arg), &pos, b->conf.exports[i],
				 strlen(b->conf.exports[i]));
		if (guest_call_async(b->g, HP_SVC_METHODS, arg, pos, on_methods, b, NULL) == 0)
			b->refreshing++;
		else
			b->refresh_failed = 1;
	}
}

int
br_export_msg(struct bridge *b, natsMsg *m)
{
	const char *s = natsMsg_GetSubject(m), *rest;
	size_t plen = strlen(b->conf.subject), nlen = strlen(b->conf.name);
	size_t ilen = strlen(b->inbox);

	if (b->conf.nexports == 0)
		return 0;
	if (strncmp(s, b->inbox, ilen) == 0 && strncmp(s + ilen, ".c.", 3) == 0) {
		on_credit(b, m, s + ilen + 3);
		natsMsg_Destroy(m);
		return 1;
	}
	if (strncmp(s, b->conf.subject, plen) != 0 || s[plen] != '.')
		return 0;
	rest = s + plen + 1;
	if (strncmp(rest, "call.", 5) == 0)
		request(b, m, rest + 5);
	else if (strncmp(rest, "at.", 3) == 0 && strncmp(rest + 3, b->conf.name, nlen) == 0 &&
		 rest[3 + nlen] == '.')
		request(b, m, rest + 3 + nlen + 1);
	else if (strcmp(rest, "cancel") == 0)
		cancel(b, m);
	else if (strcmp(rest, "discover") == 0) {
		/* soon, not at once: every hub answers the same question */
		if (b->next_announce_ns > b->now_ns + 100000000u)
			b->next_announce_ns = b->now_ns + 100000000u;
	} else
		return 0;
	natsMsg_Destroy(m);
	return 1;
}

/* What came on the subscriptions the loop reads itself (requests,
 * cancels, discovery), after libnats read the socket. */
void
br_export_drain(struct bridge *b)
{
	natsSubscription *fixed[3] = { b->sub_at, b->sub_cancel, b->sub_discover };

	for (int i = 0; i < 3; i++)
		br_drain(fixed[i], b, br_export_msg);
	/* index, not pointer: a request's call may let libguest serve, and
	 * the list of exports be grown meanwhile */
	for (uint32_t i = 0; i < b->nexports; i++)
		br_drain(b->exports[i].sub, b, br_export_msg);
}

void
br_export_tick(struct bridge *b)
{
	struct ecall *e;
	uint64_t gone[64];
	uint32_t pos = 0, ngone = 0;
	char text[96];

	if (b->conf.nexports == 0 || b->now_ns < b->next_escan_ns)
		return;
	/* as import's: every BR_SCAN_NS */
	b->next_escan_ns = b->now_ns + BR_SCAN_NS;
	if (b->nc != NULL)
		b->max_payload = natsConnection_GetMaxPayload(b->nc);
	if (b->refresh_pending && b->refreshing == 0) {
		/* a pattern unanswered: keep what was exported, say it again */
		if (b->refresh_failed && b->nc != NULL)
			announce(b, 0);
		else
			refresh_done(b);
		b->refresh_pending = 0;
	}
	if (b->now_ns >= b->next_announce_ns && b->refreshing == 0 && b->nc != NULL) {
		refresh(b);
		b->next_announce_ns = b->now_ns + (uint64_t)b->conf.announce_ms * 1000000u;
	}
	while ((e = hp_idtab_next(&b->ecalls, &pos)) != NULL) {
		if (!e->answered && b->now_ns >= e->deadline_ns) {
			snprintf(text, sizeof(text), "no answer on hub %s in time", b->conf.name);
			answer_text(b, e->reply, "timeout", text);
			guest_cancel(b->g, e->call_id);
			e->answered = 1;
			e->forget_ns = b->now_ns + FORGET_NS;
		} else if (e->answered && b->now_ns >= e->forget_ns && ngone < 64) {
			gone[ngone++] = e->id;
		}
	}
	for (uint32_t i = 0; i < ngone; i++) {
		e = hp_idtab_find(&b->ecalls, gone[i]);
		free(e->reply);
		hp_idtab_remove(&b->ecalls, e);
	}
}

void
br_export_start(struct bridge *b)
{
	b->ecalls = (struct hp_idtab)HP_IDTAB_INIT(struct ecall);
}

int
br_export_attach(struct bridge *b)
{
	char subject[BR_SUBJECT_MAX];

	if (b->conf.nexports == 0)
		return 0;
	snprintf(subject, sizeof(subject), "%s.at.%s.>", b->conf.subject, b->conf.name);
	if (natsConnection_SubscribeSync(&b->sub_at, b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.cancel", b->conf.subject);
	if (natsConnection_SubscribeSync(&b->sub_cancel, b->nc, subject) != NATS_OK)
		return -1;
	snprintf(subject, sizeof(subject), "%s.discover", b->conf.subject);
	if (natsConnection_SubscribeSync(&b->sub_discover, b->nc, subject) != NATS_OK)
		return -1;
	/* the methods are subscribed and announced at the next refresh */
	b->next_announce_ns = 0;
	b->next_escan_ns = 0;
	return 0;
}

void
br_export_detach(struct bridge *b)
{
	for (uint32_t i = 0; i < b->nexports; i++) {
		natsSubscription_Destroy(b->exports[i].sub);
		b->exports[i].sub = NULL;
	}
	natsSubscription_Destroy(b->sub_at);
	natsSubscription_Destroy(b->sub_cancel);
	natsSubscription_Destroy(b->sub_discover);
	b->sub_at = b->sub_cancel = b->sub_discover = NULL;
}

void
br_export_stop(struct bridge *b)
{
	struct ecall *e;
	uint32_t pos = 0;

	if (b->conf.nexports > 0 && b->nc != NULL)
		announce(b, 1);
	br_export_detach(b);
	while ((e = hp_idtab_next(&b->ecalls, &pos)) != NULL) {
		if (!e->answered)
			answer_text(b, e->reply, "unreachable", "the hub's bridge is stopping");
		free(e->reply);
	}
	hp_idtab_free(&b->ecalls);
	while (b->estreams != NULL)
		estream_free(b, b->estreams);
	free(b->exports);
	/* the last answers and the goodbye out, if there is a way out */
	if (b->nc != NULL && natsConnection_Status(b->nc) == NATS_CONN_STATUS_CONNECTED)
		natsConnection_FlushTimeout(b->nc, 500);
}
