/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The endpoint's wake protocol between two threads: no wake lost, no
 * syscall while busy. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/clock.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/futex.h"
#include "proto/ticket.h"
#include "tests/unit/testseg.h"

/* -- the wake protocol, between two threads --------------------------- */

static char seg_path[64];
static struct hp_segment seg;
static struct hp_endpoint host_ep, guest_ep;
static int bell[2];

static void
pair_setup(void)
{
	struct hp_params p = testseg_params(1, 16, 1024, 4);
	struct hp_peer_view hv, gv;
	const char *why;

	ck_assert_int_eq(testseg_create(&seg, seg_path, &p, &why), 0);
	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	hp_peer_view_host(&seg, 1, &hv);
	ck_assert_int_eq(hp_peer_view_guest(&seg, 1, &gv, &why), 0);
	ck_assert_int_eq(hp_endpoint_init_guest(&guest_ep, &seg, &gv, bell[1], NULL, HP_FEAT_ALL), 0);
	ck_assert_int_eq(hp_endpoint_init_host(&host_ep, &seg, &hv, bell[0],
					       hp_load_acquire_u32(&hv.entry->guest_features),
					       NULL), 0);
}

static int host_bells[2] = { -1, -1 }, guest_bells[2] = { -1, -1 };

/* The same pair with bells (HP_FEAT_BELLS), as hubd spawns a guest. */
static void
pair_setup_bells(void)
{
	struct hp_params p = testseg_params(1, 16, 1024, 4);
	struct hp_peer_view hv, gv;
	const char *why;
	uint32_t features;

	ck_assert_int_eq(testseg_create(&seg, seg_path, &p, &why), 0);
	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	ck_assert_int_eq(hp_bells_make(host_bells, guest_bells), 0);
	hp_peer_view_host(&seg, 1, &hv);
	hp_peer_offer(&hv, HP_FEAT_BELLS);
	ck_assert_int_eq(hp_peer_view_guest(&seg, 1, &gv, &why), 0);
	ck_assert_int_eq(hp_endpoint_init_guest(&guest_ep, &seg, &gv, bell[1], guest_bells,
						HP_FEAT_ALL | HP_FEAT_BELLS), 0);
	features = hp_load_acquire_u32(&hv.entry->guest_features);
	ck_assert_uint_eq(features & HP_FEAT_BELLS, HP_FEAT_BELLS);
	ck_assert_int_eq(hp_endpoint_init_host(&host_ep, &seg, &hv, bell[0], features, NULL), 0);
	/* as hubd does: it rings the pipe; here it also sleeps on the
	 * eventfd, as hubd's loop does */
	host_ep.bell_out = host_bells[1];
	host_ep.bell_in = host_bells[0];
}

static void
pair_teardown(void)
{
	hp_segment_close(&seg);
	close(bell[0]);
	close(bell[1]);
	for (int i = 0; i < 2; i++) {
		if (host_bells[i] >= 0)
			close(host_bells[i]);
		host_bells[i] = -1;
	}
	if (guest_bells[0] >= 0)
		close(guest_bells[0]);	/* [1] is host_bells[0] */
	guest_bells[0] = guest_bells[1] = -1;
}

#define ROUNDS 20000

/* Echoes every message back; payloads alternate inline and slot. */
static void *
echo_thread(void *arg)
{
	struct hp_msg_in m;
	const char *rule;
	long bad = 0;

	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		while (hp_endpoint_recv(&guest_ep, &m, &rule) == -EAGAIN)
			if (hp_endpoint_wait(&guest_ep, HP_WAIT_RING_DATA, hp_endpoint_rx_ready,
					     &guest_ep, 10000) <= 0)
				return (void *)1;
		uint8_t copy[1024];
		uint32_t len = m.len;

		memcpy(copy, m.payload, len);
		hp_endpoint_release(&guest_ep, &m);
		while (hp_endpoint_send(&guest_ep, HP_MSG_RESPONSE, m.desc.id, 0, copy, len, 0)
		       == -EAGAIN)
			if (hp_endpoint_wait(&guest_ep, HP_WAIT_RING_SPACE | HP_WAIT_SLOT,
					     hp_endpoint_tx_ready, &guest_ep, 10000) <= 0)
				return (void *)2;
		if (m.desc.id != (uint32_t)i)
			bad++;
	}
	hp_endpoint_notify_consumed(&guest_ep);
	return (void *)bad;
}

