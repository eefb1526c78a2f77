/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The shared pools end to end: 1 MiB and 16 MiB payloads through kv and
 * between two guests, handed on without a copy inside a zone and copied
 * by hubd across zones; and guests that break the pool, which hubd
 * survives: ended where the damage names them, the free lists rebuilt
 * where it does not, a dead holder's slots returned. */
#include <check.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/segment.h"
#include "proto/varpool.h"
#include "proto/varpool_host.h"
#include "tests/e2e/harness.h"

/* These are the pools' tests: payloads go through hubd, not over a
 * direct lane of their own (lanes = no on prober, the caller; check_lanes.c
 * has the lanes' big payloads). */
#define GUESTS \
	"[guest echo]\nexec = @/guests/echo\n" \
	"[guest kv]\nexec = @/guests/kv\n" \
	"[guest prober]\nexec = @/tests/guests/prober\nlanes = no\n"
/* the three share a pool: payloads between them are not copied (prober
 * calls echo and kv) */
#define ZONED \
	"[guest echo]\nexec = @/guests/echo\nzone = big\n" \
	"[guest kv]\nexec = @/guests/kv\nzone = big\n" \
	"[guest prober]\nexec = @/tests/guests/prober\nzone = big\nlanes = no\n"

static struct hub_proc hub;

static void
expect_call(const char *method, const char *arg, const char *want)
{
	char *out = NULL;
	int rc = hubctl(&hub, &out, "-t", "60", "call", method, arg, (char *)NULL);

	ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "%s %s: rc %d: %s%s", method, arg, rc, out,
		      rc != 0 ? hub_log_tail(&hub) : "");
	free(out);
}

/* A zone's pool, read-only, as hubctl inspect maps it (from hubd). */
struct mapped {
	struct hp_varpool	var;
	void			*base;
	size_t			size;
	int			fd;
};

static void
map_pool(const char *zone, struct mapped *m)
{
	json_object *st = hub_request(&hub, "{\"cmd\":\"status\"}", NULL);
	const char *why = NULL;
	struct stat sb;

	ck_assert_ptr_nonnull(st);
	m->fd = hub_domain_fd(&hub, "pool", zone);
	ck_assert_msg(m->fd >= 0, "no pool %s", zone);
	ck_assert_int_eq(fstat(m->fd, &sb), 0);
	m->size = (size_t)sb.st_size;
	m->base = mmap(NULL, m->size, PROT_READ, MAP_SHARED, m->fd, 0);
	ck_assert(m->base != MAP_FAILED);
	ck_assert_msg(hp_var_attach(&m->var, m->base, m->size, m->fd, 0, 0,
				    (uint32_t)json_object_get_int(json_get(st, "max_guests")), 0,
				    &why) == 0, "attach: %s", why);
	json_object_put(st);
}

static void
unmap_pool(struct mapped *m)
{
	hp_var_close(&m->var);
	munmap(m->base, m->size);
	close(m->fd);
}

/* Big allocations in a pool by the host (peer 0) and by guests. */
static void
big_allocs(const char *zone, uint64_t *host, uint64_t *guests)
{
	struct mapped m;

	map_pool(zone, &m);
	*host = *guests = 0;
	for (uint32_t c = 0; c < m.var.nclasses; c++) {
		if (m.var.cls[c].slot_size < (256u << 10))
			continue;
		for (uint32_t p = 0; p <= m.var.max_guests; p++) {
			uint64_t n = m.var.stats[(uint64_t)p * m.var.nclasses + c].allocs;

			*(p == 0 ? host : guests) += n;
		}
	}
	unmap_pool(&m);
}

/* validate() on every pool finds nothing, within 3 s (a slot can be
 * caught moving, and a broken list waits for the next sweep). */
