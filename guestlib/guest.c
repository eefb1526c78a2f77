/* libguest's session with the hub: attach and detach, the heartbeat and
 * every wait, sending a message, and the service loop that serves what
 * arrives and dispatches it to calls (call.c) and channels (chan.c). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guestlib/internal.h"
#include "guestlib/mt.h"
#include "proto/doorbell.h"
#include "proto/msg.h"
#include "proto/peer.h"
#include "proto/ticket.h"

#define ATTACH_RETRY_MS	1000	/* a segment still being created */
#define BATCH		64	/* messages served before flushing */
#define TICK_MAX	64	/* messages per clock read at most (heartbeat) */
#define LATER_MAX	64	/* requests kept to run later; more wait in the ring */
#define LATER_BYTES	(1u << 20)	/* ... and their arguments copied, bytes */
#define UNDECODABLE	"(undecodable goodbye)"
#define SPEC_POLL_MS	20	/* guest_fd users under a host without waiter words */

static void
heartbeat(struct guest *g, uint64_t now)
{
	if (g->hb_interval == 0 || now < g->next_hb)
		return;
	/* r[shm.crash.heartbeat] r[shm.crash.heartbeat-clock]: our
	 * CLOCK_MONOTONIC, at least once per interval; relaxed: the host
	 * only compares it with its own clock. */
	hp_peer_beat(g->view.entry, now);
	g->next_hb = now + g->hb_interval / 2;
}

/* Reads the clock and beats if a beat is due. Every clock read goes
 * through here, so the count of messages to the next one starts over. */
static uint64_t
clock_beat(struct guest *g)
{
	uint64_t now = hp_now_ns();

	g->last_clock = now;
	g->ticks = g->tick_every;
	heartbeat(g, now);
	return now;
}

/* The clock read that keeps the heartbeat going while messages flow and
 * nothing waits: once per tick_every messages sent or received. A clock
 * read costs a good part of a round trip, so a fast stream reads it every
 * TICK_MAX messages; tick_every halves while the reads come further apart
 * than an eighth of the interval (slow handlers, big copies) and doubles
 * back while they come close together. */
static void
tick_slow(struct guest *g)
{
	uint64_t prev = g->last_clock, dt;

	if (g->hb_interval == 0) {
		g->ticks = TICK_MAX;
		return;
	}
	dt = clock_beat(g) - prev;
	if (dt > g->hb_interval / 8) {
		while (dt > g->hb_interval / 8 && g->tick_every > 1) {
			g->tick_every /= 2;
			dt /= 2;
		}
	} else if (dt < g->hb_interval / 64 && g->tick_every < TICK_MAX) {
		g->tick_every *= 2;
	}
	g->ticks = g->tick_every;
}

/* One message sent or received: no clock read on the fast path. */
static inline void
tick(struct guest *g)
{
	if (--g->ticks == 0)
		tick_slow(g);
}

