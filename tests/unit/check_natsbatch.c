/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats's batch wire (nats/batch.c): what is built parses back to
 * the same messages; a truncated, oversized or malformed batch is
 * refused whole, nothing made. And the pack wire (a stream's items):
 * a pack is taken only when every length and the count agree. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats/hubnats.h"

#define SUBJ	"hub.call.kv.get"

/* Request i: to SUBJ, its reply inbox.i, a few headers, i bytes (the
 * texts in t, which must outlive it). */
struct req_text {
	char	reply[32], data[64], ms[16];
};

static void
request(int i, struct br_out *o, struct req_text *t)
{
	snprintf(t->reply, sizeof(t->reply), "_INBOX.abc.%d", i);
	memset(t->data, 'a' + i % 26, sizeof(t->data));
	snprintf(t->ms, sizeof(t->ms), "%d", 1000 + i);
	*o = (struct br_out){ .subject = SUBJ, .reply = t->reply, .data = t->data, .len = (size_t)(i % 64) };
	ck_assert_int_eq(br_out_header(o, BR_H_SIG, "(str) -> str"), NATS_OK);
	ck_assert_int_eq(br_out_header(o, BR_H_TIMEOUT, t->ms), NATS_OK);
	ck_assert_int_eq(br_out_header(o, BR_H_FROM, "a"), NATS_OK);
}

/* n requests built into a body (malloc'd), its length in *len. */
static uint8_t *
build(int n, size_t *len)
{
	struct br_out o;
	struct req_text t;
	uint8_t *buf;
	size_t pos = 0, total = 0;

	for (int i = 0; i < n; i++) {
		request(i, &o, &t);
		total += br_batch_put(&o, 0, NULL);
	}
	buf = malloc(total > 0 ? total : 1);
	ck_assert_ptr_nonnull(buf);
	for (int i = 0; i < n; i++) {
		request(i, &o, &t);
		pos += br_batch_put(&o, 0, buf + pos);
	}
	ck_assert_uint_eq(pos, total);
	*len = total;
	return buf;
}

static void
destroy(natsMsg **v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		natsMsg_Destroy(v[i]);
}

START_TEST(test_round_trip)
{
	natsMsg *v[BR_BATCH_MAX];
	const char *h = NULL;
	char want[32];
	uint32_t n = 0;
	size_t len;
	uint8_t *buf = build(5, &len);

	ck_assert_int_eq(br_batch_parse(buf, len, "5", SUBJ, 0, v, &n), 0);
	ck_assert_uint_eq(n, 5);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "_INBOX.abc.%u", i);
		ck_assert_str_eq(natsMsg_GetSubject(v[i]), SUBJ);
		ck_assert_str_eq(natsMsg_GetReply(v[i]), want);
		ck_assert_int_eq(natsMsg_GetDataLength(v[i]), (int)(i % 64));
		ck_assert_int_eq(natsMsgHeader_Get(v[i], BR_H_SIG, &h), NATS_OK);
		ck_assert_str_eq(h, "(str) -> str");
		snprintf(want, sizeof(want), "%u", 1000 + i);
		ck_assert_int_eq(natsMsgHeader_Get(v[i], BR_H_TIMEOUT, &h), NATS_OK);
		ck_assert_str_eq(h, want);
		/* the entry's reply is its reply, not a header */
		ck_assert_int_ne(natsMsgHeader_Get(v[i], BR_H_REPLY, &h), NATS_OK);
	}
	destroy(v, n);
	free(buf);
}
END_TEST

START_TEST(test_answers)
{
	natsMsg *v[BR_BATCH_MAX];
	uint8_t buf[512];
	size_t pos = 0;
	uint32_t n = 0;
	const char *h = NULL;

	for (int i = 0; i < 2; i++) {
		struct br_out a = { .subject = i == 0 ? "_INBOX.abc.1" : "_INBOX.abc.2",
				    .data = "ok", .len = 2 };

		ck_assert_int_eq(br_out_header(&a, BR_H_STATUS, "ok"), NATS_OK);
		ck_assert_int_eq(br_out_header(&a, BR_H_MAC, "00ff"), NATS_OK);
		pos += br_batch_put(&a, 1, buf + pos);
	}
	ck_assert_int_eq(br_batch_parse(buf, pos, "2", NULL, 1, v, &n), 0);
	ck_assert_str_eq(natsMsg_GetSubject(v[1]), "_INBOX.abc.2");
	ck_assert_ptr_null(natsMsg_GetReply(v[1]));
	ck_assert_int_eq(natsMsgHeader_Get(v[1], BR_H_MAC, &h), NATS_OK);
	ck_assert_str_eq(h, "00ff");
	destroy(v, n);
}
END_TEST

