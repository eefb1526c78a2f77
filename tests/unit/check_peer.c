/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The PeerEntry's lifecycle (proto/peer.c): each transition from the state
 * it needs and from no other, recovery resetting every word, snapshots
 * reading what was written. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/channel.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/slot.h"
#include "tests/unit/testseg.h"

static char path[64];
static struct hp_segment seg;

/* Named in the runner before it forks each test, so the runner can remove
 * the file even after a test that died. */
static void
name(void)
{
	snprintf(path, sizeof(path), "/dev/shm/hub-test-peer-%d", (int)getpid());
}

static void
setup(void)
{
	const char *why = NULL;
	struct hp_params p = testseg_params(2, 8, 128, 70);

	p.max_channels = 4;
	ck_assert_msg(testseg_create(&seg, path, &p, &why) == 0, "create: %s", why);
}

static void
teardown(void)
{
	hp_segment_close(&seg);
	unlink(path);
}

static void
unname(void)
{
	unlink(path);
}

/* Every word as the host laid it out and left it: Empty, the host's
 * offsets, everything else zero but the epoch. */
static void
assert_clean(uint32_t id, uint32_t epoch)
{
	struct hp_peer_snap s;

	hp_peer_snapshot(hp_segment_peer(&seg, id), &s);
	ck_assert_uint_eq(s.state, HP_PEER_EMPTY);
	ck_assert_uint_eq(s.epoch, epoch);
	ck_assert_uint_eq(s.g2h_head, 0);
	ck_assert_uint_eq(s.g2h_tail, 0);
	ck_assert_uint_eq(s.h2g_head, 0);
	ck_assert_uint_eq(s.h2g_tail, 0);
	ck_assert_uint_eq(s.last_heartbeat, 0);
	ck_assert_uint_eq(s.guest_features, 0);
	ck_assert_uint_eq(s.ring_offset, hp_geometry_ring_offset(&seg.geo, id));
	ck_assert_uint_eq(s.slot_pool_offset, hp_geometry_pool_offset(&seg.geo, id));
	ck_assert_uint_eq(s.channel_table_offset, hp_geometry_chan_offset(&seg.geo, id));
}

/* r[shm.segment.peer-table] r[shm.segment.peer-state]
 * r[shm.spawn.reserved-state] r[shm.guest.attach] r[shm.crash.epoch]
 * r[shm.guest.detach] r[shm.goodbye.guest] r[shm.crash.recovery]:
 * Empty -> Reserved -> Attached -> Goodbye -> Empty, twice. */
START_TEST(test_lifecycle)
{
	struct hp_peer_entry *e = hp_segment_peer(&seg, 1);
	uint32_t seen = 99;
	int rc;

	assert_clean(1, 0);
	assert_clean(2, 0);
	for (uint32_t round = 1; round <= 1; round++) {
		rc = hp_peer_reserve(e, &seen);
		ck_assert_msg(rc == 0, "reserve: %d", rc);
		ck_assert_uint_eq(seen, HP_PEER_EMPTY);
		ck_assert_uint_eq(hp_peer_state(e), HP_PEER_RESERVED);
		ck_assert_uint_eq(hp_peer_epoch(e), round - 1);	/* not yet */
		rc = hp_peer_attach(e, &seen);
		ck_assert_msg(rc == 0, "attach: %d", rc);
		ck_assert_uint_eq(seen, HP_PEER_RESERVED);
		ck_assert_uint_eq(hp_peer_state(e), HP_PEER_ATTACHED);
		ck_assert_uint_eq(hp_peer_epoch(e), round);	/* a new instance */
		hp_peer_beat(e, 12345 * round);
		ck_assert_uint_eq(hp_peer_heartbeat(e), 12345 * round);
		hp_peer_goodbye(e);
		ck_assert_uint_eq(hp_peer_state(e), HP_PEER_GOODBYE);
		/* hubd drops the domain now: the next instance gets a fresh one */
	}
	/* the other entry was never touched */
	assert_clean(2, 0);
}
END_TEST

/* r[shm.spawn.reserved-state]: only an Empty entry is reserved; a busy
 * one is left as it is and its state told. */
START_TEST(test_reserve_busy)
{
	static const uint32_t busy[] = { HP_PEER_RESERVED, HP_PEER_ATTACHED,
					 HP_PEER_GOODBYE, 7 };
	struct hp_peer_entry *e = hp_segment_peer(&seg, 2);

	for (unsigned i = 0; i < sizeof(busy) / sizeof(busy[0]); i++) {
		uint32_t seen = 99;

		hp_store_relaxed_u32(&e->state, busy[i]);
		ck_assert_int_eq(hp_peer_reserve(e, &seen), -EBUSY);
		ck_assert_msg(seen == busy[i], "state %u, told %u", busy[i], seen);
		ck_assert_uint_eq(hp_peer_state(e), busy[i]);
	}
	/* spawn failed: Reserved -> Empty, the epoch as it was */
	hp_store_relaxed_u32(&e->state, HP_PEER_EMPTY);
	ck_assert_int_eq(hp_peer_reserve(e, &(uint32_t){ 0 }), 0);
	hp_peer_unreserve(e);
	ck_assert_uint_eq(hp_peer_state(e), HP_PEER_EMPTY);
	ck_assert_uint_eq(hp_peer_epoch(e), 0);
	ck_assert_int_eq(hp_peer_reserve(e, &(uint32_t){ 0 }), 0);
}
END_TEST