static void
expect_pool_valid(void)
{
	int valid = 0;

	for (int i = 0; i < 60 && !valid; i++) {
		json_object *o;

		if (i > 0)
			sleep_ms(50);
		o = hub_request(&hub, "{\"cmd\":\"pool\",\"validate\":true}", NULL);
		ck_assert_ptr_nonnull(o);
		valid = json_object_get_boolean(json_get(o, "valid"));
		json_object_put(o);
	}
	ck_assert_msg(valid, "the pool has problems: %s", hub_log_tail(&hub));
}

/* r[shm.varslot.selection] r[shm.varslot.shared] r[shm.varslot.extents]:
 * a 16 MiB payload fits a class of the shared pool; guest to guest inside
 * a zone it is handed on, so hubd allocates no slot of the large classes
 * itself (r[shm.varslot.ownership]: only owners change). */
START_TEST(test_big_payloads_in_a_zone)
{
	uint64_t host_big, guests_big;

	hub_start_up(&hub, NULL, ZONED, "echo,kv,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,kv.put,prober.bigkv") == 0);
	expect_call("prober.big", "1048576", "1048576\n");
	expect_call("prober.bigkv", "1048576", "1048576\n");
	expect_call("prober.big", "16777216", "16777216\n");
	expect_call("prober.bigkv", "16777216", "16777216\n");
	expect_call("prober.big", "100", "100\n");
	big_allocs("big", &host_big, &guests_big);
	ck_assert_uint_eq(host_big, 0);
	/* four big payloads each way at least: calls and answers */
	ck_assert_uint_ge(guests_big, 8);
	ck_assert_int_lt(hub_domain_fd(&hub, "pool", "kv"), 0);	/* no pool of its own */
	ck_assert_int_lt(hub_domain_fd(&hub, "pool", "echo"), 0);
	expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* With the default config each guest is a zone of its own: a big payload
 * from prober to kv is copied by hubd into kv's pool (a slot hubd
 * allocates there), so neither reads the other's memory. */
START_TEST(test_big_payloads_across_zones)
{
	uint64_t host_big, guests_big;

	hub_start_up(&hub, NULL, GUESTS, "echo,kv,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,kv.put,prober.bigkv") == 0);
	expect_call("prober.bigkv", "1048576", "1048576\n");
	expect_call("prober.bigkv", "16777216", "16777216\n");
	big_allocs("kv", &host_big, &guests_big);
	ck_assert_uint_ge(host_big, 2);		/* the two calls, copied */
	big_allocs("prober", &host_big, &guests_big);
	ck_assert_uint_ge(guests_big, 2);	/* prober's own, in its own pool */
	expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest kept out of the pool sends through its fixed pool: a payload
 * over max_payload_size is refused at the sender, the rest still works. */
START_TEST(test_guest_kept_out_of_the_pool)
{
	char *out = NULL;

	hub_start_up(&hub, NULL, GUESTS "shared_pool = no\n", "echo,kv,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big") == 0);
	expect_call("prober.big", "60000", "60000\n");
	ck_assert_int_ne(hubctl(&hub, &out, "call", "prober.big", "1048576", (char *)NULL), 0);
	free(out);
	expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A breaker in the zone of the others: what it breaks in the pool they
 * share is theirs too (a guest of a zone of its own breaks only its
 * own pool). */
static void
start_breaker(const char *act)
{
	char guests[512];

	snprintf(guests, sizeof(guests), ZONED "[guest breaker]\nexec = @/tests/guests/poolbreaker\n"
		 "args = --act=%s\nrestart = never\nzone = big\n", act);
	hub_start_up(&hub, NULL, guests, "echo,kv,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big") == 0);
}

/* A descriptor that names a slot wrongly names its sender: ended with
 * the rule (r[shm.slot.generation], r[shm.varslot.ownership]). */
START_TEST(test_breaker_named_by_its_descriptor)
{
	static const char *const acts[][2] = {
		{ "badgen", "guest breaker: broke shm.slot.generation" },
		{ "notmine", "guest breaker: broke shm.varslot.ownership" },
	};

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		start_breaker(acts[i][0]);
		ck_assert_msg(hub_log_wait(&hub, acts[i][1], 30000), "%s: %s", acts[i][0], hub_log_tail(&hub));
		expect_call("prober.big", "5000", "5000\n");
		expect_pool_valid();
		ck_assert_int_eq(hub_stop(&hub), 0);
	}
}
END_TEST

