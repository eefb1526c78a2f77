/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The data path's transport: the guests' rings (receiving, sending,
 * publishing what a round sent), the backlogs, sleep and wake, liveness
 * checks, attach and detach. It names nothing above it: what a peer's
 * attach or detach means to the parts above, and a backlog's charge
 * against the pool quota, are hooks they register (hubd.c).
 *
 * Nothing here blocks: a message that finds no room waits in the target's
 * backlog, and whoever floods a backlogged target is held (its own ring
 * fills: backpressure on itself only). Nothing here ends a guest either: a
 * broken rule is reported (host_fault) and the supervisor acts on it once
 * the data path has returned (supervise_faults).
 *
 * Over 600 lines, one job: sending (the backlog), serving the rings,
 * sleep, the liveness checks and detach all report into host_fault and
 * read or empty the backlog (its queue, its charge, the slots it holds);
 * split, those insides would be shared across files, or the files would
 * call each other. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/host.h"
#include "daemon/log.h"
#include "proto/peer.h"

#define BACKLOG_PAUSE	256	/* a target this backlogged holds its callers */
/* Slots of each class that hubd's copies into a guest's shared pool leave
 * free: what the guest sends itself (its answers, a caller's next request
 * while answers wait for it) always finds one, so answers never starve
 * behind the payloads hubd copied in. A copy that finds only these waits
 * in the backlog until the guest frees one. */
#define SPARE_SLOTS	1
/* Messages waiting for guest p that does not read its ring: beyond this
 * it is ended, rather than hold the host's memory (everything sent to it
 * is bounded by its own calls and the callers held on it: the answers
 * to up to calls_in_flight calls to guests may all come at once, and to
 * the calls it made before a reload lowered calls_in_flight). */
static uint32_t
backlog_max(const struct hub *h, const struct peer *p)
{
	uint32_t calls = h->conf.calls_in_flight;

	return 1024 + 4 * BACKLOG_PAUSE + (p->inbound > calls ? p->inbound : calls);
}

void
host_on_attach(struct hub *h, host_peer_fn *fn)
{
	if (h->hooks.nattach >= HOST_HOOKS_MAX)
		fatalx("host_on_attach: more than %d hooks", HOST_HOOKS_MAX);
	h->hooks.attach[h->hooks.nattach++] = fn;
}

void
host_on_detach(struct hub *h, host_peer_fn *fn)
{
	if (h->hooks.ndetach >= HOST_HOOKS_MAX)
		fatalx("host_on_detach: more than %d hooks", HOST_HOOKS_MAX);
	h->hooks.detach[h->hooks.ndetach++] = fn;
}

void
host_on_charge(struct hub *h, host_quota_fn *over, host_quota_fn *room)
{
	h->hooks.over_quota = over;
	h->hooks.room = room;
}

/* A slot hubd put into p's shared pool, counted until its zone's next
 * sweep counts it (pool_room). */
static void
note_copied(struct peer *p, uint32_t slot)
{
	if (!hp_var_is_slot(slot))
		return;
	p->copied_slots++;
	p->copied_bytes += hp_var_slot_bytes(p->ep.var, slot);
}

/* Whether p's quota leaves room for hubd to put a call of len bytes to it
 * into its pool, with room left for its answer; else the call waits. Only
 * calls: what p gets for its own calls and streams is its own doing, and
 * held back it could keep p from ever reading it. */
static int
quota_room(struct hub *h, struct peer *p, uint8_t type, uint32_t len)
{
	if (type != HP_MSG_REQUEST || len <= HP_INLINE_MAX || p->ep.var == NULL ||
	    h->hooks.room == NULL || h->hooks.room(h, p, 1, len))
		return 1;
	p->quota_wait = 1;
	return 0;
}

void
host_fault(struct hub *h, struct peer *p, int reason, const char *rule)
{
	if (p->fault != NULL)
		return;		/* the first broken rule is the one named */
	if (reason == DEATH_VIOLATION)
		p->stats.violations++;
	p->fault = rule;
	p->fault_reason = reason;
	h->faults++;
}

/* -- sending to a guest ------------------------------------------------- */

/* Room for a message of len bytes in p's ring. The host's slots for p
 * are in p's own domain (r[shm.segment.host-slots]): p frees them there
 * (r[shm.segment.slot-ownership]), and what it never freed goes with the
 * domain. */
