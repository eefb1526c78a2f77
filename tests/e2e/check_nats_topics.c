/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics across hubs through hub-nats ([export] topics, [import]
 * topics), with a real nats-server: events published on hub B reach
 * subscribers on hub A in order; a slow drop-oldest subscriber on A loses
 * events while another on A and the publisher on B lose none; events a
 * plain NATS client forges are refused and counted; a topic imported is
 * never exported again; the bridges restart. The guests are topicguest. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nats/nats.h>

#include "tests/e2e/natsd.h"
#include "tests/e2e/natshubs.h"

static struct natsd natsd;
static struct hub_proc hub_a, hub_b, hub_c, hub_d;

#define TG		"exec = @/tests/guests/topicguest\n"
/* A: s1 blocks (loses nothing), s2 pulls (reads only when asked) */
#define A_GUESTS	"[guest s1]\n" TG "args = --as=s1 --sub=tp.ev --policy=block\n" \
			"[guest s2]\n" TG "args = --as=s2 --sub=tp.ev --policy=drop-oldest --pull\n" \
			"[topic tp.ev]\nslots = 256\n"

/* A hub like B, named name, its tp's events of signature sig. B: tp
 * publishes tp.ev (u64), its bridge exports tp.* topics; the ring large
 * enough that B's bridge is never lapped by a burst. */
static void
start_pub(struct hub_proc *h, const char *name, const char *sig, const char *extra)
{
	char *nats = nh_bridge(name, natsd.url, NULL, extra), guests[2048];

	snprintf(guests, sizeof(guests), "[guest tp]\n" TG "args = --as=tp --pub=tp.ev --sig=%s\n"
		 "[topic tp.ev]\nslots = 4096\n%s", sig, nats);
	hub_start_up(h, NULL, guests, "tp,nats");
	free(nats);
}

static void
start_b(const char *extra)
{
	start_pub(&hub_b, "b", "u64", extra);
}

/* A's bridge imports tp.* topics; publishes (its [guest] key) as given. */
static void
start_a(const char *publishes, const char *extra)
{
	char *nats, guests[2048], imp[512];

	snprintf(imp, sizeof(imp), "[import]\ntopics = tp.*\n%s", extra != NULL ? extra : "");
	nats = nh_bridge("a", natsd.url, NULL, imp);
	snprintf(guests, sizeof(guests), A_GUESTS "%s%s%s%s", nats,
		 publishes != NULL ? "publishes = " : "", publishes != NULL ? publishes : "",
		 publishes != NULL ? "\n" : "");
	hub_start_up(&hub_a, NULL, guests, "s1,s2,nats");
	free(nats);
}

/* hubctl call on h, asserted to succeed: its first line (malloc'd). */
static char *
call(struct hub_proc *h, const char *method, const char *a1, const char *a2)
{
	char *out = NULL;
	int rc = nh_ctl(h, &out, method, a1, a2);

	ck_assert_msg(rc == 0, "%s: status %d, '%s'; %s", method, rc, out, hub_log_tail(h));
	return out;
}

/* Waits (20 s) until NAME.stats on h has want. */
static void
wait_stats(struct hub_proc *h, const char *method, const char *want)
{
	char *out = NULL;

	for (double end = now_s() + 20; now_s() < end; sleep_ms(50)) {
		free(out);
		out = call(h, method, NULL, NULL);
		if (strstr(out, want) != NULL)
			break;
	}
	ck_assert_msg(strstr(out, want) != NULL, "%s: '%s', want '%s'; %s", method, out, want,
		      hub_log_tail(h));
	free(out);
}

/* The number after what in a bridge's topics note ("topics 1 out (N
 * sent", "1 in (N published"), 0 if none. */
static unsigned long long
note_count(const char *note, const char *what)
{
	const char *t = strstr(note, "; topics "), *at;

	if (t == NULL || (at = strstr(t, what)) == NULL)
		return 0;
	return strtoull(at + strlen(what), NULL, 10);
}

