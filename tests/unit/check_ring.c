/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Descriptor rings: capacity, wrap-around, batches, hostile indices, and
 * stress across two processes and two threads. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/futex.h"
#include "proto/ring.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "tests/unit/testseg.h"

#define SIZE 8

static struct hp_desc descs[SIZE];
static hp_atomic_u32 head, tail;

static struct hp_desc
desc_n(uint32_t n)
{
	struct hp_desc d;

	memset(&d, 0, sizeof(d));
	d.msg_type = 1;
	d.id = n;
	d.method_id = ~(uint64_t)n;
	return d;
}

static void
pair(struct hp_ring *p, struct hp_ring *c)
{
	memset(descs, 0, sizeof(descs));
	head = 0;
	tail = 0;
	ck_assert_int_eq(hp_ring_init_producer(p, &head, &tail, descs, SIZE), 0);
	ck_assert_int_eq(hp_ring_init_consumer(c, &head, &tail, descs, SIZE), 0);
}

/* r[shm.ring.capacity] r[shm.ring.full] */
START_TEST(test_capacity_is_size_minus_one)
{
	struct hp_ring p, c;
	struct hp_desc d = desc_n(0);
	int i;

	pair(&p, &c);
	ck_assert_int_eq(hp_ring_space(&p), SIZE - 1);
	for (i = 0; i < SIZE - 1; i++) {
		d = desc_n((uint32_t)i);
		ck_assert_int_eq(hp_ring_enqueue(&p, &d), 0);
	}
	/* full: (head + 1) % size == tail */
	ck_assert_int_eq(hp_ring_enqueue(&p, &d), -EAGAIN);
	ck_assert_uint_eq((head + 1) % SIZE, tail);
	ck_assert_int_eq(hp_ring_available(&c), SIZE - 1);
	ck_assert_int_eq(hp_ring_space(&p), 0);
}
END_TEST

/* r[shm.ring.capacity]: empty is head == tail; r[shm.ordering.ring-consume] */
START_TEST(test_fifo_across_many_wraps)
{
	struct hp_ring p, c;
	struct hp_desc d, out;
	uint32_t next_in = 0, next_out = 0;

	pair(&p, &c);
	ck_assert_int_eq(hp_ring_dequeue(&c, &out), -EAGAIN);
	for (int round = 0; round < 1000; round++) {
		int n = 1 + round % (SIZE - 1);

		for (int i = 0; i < n; i++) {
			d = desc_n(next_in++);
			ck_assert_int_eq(hp_ring_enqueue(&p, &d), 0);
		}
		for (int i = 0; i < n; i++) {
			ck_assert_int_eq(hp_ring_dequeue(&c, &out), 0);
			ck_assert_msg(out.id == next_out && out.method_id == ~(uint64_t)next_out,
				      "got %u want %u", out.id, next_out);
			next_out++;
		}
		ck_assert_int_eq(hp_ring_dequeue(&c, &out), -EAGAIN);
		ck_assert_uint_eq(head, tail);
		ck_assert_uint_lt(head, SIZE);
	}
}
END_TEST

/* r[shm.ordering.ring-publish]: a batch is published with one head store */
START_TEST(test_batch_partial_when_nearly_full)
{
	struct hp_ring p, c;
	struct hp_desc in[SIZE], out[SIZE];

	pair(&p, &c);
	for (uint32_t i = 0; i < SIZE; i++)
		in[i] = desc_n(i);
	ck_assert_int_eq(hp_ring_enqueue_batch(&p, in, 5), 5);
	ck_assert_uint_eq(head, 5);
	/* only 2 places left of the 7 */
	ck_assert_int_eq(hp_ring_enqueue_batch(&p, in + 5, 3), 2);
	ck_assert_uint_eq(head, 7);
	ck_assert_int_eq(hp_ring_enqueue_batch(&p, in, 1), 0);
	ck_assert_int_eq(hp_ring_dequeue_batch(&c, out, 3), 3);
	ck_assert_uint_eq(tail, 3);
	ck_assert_int_eq(hp_ring_dequeue_batch(&c, out + 3, SIZE), 4);
	for (uint32_t i = 0; i < 7; i++)
		ck_assert_uint_eq(out[i].id, i);
	ck_assert_int_eq(hp_ring_dequeue_batch(&c, out, SIZE), 0);
}
END_TEST

/* A peer that writes an index out of range gets -EPROTO, never an access
 * outside the ring (ASan watches). */
