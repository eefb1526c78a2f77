/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's channels: opening them, sending items with credit flow
 * control, ending them, and receiving items and ends (the service loop's
 * Data, Close and Reset, which this file fills). */
#include <errno.h>
#include <sys/uio.h>

#include "guestlib/internal.h"
#include "proto/channel.h"

static void	chan_stopped(struct guest *g, uint32_t chan);

static struct hp_chan_entry *
chan_entry(struct guest *g, uint32_t id)
{
	return &g->view.chans[id];
}

/* A channel the host gave us to send on that we have not touched yet:
 * even, Active, not ended since it was given. */
static int
chan_given(struct guest *g, uint32_t chan)
{
	return chan % 2 == 0 && !g->tx[chan].ended &&
	    hp_chan_state(chan_entry(g, chan)) == HP_CHAN_ACTIVE;
}

struct credit_wait {
	struct guest	*g;
	uint32_t	chan;
	size_t		len;
};

static int
credit_ready(void *arg)
{
	struct credit_wait *w = arg;
	struct guest *g = w->g;
	uint32_t id = w->chan;
	size_t len = w->len;
	int64_t credit;

	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return -ESHUTDOWN;
	/* the receiver stopped it meanwhile (on_chan_end); r[shm.flow.reset]:
	 * its credit word is no longer ours to read */
	if (g->tx[id].ended)
		return -ENOTCONN;
	credit = hp_chan_credit(chan_entry(g, id), g->tx[id].sent_total);
	if (credit < 0)
		return -EPROTO;
	return (uint64_t)credit >= len;
}

/* Waits for credit (r[shm.flow.zero-credit]), serving meanwhile what
 * the runtime in use serves (a microthread suspends, the runtime serving;
 * the callback runtime serves the receiver's Reset, which ends the wait,
 * and other callers' handlers). 1 with credit, 0 when t ran out, or
 * -errno. */
static int
credit_wait(struct guest *g, struct credit_wait *w, struct timeout *t)
{
	g->stats.credit_waits++;
	g->ep.credit_word = &chan_entry(g, w->chan)->granted_total;
	/* what we staged must reach the receiver for it to grant */
	if (hp_endpoint_flush(&g->ep) == -EPROTO)
		return -EPROTO;
	return g->rt->wait_serving(g, HP_WAIT_CREDIT, credit_ready, w, t);
}

/* One item: credit first, then the message, staged when more follow. */
static int
chan_send_one(struct guest *g, uint32_t chan, const void *item, size_t len,
	      struct timeout *t, int flags)
{
	struct credit_wait w = { g, chan, len };
	int rc;

	if (len > g->seg.params.initial_credit)
		return -EMSGSIZE;	/* could never fit in the window */
	if ((rc = credit_ready(&w)) == 0 && (rc = credit_wait(g, &w, t)) == 0)
		return -ETIMEDOUT;
	if (rc < 0) {
		if (rc == -EPIPE || rc == -ESHUTDOWN)
			g->dead = rc;
		return rc;
	}
	if ((rc = lg_send_msg(g, HP_MSG_DATA, chan, 0, item, len, NULL, 0, flags, t)) != 0)
		return rc;
	g->tx[chan].sent_total += (uint32_t)len;
	return 0;
}

static int
chan_send_batch(struct guest *g, uint32_t chan, const struct iovec *items,
		int n, int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };	/* for the whole batch */
	int rc = 0, i;

	/* r[shm.id.channel-parity]: we send on ids the host gave us (even)
	 * or that we opened (odd); either way the entry must be Active. */
	if (chan == 0 || chan >= g->seg.params.max_channels || n < 0)
		return -EINVAL;
	/* A look at what came (the head word, a cached line while nothing
	 * does): a sender whose credit never runs out still sees a Cancel
	 * or the receiver's Reset. On a microthread the runtime serves it
	 * once we let it. */
	if (hp_endpoint_rx_ready(&g->ep) > 0 && (rc = g->rt->sending(g)) != 0)
		return rc;
	if (!g->tx[chan].open) {
		if (!chan_given(g, chan))
			return -ENOTCONN;
		g->tx[chan].open = 1;
		g->tx[chan].sent_total = 0;	/* r[shm.flow.initial] */
	}
	/* one publication for the lot (r[shm.ordering.ring-publish]) */
	for (i = 0; i < n && rc == 0; i++)
		rc = chan_send_one(g, chan, items[i].iov_base, items[i].iov_len, &t,
				   i + 1 < n ? HP_SEND_MORE : 0);
	while (rc == 0 && (rc = hp_endpoint_flush(&g->ep)) == -EAGAIN)
		rc = lg_wait_tx(g, &t);
	return rc < 0 ? rc : 0;
}

