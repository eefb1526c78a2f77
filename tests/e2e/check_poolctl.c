/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* hubctl pool [--validate], the pool figures of status and stats, and
 * hubctl inspect and dump of each zone's pool, against a real hubd: what
 * they show, what validate and inspect find in a scribbled pool (live,
 * through the pool's fd, or in a dump's copy), and that the sweeper
 * repairs it, when a test scribbles or a guest (poolbreaker). */
#include <check.h>
#include <errno.h>
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
/* a list head naming no slot of any class */
#define BAD_HEAD	0x00ABCDEFu

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

/* The entry of list (an array of objects) whose "name" is name. */
static json_object *
named(json_object *list, const char *name)
{
	ck_assert_msg(json_object_is_type(list, json_type_array), "not a list: %s",
		      json_object_to_json_string(list));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *e = json_object_array_get_idx(list, i);

		if (strcmp(json_object_get_string(json_get(e, "name")), name) == 0)
			return e;
	}
	ck_abort_msg("no %s in %s", name, json_object_to_json_string(list));
	return NULL;
}

/* hubctl -j pool's classes of zone (a new reference to the answer in
 * *answer, to put). */
static json_object *
zone_classes(struct hub_proc *h, const char *zone, json_object **answer)
{
	char *out;
	int rc = hubctl(h, &out, "-j", "pool", (char *)NULL);

	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	*answer = parse_out(out);
	free(out);
	return json_get(named(json_get(*answer, "zones"), zone), "classes");
}

/* The header of class c of the pool in fd (a zone's memfd from hubd, or
 * a dump's copy), mapped read-write for scribbling; *map to unmap
 * (HP_VAR_EXTENT_ALIGN bytes: the pool's headers start its file). */
static struct hp_var_class *
map_class(int fd, uint32_t c, void **map)
{
	uint8_t *p;

	_Static_assert(sizeof(struct hp_var_header) + HP_VAR_MAX_CLASSES *
		       sizeof(struct hp_var_class) <= HP_VAR_EXTENT_ALIGN, "headers in a page");
	ck_assert_int_ge(fd, 0);
	p = mmap(NULL, HP_VAR_EXTENT_ALIGN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_msg(p != MAP_FAILED, "mmap: %s", strerror(errno));
	ck_assert_uint_gt(((struct hp_var_header *)(void *)p)->nclasses, c);
	*map = p;
	return (struct hp_var_class *)(void *)(p + sizeof(struct hp_var_header) +
					       c * sizeof(struct hp_var_class));
}

/* r[shm.varslot.freelist]: class c's free list head naming slot bad, its
 * tag kept (CAS: hubd may pop meanwhile). */
static void
scribble_head(int fd, uint32_t c, uint32_t bad)
{
	void *map;
	struct hp_var_class *k = map_class(fd, c, &map);
	uint64_t head = hp_load_relaxed_u64(&k->free_head);

	while (!hp_cas_u64(&k->free_head, &head, (head & 0xFFFFFFFF00000000ull) | bad))
		;
	munmap(map, HP_VAR_EXTENT_ALIGN);
}

/* r[shm.varslot.classes]: a default hub lists its 5 classes, smallest
 * first, in a table per zone. */
START_TEST(test_pool_lists_default_classes)
{
	static const char *const sizes[] = { "1.0 KiB", "16.0 KiB", "256.0 KiB", "4.0 MiB",
		"32.0 MiB" };
	struct hub_proc h;
	char *out, line[32];
	int rc;

	hub_start_up(&h, NULL, ECHO, "echo");
	rc = hubctl(&h, &out, "pool", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "zone echo: 1 member (echo), ") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "CLASS") != NULL && strstr(out, "ALLOCS") != NULL, "%s", out);
	for (int c = 0; c < 5; c++) {
		snprintf(line, sizeof(line), "\n%5d %9s ", c, sizes[c]);
		ck_assert_msg(strstr(out, line) != NULL, "no class %d of %s in:\n%s", c, sizes[c],
			      out);
	}
	snprintf(line, sizeof(line), "\n%5d ", 5);
	ck_assert_msg(strstr(out, line) == NULL, "a 6th class:\n%s", out);
	ck_assert_msg(strstr(out, "0 slots held too long") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "1 zone, each pool ") != NULL, "%s", out);
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