/* Every cut of a good batch is refused. */
START_TEST(test_truncated)
{
	natsMsg *v[BR_BATCH_MAX];
	uint32_t n = 0;
	size_t len;
	uint8_t *buf = build(3, &len);

	for (size_t cut = 0; cut < len; cut++)
		ck_assert_msg(br_batch_parse(buf, cut, "3", SUBJ, 0, v, &n) != 0,
			      "cut at %zu of %zu parsed", cut, len);
	/* a byte too many, and a count that does not match */
	ck_assert_int_ne(br_batch_parse(buf, len, "2", SUBJ, 0, v, &n), 0);
	ck_assert_int_ne(br_batch_parse(buf, len, "4", SUBJ, 0, v, &n), 0);
	free(buf);
}
END_TEST

START_TEST(test_count)
{
	natsMsg *v[BR_BATCH_MAX];
	uint32_t n = 0;
	size_t len;
	uint8_t *buf = build(2, &len);
	const char *bad[] = { NULL, "", "1", "0", "-2", "+2", "2x", "257", "99999999999999999999",
			      " 2", "02" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(br_batch_parse(buf, len, bad[i], SUBJ, 0, v, &n) != 0, "count %s",
			      bad[i] != NULL ? bad[i] : "(none)");
	ck_assert_int_eq(br_batch_parse(buf, len, "2", SUBJ, 0, v, &n), 0);
	destroy(v, n);
	free(buf);
}
END_TEST

/* One entry of two: header block text, lengths as given. */
static size_t
entry(uint8_t *out, const char *hdr, uint32_t hlen, uint32_t dlen, const char *data)
{
	size_t n = strlen(hdr), d = data != NULL ? strlen(data) : 0;

	for (int i = 0; i < 4; i++) {
		out[i] = (uint8_t)(hlen >> (8 * i));
		out[4 + i] = (uint8_t)(dlen >> (8 * i));
	}
	memcpy(out + 8, hdr, n);
	if (d > 0)
		memcpy(out + 8 + n, data, d);
	return 8 + n + d;
}

static int
parse2(const char *hdr, uint32_t hlen, uint32_t dlen, const char *data)
{
	static const char good[] = "Hub-Reply: _INBOX.x.1\r\nHub-From: a\r\n";
	natsMsg *v[BR_BATCH_MAX];
	uint8_t buf[1024];
	size_t pos;
	uint32_t n = 0;
	int rc;

	pos = entry(buf, good, sizeof(good) - 1, 0, NULL);
	pos += entry(buf + pos, hdr, hlen, dlen, data);
	rc = br_batch_parse(buf, pos, "2", SUBJ, 0, v, &n);
	if (rc == 0)
		destroy(v, n);
	return rc;
}

START_TEST(test_bad_lengths)
{
	const char *h = "Hub-Reply: _INBOX.x.2\r\n";
	uint32_t hl = (uint32_t)strlen(h);

	ck_assert_int_eq(parse2(h, hl, 2, "hi"), 0);
	ck_assert_int_ne(parse2(h, hl, 3, "hi"), 0);
	ck_assert_int_ne(parse2(h, hl, 1, "hi"), 0);
	ck_assert_int_ne(parse2(h, hl + 1, 2, "hi"), 0);
	ck_assert_int_ne(parse2(h, hl - 1, 2, "hi"), 0);
	ck_assert_int_ne(parse2(h, 0xffffffffu, 2, "hi"), 0);
	ck_assert_int_ne(parse2(h, hl, 0xffffffffu, "hi"), 0);
	ck_assert_int_ne(parse2(h, hl, 0x80000000u, "hi"), 0);
}
END_TEST

START_TEST(test_bad_headers)
{
	const char *bad[] = {
		"",					/* no Hub-Reply */
		"Hub-From: a\r\n",			/* no Hub-Reply */
		"Hub-Reply: _INBOX.x.2\r\nHub-Reply: _INBOX.x.3\r\n",
		"Hub-Reply: _INBOX.x.2",		/* no CRLF */
		"Hub-Reply: _INBOX.x.2\n",
		"Hub-Reply: _INBOX.x.2\r",
		"Hub-Reply _INBOX.x.2\r\n",		/* no colon */
		": x\r\nHub-Reply: _INBOX.x.2\r\n",	/* no name */
		"Hub From: x\r\nHub-Reply: _INBOX.x.2\r\n",
		"Hub-From: a\rb\r\nHub-Reply: _INBOX.x.2\r\n",
		"Hub-From: a\nb\r\nHub-Reply: _INBOX.x.2\r\n",
		"Hub-Reply: _INBOX.x 2\r\n",		/* not a subject */
		"Hub-Reply: _INBOX.*\r\n",
		"Hub-Reply: _INBOX.>\r\n",
		"Hub-Reply: _INBOX..2\r\n",
		"Hub-Reply: .x\r\n",
		"Hub-Reply: \r\n",
	};
	char nul[] = "Hub-Reply: _INBOX.x.2\r\nHub-From: a\0b\r\n";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse2(bad[i], (uint32_t)strlen(bad[i]), 0, NULL) != 0,
			      "header block %zu parsed", i);
	ck_assert_int_ne(parse2(nul, sizeof(nul) - 1, 0, NULL), 0);
	ck_assert_int_eq(parse2("Hub-Reply:_INBOX.x.2\r\nA:\r\n", 26, 0, NULL), 0);
}
END_TEST

