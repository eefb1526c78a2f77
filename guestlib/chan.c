/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's channels: opening them, sending items with credit flow
 * control, ending them, and receiving items and ends (the service loop's
 * Data, Close and Reset, which this file fills). A channel lives in a
 * table (struct lg_chans): the hub's, or a lane's once it is passed to a
 * call that goes over the lane. The caller's channel then moves to the
 * lane's table under the id it had (its hub entry held Closed), and the
 * callee knows the lane's as LG_LANE_CHAN ids; over a lane each side
 * checks the other as hubd checks a guest, and a broken rule costs the
 * peer the lane (chan_lane.c moves them). */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "guestlib/internal.h"
#include "proto/channel.h"

static void	chan_stopped(struct lg_chans *cs, uint32_t id);

/* The table and id a public channel id names, or NULL: none of ours. */
static struct lg_chans *
chan_find(struct guest *g, uint32_t pub, uint32_t *id)
{
	struct lg_lane *ln;

	if (pub & LG_LANE_CHAN) {
		*id = pub & 0xffffu;
		for (uint32_t i = 0; i < g->nlanes; i++) {
			ln = g->lanes[i];
			if ((ln->id & 0x7fffu) == ((pub >> 16) & 0x7fffu))
				return *id != 0 && *id < ln->chans.max ? &ln->chans : NULL;
		}
		return NULL;
	}
	if (pub == 0 || pub >= g->chans.max)
		return NULL;
	if ((ln = g->chans.rx[pub].lane) != NULL) {
		*id = g->chans.rx[pub].lane_chan;
		return &ln->chans;
	}
	*id = pub;
	return &g->chans;
}

/* What a public id that names nothing gets: a lane's channel whose lane
 * is gone is over (-ENOTCONN), an id out of range is the caller's error. */
static int
chan_missing(uint32_t pub)
{
	return pub & LG_LANE_CHAN ? -ENOTCONN : -EINVAL;
}

/* A channel the other side of the table gave us to send on that we have
 * not touched yet: its parity, Active, not ended since it was given. */
static int
chan_given(struct lg_chans *cs, uint32_t id)
{
	return (int)(id % 2) != cs->side && !cs->tx[id].ended &&
	    hp_chan_state(lg_chan_entry(cs, id)) == HP_CHAN_ACTIVE;
}

/* A send's error as the channel's user sees it: over a lane, the lane
 * closing ends the channel (-ENOTCONN), and a peer that broke its ring
 * loses the lane. */
static int
chan_send_rc(struct lg_chans *cs, int rc)
{
	if (cs->lane == NULL || rc == 0)
		return rc;
	if (rc == -EPROTO)
		lg_lane_broken(cs->lane, "shm.ring.capacity");
	return rc == -EPIPE || rc == -EPROTO ? -ENOTCONN : rc;
}

struct credit_wait {
	struct guest	*g;
	struct lg_chans	*cs;
	uint32_t	id;
	size_t		len;
};

static int
credit_ready(void *arg)
{
	struct credit_wait *w = arg;
	struct lg_chans *cs = w->cs;
	int64_t credit;

	if (hp_host_goodbye_said(&w->g->seg))
		return -ESHUTDOWN;
	/* the receiver stopped it meanwhile (on_chan_end), or its lane
	 * closes; r[shm.flow.reset]: its credit word is no longer ours to
	 * read */
	if (cs->tx[w->id].ended || (cs->lane != NULL && cs->lane->closing))
		return -ENOTCONN;
	credit = hp_chan_credit(lg_chan_entry(cs, w->id), cs->tx[w->id].sent_total);
	if (credit < 0 && cs->lane != NULL) {
		lg_lane_broken(cs->lane, "shm.flow.wrap-rule");	/* the peer wrote it */
		return -ENOTCONN;
	}
	if (credit < 0)
		return -EPROTO;
	return (uint64_t)credit >= w->len;
}

/* Waits for credit (r[shm.flow.zero-credit]), serving meanwhile what
 * the runtime in use serves (a microthread suspends, the runtime serving;
 * the callback runtime serves the receiver's Reset, which ends the wait,
 * and other callers' handlers). 1 with credit, 0 when t ran out, or
 * -errno. */
