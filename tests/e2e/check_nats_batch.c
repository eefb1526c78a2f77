/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats's batches (nats/gather.c, nats/batch.c): many calls in flight
 * from one caller cross as batches of requests and of answers, each
 * call answered as alone, errors too; a batch to a hub that is gone is
 * answered "no hub" at once, call by call; a call cancelled inside a
 * batch ends alone, the other runs on; batches anyone on NATS makes up, malformed, change
 * nothing. */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nats/nats.h>
#include <sodium.h>

#include "nats/hubnats.h"
#include "tests/e2e/natsd.h"
#include "tests/e2e/natshubs.h"

static struct natsd natsd;
static struct hub_proc hub_a, hub_b;

/* What a client watching every subject saw: batches of requests (on
 * hub.), of answers (on an inbox's .B). */
static atomic_uint seen_requests, seen_answers;
/* The most entries one batch had (hub-nats sends one once it holds
 * BR_BATCH_SEND, whatever a loop pass has). */
static atomic_uint seen_most;

static void
on_watch(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
	const char *n = NULL, *s = natsMsg_GetSubject(m);
	size_t len = strlen(s);

	(void)nc;
	(void)sub;
	(void)closure;
	if (natsMsgHeader_Get(m, "Hub-Batch", &n) == NATS_OK && n != NULL) {
		unsigned k = (unsigned)strtoul(n, NULL, 10), most = atomic_load(&seen_most);

		while (k > most && !atomic_compare_exchange_weak(&seen_most, &most, k))
			;
		if (strncmp(s, "hub.", 4) == 0)
			atomic_fetch_add(&seen_requests, 1);
		else if (len > 2 && strcmp(s + len - 2, ".B") == 0)
			atomic_fetch_add(&seen_answers, 1);
	}
	natsMsg_Destroy(m);
}

static void
watch(natsConnection **nc, natsSubscription **sub)
{
	atomic_store(&seen_requests, 0);
	atomic_store(&seen_answers, 0);
	atomic_store(&seen_most, 0);
	ck_assert_int_eq(natsConnection_ConnectTo(nc, natsd.url), NATS_OK);
	ck_assert_int_eq(natsConnection_Subscribe(sub, *nc, ">", on_watch, NULL), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(*nc), NATS_OK);
}

/* Waits (30 s) until the watcher saw a batch each way: its callback runs
 * on a thread of its own, which may not have run yet when the calls are
 * over. */
static void
expect_batches_seen(void)
{
	for (double end = now_s() + 30; now_s() < end; sleep_ms(20))
		if (atomic_load(&seen_requests) > 0 && atomic_load(&seen_answers) > 0)
			break;
	ck_assert_msg(atomic_load(&seen_requests) > 0 && atomic_load(&seen_answers) > 0,
		      "batches seen: %u of requests, %u of answers", atomic_load(&seen_requests),
		      atomic_load(&seen_answers));
	ck_assert_msg(atomic_load(&seen_most) >= 2 && atomic_load(&seen_most) <= BR_BATCH_SEND,
		      "the largest batch had %u entries (sent at %u)", atomic_load(&seen_most),
		      BR_BATCH_SEND);
}

static void
unwatch(natsConnection *nc, natsSubscription *sub)
{
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
}

/* B as nh_start_b's, its bridge's [nats] with extra, its [guest nats]
 * with gextra. */
static void
start_b(const char *extra, const char *gextra)
{
	char exp[512], *nats, guests[1024];

	snprintf(exp, sizeof(exp), "%s[export]\nmethods = kv.* sl.*\n", extra);
	nats = nh_bridge("b", natsd.url, NULL, exp);
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n" LB("sl") "%s%s", nats,
		 gextra);
	hub_start_up(&hub_b, NULL, guests, "kv,sl,nats");
	free(nats);
}

/* Waits (30 s) until NATS answers a request to subject "no responders":
 * whoever listened there is gone as far as the server knows. */
static void
wait_no_responders(const char *subject)
{
	natsConnection *nc = NULL;
	natsStatus st = NATS_TIMEOUT;

	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	for (double end = now_s() + 30; st != NATS_NO_RESPONDERS && now_s() < end; ) {
		natsMsg *r = NULL;

		if ((st = natsConnection_RequestString(&r, nc, subject, "", 500)) == NATS_OK)
			sleep_ms(50);
		natsMsg_Destroy(r);
	}
	natsConnection_Destroy(nc);
	ck_assert_msg(st == NATS_NO_RESPONDERS, "%s still has a responder: %s", subject,
		      natsStatus_GetText(st));
}

/* cl.storm METHOD N on A: every call at once, each a 100-byte str whose
 * answer must be the same (malloc'd answer). */
