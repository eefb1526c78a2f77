/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Lanes' building blocks (proto/lane.h, proto/doorbell.h, the wait group
 * of proto/endpoint.h): HP_MSG_LANE payloads both ways and what a decoder
 * refuses; descriptors handed over with a doorbell byte, and closed when
 * nobody keeps them; a lane's memfd told by its name; a lane made as hubd makes it, attached by both sides
 * in this process, carrying a message each way; the group's sleep on every
 * doorbell, a lane's hang-up noted and the hub's an -EPIPE. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/doorbell.h"
#include "proto/lane.h"
#include "proto/postcard.h"
#include "tests/unit/testseg.h"

/* Open descriptors of this process. */
static int
open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4 * HP_FDQ_MAX; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void
round_trip(const struct hp_lane_msg *m)
{
	uint8_t buf[512];
	struct hp_lane_msg d;
	int64_t n = hp_lane_msg_encode(buf, sizeof(buf), m);

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(hp_lane_msg_decode(buf, (size_t)n, &d), 0);
	ck_assert_uint_eq(d.op, m->op);
	ck_assert_uint_eq(d.lane, m->lane);
	ck_assert_uint_eq(d.side, m->side);
	ck_assert_uint_eq(d.calls_max, m->calls_max);
	ck_assert_uint_eq(d.bells, m->bells);
	ck_assert(d.method == m->method);
	ck_assert_uint_eq(d.violation, m->violation);
	ck_assert_str_eq(d.peer, m->peer);
	ck_assert_str_eq(d.reason, m->reason);
	ck_assert_str_eq(d.sig, m->sig);
	/* a byte more is trailing garbage; a byte less is cut short */
	buf[n] = 0;
	ck_assert_int_eq(hp_lane_msg_decode(buf, (size_t)n + 1, &d), -EBADMSG);
	ck_assert_int_eq(hp_lane_msg_decode(buf, (size_t)n - 1, &d), -EBADMSG);
}

START_TEST(test_msg_round_trip)
{
	round_trip(&(struct hp_lane_msg){ .op = HP_LANE_OPEN, .lane = 7, .side = 1,
					  .calls_max = 1024, .peer = "kv" });
	round_trip(&(struct hp_lane_msg){ .op = HP_LANE_ROUTE, .lane = 7,
					  .method = 0x1234567890abcdefull, .sig = "str,chan<bytes>->u64" });
	round_trip(&(struct hp_lane_msg){ .op = HP_LANE_UNROUTE, .lane = 7,
					  .method = 0x1234567890abcdefull });
	round_trip(&(struct hp_lane_msg){ .op = HP_LANE_CLOSE, .lane = 1,
					  .reason = "guest kv died" });
	round_trip(&(struct hp_lane_msg){ .op = HP_LANE_CLOSED, .lane = 99, .violation = 1,
					  .reason = "guest kv broke shm.payload.slot" });
}
END_TEST

/* An OPEN with bells (HP_FEAT_BELLS) says so in one byte more, after the
 * peer; one without is as before (what a guest without bells gets), and
 * a "false" there is refused: hubd writes it only when true. */
START_TEST(test_msg_open_with_bells)
{
	struct hp_lane_msg m = { .op = HP_LANE_OPEN, .lane = 7, .side = 1, .calls_max = 8,
				 .peer = "kv", .bells = 1 }, d;
	uint8_t buf[128], old[128];
	int64_t n, n_old;

	n = hp_lane_msg_encode(buf, sizeof(buf), &m);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(hp_lane_msg_decode(buf, (size_t)n, &d), 0);
	ck_assert_uint_eq(d.bells, 1);
	ck_assert_str_eq(d.peer, "kv");
	m.bells = 0;
	n_old = hp_lane_msg_encode(old, sizeof(old), &m);
	ck_assert_int_eq(n, n_old + 1);
	ck_assert_mem_eq(buf, old, (size_t)n_old);
	ck_assert_int_eq(hp_lane_msg_decode(old, (size_t)n_old, &d), 0);
	ck_assert_uint_eq(d.bells, 0);
	old[n_old] = 0;		/* false, written out */
	ck_assert_int_eq(hp_lane_msg_decode(old, (size_t)n_old + 1, &d), -EBADMSG);
	buf[n] = 1;		/* and nothing after it */
	ck_assert_int_eq(hp_lane_msg_decode(buf, (size_t)n + 1, &d), -EBADMSG);
}
END_TEST

