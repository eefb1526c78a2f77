/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Postcard: known encodings, every boundary, and inputs that are too
 * short, too long or malformed, decoded from exactly-sized buffers so
 * that AddressSanitizer catches any read past the end. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/method.h"
#include "proto/postcard.h"

/* A heap copy of exactly n bytes. */
static uint8_t *
exact(const void *p, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);

	memcpy(b, p, n);
	return b;
}

static size_t
enc_u64(uint8_t *buf, uint64_t v)
{
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, 16);
	hp_pc_put_u64(&e, v);
	return e.len;
}

/* r[shm.payload.encoding] */
START_TEST(test_known_bytes)
{
	uint8_t buf[32];
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, 300);		/* AC 02 */
	hp_pc_put_i32(&e, -1);		/* 01 */
	hp_pc_put_str(&e, "hi", 2);	/* 02 68 69 */
	hp_pc_put_bool(&e, 1);		/* 01 */
	hp_pc_put_u8(&e, 0xff);		/* FF: u8 is a raw byte */
	hp_pc_put_i64(&e, 1);		/* 02 */
	const uint8_t want[] = { 0xAC, 0x02, 0x01, 0x02, 'h', 'i', 0x01, 0xFF, 0x02 };

	ck_assert_uint_eq(e.len, sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
}
END_TEST

static const uint64_t boundaries[] = {
	0, 1, 127, 128, 16383, 16384, 2097151, 2097152, 0xFFFFFFFFull,
	0x100000000ull, 0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull,
};

START_TEST(test_varint_round_trips)
{
	uint8_t buf[16];
	struct hp_pc_dec d;

	for (size_t i = 0; i < sizeof(boundaries) / sizeof(boundaries[0]); i++) {
		uint64_t v = boundaries[i];
		size_t n = enc_u64(buf, v);
		uint8_t *b = exact(buf, n);

		hp_pc_dec_init(&d, b, n);
		ck_assert_msg(hp_pc_get_u64(&d) == v && d.err == 0 && d.pos == n,
			      "u64 %llu", (unsigned long long)v);
		if (v <= UINT32_MAX) {
			hp_pc_dec_init(&d, b, n);
			ck_assert_uint_eq(hp_pc_get_u32(&d), v);
			ck_assert_int_eq(d.err, 0);
		}
		/* every shorter prefix fails cleanly */
		for (size_t k = 0; k < n; k++) {
			uint8_t *p = exact(buf, k);

			hp_pc_dec_init(&d, p, k);
			hp_pc_get_u64(&d);
			ck_assert_int_eq(d.err, -ENODATA);
			free(p);
		}
		free(b);
	}
	/* u64 is 10 bytes at most */
	ck_assert_uint_eq(enc_u64(buf, UINT64_MAX), HP_PC_VARINT_MAX_U64);
}
END_TEST

START_TEST(test_zigzag)
{
	static const int64_t v[] = { 0, -1, 1, -2, 63, -64, INT64_MAX, INT64_MIN };
	static const int32_t w[] = { 0, -1, 1, INT32_MAX, INT32_MIN };
	uint8_t buf[16];
	struct hp_pc_enc e;
	struct hp_pc_dec d;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_i64(&e, v[i]);
		hp_pc_dec_init(&d, buf, e.len);
		ck_assert_int_eq(hp_pc_get_i64(&d), v[i]);
		ck_assert_int_eq(d.err, 0);
	}
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_i32(&e, w[i]);
		hp_pc_dec_init(&d, buf, e.len);
		ck_assert_int_eq(hp_pc_get_i32(&d), w[i]);
	}
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_i64(&e, -64);
	ck_assert_uint_eq(e.len, 1);
	ck_assert_uint_eq(buf[0], 127);
}
END_TEST

/* Overlong varints and bits beyond the type's width are rejected. */
START_TEST(test_varint_overflow)
{
	static const uint8_t u32_six[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	static const uint8_t u32_top[] = { 0xFF, 0xFF, 0xFF, 0xFF, 0x1F };
	static const uint8_t u32_max[] = { 0xFF, 0xFF, 0xFF, 0xFF, 0x0F };
	static const uint8_t u16_top[] = { 0xFF, 0xFF, 0x04 };
	static const uint8_t u16_max[] = { 0xFF, 0xFF, 0x03 };
	static const uint8_t u64_eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					      0x80, 0x80, 0x80, 0x80, 0x01 };
	static const uint8_t u64_top[] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
					   0xFF, 0xFF, 0xFF, 0x02 };
