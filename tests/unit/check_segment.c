/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Segment geometry, creation and attach: every corrupt or foreign file
 * gives a clear error, never a crash. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/channel.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/slot.h"
#include "tests/unit/testseg.h"

static char path[64];

/* Named in the runner before it forks each test, so the runner can remove
 * the file even after a test that died. */
static void
setup(void)
{
	snprintf(path, sizeof(path), "/dev/shm/hub-test-seg-%d", (int)getpid());
}

static void
teardown(void)
{
	unlink(path);
}

static struct hp_params
small(void)
{
	struct hp_params p = testseg_params(2, 8, 128, 70);

	p.max_channels = 4;
	return p;
}

/* r[shm.handshake] r[shm.segment.guest-rings] r[shm.segment.slot-pools]
 * r[shm.segment.pool-size] r[shm.segment.host-slots]
 * r[shm.segment.guest-slot-offset] r[shm.ring.layout] r[shm.ring.alignment]
 * r[shm.flow.channel-table-location] */
START_TEST(test_geometry_by_hand)
{
	struct hp_params p = small();
	struct hp_geometry g;
	const char *why = NULL;

	ck_assert_int_eq(hp_geometry_compute(&p, &g, &why), 0);
	ck_assert_uint_eq(g.peer_table_offset, 128);
	ck_assert_uint_eq(g.ext_offset, 128 + 2 * 64);
	ck_assert_uint_eq(g.ring_region_offset, 256 + 2 * 128);
	ck_assert_uint_eq(g.ring_bytes, 2 * 8 * 64);
	ck_assert_uint_eq(g.chan_region_offset, 512 + 2 * 1024);
	ck_assert_uint_eq(g.chan_bytes, 64);
	ck_assert_uint_eq(g.slot_region_offset, 2560 + 2 * 64);
	ck_assert_uint_eq(g.pool_header_size, 64);	/* 2 bitmap words, padded */
	ck_assert_uint_eq(g.pool_size, 64 + 70 * 128);
	ck_assert_uint_eq(g.total_size, 2688 + 3 * (64 + 70 * 128));
	ck_assert_uint_eq(hp_geometry_pool_offset(&g, 0), g.slot_region_offset);
	ck_assert_uint_eq(hp_geometry_pool_offset(&g, 2), g.slot_region_offset + 2 * g.pool_size);
	ck_assert_uint_eq(hp_geometry_ring_offset(&g, 2) % 64, 0);
}
END_TEST

START_TEST(test_bad_parameters)
{
	struct hp_params p;
	struct hp_geometry g;
	const char *why;

#define BAD(field, value) do {						\
		p = small();						\
		p.field = value;					\
		why = NULL;						\
		ck_assert_msg(hp_geometry_compute(&p, &g, &why) == -EINVAL && why != NULL, \
			      #field " = " #value " accepted");		\
	} while (0)
	/* r[shm.topology.max-guests] */
	BAD(max_guests, 0);
	BAD(max_guests, 256);
	BAD(ring_size, 0);
	BAD(ring_size, 3);
	BAD(ring_size, 131072);
	BAD(slot_size, 100);
	BAD(slot_size, 0);
	BAD(slots_per_guest, 0);
	BAD(slots_per_guest, (1u << 20) + 1);
	BAD(max_channels, 1);
	BAD(initial_credit, 0);
	BAD(initial_credit, 0x80000000u);
	BAD(max_payload_size, 0);
	BAD(max_payload_size, 125);
	/* too large in all: 255 guests of 2^20 slots of 4 GiB */
	p = small();
	p.max_guests = 255;
	p.slots_per_guest = 1u << 20;
	p.slot_size = 0xFFFFFFC0u;
	ck_assert_int_eq(hp_geometry_compute(&p, &g, &why), -EINVAL);
#undef BAD
}
END_TEST

