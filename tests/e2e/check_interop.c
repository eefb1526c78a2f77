/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The example guests under a host that is not hubd: tests/host/spechost,
 * written from the wire spec alone, with a segment layout of its own (the
 * slot region first, channel tables 4 mod 64 in reverse peer order, the
 * peer table last). Each test runs it on one guest and wants every one of
 * its checks passed. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/layout.h"
#include "tests/e2e/harness.h"

#define RUN_MS		45000	/* spechost bounds its own waits; this bounds it */

/* spechost's parameters, as its layout uses them */
#define SH_GUESTS	4u
#define SH_RING		16u
#define SH_SLOT_SIZE	4100u
#define SH_SLOTS	8u
#define SH_CHANNELS	8u

/* Runs argv (NULL-terminated) with stdout and stderr into a file; its exit
 * status (-1 if it had to be killed), its output in *out (malloc'd). */
static int
run(char *const argv[], char **out)
{
	const char *log = harness_path("spechost.out");
	int status = -1, fd;
	struct stat st;
	pid_t pid;

	unlink(log);
	if ((pid = fork()) == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	for (int ms = 0; ms < RUN_MS && waitpid(pid, &status, WNOHANG) == 0; ms += 10)
		usleep(10000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);	/* its guests die with it (PR_SET_PDEATHSIG) */
		waitpid(pid, NULL, 0);
		status = -1;
	}
	*out = NULL;
	fd = open(log, O_RDONLY);
	if (fd >= 0 && fstat(fd, &st) == 0 && (*out = calloc(1, (size_t)st.st_size + 1)) != NULL &&
	    read(fd, *out, (size_t)st.st_size) < 0)
		(*out)[0] = '\0';
	if (fd >= 0)
		close(fd);
	if (*out == NULL)
		*out = strdup("");
	return status;
}

/* The end of out, short enough for a Check message. */
static const char *
tail(const char *out)
{
	size_t n = strlen(out);

	return n > 2500 ? out + n - 2500 : out;
}

static int
has_line(const char *out, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *s = out; s != NULL && *s != '\0'; s = strchr(s, '\n')) {
		if (*s == '\n')
			s++;
		if (strncmp(s, prefix, n) == 0)
			return 1;
	}
	return 0;
}

/* spechost on one example guest: it exits 0, no check failed, and it got
 * as far as the guest's goodbye. */
static void
interop(const char *guest)
{
	char host[512], seg[512], gbin[512], done[128];
	char *argv[] = { host, seg, gbin, NULL };
	char *out;
	int status;

	snprintf(host, sizeof(host), "%s", bin("tests/host/spechost"));
	snprintf(seg, sizeof(seg), "%s", harness_shm_path("interop"));
	snprintf(gbin, sizeof(gbin), "%s/%s", bin("guests"), guest);
	snprintf(done, sizeof(done), "ok - %s: host_goodbye", guest);
	status = run(argv, &out);
	ck_assert_msg(!has_line(out, "FAIL"), "spechost on %s failed checks:\n%s", guest,
		      tail(out));
	ck_assert_msg(status == 0, "spechost on %s: status %#x:\n%s", guest, status, tail(out));
	ck_assert_msg(has_line(out, done), "spechost on %s never got to the goodbye:\n%s",
		      guest, tail(out));
	ck_assert_msg(access(seg, F_OK) != 0, "spechost left its segment %s", seg);
	free(out);
}

START_TEST(test_echo)
{
	interop("echo");
}
END_TEST

START_TEST(test_kv)
{
	interop("kv");
}
END_TEST

START_TEST(test_counter)
{
	interop("counter");
}
END_TEST

/* The size spechost's layout comes to, worked out here on its own: the
 * header, the slot region (host pool then one per guest, each a bitmap
 * padded to 64 then the slots), the channel tables from the first offset
 * that is 4 mod 64, the ring pairs from the next 64, the peer table from
 * the next offset that is 8 mod 64. */
