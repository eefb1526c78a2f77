/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl's words at the edges, against a real hubd: how a result prints
 * (unit, an opt's none, some("")), what an argument that is not of its
 * type is told, one wording for an unknown guest, methods grouped by
 * guest, and a malformed signature refused with what and where. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/harness.h"

#define PROBER	"[guest prober]\nexec = @/tests/guests/prober\n"
#define GUEST_ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define COUNTER	"[guest counter]\nexec = @/guests/counter\n"

static struct hub_proc hub;

/* hubctl ARGS... (NULL-ended, 8 at most): its exit status must be status
 * and its stdout want exactly (NULL: any), or its stderr hold err_has
 * (NULL: anything). */
static void
expect_ctl(int status, const char *want, const char *err_has, ...)
{
	char *argv[9], *out = NULL;
	int n = 0, rc;
	va_list ap;

	va_start(ap, err_has);
	while (n < 8 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	rc = hubctl(&hub, &out, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5],
		    argv[6], argv[7], (char *)NULL);
	ck_assert_msg(rc == status && (want == NULL || strcmp(out, want) == 0) &&
		      (err_has == NULL || strstr(hubctl_stderr(), err_has) != NULL),
		      "hubctl %s %s %s %s: status %d (want %d), stdout '%s' (want '%s'), "
		      "stderr '%s' (want '%s' in it)", argv[0], argv[1] ? argv[1] : "",
		      argv[1] && argv[2] ? argv[2] : "", argv[1] && argv[2] && argv[3] ?
		      argv[3] : "", rc, status, out, want ? want : "*", hubctl_stderr(),
		      err_has ? err_has : "");
	free(out);
}

/* A result prints by its type: unit nothing, an opt's none "null", its
 * some("") an empty line, some("x") x; -j says the type (returns) and
 * keeps "null" the text apart from none. */
START_TEST(test_call_prints_opt)
{
	hub_start_up(&hub, NULL, PROBER, "prober");
	ck_assert(hub_wait_method(&hub, "prober.maybe,prober.busy") == 0);
	expect_ctl(0, "null\n", NULL, "call", "prober.maybe", "none", NULL);
	expect_ctl(0, "\n", NULL, "call", "prober.maybe", "", NULL);
	expect_ctl(0, "x\n", NULL, "call", "prober.maybe", "x", NULL);
	expect_ctl(0, "", NULL, "call", "prober.busy", "0", NULL);	/* unit */
	expect_ctl(0, "{\"ok\":true,\"result\":null,\"returns\":\"opt<str>\"}\n", NULL,
		   "-j", "call", "prober.maybe", "none", NULL);
	expect_ctl(0, "{\"ok\":true,\"result\":\"\",\"returns\":\"opt<str>\"}\n", NULL,
		   "-j", "call", "prober.maybe", "", NULL);
	expect_ctl(0, "{\"ok\":true,\"result\":\"null\",\"returns\":\"opt<str>\"}\n", NULL,
		   "-j", "call", "prober.maybe", "null", NULL);
	expect_ctl(0, "{\"ok\":true,\"result\":null,\"returns\":\"unit\"}\n", NULL,
		   "-j", "call", "prober.busy", "0", NULL);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_hubctl(void);
Suite *
suite_hubctl(void)
{
	Suite *s = suite_create("hubctl");
	TCase *tc = tcase_create("edges");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_call_prints_opt);
	suite_add_tcase(s, tc);
	return s;
}
