/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The variable-size shared pool (proto/varpool.c, varpool_host.c):
 * configuration, class selection and fallback, growth, the slot's life and
 * the receiver's checks, the tagged free list, the sweeper, validate and
 * rebuild against a scribbled region, attach refusals, the per-class
 * figures; then many processes and many threads at once.
 *
 * The pool lives in a memfd (nothing in /dev/shm): the host's view from
 * hp_var_create, guests' views from hp_var_attach on the same mapping. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/varpool.h"
#include "proto/varpool_host.h"

#define GUESTS		4
#define OFFSET		4096u	/* the region after one page of "segment" */
#define NCLS		3
#define MAXEXT		3

#define GS(gen, state)	((uint64_t)(state) << 32 | (gen))
#define SLOT(c, i)	(HP_VAR_SLOT_FLAG | (uint32_t)(c) << HP_VAR_CLASS_SHIFT | (i))
#define CLS(slot)	(((slot) & ~HP_VAR_SLOT_FLAG) >> HP_VAR_CLASS_SHIFT)
#define IDXOF(slot)	((slot) & HP_VAR_INDEX_MASK)

static int fd = -1;
static uint8_t *base;
static uint64_t size;
static struct hp_varpool host;
static struct hp_varpool g1, g2;

/* 64 B x 4, 256 B x 4, 1 KiB x 2; 3 extents a class at most */
static void
small_conf(struct hp_var_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->nclasses = NCLS;
	c->max_extents = MAXEXT;
	c->cls[0].slot_size = 64;
	c->cls[0].count = 4;
	c->cls[1].slot_size = 256;
	c->cls[1].count = 4;
	c->cls[2].slot_size = 1024;
	c->cls[2].count = 2;
}

static void
pool_open(const struct hp_var_conf *c)
{
	fd = memfd_create("check_varpool", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	size = OFFSET + hp_var_initial_size(c, GUESTS);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	ck_assert_int_eq(hp_var_create(&host, base, size, fd, OFFSET, c, GUESTS), 0);
}

static void
attach(struct hp_varpool *vp, uint32_t self)
{
	const char *why = NULL;
	int rc = hp_var_attach(vp, base, size, fd, 1, OFFSET, GUESTS, self, &why);

	ck_assert_msg(rc == 0, "attach as %u: %d %s", self, rc, why ? why : "");
}

static void
setup(void)
{
	struct hp_var_conf c;

	small_conf(&c);
	pool_open(&c);
	attach(&g1, 1);
	attach(&g2, 2);
}

static void
teardown(void)
{
	hp_var_close(&g1);
	hp_var_close(&g2);
	hp_var_close(&host);
	if (base != NULL && base != MAP_FAILED)
		munmap(base, size);
	base = NULL;
	if (fd >= 0)
		close(fd);
	fd = -1;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* hp_var_sweep with only the count of slots returned wanted */
static uint32_t
sweep(uint64_t now, int (*dead)(void *arg, uint32_t owner))
{
	return hp_var_sweep(&host, now, 0, dead, NULL, NULL, NULL, NULL, NULL);
}

static struct hp_var_slot *
meta(struct hp_varpool *vp, uint32_t c, uint32_t idx)
{
	return &vp->c[c].meta[idx / vp->c[c].spe][idx % vp->c[c].spe];
}

static uint32_t
owner_of(uint32_t c, uint32_t idx)
{
	return atomic_load(&meta(&host, c, idx)->owner);
}

static uint64_t
gs_of(uint32_t c, uint32_t idx)
{
	return atomic_load(&meta(&host, c, idx)->gen_state);
}

/* validate's reports, joined, to look for a phrase in */
struct reports {
	char	text[4096];
	size_t	len;
};

static void
collect(void *arg, const char *problem)
{
	struct reports *r = arg;
	int n = snprintf(r->text + r->len, sizeof(r->text) - r->len, "%s\n", problem);

	if (n > 0 && (size_t)n < sizeof(r->text) - r->len)
		r->len += (size_t)n;
}

static uint32_t
validate(struct reports *r)
{
	memset(r, 0, sizeof(*r));
	return hp_var_validate(&host, NULL, NULL, collect, r);
}

static uint32_t
class_free(struct hp_varpool *vp, uint32_t c)
{
	struct hp_var_class_stats s;

	hp_var_class_stats(vp, c, &s);
	return s.free;
}

/* r[shm.varslot.classes] */
START_TEST(test_conf_check)
{
	struct hp_var_conf c;
	const char *why;

	hp_var_conf_default(&c);
	ck_assert_int_eq(hp_var_conf_check(&c, NULL), 0);
	ck_assert_uint_eq(c.nclasses, 5);
	ck_assert_uint_eq(c.cls[0].slot_size, 1024);
	ck_assert_uint_eq(c.cls[4].slot_size, 32u << 20);
	small_conf(&c);
	ck_assert_int_eq(hp_var_conf_check(&c, NULL), 0);
	/* no pool at all is a valid config */
	c.nclasses = 0;
	ck_assert_int_eq(hp_var_conf_check(&c, NULL), 0);

	small_conf(&c);
	c.cls[1].slot_size = 64;	/* equal to the one before */
	why = NULL;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "smallest first"));
	small_conf(&c);
	c.cls[0].slot_size = 512;	/* larger than the next */
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "smallest first"));

	small_conf(&c);
	c.cls[1].slot_size = 100;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "multiple of 64"));
	c.cls[1].slot_size = 32;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "multiple of 64"));

	small_conf(&c);
	c.cls[2].count = 0;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "slot count"));

	small_conf(&c);
	c.nclasses = HP_VAR_MAX_CLASSES + 1;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "at most 8"));

	small_conf(&c);
	c.max_extents = HP_VAR_MAX_EXTENTS + 1;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "max_extents"));
	c.max_extents = 0;
	ck_assert_int_eq(hp_var_conf_check(&c, &why), -EINVAL);
	c.max_extents = HP_VAR_MAX_EXTENTS;
	ck_assert_int_eq(hp_var_conf_check(&c, NULL), 0);
}
END_TEST

/* r[shm.varslot.shared] r[shm.varslot.extent-layout]: the sizes */
START_TEST(test_sizes)
{
	struct hp_var_conf c;
	uint64_t n;

	/* 64 + 3 * 256 + 5 * 3 * 64 = 1792 bytes, padded to a page */
	ck_assert_uint_eq(hp_var_region_size(3, 4), 4096);
	/* 8 classes, 63 guests: 64 + 2048 + 64 * 8 * 64 = 34880 -> 36864 */
	ck_assert_uint_eq(hp_var_region_size(8, 63), 36864);
	/* header 64 + 4 * 32 metadata = 192, + 4 * 64 of data: one page */
	ck_assert_uint_eq(hp_var_extent_size(64, 4), 4096);
	/* 64 + 256 * 32 = 8256 -> 8256 + 256 * 1024 = 270400 -> 274432 */
	ck_assert_uint_eq(hp_var_extent_size(1024, 256), 274432);
	small_conf(&c);
	n = hp_var_region_size(3, GUESTS);
	for (int i = 0; i < 3; i++)
		n += hp_var_extent_size(c.cls[i].slot_size, c.cls[i].count);
	ck_assert_uint_eq(hp_var_initial_size(&c, GUESTS), n);
	c.nclasses = 0;
	ck_assert_uint_eq(hp_var_initial_size(&c, GUESTS), 0);

	/* the defaults: 45.3 MiB, every extent page aligned and large
	 * enough for its header, metadata and data */
	hp_var_conf_default(&c);
	n = hp_var_initial_size(&c, 8);
	ck_assert_uint_gt(n, 45ull << 20);
	ck_assert_uint_lt(n, 46ull << 20);
	for (uint32_t i = 0; i < c.nclasses; i++) {
		uint64_t e = hp_var_extent_size(c.cls[i].slot_size, c.cls[i].count);

		ck_assert_uint_eq(e % HP_VAR_EXTENT_ALIGN, 0);
		ck_assert_uint_ge(e, 64 + 32ull * c.cls[i].count +
				  (uint64_t)c.cls[i].slot_size * c.cls[i].count);
	}
}
END_TEST

/* r[shm.varslot.shared] r[shm.varslot.extent-layout]: what create lays out */
START_TEST(test_create_layout)
{
	struct hp_varpool vp;
	struct hp_var_conf c;
	struct hp_var_header *h = (struct hp_var_header *)(void *)(base + OFFSET);
	uint64_t off = OFFSET + hp_var_region_size(NCLS, GUESTS);

	ck_assert_uint_eq(h->nclasses, NCLS);
	ck_assert_uint_eq(h->max_extents, MAXEXT);
	ck_assert_uint_eq(h->max_payload, 1024);
	for (uint32_t i = 0; i < NCLS; i++) {
		struct hp_var_class *k = &host.cls[i];
		struct hp_var_extent *x = (struct hp_var_extent *)(void *)(base + off);

		ck_assert_uint_eq(atomic_load(&k->extent_count), 1);
		ck_assert_uint_eq(atomic_load(&k->extent_offsets[0]), off);
		ck_assert_uint_eq(x->class_index, i);
		ck_assert_uint_eq(x->extent_index, 0);
		ck_assert_uint_eq(x->slot_count, k->slots_per_extent);
		ck_assert_uint_eq(x->slot_size, k->slot_size);
		ck_assert_uint_eq(x->meta_offset, 64);
		ck_assert_uint_eq(x->data_offset % 64, 0);
		ck_assert_uint_ge(x->data_offset, 64 + 32ull * x->slot_count);
		/* r[shm.varslot.freelist]: every slot free, the list in order */
		ck_assert_uint_eq((uint32_t)atomic_load(&k->free_head), 0);
		for (uint32_t s = 0; s < k->slots_per_extent; s++) {
			ck_assert_uint_eq(gs_of(i, s), GS(0, HP_VAR_FREE));
			ck_assert_uint_eq(owner_of(i, s), HP_VAR_NOBODY);
			ck_assert_uint_eq(atomic_load(&meta(&host, i, s)->next_free),
					  s + 1 < k->slots_per_extent ? s + 1 : HP_VAR_NIL);
		}
		off += hp_var_extent_size(k->slot_size, k->slots_per_extent);
	}
	ck_assert_uint_eq(off, size);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);

	/* create refuses a misaligned offset, a short file, a bad config */
	small_conf(&c);
	ck_assert_int_eq(hp_var_create(&vp, base, size, fd, 64, &c, GUESTS), -EINVAL);
	ck_assert_int_eq(hp_var_create(&vp, base, size - 4096, fd, OFFSET, &c, GUESTS), -EINVAL);
	c.cls[0].slot_size = 65;
	ck_assert_int_eq(hp_var_create(&vp, base, size, fd, OFFSET, &c, GUESTS), -EINVAL);
	c.nclasses = 0;
	ck_assert_int_eq(hp_var_create(&vp, base, size, fd, OFFSET, &c, GUESTS), -EINVAL);
}
END_TEST