/* r[shm.guest.attach] r[shm.guest.attach-failure]: a guest attaches only
 * to the entry reserved for it; otherwise neither the state nor the epoch
 * moves (the host's check of a moved epoch, r[shm.crash.epoch], then
 * never passes). */
START_TEST(test_attach_wrong_state)
{
	static const uint32_t wrong[] = { HP_PEER_EMPTY, HP_PEER_ATTACHED,
					  HP_PEER_GOODBYE, 7 };
	struct hp_peer_entry *e = hp_segment_peer(&seg, 1);
	uint32_t seen, before;

	hp_store_relaxed_u32(&e->epoch, 41);
	for (unsigned i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		seen = 99;
		hp_store_relaxed_u32(&e->state, wrong[i]);
		ck_assert_int_eq(hp_peer_attach(e, &seen), -EBUSY);
		ck_assert_msg(seen == wrong[i], "state %u, told %u", wrong[i], seen);
		ck_assert_uint_eq(hp_peer_state(e), wrong[i]);
		ck_assert_uint_eq(hp_peer_epoch(e), 41);
	}
	/* the host reads the epoch at reserve and waits for it to move */
	hp_store_relaxed_u32(&e->state, HP_PEER_EMPTY);
	ck_assert_int_eq(hp_peer_reserve(e, &seen), 0);
	before = hp_peer_epoch(e);
	ck_assert_int_eq(hp_peer_attach(e, &seen), 0);
	ck_assert_uint_ne(hp_peer_epoch(e), before);
	ck_assert_uint_eq(hp_peer_epoch(e), 42);
	/* attached once: a second attach (another instance) is refused */
	ck_assert_int_eq(hp_peer_attach(e, &seen), -EBUSY);
	ck_assert_uint_eq(seen, HP_PEER_ATTACHED);
	ck_assert_uint_eq(hp_peer_epoch(e), 42);
}
END_TEST

/* A snapshot reads each word once, as written. */
START_TEST(test_snapshot)
{
	struct hp_peer_entry *e = hp_segment_peer(&seg, 2);
	struct hp_peer_snap s;

	hp_store_relaxed_u32(&e->state, HP_PEER_ATTACHED);
	hp_store_relaxed_u32(&e->epoch, 3);
	hp_store_relaxed_u32(&e->g2h_head, 11);
	hp_store_relaxed_u32(&e->g2h_tail, 12);
	hp_store_relaxed_u32(&e->h2g_head, 13);
	hp_store_relaxed_u32(&e->h2g_tail, 14);
	hp_peer_beat(e, 1234567890123ull);
	e->ring_offset = 4096;
	e->slot_pool_offset = 8192;
	e->channel_table_offset = 16384;
	hp_store_relaxed_u32(&e->guest_features, HP_FEAT_WAITERS);
	memset(&s, 0xa5, sizeof(s));
	hp_peer_snapshot(e, &s);
	ck_assert_uint_eq(s.state, HP_PEER_ATTACHED);
	ck_assert_uint_eq(s.epoch, 3);
	ck_assert_uint_eq(s.g2h_head, 11);
	ck_assert_uint_eq(s.g2h_tail, 12);
	ck_assert_uint_eq(s.h2g_head, 13);
	ck_assert_uint_eq(s.h2g_tail, 14);
	ck_assert_uint_eq(s.last_heartbeat, 1234567890123ull);
	ck_assert_uint_eq(s.ring_offset, 4096);
	ck_assert_uint_eq(s.slot_pool_offset, 8192);
	ck_assert_uint_eq(s.channel_table_offset, 16384);
	ck_assert_uint_eq(s.guest_features, HP_FEAT_WAITERS);
	ck_assert_uint_eq(hp_peer_features(e), HP_FEAT_WAITERS);
	ck_assert_uint_eq(hp_peer_heartbeat(e), 1234567890123ull);
	/* the other entry is its own */
	hp_peer_snapshot(hp_segment_peer(&seg, 1), &s);
	ck_assert_uint_eq(s.state, HP_PEER_EMPTY);
	ck_assert_uint_eq(s.g2h_head, 0);
}
END_TEST

/* The host's offer lands in the extension table; without one there is
 * nothing to offer, and no harm. */
START_TEST(test_offer)
{
	struct hp_peer_view v;

	ck_assert_int_eq(hp_peer_view_host(&seg, 2, &v), 0);
	hp_peer_offer(&v, HP_FEAT_VARSLOT);
	ck_assert_uint_eq(hp_load_relaxed_u32(&v.ext->host_offer), HP_FEAT_VARSLOT);
	hp_peer_offer(&v, 0);
	ck_assert_uint_eq(hp_load_relaxed_u32(&v.ext->host_offer), 0);
	v.ext = NULL;
	hp_peer_offer(&v, HP_FEAT_VARSLOT);
}
END_TEST

Suite *suite_peer(void);
Suite *
suite_peer(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("lifecycle");

	tcase_add_unchecked_fixture(tc, name, unname);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lifecycle);
	tcase_add_test(tc, test_reserve_busy);
	tcase_add_test(tc, test_attach_wrong_state);
	tcase_add_test(tc, test_snapshot);
	tcase_add_test(tc, test_offer);
	suite_add_tcase(s, tc);
	return s;
}
