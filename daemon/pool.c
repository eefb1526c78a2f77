/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The shared variable pools, the host's side: one per zone (struct zone,
 * a sealed memfd its members map), made as its first guest starts and
 * dropped with its last; growth when a class runs out, the sweeper (a
 * libev timer: reclaims what dead guests held and what guests scribbled,
 * rebuilds a free list found broken, reports slots held too long), the
 * recovery of one dead guest's slots, and validate on demand. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/host.h"
#include "daemon/log.h"
#include "daemon/pool.h"
#include "daemon/size.h"
#include "proto/clock.h"
#include "proto/segment.h"
#include "proto/varpool_host.h"

/* -- zones ------------------------------------------------------------------ */

static const char *
zone_name(const struct config_guest *g)
{
	return g->zone[0] != '\0' ? g->zone : g->name;
}

static void
zone_free(struct zone *z)
{
	hp_var_close(&z->var);
	if (z->base != NULL)
		munmap(z->base, z->size);
	if (z->fd >= 0)
		close(z->fd);
	free(z->held);
	free(z);
}

/* A zone's pool made: 0 with *zp, or -errno with *why. */
static int
zone_new(struct hub *h, const char *name, struct zone **zp, const char **why)
{
	const struct hp_params *prm = &h->conf.params;
	struct zone *z;
	char mname[64];
	int rc;

	if ((z = calloc(1, sizeof(*z))) == NULL ||
	    (z->held = calloc(prm->max_guests + 1, sizeof(*z->held))) == NULL) {
		free(z);
		*why = "out of memory";
		return -ENOMEM;
	}
	snprintf(z->name, sizeof(z->name), "%s", name);
	snprintf(mname, sizeof(mname), "hub-pool:%s", name);
	/* The file as long as the pool may grow (sparse: only touched pages
	 * count) and sealed at that: no guest of the zone can shrink it
	 * under hubd, nor grow it to use memory no limit counts. hubd maps
	 * the region and the first extents; growth maps each extent. */
	z->size = hp_var_initial_size(&prm->var, prm->max_guests);
	if ((z->fd = hp_segment_memfd(mname, hp_var_max_size(&prm->var, prm->max_guests), 1,
				      why)) < 0) {
		rc = z->fd;
		z->fd = -1;
		zone_free(z);
		return rc;
	}
	z->base = mmap(NULL, z->size, PROT_READ | PROT_WRITE, MAP_SHARED, z->fd, 0);
	if (z->base == MAP_FAILED) {
		rc = -errno;
		z->base = NULL;
		*why = "cannot map the pool";
		zone_free(z);
		return rc;
	}
	if ((rc = hp_var_create(&z->var, z->base, z->size, z->fd, 0, &prm->var,
				prm->max_guests)) != 0) {
		*why = "cannot set up the pool";
		zone_free(z);
		return rc;
	}
	z->next = h->zones;
	h->zones = z;
	*zp = z;
	return 0;
}

/* Zones no guest is in any more and none of whose slots waits in a
 * backlog (host_forward holds a sender's slot there until it is copied). */
static void
drop_unused(struct hub *h)
{
	for (struct zone **zp = &h->zones; *zp != NULL; ) {
		struct zone *z = *zp;

		if (z->members > 0 || z->backlogged > 0) {
			zp = &z->next;
			continue;
		}
		*zp = z->next;
		zone_free(z);
	}
}

int
pool_join(struct hub *h, struct peer *p, const char **why)
{
	const char *name = zone_name(p->conf);
	struct zone *z;
	int rc;

	if (p->zone != NULL && strcmp(p->zone->name, name) == 0 && p->conf->shared_pool)
		return 0;
	pool_leave(h, p);	/* a reload moved it, or took it out */
	if (!p->conf->shared_pool || h->conf.params.var.nclasses == 0)
		return 0;
	for (z = h->zones; z != NULL; z = z->next)
		if (strcmp(z->name, name) == 0)
			break;
	if (z == NULL && (rc = zone_new(h, name, &z, why)) != 0)
		return rc;
	z->members++;
	p->zone = z;
	return 0;
}

void
pool_leave(struct hub *h, struct peer *p)
{
	struct zone *z = p->zone;

	if (z == NULL)
		return;
	p->zone = NULL;
	z->members--;
	drop_unused(h);
}

void
pool_free(struct hub *h)
{
	struct zone *z;

	for (uint32_t i = 0; i < h->npeers; i++)
		h->peers[i].zone = NULL;
	while ((z = h->zones) != NULL) {
		h->zones = z->next;
		zone_free(z);
	}
}

