/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics (proto/topic.h): geometry and HP_MSG_TOPIC with every refusal;
 * each policy against a subscriber that stops reading (block refuses,
 * then overruns; drop-oldest and latest learn exactly what they lost);
 * the retained start; what a read-only party cannot do, a subscriber
 * scribbling its own cursor, a writer scribbling the topic (fuzzed);
 * the wakes both ways, across threads; one writer and three readers in
 * four processes. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/doorbell.h"
#include "proto/postcard.h"
#include "proto/topic.h"

/* -- helpers --------------------------------------------------------------- */

static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static uint64_t
fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Event seq: its sequence, bytes from it, a checksum of all before. */
static size_t
ev_fill(uint8_t *b, uint64_t seq, size_t max)
{
	size_t len = 16 + (size_t)(seq % (max - 15));
	uint64_t h;

	memcpy(b, &seq, 8);
	for (size_t i = 8; i < len - 8; i++)
		b[i] = (uint8_t)(seq * 31 + i);
	h = fnv(b, len - 8);
	memcpy(b + len - 8, &h, 8);
	return len;
}

/* 1 when b is event seq whole. */
static int
ev_ok(const uint8_t *b, size_t len, uint64_t seq)
{
	uint64_t s, h;

	if (len < 16)
		return 0;
	memcpy(&s, b, 8);
	memcpy(&h, b + len - 8, 8);
	return s == seq && h == fnv(b, len - 8);
}

struct topic {
	struct hp_topic_geom	g;
	int			fd;	/* read-write, as hubd keeps it */
	struct hp_topic_writer	w;
};

static void
topic_open(struct topic *t, uint32_t slots, uint32_t event_max)
{
	struct hp_topic_map m;
	const char *why = "";

	t->g.slots = slots;
	t->g.event_max = event_max;
	ck_assert_msg(hp_topic_create("t", &t->g, &t->fd, &why) == 0, "create: %s", why);
	ck_assert_msg(hp_topic_map(&m, t->fd, &t->g, 1, &why) == 0, "map: %s", why);
	hp_topic_writer_init(&t->w, &m);
}

static void
topic_close(struct topic *t)
{
	hp_topic_writer_free(&t->w);
	close(t->fd);
}

/* A subscription as hubd makes it: the cursor at start, the writer
 * given the cursor read-only and bell end A, r the rest. */
static void
subscribe(struct topic *t, struct hp_topic_reader *r, uint32_t id, uint32_t policy,
	  uint64_t start)
{
	const char *why = "";
	int cfd, cro, tro, bell[2];

	ck_assert_msg(hp_topic_cursor_create("c", start, &cfd, &why) == 0, "cursor: %s", why);
	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	ck_assert_int_ge(cro = hp_topic_reopen_ro(cfd), 0);
	ck_assert_int_ge(tro = hp_topic_reopen_ro(t->fd), 0);
	ck_assert_msg(hp_topic_writer_add(&t->w, id, policy, cro, bell[0], &why) == 0,
		      "writer_add: %s", why);
	ck_assert_msg(hp_topic_reader_init(r, tro, &t->g, cfd, bell[1], policy, &why) == 0,
		      "reader_init: %s", why);
}

static void
publish(struct topic *t, uint64_t seq)
{
	uint8_t b[4096];
	size_t len = ev_fill(b, seq, t->g.event_max);
	int rc = hp_topic_publish(&t->w, b, len, NULL);

	ck_assert_msg(rc == 0, "publish %llu: %d", (unsigned long long)seq, rc);
}

/* The next event must be seq, intact, after lost lost ones. */
static void
expect(struct hp_topic_reader *r, uint64_t seq, uint64_t lost)
{
	uint8_t b[4096];
	struct hp_topic_event ev;
	int rc = hp_topic_next(r, b, sizeof(b), &ev);

	ck_assert_msg(rc == 1, "next, wanting %llu: %d", (unsigned long long)seq, rc);
	ck_assert_msg(ev.seq == seq && ev.lost == lost,
		      "got seq %llu lost %llu, wanted %llu lost %llu",
		      (unsigned long long)ev.seq, (unsigned long long)ev.lost,
		      (unsigned long long)seq, (unsigned long long)lost);
	ck_assert_msg(ev_ok(b, ev.len, seq), "event %llu is not intact",
		      (unsigned long long)seq);
}

static void
expect_none(struct hp_topic_reader *r)
{
	uint8_t b[4096];
	struct hp_topic_event ev;
	int rc = hp_topic_next(r, b, sizeof(b), &ev);

	ck_assert_msg(rc == 0, "next with nothing new: %d (seq %llu)", rc,
		      (unsigned long long)ev.seq);
	ck_assert_int_eq(hp_topic_ready(r), 0);
}

static void
figures(struct hp_topic_reader *r, uint64_t read, uint64_t received, uint64_t lost)
{
	struct hp_topic_figures f;

	hp_topic_cursor_read(&r->cur, &f);
	ck_assert_msg(f.read == read && f.received == received && f.lost == lost,
		      "cursor read %llu received %llu lost %llu, wanted %llu %llu %llu",
		      (unsigned long long)f.read, (unsigned long long)f.received,
		      (unsigned long long)f.lost, (unsigned long long)read,
		      (unsigned long long)received, (unsigned long long)lost);
}

/* -- geometry and the message ---------------------------------------------- */

