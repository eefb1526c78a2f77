/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A guest-host pair's end: setting it up, sending, receiving and the
 * wake protocol described in endpoint.h. The progressive wait a blocking
 * caller makes, and the conditions it waits for, are wait.c. Over 600
 * lines and whole: sending, receiving and the wake protocol each make half
 * of the same store-then-look pairs (a sender's publish and a sleeper's
 * announce), which are easier to check side by side than across files. */
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include <limits.h>
#include <sched.h>
#include <string.h>

#include "proto/channel.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/futex.h"
#include "proto/varpool.h"

static void
init_common(struct hp_endpoint *ep, const struct hp_segment *seg)
{
	memset(ep, 0, sizeof(*ep));
	ep->lim.max_payload_size = seg->params.max_payload_size;
	ep->lim.max_channels = seg->params.max_channels;
	ep->free_word = UINT32_MAX;
	ep->wake_fd = -1;
	ep->bell_in = -1;
	ep->bell_out = -1;
}

/* A wake to the peer: its bell (HP_FEAT_BELLS) or the doorbell. */
static int
ring(struct hp_endpoint *ep)
{
	return ep->bell_out >= 0 ? hp_bell_ring(ep->bell_out) : hp_doorbell_signal(ep->doorbell);
}

/* Both ends use the shared variable pool: bigger payloads, and every
 * payload that is not inline goes there. */
static void
use_var(struct hp_endpoint *ep, struct hp_varpool *var, uint32_t peer_id)
{
	ep->var = var;
	ep->var_peer = peer_id;
	if (var->max_payload > ep->lim.max_payload_size)
		ep->lim.max_payload_size = var->max_payload;
	ep->lim.var = var;
	ep->lim.var_owner = peer_id;
}

uint32_t
hp_cpus_usable(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 || (n = CPU_COUNT(&set)) < 1)
		return 1;
	return (uint32_t)n;
}

static hp_atomic_u32 *
awake_word(const struct hp_segment *seg)
{
	return &((struct hp_header *)(void *)seg->base)->awake;
}

int
hp_endpoint_init_host(struct hp_endpoint *ep, struct hp_segment *seg,
		      const struct hp_peer_view *v, int doorbell,
		      uint32_t guest_features, struct hp_varpool *var)
{
	const struct hp_params *p = &seg->params;
	struct hp_peer_entry *e = v->entry;
	int rc;

	init_common(ep, seg);
	ep->side = HP_SIDE_HOST;
	ep->doorbell = doorbell;
	if ((rc = hp_ring_init_producer(&ep->tx, &e->h2g_head, &e->h2g_tail,
					v->h2g, p->ring_size)) != 0 ||
	    (rc = hp_ring_init_consumer(&ep->rx, &e->g2h_head, &e->g2h_tail,
					v->g2h, p->ring_size)) != 0)
		return rc;
	hp_slot_pool_view(&ep->tx_pool, v->host_pool, p->slots_per_guest, p->slot_size);
	hp_slot_pool_view(&ep->rx_pool, v->pool, p->slots_per_guest, p->slot_size);
	if (v->ext != NULL && (seg->host_features & HP_FEAT_WAITERS)) {
		ep->my_waits = &v->ext->host_waits;
		ep->their_waits = &v->ext->guest_waits;
		ep->peer_waiters = (guest_features & HP_FEAT_WAITERS) != 0;
	}
	if (var != NULL && (guest_features & HP_FEAT_VARSLOT))
		use_var(ep, var, v->peer_id);
	/* its reports on its lanes (HP_MSG_LANE) */
	ep->lim.lane_msgs = (guest_features & HP_FEAT_LANES) != 0;
	/* A guest written from the spec alone futex-waits on these words
	 * (r[shm.wakeup.consumer-wait], r[shm.wakeup.producer-wait],
	 * r[shm.wakeup.slot-wait]: we pick bitmap word 0). */
	ep->legacy_words[hp_wait_bit_index(HP_WAIT_RING_DATA)] = &e->h2g_head;
	ep->legacy_words[hp_wait_bit_index(HP_WAIT_RING_SPACE)] = &e->g2h_tail;
	/* futex words are 32 bits: the low half of bitmap word 0 */
	ep->legacy_words[hp_wait_bit_index(HP_WAIT_SLOT)] =
	    (hp_atomic_u32 *)(uintptr_t)&ep->rx_pool.bitmap[0];
	return 0;
}

