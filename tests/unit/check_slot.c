/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Slot pools: allocation, generations, frees, double frees, and the
 * receiver's checks against hostile descriptors. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "proto/slot.h"

#define NSLOTS	70	/* two bitmap words, the second partly used */
#define SLOTSZ	128

static uint8_t *mem;
static struct hp_slot_pool pool;

static void
setup(void)
{
	mem = aligned_alloc(64, hp_slot_pool_header_size(NSLOTS) + NSLOTS * SLOTSZ);
	memset(mem, 0, hp_slot_pool_header_size(NSLOTS) + NSLOTS * SLOTSZ);
	hp_slot_pool_view(&pool, mem, NSLOTS, SLOTSZ);
	hp_slot_pool_reset(&pool);
}

static void
teardown(void)
{
	free(mem);
}

/* r[shm.slot.pool-header-size] r[shm.slot.pool-layout] */
START_TEST(test_layout)
{
	ck_assert_uint_eq(hp_slot_pool_header_size(1), 64);
	ck_assert_uint_eq(hp_slot_pool_header_size(64), 64);
	ck_assert_uint_eq(hp_slot_pool_header_size(512), 64);
	ck_assert_uint_eq(hp_slot_pool_header_size(513), 128);
	ck_assert_ptr_eq(pool.slots, mem + 64);
	/* r[shm.slot.generation] r[shm.slot.payload-offset]: payload at byte 4 */
	ck_assert_ptr_eq(hp_slot_payload(&pool, 3), mem + 64 + 3 * SLOTSZ + 4);
	/* bits past the last slot are zero after reset */
	ck_assert_uint_eq(pool.bitmap[1], (1ull << 6) - 1);
	ck_assert_uint_eq(hp_slot_count_free(&pool), NSLOTS);
}
END_TEST

/* r[shm.slot.allocate] r[shm.slot.exhaustion] */
START_TEST(test_alloc_all_then_eagain)
{
	uint8_t seen[NSLOTS] = { 0 };
	uint32_t idx, gen;

	for (int i = 0; i < NSLOTS; i++) {
		ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), 0);
		ck_assert_uint_lt(idx, NSLOTS);
		ck_assert_msg(!seen[idx], "slot %u handed out twice", idx);
		seen[idx] = 1;
		ck_assert_uint_eq(gen, 1);
	}
	ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), -EAGAIN);
	ck_assert_uint_eq(hp_slot_count_free(&pool), 0);
}
END_TEST

/* r[shm.slot.generation]: incremented on every allocation */
START_TEST(test_generation_increments)
{
	uint32_t idx, gen, idx2, gen2;

	ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), 0);
	ck_assert_int_eq(hp_slot_free(&pool, idx), 0);
	for (int i = 0; i < NSLOTS; i++) {	/* until idx comes round again */
		ck_assert_int_eq(hp_slot_alloc(&pool, &idx2, &gen2), 0);
		if (idx2 == idx)
			break;
	}
	ck_assert_uint_eq(idx2, idx);
	ck_assert_uint_eq(gen2, gen + 1);
}
END_TEST

/* r[shm.slot.free]: atomic OR; a double free is seen and changes nothing */
START_TEST(test_free_and_double_free)
{
	uint32_t idx, gen;

	ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), 0);
	ck_assert_int_eq(hp_slot_free(&pool, idx), 0);
	ck_assert_int_eq(hp_slot_free(&pool, idx), -EALREADY);
	ck_assert_uint_eq(hp_slot_count_free(&pool), NSLOTS);
	ck_assert_int_eq(hp_slot_free(&pool, NSLOTS), -EINVAL);
	ck_assert_int_eq(hp_slot_free(&pool, 0xFFFFFFFFu), -EINVAL);
}
END_TEST

START_TEST(test_free_mask_batch)
{
	uint32_t idx, gen;

	for (int i = 0; i < 10; i++)
		hp_slot_alloc(&pool, &idx, &gen);	/* slots 0..9 of word 0 */
	uint64_t already = 0;

	ck_assert_int_eq(hp_slot_free_mask(&pool, 0, 0x3FFull, &already), 0);
	ck_assert_uint_eq(already, 0);
	hp_slot_alloc(&pool, &idx, &gen);	/* slot 0 again */
	/* slots 0 and 1: 1 was free already (a double free), 0 is freed */
	ck_assert_int_eq(hp_slot_free_mask(&pool, 0, 0x3ull, &already), -EALREADY);
	ck_assert_uint_eq(already, 0x2);
	ck_assert_uint_eq(hp_slot_count_free(&pool), NSLOTS);
	ck_assert_int_eq(hp_slot_free_mask(&pool, 2, 1, NULL), -EINVAL);
	/* bits past the last slot may not be freed into existence */
	ck_assert_int_eq(hp_slot_free_mask(&pool, 1, 1ull << 10, NULL), -EINVAL);
	/* bit 63 reads as a double free, not as an error code */
	for (int i = 0; i < 64; i++)
		hp_slot_alloc(&pool, &idx, &gen);
	ck_assert_int_eq(hp_slot_free_mask(&pool, 0, 1ull << 63, NULL), 0);
	ck_assert_int_eq(hp_slot_free_mask(&pool, 0, 1ull << 63, &already), -EALREADY);
	ck_assert_uint_eq(already, 1ull << 63);
}
END_TEST