/* r[shm.wakeup.consumer-wait] r[shm.wakeup.producer-wait] r[shm.wakeup.slot-wait]
 * r[shm.doorbell.ring-integration]: a ping-pong in which each side sleeps
 * between messages; a lost wake would hang it (and time it out). */
START_TEST(test_ping_pong_no_lost_wake)
{
	pthread_t th;
	void *res;
	struct hp_msg_in m;
	const char *rule;
	uint8_t payload[300];

	ck_assert(host_ep.peer_waiters);
	pthread_create(&th, NULL, echo_thread, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t len = i % 2 ? 8 : 300;

		memset(payload, i & 0xff, len);
		while (hp_endpoint_send(&host_ep, HP_MSG_REQUEST, (uint32_t)i, 1, payload, len, 0)
		       == -EAGAIN)
			ck_assert_int_gt(hp_endpoint_wait(&host_ep, HP_WAIT_RING_SPACE | HP_WAIT_SLOT,
							  hp_endpoint_tx_ready, &host_ep, 10000), 0);
		while (hp_endpoint_recv(&host_ep, &m, &rule) == -EAGAIN)
			ck_assert_msg(hp_endpoint_wait(&host_ep, HP_WAIT_RING_DATA,
						       hp_endpoint_rx_ready, &host_ep, 10000) > 0,
				      "round %d: no answer (a lost wake?)", i);
		ck_assert_uint_eq(m.desc.id, (uint32_t)i);
		ck_assert_uint_eq(m.len, len);
		ck_assert_uint_eq(m.payload[len - 1], (uint8_t)(i & 0xff));
		hp_endpoint_release(&host_ep, &m);
	}
	pthread_join(th, &res);
	ck_assert_ptr_null(res);
	hp_endpoint_notify_consumed(&host_ep);
	/* every slot came back */
	ck_assert_uint_eq(hp_slot_count_free(&host_ep.tx_pool), 4);
	ck_assert_uint_eq(hp_slot_count_free(&guest_ep.tx_pool), 4);
}
END_TEST

/* The pool at r[shm.segment.guest-slot-offset] for peer_id (0: the host's),
 * found from the geometry, not from an endpoint: its free slots. */
static uint32_t
pool_free(uint32_t peer_id)
{
	struct hp_slot_pool pool;

	hp_slot_pool_view(&pool, seg.base + hp_geometry_pool_offset(&seg.geo, peer_id),
			  seg.params.slots_per_guest, seg.params.slot_size);
	return hp_slot_count_free(&pool);
}

/* r[shm.segment.slot-ownership]: a payload the guest sends takes a slot of
 * its own pool, one the host sends a slot of the host's; the receiver,
 * done with the message, returns the slot to the sender's pool. */
START_TEST(test_slot_back_to_the_senders_pool)
{
	uint32_t all = seg.params.slots_per_guest;
	uint8_t big[200];
	struct hp_msg_in m;
	const char *rule;

	memset(big, 7, sizeof(big));
	ck_assert_int_eq(hp_endpoint_send(&guest_ep, HP_MSG_REQUEST, 1, 1, big, sizeof(big), 0), 0);
	ck_assert_uint_eq(pool_free(1), all - 1);
	ck_assert_uint_eq(pool_free(0), all);
	ck_assert_int_eq(hp_endpoint_recv(&host_ep, &m, &rule), 0);
	ck_assert(m.len == sizeof(big) && memcmp(m.payload, big, sizeof(big)) == 0);
	hp_endpoint_release(&host_ep, &m);
	hp_endpoint_notify_consumed(&host_ep);
	ck_assert_uint_eq(pool_free(1), all);

	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_RESPONSE, 1, 0, big, sizeof(big), 0), 0);
	ck_assert_uint_eq(pool_free(0), all - 1);
	ck_assert_uint_eq(pool_free(1), all);
	ck_assert_int_eq(hp_endpoint_recv(&guest_ep, &m, &rule), 0);
	hp_endpoint_release(&guest_ep, &m);
	hp_endpoint_notify_consumed(&guest_ep);
	ck_assert_uint_eq(pool_free(0), all);
}
END_TEST