static uint64_t
spechost_total(void)
{
	uint64_t pool = ((SH_SLOTS + 63) / 64 * 8 + 63) / 64 * 64 +
	    (uint64_t)SH_SLOTS * SH_SLOT_SIZE;
	uint64_t off = HP_HEADER_SIZE + (SH_GUESTS + 1) * pool;

	while (off % 64 != 4)
		off++;
	off += SH_GUESTS * SH_CHANNELS * HP_CHAN_ENTRY_SIZE;
	off = (off + 63) / 64 * 64;
	off += SH_GUESTS * 2ull * SH_RING * HP_DESC_SIZE;
	while (off % 64 != 8)
		off++;
	return off + SH_GUESTS * HP_PEER_ENTRY_SIZE;
}

/* ---- hubctl inspect on a layout that is not hubd's ------------------- */

/* The area of inspect's answer named name (for peer, 0: the hub's own). */
static json_object *
find_area(json_object *areas, const char *name, int peer)
{
	for (size_t i = 0; i < json_object_array_length(areas); i++) {
		json_object *a = json_object_array_get_idx(areas, i), *id = json_get(a, "peer_id");

		if (strcmp(json_object_get_string(json_get(a, "area")), name) == 0 &&
		    (id == NULL ? 0 : json_object_get_int(id)) == peer)
			return a;
	}
	ck_abort_msg("inspect lists no %s for peer %d", name, peer);
	return NULL;
}

static uint64_t
area_offset(json_object *areas, const char *name, int peer)
{
	return json_object_get_uint64(json_get(find_area(areas, name, peer), "offset"));
}

/* hubctl inspect reads another host's layout the way a guest does: every
 * area where the header and the entries say, the layout named as not
 * hubd's, no problem; and a bad entry is reported, naming the peer. The
 * file is one segment for all the guests: a "segment" in the answer's
 * domains, of no single peer. */
static void
inspect_foreign(const char *seg, const struct hp_header *h)
{
	char ctl[512], path[512];
	char *json_argv[] = { ctl, "--json", "inspect", path, NULL };
	char *text_argv[] = { ctl, "inspect", path, NULL };
	struct hp_peer_entry e[SH_GUESTS];
	json_object *o, *d, *areas;
	char *out;
	int status, fd;

	snprintf(ctl, sizeof(ctl), "%s", bin("hubctl"));
	snprintf(path, sizeof(path), "%s", seg);
	fd = open(seg, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, e, sizeof(e), (off_t)h->peer_table_offset), (int)sizeof(e));
	status = run(json_argv, &out);
	ck_assert_msg(status == 0, "hubctl --json inspect: status %#x:\n%s", status, tail(out));
	o = json_tokener_parse(out);
	ck_assert_msg(o != NULL, "not JSON:\n%s", tail(out));
	free(out);
	ck_assert_int_eq(json_object_array_length(json_get(o, "problems")), 0);
	ck_assert_int_eq(json_object_array_length(json_get(o, "pools")), 0);
	ck_assert_int_eq(json_object_array_length(json_get(o, "domains")), 1);
	d = json_object_array_get_idx(json_get(o, "domains"), 0);
	ck_assert_str_eq(json_object_get_string(json_get(d, "file")), seg);
	ck_assert_ptr_null(json_get(d, "peer_id"));	/* every guest's */
	ck_assert_str_eq(json_object_get_string(json_get(d, "layout")), "other");
	ck_assert_int_eq(json_object_get_int(json_get(d, "slot_size")), SH_SLOT_SIZE);
	ck_assert_int_eq(json_object_get_int(json_get(d, "host_features")), 0);
	ck_assert_int_eq(json_object_array_length(json_get(d, "peers")), SH_GUESTS);
	ck_assert_int_eq(json_object_array_length(json_get(d, "problems")), 0);
	areas = json_get(d, "areas");
	ck_assert_uint_eq(area_offset(areas, "peer table", 0), h->peer_table_offset);
	ck_assert_uint_eq(area_offset(areas, "host slot pool", 0), h->slot_region_offset);
	for (int id = 1; id <= (int)SH_GUESTS; id++) {
		ck_assert_uint_eq(area_offset(areas, "rings", id), e[id - 1].ring_offset);
		ck_assert_uint_eq(area_offset(areas, "slot pool", id), e[id - 1].slot_pool_offset);
		ck_assert_uint_eq(area_offset(areas, "channel table", id),
				  e[id - 1].channel_table_offset);
	}
	/* in file order, as the text shows them */
	for (size_t i = 1; i < json_object_array_length(areas); i++)
		ck_assert_uint_le(json_object_get_uint64(json_get(json_object_array_get_idx(areas, i - 1), "offset")),
				  json_object_get_uint64(json_get(json_object_array_get_idx(areas, i), "offset")));
	json_object_put(o);
	status = run(text_argv, &out);
	ck_assert_msg(status == 0 && strstr(out, "other layout") != NULL &&
		      strstr(out, "peer 4 channel table") != NULL &&
		      strstr(out, "invariants: ok") != NULL,
		      "hubctl inspect: status %#x:\n%s", status, tail(out));
	free(out);

	/* r[shm.segment.peer-table]: peer 2's rings over the header */
	e[1].ring_offset = 64;
	ck_assert_int_eq(pwrite(fd, &e[1], sizeof(e[1]),
				(off_t)(h->peer_table_offset + HP_PEER_ENTRY_SIZE)), (int)sizeof(e[1]));
	close(fd);
	status = run(text_argv, &out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
		      strstr(out, "PROBLEM: segment ") != NULL &&
		      strstr(out, ": peer 2: peer entry: its rings overlap the header") != NULL &&
		      strstr(out, "invariants: broken") != NULL,
		      "hubctl inspect of a bad entry: status %#x:\n%s", status, tail(out));
	free(out);
}

