/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats against a NATS client that is not a hub: real nats-servers,
 * real hubs, and a plain libnats client as the attacker. Under the
 * authorization config of doc/nats.md the server refuses each attack;
 * without it, the bridges' own checks (signed announcements, [trust],
 * MAC'd answers, cancel tokens, per-hub limits) ignore and count what
 * signing can stop. */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>
#include <sodium.h>

#include "tests/e2e/natsd.h"
#include "tests/e2e/natshubs.h"

static struct natsd nd;
static struct hub_proc hub_a, hub_b, hub_c;

/* What the attacker's callbacks did, from libnats's threads. */
static atomic_int forged, denied;
static uint8_t evil_pk[crypto_sign_PUBLICKEYBYTES], evil_sk[crypto_sign_SECRETKEYBYTES];

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Publishes an announcement: unsigned (how 0), signed by the
 * attacker's own key (1), with a signature of garbage (2). */
static void
announce(natsConnection *nc, const char *body, int how)
{
	natsMsg *m = NULL;
	uint8_t sig[crypto_sign_BYTES];
	char text[sodium_base64_ENCODED_LEN(crypto_sign_BYTES, sodium_base64_VARIANT_ORIGINAL)];

	ck_assert_int_eq(natsMsg_Create(&m, "hub.announce", NULL, body, (int)strlen(body)), NATS_OK);
	if (how == 1)
		crypto_sign_detached(sig, NULL, (const uint8_t *)body, strlen(body), evil_sk);
	else
		memset(sig, 'x', sizeof(sig));
	sodium_bin2base64(text, sizeof(text), sig, sizeof(sig), sodium_base64_VARIANT_ORIGINAL);
	if (how != 0)
		natsMsgHeader_Set(m, "Hub-Auth", text);
	natsConnection_PublishMsg(nc, m);
	natsMsg_Destroy(m);
}

/* An announcement of hub of one method, now. */
static void
announce_one(natsConnection *nc, const char *hub, const char *method, const char *sig, int how)
{
	char body[512];

	snprintf(body, sizeof(body), "{\"hub\":\"%s\",\"every_ms\":60000,\"seq\":%lld,"
		 "\"methods\":%s%s%s%s%s}", hub, now_ms(), method ? "[[\"" : "[]",
		 method ? method : "", method ? "\",\"" : "", method ? sig : "", method ? "\"]]" : "");
	announce(nc, body, how);
}

/* A hub announcing 4096 methods, and 256 hubs that do not exist. */
static void
flood(natsConnection *nc, int how)
{
	size_t cap = 4096 * 40 + 200, n;
	char *body = malloc(cap), hub[16];

	ck_assert_ptr_nonnull(body);
	n = (size_t)snprintf(body, cap, "{\"hub\":\"b\",\"every_ms\":60000,\"seq\":%lld,\"methods\":[",
			     now_ms());
	for (int i = 0; i < 4096; i++)
		n += (size_t)snprintf(body + n, cap - n, "%s[\"kv.f%d\",\"str->str\"]", i ? "," : "", i);
	snprintf(body + n, cap - n, "]}");
	announce(nc, body, how);
	free(body);
	for (int i = 0; i < 256; i++) {
		snprintf(hub, sizeof(hub), "fake%d", i);
		announce_one(nc, hub, "kv.fake", "str->str", how);
	}
}

/* The attacker's answer to every call it hears: "forged", as hub b. */
static void
on_call(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
	natsMsg *r = NULL;

	(void)sub;
	(void)arg;
	if (natsMsg_GetReply(m) != NULL &&
	    natsMsg_Create(&r, natsMsg_GetReply(m), NULL, "\x06" "forged", 7) == NATS_OK) {
		natsMsgHeader_Set(r, "Hub-Status", "ok");
		natsMsgHeader_Set(r, "Hub-From", "b");
		natsMsgHeader_Set(r, "Hub-Mac", "00000000000000000000000000000000");
		if (natsConnection_PublishMsg(nc, r) == NATS_OK)
			atomic_fetch_add(&forged, 1);
		natsMsg_Destroy(r);
	}
	natsMsg_Destroy(m);
}

/* The attacker cancels the call of sl.sleep it heard (reply its reply
 * subject), as hub a's caller (pid) waits for it: by its reply subject
 * alone (as before tokens), once; and with a token of its own making,
 * again and again until the call is over, for hub b refuses such a
 * cancel only while it holds the call (one sent when b had it yet was a
 * guess at when that is). The caller's wait status. */