#define CASE(in, bits, max) { in, sizeof(in), bits, max }
	static const struct {
		const uint8_t	*in;
		size_t		len;
		int		bits;		/* decoded as u16, u32 or u64 */
		uint64_t	max;		/* 0: refused (-EBADMSG), else this */
	} cases[] = {
		CASE(u32_six, 32, 0), CASE(u32_top, 32, 0), CASE(u32_max, 32, UINT32_MAX),
		CASE(u16_top, 16, 0), CASE(u16_max, 16, UINT16_MAX),
		CASE(u64_eleven, 64, 0), CASE(u64_top, 64, 0),
	};
#undef CASE
	struct hp_pc_dec d;
	uint64_t v;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hp_pc_dec_init(&d, cases[i].in, cases[i].len);
		v = cases[i].bits == 16 ? hp_pc_get_u16(&d) :
		    cases[i].bits == 32 ? hp_pc_get_u32(&d) : hp_pc_get_u64(&d);
		if (cases[i].max == 0)
			ck_assert_msg(d.err == -EBADMSG, "case %zu (u%d): err %d", i,
				      cases[i].bits, d.err);
		else
			ck_assert_msg(v == cases[i].max, "case %zu (u%d): %llu", i,
				      cases[i].bits, (unsigned long long)v);
	}
}
END_TEST

START_TEST(test_strings_bytes_and_utf8)
{
	static const uint8_t truncated[] = { 0x05, 'a', 'b' };
	static const uint8_t longlen[] = { 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 'x' };
	const char *bad_utf8[] = {
		"\xC0\x80",		/* overlong NUL */
		"\xE0\x80\x80",		/* overlong */
		"\xED\xA0\x80",		/* surrogate */
		"\xF4\x90\x80\x80",	/* > U+10FFFF */
		"\x80",			/* continuation first */
		"\xE2\x82",		/* truncated */
		"\xFF",
	};
	uint8_t buf[32], *b;
	struct hp_pc_enc e;
	struct hp_pc_dec d;
	const char *s;
	size_t n;

	b = exact(truncated, sizeof(truncated));
	hp_pc_dec_init(&d, b, sizeof(truncated));
	ck_assert_int_eq(hp_pc_get_str(&d, &s, &n), -ENODATA);
	free(b);
	b = exact(longlen, sizeof(longlen));
	hp_pc_dec_init(&d, b, sizeof(longlen));
	ck_assert_int_eq(hp_pc_get_bytes(&d, (const uint8_t **)(void *)&s, &n), -ENODATA);
	free(b);
	for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_bytes(&e, bad_utf8[i], strlen(bad_utf8[i]));
		hp_pc_dec_init(&d, buf, e.len);
		ck_assert_msg(hp_pc_get_str(&d, &s, &n) == -EBADMSG, "utf8 case %zu", i);
		/* the same bytes are fine as bytes */
		hp_pc_dec_init(&d, buf, e.len);
		ck_assert_int_eq(hp_pc_get_bytes(&d, (const uint8_t **)(void *)&s, &n), 0);
	}
	ck_assert(hp_utf8_valid((const uint8_t *)"h\xC3\xA9llo \xF0\x9F\x98\x80", 11));
}
END_TEST

/* hp_utf8_lossy, what libguest sends of an error text that is not
 * UTF-8: each byte that starts no character is U+FFFD, valid text is
 * copied as it is, and a cut never splits a character or a U+FFFD. */
START_TEST(test_utf8_lossy)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "h\xC3\xA9llo", "h\xC3\xA9llo" },
		{ "bad \xFF text", "bad \xEF\xBF\xBD text" },
		{ "\xC0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD" },		/* overlong: 2 bytes, 2 */
		{ "\xED\xA0\x80!", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD!" },	/* surrogate */
		{ "a\xE2\x82", "a\xEF\xBF\xBD\xEF\xBF\xBD" },		/* truncated */
		{ "\xF0\x9F\x98\x80\x80", "\xF0\x9F\x98\x80\xEF\xBF\xBD" },
	};
	uint8_t out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = hp_utf8_lossy(out, sizeof(out), (const uint8_t *)cases[i].in,
				  strlen(cases[i].in));
		ck_assert_msg(n == strlen(cases[i].want) && memcmp(out, cases[i].want, n) == 0,
			      "lossy case %zu: %zu bytes", i, n);
		ck_assert(hp_utf8_valid(out, n));
	}
	/* cut to fit: "a" + U+FFFD needs 4 bytes; 3 hold "a" only */
	ck_assert_uint_eq(hp_utf8_lossy(out, 3, (const uint8_t *)"a\xFF", 2), 1);
	ck_assert_uint_eq(hp_utf8_lossy(out, 4, (const uint8_t *)"a\xFF", 2), 4);
	/* nor a character: "\xC3\xA9" does not go into 1 byte */
	ck_assert_uint_eq(hp_utf8_lossy(out, 1, (const uint8_t *)"\xC3\xA9", 2), 0);
	ck_assert_uint_eq(hp_utf8_char((const uint8_t *)"\xC3\xA9", 1), 0);
}
END_TEST

