/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Guests that stop reading: one that calls and never reads its answers,
 * a stream whose reader stalls or goes away, a caller that opens stream
 * after stream. hubd sleeps instead of polling a ring nobody drains, a
 * sender stops once its reader is gone, and one stalled stream holds up
 * nobody else. CPU is asserted as counts (hubd's loop iterations and ring
 * polls, a guest's bytes sent), never as timings. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

static const char COUNTER[] = "[guest counter]\nexec = @/guests/counter\n";


/* A counter of guest name's (stats.guests.NAME.KEY). */
static unsigned long long
guest_stat(const char *name, const char *key)
{
	json_object *o = hub_stats(&hub);
	unsigned long long v = json_u64(o, "guests", name, key);

	json_object_put(o);
	return v;
}

/* Waits (30 s) until guest name has sent nothing for 900 ms running
 * (three looks 300 ms apart): its bytes_in stand still. One look was
 * fooled by a sender the machine left unscheduled for 300 ms. */
static void
wait_sender_still(const char *name, const char *while_)
{
	unsigned long long prev = guest_stat(name, "bytes_in"), now = prev;
	int still = 0;

	for (int i = 0; i < 100; i++) {
		sleep_ms(300);
		still = (now = guest_stat(name, "bytes_in")) == prev ? still + 1 : 0;
		if (still == 3)
			return;
		prev = now;
	}
	ck_abort_msg("%s: guest %s still sends (%llu bytes so far)", while_, name, now);
}

/* counter.count 3 through hubctl: 1, 2, 3 streamed, then 3. */
static void
counter_answers(const char *while_)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "-t", "30", "call", "counter.count", "3", (char *)NULL);

	ck_assert_msg(rc == 0 && strcmp(out, "1\n2\n3\n3\n") == 0,
		      "%s: counter.count 3: status %d, '%s'; %s", while_, rc, out,
		      hub_log_tail(&hub));
	free(out);
}

/* Waits (10 s) until hubd relays no stream and counter's channels are
 * all free: the stream ended at both ends. */
static void
wait_streams_over(const char *while_)
{
	unsigned long long open = 0;
	int chans = -1;

	for (int i = 0; i < 500; i++) {
		json_object *o = hub_stats(&hub);

		open = json_u64(o, "relays", "open", NULL);
		json_object_put(o);
		chans = hub_peer_int(&hub, "counter", "channels_open");
		if (open == 0 && chans == 0)
			return;
		sleep_ms(20);
	}
	ck_abort_msg("%s: %llu relays open, counter has %d channels open; %s", while_, open,
		     chans, hub_log_tail(&hub));
}

/* After counter's reader went: the stream ended at both ends, counter
 * sends no more, hubd sleeps, counter serves the next caller and was
 * never ended; then the hub stops. */