/* r[shm.varslot.freelist]: a free list broken by a guest (a cycle, a link
 * past the end, a held slot pushed on it) costs hubd and the others a
 * bounded walk; the sweeper rebuilds it and every call still succeeds. */
START_TEST(test_broken_free_list_rebuilt)
{
	static const char *const acts[] = { "cycle", "badlink", "heldfree" };
	char *out;

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		start_breaker(acts[i]);
		ck_assert(hub_wait_up(&hub, "breaker", 5000) == 0);
		/* 300-byte strings take class 0 slots, from the broken list */
		for (int k = 0; k < 20; k++)
			expect_call("prober.big", "300", "300\n");
		expect_call("prober.concurrent", "64", "64\n");
		/* and 32 of them in flight at once: the list is LIFO, so calls
		 * one at a time reuse whatever was freed on top of the broken
		 * link after the breaker acted (a slot in flight then) and
		 * might never reach it */
		out = NULL;
		ck_assert_msg(hubctl(&hub, &out, "-t", "60", "call", "prober.burst", "32", "300",
				     (char *)NULL) == 0 && strcmp(out, "32\n") == 0,
			      "prober.burst: %s", out);
		free(out);
		ck_assert_msg(hub_log_wait(&hub, "rebuilt", 30000), "%s: no rebuild: %s", acts[i],
			      hub_log_tail(&hub));
		expect_pool_valid();
		ck_assert_int_eq(hub_stop(&hub), 0);
	}
}
END_TEST

/* A guest killed while it holds slots loses them: the sweeper returns
 * them with new generations (r[shm.varslot.freeing]). */
/* Class 0's slots peer id holds (r[shm.varslot.ownership]): gen_state's
 * acquire pairs with the acq_rel CAS by which hp_var_alloc (the breaker)
 * and the sweeper move a slot's state, each after storing its owner. */
static int
slots_held(const struct mapped *seg, int id)
{
	int held = 0;

	for (uint32_t s = 0; s < seg->var.c[0].spe; s++) {
		struct hp_var_slot *m = &seg->var.c[0].meta[0][s];

		held += hp_load_acquire_u32(&m->owner) == (uint32_t)id &&
			(hp_load_acquire_u64(&m->gen_state) >> 32) != HP_VAR_FREE;
	}
	return held;
}

START_TEST(test_dead_holder_reclaimed)
{
	struct mapped seg;
	int pid, id;

	start_breaker("hold");
	ck_assert(hub_wait_up(&hub, "breaker", 5000) == 0);
	pid = hub_peer_int(&hub, "breaker", "pid");
	id = hub_peer_int(&hub, "breaker", "peer_id");
	ck_assert_int_gt(pid, 1);
	ck_assert_int_gt(id, 0);
	/* up is attached: the slots are taken just after; its zone's pool
	 * stays when it dies */
	map_pool("big", &seg);
	for (double t0 = now_s(); slots_held(&seg, id) < 8 && now_s() - t0 < 5; )
		sleep_ms(10);
	ck_assert_int_eq(slots_held(&seg, id), 8);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_msg(hub_log_wait(&hub, "pool big: 8 slots of guest breaker returned", 30000), "%s", hub_log_tail(&hub));
	ck_assert_int_eq(slots_held(&seg, id), 0);
	unmap_pool(&seg);
	expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Answers never starve behind the payloads hubd copies into a guest's
 * pool. prober (a zone of its own) calls echo (another) n times at once
 * with size-byte strings, all issued before any answer is read: hubd
 * copies each call into echo's pool and each answer into prober's. Once
 * the copies took every slot, echo could not answer (nor prober send its
 * next call while answers filled its pool) and every call waited for its
 * deadline; now hubd's copies leave a slot of each class free, and an
 * answer that waits for its caller's pool leaves its callee's. */
static void
expect_burst(const char *hub_keys, const char *guests, const char *n, const char *size)
{
	char want[32], *out = NULL;
	int rc, pid, echo_pid;

	hub_start_up(&hub, hub_keys, guests, "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.burst") == 0);
	pid = hub_peer_int(&hub, "prober", "pid");
	echo_pid = hub_peer_int(&hub, "echo", "pid");
	/* twice: the pools are as free after the first as before it */
	for (int i = 0; i < 2; i++) {
		rc = hubctl(&hub, &out, "-t", "60", "call", "prober.burst", n, size, (char *)NULL);
		snprintf(want, sizeof(want), "%s\n", n);
		ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "burst %s x %s bytes: rc %d: %s%s",
			      n, size, rc, out, hub_log_tail(&hub));
		free(out);
	}
	/* neither ended (over a quota) */
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "pid"), pid);
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), echo_pid);
	if (strstr(hub_keys, "classes = none") == NULL)
		expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}

