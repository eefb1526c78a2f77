/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The spawn ticket: both argument forms, plugin arguments left alone, and
 * every bad or missing piece refused with a reason. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/ticket.h"

#define WHY(w)		((w) != NULL ? (w) : "(null)")

static int dfd = -1;		/* an open fd to name as the doorbell */
static char dfd_arg[32];	/* "--doorbell-fd=N" */
static char dfd_num[16];	/* "N" */

static void
setup(void)
{
	dfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	snprintf(dfd_num, sizeof(dfd_num), "%d", dfd);
	snprintf(dfd_arg, sizeof(dfd_arg), "--doorbell-fd=%d", dfd);
}

static void
teardown(void)
{
	if (dfd >= 0)
		close(dfd);
	dfd = -1;
}

static int
parse(int argc, char **argv, struct hp_ticket *t, const char **why)
{
	t->hub_path = "sentinel";
	t->peer_id = 777;
	t->doorbell_fd = -77;
	*why = NULL;
	return hp_ticket_parse(argc, argv, t, why);
}

/* argc of a NULL-terminated argv */
static int
count_args(char **argv)
{
	int n = 0;

	while (argv[n] != NULL)
		n++;
	return n;
}

/* argv parses into path, peer_id and our doorbell. */
static void
expect_ticket(char **argv, const char *path, uint32_t peer_id)
{
	struct hp_ticket t;
	const char *why;
	int ret = parse(count_args(argv), argv, &t, &why);

	ck_assert_msg(ret == 0, "parse: %d %s", ret, WHY(why));
	ck_assert_str_eq(t.hub_path, path);
	ck_assert_uint_eq(t.peer_id, peer_id);
	ck_assert_int_eq(t.doorbell_fd, dfd);
}

/* Tickets refused with a reason naming what is wrong. */
struct refusal {
	const char	*name;
	char		**argv;
	const char	*want;		/* in the reason */
};

/* Each is refused (-EINVAL, want in the reason); the ticket the last
 * one was parsed into is left as it was. */
static void
expect_refusals(const struct refusal *r, size_t n)
{
	struct hp_ticket t;
	const char *why;
	int ret;

	for (size_t i = 0; i < n; i++) {
		ret = parse(count_args(r[i].argv), r[i].argv, &t, &why);
		ck_assert_msg(ret == -EINVAL && strstr(WHY(why), r[i].want),
		    "%s: %d %s", r[i].name, ret, WHY(why));
	}
	ck_assert_msg(t.peer_id == 777, "ticket changed");
}

/* r[shm.spawn.args] */
START_TEST(test_equals_form)
{
	char *argv[] = { "guest", "--hub-path=/dev/shm/hub", "--peer-id=3",
	    dfd_arg, NULL };

	expect_ticket(argv, "/dev/shm/hub", 3);
}
END_TEST

/* r[shm.spawn.args] */
START_TEST(test_separate_form)
{
	char *argv[] = { "guest", "--doorbell-fd", dfd_num, "--peer-id", "255",
	    "--hub-path", "/dev/shm/x y", NULL };

	expect_ticket(argv, "/dev/shm/x y", 255);
}
END_TEST

/* The plugin's own arguments are left alone and do not confuse us. */
START_TEST(test_plugin_arguments_ignored)
{
	char *argv[] = { "guest", "-v", "--hub-pathology=9", "--config=a.conf",
	    "--peer-id=1", "positional", "--hub-path=/p", "--peer", dfd_arg,
	    "--peer-idx", NULL };
	struct hp_ticket t;
	const char *why;
	int ret = parse(count_args(argv), argv, &t, &why);

	ck_assert_msg(ret == 0, "parse: %d %s", ret, WHY(why));
	ck_assert_str_eq(t.hub_path, "/p");
	ck_assert_uint_eq(t.peer_id, 1);
}
END_TEST