/* r[shm.file.create] r[shm.file.attach] r[shm.segment.magic]
 * r[shm.segment.header] r[shm.ring.initialization] r[shm.segment.peer-state]
 * r[shm.file.mmap-posix]; a memfd sealed so that nobody can shrink or grow
 * it under the host's mapping */
START_TEST(test_create_then_attach)
{
	struct hp_params p = small();
	struct hp_segment host, guest;
	struct hp_slot_pool pool;
	struct stat st;
	const char *why = NULL;
	int fd;

	ck_assert_msg(testseg_create(&host, path, &p, &why) == 0, "%s", why);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, host.geo.total_size);
	ck_assert_int_eq(fcntl(host.fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	/* a guest that opens it again by its path is held to the seals */
	ck_assert_int_ge(fd = open(path, O_RDWR), 0);
	ck_assert_int_eq(ftruncate(fd, 4096), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(ftruncate(fd, (off_t)host.size * 2), -1);
	ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	close(fd);
	ck_assert_mem_eq(host.base, "RAPAHUB\x01", 8);
	ck_assert_msg(hp_segment_attach(&guest, path, 0, &why) == 0, "%s", why);
	ck_assert_uint_eq(guest.params.max_guests, p.max_guests);
	ck_assert_uint_eq(guest.params.ring_size, p.ring_size);
	ck_assert_uint_eq(guest.params.slot_size, p.slot_size);
	ck_assert_uint_eq(guest.params.slots_per_guest, p.slots_per_guest);
	ck_assert_uint_eq(guest.params.max_channels, p.max_channels);
	ck_assert_uint_eq(guest.params.initial_credit, p.initial_credit);
	ck_assert_uint_eq(guest.params.max_payload_size, p.max_payload_size);
	ck_assert_uint_eq(guest.params.heartbeat_interval, p.heartbeat_interval);
	ck_assert_uint_eq(guest.geo.total_size, host.geo.total_size);
	ck_assert_uint_eq(hp_segment_header(&guest)->host_features, HP_FEAT_WAITERS);
	for (uint32_t id = 1; id <= 2; id++) {
		struct hp_peer_entry *e = hp_segment_peer(&guest, id);
		struct hp_peer_view v;

		ck_assert_uint_eq(e->state, HP_PEER_EMPTY);
		ck_assert_uint_eq(e->g2h_head, 0);
		ck_assert_int_eq(hp_peer_view_guest(&guest, id, &v, &why), 0);
		hp_slot_pool_view(&pool, v.pool, p.slots_per_guest, p.slot_size);
		ck_assert_uint_eq(hp_slot_count_free(&pool), 70);
		ck_assert_uint_eq(pool.bitmap[1], (1ull << 6) - 1);	/* no bits past the end */
	}
	/* r[shm.topology.peer-id] */
	ck_assert_ptr_null(hp_segment_peer(&guest, 0));
	ck_assert_ptr_null(hp_segment_peer(&guest, 3));
	hp_segment_close(&guest);
	ck_assert_int_eq(hp_segment_attach(&guest, path, HP_ATTACH_RDONLY, &why), 0);
	hp_segment_close(&guest);
	hp_segment_close(&host);
}
END_TEST

/* r[shm.segment.peer-table]: guest 2's domain, as hubd makes it: only
 * its entry has areas, its pool and the host's pool are set up, and the
 * other entry is Empty with no areas (a guest given peer id 1 would
 * refuse it); the pool flag is announced only when asked for. */
START_TEST(test_domain_of_one_guest)
{
	struct hp_params p = small();
	struct hp_segment dom, g;
	struct hp_peer_view v;
	struct hp_slot_pool pool;
	const char *why = NULL;
	char at[64];

	ck_assert_msg(hp_segment_create(&dom, &p, 2, HP_FEAT_VARSLOT, "hub:test", &why) == 0,
		      "%s", why);
	snprintf(at, sizeof(at), "/proc/self/fd/%d", dom.fd);
	ck_assert_msg(hp_segment_attach(&g, at, 0, &why) == 0, "%s", why);
	ck_assert_uint_eq(hp_segment_header(&g)->host_features, HP_FEAT_WAITERS | HP_FEAT_VARSLOT);
	ck_assert_uint_eq(hp_segment_header(&g)->varpool_offset, 0);
	/* r[shm.goodbye.host]: what the host says, the guest's mapping sees */
	ck_assert_int_eq(hp_host_goodbye_said(&g), 0);
	hp_host_goodbye_say(&dom);
	ck_assert_int_eq(hp_host_goodbye_said(&g), 1);
	ck_assert_int_eq(hp_peer_view_guest(&g, 2, &v, &why), 0);
	hp_slot_pool_view(&pool, v.pool, p.slots_per_guest, p.slot_size);
	ck_assert_uint_eq(hp_slot_count_free(&pool), p.slots_per_guest);
	hp_slot_pool_view(&pool, v.host_pool, p.slots_per_guest, p.slot_size);
	ck_assert_uint_eq(hp_slot_count_free(&pool), p.slots_per_guest);
	ck_assert_uint_eq(hp_segment_peer(&g, 1)->state, HP_PEER_EMPTY);
	ck_assert_uint_eq(hp_segment_peer(&g, 1)->ring_offset, 0);
	ck_assert_int_eq(hp_peer_view_guest(&g, 1, &v, &why), -EBADMSG);
	hp_segment_close(&g);
	hp_segment_close(&dom);
	/* peer ids beyond the hub's are refused */
	ck_assert_int_eq(hp_segment_create(&dom, &p, p.max_guests + 1, 0, "hub:test", &why),
			 -EINVAL);
	ck_assert_int_eq(hp_segment_create(&dom, &p, 1, 0, "hub:test", &why), 0);
	ck_assert_uint_eq(hp_segment_header(&dom)->host_features, HP_FEAT_WAITERS);
	hp_segment_close(&dom);
}
END_TEST

static int
attach_file(const void *data, size_t n, const char **why)
{
	struct hp_segment s;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), rc;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
	close(fd);
	rc = hp_segment_attach(&s, path, 0, why);
	if (rc == 0)
		hp_segment_close(&s);
	return rc;
}

START_TEST(test_attach_bad_files)
{
	struct hp_segment s;
	const char *why;
	char zeros[4096] = { 0 };

	unlink(path);
	ck_assert_int_eq(hp_segment_attach(&s, path, 0, &why), -ENOENT);
	ck_assert_int_ne(hp_segment_attach(&s, "/dev/shm", 0, &why), 0);
	ck_assert_int_eq(attach_file("", 0, &why), -EAGAIN);		/* being created */
	ck_assert_int_eq(attach_file(zeros, 100, &why), -EBADMSG);	/* too small */
	ck_assert_int_eq(attach_file(zeros, sizeof(zeros), &why), -EAGAIN);	/* no magic yet */
	memcpy(zeros, "NOTAHUB!", 8);
	ck_assert_int_eq(attach_file(zeros, sizeof(zeros), &why), -EBADMSG);
	ck_assert_ptr_nonnull(why);
}
END_TEST

/* A valid image, corrupted in memory one field at a time. */
static uint8_t *
image(size_t *size)
{
	struct hp_params p = small();
	struct hp_segment host;
	const char *why;
	uint8_t *copy;

	char own[64];

	ck_assert_int_eq(testseg_create(&host, own, &p, &why), 0);
	*size = host.size;
	copy = malloc(*size);
	memcpy(copy, host.base, *size);
	hp_segment_close(&host);
	return copy;
}

START_TEST(test_validate_corruptions)
{
	size_t size;
	uint8_t *img = image(&size);
	struct hp_header *h = (struct hp_header *)(void *)img;
	struct hp_params p;
	struct hp_geometry g;
	const char *why;

#define CORRUPT(stmt, want) do {					\
		uint8_t *save = malloc(size);				\
		memcpy(save, img, size);				\
		stmt;							\
		why = NULL;						\
		ck_assert_msg(hp_segment_validate(img, size, &p, &g, &why) == (want), \
			      #stmt " not refused");			\
		ck_assert_ptr_nonnull(why);				\
		memcpy(img, save, size);				\
		free(save);						\
	} while (0)
	ck_assert_int_eq(hp_segment_validate(img, size, &p, &g, &why), 0);
	CORRUPT(h->version = 2, -EPROTONOSUPPORT);
	CORRUPT(h->header_size = 64, -EBADMSG);		/* r[shm.segment.header-size] */
	CORRUPT(h->total_size += 64, -EBADMSG);
	CORRUPT(h->ring_size = 3, -EBADMSG);
	CORRUPT(h->max_guests = 0, -EBADMSG);
	CORRUPT(h->max_guests = 300, -EBADMSG);
	CORRUPT(h->slot_size = 64, -EBADMSG);		/* max_payload_size no longer fits */
	CORRUPT(h->slot_size = 130, -EBADMSG);		/* r[shm.slot.generation]: misaligned */
	CORRUPT(h->slot_size = 4, -EBADMSG);
	CORRUPT(h->peer_table_offset = 0, -EBADMSG);		/* over the header */
	CORRUPT(h->peer_table_offset = 132, -EBADMSG);	/* misaligned */
	CORRUPT(h->peer_table_offset = size - 8, -EBADMSG);	/* outside */
	CORRUPT(h->slot_region_offset += 64, -EBADMSG);	/* outside */
	CORRUPT(h->slot_region_offset = 4, -EBADMSG);
	CORRUPT(h->slot_region_offset = 128, -EBADMSG);	/* over the peer table */
	CORRUPT(h->ext_offset = 64, -EBADMSG);
	CORRUPT(h->ext_offset = 65, -EBADMSG);
	CORRUPT(h->ext_offset = size, -EBADMSG);
	/* without the feature bit the table is not ours to use or check */
	h->host_features = 0;
	h->ext_offset = 65;
	ck_assert_int_eq(hp_segment_validate(img, size, &p, &g, &why), 0);
	ck_assert_uint_eq(g.ext_offset, 0);
	h->host_features = HP_FEAT_ALL;
	h->ext_offset = 0;
	ck_assert_int_eq(hp_segment_validate(img, size, &p, &g, &why), 0);
	ck_assert_uint_eq(g.ext_offset, 0);
	ck_assert_int_eq(hp_segment_validate(img, 100, &p, &g, &why), -EBADMSG);
	ck_assert_int_eq(hp_segment_validate(img, size - 1, &p, &g, &why), -EBADMSG);
#undef CORRUPT
	free(img);
}
END_TEST

/* 20,000 random corruptions of the header and peer table. */
START_TEST(test_validate_random_corruptions)
{
	size_t size;
	uint8_t *img = image(&size), *work = malloc(size);
	uint64_t x = 0x2545F4914F6CDD1Dull;
	struct hp_params p;
	struct hp_geometry g;
	const char *why;

	for (int round = 0; round < 20000; round++) {
		memcpy(work, img, 256);
		memcpy(work + 256, img + 256, size - 256);
		for (int k = 0; k < 1 + round % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			work[8 + x % (128 + 2 * 64 - 8)] = (uint8_t)(x >> 32);
		}
		if (hp_segment_validate(work, size, &p, &g, &why) == 0) {
			/* whatever passes is internally consistent */
			ck_assert_uint_eq(g.total_size, size);
			ck_assert_uint_le(p.max_guests, 255);
		}
	}
	free(work);
	free(img);
}
END_TEST

/* The host never trusts guest-writable offsets; a guest checks them. */
START_TEST(test_peer_views)
{
	struct hp_params p = small();
	struct hp_segment host;
	struct hp_peer_view hv, gv;
	const char *why;

	char own[64];

	ck_assert_int_eq(testseg_create(&host, own, &p, &why), 0);
	ck_assert_int_eq(hp_peer_view_guest(&host, 1, &gv, &why), 0);
	ck_assert_int_eq(hp_peer_view_host(&host, 1, &hv), 0);
	ck_assert_ptr_eq(gv.g2h, hv.g2h);
	ck_assert_ptr_eq(gv.pool, hv.pool);
	ck_assert_ptr_eq(gv.chans, hv.chans);
	ck_assert_ptr_eq(gv.h2g, hv.g2h + p.ring_size);
	hp_segment_peer(&host, 1)->ring_offset = host.size;
	ck_assert_int_eq(hp_peer_view_guest(&host, 1, &gv, &why), -EBADMSG);
	ck_assert_int_eq(hp_peer_view_host(&host, 1, &gv), 0);
	ck_assert_ptr_eq(gv.g2h, hv.g2h);
	ck_assert_int_eq(hp_peer_view_host(&host, 3, &gv), -EINVAL);
	hp_segment_close(&host);
}
END_TEST

/* r[shm.id.channel-scope]: guests 1 and 2 each open channel 1, and the
 * host channel 2 towards each: every id is an entry of that guest's own
 * table, the same as the guest and the host see it, and what one pair
 * does with its channel leaves the other's as it was. */
START_TEST(test_channel_ids_per_guest)
{
	struct hp_params p = small();
	struct hp_segment seg;
	struct hp_peer_view hv[2], gv[2];
	uint32_t gc[2] = { 0, 0 }, hc[2] = { 0, 0 };
	const char *why;
	char own[64];

	ck_assert_int_eq(testseg_create(&seg, own, &p, &why), 0);
	for (uint32_t i = 0; i < 2; i++) {
		ck_assert_int_eq(hp_peer_view_host(&seg, i + 1, &hv[i]), 0);
		ck_assert_int_eq(hp_peer_view_guest(&seg, i + 1, &gv[i], &why), 0);
		ck_assert_ptr_eq(gv[i].chans, hv[i].chans);
		ck_assert_int_eq(hp_chan_open(gv[i].chans, p.max_channels, HP_SIDE_GUEST,
					      p.initial_credit, &gc[i]), 1);
		ck_assert_int_eq(hp_chan_open(hv[i].chans, p.max_channels, HP_SIDE_HOST,
					      p.initial_credit, &hc[i]), 2);
	}
	ck_assert(hv[0].chans + p.max_channels <= hv[1].chans ||
		  hv[1].chans + p.max_channels <= hv[0].chans);
	hp_chan_grant(&hv[0].chans[1], 100);
	hp_chan_free(&gv[0].chans[2]);
	ck_assert_int_eq(hp_chan_credit(&gv[0].chans[1], 0), (int64_t)p.initial_credit + 100);
	ck_assert_int_eq(hp_chan_credit(&gv[1].chans[1], 0), p.initial_credit);
	ck_assert_uint_eq(hp_chan_state(&hv[0].chans[2]), HP_CHAN_FREE);
	ck_assert_uint_eq(hp_chan_state(&hv[1].chans[2]), HP_CHAN_ACTIVE);
	hp_segment_close(&seg);
}
END_TEST

/* The image written to the file and attached; 0 or the error. */
static int
attach_image(const uint8_t *img, size_t size, struct hp_segment *s, const char **why)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, img, size), (ssize_t)size);
	close(fd);
	return hp_segment_attach(s, path, 0, why);
}