int
host_reserve(struct hub *h, struct peer *p, uint32_t len, struct hp_outbuf *ob)
{
	(void)h;
	return hp_endpoint_reserve(&p->ep, len, ob);
}

/* One message into p's ring, staged (published by the round's flush). */
int
host_try_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
	      uint64_t method_id, const uint8_t *payload, uint32_t len)
{
	struct hp_outbuf ob;
	int rc;

	if (!quota_room(h, p, type, len))
		return -EAGAIN;
	if ((rc = host_reserve(h, p, len, &ob)) != 0)
		return rc;
	if (len > 0)
		memcpy(ob.buf, payload, len);
	if ((rc = hp_endpoint_commit(&p->ep, &ob, type, id, method_id, len, HP_SEND_MORE)) == 0)
		note_copied(p, ob.slot);
	return rc;
}

/* A backlogged message's slot counts against the pool quota of the guest
 * it is for (an answer, an item) or from (a request): its doing, not the
 * receiver's. One that waits in hubd's memory holds no slot of a pool:
 * its bytes count, as what hubd's memory holds for the guest, and it
 * counts as a slot only against a sender (a request waiting for its
 * callee: the sender's count of those stays below what ends the callee,
 * backlog_max). What waits for the guest itself is bounded by its own
 * backlog and memory: counted as slots, answers waiting for a guest busy
 * making many calls ended it for "pool quota". */
static void
charge(struct hub *h, struct qmsg *q, int sign)
{
	struct peer *c = hub_peer(h, q->charged);
	uint32_t bytes;

	if (c == NULL)
		return;
	if (q->zone == NULL) {
		uint64_t mem = q->len + sizeof(*q);

		c->mem_charged += sign > 0 ? mem : -mem;
		if (!q->for_charged)
			c->pool_charged_slots += sign > 0 ? 1 : -1;
		return;
	}
	c->pool_charged_slots += sign > 0 ? 1 : -1;
	bytes = hp_var_slot_bytes(&q->zone->var, q->var_slot);
	c->pool_charged_bytes += sign > 0 ? bytes : -(uint64_t)bytes;
	if (q->for_charged) {
		c->pool_for_slots += sign > 0 ? 1 : -1;
		c->pool_for_bytes += sign > 0 ? bytes : -(uint64_t)bytes;
	}
}

/* A backlogged message leaves p's backlog (sent, or dropped). */
static void
unqueue(struct hub *h, struct peer *p, struct qmsg *q)
{
	charge(h, q, -1);
	if (q->zone != NULL)
		q->zone->backlogged--;
	if ((p->bl_head = q->next) == NULL)
		p->bl_tail = &p->bl_head;
	p->bl_count--;
	free(q);
}

/* A message from another zone that waited with its sender's slot: copied
 * into p's pool now, the sender's slot freed. One the sender broke while
 * it waited (its own pool: it can) is dropped (-ESTALE). */
static int
copy_held(struct hub *h, struct peer *p, struct qmsg *q)
{
	struct hp_varpool *src = &q->zone->var;
	const uint8_t *payload;
	const char *rule;
	int rc;

	if (hp_var_check(src, q->var_slot, q->var_gen, q->var_off, q->len, HP_VAR_HOST,
			 &payload, &rule) != 0) {
		log_warnx("guest %s: dropped a message whose payload its sender changed "
			  "while it waited (%s)", p->conf->name, rule);
		hp_var_free(src, q->var_slot, q->var_gen);
		return -ESTALE;
	}
	if ((rc = host_try_send(h, p, q->type, q->id, q->method_id, payload, q->len)) == 0)
		hp_var_free(src, q->var_slot, q->var_gen);
	return rc;
}