static int
cancel_while_called(natsConnection *nc, const char *reply, pid_t pid)
{
	char body[512];
	int status = -1;

	snprintf(body, sizeof(body), "%s 0123456789abcdef0123456789abcdef", reply);
	natsConnection_PublishString(nc, "hub.cancel", reply);
	for (double end = now_s() + 60; waitpid(pid, &status, WNOHANG) == 0; sleep_ms(20)) {
		if (now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		natsConnection_PublishString(nc, "hub.cancel", body);
	}
	return status;
}

/* A hub asks who exports what: the attacker is first to say kv.get is
 * str->str, in hub c's name (which it has no key for). */
static void
on_discover(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
	(void)sub;
	(void)arg;
	announce_one(nc, "c", "kv.get", "str->str", 1);
	announce_one(nc, "b", "kv.get", "str->str", 0);
	natsMsg_Destroy(m);
}

static void
on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *arg)
{
	(void)nc;
	(void)sub;
	(void)arg;
	if (err == NATS_NOT_PERMITTED)
		atomic_fetch_add(&denied, 1);
}

static natsConnection *
attacker(const char *url, const char *user, const char *password)
{
	natsConnection *nc = NULL;
	natsOptions *o = NULL;

	ck_assert_int_eq(natsOptions_Create(&o), NATS_OK);
	natsOptions_SetURL(o, url);
	natsOptions_SetErrorHandler(o, on_error, NULL);
	/* each message out at once, as a hub's bridge sends them: a forged
	 * answer is first */
	natsOptions_SetSendAsap(o, true);
	if (user != NULL) {
		natsOptions_SetUserInfo(o, user, password);
		natsOptions_SetCustomInboxPrefix(o, "_INBOX.app");
	}
	ck_assert_int_eq(natsConnection_Connect(&nc, o), NATS_OK);
	natsOptions_Destroy(o);
	return nc;
}

/* Hub NAME exporting kv.* and sl.*, its [nats] lines and nats_extra. */
static void
start_exporter(struct hub_proc *h, const char *name, const char *url, const char *nats_extra)
{
	char extra[512], guests[2048], *nats;

	snprintf(extra, sizeof(extra), "%s[export]\nmethods = kv.* sl.*\n", nats_extra);
	nats = nh_bridge(name, url, NULL, extra);
	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n" LB("sl") "%s", nats);
	hub_start_up(h, NULL, guests, "kv,sl,nats");
	free(nats);
}

/* Hub a importing kv.* and sl.*, its calls waiting timeout at most. */
static void
start_importer(struct hub_proc *h, const char *url, const char *nats_extra, const char *timeout)
{
	char extra[512], guests[2048], *nats;

	snprintf(extra, sizeof(extra), "%s[import]\nmethods = kv.* sl.*\ntimeout = %s\n",
		 nats_extra, timeout);
	nats = nh_bridge("a", url, "kv.*, sl.*", extra);
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	hub_start_up(h, NULL, guests, "cl,nats");
	free(nats);
}

/* hubctl methods on h lists none of the attacker's methods. */
static void
nothing_registered(struct hub_proc *h)
{
	char *out = NULL;

	hubctl_ok(h, &out, "methods", (char *)NULL);
	ck_assert_msg(strstr(out, "kv.evil") == NULL && strstr(out, "kv.f1 ") == NULL &&
		      strstr(out, "kv.fake") == NULL, "%s", out);
	free(out);
}

/* The count before word in the bridge's note on h ("3 ann"), -1 none. */
static long
ignored(struct hub_proc *h, const char *word)
{
	const char *note = nh_note_of(h, "nats"), *p = strstr(note, "ignored: ");
	char key[32];

	if (p == NULL)
		return -1;
	snprintf(key, sizeof(key), " %s", word);
	for (const char *q = p; (q = strstr(q, key)) != NULL; q++) {
		const char *d = q;

		while (d > p && d[-1] >= '0' && d[-1] <= '9')
			d--;
		if (d < q)
			return strtol(d, NULL, 10);
	}
	return -1;
}

/* Without authorization any client may publish anything: what signing
 * stops is ignored and counted. */