/* A peer that owns slots is dead when it has no process: a guest that is
 * starting, up or being stopped still has one and keeps its slots. */
static int
owner_dead(void *arg, uint32_t owner)
{
	struct peer *p = hub_peer(arg, owner);

	return p == NULL || p->pid == 0;
}

int
pool_live(void *arg, uint32_t owner)
{
	return owner == HP_VAR_HOST || !owner_dead(arg, owner);
}

static int
is_owner(void *arg, uint32_t owner)
{
	return owner == *(const uint32_t *)arg;
}

/* One reason a sweep returned slots for, added to a log line. */
struct returned {
	char		text[256];
	size_t		len;
	uint32_t	n;
};

static void
add_reason(struct returned *r, uint32_t n, const char *why)
{
	int w;

	if (n == 0)
		return;
	r->n += n;
	w = snprintf(r->text + r->len, sizeof(r->text) - r->len, "%s%u %s",
		     r->len > 0 ? ", " : "", n, why);
	if (w > 0)
		r->len = r->len + (size_t)w < sizeof(r->text) ? r->len + (size_t)w :
		    sizeof(r->text) - 1;
}

/* What a sweep returned, each reason named: a dead guest's slots only
 * when the sweep was not for that guest (pool_reclaim says so itself). */
static void
log_returned(const struct zone *z, const struct hp_var_back *b, int with_dead)
{
	struct returned r;

	memset(&r, 0, sizeof(r));
	if (with_dead)
		add_reason(&r, b->dead, "of guests that are gone");
	add_reason(&r, b->lost, "free but on no list");
	add_reason(&r, b->forged, "forged as the host's");
	add_reason(&r, b->no_owner, "held by no guest");
	add_reason(&r, b->bad_state, "in no state");
	add_reason(&r, b->gen_zero, "held as generation 0");
	if (r.n == 0)
		return;
	log_warnx("pool %s: %u slot%s returned: %s%s", z->name, r.n, r.n == 1 ? "" : "s", r.text,
		  b->forged + b->no_owner + b->bad_state + b->gen_zero > 0 ?
		  " (a guest scribbled the pool)" : "");
}

void
pool_reclaim(struct peer *p)
{
	struct hp_var_back b;
	uint32_t peer_id = p->id;

	if (p->zone == NULL)
		return;
	/* r[shm.varslot.ownership]: a dead guest's slots go back */
	hp_var_sweep(&p->zone->var, hp_now_ns(), 0, is_owner, &peer_id, NULL, NULL, &b, NULL);
	if (b.dead > 0)
		log_info("pool %s: %u slot%s of guest %s returned", p->zone->name, b.dead,
			 b.dead == 1 ? "" : "s", p->conf != NULL ? p->conf->name : "(gone)");
	log_returned(p->zone, &b, 0);
}

static void
zone_grow_requested(struct zone *z)
{
	struct hp_varpool *vp = &z->var;

	for (uint32_t c = 0; c < vp->nclasses; c++) {
		int rc;

		if (!hp_var_take_grow_request(vp, c))
			continue;
		if ((rc = hp_var_grow(vp, c)) == 0) {
			log_info("pool %s: class %u (%" PRIu32 " bytes) grew to %u extents",
				 z->name, c, vp->c[c].slot_size, vp->c[c].mapped);
		} else if (!z->full_logged[c]) {
			z->full_logged[c] = 1;
			log_warnx("pool %s: class %u (%" PRIu32 " bytes) is exhausted and cannot "
				  "grow (%u of %u extents%s)", z->name, c, vp->c[c].slot_size,
				  vp->c[c].mapped, vp->max_extents,
				  vp->c[c].mapped < vp->max_extents ? ", no room for the file" : "");
		}
	}
}

void
pool_grow_requested(struct hub *h)
{
	for (struct zone *z = h->zones; z != NULL; z = z->next)
		zone_grow_requested(z);
}

/* -- each guest's share ---------------------------------------------------- */

/* What waits for a guest in hubd's memory may reach its quota's
 * bytes, and this much whatever its pool (a pool of a few small slots
 * has a quota of a few KiB: less than its calls in flight bring back). */
#define MEM_MIN		(64ull << 20)
#define POOL_SPARE	1	/* slots a guest's quota keeps for its answers */

