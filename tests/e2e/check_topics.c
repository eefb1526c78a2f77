/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics end to end (doc/events.md): each overflow policy with a
 * subscriber that stops reading, publishers and subscribers that die and
 * come back, a retained event across its publisher's restart, the
 * discovery topics across restarts and reloads, guest_wait_method, and
 * hostile subscribers and publishers. The guests are topicguest. */
#include <ctype.h>
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define TG		"exec = @/tests/guests/topicguest\n"
#define PUB(extra)	"[guest pub]\n" TG "args = --as=pub --pub=pub.ev " extra "\n"
#define SUB(n, extra)	"[guest " n "]\n" TG "args = --as=" n " --sub=pub.ev " extra "\n"
#define SMALL		"[topic pub.ev]\nslots = 8\nblock_timeout = 300ms\n"

/* hubctl call method args...: its output (asserted to succeed). */
static char *
call(const char *method, const char *a, const char *b)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "call", method, a, b, (char *)NULL);

	ck_assert_msg(rc == 0, "call %s %s %s: exit %d: %s; log: %s", method, a ? a : "",
		      b ? b : "", rc, out, hub_log_tail(&hub));
	return out;
}

static void
expect(const char *method, const char *a, const char *b, const char *want)
{
	char *out = call(method, a, b);

	ck_assert_msg(strcmp(out, want) == 0, "%s %s %s: '%s', want '%s'; log: %s", method,
		      a ? a : "", b ? b : "", out, want, hub_log_tail(&hub));
	free(out);
}

/* Waits (10 s) until NAME.stats says want. */
static void
expect_stats(const char *guest, const char *want)
{
	char method[64], *out = NULL;

	snprintf(method, sizeof(method), "%s.stats", guest);
	for (double end = now_s() + 10; now_s() < end; sleep_ms(10)) {
		free(out);
		out = call(method, NULL, NULL);
		if (strstr(out, want) != NULL)
			break;
	}
	ck_assert_msg(strstr(out, want) != NULL, "%s: '%s', want '%s'; log: %s", method, out,
		      want, hub_log_tail(&hub));
	free(out);
}

/* Waits (10 s) until the log has what; asserts it. */
static void
expect_log(const char *what)
{
	char *log = NULL;

	for (double end = now_s() + 10; now_s() < end; sleep_ms(20)) {
		free(log);
		log = hub_log(&hub);
		if (strstr(log, what) != NULL)
			break;
	}
	ck_assert_msg(strstr(log, what) != NULL, "no '%s' in the log: %s", what,
		      hub_log_tail(&hub));
	free(log);
}

static int
log_count(const char *what)
{
	char *log = hub_log(&hub), *s = log;
	int n = 0;

	while ((s = strstr(s, what)) != NULL) {
		n++;
		s += strlen(what);
	}
	free(log);
	return n;
}

static void
ctl(const char *cmd, const char *name)
{
	char *out = NULL;

	ck_assert_msg(hubctl(&hub, &out, cmd, name, (char *)NULL) == 0, "hubctl %s %s: %s",
		      cmd, name, out);
	free(out);
}

/* block: the publisher waits for a block subscriber, up to the topic's
 * block_timeout, then overruns one that stopped reading; one that
 * reads loses nothing. */
