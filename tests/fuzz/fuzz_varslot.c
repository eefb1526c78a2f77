/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer: the variable pool (proto/varpool*.c) against a shared region
 * a hostile peer scribbled on. The input's first 20 bytes are a received
 * descriptor (slot, generation, offset, length, expected owner); the rest
 * is XORed over a small pool's header, class headers (free heads, extent
 * offsets and counts, corrupt flags), extent headers and slot metadata,
 * so an input of zeros is a valid pool. The host's view checks the
 * descriptor, validates, rebuilds and allocates; a guest's view attaches
 * to the scribbled headers and does what a guest does. Nothing may crash,
 * hang or read outside the pool; after a rebuild the host's lists are
 * sound and never hand a slot out twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proto/varpool.h"
#include "proto/varpool_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define GUESTS	2

static int fd = -1;
static uint8_t *base;
static uint64_t pool_size;
static struct hp_var_conf conf;
static struct hp_varpool host, guest;

/* The scribbled areas: where each lies in the pool, how long. */
static struct {
	uint64_t	off, len;
} areas[4];

static void
init(void)
{
	memset(&conf, 0, sizeof(conf));
	conf.nclasses = 2;
	conf.max_extents = 2;
	conf.cls[0].slot_size = 64;
	conf.cls[0].count = 4;
	conf.cls[1].slot_size = 128;
	conf.cls[1].count = 2;
	pool_size = hp_var_initial_size(&conf, GUESTS);
	if ((fd = memfd_create("fuzz_varslot", MFD_CLOEXEC)) < 0 ||
	    ftruncate(fd, (off_t)pool_size) != 0)
		abort();
	base = mmap(NULL, pool_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		abort();
	/* header and class headers; then each class's extent header and
	 * slot metadata */
	areas[0].off = 0;
	areas[0].len = sizeof(struct hp_var_header) + 2 * sizeof(struct hp_var_class);
	areas[1].off = hp_var_region_size(2, GUESTS);
	areas[1].len = sizeof(struct hp_var_extent) + 4 * sizeof(struct hp_var_slot);
	areas[2].off = areas[1].off + hp_var_extent_size(64, 4);
	areas[2].len = sizeof(struct hp_var_extent) + 2 * sizeof(struct hp_var_slot);
	areas[3].len = 0;
}

static int list_broken;

/* After a rebuild only a held slot of nobody may be reported (the
 * sweeper takes it back later): nothing about the lists. */
static void
report(void *arg, const char *problem)
{
	(void)arg;
	if (strstr(problem, "by no peer") == NULL)
		list_broken = 1;
}

static void
check_desc(struct hp_varpool *vp, const uint32_t d[5])
{
	const uint8_t *payload;
	const char *rule = NULL;

	if (hp_var_check(vp, d[0], d[1], d[2], d[3], d[4], &payload, &rule) == 0) {
		/* what passes lies inside the pool (no extent is mapped apart:
		 * the file never grows here) */
		if (payload < base || payload + d[3] > base + pool_size)
			abort();
	} else if (rule == NULL) {
		abort();
	}
}

/* A guest on the scribbled pool: attach, check, allocate, send, free. */
static void
as_guest(const uint32_t d[5])
{
	struct hp_var_ref r[6];
	const char *why = NULL;
	int n = 0;

	if (hp_var_attach(&guest, base, pool_size, fd, 1, 0, GUESTS, 1, &why) != 0) {
		if (why == NULL)
			abort();
		return;
	}
	check_desc(&guest, d);
	for (int i = 0; i < 6; i++)
		if (hp_var_alloc(&guest, (uint32_t)(i * 29) % 129, &r[n]) == 0) {
			if (r[n].data < base || r[n].data + r[n].cap > base + pool_size)
				abort();
			memset(r[n].data, 0x5A, r[n].cap);
			n++;
		}
	for (int i = 0; i < n; i++) {
		if (i & 1)
			hp_var_send(&guest, r[i].slot, r[i].gen, 1);
		hp_var_free(&guest, r[i].slot, r[i].gen);
	}
	hp_var_validate(&guest, NULL, NULL, NULL, NULL);
	hp_var_close(&guest);
}

static int
anyone_dead(void *arg, uint32_t owner)
{
	(void)arg;
	return owner == 2;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hp_var_ref r[16];
	uint32_t d[5] = { 0 };
	size_t at;
	int n = 0;

	if (base == NULL)
		init();
	memset(base, 0, pool_size);
	if (hp_var_create(&host, base, pool_size, fd, 0, &conf, GUESTS) != 0)
		abort();
	memcpy(d, data, size < sizeof(d) ? size : sizeof(d));
	at = sizeof(d);
	for (int a = 0; areas[a].len != 0 && at < size; a++)
		for (uint64_t i = 0; i < areas[a].len && at < size; i++)
			base[areas[a].off + i] ^= data[at++];

	as_guest(d);
	check_desc(&host, d);
	hp_var_validate(&host, NULL, NULL, NULL, NULL);
	hp_var_sweep(&host, 0, 0, anyone_dead, NULL, NULL, NULL, NULL, NULL);

	/* repaired: the lists are sound, each slot comes out once */
	for (uint32_t c = 0; c < host.nclasses; c++)
		hp_var_rebuild(&host, c);
	list_broken = 0;
	hp_var_validate(&host, NULL, NULL, report, NULL);
	if (list_broken)
		abort();
	for (int i = 0; i < 16; i++) {
		if (hp_var_alloc(&host, (uint32_t)(i * 37) % 129, &r[n]) != 0)
			continue;
		for (int j = 0; j < n; j++)
			if (r[j].slot == r[n].slot)
				abort();	/* handed out twice */
		n++;
	}
	for (int i = 0; i < n; i++)
		if (hp_var_free(&host, r[i].slot, r[i].gen) != 0)
			abort();
	list_broken = 0;
	hp_var_validate(&host, NULL, NULL, report, NULL);
	if (list_broken)
		abort();
	hp_var_close(&host);
	return 0;
}