/* Waits (20 s) until the bridge's note on h has want; the note (static). */
static const char *
wait_note(struct hub_proc *h, const char *want)
{
	const char *note = "";

	for (double end = now_s() + 20; now_s() < end; sleep_ms(50))
		if (strstr(note = nh_note_of(h, "nats"), want) != NULL)
			break;
	ck_assert_msg(strstr(note, want) != NULL, "note: '%s', want '%s'; %s", note, want,
		      hub_log_tail(h));
	return note;
}

/* Waits (20 s) until h's log has what. */
static void
wait_log(struct hub_proc *h, const char *what)
{
	char *log = NULL;

	for (double end = now_s() + 20; now_s() < end; sleep_ms(50)) {
		free(log);
		log = hub_log(h);
		if (strstr(log, what) != NULL)
			break;
	}
	ck_assert_msg(strstr(log, what) != NULL, "no '%s' in the log: %s", what, hub_log_tail(h));
	free(log);
}

/* Both sides set up: A imports tp.ev, and an event of B's reaches s1
 * (events published before A subscribed on NATS are not waited for). */
static void
wait_joined(void)
{
	wait_note(&hub_b, "topics 1 out");
	wait_note(&hub_a, "1 in");
	wait_log(&hub_a, "importing topic tp.ev (u64) from hub b");
	/* A's NATS subscription is made as it advertises: one event goes */
	for (double end = now_s() + 20; now_s() < end; sleep_ms(100)) {
		char *out = call(&hub_b, "tp.burst", "1", "0");

		free(out);
		out = call(&hub_a, "s1.stats", NULL, NULL);
		if (strstr(out, "received 0 ") == NULL) {
			free(out);
			break;
		}
		free(out);
	}
}

/* hub.advertised: B's topics (hubctl, a client, sees them all); the
 * host's own never. */