static char *
storm(const char *method, const char *n)
{
	char *out = NULL;

	ck_assert_msg(nh_ctl(&hub_a, &out, "cl.storm", method, n) == 0, "storm: %s; %s", out,
		      hub_log_tail(&hub_a));
	return out;
}

/* Many calls in flight from one caller: batches each way, none over
 * BR_BATCH_SEND entries, every answer the caller's own bytes; two
 * methods at once; a lone call after. */
START_TEST(test_many_calls_cross_in_batches)
{
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	char *answer;
	pid_t pid;
	int rfd;

	natsd_start(&natsd);
	nh_start_b(&hub_b, "b", natsd.url);
	nh_start_a(&hub_a, natsd.url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	watch(&nc, &sub);
	/* another method's calls beside the storm's, in their own batches:
	 * kv.get of a key never put, an error each */
	pid = nh_load_in_child(&hub_a, "kv.get", "500", &rfd);
	answer = storm("sl.echo", "2000");
	ck_assert_msg(strcmp(answer, "ok=2000") == 0, "storm: %s; A: %s", answer,
		      hub_log_tail(&hub_a));
	free(answer);
	answer = nh_child_answer(pid, rfd);
	nh_all_ended(answer, 500);
	ck_assert_msg(strncmp(answer, "ok=0 e", 6) == 0, "load: %s", answer);
	expect_batches_seen();
	nh_expect_ok(&hub_a, "y", "sl.echo", "y", NULL);
	unwatch(nc, sub);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* B takes only 8 calls from hub a at once: the rest of each batch is
 * refused there, call by call, and the caller is told so for each. */
START_TEST(test_errors_inside_a_batch)
{
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	char *answer;
	unsigned ok, refused;

	natsd_start(&natsd);
	start_b("calls_per_hub = 8\n", "");
	nh_start_a(&hub_a, natsd.url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	watch(&nc, &sub);
	answer = storm("sl.echo", "1000");
	ok = nh_load_count(answer, "ok=");
	refused = nh_load_count(answer, "e113=");	/* EHOSTUNREACH: refused there */
	ck_assert_msg(ok > 0 && refused > 0 && ok + refused == 1000 && strstr(answer, "wrong") == NULL,
		      "storm: %s", answer);
	free(answer);
	expect_batches_seen();
	unwatch(nc, sub);
	nh_expect_ok(&hub_a, "y", "sl.echo", "y", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* A's calls go to hub b by name ([import] from); b's bridge killed (not
 * started again, no leaving announcement): NATS answers each batch "no
 * responders", and every call of it ends at once, not at its timeout;
 * so does a call alone (its "no responders" comes on its reply subject,
 * not where answers come: doc/nats.md, "Subjects"). */
START_TEST(test_batch_with_no_responders)
{
	char *answer;
	double t0;
	pid_t bridge;

	natsd_start(&natsd);
	/* b announces every 20 s: A passes it over only after a minute
	 * without one, long after these calls */
	start_b("announce = 20s\n", "restart = never\n");
	nh_start_a(&hub_a, natsd.url, "from = b\ntimeout = 20s\n");
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	/* (no watcher here: a subscriber to > would be a responder) */
	bridge = hub_peer_int(&hub_b, "nats", "pid");
	ck_assert_int_eq(kill(bridge, SIGKILL), 0);
	/* once NATS knows it gone (a call before would wait for its
	 * timeout) */
	wait_no_responders("hub.at.b.sl.echo");
	t0 = now_s();
	nh_expect_err(&hub_a, "no hub on NATS serves sl.echo at hub b", "sl.echo", "y", NULL);
	answer = storm("sl.echo", "300");
	nh_all_ended(answer, 300);
	ck_assert_msg(nh_load_count(answer, "ok=") == 0 && strstr(answer, "e113=") != NULL,
		      "storm: %s", answer);
	ck_assert_msg(now_s() - t0 < 10, "the calls waited for their timeout: %.1f s", now_s() - t0);
	free(answer);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Batches made up by anyone on NATS: cut short, counts that lie, lengths
 * past the end, bad header lines, replies that are no subject. B drops
 * each whole and goes on serving; a well-formed batch from a plain
 * client is answered entry by entry. */
START_TEST(test_hostile_batches)
{
	static const struct {
		const char	*count;
		const char	*body;
		size_t		len;
	} junk[] = {
		{ "2", "", 0 },
		{ "2", "\x05\0\0\0\0\0\0\0abc", 11 },
		{ "300", "", 0 },
		{ "1", "", 0 },
		{ "x", "", 0 },
		{ "2", "\xff\xff\xff\xff\xff\xff\xff\xff", 8 },
		{ "2", "\x0b\0\0\0\0\0\0\0Hub-Reply\r\n\x0b\0\0\0\0\0\0\0Hub-Reply\r\n", 38 },
		{ "2", "\x10\0\0\0\x02\0\0\0Hub-Reply: a b\r\nxx\x10\0\0\0\x02\0\0\0Hub-Reply: a b\r\nxx", 52 },
	};
	static const char entry[] = "Hub-Reply: _INBOX.t.%d\r\nHub-Signature: str->str\r\n";
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	natsMsg *m = NULL, *r = NULL;
	uint8_t body[512];
	size_t pos = 0;
	int got = 0, i;

	natsd_start(&natsd);
	nh_start_b(&hub_b, "b", natsd.url);
	nh_start_a(&hub_a, natsd.url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
		ck_assert_int_eq(natsMsg_Create(&m, "hub.at.b.sl.echo", "_INBOX.t.b1", junk[j].body,
						(int)junk[j].len), NATS_OK);
		natsMsgHeader_Set(m, "Hub-Batch", junk[j].count);
		ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
		natsMsg_Destroy(m);
	}
	/* a good one of two: each answered (alone or batched, to _INBOX.t) */
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "_INBOX.t.>"), NATS_OK);
	for (i = 1; i <= 2; i++) {
		char hdr[128];
		int hl = snprintf(hdr, sizeof(hdr), entry, i);

		memcpy(body + pos, (uint8_t[]){ (uint8_t)hl, 0, 0, 0, 2, 0, 0, 0 }, 8);
		memcpy(body + pos + 8, hdr, (size_t)hl);
		memcpy(body + pos + 8 + (size_t)hl, "\x01z", 2);
		pos += 8 + (size_t)hl + 2;
	}
	ck_assert_int_eq(natsMsg_Create(&m, "hub.at.b.sl.echo", "_INBOX.t.b2", (const char *)body,
					(int)pos), NATS_OK);
	natsMsgHeader_Set(m, "Hub-Batch", "2");
	ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
	natsMsg_Destroy(m);
	while (got < 2 && natsSubscription_NextMsg(&r, sub, 5000) == NATS_OK) {
		const char *n = NULL;

		if (natsMsgHeader_Get(r, "Hub-Batch", &n) == NATS_OK && n != NULL)
			got += atoi(n);
		else
			got++;
		natsMsg_Destroy(r);
	}
	ck_assert_int_eq(got, 2);
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	/* each malformed one dropped and counted */
	for (i = 0; i < 100 && strstr(nh_note_of(&hub_b, "nats"), " 8 malformed batch") == NULL; i++)
		sleep_ms(50);
	ck_assert_msg(i < 100, "note: %s", nh_note_of(&hub_b, "nats"));
	/* both bridges as they were, and serving */
	nh_expect_ok(&hub_a, "y", "sl.echo", "y", NULL);
	ck_assert_int_eq(hub_peer_int(&hub_a, "nats", "restarts"), 0);
	ck_assert_int_eq(hub_peer_int(&hub_b, "nats", "restarts"), 0);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

/* Waits (30 s) until hubctl calls on h lists a call of method, over a
 * lane too (hubd alone lists only its own). */
static void
expect_in_flight(struct hub_proc *h, const char *method)
{
	char *out = NULL;

	for (double end = now_s() + 30; now_s() < end; sleep_ms(50)) {
		free(out);
		out = NULL;
		if (hubctl(h, &out, "calls", (char *)NULL) == 0 && strstr(out, method) != NULL)
			break;
	}
	ck_assert_msg(out != NULL && strstr(out, method) != NULL, "%s never in flight: %s; %s",
		      method, out != NULL ? out : "", hub_log_tail(h));
	free(out);
}

/* Entry i of a batch of sl.sleep(10000) calls: reply _INBOX.t.i, the
 * cancel commitment of token tok, at body + *pos. */
static void
sleep_entry(uint8_t *body, size_t *pos, int i, const uint8_t tok[16])
{
	uint8_t commit[16];
	char hdr[256], hex[33];
	int hl;

	crypto_generichash(commit, sizeof(commit), tok, 16, NULL, 0);
	sodium_bin2hex(hex, sizeof(hex), commit, sizeof(commit));
	hl = snprintf(hdr, sizeof(hdr), "Hub-Reply: _INBOX.t.%d\r\nHub-Signature: u64->unit\r\n"
		      "Hub-Timeout-Ms: 60000\r\nHub-Cancel: %s\r\n", i, hex);
	memcpy(body + *pos, (uint8_t[]){ (uint8_t)hl, 0, 0, 0, 2, 0, 0, 0 }, 8);
	memcpy(body + *pos + 8, hdr, (size_t)hl);
	memcpy(body + *pos + 8 + (size_t)hl, "\x90\x4e", 2);	/* 10000, a varint */
	*pos += 8 + (size_t)hl + 2;
}

/* Two calls in one batch, each with its own cancel commitment: call 1's
 * token cancels call 1 (not refused); a wrong token for call 2 is
 * refused and counted. (sl.sleep runs on once cancelled: both answer;
 * 10 s, for the cancels to come while b holds the calls.) */
START_TEST(test_cancel_one_call_of_a_batch)
{
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	natsMsg *m = NULL, *r = NULL;
	uint8_t body[1024], tok[2][16];
	char cancel[64], hex[33];
	const char *word = NULL;
	char got[2][32] = { "", "" };
	double t0, at[2] = { 0, 0 };
	size_t pos = 0;
	int i;

	ck_assert_int_ge(sodium_init(), 0);
	natsd_start(&natsd);
	nh_start_b(&hub_b, "b", natsd.url);
	nh_start_a(&hub_a, natsd.url, NULL);
	ck_assert(hub_wait_method(&hub_a, "sl.echo") == 0);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "_INBOX.t.>"), NATS_OK);
	for (i = 0; i < 2; i++) {
		randombytes_buf(tok[i], 16);
		sleep_entry(body, &pos, i + 1, tok[i]);
	}
	ck_assert_int_eq(natsMsg_Create(&m, "hub.at.b.sl.sleep", "_INBOX.t.b1", (const char *)body,
					(int)pos), NATS_OK);
	natsMsgHeader_Set(m, "Hub-Batch", "2");
	t0 = now_s();
	ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
	natsMsg_Destroy(m);
	/* in flight at b (a cancel before finds no call, and is neither
	 * done nor refused) */
	expect_in_flight(&hub_b, "sl.sleep");
	sodium_bin2hex(hex, sizeof(hex), tok[0], 16);
	snprintf(cancel, sizeof(cancel), "_INBOX.t.1 %s", hex);
	ck_assert_int_eq(natsConnection_PublishString(nc, "hub.cancel", cancel), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	sleep_ms(700);
	ck_assert_msg(strstr(nh_note_of(&hub_b, "nats"), " cancel") == NULL,
		      "call 1's own cancel refused: %s", nh_note_of(&hub_b, "nats"));
	/* call 2's with call 1's token */
	snprintf(cancel, sizeof(cancel), "_INBOX.t.2 %s", hex);
	ck_assert_int_eq(natsConnection_PublishString(nc, "hub.cancel", cancel), NATS_OK);
	for (i = 0; i < 100 && strstr(nh_note_of(&hub_b, "nats"), " 1 cancel") == NULL; i++)
		sleep_ms(50);
	ck_assert_msg(i < 100, "a wrong token not refused: %s", nh_note_of(&hub_b, "nats"));
	/* both answered, as alone or in a batch */
	while ((got[0][0] == '\0' || got[1][0] == '\0') &&
	       natsSubscription_NextMsg(&r, sub, 30000) == NATS_OK) {
		natsMsg *v[BR_BATCH_MAX], *one[1] = { r };
		natsMsg **e = one;
		const char *n = NULL;
		uint32_t k = 1;

		if (natsMsgHeader_Get(r, "Hub-Batch", &n) == NATS_OK && n != NULL) {
			ck_assert_int_eq(br_batch_parse((const uint8_t *)natsMsg_GetData(r),
							(size_t)natsMsg_GetDataLength(r), n, NULL, 1,
							v, &k), 0);
			e = v;
		}
		for (uint32_t j = 0; j < k; j++) {
			int which = strcmp(natsMsg_GetSubject(e[j]), "_INBOX.t.2") == 0;

			word = NULL;
			natsMsgHeader_Get(e[j], "Hub-Status", &word);
			snprintf(got[which], sizeof(got[which]), "%s", word != NULL ? word : "(none)");
			at[which] = now_s() - t0;
			if (e != one)
				natsMsg_Destroy(e[j]);
		}
		natsMsg_Destroy(r);
	}
	ck_assert_msg(strcmp(got[0], "ok") == 0 && strcmp(got[1], "ok") == 0,
		      "call 1: '%s' after %.1f s, call 2: '%s' after %.1f s", got[0], at[0], got[1],
		      at[1]);
	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}
END_TEST

Suite *suite_nats_batch(void);

Suite *
suite_nats_batch(void)
{
	Suite *s = suite_create("nats_batch");
	TCase *tc = tcase_create("nats_batch");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_many_calls_cross_in_batches);
	tcase_add_test(tc, test_errors_inside_a_batch);
	tcase_add_test(tc, test_batch_with_no_responders);
	tcase_add_test(tc, test_hostile_batches);
	tcase_add_test(tc, test_cancel_one_call_of_a_batch);
	suite_add_tcase(s, tc);
	return s;
}
