/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest with a real hubd and the example guests: a guest busy for
 * seconds keeps its heartbeat, a channel closed without an item is freed,
 * bytes values that are not UTF-8 survive a round trip. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

/* How many deaths the hub has seen of name (-1: no such peer). */
static int
peer_deaths(const char *name)
{
	json_object *p = hub_peer(&hub, name), *v;
	int n = -1;

	if (p != NULL && json_object_object_get_ex(p, "deaths", &v))
		n = (int)json_object_array_length(v);
	json_object_put(p);
	return n;
}

/* r[shm.crash.heartbeat]: a guest streaming for seconds, with a 250 ms
 * heartbeat_interval (stale after 500 ms: a shorter one is a guest
 * merely not scheduled for that long on a loaded machine), sends, waits
 * for credit, for ring space and slots, and never returns to its loop
 * until done: it must still beat, and is not taken for hung. */
START_TEST(test_busy_guest_keeps_its_heartbeat)
{
	/* ~4 GB/s here: about 2 s (four stale windows), more under ASan or beside
	 * stress-ng. A window of 4 MiB: hundreds of credit waits still, but
	 * not one per 65000-byte item (the default 64 KiB), which a loaded
	 * machine makes a pair of context switches each: 20-30 MB/s, past
	 * the call's 120 s */
	static const char bytes[] = "8000000000";
	char *out = NULL, *log;
	int pid, rc;

	hub_start_up(&hub, "heartbeat_interval = 250ms\ninitial_credit = 4M",
	    "[guest counter]\nexec = @/guests/counter\n",
	      "counter");
	ck_assert(hub_wait_method(&hub, "counter.stream") == 0);
	pid = hub_peer_int(&hub, "counter", "pid");
	rc = hubctl(&hub, &out, "-t", "120", "call", "counter.stream", bytes, "65000",
		    (char *)NULL);
	log = hub_log(&hub);
	ck_assert_msg(rc == 0 && strncmp(out, "ok 8000000000 ", 14) == 0,
		      "counter.stream: status %d, output '%s', stderr '%s'; log: %.2000s", rc,
		      out, hubctl_stderr(), log);
	ck_assert_msg(hub_peer_int(&hub, "counter", "pid") == pid &&
		      hub_peer_int(&hub, "counter", "epoch") == 1 &&
		      peer_deaths("counter") == 0,
		      "counter was restarted (pid %d -> %d, epoch %d, %d deaths); log: %.2000s",
		      pid, hub_peer_int(&hub, "counter", "pid"),
		      hub_peer_int(&hub, "counter", "epoch"),
		      peer_deaths("counter"), log);
	ck_assert_msg(strstr(log, "hung") == NULL, "a guest was taken for hung: %.2000s", log);
	free(log);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.flow.ordering.receiver]: hub.sink gives back all it consumed once
 * the guest has nothing more queued: a 10-byte item, then one that needs
 * all but 5 bytes of the 64 KiB window, goes through (granted only in
 * quarters of the window, those 10 bytes stayed hubd's and the second
 * send waited for ever). */
