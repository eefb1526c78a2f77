/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* topicguest: a guest for the topics' tests (tests/e2e/check_topics.c).
 * --as=NAME is its guest name (its methods are NAME.*); then any of:
 *   --pub=TOPIC [--sig=SIG] [--retain]
 *		publishes TOPIC (SIG: u64, the default, or str); registers
 *		NAME.burst (u64,u64->u64): N events START, START+1, ...
 *		(for str, their decimal text), answering how many went;
 *		and NAME.scribble (->unit): random bytes over the whole of
 *		the topic's memory, as a hostile publisher would; and
 *		NAME.die_writing (->unit): claims the next event and dies
 *		(SIGKILL) before it is written, as a publisher killed inside
 *		guest_publish
 *   --sub=TOPIC [--policy=P] [--pull] [--log]
 *		subscribes (P: block, drop-oldest, latest); with a handler
 *		unless --pull; NAME.stats (->str): "received R lost L bad B
 *		last V"; NAME.read (u64->str): up to N events taken now
 *		(--pull), "V V ... lost=L"; --log writes each event to
 *		stderr: "topicguest NAME: event SEQ lost L: ARGS"
 *   --slow=MS	with --sub: its handler computes MS ms per event first
 *   --scribble-cursor
 *		with --sub: NAME.scribble_cursor (u64->unit) writes the value
 *		over its own cursor's every word (a hostile subscriber)
 *   --wait=METHOD [--wait-ms=MS]
 *		guest_wait_method first: "topicguest NAME: wait METHOD: ok"
 *		(or the error) on stderr, then serves
 *   --poll	serves from a loop of its own (testguest.h's tg_run: poll
 *		on guest_fd, then guest_service), as hub-nats does; NAME.polls
 *		(->u64): how many times that poll returned
 * Each set-up step's failure is told on stderr and ends it (exit 1). */
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest.h"
#include "proto/topic.h"
#include "tests/guests/testguest.h"

static const char *name = "topicguest", *pub, *sig = "u64", *sub_topic, *policy = "drop-oldest";
static const char *wait_method;
static int retain, pull, log_events, wait_ms = -1, scribble_cursor, slow_ms, own_loop;
static int sub_id;
static uint64_t received, lost, bad, last;
static struct guest *guest;

static int
str_sig(void)
{
	return strcmp(sig, "str") == 0;
}

/* An event's arguments as text: each str or u64 of the signature. */
static void
event_text(const struct guest_event *ev, char *out, size_t cap)
{
	size_t pos = 0, o = 0;
	const char *s;
	size_t n;
	uint64_t v;

	out[0] = '\0';
	while (pos < ev->len && o + 1 < cap) {
		if (guest_pc_get_str(ev->data, ev->len, &pos, &s, &n) == 0)
			o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? " " : "", (int)n, s);
		else if (guest_pc_get_u64(ev->data, ev->len, &pos, &v) == 0)
			o += (size_t)snprintf(out + o, cap - o, "%s%" PRIu64, o ? " " : "", v);
		else
			break;
	}
}

static void
count(const struct guest_event *ev)
{
	size_t pos = 0;
	char text[512];

	received++;
	lost += ev->lost;
	bad += ev->bad;
	if (!ev->bad && strncmp(ev->sig, "str", 3) == 0) {
		const char *s;
		size_t n;

		if (guest_pc_get_str(ev->data, ev->len, &pos, &s, &n) == 0)
			last = strtoull(s, NULL, 10);
	} else if (!ev->bad) {
		guest_pc_get_u64(ev->data, ev->len, &pos, &last);
	}
	if (log_events) {
		event_text(ev, text, sizeof(text));
		fprintf(stderr, "topicguest %s: event %" PRIu64 " lost %" PRIu64 "%s: %s\n", name,
			ev->seq, ev->lost, ev->bad ? " bad" : "", text);
	}
}

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void
on_event(struct guest *g, const struct guest_event *ev, void *ctx)
{
	(void)g;
	(void)ctx;
	/* awake, not asleep: a handler doing work */
	for (double end = now_ms() + slow_ms; now_ms() < end;)
		;
	count(ev);
}

