/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libnats delivers messages on threads of its own; everything else in
 * hub-nats (libguest included) runs on the loop's thread. Each message
 * is handed over here, in order, under a mutex (a few per message, not
 * a hot path next to the network's), and an eventfd wakes the loop. The
 * queue is bounded: past it a message is refused, not kept. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nats/hubnats.h"

struct br_handoff {
	pthread_mutex_t	mu;
	natsMsg		**v;
	uint32_t	cap, head, count;
	int		efd;
	int		rung;		/* the eventfd is readable */
};

struct br_handoff *
br_handoff_new(uint32_t cap)
{
	struct br_handoff *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->cap = cap;
	q->v = calloc(cap, sizeof(*q->v));
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->v == NULL || q->efd < 0 || pthread_mutex_init(&q->mu, NULL) != 0) {
		if (q->efd >= 0)
			close(q->efd);
		free(q->v);
		free(q);
		return NULL;
	}
	return q;
}

void
br_handoff_free(struct br_handoff *q)
{
	natsMsg *m;

	if (q == NULL)
		return;
	while ((m = br_handoff_take(q)) != NULL)
		natsMsg_Destroy(m);
	pthread_mutex_destroy(&q->mu);
	close(q->efd);
	free(q->v);
	free(q);
}

int
br_handoff_fd(const struct br_handoff *q)
{
	return q->efd;
}

/* Under q->mu: whether this caller is the one to ring (one write per
 * batch the loop has not taken yet). */
static int
arm(struct br_handoff *q)
{
	if (q->rung)
		return 0;
	q->rung = 1;
	return 1;
}

static void
ring(struct br_handoff *q)
{
	uint64_t one = 1;

	if (write(q->efd, &one, sizeof(one)) < 0)
		return;		/* EAGAIN: readable already; the loop looks next turn */
}

int
br_handoff_put(struct br_handoff *q, natsMsg *msg)
{
	int armed;

	pthread_mutex_lock(&q->mu);
	if (q->count == q->cap) {
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	q->v[(q->head + q->count++) % q->cap] = msg;
	armed = arm(q);
	pthread_mutex_unlock(&q->mu);
	if (armed)
		ring(q);
	return 0;
}

void
br_handoff_wake(struct br_handoff *q)
{
	int armed;

	pthread_mutex_lock(&q->mu);
	armed = arm(q);
	pthread_mutex_unlock(&q->mu);
	if (armed)
		ring(q);
}

natsMsg *
br_handoff_take(struct br_handoff *q)
{
	natsMsg *m = NULL;
	uint64_t n;

	pthread_mutex_lock(&q->mu);
	if (q->count > 0) {
		m = q->v[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
	} else if (q->rung) {
		/* empty: the next put rings again */
		q->rung = 0;
		if (read(q->efd, &n, sizeof(n)) < 0)
			n = 0;
	}
	pthread_mutex_unlock(&q->mu);
	return m;
}

void
br_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	struct bridge *b = closure;
	const char *reply = natsMsg_GetReply(m);
	natsMsg *r = NULL;
	static const char busy[] = "hub-nats is behind: too many messages from NATS waiting";

	(void)sub;
	if (br_handoff_put(b->q, m) == 0)
		return;
	/* full: a request is refused at once (its caller need not wait out
	 * its timeout), anything else dropped */
	if (reply != NULL && *reply != '\0' &&
	    natsMsg_Create(&r, reply, NULL, busy, (int)strlen(busy)) == NATS_OK) {
		natsMsgHeader_Set(r, BR_H_STATUS, "refused");
		natsConnection_PublishMsg(nc, r);
		natsMsg_Destroy(r);
	}
	natsMsg_Destroy(m);
}

/* A message waiting on sub, taken: 1, else 0. Asked first: an empty
 * natsSubscription_NextMsg records NATS_TIMEOUT in libnats's error stack,
 * a formatted text, and the loop asks every subscription every pass
 * (about 6% of a bridge's CPU when calls come one at a time). */
int
br_next_msg(natsSubscription *sub, natsMsg **m)
{
	int pending = 0;

	return sub != NULL && natsSubscription_GetPending(sub, &pending, NULL) == NATS_OK &&
	       pending > 0 && natsSubscription_NextMsg(m, sub, 0) == NATS_OK;
}

void
br_drain(natsSubscription *sub, struct bridge *b, int (*fn)(struct bridge *, natsMsg *))
{
	natsMsg *m = NULL;

	/* a bound per pass: one busy subscription starves no other */
	for (int n = 0; n < 1024 && br_next_msg(sub, &m); n++)
		if (!fn(b, m))
			br_msg_done(b, m);
}