static int
credit_wait(struct guest *g, struct credit_wait *w, struct timeout *t)
{
	struct lg_chans *cs = w->cs;

	g->stats.credit_waits++;
	cs->ep->credit_word = &lg_chan_entry(cs, w->id)->granted_total;
	/* what we staged must reach the receiver for it to grant */
	if (hp_endpoint_flush(cs->ep) == -EPROTO)
		return chan_send_rc(cs, -EPROTO);
	return g->rt->wait_serving(g, HP_WAIT_CREDIT, credit_ready, w, t);
}

/* Ends a channel we send on: ended first, so that a stop the receiver
 * sends meanwhile (while this waits for room) is taken as crossing our
 * end, and not answered with a Reset of its own after which ours would
 * come. */
static int
tx_end(struct guest *g, struct lg_chans *cs, uint32_t id, uint8_t type)
{
	cs->tx[id].open = 0;
	cs->tx[id].ended = 1;
	lg_chan_unorigin(g, cs, id);
	return lg_send_on(g, cs->lane, type, id, 0, NULL, 0, NULL, 0, 0, NULL);
}

void
lg_chan_tx_stop(struct guest *g, struct lg_chans *cs, uint32_t id)
{
	chan_send_rc(cs, tx_end(g, cs, id, HP_MSG_RESET));
}

void
lg_chan_unorigin(struct guest *g, struct lg_chans *cs, uint32_t id)
{
	uint32_t x = cs->tx[id].origin;

	if (cs->lane == NULL || x == 0)
		return;
	cs->tx[id].origin = 0;
	/* the hub's entry it held Closed: ours to free, never used on the
	 * hub (r[shm.flow.channel-id-reuse]) */
	g->chans.rx[x] = (struct rx_chan){ .open = 0 };
	g->chans.tx[x] = (struct tx_chan){ .ended = 1 };
	hp_chan_free(lg_chan_entry(&g->chans, x));
}

/* One item: credit first, then the message, staged when more follow. */
static int
chan_send_one(struct guest *g, struct lg_chans *cs, uint32_t id, const void *item,
	      size_t len, struct timeout *t, int flags)
{
	struct credit_wait w = { g, cs, id, len };
	int rc;

	if (len > cs->credit)
		return -EMSGSIZE;	/* could never fit in the window */
	if (cs->lane != NULL && len > cs->ep->lim.max_payload_size) {
		/* larger than the receiver takes (a lane's slots are the
		 * smaller of the two guests' payloads): the stream ends at
		 * both ends with a Reset, as hubd ends one it cannot deliver */
		tx_end(g, cs, id, HP_MSG_RESET);
		return -ENOTCONN;
	}
	/* credit, then room, then out with no wait between the last check
	 * and the send: a receiver's stop served while we wait ends the
	 * channel, and over a lane we answer it with a Reset that nothing
	 * may follow */
	for (;;) {
		if ((rc = credit_ready(&w)) == 0 && (rc = credit_wait(g, &w, t)) == 0)
			return -ETIMEDOUT;
		if (rc < 0) {
			if (rc == -EPIPE || rc == -ESHUTDOWN)
				g->dead = rc;	/* the hub's: a wait is on its doorbell */
			return rc;
		}
		if ((rc = hp_endpoint_tx_ready(cs->ep)) != 0)
			break;
		if ((rc = lg_wait_tx(g, cs->lane, t)) != 0)
			return chan_send_rc(cs, rc);
	}
	if (rc < 0 || (rc = lg_send_on(g, cs->lane, HP_MSG_DATA, id, 0, item, len, NULL, 0,
				       flags, t)) != 0)
		return chan_send_rc(cs, rc);
	/* r[shm.bytes.what-counts]: the item's payload_len, nothing else */
	cs->tx[id].sent_total += (uint32_t)len;
	return 0;
}

static int
chan_send_batch(struct guest *g, struct lg_chans *cs, uint32_t id,
		const struct iovec *items, int n, int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };	/* for the whole batch */
	int rc = 0, i;

	/* A look at what came (the head word, a cached line while nothing
	 * does): a sender whose credit never runs out still sees a Cancel
	 * or the receiver's Reset. On a microthread the runtime serves it
	 * once we let it. */
	if (hp_endpoint_rx_ready(cs->ep) > 0 && (rc = g->rt->sending(g)) != 0)
		return rc;
	if (cs->lane != NULL && cs->lane->closed)
		return -ENOTCONN;	/* closed while we served */
	/* r[shm.id.channel-parity]: we send on ids the other side gave us
	 * or that we opened; either way the entry must be Active. */
	if (!cs->tx[id].open) {
		if (!chan_given(cs, id))
			return -ENOTCONN;
		cs->tx[id].open = 1;
		cs->tx[id].sent_total = 0;	/* r[shm.flow.initial] */
	}
	/* one publication for the lot (r[shm.ordering.ring-publish]) */
	for (i = 0; i < n && rc == 0; i++)
		rc = chan_send_one(g, cs, id, items[i].iov_base, items[i].iov_len, &t,
				   i + 1 < n ? HP_SEND_MORE : 0);
	while (rc == 0 && !(cs->lane != NULL && cs->lane->closed) &&
	       (rc = hp_endpoint_flush(cs->ep)) == -EAGAIN)
		rc = chan_send_rc(cs, lg_wait_tx(g, cs->lane, &t));
	return rc < 0 ? chan_send_rc(cs, rc) : 0;
}