START_TEST(test_sink_grants_the_rest_of_the_window)
{
	char *out = NULL;

	hub_start_up(&hub, "initial_credit = 64K",
		     "[guest prober]\nexec = @/tests/guests/prober\n", "prober");
	ck_assert(hub_wait_method(&hub, "prober.sinkpair") == 0);
	ck_assert_int_eq(hubctl(&hub, &out, "call", "prober.sinkpair", "10", "65531",
				(char *)NULL), 0);
	ck_assert_msg(strcmp(out, "ok\n") == 0, "prober.sinkpair: '%s'", out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* r[shm.flow.channel-id-reuse]: counter.count 0 sends no item on the
 * channel the host opened for it, and still closes it: the host frees
 * the entry. */
START_TEST(test_empty_stream_is_closed)
{
	char *out = NULL;
	double end;
	int open;

	hub_start_up(&hub, NULL, "[guest counter]\nexec = @/guests/counter\n", "counter");
	ck_assert(hub_wait_method(&hub, "counter.count") == 0);
	ck_assert_int_eq(hub_peer_int(&hub, "counter", "channels_open"), 0);
	ck_assert_msg(hubctl(&hub, &out, "call", "counter.count", "0", (char *)NULL) == 0 &&
		      strcmp(out, "0\n") == 0, "counter.count 0: '%s'", out);
	free(out);
	end = now_s() + 5;
	while ((open = hub_peer_int(&hub, "counter", "channels_open")) != 0 && now_s() < end)
		usleep(10000);
	ck_assert_msg(open == 0, "%d channel(s) still open after counter.count 0", open);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* kv.put is str,bytes->unit: a value that is not UTF-8 is stored and
 * given back byte for byte (hubd shows such bytes as "base64:" and their
 * base64), and that form, given back, is the same bytes. */
START_TEST(test_kv_keeps_bytes_that_are_not_utf8)
{
	char *out = NULL;
	int rc;

	hub_start_up(&hub, NULL, "[guest kv]\nexec = @/guests/kv\n", "kv");
	ck_assert(hub_wait_method(&hub, "kv.put,kv.get") == 0);
	rc = hubctl(&hub, &out, "call", "kv.put", "k", "a\xff" "b", (char *)NULL);
	ck_assert_msg(rc == 0, "kv.put: status %d, output '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.get", "k", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "\"base64:Yf9i\"") != NULL,
		      "kv.get: status %d, output '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "call", "kv.put", "k2", "base64:Yf9i", (char *)NULL);
	ck_assert_msg(rc == 0, "kv.put: status %d, output '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.get", "k2", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "\"base64:Yf9i\"") != NULL,
		      "kv.get: status %d, output '%s'", rc, out);
	free(out);
	/* text that is only like the form is taken as it is */
	rc = hubctl(&hub, &out, "call", "kv.put", "k3", "hex:fffe", (char *)NULL);
	ck_assert_msg(rc == 0, "kv.put: status %d, output '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.get", "k3", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "\"hex:fffe\"") != NULL,
		      "kv.get: status %d, output '%s'", rc, out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* kv.keys is ->list<str>, kv.mget list<str>->list<opt<bytes>>: hubctl's
 * argument is JSON, the result JSON (none is null, bytes not UTF-8 in the
 * base64 form), and an argument that is not the type is refused naming
 * the argument, the method and what is wrong. */
START_TEST(test_kv_compound_types)
{
	char *out = NULL;
	int rc;

	hub_start_up(&hub, NULL, "[guest kv]\nexec = @/guests/kv\n", "kv");
	ck_assert(hub_wait_method(&hub, "kv.put,kv.keys,kv.mget") == 0);
	rc = hubctl(&hub, &out, "call", "kv.keys", (char *)NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "[]\n") == 0, "kv.keys: %d '%s'", rc, out);
	free(out);
	hubctl_ok(&hub, &out, "call", "kv.put", "a", "1", (char *)NULL);
	free(out);
	hubctl_ok(&hub, &out, "call", "kv.put", "b", "base64:/w==", (char *)NULL);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.keys", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "\"result\":[\"a\",\"b\"]") != NULL,
		      "kv.keys: %d '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.mget", "[\"a\", \"x\", \"b\"]", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "\"result\":[\"1\",null,\"base64:/w==\"]") != NULL,
		      "kv.mget: %d '%s'", rc, out);
	free(out);
	/* text output: JSON too */
	rc = hubctl(&hub, &out, "call", "kv.mget", "[\"x\"]", (char *)NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "[null]\n") == 0, "kv.mget: %d '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.mget", "[\"a\", 3]", (char *)NULL);
	ck_assert_msg(rc != 0 && strstr(out, "kv.mget takes (list<str>) -> list<opt<bytes>>: "
					"argument 1 is not a list<str>: element 2 is not a str") != NULL,
		      "kv.mget: %d '%s'", rc, out);
	free(out);
	rc = hubctl(&hub, &out, "-j", "call", "kv.mget", "[\"a\"", (char *)NULL);
	ck_assert_msg(rc != 0 && strstr(out, "argument 1 is not a list<str>: not JSON") != NULL,
		      "kv.mget: %d '%s'", rc, out);
	free(out);
	/* a key with DEL and C1 controls (CSI, OSC) in it: JSON escapes only
	 * C0, so hubctl escapes the rest, as it does a str result */
	hubctl_ok(&hub, &out, "call", "kv.put", "X\177Y\302\2332J\302\2350;t", "v", (char *)NULL);
	free(out);
	rc = hubctl(&hub, &out, "call", "kv.keys", (char *)NULL);
	ck_assert_msg(rc == 0 && strchr(out, '\177') == NULL && strstr(out, "\302\233") == NULL &&
		      strstr(out, "\302\235") == NULL &&
		      strstr(out, "\"X\\177Y\\302\\2332J\\302\\2350;t\"") != NULL,
		      "kv.keys: %d '%s'", rc, out);
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_guest(void);
Suite *
suite_guest(void)
{
	Suite *s = suite_create("guest");
	TCase *tc = tcase_create("examples");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, test_busy_guest_keeps_its_heartbeat);
	tcase_add_test(tc, test_empty_stream_is_closed);
	tcase_add_test(tc, test_sink_grants_the_rest_of_the_window);
	tcase_add_test(tc, test_kv_keeps_bytes_that_are_not_utf8);
	tcase_add_test(tc, test_kv_compound_types);
	suite_add_tcase(s, tc);
	return s;
}