START_TEST(test_trust_without_authorization)
{
	natsSubscription *s_call = NULL, *s_sleep = NULL, *s_disc = NULL, *s_ann = NULL;
	natsConnection *nc;
	natsMsg *old = NULL, *newer = NULL, *copy = NULL, *heard = NULL;
	const char *auth = NULL;
	char *log;
	pid_t pid;
	int status;

	ck_assert_int_ge(sodium_init(), 0);
	crypto_sign_keypair(evil_pk, evil_sk);
	natsd_start(&nd);
	nc = attacker(nd.url, NULL, NULL);
	/* the first to answer "who exports what", with a wrong signature */
	ck_assert_int_eq(natsConnection_Subscribe(&s_disc, nc, "hub.discover", on_discover, NULL),
			 NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	start_exporter(&hub_b, "b", nd.url, "");
	start_importer(&hub_a, nd.url, "", "5s");
	ck_assert_msg(hub_wait_method(&hub_a, "kv.get,kv.put,sl.sleep") == 0, "%s",
		      hub_log_tail(&hub_a));
	/* not pinned: kv.get is B's str->bytes, and its calls work */
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "blue");
	nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);

	/* answers: the attacker answers every kv.get first, as hub b */
	ck_assert_int_eq(natsConnection_Subscribe(&s_call, nc, "hub.call.kv.get", on_call, NULL),
			 NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	for (int i = 0; i < 3; i++)
		nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);
	/* the attacker's thread forges each answer in its own time: the
	 * genuine one may have come and been taken before */
	for (double end = now_s() + 30; atomic_load(&forged) < 3 && now_s() < end; sleep_ms(20))
		;
	ck_assert_int_ge(atomic_load(&forged), 3);
	natsSubscription_Unsubscribe(s_call);

	/* cancel: the attacker cancels the sl.sleep it sees, which answers
	 * all the same */
	ck_assert_int_eq(natsConnection_SubscribeSync(&s_sleep, nc, "hub.call.sl.sleep"), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	if ((pid = fork()) == 0) {
		char *out = NULL;
		int rc = nh_ctl(&hub_a, &out, "sl.sleep", "2000", NULL);

		_exit(rc == 0 && strcmp(out, "") == 0 ? 0 : 1);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(natsSubscription_NextMsg(&heard, s_sleep, 30000), NATS_OK);
	ck_assert_ptr_nonnull(natsMsg_GetReply(heard));
	status = cancel_while_called(nc, natsMsg_GetReply(heard), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "sl.sleep did not answer (wait status %d): %s", status, hub_log_tail(&hub_a));
	natsMsg_Destroy(heard);
	natsSubscription_Unsubscribe(s_sleep);

	/* replay: b's announcement, sent again once b has sent a newer one */
	ck_assert_int_eq(natsConnection_SubscribeSync(&s_ann, nc, "hub.announce"), NATS_OK);
	ck_assert_int_eq(natsSubscription_NextMsg(&old, s_ann, 5000), NATS_OK);
	ck_assert_int_eq(natsSubscription_NextMsg(&newer, s_ann, 5000), NATS_OK);
	ck_assert_int_eq(natsMsgHeader_Get(old, "Hub-Auth", &auth), NATS_OK);
	ck_assert_int_eq(natsMsg_Create(&copy, "hub.announce", NULL, natsMsg_GetData(old),
					natsMsg_GetDataLength(old)), NATS_OK);
	natsMsgHeader_Set(copy, "Hub-Auth", auth);
	ck_assert_int_eq(natsConnection_PublishMsg(nc, copy), NATS_OK);
	natsMsg_Destroy(copy);
	natsMsg_Destroy(old);
	natsMsg_Destroy(newer);
	natsSubscription_Destroy(s_ann);

	/* announcements: kv.evil and "b left", unsigned, signed by a key
	 * not in [trust], and with a signature of garbage; a 4096-method
	 * announcement and 256 hubs that do not exist, each way */
	for (int how = 0; how < 3; how++) {
		announce_one(nc, "b", "kv.evil", "str->str", how);
		announce_one(nc, "evil", "kv.evil", "str->str", how);
		announce_one(nc, "b", NULL, NULL, how);
		flood(nc, how);
	}
	/* no announcements at all: no JSON, nested past what is read, a hub
	 * that is no hub's name (an escape in it), no methods */
	natsConnection_PublishString(nc, "hub.announce", "not json");
	natsConnection_PublishString(nc, "hub.announce", "{\"hub\":\"b\",\"methods\":[[[[[[\"kv.x\"]]]]]]}");
	announce_one(nc, "ev\033[31mil", "kv.evil", "str->str", 1);
	natsConnection_PublishString(nc, "hub.announce", "{\"hub\":\"b\",\"seq\":1}");
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	/* A has read them all once it counts the last (the fourth malformed
	 * one): a second's sleep was a guess at that */
	for (double end = now_s() + 30; ignored(&hub_a, "malformed") != 4 && now_s() < end; )
		sleep_ms(50);
	ck_assert_msg(ignored(&hub_a, "malformed") == 4, "note: %s; %s", nh_note_of(&hub_a, "nats"),
		      hub_log_tail(&hub_a));
	nothing_registered(&hub_a);
	log = hub_log(&hub_a);
	ck_assert_msg(strstr(log, "hub b left") == NULL, "b left was believed: %s", log);
	ck_assert_msg(strstr(log, "a malformed announcement ignored") != NULL &&
		      strstr(log, "\033") == NULL, "%s", hub_log_tail(&hub_a));
	ck_assert_msg(strstr(log, "announced itself") != NULL &&
		      strstr(log, "hub fake") == NULL && strstr(log, "hub evil") == NULL, "%s", log);
	free(log);
	nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);
	/* a genuine newcomer is heard: the fakes took no room */
	start_exporter(&hub_c, "c", nd.url, "");
	nh_wait_where(&hub_a, "kv.get", "NATS: hub b, hub c");

	/* each refusal counted in hubctl peers' note */
	for (double end = now_s() + 30; (ignored(&hub_a, "cancel") < 0 ||
					 ignored(&hub_b, "cancel") < 2) && now_s() < end; )
		sleep_ms(50);
	ck_assert_msg(ignored(&hub_a, "unsigned") > 0 && ignored(&hub_a, "untrusted") > 0 &&
		      ignored(&hub_a, "badsig") > 0 && ignored(&hub_a, "old") > 0 &&
		      ignored(&hub_a, "malformed") == 4 &&
		      ignored(&hub_a, "ans") >= 3, "note: %s", nh_note_of(&hub_a, "nats"));
	ck_assert_msg(ignored(&hub_b, "cancel") >= 2, "note: %s", nh_note_of(&hub_b, "nats"));

	natsSubscription_Destroy(s_call);
	natsSubscription_Destroy(s_sleep);
	natsSubscription_Destroy(s_disc);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	ck_assert_int_eq(hub_stop(&hub_c), 0);
	natsd_kill(&nd);
}
END_TEST

