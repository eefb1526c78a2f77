/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubd.conf parsing: values, defaults, and every malformed shape reported
 * with file:line while nothing is half-loaded. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/config.h"
#include "proto/conffile.h"

static char conf_path[64];
static char *errtext;
static size_t errlen;

static void
write_conf(const char *text, size_t len)
{
	int fd;

	strcpy(conf_path, "/tmp/hub-config-test-XXXXXX");
	fd = mkstemp(conf_path);
	ck_assert_msg(fd >= 0, "mkstemp");
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

/* Loads len bytes of text (NULs too); returns config_load's result with
 * the messages in errtext. */
static int
load_bytes(const char *text, size_t len, struct hub_conf *c)
{
	FILE *errs;
	int rc;

	write_conf(text, len);
	free(errtext);
	errtext = NULL;
	errs = open_memstream(&errtext, &errlen);
	rc = config_load(conf_path, c, errs);
	fclose(errs);
	unlink(conf_path);
	return rc;
}

static int
load(const char *text, struct hub_conf *c)
{
	return load_bytes(text, strlen(text), c);
}

static void
teardown(void)
{
	if (conf_path[0] != '\0')
		unlink(conf_path);
	free(errtext);
	errtext = NULL;
}

/* Expects a failure whose messages contain ":LINE: " and want. */
static void
expect_error(const char *text, int line, const char *want)
{
	struct hub_conf c;
	char at[32];

	ck_assert_msg(load(text, &c) == -1, "config accepted:\n%s", text);
	snprintf(at, sizeof(at), ":%d: ", line);
	ck_assert_msg(strstr(errtext, at) != NULL && strstr(errtext, want) != NULL,
		      "want line %d '%s', got: %s", line, want, errtext);
	ck_assert_msg(c.guests == NULL && c.nguests == 0 && c.control_path == NULL,
		      "a failed load left state behind");
}

START_TEST(test_values_and_defaults)
{
	struct hub_conf c;
	int rc = load("# comment\n"
		      "[hub]\n"
		      "control = /tmp/hub-x.sock\n"
		      "ring_size = 64\n"
		      "slot_size = 8K\n"
		      "heartbeat_interval = 250ms\n"
		      "\n"
		      "[guest echo]\n"
		      "exec = /bin/true\n"
		      "args = -v \"two words\" \"q\\\"uote\"\n"
		      "restart = always\n"
		      "[guest kv.2]\n"
		      "exec = bin/kv\n", &c);

	ck_assert_msg(rc == 0, "load: %s", errtext);
	ck_assert_str_eq(c.control_path, "/tmp/hub-x.sock");
	ck_assert_uint_eq(c.params.ring_size, 64);
	ck_assert_uint_eq(c.params.slot_size, 8192);
	/* max_payload_size follows slot_size unless given */
	ck_assert_uint_eq(c.params.max_payload_size, 8192 - 4);
	ck_assert_uint_eq(c.params.heartbeat_interval, 250000000ull);
	ck_assert_uint_eq(c.nguests, 2);
	ck_assert_str_eq(c.guests[0].name, "echo");
	ck_assert_str_eq(c.guests[0].argv[0], "/bin/true");
	ck_assert_str_eq(c.guests[0].argv[1], "-v");
	ck_assert_str_eq(c.guests[0].argv[2], "two words");
	ck_assert_str_eq(c.guests[0].argv[3], "q\"uote");
	ck_assert_ptr_null(c.guests[0].argv[4]);
	ck_assert_int_eq(c.guests[0].restart, RESTART_ALWAYS);
	ck_assert_int_eq(c.guests[1].restart, RESTART_ON_FAILURE);
	/* relative exec: relative to the config file's directory */
	ck_assert_str_eq(c.guests[1].exec, "/tmp/bin/kv");
	ck_assert_int_eq(c.guests[1].line, 12);
	config_free(&c);
}
END_TEST

/* Each key lands in its own field (the tables name keys, not positions). */
START_TEST(test_every_key_lands)
{
	struct hub_conf c;
	const struct config_guest *g;
	int rc = load("[hub]\n"
		      "control = /tmp/hub-k.sock\n"
		      "max_guests = 3\n"
		      "ring_size = 32\n"
		      "slot_size = 4K\n"
		      "slots_per_guest = 5\n"
		      "max_channels = 6\n"
		      "initial_credit = 7K\n"
		      "max_payload_size = 1000\n"
		      "heartbeat_interval = 10ms\n"
		      "attach_timeout = 9s\n"
		      "stop_grace = 10ms\n"
		      "group = root\n"
		      "goodbye_grace = 11ms\n"
		      "client_timeout = 12s\n"
		      "calls_in_flight = 20000\n"
		      "[guest g]\n"
		      "exec = /bin/true\n"
		      "args = a b\n"
		      "restart = never\n"
		      "max_deaths = 13\n"
		      "death_window = 14s\n"
		      "backoff_min = 15ms\n"
		      "backoff_max = 16s\n"
		      "user = root\n"
		      "group = root\n"
		      "limit_memory = 17M\n"
		      "limit_files = 18\n"
		      "processors = 4\n", &c);

	ck_assert_msg(rc == 0, "load: %s", errtext);
	ck_assert_str_eq(c.control_path, "/tmp/hub-k.sock");
	ck_assert_uint_eq(c.params.max_guests, 3);
	ck_assert_uint_eq(c.params.ring_size, 32);
	ck_assert_uint_eq(c.params.slot_size, 4096);
	ck_assert_uint_eq(c.params.slots_per_guest, 5);
	ck_assert_uint_eq(c.params.max_channels, 6);
	ck_assert_uint_eq(c.params.initial_credit, 7 * 1024);
	ck_assert_uint_eq(c.params.max_payload_size, 1000);	/* given: not slot_size - 4 */
	ck_assert_uint_eq(c.params.heartbeat_interval, 10000000ull);
	ck_assert_uint_eq(c.attach_timeout_ns, 9000000000ull);
	ck_assert_uint_eq(c.stop_grace_ns, 10000000ull);
	ck_assert_int_eq(c.gid, 0);
	ck_assert_uint_eq(c.goodbye_grace_ns, 11000000ull);
	ck_assert_uint_eq(c.client_timeout_ns, 12000000000ull);
	ck_assert_uint_eq(c.calls_in_flight, 20000);
	ck_assert_uint_eq(c.nguests, 1);
	g = &c.guests[0];
	ck_assert_str_eq(g->exec, "/bin/true");
	ck_assert_str_eq(g->argv[1], "a");
	ck_assert_str_eq(g->argv[2], "b");
	ck_assert_ptr_null(g->argv[3]);
	ck_assert_int_eq(g->restart, RESTART_NEVER);
	ck_assert_uint_eq(g->max_deaths, 13);
	ck_assert_uint_eq(g->death_window_ns, 14000000000ull);
	ck_assert_uint_eq(g->backoff_min_ns, 15000000ull);
	ck_assert_uint_eq(g->backoff_max_ns, 16000000000ull);
	ck_assert_int_eq(g->uid, 0);
	ck_assert_int_eq(g->gid, 0);
	ck_assert_uint_eq(g->limit_memory, 17ull << 20);
	ck_assert_uint_eq(g->limit_files, 18);
	ck_assert_uint_eq(g->processors, 4);
	config_free(&c);
}
END_TEST

/* Byte sizes: plain numbers, or with a binary unit (expand_number), and
 * nothing that only looks like one. */
START_TEST(test_sizes)
{
	static const struct { const char *text; uint64_t bytes; } good[] = {
		{ "1024K", 1 << 20 }, { "2048k", 2 << 20 }, { "1M", 1 << 20 },
		{ "2m", 2 << 20 }, { "1G", 1ull << 30 }, { "3T", 3ull << 40 },
		{ "1048576", 1 << 20 }, { "0002M", 2 << 20 }, { "01048576", 1 << 20 },
		{ "15E", 15ull << 60 },
	};
	static const char *const bad[] = {
		"1e3", "5Kxyz", "5KB", "0x100000", "-1", "+2M", "2 M", "1.5M", "M",
		"16E", "99999999999999999999999", "18446744073709551616",
	};
	struct hub_conf c;
	char text[256];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[hub]\ninitial_credit = 1M\n"
			 "[guest g]\nexec = /bin/true\nlimit_memory = %s\n", good[i].text);
		ck_assert_msg(load(text, &c) == 0, "%s: %s", good[i].text, errtext);
		ck_assert_msg(c.guests[0].limit_memory == good[i].bytes, "%s: %llu, want %llu",
			      good[i].text, (unsigned long long)c.guests[0].limit_memory,
			      (unsigned long long)good[i].bytes);
		ck_assert_uint_eq(c.params.initial_credit, 1 << 20);
		config_free(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[guest g]\nexec = /bin/true\n"
			 "limit_memory = %s\n", bad[i]);
		expect_error(text, 3, "limit_memory: '");
	}
	/* bounds: the key's own, said in the message */
	expect_error("[guest g]\nexec = /bin/true\nlimit_memory = 1023K\n", 3,
		     "limit_memory: '1023K' is not a size of 1.0M or more");
	expect_error("[hub]\nslot_size = 4G\n", 2,
		     "slot_size: '4G' is not a size or number from 64 to 4294967295");
	expect_error("[hub]\ninitial_credit = 0K\n", 2, "initial_credit: '0K'");
	/* plain numbers as before */
	ck_assert_msg(load("[hub]\nslot_size = 4096\n", &c) == 0, "%s", errtext);
	ck_assert_uint_eq(c.params.slot_size, 4096);
	config_free(&c);
}
END_TEST

