/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A call's deadline and traceparent in Request metadata: round trip, and
 * every hostile entry refused (wrong type, duplicate, bad traceparent). */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "proto/callmeta.h"
#include "proto/msg.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int
read_of(struct hp_meta_entry *e, uint32_t n, struct hp_callmeta *cm, const char **why)
{
	struct hp_meta m = { e, n, n };

	*why = NULL;
	return hp_callmeta_read(&m, cm, why);
}

static struct hp_meta_entry
str_entry(const char *k, const char *v)
{
	return (struct hp_meta_entry){ .key = k, .key_len = strlen(k), .type = HP_META_STRING,
				       .value = (const uint8_t *)v, .value_len = strlen(v) };
}

static struct hp_meta_entry
u64_entry(const char *k, uint64_t v)
{
	return (struct hp_meta_entry){ .key = k, .key_len = strlen(k), .type = HP_META_U64,
				       .u64 = v };
}

START_TEST(test_round_trip)
{
	struct hp_callmeta cm = { 0 }, got;
	struct hp_meta_entry ents[4];
	struct hp_request r = { .meta = { ents, 0, 4 } };
	uint8_t meta[HP_CALLMETA_MAX], buf[256];
	char tp[HP_TRACEPARENT_LEN + 1], id[HP_TRACE_ID_HEX + 1];
	const char *why;
	int64_t n;

	ck_assert_int_eq(hp_traceparent_parse(TP, strlen(TP), &cm), 0);
	cm.deadline_ns = 123456789012345ull;
	n = hp_callmeta_encode(meta, sizeof(meta), &cm);
	ck_assert_msg(n > 0, "encode: %lld", (long long)n);
	/* the Vec, then arguments: a Request payload as libguest sends it */
	memcpy(buf, meta, (size_t)n);
	buf[n] = 0x02; buf[n + 1] = 'h'; buf[n + 2] = 'i';
	ck_assert_int_eq(hp_msg_decode_request(buf, (size_t)n + 3, &r), 0);
	ck_assert_uint_eq(r.meta.count, 2);
	ck_assert_uint_eq(r.args_len, 3);
	ck_assert_msg(hp_callmeta_read(&r.meta, &got, &why) == 0, "read: %s", why);
	ck_assert_uint_eq(got.deadline_ns, 123456789012345ull);
	ck_assert_int_eq(got.has_trace, 1);
	hp_traceparent_format(&got, tp);
	ck_assert_str_eq(tp, TP);
	hp_trace_id_format(&got, id);
	ck_assert_str_eq(id, "4bf92f3577b34da6a3ce929d0e0e4736");
	/* nothing: an empty Vec, one byte */
	memset(&cm, 0, sizeof(cm));
	ck_assert_int_eq(hp_callmeta_encode(meta, sizeof(meta), &cm), 1);
	ck_assert_int_eq(meta[0], 0);
	ck_assert_int_eq(hp_callmeta_encode(meta, 10, &got), -ENOSPC);
}
END_TEST

START_TEST(test_new_span)
{
	struct hp_callmeta cm = { 0 }, child;
	char a[HP_TRACEPARENT_LEN + 1], b[HP_TRACEPARENT_LEN + 1];

	hp_trace_new(&cm, 1);
	ck_assert_int_eq(cm.has_trace, 1);
	hp_traceparent_format(&cm, a);
	ck_assert_int_eq(hp_traceparent_parse(a, strlen(a), &child), 0);
	hp_trace_new(&child, 0);
	hp_traceparent_format(&child, b);
	/* same trace, another parent-id */
	ck_assert_msg(memcmp(a, b, 35) == 0, "%s vs %s", a, b);
	ck_assert_msg(memcmp(a + 36, b + 36, 16) != 0, "%s vs %s", a, b);
}
END_TEST

START_TEST(test_absent_and_others)
{
	struct hp_meta_entry e[3] = {
		str_entry("hub.error", "x"), u64_entry("deadline", 0), str_entry("trace", "y"),
	};
	struct hp_callmeta cm;
	const char *why;

	/* unknown entries are ignored, as before */
	ck_assert_int_eq(read_of(e, 3, &cm, &why), 0);
	ck_assert_uint_eq(cm.deadline_ns, 0);
	ck_assert_int_eq(cm.has_trace, 0);
}
END_TEST

START_TEST(test_hostile)
{
	static const char *const bad_tp[] = {
		"",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* version */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",	/* upper */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",	/* zero id */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",	/* zero parent */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",	/* flags */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",	/* long */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",	/* short */
		"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",	/* dashes */
		"00-4bf92f3577b34da6a3ce929d0e0e47\xc3\xa9-00f067aa0ba902b7-01",
	};
	struct hp_meta_entry e[2];
	struct hp_callmeta cm;
	const char *why;

	for (size_t i = 0; i < sizeof(bad_tp) / sizeof(bad_tp[0]); i++) {
		e[0] = str_entry(HP_META_TRACEPARENT, bad_tp[i]);
		ck_assert_msg(read_of(e, 1, &cm, &why) == -EBADMSG, "took %s", bad_tp[i]);
		ck_assert_ptr_nonnull(why);
	}
	/* wrong types */
	e[0] = u64_entry(HP_META_TRACEPARENT, 5);
	ck_assert_int_eq(read_of(e, 1, &cm, &why), -EBADMSG);
	ck_assert_str_eq(why, "metadata traceparent is not a String");
	e[0] = str_entry(HP_META_DEADLINE, "5");
	ck_assert_int_eq(read_of(e, 1, &cm, &why), -EBADMSG);
	ck_assert_str_eq(why, "metadata hub.deadline is not a U64");
	e[0].type = HP_META_BYTES;
	ck_assert_int_eq(read_of(e, 1, &cm, &why), -EBADMSG);
	/* zero */
	e[0] = u64_entry(HP_META_DEADLINE, 0);
	ck_assert_int_eq(read_of(e, 1, &cm, &why), -EBADMSG);
	/* duplicates, even of equal values */
	e[0] = e[1] = u64_entry(HP_META_DEADLINE, 7);
	ck_assert_int_eq(read_of(e, 2, &cm, &why), -EBADMSG);
	ck_assert_str_eq(why, "metadata hub.deadline given twice");
	e[0] = e[1] = str_entry(HP_META_TRACEPARENT, TP);
	ck_assert_int_eq(read_of(e, 2, &cm, &why), -EBADMSG);
	ck_assert_str_eq(why, "metadata traceparent given twice");
	/* a good one */
	e[1] = u64_entry(HP_META_DEADLINE, 7);
	ck_assert_int_eq(read_of(e, 2, &cm, &why), 0);
	ck_assert_uint_eq(cm.deadline_ns, 7);
}
END_TEST

START_TEST(test_deadline_helpers)
{
	ck_assert_int_eq(hp_deadline_passed(0, 100), 0);
	ck_assert_int_eq(hp_deadline_passed(100, 99), 0);
	ck_assert_int_eq(hp_deadline_passed(100, 100), 1);
	ck_assert_uint_eq(hp_deadline_min(0, 5), 5);
	ck_assert_uint_eq(hp_deadline_min(5, 0), 5);
	ck_assert_uint_eq(hp_deadline_min(5, 3), 3);
	ck_assert_uint_eq(hp_deadline_min(0, 0), 0);
}
END_TEST

Suite *suite_callmeta(void);
Suite *
suite_callmeta(void)
{
	Suite *s = suite_create("callmeta");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_new_span);
	tcase_add_test(tc, test_absent_and_others);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_deadline_helpers);
	suite_add_tcase(s, tc);
	return s;
}
