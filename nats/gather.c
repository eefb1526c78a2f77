/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Batches (doc/nats.md, "Batches"): the requests one loop pass makes to
 * one subject, and the answers it gives to one calling bridge, go as one
 * NATS message each (batch.c's wire, each entry written as it comes, no
 * natsMsg made for it), so that one wake of nats-server and of the other
 * bridge carries many calls. A batch goes once it holds BR_BATCH_SEND,
 * not at the pass's end: NATS and the other bridge start on it while
 * this one reads on (a pass that took 256 calls and sent them as one
 * kept the two bridges taking turns, each idle while the other worked).
 * One of a kind goes alone, as it always did: a single call is never
 * slower. And back: a batch of
 * requests made requests again (export.c hands each to callin.c), a
 * batch of answers made answers (each to callout.c, its MAC checked
 * there as any answer's). Only calls without a chan<T> argument are
 * batched, and answers only to calls that came in a batch: a caller
 * that sends none may not read one. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

#define PENDING_MAX	16	/* subjects, and callers, batched in one pass */
#define SENT_KEEP	64	/* batches kept for NATS's "no responders" */

/* A batch being gathered: its entries in the batch wire, end to end. */
struct pending {
	char		key[BR_SUBJECT_MAX];	/* requests: the subject;
						 * answers: the caller's inbox */
	uint8_t		*buf;			/* kept from batch to batch */
	size_t		cap;
	size_t		off[BR_BATCH_MAX + 1];	/* entry i: buf[off[i], off[i + 1]) */
	uint64_t	id[BR_BATCH_MAX];	/* requests: their calls */
	uint32_t	n;
};

/* A batch of requests sent: NATS's "no responders" (to inbox.n.bSEQ)
 * answers each of its calls. */
struct sent {
	uint64_t	seq;			/* 0: none */
	uint32_t	n;
	uint64_t	id[BR_BATCH_MAX];
};

struct br_gather {
	/* callout.c's: a call whose request could not go answered so (a
	 * pointer: gather.c calls nothing of callout.c, which calls it) */
	void		(*fail)(struct bridge *, uint64_t, const char *);
	struct pending	req[PENDING_MAX], ans[PENDING_MAX];
	uint32_t	nreq, nans;
	struct sent	sent[SENT_KEEP];
	uint64_t	next_seq;
};

static struct br_gather *
gather(struct bridge *b)
{
	if (b->gather == NULL)
		b->gather = calloc(1, sizeof(*b->gather));
	return b->gather;
}

/* The pending batch of key in v[0..*n), a new one if there is room. */
static struct pending *
find(struct pending *v, uint32_t *n, const char *key, size_t klen)
{
	for (uint32_t i = 0; i < *n; i++)
		if (strncmp(v[i].key, key, klen) == 0 && v[i].key[klen] == '\0')
			return &v[i];
	if (*n == PENDING_MAX || klen >= sizeof(v[0].key))
		return NULL;
	memcpy(v[*n].key, key, klen);
	v[*n].key[klen] = '\0';
	v[*n].n = 0;
	v[*n].off[0] = 0;
	return &v[(*n)++];
}

/* o, size bytes in the wire, appended to p: 0, or -1 (no memory). */
static int
put(struct pending *p, const struct br_out *o, int answer, size_t size)
{
	size_t end = p->off[p->n];

	if (end + size > p->cap) {
		size_t cap = p->cap > 0 ? p->cap : 16384;
		uint8_t *buf;

		while (cap < end + size)
			cap *= 2;
		if ((buf = realloc(p->buf, cap)) == NULL)
			return -1;
		p->buf = buf;
		p->cap = cap;
	}
	br_batch_put(o, answer, p->buf + end);
	p->off[++p->n] = end + size;
	return 0;
}

/* p's batch taken out into *out, which owns its buffer now (what is sent
 * may serve libguest, and a call gathered meanwhile start p again). */
static void
take(struct pending *p, struct pending *out)
{
	*out = *p;
	p->buf = NULL;
	p->cap = 0;
	p->n = 0;
	p->off[0] = 0;
}

/* out's buffer, sent, back to p for its next batch (or freed). */
static void
give_back(struct pending *p, struct pending *out)
{
	if (p->buf == NULL) {
		p->buf = out->buf;
		p->cap = out->cap;
	} else {
		free(out->buf);
	}
}

/* p's entries: two or more as one message (requests to p's subject,
 * answered "no responders" on inbox.n.bSEQ; answers to the caller's
 * inbox.B), one as the message it would have been alone. */
static natsStatus
publish(struct bridge *b, struct pending *p, int answer, uint64_t seq)
{
	char subject[BR_SUBJECT_MAX + 2], reply[BR_SUBJECT_MAX], count[12];
	natsMsg *bm = NULL;
	natsStatus s;

	if (b->nc == NULL)
		return NATS_CONNECTION_CLOSED;
	if (p->n == 1) {
		if (br_batch_entry(p->buf, p->off[1], p->key, answer, &bm) != 0)
			return NATS_NO_MEMORY;
		s = natsConnection_PublishMsg(b->nc, bm);
		br_msg_done(b, bm);
		return s;
	}
	snprintf(count, sizeof(count), "%u", p->n);
	snprintf(subject, sizeof(subject), "%s%s", p->key, answer ? ".B" : "");
	snprintf(reply, sizeof(reply), "%s.n.b%" PRIu64, b->inbox, seq);
	s = natsMsg_Create(&bm, subject, answer ? NULL : reply, (const char *)p->buf,
			   (int)p->off[p->n]);
	if (s == NATS_OK)
		s = natsMsgHeader_Set(bm, BR_H_BATCH, count);
	if (s == NATS_OK)
		s = natsMsgHeader_Set(bm, BR_H_FROM, b->conf.name);
	/* a bridge that does not read batches MACs its refusal with it */
	if (s == NATS_OK && !answer)
		s = natsMsgHeader_Set(bm, BR_H_KEY, br_trust_pk_text(b));
	if (s == NATS_OK)
		s = natsConnection_PublishMsg(b->nc, bm);
	br_msg_done(b, bm);
	return s;
}

/* Sends the requests of p (taken out of its pending batch), only the
 * calls still waiting. */
static void
send_requests(struct bridge *b, struct pending *p)
{
	struct br_gather *g = b->gather;
	uint32_t n = 0;
	uint64_t seq = 0;
	size_t end = 0;
	natsStatus s;
	char text[96];

	for (uint32_t i = 0; i < p->n; i++) {
		size_t len = p->off[i + 1] - p->off[i];

		if (hp_idtab_find(&b->icalls, p->id[i]) == NULL)
			continue;
		if (end != p->off[i])	/* a call before it ended: moved up */
			memmove(p->buf + end, p->buf + p->off[i], len);
		p->id[n] = p->id[i];
		p->off[n] = end;
		end += len;
		p->off[++n] = end;
	}
	if ((p->n = n) == 0)
		return;
	if (n > 1) {
		struct sent *st;

		if (++g->next_seq == 0)
			++g->next_seq;
		seq = g->next_seq;
		st = &g->sent[seq % SENT_KEEP];
		st->seq = seq;
		st->n = n;
		memcpy(st->id, p->id, n * sizeof(p->id[0]));
	}
	if ((s = publish(b, p, 0, seq)) == NATS_OK)
		return;
	if (seq != 0)
		g->sent[seq % SENT_KEEP].seq = 0;
	snprintf(text, sizeof(text), "NATS: %s", natsStatus_GetText(s));
	for (uint32_t i = 0; i < n; i++)
		g->fail(b, p->id[i], text);
}

static void
send_answers(struct bridge *b, struct pending *p)
{
	if (publish(b, p, 1, 0) != NATS_OK)
		b->errors += p->n;
}

/* p's batch sent now, and written: the next hop starts on it. */
static void
send_full(struct bridge *b, struct pending *p, int answer)
{
	struct pending out;

	take(p, &out);
	if (answer)
		send_answers(b, &out);
	else
		send_requests(b, &out);
	give_back(p, &out);
	br_write_out(b, 0);
}

int
br_gather_request(struct bridge *b, const struct br_out *o, uint64_t id,
		  void (*fail)(struct bridge *, uint64_t, const char *))
{
	struct br_gather *g = gather(b);
	struct pending *p;
	size_t size;

	if (g != NULL)
		g->fail = fail;
	if (g == NULL || (size = br_batch_put(o, 0, NULL)) == 0 ||
	    (p = find(g->req, &g->nreq, o->subject, strlen(o->subject))) == NULL)
		return -1;
	if (p->n > 0 && (p->n == BR_BATCH_SEND || p->off[p->n] + size > br_payload_budget(b))) {
		send_full(b, p, 0);
		if (p->n == BR_BATCH_SEND)
			return -1;	/* filled again meanwhile */
	}
	if (put(p, o, 0, size) != 0)
		return -1;
	p->id[p->n - 1] = id;
	return 0;
}

void
br_gather_answer(struct bridge *b, const struct br_out *o)
{
	struct br_gather *g = gather(b);
	const char *subject = o->subject, *dot = strrchr(subject, '.');
	struct pending *p = NULL;
	natsMsg *r = NULL;
	size_t size = 0;

	/* to the caller's inbox: its reply subject without the last token */
	if (g != NULL && dot != NULL && dot != subject && (size = br_batch_put(o, 1, NULL)) > 0 &&
	    (p = find(g->ans, &g->nans, subject, (size_t)(dot - subject))) != NULL) {
		if (p->n > 0 &&
		    (p->n == BR_BATCH_SEND || p->off[p->n] + size > br_payload_budget(b)))
			send_full(b, p, 1);
		if (p->n < BR_BATCH_SEND && put(p, o, 1, size) == 0)
			return;
	}
	/* alone */
	if (b->nc == NULL || br_out_msg(o, &r) != NATS_OK ||
	    natsConnection_PublishMsg(b->nc, r) != NATS_OK)
		b->errors++;
	br_msg_done(b, r);
}

void
br_gather_flush(struct bridge *b)
{
	struct br_gather *g = b->gather;
	struct pending out;

	if (g == NULL)
		return;
	/* from the end: a call gathered meanwhile is sent too */
	while (g->nreq > 0) {
		struct pending *p = &g->req[--g->nreq];

		take(p, &out);
		send_requests(b, &out);
		give_back(p, &out);
	}
	while (g->nans > 0) {
		struct pending *p = &g->ans[--g->nans];

		take(p, &out);
		send_answers(b, &out);
		give_back(p, &out);
	}
}

int
br_gather_requests(struct bridge *b, natsMsg *m, natsMsg **out)
{
	const char *count = NULL;
	uint32_t n;

	if (natsMsgHeader_Get(m, BR_H_BATCH, &count) != NATS_OK || count == NULL)
		return -1;
	if (br_batch_parse((const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
			   count, natsMsg_GetSubject(m), 0, out, &n) != 0) {
		b->refused_batches++;
		return -2;
	}
	return (int)n;
}

void
br_gather_answers(struct bridge *b, natsMsg *m,
		  int (*reply)(struct bridge *, natsMsg *, const char *))
{
	natsMsg *v[BR_BATCH_MAX];
	const char *count = NULL, *s;
	size_t ilen = strlen(b->inbox);
	uint32_t n;

	natsMsgHeader_Get(m, BR_H_BATCH, &count);
	if (br_batch_parse((const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
			   count, NULL, 1, v, &n) != 0) {
		b->refused_batches++;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		s = natsMsg_GetSubject(v[i]);
		/* only to one of our calls: inbox.SEQ, or inbox.n.SEQ (its
		 * reply subject, where a bridge of before Hub-Answer-To
		 * answers) */
		if (strncmp(s, b->inbox, ilen) == 0 && s[ilen] == '.')
			s += ilen + 1 + (strncmp(s + ilen + 1, "n.", 2) == 0 ? 2 : 0);
		else
			s = "";
		if (*s == '\0' || strspn(s, "0123456789") != strlen(s)) {
			b->refused_answers++;
			br_msg_done(b, v[i]);
		} else if (!reply(b, v[i], s)) {
			br_msg_done(b, v[i]);
		}
	}
}

void
br_gather_batch_reply(struct bridge *b, natsMsg *m, const char *seqtext,
		      void (*answer)(struct bridge *, natsMsg *, uint64_t))
{
	struct br_gather *g = b->gather;
	uint64_t id[BR_BATCH_MAX], seq;
	uint32_t n;
	char *end;

	seq = strtoull(seqtext, &end, 10);
	if (g == NULL || *seqtext == '\0' || *end != '\0' || seq == 0 ||
	    g->sent[seq % SENT_KEEP].seq != seq)
		return;
	/* NATS's "no responders", or a MAC'd answer to the batch as a whole
	 * (a bridge that does not read batches: its refusal) */
	if (!natsMsg_IsNoResponders(m) && !br_trust_answer_ok(b, m))
		return;
	n = g->sent[seq % SENT_KEEP].n;
	memcpy(id, g->sent[seq % SENT_KEEP].id, n * sizeof(id[0]));
	g->sent[seq % SENT_KEEP].seq = 0;
	for (uint32_t i = 0; i < n; i++)
		answer(b, m, id[i]);
}

void
br_gather_stop(struct bridge *b)
{
	struct br_gather *g = b->gather;

	if (g == NULL)
		return;
	for (uint32_t i = 0; i < PENDING_MAX; i++) {
		free(g->req[i].buf);
		free(g->ans[i].buf);
	}
	free(g);
	b->gather = NULL;
}