/* The JSON answer: every zone, each with every class and every figure,
 * consistent with itself; the calls' slots counted; the bytes; and
 * validate's verdict. */
START_TEST(test_pool_json)
{
	struct hub_proc h;
	json_object *o, *classes, *zones, *z;
	uint64_t allocs = 0, frees = 0;
	char *out, big[3001];
	int rc;

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	hub_start_up(&h, NULL, ECHO "[guest kv]\nexec = @/guests/kv\nzone = shared\n"
		     "[guest counter]\nexec = @/guests/counter\nzone = shared\n",
		     "echo,kv,counter");
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
	ck_assert_uint_eq(u64(o, "max_extents"), 4);
	ck_assert_uint_gt(u64(o, "initial_bytes"), 0);
	zones = json_get(o, "zones");
	ck_assert_int_eq(json_object_array_length(zones), 2);
	ck_assert_uint_eq(u64(named(zones, "shared"), "members"), 2);
	/* which: the guests of the config in it */
	ck_assert_str_eq(json_object_to_json_string_ext(json_get(named(zones, "shared"), "guests"),
							JSON_C_TO_STRING_PLAIN), "[\"kv\",\"counter\"]");
	z = named(zones, "echo");
	ck_assert_uint_eq(u64(z, "members"), 1);
	ck_assert_uint_ge(u64(z, "bytes"), u64(o, "initial_bytes"));
	ck_assert_uint_eq(u64(z, "stuck"), 0);
	classes = json_get(z, "classes");
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
	/* r[shm.varslot.selection]: a 3000-byte payload each way took slots
	 * of echo's pool */
	ck_assert_uint_ge(allocs, 2);
	ck_assert_uint_ge(frees, 2);
	json_object_put(o);
	/* without --validate: no verdict */
	rc = hubctl(&h, &out, "-j", "pool", (char *)NULL);
	ck_assert_int_eq(rc, 0);
	o = parse_out(out);
	free(out);
	ck_assert_ptr_null(json_get(o, "valid"));
	ck_assert_ptr_nonnull(json_get(named(json_get(o, "zones"), "shared"), "classes"));
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* The bytes of the file behind fd (a domain or a pool from hubd); the
 * fd closed. */
static uint64_t
fd_bytes(int fd)
{
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	return (uint64_t)st.st_size;
}

/* hubctl pool says who holds a zone's slots, by the sweeper's count: a
 * guest that takes 8 slots of class 0 and keeps them is named with them,
 * its zone mate with none, hubd with none (it said only how many slots
 * were in use, not whose). */
START_TEST(test_pool_names_who_holds_what)
{
	struct hub_proc h;
	json_object *o, *z;
	char *out;
	int rc, held = 0;

	hub_start_up(&h, "[pool]\nsweep_interval = 50ms\n",
		     ECHO "zone = z\n" BREAKER "hold\nzone = z\n", "echo,breaker");
	for (int i = 0; i < 200 && held != 8; i++) {
		if (i > 0)
			sleep_ms(50);
		o = hub_request(&h, "{\"cmd\":\"pool\"}", NULL);
		ck_assert_ptr_nonnull(o);
		z = named(json_get(o, "zones"), "z");
		held = (int)u64(named(json_get(z, "held"), "breaker"), "slots");
		json_object_put(o);
	}
	ck_assert_msg(held == 8, "breaker holds %d slots by hubctl pool; %s", held,
		      hub_log_tail(&h));
	o = hub_request(&h, "{\"cmd\":\"pool\"}", NULL);
	z = named(json_get(o, "zones"), "z");
	ck_assert_uint_eq(u64(named(json_get(z, "held"), "breaker"), "bytes"), 8 * 1024);
	ck_assert_uint_eq(u64(named(json_get(z, "held"), "echo"), "slots"), 0);
	ck_assert_uint_eq(u64(json_get(z, "hubd_held"), "slots"), 0);
	json_object_put(o);
	rc = hubctl(&h, &out, "pool", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, "held: echo 0 slots, 0 B; breaker 8 slots, "
					"8.0 KiB; hubd itself 0 slots, 0 B\n") != NULL,
		      "exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* status: the control socket, the bytes the hub maps (each domain and
 * each zone's pool), the zones, the classes; stats: the pools' totals. */
START_TEST(test_status_and_stats)
{
	struct hub_proc h;
	json_object *o, *cls, *pool;
	uint64_t mapped;
	char *out;

	hub_start_up(&h, NULL, ECHO, "echo");
	hubctl_ok(&h, &out, "-j", "status", (char *)NULL);
	o = parse_out(out);
	free(out);
	ck_assert_str_eq(json_object_get_string(json_get(o, "control")), h.sock);
	ck_assert_uint_eq(u64(o, "zones"), 1);
	/* its domain whole, its pool as far as it has grown (the pool's file
	 * is as long as it may grow: sparse, and sealed at that) */
	pool = hub_request(&h, "{\"cmd\":\"pool\"}", NULL);
	ck_assert_ptr_nonnull(pool);
	mapped = u64(json_object_array_get_idx(json_get(pool, "zones"), 0), "bytes");
	json_object_put(pool);
	ck_assert_uint_lt(mapped, fd_bytes(hub_domain_fd(&h, "pool", "echo")));
	mapped += fd_bytes(hub_domain_fd(&h, "guest", "echo"));
	ck_assert_uint_eq(u64(o, "mapped_bytes"), mapped);
	ck_assert_ptr_null(json_get(o, "segment_bytes"));
	cls = json_get(o, "pool_classes");
	ck_assert(json_object_is_type(cls, json_type_array));
	ck_assert_int_eq(json_object_array_length(cls), 5);
	ck_assert_uint_eq(u64(json_object_array_get_idx(cls, 1), "slot_size"), 16384);
	ck_assert_uint_eq(u64(json_object_array_get_idx(cls, 1), "slots_per_extent"), 64);
	json_object_put(o);
	hubctl_ok(&h, &out, "status", (char *)NULL);
	ck_assert_msg(strstr(out, "mapped_bytes") != NULL && strstr(out, " MiB\n") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "\nzones                  1\n") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\npool_classes           1.0 KiB x 256, 16.0 KiB x 64, "
			     "256.0 KiB x 16, 4.0 MiB x 2, 32.0 MiB x 1\n") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "segment") == NULL, "%s", out);
	free(out);

	hubctl_ok(&h, &out, "-j", "stats", (char *)NULL);
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
	hubctl_ok(&h, &out, "stats", (char *)NULL);
	ck_assert_msg(strstr(out, "shared pool: ") != NULL && strstr(out, " allocations") != NULL,
		      "%s", out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

#define ZONED	ECHO "[guest kv]\nexec = @/guests/kv\nzone = shared\n" \
		"[guest counter]\nexec = @/guests/counter\nzone = shared\n"

/* r[shm.varslot.extent-layout] r[shm.file.attach]: inspect, given no
 * file, reads each guest's domain and each zone's pool of the live hub
 * read-only, through the fds hubd passes, and finds nothing wrong. */
START_TEST(test_inspect_live)
{
	static const char *const guests[] = { "echo", "kv", "counter" };
	struct hub_proc h;
	json_object *o, *doms, *pools, *p;
	char *out;
	int rc;

	hub_start_up(&h, NULL, ZONED, "echo,kv,counter");
	rc = hubctl(&h, &out, "inspect", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "3 guests' domains, 2 pools, 16 guests at most") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, ", zone echo): ") != NULL && strstr(out, ", zone shared): "),
		      "%s", out);
	ck_assert_msg(strstr(out, "hubd layout") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\npool shared: ") != NULL && strstr(out, "\npool echo: "),
		      "%s", out);
	ck_assert_msg(strstr(out, "pool class 0 extent 0") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "pool class 4 extent 0") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "PROBLEM") == NULL, "%s", out);
	ck_assert_msg(strstr(out, "invariants: ok") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "-j", "inspect", (char *)NULL);
	ck_assert_int_eq(rc, 0);
	o = parse_out(out);
	free(out);
	ck_assert(json_object_get_boolean(json_get(o, "valid")));
	ck_assert_int_eq(json_object_array_length(json_get(o, "problems")), 0);
	ck_assert_uint_eq(u64(o, "max_guests"), 16);
	doms = json_get(o, "domains");
	ck_assert_int_eq(json_object_array_length(doms), 3);
	for (size_t i = 0; i < 3; i++) {
		json_object *d = named(doms, guests[i]), *peers = json_get(d, "peers");
		uint64_t id = u64(d, "peer_id");

		ck_assert_int_eq(hub_peer_int(&h, guests[i], "peer_id"), (int)id);
		ck_assert_str_eq(json_object_get_string(json_get(d, "layout")), "hubd");
		ck_assert_str_eq(json_object_get_string(json_get(d, "zone")),
				 i == 0 ? "echo" : "shared");
		/* its own entry alone: the others have no areas in its domain */
		ck_assert_int_eq(json_object_array_length(peers), 1);
		ck_assert_uint_eq(u64(json_object_array_get_idx(peers, 0), "peer_id"), id);
		ck_assert_str_eq(json_object_get_string(json_get(json_object_array_get_idx(peers, 0),
								 "state")), "attached");
		ck_assert_int_eq(json_object_array_length(json_get(d, "problems")), 0);
	}
	pools = json_get(o, "pools");
	ck_assert_int_eq(json_object_array_length(pools), 2);
	p = named(pools, "echo");
	ck_assert_int_eq(json_object_array_length(json_get(p, "classes")), 5);
	ck_assert_uint_eq(u64(json_object_array_get_idx(json_get(p, "classes"), 0), "slots"), 256);
	/* as far as it has grown: what hubd's pool says */
	{
		json_object *z = hub_request(&h, "{\"cmd\":\"pool\"}", NULL), *e = NULL;

		ck_assert_ptr_nonnull(z);
		for (size_t k = 0; k < json_object_array_length(json_get(z, "zones")); k++) {
			e = json_object_array_get_idx(json_get(z, "zones"), k);
			if (strcmp(json_object_get_string(json_get(e, "name")), "echo") == 0)
				break;
		}
		ck_assert_uint_eq(u64(p, "bytes"), u64(e, "bytes"));
		json_object_put(z);
	}
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* r[shm.varslot.extents]: a class grown by an extent (a guest took all
 * of it), dumped; with the hub gone inspect reads the dump's files, the
 * extent among the areas; a list head scribbled in the dump's copy is
 * named as a problem of that pool (exit 1). */