int
guest_chan_send_batch(struct guest *g, uint32_t chan, const struct iovec *items,
		      int n, int timeout_ms)
{
	struct lg_chans *cs;
	uint32_t id;
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
	if (n < 0 || lg_buf_bad(items, (size_t)n))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (lg_buf_bad(items[i].iov_base, items[i].iov_len))
			return -EINVAL;
	g->rt->lock(g);
	if ((cs = chan_find(g, chan, &id)) == NULL) {
		rc = chan_missing(chan);
	} else {
		/* a lane closed while we wait is freed only after */
		if (cs->lane != NULL)
			lg_lane_hold(cs->lane);
		rc = chan_send_batch(g, cs, id, items, n, timeout_ms);
		if (cs->lane != NULL)
			lg_lane_put(cs->lane);
	}
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
	struct lg_chans *cs;
	uint32_t id;
	int rc;

	if ((cs = chan_find(g, chan, &id)) == NULL)
		return -ENOTCONN;
	if (cs->rx[id].open) {
		if (cs->rx[id].stopping)
			return -ENOTCONN;
		cs->rx[id].stopping = 1;
		rc = lg_send_on(g, cs->lane, type, id, 0, NULL, 0, NULL, 0, 0, NULL);
		chan_stopped(cs, id);
		return chan_send_rc(cs, rc);
	}
	if (!cs->tx[id].open && !chan_given(cs, id))
		return -ENOTCONN;
	return chan_send_rc(cs, tx_end(g, cs, id, type));
}

static int
chan_end_locked(struct guest *g, uint32_t chan, uint8_t type)
{
	int rc;

	if (lg_detached(g))
		return -ENOTCONN;
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
	struct lg_chans *cs = &g->chans;
	int64_t id;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	id = hp_chan_open(cs->entries, cs->max, cs->side, cs->credit, &cs->cursor);
	if (id >= 0)
		cs->rx[id] = (struct rx_chan){ .on_item = on_item, .on_end = on_end,
					       .ctx = ctx, .open = 1 };
	g->rt->unlock(g);
	return id;
}

int64_t
guest_chan_open_send(struct guest *g)
{
	struct lg_chans *cs = &g->chans;
	int64_t id;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	id = hp_chan_open(cs->entries, cs->max, cs->side, cs->credit, &cs->cursor);
	if (id >= 0)	/* r[shm.flow.initial] */
		cs->tx[id] = (struct tx_chan){ .open = 1, .sent_total = 0 };
	g->rt->unlock(g);
	return id;
}

/* Grants back what channel id consumed and has not reported yet, and
 * extra, waking the sender if it waits for it. */
static void
grant(struct lg_chans *cs, uint32_t id, uint32_t extra)
{
	struct rx_chan *c = &cs->rx[id];

	hp_chan_grant(lg_chan_entry(cs, id), c->unreported + extra);
	c->granted += c->unreported + extra;
	if (cs->lane == NULL || !cs->lane->closed)
		hp_endpoint_notify_credit(cs->ep, &lg_chan_entry(cs, id)->granted_total);
	c->unreported = 0;
}

static void
consumed(struct lg_chans *cs, uint32_t id, size_t len, int flush)
{
	struct rx_chan *c = &cs->rx[id];

	if (!c->open || c->stopping)
		return;		/* ended: its credit is nobody's; stopped:
				 * granted back at the stop (chan_stopped) */
	c->held -= len < c->held ? len : c->held;
	/* r[shm.flow.ordering.receiver]: grant back what we consumed, in
	 * chunks so the sender is not woken for every item: a quarter of
	 * the window at a time (no item can exceed the window, so the
	 * sender is never left waiting on grants held back here) */
	c->unreported += (uint32_t)len;
	if (c->unreported != 0 && (flush || c->unreported >= cs->credit / 4))
		grant(cs, id, 0);
	cs->owed |= c->unreported != 0;
}