int
hp_endpoint_init_guest(struct hp_endpoint *ep, struct hp_segment *seg,
		       const struct hp_peer_view *v, int doorbell, const int *bells,
		       uint32_t use)
{
	const struct hp_params *p = &seg->params;
	struct hp_peer_entry *e = v->entry;
	uint32_t features = 0;
	int rc;

	init_common(ep, seg);
	ep->side = HP_SIDE_GUEST;
	ep->wake_yield = 1;
	ep->doorbell = doorbell;
	if ((rc = hp_ring_init_producer(&ep->tx, &e->g2h_head, &e->g2h_tail,
					v->g2h, p->ring_size)) != 0 ||
	    (rc = hp_ring_init_consumer(&ep->rx, &e->h2g_head, &e->h2g_tail,
					v->h2g, p->ring_size)) != 0)
		return rc;
	hp_slot_pool_view(&ep->tx_pool, v->pool, p->slots_per_guest, p->slot_size);
	hp_slot_pool_view(&ep->rx_pool, v->host_pool, p->slots_per_guest, p->slot_size);
	/* the shared pool where the host lets this guest in (hp_peer_ext) */
	if ((seg->host_features & use & HP_FEAT_VARSLOT) && seg->var.nclasses > 0 &&
	    v->ext != NULL && (hp_load_relaxed_u32(&v->ext->host_offer) & HP_FEAT_VARSLOT)) {
		seg->var.self = v->peer_id;
		use_var(ep, &seg->var, v->peer_id);
		features |= HP_FEAT_VARSLOT;
	}
	/* lanes where the host offers them (HP_MSG_LANE on this ring) */
	if (v->ext != NULL && (seg->host_features & use & HP_FEAT_WAITERS) &&
	    (use & HP_FEAT_LANES) &&
	    (hp_load_relaxed_u32(&v->ext->host_offer) & HP_FEAT_LANES)) {
		features |= HP_FEAT_LANES;
		ep->lim.lane_msgs = 1;
	}
	if (v->ext != NULL && (seg->host_features & use & HP_FEAT_WAITERS)) {
		/* hubd's: it tells of topics on this ring (proto/topic.h) */
		ep->lim.topic_msgs = 1;
		ep->my_waits = &v->ext->guest_waits;
		ep->their_waits = &v->ext->host_waits;
		ep->peer_waiters = 1;
		hp_store_relaxed_u32(ep->my_waits, 0);
		ep->awake = awake_word(seg);
		ep->awake_flag = &v->ext->guest_awake;
		ep->ncpus = hp_cpus_usable();
		hp_store_relaxed_u32(ep->awake_flag, 0);
		hp_endpoint_set_awake(ep, 1);
		/* bells only with waiter words: a host that futex-wakes us
		 * rings nothing */
		if (bells != NULL && (use & HP_FEAT_BELLS) &&
		    (hp_load_relaxed_u32(&v->ext->host_offer) & HP_FEAT_BELLS)) {
			ep->bell_in = bells[0];
			ep->bell_out = bells[1];
			features |= HP_FEAT_BELLS;
		}
		/* publishes the cleared waiter word above */
		hp_peer_announce(e, features | HP_FEAT_WAITERS);
		return 0;
	}
	hp_peer_announce(e, features);
	/* A host without our extension: the spec's words, both ways
	 * (r[shm.wakeup.consumer-wait], r[shm.wakeup.producer-wait],
	 * r[shm.wakeup.slot-wait]: bitmap word 0, whose low half is a futex
	 * word; r[shm.wakeup.credit-wait]: credit_word). */
	ep->legacy_words[hp_wait_bit_index(HP_WAIT_RING_DATA)] = &e->g2h_head;
	ep->legacy_words[hp_wait_bit_index(HP_WAIT_RING_SPACE)] = &e->h2g_tail;
	ep->legacy_words[hp_wait_bit_index(HP_WAIT_SLOT)] =
	    (hp_atomic_u32 *)(uintptr_t)&ep->rx_pool.bitmap[0];
	ep->sleep_words[hp_wait_bit_index(HP_WAIT_RING_DATA)] = &e->h2g_head;
	ep->sleep_words[hp_wait_bit_index(HP_WAIT_RING_SPACE)] = &e->g2h_tail;
	ep->sleep_words[hp_wait_bit_index(HP_WAIT_SLOT)] =
	    (hp_atomic_u32 *)(uintptr_t)&ep->tx_pool.bitmap[0];
	return 0;
}