/* doc/nats.md's authorization config, word for word but the ports: each
 * hub its own user, publishing and subscribing PREFIX.> and its own
 * inbox; an application that may only call kv.get. */
static const char auth_conf[] =
	"authorization {\n"
	"  users = [\n"
	"    { user = a, password = pa, permissions = {\n"
	"      publish = [\"hub.>\", \"_INBOX.>\"], subscribe = [\"hub.>\", \"_INBOX.a.>\"] } }\n"
	"    { user = b, password = pb, permissions = {\n"
	"      publish = [\"hub.>\", \"_INBOX.>\"], subscribe = [\"hub.>\", \"_INBOX.b.>\"] } }\n"
	"    { user = c, password = pc, permissions = {\n"
	"      publish = [\"hub.>\", \"_INBOX.>\"], subscribe = [\"hub.>\", \"_INBOX.c.>\"] } }\n"
	"    { user = app, password = papp, permissions = {\n"
	"      publish = [\"hub.call.kv.get\"], subscribe = [\"_INBOX.app.>\"] } }\n"
	"  ]\n"
	"}\n";

/* Under that config the application calls kv.get, and the server
 * refuses each of the attacks. */
START_TEST(test_trust_under_authorization)
{
	natsSubscription *sub = NULL;
	natsConnection *nc;
	natsMsg *m = NULL, *r = NULL;
	const char *word = NULL;
	natsStatus s;

	ck_assert_int_ge(sodium_init(), 0);
	crypto_sign_keypair(evil_pk, evil_sk);
	atomic_store(&forged, 0);
	atomic_store(&denied, 0);
	natsd_start_conf(&nd, auth_conf);
	start_exporter(&hub_b, "b", nd.url, "user = b\npassword = pb\ninbox_prefix = _INBOX.b\n");
	start_importer(&hub_a, nd.url, "user = a\npassword = pa\ninbox_prefix = _INBOX.a\n",
		       "5s");
	ck_assert_msg(hub_wait_method(&hub_a, "kv.get,kv.put,sl.sleep") == 0, "%s",
		      hub_log_tail(&hub_a));
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "blue");
	nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);

	/* the application: kv.get works, kv.put is not its to call */
	nc = attacker(nd.url, "app", "papp");
	ck_assert_int_eq(natsMsg_Create(&m, "hub.call.kv.get", NULL, "\x06" "colour", 7), NATS_OK);
	natsMsgHeader_Set(m, "Hub-Signature", "str->bytes");
	s = natsConnection_RequestMsg(&r, nc, m, 5000);
	ck_assert_msg(s == NATS_OK, "kv.get from the application: %s", natsStatus_GetText(s));
	natsMsgHeader_Get(r, "Hub-Status", &word);
	ck_assert_msg(word != NULL && strcmp(word, "ok") == 0 && natsMsg_GetDataLength(r) == 5 &&
		      memcmp(natsMsg_GetData(r), "\x04" "blue", 5) == 0, "%s", word ? word : "none");
	natsMsg_Destroy(r);
	natsMsg_Destroy(m);
	ck_assert_int_eq(natsConnection_RequestString(&r, nc, "hub.call.kv.put", "x", 500),
			 NATS_TIMEOUT);

	/* answering kv.get: its subscription is refused */
	natsConnection_Subscribe(&sub, nc, "hub.call.kv.get", on_call, NULL);
	natsConnection_Flush(nc);
	for (int i = 0; i < 3; i++)
		nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);
	ck_assert_int_eq(atomic_load(&forged), 0);
	/* cancels and announcements: refused, each */
	natsConnection_PublishString(nc, "hub.cancel", "_INBOX.a.x.1");
	announce_one(nc, "b", "kv.evil", "str->str", 1);
	announce_one(nc, "b", "kv.get", "str->str", 1);
	announce_one(nc, "b", NULL, NULL, 1);
	flood(nc, 1);
	natsConnection_Flush(nc);
	for (int i = 0; i < 100 && atomic_load(&denied) < 3; i++)
		sleep_ms(50);
	ck_assert_msg(atomic_load(&denied) >= 3, "the server refused %d", atomic_load(&denied));
	sleep_ms(500);
	nothing_registered(&hub_a);
	nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);
	/* nothing even reached the bridges to be ignored */
	ck_assert_msg(ignored(&hub_a, "ann") < 0, "note: %s", nh_note_of(&hub_a, "nats"));
	start_exporter(&hub_c, "c", nd.url, "user = c\npassword = pc\ninbox_prefix = _INBOX.c\n");
	nh_wait_where(&hub_a, "kv.get", "NATS: hub b, hub c");

	natsSubscription_Destroy(sub);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	ck_assert_int_eq(hub_stop(&hub_c), 0);
	natsd_kill(&nd);
}
END_TEST