void
lg_chan_consumed(struct guest *g, uint32_t chan, size_t len, int flush)
{
	struct lg_chans *cs;
	uint32_t id;

	if ((cs = chan_find(g, chan, &id)) != NULL)
		consumed(cs, id, len, flush);
}

/* The end of a channel we receive on: the receiver frees the entry
 * (r[shm.flow.channel-id-reuse]), and the hub's entry it moved from,
 * before on_end, which may open another. */
void
lg_chan_rx_end(struct guest *g, struct lg_chans *cs, uint32_t id, int status)
{
	struct rx_chan c = cs->rx[id];

	cs->rx[id].open = 0;
	hp_chan_free(lg_chan_entry(cs, id));
	if (cs->lane != NULL && c.origin != 0) {
		g->chans.rx[c.origin] = (struct rx_chan){ .open = 0 };
		hp_chan_free(lg_chan_entry(&g->chans, c.origin));
	}
	if (c.on_end != NULL)
		c.on_end(c.ctx, status);
}

static int
on_data(struct guest *g, struct hp_msg_in *m)
{
	struct lg_lane *ln = g->cur_lane;
	struct lg_chans *cs = ln != NULL ? &ln->chans : &g->chans;
	uint32_t id = m->desc.id;
	struct rx_chan *c = &cs->rx[id];

	/* data on a channel we do not receive (a moved one comes only over
	 * its lane) */
	if (!c->open || (ln == NULL && c->lane != NULL)) {
		g->lane_rule = "lane.channel";
		return -EPROTO;
	}
	/* r[shm.flow.remaining-credit]: a lane's peer sends within what we
	 * granted, by our own count (it may write the shared word too) */
	if (ln != NULL) {
		if (!hp_credit_allows(c->granted, c->got, m->len)) {
			g->lane_rule = "shm.flow.remaining-credit";
			return -EPROTO;
		}
		c->got += m->len;
	}
	if (c->stopping) {
		/* sent before the sender saw our stop: dropped, and its
		 * credit back at once so that it is not left waiting */
		grant(cs, id, m->len);
		return 0;
	}
	if (c->deferred)	/* consumed when its reader takes it */
		c->held += m->len;
	c->on_item(c->ctx, m->payload, m->len);
	if (!c->deferred)
		consumed(cs, id, m->len, 0);
	return 0;
}

/* The ring is empty: what is left below a quarter goes back too. The
 * sender's next item may need more than the window less that remainder,
 * and nothing more will arrive to make it a quarter. */
static void
grant_owed(struct lg_chans *cs)
{
	cs->owed = 0;
	for (uint32_t id = 1; id < cs->max; id++)
		if (cs->rx[id].open && cs->rx[id].unreported != 0)
			grant(cs, id, 0);
}

/* We told the sender of id, a channel we receive on, to stop: what it
 * consumed and has not reported, and what it holds (it takes no more of
 * it), goes back now, so that a sender waiting for credit is not left
 * waiting until it sees the stop. Items that come after are granted
 * back as they come (on_data). */
static void
chan_stopped(struct lg_chans *cs, uint32_t id)
{
	struct rx_chan *c = &cs->rx[id];

	if (c->unreported != 0 || c->held != 0)
		grant(cs, id, (uint32_t)c->held);	/* within the window */
	c->held = 0;
}

/* r[shm.flow.ordering.receiver]: a receiver that keeps items to take
 * later (a queue of its own) grants their credit back as it takes them
 * (guest_chan_consumed), not as they arrive: what it keeps stays within
 * the window, and a slow reader holds the sender back. */
int
guest_chan_hold(struct guest *g, uint32_t chan)
{
	struct lg_chans *cs;
	uint32_t id;
	int rc = 0;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	if ((cs = chan_find(g, chan, &id)) == NULL || !cs->rx[id].open)
		rc = -ENOTCONN;
	else
		cs->rx[id].deferred = 1;
	g->rt->unlock(g);
	return rc;
}

int
guest_chan_consumed(struct guest *g, uint32_t chan, size_t bytes)
{
	struct lg_chans *cs;
	struct rx_chan *c;
	uint32_t id;
	int rc = 0;

	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	if ((cs = chan_find(g, chan, &id)) == NULL || !cs->rx[id].open) {
		rc = -ENOTCONN;
	} else if (!(c = &cs->rx[id])->stopping) {
		if (bytes > c->held)
			rc = -EINVAL;	/* more than it holds (nothing if not held) */
		else if (bytes > 0)	/* caught up: all of it, as grant_owed */
			consumed(cs, id, bytes, bytes == c->held);
	}
	g->rt->unlock(g);
	return rc;
}

