/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Hostile guests: a chaos guest does everything a plugin should not, over
 * and over, while well-behaved guests keep calling each other with
 * checked payloads. hubd must never crash, hang or leak (the ASan build
 * checks at its exit), must end the culprit naming the rule, recover and
 * restart it, and the others must not notice. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

#define ROUNDS		10000
#define MAX_SECONDS	600

static struct hub_proc hub;


START_TEST(test_chaos_guest)
{
	static const char *const rules[] = {
		"shm.desc.msg-type", "shm.slot.generation", "shm.flow.remaining-credit",
		"shm.handshake.no-negotiation",
	};
	static const char *const good[] = { "echo", "kv", "loader" };
	char counter[256], guests[1024], *out = NULL, *log;
	unsigned long long eo, ee, ko, ke, wrong;
	uint64_t *rounds;
	time_t t0 = time(NULL);
	json_object *st, *p;
	int fd, deaths, slots;

	/* in the run's directory: removed even if this test dies; open to
	 * the guest, a uid of its own */
	snprintf(counter, sizeof(counter), "%s/chaos.counter", harness_dir());
	fd = open(counter, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0666), 0);
	ck_assert_int_eq(ftruncate(fd, 16), 0);
	rounds = mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(rounds, MAP_FAILED);
	/* chaos writes payloads after sending them: in the shared pool that
	 * would reach the others' payloads (doc/pool.md), so it is kept out */
	/* the hub's heartbeat is short, for chaos's silences; the others
	 * beat at an interval of their own that no load breaks (a guest
	 * starved of the CPU for 2 of the hub's 100 ms would be "hung") */
	snprintf(guests, sizeof(guests),
		 "[guest echo]\nexec = @/guests/echo\nheartbeat = 10s\n"
		 "[guest kv]\nexec = @/guests/kv\nheartbeat = 10s\n"
		 "[guest loader]\nexec = @/tests/guests/loader\nheartbeat = 10s\n"
		 "[guest chaos]\nexec = @/tests/guests/chaos\nargs = --counter=%s\n"
		 "shared_pool = no\nrestart = always\nmax_deaths = 1000000\nbackoff_min = 0\nbackoff_max = 0\n",
		 counter);
	ck_assert(hub_start(&hub, "heartbeat_interval = 100ms\ninitial_credit = 4K\n", guests) == 0);
	ck_assert(hub_wait_up(&hub, "echo,kv,loader", 10000) == 0);
	while (*(volatile uint64_t *)rounds < ROUNDS && time(NULL) - t0 < MAX_SECONDS) {
		usleep(200000);
		/* hubd answers all along */
		st = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
		ck_assert_msg(st != NULL, "hubd stopped answering: %s", hub_log_tail(&hub));
		json_object_put(st);
	}
	ck_assert_msg(*rounds >= ROUNDS, "only %llu rounds in %d s",
		      (unsigned long long)*rounds, MAX_SECONDS);
	hubctl_ok(&hub, NULL, "stop", "chaos", (char *)NULL);
	/* stop answers at once: its domain, which it scribbled on, goes
	 * when it is down (inspect below would find it broken till then) */
	for (double end = now_s() + 60; now_s() < end; sleep_ms(20))
		if (strcmp(hub_peer_state(&hub, "chaos"), "down") == 0)
			break;
	ck_assert_msg(strcmp(hub_peer_state(&hub, "chaos"), "down") == 0, "chaos is %s: %s",
		      hub_peer_state(&hub, "chaos"), hub_log_tail(&hub));
	p = hub_peer(&hub, "chaos");
	deaths = json_object_get_int(json_get(p, "restarts"));
	/* every death it had was the host ending it: for a violation (the
	 * Goodbye named the rule) or for hanging; never anything else. The
	 * newest may be the stop above, when it came as chaos was starting
	 * again: "stopped" (ended by the SIGTERM that asked it to) */
	json_object *ds = json_get(p, "deaths");
	for (size_t i = 0; i < json_object_array_length(ds); i++) {
		const char *why = json_object_get_string(json_get(json_object_array_get_idx(ds, i),
							     "reason"));

		ck_assert_msg(strcmp(why, "protocol violation") == 0 || strcmp(why, "hung") == 0 ||
			      strcmp(why, "crashed") == 0 || (i == 0 && strcmp(why, "stopped") == 0),
			      "chaos died: %s (death %zu, newest first)", why, i);
	}
	json_object_put(p);
	log = hub_log(&hub);
	/* r[shm.handshake.no-negotiation]: over max_payload_size is a violation */
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		ck_assert_msg(strstr(log, rules[i]) != NULL, "%s not named in the log "
			      "(%d deaths): %s", rules[i], deaths, hub_log_tail(&hub));
	free(log);
	/* the well-behaved were never ended, restarted ... */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		p = hub_peer(&hub, good[i]);
		ck_assert_msg(p != NULL && json_object_array_length(json_get(p, "deaths")) == 0 &&
			      strcmp(json_object_get_string(json_get(p, "state")), "up") == 0,
			      "%s: %s; log: %s", good[i], json_object_to_json_string(p),
			      hub_log_tail(&hub));
		json_object_put(p);
	}
	/* ... and never saw an error or a wrong byte */
	hubctl_ok(&hub, NULL, "-t", "60", "call", "loader.pause", (char *)NULL);
	hubctl_ok(&hub, &out, "-t", "60", "call", "loader.stats", (char *)NULL);
	ck_assert_msg(sscanf(out, "%llu %llu %llu %llu %llu", &eo, &ee, &ko, &ke, &wrong) == 5,
		      "loader.stats: '%s'", out);
	free(out);
	ck_assert_msg(ee == 0 && ke == 0 && wrong == 0 && eo > 0 && ko > 0,
		      "echo %llu/%llu kv %llu/%llu wrong %llu; log: %s", eo, ee, ko, ke, wrong,
		      hub_log_tail(&hub));
	/* no slot leaked anywhere (once the calls in flight at the pause
	 * are answered), and the segment's invariants hold */
	st = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
	ck_assert_msg(st != NULL, "hubd stopped answering: %s", hub_log_tail(&hub));
	slots = json_object_get_int(json_get(st, "slots_per_guest"));
	json_object_put(st);
	for (double end = now_s() + 30; now_s() < end; sleep_ms(20))
		if (hub_peer_int(&hub, "echo", "host_slots_free") == slots &&
		    hub_peer_int(&hub, "kv", "host_slots_free") == slots)
			break;
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "host_slots_free"), slots);
	ck_assert_int_eq(hub_peer_int(&hub, "kv", "host_slots_free"), slots);
	hubctl_ok(&hub, NULL, "inspect", (char *)NULL);
	fprintf(stderr, "chaos: %llu rounds, %d restarts, in %ld s; echo %llu calls, kv %llu\n",
		(unsigned long long)*rounds, deaths, (long)(time(NULL) - t0), eo, ko);
	/* an ASan build of hubd fails its exit on any leak */
	ck_assert_int_eq(hub_stop(&hub), 0);
	munmap(rounds, 16);
	close(fd);
	unlink(counter);
}
END_TEST

Suite *suite_chaos(void);
Suite *
suite_chaos(void)
{
	Suite *s = suite_create("chaos");
	TCase *tc = tcase_create("hostile");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, MAX_SECONDS + 60);
	tcase_add_test(tc, test_chaos_guest);
	suite_add_tcase(s, tc);
	return s;
}