START_TEST(test_create_only_inspect)
{
	char host[512], seg[512];
	char *argv[] = { host, "--create-only", seg, NULL };
	struct hp_header h;
	struct stat st;
	char *out;
	int status, fd;

	snprintf(host, sizeof(host), "%s", bin("tests/host/spechost"));
	snprintf(seg, sizeof(seg), "%s", harness_shm_path("inspect"));
	status = run(argv, &out);
	ck_assert_msg(status == 0, "spechost --create-only: status %#x:\n%s", status, tail(out));
	ck_assert_msg(out[0] == '\0', "spechost --create-only printed:\n%s", tail(out));
	free(out);
	ck_assert_msg(lstat(seg, &st) == 0, "%s: %s", seg, strerror(errno));
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_uint_eq((uint64_t)st.st_size, spechost_total());
	fd = open(seg, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, &h, sizeof(h)), (int)sizeof(h));
	close(fd);
	ck_assert_int_eq(memcmp(&h.magic, HP_MAGIC, HP_MAGIC_LEN), 0);
	ck_assert_uint_eq(h.total_size, (uint64_t)st.st_size);
	ck_assert_uint_eq(h.slot_region_offset, HP_HEADER_SIZE);
	ck_assert_uint_eq(h.peer_table_offset % 64, 8);
	ck_assert_uint_eq(h.peer_table_offset + SH_GUESTS * HP_PEER_ENTRY_SIZE, h.total_size);
	/* no extension: host_features, ext_offset and the rest of reserved zero */
	for (size_t i = offsetof(struct hp_header, host_features); i < sizeof(h); i++)
		ck_assert_msg(((const uint8_t *)&h)[i] == 0, "header byte %zu is not zero", i);
	inspect_foreign(seg, &h);
	unlink(seg);
}
END_TEST

Suite *suite_interop(void);

Suite *
suite_interop(void)
{
	Suite *s = suite_create("interop");
	TCase *tc = tcase_create("interop");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_echo);
	tcase_add_test(tc, test_kv);
	tcase_add_test(tc, test_counter);
	tcase_add_test(tc, test_create_only_inspect);
	suite_add_tcase(s, tc);
	return s;
}