START_TEST(test_empty_file_is_all_defaults)
{
	struct hub_conf c;
	struct hp_params d;

	ck_assert_msg(load("", &c) == 0, "load: %s", errtext);
	hp_params_default(&d);
	ck_assert_uint_eq(c.params.max_guests, d.max_guests);
	ck_assert_uint_eq(c.params.ring_size, d.ring_size);
	ck_assert_uint_eq(c.nguests, 0);
	ck_assert_str_eq(c.control_path, "/run/hub/hubd.sock");
	ck_assert_uint_eq(c.calls_in_flight, 1024);
	config_free(&c);
}
END_TEST

START_TEST(test_unknown_key)
{ expect_error("[hub]\nring_size = 8\nrnig_size = 8\n", 3, "unknown key 'rnig_size'"); }
END_TEST

START_TEST(test_duplicate_key)
{ expect_error("[hub]\nring_size = 8\nring_size = 16\n", 3, "duplicate key"); }
END_TEST

START_TEST(test_bad_numbers)
{
	expect_error("[hub]\nmax_guests = 256\n", 2, "max_guests");
	expect_error("[hub]\nmax_guests = -1\n", 2, "max_guests");
	expect_error("[hub]\nslots_per_guest = 12x\n", 2, "slots_per_guest");
	expect_error("[hub]\nslot_size = 99999999999999999999999\n", 2, "slot_size");
	expect_error("[hub]\nmax_guests =\n", 2, "max_guests");
	expect_error("[hub]\nheartbeat_interval = 10\n", 2, "duration");
	expect_error("[hub]\nheartbeat_interval = 5 s\n", 2, "duration");
	expect_error("[hub]\nheartbeat_interval = 9ms\n", 2,
		     "heartbeat_interval: '9ms' is shorter than 10ms (off or 0 turns heartbeats off)");
	expect_error("[guest a]\nexec = /bin/true\nheartbeat = 1us\n", 3,
		     "heartbeat: '1us' is shorter than 10ms");
	expect_error("[hub]\ncalls_in_flight = 0\n", 2, "calls_in_flight");
	expect_error("[hub]\ncalls_in_flight = 1000001\n", 2, "calls_in_flight");
}
END_TEST

/* A duration is at most a year: twice one, or one added to the clock,
 * overflows nothing (a heartbeat of 2^63 ns was a guest killed as hung
 * at once). block_timeout is milliseconds in an int, at most 2^31 - 1. */
START_TEST(test_durations_capped)
{
	struct hub_conf c;

	expect_error("[hub]\nheartbeat_interval = 9223372036854775809ns\n", 2,
		     "heartbeat_interval: '9223372036854775809ns' is longer than 525600min");
	expect_error("[guest a]\nexec = /bin/true\n\nheartbeat = 9223372036854775809ns\n", 4,
		     "heartbeat: '9223372036854775809ns' is longer than 525600min");
	expect_error("[hub]\nheartbeat_interval = 31536000000000001ns\n", 2, "longer than");
	expect_error("[hub]\nstop_grace = 525601min\n", 2, "stop_grace: '525601min' is longer");
	expect_error("[guest a]\nexec = /bin/true\nbackoff_max = 99999999min\n", 3,
		     "backoff_max: ");
	expect_error("[topic t.x]\nblock_timeout = 2147483648ms\n", 2,
		     "block_timeout: '2147483648ms' is longer than 2147483647ms");
	ck_assert_msg(load("[hub]\nheartbeat_interval = 525600min\nlane_ban = 31536000s\n"
			   "[guest a]\nexec = /bin/true\nheartbeat = 31536000000000000ns\n"
			   "[topic t.x]\nblock_timeout = 2147483647ms\n", &c) == 0,
		      "load: %s", errtext);
	ck_assert_uint_eq(c.params.heartbeat_interval, 31536000000000000ull);
	ck_assert_uint_eq(c.lane_ban_ns, 31536000000000000ull);
	ck_assert_uint_eq(c.guests[0].heartbeat_ns, 31536000000000000ull);
	ck_assert_uint_eq(c.topics[0].block_ns, 2147483647000000ull);
	config_free(&c);
	/* the least heartbeat, and off for the hub as for a guest */
	ck_assert_msg(load("[hub]\nheartbeat_interval = off\n"
			   "[guest a]\nexec = /bin/true\nheartbeat = 10ms\n", &c) == 0,
		      "load: %s", errtext);
	ck_assert_uint_eq(c.params.heartbeat_interval, 0);
	ck_assert_uint_eq(c.guests[0].heartbeat_ns, 10000000ull);
	config_free(&c);
}
END_TEST