/* A hostile peer sets bitmap bits past the last slot: never handed out. */
START_TEST(test_bits_past_end_never_used)
{
	uint32_t idx, gen;
	int n = 0;

	pool.bitmap[1] = ~0ull;
	while (hp_slot_alloc(&pool, &idx, &gen) == 0) {
		ck_assert_uint_lt(idx, NSLOTS);
		n++;
	}
	ck_assert_int_eq(n, NSLOTS);
}
END_TEST

/* r[shm.payload.slot] r[shm.slot.generation] r[shm.slot.payload-offset] */
START_TEST(test_receiver_checks)
{
	const uint8_t *p;
	const char *rule;
	uint32_t idx, gen;

	ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), 0);
	ck_assert_int_eq(hp_slot_check(&pool, idx, gen, 0, SLOTSZ - 4, &p, &rule), 0);
	ck_assert_ptr_eq(p, hp_slot_payload(&pool, idx));
	ck_assert_int_eq(hp_slot_check(&pool, idx, gen, 10, 20, &p, &rule), 0);
	ck_assert_ptr_eq(p, hp_slot_payload(&pool, idx) + 10);
	ck_assert_int_eq(hp_slot_check(&pool, idx, gen + 1, 0, 8, &p, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.generation");
	ck_assert_int_eq(hp_slot_check(&pool, idx, gen, 0, SLOTSZ - 3, &p, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.payload-offset");
	/* offset + len wrapping 32 bits */
	ck_assert_int_eq(hp_slot_check(&pool, idx, gen, 0xFFFFFFF0u, 0x20, &p, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.payload-offset");
	ck_assert_int_eq(hp_slot_check(&pool, NSLOTS, gen, 0, 8, &p, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.payload.slot");
	hp_slot_free(&pool, idx);
	ck_assert_int_eq(hp_slot_check(&pool, idx, gen, 0, 8, &p, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.payload.slot");
}
END_TEST

static void *
churn(void *arg)
{
	struct hp_slot_pool mine;	/* each side has its own view, as processes do */
	uint32_t idx, gen;
	long own = 0;

	(void)arg;
	hp_slot_pool_view(&mine, mem, NSLOTS, SLOTSZ);
	for (int i = 0; i < 200000; i++) {
		if (hp_slot_alloc(&mine, &idx, &gen) != 0)
			continue;
		/* the payload is ours alone until freed */
		memset(hp_slot_payload(&mine, idx), (int)idx, 16);
		if (hp_slot_payload(&mine, idx)[15] != (uint8_t)idx)
			own++;
		hp_slot_free(&mine, idx);
	}
	return (void *)own;
}

/* Two threads allocating and freeing at once: CAS keeps every slot with
 * one owner (ThreadSanitizer checks the payload accesses). */
START_TEST(test_concurrent_alloc_free)
{
	pthread_t a, b;
	void *ra, *rb;

	pthread_create(&a, NULL, churn, NULL);
	pthread_create(&b, NULL, churn, NULL);
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	ck_assert_ptr_null(ra);
	ck_assert_ptr_null(rb);
	ck_assert_uint_eq(hp_slot_count_free(&pool), NSLOTS);
}
END_TEST

Suite *suite_slot(void);
Suite *
suite_slot(void)
{
	Suite *s = suite_create("slot");
	TCase *tc = tcase_create("pool");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_alloc_all_then_eagain);
	tcase_add_test(tc, test_generation_increments);
	tcase_add_test(tc, test_free_and_double_free);
	tcase_add_test(tc, test_free_mask_batch);
	tcase_add_test(tc, test_bits_past_end_never_used);
	tcase_add_test(tc, test_receiver_checks);
	tcase_add_test(tc, test_concurrent_alloc_free);
	tcase_set_timeout(tc, 60);
	tcase_set_tags(tc, "tsan");
	suite_add_tcase(s, tc);
	return s;
}