/* r[shm.varslot.selection] r[shm.varslot.allocation] */
START_TEST(test_selection)
{
	static const struct { uint32_t len, cls; } want[] = {
		{ 0, 0 }, { 1, 0 }, { 64, 0 }, { 65, 1 }, { 256, 1 }, { 257, 2 }, { 1024, 2 },
	};
	struct hp_var_ref r;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(hp_var_alloc(&g1, want[i].len, &r), 0);
		ck_assert_msg(CLS(r.slot) == want[i].cls, "len %u went to class %u, not %u",
			      want[i].len, CLS(r.slot), want[i].cls);
		ck_assert(hp_var_is_slot(r.slot));
		ck_assert_uint_ge(r.gen, 1);
		ck_assert_uint_eq(r.cap, g1.c[want[i].cls].slot_size);
		ck_assert_uint_eq(gs_of(CLS(r.slot), IDXOF(r.slot)), GS(r.gen, HP_VAR_ALLOCATED));
		ck_assert_uint_eq(owner_of(CLS(r.slot), IDXOF(r.slot)), 1);
		ck_assert_int_eq(hp_var_free(&g1, r.slot, r.gen), 0);
	}
	ck_assert_int_eq(hp_var_alloc(&g1, 1025, &r), -EMSGSIZE);
	ck_assert_int_eq(hp_var_alloc(&g1, UINT32_MAX, &r), -EMSGSIZE);
	ck_assert_int_eq(hp_var_alloc(&host, 1025, &r), -EMSGSIZE);
}
END_TEST

/* r[shm.varslot.selection] 2-4: the next larger class, then -EAGAIN */
START_TEST(test_fallback_and_exhaustion)
{
	struct hp_var_ref r[10], x;
	struct hp_var_class_stats s;
	int n = 0;

	/* class 0's 4 slots, each a different one */
	for (; n < 4; n++) {
		ck_assert_int_eq(hp_var_alloc(&g1, 10, &r[n]), 0);
		ck_assert_uint_eq(CLS(r[n].slot), 0);
		for (int j = 0; j < n; j++)
			ck_assert_uint_ne(r[j].slot, r[n].slot);
	}
	ck_assert_uint_eq(atomic_load(&host.cls[0].grow_request), 0);
	/* then class 1's, counted as fallbacks; class 0 asks to grow */
	for (; n < 8; n++) {
		ck_assert_int_eq(hp_var_alloc(&g1, 10, &r[n]), 0);
		ck_assert_uint_eq(CLS(r[n].slot), 1);
	}
	ck_assert_uint_eq(atomic_load(&host.cls[0].grow_request), 1);
	ck_assert_uint_eq(atomic_load(&host.cls[1].grow_request), 0);
	/* the host takes the request once */
	ck_assert_int_eq(hp_var_take_grow_request(&host, 0), 1);
	ck_assert_int_eq(hp_var_take_grow_request(&host, 0), 0);
	ck_assert_int_eq(hp_var_take_grow_request(&host, 1), 0);
	atomic_store(&host.cls[0].grow_request, 1);
	for (; n < 10; n++) {
		ck_assert_int_eq(hp_var_alloc(&g1, 10, &r[n]), 0);
		ck_assert_uint_eq(CLS(r[n].slot), 2);
	}
	hp_var_class_stats(&host, 1, &s);
	ck_assert_uint_eq(s.fallbacks, 4);
	ck_assert_uint_eq(s.allocs, 4);
	hp_var_class_stats(&host, 2, &s);
	ck_assert_uint_eq(s.fallbacks, 2);

	/* every class that fits is exhausted: -EAGAIN, want is the
	 * smallest that fits, a wait counted, not ready */
	ck_assert_int_eq(hp_var_alloc(&g1, 10, &x), -EAGAIN);
	ck_assert_uint_eq(g1.want, 0);
	ck_assert_int_eq(hp_var_ready(&g1), 0);
	hp_var_class_stats(&host, 0, &s);
	ck_assert_uint_eq(s.waits, 1);
	/* a larger request waits for its own class */
	ck_assert_int_eq(hp_var_alloc(&g2, 300, &x), -EAGAIN);
	ck_assert_uint_eq(g2.want, 2);
	ck_assert_uint_eq(atomic_load(&host.cls[2].grow_request), 1);
	/* a free in class 1 makes the small waiter ready, not the large */
	ck_assert_int_eq(hp_var_free(&g1, r[4].slot, r[4].gen), 0);
	ck_assert_int_eq(hp_var_ready(&g1), 1);
	ck_assert_int_eq(hp_var_ready(&g2), 0);
	ck_assert_int_eq(hp_var_free(&g1, r[9].slot, r[9].gen), 0);
	ck_assert_int_eq(hp_var_ready(&g2), 1);
	ck_assert_int_eq(hp_var_alloc(&g2, 300, &x), 0);
	ck_assert_uint_eq(g2.want, HP_VAR_NIL);
	ck_assert_uint_eq(x.slot, r[9].slot);
	ck_assert_uint_eq(x.gen, r[9].gen + 1);
}
END_TEST

/* The host's copies leave spare slots in each class: a class down to
 * them counts as exhausted for it (the next larger one serves, the
 * smallest asks to grow), never for a guest, whose answers take them. */
START_TEST(test_alloc_spare)
{
	struct hp_var_ref r[8], x;
	int n = 0;

	for (; n < 3; n++) {
		ck_assert_int_eq(hp_var_alloc_spare(&host, 10, 1, &r[n]), 0);
		ck_assert_uint_eq(CLS(r[n].slot), 0);
	}
	ck_assert_uint_eq(atomic_load(&host.cls[0].grow_request), 0);
	for (; n < 6; n++) {
		ck_assert_int_eq(hp_var_alloc_spare(&host, 10, 1, &r[n]), 0);
		ck_assert_uint_eq(CLS(r[n].slot), 1);
	}
	ck_assert_uint_eq(atomic_load(&host.cls[0].grow_request), 1);
	ck_assert_int_eq(hp_var_alloc_spare(&host, 10, 1, &r[n]), 0);
	ck_assert_uint_eq(CLS(r[n++].slot), 2);
	ck_assert_int_eq(hp_var_alloc_spare(&host, 10, 1, &x), -EAGAIN);
	ck_assert_uint_eq(host.want, 0);
	/* a guest takes the spare slots */
	ck_assert_int_eq(hp_var_alloc(&g1, 10, &x), 0);
	ck_assert_uint_eq(CLS(x.slot), 0);
	ck_assert_int_eq(hp_var_free(&g1, x.slot, x.gen), 0);
	/* one freed: above the spare again */
	ck_assert_int_eq(hp_var_free(&host, r[0].slot, r[0].gen), 0);
	ck_assert_int_eq(hp_var_alloc_spare(&host, 10, 1, &r[0]), 0);
	ck_assert_uint_eq(CLS(r[0].slot), 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(hp_var_free(&host, r[i].slot, r[i].gen), 0);

	/* short: down to the spare and grown to max_extents; before that
	 * it is asked to grow */
	ck_assert_int_eq(hp_var_short(&host, HP_SLOT_INLINE, 1), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[0]), 0);
	ck_assert_int_eq(hp_var_short(&host, r[0].slot, 1), 0);
	ck_assert_uint_eq(atomic_load(&host.cls[2].grow_request), 1);
	ck_assert_int_eq(hp_var_grow(&host, 2), 0);
	ck_assert_int_eq(hp_var_grow(&host, 2), 0);
	for (n = 1; n < 5; n++)
		ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[n]), 0);
	ck_assert_int_eq(hp_var_short(&host, r[0].slot, 1), 1);
	ck_assert_int_eq(hp_var_short(&host, r[0].slot, 0), 0);
	ck_assert_int_eq(hp_var_free(&g1, r[4].slot, r[4].gen), 0);
	ck_assert_int_eq(hp_var_short(&host, r[0].slot, 1), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(hp_var_free(&g1, r[i].slot, r[i].gen), 0);
}
END_TEST

/* r[shm.varslot.extents]: the host appends, a guest maps it by itself */
START_TEST(test_growth)
{
	struct hp_var_ref r[8], h;
	struct hp_var_class_stats s;
	struct stat st;
	uint64_t before = size, ext = hp_var_extent_size(1024, 2);
	const uint8_t *payload;
	const char *rule;

	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[0]), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[1]), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[2]), -EAGAIN);
	ck_assert_uint_eq(atomic_load(&host.cls[2].grow_request), 1);

	ck_assert_int_eq(hp_var_grow(&host, 2), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, before + ext);
	ck_assert_uint_eq(atomic_load(&host.cls[2].extent_count), 2);
	ck_assert_uint_eq(atomic_load(&host.cls[2].extent_offsets[1]), before);
	ck_assert_uint_eq(atomic_load(&host.cls[2].grow_request), 0);
	ck_assert_uint_eq(g1.c[2].mapped, 1);
	/* the guest reaches the new extent on demand, outside its mapping */
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[2]), 0);
	ck_assert_uint_eq(CLS(r[2].slot), 2);
	ck_assert_uint_ge(IDXOF(r[2].slot), 2);
	ck_assert_uint_eq(g1.c[2].mapped, 2);
	ck_assert_ptr_nonnull(g1.c[2].map[1]);
	memset(r[2].data, 0xA5, 1000);
	/* the host sees the bytes through its own mapping of the extent */
	ck_assert_int_eq(hp_var_send(&g1, r[2].slot, r[2].gen, 1), 0);
	ck_assert_int_eq(hp_var_check(&host, r[2].slot, r[2].gen, 0, 1000, 1, &payload, &rule), 0);
	ck_assert_ptr_ne(payload, r[2].data);
	ck_assert_uint_eq(payload[0], 0xA5);
	ck_assert_uint_eq(payload[999], 0xA5);
	/* the other guest maps it too when a descriptor names it */
	ck_assert_int_eq(hp_var_check(&g2, r[2].slot, r[2].gen, 0, 1000, 1, &payload, &rule), 0);
	ck_assert_uint_eq(payload[500], 0xA5);
	ck_assert_uint_eq(g2.c[2].mapped, 2);
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[3]), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[4]), -EAGAIN);

	/* up to max_extents, then -ENOSPC and the file stays */
	ck_assert_int_eq(hp_var_grow(&host, 2), 0);
	ck_assert_int_eq(hp_var_grow(&host, 2), -ENOSPC);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, before + 2 * ext);
	ck_assert_int_eq(hp_var_grow(&host, NCLS), -ENOSPC);
	/* a guest cannot grow */
	ck_assert_int_eq(hp_var_grow(&g1, 0), -ENOSPC);
	ck_assert_int_eq(hp_var_alloc(&g2, 1000, &r[4]), 0);
	ck_assert_int_eq(hp_var_alloc(&g2, 1000, &r[5]), 0);
	/* exhausted at max_extents: no more grow requests */
	ck_assert_int_eq(hp_var_alloc(&g2, 1000, &r[6]), -EAGAIN);
	ck_assert_uint_eq(atomic_load(&host.cls[2].grow_request), 0);
	hp_var_class_stats(&host, 2, &s);
	ck_assert_uint_eq(s.extents, 3);
	ck_assert_uint_eq(s.slots, 6);
	ck_assert_uint_eq(s.free, 0);
	ck_assert_uint_eq(s.diag.grown, 2);
	/* another class grows at the end of the file, after class 2's */
	ck_assert_int_eq(hp_var_grow(&host, 0), 0);
	ck_assert_uint_eq(atomic_load(&host.cls[0].extent_offsets[1]), before + 2 * ext);
	ck_assert_int_eq(hp_var_alloc(&host, 8, &h), 0);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(hp_var_validate(&g1, NULL, NULL, NULL, NULL), 0);
}
END_TEST