/* What a guest may send hubd and hubd refuses: lane 0, an op nobody
 * knows, a side beyond B, a name over HP_LANE_NAME_MAX, a bool not 0 or 1,
 * a string not UTF-8. */
START_TEST(test_msg_refused)
{
	uint8_t buf[512];
	struct hp_pc_enc e;
	struct hp_lane_msg d;
	char name[HP_LANE_NAME_MAX + 2], sig[HP_SIG_MAX_LEN + 1];

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, HP_LANE_ROUTE);
	hp_pc_put_u32(&e, 0);
	hp_pc_put_u64(&e, 1);
	hp_pc_put_str(&e, "->unit", 6);
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);

	/* a ROUTE without its signature, or one longer than any method's */
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, HP_LANE_ROUTE);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_u64(&e, 1);
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);
	memset(sig, 's', sizeof(sig));
	hp_pc_put_str(&e, sig, sizeof(sig));
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, 9);
	hp_pc_put_u32(&e, 1);
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, HP_LANE_OPEN);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_u32(&e, 2);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_str(&e, "kv", 2);
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, HP_LANE_OPEN);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_u32(&e, 0);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_str(&e, name, strlen(name));
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, HP_LANE_CLOSED);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_u8(&e, 2);
	hp_pc_put_str(&e, "x", 1);
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);

	hp_pc_enc_init(&e, buf, sizeof(buf));
	hp_pc_put_u32(&e, HP_LANE_CLOSE);
	hp_pc_put_u32(&e, 1);
	hp_pc_put_bytes(&e, "\xff\xfe", 2);
	ck_assert_int_eq(hp_lane_msg_decode(buf, e.len, &d), -EBADMSG);
}
END_TEST

/* Two descriptors with a doorbell byte arrive in the queue in order; a
 * drain that keeps none closes them; a full queue closes the rest. */
START_TEST(test_fds_with_a_doorbell_byte)
{
	struct hp_fdq q = { .n = 0 };
	struct stat a, b;
	int bell[2], pair[2], before, fds[2], got;

	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	ck_assert_int_eq(pipe(pair), 0);
	ck_assert_int_eq(hp_doorbell_send_fds(bell[0], pair, 2), 0);
	ck_assert_int_eq(hp_doorbell_drain_fds(bell[1], &q), 0);
	ck_assert_uint_eq(q.n, 2);
	fds[0] = hp_fdq_take(&q);
	fds[1] = hp_fdq_take(&q);
	ck_assert_int_eq(hp_fdq_take(&q), -1);
	/* the same pipe ends, in order */
	ck_assert_int_eq(fstat(fds[0], &a), 0);
	ck_assert_int_eq(fstat(pair[0], &b), 0);
	ck_assert(a.st_ino == b.st_ino);
	ck_assert_int_eq(fstat(fds[1], &a), 0);
	ck_assert_int_eq(fstat(pair[1], &b), 0);
	ck_assert(a.st_ino == b.st_ino);
	close(fds[0]);
	close(fds[1]);

	/* nobody keeps them: closed, none left open */
	before = open_fds();
	ck_assert_int_eq(hp_doorbell_send_fds(bell[0], pair, 2), 0);
	ck_assert_int_eq(hp_doorbell_drain(bell[1]), 0);
	ck_assert_int_eq(open_fds(), before);

	/* more than the queue holds: the rest closed (taken as they come:
	 * the socket holds fewer than the queue) */
	for (int i = 0; i < HP_FDQ_MAX / 2 + 2; i++) {
		int rc = hp_doorbell_send_fds(bell[0], pair, 2);

		if (rc == -EAGAIN) {
			ck_assert_int_eq(hp_doorbell_drain_fds(bell[1], &q), 0);
			rc = hp_doorbell_send_fds(bell[0], pair, 2);
		}
		ck_assert_int_eq(rc, 0);
	}
	ck_assert_int_eq(hp_doorbell_drain_fds(bell[1], &q), 0);
	ck_assert_uint_eq(q.n, HP_FDQ_MAX);
	got = open_fds();
	hp_fdq_clear(&q);
	ck_assert_int_eq(open_fds(), got - HP_FDQ_MAX);
	ck_assert_int_eq(open_fds(), before);
	close(pair[0]);
	close(pair[1]);
	close(bell[0]);
	close(bell[1]);
}
END_TEST