void
host_flush_backlog(struct hub *h, struct peer *p)
{
	struct qmsg *q;
	int rc;

	while ((q = p->bl_head) != NULL) {
		p->quota_wait = 0;
		if (q->var_slot == HP_SLOT_INLINE)
			rc = host_try_send(h, p, q->type, q->id, q->method_id, q->data, q->len);
		else if (p->ep.var != &q->zone->var)
			rc = copy_held(h, p, q);
		else if (!quota_room(h, p, q->type, q->len))
			rc = -EAGAIN;
		else if ((rc = hp_endpoint_send_var(&p->ep, q->var_slot, q->var_gen, q->len,
						    q->type, q->id, q->method_id,
						    HP_SEND_MORE)) == 0)
			note_copied(p, q->var_slot);
		/* no variable slot free, or none p's quota leaves room for:
		 * nobody rings us when there is, so look again shortly
		 * rather than spin (pool.c) */
		p->bl_starved = rc == -EAGAIN && p->ep.var != NULL &&
		    (p->ep.var->want != HP_VAR_NIL || p->quota_wait);
		if (p->bl_starved && !ev_is_active(&h->starved_w))
			ev_timer_start(h->loop, &h->starved_w);
		if (rc == -EAGAIN)
			break;
		if (rc != 0 && rc != -EMSGSIZE && rc != -ESTALE) {
			host_fault(h, p, DEATH_VIOLATION, "shm.ring.capacity");
			return;
		}
		unqueue(h, p, q);
	}
	if (p->bl_holds && p->bl_count < BACKLOG_PAUSE / 2) {
		/* room again: callers held on its backlog may go on */
		p->bl_holds = 0;
		for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
			if (h->peers[i].held_on == p->id)
				host_unhold(&h->peers[i], HOLD_BACKLOG);
	}
}

/* Whether p's backlog can move now: room in its ring and, for a head that
 * still needs a slot, a free one. A backlog that cannot is no work: hubd
 * sleeps on HP_WAIT_RING_SPACE and HP_WAIT_SLOT, which p rings as it
 * consumes (a variable slot's starvation has its timer, pool.c). Polling a
 * ring that a guest does not read kept hubd at 100% of a CPU. */
static int
backlog_ready(struct peer *p)
{
	const struct qmsg *q = p->bl_head;

	if (q == NULL || p->bl_starved)
		return 0;
	if (q->var_slot != HP_SLOT_INLINE || q->len <= HP_INLINE_MAX)
		return hp_endpoint_tx_room(&p->ep) > 0;
	return hp_endpoint_tx_ready(&p->ep) > 0;
}

int
host_backlogged(const struct peer *p)
{
	return p->bl_count >= BACKLOG_PAUSE;
}

int
host_would_queue(struct peer *p)
{
	return p->bl_head != NULL || hp_endpoint_tx_room(&p->ep) == 0;
}

void
host_hold(struct peer *p, struct peer *q, uint8_t why)
{
	/* p is read no more once held: its holds are all on one guest */
	if (p->held_by == 0) {
		p->held_on = q->id;
		p->held_ns = hp_coarse_ns();
	}
	p->held_by |= why;
	if (why & HOLD_BACKLOG)
		q->bl_holds = 1;
}

/* A hold that outlasted HOLD_MAX_NS ends. */
static void
hold_expire(struct hub *h, struct peer *p, uint64_t now)
{
	struct peer *q = hub_peer(h, p->held_on);

	if (p->held_by == 0 || now < p->held_ns || now - p->held_ns < HOLD_MAX_NS)
		return;
	log_info("guest %s: held %llu s on guest %s (%s), read again; not held on it "
		 "again until it answers one of its calls", p->conf->name,
		 (unsigned long long)((now - p->held_ns) / HP_NS_PER_S),
		 q != NULL && q->conf != NULL ? q->conf->name : "?",
		 p->held_by & HOLD_BACKLOG ? "its backlog" : "a share of its calls in flight");
	p->hold_off = p->held_on;
	host_unhold(p, HOLD_BACKLOG | HOLD_SHARE);
}

static void
backlog(struct peer *p, struct qmsg *q)
{
	*p->bl_tail = q;
	p->bl_tail = &q->next;
	p->bl_count++;
	p->stats.backlogged++;
}

/* host_send's, with the guest whose quota a backlogged copy counts
 * against (0: none). */