static void
reply_str(struct guest_call *c, const char *s)
{
	uint8_t buf[4200];
	size_t n = 0;

	guest_pc_put_str(buf, sizeof(buf), &n, s, strlen(s));
	guest_reply(c, buf, n);
}

static void
burst(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint64_t start, n, ok = 0;
	size_t pos = 0, en;
	uint8_t ev[64], res[16];
	char text[32];

	(void)ctx;
	guest_pc_get_u64(args, len, &pos, &n);
	guest_pc_get_u64(args, len, &pos, &start);
	for (uint64_t i = 0; i < n; i++) {
		int rc;

		en = 0;
		if (str_sig()) {
			snprintf(text, sizeof(text), "%" PRIu64, start + i);
			guest_pc_put_str(ev, sizeof(ev), &en, text, strlen(text));
		} else {
			guest_pc_put_u64(ev, sizeof(ev), &en, start + i);
		}
		if ((rc = guest_publish(guest, pub, ev, en)) != 0)
			fprintf(stderr, "topicguest %s: publish: %s\n", name, strerror(-rc));
		else
			ok++;
	}
	en = 0;
	guest_pc_put_u64(res, sizeof(res), &en, ok);
	guest_reply(c, res, en);
}

/* The whole of a mapping of ours whose name holds what, as /proc says. */
static uint8_t *
mapping(const char *what, size_t *size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;
	uint8_t *at = NULL;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, what) != NULL && strstr(line, " rw") != NULL &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			at = (uint8_t *)lo;
			*size = hi - lo;
			break;
		}
	if (f != NULL)
		fclose(f);
	return at;
}

static void
scribble(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char what[128];
	size_t size = 0;
	uint8_t *m;

	(void)args;
	(void)len;
	(void)ctx;
	snprintf(what, sizeof(what), "hub-topic:%s", pub);
	if ((m = mapping(what, &size)) == NULL) {
		guest_reply_error(c, "no mapping of the topic");
		return;
	}
	for (size_t i = 0; i < size; i++)
		m[i] = (uint8_t)random();
	guest_reply(c, NULL, 0);
}

static void
die_writing(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char what[128];
	size_t size = 0;
	uint8_t *m;
	struct hp_topic_hdr *h;
	struct hp_topic_geom geom;
	struct hp_topic_slot *sl;
	uint64_t seq;

	(void)args;
	(void)len;
	(void)ctx;
	snprintf(what, sizeof(what), "hub-topic:%s", pub);
	if ((m = mapping(what, &size)) == NULL) {
		guest_reply_error(c, "no mapping of the topic");
		return;
	}
	/* our own topic: its header's geometry is the one hubd made */
	h = (struct hp_topic_hdr *)(void *)m;
	geom = (struct hp_topic_geom){ h->slots, h->event_max };
	seq = hp_fetch_add_u64(&h->claim, 1, memory_order_acq_rel);
	sl = (struct hp_topic_slot *)(void *)(m + sizeof(*h) +
	    (seq & (geom.slots - 1)) * hp_topic_slot_size(&geom));
	hp_store_release_u64(&sl->ver, 2 * seq + 1);
	raise(SIGKILL);
}

static void
scribble_own_cursor(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char what[128];
	size_t size = 0, pos = 0;
	uint64_t v = 0;
	uint64_t *m;

	(void)ctx;
	guest_pc_get_u64(args, len, &pos, &v);
	snprintf(what, sizeof(what), "hub-cursor:%s", sub_topic);
	if ((m = (uint64_t *)(void *)mapping(what, &size)) == NULL) {
		guest_reply_error(c, "no mapping of the cursor");
		return;
	}
	for (size_t i = 0; i < size / 8; i++)
		m[i] = v;
	guest_reply(c, NULL, 0);
}

static void
stats(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char text[200];

	(void)args;
	(void)len;
	(void)ctx;
	snprintf(text, sizeof(text), "received %" PRIu64 " lost %" PRIu64 " bad %" PRIu64
		 " last %" PRIu64, received, lost, bad, last);
	reply_str(c, text);
}