/* While both sides are busy no wake is needed: a burst sent to a peer that
 * never announced sleep makes no doorbell write at all. */
START_TEST(test_no_wake_without_sleeper)
{
	struct hp_msg_in m;
	const char *rule;

	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, (uint32_t)i, 1,
						  "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 0);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 0);
	/* announced: the next publish rings */
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, 10, 1, "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 1);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 1);
	hp_endpoint_cancel(&guest_ep);
	for (int i = 0; i <= 10; i++)
		ck_assert_int_eq(hp_endpoint_recv(&guest_ep, &m, &rule), 0);
	/* r[shm.payload.inline] through the endpoint */
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, 1, 1, "x", 2000, 0),
			 -EMSGSIZE);
}
END_TEST

/* One doorbell byte per sleep: the waker clears the sleeper's word as it
 * rings, so a burst to a sleeper writes one byte, not one per message;
 * the sleeper's next announcement (each sleep makes one) is rung again.
 * A word without the event's bit is neither rung nor cleared. */
START_TEST(test_one_byte_per_sleep)
{
	hp_atomic_u32 *gw = guest_ep.my_waits;
	struct hp_msg_in m;
	const char *rule;

	ck_assert_ptr_nonnull(gw);
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA | HP_WAIT_SLOT);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, (uint32_t)i, 1,
						  "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 1);
	ck_assert_uint_eq(hp_load_relaxed_u32(gw), 0);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 1);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 0);	/* one byte, drained */
	/* asleep again: the next message rings again */
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, 8, 1, "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 2);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 1);
	/* waiting for room only: data is not its event */
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_SPACE);
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, 9, 1, "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 2);
	ck_assert_uint_eq(hp_load_relaxed_u32(gw), HP_WAIT_RING_SPACE);
	hp_endpoint_cancel(&guest_ep);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(hp_endpoint_recv(&guest_ep, &m, &rule), 0);
}
END_TEST

static atomic_int flipping;

/* A hostile guest: its waiter word changes all the time. */
static void *
flip_thread(void *arg)
{
	hp_atomic_u32 *w = arg;

	for (uint32_t v = 0; atomic_load(&flipping); v++)
		hp_store_relaxed_u32(w, v);
	return NULL;
}

/* The waker's compare-and-swap on a word the guest keeps changing gives
 * up after a few tries and rings: a hostile guest cannot hold hubd in
 * wake_peer, nor make it skip a wake the guest asked for. */
START_TEST(test_flipping_word_cannot_hold_the_waker)
{
	pthread_t th;
	struct hp_msg_in m;
	const char *rule;
	int n = 0;

	atomic_store(&flipping, 1);
	pthread_create(&th, NULL, flip_thread, guest_ep.my_waits);
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 8; i++, n++)
			ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST,
							  (uint32_t)n, 1, "x", 1, 0), 0);
		while (hp_endpoint_recv(&guest_ep, &m, &rule) == 0)
			hp_endpoint_release(&guest_ep, &m);
		hp_endpoint_notify_consumed(&guest_ep);
		while (hp_doorbell_wait(bell[1], 0) > 0)
			;
	}
	atomic_store(&flipping, 0);
	pthread_join(th, NULL);
	ck_assert_uint_le(host_ep.stats.wakes, (uint64_t)n);
	/* the word still works once the guest behaves */
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, 0, 1, "x", 1, 0), 0);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 1);
	ck_assert_uint_eq(hp_load_relaxed_u32(guest_ep.my_waits), 0);
}
END_TEST

/* A guest that woke its peer steps aside once before it next spins, not
 * after each wake (a batch of answers would hand the CPU over per answer);
 * hubd, which wakes many guests a round, never does. */