/* 0 would kill every guest before it attaches */
START_TEST(test_zero_timeouts_refused)
{
	expect_error("[hub]\nattach_timeout = 0\n", 2, "attach_timeout: must be more than 0");
	expect_error("[hub]\n\nattach_timeout = 0ms\n", 3, "attach_timeout: must be more than 0");
}
END_TEST

START_TEST(test_geometry_checked)
{
	/* r[shm.ring.capacity] needs a power-of-two ring: said at its line */
	expect_error("\n[hub]\nring_size = 100\n", 3, "ring_size: 100 is not a power of two");
	/* checked with the other terms, but said at its own line */
	expect_error("[hub]\nslot_size = 100\n", 2, "slot_size must be a multiple of 64");
}
END_TEST

START_TEST(test_sections)
{
	expect_error("ring_size = 8\n", 1, "outside of any section");
	expect_error("[hub]\n[hub]\n", 2, "duplicate [hub]");
	expect_error("[hubs]\n", 1, "unknown section");
	expect_error("[guest]\n", 1, "unknown section");
	expect_error("[guest bad/name]\nexec=/bin/true\n", 1, "bad guest name");
	expect_error("[guest a]\nexec=/bin/true\n[guest a]\nexec=/bin/true\n", 3,
		     "duplicate guest 'a'");
	expect_error("[hub\n", 1, "without ']'");
	expect_error("[hub]\njust words\n", 2, "expected 'key = value'");
	/* after the ']': a comment, else an error (not taken silently) */
	expect_error("[hub] garbage\n", 1, "text after the section's ']'");
	expect_error("[guest a]]]\nexec = /bin/true\n", 1, "text after the section's ']'");
	expect_error("[pool]\nclasses = 1K x 256,,16K x 64\n", 2, "an empty class between commas");
	expect_error("[pool]\nclasses = 1K x 256,\n", 2, "an empty class between commas");
	expect_error("[pool]\nclasses = , 1K x 256\n", 2, "an empty class between commas");
}
END_TEST

/* Forms a file takes that are no problem: a byte order mark, a comment
 * after a section's ']'. */
START_TEST(test_bom_and_comments)
{
	struct hub_conf c;

	ck_assert_msg(load("\xEF\xBB\xBF[hub] # the hub\nring_size = 64\n[guest a] ; one\n"
			   "exec = /bin/true\n", &c) == 0, "load: %s", errtext);
	ck_assert_uint_eq(c.params.ring_size, 64);
	ck_assert_uint_eq(c.nguests, 1);
	config_free(&c);
}
END_TEST

/* More guests than the hub takes: said once, where it begins. */
START_TEST(test_too_many_guests_said_once)
{
	size_t cap = 300 * 48, n = 0;
	char *text = malloc(cap);

	for (int i = 0; i < 300; i++)
		n += (size_t)snprintf(text + n, cap - n, "[guest g%d]\nexec = /bin/true\n", i);
	expect_error(text, 2 * 255 + 1, "more than 255 guests: this one and those after it");
	ck_assert_msg(strstr(strstr(errtext, "more than 255") + 1, "more than 255") == NULL,
		      "said more than once: %s", errtext);
	free(text);
}
END_TEST

/* r[shm.varslot.classes]: the shared pool's size classes from [pool] */
START_TEST(test_pool_section)
{
	struct hub_conf c;

	ck_assert_msg(load("[pool]\nclasses = 4K x 16, 1M x 2 ,16M x1\nmax_extents = 3\n"
			   "sweep_interval = 100ms\nstuck_after = 0\nrelease_after = 5min\n", &c) == 0,
		      "load: %s",
		      errtext);
	ck_assert_uint_eq(c.params.var.nclasses, 3);
	ck_assert_uint_eq(c.params.var.cls[0].slot_size, 4096);
	ck_assert_uint_eq(c.params.var.cls[0].count, 16);
	ck_assert_uint_eq(c.params.var.cls[1].slot_size, 1u << 20);
	ck_assert_uint_eq(c.params.var.cls[2].slot_size, 16u << 20);
	ck_assert_uint_eq(c.params.var.cls[2].count, 1);
	ck_assert_uint_eq(c.params.var.max_extents, 3);
	ck_assert_uint_eq(c.pool_sweep_ns, 100000000);
	ck_assert_uint_eq(c.pool_stuck_ns, 0);
	ck_assert_uint_eq(c.pool_release_ns, 300ull * 1000000000);
	config_free(&c);
	ck_assert_msg(load("[pool]\nclasses = none\n", &c) == 0, "load: %s", errtext);
	ck_assert_uint_eq(c.params.var.nclasses, 0);
	config_free(&c);
	/* the defaults: five classes, a 250 ms sweep, 30 s before stuck */
	ck_assert_msg(load("", &c) == 0, "load: %s", errtext);
	ck_assert_uint_eq(c.params.var.nclasses, 5);
	ck_assert_uint_eq(c.pool_sweep_ns, 250000000);
	ck_assert_uint_eq(c.pool_stuck_ns, 30000000000ull);
	config_free(&c);
	expect_error("[pool]\nclasses = 4K x 16, 1K x 2\n", 1, "smallest first");
	expect_error("[pool]\nclasses = 100 x 3\n", 1, "multiple of 64");
	expect_error("[pool]\nclasses = 4K x 0\n", 2, "out of range");
	expect_error("[pool]\nclasses = 4Kx\n", 2, "not SIZE x COUNT");
	expect_error("[pool]\nclasses = 4K x 16 x 2\n", 2, "not SIZE x COUNT");
	expect_error("[pool]\nclasses = ,\n", 2, "an empty class between commas");
	expect_error("[pool]\nclasses = 1Kx1,2Kx1,3Kx1,4Kx1,5Kx1,6Kx1,7Kx1,8Kx1,9Kx1\n", 2,
		     "more than 8 classes");
	expect_error("[pool]\nmax_extents = 17\n", 2, "max_extents");
	expect_error("[pool]\nsweep_interval = 0\n", 2, "sweep_interval: must be more than 0");
	expect_error("[pool]\nsize = 1\n", 2, "unknown key 'size' in [pool]");
	expect_error("[pool]\n[pool]\n", 2, "duplicate [pool]");
	/* a guest kept out of it */
	ck_assert_msg(load("[guest a]\nexec = /bin/true\n[guest b]\nexec = /bin/true\n"
			   "shared_pool = no\n", &c) == 0, "load: %s", errtext);
	ck_assert_int_eq(c.guests[0].shared_pool, 1);
	ck_assert_int_eq(c.guests[1].shared_pool, 0);
	config_free(&c);
	/* the system call filter, on unless said otherwise */
	ck_assert_msg(load("[guest a]\nexec = /bin/true\n[guest b]\nexec = /bin/true\n"
			   "seccomp = no\n", &c) == 0, "load: %s", errtext);
	ck_assert_int_eq(c.guests[0].seccomp, 1);
	ck_assert_int_eq(c.guests[1].seccomp, 0);
	config_free(&c);
	expect_error("[guest a]\nexec = /bin/true\nshared_pool = maybe\n", 3, "not yes or no");
}
END_TEST

