/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl pool [--validate], the pool figures of status and stats, and
 * inspect of the shared pool, against a real hubd and segment files:
 * what they show, what validate finds in a scribbled pool, and that the
 * sweeper repairs it, when a test scribbles or a guest (poolbreaker). */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proto/layout.h"
#include "proto/segment.h"
#include "proto/varpool.h"
#include "proto/varpool_host.h"
#include "tests/e2e/harness.h"

#define ECHO	"[guest echo]\nexec = @/guests/echo\n"
#define BREAKER	"[guest breaker]\nexec = @/tests/guests/poolbreaker\nrestart = never\n" \
		"args = --act="
/* the default classes' slots in one extent each */
#define DEFAULT_SLOTS	"339"

static const char *const class_keys[] = {
	"slot_size", "slots_per_extent", "extents", "slots", "free", "in_use", "high_water",
	"allocs", "frees", "conflicts", "fallbacks", "waits", "errors", "reclaimed",
	"rebuilds", "double_frees", "stale_frees", "bad_links", "grown",
};

/* hubctl's stdout as JSON (a new reference), asserted to parse. */
static json_object *
parse_out(const char *out)
{
	json_object *o = json_tokener_parse(out);

	ck_assert_msg(o != NULL, "not JSON: %s", out);
	return o;
}

static uint64_t
u64(json_object *o, const char *key)
{
	ck_assert_msg(json_get(o, key) != NULL, "no \"%s\" in %s", key,
		      json_object_to_json_string(o));
	return json_object_get_uint64(json_get(o, key));
}

/* The class header of class c in a segment file, mapped read-write for
 * scribbling; *map and *len to unmap. */
static struct hp_var_class *
map_class(const char *segment, uint32_t c, void **map, size_t *len)
{
	struct hp_header h;
	int fd = open(segment, O_RDWR | O_CLOEXEC);
	uint8_t *p;

	ck_assert_msg(fd >= 0, "open %s", segment);
	ck_assert_int_eq(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	ck_assert_msg(h.varpool_offset != 0 && h.varpool_offset % HP_VAR_EXTENT_ALIGN == 0,
		      "varpool_offset %llu", (unsigned long long)h.varpool_offset);
	*len = HP_VAR_EXTENT_ALIGN * 2;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)h.varpool_offset);
	close(fd);
	ck_assert_msg(p != MAP_FAILED, "mmap");
	*map = p;
	return (struct hp_var_class *)(void *)(p + sizeof(struct hp_var_header) +
					       c * sizeof(struct hp_var_class));
}

/* r[shm.varslot.freelist]: a free list head naming no slot, its tag kept
 * (CAS: hubd may pop meanwhile; with no guest nobody does). */
static void
scribble_head(const char *segment, uint32_t c, uint32_t bad)
{
	void *map;
	size_t len;
	struct hp_var_class *k = map_class(segment, c, &map, &len);
	uint64_t head = hp_load_relaxed_u64(&k->free_head);

	while (!hp_cas_u64(&k->free_head, &head, (head & 0xFFFFFFFF00000000ull) | bad))
		;
	munmap(map, len);
}