/* r[shm.varslot.ownership] r[shm.varslot.freeing]: Free -> Allocated ->
 * InFlight -> (passed on) -> Free, and the receiver's checks */
START_TEST(test_life_and_checks)
{
	struct hp_var_ref r, r2;
	const uint8_t *payload = NULL;
	const char *rule = NULL;
	uint32_t c, i;

	ck_assert_int_eq(hp_var_alloc(&g1, 100, &r), 0);
	c = CLS(r.slot);
	i = IDXOF(r.slot);
	memcpy(r.data, "hello", 5);
	/* Allocated is not yet receivable */
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 0, 5, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.generation");
	/* a send naming another generation changes nothing */
	ck_assert_int_eq(hp_var_send(&g1, r.slot, r.gen + 1, 1), -ESTALE);
	ck_assert_uint_eq(gs_of(c, i), GS(r.gen, HP_VAR_ALLOCATED));
	ck_assert_int_eq(hp_var_send(&g1, r.slot, r.gen, 1), 0);
	ck_assert_uint_eq(gs_of(c, i), GS(r.gen, HP_VAR_INFLIGHT));
	ck_assert_uint_eq(owner_of(c, i), 1);
	/* sent twice: not Allocated any more */
	ck_assert_int_eq(hp_var_send(&g1, r.slot, r.gen, 1), -ESTALE);

	/* r[shm.varslot.ownership] the receiver's checks */
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 0, 5, 1, &payload, &rule), 0);
	ck_assert_mem_eq(payload, "hello", 5);
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 2, 3, 1, &payload, &rule), 0);
	ck_assert_mem_eq(payload, "llo", 3);
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen + 1, 0, 5, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.generation");
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 0, 5, 2, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.ownership");
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 0, 257, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.payload-offset");
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 200, 57, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.payload-offset");
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, UINT32_MAX, 2, 1, &payload, &rule),
			 -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.payload-offset");
	ck_assert_int_eq(hp_var_check(&host, r.slot, r.gen, 0, 256, 1, &payload, &rule), 0);
	/* r[shm.varslot.classes]: no such class, index or slot at all */
	ck_assert_int_eq(hp_var_check(&host, SLOT(NCLS, 0), 1, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	ck_assert_int_eq(hp_var_check(&host, SLOT(15, 0), 1, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	/* in an extent that was never published */
	ck_assert_int_eq(hp_var_check(&host, SLOT(1, 4), 1, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	ck_assert_int_eq(hp_var_check(&g2, SLOT(1, 4), 1, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	/* past max_extents */
	ck_assert_int_eq(hp_var_check(&host, SLOT(1, 4 * MAXEXT), 1, 0, 1, 1, &payload, &rule),
			 -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	ck_assert_int_eq(hp_var_check(&host, SLOT(1, HP_VAR_INDEX_MASK), 1, 0, 1, 1, &payload,
				      &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	ck_assert_int_eq(hp_var_check(&host, 0xFFFFFFFFu, 1, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");
	ck_assert_int_eq(hp_var_check(&host, 5, 1, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.classes");

	/* the host takes it (guest 1 -> host), then hands it to guest 2 */
	ck_assert_int_eq(hp_var_pass(&host, r.slot, r.gen, 1, HP_VAR_HOST), 0);
	ck_assert_uint_eq(owner_of(c, i), HP_VAR_HOST);
	ck_assert_int_eq(hp_var_pass(&host, r.slot, r.gen, 1, HP_VAR_HOST), -ESTALE);
	ck_assert_int_eq(hp_var_pass(&host, r.slot, r.gen + 1, HP_VAR_HOST, 2), -ESTALE);
	ck_assert_int_eq(hp_var_pass(&host, SLOT(NCLS, 0), 1, HP_VAR_HOST, 2), -EINVAL);
	ck_assert_int_eq(hp_var_pass(&host, r.slot, r.gen, HP_VAR_HOST, 2), 0);
	ck_assert_int_eq(hp_var_check(&g2, r.slot, r.gen, 0, 5, 2, &payload, &rule), 0);
	ck_assert_mem_eq(payload, "hello", 5);
	ck_assert_int_eq(hp_var_check(&g2, r.slot, r.gen, 0, 5, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.varslot.ownership");

	/* r[shm.varslot.freeing]: freed by its owner; a second free is a
	 * double free, and changes nothing */
	ck_assert_int_eq(hp_var_free(&g2, r.slot, r.gen), 0);
	ck_assert_uint_eq(gs_of(c, i), GS(r.gen, HP_VAR_FREE));
	ck_assert_uint_eq(owner_of(c, i), HP_VAR_NOBODY);
	ck_assert_uint_eq(atomic_load(&meta(&host, c, i)->last_owner), 2);
	ck_assert_uint_eq((uint32_t)atomic_load(&host.cls[c].free_head), i);
	ck_assert_int_eq(hp_var_free(&g2, r.slot, r.gen), -EALREADY);
	ck_assert_int_eq(hp_var_free(&host, r.slot, r.gen), -EALREADY);
	ck_assert_uint_eq(host.diag[c].double_frees, 1);
	ck_assert_uint_eq((uint32_t)atomic_load(&host.cls[c].free_head), i);
	/* the list's head is the freed slot, so it comes back next with a
	 * new generation: a late free of the old one is stale */
	ck_assert_int_eq(hp_var_alloc(&g1, 100, &r2), 0);
	ck_assert_uint_eq(r2.slot, r.slot);
	ck_assert_uint_eq(r2.gen, r.gen + 1);
	ck_assert_int_eq(hp_var_free(&g2, r.slot, r.gen), -ESTALE);
	ck_assert_int_eq(hp_var_free(&host, r.slot, r.gen), -ESTALE);
	ck_assert_uint_eq(host.diag[c].stale_frees, 1);
	ck_assert_uint_eq(gs_of(c, i), GS(r2.gen, HP_VAR_ALLOCATED));
	ck_assert_int_eq(hp_var_free(&g1, SLOT(NCLS, 0), 1), -EINVAL);
	ck_assert_int_eq(hp_var_free(&g1, r2.slot, r2.gen), 0);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
}
END_TEST

/* A send whose generation is not the slot's must leave the slot (now
 * someone else's) alone: its owner too. */
START_TEST(test_stale_send_keeps_owner)
{
	struct hp_var_ref a, b;

	ck_assert_int_eq(hp_var_alloc(&g1, 10, &a), 0);
	ck_assert_int_eq(hp_var_free(&g1, a.slot, a.gen), 0);
	/* guest 2 gets the same slot, one generation on */
	ck_assert_int_eq(hp_var_alloc(&g2, 10, &b), 0);
	ck_assert_uint_eq(b.slot, a.slot);
	/* guest 1 sends its old reference, as after a rebuild took it */
	ck_assert_int_eq(hp_var_send(&g1, a.slot, a.gen, 1), -ESTALE);
	ck_assert_uint_eq(owner_of(CLS(b.slot), IDXOF(b.slot)), 2);
	/* so the sweeper, told guest 1 is gone, does not rob guest 2 */
	ck_assert_uint_eq(gs_of(CLS(b.slot), IDXOF(b.slot)), GS(b.gen, HP_VAR_ALLOCATED));
	/* and nobody else's slot is sendable either: right generation,
	 * another owner */
	ck_assert_int_eq(hp_var_send(&g1, b.slot, b.gen, 1), -ESTALE);
	ck_assert_uint_eq(owner_of(CLS(b.slot), IDXOF(b.slot)), 2);
	ck_assert_uint_eq(gs_of(CLS(b.slot), IDXOF(b.slot)), GS(b.gen, HP_VAR_ALLOCATED));
	/* the host sends its own slot to a guest: the guest's at once */
	ck_assert_int_eq(hp_var_alloc(&host, 10, &a), 0);
	ck_assert_int_eq(hp_var_send(&host, a.slot, a.gen, 2), 0);
	ck_assert_uint_eq(owner_of(CLS(a.slot), IDXOF(a.slot)), 2);
}
END_TEST

/* r[shm.varslot.freelist] r[shm.varslot.allocation]: the head's tag moves
 * on every pop and push, so a CAS from a stale head fails (ABA) */
START_TEST(test_aba_tag)
{
	hp_atomic_u64 *fh = &host.cls[0].free_head;
	uint64_t h0 = atomic_load(fh), h1, h2, h3, stale;
	struct hp_var_ref a, b;

	ck_assert_int_eq(hp_var_alloc(&g1, 8, &a), 0);
	h1 = atomic_load(fh);
	ck_assert_uint_eq(h1 >> 32, (h0 >> 32) + 1);
	ck_assert_uint_eq((uint32_t)h1, atomic_load(&meta(&host, 0, IDXOF(a.slot))->next_free));
	ck_assert_int_eq(hp_var_alloc(&g2, 8, &b), 0);
	h2 = atomic_load(fh);
	ck_assert_uint_eq(h2 >> 32, (h1 >> 32) + 1);
	ck_assert_int_eq(hp_var_free(&g1, a.slot, a.gen), 0);
	h3 = atomic_load(fh);
	ck_assert_uint_eq(h3 >> 32, (h2 >> 32) + 1);
	/* the head names slot a again, as it did at h0: same index, other
	 * tag, so a popper that read h0 (next = b) cannot swing the head to
	 * b, which is held */
	ck_assert_uint_eq((uint32_t)h3, (uint32_t)h0);
	ck_assert_uint_ne(h3, h0);
	stale = h0;
	ck_assert(!atomic_compare_exchange_strong(fh, &stale, (h0 >> 32) + 1));
	ck_assert_uint_eq(atomic_load(fh), h3);
	/* a rebuild moves it on too */
	hp_var_rebuild(&host, 0);
	ck_assert_uint_gt(atomic_load(fh) >> 32, h3 >> 32);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
}
END_TEST

static uint32_t dead_id;

static int
dead_is(void *arg, uint32_t owner)
{
	(void)arg;
	return owner == dead_id;
}

struct stuck_seen {
	int			n;
	struct hp_var_held	h;
};

static void
on_stuck(void *arg, const struct hp_var_held *s)
{
	struct stuck_seen *ss = arg;

	ss->n++;
	ss->h = *s;
}

static int
stuck_dead(void *arg, uint32_t owner)
{
	(void)arg;
	(void)owner;
	return 0;
}

/* r[shm.varslot.ownership]: the sweeper returns what the dead held */
START_TEST(test_sweep_dead)
{
	struct hp_var_ref a, b, c, h;
	const uint8_t *payload;
	const char *rule;
	struct reports rep;
	struct hp_var_back why;
	uint32_t stuck = 99;

	ck_assert_int_eq(hp_var_alloc(&g1, 10, &a), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 300, &b), 0);
	ck_assert_int_eq(hp_var_send(&g1, b.slot, b.gen, 1), 0);	/* in flight, still 1's */
	ck_assert_int_eq(hp_var_alloc(&g2, 10, &c), 0);
	ck_assert_int_eq(hp_var_alloc(&host, 10, &h), 0);
	dead_id = 1;
	memset(&why, 0xFF, sizeof(why));
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, dead_is, NULL, NULL, &stuck, &why,
				       NULL), 2);
	ck_assert_uint_eq(stuck, 0);
	/* both for the one reason */
	ck_assert_uint_eq(why.dead, 2);
	ck_assert_uint_eq(why.forged + why.no_owner + why.bad_state + why.gen_zero + why.lost, 0);
	/* back on their lists with a new generation */
	ck_assert_uint_eq(gs_of(CLS(a.slot), IDXOF(a.slot)), GS(a.gen + 1, HP_VAR_FREE));
	ck_assert_uint_eq(gs_of(CLS(b.slot), IDXOF(b.slot)), GS(b.gen + 1, HP_VAR_FREE));
	ck_assert_uint_eq(owner_of(CLS(a.slot), IDXOF(a.slot)),
			  HP_VAR_NOBODY);
	ck_assert_uint_eq(host.diag[0].reclaimed, 1);
	ck_assert_uint_eq(host.diag[2].reclaimed, 1);
	/* the descriptor still naming it fails, a late free is stale */
	ck_assert_int_eq(hp_var_check(&host, b.slot, b.gen, 0, 1, 1, &payload, &rule), -EPROTO);
	ck_assert_str_eq(rule, "shm.slot.generation");
	ck_assert_int_eq(hp_var_free(&g1, a.slot, a.gen), -ESTALE);
	/* the living keep theirs, the host too */
	ck_assert_uint_eq(gs_of(CLS(c.slot), IDXOF(c.slot)), GS(c.gen, HP_VAR_ALLOCATED));
	ck_assert_uint_eq(gs_of(CLS(h.slot), IDXOF(h.slot)), GS(h.gen, HP_VAR_ALLOCATED));
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_uint_eq(class_free(&host, 0), 2);
	ck_assert_uint_eq(class_free(&host, 2), 2);
	/* nothing more to take */
	ck_assert_uint_eq(sweep(mono_ns(), dead_is), 0);
	/* the host's own slots are never a dead peer's */
	dead_id = HP_VAR_HOST;
	ck_assert_uint_eq(sweep(mono_ns(), dead_is), 0);
	ck_assert_int_eq(hp_var_free(&g2, c.slot, c.gen), 0);
	ck_assert_int_eq(hp_var_free(&host, h.slot, h.gen), 0);
	ck_assert_uint_eq(class_free(&host, 0), 4);
}
END_TEST

/* Slots held too long are reported, never taken from a live holder;
 * one held by nobody (or by no peer) is taken back. */
START_TEST(test_sweep_stuck)
{
	struct hp_var_ref a, h, z;
	struct stuck_seen ss = { 0, { 0, 0, 0, 0, 0 } };
	struct hp_var_back why;
	uint64_t now = mono_ns();
	uint32_t stuck = 0;

	ck_assert_int_eq(hp_var_alloc(&g2, 100, &a), 0);
	ck_assert_int_eq(hp_var_alloc(&host, 100, &h), 0);
	/* not yet too long */
	ck_assert_uint_eq(hp_var_sweep(&host, now, 5000000000ull, stuck_dead, &ss, on_stuck,
				       &stuck, NULL, NULL), 0);
	ck_assert_uint_eq(stuck, 0);
	ck_assert_int_eq(ss.n, 0);
	/* ten seconds on: guest 2's slot is stuck, the host's not counted */
	ck_assert_uint_eq(hp_var_sweep(&host, now + 10000000000ull, 1000000000ull, stuck_dead,
				       &ss, on_stuck, &stuck, NULL, NULL), 0);
	ck_assert_uint_eq(stuck, 1);
	ck_assert_int_eq(ss.n, 1);
	ck_assert_uint_eq(ss.h.cls, CLS(a.slot));
	ck_assert_uint_eq(ss.h.index, IDXOF(a.slot));
	ck_assert_uint_eq(ss.h.owner, 2);
	ck_assert_uint_eq(ss.h.gen, a.gen);
	ck_assert_uint_gt(ss.h.held_ns, 9000000000ull);
	/* still guest 2's */
	ck_assert_uint_eq(gs_of(CLS(a.slot), IDXOF(a.slot)), GS(a.gen, HP_VAR_ALLOCATED));
	ck_assert_int_eq(hp_var_free(&g2, a.slot, a.gen), 0);

	/* a held slot of nobody: left for a grace period, then taken */
	ck_assert_int_eq(hp_var_alloc(&g1, 100, &z), 0);
	atomic_store(&meta(&host, CLS(z.slot), IDXOF(z.slot))->owner, HP_VAR_NOBODY);
	now = atomic_load(&meta(&host, CLS(z.slot), IDXOF(z.slot))->claim_ns);
	ck_assert_uint_eq(sweep(now, stuck_dead), 0);
	ck_assert_uint_eq(hp_var_sweep(&host, now + 5000000000ull, 0, stuck_dead, NULL, NULL, NULL,
				       &why, NULL), 1);
	ck_assert_uint_eq(why.no_owner, 1);
	ck_assert_uint_eq(gs_of(CLS(z.slot), IDXOF(z.slot)), GS(z.gen + 1, HP_VAR_FREE));
	/* owned by no peer at all: taken at once */
	ck_assert_int_eq(hp_var_alloc(&g1, 100, &z), 0);
	atomic_store(&meta(&host, CLS(z.slot), IDXOF(z.slot))->owner, GUESTS + 1);
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, stuck_dead, NULL, NULL, NULL, &why,
				       NULL), 1);
	ck_assert_uint_eq(why.no_owner, 1);
	ck_assert_uint_eq(why.dead + why.forged + why.bad_state + why.gen_zero + why.lost, 0);
	ck_assert_uint_eq(hp_var_free(&host, h.slot, h.gen), 0);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
}
END_TEST

/* Pops the head of class c's list as a peer does, then dies: the slot is
 * Free, on no list, its owner the dead peer (or nobody, had it died a
 * step earlier). */
static uint32_t
pop_and_die(uint32_t c, uint32_t owner)
{
	hp_atomic_u64 *fh = &host.cls[c].free_head;
	uint64_t head = atomic_load(fh);
	uint32_t idx = (uint32_t)head;
	uint32_t next = atomic_load(&meta(&host, c, idx)->next_free);

	ck_assert(atomic_compare_exchange_strong(fh, &head, ((head >> 32) + 1) << 32 | next));
	atomic_store(&meta(&host, c, idx)->owner, owner);
	return idx;
}

/* r[shm.varslot.ownership]: a peer that dies between its pop's head CAS
 * and its state CAS, or between its free's state CAS and its push, leaves
 * a Free slot on no list: the sweeper returns it once it has stayed so,
 * never while its owner lives. */
START_TEST(test_sweep_lost)
{
	struct hp_var_ref r;
	struct reports rep;
	struct hp_var_back why;
	uint64_t now = mono_ns();
	uint32_t a, b, d;

	a = pop_and_die(0, 1);		/* guest 1 died after storing its id */
	b = pop_and_die(1, HP_VAR_NOBODY);	/* a guest died a step earlier */
	d = pop_and_die(2, 2);		/* guest 2 lives: stopped, or slow */
	ck_assert_uint_eq(validate(&rep), 3);
	ck_assert_ptr_nonnull(strstr(rep.text, "is free but on no free list"));
	dead_id = 1;
	/* a first sighting: nothing yet, nor a second one too soon */
	ck_assert_uint_eq(sweep(now, dead_is), 0);
	ck_assert_uint_eq(sweep(now + 100000000ull, dead_is), 0);
	ck_assert_uint_eq(validate(&rep), 3);
	/* it stayed: back, by rebuilding those lists */
	ck_assert_uint_eq(hp_var_sweep(&host, now + 2000000000ull, 0, dead_is, NULL, NULL, NULL,
				       &why, NULL), 2);
	ck_assert_uint_eq(why.lost, 2);
	ck_assert_uint_eq(why.dead + why.forged + why.no_owner + why.bad_state + why.gen_zero, 0);
	ck_assert_uint_eq(validate(&rep), 1);
	ck_assert_ptr_nonnull(strstr(rep.text, "class 2: slot"));
	ck_assert_uint_eq(host.diag[0].rebuilds, 1);
	ck_assert_uint_eq(host.diag[2].rebuilds, 0);
	/* the live one's pop finishes after all */
	ck_assert_uint_eq(gs_of(2, d), GS(0, HP_VAR_FREE));
	atomic_store(&meta(&host, 2, d)->gen_state, GS(1, HP_VAR_ALLOCATED));
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_int_eq(hp_var_free(&g2, SLOT(2, d), 1), 0);
	/* the slot that moved on meanwhile is not counted lost: sighted,
	 * then allocated and freed (a new generation), then sighted again */
	a = pop_and_die(0, 1);
	ck_assert_uint_eq(sweep(now + 3000000000ull, dead_is), 0);
	atomic_store(&meta(&host, 0, a)->gen_state, GS(7, HP_VAR_FREE));
	ck_assert_uint_eq(sweep(now + 4000000000ull, dead_is), 0);
	ck_assert_uint_eq(sweep(now + 6000000000ull, dead_is), 1);
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 8, &r), 0);
	(void)b;
}
END_TEST

/* r[shm.varslot.allocation]: a generation never comes round to 0, which
 * marks a held slot as never allocated; the sweeper takes such a slot. */
START_TEST(test_generation_wraps)
{
	struct hp_var_ref r;
	struct reports rep;
	struct hp_var_back why;

	atomic_store(&meta(&host, 0, 0)->gen_state, GS(UINT32_MAX, HP_VAR_FREE));
	ck_assert_int_eq(hp_var_alloc(&g1, 8, &r), 0);
	ck_assert_uint_eq(IDXOF(r.slot), 0);
	ck_assert_uint_eq(r.gen, 1);
	ck_assert_uint_eq(gs_of(0, 0), GS(1, HP_VAR_ALLOCATED));
	ck_assert_uint_eq(validate(&rep), 0);
	/* scribbled to generation 0: the sweeper returns it */
	atomic_store(&meta(&host, 0, 0)->gen_state, GS(0, HP_VAR_INFLIGHT));
	ck_assert_uint_eq(validate(&rep), 1);
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, stuck_dead, NULL, NULL, NULL, &why,
				       NULL), 1);
	ck_assert_uint_eq(why.gen_zero, 1);
	ck_assert_uint_eq(gs_of(0, 0), GS(1, HP_VAR_FREE));
	ck_assert_uint_eq(validate(&rep), 0);
}
END_TEST

/* -- the host's own slots ------------------------------------------------- */

/* Whether the host's record holds slot idx of class c. */
static int
host_holds(uint32_t c, uint32_t idx)
{
	return (host.mine[c][idx / 8] >> (idx % 8)) & 1;
}

static int
host_holds_ref(const struct hp_var_ref *r)
{
	return host_holds(CLS(r->slot), IDXOF(r->slot));
}

/* r[shm.varslot.ownership]: the host's record of the slots it holds
 * follows every way the host takes a slot (its allocation, a guest's
 * slot passed to it) and lets one go (sent, passed on, freed, or taken
 * back from it), whether or not the shared words still agreed. */
START_TEST(test_host_record)
{
	struct hp_var_ref a, b, d, e;
	struct hp_var_back why;
	struct reports rep;

	/* its own allocation */
	ck_assert_int_eq(hp_var_alloc(&host, 10, &a), 0);
	ck_assert(host_holds_ref(&a));
	/* a guest's slot, taken as its descriptor is dequeued */
	ck_assert_int_eq(hp_var_alloc(&g1, 100, &b), 0);
	ck_assert_int_eq(hp_var_send(&g1, b.slot, b.gen, 1), 0);
	ck_assert(!host_holds_ref(&b));
	ck_assert_int_eq(hp_var_pass(&host, b.slot, b.gen, 1, HP_VAR_HOST), 0);
	ck_assert(host_holds_ref(&b));
	/* genuinely the host's: valid, and the sweeper leaves them */
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_uint_eq(sweep(mono_ns(), stuck_dead), 0);
	ck_assert_uint_eq(owner_of(CLS(b.slot), IDXOF(b.slot)), HP_VAR_HOST);
	ck_assert_uint_eq(gs_of(CLS(a.slot), IDXOF(a.slot)), GS(a.gen, HP_VAR_ALLOCATED));
	/* handed on to guest 2 */
	ck_assert_int_eq(hp_var_pass(&host, b.slot, b.gen, HP_VAR_HOST, 2), 0);
	ck_assert(!host_holds_ref(&b));
	/* a pass to the host that fails takes nothing */
	ck_assert_int_eq(hp_var_pass(&host, b.slot, b.gen, 1, HP_VAR_HOST), -ESTALE);
	ck_assert(!host_holds_ref(&b));
	ck_assert_int_eq(hp_var_free(&g2, b.slot, b.gen), 0);
	/* its own, sent to a guest */
	ck_assert_int_eq(hp_var_alloc(&host, 10, &d), 0);
	ck_assert(host_holds_ref(&d));
	ck_assert_int_eq(hp_var_send(&host, d.slot, d.gen, 2), 0);
	ck_assert(!host_holds_ref(&d));
	ck_assert_int_eq(hp_var_free(&g2, d.slot, d.gen), 0);
	/* a pass on that fails (a guest moved the owner) lets it go too:
	 * the caller drops the slot */
	ck_assert_int_eq(hp_var_alloc(&host, 10, &d), 0);
	atomic_store(&meta(&host, CLS(d.slot), IDXOF(d.slot))->owner, 1);
	ck_assert_int_eq(hp_var_pass(&host, d.slot, d.gen, HP_VAR_HOST, 2), -ESTALE);
	ck_assert(!host_holds_ref(&d));
	ck_assert_int_eq(hp_var_free(&g1, d.slot, d.gen), 0);
	/* taken back from it by the sweeper (scribbled to no state), and by
	 * a rebuild (scribbled to generation 0) */
	ck_assert_int_eq(hp_var_alloc(&host, 10, &d), 0);
	ck_assert_int_eq(hp_var_alloc(&host, 10, &e), 0);
	atomic_store(&meta(&host, CLS(d.slot), IDXOF(d.slot))->gen_state, GS(d.gen, 7));
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, stuck_dead, NULL, NULL, NULL, &why,
				       NULL), 1);
	ck_assert_uint_eq(why.bad_state, 1);
	ck_assert(!host_holds_ref(&d));
	atomic_store(&meta(&host, CLS(e.slot), IDXOF(e.slot))->gen_state,
		     GS(0, HP_VAR_ALLOCATED));
	hp_var_rebuild(&host, CLS(e.slot));
	ck_assert(!host_holds_ref(&e));
	/* and freed */
	ck_assert_int_eq(hp_var_free(&host, a.slot, a.gen), 0);
	ck_assert(!host_holds_ref(&a));
	for (uint32_t c = 0; c < NCLS; c++)
		for (uint32_t i = 0; i < host.c[c].mapped * host.c[c].spe; i++)
			ck_assert_msg(!host_holds(c, i), "class %u slot %u still held", c, i);
	ck_assert_uint_eq(validate(&rep), 0);
	for (uint32_t c = 0; c < NCLS; c++)
		ck_assert_uint_eq(class_free(&host, c), host.c[c].spe);
	/* a guest's view keeps no record */
	for (uint32_t c = 0; c < NCLS; c++)
		ck_assert_ptr_null(g1.mine[c]);
}
END_TEST

/* r[shm.varslot.ownership]: slots a guest marked the host's (owner 0)
 * that the host does not hold: validate on the host's view names them,
 * the sweeper takes them back; what the host does hold stays its own. */
START_TEST(test_sweep_forged)
{
	struct hp_var_ref f1, f2, h1, h2;
	struct hp_var_back why;
	struct reports rep;
	char want[128];

	ck_assert_int_eq(hp_var_alloc(&g1, 10, &f1), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 300, &f2), 0);
	ck_assert_int_eq(hp_var_send(&g1, f2.slot, f2.gen, 1), 0);
	atomic_store(&meta(&host, CLS(f1.slot), IDXOF(f1.slot))->owner, HP_VAR_HOST);
	atomic_store(&meta(&host, CLS(f2.slot), IDXOF(f2.slot))->owner, HP_VAR_HOST);
	/* the host's own: allocated, and taken from guest 2 */
	ck_assert_int_eq(hp_var_alloc(&host, 10, &h1), 0);
	ck_assert_int_eq(hp_var_alloc(&g2, 100, &h2), 0);
	ck_assert_int_eq(hp_var_send(&g2, h2.slot, h2.gen, 2), 0);
	ck_assert_int_eq(hp_var_pass(&host, h2.slot, h2.gen, 2, HP_VAR_HOST), 0);

	ck_assert_uint_eq(validate(&rep), 2);
	snprintf(want, sizeof(want), "class %u: slot %u is held as the host's, but the host "
		 "does not hold it", CLS(f1.slot), IDXOF(f1.slot));
	ck_assert_msg(strstr(rep.text, want) != NULL, "no \"%s\" in %s", want, rep.text);
	snprintf(want, sizeof(want), "class %u: slot %u is held as the host's",
		 CLS(f2.slot), IDXOF(f2.slot));
	ck_assert_msg(strstr(rep.text, want) != NULL, "no \"%s\" in %s", want, rep.text);
	/* a view that is not the host's (hubctl inspect) cannot tell */
	ck_assert_uint_eq(hp_var_validate(&g1, NULL, NULL, NULL, NULL), 0);

	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, stuck_dead, NULL, NULL, NULL, &why,
				       NULL), 2);
	ck_assert_uint_eq(why.forged, 2);
	ck_assert_uint_eq(why.dead + why.no_owner + why.bad_state + why.gen_zero + why.lost, 0);
	ck_assert_uint_eq(gs_of(CLS(f1.slot), IDXOF(f1.slot)), GS(f1.gen + 1, HP_VAR_FREE));
	ck_assert_uint_eq(gs_of(CLS(f2.slot), IDXOF(f2.slot)), GS(f2.gen + 1, HP_VAR_FREE));
	ck_assert_uint_eq(host.diag[CLS(f1.slot)].reclaimed, 1);
	ck_assert_uint_eq(host.diag[CLS(f2.slot)].reclaimed, 1);
	/* the host's own untouched */
	ck_assert_uint_eq(gs_of(CLS(h1.slot), IDXOF(h1.slot)), GS(h1.gen, HP_VAR_ALLOCATED));
	ck_assert_uint_eq(owner_of(CLS(h1.slot), IDXOF(h1.slot)), HP_VAR_HOST);
	ck_assert_uint_eq(gs_of(CLS(h2.slot), IDXOF(h2.slot)), GS(h2.gen, HP_VAR_INFLIGHT));
	ck_assert_uint_eq(owner_of(CLS(h2.slot), IDXOF(h2.slot)), HP_VAR_HOST);
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_uint_eq(sweep(mono_ns(), stuck_dead), 0);
	/* the forger's late free is stale */
	ck_assert_int_eq(hp_var_free(&g1, f1.slot, f1.gen), -ESTALE);
	ck_assert_int_eq(hp_var_free(&host, h1.slot, h1.gen), 0);
	ck_assert_int_eq(hp_var_free(&host, h2.slot, h2.gen), 0);
	for (uint32_t c = 0; c < NCLS; c++)
		ck_assert_uint_eq(class_free(&host, c), host.c[c].spe);
}
END_TEST

/* A slot the host holds that a guest frees behind its back, takes again
 * and marks the host's: the record cannot tell it from the host's until
 * the host lets its reference go (its free fails, stale); from then on it
 * is forged and comes back, rather than staying in use for good. */
START_TEST(test_sweep_forged_after_host_let_go)
{
	struct hp_var_ref r, r2;
	struct hp_var_back why;
	struct reports rep;

	ck_assert_int_eq(hp_var_alloc(&g1, 10, &r), 0);
	ck_assert_int_eq(hp_var_send(&g1, r.slot, r.gen, 1), 0);
	ck_assert_int_eq(hp_var_pass(&host, r.slot, r.gen, 1, HP_VAR_HOST), 0);
	ck_assert_int_eq(hp_var_free(&g1, r.slot, r.gen), 0);
	ck_assert_int_eq(hp_var_alloc(&g1, 10, &r2), 0);
	ck_assert_uint_eq(r2.slot, r.slot);
	atomic_store(&meta(&host, CLS(r.slot), IDXOF(r.slot))->owner, HP_VAR_HOST);
	ck_assert_uint_eq(sweep(mono_ns(), stuck_dead), 0);
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_int_eq(hp_var_free(&host, r.slot, r.gen), -ESTALE);
	ck_assert(!host_holds_ref(&r));
	ck_assert_uint_eq(validate(&rep), 1);
	ck_assert_ptr_nonnull(strstr(rep.text, "is held as the host's"));
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, stuck_dead, NULL, NULL, NULL, &why,
				       NULL), 1);
	ck_assert_uint_eq(why.forged, 1);
	ck_assert_uint_eq(validate(&rep), 0);
	ck_assert_uint_eq(class_free(&host, 0), 4);
}
END_TEST