/* p's quota: its section's, else [pool]'s, else what one guest may take
 * of the pool grown to max_extents without leaving the others short: a
 * quarter of its slots (but two rings' worth: a full ring is what a busy
 * guest has in flight) and three quarters of its bytes (but two of its
 * largest payloads: a pipeline of the largest payloads may hold every
 * slot of their class, which has few). */
static void
quota(const struct hub *h, const struct peer *p, uint32_t *slots, uint64_t *bytes)
{
	const struct hp_varpool *vp = &p->zone->var;
	uint64_t all_slots = 0, all_bytes = 0;

	for (uint32_t c = 0; c < vp->nclasses; c++) {
		all_slots += (uint64_t)vp->c[c].spe * vp->max_extents;
		all_bytes += (uint64_t)vp->c[c].spe * vp->max_extents * vp->c[c].slot_size;
	}
	if (all_slots / 4 < 2ull * h->conf.params.ring_size)
		all_slots = 8ull * h->conf.params.ring_size;
	all_bytes = all_bytes / 4 * 3;
	if (all_bytes < 2ull * vp->max_payload)
		all_bytes = 2ull * vp->max_payload;
	*slots = p->conf->pool_quota_slots ? p->conf->pool_quota_slots :
	    h->conf.pool_quota_slots ? h->conf.pool_quota_slots :
	    all_slots / 4 > UINT32_MAX ? UINT32_MAX : (uint32_t)(all_slots / 4);
	*bytes = p->conf->pool_quota ? p->conf->pool_quota :
	    h->conf.pool_quota ? h->conf.pool_quota : all_bytes;
}

void
pool_usage(struct hub *h, struct peer *p, struct pool_use *u)
{
	memset(u, 0, sizeof(*u));
	if (p->zone == NULL)
		return;
	/* what it holds of its zone's pool counts where it has zone mates
	 * to starve (alone in its zone it can starve only itself); what
	 * hubd holds on its behalf, in any zone's pool, always */
	u->slots = p->pool_charged_slots;
	u->bytes = p->pool_charged_bytes;
	if (p->zone->members > 1) {
		u->slots += p->zone->held[p->id].slots;
		u->bytes += p->zone->held[p->id].bytes;
	}
	quota(h, p, &u->max_slots, &u->max_bytes);
	/* what waits in hubd's memory on its behalf (copied out of slots
	 * their guests need to answer): its quota's bytes, but never less
	 * than what a caller of a small pool has in flight */
	u->mem = p->mem_charged;
	u->max_mem = u->max_bytes > MEM_MIN ? u->max_bytes : MEM_MIN;
}

void
pool_use_text(const struct pool_use *u, char *buf, size_t n)
{
	char a[24], b[24];

	if (u->mem > u->max_mem)
		snprintf(buf, n, "%s wait in hubd's memory on its behalf (at most %s)",
			 size_iec(a, sizeof(a), u->mem), size_iec(b, sizeof(b), u->max_mem));
	else
		snprintf(buf, n, "it holds %u slots, %s (pool_quota_slots %u, pool_quota %s)",
			 u->slots, size_iec(a, sizeof(a), u->bytes), u->max_slots,
			 size_iec(b, sizeof(b), u->max_bytes));
}

static int
within(const struct pool_use *u)
{
	return u->slots <= u->max_slots && u->bytes <= u->max_bytes && u->mem <= u->max_mem;
}

/* u less what waits for p unread: in its ring (a count of hubd's own,
 * which counts for p only with zone mates, as the sweep's does) and in
 * its backlog (its answers and items). */
static void
not_read(struct peer *p, struct pool_use *u)
{
	uint32_t slots = p->pool_for_slots;
	uint64_t bytes = p->pool_for_bytes, b;
	uint32_t s;

	if (p->zone->members > 1) {
		hp_endpoint_unread_var(&p->ep, &s, &b);
		slots += s;
		bytes += b;
	}
	u->slots -= slots < u->slots ? slots : u->slots;
	u->bytes -= bytes < u->bytes ? bytes : u->bytes;
}

int
pool_over_quota(struct hub *h, struct peer *p, uint32_t slots, uint64_t bytes)
{
	struct pool_use u;
	char text[sizeof(p->fault_text) - 16];

	if (p->zone == NULL || !host_serving(p))
		return 0;	/* no pool, or being ended already */
	pool_usage(h, p, &u);
	u.slots += slots;
	u.bytes += bytes;
	if (within(&u))
		return 0;
	/* ended only for what it keeps: not for what hubd handed it and it
	 * has not read yet (a caller paused while its answers come is no
	 * hoarder), bounded by its ring and its backlog; what hubd hands it
	 * still waits for room in its quota (pool_room) */
	not_read(p, &u);
	if (within(&u))
		return 0;
	pool_use_text(&u, text, sizeof(text));
	snprintf(p->fault_text, sizeof(p->fault_text), "pool quota: %s", text);
	host_fault(h, p, DEATH_VIOLATION, p->fault_text);
	return 1;
}