static void
send_or_queue(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
	      uint64_t method_id, const uint8_t *payload, uint32_t len, uint32_t charged)
{
	struct qmsg *q;
	struct peer *c;
	int rc;

	if (!host_serving(p))
		return;
	/* staged: the data path's next round publishes it */
	if (!ev_is_active(&h->idle_w))
		ev_idle_start(h->loop, &h->idle_w);
	if (p->bl_head == NULL) {
		rc = host_try_send(h, p, type, id, method_id, payload, len);
		if (rc == 0)
			return;
		if (rc == -EMSGSIZE) {
			log_warnx("guest %s: dropped a %u-byte message over max_payload_size",
				  p->conf->name, len);
			return;
		}
		/* -ESTALE: a guest took the slot hubd had just taken (it
		 * scribbled the pool): the backlog tries once more, with
		 * another; not p's fault */
		if (rc != -EAGAIN && rc != -ESTALE) {
			host_fault(h, p, DEATH_VIOLATION, "shm.ring.capacity");
			return;
		}
	}
	if (p->bl_count >= backlog_max(h, p)) {
		host_fault(h, p, DEATH_HUNG, "stopped reading its ring (shm.ring.full)");
		return;
	}
	if ((q = malloc(sizeof(*q) + len)) == NULL) {
		log_warn("guest %s: backlog", p->conf->name);
		return;
	}
	q->next = NULL;
	q->type = type;
	q->id = id;
	q->method_id = method_id;
	q->len = len;
	q->var_slot = HP_SLOT_INLINE;
	q->zone = NULL;
	q->charged = charged;
	q->for_charged = charged == p->id;
	if (len > 0)	/* an empty message may have no payload at all */
		memcpy(q->data, payload, len);
	backlog(p, q);
	charge(h, q, 1);
	if ((c = hub_peer(h, charged)) != NULL && h->hooks.over_quota != NULL)
		h->hooks.over_quota(h, c, 0, 0);
}

void
host_send(struct hub *h, struct peer *p, uint8_t type, uint32_t id,
	  uint64_t method_id, const uint8_t *payload, uint32_t len)
{
	send_or_queue(h, p, type, id, method_id, payload, len, 0);
}

int
host_forward(struct hub *h, struct peer *q, struct hp_msg_in *m, uint8_t type,
	     uint32_t id, uint64_t method_id, uint32_t charged)
{
	struct qmsg *b;
	struct peer *c;
	uint32_t slot, gen, off = m->desc.payload_offset;
	int same, rc;

	if (m->len > q->ep.lim.max_payload_size)
		return -EMSGSIZE;
	if (!host_serving(q) || q->ep.var == NULL || !hp_var_is_slot(m->desc.payload_slot) ||
	    m->var == NULL) {
		host_send(h, q, type, id, method_id, m->payload, m->len);
		return 0;
	}
	if (!ev_is_active(&h->idle_w))
		ev_idle_start(h->loop, &h->idle_w);
	/* q shares the pool the slot is in (its zone): it goes on as it is;
	 * else it is copied into q's (a guest reads only what was sent to
	 * it) */
	same = m->var == q->ep.var;
	/* A payload whose class is down to its spare slot is copied, into
	 * q's pool if that has room (leaving its spare), else into hubd's
	 * memory (counted against the quota of the guest charged), and its
	 * slot freed at once: handed on, or held while it waits, it would
	 * take the slot its sender's zone keeps for the answers (inside a
	 * zone a caller's requests took every slot its callee needed to
	 * answer them). So is an answer across zones: held, it kept its
	 * callee from answering the requests that waited in its backlog with
	 * their callers' slots, while those callers' pools were full of them
	 * (each side waited for the other), and it counted against its
	 * caller's quota at its slot's size, a 1 MiB answer in a 32 MiB
	 * slot as 32 MiB. */
	if ((!same && type == HP_MSG_RESPONSE) ||
	    hp_var_short(m->var, m->desc.payload_slot, SPARE_SLOTS)) {
		send_or_queue(h, q, type, id, method_id, m->payload, m->len, charged);
		return 0;
	}
	if (q->bl_head == NULL) {
		if (same) {
			hp_endpoint_take(m, &slot, &gen);
			rc = quota_room(h, q, type, m->len) ? hp_endpoint_send_var(&q->ep, slot, gen,
			    m->len, type, id, method_id, HP_SEND_MORE) : -EAGAIN;
			if (rc == 0)
				note_copied(q, slot);
			if (rc == 0 || rc == -ESTALE)
				return 0;	/* -ESTALE: a peer freed it under us */
		} else {
			rc = host_try_send(h, q, type, id, method_id, m->payload, m->len);
			if (rc == 0)
				return 0;
			hp_endpoint_take(m, &slot, &gen);
			if (rc == -ESTALE)
				rc = -EAGAIN;	/* a slot of q's taken under us: later */
		}
		if (rc != -EAGAIN) {
			hp_var_free(m->var, slot, gen);
			host_fault(h, q, DEATH_VIOLATION, "shm.ring.capacity");
			return 0;
		}
	} else {
		hp_endpoint_take(m, &slot, &gen);
	}
	/* no room yet: the slot waits in q's backlog as it is, not a copy
	 * on hubd's heap (a copy across zones is made when it goes) */
	if (q->bl_count >= backlog_max(h, q) || (b = malloc(sizeof(*b))) == NULL) {
		hp_var_free(m->var, slot, gen);
		if (q->bl_count >= backlog_max(h, q))
			host_fault(h, q, DEATH_HUNG, "stopped reading its ring (shm.ring.full)");
		return 0;
	}
	b->next = NULL;
	b->type = type;
	b->id = id;
	b->method_id = method_id;
	b->len = m->len;
	b->var_slot = slot;
	b->var_gen = gen;
	b->var_off = same ? 0 : off;
	b->zone = zone_of(m->var);
	b->zone->backlogged++;
	/* a guest that calls and never reads what comes back, or floods a
	 * callee, cannot take the pool from the others: what waits here on
	 * its behalf counts against its quota (ended once over, its message
	 * kept: the callee's answer is due all the same); a slot of a pool
	 * it has alone starves only itself, and does not count */
	c = hub_peer(h, charged);
	b->charged = c != NULL && c->zone == b->zone && b->zone->members == 1 ? 0 : charged;
	b->for_charged = b->charged == q->id;
	charge(h, b, 1);
	backlog(q, b);
	if (b->charged != 0 && h->hooks.over_quota != NULL)
		h->hooks.over_quota(h, c, 0, 0);
	return 0;
}