/* r[shm.topology.peer-id] r[shm.topology.max-guests] */
START_TEST(test_peer_id_good)
{
	static const char *good[] = { "1", "9", "10", "17", "99", "100", "254", "255" };
	static const unsigned want[] = { 1, 9, 10, 17, 99, 100, 254, 255 };
	char arg[64];
	struct hp_ticket t;
	const char *why;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *argv[] = { "guest", "--hub-path=/p", arg, dfd_arg, NULL };

		snprintf(arg, sizeof(arg), "--peer-id=%s", good[i]);
		ret = parse(count_args(argv), argv, &t, &why);
		ck_assert_msg(ret == 0, "%s: %d %s", good[i], ret, WHY(why));
		ck_assert_msg(t.peer_id == want[i], "%s: %u", good[i], t.peer_id);
	}
}
END_TEST

/* r[shm.topology.peer-id]: strictly decimal 1..255. */
START_TEST(test_peer_id_bad)
{
	static char *bad[] = { "0", "256", "300", "12x", "", "+3", "-1",
	    "01", "007", " 3", "3 ", "0x10", "1e2", "3.0",
	    "99999999999999999999999", "4294967297" };
	char arg[64];
	struct hp_ticket t;
	const char *why;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "guest", "--hub-path=/p", arg, dfd_arg, NULL };
		char *argv2[] = { "guest", "--hub-path=/p", "--peer-id",
		    bad[i], dfd_arg, NULL };

		snprintf(arg, sizeof(arg), "--peer-id=%s", bad[i]);
		ret = parse(count_args(argv), argv, &t, &why);
		ck_assert_msg(ret == -EINVAL && why != NULL, "\"%s\": %d", bad[i], ret);
		ck_assert_msg(strstr(why, "--peer-id") != NULL, "\"%s\": %s", bad[i], why);
		ck_assert_msg(t.peer_id == 777 && t.doorbell_fd == -77 &&
		    strcmp(t.hub_path, "sentinel") == 0, "\"%s\": ticket changed", bad[i]);
		ret = parse(count_args(argv2), argv2, &t, &why);
		ck_assert_msg(ret == -EINVAL && why != NULL, "separate \"%s\": %d",
		    bad[i], ret);
	}
}
END_TEST

/* r[shm.spawn.fd-inheritance]: a decimal fd that is open. */
START_TEST(test_doorbell_fd_bad)
{
	static const char *bad[] = { "-1", "", "x", "3x", "+3", "03",
	    "2147483648", "99999999999" };
	char arg[64], closed[16];
	struct hp_ticket t;
	const char *why;
	size_t i;
	int ret, fd;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "guest", "--hub-path=/p", "--peer-id=2", arg, NULL };

		snprintf(arg, sizeof(arg), "--doorbell-fd=%s", bad[i]);
		ret = parse(count_args(argv), argv, &t, &why);
		ck_assert_msg(ret == -EINVAL && why != NULL, "\"%s\": %d", bad[i], ret);
		ck_assert_msg(strstr(why, "--doorbell-fd") != NULL, "\"%s\": %s",
		    bad[i], why);
		ck_assert_msg(t.peer_id == 777, "\"%s\": ticket changed", bad[i]);
	}

	/* A well-formed number naming a closed fd. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(closed, sizeof(closed), "%d", fd);
	{
		char *argv[] = { "guest", "--hub-path=/p", "--peer-id=2",
		    "--doorbell-fd", closed, NULL };

		ret = parse(count_args(argv), argv, &t, &why);
		ck_assert_msg(ret == -EINVAL && why != NULL, "closed fd %d: %d", fd, ret);
		ck_assert_msg(strstr(why, "not open") != NULL, "closed fd: %s", why);
	}
}
END_TEST

/* fd 0 is a valid number: accepted exactly when it is open. */
START_TEST(test_doorbell_fd_zero)
{
	char *argv[] = { "guest", "--hub-path=/p", "--peer-id=2",
	    "--doorbell-fd=0", NULL };
	struct hp_ticket t;
	const char *why;
	int open0 = fcntl(0, F_GETFD) >= 0;
	int ret = parse(count_args(argv), argv, &t, &why);

	if (open0) {
		ck_assert_msg(ret == 0, "fd 0: %d %s", ret, WHY(why));
		ck_assert_int_eq(t.doorbell_fd, 0);
	} else {
		ck_assert_msg(ret == -EINVAL && strstr(WHY(why), "not open"),
		    "fd 0 closed: %d %s", ret, WHY(why));
	}
}
END_TEST