int
pool_room(struct hub *h, struct peer *p, uint32_t slots, uint64_t bytes)
{
	const struct hp_varpool *vp;
	struct pool_use u;
	uint64_t slot = 0;

	if (p->zone == NULL || p->zone->members < 2)
		return 1;
	vp = &p->zone->var;
	pool_usage(h, p, &u);
	u.slots += p->copied_slots;
	u.bytes += p->copied_bytes;
	if (u.slots == 0)
		return 1;	/* one payload over the quota still goes */
	/* the class it takes first */
	for (uint32_t c = 0; c < vp->nclasses && slot == 0; c++)
		if (vp->c[c].slot_size >= bytes / (slots > 0 ? slots : 1))
			slot = vp->c[c].slot_size;
	return (uint64_t)u.slots + slots + POOL_SPARE <= u.max_slots &&
	    u.bytes + 2 * slot * slots <= u.max_bytes;
}

void
pool_forget(struct hub *h, struct peer *p)
{
	(void)h;
	if (p->zone != NULL)
		p->zone->held[p->id] = (struct hp_var_tally){ 0, 0 };
	p->copied_slots = 0;
	p->copied_bytes = 0;
}

/* The sweep's count against each served guest's quota: what it holds
 * itself (taken and never sent or freed, hoarded) and what waits for it
 * unread (in its ring, in its backlog). */
static void
check_quotas(struct hub *h)
{
	for (uint32_t i = 0; i < h->conf.params.max_guests; i++)
		if (host_serving(&h->peers[i]))
			pool_over_quota(h, &h->peers[i], 0, 0);
}

struct stuck_seen {
	struct hub		*h;
	struct hp_var_held	oldest;
};

static void
on_stuck(void *arg, const struct hp_var_held *s)
{
	struct stuck_seen *ss = arg;

	if (s->held_ns > ss->oldest.held_ns)
		ss->oldest = *s;
}

static int
stuck_owner_dead(void *arg, uint32_t owner)
{
	return owner_dead(((struct stuck_seen *)arg)->h, owner);
}

/* Slots of class c taken so far, by everyone (each counts its own). */
static uint64_t
class_allocs(const struct hp_varpool *vp, uint32_t c)
{
	uint64_t n = 0;

	for (uint32_t p = 0; p <= vp->max_guests; p++)
		n += hp_load_relaxed_u64(&vp->stats[(uint64_t)p * vp->nclasses + c].allocs);
	return n;
}

/* A class that no one took a slot of for release_after gives the memory
 * of its grown extents' free slots back, once per quiet spell: the pool
 * keeps its size and its first extent warm, and a burst that grew it
 * does not hold its memory for as long as the zone lives. */
static void
zone_release(struct hub *h, struct zone *z, uint64_t now)
{
	struct hp_varpool *vp = &z->var;

	for (uint32_t c = 0; c < vp->nclasses; c++) {
		uint64_t n = class_allocs(vp, c), bytes;
		char a[24], b[24];

		if (n != z->quiet[c].allocs || z->quiet[c].since_ns == 0) {
			z->quiet[c].allocs = n;
			z->quiet[c].since_ns = now;
			z->quiet[c].released = 0;
			continue;
		}
		if (h->conf.pool_release_ns == 0 || z->quiet[c].released ||
		    now - z->quiet[c].since_ns < h->conf.pool_release_ns)
			continue;
		z->quiet[c].released = 1;
		if ((bytes = hp_var_release(vp, c)) == 0)
			continue;
		z->released += bytes;
		log_info("pool %s: class %u (%s slots): %s given back to the system, no slot "
			 "taken for %.0f s", z->name, c, size_iec(a, sizeof(a), vp->c[c].slot_size),
			 size_iec(b, sizeof(b), bytes), (double)(now - z->quiet[c].since_ns) / 1e9);
	}
}

