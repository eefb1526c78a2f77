/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats seen from outside: a plain NATS client asks NATS's service
 * protocol ($SRV.PING, INFO, STATS) and finds the exporting hub with its
 * methods as endpoints, their counts moving with the calls; hubctl
 * remotes shows per remote hub and per imported method calls, errors and
 * latency; hubctl calls says where a bridge's calls are on NATS. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>
#include <nats/nats.h>

#include "tests/e2e/natsd.h"
#include "tests/e2e/natshubs.h"

static struct natsd natsd;
static struct hub_proc hub_a, hub_b;

/* A request on subject, its answer parsed (NULL: none within 2 s). */
static json_object *
srv_ask(natsConnection *nc, const char *subject)
{
	natsMsg *r = NULL;
	json_object *o;

	if (natsConnection_RequestString(&r, nc, subject, "", 2000) != NATS_OK)
		return NULL;
	o = json_tokener_parse(natsMsg_GetData(r));
	natsMsg_Destroy(r);
	return o;
}

static const char *
str_of(json_object *o, const char *key)
{
	json_object *v = json_get(o, key);

	return v != NULL ? json_object_get_string(v) : "";
}

/* The endpoint named name in o's endpoints, NULL if none. */
static json_object *
endpoint(json_object *o, const char *name)
{
	json_object *eps = json_get(o, "endpoints");

	for (size_t i = 0; eps != NULL && i < json_object_array_length(eps); i++)
		if (strcmp(str_of(json_object_array_get_idx(eps, i), "name"), name) == 0)
			return json_object_array_get_idx(eps, i);
	return NULL;
}

static int64_t
int_of(json_object *o, const char *key)
{
	return json_object_get_int64(json_get(o, key));
}

/* Both hubs up, A importing what B exports. */
static void
two_hubs(const char *extra_a)
{
	natsd_start(&natsd);
	nh_start_b(&hub_b, "b", natsd.url);
	nh_start_a(&hub_a, natsd.url, extra_a);
	ck_assert_msg(hub_wait_method(&hub_a, "kv.get,kv.put,sl.sleep") == 0, "%s",
		      hub_log_tail(&hub_a));
}

static void
two_hubs_stop(void)
{
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd);
}