/* The sweep's tally: what each owner holds (Allocated or InFlight) once
 * the sweep's returns are done, in slots and in its classes' bytes; the
 * host's at 0. */
START_TEST(test_sweep_tally)
{
	struct hp_var_tally t[GUESTS + 1];
	struct hp_var_ref r[7];

	ck_assert_int_eq(hp_var_alloc(&g1, 10, &r[0]), 0);	/* 64 B */
	ck_assert_int_eq(hp_var_alloc(&g1, 60, &r[1]), 0);	/* 64 B */
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r[2]), 0);	/* 1 KiB, */
	ck_assert_int_eq(hp_var_send(&g1, r[2].slot, r[2].gen, 1), 0);	/* in flight, 1's */
	ck_assert_int_eq(hp_var_alloc(&g2, 200, &r[3]), 0);	/* 256 B */
	ck_assert_int_eq(hp_var_alloc(&host, 100, &r[4]), 0);	/* 256 B */
	/* guest 3's, and it is gone; one forged as the host's: both come
	 * back, neither is counted */
	ck_assert_int_eq(hp_var_alloc(&g2, 10, &r[5]), 0);
	atomic_store(&meta(&host, CLS(r[5].slot), IDXOF(r[5].slot))->owner, 3);
	ck_assert_int_eq(hp_var_alloc(&g2, 10, &r[6]), 0);
	atomic_store(&meta(&host, CLS(r[6].slot), IDXOF(r[6].slot))->owner, HP_VAR_HOST);
	memset(t, 0xAA, sizeof(t));
	dead_id = 3;
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, dead_is, NULL, NULL, NULL, NULL, t),
			  2);
	ck_assert_uint_eq(t[0].slots, 1);
	ck_assert_uint_eq(t[0].bytes, 256);
	ck_assert_uint_eq(t[1].slots, 3);
	ck_assert_uint_eq(t[1].bytes, 64 + 64 + 1024);
	ck_assert_uint_eq(t[2].slots, 1);
	ck_assert_uint_eq(t[2].bytes, 256);
	for (int i = 3; i <= GUESTS; i++)
		ck_assert_msg(t[i].slots == 0 && t[i].bytes == 0, "owner %d: %u slots, %llu bytes",
			      i, t[i].slots, (unsigned long long)t[i].bytes);
	/* all freed: nothing held by anyone */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(hp_var_free(i == 3 ? &g2 : &g1, r[i].slot, r[i].gen), 0);
	ck_assert_int_eq(hp_var_free(&host, r[4].slot, r[4].gen), 0);
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, dead_is, NULL, NULL, NULL, NULL, t),
			  0);
	for (int i = 0; i <= GUESTS; i++)
		ck_assert_msg(t[i].slots == 0 && t[i].bytes == 0, "owner %d: %u slots", i,
			      t[i].slots);
}
END_TEST