START_TEST(test_guest_keys)
{
	struct hub_conf c;

	expect_error("[guest a]\nargs = x\n", 1, "has no exec");
	expect_error("[guest a]\nexec = /bin/true\nrestart = sometimes\n", 3, "restart");
	expect_error("[guest a]\nexec = /bin/true\nargs = \"open\n", 3, "unterminated quote");
	/* the usual cause said: a comment cut the quoted word */
	expect_error("[guest a]\nexec = /bin/true\nargs = \"a #b\"\n", 3,
		     "unterminated quote (a '#' or ';' after a blank starts a comment");
	expect_error("[guest a]\nexec = /bin/true\nbackoff_min = 2s\nbackoff_max = 1s\n",
		     4, "backoff_min (2.0 s) is above backoff_max (1.0 s)");
	expect_error("[hub]\nmax_guests = 1\n[guest a]\nexec=/bin/true\n[guest b]\nexec=/bin/true\n",
		     1, "2 guests but max_guests is 1");
	/* its memory is handed to it as an fd: no [hub] group needed */
	ck_assert_msg(load("[guest a]\nexec = /bin/true\nuser = nobody\n", &c) == 0, "%s",
		      errtext);
	config_free(&c);
	expect_error("[hub]\nsegment = /dev/shm/x\n", 2, "segment: no longer a key");
	expect_error("[guest a]\nexec = /bin/true\nzone = a/b\n", 3, "zone: 'a/b' is not a name");
	expect_error("[guest a]\nexec = /bin/true\nuser = no-such-user-here\n", 3, "no user");
	expect_error("[hub]\ngroup = no-such-group-here\n", 2, "no group");
	expect_error("[guest a]\nexec = /bin/true\nlimit_memory = 10\n", 3, "limit_memory");
}
END_TEST

/* [hub] guest_uids: a range of uids (by default above systemd's and
 * Debian's), or no; never 0, hubd's own uid, LAST below FIRST or past
 * 2^31 - 1, nor fewer uids than guests without user =. A guest without
 * user = carries the range, so that a reload changing it restarts it. */