START_TEST(test_srv_ping_info_stats)
{
	natsConnection *nc = NULL;
	json_object *o = NULL, *e;
	natsMsg *r = NULL;
	char subject[256], id[128];
	int64_t req0, err0;

	two_hubs(NULL);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	/* the exports come with B's first refresh */
	for (int i = 0; i < 100; i++) {
		json_object_put(o);
		if ((o = srv_ask(nc, "$SRV.INFO.hub")) != NULL && endpoint(o, "kv.get") != NULL)
			break;
		sleep_ms(100);
	}
	ck_assert_msg(o != NULL && endpoint(o, "kv.get") != NULL, "INFO: %s; %s",
		      o != NULL ? json_object_to_json_string(o) : "(none)", hub_log_tail(&hub_b));
	ck_assert_str_eq(str_of(o, "type"), "io.nats.micro.v1.info_response");
	ck_assert_str_eq(str_of(o, "name"), "hub");
	ck_assert_str_eq(str_of(json_get(o, "metadata"), "hub"), "b");
	e = endpoint(o, "kv.get");
	ck_assert_str_eq(str_of(e, "subject"), "hub.call.kv.get");
	ck_assert_str_eq(str_of(e, "queue_group"), "hub");
	ck_assert_str_eq(str_of(json_get(e, "metadata"), "signature"), "str->bytes");
	snprintf(id, sizeof(id), "%s", str_of(o, "id"));
	ck_assert_msg(strlen(id) > 0, "no id");
	json_object_put(o);
	/* PING: all services, by name, by name and id; A (import only) is
	 * none, so the one answer is B's */
	ck_assert_ptr_nonnull(o = srv_ask(nc, "$SRV.PING"));
	ck_assert_str_eq(str_of(o, "type"), "io.nats.micro.v1.ping_response");
	ck_assert_str_eq(str_of(o, "id"), id);
	json_object_put(o);
	snprintf(subject, sizeof(subject), "$SRV.PING.hub.%s", id);
	ck_assert_ptr_nonnull(o = srv_ask(nc, subject));
	ck_assert_str_eq(str_of(json_get(o, "metadata"), "hub"), "b");
	json_object_put(o);
	/* another service's name, another instance: nobody answers */
	ck_assert_int_ne(natsConnection_RequestString(&r, nc, "$SRV.PING.other", "", 300), NATS_OK);
	ck_assert_int_ne(natsConnection_RequestString(&r, nc, "$SRV.PING.hub.notanid", "", 300),
			 NATS_OK);
	/* STATS: the counts move with calls from A */
	snprintf(subject, sizeof(subject), "$SRV.STATS.hub.%s", id);
	ck_assert_ptr_nonnull(o = srv_ask(nc, subject));
	ck_assert_str_eq(str_of(o, "type"), "io.nats.micro.v1.stats_response");
	ck_assert_msg(strlen(str_of(o, "started")) >= 20, "started: %s", str_of(o, "started"));
	ck_assert_ptr_nonnull(e = endpoint(o, "kv.get"));
	req0 = int_of(e, "num_requests");
	err0 = int_of(e, "num_errors");
	json_object_put(o);
	nh_expect_ok(&hub_a, "", "kv.put", "colour", "blue");
	nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);
	nh_expect_err(&hub_a, "no such key", "kv.get", "shape", NULL);
	ck_assert_ptr_nonnull(o = srv_ask(nc, subject));
	ck_assert_ptr_nonnull(e = endpoint(o, "kv.get"));
	ck_assert_msg(int_of(e, "num_requests") == req0 + 2 && int_of(e, "num_errors") == err0 + 1 &&
		      strstr(str_of(e, "last_error"), "no such key") != NULL &&
		      int_of(e, "processing_time") > 0 &&
		      int_of(e, "average_processing_time") == int_of(e, "processing_time") /
		      int_of(e, "num_requests"), "STATS: %s", json_object_to_json_string(e));
	ck_assert_ptr_nonnull(e = endpoint(o, "kv.put"));
	ck_assert_int_ge(int_of(e, "num_requests"), 1);
	json_object_put(o);
	natsConnection_Destroy(nc);
	two_hubs_stop();
}
END_TEST

/* The entry of list key in o whose field is value, NULL if none. */
static json_object *
entry(json_object *o, const char *key, const char *field, const char *value)
{
	json_object *l = json_get(o, key);

	for (size_t i = 0; l != NULL && i < json_object_array_length(l); i++)
		if (strcmp(str_of(json_object_array_get_idx(l, i), field), value) == 0)
			return json_object_array_get_idx(l, i);
	return NULL;
}