/* r[shm.varslot.classes]: a default hub lists its 5 classes, smallest first. */
START_TEST(test_pool_lists_default_classes)
{
	static const char *const sizes[] = { "1.0 KiB", "16.0 KiB", "256.0 KiB", "4.0 MiB",
		"32.0 MiB" };
	struct hub_proc h;
	char *out, line[32];
	int rc;

	hub_start_up(&h, NULL, NULL, NULL);
	rc = hubctl(&h, &out, "pool", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "CLASS") != NULL && strstr(out, "ALLOCS") != NULL, "%s", out);
	for (int c = 0; c < 5; c++) {
		snprintf(line, sizeof(line), "\n%5d %9s ", c, sizes[c]);
		ck_assert_msg(strstr(out, line) != NULL, "no class %d of %s in:\n%s", c, sizes[c],
			      out);
	}
	snprintf(line, sizeof(line), "\n%5d ", 5);
	ck_assert_msg(strstr(out, line) == NULL, "a 6th class:\n%s", out);
	ck_assert_msg(strstr(out, "held too long") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* r[shm.varslot.ownership] r[shm.varslot.freeing]: after calls that took
 * and returned slots, validate finds every slot on its list: exit 0. */
START_TEST(test_pool_validate_clean)
{
	struct hub_proc h;
	char *out, big[3001];
	int rc;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	hub_start_up(&h, NULL, ECHO, "echo");
	ck_assert_int_eq(hub_wait_method(&h, "echo.echo"), 0);
	for (int i = 0; i < 3; i++) {
		rc = hubctl(&h, &out, "call", "echo.echo", big, (char *)NULL);
		ck_assert_msg(rc == 0 && strncmp(out, big, sizeof(big) - 1) == 0, "exit %d", rc);
		free(out);
	}
	rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s\n%s", rc, out, hub_log_tail(&h));
	ck_assert_msg(strstr(out, "validate: valid") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "PROBLEM") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* The JSON answer: every class with every figure, consistent with itself;
 * the calls' slots counted; the region totals; and validate's verdict. */
START_TEST(test_pool_json)
{
	struct hub_proc h;
	json_object *o, *classes;
	uint64_t allocs = 0, frees = 0;
	char *out, big[3001];
	int rc;

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	hub_start_up(&h, NULL, ECHO, "echo");
	ck_assert_int_eq(hub_wait_method(&h, "echo.echo"), 0);
	rc = hubctl(&h, &out, "call", "echo.echo", big, (char *)NULL);
	ck_assert_int_eq(rc, 0);
	free(out);
	/* --json after the command, as the usage says */
	rc = hubctl(&h, &out, "pool", "--validate", "--json", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	o = parse_out(out);
	free(out);
	ck_assert(json_object_get_boolean(json_get(o, "ok")));
	ck_assert(json_object_get_boolean(json_get(o, "valid")));
	ck_assert(json_object_is_type(json_get(o, "problems"), json_type_array));
	ck_assert_int_eq(json_object_array_length(json_get(o, "problems")), 0);
	ck_assert_uint_gt(u64(o, "segment_bytes"), 0);
	ck_assert_uint_ge(u64(o, "segment_bytes"), u64(o, "segment_initial_bytes"));
	ck_assert_uint_gt(u64(o, "pool_initial_bytes"), 0);
	ck_assert_uint_ge(u64(o, "pool_bytes"), u64(o, "pool_initial_bytes"));
	ck_assert_uint_eq(u64(o, "max_extents"), 4);
	ck_assert_uint_eq(u64(o, "stuck"), 0);
	classes = json_get(o, "classes");
	ck_assert(json_object_is_type(classes, json_type_array));
	ck_assert_int_eq(json_object_array_length(classes), 5);
	for (size_t i = 0; i < 5; i++) {
		json_object *c = json_object_array_get_idx(classes, i);

		for (size_t k = 0; k < sizeof(class_keys) / sizeof(class_keys[0]); k++)
			(void)u64(c, class_keys[k]);
		ck_assert_uint_eq(u64(c, "class"), i);
		ck_assert_uint_eq(u64(c, "slots"), u64(c, "slots_per_extent") * u64(c, "extents"));
		ck_assert_uint_eq(u64(c, "free") + u64(c, "in_use"), u64(c, "slots"));
		ck_assert_uint_ge(u64(c, "high_water"), u64(c, "in_use"));
		allocs += u64(c, "allocs");
		frees += u64(c, "frees");
	}
	ck_assert_uint_eq(u64(json_object_array_get_idx(classes, 0), "slot_size"), 1024);
	ck_assert_uint_eq(u64(json_object_array_get_idx(classes, 4), "slot_size"), 32u << 20);
	/* r[shm.varslot.selection]: a 3000-byte payload each way took slots */
	ck_assert_uint_ge(allocs, 2);
	ck_assert_uint_ge(frees, 2);
	json_object_put(o);
	/* without --validate: no verdict */
	rc = hubctl(&h, &out, "-j", "pool", (char *)NULL);
	ck_assert_int_eq(rc, 0);
	o = parse_out(out);
	free(out);
	ck_assert_ptr_null(json_get(o, "valid"));
	ck_assert_ptr_nonnull(json_get(o, "classes"));
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* status: the segment's bytes now and at start, the classes; stats: the
 * pool's totals. */
START_TEST(test_status_and_stats)
{
	struct hub_proc h;
	json_object *o, *cls, *pool;
	struct stat st;
	char *out;

	hub_start_up(&h, NULL, NULL, NULL);
	ck_assert_int_eq(hubctl(&h, &out, "-j", "status", (char *)NULL), 0);
	o = parse_out(out);
	free(out);
	ck_assert_uint_gt(u64(o, "segment_bytes"), 0);
	ck_assert_uint_eq(u64(o, "segment_bytes"), u64(o, "segment_initial_bytes"));
	ck_assert_int_eq(stat(harness_path("no-segment"), &st), 0);
	ck_assert_uint_eq(u64(o, "segment_bytes"), (uint64_t)st.st_size);
	cls = json_get(o, "pool_classes");
	ck_assert(json_object_is_type(cls, json_type_array));
	ck_assert_int_eq(json_object_array_length(cls), 5);
	ck_assert_uint_eq(u64(json_object_array_get_idx(cls, 1), "slot_size"), 16384);
	ck_assert_uint_eq(u64(json_object_array_get_idx(cls, 1), "slots_per_extent"), 64);
	ck_assert_uint_eq(u64(json_object_array_get_idx(cls, 1), "extents"), 1);
	json_object_put(o);
	ck_assert_int_eq(hubctl(&h, &out, "status", (char *)NULL), 0);
	ck_assert_msg(strstr(out, "segment_bytes") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "1.0 KiB x 256 x 1, 16.0 KiB x 64 x 1") != NULL, "%s", out);
	free(out);

	ck_assert_int_eq(hubctl(&h, &out, "-j", "stats", (char *)NULL), 0);
	o = parse_out(out);
	free(out);
	pool = json_get(o, "pool");
	ck_assert_ptr_nonnull(pool);
	(void)u64(pool, "allocations");
	(void)u64(pool, "frees");
	(void)u64(pool, "waits");
	(void)u64(pool, "errors");
	(void)u64(pool, "reclaimed");
	json_object_put(o);
	ck_assert_int_eq(hubctl(&h, &out, "stats", (char *)NULL), 0);
	ck_assert_msg(strstr(out, "shared pool: 0 allocations") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* r[shm.varslot.extent-layout]: inspect reads a live hub's pool read-only
 * and finds nothing wrong. */
START_TEST(test_inspect_live)
{
	struct hub_proc h;
	json_object *o, *vp;
	char *out;
	int rc;

	hub_start_up(&h, NULL, ECHO, "echo");
	rc = hubctl(&h, &out, "inspect", harness_path("no-segment"), (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "shared pool:") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "pool class 0 extent 0") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "pool class 4 extent 0") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "PROBLEM") == NULL, "%s", out);
	ck_assert_msg(strstr(out, "invariants: ok") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "-j", "inspect", harness_path("no-segment"), (char *)NULL);
	ck_assert_int_eq(rc, 0);
	o = parse_out(out);
	free(out);
	vp = json_get(o, "pool");
	ck_assert_ptr_nonnull(vp);
	ck_assert_int_eq(json_object_array_length(json_get(vp, "classes")), 5);
	ck_assert_uint_eq(u64(json_object_array_get_idx(json_get(vp, "classes"), 0), "slots"),
			  256);
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* A small segment of our own, made with hubd's code: max_guests 2, two
 * classes. */
static void
make_segment(const char *path, struct hp_segment *seg)
{
	struct hp_params p;
	const char *why = NULL;
	int rc;

	hp_params_default(&p);
	p.max_guests = 2;
	p.slots_per_guest = 4;
	p.slot_size = 4096;
	p.max_payload_size = 4092;
	memset(&p.var, 0, sizeof(p.var));
	p.var.nclasses = 2;
	p.var.max_extents = 4;
	p.var.cls[0].slot_size = 1024;
	p.var.cls[0].count = 4;
	p.var.cls[1].slot_size = 4096;
	p.var.cls[1].count = 2;
	(void)path;
	rc = hp_segment_create(seg, &p, 0, HP_FEAT_VARSLOT, "hub-test", &why);
	ck_assert_msg(rc == 0, "create %s: %s", path, why ? why : "?");
}

/* r[shm.varslot.extents]: a class grown beyond the segment's size is
 * mapped read-only by inspect, the file still hubd's layout; a scribbled
 * list head is named as a "pool:" problem (exit 1). */
START_TEST(test_inspect_grown_and_scribbled)
{
	const char *path = harness_shm_path("grown");
	struct hp_segment seg;
	struct hub_proc h;	/* only for hubctl()'s socket argument */
	json_object *o, *c0;
	char *out;
	int rc;

	memset(&h, 0, sizeof(h));
	snprintf(h.sock, sizeof(h.sock), "%s", harness_path("none.sock"));
	make_segment(path, &seg);
	ck_assert_int_eq(hp_var_grow(&seg.var, 0), 0);
	hp_segment_close(&seg);

	rc = hubctl(&h, &out, "inspect", path, (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "hubd layout") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "pool class 0 extent 1") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "-j", "inspect", path, (char *)NULL);
	ck_assert_int_eq(rc, 0);
	o = parse_out(out);
	free(out);
	c0 = json_object_array_get_idx(json_get(json_get(o, "pool"), "classes"), 0);
	ck_assert_uint_eq(u64(c0, "extents"), 2);
	ck_assert_uint_eq(u64(c0, "slots"), 8);
	ck_assert_uint_eq(u64(c0, "free"), 8);
	json_object_put(o);

	scribble_head(path, 0, 1000);
	rc = hubctl(&h, &out, "inspect", path, (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "PROBLEM: pool: class 0: free list link out of range") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "invariants: broken") != NULL, "%s", out);
	free(out);
	unlink(path);
}
END_TEST

/* r[shm.varslot.freelist]: a list head scribbled on a live hub: validate
 * names it and exits 1, then the sweeper rebuilds the list and validate
 * is clean again. */
START_TEST(test_validate_scribbled_then_rebuilt)
{
	struct hub_proc h;
	json_object *o, *c0;
	char *out;
	int rc = -1;

	hub_start_up(&h, NULL, NULL, NULL);
	rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d before scribbling: %s", rc, out);
	free(out);

	scribble_head(harness_path("no-segment"), 0, 0x00ABCDEF);
	rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "PROBLEM: class 0: free list link out of range") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "validate: broken") != NULL, "%s", out);
	free(out);

	/* the sweeper runs every 250 ms: a few seconds at most */
	for (int i = 0; i < 100; i++) {
		rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
		free(out);
		if (rc == 0)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(rc == 0, "still broken: %s", hub_log_tail(&h));
	ck_assert_int_eq(hubctl(&h, &out, "-j", "pool", (char *)NULL), 0);
	o = parse_out(out);
	free(out);
	c0 = json_object_array_get_idx(json_get(o, "classes"), 0);
	ck_assert_uint_ge(u64(c0, "rebuilds"), 1);
	ck_assert_uint_eq(u64(c0, "free"), 256);
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* Whether every class's figure key (hubctl -j pool) is all its slots. */
static int
every_class(struct hub_proc *h, const char *key)
{
	json_object *o, *classes;
	char *out;
	int all = 1;

	if (hubctl(h, &out, "-j", "pool", (char *)NULL) != 0) {
		free(out);
		return 0;
	}
	o = parse_out(out);
	free(out);
	classes = json_get(o, "classes");
	for (size_t i = 0; i < json_object_array_length(classes); i++) {
		json_object *c = json_object_array_get_idx(classes, i);

		all = all && u64(c, key) == u64(c, "slots");
	}
	json_object_put(o);
	return all;
}

static int
wait_every_class(struct hub_proc *h, const char *key, int timeout_ms)
{
	for (int waited = 0;; waited += 50) {
		if (every_class(h, key))
			return 1;
		if (waited >= timeout_ms)
			return 0;
		sleep_ms(50);
	}
}

static int
log_has(struct hub_proc *h, const char *text, int timeout_ms)
{
	for (int waited = 0;; waited += 50) {
		char *log = hub_log(h);
		int found = log != NULL && strstr(log, text) != NULL;

		free(log);
		if (found || waited >= timeout_ms)
			return found;
		sleep_ms(50);
	}
}

/* hubctl pool --validate until it exits 0, for up to 5 s (a few sweeps;
 * a slot caught moving is seen once only); its last exit status. */
static int
validate_clean(struct hub_proc *h)
{
	char *out;
	int rc = -1;

	for (int i = 0; i < 100; i++) {
		rc = hubctl(h, &out, "pool", "--validate", (char *)NULL);
		free(out);
		if (rc == 0)
			break;
		sleep_ms(50);
	}
	return rc;
}

/* r[shm.varslot.ownership]: a guest takes every slot and marks each the
 * host's (owner 0). With the sweeper slow, validate on the live hub names
 * them (hubd's record of its own slots does not hold them) and exits 1;
 * when the guest dies its recovery returns them, the log saying why. */
START_TEST(test_forged_host_slots_named_then_returned)
{
	struct hub_proc h;
	char *out, *log;
	int rc, pid;

	hub_start_up(&h, NULL, "[pool]\nmax_extents = 1\nsweep_interval = 60s\n"
		     BREAKER "forgehost\n", "breaker");
	ck_assert_msg(wait_every_class(&h, "in_use", 5000), "not every slot taken: %s",
		      hub_log_tail(&h));
	rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "PROBLEM: class 0: slot 0 is held as the host's, but the host "
			     "does not hold it") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "PROBLEM: class 4: slot 0 is held as the host's") != NULL, "%s",
		      out);
	ck_assert_msg(strstr(out, "validate: broken") != NULL, "%s", out);
	free(out);

	pid = hub_peer_int(&h, "breaker", "pid");
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	/* at its death, long before the sweeper's first run */
	ck_assert_msg(wait_every_class(&h, "free", 5000), "%s", hub_log_tail(&h));
	ck_assert_msg(log_has(&h, "pool: " DEFAULT_SLOTS " slots returned: " DEFAULT_SLOTS
			      " forged as the host's (a guest scribbled the pool)", 2000), "%s",
		      hub_log_tail(&h));
	/* none were the dead guest's own */
	log = hub_log(&h);
	ck_assert_msg(strstr(log, "slots of peer") == NULL, "%s", hub_log_tail(&h));
	free(log);
	ck_assert_int_eq(validate_clean(&h), 0);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* The same with the sweeper at its pace (250 ms) and the guest alive: in
 * a few sweeps every slot is free and validate clean; the log says they
 * were forged, not that a guest went, and the guest lives on. */