#define SPLIT \
	"[guest echo]\nexec = @/guests/echo\n" \
	"[guest prober]\nexec = @/tests/guests/prober\nlanes = no\n"

/* Four 1 KiB slots in each guest's pool, 64 calls of 300 bytes: in the
 * shared pools (a zone each), and in the fixed pools (where hubd's copies
 * go to the host's pool in the guest's memory, its answers to its own). */
START_TEST(test_answers_in_a_small_pool)
{
	expect_burst("[pool]\nclasses = 1K x 4\nmax_extents = 1\n", SPLIT, "64", "300");
	expect_burst("slot_size = 1K\nslots_per_guest = 4\n[pool]\nclasses = none\n", SPLIT,
		     "64", "300");
}
END_TEST

/* The default classes hold twelve 1 MiB payloads at most (4 MiB x 2 and
 * 32 MiB x 1, grown to four extents): 24 calls of 1 MiB at once. */
START_TEST(test_answers_of_1mib_calls)
{
	expect_burst("", SPLIT, "24", "1048576");
}
END_TEST

/* Inside a zone nothing is copied: prober's calls took every slot echo
 * needed to answer them. Now a payload whose class is down to its spare
 * slot is copied out (into hubd's memory until there is room) and its
 * slot freed, so the spare stays for the answers. (The quota is raised:
 * prober's own calls count against it, each slot at its class's size,
 * and 1 MiB calls that fall back to 32 MiB slots pass the default's
 * 135.8 MiB, as four 1 KiB slots pass the 3 KiB of a small pool's.) */
START_TEST(test_answers_in_a_zone)
{
	static const char zoned[] =
		"[guest echo]\nexec = @/guests/echo\nzone = z\n"
		"[guest prober]\nexec = @/tests/guests/prober\nlanes = no\nzone = z\n";

	expect_burst("[pool]\nclasses = 1K x 4\nmax_extents = 1\nquota = 1G\n", zoned,
		     "64", "300");
	expect_burst("[pool]\nquota = 1G\n", zoned, "24", "1048576");
}
END_TEST

/* Calls routed to echo that wait for their answers. */
static int
calls_to_echo(void)
{
	json_object *o = hub_request(&hub, "{\"cmd\":\"calls\"}", NULL), *a;
	int n = 0;

	ck_assert_ptr_nonnull(o);
	a = json_get(o, "calls");
	for (size_t i = 0; a != NULL && i < json_object_array_length(a); i++) {
		const char *callee = json_object_get_string(json_get(
			json_object_array_get_idx(a, i), "callee"));

		n += callee != NULL && strcmp(callee, "echo") == 0;
	}
	json_object_put(o);
	return n;
}

/* hubd's copies count against the quota of the guest they are for (it
 * holds them) where it has zone mates: echo, sharing its pool with kv,
 * may hold 8 slots, and 64 calls come while it is stopped. They wait in
 * hubd's backlog while echo's quota has no room for one more and its
 * answer; before, hubd copied them all in and echo was ended over its
 * quota, its calls failed. */