int
guest_chan_send_batch(struct guest *g, uint32_t chan, const struct iovec *items,
		      int n, int timeout_ms)
{
	int rc;

	g->rt->lock(g);
	rc = chan_send_batch(g, chan, items, n, timeout_ms);
	g->rt->unlock(g);
	return rc;
}

int
guest_chan_send(struct guest *g, uint32_t chan, const void *item, size_t len,
		int timeout_ms)
{
	struct iovec one = { (void *)(uintptr_t)item, len };

	return guest_chan_send_batch(g, chan, &one, 1, timeout_ms);
}

/* Close or Reset of a channel we send on, whether or not anything was
 * sent: the receiver frees the entry only when it sees one
 * (r[shm.flow.channel-id-reuse]). Once only: a second would name a
 * channel the receiver no longer has. On a channel we receive on, it
 * tells the sender to stop; the entry stays ours (Active) until the
 * sender's own Close or Reset says nothing more follows. */
static int
chan_end(struct guest *g, uint32_t chan, uint8_t type)
{
	int rc;

	if (chan != 0 && chan < g->seg.params.max_channels && g->rx[chan].open) {
		if (g->rx[chan].stopping)
			return -ENOTCONN;
		g->rx[chan].stopping = 1;
		rc = lg_send_msg(g, type, chan, 0, NULL, 0, NULL, 0, 0, NULL);
		chan_stopped(g, chan);
		return rc;
	}
	if (chan == 0 || chan >= g->seg.params.max_channels ||
	    (!g->tx[chan].open && !chan_given(g, chan)))
		return -ENOTCONN;
	rc = lg_send_msg(g, type, chan, 0, NULL, 0, NULL, 0, 0, NULL);
	g->tx[chan].open = 0;
	g->tx[chan].ended = 1;
	return rc;
}

static int
chan_end_locked(struct guest *g, uint32_t chan, uint8_t type)
{
	int rc;

	g->rt->lock(g);
	rc = chan_end(g, chan, type);
	g->rt->unlock(g);
	return rc;
}

int
guest_chan_close(struct guest *g, uint32_t chan)
{
	return chan_end_locked(g, chan, HP_MSG_CLOSE);
}

int
guest_chan_reset(struct guest *g, uint32_t chan)
{
	return chan_end_locked(g, chan, HP_MSG_RESET);
}

int64_t
guest_chan_open(struct guest *g, guest_item_fn on_item, guest_end_fn on_end,
		void *ctx)
{
	int64_t id;

	g->rt->lock(g);
	id = hp_chan_open(g->view.chans, g->seg.params.max_channels,
			  HP_SIDE_GUEST, g->seg.params.initial_credit, &g->chan_cursor);
	if (id >= 0)
		g->rx[id] = (struct rx_chan){ .on_item = on_item, .on_end = on_end,
					      .ctx = ctx, .open = 1 };
	g->rt->unlock(g);
	return id;
}

int64_t
guest_chan_open_send(struct guest *g)
{
	int64_t id;

	g->rt->lock(g);
	id = hp_chan_open(g->view.chans, g->seg.params.max_channels,
			  HP_SIDE_GUEST, g->seg.params.initial_credit, &g->chan_cursor);
	if (id >= 0)	/* r[shm.flow.initial] */
		g->tx[id] = (struct tx_chan){ .open = 1, .sent_total = 0 };
	g->rt->unlock(g);
	return id;
}

/* Grants back what channel id consumed and has not reported yet, and
 * extra, waking the sender if it waits for it. */
static void
grant(struct guest *g, uint32_t id, uint32_t extra)
{
	hp_chan_grant(chan_entry(g, id), g->rx[id].unreported + extra);
	hp_endpoint_notify_credit(&g->ep, &chan_entry(g, id)->granted_total);
	g->rx[id].unreported = 0;
}

static int
on_data(struct guest *g, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct rx_chan *c = &g->rx[id];

	if (!c->open)
		return -EPROTO;	/* data on a channel we do not receive */
	if (c->stopping) {
		/* sent before the sender saw our stop: dropped, and its
		 * credit back at once so that it is not left waiting */
		grant(g, id, m->len);
		return 0;
	}
	if (c->deferred)	/* consumed when its reader takes it */
		c->held += m->len;
	c->on_item(c->ctx, m->payload, m->len);
	if (!c->deferred)
		lg_chan_consumed(g, id, m->len, 0);
	return 0;
}

