/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The callback runtime (struct lg_runtime): the caller's own thread does
 * everything. A wait serves what arrives while it waits, a handler runs
 * in the loop that read its request (or later, when that loop may run
 * none), and guest_run and guest_service are the loop itself. */
#include <errno.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/msg.h"

/* One thread: nothing to lock. */
static void
cb_nolock(struct guest *g)
{
	(void)g;
}

/* What a wait that serves waits for: its condition, or something to
 * serve. */
static int
or_rx_ready(void *arg)
{
	struct lg_cond *w = arg;
	int rc = w->ready(w->arg);

	return rc != 0 ? rc : lg_traffic(w->g);
}

/* Serves what arrives while it waits, as guest_call does: other callers'
 * handlers, a Cancel, the receiver's Reset (which ends a credit wait),
 * so that a stream nobody reads any more holds up neither the guest nor
 * its sender. */
static int
cb_wait_serving(struct guest *g, uint32_t waits, int (*ready)(void *),
		void *arg, struct timeout *t)
{
	hp_atomic_u32 *word = g->ep.credit_word;	/* a handler may wait on another */
	struct lg_cond w = { g, ready, arg };
	int rc, did;

	for (;;) {
		/* ends first (our own Reset among them): a wait that is over
		 * runs no handler; one that goes on runs those that came */
		if ((rc = lg_serve_ends(g)) != 0 || (rc = ready(arg)) != 0)
			return rc;
		if (g->later != NULL) {
			if ((rc = lg_serve(g, &did)) != 0 || (rc = ready(arg)) != 0)
				return rc;
			continue;
		}
		g->ep.credit_word = word;
		rc = lg_wait_resting(g, waits | HP_WAIT_RING_DATA, or_rx_ready, &w, t);
		if (rc <= 0 || (rc = ready(arg)) != 0)
			return rc;
	}
}

/* Its condition, or what serving ends would take. */
static int
or_ends_ready(void *arg)
{
	struct lg_cond *w = arg;
	int rc = w->ready(w->arg);

	return rc != 0 ? rc : lg_ends_ready(w->g);
}

/* Serves what runs no handler while it waits: a send that waits for room
 * on a lane takes the answers its peer may be waiting to send (the peer,
 * in a handler, waits for room on its own ring: neither would move). A
 * Request that comes waits for later; past what later keeps, it stays in
 * its ring and wakes nobody. No lane is closed meanwhile (reap_held): the
 * sender's may be, under it; the loop closes it after. */
static int
cb_wait_ends(struct guest *g, uint32_t waits, int (*ready)(void *), void *arg,
	     struct timeout *t)
{
	hp_atomic_u32 *word = g->ep.credit_word;
	struct lg_cond w = { g, ready, arg };
	int rc;

	g->reap_held++;
	for (;;) {
		if ((rc = lg_serve_ends(g)) != 0 || (rc = ready(arg)) != 0)
			break;
		g->ep.credit_word = word;
		rc = lg_wait_resting(g, waits | HP_WAIT_RING_DATA, or_ends_ready, &w, t);
		if (rc <= 0 || (rc = ready(arg)) != 0)
			break;
	}
	g->reap_held--;
	return rc;
}

static int
ev_done(void *arg)
{
	return ((struct lg_event *)arg)->done;
}

/* The loop, until ev is done. Under g->holding (hub.register, hub.describe:
 * a plugin setting up) no handler runs meanwhile: a request waits for the
 * loop, which runs it where the plugin's handlers run (microthreads). */
static int
cb_await(struct guest *g, struct lg_event *ev, struct timeout *t)
{
	int rc = 0, did;

	if (g->holding) {
		rc = cb_wait_ends(g, 0, ev_done, ev, t);
		return ev->done ? 0 : rc == 0 ? -ETIMEDOUT : rc;
	}

	while (!ev->done) {
		if ((rc = lg_serve(g, &did)) < 0)
			break;
		if (ev->done || did)
			continue;
		if ((rc = lg_wait_rx(g, lg_rx_ready, t)) <= 0) {
			if (rc == 0)
				rc = -ETIMEDOUT;
			break;
		}
	}
	return ev->done ? 0 : rc;
}

/* The awaiting caller serves: it sees done itself. */
static void
cb_wake(struct lg_event *ev)
{
	(void)ev;
}

static int
cb_run_held(struct guest *g, struct guest_call *c, guest_handler fn, void *ctx,
	    const uint8_t *args, size_t len)
{
	/* the calls it makes inherit its deadline and trace; a handler
	 * run inside one of its waits has its own, then this one's again */
	struct hp_callmeta outer = g->cur_meta;

	g->cur_meta = c->meta;
	fn(c, args, len, ctx);
	g->cur_meta = outer;
	g->call_ran(g, c);
	return 0;
}