START_TEST(test_guest_yields_once_after_waking)
{
	hp_endpoint_announce(&host_ep, HP_WAIT_RING_DATA);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(hp_endpoint_send(&guest_ep, HP_MSG_REQUEST, (uint32_t)i, 1,
						  "x", 1, 0), 0);
	ck_assert_uint_eq(guest_ep.stats.wakes, 1);
	ck_assert_int_eq(hp_endpoint_take_rang(&guest_ep), 1);
	ck_assert_int_eq(hp_endpoint_take_rang(&guest_ep), 0);
	hp_endpoint_cancel(&host_ep);
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_RESPONSE, 0, 0, "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 1);
	ck_assert_int_eq(hp_endpoint_take_rang(&host_ep), 0);
	hp_endpoint_cancel(&guest_ep);
}
END_TEST

static int looks;

static int
never_ready(void *arg)
{
	(void)arg;
	looks++;
	return 0;
}

/* How many looks a wait with no time to wait takes at never_ready,
 * hinted or not, after a wait that began quiet_ns before; *took_ns: how
 * long the call took. */
static int
looks_in_wait(int hint, uint64_t quiet_ns, uint64_t *took_ns)
{
	uint64_t t0 = hp_now_ns();

	looks = 0;
	guest_ep.outlasted = 0;		/* the hint alone decides */
	guest_ep.sleep_first = hint;
	guest_ep.wait_began_ns = t0 - quiet_ns;
	ck_assert_int_eq(hp_endpoint_wait(&guest_ep, HP_WAIT_RING_DATA, never_ready, NULL, 0), 0);
	ck_assert_int_eq(guest_ep.sleep_first, 0);	/* one wait's hint */
	if (took_ns != NULL)
		*took_ns = hp_now_ns() - t0;
	return looks;
}

/* After quiet, a wait hinted by libguest (its call goes to another guest
 * through the host, or it answered one) sleeps at once: one look, after
 * its announcement, and no spinning or yielding before it (a process still
 * runnable when the host rings the next one of the chain sends that one to
 * an idle CPU). Unhinted, or hinted in a busy exchange (the wait before
 * began just now), it spins and yields first as before. A busy sample
 * counts only if the whole call took under the 1 ms that makes a wait
 * sporadic: a loaded machine may deschedule the test between the two. */
START_TEST(test_hinted_wait_after_quiet_sleeps_at_once)
{
	uint64_t took = UINT64_MAX;
	int n = 0;

	ck_assert_int_eq(looks_in_wait(1, 5000000, NULL), 1);
	ck_assert_int_gt(looks_in_wait(0, 5000000, NULL), 1);
	for (int i = 0; i < 1000 && took >= 900000; i++)
		n = looks_in_wait(1, 0, &took);
	ck_assert_msg(took < 900000, "no wait of a busy exchange under 0.9 ms in 1000 tries");
	ck_assert_int_gt(n, 1);
	hp_endpoint_cancel(&guest_ep);
}
END_TEST

static int ready_after;

/* Ready at the ready_after-th look. */
static int
ready_at_look(void *arg)
{
	(void)arg;
	return ++looks >= ready_after;
}

/* How many looks an unhinted wait with no time to wait takes, ready at
 * look ready_at (0: never). */
static int
looks_unhinted(int ready_at)
{
	looks = 0;
	ready_after = ready_at;
	guest_ep.sleep_first = 0;
	ck_assert_int_eq(hp_endpoint_wait(&guest_ep, HP_WAIT_RING_DATA,
					  ready_at > 0 ? ready_at_look : never_ready, NULL, 0),
			 ready_at > 0);
	return looks;
}

/* Long waits (their spin never sees the condition come: a peer that
 * answers in hundreds of microseconds; here a never-ready condition) make
 * the next sleep at once after HP_WAIT_OUTLASTED in a row: one look,
 * after the announcement. One in HP_WAIT_PROBE spins again; a wait that
 * slept at once leaves the run as it was (its length holds its own wake);
 * a condition that holds at a first look, or within the spin, ends it. */