START_TEST(test_hubctl_remotes)
{
	json_object *o, *r, *m;
	char *out = NULL;

	two_hubs(NULL);
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "blue");
	nh_expect_ok(&hub_a, "blue", "kv.get", "colour", NULL);
	nh_expect_err(&hub_a, "no such key", "kv.get", "shape", NULL);
	hubctl_ok(&hub_a, &out, "-j", "remotes", (char *)NULL);
	ck_assert_msg((o = json_tokener_parse(out)) != NULL, "%s", out);
	ck_assert_str_eq(str_of(o, "hub"), "a");
	ck_assert_str_eq(str_of(o, "guest"), "nats");
	r = entry(o, "remotes", "hub", "b");
	ck_assert_msg(r != NULL && strcmp(str_of(r, "state"), "up") == 0 &&
		      int_of(r, "calls") >= 3 && int_of(r, "errors") == 1 &&
		      int_of(r, "mean_ns") > 0 && int_of(r, "p99_ns") >= int_of(r, "mean_ns") &&
		      json_object_is_type(json_get(r, "in_flight"), json_type_null), "%s", out);
	m = entry(o, "imports", "method", "kv.get");
	ck_assert_msg(m != NULL && int_of(m, "calls") == 2 && int_of(m, "errors") == 1 &&
		      int_of(m, "hubs") == 1 && int_of(m, "in_flight") == 0 &&
		      strcmp(str_of(m, "subject"), "hub.call.kv.get") == 0, "%s", out);
	json_object_put(o);
	free(out);
	/* the tables, and a guest that is no bridge */
	hubctl_ok(&hub_a, &out, "remotes", (char *)NULL);
	ck_assert_msg(strstr(out, "hub a on NATS (guest nats)") != NULL &&
		      strstr(out, "\nHUB ") != NULL && strstr(out, "\nb ") != NULL &&
		      strstr(out, "\nkv.get ") != NULL && strstr(out, "hub.call.kv.get") != NULL,
		      "%s", out);
	free(out);
	ck_assert_int_ne(hubctl_err(&hub_a, &out, "remotes", "cl", (char *)NULL), 0);
	free(out);
	/* B: no import, its hub a not heard of (A exports nothing) */
	hubctl_ok(&hub_b, &out, "remotes", (char *)NULL);
	ck_assert_msg(strstr(out, "(no method imported)") != NULL, "%s", out);
	free(out);
	two_hubs_stop();
}
END_TEST

/* The call of hubd's "calls" on h whose key is value, with a "where";
 * polled for up to 5 s. Its where (static), "" if none came. */
static const char *
where_of(struct hub_proc *h, const char *key, const char *value)
{
	static char where[256];
	char *out = NULL;

	where[0] = '\0';
	for (int i = 0; i < 100 && where[0] == '\0'; i++) {
		json_object *o, *c;

		hubctl_ok(h, &out, "-j", "calls", (char *)NULL);
		if ((o = json_tokener_parse(out)) != NULL &&
		    (c = entry(o, "calls", key, value)) != NULL && json_get(c, "where") != NULL)
			snprintf(where, sizeof(where), "%s", str_of(c, "where"));
		json_object_put(o);
		free(out);
		out = NULL;
		if (where[0] == '\0')
			sleep_ms(50);
	}
	return where;
}

/* The same for a call hubd does not list: one of a bridge's over a lane
 * ("lane" true). */
static const char *
lane_where_of(struct hub_proc *h, const char *method)
{
	static char where[256];
	char *out = NULL;

	where[0] = '\0';
	for (int i = 0; i < 100 && where[0] == '\0'; i++) {
		json_object *o, *cs;

		hubctl_ok(h, &out, "-j", "calls", (char *)NULL);
		if ((o = json_tokener_parse(out)) != NULL && (cs = json_get(o, "calls")) != NULL)
			for (size_t k = 0; k < json_object_array_length(cs); k++) {
				json_object *c = json_object_array_get_idx(cs, k);

				if (json_get(c, "lane") != NULL &&
				    strcmp(str_of(c, "method"), method) == 0)
					snprintf(where, sizeof(where), "%s", str_of(c, "where"));
			}
		json_object_put(o);
		free(out);
		out = NULL;
		if (where[0] == '\0')
			sleep_ms(50);
	}
	return where;
}

