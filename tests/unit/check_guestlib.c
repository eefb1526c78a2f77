/* libguest against a hub it cannot trust: a corrupt segment or a host that
 * breaks the protocol gives the guest an error, never a crash. The test
 * plays the host itself, in process, on a real segment. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "guest.h"
#include "proto/doorbell.h"
#include "proto/ring.h"
#include "proto/segment.h"

static char path[64];
static struct hp_segment seg;
static int bell[2];

static void
name_files(void)
{
	snprintf(path, sizeof(path), "/dev/shm/hub-test-guestlib-%d", (int)getpid());
}

static void
remove_files(void)
{
	unlink(path);
}

/* A segment with peer 1 Reserved for us, and the ticket to it. */
static int
attach(struct guest **g, const char **why)
{
	struct hp_params p;
	char a[96], b[32], c[32];

	hp_params_default(&p);
	p.max_guests = 1;
	p.ring_size = 8;
	p.slot_size = 256;
	p.slots_per_guest = 4;
	p.max_payload_size = 252;
	p.heartbeat_interval = 0;
	ck_assert_int_eq(hp_segment_create(&seg, path, &p, 0600, why), 0);
	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	hp_store_release_u32(&hp_segment_peer(&seg, 1)->state, HP_PEER_RESERVED);
	snprintf(a, sizeof(a), "--hub-path=%s", path);
	snprintf(b, sizeof(b), "--peer-id=1");
	snprintf(c, sizeof(c), "--doorbell-fd=%d", bell[1]);
	char *argv[] = { "guest", a, b, c, NULL };

	return guest_attach(4, argv, g, why);
}

static void
cleanup(struct guest *g)
{
	if (g != NULL)
		guest_detach(g);	/* closes bell[1] */
	else
		close(bell[1]);
	close(bell[0]);
	hp_segment_close(&seg);
}

/* r[shm.spawn.guest-init] r[shm.guest.attach] */
START_TEST(test_attach_and_detach)
{
	struct guest *g;
	const char *why = NULL;

	ck_assert_msg(attach(&g, &why) == 0, "attach: %s", why);
	ck_assert_uint_eq(guest_peer_id(g), 1);
	ck_assert_uint_eq(hp_segment_peer(&seg, 1)->state, HP_PEER_ATTACHED);
	ck_assert_uint_eq(hp_segment_peer(&seg, 1)->epoch, 1);
	guest_detach(g);	/* closes its end of the doorbell */
	/* r[shm.guest.detach] */
	ck_assert_uint_eq(hp_segment_peer(&seg, 1)->state, HP_PEER_GOODBYE);
	close(bell[0]);
	hp_segment_close(&seg);
}
END_TEST

START_TEST(test_corrupt_segment_refused)
{
	struct guest *g = NULL;
	const char *why = NULL;
	struct hp_params p;
	char a[96];

	hp_params_default(&p);
	p.max_guests = 1;
	ck_assert_int_eq(hp_segment_create(&seg, path, &p, 0600, &why), 0);
	hp_segment_header(&seg)->total_size += 64;	/* a lie about its size */
	snprintf(a, sizeof(a), "--hub-path=%s", path);
	char *argv[] = { "guest", a, "--peer-id=1", "--doorbell-fd=2", NULL };

	ck_assert_int_eq(guest_attach(4, argv, &g, &why), -EBADMSG);
	ck_assert_ptr_null(g);
	ck_assert_ptr_nonnull(why);
	/* an entry not Reserved for it: somebody else's */
	hp_segment_header(&seg)->total_size -= 64;
	ck_assert_int_eq(guest_attach(4, argv, &g, &why), -EBUSY);
	hp_segment_close(&seg);
}
END_TEST

/* A host that sends what the spec forbids: the guest's loop ends with
 * -EPROTO, nothing read out of bounds (ASan). */
START_TEST(test_hostile_host)
{
	static const struct { uint8_t type; uint32_t slot, len; const char *what; } bad[] = {
		{ 9, HP_SLOT_INLINE, 1, "msg_type 9" },
		{ 1, 100, 100, "slot out of range" },
		{ 1, HP_SLOT_INLINE, 33, "inline over 32" },
		{ 4, HP_SLOT_INLINE, 1, "data on a channel it does not receive" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct guest *g;
		const char *why = NULL;
		struct hp_peer_view v;
		struct hp_ring tx;
		struct hp_desc d;

		ck_assert_msg(attach(&g, &why) == 0, "attach: %s", why);
		hp_peer_view_host(&seg, 1, &v);
		ck_assert_int_eq(hp_ring_init_producer(&tx, &v.entry->h2g_head, &v.entry->h2g_tail,
						       v.h2g, 8), 0);
		memset(&d, 0, sizeof(d));
		d.msg_type = bad[i].type;
		d.id = 1;
		d.payload_slot = bad[i].slot;
		d.payload_len = bad[i].len;
		ck_assert_int_eq(hp_ring_enqueue(&tx, &d), 0);
		ck_assert_msg(guest_service(g) == -EPROTO, "%s not refused", bad[i].what);
		/* and it stays refused */
		ck_assert_int_eq(guest_service(g), -EPROTO);
		cleanup(g);
		unlink(path);
	}
}
END_TEST

/* Ring indices out of range, written by the host. */
START_TEST(test_hostile_indices)
{
	struct guest *g;
	const char *why = NULL;

	ck_assert_msg(attach(&g, &why) == 0, "attach: %s", why);
	hp_store_release_u32(&hp_segment_peer(&seg, 1)->h2g_head, 12345);
	ck_assert_int_eq(guest_service(g), -EPROTO);
	cleanup(g);
}
END_TEST

/* r[shm.goodbye.host]: the host says goodbye, the loop ends cleanly. */
START_TEST(test_host_goodbye_ends_the_loop)
{
	struct guest *g;
	const char *why = NULL;

	ck_assert_msg(attach(&g, &why) == 0, "attach: %s", why);
	hp_store_release_u32(&hp_segment_header(&seg)->host_goodbye, 1);
	hp_doorbell_signal(bell[0]);
	ck_assert_int_eq(guest_run(g), 0);
	cleanup(g);
}
END_TEST

/* r[shm.doorbell.death]: the host dies, the loop ends with -EPIPE. */
START_TEST(test_host_death_ends_the_loop)
{
	struct guest *g;
	const char *why = NULL;

	ck_assert_msg(attach(&g, &why) == 0, "attach: %s", why);
	close(bell[0]);
	bell[0] = dup(2);	/* something for cleanup to close */
	ck_assert_int_eq(guest_run(g), -EPIPE);
	cleanup(g);
}
END_TEST

Suite *suite_guestlib(void);
Suite *
suite_guestlib(void)
{
	Suite *s = suite_create("guestlib");
	TCase *tc = tcase_create("untrusted");

	tcase_add_unchecked_fixture(tc, name_files, remove_files);
	tcase_add_checked_fixture(tc, NULL, remove_files);
	tcase_add_test(tc, test_attach_and_detach);
	tcase_add_test(tc, test_corrupt_segment_refused);
	tcase_add_test(tc, test_hostile_host);
	tcase_add_test(tc, test_hostile_indices);
	tcase_add_test(tc, test_host_goodbye_ends_the_loop);
	tcase_add_test(tc, test_host_death_ends_the_loop);
	suite_add_tcase(s, tc);
	return s;
}
