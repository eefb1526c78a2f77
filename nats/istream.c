/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A chan<T> argument of a call out (callout.c), fed from NATS: the
 * exporting side publishes the items to inbox.s.SEQ; each is sent on the
 * caller's channel (a send that would wait for credit waits here
 * instead, the item kept), and what the caller took is acked to the
 * sender's credit subject, so a slow reader here slows the writer there.
 * The call's answer waits until the channel has ended (its items first),
 * then goes to whoever pumps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/list.h"
#include "nats/hubnats.h"

struct istream {
	struct istream	*prev, *next;	/* in b->istreams */
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
		br_msg_done(b, st->q[st->qhead]);
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

int
br_istream_item(struct bridge *b, natsMsg *m, const char *seq)
{
	const char *credit = NULL, *end = NULL;
	struct istream *st;
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
	call_moved(b, id);
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
	st->q[(st->qhead + st->qcount++) % st->qcap] = m;
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
			natsMsg *m = st->q[st->qhead];
			size_t len = (size_t)natsMsg_GetDataLength(m);
			int rc = guest_chan_send(b->g, st->chan, natsMsg_GetData(m), len, 0);

			if (rc == -ETIMEDOUT)
				break;		/* no credit now: guest_fd wakes us */
			if (rc != 0) {
				br_istream_end(b, st, 1);	/* the reader left, or too big */
				break;
			}
			st->qhead = (st->qhead + 1) % st->qcap;
			st->qcount--;
			st->qbytes -= len;
			st->taken += len;
			br_msg_done(b, m);
		}
		if (st->taken > 0 && (st->qcount == 0 || st->taken >= BR_ACK_BYTES)) {
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
