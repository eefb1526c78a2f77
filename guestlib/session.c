/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's session with the hub, below the service loop: the
 * heartbeat and the clock reads that keep it, a wait on the hub that
 * beats, and sending a message (waiting for room through the runtime). */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "guestlib/internal.h"
#include "proto/peer.h"

static void
heartbeat(struct guest *g, uint64_t now)
{
	if (g->hb_interval == 0) {
		g->next_hb = UINT64_MAX;	/* tick never reads the clock */
		return;
	}
	if (now < g->next_hb)
		return;
	/* r[shm.crash.heartbeat] r[shm.crash.heartbeat-clock]: our
	 * CLOCK_MONOTONIC, at least once per interval; relaxed: the host
	 * only compares it with its own clock. */
	hp_peer_beat(g->view.entry, now);
	g->next_hb = now + g->hb_interval / 2;
}

/* Reads the clock and beats if a beat is due. */
static uint64_t
clock_beat(struct guest *g)
{
	uint64_t now = hp_now_ns();

	heartbeat(g, now);
	return now;
}

/* The heartbeat while messages flow and nothing waits: a message sent or
 * served looks at the coarse clock (a few ns, a tick behind) and beats by
 * the exact one once a beat is due, so a guest back in libguest within
 * the interval beats. Stream items and events look every TICK_ITEMS
 * only: their few ns are a tenth of a small item's cost, and a callback
 * taking a sixth of the interval per item is rare where a slow handler
 * is not. (A count
 * of 64 messages between looks bounded no time: a queue of 100 ms calls,
 * or of 1 MiB copies on a loaded machine, went two intervals unbeaten.) */
static inline void
tick(struct guest *g, uint8_t type)
{
	if (type == HP_MSG_DATA && ++g->items % TICK_ITEMS != 0)
		return;
	if (hp_coarse_ns() >= g->next_hb)
		clock_beat(g);
}

void
lg_tick(struct guest *g, uint8_t type)
{
	tick(g, type);
}

uint64_t
lg_clock_beat(struct guest *g)
{
	return clock_beat(g);
}

