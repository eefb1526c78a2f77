/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Channels between guests: a guest passes a channel it opened to receive
 * on as the chan<T> argument of another guest's method, and hubd relays
 * what the callee sends (daemon/relay.c), or (tcase relay_lanes) the
 * channel moves with the call to the two guests' lane and the items go
 * straight from one to the other (guestlib/chan_lane.c). Two instances of the
 * streamer test guest: "cons" calls "prod". */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

#define CREDIT	65536	/* initial_credit of every hub here */

static struct hub_proc hub;

/* 0: every call through hubd (the guests' lanes = no); 1 (tcase
 * relay_lanes): prod and cons get a lane by a first call through hubd,
 * and each later call goes over it with its channel. */
static int over_lanes;

/* The file the producer counts its sent bytes in (streamer --shared),
 * open to the two guests, each a uid of its own (the directory it is in
 * can be searched, not listed, by others). */
static const char *
shared_file(void)
{
	const char *path = harness_path("relay.counters");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_msg(fd >= 0, "cannot create %s", path);
	ck_assert_int_eq(fchmod(fd, 0666), 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	close(fd);
	return path;
}

static void	lane_up(void);

/* prod and cons up, their methods registered; pool: whether they use
 * the shared pool (items handed on in variable slots) or their own. */
static void
start2(int prod_pool, int cons_pool)
{
	char keys[64], guests[1024];
	const char *path = shared_file();

	snprintf(keys, sizeof(keys), "initial_credit = %d\n", CREDIT);
	snprintf(guests, sizeof(guests),
		 "[guest prod]\nexec = @/tests/guests/streamer\n"
		 "args = --prefix prod --shared %s\n%s%s"
		 "[guest cons]\nexec = @/tests/guests/streamer\n"
		 "args = --prefix cons --shared %s\n%s%s",
		 path, prod_pool ? "" : "shared_pool = no\n", over_lanes ? "" : "lanes = no\n",
		 path, cons_pool ? "" : "shared_pool = no\n", over_lanes ? "" : "lanes = no\n");
	hub_start_up(&hub, keys, guests, "prod,cons");
	ck_assert(hub_wait_method(&hub, "prod.produce,prod.produce_open,prod.produce_crash,prod.produce_late,"
				  "prod.last,prod.waits,cons.consume,cons.badchan,cons.dupchan,"
				  "cons.hold") == 0);
	if (over_lanes)
		lane_up();
}

static void
start(int pool)
{
	start2(pool, pool);
}

/* hubctl call ARGS...: its output without the newline (malloc'd),
 * asserting the exit status. */
static char *
call(int status, const char *method, const char *a1, const char *a2, const char *a3,
     const char *a4, const char *a5, const char *a6)
{
	char *out = NULL, *nl;
	int rc = hubctl(&hub, &out, "-t", "60", "call", method, a1, a2, a3, a4, a5, a6,
			(char *)NULL);

	ck_assert_msg(rc == status, "hubctl call %s %s: status %d, want %d, output '%s'; %s",
		      method, a1 ? a1 : "", rc, status, out, hub_log_tail(&hub));
	if ((nl = strchr(out, '\n')) != NULL)
		*nl = '\0';
	return out;
}

struct consumed {
	unsigned long long	items, bad, gap;
	char			end[16];
	char			call[256];
};

/* cons.consume METHOD N SIZE STOP HOW DELAY, its answer parsed. */
static struct consumed
consume(const char *method, const char *n, const char *size, const char *stop,
	const char *how, const char *delay)
{
	struct consumed c;
	char *out = call(0, "cons.consume", method, n, size, stop, how, delay);

	memset(&c, 0, sizeof(c));
	ck_assert_msg(sscanf(out, "items=%llu bad=%llu end=%15s gap=%llu call=%255[^\n]",
			     &c.items, &c.bad, c.end, &c.gap, c.call) == 5,
		      "cons.consume answered '%s'", out);
	free(out);
	return c;
}


/* Waits (5 s) until hubd holds no relay and each guest's channels are
 * all free again: nothing of a stream is left behind. */
static void
assert_idle(void)
{
	unsigned long long open = 1, queued = 1;
	int prod = -1, cons = -1;

	for (int i = 0; i < 250; i++) {
		json_object *o = hub_stats(&hub);

		open = json_u64(o, "relays", "open", NULL);
		queued = json_u64(o, "relays", "queued_bytes", NULL);
		json_object_put(o);
		prod = hub_peer_int(&hub, "prod", "channels_open");
		cons = hub_peer_int(&hub, "cons", "channels_open");
		if (open == 0 && queued == 0 && prod == 0 && cons == 0)
			return;
		sleep_ms(20);
	}
	ck_abort_msg("left behind: %llu relays holding %llu bytes, channels open: "
		     "prod %d, cons %d", open, queued, prod, cons);
}

/* The calls cons made to prod over their lane so far (requests from cons,
 * as hubd counts: lane_calls_in), once they are at
 * least want (a guest publishes its lanes' figures now and then: up to
 * 2 s), or what they are then. */
static unsigned long long
lane_calls(unsigned long long want)
{
	unsigned long long n = 0;

	for (int i = 0; i < 100; i++) {
		json_object *o = hub_stats(&hub);

		n = json_u64(o, "guests", "cons", "lane_calls_in");
		json_object_put(o);
		if (n >= want)
			break;
		sleep_ms(20);
	}
	return n;
}

/* A stream through hubd, which offers prod and cons a lane; the next
 * goes over it. */
static void
lane_up(void)
{
	struct consumed c = consume("prod.produce", "1", "10", "0", "0", "0");

	ck_assert_str_eq(c.call, "ok 1");
	c = consume("prod.produce", "1", "10", "0", "0", "0");
	ck_assert_str_eq(c.call, "ok 1");
	ck_assert_msg(lane_calls(1) == 1, "cons made %llu calls over a lane, want 1; %s",
		      lane_calls(1), hub_log_tail(&hub));
}

/* Every one of n items arrived intact, the channel closed, the call ok. */
static void
expect_complete(const struct consumed *c, unsigned long long n)
{
	char call[32];

	snprintf(call, sizeof(call), "ok %llu", n);
	ck_assert_msg(c->items == n && c->bad == 0, "%llu items, %llu bad", c->items, c->bad);
	ck_assert_str_eq(c->end, "closed");
	ck_assert_str_eq(c->call, call);
}

/* r[shm.flow.remaining-credit] r[shm.flow.ordering.sender]
 * r[shm.flow.ordering.receiver]: 3000 items of 4000 bytes, 12 MB through
 * a 64 KiB window: credit flows end to end, from the receiver through
 * hubd to the sender; every item arrives, whole and in order, and the
 * channel's end comes before the answer. With and without the shared
 * pool (items handed on in their variable slots, or copied). */
START_TEST(test_many_items_arrive_in_order)
{
	struct consumed c;

	start(_i);
	c = consume("prod.produce", "3000", "4000", "0", "0", "0");
	expect_complete(&c, 3000);
	/* and again on the same guests: the ids were freed */
	c = consume("prod.produce", "500", "100", "0", "0", "0");
	expect_complete(&c, 500);
	assert_idle();
	ck_assert_int_eq(lane_calls(over_lanes ? 3 : 0), over_lanes ? 3 : 0);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A slow receiver slows the sender: the producer is never more than
 * initial_credit ahead of what the receiver has consumed
 * (r[shm.flow.remaining-credit], carried end to end), and does get well
 * ahead (the check sees something). */
START_TEST(test_slow_receiver_holds_the_sender_back)
{
	struct consumed c;

	start(1);
	c = consume("prod.produce", "150", "8000", "0", "0", "2000");
	expect_complete(&c, 150);
	ck_assert_msg(c.gap <= CREDIT, "the producer got %llu bytes ahead of the consumer, "
		      "more than the window (%d)", c.gap, CREDIT);
	ck_assert_msg(c.gap >= CREDIT / 2, "the producer was never more than %llu bytes "
		      "ahead: the check saw nothing", c.gap);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.flow.reset]: the receiver resets mid-stream. It gets no item
 * after, hubd answers its Reset with one (on_end: reset), the producer's
 * send fails with -ENOTCONN and its call ends, and that answer reaches
 * the receiver. */
START_TEST(test_receiver_reset_stops_the_producer)
{
	struct consumed c;
	char *last;

	start(1);
	c = consume("prod.produce", "100000", "1000", "10", "0", "0");
	ck_assert_msg(c.items == 10 && c.bad == 0, "%llu items, %llu bad", c.items, c.bad);
	ck_assert_str_eq(c.end, "reset");
	ck_assert_msg(strncmp(c.call, "error: user: stopped after ", 27) == 0 &&
		      strstr(c.call, " items: ENOTCONN") != NULL, "call: %s", c.call);
	last = call(0, "prod.last", NULL, NULL, NULL, NULL, NULL, NULL);
	ck_assert_msg(strncmp(last, "sent ", 5) == 0 && strstr(last, ": ENOTCONN") != NULL,
		      "prod.last: %s", last);
	free(last);
	assert_idle();
	/* both serve on */
	c = consume("prod.produce", "20", "1000", "0", "0", "0");
	ck_assert_str_eq(c.call, "ok 20");
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The producer dies (SIGKILL) halfway: the receiver's channel ends with
 * a Reset (on_end -ECONNRESET) before the call's error, and hubd serves
 * both once the producer is back. */
START_TEST(test_producer_crash_resets_the_receiver)
{
	struct consumed c;
	char *out;
	int i;

	start(1);
	c = consume("prod.produce_crash", "200", "1000", "0", "0", "0");
	ck_assert_msg(c.items <= 100 && c.bad == 0, "%llu items, %llu bad", c.items, c.bad);
	ck_assert_str_eq(c.end, "reset");
	ck_assert_str_eq(c.call, "error: cancelled");
	/* restarted (on failure): serves again */
	for (i = 0; i < 500; i++) {
		char *o = NULL;

		if (hub_peer_int(&hub, "prod", "epoch") >= 2 &&
		    hubctl(&hub, &o, "call", "prod.last", (char *)NULL) == 0) {
			free(o);
			break;
		}
		free(o);
		sleep_ms(20);
	}
	ck_assert_msg(i < 500, "prod did not come back: %s", hub_log_tail(&hub));
	assert_idle();
	c = consume("prod.produce", "300", "1000", "0", "0", "0");
	expect_complete(&c, 300);
	out = call(0, "cons.badchan", "prod.produce", "2", NULL, NULL, NULL, NULL);
	ck_assert_msg(strncmp(out, "error: hub: ", 12) == 0, "%s", out);
	free(out);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The receiver dies mid-stream: the producer is told with a Reset (its
 * send fails with -ENOTCONN), hubd drains and frees its channel. */
START_TEST(test_receiver_crash_stops_the_producer)
{
	char *out = NULL, *last = NULL;
	int i;

	start(1);
	ck_assert(hubctl(&hub, &out, "-t", "60", "call", "cons.consume", "prod.produce",
			 "100000", "1000", "10", "1", "0", (char *)NULL) != 0);
	free(out);
	for (i = 0; i < 500; i++) {
		free(last);
		last = call(0, "prod.last", NULL, NULL, NULL, NULL, NULL, NULL);
		if (strcmp(last, "none") != 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(strncmp(last, "sent ", 5) == 0 && strstr(last, ": ENOTCONN") != NULL,
		      "prod.last: %s", last);
	free(last);
	for (i = 0; i < 500 && hub_peer_int(&hub, "cons", "epoch") < 2; i++)
		sleep_ms(20);
	ck_assert(hub_wait_up(&hub, "cons", 10000) == 0);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

struct held {
	unsigned long long	items, bad, full, later, sent1, sent2, most;
	char			end[16];
	char			call[256];
};

/* cons.hold prod.produce N SIZE CREDIT STOP, its answer parsed. */
static struct held
hold(const char *n, const char *size, const char *stop)
{
	struct held h;
	char window[16], *out;

	snprintf(window, sizeof(window), "%d", CREDIT);
	out = call(0, "cons.hold", "prod.produce", n, size, window, stop, NULL);
	memset(&h, 0, sizeof(h));
	ck_assert_msg(sscanf(out, "items=%llu bad=%llu full=%llu later=%llu sent=%llu,%llu "
			     "most=%llu end=%15s call=%255[^\n]", &h.items, &h.bad, &h.full,
			     &h.later, &h.sent1, &h.sent2, &h.most, h.end, h.call) == 9,
		      "cons.hold answered '%s'", out);
	free(out);
	return h;
}

/* r[shm.flow.ordering.receiver] r[shm.flow.zero-credit]: a receiver
 * that keeps items in a queue of its own and holds its channel
 * (guest_chan_hold) grants their credit back as it takes them
 * (guest_chan_consumed), not as they arrive. While it takes none, the
 * producer sends the window's worth of whole items and waits, however
 * long the receiver's guest serves on; then every item arrives, whole
 * and in order. A receiver that stops with items queued gives their
 * credit back: the producer is told, and nothing is left behind. */
START_TEST(test_held_receiver_holds_the_sender_back)
{
	const unsigned long long item = 8002;	/* 8000 bytes and their length */
	const unsigned long long window = CREDIT / item * item;
	unsigned long long waits;
	struct held h;
	char *out;

	start(1);
	h = hold("40", "8000", "0");
	ck_assert_msg(h.items == 40 && h.bad == 0, "%llu items, %llu bad", h.items, h.bad);
	ck_assert_str_eq(h.end, "closed");
	ck_assert_str_eq(h.call, "ok 40");
	ck_assert_msg(h.full == window && h.later == window,
		      "queued %llu bytes once the window was full, %llu later: want %llu",
		      h.full, h.later, window);
	ck_assert_msg(h.sent1 == window && h.sent2 == window,
		      "the producer sent %llu, then %llu bytes: want %llu (what the receiver holds)",
		      h.sent1, h.sent2, window);
	ck_assert_msg(h.most <= CREDIT, "the receiver held %llu bytes, more than the window",
		      h.most);
	out = call(0, "prod.waits", NULL, NULL, NULL, NULL, NULL, NULL);
	waits = strtoull(out, NULL, 10);
	free(out);
	ck_assert_msg(waits >= 1, "the producer never waited for credit");
	assert_idle();
	/* stopped with a window's worth queued */
	h = hold("100000", "1000", "3");
	ck_assert_msg(h.items == 3 && h.bad == 0, "%llu items, %llu bad", h.items, h.bad);
	ck_assert_str_eq(h.end, "reset");
	ck_assert_msg(strncmp(h.call, "error: user: stopped after ", 27) == 0 &&
		      strstr(h.call, " items: ENOTCONN") != NULL, "call: %s", h.call);
	ck_assert_msg(h.most <= CREDIT, "the receiver held %llu bytes, more than the window",
		      h.most);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* The producer answers without closing its channel: hubd ends both
 * ends, the receiver's with a Close after every item, before the
 * answer; the producer's id is freed (r[shm.flow.channel-id-reuse]). */
START_TEST(test_answer_without_close_ends_the_stream)
{
	struct consumed c;

	start(1);
	c = consume("prod.produce_open", "500", "2000", "0", "0", "0");
	expect_complete(&c, 500);
	/* tiny items to a slow receiver: its ring fills, items wait in
	 * hubd's queue, and the answer waits there for them and the Close */
	c = consume("prod.produce_open", "3000", "1", "0", "0", "50");
	expect_complete(&c, 3000);
	c = consume("prod.produce", "3000", "1", "0", "0", "50");
	expect_complete(&c, 3000);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A handler that answers before it streams: the answer ended its
 * chan<T> argument, so its sends fail at once with -ENOTCONN, and so
 * does its close, through hubd as over a lane (through hubd they
 * returned 0 and hubd dropped the items unseen); the caller gets the
 * answer and the end, nothing is left open. */
START_TEST(test_sends_after_the_answer_fail)
{
	struct consumed c;
	char *last;

	start(1);
	c = consume("prod.produce_late", "50", "100", "0", "0", "0");
	ck_assert_msg(c.items == 0 && strcmp(c.call, "ok 50") == 0, "%llu items, call %s",
		      c.items, c.call);
	last = call(0, "prod.last", NULL, NULL, NULL, NULL, NULL, NULL);
	ck_assert_str_eq(last, "late: sent 0: ENOTCONN, close ENOTCONN");
	free(last);
	/* hubctl as the caller: the same */
	last = call(0, "prod.produce_late", "5", "10", NULL, NULL, NULL, NULL);
	ck_assert_str_eq(last, "5");
	free(last);
	last = call(0, "prod.last", NULL, NULL, NULL, NULL, NULL, NULL);
	ck_assert_str_eq(last, "late: sent 0: ENOTCONN, close ENOTCONN");
	free(last);
	assert_idle();
	c = consume("prod.produce", "20", "100", "0", "0", "0");
	expect_complete(&c, 20);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.id.channel-parity] r[shm.flow.channel-table-indexing]: a
 * channel argument that is not one the caller opened to receive on (an
 * even id, one not opened, one out of range, 0, one already relayed) is
 * refused with Err User; the callee never sees the call, and nothing is
 * left open. */
START_TEST(test_bad_channel_is_refused)
{
	static const char *const bad[] = { "2", "61", "64", "1000000", "0" };
	unsigned long long calls;
	json_object *o;
	char *out;

	start(1);
	o = hub_stats(&hub);
	calls = json_u64(o, "guests", "prod", "calls_in");
	json_object_put(o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = call(0, "cons.badchan", "prod.produce", bad[i], NULL, NULL, NULL, NULL);
		ck_assert_msg(strcmp(out, "error: hub: the channel argument must be a channel "
				     "the caller opened to receive on (odd id, open, not in "
				     "use)") == 0, "channel %s: %s", bad[i], out);
		free(out);
	}
	o = hub_stats(&hub);
	ck_assert_int_eq(json_u64(o, "guests", "prod", "calls_in"), calls);
	ck_assert_int_eq(json_u64(o, "guests", "prod", "violations"), 0);
	ck_assert_int_eq(json_u64(o, "guests", "cons", "violations"), 0);
	json_object_put(o);
	assert_idle();
	/* the same channel in a second call while the first streams on it */
	out = call(0, "cons.dupchan", "prod.produce", NULL, NULL, NULL, NULL, NULL);
	ck_assert_msg(strncmp(out, "error: hub: the channel argument must be", 40) == 0 &&
		      strstr(out, "; first: ok 50 items=50 bad=0") != NULL, "%s", out);
	free(out);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* An item the receiver cannot take (larger than its max_payload_size:
 * the producer is in the shared pool, the consumer is not): the stream
 * ends at both ends with a Reset, nobody breaks a rule. */
START_TEST(test_item_too_large_for_the_receiver)
{
	struct consumed c;
	json_object *o;
	char *log;

	start2(1, 0);
	c = consume("prod.produce", "3", "65530", "0", "0", "0");
	ck_assert_msg(c.items == 0 && c.bad == 0, "%llu items, %llu bad", c.items, c.bad);
	ck_assert_str_eq(c.end, "reset");
	ck_assert_msg(strncmp(c.call, "error: user: stopped after ", 27) == 0 &&
		      strstr(c.call, " items: ENOTCONN") != NULL, "call: %s", c.call);
	log = hub_log(&hub);
	ck_assert_msg(over_lanes || strstr(log, "an item is larger than the receiver takes") != NULL,
		      "%s", hub_log_tail(&hub));
	free(log);
	o = hub_stats(&hub);
	ck_assert_int_eq(json_u64(o, "guests", "prod", "violations"), 0);
	ck_assert_int_eq(json_u64(o, "guests", "cons", "violations"), 0);
	json_object_put(o);
	assert_idle();
	c = consume("prod.produce", "30", "30000", "0", "0", "0");
	ck_assert_str_eq(c.call, "ok 30");
	ck_assert_msg(c.items == 30 && c.bad == 0, "%llu items, %llu bad", c.items, c.bad);
	assert_idle();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A receiver that breaks the rules of a relayed stream is ended for it,
 * and the producer is told (Reset: its send fails with -ENOTCONN):
 * r[shm.flow.wrap-rule] a credit word whose window is negative;
 * r[shm.flow.channel-table-indexing] Data on its own receiving channel. */
START_TEST(test_receiver_violation)
{
	static const char *const modes[][2] = {
		{ "relaywrap", "shm.flow.wrap-rule" },
		{ "relaydata", "shm.flow.channel-table-indexing" },
	};
	char guests[512], *last = NULL;
	json_object *p = NULL, *deaths = NULL, *d;
	int i;

	snprintf(guests, sizeof(guests),
		 "[guest prod]\nexec = @/tests/guests/streamer\nargs = --prefix prod\n"
		 "[guest bad]\nexec = @/tests/guests/violator\nargs = --mode=%s\n"
		 "restart = never\n", modes[_i][0]);
	hub_start_up(&hub, "initial_credit = 64K\n", guests, "prod");
	for (i = 0; i < 500; i++) {
		json_object_put(p);
		p = hub_peer(&hub, "bad");
		if (p != NULL && json_object_object_get_ex(p, "deaths", &deaths) &&
		    json_object_array_length(deaths) > 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(i < 500, "%s: the violator was not ended: %s", modes[_i][0],
		      hub_log_tail(&hub));
	d = json_object_array_get_idx(deaths, 0);
	ck_assert_msg(strstr(json_object_get_string(json_get(d, "detail")), modes[_i][1]) != NULL,
		      "%s: detail '%s', want %s", modes[_i][0],
		      json_object_get_string(json_get(d, "detail")), modes[_i][1]);
	json_object_put(p);
	for (i = 0; i < 500; i++) {
		free(last);
		last = call(0, "prod.last", NULL, NULL, NULL, NULL, NULL, NULL);
		if (strcmp(last, "none") != 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(strncmp(last, "sent ", 5) == 0 && strstr(last, ": ENOTCONN") != NULL,
		      "prod.last: %s", last);
	free(last);
	for (i = 0; i < 250; i++) {
		json_object *o = hub_stats(&hub);
		unsigned long long open = json_u64(o, "relays", "open", NULL);

		json_object_put(o);
		if (open == 0 && hub_peer_int(&hub, "prod", "channels_open") == 0)
			break;
		sleep_ms(20);
	}
	ck_assert_msg(i < 250, "a relay or prod's channel was left behind");
	ck_assert_int_eq(hub_peer_int(&hub, "prod", "epoch"), 1);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

static void
lanes_setup(void)
{
	over_lanes = 1;
	harness_setup();
}

/* The streams between prod and cons, each case a hub of its own. */
static void
add_stream_tests(TCase *tc, void (*setup)(void))
{
	tcase_add_unchecked_fixture(tc, setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_many_items_arrive_in_order, 0, 2);
	tcase_add_test(tc, test_slow_receiver_holds_the_sender_back);
	tcase_add_test(tc, test_held_receiver_holds_the_sender_back);
	tcase_add_test(tc, test_receiver_reset_stops_the_producer);
	tcase_add_test(tc, test_producer_crash_resets_the_receiver);
	tcase_add_test(tc, test_receiver_crash_stops_the_producer);
	tcase_add_test(tc, test_answer_without_close_ends_the_stream);
	tcase_add_test(tc, test_sends_after_the_answer_fail);
	tcase_add_test(tc, test_bad_channel_is_refused);
	tcase_add_test(tc, test_item_too_large_for_the_receiver);
}

Suite *suite_relay(void);
Suite *
suite_relay(void)
{
	Suite *s = suite_create("relay");
	TCase *tc = tcase_create("relay");

	add_stream_tests(tc, harness_setup);
	tcase_add_loop_test(tc, test_receiver_violation, 0, 2);
	suite_add_tcase(s, tc);
	/* the same over a lane */
	tc = tcase_create("relay_lanes");
	add_stream_tests(tc, lanes_setup);
	suite_add_tcase(s, tc);
	return s;
}
