/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A long-running hubd under churn: whatever a bounded number of cycles
 * (guests added and removed by reloads, ...) took, hubd gives back once
 * the churn stops: its open fds and its zones return to where they were. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

#define KEEP	"[guest echo]\nexec = @/guests/echo\n"

/* hubd's open fds; into list (when not NULL) where each points. */
static int
hub_fds(char *list, size_t cap)
{
	char path[64], link[256];
	struct dirent *e;
	size_t at = 0;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)hub.pid);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((e = readdir(d)) != NULL) {
		char fdpath[320];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, e->d_name);
		if (list == NULL || (len = readlink(fdpath, link, sizeof(link) - 1)) < 0)
			continue;
		link[len] = '\0';
		if (at < cap)
			at += (size_t)snprintf(list + at, cap - at, "%s ", link);
	}
	closedir(d);
	return n;
}

/* hubd's open fds once the last request's connection is gone: the same
 * count three times over 100 ms (10 s at most). */
static int
settled_fds(void)
{
	double end = now_s() + 10;
	int n = hub_fds(NULL, 0), same = 0;

	while (same < 2 && now_s() < end) {
		int m;

		sleep_ms(50);
		m = hub_fds(NULL, 0);
		same = m == n ? same + 1 : 0;
		n = m;
	}
	return n;
}

/* A number of hubd's status answer. */
static unsigned long long
status_u64(const char *key)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
	unsigned long long v;

	ck_assert_ptr_nonnull(o);
	v = json_u64(o, key, NULL, NULL);
	json_object_put(o);
	return v;
}

/* Topics hubd has now. */
static size_t
topics_count(void)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"topics\"}", NULL);
	size_t n;

	ck_assert_ptr_nonnull(o);
	n = json_object_array_length(json_get(o, "topics"));
	json_object_put(o);
	return n;
}

/* Waits (30 s) until hubd holds as many fds, zones and topics as given;
 * its fds counted after asking (a request's connection, closed, may take
 * hubd a moment to close too). */
static void
assert_back_to(int fds, unsigned long long zones, size_t topics)
{
	static char list[8192];
	double end = now_s() + 30;
	unsigned long long z;
	size_t t;
	int f;

	do {
		z = status_u64("zones");
		t = topics_count();
		sleep_ms(20);
		f = hub_fds(list, sizeof(list));
	} while ((f != fds || z != zones || t != topics) && now_s() < end);
	ck_assert_msg(f == fds && z == zones && t == topics,
		      "hubd has %d fds (%d before), %llu zones (%llu), %zu topics (%zu): %s",
		      f, fds, z, zones, t, topics, list);
}

static void
wait_state(const char *name, const char *state)
{
	double end = now_s() + 30;

	while (now_s() < end && strcmp(hub_peer_state(&hub, name), state) != 0)
		sleep_ms(10);
	ck_assert_msg(strcmp(hub_peer_state(&hub, name), state) == 0, "%s is %s, not %s; log: %s",
		      name, hub_peer_state(&hub, name), state, hub_log_tail(&hub));
}

static void
reload_ok(const char *guests)
{
	char msgs[2048];

	ck_assert_int_eq(hub_write_conf(&hub, NULL, guests), 0);
	ck_assert_msg(hub_reload(&hub, msgs, sizeof(msgs)), "reload: %s", msgs);
}

/* Defect: a reload that removed a guest not running (stopped, failed, in
 * its backoff) freed its entry without leaving its zone: the zone's pool
 * (a memfd of 45 MiB with the default classes, mapped by hubd) stayed,
 * "1 member" in hubctl pool, until another guest took the entry. */
START_TEST(test_removed_while_down)
{
	int fds;
	unsigned long long zones;

	hub_start_up(&hub, NULL, KEEP, "echo");
	zones = status_u64("zones");
	fds = settled_fds();
	for (int i = 0; i < 30; i++) {
		reload_ok(KEEP "[guest gone]\nexec = @/tests/guests/lifeguest\nargs = --mode=idle\n"
		      "[guest quitter]\nexec = /bin/false\nbackoff_min = 1min\n"
		      "backoff_max = 2min\n");
		ck_assert_msg(hub_wait_up(&hub, "gone", 10000) == 0, "%s", hub_log_tail(&hub));
		wait_state("quitter", "backoff");
		hubctl_ok(&hub, NULL, "stop", "gone", (char *)NULL);
		wait_state("gone", "down");
		reload_ok(KEEP);
		ck_assert_str_eq(hub_peer_state(&hub, "gone"), "?");
		ck_assert_str_eq(hub_peer_state(&hub, "quitter"), "?");
	}
	assert_back_to(fds, zones, topics_count());
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Defect: the topics a guest advertised retained kept their memory (an
 * fd and a mapping each) after a reload removed the guest, for a next
 * instance there would never be: a config whose guests come and go by
 * name piled them up to the 4096 topics hubd holds, then no guest could
 * advertise or subscribe to a new topic. */
START_TEST(test_removed_publisher)
{
	char guests[512], method[64];
	unsigned long long zones;
	size_t topics;
	int fds;

	hub_start_up(&hub, NULL, KEEP, "echo");
	zones = status_u64("zones");
	fds = settled_fds();
	topics = topics_count();
	for (int i = 0; i < 30; i++) {
		snprintf(guests, sizeof(guests), KEEP "[guest pub%d]\n"
			 "exec = @/tests/guests/topicguest\n"
			 "args = --as=pub%d --pub=pub%d.t --retain\n", i, i, i);
		reload_ok(guests);
		snprintf(method, sizeof(method), "pub%d.burst", i);
		ck_assert_msg(hub_wait_method(&hub, method) == 0, "%s", hub_log_tail(&hub));
		hubctl_ok(&hub, NULL, "call", method, "2", "1", (char *)NULL);
		ck_assert_uint_ge(topics_count(), topics + 1);
		if (i % 2 == 0) {	/* removed while down, or while up */
			snprintf(method, sizeof(method), "pub%d", i);
			hubctl_ok(&hub, NULL, "stop", method, (char *)NULL);
			wait_state(method, "down");
		}
		reload_ok(KEEP);
	}
	assert_back_to(fds, zones, topics);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_soak(void);
Suite *
suite_soak(void)
{
	Suite *s = suite_create("soak");
	TCase *tc = tcase_create("churn");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_removed_while_down);
	tcase_add_test(tc, test_removed_publisher);
	suite_add_tcase(s, tc);
	return s;
}
