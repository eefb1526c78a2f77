/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* log_argv: a command line for a debug line, quoted as the config's
 * args = takes it, and cut short rather than overrun. escape_text and
 * the log lines: what a guest wrote can neither end a line of hubd's log
 * (and forge the next) nor reach a terminal as a control sequence. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/escape.h"
#include "daemon/guestlog.h"
#include "daemon/hub.h"
#include "daemon/log.h"
#include "proto/clock.h"

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

static void
escaped(const char *in, size_t len, int flags, const char *want)
{
	char out[256];

	/* 0: the C string's length */
	escape_text(out, sizeof(out), in, len ? len : strlen(in), flags);
	ck_assert_msg(strcmp(out, want) == 0, "'%s', not '%s'", out, want);
}

START_TEST(test_escape_text)
{
	escaped("h4.a\nhubd: guest kv: FAKE", 0, 0, "h4.a\\nhubd: guest kv: FAKE");
	escaped("h4.b\033[31mred", 0, 0, "h4.b\\033[31mred");
	escaped("a\tb\rc\x7f", 0, 0, "a\tb\\rc\\177");
	escaped("two\nlines\033", 0, ESCAPE_KEEP_NL, "two\nlines\\033");
	/* NUL: "\000" before a digit, so that it reads as one escape */
	escaped("a\0b\0" "1", 5, 0, "a\\0b\\0001");
	/* UTF-8 as it is; C1 (U+009B, a CSI), bytes that are no UTF-8, a
	 * surrogate, a character cut short: escaped byte by byte */
	escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0, 0,
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	escaped("\xc2\x9b" "2J", 0, 0, "\\302\\2332J");
	escaped("\xff\xc3", 0, 0, "\\377\\303");
	escaped("\xed\xa0\x80", 0, 0, "\\355\\240\\200");
	escaped("back\\slash", 0, 0, "back\\slash");
	/* a right-to-left override (U+202E) and an isolate (U+2066): they
	 * would reorder what follows on a terminal; U+2028 stays */
	escaped("\xe2\x80\xae" "evil \xe2\x81\xa6x \xe2\x80\xa8", 0, 0,
		"\\342\\200\\256evil \\342\\201\\246x \xe2\x80\xa8");
}
END_TEST

/* Cut between whole escapes and characters, never past cap. */
START_TEST(test_escape_cut)
{
	char out[8];

	memset(out, 'Z', sizeof(out));
	ck_assert_str_eq(escape_text(out, 7, "abcd\033", 5, 0), "abcd");
	ck_assert_int_eq(out[7], 'Z');
	ck_assert_str_eq(escape_text(out, 6, "abc\xc3\xa9x", 6, 0), "abc\xc3\xa9");
	ck_assert_str_eq(escape_text(out, 5, "abc\xc3\xa9x", 6, 0), "abc");
	ck_assert_str_eq(escape_text(out, 1, "abc", 3, 0), "");
}
END_TEST

/* In place: what escape_text escapes becomes '?', byte for byte. */
START_TEST(test_escape_mask)
{
	char s[] = "a\033b\tc\xff caf\xc3\xa9 \xc2\x9b" "2J \xe2\x80\xae \xe2\x82\xac\x7f\xc3";

	escape_mask(s, sizeof(s) - 1);
	ck_assert_str_eq(s, "a?b\tc? caf\xc3\xa9 ??2J ??? \xe2\x82\xac??");
}
END_TEST

/* A log line with a guest's text in it stays one line, with no ESC. */
START_TEST(test_log_line_escaped)
{
	char path[] = "/tmp/check_log.XXXXXX", buf[512];
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	fflush(stderr);
	dup2(fd, 2);
	log_init(0, "hubd");
	log_info("guest %s: goodbye: %s", "h4", "bye\nhubd: guest kv: FAKE\033[31m");
	log_warnx("lane %u: guest %s closed it: %s", 1u, "h4", "x\r\nhubd: FAKE");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "hubd: guest h4: goodbye: bye\\nhubd: guest kv: FAKE\\033[31m\n"
			 "hubd: lane 1: guest h4 closed it: x\\r\\nhubd: FAKE\n");
}
END_TEST

/* A guest's budget of lines in hubd's log: GUESTLOG_BURST at once, then
 * GUESTLOG_RATE a second (the clock moved by hand); the lines not taken
 * counted until said. */
START_TEST(test_guest_log_budget)
{
	struct config_guest conf = { .name = "flooder" };
	struct peer p = { .conf = &conf };
	int taken = 0;

	guestlog_init(&p);
	for (int i = 0; i < GUESTLOG_BURST + 10; i++)
		taken += guestlog_may_log(&p);
	ck_assert_int_eq(taken, GUESTLOG_BURST);
	ck_assert_uint_eq(p.out.unlogged, 10);
	/* a second later: GUESTLOG_RATE more, the count said and cleared */
	p.out.log_budget.at_ns -= HP_NS_PER_S;
	taken = 0;
	for (int i = 0; i < GUESTLOG_BURST; i++)
		taken += guestlog_may_log(&p);
	ck_assert_int_eq(taken, GUESTLOG_RATE);
	ck_assert_uint_eq(p.out.unlogged, GUESTLOG_BURST - GUESTLOG_RATE);
	/* long quiet: back to a whole burst, no more */
	p.out.log_budget.at_ns -= 3600 * HP_NS_PER_S;
	taken = 0;
	for (int i = 0; i < 2 * GUESTLOG_BURST; i++)
		taken += guestlog_may_log(&p);
	ck_assert_int_eq(taken, GUESTLOG_BURST);
	guestlog_free(&p);
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
	tc = tcase_create("escape");
	tcase_add_test(tc, test_escape_text);
	tcase_add_test(tc, test_escape_cut);
	tcase_add_test(tc, test_escape_mask);
	tcase_add_test(tc, test_log_line_escaped);
	tcase_add_test(tc, test_guest_log_budget);
	suite_add_tcase(s, tc);
	return s;
}
