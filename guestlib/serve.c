/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest's service loop: serves what arrives, handing each message to
 * its type's handler in the guest's dispatch table (call_in.c, call_out.c
 * and chan.c fill it), and keeps the requests whose handlers must run later (a
 * loop serving from a send runs none). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "proto/msg.h"

#define BATCH		64	/* messages served before flushing */
#define LATER_MAX	64	/* requests kept to run later; more wait in the ring */
#define LATER_BYTES	(1u << 20)	/* ... and their arguments copied, bytes */
#define SPEC_POLL_MS	20	/* guest_fd users under a host without waiter words */

/* Whether as many requests wait for later as are kept (their count or
 * their arguments' bytes). */
static int
later_full(const struct guest *g)
{
	return g->nlater >= LATER_MAX || g->later_bytes >= LATER_BYTES;
}

int
lg_later(struct guest *g, struct guest_call *c, guest_handler fn, void *ctx,
	 const uint8_t *args, size_t len)
{
	struct lg_later *l;

	/* a call of the hub's services under way (hub.register, ...) and
	 * no room left to keep this one: refused, as the hub's ring is read
	 * on then (requests_held), where the service's answer may wait
	 * behind it until the call timed out (a caller flooding a guest
	 * that sets up) */
	if (g->holding && g->deferring && c->lane == NULL && later_full(g)) {
		guest_reply_error(c, "busy: too many calls wait while it calls the hub "
				  "(hub.register, ...)");
		g->call_ran(g, c);
		return 0;
	}
	if ((l = malloc(sizeof(*l) + len)) == NULL)
		return -ENOMEM;
	*l = (struct lg_later){ .call = c, .fn = fn, .ctx = ctx, .len = len };
	if (len > 0)
		memcpy(l->args, args, len);
	*g->later_tail = l;
	g->later_tail = &l->next;
	g->nlater++;
	g->later_bytes += len;
	return 0;
}

/* Runs the oldest handler that waits: 1, 0 if none, or the runtime's
 * error. */
static int
run_later(struct guest *g)
{
	struct lg_later *l = g->later;
	int rc;

	if (l == NULL)
		return 0;
	if ((g->later = l->next) == NULL)
		g->later_tail = &g->later;
	g->nlater--;
	g->later_bytes -= l->len;
	if (lg_call_late(g, l->call)) {
		free(l);
		return 1;
	}
	if ((rc = g->rt->run_held(g, l->call, l->fn, l->ctx, l->args, l->len)) != 0) {
		free(l);
		return g->dead = rc;
	}
	free(l);
	return 1;
}

void
lg_later_free(struct guest *g)
{
	struct lg_later *l;

	while ((l = g->later) != NULL) {
		g->later = l->next;
		free(l);	/* its call is freed with the active ones */
	}
	g->later_tail = &g->later;
	g->nlater = 0;
	g->later_bytes = 0;
}

/* m to its type's handler (attach.c wires the table at attach). */
static int
dispatch(struct guest *g, struct hp_msg_in *m)
{
	uint8_t type = m->desc.msg_type;

	if (type >= LG_MSG_TYPES || g->on_msg[type] == NULL)
		return -EPROTO;
	return g->on_msg[type](g, m);
}

/* A lane carries calls and their channels (Request to Reset): a Goodbye
 * is the hub's word, on the hub's ring (doc/protocol.md, "Lanes"); the
 * endpoint refuses the types above it. */
static int
lane_type(uint8_t type)
{
	return type != HP_MSG_GOODBYE;
}

/* Whether serving ends (no handler) stops at ep's next message: a
 * Request, with as many waiting for later as we keep. Not on the hub's
 * ring during a call of its services: their answer may be behind it,
 * and the Request is refused instead (call_in.c). */
static int
requests_held(struct guest *g, struct lg_lane *ln, struct hp_endpoint *ep)
{
	return (ln != NULL || !g->holding) && later_full(g) &&
	    hp_endpoint_peek(ep) == HP_MSG_REQUEST;
}