/* Calls from NATS in flight are bounded per calling hub: hub a's second
 * call waits for none, another hub's call is served meanwhile. */
START_TEST(test_trust_calls_per_hub)
{
	natsConnection *nc;
	natsMsg *m = NULL, *r = NULL;
	const char *word = NULL;
	char *out = NULL;
	pid_t pid;
	int status;

	natsd_start(&nd);
	start_exporter(&hub_b, "b", nd.url, "calls_per_hub = 1\n");
	/* 30 s: a sleep of 5 s that an import timeout of 5 s cut short
	 * (on a loaded machine) stays in flight at hub b for a minute, its
	 * answer awaited there, and hub a's later call is refused */
	start_importer(&hub_a, nd.url, "", "30s");
	ck_assert_msg(hub_wait_method(&hub_a, "sl.sleep,sl.echo") == 0, "%s", hub_log_tail(&hub_a));
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	if ((pid = fork()) == 0) {
		if (nh_ctl(&hub_a, &out, "sl.sleep", "5000", NULL) != 0) {
			fprintf(stderr, "sl.sleep 5000: %s\n", out);
			_exit(1);
		}
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	/* the sleep in flight at hub b (not a guess at how long it takes
	 * to get there); 5 s leave the echo below time to arrive during it */
	for (int i = 0; i < 400; i++) {
		free(out);
		out = NULL;
		if (hubctl(&hub_b, &out, "calls", (char *)NULL) == 0 &&
		    strstr(out, "NATS: from hub a") != NULL)
			break;
		ck_assert_msg(i < 399, "hub a's sl.sleep never in flight at hub b: %s", out);
		sleep_ms(50);
	}
	free(out);
	out = NULL;
	nh_expect_err(&hub_a, "calls from hub a in flight already", "sl.echo", "y", NULL);
	/* another caller is not hub a: served */
	nc = attacker(nd.url, NULL, NULL);
	ck_assert_int_eq(natsMsg_Create(&m, "hub.call.sl.echo", NULL, "\x01z", 2), NATS_OK);
	natsMsgHeader_Set(m, "Hub-Signature", "str->str");
	natsMsgHeader_Set(m, "Hub-From", "other");
	ck_assert_int_eq(natsConnection_RequestMsg(&r, nc, m, 5000), NATS_OK);
	natsMsgHeader_Get(r, "Hub-Status", &word);
	ck_assert_msg(word != NULL && strcmp(word, "ok") == 0, "%s: %.*s", word ? word : "none",
		      natsMsg_GetDataLength(r), natsMsg_GetData(r));
	natsMsg_Destroy(r);
	natsMsg_Destroy(m);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "hub a's sl.sleep failed (its error is above): %s", hub_log_tail(&hub_a));
	/* and once the first is answered, hub a's next is served */
	nh_expect_ok(&hub_a, "y", "sl.echo", "y", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&nd);
}
END_TEST