START_TEST(test_guest_uids)
{
	struct hub_conf c, d;
	int status;
	pid_t pid;

	ck_assert_msg(load("[guest a]\nexec = /bin/true\n", &c) == 0, "load: %s", errtext);
	ck_assert_uint_eq(c.guest_uids.first, 1879113728u);
	ck_assert_uint_eq(c.guest_uids.last, 1879179263u);
	ck_assert_uint_eq(c.guests[0].uids.first, 1879113728u);
	ck_assert_uint_eq(c.guests[0].uids.last, 1879179263u);
	ck_assert_msg(load("[hub]\nguest_uids = 100000-100001\n[guest a]\nexec = /bin/true\n"
			   "[guest b]\nexec = /bin/true\n", &d) == 0, "load: %s", errtext);
	ck_assert_uint_eq(d.guests[1].uids.first, 100000);
	ck_assert_uint_eq(d.guests[1].uids.last, 100001);
	ck_assert_msg(!config_guest_equal(&c.guests[0], &d.guests[0]),
		      "a changed range is a changed guest");
	config_free(&d);
	ck_assert_msg(load("[hub]\nguest_uids = no\n[guest a]\nexec = /bin/true\n", &d) == 0,
		      "load: %s", errtext);
	ck_assert_uint_eq(d.guest_uids.first, 0);
	ck_assert_uint_eq(d.guests[0].uids.first, 0);
	config_free(&d);
	config_free(&c);
	/* user = NAME: no uid of its own, and a range as small as it likes */
	ck_assert_msg(load("[hub]\ngroup = root\nguest_uids = 7-7\n[guest a]\nexec = /bin/true\n"
			   "user = root\n[guest b]\nexec = /bin/true\n", &c) == 0,
		      "load: %s", errtext);
	ck_assert_uint_eq(c.guests[0].uids.first, 0);
	ck_assert_uint_eq(c.guests[1].uids.first, 7);
	config_free(&c);
	expect_error("[hub]\nguest_uids = 200-100\n", 2, "FIRST is above LAST");
	expect_error("[hub]\nguest_uids = 0-100\n", 2, "holds uid 0, root's");
	expect_error("[hub]\nguest_uids = 1-2147483648\n", 2, "uids from 1 to 2147483647");
	expect_error("[hub]\nguest_uids = 5-\n", 2, "uids from 1 to 2147483647");
	expect_error("[hub]\nguest_uids = yes\n", 2, "is neither FIRST-LAST");
	expect_error("[hub]\nguest_uids = 0x70010000-0x7001ffff\n", 2, "is neither FIRST-LAST");
	expect_error("[hub]\nguest_uids = 10-10\n[guest a]\nexec = /bin/true\n"
		     "[guest b]\nexec = /bin/true\n", 1, "1 uid(s) for 2 guests without user =");
	/* hubd's own uid: as root that is 0 (above); as another user, nobody */
	if (geteuid() != 0) {
		char text[96];

		snprintf(text, sizeof(text), "[hub]\nguest_uids = %u-%u\n", (unsigned)geteuid(),
			 (unsigned)geteuid());
		expect_error(text, 2, "holds hubd's own uid");
		return;
	}
	if ((pid = fork()) == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		_exit(load("[hub]\nguest_uids = 65000-66000\n", &c) == -1 &&
		      strstr(errtext, "holds hubd's own uid 65534") != NULL ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "as nobody: %d", status);
}
END_TEST

/* user = hubd's own user needs no [hub] group: the segment is its own */
START_TEST(test_user_root_without_group)
{
	struct hub_conf c;

	if (geteuid() != 0)
		return;
	ck_assert_msg(load("[guest a]\nexec = /bin/true\nuser = root\n", &c) == 0, "load: %s",
		      errtext);
	ck_assert_int_eq(c.guests[0].uid, 0);
	config_free(&c);
}
END_TEST

/* lanes = yes | no | NAME, ...: whom a guest allows a lane with; a
 * changed policy is a changed guest (a reload restarts it); lanes_per_guest
 * and lane_slots in their bounds; lane_ban a duration, 10 min by default. */
START_TEST(test_lanes)
{
	struct hub_conf c;
	struct config_guest *d;
	int rc = load("[hub]\nlanes_per_guest = 3\nlane_ban = 90s\nlane_slots = 256\n"
		      "[guest a]\nexec = /bin/true\nlanes = b , c-2\n"
		      "[guest b]\nexec = /bin/true\nlanes = no\n"
		      "[guest c]\nexec = /bin/true\n", &c);

	ck_assert_msg(rc == 0, "load: %s", errtext);
	ck_assert_uint_eq(c.lanes_per_guest, 3);
	ck_assert_uint_eq(c.lane_ban_ns, 90ull * 1000000000);
	ck_assert_uint_eq(c.lane_slots, 256);
	ck_assert(config_lanes_allow(&c.guests[0], "b"));
	ck_assert(config_lanes_allow(&c.guests[0], "c-2"));
	ck_assert(!config_lanes_allow(&c.guests[0], "c"));	/* whole names only */
	ck_assert(!config_lanes_allow(&c.guests[0], "b , c-2"));
	ck_assert(!config_lanes_allow(&c.guests[1], "a"));
	ck_assert(config_lanes_allow(&c.guests[2], "anyone"));	/* the default: yes */
	d = config_guest_dup(&c.guests[0]);
	ck_assert(config_guest_equal(d, &c.guests[0]));
	d->lanes = LANES_ANY;
	ck_assert(!config_guest_equal(d, &c.guests[0]));
	config_guest_free(d);
	config_free(&c);
	rc = load("[guest a]\nexec = /bin/true\n", &c);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(c.lanes_per_guest, 16);
	ck_assert_uint_eq(c.lane_ban_ns, 600ull * 1000000000);
	ck_assert_uint_eq(c.lane_slots, 32);
	config_free(&c);
	expect_error("[guest a]\nexec = /bin/true\nlanes = b,,c\n", 3, "lanes: '' is not");
	expect_error("[guest a]\nexec = /bin/true\nlanes = b c\n", 3, "lanes: 'b c' is not");
	expect_error("[guest a]\nexec = /bin/true\nlanes = maybe!\n", 3, "lanes: 'maybe!'");
	expect_error("[guest a]\nexec = /bin/true\nlanes = yes, b\n", 3,
		     "lanes: 'yes' stands alone");
	expect_error("[guest a]\nexec = /bin/true\nlanes = b,no\n", 3, "lanes: 'no' stands alone");
	expect_error("[hub]\nlanes_per_guest = 0\n", 2, "lanes_per_guest");
	expect_error("[hub]\nlanes_per_guest = 65\n", 2, "lanes_per_guest");
	expect_error("[hub]\nlane_ban = soon\n", 2, "lane_ban: 'soon' is not a duration");
	expect_error("[hub]\nlane_slots = 0\n", 2, "lane_slots");
	expect_error("[hub]\nlane_slots = 257\n", 2, "lane_slots");
}
END_TEST

/* provides = : its patterns as written, and what a guest may register:
 * its own NAME.* and what they cover. */
START_TEST(test_provides)
{
	static const struct { const char *method; int ok; } cases[] = {
		{ "a.b", 1 }, { "a.b.c", 1 }, { "a.", 0 }, { "a", 0 }, { "ab.c", 0 },
		{ "x.q", 1 }, { "x.q.r", 1 }, { "x.", 0 }, { "x", 0 }, { "xx.q", 0 },
		{ "y.z", 1 }, { "y.zz", 0 }, { "y.z.w", 0 }, { "w", 1 }, { "w.x", 0 },
		{ "hub.ping", 0 }, { "", 0 },
	};
	struct hub_conf c;
	struct config_guest *d;
	const struct config_guest *g;
	int rc = load("[guest a]\nexec = /bin/true\nprovides = x.*, y.z ,w\n"
		      "[guest b]\nexec = /bin/true\n"
		      "[guest c]\nexec = /bin/true\nprovides = w,y.z,x.*\n", &c);

	ck_assert_msg(rc != 0, "w is a's and c's: accepted");
	rc = load("[guest a]\nexec = /bin/true\nprovides = x.*, y.z ,w\n"
		  "[guest b]\nexec = /bin/true\n", &c);
	ck_assert_msg(rc == 0, "load: %s", errtext);
	g = &c.guests[0];
	ck_assert_str_eq(g->provides[0], "x.*");
	ck_assert_str_eq(g->provides[1], "y.z");
	ck_assert_str_eq(g->provides[2], "w");
	ck_assert_ptr_null(g->provides[3]);
	ck_assert_int_eq(g->provides_line, 3);
	ck_assert_ptr_null(c.guests[1].provides);	/* the default: none */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(config_guest_covers(g, cases[i].method) == cases[i].ok,
			      "a covers '%s': want %d", cases[i].method, cases[i].ok);
	ck_assert(config_guest_covers(&c.guests[1], "b.x"));
	ck_assert(!config_guest_covers(&c.guests[1], "x.q"));
	/* a copy has its own; the same names in another order are the same */
	d = config_guest_dup(g);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_ne(d->provides, g->provides);
	ck_assert(config_guest_equal(g, d));
	free(d->provides[0]);
	d->provides[0] = d->provides[2];
	d->provides[2] = strdup("x.*");
	ck_assert(config_guest_equal(g, d));
	free(d->provides[2]);
	d->provides[2] = strdup("x.y");
	ck_assert(!config_guest_equal(g, d));
	free(d->provides[2]);
	d->provides[2] = NULL;	/* one fewer */
	ck_assert(!config_guest_equal(g, d));
	ck_assert(!config_guest_equal(g, &c.guests[1]) && !config_guest_equal(&c.guests[1], g));
	config_guest_free(d);
	config_free(&c);
}
END_TEST

/* A pattern is a method name or PREFIX.*, nothing else. */
START_TEST(test_provides_bad_patterns)
{
	static const char *const bad[] = {
		"*", "a*", "*.a", "a.*.b", "a.b*", "a.**", ".*", ".a", "a.", "a..b", "a..*",
		"a b", "a/b", "a:b", "\"a.b\"", "\xc3\xa9.x",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.*",
	};
	static const char *const empty[] = { "x,,y", "x,", ",x", " , " };
	static const char *const good[] = {
		"a", "a.b", "a-b_c.D9", "a.*", "a.b.*", "a , b",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.*",
	};
	char text[256], want[128];
	struct hub_conf c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[guest g]\nexec = /bin/true\nprovides = %s\n", bad[i]);
		snprintf(want, sizeof(want), "provides: '%s' is neither a method name nor "
			 "PREFIX.*", bad[i]);
		expect_error(text, 3, want);
	}
	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		snprintf(text, sizeof(text), "[guest g]\nexec = /bin/true\nprovides = %s\n",
			 empty[i]);
		expect_error(text, 3, "provides: an empty pattern");
	}
	expect_error("[guest g]\nexec = /bin/true\nprovides =\n", 3, "an empty pattern");
	expect_error("[guest g]\nexec = /bin/true\nprovides = x.*\nprovides = y.*\n", 4,
		     "duplicate key 'provides'");
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[guest g]\nexec = /bin/true\nprovides = %s\n",
			 good[i]);
		ck_assert_msg(load(text, &c) == 0, "'%s': %s", good[i], errtext);
		config_free(&c);
	}
	/* every bad one of a list, on its line */
	ck_assert_int_eq(load("[guest g]\nexec = /bin/true\nprovides = a*, b.c, *, d.*\n", &c),
			 -1);
	ck_assert_msg(strstr(errtext, ":3: provides: 'a*'") != NULL &&
		      strstr(errtext, ":3: provides: '*'") != NULL &&
		      strstr(errtext, "'b.c'") == NULL && strstr(errtext, "'d.*'") == NULL,
		      "got: %s", errtext);
}
END_TEST

