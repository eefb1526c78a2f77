/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The sending half of a stream hubd carries between two guests (or a
 * control client and a guest): hubd is the sender on the receiver's
 * channel, counts what it delivered against the receiver's grants
 * (r[shm.flow.remaining-credit]), and holds what the receiver has no
 * credit or ring room for yet. What is held stays within the window the
 * other end was given, so the callers bound it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/chanq.h"
#include "daemon/host.h"
#include "proto/channel.h"

struct chq_item {
	struct chq_item	*next;
	uint32_t	len;
	uint8_t		data[];
};

void
chanq_init(struct chanq *q, uint32_t chan)
{
	*q = (struct chanq){ .chan = chan };
	q->tail = &q->head;
}

void
chanq_drop(struct chanq *q)
{
	struct chq_item *it;

	while ((it = q->head) != NULL) {
		q->head = it->next;
		free(it);
	}
	q->tail = &q->head;
	q->queued = 0;
}

int64_t
chanq_credit(struct hub *h, struct chanq *q, struct peer *p)
{
	/* r[shm.flow.remaining-credit] r[shm.flow.wrap-rule]: the
	 * receiver's granted total against our own sent_total; negative is
	 * its corruption */
	int64_t credit = hp_chan_credit(&p->view.chans[q->chan], q->sent_total);

	if (credit < 0)
		host_fault(h, p, DEATH_VIOLATION, "shm.flow.wrap-rule");
	return credit;
}

int
chanq_forward(struct hub *h, struct chanq *q, struct peer *p, struct hp_msg_in *m)
{
	int64_t credit;

	if (q->head != NULL || p->bl_head != NULL)
		return 0;
	if ((credit = chanq_credit(h, q, p)) < 0)
		return -1;
	if ((uint64_t)credit < m->len)
		return 0;
	/* a variable slot is handed on as it is */
	host_forward(h, p, m, HP_MSG_DATA, q->chan, 0, p->id);
	q->sent_total += m->len;
	return 1;
}

int
chanq_hold(struct chanq *q, const uint8_t *data, uint32_t len)
{
	struct chq_item *it = malloc(sizeof(*it) + len);

	if (it == NULL)
		return -ENOMEM;
	it->next = NULL;
	it->len = len;
	memcpy(it->data, data, len);
	*q->tail = it;
	q->tail = &it->next;
	q->queued += len;
	return 0;
}

int
chanq_pump(struct hub *h, struct chanq *q, struct peer *p)
{
	struct chq_item *it;
	int64_t credit;
	int n = 0, rc;

	while ((it = q->head) != NULL && p->bl_head == NULL) {
		if ((credit = chanq_credit(h, q, p)) < 0)
			break;
		if ((uint64_t)credit < it->len)
			break;
		rc = host_try_send(h, p, HP_MSG_DATA, q->chan, 0, it->data, it->len);
		if (rc == -EAGAIN)
			break;
		if (rc != 0) {
			host_fault(h, p, DEATH_VIOLATION, "shm.ring.capacity");
			break;
		}
		q->sent_total += it->len;
		q->queued -= it->len;
		if ((q->head = it->next) == NULL)
			q->tail = &q->head;
		free(it);
		n++;
	}
	if (n > 0 && !ev_is_active(&h->idle_w))
		ev_idle_start(h->loop, &h->idle_w);	/* staged: published next round */
	return n;
}

int
chanq_ready(struct chanq *q, struct peer *p)
{
	return q->head != NULL && p->bl_head == NULL &&
	    hp_chan_credit(&p->view.chans[q->chan], q->sent_total) >= q->head->len &&
	    hp_endpoint_tx_ready(&p->ep) > 0;
}
