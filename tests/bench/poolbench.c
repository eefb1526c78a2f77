/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* poolbench: the slot pools' own costs, and the segment sizes they lead to.
 *   var N		N hp_var_alloc + hp_var_free pairs of a 64-byte slot
 *			(the shared pool, default classes, on a memfd), one
 *			process: "ns_per_pair=.."
 *   var2 N		the same in two processes at once on the same class
 *			(2 cores): "ns_per_pair=.. conflicts=.." (each
 *			process's pairs over its own time, the slower one)
 *   fixed N		hp_slot_alloc + hp_slot_free on a per-guest fixed
 *			pool (32 slots of 64 KiB, the default), one process
 *   fixed2 N		the same, two processes on the same pool
 *   sizes		the bytes hp_geometry_compute gives a guest's domain
 *			for the default config, a zone's pool as it starts
 *			(hp_var_initial_size, default classes), and a domain
 *			of a fixed-pool-only config carrying 16 MiB payloads:
 *			"default_bytes=.. fixed16m_bytes=.. pool_bytes=.."
 * Every loop is bounded by N; nothing spins unboundedly. */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/atomic.h"
#include "proto/clock.h"
#include "proto/segment.h"
#include "proto/slot.h"
#include "proto/varpool.h"
#include "proto/varpool_host.h"

#define SMALL		64u	/* the payload a pair allocates */
#define MAX_GUESTS	16u

/* What the two processes of a contended run share: a start line they
 * cross together and the child's figure. */
struct race {
	hp_atomic_u32	line;
	uint8_t		pad[60];
	double		other;
};

static struct race *
race_new(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		err(1, "mmap");
	return p;
}

/* Both ready, then go: bounded (a few seconds at most), never a timing
 * assertion. */
static void
cross(hp_atomic_u32 *line)
{
	hp_fetch_add_u32(line, 1, memory_order_acq_rel);
	for (long i = 0; hp_load_acquire_u32(line) < 2; i++) {
		if (i > 5000000)
			errx(1, "the other process never came");
		if (i % 64 == 63)
			usleep(1);
	}
}

static pid_t
child(void)
{
	pid_t pid = fork();

	if (pid < 0)
		err(1, "fork");
	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return pid;
}

/* -- the shared variable pool --------------------------------------------- */

struct varbench {
	struct hp_varpool	host;
	uint8_t			*base;
	uint64_t		size;
	int			fd;
};

static void
var_setup(struct varbench *b)
{
	struct hp_var_conf c;

	hp_var_conf_default(&c);
	b->size = hp_var_initial_size(&c, MAX_GUESTS);
	if ((b->fd = memfd_create("poolbench", 0)) < 0 || ftruncate(b->fd, (off_t)b->size) != 0)
		err(1, "memfd");
	b->base = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (b->base == MAP_FAILED)
		err(1, "mmap");
	if (hp_var_create(&b->host, b->base, b->size, b->fd, 0, &c, MAX_GUESTS) != 0)
		errx(1, "hp_var_create");
}

/* n pairs as guest `self` (a guest's view, as libguest's): ns per pair. */
static double
var_loop(struct varbench *b, uint32_t self, uint64_t n, hp_atomic_u32 *line)
{
	struct hp_varpool vp;
	struct hp_var_ref r;
	const char *why = NULL;
	uint64_t t0;

	if (hp_var_attach(&vp, b->base, b->size, b->fd, 1, 0, MAX_GUESTS, self, &why) != 0)
		errx(1, "hp_var_attach: %s", why ? why : "?");
	if (line != NULL)
		cross(line);
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (hp_var_alloc(&vp, SMALL, &r) != 0)
			errx(1, "hp_var_alloc failed at %llu", (unsigned long long)i);
		r.data[0] = (uint8_t)i;		/* the slot is really ours */
		if (hp_var_free(&vp, r.slot, r.gen) != 0)
			errx(1, "hp_var_free failed at %llu", (unsigned long long)i);
	}
	t0 = hp_now_ns() - t0;
	hp_var_close(&vp);
	return (double)t0 / (double)n;
}

static void
var_bench(uint64_t n, int contended)
{
	struct varbench b;
	struct hp_var_class_stats st;
	struct race *race = contended ? race_new() : NULL;
	hp_atomic_u32 *line = contended ? &race->line : NULL;
	double mine;
	pid_t pid = -1;
	int status;

	var_setup(&b);
	if (contended && (pid = child()) == 0) {
		race->other = var_loop(&b, 2, n, line);
		_exit(0);
	}
	mine = var_loop(&b, 1, n, line);
	if (pid > 0) {
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			errx(1, "the other process failed");
		if (race->other > mine)
			mine = race->other;
	}
	hp_var_class_stats(&b.host, 0, &st);
	if (st.in_use != 0 || st.allocs != st.frees || st.allocs != (contended ? 2 : 1) * n)
		errx(1, "the 1K class after the run: %u in use, %llu allocs, %llu frees",
		     st.in_use, (unsigned long long)st.allocs, (unsigned long long)st.frees);
	printf("ns_per_pair=%.1f conflicts=%llu\n", mine, (unsigned long long)st.conflicts);
	hp_var_close(&b.host);
	munmap(b.base, b.size);
	if (race != NULL)
		munmap(race, 4096);
	close(b.fd);
}