START_TEST(test_geometry)
{
	static const struct {
		uint32_t	slots, event_max;
		int		ok;
	} c[] = {
		{ 2, 8, 1 }, { 65536, 8, 1 }, { 64, 4096, 1 }, { 128, 1u << 20, 1 }, { 256, 1u << 20, 0 },
		{ 0, 8, 0 }, { 1, 8, 0 }, { 3, 8, 0 }, { 48, 8, 0 }, { 131072, 8, 0 },
		{ 4, 7, 0 }, { 4, 0, 0 }, { 4, (1u << 20) + 1, 0 },
		{ 65536, 4096, 0 },	/* over 256 MiB */
	};
	struct hp_topic_geom g = { 4, 48 };
	const char *why;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct hp_topic_geom x = { c[i].slots, c[i].event_max };

		why = NULL;
		ck_assert_msg((hp_topic_geom_check(&x, &why) == 0) == c[i].ok,
			      "slots %u event_max %u", x.slots, x.event_max);
		ck_assert(c[i].ok || why != NULL);
	}
	ck_assert_uint_eq(hp_topic_slot_size(&g), 64);
	g.event_max = 49;
	ck_assert_uint_eq(hp_topic_slot_size(&g), 128);
	ck_assert_uint_eq(hp_topic_size(&g), sizeof(struct hp_topic_hdr) + 4 * 128);
	ck_assert_str_eq(hp_topic_policy_name(HP_TOPIC_DROP_OLDEST), "drop-oldest");
	ck_assert_int_eq(hp_topic_policy_parse("block"), HP_TOPIC_BLOCK);
	ck_assert_int_eq(hp_topic_policy_parse("latest"), HP_TOPIC_LATEST);
	ck_assert_int_eq(hp_topic_policy_parse("Latest"), -1);
	ck_assert_int_eq(hp_topic_policy_parse(""), -1);
}
END_TEST

static struct hp_topic_msg
msg_of(uint32_t op)
{
	struct hp_topic_msg m;

	memset(&m, 0, sizeof(m));
	m.op = op;
	m.topic = 7;
	m.sub = 3;
	m.policy = HP_TOPIC_LATEST;
	m.flags = HP_TOPIC_RETAIN;
	m.block_ms = 1000;
	m.geom.slots = 64;
	m.geom.event_max = 4096;
	strcpy(m.name, "sensors.temp");
	strcpy(m.sig, "str,f64");
	strcpy(m.reason, "publisher gone");
	return m;
}

/* A topic's signature: arguments only, no channel. */
START_TEST(test_signature)
{
	static const char *const good[] = { "str", "u64,list<str>", "", "map<str,f64>,opt<u64>" };
	static const char *const bad[] = { "u64->str", "chan<u64>", "str,chan<bytes>", "list<",
					   "nope" };
	struct hp_sig sig;
	const char *why;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(hp_topic_sig_parse(good[i], &sig, &why) == 0, "%s refused", good[i]);
	ck_assert(hp_topic_sig_parse("u64,list<str>", &sig, NULL) == 0 && sig.nargs == 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(hp_topic_sig_parse(bad[i], &sig, &why) == -EINVAL && why != NULL,
			      "%s taken", bad[i]);
	}
}
END_TEST

START_TEST(test_msg_round_trip)
{
	static const uint32_t ops[] = { HP_TOPIC_WRITE, HP_TOPIC_READER, HP_TOPIC_READER_GONE,
					HP_TOPIC_READ, HP_TOPIC_SIGNATURE, HP_TOPIC_END };
	uint8_t buf[1024];
	struct hp_topic_msg m, d;
	int64_t n;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		uint32_t op = ops[i];
		int wr = op == HP_TOPIC_WRITE, rd = op == HP_TOPIC_READ;

		m = msg_of(op);
		n = hp_topic_msg_encode(buf, sizeof(buf), &m);
		ck_assert_int_gt(n, 0);
		ck_assert_msg(hp_topic_msg_decode(buf, (size_t)n, &d) == 0, "decode op %u", op);
		ck_assert_uint_eq(d.op, op);
		ck_assert_uint_eq(d.topic, 7);
		ck_assert_uint_eq(d.sub, wr || op == HP_TOPIC_SIGNATURE ? 0 : 3);
		ck_assert_uint_eq(d.policy, op == HP_TOPIC_READER || rd ? HP_TOPIC_LATEST : 0);
		ck_assert_uint_eq(d.flags, wr || rd ? HP_TOPIC_RETAIN : 0);
		ck_assert_uint_eq(d.block_ms, wr ? 1000 : 0);
		ck_assert_uint_eq(d.geom.slots, wr || rd ? 64 : 0);
		ck_assert_uint_eq(d.geom.event_max, wr || rd ? 4096 : 0);
		ck_assert_str_eq(d.name, wr || rd ? "sensors.temp" : "");
		ck_assert_str_eq(d.sig, wr || rd || op == HP_TOPIC_SIGNATURE ? "str,f64" : "");
		ck_assert_str_eq(d.reason, op == HP_TOPIC_END ? "publisher gone" : "");
		/* every prefix is refused */
		for (int64_t k = 0; k < n; k++)
			ck_assert_msg(hp_topic_msg_decode(buf, (size_t)k, &d) == -EBADMSG,
				      "op %u cut at %lld of %lld", op, (long long)k, (long long)n);
		/* and a byte more */
		buf[n] = 0;
		ck_assert_int_eq(hp_topic_msg_decode(buf, (size_t)n + 1, &d), -EBADMSG);
		/* no room */
		ck_assert_int_eq(hp_topic_msg_encode(buf, (size_t)n - 1, &m), -ENOSPC);
	}
	ck_assert_int_eq(hp_topic_msg_fds(HP_TOPIC_WRITE), 1);
	ck_assert_int_eq(hp_topic_msg_fds(HP_TOPIC_READER), 2);
	ck_assert_int_eq(hp_topic_msg_fds(HP_TOPIC_READ), 3);
	ck_assert_int_eq(hp_topic_msg_fds(HP_TOPIC_READER_GONE), 0);
	ck_assert_int_eq(hp_topic_msg_fds(HP_TOPIC_END), 0);
	ck_assert_int_eq(hp_topic_msg_fds(99), 0);
	m = msg_of(0);
	ck_assert_int_eq(hp_topic_msg_encode(buf, sizeof(buf), &m), -EINVAL);
}
END_TEST

