/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Calls in: a request from NATS for a method this hub exports becomes a
 * call here, and its answer the reply (Hub-Status, the bytes). The
 * signature the caller used must be ours, hubd checks the arguments
 * against it, and the calls in flight are bounded. PREFIX.cancel and
 * the caller's timeout cancel the call here; a timed-out call is kept a
 * while so that its late answer is dropped, not taken for another's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "nats/hubnats.h"

#define FORGET_NS	(60ull * 1000000000)	/* a timed-out call kept for its answer */

/* Publishes an answer on reply: Hub-Status word, the bytes, MAC'd with
 * key (the caller's, NULL none); batched: the request came in a batch,
 * the answer goes in one too if others go to the same caller. */
static void
answer(struct bridge *b, const char *reply, const uint8_t *key, int batched, const char *word,
       const void *data, size_t len)
{
	struct br_out o = { 0 };
	natsMsg *r = NULL;
	char text[160], mac[BR_MAC_LEN * 2 + 1];

	if (b->max_payload > 0 && (int64_t)len > b->max_payload - 512) {
		snprintf(text, sizeof(text), "the answer (%zu bytes) is larger than NATS takes (%lld)",
			 len, (long long)b->max_payload);
		word = "error";
		data = text;
		len = strlen(text);
	}
	o.subject = reply;
	o.data = data;
	o.len = len;
	br_out_header(&o, BR_H_STATUS, word);
	br_out_header(&o, BR_H_FROM, b->conf.name);
	if (key != NULL) {
		br_trust_mac_text(key, reply, word, data, len, mac);
		br_out_header(&o, BR_H_MAC, mac);
	}
	if (batched) {
		br_gather_answer(b, &o);
		return;
	}
	if (br_out_msg(&o, &r) != NATS_OK || natsConnection_PublishMsg(b->nc, r) != NATS_OK)
		b->errors++;
	br_msg_done(b, r);
}

static void
answer_text(struct bridge *b, const char *reply, const uint8_t *key, int batched,
	    const char *word, const char *text)
{
	answer(b, reply, key, batched, word, text, strlen(text));
}

_Static_assert(BR_CALLER_KEY_LEN == crypto_shorthash_KEYBYTES, "the callers' hash key");

static struct br_caller **
caller_bucket(struct bridge *b, const char *name)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint32_t v;

	crypto_shorthash(h, (const uint8_t *)name, strlen(name), b->caller_key);
	memcpy(&v, h, sizeof(v));
	return &b->callers[v % BR_CALLER_BUCKETS];
}

/* The calling hub's entry, made if new (NULL: out of memory). Entries
 * live while their hub has calls in flight, so the calls_max bound on
 * those bounds them too: names made up by a NATS client cannot fill a
 * table and shut real hubs out. */
static struct br_caller *
caller_entry(struct bridge *b, const char *name)
{
	struct br_caller **head = caller_bucket(b, name), *c;

	for (c = *head; c != NULL; c = c->next)
		if (strcmp(c->name, name) == 0)
			return c;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->next = *head;
	*head = c;
	return c;
}