static void
assert_stream_stopped(const char *after)
{
	wait_streams_over(after);
	wait_sender_still("counter", after);
	hub_assert_asleep(&hub, after);
	counter_answers(after);
	ck_assert_int_eq(hub_peer_int(&hub, "counter", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}

/* r[shm.ring.full] r[shm.wakeup.producer-wait]: a guest makes 300 calls
 * and reads none of the answers: 255 fill its ring, the rest wait in
 * hubd's backlog, far below the limit that ends a guest. hubd sleeps on
 * "room in that ring" instead of polling it; once the guest reads again
 * every answer arrives. */
START_TEST(test_unread_answers_hubd_sleeps)
{
	char guests[512];
	int pid;

	snprintf(guests, sizeof(guests),
		 "[guest echo]\nexec = @/guests/echo\n"
		 "[guest hoarder]\nexec = @/tests/guests/hoarder\n"
		 "args = --act=noread --count=300 --size=100\n");
	hub_start_up(&hub, NULL, guests, "echo,hoarder");
	/* its 300 calls, after hub.signature said echo.echo is there */
	for (int i = 0; i < 500 && guest_stat("hoarder", "calls_in") < 301; i++)
		sleep_ms(20);
	ck_assert_uint_ge(guest_stat("hoarder", "calls_in"), 301);
	/* its ring full of answers (ring_size 256: 255 in it) */
	for (int i = 0; i < 500 && hub_peer_int(&hub, "hoarder", "h2g_depth") < 255; i++)
		sleep_ms(20);
	ck_assert_int_eq(hub_peer_int(&hub, "hoarder", "h2g_depth"), 255);
	sleep_ms(200);		/* the last answers into the backlog */
	hub_assert_asleep(&hub, "answers waiting for a guest that does not read");
	ck_assert_str_eq(hub_peer_state(&hub, "hoarder"), "up");
	/* the others are served meanwhile */
	{
		char *out = NULL;

		hubctl_ok(&hub, &out, "call", "echo.echo", "hi", (char *)NULL);
		ck_assert_str_eq(out, "hi\n");
		free(out);
	}
	/* it reads again: the backlog moves as its ring drains (its
	 * consumption rings hubd), nothing lost */
	pid = hub_peer_int(&hub, "hoarder", "pid");
	ck_assert_int_gt(pid, 0);
	kill(pid, SIGUSR1);
	ck_assert_msg(hub_log_wait(&hub, "hoarder: 300 answers", 10000), "%s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A stream relayed from counter to a guest that neither reads nor grants:
 * counter waits for credit, hubd sleeps, and counter keeps serving its
 * other callers meanwhile. When the reader dies, counter is told (a
 * Reset), granted nothing more, and stops. */
START_TEST(test_relayed_reader_stalls_then_dies)
{
	char guests[512];

	snprintf(guests, sizeof(guests), "%s"
		 "[guest hoarder]\nexec = @/tests/guests/hoarder\n"
		 "args = --act=relay --count=1\nrestart = never\n", COUNTER);
	hub_start_up(&hub, NULL, guests, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count") == 0);
	ck_assert_msg(hub_log_wait(&hub, "hoarder: 1 calls", 10000), "%s", hub_log_tail(&hub));
	wait_sender_still("counter", "its reader stalled");
	ck_assert_uint_gt(guest_stat("counter", "bytes_in"), 0);
	hub_assert_asleep(&hub, "a relayed stream whose reader stalled");
	/* one stalled stream holds up nobody else */
	counter_answers("while a relayed reader stalls");
	counter_answers("while a relayed reader stalls, again");
	/* the reader goes */
	ck_assert_int_eq(kill(hub_peer_int(&hub, "hoarder", "pid"), SIGKILL), 0);
	assert_stream_stopped("after the relayed reader died");
}
END_TEST

/* counter up, and a control client of it that called counter.count
 * 2^64-1 and has its first items: the client's socket. */
static int
endless_stream(void)
{
	static const char call[] = "{\"cmd\":\"call\",\"method\":\"counter.count\","
				   "\"args\":[\"18446744073709551615\"]}\n";
	char buf[256];
	int fd;

	hub_start_up(&hub, NULL, COUNTER, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count") == 0);
	fd = hub_client(&hub, 10);
	ck_assert_int_eq(write(fd, call, strlen(call)), (ssize_t)strlen(call));
	ck_assert_int_gt(read(fd, buf, sizeof(buf)), 0);	/* items flow */
	return fd;
}

/* A control client asks for a stream of 2^64-1 items, reads a few, and
 * goes: counter is told (Cancel, and a Reset on the stream, no more
 * credit), ends the call, and serves the next caller. */
START_TEST(test_client_abandons_endless_stream)
{
	int fd;

	fd = endless_stream();
	close(fd);
	assert_stream_stopped("after its client went");
}
END_TEST

/* One guest opens stream after stream of counter's and reads none: it
 * gets channels_per_caller of counter's channel ids (a quarter of the 31
 * hubd opens, by default), not all of them, and others still get theirs. */
START_TEST(test_one_caller_cannot_take_every_channel)
{
	char guests[512];
	int chans = -1;

	snprintf(guests, sizeof(guests), "%s"
		 "[guest hoarder]\nexec = @/tests/guests/hoarder\n"
		 "args = --act=relay --count=31\n", COUNTER);
	hub_start_up(&hub, NULL, guests, "counter");
	ck_assert(hub_wait_method(&hub, "counter.count") == 0);
	ck_assert_msg(hub_log_wait(&hub, "hoarder: 31 calls", 10000), "%s", hub_log_tail(&hub));
	for (double end = now_s() + 30;
	     (chans = hub_peer_int(&hub, "counter", "channels_open")) < 7 && now_s() < end;)
		sleep_ms(20);
	wait_sender_still("counter", "its reader stalled");
	chans = hub_peer_int(&hub, "counter", "channels_open");
	ck_assert_msg(chans == 7, "counter has %d channels open for one caller, want 7; %s", chans, hub_log_tail(&hub));
	counter_answers("while one caller holds its share of counter's channels");
	ck_assert_str_eq(hub_peer_state(&hub, "hoarder"), "up");
	hub_assert_asleep(&hub, "seven stalled streams");
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The deaths detail of guest name's recent deaths that mention text,
 * or NULL (a new reference is not kept: the text is copied to buf). */
static const char *
death_detail(const char *name, const char *text, char *buf, size_t len)
{
	json_object *p = hub_peer(&hub, name), *deaths = json_get(p, "deaths");
	const char *found = NULL;

	for (size_t i = 0; deaths != NULL && i < json_object_array_length(deaths); i++) {
		const char *d = json_object_get_string(
			json_get(json_object_array_get_idx(deaths, i), "detail"));

		if (d != NULL && strstr(d, text) != NULL) {
			snprintf(buf, len, "%s", d);
			found = buf;
			break;
		}
	}
	json_object_put(p);
	return found;
}

/* A guest that calls echo.echo with 100-byte arguments as fast as it
 * can and reads none of the answers is ended, again and again as it
 * comes back, and the others' calls with 300-byte arguments go on
 * meanwhile; echo, whose ring its calls fill, is not charged for them.
 * r[shm.varslot.ownership]: in echo's zone, its calls (in its ring,
 * then in hubd's backlog for echo) are slots of the pool they share,
 * and it is ended once they are more than its quota (the answers it
 * leaves unread are hubd's doing, not counted for that). In a zone
 * of its own, the answers hubd copies for it wait in hubd's memory,
 * holding no slot, and it is ended once its backlog is as long as hubd
 * keeps for a guest ("stopped reading its ring"). */
START_TEST(test_flood_without_reading_ended)
{
	static const char *const why[] = { "stopped reading its ring", "pool quota" };
	char guests[1024], detail[256];
	const char *d = NULL, *zone = _i == 1 ? "zone = z\n" : "";

	snprintf(guests, sizeof(guests),
		 "[guest echo]\nexec = @/guests/echo\n%s"
		 "[guest prober]\nexec = @/tests/guests/prober\n"
		 "[guest hoarder]\nexec = @/tests/guests/hoarder\n%s"
		 "args = --act=flood --size=100\nrestart = always\nmax_deaths = 1000\n"
		 "backoff_min = 10ms\nbackoff_max = 50ms\n", zone, zone);
	hub_start_up(&hub, "goodbye_grace = 10ms\n", guests, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big") == 0);
	for (int i = 0; i < 500 && d == NULL; i++) {
		d = death_detail("hoarder", why[_i], detail, sizeof(detail));
		sleep_ms(20);
	}
	ck_assert_msg(d != NULL, "the flooder was never ended for %s; %s", why[_i],
		      hub_log_tail(&hub));
	/* the default: a quarter of the pool's 1356 slots, at least two
	 * rings of 256 */
	ck_assert_msg(_i == 0 || strstr(d, "pool_quota_slots 512,") != NULL, "%s", d);
	/* it keeps coming back and flooding: the others are served all
	 * along (until it was ended again, however slow the machine) */
	for (int i = 0; i < 40 || hub_peer_int(&hub, "hoarder", "restarts") < 2; i++) {
		char *out = NULL;
		int rc = hubctl(&hub, &out, "-t", "30", "call", "prober.big", "300", (char *)NULL);

		ck_assert_msg(rc == 0 && strcmp(out, "300\n") == 0,
			      "call %d while a guest floods: status %d, '%s'; %s", i, rc, out,
			      hub_log_tail(&hub));
		free(out);
		ck_assert_msg(i < 3000, "the flooder came back only %d time(s): %s",
			      hub_peer_int(&hub, "hoarder", "restarts"), hub_log_tail(&hub));
	}
	ck_assert_uint_eq(guest_stat("echo", "violations"), 0);
	ck_assert_uint_eq(guest_stat("prober", "violations"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest that takes slots of the pool it shares with a zone mate and
 * keeps them is ended by the sweeper once it holds more than [pool]
 * quota_slots; alone in its zone it starves only itself, and is not. */
START_TEST(test_hoarded_slots_over_quota_ended)
{
	char detail[256];
	const char *d = NULL;

	hub_start_up(&hub, "[pool]\nquota_slots = 4\nsweep_interval = 50ms\n",
		     "[guest breaker]\nexec = @/tests/guests/poolbreaker\n"
		     "args = --act=hold\nrestart = never\n", NULL);
	ck_assert_msg(hub_wait_up(&hub, "breaker", 30000) == 0, "breaker not up: %s",
		      hub_log_tail(&hub));
	sleep_ms(1000);		/* twenty sweeps */
	ck_assert_str_eq(hub_peer_state(&hub, "breaker"), "up");
	ck_assert_int_eq(hub_stop(&hub), 0);
	hub_start_up(&hub, "[pool]\nquota_slots = 4\n",
		     "[guest breaker]\nexec = @/tests/guests/poolbreaker\n"
		     "args = --act=hold\nrestart = never\nzone = z\n"
		     "[guest echo]\nexec = @/guests/echo\nzone = z\n", NULL);
	for (int i = 0; i < 500 && d == NULL; i++) {
		d = death_detail("breaker", "pool quota", detail, sizeof(detail));
		sleep_ms(20);
	}
	ck_assert_msg(d != NULL, "the hoarder was never ended; %s", hub_log_tail(&hub));
	ck_assert_msg(strstr(d, "holds 8 slots") != NULL && strstr(d, "pool_quota_slots 4"),
		      "%s", d);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A client streaming from counter while the hub stops is told that the
 * hub is stopping, not that counter died. */
START_TEST(test_stream_client_told_hub_stops)
{
	char buf[65536], *end;
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = endless_stream();
	ck_assert_int_eq(kill(hub.pid, SIGTERM), 0);
	/* the items that were on their way, then the call's end */
	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
		len += (size_t)n;
		buf[len] = '\0';
		if ((end = strstr(buf, "\"ok\":false")) != NULL && strchr(end, '\n') != NULL)
			break;
		if (len > sizeof(buf) / 2) {	/* keep the tail */
			memmove(buf, buf + len - 1024, 1024);
			len = 1024;
		}
	}
	close(fd);
	buf[len] = '\0';
	/* the end alone: Check takes no long message */
	ck_assert_msg(strstr(buf, "the hub is stopping") != NULL && strstr(buf, "died") == NULL,
		      "the call ended with (%zd, %s): %s; %s", n, strerror(errno),
		      len > 300 ? buf + len - 300 : buf, hub_log_tail(&hub));
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_stalled(void);

Suite *
suite_stalled(void)
{
	Suite *s = suite_create("stalled");
	TCase *tc = tcase_create("stalled");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_unread_answers_hubd_sleeps);
	tcase_add_test(tc, test_relayed_reader_stalls_then_dies);
	tcase_add_test(tc, test_client_abandons_endless_stream);
	tcase_add_test(tc, test_one_caller_cannot_take_every_channel);
	tcase_add_loop_test(tc, test_flood_without_reading_ended, 0, 2);
	tcase_add_test(tc, test_hoarded_slots_over_quota_ended);
	tcase_add_test(tc, test_stream_client_told_hub_stops);
	suite_add_tcase(s, tc);
	return s;
}
