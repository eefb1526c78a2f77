/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A chan<T> argument of a call out (callout.c), fed from NATS: the
 * exporting side publishes the items to inbox.s.SEQ; each is sent on the
 * caller's channel (a send that would wait for credit waits here
 * instead, the item kept), and what the caller took is acked to the
 * sender's credit subject, so a slow reader here slows the writer there.
 * The call's answer waits until the channel has ended (its items first),
 * then goes to whoever pumps. A message of Hub-Pack: N holds N items
 * (estream.c's packs), checked whole as it comes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/list.h"
#include "nats/hubnats.h"

/* A message of items: one, or a pack whose next item is at off. */
struct queued {
	natsMsg		*m;
	uint32_t	left;		/* items in it not sent on yet */
	uint32_t	off;		/* a pack's next item */
	int		packed;
};

struct istream {
	struct istream	*prev, *next;	/* in b->istreams */
	uint64_t	id;		/* the call's SEQ */
	uint32_t	chan;		/* the caller's: we send on it */
	int		end;		/* 0, or the sender ended it: 1 close, 2 reset */
	int		done;		/* the caller's channel is ended */
	char		credit[BR_SUBJECT_MAX];	/* "" until the first item */
	struct queued	*q;		/* items not sent on yet */
	uint32_t	qhead, qcount, qcap;
	size_t		qbytes;
	size_t		taken;		/* sent on, not acked yet */
	size_t		ahead;		/* Hub-Ahead: credit the sender gives
					 * before it is told (0: none) */
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

struct istream *
br_istream_new(void)
{
	return calloc(1, sizeof(struct istream));
}

void
br_istream_add(struct bridge *b, struct istream *st, uint64_t id, uint32_t chan)
{
	st->id = id;
	st->chan = chan;
	HP_LIST_PUSH(&b->istreams, st);
}

void
br_istream_free(struct bridge *b, struct istream *st)
{
	HP_LIST_UNLINK(&b->istreams, st);
	while (st->qcount > 0) {
		br_msg_done(b, st->q[st->qhead].m);
		st->qhead = (st->qhead + 1) % st->qcap;
		st->qcount--;
	}
	br_msg_done(b, st->answer);
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
	br_msg_done(b, m);
}

void
br_istream_end(struct bridge *b, struct istream *st, int reset)
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

void
br_istream_drop(struct bridge *b, uint64_t id)
{
	struct istream *st;

	if ((st = istream_find(b, id)) != NULL) {
		br_istream_end(b, st, 1);
		br_istream_free(b, st);
	}
}

/* The stream moves: its call (callout.c's) is not idle, its deadline
 * starts again. */
static void
call_moved(struct bridge *b, uint64_t id)
{
	struct icall *ic = hp_idtab_find(&b->icalls, id);

	if (ic != NULL)
		ic->deadline_ns = b->now_ns + (uint64_t)b->conf.timeout_ms * 1000000u + BR_GRACE_NS;
}

/* The first item's Hub-Ahead: bytes the sender credits back before it
 * is told, BR_ACK_BYTES * 4 to ISTREAM_BYTES / 4 (0: none, or out of
 * range: told as a sender that gives none). */
static size_t
ahead_of(natsMsg *m)
{
	const char *v = NULL;
	unsigned long long n;
	char *stop;

	if (natsMsgHeader_Get(m, BR_H_AHEAD, &v) != NATS_OK || v == NULL || *v < '1' || *v > '9')
		return 0;
	n = strtoull(v, &stop, 10);
	return *stop == '\0' && n >= BR_ACK_BYTES * 4 && n <= ISTREAM_BYTES / 4 ? (size_t)n : 0;
}

int
br_istream_item(struct bridge *b, natsMsg *m, const char *seq)
{
	const char *credit = NULL, *end = NULL, *pack = NULL;
	struct istream *st;
	char *stop;
	uint64_t id = strtoull(seq, &stop, 10);
	int64_t len = natsMsg_GetDataLength(m);
	uint32_t count = 1;

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
	    strchr(credit, '>') == NULL && strchr(credit, ' ') == NULL) {
		snprintf(st->credit, sizeof(st->credit), "%s", credit);
		st->ahead = ahead_of(m);
	}
	call_moved(b, id);
	if (natsMsgHeader_Get(m, BR_H_END, &end) == NATS_OK && end != NULL) {
		st->end = strcmp(end, "close") == 0 ? 1 : 2;
		return 0;
	}
	if (st->end != 0)
		return 0;	/* after its end: nothing more counts */
	if (natsMsgHeader_Get(m, BR_H_PACK, &pack) == NATS_OK && pack != NULL) {
		len = br_pack_check((const uint8_t *)natsMsg_GetData(m),
				    (size_t)natsMsg_GetDataLength(m), pack, &count);
		if (len < 0) {
			br_istream_end(b, st, 1);	/* the sender breaks the wire */
			return 0;
		}
	}
	if (st->qcount == st->qcap) {
		uint32_t cap = st->qcap ? st->qcap * 2 : 64;
		struct queued *q;

		if (cap > ISTREAM_ITEMS || (q = malloc(cap * sizeof(*q))) == NULL) {
			br_istream_end(b, st, 1);
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
		br_istream_end(b, st, 1);	/* it sends past any credit */
		return 0;
	}
	st->q[(st->qhead + st->qcount++) % st->qcap] =
		(struct queued){ .m = m, .left = count, .packed = pack != NULL };
	st->qbytes += (size_t)len;
	return 1;
}

int
br_istream_hold(struct bridge *b, uint64_t id, natsMsg *m)
{
	struct istream *st;

	if ((st = istream_find(b, id)) != NULL && !st->done && st->answer == NULL &&
	    !natsMsg_IsNoResponders(m)) {
		st->answer = m;
		return 1;
	}
	if (st != NULL) {
		/* no responders, or a second answer: the stream ends here */
		br_istream_end(b, st, 1);
		br_istream_free(b, st);
	}
	return 0;
}

void
br_istream_pump(struct bridge *b, void (*answer)(struct bridge *, natsMsg *, uint64_t))
{
	struct istream *st, *next;

	for (st = b->istreams; st != NULL; st = next) {
		next = st->next;
		while (!st->done && st->qcount > 0) {
			struct queued *e = &st->q[st->qhead];
			const uint8_t *item = (const uint8_t *)natsMsg_GetData(e->m);
			size_t len = (size_t)natsMsg_GetDataLength(e->m);
			int rc;

			if (e->packed) {	/* checked as it came */
				len = br_get32(item + e->off);
				item += e->off + 4;
			}
			rc = guest_chan_send(b->g, st->chan, item, len, 0);
			if (rc == -ETIMEDOUT)
				break;		/* no credit now: guest_fd wakes us */
			if (rc != 0) {
				br_istream_end(b, st, 1);	/* the reader left, or too big */
				break;
			}
			st->qbytes -= len;
			st->taken += len;
			e->off += 4 + (uint32_t)len;
			if (--e->left > 0)
				continue;
			br_msg_done(b, e->m);
			st->qhead = (st->qhead + 1) % st->qcap;
			st->qcount--;
		}
		/* a sender that gives credit ahead (Hub-Ahead) is told a
		 * quarter of that at a time; one that does not, whenever the
		 * queue is empty: its next item may need all of its window */
		if (st->taken > 0 && (st->taken >= (st->ahead > 0 ? st->ahead / 4 : BR_ACK_BYTES) ||
				      (st->qcount == 0 && st->ahead == 0))) {
			tell_sender(b, st, st->taken, NULL);
			st->taken = 0;
			/* the reader moves: the call is not idle */
			call_moved(b, st->id);
		}
		if (st->end != 0 && st->qcount == 0)
			br_istream_end(b, st, st->end == 2);
		if (st->done && st->answer != NULL) {
			natsMsg *held = st->answer;
			uint64_t id = st->id;

			st->answer = NULL;
			br_istream_free(b, st);
			answer(b, held, id);
			br_msg_done(b, held);
		}
	}
}

void
br_istream_stop(struct bridge *b)
{
	while (b->istreams != NULL) {
		br_istream_end(b, b->istreams, 1);
		br_istream_free(b, b->istreams);
	}
}