/* How many times w is in s. */
static int
times_in(const char *s, const char *w)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, w)) != NULL; p += strlen(w))
		n++;
	return n;
}

/* A request's Hub-From is any NATS client's word: one that is no hub's
 * name (bytes that are not UTF-8, a bidirectional override) is "?" in
 * hubctl calls, and the calls in flight are still listed. */
START_TEST(test_trust_strange_caller)
{
	static const char *const names[] = { "ev\xff\xfeil", "ev\xe2\x80\xaeil" };
	natsConnection *nc;
	char *out = NULL, reply[64];
	int rc = -1;

	natsd_start(&nd);
	start_exporter(&hub_b, "b", nd.url, "");
	nc = attacker(nd.url, NULL, NULL);
	/* hub b's bridge serves sl.sleep by name once it answers
	 * sl.sleep(0): listening by its name (a ping) is not enough, the
	 * methods it exports are learnt from hubd just after */
	for (int i = 0; i < 200; i++) {
		natsMsg *m = NULL, *r = NULL;
		const char *status = NULL;
		char seen[32] = "(no answer)";
		int served;

		ck_assert_int_eq(natsMsg_Create(&m, "hub.at.b.sl.sleep", NULL, "\x00", 1), NATS_OK);
		natsMsgHeader_Set(m, "Hub-Signature", "u64->unit");
		served = natsConnection_RequestMsg(&r, nc, m, 1000) == NATS_OK &&
			 natsMsgHeader_Get(r, "Hub-Status", &status) == NATS_OK &&
			 status != NULL && strcmp(status, "ok") == 0;
		if (status != NULL)
			snprintf(seen, sizeof(seen), "%s", status);
		natsMsg_Destroy(m);
		natsMsg_Destroy(r);
		if (served)
			break;
		ck_assert_msg(i < 199, "hub b never served sl.sleep by name: %s", seen);
		sleep_ms(50);
	}
	for (int i = 0; i < 2; i++) {
		natsMsg *m = NULL;

		/* sl.sleep(10000): in flight while hubctl calls looks */
		snprintf(reply, sizeof(reply), "_INBOX.strange.%d", i);
		ck_assert_int_eq(natsMsg_Create(&m, "hub.at.b.sl.sleep", reply, "\x90\x4e", 2),
				 NATS_OK);
		natsMsgHeader_Set(m, "Hub-Signature", "u64->unit");
		natsMsgHeader_Set(m, "Hub-From", names[i]);
		ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
		natsMsg_Destroy(m);
	}
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	for (int i = 0; i < 160; i++) {
		free(out);
		rc = hubctl(&hub_b, &out, "calls", (char *)NULL);
		if (rc != 0 || times_in(out, "NATS: from hub ?\n") == 2)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(rc == 0 && *hubctl_stderr() == '\0', "status %d: %s", rc, hubctl_stderr());
	ck_assert_msg(times_in(out, "NATS: from hub ?\n") == 2, "%s", out);
	free(out);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&nd);
}
END_TEST