/* Serves one endpoint, the hub's (ln NULL) or a lane's, up to BATCH
 * messages in all this round (*n). A broken rule ends the guest on the
 * hub's ring, and only the lane on a lane's. */
static int
serve_ep(struct guest *g, struct lg_lane *ln, int *did, int requests, int *n)
{
	struct hp_endpoint *ep = ln != NULL ? &ln->ep : &g->ep;
	struct lg_chans *cs = ln != NULL ? &ln->chans : &g->chans;
	struct hp_msg_in m;
	const char *rule;
	uint8_t type;
	int rc = 0;

	for (; *n < BATCH && !g->dead && (ln == NULL || !ln->closing); (*n)++) {
		if (!requests && requests_held(g, ln, ep))
			break;
		if ((rc = hp_endpoint_recv(ep, &m, &rule)) == -EAGAIN) {
			rc = 0;
			/* all consumed: no grant held back (chan.c) */
			if (cs->owed)
				g->drained(cs);
			break;
		}
		if (rc == 0 && ln != NULL && !lane_type(m.desc.msg_type)) {
			hp_endpoint_release(ep, &m);
			rc = -EPROTO;
			rule = "lane.msg-type";
		}
		if (rc != 0 && ln != NULL) {
			lg_lane_broken(ln, rule);
			return 0;
		}
		if (rc != 0)
			return g->dead = -EPROTO;
		*did = 1;
		g->cur_lane = ln;
		g->lane_rule = NULL;
		type = m.desc.msg_type;
		rc = dispatch(g, &m);
		g->cur_lane = NULL;
		hp_endpoint_release(ep, &m);
		/* a busy guest beats here, an idle one in lg_wait_rx */
		lg_tick(g, type);
		if (rc == -EPROTO && ln != NULL) {
			lg_lane_broken(ln, g->lane_rule);
			return 0;
		}
		if (rc != 0)
			return g->dead = rc;
	}
	if (g->dead)
		return g->dead;
	hp_endpoint_notify_consumed(ep);
	if (hp_endpoint_flush(ep) == -EPROTO) {
		if (ln == NULL)
			return g->dead = -EPROTO;
		lg_lane_broken(ln, "shm.ring.capacity");
	}
	return 0;
}

/* Serves what is there now, up to BATCH messages: the handlers that wait
 * first, then the hub's ring, then each lane's. With requests 0 no
 * handler runs: a Request waits (struct lg_later, up to LATER_MAX of
 * them or LATER_BYTES of their arguments, then in the ring). *did:
 * whether anything was served. */
static int
serve(struct guest *g, int *did, int requests)
{
	uint8_t deferring = g->deferring;
	int rc = 0, n = 0;

	*did = 0;
	if (g->dead)
		return g->dead;
	/* r[shm.goodbye.host]: detach when the host says goodbye */
	if (hp_host_goodbye_said(&g->seg))
		return g->dead = -ESHUTDOWN;
	g->deferring = !requests;
	for (; requests && n < BATCH && (rc = run_later(g)) > 0; n++)
		*did = 1;
	if (rc < 0) {
		g->deferring = deferring;
		return rc;
	}
	rc = serve_ep(g, NULL, did, requests, &n);
	for (uint32_t i = 0; rc == 0 && i < g->nlanes; i++) {
		struct lg_lane *ln = g->lanes[i];
		int k = 0;	/* each lane its own batch: none starves */

		/* a handler's nested serve may close it meanwhile */
		lg_lane_hold(ln);
		rc = serve_ep(g, ln, did, requests, &k);
		lg_lane_put(ln);
	}
	g->deferring = deferring;
	/* events, where handlers may run */
	if (rc == 0 && requests && g->topics_serve != NULL)
		rc = g->topics_serve(g, did);
	if (rc == 0 && g->nlanes > 0) {
		/* not under a send waiting for room: a lane closed now would
		 * be freed under it (its chans, its ring); the loop reaps it */
		if (g->reap_held == 0)
			lg_lanes_reap(g);
		/* the figures hubd shows, now and then while busy (and
		 * before each sleep: lane.c) */
		if ((++g->rounds & 63) == 0)
			lg_lanes_publish(g);
	}
	return rc != 0 ? rc : g->dead;
}

