/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* poolbreaker: a guest in the shared pool that breaks it, one way per run
 * (--act=NAME), then keeps heartbeating until the host ends it:
 *   badgen	sends a request in its own slot naming the wrong generation
 *   notmine	sends a request naming a slot in flight from another peer
 *		(the one before it, which must be alive)
 *   cycle	makes class 0's free list (--class=N: class N's) run in a
 *		circle; a slot linked to itself when it is the only one
 *   badlink	points class 0's free list past its last slot
 *   heldfree	pushes a slot it holds onto the free list (a free of a slot
 *		still in use) and keeps holding it
 *   hold	takes 8 slots of class 0 and holds them (for a kill)
 *   forgehost	takes every slot it can of every class and marks each the
 *		host's (owner 0), as if the host held them
 * Built on proto: libguest would do none of it. */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/method.h"
#include "proto/varpool.h"
#include "tests/guests/raw.h"

#define CLS_SHIFT	27

static struct hp_endpoint ep;
static struct hp_peer_view view;
static struct hp_segment seg;

static void
take(struct hp_var_ref *r)
{
	if (hp_var_alloc(ep.var, 100, r) != 0)
		errx(1, "no slot");
	memset(r->data, 0, 100);
}

/* hub.ping with its payload in the slot the descriptor names. */
static void
request_in(uint32_t slot, uint32_t gen)
{
	struct hp_desc d;

	memset(&d, 0, sizeof(d));
	d.msg_type = HP_MSG_REQUEST;
	d.id = 1;
	d.method_id = hp_method_id("hub.ping", 8);
	hp_desc_set_slot(&d, slot, gen, 0, 100);
	hp_ring_enqueue(&ep.tx, &d);
	hp_doorbell_signal(ep.doorbell);
}

/* Slot idx of class c's first extent. */
static struct hp_var_slot *
meta_of(uint32_t c, uint32_t idx)
{
	return &ep.var->c[c].meta[0][idx];
}

static struct hp_var_slot *
meta(uint32_t idx)
{
	return meta_of(0, idx);
}

static void
act(const char *what, uint32_t cls)
{
	struct hp_var_class *k = &ep.var->cls[0];
	uint64_t head = hp_load_acquire_u64(&k->free_head);
	uint32_t spe = ep.var->c[0].spe;
	struct hp_var_ref r, r2;

	if (strcmp(what, "badgen") == 0) {
		take(&r);
		hp_var_send(ep.var, r.slot, r.gen, ep.var_peer);
		request_in(r.slot, r.gen + 1);
	} else if (strcmp(what, "notmine") == 0) {
		/* a slot in flight from another peer, as if we forwarded
		 * it: the peer before us, alive (the tests list the breaker
		 * after the zone's other guests). One that does not exist
		 * (the peer after us) was dead to the sweeper, which could
		 * take the slot back before hubd read our request, and the
		 * request then broke the generation rule instead */
		if (ep.var_peer < 2)
			errx(1, "notmine: no peer before us");
		take(&r);
		if (hp_var_send(ep.var, r.slot, r.gen, ep.var_peer - 1) != 0)
			errx(1, "notmine: the slot did not go");
		request_in(r.slot, r.gen);
	} else if (strcmp(what, "cycle") == 0) {
		/* acquire: pairs with the release CAS of the push that put
		 * this head there, after writing its next_free */
		uint32_t a = (uint32_t)hp_load_acquire_u64(&ep.var->cls[cls].free_head), b;

		spe = ep.var->c[cls].spe;
		if (a >= spe)
			errx(1, "class %u has no free slot in its first extent", cls);
		/* b -> a: the second slot back to the first, or the only one
		 * to itself */
		b = hp_load_relaxed_u32(&meta_of(cls, a)->next_free);
		if (b == HP_VAR_NIL)
			b = a;
		if (b >= spe)
			errx(1, "class %u's second free slot is past its first extent", cls);
		hp_store_relaxed_u32(&meta_of(cls, b)->next_free, a);
	} else if (strcmp(what, "badlink") == 0) {
		uint32_t a = (uint32_t)head;

		if (a >= spe)
			errx(1, "class 0 is empty");
		hp_store_relaxed_u32(&meta(a)->next_free, spe * HP_VAR_MAX_EXTENTS + 7);
	} else if (strcmp(what, "heldfree") == 0) {
		take(&r);
		take(&r2);
		/* r on the list again while we hold it (its state says so) */
		uint32_t idx = r.slot & ((1u << CLS_SHIFT) - 1);

		do
			hp_store_relaxed_u32(&meta(idx)->next_free, (uint32_t)head);
		while (!hp_cas_u64(&k->free_head, &head, ((head >> 32) + 1) << 32 | idx));
	} else if (strcmp(what, "hold") == 0) {
		for (int i = 0; i < 8; i++)
			take(&r);
	} else if (strcmp(what, "forgehost") == 0) {
		/* the smallest class first: an alloc falls back to a larger
		 * one once a class is empty, and -EAGAIN when all are (or,
		 * bounded, once the sweeper keeps returning them) */
		int n = 0;

		for (uint32_t c = 0; c < ep.var->nclasses; c++)
			while (n++ < 100000 &&
			       hp_var_alloc(ep.var, ep.var->c[c].slot_size, &r) == 0) {
				uint32_t in = (r.slot & ~HP_VAR_SLOT_FLAG) >> HP_VAR_CLASS_SHIFT;
				uint32_t idx = r.slot & HP_VAR_INDEX_MASK;
				struct hp_var_cview *cv = &ep.var->c[in];

				hp_store_relaxed_u32(&cv->meta[idx / cv->spe][idx % cv->spe].owner,
						     HP_VAR_HOST);
			}
	} else {
		errx(1, "--act=badgen|notmine|cycle|badlink|heldfree|hold|forgehost");
	}
}

int
main(int argc, char *argv[])
{
	const char *what = NULL;
	struct hp_ticket t;
	uint32_t cls = 0;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--act=", 6) == 0)
			what = argv[i] + 6;
		else if (strncmp(argv[i], "--class=", 8) == 0)
			cls = (uint32_t)strtoul(argv[i] + 8, NULL, 10);
	raw_attach(argc, argv, &t, &seg, &view, &ep, HP_FEAT_ALL);
	if (ep.var == NULL)
		errx(1, "not in the shared pool");
	if (cls >= ep.var->nclasses)
		errx(1, "--class=%u: the pool has %u classes", cls, ep.var->nclasses);
	if (what != NULL)
		act(what, cls);
	for (;;) {
		struct hp_msg_in m;
		const char *rule;

		while (hp_endpoint_recv(&ep, &m, &rule) == 0)
			hp_endpoint_release(&ep, &m);
		hp_endpoint_notify_consumed(&ep);
		raw_heartbeat(&view);
		if (hp_doorbell_wait(t.doorbell_fd, 50) == -EPIPE)
			return 0;
	}
}