START_TEST(test_long_waits_make_the_next_sleep_at_once)
{
	int spun = 0;

	guest_ep.outlasted = guest_ep.since_probe = 0;
	for (int i = 0; i < HP_WAIT_OUTLASTED; i++)
		ck_assert_int_gt(looks_unhinted(0), 1);
	ck_assert_uint_eq(guest_ep.outlasted, HP_WAIT_OUTLASTED);
	ck_assert_int_eq(looks_unhinted(0), 1);
	ck_assert_uint_eq(guest_ep.outlasted, HP_WAIT_OUTLASTED);	/* at once: no say */
	for (int i = 1; i < 3 * HP_WAIT_PROBE; i++)
		spun += looks_unhinted(0) > 1;
	ck_assert_int_eq(spun, 3);
	ck_assert_uint_eq(guest_ep.outlasted, HP_WAIT_OUTLASTED + 3);
	/* a quick peer again: caught at once, and the next wait spins */
	ck_assert_int_eq(looks_unhinted(1), 1);
	ck_assert_uint_eq(guest_ep.outlasted, 0);
	ck_assert_int_gt(looks_unhinted(0), 1);
	ck_assert_uint_eq(guest_ep.outlasted, 1);
	/* caught in the spin, not at its first look: the run ends too */
	ck_assert_int_eq(looks_unhinted(5), 5);
	ck_assert_uint_eq(guest_ep.outlasted, 0);
	hp_endpoint_cancel(&guest_ep);
}
END_TEST

/* With bells each side rings the other's bell, not the doorbell: one wake
 * per sleep as before, and what the doorbell is left for (death,
 * descriptors) untouched. */
START_TEST(test_bells_ring_instead_of_the_doorbell)
{
	struct hp_msg_in m;
	const char *rule;

	ck_assert_int_eq(guest_ep.bell_in, guest_bells[0]);
	ck_assert_int_eq(guest_ep.bell_out, guest_bells[1]);
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, (uint32_t)i, 1,
						  "x", 1, 0), 0);
	ck_assert_uint_eq(host_ep.stats.wakes, 1);
	ck_assert_int_eq(hp_doorbell_wait(bell[1], 0), 0);
	ck_assert_int_eq(hp_bell_drain(guest_bells[0]), 1);
	ck_assert_int_eq(hp_bell_drain(guest_bells[0]), 0);
	hp_endpoint_cancel(&guest_ep);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(hp_endpoint_recv(&guest_ep, &m, &rule), 0);
	hp_endpoint_announce(&host_ep, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&guest_ep, HP_MSG_RESPONSE, 0, 0, "x", 1, 0), 0);
	ck_assert_uint_eq(guest_ep.stats.wakes, 1);
	ck_assert_int_eq(hp_doorbell_wait(bell[0], 0), 0);
	ck_assert_int_eq(hp_bell_drain(host_bells[0]), 1);
	hp_endpoint_cancel(&host_ep);
	/* a sleep ends on the bell, and drains it */
	hp_endpoint_announce(&guest_ep, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&host_ep, HP_MSG_REQUEST, 9, 1, "x", 1, 0), 0);
	ck_assert_int_eq(hp_endpoint_sleep(&guest_ep, -1, 10000), 1);
	ck_assert_int_eq(hp_bell_drain(guest_bells[0]), 0);
	hp_endpoint_cancel(&guest_ep);
}
END_TEST

/* A guest shares hubd's eventfd: it may clear O_NONBLOCK on it and read
 * it dry; hubd's drain still returns at once. A full pipe holds a wake
 * already; a pipe whose writer went says so (-EPIPE), and the endpoint
 * stops polling it rather than waking for nothing for ever. */
START_TEST(test_bells_never_block)
{
	int fl = fcntl(host_bells[0], F_GETFL);

	ck_assert_int_eq(fcntl(host_bells[0], F_SETFL, fl & ~O_NONBLOCK), 0);
	ck_assert_int_eq(hp_bell_drain(host_bells[0]), 0);	/* would hang */
	ck_assert_int_eq(hp_bell_ring(guest_bells[1]), 0);
	ck_assert_int_eq(hp_bell_drain(host_bells[0]), 1);
	ck_assert_int_eq(hp_bell_drain(host_bells[0]), 0);
	for (int i = 0; i < 100000; i++)	/* 64 KiB of pipe, and more */
		ck_assert_int_eq(hp_bell_ring(host_bells[1]), 0);
	ck_assert_int_eq(hp_bell_drain(guest_bells[0]), 1);
	close(host_bells[1]);
	host_bells[1] = -1;
	host_ep.bell_out = -1;
	ck_assert_int_eq(hp_bell_drain(guest_bells[0]), -EPIPE);
	ck_assert_int_eq(hp_endpoint_drain(&guest_ep), 0);
	ck_assert_int_eq(guest_ep.bell_in, -1);
	/* the reader gone: ringing says so (hubd ignores SIGPIPE) */
	int p[2];
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);

	ck_assert_int_eq(pipe(p), 0);
	close(p[0]);
	ck_assert_int_eq(hp_bell_ring(p[1]), -EPIPE);
	close(p[1]);
	signal(SIGPIPE, old);
}
END_TEST