void
lg_tick(struct guest *g)
{
	tick(g);
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

/* hp_endpoint_wait in rounds that end at the next heartbeat due time,
 * beating between them (r[shm.crash.heartbeat]): a guest waiting on the
 * hub is alive, whatever it waits for and however long. 1 ready, 0 when
 * t ran out, or ready()'s or the wait's error. */
int
lg_wait_beating(struct guest *g, uint32_t waits, int (*ready)(void *),
		void *arg, struct timeout *t)
{
	uint64_t now, until;
	int rc;

	if (lg_on_mt(g))	/* that microthread alone waits */
		return lg_mt_wait(g, waits, ready, arg, t);
	now = clock_beat(g);
	lg_timeout_at(t, now);
	for (;;) {
		until = t->at;
		if (g->hb_interval != 0 && g->next_hb < until)
			until = g->next_hb;
		rc = hp_endpoint_wait(&g->ep, waits, ready, arg, ms_until(until, now));
		if (rc != 0)
			return rc;
		if ((now = clock_beat(g)) >= t->at)
			return 0;
	}
}

int
guest_attach(int argc, char *const argv[], struct guest **gp, const char **why)
{
	struct hp_ticket t;
	struct guest *g;
	uint32_t state = HP_PEER_RESERVED;
	const char *dummy;
	int rc, waited = 0;

	if (why == NULL)
		why = &dummy;
	*gp = NULL;
	/* r[shm.spawn.guest-init] 1: the ticket */
	if ((rc = hp_ticket_parse(argc, argv, &t, why)) != 0)
		return rc;
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	g->seg.fd = -1;
	g->out = (struct hp_idtab)HP_IDTAB_INIT(struct out_call);
	g->later_tail = &g->later;
	g->doorbell = t.doorbell_fd;
	g->peer_id = t.peer_id;
	/* 2-3: map and validate; a hub still creating it has no magic yet */
	while ((rc = hp_segment_attach(&g->seg, t.hub_path, 0, why)) == -EAGAIN &&
	       waited < ATTACH_RETRY_MS) {
		usleep(10000);
		waited += 10;
	}
	if (rc != 0)
		goto fail;
	/* 4: our entry, through its own offsets (they are authoritative) */
	if ((rc = hp_peer_view_guest(&g->seg, t.peer_id, &g->view, why)) != 0)
		goto fail_unmap;
	if ((rc = hp_endpoint_init_guest(&g->ep, &g->seg, &g->view, g->doorbell, HP_FEAT_ALL)) != 0) {
		*why = "the host's rings are corrupt";
		goto fail_unmap;
	}
	/* 5-6: Reserved -> Attached and the epoch incremented, or somebody
	 * else's entry (r[shm.guest.attach-failure]: then we do not attach
	 * at all). What we set up is released to hubd's acquire of Attached
	 * (check_attach); r[shm.crash.epoch]: a new instance. */
	if ((rc = hp_peer_attach(g->view.entry, &state)) != 0) {
		*why = "the peer entry is not reserved for us (started by hand?)";
		goto fail_unmap;
	}
	g->hb_interval = g->seg.params.heartbeat_interval;
	g->tick_every = TICK_MAX;
	clock_beat(g);
	g->next_req = 1;
	g->chan_cursor = 0;
	if (hp_idtab_reserve(&g->out, 32) != 0 ||
	    (g->rx = calloc(g->seg.params.max_channels, sizeof(*g->rx))) == NULL ||
	    (g->tx = calloc(g->seg.params.max_channels, sizeof(*g->tx))) == NULL) {
		*why = "out of memory";
		rc = -ENOMEM;
		guest_detach(g);
		return rc;
	}
	/* 7: tell the host we are here (r[shm.doorbell.signal]) */
	hp_doorbell_signal(g->doorbell);
	*gp = g;
	return 0;

fail_unmap:
	hp_segment_close(&g->seg);
fail:
	free(g);
	return rc;
}

unsigned
guest_peer_id(const struct guest *g)
{
	return g->peer_id;
}

int
guest_fd(const struct guest *g)
{
	return g->doorbell;
}

void
guest_get_stats(const struct guest *g, struct guest_stats *s)
{
	struct guest *locked = (struct guest *)(uintptr_t)g;

	lg_lock(locked);
	*s = g->stats;
	s->wakes = g->ep.stats.wakes;
	s->sleeps = g->ep.stats.sleeps;
	lg_unlock(locked);
}

/* -- sending ----------------------------------------------------------- */

static int
tx_ready(void *arg)
{
	struct guest *g = arg;

	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return -ESHUTDOWN;
	return hp_endpoint_tx_ready(&g->ep);
}

/* Waits until a send of any size can be attempted again, up to t (NULL:
 * as long as it takes). */
int
lg_wait_tx(struct guest *g, struct timeout *t)
{
	struct timeout forever = { -1, 0 };
	int rc;

	g->stats.ring_waits++;
	if (hp_endpoint_flush(&g->ep) == -EPROTO)
		return -EPROTO;
	rc = lg_wait_beating(g, HP_WAIT_RING_SPACE | HP_WAIT_SLOT, tx_ready, g,
			     t != NULL ? t : &forever);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc == -ESHUTDOWN || rc == -EPIPE)
		g->dead = rc;
	return rc < 0 ? rc : 0;
}

/* Sends head (a prefix such as a response envelope) + body as one message,
 * waiting for room up to t (NULL: as long as it takes). */