/* -- serving ------------------------------------------------------------ */

/* p's next message into m: 0, -EAGAIN for none, or another -errno once
 * p was faulted for the rule its ring broke. */
int
host_recv(struct hub *h, struct peer *p, struct hp_msg_in *m)
{
	const char *rule;
	int rc = hp_endpoint_recv(&p->ep, m, &rule);

	if (rc != 0 && rc != -EAGAIN)
		host_fault(h, p, DEATH_VIOLATION, rule);
	return rc;
}

void
host_release(struct peer *p, struct hp_msg_in *m)
{
	hp_endpoint_release(&p->ep, m);
}

/* The round's end for p: what it consumed and what we staged for it
 * published. */
void
host_publish(struct hub *h, struct peer *p)
{
	hp_endpoint_notify_consumed(&p->ep);
	if (hp_endpoint_flush(&p->ep) == -EPROTO)
		host_fault(h, p, DEATH_VIOLATION, "shm.ring.capacity");
}

/* Before the loop blocks: announce sleep to every guest, then look once
 * more (endpoint.h); returns nonzero if there is work after all in a ring
 * or a backlog (the work sources above: dispatch_sleep_prepare). */
int
host_sleep_prepare(struct hub *h)
{
	int work = 0;

	for (uint32_t i = 0; i < h->peers_end; i++) {
		struct peer *p = &h->peers[i];

		if (!host_serving(p))
			continue;
		/* only what we wait for: a guest rings for each bit we set
		 * (a wake for nothing cost a call from idle 15-40 us: the
		 * guest rang as it consumed the answer, then yielded to us) */
		int streams = p->sources > 0 || p->relays > 0 || p->uploads > 0;

		hp_endpoint_announce(&p->ep, HP_WAIT_RING_DATA |
				     (p->bl_head != NULL || p->ep.staged > 0 || streams ?
				      HP_WAIT_RING_SPACE | HP_WAIT_SLOT : 0) |
				     (streams ? HP_WAIT_CREDIT : 0));
		if ((host_reading(p) && hp_endpoint_rx_ready(&p->ep)) || backlog_ready(p))
			work = 1;
	}
	return work;
}

int
host_crowded(const struct hub *h)
{
	return h->awake > h->ncpus;
}

/* Crowding (endpoint.h): the guests' own flags and hubd's summed, and the
 * count written into each guest's header when it changed. No guest can
 * write what another reads; a flag left up by a guest that went is
 * forgotten with its domain. */