/* Hub-From names made up by a NATS client, one a call, hold no more
 * than their calls: more of them than hubs may be heard of (256) still
 * leave a real hub's call served while calls_max has room. */
START_TEST(test_trust_made_up_callers)
{
	enum { FAKES = 300 };
	natsConnection *nc;
	char *out = NULL, reply[64], from[32];
	int rc = -1;

	natsd_start(&nd);
	start_exporter(&hub_b, "b", nd.url, "");
	start_importer(&hub_a, nd.url, "", "5s");
	ck_assert_msg(hub_wait_method(&hub_a, "sl.sleep,sl.echo") == 0, "%s", hub_log_tail(&hub_a));
	nh_wait_ok(&hub_a, "x", "sl.echo", "x", NULL);
	nc = attacker(nd.url, NULL, NULL);
	for (int i = 0; i < FAKES; i++) {
		natsMsg *m = NULL;

		/* sl.sleep(10000): in flight while hub a calls */
		snprintf(reply, sizeof(reply), "_INBOX.madeup.%d", i);
		snprintf(from, sizeof(from), "fake%d", i);
		ck_assert_int_eq(natsMsg_Create(&m, "hub.at.b.sl.sleep", reply, "\x90\x4e", 2),
				 NATS_OK);
		natsMsgHeader_Set(m, "Hub-Signature", "u64->unit");
		natsMsgHeader_Set(m, "Hub-From", from);
		ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
		natsMsg_Destroy(m);
	}
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	for (int i = 0; i < 200; i++) {
		free(out);
		rc = hubctl(&hub_b, &out, "calls", (char *)NULL);
		if (rc != 0 || times_in(out, "NATS: from hub fake") == FAKES)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(rc == 0 && times_in(out, "NATS: from hub fake") == FAKES, "status %d: %s%s",
		      rc, hubctl_stderr(), out);
	free(out);
	nh_expect_ok(&hub_a, "y", "sl.echo", "y", NULL);
	natsConnection_Destroy(nc);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&nd);
}
END_TEST

/* The key file: refused when others may read it or it is missing
 * (never made in silence: the other hubs must be given its public key),
 * and --keygen never writes over one. */
START_TEST(test_trust_key_file)
{
	char cmd[1024], key[256], *out = NULL;
	char *nats;

	nats = nh_bridge("a", "nats://127.0.0.1:1", "kv.*", "[import]\nmethods = kv.*\n");
	snprintf(key, sizeof(key), "%s", nh_key_path("a"));
	snprintf(cmd, sizeof(cmd), "%s --keygen %s 2>/dev/null", bin("hub-nats"), key);
	ck_assert_int_ne(system(cmd), 0);
	/* others may read it: the bridge says so, and stops */
	ck_assert_int_eq(chmod(key, 0644), 0);
	ck_assert_int_eq(hub_start(&hub_a, NULL, nats), 0);
	for (int i = 0; i < 100; i++) {
		free(out);
		out = hub_log(&hub_a);
		if (strstr(out, "others may read this hub's key") != NULL)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(strstr(out, "others may read this hub's key") != NULL, "%s", out);
	free(out);
	out = NULL;
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	/* none: it says how to make one (and does not make it) */
	ck_assert_int_eq(unlink(key), 0);
	ck_assert_int_eq(hub_start(&hub_a, NULL, nats), 0);
	for (int i = 0; i < 100; i++) {
		free(out);
		out = hub_log(&hub_a);
		if (strstr(out, "make this hub's key with hub-nats --keygen") != NULL)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(strstr(out, "make this hub's key with hub-nats --keygen") != NULL, "%s", out);
	ck_assert_int_ne(access(key, F_OK), 0);
	free(out);
	free(nats);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
}
END_TEST

Suite *suite_nats_trust(void);

Suite *
suite_nats_trust(void)
{
	Suite *s = suite_create("nats_trust");
	TCase *tc = tcase_create("nats_trust");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_trust_without_authorization);
	tcase_add_test(tc, test_trust_under_authorization);
	tcase_add_test(tc, test_trust_calls_per_hub);
	tcase_add_test(tc, test_trust_made_up_callers);
	tcase_add_test(tc, test_trust_strange_caller);
	tcase_add_test(tc, test_trust_key_file);
	suite_add_tcase(s, tc);
	return s;
}