int
lg_send_msg(struct guest *g, uint8_t type, uint32_t id, uint64_t method,
	    const void *head, size_t hlen, const void *body, size_t blen,
	    int flags, struct timeout *t)
{
	struct hp_outbuf ob;
	size_t len = hlen + blen;
	int rc;

	if (g->dead)
		return g->dead;
	if (len > g->ep.lim.max_payload_size)
		return -EMSGSIZE;
	while ((rc = hp_endpoint_reserve(&g->ep, (uint32_t)len, &ob)) == -EAGAIN)
		if ((rc = lg_wait_tx(g, t)) != 0)
			return rc;
	if (rc != 0)
		return rc;
	if (hlen > 0)
		memcpy(ob.buf, head, hlen);
	if (blen > 0)
		memcpy(ob.buf + hlen, body, blen);
	/* a handler may send for long without returning to the loop */
	tick(g);
	return hp_endpoint_commit(&g->ep, &ob, type, id, method, (uint32_t)len, flags);
}

/* r[shm.goodbye.payload]: the host ended us and says why (the rule we
 * broke). Kept for guest_goodbye_reason; the loop ends with -ECONNABORTED
 * and so does every call in flight. */
static int
on_goodbye(struct guest *g, struct hp_msg_in *m)
{
	const char *why;
	size_t n;

	if (hp_msg_decode_goodbye(m->payload, m->len, &why, &n) != 0) {
		why = UNDECODABLE;
		n = strlen(why);
	}
	if (n > GOODBYE_MAX) {
		n = GOODBYE_MAX;
		while (n > 0 && ((uint8_t)why[n] & 0xC0) == 0x80)
			n--;		/* whole UTF-8 sequences only */
	}
	memcpy(g->goodbye, why, n);
	g->goodbye[n] = '\0';
	g->ended_by_hub = 1;
	g->dead = -ECONNABORTED;
	lg_out_fail_all(g, -ECONNABORTED);
	return -ECONNABORTED;
}

const char *
guest_goodbye_reason(const struct guest *g)
{
	return g->ended_by_hub ? g->goodbye : NULL;
}

/* -- the loop ------------------------------------------------------------ */

static int
dispatch(struct guest *g, struct hp_msg_in *m)
{
	switch (m->desc.msg_type) {
	case HP_MSG_REQUEST:	return lg_on_request(g, m);
	case HP_MSG_RESPONSE:	return lg_on_response(g, m);
	case HP_MSG_CANCEL:	lg_on_cancel(g, m->desc.id); return 0;
	case HP_MSG_DATA:	return lg_on_data(g, m);
	case HP_MSG_CLOSE:
	case HP_MSG_RESET:	return lg_on_chan_end(g, m);
	case HP_MSG_GOODBYE:	return on_goodbye(g, m);	/* the host ended us */
	default:		return -EPROTO;
	}
}

/* Serves what is there now, up to BATCH messages: the handlers that wait
 * first, then the ring. With requests 0 no handler runs: a Request waits
 * (struct lg_later, up to LATER_MAX of them or LATER_BYTES of their
 * arguments, then in the ring). *did: whether anything was served. */
static int
serve(struct guest *g, int *did, int requests)
{
	struct hp_msg_in m;
	const char *rule;
	uint8_t deferring = g->deferring;
	int rc = 0, n = 0;

	*did = 0;
	if (g->dead)
		return g->dead;
	/* r[shm.goodbye.host]: detach when the host says goodbye */
	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0)
		return g->dead = -ESHUTDOWN;
	g->deferring = !requests;
	for (; requests && n < BATCH && lg_run_later(g); n++)
		*did = 1;
	for (; n < BATCH && !g->dead; n++) {
		if (!requests && (g->nlater >= LATER_MAX || g->later_bytes >= LATER_BYTES) &&
		    hp_endpoint_peek(&g->ep) == HP_MSG_REQUEST)
			break;
		if ((rc = hp_endpoint_recv(&g->ep, &m, &rule)) == -EAGAIN) {
			rc = 0;
			/* all consumed: no grant held back (chan.c) */
			if (g->owed)
				lg_grant_owed(g);
			break;
		}
		if (rc != 0) {
			g->deferring = deferring;
			return g->dead = -EPROTO;
		}
		*did = 1;
		rc = dispatch(g, &m);
		hp_endpoint_release(&g->ep, &m);
		/* a busy guest beats here, an idle one in lg_wait_rx */
		tick(g);
		if (rc != 0) {
			g->deferring = deferring;
			return g->dead = rc;
		}
	}
	g->deferring = deferring;
	if (g->dead)
		return g->dead;
	hp_endpoint_notify_consumed(&g->ep);
	if (hp_endpoint_flush(&g->ep) == -EPROTO)
		return g->dead = -EPROTO;
	return 0;
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

