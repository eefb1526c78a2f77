/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Runtime channels and alt/prialt.
 *
 * A channel's mutex guards its buffer, its ends' gone flags and its four
 * queues of waiting alt operations: senders, receivers, and the
 * "vultures" waiting for the writer or the reader end to go. An alt locks
 * all its channels in id order, completes the first ready operation
 * (handing an item straight to a waiting peer it claims), or registers
 * one waiter per operation and suspends until a peer, a close or its
 * deadline claims it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/list.h"
#include "mt/internal.h"
#include "proto/clock.h"

#define MT_Q_SEND	0	/* senders waiting for a receiver or room */
#define MT_Q_RECV	1	/* receivers waiting for an item */
#define MT_Q_WGONE	2	/* vultures: GUEST_MT_WRITER_GONE */
#define MT_Q_RGONE	3	/* vultures: GUEST_MT_READER_GONE */
#define MT_ALT_SMALL	8	/* ops an alt handles without malloc */
#define MT_CAP_MAX	(1u << 24)

struct mt_wq {
	struct mt_waiter	*head, *tail;
};

struct guest_mtchan {
	pthread_mutex_t		mu;
	uint64_t		id;		/* lock order */
	size_t			item_size;
	unsigned		cap;
	unsigned		head, count;	/* ring of cap items */
	uint8_t			*buf;
	_Atomic uint32_t	refs[2];	/* GUEST_MT_WRITER, _READER */
	_Atomic uint32_t	alive;		/* ends not gone: freed at 0 */
	int			gone[2];	/* under mu */
	struct mt_wq		q[4];		/* MT_Q_* */
};

static _Atomic uint64_t next_chan_id = 1;

int
guest_mtchan_new(size_t item_size, unsigned capacity, struct guest_mtchan **chp)
{
	struct guest_mtchan *ch;

	if (chp == NULL || capacity > MT_CAP_MAX ||
	    (capacity && item_size > SIZE_MAX / capacity))
		return -EINVAL;
	if ((ch = calloc(1, sizeof(*ch))) == NULL)
		return -ENOMEM;
	if (capacity && item_size &&
	    (ch->buf = malloc(item_size * capacity)) == NULL) {
		free(ch);
		return -ENOMEM;
	}
	pthread_mutex_init(&ch->mu, NULL);
	ch->id = atomic_fetch_add_explicit(&next_chan_id, 1, memory_order_relaxed);
	ch->item_size = item_size;
	ch->cap = capacity;
	atomic_init(&ch->refs[GUEST_MT_WRITER], 1);
	atomic_init(&ch->refs[GUEST_MT_READER], 1);
	atomic_init(&ch->alive, 2);
	*chp = ch;
	return 0;
}

void
guest_mtchan_dup(struct guest_mtchan *ch, int end)
{
	if (ch == NULL || (end != GUEST_MT_WRITER && end != GUEST_MT_READER))
		return;
	atomic_fetch_add_explicit(&ch->refs[end], 1, memory_order_relaxed);
}

static void	alt_abandon(struct guest_mt *m);

static void
wq_add(struct mt_wq *q, struct mt_waiter *w)
{
	HP_LIST_APPEND(&q->head, &q->tail, w);
	w->queued = 1;
}

static void
wq_del(struct mt_wq *q, struct mt_waiter *w)
{
	if (!w->queued)
		return;		/* taken out by its claimer */
	w->queued = 0;
	HP_LIST_UNLINK_TAIL(&q->head, &q->tail, w);
}

/* The first waiter of q whose microthread we can claim, taken out of q
 * (a rendezvous with thousands of receivers queued would otherwise scan
 * every one claimed before it); the others passed over are claimed
 * already (by another of their operations, or their deadline) and take
 * themselves off when they run. Under ch->mu. */
static struct mt_waiter *
wq_claim(struct mt_wq *q)
{
	for (struct mt_waiter *w = q->head; w != NULL; w = w->next)
		if (mt_try_claim(w->m, w->gen)) {
			wq_del(q, w);
			return w;
		}
	return NULL;
}

/* An end's last reference went: the other side's waiters (they would wait
 * forever) and this end's vultures are woken. Under ch->mu. */
static void
end_gone(struct guest_mtchan *ch, int end)
{
	struct mt_wq *peers = &ch->q[end == GUEST_MT_WRITER ? MT_Q_RECV : MT_Q_SEND];
	struct mt_wq *vult = &ch->q[end == GUEST_MT_WRITER ? MT_Q_WGONE : MT_Q_RGONE];
	struct mt_waiter *w;

	ch->gone[end] = 1;
	while ((w = wq_claim(peers)) != NULL) {
		w->op->status = -EPIPE;
		mt_ready(w->m, w->idx);
	}
	while ((w = wq_claim(vult)) != NULL) {
		w->op->status = 0;
		mt_ready(w->m, w->idx);
	}
}