/* A lane as hubd makes it (lp, named name) and both sides attached. */
struct lane_pair {
	struct hp_lane_map	hubd, a, b;
	struct hp_endpoint	ea, eb;
	int			bells[2];
};

static void
lane_pair_open(struct lane_pair *p, const struct hp_params *lp, const char *name)
{
	const char *why = "";

	ck_assert_int_eq(hp_lane_create(&p->hubd, lp, name, &why), 0);
	ck_assert_int_eq(hp_doorbell_pair(p->bells), 0);
	ck_assert_int_eq(hp_lane_attach(&p->a, dup(p->hubd.seg.fd), HP_LANE_SIDE_A, p->bells[0],
					&p->ea, &why), 0);
	ck_assert_int_eq(hp_lane_attach(&p->b, dup(p->hubd.seg.fd), HP_LANE_SIDE_B, p->bells[1],
					&p->eb, &why), 0);
}

static void
lane_pair_close(struct lane_pair *p)
{
	hp_segment_close(&p->a.seg);
	hp_segment_close(&p->b.seg);
	hp_segment_close(&p->hubd.seg);
	close(p->bells[0]);
	close(p->bells[1]);
}

/* A lane with bells, as hubd hands them (daemon/lanes.c): pipe s rung by
 * side s, read by the other, and its read end kept by s as well. Each
 * side's wake goes to the other's pipe, not the doorbell; with the peer
 * gone, ringing still returns (no SIGPIPE: the kept read end) and the
 * sleeper's bell ends in -EPIPE, polled no more. */