/* m, edited by edit, is refused. */
static void
refused(struct hp_topic_msg m, const char *what)
{
	uint8_t buf[1024];
	struct hp_topic_msg d;
	int64_t n = hp_topic_msg_encode(buf, sizeof(buf), &m);

	ck_assert_msg(n > 0, "%s: encode %lld", what, (long long)n);
	ck_assert_msg(hp_topic_msg_decode(buf, (size_t)n, &d) == -EBADMSG, "%s: accepted", what);
}

/* The READ message of name and sig as raw bytes (what encode would cut). */
static size_t
raw_read(uint8_t *buf, size_t cap, const char *name, size_t nlen, const char *sig,
	 size_t slen)
{
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_u32(&e, HP_TOPIC_READ);
	hp_pc_put_u32(&e, 7);
	hp_pc_put_u32(&e, 3);
	hp_pc_put_u32(&e, HP_TOPIC_BLOCK);
	hp_pc_put_u32(&e, 0);
	hp_pc_put_u32(&e, 64);
	hp_pc_put_u32(&e, 4096);
	hp_pc_put_str(&e, name, nlen);
	hp_pc_put_str(&e, sig, slen);
	ck_assert_int_eq(e.err, 0);
	return e.len;
}

START_TEST(test_msg_refused)
{
	struct hp_topic_msg m, d;
	uint8_t buf[1024];
	char long_name[HP_TOPIC_NAME_MAX + 2];
	size_t n;

	for (uint32_t op = HP_TOPIC_WRITE; op <= HP_TOPIC_END; op++) {
		m = msg_of(op);
		m.topic = 0;
		refused(m, "topic 0");
	}
	/* unknown ops, encoded by hand */
	for (uint32_t op = 0; op < 10; op += 7) {
		struct hp_pc_enc e;

		hp_pc_enc_init(&e, buf, sizeof(buf));
		hp_pc_put_u32(&e, op);
		hp_pc_put_u32(&e, 7);
		hp_pc_put_u32(&e, 3);
		ck_assert_int_eq(hp_topic_msg_decode(buf, e.len, &d), -EBADMSG);
	}
	m = msg_of(HP_TOPIC_READER);
	m.policy = HP_TOPIC_POLICIES;
	refused(m, "READER policy 3");
	m = msg_of(HP_TOPIC_READ);
	m.policy = 77;
	refused(m, "READ policy 77");
	m = msg_of(HP_TOPIC_READ);
	m.geom.slots = 48;
	refused(m, "READ slots 48");
	m = msg_of(HP_TOPIC_WRITE);
	m.geom.event_max = 4;
	refused(m, "WRITE event_max 4");
	m = msg_of(HP_TOPIC_WRITE);
	m.geom.slots = 65536;
	m.geom.event_max = 1u << 20;
	refused(m, "WRITE over 256 MiB");
	m = msg_of(HP_TOPIC_WRITE);
	m.flags = 2;
	refused(m, "WRITE unknown flag");
	m = msg_of(HP_TOPIC_READ);
	m.name[0] = '\0';
	refused(m, "READ empty name");
	/* a NUL inside the name, too long, not UTF-8 */
	n = raw_read(buf, sizeof(buf), "a\0b", 3, "", 0);
	ck_assert_int_eq(hp_topic_msg_decode(buf, n, &d), -EBADMSG);
	n = raw_read(buf, sizeof(buf), "ab", 2, "str\0", 4);
	ck_assert_int_eq(hp_topic_msg_decode(buf, n, &d), -EBADMSG);
	memset(long_name, 'x', sizeof(long_name));
	n = raw_read(buf, sizeof(buf), long_name, HP_TOPIC_NAME_MAX + 1, "", 0);
	ck_assert_int_eq(hp_topic_msg_decode(buf, n, &d), -EBADMSG);
	n = raw_read(buf, sizeof(buf), long_name, HP_TOPIC_NAME_MAX, "", 0);
	ck_assert_int_eq(hp_topic_msg_decode(buf, n, &d), 0);
	n = raw_read(buf, sizeof(buf), "\xc3\x28", 2, "", 0);
	ck_assert_int_eq(hp_topic_msg_decode(buf, n, &d), -EBADMSG);
	n = raw_read(buf, sizeof(buf), "ab", 2, "\xff", 1);
	ck_assert_int_eq(hp_topic_msg_decode(buf, n, &d), -EBADMSG);
}
END_TEST

/* -- policies, single process ----------------------------------------------- */