START_TEST(test_hubctl_calls_on_nats)
{
	char *out = NULL;
	const char *w;
	int status;
	pid_t pid;

	two_hubs(NULL);
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "blue");
	if ((pid = fork()) == 0) {
		nh_ctl(&hub_a, &out, "sl.sleep", "3000", NULL);
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	/* A: the call waits at its bridge, for the queue group */
	w = where_of(&hub_a, "method", "sl.sleep");
	ck_assert_msg(strcmp(w, "NATS: queue, 1 hub(s)") == 0, "A: '%s'; %s", w,
		      hub_log_tail(&hub_a));
	/* B: B's bridge makes it, for hub a */
	w = where_of(&hub_b, "method", "sl.sleep");
	ck_assert_msg(strcmp(w, "NATS: from hub a") == 0, "B: '%s'; %s", w, hub_log_tail(&hub_b));
	hubctl_ok(&hub_b, &out, "calls", (char *)NULL);
	ck_assert_msg(strstr(out, "WHERE") != NULL && strstr(out, "NATS: from hub a") != NULL,
		      "%s", out);
	free(out);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* a NATS client that says it is a hub it cannot name: "?" */
	{
		natsConnection *nc = NULL;
		natsMsg *m = NULL;

		ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
		ck_assert_int_eq(natsMsg_Create(&m, "hub.call.sl.sleep", "junk.reply", "\x80\x0f", 2),
				 NATS_OK);
		natsMsgHeader_Set(m, "Hub-Signature", "u64->unit");
		natsMsgHeader_Set(m, "Hub-From", "evil\x1b[31m.x");
		ck_assert_int_eq(natsConnection_PublishMsg(nc, m), NATS_OK);
		ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
		natsMsg_Destroy(m);
		/* the bridge called sl.sleep before: this one goes over the lane
		 * to sl, that hubd never sees, and is listed as the bridge's */
		w = lane_where_of(&hub_b, "sl.sleep");
		ck_assert_msg(strcmp(w, "NATS: from hub ?") == 0, "B: '%s'; %s", w, hub_log_tail(&hub_b));
		natsConnection_Destroy(nc);
	}
	/* ended: none left, and the table says so */
	hubctl_ok(&hub_a, &out, "calls", (char *)NULL);
	ck_assert_msg(strstr(out, "(no call in flight through hubd)") != NULL, "%s", out);
	free(out);
	two_hubs_stop();
}
END_TEST

/* A guest's calls of an import go over a lane to the bridge, and the
 * bridge's to the method's guest: hubd lists neither, the bridges do. */
START_TEST(test_hubctl_calls_over_lanes)
{
	char *out = NULL;
	const char *w;
	int status;
	pid_t pid;

	two_hubs(NULL);
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "blue");
	/* sl.sleep(0) through hubd on both hubs (lanes follow), then
	 * sl.sleep(2000) over them */
	if ((pid = fork()) == 0) {
		nh_ctl(&hub_a, &out, "cl.callsleep", "sl.sleep", "2000");
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	w = lane_where_of(&hub_a, "sl.sleep");
	ck_assert_msg(strcmp(w, "NATS: queue, 1 hub(s)") == 0, "A: '%s'; %s", w,
		      hub_log_tail(&hub_a));
	w = lane_where_of(&hub_b, "sl.sleep");
	ck_assert_msg(strcmp(w, "NATS: from hub a") == 0, "B: '%s'; %s", w, hub_log_tail(&hub_b));
	hubctl_ok(&hub_a, &out, "calls", (char *)NULL);
	ck_assert_msg(strstr(out, "\n(lane) ") != NULL && strstr(out, "cl.callsleep") != NULL,
		      "%s", out);
	free(out);
	hubctl_ok(&hub_b, &out, "calls", (char *)NULL);
	ck_assert_msg(strstr(out, "\nnats ") != NULL && strstr(out, "NATS: from hub a") != NULL,
		      "%s", out);
	free(out);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	two_hubs_stop();
}
END_TEST

/* With [import] from = b, a call waits for hub b by name, and hub b's
 * calls in flight are known. */