/* Takes the peer's announcement of bit: clears its whole waiter word if
 * the bit is set, so that one doorbell byte wakes it and the events after
 * it, until it announces again (each sleep does), ring nothing. 1: it
 * waited for bit, ring it. A peer flipping its word as we look cannot
 * keep us here: after a few tries it is rung anyway. The order that
 * matters is wake_peer's fence before it (pairs with the fence in
 * hp_endpoint_announce); the CAS needs none of its own. */
static int
take_waiter(hp_atomic_u32 *word, uint32_t bit)
{
	uint32_t w = hp_load_relaxed_u32(word);

	for (int i = 0; i < 4; i++) {
		if ((w & bit) == 0)
			return 0;
		if (hp_cas_u32(word, &w, 0))
			return 1;
	}
	return 1;
}

/* The peer may sleep waiting for bit: wake it if it said so. */
static void
wake_peer(struct hp_endpoint *ep, uint32_t bit)
{
	hp_atomic_u32 *legacy;

	if (ep->peer_waiters) {
		/* Dekker: pairs with the fence in the sleeper's
		 * hp_endpoint_announce; our event store, this fence, then
		 * its waiter word (see endpoint.h). */
		hp_fence_seq_cst();
		if (!take_waiter(ep->their_waits, bit))
			return;
		ring(ep);
	} else {
		/* r[shm.wakeup.*]: a peer without waiter words futex-waits on
		 * the word the spec names; a host may also sleep on its
		 * doorbell instead (r[shm.doorbell.ring-integration]), so a
		 * guest rings that too */
		legacy = ep->legacy_words[hp_wait_bit_index(bit)];
		if (legacy != NULL)
			hp_futex_wake(legacy, INT_MAX);
		if (legacy == NULL || ep->side == HP_SIDE_GUEST)
			ring(ep);
	}
	ep->stats.wakes++;
	/* The kernel tends to wake the peer on the waker's CPU; a waker that
	 * then spins or polls keeps it off that CPU until its slice ends, so
	 * a guest steps aside once before it next spins (hp_endpoint_wait,
	 * wake-from-idle 90 -> 55 us). Not at once: a guest answering a
	 * batch would hand its CPU to the peer after each answer, and on one
	 * CPU the two would trade it per message (one CPU, 256 calls in
	 * flight across hub-nats: every answer a wake and a switch). Not
	 * hubd at all: it may wake many guests in a round, and each yield
	 * would hand its CPU to one of them (32 guests: 1.2 M calls/s in
	 * all, 3-4 M without); it yields when quiet instead. */
	if (ep->wake_yield)
		ep->rang = 1;
}

int
hp_endpoint_take_rang(struct hp_endpoint *ep)
{
	struct hp_wait_group *g = ep->group;
	int rang = ep->rang;

	ep->rang = 0;
	for (uint32_t i = 0; g != NULL && i < g->n; i++) {
		rang |= g->ep[i]->rang;
		g->ep[i]->rang = 0;
	}
	return rang;
}

/* The class + 1 of d's variable slot, 0 for none. */
static uint8_t
var_cls(const struct hp_endpoint *ep, const struct hp_desc *d)
{
	/* HP_VAR_MAX_CLASSES (8) classes: a byte holds it */
	return ep->var != NULL ? (uint8_t)hp_var_slot_class1(ep->var, d->payload_slot) : 0;
}

int
hp_endpoint_flush(struct hp_endpoint *ep)
{
	uint32_t at = ep->tx.mine;
	int n;

	if (ep->staged == 0)
		return 0;
	/* r[shm.ordering.ring-publish]: one release store of head for all */
	n = hp_ring_enqueue_batch(&ep->tx, ep->stage, ep->staged);
	if (n < 0)
		return n;
	if (n > 0) {
		if (ep->tx_cls != NULL)
			for (int i = 0; i < n; i++)
				ep->tx_cls[(at + (uint32_t)i) & ep->tx.mask] = var_cls(ep, &ep->stage[i]);
		ep->staged -= (uint32_t)n;
		memmove(ep->stage, ep->stage + n, ep->staged * sizeof(ep->stage[0]));
		ep->stats.sent += (uint64_t)n;
		wake_peer(ep, HP_WAIT_RING_DATA);
	}
	return ep->staged == 0 ? 0 : -EAGAIN;
}

