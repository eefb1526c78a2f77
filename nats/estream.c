/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A chan<T> argument of a call that came from NATS (callin.c): a channel
 * opened here and put in the arguments in place of the caller's. What
 * the callee sends on it is held in its credit and published to the
 * caller's stream subject (Hub-Stream); the caller's side says on
 * inbox.c.ID what it took, and only then does the credit go back, so a
 * slow reader there slows the writer here. The window across NATS is
 * the channel's (the hub's initial_credit) and BR_STREAM_AHEAD more:
 * credit for that much goes back before the caller's side has said it
 * took it, so that a round trip across NATS does not stall the writer
 * every initial_credit bytes. A caller that reads packs
 * (Hub-Stream-Packs) gets the items of one loop pass as one message
 * (Hub-Pack: N; doc/nats.md, "Streams"): one wake of nats-server and of
 * the other bridge per pass, not per item. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/list.h"
#include "nats/hubnats.h"

struct estream {
	struct estream	*prev, *next;	/* in b->estreams */
	struct bridge	*b;
	uint64_t	id;		/* inbox.c.ID: the caller's acks */
	uint64_t	ecall;		/* the call it belongs to */
	uint32_t	chan;
	uint64_t	got;		/* bytes the method sent */
	uint64_t	acked;		/* ... the caller's side said it took */
	uint64_t	credited;	/* ... given back to the method */
	int		told;		/* the credit subject went with an item */
	int		packs;		/* the caller reads packs */
	struct br_pack	pack;		/* this pass's items */
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
	HP_LIST_UNLINK(&b->estreams, es);
	free(es->pack.buf);
	free(es);
}

/* One stream message to the caller's side: an item, a pack (pk), or
 * the end. */
static void
stream_publish(struct bridge *b, struct estream *es, const void *data, size_t len,
	       const struct br_pack *pk, const char *end)
{
	char credit[BR_SUBJECT_MAX], count[24];
	natsMsg *m = NULL;

	if (pk != NULL) {
		data = pk->buf;
		len = pk->len;
	}
	if (natsMsg_Create(&m, es->items, NULL, data, (int)len) != NATS_OK)
		return;
	if (pk != NULL)
		natsMsgHeader_Set(m, BR_H_PACK, br_pack_count(pk, count));
	if (!es->told) {
		snprintf(credit, sizeof(credit), "%s.c.%llu", b->inbox, (unsigned long long)es->id);
		natsMsgHeader_Set(m, BR_H_CREDIT, credit);
		snprintf(count, sizeof(count), "%u", BR_STREAM_AHEAD);
		natsMsgHeader_Set(m, BR_H_AHEAD, count);
		es->told = 1;
	}
	if (end != NULL)
		natsMsgHeader_Set(m, BR_H_END, end);
	if (natsConnection_PublishMsg(b->nc, m) != NATS_OK)
		b->errors++;
	br_msg_done(b, m);
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

/* Credit back to the method: what it sent, up to BR_STREAM_AHEAD
 * bytes more than the caller's side has taken (libguest holds back the
 * rest: the channel's window). -1: the channel is gone. */
static int
credit_back(struct bridge *b, struct estream *es)
{
	uint64_t to = es->acked + BR_STREAM_AHEAD < es->got ? es->acked + BR_STREAM_AHEAD : es->got;

	if (to <= es->credited)
		return 0;
	if (guest_chan_consumed(b->g, es->chan, (size_t)(to - es->credited)) != 0)
		return -1;
	es->credited = to;
	return 0;
}

/* This pass's pack, sent. */
static void
pack_flush(struct bridge *b, struct estream *es)
{
	if (es->pack.n > 0)
		stream_publish(b, es, NULL, 0, &es->pack, NULL);
	es->pack.n = 0;
	es->pack.len = 0;
}

/* Item into the pack: 0, or -1 (too large, or no memory: it goes
 * alone). A pack is sent when full, else at the end of the pass
 * (br_estream_flush). */
static int
pack_add(struct bridge *b, struct estream *es, const uint8_t *item, size_t len)
{
	int fits = br_pack_fits(&es->pack, br_payload_budget(b), len);

	if (fits < 0)
		return -1;
	if (fits == 0)
		pack_flush(b, es);
	return br_pack_put(&es->pack, item, len);
}

static void
on_item(void *ctx, const uint8_t *item, size_t len)
{
	struct estream *es = ctx;

	es->got += len;
	if (!es->packs || pack_add(es->b, es, item, len) != 0) {
		pack_flush(es->b, es);		/* what came first goes first */
		stream_publish(es->b, es, item, len, NULL, NULL);
	}
	stream_moved(es->b, es);
}

static void
on_end(void *ctx, int status)
{
	struct estream *es = ctx;
	struct bridge *b = es->b;

	pack_flush(b, es);
	stream_publish(b, es, NULL, 0, NULL, status == 0 ? "close" : "reset");
	estream_free(b, es);
}

void
br_estream_flush(struct bridge *b)
{
	for (struct estream *es = b->estreams; es != NULL; es = es->next) {
		pack_flush(b, es);
		credit_back(b, es);
	}
}

void
br_estream_credit(struct bridge *b, natsMsg *m, const char *idtext)
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
	if (*stop != '\0' || n > es->got - es->acked) {
		guest_chan_reset(b->g, es->chan);
		return;
	}
	es->acked += n;
	if (credit_back(b, es) != 0)
		guest_chan_reset(b->g, es->chan);
	else
		stream_moved(b, es);
}

struct estream *
br_estream_open(struct bridge *b, natsMsg *m, const struct br_export *x, const uint8_t **args,
		size_t *len, uint8_t **copy, char *text, size_t cap)
{
	const char *items = NULL, *packs = NULL;
	struct estream *es;
	size_t off, n;
	uint64_t theirs;
	int64_t chan;

	if (x->chan_arg == -2) {
		snprintf(text, cap, "%s takes more than one channel, or an rx<T>: one chan<T> crosses NATS", x->name);
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
	es->packs = natsMsgHeader_Get(m, BR_H_PACKS, &packs) == NATS_OK && packs != NULL &&
		    strcmp(packs, "1") == 0;
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
		HP_LIST_PUSH(&b->estreams, es);
		return NULL;
	}
	*args = *copy;
	if (++b->next_seq == 0)
		++b->next_seq;
	es->id = b->next_seq;
	HP_LIST_PUSH(&b->estreams, es);
	return es;
}

void
br_estream_call(struct estream *es, uint64_t ecall)
{
	es->ecall = ecall;
}

void
br_estream_close(struct bridge *b, struct estream *es)
{
	guest_chan_close(b->g, es->chan);	/* on_end frees it */
}

void
br_estream_stop(struct bridge *b)
{
	while (b->estreams != NULL)
		estream_free(b, b->estreams);
}
