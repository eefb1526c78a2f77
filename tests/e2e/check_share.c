/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Callers that share a callee (daemon/fair.c): one that floods it keeps
 * no more than its share of calls in flight there while another calls it
 * too, so the other's calls do not wait behind a ring's worth of the
 * flood's; every call of both is answered, and a flooder the callee
 * calls back is still read. Asserted as counts of calls in flight
 * (hubctl calls), never as timings. */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

static struct hub_proc hub;

/* v2's ring (ring_size) shared by two callers */
#define RING	256
#define SHARE	(RING / 2)

/* v1 and hog call v2; v2's back calls hog back. Through hubd: lanes
 * would take the calls past it. */
static const char GUESTS[] =
	"[guest v1]\nexec = @/tests/guests/sharer\nargs = --prefix v1\nlanes = no\n"
	"[guest v2]\nexec = @/tests/guests/sharer\nargs = --prefix v2 --back=hog.echo\n"
	"lanes = no\n"
	"[guest hog]\nexec = @/tests/guests/sharer\nargs = --prefix hog\nlanes = no\n";

/* caller.flood of method for ms with window calls in flight, by a client
 * of its own whose answer is read later (flood_result). */
static int
flood_start(const char *caller, const char *method, int ms, int window)
{
	char line[256];
	int fd = hub_client(&hub, 120);
	int n = snprintf(line, sizeof(line), "{\"cmd\":\"call\",\"method\":\"%s.flood\","
			 "\"args\":[\"%s\",\"%d\",\"%d\"]}\n", caller, method, ms, window);

	ck_assert_int_eq(send(fd, line, (size_t)n, MSG_NOSIGNAL), n);
	return fd;
}

/* Whether fd's answer has come. */
static int
answered(int fd)
{
	struct pollfd pfd = { fd, POLLIN, 0 };

	return poll(&pfd, 1, 0) == 1;
}

/* The flood's answer ("calls=N failed=F"): N into *calls, F returned. */
static unsigned long
flood_result(int fd, unsigned long *calls)
{
	char buf[512];
	size_t len = 0;
	ssize_t n;
	json_object *o;
	unsigned long failed = ~0ul;
	const char *text;

	while (len < sizeof(buf) - 1 && memchr(buf, '\n', len) == NULL &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	o = json_tokener_parse(buf);
	text = o != NULL ? json_object_get_string(json_get(o, "result")) : NULL;
	ck_assert_msg(text != NULL && sscanf(text, "calls=%lu failed=%lu", calls, &failed) == 2,
		      "flood answered: %s; %s", buf, hub_log_tail(&hub));
	json_object_put(o);
	return failed;
}

/* Calls in flight at callee from caller, now (hubctl calls). */
struct sample {
	int	hog, v1;
};

static struct sample
sample(const char *callee)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"calls\"}", NULL), *a;
	struct sample s = { 0, 0 };

	ck_assert_msg(o != NULL && (a = json_get(o, "calls")) != NULL, "no calls: %s",
		      hub_log_tail(&hub));
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *c = json_object_array_get_idx(a, i);
		const char *to = json_object_get_string(json_get(c, "callee"));
		const char *from = json_object_get_string(json_get(c, "caller"));

		if (to == NULL || from == NULL || strcmp(to, callee) != 0)
			continue;
		s.hog += strcmp(from, "hog") == 0;
		s.v1 += strcmp(from, "v1") == 0;
	}
	json_object_put(o);
	return s;
}

/* hog floods method at v2 with a ring's worth of calls in flight (12 s:
 * v1's 4 s inside them on a loaded machine too) while
 * v1 calls v2.echo one at a time, both through to their ends; the most
 * calls hog had in flight at v2 while v1 called, from the moment it was
 * down to its share (it had the whole ring before v1 came), or -1 if it
 * never was. Both floods end with every call answered. */
static int
flood_shared(const char *method)
{
	int hogfd, v1fd, shared = 0, max = -1;
	unsigned long calls, failed;
	struct sample s;
	double end;

	hub_start_up(&hub, "ring_size = 256\n", GUESTS, "v1,v2,hog");
	ck_assert(hub_wait_method(&hub, "v1.flood,hog.flood,hog.echo,v2.echo,v2.back") == 0);
	hogfd = flood_start("hog", method, 12000, RING);
	end = now_s() + 30;
	while ((s = sample("v2")).hog == 0 && now_s() < end)
		sleep_ms(5);
	ck_assert_msg(s.hog > 0, "hog's calls never reached v2: %s", hub_log_tail(&hub));
	v1fd = flood_start("v1", "v2.echo", 4000, 1);
	while (!answered(v1fd)) {
		s = sample("v2");
		if (s.v1 > 0 && (max >= 0 || s.hog <= SHARE)) {
			shared++;
			if (s.hog > max)
				max = s.hog;
		}
		sleep_ms(10);
	}
	failed = flood_result(v1fd, &calls);
	ck_assert_msg(failed == 0 && calls > 0, "v1: %lu calls, %lu failed", calls, failed);
	failed = flood_result(hogfd, &calls);
	ck_assert_msg(failed == 0 && calls > 0, "hog: %lu calls, %lu failed", calls, failed);
	ck_assert_int_eq(hub_stop(&hub), 0);
	return shared >= 3 ? max : -1;
}

/* hog, with v2's ring to itself before v1 came, comes down to its share
 * of v2 and keeps to it while v1 calls too. Before, hog kept the whole
 * ring in flight and v1's each call waited behind all of it. */
START_TEST(test_flood_keeps_its_share)
{
	int max = flood_shared("v2.echo");

	ck_assert_msg(max >= 0, "hog never came down to its share of %d while v1 called",
		      SHARE);
	ck_assert_msg(max <= SHARE, "hog had %d calls in flight at v2, its share is %d", max,
		      SHARE);
}
END_TEST

/* v2 calls hog back from each of hog's calls (A calls B, B calls A):
 * paused over its share, hog would not have its answers to v2 read, and
 * v2, waiting for one, would answer none of hog's calls (v2.back gives
 * up after 20 s: hog's calls failed). hog is read while v2 waits for it,
 * and every call of both is answered. */
START_TEST(test_flooder_called_back_is_read)
{
	flood_shared("v2.back");
}
END_TEST

Suite *suite_share(void);

Suite *
suite_share(void)
{
	Suite *s = suite_create("share");
	TCase *tc = tcase_create("share");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_flood_keeps_its_share);
	tcase_add_test(tc, test_flooder_called_back_is_read);
	suite_add_tcase(s, tc);
	return s;
}