void
lg_chan_consumed(struct guest *g, uint32_t chan, size_t len, int flush)
{
	struct rx_chan *c = &g->rx[chan];

	if (!c->open || c->stopping)
		return;		/* ended: its credit is nobody's; stopped:
				 * granted back at the stop (chan_stopped) */
	c->held -= len < c->held ? len : c->held;
	/* r[shm.flow.ordering.receiver]: grant back what we consumed, in
	 * chunks so the sender is not woken for every item: a quarter of
	 * the window at a time (no item can exceed the window, so the
	 * sender is never left waiting on grants held back here) */
	c->unreported += (uint32_t)len;
	if (c->unreported != 0 &&
	    (flush || c->unreported >= g->seg.params.initial_credit / 4))
		grant(g, chan, 0);
	g->owed |= c->unreported != 0;
}

/* The ring is empty: what is left below a quarter goes back too. The
 * sender's next item may need more than the window less that remainder,
 * and nothing more will arrive to make it a quarter. */
static void
grant_owed(struct guest *g)
{
	g->owed = 0;
	for (uint32_t id = 1; id < g->seg.params.max_channels; id++)
		if (g->rx[id].open && g->rx[id].unreported != 0)
			grant(g, id, 0);
}

/* We told the sender of chan, a channel we receive on, to stop: what it
 * consumed and has not reported, and what it holds (it takes no more of
 * it), goes back now, so that a sender waiting for credit is not left
 * waiting until it sees the stop. Items that come after are granted
 * back as they come (on_data). */
static void
chan_stopped(struct guest *g, uint32_t chan)
{
	struct rx_chan *c = &g->rx[chan];

	if (c->unreported != 0 || c->held != 0)
		grant(g, chan, (uint32_t)c->held);	/* within the window */
	c->held = 0;
}

/* r[shm.flow.ordering.receiver]: a receiver that keeps items to take
 * later (a queue of its own) grants their credit back as it takes them
 * (guest_chan_consumed), not as they arrive: what it keeps stays within
 * the window, and a slow reader holds the sender back. */
int
guest_chan_hold(struct guest *g, uint32_t chan)
{
	int rc = 0;

	g->rt->lock(g);
	if (chan == 0 || chan >= g->seg.params.max_channels || !g->rx[chan].open)
		rc = -ENOTCONN;
	else
		g->rx[chan].deferred = 1;
	g->rt->unlock(g);
	return rc;
}

int
guest_chan_consumed(struct guest *g, uint32_t chan, size_t bytes)
{
	struct rx_chan *c;
	int rc = 0;

	g->rt->lock(g);
	if (chan == 0 || chan >= g->seg.params.max_channels || !g->rx[chan].open) {
		rc = -ENOTCONN;
	} else if (!(c = &g->rx[chan])->stopping) {
		if (bytes > c->held)
			rc = -EINVAL;	/* more than it holds (nothing if not held) */
		else if (bytes > 0)	/* caught up: all of it, as grant_owed */
			lg_chan_consumed(g, chan, bytes, bytes == c->held);
	}
	g->rt->unlock(g);
	return rc;
}

static int
on_chan_end(struct guest *g, struct hp_msg_in *m)
{
	uint32_t id = m->desc.id;
	struct rx_chan *c = &g->rx[id];

	if (c->open) {
		c->open = 0;
		/* r[shm.flow.channel-id-reuse]: the receiver frees the entry */
		hp_chan_free(chan_entry(g, id));
		if (c->on_end != NULL)
			c->on_end(c->ctx, m->desc.msg_type == HP_MSG_CLOSE ? 0 : -ECONNRESET);
		return 0;
	}
	if (g->tx[id].open || chan_given(g, id)) {
		/* the receiver gave up on our stream; r[shm.flow.reset]: its
		 * credit word is no longer ours to read */
		g->tx[id].open = 0;
		g->tx[id].ended = 1;
		return 0;
	}
	/* the receiver's stop crossing our own end: both let go */
	return g->tx[id].ended ? 0 : -EPROTO;
}

void
lg_chan_wire(struct guest *g)
{
	g->on_msg[HP_MSG_DATA] = on_data;
	g->on_msg[HP_MSG_CLOSE] = on_chan_end;
	g->on_msg[HP_MSG_RESET] = on_chan_end;
	g->drained = grant_owed;
}
