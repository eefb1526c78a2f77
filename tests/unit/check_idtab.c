/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The id table: every id inserted is found until removed, whatever the
 * order of inserts and removals, across growth and wrapped clusters. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "proto/idtab.h"

struct ent {
	uint64_t	id;
	uint64_t	value;
};

#define N	5000

START_TEST(test_insert_find_remove)
{
	struct hp_idtab t = HP_IDTAB_INIT(struct ent);
	struct ent *e;

	ck_assert_ptr_null(hp_idtab_find(&t, 7));
	ck_assert_ptr_null(hp_idtab_insert(&t, 0));	/* 0 marks free */
	for (uint64_t id = 1; id <= N; id++) {
		ck_assert_ptr_nonnull(e = hp_idtab_insert(&t, id));
		ck_assert_uint_eq(e->value, 0);
		e->value = id * 3;
	}
	ck_assert_uint_eq(t.count, N);
	ck_assert_uint_le(t.count * 2, t.cap);
	for (uint64_t id = 1; id <= N; id++) {
		ck_assert_ptr_nonnull(e = hp_idtab_find(&t, id));
		ck_assert_uint_eq(e->value, id * 3);
	}
	ck_assert_ptr_null(hp_idtab_find(&t, N + 1));
	for (uint64_t id = 1; id <= N; id += 2)
		hp_idtab_remove(&t, hp_idtab_find(&t, id));
	for (uint64_t id = 1; id <= N; id++) {
		e = hp_idtab_find(&t, id);
		ck_assert_msg((e != NULL) == (id % 2 == 0), "id %llu", (unsigned long long)id);
		if (e != NULL)
			ck_assert_uint_eq(e->value, id * 3);
	}
	hp_idtab_free(&t);
	ck_assert_ptr_null(hp_idtab_find(&t, 2));
}
END_TEST

/* Ids that share a home slot make long clusters, some wrapping past the
 * end; removals in any order must keep every other id reachable. */
START_TEST(test_collisions_random_order)
{
	struct hp_idtab t = HP_IDTAB_INIT(struct ent);
	uint64_t ids[24];
	int in[24] = { 0 };
	unsigned seed = 12345;

	for (int i = 0; i < 24; i++)	/* homes 62, 63 and 0 of a 64-slot table */
		ids[i] = (uint64_t)(62 + i % 3) + 64ull * (uint64_t)(i + 1);
	for (int round = 0; round < 20000; round++) {
		int i = (int)(rand_r(&seed) % 24);
		struct ent *e = hp_idtab_find(&t, ids[i]);

		/* a check that passes is a write to Check's pipe: only the
		 * failures are asserted, 20000 rounds of 25 took seconds */
		if ((e != NULL) != in[i])
			ck_abort_msg("round %d id %d: found %d, in %d", round, i, e != NULL, in[i]);
		if (e != NULL) {
			if (e->value != (ids[i] ^ 0x55))
				ck_abort_msg("round %d id %d: value %llu", round, i,
					     (unsigned long long)e->value);
			hp_idtab_remove(&t, e);
			in[i] = 0;
		} else {
			if ((e = hp_idtab_insert(&t, ids[i])) == NULL)
				ck_abort_msg("round %d id %d: not inserted", round, i);
			e->value = ids[i] ^ 0x55;
			in[i] = 1;
		}
		for (int k = 0; k < 24; k++)
			if ((hp_idtab_find(&t, ids[k]) != NULL) != in[k])
				ck_abort_msg("round %d: id %d lost", round, k);
	}
	ck_assert_uint_eq(t.cap, 64);	/* never more than 24 in: no growth */
	hp_idtab_free(&t);
}
END_TEST

START_TEST(test_walk_and_clear)
{
	struct hp_idtab t = HP_IDTAB_INIT(struct ent);
	uint32_t pos = 0, seen = 0;
	uint64_t sum = 0;
	struct ent *e;

	for (uint64_t id = 100; id < 400; id++)
		hp_idtab_insert(&t, id);
	while ((e = hp_idtab_next(&t, &pos)) != NULL) {
		seen++;
		sum += e->id;
	}
	ck_assert_uint_eq(seen, 300);
	ck_assert_uint_eq(sum, (100 + 399) * 300 / 2);
	hp_idtab_clear(&t);
	ck_assert_uint_eq(t.count, 0);
	pos = 0;
	ck_assert_ptr_null(hp_idtab_next(&t, &pos));
	ck_assert_ptr_null(hp_idtab_find(&t, 150));
	ck_assert_ptr_nonnull(hp_idtab_insert(&t, 150));
	hp_idtab_free(&t);
}
END_TEST