START_TEST(test_block)
{
	struct topic t;
	struct hp_topic_reader b, d;
	uint8_t ev[64];
	uint32_t blocker = 99;

	topic_open(&t, 4, 64);
	subscribe(&t, &d, 1, HP_TOPIC_DROP_OLDEST, 0);
	subscribe(&t, &b, 2, HP_TOPIC_BLOCK, 0);
	for (uint64_t s = 0; s < 4; s++)
		publish(&t, s);
	/* the fifth needs the slot b has not read */
	ck_assert_int_eq(hp_topic_writer_room(&t.w), 0);
	ck_assert_int_eq(hp_topic_publish(&t.w, ev, ev_fill(ev, 4, 64), &blocker), -EAGAIN);
	ck_assert_uint_eq(blocker, 1);
	ck_assert_uint_eq(hp_topic_claimed(&t.w.map), 4);
	/* too big for a slot: refused whatever the room */
	ck_assert_int_eq(hp_topic_publish(&t.w, ev, 65, NULL), -EMSGSIZE);
	hp_topic_overrun(&t.w);
	ck_assert_uint_eq(t.w.overruns, 1);
	ck_assert_int_eq(hp_topic_writer_room(&t.w), 1);
	for (uint64_t s = 4; s < 10; s++)
		publish(&t, s);
	/* overrun: it lost exactly 0..5, then has the newest four */
	expect(&b, 6, 6);
	for (uint64_t s = 7; s < 10; s++)
		expect(&b, s, 0);
	expect_none(&b);
	figures(&b, 10, 4, 6);
	/* back within the ring: waited for again */
	for (uint64_t s = 10; s < 14; s++)
		publish(&t, s);
	ck_assert_int_eq(hp_topic_publish(&t.w, ev, ev_fill(ev, 14, 64), &blocker), -EAGAIN);
	ck_assert_uint_eq(blocker, 1);
	expect(&b, 10, 0);
	publish(&t, 14);
	/* the drop-oldest one never held anything up */
	expect(&d, 11, 11);
	hp_topic_reader_free(&b);
	hp_topic_reader_free(&d);
	/* the writer's side of b: gone, nothing waits */
	ck_assert_int_eq(hp_topic_writer_remove(&t.w, 2), 0);
	ck_assert_int_eq(hp_topic_writer_remove(&t.w, 2), -ENOENT);
	for (uint64_t s = 15; s < 30; s++)
		publish(&t, s);
	topic_close(&t);
}
END_TEST

/* The bytes waiting on a bell, read. */
static int
bell_bytes(int fd)
{
	int n = 0;

	ck_assert_int_eq(ioctl(fd, FIONREAD, &n), 0);
	ck_assert_int_eq(hp_doorbell_drain(fd), 0);
	return n;
}

START_TEST(test_drop_oldest)
{
	struct topic t;
	struct hp_topic_reader r;

	topic_open(&t, 8, 200);
	subscribe(&t, &r, 1, HP_TOPIC_DROP_OLDEST, 0);
	expect_none(&r);
	publish(&t, 0);
	expect(&r, 0, 0);
	for (uint64_t s = 1; s < 21; s++)
		publish(&t, s);
	/* lapped: 1..12 gone, the newest eight in order */
	ck_assert_int_eq(hp_topic_ready(&r), 1);
	expect(&r, 13, 12);
	for (uint64_t s = 14; s < 21; s++)
		expect(&r, s, 0);
	expect_none(&r);
	figures(&r, 21, 9, 12);
	/* a writer that waits (for a block subscriber) is not rung by a
	 * drop-oldest one, which it never waits for: that ring was a system
	 * call for nothing, into a bell nobody read */
	publish(&t, 21);
	hp_topic_writer_announce(&t.w);
	expect(&r, 21, 0);
	hp_topic_writer_cancel(&t.w);
	ck_assert_int_eq(bell_bytes(t.w.subs[0].bell), 0);
	hp_topic_reader_free(&r);
	topic_close(&t);
}
END_TEST

START_TEST(test_latest)
{
	struct topic t;
	struct hp_topic_reader r;

	topic_open(&t, 4, 64);
	subscribe(&t, &r, 1, HP_TOPIC_LATEST, 0);
	expect_none(&r);
	for (uint64_t s = 0; s < 5; s++)
		publish(&t, s);
	expect(&r, 4, 4);
	expect_none(&r);
	for (uint64_t s = 5; s < 8; s++)
		publish(&t, s);
	expect(&r, 7, 2);
	publish(&t, 8);
	expect(&r, 8, 0);
	expect_none(&r);
	figures(&r, 9, 3, 6);
	hp_topic_reader_free(&r);
	topic_close(&t);
}
END_TEST

START_TEST(test_retain_start)
{
	struct topic t;
	struct hp_topic_reader ret, plain;

	topic_open(&t, 4, 64);
	for (uint64_t s = 0; s < 3; s++)
		publish(&t, s);
	/* hubd starts a retain topic's subscriber on the newest event */
	subscribe(&t, &ret, 1, HP_TOPIC_DROP_OLDEST, hp_topic_claimed(&t.w.map) - 1);
	subscribe(&t, &plain, 2, HP_TOPIC_BLOCK, hp_topic_claimed(&t.w.map));
	ck_assert_int_eq(hp_topic_ready(&ret), 1);
	expect(&ret, 2, 0);
	expect_none(&ret);
	expect_none(&plain);
	publish(&t, 3);
	expect(&ret, 3, 0);
	expect(&plain, 3, 0);
	hp_topic_reader_free(&ret);
	hp_topic_reader_free(&plain);
	topic_close(&t);
}
END_TEST

/* -- what a party may not do ------------------------------------------------- */

/* In a child: whether fd reopens read-write through /proc (as nobody,
 * if root: root opens anything; dumpable again, or /proc/self/fd would
 * refuse it whatever the file's mode). */