START_TEST(test_bool_seq_and_sticky_errors)
{
	static const uint8_t two[] = { 2 };
	static const uint8_t seq[] = { 5, 1, 2 };	/* says 5 elements, has 2 bytes */
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, two, 1);
	ck_assert_int_eq(hp_pc_get_bool(&d), -EBADMSG);
	/* sticky: later gets fail too, without reading */
	ck_assert_uint_eq(hp_pc_get_u8(&d), 0);
	ck_assert_int_eq(d.err, -EBADMSG);
	hp_pc_dec_init(&d, seq, sizeof(seq));
	ck_assert_uint_eq(hp_pc_get_seq_len(&d), 0);
	ck_assert_int_eq(d.err, -EBADMSG);
}
END_TEST

START_TEST(test_encoder_enospc_at_every_size)
{
	uint8_t full[64], buf[64];
	struct hp_pc_enc e;
	size_t need;

	hp_pc_enc_init(&e, full, sizeof(full));
	hp_pc_put_u64(&e, UINT64_MAX);
	hp_pc_put_str(&e, "hello", 5);
	need = e.len;
	for (size_t cap = 0; cap < need; cap++) {
		hp_pc_enc_init(&e, buf, cap);
		hp_pc_put_u64(&e, UINT64_MAX);
		hp_pc_put_str(&e, "hello", 5);
		ck_assert_int_eq(e.err, -ENOSPC);
		ck_assert_uint_le(e.len, cap);
	}
}
END_TEST

/* Random and mutated inputs through every get: no crash, no overread. */
START_TEST(test_random_inputs)
{
	uint64_t x = 88172645463325252ull;

	for (int round = 0; round < 100000; round++) {
		uint8_t tmp[24], *b;
		size_t n;
		struct hp_pc_dec d;
		const char *s;
		size_t sl;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		n = x % sizeof(tmp);
		for (size_t i = 0; i < n; i++)
			tmp[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
		b = exact(tmp, n);
		hp_pc_dec_init(&d, b, n);
		switch (round % 5) {
		case 0: hp_pc_get_u64(&d); break;
		case 1: hp_pc_get_str(&d, &s, &sl); break;
		case 2: hp_pc_get_seq_len(&d); hp_pc_get_i32(&d); break;
		case 3: hp_pc_get_bool(&d); hp_pc_get_u16(&d); break;
		default: hp_pc_get_bytes(&d, (const uint8_t **)(void *)&s, &sl); break;
		}
		ck_assert_uint_le(d.pos, n);
		free(b);
	}
}
END_TEST

START_TEST(test_method_id)
{
	/* SipHash-2-4 under HP_METHOD_ID_KEY, read little-endian; the values
	 * from an implementation of its own (Python, checked against the
	 * reference vectors of the SipHash paper), not from libsodium */
	ck_assert_uint_eq(hp_method_id("", 0), 0xe34fb008e7d75106ull);
	ck_assert_uint_eq(hp_method_id("kv.get", 6), 0x818e2cfb39948d80ull);
	ck_assert_uint_eq(hp_method_id("hub.register", 12), 0xbdb91920607b0fefull);
	ck_assert_uint_ne(hp_method_id("echo.echo", 9), hp_method_id("echo.Echo", 9));
	/* the vectors doc/protocol.md gives a foreign peer */
	ck_assert_uint_eq(hp_method_id("hub.ping", 8), 0xb6a94108df509e86ull);
	ck_assert_uint_eq(hp_method_id("echo.echo", 9), 0x8ca4b8658cb2b126ull);
	ck_assert_uint_eq(hp_method_id("kv.put", 6), 0xfdc75475c30fba3dull);
}
END_TEST

Suite *suite_postcard(void);
Suite *
suite_postcard(void)
{
	Suite *s = suite_create("postcard");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_known_bytes);
	tcase_add_test(tc, test_varint_round_trips);
	tcase_add_test(tc, test_zigzag);
	tcase_add_test(tc, test_varint_overflow);
	tcase_add_test(tc, test_strings_bytes_and_utf8);
	tcase_add_test(tc, test_utf8_lossy);
	tcase_add_test(tc, test_bool_seq_and_sticky_errors);
	tcase_add_test(tc, test_encoder_enospc_at_every_size);
	tcase_add_test(tc, test_random_inputs);
	tcase_add_test(tc, test_method_id);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