/* Another host's layout, read as a guest reads it: everything from the
 * header and the entry, nothing from hubd's own geometry.
 * r[shm.segment.header] r[shm.segment.peer-table] r[shm.segment.host-slots]
 * r[shm.flow.channel-table-location] r[shm.slot.generation] */
START_TEST(test_foreign_layout)
{
	size_t size;
	uint8_t *img = testseg_foreign(&size);
	const struct hp_header *fh = (const struct hp_header *)(const void *)img;
	const struct hp_peer_entry *fe =
	    (const struct hp_peer_entry *)(const void *)(img + fh->peer_table_offset);
	struct hp_segment s;
	struct hp_peer_view v;
	struct hp_slot_pool pool;
	const char *why = NULL;
	uint32_t slot, gen;

	ck_assert_msg(attach_image(img, size, &s, &why) == 0, "%s", why);
	ck_assert_uint_eq(s.params.slot_size, 4100);
	ck_assert_uint_eq(s.geo.peer_table_offset, fh->peer_table_offset);
	ck_assert_uint_eq(s.geo.slot_region_offset, 128);
	ck_assert_uint_eq(s.geo.ext_offset, 0);
	ck_assert_uint_eq(s.host_features, 0);
	for (uint32_t id = 1; id <= 2; id++) {
		ck_assert_msg(hp_peer_view_guest(&s, id, &v, &why) == 0, "peer %u: %s", id, why);
		ck_assert_ptr_eq(v.g2h, (void *)(s.base + fe[id - 1].ring_offset));
		ck_assert_ptr_eq(v.pool, s.base + fe[id - 1].slot_pool_offset);
		ck_assert_ptr_eq(v.chans, (void *)(s.base + fe[id - 1].channel_table_offset));
		ck_assert_ptr_eq(v.host_pool, s.base + 128);
		ck_assert_ptr_null(v.ext);
		/* slots of 4100 bytes: each generation word still aligned */
		hp_slot_pool_view(&pool, v.pool, s.params.slots_per_guest, s.params.slot_size);
		for (int k = 0; k < TESTSEG_FOREIGN_SLOTS; k++) {
			ck_assert_int_eq(hp_slot_alloc(&pool, &slot, &gen), 0);
			ck_assert_uint_eq((uintptr_t)hp_slot_payload(&pool, slot) % 4, 0);
		}
		ck_assert_int_ne(hp_slot_alloc(&pool, &slot, &gen), 0);
	}
	hp_segment_close(&s);
	free(img);
}
END_TEST