static int
reopens_rw(int fd)
{
	char path[64];
	pid_t p;
	int st, f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((p = fork()) == 0) {
		if (getuid() == 0 && setresuid(65534, 65534, 65534) != 0)
			_exit(2);
		if (prctl(PR_SET_DUMPABLE, 1) != 0)
			_exit(4);
		f = open(path, O_RDWR);
		_exit(f >= 0 ? 1 : errno == EACCES ? 0 : 3);
	}
	ck_assert_int_eq(waitpid(p, &st, 0), p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

START_TEST(test_read_only)
{
	struct topic t;
	struct hp_topic_map m;
	struct hp_cursor_map cm;
	const char *why;
	int ro, cfd, cro, fd, rc;
	void *p;

	topic_open(&t, 4, 64);
	ck_assert_int_ge(ro = hp_topic_reopen_ro(t.fd), 0);
	ck_assert_int_eq(fcntl(ro, F_GETFL) & O_ACCMODE, O_RDONLY);
	why = NULL;
	rc = hp_topic_map(&m, ro, &t.g, 1, &why);
	ck_assert_msg(rc == -EACCES, "writable map of the ro fd: %d", rc);
	ck_assert_msg(hp_topic_map(&m, ro, &t.g, 0, &why) == 0, "ro map: %s", why);
	ck_assert_int_ne(mprotect(m.base, m.size, PROT_READ | PROT_WRITE), 0);
	ck_assert_int_eq(errno, EACCES);
	p = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
	ck_assert(p == MAP_FAILED);
	ck_assert_int_ne(ftruncate(ro, 0), 0);
	ck_assert_int_ne(ftruncate(t.fd, 0), 0);	/* sealed, even rw */
	ck_assert_int_ne(fcntl(ro, F_ADD_SEALS, F_SEAL_WRITE), 0);
	ck_assert_int_ne(fcntl(t.fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
	ck_assert_int_ne(write(ro, "x", 1), 1);
	/* a plain memfd does reopen so (the check below means something) */
	ck_assert_int_ge(fd = memfd_create("plain", MFD_CLOEXEC), 0);
	ck_assert_int_eq(reopens_rw(fd), 1);
	close(fd);
	ck_assert_msg(reopens_rw(ro) == 0, "the topic reopens writable through /proc");
	hp_topic_unmap(&m);
	close(ro);
	/* the cursor: read-only for the writer */
	ck_assert_int_eq(hp_topic_cursor_create("c", 5, &cfd, &why), 0);
	ck_assert_int_ge(cro = hp_topic_reopen_ro(cfd), 0);
	ck_assert_int_eq(hp_cursor_map(&cm, cro, 1, &why), -EACCES);
	ck_assert_int_eq(hp_cursor_map(&cm, cro, 0, &why), 0);
	ck_assert_uint_eq(hp_load_relaxed_u64(&cm.c->read), 5);
	ck_assert_int_ne(mprotect(cm.c, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE), 0);
	ck_assert_msg(reopens_rw(cro) == 0, "the cursor reopens writable through /proc");
	hp_cursor_unmap(&cm);
	close(cro);
	close(cfd);
	/* a memory not as said is never mapped: size, seals */
	t.g.slots = 8;
	ck_assert_int_eq(hp_topic_map(&m, t.fd, &t.g, 0, &why), -EBADMSG);
	t.g.slots = 4;
	ck_assert_int_ge(fd = memfd_create("u", MFD_CLOEXEC | MFD_ALLOW_SEALING), 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)hp_topic_size(&t.g)), 0);
	ck_assert_int_eq(hp_topic_map(&m, fd, &t.g, 0, &why), -EBADMSG);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	ck_assert_int_eq(hp_topic_map(&m, fd, &t.g, 0, &why), -EBADMSG);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL), 0);
	ck_assert_int_eq(hp_topic_map(&m, fd, &t.g, 0, &why), 0);
	hp_topic_unmap(&m);
	close(fd);
	topic_close(&t);
}
END_TEST

START_TEST(test_cursor_scribbled)
{
	static const uint64_t garbage[] = { UINT64_MAX, 0, 1ull << 62, 12345 };
	struct topic t;
	struct hp_topic_reader bad, good, drop;
	uint8_t ev[64];
	uint64_t s = 0, x = 42;

	topic_open(&t, 4, 64);
	subscribe(&t, &bad, 1, HP_TOPIC_DROP_OLDEST, 0);
	subscribe(&t, &good, 2, HP_TOPIC_BLOCK, 0);
	subscribe(&t, &drop, 3, HP_TOPIC_DROP_OLDEST, 0);
	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		/* bad writes its own cursor (its right), nothing else */
		hp_store_relaxed_u64(&bad.cur.c->read, garbage[i]);
		hp_store_relaxed_u64(&bad.cur.c->received, rnd(&x));
		hp_store_relaxed_u32(&bad.cur.c->sleeping, (uint32_t)rnd(&x));
		hp_store_relaxed_u32(&bad.cur.c->sleep_gen, (uint32_t)rnd(&x));
		for (int k = 0; k < 3; k++, s++) {
			publish(&t, s);
			expect(&good, s, 0);
			expect(&drop, s, 0);
		}
	}
	/* a block subscriber at garbage: clamped, and overrun like any */
	hp_topic_reader_free(&bad);
	hp_topic_writer_remove(&t.w, 1);
	subscribe(&t, &bad, 1, HP_TOPIC_BLOCK, 0);
	hp_store_relaxed_u64(&bad.cur.c->read, UINT64_MAX);
	for (int k = 0; k < 8; k++, s++) {
		publish(&t, s);
		expect(&good, s, 0);
	}
	hp_store_relaxed_u64(&bad.cur.c->read, 0);
	ck_assert_int_eq(hp_topic_publish(&t.w, ev, ev_fill(ev, s, 64), NULL), -EAGAIN);
	hp_topic_overrun(&t.w);
	publish(&t, s);
	expect(&good, s, 0);
	expect(&drop, s - 3, s - 3 - 12);
	hp_topic_reader_free(&bad);
	hp_topic_reader_free(&good);
	hp_topic_reader_free(&drop);
	topic_close(&t);
}
END_TEST

