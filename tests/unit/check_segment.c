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

/* r[shm.file.create] r[shm.file.permissions] r[shm.file.attach]
 * r[shm.segment.magic] r[shm.segment.header] r[shm.ring.initialization]
 * r[shm.segment.peer-state] r[shm.file.mmap-posix] */
START_TEST(test_create_then_attach)
{
	struct hp_params p = small();
	struct hp_segment host, guest;
	struct hp_slot_pool pool;
	struct stat st;
	const char *why = NULL;
	mode_t old = umask(077);

	ck_assert_msg(hp_segment_create(&host, path, &p, 0660, &why) == 0, "%s", why);
	umask(old);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0660);
	ck_assert_uint_eq((uint64_t)st.st_size, host.geo.total_size);
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
	ck_assert_uint_eq(hp_segment_header(&guest)->host_features, HP_FEAT_ALL);
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

	ck_assert_int_eq(hp_segment_create(&host, path, &p, 0600, &why), 0);
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
	struct hp_peer_entry *e = (struct hp_peer_entry *)(void *)(img + 128);
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
	CORRUPT(h->slot_size = 64, -EBADMSG);		/* sizes no longer add up */
	CORRUPT(h->peer_table_offset = 0, -EBADMSG);
	CORRUPT(h->slot_region_offset += 64, -EBADMSG);
	CORRUPT(h->ext_offset = 64, -EBADMSG);
	/* peer entries are each guest's own business: validate passes them,
	 * check_peers (inspection) and hp_peer_view_guest (attach) do not */
	uint32_t bad = 0;

	e[1].ring_offset = size;
	ck_assert_int_eq(hp_segment_validate(img, size, &p, &g, &why), 0);
	ck_assert_int_eq(hp_segment_check_peers(img, size, &p, &g, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 2);
	e[1].ring_offset = 65 + g.ring_region_offset;	/* misaligned */
	ck_assert_int_eq(hp_segment_check_peers(img, size, &p, &g, &bad), -EBADMSG);
	e[1].ring_offset = hp_geometry_ring_offset(&g, 2);
	e[0].slot_pool_offset = UINT64_MAX - 10;
	ck_assert_int_eq(hp_segment_check_peers(img, size, &p, &g, &bad), -EBADMSG);
	ck_assert_uint_eq(bad, 1);
	e[0].slot_pool_offset = hp_geometry_pool_offset(&g, 1);
	e[0].channel_table_offset = size - 32;
	ck_assert_int_eq(hp_segment_check_peers(img, size, &p, &g, &bad), -EBADMSG);
	e[0].channel_table_offset = 128;	/* over the peer table */
	ck_assert_int_eq(hp_segment_check_peers(img, size, &p, &g, &bad), -EBADMSG);
	e[0].channel_table_offset = hp_geometry_chan_offset(&g, 1);
	ck_assert_int_eq(hp_segment_check_peers(img, size, &p, &g, &bad), 0);
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

	ck_assert_int_eq(hp_segment_create(&host, path, &p, 0600, &why), 0);
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
	tcase_add_test(tc, test_attach_bad_files);
	tcase_add_test(tc, test_validate_corruptions);
	tcase_add_test(tc, test_validate_random_corruptions);
	tcase_add_test(tc, test_peer_views);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