int
lg_serve(struct guest *g, int *did)
{
	return serve(g, did, 1);
}

int
lg_serve_ends(struct guest *g)
{
	int did;

	return serve(g, &did, 0);
}

int
lg_rx_ready(void *arg)
{
	struct guest *g = arg;

	/* the heartbeat is lg_wait_rx's timeout: no clock read per spin */
	if (hp_host_goodbye_said(&g->seg) ||
	    g->later != NULL)
		return 1;
	return lg_traffic(g);
}

void
lg_rest(struct guest *g)
{
	static const uint64_t one = 1;

	/* announce, then look (Dekker, endpoint.h): what came before a
	 * peer could see the announcement makes guest_fd readable now */
	hp_endpoint_announce(&g->ep, HP_WAIT_RING_DATA);
	if ((lg_rx_ready(g) != 0 || (g->topics_sleep != NULL && g->topics_sleep(g))) &&
	    !g->kicked) {
		g->kicked = 1;
		(void)!write(g->wake_fd, &one, sizeof(one));
	}
}

int
lg_wait_resting(struct guest *g, uint32_t waits, int (*ready)(void *),
		void *arg, struct timeout *t)
{
	int rc = lg_wait_beating(g, waits, ready, arg, t);

	/* a sleep took back the announcement guest_service left for the
	 * plugin's own loop: it may go back to sleeping on guest_fd now */
	if (g->own_loop && !g->servicing)
		lg_rest(g);
	return rc;
}

int
lg_ends_ready(void *arg)
{
	struct guest *g = arg;

	if (hp_host_goodbye_said(&g->seg))
		return 1;
	if (hp_endpoint_rx_ready(&g->ep) != 0 && !requests_held(g, NULL, &g->ep))
		return 1;
	for (uint32_t i = 0; i < g->nlanes; i++) {
		struct lg_lane *ln = g->lanes[i];

		if (!ln->closing && hp_endpoint_rx_ready(&ln->ep) != 0 &&
		    !requests_held(g, ln, &ln->ep))
			return 1;
	}
	return 0;
}

int
lg_traffic(struct guest *g)
{
	int rc = hp_endpoint_rx_ready(&g->ep);

	if (rc == 0 && g->nlanes > 0)
		rc = lg_lanes_ready(g);
	if (rc == 0 && g->topics_ready != NULL)
		rc = g->topics_ready(g);
	return rc;
}

int
guest_service_timeout_ms(const struct guest *g)
{
	uint64_t now = hp_now_ns();
	int ms;

	if (lg_detached(g))
		return -ENOTCONN;
	if (g->hb_interval == 0)
		ms = -1;
	else
		ms = g->next_hb <= now ? 0 : (int)((g->next_hb - now + 999999) / 1000000);
	/* A host without waiter words need not ring the doorbell (the spec
	 * wakes with futex_wake, which no fd sees): look now and then. */
	if (g->ep.my_waits == NULL && (ms < 0 || ms > SPEC_POLL_MS))
		ms = SPEC_POLL_MS;
	return ms;
}

/* Waits up to t for ready(g) (lg_rx_ready or more): 1 it holds, 0 t ran
 * out, or -EPIPE. */
int
lg_wait_rx(struct guest *g, int (*ready)(void *), struct timeout *t)
{
	int rc;

	rc = g->rt->wait(g, HP_WAIT_RING_DATA, ready, g, t);
	if (rc == -EPIPE)
		g->dead = -EPIPE;
	return rc;
}
