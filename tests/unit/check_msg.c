/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Message payloads: Request, Response, Goodbye and metadata limits. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"
#include "proto/postcard.h"

static struct hp_meta_entry entries[HP_META_MAX_ENTRIES + 1];
static uint8_t big[2 * HP_META_MAX_TOTAL];

static struct hp_meta
meta_of(uint32_t n)
{
	struct hp_meta m = { entries, n, HP_META_MAX_ENTRIES + 1 };

	return m;
}

/* r[shm.metadata.in-payload]: metadata then arguments, one postcard value */
START_TEST(test_request_round_trip)
{
	struct hp_meta_entry got[4];
	struct hp_request r = { .meta = { got, 0, 4 } };
	uint8_t buf[256];
	static const uint8_t args[] = { 0x02, 'h', 'i' };
	int64_t n;

	entries[0] = (struct hp_meta_entry){ .key = "trace", .key_len = 5,
		.type = HP_META_STRING, .value = (const uint8_t *)"abc", .value_len = 3 };
	entries[1] = (struct hp_meta_entry){ .key = "blob", .key_len = 4,
		.type = HP_META_BYTES, .value = (const uint8_t *)"\0\1", .value_len = 2 };
	entries[2] = (struct hp_meta_entry){ .key = "deadline", .key_len = 8,
		.type = HP_META_U64, .u64 = 1234567890123ull };
	struct hp_meta m = meta_of(3);

	n = hp_msg_encode_request(buf, sizeof(buf), &m, args, sizeof(args));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(hp_msg_decode_request(buf, (size_t)n, &r), 0);
	ck_assert_uint_eq(r.meta.count, 3);
	ck_assert_mem_eq(r.meta.entries[0].key, "trace", 5);
	ck_assert_uint_eq(r.meta.entries[1].type, HP_META_BYTES);
	ck_assert_uint_eq(r.meta.entries[2].u64, 1234567890123ull);
	ck_assert_uint_eq(r.args_len, sizeof(args));
	ck_assert_mem_eq(r.args, args, sizeof(args));
	/* no metadata: a single 0 byte before the arguments */
	n = hp_msg_encode_request(buf, sizeof(buf), NULL, args, sizeof(args));
	ck_assert_int_eq(n, 4);
	ck_assert_uint_eq(buf[0], 0);
}
END_TEST

/* doc/protocol.md, "Messages": Result Ok=0 Err=1; RoamError User=0 UnknownMethod=1
 * InvalidPayload=2 Cancelled=3: an unknown method answers 00 01 01 */
START_TEST(test_response_variants)
{
	struct hp_meta_entry got[4];
	struct hp_response r = { .result = HP_RESULT_ERR, .error = HP_ERR_UNKNOWN_METHOD };
	struct hp_response d = { .meta = { got, 0, 4 } };
	uint8_t buf[64];
	int64_t n;

	n = hp_msg_encode_response(buf, sizeof(buf), &r);
	ck_assert_int_eq(n, 3);
	ck_assert_mem_eq(buf, "\x00\x01\x01", 3);
	for (uint32_t code = 0; code <= HP_ERR_CANCELLED; code++) {
		r.error = code;
		r.value = (const uint8_t *)"\x03" "bad";
		r.value_len = code == HP_ERR_USER ? 4 : 0;
		n = hp_msg_encode_response(buf, sizeof(buf), &r);
		ck_assert_int_eq(hp_msg_decode_response(buf, (size_t)n, &d), 0);
		ck_assert_uint_eq(d.result, HP_RESULT_ERR);
		ck_assert_uint_eq(d.error, code);
		ck_assert_uint_eq(d.value_len, r.value_len);
	}
	r.result = HP_RESULT_OK;
	r.value = (const uint8_t *)"\x2a";
	r.value_len = 1;
	n = hp_msg_encode_response(buf, sizeof(buf), &r);
	ck_assert_int_eq(hp_msg_decode_response(buf, (size_t)n, &d), 0);
	ck_assert_uint_eq(d.result, HP_RESULT_OK);
	ck_assert_uint_eq(d.value[0], 0x2a);
}
END_TEST

START_TEST(test_response_malformed)
{
	struct hp_meta_entry got[4];
	struct hp_response d = { .meta = { got, 0, 4 } };
	static const uint8_t *cases[] = {
		(const uint8_t *)"",		/* empty */
		(const uint8_t *)"\x00",	/* no result tag */
		(const uint8_t *)"\x00\x02",	/* Result tag 2 */
		(const uint8_t *)"\x00\x01",	/* Err without a code */
		(const uint8_t *)"\x00\x01\x04",	/* RoamError 4 */
		(const uint8_t *)"\x00\x01\x01\x00",	/* UnknownMethod + trailing byte */
		(const uint8_t *)"\x01\x00",	/* metadata entry cut short */
	};
	static const size_t lens[] = { 0, 1, 2, 2, 3, 4, 2 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t *b = malloc(lens[i] + 1);

		memcpy(b, cases[i], lens[i]);
		ck_assert_msg(hp_msg_decode_response(b, lens[i], &d) != 0, "case %zu", i);
		free(b);
	}
}
END_TEST