START_TEST(test_hub_advertised)
{
	char *out = NULL;

	natsd_start(&natsd);
	start_b("[export]\ntopics = tp.*\n");
	hubctl_ok(&hub_b, &out, "call", "hub.advertised", "tp.*", (char *)NULL);
	ck_assert_msg(strstr(out, "tp.ev") != NULL && strstr(out, "u64") != NULL, "%s", out);
	free(out);
	hubctl_ok(&hub_b, &out, "call", "hub.advertised", "*", (char *)NULL);
	ck_assert_msg(strstr(out, "tp.ev") != NULL && strstr(out, "hub.") == NULL, "%s", out);
	free(out);
	hubctl_ok(&hub_b, &out, "call", "hub.advertised", "kv.*", (char *)NULL);
	ck_assert_msg(strstr(out, "tp.ev") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Events of B's tp.ev reach both subscribers on A, in order; then a
 * burst larger than A's ring: s2, which does not read, is lapped and told
 * how many it lost; s1 (block: A's bridge waits for it) and B's publisher
 * and bridge lose none. */
START_TEST(test_events_across_in_order)
{
	char *out, *p;
	const char *note;
	unsigned long long sent, published;
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	natsMsg *m = NULL;
	unsigned long items = 0, msgs = 0, packed = 0;

	natsd_start(&natsd);
	start_b("[export]\ntopics = tp.*\n");
	start_a("tp.*", NULL);
	wait_joined();
	/* what s2 holds so far (the joining events): read and dropped */
	free(call(&hub_a, "s2.read", "1000", NULL));
	out = call(&hub_b, "tp.burst", "40", "1");
	ck_assert_str_eq(out, "40");
	free(out);
	wait_stats(&hub_a, "s1.stats", "last 40");
	/* after any joining events still there (0), 1 to 40 in order */
	out = call(&hub_a, "s2.read", "1000", NULL);
	for (p = out; strncmp(p, "0 ", 2) == 0; p += 2)
		;
	ck_assert_msg(strcmp(p, "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 "
			     "25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 lost=0") == 0,
		      "s2 read: '%s'", out);
	free(out);
	/* 3000 events: B's publisher is never held up (all published at once,
	 * as B's ring is large); s1 gets every one, s2 is lapped. On NATS,
	 * what B's bridge took in one pass went as one pack (Hub-Pack: N),
	 * all 3000 in far fewer messages. */
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "hub.ev.b.tp.ev"), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	out = call(&hub_b, "tp.burst", "3000", "1001");
	ck_assert_str_eq(out, "3000");
	free(out);
	wait_stats(&hub_a, "s1.stats", "last 4000");
	while (items < 3000 && natsSubscription_NextMsg(&m, sub, 10000) == NATS_OK) {
		const char *count = NULL;
		unsigned long n = 1;

		if (natsMsgHeader_Get(m, "Hub-Pack", &count) == NATS_OK && count != NULL)
			n = strtoul(count, NULL, 10);
		items += n;
		msgs++;
		packed = n > packed ? n : packed;
		natsMsg_Destroy(m);
	}
	ck_assert_msg(items == 3000 && packed >= 2 && msgs < 3000,
		      "on NATS: %lu events in %lu messages, the largest pack %lu", items, msgs,
		      packed);
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	out = call(&hub_a, "s1.stats", NULL, NULL);
	ck_assert_msg(strstr(out, "lost 0 bad 0") != NULL, "s1: %s", out);
	free(out);
	out = call(&hub_a, "s2.read", "1000", NULL);
	ck_assert_msg(strstr(out, "lost=0") == NULL && strstr(out, "4000 lost=") != NULL,
		      "s2 was not lapped: %s", out);
	free(out);
	/* what B's bridge sent, A's published: all, none dropped */
	for (double end = now_s() + 20; now_s() < end; sleep_ms(100)) {
		note = nh_note_of(&hub_b, "nats");
		sent = note_count(note, "(");
		ck_assert_msg(strstr(note, " 0 dropped") != NULL, "b: %s", note);
		note = nh_note_of(&hub_a, "nats");
		published = note_count(note, "1 in (");
		ck_assert_msg(strstr(note, " 0 refused, 0 lost") != NULL, "a: %s", note);
		if (sent == published && sent >= 3040)
			break;
	}
	ck_assert_msg(sent == published && sent >= 3040, "b sent %llu, a published %llu", sent,
		      published);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* A plain NATS client publishes on B's event subject: bytes that are not
 * a u64, an event too large, one in the name of a hub that never
 * announced the topic, a pack that is not what it says, and a pack of a
 * good event and a bad one. Each bad one is refused and counted; s1 sees
 * none of them, but the good one; a good event after them still goes. */
START_TEST(test_forged_events_refused)
{
	natsConnection *nc = NULL;
	/* a varint that never ends; a u64 with bytes after it */
	static const char bad1[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
	static const char bad2[] = "\x05\x06\x07";
	/* two events: 88 (a u64), and bad2 */
	static const char pack[] = "\x01\x00\x00\x00\x58" "\x03\x00\x00\x00\x05\x06\x07";
	natsMsg *m = NULL;
	char *out;

	natsd_start(&natsd);
	start_b("[export]\ntopics = tp.*\n");
	start_a("tp.*", NULL);
	wait_joined();
	out = call(&hub_a, "s1.stats", NULL, NULL);
	ck_assert_msg(strstr(out, "bad 0") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	ck_assert_int_eq(natsConnection_Publish(nc, "hub.ev.b.tp.ev", bad1, sizeof(bad1) - 1),
			 NATS_OK);
	ck_assert_int_eq(natsConnection_Publish(nc, "hub.ev.b.tp.ev", bad2, sizeof(bad2) - 1),
			 NATS_OK);
	ck_assert_int_eq(natsConnection_Publish(nc, "hub.ev.b.tp.ev", NULL, 0), NATS_OK);
	ck_assert_int_eq(natsConnection_Publish(nc, "hub.ev.mallory.tp.ev", "\x07", 1), NATS_OK);
	/* packs: one that says 3 events and holds 2 is refused whole; of
	 * a good one, each event is taken or refused alone */
	ck_assert_int_eq(natsMsg_Create(&m, "hub.ev.b.tp.ev", NULL, pack, sizeof(pack) - 1),
			 NATS_OK);
	ck_assert_int_eq(natsMsgHeader_Set(m, "Hub-Pack", "3"), NATS_OK);
	ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
	natsMsg_Destroy(m);
	ck_assert_int_eq(natsMsg_Create(&m, "hub.ev.b.tp.ev", NULL, pack, sizeof(pack) - 1),
			 NATS_OK);
	ck_assert_int_eq(natsMsgHeader_Set(m, "Hub-Pack", "2"), NATS_OK);
	ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
	natsMsg_Destroy(m);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	wait_note(&hub_a, " 6 refused,");
	wait_log(&hub_a, "an event of tp.ev from hub b refused: not of its signature");
	wait_log(&hub_a, "an event of tp.ev from hub mallory refused: a hub that does not "
		 "announce it");
	wait_log(&hub_a, "an event of tp.ev from hub b refused: a malformed pack");
	wait_stats(&hub_a, "s1.stats", "last 88");
	out = call(&hub_b, "tp.burst", "1", "77");
	free(out);
	wait_stats(&hub_a, "s1.stats", "last 77");
	out = call(&hub_a, "s1.stats", NULL, NULL);
	ck_assert_msg(strstr(out, "bad 0") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_peer_int(&hub_a, "nats", "restarts"), 0);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* A's bridge imports tp.ev and exports every topic of its hub: tp.ev,
 * its own, is never announced again, nor its events sent back; without
 * publishes = the log says what to add. */
START_TEST(test_imported_not_exported_again)
{
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	natsMsg *m = NULL;
	int seen_a = 0;

	natsd_start(&natsd);
	start_b("[export]\ntopics = tp.*\n");
	start_a("tp.*", "[export]\ntopics = *\n");
	wait_joined();
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "hub.announce"), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	for (double end = now_s() + 30; now_s() < end && seen_a < 3;) {
		if (natsSubscription_NextMsg(&m, sub, 1000) != NATS_OK)
			continue;
		if (strstr(natsMsg_GetData(m), "\"hub\":\"a\"") != NULL) {
			seen_a++;
			ck_assert_msg(strstr(natsMsg_GetData(m), "tp.ev") == NULL, "a announced: %s",
				      natsMsg_GetData(m));
		}
		natsMsg_Destroy(m);
	}
	ck_assert_int_eq(seen_a, 3);
	wait_note(&hub_a, "topics 0 out");
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	/* no publishes = on A: the log says so */
	start_a(NULL, NULL);
	wait_log(&hub_a, "cannot advertise topic tp.ev: add it to publishes = in hub-nats's "
		 "[guest] section");
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* B and C both export tp.ev: A merges their events into its one topic;
 * D exports it as str, not u64: its events are refused and counted. With
 * from = c, A takes C's alone. */
START_TEST(test_two_hubs_export_one_topic)
{
	char *out;

	natsd_start(&natsd);
	start_b("[export]\ntopics = tp.*\n");
	start_a("tp.*", NULL);
	wait_joined();
	/* after A took B's signature */
	start_pub(&hub_c, "c", "u64", "[export]\ntopics = tp.*\n");
	start_pub(&hub_d, "d", "str", "[export]\ntopics = tp.*\n");
	wait_log(&hub_a, "hub d publishes topic tp.ev as str, here it is u64: its events are "
		 "refused");
	wait_note(&hub_a, "from 3 hub(s)");
	free(call(&hub_a, "s2.read", "1000", NULL));
	free(call(&hub_b, "tp.burst", "5", "1"));
	wait_stats(&hub_a, "s1.stats", "last 5");
	free(call(&hub_c, "tp.burst", "5", "101"));
	wait_stats(&hub_a, "s1.stats", "last 105");
	free(call(&hub_d, "tp.burst", "5", "201"));
	wait_note(&hub_a, " 5 refused,");
	out = call(&hub_a, "s2.read", "1000", NULL);
	ck_assert_msg(strstr(out, "1 2 3 4 5 101 102 103 104 105 lost=0") != NULL, "s2: %s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	/* from = c: B's events no longer reach A */
	start_a("tp.*", "from = c\n");
	wait_note(&hub_a, "from 1 hub(s) (c)");
	wait_log(&hub_a, "importing topic tp.ev (u64) from hub c");
	for (double end = now_s() + 20; now_s() < end; sleep_ms(100)) {
		free(call(&hub_c, "tp.burst", "1", "300"));
		out = call(&hub_a, "s1.stats", NULL, NULL);
		if (strstr(out, "last 300") != NULL)
			break;
		free(out);
		out = NULL;
	}
	ck_assert_msg(out != NULL, "C's events never came; %s", hub_log_tail(&hub_a));
	free(out);
	free(call(&hub_b, "tp.burst", "3", "400"));
	free(call(&hub_c, "tp.burst", "1", "500"));
	wait_stats(&hub_a, "s1.stats", "last 500");
	out = call(&hub_a, "s1.stats", NULL, NULL);
	ck_assert_msg(strstr(out, "lost 0") != NULL, "s1: %s", out);
	free(out);
	out = call(&hub_a, "s2.read", "1000", NULL);
	ck_assert_msg(strstr(out, "400") == NULL && strstr(out, "500 lost=") != NULL, "s2: %s",
		      out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	ck_assert_int_eq(hub_stop(&hub_c), 0);
	ck_assert_int_eq(hub_stop(&hub_d), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Either bridge restarts, then B's publisher: A's subscribers keep
 * their subscriptions, and events flow again. */
START_TEST(test_bridges_restart)
{
	char *out = NULL;
	int pid;

	natsd_start(&natsd);
	start_b("[export]\ntopics = tp.*\n");
	start_a("tp.*", NULL);
	wait_joined();
	free(call(&hub_b, "tp.burst", "10", "101"));
	wait_stats(&hub_a, "s1.stats", "last 110");
	pid = hub_peer_int(&hub_a, "nats", "pid");
	hubctl_ok(&hub_a, NULL, "restart", "nats", (char *)NULL);
	ck_assert_int_gt(hub_wait_new_pid(&hub_a, "nats", pid, 20), 0);
	wait_note(&hub_a, "1 in");
	for (double end = now_s() + 20; now_s() < end; sleep_ms(100)) {
		free(call(&hub_b, "tp.burst", "1", "200"));
		free(out);
		out = call(&hub_a, "s1.stats", NULL, NULL);
		if (strstr(out, "last 200") != NULL)
			break;
	}
	ck_assert_msg(strstr(out, "last 200") != NULL, "after A's bridge restarted: %s; %s", out,
		      hub_log_tail(&hub_a));
	pid = hub_peer_int(&hub_b, "nats", "pid");
	hubctl_ok(&hub_b, NULL, "restart", "nats", (char *)NULL);
	ck_assert_int_gt(hub_wait_new_pid(&hub_b, "nats", pid, 20), 0);
	for (double end = now_s() + 20; now_s() < end; sleep_ms(100)) {
		free(call(&hub_b, "tp.burst", "1", "300"));
		free(out);
		out = call(&hub_a, "s1.stats", NULL, NULL);
		if (strstr(out, "last 300") != NULL)
			break;
	}
	ck_assert_msg(strstr(out, "last 300") != NULL, "after B's bridge restarted: %s; %s", out,
		      hub_log_tail(&hub_b));
	/* B's publisher restarts: its topic is withdrawn, exported again */
	pid = hub_peer_int(&hub_b, "tp", "pid");
	hubctl_ok(&hub_b, NULL, "restart", "tp", (char *)NULL);
	ck_assert_int_gt(hub_wait_new_pid(&hub_b, "tp", pid, 20), 0);
	ck_assert(hub_wait_method(&hub_b, "tp.burst") == 0);
	for (double end = now_s() + 20; now_s() < end; sleep_ms(100)) {
		free(call(&hub_b, "tp.burst", "1", "400"));
		free(out);
		out = call(&hub_a, "s1.stats", NULL, NULL);
		if (strstr(out, "last 400") != NULL)
			break;
	}
	ck_assert_msg(strstr(out, "last 400") != NULL, "after B's publisher restarted: %s; %s",
		      out, hub_log_tail(&hub_b));
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

Suite *suite_nats_topics(void);

Suite *
suite_nats_topics(void)
{
	Suite *s = suite_create("nats_topics");
	TCase *tc = tcase_create("nats_topics");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_hub_advertised);
	tcase_add_test(tc, test_events_across_in_order);
	tcase_add_test(tc, test_forged_events_refused);
	tcase_add_test(tc, test_imported_not_exported_again);
	tcase_add_test(tc, test_bridges_restart);
	tcase_add_test(tc, test_two_hubs_export_one_topic);
	suite_add_tcase(s, tc);
	return s;
}