static void
zone_sweep(struct hub *h, struct zone *z)
{
	struct stuck_seen ss = { h, { 0, 0, 0, 0, 0 } };
	struct hp_varpool *vp = &z->var;
	uint64_t rebuilds[HP_VAR_MAX_CLASSES];
	struct hp_var_back back;
	uint32_t stuck;

	zone_grow_requested(z);
	for (uint32_t c = 0; c < vp->nclasses; c++)
		rebuilds[c] = vp->diag[c].rebuilds;
	hp_var_sweep(vp, hp_now_ns(), h->conf.pool_stuck_ns, stuck_owner_dead, &ss, on_stuck,
		     &stuck, &back, z->held);
	/* what hubd put into its members' pools is in the count now */
	for (uint32_t i = 0; i < h->npeers; i++)
		if (h->peers[i].zone == z) {
			h->peers[i].copied_slots = 0;
			h->peers[i].copied_bytes = 0;
		}
	/* a guest broke it (or died mid-push): who cannot be told for sure */
	for (uint32_t c = 0; c < vp->nclasses; c++)
		if (vp->diag[c].rebuilds != rebuilds[c])
			log_warnx("pool %s: class %u (%" PRIu32 " bytes): its free list was "
				  "broken; rebuilt from the slots", z->name, c, vp->c[c].slot_size);
	log_returned(z, &back, 1);
	zone_release(h, z, hp_now_ns());
	/* a live holder is never robbed: it is reported, once per change */
	if (stuck > z->stuck) {
		struct peer *p = hub_peer(h, ss.oldest.owner);

		log_warnx("pool %s: %u slots held longer than %.1f s; the oldest, class %u "
			  "slot %u, by guest %s for %.1f s", z->name, stuck,
			  (double)h->conf.pool_stuck_ns / 1e9, ss.oldest.cls, ss.oldest.index,
			  p != NULL && p->conf != NULL ? p->conf->name : "?",
			  (double)ss.oldest.held_ns / 1e9);
	}
	z->stuck = stuck;
}

static void
sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct hub *h = w->data;

	(void)loop;
	(void)revents;
	drop_unused(h);
	for (struct zone *z = h->zones; z != NULL; z = z->next)
		zone_sweep(h, z);
	check_quotas(h);
}

static void
starved_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct hub *h = w->data;

	(void)revents;
	/* the backlogs that waited for a slot are tried again */
	for (uint32_t i = 0; i < h->npeers; i++)
		h->peers[i].bl_starved = 0;
	if (!ev_is_active(&h->idle_w))
		ev_idle_start(loop, &h->idle_w);
}

void
pool_start(struct hub *h)
{
	double every = (double)h->conf.pool_sweep_ns / 1e9;

	ev_timer_init(&h->starved_w, starved_cb, 0.002, 0);
	h->starved_w.data = h;
	if (h->conf.params.var.nclasses == 0)
		return;
	ev_timer_init(&h->pool_w, sweep_cb, every, every);
	h->pool_w.data = h;
	ev_timer_start(h->loop, &h->pool_w);
}

void
pool_retime(struct hub *h)
{
	double every = (double)h->conf.pool_sweep_ns / 1e9;

	if (h->conf.params.var.nclasses == 0)
		return;
	ev_timer_stop(h->loop, &h->pool_w);
	ev_timer_set(&h->pool_w, every, every);
	ev_timer_start(h->loop, &h->pool_w);
}

void
pool_stop(struct hub *h)
{
	ev_timer_stop(h->loop, &h->starved_w);
	if (h->conf.params.var.nclasses != 0)
		ev_timer_stop(h->loop, &h->pool_w);
}

/* A zone's problems, each named with its zone. */
struct zone_report {
	const struct zone	*z;
	void			(*report)(void *arg, const char *problem);
	void			*arg;
};

static void
zone_problem(void *arg, const char *problem)
{
	struct zone_report *zr = arg;
	char text[320];

	snprintf(text, sizeof(text), "pool %s: %s", zr->z->name, problem);
	zr->report(zr->arg, text);
}

uint32_t
pool_validate(struct hub *h, void (*report)(void *arg, const char *problem), void *arg)
{
	uint32_t n = 0;

	/* it only looks: repairs are the sweeper's, which walks every list
	 * too (hp_var_sweep) */
	for (struct zone *z = h->zones; z != NULL; z = z->next) {
		struct zone_report zr = { z, report, arg };
		int64_t k = hp_var_validate_twice(&z->var, 1, pool_live, h, zone_problem, &zr);

		if (k < 0) {
			zone_problem(&zr, "not checked: out of memory");
			k = 1;
		}
		n += (uint32_t)k;
	}
	return n;
}