/* Adds a slot of class c - 1 (c 0: none) to *slots and *bytes. */
static void
count_cls(const struct hp_endpoint *ep, uint8_t c, uint32_t *slots, uint64_t *bytes)
{
	if (c != 0) {
		(*slots)++;
		*bytes += ep->var->c[c - 1].slot_size;
	}
}

void
hp_endpoint_unread_var(struct hp_endpoint *ep, uint32_t *slots, uint64_t *bytes)
{
	/* relaxed: for a count; it indexes only our record, checked first */
	uint32_t tail = hp_load_relaxed_u32(ep->tx.tail);

	*slots = 0;
	*bytes = 0;
	if (ep->tx_cls == NULL || ep->var == NULL || tail >= ep->tx.size)
		return;
	for (uint32_t at = tail; at != ep->tx.mine; at = (at + 1) & ep->tx.mask)
		count_cls(ep, ep->tx_cls[at], slots, bytes);
	for (uint32_t i = 0; i < ep->staged; i++)
		count_cls(ep, var_cls(ep, &ep->stage[i]), slots, bytes);
}

/* Whether one more descriptor fits beside the staged ones. */
static int
tx_room(struct hp_endpoint *ep)
{
	int space;

	if (ep->staged == HP_STAGE_MAX && (space = hp_endpoint_flush(ep)) < 0 &&
	    space != -EAGAIN)
		return space;
	if (ep->staged == HP_STAGE_MAX)
		return 0;
	/* the consumer's tail as last seen first: re-reading the shared
	 * word on every send would pull its cache line over each time */
	if (((ep->tx.theirs - ep->tx.mine - 1) & ep->tx.mask) > ep->staged)
		return 1;
	if ((space = hp_ring_space(&ep->tx)) < 0)
		return space;
	return (uint32_t)space > ep->staged;
}

int
hp_endpoint_reserve(struct hp_endpoint *ep, uint32_t len, struct hp_outbuf *ob)
{
	int rc;

	if (len > ep->lim.max_payload_size)
		return -EMSGSIZE;
	if ((rc = tx_room(ep)) <= 0) {
		if (rc == 0)
			ep->stats.ring_full++;
		return rc == 0 ? -EAGAIN : rc;
	}
	if (len <= HP_INLINE_MAX) {
		ob->buf = ob->inl;
		ob->cap = HP_INLINE_MAX;
		ob->slot = HP_SLOT_INLINE;
		ob->generation = 0;
		return 0;
	}
	/* a payload larger than the variable pool's largest class goes in a
	 * fixed slot (max_payload_size is the larger of the two) */
	if (ep->var != NULL && len <= ep->var->max_payload) {
		struct hp_var_ref r;

		/* r[shm.varslot.selection] */
		if ((rc = hp_var_alloc_spare(ep->var, len, ep->var_spare, &r)) != 0) {
			if (rc != -EAGAIN)
				return rc;
			ep->stats.slot_exhausted++;
			/* r[shm.varslot.extents]: the host grows a class a
			 * guest asked for; ring once per episode so it looks */
			if (ep->side == HP_SIDE_GUEST && !ep->var_asked) {
				ep->var_asked = 1;
				ring(ep);
			}
			return rc;
		}
		ep->var_asked = 0;
		ob->slot = r.slot;
		ob->generation = r.gen;
		ob->buf = r.data;
		ob->cap = len;
		return 0;
	}
	if ((rc = hp_slot_alloc(&ep->tx_pool, &ob->slot, &ob->generation)) != 0) {
		ep->stats.slot_exhausted++;
		return rc;
	}
	ob->buf = hp_slot_payload(&ep->tx_pool, ob->slot);
	ob->cap = len;
	return 0;
}

void
hp_endpoint_unreserve(struct hp_endpoint *ep, struct hp_outbuf *ob)
{
	if (ep->var != NULL && hp_var_is_slot(ob->slot))
		hp_var_free(ep->var, ob->slot, ob->generation);
	else if (ob->slot != HP_SLOT_INLINE)
		hp_slot_free(&ep->tx_pool, ob->slot);
	ob->slot = HP_SLOT_INLINE;
}