/* Milliseconds from now to at, rounded up. */
static int
ms_until(uint64_t at, uint64_t now)
{
	uint64_t ms;

	if (at == UINT64_MAX)
		return -1;
	if (at <= now)
		return 0;
	ms = (at - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* A wait's condition, or guest_stop while the service loop runs. */
static int
stop_or_ready(void *arg)
{
	struct lg_cond *w = arg;

	/* relaxed: only whether to stop waiting; the loop reads the flag
	 * again with acquire */
	if ((w->g->running != 0 || w->g->servicing != 0) &&
	    atomic_load_explicit(&w->g->stop, memory_order_relaxed))
		return -ESHUTDOWN;
	return w->ready(w->arg);
}

/* hp_endpoint_wait in rounds that end at the next heartbeat due time,
 * beating between them (r[shm.crash.heartbeat]): a guest waiting on the
 * hub is alive, whatever it waits for and however long. Inside the
 * service loop (guest_run, guest_service) guest_stop ends the wait with
 * -ESHUTDOWN (its write to wake_fd ends the sleep), so that the handler
 * waiting returns and the loop with it, before hubd's stop_grace runs
 * out; after the loop, a call waits as long as it asked. */
int
lg_wait_beating(struct guest *g, uint32_t waits, int (*ready)(void *),
		void *arg, struct timeout *t)
{
	struct lg_cond w = { g, ready, arg };
	uint64_t now, until;
	int rc;

	now = clock_beat(g);
	lg_timeout_at(t, now);
	for (;;) {
		until = t->at;
		if (g->hb_interval != 0 && g->next_hb < until)
			until = g->next_hb;
		rc = hp_endpoint_wait(&g->ep, waits, stop_or_ready, &w, ms_until(until, now));
		if (rc != 0)
			return rc;
		if ((now = clock_beat(g)) >= t->at)
			return 0;
	}
}

/* -- sending ----------------------------------------------------------- */

struct tx_wait {
	struct guest	*g;
	struct lg_lane	*lane;		/* NULL: the hub's ring */
};

static int
tx_ready(void *arg)
{
	struct tx_wait *w = arg;
	struct guest *g = w->g;

	if (hp_host_goodbye_said(&g->seg))
		return -ESHUTDOWN;
	if (w->lane == NULL)
		return hp_endpoint_tx_ready(&g->ep);
	/* a lane whose peer went never has room again */
	if (w->lane->closing || hp_group_hung(&w->lane->ep))
		return -EPIPE;
	return hp_endpoint_tx_ready(&w->lane->ep);
}

/* Waits until a send of any size can be attempted again on ln's ring
 * (NULL: the hub's), up to t (NULL: as long as it takes). The wait is
 * the group's: the awaited bits go to every endpoint of it. */
int
lg_wait_tx(struct guest *g, struct lg_lane *ln, struct timeout *t)
{
	struct timeout forever = { -1, 0 };
	struct tx_wait w = { g, ln };
	struct hp_endpoint *ep = ln != NULL ? &ln->ep : &g->ep;
	int rc;

	struct timeout stall = { LG_LANE_STALL_MS, 0 };
	int peer_first = 0;

	g->stats.ring_waits++;
	if (hp_endpoint_flush(ep) == -EPROTO)
		return -EPROTO;
	if (t == NULL)
		t = &forever;
	if (ln != NULL) {
		uint64_t now = hp_now_ns();

		/* a lane's peer that takes nothing for this long has
		 * stopped reading it: it loses the lane, we go on (through
		 * the hub: a caller never hangs on a peer's ring, as hubd
		 * ends a guest that stops reading its own) */
		peer_first = lg_timeout_at(t, now) > now + LG_LANE_STALL_MS * 1000000ull;
		lg_lane_hold(ln);	/* closed meanwhile: tx_ready says so */
	}
	/* r[shm.ring.full]: over a lane, serving what runs no handler
	 * meanwhile (a peer waiting for room for its answers takes nothing
	 * of ours); hubd never waits on us */
	rc = (ln != NULL ? g->rt->wait_ends : g->rt->wait)(g, HP_WAIT_RING_SPACE | HP_WAIT_SLOT,
							    tx_ready, &w, peer_first ? &stall : t);
	if (ln != NULL) {
		if (rc == 0 && peer_first)
			lg_lane_broken(ln, "shm.ring.full");
		lg_lane_put(ln);
		if (rc == 0 && peer_first)
			return -EPIPE;
	}
	if (rc == 0)
		return -ETIMEDOUT;
	if (ln == NULL && (rc == -ESHUTDOWN || rc == -EPIPE))
		g->dead = rc;
	return rc < 0 ? rc : 0;
}

int
lg_send_on(struct guest *g, struct lg_lane *ln, uint8_t type, uint32_t id,
	   uint64_t method, const void *head, size_t hlen, const void *body,
	   size_t blen, int flags, struct timeout *t)
{
	struct hp_endpoint *ep = ln != NULL ? &ln->ep : &g->ep;
	struct hp_outbuf ob;
	size_t len = hlen + blen;
	int rc;

	if (g->dead)
		return g->dead;
	if (ln != NULL && ln->closing)
		return -EPIPE;
	if (len > ep->lim.max_payload_size)
		return -EMSGSIZE;
	while ((rc = hp_endpoint_reserve(ep, (uint32_t)len, &ob)) == -EAGAIN)
		if ((rc = lg_wait_tx(g, ln, t)) != 0)
			return rc;
	if (rc != 0)
		return rc;
	if (hlen > 0)
		memcpy(ob.buf, head, hlen);
	if (blen > 0)
		memcpy(ob.buf + hlen, body, blen);
	/* a handler may send for long without returning to the loop; a
	 * batch's items follow each other with no plugin code between */
	if (!(flags & HP_SEND_MORE))
		tick(g, type);
	return hp_endpoint_commit(ep, &ob, type, id, method, (uint32_t)len, flags);
}

/* Sends head (a prefix such as a response envelope) + body as one message
 * on the hub's ring, waiting for room up to t (NULL: as long as it takes). */
int
lg_send_msg(struct guest *g, uint8_t type, uint32_t id, uint64_t method,
	    const void *head, size_t hlen, const void *body, size_t blen,
	    int flags, struct timeout *t)
{
	return lg_send_on(g, NULL, type, id, method, head, hlen, body, blen, flags, t);
}