/* -- the fixed per-guest pool --------------------------------------------- */

static double
fixed_loop(uint8_t *base, uint32_t nslots, uint32_t slot_size, uint64_t n,
	   hp_atomic_u32 *line)
{
	struct hp_slot_pool pool;
	uint32_t idx, gen;
	uint64_t t0;

	hp_slot_pool_view(&pool, base, nslots, slot_size);
	if (line != NULL)
		cross(line);
	t0 = hp_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (hp_slot_alloc(&pool, &idx, &gen) != 0)
			errx(1, "hp_slot_alloc failed at %llu", (unsigned long long)i);
		hp_slot_payload(&pool, idx)[0] = (uint8_t)i;
		if (hp_slot_free(&pool, idx) != 0)
			errx(1, "hp_slot_free failed at %llu", (unsigned long long)i);
	}
	return (double)(hp_now_ns() - t0) / (double)n;
}

static void
fixed_bench(uint64_t n, int contended)
{
	struct hp_params p;
	struct hp_slot_pool pool;
	struct race *race = contended ? race_new() : NULL;
	hp_atomic_u32 *line = contended ? &race->line : NULL;
	uint64_t size;
	uint8_t *base;
	double mine;
	pid_t pid = -1;
	int fd, status;

	hp_params_default(&p);
	size = hp_slot_pool_header_size(p.slots_per_guest) +
	    (uint64_t)p.slots_per_guest * p.slot_size;
	if ((fd = memfd_create("poolbench", 0)) < 0 || ftruncate(fd, (off_t)size) != 0)
		err(1, "memfd");
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		err(1, "mmap");
	hp_slot_pool_view(&pool, base, p.slots_per_guest, p.slot_size);
	hp_slot_pool_reset(&pool);
	if (contended && (pid = child()) == 0) {
		race->other = fixed_loop(base, p.slots_per_guest, p.slot_size, n, line);
		_exit(0);
	}
	mine = fixed_loop(base, p.slots_per_guest, p.slot_size, n, line);
	if (pid > 0) {
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			errx(1, "the other process failed");
		if (race->other > mine)
			mine = race->other;
	}
	if (hp_slot_count_free(&pool) != p.slots_per_guest)
		errx(1, "fixed pool after the run: %u of %u free", hp_slot_count_free(&pool),
		     p.slots_per_guest);
	printf("ns_per_pair=%.1f\n", mine);
	munmap(base, size);
	if (race != NULL)
		munmap(race, 4096);
	close(fd);
}

/* -- segment sizes ----------------------------------------------------------- */

/* A domain is laid out for every guest of the hub but only its own
 * guest's areas are touched: these are the sizes mapped, not resident. */

static void
sizes(void)
{
	struct hp_params p;
	struct hp_geometry dflt, fixed;
	const char *why = NULL;

	hp_params_default(&p);
	if (hp_geometry_compute(&p, &dflt, &why) != 0)
		errx(1, "default config: %s", why);
	/* fixed pools only, each slot a 16 MiB payload and its generation,
	 * rounded to a cache line as hubd wants: every other key default */
	p.var.nclasses = 0;
	p.slot_size = (16u << 20) + HP_CACHE_LINE;
	p.max_payload_size = 16u << 20;
	if (hp_geometry_compute(&p, &fixed, &why) != 0)
		errx(1, "fixed 16 MiB config: %s", why);
	hp_params_default(&p);
	printf("default_bytes=%llu fixed16m_bytes=%llu pool_bytes=%llu\n",
	       (unsigned long long)dflt.total_size, (unsigned long long)fixed.total_size,
	       (unsigned long long)hp_var_initial_size(&p.var, p.max_guests));
}

int
main(int argc, char *argv[])
{
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;

	if (argc < 2)
		errx(2, "usage: poolbench var|var2|fixed|fixed2 N | sizes");
	if (n == 0)
		errx(2, "N must be at least 1");
	if (strcmp(argv[1], "var") == 0)
		var_bench(n, 0);
	else if (strcmp(argv[1], "var2") == 0)
		var_bench(n, 1);
	else if (strcmp(argv[1], "fixed") == 0)
		fixed_bench(n, 0);
	else if (strcmp(argv[1], "fixed2") == 0)
		fixed_bench(n, 1);
	else if (strcmp(argv[1], "sizes") == 0)
		sizes();
	else
		errx(2, "unknown mode %s", argv[1]);
	return 0;
}
