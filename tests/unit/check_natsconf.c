/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hub-nats's config file (nats/conf.c): what it accepts, its defaults,
 * and a clear error naming the line for everything else. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nats/hubnats.h"

/* Loads text as a config file: 0 or -1, the reason in why. */
static int
load(const char *text, struct br_conf *c, char *why, size_t cap)
{
	char path[] = "/tmp/hub-natsconf-XXXXXX";
	int fd = mkstemp(path), rc;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rc = br_conf_load(c, path, why, cap);
	unlink(path);
	return rc;
}

START_TEST(test_defaults_and_keys)
{
	struct br_conf c;
	char why[256];

	ck_assert_int_eq(load("[export]\nmethods = kv.*\n", &c, why, sizeof(why)), 0);
	ck_assert_int_eq(c.nservers, 1);
	ck_assert_str_eq(c.servers[0], "nats://127.0.0.1:4222");
	ck_assert_str_eq(c.subject, "hub");
	ck_assert_uint_eq(c.announce_ms, 2000);
	ck_assert_uint_eq(c.timeout_ms, 30000);
	ck_assert_uint_eq(c.suspect_ms, 1000);
	ck_assert_uint_eq(c.calls_max, 1024);
	ck_assert_uint_eq(c.calls_per_hub, 512);
	ck_assert_str_eq(c.key, BR_KEY_DEFAULT);
	ck_assert_str_eq(c.inbox_prefix, "_INBOX");
	ck_assert_int_eq(c.ntrust, 0);
	ck_assert_int_eq(c.queue, 1);
	ck_assert(c.name[0] != '\0');	/* the host's name */
	br_conf_free(&c);
	ck_assert_int_eq(load("[nats]\nservers = nats://a:1, tls://b:2 nats://c:3\nname = east-1\n"
			      "subject = bus\nannounce = 500ms\ncalls_max = 10\n"
			      "user = u\npassword = p\n"
			      "key = /k\ninbox_prefix = _INBOX.east\ncalls_per_hub = 3\n"
			      "[export]\nmethods = kv.* echo.echo\nqueue = no\n"
			      "[import]\nmethods = *\nprefix = far\nfrom = west\ntimeout = 2min\n"
			      "suspect = 250ms\n"
			      "[trust]\nwest = rGTq4TGjpTy1aTYgmzb70nzrFKLfTHkC7AKmvpH2B9Q=\n"
			      "north = ac64eae131a3a53cb56936209b36fbd27ceb14a2df4c7902ec02a6be91f607d4\n",
			      &c, why, sizeof(why)), 0);
	ck_assert_int_eq(c.nservers, 3);
	ck_assert_str_eq(c.servers[1], "tls://b:2");
	ck_assert_str_eq(c.name, "east-1");
	ck_assert_str_eq(c.subject, "bus");
	ck_assert_uint_eq(c.announce_ms, 500);
	ck_assert_uint_eq(c.calls_max, 10);
	ck_assert_int_eq(c.nexports, 2);
	ck_assert_int_eq(c.queue, 0);
	ck_assert_str_eq(c.imports[0], "*");
	ck_assert_str_eq(c.prefix, "far");
	ck_assert_str_eq(c.from, "west");
	ck_assert_uint_eq(c.timeout_ms, 120000);
	ck_assert_str_eq(c.key, "/k");
	ck_assert_str_eq(c.inbox_prefix, "_INBOX.east");
	ck_assert_uint_eq(c.calls_per_hub, 3);
	ck_assert_int_eq(c.ntrust, 2);
	ck_assert_str_eq(c.trust[1].name, "north");
	ck_assert_int_eq(c.trust[0].pk[0], 0xac);	/* the same key, base64 and hex */
	ck_assert_int_eq(memcmp(c.trust[0].pk, c.trust[1].pk, BR_PK_LEN), 0);
	ck_assert_uint_eq(c.suspect_ms, 250);
	br_conf_free(&c);
	ck_assert_int_eq(load("[import]\nmethods = *\nsuspect = off\n", &c, why, sizeof(why)), 0);
	ck_assert_uint_eq(c.suspect_ms, 0);
	br_conf_free(&c);
}
END_TEST