/* Stages a descriptor; the caller made sure there is room. */
static struct hp_desc *
stage(struct hp_endpoint *ep, uint8_t type, uint32_t id, uint64_t method_id)
{
	struct hp_desc *d = &ep->stage[ep->staged];

	memset(d, 0, sizeof(*d));
	d->msg_type = type;
	d->id = id;
	d->method_id = method_id;
	return d;
}

static int
staged(struct hp_endpoint *ep, uint32_t len, int flags)
{
	ep->staged++;
	ep->stats.bytes_sent += len;
	if (flags & HP_SEND_MORE)
		return 0;
	/* Staged and counted: a full ring now only delays publication. */
	if (hp_endpoint_flush(ep) == -EPROTO)
		return -EPROTO;
	return 0;
}

int
hp_endpoint_send_var(struct hp_endpoint *ep, uint32_t slot, uint32_t gen, uint32_t len,
		     uint8_t type, uint32_t id, uint64_t method_id, int flags)
{
	int rc;

	if (ep->var == NULL)
		return -EINVAL;
	if ((rc = tx_room(ep)) <= 0) {
		if (rc == 0)
			ep->stats.ring_full++;
		return rc == 0 ? -EAGAIN : rc;
	}
	/* zero-copy: the guest owns it from now on (r[shm.varslot.ownership]) */
	if (hp_var_pass(ep->var, slot, gen, HP_VAR_HOST, ep->var_peer) != 0)
		return -ESTALE;
	hp_desc_set_slot(stage(ep, type, id, method_id), slot, gen, 0, len);
	return staged(ep, len, flags);
}

int
hp_endpoint_commit(struct hp_endpoint *ep, struct hp_outbuf *ob, uint8_t type,
		   uint32_t id, uint64_t method_id, uint32_t len, int flags)
{
	struct hp_desc *d;

	if (len > ob->cap) {
		hp_endpoint_unreserve(ep, ob);
		return -EINVAL;
	}
	d = stage(ep, type, id, method_id);
	if (len <= HP_INLINE_MAX) {
		/* r[shm.payload.inline]: short payloads never use a slot */
		hp_desc_set_inline(d, ob->buf, len);
		hp_endpoint_unreserve(ep, ob);
	} else {
		/* a variable slot: Allocated -> InFlight, the guest's; one
		 * taken from us meanwhile (a rebuild after a hostile peer
		 * broke the list) is not sent */
		if (ep->var != NULL && hp_var_is_slot(ob->slot) &&
		    hp_var_send(ep->var, ob->slot, ob->generation, ep->var_peer) != 0)
			return -ESTALE;
		hp_desc_set_slot(d, ob->slot, ob->generation, 0, len);
	}
	return staged(ep, len, flags);
}

int
hp_endpoint_send(struct hp_endpoint *ep, uint8_t type, uint32_t id,
		 uint64_t method_id, const void *payload, uint32_t len, int flags)
{
	struct hp_outbuf ob;
	int rc;

	if ((rc = hp_endpoint_reserve(ep, len, &ob)) != 0)
		return rc;
	if (len > 0)
		memcpy(ob.buf, payload, len);
	return hp_endpoint_commit(ep, &ob, type, id, method_id, len, flags);
}

static void
flush_frees(struct hp_endpoint *ep)
{
	if (ep->free_mask == 0)
		return;
	/* r[shm.slot.free]: one atomic OR for the whole batch; bits that
	 * were free already (a peer's double free) change nothing. */
	hp_slot_free_mask(&ep->rx_pool, ep->free_word, ep->free_mask, NULL);
	ep->free_mask = 0;
	ep->free_word = UINT32_MAX;
	wake_peer(ep, HP_WAIT_SLOT);
}

int
hp_endpoint_take(struct hp_msg_in *m, uint32_t *slot, uint32_t *gen)
{
	if (!hp_var_is_slot(m->desc.payload_slot))
		return 0;
	*slot = m->desc.payload_slot;
	*gen = m->desc.payload_generation;
	m->desc.payload_slot = HP_SLOT_INLINE;
	return 1;
}