void
host_awake_update(struct hub *h, int self)
{
	uint32_t n = self != 0;

	for (uint32_t i = 0; i < h->peers_end; i++)
		if (host_serving(&h->peers[i]) && hp_awake_flag(&h->peers[i].view))
			n++;
	if (n == h->awake)
		return;
	h->awake = n;
	for (uint32_t i = 0; i < h->peers_end; i++)
		if (h->peers[i].dom.base != NULL)
			hp_awake_publish(&h->peers[i].dom, n);
}

void
host_wake(struct hub *h)
{
	for (uint32_t i = 0; i < h->peers_end; i++)
		if (host_serving(&h->peers[i]))	/* as host_sleep_prepare announced */
			hp_endpoint_cancel(&h->peers[i].ep);
}

/* Periodic checks of attached guests: heartbeat (r[shm.crash.heartbeat]),
 * epoch (r[shm.crash.epoch]) and the state word (r[shm.host.poll-peers]). */
void
host_check(struct hub *h, uint64_t now)
{
	for (uint32_t i = 0; i < h->peers_end; i++) {
		struct peer *p = &h->peers[i];
		uint64_t interval = p->heartbeat_ns;	/* its domain's: its own or the hub's */
		uint64_t beat;
		struct hp_peer_snap e;

		/* one that stops may go quiet as it winds down: stop_grace
		 * bounds it */
		if (!host_serving(p) || p->state != PEER_UP)
			continue;
		hold_expire(h, p, now);
		/* its state with acquire: pairs with the guest's release of
		 * Goodbye (guest_detach) */
		hp_peer_snapshot(p->view.entry, &e);
		if (e.state == HP_PEER_GOODBYE)
			continue;	/* detaching: its exit follows */
		if (e.state != HP_PEER_ATTACHED) {
			host_fault(h, p, DEATH_VIOLATION, "shm.segment.peer-state");
			continue;
		}
		if (e.epoch != p->epoch) {
			host_fault(h, p, DEATH_VIOLATION, "shm.crash.epoch");
			continue;
		}
		/* r[shm.crash.heartbeat-clock]: its CLOCK_MONOTONIC against ours;
		 * quiet for more than 2 * interval, which is never computed (it
		 * could overflow); counted from its attach at the earliest,
		 * whose first beat may come after (libguest's just after: a
		 * guest preempted there was ended as hung, its word still 0) */
		beat = e.last_heartbeat > p->up_ns ? e.last_heartbeat : p->up_ns;
		if (interval != 0 && now > beat && now - beat > interval &&
		    now - beat - interval > interval)
			host_fault(h, p, DEATH_HUNG, "heartbeat stale (shm.crash.heartbeat)");
	}
}

/* The Goodbye that ends a guest (r[shm.goodbye.payload]): the rule it broke
 * or why it is ended. Through host_try_send, so that a slot it takes is
 * noted as the guest's and comes back at recovery. */
void
host_goodbye(struct hub *h, struct peer *p, const char *reason)
{
	uint8_t buf[128];
	int64_t n;

	if (p->state != PEER_UP || (n = hp_msg_encode_goodbye(buf, sizeof(buf), reason)) < 0)
		return;
	host_try_send(h, p, HP_MSG_GOODBYE, 0, 0, buf, (uint32_t)n);
	hp_endpoint_flush(&p->ep);
}

/* -- attach, detach and counters ------------------------------------------ */