/* Class 0 of 4 slots, class 1 of one slot per extent (as the default's
 * largest class) */
static void
one_slot_setup(void)
{
	struct hp_var_conf c;

	memset(&c, 0, sizeof(c));
	c.nclasses = 2;
	c.max_extents = 2;
	c.cls[0].slot_size = 64;
	c.cls[0].count = 4;
	c.cls[1].slot_size = 1024;
	c.cls[1].count = 1;
	pool_open(&c);
	attach(&g1, 1);
	attach(&g2, 2);
}

/* r[shm.varslot.freelist]: a list broken without losing a slot off it (a
 * class's only slot linked to itself, a last link out of range) is
 * rebuilt by the next sweep. */
START_TEST(test_sweep_rebuilds_list_losing_none)
{
	struct hp_var_back why;
	struct hp_var_ref r, r2;
	struct reports rep;

	atomic_store(&meta(&host, 1, 0)->next_free, 0);
	ck_assert_uint_eq(validate(&rep), 1);
	ck_assert_ptr_nonnull(strstr(rep.text, "class 1: free list has a cycle at slot 0"));
	ck_assert_uint_eq(hp_var_sweep(&host, mono_ns(), 0, stuck_dead, NULL, NULL, NULL, &why,
				       NULL), 0);
	ck_assert_msg(validate(&rep) == 0, "after one sweep: %s", rep.text);
	ck_assert_uint_eq(host.diag[1].rebuilds, 1);
	ck_assert_uint_eq(host.diag[1].bad_links, 1);
	/* class 0's list 0 1 2 3, its last link past the end */
	atomic_store(&meta(&host, 0, 3)->next_free, 1000);
	ck_assert_uint_eq(validate(&rep), 1);
	ck_assert_ptr_nonnull(strstr(rep.text, "class 0: free list link out of range"));
	ck_assert_uint_eq(sweep(mono_ns(), stuck_dead), 0);
	ck_assert_msg(validate(&rep) == 0, "after one sweep: %s", rep.text);
	ck_assert_uint_eq(host.diag[0].rebuilds, 1);
	/* sound lists are left alone */
	ck_assert_uint_eq(sweep(mono_ns(), stuck_dead), 0);
	ck_assert_uint_eq(host.diag[0].rebuilds, 1);
	ck_assert_uint_eq(host.diag[1].rebuilds, 1);
	/* the one slot is had once */
	ck_assert_int_eq(hp_var_alloc(&g1, 1000, &r), 0);
	ck_assert_uint_eq(CLS(r.slot), 1);
	ck_assert_int_eq(hp_var_alloc(&g2, 1000, &r2), -EAGAIN);
	ck_assert_int_eq(hp_var_free(&g1, r.slot, r.gen), 0);
	ck_assert_uint_eq(validate(&rep), 0);
}
END_TEST