void
hp_endpoint_release(struct hp_endpoint *ep, struct hp_msg_in *m)
{
	uint32_t slot = m->desc.payload_slot, word;

	m->desc.payload_slot = HP_SLOT_INLINE;	/* released once only */
	if (slot == HP_SLOT_INLINE)
		return;
	if (ep->var != NULL && hp_var_is_slot(slot)) {
		/* r[shm.varslot.freeing]: a double free is counted, not fatal */
		hp_var_free(ep->var, slot, m->desc.payload_generation);
		return;
	}
	word = slot / 64;
	if (word != ep->free_word) {
		flush_frees(ep);
		ep->free_word = word;
	}
	ep->free_mask |= 1ull << (slot % 64);
}

/* The ring tail needs nothing here: hp_endpoint_recv stores it and wakes
 * a peer waiting for space as it dequeues. */
void
hp_endpoint_notify_consumed(struct hp_endpoint *ep)
{
	flush_frees(ep);
}

/* Descriptors in the inbox, dequeued in a batch when it is empty: 0,
 * -EAGAIN when the ring is empty too, -EPROTO. */
static int
fill_inbox(struct hp_endpoint *ep)
{
	int n;

	if (ep->inbox_pos != ep->inbox_len)
		return 0;
	flush_frees(ep);
	/* r[shm.ordering.ring-consume]: copies out, one tail store */
	n = hp_ring_dequeue_batch(&ep->rx, ep->inbox, HP_STAGE_MAX);
	if (n < 0)
		return -EPROTO;
	if (n == 0)
		return -EAGAIN;
	ep->inbox_pos = 0;
	ep->inbox_len = (uint32_t)n;
	wake_peer(ep, HP_WAIT_RING_SPACE);
	return 0;
}

int
hp_endpoint_peek(struct hp_endpoint *ep)
{
	int rc = fill_inbox(ep);

	/* our copy: what recv will validate, not the peer's shared word */
	return rc != 0 ? rc : ep->inbox[ep->inbox_pos].msg_type;
}

int
hp_endpoint_recv(struct hp_endpoint *ep, struct hp_msg_in *m, const char **rule)
{
	int rc;

	if ((rc = fill_inbox(ep)) != 0) {
		*rule = "shm.ring.capacity";
		return rc;
	}
	m->desc = ep->inbox[ep->inbox_pos++];
	m->var = ep->var;
	rc = hp_desc_validate(&m->desc, &ep->lim, &ep->rx_pool, &m->payload,
			      &m->len, rule);
	if (rc != 0) {
		m->desc.payload_slot = HP_SLOT_INLINE;
		return rc;
	}
	/* The host takes a guest's variable slot as it dequeues it: from now
	 * on the host frees it or hands it on (r[shm.varslot.ownership]). */
	if (ep->var != NULL && ep->side == HP_SIDE_HOST && hp_var_is_slot(m->desc.payload_slot) &&
	    hp_var_pass(ep->var, m->desc.payload_slot, m->desc.payload_generation,
			ep->var_peer, HP_VAR_HOST) != 0) {
		m->desc.payload_slot = HP_SLOT_INLINE;
		*rule = "shm.varslot.ownership";
		return -EPROTO;
	}
	ep->stats.received++;
	ep->stats.bytes_received += m->len;
	return 0;
}

void
hp_endpoint_notify_credit(struct hp_endpoint *ep, hp_atomic_u32 *granted_total)
{
	if (!ep->peer_waiters) {
		/* r[shm.wakeup.credit-wait]: a spec-only peer waits on it */
		hp_futex_wake(granted_total, INT_MAX);
		if (ep->side == HP_SIDE_GUEST)
			ring(ep);
		ep->stats.wakes++;
		return;
	}
	wake_peer(ep, HP_WAIT_CREDIT);
}

void
hp_endpoint_announce(struct hp_endpoint *ep, uint32_t waits)
{
	struct hp_wait_group *g = ep->group;

	/* the others of the group: woken by what they receive, and by what
	 * is awaited (a send waiting for room or credit may be a lane's: the
	 * caller's wait names the hub's endpoint; a wake for nothing costs a
	 * loop) */
	for (uint32_t i = 0; g != NULL && i < g->n; i++)
		if (g->ep[i] != ep && g->ep[i]->my_waits != NULL && !g->ep[i]->hung)
			hp_store_relaxed_u32(g->ep[i]->my_waits, waits | HP_WAIT_RING_DATA);
	if (ep->my_waits == NULL && g == NULL)
		return;
	if (ep->my_waits != NULL)
		hp_store_relaxed_u32(ep->my_waits, waits);
	/* Dekker: pairs with the fence in the waker's wake_peer; announce,
	 * fence, then re-check */
	hp_fence_seq_cst();
}