/* publishes: no pattern that takes in a hub.* topic (hubd's discovery
 * topics), which hubd would refuse at the guest's advertise; other
 * guests' names are anyone's to claim. */
START_TEST(test_publishes_not_hub_topics)
{
	static const char *const bad[] = { "hub.*", "hub.peers", "hub.x.*", "a.*, hub.guests" };
	static const char *const good[] = { "hu.*", "h.*", "hubx.*", "a.b, c.*", "x.hub" };
	char text[256], want[128];
	struct hub_conf c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *pat = strrchr(bad[i], ' ') != NULL ? strrchr(bad[i], ' ') + 1 : bad[i];

		snprintf(text, sizeof(text), "[guest g]\nexec = /bin/true\npublishes = %s\n",
			 bad[i]);
		snprintf(want, sizeof(want), "publishes: %s: hub.* topics are the host's", pat);
		expect_error(text, 3, want);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[guest g]\nexec = /bin/true\npublishes = %s\n",
			 good[i]);
		ck_assert_msg(load(text, &c) == 0, "'%s': %s", good[i], errtext);
		config_free(&c);
	}
}
END_TEST

/* No two guests may both be able to register a name, and none a name of
 * the host's: each overlap reported once, where the later one is written. */
START_TEST(test_provides_overlaps)
{
	static const struct { const char *text; int line; const char *want; } bad[] = {
		/* another guest's own names */
		{ "[guest echo]\nexec = /bin/true\n[guest t]\nexec = /bin/true\nprovides = echo.*\n",
		  5, "guest 't': provides 'echo.*' overlaps echo.*, the names of guest 'echo' (line 1)" },
		{ "[guest t]\nexec = /bin/true\nprovides = echo.x\n[guest echo]\nexec = /bin/true\n",
		  3, "guest 't': provides 'echo.x' overlaps echo.*, the names of guest 'echo' (line 4)" },
		{ "[guest echo]\nexec = /bin/true\n[guest t]\nexec = /bin/true\nprovides = echo.a.*\n",
		  5, "provides 'echo.a.*' overlaps echo.*" },
		{ "[guest e]\nexec = /bin/true\n[guest t]\nexec = /bin/true\nprovides = x, e.q\n",
		  5, "provides 'e.q' overlaps e.*" },
		/* another guest's provides */
		{ "[guest a]\nexec = /bin/true\nprovides = x.*\n[guest b]\nexec = /bin/true\n"
		  "provides = x.y\n", 6, "guest 'b': provides 'x.y' overlaps 'x.*', which guest 'a' "
		  "provides (line 3)" },
		{ "[guest a]\nexec = /bin/true\nprovides = x.y.*\n[guest b]\nexec = /bin/true\n"
		  "provides = x.*\n", 6, "provides 'x.*' overlaps 'x.y.*'" },
		{ "[guest a]\nexec = /bin/true\nprovides = x\n[guest b]\nexec = /bin/true\n"
		  "provides = x\n", 6, "provides 'x' overlaps 'x'" },
		/* one guest's own names under another's */
		{ "[guest a]\nexec = /bin/true\n[guest a.b]\nexec = /bin/true\n", 3,
		  "guest 'a.b': its names a.b.* overlap a.*, guest 'a''s (line 1)" },
		/* the host's */
		{ "[guest t]\nexec = /bin/true\nprovides = hub.*\n", 3,
		  "guest 't': provides 'hub.*' covers names of the host's (hub.*)" },
		{ "[guest t]\nexec = /bin/true\nprovides = hub.ping\n", 3, "covers names of the host's" },
		{ "[guest t]\nexec = /bin/true\nprovides = hub.x.*\n", 3, "covers names of the host's" },
		{ "[guest hub]\nexec = /bin/true\n", 1, "guest 'hub': a guest's names are NAME.*, "
		  "and hub.* are the host's services: choose another name" },
		{ "[guest hub.x]\nexec = /bin/true\n", 1, "guest 'hub.x': its names hub.x.* are "
		  "the host's (hub.*)" },
	};
	static const char *const good[] = {
		"[guest a]\nexec = /bin/true\nprovides = x.*\n[guest b]\nexec = /bin/true\n"
		"provides = xy.*, x, y.x\n",
		"[guest a]\nexec = /bin/true\nprovides = x.y\n[guest b]\nexec = /bin/true\n"
		"provides = x.z, x.y.z\n",
		"[guest echo]\nexec = /bin/true\n[guest t]\nexec = /bin/true\nprovides = ech.*, echo, "
		"echoes.*\n",
		"[guest a]\nexec = /bin/true\n[guest ab]\nexec = /bin/true\n[guest a-b]\n"
		"exec = /bin/true\n",
		/* its own names again: harmless */
		"[guest a]\nexec = /bin/true\nprovides = a.*, a.x, x.*, x.y\n",
		"[guest t]\nexec = /bin/true\nprovides = hub, hubs.*, hu.*\n",
		"[guest hubx]\nexec = /bin/true\n",
	};
	struct hub_conf c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_error(bad[i].text, bad[i].line, bad[i].want);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(load(good[i], &c) == 0, "refused:\n%s\n%s", good[i], errtext);
		config_free(&c);
	}
	/* all of them, not the first alone */
	ck_assert_int_eq(load("[guest a]\nexec = /bin/true\nprovides = b.x, hub.log\n"
			      "[guest b]\nexec = /bin/true\nprovides = a.*\n"
			      "[guest hub]\nexec = /bin/true\n", &c), -1);
	ck_assert_msg(strstr(errtext, ":3: guest 'a': provides 'b.x' overlaps b.*") != NULL &&
		      strstr(errtext, ":3: guest 'a': provides 'hub.log' covers") != NULL &&
		      strstr(errtext, ":6: guest 'b': provides 'a.*' overlaps a.*") != NULL &&
		      strstr(errtext, ":7: guest 'hub': ") != NULL, "got: %s", errtext);
}
END_TEST