int
guest_chan_accept(struct guest *g, uint32_t chan, guest_item_fn on_item,
		  guest_end_fn on_end, void *ctx)
{
	struct lg_chans *cs;
	struct rx_chan *c;
	uint32_t id;
	int rc = 0;

	if (on_item == NULL || on_end == NULL)
		return -EINVAL;
	if (lg_detached(g))
		return -ENOTCONN;
	g->rt->lock(g);
	if ((cs = chan_find(g, chan, &id)) == NULL) {
		rc = chan_missing(chan);
	} else if (!(c = &cs->rx[id])->offered || c->orphan) {
		rc = -ENOTCONN;		/* no rx<T> of a call in hand, or taken */
	} else if (c->ended) {
		/* ended before we read: told now, the entry ours to free
		 * (r[shm.flow.channel-id-reuse]) */
		int status = c->status;

		*c = (struct rx_chan){ .open = 0 };
		hp_chan_free(lg_chan_entry(cs, id));
		on_end(ctx, status);
	} else {
		*c = (struct rx_chan){ .on_item = on_item, .on_end = on_end, .ctx = ctx,
				       .open = 1 };
		/* r[shm.flow.ordering.receiver]: the window, which the host
		 * waited for to send anything */
		grant(cs, id, cs->credit);
	}
	g->rt->unlock(g);
	return rc;
}

void
lg_chan_rx_answered(struct guest *g, struct guest_call *c)
{
	struct lg_chans *cs = c->lane != NULL ? &c->lane->chans : &g->chans;

	if (c->lane_gone) {	/* its table went with the lane */
		c->nrx = 0;
		return;
	}
	for (uint8_t i = 0; i < c->nrx; i++) {
		struct rx_chan *r = &cs->rx[c->rx[i]];

		if (!r->offered)
			continue;	/* accepted: its end frees it */
		if (r->ended) {
			*r = (struct rx_chan){ .open = 0 };
			hp_chan_free(lg_chan_entry(cs, c->rx[i]));
		} else {
			r->orphan = 1;	/* the host ends it, answered */
		}
	}
	c->nrx = 0;
}

static int
on_chan_end(struct guest *g, struct hp_msg_in *m)
{
	struct lg_lane *ln = g->cur_lane;
	struct lg_chans *cs = ln != NULL ? &ln->chans : &g->chans;
	uint32_t id = m->desc.id;

	if (cs->rx[id].offered && !cs->rx[id].ended) {
		/* an rx<T> not accepted yet: kept for its reader, or freed
		 * if its call was answered */
		if (cs->rx[id].orphan) {
			cs->rx[id] = (struct rx_chan){ .open = 0 };
			hp_chan_free(lg_chan_entry(cs, id));
		} else {
			cs->rx[id].ended = 1;
			cs->rx[id].status = m->desc.msg_type == HP_MSG_CLOSE ? 0 : -ECONNRESET;
		}
		return 0;
	}
	if (cs->rx[id].open && (ln != NULL || cs->rx[id].lane == NULL)) {
		lg_chan_rx_end(g, cs, id, m->desc.msg_type == HP_MSG_CLOSE ? 0 : -ECONNRESET);
		return 0;
	}
	if (cs->tx[id].open || chan_given(cs, id)) {
		/* the receiver gave up on our stream; r[shm.flow.reset]: its
		 * credit word is no longer ours to read */
		/* over a lane the sender answers a stop itself (hubd does
		 * through the hub): nothing more follows, the receiver may
		 * free the entry */
		if (ln != NULL)
			tx_end(g, cs, id, HP_MSG_RESET);
		cs->tx[id].open = 0;
		cs->tx[id].ended = 1;
		return 0;
	}
	/* the receiver's stop crossing our own end: both let go */
	if (cs->tx[id].ended)
		return 0;
	g->lane_rule = "lane.channel";
	return -EPROTO;
}

void
lg_chan_wire(struct guest *g)
{
	g->on_msg[HP_MSG_DATA] = on_data;
	g->on_msg[HP_MSG_CLOSE] = on_chan_end;
	g->on_msg[HP_MSG_RESET] = on_chan_end;
	g->drained = grant_owed;
}