static void
caller_put(struct bridge *b, struct br_caller *c)
{
	struct br_caller **pp;

	if (c == NULL || --c->n > 0)
		return;
	for (pp = caller_bucket(b, c->name); *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	free(c);
}

static void
ecall_free(struct bridge *b, struct ecall *e)
{
	caller_put(b, e->caller);
	free(e->reply);
	free(e->to);
	hp_idtab_remove(&b->ecalls, e);
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
	if (!e->answered) {
		answer(b, e->to, e->has_key ? e->key : NULL, e->batched, br_status_word(status),
		       result, len);
		br_service_count(b, e->ep, status, result, len, e->start_ns);
	}
	ecall_free(b, e);
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

/* How long the caller still waits for m, in ms: its Hub-Timeout-Ms, cut
 * short by its Hub-Deadline (the wall clock: a request that sat in this
 * bridge's socket, the bridge frozen, has less left, or none: 0). A
 * deadline farther than the timeout says (clocks apart) is not
 * believed: the timeout alone bounds the call then. */
static uint32_t
time_left(struct bridge *b, natsMsg *m)
{
	uint32_t ms = timeout_of(b, m);
	const char *v = NULL;
	unsigned long long deadline;
	uint64_t now;
	char *end;

	if (natsMsgHeader_Get(m, BR_H_DEADLINE, &v) != NATS_OK || v == NULL || *v == '\0')
		return ms;
	deadline = strtoull(v, &end, 10);
	if (*end != '\0')
		return ms;
	if (deadline <= (now = br_wall_ms()))
		return 0;
	return deadline - now < ms ? (uint32_t)(deadline - now) : ms;
}

void
br_callin_request(struct bridge *b, natsMsg *m, const char *method, const struct br_export *x)
{
	const char *reply = natsMsg_GetReply(m), *to = NULL, *sig = NULL, *from = NULL;
	const uint8_t *args = (const uint8_t *)natsMsg_GetData(m);
	size_t len = (size_t)natsMsg_GetDataLength(m);
	char text[HP_SIG_MAX_LEN * 2 + 400], name[BR_NAME_MAX + 1];
	struct estream *es = NULL;
	struct answer_ctx *ctx = NULL;
	struct br_caller *caller;
	struct guest_call_opts opts = { sizeof(opts), GUEST_CALL_DEADLINE, 0, NULL };
	uint8_t *copy = NULL, key[BR_MAC_KEY_LEN], commit[BR_MAC_LEN];
	const uint8_t *k;
	struct ecall *e;
	uint32_t call_id, ep, left;
	uint64_t id;
	int rc, has_commit, batched = b->in_batch;

	if (reply == NULL || *reply == '\0')
		return;		/* nobody to answer */
	/* the answer where the caller reads answers (Hub-Answer-To), its
	 * reply subject being NATS's for "no responders"; a caller of
	 * before it is answered there */
	if (natsMsgHeader_Get(m, BR_H_ANSWER, &to) != NATS_OK || to == NULL ||
	    !br_subject_ok(to, strlen(to)))
		to = reply;
	/* the caller's key: our answers MAC'd so that it knows them ours */
	k = br_trust_caller_key(b, m, key) == 0 ? key : NULL;
	has_commit = br_trust_commit_parse(m, commit) == 0;
	if (x == NULL) {
		snprintf(text, sizeof(text), "hub %s does not export %.64s", b->conf.name, method);
		answer_text(b, to, k, batched, "no-method", text);
		return;
	}
	ep = br_service_request(b, x->name);
	if (natsMsgHeader_Get(m, BR_H_SIG, &sig) != NATS_OK || sig == NULL ||
	    strcmp(sig, x->sig) != 0) {
		snprintf(text, sizeof(text), "hub %s serves %s as %s, the caller's is %.256s",
			 b->conf.name, x->name, x->sig, sig != NULL ? sig : "(none)");
		answer_text(b, to, k, batched, "bad-payload", text);
		br_service_count(b, ep, -EBADMSG, text, strlen(text), b->now_ns);
		return;
	}
	/* never started once its caller gave up: it would run for nobody
	 * (a kv.put done after the caller was told "timeout") */
	if ((left = time_left(b, m)) == 0) {
		b->late++;
		snprintf(text, sizeof(text), "the caller's deadline passed before the call reached hub %s",
			 b->conf.name);
		answer_text(b, to, k, batched, "timeout", text);
		br_service_count(b, ep, -ETIMEDOUT, text, strlen(text), b->now_ns);
		return;
	}
	if (b->ecalls.count >= b->conf.calls_max) {
		snprintf(text, sizeof(text), "hub %s has %u calls from NATS in flight already",
			 b->conf.name, b->ecalls.count);
		answer_text(b, to, k, batched, "refused", text);
		br_service_count(b, ep, -ECONNREFUSED, text, strlen(text), b->now_ns);
		return;
	}
	/* and per calling hub: one cannot take them all */
	if (natsMsgHeader_Get(m, BR_H_FROM, &from) != NATS_OK || from == NULL ||
	    !br_subject_part_ok(from, strlen(from), 0))
		from = "?";
	if ((caller = caller_entry(b, from)) != NULL && caller->n >= b->conf.calls_per_hub) {
		snprintf(text, sizeof(text), "hub %s has %u calls from hub %.63s in flight already",
			 b->conf.name, caller->n, from);
		answer_text(b, to, k, batched, "refused", text);
		br_service_count(b, ep, -ECONNREFUSED, text, strlen(text), b->now_ns);
		return;
	}
	/* held from here: every way out below puts it back */
	if (caller != NULL)
		caller->n++;
	if (caller == NULL || (ctx = malloc(sizeof(*ctx))) == NULL ||
	    hp_idtab_reserve(&b->ecalls, 1) != 0) {
		free(ctx);
		caller_put(b, caller);
		answer_text(b, to, k, batched, "refused", "hub-nats is out of memory");
		return;
	}
	/* x may move from here on: libguest serves while it sends */
	snprintf(name, sizeof(name), "%s", x->name);
	if (x->chan_arg != -1 &&
	    (es = br_estream_open(b, m, x, &args, &len, &copy, text, sizeof(text))) == NULL) {
		free(ctx);
		caller_put(b, caller);
		answer_text(b, to, k, batched, "bad-payload", text);
		return;
	}
	if (++b->next_ecall == 0)
		++b->next_ecall;
	*ctx = (struct answer_ctx){ b, b->next_ecall };
	id = ctx->id;	/* ctx is the callback's from the call on */
	if (es != NULL)
		br_estream_call(es, id);
	/* the callee knows the caller's deadline (libguest starts no
	 * handler past it) and trace */
	opts.deadline_ns = b->now_ns + (uint64_t)left * 1000000u;
	if (es != NULL)
		opts.flags &= ~GUEST_CALL_DEADLINE;	/* a stream's lasts while items come */
	if (natsMsgHeader_Get(m, BR_H_TRACE, &opts.trace) == NATS_OK && opts.trace != NULL)
		opts.flags |= GUEST_CALL_TRACE;
	rc = guest_call_async_with(b->g, name, args, len, on_answer, ctx, &call_id, &opts);
	if (rc == -EINVAL && (opts.flags & GUEST_CALL_TRACE)) {
		/* not a traceparent: the call goes, without it */
		opts.flags &= ~GUEST_CALL_TRACE;
		opts.trace = NULL;
		rc = guest_call_async_with(b->g, name, args, len, on_answer, ctx, &call_id, &opts);
	}
	free(copy);
	if (rc < 0) {
		free(ctx);
		caller_put(b, caller);
		if (es != NULL)
			br_estream_close(b, es);
		snprintf(text, sizeof(text), "hub %s could not call %s: %s", b->conf.name,
			 name, strerror(-rc));
		answer_text(b, to, k, batched, "refused", text);
		br_service_count(b, ep, -ECONNREFUSED, text, strlen(text), b->now_ns);
		return;
	}
	e = hp_idtab_insert(&b->ecalls, id);
	e->call_id = call_id;
	br_service_call(b, e, m, ep);
	e->caller = caller;
	e->batched = batched;
	if ((e->has_key = k != NULL))
		memcpy(e->key, key, sizeof(e->key));
	if ((e->has_commit = has_commit))
		memcpy(e->commit, commit, sizeof(e->commit));
	e->timeout_ms = timeout_of(b, m);
	e->deadline_ns = opts.deadline_ns;
	e->reply = strdup(reply);
	e->to = strdup(to);
	if (e->reply == NULL || e->to == NULL) {
		guest_cancel(b->g, call_id);
		e->answered = 1;
		e->forget_ns = b->now_ns;
	}
	b->calls_in++;
}

void
br_callin_cancel(struct bridge *b, natsMsg *m)
{
	int n = natsMsg_GetDataLength(m);
	const char *reply = natsMsg_GetData(m), *sp;
	struct ecall *e;
	uint32_t pos = 0;

	/* REPLY TOKEN: the token only the call's caller can make */
	if (n <= 0 || n > BR_SUBJECT_MAX + BR_MAC_LEN * 2 + 1 ||
	    (sp = memchr(reply, ' ', (size_t)n)) == NULL) {
		b->refused_cancels++;
		return;
	}
	while ((e = hp_idtab_next(&b->ecalls, &pos)) != NULL) {
		if (e->reply == NULL || strlen(e->reply) != (size_t)(sp - reply) ||
		    memcmp(e->reply, reply, (size_t)(sp - reply)) != 0)
			continue;
		if (e->has_commit &&
		    br_trust_cancel_ok(e->commit, sp + 1, (size_t)(n - (sp + 1 - reply))))
			guest_cancel(b->g, e->call_id);
		else
			b->refused_cancels++;
	}
}

void
br_callin_scan(struct bridge *b)
{
	struct ecall *e;
	uint64_t gone[64];
	uint32_t pos = 0, ngone = 0;
	char text[96];

	while ((e = hp_idtab_next(&b->ecalls, &pos)) != NULL) {
		if (!e->answered && b->now_ns >= e->deadline_ns) {
			snprintf(text, sizeof(text), "no answer on hub %s in time", b->conf.name);
			answer_text(b, e->to, e->has_key ? e->key : NULL, e->batched, "timeout",
				    text);
			br_service_count(b, e->ep, -ETIMEDOUT, text, strlen(text), e->start_ns);
			guest_cancel(b->g, e->call_id);
			e->answered = 1;
			e->forget_ns = b->now_ns + FORGET_NS;
		} else if (e->answered && b->now_ns >= e->forget_ns && ngone < 64) {
			gone[ngone++] = e->id;
		}
	}
	for (uint32_t i = 0; i < ngone; i++) {
		e = hp_idtab_find(&b->ecalls, gone[i]);
		ecall_free(b, e);
	}
}

void
br_callin_start(struct bridge *b)
{
	b->ecalls = (struct hp_idtab)HP_IDTAB_INIT(struct ecall);
	randombytes_buf(b->caller_key, sizeof(b->caller_key));
}

void
br_callin_stop(struct bridge *b)
{
	struct ecall *e;
	uint32_t pos = 0;

	while ((e = hp_idtab_next(&b->ecalls, &pos)) != NULL) {
		if (!e->answered)
			answer_text(b, e->to, e->has_key ? e->key : NULL, e->batched,
				    "unreachable", "the hub's bridge is stopping");
		caller_put(b, e->caller);
		free(e->reply);
		free(e->to);
	}
	hp_idtab_free(&b->ecalls);
	br_estream_stop(b);
}