/* A peer entry that points anywhere it must not: refused, with a reason
 * naming the area and what is wrong with it. r[shm.ring.alignment]
 * r[shm.segment.peer-table] */
START_TEST(test_foreign_bad_entries)
{
	size_t size;
	uint8_t *img = testseg_foreign(&size);
	const struct hp_header *fh = (const struct hp_header *)(const void *)img;
	uint64_t pt = fh->peer_table_offset, sr = fh->slot_region_offset;
	struct hp_segment s;
	struct hp_peer_entry *e, good;
	struct hp_peer_view v;
	const char *why = NULL;

	ck_assert_msg(attach_image(img, size, &s, &why) == 0, "%s", why);
	e = hp_segment_peer(&s, 1);
	good = *e;
#define BAD(field, value, words) do {						\
		*e = good;							\
		e->field = (value);						\
		why = NULL;							\
		ck_assert_int_eq(hp_peer_view_guest(&s, 1, &v, &why), -EBADMSG); \
		ck_assert_msg(why != NULL && strstr(why, words) != NULL,	\
			      #field " = " #value ": \"%s\", not \"%s\"",	\
			      why ? why : "(none)", words);			\
	} while (0)
	BAD(ring_offset, s.size, "rings lie outside the file");
	BAD(ring_offset, s.size - 64, "rings lie outside the file");
	BAD(ring_offset, UINT64_MAX - 10, "rings lie outside the file");
	BAD(ring_offset, good.ring_offset + 8, "rings are not 64-byte aligned");
	BAD(ring_offset, 0, "rings overlap the header");
	BAD(ring_offset, 64, "rings overlap the header");
	BAD(ring_offset, sr / 64 * 64 + 64, "rings overlap the slot region");
	BAD(slot_pool_offset, s.size, "slot pool lies outside the file");
	BAD(slot_pool_offset, UINT64_MAX - 7, "slot pool lies outside the file");
	BAD(slot_pool_offset, good.slot_pool_offset + 4, "slot pool is not 8-byte aligned");
	BAD(slot_pool_offset, 0, "slot pool overlaps the header");
	BAD(slot_pool_offset, 120, "slot pool overlaps the header");
	BAD(slot_pool_offset, sr, "slot pool overlaps the host's slot pool");
	BAD(slot_pool_offset, sr + 8, "slot pool overlaps the host's slot pool");
	BAD(channel_table_offset, s.size - 32, "channel table lies outside the file");
	BAD(channel_table_offset, good.channel_table_offset + 2, "channel table is not 4-byte aligned");
	BAD(channel_table_offset, 4, "channel table overlaps the header");
	BAD(channel_table_offset, pt + 4, "channel table overlaps the peer table");
	BAD(channel_table_offset, pt - 32, "channel table overlaps the peer table");
	BAD(channel_table_offset, sr + 100, "channel table overlaps the slot region");
	BAD(channel_table_offset, good.ring_offset + 64, "rings and its channel table overlap");