/* -- corruption: each found by validate, repaired by rebuild ------------ */

/* Every slot of class 0 (grown to 2 extents: 8 slots) allocatable, each
 * once, none of another class's. */
static void
all_allocatable(int nslots)
{
	struct hp_var_ref r[16];
	int n = 0;

	for (; n < nslots; n++) {
		ck_assert_int_eq(hp_var_alloc(&g1, 8, &r[n]), 0);
		ck_assert_msg(CLS(r[n].slot) == 0, "alloc %d fell back to class %u", n,
			      CLS(r[n].slot));
		for (int j = 0; j < n; j++)
			ck_assert_msg(r[j].slot != r[n].slot, "slot %u handed out twice", r[n].slot);
	}
	ck_assert_int_eq(hp_var_alloc(&g1, 8, &r[n]), 0);
	ck_assert_uint_eq(CLS(r[n].slot), 1);
	for (int j = 0; j <= n; j++)
		ck_assert_int_eq(hp_var_free(&g1, r[j].slot, r[j].gen), 0);
}

static void
repaired(const char *phrase, int nslots)
{
	struct reports rep;
	uint32_t n = validate(&rep);

	ck_assert_msg(n > 0, "validate missed: %s", phrase);
	ck_assert_msg(strstr(rep.text, phrase) != NULL, "validate said \"%s\", not \"%s\"",
		      rep.text, phrase);
	hp_var_rebuild(&host, 0);
	n = validate(&rep);
	ck_assert_msg(n == 0, "after rebuild: %s", rep.text);
	ck_assert_uint_eq(host.diag[0].rebuilds, 1);
	all_allocatable(nslots);
	ck_assert_uint_eq(validate(&rep), 0);
}

/* class 0 in 2 extents, its list 4 5 6 7 0 1 2 3 */
static void
corrupt_setup(void)
{
	setup();
	ck_assert_int_eq(hp_var_grow(&host, 0), 0);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
}

/* r[shm.varslot.freelist] */
START_TEST(test_corrupt_cycle)
{
	atomic_store(&meta(&host, 0, 1)->next_free, 6);
	repaired("cycle", 8);
}
END_TEST

START_TEST(test_corrupt_link_out_of_range)
{
	atomic_store(&meta(&host, 0, 2)->next_free, 1000);
	repaired("out of range", 8);
}
END_TEST

START_TEST(test_corrupt_link_unmapped_extent)
{
	/* inside max_extents but in an extent nobody published */
	atomic_store(&meta(&host, 0, 5)->next_free, 9);
	repaired("out of range", 8);
}
END_TEST

/* r[shm.varslot.ownership]: a held slot on the list */
START_TEST(test_corrupt_held_on_list)
{
	struct hp_var_slot *s = meta(&host, 0, 6);

	atomic_store(&s->owner, 2);
	atomic_store(&s->gen_state, GS(3, HP_VAR_ALLOCATED));
	repaired("on the free list but allocated", 7);
	/* its holder frees it: all 8 again */
	ck_assert_int_eq(hp_var_free(&g2, SLOT(0, 6), 3), 0);
	all_allocatable(8);
}
END_TEST

START_TEST(test_corrupt_leaked)
{
	/* 0 -> 2: slot 1 is free and on no list */
	atomic_store(&meta(&host, 0, 0)->next_free, 2);
	repaired("slot 1 is free but on no free list", 8);
}
END_TEST

START_TEST(test_corrupt_bad_state)
{
	atomic_store(&meta(&host, 0, 3)->gen_state, GS(5, 7));
	repaired("has state 7", 8);
	/* taken back with its generation moved on */
	ck_assert_uint_eq((uint32_t)gs_of(0, 3), 7);
}
END_TEST

START_TEST(test_corrupt_generation_zero)
{
	struct hp_var_ref r;

	/* a held slot that says it was never allocated: its holder's
	 * reference (generation 1) can never free it */
	ck_assert_int_eq(hp_var_alloc(&g1, 8, &r), 0);
	atomic_store(&meta(&host, 0, IDXOF(r.slot))->gen_state, GS(0, HP_VAR_ALLOCATED));
	repaired("generation 0", 8);
	ck_assert_int_eq(hp_var_free(&g1, r.slot, r.gen), -ESTALE);
}
END_TEST

START_TEST(test_corrupt_owner_out_of_range)
{
	struct hp_var_ref r;

	ck_assert_int_eq(hp_var_alloc(&g1, 8, &r), 0);
	atomic_store(&meta(&host, 0, IDXOF(r.slot))->owner, 77);
	repaired("by no peer (owner 77)", 8);
}
END_TEST

START_TEST(test_corrupt_head_out_of_range)
{
	struct hp_var_ref r;

	atomic_store(&host.cls[0].free_head, (uint64_t)9 << 32 | 5000);
	/* alloc moves on to class 1 and marks class 0 for rebuild */
	ck_assert_int_eq(hp_var_alloc(&g1, 8, &r), 0);
	ck_assert_uint_eq(CLS(r.slot), 1);
	ck_assert_uint_eq(atomic_load(&host.cls[0].corrupt), 1);
	ck_assert_int_eq(hp_var_free(&g1, r.slot, r.gen), 0);
	/* the sweeper rebuilds a class marked corrupt */
	sweep(mono_ns(), stuck_dead);
	ck_assert_uint_eq(atomic_load(&host.cls[0].corrupt), 0);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
	all_allocatable(8);
}
END_TEST