static int
cb_handle(struct guest *g, struct guest_call *c, guest_handler fn, void *ctx,
	  const uint8_t *args, size_t len)
{
	if (g->deferring || g->later != NULL)	/* after those before it */
		return lg_later(g, c, fn, ctx, args, len);
	return cb_run_held(g, c, fn, ctx, args, len);
}

/* Not a wait: no handler runs here (a request that came waits for the
 * loop, or for a wait: streams would nest, each new one holding up the
 * ends of those below it). */
static int
cb_sending(struct guest *g)
{
	return lg_serve_ends(g);
}

static int
service(struct guest *g)
{
	int did, rc;

	/* the topics' bells too: the plugin's loop polls guest_fd, where
	 * one left rung would wake it at once, over and over (it spun) */
	if ((rc = hp_endpoint_drain_all(&g->ep)) == -EPIPE)
		return g->dead = -EPIPE;
	lg_clock_beat(g);		/* its loop calls us when one is due */
	for (;;) {
		/* acquire: pairs with guest_stop's release; the loop ends */
		if (atomic_load_explicit(&g->stop, memory_order_acquire))
			return -ESHUTDOWN;
		/* no doorbell for what we are about to serve anyway */
		hp_endpoint_cancel(&g->ep);
		do {
			if ((rc = lg_serve(g, &did)) != 0)
				return rc;
		} while (did);
		/* Back to the plugin's own loop, which sleeps in poll() on
		 * guest_fd: announce that, as hp_endpoint_wait does before
		 * it sleeps, so that the host rings the doorbell for the
		 * next message; then look once more, for what came before
		 * the announcement was seen. It stays until the next
		 * guest_service or a libguest wait that sleeps (which
		 * makes its own, and lg_rest after it). */
		hp_endpoint_announce(&g->ep, HP_WAIT_RING_DATA);
		if (lg_rx_ready(g) == 0) {
			if (g->nlanes > 0)
				lg_lanes_publish(g);	/* as before any sleep */
			/* and each subscription told we sleep, as before_sleep
			 * (lane.c) tells it, so that its publisher rings
			 * guest_fd for the next event (without it, an event
			 * waited for the loop's next wake); one that came
			 * meanwhile is served now */
			if (g->topics_sleep != NULL && g->topics_sleep(g))
				continue;
			return 0;
		}
	}
}

static int
cb_service(struct guest *g)
{
	uint64_t n;
	int rc;

	/* lg_rest's kick or guest_stop's: guest_fd is not readable for it
	 * again (a read only then: none on the busy path) */
	if (g->kicked || atomic_load_explicit(&g->stop, memory_order_relaxed)) {
		g->kicked = 0;
		(void)!read(g->wake_fd, &n, sizeof(n));
	}
	g->servicing++;		/* a handler may call it too */
	rc = service(g);
	g->servicing--;
	return rc;
}

static int
cb_service_wait(struct guest *g, struct timeout *t)
{
	int did, rc;

	if ((rc = lg_serve(g, &did)) != 0 || did)
		return rc;
	if ((rc = lg_wait_rx(g, lg_rx_ready, t)) < 0)
		return rc;
	return lg_serve(g, &did);
}

/* guest_run sees g->stop once its sleep ends (async-signal-safe). */
static void
cb_stop(struct guest *g)
{
	uint64_t one = 1;

	(void)!write(g->wake_fd, &one, sizeof(one));
}

const struct lg_runtime lg_callback = {
	.lock		= cb_nolock,
	.unlock		= cb_nolock,
	.wait		= lg_wait_resting,
	.wait_serving	= cb_wait_serving,
	.wait_ends	= cb_wait_ends,
	.await		= cb_await,
	.wake		= cb_wake,
	.handle		= cb_handle,
	.run_held	= cb_run_held,
	.sending	= cb_sending,
	.service	= cb_service,
	.service_wait	= cb_service_wait,
	.stop		= cb_stop,
};

/* guest_run's wait: traffic, or guest_stop (relaxed: only a wake, the
 * loop reads it again with acquire). */
static int
run_ready(void *arg)
{
	struct guest *g = arg;

	return atomic_load_explicit(&g->stop, memory_order_relaxed) ? 1 : lg_rx_ready(g);
}

int
guest_run(struct guest *g)
{
	int did, rc = 0;

	if (lg_detached(g))
		return -ENOTCONN;
	g->running++;	/* guest_stop ends its handlers' waits */
	/* acquire: pairs with guest_stop's release */
	while (rc == 0 && !atomic_load_explicit(&g->stop, memory_order_acquire)) {
		struct timeout forever = { -1, 0 };

		if ((rc = lg_serve(g, &did)) == 0 && !did &&
		    (rc = lg_wait_rx(g, run_ready, &forever)) > 0)
			rc = 0;
	}
	g->running--;
	return rc == -ESHUTDOWN ? 0 : rc;
}