void
guest_mtchan_close(struct guest_mtchan *ch, int end)
{
	if (ch == NULL || (end != GUEST_MT_WRITER && end != GUEST_MT_READER))
		return;
	/* acq_rel: the last closer sees what every other holder did */
	if (atomic_fetch_sub_explicit(&ch->refs[end], 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&ch->mu);
	end_gone(ch, end);
	pthread_mutex_unlock(&ch->mu);
	/* acq_rel: the other end's last closer, whichever comes second frees */
	if (atomic_fetch_sub_explicit(&ch->alive, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_destroy(&ch->mu);
	free(ch->buf);
	free(ch);
}

static void
buf_put(struct guest_mtchan *ch, const void *item)
{
	unsigned tail = (ch->head + ch->count) % ch->cap;

	if (ch->item_size)
		memcpy(ch->buf + (size_t)tail * ch->item_size, item, ch->item_size);
	ch->count++;
}

static void
buf_get(struct guest_mtchan *ch, void *item)
{
	if (ch->item_size)
		memcpy(item, ch->buf + (size_t)ch->head * ch->item_size, ch->item_size);
	ch->head = (ch->head + 1) % ch->cap;
	ch->count--;
}

static void
item_copy(const struct guest_mtchan *ch, void *to, const void *from)
{
	if (ch->item_size)
		memcpy(to, from, ch->item_size);
}

/* Completes op if it can, under its channel's lock; 1 done (op->status
 * set), 0 it would wait. */
static int
op_try(struct guest_mtop *op, uint64_t *now)
{
	struct guest_mtchan *ch = op->ch;
	struct mt_waiter *w;

	switch (op->kind) {
	case GUEST_MT_SEND:
		if (ch->gone[GUEST_MT_READER]) {
			op->status = -EPIPE;
			return 1;
		}
		/* a receiver waits only on an empty channel: hand it over */
		if (ch->count == 0 && (w = wq_claim(&ch->q[MT_Q_RECV])) != NULL) {
			item_copy(ch, w->op->item, op->item);
			w->op->status = 0;
			mt_ready(w->m, w->idx);
		} else if (ch->count < ch->cap) {
			buf_put(ch, op->item);
		} else {
			return 0;
		}
		op->status = 0;
		return 1;
	case GUEST_MT_RECV:
		if (ch->count > 0) {
			buf_get(ch, op->item);
			/* room now: a sender waiting on the full buffer
			 * moves its item in, keeping FIFO order */
			if ((w = wq_claim(&ch->q[MT_Q_SEND])) != NULL) {
				buf_put(ch, w->op->item);
				w->op->status = 0;
				mt_ready(w->m, w->idx);
			}
		} else if (ch->cap == 0 && (w = wq_claim(&ch->q[MT_Q_SEND])) != NULL) {
			item_copy(ch, op->item, w->op->item);
			w->op->status = 0;
			mt_ready(w->m, w->idx);
		} else if (ch->gone[GUEST_MT_WRITER]) {
			op->status = -EPIPE;
			return 1;
		} else {
			return 0;
		}
		op->status = 0;
		return 1;
	case GUEST_MT_WRITER_GONE:
	case GUEST_MT_READER_GONE:
		if (!ch->gone[op->kind == GUEST_MT_WRITER_GONE ?
		    GUEST_MT_WRITER : GUEST_MT_READER])
			return 0;
		op->status = 0;
		return 1;
	case GUEST_MT_DEADLINE:
		if (*now == 0)
			*now = hp_now_ns();
		if (*now < op->deadline_ns)
			return 0;
		op->status = 0;
		return 1;
	}
	return 0;
}

static int
op_list(const struct guest_mtop *op)
{
	switch (op->kind) {
	case GUEST_MT_SEND:
		return MT_Q_SEND;
	case GUEST_MT_RECV:
		return MT_Q_RECV;
	case GUEST_MT_WRITER_GONE:
		return MT_Q_WGONE;
	case GUEST_MT_READER_GONE:
		return MT_Q_RGONE;
	}
	return -1;
}

static void
lock_all(struct guest_mtchan **chs, int n)
{
	for (int i = 0; i < n; i++)
		pthread_mutex_lock(&chs[i]->mu);
}

static void
unlock_all(struct guest_mtchan **chs, int n)
{
	for (int i = n; i-- > 0; )
		pthread_mutex_unlock(&chs[i]->mu);
}

static int
alt(struct guest_mtop *ops, int n, int pri)
{
	struct guest_mt *self = mt_self();
	struct guest_mtchan *chs_small[MT_ALT_SMALL], **chs = chs_small;
	struct mt_waiter ws_small[MT_ALT_SMALL], *ws = ws_small;
	uint64_t now = 0, deadline = UINT64_MAX, gen;
	int nch = 0, nw = 0, didx = -1, start, idx;

	if (self == NULL)
		return -EPERM;
	if (ops == NULL || n < 1)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		struct guest_mtop *op = &ops[i];

		if (op->kind == GUEST_MT_DEADLINE) {
			if (op->deadline_ns < deadline) {
				deadline = op->deadline_ns;
				didx = i;
			}
			continue;
		}
		if (op_list(op) < 0 || op->ch == NULL)
			return -EINVAL;
		if ((op->kind == GUEST_MT_SEND || op->kind == GUEST_MT_RECV) &&
		    op->item == NULL && op->ch->item_size != 0)
			return -EINVAL;
		nw++;
	}
	if (nw > MT_ALT_SMALL) {
		/* one block, freed through ws (alt_abandon knows only ws) */
		if ((ws = malloc((size_t)nw * (sizeof(*ws) + sizeof(*chs)))) == NULL)
			return -ENOMEM;
		chs = (struct guest_mtchan **)(ws + nw);
	}
	/* each channel once, in id order: every alt locks them alike */
	for (int i = 0; i < n; i++) {
		struct guest_mtchan *ch = ops[i].ch;
		int j;

		if (ops[i].kind == GUEST_MT_DEADLINE)
			continue;
		for (j = nch; j > 0 && chs[j - 1]->id > ch->id; j--)
			;
		if (j > 0 && chs[j - 1] == ch)
			continue;
		memmove(&chs[j + 1], &chs[j], (size_t)(nch - j) * sizeof(*chs));
		chs[j] = ch;
		nch++;
	}
	lock_all(chs, nch);
	start = pri ? 0 : (int)(self->alt_rot++ % (uint32_t)n);
	for (int k = 0; k < n; k++) {
		idx = (start + k) % n;
		if (op_try(&ops[idx], &now)) {
			unlock_all(chs, nch);
			goto out;
		}
	}
	/* nothing ready: wait on every channel, WAITING before any waiter is
	 * seen (they are seen only under the locks we hold) */
	mt_wait_begin(self, deadline, didx);
	gen = MT_W_GEN(atomic_load_explicit(&self->wstate, memory_order_relaxed));
	nw = 0;
	for (int i = 0; i < n; i++) {
		struct mt_waiter *w;

		if (ops[i].kind == GUEST_MT_DEADLINE)
			continue;
		w = &ws[nw++];
		w->m = self;
		w->op = &ops[i];
		w->gen = gen;
		w->idx = i;
		w->list = op_list(&ops[i]);
		wq_add(&ops[i].ch->q[w->list], w);
	}
	self->waiters = ws;
	self->nwaiters = nw;
	self->abandon = alt_abandon;
	/* the suspension window is open (mt_wait_begin): a claimer that
	 * comes in before our switch is complete only marks us woken */
	unlock_all(chs, nch);
	idx = mt_wait_switch(self);
	lock_all(chs, nch);
	for (int i = 0; i < nw; i++)
		wq_del(&ws[i].op->ch->q[ws[i].list], &ws[i]);
	unlock_all(chs, nch);
	self->waiters = NULL;
	self->nwaiters = 0;
	if (idx == didx && didx >= 0)
		ops[idx].status = 0;	/* the deadline's */
out:
	if (ws != ws_small)
		free(ws);
	return idx;
}

int
guest_mt_alt(struct guest_mtop *ops, int n)
{
	return alt(ops, n, 0);
}

int
guest_mt_prialt(struct guest_mtop *ops, int n)
{
	return alt(ops, n, 1);
}

int
guest_mtchan_send(struct guest_mtchan *ch, const void *item)
{
	struct guest_mtop op = { .kind = GUEST_MT_SEND, .ch = ch,
	    .item = (void *)(uintptr_t)item };
	int rc;

	if (ch == NULL)
		return -EINVAL;
	rc = alt(&op, 1, 1);
	return rc < 0 ? rc : op.status;
}

int
guest_mtchan_recv(struct guest_mtchan *ch, void *item)
{
	struct guest_mtop op = { .kind = GUEST_MT_RECV, .ch = ch, .item = item };
	int rc;

	if (ch == NULL)
		return -EINVAL;
	rc = alt(&op, 1, 1);
	return rc < 0 ? rc : op.status;
}

/* A microthread abandoned while waiting leaves its channels, which may
 * outlive the runtime; its waiters are on its stack, about to go. */
static void
alt_abandon(struct guest_mt *m)
{
	struct mt_waiter *ws = m->waiters;

	if (ws == NULL)
		return;
	for (int i = 0; i < m->nwaiters; i++) {
		struct guest_mtchan *ch = ws[i].op->ch;

		pthread_mutex_lock(&ch->mu);
		wq_del(&ch->q[ws[i].list], &ws[i]);
		pthread_mutex_unlock(&ch->mu);
	}
	/* more than MT_ALT_SMALL: from malloc, not on its stack */
	if ((char *)ws < (char *)m->map || (char *)ws >= (char *)m->map + m->maplen)
		free(ws);
	m->waiters = NULL;
	m->nwaiters = 0;
}

size_t
mt_chan_item_size(const struct guest_mtchan *ch)
{
	return ch->item_size;
}