/* env = NAME=VALUE ...: split and quoted as args =; each name portable
 * and given once; HUB_PROCESSORS is processors ='s; a copy is equal, a
 * changed value is a changed guest (a reload restarts it). */
START_TEST(test_env)
{
	struct hub_conf c;
	struct config_guest *d;

	ck_assert_msg(load("[guest a]\nexec = /bin/true\n"
			   "env = PYTHONPATH=/opt/x \"GREETING=hello world\" EMPTY= _a1=\"q\\\"\"\n"
			   "[guest b]\nexec = /bin/true\n", &c) == 0, "load: %s", errtext);
	ck_assert_ptr_nonnull(c.guests[0].env);
	ck_assert_str_eq(c.guests[0].env[0], "PYTHONPATH=/opt/x");
	ck_assert_str_eq(c.guests[0].env[1], "GREETING=hello world");
	ck_assert_str_eq(c.guests[0].env[2], "EMPTY=");
	ck_assert_str_eq(c.guests[0].env[3], "_a1=q\"");
	ck_assert_ptr_null(c.guests[0].env[4]);
	ck_assert_ptr_null(c.guests[1].env);
	d = config_guest_dup(&c.guests[0]);
	ck_assert_ptr_nonnull(d);
	ck_assert(config_guest_equal(d, &c.guests[0]));
	free(d->env[2]);
	d->env[2] = strdup("EMPTY=1");
	ck_assert(!config_guest_equal(d, &c.guests[0]) && !config_guest_equal(&c.guests[0], d));
	ck_assert(!config_guest_equal(&c.guests[1], &c.guests[0]));
	config_guest_free(d);
	config_free(&c);

	expect_error("[guest a]\nexec = /bin/true\nenv = NOEQUALS\n", 3, "'NOEQUALS' is not NAME=VALUE");
	expect_error("[guest a]\nexec = /bin/true\nenv = =x\n", 3, "'=x' is not NAME=VALUE");
	expect_error("[guest a]\nexec = /bin/true\nenv = 1A=x\n", 3, "'1A=x' is not NAME=VALUE");
	expect_error("[guest a]\nexec = /bin/true\nenv = A-B=x\n", 3, "'A-B=x' is not NAME=VALUE");
	expect_error("[guest a]\nexec = /bin/true\nenv = A=1 B=2 A=3\n", 3, "A given twice");
	expect_error("[guest a]\nexec = /bin/true\nenv = HUB_PROCESSORS=4\n", 3,
		     "HUB_PROCESSORS is hubd's");
	expect_error("[guest a]\nexec = /bin/true\nenv = \"A=open\n", 3, "unterminated quote");
	expect_error("[guest a]\nexec = /bin/true\nenv =\n", 3, "no NAME=VALUE");
	expect_error("[guest a]\nexec = /bin/true\nenv = A=1\nenv = B=2\n", 4, "env");
}
END_TEST

START_TEST(test_overlong_line)
{
	char text[4096];

	snprintf(text, sizeof(text), "[hub]\ncontrol = /tmp/%03000d\n", 7);
	expect_error(text, 2, "line longer than");
}
END_TEST

/* A NUL byte is its own error, no overlong line: the lines after it are
 * read and numbered as they are. */
START_TEST(test_nul_byte)
{
	static const char text[] = "[hub]\nring_size = 8\0 junk\nfoo = 1\nbar = 2\n";
	struct hub_conf c;

	ck_assert_int_eq(load_bytes(text, sizeof(text) - 1, &c), -1);
	ck_assert_msg(strstr(errtext, ":2: a NUL byte in the line\n") != NULL &&
		      strstr(errtext, ":3: unknown key 'foo'") != NULL &&
		      strstr(errtext, ":4: unknown key 'bar'") != NULL &&
		      strstr(errtext, "longer than") == NULL, "got: %s", errtext);
	ck_assert_msg(c.guests == NULL && c.control_path == NULL,
		      "a failed load left state behind");
}
END_TEST

START_TEST(test_every_error_reported)
{
	struct hub_conf c;
	char *second;

	ck_assert_int_eq(load("[hub]\nfoo = 1\nbar = 2\n", &c), -1);
	second = strstr(errtext, ":3: ");
	ck_assert_msg(strstr(errtext, ":2: ") != NULL && second != NULL,
		      "both errors expected: %s", errtext);
}
END_TEST

START_TEST(test_missing_file)
{
	struct hub_conf c;
	FILE *errs;

	free(errtext);
	errs = open_memstream(&errtext, &errlen);
	ck_assert_int_eq(config_load("/nonexistent/hubd.conf", &c, errs), -1);
	fclose(errs);
	ck_assert_msg(strstr(errtext, "No such file") != NULL, "got: %s", errtext);
}
END_TEST

/* A file that opens but does not read is no empty config: taken for one,
 * a reload would drop every guest; a directory is refused before it is
 * read, saying what it is. */
START_TEST(test_unreadable_file)
{
	char dir[] = "/tmp/hub-config-dir-XXXXXX", at[128];
	struct hub_conf c;
	FILE *errs;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	free(errtext);
	errs = open_memstream(&errtext, &errlen);
	rc = config_load(dir, &c, errs);
	fclose(errs);
	rmdir(dir);
	ck_assert_int_eq(rc, -1);
	snprintf(at, sizeof(at), "%s: cannot read: it is a directory, not a file of settings\n",
		 dir);
	ck_assert_msg(strstr(errtext, at) != NULL, "got: %s", errtext);
	ck_assert_msg(c.guests == NULL && c.nguests == 0 && c.control_path == NULL,
		      "a failed load left state behind");
}
END_TEST