static void
read_now(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	char text[4096];
	uint8_t buf[4096];
	struct guest_event ev;
	uint64_t n = 0, got_lost = 0;
	size_t pos = 0, o = 0;
	int rc;

	(void)ctx;
	guest_pc_get_u64(args, len, &pos, &n);
	text[0] = '\0';
	for (uint64_t i = 0; i < n && o + 64 < sizeof(text); i++) {
		if ((rc = guest_next_event(guest, sub_id, buf, sizeof(buf), &ev, 0)) != 1)
			break;
		count(&ev);
		got_lost += ev.lost;
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%" PRIu64 " ", last);
	}
	snprintf(text + o, sizeof(text) - o, "lost=%" PRIu64, got_lost);
	reply_str(c, text);
}

static void
reg(struct guest *g, const char *method, const char *s, guest_handler fn)
{
	char full[128];
	int rc;

	snprintf(full, sizeof(full), "%s.%s", name, method);
	if ((rc = guest_register(g, full, s, fn, NULL)) != 0)
		errx(1, "register %s: %s", full, strerror(-rc));
}

static unsigned
policy_of(const char *p)
{
	if (strcmp(p, "block") == 0)
		return GUEST_BLOCK;
	if (strcmp(p, "latest") == 0)
		return GUEST_LATEST;
	return GUEST_DROP_OLDEST;
}

int
main(int argc, char *argv[])
{
	const char *why;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "--as=", 5) == 0)
			name = a + 5;
		else if (strncmp(a, "--pub=", 6) == 0)
			pub = a + 6;
		else if (strncmp(a, "--sig=", 6) == 0)
			sig = a + 6;
		else if (strcmp(a, "--retain") == 0)
			retain = 1;
		else if (strncmp(a, "--sub=", 6) == 0)
			sub_topic = a + 6;
		else if (strncmp(a, "--policy=", 9) == 0)
			policy = a + 9;
		else if (strcmp(a, "--pull") == 0)
			pull = 1;
		else if (strcmp(a, "--log") == 0)
			log_events = 1;
		else if (strncmp(a, "--slow=", 7) == 0)
			slow_ms = atoi(a + 7);
		else if (strcmp(a, "--scribble-cursor") == 0)
			scribble_cursor = 1;
		else if (strncmp(a, "--wait=", 7) == 0)
			wait_method = a + 7;
		else if (strncmp(a, "--wait-ms=", 10) == 0)
			wait_ms = atoi(a + 10);
		else if (strcmp(a, "--poll") == 0)
			own_loop = 1;
	}
	if ((rc = guest_attach(argc, argv, &guest, &why)) != 0)
		errx(1, "%s", why);
	if (wait_method != NULL) {
		rc = guest_wait_method(guest, wait_method, wait_ms);
		fprintf(stderr, "topicguest %s: wait %s: %s\n", name, wait_method,
			rc == 0 ? "ok" : rc == -ETIMEDOUT ? "ETIMEDOUT" : strerror(-rc));
	}
	if (pub != NULL) {
		if ((rc = guest_advertise(guest, pub, sig, retain ? GUEST_TOPIC_RETAIN : 0)) != 0)
			errx(1, "advertise %s: %s", pub, strerror(-rc));
		reg(guest, "burst", "u64,u64->u64", burst);
		reg(guest, "scribble", "->unit", scribble);
		reg(guest, "die_writing", "->unit", die_writing);
	}
	if (sub_topic != NULL) {
		if ((sub_id = guest_subscribe(guest, sub_topic, policy_of(policy),
					      pull ? NULL : on_event, NULL)) < 0)
			errx(1, "subscribe %s: %s", sub_topic, strerror(-sub_id));
		reg(guest, "stats", "->str", stats);
		if (pull)
			reg(guest, "read", "u64->str", read_now);
		if (scribble_cursor)
			reg(guest, "scribble_cursor", "u64->unit", scribble_own_cursor);
	}
	if (own_loop)
		reg(guest, "polls", "->u64", tg_polls_method);
	fprintf(stderr, "topicguest %s: ready\n", name);
	rc = tg_run(guest, argc, argv);
	guest_detach(guest);
	return rc == 0 ? 0 : 1;
}