/* r[shm.spawn.ticket]: every piece is required. */
START_TEST(test_missing_pieces)
{
	char *none[] = { "guest", NULL };
	char *no_path[] = { "guest", "--peer-id=2", dfd_arg, NULL };
	char *no_peer[] = { "guest", "--hub-path=/p", dfd_arg, NULL };
	char *no_fd[] = { "guest", "--hub-path=/p", "--peer-id=2", NULL };
	char *after_dashes[] = { "guest", "--peer-id=2", dfd_arg, "--",
	    "--hub-path=/p", NULL };
	const struct refusal refusals[] = {
		{ "no path", no_path, "--hub-path" },
		{ "no peer", no_peer, "--peer-id" },
		{ "no fd", no_fd, "--doorbell-fd" },
		{ "after --", after_dashes, "--hub-path" },
	};
	struct hp_ticket t;
	const char *why;
	int ret;

	ret = parse(count_args(none), none, &t, &why);
	ck_assert_msg(ret == -EINVAL && why != NULL, "none: %d", ret);
	ck_assert_msg(strstr(why, "--hub-path") && strstr(why, "hubd"), "none: %s", why);
	ret = parse(0, none, &t, &why);
	ck_assert_msg(ret == -EINVAL && why != NULL, "argc 0: %d", ret);
	expect_refusals(refusals, sizeof(refusals) / sizeof(refusals[0]));
}
END_TEST

/* A value missing at the end, an empty path, a piece given twice. */
START_TEST(test_malformed)
{
	char *no_value[] = { "guest", "--hub-path=/p", dfd_arg, "--peer-id", NULL };
	char *no_path_value[] = { "guest", "--peer-id=1", dfd_arg, "--hub-path", NULL };
	char *no_fd_value[] = { "guest", "--peer-id=1", "--hub-path=/p",
	    "--doorbell-fd", NULL };
	char *empty_path[] = { "guest", "--hub-path=", "--peer-id=1", dfd_arg, NULL };
	char *twice[] = { "guest", "--hub-path=/p", "--peer-id=1", "--peer-id=2",
	    dfd_arg, NULL };
	char *twice_path[] = { "guest", "--hub-path=/p", "--hub-path", "/q",
	    "--peer-id=1", dfd_arg, NULL };
	const struct refusal refusals[] = {
		{ "no value", no_value, "--peer-id" },
		{ "no path value", no_path_value, "--hub-path" },
		{ "no fd value", no_fd_value, "--doorbell-fd" },
		{ "empty path", empty_path, "--hub-path" },
		{ "twice", twice, "twice" },
		{ "twice path", twice_path, "twice" },
	};
	struct hp_ticket t;

	expect_refusals(refusals, sizeof(refusals) / sizeof(refusals[0]));
	/* why may be NULL. */
	ck_assert_int_eq(hp_ticket_parse(count_args(twice), twice, &t, NULL), -EINVAL);
}
END_TEST

/* A guest started by hand: --hub-ticket=PATH:SECRET alone (the rest
 * comes from hubd); with the spawn ticket's options, twice, or without
 * its secret it is refused. */
START_TEST(test_hub_ticket)
{
	char *alone[] = { "guest", "-v", "--hub-ticket=/run/h.sock.g.ticket:00ff", NULL };
	char *split[] = { "guest", "--hub-ticket", "/a:b:c", NULL };
	char *mixed[] = { "guest", "--hub-ticket=/a:b", "--peer-id=3", NULL };
	char *twice[] = { "guest", "--hub-ticket=/a:b", "--hub-ticket=/a:b", NULL };
	char *bare[] = { "guest", "--hub-ticket=/a", NULL };
	char *none[] = { "guest", "--hub-ticket", NULL };
	const struct refusal bad[] = {
		{ "with --peer-id", mixed, "goes without" },
		{ "twice", twice, "twice" },
		{ "no secret", bare, "PATH:SECRET" },
		{ "no value", none, "PATH:SECRET" },
	};
	struct hp_ticket t;
	const char *why;

	ck_assert_int_eq(parse(count_args(alone), alone, &t, &why), 0);
	ck_assert_str_eq(t.hand, "/run/h.sock.g.ticket:00ff");
	ck_assert_int_eq(t.fds[0], -1);
	ck_assert_int_eq(parse(count_args(split), split, &t, &why), 0);
	ck_assert_str_eq(t.hand, "/a:b:c");
	/* a secret that is not hubctl ticket's: refused before connecting */
	ck_assert_int_eq(hp_ticket_fetch(&t, &why), -EINVAL);
	ck_assert_msg(strstr(why, "secret") != NULL, "%s", why);
	expect_refusals(bad, sizeof(bad) / sizeof(bad[0]));
}
END_TEST