/* Alloc on a broken list: bounded, never the same slot twice. */
START_TEST(test_corrupt_alloc_bounded)
{
	struct hp_var_ref r[64];
	int n;

	/* list 4 5 6 7 0 1 2 3: make 1 point back at 4 (a cycle through
	 * 6 slots), and 5 point at itself */
	atomic_store(&meta(&host, 0, 1)->next_free, 4);
	for (n = 0; n < 64; n++) {
		ck_assert_int_eq(hp_var_alloc(&g1, 8, &r[n]), 0);
		for (int j = 0; j < n; j++)
			ck_assert_msg(r[j].slot != r[n].slot, "slot %u handed out twice", r[n].slot);
		if (CLS(r[n].slot) != 0)
			break;
	}
	ck_assert_int_lt(n, 64);
	ck_assert_uint_eq(atomic_load(&host.cls[0].corrupt), 1);
	/* at most the 6 slots on the cycle came from class 0 */
	ck_assert_int_le(n, 6);
	for (int j = 0; j <= n; j++)
		ck_assert_int_eq(hp_var_free(&g1, r[j].slot, r[j].gen), 0);
	hp_var_rebuild(&host, 0);
	ck_assert_uint_eq(hp_var_validate(&host, NULL, NULL, NULL, NULL), 0);
	all_allocatable(8);

	/* a slot linked to itself */
	atomic_store(&meta(&host, 0, 5)->next_free, 5);
	for (n = 0; n < 64; n++) {
		ck_assert_int_eq(hp_var_alloc(&g2, 8, &r[n]), 0);
		for (int j = 0; j < n; j++)
			ck_assert_msg(r[j].slot != r[n].slot, "slot %u handed out twice", r[n].slot);
		if (CLS(r[n].slot) != 0)
			break;
	}
	ck_assert_int_lt(n, 64);
	ck_assert_uint_eq(atomic_load(&host.cls[0].corrupt), 1);
}
END_TEST

/* hp_var_attach checks the headers it is given. */
START_TEST(test_attach_refusals)
{
	struct hp_varpool vp;
	struct hp_var_header *h = (struct hp_var_header *)(void *)(base + OFFSET);
	uint64_t off1 = atomic_load(&host.cls[1].extent_offsets[0]);
	const char *why;

	why = NULL;
	h->nclasses = HP_VAR_MAX_CLASSES + 1;
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "class count"));
	h->nclasses = 0;
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	h->nclasses = NCLS;
	h->max_extents = HP_VAR_MAX_EXTENTS + 1;
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "max_extents"));
	h->max_extents = MAXEXT;
	h->max_payload = 4096;
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "max_payload"));
	h->max_payload = 1024;
	host.cls[1].slot_size = 32;
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "slot size or count"));
	host.cls[1].slot_size = 2048;	/* not ascending */
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	host.cls[1].slot_size = 256;
	/* an extent beyond the file, misaligned, before the region, or one
	 * whose header names another class */
	atomic_store(&host.cls[1].extent_offsets[0], size + 4096);
	why = NULL;
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "outside the file"));
	atomic_store(&host.cls[1].extent_offsets[0], size - 4096);	/* class 2's */
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	atomic_store(&host.cls[1].extent_offsets[0], off1 + 64);
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	atomic_store(&host.cls[1].extent_offsets[0], 0);
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	atomic_store(&host.cls[1].extent_offsets[0], atomic_load(&host.cls[0].extent_offsets[0]));
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	atomic_store(&host.cls[1].extent_offsets[0], off1);
	atomic_store(&host.cls[1].extent_count, MAXEXT + 1);
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	atomic_store(&host.cls[1].extent_count, 0);
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 1, &why), -EBADMSG);
	atomic_store(&host.cls[1].extent_count, 1);
	/* the region placed wrong */
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, 100, GUESTS, 1, &why), -EBADMSG);
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, size, GUESTS, 1, &why), -EBADMSG);
	ck_assert_int_eq(hp_var_attach(&vp, base, OFFSET + 1024, fd, 1, OFFSET, GUESTS, 1, &why),
			 -EBADMSG);
	/* an owner id that is no peer */
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, GUESTS + 1, &why),
			 -EINVAL);
	/* repaired: fine again */
	ck_assert_int_eq(hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, 3, &why), 0);
	hp_var_close(&vp);
}
END_TEST

/* The figures hubctl pool shows. */
START_TEST(test_class_stats)
{
	struct hp_var_ref r[8];
	struct hp_var_class_stats s;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(hp_var_alloc(&g1, 32, &r[i]), 0);
	ck_assert_int_eq(hp_var_free(&g1, r[1].slot, r[1].gen), 0);
	ck_assert_int_eq(hp_var_free(&g1, r[1].slot, r[1].gen), -EALREADY);	/* guest's error */
	ck_assert_int_eq(hp_var_free(&host, r[1].slot, r[1].gen), -EALREADY);	/* host's diag */
	for (int i = 3; i < 7; i++)
		ck_assert_int_eq(hp_var_alloc(&g2, 32, &r[i]), 0);	/* 2 fall back */
	ck_assert_uint_eq(CLS(r[5].slot), 1);
	ck_assert_int_eq(hp_var_free(&g2, r[5].slot, r[5].gen), 0);

	hp_var_class_stats(&g1, 0, &s);
	ck_assert_uint_eq(s.slot_size, 64);
	ck_assert_uint_eq(s.slots_per_extent, 4);
	ck_assert_uint_eq(s.extents, 1);
	ck_assert_uint_eq(s.slots, 4);
	ck_assert_uint_eq(s.free, 0);
	ck_assert_uint_eq(s.in_use, 4);
	ck_assert_uint_eq(s.high_water, 4);
	ck_assert_uint_eq(s.allocs, 5);
	ck_assert_uint_eq(s.frees, 1);
	ck_assert_uint_eq(s.fallbacks, 0);
	ck_assert_uint_eq(s.errors, 1);		/* the guest's; the host's is its own view's */
	hp_var_class_stats(&host, 0, &s);
	ck_assert_uint_eq(s.diag.double_frees, 1);
	ck_assert_uint_eq(s.errors, 2);
	ck_assert_uint_eq(atomic_load(&host.cls[0].in_use), 4);

	hp_var_class_stats(&host, 1, &s);
	ck_assert_uint_eq(s.slots, 4);
	ck_assert_uint_eq(s.allocs, 2);
	ck_assert_uint_eq(s.fallbacks, 2);
	ck_assert_uint_eq(s.frees, 1);
	ck_assert_uint_eq(s.free, 3);
	ck_assert_uint_eq(s.in_use, 1);
	ck_assert_uint_eq(s.high_water, 2);
	ck_assert_uint_eq(s.waits, 0);
	hp_var_class_stats(&host, 2, &s);
	ck_assert_uint_eq(s.allocs, 0);
	ck_assert_uint_eq(s.free, 2);
	ck_assert_uint_eq(s.high_water, 0);
}
END_TEST

/* -- many processes ------------------------------------------------------ */

#define KIDS		4
#define KIDS_KILLED	2
#define RUN_NS		2000000000ull
#define HOLD		6

static pid_t kids[KIDS];

static void
reap_kids(void)
{
	for (int i = 0; i < KIDS; i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
}

static void
stress_teardown(void)
{
	reap_kids();
	teardown();
}

static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Each slot held carries its holder's stamp: a slot handed out twice is
 * seen when the other holder's stamp is found in it. */
struct stamp {
	uint32_t	self, slot, gen, n;
};

static int
held_ok(const struct hp_var_ref *r, uint32_t self)
{
	struct stamp st;

	memcpy(&st, r->data, sizeof(st));
	return st.self == self && st.slot == r->slot && st.gen == r->gen;
}

static void
stamp(const struct hp_var_ref *r, uint32_t self, uint32_t n)
{
	struct stamp st = { self, r->slot, r->gen, n };

	memcpy(r->data, &st, sizeof(st));
}

/* A guest's life: random sizes across the classes, holding a few, some
 * sent (to itself, as a guest's slot stays its own in flight) before the
 * free. Returns 0, or what went wrong. */
static int
churn(struct hp_varpool *vp, uint32_t self, uint64_t run_ns)
{
	static const uint32_t lens[] = { 8, 60, 64, 100, 250, 256, 700, 1024 };
	struct hp_var_ref held[HOLD];
	int nheld = 0;
	uint64_t x = 0x9E3779B97F4A7C15ull * (self + 1), end = mono_ns() + run_ns;

	for (uint32_t n = 0; (n & 255) != 0 || mono_ns() < end; n++) {
		uint64_t v = rnd(&x);

		if (nheld < HOLD && (v & 3) != 0) {
			struct hp_var_ref *r = &held[nheld];
			int rc = hp_var_alloc(vp, lens[(v >> 8) % 8], r);

			if (rc == -EAGAIN)
				continue;
			if (rc != 0)
				return 10;
			if (r->cap < 16)
				return 11;
			stamp(r, self, n);
			nheld++;
		} else if (nheld > 0) {
			uint32_t k = (uint32_t)(v >> 16) % (uint32_t)nheld;
			struct hp_var_ref r = held[k];

			held[k] = held[--nheld];
			if (!held_ok(&r, self))
				return 12;
			if ((v & 0x300) != 0 && hp_var_send(vp, r.slot, r.gen, self) != 0)
				return 13;
			if (hp_var_free(vp, r.slot, r.gen) != 0)
				return 14;
		}
	}
	while (nheld > 0) {
		nheld--;
		if (!held_ok(&held[nheld], self))
			return 12;
		if (hp_var_free(vp, held[nheld].slot, held[nheld].gen) != 0)
			return 14;
	}
	return 0;
}

static int
killed(void *arg, uint32_t owner)
{
	(void)arg;
	return owner >= 1 && owner <= KIDS_KILLED;
}

static void
grow_requested(void)
{
	for (uint32_t c = 0; c < host.nclasses; c++)
		if (atomic_load(&host.cls[c].grow_request) != 0) {
			atomic_store(&host.cls[c].grow_request, 0);
			hp_var_grow(&host, c);
		}
}

/* r[shm.varslot.ownership] r[shm.varslot.freelist] r[shm.varslot.extents]:
 * four processes at once, two of them killed mid-run; the sweeper gives
 * back what the dead held, and every slot is then free and listed once. */
START_TEST(test_stress_processes)
{
	struct reports rep;
	uint64_t start = mono_ns();
	int status, live = KIDS;

	for (int i = 0; i < KIDS; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			struct hp_varpool vp;
			const char *why;

			/* the segment mapping is inherited: attach to it */
			if (hp_var_attach(&vp, base, size, fd, 1, OFFSET, GUESTS, (uint32_t)i + 1,
					  &why) != 0)
				_exit(9);
			_exit(churn(&vp, (uint32_t)i + 1, RUN_NS));
		}
	}
	/* the host grows classes as they are asked for, and gives back the
	 * memory of their free slots (taking each off the list meanwhile) */
	while (mono_ns() - start < 700000000ull) {
		grow_requested();
		for (uint32_t c = 0; c < NCLS; c++)
			hp_var_release(&host, c);
		usleep(10000);
	}
	for (int i = 0; i < KIDS_KILLED; i++) {
		ck_assert_int_eq(kill(kids[i], SIGKILL), 0);
		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		kids[i] = 0;
		ck_assert(WIFSIGNALED(status));
		live--;
	}
	/* bounded: the survivors stop after RUN_NS */
	while (live > 0 && mono_ns() - start < 5 * RUN_NS) {
		for (int i = KIDS_KILLED; i < KIDS; i++) {
			pid_t p;

			if (kids[i] <= 0 || (p = waitpid(kids[i], &status, WNOHANG)) == 0)
				continue;
			ck_assert_int_eq(p, kids[i]);
			kids[i] = 0;
			live--;
			ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				      "guest %d ended with status %#x", i + 1, status);
		}
		grow_requested();
		usleep(10000);
	}
	ck_assert_int_eq(live, 0);

	/* the killed held slots, and may have died mid-alloc or mid-free:
	 * the sweeper returns them, those on no list once they have stayed
	 * so for a while (its second look, a few seconds on) */
	sweep(mono_ns(), killed);
	sweep(mono_ns() + 3000000000ull, killed);
	ck_assert_msg(validate(&rep) == 0, "after the sweep: %s", rep.text);
	for (uint32_t c = 0; c < NCLS; c++) {
		struct hp_var_class_stats s;

		hp_var_class_stats(&host, c, &s);
		ck_assert_uint_eq(s.free, s.slots);
		ck_assert_uint_gt(s.allocs, 0);
	}
	/* and each is allocatable again, once */
	for (uint32_t c = 0; c < NCLS; c++) {
		struct hp_var_class_stats s;
		struct hp_var_ref r;
		uint32_t n = 0;

		hp_var_class_stats(&host, c, &s);
		while (hp_var_alloc(&g1, host.c[c].slot_size, &r) == 0) {
			if (CLS(r.slot) != c) {
				ck_assert_int_eq(hp_var_free(&g1, r.slot, r.gen), 0);
				break;
			}
			n++;
		}
		ck_assert_uint_eq(n, s.slots);
	}
}
END_TEST