/* A message whose header cannot stand in a batch is not put in one. */
START_TEST(test_put_refuses)
{
	struct br_out o = { .subject = SUBJ, .data = "x", .len = 1 };

	ck_assert_uint_eq(br_batch_put(&o, 0, NULL), 0);	/* no reply */
	o.reply = "_INBOX.a b";
	ck_assert_uint_eq(br_batch_put(&o, 0, NULL), 0);
	o.reply = "_INBOX.a";
	ck_assert_uint_gt(br_batch_put(&o, 0, NULL), 0);
	ck_assert_int_eq(br_out_header(&o, "Hub-X", "a\r\nb"), NATS_OK);	/* two lines */
	ck_assert_uint_eq(br_batch_put(&o, 0, NULL), 0);
	o.nh = 0;
	ck_assert_int_eq(br_out_header(&o, "Hub X", "a"), NATS_OK);	/* a blank in a name */
	ck_assert_uint_eq(br_batch_put(&o, 0, NULL), 0);
}
END_TEST

/* A message's headers are bounded (BR_OUT_HDRS): one more is refused,
 * none lost quietly; the same message made alone (br_out_msg) and as one
 * batch entry parsed back (br_batch_entry, what a batch of one sends)
 * carry the same subject, reply, headers and bytes. */
START_TEST(test_alone_and_entry)
{
	struct br_out o;
	struct req_text t;
	natsMsg *alone = NULL, *entry = NULL;
	const char *h1 = NULL, *h2 = NULL;
	uint8_t buf[1024];
	size_t len;

	request(7, &o, &t);
	ck_assert_int_eq(br_out_msg(&o, &alone), NATS_OK);
	len = br_batch_put(&o, 0, buf);
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(br_batch_entry(buf, len, SUBJ, 0, &entry), 0);
	ck_assert_str_eq(natsMsg_GetSubject(entry), natsMsg_GetSubject(alone));
	ck_assert_str_eq(natsMsg_GetReply(entry), natsMsg_GetReply(alone));
	ck_assert_int_eq(natsMsg_GetDataLength(entry), 7);
	ck_assert_mem_eq(natsMsg_GetData(entry), natsMsg_GetData(alone), 7);
	for (uint32_t i = 0; i < o.nh; i++) {
		ck_assert_int_eq(natsMsgHeader_Get(alone, o.name[i], &h1), NATS_OK);
		ck_assert_int_eq(natsMsgHeader_Get(entry, o.name[i], &h2), NATS_OK);
		ck_assert_str_eq(h1, o.value[i]);
		ck_assert_str_eq(h2, o.value[i]);
	}
	ck_assert_int_ne(natsMsgHeader_Get(entry, BR_H_REPLY, &h2), NATS_OK);
	/* a byte short, or one past: refused, nothing made */
	natsMsg_Destroy(entry);
	entry = NULL;
	ck_assert_int_eq(br_batch_entry(buf, len - 1, SUBJ, 0, &entry), -1);
	ck_assert_int_eq(br_batch_entry(buf, len + 1, SUBJ, 0, &entry), -1);
	natsMsg_Destroy(alone);
	while (o.nh < BR_OUT_HDRS)
		ck_assert_int_eq(br_out_header(&o, "Hub-X", "y"), NATS_OK);
	ck_assert_int_eq(br_out_header(&o, "Hub-Y", "z"), NATS_INSUFFICIENT_BUFFER);
	ck_assert_uint_eq(o.nh, BR_OUT_HDRS);
}
END_TEST