#undef BAD
	*e = good;
	ck_assert_int_eq(hp_peer_view_guest(&s, 1, &v, &why), 0);
	/* another guest's entry is its own business */
	hp_segment_peer(&s, 2)->ring_offset = 0;
	ck_assert_int_eq(hp_peer_view_guest(&s, 1, &v, &why), 0);
	ck_assert_int_eq(hp_peer_view_guest(&s, 2, &v, &why), -EBADMSG);
	hp_segment_close(&s);
	free(img);
}
END_TEST

/* The header's own areas in a foreign layout. */
START_TEST(test_foreign_bad_header)
{
	size_t size;
	uint8_t *img = testseg_foreign(&size);
	struct hp_header *fh = (struct hp_header *)(void *)img;
	struct hp_header good = *fh;
	struct hp_params p;
	struct hp_geometry g;
	const char *why;

#define BADH(stmt, words) do {							\
		*fh = good;							\
		stmt;								\
		why = NULL;							\
		ck_assert_int_eq(hp_segment_validate(img, size, &p, &g, &why), -EBADMSG); \
		ck_assert_msg(why != NULL && strstr(why, words) != NULL,	\
			      #stmt ": \"%s\"", why ? why : "(none)");		\
	} while (0)
	BADH(fh->peer_table_offset = size - 64, "peer table lies outside");
	BADH(fh->peer_table_offset = 64, "peer table overlaps the header");
	BADH(fh->peer_table_offset = 120, "peer table overlaps the header");
	BADH(fh->peer_table_offset = good.peer_table_offset + 4, "not 8-byte aligned");
	BADH(fh->slot_region_offset = 0, "slot region overlaps the header");
	BADH(fh->slot_region_offset = 132, "not 8-byte aligned");
	BADH(fh->slot_region_offset = size - 1024, "slot region lies outside");
	BADH(fh->slot_size = 4102, "slot_size must be a multiple of 4");
	BADH((fh->host_features = HP_FEAT_WAITERS, fh->ext_offset = 192), "extension table");
#undef BADH
	*fh = good;
	ck_assert_int_eq(hp_segment_validate(img, size, &p, &g, &why), 0);
	free(img);
}
END_TEST

Suite *suite_segment(void);
Suite *
suite_segment(void)
{
	Suite *s = suite_create("segment");
	TCase *tc = tcase_create("file");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_geometry_by_hand);
	tcase_add_test(tc, test_bad_parameters);
	tcase_add_test(tc, test_create_then_attach);
	tcase_add_test(tc, test_domain_of_one_guest);
	tcase_add_test(tc, test_attach_bad_files);
	tcase_add_test(tc, test_validate_corruptions);
	tcase_add_test(tc, test_validate_random_corruptions);
	tcase_add_test(tc, test_peer_views);
	tcase_add_test(tc, test_channel_ids_per_guest);
	tcase_add_test(tc, test_foreign_layout);
	tcase_add_test(tc, test_foreign_bad_entries);
	tcase_add_test(tc, test_foreign_bad_header);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
