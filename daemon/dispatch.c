/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The dispatcher: each round serves every attached guest, hands each
 * message it sent to the handler of its type, gives the work sources
 * (streams the host sends) their turn, and has the transport publish
 * what the round sent. The handlers fill its table at start (hubd.c): it
 * names none of them, and they never call it. */
#include <stddef.h>

#include "daemon/dispatch.h"
#include "daemon/host.h"
#include "daemon/log.h"
#include "proto/msg.h"

#define SERVE_BATCH	64	/* messages read from one guest per round */

/* A guest's Goodbye: what it says goes to the log; its exit follows. */
static void
goodbye(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	const char *reason = "";
	size_t n = 0;

	(void)h;
	hp_msg_decode_goodbye(m->payload, m->len, &reason, &n);
	log_info("guest %s: goodbye: %.*s", p->conf->name,
		 (int)(n > 200 ? 200 : n), reason);
}

void
dispatch_init(struct hub *h)
{
	dispatch_on(h, HP_MSG_GOODBYE, goodbye);
}

void
dispatch_on(struct hub *h, uint8_t type, dispatch_fn *fn)
{
	if (type >= DISPATCH_TYPES)
		fatalx("dispatch_on: message type %u", type);
	h->dispatch.handler[type] = fn;
}

void
dispatch_source(struct hub *h, dispatch_work_fn *pump, dispatch_work_fn *ready)
{
	if (h->dispatch.nsources >= DISPATCH_SOURCES_MAX)
		fatalx("dispatch_source: more than %d sources", DISPATCH_SOURCES_MAX);
	h->dispatch.source[h->dispatch.nsources].pump = pump;
	h->dispatch.source[h->dispatch.nsources].ready = ready;
	h->dispatch.nsources++;
}

static void
dispatch(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	uint8_t type = m->desc.msg_type;

	/* a type without a handler is dropped, as before the table */
	if (type < DISPATCH_TYPES && h->dispatch.handler[type] != NULL)
		h->dispatch.handler[type](h, p, m);
}

/* Up to SERVE_BATCH messages from p's ring, each to its handler. Returns
 * how many. */
static int
serve_ring(struct hub *h, struct peer *p)
{
	struct hp_msg_in m;
	int n;

	for (n = 0; n < SERVE_BATCH && host_reading(p) && host_serving(p); n++) {
		if (host_recv(h, p, &m) != 0)
			break;	/* none, or p faulted */
		dispatch(h, p, &m);
		host_release(p, &m);
	}
	return n;
}

void
dispatch_last_words(struct hub *h, struct peer *p)
{
	uint32_t n = 0;
	int k;

	/* one ring's worth at most: what it wrote before it died (a child
	 * that kept its mapping may write on, and must not hold hubd),
	 * whatever held it */
	host_unhold(p, HOLD_BACKLOG | HOLD_SHARE);
	do {
		k = serve_ring(h, p);
		n += (uint32_t)k;
	} while (k == SERVE_BATCH && n < p->ep.rx.size);
}

/* Serves one guest: its backlog, its ring, the sources. Returns how many
 * messages it read. */
static int
serve_peer(struct hub *h, struct peer *p)
{
	int n;

	/* a backlog that waits for a pool slot is tried again by its timer,
	 * not on every round (pool.c) */
	if (!p->bl_starved)
		host_flush_backlog(h, p);
	n = serve_ring(h, p);
	for (uint32_t i = 0; i < h->dispatch.nsources; i++)
		if (host_serving(p))
			n += h->dispatch.source[i].pump(h, p);
	if (host_serving(p))
		host_publish(h, p);
	return n;
}

int
dispatch_serve(struct hub *h, struct peer *p)
{
	return host_serving(p) ? serve_peer(h, p) : 0;
}

int
dispatch_poll(struct hub *h)
{
	uint32_t n = h->peers_end;
	int work = 0;

	/* the guests' awake flags summed now and then while hubd is busy
	 * (it also does so as it sleeps and wakes): their spin-or-yield
	 * hint stays fresh at a cost of one look at each flag per 64 rounds */
	if ((++h->polls & 63) == 0)
		host_awake_update(h, 1);
	if (n == 0)
		return 0;	/* no guest started yet */
	/* start one further each round: nobody is always served first */
	h->poll_start = (h->poll_start + 1) % n;
	for (uint32_t k = 0; k < n; k++) {
		struct peer *p = &h->peers[(h->poll_start + k) % n];

		if (host_serving(p))
			work += serve_peer(h, p);
	}
	return work;
}

int
dispatch_sleep_prepare(struct hub *h)
{
	int work = host_sleep_prepare(h);

	for (uint32_t i = 0; i < h->peers_end; i++) {
		struct peer *p = &h->peers[i];

		if (!host_serving(p))
			continue;
		for (uint32_t k = 0; k < h->dispatch.nsources; k++)
			if (h->dispatch.source[k].ready(h, p))
				work = 1;
	}
	return work;
}