START_TEST(test_max)
{
	natsMsg *v[BR_BATCH_MAX];
	uint32_t n = 0;
	size_t len;
	uint8_t *buf = build(BR_BATCH_MAX, &len);

	ck_assert_int_eq(br_batch_parse(buf, len, "256", SUBJ, 0, v, &n), 0);
	ck_assert_uint_eq(n, BR_BATCH_MAX);
	destroy(v, n);
	free(buf);
}
END_TEST

/* A pack of n items (item i: i bytes of 'a' + i), as estream.c writes
 * it: a u32 length each, little endian, then the bytes. Its length in
 * *len, the items' bytes in *bytes. */
static uint8_t *
pack(uint32_t n, size_t *len, int64_t *bytes)
{
	uint8_t *p = malloc(n * 4u + (size_t)n * n / 2 + 64), *at = p;

	ck_assert_ptr_nonnull(p);
	*bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		br_put32(at, i);
		memset(at + 4, 'a' + (int)(i % 26), i);
		at += 4 + i;
		*bytes += i;
	}
	*len = (size_t)(at - p);
	return p;
}

/* A pack is taken whole (its items' bytes counted), zero-length items
 * too; little endian as written. */
START_TEST(test_pack_round_trip)
{
	uint32_t n = 0;
	int64_t bytes;
	size_t len;
	uint8_t *p = pack(100, &len, &bytes), le[4];

	ck_assert_int_eq(br_pack_check(p, len, "100", &n), bytes);
	ck_assert_uint_eq(n, 100);
	ck_assert_int_eq(br_pack_check(p, 4, "1", &n), 0);	/* one empty item */
	br_put32(le, 0x01020304u);
	ck_assert(le[0] == 4 && le[1] == 3 && le[2] == 2 && le[3] == 1);
	ck_assert_uint_eq(br_get32(le), 0x01020304u);
	free(p);
}
END_TEST

/* The count must be the items there are, in decimal, 1 to BR_PACK_MAX:
 * fewer leaves bytes after the last, more runs past the end. */
START_TEST(test_pack_count)
{
	static const char *const bad[] = {
		"99", "101", "0", "", "-100", "+100", "0100", "100 ", " 100", "1e2", "4097",
		"18446744073709551716",
	};
	uint32_t n;
	int64_t bytes;
	size_t len;
	uint8_t *p = pack(100, &len, &bytes);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(br_pack_check(p, len, bad[i], &n) == -1, "count '%s' taken", bad[i]);
	free(p);
	p = pack(BR_PACK_MAX, &len, &bytes);
	ck_assert_int_eq(br_pack_check(p, len, "4096", &n), bytes);
	ck_assert_uint_eq(n, BR_PACK_MAX);
	free(p);
}
END_TEST

/* Every length is checked against what is left: a pack cut anywhere, or
 * an item that claims more than there is (up to 4 GiB), is refused. */
START_TEST(test_pack_bad_lengths)
{
	uint32_t n;
	int64_t bytes;
	size_t len;
	uint8_t *p = pack(10, &len, &bytes);

	for (size_t cut = 0; cut < len; cut++)
		ck_assert_msg(br_pack_check(p, cut, "10", &n) == -1, "cut at %zu taken", cut);
	br_put32(p + 4 + 0 + 4 + 1, 0xffffffffu);	/* item 2's length */
	ck_assert_int_eq(br_pack_check(p, len, "10", &n), -1);
	br_put32(p + 4 + 0 + 4 + 1, 3);			/* one more than it has */
	ck_assert_int_eq(br_pack_check(p, len, "10", &n), -1);
	ck_assert_int_eq(br_pack_check(p, 3, "1", &n), -1);	/* no room for a length */
	free(p);
}
END_TEST

/* libnats's messages need the library open (natsMsg_Destroy). */
static void
setup(void)
{
	ck_assert_int_eq(nats_Open(-1), NATS_OK);
}

Suite *suite_natsbatch(void);

Suite *
suite_natsbatch(void)
{
	Suite *s = suite_create("natsbatch");
	TCase *tc = tcase_create("wire");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_answers);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_count);
	tcase_add_test(tc, test_bad_lengths);
	tcase_add_test(tc, test_bad_headers);
	tcase_add_test(tc, test_put_refuses);
	tcase_add_test(tc, test_alone_and_entry);
	tcase_add_test(tc, test_max);
	tcase_add_test(tc, test_pack_round_trip);
	tcase_add_test(tc, test_pack_count);
	tcase_add_test(tc, test_pack_bad_lengths);
	suite_add_tcase(s, tc);
	return s;
}