START_TEST(test_out_of_range_indices)
{
	struct hp_ring p, c, bad;
	struct hp_desc d = desc_n(1), out;

	pair(&p, &c);
	ck_assert_int_eq(hp_ring_enqueue(&p, &d), 0);
	ck_assert_int_eq(hp_ring_enqueue(&p, &d), 0);
	ck_assert_int_eq(hp_ring_dequeue(&c, &out), 0);	/* sees head 2 */
	head = SIZE + 3;			/* hostile producer */
	ck_assert_int_eq(hp_ring_dequeue(&c, &out), 0);	/* cached: still fine */
	ck_assert_int_eq(hp_ring_dequeue(&c, &out), -EPROTO);
	ck_assert_int_eq(hp_ring_available(&c), -EPROTO);
	head = 1;
	tail = 0xFFFFFFFFu;			/* hostile consumer */
	for (int i = 0; i < SIZE; i++)
		if (hp_ring_enqueue(&p, &d) != 0)
			break;
	ck_assert_int_eq(hp_ring_enqueue(&p, &d), -EPROTO);
	ck_assert_int_eq(hp_ring_space(&p), -EPROTO);
	/* attaching to a ring whose indices are already corrupt */
	head = 100;
	ck_assert_int_eq(hp_ring_init_consumer(&bad, &head, &tail, descs, SIZE), -EPROTO);
	ck_assert_int_eq(hp_ring_init_producer(&bad, &head, &tail, descs, 6), -EINVAL);
	ck_assert_int_eq(hp_ring_init_producer(&bad, &head, &tail, descs, 1), -EINVAL);
}
END_TEST

/* r[shm.architecture]: the words shared across processes are lock-free */
START_TEST(test_shared_words_lock_free)
{
	hp_atomic_u32 w32 = 0;
	hp_atomic_u64 w64 = 0;

	ck_assert(atomic_is_lock_free(&w32));
	ck_assert(atomic_is_lock_free(&w64));
}
END_TEST

/* r[shm.crash.recovery] 3: rings reset to empty */
START_TEST(test_reset)
{
	struct hp_ring p, c;
	struct hp_desc d = desc_n(1);

	pair(&p, &c);
	hp_ring_enqueue(&p, &d);
	hp_ring_enqueue(&p, &d);
	hp_ring_reset(&p);
	ck_assert_uint_eq(head, 0);
	ck_assert_uint_eq(tail, 0);
	ck_assert_int_eq(hp_ring_space(&p), SIZE - 1);
}
END_TEST

/* -- stress --------------------------------------------------------------- */

#define BATCH 32

/* Bounded waiting for the stress tests: spin a little, yield, then sleep on
 * the word with a short timeout (r[shm.wakeup.consumer-wait]). */
static void
wait_word(hp_atomic_u32 *word, uint32_t seen, unsigned *spins)
{
	if (++*spins < 200) {
		hp_cpu_relax();
		return;
	}
	if (*spins < 300) {
		sched_yield();
		return;
	}
	struct timespec ts = { 0, 1000000 };

	hp_futex_wait(word, seen, &ts);
}

static uint64_t
check_of(uint64_t seq)
{
	return seq * 0x9E3779B97F4A7C15ull;
}

static void
produce(struct hp_ring *r, uint64_t count)
{
	struct hp_desc d[BATCH];
	uint64_t seq = 0;
	unsigned spins = 0;

	memset(d, 0, sizeof(d));
	while (seq < count) {
		uint32_t n = count - seq < BATCH ? (uint32_t)(count - seq) : BATCH;
		int put;

		for (uint32_t i = 0; i < n; i++) {
			uint64_t s = seq + i, c = check_of(s);

			d[i].msg_type = 4;
			d[i].id = (uint32_t)s;
			d[i].method_id = s;
			memcpy(d[i].inline_payload, &c, sizeof(c));
		}
		put = hp_ring_enqueue_batch(r, d, n);
		if (put < 0)
			return;
		if (put == 0) {
			wait_word(r->tail, hp_load_acquire_u32(r->tail), &spins);
			continue;
		}
		spins = 0;
		seq += (uint64_t)put;
		hp_futex_wake(r->head, 1);	/* r[shm.wakeup.consumer-wait] */
		/* the part of a batch that did not fit is written again */
	}
}

/* Returns the number of descriptors received in order and intact. */
static uint64_t
consume(struct hp_ring *r, uint64_t count)
{
	struct hp_desc d[BATCH];
	uint64_t seq = 0;
	unsigned spins = 0;

	while (seq < count) {
		int got = hp_ring_dequeue_batch(r, d, BATCH);

		if (got < 0)
			return seq;
		if (got == 0) {
			wait_word(r->head, hp_load_acquire_u32(r->head), &spins);
			continue;
		}
		spins = 0;
		for (int i = 0; i < got; i++, seq++) {
			uint64_t c;

			memcpy(&c, d[i].inline_payload, sizeof(c));
			if (d[i].method_id != seq || d[i].id != (uint32_t)seq || c != check_of(seq))
				return seq;	/* lost, duplicated or torn */
		}
		hp_futex_wake(r->tail, 1);	/* r[shm.wakeup.producer-wait] */
	}
	return seq;
}