START_TEST(test_lane_bells)
{
	struct hp_params hub = testseg_params(4, 8, 256, 4), lp;
	struct lane_pair p;
	struct hp_msg_in m;
	const char *rule;
	int pipes[2][2];

	hp_lane_params(&hub, 256, HP_LANE_SLOTS, &lp);
	lane_pair_open(&p, &lp, HP_LANE_MEMFD "7:a-b");
	ck_assert_int_eq(pipe2(pipes[0], O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(pipe2(pipes[1], O_CLOEXEC | O_NONBLOCK), 0);
	p.ea.bell_in = pipes[1][0];
	p.ea.bell_out = pipes[0][1];
	p.eb.bell_in = pipes[0][0];
	p.eb.bell_out = pipes[1][1];
	hp_endpoint_announce(&p.eb, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&p.ea, HP_MSG_REQUEST, 1, 5, "ping", 4, 0), 0);
	ck_assert_int_eq(hp_doorbell_wait(p.bells[1], 0), 0);
	ck_assert_int_eq(hp_endpoint_sleep(&p.eb, -1, 10000), 1);	/* its bell rang */
	hp_endpoint_cancel(&p.eb);
	ck_assert_int_eq(hp_endpoint_recv(&p.eb, &m, &rule), 0);
	hp_endpoint_release(&p.eb, &m);
	hp_endpoint_announce(&p.ea, HP_WAIT_RING_DATA);
	ck_assert_int_eq(hp_endpoint_send(&p.eb, HP_MSG_RESPONSE, 1, 0, "pong", 4, 0), 0);
	ck_assert_int_eq(hp_doorbell_wait(p.bells[0], 0), 0);
	ck_assert_int_eq(hp_bell_drain(pipes[1][0]), 1);
	hp_endpoint_cancel(&p.ea);
	/* B gone: its ends closed; A keeps pipe 0's read end */
	int keep = dup(pipes[0][0]);

	ck_assert_int_ge(keep, 0);
	close(pipes[0][0]);
	close(pipes[1][1]);
	p.eb.bell_in = p.eb.bell_out = -1;
	signal(SIGPIPE, SIG_DFL);	/* a SIGPIPE would end this test */
	for (int i = 0; i < 20000; i++) {
		hp_endpoint_announce(&p.eb, HP_WAIT_RING_DATA);
		(void)hp_endpoint_send(&p.ea, HP_MSG_REQUEST, 2, 5, "x", 1, 0);
		while (hp_endpoint_recv(&p.eb, &m, &rule) == 0)
			hp_endpoint_release(&p.eb, &m);
		hp_endpoint_notify_consumed(&p.eb);
	}
	ck_assert_int_eq(hp_endpoint_drain(&p.ea), 0);
	ck_assert_int_eq(p.ea.bell_in, -1);	/* its writer went */
	close(pipes[0][1]);
	close(pipes[1][0]);
	close(keep);
	lane_pair_close(&p);
}
END_TEST

/* A lane as hubd makes it (only its head mapped in hubd), both sides
 * attached as guests attach it: a Request from A reaches B, B's Response
 * reaches A, payloads over 32 bytes in slots; each side's figures are
 * where hubd reads them. */
START_TEST(test_lane_both_sides)
{
	struct hp_params hub = testseg_params(4, 8, 256, 4), lp;
	struct lane_pair p;
	struct hp_msg_in m;
	const char *rule;
	uint8_t big[200];

	hp_lane_params(&hub, 100000, HP_LANE_SLOTS, &lp);
	ck_assert_uint_ge(lp.max_payload_size, 100000);
	ck_assert_uint_eq(lp.slots_per_guest, HP_LANE_SLOTS);
	lane_pair_open(&p, &lp, HP_LANE_MEMFD "7:a-b");
	/* a guest tells its lane's memfd by the id in its name */
	ck_assert(hp_lane_fd_is(p.hubd.seg.fd, 7));
	ck_assert(!hp_lane_fd_is(p.hubd.seg.fd, 77));
	ck_assert(!hp_lane_fd_is(p.hubd.seg.fd, 8));
	ck_assert(!hp_lane_fd_is(0, 7));
	ck_assert_msg(p.hubd.seg.size < 65536, "hubd maps %llu bytes of the lane",
		      (unsigned long long)p.hubd.seg.size);
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(hp_endpoint_send(&p.ea, HP_MSG_REQUEST, 5, 42, big, sizeof(big), 0), 0);
	ck_assert_int_eq(hp_endpoint_recv(&p.eb, &m, &rule), 0);
	ck_assert_uint_eq(m.desc.id, 5);
	ck_assert(m.desc.method_id == 42);
	ck_assert_uint_eq(m.len, sizeof(big));
	ck_assert(memcmp(m.payload, big, sizeof(big)) == 0);
	hp_endpoint_release(&p.eb, &m);
	ck_assert_int_eq(hp_endpoint_send(&p.eb, HP_MSG_RESPONSE, 5, 0, "ok", 2, 0), 0);
	ck_assert_int_eq(hp_endpoint_recv(&p.ea, &m, &rule), 0);
	ck_assert_uint_eq(m.desc.msg_type, HP_MSG_RESPONSE);
	hp_endpoint_release(&p.ea, &m);
	/* a lane carries no HP_MSG_LANE; its channel table is the hub's */
	ck_assert_int_eq(p.ea.lim.lane_msgs, 0);
	ck_assert_uint_eq(p.eb.lim.max_channels, hub.max_channels);
	ck_assert_uint_eq(lp.initial_credit, hub.initial_credit);
	/* each side writes its own figures; hubd reads both */
	hp_lane_figures_write(&p.a, &(struct hp_lane_tally){ .calls_out = 3, .wakes = 5 });
	hp_lane_figures_write(&p.b, &(struct hp_lane_tally){ .calls_in = 4, .sleeps = 6 });
	ck_assert(p.a.mine != p.b.mine);
	{
		struct hp_lane_tally ta, tb;

		hp_lane_figures_read(&p.hubd, HP_LANE_SIDE_A, &ta);
		hp_lane_figures_read(&p.hubd, HP_LANE_SIDE_B, &tb);
		ck_assert_uint_eq(ta.calls_out, 3);
		ck_assert_uint_eq(ta.wakes, 5);
		ck_assert_uint_eq(ta.calls_in, 0);
		ck_assert_uint_eq(tb.calls_in, 4);
		ck_assert_uint_eq(tb.sleeps, 6);
		ck_assert_uint_eq(tb.calls_out, 0);
	}
	lane_pair_close(&p);
}
END_TEST

/* A lane of n slots a side (hubd.conf's lane_slots): a side has n
 * payloads over the inline size in flight, no more, until the other
 * side has read one; inline ones need no slot. */
START_TEST(test_lane_slots)
{
	struct hp_params hub = testseg_params(4, 8, 256, 4), lp;
	struct lane_pair p;
	struct hp_msg_in m;
	const char *rule;
	uint8_t big[200] = { 0 };

	hp_lane_params(&hub, 4096, 3, &lp);
	ck_assert_uint_eq(lp.slots_per_guest, 3);
	lane_pair_open(&p, &lp, HP_LANE_MEMFD "9:a-b");
	for (uint32_t i = 0; i < 3; i++)
		ck_assert_int_eq(hp_endpoint_send(&p.ea, HP_MSG_REQUEST, i + 1, 42, big, sizeof(big),
						  0), 0);
	ck_assert_int_eq(hp_endpoint_send(&p.ea, HP_MSG_REQUEST, 4, 42, big, sizeof(big), 0),
			 -EAGAIN);
	ck_assert_int_eq(hp_endpoint_send(&p.ea, HP_MSG_REQUEST, 4, 42, "inline", 6, 0), 0);
	ck_assert_int_eq(hp_endpoint_recv(&p.eb, &m, &rule), 0);
	hp_endpoint_release(&p.eb, &m);
	hp_endpoint_notify_consumed(&p.eb);	/* frees go back in a batch */
	ck_assert_int_eq(hp_endpoint_send(&p.ea, HP_MSG_REQUEST, 5, 42, big, sizeof(big), 0), 0);
	lane_pair_close(&p);
}
END_TEST

/* A segment that is not a lane (several peers, channels) is refused. */
START_TEST(test_not_a_lane)
{
	struct hp_params p = testseg_params(4, 8, 256, 4);
	struct hp_segment seg;
	struct hp_lane_map m;
	struct hp_endpoint ep;
	const char *why = "";
	int bells[2];

	ck_assert_int_eq(hp_segment_create(&seg, &p, 0, 0, "hub-test", &why), 0);
	ck_assert_int_eq(hp_doorbell_pair(bells), 0);
	ck_assert_int_eq(hp_lane_attach(&m, dup(seg.fd), HP_LANE_SIDE_B, bells[1], &ep, &why),
			 -EBADMSG);
	ck_assert_str_eq(why, "not a lane");
	hp_segment_close(&seg);
	close(bells[0]);
	close(bells[1]);
}
END_TEST

/* The group announces on every member and sleeps on every doorbell: a
 * lane's byte wakes it; a lane's
 * hang-up is noted and left out of later polls; the hub's is -EPIPE. */
START_TEST(test_group_sleep)
{
	struct hp_wait_group g;
	struct hp_endpoint hubep, lane;
	hp_atomic_u32 hub_waits = 0, lane_waits = 0;
	int hb[2], lb[2];

	memset(&g, 0, sizeof(g));
	memset(&hubep, 0, sizeof(hubep));
	memset(&lane, 0, sizeof(lane));
	ck_assert_int_eq(hp_doorbell_pair(hb), 0);
	ck_assert_int_eq(hp_doorbell_pair(lb), 0);
	hubep.doorbell = hb[1];
	lane.doorbell = lb[1];
	hubep.bell_in = lane.bell_in = -1;	/* no bells (HP_FEAT_BELLS) */
	ck_assert_int_eq(hp_group_add(&g, &hubep), 0);
	ck_assert_int_eq(hp_group_add(&g, &lane), 0);
	/* a wait announces on every member: data everywhere, and room or
	 * credit where the send that waits may be (a lane's) */
	hubep.my_waits = &hub_waits;
	lane.my_waits = &lane_waits;
	hp_endpoint_announce(&hubep, HP_WAIT_RING_SPACE | HP_WAIT_SLOT | HP_WAIT_CREDIT);
	ck_assert_uint_eq(hp_load_relaxed_u32(&hub_waits),
			  HP_WAIT_RING_SPACE | HP_WAIT_SLOT | HP_WAIT_CREDIT);
	ck_assert_uint_eq(hp_load_relaxed_u32(&lane_waits),
			  HP_WAIT_RING_DATA | HP_WAIT_RING_SPACE | HP_WAIT_SLOT | HP_WAIT_CREDIT);
	hp_endpoint_cancel(&hubep);
	ck_assert_uint_eq(hp_load_relaxed_u32(&hub_waits), 0);
	ck_assert_uint_eq(hp_load_relaxed_u32(&lane_waits), 0);
	hubep.my_waits = lane.my_waits = NULL;
	ck_assert_int_eq(hp_endpoint_sleep(&hubep, -1, 0), 0);
	ck_assert_int_eq(hp_doorbell_signal(lb[0]), 0);
	ck_assert_int_eq(hp_endpoint_sleep(&hubep, -1, 1000), 1);
	ck_assert_int_eq(hp_endpoint_sleep(&hubep, -1, 0), 0);	/* drained */
	close(lb[0]);
	ck_assert_int_eq(hp_endpoint_sleep(&hubep, -1, 1000), 1);
	ck_assert_int_eq(hp_group_hung(&lane), 1);
	ck_assert_int_eq(hp_group_hung(&hubep), 0);
	ck_assert_int_eq(hp_endpoint_sleep(&hubep, -1, 0), 0);	/* left out now */
	hp_group_remove(&g, &lane);
	ck_assert_uint_eq(g.n, 1);
	ck_assert_ptr_null(lane.group);
	close(hb[0]);
	ck_assert_int_eq(hp_endpoint_sleep(&hubep, -1, 1000), -EPIPE);
	close(hb[1]);
	close(lb[1]);
}
END_TEST

Suite *suite_lane(void);
Suite *
suite_lane(void)
{
	Suite *s = suite_create("lane");
	TCase *tc = tcase_create("lane");

	tcase_add_test(tc, test_msg_open_with_bells);
	tcase_add_test(tc, test_lane_bells);
	tcase_add_test(tc, test_msg_round_trip);
	tcase_add_test(tc, test_msg_refused);
	tcase_add_test(tc, test_fds_with_a_doorbell_byte);
	tcase_add_test(tc, test_lane_both_sides);
	tcase_add_test(tc, test_lane_slots);
	tcase_add_test(tc, test_not_a_lane);
	tcase_add_test(tc, test_group_sleep);
	suite_add_tcase(s, tc);
	return s;
}
