/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* For test guests built on proto directly (they break rules libguest
 * would not let them): attach from the spawn ticket, and heartbeat. */
#ifndef HUB_TEST_RAW_H
#define HUB_TEST_RAW_H

#include <err.h>
#include <time.h>

#include "proto/clock.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/segment.h"
#include "proto/ticket.h"

static inline void
raw_heartbeat(struct hp_peer_view *v)
{
	hp_store_relaxed_u64(&v->entry->last_heartbeat, hp_now_ns());
}

/* The ticket read, our domain and our zone's pool (if any) mapped, our
 * entry found: attach's first steps, state untouched; exits on failure. */
static inline void
raw_map(int argc, char *argv[], struct hp_ticket *t, struct hp_segment *seg,
	struct hp_peer_view *v)
{
	const char *why = NULL;

	if (hp_ticket_parse(argc, argv, t, &why) != 0 ||
	    hp_segment_attach(seg, t->hub_path, 0, &why) != 0 ||
	    (t->pool_path != NULL &&
	     hp_segment_attach_pool(seg, t->pool_path, t->peer_id, &why) != 0) ||
	    hp_peer_view_guest(seg, t->peer_id, v, &why) != 0)
		errx(1, "attach: %s", why);
}

/* r[shm.spawn.guest-init], as a guest does it, using the offered features
 * in use (HP_FEAT_*); exits on failure. */
static inline void
raw_attach(int argc, char *argv[], struct hp_ticket *t, struct hp_segment *seg,
	   struct hp_peer_view *v, struct hp_endpoint *ep, uint32_t use)
{
	uint32_t state = HP_PEER_RESERVED;

	raw_map(argc, argv, t, seg, v);
	hp_endpoint_init_guest(ep, seg, v, t->doorbell_fd, t->bells[0] >= 0 ? t->bells : NULL, use);
	if (!hp_cas_u32(&v->entry->state, &state, HP_PEER_ATTACHED))
		errx(1, "not reserved");
	hp_fetch_add_u32(&v->entry->epoch, 1, memory_order_release);
	raw_heartbeat(v);
	hp_doorbell_signal(t->doorbell_fd);
}

#endif
