/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* log_argv: a command line for a debug line, quoted as the config's
 * args = takes it, and cut short rather than overrun. */
#include <check.h>
#include <string.h>

#include "daemon/log.h"

START_TEST(test_argv_quoted)
{
	char *argv[] = { "/bin/x", "-v", "two words", "", "q\"uote", "back\\slash", NULL };
	char buf[128];

	ck_assert_str_eq(log_argv(buf, sizeof(buf), argv),
			 "/bin/x -v \"two words\" \"\" \"q\\\"uote\" \"back\\\\slash\"");
}
END_TEST

START_TEST(test_argv_cut_short)
{
	char *argv[] = { "/bin/x", "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", NULL };
	char buf[32], small[5];

	memset(buf, 'Z', sizeof(buf));
	ck_assert_str_eq(log_argv(buf, 24, argv), "/bin/x aaaaaaaaaa ...");
	ck_assert_int_eq(buf[24], 'Z');		/* nothing written past len */
	ck_assert_str_eq(log_argv(small, sizeof(small), argv), "...");
	ck_assert_str_eq(log_argv(small, 4, argv), "");
}
END_TEST

Suite *suite_log(void);
Suite *
suite_log(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("argv");

	tcase_add_test(tc, test_argv_quoted);
	tcase_add_test(tc, test_argv_cut_short);
	suite_add_tcase(s, tc);
	return s;
}