START_TEST(test_hubctl_from_in_flight)
{
	json_object *o = NULL, *r;
	char *out = NULL;
	const char *w;
	int status;
	pid_t pid, bridge;

	two_hubs("from = b\n");
	nh_wait_ok(&hub_a, "", "kv.put", "colour", "blue");
	if ((pid = fork()) == 0) {
		nh_ctl(&hub_a, &out, "sl.sleep", "2000", NULL);
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	w = where_of(&hub_a, "method", "sl.sleep");
	ck_assert_msg(strcmp(w, "NATS: hub b") == 0, "A: '%s'; %s", w, hub_log_tail(&hub_a));
	hubctl_ok(&hub_a, &out, "-j", "remotes", (char *)NULL);
	ck_assert_msg((o = json_tokener_parse(out)) != NULL, "%s", out);
	r = entry(o, "remotes", "hub", "b");
	ck_assert_msg(r != NULL && int_of(r, "in_flight") == 1 &&
		      json_object_is_type(json_get(r, "in_flight"), json_type_int) &&
		      int_of(entry(o, "imports", "method", "sl.sleep"), "in_flight") == 1 &&
		      strcmp(str_of(entry(o, "imports", "method", "sl.sleep"), "subject"),
			     "hub.at.b.sl.sleep") == 0, "%s", out);
	json_object_put(o);
	free(out);
	/* a bridge that hangs: hubctl calls still lists hubd's calls, without
	 * WHERE, and says the bridge did not answer */
	bridge = hub_peer_int(&hub_a, "nats", "pid");
	ck_assert_int_eq(kill(bridge, SIGSTOP), 0);
	ck_assert_int_eq(hubctl(&hub_a, &out, "calls", (char *)NULL), 0);
	ck_assert_msg(strstr(out, "sl.sleep") != NULL &&
		      strstr(hubctl_stderr(), "nats.stats did not answer") != NULL, "%s; %s", out,
		      hubctl_stderr());
	kill(bridge, SIGCONT);	/* hubd may have ended it meanwhile (stalled) */
	free(out);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	two_hubs_stop();
}
END_TEST

/* Any NATS client may ask $SRV: a flood is answered only in part, and
 * the bridge answers again afterwards; what is not ADR-32's is not
 * answered. */
START_TEST(test_srv_flood_and_junk)
{
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	json_object *o = NULL;
	natsMsg *r = NULL;
	int answers = 0;

	two_hubs(NULL);
	ck_assert_int_eq(natsConnection_ConnectTo(&nc, natsd.url), NATS_OK);
	for (int i = 0; i < 100 && (o = srv_ask(nc, "$SRV.PING.hub")) == NULL; i++)
		sleep_ms(100);
	ck_assert_ptr_nonnull(o);
	json_object_put(o);
	ck_assert_int_ne(natsConnection_RequestString(&r, nc, "$SRV.NOSUCHVERB", "", 300), NATS_OK);
	ck_assert_int_ne(natsConnection_RequestString(&r, nc, "$SRV.ping", "", 300), NATS_OK);
	ck_assert_int_eq(natsConnection_SubscribeSync(&sub, nc, "flood.answers"), NATS_OK);
	for (int i = 0; i < 400; i++)
		ck_assert_int_eq(natsConnection_PublishRequestString(nc, "$SRV.STATS", "flood.answers",
								     ""), NATS_OK);
	ck_assert_int_eq(natsConnection_Flush(nc), NATS_OK);
	while (natsSubscription_NextMsg(&r, sub, 1000) == NATS_OK) {
		answers++;
		natsMsg_Destroy(r);
	}
	/* 100 a second: 400 sent at once are answered over at most a few
	 * seconds' windows, never all */
	ck_assert_msg(answers >= 1 && answers < 400, "%d answers", answers);
	natsSubscription_Destroy(sub);
	sleep_ms(1100);
	ck_assert_ptr_nonnull(o = srv_ask(nc, "$SRV.PING"));
	json_object_put(o);
	natsConnection_Destroy(nc);
	two_hubs_stop();
}
END_TEST

Suite *suite_nats_seen(void);

Suite *
suite_nats_seen(void)
{
	Suite *s = suite_create("nats_seen");
	TCase *tc = tcase_create("nats_seen");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_srv_ping_info_stats);
	tcase_add_test(tc, test_hubctl_remotes);
	tcase_add_test(tc, test_hubctl_calls_on_nats);
	tcase_add_test(tc, test_hubctl_calls_over_lanes);
	tcase_add_test(tc, test_hubctl_from_in_flight);
	tcase_add_test(tc, test_srv_flood_and_junk);
	suite_add_tcase(s, tc);
	return s;
}