START_TEST(test_block)
{
	hub_start_up(&hub, NULL, SMALL PUB("") SUB("fast", "--policy=block")
		     SUB("slow", "--policy=block --pull"), "pub,fast,slow");
	ck_assert(hub_wait_method(&hub, "pub.burst,fast.stats,slow.read") == 0);
	expect("pub.burst", "20", "0", "20\n");
	expect_stats("fast", "received 20 lost 0 bad 0 last 19");
	/* overrun after 8: it learns it lost the 12 before the newest 8 */
	expect("slow.read", "100", NULL, "12 13 14 15 16 17 18 19 lost=12\n");
	/* caught up, it is waited for again: a full ring holds up the
	 * publisher (then overruns it) and fast still loses nothing */
	expect("pub.burst", "1000", "20", "1000\n");
	expect_stats("fast", "received 1020 lost 0 bad 0 last 1019");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* pub.polls or s.polls: how often that guest's own loop woke so far. */
static unsigned long long
polls(const char *guest)
{
	char method[64], *out;
	unsigned long long n;

	snprintf(method, sizeof(method), "%s.polls", guest);
	out = call(method, NULL, NULL);
	n = strtoull(out, NULL, 10);
	free(out);
	return n;
}

/* Guests on loops of their own (poll on guest_fd, then guest_service), as
 * hub-nats is: a block subscriber that reads slowly, so that the
 * publisher waits for it, and rings it. Once the events are in, both
 * loops are quiet: guest_fd no longer readable. A topic's bell left rung
 * (guest_service left it to a libguest sleep, which such a loop never
 * makes) kept guest_fd readable, and the loop spun at a full CPU: tens
 * of thousands of wakes in the half second below where a few are due
 * (the calls that ask). */
START_TEST(test_own_loop_goes_quiet)
{
	unsigned long long p0, s0, p1, s1;

	hub_start_up(&hub, NULL, SMALL PUB("--poll")
		     SUB("s", "--policy=block --slow=1 --poll"), "pub,s");
	ck_assert(hub_wait_method(&hub, "pub.burst,pub.polls,s.stats,s.polls") == 0);
	expect("pub.burst", "50", "0", "50\n");
	expect_stats("s", "received 50 lost 0 bad 0 last 49");
	p0 = polls("pub");
	s0 = polls("s");
	sleep_ms(500);
	p1 = polls("pub");
	s1 = polls("s");
	ck_assert_msg(p1 - p0 < 50 && s1 - s0 < 50,
		      "woken in 0.5 s of quiet: the publisher %llu times, the subscriber %llu",
		      p1 - p0, s1 - s0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.crash.heartbeat]: a subscriber whose handler takes 100 ms, with
 * events always waiting for it (a block topic: the publisher waits for
 * room), is back in libguest at each event and beats there: 40 events
 * take twice the 2 s it may go without a beat, and it is not hung.
 * (libguest beat only in a wait or at a message, and its loop never
 * waited while events came.) */
START_TEST(test_slow_subscriber_keeps_its_heartbeat)
{
	int pid;

	hub_start_up(&hub, "heartbeat_interval = 1s\n[topic pub.ev]\nblock_timeout = 60s\n",
		     PUB("") SUB("sub", "--policy=block --slow=100"), "pub,sub");
	ck_assert(hub_wait_method(&hub, "pub.burst,sub.stats") == 0);
	pid = hub_peer_int(&hub, "sub", "pid");
	expect("pub.burst", "40", "0", "40\n");
	expect_stats("sub", "received 40 lost 0 bad 0 last 39");
	ck_assert_msg(hub_peer_int(&hub, "sub", "pid") == pid &&
		      hub_peer_int(&hub, "sub", "restarts") == 0, "sub died: %s",
		      hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* drop-oldest: never waited for; a lapped subscriber learns how many it
 * lost; the others are not held back by it. */
START_TEST(test_drop_oldest)
{
	hub_start_up(&hub, NULL, SMALL PUB("") SUB("fast", "--policy=block")
		     SUB("slow", "--policy=drop-oldest --pull"), "pub,fast,slow");
	ck_assert(hub_wait_method(&hub, "pub.burst,fast.stats,slow.read") == 0);
	expect("pub.burst", "20", "0", "20\n");
	expect_stats("fast", "received 20 lost 0 bad 0 last 19");
	expect("slow.read", "100", NULL, "12 13 14 15 16 17 18 19 lost=12\n");
	expect("slow.read", "100", NULL, "lost=0\n");
	expect("pub.burst", "3", "20", "3\n");
	expect("slow.read", "100", NULL, "20 21 22 lost=0\n");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* latest: only the newest event each time it looks. */
START_TEST(test_latest)
{
	hub_start_up(&hub, NULL, SMALL PUB("") SUB("slow", "--policy=latest --pull"), "pub,slow");
	ck_assert(hub_wait_method(&hub, "pub.burst,slow.read") == 0);
	expect("pub.burst", "20", "0", "20\n");
	expect("slow.read", "100", NULL, "19 lost=19\n");
	expect("slow.read", "100", NULL, "lost=0\n");
	expect("pub.burst", "1", "20", "1\n");
	expect("slow.read", "100", NULL, "20 lost=0\n");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Subscribers and publishers die and come back: a new subscriber
 * instance subscribes anew; a new publisher instance writes into the
 * same topic, whose subscribers stay. */
START_TEST(test_restarts)
{
	hub_start_up(&hub, NULL, PUB("") SUB("sub", "--policy=block"), "pub,sub");
	ck_assert(hub_wait_method(&hub, "pub.burst,sub.stats") == 0);
	expect("pub.burst", "5", "0", "5\n");
	expect_stats("sub", "received 5 lost 0 bad 0 last 4");
	ctl("restart", "sub");
	ck_assert(hub_wait_method(&hub, "sub.stats") == 0);
	expect_stats("sub", "received 0 ");
	expect("pub.burst", "5", "5", "5\n");
	expect_stats("sub", "received 5 lost 0 bad 0 last 9");
	ctl("restart", "pub");
	ck_assert(hub_wait_method(&hub, "pub.burst") == 0);
	expect("pub.burst", "5", "10", "5\n");
	expect_stats("sub", "received 10 lost 0 bad 0 last 14");
	/* killed, not stopped: the same */
	kill(hub_peer_int(&hub, "pub", "pid"), SIGKILL);
	for (double end = now_s() + 10; now_s() < end; sleep_ms(20))
		if (hub_peer_int(&hub, "pub", "restarts") == 2 &&
		    strcmp(hub_peer_state(&hub, "pub"), "up") == 0)
			break;
	ck_assert(hub_wait_method(&hub, "pub.burst") == 0);
	expect("pub.burst", "5", "15", "5\n");
	expect_stats("sub", "received 15 lost 0 bad 0 last 19");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The topic named in topics' answer, or NULL (a owns it). */
static json_object *
topic_in(json_object *a, const char *name)
{
	json_object *topics = json_get(a, "topics");

	ck_assert_ptr_nonnull(topics);
	for (size_t i = 0; i < json_object_array_length(topics); i++) {
		json_object *t = json_object_array_get_idx(topics, i);

		if (strcmp(json_object_get_string(json_get(t, "name")), name) == 0)
			return t;
	}
	return NULL;
}

/* Waits (10 s) until hubd lists topic name (present 1) or not (0), and
 * with no publisher when present; asserts it. */
static void
expect_topic(const char *name, int present)
{
	json_object *a = NULL, *t = NULL;

	for (double end = now_s() + 10; now_s() < end; sleep_ms(20)) {
		json_object_put(a);
		a = hub_request(&hub, "{\"cmd\":\"topics\"}", NULL);
		t = topic_in(a, name);
		if (present ? t != NULL && json_get(t, "publisher") == NULL : t == NULL)
			break;
	}
	ck_assert_msg(present ? t != NULL && json_get(t, "publisher") == NULL : t == NULL,
		      "%s: %s", name, json_object_to_json_string(a));
	json_object_put(a);
}

/* A retained event outlives its publisher's instance: a subscriber that
 * comes later gets it at once; hubd shows it. */
START_TEST(test_retained)
{
	json_object *a, *t;
	const char *text;
	char msgs[1024];

	hub_start_up(&hub, NULL, PUB("--retain"), "pub");
	ck_assert(hub_wait_method(&hub, "pub.burst") == 0);
	expect("pub.burst", "2", "41", "2\n");
	ctl("restart", "pub");
	ck_assert(hub_wait_method(&hub, "pub.burst") == 0);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, PUB("--retain")
					SUB("late", "--policy=drop-oldest --log")), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert(hub_wait_method(&hub, "late.stats") == 0);
	expect_stats("late", "received 1 lost 0 bad 0 last 42");
	a = hub_request(&hub, "{\"cmd\":\"topics\"}", NULL);
	ck_assert_ptr_nonnull(t = topic_in(a, "pub.ev"));
	text = json_object_to_json_string(json_get(t, "retained"));
	ck_assert_msg(strcmp(text, "[ 42 ]") == 0 || strcmp(text, "[42]") == 0, "%s",
		      json_object_to_json_string(t));
	ck_assert_str_eq(json_object_get_string(json_get(t, "publisher")), "pub");
	json_object_put(a);
	/* nobody publishes or reads it now: it stays, for its event */
	ctl("stop", "late");
	ctl("stop", "pub");
	expect_topic("pub.ev", 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

#define ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define WATCH	"[guest gw]\n" TG "args = --as=gw --sub=hub.guests --log\n" \
		"[guest gm]\n" TG "args = --as=gm --sub=hub.methods --log\n"

/* hub.guests and hub.methods across a restart, a crash and reloads. */
START_TEST(test_discovery)
{
	char msgs[1024];
	int ups;

	hub_start_up(&hub, NULL, WATCH ECHO, "gw,gm,echo");
	ck_assert(hub_wait_method(&hub, "gw.stats,gm.stats,echo.echo") == 0);
	ctl("restart", "echo");
	ck_assert(hub_wait_method(&hub, "echo.echo") == 0);
	expect_log("topicguest gw: event");
	expect_log(": echo down ");
	expect_log("topicguest gm: event");
	expect_log(": echo.echo gone ");
	ups = log_count(": echo up");
	ck_assert_msg(ups >= 1, "%s", hub_log_tail(&hub));
	/* a crash: restarting, with why */
	kill(hub_peer_int(&hub, "echo", "pid"), SIGKILL);
	expect_log(": echo restarting crashed: signal 9");
	for (double end = now_s() + 10; now_s() < end && log_count(": echo up") <= ups;)
		sleep_ms(20);
	ck_assert_msg(log_count(": echo up") > ups, "%s", hub_log_tail(&hub));
	expect_log(": echo.echo registered ");
	/* a reload adds a guest, another takes it away */
	ck_assert_int_eq(hub_write_conf(&hub, NULL, WATCH ECHO "[guest extra]\n" TG
					"args = --as=extra --pub=extra.ev\n"), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	expect_log(": extra up");
	expect_log(": extra.burst registered ");
	ck_assert_int_eq(hub_write_conf(&hub, NULL, WATCH ECHO), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	expect_log(": extra down");
	expect_log(": extra.burst gone ");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A topic is named as a method: up to 63 bytes. One byte over,
 * guest_advertise and guest_subscribe say -ENAMETOOLONG, as
 * guest_register does (they said -EINVAL, as for a bad character). */
#define T63	"ok.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define T64	"nl.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"
START_TEST(test_name_lengths)
{
	char *out = NULL;

	ck_assert_uint_eq(strlen(T63), 63);
	ck_assert_uint_eq(strlen(T64), 64);
	hub_start_up(&hub, NULL,
		     "[guest ok]\n" TG "args = --as=ok --pub=" T63 " --sub=" T63 "\n"
		     "[guest nl]\n" TG "args = --as=nl --pub=" T64 "\nrestart = never\n"
		     "[guest ns]\n" TG "args = --as=ns --sub=" T64 "\nrestart = never\n"
		     "[topic " T63 "]\nslots = 8\n", "ok");
	expect_log("topicguest: advertise " T64 ": File name too long");
	expect_log("topicguest: subscribe " T64 ": File name too long");
	/* ok's up once attached; its topic is there once it says so */
	expect_log("topicguest ok: ready");
	hubctl_ok(&hub, &out, "topics", (char *)NULL);
	ck_assert_msg(strstr(out, T63) != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* guest_wait_method: a method that comes late, and one that never does. */
START_TEST(test_wait_method)
{
	char msgs[1024];

	hub_start_up(&hub, NULL, "[guest waiter]\n" TG "args = --as=waiter --wait=echo.echo\n"
		     "[guest never]\n" TG "args = --as=never --wait=nobody.x --wait-ms=300\n",
		     "waiter,never");
	expect_log("topicguest never: wait nobody.x: ETIMEDOUT");
	sleep_ms(200);
	ck_assert_int_eq(log_count("topicguest waiter: wait"), 0);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, "[guest waiter]\n" TG
					"args = --as=waiter --wait=echo.echo\n"
					"[guest never]\n" TG
					"args = --as=never --wait=nobody.x --wait-ms=300\n" ECHO), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	expect_log("topicguest waiter: wait echo.echo: ok");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A subscriber that scribbles its own cursor, or never reads, holds the
 * publisher back no longer than block_timeout, and the others lose
 * nothing. */
START_TEST(test_hostile_subscriber)
{
	char *out;
	int pid;

	hub_start_up(&hub, NULL, SMALL PUB("") SUB("good", "--policy=block")
		     SUB("bad", "--policy=block --pull --scribble-cursor"), "pub,good,bad");
	ck_assert(hub_wait_method(&hub, "pub.burst,good.stats,bad.scribble_cursor") == 0);
	pid = hub_peer_int(&hub, "pub", "pid");
	expect("bad.scribble_cursor", "0", NULL, "");
	expect("pub.burst", "50", "0", "50\n");
	expect_stats("good", "received 50 lost 0 bad 0 last 49");
	expect("bad.scribble_cursor", "18446744073709551615", NULL, "");
	expect("pub.burst", "50", "50", "50\n");
	expect_stats("good", "received 100 lost 0 bad 0 last 99");
	expect("bad.scribble_cursor", "4702111234474983745", NULL, "");
	expect("pub.burst", "50", "100", "50\n");
	expect_stats("good", "received 150 lost 0 bad 0 last 149");
	/* it may read whatever it made of its cursor, and stays a guest */
	out = call("bad.read", "100", NULL);
	free(out);
	ck_assert_int_eq(hub_peer_int(&hub, "pub", "pid"), pid);
	ck_assert_str_eq(hub_peer_state(&hub, "pub"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A publisher that scribbles its topic's memory: its subscribers are
 * told (lost or bad events), never crash, and go on once it writes
 * events again. */
/* hubctl topics' columns line up with their headings, whatever width the
 * figures take: PUBLISHED ends where the topic's count does, and each
 * subscriber row ends where its heading (BEHIND) does. */
static void
expect_aligned(const char *out, const char *topic)
{
	const char *head = strstr(out, "PUBLISHED"), *row = strstr(out, topic), *sub, *eol;
	size_t end;

	ck_assert_msg(head != NULL && head < strchr(out, '\n') && row != NULL &&
		      (sub = strstr(row + 1, "\n  SUBSCRIBER")) != NULL,
		      "hubctl topics printed:\n%s", out);
	row++;		/* past the newline before it */
	end = (size_t)(head - out) + strlen("PUBLISHED");
	ck_assert_msg(strlen(row) > end && row[end] == ' ' && isdigit((unsigned char)row[end - 1]),
		      "PUBLISHED's column and the count disagree:\n%s", out);
	sub++;
	eol = strchr(sub, '\n');
	ck_assert_msg(eol != NULL && strchr(eol + 1, '\n') != NULL &&
		      strchr(eol + 1, '\n') - (eol + 1) == eol - sub,
		      "a subscriber's row and its headings differ in width:\n%s", out);
}

START_TEST(test_hostile_publisher)
{
	char *out = NULL;
	int pid;

	hub_start_up(&hub, NULL, PUB("") SUB("sub", "--policy=drop-oldest")
		     SUB("puller", "--policy=drop-oldest --pull"), "pub,sub,puller");
	ck_assert(hub_wait_method(&hub, "pub.burst,sub.stats,puller.read") == 0);
	pid = hub_peer_int(&hub, "sub", "pid");
	expect("pub.burst", "5", "0", "5\n");
	expect_stats("sub", "received 5 ");
	for (int i = 0; i < 20; i++) {
		expect("pub.scribble", NULL, NULL, "");
		out = call("puller.read", "100", NULL);
		free(out);
		out = call("sub.stats", NULL, NULL);
		free(out);
	}
	ck_assert_int_eq(hub_peer_int(&hub, "sub", "pid"), pid);
	ck_assert_str_eq(hub_peer_state(&hub, "sub"), "up");
	ck_assert_str_eq(hub_peer_state(&hub, "puller"), "up");
	ck_assert_int_eq(hub_peer_int(&hub, "sub", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "puller", "restarts"), 0);
	/* its counts, whatever it wrote, keep the table's columns */
	hubctl_ok(&hub, &out, "topics", (char *)NULL);
	expect_aligned(out, "\npub.ev ");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A publisher killed inside a publish, its event claimed and never
 * written: its subscribers are told of a bad event and go on with the
 * events its next instance writes (they waited at the unwritten one
 * until a whole ring of events had lapped it). */
START_TEST(test_publisher_dies_writing)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, PUB("") SUB("sub", "--policy=drop-oldest"), "pub,sub");
	ck_assert(hub_wait_method(&hub, "pub.burst,pub.die_writing,sub.stats") == 0);
	expect("pub.burst", "5", "0", "5\n");
	expect_stats("sub", "received 5 lost 0 bad 0 last 4");
	ck_assert_int_ne(hubctl(&hub, &out, "call", "pub.die_writing", (char *)NULL), 0);
	free(out);
	for (double end = now_s() + 10; now_s() < end; sleep_ms(20))
		if (hub_peer_int(&hub, "pub", "restarts") == 1 &&
		    strcmp(hub_peer_state(&hub, "pub"), "up") == 0)
			break;
	ck_assert(hub_wait_method(&hub, "pub.burst") == 0);
	expect("pub.burst", "5", "10", "5\n");
	expect_stats("sub", "received 11 lost 1 bad 1 last 14");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A topic nobody publishes or reads, with no retained event, goes: the
 * names a guest subscribes to and leaves do not pile up in hubd. */
START_TEST(test_reaped)
{
	json_object *a;

	hub_start_up(&hub, NULL, SUB("sub", "--policy=block"), "sub");
	ck_assert(hub_wait_method(&hub, "sub.stats") == 0);
	a = hub_request(&hub, "{\"cmd\":\"topics\"}", NULL);
	ck_assert_msg(topic_in(a, "pub.ev") != NULL, "%s", json_object_to_json_string(a));
	json_object_put(a);
	ctl("stop", "sub");
	expect_topic("pub.ev", 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Who may: a guest publishes only its own topics; a [topic] section's
 * subscribers = keeps others out. */
START_TEST(test_rights)
{
	hub_start_up(&hub, NULL, "[topic pub.ev]\nsubscribers = ok\n" PUB("")
		     SUB("ok", "") "[guest thief]\n" TG "args = --as=thief --pub=echo.x\n"
		     "[guest nosy]\n" TG "args = --as=nosy --sub=pub.ev\n", "pub,ok");
	ck_assert(hub_wait_method(&hub, "pub.burst,ok.stats") == 0);
	expect_log("topicguest: advertise echo.x: Operation not permitted");
	expect_log("topicguest: subscribe pub.ev: Operation not permitted");
	expect_log("guest thief: may not publish echo.x: not one of this guest's topics");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The topic named in hubctl -j topics' output, as a new object, or NULL. */
static json_object *
listed(const char *name)
{
	json_object *a, *t;
	char *out = NULL;

	hubctl_ok(&hub, &out, "-j", "topics", (char *)NULL);
	ck_assert_msg((a = json_tokener_parse(out)) != NULL, "%s", out);
	free(out);
	if ((t = topic_in(a, name)) != NULL)
		json_object_get(t);
	json_object_put(a);
	return t;
}

#define EARLY	"[guest early]\n" TG "args = --as=early --sub=early.ev\n"

/* [topic] sections a reload adds, changes or drops apply to the topics
 * made after it, their memory and who may subscribe, as hubd.conf(5)
 * says; a topic open meanwhile keeps its memory's, and the reload's
 * messages say what applies when. */
START_TEST(test_reload_sections)
{
	json_object *t;
	char msgs[2048];

	hub_start_up(&hub, NULL, SUB("nosy", "") EARLY, "nosy,early");
	ck_assert(hub_wait_method(&hub, "nosy.stats,early.stats") == 0);
	/* nobody reads pub.ev now: the next subscriber makes it anew */
	ctl("stop", "nosy");
	expect_topic("pub.ev", 0);
	ck_assert_int_eq(hub_write_conf(&hub, NULL, "[topic pub.ev]\nslots = 4\nevent_max = 16\n"
					"subscribers = ok\n[topic early.ev]\nslots = 8\n"
					SUB("nosy", "") SUB("ok", "") EARLY), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_msg(strstr(msgs, "topic pub.ev: section added; slots 4, event_max 16, "
			     "block_timeout 1000ms when the topic is made; who may subscribe: "
			     "its subscribers from now on\n") != NULL, "%s", msgs);
	ck_assert_msg(strstr(msgs, "topic early.ev: section added; slots 8, event_max 4096, "
			     "block_timeout 1000ms when the topic is made (open now: it keeps "
			     "slots 64, event_max 4096 until it goes)\n") != NULL, "%s", msgs);
	ck_assert(hub_wait_method(&hub, "ok.stats") == 0);
	ck_assert_ptr_nonnull(t = listed("pub.ev"));
	ck_assert_int_eq(json_object_get_int(json_get(t, "slots")), 4);
	ck_assert_int_eq(json_object_get_int(json_get(t, "event_max")), 16);
	json_object_put(t);
	ck_assert_ptr_nonnull(t = listed("early.ev"));
	ck_assert_int_eq(json_object_get_int(json_get(t, "slots")), 64);
	json_object_put(t);
	/* subscribers = ok keeps nosy out now */
	ctl("start", "nosy");
	expect_log("topicguest: subscribe pub.ev: Operation not permitted");
	/* one section dropped, the defaults for the next pub.ev; one changed */
	ck_assert_int_eq(hub_write_conf(&hub, NULL, "[topic early.ev]\nslots = 16\n"
					SUB("nosy", "") SUB("ok", "") EARLY), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "%s", msgs);
	ck_assert_msg(strstr(msgs, "topic pub.ev: section removed: the defaults; slots 64, "
			     "event_max 4096, block_timeout 1000ms when the topic is made (open "
			     "now: it keeps slots 4, event_max 16 until it goes); who may "
			     "subscribe: every guest from now on\n") != NULL, "%s", msgs);
	ck_assert_msg(strstr(msgs, "topic early.ev: section changed; slots 16, event_max 4096, "
			     "block_timeout 1000ms when the topic is made (open now: it keeps "
			     "slots 64, event_max 4096 until it goes)\n") != NULL, "%s", msgs);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_topics(void);
Suite *
suite_topics(void)
{
	Suite *s = suite_create("topics");
	TCase *tc = tcase_create("topics");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_block);
	tcase_add_test(tc, test_own_loop_goes_quiet);
	tcase_add_test(tc, test_slow_subscriber_keeps_its_heartbeat);
	tcase_add_test(tc, test_drop_oldest);
	tcase_add_test(tc, test_latest);
	tcase_add_test(tc, test_restarts);
	tcase_add_test(tc, test_retained);
	tcase_add_test(tc, test_discovery);
	tcase_add_test(tc, test_wait_method);
	tcase_add_test(tc, test_name_lengths);
	tcase_add_test(tc, test_hostile_subscriber);
	tcase_add_test(tc, test_hostile_publisher);
	tcase_add_test(tc, test_publisher_dies_writing);
	tcase_add_test(tc, test_rights);
	tcase_add_test(tc, test_reaped);
	tcase_add_test(tc, test_reload_sections);
	suite_add_tcase(s, tc);
	return s;
}