START_TEST(test_forged_host_slots_swept)
{
	struct hub_proc h;
	json_object *o;
	char *out, *log;

	hub_start_up(&h, NULL, "[pool]\nmax_extents = 1\n" BREAKER "forgehost\n", "breaker");
	ck_assert_msg(log_has(&h, "forged as the host's (a guest scribbled the pool)", 5000),
		      "%s", hub_log_tail(&h));
	ck_assert_msg(wait_every_class(&h, "free", 5000), "%s", hub_log_tail(&h));
	ck_assert_int_eq(validate_clean(&h), 0);
	ck_assert_int_eq(hubctl(&h, &out, "-j", "pool", (char *)NULL), 0);
	o = parse_out(out);
	free(out);
	ck_assert_uint_ge(u64(json_object_array_get_idx(json_get(o, "classes"), 0), "reclaimed"),
			  256);
	json_object_put(o);
	log = hub_log(&h);
	ck_assert_msg(strstr(log, "of guests that are gone") == NULL &&
		      strstr(log, "slots of peer") == NULL, "%s", hub_log_tail(&h));
	free(log);
	ck_assert_str_eq(hub_peer_state(&h, "breaker"), "up");
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* r[shm.varslot.freelist]: the only slot of the default's 32 MiB class
 * linked to itself loses no slot off the list, yet the list is broken:
 * the sweeper rebuilds it within a few sweeps. */
START_TEST(test_one_slot_cycle_rebuilt)
{
	struct hub_proc h;
	json_object *o, *c4;
	char *out;

	hub_start_up(&h, NULL, BREAKER "cycle --class=4\n", "breaker");
	ck_assert_msg(log_has(&h, "pool: class 4 (33554432 bytes): its free list was broken; "
			      "rebuilt", 5000), "%s", hub_log_tail(&h));
	ck_assert_int_eq(validate_clean(&h), 0);
	ck_assert_int_eq(hubctl(&h, &out, "-j", "pool", (char *)NULL), 0);
	o = parse_out(out);
	free(out);
	c4 = json_object_array_get_idx(json_get(o, "classes"), 4);
	ck_assert_uint_eq(u64(c4, "slots"), 1);
	ck_assert_uint_eq(u64(c4, "free"), 1);
	ck_assert_uint_ge(u64(c4, "rebuilds"), 1);
	ck_assert_uint_ge(u64(c4, "bad_links"), 1);
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* A hub without a shared pool: hubctl pool says so and exits 1. Needs the
 * [pool] section's parser. */
START_TEST(test_no_pool)
{
	struct hub_proc h;
	json_object *o;
	char *out;
	int rc;

	hub_start_up(&h, NULL, "[pool]\nclasses = none\n", NULL);
	rc = hubctl(&h, &out, "pool", (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	free(out);
	rc = hubctl(&h, &out, "-j", "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	o = parse_out(out);
	free(out);
	ck_assert(!json_object_get_boolean(json_get(o, "ok")));
	ck_assert_str_eq(json_object_get_string(json_get(o, "error")), "no shared pool in this hub");
	json_object_put(o);
	/* status: no classes, the segment as created */
	ck_assert_int_eq(hubctl(&h, &out, "-j", "status", (char *)NULL), 0);
	o = parse_out(out);
	free(out);
	ck_assert_int_eq(json_object_array_length(json_get(o, "pool_classes")), 0);
	ck_assert_uint_eq(u64(o, "segment_bytes"), u64(o, "segment_initial_bytes"));
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

Suite *suite_poolctl(void);
Suite *
suite_poolctl(void)
{
	Suite *s = suite_create("poolctl");
	TCase *tc = tcase_create("poolctl");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pool_lists_default_classes);
	tcase_add_test(tc, test_pool_validate_clean);
	tcase_add_test(tc, test_pool_json);
	tcase_add_test(tc, test_status_and_stats);
	tcase_add_test(tc, test_inspect_live);
	tcase_add_test(tc, test_inspect_grown_and_scribbled);
	tcase_add_test(tc, test_validate_scribbled_then_rebuilt);
	tcase_add_test(tc, test_no_pool);
	tcase_add_test(tc, test_forged_host_slots_named_then_returned);
	tcase_add_test(tc, test_forged_host_slots_swept);
	tcase_add_test(tc, test_one_slot_cycle_rebuilt);
	suite_add_tcase(s, tc);
	return s;
}