/* r[shm.metadata.limits]: 128 entries, keys 256 B, values 16 KiB, 64 KiB */
START_TEST(test_metadata_limits)
{
	struct hp_meta m;
	static uint8_t buf[4 * HP_META_MAX_TOTAL];
	struct hp_meta_entry got[HP_META_MAX_ENTRIES + 1];
	struct hp_request r = { .meta = { got, 0, HP_META_MAX_ENTRIES + 1 } };
	int64_t n;

	memset(big, 'k', sizeof(big));
	for (int i = 0; i <= (int)HP_META_MAX_ENTRIES; i++)
		entries[i] = (struct hp_meta_entry){ .key = (const char *)big, .key_len = 1,
						     .type = HP_META_U64, .u64 = (uint64_t)i };
	m = meta_of(HP_META_MAX_ENTRIES);
	ck_assert_int_eq(hp_meta_check(&m), 0);
	m = meta_of(HP_META_MAX_ENTRIES + 1);
	ck_assert_int_eq(hp_meta_check(&m), -E2BIG);
	ck_assert_int_eq(hp_msg_encode_request(buf, sizeof(buf), &m, NULL, 0), -EINVAL);
	/* 129 entries on the wire are refused by the decoder too */
	buf[0] = 0x81, buf[1] = 0x01;	/* varint 129 */
	n = 2;
	for (int i = 0; i < 129; i++) {
		buf[n++] = 1, buf[n++] = 'k', buf[n++] = HP_META_U64, buf[n++] = 0;
	}
	ck_assert_int_eq(hp_msg_decode_request(buf, (size_t)n, &r), -E2BIG);
	/* key of 256 is fine, 257 is not */
	entries[0].key_len = HP_META_MAX_KEY;
	m = meta_of(1);
	ck_assert_int_eq(hp_meta_check(&m), 0);
	entries[0].key_len = HP_META_MAX_KEY + 1;
	ck_assert_int_eq(hp_meta_check(&m), -E2BIG);
	n = hp_msg_encode_request(buf, sizeof(buf), &(struct hp_meta){ entries, 0, 0 }, NULL, 0);
	/* value of 16 KiB fine, one more not, on both sides */
	entries[0] = (struct hp_meta_entry){ .key = "v", .key_len = 1, .type = HP_META_BYTES,
					     .value = big, .value_len = HP_META_MAX_VALUE };
	ck_assert_int_eq(hp_meta_check(&m), 0);
	n = hp_msg_encode_request(buf, sizeof(buf), &m, NULL, 0);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(hp_msg_decode_request(buf, (size_t)n, &r), 0);
	entries[0].value_len = HP_META_MAX_VALUE + 1;
	ck_assert_int_eq(hp_meta_check(&m), -E2BIG);
	/* hand-made: the same entry encoded anyway, refused by the decoder */
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_seq_len(&e, 1);
	hp_pc_put_str(&e, "v", 1);
	hp_pc_put_tag(&e, HP_META_BYTES);
	hp_pc_put_bytes(&e, big, HP_META_MAX_VALUE + 1);
	ck_assert_int_eq(hp_msg_decode_request(buf, e.len, &r), -E2BIG);
	/* five 16 KiB values: each fine, together over 64 KiB */
	for (int i = 0; i < 5; i++)
		entries[i] = (struct hp_meta_entry){ .key = "v", .key_len = 1,
			.type = HP_META_BYTES, .value = big, .value_len = HP_META_MAX_VALUE };
	m = meta_of(5);
	ck_assert_int_eq(hp_meta_check(&m), -E2BIG);
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_seq_len(&e, 5);
	for (int i = 0; i < 5; i++) {
		hp_pc_put_str(&e, "v", 1);
		hp_pc_put_tag(&e, HP_META_BYTES);
		hp_pc_put_bytes(&e, big, HP_META_MAX_VALUE);
	}
	ck_assert_int_eq(hp_msg_decode_request(buf, e.len, &r), -E2BIG);
	/* an unknown MetadataValue tag */
	ck_assert_int_eq(hp_msg_decode_request((const uint8_t *)"\x01\x01k\x03\x00", 5, &r),
			 -EBADMSG);
}
END_TEST

/* r[shm.goodbye.payload]: a String with the rule ID */
START_TEST(test_goodbye)
{
	uint8_t buf[64];
	const char *reason;
	size_t n;
	int64_t len = hp_msg_encode_goodbye(buf, sizeof(buf), "shm.desc.msg-type");

	ck_assert_int_eq(len, 18);
	ck_assert_int_eq(hp_msg_decode_goodbye(buf, (size_t)len, &reason, &n), 0);
	ck_assert_uint_eq(n, 17);
	ck_assert_mem_eq(reason, "shm.desc.msg-type", 17);
	ck_assert_int_ne(hp_msg_decode_goodbye(buf, (size_t)len - 1, &reason, &n), 0);
	buf[len] = 0;
	ck_assert_int_ne(hp_msg_decode_goodbye(buf, (size_t)len + 1, &reason, &n), 0);
	ck_assert_int_eq(hp_msg_encode_goodbye(buf, 4, "shm.desc.msg-type"), -ENOSPC);
}
END_TEST

Suite *suite_msg(void);
Suite *
suite_msg(void)
{
	Suite *s = suite_create("msg");
	TCase *tc = tcase_create("payloads");

	tcase_add_test(tc, test_request_round_trip);
	tcase_add_test(tc, test_response_variants);
	tcase_add_test(tc, test_response_malformed);
	tcase_add_test(tc, test_metadata_limits);
	tcase_add_test(tc, test_goodbye);
	suite_add_tcase(s, tc);
	return s;
}