START_TEST(test_answers_within_quota)
{
	char *out = NULL, *log;
	int echo_pid, prober_pid, status, slots = 0;
	pid_t child;

	hub_start_up(&hub, "heartbeat_interval = 0\n[pool]\nclasses = 1K x 64\n"
		     "max_extents = 1\nquota_slots = 8\nsweep_interval = 5ms\n",
		     "[guest echo]\nexec = @/guests/echo\nzone = z\n"
		     "[guest kv]\nexec = @/guests/kv\nzone = z\n"
		     "[guest prober]\nexec = @/tests/guests/prober\nlanes = no\n",
		     "echo,kv,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.burst") == 0);
	echo_pid = hub_peer_int(&hub, "echo", "pid");
	prober_pid = hub_peer_int(&hub, "prober", "pid");
	ck_assert_int_eq(kill(echo_pid, SIGSTOP), 0);
	if ((child = fork()) == 0) {
		int rc = hubctl(&hub, &out, "-t", "60", "call", "prober.burst", "64", "300",
				(char *)NULL);

		_exit(rc == 0 && strcmp(out, "64\n") == 0 ? 0 : 1);
	}
	ck_assert_int_gt(child, 0);
	/* all 64 routed to echo, and the sweeps counted what it holds */
	for (double t0 = now_s(); now_s() - t0 < 30; sleep_ms(10)) {
		if (hub_peer_int(&hub, "echo", "pid") != echo_pid)
			break;	/* ended */
		slots = hub_peer_int(&hub, "echo", "pool_slots");
		if (calls_to_echo() == 64 && slots >= 7)
			break;
	}
	kill(echo_pid, SIGCONT);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the burst failed "
		      "(echo held %d slots): %s", slots, hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "echo", "pid"), echo_pid);
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "pid"), prober_pid);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "quota") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A guest serving a call is never held (a guest waiting on it may be
 * what its callee waits for), so one that fans out more calls than its
 * callee takes has them wait in hubd's backlog, counted against its pool
 * quota. Past it the calls are refused with an error, and the caller,
 * honest, is not ended: prober serves hubctl's burst of 64 calls to echo,
 * stopped, whose ring holds 16, and may have 8 wait for it. Before,
 * prober was ended ("pool quota: it holds 9 slots"). The second run
 * stops prober while echo answers, as a loaded machine may, for a few
 * sweeps: the answers it has not read yet are no slots it keeps, and it
 * is not ended for them (it was: "pool quota: it holds 15 slots"). */