/* --hub-bells=R,W (HP_FEAT_BELLS): two open descriptors, distinct and
 * not the doorbell; without it, none. */
START_TEST(test_hub_bells)
{
	int r = open("/dev/null", O_RDONLY | O_CLOEXEC), w = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char good[48], same[48], bell[48], shut[48];
	char *bad[] = { "--hub-bells=", "--hub-bells=3", "--hub-bells=x,4",
			      "--hub-bells=4,", "--hub-bells=-1,4", "--hub-bells=99999999999,4",
			      same, bell, shut };
	struct hp_ticket t;
	const char *why;

	ck_assert_int_ge(r, 0);
	ck_assert_int_ge(w, 0);
	snprintf(good, sizeof(good), "--hub-bells=%d,%d", r, w);
	snprintf(same, sizeof(same), "--hub-bells=%d,%d", r, r);
	snprintf(bell, sizeof(bell), "--hub-bells=%d,%d", r, dfd);
	snprintf(shut, sizeof(shut), "--hub-bells=%d,%d", r, 1000);	/* not open */
	char *ok[] = { "guest", "--hub-path=/x", "--peer-id=2", dfd_arg, good, NULL };

	ck_assert_int_eq(parse(count_args(ok), ok, &t, &why), 0);
	ck_assert_int_eq(t.bells[0], r);
	ck_assert_int_eq(t.bells[1], w);
	char *none[] = { "guest", "--hub-path=/x", "--peer-id=2", dfd_arg, NULL };

	ck_assert_int_eq(parse(count_args(none), none, &t, &why), 0);
	ck_assert_int_eq(t.bells[0], -1);
	ck_assert_int_eq(t.bells[1], -1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "guest", "--hub-path=/x", "--peer-id=2", dfd_arg,
				 bad[i], NULL };

		ck_assert_msg(parse(count_args(argv), argv, &t, &why) == -EINVAL,
			      "%s accepted", bad[i]);
		ck_assert_msg(why != NULL && strstr(why, "--hub-bells") != NULL,
			      "%s: %s", bad[i], WHY(why));
	}
	char *twice[] = { "guest", "--hub-path=/x", "--peer-id=2", dfd_arg, good, good, NULL };

	ck_assert_int_eq(parse(count_args(twice), twice, &t, &why), -EINVAL);
	ck_assert_str_eq(why, "--hub-bells is given twice");
	char *hand[] = { "guest", "--hub-ticket=/s:00", good, NULL };

	ck_assert_int_eq(parse(count_args(hand), hand, &t, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(WHY(why), "--hub-bells"));
	close(r);
	close(w);
}
END_TEST

Suite *suite_ticket(void);

Suite *
suite_ticket(void)
{
	Suite *s = suite_create("ticket");
	TCase *tc = tcase_create("parse");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_equals_form);
	tcase_add_test(tc, test_separate_form);
	tcase_add_test(tc, test_plugin_arguments_ignored);
	tcase_add_test(tc, test_peer_id_good);
	tcase_add_test(tc, test_peer_id_bad);
	tcase_add_test(tc, test_doorbell_fd_bad);
	tcase_add_test(tc, test_doorbell_fd_zero);
	tcase_add_test(tc, test_missing_pieces);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_hub_ticket);
	tcase_add_test(tc, test_hub_bells);
	suite_add_tcase(s, tc);
	return s;
}