static atomic_int spurious;

/* Rings both bells for nothing, as fast as it can. */
static void *
spurious_thread(void *arg)
{
	(void)arg;
	while (atomic_load(&spurious)) {
		hp_bell_ring(host_bells[1]);
		hp_bell_ring(guest_bells[1]);
		sched_yield();
	}
	return NULL;
}

/* Wakes for nothing (a bell rung with nothing in the ring, as a hostile
 * peer or a late wake rings it) cost a look, never a lost wake: the
 * ping-pong runs through them. */
START_TEST(test_spurious_bells)
{
	pthread_t th;

	atomic_store(&spurious, 1);
	pthread_create(&th, NULL, spurious_thread, NULL);
	test_ping_pong_no_lost_wake_fn(_i);
	atomic_store(&spurious, 0);
	pthread_join(th, NULL);
}
END_TEST

/* No bells where the host does not offer them, or none were given. */
START_TEST(test_bells_only_when_offered)
{
	struct hp_peer_view hv, gv;
	const char *why;

	hp_peer_view_host(&seg, 1, &hv);
	ck_assert_int_eq(hp_peer_view_guest(&seg, 1, &gv, &why), 0);
	hp_peer_offer(&hv, 0);
	ck_assert_int_eq(hp_endpoint_init_guest(&guest_ep, &seg, &gv, bell[1], guest_bells,
						HP_FEAT_ALL | HP_FEAT_BELLS), 0);
	ck_assert_uint_eq(hp_load_acquire_u32(&hv.entry->guest_features) & HP_FEAT_BELLS, 0);
	ck_assert_int_eq(guest_ep.bell_in, -1);
	ck_assert_int_eq(guest_ep.bell_out, -1);
	hp_peer_offer(&hv, HP_FEAT_BELLS);
	ck_assert_int_eq(hp_endpoint_init_guest(&guest_ep, &seg, &gv, bell[1], NULL,
						HP_FEAT_ALL | HP_FEAT_BELLS), 0);
	ck_assert_uint_eq(hp_load_acquire_u32(&hv.entry->guest_features) & HP_FEAT_BELLS, 0);
}
END_TEST

Suite *suite_wake(void);
Suite *
suite_wake(void)
{
	Suite *s = suite_create("wake");
	TCase *ep = tcase_create("endpoint");

	tcase_add_checked_fixture(ep, pair_setup, pair_teardown);
	tcase_add_test(ep, test_ping_pong_no_lost_wake);
	tcase_add_test(ep, test_no_wake_without_sleeper);
	tcase_add_test(ep, test_slot_back_to_the_senders_pool);
	tcase_add_test(ep, test_one_byte_per_sleep);
	tcase_add_test(ep, test_guest_yields_once_after_waking);
	tcase_add_test(ep, test_hinted_wait_after_quiet_sleeps_at_once);
	tcase_add_test(ep, test_long_waits_make_the_next_sleep_at_once);
	tcase_add_test(ep, test_flipping_word_cannot_hold_the_waker);
	tcase_set_timeout(ep, 120);
	tcase_set_tags(ep, "tsan");
	suite_add_tcase(s, ep);

	TCase *bells = tcase_create("bells");

	tcase_add_checked_fixture(bells, pair_setup_bells, pair_teardown);
	tcase_add_test(bells, test_ping_pong_no_lost_wake);
	tcase_add_test(bells, test_bells_ring_instead_of_the_doorbell);
	tcase_add_test(bells, test_bells_never_block);
	tcase_add_test(bells, test_bells_only_when_offered);
	tcase_add_test(bells, test_spurious_bells);
	tcase_set_timeout(bells, 120);
	tcase_set_tags(bells, "tsan");
	suite_add_tcase(s, bells);
	return s;
}
