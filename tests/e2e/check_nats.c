/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats end to end: a real nats-server on loopback and two (or three)
 * real hubds, each with its bridge; calls from hubctl and from guests on
 * one hub reach methods on another, errors keep their meaning, load is
 * shared by a queue group, and NATS going away ends in an error or an
 * answer, never a hang. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>
#include <seccomp.h>

#include "nats/hubnats.h"
#include "tests/e2e/natsd.h"
#include "tests/e2e/natshubs.h"

static struct natsd natsd[3];
static struct hub_proc hub_a, hub_b, hub_b2;

START_TEST(test_call_across_hubs)
{
	const char *note;

	natsd_start(&natsd[0]);
	nh_start_b(&hub_b, "b", natsd[0].url);
	nh_start_a(&hub_a, natsd[0].url, NULL);
	ck_assert_msg(hub_wait_method(&hub_a, "kv.get,kv.put,sl.echo") == 0, "%s", hub_log_tail(&hub_a));
	/* hubctl on A puts, B has it, a guest on A reads it back */
	nh_expect_ok(&hub_a, "", "kv.put", "colour", "blue");
	nh_expect_ok(&hub_b, "blue", "kv.get", "colour", NULL);
	nh_expect_ok(&hub_a, "ok blue", "cl.call", "kv.get", "colour");
	/* the callee's own error, as it said it */
	nh_expect_err(&hub_a, "no such key", "kv.get", "shape", NULL);
	/* hubctl methods says where, hubctl peers how the bridge is */
	nh_wait_where(&hub_a, "kv.get", "NATS: hub b");
	for (double end = now_s() + 30;
	     strstr(nh_note_of(&hub_a, "nats"), "from 1 hub(s)") == NULL && now_s() < end;)
		sleep_ms(50);
	note = nh_note_of(&hub_a, "nats");
	ck_assert_msg(note != NULL && strstr(note, natsd[0].url) != NULL &&
		      strstr(note, "as hub a") != NULL && strstr(note, "from 1 hub(s) (b)") != NULL,
		      "note: %s", note);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* Waits (30 s) until h no longer imports method (hubctl methods shows
 * no "where" for it): what the asserts after it take for done. */
static void
wait_withdrawn(struct hub_proc *h, const char *method)
{
	for (double end = now_s() + 30; nh_where(h, method)[0] != '\0' && now_s() < end;)
		sleep_ms(50);
	ck_assert_msg(nh_where(h, method)[0] == '\0', "%s still served at '%s'; %s", method,
		      nh_where(h, method), hub_log_tail(h));
}

/* Waits (30 s) until the end of h's log holds what; asserts it. */
static void
wait_log_tail(struct hub_proc *h, const char *what)
{
	for (double end = now_s() + 30; strstr(hub_log_tail(h), what) == NULL && now_s() < end;)
		sleep_ms(50);
	ck_assert_msg(strstr(hub_log_tail(h), what) != NULL, "no '%s' in the log: %s", what,
		      hub_log_tail(h));
}

/* Each kind of error on the far side is the same kind here: the caller
 * guest sees its status (cl.call answers "error: -ERRNO"), hubctl its
 * text. */
START_TEST(test_errors_keep_their_meaning)
{
	char *out = NULL;

	natsd_start(&natsd[0]);
	nh_start_b(&hub_b, "b", natsd[0].url);
	nh_start_a(&hub_a, natsd[0].url, "timeout = 1s\n");
	ck_assert_msg(hub_wait_method(&hub_a, "kv.get,sl.sleep,sl.echo") == 0, "%s",
		      hub_log_tail(&hub_a));
	/* the callee's own error */
	nh_expect_ok(&hub_a, "error: -121", "cl.call", "kv.get", "nothing");
	/* no answer in time: B says so first (ETIMEDOUT), A stops waiting */
	nh_expect_err(&hub_a, "no answer on hub b in time", "sl.sleep", "3000", NULL);
	/* arguments the signature refuses never leave A (hubd checks) */
	ck_assert_int_ne(nh_ctl(&hub_a, &out, "sl.sleep", "-1", NULL), 0);
	free(out);
	/* B gone (its goodbye heard at once): nobody serves it, and A
	 * withdrew it (ENOSYS) */
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	wait_withdrawn(&hub_a, "kv.get");
	nh_expect_ok(&hub_a, "error: -38", "cl.call", "kv.get", "colour");
	nh_expect_err(&hub_a, "no such method: kv.get", "kv.get", "colour", NULL);
	/* B back: calls resume */
	nh_start_b(&hub_b, "b", natsd[0].url);
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "red");
	/* B's kv registers (and B announces) its methods one by one: kv.get
	 * may come to A after kv.put */
	nh_wait_ok(&hub_a, "red", "kv.get", "colour", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* Two B hubs export the same methods: NATS's queue group gives each a
 * share; one killed in the middle of a load loses no call silently
 * (each is answered, or ends in an error once A's timeout passes). */
START_TEST(test_queue_group_shares_and_survives_a_kill)
{
	char *answer;
	pid_t pid, bridge;
	int rfd;

	natsd_start(&natsd[0]);
	nh_start_b(&hub_b, "b1", natsd[0].url);
	nh_start_b(&hub_b2, "b2", natsd[0].url);
	nh_start_a(&hub_a, natsd[0].url, "timeout = 2s\n");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	/* a load's calls go as a few batches, each to one member: loads
	 * until each hub had a share */
	for (int i = 0; i < 20 && (hub_peer_int(&hub_b, "sl", "calls_in") == 0 ||
				   hub_peer_int(&hub_b2, "sl", "calls_in") == 0); i++) {
		pid = nh_load_in_child(&hub_a, "sl.echo", "400", &rfd);
		answer = nh_child_answer(pid, rfd);
		ck_assert_msg(strcmp(answer, "ok=400") == 0, "load: %s", answer);
	}
	ck_assert_uint_gt(hub_peer_int(&hub_b, "sl", "calls_in"), 0);
	ck_assert_uint_gt(hub_peer_int(&hub_b2, "sl", "calls_in"), 0);
	/* b1 killed under load */
	bridge = hub_peer_int(&hub_b, "nats", "pid");
	pid = nh_load_in_child(&hub_a, "sl.echo", "3000", &rfd);
	sleep_ms(150);
	kill(hub_b.pid, SIGKILL);
	waitpid(hub_b.pid, NULL, 0);
	answer = nh_child_answer(pid, rfd);
	nh_all_ended(answer, 3000);
	ck_assert_msg(nh_load_count(answer, "ok=") > 0, "load: %s; %s", answer, hub_log_tail(&hub_a));
	/* b2 serves all of it from now on: once b1's bridge, which follows
	 * its hubd, is gone from NATS (alive, it took a batch and left it
	 * to time out: 64 calls under load) */
	for (double end = now_s() + 30; alive(bridge) && now_s() < end;)
		sleep_ms(20);
	ck_assert_msg(!alive(bridge), "b1's bridge outlived its hubd");
	pid = nh_load_in_child(&hub_a, "sl.echo", "200", &rfd);
	answer = nh_child_answer(pid, rfd);
	ck_assert_msg(strcmp(answer, "ok=200") == 0, "load: %s", answer);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b2), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* The NATS server killed and started again: a call meanwhile ends at once
 * (not connected), one in flight ends in an error or an answer, and calls
 * work again once the bridges are back. */
START_TEST(test_nats_restarts)
{
	char *answer;
	pid_t pid;
	int rfd;

	natsd_start(&natsd[0]);
	nh_start_b(&hub_b, "b", natsd[0].url);
	nh_start_a(&hub_a, natsd[0].url, "timeout = 3s\n");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	pid = nh_load_in_child(&hub_a, "sl.sleep", "1", &rfd);
	sleep_ms(100);
	natsd_kill(&natsd[0]);
	/* once A's bridge has seen it go, a call fails at once */
	wait_log_tail(&hub_a, "NATS connection lost");
	nh_expect_err(&hub_a, "not connected to NATS", "sl.echo", "y", NULL);
	natsd_restart(&natsd[0]);
	answer = nh_child_answer(pid, rfd);
	nh_all_ended(answer, 1);
	nh_wait_ok(&hub_a, "z", "sl.echo", "z", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* A cluster of three NATS servers: each bridge knows all three; one
 * killed, calls go on through the others. */
START_TEST(test_cluster_loses_a_node)
{
	char servers[256], *answer;
	pid_t pid;
	int rfd;

	natsd_cluster(natsd, 3);
	snprintf(servers, sizeof(servers), "%s, %s, %s", natsd[0].url, natsd[1].url, natsd[2].url);
	nh_start_b(&hub_b, "b", servers);
	nh_start_a(&hub_a, servers, "timeout = 2s\n");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	for (int i = 0; i < 3; i++) {
		natsd_kill(&natsd[i]);
		nh_wait_ok(&hub_a, "y", "sl.echo", "y", NULL);
		pid = nh_load_in_child(&hub_a, "sl.echo", "100", &rfd);
	answer = nh_child_answer(pid, rfd);
		nh_all_ended(answer, 100);
		natsd_restart(&natsd[i]);
	}
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	for (int i = 0; i < 3; i++)
		natsd_kill(&natsd[i]);
}
END_TEST

#define CREDIT	65536	/* initial_credit of both hubs in the stream tests */

/* The stream tests' hubs: B serves streamer sp and counter, A has
 * streamer sc; each bridge exports its own and imports the other's. */
static void
start_streams(void)
{
	char shared[256], hubkeys[64], guests[2048], *nats;

	int fd;

	/* where the producer counts what it sent, for the consumer to read
	 * (streamer --shared): open to both guests, each a uid of its own */
	snprintf(shared, sizeof(shared), "%s", harness_path("sent"));
	ck_assert_int_ge(fd = open(shared, O_RDWR | O_CREAT | O_TRUNC, 0600), 0);
	ck_assert_int_eq(fchmod(fd, 0666), 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	close(fd);
	snprintf(hubkeys, sizeof(hubkeys), "initial_credit = %d\n", CREDIT);
	natsd_start(&natsd[0]);
	nats = nh_bridge("b", natsd[0].url, "sc.*",
		      "[export]\nmethods = sp.* counter.*\n[import]\nmethods = sc.*\n");
	snprintf(guests, sizeof(guests),
		 "[guest sp]\nexec = @/tests/guests/streamer\nargs = --prefix sp --shared %s\n"
		 "[guest counter]\nexec = @/guests/counter\n%s", shared, nats);
	free(nats);
	hub_start_up(&hub_b, hubkeys, guests, "sp,counter,nats");
	nats = nh_bridge("a", natsd[0].url, "sp.*, counter.*",
		      "[export]\nmethods = sc.*\n[import]\nmethods = sp.* counter.*\ntimeout = 5s\n");
	snprintf(guests, sizeof(guests),
		 "[guest sc]\nexec = @/tests/guests/streamer\nargs = --prefix sc --shared %s\n%s",
		 shared, nats);
	free(nats);
	hub_start_up(&hub_a, hubkeys, guests, "sc,nats");
	ck_assert_msg(hub_wait_method(&hub_a, "sp.produce,counter.count") == 0, "%s",
		      hub_log_tail(&hub_a));
	ck_assert_msg(hub_wait_method(&hub_b, "sc.produce") == 0, "%s", hub_log_tail(&hub_b));
}

struct consumed {
	unsigned long long	items, bad, gap;
	char			end[16], call[256];
};

/* CONSUMER.consume METHOD N SIZE STOP HOW DELAY on h (streamer's). */
static struct consumed
consume(struct hub_proc *h, const char *consumer, const char *method, const char *n,
	const char *size, const char *stop, const char *delay)
{
	struct consumed c = { 0 };
	char *out = NULL;
	int rc = hubctl(h, &out, "-t", "60", "call", consumer, method, n, size, stop, "0", delay,
			(char *)NULL);

	ck_assert_msg(rc == 0, "%s: status %d, '%s'; %s", consumer, rc, out, hub_log_tail(h));
	ck_assert_msg(sscanf(out, "items=%llu bad=%llu end=%15s gap=%llu call=%255[^\n]",
			     &c.items, &c.bad, c.end, &c.gap, c.call) == 5, "consume: '%s'", out);
	free(out);
	return c;
}

/* What a plain client on NATS saw of the streams' items (doc/nats.md,
 * "Streams"): the items in packs (Hub-Pack: N, summed), messages with
 * items alone, and whether the first said how far ahead its sender
 * gives credit (Hub-Ahead). */
struct seen_items {
	unsigned long long	packed, alone;
	size_t			ahead;
};

static struct seen_items
seen_items(natsSubscription *sub)
{
	struct seen_items v = { 0 };
	natsMsg *m = NULL;
	const char *h;

	while (natsSubscription_NextMsg(&m, sub, 200) == NATS_OK) {
		if (natsMsgHeader_Get(m, BR_H_PACK, &h) == NATS_OK)
			v.packed += strtoull(h, NULL, 10);
		else if (natsMsgHeader_Get(m, BR_H_END, &h) != NATS_OK &&
			 natsMsgHeader_Get(m, BR_H_STREAM, &h) != NATS_OK && natsMsg_GetReply(m) == NULL)
			v.alone++;	/* not an answer, a request or an end */
		if (natsMsgHeader_Get(m, BR_H_AHEAD, &h) == NATS_OK)
			v.ahead = strtoull(h, NULL, 10);
		natsMsg_Destroy(m);
	}
	return v;
}

/* A stream across, both ways: a guest on A reads what a guest on B
 * sends (every item checked, in order), and the other way round; and
 * hubctl on A reads counter's stream on B as it would on B. The items
 * cross in packs, every one of them: a plain client subscribed to the
 * inboxes counts them. */
START_TEST(test_streams_both_ways)
{
	struct consumed c;
	struct seen_items v;
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	char want[16], *out = NULL;

	start_streams();
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd[0].url), NATS_OK);
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "_INBOX.*.s.*"), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	c = consume(&hub_a, "sc.consume", "sp.produce", "2000", "1000", "0", "0");
	snprintf(want, sizeof(want), "ok %d", 2000);
	ck_assert_msg(c.items == 2000 && c.bad == 0 && strcmp(c.end, "closed") == 0 &&
		      strcmp(c.call, want) == 0, "items=%llu bad=%llu end=%s call=%s; %s", c.items,
		      c.bad, c.end, c.call, hub_log_tail(&hub_a));
	v = seen_items(sub);
	ck_assert_msg(v.packed == 2000 && v.alone == 0 && v.ahead == BR_STREAM_AHEAD,
		      "on NATS: %llu items in packs, %llu alone, Hub-Ahead %zu", v.packed, v.alone,
		      v.ahead);
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	c = consume(&hub_b, "sp.consume", "sc.produce", "500", "100", "0", "0");
	ck_assert_msg(c.items == 500 && c.bad == 0 && strcmp(c.end, "closed") == 0,
		      "items=%llu bad=%llu end=%s call=%s; %s", c.items, c.bad, c.end, c.call,
		      hub_log_tail(&hub_b));
	hubctl_ok(&hub_a, &out, "call", "counter.count", "5", (char *)NULL);
	ck_assert_str_eq(out, "1\n2\n3\n4\n5\n5\n");
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* A caller that does not say it reads packs (a bridge of before them,
 * or any NATS client): each item comes alone, the first with the credit
 * subject and how far ahead the sender gives credit, then the end, then
 * the answer. */
START_TEST(test_stream_to_a_caller_without_packs)
{
	static const uint8_t args[] = { 50, 10, 1 };	/* 50 items of 10 bytes, a chan */
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	natsMsg *m = NULL;
	const char *h;
	int items = 0, credit = 0, ended = 0, answered = 0;

	start_streams();
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd[0].url), NATS_OK);
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "_INBOX.old.>"), NATS_OK);
	ck_assert_int_eq(natsMsg_Create(&m, "hub.call.sp.produce", "_INBOX.old.r",
					(const char *)args, sizeof(args)), NATS_OK);
	natsMsgHeader_Set(m, BR_H_SIG, "u64,u64,chan<bytes>->u64");
	natsMsgHeader_Set(m, BR_H_STREAM, "_INBOX.old.s.1");
	ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
	natsMsg_Destroy(m);
	while (!answered && natsSubscription_NextMsg(&m, sub, 10000) == NATS_OK) {
		const char *subject = natsMsg_GetSubject(m);

		if (strcmp(subject, "_INBOX.old.r") == 0) {
			ck_assert_msg(natsMsgHeader_Get(m, BR_H_STATUS, &h) == NATS_OK &&
				      strcmp(h, "ok") == 0, "the answer: %.*s",
				      natsMsg_GetDataLength(m), natsMsg_GetData(m));
			answered = 1;
		} else if (natsMsgHeader_Get(m, BR_H_END, &h) == NATS_OK) {
			ck_assert_str_eq(h, "close");
			ck_assert_int_eq(answered, 0);
			ended = 1;
		} else {
			ck_assert_str_eq(subject, "_INBOX.old.s.1");
			ck_assert_msg(natsMsgHeader_Get(m, BR_H_PACK, &h) != NATS_OK,
				      "a pack to a caller that reads none");
			ck_assert_int_eq(natsMsg_GetDataLength(m), 11);	/* its size, 10 bytes */
			ck_assert_int_eq(ended, 0);
			if (items++ == 0)
				credit = natsMsgHeader_Get(m, BR_H_CREDIT, &h) == NATS_OK &&
					 natsMsgHeader_Get(m, BR_H_AHEAD, &h) == NATS_OK &&
					 strtoull(h, NULL, 10) == BR_STREAM_AHEAD;
		}
		natsMsg_Destroy(m);
	}
	ck_assert_msg(items == 50 && credit && ended && answered,
		      "items %d, credit subject and ahead on the first %d, end %d, answer %d; %s",
		      items, credit, ended, answered, hub_log_tail(&hub_b));
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* A slow reader on A holds the writer on B back: the producer is never
 * further ahead of what was read than the two hubs' windows and what
 * crosses NATS (B's bridge gives credit back BR_STREAM_AHEAD before A
 * says it sent the items on; A says so each quarter of that), and does
 * get ahead, further than the windows alone would let it. A reader that
 * stops in the middle stops the writer over there. */
START_TEST(test_stream_credit_across)
{
	const unsigned long long most = 2 * CREDIT + BR_STREAM_AHEAD + BR_STREAM_AHEAD / 4 + 8000;
	struct consumed c;
	char *out = NULL;

	start_streams();
	c = consume(&hub_a, "sc.consume", "sp.produce", "400", "8000", "0", "2000");
	ck_assert_msg(c.items == 400 && c.bad == 0 && strcmp(c.end, "closed") == 0,
		      "items=%llu bad=%llu end=%s call=%s", c.items, c.bad, c.end, c.call);
	ck_assert_msg(c.gap <= most, "the producer got %llu bytes ahead of the consumer, "
		      "more than both windows and the credit ahead (%llu)", c.gap, most);
	ck_assert_msg(c.gap > 2 * CREDIT, "the producer was never more than %llu bytes ahead: "
		      "no credit ahead across NATS", c.gap);
	/* the reader resets after 100 of 100000 items: B's producer stops */
	c = consume(&hub_a, "sc.consume", "sp.produce", "100000", "1000", "100", "0");
	ck_assert_msg(strcmp(c.end, "reset") == 0 && c.items >= 100,
		      "items=%llu end=%s call=%s", c.items, c.end, c.call);
	hubctl_ok(&hub_b, &out, "call", "sp.last", (char *)NULL);
	ck_assert_msg(strncmp(out, "sent ", 5) == 0 && strtoul(out + 5, NULL, 10) < 100000 &&
		      strstr(out, "ENOTCONN") != NULL, "sp.last: %s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* Calls in flight on h (hubctl calls). */
static size_t
calls_in_flight(struct hub_proc *h)
{
	json_object *a = hub_request(h, "{\"cmd\":\"calls\"}", NULL), *calls;
	size_t n;

	ck_assert(a != NULL && json_object_object_get_ex(a, "calls", &calls));
	n = json_object_array_length(calls);
	json_object_put(a);
	return n;
}

/* A caller on A that gives up cancels the call on B too: trickle holds
 * its stream open until cancelled (or 60 s), and B has no call left in
 * flight soon after hubctl on A gave up (waited for 20 s, well short of
 * the 60). hubctl waits 5 s: time for the items to cross under load. A bridge hubd restarts carries
 * calls again once it is back. */
START_TEST(test_cancel_crosses_and_bridge_restarts)
{
	char *out = NULL;
	size_t n = 1;

	start_streams();
	ck_assert_int_ne(hubctl(&hub_a, &out, "-t", "5", "call", "sp.trickle", "3", (char *)NULL), 0);
	ck_assert_msg(strncmp(out, "1\n2\n3\n", 6) == 0, "trickle: '%s'", out);
	free(out);
	for (double end = now_s() + 20; (n = calls_in_flight(&hub_b)) != 0 && now_s() < end;)
		sleep_ms(50);
	ck_assert_msg(n == 0, "B still serves %zu call(s) 20 s after A gave up; %s", n,
		      hub_log_tail(&hub_b));
	for (double end = now_s() + 20; (n = calls_in_flight(&hub_a)) != 0 && now_s() < end;)
		sleep_ms(50);
	ck_assert_msg(n == 0, "A's bridge still has the call; %s", hub_log_tail(&hub_a));
	/* B's bridge restarted by its hubd: calls through it resume */
	hubctl_ok(&hub_b, &out, "restart", "nats", (char *)NULL);
	free(out);
	out = NULL;
	for (int i = 0; i < 100; i++) {
		free(out);
		out = NULL;
		if (hubctl(&hub_a, &out, "-t", "10", "call", "counter.count", "2", (char *)NULL) == 0)
			break;
		sleep_ms(100);
	}
	ck_assert_msg(out != NULL && strcmp(out, "1\n2\n2\n") == 0, "count: '%s'; %s", out,
		      hub_log_tail(&hub_a));
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* A NATS server that wants a user and password: a bridge with the wrong
 * one never gets in (its calls fail at once, it says why and keeps
 * trying), one with the right one works. */
START_TEST(test_credentials)
{
	char servers[128], *nats, guests[1024];

	natsd_start_auth(&natsd[0], "hubuser", "s3cret");
	snprintf(servers, sizeof(servers), "%s", natsd[0].url);
	nats = nh_bridge("b", servers, NULL,
		      "user = hubuser\npassword = s3cret\n[export]\nmethods = sl.*\n");
	snprintf(guests, sizeof(guests), LB("sl") "%s", nats);
	free(nats);
	hub_start_up(&hub_b, NULL, guests, "sl,nats");
	nats = nh_bridge("a", servers, "sl.*",
		      "user = hubuser\npassword = wrong\n[import]\nmethods = sl.*\n");
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	free(nats);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	wait_log_tail(&hub_a, "Authorization");
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	/* the right password */
	nats = nh_bridge("a", servers, "sl.*",
		      "user = hubuser\npassword = s3cret\n[import]\nmethods = sl.*\n");
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	free(nats);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "z", "sl.echo", "z", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* A request from the test itself (anyone on NATS): the answer's
 * Hub-Status and text, or "none" when nothing came in 5 s. */
static const char *
raw_request(natsConnection *nc, const char *subject, const char *sig, const void *data,
	    int len, char *text, size_t cap)
{
	static char word[32];
	natsMsg *m = NULL, *r = NULL;
	const char *v = NULL;

	ck_assert_int_eq(natsMsg_Create(&m, subject, NULL, data, len), NATS_OK);
	if (sig != NULL)
		natsMsgHeader_Set(m, "Hub-Signature", sig);
	snprintf(word, sizeof(word), "none");
	text[0] = '\0';
	if (natsConnection_RequestMsg(&r, nc, m, 5000) == NATS_OK) {
		if (natsMsgHeader_Get(r, "Hub-Status", &v) == NATS_OK && v != NULL)
			snprintf(word, sizeof(word), "%s", v);
		snprintf(text, cap, "%.*s", natsMsg_GetDataLength(r), natsMsg_GetData(r));
		natsMsg_Destroy(r);
	}
	natsMsg_Destroy(m);
	return word;
}

/* Whatever anyone on NATS sends, the bridges answer with an error or
 * drop it, and go on: no signature or the wrong one, arguments that do
 * not decode, a method not exported, announcements that are not JSON or
 * name what cannot be a method. Nothing is registered from them. */
START_TEST(test_hostile_messages)
{
	static const char *const junk[] = {
		"not json", "[]", "{\"hub\":\"x.y\",\"methods\":[[\"sl.a\",\"str->str\"]]}",
		"{\"hub\":\"m\",\"methods\":[[\"sl.b c\",\"str->str\"],[\"sl.>\",\"str->str\"],"
		"[\"sl.d\",\"str->\"],[\"sl.e\",7],[\"sl.f\"]]}",
		"{\"hub\":\"m\",\"methods\":7}", "{\"hub\":7}",
		"{\"hub\":\"m\",\"methods\":[[\"sl.g\\u0000x\",\"str->str\"]]}",
		"{\"hub\":\"m\\u0000n\",\"methods\":[[\"sl.h\",\"str->str\"]]}",
	};
	natsConnection *nc = NULL;
	char text[512], *out = NULL;
	const char *word;

	natsd_start(&natsd[0]);
	nh_start_b(&hub_b, "b", natsd[0].url);
	nh_start_a(&hub_a, natsd[0].url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd[0].url), NATS_OK);
	word = raw_request(nc, "hub.call.sl.echo", NULL, "\x01x", 2, text, sizeof(text));
	ck_assert_msg(strcmp(word, "bad-payload") == 0, "%s: %s", word, text);
	word = raw_request(nc, "hub.call.sl.echo", "bytes->bytes", "\x01x", 2, text, sizeof(text));
	ck_assert_msg(strcmp(word, "bad-payload") == 0 && strstr(text, "str->str") != NULL,
		      "%s: %s", word, text);
	/* a str whose length runs past the end: B's hubd refuses it */
	word = raw_request(nc, "hub.call.sl.echo", "str->str", "\x09x", 2, text, sizeof(text));
	ck_assert_msg(strcmp(word, "bad-payload") == 0, "%s: %s", word, text);
	word = raw_request(nc, "hub.at.b.kv.nothing", "str->str", "\x01x", 2, text, sizeof(text));
	ck_assert_msg(strcmp(word, "no-method") == 0, "%s: %s", word, text);
	word = raw_request(nc, "hub.call.sl.echo", "str->str", "\x01x", 2, text, sizeof(text));
	ck_assert_msg(strcmp(word, "ok") == 0 && memcmp(text, "\x01x", 2) == 0, "%s: %s", word, text);
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		ck_assert_int_eq(natsConnection_PublishString(nc, "hub.announce", junk[i]), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	sleep_ms(500);
	/* both bridges still there, as they were; nothing of the junk here */
	ck_assert_int_eq(hub_peer_int(&hub_a, "nats", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub_b, "nats", "restarts"), 0);
	hubctl_ok(&hub_a, &out, "methods", (char *)NULL);
	ck_assert_msg(strstr(out, "\nsl.a ") == NULL && strstr(out, "\nsl.b ") == NULL &&
		      strstr(out, "\nsl.d ") == NULL && strstr(out, "\nsl.e ") == NULL &&
		      strstr(out, "\nsl.f ") == NULL && strstr(out, "\nsl.g ") == NULL &&
		      strstr(out, "\nsl.h ") == NULL && strstr(out, "\nsl.echo ") != NULL, "%s", out);
	free(out);
	nh_expect_ok(&hub_a, "ok y", "cl.call", "sl.echo", "y");
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* hub.methods (the bridge's view of what it may export): the live
 * methods matching a pattern, without the host's or the asker's own. */
START_TEST(test_hub_methods_service)
{
	char *out = NULL;

	hub_start_up(&hub_a, NULL, "[guest kv]\nexec = @/guests/kv\n" LB("cl"), "kv,cl");
	ck_assert(hub_wait_method(&hub_a, "kv.get,cl.echo") == 0);
	hubctl_ok(&hub_a, &out, "call", "hub.methods", "kv.*", (char *)NULL);
	ck_assert_msg(strstr(out, "[\"kv.get\",\"str->bytes\"]") != NULL &&
		      strstr(out, "cl.") == NULL && strstr(out, "hub.") == NULL, "%s", out);
	free(out);
	hubctl_ok(&hub_a, &out, "call", "hub.methods", "cl.echo", (char *)NULL);
	ck_assert_msg(strstr(out, "cl.echo") != NULL && strstr(out, "kv.") == NULL, "%s", out);
	free(out);
	/* a guest does not see its own: cl asks (an empty list, read as
	 * a str by cl.call, is "") */
	nh_expect_ok(&hub_a, "ok ", "cl.call", "hub.methods", "cl.*");
	ck_assert_int_ne(hubctl(&hub_a, &out, "call", "hub.methods",
				"a-pattern-far-too-long-to-be-a-method-name-at-all-not-even-close-no", (char *)NULL), 0);
	free(out);
	/* a guest down: its methods are not offered */
	hubctl_ok(&hub_a, &out, "stop", "kv", (char *)NULL);
	free(out);
	hubctl_ok(&hub_a, &out, "call", "hub.methods", "*", (char *)NULL);
	ck_assert_msg(strstr(out, "kv.") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
}
END_TEST

/* [import] from and prefix: A takes B's methods under b.*, calls reach
 * B by name (PREFIX.at.b.METHOD, B exporting with queue = no), and a
 * method B does not export is B's "no such method" here. */
START_TEST(test_prefix_and_from)
{
	char *nats, guests[1024], *out = NULL;

	natsd_start(&natsd[0]);
	nats = nh_bridge("b", natsd[0].url, NULL, "[export]\nmethods = kv.* sl.echo\nqueue = no\n");
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n" LB("sl") "%s", nats);
	free(nats);
	hub_start_up(&hub_b, NULL, guests, "kv,sl,nats");
	nats = nh_bridge("a", natsd[0].url, "b.*",
		      "[import]\nmethods = kv.* sl.*\nprefix = b\nfrom = b\n");
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	free(nats);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	ck_assert_msg(hub_wait_method(&hub_a, "b.kv.put,b.kv.get,b.sl.echo") == 0, "%s",
		      hub_log_tail(&hub_a));
	nh_expect_ok(&hub_a, "", "b.kv.put", "k", "v");
	nh_expect_ok(&hub_b, "v", "kv.get", "k", NULL);
	nh_expect_ok(&hub_a, "ok v", "cl.call", "b.kv.get", "k");
	hubctl_ok(&hub_b, &out, "stop", "kv", (char *)NULL);
	free(out);
	/* B no longer exports kv.* (its guest is down): A withdraws it */
	wait_withdrawn(&hub_a, "b.kv.get");
	nh_expect_ok(&hub_a, "error: -38", "cl.call", "b.kv.get", "k");
	nh_expect_err(&hub_a, "no such method: b.kv.get", "b.kv.get", "k", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* A NATS server that speaks TLS only: a bridge that trusts its
 * certificate (tls_ca) gets in and calls cross; one that trusts nothing
 * in particular is refused, says why and keeps trying. */
START_TEST(test_tls)
{
	char extra[512], *nats, guests[1024];

	natsd_start_tls(&natsd[0]);
	snprintf(extra, sizeof(extra), "tls_ca = %s\n[export]\nmethods = sl.*\n", natsd[0].cert);
	nats = nh_bridge("b", natsd[0].url, NULL, extra);
	snprintf(guests, sizeof(guests), LB("sl") "%s", nats);
	free(nats);
	hub_start_up(&hub_b, NULL, guests, "sl,nats");
	nats = nh_bridge("a", natsd[0].url, "sl.*", "tls = yes\n[import]\nmethods = sl.*\n");
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	free(nats);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	wait_log_tail(&hub_a, "cannot connect");
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	snprintf(extra, sizeof(extra), "tls_ca = %s\n[import]\nmethods = sl.*\n", natsd[0].cert);
	nats = nh_bridge("a", natsd[0].url, "sl.*", extra);
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	free(nats);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "t", "sl.echo", "t", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

/* Every kind of error a callee on B answers with (guest_reply_status)
 * is the same kind, with its text, for a caller on A: through guest_call
 * and guest_call_async (prober's why2 asks both). */
START_TEST(test_every_error_kind_crosses)
{
	static const struct {
		const char	*kind, *want;
	} kinds[] = {
		{ "user", "user: t1 | user: t1" },
		{ "unknown", "unknown method: t2 | unknown method: t2" },
		{ "invalid", "invalid payload: t3 | invalid payload: t3" },
		{ "cancelled", "cancelled: t4 | cancelled: t4" },
		{ "unreachable", "unreachable: t5 | unreachable: t5" },
		{ "timeout", "timeout: t6 | timeout: t6" },
	};
	char *nats, guests[1024], *out = NULL, text[8];

	natsd_start(&natsd[0]);
	nats = nh_bridge("b", natsd[0].url, NULL, "[export]\nmethods = pr.*\n");
	snprintf(guests, sizeof(guests), "[guest pr]\nexec = @/tests/guests/prober\n"
		 "args = --prefix pr\n%s", nats);
	free(nats);
	hub_start_up(&hub_b, NULL, guests, "pr,nats");
	nats = nh_bridge("a", natsd[0].url, "pr.*", "[import]\nmethods = pr.*\n");
	snprintf(guests, sizeof(guests), "[guest pa]\nexec = @/tests/guests/prober\n"
		 "args = --prefix pa\n%s", nats);
	free(nats);
	hub_start_up(&hub_a, NULL, guests, "pa,nats");
	ck_assert_msg(hub_wait_method(&hub_a, "pr.fail,pa.why2") == 0, "%s", hub_log_tail(&hub_a));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(text, sizeof(text), "t%zu", i + 1);
		ck_assert_int_eq(hubctl(&hub_a, &out, "call", "pa.why2", "pr.fail", kinds[i].kind, text,
					(char *)NULL), 0);
		ck_assert_msg(strncmp(out, kinds[i].want, strlen(kinds[i].want)) == 0,
			      "%s: '%s', want '%s'", kinds[i].kind, out, kinds[i].want);
		free(out);
	}
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

Suite *suite_nats(void);

/* As under hubd.service (RestrictAddressFamilies=AF_UNIX): no socket of
 * the internet families, EAFNOSUPPORT, for this test's process and the
 * hubd and guests it starts. */
static void
refuse_tcp(void)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(seccomp_rule_add(f, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					  SCMP_A0(SCMP_CMP_EQ, AF_INET)), 0);
	ck_assert_int_eq(seccomp_rule_add(f, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					  SCMP_A0(SCMP_CMP_EQ, AF_INET6)), 0);
	ck_assert_int_eq(seccomp_load(f), 0);
	seccomp_release(f);
}

/* A bridge that may open no TCP socket says so, and what allows it under
 * systemd, not only that no server is available. */
START_TEST(test_tcp_refused_said)
{
	char *log = NULL;

	/* the filter stays with the process: not in a runner that runs every
	 * test in one (CK_FORK=no) */
	if (getenv("CK_FORK") != NULL && strcmp(getenv("CK_FORK"), "no") == 0)
		return;
	refuse_tcp();
	nh_start_a(&hub_a, "nats://127.0.0.1:4222", NULL);
	for (int i = 0; i < 200; i++) {
		free(log);
		log = hub_log(&hub_a);
		if (strstr(log, "cannot connect to NATS") != NULL)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(strstr(log, "cannot connect to NATS at nats://127.0.0.1:4222: TCP sockets "
			     "are refused here (Address family not supported by protocol): under "
			     "systemd, hubd.service's RestrictAddressFamilies= must allow AF_INET "
			     "and AF_INET6") != NULL, "%s", hub_log_tail(&hub_a));
	free(log);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
}
END_TEST

Suite *
suite_nats(void)
{
	Suite *s = suite_create("nats");
	TCase *tc = tcase_create("nats");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_call_across_hubs);
	tcase_add_test(tc, test_errors_keep_their_meaning);
	tcase_add_test(tc, test_queue_group_shares_and_survives_a_kill);
	tcase_add_test(tc, test_nats_restarts);
	tcase_add_test(tc, test_cluster_loses_a_node);
	tcase_add_test(tc, test_streams_both_ways);
	tcase_add_test(tc, test_stream_credit_across);
	tcase_add_test(tc, test_stream_to_a_caller_without_packs);
	tcase_add_test(tc, test_cancel_crosses_and_bridge_restarts);
	tcase_add_test(tc, test_credentials);
	tcase_add_test(tc, test_hostile_messages);
	tcase_add_test(tc, test_hub_methods_service);
	tcase_add_test(tc, test_prefix_and_from);
	tcase_add_test(tc, test_tls);
	tcase_add_test(tc, test_every_error_kind_crosses);
	suite_add_tcase(s, tc);
	/* no NATS server: a bridge in a sandbox that refuses it TCP */
	tc = tcase_create("sandbox");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tcp_refused_said);
	suite_add_tcase(s, tc);
	/* hub-nats's threads (libnats's, handing messages to the loop)
	 * under ThreadSanitizer: make check-tsan runs these */
	tc = tcase_create("nats_threads");
	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_set_tags(tc, "tsan");
	tcase_add_test(tc, test_queue_group_shares_and_survives_a_kill);
	tcase_add_test(tc, test_streams_both_ways);
	suite_add_tcase(s, tc);
	return s;
}