static const struct {
	const char	*text;
	const char	*why;
} bad[] = {
	{ "[nats]\nservers = http://x\n[export]\nmethods = a.b\n", "line 2: servers: 'http://x'" },
	{ "[nats]\nname = a.b\n[export]\nmethods = a.b\n", "line 2: name: 'a.b'" },
	{ "[nats]\nsubject = a b\n[export]\nmethods = a.b\n", "line 2: subject" },
	{ "[nats]\nannounce = 2h\n[export]\nmethods = a.b\n", "line 2: announce" },
	{ "[nats]\nannounce = 10ms\n[export]\nmethods = a.b\n", "line 2: announce: '10ms'" },
	{ "[nats]\ncalls_max = 0\n[export]\nmethods = a.b\n", "line 2: calls_max" },
	{ "[nats]\ncalls_max = 12x\n[export]\nmethods = a.b\n", "line 2: calls_max" },
	{ "[nats]\ncalls_per_hub = 0\n[export]\nmethods = a.b\n", "line 2: calls_per_hub" },
	{ "[nats]\ninbox_prefix = _INBOX.>\n[export]\nmethods = a.b\n", "line 2: inbox_prefix" },
	{ "[nats]\ninbox_prefix = a..b\n[export]\nmethods = a.b\n", "line 2: inbox_prefix" },
	{ "[export]\nmethods = a.b\n[trust]\nb = short\n", "line 4: [trust] b: 'short' is not a public key" },
	{ "[export]\nmethods = a.b\n[trust]\nb.c = rGTq4TGjpTy1aTYgmzb70nzrFKLfTHkC7AKmvpH2B9Q=\n", "'b.c' is not a hub's name" },
	{ "[export]\nmethods = a.b\n[trust]\nb = rGTq4TGjpTy1aTYgmzb70nzrFKLfTHkC7AKmvpH2B9Q=\n"
	  "b = rGTq4TGjpTy1aTYgmzb70nzrFKLfTHkC7AKmvpH2B9Q=\n", "line 5: [trust]: hub b is named twice" },
	{ "[nats]\ntls = maybe\n[export]\nmethods = a.b\n", "line 2: tls" },
	{ "[nats]\ncreds = /nonexistent/x.creds\n[export]\nmethods = a.b\n", "cannot read" },
	{ "[nats]\ncolour = blue\n", "[nats] has no key 'colour'" },
	{ "[export]\nmethods = a.*.b\n", "'a.*.b' is not a name, NAME.* or *" },
	{ "[export]\nmethods = a..b\n", "'a..b'" },
	{ "[export]\nmethods = >\n", "'>'" },
	{ "[export]\nqueue = 2\n", "queue" },
	{ "[import]\nmethods = a.*\nprefix = a.b\n", "prefix" },
	{ "[import]\nmethods = a.*\ntimeout = 2d\n", "timeout" },
	{ "[import]\nmethods = a.*\nsuspect = 5ms\n", "suspect: '5ms'" },
	{ "[import]\nmethods = a.*\nsuspect = never\n", "suspect" },
	{ "[import]\nmethods = a.*\nfrom = x y\n", "from" },
	{ "[other]\nkey = 1\n", "'key' in [other]" },
	{ "[nats]\nname = x\n", "nothing to do" },
	{ "[nats]\nuser = u\n[export]\nmethods = a.b\n", "user without password" },
	{ "[export]\nmethods\n", "not a key = value line" },
	{ "[nats]\npassword = p\n[export]\nmethods = a.b\n", "password without user" },
	{ "[nats]\ntls_cert = /etc/hostname\n[export]\nmethods = a.b\n", "tls_cert without tls_key" },
};

START_TEST(test_refused)
{
	struct br_conf c;
	char why[256] = "";

	ck_assert_msg(load(bad[_i].text, &c, why, sizeof(why)) == -1, "accepted: %s", bad[_i].text);
	ck_assert_msg(strstr(why, bad[_i].why) != NULL, "'%s': why '%s', want '%s'", bad[_i].text,
		      why, bad[_i].why);
}
END_TEST

START_TEST(test_patterns)
{
	ck_assert(br_pattern_matches("*", "kv.get"));
	ck_assert(br_pattern_matches("kv.*", "kv.get"));
	ck_assert(!br_pattern_matches("kv.*", "kvx.get"));
	ck_assert(!br_pattern_matches("kv.*", "kv"));
	ck_assert(br_pattern_matches("kv.get", "kv.get"));
	ck_assert(!br_pattern_matches("kv.get", "kv.gets"));
}
END_TEST

static char fifo[64];

/* in the runner, before the test's fork: its teardown knows the name */
static void
fifo_name(void)
{
	snprintf(fifo, sizeof(fifo), "/tmp/hub-natsconf-fifo-%d", (int)getpid());
}

static void
fifo_remove(void)
{
	unlink(fifo);
}

/* hub-nats --config on a FIFO exits at once, saying what it is: its
 * open waited for a writer for ever (timeout(1) bounds the run). */
START_TEST(test_not_a_file_refused)
{
	char cmd[256], out[512] = "";
	struct br_conf c;
	char why[256] = "";
	size_t n;
	FILE *p;
	int status;

	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(cmd, sizeof(cmd), "timeout 20 %s/hub-nats --config %s 2>&1", BUILD_DIR, fifo);
	ck_assert_ptr_nonnull(p = popen(cmd, "r"));
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	status = pclose(p);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2 &&
		      strstr(out, "cannot read: it is a FIFO, not a file of settings") != NULL,
		      "status %d: %s", status, out);
	ck_assert_int_eq(br_conf_load(&c, "/tmp", why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "it is a directory") != NULL, "why: %s", why);
}
END_TEST

/* A config larger than 1 MiB is refused before it is read, saying its
 * size and the limit, as hubd's is. */
START_TEST(test_too_large_refused)
{
	char path[] = "/tmp/hub-natsconf-XXXXXX", why[256] = "";
	struct br_conf c;
	int fd = mkstemp(path), rc;

	ck_assert_int_ge(fd, 0);
	rc = ftruncate(fd, (1 << 20) + 1);
	close(fd);
	ck_assert_int_eq(rc, 0);
	rc = br_conf_load(&c, path, why, sizeof(why));
	unlink(path);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(why, "cannot read: it is 1048577 bytes, and a config is at most "
			      "1048576 (1 MiB)") != NULL, "why: %s", why);
}
END_TEST

Suite *suite_natsconf(void);

Suite *
suite_natsconf(void)
{
	Suite *s = suite_create("natsconf");
	TCase *tc = tcase_create("natsconf");

	tcase_add_test(tc, test_defaults_and_keys);
	tcase_add_loop_test(tc, test_refused, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_patterns);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_unchecked_fixture(tc, fifo_name, fifo_remove);	/* even after a timeout */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_not_a_file_refused);
	tcase_add_test(tc, test_too_large_refused);
	suite_add_tcase(s, tc);
	return s;
}
