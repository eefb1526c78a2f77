/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Descriptor building and the receiver's validation of a copy. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/desc.h"

static uint8_t *mem;
static struct hp_slot_pool pool;
static const struct hp_desc_limits lim = { .max_payload_size = 1000, .max_channels = 16 };

static void
setup(void)
{
	size_t size = hp_slot_pool_header_size(8) + 8 * 1024;

	mem = aligned_alloc(64, size);
	memset(mem, 0, size);
	hp_slot_pool_view(&pool, mem, 8, 1024);
	hp_slot_pool_reset(&pool);
}

static void
teardown(void)
{
	free(mem);
}

static int
check(const struct hp_desc *d, const char **rule)
{
	const uint8_t *p;
	uint32_t len;

	*rule = "";
	return hp_desc_validate(d, &lim, &pool, &p, &len, rule);
}

/* r[shm.desc.size] r[shm.desc.inline-fields] r[shm.payload.inline] */
START_TEST(test_inline_ok)
{
	struct hp_desc d;
	const uint8_t *p;
	uint32_t len;
	const char *rule;

	memset(&d, 0xAA, sizeof(d));	/* stale bytes must not survive */
	d.msg_type = HP_MSG_REQUEST;
	d.reserved[0] = d.reserved[1] = 0;
	ck_assert_int_eq(hp_desc_set_inline(&d, "hello", 5), 0);
	ck_assert_uint_eq(d.payload_slot, HP_SLOT_INLINE);
	ck_assert_uint_eq(d.payload_generation, 0);
	ck_assert_uint_eq(d.payload_offset, 0);
	ck_assert_uint_eq(d.inline_payload[5], 0);
	ck_assert_int_eq(hp_desc_validate(&d, &lim, &pool, &p, &len, &rule), 0);
	ck_assert_ptr_eq(p, d.inline_payload);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(hp_desc_set_inline(&d, "x", 33), -EINVAL);
}
END_TEST

/* r[shm.payload.slot] */
START_TEST(test_slot_ok)
{
	struct hp_desc d;
	const uint8_t *p;
	uint32_t len, idx, gen;
	const char *rule;

	ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), 0);
	memset(&d, 0, sizeof(d));
	d.msg_type = HP_MSG_RESPONSE;
	hp_desc_set_slot(&d, idx, gen, 8, 100);
	ck_assert_int_eq(hp_desc_validate(&d, &lim, &pool, &p, &len, &rule), 0);
	ck_assert_ptr_eq(p, hp_slot_payload(&pool, idx) + 8);
	ck_assert_uint_eq(len, 100);
}
END_TEST

/* Each broken rule is reported by its ID, for the Goodbye. */
START_TEST(test_each_violation_named)
{
	struct hp_desc d;
	const char *rule;
	uint32_t idx, gen;

	ck_assert_int_eq(hp_slot_alloc(&pool, &idx, &gen), 0);
	memset(&d, 0, sizeof(d));
	hp_desc_set_inline(&d, "x", 1);
	/* r[shm.desc.msg-type] */
	d.msg_type = 0;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.desc.msg-type");
	d.msg_type = 8;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	d.msg_type = HP_MSG_RESPONSE;
	d.method_id = 7;	/* only Requests name a method */
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	d.method_id = 0;
	/* r[shm.desc.flags]: ignored */
	d.flags = 0xFF;
	ck_assert_int_eq(check(&d, &rule), 0);
	d.reserved[1] = 1;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	d.reserved[1] = 0;
	/* r[shm.desc.inline-fields] */
	d.payload_generation = 1;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.desc.inline-fields");
	d.payload_generation = 0;
	d.payload_len = 33;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.desc.inline-fields");
	/* a payload over max_payload_size */
	hp_desc_set_slot(&d, idx, gen, 0, 1001);
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	/* r[shm.payload.inline]: short payloads may not use a slot */
	hp_desc_set_slot(&d, idx, gen, 0, 32);
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.payload.inline");
	hp_desc_set_slot(&d, 8, gen, 0, 100);
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.payload.slot");
	hp_desc_set_slot(&d, idx, gen + 1, 0, 100);
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.generation");
	hp_desc_set_slot(&d, idx, gen, 1000, 100);
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.payload-offset");
	/* r[shm.flow.channel-table-indexing]: channel ids in range, not 0 */
	hp_desc_set_inline(&d, "x", 1);
	d.msg_type = HP_MSG_DATA;
	d.id = 0;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.flow.channel-table-indexing");
	d.id = 16;
	ck_assert_int_eq(check(&d, &rule), -EPROTO);
	d.id = 15;
	ck_assert_int_eq(check(&d, &rule), 0);
}
END_TEST

Suite *suite_desc(void);
Suite *
suite_desc(void)
{
	Suite *s = suite_create("desc");
	TCase *tc = tcase_create("validate");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_inline_ok);
	tcase_add_test(tc, test_slot_ok);
	tcase_add_test(tc, test_each_violation_named);
	suite_add_tcase(s, tc);
	return s;
}
