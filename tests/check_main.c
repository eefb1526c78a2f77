/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The one Check runner: every suite_NAME() of tests/unit/check_NAME.c.
 * CK_RUN_SUITE=NAME runs one suite (make check runs each so, side by side:
 * scripts/run-tests.sh), CK_INCLUDE_TAGS=tsan the threaded cases,
 * CK_FORK=no runs in one process (for gdb). */
#include <check.h>
#include <stdlib.h>

#define SUITE(name) Suite *suite_##name(void);
#include "suites.inc"
#undef SUITE

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

#define SUITE(name) srunner_add_suite(sr, suite_##name());
#include "suites.inc"
#undef SUITE
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