/* A config larger than HP_CONFIG_MAX is refused before it is read,
 * saying its size and the limit: 1 GB of a sparse file, or 100 MB of
 * blank lines, held hubd (and a reload, its whole loop) for seconds. A
 * file of the limit itself loads. */
START_TEST(test_too_large_file)
{
	size_t n = HP_CONFIG_MAX + 1;
	char *text = malloc(n), at[160];
	struct hub_conf c;

	ck_assert_ptr_nonnull(text);
	memset(text, '\n', n);
	memcpy(text, "[hub]\n", 6);
	ck_assert_int_eq(load_bytes(text, n, &c), -1);
	snprintf(at, sizeof(at), ": cannot read: it is %zu bytes, and a config is at most %u (1 MiB)\n",
		 n, HP_CONFIG_MAX);
	ck_assert_msg(strstr(errtext, at) != NULL, "got: %s", errtext);
	ck_assert_msg(c.guests == NULL && c.nguests == 0 && c.control_path == NULL,
		      "a failed load left state behind");
	ck_assert_int_eq(load_bytes(text, n - 1, &c), 0);
	config_free(&c);
	free(text);
}
END_TEST

/* config_hub_changes: one line per key, "section.key was>new[ taken]". */
static void
note_change(void *arg, const char *section, const char *key, const char *was, const char *n,
	    int taken)
{
	char *seen = arg;

	snprintf(seen + strlen(seen), 4096 - strlen(seen), "%s.%s %s>%s%s\n", section, key, was,
		 n, taken ? " taken" : "");
}

/* What a reload says of the [hub] and [pool] keys: every key a file
 * changes, none it leaves alone, each value as the file writes it. */
START_TEST(test_every_hub_key_said)
{
	static char seen[4096];
	struct hub_conf a, b;

	ck_assert_msg(load("[hub]\ncontrol = /tmp/a.sock\n", &a) == 0, "%s", errtext);
	ck_assert_msg(load("[hub]\ncontrol = /tmp/b.sock\nmax_guests = 8\nring_size = 64\n"
			   "slot_size = 128K\nslots_per_guest = 16\nmax_channels = 128\n"
			   "initial_credit = 1M\nmax_payload_size = 1000\nheartbeat_interval = 0\n"
			   "attach_timeout = 3s\nstop_grace = 2500ms\ngroup = root\n"
			   "guest_uids = no\ngoodbye_grace = 1s\nclient_timeout = 0\n"
			   "hang_stack = off\ncalls_in_flight = 7\nchannels_per_caller = 3\n"
			   "lanes_per_guest = 2\nlane_ban = 1min\nlane_slots = 8\n"
			   "[pool]\nclasses = 64 x 4, 1M x 1\nmax_extents = 2\n"
			   "sweep_interval = 1s\nstuck_after = 0\nrelease_after = 0\nquota = 3M\n"
			   "quota_slots = 100\n", &b) == 0, "%s", errtext);
	config_hub_changes(&a, &a, &b, note_change, seen);
	ck_assert_str_eq(seen,
		"hub.control /tmp/a.sock>/tmp/b.sock\n"
		"hub.max_guests 16>8\n"
		"hub.ring_size 256>64\n"
		"hub.slot_size 64K>128K\n"
		"hub.slots_per_guest 32>16\n"
		"hub.max_channels 64>128\n"
		"hub.initial_credit 64K>1M\n"
		"hub.max_payload_size 65532>1000\n"
		"hub.heartbeat_interval 1s>0\n"
		"hub.attach_timeout 10s>3s\n"
		"hub.stop_grace 5s>2500ms\n"
		"hub.group unset>root\n"
		"hub.guest_uids 1879113728-1879179263>no\n"
		"hub.goodbye_grace 100ms>1s\n"
		"hub.client_timeout 30s>0\n"
		"hub.hang_stack auto>off\n"
		"hub.calls_in_flight 1024>7\n"
		"hub.channels_per_caller default>3\n"
		"hub.lanes_per_guest 16>2\n"
		"hub.lane_ban 10min>1min\n"
		"hub.lane_slots 32>8\n"
		"pool.classes 1K x 256, 16K x 64, 256K x 16, 4M x 2, 32M x 1>64 x 4, 1M x 1\n"
		"pool.max_extents 4>2\n"
		"pool.sweep_interval 250ms>1s\n"
		"pool.stuck_after 30s>0\n"
		"pool.release_after 1min>0\n"
		"pool.quota default>3M\n"
		"pool.quota_slots default>100\n");
	/* taken: the hub's values are the file's now */
	seen[0] = '\0';
	config_hub_changes(&a, &b, &b, note_change, seen);
	ck_assert_ptr_nonnull(strstr(seen, "hub.ring_size 256>64 taken\n"));
	/* nothing changed: nothing said */
	seen[0] = '\0';
	config_hub_changes(&b, &b, &b, note_change, seen);
	ck_assert_str_eq(seen, "");
	config_free(&a);
	config_free(&b);
}
END_TEST

Suite *suite_config(void);
Suite *
suite_config(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_values_and_defaults);
	tcase_add_test(tc, test_every_key_lands);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_empty_file_is_all_defaults);
	tcase_add_test(tc, test_unknown_key);
	tcase_add_test(tc, test_duplicate_key);
	tcase_add_test(tc, test_bad_numbers);
	tcase_add_test(tc, test_zero_timeouts_refused);
	tcase_add_test(tc, test_durations_capped);
	tcase_add_test(tc, test_geometry_checked);
	tcase_add_test(tc, test_sections);
	tcase_add_test(tc, test_bom_and_comments);
	tcase_add_test(tc, test_too_many_guests_said_once);
	tcase_add_test(tc, test_pool_section);
	tcase_add_test(tc, test_guest_keys);
	tcase_add_test(tc, test_guest_uids);
	tcase_add_test(tc, test_user_root_without_group);
	tcase_add_test(tc, test_provides);
	tcase_add_test(tc, test_lanes);
	tcase_add_test(tc, test_provides_bad_patterns);
	tcase_add_test(tc, test_publishes_not_hub_topics);
	tcase_add_test(tc, test_provides_overlaps);
	tcase_add_test(tc, test_env);
	tcase_add_test(tc, test_overlong_line);
	tcase_add_test(tc, test_nul_byte);
	tcase_add_test(tc, test_every_error_reported);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_unreadable_file);
	tcase_add_test(tc, test_too_large_file);
	tcase_add_test(tc, test_every_hub_key_said);
	suite_add_tcase(s, tc);
	return s;
}