static char seg_path[64];
static pid_t child_pid;

/* Named in the runner, which removes it even after a test that died. */
static void
stress_setup(void)
{
	snprintf(seg_path, sizeof(seg_path), "/dev/shm/hub-test-ring-%d", (int)getpid());
}

static void
stress_unlink(void)
{
	unlink(seg_path);
}

static void
stress_teardown(void)
{
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
	}
	if (seg_path[0] != '\0')
		unlink(seg_path);
}

/* Two processes over a real /dev/shm segment: 10 M sequence-numbered
 * descriptors, none lost, none duplicated, in order. */
START_TEST(test_two_process_ten_million)
{
	const uint64_t count = 10 * 1000 * 1000;
	struct hp_params prm;
	struct hp_segment seg;
	struct hp_peer_view v;
	struct hp_ring r;
	const char *why = NULL;
	uint64_t got;
	int status;

	hp_params_default(&prm);
	prm.max_guests = 1;
	prm.ring_size = 1024;
	prm.var.nclasses = 0;
	ck_assert_msg(testseg_create(&seg, seg_path, &prm, &why) == 0, "%s", why);
	if ((child_pid = fork()) == 0) {
		struct hp_segment cs;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (hp_segment_attach(&cs, seg_path, 0, &why) != 0 ||
		    hp_peer_view_guest(&cs, 1, &v, &why) != 0 ||
		    hp_ring_init_producer(&r, &v.entry->g2h_head, &v.entry->g2h_tail,
					  v.g2h, prm.ring_size) != 0)
			_exit(2);
		produce(&r, count);
		_exit(0);
	}
	ck_assert_int_ge(child_pid, 0);
	hp_peer_view_host(&seg, 1, &v);
	ck_assert_int_eq(hp_ring_init_consumer(&r, &v.entry->g2h_head, &v.entry->g2h_tail,
					       v.g2h, prm.ring_size), 0);
	got = consume(&r, count);
	ck_assert_msg(got == count, "received %llu of %llu in order",
		      (unsigned long long)got, (unsigned long long)count);
	ck_assert_int_eq(waitpid(child_pid, &status, 0), child_pid);
	child_pid = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "producer: %d", status);
	hp_segment_close(&seg);
}
END_TEST

struct thread_arg {
	struct hp_ring	ring;
	uint64_t	count;
};

static void *
producer_thread(void *arg)
{
	struct thread_arg *a = arg;

	produce(&a->ring, a->count);
	return NULL;
}

/* The same protocol between two threads, for ThreadSanitizer. */
START_TEST(test_two_threads)
{
	static struct hp_desc ring[256];
	static hp_atomic_u32 h, t;
	struct thread_arg a;
	struct hp_ring c;
	pthread_t th;
	uint64_t got;

	h = 0;
	t = 0;
	a.count = 1000000;
	ck_assert_int_eq(hp_ring_init_producer(&a.ring, &h, &t, ring, 256), 0);
	ck_assert_int_eq(hp_ring_init_consumer(&c, &h, &t, ring, 256), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, producer_thread, &a), 0);
	got = consume(&c, a.count);
	pthread_join(th, NULL);
	ck_assert_msg(got == a.count, "received %llu", (unsigned long long)got);
}
END_TEST

Suite *suite_ring(void);
Suite *
suite_ring(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("spsc");
	TCase *st = tcase_create("stress");
	TCase *th = tcase_create("threads");

	tcase_add_test(tc, test_capacity_is_size_minus_one);
	tcase_add_test(tc, test_fifo_across_many_wraps);
	tcase_add_test(tc, test_batch_partial_when_nearly_full);
	tcase_add_test(tc, test_out_of_range_indices);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_shared_words_lock_free);
	tcase_set_tags(tc, "tsan");
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(st, stress_setup, stress_unlink);
	tcase_add_checked_fixture(st, NULL, stress_teardown);
	tcase_set_timeout(st, 120);
	tcase_add_test(st, test_two_process_ten_million);
	suite_add_tcase(s, st);
	tcase_set_timeout(th, 120);
	tcase_add_test(th, test_two_threads);
	tcase_set_tags(th, "tsan");
	suite_add_tcase(s, th);
	return s;
}