/* A writer scribbling its topic: its readers answer 0, 1 or -EBADMSG,
 * in their mapping, in a few steps. */
START_TEST(test_topic_scribbled)
{
	struct topic t;
	struct hp_topic_reader r[HP_TOPIC_POLICIES];
	struct hp_topic_event ev;
	uint8_t buf[128];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint64_t took = 0, bad = 0;

	topic_open(&t, 8, 128);
	for (uint32_t p = 0; p < HP_TOPIC_POLICIES; p++)
		subscribe(&t, &r[p], p + 1, p, 0);
	/* the writer does not wait for its block subscriber here */
	t.w.subs[0].policy = HP_TOPIC_DROP_OLDEST;
	for (int round = 0; round < 5000; round++) {
		uint8_t *base = t.w.map.base;
		size_t size = t.w.map.size;
		uint64_t v = rnd(&x), n = v % 8;

		for (uint64_t k = 0; k < n; k++) {
			uint64_t w = rnd(&x);
			size_t at = (size_t)(rnd(&x) % (size / 8)) * 8;
			struct hp_topic_hdr *h = (struct hp_topic_hdr *)(void *)base;
			struct hp_topic_slot *sl = (struct hp_topic_slot *)(void *)(base +
			    sizeof(*h) + (rnd(&x) % 8) * hp_topic_slot_size(&t.g));

			switch (w % 6) {
			case 0:		/* anywhere */
				memcpy(base + at, &w, 8);
				break;
			case 1:		/* the claim, near or far */
				hp_store_relaxed_u64(&h->claim, w % 3 ? r[0].read + w % 20 : w);
				break;
			case 2:		/* a version the reader wants, any length */
				hp_store_relaxed_u64(&sl->ver, 2 * r[w % 3].read + 2);
				hp_store_relaxed_u32(&sl->len, (uint32_t)(w >> 8));
				break;
			case 3:		/* a length */
				hp_store_relaxed_u32(&sl->len, (uint32_t)(w >> 8) % 256);
				break;
			case 4:		/* a version */
				hp_store_relaxed_u64(&sl->ver, w % 2 ? w : w % 64);
				break;
			default:	/* events, as a writer would */
				(void)hp_topic_publish(&t.w, buf, (size_t)(w % 129), NULL);
				break;
			}
		}
		for (uint32_t p = 0; p < HP_TOPIC_POLICIES; p++) {
			int rc = hp_topic_next(&r[p], buf, sizeof(buf), &ev);

			ck_assert_msg(rc == 0 || rc == 1 || rc == -EBADMSG,
				      "round %d policy %u: %d", round, p, rc);
			ck_assert_msg(rc != 1 || ev.len <= 128, "length %zu", ev.len);
			took += rc == 1;
			bad += rc == -EBADMSG;
			rc = p == 0 ? hp_topic_reader_announce(&r[p]) : hp_topic_ready(&r[p]);
			ck_assert_int_ge(rc, 0);
			ck_assert_int_le(rc, 1);
			hp_topic_reader_awake(&r[p]);
		}
	}
	/* the scribbles reached both paths */
	ck_assert_msg(took > 0 && bad > 0, "took %llu, spoiled %llu", (unsigned long long)took,
		      (unsigned long long)bad);
	for (uint32_t p = 0; p < HP_TOPIC_POLICIES; p++)
		hp_topic_reader_free(&r[p]);
	topic_close(&t);
}
END_TEST

/* -- wakes -------------------------------------------------------------------- */