/* -- giving memory back ---------------------------------------------------- */

#define REL_SLOT	8192u
#define REL_SPE		4u

/* one class of 8 KiB slots, 4 an extent, 4 extents */
static void
release_setup(void)
{
	struct hp_var_conf c;

	memset(&c, 0, sizeof(c));
	c.nclasses = 1;
	c.max_extents = 4;
	c.cls[0].slot_size = REL_SLOT;
	c.cls[0].count = REL_SPE;
	pool_open(&c);
	attach(&g1, 1);
	attach(&g2, 2);
}

static uint64_t
file_blocks(void)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* The grown extents' free slots give their pages back; every slot stays
 * free and listed once, the first extent's on top, the stats untouched,
 * and a slot given back reads zero and takes a payload again. */
START_TEST(test_release)
{
	struct hp_var_ref r[4 * REL_SPE];
	struct hp_var_class_stats before, after;
	struct reports rep;
	uint64_t blocks, bytes;

	/* nothing to give before the class grew */
	ck_assert_uint_eq(hp_var_release(&host, 0), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(hp_var_grow(&host, 0), 0);
	/* the grown extents' 12 slots, the last extent's first (the list's
	 * top after growing); the first extent's 4 never used */
	for (uint32_t i = 0; i < 3 * REL_SPE; i++) {
		ck_assert_int_eq(hp_var_alloc(&g1, REL_SLOT, &r[i]), 0);
		ck_assert_uint_ge(IDXOF(r[i].slot), REL_SPE);
		memset(r[i].data, 0xA5, REL_SLOT);
	}
	ck_assert_uint_eq(IDXOF(r[0].slot), 3 * REL_SPE);
	/* that one still held: its pages stay */
	for (uint32_t i = 1; i < 3 * REL_SPE; i++)
		ck_assert_int_eq(hp_var_free(&g1, r[i].slot, r[i].gen), 0);
	hp_var_class_stats(&host, 0, &before);
	ck_assert_uint_eq(before.high_water, 3 * REL_SPE);
	blocks = file_blocks();
	bytes = hp_var_release(&host, 0);
	/* 11 slots in three runs, less what shares a page with another's */
	ck_assert_msg(bytes >= 9 * REL_SLOT && bytes <= 11 * REL_SLOT,
		      "%llu bytes given back", (unsigned long long)bytes);
	ck_assert_msg(blocks - file_blocks() >= bytes, "the file holds %llu bytes, had %llu",
		      (unsigned long long)file_blocks(), (unsigned long long)blocks);
	/* every slot free but the held one, listed once; the figures are
	 * the guests' (a high water of all 16 would be the release's) */
	hp_var_class_stats(&host, 0, &after);
	ck_assert_uint_eq(after.free, 4 * REL_SPE - 1);
	ck_assert_uint_eq(after.allocs, before.allocs);
	ck_assert_uint_eq(after.frees, before.frees);
	ck_assert_uint_eq(after.high_water, before.high_water);
	ck_assert_uint_eq(atomic_load(&host.cls[0].in_use), 1);
	ck_assert_msg(validate(&rep) == 0, "%s", rep.text);
	/* the held slot kept its bytes */
	ck_assert_uint_eq(r[0].data[0], 0xA5);
	ck_assert_uint_eq(r[0].data[REL_SLOT - 1], 0xA5);
	/* the first extent's slots come first */
	for (uint32_t i = 1; i <= REL_SPE; i++) {
		ck_assert_int_eq(hp_var_alloc(&g2, REL_SLOT, &r[i]), 0);
		ck_assert_uint_lt(IDXOF(r[i].slot), REL_SPE);
	}
	/* then the others: zero where their pages went, written again */
	for (uint32_t i = REL_SPE + 1; i < 4 * REL_SPE; i++) {
		ck_assert_int_eq(hp_var_alloc(&g2, REL_SLOT, &r[i]), 0);
		ck_assert_uint_ge(IDXOF(r[i].slot), REL_SPE);
		ck_assert_uint_eq(r[i].data[REL_SLOT / 2], 0);
		memset(r[i].data, 0x5A, REL_SLOT);
		ck_assert_uint_eq(r[i].data[REL_SLOT - 1], 0x5A);
	}
	ck_assert_int_eq(hp_var_alloc(&g2, REL_SLOT, &r[1]), -EAGAIN);
	/* a guest's view gives nothing back */
	ck_assert_uint_eq(hp_var_release(&g1, 0), 0);
}
END_TEST

/* -- many threads (make check-tsan) -------------------------------------- */

#define THREADS		3

struct worker {
	pthread_t		t;
	struct hp_varpool	vp;
	uint32_t		self;
	int			rc;
};

static void *
work(void *arg)
{
	struct worker *w = arg;

	w->rc = churn(&w->vp, w->self, 1000000000ull);
	return NULL;
}

static int
nobody_dead(void *arg, uint32_t owner)
{
	(void)arg;
	(void)owner;
	return 0;
}

/* r[shm.varslot.allocation] r[shm.varslot.freeing]: views in threads at
 * once, the host growing, sweeping and releasing meanwhile */
START_TEST(test_stress_threads)
{
	static struct worker w[THREADS];
	struct reports rep;
	uint64_t start = mono_ns();

	for (int i = 0; i < THREADS; i++) {
		w[i].self = (uint32_t)i + 1;
		attach(&w[i].vp, w[i].self);
		ck_assert_int_eq(pthread_create(&w[i].t, NULL, work, &w[i]), 0);
	}
	while (mono_ns() - start < 900000000ull) {
		grow_requested();
		sweep(mono_ns(), nobody_dead);
		for (uint32_t c = 0; c < NCLS; c++)
			hp_var_release(&host, c);
		usleep(5000);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(w[i].t, NULL);
		hp_var_close(&w[i].vp);
	}
	for (int i = 0; i < THREADS; i++)
		ck_assert_msg(w[i].rc == 0, "thread %d: %d", i + 1, w[i].rc);
	ck_assert_msg(validate(&rep) == 0, "%s", rep.text);
	for (uint32_t c = 0; c < NCLS; c++)
		ck_assert_uint_eq(class_free(&host, c), host.c[c].mapped * host.c[c].spe);
}
END_TEST

Suite *suite_varpool(void);

Suite *
suite_varpool(void)
{
	Suite *s = suite_create("varpool");
	TCase *tc = tcase_create("pool");
	TCase *tk = tcase_create("corrupt");
	TCase *to = tcase_create("one slot");
	TCase *tr = tcase_create("release");
	TCase *ts = tcase_create("stress");
	TCase *tt = tcase_create("threads");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_conf_check);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_create_layout);
	tcase_add_test(tc, test_selection);
	tcase_add_test(tc, test_fallback_and_exhaustion);
	tcase_add_test(tc, test_alloc_spare);
	tcase_add_test(tc, test_growth);
	tcase_add_test(tc, test_life_and_checks);
	tcase_add_test(tc, test_stale_send_keeps_owner);
	tcase_add_test(tc, test_aba_tag);
	tcase_add_test(tc, test_sweep_dead);
	tcase_add_test(tc, test_sweep_stuck);
	tcase_add_test(tc, test_generation_wraps);
	tcase_add_test(tc, test_sweep_lost);
	tcase_add_test(tc, test_host_record);
	tcase_add_test(tc, test_sweep_forged);
	tcase_add_test(tc, test_sweep_forged_after_host_let_go);
	tcase_add_test(tc, test_sweep_tally);
	tcase_add_test(tc, test_attach_refusals);
	tcase_add_test(tc, test_class_stats);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tk, corrupt_setup, teardown);
	tcase_add_test(tk, test_corrupt_cycle);
	tcase_add_test(tk, test_corrupt_link_out_of_range);
	tcase_add_test(tk, test_corrupt_link_unmapped_extent);
	tcase_add_test(tk, test_corrupt_held_on_list);
	tcase_add_test(tk, test_corrupt_leaked);
	tcase_add_test(tk, test_corrupt_bad_state);
	tcase_add_test(tk, test_corrupt_generation_zero);
	tcase_add_test(tk, test_corrupt_owner_out_of_range);
	tcase_add_test(tk, test_corrupt_head_out_of_range);
	tcase_add_test(tk, test_corrupt_alloc_bounded);
	suite_add_tcase(s, tk);

	tcase_add_checked_fixture(tr, release_setup, teardown);
	tcase_add_test(tr, test_release);
	suite_add_tcase(s, tr);

	tcase_add_checked_fixture(to, one_slot_setup, teardown);
	tcase_add_test(to, test_sweep_rebuilds_list_losing_none);
	suite_add_tcase(s, to);

	tcase_add_checked_fixture(ts, setup, stress_teardown);
	tcase_add_test(ts, test_stress_processes);
	tcase_set_timeout(ts, 15);
	suite_add_tcase(s, ts);

	tcase_add_checked_fixture(tt, setup, teardown);
	tcase_add_test(tt, test_stress_threads);
	tcase_set_timeout(tt, 15);
	tcase_set_tags(tt, "tsan");
	suite_add_tcase(s, tt);
	return s;
}