int
host_attach(struct hub *h, struct peer *p)
{
	uint32_t features;

	hp_peer_view_host(&p->dom, p->id, &p->view);
	/* acquire: pairs with the guest's release store of guest_features,
	 * made before its CAS to Attached */
	features = hp_peer_features(p->view.entry);
	/* r[shm.ring.capacity]: it may have put its indices out of range;
	 * announced or not, a guest out of every zone has no pool */
	if (hp_endpoint_init_host(&p->ep, &p->dom, &p->view, p->bell, features,
				  p->zone != NULL ? &p->zone->var : NULL) != 0)
		return -EPROTO;
	p->ep.var_spare = SPARE_SLOTS;
	/* the places of its ring start with nothing handed to it (without
	 * memory for the record, its quota counts what it has not read) */
	free(p->tx_cls);
	p->ep.tx_cls = p->tx_cls = calloc(p->ep.tx.size, 1);
	/* it sleeps on the bell we gave it (HP_FEAT_BELLS) */
	if ((features & HP_FEAT_BELLS) && p->bells[1] >= 0)
		p->ep.bell_out = p->bells[1];
	p->bl_head = NULL;
	p->bl_tail = &p->bl_head;
	p->bl_count = 0;
	p->bl_starved = 0;
	p->quota_wait = 0;
	p->copied_slots = 0;
	p->copied_bytes = 0;
	p->pool_charged_slots = 0;
	p->pool_charged_bytes = 0;
	p->pool_for_slots = 0;
	p->pool_for_bytes = 0;
	p->mem_charged = 0;
	host_unhold(p, HOLD_BACKLOG | HOLD_SHARE);
	p->hold_off = 0;
	p->bl_holds = 0;
	p->inbound = 0;
	p->next_req = 1;
	p->nmethods = 0;	/* this instance's registrations */
	p->fault = NULL;
	/* the parts above start afresh: its pool count, its channels */
	for (uint32_t i = 0; i < h->hooks.nattach; i++)
		h->hooks.attach[i](h, p);
	return 0;
}

void
host_stats(const struct peer *p, struct peer_stats *s)
{
	*s = p->stats;
	s->bytes_in += p->ep.stats.bytes_received;
	s->bytes_out += p->ep.stats.bytes_sent;
	s->ring_full += p->ep.stats.ring_full;
	s->slot_exhausted += p->ep.stats.slot_exhausted;
	s->wakes += p->ep.stats.wakes;
}

void
host_retire(struct hub *h, struct peer *p)
{
	struct peer_stats s, *g = &h->gone;

	/* down: its instance's figures and its lanes' are in p->stats */
	host_stats(p, &s);
	g->calls_in += s.calls_in;
	g->calls_out += s.calls_out;
	g->violations += s.violations;
	g->backlogged += s.backlogged;
	g->credit_waits += s.credit_waits;
	g->bytes_in += s.bytes_in;
	g->bytes_out += s.bytes_out;
	g->ring_full += s.ring_full;
	g->slot_exhausted += s.slot_exhausted;
	g->wakes += s.wakes;
	g->lane_calls_in += s.lane_calls_in;
	g->lane_calls_out += s.lane_calls_out;
	g->lane_violations += s.lane_violations;
	h->gone_deaths += p->ndeaths;
	h->gone_restarts += p->restarts > 0 ? p->restarts - 1 : 0;
	memset(&p->stats, 0, sizeof(p->stats));
	memset(&p->ep.stats, 0, sizeof(p->ep.stats));
	p->ndeaths = p->restarts = 0;
}

void
host_detach(struct hub *h, struct peer *p)
{
	struct qmsg *q;

	host_stats(p, &p->stats);
	memset(&p->ep.stats, 0, sizeof(p->ep.stats));
	if (p->fault != NULL) {
		p->fault = NULL;	/* it died before the supervisor acted */
		h->faults--;
	}
	/* the parts above let go of p, in the order registered (hubd.c):
	 * its relays, the calls that involve it, its streams, its pool
	 * count */
	for (uint32_t i = 0; i < h->hooks.ndetach; i++)
		h->hooks.detach[i](h, p);
	while ((q = p->bl_head) != NULL) {
		if (q->var_slot != HP_SLOT_INLINE)
			hp_var_free(&q->zone->var, q->var_slot, q->var_gen);
		unqueue(h, p, q);
	}
	p->bl_starved = 0;
	/* what waits elsewhere on its behalf counts against nobody now */
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		for (q = h->peers[i].bl_head; q != NULL; q = q->next)
			if (q->charged == p->id)
				q->charged = 0;
	p->pool_charged_slots = 0;
	p->pool_charged_bytes = 0;
	p->pool_for_slots = 0;
	p->pool_for_bytes = 0;
	p->mem_charged = 0;
	/* its backlog is gone, and its answers with it */
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++) {
		if (h->peers[i].held_on == p->id)
			host_unhold(&h->peers[i], HOLD_BACKLOG | HOLD_SHARE);
		if (h->peers[i].hold_off == p->id)
			h->peers[i].hold_off = 0;
	}
	p->bl_holds = 0;
}