void
hp_endpoint_cancel(struct hp_endpoint *ep)
{
	struct hp_wait_group *g = ep->group;

	for (uint32_t i = 0; g != NULL && i < g->n; i++)
		if (g->ep[i] != ep && g->ep[i]->my_waits != NULL)
			hp_store_relaxed_u32(g->ep[i]->my_waits, 0);
	if (ep->my_waits != NULL)
		hp_store_relaxed_u32(ep->my_waits, 0);
}

/* -- sleeping with a group ------------------------------------------------ */

int
hp_group_add(struct hp_wait_group *g, struct hp_endpoint *ep)
{
	if (g->n >= HP_GROUP_MAX)
		return -ENOSPC;
	ep->hung = 0;
	g->ep[g->n++] = ep;
	ep->group = g;
	return 0;
}

void
hp_group_remove(struct hp_wait_group *g, struct hp_endpoint *ep)
{
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->ep[i] != ep)
			continue;
		g->n--;
		g->ep[i] = g->ep[g->n];
		ep->group = NULL;
		return;
	}
}

int
hp_group_hung(const struct hp_endpoint *ep)
{
	return ep->hung;
}

int
hp_group_bell_add(struct hp_wait_group *g, int fd)
{
	if (g->nbells >= HP_GROUP_BELLS)
		return -ENOSPC;
	g->bell[g->nbells++] = fd;
	return 0;
}

void
hp_group_bell_remove(struct hp_wait_group *g, int fd)
{
	for (uint32_t i = 0; i < g->nbells; i++)
		if (g->bell[i] == fd) {
			g->bell[i] = g->bell[--g->nbells];
			return;
		}
}

static int
in_group(const struct hp_wait_group *g, const struct hp_endpoint *ep)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->ep[i] == ep)
			return 1;
	return 0;
}

/* Drains member i's doorbell: 0, or -EPIPE for the hub's hang-up
 * (another's is noted in its hung). */
static int
drain_member(struct hp_wait_group *g, uint32_t i)
{
	int rc = hp_doorbell_drain_fds(g->ep[i]->doorbell, i == 0 ? &g->fdq : NULL);

	if (rc == -EPIPE && i != 0) {
		g->ep[i]->hung = 1;
		return 0;
	}
	return rc;
}

/* The poll's layout: the members' doorbells [0, n), their bells
 * (HP_FEAT_BELLS, -1: none) [n, 2n), the kick at 2n, then the group's
 * other bells (topics'). */
void
hp_endpoint_sleep_prepare(struct hp_endpoint *ep, int kick, struct hp_sleep *s)
{
	struct hp_wait_group *g = ep->group;
	uint32_t i, n = g != NULL ? g->n : 1;

	/* r[shm.doorbell.wait], on every doorbell of the group */
	for (i = 0; i < n; i++) {
		struct hp_endpoint *m = g != NULL ? g->ep[i] : ep;

		s->ep[i] = m;
		s->pfd[i] = (struct pollfd){ .fd = m->hung ? -1 : m->doorbell,
					     .events = POLLIN };
		s->pfd[n + i] = (struct pollfd){ .fd = m->bell_in, .events = POLLIN };
	}
	s->pfd[2 * n] = (struct pollfd){ .fd = kick, .events = POLLIN };
	s->n = n;
	s->nbells = g != NULL ? g->nbells : 0;
	for (i = 0; i < s->nbells; i++)
		s->pfd[2 * n + 1 + i] = (struct pollfd){ .fd = g->bell[i], .events = POLLIN };
}

int
hp_sleep_poll(struct hp_sleep *s, int ms)
{
	const struct pollfd *kick = &s->pfd[2 * s->n];
	uint64_t k;
	int rc = poll(s->pfd, 2 * s->n + 1 + s->nbells, ms);

	if (rc < 0)
		return -errno;
	if (kick->fd >= 0 && (kick->revents & POLLIN) &&
	    read(kick->fd, &k, sizeof(k)) < 0 && errno != EAGAIN)
		return -errno;
	return rc > 0;
}