/* reserve makes room ahead: the inserts it covers never grow the table;
 * take drains it, each entry once, while the caller changes the table. */
START_TEST(test_reserve_and_take)
{
	struct hp_idtab t = HP_IDTAB_INIT(struct ent);
	struct ent e, *f;
	uint32_t cap;
	int seen[300] = { 0 };

	ck_assert_int_eq(hp_idtab_reserve(&t, 100), 0);
	cap = t.cap;
	ck_assert_uint_ge(cap, 200);
	for (uint64_t id = 1; id <= 100; id++) {
		ck_assert_ptr_nonnull(f = hp_idtab_insert(&t, id * 64));	/* one home */
		f->value = id;
	}
	ck_assert_uint_eq(t.cap, cap);
	while (hp_idtab_take(&t, &e) == 0) {
		ck_assert_uint_eq(e.id, e.value * 64);
		ck_assert_int_eq(seen[e.value]++, 0);
		/* the owner told removes another entry meanwhile */
		if (e.value % 10 == 1 && (f = hp_idtab_find(&t, (e.value + 5) * 64)) != NULL) {
			seen[f->value]++;
			hp_idtab_remove(&t, f);
		}
	}
	for (int v = 1; v <= 100; v++)
		ck_assert_msg(seen[v] == 1, "entry %d seen %d times", v, seen[v]);
	ck_assert_uint_eq(t.count, 0);
	hp_idtab_free(&t);
}
END_TEST

/* Ids a guest chooses, all alike in their low bits (multiples of 2^16,
 * as request ids a hostile guest could pick), do not pile into one run
 * of slots: their slots come from a keyed hash. Before, ids were their
 * own hash, and these 1024 sat in one run a lookup walked through. */
START_TEST(test_chosen_ids_spread)
{
	struct hp_idtab t = HP_IDTAB_INIT(struct ent);
	uint32_t pos = 0, run = 0, longest = 0, last = UINT32_MAX;

	for (uint64_t i = 1; i <= 1024; i++)
		ck_assert_ptr_nonnull(hp_idtab_insert(&t, i << 16));
	ck_assert_uint_eq(t.cap, 2048);
	/* the longest run of taken slots */
	while (hp_idtab_next(&t, &pos) != NULL) {
		run = pos - 1 == last + 1 ? run + 1 : 1;
		last = pos - 1;
		if (run > longest)
			longest = run;
	}
	ck_assert_msg(longest < 100, "a run of %u slots", longest);
	for (uint64_t i = 1; i <= 1024; i++)
		ck_assert_ptr_nonnull(hp_idtab_find(&t, i << 16));
	hp_idtab_free(&t);
}
END_TEST

/* Removing during a walk what it returns: none missed, whatever moves
 * into the slots the walk left. */
START_TEST(test_remove_walked)
{
	struct hp_idtab t = HP_IDTAB_INIT(struct ent);
	struct ent *e;
	uint32_t pos = 0;

	for (uint64_t i = 1; i <= 3000; i++)
		ck_assert_ptr_nonnull(hp_idtab_insert(&t, i));
	while ((e = hp_idtab_next(&t, &pos)) != NULL)
		if (e->id % 3 != 0)
			hp_idtab_remove_walked(&t, e, &pos);
	ck_assert_uint_eq(t.count, 1000);
	for (uint64_t i = 1; i <= 3000; i++)
		ck_assert((hp_idtab_find(&t, i) != NULL) == (i % 3 == 0));
	hp_idtab_free(&t);
}
END_TEST

Suite *suite_idtab(void);

Suite *
suite_idtab(void)
{
	Suite *s = suite_create("idtab");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_insert_find_remove);
	tcase_add_test(tc, test_collisions_random_order);
	tcase_add_test(tc, test_walk_and_clear);
	tcase_add_test(tc, test_reserve_and_take);
	tcase_add_test(tc, test_chosen_ids_spread);
	tcase_add_test(tc, test_remove_walked);
	suite_add_tcase(s, tc);
	return s;
}