START_TEST(test_fanout_past_quota_refused)
{
	char *out = NULL, *log;
	int echo_pid, prober_pid, status, fds[2];
	unsigned long long made = 0;
	char said[1024] = "";
	ssize_t got;
	pid_t child;

	hub_start_up(&hub, "heartbeat_interval = 0\n[pool]\nquota_slots = 8\n",
		     "[guest echo]\nexec = @/guests/echo\nzone = z\n"
		     "[guest prober]\nexec = @/tests/guests/prober\nlanes = no\nzone = z\n",
		     "echo,prober");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.burst") == 0);
	echo_pid = hub_peer_int(&hub, "echo", "pid");
	prober_pid = hub_peer_int(&hub, "prober", "pid");
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(kill(echo_pid, SIGSTOP), 0);
	if ((child = fork()) == 0) {
		hubctl_err(&hub, &out, "-t", "60", "call", "prober.burst", "64", "300",
			   (char *)NULL);
		if (out != NULL && write(fds[1], out, strlen(out)) < 0)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_gt(child, 0);
	close(fds[1]);
	/* all 64 made (refused or routed), or prober gone */
	for (double t0 = now_s(); now_s() - t0 < 30 && made < 64; sleep_ms(10)) {
		json_object *st = hub_stats(&hub);

		made = json_u64(st, "guests", "prober", "calls_in");
		json_object_put(st);
		if (hub_peer_int(&hub, "prober", "pid") != prober_pid)
			break;
	}
	if (_i == 1)
		kill(prober_pid, SIGSTOP);
	kill(echo_pid, SIGCONT);
	if (_i == 1) {
		sleep_ms(800);	/* three sweeps (sweep_interval 250 ms) */
		kill(prober_pid, SIGCONT);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	got = read(fds[0], said, sizeof(said) - 1);
	close(fds[0]);
	said[got > 0 ? got : 0] = '\0';
	ck_assert_msg(made >= 64, "prober made %llu calls; %s", made, hub_log_tail(&hub));
	ck_assert_msg(hub_peer_int(&hub, "prober", "pid") == prober_pid &&
		      hub_peer_int(&hub, "echo", "pid") == echo_pid,
		      "prober or echo ended; burst said '%s'; %s", said, hub_log_tail(&hub));
	/* 16 in echo's ring and 8 waiting went through; the rest refused */
	ck_assert_msg(strstr(said, " of 64 calls failed") != NULL, "burst said '%s'; %s", said,
		      hub_log_tail(&hub));
	/* each refusal says which bound: here its slots */
	ck_assert_msg(strstr(said, "guest echo is behind: this caller's calls waiting for it "
			     "reached its pool quota: it holds ") != NULL &&
		      strstr(said, "(pool_quota_slots 8, pool_quota ") != NULL, "burst said '%s'",
		      said);
	ck_assert_int_eq(hub_peer_int(&hub, "prober", "restarts"), 0);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "pool quota") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	/* and it goes on */
	out = NULL;
	ck_assert_int_eq(hubctl(&hub, &out, "-t", "30", "call", "prober.burst", "8", "8",
				(char *)NULL), 0);
	ck_assert_str_eq(out, "8\n");
	free(out);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* A payload over the pool's largest class but within max_payload_size
 * (the fixed slots' 64 KiB here) goes in a fixed slot, each way: from
 * hubctl to echo and back, and guest to guest. Before, a sender with a
 * pool took it for the pool only and failed (-EMSGSIZE): hubd dropped
 * the request ("dropped a 20004-byte message"), and its caller waited
 * for ever. */
START_TEST(test_payload_over_the_largest_class)
{
	static char arg[60001];
	char *out = NULL;

	hub_start_up(&hub, "[pool]\nclasses = 16K x 4\n",
		     "[guest echo]\nexec = @/guests/echo\nzone = z\n"
		     "[guest prober]\nexec = @/tests/guests/prober\nzone = z\n"
		     "[guest other]\nexec = @/tests/guests/prober\nargs = --prefix other\n",
		     "echo,prober,other");
	ck_assert(hub_wait_method(&hub, "echo.echo,prober.big,other.big") == 0);
	for (size_t n = 20000; n <= 60000; n += 40000) {
		memset(arg, 'q', n);
		arg[n] = '\0';
		ck_assert_int_eq(hubctl(&hub, &out, "-t", "30", "call", "echo.echo", arg,
					(char *)NULL), 0);
		ck_assert_msg(strlen(out) == n + 1 && strncmp(out, arg, n) == 0, "%zu bytes back",
			      strlen(out));
		free(out);
		out = NULL;
	}
	/* in its zone, and from another zone (copied by hubd) */
	expect_call("prober.big", "20000", "20000\n");
	expect_call("prober.big", "60000", "60000\n");
	expect_call("other.big", "60000", "60000\n");
	expect_pool_valid();
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

/* Answers waiting for a guest busy elsewhere (its ring full) wait in
 * hubd's memory: they hold no slot of a pool, and count against its
 * quota by their bytes, not as slots. m2 has 600 calls of m1.wait in
 * flight, is stopped, and m1 answers them all (100 bytes each: in slots,
 * copied across zones): the 256 in m2's ring and the rest waiting, more
 * than its 300 slots. It then reads them all. Before, the 301st ended m2
 * ("pool quota: it holds 301 slots"); so it did a guest making 2000
 * calls on a loaded machine (check_mtguest). */
START_TEST(test_answers_waiting_are_not_slots)
{
	char *out = NULL, *log;
	int m2_pid, status, waiting = 0;
	unsigned long long made = 0, before;
	json_object *st;
	pid_t child;

	hub_start_up(&hub, "heartbeat_interval = 0\n",
		     "[guest m1]\nexec = @/tests/guests/mtprober\nargs = --prefix m1\n"
		     "lanes = no\n"
		     "[guest m2]\nexec = @/tests/guests/mtprober\nargs = --prefix m2\n"
		     "pool_quota_slots = 300\n", "m1,m2");
	ck_assert(hub_wait_method(&hub, "m1.source,m2.source") == 0);
	m2_pid = hub_peer_int(&hub, "m2", "pid");
	st = hub_stats(&hub);
	before = json_u64(st, "guests", "m2", "calls_in");	/* its hub.* calls */
	json_object_put(st);
	if ((child = fork()) == 0) {
		int rc = hubctl(&hub, &out, "-t", "120", "call", "m2.fanopen", "600", "m1",
				"false", (char *)NULL);

		_exit(rc == 0 && strcmp(out, "ok 600\n") == 0 ? 0 : 1);
	}
	ck_assert_int_gt(child, 0);
	for (double t0 = now_s(); now_s() - t0 < 60 && made < 600; sleep_ms(10)) {
		st = hub_stats(&hub);
		made = json_u64(st, "guests", "m2", "calls_in") - before;
		json_object_put(st);
	}
	ck_assert_msg(made == 600, "m2 made %llu calls; %s", made, hub_log_tail(&hub));
	ck_assert_int_eq(kill(m2_pid, SIGSTOP), 0);
	ck_assert_int_eq(hubctl(&hub, &out, "-t", "30", "call", "m1.openlong", "600",
				(char *)NULL), 0);
	ck_assert_str_eq(out, "ok 600\n");
	free(out);
	for (double t0 = now_s(); now_s() - t0 < 60 && waiting <= 320; sleep_ms(10)) {
		if (hub_peer_int(&hub, "m2", "pid") != m2_pid)
			break;	/* ended */
		waiting = hub_peer_int(&hub, "m2", "backlog");
	}
	kill(m2_pid, SIGCONT);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(waiting > 320, "%d answers waited for m2; %s", waiting, hub_log_tail(&hub));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "m2.fanopen did not answer ok 600; %s", hub_log_tail(&hub));
	ck_assert_int_eq(hub_peer_int(&hub, "m2", "pid"), m2_pid);
	log = hub_log(&hub);
	ck_assert_msg(strstr(log, "pool quota") == NULL, "%s", hub_log_tail(&hub));
	free(log);
	ck_assert_int_eq(hub_stop(&hub), 0);
}
END_TEST

Suite *suite_bigpayload(void);
Suite *
suite_bigpayload(void)
{
	Suite *s = suite_create("bigpayload");
	TCase *tc = tcase_create("pool");

	tcase_add_unchecked_fixture(tc, harness_setup, harness_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_big_payloads_in_a_zone);
	tcase_add_test(tc, test_big_payloads_across_zones);
	tcase_add_test(tc, test_guest_kept_out_of_the_pool);
	tcase_add_test(tc, test_breaker_named_by_its_descriptor);
	tcase_add_test(tc, test_broken_free_list_rebuilt);
	tcase_add_test(tc, test_dead_holder_reclaimed);
	tcase_add_test(tc, test_answers_in_a_small_pool);
	tcase_add_test(tc, test_answers_of_1mib_calls);
	tcase_add_test(tc, test_answers_within_quota);
	tcase_add_loop_test(tc, test_fanout_past_quota_refused, 0, 2);
	tcase_add_test(tc, test_answers_waiting_are_not_slots);
	tcase_add_test(tc, test_payload_over_the_largest_class);
	tcase_add_test(tc, test_answers_in_a_zone);
	suite_add_tcase(s, tc);
	return s;
}