/* A class that grew, once no slot of it was taken for release_after,
 * gives its grown extent's memory back: hubctl pool says how much, the
 * log says so, and a payload in that class goes through again. */
START_TEST(test_grown_extents_given_back)
{
	struct hub_proc h;
	json_object *a = NULL, *c0, *z = NULL;
	uint64_t grown_mem = 0, released = 0, mem = 0;
	char *out, *log;
	int rc, i;

	hub_start_up(&h, "[pool]\nclasses = 16K x 4\nsweep_interval = 50ms\n"
		     "release_after = 300ms\n", ECHO "zone = z\n" BREAKER "hold\nzone = z\n"
		     "[guest prober]\nexec = @/tests/guests/prober\nzone = z\nlanes = no\n",
		     "echo,prober");
	/* it takes 8 slots: the class grows to two extents */
	for (i = 0; i < 200; i++) {
		c0 = json_object_array_get_idx(zone_classes(&h, "z", &a), 0);
		rc = u64(c0, "extents") >= 2;
		if (rc)
			grown_mem = u64(named(json_get(a, "zones"), "z"), "memory_bytes");
		json_object_put(a);
		if (rc)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(rc, "class 0 never grew: %s", hub_log_tail(&h));
	rc = hubctl(&h, &out, "stop", "breaker", (char *)NULL);
	free(out);
	for (i = 0; i < 600 && released < 3 * 16384; i++) {
		char *o = NULL;

		ck_assert_int_eq(hubctl(&h, &o, "-j", "pool", (char *)NULL), 0);
		a = parse_out(o);
		free(o);
		z = named(json_get(a, "zones"), "z");
		released = u64(z, "released_bytes");
		mem = u64(z, "memory_bytes");
		if (released == 0 && mem > grown_mem)
			grown_mem = mem;	/* the most it held */
		json_object_put(a);
		sleep_ms(50);
	}
	/* the grown extent's 4 slots, less what shares a page with others */
	ck_assert_msg(released >= 3 * 16384,
		      "%llu bytes given back: %s", (unsigned long long)released, hub_log_tail(&h));
	ck_assert_msg(mem + released <= grown_mem, "%llu bytes in memory, %llu when grown",
		      (unsigned long long)mem, (unsigned long long)grown_mem);
	log = hub_log(&h);
	ck_assert_msg(strstr(log, "pool z: class 0 (16.0 KiB slots): ") != NULL &&
		      strstr(log, " given back to the system, no slot taken for ") != NULL,
		      "%s", hub_log_tail(&h));
	free(log);
	rc = hubctl(&h, &out, "pool", (char *)NULL);
	ck_assert_msg(rc == 0 && strstr(out, " given back)") != NULL, "%s", out);
	free(out);
	/* 8 calls at once, 10000 bytes each way: slots of both extents
	 * (the released one's pages come back zeroed) carry them again */
	rc = hubctl(&h, &out, "-t", "30", "call", "prober.burst", "8", "10000", (char *)NULL);
	ck_assert_msg(rc == 0 && strcmp(out, "8\n") == 0, "exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

START_TEST(test_dump_grown_then_scribbled)
{
	const char *dir = harness_path("dump"), *dom, *pool, *js;
	char dom_s[512], pool_s[512], js_s[512], *out;
	struct hub_proc h;
	json_object *o, *c0 = NULL, *a = NULL, *p;
	struct stat st;
	int rc, fd;

	hub_start_up(&h, "[pool]\nclasses = 1K x 4, 64K x 2\n",
		     ECHO "zone = z\n" BREAKER "hold\nzone = z\n", "echo");
	/* 4 slots of class 0, 2 of class 1, then it asks class 0 to grow */
	for (int i = 0; i < 100; i++) {
		c0 = json_object_array_get_idx(zone_classes(&h, "z", &a), 0);
		if (u64(c0, "extents") >= 2)
			break;
		json_object_put(a);
		a = NULL;
		sleep_ms(50);
	}
	ck_assert_msg(a != NULL, "class 0 never grew: %s", hub_log_tail(&h));
	json_object_put(a);
	/* its slots back: every one free */
	rc = hubctl(&h, &out, "stop", "breaker", (char *)NULL);
	free(out);
	for (int i = 0; i < 100; i++) {
		c0 = json_object_array_get_idx(zone_classes(&h, "z", &a), 0);
		rc = u64(c0, "free") == u64(c0, "slots");
		json_object_put(a);
		if (rc)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(rc, "slots still held: %s", hub_log_tail(&h));

	rc = hubctl(&h, &out, "dump", dir, (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "/echo.domain: guest echo, ") != NULL &&
		      strstr(out, "/z.pool: pool z, ") != NULL, "%s", out);
	/* each with what it takes on disk */
	ck_assert_msg(strstr(strstr(out, "/z.pool: pool z, "), " on disk, its zeros left as holes)\n") !=
		      NULL, "%s", out);
	free(out);
	snprintf(dom_s, sizeof(dom_s), "%s/echo.domain", dir);
	snprintf(pool_s, sizeof(pool_s), "%s/z.pool", dir);
	snprintf(js_s, sizeof(js_s), "%s/domains.json", dir);
	dom = dom_s;
	pool = pool_s;
	js = js_s;
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(stat(dom, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	/* a snapshot of all of it, its untouched zeros left as holes */
	ck_assert_uint_eq((uint64_t)st.st_size, fd_bytes(hub_domain_fd(&h, "guest", "echo")));
	ck_assert_uint_lt((uint64_t)st.st_blocks * 512, (uint64_t)st.st_size);
	ck_assert_int_eq(stat(pool, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(js, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	/* into a directory that holds anything: refused, nothing changed */
	rc = hubctl(&h, &out, "dump", dir, (char *)NULL);
	ck_assert_msg(rc == 2, "exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(stat(js, &st), 0);
	ck_assert_int_eq(hub_stop(&h), 0);

	/* the hub gone: the files alone (domains.json among them, as a
	 * shell's glob of the directory gives it, passed over) */
	rc = hubctl(&h, &out, "inspect", dom, js, pool, (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "guest echo (peer ") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "hubd layout") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "pool class 0 extent 1") != NULL, "%s", out);
	ck_assert_msg(strstr(out, " in the extents grown, ") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "invariants: ok") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "-j", "inspect", pool, (char *)NULL);	/* domains.json beside */
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	o = parse_out(out);
	free(out);
	ck_assert_int_eq(json_object_array_length(json_get(o, "domains")), 0);
	p = named(json_get(o, "pools"), "z");
	ck_assert_str_eq(json_object_get_string(json_get(p, "file")), pool);
	c0 = json_object_array_get_idx(json_get(p, "classes"), 0);
	ck_assert_uint_eq(u64(c0, "extents"), 2);
	ck_assert_uint_eq(u64(c0, "slots"), 8);
	ck_assert_uint_eq(u64(c0, "free"), 8);
	ck_assert_uint_ge(u64(c0, "allocs"), 4);
	json_object_put(o);

	fd = open(pool, O_RDWR | O_CLOEXEC);
	scribble_head(fd, 0, BAD_HEAD);
	close(fd);
	rc = hubctl(&h, &out, "inspect", dom, pool, (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "PROBLEM: pool z: class 0: free list link out of range") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "PROBLEM: guest") == NULL, "%s", out);
	ck_assert_msg(strstr(out, "invariants: broken") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "-j", "inspect", pool, (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	o = parse_out(out);
	free(out);
	ck_assert(!json_object_get_boolean(json_get(o, "valid")));
	ck_assert_int_ge(json_object_array_length(json_get(named(json_get(o, "pools"), "z"),
							   "problems")), 1);
	json_object_put(o);

	/* without domains.json, a pool takes max_guests from a domain given
	 * with it, and is not read without one */
	ck_assert_int_eq(unlink(js), 0);
	rc = hubctl(&h, &out, "inspect", pool, (char *)NULL);
	ck_assert_msg(rc == 2, "exit %d: %s", rc, out);
	free(out);
	rc = hubctl(&h, &out, "inspect", pool, dom, (char *)NULL);
	ck_assert_msg(rc == 1 && strstr(out, "PROBLEM: pool z: class 0: ") != NULL,
		      "exit %d: %s", rc, out);
	free(out);
	/* neither a domain nor a pool: the config */
	rc = hubctl(&h, &out, "inspect", h.conf, (char *)NULL);
	ck_assert_msg(rc == 2, "exit %d: %s", rc, out);
	free(out);
}
END_TEST

/* r[shm.varslot.freelist]: a list head scribbled on a live hub (through
 * the pool's fd, as a guest of the zone could): validate and inspect name
 * it and exit 1; then the sweeper (made quick by a reload) rebuilds the
 * list and both are clean again. */
START_TEST(test_validate_scribbled_then_rebuilt)
{
	struct hub_proc h;
	json_object *o, *c0;
	char *out, msgs[1024];
	int rc = -1, fd;

	/* no sweep before the reload: what validate sees stays to be seen */
	hub_start_up(&h, "[pool]\nsweep_interval = 600s\n", ECHO, "echo");
	rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d before scribbling: %s", rc, out);
	free(out);

	fd = hub_domain_fd(&h, "pool", "echo");
	scribble_head(fd, 0, BAD_HEAD);
	close(fd);
	rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "PROBLEM: pool echo: class 0: free list link out of range") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "validate: broken") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "inspect", (char *)NULL);
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "PROBLEM: pool echo: class 0: free list link out of range") != NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "invariants: broken") != NULL, "%s", out);
	free(out);

	ck_assert_int_eq(hub_write_conf(&h, "[pool]\nsweep_interval = 50ms\n", ECHO), 0);
	ck_assert_msg(hub_reload(&h, msgs, sizeof(msgs)), "%s", msgs);
	for (int i = 0; i < 100; i++) {
		rc = hubctl(&h, &out, "pool", "--validate", (char *)NULL);
		free(out);
		if (rc == 0)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(rc == 0, "still broken: %s", hub_log_tail(&h));
	c0 = json_object_array_get_idx(zone_classes(&h, "echo", &o), 0);
	ck_assert_uint_ge(u64(c0, "rebuilds"), 1);
	ck_assert_uint_eq(u64(c0, "free"), 256);
	json_object_put(o);
	rc = hubctl(&h, &out, "inspect", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* Whether every class's figure key (hubctl -j pool), in every zone, is
 * all its slots. */
static int
every_class(struct hub_proc *h, const char *key)
{
	json_object *o, *zones;
	char *out;
	int all = 1;

	if (hubctl(h, &out, "-j", "pool", (char *)NULL) != 0) {
		free(out);
		return 0;
	}
	o = parse_out(out);
	free(out);
	zones = json_get(o, "zones");
	for (size_t z = 0; z < json_object_array_length(zones); z++) {
		json_object *classes = json_get(json_object_array_get_idx(zones, z), "classes");

		for (size_t i = 0; i < json_object_array_length(classes); i++) {
			json_object *c = json_object_array_get_idx(classes, i);

			all = all && u64(c, key) == u64(c, "slots");
		}
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
	ck_assert_msg(strstr(out, "PROBLEM: pool breaker: class 0: slot 0 is held as the host's, "
			     "but the host "
			     "does not hold it") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "PROBLEM: pool breaker: class 4: slot 0 is held as the "
			     "host's") != NULL, "%s",
		      out);
	ck_assert_msg(strstr(out, "validate: broken") != NULL, "%s", out);
	free(out);

	pid = hub_peer_int(&h, "breaker", "pid");
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	/* at its death, long before the sweeper's first run */
	ck_assert_msg(wait_every_class(&h, "free", 5000), "%s", hub_log_tail(&h));
	ck_assert_msg(hub_log_wait(&h, "pool breaker: " DEFAULT_SLOTS " slots returned: " DEFAULT_SLOTS
			      " forged as the host's (a guest scribbled the pool)", 2000), "%s",
		      hub_log_tail(&h));
	/* none were the dead guest's own */
	log = hub_log(&h);
	ck_assert_msg(strstr(log, "of guest breaker returned") == NULL, "%s", hub_log_tail(&h));
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
	char *log;

	hub_start_up(&h, NULL, "[pool]\nmax_extents = 1\n" BREAKER "forgehost\n", "breaker");
	ck_assert_msg(hub_log_wait(&h, "forged as the host's (a guest scribbled the pool)", 5000),
		      "%s", hub_log_tail(&h));
	ck_assert_msg(wait_every_class(&h, "free", 5000), "%s", hub_log_tail(&h));
	ck_assert_int_eq(validate_clean(&h), 0);
	ck_assert_uint_ge(u64(json_object_array_get_idx(zone_classes(&h, "breaker", &o), 0),
			      "reclaimed"), 256);
	json_object_put(o);
	log = hub_log(&h);
	ck_assert_msg(strstr(log, "of guests that are gone") == NULL &&
		      strstr(log, "of guest breaker returned") == NULL, "%s", hub_log_tail(&h));
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

	hub_start_up(&h, NULL, BREAKER "cycle --class=4\n", "breaker");
	ck_assert_msg(hub_log_wait(&h, "pool breaker: class 4 (33554432 bytes): its free list was broken; "
			      "rebuilt", 5000), "%s", hub_log_tail(&h));
	ck_assert_int_eq(validate_clean(&h), 0);
	c4 = json_object_array_get_idx(zone_classes(&h, "breaker", &o), 4);
	ck_assert_uint_eq(u64(c4, "slots"), 1);
	ck_assert_uint_eq(u64(c4, "free"), 1);
	ck_assert_uint_ge(u64(c4, "rebuilds"), 1);
	ck_assert_uint_ge(u64(c4, "bad_links"), 1);
	json_object_put(o);
	ck_assert_int_eq(hub_stop(&h), 0);
}
END_TEST

/* A hub without a shared pool: hubctl pool says so and exits 1; status
 * has no classes and no zone; inspect reads the guest's domain alone.
 * Needs the [pool] section's parser. */
START_TEST(test_no_pool)
{
	struct hub_proc h;
	json_object *o;
	char *out;
	int rc;

	hub_start_up(&h, NULL, "[pool]\nclasses = none\n" ECHO, "echo");
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
	ck_assert_int_lt(hub_domain_fd(&h, "pool", "echo"), 0);
	hubctl_ok(&h, &out, "-j", "status", (char *)NULL);
	o = parse_out(out);
	free(out);
	ck_assert_int_eq(json_object_array_length(json_get(o, "pool_classes")), 0);
	ck_assert_uint_eq(u64(o, "zones"), 0);
	ck_assert_uint_eq(u64(o, "mapped_bytes"), fd_bytes(hub_domain_fd(&h, "guest", "echo")));
	json_object_put(o);
	hubctl_ok(&h, &out, "status", (char *)NULL);
	ck_assert_msg(strstr(out, "\npool_classes           none\n") != NULL, "%s", out);
	free(out);
	rc = hubctl(&h, &out, "-j", "inspect", (char *)NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	o = parse_out(out);
	free(out);
	ck_assert_int_eq(json_object_array_length(json_get(o, "domains")), 1);
	ck_assert_int_eq(json_object_array_length(json_get(o, "pools")), 0);
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
	tcase_add_test(tc, test_pool_names_who_holds_what);
	tcase_add_test(tc, test_status_and_stats);
	tcase_add_test(tc, test_grown_extents_given_back);
	tcase_add_test(tc, test_inspect_live);
	tcase_add_test(tc, test_dump_grown_then_scribbled);
	tcase_add_test(tc, test_validate_scribbled_then_rebuilt);
	tcase_add_test(tc, test_no_pool);
	tcase_add_test(tc, test_forged_host_slots_named_then_returned);
	tcase_add_test(tc, test_forged_host_slots_swept);
	tcase_add_test(tc, test_one_slot_cycle_rebuilt);
	suite_add_tcase(s, tc);
	return s;
}