int
hp_endpoint_sleep_finish(struct hp_endpoint *ep, const struct hp_sleep *s)
{
	struct hp_wait_group *g = ep->group;
	int rc, hub = 0;

	for (uint32_t i = 0; i < s->nbells; i++) {
		const struct pollfd *b = &s->pfd[2 * s->n + 1 + i];

		if (b->revents == 0 || g == NULL)
			continue;
		/* still a bell of the group: drained, or left out once hung */
		for (uint32_t j = 0; j < g->nbells; j++)
			if (g->bell[j] == b->fd && hp_doorbell_drain(b->fd) == -EPIPE) {
				g->bell[j] = -1;
				g->bells_hung++;
			}
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const struct pollfd *b = &s->pfd[s->n + i];

		/* still a member (looked up before it is touched: a lane may
		 * have gone while we slept), still its bell: drained; one
		 * whose writer went is polled no more (the doorbell tells why) */
		if (b->revents == 0 || (g != NULL && !in_group(g, s->ep[i])))
			continue;
		if (s->ep[i]->bell_in == b->fd && hp_bell_drain(b->fd) == -EPIPE)
			s->ep[i]->bell_in = -1;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		uint32_t j = 0;

		if (s->pfd[i].revents == 0)
			continue;
		if (g == NULL) {
			/* hang-up wins over pending bytes: the peer is gone */
			if (s->pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))
				return s->pfd[i].revents & POLLNVAL ? -EBADF : -EPIPE;
			return hp_doorbell_drain_fds(ep->doorbell, NULL);
		}
		/* still a member (the group may have changed while we
		 * slept): what its doorbell says now, by reading it */
		while (j < g->n && (g->ep[j] != s->ep[i] || g->ep[j]->doorbell != s->pfd[i].fd))
			j++;
		if (j < g->n && !g->ep[j]->hung && (rc = drain_member(g, j)) != 0 && j == 0)
			hub = rc;
	}
	return hub;
}

int
hp_endpoint_sleep(struct hp_endpoint *ep, int kick, int ms)
{
	struct hp_sleep s;
	int rc;

	hp_endpoint_sleep_prepare(ep, kick, &s);
	if (ep->group != NULL && ep->group->on_sleep != NULL &&
	    ep->group->on_sleep(ep->group->on_sleep_arg) != 0)
		return 1;
	if ((rc = hp_sleep_poll(&s, ms)) <= 0)
		return rc;
	return (rc = hp_endpoint_sleep_finish(ep, &s)) != 0 ? rc : 1;
}

static int
drain(struct hp_endpoint *ep, int bells)
{
	struct hp_sleep s;
	int rc;

	/* one look at every doorbell and bell of the group, then a read of
	 * those that rang: a syscall for the look, not one per descriptor */
	hp_endpoint_sleep_prepare(ep, -1, &s);
	if (!bells)
		s.nbells = 0;
	if ((rc = hp_sleep_poll(&s, 0)) <= 0)
		return rc;
	return hp_endpoint_sleep_finish(ep, &s);
}

int
hp_endpoint_drain(struct hp_endpoint *ep)
{
	return drain(ep, 0);
}

int
hp_endpoint_drain_all(struct hp_endpoint *ep)
{
	return drain(ep, 1);
}

/* Relaxed throughout: the count only steers spinning against yielding. */
void
hp_endpoint_set_awake(struct hp_endpoint *ep, int awake)
{
	/* our own flag only: hubd sums the flags (hp_awake_flag) and writes
	 * the count into each guest's header (hp_awake_publish), so that no
	 * guest can write what another reads */
	if (ep->awake_flag != NULL)
		hp_store_relaxed_u32(ep->awake_flag, awake != 0);
}

int
hp_endpoint_crowded(const struct hp_endpoint *ep)
{
	return ep->awake != NULL && hp_load_relaxed_u32(ep->awake) > ep->ncpus;
}

int
hp_awake_flag(const struct hp_peer_view *v)
{
	return v->ext != NULL && hp_load_relaxed_u32(&v->ext->guest_awake) != 0;
}

void
hp_awake_publish(struct hp_segment *seg, uint32_t count)
{
	if (seg->host_features & HP_FEAT_WAITERS)
		hp_store_relaxed_u32(awake_word(seg), count);
}

int
hp_endpoint_tx_room(void *arg)
{
	return tx_room(arg);
}