START_TEST(test_wake_steps)
{
	struct topic t;
	struct hp_topic_reader r;
	uint8_t ev[64];
	int bell_a;

	topic_open(&t, 2, 64);
	subscribe(&t, &r, 1, HP_TOPIC_BLOCK, 0);
	bell_a = t.w.subs[0].bell;
	/* awake: no ring */
	publish(&t, 0);
	ck_assert_int_eq(hp_doorbell_wait(r.bell, 0), 0);
	expect(&r, 0, 0);
	/* asleep: one ring for one sleep, however many events */
	ck_assert_int_eq(hp_topic_reader_announce(&r), 0);
	publish(&t, 1);
	publish(&t, 2);
	ck_assert_uint_eq(t.w.subs[0].rings, 1);
	ck_assert_int_eq(hp_doorbell_wait(r.bell, 0), 1);
	hp_topic_reader_awake(&r);
	/* something came meanwhile: announce says do not sleep */
	ck_assert_int_eq(hp_topic_reader_announce(&r), 1);
	hp_topic_reader_awake(&r);
	/* the writer waits for room: rung when r moves */
	ck_assert_int_eq(hp_topic_publish(&t.w, ev, ev_fill(ev, 3, 64), NULL), -EAGAIN);
	hp_topic_writer_announce(&t.w);
	ck_assert_int_eq(hp_topic_writer_room(&t.w), 0);
	expect(&r, 1, 0);
	ck_assert_int_eq(hp_doorbell_wait(bell_a, 0), 1);
	ck_assert_int_eq(hp_topic_writer_room(&t.w), 1);
	hp_topic_writer_cancel(&t.w);
	/* not waiting: not rung */
	expect(&r, 2, 0);
	ck_assert_int_eq(hp_doorbell_wait(bell_a, 0), 0);
	/* a wait is rung once, however many events r takes meanwhile
	 * (a ring each was a system call each); the next wait again */
	for (uint64_t wait = 0; wait < 2; wait++) {
		publish(&t, 3 + 2 * wait);
		publish(&t, 4 + 2 * wait);
		ck_assert_int_eq(hp_topic_publish(&t.w, ev, ev_fill(ev, 5, 64), NULL), -EAGAIN);
		hp_topic_writer_announce(&t.w);
		expect(&r, 3 + 2 * wait, 0);
		expect(&r, 4 + 2 * wait, 0);
		ck_assert_int_eq(bell_bytes(bell_a), 1);
		hp_topic_writer_cancel(&t.w);
	}
	/* a subscriber that hung up asleep: its bell is rung no more, and
	 * kept open (a poller finds it hung up, not a reused number) */
	ck_assert_int_eq(hp_topic_reader_announce(&r), 0);
	hp_topic_reader_free(&r);
	publish(&t, 3);
	ck_assert_int_eq(t.w.subs[0].hung, 1);
	ck_assert_int_ge(t.w.subs[0].bell, 0);
	ck_assert_uint_eq(t.w.subs[0].rings, 2);
	publish(&t, 4);
	ck_assert_uint_eq(t.w.subs[0].rings, 2);
	ck_assert_int_eq(hp_topic_reader_init(&r, -1, &t.g, -1, -1, 9, NULL), -EINVAL);
	topic_close(&t);
}
END_TEST

#define WAKE_EVENTS	20000

struct side {
	struct topic		*t;
	struct hp_topic_reader	*r;
	uint64_t		got, sleeps, stuck;
	int			bad;
};

/* Sleeps on fd until rung; a wake lost would leave it there: 20 s of
 * nothing counts as stuck (never a time assertion that passes slowly). */
static int
sleep_on(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int rc = poll(&p, 1, 20000);

	if (rc == 1)
		(void)hp_doorbell_drain(fd);
	return rc == 1;
}

static void *
reader_thread(void *arg)
{
	struct side *s = arg;
	struct hp_topic_event ev;
	uint8_t b[64];

	while (s->got < WAKE_EVENTS && s->stuck == 0) {
		int rc = hp_topic_next(s->r, b, sizeof(b), &ev);

		if (rc == 1) {
			if (ev.seq != s->got || ev.lost != 0 || !ev_ok(b, ev.len, ev.seq))
				s->bad++;
			s->got = ev.seq + 1;
			continue;
		}
		if (rc != 0)
			s->bad++;
		if (hp_topic_reader_announce(s->r) == 0) {
			s->sleeps++;
			if (!sleep_on(s->r->bell))
				s->stuck++;
		}
		hp_topic_reader_awake(s->r);
	}
	return NULL;
}

START_TEST(test_wake_threads)
{
	struct topic t;
	struct hp_topic_reader r;
	struct side rs = { 0 };
	pthread_t th;
	uint8_t ev[64];
	uint64_t x = 7, waits = 0, stuck = 0;
	uint32_t blocker;

	/* two slots: the writer waits for the reader often, and it for it */
	topic_open(&t, 2, 64);
	subscribe(&t, &r, 1, HP_TOPIC_BLOCK, 0);
	rs.t = &t;
	rs.r = &r;
	ck_assert_int_eq(pthread_create(&th, NULL, reader_thread, &rs), 0);
	for (uint64_t s = 0; s < WAKE_EVENTS && stuck == 0;) {
		size_t len = ev_fill(ev, s, 64);
		int rc = hp_topic_publish(&t.w, ev, len, &blocker);

		if (rc == 0) {
			s++;
			if (rnd(&x) % 16 == 0)
				sched_yield();	/* the reader gets to sleep */
			continue;
		}
		ck_assert_int_eq(rc, -EAGAIN);
		hp_topic_writer_announce(&t.w);
		if (!hp_topic_writer_room(&t.w)) {
			waits++;
			if (!sleep_on(t.w.subs[blocker].bell))
				stuck++;
		}
		hp_topic_writer_cancel(&t.w);
	}
	pthread_join(th, NULL);
	ck_assert_msg(stuck == 0 && rs.stuck == 0, "lost wakes: writer %llu, reader %llu",
		      (unsigned long long)stuck, (unsigned long long)rs.stuck);
	ck_assert_msg(rs.got == WAKE_EVENTS && rs.bad == 0, "reader got %llu, %d bad",
		      (unsigned long long)rs.got, rs.bad);
	/* both sides slept (else the test proved nothing): the figures */
	ck_assert_msg(rs.sleeps > 0 && waits > 0, "reader slept %llu, writer waited %llu",
		      (unsigned long long)rs.sleeps, (unsigned long long)waits);
	hp_topic_reader_free(&r);
	topic_close(&t);
}
END_TEST

/* -- processes ----------------------------------------------------------------- */

#define PROC_EVENTS	100000
#define READERS		3

static pid_t kids[READERS];