static int
rx_ready(void *arg)
{
	struct guest *g = arg;

	/* the heartbeat is lg_wait_rx's timeout: no clock read per spin */
	if (hp_load_relaxed_u32(&hp_segment_header(&g->seg)->host_goodbye) != 0 ||
	    g->later != NULL)
		return 1;
	return hp_endpoint_rx_ready(&g->ep);
}

int
guest_service_timeout_ms(const struct guest *g)
{
	uint64_t now = hp_now_ns();
	int ms;

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

/* Waits for traffic up to t: 1 there is some, 0 t ran out, or -EPIPE. */
int
lg_wait_rx(struct guest *g, struct timeout *t)
{
	int rc;

	rc = lg_wait_beating(g, HP_WAIT_RING_DATA, rx_ready, g, t);
	if (rc == -EPIPE)
		g->dead = -EPIPE;
	return rc;
}

int
guest_service(struct guest *g)
{
	int did, rc;

	if (lg_on_mt(g))	/* the runtime serves: let it */
		return guest_mt_yield();
	if ((rc = hp_doorbell_drain(g->doorbell)) == -EPIPE)
		return g->dead = -EPIPE;
	clock_beat(g);			/* its loop calls us when one is due */
	for (;;) {
		/* no doorbell for what we are about to serve anyway */
		hp_endpoint_cancel(&g->ep);
		do {
			if ((rc = lg_serve(g, &did)) != 0)
				return rc;
		} while (did);
		/* Back to the plugin's own loop, which sleeps in poll() on
		 * guest_fd: announce that, as hp_endpoint_wait does before
		 * it sleeps, so that the host rings the doorbell for the
		 * next message (without it, the loop heard of traffic only
		 * at its next heartbeat timeout); then look once more, for
		 * what came before the announcement was seen. It stays
		 * until the next guest_service or a libguest wait that
		 * sleeps (which makes its own). */
		hp_endpoint_announce(&g->ep, HP_WAIT_RING_DATA);
		if (rx_ready(g) == 0)
			return 0;
	}
}

int
guest_service_wait(struct guest *g, int timeout_ms)
{
	struct timeout t = { timeout_ms, 0 };
	int did, rc;

	if (lg_on_mt(g))
		return lg_mt_service_wait(g, &t);
	if ((rc = lg_serve(g, &did)) != 0 || did)
		return rc;
	if ((rc = lg_wait_rx(g, &t)) < 0)
		return rc;
	return lg_serve(g, &did);
}

void
guest_stop(struct guest *g)
{
	lg_lock(g);	/* a microthread of another processor may be serving */
	g->stop = 1;
	lg_unlock(g);
	if (g->mt != NULL)
		mt_rt_stop(g->mt->rt);
}

int
guest_run(struct guest *g)
{
	int did, rc;

	while (!g->stop) {
		struct timeout forever = { -1, 0 };

		if ((rc = lg_serve(g, &did)) != 0)
			return rc == -ESHUTDOWN ? 0 : rc;
		if (!did && (rc = lg_wait_rx(g, &forever)) < 0)
			return rc;
	}
	return 0;
}

void
guest_detach(struct guest *g)
{
	if (g == NULL)
		return;
	if (g->view.entry != NULL) {
		hp_endpoint_flush(&g->ep);
		hp_endpoint_set_awake(&g->ep, 0);	/* no longer one of the hub's */
		/* r[shm.guest.detach] r[shm.goodbye.guest]: we are leaving
		 * (release: pairs with host_check's acquire of the state) */
		hp_peer_goodbye(g->view.entry);
		hp_doorbell_signal(g->doorbell);
	}
	lg_out_fail_all(g, -EPIPE);
	lg_later_free(g);
	while (g->active != NULL) {
		struct guest_call *c = g->active;

		g->active = c->next;
		free(c);
	}
	hp_segment_close(&g->seg);
	close(g->doorbell);
	free(g->methods);
	hp_idtab_free(&g->out);
	free(g->rx);
	free(g->tx);
	free(g);
}