static void
reap_kids(void)
{
	for (int i = 0; i < READERS; i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
}

/* What a reader process found. */
struct tally {
	uint64_t	received, lost, last, bad, order, stuck;
};

static void
read_all(struct hp_topic_reader *r, struct tally *out)
{
	struct hp_topic_event ev;
	struct tally t = { 0 };
	uint8_t b[256];
	int have = 0;

	while (!have || t.last != PROC_EVENTS - 1) {
		int rc = hp_topic_next(r, b, sizeof(b), &ev);

		if (rc == 1 || rc == -EBADMSG) {
			if (rc != 1 || !ev_ok(b, ev.len, ev.seq))
				t.bad++;
			if (have && ev.seq <= t.last)
				t.order++;
			t.lost += ev.lost;
			t.received += rc == 1;
			t.last = ev.seq;
			have = 1;
			continue;
		}
		if (hp_topic_reader_announce(r) == 0 && !sleep_on(r->bell) && ++t.stuck > 2)
			break;
		hp_topic_reader_awake(r);
	}
	*out = t;
}

START_TEST(test_processes)
{
	struct topic t;
	struct hp_topic_reader r[READERS];
	static const uint32_t pol[READERS] = { HP_TOPIC_BLOCK, HP_TOPIC_DROP_OLDEST,
					       HP_TOPIC_LATEST };
	struct tally *res;
	uint8_t ev[256];
	uint64_t stuck = 0;
	uint32_t blocker;
	int st;

	res = mmap(NULL, sizeof(*res) * READERS, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(res != MAP_FAILED);
	memset(res, 0xff, sizeof(*res) * READERS);
	topic_open(&t, 64, 256);
	for (int i = 0; i < READERS; i++)
		subscribe(&t, &r[i], (uint32_t)i + 1, pol[i], 0);
	for (int i = 0; i < READERS; i++) {
		ck_assert_int_ge(kids[i] = fork(), 0);
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			read_all(&r[i], &res[i]);
			_exit(0);
		}
	}
	for (int i = 0; i < READERS; i++)
		hp_topic_reader_free(&r[i]);
	for (uint64_t s = 0; s < PROC_EVENTS && stuck == 0;) {
		int rc = hp_topic_publish(&t.w, ev, ev_fill(ev, s, 256), &blocker);

		if (rc == 0) {
			s++;
			continue;
		}
		ck_assert_int_eq(rc, -EAGAIN);
		ck_assert_uint_eq(blocker, 0);
		hp_topic_writer_announce(&t.w);
		if (!hp_topic_writer_room(&t.w) && !sleep_on(t.w.subs[blocker].bell))
			stuck++;
		hp_topic_writer_cancel(&t.w);
	}
	ck_assert_msg(stuck == 0, "the writer was never rung by its block reader");
	for (int i = 0; i < READERS; i++) {
		ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
		kids[i] = 0;
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader %d: status %#x", i,
			      st);
	}
	for (int i = 0; i < READERS; i++) {
		struct tally *x = &res[i];
		struct hp_topic_figures f;

		hp_topic_cursor_read(&t.w.subs[i].cur, &f);
		ck_assert_msg(x->bad == 0 && x->order == 0 && x->stuck == 0,
			      "%s: %llu bad, %llu out of order, %llu lost wakes",
			      hp_topic_policy_name(pol[i]), (unsigned long long)x->bad,
			      (unsigned long long)x->order, (unsigned long long)x->stuck);
		ck_assert_msg(x->last == PROC_EVENTS - 1 &&
			      x->received + x->lost == PROC_EVENTS,
			      "%s: last %llu, received %llu + lost %llu",
			      hp_topic_policy_name(pol[i]), (unsigned long long)x->last,
			      (unsigned long long)x->received, (unsigned long long)x->lost);
		ck_assert_msg(f.read == PROC_EVENTS && f.received == x->received &&
			      f.lost == x->lost, "%s: cursor %llu %llu %llu",
			      hp_topic_policy_name(pol[i]), (unsigned long long)f.read,
			      (unsigned long long)f.received, (unsigned long long)f.lost);
	}
	ck_assert_msg(res[0].lost == 0, "block lost %llu", (unsigned long long)res[0].lost);
	munmap(res, sizeof(*res) * READERS);
	topic_close(&t);
}
END_TEST

Suite *suite_topic(void);
Suite *
suite_topic(void)
{
	Suite *s = suite_create("topic");
	TCase *tc = tcase_create("basics");
	TCase *th = tcase_create("threads");
	TCase *pr = tcase_create("processes");

	tcase_add_test(tc, test_geometry);
	tcase_add_test(tc, test_signature);
	tcase_add_test(tc, test_msg_round_trip);
	tcase_add_test(tc, test_msg_refused);
	tcase_add_test(tc, test_block);
	tcase_add_test(tc, test_drop_oldest);
	tcase_add_test(tc, test_latest);
	tcase_add_test(tc, test_retain_start);
	tcase_add_test(tc, test_read_only);
	tcase_add_test(tc, test_cursor_scribbled);
	tcase_add_test(tc, test_topic_scribbled);
	tcase_add_test(tc, test_wake_steps);
	suite_add_tcase(s, tc);
	tcase_set_timeout(th, 120);
	tcase_add_test(th, test_wake_threads);
	tcase_set_tags(th, "tsan");
	suite_add_tcase(s, th);
	tcase_add_checked_fixture(pr, NULL, reap_kids);
	tcase_set_timeout(pr, 120);
	tcase_add_test(pr, test_processes);
	suite_add_tcase(s, pr);
	return s;
}
